//! [`MadPort`]: the one seam every transport implements — the simulator, the kernel user_mad
//! device, ibsim's socket protocol and the VFIO driver alike.
//!
//! A port moves one MAD at a time together with its addressing metadata ([`MadMeta`]). On the
//! wire every MAD is [`MAD_LEN`] (256) bytes; a transport that does RMPP itself (the kernel
//! does, for agents registered with an RMPP version) moves longer, reassembled MADs and says so
//! in [`MadPort::caps`]. A port never blocks inside `send`: a full queue is reported as
//! [`PortError::WouldBlock`] (back-pressure), never a panic or a silent drop.
//!
//! # Subnet-management packets and general-service packets
//!
//! SMPs (classes 0x01/0x81) travel on QP0: `qp` 0, no Q_Key, no GRH, P_Key index 0. GMPs
//! (every other class: SubnAdm, PerfMgt, …) travel on QP1 (or a QP a ClassPortInfo redirected
//! to) with the well-known Q_Key [`QKey::GSI`], a P_Key index, an SL and, across subnets, a
//! GRH. [`MadMeta`] carries all of it; the constructors [`MadMeta::smp_dr`],
//! [`MadMeta::smp_lid`] and [`MadMeta::gmp`] fill the fields a class does not use with their
//! defaults, and [`MadMeta::reply`] turns a received MAD's metadata into the metadata of its
//! answer.

use crate::time::Time;
use crate::types::{Gid, Lid, PortNum, QKey};

/// Size of every MAD on the wire (IBA vol1 §13.4.1): SMPs and GMPs alike.
pub const MAD_LEN: usize = 256;

/// The global route header fields a MAD user sees (IBA vol1 §8.3, as the kernel's
/// `ib_user_mad_hdr` exposes them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Grh {
    /// The remote GID: the DGID on send, the SGID on receive.
    pub gid: Gid,
    /// Index of the local port's GID (the SGID on send, the DGID on receive) in its GID table.
    pub gid_index: u8,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub traffic_class: u8,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
}

/// Addressing metadata that travels with a MAD: the parts of LRH/GRH/BTH/DETH a MAD user sees.
///
/// "Remote" is the other end: the destination on send, the source on receive. "Local" is this
/// port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MadMeta {
    /// The local port the MAD leaves on or arrived at.
    pub port: PortNum,
    /// Source LID (permissive for directed-route SMPs sent from the SM).
    pub slid: Lid,
    /// Destination LID (permissive for directed-route SMPs).
    pub dlid: Lid,
    /// Remote QP number: the destination QP on send, the source QP on receive. 0 for SMPs; 1
    /// for GMPs to a GSI, or the QP a ClassPortInfo redirected to.
    pub qp: u32,
    /// Q_Key: on send, the remote QP's Q_Key ([`QKey::GSI`] for QP1); on receive, the Q_Key
    /// the datagram carried where the transport reports it (the kernel's user_mad does not: 0).
    /// 0 (unused) on QP0.
    pub qkey: QKey,
    /// Index into the local port's P_Key table of the P_Key the MAD is sent with or arrived
    /// with. 0 for SMPs (QP0 ignores P_Keys).
    pub pkey_index: u16,
    /// Service level.
    pub sl: u8,
    /// LID path bits of the local end (IBA vol1 §7.11.1, LMC): on send the bits added to the
    /// port's base LID to form the SLID; on receive the low DLID bits the MAD arrived on.
    pub path_bits: u8,
    /// The GRH, if the MAD carries one (GMPs across subnets, or a client that asked for one).
    pub grh: Option<Grh>,
}

impl MadMeta {
    /// A directed-route SMP on `port`: SLID and DLID permissive, QP0.
    #[must_use]
    pub fn smp_dr(port: PortNum) -> MadMeta {
        MadMeta {
            port,
            slid: Lid::PERMISSIVE,
            dlid: Lid::PERMISSIVE,
            ..MadMeta::default()
        }
    }

    /// A LID-routed SMP on `port` from `slid` to `dlid` on service level `sl`, QP0.
    #[must_use]
    pub fn smp_lid(port: PortNum, slid: Lid, dlid: Lid, sl: u8) -> MadMeta {
        MadMeta {
            port,
            slid,
            dlid,
            sl,
            ..MadMeta::default()
        }
    }

    /// A GMP on `port` from `slid` to QP1 of `dlid`, Q_Key [`QKey::GSI`], P_Key index 0, SL 0,
    /// no GRH. Change the fields for a redirected QP, another P_Key or SL.
    #[must_use]
    pub fn gmp(port: PortNum, slid: Lid, dlid: Lid) -> MadMeta {
        MadMeta {
            port,
            slid,
            dlid,
            qp: 1,
            qkey: QKey::GSI,
            ..MadMeta::default()
        }
    }

    /// The metadata of the answer to a MAD received with this metadata: back out of the same
    /// port to the requester's LID and QP, from the LID it was addressed to, on the same SL,
    /// P_Key index, path bits and (remote) GID.
    ///
    /// A GMP answer carries the GSI Q_Key (IBA vol1 §13.5.3.1: responses to QP1 requests go to
    /// the requester's QP with the well-known Q_Key); an SMP answer none.
    #[must_use]
    pub fn reply(&self) -> MadMeta {
        MadMeta {
            slid: self.dlid,
            dlid: self.slid,
            qkey: if self.qp == 0 { QKey(0) } else { QKey::GSI },
            ..*self
        }
    }

    /// True for QP0 (subnet-management) traffic.
    #[must_use]
    pub fn is_qp0(&self) -> bool {
        self.qp == 0
    }
}

/// What a transport can move beyond single 256-byte MADs (see [`MadPort::caps`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortCaps {
    /// The longest MAD `send` accepts and `recv` may return, in bytes. [`MAD_LEN`] unless the
    /// transport does RMPP.
    pub max_mad_len: usize,
    /// True if the transport does RMPP (IBA vol1 §13.6) itself for the classes it registered
    /// with an RMPP version (SubnAdm): `send` of a MAD with RMPPFlags.Active set and any length
    /// up to `max_mad_len` is segmented, windowed, acknowledged and retried by the transport;
    /// `recv` returns a whole reassembled message as one MAD: the first segment's headers
    /// (common, RMPP and class header) followed by every segment's payload. When false, every
    /// MAD is exactly [`MAD_LEN`] bytes and RMPP, if any, is the user's job.
    pub rmpp: bool,
    /// True if the transport carries GMPs (QP1) at all; false for QP0-only transports.
    pub gmp: bool,
}

impl PortCaps {
    /// A QP0-only transport of 256-byte MADs: the default.
    pub const SMP_ONLY: PortCaps = PortCaps {
        max_mad_len: MAD_LEN,
        rmpp: false,
        gmp: false,
    };
    /// A transport of 256-byte MADs on QP0 and QP1, without RMPP.
    pub const SINGLE_MAD: PortCaps = PortCaps {
        max_mad_len: MAD_LEN,
        rmpp: false,
        gmp: true,
    };
}

impl Default for PortCaps {
    fn default() -> Self {
        PortCaps::SMP_ONLY
    }
}

/// What can go wrong moving a MAD.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// The send queue is full; try again after receiving or waiting.
    #[error("transport send queue full")]
    WouldBlock,
    /// The buffer is not a whole MAD of an accepted size (on `send`), or too short for the MAD
    /// waiting (on `recv`; the MAD stays queued when the transport can keep it).
    #[error("MAD length {len} not accepted (expected {expected})")]
    BadLength {
        /// The length given.
        len: usize,
        /// The length the transport needs.
        expected: usize,
    },
    /// The transport is closed (peer gone, device removed).
    #[error("transport closed")]
    Closed,
    /// An operating-system or transport-level error, described.
    #[error("transport error: {0}")]
    Other(String),
}

/// A transport that sends and receives MADs.
pub trait MadPort {
    /// Queues one MAD for sending. Never blocks; [`PortError::WouldBlock`] when full.
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError>;
    /// Takes one received MAD into `buf`, returning its metadata and length, or `Ok(None)` if
    /// none is waiting. Give a buffer of at least [`PortCaps::max_mad_len`] bytes.
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError>;
    /// What this transport moves: MAD length, RMPP, QP1. The default is
    /// [`PortCaps::SMP_ONLY`], which every transport satisfies.
    fn caps(&self) -> PortCaps {
        PortCaps::SMP_ONLY
    }
}

/// A [`MadPort`] on a virtual clock that its user advances (the simulator): a sans-IO agent runs
/// on it without wall time, as fast as the events can be processed (`sm::drive`).
pub trait VirtualClockPort: MadPort {
    /// The transport's clock.
    fn now(&self) -> Time;
    /// MADs delivered to this port and not yet taken with [`MadPort::recv`].
    fn pending(&self) -> usize;
    /// When the transport next has something to do; `None` when nothing is scheduled.
    fn next_event_time(&self) -> Option<Time>;
    /// Processes the transport's events up to and including `t`, and sets the clock to `t`.
    fn run_until(&mut self, t: Time);
}

/// Which way a MAD crosses a [`Tap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Received from the transport, on its way to the agent.
    Recv,
    /// Sent by the agent, on its way to the transport.
    Send,
}

/// A [`MadPort`] in front of another that shows every MAD crossing it to `watch`, which may
/// also keep it: `false` for a received MAD means the agent never sees it (the next one is
/// received instead); `false` for a sent one means it is not sent (reported as sent). Tests
/// and tools count, inspect or intercept an agent's traffic with it while the agent runs in
/// the shared drive loop.
pub struct Tap<'a, P: ?Sized, F> {
    port: &'a mut P,
    watch: F,
}

impl<'a, P: ?Sized, F: FnMut(Direction, &MadMeta, &[u8]) -> bool> Tap<'a, P, F> {
    /// `port` watched by `watch`.
    pub fn new(port: &'a mut P, watch: F) -> Tap<'a, P, F> {
        Tap { port, watch }
    }
}

impl<P: MadPort + ?Sized, F: FnMut(Direction, &MadMeta, &[u8]) -> bool> MadPort for Tap<'_, P, F> {
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        if (self.watch)(Direction::Send, meta, mad) {
            self.port.send(meta, mad)
        } else {
            Ok(())
        }
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError> {
        loop {
            let Some((meta, len)) = self.port.recv(buf)? else {
                return Ok(None);
            };
            if (self.watch)(Direction::Recv, &meta, buf.get(..len).unwrap_or(buf)) {
                return Ok(Some((meta, len)));
            }
        }
    }
    fn caps(&self) -> PortCaps {
        self.port.caps()
    }
}

impl<P: VirtualClockPort + ?Sized, F: FnMut(Direction, &MadMeta, &[u8]) -> bool> VirtualClockPort
    for Tap<'_, P, F>
{
    fn now(&self) -> Time {
        self.port.now()
    }
    fn pending(&self) -> usize {
        self.port.pending()
    }
    fn next_event_time(&self) -> Option<Time> {
        self.port.next_event_time()
    }
    fn run_until(&mut self, t: Time) {
        self.port.run_until(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_fill_class_defaults() {
        let dr = MadMeta::smp_dr(PortNum(3));
        assert_eq!(
            (dr.slid, dr.dlid, dr.qp),
            (Lid::PERMISSIVE, Lid::PERMISSIVE, 0)
        );
        assert_eq!((dr.qkey, dr.pkey_index, dr.grh), (QKey(0), 0, None));
        let l = MadMeta::smp_lid(PortNum(1), Lid(1), Lid(7), 2);
        assert_eq!((l.slid, l.dlid, l.sl, l.qp), (Lid(1), Lid(7), 2, 0));
        let g = MadMeta::gmp(PortNum(1), Lid(1), Lid(9));
        assert_eq!((g.qp, g.qkey), (1, QKey::GSI));
        assert!(dr.is_qp0() && !g.is_qp0());
    }

    #[test]
    fn reply_swaps_lids_and_keeps_the_rest() {
        let rx = MadMeta {
            port: PortNum(1),
            slid: Lid(5),
            dlid: Lid(2),
            qp: 0x12,
            qkey: QKey(0x1234),
            pkey_index: 3,
            sl: 4,
            path_bits: 1,
            grh: Some(Grh {
                hop_limit: 7,
                ..Grh::default()
            }),
        };
        let tx = rx.reply();
        assert_eq!((tx.slid, tx.dlid), (Lid(2), Lid(5)));
        assert_eq!((tx.qp, tx.qkey), (0x12, QKey::GSI));
        assert_eq!((tx.pkey_index, tx.sl, tx.path_bits), (3, 4, 1));
        assert_eq!(tx.grh, rx.grh);
        assert_eq!(MadMeta::smp_dr(PortNum(1)).reply().qkey, QKey(0));
    }

    struct Old;
    impl MadPort for Old {
        fn send(&mut self, _: &MadMeta, _: &[u8]) -> Result<(), PortError> {
            Ok(())
        }
        fn recv(&mut self, _: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError> {
            Ok(None)
        }
    }

    #[test]
    fn default_caps_are_smp_only() {
        assert_eq!(Old.caps(), PortCaps::SMP_ONLY);
        assert_eq!(PortCaps::default().max_mad_len, MAD_LEN);
    }

    /// A loopback queue: what is sent is received.
    #[derive(Default)]
    struct Queue(std::collections::VecDeque<Vec<u8>>);
    impl MadPort for Queue {
        fn send(&mut self, _: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
            self.0.push_back(mad.to_vec());
            Ok(())
        }
        fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError> {
            Ok(self.0.pop_front().map(|m| {
                buf[..m.len()].copy_from_slice(&m);
                (MadMeta::smp_dr(PortNum(1)), m.len())
            }))
        }
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_tap_sees_both_ways_and_keeps_what_it_refuses() {
        let mut q = Queue::default();
        let mut seen = Vec::new();
        let mut tap = Tap::new(&mut q, |d, _: &MadMeta, mad: &[u8]| {
            seen.push((d, mad[0]));
            mad[0] != 2 // keeps MAD 2 in both directions
        });
        let meta = MadMeta::smp_dr(PortNum(1));
        for b in [1u8, 2, 3] {
            tap.send(&meta, &[b; 4]).unwrap();
        }
        let mut buf = [0u8; 8];
        let got: Vec<u8> =
            std::iter::from_fn(|| tap.recv(&mut buf).unwrap().map(|_| buf[0])).collect();
        assert_eq!(got, [1, 3]);
        use Direction::{Recv, Send};
        assert_eq!(
            seen,
            [(Send, 1), (Send, 2), (Send, 3), (Recv, 1), (Recv, 3)]
        );
        assert_eq!(
            Tap::new(&mut Old, |_, _: &MadMeta, _: &[u8]| true).caps(),
            PortCaps::SMP_ONLY
        );
    }
}

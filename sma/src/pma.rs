//! [`Pma`]: the performance-management agent (IBA vol1 §16.1), sans-IO.
//!
//! Every InfiniBand port answers PerfMgt GMPs (class 0x04, on QP1): ClassPortInfo,
//! PortCounters and PortCountersExtended here. The PMA keeps no counters itself. Whoever moves
//! the packets owns them — the simulator per simulated port, the RA-1 host agent in device
//! registers — and hands them to the PMA through a [`CounterSource`] on each request.
//! [`CounterTable`] is a ready-made source: one [`Counters`] per port, updated by the owner.
//!
//! # Counters and widths
//!
//! A source keeps every counter as a `u64` ([`Counters`], names as the IBA spells them). The
//! PMA shows them in each attribute's width: PortCounters' 16/8/4-bit error counters and 32-bit
//! data counters **saturate** at their maximum (IBA vol1 §16.1.3.5; they never wrap), while
//! PortCountersExtended shows the 64-bit values. Both attributes read the same counters, so a
//! Set through either clears it for both, as on hardware. PortXmitData/PortRcvData count 32-bit
//! words (octets / 4).
//!
//! # Requests
//!
//! - **Get**: the counters of the port PortSelect names. On a switch PortSelect is 0..=NumPorts
//!   (0 is the management port); on a CA it must be the port the MAD arrived on. PortSelect
//!   0xFF sums every port (a switch's 0..=NumPorts, a CA's 1..=NumPorts, saturating) when
//!   ClassPortInfo advertises IsAllPortSelectSupported; otherwise, and for any other port, the
//!   answer is status 0x001C (invalid field).
//! - **Set**: clears the counters whose CounterSelect / CounterSelect2 bit is 1 on the selected
//!   port(s) and answers like a Get, with the values after the clear.
//! - The answer is a GetResp with the request's TID, attribute, modifier, PortSelect and
//!   CounterSelect. Errors map to MAD status through [`PmaError`]: class version ≠ 1 → 0x0004,
//!   a method other than Get/Set → 0x0008, an attribute this PMA does not serve (or Set of
//!   ClassPortInfo) → 0x000C, a bad PortSelect → 0x001C.
//! - Dropped without an answer (counted in [`PmaStats::dropped`]): MADs shorter than 256 bytes,
//!   BaseVersion ≠ 1, another class, responses (never answer an answer), and Send, Trap and
//!   TrapRepress (which have no response).
//!
//! Counters the capabilities do not advertise read as 0: PortXmitWait without
//! IsPortXmitWaitSupported, QP1Dropped without IsQP1DroppedSupported, the unicast/multicast
//! counters without IsExtendedWidthSupported, and PortCountersExtended's error counters and
//! CounterSelect2 without IsAdditionalPortCountersExtendedSupported. [`PmaConfig::for_node`]
//! advertises what ibsim's PMA does, so `perfquery` prints the same fields against either.

use ibmad::class_port_info::ClassPortInfoRepr;
use ibmad::perf::{
    cap, CounterSelect, CounterSelectExt, PerfMad, PortCountersExtRepr, PortCountersRepr,
    ALL_PORTS, PERF_DATA_LEN,
};
use ibmad::zerocopy::FromBytes;
use ibmad::{GmpAttrRepr, MadMeta, Method, MgmtClass, PmaAttrId, PortNum, Status, MAD_LEN};

macro_rules! counters {
    ($( $(#[$m:meta])* $field:ident => $var:ident, )*) => {
        /// One counter of a port (the IBA's names; see [`Counters`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Counter {
            $( $(#[$m])* $var, )*
        }

        impl Counter {
            /// Every counter, in declaration order.
            pub const ALL: &'static [Counter] = &[$( Counter::$var, )*];
        }

        /// The counters of one port at full (64-bit) precision, as their owner keeps them.
        /// Field names are the IBA's in snake case; PortXmitData and PortRcvData are in 32-bit
        /// words.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct Counters {
            $( $(#[$m])* pub $field: u64, )*
        }

        impl Counters {
            /// The value of one counter.
            #[must_use]
            pub fn get(&self, c: Counter) -> u64 {
                match c { $( Counter::$var => self.$field, )* }
            }
            /// A mutable reference to one counter.
            pub fn get_mut(&mut self, c: Counter) -> &mut u64 {
                match c { $( Counter::$var => &mut self.$field, )* }
            }
        }
    };
}

counters! {
    /// SymbolErrorCounter.
    symbol_error_counter => SymbolErrors,
    /// LinkErrorRecoveryCounter.
    link_error_recovery_counter => LinkErrorRecovery,
    /// LinkDownedCounter: the link went down (a flap counts once).
    link_downed_counter => LinkDowned,
    /// PortRcvErrors.
    port_rcv_errors => RcvErrors,
    /// PortRcvRemotePhysicalErrors.
    port_rcv_remote_physical_errors => RcvRemotePhysicalErrors,
    /// PortRcvSwitchRelayErrors.
    port_rcv_switch_relay_errors => RcvSwitchRelayErrors,
    /// PortXmitDiscards.
    port_xmit_discards => XmitDiscards,
    /// PortXmitConstraintErrors.
    port_xmit_constraint_errors => XmitConstraintErrors,
    /// PortRcvConstraintErrors.
    port_rcv_constraint_errors => RcvConstraintErrors,
    /// LocalLinkIntegrityErrors.
    local_link_integrity_errors => LocalLinkIntegrityErrors,
    /// ExcessiveBufferOverrunErrors.
    excessive_buffer_overrun_errors => ExcessiveBufferOverrunErrors,
    /// VL15Dropped.
    vl15_dropped => Vl15Dropped,
    /// QP1Dropped.
    qp1_dropped => Qp1Dropped,
    /// PortXmitData, in 32-bit words.
    port_xmit_data => XmitData,
    /// PortRcvData, in 32-bit words.
    port_rcv_data => RcvData,
    /// PortXmitPkts.
    port_xmit_pkts => XmitPkts,
    /// PortRcvPkts.
    port_rcv_pkts => RcvPkts,
    /// PortXmitWait.
    port_xmit_wait => XmitWait,
    /// PortUnicastXmitPkts.
    port_unicast_xmit_pkts => UnicastXmitPkts,
    /// PortUnicastRcvPkts.
    port_unicast_rcv_pkts => UnicastRcvPkts,
    /// PortMulticastXmitPkts.
    port_multicast_xmit_pkts => MulticastXmitPkts,
    /// PortMulticastRcvPkts.
    port_multicast_rcv_pkts => MulticastRcvPkts,
}

impl Counter {
    /// True for the traffic counts (data, packets, unicast/multicast packets, PortXmitWait);
    /// false for the error counters.
    #[must_use]
    pub fn is_traffic(self) -> bool {
        matches!(
            self,
            Counter::XmitData
                | Counter::RcvData
                | Counter::XmitPkts
                | Counter::RcvPkts
                | Counter::XmitWait
                | Counter::UnicastXmitPkts
                | Counter::UnicastRcvPkts
                | Counter::MulticastXmitPkts
                | Counter::MulticastRcvPkts
        )
    }
}

/// A set of [`Counter`]s: which counters a Set clears.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CounterSet(pub u32);

impl CounterSet {
    /// No counter.
    pub const NONE: CounterSet = CounterSet(0);
    /// Every counter.
    pub const ALL: CounterSet = CounterSet((1 << 22) - 1);

    /// The set holding exactly `cs`.
    #[must_use]
    pub fn of(cs: &[Counter]) -> CounterSet {
        CounterSet(cs.iter().fold(0, |m, c| m | 1 << (*c as u32)))
    }
    /// True if `c` is in the set.
    #[must_use]
    pub fn contains(self, c: Counter) -> bool {
        self.0 & (1 << (c as u32)) != 0
    }
    /// This set with `c` added.
    #[must_use]
    pub fn with(self, c: Counter) -> CounterSet {
        CounterSet(self.0 | 1 << (c as u32))
    }

    /// The counters PortCounters.CounterSelect / CounterSelect2 select (IBA vol1 §16.1.3.5).
    #[must_use]
    pub fn from_port_counters(sel: CounterSelect) -> CounterSet {
        use Counter as C;
        const MAP: [(u32, Counter); 18] = [
            (CounterSelect::SYMBOL_ERRORS, C::SymbolErrors),
            (CounterSelect::LINK_ERROR_RECOVERY, C::LinkErrorRecovery),
            (CounterSelect::LINK_DOWNED, C::LinkDowned),
            (CounterSelect::RCV_ERRORS, C::RcvErrors),
            (
                CounterSelect::RCV_REMOTE_PHYSICAL_ERRORS,
                C::RcvRemotePhysicalErrors,
            ),
            (
                CounterSelect::RCV_SWITCH_RELAY_ERRORS,
                C::RcvSwitchRelayErrors,
            ),
            (CounterSelect::XMIT_DISCARDS, C::XmitDiscards),
            (
                CounterSelect::XMIT_CONSTRAINT_ERRORS,
                C::XmitConstraintErrors,
            ),
            (CounterSelect::RCV_CONSTRAINT_ERRORS, C::RcvConstraintErrors),
            (
                CounterSelect::LOCAL_LINK_INTEGRITY_ERRORS,
                C::LocalLinkIntegrityErrors,
            ),
            (
                CounterSelect::EXCESSIVE_BUFFER_OVERRUN_ERRORS,
                C::ExcessiveBufferOverrunErrors,
            ),
            (CounterSelect::VL15_DROPPED, C::Vl15Dropped),
            (CounterSelect::XMIT_DATA, C::XmitData),
            (CounterSelect::RCV_DATA, C::RcvData),
            (CounterSelect::XMIT_PKTS, C::XmitPkts),
            (CounterSelect::RCV_PKTS, C::RcvPkts),
            (CounterSelect::XMIT_WAIT, C::XmitWait),
            (CounterSelect::QP1_DROPPED, C::Qp1Dropped),
        ];
        MAP.iter()
            .filter(|(bit, _)| sel.has(*bit))
            .fold(CounterSet::NONE, |s, (_, c)| s.with(*c))
    }

    /// The counters PortCountersExtended.CounterSelect / CounterSelect2 select (IBA vol1
    /// §16.1.4.11). `additional`: CounterSelect2 is honoured (IsAdditionalPortCountersExtended-
    /// Supported); otherwise it is reserved and ignored.
    #[must_use]
    pub fn from_port_counters_ext(sel: CounterSelectExt, additional: bool) -> CounterSet {
        use Counter as C;
        type S = CounterSelectExt;
        const MAP: [(u64, Counter); 22] = [
            (S::XMIT_DATA, C::XmitData),
            (S::RCV_DATA, C::RcvData),
            (S::XMIT_PKTS, C::XmitPkts),
            (S::RCV_PKTS, C::RcvPkts),
            (S::UNICAST_XMIT_PKTS, C::UnicastXmitPkts),
            (S::UNICAST_RCV_PKTS, C::UnicastRcvPkts),
            (S::MULTICAST_XMIT_PKTS, C::MulticastXmitPkts),
            (S::MULTICAST_RCV_PKTS, C::MulticastRcvPkts),
            (S::SYMBOL_ERRORS, C::SymbolErrors),
            (S::LINK_ERROR_RECOVERY, C::LinkErrorRecovery),
            (S::LINK_DOWNED, C::LinkDowned),
            (S::RCV_ERRORS, C::RcvErrors),
            (S::RCV_REMOTE_PHYSICAL_ERRORS, C::RcvRemotePhysicalErrors),
            (S::RCV_SWITCH_RELAY_ERRORS, C::RcvSwitchRelayErrors),
            (S::XMIT_DISCARDS, C::XmitDiscards),
            (S::XMIT_CONSTRAINT_ERRORS, C::XmitConstraintErrors),
            (S::RCV_CONSTRAINT_ERRORS, C::RcvConstraintErrors),
            (S::LOCAL_LINK_INTEGRITY_ERRORS, C::LocalLinkIntegrityErrors),
            (
                S::EXCESSIVE_BUFFER_OVERRUN_ERRORS,
                C::ExcessiveBufferOverrunErrors,
            ),
            (S::VL15_DROPPED, C::Vl15Dropped),
            (S::XMIT_WAIT, C::XmitWait),
            (S::QP1_DROPPED, C::Qp1Dropped),
        ];
        let sel = if additional {
            sel
        } else {
            CounterSelectExt(sel.0 & 0xFFFF)
        };
        MAP.iter()
            .filter(|(bit, _)| sel.has(*bit))
            .fold(CounterSet::NONE, |s, (_, c)| s.with(*c))
    }
}

impl Counters {
    /// Adds `n` to counter `c`, saturating at `u64::MAX`.
    pub fn add(&mut self, c: Counter, n: u64) {
        let v = self.get_mut(c);
        *v = v.saturating_add(n);
    }
    /// Counts one packet of `octets` bytes sent (PortXmitPkts, PortXmitData in words, and the
    /// unicast or multicast packet counter).
    pub fn count_xmit(&mut self, octets: u64, multicast: bool) {
        self.add(Counter::XmitPkts, 1);
        self.add(Counter::XmitData, octets / 4);
        self.add(
            if multicast {
                Counter::MulticastXmitPkts
            } else {
                Counter::UnicastXmitPkts
            },
            1,
        );
    }
    /// Counts one packet of `octets` bytes received (PortRcvPkts, PortRcvData in words, and the
    /// unicast or multicast packet counter).
    pub fn count_rcv(&mut self, octets: u64, multicast: bool) {
        self.add(Counter::RcvPkts, 1);
        self.add(Counter::RcvData, octets / 4);
        self.add(
            if multicast {
                Counter::MulticastRcvPkts
            } else {
                Counter::UnicastRcvPkts
            },
            1,
        );
    }
    /// True if every error counter — everything but the traffic counts (data, packets,
    /// unicast/multicast packets, PortXmitWait) — is zero.
    #[must_use]
    pub fn no_errors(&self) -> bool {
        Counter::ALL
            .iter()
            .filter(|c| !c.is_traffic())
            .all(|&c| self.get(c) == 0)
    }
    /// Sets the counters in `which` to zero.
    pub fn clear(&mut self, which: CounterSet) {
        for c in Counter::ALL {
            if which.contains(*c) {
                *self.get_mut(*c) = 0;
            }
        }
    }
    /// The sum of two ports' counters, each saturating at `u64::MAX`.
    #[must_use]
    pub fn saturating_sum(&self, other: &Counters) -> Counters {
        let mut s = *self;
        for c in Counter::ALL {
            s.add(*c, other.get(*c));
        }
        s
    }
}

/// Where a [`Pma`] reads and clears counters: implemented by whoever counts (the simulator per
/// port, the RA-1 host agent over device registers, [`CounterTable`]).
pub trait CounterSource {
    /// The counters of `port`, or `None` if the node has no such port (a switch has ports
    /// 0..=NumPorts, a CA 1..=NumPorts).
    fn counters(&mut self, port: PortNum) -> Option<Counters>;
    /// Sets the counters in `which` of `port` to zero (a port the node lacks is ignored).
    fn clear(&mut self, port: PortNum, which: CounterSet);
}

impl<T: CounterSource + ?Sized> CounterSource for &mut T {
    fn counters(&mut self, port: PortNum) -> Option<Counters> {
        (**self).counters(port)
    }
    fn clear(&mut self, port: PortNum, which: CounterSet) {
        (**self).clear(port, which);
    }
}

/// One [`Counters`] per port, indexed by port number (index 0 is a switch's management port; a
/// CA's index 0 exists but is never reported).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterTable {
    ports: Vec<Counters>,
    is_switch: bool,
}

impl CounterTable {
    /// Zeroed counters for a node with `num_ports` ports.
    #[must_use]
    pub fn new(is_switch: bool, num_ports: u8) -> CounterTable {
        CounterTable {
            ports: vec![Counters::default(); usize::from(num_ports) + 1],
            is_switch,
        }
    }
    /// The counters of `port`, for the owner to update; `None` for a port the node lacks.
    pub fn port_mut(&mut self, port: PortNum) -> Option<&mut Counters> {
        if port.0 == 0 && !self.is_switch {
            return None;
        }
        self.ports.get_mut(usize::from(port.0))
    }
    /// The counters of `port`.
    #[must_use]
    pub fn port(&self, port: PortNum) -> Option<&Counters> {
        if port.0 == 0 && !self.is_switch {
            return None;
        }
        self.ports.get(usize::from(port.0))
    }
}

impl CounterSource for CounterTable {
    fn counters(&mut self, port: PortNum) -> Option<Counters> {
        self.port(port).copied()
    }
    fn clear(&mut self, port: PortNum, which: CounterSet) {
        if let Some(c) = self.port_mut(port) {
            c.clear(which);
        }
    }
}

/// What a [`Pma`] advertises and which ports exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmaConfig {
    /// A switch (PortSelect 0..=NumPorts) or a CA/router (PortSelect = the receiving port).
    pub is_switch: bool,
    /// NumPorts of the node.
    pub num_ports: u8,
    /// ClassPortInfo.CapabilityMask ([`cap`] bits).
    pub capability_mask: u16,
    /// ClassPortInfo.CapabilityMask2 ([`cap`]`::CM2_*` bits).
    pub capability_mask2: u32,
    /// ClassPortInfo.RespTimeValue.
    pub resp_time_value: u8,
}

impl PmaConfig {
    /// What ibsim's PMA advertises: IsExtendedWidthSupported and IsPortXmitWaitSupported, plus
    /// IsAllPortSelectSupported on a switch; RespTimeValue 18.
    #[must_use]
    pub fn for_node(is_switch: bool, num_ports: u8) -> PmaConfig {
        let mut capability_mask = cap::EXT_WIDTH | cap::PORT_XMIT_WAIT;
        if is_switch {
            capability_mask |= cap::ALL_PORT_SELECT;
        }
        PmaConfig {
            is_switch,
            num_ports,
            capability_mask,
            capability_mask2: 0,
            resp_time_value: 18,
        }
    }
    fn has(&self, bit: u16) -> bool {
        self.capability_mask & bit != 0
    }
    fn additional(&self) -> bool {
        self.capability_mask2 & cap::CM2_ADDITIONAL_PORT_COUNTERS_EXT != 0
    }
}

/// A refused PerfMgt request; converts one-to-one into the MAD status of the answer
/// (IBA vol1 §13.4.7; STYLE P11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PmaError {
    /// ClassVersion is not 1 (status 0x0004).
    #[error("unsupported PerfMgt class version {0}")]
    BadVersion(u8),
    /// The method is not Get or Set (status 0x0008).
    #[error("method {0} not supported by the PMA")]
    MethodNotSupported(Method),
    /// This PMA does not serve the attribute, or not with this method (status 0x000C).
    #[error("{method} of {attr} not supported by the PMA")]
    MethodAttrNotSupported {
        /// The method.
        method: Method,
        /// The attribute.
        attr: PmaAttrId,
    },
    /// PortSelect names no port this PMA may report (status 0x001C).
    #[error("PortSelect {port_select} invalid ({why})")]
    InvalidPortSelect {
        /// The PortSelect received.
        port_select: u8,
        /// What is wrong with it.
        why: &'static str,
    },
}

impl From<PmaError> for Status {
    fn from(e: PmaError) -> Status {
        match e {
            PmaError::BadVersion(_) => Status::BAD_VERSION,
            PmaError::MethodNotSupported(_) => Status::METHOD_NOT_SUPPORTED,
            PmaError::MethodAttrNotSupported { .. } => Status::METHOD_ATTR_NOT_SUPPORTED,
            PmaError::InvalidPortSelect { .. } => Status::INVALID_FIELD,
        }
    }
}

/// Counters of a [`Pma`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmaStats {
    /// MADs given to [`Pma::handle_mad`].
    pub received: u64,
    /// Answers with status 0.
    pub answered: u64,
    /// Answers with an error status.
    pub refused: u64,
    /// MADs dropped without an answer (short, BaseVersion, class, responses, Send/Trap).
    pub dropped: u64,
    /// Counters cleared by a Set (ports × Set requests).
    pub clears: u64,
}

/// The answer to a PerfMgt request: send `mad` with `meta` (out of the port it arrived on, to
/// the requester's LID and QP).
#[derive(Clone, Copy)]
pub struct Reply {
    /// Addressing: [`MadMeta::reply`] of the request's.
    pub meta: MadMeta,
    /// The GetResp, 256 bytes.
    pub mad: PerfMad,
}

impl core::fmt::Debug for Reply {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reply")
            .field("meta", &self.meta)
            .field("method", &Method(self.mad.hdr.method))
            .field("status", &Status(self.mad.hdr.status.get()))
            .field("attr", &self.mad.attr())
            .finish_non_exhaustive()
    }
}

/// The performance-management agent of one node. See the module docs.
#[derive(Clone, Debug)]
pub struct Pma {
    cfg: PmaConfig,
    stats: PmaStats,
}

impl Pma {
    /// A PMA advertising `cfg`.
    #[must_use]
    pub fn new(cfg: PmaConfig) -> Pma {
        Pma {
            cfg,
            stats: PmaStats::default(),
        }
    }
    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &PmaConfig {
        &self.cfg
    }
    /// Counters.
    #[must_use]
    pub fn stats(&self) -> PmaStats {
        self.stats
    }
    /// The ClassPortInfo this PMA answers with.
    #[must_use]
    pub fn class_port_info(&self) -> ClassPortInfoRepr {
        ClassPortInfoRepr {
            base_version: 1,
            class_version: 1,
            capability_mask: self.cfg.capability_mask,
            capability_mask2: self.cfg.capability_mask2,
            resp_time_value: self.cfg.resp_time_value,
            ..ClassPortInfoRepr::default()
        }
    }

    /// Handles one MAD received on `meta.port`, reading and clearing counters through `src`.
    /// Returns the answer, or `None` for a MAD that gets none (see the module docs). Never
    /// panics, whatever the bytes.
    pub fn handle_mad(
        &mut self,
        src: &mut impl CounterSource,
        meta: &MadMeta,
        mad: &[u8],
    ) -> Option<Reply> {
        self.stats.received += 1;
        let Some(req) = mad
            .get(..MAD_LEN)
            .and_then(|b| PerfMad::read_from_bytes(b).ok())
        else {
            self.stats.dropped += 1;
            return None;
        };
        let h = &req.hdr;
        let method = Method(h.method);
        if h.base_version != 1
            || h.mgmt_class != MgmtClass::PERF_MGMT.0
            || method.is_response()
            || matches!(method, Method::SEND | Method::TRAP | Method::TRAP_REPRESS)
        {
            self.stats.dropped += 1;
            return None;
        }
        let mut resp = req;
        resp.hdr.method = Method::GET_RESP.0;
        resp.reserved = [0; 40];
        let status = match self.answer(src, meta.port, &req, &mut resp.data) {
            Ok(()) => {
                self.stats.answered += 1;
                Status::OK
            }
            Err(e) => {
                self.stats.refused += 1;
                Status::from(e)
            }
        };
        resp.hdr.status.set(status.0);
        Some(Reply {
            meta: meta.reply(),
            mad: resp,
        })
    }

    /// Serves a request into `out` (the response's data field, initially the request's).
    fn answer(
        &mut self,
        src: &mut impl CounterSource,
        ingress: PortNum,
        req: &PerfMad,
        out: &mut [u8; PERF_DATA_LEN],
    ) -> Result<(), PmaError> {
        let method = Method(req.hdr.method);
        if req.hdr.class_version != 1 {
            return Err(PmaError::BadVersion(req.hdr.class_version));
        }
        if !matches!(method, Method::GET | Method::SET) {
            return Err(PmaError::MethodNotSupported(method));
        }
        let attr = req.attr();
        let refuse = PmaError::MethodAttrNotSupported { method, attr };
        match attr {
            PmaAttrId::CLASS_PORT_INFO if method == Method::GET => {
                *out = [0; PERF_DATA_LEN];
                emit(&self.class_port_info(), out);
                Ok(())
            }
            PmaAttrId::PORT_COUNTERS => {
                let pc = PortCountersRepr::parse(&req.data).map_err(|_| refuse)?;
                let ports = self.ports(ingress, pc.port_select)?;
                if method == Method::SET {
                    let which = CounterSet::from_port_counters(pc.counter_select);
                    self.clear(src, ports, which);
                }
                let c = self.read(src, ports)?;
                let mut v = PortCountersRepr::saturating(&self.ext_view(&c, pc.port_select, true));
                v.counter_select = pc.counter_select;
                if !self.cfg.has(cap::PORT_XMIT_WAIT) {
                    v.port_xmit_wait = 0;
                }
                if !self.cfg.has(cap::QP1_DROPPED) {
                    v.qp1_dropped = 0;
                }
                *out = [0; PERF_DATA_LEN];
                emit(&v, out);
                Ok(())
            }
            PmaAttrId::PORT_COUNTERS_EXT
                if self.cfg.has(cap::EXT_WIDTH) || self.cfg.has(cap::EXT_WIDTH_NO_IETF) =>
            {
                let pc = PortCountersExtRepr::parse(&req.data).map_err(|_| refuse)?;
                let ports = self.ports(ingress, pc.port_select)?;
                let additional = self.cfg.additional();
                if method == Method::SET {
                    let which = CounterSet::from_port_counters_ext(pc.counter_select, additional);
                    self.clear(src, ports, which);
                }
                let c = self.read(src, ports)?;
                let mut v = self.ext_view(&c, pc.port_select, additional);
                v.counter_select = if additional {
                    pc.counter_select
                } else {
                    CounterSelectExt(pc.counter_select.0 & 0xFFFF)
                };
                if !self.cfg.has(cap::EXT_WIDTH) {
                    v.port_unicast_xmit_pkts = 0;
                    v.port_unicast_rcv_pkts = 0;
                    v.port_multicast_xmit_pkts = 0;
                    v.port_multicast_rcv_pkts = 0;
                }
                *out = [0; PERF_DATA_LEN];
                emit(&v, out);
                Ok(())
            }
            _ => Err(refuse),
        }
    }

    /// The ports PortSelect names, after checking it against the node and capabilities.
    fn ports(&self, ingress: PortNum, port_select: u8) -> Result<Ports, PmaError> {
        let first = u8::from(!self.cfg.is_switch);
        if port_select == ALL_PORTS {
            if !self.cfg.has(cap::ALL_PORT_SELECT) {
                return Err(PmaError::InvalidPortSelect {
                    port_select,
                    why: "AllPortSelect is not supported",
                });
            }
            return Ok(Ports {
                lo: first,
                hi: self.cfg.num_ports,
            });
        }
        if self.cfg.is_switch {
            if port_select > self.cfg.num_ports {
                return Err(PmaError::InvalidPortSelect {
                    port_select,
                    why: "beyond NumPorts",
                });
            }
        } else if port_select != ingress.0 {
            return Err(PmaError::InvalidPortSelect {
                port_select,
                why: "a CA reports only the port the request arrived on",
            });
        }
        Ok(Ports {
            lo: port_select,
            hi: port_select,
        })
    }

    fn read(&self, src: &mut impl CounterSource, ports: Ports) -> Result<Counters, PmaError> {
        let mut sum = Counters::default();
        for p in ports.lo..=ports.hi {
            let c = src
                .counters(PortNum(p))
                .ok_or(PmaError::InvalidPortSelect {
                    port_select: p,
                    why: "the node has no such port",
                })?;
            sum = sum.saturating_sum(&c);
        }
        Ok(sum)
    }

    fn clear(&mut self, src: &mut impl CounterSource, ports: Ports, which: CounterSet) {
        for p in ports.lo..=ports.hi {
            src.clear(PortNum(p), which);
            self.stats.clears += 1;
        }
    }

    /// The counters as PortCountersExtended shows them (error counters only with
    /// `with_errors`).
    fn ext_view(&self, c: &Counters, port_select: u8, with_errors: bool) -> PortCountersExtRepr {
        let e = |v: u64| if with_errors { v } else { 0 };
        PortCountersExtRepr {
            port_select,
            counter_select: CounterSelectExt(0),
            port_xmit_data: c.port_xmit_data,
            port_rcv_data: c.port_rcv_data,
            port_xmit_pkts: c.port_xmit_pkts,
            port_rcv_pkts: c.port_rcv_pkts,
            port_unicast_xmit_pkts: c.port_unicast_xmit_pkts,
            port_unicast_rcv_pkts: c.port_unicast_rcv_pkts,
            port_multicast_xmit_pkts: c.port_multicast_xmit_pkts,
            port_multicast_rcv_pkts: c.port_multicast_rcv_pkts,
            symbol_error_counter: e(c.symbol_error_counter),
            link_error_recovery_counter: e(c.link_error_recovery_counter),
            link_downed_counter: e(c.link_downed_counter),
            port_rcv_errors: e(c.port_rcv_errors),
            port_rcv_remote_physical_errors: e(c.port_rcv_remote_physical_errors),
            port_rcv_switch_relay_errors: e(c.port_rcv_switch_relay_errors),
            port_xmit_discards: e(c.port_xmit_discards),
            port_xmit_constraint_errors: e(c.port_xmit_constraint_errors),
            port_rcv_constraint_errors: e(c.port_rcv_constraint_errors),
            local_link_integrity_errors: e(c.local_link_integrity_errors),
            excessive_buffer_overrun_errors: e(c.excessive_buffer_overrun_errors),
            vl15_dropped: e(c.vl15_dropped),
            port_xmit_wait: e(c.port_xmit_wait),
            qp1_dropped: e(c.qp1_dropped),
        }
    }
}

/// The ports a PortSelect covers, `lo..=hi`.
#[derive(Clone, Copy, Debug)]
struct Ports {
    lo: u8,
    hi: u8,
}

/// Writes an attribute into the data field; every attribute here fits the 192 bytes.
fn emit<A: GmpAttrRepr>(a: &A, out: &mut [u8; PERF_DATA_LEN]) {
    // 72/44/184 bytes into 192: cannot fail.
    let _ = a.emit(&mut out[..]);
}

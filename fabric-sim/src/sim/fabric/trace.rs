//! The event trace ([`SimConfig::trace`](super::SimConfig::trace)).

use ibmad::zerocopy::FromBytes;
use ibmad::{Method, Smp, SmpAttrId, Time};

use super::Fabric;
use crate::sim::stats::DropReason;

/// What a [`TraceEntry`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// A MAD reached a port from the wire (or locally, from the node's SM).
    Arrive,
    /// A MAD was handed to an agent.
    Deliver,
    /// A MAD was forwarded by a switch's LFT.
    LidForward,
    /// A MAD was queued for an SM.
    ToSm,
    /// An SM sent a MAD.
    FromSm,
    /// A MAD was dropped.
    Drop(DropReason),
    /// An agent timer fired.
    Timer,
    /// A port's physical link came up.
    LinkUp,
    /// A port's physical link went down.
    LinkDown,
    /// A node rebooted.
    Reboot,
}

/// One recorded event (with [`SimConfig::trace`](super::SimConfig::trace)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceEntry {
    /// When.
    pub time: Time,
    /// What.
    pub kind: TraceKind,
    /// Node index.
    pub node: u32,
    /// Port.
    pub port: u8,
    /// MgmtClass of the MAD (0 for non-MAD events).
    pub class: u8,
    /// Method of the MAD.
    pub method: u8,
    /// AttributeID of the MAD.
    pub attr: u16,
    /// TransactionID of the MAD.
    pub tid: u64,
}

/// One line: `time node:port kind class method attr tid`.
impl core::fmt::Display for TraceEntry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{:>12}ns #{}:{} {:?}",
            self.time.as_nanos(),
            self.node,
            self.port,
            self.kind
        )?;
        if self.class != 0 {
            write!(
                f,
                " class={:#04x} {:?} {:?} tid={:#x}",
                self.class,
                Method(self.method),
                SmpAttrId(self.attr),
                self.tid
            )?;
        }
        Ok(())
    }
}

impl Fabric {
    // ----- tracing ----------------------------------------------------------------------

    pub(super) fn trace_ev(&mut self, kind: TraceKind, node: u32, port: u8) {
        if self.cfg.trace {
            self.trace.push(TraceEntry {
                time: self.now,
                kind,
                node,
                port,
                class: 0,
                method: 0,
                attr: 0,
                tid: 0,
            });
        }
    }

    pub(super) fn trace_mad(&mut self, kind: TraceKind, node: u32, port: u8, buf: u32) {
        let data = self.pool.slot(buf).data;
        self.trace_hdr(kind, node, port, &data);
    }

    pub(super) fn trace_hdr(&mut self, kind: TraceKind, node: u32, port: u8, mad: &[u8]) {
        let (class, method, attr, tid) = match Smp::ref_from_bytes(mad) {
            Ok(s) => (s.mgmt_class, s.method, s.attr_id.get(), s.tid.get()),
            Err(_) => (0, 0, 0, 0),
        };
        self.trace.push(TraceEntry {
            time: self.now,
            kind,
            node,
            port,
            class,
            method,
            attr,
            tid,
        });
    }
}

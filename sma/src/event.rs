//! What the agent reports besides transmits: [`Event`] and the [`Discard`] reasons.

use ibmad::smi::DiscardReason;
use ibmad::{Lid, MadMeta, Method, MgmtClass, PhysState, PortNum, PortState, SmpAttrId, TrapNum};

/// An event for the owner of the agent (the simulator, a daemon, a test).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A MAD for the subnet manager co-located on this node: a returning DR SMP that reached its
    /// end (D=1, hop pointer 0), a LID-routed response, Trap or SMInfo request, or the answer to
    /// a 0-hop SMP the local SM sent to this SMA. `meta.port` is the port it arrived on (or the
    /// port the local request came in on).
    ForSm {
        /// Addressing metadata.
        meta: MadMeta,
        /// The 256-byte MAD.
        mad: Box<[u8; 256]>,
    },
    /// A received or generated MAD was dropped.
    Discarded {
        /// The ingress port (or egress port for a transmit that could not go out).
        port: PortNum,
        /// Why.
        reason: Discard,
    },
    /// A port's logical or physical state changed.
    PortStateChanged {
        /// The port.
        port: PortNum,
        /// New PortState.
        state: PortState,
        /// New PortPhysicalState.
        phys: PhysState,
    },
    /// A port's LID or LMC changed (CA port, or switch port 0).
    LidChanged {
        /// The port.
        port: PortNum,
        /// New base LID.
        lid: Lid,
        /// New LMC.
        lmc: u8,
    },
    /// A LinearForwardingTable block was written.
    LftChanged {
        /// Block number.
        block: u16,
    },
    /// A MulticastForwardingTable block was written.
    MftChanged {
        /// Block number.
        block: u16,
        /// Position (group of 16 ports).
        position: u8,
    },
    /// An SMP failed the M_Key check (IBA vol1 §14.2.4) and was dropped.
    MKeyViolation {
        /// The port whose M_Key was checked.
        port: PortNum,
        /// The method of the offending SMP.
        method: Method,
        /// Its attribute.
        attr: SmpAttrId,
    },
    /// The M_Key lease period of a port expired: its M_KeyProtectBits are now 0.
    MKeyLeaseExpired {
        /// The port.
        port: PortNum,
    },
    /// A trap was queued for the master SM.
    TrapQueued {
        /// Trap number.
        trap: TrapNum,
        /// Its transaction id.
        tid: u64,
    },
    /// The SM repressed a trap (TrapRepress with the same TID).
    TrapRepressed {
        /// Trap number.
        trap: TrapNum,
        /// Its transaction id.
        tid: u64,
    },
    /// A PortInfo Set asked this CA port to re-register with the SA (ClientReregister).
    ClientReregister {
        /// The port.
        port: PortNum,
    },
}

/// Why a MAD was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Discard {
    /// Not 256 bytes.
    BadLength {
        /// The length received.
        len: usize,
    },
    /// BaseVersion is not 1: the layout can not be trusted.
    BadBaseVersion(u8),
    /// Not an SMP class (0x01 / 0x81).
    NotSmp(MgmtClass),
    /// Directed-route rule failed (C14-6, C14-9, C14-13).
    Smi(DiscardReason),
    /// The LFT has no entry for the LID a packet must be LID-routed to.
    NoRoute(Lid),
    /// The egress port's link is not up.
    EgressDown(PortNum),
    /// The egress port does not exist (or is port 0 of a switch).
    BadEgressPort(PortNum),
    /// The MAD was given to a port that does not exist (or port 0 of a CA).
    BadIngressPort(PortNum),
    /// Failed the M_Key check.
    MKey,
    /// A response or TrapRepress that matches nothing here.
    Unexpected(Method),
    /// The transmit queue is full.
    TxQueueFull,
}

//! Counters the simulator keeps: what was delivered, forwarded and dropped (by reason), and what
//! the fault injector did.

use core::fmt;

/// Why the fabric discarded a MAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The egress or ingress port is Down or physically not LinkUp (IBA vol1 §7.2: a Down port
    /// transmits and receives nothing).
    PortDown = 0,
    /// The egress port has no cable.
    NoLink,
    /// A switch's LFT has no valid egress port for the DLID.
    NoRoute,
    /// A LID-routed MAD reached a CA port whose LID range does not cover the DLID.
    DlidMismatch,
    /// The node's SMA is muted and would have consumed the MAD.
    Muted,
    /// A directed-route MAD whose SMP header can not be read.
    NotSmp,
    /// A response or trap reached a node where no SM is attached.
    NoSm,
    /// The directed-route rules (ibmad::smi) discarded it at the SM's own node.
    SmiDiscard,
    /// The fault injector dropped it.
    Fault,
    /// The SM's receive queue was full.
    SmQueueFull,
    /// The receiving port's CRC check failed (the `corrupt` fault): discarded at the port.
    BadCrc,
    /// A GMP (a data packet) met a port whose PortState is not Active.
    NotActive,
    /// A GMP request reached an end port where no agent serves its class and its method has
    /// no error answer (only Get and Set are answered "unsupported").
    NoAgent,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 13] = [
        DropReason::PortDown,
        DropReason::NoLink,
        DropReason::NoRoute,
        DropReason::DlidMismatch,
        DropReason::Muted,
        DropReason::NotSmp,
        DropReason::NoSm,
        DropReason::SmiDiscard,
        DropReason::Fault,
        DropReason::SmQueueFull,
        DropReason::BadCrc,
        DropReason::NotActive,
        DropReason::NoAgent,
    ];

    /// A short stable name for logs and benchmark output.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::PortDown => "port_down",
            DropReason::NoLink => "no_link",
            DropReason::NoRoute => "no_route",
            DropReason::DlidMismatch => "dlid_mismatch",
            DropReason::Muted => "muted",
            DropReason::NotSmp => "not_smp",
            DropReason::NoSm => "no_sm",
            DropReason::SmiDiscard => "smi_discard",
            DropReason::Fault => "fault",
            DropReason::SmQueueFull => "sm_queue_full",
            DropReason::BadCrc => "bad_crc",
            DropReason::NotActive => "not_active",
            DropReason::NoAgent => "no_agent",
        }
    }
}

/// Drop counters, one per [`DropReason`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DropCounts([u64; DropReason::ALL.len()]);

impl DropCounts {
    /// The count for one reason.
    #[must_use]
    pub fn get(&self, r: DropReason) -> u64 {
        self.0[r as usize]
    }
    /// The sum over all reasons.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// Counts one drop for `r`.
    pub fn bump(&mut self, r: DropReason) {
        self.0[r as usize] += 1;
    }
}

/// What the fault injector did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FaultCounts {
    /// MADs lost.
    pub dropped: u64,
    /// MADs delivered twice.
    pub duplicated: u64,
    /// MADs that failed the receiver's CRC check (the `corrupt` fault).
    pub corrupted: u64,
    /// MADs delivered with a flipped bit (the `garble` fault).
    pub garbled: u64,
    /// Symbol errors counted at receiving ports (the `symbol` fault).
    pub symbol_errors: u64,
    /// MADs delayed.
    pub delayed: u64,
}

/// Fabric-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SimStats {
    /// Events processed.
    pub events: u64,
    /// Link traversals that reached the far port (one per hop on the wire).
    pub hops: u64,
    /// MADs transmitted onto a link (before faults).
    pub transmitted: u64,
    /// MADs handed to an agent's `handle_mad`.
    pub delivered: u64,
    /// LID-routed MADs a switch forwarded by its LFT (the fabric's data-plane lookup).
    pub lid_forwarded: u64,
    /// MADs delivered to attached SMs.
    pub to_sm: u64,
    /// MADs sent by attached SMs.
    pub from_sm: u64,
    /// Agent timers fired.
    pub timers: u64,
    /// Physical link transitions applied (each end counted once per change).
    pub link_changes: u64,
    /// Node reboots.
    pub reboots: u64,
    /// Discards by reason.
    pub dropped: DropCounts,
    /// Fault-injector actions.
    pub faults: FaultCounts,
}

impl fmt::Display for SimStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "events={} hops={} transmitted={} delivered={} lid_forwarded={} to_sm={} from_sm={} \
             timers={} link_changes={} reboots={} dropped={}",
            self.events,
            self.hops,
            self.transmitted,
            self.delivered,
            self.lid_forwarded,
            self.to_sm,
            self.from_sm,
            self.timers,
            self.link_changes,
            self.reboots,
            self.dropped.total()
        )?;
        for r in DropReason::ALL {
            let n = self.dropped.get(r);
            if n != 0 {
                write!(f, " {}={}", r.name(), n)?;
            }
        }
        let fc = &self.faults;
        write!(
            f,
            " fault_drop={} fault_dup={} fault_corrupt={} fault_garble={} fault_delay={} \
             fault_symbol={}",
            fc.dropped, fc.duplicated, fc.corrupted, fc.garbled, fc.delayed, fc.symbol_errors
        )
    }
}

/// Per-SM counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SmStats {
    /// MADs the SM sent through its port.
    pub sent: u64,
    /// MADs the SM took from its port.
    pub received: u64,
    /// MADs queued for the SM but dropped because its queue was full.
    pub overflowed: u64,
}

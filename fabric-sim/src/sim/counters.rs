//! The performance counters the simulator keeps for every port — what a port's hardware
//! counts and a PMA reports (IBA vol1 §16.1.3.5 PortCounters, §16.1.4.11
//! PortCountersExtended).
//!
//! Every count is a `u64`; a PMA narrows each to its attribute's width, saturating (the IBA's
//! counters stick at their maximum, they do not wrap). Clearing a counter clears it for both
//! attributes, as one hardware counter backs both.
//!
//! # What the fabric counts
//! * **Packets and data.** Every MAD that crosses a link — SMPs and GMPs alike — is one packet
//!   transmitted by the sending port (PortXmitPkts, PortUnicastXmitPkts) and, unless the
//!   receiver discards it, one packet received by the far port (PortRcvPkts,
//!   PortUnicastRcvPkts). The data counters count the packet's octets between the start
//!   delimiter and the VCRC, divided by 4: LRH (8) + BTH (12) + DETH (8) + MAD (256) + ICRC (4)
//!   = 288 octets = [`MAD_PACKET_WORDS`] words, 10 more with a GRH. A MAD that an SM hands to
//!   its own node's agent crosses no link and is not counted.
//! * **LinkDownedCounter** counts each time a link that was up goes down without either end
//!   having been asked to (a cut cable, a node reboot seen from the peer): a flap. A link taken
//!   down through PortInfo (PortState Down, PortPhysicalState Disabled) is not a flap.
//! * **PortRcvErrors** counts packets the receiving port discarded because their CRC failed
//!   (the `corrupt` fault).
//! * **SymbolErrorCounter** counts the `symbol` fault's errors at the receiving port.
//! * **PortXmitDiscards** counts packets a port could not send: its link is down, or (for a
//!   GMP) its PortState is not Active.
//! * **PortRcvSwitchRelayErrors** counts packets a switch received but could not relay: no LFT
//!   entry for the DLID.
//! * **VL15Dropped** counts SMPs that reached a port whose SM's receive queue was full.
//! * A node reboot clears every counter of the node (power-on).
//!
//! Unicast/multicast split: every MAD is unicast (the permissive LID counts as unicast).

/// Data words of one MAD packet without a GRH: (LRH 8 + BTH 12 + DETH 8 + MAD 256 + ICRC 4) / 4.
pub const MAD_PACKET_WORDS: u64 = 72;
/// Data words a GRH adds (40 octets).
pub const GRH_WORDS: u64 = 10;

/// The counters of one port. Field names are the IBA's (PortCountersExtended, which holds
/// every PortCounters field at 64 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PortCounters {
    /// SymbolErrorCounter.
    pub symbol_error_counter: u64,
    /// LinkErrorRecoveryCounter (the simulator never counts it).
    pub link_error_recovery_counter: u64,
    /// LinkDownedCounter.
    pub link_downed_counter: u64,
    /// PortRcvErrors.
    pub port_rcv_errors: u64,
    /// PortRcvRemotePhysicalErrors (never counted).
    pub port_rcv_remote_physical_errors: u64,
    /// PortRcvSwitchRelayErrors.
    pub port_rcv_switch_relay_errors: u64,
    /// PortXmitDiscards.
    pub port_xmit_discards: u64,
    /// PortXmitConstraintErrors (never counted).
    pub port_xmit_constraint_errors: u64,
    /// PortRcvConstraintErrors (never counted).
    pub port_rcv_constraint_errors: u64,
    /// LocalLinkIntegrityErrors (never counted).
    pub local_link_integrity_errors: u64,
    /// ExcessiveBufferOverrunErrors (never counted).
    pub excessive_buffer_overrun_errors: u64,
    /// VL15Dropped.
    pub vl15_dropped: u64,
    /// PortXmitData, in 32-bit words.
    pub port_xmit_data: u64,
    /// PortRcvData, in 32-bit words.
    pub port_rcv_data: u64,
    /// PortXmitPkts.
    pub port_xmit_pkts: u64,
    /// PortRcvPkts.
    pub port_rcv_pkts: u64,
    /// PortXmitWait (never counted: the simulator has no flow control).
    pub port_xmit_wait: u64,
    /// PortUnicastXmitPkts.
    pub port_unicast_xmit_pkts: u64,
    /// PortUnicastRcvPkts.
    pub port_unicast_rcv_pkts: u64,
    /// PortMulticastXmitPkts (never counted).
    pub port_multicast_xmit_pkts: u64,
    /// PortMulticastRcvPkts (never counted).
    pub port_multicast_rcv_pkts: u64,
}

impl PortCounters {
    /// One packet of `words` data words sent.
    pub(crate) fn count_xmit(&mut self, words: u64) {
        self.port_xmit_pkts = self.port_xmit_pkts.saturating_add(1);
        self.port_unicast_xmit_pkts = self.port_unicast_xmit_pkts.saturating_add(1);
        self.port_xmit_data = self.port_xmit_data.saturating_add(words);
    }

    /// One packet of `words` data words received.
    pub(crate) fn count_rcv(&mut self, words: u64) {
        self.port_rcv_pkts = self.port_rcv_pkts.saturating_add(1);
        self.port_unicast_rcv_pkts = self.port_unicast_rcv_pkts.saturating_add(1);
        self.port_rcv_data = self.port_rcv_data.saturating_add(words);
    }

    /// True if every error counter (everything but the traffic counts) is zero.
    #[must_use]
    pub fn no_errors(&self) -> bool {
        [
            self.symbol_error_counter,
            self.link_error_recovery_counter,
            self.link_downed_counter,
            self.port_rcv_errors,
            self.port_rcv_remote_physical_errors,
            self.port_rcv_switch_relay_errors,
            self.port_xmit_discards,
            self.port_xmit_constraint_errors,
            self.port_rcv_constraint_errors,
            self.local_link_integrity_errors,
            self.excessive_buffer_overrun_errors,
            self.vl15_dropped,
        ]
        .iter()
        .all(|&v| v == 0)
    }
}

/// Bumps a counter by one, saturating.
pub(crate) fn bump(c: &mut u64) {
    *c = c.saturating_add(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_counts_saturate_and_are_not_errors() {
        let mut c = PortCounters {
            port_xmit_data: u64::MAX - 1,
            ..PortCounters::default()
        };
        c.count_xmit(MAD_PACKET_WORDS);
        c.count_rcv(MAD_PACKET_WORDS + GRH_WORDS);
        assert_eq!(c.port_xmit_data, u64::MAX);
        assert_eq!((c.port_xmit_pkts, c.port_unicast_xmit_pkts), (1, 1));
        assert_eq!((c.port_rcv_pkts, c.port_rcv_data), (1, 82));
        assert!(c.no_errors());
        bump(&mut c.port_rcv_errors);
        assert!(!c.no_errors());
    }
}

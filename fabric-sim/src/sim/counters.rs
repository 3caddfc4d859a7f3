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

/// Octets of one MAD packet without a GRH: LRH 8 + BTH 12 + DETH 8 + MAD 256 + ICRC 4.
pub const MAD_PACKET_OCTETS: u64 = 288;
/// Data words of one MAD packet without a GRH (what PortXmitData/PortRcvData add).
pub const MAD_PACKET_WORDS: u64 = MAD_PACKET_OCTETS / 4;
/// Data words a GRH adds (40 octets).
pub const GRH_WORDS: u64 = 10;

/// The counters of one port: the PMA's own type ([`sma::pma::Counters`]), so the simulator
/// keeps the only copy and its PMA reads it directly. Field names are the IBA's
/// (PortCountersExtended, which holds every PortCounters field at 64 bits). The simulator
/// never counts LinkErrorRecovery, RcvRemotePhysicalErrors, the constraint errors,
/// LocalLinkIntegrity, ExcessiveBufferOverrun, QP1Dropped, PortXmitWait (it has no flow
/// control) or the multicast packets (every MAD is unicast).
pub type PortCounters = sma::pma::Counters;

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
        c.count_xmit(MAD_PACKET_OCTETS, false);
        c.count_rcv(MAD_PACKET_OCTETS + GRH_WORDS * 4, false);
        assert_eq!(c.port_xmit_data, u64::MAX);
        assert_eq!((c.port_xmit_pkts, c.port_unicast_xmit_pkts), (1, 1));
        assert_eq!((c.port_rcv_pkts, c.port_rcv_data), (1, 82));
        assert!(c.no_errors());
        bump(&mut c.port_rcv_errors);
        assert!(!c.no_errors());
    }
}

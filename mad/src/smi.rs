//! Directed-route SMP processing — IBA vol1 §14.2.2 (C14-6, C14-9:1..5, C14-13:1..5).
//!
//! Every node that touches a DR SMP applies two pure rules in turn:
//!
//! 1. [`on_receive`] when the SMP arrives on a port: validates the hop pointer against the hop
//!    count, and on the outbound trip records the ingress port in `ReturnPath`.
//! 2. [`advance`] before the SMP leaves (or is consumed): moves the hop pointer and says where it
//!    goes — [`Forward::Out`] a port, [`Forward::Local`] to this node's SMA (outbound) or SM
//!    (returning), or [`Forward::LidRouted`] for the LID-routed part of a path with a
//!    non-permissive DrDLID/DrSLID.
//!
//! The originating SM calls only `advance` (hop pointer 0 → 1), a responder calls
//! [`make_response`] then `advance`, and a switch forwarding the SMP calls `on_receive` then
//! `advance`. The SMA, the simulator's switch model and the SM all call these same functions, so
//! a directed route behaves identically everywhere. Each branch carries its compliance id and
//! has a test of that name.

use crate::codes::Method;
use crate::smp::Smp;
use crate::types::{Lid, PortNum};

/// The largest legal HopCount (C14-6).
pub const MAX_HOP_CNT: u8 = 63;

/// Outcome of receive-side processing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmiAction {
    /// Keep processing: call [`advance`].
    Handle,
    /// Drop the SMP silently; the reason names the rule.
    Discard(DiscardReason),
}

/// Why a DR SMP was discarded (the rule that failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardReason {
    /// C14-6: HopCount above 63.
    HopCountTooLarge,
    /// C14-9:1 / C14-13:1: hop pointer not advanced by the sender.
    HopPtrNotAdvanced,
    /// C14-9:2 / C14-13:2: an intermediate hop reached a node that is not a switch.
    NotASwitch,
    /// C14-9:2 / C14-13:2: the next path entry names a port beyond NumPorts.
    BadNextPort,
    /// C14-9:3 / C14-13:3: a non-permissive DrDLID/DrSLID at a node that can not LID-route.
    NotPermissive,
    /// C14-9:5 / C14-13:5: hop pointer outside every legal range.
    BadHopPtr,
    /// The SMP is not a directed-route SMP.
    NotDirectedRoute,
}

/// Where a DR SMP goes after [`advance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    /// Deliver to this node: its SMA (outbound) or its SM (returning).
    Local,
    /// Send out of this port.
    Out(PortNum),
    /// Continue LID-routed towards this LID (the DrDLID/DrSLID segment; switches only).
    LidRouted(Lid),
    /// Drop it.
    Discard(DiscardReason),
}

/// Receive-side processing of a DR SMP that arrived on `in_port` of a node with `num_ports`
/// physical ports (IBA vol1 §14.2.2.2 "outgoing" and §14.2.2.4 "returning", receiver's part).
/// Updates `ReturnPath` on the outbound trip.
pub fn on_receive(smp: &mut Smp, is_switch: bool, num_ports: u8, in_port: PortNum) -> SmiAction {
    use DiscardReason as R;
    if !smp.is_dr() {
        return SmiAction::Discard(R::NotDirectedRoute);
    }
    let hop_cnt = smp.hop_cnt;
    let hop_ptr = smp.hop_ptr;
    // C14-6: valid HopCount values are 0..=63.
    if hop_cnt > MAX_HOP_CNT {
        return SmiAction::Discard(R::HopCountTooLarge);
    }
    let hc = usize::from(hop_cnt);
    let hp = usize::from(hop_ptr);
    if !smp.direction() {
        // C14-9:1: the sender must have advanced the hop pointer.
        if hop_cnt != 0 && hop_ptr == 0 {
            return SmiAction::Discard(R::HopPtrNotAdvanced);
        }
        // C14-9:2: intermediate hop — switches only; record where it came in.
        if hop_ptr != 0 && hop_ptr < hop_cnt {
            if !is_switch {
                return SmiAction::Discard(R::NotASwitch);
            }
            smp.return_path[hp] = in_port.0;
            let next = smp.initial_path[hp + 1];
            if next > num_ports {
                return SmiAction::Discard(R::BadNextPort);
            }
            return SmiAction::Handle;
        }
        // C14-9:3: end of the directed-route segment.
        if hop_ptr == hop_cnt {
            if hop_cnt != 0 {
                smp.return_path[hp] = in_port.0;
            }
            if is_switch || smp.dr_dlid().is_permissive() {
                return SmiAction::Handle;
            }
            return SmiAction::Discard(R::NotPermissive);
        }
        // C14-9:4: hop pointer past the path — for this node's SMA.
        if hp == hc + 1 {
            return SmiAction::Handle;
        }
        // C14-9:5: anything else is unreasonable.
        SmiAction::Discard(R::BadHopPtr)
    } else {
        // C14-13:1: the responder must have moved the hop pointer back.
        if hop_cnt != 0 && hp == hc + 1 {
            return SmiAction::Discard(R::HopPtrNotAdvanced);
        }
        // C14-13:2: intermediate hop on the way back — switches only.
        if (2..=hc).contains(&hp) {
            if !is_switch {
                return SmiAction::Discard(R::NotASwitch);
            }
            if smp.return_path[hp - 1] > num_ports {
                return SmiAction::Discard(R::BadNextPort);
            }
            return SmiAction::Handle;
        }
        // C14-13:3: end of the returning directed-route segment.
        if hop_ptr == 1 {
            if is_switch || smp.dr_slid().is_permissive() {
                return SmiAction::Handle;
            }
            return SmiAction::Discard(R::NotPermissive);
        }
        // C14-13:4: hop pointer 0 — for this node's SM.
        if hop_ptr == 0 {
            return SmiAction::Handle;
        }
        // C14-13:5: anything else is unreasonable.
        SmiAction::Discard(R::BadHopPtr)
    }
}

/// Send-side processing: moves the hop pointer and says where the SMP goes next
/// (IBA vol1 §14.2.2.1 and §14.2.2.3, sender's part). Call it at the originator, at every
/// forwarding switch after [`on_receive`], and at the responder after [`make_response`].
pub fn advance(smp: &mut Smp, is_switch: bool) -> Forward {
    use DiscardReason as R;
    if !smp.is_dr() {
        return Forward::Discard(R::NotDirectedRoute);
    }
    let hop_cnt = smp.hop_cnt;
    // C14-6: valid HopCount values are 0..=63.
    if hop_cnt > MAX_HOP_CNT {
        return Forward::Discard(R::HopCountTooLarge);
    }
    let hc = usize::from(hop_cnt);
    let hp = usize::from(smp.hop_ptr);
    if !smp.direction() {
        // C14-9:1: the originator starts the path.
        if hc != 0 && hp == 0 {
            smp.hop_ptr = 1;
            return Forward::Out(PortNum(smp.initial_path[1]));
        }
        // C14-9:2: an intermediate switch forwards along InitialPath.
        if hp != 0 && hp < hc {
            if !is_switch {
                return Forward::Discard(R::NotASwitch);
            }
            smp.hop_ptr += 1;
            return Forward::Out(PortNum(smp.initial_path[hp + 1]));
        }
        // C14-9:3: end of the DR segment — deliver here, or go on LID-routed to DrDLID.
        if hp == hc {
            smp.hop_ptr += 1;
            let dlid = smp.dr_dlid();
            if dlid.is_permissive() {
                return Forward::Local;
            }
            if is_switch {
                return Forward::LidRouted(dlid);
            }
            return Forward::Discard(R::NotPermissive);
        }
        // C14-9:4: already past the path — this node's SMA.
        if hp == hc + 1 {
            return Forward::Local;
        }
        // C14-9:5.
        Forward::Discard(R::BadHopPtr)
    } else {
        // C14-13:1: the responder starts the way back.
        if hc != 0 && hp == hc + 1 {
            smp.hop_ptr -= 1;
            return Forward::Out(PortNum(smp.return_path[hc]));
        }
        // C14-13:2: an intermediate switch forwards along ReturnPath.
        if (2..=hc).contains(&hp) {
            if !is_switch {
                return Forward::Discard(R::NotASwitch);
            }
            smp.hop_ptr -= 1;
            return Forward::Out(PortNum(smp.return_path[hp - 1]));
        }
        // C14-13:3: end of the returning DR segment — the SM, or LID-routed to DrSLID.
        if hp == 1 {
            smp.hop_ptr = 0;
            let slid = smp.dr_slid();
            if slid.is_permissive() {
                return Forward::Local;
            }
            if is_switch {
                return Forward::LidRouted(slid);
            }
            return Forward::Discard(R::NotPermissive);
        }
        // C14-13:4: hop pointer 0 — the SM.
        if hp == 0 {
            return Forward::Local;
        }
        // C14-13:5.
        Forward::Discard(R::BadHopPtr)
    }
}

/// Turns a request into its response in place: Method = GetResp (for Get and Set, IBA vol1
/// §13.4.5), and for a DR SMP the D bit set; the hop fields stay as they are so that
/// [`advance`] starts the way back (C14-13:1).
pub fn make_response(smp: &mut Smp) {
    smp.method = Method::GET_RESP.0;
    if smp.is_dr() {
        smp.set_direction(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::SmpAttrId;
    use crate::types::DrPath;

    fn req(path: &[u8]) -> Smp {
        let p = DrPath::new(path).unwrap();
        Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 7, &p)
    }

    #[test]
    fn c14_6_hop_cnt_64_is_discarded() {
        let mut s = req(&[1]);
        s.hop_cnt = 64;
        assert_eq!(
            on_receive(&mut s, true, 8, PortNum(1)),
            SmiAction::Discard(DiscardReason::HopCountTooLarge)
        );
        assert_eq!(
            advance(&mut s, true),
            Forward::Discard(DiscardReason::HopCountTooLarge)
        );
    }

    #[test]
    fn c14_9_1_originator_starts_path_and_receiver_rejects_unadvanced() {
        let mut s = req(&[3, 4]);
        let mut copy = s;
        assert_eq!(
            on_receive(&mut copy, true, 8, PortNum(1)),
            SmiAction::Discard(DiscardReason::HopPtrNotAdvanced)
        );
        assert_eq!(advance(&mut s, false), Forward::Out(PortNum(3)));
        assert_eq!(s.hop_ptr, 1);
    }

    #[test]
    fn c14_9_2_intermediate_switch_records_return_and_forwards() {
        let mut s = req(&[3, 4]);
        let _ = advance(&mut s, false);
        assert_eq!(on_receive(&mut s, true, 8, PortNum(2)), SmiAction::Handle);
        assert_eq!(s.return_path[1], 2);
        assert_eq!(advance(&mut s, true), Forward::Out(PortNum(4)));
        assert_eq!(s.hop_ptr, 2);
    }

    #[test]
    fn c14_9_2_ca_may_not_be_an_intermediate_hop() {
        let mut s = req(&[3, 4]);
        let _ = advance(&mut s, false);
        assert_eq!(
            on_receive(&mut s, false, 2, PortNum(1)),
            SmiAction::Discard(DiscardReason::NotASwitch)
        );
        s.hop_ptr = 1;
        assert_eq!(
            advance(&mut s, false),
            Forward::Discard(DiscardReason::NotASwitch)
        );
    }

    #[test]
    fn c14_9_2_next_port_beyond_num_ports_is_discarded() {
        let mut s = req(&[3, 9]);
        let _ = advance(&mut s, false);
        assert_eq!(
            on_receive(&mut s, true, 8, PortNum(1)),
            SmiAction::Discard(DiscardReason::BadNextPort)
        );
    }

    #[test]
    fn c14_9_3_end_of_segment_is_local_when_dlid_permissive() {
        let mut s = req(&[3]);
        let _ = advance(&mut s, false);
        assert_eq!(on_receive(&mut s, false, 1, PortNum(1)), SmiAction::Handle);
        assert_eq!(s.return_path[1], 1);
        assert_eq!(advance(&mut s, false), Forward::Local);
        assert_eq!(s.hop_ptr, 2);
    }

    #[test]
    fn c14_9_3_non_permissive_dlid_goes_lid_routed_at_a_switch_only() {
        let mut s = req(&[3]);
        s.dr_dlid.set(12);
        let _ = advance(&mut s, false);
        let mut at_ca = s;
        assert_eq!(
            on_receive(&mut at_ca, false, 1, PortNum(1)),
            SmiAction::Discard(DiscardReason::NotPermissive)
        );
        assert_eq!(on_receive(&mut s, true, 8, PortNum(1)), SmiAction::Handle);
        assert_eq!(advance(&mut s, true), Forward::LidRouted(Lid(12)));
    }

    #[test]
    fn c14_9_4_hop_ptr_past_path_is_local() {
        // A 0-hop SMP to the SM's own node: the send side moves hop_ptr to 1 = hop_cnt + 1.
        let mut s = req(&[]);
        assert_eq!(advance(&mut s, false), Forward::Local);
        assert_eq!(s.hop_ptr, 1);
        assert_eq!(on_receive(&mut s, false, 1, PortNum(1)), SmiAction::Handle);
        assert_eq!(advance(&mut s, false), Forward::Local);
    }

    #[test]
    fn c14_9_5_unreasonable_hop_ptr_is_discarded() {
        let mut s = req(&[1, 2]);
        s.hop_ptr = 5;
        assert_eq!(
            on_receive(&mut s, true, 8, PortNum(1)),
            SmiAction::Discard(DiscardReason::BadHopPtr)
        );
        assert_eq!(
            advance(&mut s, true),
            Forward::Discard(DiscardReason::BadHopPtr)
        );
    }

    #[test]
    fn c14_13_1_responder_starts_return_path() {
        let mut s = req(&[3, 4]);
        s.hop_ptr = 3;
        s.return_path[1] = 2;
        s.return_path[2] = 6;
        make_response(&mut s);
        assert!(s.direction());
        assert_eq!(s.method(), Method::GET_RESP);
        let mut copy = s;
        assert_eq!(
            on_receive(&mut copy, true, 8, PortNum(1)),
            SmiAction::Discard(DiscardReason::HopPtrNotAdvanced)
        );
        assert_eq!(advance(&mut s, false), Forward::Out(PortNum(6)));
        assert_eq!(s.hop_ptr, 2);
    }

    #[test]
    fn c14_13_2_intermediate_switch_forwards_back() {
        let mut s = req(&[3, 4]);
        s.return_path[1] = 2;
        s.hop_ptr = 2;
        s.set_direction(true);
        assert_eq!(on_receive(&mut s, true, 8, PortNum(4)), SmiAction::Handle);
        assert_eq!(advance(&mut s, true), Forward::Out(PortNum(2)));
        assert_eq!(s.hop_ptr, 1);
        let mut at_ca = s;
        at_ca.hop_ptr = 2;
        assert_eq!(
            on_receive(&mut at_ca, false, 1, PortNum(1)),
            SmiAction::Discard(DiscardReason::NotASwitch)
        );
    }

    #[test]
    fn c14_13_3_end_of_return_segment_reaches_the_sm() {
        let mut s = req(&[3]);
        s.hop_ptr = 1;
        s.set_direction(true);
        assert_eq!(on_receive(&mut s, false, 1, PortNum(1)), SmiAction::Handle);
        assert_eq!(advance(&mut s, false), Forward::Local);
        assert_eq!(s.hop_ptr, 0);
        let mut lr = req(&[3]);
        lr.hop_ptr = 1;
        lr.set_direction(true);
        lr.dr_slid.set(5);
        assert_eq!(
            on_receive(&mut lr, false, 1, PortNum(1)),
            SmiAction::Discard(DiscardReason::NotPermissive)
        );
        assert_eq!(advance(&mut lr, true), Forward::LidRouted(Lid(5)));
    }

    #[test]
    fn c14_13_4_hop_ptr_zero_is_for_the_sm() {
        let mut s = req(&[3]);
        s.set_direction(true);
        assert_eq!(on_receive(&mut s, false, 1, PortNum(1)), SmiAction::Handle);
        assert_eq!(advance(&mut s, false), Forward::Local);
    }

    #[test]
    fn c14_13_5_unreasonable_return_hop_ptr_is_discarded() {
        let mut s = req(&[3]);
        s.set_direction(true);
        s.hop_ptr = 9;
        assert_eq!(
            on_receive(&mut s, true, 8, PortNum(1)),
            SmiAction::Discard(DiscardReason::BadHopPtr)
        );
        assert_eq!(
            advance(&mut s, true),
            Forward::Discard(DiscardReason::BadHopPtr)
        );
    }

    #[test]
    fn lid_routed_smp_is_not_dr() {
        let mut s = Smp::lid_request(Method::GET, SmpAttrId::NODE_INFO, 0, 1);
        assert_eq!(
            on_receive(&mut s, true, 8, PortNum(1)),
            SmiAction::Discard(DiscardReason::NotDirectedRoute)
        );
    }

    /// The 1-hop NodeInfo round trip seen on ibsim (mad-layouts.md §2c): the response reaches
    /// the SM with D=1, hop_ptr=0, hop_cnt=1 and return_path[1] = the switch's ingress port.
    #[test]
    fn one_hop_round_trip_matches_ibsim() {
        let mut s = req(&[1]);
        assert_eq!(advance(&mut s, false), Forward::Out(PortNum(1)));
        assert_eq!(on_receive(&mut s, true, 8, PortNum(1)), SmiAction::Handle);
        assert_eq!(advance(&mut s, true), Forward::Local);
        make_response(&mut s);
        assert_eq!(advance(&mut s, true), Forward::Out(PortNum(1)));
        assert_eq!(on_receive(&mut s, false, 1, PortNum(1)), SmiAction::Handle);
        assert_eq!(advance(&mut s, false), Forward::Local);
        assert!(s.direction());
        assert_eq!((s.hop_ptr, s.hop_cnt, s.return_path[1]), (0, 1, 1));
    }
}

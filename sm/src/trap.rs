//! Traps the SM receives (IBA vol1 §13.4.8, §14.2.5.1 Notice; OpenSM `osm_trap_rcv.c`): what
//! each trap asks of the SM, and the flood control that keeps a babbling port from sweeping the
//! subnet again and again.
//!
//! Every trap is answered with a TrapRepress carrying its TID (by [`crate::Sm`], whatever this
//! module decides). Then:
//! - identical traps (same issuer, trap number and DataDetails) are counted while each arrives
//!   within [`AGING_WINDOW`] of the previous one; from the [`FLOOD_THRESHOLD`]th on they are
//!   repressed but otherwise ignored ([`TrapTracker`]); a flood of link-integrity traps
//!   (129–131) names a bad port, which is marked unhealthy for 60 s — no route crosses its
//!   link, a heavy sweep moves them off it — or, with `babbling_port_policy`, disabled from
//!   the 250th trap on (OpenSM `shutup_noisy_port`; [`crate::Sm`]);
//! - with `sweep_on_trap`, trap 128 (a switch port changed state) and trap 144 (local changes:
//!   capability mask — an SM appeared or left —, SM priority, link width or speed) start a heavy
//!   sweep at once; trap 144 reporting only a NodeDescription change refreshes that node's
//!   description; trap 145 (SystemImageGUID changed) and the others (129–131 link integrity,
//!   buffer overrun, flow-control watchdog; 256–259 bad keys) start a light sweep, which turns
//!   heavy if it finds a change ([`classify`]).

use core::time::Duration;
use std::collections::HashMap;

use ibmad::attr::Notice;
use ibmad::{Lid, Time, TrapNum};

/// Identical traps further apart than this start a new count (OpenSM
/// `OSM_DEFAULT_TRAP_SUPPRESSION_TIMEOUT`, 5 s).
pub const AGING_WINDOW: Duration = Duration::from_secs(5);

/// The count of identical traps from which on they are ignored (OpenSM: 10).
pub const FLOOD_THRESHOLD: u32 = 10;

/// Trap 144 DataDetails ChangeFlags bit: NodeDescription changed.
const CHANGE_NODE_DESCRIPTION: u16 = 0x0001;

/// What a trap asks of the SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapAction {
    /// Nothing beyond the TrapRepress (`sweep_on_trap` off, or a flood).
    None,
    /// A heavy sweep now; the issuer (a switch's port 0 for trap 128, an end port for 144)
    /// is where the change is.
    HeavySweep {
        /// The issuing port's LID.
        issuer: Lid,
    },
    /// A light sweep now (a heavy one follows if it finds a change).
    LightSweep,
    /// Re-read the NodeDescription of the node behind this LID.
    NodeDescription {
        /// The issuing port's LID.
        issuer: Lid,
    },
}

/// What to do with a trap (see the module documentation).
#[must_use]
pub fn classify(notice: &Notice, sweep_on_trap: bool) -> TrapAction {
    if !sweep_on_trap || notice.is_generic() == 0 {
        return TrapAction::None;
    }
    let issuer = notice.issuer_lid();
    match notice.trap_num() {
        TrapNum::LINK_STATE_CHANGE => TrapAction::HeavySweep { issuer },
        TrapNum::LOCAL_CHANGES => {
            let d = &notice.data_details;
            let other_local = d[5] & 0x01 != 0;
            let flags = u16::from_be_bytes([d[10], d[11]]);
            if other_local && flags == CHANGE_NODE_DESCRIPTION {
                TrapAction::NodeDescription { issuer }
            } else {
                TrapAction::HeavySweep { issuer }
            }
        }
        _ => TrapAction::LightSweep,
    }
}

/// Counts identical traps (see the module documentation).
#[derive(Debug, Default)]
pub struct TrapTracker {
    seen: HashMap<(u16, u16, [u8; 54]), (u32, Time)>,
}

impl TrapTracker {
    /// Registers a trap from `slid` arriving at `now`; returns how many identical traps (this
    /// one included) arrived in a row, each within [`AGING_WINDOW`] of the previous.
    pub fn register(&mut self, now: Time, slid: Lid, notice: &Notice) -> u32 {
        // Entries older than the window cannot count any more.
        if self.seen.len() > 4096 {
            self.seen
                .retain(|_, (_, at)| now.saturating_since(*at) <= AGING_WINDOW);
        }
        let key = (slid.0, notice.trap_num.get(), notice.data_details);
        let e = self.seen.entry(key).or_insert((0, now));
        if now.saturating_since(e.1) > AGING_WINDOW {
            e.0 = 0;
        }
        e.0 += 1;
        e.1 = now;
        e.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::zerocopy::FromZeros;

    fn notice(trap: TrapNum, lid: u16) -> Notice {
        let mut n = Notice::new_zeroed();
        n.set_is_generic(1);
        n.trap_num.set(trap.0);
        n.issuer_lid.set(lid);
        n
    }

    #[test]
    fn trap_128_and_144_sweep_heavily_others_lightly() {
        let n = notice(TrapNum::LINK_STATE_CHANGE, 4);
        assert_eq!(
            classify(&n, true),
            TrapAction::HeavySweep { issuer: Lid(4) }
        );
        assert_eq!(classify(&n, false), TrapAction::None);
        let mut n = notice(TrapNum::LOCAL_CHANGES, 9);
        n.data_details[11] = 0x08; // SM priority changed
        n.data_details[5] = 1;
        assert_eq!(
            classify(&n, true),
            TrapAction::HeavySweep { issuer: Lid(9) }
        );
        n.data_details[11] = 0x01; // only the NodeDescription
        assert_eq!(
            classify(&n, true),
            TrapAction::NodeDescription { issuer: Lid(9) }
        );
        for t in [
            TrapNum::LOCAL_LINK_INTEGRITY,
            TrapNum::EXCESSIVE_BUFFER_OVERRUN,
            TrapNum::FLOW_CONTROL_WATCHDOG,
            TrapNum::SYS_IMAGE_GUID_CHANGE,
            TrapNum::BAD_M_KEY,
        ] {
            assert_eq!(classify(&notice(t, 3), true), TrapAction::LightSweep, "{t}");
        }
        let mut vendor = notice(TrapNum::LINK_STATE_CHANGE, 4);
        vendor.set_is_generic(0);
        assert_eq!(classify(&vendor, true), TrapAction::None);
    }

    #[test]
    fn identical_traps_count_within_the_aging_window() {
        let mut t = TrapTracker::default();
        let n = notice(TrapNum::LINK_STATE_CHANGE, 4);
        let step = Duration::from_secs(1);
        for k in 1..=12u32 {
            assert_eq!(t.register(Time(0) + step * k, Lid(4), &n), k);
        }
        // Another issuer or content counts apart.
        assert_eq!(t.register(Time(0) + step * 13, Lid(5), &n), 1);
        let mut other = n;
        other.data_details[0] = 1;
        assert_eq!(t.register(Time(0) + step * 13, Lid(4), &other), 1);
        // A pause longer than the window starts over.
        assert_eq!(t.register(Time(0) + step * 19, Lid(4), &n), 1);
    }
}

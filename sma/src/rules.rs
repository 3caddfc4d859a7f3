//! Spec rules as pure functions (STYLE P6): PortState/PortPhysicalState Set transitions
//! (IBA vol1 §7.2 link state machine, §14.2.5.6 PortInfo), the M_Key check
//! (§14.2.4 "Management Key"), the "enabled" masks of PortInfo, and the trap retry interval.
//! No compliance ids are invented here: each function cites the section it transcribes and its
//! tests are named after that section.

use core::time::Duration;

use ibmad::{MKey, Method, PhysState, PortState};

/// What a PortInfo Set does to the logical state (IBA vol1 §7.2.1, §14.2.5.6 PortState).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateChange {
    /// Nothing (NoStateChange, or the state already requested — a retried Set is idempotent).
    None,
    /// Take the link down (from any state).
    Down,
    /// Init → Armed.
    Arm,
    /// Armed → Active.
    Activate,
}

/// Validates a requested PortState against the current one.
///
/// - 0 (NoStateChange): nothing.
/// - Down: from any state — the link is taken down and retrains by itself.
/// - Initialize: only the link enters Init (Down → Init at LinkUp); a Set may not, except as a
///   no-op when the port is already in Init.
/// - Armed: only from Init (or no-op when already Armed).
/// - Active: only from Armed (or no-op when already Active).
/// - 5..=15: reserved, invalid.
///
/// Deliberate choice: re-requesting the current state is accepted as a no-op rather than
/// rejected, so that an SM retrying a Set whose GetResp was lost gets success both times.
pub fn port_state_set(
    current: PortState,
    requested: PortState,
) -> Result<StateChange, &'static str> {
    match requested {
        PortState::NO_CHANGE => Ok(StateChange::None),
        PortState::DOWN => Ok(StateChange::Down),
        PortState::INIT if current == PortState::INIT => Ok(StateChange::None),
        PortState::INIT => Err("Initialize is entered only by the link, not by a Set"),
        PortState::ARMED => match current {
            PortState::INIT => Ok(StateChange::Arm),
            PortState::ARMED => Ok(StateChange::None),
            _ => Err("Armed may only be requested from Initialize"),
        },
        PortState::ACTIVE => match current {
            PortState::ARMED => Ok(StateChange::Activate),
            PortState::ACTIVE => Ok(StateChange::None),
            _ => Err("Active may only be requested from Armed"),
        },
        _ => Err("reserved PortState value"),
    }
}

/// What a PortInfo Set does to the physical state (IBA vol1 §14.2.5.6 PortPhysicalState:
/// writable values are 0 NoStateChange, 2 Polling and 3 Disabled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhysChange {
    /// Nothing.
    None,
    /// Polling: enable the port / restart training.
    Poll,
    /// Disabled: take the link down and keep it down.
    Disable,
}

/// Validates a requested PortPhysicalState. `has_link` is false for a switch's port 0, which
/// has no physical link and accepts only NoStateChange.
pub fn phys_state_set(requested: PhysState, has_link: bool) -> Result<PhysChange, &'static str> {
    match requested {
        PhysState::NO_CHANGE => Ok(PhysChange::None),
        _ if !has_link => Err("switch port 0 has no physical link"),
        PhysState::POLLING => Ok(PhysChange::Poll),
        PhysState::DISABLED => Ok(PhysChange::Disable),
        _ => Err("only Polling (2) and Disabled (3) may be written"),
    }
}

/// Resolves an "enabled" mask of a Set (LinkWidthEnabled, LinkSpeedEnabled,
/// LinkSpeedExtEnabled; IBA vol1 §14.2.5.6): 0 keeps `current`, `all` (0xFF / 0xF / 0x1F) means
/// "set to supported", `extra` is one more value accepted verbatim (LinkSpeedExtEnabled 30 =
/// extended speeds disabled), anything else must be a non-empty subset of `supported`.
pub fn resolve_enabled(
    requested: u8,
    current: u8,
    supported: u8,
    all: u8,
    extra: Option<u8>,
) -> Result<u8, &'static str> {
    if requested == 0 {
        Ok(current)
    } else if requested == all {
        Ok(supported)
    } else if Some(requested) == extra {
        Ok(requested)
    } else if requested & !supported != 0 {
        Err("enables a width/speed the port does not support")
    } else {
        Ok(requested)
    }
}

/// Outcome of the M_Key check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MKeyCheck {
    /// The key matched (or the port's M_Key is 0): full access. A running lease timer stops.
    Match,
    /// Wrong key but a Get at protection level 0: allowed, M_Key returned as is.
    GetAllowed,
    /// Wrong key, a Get at protection level 1: allowed, but PortInfo.M_Key reads as 0.
    GetMasked,
    /// Wrong key and not allowed: drop silently, count a violation, start the lease timer and
    /// send trap 256.
    Fail,
}

/// The M_Key check of an SMP addressed to this port (IBA vol1 §14.2.4.1, protection levels
/// of M_KeyProtectBits):
///
/// | Protect | Get, wrong key | Set / TrapRepress, wrong key |
/// |---|---|---|
/// | 0 | succeeds, M_Key returned | fails |
/// | 1 | succeeds, M_Key returned as 0 | fails |
/// | 2, 3 | fails | fails |
///
/// A port M_Key of 0 always matches.
pub fn check_mkey(port_key: MKey, protect: u8, smp_key: MKey, method: Method) -> MKeyCheck {
    if port_key.0 == 0 || port_key == smp_key {
        return MKeyCheck::Match;
    }
    if method == Method::SET || method == Method::TRAP_REPRESS {
        return MKeyCheck::Fail;
    }
    match protect {
        0 => MKeyCheck::GetAllowed,
        1 => MKeyCheck::GetMasked,
        _ => MKeyCheck::Fail,
    }
}

/// 4.096 µs × 2^`exp` (the IBA's time encoding for SubnetTimeOut, RespTimeValue, LifeTime).
#[must_use]
pub fn ib_time(exp: u8) -> Duration {
    Duration::from_nanos(4096u64.saturating_mul(1u64 << exp.min(31)))
}

/// The first trap retransmission interval: SubnetTimeOut (IBA vol1 §13.4.6.2 / §14.2.5.6),
/// never below 1 ms so that an unconfigured timeout does not spin.
#[must_use]
pub fn trap_interval(subnet_timeout: u8) -> Duration {
    ib_time(subnet_timeout).max(Duration::from_millis(1))
}

/// Retries back off by doubling, up to this multiple of the first interval.
pub const TRAP_BACKOFF_MAX_FACTOR: u32 = 32;

#[cfg(test)]
mod tests {
    use super::*;

    const D: PortState = PortState::DOWN;
    const I: PortState = PortState::INIT;
    const AR: PortState = PortState::ARMED;
    const AC: PortState = PortState::ACTIVE;
    const NC: PortState = PortState::NO_CHANGE;

    /// IBA vol1 §7.2 / §14.2.5.6: every (current, requested) pair of the logical state machine.
    #[test]
    fn s7_2_port_state_transition_table() {
        use StateChange as S;
        let ok = |s| Ok::<StateChange, ()>(s);
        let bad = Err::<StateChange, ()>(());
        let table: &[(PortState, PortState, Result<StateChange, ()>)] = &[
            (D, NC, ok(S::None)),
            (I, NC, ok(S::None)),
            (AR, NC, ok(S::None)),
            (AC, NC, ok(S::None)),
            (D, D, ok(S::Down)),
            (I, D, ok(S::Down)),
            (AR, D, ok(S::Down)),
            (AC, D, ok(S::Down)),
            (D, I, bad),
            (I, I, ok(S::None)),
            (AR, I, bad),
            (AC, I, bad),
            (D, AR, bad),
            (I, AR, ok(S::Arm)),
            (AR, AR, ok(S::None)),
            (AC, AR, bad),
            (D, AC, bad),
            (I, AC, bad),
            (AR, AC, ok(S::Activate)),
            (AC, AC, ok(S::None)),
            (I, PortState(5), bad),
            (AC, PortState(15), bad),
        ];
        for &(cur, req, want) in table {
            let got = port_state_set(cur, req).map_err(|_| ());
            assert_eq!(got, want, "{cur:?} -> {req:?}");
        }
    }

    #[test]
    fn s14_2_5_6_phys_state_writable_values() {
        assert_eq!(
            phys_state_set(PhysState::NO_CHANGE, true),
            Ok(PhysChange::None)
        );
        assert_eq!(
            phys_state_set(PhysState::POLLING, true),
            Ok(PhysChange::Poll)
        );
        assert_eq!(
            phys_state_set(PhysState::DISABLED, true),
            Ok(PhysChange::Disable)
        );
        for v in [1u8, 4, 5, 6, 7, 8, 15] {
            assert!(phys_state_set(PhysState(v), true).is_err(), "{v}");
        }
        assert!(phys_state_set(PhysState::DISABLED, false).is_err());
        assert_eq!(
            phys_state_set(PhysState::NO_CHANGE, false),
            Ok(PhysChange::None)
        );
    }

    #[test]
    fn s14_2_5_6_enabled_masks() {
        // LinkWidthEnabled: 0 keeps, 0xFF = supported, subsets accepted, others rejected.
        assert_eq!(resolve_enabled(0, 2, 3, 0xFF, None), Ok(2));
        assert_eq!(resolve_enabled(0xFF, 2, 3, 0xFF, None), Ok(3));
        assert_eq!(resolve_enabled(1, 2, 3, 0xFF, None), Ok(1));
        assert!(resolve_enabled(8, 2, 3, 0xFF, None).is_err());
        // LinkSpeedExtEnabled 30 = disable extended speeds.
        assert_eq!(resolve_enabled(30, 1, 1, 0x1F, Some(30)), Ok(30));
    }

    /// IBA vol1 §14.2.4.1: the protection-level table, every row.
    #[test]
    fn s14_2_4_1_m_key_protection_levels() {
        let port = MKey(0x1234);
        let bad = MKey(0x9999);
        use MKeyCheck as M;
        for protect in 0..=3u8 {
            assert_eq!(check_mkey(port, protect, port, Method::GET), M::Match);
            assert_eq!(check_mkey(port, protect, port, Method::SET), M::Match);
            assert_eq!(check_mkey(port, protect, bad, Method::SET), M::Fail);
            assert_eq!(
                check_mkey(port, protect, bad, Method::TRAP_REPRESS),
                M::Fail
            );
            // A zero port key never protects.
            assert_eq!(check_mkey(MKey(0), protect, bad, Method::SET), M::Match);
        }
        assert_eq!(check_mkey(port, 0, bad, Method::GET), M::GetAllowed);
        assert_eq!(check_mkey(port, 1, bad, Method::GET), M::GetMasked);
        assert_eq!(check_mkey(port, 2, bad, Method::GET), M::Fail);
        assert_eq!(check_mkey(port, 3, bad, Method::GET), M::Fail);
    }

    #[test]
    fn ib_time_encoding() {
        assert_eq!(ib_time(0), Duration::from_nanos(4096));
        assert_eq!(ib_time(18), Duration::from_nanos(4096 << 18));
        assert_eq!(trap_interval(0), Duration::from_millis(1));
        assert!(trap_interval(18) > Duration::from_secs(1));
    }
}

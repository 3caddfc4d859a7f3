//! The SM's timers as an enum-indexed table (STYLE P5, after quinn's `TimerTable`).
//!
//! Each timer belongs to one part of the SM: [`Timer::Sweep`], [`Timer::TrapSweep`] and
//! [`Timer::Compute`] to the sweep pipeline ([`crate::sweep`]), [`Timer::SmInfoPoll`] to the
//! role machine
//! ([`crate::role`]). The SMP-response timeouts are not in this table: they live in the
//! transaction engine's deadline queue (one per SMP in flight) and are merged in
//! [`crate::Sm::poll_timeout`].

use ibmad::Time;

/// A timer the SM can arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// Start the next (light) sweep; armed at start with time zero so the first heavy sweep
    /// begins on the first `handle_timeout`.
    Sweep,
    /// End of the trap-repress window: a trap burst is answered by one heavy sweep.
    TrapSweep,
    /// The next computation step of a heavy sweep (LID assignment, then routing), armed at
    /// the current time so each step runs in its own `handle_timeout` and the owner can see
    /// (and time) where one ends and the next begins.
    Compute,
    /// Role (STANDBY): time to check on the master (IBA vol1 §14.4 SMInfo polling; today by
    /// rediscovering the subnet).
    SmInfoPoll,
}

impl Timer {
    const ALL: [Timer; 4] = [
        Timer::Sweep,
        Timer::TrapSweep,
        Timer::Compute,
        Timer::SmInfoPoll,
    ];
    fn idx(self) -> usize {
        match self {
            Timer::Sweep => 0,
            Timer::TrapSweep => 1,
            Timer::Compute => 2,
            Timer::SmInfoPoll => 3,
        }
    }
    /// True for the timers of the role machine ([`crate::role::SmRole::handle_timeout`]).
    #[must_use]
    pub fn is_role_timer(self) -> bool {
        matches!(self, Timer::SmInfoPoll)
    }
}

/// Deadlines, one optional slot per [`Timer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerTable {
    data: [Option<Time>; Timer::ALL.len()],
}

impl TimerTable {
    /// Arms `t` to fire at `at` (replacing any earlier arming).
    pub fn set(&mut self, t: Timer, at: Time) {
        self.data[t.idx()] = Some(at);
    }
    /// The deadline of `t`, if armed.
    #[must_use]
    pub fn get(&self, t: Timer) -> Option<Time> {
        self.data[t.idx()]
    }
    /// Disarms `t`.
    pub fn stop(&mut self, t: Timer) {
        self.data[t.idx()] = None;
    }
    /// The earliest armed deadline.
    #[must_use]
    pub fn next_timeout(&self) -> Option<Time> {
        self.data.iter().flatten().min().copied()
    }
    /// Disarms and returns one timer whose deadline is at or before `now`.
    pub fn take_expired(&mut self, now: Time) -> Option<Timer> {
        for t in Timer::ALL {
            if self.get(t).is_some_and(|at| at <= now) {
                self.stop(t);
                return Some(t);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_and_expiry() {
        let mut tt = TimerTable::default();
        assert_eq!(tt.next_timeout(), None);
        tt.set(Timer::Sweep, Time(50));
        tt.set(Timer::TrapSweep, Time(20));
        assert_eq!(tt.next_timeout(), Some(Time(20)));
        assert_eq!(tt.take_expired(Time(10)), None);
        assert_eq!(tt.take_expired(Time(30)), Some(Timer::TrapSweep));
        assert_eq!(tt.take_expired(Time(30)), None);
        assert_eq!(tt.next_timeout(), Some(Time(50)));
        assert_eq!(tt.take_expired(Time(50)), Some(Timer::Sweep));
        assert_eq!(tt.next_timeout(), None);
    }
}

//! [`TimerTable`]: the agent's timers, indexed by [`Timer`] (STYLE P5). Times are passed in.

use ibmad::Time;

/// The agent's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// The earliest pending trap retransmission.
    TrapResend = 0,
    /// The earliest M_Key lease expiry.
    MKeyLease = 1,
}

impl Timer {
    /// Every timer.
    pub const ALL: [Timer; 2] = [Timer::TrapResend, Timer::MKeyLease];
}

/// One optional deadline per [`Timer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerTable {
    data: [Option<Time>; 2],
}

impl TimerTable {
    /// Arms `t` at `at`.
    pub fn set(&mut self, t: Timer, at: Time) {
        self.data[t as usize] = Some(at);
    }
    /// Arms or disarms `t`.
    pub fn set_opt(&mut self, t: Timer, at: Option<Time>) {
        self.data[t as usize] = at;
    }
    /// Disarms `t`.
    pub fn stop(&mut self, t: Timer) {
        self.data[t as usize] = None;
    }
    /// The deadline of `t`.
    #[must_use]
    pub fn get(&self, t: Timer) -> Option<Time> {
        self.data[t as usize]
    }
    /// True if `t` is armed and due at `now`.
    #[must_use]
    pub fn is_expired(&self, t: Timer, now: Time) -> bool {
        self.data[t as usize].is_some_and(|at| at <= now)
    }
    /// The earliest deadline of all timers.
    #[must_use]
    pub fn next_timeout(&self) -> Option<Time> {
        self.data.iter().flatten().min().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_deadline_and_expiry() {
        let mut t = TimerTable::default();
        assert_eq!(t.next_timeout(), None);
        t.set(Timer::MKeyLease, Time(50));
        t.set(Timer::TrapResend, Time(20));
        assert_eq!(t.next_timeout(), Some(Time(20)));
        assert!(t.is_expired(Timer::TrapResend, Time(20)));
        assert!(!t.is_expired(Timer::MKeyLease, Time(49)));
        t.stop(Timer::TrapResend);
        assert_eq!(t.next_timeout(), Some(Time(50)));
    }
}

//! [`Time`]: the monotonic timestamp every sans-IO core takes as input.
//!
//! The cores (SMA, SM) read no clock; the caller passes `now`. A daemon maps
//! `std::time::Instant` onto it; the simulator passes its virtual clock. Nanoseconds since an
//! arbitrary epoch, never decreasing between calls on the same core.

use core::ops::{Add, Sub};
use core::time::Duration;

/// A point in time: nanoseconds since an arbitrary, fixed epoch.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Time(pub u64);

impl Time {
    /// The epoch.
    pub const ZERO: Time = Time(0);

    /// Nanoseconds since the epoch.
    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// A time `ms` milliseconds after the epoch.
    #[must_use]
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms.saturating_mul(1_000_000))
    }
    /// The time elapsed since `earlier` (zero if `earlier` is later).
    #[must_use]
    pub fn saturating_since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Time(self.0.saturating_add(ns))
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    fn sub(self, earlier: Time) -> Duration {
        self.saturating_since(earlier)
    }
}

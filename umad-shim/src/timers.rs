//! The timeout table: one deadline per key, the earliest first (STYLE P5's `TimerTable`).
//!
//! Every pending wait of the shim — a request's response timeout, an RMPP sender's ACK timeout,
//! an RMPP receiver's total-time limit and its post-completion linger — is a key here. Setting a
//! key replaces its previous deadline; [`TimerTable::expired`] removes and returns the keys whose
//! deadline is not after `now`, earliest first. No clock is read: time is passed in.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

use ibmad::Time;

/// Deadlines by key.
#[derive(Debug)]
pub struct TimerTable<K> {
    by_key: HashMap<K, Time>,
    order: BTreeSet<(Time, K)>,
}

impl<K: Copy + Eq + Hash + Ord> Default for TimerTable<K> {
    fn default() -> Self {
        TimerTable {
            by_key: HashMap::new(),
            order: BTreeSet::new(),
        }
    }
}

impl<K: Copy + Eq + Hash + Ord> TimerTable<K> {
    /// Arms (or re-arms) `key` for `at`.
    pub fn set(&mut self, key: K, at: Time) {
        if let Some(old) = self.by_key.insert(key, at) {
            self.order.remove(&(old, key));
        }
        self.order.insert((at, key));
    }

    /// Disarms `key` (no-op if not armed).
    pub fn cancel(&mut self, key: K) {
        if let Some(old) = self.by_key.remove(&key) {
            self.order.remove(&(old, key));
        }
    }

    /// The deadline of `key`, if armed.
    #[must_use]
    pub fn get(&self, key: K) -> Option<Time> {
        self.by_key.get(&key).copied()
    }

    /// The earliest deadline.
    #[must_use]
    pub fn next(&self) -> Option<Time> {
        self.order.first().map(|&(t, _)| t)
    }

    /// Removes and returns every key due at `now`, earliest first.
    pub fn expired(&mut self, now: Time) -> Vec<K> {
        let mut out = Vec::new();
        while let Some(&(t, k)) = self.order.first() {
            if t > now {
                break;
            }
            self.order.pop_first();
            self.by_key.remove(&k);
            out.push(k);
        }
        out
    }

    /// Number of armed keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// True when nothing is armed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_rearming_replaces() {
        let mut t = TimerTable::default();
        t.set(1u32, Time(30));
        t.set(2, Time(10));
        t.set(3, Time(20));
        assert_eq!(t.next(), Some(Time(10)));
        t.set(2, Time(40));
        assert_eq!(t.next(), Some(Time(20)));
        assert_eq!(t.len(), 3);
        assert_eq!(t.expired(Time(29)), vec![3]);
        assert_eq!(t.expired(Time(29)), Vec::<u32>::new());
        t.cancel(1);
        t.cancel(99);
        assert_eq!(t.get(2), Some(Time(40)));
        assert_eq!(t.expired(Time(100)), vec![2]);
        assert!(t.is_empty());
        assert_eq!(t.next(), None);
    }

    #[test]
    fn equal_deadlines_all_expire() {
        let mut t = TimerTable::default();
        for k in 0..5u8 {
            t.set(k, Time(7));
        }
        assert_eq!(t.expired(Time(7)), vec![0, 1, 2, 3, 4]);
    }
}

//! The deterministic event queue: a binary min-heap keyed by `(time, seq)`.
//!
//! `seq` is a counter stamped at insertion, so events due at the same virtual time run in the
//! order they were scheduled — the run never depends on heap internals, hash order or the host.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use ibmad::Time;

struct Entry<E> {
    time: Time,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
/// Reversed so that `BinaryHeap` (a max-heap) pops the earliest `(time, seq)` first.
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .cmp(&self.time)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A queue of events of type `E` ordered by due time, then by insertion order.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    #[must_use]
    pub fn new() -> EventQueue<E> {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Schedules `ev` at `time`.
    pub fn push(&mut self, time: Time, ev: E) {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        self.heap.push(Entry { time, seq, ev });
    }

    /// The due time of the earliest event.
    #[must_use]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.heap.pop().map(|e| (e.time, e.ev))
    }

    /// Removes and returns the earliest event if it is due at or before `limit`.
    pub fn pop_due(&mut self, limit: Time) -> Option<(Time, E)> {
        if self.peek_time()? <= limit {
            self.pop()
        } else {
            None
        }
    }

    /// Number of pending events.
    #[must_use]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True if nothing is pending.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Total events ever scheduled.
    #[must_use]
    pub fn scheduled(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Time(5), 'a');
        q.push(Time(1), 'b');
        q.push(Time(5), 'c');
        q.push(Time(1), 'd');
        q.push(Time(3), 'e');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'e', 'a', 'c']);
    }

    #[test]
    fn pop_due_respects_the_limit() {
        let mut q = EventQueue::new();
        q.push(Time(10), 1);
        assert_eq!(q.pop_due(Time(9)), None);
        assert_eq!(q.peek_time(), Some(Time(10)));
        assert_eq!(q.pop_due(Time(10)), Some((Time(10), 1)));
        assert!(q.is_empty());
        assert_eq!(q.scheduled(), 1);
    }
}

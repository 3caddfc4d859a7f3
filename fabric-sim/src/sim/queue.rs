//! The deterministic event queue: a binary min-heap keyed by `(time, seq)`.
//!
//! `seq` is a counter stamped at insertion, so events due at the same virtual time run in the
//! order they were scheduled — the run never depends on heap internals, hash order or the host.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

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

/// Sorted FIFO lanes kept besides the heap (see [`EventQueue`]).
const LANES: usize = 4;

/// A queue of events of type `E` ordered by due time, then by insertion order.
///
/// Most events of a simulation are scheduled a fixed delay after the current time (a link
/// hop, an agent's service time), so each such stream arrives already sorted. An event goes
/// to the first of a few FIFO lanes whose last entry is not later than it (each lane stays
/// sorted by `(time, seq)`), else to a binary heap; the earliest event is the least of the
/// lanes' heads and the heap's top. The order is exactly the `(time, seq)` order whatever the
/// pushes; only the cost differs (a pop compares a few heads instead of sifting the heap).
///
/// The `(time, seq)` key of every lane's head and of the heap's top, and the time of every
/// lane's last entry, are kept beside them, so finding the earliest event or a lane for a new
/// one reads two small arrays instead of the lanes' ring buffers.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    lanes: [VecDeque<Entry<E>>; LANES],
    /// `key(time, seq)` of each lane's first entry, then of the heap's top; [`EMPTY`] where
    /// there is none.
    heads: [u128; LANES + 1],
    /// The time of each lane's last entry (0 for an empty lane: any event fits there).
    backs: [u64; LANES],
    seq: u64,
    len: usize,
}

/// The key of an absent head: after every real key.
const EMPTY: u128 = u128::MAX;

/// `(time, seq)` as one integer with the same order.
#[inline]
fn key(time: Time, seq: u64) -> u128 {
    (u128::from(time.0) << 64) | u128::from(seq)
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
            lanes: std::array::from_fn(|_| VecDeque::new()),
            heads: [EMPTY; LANES + 1],
            backs: [0; LANES],
            seq: 0,
            len: 0,
        }
    }

    /// Schedules `ev` at `time`.
    pub fn push(&mut self, time: Time, ev: E) {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        self.len += 1;
        let k = key(time, seq);
        let e = Entry { time, seq, ev };
        // `seq` grows, so an entry not earlier than a lane's last one keeps the lane sorted.
        for i in 0..LANES {
            if self.backs[i] <= time.0 {
                self.backs[i] = time.0;
                if self.heads[i] == EMPTY {
                    self.heads[i] = k;
                }
                self.lanes[i].push_back(e);
                return;
            }
        }
        self.heap.push(e);
        self.heads[LANES] = self.heads[LANES].min(k);
    }

    /// The earliest entry's due time and where it is (a lane, or `LANES` for the heap).
    #[inline]
    fn head(&self) -> Option<(Time, usize)> {
        let mut best = 0;
        for i in 1..=LANES {
            if self.heads[i] < self.heads[best] {
                best = i;
            }
        }
        let k = self.heads[best];
        (k != EMPTY).then_some((Time((k >> 64) as u64), best))
    }

    fn take(&mut self, at: usize) -> Option<(Time, E)> {
        let e = if at == LANES {
            let e = self.heap.pop()?;
            self.heads[LANES] = self.heap.peek().map_or(EMPTY, |t| key(t.time, t.seq));
            e
        } else {
            let lane = &mut self.lanes[at];
            let e = lane.pop_front()?;
            match lane.front() {
                Some(f) => self.heads[at] = key(f.time, f.seq),
                None => {
                    self.heads[at] = EMPTY;
                    self.backs[at] = 0;
                }
            }
            e
        };
        self.len -= 1;
        Some((e.time, e.ev))
    }

    /// The due time of the earliest event.
    #[must_use]
    pub fn peek_time(&self) -> Option<Time> {
        self.head().map(|(t, _)| t)
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let (_, h) = self.head()?;
        self.take(h)
    }

    /// Removes and returns the earliest event if it is due at or before `limit`.
    pub fn pop_due(&mut self, limit: Time) -> Option<(Time, E)> {
        let (t, h) = self.head()?;
        if t <= limit {
            self.take(h)
        } else {
            None
        }
    }

    /// Number of pending events.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing is pending.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
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

    #[test]
    fn any_push_order_pops_like_a_time_then_seq_heap() {
        use rand::{Rng, SeedableRng};
        for seed in 0..20u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut q = EventQueue::new();
            // Reference: (time, seq) sorted on every pop.
            let mut reference: Vec<(u64, u64)> = Vec::new();
            let mut now = 0u64;
            let mut n = 0u64;
            for _ in 0..5_000 {
                if rng.gen_bool(0.55) {
                    // Mostly fixed delays (several sorted streams), sometimes anything.
                    let d = match rng.gen_range(0..10) {
                        0..=3 => 100,
                        4..=6 => 1_100,
                        7 => 0,
                        8 => rng.gen_range(0..5_000),
                        _ => 200_000_000,
                    };
                    q.push(Time(now + d), n);
                    reference.push((now + d, n));
                    n += 1;
                } else {
                    reference.sort_unstable();
                    let want = (!reference.is_empty()).then(|| reference.remove(0));
                    let got = q.pop().map(|(t, e)| (t.0, e));
                    assert_eq!(got, want, "seed {seed}");
                    if let Some((t, _)) = got {
                        now = now.max(t);
                    }
                }
                assert_eq!(q.len(), reference.len());
            }
            reference.sort_unstable();
            for want in reference {
                assert_eq!(q.pop().map(|(t, e)| (t.0, e)), Some(want), "seed {seed}");
            }
            assert!(q.is_empty());
        }
    }
}

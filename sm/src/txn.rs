//! The SMP transaction engine: a FIFO of requests, a window of SMPs in flight (global and per
//! node), TIDs, response matching, and timeouts with retries.
//!
//! Pure bookkeeping, no I/O: [`Engine::next_to_send`] hands out the next request that fits the
//! window, [`Engine::complete`] retires one by TID when its response arrives, and
//! [`Engine::expire`] turns deadlines into resends (same TID, ahead of the queue) or, after the
//! last retry, into failures. TIDs use the low 32 bits only: the kernel's `user_mad` layer
//! overwrites the upper 32 with its agent id.

use std::collections::VecDeque;

use core::time::Duration;

use ibmad::{DrPath, Guid, Lid, Method, PortNum, SmpAttrId, Time};

use crate::event::PhaseStats;
use crate::subnet::NodeId;
use crate::wire_window::WireWindow;

/// Why an SMP is sent; decides what its response updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// NodeInfo Get along a path; `from` is the (switch, port) the path leaves through last
    /// (`None` for the SM's own node).
    Probe { from: Option<(NodeId, PortNum)> },
    /// NodeDescription Get.
    NodeDesc(NodeId),
    /// SwitchInfo Get during discovery.
    SwitchInfo(NodeId),
    /// PortInfo Get during discovery.
    PortInfo(NodeId, PortNum),
    /// SwitchInfo Set (LinearFDBTop, LifeTimeValue, clear PortStateChange).
    SetSwitchInfo(NodeId),
    /// LinearForwardingTable block Set.
    SetLft(NodeId, u16),
    /// LinearForwardingTable block Get before programming (content unknown to the SM).
    GetLft(NodeId, u16),
    /// PortInfo Set: configuration (NoStateChange), Armed or Active.
    SetPortInfo(NodeId, PortNum),
    /// MulticastForwardingTable Set of (block, position) ([`crate::mcast::program`]).
    SetMft(NodeId, u16, u8),
    /// SLtoVLMappingTable or VLArbitrationTable Set (QoS programming), sent through the
    /// node's port `PortNum` (0 on a switch).
    SetQos(NodeId, PortNum),
    /// SLtoVLMappingTable or VLArbitrationTable Get of a table the SM does not program (read
    /// after SUBNET UP for the SA), sent through the node's port `PortNum` (0 on a switch).
    GetQos(NodeId, PortNum),
    /// P_KeyTable block Get of (node, port) before programming (content unknown to the SM).
    GetPkeys(NodeId, PortNum, u16),
    /// P_KeyTable block Set of (node, port).
    SetPkeys(NodeId, PortNum, u16),
    /// SwitchInfo Get during a light sweep.
    LightSwitchInfo(NodeId),
    /// PortInfo Get during a light sweep: a switch port with no known remote whose last
    /// PortInfo was not Down (a link up on one side only, which sends no trap when it changes).
    LightPortInfo(NodeId, PortNum),
    /// SMInfo Get to another SM's port during a heavy sweep (master election, IBA vol1
    /// §14.4.1.1): the node and the SM's port on it.
    SmInfo(NodeId, PortNum),
    /// SMInfo Get to a known SM during a light sweep (by its port GUID).
    LightSmInfo(Guid),
    /// The role machine's SMInfo Get of the SM it polls (by port GUID).
    SmPoll(Guid),
    /// The role machine's SMInfo Set (HANDOVER, ACKNOWLEDGE) to an SM (by port GUID).
    SmSet(Guid),
}

/// One SMP to send: a directed-route request.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub path: DrPath,
    pub method: Method,
    pub attr: SmpAttrId,
    pub attr_mod: u32,
    /// The SMP data field (Sets); zero for Gets.
    pub data: [u8; 64],
    pub purpose: Purpose,
    /// The node whose SMA answers, for the per-node window (`None`: not limited).
    pub node: Option<NodeId>,
    /// Send LID-routed (class 0x01) to this LID instead of along `path`; 0 = directed route.
    pub dlid: Lid,
    /// Give up after the first timeout (a read whose loss the caller recovers from anyway).
    pub once: bool,
}

impl Request {
    pub fn get(path: DrPath, attr: SmpAttrId, attr_mod: u32, purpose: Purpose) -> Request {
        let node = match purpose {
            Purpose::Probe { .. } => None,
            Purpose::NodeDesc(n)
            | Purpose::SwitchInfo(n)
            | Purpose::PortInfo(n, _)
            | Purpose::SetSwitchInfo(n)
            | Purpose::SetLft(n, _)
            | Purpose::GetLft(n, _)
            | Purpose::SetPortInfo(n, _)
            | Purpose::SetMft(n, ..)
            | Purpose::SetQos(n, _)
            | Purpose::GetQos(n, _)
            | Purpose::GetPkeys(n, ..)
            | Purpose::SetPkeys(n, ..)
            | Purpose::LightSwitchInfo(n)
            | Purpose::LightPortInfo(n, _)
            | Purpose::SmInfo(n, _) => Some(n),
            Purpose::LightSmInfo(_) | Purpose::SmPoll(_) | Purpose::SmSet(_) => None,
        };
        Request {
            path,
            method: Method::GET,
            attr,
            attr_mod,
            data: [0; 64],
            purpose,
            node,
            dlid: Lid::UNASSIGNED,
            once: false,
        }
    }
    pub fn set(
        path: DrPath,
        attr: SmpAttrId,
        attr_mod: u32,
        data: [u8; 64],
        purpose: Purpose,
    ) -> Request {
        let mut r = Request::get(path, attr, attr_mod, purpose);
        r.method = Method::SET;
        r.data = data;
        r
    }
}

#[derive(Debug)]
struct Txn {
    req: Request,
    /// Times sent so far.
    attempts: u32,
    on_wire: bool,
    /// When the last attempt went out.
    sent: Time,
}

/// A transaction given up after its last retry.
#[derive(Debug)]
pub(crate) struct Failed {
    pub req: Request,
    pub attempts: u32,
}

/// Slots an empty [`Slab`] keeps (more than the wire window ever holds in flight).
const SLAB_KEEP: usize = 4096;

/// Transactions by TID. TIDs are handed out in increasing order, so the live ones sit in a
/// window `base..base + slots.len()` and are found by subtraction, without hashing.
#[derive(Debug, Default)]
struct Slab {
    base: u32,
    slots: VecDeque<Option<Txn>>,
    live: usize,
}

impl Slab {
    fn idx(&self, tid: u32) -> Option<usize> {
        let i = tid.wrapping_sub(self.base) as usize;
        (i < self.slots.len()).then_some(i)
    }
    /// The TID the next insert will get.
    fn next_tid(&self, fresh: u32) -> u32 {
        if self.slots.is_empty() {
            fresh
        } else {
            self.base.wrapping_add(self.slots.len() as u32)
        }
    }
    fn push(&mut self, tid: u32, txn: Option<Txn>) {
        if self.slots.is_empty() {
            self.base = tid;
        }
        if txn.is_some() {
            self.live += 1;
        }
        self.slots.push_back(txn);
    }
    fn get(&self, tid: u32) -> Option<&Txn> {
        self.slots.get(self.idx(tid)?)?.as_ref()
    }
    fn get_mut(&mut self, tid: u32) -> Option<&mut Txn> {
        let i = self.idx(tid)?;
        self.slots.get_mut(i)?.as_mut()
    }
    fn remove(&mut self, tid: u32) -> Option<Txn> {
        let i = self.idx(tid)?;
        let t = self.slots.get_mut(i)?.take()?;
        self.live -= 1;
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base = self.base.wrapping_add(1);
        }
        if self.slots.is_empty() && self.slots.capacity() > SLAB_KEEP {
            // A pass that queued all its Sets at once (263,424 PortInfo Sets at
            // fat-tree:3,56, ≈ 50 MB of slots) does not keep that room for the rest of the run.
            self.slots.shrink_to(SLAB_KEEP);
        }
        Some(t)
    }
    fn is_empty(&self) -> bool {
        self.live == 0
    }
}

/// The engine. See the module doc.
#[derive(Debug)]
pub(crate) struct Engine {
    next_tid: u32,
    txns: Slab,
    queue: VecDeque<u32>,
    deadlines: VecDeque<(Time, u32, u32)>,
    in_flight: usize,
    /// SMPs in flight per node, by `NodeId` index.
    node_inflight: Vec<u32>,
    /// Requests waiting for their node's window, by `NodeId` index.
    deferred: Vec<VecDeque<u32>>,
    /// The global window ([`WireWindow`]; `max_wire_smps` is its ceiling).
    window: WireWindow,
    max_per_node: usize,
    timeout: Duration,
    retries: u32,
    rounds: u32,
    /// Counters of the current phase.
    pub stats: PhaseStats,
}

impl Engine {
    /// `retries` resends follow the first attempt at once; after that `rounds - 1` more
    /// rounds of `1 + retries` attempts are queued behind the work pending at the time. The
    /// global window adapts up to `max_wire` ([`WireWindow::adaptive`]).
    pub fn new(
        max_wire: usize,
        max_per_node: usize,
        timeout: Duration,
        retries: u32,
        rounds: u32,
    ) -> Engine {
        Engine::with_first_tid(
            1,
            WireWindow::adaptive(max_wire, timeout),
            max_per_node,
            timeout,
            retries,
            rounds,
        )
    }

    /// [`Engine::new`] whose TIDs start at `first` (a second engine beside the first uses a
    /// disjoint TID range) and with the global window `window`.
    pub fn with_first_tid(
        first: u32,
        window: WireWindow,
        max_per_node: usize,
        timeout: Duration,
        retries: u32,
        rounds: u32,
    ) -> Engine {
        Engine {
            next_tid: first.max(1),
            txns: Slab::default(),
            queue: VecDeque::new(),
            deadlines: VecDeque::new(),
            in_flight: 0,
            node_inflight: Vec::new(),
            deferred: Vec::new(),
            window,
            max_per_node: max_per_node.max(1),
            timeout,
            retries,
            rounds: rounds.max(1),
            stats: PhaseStats::default(),
        }
    }

    /// Queues a request; returns its TID (never 0).
    pub fn submit(&mut self, req: Request) -> u32 {
        let mut tid = self.txns.next_tid(self.next_tid);
        if tid == 0 {
            // 0 is never used; keep the window contiguous with an empty slot.
            if !self.txns.slots.is_empty() {
                self.txns.push(0, None);
            }
            tid = 1;
        }
        self.next_tid = tid.wrapping_add(1);
        self.txns.push(
            tid,
            Some(Txn {
                req,
                attempts: 0,
                on_wire: false,
                sent: Time::ZERO,
            }),
        );
        self.queue.push_back(tid);
        tid
    }

    /// Requests queued or in flight.
    pub fn pending(&self) -> usize {
        self.txns.live
    }

    /// No request queued or in flight.
    pub fn is_idle(&self) -> bool {
        self.txns.is_empty()
    }

    /// SMPs on the wire now.
    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// The next request to put on the wire, marked as sent at `now`, or `None` if nothing is
    /// queued or the window is full. `skip` drops a queued request whose answer is already
    /// known (counted in `stats.skipped`).
    pub fn next_to_send(
        &mut self,
        now: Time,
        mut skip: impl FnMut(&Request) -> bool,
    ) -> Option<(u32, &Request)> {
        if self.in_flight >= self.window.limit() {
            return None;
        }
        while let Some(tid) = self.queue.pop_front() {
            let Some(txn) = self.txns.get(tid) else {
                continue; // answered while waiting for a resend
            };
            if txn.on_wire {
                continue;
            }
            if txn.attempts == 0 && skip(&txn.req) {
                self.txns.remove(tid);
                self.stats.skipped += 1;
                continue;
            }
            if let Some(n) = txn.req.node {
                // Deferred only while the node has `max_per_node` in flight, so every deferred
                // request has a release ahead of it that puts it back in the queue.
                let i = n.idx();
                if self.node_inflight.len() <= i {
                    self.node_inflight.resize(i + 1, 0);
                }
                if self.node_inflight[i] as usize >= self.max_per_node {
                    if self.deferred.len() <= i {
                        self.deferred.resize_with(i + 1, VecDeque::new);
                    }
                    self.deferred[i].push_back(tid);
                    continue;
                }
                self.node_inflight[i] += 1;
            }
            let txn = self.txns.get_mut(tid)?;
            txn.on_wire = true;
            txn.attempts += 1;
            txn.sent = now;
            self.in_flight += 1;
            self.stats.smps += 1;
            if txn.attempts > 1 {
                self.stats.retried += 1;
            } else if txn.req.method == ibmad::Method::SET {
                self.stats.sets.count(txn.req.attr);
            }
            self.deadlines
                .push_back((now + self.timeout, tid, txn.attempts));
            return Some((tid, &txn.req));
        }
        None
    }

    /// The request with this TID, if outstanding (for validating a response before
    /// completing it).
    pub fn peek(&self, tid: u32) -> Option<&Request> {
        self.txns.get(tid).map(|t| &t.req)
    }

    fn release_node(&mut self, n: NodeId) {
        let i = n.idx();
        if let Some(c) = self.node_inflight.get_mut(i) {
            *c = c.saturating_sub(1);
        }
        if let Some(next) = self.deferred.get_mut(i).and_then(VecDeque::pop_front) {
            self.queue.push_front(next);
        }
    }

    /// Retires the transaction `tid` (its response arrived at `now`); `None` for an unknown
    /// TID (a late duplicate).
    pub fn complete(&mut self, now: Time, tid: u32) -> Option<Request> {
        let txn = self.txns.remove(tid)?;
        // Karn's rule: only a request sent once gives a round-trip sample.
        self.window.on_answer(
            now,
            (txn.attempts == 1 && txn.on_wire).then_some(txn.sent),
            self.in_flight,
        );
        if txn.on_wire {
            self.in_flight = self.in_flight.saturating_sub(1);
            if let Some(n) = txn.req.node {
                self.release_node(n);
            }
        }
        Some(txn.req)
    }

    /// Handles every deadline at or before `now`: resends (ahead of the queue) or failures.
    pub fn expire(&mut self, now: Time) -> Vec<Failed> {
        let mut failed = Vec::new();
        while let Some(&(at, tid, attempt)) = self.deadlines.front() {
            if at > now {
                break;
            }
            self.deadlines.pop_front();
            let Some(txn) = self.txns.get_mut(tid) else {
                continue;
            };
            if !(txn.on_wire && txn.attempts == attempt) {
                continue;
            }
            txn.on_wire = false;
            let (node, attempts, once) = (txn.req.node, txn.attempts, txn.req.once);
            self.in_flight = self.in_flight.saturating_sub(1);
            if let Some(n) = node {
                self.release_node(n);
            }
            let per_round = self.retries + 1;
            if attempts >= per_round.saturating_mul(self.rounds) || once {
                if let Some(txn) = self.txns.remove(tid) {
                    self.stats.timed_out += 1;
                    failed.push(Failed {
                        attempts,
                        req: txn.req,
                    });
                }
            } else if attempts % per_round == 0 {
                // A round used up: try again behind everything queued now, and by directed
                // route if it went LID-routed (a LID route depends on the LFTs being right).
                if let Some(t) = self.txns.get_mut(tid) {
                    t.req.dlid = Lid::UNASSIGNED;
                }
                self.queue.push_back(tid);
            } else {
                self.queue.push_front(tid);
            }
        }
        self.prune();
        failed
    }

    /// Drops deadline entries of transactions already answered, so the front is live.
    pub fn prune(&mut self) {
        while let Some(&(_, tid, attempt)) = self.deadlines.front() {
            let live = self
                .txns
                .get(tid)
                .is_some_and(|t| t.on_wire && t.attempts == attempt);
            if live {
                break;
            }
            self.deadlines.pop_front();
        }
    }

    /// The earliest live response deadline.
    pub fn next_deadline(&self) -> Option<Time> {
        self.deadlines.front().map(|d| d.0)
    }

    /// The global window.
    pub fn window(&self) -> &WireWindow {
        &self.window
    }

    /// Takes the current phase's counters and starts new ones.
    pub fn take_stats(&mut self) -> PhaseStats {
        core::mem::take(&mut self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::DrPath;

    fn probe() -> Request {
        Request::get(
            DrPath::local(),
            SmpAttrId::NODE_INFO,
            0,
            Purpose::Probe { from: None },
        )
    }
    fn pi(n: u32) -> Request {
        Request::get(
            DrPath::local(),
            SmpAttrId::PORT_INFO,
            0,
            Purpose::PortInfo(NodeId(n), PortNum(1)),
        )
    }

    #[test]
    fn window_limits_in_flight() {
        let mut e = Engine::new(2, 8, Duration::from_millis(200), 3, 1);
        let a = e.submit(probe());
        let _b = e.submit(probe());
        let _c = e.submit(probe());
        assert!(e.next_to_send(Time(0), |_| false).is_some());
        assert!(e.next_to_send(Time(0), |_| false).is_some());
        assert!(e.next_to_send(Time(0), |_| false).is_none());
        assert_eq!(e.in_flight(), 2);
        assert!(e.complete(Time(0), a).is_some());
        assert!(
            e.complete(Time(0), a).is_none(),
            "late duplicate is unknown"
        );
        assert!(e.next_to_send(Time(0), |_| false).is_some());
        assert_eq!(e.stats.smps, 3);
    }

    #[test]
    fn deferred_requests_are_never_stranded() {
        let mut e = Engine::new(100, 2, Duration::from_millis(200), 3, 1);
        let tids: Vec<u32> = (0..7).map(|_| e.submit(pi(1))).collect();
        let mut done = 0;
        while !e.is_idle() {
            let mut sent = Vec::new();
            while let Some((t, _)) = e.next_to_send(Time(0), |_| false) {
                sent.push(t);
            }
            assert!(
                !sent.is_empty() && sent.len() <= 2,
                "stuck or over the limit"
            );
            for t in sent {
                e.complete(Time(0), t);
                done += 1;
            }
        }
        assert_eq!(done, tids.len());
    }

    #[test]
    fn per_node_limit_defers_and_keeps_order() {
        let mut e = Engine::new(100, 1, Duration::from_millis(200), 3, 1);
        let a = e.submit(pi(1));
        let b = e.submit(pi(1));
        let c = e.submit(pi(2));
        let (t, _) = e.next_to_send(Time(0), |_| false).unwrap();
        assert_eq!(t, a);
        let (t, _) = e.next_to_send(Time(0), |_| false).unwrap();
        assert_eq!(t, c, "node 1 is busy, node 2 goes ahead");
        assert!(e.next_to_send(Time(0), |_| false).is_none());
        e.complete(Time(0), a);
        let (t, _) = e.next_to_send(Time(0), |_| false).unwrap();
        assert_eq!(t, b);
    }

    #[test]
    fn timeout_resends_then_fails() {
        let mut e = Engine::new(10, 10, Duration::from_millis(200), 2, 1);
        let a = e.submit(probe());
        let mut now = Time(0);
        for attempt in 1..=3 {
            let (t, _) = e.next_to_send(now, |_| false).unwrap();
            assert_eq!(t, a, "a resend keeps its TID");
            assert_eq!(e.next_deadline(), Some(now + Duration::from_millis(200)));
            now = now + Duration::from_millis(200);
            let f = e.expire(now);
            if attempt < 3 {
                assert!(f.is_empty());
            } else {
                assert_eq!(f.len(), 1);
                assert_eq!(f[0].attempts, 3);
            }
        }
        assert!(e.is_idle());
        assert_eq!(e.stats.retried, 2);
        assert_eq!(e.stats.timed_out, 1);
    }

    #[test]
    fn a_second_round_goes_behind_the_queue() {
        let mut e = Engine::new(1, 10, Duration::from_millis(200), 1, 2);
        let a = e.submit(probe());
        let b = e.submit(probe());
        let mut now = Time(0);
        let mut order = Vec::new();
        while !e.is_idle() {
            let (t, _) = e.next_to_send(now, |_| false).unwrap();
            order.push(t);
            if t == b {
                e.complete(Time(0), b);
                continue;
            }
            now = now + Duration::from_millis(200);
            let f = e.expire(now);
            if !f.is_empty() {
                assert_eq!(f[0].attempts, 4, "2 rounds of 1 + 1 retries");
            }
        }
        // a, a (round 1), then b before a's second round, then a, a.
        assert_eq!(order, vec![a, a, b, a, a]);
    }

    #[test]
    fn answered_before_deadline_is_not_resent() {
        let mut e = Engine::new(10, 10, Duration::from_millis(200), 2, 1);
        let a = e.submit(probe());
        let _ = e.next_to_send(Time(0), |_| false).unwrap();
        e.complete(Time(0), a);
        e.prune();
        assert_eq!(e.next_deadline(), None);
        assert!(e.expire(Time(1_000_000_000)).is_empty());
        assert!(e.is_idle());
    }

    #[test]
    fn tids_wrap_past_zero_and_stay_matchable() {
        let mut e = Engine::new(10, 10, Duration::from_millis(200), 2, 1);
        e.next_tid = u32::MAX - 1;
        let a = e.submit(probe());
        let b = e.submit(probe());
        let c = e.submit(probe());
        assert_eq!((a, b, c), (u32::MAX - 1, u32::MAX, 1));
        assert!(e.peek(0).is_none());
        assert!(e.complete(Time(0), c).is_some());
        assert!(e.complete(Time(0), a).is_some());
        assert!(e.peek(b).is_some());
        assert!(e.complete(Time(0), a).is_none(), "retired TID is unknown");
        assert!(e.complete(Time(0), b).is_some());
        assert!(e.is_idle());
    }

    #[test]
    fn skip_drops_known_requests() {
        let mut e = Engine::new(10, 10, Duration::from_millis(200), 2, 1);
        e.submit(probe());
        assert!(e.next_to_send(Time(0), |_| true).is_none());
        assert!(e.is_idle());
        assert_eq!(e.stats.skipped, 1);
    }
}

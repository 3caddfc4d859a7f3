//! Channel dependency graphs (CDGs) for the engines that break credit loops: lash, dfsssp, nue
//! (and dor, which refuses tables with a loop).
//!
//! A *channel* is one usable switch-to-switch link direction — an entry of
//! [`SwitchGraph::channels`], so channel ids are indices into that slice. A *dependency*
//! `a → b` exists on a virtual lane when some route enters switch `u` on channel `a` and leaves
//! it on channel `b` on that lane: a packet holding a buffer of `a` waits for credits of `b`. A
//! cycle of dependencies on one lane is a possible credit-loop deadlock (Dally and Seitz); CA
//! links never take part, since nothing is forwarded through a CA.
//!
//! [`ChannelGraph`] numbers every possible dependency densely — switch `u`, the port `q` a
//! channel arrives on, the index `j` of the leaving channel among `u`'s channels — so an engine
//! keeps one counter array per layer (`u32` per dependency: k36 has 1.6 M possible
//! dependencies) instead of hash maps or per-pair lists. [`DynTopo`] keeps such a graph
//! acyclic while edges are added one at a time (a dynamic topological order): an edge that
//! respects the current order is accepted in O(1); otherwise an ordered search from both of
//! its ends (Haeupler, Kavitha, Mathew, Sen and Tarjan's two-way search, ACM TALG 8, 2012)
//! either meets — the edge closes a cycle — or stops as soon as the two frontiers have
//! crossed in the order, and only the channels it visited move. Removing an edge never
//! invalidates the order, so engines roll back a rejected path by removing its new edges.
//! The live edges are bitsets in two numberings (successors of a channel contiguous, and
//! predecessors), so a search step reads a word instead of a counter per possible dependency;
//! on fabrics of high-degree switches each switch's leaving and arriving channels are kept
//! sorted by their place in the order, so a search takes its next channel from a few cursors
//! instead of sorting its frontier, and the last cycle found between two switches is kept and
//! tried first, since the same few cycles block edge after edge.
//!
//! [`HubReach`] answers most of the searches that would end in a cycle before they start:
//! for up to 64 *hub* channels it keeps, per channel, which hubs reach it and which it
//! reaches over edges an engine never removes again. If `b` reaches a hub that reaches `a`,
//! `a → b` closes a cycle; two bitmask reads say so.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;

use super::graph::SwitchGraph;
use crate::FastMap;

/// "No channel" in the per-port maps.
pub const NONE: u32 = u32::MAX;

/// Dense numbering of channels and dependencies of a [`SwitchGraph`].
#[derive(Clone, Debug)]
pub struct ChannelGraph {
    /// Per switch slot: first entry of its per-port maps.
    port_base: Vec<u32>,
    /// Per switch slot: highest port number carrying a channel (0 if none).
    max_port: Vec<u8>,
    /// Channel leaving (slot, port), [`NONE`] if none.
    leave: Vec<u32>,
    /// Channel arriving at (slot, port), [`NONE`] if none.
    arrive: Vec<u32>,
    /// Per switch slot: first dependency id.
    dep_base: Vec<u32>,
    /// Per channel: the slot it leaves.
    from: Vec<u32>,
    /// Per channel: first channel id of the switch it leaves (to get the index within it).
    first: Vec<u32>,
    /// Per slot: first channel id, and (at `len`) the total.
    chan_start: Vec<u32>,
    /// Per channel: the slot it reaches and the port it arrives on.
    to: Vec<(u32, u8)>,
    /// Per channel: the port it leaves on.
    out_port: Vec<u8>,
}

impl ChannelGraph {
    /// Numbers the channels and dependencies of `g`.
    #[must_use]
    pub fn new(g: &SwitchGraph) -> ChannelGraph {
        let n = g.switch_count();
        let chans = g.channels();
        let mut max_port = vec![0u8; n];
        let mut from = Vec::with_capacity(chans.len());
        let mut first = Vec::with_capacity(chans.len());
        let mut chan_start = Vec::with_capacity(n + 1);
        for (a, mp) in max_port.iter_mut().enumerate() {
            let (s, e) = (g.first_channel(a), g.first_channel(a + 1));
            chan_start.push(s as u32);
            for edge in &chans[s..e] {
                *mp = (*mp).max(edge.port);
                from.push(a as u32);
                first.push(s as u32);
            }
        }
        chan_start.push(chans.len() as u32);
        // A channel may arrive on a port that leaves no channel (asymmetric link state): the
        // arrival maps must cover it too.
        for e in chans {
            let m = &mut max_port[e.to as usize];
            *m = (*m).max(e.remote_port);
        }
        let mut port_base = Vec::with_capacity(n + 1);
        let mut dep_base = Vec::with_capacity(n + 1);
        let (mut pb, mut db) = (0u32, 0u32);
        for a in 0..n {
            port_base.push(pb);
            dep_base.push(db);
            let deg = (chan_start[a + 1] - chan_start[a]) as usize;
            pb += u32::from(max_port[a]) + 1;
            db += u32::from(max_port[a]) * deg as u32;
        }
        port_base.push(pb);
        dep_base.push(db);
        let mut leave = vec![NONE; pb as usize];
        let mut arrive = vec![NONE; pb as usize];
        let mut to = Vec::with_capacity(chans.len());
        let out_port = chans.iter().map(|e| e.port).collect();
        for (c, e) in chans.iter().enumerate() {
            let a = from[c] as usize;
            leave[port_base[a] as usize + usize::from(e.port)] = c as u32;
            arrive[port_base[e.to as usize] as usize + usize::from(e.remote_port)] = c as u32;
            to.push((e.to, e.remote_port));
        }
        ChannelGraph {
            port_base,
            max_port,
            leave,
            arrive,
            dep_base,
            from,
            first,
            chan_start,
            to,
            out_port,
        }
    }

    /// Number of channels.
    #[inline]
    #[must_use]
    pub fn num_channels(&self) -> usize {
        self.from.len()
    }

    /// Number of possible dependencies (the length of a per-layer counter array).
    #[inline]
    #[must_use]
    pub fn num_deps(&self) -> usize {
        self.dep_base.last().map_or(0, |&x| x as usize)
    }

    /// The channel leaving slot `a` on `port`, if that port carries one.
    #[inline]
    #[must_use]
    pub fn leaving(&self, a: usize, port: u8) -> Option<u32> {
        if port > *self.max_port.get(a)? {
            return None;
        }
        let c = self.leave[self.port_base[a] as usize + usize::from(port)];
        (c != NONE).then_some(c)
    }

    /// The channel arriving at slot `a` on `port`, if any.
    #[inline]
    #[must_use]
    pub fn arriving(&self, a: usize, port: u8) -> Option<u32> {
        if port > *self.max_port.get(a)? {
            return None;
        }
        let c = self.arrive[self.port_base[a] as usize + usize::from(port)];
        (c != NONE).then_some(c)
    }

    /// The slot channel `c` leaves.
    #[inline]
    #[must_use]
    pub fn from_slot(&self, c: u32) -> usize {
        self.from[c as usize] as usize
    }

    /// The port channel `c` leaves on.
    #[inline]
    #[must_use]
    pub fn port(&self, c: u32) -> u8 {
        self.out_port[c as usize]
    }

    /// The slot channel `c` reaches and the port it arrives on.
    #[inline]
    #[must_use]
    pub fn to_slot(&self, c: u32) -> (usize, u8) {
        let (t, p) = self.to[c as usize];
        (t as usize, p)
    }

    /// The dependency "arrive on channel `a`, leave on channel `b`" (`b` must leave the
    /// switch `a` reaches; `None` otherwise).
    #[inline]
    #[must_use]
    pub fn dep(&self, a: u32, b: u32) -> Option<usize> {
        let (u, q) = self.to[a as usize];
        let u = u as usize;
        if self.from[b as usize] as usize != u || q == 0 {
            return None;
        }
        let deg = self.chan_start[u + 1] - self.chan_start[u];
        let j = b - self.first[b as usize];
        Some((self.dep_base[u] + (u32::from(q) - 1) * deg + j) as usize)
    }

    /// The channels leaving slot `u`: ids `start..end`.
    #[inline]
    #[must_use]
    pub fn leaving_range(&self, u: usize) -> (u32, u32) {
        (self.chan_start[u], self.chan_start[u + 1])
    }

    /// The transposed numbering of dependencies (per switch: leaving channel major, arrival
    /// port minor) at slot `u`: `(first, c0, stride)`, where `c0` is the first channel
    /// leaving `u`, such that the dependency into channel `c` leaving `u` from the channel
    /// arriving on port `q >= 1` is `first + (c - c0) * stride + q - 1`, the id
    /// [`ChannelGraph::tdep`] gives. A counter or state array indexed so keeps every
    /// dependency into one channel in a cache line or two, which is how Dijkstra over the
    /// dependency graph reads them.
    #[inline]
    #[must_use]
    pub fn tdeps_layout(&self, u: usize) -> (u32, u32, u32) {
        (
            self.dep_base[u],
            self.chan_start[u],
            u32::from(self.max_port[u]),
        )
    }

    /// The dependency "arrive on channel `a`, leave on channel `b`" in the transposed
    /// numbering (see [`ChannelGraph::tdeps_layout`]; `None` when `b` does not leave where `a`
    /// arrives). Ids run below [`ChannelGraph::num_deps`] as in the other numbering.
    #[inline]
    #[must_use]
    pub fn tdep(&self, a: u32, b: u32) -> Option<usize> {
        self.dep_ids(a, b).map(|(_, t)| t)
    }

    /// The dependency at slot `u` from arrival port `q` to the channel leaving on `out_port`.
    #[inline]
    #[must_use]
    pub fn dep_at(&self, u: usize, q: u8, out_port: u8) -> Option<usize> {
        let a = self.arriving(u, q)?;
        let b = self.leaving(u, out_port)?;
        self.dep(a, b)
    }

    /// The dependencies out of channel `c`: `(b0, d0, k)`, where the channel `b0 + j`
    /// (`j < k`) leaving the switch `c` reaches is entered from `c` by dependency `d0 + j`
    /// (`k` = 0 for a channel arriving on no port).
    #[inline]
    #[must_use]
    pub fn dep_row(&self, c: u32) -> (u32, usize, u32) {
        let (u, q) = self.to[c as usize];
        let u = u as usize;
        let (s, e) = (self.chan_start[u], self.chan_start[u + 1]);
        if q == 0 {
            return (s, 0, 0);
        }
        let base = self.dep_base[u] + (u32::from(q) - 1) * (e - s);
        (s, base as usize, e - s)
    }

    /// Channels `b` with a dependency `c → b` that `present` accepts.
    #[inline]
    pub fn successors<'a>(
        &'a self,
        c: u32,
        present: &'a (impl Fn(usize) -> bool + ?Sized),
    ) -> impl Iterator<Item = u32> + 'a {
        let (u, q) = self.to[c as usize];
        let u = u as usize;
        let (s, e) = (self.chan_start[u], self.chan_start[u + 1]);
        let deg = e - s;
        let base = self.dep_base[u] + u32::from(q).saturating_sub(1) * deg;
        let ok = q >= 1;
        (0..deg)
            .filter(move |&j| ok && present((base + j) as usize))
            .map(move |j| s + j)
    }

    /// Channels `a` with a dependency `a → c` that `present` accepts.
    #[inline]
    pub fn predecessors<'a>(
        &'a self,
        c: u32,
        present: &'a (impl Fn(usize) -> bool + ?Sized),
    ) -> impl Iterator<Item = u32> + 'a {
        let u = self.from[c as usize] as usize;
        let deg = self.chan_start[u + 1] - self.chan_start[u];
        let j = c - self.first[c as usize];
        let base = self.dep_base[u];
        let pb = self.port_base[u] as usize;
        (1..=self.max_port[u]).filter_map(move |q| {
            let d = (base + (u32::from(q) - 1) * deg + j) as usize;
            if !present(d) {
                return None;
            }
            let a = self.arrive[pb + usize::from(q)];
            (a != NONE).then_some(a)
        })
    }

    /// The (arriving, leaving) channels of dependency `d`, if it names two channels.
    #[must_use]
    pub fn dep_channels(&self, d: usize) -> Option<(u32, u32)> {
        let d = d as u32;
        let u = self.dep_base.partition_point(|&b| b <= d).checked_sub(1)?;
        let deg = self.chan_start[u + 1] - self.chan_start[u];
        if deg == 0 {
            return None;
        }
        let off = d - self.dep_base[u];
        let q = (off / deg + 1) as u8;
        let j = off % deg;
        let a = self.arriving(u, q)?;
        Some((a, self.chan_start[u] + j))
    }

    /// The bits of the dependencies `c → *` in the dependency-id numbering: `(first id,
    /// count, first channel)`; id `first + j` leads to channel `first channel + j`.
    #[inline]
    fn succ_run(&self, c: u32) -> (usize, usize, u32) {
        let (u, q) = self.to[c as usize];
        let u = u as usize;
        let (s, e) = (self.chan_start[u], self.chan_start[u + 1]);
        if q == 0 {
            return (0, 0, s);
        }
        let deg = e - s;
        (
            (self.dep_base[u] + (u32::from(q) - 1) * deg) as usize,
            deg as usize,
            s,
        )
    }

    /// The bits of the dependencies `* → c` in the transposed numbering (per switch: leaving
    /// index major, arrival port minor): `(first id, count, port base)`; id `first + i` comes
    /// from the channel arriving on port `i + 1`, `arrive[port base + i + 1]`.
    #[inline]
    fn pred_run(&self, c: u32) -> (usize, usize, usize) {
        let u = self.from[c as usize] as usize;
        let j = c - self.first[c as usize];
        let mp = u32::from(self.max_port[u]);
        (
            (self.dep_base[u] + j * mp) as usize,
            mp as usize,
            self.port_base[u] as usize,
        )
    }

    /// The ids of dependency `a → b` in both numberings (`b` must leave where `a` arrives).
    #[inline]
    fn dep_ids(&self, a: u32, b: u32) -> Option<(usize, usize)> {
        let d = self.dep(a, b)?;
        let u = self.from[b as usize] as usize;
        let q = u32::from(self.to[a as usize].1);
        let j = b - self.first[b as usize];
        let t = self.dep_base[u] + j * u32::from(self.max_port[u]) + (q - 1);
        Some((d, t as usize))
    }
}

/// Calls `f(i)` for every set bit `start + i` of `words` with `i < len`, in order, until `f`
/// returns false; returns whether it ran to the end.
#[inline]
fn each_bit(words: &[u64], start: usize, len: usize, mut f: impl FnMut(usize) -> bool) -> bool {
    let end = start + len;
    let mut w = start / 64;
    while w * 64 < end {
        let lo = w * 64;
        let mut bits = words[w];
        if lo < start {
            bits &= !0u64 << (start - lo);
        }
        if end < lo + 64 {
            bits &= (1u64 << (end - lo)) - 1;
        }
        while bits != 0 {
            let i = lo + bits.trailing_zeros() as usize - start;
            if !f(i) {
                return false;
            }
            bits &= bits - 1;
        }
        w += 1;
    }
    true
}

/// An acyclic dependency graph over the channels of a [`ChannelGraph`], kept in topological
/// order while edges are added (see the module docs). It holds which edges are live as two
/// bitsets — by dependency id, where a channel's successors are one contiguous run, and
/// transposed, where its predecessors are — and, on fabrics of high-degree switches, per
/// switch the channels leaving it and the channels arriving at it sorted by their place in
/// the order, so a search step reads a channel's neighbours in order, lazily, as far as the
/// search gets. Callers keep their own
/// multiplicities and tell it when an edge comes ([`DynTopo::try_add`]) and goes
/// ([`DynTopo::remove`]).
#[derive(Clone, Debug)]
pub struct DynTopo {
    /// Position label per channel: the order is the order of labels (gaps between them leave
    /// room to move channels without renumbering the rest).
    lab: Vec<u64>,
    /// The order as a doubly linked list (`NONE` at the ends).
    nxt: Vec<u32>,
    prv: Vec<u32>,
    head: u32,
    tail: u32,
    /// Per channel, how the current search reached it: one of the four stamps of
    /// [`DynTopo::reorder`] (visited or on the frontier, forward or backward), or an older
    /// stamp.
    mark: Vec<u8>,
    stamp: u8,
    /// Per switch slot, the channels leaving it by ascending label (slot `u`'s are
    /// `out_sorted[chan_start[u]..chan_start[u + 1]]`; unless `out_dirty[u]`).
    out_sorted: Vec<u32>,
    /// Per switch slot, the channels arriving at it, with their arrival port minus 1, by
    /// ascending label (`in_start[u]..in_start[u + 1]`; unless `in_dirty[u]`).
    in_sorted: Vec<(u32, u32)>,
    in_start: Vec<u32>,
    /// Per switch slot: whether a reorder moved a channel of its leaving (arriving) list since
    /// the list was last sorted. A list is sorted again only when a search reads it.
    out_dirty: Vec<bool>,
    in_dirty: Vec<bool>,
    /// Forward frontier (least label first) and backward frontier (greatest label first):
    /// one entry `(label, cursor)` per channel visited, for the next channel of its
    /// neighbourhood not yet taken ([`START`]: the start channel itself).
    fheap: BinaryHeap<Reverse<(u64, u32)>>,
    bheap: BinaryHeap<(u64, u32)>,
    /// Whether searches use the cursors above (switches of high degree, where most of an
    /// eager frontier is never taken) or queue every neighbour eagerly: as sorted runs in
    /// `fbuf` (`bbuf`), one heap entry `(label, channel, index of the next in its run)` per
    /// run, each run closed by a sentinel of channel [`NONE`].
    lazy: bool,
    efheap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    ebheap: BinaryHeap<(u64, u32, u32)>,
    fbuf: Vec<(u64, u32)>,
    bbuf: Vec<(u64, u32)>,
    fcur: Vec<Cursor>,
    bcur: Vec<Cursor>,
    /// Channels the forward search visited (ascending labels) and the backward (descending).
    fwd: Vec<u32>,
    bwd: Vec<u32>,
    /// Scratch for relabelling.
    run: Vec<u32>,
    /// With lazy frontiers (the cursors and the witnesses read them): per channel, the visited
    /// channel whose visit first marked it in the current search (forward: its predecessor on
    /// a path from the search's start; backward: its successor on a path to the start), and
    /// the live edge where the two searches met (eager searches: the channel being visited
    /// when they met, and `NONE`; no search since the last `try_add` began: both `NONE`).
    fpar: Vec<u32>,
    bpar: Vec<u32>,
    meet: (u32, u32),
    /// The last cycle found per pair of switches (the one the new edge's head leads to, the
    /// one its tail leaves): a path between them, as a range of `arena`. Edges into a
    /// switch and out of another close cycles again and again over the same few paths; while
    /// a kept path is still live it proves the next one without a search.
    witness: FastMap<u64, (u32, u32)>,
    arena: Vec<u32>,
    path: Vec<u32>,
    /// Live edges, bit = dependency id.
    succ: Vec<u64>,
    /// Live edges, bit = transposed id (see `ChannelGraph::pred_run`).
    pred: Vec<u64>,
}

/// Where one visited channel's frontier stands: its neighbours in a switch's sorted list
/// (`out_sorted` forward, ascending; `in_sorted` backward, descending), the live ones among
/// them being the edges from (into) the channel.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    /// Index in the sorted list of the neighbour the heap entry stands for.
    pos: u32,
    /// Forward: the end of the switch's list (exclusive). Backward: its start.
    end: u32,
    /// First bit of the channel's run (`succ_run` forward, `pred_run` backward).
    base: u32,
    /// Forward: the first channel id of the switch (the bit of channel `c` is
    /// `base + c - first`). Backward: unused.
    first: u32,
    /// The visited channel whose neighbours these are: the cursor yields only the
    /// channels that channel's visit put on the frontier, so no channel is queued twice.
    owner: u32,
}

/// The marks of one [`DynTopo::reorder`]: visited and on the frontier, forward and
/// backward.
#[derive(Clone, Copy, Debug)]
struct Stamps {
    fv: u8,
    ff: u8,
    bv: u8,
    bf: u8,
}

/// The heap entry of a search's start channel.
const START: u32 = u32::MAX;

/// The key of a pair of switches in [`DynTopo`]'s witness map: the switch `b` leads to and
/// the one `a` leaves.
#[inline]
fn witness_key(cg: &ChannelGraph, a: u32, b: u32) -> u64 {
    u64::from(cg.to[b as usize].0) << 32 | u64::from(cg.from[a as usize])
}

/// The average number of channels per switch from which [`DynTopo`]'s searches use lazy
/// frontiers: a fat tree's 24- or 36-port switches (a search takes a few of the dozens of
/// neighbours it reaches), not a torus's 6 links (two scans of a few neighbours cost more than
/// one eager one).
const LAZY_DEGREE: usize = 12;

/// Label spacing of a fresh order.
const LABEL_STEP: u64 = 1 << 32;

#[inline]
fn bit(words: &[u64], i: usize) -> bool {
    words[i / 64] >> (i % 64) & 1 != 0
}

impl DynTopo {
    /// An empty graph over the channels of `cg` (any order is topological for it).
    #[must_use]
    pub fn new(cg: &ChannelGraph) -> DynTopo {
        let switches = cg.chan_start.len().saturating_sub(1);
        let lazy = cg.num_channels() >= LAZY_DEGREE * switches.max(1);
        DynTopo::with_label_step(cg, LABEL_STEP, lazy)
    }

    /// [`DynTopo::new`] with labels `step` apart at first (tests use tight labels to exercise
    /// the relabelling).
    fn with_label_step(cg: &ChannelGraph, step: u64, lazy: bool) -> DynTopo {
        let n = cg.num_channels();
        let slots = cg.chan_start.len().saturating_sub(1);
        let words = cg.num_deps().div_ceil(64);
        let n32 = n as u32;
        // Labels ascend with channel ids: the lists start in id order.
        let mut in_start = vec![0u32; slots + 1];
        for &(u, q) in &cg.to {
            if q >= 1 {
                in_start[u as usize + 1] += 1;
            }
        }
        for u in 0..slots {
            in_start[u + 1] += in_start[u];
        }
        let mut fill = in_start.clone();
        let mut in_sorted = vec![(0u32, 0u32); in_start[slots] as usize];
        for (c, &(u, q)) in cg.to.iter().enumerate() {
            if q >= 1 {
                let f = &mut fill[u as usize];
                in_sorted[*f as usize] = (c as u32, u32::from(q) - 1);
                *f += 1;
            }
        }
        DynTopo {
            lab: (1..=n as u64).map(|i| i * step).collect(),
            nxt: (1..=n32).map(|i| if i == n32 { NONE } else { i }).collect(),
            prv: (0..n32).map(|i| i.checked_sub(1).unwrap_or(NONE)).collect(),
            head: if n == 0 { NONE } else { 0 },
            tail: n32.checked_sub(1).unwrap_or(NONE),
            mark: vec![0; n],
            stamp: 0,
            out_sorted: (0..n32).collect(),
            in_sorted,
            in_start,
            out_dirty: vec![false; slots],
            in_dirty: vec![false; slots],
            fheap: BinaryHeap::new(),
            bheap: BinaryHeap::new(),
            lazy,
            efheap: BinaryHeap::new(),
            ebheap: BinaryHeap::new(),
            fbuf: Vec::new(),
            bbuf: Vec::new(),
            fcur: Vec::new(),
            bcur: Vec::new(),
            fwd: Vec::new(),
            bwd: Vec::new(),
            run: Vec::new(),
            fpar: vec![NONE; n],
            bpar: vec![NONE; n],
            meet: (NONE, NONE),
            witness: FastMap::default(),
            arena: Vec::new(),
            path: Vec::new(),
            succ: vec![0; words],
            pred: vec![0; words],
        }
    }

    /// Four marks no channel holds yet (the byte-sized marks are all cleared when they run
    /// out, before any of the four is handed out).
    fn next_stamps(&mut self) -> Stamps {
        if self.stamp > u8::MAX - 4 {
            self.mark.fill(0);
            self.stamp = 0;
        }
        let s = self.stamp;
        self.stamp += 4;
        // Unit tests check the point of it: no channel or switch holds one of the four.
        #[cfg(test)]
        assert!(self.mark.iter().all(|&m| m <= s || m > s + 4));
        Stamps {
            fv: s + 1,
            ff: s + 2,
            bv: s + 3,
            bf: s + 4,
        }
    }

    /// Whether `a` comes before `b` in the current order: then `a → b` closes no cycle (an
    /// edge into `a` from anything `b` reaches would break the order).
    #[inline]
    #[must_use]
    pub fn precedes(&self, a: u32, b: u32) -> bool {
        self.lab[a as usize] < self.lab[b as usize]
    }

    /// A channel on the cycle that the last refused [`DynTopo::try_add`] found by a search;
    /// `NONE` when the last call searched nothing, found no cycle, or was answered by a kept
    /// path between the same two switches.
    #[must_use]
    pub fn cycle_hint(&self) -> u32 {
        self.meet.0
    }

    /// Calls `f(y)` for every edge `x → y` in the graph.
    pub fn each_succ(&self, cg: &ChannelGraph, x: u32, mut f: impl FnMut(u32)) {
        let (start, len, first) = cg.succ_run(x);
        each_bit(&self.succ, start, len, |j| {
            f(first + j as u32);
            true
        });
    }

    /// Calls `f(w)` for every edge `w → x` in the graph.
    pub fn each_pred(&self, cg: &ChannelGraph, x: u32, mut f: impl FnMut(u32)) {
        let (start, len, pb) = cg.pred_run(x);
        each_bit(&self.pred, start, len, |i| {
            let w = cg.arrive[pb + i + 1];
            if w != NONE {
                f(w);
            }
            true
        });
    }

    /// Whether the edge `a → b` is in the graph.
    #[must_use]
    pub fn contains(&self, cg: &ChannelGraph, a: u32, b: u32) -> bool {
        cg.dep(a, b).is_some_and(|d| bit(&self.succ, d))
    }

    /// Adds the edge `a → b` if that closes no cycle, updating the order so that it stays
    /// topological, and says whether it did (an edge already there: true). `a == b`, or a
    /// pair that is no dependency (`b` does not leave where `a` arrives), is refused.
    pub fn try_add(&mut self, cg: &ChannelGraph, a: u32, b: u32) -> bool {
        self.meet = (NONE, NONE);
        if a == b {
            return false;
        }
        let Some((d, t)) = cg.dep_ids(a, b) else {
            return false;
        };
        if bit(&self.succ, d) {
            return true;
        }
        if !self.reorder(cg, a, b) {
            return false;
        }
        self.succ[d / 64] |= 1 << (d % 64);
        self.pred[t / 64] |= 1 << (t % 64);
        true
    }

    /// Removes the edge `a → b` (nothing if absent). The order stays topological.
    pub fn remove(&mut self, cg: &ChannelGraph, a: u32, b: u32) {
        if let Some((d, t)) = cg.dep_ids(a, b) {
            self.succ[d / 64] &= !(1 << (d % 64));
            self.pred[t / 64] &= !(1 << (t % 64));
        }
    }

    /// The forward cursor's next neighbour from list index `from` on: a channel its owner's
    /// visit put on the forward frontier (mark `ff`, `fpar` the owner) and still there,
    /// labelled below `ub`. Moves the cursor there and gives its label, or `None` when there
    /// is none.
    #[inline]
    fn seek_fwd(&self, cur: &mut Cursor, from: u32, ub: u64, ff: u8) -> Option<u64> {
        for i in from..cur.end {
            let c = self.out_sorted[i as usize];
            if !bit(&self.succ, (cur.base + c - cur.first) as usize)
                || self.mark[c as usize] != ff
                || self.fpar[c as usize] != cur.owner
            {
                continue;
            }
            let l = self.lab[c as usize];
            if l >= ub {
                return None;
            }
            cur.pos = i;
            return Some(l);
        }
        None
    }

    /// The backward cursor's next neighbour below list index `from`: a channel its owner's
    /// visit put on the backward frontier and still there, labelled above `lb`.
    #[inline]
    fn seek_bwd(&self, cur: &mut Cursor, from: u32, lb: u64, bf: u8) -> Option<u64> {
        for i in (cur.end..from).rev() {
            let (c, q1) = self.in_sorted[i as usize];
            if !bit(&self.pred, (cur.base + q1) as usize)
                || self.mark[c as usize] != bf
                || self.bpar[c as usize] != cur.owner
            {
                continue;
            }
            let l = self.lab[c as usize];
            if l <= lb {
                return None;
            }
            cur.pos = i;
            return Some(l);
        }
        None
    }

    /// The least label on the forward frontier and its channel, after moving on the cursors
    /// whose channel the forward search has visited since they were queued.
    fn fwd_top(&mut self, b: u32, ub: u64, st: Stamps) -> Option<(u64, u32)> {
        loop {
            let &Reverse((l, k)) = self.fheap.peek()?;
            if k == START {
                return Some((l, b));
            }
            let c = self.out_sorted[self.fcur[k as usize].pos as usize];
            if self.mark[c as usize] != st.fv {
                return Some((l, c));
            }
            self.advance_fwd_top(ub, st);
        }
    }

    /// The greatest label on the backward frontier and its channel (see [`Self::fwd_top`]).
    fn bwd_top(&mut self, a: u32, lb: u64, st: Stamps) -> Option<(u64, u32)> {
        loop {
            let &(l, k) = self.bheap.peek()?;
            if k == START {
                return Some((l, a));
            }
            let c = self.in_sorted[self.bcur[k as usize].pos as usize].0;
            if self.mark[c as usize] != st.bv {
                return Some((l, c));
            }
            self.advance_bwd_top(lb, st);
        }
    }

    /// Moves the forward heap's top cursor to its next channel (the entry goes when there
    /// is none, or when it is the start channel's).
    fn advance_fwd_top(&mut self, ub: u64, st: Stamps) {
        let Some(&Reverse((_, k))) = self.fheap.peek() else {
            return;
        };
        let next = if k == START {
            None
        } else {
            let mut cur = self.fcur[k as usize];
            let from = cur.pos + 1;
            let next = self.seek_fwd(&mut cur, from, ub, st.ff);
            self.fcur[k as usize] = cur;
            next
        };
        if let Some(mut top) = self.fheap.peek_mut() {
            match next {
                Some(l) => *top = Reverse((l, k)),
                None => {
                    PeekMut::pop(top);
                }
            }
        }
    }

    /// [`Self::advance_fwd_top`] for the backward heap.
    fn advance_bwd_top(&mut self, lb: u64, st: Stamps) {
        let Some(&(_, k)) = self.bheap.peek() else {
            return;
        };
        let next = if k == START {
            None
        } else {
            let mut cur = self.bcur[k as usize];
            let from = cur.pos;
            let next = self.seek_bwd(&mut cur, from, lb, st.bf);
            self.bcur[k as usize] = cur;
            next
        };
        if let Some(mut top) = self.bheap.peek_mut() {
            match next {
                Some(l) => *top = (l, k),
                None => {
                    PeekMut::pop(top);
                }
            }
        }
    }

    /// Makes the order admit `a → b` unless `b` reaches `a` (then false, order unchanged).
    ///
    /// Two-way ordered search (Haeupler, Kavitha, Mathew, Sen and Tarjan, "Incremental cycle
    /// detection, topological ordering, and strong component maintenance", ACM TALG 8, 2012):
    /// forward from `b` least label first over channels ordered before `a`, backward from `a`
    /// greatest label first over channels ordered after `b`, a step of each in turn. A channel
    /// both reach closes a cycle. Otherwise the searches stop as soon as the least label left
    /// on the forward frontier exceeds the greatest left on the backward frontier: every
    /// channel still unvisited that reaches `a` then lies before every unvisited channel `b`
    /// reaches. The visited backward channels move to just after the backward frontier's
    /// greatest (or just before `b`), the visited forward channels to just before the forward
    /// frontier's least (or just after `a`), each set in its own order, and the order is
    /// topological again: a channel between those two places has no edge into a moved
    /// backward channel (it would be on the backward frontier) and no edge from a moved
    /// forward channel (it would be on the forward frontier).
    ///
    /// On fabrics of high-degree switches ([`LAZY_DEGREE`]) a visit marks every live
    /// neighbour as reached (a mark of the other search there is the meeting), but queues
    /// only one cursor into its switch's neighbours sorted by label, yielding the neighbours
    /// its visit put on the frontier as the search takes them. So a frontier is never sorted,
    /// and only the few channels the search takes from it cost a label read. The frontiers
    /// hold the same channels in the same order as queueing every neighbour would (channels
    /// beyond the window are marked but never queued; the other search never reaches them),
    /// so when `b` does not reach `a` the searches visit, stop and move the channels exactly
    /// as the eager search of low-degree fabrics does.
    ///
    /// With lazy frontiers, when the searches meet, the path they found from `b` to `a` is
    /// kept per pair of switches (the one `b` leads to, the one `a` leaves); the next check
    /// of an edge between the same two switches first tries that path, and if all its edges
    /// are still live the edge closes a cycle without a search. Either way the answer is
    /// "closes a cycle" and the order does not change. (On a torus the proofs are short and
    /// the map costs more than it saves.)
    fn reorder(&mut self, cg: &ChannelGraph, a: u32, b: u32) -> bool {
        let ub = self.lab[a as usize];
        let lb = self.lab[b as usize];
        if lb > ub {
            return true;
        }
        if self.lazy && self.witness_holds(cg, a, b) {
            return false;
        }
        let st = self.next_stamps();
        let found = if self.lazy {
            self.search_lazy(cg, a, b, st)
        } else {
            self.search_eager(cg, a, b, st)
        };
        let Some((p, q)) = found else {
            if self.lazy {
                self.keep_witness(cg, a, b);
            }
            return false;
        };
        let (fwd, bwd) = (std::mem::take(&mut self.fwd), std::mem::take(&mut self.bwd));
        for &x in fwd.iter().chain(bwd.iter()) {
            self.unlink(x);
        }
        // The backward set ascending after p, then the forward set (already ascending)
        // before q.
        let mut at = p;
        for &x in bwd.iter().rev() {
            self.link_after(at, x);
            at = x;
        }
        self.label_run(p, bwd.iter().rev().copied());
        let before_q = if q == NONE {
            self.tail
        } else {
            self.prv[q as usize]
        };
        let mut at = before_q;
        for &x in &fwd {
            self.link_after(at, x);
            at = x;
        }
        self.label_run(before_q, fwd.iter().copied());
        // Relabelling keeps the order of everything else: only the two lists holding a
        // moved channel (the leaving list of the switch it leaves, the arriving list of the
        // one it reaches) need sorting again, before a search next reads them.
        if self.lazy {
            for &x in fwd.iter().chain(bwd.iter()) {
                self.out_dirty[cg.from[x as usize] as usize] = true;
                self.in_dirty[cg.to[x as usize].0 as usize] = true;
            }
        }
        self.fwd = fwd;
        self.bwd = bwd;
        true
    }

    /// [`DynTopo::reorder`]'s search with lazy frontiers (see there).
    fn search_lazy(&mut self, cg: &ChannelGraph, a: u32, b: u32, st: Stamps) -> Option<(u32, u32)> {
        let ub = self.lab[a as usize];
        let lb = self.lab[b as usize];
        self.fheap.clear();
        self.bheap.clear();
        self.fcur.clear();
        self.bcur.clear();
        self.fwd.clear();
        self.bwd.clear();
        self.mark[b as usize] = st.ff;
        self.mark[a as usize] = st.bf;
        self.fpar[b as usize] = NONE;
        self.bpar[a as usize] = NONE;
        self.fheap.push(Reverse((lb, START)));
        self.bheap.push((ub, START));
        let mut forward = true;
        let (p, q) = loop {
            let ft = self.fwd_top(b, ub, st);
            let bt = self.bwd_top(a, lb, st);
            let (Some((fmin, fx)), Some((bmax, bx))) = (ft, bt) else {
                // Where the two sets go: after `p` (backward) and before `q` (forward).
                let p = bt.map_or(self.prv[b as usize], |t| t.1);
                let q = ft.map_or(self.nxt[a as usize], |t| t.1);
                break (p, q);
            };
            if fmin > bmax {
                break (bx, fx);
            }
            if forward {
                // Take the top; its cursor moves on.
                self.advance_fwd_top(ub, st);
                let x = fx;
                if !self.visit_fwd(cg, x, st) {
                    return None;
                }
                self.fwd.push(x);
                let (u, q) = cg.to[x as usize];
                if q >= 1 {
                    let u = u as usize;
                    let (s, e) = (cg.chan_start[u], cg.chan_start[u + 1]);
                    self.sort_out(cg, u);
                    let mut cur = Cursor {
                        pos: 0,
                        end: e,
                        base: cg.dep_base[u] + (u32::from(q) - 1) * (e - s),
                        first: s,
                        owner: x,
                    };
                    if let Some(l) = self.seek_fwd(&mut cur, s, ub, st.ff) {
                        let k = self.fcur.len() as u32;
                        self.fcur.push(cur);
                        self.fheap.push(Reverse((l, k)));
                    }
                }
            } else {
                self.advance_bwd_top(lb, st);
                let x = bx;
                if !self.visit_bwd(cg, x, st) {
                    return None;
                }
                self.bwd.push(x);
                let (base, _, _) = cg.pred_run(x);
                let u = cg.from[x as usize] as usize;
                self.sort_in(u);
                let mut cur = Cursor {
                    pos: 0,
                    end: self.in_start[u],
                    base: base as u32,
                    first: 0,
                    owner: x,
                };
                if let Some(l) = self.seek_bwd(&mut cur, self.in_start[u + 1], lb, st.bf) {
                    let k = self.bcur.len() as u32;
                    self.bcur.push(cur);
                    self.bheap.push((l, k));
                }
            }
            forward = !forward;
        };
        Some((p, q))
    }

    /// [`DynTopo::reorder`]'s search with eager frontiers: where the visited channels go
    /// (`p`, `q`), or `None` when the searches met.
    fn search_eager(
        &mut self,
        cg: &ChannelGraph,
        a: u32,
        b: u32,
        st: Stamps,
    ) -> Option<(u32, u32)> {
        let ub = self.lab[a as usize];
        let lb = self.lab[b as usize];
        let (sf, sb) = (st.fv, st.bv);
        self.efheap.clear();
        self.ebheap.clear();
        self.fbuf.clear();
        self.bbuf.clear();
        self.fwd.clear();
        self.bwd.clear();
        self.mark[b as usize] = sf;
        self.mark[a as usize] = sb;
        // The start channels as runs of one.
        self.fbuf.push((u64::MAX, NONE));
        self.bbuf.push((0, NONE));
        self.efheap.push(Reverse((lb, b, 0)));
        self.ebheap.push((ub, a, 0));
        let (lab, mark) = (&self.lab, &mut self.mark);
        let (efheap, ebheap) = (&mut self.efheap, &mut self.ebheap);
        let (fbuf, bbuf) = (&mut self.fbuf, &mut self.bbuf);
        let mut forward = true;
        while let (Some(&Reverse((fmin, _, _))), Some(&(bmax, _, _))) =
            (efheap.peek(), ebheap.peek())
        {
            if fmin > bmax {
                break;
            }
            if forward {
                // Take the top; the next of its run (if any) takes its place.
                let x = {
                    let Some(mut top) = efheap.peek_mut() else {
                        break;
                    };
                    let Reverse((_, x, i)) = *top;
                    let (nl, ny) = fbuf[i as usize];
                    if ny == NONE {
                        PeekMut::pop(top);
                    } else {
                        *top = Reverse((nl, ny, i + 1));
                    }
                    x
                };
                self.fwd.push(x);
                let (start, len, first) = cg.succ_run(x);
                let s = fbuf.len();
                let open = each_bit(&self.succ, start, len, |j| {
                    let y = first + j as u32;
                    let m = mark[y as usize];
                    if m == sb {
                        return false;
                    }
                    let l = lab[y as usize];
                    if m != sf && l < ub {
                        mark[y as usize] = sf;
                        // Insert into the run, ascending.
                        let mut k = fbuf.len();
                        fbuf.push((l, y));
                        while k > s && fbuf[k - 1].0 > l {
                            fbuf[k] = fbuf[k - 1];
                            k -= 1;
                        }
                        fbuf[k] = (l, y);
                    }
                    true
                });
                if !open {
                    // x lies on the cycle: b reaches it, and it reaches a.
                    self.meet = (x, NONE);
                    return None;
                }
                if fbuf.len() > s {
                    let (l0, y0) = fbuf[s];
                    fbuf.push((u64::MAX, NONE));
                    efheap.push(Reverse((l0, y0, s as u32 + 1)));
                }
            } else {
                // Take the top; the next of its run (if any) takes its place.
                let x = {
                    let Some(mut top) = ebheap.peek_mut() else {
                        break;
                    };
                    let (_, x, i) = *top;
                    let (nl, ny) = bbuf[i as usize];
                    if ny == NONE {
                        PeekMut::pop(top);
                    } else {
                        *top = (nl, ny, i + 1);
                    }
                    x
                };
                self.bwd.push(x);
                let (start, len, pb) = cg.pred_run(x);
                let s = bbuf.len();
                let open = each_bit(&self.pred, start, len, |i| {
                    let y = cg.arrive[pb + i + 1];
                    if y == NONE {
                        return true;
                    }
                    let m = mark[y as usize];
                    if m == sf {
                        return false;
                    }
                    let l = lab[y as usize];
                    if m != sb && l > lb {
                        mark[y as usize] = sb;
                        // Insert into the run, descending.
                        let mut k = bbuf.len();
                        bbuf.push((l, y));
                        while k > s && bbuf[k - 1].0 < l {
                            bbuf[k] = bbuf[k - 1];
                            k -= 1;
                        }
                        bbuf[k] = (l, y);
                    }
                    true
                });
                if !open {
                    // x lies on the cycle: b reaches it, and it reaches a.
                    self.meet = (x, NONE);
                    return None;
                }
                if bbuf.len() > s {
                    let (l0, y0) = bbuf[s];
                    bbuf.push((0, NONE));
                    ebheap.push((l0, y0, s as u32 + 1));
                }
            }
            forward = !forward;
        }
        // Where the two sets go: after `p` (backward) and before `q` (forward).
        let p = match self.ebheap.peek() {
            Some(&(_, x, _)) => x,
            None => self.prv[b as usize],
        };
        let q = match self.efheap.peek() {
            Some(&Reverse((_, x, _))) => x,
            None => self.nxt[a as usize],
        };
        Some((p, q))
    }

    /// Visits channel `x` forward: marks it `st.fv` and its successors not yet reached
    /// forward `st.ff`; false if one of them was reached backward (a cycle).
    fn visit_fwd(&mut self, cg: &ChannelGraph, x: u32, st: Stamps) -> bool {
        self.mark[x as usize] = st.fv;
        let (start, len, first) = cg.succ_run(x);
        let (mark, fpar) = (&mut self.mark, &mut self.fpar);
        let mut meet = NONE;
        let open = each_bit(&self.succ, start, len, |j| {
            let y = first + j as u32;
            let open = reach(mark, fpar, x, y, (st.fv, st.ff), (st.bv, st.bf));
            if !open {
                meet = y;
            }
            open
        });
        if !open {
            self.meet = (x, meet);
        }
        open
    }

    /// Visits channel `x` backward (see [`Self::visit_fwd`]).
    fn visit_bwd(&mut self, cg: &ChannelGraph, x: u32, st: Stamps) -> bool {
        self.mark[x as usize] = st.bv;
        let (start, len, pb) = cg.pred_run(x);
        let (mark, bpar) = (&mut self.mark, &mut self.bpar);
        let mut meet = NONE;
        let open = each_bit(&self.pred, start, len, |i| {
            let y = cg.arrive[pb + i + 1];
            if y == NONE {
                return true;
            }
            let open = reach(mark, bpar, x, y, (st.bv, st.bf), (st.fv, st.ff));
            if !open {
                meet = y;
            }
            open
        });
        if !open {
            self.meet = (meet, x);
        }
        open
    }

    /// After a search met on the live edge `self.meet` (from a channel the forward search
    /// reached to one the backward search reached), the path `b` … `a` through it, without
    /// its ends, as the cycle's witness for the pair of switches `b` leads to and `a` leaves.
    fn keep_witness(&mut self, cg: &ChannelGraph, a: u32, b: u32) {
        let (y, z) = self.meet;
        let limit = self.lab.len();
        self.path.clear();
        let mut x = y;
        while x != NONE && x != b && self.path.len() <= limit {
            self.path.push(x);
            x = self.fpar[x as usize];
        }
        self.path.reverse();
        let mut x = z;
        while x != NONE && x != a && self.path.len() <= limit {
            self.path.push(x);
            x = self.bpar[x as usize];
        }
        if self.path.len() > limit {
            return;
        }
        let key = witness_key(cg, a, b);
        let len = self.path.len() as u32;
        match self.witness.get_mut(&key) {
            Some(w) if w.1 >= len => {
                let at = w.0 as usize;
                self.arena[at..at + len as usize].copy_from_slice(&self.path);
                w.1 = len;
            }
            _ => {
                let at = self.arena.len() as u32;
                self.arena.extend_from_slice(&self.path);
                self.witness.insert(key, (at, len));
            }
        }
    }

    /// Whether the witness kept for the switches `b` leads to and `a` leaves is a path of
    /// live edges from `b` to `a` now.
    fn witness_holds(&self, cg: &ChannelGraph, a: u32, b: u32) -> bool {
        let Some(&(at, len)) = self.witness.get(&witness_key(cg, a, b)) else {
            return false;
        };
        let mut prev = b;
        for &m in self.arena[at as usize..(at + len) as usize]
            .iter()
            .chain(std::iter::once(&a))
        {
            match cg.dep(prev, m) {
                Some(d) if bit(&self.succ, d) => prev = m,
                _ => return false,
            }
        }
        true
    }

    /// Sorts slot `u`'s list of leaving channels by label again if a reorder moved one of
    /// them (insertion sort: only moved channels are out of place).
    fn sort_out(&mut self, cg: &ChannelGraph, u: usize) {
        if self.out_dirty[u] {
            self.out_dirty[u] = false;
            let lab = &self.lab;
            let (s, e) = (cg.chan_start[u] as usize, cg.chan_start[u + 1] as usize);
            insertion_sort_by_key(&mut self.out_sorted[s..e], |&c| lab[c as usize]);
        }
    }

    /// [`Self::sort_out`] for slot `u`'s list of arriving channels.
    fn sort_in(&mut self, u: usize) {
        if self.in_dirty[u] {
            self.in_dirty[u] = false;
            let lab = &self.lab;
            let (s, e) = (self.in_start[u] as usize, self.in_start[u + 1] as usize);
            insertion_sort_by_key(&mut self.in_sorted[s..e], |&(c, _)| lab[c as usize]);
        }
    }

    fn unlink(&mut self, x: u32) {
        let (p, n) = (self.prv[x as usize], self.nxt[x as usize]);
        if p == NONE {
            self.head = n;
        } else {
            self.nxt[p as usize] = n;
        }
        if n == NONE {
            self.tail = p;
        } else {
            self.prv[n as usize] = p;
        }
    }

    /// Links `x` in after `p` (`NONE`: at the head).
    fn link_after(&mut self, p: u32, x: u32) {
        let n = if p == NONE {
            self.head
        } else {
            self.nxt[p as usize]
        };
        self.prv[x as usize] = p;
        self.nxt[x as usize] = n;
        if p == NONE {
            self.head = x;
        } else {
            self.nxt[p as usize] = x;
        }
        if n == NONE {
            self.tail = x;
        } else {
            self.prv[n as usize] = x;
        }
    }

    /// Whether the list holds every channel once, in strictly increasing labels (tests).
    #[cfg(test)]
    fn list_ok(&self) -> bool {
        let (mut x, mut prev, mut n) = (self.head, NONE, 0usize);
        while x != NONE {
            if self.prv[x as usize] != prev
                || (prev != NONE && self.lab[prev as usize] >= self.lab[x as usize])
                || n > self.lab.len()
            {
                return false;
            }
            prev = x;
            x = self.nxt[x as usize];
            n += 1;
        }
        prev == self.tail && n == self.lab.len()
    }

    /// Label of `x`, with `NONE` as the bound `lo` before the head or `hi` after the tail.
    fn label_or(&self, x: u32, none: u64) -> u64 {
        if x == NONE {
            none
        } else {
            self.lab[x as usize]
        }
    }

    /// Gives the channels `run`, just linked in (in that order) after `p`, labels between
    /// `p`'s and the next channel's, relabelling a neighbourhood evenly when the gap is too
    /// narrow (a window grown until it is at most 1/64 full).
    fn label_run(&mut self, p: u32, run: impl ExactSizeIterator<Item = u32> + Clone) {
        let k = run.len() as u64;
        let Some(last) = run.clone().last() else {
            return;
        };
        let lo = self.label_or(p, 0);
        let hi = self.label_or(self.nxt[last as usize], u64::MAX);
        if hi - lo > k {
            let step = (hi - lo) / (k + 1);
            for (i, x) in run.enumerate() {
                self.lab[x as usize] = lo + step * (i as u64 + 1);
            }
            return;
        }
        // Grow a window [l, r] (exclusive ends) around the run until it is sparse enough.
        let (mut l, mut r) = (p, self.nxt[last as usize]);
        let mut count = k;
        let mut grow = 1u64;
        loop {
            let span = self.label_or(r, u64::MAX) - self.label_or(l, 0);
            if span / 64 > count + 1 || (l == NONE && r == NONE) {
                break;
            }
            for _ in 0..grow {
                if l != NONE {
                    l = self.prv[l as usize];
                    count += 1;
                }
                if r != NONE {
                    r = self.nxt[r as usize];
                    count += 1;
                }
            }
            grow *= 2;
        }
        // The window's interior: from after l to before r (l and r themselves keep labels;
        // NONE ends count as 0 and u64::MAX and are not channels).
        let lo = self.label_or(l, 0);
        let hi = self.label_or(r, u64::MAX);
        let mut buf = std::mem::take(&mut self.run);
        buf.clear();
        let mut x = if l == NONE {
            self.head
        } else {
            self.nxt[l as usize]
        };
        while x != r {
            buf.push(x);
            x = self.nxt[x as usize];
        }
        let step = (hi - lo) / (buf.len() as u64 + 1);
        for (i, &x) in buf.iter().enumerate() {
            self.lab[x as usize] = lo + step * (i as u64 + 1);
        }
        self.run = buf;
    }
}

/// Reachability through up to [`HubReach::MAX_HUBS`] hub channels over the *kept* edges of a
/// [`DynTopo`]: edges its engine never removes again (nue's escape paths and the routes of
/// destinations already routed). Per channel, one bit per hub says whether the hub reaches
/// it, and one whether it reaches the hub. `b` reaching a hub that reaches `a` proves that
/// `a → b` closes a cycle, in two reads, for as long as the graph lives, since kept edges
/// stay. The engine tells it of every edge it keeps ([`HubReach::kept_all`]) and picks hubs
/// as it goes ([`HubReach::add_hubs`]: nue takes channels on the cycles
/// its searches found, the few channels most cycles pass through); these calls propagate
/// over the graph's edges, so they must come when every edge of the graph is kept.
#[derive(Clone, Debug)]
pub struct HubReach {
    /// Per channel: bit `i` set when hub `i` reaches it (a hub reaches itself).
    from_hub: Vec<u64>,
    /// Per channel: bit `i` set when it reaches hub `i`. A channel with a bit in both masks
    /// is that hub: any other would lie on a cycle through it.
    to_hub: Vec<u64>,
    hubs: usize,
    work: Vec<u32>,
}

impl HubReach {
    /// The most hubs one [`HubReach`] holds (a bit each in a `u64`).
    pub const MAX_HUBS: usize = 64;

    /// No hubs yet, over the channels of `cg`.
    #[must_use]
    pub fn new(cg: &ChannelGraph) -> HubReach {
        let n = cg.num_channels();
        HubReach {
            from_hub: vec![0; n],
            to_hub: vec![0; n],
            hubs: 0,
            work: Vec::new(),
        }
    }

    /// Whether it holds [`HubReach::MAX_HUBS`] hubs.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.hubs >= HubReach::MAX_HUBS
    }

    /// Whether channel `x` reaches `a` through a hub over kept edges.
    #[inline]
    #[must_use]
    pub fn reaches(&self, x: u32, a: u32) -> bool {
        self.to_hub[x as usize] & self.from_hub[a as usize] != 0
    }

    /// Whether some hub reaches `a` over kept edges (else no [`HubReach::reaches`] into
    /// `a` can be true).
    #[inline]
    #[must_use]
    pub fn reached(&self, a: u32) -> bool {
        self.from_hub[a as usize] != 0
    }

    /// Makes the channels of `cands` hubs, in order, while there is room (skipping those
    /// that are hubs already), and returns how many of `cands` it went through: all, or up
    /// to the first one there was no room for. Marks what each new hub reaches and what
    /// reaches it over the graph's edges, which must all be kept: one new hub's reach by a
    /// search each way from it; several new hubs' in one sweep over the whole order of
    /// `topo` each way (predecessors first: the graph is acyclic), not a search per hub.
    pub fn add_hubs(&mut self, cg: &ChannelGraph, topo: &DynTopo, cands: &[u32]) -> usize {
        // How many became hubs, and the last of them.
        let (mut added, mut last) = (0, NONE);
        let mut used = 0;
        for &c in cands {
            if self.is_full() {
                break;
            }
            used += 1;
            if self.from_hub[c as usize] & self.to_hub[c as usize] == 0 {
                let bit = 1u64 << self.hubs;
                self.hubs += 1;
                self.from_hub[c as usize] |= bit;
                self.to_hub[c as usize] |= bit;
                added += 1;
                last = c;
            }
        }
        if added == 1 {
            self.work.clear();
            self.work.push(last);
            spread::<true>(&mut self.from_hub, &mut self.work, cg, topo);
            self.work.push(last);
            spread::<false>(&mut self.to_hub, &mut self.work, cg, topo);
        } else if added > 1 {
            sweep::<true>(&mut self.from_hub, cg, topo);
            sweep::<false>(&mut self.to_hub, cg, topo);
        }
        used
    }

    /// The graph now keeps the edges `x → y` of `edges`, which are in it (as are only kept
    /// edges, or edges kept before the next question): the hubs that reach `x` reach `y` and
    /// what it reaches, and `x` and what reaches it reach the hubs `y` reaches. One
    /// propagation each way from all the channels whose bits grew, so a channel several of
    /// the edges lead to is visited for the union of their bits, not once per edge.
    pub fn kept_all(&mut self, cg: &ChannelGraph, topo: &DynTopo, edges: &[(u32, u32)]) {
        // Along each edge `from → to` (reversed for `to_hub`), `to` takes `from`'s bits, and
        // starts the propagation if it gained any.
        let grow = |masks: &mut [u64], work: &mut Vec<u32>, from: u32, to: u32| {
            let (f, t) = (from as usize, to as usize);
            if masks[f] & !masks[t] != 0 {
                masks[t] |= masks[f];
                work.push(to);
            }
        };
        self.work.clear();
        for &(x, y) in edges {
            grow(&mut self.from_hub, &mut self.work, x, y);
        }
        spread::<true>(&mut self.from_hub, &mut self.work, cg, topo);
        for &(x, y) in edges {
            grow(&mut self.to_hub, &mut self.work, y, x);
        }
        spread::<false>(&mut self.to_hub, &mut self.work, cg, topo);
    }
}

/// Pushes the bits of the channels in `work` (whose bits grew) along the graph's edges
/// (`FWD`: to successors, else to predecessors) until every channel holds the bits of every
/// channel before (after) it; leaves `work` empty. The direction is a constant, not a
/// closure, so the step over a neighbour is inlined into the bit scan instead of called per
/// neighbour.
fn spread<const FWD: bool>(
    masks: &mut [u64],
    work: &mut Vec<u32>,
    cg: &ChannelGraph,
    topo: &DynTopo,
) {
    while let Some(z) = work.pop() {
        let m = masks[z as usize];
        let step = |w: u32| {
            if m & !masks[w as usize] != 0 {
                masks[w as usize] |= m;
                work.push(w);
            }
        };
        if FWD {
            topo.each_succ(cg, z, step);
        } else {
            topo.each_pred(cg, z, step);
        }
    }
}

/// Pushes every channel's bits to all it reaches (`FWD`; else to all that reach it) in one
/// pass over the order of `topo` (forward from its head, else backward from its tail): the
/// order is topological, so a channel's bits are complete when the pass gets to it.
fn sweep<const FWD: bool>(masks: &mut [u64], cg: &ChannelGraph, topo: &DynTopo) {
    let mut z = if FWD { topo.head } else { topo.tail };
    while z != NONE {
        let m = masks[z as usize];
        if m != 0 {
            let step = |w: u32| masks[w as usize] |= m;
            if FWD {
                topo.each_succ(cg, z, step);
            } else {
                topo.each_pred(cg, z, step);
            }
        }
        z = if FWD {
            topo.nxt[z as usize]
        } else {
            topo.prv[z as usize]
        };
    }
}

/// One search of [`DynTopo::reorder`] reaching channel `y` from the visited channel `x`:
/// `mine` and `theirs` are the (visited, frontier) marks of this search and of the other.
/// Puts `y` on this search's frontier with `x` as its parent unless this search reached it
/// already; false when the other search did (the two searches meet: a cycle).
#[inline]
fn reach(
    mark: &mut [u8],
    par: &mut [u32],
    x: u32,
    y: u32,
    mine: (u8, u8),
    theirs: (u8, u8),
) -> bool {
    let m = &mut mark[y as usize];
    if *m == theirs.0 || *m == theirs.1 {
        return false;
    }
    if *m != mine.0 && *m != mine.1 {
        *m = mine.1;
        par[y as usize] = x;
    }
    true
}

/// Sorts a nearly sorted slice by `key` (stable; linear when sorted).
fn insertion_sort_by_key<T: Copy>(s: &mut [T], key: impl Fn(&T) -> u64) {
    for i in 1..s.len() {
        let x = s[i];
        let k = key(&x);
        let mut j = i;
        while j > 0 && key(&s[j - 1]) > k {
            s[j] = s[j - 1];
            j -= 1;
        }
        s[j] = x;
    }
}

/// One cycle of the dependency graph `present` describes, as channels in order, if any
/// (iterative DFS).
#[must_use]
pub fn find_cycle(
    cg: &ChannelGraph,
    present: &(impl Fn(usize) -> bool + ?Sized),
) -> Option<Vec<u32>> {
    let mut color = vec![0u8; cg.num_channels()];
    find_cycle_resumable(cg, present, &mut color)
}

/// [`find_cycle`] that can be resumed: `color` (0 = unvisited, 1 = on the DFS stack,
/// 2 = finished, one per channel) persists between calls. Channels proven acyclic are left at
/// 2 and skipped next time; when a cycle is found the channels on the stack are reset to 0.
/// `None` once every channel reachable from an unfinished one is finished.
pub fn find_cycle_resumable(
    cg: &ChannelGraph,
    present: &(impl Fn(usize) -> bool + ?Sized),
    color: &mut [u8],
) -> Option<Vec<u32>> {
    let n = cg.num_channels().min(color.len());
    let mut stack: Vec<(u32, Vec<u32>, usize)> = Vec::new();
    for root in 0..n as u32 {
        if color[root as usize] != 0 {
            continue;
        }
        color[root as usize] = 1;
        stack.push((root, cg.successors(root, present).collect(), 0));
        while let Some(top) = stack.last_mut() {
            if let Some(&v) = top.1.get(top.2) {
                top.2 += 1;
                match color.get(v as usize).copied() {
                    Some(0) => {
                        color[v as usize] = 1;
                        stack.push((v, cg.successors(v, present).collect(), 0));
                    }
                    Some(1) => {
                        let pos = stack.iter().position(|e| e.0 == v).unwrap_or(0);
                        let cyc: Vec<u32> = stack[pos..].iter().map(|e| e.0).collect();
                        for e in &stack {
                            color[e.0 as usize] = 0;
                        }
                        return Some(cyc);
                    }
                    _ => {}
                }
            } else {
                color[top.0 as usize] = 2;
                stack.pop();
            }
        }
    }
    None
}

/// The channel switch `v` leaves on toward a destination, from the destination's LFT column
/// (`col[v]` = egress port; `None` at the destination, toward a CA or without a path).
#[inline]
#[must_use]
pub fn lft_next(cg: &ChannelGraph, col: &[u8], v: usize) -> Option<u32> {
    let p = *col.get(v)?;
    if p == super::NO_PATH || p == 0 {
        return None;
    }
    cg.leaving(v, p)
}

/// Destination-major copy of the LFTs: for each LID of `lids`, one entry per switch slot of
/// `g` (row `i` is `lids[i]`), so walks toward one destination read one contiguous slice.
#[must_use]
pub fn lft_columns(g: &SwitchGraph, lfts: &super::Lfts, lids: &[u16]) -> Vec<u8> {
    let n = g.switch_count();
    let mut cols = vec![super::NO_PATH; lids.len() * n];
    for (a, &sw) in g.slots().switches().iter().enumerate() {
        if let Some(row) = lfts.table(sw) {
            for (di, &l) in lids.iter().enumerate() {
                cols[di * n + a] = row.get(usize::from(l)).copied().unwrap_or(super::NO_PATH);
            }
        }
    }
    cols
}

/// The switches of an in-tree toward one destination, every switch before the switch its
/// channel leads to (so a pass in this order can add what a switch carries into its next
/// hop): `next(v)` is the channel `v` leaves on (`None` at the root, or where the tree ends).
/// Scratch buffers are the caller's; `depth` gets each switch's hop count to where its walk
/// ends. Each walk toward the root stops at a switch already placed and places the switches
/// it passed nearest first, so the order is built root side first and then reversed: no sort
/// by depth (which took half the time of nue's destinations that backtracked).
pub fn leaves_first(
    cg: &ChannelGraph,
    next: impl Fn(usize) -> Option<u32>,
    depth: &mut [u32],
    order: &mut Vec<u32>,
    path: &mut Vec<usize>,
) {
    let n = depth.len();
    depth.fill(u32::MAX);
    order.clear();
    for v0 in 0..n {
        let mut v = v0;
        path.clear();
        let base = loop {
            if depth[v] != u32::MAX {
                break depth[v];
            }
            match next(v) {
                Some(c) if path.len() <= n => {
                    path.push(v);
                    v = cg.to_slot(c).0;
                }
                _ => {
                    depth[v] = 0;
                    order.push(v as u32);
                    break 0;
                }
            }
        };
        for (k, &x) in path.iter().rev().enumerate() {
            if depth[x] == u32::MAX {
                depth[x] = base + 1 + k as u32;
                order.push(x as u32);
            }
        }
    }
    order.reverse();
}

/// Which dependencies the routes toward `lids` use when every switch is a source: what
/// [`route_dep_counts`]` > 0` says with `is_src` all 1, without walking each destination's
/// tree. A route from `v` reaches its next switch `u` and goes on as `u`'s own route, so its
/// dependencies are `v`'s channel toward the LID with `u`'s, over every switch and LID: no
/// walk, no order. Per switch, one pass over its row marks, per channel it routes on, the
/// ports the next switch leaves on; then each marked pair is one dependency.
#[must_use]
pub fn deps_from_every_switch(
    g: &SwitchGraph,
    cg: &ChannelGraph,
    lfts: &super::Lfts,
    lids: &[u16],
) -> Vec<bool> {
    let rows: Vec<&[u8]> = g
        .slots()
        .switches()
        .iter()
        .map(|&sw| lfts.table(sw).unwrap_or(&[]))
        .collect();
    let mut used = vec![false; cg.num_deps()];
    // Per port of `v`: 1 + the index of the channel leaving on it, 0 for none (the port
    // toward a CA, port 0, no path).
    let mut chan_of = [0u8; 256];
    // Per channel of `v` (after a placeholder 0 for none): the row of the switch it reaches
    // and the ports that switch leaves on toward the LIDs `v` sends over the channel.
    let mut next_rows: Vec<&[u8]> = Vec::new();
    let mut seen: Vec<[u64; 4]> = Vec::new();
    for (v, rv) in rows.iter().enumerate() {
        let (s, e) = cg.leaving_range(v);
        chan_of.fill(0);
        next_rows.clear();
        next_rows.push(&[]);
        for c in s..e {
            // At most 254 ports, so at most 254 channels.
            chan_of[usize::from(cg.port(c))] = (c - s + 1) as u8;
            next_rows.push(rows[cg.to_slot(c).0]);
        }
        seen.clear();
        seen.resize(next_rows.len(), [0; 4]);
        for &l in lids {
            let l = usize::from(l);
            let p = rv.get(l).copied().unwrap_or(super::NO_PATH);
            let k = usize::from(chan_of[usize::from(p)]);
            let q = next_rows[k].get(l).copied().unwrap_or(0);
            seen[k][usize::from(q >> 6)] |= 1 << (q & 63);
        }
        for (c, words) in (s..e).zip(&seen[1..]) {
            let u = cg.to_slot(c).0;
            for (w, &bits) in words.iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let q = (64 * w + bits.trailing_zeros() as usize) as u8;
                    bits &= bits - 1;
                    if let Some(d) = cg.leaving(u, q).and_then(|c2| cg.dep(c, c2)) {
                        used[d] = true;
                    }
                }
            }
        }
    }
    used
}

/// How many routes use each dependency: one route per (source switch, destination), sources
/// being the slots with `is_src[v] = 1`, destinations the `ndest` columns of `cols` (see
/// [`lft_columns`]). Each destination costs O(switches): the routes toward it form a tree, and
/// a dependency `v → u → w` carries as many routes as there are sources below `v`. In
/// parallel over destinations with the `parallel` feature.
#[must_use]
pub fn route_dep_counts(
    cg: &ChannelGraph,
    cols: &[u8],
    n: usize,
    ndest: usize,
    is_src: &[u32],
) -> Vec<u32> {
    let nd = cg.num_deps();
    let work = |range: std::ops::Range<usize>| -> Vec<u32> {
        let mut cnt = vec![0u32; nd];
        let mut sub = vec![0u32; n];
        let mut depth = vec![u32::MAX; n];
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut path: Vec<usize> = Vec::with_capacity(n);
        for di in range {
            let col = &cols[di * n..(di + 1) * n];
            leaves_first(
                cg,
                |v| lft_next(cg, col, v),
                &mut depth,
                &mut order,
                &mut path,
            );
            sub.copy_from_slice(is_src);
            for &v in &order {
                let v = v as usize;
                let Some(c) = lft_next(cg, col, v) else {
                    continue;
                };
                let u = cg.to_slot(c).0;
                if sub[v] > 0 {
                    if let Some(c2) = lft_next(cg, col, u) {
                        if let Some(d) = cg.dep(c, c2) {
                            cnt[d] += sub[v];
                        }
                    }
                }
                sub[u] += sub[v];
            }
        }
        cnt
    };
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        let parts = rayon::current_num_threads().max(1);
        let chunk = ndest.div_ceil(parts).max(1);
        (0..ndest)
            .step_by(chunk)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|s| work(s..(s + chunk).min(ndest)))
            .reduce(
                || vec![0u32; nd],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            )
    }
    #[cfg(not(feature = "parallel"))]
    work(0..ndest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::graph::SwitchGraph;
    use crate::subnet::{Node, NodeId, Subnet};
    use ibmad::{Guid, NodeType, PortNum};

    /// A ring of `n` switches: port 1 → next switch's port 2.
    fn ring(n: u64) -> Subnet {
        let mut s = Subnet::new();
        let ids: Vec<NodeId> = (0..n)
            .map(|i| s.add_active_node(Node::new(Guid(0x100 + i), NodeType::SWITCH, 4, "")))
            .collect();
        for i in 0..n as usize {
            s.connect_active(
                (ids[i], PortNum(1)),
                (ids[(i + 1) % n as usize], PortNum(2)),
            );
        }
        s
    }

    #[test]
    fn numbering_round_trips() {
        let s = ring(4);
        let g = SwitchGraph::build(&s);
        let cg = ChannelGraph::new(&g);
        assert_eq!(cg.num_channels(), 8);
        for a in 0..4 {
            let out = cg.leaving(a, 1).unwrap();
            let (b, q) = cg.to_slot(out);
            assert_eq!((b, q), ((a + 1) % 4, 2));
            assert_eq!(cg.arriving(b, 2), Some(out));
            let next = cg.leaving(b, 1).unwrap();
            let d = cg.dep(out, next).unwrap();
            assert_eq!(cg.dep_channels(d), Some((out, next)));
            assert_eq!(cg.dep_at(b, 2, 1), Some(d));
            assert!(
                cg.dep(out, out).is_none(),
                "a channel does not leave where it arrives"
            );
        }
        assert!(cg.leaving(0, 3).is_none());
        // The per-switch layout gives every dependency's transposed id.
        for b in 0..cg.num_channels() as u32 {
            let u = cg.from_slot(b);
            let (first, c0, stride) = cg.tdeps_layout(u);
            assert_eq!((first + (b - c0) * stride) as usize, cg.pred_run(b).0);
            for q in 1..=cg.max_port[u] {
                if let Some(a) = cg.arriving(u, q) {
                    assert_eq!(
                        cg.tdep(a, b),
                        Some((first + (b - c0) * stride + u32::from(q) - 1) as usize)
                    );
                }
            }
        }
    }

    /// `leaves_first` places every switch of an in-tree once, each before its next hop: on a
    /// ring of 9 toward switch 0, switches 1-4 go one way round and 5-8 the other.
    #[test]
    fn leaves_first_places_each_switch_before_its_next_hop() {
        let s = ring(9);
        let g = SwitchGraph::build(&s);
        let cg = ChannelGraph::new(&g);
        let next = |v: usize| match v {
            0 => None,
            1..=4 => cg.leaving(v, 2),
            _ => cg.leaving(v, 1),
        };
        let (mut depth, mut order, mut path) = (vec![0; 9], Vec::new(), Vec::new());
        leaves_first(&cg, next, &mut depth, &mut order, &mut path);
        let mut pos = [usize::MAX; 9];
        for (i, &v) in order.iter().enumerate() {
            assert_eq!(pos[v as usize], usize::MAX, "switch {v} placed twice");
            pos[v as usize] = i;
        }
        assert!(
            pos.iter().all(|&p| p != usize::MAX),
            "every switch placed: {order:?}"
        );
        for v in 1..9 {
            let c = next(v).expect("a channel");
            let u = cg.to_slot(c).0;
            assert!(
                pos[v] < pos[u],
                "switch {v} after its next hop {u}: {order:?}"
            );
        }
        assert_eq!((depth[4], depth[5], depth[0]), (4, 4, 0));
    }

    #[test]
    fn ring_closes_a_cycle_and_dyntopo_refuses_it() {
        let s = ring(5);
        let g = SwitchGraph::build(&s);
        let cg = ChannelGraph::new(&g);
        let mut count = vec![0u32; cg.num_deps()];
        let mut topo = DynTopo::new(&cg);
        let chans: Vec<u32> = (0..5).map(|a| cg.leaving(a, 1).unwrap()).collect();
        // Clockwise dependencies 0→1→2→3→4 are fine; 4→0 closes the ring.
        for i in 0..5 {
            let (a, b) = (chans[i], chans[(i + 1) % 5]);
            let d = cg.dep(a, b).unwrap();
            let ok = topo.try_add(&cg, a, b);
            assert_eq!(ok, i < 4, "edge {i}");
            assert_eq!(topo.contains(&cg, a, b), ok);
            if ok {
                count[d] += 1;
            }
        }
        assert!(find_cycle(&cg, &|x: usize| count[x] > 0).is_none());
        // Without 1→2 the ring is open again.
        topo.remove(&cg, chans[1], chans[2]);
        assert!(!topo.contains(&cg, chans[1], chans[2]));
        assert!(topo.try_add(&cg, chans[4], chans[0]));
        assert!(!topo.try_add(&cg, chans[1], chans[2]));
        let d = cg.dep(chans[4], chans[0]).unwrap();
        count[d] += 1;
        let cyc = find_cycle(&cg, &|x: usize| count[x] > 0).unwrap();
        assert_eq!(cyc.len(), 5);
    }

    #[test]
    fn each_bit_reads_runs_across_words() {
        let mut w = vec![0u64; 4];
        let set = [3usize, 63, 64, 65, 127, 128, 200];
        for &b in &set {
            w[b / 64] |= 1 << (b % 64);
        }
        for start in [0usize, 3, 4, 60, 63, 64, 100, 127] {
            for len in [0usize, 1, 2, 5, 64, 65, 129] {
                if start + len > 256 {
                    continue;
                }
                let mut got = Vec::new();
                assert!(each_bit(&w, start, len, |i| {
                    got.push(start + i);
                    true
                }));
                let want: Vec<usize> = set
                    .iter()
                    .copied()
                    .filter(|&b| b >= start && b < start + len)
                    .collect();
                assert_eq!(got, want, "start {start} len {len}");
            }
        }
        let mut n = 0;
        assert!(!each_bit(&w, 0, 256, |_| {
            n += 1;
            n < 3
        }));
        assert_eq!(n, 3);
    }

    /// A 4×4×4 torus of switches: switch (x, y, z) has port 2d + 1 to the next one along
    /// dimension d, and port 2d + 2 from it.
    fn torus4() -> Subnet {
        let k = 4usize;
        let mut s = Subnet::new();
        let ids: Vec<NodeId> = (0..k * k * k)
            .map(|i| s.add_active_node(Node::new(Guid(0x100 + i as u64), NodeType::SWITCH, 6, "")))
            .collect();
        for i in 0..k * k * k {
            for (d, stride) in [1, k, k * k].into_iter().enumerate() {
                let c = i / stride % k;
                let j = i - c * stride + (c + 1) % k * stride;
                let d = d as u8;
                s.connect_active((ids[i], PortNum(2 * d + 1)), (ids[j], PortNum(2 * d + 2)));
            }
        }
        s
    }

    /// Advances the xorshift state `x` and picks a dependency id with it: the id and its
    /// channels (`None` for an id no pair of channels has).
    fn random_dep(cg: &ChannelGraph, x: &mut u64) -> (usize, Option<(u32, u32)>) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        let d = (*x % cg.num_deps() as u64) as usize;
        (d, cg.dep_channels(d))
    }

    /// The channels each channel reaches over the kept edges `kept` (itself included).
    fn kept_reach(cg: &ChannelGraph, kept: &[bool], from: u32, forward: bool) -> Vec<bool> {
        let mut seen = vec![false; cg.num_channels()];
        seen[from as usize] = true;
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            for (d, _) in kept.iter().enumerate().filter(|(_, &k)| k) {
                let Some((a, b)) = cg.dep_channels(d) else {
                    continue;
                };
                let (p, q) = if forward { (a, b) } else { (b, a) };
                if p == x && !seen[q as usize] {
                    seen[q as usize] = true;
                    stack.push(q);
                }
            }
        }
        seen
    }

    /// HubReach's bits are exactly what each hub reaches, and what reaches it, over the kept
    /// edges, while rounds of edges are tried (as one destination's routes are) and then
    /// either kept or dropped, and hubs are taken from the cycles the searches found.
    #[test]
    fn hub_reach_matches_kept_reachability() {
        let s = torus4();
        let g = SwitchGraph::build(&s);
        let cg = ChannelGraph::new(&g);
        let mut topo = DynTopo::new(&cg);
        let mut hubs = HubReach::new(&cg);
        let mut kept = vec![false; cg.num_deps()];
        let mut order: Vec<u32> = Vec::new();
        let (mut tried, mut cands) = (Vec::new(), Vec::new());
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let (mut checks, mut swept, mut batched) = (0, 0, 0);
        for round in 0..300 {
            for _ in 0..12 {
                let (d, ab) = random_dep(&cg, &mut x);
                let Some((a, b)) = ab else {
                    continue;
                };
                if topo.contains(&cg, a, b) {
                    continue;
                }
                if topo.try_add(&cg, a, b) {
                    tried.push((d, a, b));
                } else if topo.cycle_hint() != NONE {
                    cands.push(topo.cycle_hint());
                }
            }
            // Kept one edge at a time, or (every fourth round) all at once.
            let mut batch = Vec::new();
            for (d, a, b) in tried.drain(..) {
                if round % 3 == 0 {
                    topo.remove(&cg, a, b);
                } else {
                    kept[d] = true;
                    if round % 4 == 1 {
                        batch.push((a, b));
                    } else {
                        hubs.kept_all(&cg, &topo, &[(a, b)]);
                    }
                }
            }
            batched += usize::from(batch.len() >= 2);
            hubs.kept_all(&cg, &topo, &batch);
            // Alternately one at a time, and all at once (a sweep when two or more are new).
            for &c in &cands {
                if order.len() < HubReach::MAX_HUBS && !order.contains(&c) {
                    order.push(c);
                }
                if round % 2 == 0 {
                    hubs.add_hubs(&cg, &topo, &[c]);
                }
            }
            if round % 2 == 1 {
                let used = hubs.add_hubs(&cg, &topo, &cands);
                assert!(used == cands.len() || hubs.is_full());
                swept += usize::from(cands.len() >= 2 && !hubs.is_full());
            }
            cands.clear();
            if round % 50 == 49 {
                for (i, &h) in order.iter().enumerate() {
                    let fwd = kept_reach(&cg, &kept, h, true);
                    let bwd = kept_reach(&cg, &kept, h, false);
                    for c in 0..cg.num_channels() {
                        assert_eq!(
                            hubs.from_hub[c] >> i & 1 == 1,
                            fwd[c],
                            "hub {h} reaches {c}"
                        );
                        assert_eq!(hubs.to_hub[c] >> i & 1 == 1, bwd[c], "{c} reaches hub {h}");
                    }
                    checks += 1;
                }
            }
        }
        assert!(
            order.len() >= 8 && checks > 40 && swept > 0 && batched > 20,
            "{} hubs, {checks} checks, {swept} sweeps, {batched} batches of kept edges",
            order.len()
        );
        // A proof it gives is a cycle the search finds too.
        let mut proofs = 0;
        for d in 0..cg.num_deps() {
            let Some((a, b)) = cg.dep_channels(d) else {
                continue;
            };
            if !topo.contains(&cg, a, b) && hubs.reaches(b, a) {
                proofs += 1;
                assert!(!topo.try_add(&cg, a, b), "{a} -> {b} closes a cycle");
            }
        }
        assert!(proofs > 0);
    }

    /// Thousands of adds and removes on a 4×4×4 torus, with either kind of frontier (far more reorders than the
    /// byte-sized search marks have values, so they are cleared and reused many times, and
    /// enough channels that a search's marks outlive many later searches): DynTopo accepts
    /// an edge exactly when it closes no cycle, every time.
    #[test]
    fn dyntopo_stays_exact_over_many_reorders() {
        let s = torus4();
        let g = SwitchGraph::build(&s);
        let cg = ChannelGraph::new(&g);
        for lazy in [false, true] {
            let mut count = vec![0u32; cg.num_deps()];
            let mut topo = DynTopo::with_label_step(&cg, LABEL_STEP, lazy);
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let (mut added, mut refused, mut slow) = (0, 0, 0);
            for _ in 0..20_000 {
                let (d, ab) = random_dep(&cg, &mut x);
                let Some((a, b)) = ab else {
                    continue;
                };
                if count[d] > 0 {
                    if x >> 40 & 3 == 0 {
                        topo.remove(&cg, a, b);
                        count[d] = 0;
                    }
                    continue;
                }
                if topo.lab[b as usize] < topo.lab[a as usize] {
                    slow += 1;
                }
                let ok = topo.try_add(&cg, a, b);
                count[d] = 1;
                let cyclic = find_cycle(&cg, &|y: usize| count[y] > 0).is_some();
                assert_eq!(ok, !cyclic, "edge {a} -> {b}");
                if ok {
                    added += 1;
                } else {
                    count[d] = 0;
                    refused += 1;
                }
            }
            assert!(topo.list_ok());
            assert!(
                slow > 64 * 20 && added > 500 && refused > 500,
                "lazy {lazy}: {slow} searches, {added} added, {refused} refused"
            );
        }
    }

    proptest::proptest! {
        /// DynTopo accepts an edge exactly when it closes no cycle, and its order stays a
        /// topological order of the edges present, as edges come and go.
        #[test]
        fn dyntopo_matches_cycle_search(edges in proptest::collection::vec((0u32..12, 0u32..4, 0u8..4), 1..120), tight in proptest::bool::ANY, lazy in proptest::bool::ANY) {
            // Complete-ish graph: 4 switches all linked; channels from the switch graph.
            let mut s = Subnet::new();
            let ids: Vec<NodeId> = (0..4)
                .map(|i| s.add_active_node(Node::new(Guid(0x100 + i), NodeType::SWITCH, 8, "")))
                .collect();
            let mut port = [1u8; 4];
            for a in 0..4 {
                for b in a + 1..4 {
                    s.connect_active((ids[a], PortNum(port[a])), (ids[b], PortNum(port[b])));
                    port[a] += 1;
                    port[b] += 1;
                }
            }
            let g = SwitchGraph::build(&s);
            let cg = ChannelGraph::new(&g);
            let mut count = vec![0u32; cg.num_deps()];
            // Labels 1 apart: nearly every reorder relabels.
            let mut topo = DynTopo::with_label_step(&cg, if tight { 1 } else { LABEL_STEP }, lazy);
            for (a, k, op) in edges {
                let a = a % cg.num_channels() as u32;
                let (u, _) = cg.to_slot(a);
                let outs: Vec<u32> = (g.first_channel(u) as u32..g.first_channel(u + 1) as u32).collect();
                let b = outs[k as usize % outs.len()];
                let Some(d) = cg.dep(a, b) else {
                    proptest::prop_assert!(!topo.try_add(&cg, a, b));
                    continue;
                };
                if count[d] > 0 {
                    if op == 0 {
                        topo.remove(&cg, a, b);
                        count[d] = 0;
                        proptest::prop_assert!(!topo.contains(&cg, a, b));
                    }
                    continue;
                }
                let ok = topo.try_add(&cg, a, b);
                proptest::prop_assert_eq!(topo.contains(&cg, a, b), ok);
                count[d] += 1;
                proptest::prop_assert!(topo.list_ok());
                let cyclic = find_cycle(&cg, &|x: usize| count[x] > 0).is_some();
                proptest::prop_assert_eq!(ok, !cyclic);
                if !ok {
                    count[d] -= 1;
                }
                for (dd, &k) in count.iter().enumerate().take(cg.num_deps()) {
                    if let Some((x, y)) = cg.dep_channels(dd) {
                        proptest::prop_assert_eq!(topo.contains(&cg, x, y), k > 0);
                        if k > 0 {
                            proptest::prop_assert!(topo.lab[x as usize] < topo.lab[y as usize]);
                        }
                    }
                }
            }
        }
    }
}

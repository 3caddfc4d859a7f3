//! Nue: routing on the channel dependency graph (OpenSM `nue`, `osm_ucast_nue.c`; Domke,
//! Hoefler and Matsuoka, HPDC 2016): deadlock-free on any topology within any VL budget,
//! one VL included.
//!
//! # Layers and escape paths
//! The destination LIDs (CA LIDs; with `nue_include_switches` switch LIDs too), in LID order,
//! are dealt round-robin onto `k` virtual layers — `nue_max_num_vls` (default 1; 0 means
//! every VL the switch ports allow), at most the ports' data VLs, and 1 when `qos` is off
//! (OpenSM's WRN NUE48). OpenSM can partition with METIS instead; without METIS it deals
//! round-robin as here. Each layer has its own channel dependency graph, kept acyclic. It
//! starts with the *escape paths*: a breadth-first spanning tree rooted at the switch closest
//! to the layer's destination switches (OpenSM uses betweenness centrality), whose every
//! up-up, down-down and turning dependency is marked as used. Routes along that tree are
//! deadlock-free together with anything added later, because everything added later is
//! checked against them.
//!
//! # Paths
//! For each destination, Dijkstra runs outward from its switch over switches, where reaching
//! switch `v` through channel `v → u` also uses the dependency from that channel to `u`'s
//! already chosen next channel: the dependency must already be used in this layer, or adding
//! it must keep the layer acyclic ([`super::cdg::DynTopo`]); otherwise it is blocked for
//! the rest of the layer. Most such refusals need no search: a few *hub* channels, taken
//! from the cycles earlier searches found (64; 64 more where those prove fewer cycles than
//! the searches go on finding, as on a 3D torus), know what they reach and what reaches them
//! over the dependencies the layer keeps for good ([`super::cdg::HubReach`]), so a dependency
//! `a → b` whose `b` — or a channel on the destination's route from `b` — reaches a hub
//! that reaches `a` is refused after a few bit tests. The answers, and so the tables, are
//! the search's. Distance is fewest hops, then least summed load (OpenSM: weights
//! `D²` + load, `D` destination LIDs). A dependency a switch held while it had a worse
//! candidate is released when the candidate is replaced. If some switch cannot be reached
//! at all (an impasse), OpenSM's local backtracking step is tried first: a reached neighbour
//! of an unreached switch moves its route onto another link whose dependencies are already
//! in use, if every switch routed through it can follow, and the unreached switch is reached
//! through it; the Dijkstra then goes on from there, leaving the switches reached before the
//! step as they are (OpenSM also looks for shortcuts to them; we do not). When no step helps,
//! the destination falls back to the escape tree for every switch and its tentative
//! dependencies are released. After
//! each destination, the links of its paths carry the LIDs behind the switches using them, as
//! in dfsssp. Nue therefore may route around (detour); it promises deadlock freedom, not
//! shortest paths.
//!
//! The path SL of a destination is its layer (Nue's SL depends on the destination only); SL
//! to VL is left to the QoS configuration, which should map SL *i* to VL *i*. Switch LIDs
//! that are not destinations get min-hop balanced routes and SL 0, as OpenSM does.
//!
//! Multicast groups' trees are grown by Dijkstra over the loads the routing left
//! ([`crate::mcast::ChannelLoads`]: `D²` plus the LIDs routed over each channel), as OpenSM's
//! `nue_do_mcast_routing` does; like OpenSM's, they are not made deadlock-free against the
//! unicast routes.

// Loop indices here are node, switch or channel ids that index several parallel arrays at
// once (CSR offsets, ranks, parents); an iterator over one of them would hide that.
#![allow(clippy::needless_range_loop)]

use ibmad::Lid;

use super::cdg::{leaves_first, ChannelGraph, DynTopo, HubReach, NONE};
use super::dfsssp::{DestLid, Endpoints};
use super::graph::{HopMatrix, SwitchGraph, UNREACHABLE};
use super::vl::PathSls;
use super::{max_lid, EngineOptions, Lfts, RouteError, Routes, RoutingEngine, NO_PATH};
use crate::mcast::ChannelLoads;
use crate::subnet::Subnet;

/// The nue engine.
#[derive(Clone, Debug, Default)]
pub struct Nue {
    opts: EngineOptions,
    /// Runs the Dijkstra without its shortcuts (tests; see [`Nue::plain`]).
    plain: bool,
}

impl Nue {
    /// With options (`nue_max_num_vls`, `nue_include_switches`, `qos`, `max_op_vls`).
    #[must_use]
    pub fn new(opts: EngineOptions) -> Nue {
        Nue { opts, plain: false }
    }

    /// Without the Dijkstra's shortcuts: every entry relaxed in a plain loop (no masks of
    /// improving and unblocked entries), the last level and the nearly last ones (few
    /// switches left unreached) sorted and relaxed whole like the others,
    /// every cycle found by a search (no hubs), every settled switch's dependency kept (not
    /// only the new ones), and after backtracking the balance's order found by walking the
    /// routes (not kept up in the settling order). The same tables, slower; the tests
    /// compare the two.
    #[doc(hidden)]
    #[must_use]
    pub fn plain(mut self) -> Nue {
        self.plain = true;
        self
    }
}

const HOP: u64 = 1 << 40;
/// Bits of a switch slot in the Dijkstra's sort keys (with HOP's 40 bits, 64).
const SLOT_BITS: u32 = 24;
/// The slot's bits of a sort key.
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;

/// A level is nearly the last when at most 1/FEW_LEFT as many switches as it holds are left
/// unreached.
const FEW_LEFT: usize = 4;

/// Cycles the searches of a [`Layer`] must find after its first 64 hubs are taken (and more
/// than the hubs proved in the meantime) before it makes a second set.
const MORE_HUBS_AFTER: u32 = 64;

/// A dependency's state in a [`Layer`] (two bits): not in the layer's graph, or there only
/// for the route to the destination being routed (which may still release it).
const FREE: u64 = 0;
/// On an escape path, or on a route to an earlier destination of the layer: in the layer's
/// graph for good.
const KEPT: u64 = 1;
/// Would close a cycle in the layer: never used in it.
const BLOCKED: u64 = 2;

/// One layer's dependency graph.
///
/// Only the destination being routed can drop a dependency: a switch's route to it holds at
/// most one dependency out of its channel `v → u` (the one into `u`'s next channel), and
/// trades it for another while the destination's Dijkstra finds it a better candidate.
/// Routes to earlier destinations are final. So instead of counting routes per dependency,
/// two bits say whether it is kept for good, and a dependency that is not is held by at most
/// one switch (the one its first channel leaves); releasing it removes it from the graph.
/// Two bits per possible dependency keep the array small enough to stay in cache with the
/// Dijkstra's (k36: 2.1 M dependencies in 525 KiB; 16-bit route counts took 4.2 MiB).
///
/// Most dependencies the Dijkstra asks for that would close a cycle are refused without a
/// search ([`Layer::add_dep`]): through hub channels over kept dependencies
/// ([`HubReach`]), or along the destination's own routes into such a path.
struct Layer<'a> {
    /// Per dependency in the transposed numbering ([`ChannelGraph::tdep`]), two bits:
    /// [`FREE`], [`KEPT`] or [`BLOCKED`].
    state: Vec<u64>,
    topo: DynTopo,
    hubs: HubReach,
    /// A second set of 64 hubs, made once the first is full if searches still find more
    /// cycles than the hubs prove (a torus: rings in every row of every dimension, each
    /// wanting a hub of its own), so fabrics whose first hubs suffice do not pay for it. (Two
    /// sets beat one of 128-bit words, made so from the start or widened then: each set's
    /// propagation stops where its own bits do.)
    more: Option<HubReach>,
    /// Since the first set filled (until the second is made): cycles found by a search, and
    /// cycles proved through the hubs.
    searched: u32,
    proved: u32,
    /// Channels on cycles searches found since the last destination ended: the next hubs.
    hub_cands: Vec<u32>,
    /// Edges kept for good since the last destination ended, not yet told to the hubs.
    new_kept: Vec<(u32, u32)>,
    /// Whether cycles are proved through hubs at all (not in [`Nue::plain`]).
    proofs: bool,
    /// Where every switch has at most 64 neighbour entries (else empty): per channel `b`, a
    /// bit per neighbour entry of the switch it leaves (in `nb` order) whose dependency into
    /// `b` is not blocked, so the Dijkstra skips the blocked ones.
    open: Vec<u64>,
    /// Per channel `a`: its entry's bit in the list of the switch it reaches (with `open`;
    /// the same for every layer).
    ebit: &'a [u64],
}

impl<'a> Layer<'a> {
    fn new(cg: &ChannelGraph, open: &[u64], ebit: &'a [u64], proofs: bool) -> Layer<'a> {
        Layer {
            state: vec![0; cg.num_deps().div_ceil(32)],
            topo: DynTopo::new(cg),
            hubs: HubReach::new(cg),
            more: None,
            searched: 0,
            proved: 0,
            hub_cands: Vec::new(),
            new_kept: Vec::new(),
            proofs,
            open: open.to_vec(),
            ebit,
        }
    }

    #[inline]
    fn get(&self, t: usize) -> u64 {
        self.state[t / 32] >> (2 * (t % 32)) & 3
    }

    #[inline]
    fn set(&mut self, t: usize, st: u64) {
        let w = &mut self.state[t / 32];
        let sh = 2 * (t % 32);
        *w = *w & !(3 << sh) | st << sh;
    }

    /// Uses dependency a → b (transposed id `t`) for the destination being routed if the
    /// layer stays acyclic. (No other switch holds a [`FREE`] one: only the switch `a`
    /// leaves could, and it asks once per candidate.) `next` holds the destination's routes
    /// so far; `b` is the next channel of a settled switch.
    #[inline(always)]
    fn use_dep(&mut self, cg: &ChannelGraph, t: usize, a: u32, b: u32, next: &[u32]) -> bool {
        match self.get(t) {
            KEPT => true,
            BLOCKED => false,
            _ => self.add_dep(cg, t, a, b, next),
        }
    }

    /// [`Layer::use_dep`] for a dependency not in the graph. Unless the order admits it
    /// outright, two cheap proofs of a cycle come before the search: `b` reaches `a`
    /// through a hub, or a channel on the destination's route from `b` does (the route's
    /// dependencies are in the graph while it is being routed; each is checked all the same).
    /// Either is a path from `b` to `a`, so the answer is the search's. A search that finds a
    /// cycle offers a channel on it as a hub.
    #[inline(never)]
    fn add_dep(&mut self, cg: &ChannelGraph, t: usize, a: u32, b: u32, next: &[u32]) -> bool {
        let more = self.more.as_ref();
        if self.proofs
            && !self.topo.precedes(a, b)
            && (self.hubs.reached(a) || more.is_some_and(|m| m.reached(a)))
        {
            let mut x = b;
            // At most one step per switch: a route visits each once.
            for _ in 0..=next.len() {
                if self.hubs.reaches(x, a) || more.is_some_and(|m| m.reaches(x, a)) {
                    self.proved += 1;
                    self.block(t, a, b);
                    return false;
                }
                let y = next[cg.to_slot(x).0];
                if y == NONE || !self.topo.contains(cg, x, y) {
                    break;
                }
                x = y;
            }
        }
        if self.topo.try_add(cg, a, b) {
            return true;
        }
        self.searched += 1;
        let h = self.topo.cycle_hint();
        if self.proofs
            && h != NONE
            && !self.hubs_full()
            && self.hub_cands.len() < HubReach::MAX_HUBS
        {
            self.hub_cands.push(h);
        }
        self.block(t, a, b);
        false
    }

    /// Blocks the dependency a → b (transposed id `t`) for the rest of the layer.
    fn block(&mut self, t: usize, a: u32, b: u32) {
        self.set(t, BLOCKED);
        if let (Some(m), Some(&e)) = (self.open.get_mut(b as usize), self.ebit.get(a as usize)) {
            *m &= !e;
        }
    }

    /// Keeps the dependency a → b (transposed id `t`) the routed destination's routes hold,
    /// and notes it for the hubs when it is new to the graph's kept edges. Called once the
    /// destination is routed, for all its dependencies in turn; [`Layer::after_destination`] then
    /// tells the hubs all of them at once (every edge their update walks over is kept).
    fn kept(&mut self, t: usize, a: u32, b: u32) {
        if self.get(t) == FREE {
            self.set(t, KEPT);
            self.new_kept.push((a, b));
        }
    }

    /// Whether no set of hubs has room for another (a second set may still be made).
    fn hubs_full(&self) -> bool {
        self.hubs.is_full() && self.more.as_ref().is_none_or(HubReach::is_full)
    }

    /// After a destination (every dependency in the graph kept): the hubs learn the newly
    /// kept edges, then the cycles its searches found offer their channels as hubs, to the
    /// first set while it has room, then to the second. The second set is made once the
    /// first is full and searches have since found [`MORE_HUBS_AFTER`] cycles, and more than
    /// the hubs proved.
    fn after_destination(&mut self, cg: &ChannelGraph) {
        self.hubs.kept_all(cg, &self.topo, &self.new_kept);
        if let Some(m) = &mut self.more {
            m.kept_all(cg, &self.topo, &self.new_kept);
        }
        self.new_kept.clear();
        let used = self.hubs.add_hubs(cg, &self.topo, &self.hub_cands);
        if let Some(m) = &mut self.more {
            m.add_hubs(cg, &self.topo, &self.hub_cands[used..]);
        }
        self.hub_cands.clear();
        if !self.hubs.is_full() {
            self.searched = 0;
            self.proved = 0;
        } else if self.more.is_none() && self.searched > self.proved.max(MORE_HUBS_AFTER) {
            self.more = Some(HubReach::new(cg));
        }
    }

    /// Drops the dependency (transposed id `t`) switch `v`'s route holds: from its channel
    /// `next[v]` to its candidate, which was settled, into that one's next channel.
    #[inline]
    fn release_held(&mut self, cg: &ChannelGraph, t: usize, next: &[u32], v: usize) {
        let a = next[v];
        if self.get(t) == FREE {
            self.topo.remove(cg, a, next[cg.to_slot(a).0]);
        }
    }
}

/// A spanning tree: per slot the channel to its parent (NONE at the root and for switches the
/// tree does not reach).
struct Escape {
    root: usize,
    up: Vec<u32>,
    parent: Vec<u32>,
    /// Children per slot (CSR).
    kids_start: Vec<u32>,
    kids: Vec<u32>,
}

impl Escape {
    fn build(g: &SwitchGraph, root: usize) -> Escape {
        let n = g.switch_count();
        let chans = g.channels();
        let mut up = vec![NONE; n];
        let mut parent = vec![u32::MAX; n];
        let mut seen = vec![false; n];
        let mut q = vec![root as u32];
        seen[root] = true;
        let mut head = 0;
        while let Some(&u) = q.get(head) {
            head += 1;
            let u = u as usize;
            for c in g.first_channel(u)..g.first_channel(u + 1) {
                let v = chans[c].to as usize;
                if seen[v] {
                    continue;
                }
                // The channel v → u: v's port toward u.
                let back = (g.first_channel(v)..g.first_channel(v + 1))
                    .find(|&x| chans[x].to as usize == u && chans[x].port == chans[c].remote_port);
                if let Some(b) = back {
                    seen[v] = true;
                    up[v] = b as u32;
                    parent[v] = u as u32;
                    q.push(v as u32);
                }
            }
        }
        let mut cnt = vec![0u32; n + 1];
        for v in 0..n {
            if parent[v] != u32::MAX {
                cnt[parent[v] as usize + 1] += 1;
            }
        }
        for i in 0..n {
            cnt[i + 1] += cnt[i];
        }
        let mut fill = cnt.clone();
        let mut kids = vec![0u32; cnt[n] as usize];
        for v in 0..n {
            if parent[v] != u32::MAX {
                let p = parent[v] as usize;
                kids[fill[p] as usize] = v as u32;
                fill[p] += 1;
            }
        }
        Escape {
            root,
            up,
            parent,
            kids_start: cnt,
            kids,
        }
    }

    fn children(&self, p: usize) -> &[u32] {
        &self.kids[self.kids_start[p] as usize..self.kids_start[p + 1] as usize]
    }

    /// The channel parent(x) → x.
    fn down(&self, cg: &ChannelGraph, x: usize) -> Option<u32> {
        let u = self.up[x];
        if u == NONE {
            return None;
        }
        let (p, q) = cg.to_slot(u);
        cg.leaving(p, q)
    }

    /// Every dependency of a route along the tree (see the module docs).
    fn deps(&self, cg: &ChannelGraph, mut f: impl FnMut(u32, u32)) {
        let n = self.up.len();
        for x in 0..n {
            let p = self.parent[x];
            if p == u32::MAX {
                continue;
            }
            let p = p as usize;
            let (ux, dx) = (self.up[x], self.down(cg, x));
            if p != self.root {
                if self.up[p] != NONE {
                    f(ux, self.up[p]);
                }
                if let (Some(dp), Some(dx)) = (self.down(cg, p), dx) {
                    f(dp, dx);
                }
            }
            for &y in self.children(p) {
                let y = y as usize;
                if y != x {
                    if let Some(dy) = self.down(cg, y) {
                        f(ux, dy);
                    }
                }
            }
        }
    }

    /// Next channel from every switch toward `t` along the tree.
    fn routes_to(&self, cg: &ChannelGraph, t: usize, next: &mut [u32]) {
        for (x, e) in next.iter_mut().enumerate() {
            *e = self.up[x];
        }
        // The ancestors of t go down toward it instead.
        let mut x = t;
        next[t] = NONE;
        while self.parent[x] != u32::MAX {
            let p = self.parent[x] as usize;
            next[p] = self.down(cg, x).unwrap_or(NONE);
            x = p;
        }
    }
}

fn fail(reason: String) -> RouteError {
    RouteError::Unroutable {
        engine: "nue",
        reason,
    }
}

impl RoutingEngine for Nue {
    fn name(&self) -> &'static str {
        "nue"
    }

    fn route_logged(
        &self,
        subnet: &Subnet,
        _rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        let g = SwitchGraph::build_avoiding_throttled(
            subnet,
            self.opts.avoid_throttled_links,
            "nue_discover_network",
            log,
        );
        let n = g.switch_count();
        if n as u64 > SLOT_MASK {
            return Err(fail(format!(
                "{n} switches: more than the {SLOT_MASK} this engine numbers"
            )));
        }
        let hm = HopMatrix::from_graph(g);
        let g = hm.graph();
        if (0..n).any(|v| hm.hops_idx(0, v).is_none()) {
            return Err(fail(
                "ERR NUE45: unsupported network state (detached and inaccessible switches found; gracefully shutdown this routing engine)"
                    .to_string(),
            ));
        }
        let cg = ChannelGraph::new(g);
        let budget = self.opts.vl_budget(subnet);
        let avail = budget.min_sw_data_vls.clamp(1, 15);
        let mut k = match self.opts.nue_max_num_vls {
            0 => avail,
            m if m <= avail => m,
            m => {
                log.push(format!(
                    "get_max_num_vls: WRN NUE47: user requested maximum #VLs ({m}) is larger than supported #VLs ({avail})"
                ));
                avail
            }
        };
        if k != 1 && !self.opts.qos {
            log.push(format!(
                "nue_discover_network: WRN NUE48: Nue routing with nue_max_num_vls == {k} should enable QoS for valid SL2VL mapping,  using nue_max_num_vls 1"
            ));
            k = 1;
        }
        let ep = Endpoints::collect(subnet, g, &EngineOptions::default(), log);
        let include_sw = self.opts.nue_include_switches;
        let mut dests: Vec<DestLid> = ep
            .dests
            .iter()
            .copied()
            .filter(|d| d.ca || include_sw)
            .collect();
        dests.sort_by_key(|d| d.lid);
        let mut layers_of: Vec<Vec<DestLid>> = vec![Vec::new(); usize::from(k)];
        for (i, d) in dests.iter().enumerate() {
            layers_of[i % usize::from(k)].push(*d);
        }
        log.push(format!(
            "nue_do_ucast_routing: Start routing process with nue ({k} virtual layers, {} destination LIDs)",
            dests.len()
        ));
        let top = max_lid(subnet);
        let width = usize::from(top.0) + 1;
        let mut cols = vec![NO_PATH; width * n];
        let mut sls = PathSls::per_dest(top);
        let chans = g.channels();
        let mut dist = vec![u64::MAX; n];
        let mut next = vec![NONE; n];
        let mut tdep = vec![usize::MAX; n];
        let mut depth = vec![0u32; n];
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut path: Vec<usize> = Vec::with_capacity(n);
        // The LIDs behind each switch (and the balance's spare switch n).
        let mut acc = vec![0u64; n + 1];
        // Dijkstra's queue by hop levels: every edge costs at least HOP, so the switches one
        // level settles are only ever queued at deeper levels, and the switches of a level all
        // have their final distances when it starts. A level is sorted by (distance, slot) —
        // the order a heap would settle them in — and settled in that order.
        let mut pend: Vec<(u64, u32)> = Vec::new();
        let mut far: Vec<(u64, u32)> = Vec::new();
        let mut cur: Vec<u64> = Vec::new();
        // Per switch u, its neighbours v in u's channel order, in two parallel arrays: what
        // every relaxation reads, `(v, load of the channel v → u)`, and what only an
        // improving one does, `(channel v → u, the port of u it arrives on minus 1)`;
        // nb_start[u].. nb_start[u + 1]. The load is a channel's LIDs routed over it so far:
        // a destination adds at most every LID (below 2^16) to a channel, so the sum stays
        // below 2^32 (a saturating add all the same). Keeping it beside `v` makes the
        // relaxations read one sequential run instead of a per-channel array at random.
        // Channels that arrive on no known port (never relaxed) get entries after the last
        // switch's, so `at[c]` finds every channel's load.
        let mut nb: Vec<(u32, u32)> = Vec::with_capacity(chans.len());
        let mut nbc: Vec<(u32, u32)> = Vec::with_capacity(chans.len());
        let mut nb_start = Vec::with_capacity(n + 1);
        let mut at = vec![u32::MAX; chans.len()];
        for u in 0..n {
            nb_start.push(nb.len());
            for o in g.first_channel(u)..g.first_channel(u + 1) {
                if let Some(c) = cg.arriving(u, chans[o].port) {
                    at[c as usize] = nb.len() as u32;
                    nb.push((chans[o].to, 0));
                    nbc.push((c, u32::from(chans[o].port) - 1));
                }
            }
        }
        nb_start.push(nb.len());
        for a in at.iter_mut().filter(|a| **a == u32::MAX) {
            *a = nb.len() as u32;
            nb.push((NONE, 0));
        }
        // The entry the balance adds to for switches without a next channel (never read).
        let sink = nb.len() as u32;
        nb.push((NONE, 0));
        // Per switch, what the balance adds its LIDs to: the entry of its next channel in
        // `nb` and the switch that channel reaches (set with `next`); `sink` and the spare
        // switch n for none.
        let mut hop = vec![(sink, n as u32); n];
        // Per switch, where the dependencies into its leaving channels start
        // ([`ChannelGraph::tdeps_layout`]): the first into a settled switch's next channel
        // comes from this small array, not a per-channel one.
        let tlay: Vec<(u32, u32, u32)> = (0..n).map(|u| cg.tdeps_layout(u)).collect();
        // Masks of unblocked entries ([`Layer::open`]) where every switch has at most 64
        // entries (unless turned off).
        let masks = !self.plain && nb_start.windows(2).all(|w| w[1] - w[0] <= 64);
        let (open0, ebit): (Vec<u64>, Vec<u64>) = if masks {
            let bit = |c: usize| {
                let w = chans[c].to as usize;
                let i = at[c] as usize;
                if (nb_start[w]..nb_start[w + 1]).contains(&i) {
                    1u64 << (i - nb_start[w])
                } else {
                    0
                }
            };
            let all = |c: usize| {
                let u = cg.from_slot(c as u32);
                match nb_start[u + 1] - nb_start[u] {
                    64 => u64::MAX,
                    deg => (1u64 << deg) - 1,
                }
            };
            (
                (0..chans.len()).map(all).collect(),
                (0..chans.len()).map(bit).collect(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let mut settled: Vec<u32> = Vec::with_capacity(n);
        // Switches whose route took a dependency new to the layer (some since replaced): the
        // only ones whose final dependency may need keeping.
        let mut fresh: Vec<u32> = Vec::with_capacity(n);
        // The port each channel leaves on, and NO_PATH for NONE (clamped to the last entry):
        // a destination's column without a branch per switch.
        let port_of: Vec<u8> = (0..chans.len() as u32)
            .map(|c| cg.port(c))
            .chain([NO_PATH])
            .collect();
        let mut fallbacks = 0u64;
        let mut backtracked = 0u64;
        // Per switch, the backtracking step of this destination in which it was reached.
        let mut found_in = vec![0u32; n];
        let mut behind = Behind::new(n);
        let mut near = NearLast::new(&nb, &nb_start);
        let mut cands: Vec<Candidate> = Vec::new();
        for (li, ldests) in layers_of.iter().enumerate() {
            if ldests.is_empty() {
                log.push("nue_do_ucast_routing: WRN NUE43: no desti in this VL; skipping".into());
                continue;
            }
            // Escape tree: the switch with the least total distance to the layer's switches.
            let mut tsw: Vec<usize> = ldests.iter().map(|d| d.slot as usize).collect();
            tsw.sort_unstable();
            tsw.dedup();
            let root = (0..n)
                .min_by_key(|&r| {
                    let row = hm.row(r);
                    tsw.iter().map(|&t| u64::from(row[t])).sum::<u64>()
                })
                .unwrap_or(0);
            let esc = Escape::build(g, root);
            let mut layer = Layer::new(&cg, &open0, &ebit, !self.plain);
            let mut bad = false;
            esc.deps(&cg, |a, b| {
                if let Some(d) = cg.tdep(a, b) {
                    if layer.get(d) == FREE && !layer.topo.try_add(&cg, a, b) {
                        bad = true;
                    }
                    layer.set(d, KEPT);
                }
            });
            if bad {
                return Err(fail("escape paths are not acyclic".to_string()));
            }
            for d in ldests {
                let t = d.slot as usize;
                let lid = usize::from(d.lid);
                dist.fill(u64::MAX);
                next.fill(NONE);
                tdep.fill(usize::MAX);
                pend.clear();
                settled.clear();
                fresh.clear();
                dist[t] = 0;
                hop[t] = (sink, n as u32);
                far.clear();
                pend.push((0, t as u32));
                // The level being settled; the first one (the destination's switch) is 0.
                let mut level = u64::MAX;
                // Backtracking steps taken for this destination.
                let mut step = 0u32;
                loop {
                    while !pend.is_empty() || !far.is_empty() {
                        // `pend` holds what the last level queued one level deeper (in practice
                        // everything: a path's summed load stays far below HOP); `far`, what it
                        // queued deeper still. The next level is the least one queued.
                        if pend.is_empty() {
                            level = far.iter().map(|&(d, _)| d / HOP).min().unwrap_or(0);
                        } else {
                            level = level.wrapping_add(1);
                        }
                        // A switch is queued only when its distance drops, so exactly one entry
                        // per reached switch carries its final distance; the others are dropped.
                        // (distance, slot) order within the level as one integer: the distance's
                        // part below HOP (40 bits), then the slot (< 2^24).
                        // Branch-free: every entry is written, and the kept ones move
                        // the end on (whether one is stale is a coin toss to predict).
                        cur.clear();
                        cur.resize(pend.len(), 0);
                        let mut kept = 0;
                        for &(d, u) in &pend {
                            cur[kept] = (d % HOP) << SLOT_BITS | u64::from(u);
                            kept += usize::from(d == dist[u as usize]);
                        }
                        cur.truncate(kept);
                        pend.clear();
                        if !far.is_empty() {
                            far.retain(|&(d, u)| {
                                if d != dist[u as usize] {
                                    return false;
                                }
                                if d / HOP == level {
                                    cur.push((d % HOP) << SLOT_BITS | u64::from(u));
                                    return false;
                                }
                                true
                            });
                        }
                        // The last level (every switch not yet settled is in it): its
                        // relaxations cannot improve anything (every neighbour is settled,
                        // or in it), so neither they nor the order they come in change a
                        // route; what reads the settling order afterwards (the balance, the
                        // kept dependencies) needs only each switch after the switches it
                        // leads to. Settled as they are, unsorted.
                        if settled.len() + cur.len() == n && !self.plain {
                            settled.extend(cur.iter().map(|&k| (k & SLOT_MASK) as u32));
                            far.clear();
                            break;
                        }
                        // Nearly the last level (a few switches, none queued deeper, are
                        // left unreached): only the switches of the level next to one of them
                        // can relax anything; the others are settled as the last level's are,
                        // and only the rest are sorted and relaxed, in the same order. (Not
                        // for a level too small to pay for the pass over every switch.)
                        let left = n - settled.len() - cur.len();
                        if !self.plain
                            && far.is_empty()
                            && left * FEW_LEFT <= cur.len()
                            && cur.len() * 8 >= n
                        {
                            near.settle_idle(&dist, &mut cur, &mut settled);
                        }
                        cur.sort_unstable();
                        for &key in &cur {
                            let du = level * HOP + (key >> SLOT_BITS);
                            let u = (key & SLOT_MASK) as usize;
                            settled.push(u as u32);
                            let out_u = next[u];
                            // Dependency (channel arriving on port q) → out_u: base + q - 1 in
                            // the transposed numbering.
                            let base = if out_u == NONE {
                                0
                            } else {
                                let (tf, cf, stride) = tlay[u];
                                (tf + (out_u - cf) * stride) as usize
                            };
                            let (s, e) = (nb_start[u], nb_start[u + 1]);
                            // One relaxation: entry (v, load) of u's list, channel c
                            // v → u arriving on port q1 + 1 (a macro: `continue` moves on to
                            // the next entry in both loops below).
                            macro_rules! relax {
                                ($v:expr, $load:expr, $c:expr, $q1:expr, $ent:expr) => {{
                                    let (v, load, c, q1) = ($v, $load, $c, $q1);
                                    let v = v as usize;
                                    // A settled v has dist[v] <= du < nd.
                                    let nd = du + HOP + u64::from(load);
                                    if nd >= dist[v] {
                                        continue;
                                    }
                                    // After a backtracking step the switches reached before it keep
                                    // their routes: others' dependencies lead into them.
                                    if step > 0 && dist[v] != u64::MAX && found_in[v] < step {
                                        continue;
                                    }
                                    let mut dep = usize::MAX;
                                    if out_u != NONE {
                                        let dd = base + q1 as usize;
                                        match layer.get(dd) {
                                            KEPT => {}
                                            BLOCKED => continue,
                                            _ => {
                                                if !layer.add_dep(&cg, dd, c, out_u, &next) {
                                                    continue;
                                                }
                                                fresh.push(v as u32);
                                            }
                                        }
                                        dep = dd;
                                    }
                                    if tdep[v] != usize::MAX {
                                        layer.release_held(&cg, tdep[v], &next, v);
                                    }
                                    tdep[v] = dep;
                                    dist[v] = nd;
                                    next[v] = c;
                                    hop[v] = ($ent as u32, u as u32);
                                    found_in[v] = step;
                                    if nd / HOP == level + 1 {
                                        pend.push((nd, v as u32));
                                    } else {
                                        far.push((nd, v as u32));
                                    }
                                }};
                            }
                            if masks {
                                // Most entries cannot improve (their switch is settled, or
                                // has as good a candidate), and of those that can, many have
                                // their dependency into out_u blocked. A branch-free pass
                                // marks the improving entries, the layer's mask of unblocked
                                // ones filters them, and only the rest are relaxed, in the
                                // same order: the data-dependent branches of the plain loop
                                // below, mispredicted at every turn, cost more than the
                                // pass. (An earlier relaxation of this switch can only
                                // lower a distance, so a marked entry is checked again.)
                                let nd0 = du + HOP;
                                // The unblocked entries' mask is read first, so the load
                                // overlaps the pass.
                                let open = if out_u == NONE {
                                    u64::MAX
                                } else {
                                    layer.open[out_u as usize]
                                };
                                // Last entry first: each step shifts in one bit (entry i
                                // ends at bit i), cheaper than a shift by a variable.
                                let mut m = 0u64;
                                for &(v, load) in nb[s..e].iter().rev() {
                                    let better = nd0 + u64::from(load) < dist[v as usize];
                                    m = m << 1 | u64::from(better);
                                }
                                m &= open;
                                while m != 0 {
                                    let i = m.trailing_zeros() as usize;
                                    m &= m - 1;
                                    let (v, load) = nb[s + i];
                                    let (c, q1) = nbc[s + i];
                                    relax!(v, load, c, q1, s + i);
                                }
                            } else {
                                let entries = nb[s..e].iter().zip(&nbc[s..e]).enumerate();
                                for (i, (&(v, load), &(c, q1))) in entries {
                                    relax!(v, load, c, q1, s + i);
                                }
                            }
                        }
                    }
                    if settled.len() == n {
                        break;
                    }
                    // An impasse: OpenSM's local backtracking step (`local_backtracking`).
                    let adj = Adjacency {
                        g,
                        cg: &cg,
                        nb: &nb,
                        nbc: &nbc,
                        nb_start: &nb_start,
                        at: &at,
                    };
                    let found = local_backtracking(
                        &adj, t, &mut layer, &mut dist, &mut next, &mut tdep, &mut cands,
                    );
                    let Some(x) = found else { break };
                    fresh.push(x as u32);
                    // x is reached through a, which now leads to u; x will be settled after
                    // both.
                    let a = cg.to_slot(next[x]).0;
                    let u = cg.to_slot(next[a]).0;
                    hop[x] = (at[next[x] as usize], a as u32);
                    hop[a] = (at[next[a] as usize], u as u32);
                    if !self.plain {
                        behind.place(&cg, &next, &mut settled, a, u);
                    }
                    step += 1;
                    found_in[x] = step;
                    // The queues are empty here: the next level is x's.
                    far.push((dist[x], x as u32));
                }
                let reached = settled.len();
                if reached == n && step > 0 {
                    backtracked += 1;
                    log.push(format!(
                        "route_via_modified_dijkstra_on_ccdg: backtracking worked for destination LID {lid}"
                    ));
                }
                if reached < n {
                    // Impasse: the whole destination takes the escape tree.
                    for v in 0..n {
                        if tdep[v] != usize::MAX {
                            layer.release_held(&cg, tdep[v], &next, v);
                        }
                    }
                    esc.routes_to(&cg, t, &mut next);
                    for v in 0..n {
                        let c = next[v];
                        hop[v] = if c == NONE || v == t {
                            (sink, n as u32)
                        } else {
                            (at[c as usize], cg.to_slot(c).0 as u32)
                        };
                    }
                    fallbacks += 1;
                    log.push(format!(
                        "route_via_modified_dijkstra_on_ccdg: unsolvable impass reached; fallback to escape paths for destination LID {lid}"
                    ));
                }
                if lid < width {
                    let col = &mut cols[lid * n..(lid + 1) * n];
                    for (e, &c) in col.iter_mut().zip(&next) {
                        *e = port_of[(c as usize).min(chans.len())];
                    }
                    col[t] = d.port;
                    sls.set_dest(Lid(d.lid), li as u8);
                }
                // Balance: every link carries the LIDs behind the switches routed over it.
                // Each switch comes after every switch routed through it: in reverse settling
                // order (a switch's next hop settled before it; backtracking steps keep that),
                // or on the escape tree (and in `plain` after backtracking) by
                // [`leaves_first`].
                if reached == n {
                    // The dependencies this destination's routes hold are the layer's for
                    // good: those new to it were taken by the switches in `fresh`.
                    for &v in if self.plain { &settled } else { &fresh } {
                        let d = tdep[v as usize];
                        if d != usize::MAX {
                            let a = next[v as usize];
                            layer.kept(d, a, next[cg.to_slot(a).0]);
                        }
                    }
                    debug_assert!(
                        settled.iter().all(|&v| {
                            let d = tdep[v as usize];
                            d == usize::MAX || layer.get(d) == KEPT
                        }),
                        "a dependency of destination LID {lid} was not kept"
                    );
                }
                layer.after_destination(&cg);
                let walked = reached < n || (self.plain && step > 0);
                if walked {
                    leaves_first(
                        &cg,
                        |v| (next[v] != NONE).then_some(next[v]),
                        &mut depth,
                        &mut order,
                        &mut path,
                    );
                }
                acc[..n].copy_from_slice(&ep.weight);
                if !walked {
                    order.clear();
                    order.extend(settled.iter().rev());
                }
                // Without a branch: the destination's switch, and switches without a route,
                // add to the sink entry and the spare switch n.
                for &v in &order {
                    let v = v as usize;
                    let (e, u) = hop[v];
                    let w = &mut nb[e as usize].1;
                    *w = w.saturating_add(u32::try_from(acc[v]).unwrap_or(u32::MAX));
                    acc[u as usize] += acc[v];
                }
            }
        }
        if backtracked > 0 {
            log.push(format!(
                "nue_do_ucast_routing: {backtracked} destinations routed after local backtracking"
            ));
        }
        if fallbacks > 0 {
            log.push(format!(
                "nue_do_ucast_routing: {fallbacks} destinations routed on escape paths"
            ));
        }
        // Switch LIDs that are not destinations: balanced min-hop, SL 0 (OpenSM's simple
        // Dijkstra for them).
        let sw_dests: Vec<(usize, usize)> = ep
            .dests
            .iter()
            .filter(|d| !include_sw && !d.ca && usize::from(d.lid) < width)
            .map(|d| (d.slot as usize, usize::from(d.lid)))
            .collect();
        if !sw_dests.is_empty() {
            // The loads no longer change: each switch's channels once, least load first (and
            // in channel order among equal loads), so the first one a hop closer to the
            // target is the one a scan for the strictly least load would keep.
            let mut by_load: Vec<(u32, u8)> = Vec::with_capacity(chans.len());
            let mut by_load_start = Vec::with_capacity(n + 1);
            let mut sorted: Vec<usize> = Vec::new();
            for v in 0..n {
                by_load_start.push(by_load.len());
                sorted.clear();
                sorted.extend(g.first_channel(v)..g.first_channel(v + 1));
                sorted.sort_by_key(|&c| (nb[at[c] as usize].1, c));
                by_load.extend(sorted.iter().map(|&c| (chans[c].to, chans[c].port)));
            }
            by_load_start.push(by_load.len());
            // Per switch v, toward every switch t at once: the hop matrix is symmetric, so
            // neighbour `to` is a hop closer to t when row(to)[t] + 1 == row(v)[t]. Walking
            // v's channels most loaded first, the last one to qualify is the first in load
            // order; each step is one pass over a row, without a branch.
            let mut best = vec![NO_PATH; n];
            for v in 0..n {
                let rv = hm.row(v);
                best.fill(NO_PATH);
                for &(to, port) in by_load[by_load_start[v]..by_load_start[v + 1]].iter().rev() {
                    let rt = hm.row(to as usize);
                    for ((b, &ht), &hv) in best.iter_mut().zip(rt).zip(rv) {
                        *b = if ht.wrapping_add(1) == hv { port } else { *b };
                    }
                }
                for &(t, lid) in &sw_dests {
                    if v == t {
                        cols[lid * n + v] = 0;
                    } else if rv[t] != UNREACHABLE {
                        cols[lid * n + v] = best[t];
                    }
                }
            }
        }
        // Every entry is written below.
        let mut lfts = Lfts::with_slots_unfilled(g.slots().clone(), top);
        if !lfts.set_lid_major(&cols) {
            return Err(fail(format!(
                "{} LFT entries computed for {n} switches and {width} LIDs",
                cols.len()
            )));
        }
        // Multicast trees grow over the loads (OpenSM's `D²` + load, `D` every destination
        // LID, switches' included).
        let d = ep.dests.len() as u64;
        let mut loads = ChannelLoads::new(subnet, d.saturating_mul(d));
        for c in 0..cg.num_channels() as u32 {
            let (Some(sw), Some(&(_, w))) = (
                g.switch_at(cg.from_slot(c)),
                at.get(c as usize).and_then(|&e| nb.get(e as usize)),
            ) else {
                continue;
            };
            loads.set(sw, ibmad::PortNum(cg.port(c)), w);
        }
        Ok(Routes::new(lfts).with_path_sl(sls).with_mcast_loads(loads))
    }
}

/// A set of switches cleared in O(1): a switch is in it when its tag is the current stamp.
struct Marks {
    tag: Vec<u32>,
    stamp: u32,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            tag: vec![0; n],
            stamp: 0,
        }
    }

    /// Empties the set (a new stamp; the tags are cleared only when the stamps run out).
    fn clear(&mut self) {
        if self.stamp == u32::MAX {
            self.tag.fill(0);
            self.stamp = 0;
        }
        self.stamp += 1;
    }

    #[inline]
    fn insert(&mut self, v: usize) {
        self.tag[v] = self.stamp;
    }

    #[inline]
    fn contains(&self, v: usize) -> bool {
        self.tag[v] == self.stamp
    }
}

/// The nearly last levels' shortcut: per switch w, the switches whose neighbour lists hold w
/// (the ones that can relax it), `held_by[held_start[w]..held_start[w + 1]]`.
struct NearLast {
    held_start: Vec<usize>,
    held_by: Vec<u32>,
    /// The switches next to an unreached one, at the level being settled.
    marks: Marks,
}

impl NearLast {
    /// From the Dijkstra's neighbour lists (`nb[nb_start[u]..nb_start[u + 1]]` is switch
    /// u's; `nb_start` has one entry per switch and one more).
    fn new(nb: &[(u32, u32)], nb_start: &[usize]) -> NearLast {
        let n = nb_start.len() - 1;
        let mut held_start = vec![0usize; n + 1];
        for &(v, _) in &nb[..nb_start[n]] {
            held_start[v as usize + 1] += 1;
        }
        for w in 0..n {
            held_start[w + 1] += held_start[w];
        }
        let mut held_by = vec![0u32; nb_start[n]];
        let mut fill = held_start.clone();
        for u in 0..n {
            for &(v, _) in &nb[nb_start[u]..nb_start[u + 1]] {
                held_by[fill[v as usize]] = u as u32;
                fill[v as usize] += 1;
            }
        }
        NearLast {
            held_start,
            held_by,
            marks: Marks::new(n),
        }
    }

    /// Settles the switches of the level `cur` (sort keys, nothing queued deeper) that have
    /// no unreached switch (`dist` MAX) in their lists, so can relax nothing: appended to
    /// `settled`, unsorted. `cur` keeps the others, in their order.
    #[inline(never)]
    fn settle_idle(&mut self, dist: &[u64], cur: &mut Vec<u64>, settled: &mut Vec<u32>) {
        self.marks.clear();
        for (w, &d) in dist.iter().enumerate() {
            if d == u64::MAX {
                for &u in &self.held_by[self.held_start[w]..self.held_start[w + 1]] {
                    self.marks.insert(u as usize);
                }
            }
        }
        // Branch-free: every key is written to both, and its side moves on.
        let base = settled.len();
        settled.resize(base + cur.len(), 0);
        let (mut k, mut j) = (0, base);
        for i in 0..cur.len() {
            let key = cur[i];
            let u = (key & SLOT_MASK) as u32;
            let m = self.marks.contains(u as usize);
            cur[k] = key;
            settled[j] = u;
            k += usize::from(m);
            j += usize::from(!m);
        }
        cur.truncate(k);
        settled.truncate(j);
    }
}

/// Keeps a destination's settling order fit for the balance across backtracking steps: each
/// switch after its next hop, so that reversed, each comes after the switches routed
/// through it.
struct Behind {
    /// The switches the step moves.
    marks: Marks,
    moved: Vec<u32>,
}

impl Behind {
    fn new(n: usize) -> Behind {
        Behind {
            marks: Marks::new(n),
            moved: Vec::new(),
        }
    }

    /// Switch `a`, settled, now leads to `u`, settled. The order stays fit if `u` came first;
    /// else `a`, and the switches after it whose routes pass through it (a switch's next hop
    /// comes before it, so one pass tags them), move behind the others, in their order.
    #[inline(never)]
    fn place(
        &mut self,
        cg: &ChannelGraph,
        next: &[u32],
        settled: &mut Vec<u32>,
        a: usize,
        u: usize,
    ) {
        let at = |w: usize| settled.iter().position(|&s| s as usize == w);
        let (Some(pu), Some(pa)) = (at(u), at(a)) else {
            return;
        };
        if pu < pa {
            return;
        }
        self.marks.clear();
        self.moved.clear();
        let mut keep = pa;
        for i in pa..settled.len() {
            let v = settled[i] as usize;
            let c = next[v];
            if v == a || (c != NONE && self.marks.contains(cg.to_slot(c).0)) {
                self.marks.insert(v);
                self.moved.push(v as u32);
            } else {
                settled[keep] = v as u32;
                keep += 1;
            }
        }
        settled.truncate(keep);
        settled.extend_from_slice(&self.moved);
    }
}

/// What [`local_backtracking`] reads of the fabric and of the Dijkstra's neighbour lists
/// (see `route_logged`: `nb`, `nbc`, `nb_start`, `at`).
struct Adjacency<'a> {
    g: &'a SwitchGraph,
    cg: &'a ChannelGraph,
    nb: &'a [(u32, u32)],
    nbc: &'a [(u32, u32)],
    nb_start: &'a [usize],
    at: &'a [u32],
}

/// A candidate of [`local_backtracking`]: (distance, channel x → a, channel a → u, the
/// dependency a → u → u's next channel, if u is not the destination's switch).
type Candidate = (u64, u32, u32, Option<usize>);

/// At an impasse, OpenSM's local backtracking step (osm_ucast_nue.c,
/// `attempt_local_backtracking`). For the first unreached switch x (in slot order) that has
/// one: a reached neighbour a (not the destination's switch) can change its next channel to
/// another a → u, u reached, whose dependency into u's next channel is already kept (OpenSM's
/// "stack of used links"), provided every switch routed through a already keeps the
/// dependency into a → u (and is not u); then x is reached through a if x → a → u closes no
/// cycle. Candidates are tried by their distance through u. The switches reached before the
/// step keep their routes (OpenSM would look for a shortcut; we do not). No route can loop: a
/// loop through a → u would be a cycle of dependencies all live before the step.
///
/// Returns the switch it reached, with the routes and held dependencies of it, of `a` and of
/// the switches routed through `a` updated; `None` when no unreached switch has a candidate
/// that closes no cycle.
fn local_backtracking(
    adj: &Adjacency<'_>,
    t: usize,
    layer: &mut Layer<'_>,
    dist: &mut [u64],
    next: &mut [u32],
    tdep: &mut [usize],
    cands: &mut Vec<Candidate>,
) -> Option<usize> {
    for x in 0..dist.len() {
        if dist[x] != u64::MAX {
            continue;
        }
        cands.clear();
        for xa in adj.g.first_channel(x)..adj.g.first_channel(x + 1) {
            let a = adj.g.channels()[xa].to as usize;
            if dist[a] == u64::MAX || a == t || adj.at[xa] as usize >= adj.nb_start[dist.len()] {
                continue;
            }
            let (s, e) = (adj.nb_start[a], adj.nb_start[a + 1]);
            for au in adj.g.first_channel(a)..adj.g.first_channel(a + 1) {
                let au32 = au as u32;
                let u = adj.g.channels()[au].to as usize;
                if au32 == next[a] || dist[u] == u64::MAX {
                    continue;
                }
                let dep_u = if u == t {
                    None
                } else if next[u] == NONE {
                    continue;
                } else {
                    match adj.cg.tdep(au32, next[u]) {
                        Some(d) if layer.get(d) == KEPT => Some(d),
                        _ => continue,
                    }
                };
                let follow = adj.nb[s..e]
                    .iter()
                    .zip(&adj.nbc[s..e])
                    .all(|(&(w, _), &(wa, _))| {
                        next[w as usize] != wa
                            || (w as usize != u
                                && adj.cg.tdep(wa, au32).is_some_and(|d| layer.get(d) == KEPT))
                    });
                if follow {
                    let da = dist[u] + HOP + u64::from(adj.nb[adj.at[au] as usize].1);
                    cands.push((da, xa as u32, au32, dep_u));
                }
            }
        }
        cands.sort_by_key(|c| c.0);
        for &(da, xa, au, dep_u) in cands.iter() {
            let Some(dx) = adj.cg.tdep(xa, au) else {
                continue;
            };
            if !layer.use_dep(adj.cg, dx, xa, au, next) {
                continue;
            }
            let a = adj.cg.to_slot(xa).0;
            // Drop what a and the switches routed through it held (before a's next
            // channel changes: the holds are read through it), then take the kept
            // dependencies into a → u.
            if tdep[a] != usize::MAX {
                layer.release_held(adj.cg, tdep[a], next, a);
            }
            let (s, e) = (adj.nb_start[a], adj.nb_start[a + 1]);
            for i in s..e {
                let (w, wa) = (adj.nb[i].0 as usize, adj.nbc[i].0);
                if next[w] == wa {
                    if tdep[w] != usize::MAX {
                        layer.release_held(adj.cg, tdep[w], next, w);
                    }
                    tdep[w] = adj.cg.tdep(wa, au).unwrap_or(usize::MAX);
                }
            }
            next[a] = au;
            tdep[a] = dep_u.unwrap_or(usize::MAX);
            dist[a] = da;
            next[x] = xa;
            tdep[x] = dx;
            dist[x] = da + HOP + u64::from(adj.nb[adj.at[xa as usize] as usize].1);
            return Some(x);
        }
    }
    None
}

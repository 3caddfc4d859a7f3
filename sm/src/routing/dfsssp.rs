//! SSSP and DFSSSP (OpenSM `sssp`, `dfsssp`, `osm_ucast_dfsssp.c`; Domke, Hoefler and Nagel,
//! IPDPS 2011): globally balanced shortest paths, and for `dfsssp` service-level layers that
//! make them free of credit loops.
//!
//! # Paths (both engines)
//! Destinations are routed one LID at a time, in OpenSM's order: switches by the number of
//! LIDs behind them (CA LIDs plus their own), most first (ties in GUID order), the CA ports of
//! each in port order — with a `cn_guid_file`, compute nodes first, then the `io_guid_file`
//! ports, then the rest — and last every switch's own LID. For each destination every switch
//! takes, among its minimum-hop next hops, the one whose path carries the fewest routes so far:
//! OpenSM runs Dijkstra with link weights `P²` + routes on the link (`P` = number of LIDs),
//! which for any fabric a LID space holds is "fewest hops, then least summed load"; here that
//! is computed exactly, by one pass over the breadth-first order of the destination switch
//! (`O(links)` per LID, the search shared by every LID of one switch). After each LID, every
//! link on the new paths gets the LIDs of the switches whose routes it carries added to its
//! weight. So every route is a shortest path, and the load is balanced over the whole fabric.
//! With LMC > 0 each LID of a port is routed in turn, which spreads its LIDs over different
//! paths.
//!
//! # Layers (`dfsssp`)
//! A route here is (source switch with CAs, destination CA LID): all CAs behind one switch
//! follow the same tables, and CA links cannot be on a credit loop. Every route starts on layer
//! 0. For each layer but the last, the layer's channel dependency graph is searched for a
//! cycle; each cycle is broken at its dependency with the fewest routes, by moving every route
//! through that dependency to the next layer (OpenSM `dfsssp_remove_deadlocks`). If the last
//! usable layer still has a cycle, the engine fails with OpenSM's "ERR AD25: Not enough VLs
//! available". Moving every route of a dependency at once moves more than the cycle needs, so
//! then (not in OpenSM) the top layer is emptied if it can be: each of its routes in turn goes
//! to the lowest layer that stays acyclic with it, all or nothing (undone if one route fits
//! nowhere, or after a bounded amount of cycle searching), and again for the layer below while
//! that works. Where the top layer holds a few routes (at most 64), a route that fits no lower
//! layer as it is may still go to one where moving the routes of a dependency on the cycle it
//! would close to another lower layer breaks that cycle. On random graphs this saves a VL now
//! and then (one of 7 on random:128,512,64,7; with LMC 1, the few routes left on a third lane),
//! and it changes nothing where it fails. Whether a layer stays acyclic with a route is
//! searched from the dependencies only that route adds. Layers left over are then shared out,
//! as OpenSM's `vl_split_count` does: each spare VL goes to the layer with the most routes per
//! VL, and a route's SL is its layer's first SL plus a hash of (source, destination) over the
//! layer's VLs (OpenSM draws at random per PathRecord query; a fixed SL per path keeps answers
//! stable).
//!
//! The layer index is the path SL; SL-to-VL is left to the QoS configuration (OpenSM's dfsssp
//! has no `update_sl2vl`), whose default maps SL *i* to VL *i* on ports with enough VLs. The
//! usable layers are the switch ports' data VLs ([`super::vl::VlBudget`]); with `qos` off the
//! SM programs no SL-to-VL, so only one layer is usable and a fabric that needs more fails.
//!
//! Routes to and from switch LIDs (management traffic) are not part of the layer analysis and
//! get SL 0, as Nue does; OpenSM also layers them when the switch supports SL-to-VL mapping.
//!
//! Both engines hand multicast the channel loads the routing left ([`ChannelLoads`]: OpenSM's
//! link weights, `D²` plus the LIDs routed over each channel), and groups' trees are grown
//! over them by Dijkstra, as OpenSM's `dfsssp_do_mcast_routing` does ([`crate::mcast`]).

use std::collections::HashSet;

use ibmad::{Guid, Lid, PortNum};

use super::cdg::{lft_columns, lft_next as next_chan, route_dep_counts, ChannelGraph, NONE};
use super::graph::{link_usable, HopMatrix, SwitchGraph, UNREACHABLE};
use super::vl::PathSls;
use super::{max_lid, EngineOptions, Lfts, OptionFile, RouteError, Routes, RoutingEngine, NO_PATH};
use crate::mcast::ChannelLoads;
use crate::subnet::Subnet;

/// The SSSP family: `sssp` (balanced shortest paths) or `dfsssp` (plus deadlock-free layers).
#[derive(Clone, Debug)]
pub struct Sssp {
    opts: EngineOptions,
    deadlock_free: bool,
    /// See [`Sssp::plain`].
    plain: bool,
}

impl Sssp {
    /// `sssp` (no SL layers; [`Sssp::dfsssp`] adds them).
    #[must_use]
    pub fn new(opts: EngineOptions) -> Sssp {
        Sssp {
            opts,
            deadlock_free: false,
            plain: false,
        }
    }

    /// `dfsssp`.
    #[must_use]
    pub fn dfsssp(opts: EngineOptions) -> Sssp {
        Sssp {
            opts,
            deadlock_free: true,
            plain: false,
        }
    }

    /// Without the shortcut the routing phase takes for a run of destinations behind one
    /// switch (their switches' channels one hop closer listed once): every destination scans
    /// every channel. The same tables, slower; the tests compare the two.
    #[doc(hidden)]
    #[must_use]
    pub fn plain(mut self) -> Sssp {
        self.plain = true;
        self
    }

    fn name_str(&self) -> &'static str {
        if self.deadlock_free {
            "dfsssp"
        } else {
            "sssp"
        }
    }

    fn fail(&self, reason: String) -> RouteError {
        RouteError::Unroutable {
            engine: self.name_str(),
            reason,
        }
    }
}

/// One destination LID: its switch (slot), and the port to use there (0 = the switch itself).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DestLid {
    pub lid: u16,
    pub slot: u32,
    pub port: u8,
    /// A CA (or router) LID, not a switch's own.
    pub ca: bool,
}

/// What the engines of this family need to know about end ports.
pub(crate) struct Endpoints {
    /// Destination LIDs in routing order.
    pub dests: Vec<DestLid>,
    /// Per slot: LIDs behind the switch (CA LIDs with their LMC range, plus its own).
    pub weight: Vec<u64>,
    /// Per slot: CA ports attached.
    pub cas: Vec<u32>,
}

fn parse_guids(f: &Option<OptionFile>, log: &mut Vec<String>, what: &str) -> HashSet<u64> {
    let Some(f) = f else {
        return HashSet::new();
    };
    let parsed = match &f.contents {
        Ok(text) => super::updn::parse_guid_file(text).map_err(|e| e.to_string()),
        Err(e) => Err(e.clone()),
    };
    match parsed {
        Ok(v) => v.into_iter().map(|(_, g)| g.0).collect(),
        Err(e) => {
            log.push(format!(
                "dfsssp_do_dijkstra_routing: ERR AD33: Problem parsing {what} guid file '{}': {e}",
                f.path
            ));
            HashSet::new()
        }
    }
}

impl Endpoints {
    /// End ports of `subnet` on the switches of `g`, in OpenSM's dfsssp order.
    pub(crate) fn collect(
        subnet: &Subnet,
        g: &SwitchGraph,
        opts: &EngineOptions,
        log: &mut Vec<String>,
    ) -> Endpoints {
        let n = g.switch_count();
        let mut weight = vec![0u64; n];
        let mut cas = vec![0u32; n];
        // (slot, switch port, port GUID, base LID, LIDs)
        let mut per_sw: Vec<Vec<(u8, Guid, u16, u16)>> = vec![Vec::new(); n];
        let mut own: Vec<(u16, u16)> = vec![(0, 0); n];
        for (a, &sw) in g.slots().switches().iter().enumerate() {
            if let Some(p0) = subnet.port(sw, PortNum(0)) {
                if p0.lid != Lid::UNASSIGNED {
                    let nl = 1u16 << p0.lmc.min(7);
                    own[a] = (p0.lid.0, nl);
                    weight[a] += u64::from(nl);
                }
            }
            let mut seen = HashSet::new();
            for p in 1..=subnet.node(sw).num_ports {
                let Some((rn, rp)) = subnet.port(sw, PortNum(p)).and_then(|x| x.remote) else {
                    continue;
                };
                if subnet.node(rn).is_switch() || !link_usable(subnet, sw, PortNum(p)) {
                    continue;
                }
                let Some(rport) = subnet.port(rn, rp) else {
                    continue;
                };
                if rport.lid == Lid::UNASSIGNED || !seen.insert(rport.guid) {
                    continue;
                }
                let nl = 1u16 << rport.lmc.min(7);
                per_sw[a].push((p, rport.guid, rport.lid.0, nl));
                weight[a] += u64::from(nl);
                cas[a] += 1;
            }
        }
        let key = |a: usize| subnet.node(g.slots().switches()[a]).guid.0.swap_bytes();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&a| key(a));
        order.sort_by(|&a, &b| weight[b].cmp(&weight[a])); // stable
        let cn = parse_guids(&opts.cn_guid_file, log, "compute node");
        let io = parse_guids(&opts.io_guid_file, log, "I/O");
        let mut dests = Vec::new();
        let push = |a: usize, e: &(u8, Guid, u16, u16), dests: &mut Vec<DestLid>| {
            for o in 0..e.3 {
                dests.push(DestLid {
                    lid: e.2.saturating_add(o),
                    slot: a as u32,
                    port: e.0,
                    ca: true,
                });
            }
        };
        let class = |g: &Guid| {
            if cn.contains(&g.0) {
                0
            } else if io.contains(&g.0) {
                1
            } else {
                2
            }
        };
        for want in 0..3 {
            for &a in &order {
                for e in &per_sw[a] {
                    if class(&e.1) == want {
                        push(a, e, &mut dests);
                    }
                }
            }
        }
        for &a in &order {
            let (l, nl) = own[a];
            for o in 0..nl {
                dests.push(DestLid {
                    lid: l.saturating_add(o),
                    slot: a as u32,
                    port: 0,
                    ca: false,
                });
            }
        }
        Endpoints { dests, weight, cas }
    }
}

/// The shortest paths toward one switch: the switches it reaches nearest first (its hop row
/// gives the distances), reused by every LID behind it, and where several are, each switch's
/// channels one hop closer.
struct Toward {
    /// The switch, whose hop row (the hop matrix's) gives the distances.
    of: usize,
    /// The switches `of` reaches by hops (`of` first); within a hop count by slot mod 4, then
    /// slot.
    order: Vec<u32>,
    /// Scratch: where each hop count's switches start in `order`, four counters per hop count
    /// (by slot mod 4), all zero between uses.
    at_hops: Vec<u32>,
    /// Whether `start` and `par` are made for switch `of`.
    listed: bool,
    /// The switch at `order[i]` (i ≥ 1) relaxes `par[start[i - 1]..start[i]]`: (neighbour,
    /// channel to it) for each channel to a neighbour one hop closer, in channel order.
    start: Vec<u32>,
    par: Vec<(u32, u32)>,
}

impl Toward {
    fn new(n: usize) -> Toward {
        Toward {
            of: usize::MAX,
            order: Vec::with_capacity(n),
            at_hops: vec![0; 4 << 8],
            listed: false,
            start: Vec::with_capacity(n),
            par: Vec::new(),
        }
    }

    /// Toward switch `t` (kept while the destinations stay behind it); with `list`, the
    /// channels one hop closer too (for a run of destinations behind `t`: a lone one scans
    /// its channels once, which is cheaper than listing them).
    ///
    /// Any order by hops does: a switch's channels one hop closer lead to switches before it,
    /// and the switches routed through it come after it.
    fn at(&mut self, hm: &HopMatrix, adj: &Adjacency, t: usize, list: bool) {
        if self.of != t {
            let dist = hm.row(t);
            // Counting sort by hops, the unreachable left out. Four counters per hop count
            // (by slot mod 4), so that runs of equal hops are not one chain of increments.
            let hist = &mut self.at_hops;
            let mut top = 0u8;
            for (v, &h) in dist.iter().enumerate() {
                hist[(v & 3) << 8 | usize::from(h)] += 1;
                if h != UNREACHABLE {
                    top = top.max(h);
                }
            }
            let mut sum = 0;
            for h in 0..=usize::from(top) {
                for k in 0..4 {
                    let c = &mut hist[k << 8 | h];
                    (*c, sum) = (sum, sum + *c);
                }
            }
            self.order.clear();
            self.order.resize(sum as usize, 0);
            for (v, &h) in dist.iter().enumerate() {
                if h != UNREACHABLE {
                    let at = &mut hist[(v & 3) << 8 | usize::from(h)];
                    self.order[*at as usize] = v as u32;
                    *at += 1;
                }
            }
            for k in 0..4 {
                hist[k << 8..=k << 8 | usize::from(top)].fill(0);
                hist[k << 8 | usize::from(UNREACHABLE)] = 0;
            }
            self.of = t;
            self.listed = false;
        }
        if !list || self.listed {
            return;
        }
        self.listed = true;
        self.start.clear();
        self.par.clear();
        let dist = hm.row(t);
        for &v in self.order.iter().skip(1) {
            let v = v as usize;
            let dv = dist[v];
            let (lo, hi) = adj.range(v);
            for (c, &u) in (lo..).zip(&adj.to[lo..hi]) {
                if dist[u as usize].wrapping_add(1) == dv {
                    self.par.push((u, c as u32));
                }
            }
            self.start.push(self.par.len() as u32);
        }
    }
}

/// The switch graph's channels as the scans read them: each channel's far switch alone, and
/// where each switch's channels start.
struct Adjacency {
    to: Vec<u32>,
    start: Vec<u32>,
}

impl Adjacency {
    fn new(g: &SwitchGraph) -> Adjacency {
        Adjacency {
            to: g.channels().iter().map(|e| e.to).collect(),
            start: (0..=g.switch_count())
                .map(|a| g.first_channel(a) as u32)
                .collect(),
        }
    }

    /// Switch `v`'s channels.
    #[inline(always)]
    fn range(&self, v: usize) -> (usize, usize) {
        (self.start[v] as usize, self.start[v + 1] as usize)
    }
}

/// Of `cands` (neighbour, channel to it), in order, the first of the cheapest by the
/// neighbour's cost plus the channel's weight: (its cost, the channel), or (`u64::MAX`,
/// `u32::MAX`) for none.
#[inline(always)]
fn cheapest(cost: &[u64], weight: &[u32], cands: impl Iterator<Item = (u32, u32)>) -> (u64, u32) {
    let (mut best, mut pick) = (u64::MAX, u32::MAX);
    for (u, c) in cands {
        let k = cost[u as usize].saturating_add(u64::from(weight[c as usize]));
        if k < best {
            (best, pick) = (k, c);
        }
    }
    (best, pick)
}

/// The loads `weight` (per channel of `g`) for multicast trees: OpenSM's link weights, `D²`
/// (`D` destination LIDs) plus the LIDs routed over the channel.
pub(crate) fn channel_loads(
    subnet: &Subnet,
    g: &SwitchGraph,
    weight: &[u32],
    dests: usize,
) -> ChannelLoads {
    let d = dests as u64;
    let mut l = ChannelLoads::new(subnet, d.saturating_mul(d));
    for a in 0..g.switch_count() {
        let Some(sw) = g.switch_at(a) else { continue };
        for c in g.first_channel(a)..g.first_channel(a + 1) {
            if let (Some(e), Some(&w)) = (g.channels().get(c), weight.get(c)) {
                l.set(sw, PortNum(e.port), w);
            }
        }
    }
    l
}

/// Balanced shortest-path LFTs (the routing phase of both engines, see the module docs), and
/// the load each channel of the switch graph carries (LIDs routed over it). `plain`: see
/// [`Sssp::plain`].
pub(crate) fn route_sssp(
    subnet: &Subnet,
    hm: &HopMatrix,
    ep: &Endpoints,
    plain: bool,
) -> (Lfts, Vec<u32>) {
    let g = hm.graph();
    let n = g.switch_count();
    let top = max_lid(subnet);
    let mut lfts = Lfts::with_slots(g.slots().clone(), top);
    let chans = g.channels();
    // Channel loads in u32: a channel carries at most every destination LID's routes from
    // every LID, and 0xBFFF² < 2³². The adds saturate where a subnet breaks that (duplicate
    // LIDs) rather than wrap.
    let mut weight = vec![0u32; chans.len()];
    let mut toward = Toward::new(n);
    let adj = Adjacency::new(g);
    let mut cost = vec![0u64; n];
    let mut next = vec![u32::MAX; n];
    let lids_behind: Vec<u32> = ep
        .weight
        .iter()
        .map(|&w| u32::try_from(w).unwrap_or(u32::MAX))
        .collect();
    let mut acc = lids_behind.clone();
    // The port each channel leaves on, and NO_PATH for none (u32::MAX, clamped to the end).
    let port_of: Vec<u8> = chans.iter().map(|e| e.port).chain([NO_PATH]).collect();
    let width = usize::from(top.0) + 1;
    // Column writes go to a destination-major buffer, transposed once at the end.
    let mut cols = vec![NO_PATH; width * n];
    for (i, d) in ep.dests.iter().enumerate() {
        let t = d.slot as usize;
        let lid = usize::from(d.lid);
        if lid >= width {
            continue;
        }
        let more = !plain && ep.dests.get(i + 1).is_some_and(|e| e.slot == d.slot);
        toward.at(hm, &adj, t, more);
        let col = &mut cols[lid * n..(lid + 1) * n];
        col[t] = d.port;
        cost[t] = 0;
        if !toward.listed {
            let dist = hm.row(t);
            for &v in toward.order.iter().skip(1) {
                let v = v as usize;
                let dv = dist[v];
                let (lo, hi) = adj.range(v);
                let closer = (lo..)
                    .zip(&adj.to[lo..hi])
                    .map(|(c, &u)| (u, c as u32))
                    .filter(|&(u, _)| dist[u as usize].wrapping_add(1) == dv);
                let (best, pick) = cheapest(&cost, &weight, closer);
                (cost[v], next[v]) = (best, pick);
                col[v] = port_of[(pick as usize).min(chans.len())];
            }
        }
        let mut a = 0;
        let listed = if toward.listed {
            &toward.start[..]
        } else {
            &[]
        };
        for (&v, &b) in toward.order.iter().skip(1).zip(listed) {
            let v = v as usize;
            let (best, pick) = cheapest(&cost, &weight, toward.par[a..b as usize].iter().copied());
            a = b as usize;
            (cost[v], next[v]) = (best, pick);
            col[v] = port_of[(pick as usize).min(chans.len())];
        }
        // Weights: each link gets the LIDs behind every switch whose path it carries. `acc`
        // holds each switch's own LIDs between destinations; a switch's sum is used once,
        // children first, and then reset.
        for &v in toward.order.iter().skip(1).rev() {
            let v = v as usize;
            let (c, a) = (next[v], acc[v]);
            acc[v] = lids_behind[v];
            if c == u32::MAX {
                continue;
            }
            weight[c as usize] = weight[c as usize].saturating_add(a);
            let u = adj.to[c as usize] as usize;
            acc[u] = acc[u].saturating_add(a);
        }
        acc[t] = lids_behind[t];
    }
    // Into the switch-major LFTs: `cols` is width × n by construction.
    let whole = lfts.set_lid_major(&cols);
    debug_assert!(whole, "cols is width × n");
    (lfts, weight)
}

/// Layer assignment for dfsssp (see the module docs). Routes are (source switch, destination
/// CA LID), indexed `dest_index * sources + src_index` (destination-major: a move scans the
/// sources of one destination).
struct Layering<'a> {
    cg: &'a ChannelGraph,
    /// Source slots (switches with CAs).
    srcs: Vec<u32>,
    /// Per slot: index into `srcs`, or u32::MAX.
    src_of: Vec<u32>,
    /// Destination CA LIDs.
    dests: Vec<u16>,
    /// Destination-major LFT columns (`dests[i]` → slice of n entries).
    cols: Vec<u8>,
    n: usize,
    layer: Vec<u8>,
    counts: Vec<Vec<u32>>,
    /// The in-tree toward each destination (destination-major, n entries each, built at the
    /// first move): the slot a switch's route goes to next, [`NONE`] where it ends.
    up: Vec<u32>,
    /// With `up`: the dependency a route leaving switch `x` takes at `up[x]` (arriving on
    /// `x`'s channel, leaving on `up[x]`'s), [`NONE`] where the route ends at `up[x]`.
    dep_up: Vec<u32>,
    /// With `up`, the same trees in preorder (destination-major): the subtree of `x` is
    /// `pre[tin[x]..tin[x] + size[x]]`, `x` first (`tin[x]` [`NONE`] if `x`'s route loops).
    pre: Vec<u32>,
    tin: Vec<u32>,
    size: Vec<u32>,
    /// Per channel: the destinations whose routes take it, ascending (`via[via_start[c]..
    /// via_start[c + 1]]`), built with the trees.
    via_start: Vec<u32>,
    via: Vec<u32>,
    /// Scratch of [`Layering::cycle_through`]: per channel, the search that last reached it;
    /// the current search; its path.
    seen: Vec<u32>,
    epoch: u32,
    stack: Vec<(u32, u32)>,
}

impl<'a> Layering<'a> {
    /// Layer 0 holds every route: count each dependency once per route through it.
    fn fill_layer0(&mut self) {
        let is_src: Vec<u32> = (0..self.n)
            .map(|v| u32::from(self.src_of[v] != u32::MAX))
            .collect();
        let total = route_dep_counts(self.cg, &self.cols, self.n, self.dests.len(), &is_src);
        self.counts = vec![total];
    }

    /// Builds the destination trees (`up`, `dep_up`, `pre`, `tin`, `size`) from the LFT
    /// columns, once.
    fn build_trees(&mut self) {
        if !self.up.is_empty() {
            return;
        }
        let (n, nd) = (self.n, self.dests.len());
        let mut up = vec![NONE; n * nd];
        let mut dep_up = vec![NONE; n * nd];
        let mut pre_all = Vec::with_capacity(n * nd);
        let mut tin = vec![NONE; n * nd];
        let mut size = vec![1u32; n * nd];
        let mut ks = vec![0u32; n + 1];
        let mut kids = vec![0u32; n];
        let mut stack = Vec::new();
        let mut chan = vec![NONE; n];
        let nch = self.cg.num_channels();
        let mut via_start = vec![0u32; nch + 1];
        let mut via_pairs: Vec<(u32, u32)> = Vec::new();
        for di in 0..nd {
            let col = &self.cols[di * n..(di + 1) * n];
            let up = &mut up[di * n..(di + 1) * n];
            let dep_up = &mut dep_up[di * n..(di + 1) * n];
            ks.fill(0);
            for x in 0..n {
                if let Some(c) = next_chan(self.cg, col, x) {
                    chan[x] = c;
                    via_start[c as usize + 1] += 1;
                    via_pairs.push((c, di as u32));
                    up[x] = self.cg.to_slot(c).0 as u32;
                } else {
                    chan[x] = NONE;
                }
            }
            for x in 0..n {
                let y = up[x];
                if y == NONE {
                    continue;
                }
                ks[y as usize + 1] += 1;
                if chan[y as usize] != NONE {
                    if let Some(d) = self.cg.dep(chan[x], chan[y as usize]) {
                        dep_up[x] = d as u32;
                    }
                }
            }
            for x in 0..n {
                ks[x + 1] += ks[x];
            }
            let total = ks[n];
            // Fill from the back so each switch's children end up in slot order.
            for x in (0..n).rev() {
                let y = up[x];
                if y != NONE {
                    ks[y as usize + 1] -= 1;
                    kids[ks[y as usize + 1] as usize] = x as u32;
                }
            }
            // ks[y + 1] is now the start of y's children: shift back, and end at the total.
            for x in 0..n {
                ks[x] = ks[x + 1];
            }
            ks[n] = total;
            // Preorder from every root (the destination's switch; switches without a route),
            // then subtree sizes children first.
            let base = pre_all.len();
            let tin = &mut tin[di * n..(di + 1) * n];
            let size = &mut size[di * n..(di + 1) * n];
            for (r, &next) in up.iter().enumerate() {
                if next != NONE {
                    continue;
                }
                stack.push(r as u32);
                while let Some(x) = stack.pop() {
                    tin[x as usize] = (pre_all.len() - base) as u32;
                    pre_all.push(x);
                    stack.extend_from_slice(
                        &kids[ks[x as usize] as usize..ks[x as usize + 1] as usize],
                    );
                }
            }
            // Switches on a loop (impossible for shortest paths) are in no tree: pad.
            pre_all.resize(base + n, NONE);
            for &x in pre_all[base..].iter().rev() {
                if x != NONE && up[x as usize] != NONE {
                    size[up[x as usize] as usize] += size[x as usize];
                }
            }
        }
        self.up = up;
        self.dep_up = dep_up;
        self.pre = pre_all;
        self.tin = tin;
        self.size = size;
        for c in 0..nch {
            via_start[c + 1] += via_start[c];
        }
        let mut fill = via_start.clone();
        let mut via = vec![0u32; via_pairs.len()];
        for (c, di) in via_pairs {
            via[fill[c as usize] as usize] = di;
            fill[c as usize] += 1;
        }
        self.via_start = via_start;
        self.via = via;
    }

    /// Moves every route of layer `l` through dependency `dep` to layer `l + 1`. Toward a
    /// destination whose routes take `dep` (leave switch `v` on its first channel), those
    /// routes are the ones from sources in `v`'s subtree of the destination's tree: the
    /// subtree is walked, the routes of layer `l` in it move, and each dependency moves once
    /// with the number of moved routes through it (below `v`: the moved sources below it).
    fn move_routes(&mut self, l: usize, dep: usize) -> u64 {
        while self.counts.len() <= l + 1 {
            self.counts.push(vec![0; self.cg.num_deps()]);
        }
        let Some((a, _)) = self.cg.dep_channels(dep) else {
            return 0;
        };
        self.build_trees();
        let v = self.cg.from_slot(a);
        let n = self.n;
        let ns = self.srcs.len();
        let subtrees = self.dep_subtrees(dep);
        let (lo, hi) = self.counts.split_at_mut(l + 1);
        let (from, to) = (&mut lo[l], &mut hi[0]);
        let mut moved = 0u64;
        // Per switch: the moved routes from its subtree.
        let mut below = vec![0u32; n];
        for (di, t, len) in subtrees {
            let up = &self.up[di * n..(di + 1) * n];
            let dep_up = &self.dep_up[di * n..(di + 1) * n];
            let sub = &self.pre[t..t + len];
            let layer = &mut self.layer[di * ns..(di + 1) * ns];
            for &x in sub {
                let x = x as usize;
                below[x] = 0;
                let s = self.src_of[x];
                if s != u32::MAX {
                    let e = &mut layer[s as usize];
                    if usize::from(*e) == l {
                        *e = (l + 1) as u8;
                        below[x] = 1;
                    }
                }
            }
            // Children before parents: add each switch's count to its parent's, and move its
            // dependency (at its parent) by that count.
            for &x in sub[1..].iter().rev() {
                let x = x as usize;
                let m = below[x];
                if m == 0 {
                    continue;
                }
                below[up[x] as usize] += m;
                let d = dep_up[x];
                if d != NONE {
                    from[d as usize] = from[d as usize].saturating_sub(m);
                    to[d as usize] += m;
                }
            }
            let here = below[v];
            if here > 0 {
                let mut x = v;
                while dep_up[x] != NONE {
                    let d = dep_up[x] as usize;
                    from[d] = from[d].saturating_sub(here);
                    to[d] += here;
                    x = up[x] as usize;
                }
                moved += u64::from(here);
            }
        }
        moved
    }

    /// Breaks every cycle of layer `l` (OpenSM's search: depth first, finished channels stay
    /// finished, since a layer only loses dependencies while it is searched).
    fn break_cycles(&mut self, l: usize) -> usize {
        let mut search = CycleSearch::new(self.cg.num_channels());
        let mut breaks = 0;
        while let Some(cyc) = search.find(self.cg, &self.counts[l]) {
            // The weakest dependency on the cycle.
            let counts = &self.counts[l];
            let mut weakest: Option<(u32, usize)> = None;
            for i in 0..cyc.len() {
                let (a, b) = (cyc[i], cyc[(i + 1) % cyc.len()]);
                if let Some(d) = self.cg.dep(a, b) {
                    let c = counts[d];
                    if c > 0 && weakest.is_none_or(|w| c < w.0) {
                        weakest = Some((c, d));
                    }
                }
            }
            let Some((_, d)) = weakest else { break };
            breaks += 1;
            if self.move_routes(l, d) == 0 {
                break; // the dependency carries routes, so this cannot happen: no endless loop
            }
        }
        breaks
    }

    /// Tries to empty layer `top` after the cycles are broken: each of its routes, in order,
    /// moves to the lowest layer below that stays acyclic with it, or else (see
    /// [`Layering::make_room`]) to the lowest layer where moving the routes of one or a few of
    /// its dependencies to other layers below `top` makes room. All or nothing: if a route
    /// fits nowhere, or `budget` (channels plus dependencies searched, summed over the cycle
    /// searches) runs out, every move is undone and the layering is as it was. Returns the
    /// number of routes moved out of `top` if the layer was emptied.
    fn empty_top(&mut self, top: usize, budget: &mut u64) -> Option<usize> {
        self.build_trees();
        let ns = self.srcs.len();
        let mut moves: Vec<Move> = Vec::new();
        let mut out = 0;
        // Room is made only for a few stragglers.
        let few = self
            .layer
            .iter()
            .filter(|&&x| usize::from(x) == top)
            .count()
            <= MAKE_ROOM_ROUTES;
        for di in 0..self.dests.len() {
            for s in 0..ns {
                let r = di * ns + s;
                if usize::from(self.layer[r]) != top {
                    continue;
                }
                let deps = self.route_deps(r);
                let mut to = self.lowest_fit(0..top, &deps, budget);
                if to.is_none() && few {
                    to = (0..top).find(|&l| self.make_room(l, top, &deps, budget, &mut moves));
                }
                let Some(l) = to else {
                    self.undo(&mut moves, 0);
                    return None;
                };
                // `deps` are counted in layer l now.
                for &d in &deps {
                    self.counts[top][d] = self.counts[top][d].saturating_sub(1);
                }
                self.layer[r] = l as u8;
                moves.push(Move {
                    route: r,
                    from: top,
                    to: l,
                    deps,
                });
                out += 1;
            }
        }
        Some(out)
    }

    /// A route's dependencies, from its source switch up its destination's tree.
    fn route_deps(&self, r: usize) -> Vec<usize> {
        let (ns, n) = (self.srcs.len(), self.n);
        let (di, s) = (r / ns, r % ns);
        let mut deps = Vec::new();
        let mut x = self.srcs[s] as usize;
        while self.dep_up[di * n + x] != NONE && deps.len() < n {
            deps.push(self.dep_up[di * n + x] as usize);
            x = self.up[di * n + x] as usize;
        }
        deps
    }

    /// Counts `deps` in the first of `layers` (each acyclic) that stays acyclic with them, and
    /// returns it; `None`, with no layer changed, if none does or `budget` runs out.
    fn lowest_fit(
        &mut self,
        layers: impl Iterator<Item = usize>,
        deps: &[usize],
        budget: &mut u64,
    ) -> Option<usize> {
        for l in layers {
            for &d in deps {
                self.counts[l][d] += 1;
            }
            let found = self.cycle_through(l, deps, budget);
            if found == Some(None) {
                return Some(l);
            }
            for &d in deps {
                self.counts[l][d] -= 1;
            }
            found.as_ref()?;
        }
        None
    }

    /// Layer `l` was acyclic, then a route's `deps` were counted in it: a cycle it has now
    /// takes one of them that only that route carries (count 1), so a search from each such
    /// dependency's second channel for its first finds one if there is one. `Some(None)`: no
    /// cycle; `Some(Some(channels))`: one (each channel's dependency on the next, the last's
    /// on the first); `None`: `budget` (channels plus dependencies looked at) ran out.
    fn cycle_through(
        &mut self,
        l: usize,
        deps: &[usize],
        budget: &mut u64,
    ) -> Option<Option<Vec<u32>>> {
        let cg = self.cg;
        let counts = &self.counts[l];
        for &d in deps {
            if counts[d] != 1 {
                continue;
            }
            let Some((a, b)) = cg.dep_channels(d) else {
                continue;
            };
            self.epoch = self.epoch.wrapping_add(1);
            if self.epoch == 0 {
                self.seen.fill(0);
                self.epoch = 1;
            }
            let (seen, epoch, stack) = (&mut self.seen, self.epoch, &mut self.stack);
            stack.clear();
            stack.push((b, 0));
            seen[b as usize] = epoch;
            while let Some(top) = stack.last_mut() {
                let c = top.0;
                if c == a {
                    return Some(Some(stack.iter().map(|e| e.0).collect()));
                }
                // Successors y = b0 + j, entered by dependency d0 + j; top.1 is the next j.
                let (b0, d0, k) = cg.dep_row(c);
                let mut found = None;
                for j in top.1..k {
                    let y = b0 + j;
                    if counts[d0 + j as usize] > 0 && seen[y as usize] != epoch {
                        found = Some(j);
                        break;
                    }
                }
                let looked = u64::from(found.map_or(k, |j| j + 1).saturating_sub(top.1));
                *budget = budget.checked_sub(looked + 1)?;
                match found {
                    Some(j) => {
                        top.1 = j + 1;
                        let y = b0 + j;
                        seen[y as usize] = epoch;
                        stack.push((y, 0));
                    }
                    None => {
                        stack.pop();
                    }
                }
            }
        }
        Some(None)
    }

    /// A route of the top layer fits no lower layer: counts its `deps` in layer `l` and
    /// breaks the cycles that closes, one at a time (at most [`MAKE_ROOM_BREAKS`] + 1). A
    /// cycle is broken at the first of its dependencies, fewest routes first (the new route's
    /// alone are not candidates), whose routes all fit, as they are, other layers below
    /// `top`; they move there. On success the moves are in `moves` and `deps` stay counted
    /// in `l`; otherwise everything is as it was.
    fn make_room(
        &mut self,
        l: usize,
        top: usize,
        deps: &[usize],
        budget: &mut u64,
        moves: &mut Vec<Move>,
    ) -> bool {
        let mark = moves.len();
        for &d in deps {
            self.counts[l][d] += 1;
        }
        let mut ok = false;
        for _ in 0..=MAKE_ROOM_BREAKS {
            let Some(found) = self.cycle_through(l, deps, budget) else {
                break;
            };
            let Some(cyc) = found else {
                ok = true;
                break;
            };
            // The cycle's dependencies that carry routes besides the new one, weakest first:
            // the first whose routes all fit elsewhere breaks it.
            let mut cands: Vec<(u32, usize)> = Vec::new();
            for i in 0..cyc.len() {
                let Some(d) = self.cg.dep(cyc[i], cyc[(i + 1) % cyc.len()]) else {
                    continue;
                };
                let others = self.counts[l][d] - u32::from(deps.contains(&d));
                if others > 0 {
                    cands.push((others, d));
                }
            }
            cands.sort_unstable();
            let mut broken = false;
            for &(_, d) in &cands {
                let here = moves.len();
                if self.evacuate(l, top, d, budget, moves) {
                    broken = true;
                    break;
                }
                self.undo(moves, here);
            }
            if !broken {
                break;
            }
        }
        if !ok {
            self.undo(moves, mark);
            for &d in deps {
                self.counts[l][d] -= 1;
            }
        }
        ok
    }

    /// Moves every route of layer `l` through dependency `d` to another layer below `top`
    /// where it fits as it is; false (some moved, in `moves`) if one fits nowhere.
    fn evacuate(
        &mut self,
        l: usize,
        top: usize,
        d: usize,
        budget: &mut u64,
        moves: &mut Vec<Move>,
    ) -> bool {
        for q in self.routes_through(l, d) {
            let qdeps = self.route_deps(q);
            for &e in &qdeps {
                self.counts[l][e] -= 1;
            }
            let Some(m) = self.lowest_fit((0..top).filter(|&m| m != l), &qdeps, budget) else {
                for &e in &qdeps {
                    self.counts[l][e] += 1;
                }
                return false;
            };
            self.layer[q] = m as u8;
            moves.push(Move {
                route: q,
                from: l,
                to: m,
                deps: qdeps,
            });
        }
        true
    }

    /// Where the routes through dependency `dep` are, per destination whose tree takes it:
    /// (destination, start, length) of the subtree in `pre` of the switch the dependency's
    /// first channel leaves — the routes from the sources in it take the dependency.
    fn dep_subtrees(&self, dep: usize) -> Vec<(usize, usize, usize)> {
        let Some((a, b)) = self.cg.dep_channels(dep) else {
            return Vec::new();
        };
        let n = self.n;
        let v = self.cg.from_slot(a);
        let (u, _) = self.cg.to_slot(a);
        let (pa, pb) = (self.cg.port(a), self.cg.port(b));
        let (vs, ve) = (
            self.via_start[a as usize] as usize,
            self.via_start[a as usize + 1] as usize,
        );
        let mut out = Vec::with_capacity(ve - vs);
        for &di in &self.via[vs..ve] {
            let di = di as usize;
            if self.cols[di * n + u] != pb || self.cols[di * n + v] != pa {
                continue;
            }
            let t = self.tin[di * n + v];
            if t == NONE {
                continue; // v's route loops: it reaches no destination (not for shortest paths)
            }
            out.push((di, di * n + t as usize, self.size[di * n + v] as usize));
        }
        out
    }

    /// The routes of layer `l` through dependency `dep`.
    fn routes_through(&self, l: usize, dep: usize) -> Vec<usize> {
        let ns = self.srcs.len();
        let mut out = Vec::new();
        for (di, t, len) in self.dep_subtrees(dep) {
            for &x in &self.pre[t..t + len] {
                let s = self.src_of[x as usize];
                if s != u32::MAX && usize::from(self.layer[di * ns + s as usize]) == l {
                    out.push(di * ns + s as usize);
                }
            }
        }
        out
    }

    /// Undoes `moves[mark..]`, last first.
    fn undo(&mut self, moves: &mut Vec<Move>, mark: usize) {
        while moves.len() > mark {
            let Some(m) = moves.pop() else { break };
            for &d in &m.deps {
                self.counts[m.to][d] -= 1;
                self.counts[m.from][d] += 1;
            }
            self.layer[m.route] = m.from as u8;
        }
    }

    fn has_cycle(&self, l: usize) -> bool {
        match self.counts.get(l) {
            None => false,
            Some(counts) => {
                let mut search = CycleSearch::new(self.cg.num_channels());
                search.find(self.cg, counts).is_some()
            }
        }
    }
}

/// One route moved between layers by [`Layering::empty_top`], with its dependencies (so it
/// can be undone).
struct Move {
    route: usize,
    from: usize,
    to: usize,
    deps: Vec<usize>,
}

/// The most routes a top layer may hold for [`Layering::empty_top`] to make room for them.
const MAKE_ROOM_ROUTES: usize = 64;

/// How many cycles [`Layering::make_room`] breaks for one route, past the first, before it
/// gives up.
const MAKE_ROOM_BREAKS: usize = 4;

/// How much [`Layering::empty_top`] may search in one routing (channels plus dependencies,
/// summed over its cycle searches): a fraction of a second.
const EMPTY_TOP_BUDGET: u64 = 1 << 26;

/// The cycle search of [`Layering::break_cycles`]: OpenSM's depth-first search (roots in
/// channel order, successors in port order), the same walk and the same cycles as
/// [`super::cdg::find_cycle_resumable`], but it keeps its place between calls — it resumes at
/// the lowest channel it reset rather than rescanning from channel 0 — and its stack holds a
/// position among a channel's successors instead of a copy of them.
struct CycleSearch {
    /// 0 unvisited, 1 on the stack, 2 finished (stays finished: a layer only loses
    /// dependencies while it is searched).
    color: Vec<u8>,
    /// No channel below this one is unvisited.
    resume: usize,
    /// (channel, lowest successor channel not yet looked at).
    stack: Vec<(u32, u32)>,
}

impl CycleSearch {
    fn new(nch: usize) -> CycleSearch {
        CycleSearch {
            color: vec![0; nch],
            resume: 0,
            stack: Vec::new(),
        }
    }

    /// The next cycle of the graph whose dependencies are those with `counts[d] > 0`.
    fn find(&mut self, cg: &ChannelGraph, counts: &[u32]) -> Option<Vec<u32>> {
        let n = self.color.len();
        let next = |c: u32, from: u32| -> Option<u32> {
            let u = cg.to_slot(c).0;
            let (s, e) = cg.leaving_range(u);
            let s = s.max(from);
            (s..e).find(|&y| cg.dep(c, y).is_some_and(|d| counts[d] > 0))
        };
        let (color, stack) = (&mut self.color, &mut self.stack);
        for root in self.resume..n {
            if color[root] != 0 {
                continue;
            }
            color[root] = 1;
            stack.clear();
            stack.push((root as u32, 0));
            while let Some(top) = stack.last_mut() {
                let Some(y) = next(top.0, top.1) else {
                    color[top.0 as usize] = 2;
                    stack.pop();
                    continue;
                };
                top.1 = y + 1;
                match color[y as usize] {
                    0 => {
                        color[y as usize] = 1;
                        stack.push((y, 0));
                    }
                    1 => {
                        let pos = stack.iter().position(|e| e.0 == y).unwrap_or(0);
                        let cyc = stack[pos..].iter().map(|e| e.0).collect();
                        let mut low = root;
                        for e in stack.iter() {
                            color[e.0 as usize] = 0;
                            low = low.min(e.0 as usize);
                        }
                        stack.clear();
                        self.resume = low;
                        return Some(cyc);
                    }
                    _ => {}
                }
            }
        }
        self.resume = n;
        None
    }
}

fn hash2(a: u64, b: u64) -> u64 {
    let mut x = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

impl RoutingEngine for Sssp {
    fn name(&self) -> &'static str {
        self.name_str()
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
            "dfsssp_build_graph",
            log,
        );
        let hm = HopMatrix::from_graph(g);
        let g = hm.graph();
        let n = g.switch_count();
        // OpenSM's dry run: every switch must be reachable (ERR AD0C).
        let reached = hm.row(0).iter().filter(|&&h| h != UNREACHABLE).count();
        if reached != n {
            return Err(self.fail(format!(
                "ERR AD0C: unsupported network state (detached and inaccessible switches found: {reached} of {n} reachable)"
            )));
        }
        let ep = Endpoints::collect(subnet, g, &self.opts, log);
        let (lfts, weight) = route_sssp(subnet, &hm, &ep, self.plain);
        let loads = channel_loads(subnet, g, &weight, ep.dests.len());
        if !self.deadlock_free {
            log.push(
                "dfsssp_do_dijkstra_routing: SSSP routing specified -> skipping deadlock removal thru dfsssp_remove_deadlocks(...)"
                    .to_string(),
            );
            return Ok(Routes::new(lfts).with_mcast_loads(loads));
        }
        let budget = self.opts.vl_budget(subnet);
        let mut avail = budget.min_sw_data_vls.clamp(1, 15);
        if !self.opts.qos && avail > 1 {
            log.push(format!(
                "dfsssp_remove_deadlocks: QoS is off: SL-to-VL is not programmed, so only VL0 of the {avail} available is usable (enable -Q for more)"
            ));
            avail = 1;
        }
        log.push(format!(
            "dfsssp_remove_deadlocks: Virtual Lanes available: {avail}"
        ));
        let cg = ChannelGraph::new(g);
        let mut src_of = vec![u32::MAX; n];
        let mut srcs = Vec::new();
        for (a, &c) in ep.cas.iter().enumerate() {
            if c > 0 {
                src_of[a] = srcs.len() as u32;
                srcs.push(a as u32);
            }
        }
        let dests: Vec<u16> = ep.dests.iter().filter(|d| d.ca).map(|d| d.lid).collect();
        let cols = lft_columns(g, &lfts, &dests);
        let mut lay = Layering {
            cg: &cg,
            src_of,
            layer: vec![0; srcs.len() * dests.len()],
            up: Vec::new(),
            dep_up: Vec::new(),
            pre: Vec::new(),
            tin: Vec::new(),
            size: Vec::new(),
            via_start: Vec::new(),
            via: Vec::new(),
            seen: vec![0; cg.num_channels()],
            epoch: 0,
            stack: Vec::new(),
            srcs,
            dests,
            cols,
            n,
            counts: Vec::new(),
        };
        lay.fill_layer0();
        let avail_u = usize::from(avail);
        let mut needed = 1usize;
        for l in 0..avail_u.saturating_sub(1) {
            if lay.counts.len() <= l {
                break;
            }
            if lay.break_cycles(l) > 0 {
                needed = needed.max(l + 2);
            }
        }
        if lay.has_cycle(avail_u - 1) {
            needed = avail_u + 1;
        }
        // Breaking a cycle moves every route through one dependency at once, and on their own
        // many of them would fit a lower layer: try to empty the top layer, one route at a
        // time, while that works (within a bounded amount of searching).
        let mut budget = EMPTY_TOP_BUDGET;
        while needed >= 2 && needed <= avail_u {
            let Some(routes) = lay.empty_top(needed - 1, &mut budget) else {
                break;
            };
            needed -= 1;
            // The searches from the new dependencies alone answered for the whole layers.
            debug_assert!(
                (0..needed).all(|l| !lay.has_cycle(l)),
                "a layer has a cycle after emptying lane {needed}"
            );
            log.push(format!(
                "dfsssp_remove_deadlocks: {routes} route{} of lane {needed} moved to lower lanes",
                if routes == 1 { "" } else { "s" }
            ));
        }
        log.push(format!(
            "dfsssp_remove_deadlocks: Virtual Lanes needed: {needed}"
        ));
        if needed > avail_u {
            return Err(self.fail(format!(
                "ERR AD25: Not enough VLs available (avail={avail}, needed={needed}); Stopping dfsssp routing!"
            )));
        }
        // Paths per layer, then spare VLs to the fullest layers (OpenSM vl_split_count).
        let nsrc = lay.srcs.len();
        let mut paths = vec![0u64; needed];
        for &l in &lay.layer {
            paths[usize::from(l)] += 1;
        }
        let mut split = vec![1u64; needed];
        for _ in needed..avail_u {
            let mut best = 0;
            let mut most = -1.0f64;
            for l in 0..needed {
                let avg = paths[l] as f64 / split[l] as f64;
                if avg > most {
                    most = avg;
                    best = l;
                }
            }
            split[best] += 1;
        }
        let mut first = vec![0u64; needed];
        for l in 1..needed {
            first[l] = first[l - 1] + split[l - 1];
        }
        for (l, p) in paths.iter().enumerate() {
            log.push(format!(
                "dfsssp_remove_deadlocks:    {l}. lane: {p} paths on SL {}..={}",
                first[l],
                first[l] + split[l] - 1
            ));
        }
        let mut sls = PathSls::per_source_switch(subnet, g.slots(), lfts.top());
        for (s, &a) in lay.srcs.iter().enumerate() {
            let Some(sw) = g.switch_at(a as usize) else {
                continue;
            };
            let Some(row) = sls.switch_row_mut(sw) else {
                continue;
            };
            for (di, &dl) in lay.dests.iter().enumerate() {
                let l = usize::from(lay.layer[di * nsrc + s]);
                let sl = first[l] + hash2(u64::from(a), u64::from(dl)) % split[l];
                if let Some(e) = row.get_mut(usize::from(dl)) {
                    *e = sl as u8;
                }
            }
        }
        Ok(Routes::new(lfts).with_path_sl(sls).with_mcast_loads(loads))
    }
}

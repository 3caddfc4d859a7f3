//! LASH, LAyered SHortest path routing (OpenSM `lash`, `osm_ucast_lash.c`; Skeie, Lysne and
//! Theiss, CAC 2002): shortest switch-to-switch paths grouped into layers (SLs) so that no
//! layer's channel dependency graph has a cycle.
//!
//! # Paths
//! As OpenSM: a breadth-first tree from every switch in turn (switches in GUID order, links in
//! port order); the first tree in which switch `y` lies below switch `x` gives `x`'s next hop
//! toward `y` (the first port to that child). Every route is therefore a shortest path, and
//! every CA behind a switch is reached through the switch's route. With `do_mesh_analysis`,
//! parallel links between two switches count as one link and the LIDs behind the far switch
//! are spread over them round-robin (OpenSM's mesh analysis also reorders ports by dimension;
//! that reordering is not done).
//!
//! # Layers
//! Switch pairs are taken in order; each pair's two paths (both directions, which LASH keeps on
//! one SL) go on the first layer whose dependency graph stays acyclic with them; when none
//! does, a new layer opens, and if that exceeds the usable VLs the engine fails with OpenSM's
//! "ERR 4D02: Lane requirements (n) exceed available lanes (m)". Acyclicity is kept
//! incrementally ([`super::cdg::DynTopo`]) rather than by OpenSM's full search per pair, which
//! is what makes OpenSM's lash take minutes at k24. Then, as OpenSM's `balance_virtual_lanes`,
//! pairs move at random (from the engine's RNG, so reproducibly) from the fullest layer to the
//! emptiest while their paths fit, until the layers differ by fewer than 6 pairs or no more
//! moves are possible.
//!
//! Only pairs of switches that have CAs are layered: no data traffic starts or ends at the
//! others. That mostly saves lanes, but first fit over a different sequence of pairs can also
//! end a lane higher; so where some switch has no CA and the layering took two lanes or more,
//! every pair of switches is layered again as OpenSM does (capped one lane lower), and kept if
//! it fits. The SL of a path is its layer plus `lash_start_vl`; paths within one switch, and
//! paths to or from switches without CAs, get `lash_start_vl` (their own pair's layer where
//! the every-pair layering was kept). SL-to-VL is left to the QoS configuration (OpenSM's
//! lash has no `update_sl2vl`); with `qos` off only one layer is usable. With LMC > 0 every
//! LID of a port takes its switch's path and SL, as OpenSM 3.3.23's lash routes them
//! (`populate_fwd_tbls` looks each LID up; the LMC check its documentation mentions, "LMC > 0
//! is not supported by the LASH routing", is not in the code).

// Loop indices here are node, switch or channel ids that index several parallel arrays at
// once (CSR offsets, ranks, parents); an iterator over one of them would hide that.
#![allow(clippy::needless_range_loop)]

use ibmad::{Lid, PortNum};
use rand::Rng;

use super::cdg::{ChannelGraph, DynTopo, NONE};
use super::graph::{link_usable, SwitchGraph};
use super::vl::PathSls;
use super::{max_lid, EngineOptions, Lfts, RouteError, Routes, RoutingEngine};
use crate::subnet::Subnet;

/// The lash engine.
#[derive(Clone, Debug, Default)]
pub struct Lash {
    opts: EngineOptions,
}

impl Lash {
    /// With options (`lash_start_vl`, `do_mesh_analysis`, `qos`, `max_op_vls`).
    #[must_use]
    pub fn new(opts: EngineOptions) -> Lash {
        Lash { opts }
    }
}

fn fail(reason: String) -> RouteError {
    RouteError::Unroutable {
        engine: "lash",
        reason,
    }
}

/// Next-hop channel per (switch, destination switch), `NONE` when unreachable or the same.
pub(crate) fn bfs_tree_routes(g: &SwitchGraph, order: &[usize]) -> Vec<u32> {
    let n = g.switch_count();
    let mut route = vec![NONE; n * n];
    let mut parent = vec![NONE; n]; // channel from parent into the node
    let mut pnode = vec![0usize; n];
    let mut seen = vec![false; n];
    let mut q: Vec<u32> = Vec::with_capacity(n);
    let chans = g.channels();
    for &i in order {
        seen.fill(false);
        parent.fill(NONE);
        q.clear();
        q.push(i as u32);
        seen[i] = true;
        let mut head = 0;
        while let Some(&u) = q.get(head) {
            head += 1;
            let u = u as usize;
            for c in g.first_channel(u)..g.first_channel(u + 1) {
                let v = chans[c].to as usize;
                if !seen[v] {
                    seen[v] = true;
                    parent[v] = c as u32;
                    pnode[v] = u;
                    q.push(v as u32);
                }
            }
        }
        for &y in &q {
            let y = y as usize;
            let mut c = parent[y];
            let mut x = pnode[y];
            while c != NONE {
                // c goes x → child; x's route to y is c unless set by an earlier tree.
                let e = &mut route[x * n + y];
                if *e == NONE {
                    *e = c;
                }
                c = parent[x];
                x = pnode[x];
            }
        }
    }
    route
}

impl RoutingEngine for Lash {
    fn name(&self) -> &'static str {
        "lash"
    }

    fn route_logged(
        &self,
        subnet: &Subnet,
        rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        let g = SwitchGraph::build(subnet);
        let n = g.switch_count();
        let budget = self.opts.vl_budget(subnet);
        let mut vl_min = budget.min_sw_data_vls.clamp(1, 15);
        if !self.opts.qos && vl_min > 1 {
            log.push(format!(
                "discover_network_properties: QoS is off: SL-to-VL is not programmed, so only one of the {vl_min} VLs is usable (enable -Q for more)"
            ));
            vl_min = 1;
        }
        let start = self.opts.lash_start_vl;
        if start >= vl_min {
            return Err(fail(format!(
                "ERR 4D03: Start VL({start}) too high for min operational vl({vl_min})"
            )));
        }
        let lanes_avail = usize::from(vl_min - start);
        log.push(format!(
            "discover_network_properties: min operational vl({lanes_avail}) start vl({start}) max_switches({n})"
        ));
        // Switch order: GUID order as OpenSM's sw_guid_tbl.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&a| {
            g.switch_at(a)
                .map_or(0, |s| subnet.node(s).guid.0.swap_bytes())
        });
        let route = bfs_tree_routes(&g, &order);
        let cg = ChannelGraph::new(&g);
        // Switches with CAs, and the CA LIDs behind every switch.
        let mut has_ca = vec![false; n];
        let mut cas: Vec<Vec<(u16, u8)>> = vec![Vec::new(); n];
        for (a, &sw) in g.slots().switches().iter().enumerate() {
            for p in 1..=subnet.node(sw).num_ports {
                let Some((rn, rp)) = subnet.port(sw, PortNum(p)).and_then(|x| x.remote) else {
                    continue;
                };
                if subnet.node(rn).is_switch() || !link_usable(subnet, sw, PortNum(p)) {
                    continue;
                }
                if let Some(rport) = subnet.port(rn, rp) {
                    if rport.lid != Lid::UNASSIGNED {
                        has_ca[a] = true;
                        cas[a].extend(rport.lids().map(|l| (l, p)));
                    }
                }
            }
        }
        let ca_sw: Vec<usize> = order.iter().copied().filter(|&a| has_ca[a]).collect();
        // Unreachable CA switch pairs: LASH needs a connected fabric.
        for &a in &ca_sw {
            for &b in &ca_sw {
                if a != b && route[a * n + b] == NONE {
                    return Err(fail(format!(
                        "switch {} cannot reach switch {}",
                        describe(subnet, &g, a),
                        describe(subnet, &g, b)
                    )));
                }
            }
        }
        let (mut lanes, mut lane_of) = match first_fit(&cg, &route, n, &ca_sw, lanes_avail) {
            Ok(fit) => fit,
            Err(FitError::Lanes(k)) => {
                return Err(fail(format!(
                    "ERR 4D02: Lane requirements ({k}) exceed available lanes ({lanes_avail}) with starting lane ({start})"
                )))
            }
            Err(FitError::EmptyLane) => {
                return Err(fail("a pair does not fit an empty lane".to_string()))
            }
        };
        // OpenSM layers every pair of switches, those without CAs too. Here their pairs carry
        // no data and are left out, which mostly saves lanes, but first fit over a different
        // sequence of pairs can also end a lane higher: where some switch has no CA, every
        // pair is tried as OpenSM does, and kept if it needs fewer lanes.
        let mut layered = ca_sw;
        let reachable = || {
            order
                .iter()
                .all(|&a| order.iter().all(|&b| a == b || route[a * n + b] != NONE))
        };
        if lanes.count() >= 2 && layered.len() < order.len() && reachable() {
            let fewer = lanes.count() - 1;
            if let Ok((l, of)) = first_fit(&cg, &route, n, &order, fewer) {
                log.push(format!(
                    "lash_core: every switch pair layered needs {} lanes, the pairs of switches with CAs {}: all pairs kept",
                    l.count(),
                    lanes.count()
                ));
                (lanes, lane_of, layered) = (l, of, order.clone());
            }
        }
        let needed = lanes.count().max(1);
        for (v, c) in lanes.pairs.iter().enumerate() {
            log.push(format!("lash_core: Lanes in layer {v}: {}", 2 * c));
        }
        log.push(format!("lash_core: Lanes needed: {needed}, Balancing"));
        lanes.balance(&layered, &mut lane_of, rng);
        for (v, c) in lanes.pairs.iter().enumerate() {
            log.push(format!("lash_core: Lanes in layer {v}: {}", 2 * c));
        }
        // LFTs.
        let top = max_lid(subnet);
        let mut lfts = Lfts::with_slots(g.slots().clone(), top);
        let chans = g.channels();
        let mesh = self.opts.do_mesh_analysis;
        // Each switch's own LIDs (more than one only on an enhanced port 0 with LMC > 0).
        let own_lids: Vec<Vec<u16>> = (0..n)
            .map(|b| {
                g.switch_at(b)
                    .and_then(|s| subnet.port(s, PortNum(0)))
                    .map_or_else(Vec::new, |p| p.lids().collect())
            })
            .collect();
        let mut par: Vec<Vec<usize>> = Vec::new();
        for a in 0..n {
            let Some(sw) = g.switch_at(a) else { continue };
            let (first, last) = (g.first_channel(a), g.first_channel(a + 1));
            // Channels of `a` to the same neighbour as each channel (mesh analysis).
            par.clear();
            for c in first..last {
                par.push(
                    (first..last)
                        .filter(|&x| chans[x].to == chans[c].to)
                        .collect(),
                );
            }
            let mut rr: Vec<u32> = vec![0; last - first];
            let Some(row) = lfts.table_mut(sw) else {
                continue;
            };
            let mut set = |l: u16, p: u8| {
                if let Some(e) = row.get_mut(usize::from(l)) {
                    *e = p;
                }
            };
            for b in 0..n {
                if b == a {
                    for &(l, p) in &cas[a] {
                        set(l, p);
                    }
                    for &l in &own_lids[a] {
                        set(l, 0);
                    }
                    continue;
                }
                let c = route[a * n + b];
                if c == NONE {
                    continue;
                }
                let c = c as usize;
                let group = &par[c - first];
                let port = |rr: &mut [u32]| {
                    if mesh && group.len() > 1 {
                        let k = &mut rr[c - first];
                        let p = chans[group[*k as usize % group.len()]].port;
                        *k += 1;
                        p
                    } else {
                        chans[c].port
                    }
                };
                for &(l, _) in &cas[b] {
                    let p = port(&mut rr);
                    set(l, p);
                }
                for &l in &own_lids[b] {
                    let p = port(&mut rr);
                    set(l, p);
                }
            }
        }
        // Path SLs: per (source switch, destination switch).
        let mut sls = PathSls::per_source_switch(subnet, g.slots(), top);
        let mut dst_slot = vec![u32::MAX; usize::from(top.0) + 1];
        for b in 0..n {
            for l in cas[b]
                .iter()
                .map(|&(l, _)| l)
                .chain(own_lids[b].iter().copied())
            {
                if let Some(e) = dst_slot.get_mut(usize::from(l)) {
                    *e = b as u32;
                }
            }
        }
        for a in 0..n {
            let Some(sw) = g.switch_at(a) else { continue };
            let Some(row) = sls.switch_row_mut(sw) else {
                continue;
            };
            for (l, e) in row.iter_mut().enumerate() {
                let b = dst_slot[l];
                *e = if b == u32::MAX {
                    start
                } else {
                    let v = lane_of[a * n + b as usize];
                    if v == u8::MAX {
                        start
                    } else {
                        start + v
                    }
                };
            }
        }
        Ok(Routes::new(lfts).with_path_sl(sls))
    }
}

fn describe(subnet: &Subnet, g: &SwitchGraph, a: usize) -> String {
    g.switch_at(a).map_or_else(
        || format!("slot {a}"),
        |s| {
            let nd = subnet.node(s);
            format!("0x{:016x} '{}'", nd.guid.0, nd.desc)
        },
    )
}

/// One dependency of a path: its id and its (arriving, leaving) channels.
#[derive(Clone, Copy, Debug)]
struct Dep {
    id: u32,
    a: u32,
    b: u32,
}

/// Why [`first_fit`] stopped.
enum FitError {
    /// A pair needed this many lanes, more than allowed.
    Lanes(usize),
    /// A pair's paths do not fit a lane of their own (a loop in the routes themselves).
    EmptyLane,
}

/// LASH's layering: each pair of `sws` (in order; both directions on one lane) goes on the
/// first lane whose dependency graph stays acyclic with it, a new lane opening where none
/// does, at most `cap` lanes. The lanes and each pair's lane (`lane_of[a * n + b]`,
/// `u8::MAX` for pairs not layered).
fn first_fit<'a>(
    cg: &'a ChannelGraph,
    route: &'a [u32],
    n: usize,
    sws: &[usize],
    cap: usize,
) -> Result<(Lanes<'a>, Vec<u8>), FitError> {
    let mut lanes = Lanes::new(cg, route, n);
    let mut lane_of = vec![u8::MAX; n * n];
    let mut deps = Vec::new();
    for (ia, &a) in sws.iter().enumerate() {
        for &b in &sws[ia + 1..] {
            lanes.pair_deps(a, b, &mut deps);
            let v = match (0..lanes.count()).find(|&v| lanes.try_add_pair(v, &deps)) {
                Some(v) => v,
                None => {
                    let v = lanes.count();
                    if v + 1 > cap {
                        return Err(FitError::Lanes(v + 1));
                    }
                    lanes.open();
                    if !lanes.try_add_pair(v, &deps) {
                        return Err(FitError::EmptyLane);
                    }
                    v
                }
            };
            lane_of[a * n + b] = v as u8;
            lane_of[b * n + a] = v as u8;
        }
    }
    Ok((lanes, lane_of))
}

/// Layers: dependency counts and orders per lane.
struct Lanes<'a> {
    cg: &'a ChannelGraph,
    route: &'a [u32],
    n: usize,
    counts: Vec<Vec<u32>>,
    topo: Vec<DynTopo>,
    /// Pairs per lane.
    pairs: Vec<u64>,
    /// Per lane: how many times a dependency left its graph (it only gains them otherwise).
    epoch: Vec<u32>,
}

impl<'a> Lanes<'a> {
    fn new(cg: &'a ChannelGraph, route: &'a [u32], n: usize) -> Lanes<'a> {
        Lanes {
            cg,
            route,
            n,
            counts: Vec::new(),
            topo: Vec::new(),
            pairs: Vec::new(),
            epoch: Vec::new(),
        }
    }

    fn count(&self) -> usize {
        self.counts.len()
    }

    fn open(&mut self) {
        self.counts.push(vec![0; self.cg.num_deps()]);
        self.topo.push(DynTopo::new(self.cg));
        self.pairs.push(0);
        self.epoch.push(0);
    }

    /// The dependencies of the path a → b, in order, appended to `out`.
    fn path_deps(&self, a: usize, b: usize, out: &mut Vec<Dep>) {
        let mut x = a;
        let mut prev: Option<u32> = None;
        let mut guard = 0;
        while x != b {
            let c = self.route[x * self.n + b];
            if c == NONE {
                break;
            }
            if let Some(p) = prev {
                if let Some(d) = self.cg.dep(p, c) {
                    out.push(Dep {
                        id: d as u32,
                        a: p,
                        b: c,
                    });
                }
            }
            prev = Some(c);
            x = self.cg.to_slot(c).0;
            guard += 1;
            if guard > self.n {
                break;
            }
        }
    }

    /// Both paths of {a, b} (LASH keeps them on one lane).
    fn pair_deps(&self, a: usize, b: usize, out: &mut Vec<Dep>) {
        out.clear();
        self.path_deps(a, b, out);
        self.path_deps(b, a, out);
    }

    /// Adds the dependencies `deps` (one pair's) to lane `v` if that keeps it acyclic.
    fn try_add_pair(&mut self, v: usize, deps: &[Dep]) -> bool {
        let counts = &mut self.counts[v];
        let topo = &mut self.topo[v];
        for (done, dep) in deps.iter().enumerate() {
            let d = dep.id as usize;
            if counts[d] == 0 && !topo.try_add(self.cg, dep.a, dep.b) {
                for dep in &deps[..done] {
                    let d = dep.id as usize;
                    counts[d] -= 1;
                    if counts[d] == 0 {
                        topo.remove(self.cg, dep.a, dep.b);
                    }
                }
                return false;
            }
            counts[d] += 1;
        }
        self.pairs[v] += 1;
        true
    }

    /// Takes the dependencies `deps` (one pair's, on lane `v`) off the lane. A dependency
    /// that leaves the lane's graph advances the lane's epoch.
    fn remove_pair(&mut self, v: usize, deps: &[Dep]) {
        let counts = &mut self.counts[v];
        for dep in deps {
            let d = dep.id as usize;
            if counts[d] > 0 {
                counts[d] -= 1;
                if counts[d] == 0 {
                    self.topo[v].remove(self.cg, dep.a, dep.b);
                    self.epoch[v] += 1;
                }
            }
        }
        self.pairs[v] = self.pairs[v].saturating_sub(1);
    }

    /// OpenSM's `balance_virtual_lanes` (see the module docs).
    fn balance(&mut self, layered: &[usize], lane_of: &mut [u8], rng: &mut dyn rand::RngCore) {
        const LIMIT: u64 = 6;
        let k = self.count();
        if k < 2 {
            return;
        }
        let n = self.n;
        let mut pairs: Vec<Vec<(u32, u32)>> = vec![Vec::new(); k];
        for (i, &a) in layered.iter().enumerate() {
            for &b in &layered[i + 1..] {
                let v = lane_of[a * n + b];
                if usize::from(v) < k {
                    pairs[usize::from(v)].push((a as u32, b as u32));
                }
            }
        }
        let pick_lanes = |p: &[u64]| {
            let mut mx = 0;
            let mut mn = 0;
            for i in 0..p.len() {
                if p[i] > p[mx] {
                    mx = i;
                }
                if p[i] < p[mn] {
                    mn = i;
                }
            }
            (mx, mn)
        };
        let (mut mx, mut mn) = pick_lanes(&self.pairs);
        // Pairs of the fullest lane not yet tried for the current (fullest, emptiest) lanes.
        let mut untried: Vec<(u32, u32)> = pairs[mx].clone();
        let mut deps = Vec::new();
        // Pairs (a, b), a before b in `layered`, numbered densely.
        let nsw = layered.len();
        let npairs = nsw * nsw.saturating_sub(1) / 2;
        let mut index = vec![0usize; n];
        for (i, &a) in layered.iter().enumerate() {
            index[a] = i;
        }
        let pair_key = |a: u32, b: u32| {
            let (i, j) = (index[a as usize], index[b as usize]);
            i * (2 * nsw - i - 1) / 2 + (j - i - 1)
        };
        // Per (lane, pair): 1 + the lane's epoch when it refused the pair, 0 if it has not.
        let mut refused = vec![0u32; k * npairs];
        // Per pair: its index in its lane's list.
        let mut at = vec![0u32; npairs];
        for list in &pairs {
            for (i, &(a, b)) in list.iter().enumerate() {
                at[pair_key(a, b)] = i as u32;
            }
        }
        while self.pairs[mx] - self.pairs[mn] >= LIMIT && !untried.is_empty() {
            let i = rng.gen_range(0..untried.len());
            let (a, b) = untried.swap_remove(i);
            // A pair refused by a lane is refused again while that lane only gains edges.
            let pk = pair_key(a, b);
            let key = mn * npairs + pk;
            if refused[key] == self.epoch[mn] + 1 {
                continue;
            }
            self.pair_deps(a as usize, b as usize, &mut deps);
            if !self.try_add_pair(mn, &deps) {
                refused[key] = self.epoch[mn] + 1;
                continue;
            }
            self.remove_pair(mx, &deps);
            lane_of[a as usize * n + b as usize] = mn as u8;
            lane_of[b as usize * n + a as usize] = mn as u8;
            let pos = at[pk] as usize;
            if pos < pairs[mx].len() {
                pairs[mx].swap_remove(pos);
                if let Some(&(c, d)) = pairs[mx].get(pos) {
                    at[pair_key(c, d)] = pos as u32;
                }
            }
            at[pk] = pairs[mn].len() as u32;
            pairs[mn].push((a, b));
            let (nmx, nmn) = pick_lanes(&self.pairs);
            if (nmx, nmn) != (mx, mn) {
                mx = nmx;
                mn = nmn;
                untried.clear();
                untried.extend_from_slice(&pairs[mx]);
            }
        }
    }
}

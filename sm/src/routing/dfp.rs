//! Dragonfly+ routing, `dfp` and `dfp2` (the MLNX SM engines the seed describes, 000:L427–L538;
//! upstream OpenSM has none): minimal routes in the tables, min-hop+1 alternatives in adaptive
//! routing groups, and a VL increment where a packet turns from one global link onto another.
//!
//! # Islands
//! The roots (the top switches of every island) come from `root_guid_file` (switch node GUIDs;
//! a CA GUID stands for the switch it is cabled to); without one, `dfp` takes the switches
//! without CAs as roots, and `dfp2` refuses (its islands need the file, as in MLNX SM). Links
//! between two roots are *global*; the islands are what remains connected without them, and
//! each switch's rank is its distance from its island's roots. `dfp` requires two-level islands
//! (every other switch is one hop below the roots and has no link to another non-root); `dfp2`
//! takes islands of any depth, routed up then down within an island as a fat tree.
//!
//! # Routes toward a destination switch `t` in island B
//! * In B: up toward an ancestor of `t`, then down (the shortest such route).
//! * A root of another island with a global link to an ancestor-root of B: that link (*direct*).
//! * A root without one: a global link to a root of a third island that has a direct link
//!   (one extra hop; the packet turns from global to global there).
//! * Below the roots of another island: up toward a root with a direct link if the island has
//!   one, else toward one with the extra hop.
//!
//! Toward a switch without CAs (a root, or a middle switch of a `dfp2` island) the routes
//! carry only traffic to the switch itself (LID-routed SMPs on VL 15, GMPs to its port 0), and
//! two rules are relaxed: a switch of B that can neither go down to `t` nor up to one of its
//! ancestors (another root of B, when `t` is a root) goes down first, to a switch that can;
//! and a global link may enter B at any root that has such a route, not only at an ancestor
//! of `t`. Where failed links leave a switch without a route by these rules (a leaf whose
//! link to the root `t` is down), it goes to any neighbour already routed, nearest first; so
//! does a switch without CAs toward any destination (its own traffic, to the SM). These
//! routes are not part of the credit-loop argument below (the verifier's credit-loop check
//! covers CA-to-CA routes; CA-to-switch routes are checked for dead ends and loops). Toward
//! switches with CAs no route turns down→up.
//!
//! Destinations behind one switch are spread over equal choices by min-hop's balancing
//! ([`super::minhop`]). The adaptive-routing group ([`super::ar`]) of a switch for a CA
//! destination holds every legal choice of the same kind — at a source-island switch also the
//! up-links toward roots without a direct link, and at a root also the global links toward
//! third-island roots that have one: the Min Hop + 1 paths of the seed (000:L430, L654) —
//! and applies only to packets that arrived from below (a CA or a lower switch of the island),
//! so a packet takes at most one detour and turns global→global at most once.
//!
//! # VLs
//! SL-to-VL on every switch and CA: SL *s* uses the VL pair 2*s* (and 2*s*+1 after a
//! global→global turn), pairs repeating when SLs outnumber them (000:L473: with 4 VLs, SL 0 →
//! VL 0/1, SL 1 → VL 2/3). Before the turn a route runs up, over at most one global link and
//! down, an order no credit loop can close; after it, only a global link and down links remain,
//! on the odd VL: no loop either (000:L481–L489; see the seed digest §7 E9–E10 for why the
//! increment is an SL-to-VL entry per input/output port pair, not a packet rewrite, and why a
//! second turn is not allowed). With one data VL the engine uses no turns: no detour groups, and
//! it fails if an island pair has no direct global link. Path SLs are not decided (SL 0, or
//! what the QoS policy grants; every SL maps to its VL pair).

// Loop indices here are node, switch or channel ids that index several parallel arrays at
// once (CSR offsets, ranks, parents); an iterator over one of them would hide that.
#![allow(clippy::needless_range_loop)]

use ibmad::{Lid, PortNum};

use super::ar::{ArTables, PortMask};
use super::graph::{link_usable, Candidates, SwitchGraph};
use super::minhop::{balance, scatter_seed};
use super::updn::parse_guid_file;
use super::vl::{sl2vl_from, Sl2VlTables, NUM_SLS};
use super::{max_lid, EngineOptions, RouteError, Routes, RoutingEngine};
use crate::subnet::Subnet;

const INF: u32 = u32::MAX;

/// `dfp` (two-level islands) or `dfp2` (islands of any depth).
#[derive(Clone, Debug, Default)]
pub struct Dfp {
    opts: EngineOptions,
    any_depth: bool,
}

impl Dfp {
    /// `dfp`: two-level islands ([`Dfp::dfp2`]: islands of any depth).
    #[must_use]
    pub fn new(opts: EngineOptions) -> Dfp {
        Dfp {
            opts,
            any_depth: false,
        }
    }

    /// `dfp2`.
    #[must_use]
    pub fn dfp2(opts: EngineOptions) -> Dfp {
        Dfp {
            opts,
            any_depth: true,
        }
    }

    fn name_str(&self) -> &'static str {
        if self.any_depth {
            "dfp2"
        } else {
            "dfp"
        }
    }

    fn fail(&self, reason: String) -> RouteError {
        RouteError::Unroutable {
            engine: self.name_str(),
            reason,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Up,
    Down,
    Global,
    Other,
}

/// The Dragonfly+ structure of a fabric.
struct Structure {
    is_root: Vec<bool>,
    island: Vec<u32>,
    rank: Vec<u32>,
    /// Per channel.
    kind: Vec<Kind>,
    islands: usize,
}

fn describe(subnet: &Subnet, g: &SwitchGraph, a: usize) -> String {
    g.switch_at(a).map_or_else(String::new, |s| {
        let nd = subnet.node(s);
        format!("0x{:016x} '{}'", nd.guid.0, nd.desc)
    })
}

impl Dfp {
    fn roots(
        &self,
        subnet: &Subnet,
        g: &SwitchGraph,
        log: &mut Vec<String>,
    ) -> Result<Vec<bool>, RouteError> {
        let n = g.switch_count();
        let mut is_root = vec![false; n];
        match &self.opts.root_guid_file {
            Some(f) => {
                let text = f.contents.as_ref().map_err(|e| {
                    self.fail(format!("cannot read root guid file '{}': {e}", f.path))
                })?;
                let guids = parse_guid_file(text).map_err(|e| {
                    self.fail(format!("cannot parse root guids file '{}': {e}", f.path))
                })?;
                for (line, guid) in guids {
                    let node = subnet.node_by_guid(guid).or_else(|| {
                        // A CA port or node GUID: the switch it is cabled to.
                        subnet.end_ports().find_map(|(nd, p)| {
                            let port = subnet.port(nd, p)?;
                            (subnet.node(nd).guid == guid || port.guid == guid)
                                .then_some(port.remote?.0)
                        })
                    });
                    let slot = node.and_then(|x| {
                        let s = if subnet.node(x).is_switch() {
                            x
                        } else {
                            subnet
                                .port(x, PortNum(1))
                                .and_then(|p| p.remote)
                                .map(|r| r.0)?
                        };
                        g.index_of(s)
                    });
                    match slot {
                        Some(a) => is_root[a] = true,
                        None => log.push(format!(
                            "{}: root guid file line {line}: no switch with GUID 0x{:016x}",
                            self.name_str(),
                            guid.0
                        )),
                    }
                }
            }
            None if self.any_depth => {
                return Err(self.fail(
                    "dfp2 needs a root_guid_file naming the roots of every Dragonfly+ island"
                        .to_string(),
                ))
            }
            None => {
                for (a, &sw) in g.slots().switches().iter().enumerate() {
                    is_root[a] = !(1..=subnet.node(sw).num_ports).any(|p| {
                        subnet
                            .port(sw, PortNum(p))
                            .and_then(|x| x.remote)
                            .is_some_and(|(rn, _)| !subnet.node(rn).is_switch())
                    });
                }
            }
        }
        if !is_root.iter().any(|&r| r) {
            return Err(self.fail("no root switches".to_string()));
        }
        Ok(is_root)
    }

    fn structure(
        &self,
        subnet: &Subnet,
        g: &SwitchGraph,
        is_root: Vec<bool>,
    ) -> Result<Structure, RouteError> {
        let n = g.switch_count();
        let chans = g.channels();
        let global = |a: usize, c: usize| is_root[a] && is_root[chans[c].to as usize];
        let mut island = vec![u32::MAX; n];
        let mut islands = 0u32;
        let mut q = Vec::new();
        for s in 0..n {
            if island[s] != u32::MAX {
                continue;
            }
            island[s] = islands;
            q.clear();
            q.push(s);
            while let Some(u) = q.pop() {
                for c in g.first_channel(u)..g.first_channel(u + 1) {
                    let v = chans[c].to as usize;
                    if !global(u, c) && island[v] == u32::MAX {
                        island[v] = islands;
                        q.push(v);
                    }
                }
            }
            islands += 1;
        }
        // Ranks from the roots, within islands.
        let mut rank = vec![INF; n];
        let mut bfs: Vec<usize> = (0..n).filter(|&a| is_root[a]).collect();
        for &r in &bfs {
            rank[r] = 0;
        }
        let mut head = 0;
        while let Some(&u) = bfs.get(head) {
            head += 1;
            for c in g.first_channel(u)..g.first_channel(u + 1) {
                let v = chans[c].to as usize;
                if !global(u, c) && rank[v] == INF {
                    rank[v] = rank[u] + 1;
                    bfs.push(v);
                }
            }
        }
        if let Some(a) = (0..n).find(|&a| rank[a] == INF) {
            return Err(self.fail(format!(
                "switch {} is in an island without a root",
                describe(subnet, g, a)
            )));
        }
        let mut kind = Vec::with_capacity(chans.len());
        for a in 0..n {
            for c in g.first_channel(a)..g.first_channel(a + 1) {
                let b = chans[c].to as usize;
                kind.push(if global(a, c) {
                    if island[a] == island[b] {
                        return Err(self.fail(format!(
                            "roots {} and {} of one island are linked to each other",
                            describe(subnet, g, a),
                            describe(subnet, g, b)
                        )));
                    }
                    Kind::Global
                } else if rank[b] + 1 == rank[a] {
                    Kind::Up
                } else if rank[b] == rank[a] + 1 {
                    Kind::Down
                } else {
                    Kind::Other
                });
            }
        }
        if !self.any_depth {
            for a in 0..n {
                if rank[a] > 1 {
                    return Err(self.fail(format!(
                        "switch {} is {} hops below its island's roots: dfp needs two-level islands (use dfp2)",
                        describe(subnet, g, a),
                        rank[a]
                    )));
                }
                for c in g.first_channel(a)..g.first_channel(a + 1) {
                    if kind[c] == Kind::Other {
                        return Err(self.fail(format!(
                            "switches {} and {} of one island level are linked: dfp needs two-level islands (use dfp2)",
                            describe(subnet, g, a),
                            describe(subnet, g, chans[c].to as usize)
                        )));
                    }
                }
            }
        }
        Ok(Structure {
            is_root,
            island,
            rank,
            kind,
            islands: islands as usize,
        })
    }
}

/// Per source switch: the primary and adaptive candidate ports toward every destination switch
/// (CSR by destination slot).
struct Choices {
    prim_start: Vec<Vec<u32>>,
    prim: Vec<Vec<u8>>,
    ar_start: Vec<Vec<u32>>,
    ar: Vec<Vec<u8>>,
}

/// `relaxed[t]`: switch `t` has no CAs — the routes toward it carry only management traffic
/// to the switch itself, and may turn down→up inside its island (see [`compute`]).
fn compute(g: &SwitchGraph, st: &Structure, turns: bool, relaxed: &[bool]) -> Choices {
    let n = g.switch_count();
    let chans = g.channels();
    let mut ch = Choices {
        prim_start: vec![Vec::with_capacity(n + 1); n],
        prim: vec![Vec::new(); n],
        ar_start: vec![Vec::with_capacity(n + 1); n],
        ar: vec![Vec::new(); n],
    };
    // Switches by rank, roots first.
    let mut by_rank: Vec<usize> = (0..n).collect();
    by_rank.sort_by_key(|&a| st.rank[a]);
    let mut dn = vec![INF; n];
    let mut upd = vec![INF; n];
    let mut dd = vec![INF; n];
    let mut direct = vec![false; n];
    let mut has = vec![false; n];
    let mut up_direct = vec![INF; n];
    let mut up_any = vec![INF; n];
    let mut stack = Vec::new();
    let range = |a: usize| g.first_channel(a)..g.first_channel(a + 1);
    for t in 0..n {
        let b = st.island[t];
        // Ancestors of t (down-distance).
        dn.fill(INF);
        dn[t] = 0;
        stack.clear();
        stack.push(t);
        let mut head = 0;
        while let Some(&u) = stack.get(head) {
            head += 1;
            for c in range(u) {
                if st.kind[c] == Kind::Up {
                    let w = chans[c].to as usize;
                    if dn[w] == INF {
                        dn[w] = dn[u] + 1;
                        stack.push(w);
                    }
                }
            }
        }
        // In B: up-distance to an ancestor.
        upd.fill(INF);
        for &v in &by_rank {
            if st.island[v] != b {
                continue;
            }
            if dn[v] != INF {
                upd[v] = 0;
                continue;
            }
            for c in range(v) {
                if st.kind[c] == Kind::Up {
                    let w = chans[c].to as usize;
                    if upd[w] != INF {
                        upd[v] = upd[v].min(upd[w] + 1);
                    }
                }
            }
        }
        // Toward a switch without CAs, a switch of B that can neither go down to t nor up to
        // an ancestor of t (another root of B, when t is a root) goes down first: to a lower
        // switch that can, shortest first (deepest switches first, so that every lower
        // neighbour is settled). Routes toward CA switches never turn down→up.
        dd.fill(INF);
        if relaxed[t] {
            for &v in by_rank.iter().rev() {
                if st.island[v] != b || dn[v] != INF || upd[v] != INF {
                    continue;
                }
                for c in range(v) {
                    if st.kind[c] == Kind::Down {
                        let w = chans[c].to as usize;
                        let d = upd[w].min(dd[w]);
                        if d != INF {
                            dd[v] = dd[v].min(d + 1);
                        }
                    }
                }
            }
        }
        // The switches of B a global link may enter: t's ancestors, and toward a switch
        // without CAs any that has a route down first.
        let entry = |w: usize| dn[w] != INF || (relaxed[t] && dd[w] != INF);
        // Roots elsewhere: direct links, and whether they have a route at all.
        for v in 0..n {
            direct[v] = st.is_root[v]
                && st.island[v] != b
                && range(v).any(|c| st.kind[c] == Kind::Global && entry(chans[c].to as usize));
        }
        for v in 0..n {
            has[v] = direct[v]
                || (turns
                    && st.is_root[v]
                    && st.island[v] != b
                    && range(v).any(|c| {
                        let w = chans[c].to as usize;
                        st.kind[c] == Kind::Global && st.island[w] != b && direct[w]
                    }));
        }
        // Below the roots of other islands: up-distances to exits.
        up_direct.fill(INF);
        up_any.fill(INF);
        for &v in &by_rank {
            if st.island[v] == b {
                continue;
            }
            if st.is_root[v] {
                if direct[v] {
                    up_direct[v] = 0;
                }
                if has[v] {
                    up_any[v] = 0;
                }
                continue;
            }
            for c in range(v) {
                if st.kind[c] == Kind::Up {
                    let w = chans[c].to as usize;
                    if up_direct[w] != INF {
                        up_direct[v] = up_direct[v].min(up_direct[w] + 1);
                    }
                    if up_any[w] != INF {
                        up_any[v] = up_any[v].min(up_any[w] + 1);
                    }
                }
            }
        }
        // The candidate lists of every switch toward t.
        for v in 0..n {
            ch.prim_start[v].push(ch.prim[v].len() as u32);
            ch.ar_start[v].push(ch.ar[v].len() as u32);
            if v == t {
                continue;
            }
            let (p, a) = (&mut ch.prim[v], &mut ch.ar[v]);
            let port = |c: usize| chans[c].port;
            if st.island[v] == b {
                if dn[v] != INF {
                    for c in range(v) {
                        if st.kind[c] == Kind::Down
                            && dn[chans[c].to as usize].wrapping_add(1) == dn[v]
                        {
                            p.push(port(c));
                            a.push(port(c));
                        }
                    }
                } else if upd[v] != INF {
                    for c in range(v) {
                        if st.kind[c] == Kind::Up
                            && upd[chans[c].to as usize].wrapping_add(1) == upd[v]
                        {
                            p.push(port(c));
                            a.push(port(c));
                        }
                    }
                } else if dd[v] != INF {
                    for c in range(v) {
                        let w = chans[c].to as usize;
                        if st.kind[c] == Kind::Down && upd[w].min(dd[w]).wrapping_add(1) == dd[v] {
                            p.push(port(c));
                        }
                    }
                }
            } else if st.is_root[v] {
                for c in range(v) {
                    if st.kind[c] != Kind::Global {
                        continue;
                    }
                    let w = chans[c].to as usize;
                    let dir = entry(w);
                    let via = turns && st.island[w] != b && direct[w];
                    if direct[v] {
                        if dir {
                            p.push(port(c));
                        }
                        if dir || via {
                            a.push(port(c));
                        }
                    } else if via {
                        p.push(port(c));
                        a.push(port(c));
                    }
                }
            } else {
                let want = if up_direct[v] != INF {
                    &up_direct
                } else {
                    &up_any
                };
                if want[v] != INF {
                    for c in range(v) {
                        if st.kind[c] != Kind::Up {
                            continue;
                        }
                        let w = chans[c].to as usize;
                        if want[w].wrapping_add(1) == want[v] {
                            p.push(port(c));
                        }
                        if up_any[w].wrapping_add(1) == up_any[v] {
                            a.push(port(c));
                        }
                    }
                }
            }
        }
        // Whether switch w has a route toward t (t itself has).
        let routed =
            |ch: &Choices, w: usize| w == t || ch.prim[w].len() > ch.prim_start[w][t] as usize;
        // A switch still without a route toward t (a root whose global links lead to no
        // island that reaches t) goes down first, to a switch that has one — deepest first,
        // so every lower neighbour is settled. No list above points at such a switch, so only
        // traffic the switch itself sends (its answers to the SM) takes these routes.
        for &v in by_rank.iter().rev() {
            if routed(&ch, v) {
                continue;
            }
            for c in range(v) {
                if st.kind[c] == Kind::Down && routed(&ch, chans[c].to as usize) {
                    ch.prim[v].push(chans[c].port);
                }
            }
        }
        // After failed links a switch may still have none (a leaf whose link to the root t
        // is down must go up, down to another leaf and up again). Where only management
        // traffic takes the route — toward a switch without CAs, or from one — it goes,
        // in rounds, to any neighbour that had a route at the round's start: the shortest
        // way onto the routes above, and no loop, since every step leads to a switch routed
        // earlier.
        loop {
            let mut next = Vec::new();
            for v in 0..n {
                if routed(&ch, v) || !(relaxed[t] || relaxed[v]) {
                    continue;
                }
                let ports: Vec<u8> = range(v)
                    .filter(|&c| routed(&ch, chans[c].to as usize))
                    .map(|c| chans[c].port)
                    .collect();
                if !ports.is_empty() {
                    next.push((v, ports));
                }
            }
            if next.is_empty() {
                break;
            }
            for (v, ports) in next {
                ch.prim[v].extend(ports);
            }
        }
    }
    for v in 0..n {
        ch.prim_start[v].push(ch.prim[v].len() as u32);
        ch.ar_start[v].push(ch.ar[v].len() as u32);
    }
    ch
}

impl RoutingEngine for Dfp {
    fn name(&self) -> &'static str {
        self.name_str()
    }

    fn route_logged(
        &self,
        subnet: &Subnet,
        rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        let g = SwitchGraph::build(subnet);
        let n = g.switch_count();
        let is_root = self.roots(subnet, &g, log)?;
        let st = self.structure(subnet, &g, is_root)?;
        let budget = self.opts.vl_budget(subnet);
        let sw_vls = budget.min_sw_data_vls.clamp(1, 15);
        let turns = sw_vls >= 2;
        if !turns {
            log.push(format!(
                "{}: one data VL on switch ports: no global-to-global turns, so no detours (Min Hop + 1) and no adaptive groups through other islands",
                self.name_str()
            ));
        }
        log.push(format!(
            "{}: {} islands, {} roots, {} data VLs on switch ports",
            self.name_str(),
            st.islands,
            st.is_root.iter().filter(|&&r| r).count(),
            sw_vls
        ));
        // Every switch with CAs must reach every other.
        let has_ca: Vec<bool> = g
            .slots()
            .switches()
            .iter()
            .map(|&sw| {
                (1..=subnet.node(sw).num_ports).any(|p| {
                    subnet
                        .port(sw, PortNum(p))
                        .and_then(|x| x.remote)
                        .is_some_and(|(rn, _)| !subnet.node(rn).is_switch())
                })
            })
            .collect();
        let relaxed: Vec<bool> = has_ca.iter().map(|&h| !h).collect();
        let ch = compute(&g, &st, turns, &relaxed);
        for v in 0..n {
            if !has_ca[v] {
                continue;
            }
            for t in 0..n {
                if t == v || !has_ca[t] {
                    continue;
                }
                // Follow the primary choice (first candidate) to catch dead ends.
                let mut x = v;
                let mut hops = 0;
                while x != t {
                    let (s, e) = (
                        ch.prim_start[x][t] as usize,
                        ch.prim_start[x][t + 1] as usize,
                    );
                    let Some(&p) = ch.prim[x][s..e].first() else {
                        return Err(self.fail(format!(
                            "no Dragonfly+ route from {} to {}{}",
                            describe(subnet, &g, v),
                            describe(subnet, &g, t),
                            if turns {
                                ""
                            } else {
                                " (their islands have no direct global link, and a detour needs 2 data VLs)"
                            }
                        )));
                    };
                    x = g
                        .neighbors(x)
                        .iter()
                        .find(|e| e.port == p)
                        .map_or(t, |e| e.to as usize);
                    hops += 1;
                    if hops > n {
                        return Err(self.fail("routing loop".to_string()));
                    }
                }
            }
        }
        let scatter = scatter_seed(&self.opts, rng);
        super::minhop::log_option_files(&self.opts, log);
        let lfts = balance(subnet, &g, &self.opts, scatter, &|si| {
            Candidates::from_csr(ch.prim_start[si].clone(), ch.prim[si].clone())
        });
        // Adaptive groups for CA LIDs, eligible from below.
        let top = max_lid(subnet);
        let mut ar = ArTables::new(g.slots().clone(), top);
        let chans = g.channels();
        let mut dest_of: Vec<(u16, usize)> = Vec::new();
        for (t, &sw) in g.slots().switches().iter().enumerate() {
            for p in 1..=subnet.node(sw).num_ports {
                let Some((rn, rp)) = subnet.port(sw, PortNum(p)).and_then(|x| x.remote) else {
                    continue;
                };
                if subnet.node(rn).is_switch() || !link_usable(subnet, sw, PortNum(p)) {
                    continue;
                }
                if let Some(x) = subnet.port(rn, rp) {
                    if x.lid != Lid::UNASSIGNED {
                        for o in 0..(1u16 << x.lmc.min(7)) {
                            dest_of.push((x.lid.0 + o, t));
                        }
                    }
                }
            }
        }
        for (v, &sw) in g.slots().switches().iter().enumerate() {
            let mut el = PortMask::default();
            for p in 1..=subnet.node(sw).num_ports {
                if subnet
                    .port(sw, PortNum(p))
                    .and_then(|x| x.remote)
                    .is_some_and(|(rn, _)| !subnet.node(rn).is_switch())
                {
                    el.insert(p);
                }
            }
            for c in g.first_channel(v)..g.first_channel(v + 1) {
                if st.kind[c] == Kind::Down {
                    el.insert(chans[c].port);
                }
            }
            ar.set_eligible(sw, el);
            for &(lid, t) in &dest_of {
                if t == v {
                    continue;
                }
                let (s, e) = (ch.ar_start[v][t] as usize, ch.ar_start[v][t + 1] as usize);
                let mut m = PortMask::default();
                for &p in &ch.ar[v][s..e] {
                    m.insert(p);
                }
                if let Some(p) = lfts.get(sw, Lid(lid)) {
                    m.insert(p.0);
                }
                ar.set(sw, Lid(lid), m);
            }
        }
        log.push(format!(
            "{}: {} adaptive routing groups",
            self.name_str(),
            ar.group_count()
        ));
        // SL-to-VL: VL pair per SL, +1 after a global-to-global turn.
        let pairs = (sw_vls / 2).max(1);
        let base = |sl: u8| if turns { 2 * (sl % pairs) } else { 0 };
        let mut tables = Sl2VlTables::new(subnet);
        let plain = {
            let mut v = [0u8; NUM_SLS];
            for (sl, e) in v.iter_mut().enumerate() {
                *e = base(sl as u8);
            }
            sl2vl_from(v)
        };
        let turned = {
            let mut v = [0u8; NUM_SLS];
            for (sl, e) in v.iter_mut().enumerate() {
                *e = base(sl as u8) + u8::from(turns);
            }
            sl2vl_from(v)
        };
        for (v, &sw) in g.slots().switches().iter().enumerate() {
            tables.set_node(subnet, sw, plain);
            if !st.is_root[v] {
                continue;
            }
            let globals: Vec<u8> = (g.first_channel(v)..g.first_channel(v + 1))
                .filter(|&c| st.kind[c] == Kind::Global)
                .map(|c| chans[c].port)
                .collect();
            for &i in &globals {
                for &o in &globals {
                    tables.set(subnet, sw, PortNum(i), PortNum(o), turned);
                }
            }
        }
        for id in subnet.node_ids() {
            if subnet.node(id).is_switch() {
                continue;
            }
            tables.set_node(subnet, id, plain);
        }
        Ok(Routes::new(lfts).with_sl2vl(tables).with_ar(ar))
    }
}

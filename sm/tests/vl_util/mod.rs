//! Helpers for the VL engines' tests: generated fabrics with VL-capable ports, and a VL-aware
//! credit-loop check written independently of the engines (channels are (link, VL); the VL of
//! each hop comes from the engine's SL-to-VL tables, or from OpenSM's default `qos_sl2vl`
//! when the engine leaves SL-to-VL to the QoS configuration, masked to the port's
//! OperationalVLs as the SM programs them; the SL is the path's).
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::HashMap;

use fabric_sim::topo::Topology;
use ibmad::{Lid, NodeType, PortNum};
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::vl::port_op_vls;
use sm::routing::{Lfts, Routes, NO_PATH};
use sm::{NodeId, Subnet};

/// The generator spec as a subnet whose every port has VLCap `vl_cap` (1..=5), fresh LIDs.
pub fn subnet(spec: &str, lmc: u8, vl_cap: u8) -> Subnet {
    let t = Topology::generate(spec).unwrap();
    topo_subnet(&t, lmc, vl_cap)
}

/// A topology as a subnet whose every port has VLCap `vl_cap`, fresh LIDs.
pub fn topo_subnet(t: &Topology, lmc: u8, vl_cap: u8) -> Subnet {
    let mut s = fabric_sim::topo::subnet::to_subnet(t);
    set_vl_cap(&mut s, vl_cap);
    assign_lids(
        &mut s,
        &LidConfig {
            lmc,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &Guid2Lid::new(),
    )
    .unwrap();
    s
}

/// Sets VLCap on every port that has a PortInfo, and CapabilityMask.IsSLMappingSupported as
/// our agents (and ibsim's) report it, so the SM programs SL-to-VL there.
pub fn set_vl_cap(s: &mut Subnet, vl_cap: u8) {
    use ibmad::attr::port_info::cap::IS_SL_MAP_SUP;
    for p in &mut s.ports {
        if let Some(i) = p.info.as_mut() {
            i.set_vl_cap(vl_cap);
            i.capability_mask
                .set(i.capability_mask.get() | IS_SL_MAP_SUP);
        }
    }
}

/// OpenSM's default `qos_sl2vl` (0,1,…,14,7), masked to `op_vls` as `sl2vl_update_table`.
pub fn default_vl(sl: u8, op_vls: u8) -> u8 {
    let v = if sl == 15 { 7 } else { sl };
    let mask = (1u8 << (op_vls.clamp(1, 5) - 1)) - 1;
    v & mask
}

/// What the check found.
#[derive(Debug, Default)]
pub struct VlReport {
    /// Routes (source LID, destination LID) between CA ports walked, every LID of each
    /// port's LMC range.
    pub pairs: u64,
    /// Pairs that did not arrive.
    pub unreachable: u64,
    /// Distinct VLs used on switch-to-switch hops.
    pub vls_used: Vec<u8>,
    /// A cycle of (switch, out port, VL), if any.
    pub cycle: Option<Vec<(NodeId, u8, u8)>>,
    /// Pairs whose switch-hop count exceeds the shortest path.
    pub detours: u64,
    /// The highest path SL.
    pub max_sl: u8,
}

impl VlReport {
    pub fn ok(&self) -> bool {
        self.pairs > 0 && self.unreachable == 0 && self.cycle.is_none()
    }
}

fn shortest(s: &Subnet, a: NodeId, b: NodeId) -> u32 {
    if a == b {
        return 0;
    }
    let mut dist: HashMap<NodeId, u32> = HashMap::new();
    let mut q = std::collections::VecDeque::new();
    dist.insert(a, 0);
    q.push_back(a);
    while let Some(u) = q.pop_front() {
        let d = dist[&u];
        for p in 1..=s.node(u).num_ports {
            if !sm::routing::graph::link_usable(s, u, PortNum(p)) {
                continue;
            }
            let Some((r, _)) = s.port(u, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            if !s.node(r).is_switch() || dist.contains_key(&r) {
                continue;
            }
            if r == b {
                return d + 1;
            }
            dist.insert(r, d + 1);
            q.push_back(r);
        }
    }
    u32::MAX
}

/// Walks every CA → CA LID route with the routes' SLs and VLs (see the module docs) and looks
/// for a cycle among (link, VL) channels.
pub fn vl_check(s: &Subnet, r: &Routes, max_op_vls: u8) -> VlReport {
    let mut rep = VlReport::default();
    let cas: Vec<(NodeId, PortNum, Lid, NodeId, PortNum)> = s
        .end_ports()
        .filter(|&(n, _)| s.node(n).node_type == NodeType::CA)
        .filter_map(|(n, p)| {
            let port = s.port(n, p)?;
            let (rn, rp) = port.remote?;
            (port.lid != Lid::UNASSIGNED && s.node(rn).is_switch())
                .then_some((n, p, port.lid, rn, rp))
        })
        .collect();
    let mut ids: HashMap<(NodeId, u8, u8), usize> = HashMap::new();
    let mut names: Vec<(NodeId, u8, u8)> = Vec::new();
    let mut edges: Vec<std::collections::BTreeSet<usize>> = Vec::new();
    let mut vls = std::collections::BTreeSet::new();
    let mut hopcache: HashMap<(NodeId, NodeId), u32> = HashMap::new();
    // Every LID of each port's LMC range, as a source and as a destination: with LMC > 0 the
    // engines route a port's LIDs over different paths.
    let lids = |n: NodeId, p: PortNum, base: Lid| -> Vec<Lid> {
        let lmc = s.port(n, p).map_or(0, |x| x.lmc.min(7));
        (0..1u16 << lmc)
            .filter_map(|o| base.0.checked_add(o).map(Lid))
            .collect()
    };
    // (CA port, one of its LIDs, its switch, the switch's port).
    let ends: Vec<_> = cas
        .iter()
        .flat_map(|&(n, p, base, sw, sp)| {
            lids(n, p, base)
                .into_iter()
                .map(move |lid| (n, p, lid, sw, sp))
        })
        .collect();
    for &(sn, sp, slid, ssw, sin) in &ends {
        for &(dn, dp, dlid, dsw, _) in &ends {
            if (sn, sp) == (dn, dp) {
                continue;
            }
            rep.pairs += 1;
            let sl = r.sl(slid, dlid);
            rep.max_sl = rep.max_sl.max(sl);
            let mut cur = ssw;
            let mut inp = sin;
            let mut prev: Option<usize> = None;
            let mut hops = 0u32;
            let arrived = loop {
                let Some(port) = r.lfts.get(cur, dlid) else {
                    break false;
                };
                if port.0 == 0 || port.0 == NO_PATH {
                    break false;
                }
                let Some((nx, nxp)) = s.port(cur, port).and_then(|x| x.remote) else {
                    break false;
                };
                if !sm::routing::graph::link_usable(s, cur, port) {
                    break false;
                }
                if !s.node(nx).is_switch() {
                    break nx == dn && nxp == dp;
                }
                let op = port_op_vls(s, cur, port, max_op_vls).unwrap_or(1);
                let vl = match &r.sl2vl {
                    Some(t) if t.has_node(cur) => {
                        let v = t.vl(cur, inp, port, sl).unwrap_or(0);
                        if v == 15 {
                            v
                        } else {
                            v & ((1u8 << (op.clamp(1, 5) - 1)) - 1)
                        }
                    }
                    _ => default_vl(sl, op),
                };
                vls.insert(vl);
                let key = (cur, port.0, vl);
                let id = *ids.entry(key).or_insert_with(|| {
                    names.push(key);
                    edges.push(Default::default());
                    names.len() - 1
                });
                if let Some(p) = prev {
                    edges[p].insert(id);
                }
                prev = Some(id);
                cur = nx;
                inp = nxp;
                hops += 1;
                if hops > 4 * s.nodes.len() as u32 {
                    break false;
                }
            };
            if !arrived {
                rep.unreachable += 1;
            } else {
                let best = *hopcache
                    .entry((ssw, dsw))
                    .or_insert_with(|| shortest(s, ssw, dsw));
                if hops > best {
                    rep.detours += 1;
                }
            }
        }
    }
    // Adaptive-routing alternatives: every path a switch may choose, each hop's VL from the
    // tables; every state must lead on to the destination.
    if let Some(ar) = &r.ar {
        for &(_, sp, slid, ssw, sin) in &ends {
            for &(dn, dp, dlid, _, _) in &ends {
                if (ssw, sin) == (dn, dp) || slid == dlid {
                    continue;
                }
                let sl = r.sl(slid, dlid);
                let _ = sp;
                // States: (switch, in port, the (link, VL) node we arrived on).
                let mut seen = std::collections::HashSet::new();
                let mut stack = vec![(ssw, sin, None::<usize>)];
                while let Some((cur, inp, prev)) = stack.pop() {
                    if !seen.insert((cur, inp, prev)) {
                        continue;
                    }
                    let mut outs: Vec<PortNum> = r.lfts.get(cur, dlid).into_iter().collect();
                    if let Some(m) = ar.choices(cur, inp, dlid) {
                        outs.extend(m.ports().map(PortNum));
                    }
                    outs.sort_unstable();
                    outs.dedup();
                    if outs.is_empty() {
                        rep.unreachable += 1;
                    }
                    for port in outs {
                        let Some((nx, nxp)) = s.port(cur, port).and_then(|x| x.remote) else {
                            rep.unreachable += 1;
                            continue;
                        };
                        if !s.node(nx).is_switch() {
                            if (nx, nxp) != (dn, dp) {
                                rep.unreachable += 1;
                            }
                            continue;
                        }
                        let op = port_op_vls(s, cur, port, max_op_vls).unwrap_or(1);
                        let vl = match &r.sl2vl {
                            Some(t) if t.has_node(cur) => {
                                t.vl(cur, inp, port, sl).unwrap_or(0)
                                    & ((1u8 << (op.clamp(1, 5) - 1)) - 1)
                            }
                            _ => default_vl(sl, op),
                        };
                        vls.insert(vl);
                        let key = (cur, port.0, vl);
                        let id = *ids.entry(key).or_insert_with(|| {
                            names.push(key);
                            edges.push(Default::default());
                            names.len() - 1
                        });
                        if let Some(p) = prev {
                            edges[p].insert(id);
                        }
                        if seen.len() > 64 * s.nodes.len() {
                            rep.unreachable += 1;
                            break;
                        }
                        stack.push((nx, nxp, Some(id)));
                    }
                }
            }
        }
    }
    rep.vls_used = vls.into_iter().collect();
    // Cycle search.
    let n = names.len();
    let mut color = vec![0u8; n];
    'outer: for root in 0..n {
        if color[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, Vec<usize>, usize)> =
            vec![(root, edges[root].iter().copied().collect(), 0)];
        color[root] = 1;
        while let Some(top) = stack.last_mut() {
            if let Some(&v) = top.1.get(top.2) {
                top.2 += 1;
                match color[v] {
                    0 => {
                        color[v] = 1;
                        stack.push((v, edges[v].iter().copied().collect(), 0));
                    }
                    1 => {
                        let pos = stack.iter().position(|e| e.0 == v).unwrap();
                        rep.cycle = Some(stack[pos..].iter().map(|e| names[e.0]).collect());
                        break 'outer;
                    }
                    _ => {}
                }
            } else {
                color[top.0] = 2;
                stack.pop();
            }
        }
    }
    // The SM's own verifier (what `ibsm sim` and `ibsm verify` judge with) reaches the same
    // answer on the tables the SM programs with `qos` on.
    let ours = sm::verify::verify_routes(
        s,
        r,
        &sm::qos::QosConfig {
            enabled: true,
            ..sm::qos::QosConfig::default()
        },
        max_op_vls,
    );
    let v = ours.vl.as_ref().unwrap();
    assert_eq!(
        v.credit_loop.is_none(),
        rep.cycle.is_none(),
        "sm::verify::vl and this check disagree: {}",
        v.summary(s)
    );
    rep
}

/// Walks the tables from every switch to every end-port LID whose node `to` accepts: the
/// LID-routed traffic switches send (answers and traps to the SM), which the CA-pair checks
/// do not cover. Returns the (switch description, LID) pairs that dead-end or loop.
pub fn switch_walk_failures(
    s: &Subnet,
    lfts: &Lfts,
    to: impl Fn(NodeId) -> bool,
) -> Vec<(String, u16)> {
    let mut dests = Vec::new();
    for (n, p) in s.end_ports() {
        let lid = s.port(n, p).unwrap().lid;
        if lid.0 != 0 && to(n) {
            dests.push((n, lid));
        }
    }
    let mut bad = Vec::new();
    for sw in s.switches() {
        for &(dn, lid) in &dests {
            let mut x = sw;
            let mut hops = 0;
            while x != dn {
                let next = lfts
                    .get(x, lid)
                    .and_then(|p| s.port(x, p))
                    .and_then(|port| port.remote);
                match next {
                    Some((rn, _)) if hops < 64 => x = rn,
                    _ => {
                        bad.push((s.node(sw).desc.clone(), lid.0));
                        break;
                    }
                }
                hops += 1;
            }
        }
    }
    bad
}

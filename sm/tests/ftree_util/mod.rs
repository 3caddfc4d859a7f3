//! Helpers for the ftree tests: generated topologies as SM subnets, table walks, the channel
//! dependency graph (deadlock check) and per-leaf up-link balance.
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::{HashMap, HashSet};

use fabric_sim::topo::Topology;
use ibmad::{Lid, NodeType, PortNum};
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::Lfts;
use sm::{NodeId, Subnet};

/// A directed channel: (switch, out port).
pub type Channel = (NodeId, u8);

/// The topology `spec` (a fabric-sim generator spec) as a subnet with fresh LIDs.
pub fn subnet(spec: &str, lmc: u8) -> Subnet {
    subnet_of(&Topology::generate(spec).unwrap(), lmc)
}

/// `t` as a subnet with fresh LIDs.
pub fn subnet_of(t: &Topology, lmc: u8) -> Subnet {
    let mut s = from_topology(t);
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

/// The same topology-to-subnet conversion the updn tests use.
#[path = "../updn_util/mod.rs"]
mod updn_util;
pub use updn_util::from_topology;

/// CA ports: (node, port, LID, attached switch).
pub fn ca_ports(s: &Subnet) -> Vec<(NodeId, PortNum, Lid, NodeId)> {
    s.end_ports()
        .filter(|&(n, _)| s.node(n).node_type == NodeType::CA)
        .filter_map(|(n, p)| {
            let port = s.port(n, p)?;
            let (rn, _) = port.remote?;
            Some((n, p, port.lid, rn))
        })
        .collect()
}

/// The switch-to-switch hops (switch, out port) from switch `from` to `lid`, or None on a dead
/// end or loop.
pub fn walk(s: &Subnet, lfts: &Lfts, from: NodeId, lid: Lid) -> Option<Vec<(NodeId, u8)>> {
    let mut cur = from;
    let mut out = Vec::new();
    for _ in 0..64 {
        let p = lfts.get(cur, lid)?;
        out.push((cur, p.0));
        let (rn, _) = s.port(cur, p)?.remote?;
        if !s.node(rn).is_switch() {
            return Some(out);
        }
        cur = rn;
    }
    None
}

/// True if the tables lead from switch `from` to switch `to` (entry 0 there) for `to`'s `lid`.
pub fn walk_to_switch(s: &Subnet, lfts: &Lfts, from: NodeId, lid: Lid, to: NodeId) -> bool {
    let mut cur = from;
    for _ in 0..64 {
        let Some(p) = lfts.get(cur, lid) else {
            return false;
        };
        if p.0 == 0 {
            return cur == to;
        }
        let Some((rn, _)) = s.port(cur, p).and_then(|x| x.remote) else {
            return false;
        };
        if !s.node(rn).is_switch() {
            return false;
        }
        cur = rn;
    }
    false
}

/// Every (leaf switch, CA LID) route, as a list of channels (switch, out port).
pub fn all_routes(s: &Subnet, lfts: &Lfts) -> Vec<Vec<(NodeId, u8)>> {
    let cas = ca_ports(s);
    let leaves: HashSet<NodeId> = cas.iter().map(|c| c.3).collect();
    let mut leaves: Vec<NodeId> = leaves.into_iter().collect();
    leaves.sort();
    let mut out = Vec::new();
    for &l in &leaves {
        for c in &cas {
            out.push(walk(s, lfts, l, c.2).unwrap());
        }
    }
    out
}

/// True if the channel dependency graph of all CA routes has a cycle.
pub fn cdg_has_cycle(s: &Subnet, lfts: &Lfts) -> bool {
    routes_have_cycle(all_routes(s, lfts))
}

/// True if the channel dependency graph of `routes` (each a list of channels) has a cycle.
pub fn routes_have_cycle(routes: Vec<Vec<(NodeId, u8)>>) -> bool {
    let mut edges: HashMap<(NodeId, u8), HashSet<(NodeId, u8)>> = HashMap::new();
    for r in routes {
        for w in r.windows(2) {
            edges.entry(w[0]).or_default().insert(w[1]);
        }
    }
    // Iterative DFS with colours.
    let mut colour: HashMap<(NodeId, u8), u8> = HashMap::new();
    let nodes: Vec<(NodeId, u8)> = edges.keys().copied().collect();
    for &start in &nodes {
        if colour.get(&start).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut stack: Vec<(Channel, Vec<Channel>)> =
            vec![(start, edges[&start].iter().copied().collect())];
        colour.insert(start, 1);
        while let Some((n, rest)) = stack.last_mut() {
            if let Some(m) = rest.pop() {
                match colour.get(&m).copied().unwrap_or(0) {
                    1 => return true,
                    0 => {
                        colour.insert(m, 1);
                        let next = edges
                            .get(&m)
                            .map(|e| e.iter().copied().collect())
                            .unwrap_or_default();
                        stack.push((m, next));
                    }
                    _ => {}
                }
            } else {
                colour.insert(*n, 2);
                stack.pop();
            }
        }
    }
    false
}

/// Switch levels: BFS distance from the switches that have no CA and are farthest from the
/// CA-attached switches (independent of the engine's own ranking).
pub fn levels(s: &Subnet) -> HashMap<NodeId, u32> {
    let cas = ca_ports(s);
    let mut dist: HashMap<NodeId, u32> = HashMap::new();
    let mut q: std::collections::VecDeque<NodeId> = cas.iter().map(|c| c.3).collect();
    for &l in &q {
        dist.insert(l, 0);
    }
    let nbrs = |n: NodeId| -> Vec<NodeId> {
        (1..=s.node(n).num_ports)
            .filter_map(|p| s.port(n, PortNum(p))?.remote)
            .map(|(r, _)| r)
            .filter(|&r| s.node(r).is_switch())
            .collect()
    };
    while let Some(n) = q.pop_front() {
        let d = dist[&n];
        for r in nbrs(n) {
            if let std::collections::hash_map::Entry::Vacant(e) = dist.entry(r) {
                e.insert(d + 1);
                q.push_back(r);
            }
        }
    }
    let max = dist.values().copied().max().unwrap_or(0);
    let mut lvl: HashMap<NodeId, u32> = HashMap::new();
    let mut q: std::collections::VecDeque<NodeId> = dist
        .iter()
        .filter(|(_, &d)| d == max)
        .map(|(&n, _)| n)
        .collect();
    for &r in &q {
        lvl.insert(r, 0);
    }
    while let Some(n) = q.pop_front() {
        let d = lvl[&n];
        for r in nbrs(n) {
            if let std::collections::hash_map::Entry::Vacant(e) = lvl.entry(r) {
                e.insert(d + 1);
                q.push_back(r);
            }
        }
    }
    lvl
}

/// Number of routes that go down and then up again (must be 0 for up*/down* routing).
pub fn down_up_turns(s: &Subnet, lfts: &Lfts) -> usize {
    let lvl = levels(s);
    let mut bad = 0;
    for r in all_routes(s, lfts) {
        let mut went_down = false;
        for w in r.windows(2) {
            let (a, b) = (lvl[&w[0].0], lvl[&w[1].0]);
            if b > a {
                went_down = true;
            } else if went_down {
                bad += 1;
                break;
            }
        }
    }
    bad
}

/// Per leaf: destinations (CAs on the leaf) per up-link, by the link through which traffic
/// from every other leaf arrives. Panics if traffic to one destination arrives over more than
/// one link. Returns (leaf, counts per up port).
pub fn leaf_uplink_loads(s: &Subnet, lfts: &Lfts) -> Vec<(NodeId, Vec<(u8, u32)>)> {
    let cas = ca_ports(s);
    let mut leaves: Vec<NodeId> = cas.iter().map(|c| c.3).collect();
    leaves.sort();
    leaves.dedup();
    let mut out = Vec::new();
    for &l in &leaves {
        let mut counts: HashMap<u8, u32> = HashMap::new();
        for p in 1..=s.node(l).num_ports {
            if let Some((r, _)) = s.port(l, PortNum(p)).and_then(|x| x.remote) {
                if s.node(r).is_switch() {
                    counts.insert(p, 0);
                }
            }
        }
        for c in cas.iter().filter(|c| c.3 == l) {
            let mut arrive = HashSet::new();
            for &o in leaves.iter().filter(|&&o| o != l) {
                let r = walk(s, lfts, o, c.2).unwrap();
                let (last_sw, last_p) = r[r.len() - 2];
                let (_, in_port) = s.port(last_sw, PortNum(last_p)).unwrap().remote.unwrap();
                arrive.insert(in_port.0);
            }
            assert!(
                arrive.len() <= 1,
                "traffic to LID {} arrives at its leaf over several links: {arrive:?}",
                c.2 .0
            );
            if let Some(&p) = arrive.iter().next() {
                *counts.get_mut(&p).unwrap() += 1;
            }
        }
        let mut v: Vec<(u8, u32)> = counts.into_iter().collect();
        v.sort();
        out.push((l, v));
    }
    out
}

/// Routes per directed switch-to-switch and switch-to-CA channel over all CA→CA pairs
/// (each source CA counted once): the maximum.
pub fn max_routes_per_link(s: &Subnet, lfts: &Lfts) -> u32 {
    let cas = ca_ports(s);
    let mut load: HashMap<(NodeId, u8), u32> = HashMap::new();
    let mut per_leaf: HashMap<NodeId, u32> = HashMap::new();
    for c in &cas {
        *per_leaf.entry(c.3).or_default() += 1;
    }
    for (&l, &n) in &per_leaf {
        for d in &cas {
            if d.3 == l {
                continue;
            }
            for ch in walk(s, lfts, l, d.2).unwrap() {
                *load.entry(ch).or_default() += n;
            }
        }
    }
    load.values().copied().max().unwrap_or(0)
}

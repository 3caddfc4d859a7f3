//! The VL-aware credit-loop check: the channel dependency graph over **(link, VL)** channels.
//!
//! Credits are granted per virtual lane, so a deadlock needs a cycle of waits on the same VL
//! of each link (IBA vol1 §7.9; Dally and Seitz). A route from a CA port with service level
//! *SL* to destination LID *D* uses, on each hop, the VL the sending port's SL-to-VL table
//! gives for (input port, output port, *SL*) — on the CA's own port its one table, on a
//! switch the table of (the port the packet came in on, the port the LFT sends it out of). The
//! CDG has a node per (switch-to-switch link direction, VL) and an edge `(a, v) → (b, w)`
//! when some route arrives at a switch on link `a` in VL `v` and leaves on `b` in VL `w`. Any
//! cycle is a possible credit-loop deadlock; with one VL everywhere this is exactly the check
//! of [`super::verify`].
//!
//! Besides cycles the check reports hops that put a packet on a VL the port does not operate
//! (VL ≥ the data VLs its OperationalVLs allow, [`VlLimit`]) and routes whose SL maps to
//! VL 15 somewhere (the packet is dropped, IBA vol1 §7.6.6).
//!
//! Inputs ([`VlInputs`]): the SL-to-VL tables as programmed (or read from an
//! `opensm-sl2vl.dump`, [`crate::dump::parse_sl2vl_dump`]) — a node or pair the tables do not
//! hold maps every SL to VL 0, what a port holds before any SM writes it (and what OpenSM's
//! dump shows for it) — and the SL of each path ([`PathSlSource`]: an engine's
//! [`PathSls`], `ibsm-path-sl.dump`, or PathRecords from `saquery -p`).
//!
//! Cost: per destination LID the routes to it form an in-tree, so the walk keeps a visited
//! set of (switch, input port, SL, VL) states and stops where a route joins one already
//! walked: each destination costs about (switches × SLs in use) steps, plus one start per
//! source CA port.

use std::collections::{HashMap, HashSet};

use ibmad::{Lid, PortNum};

use super::Channel;
use crate::routing::graph::link_usable;
use crate::routing::vl::{data_vls, PathSls, Sl2VlTables, VL_DROP};
use crate::routing::{Lfts, NO_PATH};
use crate::subnet::{NodeId, Subnet};

/// Where the SL of a path comes from.
pub trait PathSlSource: Sync {
    /// The SL of the path from `slid` to `dlid` (0 when the source knows none).
    fn sl(&self, slid: Lid, dlid: Lid) -> u8;
}

impl PathSlSource for PathSls {
    fn sl(&self, slid: Lid, dlid: Lid) -> u8 {
        self.get(slid, dlid).unwrap_or(0)
    }
}

/// Every path on one SL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UniformSl(pub u8);

impl PathSlSource for UniformSl {
    fn sl(&self, _: Lid, _: Lid) -> u8 {
        self.0
    }
}

/// Path SLs listed pair by pair (read from a dump or from PathRecords); pairs not listed are
/// SL [`SlMap::default_sl`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlMap {
    /// (SLID, DLID) → SL.
    pub pairs: HashMap<(Lid, Lid), u8>,
    /// The SL of a pair not listed.
    pub default_sl: u8,
}

impl PathSlSource for SlMap {
    fn sl(&self, slid: Lid, dlid: Lid) -> u8 {
        self.pairs
            .get(&(slid, dlid))
            .copied()
            .unwrap_or(self.default_sl)
    }
}

/// Which VLs a port may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlLimit {
    /// The port's PortInfo.OperationalVLs (as last read or acknowledged); a port whose
    /// OperationalVLs is 0 or unknown is not limited.
    OperVls,
    /// The same number of data VLs on every port (for tables read from files, where no
    /// PortInfo is at hand).
    Fixed(u8),
}

/// The VL side of the routes to check.
pub struct VlInputs<'a> {
    /// SL-to-VL tables; a node or pair they do not hold maps every SL to VL 0.
    pub sl2vl: &'a Sl2VlTables,
    /// The SL of each path.
    pub path_sl: &'a dyn PathSlSource,
    /// The VLs each port may carry.
    pub limit: VlLimit,
}

/// A hop that put a route on a VL its port does not operate, or on VL 15.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadHop {
    /// Source LID of the route.
    pub slid: Lid,
    /// Destination LID.
    pub dlid: Lid,
    /// Its SL.
    pub sl: u8,
    /// The sending node and port.
    pub node: NodeId,
    /// Output port.
    pub port: PortNum,
    /// The VL the table gave.
    pub vl: u8,
    /// Data VLs the port operates (0 = not limited).
    pub data_vls: u8,
}

/// The result of the VL-aware check.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VlReport {
    /// Routes checked: (source CA LID, destination CA LID) pairs that started.
    pub routes: u64,
    /// Distinct (switch-to-switch link, VL) channels the routes use.
    pub channels: u64,
    /// Distinct dependencies between them.
    pub dependencies: u64,
    /// SLs used by the routes, as a bit mask (bit *n* = SL *n*).
    pub sls_used: u16,
    /// VLs used on switch-to-switch links, as a bit mask.
    pub vls_used: u16,
    /// A cycle of the CDG, as (link, VL) in order, if any.
    pub credit_loop: Option<Vec<(Channel, u8)>>,
    /// Hops onto VL 15: the route's packets are dropped there.
    pub dropped: u64,
    /// Hops onto a VL at or above the port's data VLs.
    pub beyond_oper_vls: u64,
    /// Up to 8 examples of each kind of bad hop.
    pub bad_hops: Vec<BadHop>,
}

impl VlReport {
    /// No cycle, no dropped route and no VL beyond OperationalVLs.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.credit_loop.is_none() && self.dropped == 0 && self.beyond_oper_vls == 0
    }

    /// Number of distinct VLs used on switch-to-switch links.
    #[must_use]
    pub fn num_vls(&self) -> u32 {
        self.vls_used.count_ones()
    }

    /// Human summary, a few lines.
    #[must_use]
    pub fn summary(&self, subnet: &Subnet) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let bits = |m: u16| -> String {
            let v: Vec<String> = (0..16)
                .filter(|b| m >> b & 1 != 0)
                .map(|b| b.to_string())
                .collect();
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(",")
            }
        };
        let _ = writeln!(
            s,
            "VL-aware credit loops: {} routes, SLs {}, VLs {} on switch links; CDG of {} (link, VL) channels, {} dependencies: {}",
            self.routes,
            bits(self.sls_used),
            bits(self.vls_used),
            self.channels,
            self.dependencies,
            if self.credit_loop.is_some() {
                "CYCLE FOUND"
            } else {
                "acyclic (deadlock-free)"
            }
        );
        if let Some(c) = &self.credit_loop {
            for (ch, vl) in c {
                let _ = writeln!(s, "  VL {vl}: {}", ch.describe(subnet));
            }
        }
        if self.dropped > 0 || self.beyond_oper_vls > 0 {
            let _ = writeln!(
                s,
                "  {} hops onto VL 15 (dropped), {} hops onto a VL beyond OperationalVLs",
                self.dropped, self.beyond_oper_vls
            );
            for h in &self.bad_hops {
                let nd = subnet.node(h.node);
                let _ = writeln!(
                    s,
                    "  LID {} -> LID {} SL {}: '{}' (0x{:016x}) port {} VL {} (data VLs {})",
                    h.slid.0, h.dlid.0, h.sl, nd.desc, nd.guid.0, h.port.0, h.vl, h.data_vls
                );
            }
        }
        s
    }
}

const DEAD: u32 = u32::MAX;
const CA: u32 = 0x8000_0000;

/// Per-thread accumulator.
#[derive(Default)]
struct Acc {
    edges: Vec<u64>,
    routes: u64,
    sls: u16,
    vls: u16,
    dropped: u64,
    beyond: u64,
    bad: Vec<BadHop>,
}

impl Acc {
    fn compact(&mut self) {
        self.edges.sort_unstable();
        self.edges.dedup();
    }
    fn bad_hop(&mut self, h: BadHop) {
        if h.vl == VL_DROP {
            self.dropped += 1;
        } else {
            self.beyond += 1;
        }
        let same_kind = self
            .bad
            .iter()
            .filter(|b| (b.vl == VL_DROP) == (h.vl == VL_DROP));
        if same_kind.count() < 8 {
            self.bad.push(h);
        }
    }
    fn merge(mut self, mut o: Acc) -> Acc {
        self.edges.append(&mut o.edges);
        self.compact();
        self.routes += o.routes;
        self.sls |= o.sls;
        self.vls |= o.vls;
        self.dropped += o.dropped;
        self.beyond += o.beyond;
        for h in o.bad {
            let same_kind = self
                .bad
                .iter()
                .filter(|b| (b.vl == VL_DROP) == (h.vl == VL_DROP))
                .count();
            if same_kind < 8 {
                self.bad.push(h);
            }
        }
        self
    }
}

/// A CA port that sources and sinks routes.
struct CaPort {
    node: NodeId,
    port: PortNum,
    lid: Lid,
    nlids: u16,
    sw_slot: u32,
    sw_port: PortNum,
}

/// Runs the VL-aware check of `lfts` on `subnet` (see the module docs).
#[must_use]
pub fn verify_vl(subnet: &Subnet, lfts: &Lfts, inp: &VlInputs<'_>) -> VlReport {
    let slots = lfts.slots_in(subnet);
    let sws = slots.switches();
    let slot_of = |n: NodeId| slots.slot(n).map_or(DEAD, |i| i as u32);
    let mut cas: Vec<CaPort> = Vec::new();
    let mut ca_of = HashMap::new();
    for (n, p) in subnet.end_ports() {
        if subnet.node(n).is_switch() {
            continue;
        }
        let Some(port) = subnet.port(n, p) else {
            continue;
        };
        let Some((rn, rp)) = port.remote else {
            continue;
        };
        if port.lid == Lid::UNASSIGNED || !link_usable(subnet, n, p) {
            continue;
        }
        let sw_slot = slot_of(rn);
        if sw_slot == DEAD {
            continue;
        }
        ca_of.insert((n, p), cas.len() as u32);
        cas.push(CaPort {
            node: n,
            port: p,
            lid: port.lid,
            nlids: 1u16 << port.lmc.min(7),
            sw_slot,
            sw_port: rp,
        });
    }
    // Channels: (switch slot, port ≥ 1) → id = chan_start[slot] + port − 1.
    let mut chan_start = Vec::with_capacity(sws.len() + 1);
    let mut next = Vec::new();
    let mut next_port = Vec::new();
    let mut remote = Vec::new();
    for &s in sws {
        chan_start.push(next.len() as u32);
        for p in 1..=subnet.node(s).num_ports {
            let r = subnet.port(s, PortNum(p)).and_then(|x| x.remote);
            let nx = match r {
                Some((rn, rp)) if link_usable(subnet, s, PortNum(p)) => {
                    if subnet.node(rn).is_switch() {
                        slot_of(rn)
                    } else {
                        ca_of.get(&(rn, rp)).map_or(DEAD, |&c| CA | c)
                    }
                }
                _ => DEAD,
            };
            next.push(nx);
            next_port.push(r.map_or(0, |(_, rp)| rp.0));
            remote.push(r);
        }
    }
    chan_start.push(next.len() as u32);
    let chan = |slot: usize, port: u8| -> Option<usize> {
        let a = *chan_start.get(slot)? as usize;
        let b = *chan_start.get(slot + 1)? as usize;
        let c = a + usize::from(port).checked_sub(1)?;
        (c < b).then_some(c)
    };
    let limit = |n: NodeId, p: PortNum| -> u8 {
        match inp.limit {
            VlLimit::Fixed(v) => v,
            VlLimit::OperVls => subnet
                .port(n, p)
                .and_then(|x| x.info)
                .map_or(0, |i| data_vls(i.operational_vls())),
        }
    };
    let vl_of = |n: NodeId, i: PortNum, o: PortNum, sl: u8| -> u8 {
        inp.sl2vl.vl(n, i, o, sl).unwrap_or(0)
    };
    let dests: Vec<(Lid, u32)> = cas
        .iter()
        .flat_map(|c| {
            (0..c.nlids).filter_map(move |o| Some((Lid(c.lid.0.checked_add(o)?), c.sw_slot)))
        })
        .collect();
    let max_hops = sws.len() + 1;
    let per_dest = |acc: &mut Acc, seen: &mut HashSet<u64>, dlid: Lid| {
        seen.clear();
        for src in &cas {
            for o in 0..src.nlids {
                let Some(slid) = src.lid.0.checked_add(o).map(Lid) else {
                    continue;
                };
                if dlid.0 >= src.lid.0 && dlid.0 < src.lid.0 + src.nlids {
                    continue; // to itself
                }
                let sl = inp.path_sl.sl(slid, dlid) & 0x0F;
                acc.routes += 1;
                acc.sls |= 1 << sl;
                let bad = |node, port, vl, dv| BadHop {
                    slid,
                    dlid,
                    sl,
                    node,
                    port,
                    vl,
                    data_vls: dv,
                };
                // The CA's own port.
                let vl0 = vl_of(src.node, src.port, src.port, sl);
                let dv = limit(src.node, src.port);
                if vl0 == VL_DROP || (dv > 0 && vl0 >= dv) {
                    acc.bad_hop(bad(src.node, src.port, vl0, dv));
                    continue;
                }
                let mut cur = src.sw_slot as usize;
                let mut in_port = src.sw_port;
                let mut vl_in = vl0;
                let mut prev: Option<usize> = None;
                for _ in 0..max_hops {
                    let key = (cur as u64) << 16
                        | u64::from(in_port.0) << 8
                        | u64::from(sl) << 4
                        | u64::from(vl_in);
                    // A state already walked for this destination continues as before: only
                    // the edge into it is new.
                    let first = seen.insert(key);
                    let sw = sws[cur];
                    let out = lfts
                        .table(sw)
                        .and_then(|t| t.get(usize::from(dlid.0)))
                        .copied()
                        .unwrap_or(NO_PATH);
                    if out == NO_PATH || out == 0 {
                        break; // dead end: the reachability check reports it
                    }
                    let Some(c) = chan(cur, out) else { break };
                    let vl = vl_of(sw, in_port, PortNum(out), sl);
                    let dv = limit(sw, PortNum(out));
                    if vl == VL_DROP || (dv > 0 && vl >= dv) {
                        if first {
                            acc.bad_hop(bad(sw, PortNum(out), vl, dv));
                        }
                        break;
                    }
                    let nx = next[c];
                    if nx == DEAD || nx & CA != 0 {
                        break; // arrived at a CA (or dead end)
                    }
                    acc.vls |= 1 << vl;
                    let node = (c as u64) << 4 | u64::from(vl);
                    if let Some(pc) = prev {
                        acc.edges.push(((pc as u64) << 32) | node);
                    }
                    if !first {
                        break;
                    }
                    prev = Some(node as usize);
                    cur = nx as usize;
                    in_port = PortNum(next_port[c]);
                    vl_in = vl;
                }
                if acc.edges.len() > 1 << 22 {
                    acc.compact();
                }
            }
        }
    };
    let acc = {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            let chunk = dests
                .len()
                .div_ceil(rayon::current_num_threads() * 4)
                .max(1);
            dests
                .par_chunks(chunk)
                .map(|ds| {
                    let mut a = Acc::default();
                    let mut seen = HashSet::new();
                    for d in ds {
                        per_dest(&mut a, &mut seen, d.0);
                    }
                    a.compact();
                    a
                })
                .reduce(Acc::default, Acc::merge)
        }
        #[cfg(not(feature = "parallel"))]
        {
            let mut a = Acc::default();
            let mut seen = HashSet::new();
            for d in &dests {
                per_dest(&mut a, &mut seen, d.0);
            }
            a.compact();
            a
        }
    };
    // Nodes are (channel << 4 | VL) and the channel ids are dense, so the graph is CSR over
    // 16 × channels.
    let nnodes = next.len() * 16;
    let mut start = vec![0u32; nnodes + 1];
    for &e in &acc.edges {
        start[(e >> 32) as usize + 1] += 1;
    }
    for i in 0..nnodes {
        start[i + 1] += start[i];
    }
    let succ: Vec<u32> = acc.edges.iter().map(|&e| e as u32).collect();
    let mut used = vec![false; nnodes];
    for &e in &acc.edges {
        used[(e >> 32) as usize] = true;
        used[(e & 0xFFFF_FFFF) as usize] = true;
    }
    let cycle = find_cycle_csr(&start, &succ);
    let slot_of_chan = |c: usize| -> usize { chan_start.partition_point(|&x| x as usize <= c) - 1 };
    let to_channel = |node: usize| -> Option<(Channel, u8)> {
        let c = node >> 4;
        let slot = slot_of_chan(c);
        let from = *sws.get(slot)?;
        let port = PortNum((c - chan_start[slot] as usize + 1) as u8);
        let (to, to_port) = remote[c]?;
        Some((
            Channel {
                from,
                port,
                to,
                to_port,
            },
            (node & 15) as u8,
        ))
    };
    VlReport {
        routes: acc.routes,
        channels: used.iter().filter(|&&u| u).count() as u64,
        dependencies: acc.edges.len() as u64,
        sls_used: acc.sls,
        vls_used: acc.vls,
        credit_loop: cycle.map(|c| c.into_iter().filter_map(to_channel).collect()),
        dropped: acc.dropped,
        beyond_oper_vls: acc.beyond,
        bad_hops: acc.bad,
    }
}

/// Iterative DFS over a CSR graph; one cycle (nodes in order) if there is any.
fn find_cycle_csr(start: &[u32], succ: &[u32]) -> Option<Vec<usize>> {
    let n = start.len().saturating_sub(1);
    // 0 = white, 1 = on the stack, 2 = done.
    let mut color = vec![0u8; n];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if color[root] != 0 || start[root] == start[root + 1] {
            continue;
        }
        color[root] = 1;
        stack.push((root, start[root] as usize));
        while let Some(top) = stack.last_mut() {
            let (u, i) = *top;
            if i < start[u + 1] as usize {
                top.1 += 1;
                let v = succ[i] as usize;
                match color[v] {
                    0 => {
                        color[v] = 1;
                        stack.push((v, start[v] as usize));
                    }
                    1 => {
                        let pos = stack.iter().position(|e| e.0 == v)?;
                        return Some(stack[pos..].iter().map(|e| e.0).collect());
                    }
                    _ => {}
                }
            } else {
                color[u] = 2;
                stack.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::graph::SwitchSlots;
    use crate::routing::vl::sl2vl_from;
    use crate::subnet::Node;
    use ibmad::attr::SlToVl;
    use ibmad::{Guid, NodeType};

    /// A ring of `n` switches, switch k with a CA on port 1, port 2 to switch k+1 and port 3
    /// to switch k−1; switch k has LID k+1, its CA LID n+k+1. Every route goes clockwise
    /// (port 2) — a credit loop on one VL.
    fn ring(n: u32) -> (Subnet, Lfts, Vec<NodeId>) {
        let mut s = Subnet::new();
        let sws: Vec<NodeId> = (0..n)
            .map(|k| {
                s.add_active_node(Node::new(
                    Guid(0x100 + u64::from(k)),
                    NodeType::SWITCH,
                    3,
                    &format!("sw{k}"),
                ))
            })
            .collect();
        let cas: Vec<NodeId> = (0..n)
            .map(|k| {
                s.add_active_node(Node::new(
                    Guid(0x1000 + 0x10 * u64::from(k)),
                    NodeType::CA,
                    1,
                    &format!("ca{k}"),
                ))
            })
            .collect();
        for k in 0..n as usize {
            s.connect_active((sws[k], PortNum(1)), (cas[k], PortNum(1)));
            s.connect_active(
                (sws[k], PortNum(2)),
                (sws[(k + 1) % n as usize], PortNum(3)),
            );
            s.port_mut(sws[k], PortNum(0)).unwrap().lid = Lid(k as u16 + 1);
            s.port_mut(cas[k], PortNum(1)).unwrap().lid = Lid((n as usize + k + 1) as u16);
        }
        let top = Lid((2 * n) as u16);
        let mut l = Lfts::new(&s, top);
        for (k, &sw) in sws.iter().enumerate() {
            for d in 0..n as usize {
                let port = if d == k { 1 } else { 2 };
                l.set(sw, Lid((n as usize + d + 1) as u16), Some(PortNum(port)));
                let sp = if d == k { 0 } else { 2 };
                l.set(sw, Lid(d as u16 + 1), Some(PortNum(sp)));
            }
        }
        (s, l, sws)
    }

    /// The SL of a path is its source switch's index; switch k sends SL s clockwise on VL 1
    /// once the route is past the dateline (k < s) or crossing it (k = n−1, the link n−1 → 0),
    /// else on VL 0.
    fn dateline(s: &Subnet, sws: &[NodeId], top: Lid) -> (PathSls, Sl2VlTables) {
        let n = sws.len();
        let slots = SwitchSlots::new(s);
        let mut sls = PathSls::per_source_switch(s, &slots, top);
        for (k, &sw) in sws.iter().enumerate() {
            for d in 1..=top.0 {
                assert!(sls.set_from_switch(sw, Lid(d), k as u8));
            }
        }
        let mut t = Sl2VlTables::new(s);
        for (k, &sw) in sws.iter().enumerate() {
            let mut v = [0u8; 16];
            for (sl, e) in v.iter_mut().enumerate() {
                *e = u8::from(k < sl || k == n - 1);
            }
            for i in 0..=3 {
                assert!(t.set(s, sw, PortNum(i), PortNum(2), sl2vl_from(v)));
            }
        }
        (sls, t)
    }

    #[test]
    fn ring_without_dateline_deadlocks_on_one_vl() {
        let (s, l, _) = ring(5);
        let t = Sl2VlTables::new(&s);
        let r = verify_vl(
            &s,
            &l,
            &VlInputs {
                sl2vl: &t,
                path_sl: &UniformSl(0),
                limit: VlLimit::Fixed(8),
            },
        );
        let c = r.credit_loop.as_ref().expect("a ring routed one way loops");
        assert_eq!(c.len(), 5, "the cycle is the whole ring");
        assert!(c.iter().all(|(_, vl)| *vl == 0));
        assert_eq!(r.routes, 20, "5 CAs × 4 destinations");
        assert_eq!(r.vls_used, 1);
        assert!(!r.is_ok());
        // The single-VL verifier agrees.
        assert!(crate::verify::verify(&s, &l).credit_loop.is_some());
    }

    #[test]
    fn ring_with_dateline_is_deadlock_free_on_two_vls() {
        let (s, l, sws) = ring(5);
        let (sls, t) = dateline(&s, &sws, l.top());
        let inp = VlInputs {
            sl2vl: &t,
            path_sl: &sls,
            limit: VlLimit::Fixed(2),
        };
        let r = verify_vl(&s, &l, &inp);
        assert!(r.credit_loop.is_none(), "{}", r.summary(&s));
        assert!(r.is_ok());
        assert_eq!(r.vls_used, 0b11, "VL 0 and VL 1 on switch links");
        assert_eq!(r.sls_used, 0b1_1111, "SL = source switch 0..=4");
        // VL 0 on links 0→1 … 3→4 (before the dateline), VL 1 on 4→0 (the dateline) and on
        // 0→1 … 2→3 after it; no route is still going after crossing at 3→4.
        assert_eq!(r.channels, 8);
        // With one data VL, the VL 1 hops are beyond OperationalVLs.
        let one = verify_vl(
            &s,
            &l,
            &VlInputs {
                limit: VlLimit::Fixed(1),
                ..inp
            },
        );
        assert!(one.beyond_oper_vls > 0);
        assert!(!one.is_ok());
        assert_eq!(one.bad_hops[0].vl, 1);
        // The same SL2VL tables with every path on SL 0 loop again: the SL carries the state.
        let r0 = verify_vl(
            &s,
            &l,
            &VlInputs {
                path_sl: &UniformSl(0),
                ..inp
            },
        );
        assert!(r0.credit_loop.is_some());
    }

    #[test]
    fn vl15_drops_the_route() {
        let (s, l, sws) = ring(3);
        let mut t = Sl2VlTables::new(&s);
        let mut drop = SlToVl::default();
        drop.set_vl(2, VL_DROP);
        t.set(&s, sws[1], PortNum(3), PortNum(2), drop);
        let r = verify_vl(
            &s,
            &l,
            &VlInputs {
                sl2vl: &t,
                path_sl: &UniformSl(2),
                limit: VlLimit::OperVls,
            },
        );
        assert!(r.dropped > 0);
        assert_eq!(r.bad_hops[0].node, sws[1]);
        assert_eq!(r.bad_hops[0].vl, 15);
        assert!(!r.is_ok());
        assert!(r.summary(&s).contains("VL 15 (dropped)"));
    }

    #[test]
    fn oper_vls_limit_reads_portinfo() {
        let (mut s, l, sws) = ring(3);
        let (sls, t) = dateline(&s, &sws, l.top());
        for &sw in &sws {
            for p in 1..=3 {
                let pi = s.port_mut(sw, PortNum(p)).unwrap().info.as_mut().unwrap();
                pi.set_operational_vls(2); // VL0-1
            }
        }
        let inp = VlInputs {
            sl2vl: &t,
            path_sl: &sls,
            limit: VlLimit::OperVls,
        };
        assert!(verify_vl(&s, &l, &inp).is_ok());
        let p = s
            .port_mut(sws[2], PortNum(2))
            .unwrap()
            .info
            .as_mut()
            .unwrap();
        p.set_operational_vls(1); // VL0 only, on the dateline link
        let r = verify_vl(&s, &l, &inp);
        assert!(r.beyond_oper_vls > 0);
        assert_eq!(r.bad_hops[0].data_vls, 1);
    }
}

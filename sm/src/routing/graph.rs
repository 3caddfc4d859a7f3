//! The switch graph every routing engine (and the checker and verifier) works on: which links
//! can carry routes ([`link_usable`]), one dense index per switch ([`SwitchSlots`], also the
//! row order of [`super::Lfts`]), the usable switch–switch links as compact adjacency
//! ([`SwitchGraph`]), one breadth-first search over them ([`SwitchGraph::bfs`]), the all-pairs
//! hop matrix ([`HopMatrix`]) and per-destination candidate port lists ([`Candidates`]).
//!
//! Everything is flat arrays indexed by slot (no pointer graph), built once per routing run
//! from the [`Subnet`]: for k36 (1,620 switches) the graph takes a few hundred KiB and the hop
//! matrix 2.6 MiB.
//!
//! Hop counts are `u8` with [`UNREACHABLE`] = 0xFF; a search stops growing them at 0xFE. A
//! discovered subnet never comes near that: a directed route has at most 63 hops (IBA vol1
//! §14.2.2.2, C14-6), so no two switches of one subnet are more than 126 hops apart.

use ibmad::PortNum;

use crate::subnet::{NodeId, Subnet};

/// Hop count meaning "unreachable".
pub const UNREACHABLE: u8 = 0xFF;
const NO_SLOT: u32 = u32::MAX;

/// True if the link at (n, p) can carry routes: linked, local port Init/Armed/Active, and the
/// remote port not known to be Down.
#[must_use]
pub fn link_usable(subnet: &Subnet, n: NodeId, p: PortNum) -> bool {
    if !subnet.is_link_up(n, p) {
        return false;
    }
    let Some((rn, rp)) = subnet.port(n, p).and_then(|x| x.remote) else {
        return false;
    };
    subnet
        .port(rn, rp)
        .is_some_and(|rport| rport.info.is_none() || rport.state() != ibmad::PortState::DOWN)
}

/// A dense index (slot) per switch: `NodeId` → slot and back. Slots follow the order the
/// switches are given in — [`Subnet::switches`], i.e. discovery order, for [`SwitchSlots::new`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchSlots {
    slot: Vec<u32>,
    sws: Vec<NodeId>,
}

impl SwitchSlots {
    /// Every switch of `subnet`, in discovery order.
    #[must_use]
    pub fn new(subnet: &Subnet) -> SwitchSlots {
        SwitchSlots::from_switches(subnet.nodes.len(), subnet.switches())
    }

    /// The given nodes (ids below `n_nodes`; others and repeats are skipped), in that order.
    #[must_use]
    pub fn from_switches(
        n_nodes: usize,
        switches: impl IntoIterator<Item = NodeId>,
    ) -> SwitchSlots {
        let mut slot = vec![NO_SLOT; n_nodes];
        let mut sws = Vec::new();
        for s in switches {
            if let Some(e) = slot.get_mut(s.idx()) {
                if *e == NO_SLOT {
                    *e = sws.len() as u32;
                    sws.push(s);
                }
            }
        }
        SwitchSlots { slot, sws }
    }

    /// Number of switches.
    #[inline]
    #[must_use]
    pub fn len(&self) -> usize {
        self.sws.len()
    }

    /// True if there are no switches.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sws.is_empty()
    }

    /// The slot of switch `n` (`None` for a node that is no switch here).
    #[inline]
    #[must_use]
    pub fn slot(&self, n: NodeId) -> Option<usize> {
        match self.slot.get(n.idx()) {
            Some(&i) if i != NO_SLOT => Some(i as usize),
            _ => None,
        }
    }

    /// The switch at slot `i`.
    #[inline]
    #[must_use]
    pub fn switch(&self, i: usize) -> Option<NodeId> {
        self.sws.get(i).copied()
    }

    /// The switches, by slot.
    #[inline]
    #[must_use]
    pub fn switches(&self) -> &[NodeId] {
        &self.sws
    }

    fn memory_bytes(&self) -> usize {
        self.slot.len() * 4 + self.sws.len() * 4
    }
}

/// A usable link from one switch to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The local port.
    pub port: u8,
    /// The port at the far end.
    pub remote_port: u8,
    /// The far switch's slot.
    pub to: u32,
}

/// The usable switch–switch links (see [`link_usable`]; loopback cables ignored, parallel links
/// kept), per switch slot in port order.
#[derive(Clone, Debug)]
pub struct SwitchGraph {
    slots: SwitchSlots,
    adj_start: Vec<u32>,
    adj: Vec<Edge>,
}

impl SwitchGraph {
    /// The graph of `subnet`'s switches, slots in discovery order.
    #[must_use]
    pub fn build(subnet: &Subnet) -> SwitchGraph {
        let slots = SwitchSlots::new(subnet);
        let mut adj_start = Vec::with_capacity(slots.len() + 1);
        let mut adj = Vec::new();
        for &s in slots.switches() {
            adj_start.push(adj.len() as u32);
            for p in 1..=subnet.node(s).num_ports {
                let Some((rn, rp)) = subnet.port(s, PortNum(p)).and_then(|x| x.remote) else {
                    continue;
                };
                let Some(r) = slots.slot(rn) else {
                    continue;
                };
                if rn == s || !link_usable(subnet, s, PortNum(p)) {
                    continue;
                }
                adj.push(Edge {
                    port: p,
                    remote_port: rp.0,
                    to: r as u32,
                });
            }
        }
        adj_start.push(adj.len() as u32);
        SwitchGraph {
            slots,
            adj_start,
            adj,
        }
    }

    /// The switch slots.
    #[inline]
    #[must_use]
    pub fn slots(&self) -> &SwitchSlots {
        &self.slots
    }

    /// Number of switches.
    #[inline]
    #[must_use]
    pub fn switch_count(&self) -> usize {
        self.slots.len()
    }

    /// Slot of switch `n`.
    #[inline]
    #[must_use]
    pub fn index_of(&self, n: NodeId) -> Option<usize> {
        self.slots.slot(n)
    }

    /// Switch at slot `i`.
    #[inline]
    #[must_use]
    pub fn switch_at(&self, i: usize) -> Option<NodeId> {
        self.slots.switch(i)
    }

    /// Usable links of switch slot `a`, in port order.
    #[inline]
    #[must_use]
    pub fn neighbors(&self, a: usize) -> &[Edge] {
        match (self.adj_start.get(a), self.adj_start.get(a + 1)) {
            (Some(&x), Some(&y)) => self.adj.get(x as usize..y as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Every usable link direction (a *channel*), switch by switch in slot order and, within a
    /// switch, in port order: channel `c` of switch `a` is `channels()[first_channel(a) + i]`
    /// for `neighbors(a)[i]`. Channel ids index this slice.
    #[inline]
    #[must_use]
    pub fn channels(&self) -> &[Edge] {
        &self.adj
    }

    /// The id of the first channel of switch slot `a` (channels of `a` are
    /// `first_channel(a)..first_channel(a + 1)`; `first_channel(switch_count())` is the total).
    #[inline]
    #[must_use]
    pub fn first_channel(&self, a: usize) -> usize {
        self.adj_start
            .get(a)
            .map_or(self.adj.len(), |&x| x as usize)
    }

    /// Multi-source breadth-first search: afterwards `dist[v]` is the number of switch hops from
    /// the nearest of `sources` to slot `v` ([`UNREACHABLE`] where none reaches; growth stops at
    /// 0xFE), and `queue` holds the reached slots in visit order. `dist` must have one entry
    /// per switch; sources out of range are ignored. Buffers are reused by the caller.
    pub fn bfs(
        &self,
        sources: impl IntoIterator<Item = usize>,
        dist: &mut [u8],
        queue: &mut Vec<u32>,
    ) {
        dist.fill(UNREACHABLE);
        queue.clear();
        for s in sources {
            if let Some(d) = dist.get_mut(s) {
                if *d == UNREACHABLE {
                    *d = 0;
                    queue.push(s as u32);
                }
            }
        }
        let mut head = 0;
        while let Some(&u) = queue.get(head) {
            head += 1;
            let u = u as usize;
            let d = dist[u];
            if d >= UNREACHABLE - 1 {
                continue;
            }
            let (a, b) = (self.adj_start[u] as usize, self.adj_start[u + 1] as usize);
            for e in &self.adj[a..b] {
                let v = &mut dist[e.to as usize];
                if *v == UNREACHABLE {
                    *v = d + 1;
                    queue.push(e.to);
                }
            }
        }
    }

    /// Bytes held by the graph.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.adj.len() * std::mem::size_of::<Edge>()
            + self.adj_start.len() * 4
            + self.slots.memory_bytes()
    }
}

/// The switch graph and its all-pairs hop matrix (one [`SwitchGraph::bfs`] per switch, in
/// parallel with the `parallel` feature).
///
/// This equals the fixed point of OpenSM's relaxation (`ucast_mgr_process_hop_0_1` +
/// `ucast_mgr_process_neighbors` with the default hop weight 1): the hop count via port `p` of
/// switch `s` to switch `t` is `1 + hops(remote(p), t)`.
#[derive(Clone, Debug)]
pub struct HopMatrix {
    graph: SwitchGraph,
    dist: Vec<u8>,
}

impl HopMatrix {
    /// BFS from every switch over usable switch–switch links.
    #[must_use]
    pub fn build(subnet: &Subnet) -> HopMatrix {
        HopMatrix::from_graph(SwitchGraph::build(subnet))
    }

    /// The hop matrix of `graph`.
    #[must_use]
    pub fn from_graph(graph: SwitchGraph) -> HopMatrix {
        let n = graph.switch_count();
        let mut dist = vec![UNREACHABLE; n * n];
        if n > 0 {
            let g = &graph;
            #[cfg(feature = "parallel")]
            {
                use rayon::prelude::*;
                dist.par_chunks_mut(n)
                    .enumerate()
                    .for_each_init(Vec::new, |q, (src, row)| g.bfs([src], row, q));
            }
            #[cfg(not(feature = "parallel"))]
            {
                let mut q = Vec::new();
                for (src, row) in dist.chunks_mut(n).enumerate() {
                    g.bfs([src], row, &mut q);
                }
            }
        }
        HopMatrix { graph, dist }
    }

    /// The switch graph.
    #[inline]
    #[must_use]
    pub fn graph(&self) -> &SwitchGraph {
        &self.graph
    }

    /// Number of switches.
    #[inline]
    #[must_use]
    pub fn switch_count(&self) -> usize {
        self.graph.switch_count()
    }

    /// Slot of switch `n` in the matrix.
    #[inline]
    #[must_use]
    pub fn index_of(&self, n: NodeId) -> Option<usize> {
        self.graph.index_of(n)
    }

    /// Switch at slot `i`.
    #[inline]
    #[must_use]
    pub fn switch_at(&self, i: usize) -> Option<NodeId> {
        self.graph.switch_at(i)
    }

    /// Switch hops from switch `a` to switch `b` (`None` if unreachable or not switches).
    #[inline]
    #[must_use]
    pub fn hops(&self, a: NodeId, b: NodeId) -> Option<u8> {
        let (a, b) = (self.index_of(a)?, self.index_of(b)?);
        self.hops_idx(a, b)
    }

    /// Hops by slot.
    #[inline]
    #[must_use]
    pub fn hops_idx(&self, a: usize, b: usize) -> Option<u8> {
        let n = self.switch_count();
        if b >= n {
            return None;
        }
        match self.dist.get(a * n + b) {
            Some(&d) if d != UNREACHABLE => Some(d),
            _ => None,
        }
    }

    /// Hops from slot `a` to every slot (empty if `a` is out of range).
    #[inline]
    #[must_use]
    pub fn row(&self, a: usize) -> &[u8] {
        let n = self.switch_count();
        self.dist.get(a * n..(a + 1) * n).unwrap_or(&[])
    }

    /// Usable links of slot `a`, in port order.
    #[inline]
    #[must_use]
    pub fn neighbors(&self, a: usize) -> &[Edge] {
        self.graph.neighbors(a)
    }

    /// Bytes held by the matrix and graph.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.dist.len() + self.graph.memory_bytes()
    }
}

/// Candidate egress ports of one switch per destination switch slot `t`, ports ascending, as
/// CSR arrays (`ports[start[t]..start[t + 1]]`). An empty list means "no path".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidates {
    start: Vec<u32>,
    ports: Vec<u8>,
}

impl Candidates {
    /// From CSR arrays: list `t` is `ports[start[t]..start[t + 1]]`, ports ascending.
    #[must_use]
    pub fn from_csr(start: Vec<u32>, ports: Vec<u8>) -> Candidates {
        Candidates { start, ports }
    }

    /// The minimum-hop ports of switch slot `si` toward every other switch: the usable links
    /// whose far end is one hop closer to the destination.
    #[must_use]
    pub fn min_hop(hm: &HopMatrix, si: usize) -> Candidates {
        let n = hm.switch_count();
        let my = hm.row(si);
        let nb: Vec<(u8, &[u8])> = hm
            .neighbors(si)
            .iter()
            .map(|e| (e.port, hm.row(e.to as usize)))
            .collect();
        let mut start = Vec::with_capacity(n + 1);
        let mut ports = Vec::with_capacity(n * 2);
        for (t, &least) in my.iter().enumerate() {
            start.push(ports.len() as u32);
            if least == UNREACHABLE || least == 0 {
                continue;
            }
            for &(p, row) in &nb {
                if row[t].wrapping_add(1) == least {
                    ports.push(p);
                }
            }
        }
        start.push(ports.len() as u32);
        Candidates { start, ports }
    }

    /// Number of lists (destination slots).
    #[inline]
    #[must_use]
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// True if there are no lists.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// List `t` (empty if out of range).
    #[inline]
    #[must_use]
    pub fn of(&self, t: usize) -> &[u8] {
        match (self.start.get(t), self.start.get(t + 1)) {
            (Some(&a), Some(&b)) => self.ports.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::Node;
    use ibmad::attr::PortInfo;
    use ibmad::{Guid, NodeType, PhysState, PortState};

    fn active() -> PortInfo {
        let mut p = <PortInfo as zerocopy::FromZeros>::new_zeroed();
        p.set_port_state(PortState::ACTIVE);
        p.set_phys_state(PhysState::LINK_UP);
        p
    }

    /// A chain of `n` switches (port 2 → port 1 of the next), plus a loopback cable on the
    /// first and a parallel link between the first two.
    fn chain(n: u64) -> Subnet {
        let mut s = Subnet::new();
        let ids: Vec<NodeId> = (0..n)
            .map(|i| s.add_node(Node::new(Guid(0x100 + i), NodeType::SWITCH, 8, "")))
            .collect();
        let cable = |s: &mut Subnet, a: (NodeId, u8), b: (NodeId, u8)| {
            s.link((a.0, PortNum(a.1)), (b.0, PortNum(b.1)));
            for (x, p) in [a, b] {
                s.port_mut(x, PortNum(p)).unwrap().info = Some(active());
            }
        };
        for w in ids.windows(2) {
            cable(&mut s, (w[0], 2), (w[1], 1));
        }
        cable(&mut s, (ids[0], 5), (ids[0], 6));
        cable(&mut s, (ids[0], 7), (ids[1], 8));
        s
    }

    #[test]
    fn graph_skips_loopbacks_and_keeps_parallel_links() {
        let s = chain(3);
        let g = SwitchGraph::build(&s);
        assert_eq!(g.switch_count(), 3);
        let ports: Vec<(u8, u8, u32)> = g
            .neighbors(0)
            .iter()
            .map(|e| (e.port, e.remote_port, e.to))
            .collect();
        assert_eq!(ports, vec![(2, 1, 1), (7, 8, 1)]);
        assert_eq!(g.neighbors(9), &[]);
    }

    #[test]
    fn bfs_multi_source_and_hop_matrix() {
        let s = chain(5);
        let g = SwitchGraph::build(&s);
        let (mut d, mut q) = (vec![0u8; 5], Vec::new());
        g.bfs([0, 4], &mut d, &mut q);
        assert_eq!(d, vec![0, 1, 2, 1, 0]);
        assert_eq!(q.len(), 5);
        let hm = HopMatrix::from_graph(g);
        assert_eq!(hm.hops_idx(0, 4), Some(4));
        assert_eq!(hm.hops_idx(0, 5), None);
        let c = Candidates::min_hop(&hm, 1);
        assert_eq!(c.of(0), &[1, 8], "both parallel links");
        assert_eq!(c.of(1), &[] as &[u8], "own slot: no list");
        assert_eq!(c.of(4), &[2]);
    }

    #[test]
    fn unusable_links_are_not_in_the_graph() {
        let mut s = chain(2);
        // The far end of the 0→1 link is known to be Down.
        let (n1, p1) = s.port(NodeId(0), PortNum(2)).unwrap().remote.unwrap();
        let mut down = active();
        down.set_port_state(PortState::DOWN);
        s.port_mut(n1, p1).unwrap().info = Some(down);
        let g = SwitchGraph::build(&s);
        assert_eq!(g.neighbors(0).len(), 1, "only the parallel link is left");
        let slots = SwitchSlots::from_switches(2, [NodeId(1), NodeId(1), NodeId(7)]);
        assert_eq!(slots.len(), 1);
        assert_eq!(slots.slot(NodeId(1)), Some(0));
        assert_eq!(slots.slot(NodeId(0)), None);
    }
}

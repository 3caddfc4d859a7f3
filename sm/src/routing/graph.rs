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

/// True if the link at (n, p) can carry routes: linked, local port Init/Armed/Active, the
/// remote port not known to be Down, and, between two switches, neither end marked unhealthy
/// ([`crate::subnet::Port::unhealthy`]).
#[must_use]
pub fn link_usable(subnet: &Subnet, n: NodeId, p: PortNum) -> bool {
    if !subnet.is_link_up(n, p) {
        return false;
    }
    let Some(port) = subnet.port(n, p) else {
        return false;
    };
    let Some((rn, rp)) = port.remote else {
        return false;
    };
    let Some(rport) = subnet.port(rn, rp) else {
        return false;
    };
    // OpenSM routes no transit over an unhealthy switch port (osm_link_is_healthy).
    let unhealthy = (port.unhealthy || rport.unhealthy)
        && subnet.node(n).is_switch()
        && subnet.node(rn).is_switch();
    !unhealthy && (rport.info.is_none() || rport.state() != ibmad::PortState::DOWN)
}

/// The fastest speed in a mask of speeds (extended speeds shifted up by 4, as OpenSM's
/// `ib_get_highest_link_speed` takes them), or 0.
fn highest_speed(speeds: u8) -> u8 {
    (0..8)
        .rev()
        .map(|b| 1u8 << b)
        .find(|m| speeds & m != 0)
        .unwrap_or(0)
}

/// OpenSM's `osm_link_is_throttled`: the link on port `p` of node `n` runs at different
/// speeds or widths at its two ends, or below the fastest speed or widest width both ends
/// enable. Extended speeds count where the end's CapabilityMask (a switch's port 0's) says it
/// has them; FDR10 (a vendor speed) is not known. A link whose far end or PortInfo is not
/// known, or an end of which enables no width or no speed (a subnet built from a topology
/// file, not read from ports: a real port always enables some), is not throttled.
#[must_use]
pub fn link_throttled(subnet: &Subnet, n: NodeId, p: PortNum) -> bool {
    use ibmad::attr::port_info::cap;
    let Some(port) = subnet.port(n, p) else {
        return false;
    };
    let Some((rn, rp)) = port.remote else {
        return false;
    };
    let (Some(a), Some(b)) = (port.info, subnet.port(rn, rp).and_then(|x| x.info)) else {
        return false;
    };
    let ext = |node: NodeId, here: &ibmad::attr::PortInfo| {
        let mask_port = if subnet.node(node).is_switch() {
            subnet.port(node, PortNum(0)).and_then(|x| x.info)
        } else {
            Some(*here)
        };
        mask_port.is_some_and(|i| i.capability_mask.get() & cap::IS_EXT_SPEEDS_SUP != 0)
    };
    let speeds = |i: &ibmad::attr::PortInfo, ext: bool, enabled: bool| {
        let (base, x) = if enabled {
            (i.link_speed_enabled(), i.link_speed_ext_enabled())
        } else {
            (i.link_speed_active(), i.link_speed_ext_active())
        };
        (if ext { (x & 0xF) << 4 } else { 0 }) | (base & 0x7)
    };
    if [a, b]
        .iter()
        .any(|i| i.link_width_enabled == 0 || i.link_speed_enabled() == 0)
    {
        return false;
    }
    let (ea, eb) = (ext(n, &a), ext(rn, &b));
    let top_speed = highest_speed(speeds(&a, ea, true) & speeds(&b, eb, true));
    let top_width =
        ibmad::attr::port_info::LinkWidths(a.link_width_enabled & b.link_width_enabled).widest();
    let (sa, sb) = (
        highest_speed(speeds(&a, ea, false)),
        highest_speed(speeds(&b, eb, false)),
    );
    let (wa, wb) = (a.link_width_active, b.link_width_active);
    sa != sb || sa != top_speed || wa != wb || wa != top_width
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
        SwitchGraph::build_keeping(subnet, |_, _| true)
    }

    /// [`SwitchGraph::build`] without the throttled links ([`link_throttled`]) when `avoid`
    /// (`avoid_throttled_links`), each logged as OpenSM's `prefix` engine logs it.
    #[must_use]
    pub fn build_avoiding_throttled(
        subnet: &Subnet,
        avoid: bool,
        prefix: &str,
        log: &mut Vec<String>,
    ) -> SwitchGraph {
        if !avoid {
            return SwitchGraph::build(subnet);
        }
        SwitchGraph::build_keeping(subnet, |s, p| {
            if !link_throttled(subnet, s, p) {
                return true;
            }
            let Some((rn, rp)) = subnet.port(s, p).and_then(|x| x.remote) else {
                return true;
            };
            log.push(format!(
                "{prefix}: Detected and ignoring throttled link: 0x{:016x}/P{} <--> 0x{:016x}/P{}",
                subnet.node(s).guid.0,
                p.0,
                subnet.node(rn).guid.0,
                rp.0
            ));
            false
        })
    }

    /// The graph with the usable switch links `keep(switch, port)` accepts.
    fn build_keeping(
        subnet: &Subnet,
        mut keep: impl FnMut(NodeId, PortNum) -> bool,
    ) -> SwitchGraph {
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
                if rn == s || !link_usable(subnet, s, PortNum(p)) || !keep(s, PortNum(p)) {
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

    /// Hop rows of up to 64 sources at once, `first..first + k` for `k = rows.len() / n` (`n`
    /// switches): afterwards `rows[i * n + v]` is what [`SwitchGraph::bfs`] from the single
    /// source `first + i` leaves in `dist[v]` — hops, [`UNREACHABLE`] where none, growth
    /// stopped at 0xFE.
    ///
    /// One level-synchronous search carries every source as a bit of a `u64` per switch: a
    /// switch's frontier word is pushed (OR) into each out-neighbour's next word, and the bits
    /// new at a switch are the sources that reach it first at this level. So each level walks
    /// the edges once for all 64 sources instead of once per source.
    fn bfs_batch(&self, first: usize, rows: &mut [u8], b: &mut BatchBfs) {
        let n = self.switch_count();
        if n == 0 {
            return;
        }
        rows.fill(UNREACHABLE);
        let k = (rows.len() / n).min(64);
        for w in [&mut b.seen, &mut b.frontier, &mut b.next] {
            w.clear();
            w.resize(n, 0);
        }
        b.active.clear();
        for i in 0..k {
            let s = first + i;
            if s < n {
                b.seen[s] = 1 << i;
                b.frontier[s] = 1 << i;
                b.active.push(s as u32);
                rows[i * n + s] = 0;
            }
        }
        // Levels 1..=0xFE: a switch first reached at 0xFE is not expanded, as in `bfs`.
        for level in 1..UNREACHABLE {
            if b.active.is_empty() {
                break;
            }
            b.touched.clear();
            for &u in &b.active {
                let u = u as usize;
                let f = b.frontier[u];
                let (x, y) = (self.adj_start[u] as usize, self.adj_start[u + 1] as usize);
                for e in &self.adj[x..y] {
                    let to = e.to as usize;
                    let add = f & !b.seen[to];
                    if add != 0 {
                        if b.next[to] == 0 {
                            b.touched.push(e.to);
                        }
                        b.next[to] |= add;
                    }
                }
            }
            b.active.clear();
            for &v in &b.touched {
                let v = v as usize;
                let mut new = b.next[v];
                b.next[v] = 0;
                b.seen[v] |= new;
                b.frontier[v] = new;
                b.active.push(v as u32);
                while new != 0 {
                    let i = new.trailing_zeros() as usize;
                    rows[i * n + v] = level;
                    new &= new - 1;
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

/// Reusable buffers of [`SwitchGraph::bfs_batch`]: one word per switch (bit `i` = source
/// `first + i`) for the sources that reached it, the sources that reached it last level (read
/// only for the switches in `active`, the frontier) and those reaching it this level (set for
/// the switches in `touched`).
#[derive(Default)]
struct BatchBfs {
    seen: Vec<u64>,
    frontier: Vec<u64>,
    next: Vec<u64>,
    active: Vec<u32>,
    touched: Vec<u32>,
}

/// The switch graph and its all-pairs hop matrix (the rows of [`SwitchGraph::bfs`] from every
/// switch, 64 sources per search, batches in parallel with the `parallel` feature).
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
        // Zeroed (untouched pages); every batch fills its own rows first, in parallel.
        let mut dist = vec![0u8; n * n];
        if n > 0 {
            let g = &graph;
            #[cfg(feature = "parallel")]
            {
                use rayon::prelude::*;
                dist.par_chunks_mut(64 * n).enumerate().for_each_init(
                    BatchBfs::default,
                    |b, (i, rows)| {
                        g.bfs_batch(64 * i, rows, b);
                    },
                );
            }
            #[cfg(not(feature = "parallel"))]
            {
                let mut b = BatchBfs::default();
                for (i, rows) in dist.chunks_mut(64 * n).enumerate() {
                    g.bfs_batch(64 * i, rows, &mut b);
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

/// Candidate egress ports of one switch per destination switch slot `t`, ports ascending. An
/// empty list means "no path". Destinations with the same ports may share one stored list
/// ([`Candidates::list_id`]); [`Candidates::of`] gives each destination's ports either way, and
/// two `Candidates` are equal when every destination's ports are.
#[derive(Clone, Debug)]
pub struct Candidates {
    /// Per destination slot: the index of its list in `spans`.
    list: Vec<u32>,
    /// Per stored list: its ports, `ports[a..b]`.
    spans: Vec<(u32, u32)>,
    ports: Vec<u8>,
    /// True if no two stored lists have the same ports.
    distinct: bool,
}

impl PartialEq for Candidates {
    fn eq(&self, other: &Candidates) -> bool {
        self.len() == other.len() && (0..self.len()).all(|t| self.of(t) == other.of(t))
    }
}

impl Eq for Candidates {}

impl Candidates {
    /// Of each list of switch slot `si`, the first port and the others reaching the same
    /// neighbour (dor's "first dimension, spread over its parallel links").
    #[must_use]
    pub fn first_neighbour_only(&self, hm: &HopMatrix, si: usize) -> Candidates {
        let to_of = |p: u8| hm.neighbors(si).iter().find(|e| e.port == p).map(|e| e.to);
        let mut start = vec![0u32];
        let mut ports = Vec::new();
        for t in 0..self.len() {
            if let Some(&first) = self.of(t).first() {
                let to = to_of(first);
                ports.extend(self.of(t).iter().copied().filter(|&p| to_of(p) == to));
            }
            start.push(ports.len() as u32);
        }
        Candidates::from_csr(start, ports)
    }

    /// The same lists, each ordered by `rank` of its ports (a stable sort, so equal ranks
    /// keep port order): OpenSM's `port_search_ordering_file` scan order. Stored lists stay
    /// shared.
    #[must_use]
    pub fn ordered_by(&self, rank: &[u8; 256]) -> Candidates {
        let mut ports = self.ports.clone();
        for &(a, b) in &self.spans {
            if let Some(l) = ports.get_mut(a as usize..b as usize) {
                l.sort_by_key(|&p| rank[usize::from(p)]);
            }
        }
        Candidates {
            list: self.list.clone(),
            spans: self.spans.clone(),
            ports,
            distinct: self.distinct,
        }
    }

    /// From CSR arrays: list `t` is `ports[start[t]..start[t + 1]]`, ports ascending (one
    /// stored list per destination).
    #[must_use]
    pub fn from_csr(start: Vec<u32>, ports: Vec<u8>) -> Candidates {
        let spans: Vec<(u32, u32)> = start.windows(2).map(|w| (w[0], w[1])).collect();
        Candidates {
            list: (0..spans.len() as u32).collect(),
            spans,
            ports,
            distinct: false,
        }
    }

    /// The minimum-hop ports of switch slot `si` toward every other switch: the usable links
    /// whose far end is one hop closer to the destination. Destinations reached through the
    /// same links share one stored list: each distinct word of [`min_hop_words`] is a list,
    /// spelled out once.
    #[must_use]
    pub fn min_hop(hm: &HopMatrix, si: usize) -> Candidates {
        let nb = hm.neighbors(si);
        let Some((cols, words)) = min_hop_words(hm, si) else {
            return Candidates::one_empty(hm.row(si).len());
        };
        let n = hm.row(si).len();
        let spell = |w: u64, g: usize, ports: &mut Vec<u8>| {
            let mut w = w;
            while w != 0 {
                ports.push(nb[64 * g + w.trailing_zeros() as usize].port);
                w &= w - 1;
            }
        };
        let (list, spans, ports) = if words == 1 {
            // The common case (at most 64 links): a destination's word is its key.
            distinct_lists(cols.iter().copied().take(n), |w, ports| spell(w, 0, ports))
        } else {
            distinct_lists(cols.chunks_exact(words).take(n), |col, ports| {
                for (g, &w) in col.iter().enumerate() {
                    spell(w, g, ports);
                }
            })
        };
        Candidates {
            list,
            spans,
            ports,
            distinct: true,
        }
    }

    /// [`Candidates::min_hop`] kept to the lowest dimension (OpenSM's `dor`): per destination,
    /// the ports that reach the same neighbour as its lowest-numbered minimum-hop port (more
    /// than one only through parallel links). A destination's list is keyed by that
    /// neighbour, so there are at most as many lists as links, found without hashing.
    ///
    /// Per block of 64 destinations, the neighbours' masks ([`Block::closer`]) are taken in
    /// port order, each claiming the destinations no earlier one has: no transpose. (Of
    /// parallel links only the first can claim, so the lists are distinct.)
    #[must_use]
    pub fn lowest_dimension(hm: &HopMatrix, si: usize) -> Candidates {
        const B: usize = Block::B;
        let nb = hm.neighbors(si);
        let my = hm.row(si);
        let n = my.len();
        let rows: Vec<&[u8]> = nb.iter().map(|e| hm.row(e.to as usize)).collect();
        // Per destination: 1 + the first neighbour a hop closer, 0 for none.
        let mut first = vec![0u32; n];
        for lo in (0..n).step_by(B) {
            let block = Block::new(my, lo);
            // Destinations of the block no neighbour has claimed yet.
            let mut open = u64::MAX;
            for (j, row) in rows.iter().enumerate() {
                if open == 0 {
                    break;
                }
                let mut claim = block.closer(row) & open;
                open &= !claim;
                while claim != 0 {
                    let k = claim.trailing_zeros() as usize;
                    claim &= claim - 1;
                    first[lo + k] = j as u32 + 1;
                }
            }
        }
        // List 0 is the empty one; the list of the neighbour `first` names j (1 + its index),
        // once made, is `made[j]`.
        let mut spans: Vec<(u32, u32)> = vec![(0, 0)];
        let mut ports: Vec<u8> = Vec::new();
        let mut made = vec![0u32; nb.len() + 1];
        for f in &mut first {
            let j = *f as usize;
            if j != 0 && made[j] == 0 {
                let a = ports.len() as u32;
                let to = nb[j - 1].to;
                ports.extend(nb.iter().filter(|e| e.to == to).map(|e| e.port));
                spans.push((a, ports.len() as u32));
                made[j] = spans.len() as u32 - 1;
            }
            *f = made[j];
        }
        Candidates {
            list: first,
            spans,
            ports,
            distinct: true,
        }
    }

    /// Every one of `n` destinations has the one empty list.
    fn one_empty(n: usize) -> Candidates {
        Candidates {
            list: vec![0; n],
            spans: vec![(0, 0)],
            ports: Vec::new(),
            distinct: true,
        }
    }
    /// Destination `t` uses `lists[ids[t]]` (test helper for lists shared between
    /// destinations).
    #[cfg(test)]
    pub(crate) fn shared(ids: Vec<u32>, lists: &[Vec<u8>]) -> Candidates {
        let mut spans = Vec::new();
        let mut ports = Vec::new();
        for l in lists {
            let a = ports.len() as u32;
            ports.extend_from_slice(l);
            spans.push((a, ports.len() as u32));
        }
        Candidates {
            list: ids,
            spans,
            ports,
            distinct: false,
        }
    }

    /// Number of lists (destination slots).
    #[inline]
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
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
        self.list.get(t).map_or(&[], |&i| self.stored(i as usize))
    }

    /// Which stored list destination `t` uses (destinations with the same id have the same
    /// ports); `None` if out of range.
    #[inline]
    #[must_use]
    pub fn list_id(&self, t: usize) -> Option<usize> {
        self.list.get(t).map(|&i| i as usize)
    }

    /// Number of stored lists (ids are below it).
    #[inline]
    #[must_use]
    pub fn stored_lists(&self) -> usize {
        self.spans.len()
    }

    /// True if every stored list has other ports than the others (so destinations with equal
    /// lists have the same [`Candidates::list_id`]); false if that is not known.
    #[inline]
    #[must_use]
    pub fn lists_distinct(&self) -> bool {
        self.distinct
    }

    /// Stored list `i` (empty if out of range).
    #[inline]
    #[must_use]
    pub fn stored(&self, i: usize) -> &[u8] {
        match self.spans.get(i) {
            Some(&(a, b)) => self.ports.get(a as usize..b as usize).unwrap_or(&[]),
            None => &[],
        }
    }
}

/// The minimum-hop neighbours of switch slot `si` toward every switch, as bit words: word `g`
/// of destination `t` (`cols[t * words + g]`) has bit `j` set if neighbour `64 * g + j` is a
/// hop closer to `t`. `None` without neighbours.
///
/// Per block of 64 destinations: a byte compare of each neighbour's hop row (which
/// vectorises) gives the neighbour's mask of destinations it leads on toward; a bit transpose
/// turns the 64 masks of up to 64 neighbours into one word per destination (bit `j` =
/// neighbour `j`, so port order).
fn min_hop_words(hm: &HopMatrix, si: usize) -> Option<(Vec<u64>, usize)> {
    const B: usize = Block::B;
    let my = hm.row(si);
    let n = my.len(); // 0 for a slot out of range: no destinations
    let nb = hm.neighbors(si);
    let rows: Vec<&[u8]> = nb.iter().map(|e| hm.row(e.to as usize)).collect();
    let blocks = n.div_ceil(B);
    // Words per destination: one per 64 neighbours.
    let words = nb.len().div_ceil(64);
    if words == 0 {
        return None;
    }
    // `cols[t * words + g]`: bit `j` set if neighbour `64 * g + j` leads on toward `t`.
    let mut cols = vec![0u64; blocks * B * words];
    let mut masks = [0u64; 64];
    for b in 0..blocks {
        let lo = b * B;
        let block = Block::new(my, lo);
        for (g, group) in rows.chunks(64).enumerate() {
            masks.fill(0);
            for (m, row) in masks.iter_mut().zip(group) {
                *m = block.closer(row);
            }
            transpose64(&mut masks);
            for (k, &m) in masks.iter().enumerate() {
                cols[(lo + k) * words + g] = m;
            }
        }
    }
    Some((cols, words))
}

/// A block of up to 64 destinations `lo..lo + 64` of one switch's hop row `my`: the hop count
/// a neighbour a hop closer has toward each, and whether it has one at all (not the switch
/// itself, not unreachable); 0 past the row's end.
struct Block {
    lo: usize,
    hi: usize,
    want: [u8; Block::B],
    valid: [u8; Block::B],
}

impl Block {
    const B: usize = 64;

    fn new(my: &[u8], lo: usize) -> Block {
        let hi = my.len().min(lo + Block::B);
        let mut want = [0u8; Block::B];
        let mut valid = [0u8; Block::B];
        for ((w, v), &h) in want.iter_mut().zip(valid.iter_mut()).zip(&my[lo..hi]) {
            *w = h.wrapping_sub(1);
            *v = u8::from(h != 0 && h != UNREACHABLE);
        }
        Block {
            lo,
            hi,
            want,
            valid,
        }
    }

    /// Bit `k`: the neighbour whose hop row is `row` is a hop closer to destination `lo + k`
    /// (a byte compare that vectorises, then [`pack_bits`]).
    #[inline]
    fn closer(&self, row: &[u8]) -> u64 {
        const B: usize = Block::B;
        let (lo, hi) = (self.lo, self.hi);
        let r: [u8; B] = match row.get(lo..lo + B).map(<[u8; B]>::try_from) {
            Some(Ok(r)) => r,
            _ => {
                let mut r = [0u8; B];
                r[..hi - lo].copy_from_slice(&row[lo..hi]);
                r
            }
        };
        let mut eq = [0u8; B];
        for (((q, &r), &w), &v) in eq.iter_mut().zip(&r).zip(&self.want).zip(&self.valid) {
            *q = u8::from(r == w) & v;
        }
        pack_bits(&eq)
    }
}

/// The lists of [`Candidates`] from one key per destination (equal keys, equal lists):
/// `spell` writes a key's ports, once per distinct key. Returns the list index of every
/// destination, the stored lists' spans and their ports.
fn distinct_lists<K: Copy + Eq + std::hash::Hash>(
    keys: impl Iterator<Item = K>,
    mut spell: impl FnMut(K, &mut Vec<u8>),
) -> (Vec<u32>, Vec<(u32, u32)>, Vec<u8>) {
    let mut list = Vec::with_capacity(keys.size_hint().0);
    let mut spans: Vec<(u32, u32)> = Vec::new();
    let mut ports = Vec::new();
    let mut ids: crate::FastMap<K, u32> = crate::FastMap::default();
    let mut last: Option<(K, u32)> = None;
    for key in keys {
        let id = match last {
            // Neighbouring destinations often have the same list: no lookup.
            Some((l, id)) if l == key => id,
            _ => *ids.entry(key).or_insert_with(|| {
                let a = ports.len() as u32;
                spell(key, &mut ports);
                spans.push((a, ports.len() as u32));
                spans.len() as u32 - 1
            }),
        };
        last = Some((key, id));
        list.push(id);
    }
    (list, spans, ports)
}

/// Bit `8 * i + k` of the result is byte `8 * i + k` of `eq`, every byte 0 or 1: eight bytes
/// at a time, one multiply gathers their low bits into the top byte (the products of distinct
/// bytes and multiplier bits land on distinct bits, so nothing carries).
#[inline]
fn pack_bits(eq: &[u8; 64]) -> u64 {
    let mut m = 0u64;
    for (i, c) in eq.chunks_exact(8).enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        m |= (u64::from_le_bytes(w).wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * i);
    }
    m
}

/// Transposes a 64 × 64 bit matrix: afterwards bit `j` of `a[k]` is what bit `k` of `a[j]`
/// was. Six rounds swap ever smaller off-diagonal blocks (32, 16, … 1 bits wide).
#[inline]
fn transpose64(a: &mut [u64; 64]) {
    let mut j = 32;
    let mut m: u64 = 0x0000_0000_FFFF_FFFF;
    while j != 0 {
        let mut k = 0;
        while k < 64 {
            let t = ((a[k] >> j) ^ a[k + j]) & m;
            a[k] ^= t << j;
            a[k + j] ^= t;
            k = (k + j + 1) & !j;
        }
        j >>= 1;
        m ^= m << j;
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

    /// A random fabric of `n` switches with `ports` ports each: `links` cables between random free
    /// ports (parallel links and loopbacks among them), some of them usable in one direction
    /// only (the far port has no PortInfo) or not at all (a port Down); switches left without
    /// cables and whole groups cut off make unreachable parts.
    fn random_fabric(seed: u64, n: usize, ports: u8, links: usize) -> Subnet {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut s = Subnet::new();
        let ids: Vec<NodeId> = (0..n)
            .map(|i| {
                s.add_node(Node::new(
                    Guid(0x1000 + i as u64),
                    NodeType::SWITCH,
                    ports,
                    "",
                ))
            })
            .collect();
        let mut free: Vec<Vec<u8>> = vec![(1..=ports).collect(); n];
        // Switches at or past `reach` only cable among themselves (when there are a few).
        let reach = if n > 8 { n - n / 8 } else { n };
        for _ in 0..links {
            let a = rng.gen_range(0..n);
            let b = if a < reach {
                rng.gen_range(0..reach)
            } else {
                rng.gen_range(reach..n)
            };
            let (Some(&pa), Some(&pb)) = (free[a].last(), free[b].first()) else {
                continue;
            };
            if a == b && pa == pb {
                continue;
            }
            free[a].pop();
            free[b].retain(|&p| p != pb);
            s.link((ids[a], PortNum(pa)), (ids[b], PortNum(pb)));
            let mut ia = active();
            let mut ib = Some(active());
            match rng.gen_range(0..10) {
                0 => ib = None,                          // usable from a only
                1 => ia.set_port_state(PortState::DOWN), // not usable
                2 => ia.set_port_state(PortState::INIT),
                _ => {}
            }
            s.port_mut(ids[a], PortNum(pa)).unwrap().info = Some(ia);
            s.port_mut(ids[b], PortNum(pb)).unwrap().info = ib;
        }
        s
    }

    /// The hop matrix row by row against one plain [`SwitchGraph::bfs`] per source.
    fn assert_matrix_matches_bfs(hm: &HopMatrix) {
        let g = hm.graph();
        let n = g.switch_count();
        let (mut d, mut q) = (vec![0u8; n], Vec::new());
        for src in 0..n {
            g.bfs([src], &mut d, &mut q);
            assert_eq!(hm.row(src), &d[..], "row of source {src} of {n}");
        }
    }

    /// The straightforward candidate lists: every destination, every neighbour in port order.
    fn min_hop_by_scan(hm: &HopMatrix, si: usize) -> Candidates {
        let my = hm.row(si);
        let mut start = vec![0u32];
        let mut ports = Vec::new();
        for (t, &least) in my.iter().enumerate() {
            if least != UNREACHABLE && least != 0 {
                for e in hm.neighbors(si) {
                    if hm.row(e.to as usize)[t].wrapping_add(1) == least {
                        ports.push(e.port);
                    }
                }
            }
            start.push(ports.len() as u32);
        }
        Candidates::from_csr(start, ports)
    }

    /// dor's lists straight from their definition: the min-hop ports reaching the same
    /// neighbour as the first of them.
    fn lowest_dimension_by_scan(hm: &HopMatrix, si: usize) -> Candidates {
        min_hop_by_scan(hm, si).first_neighbour_only(hm, si)
    }

    fn assert_candidates_match_scan(hm: &HopMatrix) {
        for si in 0..hm.switch_count() {
            let d = Candidates::lowest_dimension(hm, si);
            assert_eq!(
                d,
                lowest_dimension_by_scan(hm, si),
                "dor lists of switch {si}"
            );
            let stored: std::collections::HashSet<&[u8]> =
                (0..d.stored_lists()).map(|i| d.stored(i)).collect();
            assert!(d.lists_distinct());
            assert_eq!(stored.len(), d.stored_lists(), "dor lists of switch {si}");
            let c = Candidates::min_hop(hm, si);
            assert_eq!(c, min_hop_by_scan(hm, si), "candidates of switch {si}");
            // Stored once each, as `lists_distinct` promises.
            let stored: std::collections::HashSet<&[u8]> =
                (0..c.stored_lists()).map(|i| c.stored(i)).collect();
            assert!(c.lists_distinct());
            assert_eq!(stored.len(), c.stored_lists(), "switch {si}");
        }
    }

    #[test]
    fn long_chain_stops_growing_at_0xfe() {
        // 300 switches in a row: hops past 0xFE are unreachable, as `bfs` leaves them.
        let hm = HopMatrix::build(&chain(300));
        assert_eq!(hm.hops_idx(0, 254), Some(0xFE));
        assert_eq!(hm.hops_idx(0, 255), None);
        assert_eq!(hm.hops_idx(299, 45), Some(0xFE));
        assert_eq!(hm.hops_idx(299, 44), None);
        assert_matrix_matches_bfs(&hm);
        assert_candidates_match_scan(&hm);
        // Toward the far end of the cut-off part, only the chain's port leads on.
        let c = Candidates::min_hop(&hm, 1);
        assert_eq!(c.of(255), &[2]);
        assert_eq!(c.of(256), &[] as &[u8], "0xFF hops away: no list");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// The 64-sources-at-a-time matrix and the blockwise candidate lists equal the plain
        /// ones on irregular fabrics: sizes around the batch width, one-way and dead links,
        /// parallel links, loopbacks, unreachable parts.
        #[test]
        fn batched_matrix_and_candidates_match_plain(
            seed in proptest::prelude::any::<u64>(),
            n in proptest::prelude::prop_oneof![1usize..8, 60usize..70, 120usize..200],
            density in 1usize..6,
        ) {
            let hm = HopMatrix::build(&random_fabric(seed, n, 16, n * density / 2 + 1));
            assert_matrix_matches_bfs(&hm);
            assert_candidates_match_scan(&hm);
        }

        /// The same with switches of more than 64 links (several words per destination).
        #[test]
        fn candidates_of_wide_switches_match_plain(
            seed in proptest::prelude::any::<u64>(),
            n in 2usize..5,
            links in 200usize..300,
        ) {
            let hm = HopMatrix::build(&random_fabric(seed, n, 140, links));
            assert_matrix_matches_bfs(&hm);
            assert_candidates_match_scan(&hm);
        }
    }

    #[test]
    fn pack_bits_keeps_byte_order() {
        let set = [0, 1, 7, 8, 13, 31, 32, 55, 56, 62, 63];
        let mut eq = [0u8; 64];
        for i in set {
            eq[i] = 1;
        }
        assert_eq!(pack_bits(&eq), set.iter().map(|&i| 1u64 << i).sum::<u64>());
        assert_eq!(pack_bits(&[1; 64]), u64::MAX);
        assert_eq!(pack_bits(&[0; 64]), 0);
    }

    #[test]
    fn transpose64_swaps_rows_and_columns() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..20 {
            let a: [u64; 64] = std::array::from_fn(|_| rng.gen::<u64>() & rng.gen::<u64>());
            let mut b = a;
            transpose64(&mut b);
            for (j, &row) in a.iter().enumerate() {
                for (k, &col) in b.iter().enumerate() {
                    assert_eq!((col >> j) & 1, (row >> k) & 1, "bit {j} of word {k}");
                }
            }
        }
    }

    #[test]
    fn equal_lists_are_stored_once() {
        let hm = HopMatrix::build(&chain(6));
        let c = Candidates::min_hop(&hm, 1);
        // From switch 1: 0 through both parallel links, 2..=5 through port 2, itself none.
        assert_eq!(c.stored_lists(), 3);
        assert_eq!(c.list_id(2), c.list_id(5));
        assert_ne!(c.list_id(0), c.list_id(2));
        assert_eq!(c.of(5), &[2]);
        assert_eq!(c, min_hop_by_scan(&hm, 1));
        // A slot out of range has no lists; a switch without links only empty ones.
        assert!(Candidates::min_hop(&hm, 6).is_empty());
        let lone = HopMatrix::build(&random_fabric(1, 3, 4, 0));
        let c = Candidates::min_hop(&lone, 0);
        assert_eq!((c.len(), c.stored_lists(), c.of(1)), (3, 1, &[] as &[u8]));
    }

    #[test]
    fn random_fabrics_have_what_the_comparison_needs() {
        // The fabrics above are not all trivially connected or symmetric.
        let hm = HopMatrix::build(&random_fabric(7, 150, 16, 170));
        let n = hm.switch_count();
        let pairs = (0..n).flat_map(|a| (0..n).map(move |b| (a, b)));
        let hops = |a, b| hm.hops_idx(a, b);
        assert!(pairs.clone().any(|(a, b)| hops(a, b).is_none()));
        assert!(pairs
            .clone()
            .any(|(a, b)| hops(a, b).is_some() && hops(b, a).is_none()));
        assert!(pairs
            .clone()
            .any(|(a, b)| hops(a, b).is_some_and(|h| h >= 8)));
        let dense = HopMatrix::build(&random_fabric(7, 150, 16, 300));
        assert!((0..n).any(|a| {
            let c = Candidates::min_hop(&dense, a);
            (0..n).map(|t| c.of(t).len()).sum::<usize>() > n
        }));
        assert!((0..n).any(|a| {
            let nb = dense.neighbors(a);
            nb.iter()
                .any(|e| nb.iter().filter(|f| f.to == e.to).count() > 1)
        }));
        let wide = HopMatrix::build(&random_fabric(7, 3, 140, 300));
        assert!((0..3).any(|a| wide.neighbors(a).len() > 64));
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

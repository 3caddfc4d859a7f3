//! Multicast routing (IBA vol1 §18.2.4.3.3, OpenSM `osm_mcast_mgr.c`'s approach): a spanning
//! tree per MLID over the switches, and the MulticastForwardingTables that realise it.
//!
//! - **Input**: the groups the SA holds ([`McastGroup`]: an MLID and its member ports by port
//!   GUID, each marked as receiving or send-only) and the subnet model.
//! - **Tree** ([`compute`]): the root is the multicast-capable switch that minimises the
//!   *maximum* hop distance to the group's member switches (ties: the first in discovery
//!   order); the tree is the root's min-hop (breadth-first) tree over up links between
//!   multicast-capable switches — every switch is reached by a shortest path, the parent
//!   being the first neighbour found at one hop less (ports in ascending order) — pruned to the
//!   paths towards member switches. Unlike a union of unicast LFT paths, this is always a tree
//!   (no switch has two upstream ports), so a packet entering it anywhere reaches every switch
//!   once and no loop can form.
//! - **Port masks**: on every tree switch, the ports to its tree neighbours, plus the ports
//!   leading to its receiving members (a CA port's switch port, or port 0 when the switch
//!   itself is a member). Send-only members are on the tree (their switch is part of it) but
//!   get no copies. A switch forwards a packet on every port of the mask except the one it
//!   arrived on, so each receiving member gets exactly one copy.
//! - **Programming** ([`program`]): the masks become MFT blocks (32 MLIDs × 16 ports, attribute
//!   modifier `block | position << 28`) and only the blocks that differ from what each switch
//!   is known to hold are set.
//!
//! A routing engine that balances its unicast routes by link load (sssp, dfsssp and nue) gives
//! those loads ([`ChannelLoads`]); then a group's tree from its root is grown by Dijkstra
//! instead, each link weighing OpenSM's `D²` (`D` the destination LIDs) plus the unicast load
//! of its channel towards the root, so groups take the less crowded links (OpenSM's
//! `dfsssp_do_mcast_routing` and `nue_do_mcast_routing`; the root is chosen as above).
//!
//! Groups with fewer than two member ports get no tree (nothing to forward), as in OpenSM;
//! MLIDs beyond a switch's MulticastFDBCap are left out of that switch's table (and counted).
//!
//! A routing engine may give a **master spanning tree** ([`MasterTree`], OpenSM's
//! `mcast_build_stree`; torus-2QoS does): then every group's tree is the part of it that
//! reaches the group's member switches, rooted at its root, so multicast keeps the engine's
//! guarantee (torus-2QoS: no branch crosses a dateline, so multicast cannot close a credit loop
//! with unicast on the VLs they share). A group whose member switches the master tree does not
//! all reach gets the tree above instead, and is counted ([`Mfts::off_master_tree`]).

pub mod program;

use std::collections::{BTreeMap, HashMap, VecDeque};

use ibmad::{Guid, Lid, PortNum};

use crate::subnet::{NodeId, Subnet};

/// One member port of a group, as the SM needs it for routing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct McastMember {
    /// The member's PortGUID (a CA port, or a switch's port 0).
    pub port_guid: Guid,
    /// The member receives the group's packets (JoinState FullMember or NonMember); false for
    /// a send-only member.
    pub receives: bool,
}

/// A multicast group as routed: its MLID and member ports.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct McastGroup {
    /// The group's MLID (0xC000..=0xFFFE).
    pub mlid: Lid,
    /// The member ports.
    pub members: Vec<McastMember>,
}

/// A port mask over ports 0..=255: bit `p` of word `p / 64`.
pub type PortMask = [u64; 4];

/// Sets port `p` in `m`.
fn set_port(m: &mut PortMask, p: u8) {
    m[usize::from(p / 64)] |= 1u64 << (p % 64);
}

/// The 16-bit MFT mask of `m` for `position` (ports `16 * position ..`).
#[must_use]
pub fn position_mask(m: &PortMask, position: u8) -> u16 {
    let bit = u32::from(position) * 16;
    ((m[(bit / 64) as usize] >> (bit % 64)) & 0xFFFF) as u16
}

/// True if port `p` is in `m`.
#[must_use]
pub fn has_port(m: &PortMask, p: u8) -> bool {
    m[usize::from(p / 64)] & (1u64 << (p % 64)) != 0
}

/// Entries of a multicast block (IBA vol1 §14.2.5.12).
pub const MFT_BLOCK_SIZE: u16 = 32;

/// The MFT positions of a switch with `num_ports` ports (port 0 included): 16 ports each.
#[must_use]
pub fn positions(num_ports: u8) -> u8 {
    u8::try_from((u16::from(num_ports) + 1).div_ceil(16)).unwrap_or(16)
}

/// The desired multicast tables: per switch, the port mask of every MLID it forwards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mfts {
    /// `tables[node]`: MLID → port mask, for switches (empty for CAs and switches on no tree).
    tables: Vec<BTreeMap<Lid, PortMask>>,
    /// The MLIDs routed (groups with a tree).
    pub routed: usize,
    /// Groups with fewer than two member ports (no tree).
    pub untreed: usize,
    /// Member ports not found in the subnet (unknown GUID, link down), skipped.
    pub unknown_members: usize,
    /// (switch, MLID) entries left out because the MLID is beyond the switch's
    /// MulticastFDBCap.
    pub over_cap: usize,
    /// Groups routed on the tree of their own because the engine's master tree does not reach
    /// all their member switches.
    pub off_master_tree: usize,
}

/// A switch's place on a [`MasterTree`]: its parent, and the links to it as (port on the
/// parent, port on this switch) in the parent's port order.
pub type TreeParent = (NodeId, Vec<(PortNum, PortNum)>);

/// A routing engine's master spanning tree for multicast (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MasterTree {
    /// The root switch.
    pub root: NodeId,
    /// Per node (by [`NodeId`] index): its parent switch and the links to it. A group takes
    /// link `MLID % count` (OpenSM spreads groups over parallel links by MLID). `None` for
    /// the root and for nodes off the tree.
    pub parent: Vec<Option<TreeParent>>,
}

impl MasterTree {
    /// The tree edge from `v` up to its parent for `mlid`: (parent, port on the parent, port
    /// on `v`).
    fn up(&self, v: NodeId, mlid: Lid) -> Option<(NodeId, PortNum, PortNum)> {
        let (u, links) = self.parent.get(v.idx())?.as_ref()?;
        let &(up, back) = links.get(usize::from(mlid.0) % links.len().max(1))?;
        Some((*u, up, back))
    }

    /// Whether `v` is the root or reaches it through its parents.
    #[must_use]
    pub fn reaches_root(&self, v: NodeId) -> bool {
        let mut x = v;
        for _ in 0..=self.parent.len() {
            if x == self.root {
                return true;
            }
            match self.parent.get(x.idx()).and_then(Option::as_ref) {
                Some((u, _)) => x = *u,
                None => return false,
            }
        }
        false
    }
}

/// A routing engine's unicast load on every switch-to-switch channel, as it left it after
/// routing (OpenSM's dfsssp, sssp and nue link weights), for trees grown by Dijkstra (see the
/// module docs). Keyed by the [`NodeId`]s of the subnet that was routed: until the next
/// routing, a channel the engine did not see weighs `base` alone. The weights only steer
/// which links a tree takes; it is a spanning tree of the members whatever they are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChannelLoads {
    /// Added to every channel's load: OpenSM's `D²`, `D` the destination LIDs, so that a
    /// tree leaves a shortest path only where the loads outweigh whole hops.
    pub base: u64,
    /// Per node (by [`NodeId`] index): where its ports' entries start in `loads`.
    start: Vec<u32>,
    /// Per node and port (0 ..= its port count): the load of the channel leaving there.
    loads: Vec<u32>,
}

impl ChannelLoads {
    /// No loads yet on the ports of `s`, each channel weighing `base`.
    #[must_use]
    pub fn new(s: &Subnet, base: u64) -> ChannelLoads {
        let mut start = Vec::with_capacity(s.nodes.len() + 1);
        let mut at = 0u32;
        for n in &s.nodes {
            start.push(at);
            at = at.saturating_add(u32::from(n.num_ports) + 1);
        }
        start.push(at);
        ChannelLoads {
            base,
            start,
            loads: vec![0; at as usize],
        }
    }

    fn entry(&self, sw: NodeId, port: PortNum) -> Option<usize> {
        let (a, b) = (*self.start.get(sw.idx())?, *self.start.get(sw.idx() + 1)?);
        let e = a.checked_add(u32::from(port.0))?;
        (e < b).then_some(e as usize)
    }

    /// Sets the load of the channel leaving switch `sw` on `port` (ignored for a port the
    /// subnet did not have).
    pub fn set(&mut self, sw: NodeId, port: PortNum, load: u32) {
        if let Some(e) = self.entry(sw, port) {
            self.loads[e] = load;
        }
    }

    /// The load of the channel leaving `sw` on `port` (0 for one the engine did not load).
    #[must_use]
    pub fn load(&self, sw: NodeId, port: PortNum) -> u64 {
        self.entry(sw, port).map_or(0, |e| u64::from(self.loads[e]))
    }

    /// The channel's weight in a tree's Dijkstra: `base` plus its load.
    #[must_use]
    pub fn weight(&self, sw: NodeId, port: PortNum) -> u64 {
        self.base.saturating_add(self.load(sw, port))
    }
}

/// The tree one group is routed on.
enum GroupTree<'a> {
    /// The group's own: the min-hop (or, with [`ChannelLoads`], least-weight) tree of the
    /// root [`choose_root`] picks.
    Own(Parents),
    /// The engine's master tree.
    Master(&'a MasterTree),
}

impl GroupTree<'_> {
    /// (parent, port on the parent, port on `v`).
    fn up(&self, v: NodeId, mlid: Lid) -> Option<(NodeId, PortNum, PortNum)> {
        match self {
            GroupTree::Own(parent) => parent.get(v.idx()).copied().flatten(),
            GroupTree::Master(t) => t.up(v, mlid),
        }
    }
}

impl Mfts {
    /// The table of switch `id` (MLID → port mask); empty if it forwards no group.
    #[must_use]
    pub fn table(&self, id: NodeId) -> Option<&BTreeMap<Lid, PortMask>> {
        self.tables.get(id.idx())
    }

    /// The port mask of `mlid` on switch `id`, if it forwards it.
    #[must_use]
    pub fn mask(&self, id: NodeId, mlid: Lid) -> Option<&PortMask> {
        self.tables.get(id.idx())?.get(&mlid)
    }

    /// The 32 masks of MFT block `block`, position `position` on switch `id`.
    #[must_use]
    pub fn block(&self, id: NodeId, block: u16, position: u8) -> [u16; 32] {
        let mut out = [0u16; 32];
        let Some(t) = self.tables.get(id.idx()) else {
            return out;
        };
        let first = Lid(0xC000u16.saturating_add(block.saturating_mul(MFT_BLOCK_SIZE)));
        let last = Lid(first.0.saturating_add(MFT_BLOCK_SIZE - 1));
        for (mlid, m) in t.range(first..=last) {
            out[usize::from(mlid.0 - first.0)] = position_mask(m, position);
        }
        out
    }

    /// The highest block any switch uses, if any.
    #[must_use]
    pub fn max_block(&self) -> Option<u16> {
        self.tables
            .iter()
            .filter_map(|t| t.keys().next_back())
            .map(|l| (l.0 - 0xC000) / MFT_BLOCK_SIZE)
            .max()
    }

    /// Switch ids with a non-empty table.
    pub fn switches(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.tables
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty())
            .map(|(i, _)| NodeId(i as u32))
    }
}

/// Where an end port hangs on the switch fabric: (switch, port on that switch).
fn attach_point(s: &Subnet, id: NodeId, p: PortNum) -> Option<(NodeId, PortNum)> {
    if s.node(id).is_switch() {
        return Some((id, PortNum(0)));
    }
    let (sw, sp) = s.port(id, p)?.remote?;
    (s.node(sw).is_switch() && s.is_link_up(id, p)).then_some((sw, sp))
}

/// Per switch, its BFS parent as (parent, parent's port towards it, its port towards the
/// parent).
type Parents = Vec<Option<(NodeId, PortNum, PortNum)>>;

/// The multicast-capable switch graph: per switch, its up links to multicast-capable
/// switches as (local port, neighbour, the neighbour's port).
struct SwitchGraph {
    adj: Vec<Vec<(PortNum, NodeId, PortNum)>>,
    capable: Vec<bool>,
}

impl SwitchGraph {
    fn new(s: &Subnet) -> SwitchGraph {
        let n = s.nodes.len();
        let capable: Vec<bool> = s
            .nodes
            .iter()
            .map(|x| {
                x.is_switch()
                    && x.switch_info
                        .is_some_and(|si| si.multicast_fdb_cap.get() > 0)
            })
            .collect();
        let mut adj = vec![Vec::new(); n];
        for id in s.switches() {
            if !capable[id.idx()] {
                continue;
            }
            for p in 1..=s.node(id).num_ports {
                let p = PortNum(p);
                if let Some((nb, np)) = s.port(id, p).and_then(|x| x.remote) {
                    if capable[nb.idx()] && nb != id && s.is_link_up(id, p) {
                        adj[id.idx()].push((p, nb, np));
                    }
                }
            }
        }
        SwitchGraph { adj, capable }
    }

    /// Hop distances from `from` (u16::MAX: unreachable) and the BFS parent of each switch
    /// as (parent, parent's port towards it, its port at the far end of that link): the
    /// first neighbour found at one hop less, over its first link in port order.
    fn bfs(&self, from: NodeId) -> (Vec<u16>, Parents) {
        let n = self.adj.len();
        let mut dist = vec![u16::MAX; n];
        let mut parent = vec![None; n];
        let mut q = VecDeque::new();
        dist[from.idx()] = 0;
        q.push_back(from);
        while let Some(u) = q.pop_front() {
            for &(p, v, vp) in &self.adj[u.idx()] {
                if dist[v.idx()] == u16::MAX {
                    dist[v.idx()] = dist[u.idx()] + 1;
                    parent[v.idx()] = Some((u, p, vp));
                    q.push_back(v);
                }
            }
        }
        (dist, parent)
    }

    /// The BFS tree of [`SwitchGraph::bfs`] from `root`, for the paths of `members` only: the
    /// search stops once it has found them all (a switch's parent is fixed when it is found).
    fn bfs_tree(&self, root: NodeId, members: &[NodeId]) -> Parents {
        let n = self.adj.len();
        let mut seen = vec![false; n];
        let mut parent = vec![None; n];
        let (wanted, mut left) = wanted(n, members);
        let mut q = VecDeque::new();
        seen[root.idx()] = true;
        left -= usize::from(wanted[root.idx()]);
        q.push_back(root);
        while let Some(u) = q.pop_front() {
            if left == 0 {
                break;
            }
            for &(p, v, vp) in &self.adj[u.idx()] {
                if !std::mem::replace(&mut seen[v.idx()], true) {
                    parent[v.idx()] = Some((u, p, vp));
                    left -= usize::from(wanted[v.idx()]);
                    q.push_back(v);
                }
            }
        }
        parent
    }

    /// The least-weight tree from `root` (Dijkstra): the link from `u` down to `v` weighs
    /// the channel `v → u`, towards the root ([`ChannelLoads::weight`]). Switches are
    /// settled by (distance, id), and a parent is replaced only by a strictly lighter path,
    /// so among equals the first found in port order stays. It stops once every switch of
    /// `members` is settled: their paths to the root are final then.
    fn lightest(&self, root: NodeId, loads: &ChannelLoads, members: &[NodeId]) -> Parents {
        use std::cmp::Reverse;
        let n = self.adj.len();
        let mut dist = vec![u64::MAX; n];
        let mut done = vec![false; n];
        let mut parent = vec![None; n];
        let (wanted, mut left) = wanted(n, members);
        let mut heap = std::collections::BinaryHeap::new();
        dist[root.idx()] = 0;
        heap.push(Reverse((0u64, root.0)));
        while let Some(Reverse((d, u))) = heap.pop() {
            let u = NodeId(u);
            if std::mem::replace(&mut done[u.idx()], true) {
                continue;
            }
            if wanted[u.idx()] {
                left -= 1;
                if left == 0 {
                    break;
                }
            }
            for &(p, v, vp) in &self.adj[u.idx()] {
                let dv = d.saturating_add(loads.weight(v, vp));
                if !done[v.idx()] && dv < dist[v.idx()] {
                    dist[v.idx()] = dv;
                    parent[v.idx()] = Some((u, p, vp));
                    heap.push(Reverse((dv, v.0)));
                }
            }
        }
        parent
    }
}

/// Which of `n` nodes are in `members`, and how many distinct ones there are: the switches a
/// tree search must reach before it may stop.
fn wanted(n: usize, members: &[NodeId]) -> (Vec<bool>, usize) {
    let mut wanted = vec![false; n];
    let mut count = 0usize;
    for m in members {
        if let Some(w) = wanted.get_mut(m.idx()) {
            count += usize::from(!std::mem::replace(w, true));
        }
    }
    (wanted, count)
}

/// Computes the spanning tree and port masks of every group (see the module docs).
#[must_use]
pub fn compute(s: &Subnet, groups: &[McastGroup]) -> Mfts {
    compute_with(s, groups, None, None)
}

/// [`compute`] on an engine's master spanning tree, where it gives one.
#[must_use]
pub fn compute_on(s: &Subnet, groups: &[McastGroup], master: Option<&MasterTree>) -> Mfts {
    compute_with(s, groups, master, None)
}

/// [`compute`] with what the routing engine gives multicast, if anything: its master
/// spanning tree ([`crate::routing::Routes::mcast_tree`]) or its channel loads
/// ([`crate::routing::Routes::mcast_loads`]).
#[must_use]
pub fn compute_for(
    s: &Subnet,
    groups: &[McastGroup],
    routes: Option<&crate::routing::Routes>,
) -> Mfts {
    compute_with(
        s,
        groups,
        routes.and_then(|r| r.mcast_tree.as_ref()),
        routes.and_then(|r| r.mcast_loads.as_ref()),
    )
}

fn compute_with(
    s: &Subnet,
    groups: &[McastGroup],
    master: Option<&MasterTree>,
    loads: Option<&ChannelLoads>,
) -> Mfts {
    let mut out = Mfts {
        tables: vec![BTreeMap::new(); s.nodes.len()],
        ..Mfts::default()
    };
    let mut by_port_guid: HashMap<Guid, (NodeId, PortNum)> = HashMap::new();
    for (id, p) in s.end_ports() {
        if let Some(port) = s.port(id, p) {
            by_port_guid.insert(port.guid, (id, p));
        }
    }
    let g = SwitchGraph::new(s);
    for grp in groups {
        if !grp.mlid.is_multicast() {
            continue;
        }
        // (switch, port, receives) of each member.
        let mut attach: Vec<(NodeId, PortNum, bool)> = Vec::new();
        for m in &grp.members {
            match by_port_guid
                .get(&m.port_guid)
                .and_then(|&(id, p)| attach_point(s, id, p))
            {
                Some((sw, sp)) if g.capable[sw.idx()] => attach.push((sw, sp, m.receives)),
                _ => out.unknown_members += 1,
            }
        }
        attach.sort();
        attach.dedup_by(|a, b| {
            a.0 == b.0 && a.1 == b.1 && {
                b.2 |= a.2;
                true
            }
        });
        if attach.len() < 2 {
            out.untreed += 1;
            continue;
        }
        let mut member_sws: Vec<NodeId> = attach.iter().map(|a| a.0).collect();
        member_sws.dedup();
        let on_master = master.filter(|t| member_sws.iter().all(|&m| t.reaches_root(m)));
        if master.is_some() && on_master.is_none() {
            out.off_master_tree += 1;
        }
        let (root, tree) = match on_master {
            Some(t) => (t.root, GroupTree::Master(t)),
            None => {
                let Some(root) = choose_root(&g, &member_sws) else {
                    out.untreed += 1;
                    continue;
                };
                let parent = match loads {
                    Some(l) => g.lightest(root, l, &member_sws),
                    None => g.bfs_tree(root, &member_sws),
                };
                (root, GroupTree::Own(parent))
            }
        };
        let mut masks: HashMap<NodeId, PortMask> = HashMap::new();
        if !matches!(tree, GroupTree::Master(_)) {
            masks.entry(root).or_default();
        }
        for &m in &member_sws {
            let mut v = m;
            while v != root {
                let Some((u, up, back)) = tree.up(v, grp.mlid) else {
                    break;
                };
                let child = masks.entry(v).or_default();
                if has_port(child, back.0) {
                    break; // the path above is already on the tree
                }
                set_port(child, back.0);
                set_port(masks.entry(u).or_default(), up.0);
                v = u;
            }
        }
        for &(sw, sp, receives) in &attach {
            let m = masks.entry(sw).or_default();
            if receives {
                set_port(m, sp.0);
            }
        }
        out.routed += 1;
        for (sw, m) in masks {
            let cap = s
                .node(sw)
                .switch_info
                .map_or(0, |si| si.multicast_fdb_cap.get());
            if u32::from(grp.mlid.0 - 0xC000) >= u32::from(cap) {
                out.over_cap += 1;
                continue;
            }
            out.tables[sw.idx()].insert(grp.mlid, m);
        }
    }
    out
}

/// The root minimising the maximum hop distance to the member switches.
fn choose_root(g: &SwitchGraph, members: &[NodeId]) -> Option<NodeId> {
    let n = g.adj.len();
    let mut worst = vec![0u16; n];
    for &m in members {
        let (d, _) = g.bfs(m);
        for (w, d) in worst.iter_mut().zip(d) {
            *w = (*w).max(d);
        }
    }
    let root = (0..n)
        .filter(|&i| g.capable[i] && worst[i] != u16::MAX)
        .min_by_key(|&i| (worst[i], i))?;
    Some(NodeId(root as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::Node;
    use ibmad::attr::SwitchInfo;
    use ibmad::NodeType;
    use zerocopy::FromZeros;

    /// A line of `n` switches (port 1 left, port 2 right), each with `cas` CAs on ports 3..
    fn line(n: u32, cas: u8) -> (Subnet, Vec<NodeId>, Vec<Vec<Guid>>) {
        let mut s = Subnet::new();
        let mut sws = Vec::new();
        let mut hosts = Vec::new();
        for i in 0..n {
            let mut node = Node::new(Guid(0x100 + u64::from(i)), NodeType::SWITCH, 2 + cas, "sw");
            let mut si = SwitchInfo::new_zeroed();
            si.multicast_fdb_cap.set(1024);
            node.switch_info = Some(si);
            let id = s.add_active_node(node);
            if let Some(&prev) = sws.last() {
                s.connect_active((prev, PortNum(2)), (id, PortNum(1)));
            }
            let mut hs = Vec::new();
            for c in 0..cas {
                let g = 0x1000 + u64::from(i) * 16 + u64::from(c);
                let ca = s.add_active_node(Node::new(Guid(g), NodeType::CA, 1, "ca"));
                s.connect_active((id, PortNum(3 + c)), (ca, PortNum(1)));
                hs.push(Guid(g + 1));
            }
            sws.push(id);
            hosts.push(hs);
        }
        (s, sws, hosts)
    }

    fn member(g: Guid) -> McastMember {
        McastMember {
            port_guid: g,
            receives: true,
        }
    }

    /// Floods a packet from CA port `from` by the MFTs: the copies every node receives on
    /// an end port, or `None` if some link carries the packet more than once (a loop).
    fn deliver(s: &Subnet, m: &Mfts, mlid: Lid, from: Guid) -> Option<HashMap<Guid, usize>> {
        let (ca, cp) = s
            .end_ports()
            .find(|&(id, p)| s.port(id, p).is_some_and(|x| x.guid == from))?;
        let mut got: HashMap<Guid, usize> = HashMap::new();
        let mut used: std::collections::HashSet<(NodeId, PortNum)> = Default::default();
        let mut q = VecDeque::from([s.port(ca, cp)?.remote?]);
        while let Some((sw, inp)) = q.pop_front() {
            let Some(mask) = m.mask(sw, mlid) else {
                continue;
            };
            for p in 0..=s.node(sw).num_ports {
                if p == inp.0 || !has_port(mask, p) {
                    continue;
                }
                if p == 0 {
                    *got.entry(s.port(sw, PortNum(0))?.guid).or_default() += 1;
                    continue;
                }
                if !used.insert((sw, PortNum(p))) {
                    return None;
                }
                let (nb, np) = s.port(sw, PortNum(p))?.remote?;
                if s.node(nb).is_switch() {
                    q.push_back((nb, np));
                } else {
                    *got.entry(s.port(nb, np)?.guid).or_default() += 1;
                }
            }
        }
        Some(got)
    }

    /// Two switches joined by two cables that cross (port 1 to port 2, port 2 to port 1),
    /// each with one CA on port 3.
    fn crossed() -> (Subnet, [NodeId; 2], [Guid; 2]) {
        let mut s = Subnet::new();
        let mut sws = [NodeId(0); 2];
        let mut cas = [Guid(0); 2];
        for i in 0..2u32 {
            let mut node = Node::new(Guid(0x100 + u64::from(i)), NodeType::SWITCH, 3, "sw");
            let mut si = SwitchInfo::new_zeroed();
            si.multicast_fdb_cap.set(1024);
            node.switch_info = Some(si);
            sws[i as usize] = s.add_active_node(node);
            let g = 0x1000 + u64::from(i) * 16;
            let ca = s.add_active_node(Node::new(Guid(g), NodeType::CA, 1, "ca"));
            s.connect_active((sws[i as usize], PortNum(3)), (ca, PortNum(1)));
            cas[i as usize] = Guid(g + 1);
        }
        s.connect_active((sws[0], PortNum(1)), (sws[1], PortNum(2)));
        s.connect_active((sws[0], PortNum(2)), (sws[1], PortNum(1)));
        (s, sws, cas)
    }

    #[test]
    fn a_tree_edge_is_both_ends_of_one_cable() {
        let (s, sws, cas) = crossed();
        let mlid = Lid(0xC000);
        let grp = McastGroup {
            mlid,
            members: vec![member(cas[0]), member(cas[1])],
        };
        let m = compute(&s, &[grp]);
        let (a, b) = (m.mask(sws[0], mlid).unwrap(), m.mask(sws[1], mlid).unwrap());
        let down: Vec<u8> = (1..=2).filter(|&p| has_port(a, p)).collect();
        let up: Vec<u8> = (1..=2).filter(|&p| has_port(b, p)).collect();
        assert_eq!(down.len(), 1, "one link down: {a:?}");
        let far = s.port(sws[0], PortNum(down[0])).unwrap().remote.unwrap().1;
        assert_eq!(
            up,
            vec![far.0],
            "the child's tree port is the far end of the parent's"
        );
        for (from, to) in [(cas[0], cas[1]), (cas[1], cas[0])] {
            let got = deliver(&s, &m, mlid, from).expect("the MFTs loop");
            assert_eq!(got.get(&to), Some(&1), "{got:?}");
            assert_eq!(got.get(&from), None, "{got:?}");
        }
    }

    /// `n` switches of 48 ports, each with one CA on port 1 (its port GUID returned), and
    /// `links` (a, b, crossed) cabled in order: a's lowest free port to b's lowest free port,
    /// or to its highest where `crossed`, so parallel cables may cross.
    fn fabric(n: usize, links: &[(usize, usize, bool)]) -> (Subnet, Vec<NodeId>, Vec<Guid>) {
        let mut s = Subnet::new();
        let mut sws = Vec::new();
        let mut cas = Vec::new();
        for i in 0..n as u64 {
            let mut node = Node::new(Guid(0x100 + i), NodeType::SWITCH, 48, "sw");
            let mut si = SwitchInfo::new_zeroed();
            si.multicast_fdb_cap.set(1024);
            node.switch_info = Some(si);
            let sw = s.add_active_node(node);
            let ca = s.add_active_node(Node::new(Guid(0x1000 + 16 * i), NodeType::CA, 1, "ca"));
            s.connect_active((sw, PortNum(1)), (ca, PortNum(1)));
            sws.push(sw);
            cas.push(Guid(0x1001 + 16 * i));
        }
        let mut free: Vec<Vec<u8>> = vec![(2..=48).collect(); n];
        for &(a, b, crossed) in links {
            if a == b || free[a].is_empty() || free[b].is_empty() {
                continue;
            }
            let pa = free[a].remove(0);
            let pb = if crossed {
                free[b].pop()
            } else {
                Some(free[b].remove(0))
            };
            if let Some(pb) = pb {
                s.connect_active((sws[a], PortNum(pa)), (sws[b], PortNum(pb)));
            }
        }
        (s, sws, cas)
    }

    proptest::proptest! {
        /// Whatever the cabling (parallel cables, crossed or not) and loads: a packet sent by
        /// any member reaches every other receiving member once, nobody else, and no link
        /// twice.
        #[test]
        fn every_member_gets_one_copy_whatever_the_cabling(
            n in 2usize..7,
            extra in proptest::collection::vec((0usize..7, 0usize..7, proptest::bool::ANY), 0..16),
            chain_crossed in proptest::collection::vec(proptest::bool::ANY, 6),
            loads in proptest::collection::vec(0u32..40, 48 * 7),
            base in 0u64..20,
            weighted in proptest::bool::ANY,
            picks in proptest::collection::vec((0usize..7, proptest::bool::ANY), 2..8),
        ) {
            let mut links: Vec<(usize, usize, bool)> =
                (1..n).map(|i| (i - 1, i, chain_crossed[i - 1])).collect();
            links.extend(extra.iter().filter(|l| l.0 < n && l.1 < n));
            let (s, sws, cas) = fabric(n, &links);
            let mut l = ChannelLoads::new(&s, base);
            for (i, &sw) in sws.iter().enumerate() {
                for p in 2..=48u8 {
                    l.set(sw, PortNum(p), loads[i * 48 + usize::from(p) - 1]);
                }
            }
            let mut chosen: BTreeMap<usize, bool> = BTreeMap::new();
            for &(i, r) in &picks {
                *chosen.entry(i % n).or_default() |= r;
            }
            let mlid = Lid(0xC005);
            let grp = McastGroup {
                mlid,
                members: chosen.iter().map(|(&i, &r)| McastMember {
                    port_guid: cas[i],
                    receives: r,
                }).collect(),
            };
            // Dijkstra and BFS stopped once the members' switches are reached leave their paths
            // as full runs do.
            let g = SwitchGraph::new(&s);
            let mut msw: Vec<NodeId> = chosen.keys().map(|&i| sws[i]).collect();
            msw.dedup();
            if let Some(root) = choose_root(&g, &msw) {
                for (part, full) in [
                    (g.lightest(root, &l, &msw), g.lightest(root, &l, &sws)),
                    (g.bfs_tree(root, &msw), g.bfs(root).1),
                ] {
                    for &v in &msw {
                        let mut x = v;
                        while x != root {
                            proptest::prop_assert_eq!(part[x.idx()], full[x.idx()]);
                            let Some((u, _, _)) = full[x.idx()] else { break };
                            x = u;
                        }
                    }
                }
            }
            let m = compute_with(&s, &[grp], None, weighted.then_some(&l));
            for &from in chosen.keys() {
                let got = deliver(&s, &m, mlid, cas[from]);
                proptest::prop_assert!(got.is_some(), "the MFTs loop: {links:?}");
                let got = got.unwrap_or_default();
                for (i, &g) in cas.iter().enumerate() {
                    let want = usize::from(i != from && chosen.get(&i) == Some(&true));
                    proptest::prop_assert_eq!(got.get(&g).copied().unwrap_or(0), want,
                        "from CA {} to CA {} over {:?}", from, i, links);
                }
            }
        }
    }

    /// [`fabric`] of `n` switches cabled by `links` (none crossed), and a group (MLID 0xC000)
    /// of the CAs of the switches `members`.
    fn group_on(
        n: usize,
        links: &[(usize, usize)],
        members: &[usize],
    ) -> (Subnet, Vec<NodeId>, McastGroup) {
        let links: Vec<(usize, usize, bool)> = links.iter().map(|&(a, b)| (a, b, false)).collect();
        let (s, sws, cas) = fabric(n, &links);
        let grp = McastGroup {
            mlid: Lid(0xC000),
            members: members.iter().map(|&i| member(cas[i])).collect(),
        };
        (s, sws, grp)
    }

    /// Which of the switches `sws[range]` the tree of `mlid` passes.
    fn on_tree(
        m: &Mfts,
        sws: &[NodeId],
        mlid: Lid,
        range: std::ops::RangeInclusive<usize>,
    ) -> Vec<usize> {
        range.filter(|&i| m.mask(sws[i], mlid).is_some()).collect()
    }

    /// A diamond sw0–{sw1, sw2}–sw3, and sw4 off sw0: with members on sw0, sw3 and sw4 the
    /// root is sw0, which reaches sw3 over sw1 or sw2 in two hops.
    #[test]
    fn a_tree_grown_over_loads_takes_the_lighter_branch() {
        let (s, sws, grp) = group_on(5, &[(0, 1), (0, 2), (1, 3), (2, 3), (0, 4)], &[0, 3, 4]);
        let via = |m: &Mfts| on_tree(m, &sws, grp.mlid, 1..=2);
        // Min-hop: the first branch in port order.
        assert_eq!(via(&compute(&s, std::slice::from_ref(&grp))), vec![1]);
        // sw3's channel up to sw1 (its port 2) carries more unicast routes than the one to sw2.
        let mut l = ChannelLoads::new(&s, 100);
        l.set(sws[3], PortNum(2), 5);
        let m = compute_with(&s, std::slice::from_ref(&grp), None, Some(&l));
        assert_eq!(via(&m), vec![2]);
        // Loads on the channels away from the root do not count.
        let mut l = ChannelLoads::new(&s, 100);
        l.set(sws[1], PortNum(3), 5);
        let m = compute_with(&s, std::slice::from_ref(&grp), None, Some(&l));
        assert_eq!(via(&m), vec![1]);
    }

    /// A detour of one hop more only where the loads outweigh the base (OpenSM's `D²`): root
    /// sw0 (members on sw0, sw3 and sw6, which hangs off sw0) reaches sw3 over sw1 or sw2 in
    /// two hops, or over sw4 and sw5 in three.
    #[test]
    fn a_tree_detours_only_where_the_loads_outweigh_the_base() {
        let links = [
            (0, 1),
            (0, 2),
            (1, 3),
            (2, 3),
            (0, 4),
            (4, 5),
            (5, 3),
            (0, 6),
        ];
        let (s, sws, grp) = group_on(7, &links, &[0, 3, 6]);
        let mlid = grp.mlid;
        let on = |m: &Mfts| on_tree(m, &sws, mlid, 1..=5);
        for (base, want) in [(1, vec![3, 4, 5]), (100, vec![1, 3])] {
            let mut l = ChannelLoads::new(&s, base);
            // sw3's channels up to sw1 and sw2 (its ports 2 and 3) carry 10 routes each.
            l.set(sws[3], PortNum(2), 10);
            l.set(sws[3], PortNum(3), 10);
            let m = compute_with(&s, std::slice::from_ref(&grp), None, Some(&l));
            assert_eq!(on(&m), want, "base {base}");
            for from in grp.members.iter().map(|x| x.port_guid) {
                let got = deliver(&s, &m, mlid, from).unwrap();
                assert_eq!(
                    got.values().sum::<usize>(),
                    2,
                    "base {base}, from {from:?}: {got:?}"
                );
                assert!(!got.contains_key(&from));
            }
        }
    }

    #[test]
    fn root_is_the_centre_and_the_tree_spans_the_members() {
        let (s, sws, hosts) = line(5, 2);
        let grp = McastGroup {
            mlid: Lid(0xC001),
            members: vec![
                member(hosts[0][0]),
                member(hosts[4][1]),
                member(hosts[2][0]),
            ],
        };
        let m = compute(&s, &[grp]);
        assert_eq!(m.routed, 1);
        // Ends: the member port and the inward link.
        let end0 = m.mask(sws[0], Lid(0xC001)).unwrap();
        assert_eq!(position_mask(end0, 0), (1 << 2) | (1 << 3));
        let end4 = m.mask(sws[4], Lid(0xC001)).unwrap();
        assert_eq!(position_mask(end4, 0), (1 << 1) | (1 << 4));
        // The middle switches carry both links; sw2 also its member.
        assert_eq!(
            position_mask(m.mask(sws[1], Lid(0xC001)).unwrap(), 0),
            0b110
        );
        assert_eq!(
            position_mask(m.mask(sws[2], Lid(0xC001)).unwrap(), 0),
            0b1110
        );
        assert_eq!(m.block(sws[2], 0, 0)[1], 0b1110);
        assert_eq!(m.max_block(), Some(0));
    }

    #[test]
    fn send_only_members_get_no_copies_and_lone_members_no_tree() {
        let (s, sws, hosts) = line(2, 2);
        let groups = [
            McastGroup {
                mlid: Lid(0xC000),
                members: vec![
                    member(hosts[0][0]),
                    McastMember {
                        port_guid: hosts[1][0],
                        receives: false,
                    },
                ],
            },
            McastGroup {
                mlid: Lid(0xC040),
                members: vec![member(hosts[0][0]), member(Guid(0xdead))],
            },
        ];
        let m = compute(&s, &groups);
        assert_eq!((m.routed, m.untreed, m.unknown_members), (1, 1, 1));
        let sender_side = m.mask(sws[1], Lid(0xC000)).unwrap();
        assert!(!has_port(sender_side, 3), "send-only member gets nothing");
        assert!(has_port(sender_side, 1));
        assert!(m.mask(sws[0], Lid(0xC040)).is_none());
    }

    #[test]
    fn mlids_beyond_the_cap_are_left_out() {
        let (mut s, sws, hosts) = line(2, 1);
        if let Some(si) = s.nodes[sws[1].idx()].switch_info.as_mut() {
            si.multicast_fdb_cap.set(32);
        }
        let grp = McastGroup {
            mlid: Lid(0xC020),
            members: vec![member(hosts[0][0]), member(hosts[1][0])],
        };
        let m = compute(&s, &[grp]);
        assert_eq!(m.over_cap, 1);
        assert!(m.mask(sws[1], Lid(0xC020)).is_none());
        assert!(m.mask(sws[0], Lid(0xC020)).is_some());
        assert_eq!(m.max_block(), Some(1));
        assert_eq!(positions(36), 3);
        assert_eq!(positions(15), 1);
        assert_eq!(positions(16), 2);
    }
}

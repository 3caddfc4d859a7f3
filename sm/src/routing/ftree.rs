//! The `ftree` engine: fat-tree routing with OpenSM semantics (`osm_ucast_ftree.c`, re-derived,
//! not copied; `routing.md` §1.4, §7 E6/E7, §8 F32–F35).
//!
//! Construction (OpenSM `construct_fabric`):
//! 1. **Ranking.** Switches with a CA attached are at distance 0; a BFS over switch links gives
//!    every switch its distance from the CAs; the farthest switches are the roots (rank 0) and a
//!    second BFS from the roots gives the final ranks (or, when a root GUID file is given, the
//!    BFS starts from those switches). Switches the BFS does not reach are dropped.
//! 2. **Compute nodes.** Without `cn_guid_file` every CA port is a compute node (CN); with it,
//!    only the listed port GUIDs are, and `io_guid_file` marks I/O ports (routed like other
//!    non-CNs; the reverse-hop extension `max_reverse_hops` is not implemented). All CNs must hang
//!    off leaf switches of one rank (the deepest, unless roots were given); the tree rank
//!    (leaf rank + 1) must be within 2..=8.
//! 3. **Port groups.** Links from a switch to one neighbour switch form a group (parallel links);
//!    a group is *up* if the neighbour has a lower rank, *down* if higher. Same-rank links are
//!    never used, so every route is up*/down* and the channel dependency graph is acyclic.
//! 4. **Indexing.** Tuples `[rank, d1, …]` are handed out by a BFS from the first leaf (lowest
//!    GUID), as OpenSM does; leaves, and the up/down groups of each switch, are ordered by the
//!    tuple of the switch they reach.
//! 5. **Validation** (without a root file): switches of one rank must have the same numbers of up
//!    and down groups (leaves may miss CAs), and up groups the same number of ports.
//!
//! Routing (OpenSM `do_routing`):
//! - CN destinations are taken leaf by leaf in index order, and each leaf also routes "dummy"
//!   destinations up to the largest number of CNs on any leaf, so that every leaf's counters
//!   advance in step. For each destination the *main path* climbs from its leaf to a root, at
//!   every level through the up group with the fewest destinations so far (ties: lowest index),
//!   and within it through the least used port. This spreads the destinations of each leaf
//!   evenly over its up-links (within one) — the balancing is per destination, not per source
//!   leaf (`routing.md` §7 E7).
//! - Every switch then gets an entry for the destination: switches above the destination leaf
//!   (reachable from it going only up) point down — along the main path where they are on it —
//!   and every other switch points up, to the parent with the fewest hops left, preferring the
//!   parent whose route joins the main path lowest (so all traffic to a destination comes down
//!   the same path, as in OpenSM). Parallel links of a group are used in turn.
//! - Then non-CN CAs (counted the same way) and switch LIDs (not counted).
//!
//! The main paths are chosen sequentially (they depend on the counters); the per-switch entries
//! are then computed for all destinations in parallel (feature `parallel`), and written to the
//! tables one block of switches at a time. Results are identical with and without rayon.
//!
//! Compared with stock OpenSM 3.3.23 on seven fabrics (`sm/testdata/opensm-ftree/`): the CA
//! entries of every leaf switch are identical and the maximum number of routes on one link is
//! the same; entries of upper switches that carry no CA-to-CA traffic (secondary routes) and
//! the choice among parallel links above the leaves may differ. Not implemented: routes over
//! same-rank ("sibling") links, `max_reverse_hops` for I/O nodes, quasi-fat-tree indexing.
//!
//! Without `connect_roots` a switch above the leaves has no route to a switch it reaches only
//! down and up again (two roots, say), as in OpenSM. With it (`-z`), as OpenSM's
//! `fabric_route_roots`, every such entry leads toward the last leaf in index order, which
//! routes up to the LID: all those routes turn at that one leaf.
//!
//! Refusals return [`RouteError::Unroutable`] with OpenSM's wording (and the detailed
//! `construct_fabric` line in the log), so the chain falls back to min-hop: LMC > 0, fewer than
//! two switches or CAs, a CA cabled to a CA, ranks outside 2..=8, CNs at different ranks,
//! asymmetric switches of one rank, unreadable GUID files. One refusal is ibsm's own: two
//! switches with CAs that reach no common root going up (a dragonfly's groups, joined only by
//! same-rank links). OpenSM routes those over the same-rank links; without them the tables
//! would leave CA pairs unreachable.

use std::collections::{HashMap, HashSet, VecDeque};

use ibmad::{Guid, Lid, NodeType, PortNum};
use thiserror::Error;

use super::graph::{link_usable, SwitchGraph, UNREACHABLE};
use super::{max_lid, EngineOptions, Lfts, OptionFile, RouteError, Routes, RoutingEngine};
use crate::subnet::{NodeId, Subnet};

/// Engine name.
pub const NAME: &str = "ftree";
/// Smallest tree rank (leaf rank + 1) OpenSM accepts (`FAT_TREE_MIN_RANK`).
pub const MIN_TREE_RANK: u8 = 2;
/// Largest tree rank OpenSM accepts (`FAT_TREE_MAX_RANK`).
pub const MAX_TREE_RANK: u8 = 8;

const TUPLE_LEN: usize = 8;
const NO_TUPLE: [u8; TUPLE_LEN] = [0xFF; TUPLE_LEN];
const UNRANKED: u8 = 0xFF;
const FAR: u8 = 0xFF;
/// Column value: no route.
const NONE: u16 = 0xFFFF;
/// Column value flag: a fixed port (low byte), not a group to spread over.
const FIXED: u16 = 0x8000;
/// Key of an ancestor that is not on the main path.
const SECONDARY: u8 = 0xFE;

/// A malformed line in a GUID list file (OpenSM `parse_node_map`: the first bad line rejects
/// the whole file).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error(
    "line {line}: {text:?} is not a GUID (expected 0x-prefixed hex, optionally followed by a name)"
)]
pub struct GuidListError {
    /// 1-based line number.
    pub line: usize,
    /// The offending line.
    pub text: String,
}

/// Parses a GUID list (`cn_guid_file`, `io_guid_file`, `root_guid_file`) as OpenSM's
/// `parse_node_map` does: blank lines and `#` comments are skipped; each other line starts with
/// a number in C `strtoull(…, 0)` syntax (`0x` hex, leading `0` octal, else decimal) followed by
/// whitespace, `#` or the end of line; anything after it is a name and is ignored.
pub fn parse_guid_list(text: &str) -> Result<Vec<Guid>, GuidListError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let bad = || GuidListError {
            line: i + 1,
            text: raw.to_string(),
        };
        let end = t
            .find(|c: char| c.is_whitespace() || c == '#')
            .unwrap_or(t.len());
        let num = &t[..end];
        let v = if let Some(h) = num.strip_prefix("0x").or_else(|| num.strip_prefix("0X")) {
            u64::from_str_radix(h, 16)
        } else if num.len() > 1 && num.starts_with('0') {
            u64::from_str_radix(&num[1..], 8)
        } else {
            num.parse::<u64>()
        };
        out.push(Guid(v.map_err(|_| bad())?));
    }
    Ok(out)
}

/// The fat-tree engine.
#[derive(Clone, Debug, Default)]
pub struct FatTree {
    cn_file: Option<OptionFile>,
    io_file: Option<OptionFile>,
    root_file: Option<OptionFile>,
    connect_roots: bool,
}

impl FatTree {
    /// With the GUID files from `opts` (`cn_guid_file`, `io_guid_file`, `root_guid_file`).
    #[must_use]
    pub fn new(opts: &EngineOptions) -> FatTree {
        FatTree {
            cn_file: opts.cn_guid_file.clone(),
            io_file: opts.io_guid_file.clone(),
            root_file: opts.root_guid_file.clone(),
            connect_roots: opts.connect_roots,
        }
    }
}

impl RoutingEngine for FatTree {
    fn name(&self) -> &'static str {
        NAME
    }

    fn route_logged(
        &self,
        subnet: &Subnet,
        _rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        let refuse = |log: &mut Vec<String>, detail: Option<String>, reason: &str| {
            if let Some(d) = detail {
                log.push(format!("construct_fabric: {d}"));
            }
            log.push(format!("construct_fabric: {reason}"));
            RouteError::Unroutable {
                engine: NAME,
                reason: reason.to_string(),
            }
        };
        let files = |f: &Option<OptionFile>, what: &str, code: (&str, &str)| match f {
            None => Ok(None),
            Some(f) => {
                let text = f.contents.as_ref().map_err(|e| {
                    format!(
                        "ERR {}: Problem parsing {what} guid file '{}': {e}",
                        code.0, f.path
                    )
                })?;
                let list = parse_guid_list(text).map_err(|e| {
                    format!(
                        "ERR {}: Problem parsing {what} guid file '{}': {e}",
                        code.0, f.path
                    )
                })?;
                if list.is_empty() {
                    return Err(format!(
                        "ERR {}: {what} node guids file has no valid guids",
                        code.1
                    ));
                }
                Ok(Some(list.into_iter().collect::<HashSet<Guid>>()))
            }
        };
        let read = || -> Result<_, String> {
            Ok((
                files(&self.cn_file, "CN", ("AB23", "AB27"))?,
                files(&self.io_file, "I/O", ("AB28", "AB29"))?,
            ))
        };
        let (cns, ios) = match read() {
            Ok(v) => v,
            Err(d) => {
                return Err(refuse(
                    log,
                    Some(d),
                    "Failed reading guid files - falling back to default routing",
                ))
            }
        };
        let roots = match &self.root_file {
            None => None,
            Some(f) => match f
                .contents
                .as_ref()
                .map_err(String::clone)
                .and_then(|t| parse_guid_list(t).map_err(|e| e.to_string()))
            {
                Ok(l) => Some(l),
                Err(e) => {
                    log.push(format!(
                        "fabric_load_roots: ERR AB1F: cannot parse root guids file '{}': {e}",
                        f.path
                    ));
                    None
                }
            },
        };
        let ft = match Fabric::build(subnet, cns.as_ref(), ios.as_ref(), roots.as_deref()) {
            Ok(ft) => ft,
            Err(Refusal { detail, reason }) => return Err(refuse(log, detail, &reason)),
        };
        log.push(format!(
            "fabric_dump_general_info: General fabric topology info: {} switches, {} leaves, \
             tree rank {}, {} CNs, max {} CNs per leaf",
            ft.sws.len(),
            ft.leaves.len(),
            ft.leaf_rank + 1,
            ft.cn_count,
            ft.max_cn_per_leaf
        ));
        let mut lfts = ft.route(subnet);
        if self.connect_roots {
            let (leaf, set) = ft.connect_roots(subnet, &mut lfts);
            log.push(format!(
                "fabric_route_roots: connect_roots: {set} switch-LID entries of upper switches \
                 routed through leaf 0x{:016x}",
                leaf.map_or(0, |g| g.0)
            ));
        }
        Ok(Routes::new(lfts))
    }
}

struct Refusal {
    detail: Option<String>,
    reason: String,
}

fn refusal(detail: Option<String>, reason: impl Into<String>) -> Refusal {
    Refusal {
        detail,
        reason: reason.into(),
    }
}

/// Links from one switch to one neighbour switch.
#[derive(Clone, Debug)]
struct Group {
    remote: u32,
    /// Index of the reverse group in the remote switch's group list.
    rev: u32,
    /// (local port, remote port), in local port order.
    ports: Vec<(u8, u8)>,
}

#[derive(Clone, Debug)]
struct Sw {
    node: NodeId,
    guid: Guid,
    rank: u8,
    tuple: [u8; TUPLE_LEN],
    /// Has CNs attached.
    leaf: bool,
    /// All switch groups: up groups, then down groups, then same-rank groups.
    groups: Vec<Group>,
    n_up: usize,
    n_down: usize,
    /// Attached CA ports in port order: (local port, CA port LID, is CN).
    cas: Vec<(u8, Lid, bool)>,
}

impl Sw {
    fn up(&self) -> &[Group] {
        &self.groups[..self.n_up]
    }
}

/// One destination LID and how it was reached on its main path.
#[derive(Clone, Debug)]
struct Dest {
    lid: Lid,
    /// The switch the destination hangs off (or is), and its port there (0 for a switch).
    attach: u32,
    port: u8,
    /// Counted by the balancing counters (CAs; switch LIDs are not).
    counted: bool,
    /// Main path above the attach switch: (switch, fixed down port) per level, lowest first.
    main: Vec<(u32, u8)>,
}

struct Fabric {
    sws: Vec<Sw>,
    leaf_rank: u8,
    /// Leaf switches in index order (between the first and last leaf with CNs).
    leaves: Vec<u32>,
    cn_count: usize,
    max_cn_per_leaf: usize,
    /// Non-CN CA ports (attach switch, port, LID), in CA GUID order.
    non_cns: Vec<(u32, u8, Lid)>,
    /// Switches in rank order (roots first).
    by_rank: Vec<u32>,
    /// Switch slots in GUID order (OpenSM's switch table order).
    guid_order: Vec<u32>,
    /// Up neighbours of `by_rank[k]` (in group order): `up_remote[up_start[k]..up_start[k+1]]`.
    up_start: Vec<u32>,
    up_remote: Vec<u32>,
}

impl Fabric {
    fn build(
        subnet: &Subnet,
        cns: Option<&HashSet<Guid>>,
        ios: Option<&HashSet<Guid>>,
        roots: Option<&[Guid]>,
    ) -> Result<Fabric, Refusal> {
        // LMC > 0 (OpenSM checks the configured LMC; ours is on the ports).
        if subnet
            .end_ports()
            .filter_map(|(n, p)| subnet.port(n, p))
            .any(|p| p.lmc > 0)
        {
            return Err(refusal(
                None,
                "LMC > 0 is not supported by fat-tree routing. Falling back to default routing",
            ));
        }
        // Slots follow the table rows (discovery order); OpenSM's GUID order is kept apart.
        let graph = SwitchGraph::build(subnet);
        let sw_ids = graph.slots().switches();
        let mut guid_order: Vec<u32> = (0..sw_ids.len() as u32).collect();
        guid_order.sort_by_key(|&i| subnet.node(sw_ids[i as usize]).guid);
        if sw_ids.len() < 2 {
            return Err(refusal(
                None,
                format!(
                    "Fabric has {} switches - topology is not fat-tree. Falling back to default routing",
                    sw_ids.len()
                ),
            ));
        }
        let n_nodes = subnet.nodes.len();
        if n_nodes - sw_ids.len() < 2 {
            return Err(refusal(
                None,
                format!(
                    "Fabric has {} nodes ({} switches) - topology is not fat-tree. Falling back to default routing",
                    n_nodes,
                    sw_ids.len()
                ),
            ));
        }
        // CA ports, in CA GUID order.
        let mut ca_ids: Vec<NodeId> = subnet
            .node_ids()
            .filter(|&n| subnet.node(n).node_type == NodeType::CA)
            .collect();
        ca_ids.sort_by_key(|&n| subnet.node(n).guid);
        if ca_ids.len() < 2 {
            return Err(refusal(
                None,
                format!(
                    "Fabric has {} CAs - topology is not fat-tree. Falling back to default routing",
                    ca_ids.len()
                ),
            ));
        }
        // (switch slot, switch port, CA port guid, LID), in CA GUID / port order.
        let mut ca_ports: Vec<(u32, u8, Guid, Lid)> = Vec::new();
        for &c in &ca_ids {
            let node = subnet.node(c);
            for p in 1..=node.num_ports {
                let pn = PortNum(p);
                let Some(port) = subnet.port(c, pn) else {
                    continue;
                };
                let Some((rn, rp)) = port.remote else {
                    continue;
                };
                if !link_usable(subnet, c, pn) {
                    continue;
                }
                let rnode = subnet.node(rn);
                if rnode.node_type == NodeType::CA {
                    return Err(refusal(
                        Some(format!(
                            "ERR AB0F: CA connected directly to another CA: 0x{:016x} <---> 0x{:016x}",
                            node.guid.0, rnode.guid.0
                        )),
                        "Failed ranking the tree",
                    ));
                }
                if !rnode.is_switch() || port.lid == Lid::UNASSIGNED {
                    continue;
                }
                let Some(slot) = graph.index_of(rn) else {
                    continue;
                };
                ca_ports.push((slot as u32, rp.0, port.guid, port.lid));
            }
        }
        // Ranking: BFS over the usable switch links (loopbacks ignored).
        let nsw = sw_ids.len();
        let mut queue = Vec::new();
        let mut bfs = |rank: &mut Vec<u8>, start: Vec<u32>| -> u8 {
            graph.bfs(start.iter().map(|&s| s as usize), rank, &mut queue);
            rank.iter()
                .filter(|&&r| r != UNREACHABLE)
                .max()
                .copied()
                .unwrap_or(0)
        };
        let mut rank = vec![UNRANKED; nsw];
        let root_slots: Vec<u32> = roots
            .unwrap_or(&[])
            .iter()
            .filter_map(|g| subnet.node_by_guid(*g))
            .filter(|n| subnet.node(*n).is_switch())
            .filter_map(|n| graph.index_of(n))
            .map(|i| i as u32)
            .collect();
        let roots_given = !root_slots.is_empty();
        if roots_given {
            let _ = bfs(&mut rank, root_slots.clone());
        } else {
            let start: Vec<u32> = ca_ports.iter().map(|&(s, ..)| s).collect();
            let max = bfs(&mut rank, start);
            // The switches farthest from the CAs are the roots; rank again from them.
            let start: Vec<u32> = (0..nsw as u32)
                .filter(|&i| rank[i as usize] == max)
                .collect();
            let _ = bfs(&mut rank, start);
        }
        let max_rank = rank
            .iter()
            .filter(|&&r| r != UNRANKED)
            .max()
            .copied()
            .unwrap_or(0);
        let ranked = rank.iter().filter(|&&r| r != UNRANKED).count();
        if max_rank == 0 && ranked > 1 {
            return Err(refusal(
                None,
                "ERR AB2B: Found more than one root on fabric with maximum rank 0",
            ));
        }
        // Switch records with groups.
        let mut sws: Vec<Sw> = sw_ids
            .iter()
            .enumerate()
            .map(|(i, &n)| Sw {
                node: n,
                guid: subnet.node(n).guid,
                rank: rank[i],
                tuple: NO_TUPLE,
                leaf: false,
                groups: Vec::new(),
                n_up: 0,
                n_down: 0,
                cas: Vec::new(),
            })
            .collect();
        for i in 0..nsw {
            let r = rank[i];
            if r == UNRANKED {
                continue;
            }
            let mut up: Vec<Group> = Vec::new();
            let mut down: Vec<Group> = Vec::new();
            let mut same: Vec<Group> = Vec::new();
            for e in graph.neighbors(i) {
                let (p, t, rp) = (e.port, e.to, e.remote_port);
                let tr = rank[t as usize];
                if tr == UNRANKED {
                    continue;
                }
                let list = match tr.cmp(&r) {
                    std::cmp::Ordering::Less => &mut up,
                    std::cmp::Ordering::Greater => &mut down,
                    std::cmp::Ordering::Equal => &mut same,
                };
                match list.iter_mut().find(|g| g.remote == t) {
                    Some(g) => g.ports.push((p, rp)),
                    None => list.push(Group {
                        remote: t,
                        rev: 0,
                        ports: vec![(p, rp)],
                    }),
                }
            }
            sws[i].n_up = up.len();
            sws[i].n_down = down.len();
            up.append(&mut down);
            up.append(&mut same);
            sws[i].groups = up;
        }
        // CN marking.
        let mut cn_count = 0usize;
        let mut non_cns = Vec::new();
        for &(s, p, pg, lid) in &ca_ports {
            let sw = &mut sws[s as usize];
            if sw.rank == UNRANKED {
                continue;
            }
            let is_cn = cns.is_none_or(|c| c.contains(&pg));
            if is_cn {
                cn_count += 1;
            } else {
                let _is_io = ios.is_some_and(|io| io.contains(&pg));
                non_cns.push((s, p, lid));
            }
            sw.cas.push((p, lid, is_cn));
        }
        for sw in &mut sws {
            sw.cas.sort_by_key(|c| c.0);
        }
        if cn_count == 0 {
            return Err(refusal(None, "Fabric has no valid compute nodes"));
        }
        // Leaf rank.
        let leaf_rank = if roots_given {
            guid_order
                .iter()
                .map(|&i| &sws[i as usize])
                .find(|s| s.cas.iter().any(|c| c.2))
                .map_or(max_rank, |s| s.rank)
        } else {
            max_rank
        };
        let tree_rank = leaf_rank.saturating_add(1);
        if !(MIN_TREE_RANK..=MAX_TREE_RANK).contains(&tree_rank) {
            return Err(refusal(
                None,
                format!(
                    "Fabric rank is {tree_rank} (should be between {MIN_TREE_RANK} and {MAX_TREE_RANK})"
                ),
            ));
        }
        for sw in &mut sws {
            if sw.cas.iter().any(|c| c.2) {
                sw.leaf = true;
                if sw.rank != leaf_rank {
                    return Err(refusal(
                        Some(format!(
                            "ERR AB26: CN port is connected to switch 0x{:016x} with rank {}, while FatTree leaf rank is {leaf_rank}",
                            sw.guid.0, sw.rank
                        )),
                        "Fabric topology is not a fat-tree",
                    ));
                }
            }
        }
        // Reverse group indices.
        let mut revs = Vec::new();
        for (i, sw) in sws.iter().enumerate() {
            for (gi, g) in sw.groups.iter().enumerate() {
                let r = sws[g.remote as usize]
                    .groups
                    .iter()
                    .position(|h| h.remote == i as u32)
                    .unwrap_or(0);
                revs.push((i, gi, r as u32));
            }
        }
        for (i, gi, r) in revs {
            sws[i].groups[gi].rev = r;
        }
        let mut ft = Fabric {
            sws,
            leaf_rank,
            leaves: Vec::new(),
            cn_count,
            max_cn_per_leaf: 0,
            non_cns,
            by_rank: Vec::new(),
            guid_order,
            up_start: Vec::new(),
            up_remote: Vec::new(),
        };
        ft.make_indexing();
        ft.make_leaf_array()?;
        ft.max_cn_per_leaf = ft
            .leaves
            .iter()
            .map(|&l| ft.sws[l as usize].cas.iter().filter(|c| c.2).count())
            .max()
            .unwrap_or(0);
        if !roots_given {
            ft.validate()?;
        }
        ft.check_common_roots()?;
        let mut by_rank: Vec<u32> = (0..ft.sws.len() as u32)
            .filter(|&i| ft.sws[i as usize].rank != UNRANKED)
            .collect();
        by_rank.sort_by_key(|&i| ft.sws[i as usize].rank);
        let mut up_start = vec![0u32];
        let mut up_remote = Vec::new();
        for &x in &by_rank {
            up_remote.extend(ft.sws[x as usize].up().iter().map(|g| g.remote));
            up_start.push(up_remote.len() as u32);
        }
        ft.by_rank = by_rank;
        ft.up_start = up_start;
        ft.up_remote = up_remote;
        Ok(ft)
    }

    /// OpenSM's tuple indexing: BFS from the first leaf; each newly reached switch gets its
    /// parent's tuple with the rank adjusted and the first free value in the varying digit.
    fn make_indexing(&mut self) {
        let Some(first) = self
            .guid_order
            .iter()
            .map(|&i| i as usize)
            .find(|&i| self.sws[i].leaf)
        else {
            return;
        };
        let mut used: HashSet<[u8; TUPLE_LEN]> = HashSet::new();
        let mut t0 = [0u8; TUPLE_LEN];
        t0[0] = self.sws[first].rank;
        self.sws[first].tuple = t0;
        used.insert(t0);
        let new_tuple = |used: &mut HashSet<[u8; TUPLE_LEN]>, from: [u8; TUPLE_LEN], down: bool| {
            let mut t = from;
            let var = if down {
                t[0] = t[0].wrapping_add(1);
                usize::from(from[0]) + 1
            } else {
                t[0] = t[0].wrapping_sub(1);
                usize::from(from[0])
            };
            if var >= TUPLE_LEN {
                return NO_TUPLE;
            }
            for v in 0..0xFFu8 {
                t[var] = v;
                if !used.contains(&t) {
                    used.insert(t);
                    return t;
                }
            }
            NO_TUPLE
        };
        let mut q = VecDeque::from([first]);
        while let Some(s) = q.pop_front() {
            let (rank, tuple, n_up, n_down) = {
                let sw = &self.sws[s];
                (sw.rank, sw.tuple, sw.n_up, sw.n_down)
            };
            if rank < self.leaf_rank {
                for gi in n_up..n_up + n_down {
                    let r = self.sws[s].groups[gi].remote as usize;
                    if self.sws[r].tuple == NO_TUPLE {
                        self.sws[r].tuple = new_tuple(&mut used, tuple, true);
                        q.push_back(r);
                    }
                }
            }
            if rank != 0 {
                for gi in 0..n_up {
                    let r = self.sws[s].groups[gi].remote as usize;
                    if self.sws[r].tuple == NO_TUPLE {
                        self.sws[r].tuple = new_tuple(&mut used, tuple, false);
                        q.push_back(r);
                    }
                }
            }
        }
        // Order up and down groups by the tuple of the switch they reach.
        let tuples: Vec<[u8; TUPLE_LEN]> = self.sws.iter().map(|s| s.tuple).collect();
        for sw in &mut self.sws {
            let (n_up, n_down) = (sw.n_up, sw.n_down);
            sw.groups[..n_up].sort_by_key(|g| tuples[g.remote as usize]);
            sw.groups[n_up..n_up + n_down].sort_by_key(|g| tuples[g.remote as usize]);
        }
        // Sorting moved groups: recompute reverse indices.
        let pos: Vec<HashMap<u32, u32>> = self
            .sws
            .iter()
            .map(|s| {
                s.groups
                    .iter()
                    .enumerate()
                    .map(|(i, g)| (g.remote, i as u32))
                    .collect()
            })
            .collect();
        for (i, sw) in self.sws.iter_mut().enumerate() {
            for g in &mut sw.groups {
                g.rev = pos[g.remote as usize]
                    .get(&(i as u32))
                    .copied()
                    .unwrap_or(0);
            }
        }
    }

    fn make_leaf_array(&mut self) -> Result<(), Refusal> {
        let mut all: Vec<u32> = (0..self.sws.len() as u32)
            .filter(|&i| self.sws[i as usize].rank == self.leaf_rank)
            .collect();
        all.sort_by_key(|&i| self.sws[i as usize].tuple);
        let first = all.iter().position(|&i| self.sws[i as usize].leaf);
        let last = all.iter().rposition(|&i| self.sws[i as usize].leaf);
        match (first, last) {
            (Some(f), Some(l)) if f < l => {
                self.leaves = all[f..=l].to_vec();
                Ok(())
            }
            _ => Err(refusal(
                None,
                "Failed to find leaf switches - topology is not fat-tree",
            )),
        }
    }

    /// Routes here go up and down, never over same-rank links (see the module docs), so two
    /// switches with CAs that reach no common root going up would leave their CAs with no
    /// route between them. OpenSM routes such fabrics (a dragonfly's global links, roots
    /// cabled to each other) over the same-rank links; ibsm refuses them, so the chain falls
    /// back, rather than program tables with unreachable pairs.
    fn check_common_roots(&self) -> Result<(), Refusal> {
        let n = self.sws.len();
        let mut root_bit = vec![usize::MAX; n];
        let mut roots = 0;
        for (i, sw) in self.sws.iter().enumerate() {
            if sw.rank == 0 {
                root_bit[i] = roots;
                roots += 1;
            }
        }
        let words = roots.div_ceil(64).max(1);
        let mut order: Vec<usize> = (0..n).filter(|&i| self.sws[i].rank != UNRANKED).collect();
        order.sort_by_key(|&i| self.sws[i].rank);
        let mut reach = vec![0u64; n * words];
        for &i in &order {
            if root_bit[i] != usize::MAX {
                reach[i * words + root_bit[i] / 64] |= 1 << (root_bit[i] % 64);
                continue;
            }
            for g in self.sws[i].up() {
                let r = g.remote as usize;
                for w in 0..words {
                    reach[i * words + w] |= reach[r * words + w];
                }
            }
        }
        // Switches with CAs, one per distinct set of roots reached.
        let mut sets: Vec<(&[u64], usize)> = Vec::new();
        for &i in &order {
            let set = &reach[i * words..(i + 1) * words];
            if !self.sws[i].cas.is_empty() && !sets.iter().any(|(s, _)| *s == set) {
                sets.push((set, i));
            }
        }
        for (k, &(a, i)) in sets.iter().enumerate() {
            for &(b, j) in &sets[k + 1..] {
                if a.iter().zip(b).all(|(x, y)| x & y == 0) {
                    return Err(refusal(
                        Some(format!(
                            "switches GUID 0x{:016x} and GUID 0x{:016x} have CAs but reach no common root going up: routes between them need same-rank links, which ibsm's ftree does not use",
                            self.sws[i].guid.0, self.sws[j].guid.0
                        )),
                        "Fabric topology is not a fat-tree ftree can route without same-rank links",
                    ));
                }
            }
        }
        Ok(())
    }

    /// OpenSM `fabric_validate_topology`: per rank, the first switch in GUID order is the
    /// reference.
    fn validate(&self) -> Result<(), Refusal> {
        let mut reference: HashMap<u8, usize> = HashMap::new();
        let fail = |a: &Sw, b: &Sw, what: &str, x: usize, y: usize| {
            refusal(
                Some(format!(
                    "ERR AB0D: Fabric topology hasn't been identified as FatTree: different number of {what} on switches GUID 0x{:016x} (rank {}) - {x} and GUID 0x{:016x} - {y}",
                    a.guid.0, a.rank, b.guid.0
                )),
                "Fabric topology is not a fat-tree",
            )
        };
        for &i in &self.guid_order {
            let i = i as usize;
            let sw = &self.sws[i];
            if sw.rank == UNRANKED {
                continue;
            }
            let Some(&r) = reference.get(&sw.rank) else {
                reference.insert(sw.rank, i);
                continue;
            };
            let rf = &self.sws[r];
            if rf.n_up != sw.n_up {
                return Err(fail(rf, sw, "upward port groups", rf.n_up, sw.n_up));
            }
            if sw.rank != self.leaf_rank && rf.n_down != sw.n_down {
                return Err(fail(rf, sw, "downward port groups", rf.n_down, sw.n_down));
            }
            if let Some(g0) = rf.up().first() {
                for g in sw.up() {
                    if g.ports.len() != g0.ports.len() {
                        return Err(fail(
                            rf,
                            sw,
                            "ports in an upward port group",
                            g0.ports.len(),
                            g.ports.len(),
                        ));
                    }
                }
            }
            if sw.rank != self.leaf_rank {
                if let (Some(g0), Some(g)) = (
                    rf.groups.get(rf.n_up).filter(|_| rf.n_down > 0),
                    sw.groups.get(sw.n_up).filter(|_| sw.n_down > 0),
                ) {
                    if g.ports.len() != g0.ports.len() {
                        return Err(fail(
                            rf,
                            sw,
                            "ports in a downward port group",
                            g0.ports.len(),
                            g.ports.len(),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Destinations in OpenSM order with their main paths (sequential: the counters decide).
    fn main_paths(&self, subnet: &Subnet) -> Vec<Dest> {
        // Per-switch group and port counters of destinations routed down into the switch.
        let mut gcount: Vec<Vec<u32>> = self.sws.iter().map(|s| vec![0; s.n_up]).collect();
        let mut pcount: Vec<Vec<u32>> = self
            .sws
            .iter()
            .map(|s| vec![0; usize::from(subnet.node(s.node).num_ports) + 1])
            .collect();
        let mut climb = |start: u32, record: bool| -> Vec<(u32, u8)> {
            let mut path = Vec::new();
            let mut s = start as usize;
            loop {
                let sw = &self.sws[s];
                if sw.rank == 0 || sw.n_up == 0 {
                    break;
                }
                let gc = &mut gcount[s];
                let mut best = 0usize;
                for (gi, &c) in gc.iter().enumerate() {
                    if c < gc[best] {
                        best = gi;
                    }
                }
                let g = &sw.groups[best];
                let pc = &mut pcount[s];
                let mut bp = 0usize;
                for (pi, &(lp, _)) in g.ports.iter().enumerate() {
                    if pc[usize::from(lp)] < pc[usize::from(g.ports[bp].0)] {
                        bp = pi;
                    }
                }
                let (lp, rp) = g.ports[bp];
                gc[best] += 1;
                pc[usize::from(lp)] += 1;
                if record {
                    path.push((g.remote, rp));
                }
                s = g.remote as usize;
            }
            path
        };
        let mut dests = Vec::new();
        for &l in &self.leaves {
            let sw = &self.sws[l as usize];
            let mut routed = 0usize;
            for &(p, lid, cn) in &sw.cas {
                if !cn {
                    continue;
                }
                let main = climb(l, true);
                dests.push(Dest {
                    lid,
                    attach: l,
                    port: p,
                    counted: true,
                    main,
                });
                routed += 1;
            }
            for _ in routed..self.max_cn_per_leaf {
                let _ = climb(l, false);
            }
        }
        for &(s, p, lid) in &self.non_cns {
            let main = climb(s, true);
            dests.push(Dest {
                lid,
                attach: s,
                port: p,
                counted: true,
                main,
            });
        }
        for (i, sw) in self.sws.iter().enumerate() {
            if sw.rank == UNRANKED {
                continue;
            }
            let lid = subnet.lid_of(sw.node, PortNum(0));
            if lid == Lid::UNASSIGNED {
                continue;
            }
            dests.push(Dest {
                lid,
                attach: i as u32,
                port: 0,
                counted: false,
                main: Vec::new(),
            });
        }
        dests
    }

    /// One destination's column: per switch, [`NONE`], `FIXED | port`, or a group index.
    /// `dk` is scratch: per switch `hops left << 8 | key` (so one comparison orders both).
    fn column(&self, d: &Dest, dk: &mut [u16], col: &mut [u16]) {
        const UNSET: u16 = (FAR as u16) << 8 | SECONDARY as u16;
        let pack = |dist: usize, key: usize| -> u16 {
            ((dist.min(usize::from(FAR) - 1) as u16) << 8)
                | key.min(usize::from(SECONDARY) - 1) as u16
        };
        dk.fill(UNSET);
        col.fill(NONE);
        let a = d.attach as usize;
        dk[a] = 0;
        col[a] = FIXED | u16::from(d.port);
        for (i, &(s, p)) in d.main.iter().enumerate() {
            dk[s as usize] = pack(i + 1, i + 1);
            col[s as usize] = FIXED | u16::from(p);
        }
        // Ancestors: up from the attach switch, level by level. Each points down to the first
        // child that reached it, and the main-path switch of each level goes first, so the
        // parents of the main path point down to it.
        let mut frontier = vec![d.attach];
        let mut next = Vec::new();
        let mut level = 0usize;
        while !frontier.is_empty() {
            level += 1;
            if let Some(&(m, _)) = d.main.get(level - 1) {
                next.push(m);
            }
            let v = ((level.min(usize::from(FAR) - 1) as u16) << 8) | u16::from(SECONDARY);
            for &s in &frontier {
                for g in self.sws[s as usize].up() {
                    let p = g.remote as usize;
                    if dk[p] >> 8 == u16::from(FAR) {
                        dk[p] = v;
                        col[p] = g.rev as u16;
                        next.push(g.remote);
                    }
                }
            }
            std::mem::swap(&mut frontier, &mut next);
            next.clear();
        }
        // Everything else, parents before children: up to the parent with the fewest hops
        // left, then the lowest key (the main path joined lowest), then the lowest index.
        for (k, &x) in self.by_rank.iter().enumerate() {
            let x = x as usize;
            if dk[x] >> 8 != u16::from(FAR) {
                continue;
            }
            let ups = &self.up_remote[self.up_start[k] as usize..self.up_start[k + 1] as usize];
            let mut best = u16::MAX;
            let mut bi = 0usize;
            for (gi, &p) in ups.iter().enumerate() {
                let v = dk[p as usize];
                if v < best {
                    best = v;
                    bi = gi;
                }
            }
            if best >> 8 < u16::from(FAR) - 1 {
                dk[x] = best + 0x100;
                col[x] = bi as u16;
            }
        }
    }

    /// `connect_roots` (OpenSM `fabric_route_roots`): every switch above the leaves that has no
    /// route to a switch's LID sends it toward the last leaf in index order, where the leaf
    /// has a route to that LID. The leaf then takes the one down→up turn of those routes, so
    /// they all turn in one place and close no credit loop. Returns the leaf and the number
    /// of entries set.
    fn connect_roots(&self, subnet: &Subnet, lfts: &mut Lfts) -> (Option<Guid>, usize) {
        let Some(&leaf) = self.leaves.last() else {
            return (None, 0);
        };
        let leaf = &self.sws[leaf as usize];
        let leaf_lid = subnet.lid_of(leaf.node, PortNum(0));
        // Switch LIDs the leaf routes (its own included).
        let targets: Vec<Lid> = subnet
            .switches()
            .map(|sw| subnet.lid_of(sw, PortNum(0)))
            .filter(|&lid| lid != Lid::UNASSIGNED && lfts.get(leaf.node, lid).is_some())
            .collect();
        let mut set = 0;
        for sw in self.sws.iter().filter(|s| s.rank < self.leaf_rank) {
            let Some(toward) = lfts.get(sw.node, leaf_lid) else {
                continue;
            };
            for &lid in &targets {
                if lfts.get(sw.node, lid).is_none() && lfts.set(sw.node, lid, Some(toward)) {
                    set += 1;
                }
            }
        }
        (Some(leaf.guid), set)
    }

    fn route(&self, subnet: &Subnet) -> Lfts {
        let dests = self.main_paths(subnet);
        let nsw = self.sws.len();
        let mut cols = vec![NONE; dests.len() * nsw];
        let fill = |(d, col): (&Dest, &mut [u16]), dk: &mut Vec<u16>| {
            self.column(d, dk, col);
        };
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            dests
                .par_iter()
                .zip(cols.par_chunks_mut(nsw.max(1)))
                .for_each_init(|| vec![0u16; nsw], |dk, dc| fill(dc, dk));
        }
        #[cfg(not(feature = "parallel"))]
        {
            let mut dk = vec![0u16; nsw];
            for dc in dests.iter().zip(cols.chunks_mut(nsw.max(1))) {
                fill(dc, &mut dk);
            }
        }
        // Rows: fixed ports as they are; groups spread over their ports in turn, per switch.
        let mut lfts = Lfts::new(subnet, max_lid(subnet));
        // Blocks of adjacent switches (slot = table row) so that each destination's column
        // slice is read once per block.
        const BLOCK: usize = 64;
        let fill_block = |(b, rows): (usize, Vec<(NodeId, &mut [u8])>)| {
            let x0 = b * BLOCK;
            let mut turns: Vec<Vec<u32>> = (x0..x0 + rows.len())
                .map(|x| vec![0u32; self.sws[x].groups.len()])
                .collect();
            let mut rows = rows;
            for (di, d) in dests.iter().enumerate() {
                let lid = usize::from(d.lid.0);
                let base = di * nsw + x0;
                for (k, (_, row)) in rows.iter_mut().enumerate() {
                    let v = cols[base + k];
                    let port = if v == NONE {
                        continue;
                    } else if v & FIXED != 0 {
                        (v & 0xFF) as u8
                    } else {
                        let gi = usize::from(v);
                        let ports = &self.sws[x0 + k].groups[gi].ports;
                        let t = &mut turns[k][gi];
                        let p = ports[*t as usize % ports.len()].0;
                        if d.counted {
                            *t = t.wrapping_add(1);
                        }
                        p
                    };
                    if let Some(e) = row.get_mut(lid) {
                        *e = port;
                    }
                }
            }
        };
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            lfts.par_rows_mut()
                .chunks(BLOCK)
                .enumerate()
                .for_each(fill_block);
        }
        #[cfg(not(feature = "parallel"))]
        {
            let mut rows: Vec<(NodeId, &mut [u8])> = lfts.rows_mut().collect();
            let mut b = 0;
            while !rows.is_empty() {
                let rest = rows.split_off(rows.len().min(BLOCK));
                fill_block((b, rows));
                rows = rest;
                b += 1;
            }
        }
        lfts
    }
}

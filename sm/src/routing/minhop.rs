//! Min-hop routing (OpenSM `minhop`, the default engine): shortest paths with per-port load
//! balancing, transcribed from `osm_ucast_mgr.c` / `osm_switch_recommend_path` semantics.
//!
//! # Phase 1: hop matrix
//! [`HopMatrix`] (in [`super::graph`]): a BFS from every switch (64 sources per search) over
//! the usable switch–switch links gives `hops(a, b)` in a compact `u8` matrix (switches ×
//! switches, 0xFF = unreachable), OpenSM's relaxation fixed point with hop weight 1. A CA LID
//! uses its attached switch's row (the CA link adds 1 to every candidate alike). A link is
//! usable when both ends are linked and in Init/Armed/Active ([`link_usable`]). The candidates
//! per destination switch are the minimum-hop ports ([`Candidates::min_hop`]).
//!
//! # Phase 2: egress ports
//! Destinations are visited in OpenSM's `port_order_list` order:
//! 0. with [`EngineOptions::guid_routing_order_file`], the end ports it lists by port GUID, in
//!    its order (GUIDs of no end port, and repeats, skipped, as OpenSM does);
//! 1. end ports attached to switches, grouped by switch; switches sorted by the number of
//!    end-port links, descending, ties in `sw_guid_tbl` order (ascending GUID as a byte-swapped
//!    `u64`, what OpenSM's `cl_qmap` keyed by a network-order GUID yields on x86), end ports of
//!    one switch in port-number order (`sort_ports_by_switch_load`, stable like glibc's
//!    merge-sort `qsort`);
//! 2. all remaining end ports (switch port 0s, unattached CAs) in port-GUID order (same key).
//!
//! With LMC > 0 all ports' offset 0 are routed first, then offset 1, and so on. For each
//! switch and destination LID (`ucast_mgr_process_port` + `osm_switch_recommend_path`):
//! - own LID → port 0; a CA attached to this switch → the port it is attached to;
//! - otherwise the candidates are the usable ports whose hop count equals the minimum; ports
//!   are scanned from `start_from` (1, or for LMC offset `i > 0` the port chosen for offset
//!   `i − 1` plus 1, wrapping modulo `num_ports + 1`), and the first port with strictly fewer
//!   routes so far wins — so ties go to the lowest port number from `start_from`;
//! - with LMC > 0 a candidate leading to a system (SystemImageGUID) not yet used by this
//!   destination's earlier LIDs is preferred, then one leading to an unused node (NodeGUID),
//!   then the fewest-routes port, ties broken by how often the remote node was used;
//! - no path → 0xFF.
//!
//! The chosen port's counter grows by one, except for routes to switch LIDs (unless
//! [`EngineOptions::port_profile_switch_nodes`]). Counters are per switch, so every switch is
//! routed independently — in parallel with the `parallel` feature, with identical results.
//!
//! With [`EngineOptions::scatter_ports`] ≠ 0 the choice among the equally loaded candidates is
//! random (OpenSM `scatter_ports`, which also overrides the LMC spreading): each switch draws
//! from its own ChaCha8 stream seeded from one value taken from the engine's RNG and the
//! switch's GUID, so the result is reproducible for a seed and independent of thread count.
//! With [`EngineOptions::guid_routing_order_no_scatter`] the ports of the routing order file
//! are routed without it.
//!
//! The balancing loop (`balance`) takes its candidate lists from outside, so other engines
//! (updn/dnup) reuse it with their own legal next hops.
//!
//! With [`EngineOptions::existing_lfts`] (OpenSM without `ignore_existing_lfts`), a
//! destination whose current entry at this switch is still one of the candidate ports keeps
//! it (counted like a choice), before any balancing, LMC spreading or scattering — OpenSM's
//! `osm_switch_recommend_path`. So a vanished end port changes only its own LIDs' entries,
//! and a failed link only the routes that used it.
//!
//! With [`EngineOptions::port_shifting`] (OpenSM `port_shifting`), the candidates are scanned
//! again from position (routes on them ÷ their number) mod their number, and the first with
//! the fewest routes wins (with LMC > 0 the system/node spreading is redone in that order, as
//! OpenSM's second pass does); `scatter_ports` still overrides it.
//!
//! [`EngineOptions::port_prof_ignore_file`] (OpenSM `-i`) names switch ports whose routes are
//! not counted (nor their remote node for the LMC spreading). [`EngineOptions::hop_weights_file`]
//! (OpenSM `-w`) gives switch ports a hop weight: minhop's candidates are then the ports of
//! least weighted distance (Dijkstra toward each switch), as OpenSM's lid matrices with
//! `hop_wf`. A line that is no GUID ends either file (ERR 3A0E, ERR 3A05), the lines before it
//! kept, as OpenSM does.
//!
//! [`EngineOptions::port_search_ordering_file`] (OpenSM `-O`) gives a switch its own port
//! scan order ([`search_orders`]): its candidate lists are taken in that order, so ties go to
//! the first listed port, and with LMC > 0 the scan of the next LID starts at the position
//! after the previous LID's port number, as OpenSM indexes its order with it.

use std::collections::HashMap;

use ibmad::{Lid, PortNum};
use rand::{Rng, SeedableRng};

use super::graph::{link_usable, Candidates, HopMatrix, SwitchGraph, UNREACHABLE};
use super::updn::{node_map_file, strtoul, switch_by_guid};
use super::{max_lid, EngineOptions, Lfts, RouteError, Routes, RoutingEngine, NO_PATH};
use crate::subnet::{NodeId, Subnet};

#[derive(Clone, Copy, Debug)]
enum DestKind {
    /// A switch, by matrix index.
    Switch(u32),
    /// A CA/router port: its attached switch (matrix index, port on that switch), if any.
    Ca(Option<(u32, u8)>),
}

#[derive(Clone, Copy, Debug)]
struct Dest {
    base: u16,
    nlids: u16,
    kind: DestKind,
    /// `scatter_ports` applies (not for the routing order file's ports with
    /// `guid_routing_order_no_scatter`).
    scatter: bool,
}

/// The port GUIDs of [`EngineOptions::guid_routing_order_file`], in order (empty without the
/// file), or OpenSM's error line (ERR 3A0D) when it cannot be read or parsed; OpenSM then
/// routes in the usual order.
pub(crate) fn routing_order(opts: &EngineOptions) -> Result<Vec<ibmad::Guid>, String> {
    let Some(f) = &opts.guid_routing_order_file else {
        return Ok(Vec::new());
    };
    f.contents
        .as_ref()
        .map_err(String::clone)
        .and_then(|t| super::updn::parse_guid_file(t).map_err(|e| e.to_string()))
        .map(|v| v.into_iter().map(|(_, g)| g).collect())
        .map_err(|e| {
            format!(
                "ucast_mgr_build_lfts: ERR 3A0D: cannot parse guid routing order file '{}': {e}",
                f.path
            )
        })
}

/// Logs [`routing_order`]'s error, if any, and the error lines of the port files
/// ([`ignored_ports`], [`hop_weights`], [`search_orders`]): for the engines that balance with
/// [`balance`].
pub(crate) fn log_option_files(opts: &EngineOptions, log: &mut Vec<String>) {
    if let Err(e) = routing_order(opts) {
        log.push(e);
    }
    for (f, prefix) in [
        (&opts.port_prof_ignore_file, IGNORE_ERR),
        (&opts.hop_weights_file, WEIGHTS_ERR),
        (&opts.port_search_ordering_file, ORDER_ERR),
    ] {
        if let Some(f) = f {
            log.extend(node_map_file(f, prefix).1);
        }
    }
}

/// OpenSM's error lines for the port files.
const IGNORE_ERR: &str = "ucast_mgr: ERR 3A0E: cannot parse port prof ignore file";
const WEIGHTS_ERR: &str = "ucast_mgr: ERR 3A05: cannot parse hop_weights_file";
const ORDER_ERR: &str =
    "ucast_mgr_setup_all_switches: ERR 3A0F: cannot parse port_search_ordering_file";

/// The scan order of each switch that [`EngineOptions::port_search_ordering_file`] lists
/// (OpenSM `set_search_ordering_ports`), as port → position (port 0 at 0, the listed ports
/// from 1, the others after them ascending). A switch's line is skipped (as OpenSM does) if a
/// port on it is 0, beyond the switch's ports, not a number or repeated, or if the switch was
/// listed before. With the error line (ERR 3A0F) if the file cannot be read or has a line
/// that is no GUID.
pub(crate) fn search_orders(
    subnet: &Subnet,
    opts: &EngineOptions,
) -> (HashMap<NodeId, [u8; 256]>, Option<String>) {
    let Some(f) = &opts.port_search_ordering_file else {
        return (HashMap::new(), None);
    };
    let (lines, err) = node_map_file(f, ORDER_ERR);
    let mut out: HashMap<NodeId, [u8; 256]> = HashMap::new();
    'line: for (_, g, rest) in lines {
        let Some(sw) = switch_by_guid(subnet, g) else {
            continue;
        };
        if out.contains_key(&sw) {
            continue;
        }
        let num_ports = subnet.node(sw).num_ports;
        let mut listed: Vec<u8> = Vec::new();
        let mut p = rest.split('#').next().unwrap_or("");
        while !p.trim().is_empty() {
            let Some((v, after)) = strtoul(p) else {
                continue 'line;
            };
            if v == 0 || v > u64::from(num_ports) || listed.contains(&(v as u8)) {
                continue 'line;
            }
            listed.push(v as u8);
            p = after;
        }
        if listed.is_empty() {
            continue;
        }
        let mut rank = [0u8; 256];
        let rest_ports = (1..=num_ports).filter(|q| !listed.contains(q));
        for (i, q) in listed.iter().copied().chain(rest_ports).enumerate() {
            rank[usize::from(q)] = (i + 1) as u8;
        }
        // Ports the switch does not have keep their number's place after the others.
        for (q, r) in rank.iter_mut().enumerate().skip(usize::from(num_ports) + 1) {
            *r = q as u8;
        }
        out.insert(sw, rank);
    }
    (out, err)
}

/// The lines of a `SWITCH-GUID PORT …` file that name a switch and one of its ports
/// (1..=NumPorts): (switch, port, the text after the port). OpenSM skips the other lines
/// (logged at debug level) and stops at a line that is no GUID, keeping those before it;
/// that error comes back as OpenSM's line (starting with `prefix`).
fn switch_port_lines<'a>(
    subnet: &Subnet,
    f: &'a super::OptionFile,
    prefix: &str,
) -> (Vec<(NodeId, u8, &'a str)>, Option<String>) {
    let (lines, err) = node_map_file(f, prefix);
    let out = lines
        .into_iter()
        .filter_map(|(_, g, rest)| {
            let sw = switch_by_guid(subnet, g)?;
            let (port, after) = strtoul(rest)?;
            (port >= 1 && port <= u64::from(subnet.node(sw).num_ports))
                .then_some((sw, port as u8, after))
        })
        .collect();
    (out, err)
}

/// The switch ports of [`EngineOptions::port_prof_ignore_file`] (OpenSM `mark_ignored_port`):
/// routes sent out of them are not counted by the balancing. With the error line (ERR 3A0E)
/// if the file cannot be read or has a line that is no GUID.
pub(crate) fn ignored_ports(
    subnet: &Subnet,
    opts: &EngineOptions,
) -> (HashMap<NodeId, [u64; 4]>, Option<String>) {
    let Some(f) = &opts.port_prof_ignore_file else {
        return (HashMap::new(), None);
    };
    let (lines, err) = switch_port_lines(subnet, f, IGNORE_ERR);
    let mut out: HashMap<NodeId, [u64; 4]> = HashMap::new();
    for (sw, p, _) in lines {
        out.entry(sw).or_default()[usize::from(p / 64)] |= 1 << (p % 64);
    }
    (out, err)
}

/// The hop weights of [`EngineOptions::hop_weights_file`] (OpenSM `set_hop_wf`): (switch,
/// port) → weight 1..=255; a line whose weight is missing, 0 or above 255 is skipped. With the
/// error line (ERR 3A05) if the file cannot be read or has a line that is no GUID.
pub(crate) fn hop_weights(
    subnet: &Subnet,
    opts: &EngineOptions,
) -> (HashMap<(NodeId, u8), u8>, Option<String>) {
    let Some(f) = &opts.hop_weights_file else {
        return (HashMap::new(), None);
    };
    let (lines, err) = switch_port_lines(subnet, f, WEIGHTS_ERR);
    let mut out = HashMap::new();
    for (sw, p, after) in lines {
        // OpenSM skips the one character after the port, then reads the weight.
        let mut rest = after.chars();
        rest.next();
        if let Some((w, _)) = strtoul(rest.as_str()) {
            if (1..0x100).contains(&w) {
                out.insert((sw, p), w as u8);
            }
        }
    }
    (out, err)
}

/// Per-switch candidates under hop weights: the ports toward each destination switch whose
/// weight plus the far switch's weighted distance is the least (OpenSM's lid matrices with
/// `hop_wf`). Distances by Dijkstra toward each destination over the usable links.
fn weighted_candidates(g: &SwitchGraph, weights: &HashMap<(NodeId, u8), u8>) -> Vec<Candidates> {
    let n = g.switch_count();
    let w = |a: usize, port: u8| -> u32 {
        g.switch_at(a)
            .and_then(|sw| weights.get(&(sw, port)))
            .map_or(1, |&x| u32::from(x))
    };
    // Reverse adjacency: for each switch, the (neighbour, weight of the neighbour's port).
    let mut rev: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
    for a in 0..n {
        for e in g.neighbors(a) {
            rev[e.to as usize].push((a as u32, w(a, e.port)));
        }
    }
    let mut dist = vec![u32::MAX; n * n]; // dist[t * n + a]
    let mut heap = std::collections::BinaryHeap::new();
    for t in 0..n {
        let d = &mut dist[t * n..(t + 1) * n];
        d[t] = 0;
        heap.push(std::cmp::Reverse((0u32, t as u32)));
        while let Some(std::cmp::Reverse((du, u))) = heap.pop() {
            if du > d[u as usize] {
                continue;
            }
            for &(v, wv) in &rev[u as usize] {
                let nd = du.saturating_add(wv);
                if nd < d[v as usize] {
                    d[v as usize] = nd;
                    heap.push(std::cmp::Reverse((nd, v)));
                }
            }
        }
    }
    (0..n)
        .map(|a| {
            let (mut start, mut ports) = (Vec::with_capacity(n + 1), Vec::new());
            for t in 0..n {
                start.push(ports.len() as u32);
                let da = dist[t * n + a];
                if t == a || da == u32::MAX {
                    continue;
                }
                for e in g.neighbors(a) {
                    let dr = dist[t * n + e.to as usize];
                    if dr != u32::MAX && dr.saturating_add(w(a, e.port)) == da {
                        ports.push(e.port);
                    }
                }
            }
            start.push(ports.len() as u32);
            Candidates::from_csr(start, ports)
        })
        .collect()
}

/// OpenSM's `port_order_list` (see the module docs), as destinations with LIDs.
fn destinations(subnet: &Subnet, hm: &SwitchGraph, opts: &EngineOptions) -> Vec<Dest> {
    let key = |g: ibmad::Guid| g.0.swap_bytes();
    let mut listed = std::collections::HashSet::new();
    let mut ports: Vec<(NodeId, PortNum)> = Vec::new();
    // 0. The routing order file's ports first.
    let first = routing_order(opts).unwrap_or_default();
    if !first.is_empty() {
        let by_guid: std::collections::HashMap<ibmad::Guid, (NodeId, PortNum)> = subnet
            .end_ports()
            .filter_map(|(n, p)| Some((subnet.port(n, p)?.guid, (n, p))))
            .collect();
        for g in &first {
            if let Some(&np) = by_guid.get(g) {
                if listed.insert(*g) {
                    ports.push(np);
                }
            }
        }
    }
    let ordered = ports.len();
    // Switches in sw_guid_tbl order, then stable-sorted by end-port links, descending.
    let mut sws: Vec<NodeId> = subnet.switches().collect();
    sws.sort_by_key(|&s| key(subnet.node(s).guid));
    let endport_links = |s: NodeId| -> usize {
        (1..=subnet.node(s).num_ports)
            .filter(|&p| {
                subnet
                    .port(s, PortNum(p))
                    .and_then(|x| x.remote)
                    .is_some_and(|(rn, _)| !subnet.node(rn).is_switch())
            })
            .count()
    };
    let links: Vec<usize> = sws.iter().map(|&s| endport_links(s)).collect();
    let mut order: Vec<usize> = (0..sws.len()).collect();
    order.sort_by(|&a, &b| links[b].cmp(&links[a])); // stable
    for i in order {
        let s = sws[i];
        for p in 1..=subnet.node(s).num_ports {
            let Some((rn, rp)) = subnet.port(s, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            if subnet.node(rn).is_switch() {
                continue;
            }
            let Some(rport) = subnet.port(rn, rp) else {
                continue;
            };
            if rport.info.is_none() || !listed.insert(rport.guid) {
                continue;
            }
            ports.push((rn, rp));
        }
    }
    let mut rest: Vec<(NodeId, PortNum)> = subnet
        .end_ports()
        .filter(|&(n, p)| subnet.port(n, p).is_some_and(|x| !listed.contains(&x.guid)))
        .collect();
    rest.sort_by_key(|&(n, p)| subnet.port(n, p).map_or(0, |x| key(x.guid)));
    ports.extend(rest);

    ports
        .into_iter()
        .enumerate()
        .filter_map(|(i, (n, p))| {
            let port = subnet.port(n, p)?;
            if port.lid == Lid::UNASSIGNED {
                return None; // OpenSM ERR 3A04: port has LID 0, ignored
            }
            let node = subnet.node(n);
            let kind = if node.is_switch() {
                DestKind::Switch(hm.index_of(n)? as u32)
            } else {
                let attach = port.remote.and_then(|(rn, rp)| {
                    let i = hm.index_of(rn)?;
                    link_usable(subnet, n, p).then_some((i as u32, rp.0))
                });
                DestKind::Ca(attach)
            };
            let nlids = 1u16 << port.lmc.min(7);
            Some(Dest {
                base: port.lid.0,
                nlids,
                kind,
                scatter: i >= ordered || !opts.guid_routing_order_no_scatter,
            })
        })
        .collect()
}

/// The min-hop engine.
#[derive(Clone, Debug)]
pub struct MinHop {
    opts: EngineOptions,
    /// With [`EngineOptions::existing_lfts`]: a switch whose every entry is kept gets its
    /// current table back without balancing (see [`Ctx::keep_row`]).
    reuse_rows: bool,
    /// A cold LMC-0 switch is routed by [`Ctx::route_switch_plain`].
    plain_loop: bool,
}

impl Default for MinHop {
    fn default() -> MinHop {
        MinHop::new(EngineOptions::default())
    }
}

impl MinHop {
    /// With options.
    #[must_use]
    pub fn new(opts: EngineOptions) -> MinHop {
        MinHop {
            opts,
            reuse_rows: true,
            plain_loop: true,
        }
    }

    /// Turns off (or on) the reuse of a switch's current table when routing with
    /// [`EngineOptions::existing_lfts`] keeps every entry of it: the tables are the same
    /// either way (the reuse only skips work), which the tests check by comparing both.
    #[must_use]
    pub fn with_row_reuse(mut self, on: bool) -> MinHop {
        self.reuse_rows = on;
        self
    }

    /// Turns off (or on) the dedicated loop for switches routed without scattering, LMC
    /// spreading or existing tables (a cold bring-up with LMC 0): the general loop picks the
    /// same ports, which the tests check by comparing both.
    #[must_use]
    pub fn with_plain_loop(mut self, on: bool) -> MinHop {
        self.plain_loop = on;
        self
    }

    /// Routes with a prebuilt hop matrix (lets callers reuse it, e.g. for checking); no
    /// scattering.
    #[must_use]
    pub fn route_with(&self, subnet: &Subnet, hm: &HopMatrix) -> Lfts {
        self.route_with_seed(subnet, hm, 0)
    }

    fn route_with_seed(&self, subnet: &Subnet, hm: &HopMatrix, scatter: u64) -> Lfts {
        let (weights, _) = hop_weights(subnet, &self.opts);
        if !weights.is_empty() {
            let cands = weighted_candidates(hm.graph(), &weights);
            return balance_with(
                subnet,
                hm.graph(),
                &self.opts,
                scatter,
                &|si: usize| {
                    cands
                        .get(si)
                        .cloned()
                        .unwrap_or_else(|| Candidates::from_csr(vec![0], Vec::new()))
                },
                None,
                self.plain_loop,
            );
        }
        balance_with(
            subnet,
            hm.graph(),
            &self.opts,
            scatter,
            &|si: usize| Candidates::min_hop(hm, si),
            self.reuse_rows.then_some(hm),
            self.plain_loop,
        )
    }
}

/// A nonzero per-run scatter seed drawn from `rng` when `opts.scatter_ports` is set, else 0.
pub(crate) fn scatter_seed(opts: &EngineOptions, rng: &mut dyn rand::RngCore) -> u64 {
    if opts.scatter_ports == 0 {
        0
    } else {
        rng.next_u64() | 1
    }
}

/// The balancing phase shared by minhop and updn/dnup: for every switch (in parallel), visit
/// the destinations in OpenSM's order and pick, among the candidate ports `cands(switch
/// index)` lists per destination switch, the least-loaded one (see the module docs). An empty
/// candidate list means "no path". `scatter` ≠ 0 randomises ties (seeded per switch).
pub(crate) fn balance(
    subnet: &Subnet,
    hm: &SwitchGraph,
    opts: &EngineOptions,
    scatter: u64,
    cands: &(dyn Fn(usize) -> Candidates + Sync),
) -> Lfts {
    balance_with(subnet, hm, opts, scatter, cands, None, true)
}

/// [`balance`], and with `min_hop` (the candidates are [`Candidates::min_hop`] of that
/// matrix) a switch whose current table ([`EngineOptions::existing_lfts`]) keeps every entry
/// gets it back without building its candidate lists or balancing ([`Ctx::keep_row`]).
/// `plain_loop`: route cold LMC-0 switches with [`Ctx::route_switch_plain`].
fn balance_with(
    subnet: &Subnet,
    hm: &SwitchGraph,
    opts: &EngineOptions,
    scatter: u64,
    cands: &(dyn Fn(usize) -> Candidates + Sync),
    min_hop: Option<&HopMatrix>,
    plain_loop: bool,
) -> Lfts {
    {
        let top = max_lid(subnet);
        // Each row is filled with NO_PATH by `run`, on the thread routing it.
        let mut lfts = Lfts::with_slots_unfilled(hm.slots().clone(), top);
        let dests = destinations(subnet, hm, opts);
        let max_lids = dests.iter().map(|d| d.nlids).max().unwrap_or(1);
        let (ignored, _) = ignored_ports(subnet, opts);
        let (orders, _) = search_orders(subnet, opts);
        let ctx = Ctx {
            subnet,
            dests: &dests,
            max_lids,
            lmc_routing: max_lids > 1,
            count_switches: opts.port_profile_switch_nodes,
            scatter,
            port_shifting: opts.port_shifting,
            plain: (plain_loop
                && scatter == 0
                && max_lids <= 1
                && !opts.port_shifting
                && ignored.is_empty())
            .then(|| PlainDests::new(&dests)),
            ignored,
            orders,
        };
        let existing = opts.existing_lfts.as_deref();
        let run = |sw: NodeId, row: &mut [u8]| {
            row.fill(NO_PATH);
            if let Some(si) = hm.index_of(sw) {
                let cur = existing.and_then(|e| e.get(subnet.node(sw).guid));
                if let (Some(cur), Some(m)) = (cur, min_hop) {
                    if ctx.keep_row(si, row, m, cur) {
                        return;
                    }
                }
                let c = cands(si);
                match ctx.orders.get(&sw) {
                    Some(rank) => ctx.route_switch(sw, si, row, &c.ordered_by(rank), cur),
                    None => ctx.route_switch(sw, si, row, &c, cur),
                }
            }
        };
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            lfts.par_rows_mut().for_each(|(sw, row)| run(sw, row));
        }
        #[cfg(not(feature = "parallel"))]
        for (sw, row) in lfts.rows_mut() {
            run(sw, row);
        }
        lfts
    }
}

impl RoutingEngine for MinHop {
    fn name(&self) -> &'static str {
        "minhop"
    }

    /// Never fails: unreachable destinations get [`NO_PATH`]. Logs only a routing order file
    /// it cannot read.
    fn route_logged(
        &self,
        subnet: &Subnet,
        rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        log_option_files(&self.opts, log);
        let hm = HopMatrix::build(subnet);
        let scatter = scatter_seed(&self.opts, rng);
        Ok(Routes::new(self.route_with_seed(subnet, &hm, scatter)))
    }
}

struct Ctx<'a> {
    subnet: &'a Subnet,
    dests: &'a [Dest],
    max_lids: u16,
    lmc_routing: bool,
    count_switches: bool,
    scatter: u64,
    /// OpenSM's `port_shifting` ([`EngineOptions::port_shifting`]).
    port_shifting: bool,
    /// Per switch, the ports whose routes are not counted ([`ignored_ports`]).
    ignored: HashMap<NodeId, [u64; 4]>,
    /// Per switch, its port scan order ([`search_orders`]).
    orders: HashMap<NodeId, [u8; 256]>,
    /// The destinations as [`Ctx::route_switch_plain`] walks them (when it may be used).
    plain: Option<PlainDests>,
}

/// The destinations of an LMC-0 pass in order, as runs of consecutive destinations behind the
/// same switch (from a leaf, the CAs of one remote leaf are one run: one list, one cursor).
struct PlainDests {
    /// The LID of each destination.
    lids: Vec<u16>,
    /// For a CA, the port of its switch it is cabled to.
    ports: Vec<u8>,
    runs: Vec<Run>,
}

/// Destinations `start..end` of [`PlainDests`], all switch LIDs or all CAs, behind switch
/// slot `t` ([`Run::NONE`] for CAs without a usable link).
#[derive(Clone, Copy, Debug)]
struct Run {
    start: u32,
    end: u32,
    t: u32,
    switch: bool,
}

impl Run {
    const NONE: u32 = u32::MAX;
}

impl PlainDests {
    /// `dests` (each with one LID) grouped into runs.
    fn new(dests: &[Dest]) -> PlainDests {
        let mut lids = Vec::with_capacity(dests.len());
        let mut ports = Vec::with_capacity(dests.len());
        let mut runs: Vec<Run> = Vec::new();
        for d in dests {
            let (t, switch, port) = match d.kind {
                DestKind::Switch(t) => (t, true, 0),
                DestKind::Ca(None) => (Run::NONE, false, NO_PATH),
                DestKind::Ca(Some((t, p))) => (t, false, p),
            };
            let i = lids.len() as u32;
            match runs.last_mut() {
                Some(r) if r.t == t && r.switch == switch => r.end = i + 1,
                _ => runs.push(Run {
                    start: i,
                    end: i + 1,
                    t,
                    switch,
                }),
            }
            lids.push(d.base);
            ports.push(port);
        }
        PlainDests { lids, ports, runs }
    }
}

/// The balancing side of [`Candidates`]: picks among a list by the per-port counters.
impl Candidates {
    /// One of the least-loaded ports of list `t`, chosen with `rng` (scatter_ports).
    #[inline]
    fn scattered(
        &self,
        t: usize,
        counts: &Counters,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> Option<u8> {
        let list = self.of(t);
        let min = list.iter().map(|&p| counts.count(p)).min()?;
        let ties = list.iter().filter(|&&p| counts.count(p) == min).count();
        let k = rng.gen_range(0..ties);
        list.iter()
            .filter(|&&p| counts.count(p) == min)
            .nth(k)
            .copied()
    }

    /// A cursor `(m, pos)` per stored list ([`Candidates::list_id`]): every port of the list
    /// has ≥ `m` routes and the ports before `pos` have more than `m` (the invariant only
    /// speaks about the list's ports and their counts, which only grow, so it survives picks
    /// made through other lists, and destinations sharing the list share its cursor).
    #[inline]
    fn cursors(&self) -> Vec<(u32, u32)> {
        vec![(0, 0); self.stored_lists()]
    }

    /// The port with the fewest routes, ties to the lowest port number — OpenSM's scan from
    /// port 1 where only a strictly smaller count replaces the best — as `(port, stored list,
    /// position)`. Amortised O(1): counts only grow, so the cursor of a list only moves
    /// forward until it wraps, and a wrap recomputes the list's minimum once. Whatever cursor
    /// meets the invariant, the pick is the same (the first port of least count).
    #[inline]
    fn least(
        &self,
        t: usize,
        counts: &Counters,
        cursors: &mut [(u32, u32)],
    ) -> Option<(u8, u32, u32)> {
        let id = self.list_id(t)?;
        let l = id as u32;
        let list = self.stored(id);
        let cur = cursors.get_mut(id)?;
        if list.is_empty() {
            return None;
        }
        loop {
            let (m, pos) = *cur;
            if let Some(i) = list[pos as usize..]
                .iter()
                .position(|&p| counts.count(p) == m)
            {
                let at = pos + i as u32;
                cur.1 = at;
                return Some((list[at as usize], l, at));
            }
            let min = list.iter().map(|&p| counts.count(p)).min()?;
            *cur = (min, 0);
        }
    }
}

/// OpenSM's `port_shifting` pick without LMC: the candidates (in port order) scanned from
/// position (routes on them ÷ their number) mod their number, the first with the fewest
/// routes.
fn shifted(list: &[u8], counts: &Counters) -> u8 {
    let n = list.len();
    if n == 0 {
        return NO_PATH;
    }
    let total: u64 = list.iter().map(|&p| u64::from(counts.count(p))).sum();
    let first = (total / n as u64) as usize;
    let mut best = (u32::MAX, NO_PATH);
    for i in 0..n {
        let p = list[(first + i) % n];
        let c = counts.count(p);
        if c < best.0 {
            best = (c, p);
        }
    }
    best.1
}

/// Per-port route counters packed as `count << 8 | port`, so the minimum key is the port with
/// the fewest routes, ties to the lowest port number.
struct Counters([u32; 256]);

impl Counters {
    fn new() -> Counters {
        let mut k = [0u32; 256];
        for (p, e) in k.iter_mut().enumerate() {
            *e = p as u32;
        }
        Counters(k)
    }
    fn count(&self, p: u8) -> u32 {
        self.0[usize::from(p)] >> 8
    }
    fn bump(&mut self, p: u8) {
        self.0[usize::from(p)] += 256;
    }
    /// Fewest routes, lowest port: the scan from port 1 with "strictly fewer wins" (the
    /// reference the cursor in [`Candidates::least`] is tested against).
    #[cfg(test)]
    fn least(&self, list: &[u8]) -> Option<u8> {
        list.iter()
            .map(|&p| self.0[usize::from(p)])
            .min()
            .map(|k| (k & 0xFF) as u8)
    }
}

impl Ctx<'_> {
    /// Writes into `row` what [`Ctx::route_switch`] would, when every destination of switch
    /// slot `si` keeps its `existing` entry (still a min-hop port of `hm`) or has no path,
    /// and returns true; returns false as soon as one would need balancing (`row` is then
    /// partly written; `route_switch` writes every entry this one does).
    ///
    /// Exact, not a heuristic: a kept entry is chosen before counters, LMC spreading or
    /// scattering are looked at, so when every entry is kept the counters decide nothing
    /// and the table is the existing one. After a link failure most switches' tables are
    /// all kept (OpenSM's `osm_switch_recommend_path` keeps a still-minimal port), so they
    /// skip building their candidate lists and the balancing loop.
    fn keep_row(&self, si: usize, row: &mut [u8], hm: &HopMatrix, existing: &[u8]) -> bool {
        let my = hm.row(si);
        let mut to_of = [u32::MAX; 256];
        for e in hm.neighbors(si) {
            to_of[usize::from(e.port)] = e.to;
        }
        // `p` is in `Candidates::min_hop(hm, si).of(t)`: a usable link whose far switch is
        // one hop closer to `t`.
        let member = |t: usize, p: u8| -> bool {
            let least = my.get(t).copied().unwrap_or(UNREACHABLE);
            if least == UNREACHABLE || least == 0 {
                return false;
            }
            let to = to_of[usize::from(p)];
            to != u32::MAX
                && hm
                    .row(to as usize)
                    .get(t)
                    .is_some_and(|&h| h.wrapping_add(1) == least)
        };
        let empty = |t: usize| -> bool {
            let least = my.get(t).copied().unwrap_or(UNREACHABLE);
            least == UNREACHABLE
                || least == 0
                || !hm.neighbors(si).iter().any(|e| {
                    hm.row(e.to as usize)
                        .get(t)
                        .is_some_and(|&h| h.wrapping_add(1) == least)
                })
        };
        let pick = |t: u32, lid: usize| -> Option<u8> {
            let t = t as usize;
            match existing.get(lid).copied().filter(|&p| p != NO_PATH) {
                Some(p) if member(t, p) => Some(p),
                _ if empty(t) => Some(NO_PATH),
                _ => None,
            }
        };
        for offset in 0..self.max_lids {
            for d in self.dests {
                if offset >= d.nlids {
                    continue;
                }
                let lid = usize::from(d.base) + usize::from(offset);
                if lid >= row.len() {
                    continue;
                }
                let port = match d.kind {
                    DestKind::Switch(t) if t as usize == si => Some(0),
                    DestKind::Switch(t) => pick(t, lid),
                    DestKind::Ca(None) => Some(NO_PATH),
                    DestKind::Ca(Some((t, p))) if t as usize == si => Some(p),
                    DestKind::Ca(Some((t, _))) => pick(t, lid),
                };
                match port {
                    Some(p) => row[lid] = p,
                    None => return false,
                }
            }
        }
        true
    }

    /// Routes switch `sw` into `row`; `existing` is what the switch holds now, whose entries
    /// are kept where still candidates.
    fn route_switch(
        &self,
        sw: NodeId,
        si: usize,
        row: &mut [u8],
        cand: &Candidates,
        existing: Option<&[u8]>,
    ) {
        let num_ports = u32::from(self.subnet.node(sw).num_ports) + 1;
        let mut srng = (self.scatter != 0).then(|| {
            rand_chacha::ChaCha8Rng::seed_from_u64(
                self.scatter
                    ^ self
                        .subnet
                        .node(sw)
                        .guid
                        .0
                        .wrapping_mul(0x9E37_79B9_7F4A_7C15),
            )
        });
        if let (None, false, None, Some(plain)) = (&srng, self.lmc_routing, existing, &self.plain) {
            return self.route_switch_plain(si, row, cand, plain);
        }
        // Remote node per port (for the LMC system/node spreading).
        let remote: Vec<Option<NodeId>> = (0..num_ports)
            .map(|p| {
                self.subnet
                    .port(sw, PortNum(p as u8))
                    .and_then(|x| x.remote)
                    .map(|(rn, _)| rn)
            })
            .collect();
        let ignored = self.ignored.get(&sw);
        let order = self.orders.get(&sw);
        let mut counts = Counters::new();
        let mut cursors = cand.cursors();
        // LMC tracking: per destination, up to max_lids (node, forwarded_to).
        let cap = usize::from(self.max_lids);
        let mut used: Vec<(u32, u32)> = if self.lmc_routing {
            vec![(0, 0); self.dests.len() * cap]
        } else {
            Vec::new()
        };
        let mut used_n: Vec<u8> = if self.lmc_routing {
            vec![0; self.dests.len()]
        } else {
            Vec::new()
        };
        for offset in 0..self.max_lids {
            for (di, d) in self.dests.iter().enumerate() {
                if offset >= d.nlids {
                    continue;
                }
                let lid = usize::from(d.base) + usize::from(offset);
                if lid >= row.len() {
                    continue;
                }
                // The fast path (no LMC spreading) remembers which list/position it chose, so
                // the list's cursor can advance when the route is counted.
                let mut fast: Option<(u32, u32)> = None;
                let kept = existing
                    .and_then(|e| e.get(lid).copied())
                    .filter(|&p| p != NO_PATH);
                let mut pick = |t: u32| -> u8 {
                    let t = t as usize;
                    if cand.of(t).is_empty() {
                        NO_PATH
                    } else if let Some(p) = kept.filter(|p| cand.of(t).contains(p)) {
                        p
                    } else if let (true, Some(r)) = (d.scatter, srng.as_mut()) {
                        cand.scattered(t, &counts, r).unwrap_or(NO_PATH)
                    } else if self.port_shifting && !self.lmc_routing {
                        shifted(cand.of(t), &counts)
                    } else if !self.lmc_routing {
                        match cand.least(t, &counts, &mut cursors) {
                            Some((p, l, pos)) => {
                                fast = Some((l, pos));
                                p
                            }
                            None => NO_PATH,
                        }
                    } else {
                        // start_from: port of the previous LID of this port, plus one.
                        let start = if offset > 0 {
                            (u32::from(row[lid - 1]) + 1) % num_ports
                        } else {
                            1 % num_ports
                        };
                        let entries = &used[di * cap..di * cap + usize::from(used_n[di])];
                        self.recommend_lmc(cand.of(t), start, order, &counts, &remote, entries)
                    }
                };
                let (port, counted) = match d.kind {
                    DestKind::Switch(t) if t as usize == si => (0, false),
                    DestKind::Switch(t) => (pick(t), self.count_switches),
                    DestKind::Ca(None) => (NO_PATH, false),
                    DestKind::Ca(Some((t, p))) if t as usize == si => (p, true),
                    DestKind::Ca(Some((t, _))) => (pick(t), true),
                };
                // OpenSM's is_prof_ignored: a route out of an ignored port is not counted.
                let counted = counted
                    && ignored.is_none_or(|m| m[usize::from(port / 64)] >> (port % 64) & 1 == 0);
                if let (true, Some((l, pos))) = (counted && port != NO_PATH, fast) {
                    cursors[l as usize].1 = pos + 1;
                }
                row[lid] = port;
                if counted && port != NO_PATH {
                    counts.bump(port);
                    if port > 0 && self.lmc_routing {
                        if let Some(rn) = remote.get(usize::from(port)).copied().flatten() {
                            let k = usize::from(used_n[di]);
                            let slot = &mut used[di * cap..di * cap + k];
                            if let Some(e) = slot.iter_mut().find(|e| e.0 == rn.0) {
                                e.1 += 1;
                            } else if k < cap {
                                used[di * cap + k] = (rn.0, 1);
                                used_n[di] += 1;
                            }
                        }
                    }
                }
            }
        }
    }

    /// [`Ctx::route_switch`] without scattering, LMC spreading or existing tables (a cold
    /// bring-up with LMC 0): the same picks in a leaner loop, run by run of destinations
    /// behind one switch ([`PlainDests`]), the run's cursor held in locals. Destinations
    /// behind different switches are often reached through the same ports (from a leaf,
    /// every remote leaf through all its up-ports); [`Candidates::min_hop`] stores such lists
    /// once, so they share a cursor. Of equal lists stored apart (other engines' candidates)
    /// that follow each other, the next adopts the last one's cursor, still valid since a
    /// cursor's invariant speaks only of the list's ports and the counters, instead of
    /// rescanning its own stale one. A one-port list needs no cursor: its port is the pick.
    fn route_switch_plain(&self, si: usize, row: &mut [u8], cand: &Candidates, plain: &PlainDests) {
        // Where no list has more than one port (dor's lowest dimensions without parallel
        // links, min-hop where shortest paths are unique), that port is every pick whatever
        // the counters say: none are kept.
        let single = (0..cand.stored_lists()).all(|i| cand.stored(i).len() <= 1);
        let mut counts = Counters::new();
        let mut cursors = if single { Vec::new() } else { cand.cursors() };
        let mut last: Option<usize> = None;
        for r in &plain.runs {
            let (a, b) = (r.start as usize, r.end as usize);
            let (Some(lids), Some(ports)) = (plain.lids.get(a..b), plain.ports.get(a..b)) else {
                continue;
            };
            let t = r.t as usize;
            if r.t == Run::NONE || t == si {
                // No path; this switch's own LID (port 0); a CA cabled to this switch (its
                // port, counted).
                for (&lid, &p) in lids.iter().zip(ports) {
                    if let Some(entry) = row.get_mut(usize::from(lid)) {
                        *entry = p;
                        if p != NO_PATH && !r.switch && !single {
                            counts.bump(p);
                        }
                    }
                }
                continue;
            }
            if single {
                let p = cand.of(t).first().copied().unwrap_or(NO_PATH);
                for &lid in lids {
                    if let Some(entry) = row.get_mut(usize::from(lid)) {
                        *entry = p;
                    }
                }
                continue;
            }
            let counted = !r.switch || self.count_switches;
            let Some(id) = cand.list_id(t) else {
                for &lid in lids {
                    if let Some(entry) = row.get_mut(usize::from(lid)) {
                        *entry = NO_PATH;
                    }
                }
                continue;
            };
            if let Some(l) = last.filter(|&l| l != id && !cand.lists_distinct()) {
                if cand.stored(l) == cand.stored(id) {
                    if let (Some(&c), true) = (cursors.get(l), id < cursors.len()) {
                        cursors[id] = c;
                    }
                }
            }
            last = Some(id);
            let list = cand.stored(id);
            match (list, cursors.get_mut(id)) {
                ([], _) | (_, None) => {
                    for &lid in lids {
                        if let Some(entry) = row.get_mut(usize::from(lid)) {
                            *entry = NO_PATH;
                        }
                    }
                }
                (&[p], _) => {
                    for &lid in lids {
                        if let Some(entry) = row.get_mut(usize::from(lid)) {
                            *entry = p;
                            if counted {
                                counts.bump(p);
                            }
                        }
                    }
                }
                (_, Some(cur)) => {
                    // `Candidates::least` inlined over the run.
                    let (mut m, mut pos) = (cur.0, cur.1 as usize);
                    for &lid in lids {
                        let Some(entry) = row.get_mut(usize::from(lid)) else {
                            continue;
                        };
                        let at = loop {
                            let from = list.get(pos..).unwrap_or(&[]);
                            if let Some(i) = from.iter().position(|&p| counts.count(p) == m) {
                                break pos + i;
                            }
                            // Every port has more than `m` routes: restart at the minimum.
                            m = list
                                .iter()
                                .map(|&p| counts.count(p))
                                .fold(u32::MAX, u32::min);
                            pos = 0;
                        };
                        let p = list[at];
                        *entry = p;
                        pos = at;
                        if counted {
                            counts.bump(p);
                            pos += 1;
                        }
                    }
                    *cur = (m, pos as u32);
                }
            }
        }
    }

    /// `osm_switch_recommend_path` with LMC-aware spreading (`routing_for_lmc`), scanning the
    /// ascending candidate `list` from `start` (wrapping). `entries` are the (remote node,
    /// forwarded_to) pairs this destination's earlier LIDs used at this switch.
    fn recommend_lmc(
        &self,
        list: &[u8],
        start: u32,
        order: Option<&[u8; 256]>,
        counts: &Counters,
        remote: &[Option<NodeId>],
        entries: &[(u32, u32)],
    ) -> u8 {
        let mut least = u32::MAX;
        let mut best = 0u8;
        let mut found = false;
        let (mut least_sys, mut best_sys) = (u32::MAX, 0u8);
        let (mut least_node, mut best_node) = (u32::MAX, 0u8);
        let mut least_fwd = u32::MAX;
        // OpenSM scans from position `start` of the switch's port order (the port number
        // itself without a search ordering file); `list` is in that order.
        let pos = |p: u8| u32::from(order.map_or(p, |r| r[usize::from(p)]));
        let split = list.partition_point(|&p| pos(p) < start);
        // For port_shifting: each candidate in scan order as OpenSM's `port_paths` keeps it
        // (port, routes, system used, node used, times its node was used). Its
        // `found_node_guid` is one variable across the scan, so a port whose system is
        // unused carries the previous port's node flag; that is kept here.
        let mut paths: Vec<(u8, u32, bool, bool, u32)> = Vec::new();
        let mut node_flag = false;
        for &p in list[split..].iter().chain(&list[..split]) {
            let cc = counts.count(p);
            let mut rg: Option<u32> = None;
            let rem = remote.get(usize::from(p)).copied().flatten();
            let (sys, node) = rem.map_or((None, None), |r| {
                let nd = self.subnet.node(r);
                (Some(nd.sys_guid), Some(nd.guid))
            });
            let sys_hit = entries
                .iter()
                .any(|e| Some(self.subnet.node(NodeId(e.0)).sys_guid) == sys);
            if !sys_hit {
                if cc < least_sys {
                    least_sys = cc;
                    best_sys = p;
                    least_fwd = 0;
                }
            } else {
                let node_hit = entries
                    .iter()
                    .find(|e| Some(self.subnet.node(NodeId(e.0)).guid) == node);
                if node_hit.is_none() && cc < least_node {
                    least_node = cc;
                    best_node = p;
                    least_fwd = 0;
                }
                rg = node_hit.map(|e| e.1);
                node_flag = node_hit.is_some();
            }
            if self.port_shifting {
                paths.push((p, cc, sys_hit, node_flag, rg.unwrap_or(0)));
            }
            if cc < least {
                found = true;
                best = p;
                least = cc;
                if let Some(f) = rg {
                    if f < least_fwd {
                        least_fwd = f;
                    }
                }
            } else if let Some(f) = rg {
                if cc == least && f < least_fwd {
                    least_fwd = f;
                    best = p;
                }
            }
        }
        if !found {
            return NO_PATH;
        }
        if self.port_shifting && !paths.is_empty() {
            // OpenSM's second pass: the same scan from a place that moves with the routes
            // already on the candidates.
            let n = paths.len();
            let total: u64 = paths.iter().map(|x| u64::from(x.1)).sum();
            let first = (total / n as u64) as usize;
            (least, best, least_fwd) = (u32::MAX, 0, u32::MAX);
            (least_sys, best_sys, least_node, best_node) = (u32::MAX, 0, u32::MAX, 0);
            for i in 0..n {
                let (p, cc, sys, node, fwd) = paths[(first + i) % n];
                if !sys && cc < least_sys {
                    (least_sys, best_sys, least_fwd) = (cc, p, 0);
                } else if !node && cc < least_node {
                    (least_node, best_node, least_fwd) = (cc, p, 0);
                }
                if cc < least {
                    (best, least) = (p, cc);
                    if (sys || node) && fwd < least_fwd {
                        least_fwd = fwd;
                    }
                } else if (sys || node) && cc == least && fwd < least_fwd {
                    (least_fwd, best) = (fwd, p);
                }
            }
        }
        if best != 0 {
            if best_sys != 0 {
                return best_sys;
            }
            if best_node != 0 {
                return best_node;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The amortised cursor picks exactly what a full scan picks, whatever other lists do
        /// to the shared counters in between.
        #[test]
        fn cursor_matches_full_scan(
            lists in proptest::collection::vec(
                proptest::collection::btree_set(1u8..20, 1..8), 1..5),
            ops in proptest::collection::vec((0usize..5, any::<bool>()), 1..300),
        ) {
            let lists: Vec<Vec<u8>> = lists.into_iter().map(|s| s.into_iter().collect()).collect();
            let mut start = vec![0u32];
            let mut ports = Vec::new();
            for l in &lists {
                ports.extend_from_slice(l);
                start.push(ports.len() as u32);
            }
            let cand = Candidates::from_csr(start, ports);
            let mut counts = Counters::new();
            let mut cursors = cand.cursors();
            for (t, counted) in ops {
                let t = t % lists.len();
                let want = counts.least(&lists[t]);
                let got = cand.least(t, &counts, &mut cursors);
                prop_assert_eq!(got.map(|g| g.0), want);
                if let (true, Some((p, l, pos))) = (counted, got) {
                    counts.bump(p);
                    cursors[l as usize].1 = pos + 1;
                }
            }
        }

        /// The same when destinations share stored lists (and so cursors), as
        /// `Candidates::min_hop` makes them.
        #[test]
        fn shared_cursor_matches_full_scan(
            lists in proptest::collection::vec(
                proptest::collection::btree_set(1u8..20, 0..8), 1..5),
            dests in proptest::collection::vec(0usize..5, 1..10),
            ops in proptest::collection::vec((0usize..10, any::<bool>()), 1..300),
        ) {
            let lists: Vec<Vec<u8>> = lists.into_iter().map(|s| s.into_iter().collect()).collect();
            let ids: Vec<u32> = dests.iter().map(|&d| (d % lists.len()) as u32).collect();
            let cand = Candidates::shared(ids.clone(), &lists);
            prop_assert_eq!(cand.stored_lists(), lists.len());
            let mut counts = Counters::new();
            let mut cursors = cand.cursors();
            for (t, counted) in ops {
                let t = t % ids.len();
                let want = counts.least(&lists[ids[t] as usize]);
                let got = cand.least(t, &counts, &mut cursors);
                prop_assert_eq!(got.map(|g| g.0), want);
                if let (true, Some((p, l, pos))) = (counted, got) {
                    counts.bump(p);
                    cursors[l as usize].1 = pos + 1;
                }
            }
        }
    }
}

//! Up/Down (`updn`) and Down/Up (`dnup`) routing: shortest paths restricted so that no route
//! ever makes the forbidden turn, which makes the channel dependency graph acyclic (credit-loop
//! free on one VL). Behaviour follows OpenSM's `osm_ucast_updn.c` / `osm_ucast_dnup.c` where
//! that is deadlock-free, and `routing.md` §1.3 / §7.3 where the project decided.
//!
//! # Roots and ranks
//! - `updn`: roots come from [`EngineOptions::root_guid_file`] (one GUID per line, parsed
//!   like OpenSM's `parse_node_map`: `#` comments and blank lines skipped, `strtoull(…, 0)`
//!   numbers, so `0x` = hex, a leading `0` = octal; the number must be followed by whitespace,
//!   `#` or the end of the line). A malformed line rejects the whole file: `ERR AA02` is logged
//!   with the line number and the roots are auto-detected, as OpenSM does when `parse_node_map`
//!   fails. A CA's node or port GUID names the switch the CA is attached to (the documented
//!   behaviour, routing.md C4); a GUID that is no node is logged and ignored. A file that parses
//!   but names no switch gives `disabling UPDN algorithm, no root nodes were found` and the
//!   engine fails (the chain then falls back to minhop).
//! - Without a file, OpenSM's hop histogram: a switch is a root when exactly one hop distance
//!   holds more than 90 % of the CAs and no other distance more than 5 %. Where that finds no
//!   root (tori, meshes, random graphs) we differ from OpenSM, which gives up: in every
//!   connected group of switches the switch of minimum eccentricity (ties: lowest GUID) becomes
//!   the root, and the log says so — updn then works on every connected topology.
//! - `dnup`: rank 0 are the leaf switches (those with a CA attached), as OpenSM's dnup.
//! - Ranks: BFS from the roots over usable switch–switch links.
//! - `updn` with [`EngineOptions::ids_guid_file`] (OpenSM `-m`): switches of one rank are
//!   ordered by the ids the file gives them (`SWITCH-GUID ID` lines) instead of their GUIDs.
//!
//! # Directions
//! Each switch gets the key `(rank, NodeGUID)`; a hop to a smaller key is *up* (toward the
//! roots), to a larger key *down*. Same-rank hops are decided by GUID exactly as OpenSM's
//! `updn_get_dir` (bigger id → smaller id is up). OpenSM makes a root→root hop *up in both
//! directions*, which can close a dependency cycle between interconnected roots; we order roots
//! by GUID like any other same-rank pair, so the up relation is a strict order and no cycle is
//! possible. `updn` forbids down→up, `dnup` forbids up→down (with leaves as rank 0, i.e. routes
//! climb away from the leaves first and come back toward them).
//!
//! # connect_roots
//! With [`EngineOptions::connect_roots`] (`-z`) updn routes the LIDs of its root switches, and
//! of the CAs on them, by plain min-hop, as OpenSM keeps the min-hop hop counts of root LIDs
//! (`updn_clear_non_root_hops`): roots then reach each other where up/down gives them no route
//! (two spines are joined only down and up again), at the price of possible credit loops for
//! that traffic, which OpenSM's help warns of. dnup routes by min-hop every LID a switch has
//! no down/up route to (the top switches of a fat tree, which reach each other only toward
//! the leaves and away again). OpenSM's dnup reruns its search with each forbidden turn
//! weighted one more than the longest legal path, so it takes the fewest forbidden turns, then
//! the fewest hops; on fat trees those are the min-hop ports, and the tables equal OpenSM's
//! (`sa_diff::dnup_connect_roots_matches_opensm_on_ibsim`, two- and three-level).
//!
//! Without connect_roots, OpenSM's dnup reaches more pairs than ours on irregular fabrics: its
//! search keeps one direction per switch, the one it was first queued with, so it lets some
//! forbidden turns through. On random:24,40,20,1,ports=12 it routes all 10,816 end-port pairs
//! against our 6,934, and `ibsm verify` finds a credit loop of 14 links in its tables. Ours
//! leave those pairs unrouted (the verdict says so), and `-z` routes them by min-hop, which
//! OpenSM's help warns may close credit loops.
//!
//! # Tables
//! A linear forwarding table has one entry per (switch, destination), whatever the direction
//! a packet arrived from, so per destination switch `t` the routes form one tree and must be
//! legal from every switch at once. For each `t`:
//! 1. switches that can reach `t` with second-phase hops only (down for updn) — found by a
//!    reverse BFS from `t` — route that way, on their shortest such paths;
//! 2. every other switch must start with a first-phase hop (up for updn): its distance is one
//!    more than the smallest distance among its first-phase neighbours, computed in key order
//!    (first-phase hops strictly decrease the key, so the order is a topological one).
//!
//! Every route is therefore first-phase hops followed by second-phase hops, and a pair gets a
//! route exactly when a legal up*down* path exists between the switches (unreachable pairs stay
//! [`super::NO_PATH`], OpenSM's default; routing.md C1). A switch of step 1 keeps its
//! second-phase route even where going up first would be shorter, because packets that reach
//! it on a down hop may not turn up; on fat trees both are equal and routes are min-hop. Among
//! the candidate next hops, the port is chosen by minhop's balancing (the same per-port
//! counters, destination order and LMC spreading; `scatter_ports` and `port_shifting` honoured).

use ibmad::{Guid, PortNum};

use super::graph::{link_usable, Candidates, SwitchGraph, UNREACHABLE};
use super::minhop::{balance, scatter_seed};
use super::{EngineOptions, RouteError, Routes, RoutingEngine};
use crate::subnet::{NodeId, Subnet};

/// Which turn is forbidden.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `updn`: no down→up turn; roots from the file or auto-detected.
    UpDown,
    /// `dnup`: no up→down turn; leaf switches are rank 0.
    DownUp,
}

/// A malformed line of a GUID list file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct GuidFileError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong, quoting the text.
    pub what: String,
}

/// Parses a GUID list (root_guid_file, cn_guid_file, …) as OpenSM's `parse_node_map` does:
/// leading whitespace skipped, blank lines and `#` lines skipped, one `strtoull(…, 0)` number
/// per line followed by whitespace, `#` or the end of the line. Returns `(line, GUID)` pairs.
pub fn parse_guid_file(text: &str) -> Result<Vec<(usize, Guid)>, GuidFileError> {
    match parse_node_map_upto(text) {
        (lines, None) => Ok(lines.into_iter().map(|(line, g, _)| (line, g)).collect()),
        (_, Some(e)) => Err(e),
    }
}

/// A GUID list as OpenSM's `parse_node_map` runs it, keeping what follows each GUID
/// (leading whitespace skipped: a port for `port_prof_ignore_file`, a port and a weight for
/// `hop_weights_file`, …): the lines before a bad one are taken (its callback has run for
/// them) and the bad one ends the file, with its error.
pub fn parse_node_map_upto(text: &str) -> (Vec<(usize, Guid, &str)>, Option<GuidFileError>) {
    let mut out = Vec::new();
    match node_map_lines(text, &mut out) {
        Ok(()) => (out, None),
        Err(e) => (out, Some(e)),
    }
}

/// An option's node-map file as OpenSM's `parse_node_map` reads it: its lines up to the first
/// that is no GUID ([`parse_node_map_upto`]), and, when it cannot be read or has such a line,
/// the error line OpenSM logs, `PREFIX 'PATH': why`.
pub(crate) fn node_map_file<'a>(
    f: &'a super::OptionFile,
    prefix: &str,
) -> (Vec<(usize, Guid, &'a str)>, Option<String>) {
    let fail = |why: &dyn std::fmt::Display| format!("{prefix} '{}': {why}", f.path);
    match &f.contents {
        Ok(text) => {
            let (lines, err) = parse_node_map_upto(text);
            (lines, err.map(|e| fail(&e)))
        }
        Err(e) => (Vec::new(), Some(fail(e))),
    }
}

/// The switch a node-map line names by its NodeGUID, if any.
pub(crate) fn switch_by_guid(subnet: &Subnet, g: Guid) -> Option<NodeId> {
    subnet
        .node_by_guid(g)
        .filter(|&n| subnet.node(n).is_switch())
}

/// C's `strtoul(s, &end, 0)`, as OpenSM reads the numbers after a node-map GUID: leading
/// whitespace and a `+` skipped, `0x` hex, a leading `0` octal, else decimal; the value
/// (saturated) and the text after it, or `None` without digits.
pub(crate) fn strtoul(s: &str) -> Option<(u64, &str)> {
    let s = s.trim_start();
    let s = s.strip_prefix('+').unwrap_or(s);
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) if h.starts_with(|c: char| c.is_ascii_hexdigit()) => (h, 16),
        _ if s.starts_with('0') => (s, 8),
        _ => (s, 10),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    let v = u64::from_str_radix(&digits[..end], radix).unwrap_or(u64::MAX);
    Some((v, &digits[end..]))
}

fn node_map_lines<'a>(
    text: &'a str,
    out: &mut Vec<(usize, Guid, &'a str)>,
) -> Result<(), GuidFileError> {
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let s = raw.trim_start();
        if s.is_empty() || s.starts_with('#') {
            continue;
        }
        let bad = |what: &str| GuidFileError {
            line,
            what: format!("{what}: '{}'", raw.trim_end()),
        };
        let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
            (h, 16)
        } else if s.starts_with('0') && s.len() > 1 {
            (&s[1..], 8)
        } else {
            (s, 10)
        };
        let end = digits
            .find(|c: char| !c.is_digit(radix))
            .unwrap_or(digits.len());
        let (num, rest) = digits.split_at(end);
        if num.is_empty() && radix != 8 {
            return Err(bad("not a number"));
        }
        if let Some(c) = rest.chars().next() {
            if !c.is_whitespace() && c != '#' {
                return Err(bad(if radix == 8 {
                    "not a valid number (a leading 0 means octal; write hex as 0x…)"
                } else {
                    "trailing characters after the GUID"
                }));
            }
        }
        let v = if num.is_empty() {
            0
        } else {
            u64::from_str_radix(num, radix).map_err(|_| bad("number out of range"))?
        };
        out.push((line, Guid(v), rest.trim()));
    }
    Ok(())
}

/// The updn/dnup engine.
#[derive(Clone, Debug)]
pub struct UpDn {
    opts: EngineOptions,
    mode: Mode,
}

/// Rank of a switch no root reaches.
pub const UNRANKED: u32 = u32::MAX;

/// Roots and ranks as the engine computed them (for tests and diagnostics).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranking {
    /// Root switches.
    pub roots: Vec<NodeId>,
    /// Rank per node index ([`UNRANKED`] for CAs and unreached switches).
    pub rank: Vec<u32>,
}

impl UpDn {
    /// With options.
    #[must_use]
    pub fn new(opts: EngineOptions, mode: Mode) -> UpDn {
        UpDn { opts, mode }
    }

    fn fname(&self) -> &'static str {
        match self.mode {
            Mode::UpDown => "updn_lid_matrices",
            Mode::DownUp => "dnup_lid_matrices",
        }
    }

    /// Chooses roots and ranks switches, logging as OpenSM; `None` if there is no root.
    pub fn rank(
        &self,
        subnet: &Subnet,
        hm: &SwitchGraph,
        log: &mut Vec<String>,
    ) -> Option<Ranking> {
        let f = self.fname();
        let roots: Vec<usize> = match self.mode {
            Mode::DownUp => {
                let leaves: Vec<usize> = (0..hm.switch_count())
                    .filter(|&i| {
                        hm.switch_at(i)
                            .is_some_and(|s| !attached_cas(subnet, s).is_empty())
                    })
                    .collect();
                if leaves.is_empty() {
                    log.push(format!(
                        "{f}: ERR AE0D: No leaf switches found, DnUp routing failed"
                    ));
                    return None;
                }
                leaves
            }
            Mode::UpDown => match &self.opts.root_guid_file {
                Some(file) => match file_roots(subnet, hm, file, log) {
                    Some(r) if r.is_empty() => {
                        log.push(format!(
                            "{f}: disabling UPDN algorithm, no root nodes were found"
                        ));
                        return None;
                    }
                    Some(r) => r,
                    None => auto_roots(subnet, hm, log),
                },
                None => auto_roots(subnet, hm, log),
            },
        };
        if roots.is_empty() {
            log.push(format!(
                "{f}: disabling UPDN algorithm, no root nodes were found"
            ));
            return None;
        }
        let rank_idx = bfs_ranks(hm, &roots);
        let max = rank_idx
            .iter()
            .filter(|&&r| r != UNRANKED)
            .max()
            .copied()
            .unwrap_or(0);
        log.push(format!(
            "{}: Subnet ranking completed. Max Node Rank = {max}",
            match self.mode {
                Mode::UpDown => "updn_subn_rank",
                Mode::DownUp => "dnup_subn_rank",
            }
        ));
        let unranked = rank_idx.iter().filter(|&&r| r == UNRANKED).count();
        if unranked > 0 {
            log.push(format!(
                "{f}: {unranked} switches are not connected to any root and get no routes"
            ));
        }
        let mut rank = vec![UNRANKED; subnet.nodes.len()];
        for (i, &r) in rank_idx.iter().enumerate() {
            if let Some(s) = hm.switch_at(i) {
                rank[s.idx()] = r;
            }
        }
        Some(Ranking {
            roots: roots.iter().filter_map(|&i| hm.switch_at(i)).collect(),
            rank,
        })
    }

    /// Routes with logging (see the module docs).
    pub fn route_inner(
        &self,
        subnet: &Subnet,
        rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        let hm = SwitchGraph::build(subnet);
        let Some(ranking) = self.rank(subnet, &hm, log) else {
            return Err(RouteError::Unroutable {
                engine: self.name(),
                reason: match self.mode {
                    Mode::UpDown => "no root nodes were found",
                    Mode::DownUp => "no leaf switches found",
                }
                .to_string(),
            });
        };
        let n = hm.switch_count();
        // updn: a switch's id (its GUID, or its `ids_guid_file` id) orders switches of one
        // rank, as OpenSM's updn_get_dir compares them.
        let ids = match self.mode {
            Mode::UpDown => {
                let (ids, err) = node_ids(subnet, &self.opts);
                log.extend(err);
                ids
            }
            Mode::DownUp => std::collections::HashMap::new(),
        };
        let key: Vec<(u32, u64)> = (0..n)
            .map(|i| {
                hm.switch_at(i).map_or((UNRANKED, 0), |s| {
                    let id = ids.get(&s).copied().unwrap_or(subnet.node(s).guid.0);
                    (ranking.rank[s.idx()], id)
                })
            })
            .collect();
        // first(a→b): the hop of the first phase (up for updn, down for dnup).
        let up_first = self.mode == Mode::UpDown;
        let first = |a: usize, b: usize| (key[b] < key[a]) == up_first;
        // Processing order for phase 2: first-phase hops go to earlier switches.
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&i| key[i as usize]);
        if !up_first {
            order.reverse();
        }
        let ranked: Vec<bool> = key.iter().map(|k| k.0 != UNRANKED).collect();
        let dist = UpDnDist::build(&hm, &ranked, &order, &first);
        let scatter = scatter_seed(&self.opts, rng);
        super::minhop::log_option_files(&self.opts, log);
        // connect_roots: the roots' LIDs by plain min-hop (OpenSM keeps the min-hop hop
        // counts of root LIDs and clears the rest before the up/down BFS).
        let roots_min_hop = match self.mode {
            Mode::UpDown if self.opts.connect_roots => {
                log.push(format!(
                    "updn_set_min_hop_table: connect_roots: routes to the {} root switches by min-hop",
                    ranking.roots.len()
                ));
                Some(super::graph::HopMatrix::from_graph(hm.clone()))
            }
            Mode::DownUp if self.opts.connect_roots => {
                log.push(
                    "dnup_set_min_hop_table: connect_roots: switches with no down/up route to a LID route it by min-hop"
                        .to_string(),
                );
                Some(super::graph::HopMatrix::from_graph(hm.clone()))
            }
            _ => None,
        };
        let is_root: Vec<bool> = key.iter().map(|k| k.0 == 0).collect();
        let cands = |si: usize| {
            let c = dist.candidates(&hm, si, &first);
            let Some(m) = &roots_min_hop else {
                return c;
            };
            let mh = super::graph::Candidates::min_hop(m, si);
            let (mut start, mut ports) = (Vec::with_capacity(n + 1), Vec::new());
            for (t, &root) in is_root.iter().enumerate() {
                start.push(ports.len() as u32);
                // updn: the roots' LIDs by min-hop; dnup: every LID without a legal route.
                let by_min_hop = match self.mode {
                    Mode::UpDown => root,
                    Mode::DownUp => c.of(t).is_empty() && t != si,
                };
                ports.extend_from_slice(if by_min_hop { mh.of(t) } else { c.of(t) });
            }
            start.push(ports.len() as u32);
            super::graph::Candidates::from_csr(start, ports)
        };
        Ok(Routes::new(balance(
            subnet, &hm, &self.opts, scatter, &cands,
        )))
    }
}

impl RoutingEngine for UpDn {
    fn name(&self) -> &'static str {
        match self.mode {
            Mode::UpDown => "updn",
            Mode::DownUp => "dnup",
        }
    }

    fn route_logged(
        &self,
        subnet: &Subnet,
        rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        self.route_inner(subnet, rng, log)
    }
}

/// The ids of [`EngineOptions::ids_guid_file`] (OpenSM `update_id`): switch → id. A line
/// naming no switch is skipped; an id that is not a number (`strtoull(…, 0)`; nothing at all
/// reads as 0) ends the file, the lines before it kept, with OpenSM's ERR AA05 and AA03.
pub(crate) fn node_ids(
    subnet: &Subnet,
    opts: &EngineOptions,
) -> (std::collections::HashMap<NodeId, u64>, Option<String>) {
    let mut out = std::collections::HashMap::new();
    let Some(f) = &opts.ids_guid_file else {
        return (out, None);
    };
    const PREFIX: &str = "updn_lid_matrices: ERR AA03: cannot parse node ids file";
    let (lines, err) = node_map_file(f, PREFIX);
    for (line, g, rest) in lines {
        let Some(sw) = switch_by_guid(subnet, g) else {
            continue;
        };
        // strtoull(…, 0): nothing at all reads as 0; the number must end the word.
        let id = match strtoul(rest) {
            None if rest.is_empty() => Some(0),
            Some((v, after)) if after.chars().next().is_none_or(char::is_whitespace) => Some(v),
            _ => None,
        };
        let Some(id) = id else {
            return (
                out,
                Some(format!(
                    "{PREFIX} '{}': line {line}: ERR AA05: cannot parse node id '{rest}'",
                    f.path
                )),
            );
        };
        out.insert(sw, id);
    }
    (out, err)
}

/// CA ports attached to switch `s` by usable links.
fn attached_cas(subnet: &Subnet, s: NodeId) -> Vec<(NodeId, PortNum)> {
    (1..=subnet.node(s).num_ports)
        .filter_map(|p| {
            let (rn, rp) = subnet.port(s, PortNum(p))?.remote?;
            (!subnet.node(rn).is_switch() && link_usable(subnet, s, PortNum(p))).then_some((rn, rp))
        })
        .collect()
}

/// Roots named by the file; `None` if the file is rejected (then auto-detect).
fn file_roots(
    subnet: &Subnet,
    hm: &SwitchGraph,
    file: &super::OptionFile,
    log: &mut Vec<String>,
) -> Option<Vec<usize>> {
    let text = match &file.contents {
        Ok(t) => t,
        Err(e) => {
            log.push(format!(
                "updn_lid_matrices: ERR AA02: cannot parse root guids file '{}': {e}",
                file.path
            ));
            return None;
        }
    };
    let guids = match parse_guid_file(text) {
        Ok(g) => g,
        Err(e) => {
            log.push(format!(
                "updn_lid_matrices: ERR AA02: cannot parse root guids file '{}': {e}",
                file.path
            ));
            return None;
        }
    };
    let mut roots = Vec::new();
    for (line, g) in guids {
        let node = subnet.node_by_guid(g).or_else(|| {
            // A CA port GUID.
            subnet.node_ids().find(|&n| {
                !subnet.node(n).is_switch()
                    && (1..=subnet.node(n).num_ports)
                        .any(|p| subnet.port(n, PortNum(p)).is_some_and(|x| x.guid == g))
            })
        });
        let sw = match node {
            Some(n) if subnet.node(n).is_switch() => Some(n),
            Some(n) => {
                let attached = (1..=subnet.node(n).num_ports).find_map(|p| {
                    let (rn, _) = subnet.port(n, PortNum(p))?.remote?;
                    subnet.node(rn).is_switch().then_some(rn)
                });
                if let Some(s) = attached {
                    log.push(format!(
                        "rank_root_node: line {line}: 0x{:016x} is a CA; using its switch 0x{:016x} as root",
                        g.0,
                        subnet.node(s).guid.0
                    ));
                }
                attached
            }
            None => None,
        };
        match sw.and_then(|s| hm.index_of(s)) {
            Some(i) => {
                if !roots.contains(&i) {
                    roots.push(i);
                }
            }
            None => log.push(format!(
                "rank_root_node: switch with guid 0x{:016x} is not found",
                g.0
            )),
        }
    }
    Some(roots)
}

/// OpenSM's hop-histogram root detection, then the minimum-eccentricity fallback.
fn auto_roots(subnet: &Subnet, hm: &SwitchGraph, log: &mut Vec<String>) -> Vec<usize> {
    let n = hm.switch_count();
    let cas_per_sw: Vec<u32> = (0..n)
        .map(|i| {
            hm.switch_at(i)
                .map_or(0, |s| attached_cas(subnet, s).len() as u32)
        })
        .collect();
    let cas: u64 = cas_per_sw.iter().map(|&c| u64::from(c)).sum();
    let thd1 = cas as f64 * 0.9;
    let thd2 = cas as f64 * 0.05;
    // Hop histogram per switch (CAs by distance, distances < 64 as OpenSM's
    // IB_SUBNET_PATH_HOPS_MAX), accumulated by one BFS from every switch with CAs.
    const H: usize = 64;
    let leaves: Vec<usize> = (0..n).filter(|&i| cas_per_sw[i] > 0).collect();
    let add_leaf = |hist: &mut Vec<u32>, buf: &mut (Vec<u8>, Vec<u32>), l: usize| {
        let (dist, q) = buf;
        hm.bfs([l], dist, q);
        for &j in q.iter() {
            let d = usize::from(dist[j as usize]);
            if d < H {
                hist[j as usize * H + d] += cas_per_sw[l];
            }
        }
    };
    let init = || (vec![0xFFu8; n], Vec::new());
    #[cfg(feature = "parallel")]
    let hist: Vec<u32> = {
        use rayon::prelude::*;
        let chunk = leaves.len().div_ceil(rayon::current_num_threads()).max(1);
        leaves
            .par_chunks(chunk)
            .map(|ls| {
                let mut h = vec![0u32; n * H];
                let mut b = init();
                for &l in ls {
                    add_leaf(&mut h, &mut b, l);
                }
                h
            })
            .reduce(
                || vec![0u32; n * H],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            )
    };
    #[cfg(not(feature = "parallel"))]
    let hist: Vec<u32> = {
        let mut h = vec![0u32; n * H];
        let mut b = init();
        for &l in &leaves {
            add_leaf(&mut h, &mut b, l);
        }
        h
    };
    let roots: Vec<usize> = (0..n)
        .filter(|&i| {
            let row = &hist[i * H..(i + 1) * H];
            let over1 = row.iter().filter(|&&h| f64::from(h) > thd1).count();
            let over2 = row.iter().filter(|&&h| f64::from(h) > thd2).count();
            over1 == 1 && over2 == 1
        })
        .collect();
    if !roots.is_empty() {
        log.push(format!(
            "updn_find_root_nodes_by_min_hop: {} root nodes found by the hop histogram",
            roots.len()
        ));
        return roots;
    }
    let ecc: Vec<u8> = {
        let mut b = init();
        (0..n)
            .map(|i| {
                hm.bfs([i], &mut b.0, &mut b.1);
                b.0.iter()
                    .filter(|&&d| d != UNREACHABLE)
                    .max()
                    .copied()
                    .unwrap_or(0)
            })
            .collect()
    };
    // Fallback: one minimum-eccentricity switch per connected group of switches.
    let mut comp = vec![u32::MAX; n];
    let (mut dist, mut q) = init();
    let mut out = Vec::new();
    for s in 0..n {
        if comp[s] != u32::MAX {
            continue;
        }
        hm.bfs([s], &mut dist, &mut q);
        let members: Vec<usize> = (0..n).filter(|&j| dist[j] != UNREACHABLE).collect();
        for &m in &members {
            comp[m] = s as u32;
        }
        let guid = |i: usize| hm.switch_at(i).map_or(0, |x| subnet.node(x).guid.0);
        if let Some(&best) = members.iter().min_by_key(|&&m| (ecc[m], guid(m))) {
            log.push(format!(
                "updn_find_root_nodes_by_min_hop: the hop histogram found no root node (not a tree-like fabric); using switch 0x{:016x} of minimum eccentricity {} as root of its {} switches",
                guid(best),
                ecc[best],
                members.len()
            ));
            out.push(best);
        }
    }
    out
}

/// Multi-source BFS ranks by switch index ([`UNRANKED`] where no root reaches).
fn bfs_ranks(hm: &SwitchGraph, roots: &[usize]) -> Vec<u32> {
    let (mut dist, mut q) = (vec![UNREACHABLE; hm.switch_count()], Vec::new());
    hm.bfs(roots.iter().copied(), &mut dist, &mut q);
    dist.iter()
        .map(|&d| {
            if d == UNREACHABLE {
                UNRANKED
            } else {
                u32::from(d)
            }
        })
        .collect()
}

/// Per (source switch, destination switch): legal hop count (low 7 bits, 0x7F = none) and
/// bit 7 set when the source routes with second-phase hops only. Source-major.
struct UpDnDist {
    n: usize,
    d: Vec<u8>,
}

const NONE: u8 = 0x7F;
const SECOND: u8 = 0x80;

impl UpDnDist {
    fn build(
        hm: &SwitchGraph,
        ranked: &[bool],
        order: &[u32],
        first: &(dyn Fn(usize, usize) -> bool + Sync),
    ) -> UpDnDist {
        let n = hm.switch_count();
        // First-phase neighbours per switch (CSR). A hop s→v is second-phase exactly when
        // v→s is first-phase (keys are distinct), so the reverse BFS over second-phase hops
        // into v walks v's first-phase neighbours.
        let mut fstart = Vec::with_capacity(n + 1);
        let mut fadj: Vec<u32> = Vec::new();
        for a in 0..n {
            fstart.push(fadj.len() as u32);
            for e in hm.neighbors(a) {
                if ranked[a] && ranked[e.to as usize] && first(a, e.to as usize) {
                    fadj.push(e.to);
                }
            }
        }
        fstart.push(fadj.len() as u32);
        let fnb = |a: usize| &fadj[fstart[a] as usize..fstart[a + 1] as usize];
        // Destination-major rows, one per destination switch.
        let mut by_dst = vec![NONE; n * n];
        let per_dst = |t: usize, row: &mut [u8], q: &mut Vec<u32>| {
            if !ranked[t] {
                return;
            }
            // Phase 1: reverse BFS over second-phase hops s→v (v = current).
            q.clear();
            row[t] = SECOND;
            q.push(t as u32);
            let mut head = 0;
            while head < q.len() {
                let v = q[head] as usize;
                head += 1;
                let dv = row[v] & NONE;
                if dv >= NONE - 1 {
                    continue;
                }
                for &s in fnb(v) {
                    let s = s as usize;
                    if row[s] == NONE {
                        row[s] = SECOND | (dv + 1);
                        q.push(s as u32);
                    }
                }
            }
            // Phase 2: the rest start with a first-phase hop, in topological order.
            for &s in order {
                let s = s as usize;
                if row[s] != NONE || !ranked[s] {
                    continue;
                }
                let best = fnb(s)
                    .iter()
                    .map(|&v| row[v as usize] & NONE)
                    .min()
                    .unwrap_or(NONE);
                if best < NONE - 1 {
                    row[s] = best + 1;
                }
            }
        };
        if n > 0 {
            #[cfg(feature = "parallel")]
            {
                use rayon::prelude::*;
                by_dst
                    .par_chunks_mut(n)
                    .enumerate()
                    .for_each_init(Vec::new, |q, (t, row)| per_dst(t, row, q));
            }
            #[cfg(not(feature = "parallel"))]
            {
                let mut q = Vec::new();
                for (t, row) in by_dst.chunks_mut(n).enumerate() {
                    per_dst(t, row, &mut q);
                }
            }
        }
        // Transpose to source-major in cache-sized tiles.
        let mut d = vec![NONE; n * n];
        const B: usize = 64;
        for tb in (0..n).step_by(B) {
            for sb in (0..n).step_by(B) {
                for t in tb..(tb + B).min(n) {
                    for s in sb..(sb + B).min(n) {
                        d[s * n + t] = by_dst[t * n + s];
                    }
                }
            }
        }
        UpDnDist { n, d }
    }

    fn row(&self, s: usize) -> &[u8] {
        self.d.get(s * self.n..(s + 1) * self.n).unwrap_or(&[])
    }

    /// Legal next-hop ports of switch `si` per destination switch.
    fn candidates(
        &self,
        hm: &SwitchGraph,
        si: usize,
        first: &(dyn Fn(usize, usize) -> bool + Sync),
    ) -> Candidates {
        let my = self.row(si);
        let nb: Vec<(u8, bool, &[u8])> = hm
            .neighbors(si)
            .iter()
            .map(|e| (e.port, first(si, e.to as usize), self.row(e.to as usize)))
            .collect();
        let mut start = Vec::with_capacity(self.n + 1);
        let mut ports = Vec::with_capacity(self.n * 2);
        for (t, &e) in my.iter().enumerate() {
            start.push(ports.len() as u32);
            let h = e & NONE;
            if h == NONE || h == 0 {
                continue;
            }
            let second_only = e & SECOND != 0;
            for &(p, is_first, row) in &nb {
                let r = row[t];
                let ok = if second_only {
                    !is_first && r & SECOND != 0 && r & NONE == h - 1
                } else {
                    is_first && r & NONE == h - 1
                };
                if ok {
                    ports.push(p);
                }
            }
        }
        start.push(ports.len() as u32);
        Candidates::from_csr(start, ports)
    }
}

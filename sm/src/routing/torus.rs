//! torus-2QoS (OpenSM `torus-2QoS`, `osm_torus.c`, torus-2QoS(8), torus-2QoS.conf(5)):
//! dimension-order routing on 2D/3D tori and meshes, free of credit loops through datelines,
//! with two QoS levels, that routes around failed links and a failed switch without changing
//! any path's SL.
//!
//! # Configuration ([`TorusConfig`], torus-2QoS.conf)
//! `torus X Y Z` or `mesh X Y Z` (a radix may carry `m`/`t` to make that dimension a mesh or a
//! torus; a radix of 1 makes a 2D fabric), seed links `xp_link`/`xm_link`/`yp_link`/… `GUID0
//! GUID1` (from a common switch, GUID0, to its neighbour in that direction), `x_dateline` /
//! `y_dateline` / `z_dateline` offsets, `next_seed` (further seeds, used when a switch of an
//! earlier one is missing), `portgroup_max_ports`, `port_order`, `max_changes`. Blank lines
//! and `#` lines are ignored, so are tokens after a keyword's values. A radix-4 torus
//! dimension needs both seed directions, as in OpenSM. Errors name the line.
//!
//! # Topology discovery
//! The common switch of the first seed whose switches all exist sits at coordinate −dateline;
//! its seed neighbours one step away, whether or not their seed links are up (as OpenSM).
//! Positions then spread by completing squares (the unique common neighbour of two
//! perpendicular neighbours of a placed switch, other than that switch, is their diagonal)
//! and, where squares cannot reach, by extending lines (past a live link, the next switch
//! along a ring is the neighbour that shares no other neighbour with the previous one; on a
//! radix-3 ring, the third corner of the triangle; on a radix-4 ring, the fourth corner of the
//! square across the ring). A placement is taken only when it is unique and every placed
//! neighbour of the switch is one step away from the new position. This is a different method
//! from OpenSM's cube-by-cube case analysis; it needs the same seeds. A switch that cannot be
//! placed makes the engine fail; a link between placed switches that are not neighbours in
//! the torus is not used.
//!
//! # Routing
//! As OpenSM's `torus_lft`/`lft_port`: X first, then Y, then Z, each along the shorter way
//! round its ring (ties: the way that does not wrap), going the long way round a ring that a
//! failed link breaks. When the switch where a path would turn is missing, the path makes as
//! much progress as it can and turns early (an "illegal" turn). The LIDs behind a destination
//! switch are spread round-robin over parallel links, CA and switch LIDs counted apart, CA
//! ports in `port_order`. A fabric is refused (OpenSM's messages) when a 1D ring is broken
//! into disjoint pieces, when missing switches are not adjacent in one Z column, when QoS is
//! off (`-Q` is required), or when switch ports have fewer than 2 data VLs; this engine also
//! refuses a missing switch with fewer than 4 data VLs, where OpenSM only warns, since the
//! illegal turns then have no VL of their own.
//!
//! # SLs and VLs
//! The path SL has bit *d* set when the path between the two switches' coordinates wraps in
//! dimension *d* (the shorter way round crosses the dateline, between coordinate radix−1 and
//! 0) — from coordinates alone, so failures never change it. SL bit 3 is the QoS level, which
//! the engine leaves at 0: SL | 8 is the same path on the other QoS level, and the SA keeps
//! bit 3 of the SL it would give the path otherwise (a requested SL, a QoS level's), as
//! OpenSM's `torus_path_sl` does. On an inter-switch
//! output port pointing along dimension *d*, VL bit 0 = SL bit *d* (2 data VLs), VL bit 1 is
//! set for a turn from a higher to a lower dimension, illegal under XYZ order (4 VLs), VL bit
//! 2 is the QoS level (8 VLs); toward end ports VL = QoS level (2 VLs). The engine writes
//! every switch's SL-to-VL per (input, output) port pair and every CA's. On a switch port
//! facing an end port the configured (`qos_swe_*`) VL arbitration is folded onto VLs 0 and 1
//! as OpenSM does ([`VlArbFold::TorusEndport`]: VL 0 entries kept, VL 4 entries become VL 1,
//! the rest dropped); every other port gets its configured VL arbitration.
//!
//! # Multicast
//! As OpenSM's `torus_master_stree`, the engine gives one master spanning tree, and every
//! multicast group is routed on the part of it that reaches the group's member switches
//! ([`crate::mcast::MasterTree`]). The root is the middle of the whole x-y plane nearest the
//! middle in z (`find_stree_root`). The tree grows along x from the root, then along y from
//! each switch of that x line, then along z from each switch of that plane. Each branch grows
//! both ways from its switch up to the ring's dateline without crossing it; only when a
//! missing switch or link stops one side may both sides go on round the ring. Multicast
//! packets keep their SL, so a branch across a dateline would put them on the VL that
//! unicast uses on the rest of the ring and close a credit loop; `sm/tests/torus_mcast.rs`
//! finds such loops with a group's own min-hop tree on most tori and none on the master tree.
//! A switch the tree does not reach makes the engine fail (OpenSM's ERR 4E43).

// Loop indices here are node, switch or channel ids that index several parallel arrays at
// once (CSR offsets, ranks, parents); an iterator over one of them would hide that.
#![allow(clippy::needless_range_loop)]

use std::collections::HashMap;

use ibmad::attr::SlToVl;
use ibmad::{Guid, Lid, NodeType, PortNum};

use super::graph::{link_usable, SwitchGraph};
use super::vl::{sl2vl_from, PathSls, Sl2VlTables, VlArbFold, VlArbTables, NUM_SLS};
use super::{max_lid, EngineOptions, Lfts, RouteError, Routes, RoutingEngine, NO_PATH};
use crate::subnet::Subnet;

const NONE: u32 = u32::MAX;
/// "No dimension": an end port (CA, switch port 0) or an unplaced link.
const NO_DIM: usize = 3;
const ENDPORT: usize = 6;

/// A torus-2QoS.conf parse error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct ConfError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// One seed: links from a common switch, and its dateline offsets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seed {
    /// `[xm, xp, ym, yp, zm, zp]` links (from, to) node GUIDs.
    pub links: [Option<(Guid, Guid)>; 6],
    /// `x_dateline`, `y_dateline`, `z_dateline`.
    pub dateline: [i32; 3],
}

/// torus-2QoS.conf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorusConfig {
    /// Radix per dimension (1 = absent).
    pub size: [usize; 3],
    /// Mesh (not wrapped) per dimension.
    pub mesh: [bool; 3],
    /// Seeds in order.
    pub seeds: Vec<Seed>,
    /// `portgroup_max_ports` (default 16).
    pub portgroup_max_ports: usize,
    /// `port_order` as given (the remaining ports follow in increasing order).
    pub port_order: Vec<u8>,
    /// `max_changes` (default 32).
    pub max_changes: usize,
}

fn parse_num(tok: &str) -> Option<i64> {
    let (neg, t) = match tok.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, tok.strip_prefix('+').unwrap_or(tok)),
    };
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

fn parse_guid(tok: Option<&str>) -> Option<Guid> {
    let t = tok?;
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(Guid(v))
}

impl TorusConfig {
    /// Parses torus-2QoS.conf text (see the module docs).
    pub fn parse(text: &str) -> Result<TorusConfig, ConfError> {
        let mut size: Option<[usize; 3]> = None;
        let mut mesh = [false; 3];
        let mut seeds: Vec<Seed> = Vec::new();
        let mut pg = 16usize;
        let mut order: Vec<u8> = Vec::new();
        let mut max_changes = 32usize;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |what: String| ConfError { line, what };
            let mut toks = raw.split_whitespace();
            let Some(kw) = toks.next() else { continue };
            if kw.starts_with('#') {
                continue;
            }
            match kw {
                "torus" | "mesh" => {
                    if size.is_some() {
                        continue; // "There can be only one."
                    }
                    let all_mesh = kw == "mesh";
                    let mut sz = [1usize; 3];
                    for d in 0..3 {
                        let t = toks
                            .next()
                            .ok_or_else(|| err(format!("{kw}: expected three radices (x y z)")))?;
                        let (num, suf) =
                            t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
                        let v: usize = num
                            .parse()
                            .ok()
                            .filter(|&v| (1..=256).contains(&v))
                            .ok_or_else(|| err(format!("{kw}: bad radix {t:?}")))?;
                        mesh[d] = match suf {
                            "" => all_mesh,
                            "m" | "M" => true,
                            "t" | "T" => false,
                            _ => {
                                return Err(err(format!(
                                    "{kw}: bad radix suffix in {t:?} (m or t)"
                                )))
                            }
                        };
                        sz[d] = v;
                    }
                    size = Some(sz);
                }
                "xp_link" | "xm_link" | "yp_link" | "ym_link" | "zp_link" | "zm_link" => {
                    let d = usize::from(kw.as_bytes()[0] - b'x');
                    let plus = kw.as_bytes()[1] == b'p';
                    let a = parse_guid(toks.next());
                    let b = parse_guid(toks.next());
                    let (Some(a), Some(b)) = (a, b) else {
                        return Err(err(format!("{kw}: expected two switch GUIDs")));
                    };
                    if seeds.is_empty() {
                        seeds.push(Seed::default());
                    }
                    if let Some(s) = seeds.last_mut() {
                        s.links[2 * d + usize::from(plus)] = Some((a, b));
                    }
                }
                "x_dateline" | "y_dateline" | "z_dateline" => {
                    let d = usize::from(kw.as_bytes()[0] - b'x');
                    let v = toks
                        .next()
                        .and_then(parse_num)
                        .ok_or_else(|| err(format!("{kw}: expected a number")))?;
                    let max = size.map_or(i64::MAX, |s| s[d] as i64);
                    if v <= -max || v >= max {
                        return Err(err(format!(
                            "ERR 4E10: dateline value for coordinate direction {} must be {} < dl < {max}",
                            d + 1,
                            -max
                        )));
                    }
                    if seeds.is_empty() {
                        seeds.push(Seed::default());
                    }
                    if let Some(s) = seeds.last_mut() {
                        s.dateline[d] = v as i32;
                    }
                }
                "next_seed" => {
                    if seeds.is_empty() {
                        seeds.push(Seed::default());
                    }
                    seeds.push(Seed::default());
                }
                "portgroup_max_ports" | "max_changes" => {
                    let v = toks
                        .next()
                        .and_then(parse_num)
                        .filter(|&v| v >= 0)
                        .ok_or_else(|| err(format!("{kw}: expected a number")))?;
                    if kw == "max_changes" {
                        max_changes = v as usize;
                    } else {
                        pg = v as usize;
                    }
                }
                "port_order" => {
                    for t in toks {
                        let Some(v) = parse_num(t).filter(|&v| (0..=254).contains(&v)) else {
                            break;
                        };
                        if !order.contains(&(v as u8)) {
                            order.push(v as u8);
                        }
                    }
                }
                other => {
                    return Err(err(format!(
                        "ERR 4E12: no keyword found: {other:?} is not a torus-2QoS.conf keyword"
                    )))
                }
            }
        }
        let size = size.ok_or_else(|| ConfError {
            line: text.lines().count().max(1),
            what: "ERR 4E20: missing required torus size specification (torus X Y Z)".into(),
        })?;
        seeds.retain(|s| s.links.iter().any(Option::is_some));
        Ok(TorusConfig {
            size,
            mesh,
            seeds,
            portgroup_max_ports: pg,
            port_order: order,
            max_changes,
        })
    }

    /// The configuration of a torus (or mesh) generated by fabric-sim's `torus:`/`mesh:` with
    /// switch GUIDs `base + index`, index = x + X·(y + Y·z). Two seeds, each from one switch in
    /// the positive directions (and the negative ones for radix-4 dimensions): switch 0, then,
    /// after `next_seed`, the switch halfway along every dimension, whose dateline offsets
    /// put it at its own coordinates. A failed switch or link of the first seed leaves the
    /// second (at least on grids of three or more per dimension), which gives every switch the
    /// same coordinates, so every path keeps its SL.
    #[must_use]
    pub fn for_grid(size: [usize; 3], mesh: bool, base: u64) -> String {
        let mut s = format!(
            "{} {} {} {}\n",
            if mesh { "mesh" } else { "torus" },
            size[0],
            size[1],
            size[2]
        );
        let stride = [1, size[0], size[0] * size[1]];
        // The second seed's switch: halfway, and on a mesh with room for its positive links.
        let half = size.map(|r| if mesh { r.saturating_sub(1) / 2 } else { r / 2 });
        let guid = |p: [usize; 3]| base + (0..3).map(|d| p[d] * stride[d]).sum::<usize>() as u64;
        for (i, at) in [[0; 3], half].into_iter().enumerate() {
            if i > 0 {
                s += "next_seed\n";
            }
            let moved = |d: usize, by: usize| {
                let mut p = at;
                p[d] = (p[d] + by) % size[d];
                guid(p)
            };
            for d in (0..3).filter(|&d| size[d] >= 2) {
                let n = ["x", "y", "z"][d];
                s += &format!("{n}p_link 0x{:016x} 0x{:016x}\n", guid(at), moved(d, 1));
                if size[d] == 4 && !mesh {
                    s += &format!("{n}m_link 0x{:016x} 0x{:016x}\n", guid(at), moved(d, 3));
                }
            }
            for d in (0..3).filter(|&d| at[d] > 0) {
                s += &format!("{}_dateline -{}\n", ["x", "y", "z"][d], at[d]);
            }
        }
        s
    }
}

/// The torus-2QoS engine.
#[derive(Clone, Debug, Default)]
pub struct Torus2QoS {
    opts: EngineOptions,
}

impl Torus2QoS {
    /// With options (`torus_config`, `qos`, `max_op_vls`).
    #[must_use]
    pub fn new(opts: EngineOptions) -> Torus2QoS {
        Torus2QoS { opts }
    }
}

fn fail(reason: String) -> RouteError {
    RouteError::Unroutable {
        engine: "torus-2QoS",
        reason,
    }
}

/// A placed torus: positions, port groups.
pub(crate) struct Torus {
    size: [usize; 3],
    mesh: [bool; 3],
    /// Per slot.
    pos: Vec<Option<[usize; 3]>>,
    grid: Vec<u32>,
    /// Per slot: 7 port groups (2d = −d, 2d+1 = +d, 6 = end ports incl. port 0), one after
    /// the other: slot `a`'s group `gi` is `group_ports[group_at[a][gi]..group_at[a][gi + 1]]`.
    group_ports: Vec<u8>,
    group_at: Vec<[u32; 8]>,
    /// Per slot, per port 0..=NumPorts: the dimension the port points along (NO_DIM for end
    /// ports); slot `a`'s from `port_dim[dim_at[a]]`.
    port_dim: Vec<u8>,
    dim_at: Vec<u32>,
}

/// "No port group" in the tables of [`Torus::hop_tables`].
const NO_GROUP: u8 = u8::MAX;

/// Per (dimension, switch, destination coordinate along it): the port group of OpenSM's
/// `next_hop_path` and `next_hop_xy` ([`NO_GROUP`]: none); dimension `d`'s entries start at
/// `base[d]`, switch `a`'s at `base[d] + a * size[d]`.
struct HopTables {
    base: [usize; 3],
    path: Vec<u8>,
    xy: Vec<u8>,
}

impl HopTables {
    /// Switch `a`'s entries of dimension `d` (of radix `r`) in `v` (`self.path` or `self.xy`).
    fn row<'a>(&self, v: &'a [u8], d: usize, a: usize, r: usize) -> &'a [u8] {
        let b = self.base[d] + a * r;
        v.get(b..b + r).unwrap_or(&[])
    }
}

impl Torus {
    /// Switch `a`'s port group `gi`.
    fn group(&self, a: usize, gi: usize) -> &[u8] {
        match (self.group_at.get(a), gi < 7) {
            (Some(at), true) => self
                .group_ports
                .get(at[gi] as usize..at[gi + 1] as usize)
                .unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The dimension of each port 0..=NumPorts of switch `a`.
    fn port_dims(&self, a: usize) -> &[u8] {
        match (self.dim_at.get(a), self.dim_at.get(a + 1)) {
            (Some(&x), Some(&y)) => self.port_dim.get(x as usize..y as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    fn idx(&self, p: [usize; 3]) -> usize {
        p[0] + self.size[0] * (p[1] + self.size[1] * p[2])
    }

    fn at(&self, p: [usize; 3]) -> Option<usize> {
        let s = self.grid[self.idx(p)];
        (s != NONE).then_some(s as usize)
    }

    /// `p` moved by `k` steps along `d` (None off a mesh edge).
    fn step(&self, p: [usize; 3], d: usize, k: i64) -> Option<[usize; 3]> {
        let n = self.size[d] as i64;
        let v = p[d] as i64 + k;
        let v = if self.mesh[d] {
            if v < 0 || v >= n {
                return None;
            }
            v
        } else {
            // `v.rem_euclid(n)` without a division: |k| is a step or two.
            let mut v = v;
            while v < 0 {
                v += n;
            }
            while v >= n {
                v -= n;
            }
            v
        };
        let mut q = p;
        q[d] = v as usize;
        Some(q)
    }

    /// The dimension and sign of the step from `p` to `q` (None if not one step apart):
    /// `plus` if one step up `d` from `p` is `q`, `minus` if one step down is (both on a ring
    /// of 2).
    fn dir(&self, p: [usize; 3], q: [usize; 3]) -> Option<(usize, bool, bool)> {
        let mut out = None;
        for d in 0..3 {
            if p[d] == q[d] {
                continue;
            }
            if out.is_some() {
                return None;
            }
            let (x, r) = (p[d], self.size[d]);
            let (up, down) = if self.mesh[d] {
                (x + 1 < r && x + 1 == q[d], x > 0 && x - 1 == q[d])
            } else {
                ((x + 1) % r == q[d], (x + r - 1) % r == q[d])
            };
            if !up && !down {
                return None;
            }
            out = Some((d, up, down));
        }
        out
    }
}

/// Neighbour sets of every switch (sorted, no repeats).
fn neighbour_sets(g: &SwitchGraph) -> Vec<Vec<u32>> {
    (0..g.switch_count())
        .map(|a| {
            let mut v: Vec<u32> = g
                .neighbors(a)
                .iter()
                .map(|e| e.to)
                .filter(|&t| t as usize != a)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect()
}

fn adjacent(nb: &[Vec<u32>], a: usize, b: usize) -> bool {
    nb[a].binary_search(&(b as u32)).is_ok()
}

fn common(nb: &[Vec<u32>], a: usize, b: usize) -> impl Iterator<Item = usize> + '_ {
    nb[a]
        .iter()
        .filter(move |x| nb[b].binary_search(x).is_ok())
        .map(|&x| x as usize)
}

/// Places the switches (see the module docs). Returns the torus and log lines, or why not.
pub(crate) fn discover(
    subnet: &Subnet,
    g: &SwitchGraph,
    cfg: &TorusConfig,
    log: &mut Vec<String>,
) -> Result<Torus, String> {
    let n = g.switch_count();
    let cells = cfg.size.iter().product::<usize>();
    let mut t = Torus {
        size: cfg.size,
        mesh: cfg.mesh,
        pos: vec![None; n],
        grid: vec![NONE; cells],
        group_ports: Vec::new(),
        group_at: Vec::new(),
        port_dim: Vec::new(),
        dim_at: vec![0],
    };
    for d in 0..3 {
        if t.size[d] == 1 {
            t.mesh[d] = false;
        }
        if t.size[d] == 4 && !t.mesh[d] {
            for (i, s) in cfg.seeds.iter().enumerate() {
                if s.links[2 * d].is_none() || s.links[2 * d + 1].is_none() {
                    return Err(format!(
                        "ERR 4E22: a radix-4 torus dimension ({}) needs both its positive and negative seed links (seed {})",
                        ["x", "y", "z"][d],
                        i + 1
                    ));
                }
            }
        }
    }
    let by_guid: HashMap<Guid, usize> = g
        .slots()
        .switches()
        .iter()
        .enumerate()
        .map(|(a, &s)| (subnet.node(s).guid, a))
        .collect();
    let nb = neighbour_sets(g);
    // The first seed whose switches all exist.
    let seed = cfg.seeds.iter().find(|s| {
        s.links
            .iter()
            .flatten()
            .all(|(a, b)| by_guid.contains_key(a) && by_guid.contains_key(b))
    });
    let Some(seed) = seed else {
        return Err(
            "ERR 4E30: Every configured torus seed has at least one switch missing in fabric"
                .into(),
        );
    };
    let common_sw: Vec<Guid> = seed.links.iter().flatten().map(|l| l.0).collect();
    if common_sw.windows(2).any(|w| w[0] != w[1]) {
        return Err("the links of a seed must all start at the same switch".into());
    }
    let origin_slot = by_guid[&common_sw[0]];
    let mut origin = [0usize; 3];
    for d in 0..3 {
        origin[d] = (-(seed.dateline[d] as i64)).rem_euclid(t.size[d] as i64) as usize;
    }
    let place = |t: &mut Torus, s: usize, p: [usize; 3]| -> Result<bool, String> {
        if let Some(q) = t.pos[s] {
            return if q == p {
                Ok(false)
            } else {
                Err(format!("switch placed at both {q:?} and {p:?}"))
            };
        }
        let i = t.idx(p);
        if t.grid[i] != NONE {
            return Err(format!("two switches at {p:?}"));
        }
        t.pos[s] = Some(p);
        t.grid[i] = s as u32;
        Ok(true)
    };
    // Strict check: every placed neighbour of `s` is one step from `p`.
    let fits = |t: &Torus, s: usize, p: [usize; 3]| {
        t.grid[t.idx(p)] == NONE
            && nb[s]
                .iter()
                .all(|&x| t.pos[x as usize].is_none_or(|q| t.dir(p, q).is_some()))
    };
    place(&mut t, origin_slot, origin)?;
    for d in 0..3 {
        for (k, sign) in [(2 * d, -1i64), (2 * d + 1, 1)] {
            let Some((_, to)) = seed.links[k] else {
                continue;
            };
            let b = by_guid[&to];
            // Placed by the configuration, as OpenSM does, whether or not the link is up: a
            // failed seed link is one more failed link to route around.
            if !adjacent(&nb, origin_slot, b) {
                log.push(format!(
                    "torus-2QoS: seed link 0x{:016x} -> 0x{:016x} is down; its switches are placed by the configuration",
                    common_sw[0].0, to.0
                ));
            }
            let p = t
                .step(origin, d, sign)
                .ok_or("seed link off the mesh edge")?;
            place(&mut t, b, p)?;
        }
    }
    let dims: Vec<usize> = (0..3).filter(|&d| t.size[d] > 1).collect();
    // A placed switch whose every square (line) either cannot exist or has its far corner
    // (next switch) placed already can add nothing in any later round: skipped from then on.
    let mut squares_done = vec![false; n];
    let mut lines_done = vec![false; n];
    // Per cell, per direction k (2d = −d, 2d+1 = +d): the cell one step away ([`NONE`]: off a
    // mesh edge) — `step` as a table.
    let size = t.size;
    let cell_pos = |c: usize| {
        [
            c % size[0],
            (c / size[0]) % size[1],
            c / (size[0] * size[1]),
        ]
    };
    let nbr: Vec<[u32; 6]> = (0..cells)
        .map(|c| {
            std::array::from_fn(|k| {
                t.step(cell_pos(c), k / 2, if k % 2 == 1 { 1 } else { -1 })
                    .map_or(NONE, |q| t.idx(q) as u32)
            })
        })
        .collect();
    let step = |c: u32, k: usize| if c == NONE { NONE } else { nbr[c as usize][k] };
    loop {
        let mut progress = false;
        // Squares.
        loop {
            let mut found = Vec::new();
            for a in 0..n {
                if squares_done[a] {
                    continue;
                }
                let Some(p) = t.pos[a] else { continue };
                let ca = t.idx(p) as u32;
                let mut open = false;
                for (ii, &i) in dims.iter().enumerate() {
                    for &j in &dims[ii + 1..] {
                        for ki in [2 * i, 2 * i + 1] {
                            for kj in [2 * j, 2 * j + 1] {
                                let (cb, cc) = (step(ca, ki), step(ca, kj));
                                let cq = step(cb, kj);
                                if cc == NONE || cq == NONE || t.grid[cq as usize] != NONE {
                                    continue;
                                }
                                open = true;
                                let (b, c) = (t.grid[cb as usize], t.grid[cc as usize]);
                                if b == NONE || c == NONE {
                                    continue;
                                }
                                let mut cand = common(&nb, b as usize, c as usize)
                                    .filter(|&x| x != a && t.pos[x].is_none());
                                if let (Some(x), None) = (cand.next(), cand.next()) {
                                    found.push((x, cell_pos(cq as usize)));
                                }
                            }
                        }
                    }
                }
                squares_done[a] = !open;
            }
            let mut any = false;
            for (x, q) in found {
                if t.pos[x].is_none() && fits(&t, x, q) {
                    place(&mut t, x, q)?;
                    any = true;
                }
            }
            if !any {
                break;
            }
            progress = true;
        }
        // Lines.
        let mut found = Vec::new();
        for a in 0..n {
            if lines_done[a] {
                continue;
            }
            let Some(p) = t.pos[a] else { continue };
            let ca = t.idx(p) as u32;
            let mut open = false;
            for &d in &dims {
                let r = t.size[d];
                if r == 2 {
                    continue;
                }
                for k in [2 * d, 2 * d + 1] {
                    // Two steps along a ring of 3 or more (or a mesh line): step(p, d, ±2).
                    let cb = step(ca, k);
                    let cq = step(cb, k);
                    if cq == NONE || t.grid[cq as usize] != NONE {
                        continue;
                    }
                    open = true;
                    let b = t.grid[cb as usize];
                    if b == NONE {
                        continue;
                    }
                    let (b, q) = (b as usize, cell_pos(cq as usize));
                    // A mesh dimension is a line: no triangle or square across the ring.
                    let ring = if t.mesh[d] { usize::MAX } else { r };
                    let cands: Vec<usize> = match ring {
                        3 => common(&nb, a, b).filter(|&x| t.pos[x].is_none()).collect(),
                        4 => match t.grid.get(step(ca, k ^ 1) as usize).filter(|&&m| m != NONE) {
                            Some(m) => common(&nb, b, *m as usize)
                                .filter(|&x| x != a && t.pos[x].is_none())
                                .collect(),
                            None => Vec::new(),
                        },
                        // Only across a live link a → b: with it down (a seed link, placed
                        // by the configuration) the next switch shares no neighbour with a,
                        // and a switch beside the line would pass for it.
                        _ if !adjacent(&nb, a, b) => Vec::new(),
                        _ => nb[b]
                            .iter()
                            .map(|&x| x as usize)
                            .filter(|&x| {
                                x != a
                                    && t.pos[x].is_none()
                                    && !adjacent(&nb, a, x)
                                    && common(&nb, a, x).count() == 1
                            })
                            .collect(),
                    };
                    if cands.len() == 1 {
                        found.push((cands[0], q));
                    }
                }
            }
            lines_done[a] = !open;
        }
        let mut any = false;
        for (x, q) in found {
            if t.pos[x].is_none() && fits(&t, x, q) {
                place(&mut t, x, q)?;
                any = true;
            }
        }
        progress |= any;
        if !progress {
            break;
        }
    }
    let unplaced: Vec<usize> = (0..n).filter(|&a| t.pos[a].is_none()).collect();
    if let Some(&a) = unplaced.first() {
        let sw = g.switch_at(a).map(|s| subnet.node(s));
        return Err(format!(
            "could not place {} of {n} switches into the {}x{}x{} {} (first: 0x{:016x} '{}'); check the radices and seed links of torus-2QoS.conf",
            unplaced.len(),
            t.size[0],
            t.size[1],
            t.size[2],
            if t.mesh.iter().all(|&m| m) { "mesh" } else { "torus" },
            sw.map_or(0, |x| x.guid.0),
            sw.map_or("", |x| x.desc.as_str())
        ));
    }
    // Port groups.
    let mut unused_links = 0;
    let mut gr: [Vec<u8>; 7] = Default::default();
    let mut pd: Vec<u8> = Vec::new();
    for (a, &sw) in g.slots().switches().iter().enumerate() {
        let np = subnet.node(sw).num_ports;
        for x in &mut gr {
            x.clear();
        }
        pd.clear();
        pd.resize(usize::from(np) + 1, NO_DIM as u8);
        let p = t.pos[a].unwrap_or([0; 3]);
        gr[ENDPORT].push(0);
        for port in 1..=np {
            let Some((rn, _)) = subnet.port(sw, PortNum(port)).and_then(|x| x.remote) else {
                continue;
            };
            if !link_usable(subnet, sw, PortNum(port)) {
                continue;
            }
            if !subnet.node(rn).is_switch() {
                gr[ENDPORT].push(port);
                continue;
            }
            let Some(r) = g.index_of(rn) else { continue };
            let Some(q) = t.pos[r] else { continue };
            match t.dir(p, q) {
                Some((d, plus, minus)) => {
                    pd[usize::from(port)] = d as u8;
                    if plus {
                        gr[2 * d + 1].push(port);
                    }
                    if minus {
                        gr[2 * d].push(port);
                    }
                }
                None => unused_links += 1,
            }
        }
        let mut at = [0u32; 8];
        for (gi, x) in gr.iter().enumerate() {
            at[gi] = t.group_ports.len() as u32;
            t.group_ports.extend_from_slice(x);
        }
        at[7] = t.group_ports.len() as u32;
        t.group_at.push(at);
        t.port_dim.extend_from_slice(&pd);
        t.dim_at.push(t.port_dim.len() as u32);
    }
    if unused_links > 0 {
        log.push(format!(
            "build_torus: Warning: {unused_links} switch link ends do not join torus neighbours and are not used"
        ));
    }
    Ok(t)
}

fn ring_dir_idx(src: usize, dst: usize, count: usize) -> i64 {
    if src == dst {
        return 0;
    }
    let (s, l) = if dst > src { (src, dst) } else { (dst, src) };
    let vl0 = l - s;
    let vl1 = s + count - l;
    if dst > src {
        if vl0 <= vl1 {
            1
        } else {
            -1
        }
    } else if vl0 <= vl1 {
        -1
    } else {
        1
    }
}

/// True if the shorter way from `src` to `dst` on a ring of `count` wraps (the path SL bit).
fn use_vl1(src: usize, dst: usize, count: usize) -> bool {
    let (s, l) = if dst > src { (src, dst) } else { (dst, src) };
    l - s > s + count - l
}

impl Torus {
    /// Per switch and port group (2d = −d, 2d+1 = +d): the switch behind the group's first
    /// port, the way OpenSM's ring walk goes ([`NONE`]: empty group).
    fn ring_next(&self, g: &SwitchGraph) -> Vec<[u32; 6]> {
        (0..self.pos.len())
            .map(|a| {
                std::array::from_fn(|gi| {
                    self.group(a, gi)
                        .first()
                        .and_then(|&p| g.neighbors(a).iter().find(|e| e.port == p))
                        .map_or(NONE, |e| e.to)
                })
            })
            .collect()
    }

    /// The port groups of OpenSM's `next_hop_path` and `next_hop_xy` for every switch `a`,
    /// dimension `d` and destination coordinate `c` along `d`. Both depend on the destination
    /// only through `c`: the switch `ts` where the path would turn off `d` (a's position with
    /// coordinate `c`) and whether it exists. `next_hop_path` is OpenSM's `ring_dir_path`: the
    /// shorter way round (`ring_dir_idx`) if walking that way along the group's first ports
    /// reaches `ts` within a ring's length, else the other way if that reaches it, else none;
    /// `next_hop_xy` is `next_hop_path` if `ts` exists, else `next_hop_idx` (the shorter way,
    /// whatever is broken). Each ring is walked once per switch and direction.
    fn hop_tables(&self, g: &SwitchGraph) -> HopTables {
        let n = self.pos.len();
        let next = self.ring_next(g);
        let mut t = HopTables {
            base: [0; 3],
            path: Vec::new(),
            xy: Vec::new(),
        };
        let stride = [1, self.size[0], self.size[0] * self.size[1]];
        // Per coordinate along d: reached walking −d (+d) from the current switch, i.e. a
        // switch at that coordinate of the current switch's ring (the switch `ts`) is met.
        let mut reach: [Vec<bool>; 2] = [Vec::new(), Vec::new()];
        for d in 0..3 {
            let r = self.size[d];
            // ring_dir_idx(x, c, r) for every pair of coordinates.
            let dirs: Vec<i8> = (0..r * r)
                .map(|i| ring_dir_idx(i / r, i % r, r) as i8)
                .collect();
            let (e1, e2) = ((d + 1) % 3, (d + 2) % 3);
            t.base[d] = t.path.len();
            t.path.resize(t.base[d] + n * r, NO_GROUP);
            t.xy.resize(t.base[d] + n * r, NO_GROUP);
            for a in 0..n {
                let Some(pa) = self.pos[a] else { continue };
                for (k, w) in reach.iter_mut().enumerate() {
                    w.clear();
                    w.resize(r, false);
                    let mut x = a;
                    for _ in 0..r {
                        let y = next[x][2 * d + k];
                        if y == NONE {
                            break;
                        }
                        x = y as usize;
                        // `y` is `ts` for coordinate c iff it sits at a's position with c.
                        if let Some(q) = self.pos[x] {
                            if q[e1] == pa[e1] && q[e2] == pa[e2] {
                                w[q[d]] = true;
                            }
                        }
                    }
                }
                // The cell of a's ring with coordinate 0 along d.
                let line = self.idx(pa) - pa[d] * stride[d];
                let from = t.base[d] + a * r;
                let (Some(path), Some(xy), Some(dirs)) = (
                    t.path.get_mut(from..from + r),
                    t.xy.get_mut(from..from + r),
                    dirs.get(pa[d] * r..pa[d] * r + r),
                ) else {
                    continue;
                };
                for c in 0..r {
                    let dir = dirs[c];
                    if dir == 0 {
                        continue;
                    }
                    if self.grid[line + c * stride[d]] != NONE {
                        path[c] = [dir > 0, dir < 0]
                            .into_iter()
                            .find(|&plus| reach[usize::from(plus)][c])
                            .map_or(NO_GROUP, |plus| (2 * d + usize::from(plus)) as u8);
                        xy[c] = path[c];
                    } else {
                        // OpenSM `next_hop_idx`: the shorter way, whatever is broken.
                        let gi = 2 * d + usize::from(dir > 0);
                        if !self.group(a, gi).is_empty() {
                            xy[c] = gi as u8;
                        }
                    }
                }
            }
        }
        t
    }

    /// For source switch `a` at `pa` whose port groups have at most one port each: the port
    /// toward every cell of the torus into `port_to` (as [`Torus::lft_group`] picks its group;
    /// [`NO_PATH`] where there is none), and the number of other switches it cannot reach.
    fn ports_to_cells(&self, h: &HopTables, a: usize, pa: [usize; 3], port_to: &mut [u8]) -> u64 {
        let [s0, s1, s2] = self.size;
        let mut pmap = [NO_PATH; 256];
        for gi in 0..ENDPORT {
            if let Some(&p) = self.group(a, gi).first() {
                pmap[gi] = p;
            }
        }
        let (xy0, xy1, path2) = (
            h.row(&h.xy, 0, a, s0),
            h.row(&h.xy, 1, a, s1),
            h.row(&h.path, 2, a, s2),
        );
        // Along X (off the source's X coordinate) the group is xy0's unless that has none:
        // every X row starts as xy0's ports, copied out by doubling.
        let cells = s0 * s1 * s2;
        let Some(grid) = port_to.get_mut(..cells) else {
            return 0;
        };
        for (e, &gi) in grid.iter_mut().zip(xy0) {
            *e = pmap[usize::from(gi)];
        }
        let mut done = s0.min(cells);
        while done < cells {
            let k = done.min(cells - done);
            grid.copy_within(..k, done);
            done += k;
        }
        let mut holes = [0u8; 256];
        let mut nholes = 0;
        for (c0, &gi) in xy0.iter().enumerate() {
            if c0 != pa[0] && gi == NO_GROUP {
                holes[nholes] = c0 as u8;
                nholes += 1;
            }
        }
        let holes = &holes[..nholes];
        let mut unroutable = 0;
        let has_switch = |c: usize| self.grid.get(c).is_some_and(|&x| x != NONE);
        let mut base = 0;
        for (c2, &z) in path2.iter().enumerate() {
            let z = if c2 != pa[2] { z } else { NO_GROUP };
            for (c1, &y) in xy1.iter().enumerate() {
                let y = if c1 != pa[1] { y } else { NO_GROUP };
                // Off X: Y, then Z. On the source's X coordinate: Y then Z, or Z alone.
                let off = if y != NO_GROUP { y } else { z };
                let on = if c1 != pa[1] { off } else { path2[c2] };
                if let Some(e) = grid.get_mut(base + pa[0]) {
                    *e = pmap[usize::from(on)];
                }
                if on == NO_GROUP && (c1, c2) != (pa[1], pa[2]) && has_switch(base + pa[0]) {
                    unroutable += 1;
                }
                for &c0 in holes {
                    let c = base + usize::from(c0);
                    if let Some(e) = grid.get_mut(c) {
                        *e = pmap[usize::from(off)];
                    }
                    if off == NO_GROUP && has_switch(c) {
                        unroutable += 1;
                    }
                }
                base += s0;
            }
        }
        unroutable
    }

    /// OpenSM `lft_port`: the port group switch `a` (at `pa`) uses toward the switch at `pb`
    /// ([`NO_GROUP`]: none), from the tables of [`Torus::hop_tables`].
    fn lft_group(&self, h: &HopTables, a: usize, pa: [usize; 3], pb: [usize; 3]) -> u8 {
        let path = |d: usize| h.path[h.base[d] + a * self.size[d] + pb[d]];
        let xy = |d: usize| h.xy[h.base[d] + a * self.size[d] + pb[d]];
        if pb[0] != pa[0] {
            let mut g = xy(0);
            if g == NO_GROUP && pb[1] != pa[1] {
                g = xy(1);
            }
            if g == NO_GROUP && pb[2] != pa[2] {
                g = path(2);
            }
            g
        } else if pb[1] != pa[1] {
            let g = xy(1);
            if g == NO_GROUP && pb[2] != pa[2] {
                path(2)
            } else {
                g
            }
        } else {
            path(2)
        }
    }
}

/// `row[l] = by_cell[cell_of[l]]` wherever `cell_of[l]` is a cell ([`NONE`]: left as is).
fn gather(row: &mut [u8], cell_of: &[u32], by_cell: &[u8]) {
    for (e, &c) in row.iter_mut().zip(cell_of) {
        if let Some(&p) = by_cell.get(c as usize) {
            *e = p;
        }
    }
}

/// `row[l] = by_cell[cell_of[l]]`.
fn gather16(row: &mut [u8], cell_of: &[u16], by_cell: &[u8; 1 << 16]) {
    for (e, &c) in row.iter_mut().zip(cell_of) {
        *e = by_cell[usize::from(c)];
    }
}

/// Sets the forwarding entries of LIDs `lid .. lid + nl` (those within the table) to `port`.
#[inline]
fn fill_lids(row: &mut [u8], lid: u16, nl: u16, port: u8) {
    let lid = usize::from(lid);
    for e in row.iter_mut().skip(lid).take(usize::from(nl)) {
        *e = port;
    }
}

/// OpenSM `sl2vl_entry` for a switch port pair (`dims` = dimension of each port).
fn switch_vl(in_dim: usize, out_dim: usize, sl: u8, data_vls: u8) -> u8 {
    let mut vl = 0;
    if out_dim != NO_DIM {
        if data_vls >= 2 {
            vl |= (sl >> out_dim) & 1;
        }
        if data_vls >= 4 && in_dim != NO_DIM && in_dim > out_dim {
            vl |= 1 << 1;
        }
        if data_vls >= 8 {
            vl |= ((sl >> 3) & 1) << 2;
        }
    } else if data_vls >= 2 {
        vl |= (sl >> 3) & 1;
    }
    vl
}

impl RoutingEngine for Torus2QoS {
    fn name(&self) -> &'static str {
        "torus-2QoS"
    }

    fn route_logged(
        &self,
        subnet: &Subnet,
        _rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        if !self.opts.qos {
            return Err(fail(
                "ERR 4E44: Routing engine list contains torus-2QoS. Enable QoS for correct operation (-Q or 'qos TRUE' in opensm.conf)."
                    .to_string(),
            ));
        }
        let Some(file) = &self.opts.torus_config else {
            return Err(fail(
                "ERR 4E11: no torus-2QoS.conf (torus_config) was given".to_string(),
            ));
        };
        let text = file
            .contents
            .as_ref()
            .map_err(|e| fail(format!("ERR 4E11: Opening {}: {e}", file.path)))?;
        let cfg = TorusConfig::parse(text).map_err(|e| {
            fail(format!(
                "ERR 4E13: parsing {}:{}: {}",
                file.path, e.line, e.what
            ))
        })?;
        let g = SwitchGraph::build(subnet);
        let budget = self.opts.vl_budget(subnet);
        let (sw_vls, ep_vls) = (budget.min_sw_data_vls, budget.min_data_vls);
        log.push(format!(
            "torus_build_lfts: Found fabric w/ {} switches, minimum data VLs: endport {ep_vls}, switchport {sw_vls}",
            g.switch_count()
        ));
        if sw_vls < 2 {
            return Err(fail(format!(
                "ERR 4E48: Too few data VLs to support torus routing without credit loops (have switchport {sw_vls} need 2)"
            )));
        }
        if sw_vls < 8 {
            log.push(format!(
                "verify_setup: Warning: Too few data VLs to support torus routing with two QoS levels (have switchport {sw_vls} need 8)"
            ));
        }
        if ep_vls < 2 {
            log.push(format!(
                "verify_setup: Warning: Too few data VLs to support torus routing with two QoS levels (have endport {ep_vls} need 2)"
            ));
        }
        log.push(format!(
            "torus_build_lfts: Looking for {} x {} x {} {}",
            cfg.size[0],
            cfg.size[1],
            cfg.size[2],
            if cfg.mesh.iter().all(|&m| m) {
                "mesh"
            } else {
                "torus"
            }
        ));
        let t = discover(subnet, &g, &cfg, log).map_err(fail)?;
        self.check_routable(&t, sw_vls, log)?;
        let n = g.switch_count();
        // End LIDs behind each switch: (LID, LMC count, CA?), in port_order.
        // Each port's rank in that order (port_order first, then the rest increasing; 255:
        // in no order).
        let mut rank = [u16::MAX; 256];
        let mut next_rank = 0u16;
        for p in cfg.port_order.iter().copied().chain(0..=254u8) {
            if rank[usize::from(p)] == u16::MAX {
                rank[usize::from(p)] = next_rank;
                next_rank += 1;
            }
        }
        let mut ordered: Vec<u8> = Vec::new();
        let mut ends: Vec<Vec<(u16, u16, bool, u8)>> = vec![Vec::new(); n];
        for (b, &sw) in g.slots().switches().iter().enumerate() {
            let grp = t.group(b, ENDPORT);
            if grp.len() > cfg.portgroup_max_ports + 1 {
                log.push(format!(
                    "build_torus: ERR 4E03: port group of switch 0x{:016x} has {} ports; portgroup_max_ports is {}",
                    subnet.node(sw).guid.0,
                    grp.len(),
                    cfg.portgroup_max_ports
                ));
            }
            ordered.clear();
            ordered.extend(grp.iter().filter(|&&p| rank[usize::from(p)] != u16::MAX));
            ordered.sort_unstable_by_key(|&p| rank[usize::from(p)]);
            ordered.dedup();
            for &p in &ordered {
                if p == 0 {
                    if let Some(x) = subnet.port(sw, PortNum(0)) {
                        if x.lid != Lid::UNASSIGNED {
                            ends[b].push((x.lid.0, 1 << x.lmc.min(7), false, 0));
                        }
                    }
                    continue;
                }
                let Some((rn, rp)) = subnet.port(sw, PortNum(p)).and_then(|x| x.remote) else {
                    continue;
                };
                if let Some(x) = subnet.port(rn, rp) {
                    if x.lid != Lid::UNASSIGNED {
                        ends[b].push((x.lid.0, 1 << x.lmc.min(7), true, p));
                    }
                }
            }
        }
        let top = max_lid(subnet);
        let mut lfts = Lfts::with_slots(g.slots().clone(), top);
        let mut unroutable = 0u64;
        let hops = t.hop_tables(&g);
        // The torus cell of the switch behind each end LID; `overlap`: some LID is covered by
        // two end ports (then only the switch-pair loop below keeps OpenSM's write order).
        let cells = t.grid.len();
        let mut cell_of_lid = vec![NONE; usize::from(top.0) + 1];
        let mut overlap = false;
        for (b, e) in ends.iter().enumerate() {
            let cell = t.pos[b].map_or(NONE, |p| t.idx(p) as u32);
            for &(lid, nl, _, _) in e {
                for x in cell_of_lid
                    .iter_mut()
                    .skip(usize::from(lid))
                    .take(usize::from(nl))
                {
                    overlap |= *x != NONE;
                    *x = cell;
                }
            }
        }
        // The port toward every cell from the current source (fast path). With fewer than
        // 2^16 − 1 cells, cells are 16-bit indices into a 2^16-entry table, the last entry
        // (NO_PATH) standing for "no cell", so the gather needs no test.
        let cell16: Option<Vec<u16>> = (cells < usize::from(u16::MAX)).then(|| {
            cell_of_lid
                .iter()
                .map(|&c| u16::try_from(c).unwrap_or(u16::MAX))
                .collect()
        });
        let mut port16 = Box::new([NO_PATH; 1 << 16]);
        let mut port_to = vec![NO_PATH; if cell16.is_some() { 0 } else { cells }];
        // The port group toward every switch from the current source (NO_GROUP: none).
        let mut grp_to = vec![NO_GROUP; n];
        for a in 0..n {
            let Some(sw) = g.switch_at(a) else { continue };
            let Some(row) = lfts.table_mut(sw) else {
                continue;
            };
            // With at most one port per group the round-robin below always picks that port,
            // so each cell's port is the one of its group, computed row by row along X.
            if let Some(pa) =
                t.pos[a].filter(|_| !overlap && (0..ENDPORT).all(|gi| t.group(a, gi).len() <= 1))
            {
                if let Some(c16) = &cell16 {
                    unroutable += t.ports_to_cells(&hops, a, pa, &mut port16[..cells]);
                    gather16(row, c16, &port16);
                } else {
                    unroutable += t.ports_to_cells(&hops, a, pa, &mut port_to);
                    gather(row, &cell_of_lid, &port_to);
                }
                for &(lid, nl, _, local) in &ends[a] {
                    fill_lids(row, lid, nl, local);
                }
                continue;
            }
            for (b, e) in grp_to.iter_mut().enumerate() {
                *e = match (t.pos[a], t.pos[b]) {
                    (Some(pa), Some(pb)) if a != b => t.lft_group(&hops, a, pa, pb),
                    _ => NO_GROUP,
                };
            }
            // Round-robin positions in each port group, CA and switch LIDs counted apart
            // (kept below the group's size: only the position is used).
            let mut ca_cnt = [0usize; 7];
            let mut sw_cnt = [0usize; 7];
            for (b, &gi) in grp_to.iter().enumerate() {
                if a == b {
                    for &(lid, nl, _, local) in &ends[b] {
                        fill_lids(row, lid, nl, local);
                    }
                    continue;
                }
                if gi == NO_GROUP {
                    unroutable += 1;
                    continue;
                }
                let gi = usize::from(gi);
                let pg = t.group(a, gi);
                for &(lid, nl, ca, _) in &ends[b] {
                    let cnt = if ca { &mut ca_cnt[gi] } else { &mut sw_cnt[gi] };
                    let p = pg.get(*cnt).copied();
                    *cnt += 1;
                    if *cnt >= pg.len() {
                        *cnt = 0;
                    }
                    if let Some(p) = p {
                        fill_lids(row, lid, nl, p);
                    }
                }
            }
        }
        if unroutable > 0 {
            return Err(fail(format!(
                "ERR 4E39: {unroutable} switch pairs cannot be routed (unable to route around the failures)"
            )));
        }
        // Path SLs per (source switch, destination switch): one bit per dimension whose
        // shorter way round wraps between the two switches' coordinates. Destination LIDs are
        // those of the end ports routed to above (any other is SL 0).
        let mut sls = PathSls::per_switch_pair(subnet, g.slots(), top).with_hint_bits(8);
        let mut dst_of = vec![NONE; usize::from(top.0) + 1];
        for (b, e) in ends.iter().enumerate() {
            for &(lid, nl, _, _) in e {
                for x in dst_of
                    .iter_mut()
                    .skip(usize::from(lid))
                    .take(usize::from(nl))
                {
                    *x = b as u32;
                }
            }
        }
        for (l, &b) in dst_of.iter().enumerate() {
            sls.set_dest_slot(Lid(l as u16), (b != NONE).then_some(b as usize));
        }
        // Per dimension d and source coordinate x along it: the SL bit d toward every
        // switch (none toward an unplaced one). A row is the OR of its coordinates' three.
        let bits: [Vec<Vec<u8>>; 3] = std::array::from_fn(|d| {
            let r = t.size[d];
            (0..r)
                .map(|x| {
                    t.pos
                        .iter()
                        .map(|p| p.map_or(0, |p| u8::from(use_vl1(x, p[d], r)) << d))
                        .collect()
                })
                .collect()
        });
        for a in 0..n {
            let Some(sw) = g.switch_at(a) else { continue };
            let Some(row) = sls.switch_pair_row_mut(sw) else {
                continue;
            };
            let Some(pa) = t.pos[a] else { continue };
            if let (Some(x), Some(y), Some(z)) =
                (bits[0].get(pa[0]), bits[1].get(pa[1]), bits[2].get(pa[2]))
            {
                for (e, ((&x, &y), &z)) in row.iter_mut().zip(x.iter().zip(y).zip(z)) {
                    *e = x | y | z;
                }
            }
        }
        // SL-to-VL: every switch port pair and every CA port.
        let mut tables = Sl2VlTables::new(subnet);
        // The table of each (input, output) dimension pair, NO_DIM for end ports.
        let by_dims: [[SlToVl; NO_DIM + 1]; NO_DIM + 1] = std::array::from_fn(|di| {
            std::array::from_fn(|dout| {
                let mut v = [0u8; NUM_SLS];
                for (sl, e) in v.iter_mut().enumerate() {
                    *e = switch_vl(di, dout, sl as u8, sw_vls);
                }
                sl2vl_from(v)
            })
        });
        for a in 0..n {
            let Some(sw) = g.switch_at(a) else { continue };
            let dims = t.port_dims(a);
            let Some(all) = tables.switch_tables_mut(subnet, sw) else {
                continue;
            };
            // Input port i's tables, by output port, from the two ports' dimensions.
            for (row, &di) in all.chunks_exact_mut(dims.len().max(1)).zip(dims) {
                let by_out = &by_dims[usize::from(di).min(NO_DIM)];
                for (e, &dout) in row.iter_mut().zip(dims) {
                    *e = by_out[usize::from(dout).min(NO_DIM)];
                }
            }
        }
        let ca_table = {
            let mut v = [0u8; NUM_SLS];
            for (sl, e) in v.iter_mut().enumerate() {
                *e = if ep_vls >= 2 {
                    ((sl >> 3) & 1) as u8
                } else {
                    0
                };
            }
            sl2vl_from(v)
        };
        for id in subnet.node_ids() {
            let node = subnet.node(id);
            if node.node_type == NodeType::SWITCH {
                continue;
            }
            for p in 1..=node.num_ports {
                if subnet
                    .port(id, PortNum(p))
                    .is_some_and(|x| x.remote.is_some())
                {
                    tables.set(subnet, id, PortNum(0), PortNum(p), ca_table);
                }
            }
        }
        // VL arbitration: switch ports facing end ports carry VL 0 and 1 only; fold the
        // switch-external tables they get onto those (OpenSM `torus_update_osm_vlarb`).
        let mut arb = VlArbTables::default();
        for a in 0..n {
            let Some(sw) = g.switch_at(a) else { continue };
            for &p in t.group(a, ENDPORT) {
                if p != 0 {
                    arb.folds.insert((sw, PortNum(p)), VlArbFold::TorusEndport);
                }
            }
        }
        let stree = t.master_stree(subnet, &g).map_err(fail)?;
        log.push(format!(
            "torus_build_lfts: Built {} x {} x {} torus w/ {n} switches",
            cfg.size[0], cfg.size[1], cfg.size[2]
        ));
        Ok(Routes::new(lfts)
            .with_path_sl(sls)
            .with_sl2vl(tables)
            .with_vlarb(arb)
            .with_mcast_tree(stree))
    }
}

impl Torus {
    /// OpenSM's `good_xy_ring`: the x ring and the y ring through (x, y, z) have no switch
    /// missing.
    fn good_xy_ring(&self, x: usize, y: usize, z: usize) -> bool {
        (0..self.size[0]).all(|i| self.at([i, y, z]).is_some())
            && (0..self.size[1]).all(|j| self.at([x, j, z]).is_some())
    }

    /// OpenSM's `find_plane_mid`: the switch of plane `z` nearest the middle (stepping both x
    /// and y down, then up) whose x and y rings are whole.
    fn plane_mid(&self, z: usize) -> Option<usize> {
        let [sx, sy, _] = self.size;
        let (xm, ym) = (sx / 2, sy / 2);
        if self.good_xy_ring(xm, ym, z) {
            return self.at([xm, ym, z]);
        }
        let mut d = 1;
        while d <= xm && d <= ym {
            for (x, y) in [(xm - d, ym - d), ((xm + d) % sx, (ym + d) % sy)] {
                if self.good_xy_ring(x, y, z) {
                    return self.at([x, y, z]);
                }
            }
            d += 1;
        }
        None
    }

    /// OpenSM's `find_stree_root`: the middle of the whole x-y plane nearest the middle in z,
    /// else the middle of the middle plane.
    fn stree_root(&self) -> Option<usize> {
        let [sx, sy, sz] = self.size;
        let zm = sz / 2;
        let whole = |z: usize| (0..sy).all(|y| (0..sx).all(|x| self.at([x, y, z]).is_some()));
        for dz in 0..=zm {
            for z in [zm - dz, (zm + dz) % sz] {
                if whole(z) {
                    if let Some(r) = self.plane_mid(z) {
                        return Some(r);
                    }
                }
                if dz == 0 {
                    break;
                }
            }
        }
        self.plane_mid(zm)
    }

    /// The multicast master spanning tree (OpenSM's `torus_master_stree` and
    /// `build_master_stree_branch`): from the root along x, then from each switch of that x
    /// line along y, then from each switch of that x-y plane along z. A branch grows each way
    /// from its switch to the ring's dateline (between coordinates radix − 1 and 0) and does
    /// not cross it, unless a missing switch or link stops one side first; then both sides
    /// may go on round the ring. With no dateline crossed, multicast on a group's subtree
    /// cannot close a credit loop with unicast on the VLs they share. Every switch must be on
    /// the tree (OpenSM's ERR 4E43 otherwise).
    fn master_stree(
        &self,
        subnet: &Subnet,
        g: &SwitchGraph,
    ) -> Result<crate::mcast::MasterTree, String> {
        let next = self.ring_next(g);
        let n = self.pos.len();
        // Per slot: (parent slot, the parent's port group toward it).
        let mut parent: Vec<Option<(usize, usize)>> = vec![None; n];
        let root = self.stree_root().ok_or_else(|| {
            "ERR 4E43: no root for the torus multicast master spanning tree".to_string()
        })?;
        let branch = |parent: &mut Vec<Option<(usize, usize)>>, b: usize, cdir: usize| {
            let Some(pb) = self.pos[b] else { return };
            let (idx, cnt) = (pb[cdir], self.size[cdir]);
            let (ng, pg) = (2 * cdir, 2 * cdir + 1);
            // One step from `tip` along group `gi`: the switch reached, now on the tree.
            let grow = |parent: &mut Vec<Option<(usize, usize)>>, tip: Option<usize>, gi: usize| {
                let x = tip?;
                let sw = next[x][gi];
                let sw = (sw != NONE).then_some(sw as usize)?;
                if sw == root || parent[sw].is_some() {
                    return None;
                }
                parent[sw] = Some((x, gi));
                Some(sw)
            };
            let (mut lo, mut hi) = (Some(b), Some(b));
            for _ in 0..idx {
                lo = grow(parent, lo, ng);
            }
            for _ in idx..cnt.saturating_sub(1) {
                hi = grow(parent, hi, pg);
            }
            if lo.is_some() && hi.is_some() {
                return;
            }
            // A side stopped short of the dateline: both may now cross it.
            for _ in 0..cnt {
                lo = grow(parent, lo, ng);
                hi = grow(parent, hi, pg);
                if lo.is_none() && hi.is_none() {
                    break;
                }
            }
        };
        branch(&mut parent, root, 0);
        if let Some([_, rj, rk]) = self.pos[root] {
            for i in 0..self.size[0] {
                if let Some(s) = self.at([i, rj, rk]) {
                    branch(&mut parent, s, 1);
                }
                for j in 0..self.size[1] {
                    if let Some(s) = self.at([i, j, rk]) {
                        branch(&mut parent, s, 2);
                    }
                }
            }
        }
        let off: Vec<usize> = (0..n)
            .filter(|&a| a != root && self.pos[a].is_some() && parent[a].is_none())
            .collect();
        if let Some(&a) = off.first() {
            let p = self.pos[a].unwrap_or_default();
            let guid = g.switch_at(a).map_or(0, |sw| subnet.node(sw).guid.0);
            return Err(format!(
                "ERR 4E43: sw 0x{guid:04x} ({},{},{}) not in torus multicast master spanning tree ({} switches off it)",
                p[0],
                p[1],
                p[2],
                off.len()
            ));
        }
        let mut tree = crate::mcast::MasterTree {
            root: g
                .switch_at(root)
                .ok_or("ERR 4E43: the root is not a switch")?,
            parent: vec![None; subnet.nodes.len()],
        };
        for (a, up) in parent.iter().enumerate() {
            let Some((u, gi)) = *up else { continue };
            let (Some(sw), Some(usw)) = (g.switch_at(a), g.switch_at(u)) else {
                continue;
            };
            let links: Vec<(PortNum, PortNum)> = self
                .group(u, gi)
                .iter()
                .filter_map(|&p| {
                    g.neighbors(u)
                        .iter()
                        .find(|e| e.port == p && e.to as usize == a)
                })
                .map(|e| (PortNum(e.port), PortNum(e.remote_port)))
                .collect();
            if let Some(slot) = tree.parent.get_mut(sw.idx()) {
                *slot = (!links.is_empty()).then_some((usw, links));
            }
        }
        Ok(tree)
    }
}

impl Torus2QoS {
    /// OpenSM `routable_torus`, plus the refusal of a missing switch without 4 VLs.
    fn check_routable(
        &self,
        t: &Torus,
        sw_vls: u8,
        log: &mut Vec<String>,
    ) -> Result<(), RouteError> {
        let [x, y, z] = t.size;
        let missing: Vec<[usize; 3]> = (0..z)
            .flat_map(|k| (0..y).flat_map(move |j| (0..x).map(move |i| [i, j, k])))
            .filter(|&p| t.at(p).is_none())
            .collect();
        for p in &missing {
            log.push(format!(
                "routable_torus: Missing torus switch at {},{},{}",
                p[0], p[1], p[2]
            ));
        }
        let mut deadlock = false;
        if missing.len() > 1 {
            let col = (missing[0][0], missing[0][1]);
            for p in &missing {
                if (p[0], p[1]) != col {
                    deadlock = true;
                }
                let below = t.step(*p, 2, -1).and_then(|q| t.at(q));
                let above = t.step(*p, 2, 1).and_then(|q| t.at(q));
                if below.is_some() && above.is_some() {
                    deadlock = true;
                }
            }
        }
        if deadlock {
            return Err(fail(
                "ERR 4E38: missing switch topology ==> message deadlock! (missing switches must be adjacent in one Z column)"
                    .to_string(),
            ));
        }
        if !missing.is_empty() && sw_vls < 4 {
            return Err(fail(format!(
                "a missing switch needs 4 data VLs on switch ports to route around it without credit loops (have {sw_vls})"
            )));
        }
        for d in 0..3 {
            let (a, b) = [(1, 2), (0, 2), (0, 1)][d];
            for u in 0..t.size[a] {
                for v in 0..t.size[b] {
                    let (mut b2g, mut g2b) = (0, 0);
                    for w in 0..t.size[d] {
                        let mut p = [0; 3];
                        p[d] = w;
                        p[a] = u;
                        p[b] = v;
                        let Some(s) = t.at(p) else { continue };
                        if t.group(s, 2 * d).is_empty() {
                            b2g += 1;
                        }
                        if t.group(s, 2 * d + 1).is_empty() {
                            g2b += 1;
                        }
                    }
                    let dn = ["x", "y", "z"][d];
                    let (an, bn) = (["x", "y", "z"][a], ["x", "y", "z"][b]);
                    if b2g != g2b {
                        return Err(fail(format!(
                            "ERR 4E32: strange failures in {dn} ring at {an}={u} {bn}={v} b2g_cnt {b2g} g2b_cnt {g2b}"
                        )));
                    }
                    if b2g > 1 {
                        return Err(fail(format!(
                            "ERR 4E33: disjoint failures in {dn} ring at {an}={u} {bn}={v}"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

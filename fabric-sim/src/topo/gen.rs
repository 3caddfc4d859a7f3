//! Topology generators from short specs.
//!
//! A spec is `name:a,b,...[,key=value...]`: positional integers, then options. Every generator
//! is deterministic: the same spec gives the same topology, byte for byte.
//!
//! | spec | fabric |
//! |---|---|
//! | `fat-tree:2,R` | 2-level folded Clos of radix-R switches: R leaves, each with R/2 hosts and R/2 uplinks, and R/2 spines linked to every leaf. 3R/2 switches, R²/2 CAs (R=36: 54, 648). |
//! | `fat-tree:3,R` | 3-level fat tree (k-ary fat tree, k = R): R pods of R/2 edge and R/2 aggregation switches, (R/2)² cores. 5R²/4 switches, R³/4 CAs (R=36: 1,620 and 11,664; R=74: 6,845 and 101,306). |
//! | `kary-ntree:k,n` | k-ary n-tree: n levels of k^(n-1) switches with 2k ports, k^n CAs. |
//! | `torus:X,Y[,Z]`, `mesh:X,Y[,Z]` | one switch per coordinate, `cas=N` CAs on each (default 1); torus links wrap around. |
//! | `hypercube:D` | 2^D switches, switch *i* linked to *i* XOR 2^d for each dimension *d* < D; `cas=N` CAs on each (default 1). |
//! | `dragonfly:G,L,S,H` | dragonfly+: G groups, each a complete bipartite graph of L leaves and S spines, H CAs per leaf; every pair of groups joined by `links=M` global spine-to-spine links (default 1). |
//! | `random:S,C,E,seed` | S switches (`ports=P`, default 36) joined by a random spanning tree plus E extra random links (so cycles), and C dual-port CAs whose two ports go to two different random switches. |
//!
//! Options:
//! - fat trees: `hosts=H` CAs per leaf/edge switch (partial population, default R/2);
//!   `leaves=N` (2-level, default R) or `pods=P` (3-level, default R) for a partial tree;
//!   `par=P` parallel links: the top tier uses bundles of P links, so there are P times fewer
//!   spines (2-level; `leaves` then defaults to R/P) or cores (3-level; `pods` then defaults
//!   to R/P, and `pods` × `par` must be at most R);
//! - all generators: `rate=4xEDR` (link width and speed, default 4xSDR as ibsim),
//!   `mtu=1..5`, `vl=1..5`.
//!
//! ## Port numbering
//! - fat-tree:2: leaf ports 1..=H face CAs, port R/2+1+s·P+k is the k-th link to spine s;
//!   spine port 1+l·P+k is the k-th link to leaf l.
//! - fat-tree:3: edge ports 1..=H face CAs, port R/2+1+a goes to aggregation switch a of the
//!   pod; aggregation port 1+e goes to edge e, port R/2+1+c·P+k to core (a, c); core
//!   (a, c) port 1+p·P+k goes to pod p.
//! - kary-ntree: switch (level l, word w) — level 0 is the top — has down ports 1..=k (port
//!   d+1 reaches the switch below whose digit l is d) and up ports k+1..=2k (port k+1+d reaches
//!   the switch above whose digit l is d). CA h sits on leaf h mod k^(n-1), port h div k^(n-1) + 1.
//! - torus/mesh: port 2d+1 goes to +dimension d, port 2d+2 to −d (d = 0 for X); CA ports
//!   follow (2·dims+1 …). A torus dimension of size 2 gets two parallel links; size 1 none.
//! - hypercube: port d+1 is dimension d on both ends of every cable (as OpenSM's dor needs);
//!   CA ports follow (D+1 …). Switch *i* is named `sw-<i in binary, D digits>`.
//! - dragonfly: leaf ports 1..=H face CAs, port H+1+s goes to spine s; spine port 1+l goes to
//!   leaf l, ports L+1… are global.
//! - random: ports are used in increasing order as links are made.
//!
//! ## GUID scheme
//! GUIDs are handed out in creation order, as ibsim's counters would: switch *i* (0-based) has
//! node GUID `0x0002_0000_0000_0000 + i` and every port shares it; CA GUIDs start at
//! `0x0001_0000_0000_0000` and each CA consumes NumPorts + 1 GUIDs (node GUID *g*, port *p* =
//! *g* + *p*). Switches are created before CAs, tier by tier, so a GUID identifies a node's
//! position. Node names (`leaf-3`, `core-0-5`, `h-2-7`…) are also the NodeDescriptions.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use ibmad::{Guid, NodeType, PortNum};

use super::attrs::{LinkAttrs, LinkSpeed, LinkWidth, Mtu, VlCap};
use super::error::{SpecError, TopoError};
use super::model::{NewNode, NodeId, PortRef, Topology};

/// First switch GUID of generated fabrics.
pub const SWITCH_GUID_BASE: u64 = 0x0002_0000_0000_0000;
/// First CA GUID of generated fabrics.
pub const CA_GUID_BASE: u64 = 0x0001_0000_0000_0000;

/// The generator names [`Topology::generate`] accepts.
pub const GENERATORS: [&str; 7] = [
    "fat-tree",
    "kary-ntree",
    "torus",
    "mesh",
    "hypercube",
    "dragonfly",
    "random",
];

/// Refuse specs that would build more nodes than this: about five times what a subnet's
/// unicast LID space (49,151 LIDs) can address, so the 100k-CA scale fabrics
/// (`fat-tree:3,74`, 108,151 nodes) still load for the simulator and topology benchmarks,
/// while a typo such as `dragonfly:100,100,100,100` (1 M CAs) is refused at once instead of
/// building for minutes.
pub const MAX_NODES: u64 = 250_000;

/// Refuse specs whose port slots would exceed this (16 Mi slots of 24 bytes = 384 MiB).
pub const MAX_PORT_SLOTS: u64 = 16 << 20;

/// The largest positional argument (other than a random seed), so size arithmetic cannot
/// overflow.
const MAX_ARG: u64 = 1 << 20;

/// True if `name` is one of [`GENERATORS`].
#[must_use]
pub fn is_generator(name: &str) -> bool {
    GENERATORS.contains(&name)
}

impl Topology {
    /// Builds a topology from a spec such as `fat-tree:3,36` (see the module docs).
    pub fn generate(spec: &str) -> Result<Topology, SpecError> {
        let s = Spec::parse(spec)?;
        let r = match s.name {
            "fat-tree" => fat_tree(&s),
            "kary-ntree" => kary_ntree(&s),
            "torus" => grid(&s, true),
            "mesh" => grid(&s, false),
            "hypercube" => hypercube(&s),
            "dragonfly" => dragonfly(&s),
            "random" => random(&s),
            other => Err(s.bad(format!(
                "unknown generator {other:?}; expected one of {}",
                GENERATORS.join(", ")
            ))),
        };
        let t = r?;
        t.validate().map_err(|e| s.topo(e))?;
        Ok(t)
    }
}

/// The shape of a generated `torus:`/`mesh:` fabric, for the torus-2QoS.conf that describes
/// it (`ibsm topo --write-torus-conf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Switches along X, Y and Z (1 for a dimension the spec leaves out).
    pub size: [u64; 3],
    /// Whether the links wrap around (torus) or not (mesh).
    pub wrap: bool,
}

impl Grid {
    /// The grid of a `torus:` or `mesh:` spec, its dimensions checked as
    /// [`Topology::generate`] checks them; `None` for another generator.
    pub fn of_spec(spec: &str) -> Result<Option<Grid>, SpecError> {
        let s = Spec::parse(spec)?;
        let wrap = match s.name {
            "torus" => true,
            "mesh" => false,
            _ => return Ok(None),
        };
        let dims = grid_dims(&s, wrap)?;
        let mut size = [1; 3];
        size[..dims.len()].copy_from_slice(&dims);
        Ok(Some(Grid { size, wrap }))
    }
}

/// The root switches of a generated tree or Dragonfly+ fabric, by node GUID in creation order:
/// the spines of `fat-tree:2`, the cores of `fat-tree:3`, level 0 of `kary-ntree`, and the
/// spines of every `dragonfly` group (the islands' roots). For a `root_guid_file` (updn, ftree,
/// dfp, dfp2); `None` for a generator without a top tier (torus, mesh, hypercube, random).
pub fn root_guids(spec: &str) -> Result<Option<Vec<Guid>>, SpecError> {
    let Some(is_root) = root_rule(&Spec::parse(spec)?) else {
        return Ok(None);
    };
    let t = Topology::generate(spec)?;
    Ok(Some(
        t.nodes_of_type(NodeType::SWITCH)
            .filter_map(|id| t.node(id))
            .filter(|n| is_root(n.desc()))
            .map(|n| n.guid())
            .collect(),
    ))
}

/// Whether `spec` names a generator with a top tier ([`root_guids`] gives it), without
/// generating the fabric.
#[must_use]
pub fn has_top_tier(spec: &str) -> bool {
    Spec::parse(spec).is_ok_and(|s| root_rule(&s).is_some())
}

/// Which switches a generator's top tier holds, by the documented node names.
fn root_rule(s: &Spec<'_>) -> Option<fn(&str) -> bool> {
    match (s.name, s.args.first()) {
        ("fat-tree", Some(2)) => Some(|n| n.starts_with("spine-")),
        ("fat-tree", _) => Some(|n| n.starts_with("core-")),
        ("kary-ntree", _) => Some(|n| n.starts_with("s0-")),
        ("dragonfly", _) => Some(|n| n.contains("-spine-")),
        _ => None,
    }
}

/// A parsed spec: name, positional numbers, options.
struct Spec<'a> {
    text: &'a str,
    name: &'a str,
    args: Vec<u64>,
    opts: Vec<(&'a str, &'a str)>,
    attrs: LinkAttrs,
}

impl<'a> Spec<'a> {
    fn parse(text: &'a str) -> Result<Spec<'a>, SpecError> {
        let bad = |reason: String| SpecError::Bad {
            spec: text.to_string(),
            reason,
        };
        let (name, rest) = text
            .split_once(':')
            .ok_or_else(|| bad("expected name:args, e.g. fat-tree:2,36".into()))?;
        let name = name.trim();
        if !is_generator(name) {
            return Err(bad(format!(
                "unknown generator {name:?}; expected one of {}",
                GENERATORS.join(", ")
            )));
        }
        let mut args = Vec::new();
        let mut opts = Vec::new();
        for part in rest.split(',').map(str::trim) {
            if let Some((k, v)) = part.split_once('=') {
                opts.push((k.trim(), v.trim()));
            } else if !opts.is_empty() {
                return Err(bad(format!("positional argument {part:?} after an option")));
            } else {
                let n = part
                    .parse::<u64>()
                    .map_err(|_| bad(format!("argument {part:?} is not a non-negative integer")))?;
                args.push(n);
            }
        }
        let mut s = Spec {
            text,
            name,
            args,
            opts,
            attrs: LinkAttrs::default(),
        };
        if let Some(rate) = s.opt_str("rate") {
            let parsed = rate.split_once('x').and_then(|(w, sp)| {
                Some((
                    LinkWidth::from_lanes(w.parse().ok()?)?,
                    LinkSpeed::from_name(sp)?,
                ))
            });
            let (w, sp) = parsed.ok_or_else(|| {
                bad(format!(
                    "rate {rate:?} is not like 4xQDR (1x/2x/4x/8x/12x, SDR..NDR)"
                ))
            })?;
            s.attrs.width = w;
            s.attrs.speed = sp;
        }
        if let Some(m) = s.opt("mtu", 5)? {
            s.attrs.mtu = Mtu::from_code(m as u8).ok_or_else(|| bad("mtu must be 1..=5".into()))?;
        }
        if let Some(v) = s.opt("vl", 5)? {
            s.attrs.vl_cap =
                VlCap::from_code(v as u8).ok_or_else(|| bad("vl must be 1..=5".into()))?;
        }
        Ok(s)
    }

    fn bad(&self, reason: String) -> SpecError {
        SpecError::Bad {
            spec: self.text.to_string(),
            reason,
        }
    }

    fn topo(&self, source: TopoError) -> SpecError {
        SpecError::Topo {
            spec: self.text.to_string(),
            source,
        }
    }

    /// Checks the positional count and the option names.
    fn expect(&self, min: usize, max: usize, usage: &str, keys: &[&str]) -> Result<(), SpecError> {
        if self.args.len() < min || self.args.len() > max {
            return Err(self.bad(format!("usage: {usage}")));
        }
        // A random graph's fourth argument is its seed and may be any u64.
        let sizes = if self.name == "random" {
            3
        } else {
            self.args.len()
        };
        if let Some(a) = self.args.iter().take(sizes).find(|a| **a > MAX_ARG) {
            return Err(self.bad(format!("argument {a} is too large (at most {MAX_ARG})")));
        }
        for (k, _) in &self.opts {
            if !keys.contains(k) && !["rate", "mtu", "vl"].contains(k) {
                return Err(self.bad(format!(
                    "unknown option {k:?}; {} takes {}",
                    self.name,
                    if keys.is_empty() {
                        "rate=, mtu=, vl=".to_string()
                    } else {
                        format!("{}=, rate=, mtu=, vl=", keys.join("=, "))
                    }
                )));
            }
        }
        Ok(())
    }

    fn opt_str(&self, key: &str) -> Option<&'a str> {
        self.opts
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    fn opt(&self, key: &str, max: u64) -> Result<Option<u64>, SpecError> {
        match self.opt_str(key) {
            None => Ok(None),
            Some(v) => {
                let n = v
                    .parse::<u64>()
                    .map_err(|_| self.bad(format!("{key}={v:?} is not an integer")))?;
                if n > max {
                    return Err(self.bad(format!("{key}={n} is above {max}")));
                }
                Ok(Some(n))
            }
        }
    }
}

/// Node and link creation with the documented GUID scheme.
struct Builder<'s, 'a> {
    spec: &'s Spec<'a>,
    t: Topology,
    next_switch: u64,
    next_ca: u64,
}

impl<'s, 'a> Builder<'s, 'a> {
    fn new(spec: &'s Spec<'a>, nodes: u64, ports: u64) -> Result<Self, SpecError> {
        if nodes > MAX_NODES {
            return Err(spec.bad(format!(
                "{nodes} nodes is more than the generator limit of {MAX_NODES} (a subnet addresses at most 49151 unicast LIDs)"
            )));
        }
        if ports > MAX_PORT_SLOTS {
            return Err(spec.bad(format!(
                "{ports} port slots is more than the generator limit of {MAX_PORT_SLOTS}"
            )));
        }
        Ok(Builder {
            spec,
            t: Topology::with_capacity(nodes as usize, ports as usize),
            next_switch: SWITCH_GUID_BASE,
            next_ca: CA_GUID_BASE,
        })
    }

    fn switch(&mut self, ports: u64, name: String) -> Result<NodeId, SpecError> {
        let ports = self.ports(ports)?;
        let g = self.next_switch;
        self.next_switch += 1;
        self.t
            .add_node(NewNode::new(NodeType::SWITCH, ports, Guid(g), name))
            .map_err(|e| self.spec.topo(e))
    }

    fn ca(&mut self, ports: u8, name: String) -> Result<NodeId, SpecError> {
        let g = self.next_ca;
        self.next_ca += u64::from(ports) + 1;
        self.t
            .add_node(NewNode::new(NodeType::CA, ports, Guid(g), name))
            .map_err(|e| self.spec.topo(e))
    }

    fn ports(&self, n: u64) -> Result<u8, SpecError> {
        u8::try_from(n)
            .ok()
            .filter(|n| (1..=PortNum::MAX.0).contains(n))
            .ok_or_else(|| {
                self.spec
                    .bad(format!("switches would need {n} ports; a node has 1..=254"))
            })
    }

    fn link(&mut self, a: NodeId, pa: u64, b: NodeId, pb: u64) -> Result<(), SpecError> {
        let r = |n: NodeId, p: u64| PortRef {
            node: n,
            port: PortNum(u8::try_from(p).unwrap_or(u8::MAX)),
        };
        let attrs = self.spec.attrs;
        self.t
            .connect_with(r(a, pa), r(b, pb), attrs)
            .map_err(|e| self.spec.topo(e))
    }
}

fn even_radix(s: &Spec<'_>, r: u64) -> Result<u64, SpecError> {
    if r < 2 || !r.is_multiple_of(2) || r > u64::from(PortNum::MAX.0) {
        return Err(s.bad(format!("radix {r} must be even and in 2..=254")));
    }
    Ok(r)
}

fn fat_tree(s: &Spec<'_>) -> Result<Topology, SpecError> {
    s.expect(
        2,
        2,
        "fat-tree:LEVELS,RADIX[,hosts=H][,leaves=N|pods=P][,par=P] with LEVELS 2 or 3",
        &["hosts", "leaves", "pods", "par"],
    )?;
    let r = even_radix(s, s.args[1])?;
    let half = r / 2;
    let hosts = s.opt("hosts", half)?.unwrap_or(half);
    let par = s.opt("par", half)?.unwrap_or(1);
    if par == 0 || !half.is_multiple_of(par) {
        return Err(s.bad(format!("par={par} must divide RADIX/2 = {half}")));
    }
    match s.args[0] {
        2 => {
            if s.opt_str("pods").is_some() {
                return Err(s.bad("pods= is for 3-level trees; use leaves=".into()));
            }
            let leaves = s.opt("leaves", r / par)?.unwrap_or(r / par);
            let spines = half / par;
            let mut b = Builder::new(
                s,
                spines + leaves + leaves * hosts,
                (spines + leaves) * (r + 1) + leaves * hosts * 2,
            )?;
            let spine_ids = (0..spines)
                .map(|i| b.switch(r, format!("spine-{i}")))
                .collect::<Result<Vec<_>, _>>()?;
            let leaf_ids = (0..leaves)
                .map(|i| b.switch(r, format!("leaf-{i}")))
                .collect::<Result<Vec<_>, _>>()?;
            for (l, &leaf) in leaf_ids.iter().enumerate() {
                for (sp, &spine) in spine_ids.iter().enumerate() {
                    for k in 0..par {
                        let l = l as u64;
                        b.link(leaf, half + 1 + sp as u64 * par + k, spine, 1 + l * par + k)?;
                    }
                }
            }
            for (l, &leaf) in leaf_ids.iter().enumerate() {
                for h in 0..hosts {
                    let ca = b.ca(1, format!("h-{l}-{h}"))?;
                    b.link(leaf, 1 + h, ca, 1)?;
                }
            }
            Ok(b.t)
        }
        3 => {
            if s.opt_str("leaves").is_some() {
                return Err(s.bad("leaves= is for 2-level trees; use pods=".into()));
            }
            let pods = s.opt("pods", r)?.unwrap_or(r / par);
            if pods == 0 || pods * par > r {
                return Err(s.bad(format!(
                    "pods={pods} × par={par} must be in 1..=RADIX ({r}): each core has {r} ports"
                )));
            }
            let per_group = half / par; // cores per aggregation index
            let cores = half * per_group;
            let edges = pods * half;
            let switches = cores + 2 * edges;
            let cas = edges * hosts;
            let mut b = Builder::new(s, switches + cas, switches * (r + 1) + cas * 2)?;
            let mut core_ids = Vec::with_capacity(cores as usize);
            for a in 0..half {
                for c in 0..per_group {
                    core_ids.push(b.switch(r, format!("core-{a}-{c}"))?);
                }
            }
            let mut agg_ids = Vec::with_capacity(edges as usize);
            for p in 0..pods {
                for a in 0..half {
                    agg_ids.push(b.switch(r, format!("agg-{p}-{a}"))?);
                }
            }
            let mut edge_ids = Vec::with_capacity(edges as usize);
            for p in 0..pods {
                for e in 0..half {
                    edge_ids.push(b.switch(r, format!("edge-{p}-{e}"))?);
                }
            }
            for p in 0..pods {
                for a in 0..half {
                    let agg = agg_ids[(p * half + a) as usize];
                    for e in 0..half {
                        b.link(edge_ids[(p * half + e) as usize], half + 1 + a, agg, 1 + e)?;
                    }
                    for c in 0..per_group {
                        let core = core_ids[(a * per_group + c) as usize];
                        for k in 0..par {
                            b.link(agg, half + 1 + c * par + k, core, 1 + p * par + k)?;
                        }
                    }
                }
            }
            for p in 0..pods {
                for e in 0..half {
                    let edge = edge_ids[(p * half + e) as usize];
                    for h in 0..hosts {
                        let ca = b.ca(1, format!("h-{p}-{e}-{h}"))?;
                        b.link(edge, 1 + h, ca, 1)?;
                    }
                }
            }
            Ok(b.t)
        }
        l => Err(s.bad(format!("fat-tree levels must be 2 or 3, not {l}"))),
    }
}

fn kary_ntree(s: &Spec<'_>) -> Result<Topology, SpecError> {
    s.expect(2, 2, "kary-ntree:K,N (K >= 2, N >= 1, 2K <= 254)", &[])?;
    let (k, n) = (s.args[0], s.args[1]);
    if k < 2 || 2 * k > u64::from(PortNum::MAX.0) || n == 0 || n > 16 {
        return Err(s.bad(format!(
            "K={k}, N={n}: K must be in 2..=127 and N in 1..=16"
        )));
    }
    let per_level = k
        .checked_pow((n - 1) as u32)
        .filter(|p| *p <= MAX_NODES)
        .ok_or_else(|| s.bad("too many switches".into()))?;
    let hosts = per_level * k;
    let switches = per_level * n;
    let mut b = Builder::new(s, switches + hosts, switches * (2 * k + 1) + hosts * 2)?;
    let mut ids = Vec::with_capacity(switches as usize);
    for l in 0..n {
        for w in 0..per_level {
            ids.push(b.switch(2 * k, format!("s{l}-{w}"))?);
        }
    }
    let id = |l: u64, w: u64| ids[(l * per_level + w) as usize];
    for l in 0..n.saturating_sub(1) {
        let place = k.pow(l as u32); // weight of digit l
        for w in 0..per_level {
            let digit = (w / place) % k;
            for d in 0..k {
                let below = w - digit * place + d * place;
                b.link(id(l, w), d + 1, id(l + 1, below), k + 1 + digit)?;
            }
        }
    }
    for h in 0..hosts {
        let ca = b.ca(1, format!("h{h}"))?;
        b.link(id(n - 1, h % per_level), h / per_level + 1, ca, 1)?;
    }
    Ok(b.t)
}

/// A grid spec's dimensions (one to three, each at least 1).
fn grid_dims(s: &Spec<'_>, wrap: bool) -> Result<Vec<u64>, SpecError> {
    let usage = if wrap {
        "torus:X,Y[,Z][,cas=N]"
    } else {
        "mesh:X,Y[,Z][,cas=N]"
    };
    s.expect(1, 3, usage, &["cas"])?;
    if s.args.contains(&0) {
        return Err(s.bad("every dimension must be at least 1".into()));
    }
    Ok(s.args.clone())
}

fn grid(s: &Spec<'_>, wrap: bool) -> Result<Topology, SpecError> {
    let dims = grid_dims(s, wrap)?;
    let cas = s.opt("cas", 254)?.unwrap_or(1);
    let nd = dims.len() as u64;
    let switches = dims
        .iter()
        .try_fold(1u64, |a, d| a.checked_mul(*d).filter(|v| *v <= MAX_NODES))
        .ok_or_else(|| s.bad("too many switches".into()))?;
    let ports = 2 * nd + cas;
    let mut b = Builder::new(
        s,
        switches * (1 + cas),
        switches * (ports + 1) + switches * cas * 2,
    )?;
    let coord = |mut i: u64| {
        let mut c = [0u64; 3];
        for (d, size) in dims.iter().enumerate() {
            c[d] = i % size;
            i /= size;
        }
        c
    };
    let index = |c: [u64; 3]| {
        dims.iter()
            .enumerate()
            .rev()
            .fold(0u64, |a, (d, size)| a * size + c[d])
    };
    let coord_name = |c: [u64; 3]| {
        c[..dims.len()]
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("-")
    };
    let mut ids = Vec::with_capacity(switches as usize);
    for i in 0..switches {
        ids.push(b.switch(ports, format!("sw-{}", coord_name(coord(i))))?);
    }
    for i in 0..switches {
        let c = coord(i);
        for (d, &size) in dims.iter().enumerate() {
            let last = c[d] + 1 == size;
            if size == 1 || (last && !wrap) {
                continue;
            }
            let mut n = c;
            n[d] = (c[d] + 1) % size;
            let d = d as u64;
            b.link(
                ids[i as usize],
                2 * d + 1,
                ids[index(n) as usize],
                2 * d + 2,
            )?;
        }
    }
    for i in 0..switches {
        let c = coord_name(coord(i));
        for k in 0..cas {
            let ca = b.ca(1, format!("ca-{c}-{k}"))?;
            b.link(ids[i as usize], 2 * nd + 1 + k, ca, 1)?;
        }
    }
    Ok(b.t)
}

fn hypercube(s: &Spec<'_>) -> Result<Topology, SpecError> {
    s.expect(
        1,
        1,
        "hypercube:DIMENSIONS[,cas=N] (DIMENSIONS 1..=16)",
        &["cas"],
    )?;
    let d = s.args[0];
    if d == 0 || d > 16 {
        return Err(s.bad(format!("DIMENSIONS={d} must be in 1..=16")));
    }
    let cas = s.opt("cas", 254)?.unwrap_or(1);
    let switches = 1u64 << d;
    let ports = d + cas;
    let mut b = Builder::new(
        s,
        switches * (1 + cas),
        switches * (ports + 1) + switches * cas * 2,
    )?;
    let name = |i: u64| format!("sw-{:0w$b}", i, w = d as usize);
    let ids = (0..switches)
        .map(|i| b.switch(ports, name(i)))
        .collect::<Result<Vec<_>, _>>()?;
    for i in 0..switches {
        for k in 0..d {
            let j = i ^ (1 << k);
            if j > i {
                b.link(ids[i as usize], k + 1, ids[j as usize], k + 1)?;
            }
        }
    }
    for i in 0..switches {
        for k in 0..cas {
            let ca = b.ca(1, format!("ca-{:0w$b}-{k}", i, w = d as usize))?;
            b.link(ids[i as usize], d + 1 + k, ca, 1)?;
        }
    }
    Ok(b.t)
}

fn dragonfly(s: &Spec<'_>) -> Result<Topology, SpecError> {
    s.expect(
        4,
        4,
        "dragonfly:GROUPS,LEAVES,SPINES,HOSTS[,links=M]",
        &["links"],
    )?;
    let (g, l, sp, h) = (s.args[0], s.args[1], s.args[2], s.args[3]);
    if g == 0 || l == 0 || sp == 0 {
        return Err(s.bad("GROUPS, LEAVES and SPINES must be at least 1".into()));
    }
    let m = s.opt("links", 254)?.unwrap_or(1);
    let slots = m * (g - 1); // global links per group
    let global_ports = slots.div_ceil(sp);
    let switches = g * (l + sp);
    let cas = g * l * h;
    let mut b = Builder::new(
        s,
        switches + cas,
        switches * (l + sp + h + global_ports + 1) + cas * 2,
    )?;
    let mut spine_ids = Vec::with_capacity((g * sp) as usize);
    let mut leaf_ids = Vec::with_capacity((g * l) as usize);
    for gi in 0..g {
        for si in 0..sp {
            spine_ids.push(b.switch(l + global_ports.max(1), format!("g{gi}-spine-{si}"))?);
        }
    }
    for gi in 0..g {
        for li in 0..l {
            leaf_ids.push(b.switch(h + sp, format!("g{gi}-leaf-{li}"))?);
        }
    }
    for gi in 0..g {
        for li in 0..l {
            for si in 0..sp {
                b.link(
                    leaf_ids[(gi * l + li) as usize],
                    h + 1 + si,
                    spine_ids[(gi * sp + si) as usize],
                    1 + li,
                )?;
            }
        }
    }
    // Global slot t of group i carries copy t % m of the link to the (t / m)-th other group.
    let slot = |i: u64, j: u64, c: u64| {
        let rank = if j < i { j } else { j - 1 };
        let t = rank * m + c;
        (i * sp + t % sp, l + 1 + t / sp)
    };
    for i in 0..g {
        for j in (i + 1)..g {
            for c in 0..m {
                let (a, pa) = slot(i, j, c);
                let (z, pz) = slot(j, i, c);
                b.link(spine_ids[a as usize], pa, spine_ids[z as usize], pz)?;
            }
        }
    }
    for gi in 0..g {
        for li in 0..l {
            for hi in 0..h {
                let ca = b.ca(1, format!("g{gi}-h-{li}-{hi}"))?;
                b.link(leaf_ids[(gi * l + li) as usize], 1 + hi, ca, 1)?;
            }
        }
    }
    Ok(b.t)
}

fn random(s: &Spec<'_>) -> Result<Topology, SpecError> {
    s.expect(
        4,
        4,
        "random:SWITCHES,CAS,EXTRA_LINKS,SEED[,ports=P]",
        &["ports"],
    )?;
    let (n, cas, extra, seed) = (s.args[0], s.args[1], s.args[2], s.args[3]);
    let ports = s.opt("ports", u64::from(PortNum::MAX.0))?.unwrap_or(36);
    if n == 0 || ports < 2 {
        return Err(s.bad("need at least 1 switch with at least 2 ports".into()));
    }
    let need = 2 * (n - 1) + 2 * extra + 2 * cas;
    if need > n.saturating_mul(ports) {
        return Err(s.bad(format!(
            "{need} switch ports needed but {n} switches × {ports} ports = {} available",
            n * ports
        )));
    }
    let mut b = Builder::new(s, n + cas, n * (ports + 1) + cas * 3)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let ids = (0..n)
        .map(|i| b.switch(ports, format!("sw-{i}")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut used = vec![0u64; n as usize];
    // Switch indices with a free port; swap-removed when full.
    let mut free: Vec<usize> = Vec::with_capacity(n as usize);
    let take = |i: usize, used: &mut Vec<u64>, free: &mut Vec<usize>| {
        used[i] += 1;
        if used[i] == ports {
            if let Some(pos) = free.iter().position(|&f| f == i) {
                free.swap_remove(pos);
            }
        }
        used[i]
    };
    free.push(0);
    for i in 1..n as usize {
        // Spanning tree: attach switch i to a random earlier switch with a free port.
        let j = free[rng.gen_range(0..free.len())];
        free.push(i);
        let pj = take(j, &mut used, &mut free);
        let pi = take(i, &mut used, &mut free);
        b.link(ids[j], pj, ids[i], pi)?;
    }
    let pick_two = |rng: &mut ChaCha8Rng, free: &Vec<usize>, used: &Vec<u64>| match free.len() {
        0 => None,
        1 => (ports - used[free[0]] >= 2).then_some((free[0], free[0])),
        len => {
            let a = rng.gen_range(0..len);
            let mut z = rng.gen_range(0..len - 1);
            if z >= a {
                z += 1;
            }
            Some((free[a], free[z]))
        }
    };
    for _ in 0..extra {
        let (x, y) = match pick_two(&mut rng, &free, &used) {
            Some((x, y)) if x != y => (x, y),
            _ => {
                return Err(s.bad("ran out of switches with free ports for the extra links".into()))
            }
        };
        let px = take(x, &mut used, &mut free);
        let py = take(y, &mut used, &mut free);
        b.link(ids[x], px, ids[y], py)?;
    }
    for c in 0..cas {
        let (x, y) = pick_two(&mut rng, &free, &used)
            .ok_or_else(|| s.bad("ran out of free switch ports for the CAs".into()))?;
        let ca = b.ca(2, format!("ca-{c}"))?;
        let px = take(x, &mut used, &mut free);
        b.link(ids[x], px, ca, 1)?;
        let py = take(y, &mut used, &mut free);
        b.link(ids[y], py, ca, 2)?;
    }
    Ok(b.t)
}

//! The route verifier: judges a set of LFTs (ours, or any dump read with
//! [`crate::routing::file::parse_lft_dump`]) against a subnet.
//!
//! Checks:
//! 1. **reachability** — every CA port reaches every CA LID by walking the tables, with no dead
//!    end and no forwarding loop, and how many pairs took more switch hops than the shortest
//!    path ([`crate::check::check_all_pairs`], one walk per source switch and destination LID),
//!    plus the longest and mean route and the largest excess over the shortest path
//!    ([`HopStats`]);
//! 2. **credit loops** — the channel dependency graph (CDG) of all CA-to-CA routes on one VL: a
//!    node per switch-to-switch link direction, an edge `a→b` when some route enters a switch
//!    on `a` and leaves on `b`. Any cycle is a potential credit-loop deadlock and is reported
//!    as the list of links that form it. The graph is built per (source switch, destination
//!    LID) — every CA behind one switch follows the same tables — so k36's 136 M routes are
//!    7.6 M walks;
//! 3. **balance** — routes (CA-port pairs) per switch egress port to another switch, per
//!    switch (all egress ports), and per tree level (levels counted in switch hops from the
//!    nearest switch with a CA; leaves are level 0), as min / max / mean / stddev.
//!
//! A report [`Report::is_ok`] when there is no dead end, no loop and no CDG cycle; detours
//! (non-shortest routes, which updn may take) are reported but are not failures.
//!
//! The **verdict** ([`Report::verdict`]) is what `ibsm sim` and `ibsm verify` both exit on: it
//! holds the tables to what the engine that computed them promises ([`Promise::of`]: shortest
//! paths for minhop and dor; reachability and no credit loop for updn, dnup, ftree and the VL
//! engines), treats a credit loop as a failure for every engine unless the caller allows it
//! ([`Policy::allow_credit_loops`]), and a check of zero CA pairs as a failure unless allowed
//! ([`Policy::allow_no_pairs`]). Each [`Failure`] names what failed.

pub mod vl;

use std::fmt::Write as _;

use ibmad::{Lid, PortNum};

use crate::check::{check_all_pairs_with, Reachability};
use crate::routing::graph::{link_usable, HopMatrix};
use crate::routing::{Lfts, NO_PATH};
use crate::subnet::{NodeId, Subnet};

/// One direction of a link: leaves `from` on `port`, arrives at `to` on `to_port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Channel {
    /// Sending switch.
    pub from: NodeId,
    /// Its egress port.
    pub port: PortNum,
    /// Receiving node.
    pub to: NodeId,
    /// Its ingress port.
    pub to_port: PortNum,
}

impl Channel {
    /// `"desc" (0xGUID) port P -> "desc" (0xGUID) port Q`.
    #[must_use]
    pub fn describe(&self, subnet: &Subnet) -> String {
        let n = |id: NodeId| {
            let nd = subnet.node(id);
            format!("'{}' (0x{:016x})", nd.desc, nd.guid.0)
        };
        format!(
            "{} port {} -> {} port {}",
            n(self.from),
            self.port.0,
            n(self.to),
            self.to_port.0
        )
    }
}

/// `'desc' (0xGUID) port P: reason` for a CA port the check left out.
#[must_use]
pub fn describe_skipped(subnet: &Subnet, k: &crate::check::Skipped) -> String {
    let nd = subnet.node(k.node);
    format!(
        "'{}' (0x{:016x}) port {}: {}",
        nd.desc, nd.guid.0, k.port.0, k.reason
    )
}

/// Summary statistics of a set of counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Number of values.
    pub count: u64,
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Population standard deviation.
    pub stddev: f64,
}

impl Stats {
    /// Statistics of `values`.
    #[must_use]
    pub fn of(values: impl Iterator<Item = u64> + Clone) -> Stats {
        let count = values.clone().count() as u64;
        if count == 0 {
            return Stats::default();
        }
        let sum: f64 = values.clone().map(|v| v as f64).sum();
        let mean = sum / count as f64;
        let var = values
            .clone()
            .map(|v| (v as f64 - mean) * (v as f64 - mean))
            .sum::<f64>()
            / count as f64;
        Stats {
            count,
            min: values.clone().min().unwrap_or(0),
            max: values.max().unwrap_or(0),
            mean,
            stddev: var.sqrt(),
        }
    }

    fn json(&self) -> String {
        format!(
            "{{\"count\":{},\"min\":{},\"max\":{},\"mean\":{:.3},\"stddev\":{:.3}}}",
            self.count, self.min, self.max, self.mean, self.stddev
        )
    }

    fn text(&self) -> String {
        format!(
            "min {} max {} mean {:.1} stddev {:.2} (over {})",
            self.min, self.max, self.mean, self.stddev, self.count
        )
    }
}

/// Route balance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Balance {
    /// Routes per switch egress port that leads to another switch.
    pub per_link: Stats,
    /// Routes per switch egress port that leads to a CA.
    pub per_ca_port: Stats,
    /// Routes through each switch (sum over its egress ports).
    pub per_switch: Stats,
    /// Per level (0 = switches with CAs): routes per switch-to-switch egress port.
    pub per_level: Vec<(u32, Stats)>,
    /// The most loaded switch-to-switch link direction and its routes.
    pub busiest_link: Option<(Channel, u64)>,
}

/// Switch-to-switch hop counts of the CA pairs that arrived (weighted by pairs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HopStats {
    /// Longest route.
    pub max: u32,
    /// Mean route length.
    pub mean: f64,
    /// Largest excess over the shortest path between the two switches.
    pub max_extra: u32,
}

/// The verifier's result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Reachability and hop counts.
    pub reach: Reachability,
    /// Route lengths.
    pub hops: HopStats,
    /// Nodes (switch-to-switch link directions) of the CDG.
    pub cdg_channels: u64,
    /// Distinct dependencies (edges) of the CDG.
    pub cdg_dependencies: u64,
    /// A CDG cycle, as the links that form it in order, if any. After
    /// [`verify_with_vls`] this is the VL-aware check's cycle (its links), not the one-VL one.
    pub credit_loop: Option<Vec<Channel>>,
    /// Balance.
    pub balance: Balance,
    /// The VL-aware check ([`vl`]), when the tables were judged with their VLs.
    pub vl: Option<vl::VlReport>,
}

impl Report {
    /// No dead end, no loop, no credit loop.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.reach.unreachable_count == 0 && self.reach.loops == 0 && self.credit_loop.is_none()
    }

    /// Human summary.
    #[must_use]
    pub fn summary(&self, subnet: &Subnet) -> String {
        let r = &self.reach;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "reachability: {} CA pairs ({} table walks): {} unreachable, {} looping, {} longer than the shortest path",
            r.pairs, r.walks, r.unreachable_count, r.loops, r.non_shortest
        );
        let _ = writeln!(
            s,
            "hops: max {} mean {:.2}, at most {} more than the shortest path",
            self.hops.max, self.hops.mean, self.hops.max_extra
        );
        if r.direct_pairs > 0 {
            let _ = writeln!(
                s,
                "  of which {} between CA ports cabled back to back",
                r.direct_pairs
            );
        }
        let _ = writeln!(
            s,
            "CA-to-switch routes: {} checked, {} dead-end or loop, {} longer than the shortest path",
            r.switch_pairs, r.switch_failures, r.switch_non_shortest
        );
        for (a, b) in r.unreachable.iter().take(8) {
            let _ = writeln!(s, "  unreachable: LID {} -> LID {}", a.0, b.0);
        }
        if r.skipped_count > 0 {
            let _ = writeln!(s, "skipped {} CA port(s):", r.skipped_count);
            for k in &r.skipped {
                let _ = writeln!(s, "  {}", describe_skipped(subnet, k));
            }
            if r.skipped_count > r.skipped.len() as u64 {
                let _ = writeln!(s, "  ...");
            }
        }
        let _ = writeln!(
            s,
            "credit loops: CDG of {} channels, {} dependencies: {}",
            self.cdg_channels,
            self.cdg_dependencies,
            match (&self.vl, &self.credit_loop) {
                (Some(_), _) => "judged on (link, VL) channels below",
                (None, Some(_)) => "CYCLE FOUND",
                (None, None) => "acyclic (deadlock-free on one VL)",
            }
        );
        if let Some(v) = &self.vl {
            s.push_str(&v.summary(subnet));
        } else if let Some(c) = &self.credit_loop {
            for ch in c {
                let _ = writeln!(s, "  {}", ch.describe(subnet));
            }
        }
        let b = &self.balance;
        let _ = writeln!(s, "routes per switch-to-switch link: {}", b.per_link.text());
        let _ = writeln!(s, "routes per CA-facing port: {}", b.per_ca_port.text());
        let _ = writeln!(s, "routes per switch: {}", b.per_switch.text());
        for (l, st) in &b.per_level {
            let _ = writeln!(s, "  level {l} links: {}", st.text());
        }
        if let Some((c, n)) = &b.busiest_link {
            let _ = writeln!(s, "busiest link: {} ({n} routes)", c.describe(subnet));
        }
        s
    }

    /// The report as one JSON object.
    #[must_use]
    pub fn to_json(&self, subnet: &Subnet) -> String {
        let r = &self.reach;
        let esc = |t: &str| t.replace('\\', "\\\\").replace('"', "\\\"");
        let ch = |c: &Channel| {
            format!(
                "{{\"from\":\"0x{:016x}\",\"from_desc\":\"{}\",\"port\":{},\"to\":\"0x{:016x}\",\"to_desc\":\"{}\",\"to_port\":{}}}",
                subnet.node(c.from).guid.0,
                esc(&subnet.node(c.from).desc),
                c.port.0,
                subnet.node(c.to).guid.0,
                esc(&subnet.node(c.to).desc),
                c.to_port.0
            )
        };
        let unreachable: Vec<String> = r
            .unreachable
            .iter()
            .map(|(a, b)| format!("[{},{}]", a.0, b.0))
            .collect();
        let skipped: Vec<String> = r
            .skipped
            .iter()
            .map(|k| {
                format!(
                    "{{\"guid\":\"0x{:016x}\",\"desc\":\"{}\",\"port\":{},\"reason\":\"{}\"}}",
                    subnet.node(k.node).guid.0,
                    esc(&subnet.node(k.node).desc),
                    k.port.0,
                    k.reason
                )
            })
            .collect();
        let cycle = self.credit_loop.as_ref().map_or("null".to_string(), |c| {
            format!("[{}]", c.iter().map(ch).collect::<Vec<_>>().join(","))
        });
        let levels: Vec<String> = self
            .balance
            .per_level
            .iter()
            .map(|(l, st)| format!("{{\"level\":{l},\"links\":{}}}", st.json()))
            .collect();
        let busiest = self
            .balance
            .busiest_link
            .as_ref()
            .map_or("null".to_string(), |(c, n)| {
                format!("{{\"link\":{},\"routes\":{n}}}", ch(c))
            });
        format!(
            "{{\"ok\":{},\"pairs\":{},\"walks\":{},\"unreachable\":{},\"unreachable_examples\":[{}],\"loops\":{},\"non_shortest\":{},\"switch_pairs\":{},\"switch_failures\":{},\"switch_non_shortest\":{},\"direct_pairs\":{},\"skipped_count\":{},\"skipped\":[{}],\"hops\":{{\"max\":{},\"mean\":{:.3},\"max_extra\":{}}},\"cdg_channels\":{},\"cdg_dependencies\":{},\"credit_loop\":{},\"balance\":{{\"per_link\":{},\"per_ca_port\":{},\"per_switch\":{},\"per_level\":[{}],\"busiest_link\":{}}}}}",
            self.is_ok(),
            r.pairs,
            r.walks,
            r.unreachable_count,
            unreachable.join(","),
            r.loops,
            r.non_shortest,
            r.switch_pairs,
            r.switch_failures,
            r.switch_non_shortest,
            r.direct_pairs,
            r.skipped_count,
            skipped.join(","),
            self.hops.max,
            self.hops.mean,
            self.hops.max_extra,
            self.cdg_channels,
            self.cdg_dependencies,
            cycle,
            self.balance.per_link.json(),
            self.balance.per_ca_port.json(),
            self.balance.per_switch.json(),
            levels.join(","),
            busiest
        )
    }
}

/// What a routing engine promises about the tables it computes; the verdict holds it to that.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Promise {
    /// Every route is a shortest path (minhop, sssp; dor, lash, dfsssp).
    pub shortest: bool,
    /// The tables are free of credit loops (updn, dnup, ftree, dor; the VL engines lash,
    /// dfsssp, nue, torus-2QoS, dfp, dfp2 on their VLs).
    pub deadlock_free: bool,
}

impl Promise {
    /// The promise of the engine OpenSM calls `engine`. Every engine promises that every CA
    /// reaches every CA; `file` and unknown names promise nothing more. nue may detour to stay
    /// deadlock-free within its VLs, torus-2QoS detours around failures, dfp's primary routes
    /// are minimal Dragonfly+ routes (not shortest where a group pair has no direct link), so
    /// they promise deadlock freedom only; dor refuses tables with a credit loop, so it
    /// promises both.
    #[must_use]
    pub fn of(engine: &str) -> Promise {
        match engine {
            "minhop" | "null" | "sssp" => Promise {
                shortest: true,
                deadlock_free: false,
            },
            "dor" | "lash" | "dfsssp" => Promise {
                shortest: true,
                deadlock_free: true,
            },
            "updn" | "dnup" | "ftree" | "nue" | "torus-2QoS" | "dfp" | "dfp2" => Promise {
                shortest: false,
                deadlock_free: true,
            },
            _ => Promise::default(),
        }
    }
}

/// What the caller accepts beyond the engine's promise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// A credit loop is reported but is not a failure (`--allow-credit-loops`).
    pub allow_credit_loops: bool,
    /// A check of zero CA pairs is not a failure (`--allow-no-pairs`).
    pub allow_no_pairs: bool,
}

/// One reason the tables fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Nothing was checked: no CA pair has a route to judge.
    NoPairs,
    /// CA pairs dead-ended (missing entry, down port, wrong port).
    Unreachable {
        /// How many pairs.
        pairs: u64,
        /// An example (source LID, destination LID).
        example: Option<(Lid, Lid)>,
    },
    /// CA pairs looped.
    Loops {
        /// How many pairs.
        pairs: u64,
    },
    /// Cabled CA ports without a LID: no table routes to them.
    NoLid {
        /// How many ports.
        ports: u64,
    },
    /// CA-to-switch routes (the LID-routed SMP path) dead-ended or looped.
    SwitchUnreachable {
        /// How many pairs.
        pairs: u64,
    },
    /// Routes longer than the shortest path from an engine that promises shortest paths.
    NotShortest {
        /// The engine.
        engine: String,
        /// CA pairs.
        pairs: u64,
        /// CA-to-switch pairs.
        switch_pairs: u64,
    },
    /// The channel dependency graph has a cycle (a possible deadlock).
    CreditLoop {
        /// The engine.
        engine: String,
        /// Links in the cycle.
        links: usize,
        /// The engine promised deadlock freedom.
        promised: bool,
    },
    /// The VL-aware check found routes sent onto VL 15 or beyond a port's OperationalVLs.
    BadVl {
        /// Hops onto VL 15.
        dropped: u64,
        /// Hops onto a VL the port does not operate.
        beyond: u64,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::NoPairs => f.write_str(
                "nothing was checked: 0 CA pairs have a route to judge (give --allow-no-pairs if that is expected)",
            ),
            Failure::Unreachable { pairs, example } => {
                write!(f, "{pairs} CA pairs unreachable")?;
                if let Some((a, b)) = example {
                    write!(f, " (e.g. LID {} -> LID {})", a.0, b.0)?;
                }
                Ok(())
            }
            Failure::Loops { pairs } => write!(f, "{pairs} CA pairs loop"),
            Failure::NoLid { ports } => write!(f, "{ports} cabled CA ports have no LID"),
            Failure::SwitchUnreachable { pairs } => {
                write!(f, "{pairs} CA-to-switch routes dead-end or loop")
            }
            Failure::NotShortest {
                engine,
                pairs,
                switch_pairs,
            } => write!(
                f,
                "{pairs} CA pairs and {switch_pairs} CA-to-switch routes longer than the shortest path ({engine} promises shortest paths)"
            ),
            Failure::BadVl { dropped, beyond } => write!(
                f,
                "{dropped} route hops map to VL 15 (dropped) and {beyond} to a VL beyond the port's OperationalVLs"
            ),
            Failure::CreditLoop {
                engine,
                links,
                promised,
            } => {
                write!(f, "credit loop of {links} links")?;
                if *promised {
                    write!(f, " ({engine} promises deadlock-free tables)")
                } else {
                    write!(
                        f,
                        " ({engine} does not avoid them; give --allow-credit-loops to accept, or route with updn, dnup or ftree)"
                    )
                }
            }
        }
    }
}

/// The judgement of a [`Report`] against an engine's [`Promise`] and a [`Policy`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The engine the tables were judged for.
    pub engine: String,
    /// What it promises.
    pub promise: Promise,
    /// Every failure, most serious first; empty = pass.
    pub failures: Vec<Failure>,
    /// A credit loop was found and allowed.
    pub allowed_credit_loop: bool,
}

impl Verdict {
    /// No failure.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

impl std::fmt::Display for Verdict {
    /// `PASSED: ...` naming what was checked, or `FAILED: a; b` naming each failure.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.failures.is_empty() {
            write!(f, "PASSED: every CA reaches every CA")?;
            if self.promise.shortest {
                write!(f, " along a shortest path ({}'s promise)", self.engine)?;
            }
            if self.allowed_credit_loop {
                write!(f, "; credit loop allowed")
            } else {
                write!(f, "; no credit loop")
            }
        } else {
            let parts: Vec<String> = self.failures.iter().map(ToString::to_string).collect();
            write!(f, "FAILED: {}", parts.join("; "))
        }
    }
}

impl Report {
    /// The verdict on these tables for `engine` (its [`Promise`]) under `policy`; see the
    /// module docs.
    #[must_use]
    pub fn verdict(&self, engine: &str, policy: &Policy) -> Verdict {
        let promise = Promise::of(engine);
        let r = &self.reach;
        let mut failures = Vec::new();
        if r.pairs == 0 && !policy.allow_no_pairs {
            failures.push(Failure::NoPairs);
        }
        if r.unreachable_count > 0 {
            failures.push(Failure::Unreachable {
                pairs: r.unreachable_count,
                example: r.unreachable.first().copied(),
            });
        }
        if r.loops > 0 {
            failures.push(Failure::Loops { pairs: r.loops });
        }
        if r.no_lid > 0 {
            failures.push(Failure::NoLid { ports: r.no_lid });
        }
        if r.switch_failures > 0 {
            failures.push(Failure::SwitchUnreachable {
                pairs: r.switch_failures,
            });
        }
        if promise.shortest && (r.non_shortest > 0 || r.switch_non_shortest > 0) {
            failures.push(Failure::NotShortest {
                engine: engine.to_string(),
                pairs: r.non_shortest,
                switch_pairs: r.switch_non_shortest,
            });
        }
        if let Some(v) = self
            .vl
            .as_ref()
            .filter(|v| v.dropped > 0 || v.beyond_oper_vls > 0)
        {
            failures.push(Failure::BadVl {
                dropped: v.dropped,
                beyond: v.beyond_oper_vls,
            });
        }
        let mut allowed_credit_loop = false;
        if let Some(c) = &self.credit_loop {
            if policy.allow_credit_loops {
                allowed_credit_loop = true;
            } else {
                failures.push(Failure::CreditLoop {
                    engine: engine.to_string(),
                    links: c.len(),
                    promised: promise.deadlock_free,
                });
            }
        }
        Verdict {
            engine: engine.to_string(),
            promise,
            failures,
            allowed_credit_loop,
        }
    }
}

/// [`verify`], with the credit-loop check done on (link, VL) channels ([`vl::verify_vl`]):
/// [`Report::credit_loop`] is the VL-aware cycle, [`Report::vl`] the VL report (whose VL-15
/// and beyond-OperationalVLs hops fail the verdict).
#[must_use]
pub fn verify_with_vls(subnet: &Subnet, lfts: &Lfts, inp: &vl::VlInputs<'_>) -> Report {
    let mut rep = verify(subnet, lfts);
    let v = vl::verify_vl(subnet, lfts, inp);
    rep.credit_loop = v
        .credit_loop
        .as_ref()
        .map(|c| c.iter().map(|&(ch, _)| ch).collect());
    rep.vl = Some(v);
    rep
}

/// The check the SM's routes deserve: with VL parts from the engine, or with `qos` on, the
/// VL-aware one on the SL-to-VL tables the SM programs ([`crate::qos::program::programmed_sl2vl`])
/// and the engine's path SLs (SL 0 where it assigns none), each port limited to its
/// OperationalVLs; otherwise [`verify`].
#[must_use]
pub fn verify_routes(
    subnet: &Subnet,
    routes: &crate::routing::Routes,
    qos: &crate::qos::QosConfig,
    max_op_vls: u8,
) -> Report {
    let uses_vls = routes.path_sl.is_some() || routes.sl2vl.is_some() || qos.enabled;
    if !uses_vls {
        return verify(subnet, &routes.lfts);
    }
    let sl2vl = crate::qos::program::programmed_sl2vl(&crate::qos::program::PlanInputs {
        cfg: qos,
        max_op_vls,
        subnet,
        routes: Some(routes),
    });
    let zero = vl::UniformSl(0);
    let path_sl: &dyn vl::PathSlSource = match &routes.path_sl {
        Some(p) => p,
        None => &zero,
    };
    verify_with_vls(
        subnet,
        &routes.lfts,
        &vl::VlInputs {
            sl2vl: &sl2vl,
            path_sl,
            limit: vl::VlLimit::OperVls,
        },
    )
}

/// Runs every check (see the module docs).
#[must_use]
pub fn verify(subnet: &Subnet, lfts: &Lfts) -> Report {
    let hm = HopMatrix::build(subnet);
    let reach = check_all_pairs_with(subnet, lfts, &hm);
    let mut rep = cdg_and_balance(subnet, lfts, &hm);
    rep.reach = reach;
    rep
}

const DEAD: u32 = u32::MAX;
const CA: u32 = 0x8000_0000;

struct Graph {
    /// Switches with tables that exist in the subnet.
    sws: Vec<NodeId>,
    /// Channel id of (slot, port) = chan_start[slot] + port - 1.
    chan_start: Vec<u32>,
    /// Per channel: next switch slot, CA | ca index, or DEAD.
    next: Vec<u32>,
    /// Per channel: the remote (node, port).
    remote: Vec<Option<(NodeId, PortNum)>>,
}

struct Dest {
    lid: Lid,
    sw_slot: u32,
}

#[derive(Clone)]
struct Acc {
    load: Vec<u64>,
    dep: Vec<[u64; 4]>,
    hop_sum: u64,
    arrived: u64,
    max_hops: u32,
    max_extra: u32,
}

impl Acc {
    fn new(nch: usize) -> Acc {
        Acc {
            load: vec![0; nch],
            dep: vec![[0; 4]; nch],
            hop_sum: 0,
            arrived: 0,
            max_hops: 0,
            max_extra: 0,
        }
    }
    fn merge(mut self, o: Acc) -> Acc {
        self.hop_sum += o.hop_sum;
        self.arrived += o.arrived;
        self.max_hops = self.max_hops.max(o.max_hops);
        self.max_extra = self.max_extra.max(o.max_extra);
        for (a, b) in self.load.iter_mut().zip(o.load) {
            *a += b;
        }
        for (a, b) in self.dep.iter_mut().zip(o.dep) {
            for k in 0..4 {
                a[k] |= b[k];
            }
        }
        self
    }
}

fn cdg_and_balance(subnet: &Subnet, lfts: &Lfts, hm: &HopMatrix) -> Report {
    let slots = lfts.slots_in(subnet);
    let sws = slots.switches();
    let slot_of = |n: NodeId| slots.slot(n).map_or(u32::MAX, |i| i as u32);
    // CA ports: (node, port, lid, nlids, switch slot).
    let mut cas: Vec<(NodeId, PortNum, Lid, u16, u32)> = Vec::new();
    let mut ca_of = std::collections::HashMap::new();
    for (n, p) in subnet.end_ports() {
        if subnet.node(n).is_switch() {
            continue;
        }
        let Some(port) = subnet.port(n, p) else {
            continue;
        };
        let Some((rn, _)) = port.remote else { continue };
        if port.lid == Lid::UNASSIGNED || !link_usable(subnet, n, p) {
            continue;
        }
        let slot = slot_of(rn);
        if slot == u32::MAX {
            continue;
        }
        ca_of.insert((n, p), cas.len() as u32);
        cas.push((n, p, port.lid, 1u16 << port.lmc.min(7), slot));
    }
    let mut chan_start = Vec::with_capacity(sws.len() + 1);
    let mut next = Vec::new();
    let mut remote = Vec::new();
    for &s in sws {
        chan_start.push(next.len() as u32);
        for p in 1..=subnet.node(s).num_ports {
            let r = subnet.port(s, PortNum(p)).and_then(|x| x.remote);
            let nx = match r {
                Some((rn, rp)) if link_usable(subnet, s, PortNum(p)) => {
                    if subnet.node(rn).is_switch() {
                        match slot_of(rn) {
                            u32::MAX => DEAD,
                            x => x,
                        }
                    } else {
                        ca_of.get(&(rn, rp)).map_or(DEAD, |&c| CA | c)
                    }
                }
                _ => DEAD,
            };
            next.push(nx);
            remote.push(r);
        }
    }
    chan_start.push(next.len() as u32);
    let g = Graph {
        sws: sws.to_vec(),
        chan_start,
        next,
        remote,
    };
    let nch = g.next.len();
    let rows: Vec<&[u8]> = g
        .sws
        .iter()
        .map(|&s| lfts.table(s).unwrap_or(&[]))
        .collect();
    // Destination-major copy of the tables (one column of all switches per LID), so the walks
    // for one destination read one small contiguous slice.
    let nsw = g.sws.len();
    let width = usize::from(lfts.top().0) + 1;
    let mut by_lid = vec![NO_PATH; width * nsw];
    const B: usize = 64;
    for sb in (0..nsw).step_by(B) {
        for lb in (0..width).step_by(B) {
            for (si, row) in rows.iter().enumerate().skip(sb).take(B) {
                for l in lb..(lb + B).min(width) {
                    if let Some(&p) = row.get(l) {
                        by_lid[l * nsw + si] = p;
                    }
                }
            }
        }
    }
    // Sources: switch slot → number of CA ports.
    let mut nsrc = vec![0u64; g.sws.len()];
    for c in &cas {
        nsrc[c.4 as usize] += 1;
    }
    let srcs: Vec<(u32, u64)> = nsrc
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| (i as u32, n))
        .collect();
    let dests: Vec<Dest> = cas
        .iter()
        .flat_map(|c| {
            (0..c.3).filter_map(move |o| {
                Some(Dest {
                    lid: Lid(c.2 .0.checked_add(o)?),
                    sw_slot: c.4,
                })
            })
        })
        .collect();
    let max_hops = g.sws.len() as u32 + 1;
    let chan = |slot: usize, port: u8| -> Option<usize> {
        let a = *g.chan_start.get(slot)? as usize;
        let b = *g.chan_start.get(slot + 1)? as usize;
        let c = a + usize::from(port).checked_sub(1)?;
        (c < b).then_some(c)
    };
    let per_dest = |acc: &mut Acc, d: &Dest| {
        let l = usize::from(d.lid.0);
        let col = by_lid.get(l * nsw..(l + 1) * nsw).unwrap_or(&[]);
        for &(s, n) in &srcs {
            let mut w = n;
            if s == d.sw_slot {
                w -= 1; // not the destination itself
            }
            if w == 0 {
                continue;
            }
            let mut cur = s as usize;
            let mut prev: Option<usize> = None;
            let mut hops = 0;
            loop {
                let port = col.get(cur).copied().unwrap_or(NO_PATH);
                if port == NO_PATH || port == 0 {
                    break;
                }
                let Some(c) = chan(cur, port) else { break };
                if let Some(pc) = prev {
                    acc.dep[pc][usize::from(port >> 6)] |= 1u64 << (port & 63);
                }
                acc.load[c] += w;
                let nx = g.next[c];
                if nx & CA != 0 && nx != DEAD {
                    acc.hop_sum += u64::from(hops) * w;
                    acc.arrived += w;
                    acc.max_hops = acc.max_hops.max(hops);
                    if let Some(min) = hm.hops(g.sws[s as usize], g.sws[d.sw_slot as usize]) {
                        acc.max_extra = acc.max_extra.max(hops.saturating_sub(u32::from(min)));
                    }
                }
                if nx == DEAD || nx & CA != 0 {
                    break;
                }
                hops += 1;
                if hops > max_hops {
                    break;
                }
                prev = Some(c);
                cur = nx as usize;
            }
        }
    };
    let acc = {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            let chunk = dests
                .len()
                .div_ceil(rayon::current_num_threads() * 2)
                .max(1);
            dests
                .par_chunks(chunk)
                .map(|ds| {
                    let mut a = Acc::new(nch);
                    for d in ds {
                        per_dest(&mut a, d);
                    }
                    a
                })
                .reduce(|| Acc::new(nch), Acc::merge)
        }
        #[cfg(not(feature = "parallel"))]
        {
            let mut a = Acc::new(nch);
            for d in &dests {
                per_dest(&mut a, d);
            }
            a
        }
    };
    // CDG: nodes = switch-to-switch channels.
    let is_sw_chan = |c: usize| g.next[c] != DEAD && g.next[c] & CA == 0;
    let succ = |c: usize| -> Vec<usize> {
        let to = g.next[c] as usize;
        let bits = acc.dep[c];
        let mut v = Vec::new();
        for (k, &w) in bits.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                let port = (k * 64 + b) as u8;
                if let Some(nc) = chan(to, port) {
                    if is_sw_chan(nc) {
                        v.push(nc);
                    }
                }
            }
        }
        v
    };
    let cdg_channels = (0..nch).filter(|&c| is_sw_chan(c)).count() as u64;
    let cdg_dependencies: u64 = (0..nch)
        .filter(|&c| is_sw_chan(c))
        .map(|c| succ(c).len() as u64)
        .sum();
    let cycle = find_cycle(nch, &is_sw_chan, &succ);
    let slot_of_chan =
        |c: usize| -> usize { g.chan_start.partition_point(|&x| x as usize <= c) - 1 };
    let to_channel = |c: usize| -> Option<Channel> {
        let slot = slot_of_chan(c);
        let from = *g.sws.get(slot)?;
        let port = PortNum((c - g.chan_start[slot] as usize + 1) as u8);
        let (to, to_port) = g.remote[c]?;
        Some(Channel {
            from,
            port,
            to,
            to_port,
        })
    };
    let credit_loop = cycle.map(|cs| cs.into_iter().filter_map(to_channel).collect());
    // Balance.
    let levels = switch_levels(&g, &srcs);
    let link_chans: Vec<usize> = (0..nch).filter(|&c| is_sw_chan(c)).collect();
    let ca_chans: Vec<usize> = (0..nch)
        .filter(|&c| g.next[c] & CA != 0 && g.next[c] != DEAD)
        .collect();
    let per_link = Stats::of(link_chans.iter().map(|&c| acc.load[c]));
    let per_ca_port = Stats::of(ca_chans.iter().map(|&c| acc.load[c]));
    let per_switch = Stats::of((0..g.sws.len()).map(|s| {
        let a = g.chan_start[s] as usize;
        let b = g.chan_start[s + 1] as usize;
        acc.load[a..b].iter().sum::<u64>()
    }));
    let max_level = levels
        .iter()
        .filter(|&&l| l != u32::MAX)
        .max()
        .copied()
        .unwrap_or(0);
    let per_level = (0..=max_level)
        .map(|lv| {
            let v: Vec<u64> = link_chans
                .iter()
                .filter(|&&c| levels[slot_of_chan(c)] == lv)
                .map(|&c| acc.load[c])
                .collect();
            (lv, Stats::of(v.iter().copied()))
        })
        .filter(|(_, st)| st.count > 0)
        .collect();
    let busiest_link = link_chans
        .iter()
        .max_by_key(|&&c| (acc.load[c], std::cmp::Reverse(c)))
        .and_then(|&c| Some((to_channel(c)?, acc.load[c])));
    Report {
        hops: HopStats {
            max: acc.max_hops,
            mean: if acc.arrived > 0 {
                acc.hop_sum as f64 / acc.arrived as f64
            } else {
                0.0
            },
            max_extra: acc.max_extra,
        },
        reach: Reachability::default(),
        cdg_channels,
        cdg_dependencies,
        credit_loop,
        vl: None,
        balance: Balance {
            per_link,
            per_ca_port,
            per_switch,
            per_level,
            busiest_link,
        },
    }
}

/// Level per switch slot: switch hops from the nearest switch with a CA.
fn switch_levels(g: &Graph, srcs: &[(u32, u64)]) -> Vec<u32> {
    let n = g.sws.len();
    let mut lv = vec![u32::MAX; n];
    let mut q: Vec<usize> = Vec::new();
    for &(s, _) in srcs {
        lv[s as usize] = 0;
        q.push(s as usize);
    }
    let mut head = 0;
    while head < q.len() {
        let u = q[head];
        head += 1;
        for c in g.chan_start[u] as usize..g.chan_start[u + 1] as usize {
            let nx = g.next[c];
            if nx != DEAD && nx & CA == 0 && lv[nx as usize] == u32::MAX {
                lv[nx as usize] = lv[u] + 1;
                q.push(nx as usize);
            }
        }
    }
    lv
}

/// Iterative DFS; returns one cycle (channel ids in order) if the graph has any.
fn find_cycle(
    n: usize,
    is_node: &dyn Fn(usize) -> bool,
    succ: &dyn Fn(usize) -> Vec<usize>,
) -> Option<Vec<usize>> {
    // 0 = white, 1 = on stack, 2 = done.
    let mut color = vec![0u8; n];
    let mut stack: Vec<(usize, Vec<usize>, usize)> = Vec::new();
    for root in 0..n {
        if !is_node(root) || color[root] != 0 {
            continue;
        }
        color[root] = 1;
        stack.push((root, succ(root), 0));
        while let Some(top) = stack.last_mut() {
            let (u, ref list, ref mut i) = *top;
            if *i < list.len() {
                let v = list[*i];
                *i += 1;
                match color[v] {
                    0 => {
                        color[v] = 1;
                        let sv = succ(v);
                        stack.push((v, sv, 0));
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

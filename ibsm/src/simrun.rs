//! `ibsm sim`: the SM core against the built-in simulated fabric.
//!
//! Loads a topology (file or generator spec), builds a [`Fabric`] with a real SMA on every
//! node, attaches the SM at a CA port (or a switch's port 0) exactly as on hardware, and drives
//! both on the simulator's virtual clock until the subnet is up, or the SM gives up (a sweep
//! with errors and no immediate re-sweep), or the time limit. It then judges **the sweep that
//! finished** — never a re-sweep that had just started — with the verifier's verdict for the
//! engine that routed ([`sm::verify::Report::verdict`], the same one `ibsm verify` exits on),
//! compares what the SM found with the topology (nodes the SM could not reach, nodes the
//! topology does not connect to the SM's port), writes OpenSM's dump files if asked, and
//! prints a report.
//!
//! A run passes ([`SimOutcome::ok`]) when the subnet came up, the verdict passed, the SM found
//! every node connected to its port, and — unless [`SimArgs::allow_partial`] — the topology
//! has no node the SM's port cannot reach.

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId as TopoNode, Topology};
use ibmad::{Guid, NodeType, PortNum, Time};
use sm::drive::Agents;
use sm::routing::Lfts;
use sm::verify::{Policy, Report, Verdict};
use sm::{Command, Event, Level, Phase, PhaseStats, Sm, SmConfig, Subnet};

use crate::config::{self, Action, Environment, ExtraOpt};
use crate::persist::{write_atomic, write_dump_files, PersistError};
use crate::progress::Progress;
use fabric_sim::sim::FaultConfig;

/// What `ibsm sim` runs.
#[derive(Clone, Debug)]
pub struct SimArgs {
    /// Topology file or generator spec (`fat-tree:2,36`).
    pub topology: String,
    /// SM options.
    pub sm: SmConfig,
    /// Simulator options (seed, faults).
    pub sim: SimConfig,
    /// Where to write OpenSM's dump files and guid2lid.
    pub dump_dir: Option<PathBuf>,
    /// A guid2lid file to honour at start.
    pub guid2lid: Option<PathBuf>,
    /// Where the SM attaches: a node name or GUID, optionally `:PORT`; default the first CA.
    pub attach: Option<String>,
    /// Give up after this much virtual time.
    pub limit: Duration,
    /// Print verbose log lines too.
    pub verbose: bool,
    /// A credit loop in the tables is reported but is not a failure.
    pub allow_credit_loops: bool,
    /// Nodes of the topology that the SM's port cannot reach (a disconnected part) are
    /// reported but are not a failure.
    pub allow_partial: bool,
    /// A check of zero CA pairs is not a failure.
    pub allow_no_pairs: bool,
    /// Show progress on standard error (only honoured when it is a terminal).
    pub progress: bool,
    /// The SA's `consolidate_ipv6_snm_req` ([`sm::sa::SaConfig::consolidate_ipv6_snm`]).
    pub consolidate_ipv6_snm: bool,
    /// `exit_on_fatal`: a `guid2lid` file with a line that is not three numbers stops the run
    /// ([`crate::persist::guid2lid_fatal`]) instead of being discarded with an ERR line.
    pub exit_on_fatal: bool,
    /// The SA's `drop_event_subscriptions` ([`sm::sa::SaConfig::drop_event_subscriptions`]).
    pub drop_event_subscriptions: bool,
    /// `node_name_map_name`: the names the dump files print for the nodes it maps.
    pub node_names: sm::names::NodeNames,
    /// `sa_db_dump`: `opensm-sa.dump` is written with the other dump files.
    pub sa_db_dump: bool,
    /// The SA's `mcgroup_join_validation` ([`sm::sa::SaConfig::mcgroup_join_validation`]).
    pub mcgroup_join_validation: bool,
    /// The SA's `ipoib_mcgroup_creation_validation`.
    pub ipoib_mcgroup_creation_validation: bool,
    /// `sa_db_file` (`-S`): an SA database file the SA starts with (`sm::sa::db`).
    pub sa_db_file: Option<PathBuf>,
}

impl SimArgs {
    /// `topology` with `sm`'s options and every other setting at its default (no faults,
    /// 600 s limit, nothing allowed).
    #[must_use]
    pub fn new(topology: &str, sm: SmConfig) -> SimArgs {
        SimArgs {
            topology: topology.to_string(),
            sm,
            sim: SimConfig::default(),
            dump_dir: None,
            guid2lid: None,
            attach: None,
            limit: Duration::from_secs(600),
            verbose: false,
            allow_credit_loops: false,
            allow_partial: false,
            allow_no_pairs: false,
            progress: false,
            consolidate_ipv6_snm: false,
            exit_on_fatal: true,
            drop_event_subscriptions: false,
            node_names: sm::names::NodeNames::default(),
            sa_db_dump: false,
            sa_db_file: None,
            mcgroup_join_validation: true,
            ipoib_mcgroup_creation_validation: true,
        }
    }
}

/// Why `ibsm sim` could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimRunError {
    /// The topology did not load, or cannot be run.
    #[error("topology {spec:?}: {reason}")]
    Topology {
        /// The argument.
        spec: String,
        /// Why.
        reason: String,
    },
    /// The simulator refused the topology or the attachment.
    #[error("simulator: {0}")]
    Sim(#[from] Box<fabric_sim::sim::SimError>),
    /// The SM configuration was rejected.
    #[error("SM configuration: {0}")]
    Config(#[from] sm::ConfigError),
    /// `--sm-at` named nothing usable.
    #[error("--sm-at {0:?}: {1}")]
    Attach(String, String),
    /// A fatal initialization issue (`exit_on_fatal`): a guid2lid file that cannot be read
    /// back.
    #[error("{0}")]
    Fatal(String),
    /// Reading the guid2lid file failed.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing a dump file failed.
    #[error(transparent)]
    Persist(#[from] PersistError),
    /// Writing the report failed.
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}

/// How the topology compares with what the SM found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Nodes in the topology.
    pub topology_nodes: usize,
    /// Nodes connected to the SM's port (through switches), the SM's own node included.
    pub connected: usize,
    /// Names of connected nodes the SM did not find (a failure of the bring-up).
    pub missed: Vec<String>,
    /// Names of nodes not connected to the SM's port (a disconnected part of the topology).
    pub disconnected: Vec<String>,
}

/// What happened.
#[derive(Debug)]
pub struct SimOutcome {
    /// SUBNET UP was reached by the sweep reported here.
    pub up: bool,
    /// Why the subnet is not up (the last sweep's failure, or the time limit).
    pub not_up_reason: Option<String>,
    /// Phase counters in order, with the wall time each took and the sweep it belongs to.
    pub phases: Vec<(u64, Phase, PhaseStats, Duration)>,
    /// Nodes the reported sweep found.
    pub nodes_found: usize,
    /// Directed routes that got no answer in the reported sweep.
    pub unreachable: usize,
    /// The engine that routed.
    pub engine: String,
    /// The route verifier's report (None when there were no tables).
    pub verify: Option<Report>,
    /// The verdict on the tables (None when there were no tables).
    pub verdict: Option<Verdict>,
    /// The topology against what the SM found.
    pub coverage: Coverage,
    /// Heavy sweeps run.
    pub sweeps: u64,
    /// Virtual time at SUBNET UP (or at the end).
    pub virtual_time: Duration,
    /// Wall time of the whole run (after loading).
    pub wall: Duration,
    /// Disconnected nodes are accepted.
    pub allow_partial: bool,
}

impl SimOutcome {
    /// The subnet came up, the verdict on its tables passed, the SM found every node
    /// connected to its port, and no node is disconnected (unless allowed).
    #[must_use]
    pub fn ok(&self) -> bool {
        self.up
            && self.verdict.as_ref().is_some_and(Verdict::passed)
            && self.coverage.missed.is_empty()
            && (self.allow_partial || self.coverage.disconnected.is_empty())
    }
}

/// Finds the SM's attachment point: `NAME`, `0xGUID`, optionally with `:PORT`; by default the
/// first CA with a cabled port (else the first switch's port 0).
fn attach_point(t: &Topology, spec: Option<&str>) -> Result<(TopoNode, PortNum), SimRunError> {
    let first_cabled = |id: TopoNode| {
        t.ports(id)
            .find(|(p, port)| p.0 >= 1 && port.peer().is_some())
            .map(|(p, _)| p)
    };
    let attach_err = |spec: &str, why: String| SimRunError::Attach(spec.to_string(), why);
    let Some(spec) = spec else {
        for id in t.nodes_of_type(NodeType::CA) {
            if let Some(p) = first_cabled(id) {
                return Ok((id, p));
            }
        }
        let sw = t.nodes_of_type(NodeType::SWITCH).next();
        return sw
            .map(|id| (id, PortNum(0)))
            .ok_or_else(|| SimRunError::Topology {
                spec: String::new(),
                reason: "no switch and no cabled CA port to attach the SM to".into(),
            });
    };
    let (name, port) = match spec.rsplit_once(':') {
        Some((n, p)) => match p.parse::<u16>() {
            Ok(v) if v <= 254 => (n, Some(PortNum(v as u8))),
            Ok(v) => {
                return Err(attach_err(
                    spec,
                    format!("port {v} is not a port number (0..=254)"),
                ))
            }
            Err(_) => {
                return Err(attach_err(
                    spec,
                    format!("{p:?} after ':' is not a port number (0..=254)"),
                ))
            }
        },
        None => (spec, None),
    };
    let guid = name
        .strip_prefix("0x")
        .and_then(|h| u64::from_str_radix(h, 16).ok());
    // A port GUID (as OpenSM's -g) names the port too.
    let by_port = guid.and_then(|g| {
        t.nodes().find_map(|(id, n)| {
            t.ports(id)
                .find(|(p, port)| (p.0 >= 1 || n.is_switch()) && port.guid().0 == g)
                .map(|(p, _)| (id, if n.is_switch() { PortNum(0) } else { p }))
        })
    });
    if let (Some(found), None) = (by_port, port) {
        return Ok(found);
    }
    let id = t
        .nodes()
        .find(|(_, n)| n.name() == name || guid.is_some_and(|g| n.guid().0 == g))
        .map(|(id, _)| id)
        .or(by_port.map(|(id, _)| id))
        .ok_or_else(|| {
            attach_err(
                spec,
                "no node with that name, node GUID or port GUID".into(),
            )
        })?;
    let node = t
        .node(id)
        .ok_or_else(|| attach_err(spec, "no such node".into()))?;
    let port = match port {
        Some(p) if p.0 > node.num_ports() => {
            return Err(attach_err(
                spec,
                format!(
                    "port {} is beyond {:?}'s {} ports",
                    p.0,
                    node.name(),
                    node.num_ports()
                ),
            ))
        }
        Some(p) => p,
        None if node.is_switch() => PortNum(0),
        None => {
            first_cabled(id).ok_or_else(|| attach_err(spec, "that CA has no cabled port".into()))?
        }
    };
    Ok((id, port))
}

/// Nodes connected to the SM at `at`: reached over cables through switches (a CA other than
/// the SM's own does not forward).
fn connected_nodes(t: &Topology, at: TopoNode) -> HashSet<TopoNode> {
    let mut seen = HashSet::new();
    let mut q = VecDeque::new();
    seen.insert(at);
    q.push_back(at);
    while let Some(u) = q.pop_front() {
        let forwards = u == at || t.node(u).is_some_and(|n| n.is_switch());
        if !forwards {
            continue;
        }
        for (_, port) in t.ports(u) {
            if let Some(peer) = port.peer() {
                if seen.insert(peer.node) {
                    q.push_back(peer.node);
                }
            }
        }
    }
    seen
}

fn coverage(t: &Topology, at: TopoNode, found: &Subnet) -> Coverage {
    let connected = connected_nodes(t, at);
    let mut c = Coverage {
        topology_nodes: t.nodes().count(),
        connected: connected.len(),
        ..Coverage::default()
    };
    for (id, n) in t.nodes() {
        if found.node_by_guid(n.guid()).is_some() {
            continue;
        }
        if connected.contains(&id) {
            c.missed.push(n.name().to_string());
        } else {
            c.disconnected.push(n.name().to_string());
        }
    }
    c
}

/// The SM's state for the progress line and the report: its role when standing by, else the
/// sweep stage.
fn state(sm: &Sm) -> String {
    if sm.role() == sm::Role::Standby {
        "Standby".into()
    } else {
        format!("{:?}", sm.stage())
    }
}

fn fmt_dur(d: Duration) -> String {
    let us = d.as_micros();
    if us < 10_000 {
        format!("{:.3} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

fn names(v: &[String]) -> String {
    let shown: Vec<&str> = v.iter().take(4).map(String::as_str).collect();
    let more = if v.len() > 4 { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

struct Driver {
    fabric: Fabric,
    sm: Sm,
    /// The SA the master SM hosts, as in `ibsm run`: it pre-creates the partitions' IPoIB
    /// groups (whose MFTs the SM programs) and answers SubnAdm MADs to the SM's port.
    sa: sm::sa::Sa,
    h: SmHandle,
    /// Events with the wall time at which the call that produced them returned and the
    /// heavy sweep they belong to.
    events: VecDeque<(Instant, u64, Event)>,
}

impl Driver {
    /// Delivers received MADs, fires due timers and sends, all at the current time, through
    /// the shared drive loop ([`sm::drive::turn`]); events are collected after every SM call
    /// with the wall time and the heavy sweep they belong to, and the round stops at the end
    /// of a sweep (SUBNET UP or a failure), so the SM's state is still that sweep's.
    fn process(&mut self) {
        let now = self.fabric.now();
        let events = &mut self.events;
        let mut agents = Agents::sm(&mut self.sm).with_sa(&mut self.sa);
        // A send the simulator refuses (back-pressure is counted there as a drop) is
        // retried by the SM on its timeout.
        let _ = sm::drive::turn(
            &mut agents,
            &mut self.fabric.sm_port(self.h),
            now,
            &mut |sm, e| {
                let end = matches!(e, Event::SubnetUp | Event::SweepFailed { .. });
                events.push_back((Instant::now(), sm.heavy_sweeps(), e));
                if end {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
    }

    /// Moves virtual time to the next thing that happens (a fabric event or an agent's
    /// timer). Returns false when nothing is scheduled any more, or the next thing is past
    /// `limit`.
    fn advance(&mut self, limit: Time) -> bool {
        let agents = Agents::sm(&mut self.sm).with_sa(&mut self.sa);
        sm::drive::advance(&agents, &mut self.fabric.sm_port(self.h), limit)
    }
}

/// A sweep that finished with errors, kept for the report while its re-sweep runs.
struct Finished {
    subnet: Subnet,
    lfts: Option<Lfts>,
    engine: &'static str,
    reason: String,
    unreachable: usize,
}

/// Loads a topology file or generator spec for a command, refusing one without nodes.
///
/// # Errors
/// The loader's error, or "no nodes".
pub fn load_topology(spec: &str, progress: &Progress) -> Result<Topology, String> {
    progress.message(&format!("loading {spec}"));
    let t = Topology::from_spec_or_file(spec).map_err(|e| e.to_string())?;
    if t.nodes().next().is_none() {
        return Err("the topology has no nodes".into());
    }
    Ok(t)
}

/// Runs the SM against the simulated fabric, printing log lines and the report to `out`.
///
/// # Errors
/// Bad topology, configuration or attachment; unreadable guid2lid; unwritable dump files.
pub fn run(args: &SimArgs, out: &mut dyn Write) -> Result<SimOutcome, SimRunError> {
    let progress = Progress::new(args.progress);
    let mut out = progress.writer(out);
    let out: &mut dyn Write = &mut out;
    let topo_err = |reason: String| SimRunError::Topology {
        spec: args.topology.clone(),
        reason,
    };
    let load_start = Instant::now();
    let topo = load_topology(&args.topology, &progress).map_err(topo_err)?;
    let load_time = load_start.elapsed();
    // Refuse up front a fabric the LID space cannot hold (the SM would fail every sweep).
    let ca_ports = topo
        .nodes()
        .filter(|(_, n)| !n.is_switch())
        .map(|(id, _)| {
            topo.ports(id)
                .filter(|(p, port)| p.0 >= 1 && port.peer().is_some())
                .count()
        })
        .sum::<usize>();
    sm::lid::lid_space_check(ca_ports, topo.num_switches(), args.sm.lmc)
        .map_err(|e| topo_err(e.to_string()))?;
    let (at, port) = attach_point(&topo, args.attach.as_deref()).map_err(|e| match e {
        SimRunError::Topology { reason, .. } => topo_err(reason),
        other => other,
    })?;
    let at_name = topo
        .node(at)
        .map_or(String::new(), |n| n.name().to_string());
    writeln!(
        out,
        "ibsm sim: {} — {} switches, {} CAs, {} links (loaded in {}); SM on {:?} port {}",
        args.topology,
        topo.num_switches(),
        topo.num_cas(),
        topo.num_links(),
        fmt_dur(load_time),
        at_name,
        port
    )?;

    progress.message("building the simulated fabric");
    let mut fabric = Fabric::new(&topo, args.sim.clone()).map_err(Box::new)?;
    let att = fabric.attach_sm(at, port).map_err(Box::new)?;
    let mut sm = Sm::new(SmConfig {
        port,
        ..args.sm.clone()
    })?;
    if let Some(path) = &args.guid2lid {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                if args.exit_on_fatal {
                    if let Some(fatal) = crate::persist::guid2lid_fatal(path, &text) {
                        return Err(SimRunError::Fatal(fatal));
                    }
                }
                let (_, warnings) = sm::lid::Guid2Lid::parse(&text);
                for w in &warnings {
                    writeln!(
                        out,
                        "[{:>12}] ERR   guid2lid {}: {w}",
                        fmt_dur(Duration::ZERO),
                        path.display()
                    )?;
                }
                sm.handle_command(Time::ZERO, Command::Guid2Lid(text));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                writeln!(
                    out,
                    "[{:>12}] ERR   guid2lid {} not found: assigning LIDs afresh",
                    fmt_dur(Duration::ZERO),
                    path.display()
                )?;
            }
            Err(source) => {
                return Err(SimRunError::Read {
                    path: path.clone(),
                    source,
                })
            }
        }
        // The SM's own warnings about the text repeat what was printed above.
        while sm.poll_event().is_some() {}
    }
    let mut d = Driver {
        fabric,
        sm,
        sa: sm::sa::Sa::with_config(sm::sa::SaConfig {
            multicast: !args.sm.disable_multicast,
            consolidate_ipv6_snm: args.consolidate_ipv6_snm,
            drop_event_subscriptions: args.drop_event_subscriptions,
            mcgroup_join_validation: args.mcgroup_join_validation,
            ipoib_mcgroup_creation_validation: args.ipoib_mcgroup_creation_validation,
            ..sm::sa::SaConfig::default()
        }),
        h: att.handle,
        events: VecDeque::new(),
    };
    if let Some(path) = &args.sa_db_file {
        let text = std::fs::read_to_string(path).map_err(|source| SimRunError::Read {
            path: path.clone(),
            source,
        })?;
        let db = sm::sa::db::parse(&text)
            .map_err(|e| SimRunError::Fatal(format!("sa_db_file {}: {e}", path.display())))?;
        let done = d.sa.restore_db(&db, port, Time::ZERO);
        writeln!(
            out,
            "[{:>12}] INFO  SA database restored from {}: {} multicast groups ({} members), {} services, {} event subscriptions",
            fmt_dur(Duration::ZERO),
            path.display(),
            done.groups,
            done.members,
            done.services,
            done.informs
        )?;
        for why in &done.skipped {
            writeln!(
                out,
                "[{:>12}] ERR   sa_db_file {}: {why}; skipped",
                fmt_dur(Duration::ZERO),
                path.display()
            )?;
        }
    }

    let limit = Time::ZERO + args.limit;
    let start = Instant::now();
    let mut last_phase = start;
    let mut phases = Vec::new();
    let mut up = false;
    let mut up_at = Duration::ZERO;
    let mut unreachable = 0usize;
    let mut guid2lid_text: Option<String> = None;
    let mut finished: Option<Finished> = None;
    let mut gave_up: Option<String> = None;
    let mut rounds: u64 = 0;
    'run: loop {
        d.process();
        rounds += 1;
        while let Some((t, sweep, ev)) = d.events.pop_front() {
            let vt = d.fabric.now().saturating_since(Time::ZERO);
            if let Some((level, line)) = ev.log_line() {
                if level <= Level::Info || args.verbose {
                    writeln!(out, "[{:>12}] {level:<5} {line}", fmt_dur(vt))?;
                }
            }
            match ev {
                Event::PhaseDone { phase, stats } => {
                    if phase == Phase::Discovery {
                        unreachable = 0;
                    }
                    phases.push((sweep, phase, stats, t - last_phase));
                    last_phase = t;
                }
                Event::NodeUnreachable { .. } => unreachable += 1,
                Event::Guid2LidUpdated(text) => guid2lid_text = Some(text),
                Event::SubnetUp => {
                    up = true;
                    up_at = vt;
                    break 'run;
                }
                Event::SweepFailed { reason } => {
                    let reason = reason.to_string();
                    if d.sm.resweep_due() {
                        finished = Some(Finished {
                            subnet: d.sm.subnet().clone(),
                            lfts: d.sm.lfts().cloned(),
                            engine: d.sm.routing_engine_used(),
                            reason,
                            unreachable,
                        });
                    } else {
                        // The SM waits for its sweep interval now: this sweep is the result.
                        finished = None;
                        gave_up = Some(reason);
                        break 'run;
                    }
                }
                _ => {}
            }
        }
        if !d.advance(limit) {
            break;
        }
        if rounds.is_multiple_of(1024) {
            progress.message(&format!(
                "{}: {} SMPs sent, {} nodes found, virtual {}",
                state(&d.sm),
                d.fabric.sm_stats(d.h).map_or(0, |s| s.sent),
                d.sm.subnet().nodes.len(),
                fmt_dur(d.fabric.now().saturating_since(Time::ZERO))
            ));
        }
    }
    let wall = start.elapsed();
    let virtual_time = if up {
        up_at
    } else {
        d.fabric.now().saturating_since(Time::ZERO)
    };
    let not_up_reason = if up {
        None
    } else if let Some(r) = gave_up {
        Some(r)
    } else if let Some(f) = &finished {
        Some(format!(
            "time limit {} reached during a re-sweep; the last finished sweep failed: {}",
            fmt_dur(args.limit),
            f.reason
        ))
    } else {
        Some(format!(
            "time limit {} reached (state {}) before any sweep finished",
            fmt_dur(args.limit),
            state(&d.sm)
        ))
    };
    if args.sa_db_dump {
        // The SA takes the last sweep's snapshot (and makes the partitions' groups) at its
        // next turn, which the run ends before.
        let now = d.fabric.now();
        d.sa.follow(now, &mut d.sm);
    }
    // The sweep to report: the live one, unless the run ended in a re-sweep of a failed one.
    let (subnet, lfts, engine, unreachable) = match &finished {
        Some(f) => (&f.subnet, f.lfts.as_ref(), f.engine, f.unreachable),
        None => (
            d.sm.subnet(),
            d.sm.lfts(),
            d.sm.routing_engine_used(),
            unreachable,
        ),
    };

    progress.message("verifying the tables");
    let check_start = Instant::now();
    let policy = Policy {
        allow_credit_loops: args.allow_credit_loops,
        allow_no_pairs: args.allow_no_pairs,
    };
    // The live sweep's routes are judged with their VLs (VL engines, -Q); a failed sweep's
    // snapshot keeps its LFTs only.
    let live_routes = finished.is_none().then(|| d.sm.routes()).flatten();
    let verified = match live_routes {
        Some(r) => Some(sm::verify::verify_routes(
            subnet,
            r,
            &d.sm.config().qos,
            d.sm.config().max_op_vls,
        )),
        None => lfts.map(|l| sm::verify::verify(subnet, l)),
    };
    let verdict = verified.as_ref().map(|v| v.verdict(engine, &policy));
    let check_time = check_start.elapsed();
    progress.finish();

    if let Some(dir) = &args.dump_dir {
        write_dumps(dir, &d.sm, guid2lid_text.as_deref(), &args.node_names)?;
        if args.sa_db_dump {
            let text = sm::sa::db::dump(d.sa.state());
            write_atomic(&dir.join("opensm-sa.dump"), text.as_bytes())?;
        }
    }

    let outcome = SimOutcome {
        up,
        not_up_reason,
        phases,
        nodes_found: subnet.nodes.len(),
        unreachable,
        engine: engine.to_string(),
        verify: verified,
        verdict,
        coverage: coverage(&topo, at, subnet),
        sweeps: d.sm.heavy_sweeps(),
        virtual_time,
        wall,
        allow_partial: args.allow_partial,
    };
    report(
        out,
        &d,
        subnet,
        &outcome,
        check_time,
        args.dump_dir.as_deref(),
    )?;
    Ok(outcome)
}

fn write_dumps(
    dir: &Path,
    sm: &Sm,
    guid2lid: Option<&str>,
    names: &sm::names::NodeNames,
) -> Result<(), SimRunError> {
    write_dump_files(dir, sm, names)?;
    let g2l = guid2lid.map_or_else(|| sm.guid2lid().to_text(), str::to_string);
    write_atomic(&dir.join("guid2lid"), g2l.as_bytes())?;
    Ok(())
}

fn report(
    out: &mut dyn Write,
    d: &Driver,
    subnet: &Subnet,
    o: &SimOutcome,
    check_time: Duration,
    dump_dir: Option<&Path>,
) -> std::io::Result<()> {
    let switches = subnet.switches().count();
    let end_ports: Vec<_> = subnet.end_ports().collect();
    let lids: Vec<u16> = end_ports
        .iter()
        .map(|&(n, p)| subnet.port(n, p).map_or(0, |x| x.lid.0))
        .filter(|&l| l != 0)
        .collect();
    // The same ports the SM drives to Active ("N linked ports and M switch ports 0 Active").
    let (mut linked, mut port0) = (0usize, 0usize);
    for id in subnet.node_ids() {
        for p in 0..=subnet.node(id).num_ports {
            if sm::program::in_state_pass(subnet, id, PortNum(p)) {
                if p == 0 {
                    port0 += 1;
                } else {
                    linked += 1;
                }
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "nodes found      {} ({} switches, {} CAs/routers), {} linked ports and {} switch ports 0, {} directed routes unanswered",
        o.nodes_found,
        switches,
        o.nodes_found - switches,
        linked,
        port0,
        o.unreachable
    )?;
    let c = &o.coverage;
    if !c.missed.is_empty() {
        writeln!(
            out,
            "topology         FAILED: {} of {} nodes connected to the SM's port were not found: {}",
            c.missed.len(),
            c.connected,
            names(&c.missed)
        )?;
    }
    if !c.disconnected.is_empty() {
        writeln!(
            out,
            "topology         {}{} of {} nodes are not connected to the SM's port: {}",
            if o.allow_partial {
                ""
            } else {
                "FAILED (give --allow-partial to accept): "
            },
            c.disconnected.len(),
            c.topology_nodes,
            names(&c.disconnected)
        )?;
    }
    if c.missed.is_empty() && c.disconnected.is_empty() {
        writeln!(out, "topology         all {} nodes found", c.topology_nodes)?;
    }
    writeln!(
        out,
        "LIDs             {} end ports, LIDs {}..{}, LMC {}",
        lids.len(),
        lids.iter().min().copied().unwrap_or(0),
        lids.iter().max().copied().unwrap_or(0),
        d.sm.config().lmc
    )?;
    writeln!(out, "routing engine   {}", o.engine)?;
    writeln!(
        out,
        "{:<20} {:>9} {:>8} {:>9} {:>12} {:>12}",
        "phase", "SMPs", "retried", "timed-out", "virtual", "wall"
    )?;
    let many = o.phases.first().map(|p| p.0) != o.phases.last().map(|p| p.0);
    let mut tot = PhaseStats::default();
    for (sweep, phase, s, wall) in &o.phases {
        let name = if many {
            format!("{phase} #{sweep}")
        } else {
            phase.to_string()
        };
        writeln!(
            out,
            "{:<20} {:>9} {:>8} {:>9} {:>12} {:>12}",
            name,
            s.smps,
            s.retried,
            s.timed_out,
            fmt_dur(s.elapsed),
            fmt_dur(*wall)
        )?;
        tot.smps += s.smps;
        tot.retried += s.retried;
        tot.timed_out += s.timed_out;
    }
    writeln!(
        out,
        "{:<20} {:>9} {:>8} {:>9} {:>12} {:>12}",
        if many {
            format!("total ({} sweeps)", o.sweeps)
        } else {
            "total".to_string()
        },
        tot.smps,
        tot.retried,
        tot.timed_out,
        fmt_dur(o.virtual_time),
        fmt_dur(o.wall)
    )?;
    match (&o.verify, &o.verdict) {
        (Some(v), Some(verdict)) => {
            let r = &v.reach;
            writeln!(
                out,
                "check            {verdict} ({} CA pairs, {} CA-to-switch routes, {})",
                r.pairs,
                r.switch_pairs,
                fmt_dur(check_time)
            )?;
            for k in &r.skipped {
                writeln!(
                    out,
                    "                 skipped CA port {}",
                    sm::verify::describe_skipped(subnet, k)
                )?;
            }
            let b = &v.balance;
            writeln!(
                out,
                "credit loops     {}",
                match &v.credit_loop {
                    None => "none (channel dependency graph acyclic)".to_string(),
                    Some(c) => format!(
                        "CYCLE of {} links: {}",
                        c.len(),
                        c.iter()
                            .map(|x| x.describe(subnet))
                            .collect::<Vec<_>>()
                            .join(" => ")
                    ),
                }
            )?;
            writeln!(
                out,
                "routes per port  switch-to-switch links max {} mean {:.1} stddev {:.2}; CA-facing ports max {} mean {:.1}",
                b.per_link.max,
                b.per_link.mean,
                b.per_link.stddev,
                b.per_ca_port.max,
                b.per_ca_port.mean
            )?;
        }
        _ => writeln!(
            out,
            "check            FAILED: no forwarding tables were computed"
        )?,
    }
    writeln!(out, "simulator        {}", d.fabric.stats())?;
    if let Some(dir) = dump_dir {
        writeln!(out, "dumps            {}", dir.display())?;
    }
    if o.up {
        writeln!(
            out,
            "SUBNET UP after {} virtual, {} wall",
            fmt_dur(o.virtual_time),
            fmt_dur(o.wall)
        )?;
    } else {
        writeln!(
            out,
            "subnet did NOT come up: {}",
            o.not_up_reason.as_deref().unwrap_or("unknown")
        )?;
    }
    writeln!(
        out,
        "verdict          {}",
        if o.ok() { "PASSED" } else { "FAILED" }
    )?;
    Ok(())
}

/// The GUIDs of the topology's nodes, for tests.
#[must_use]
pub fn topology_guids(t: &Topology) -> Vec<Guid> {
    t.nodes().map(|(_, n)| n.guid()).collect()
}

// ----- the command line ------------------------------------------------------------------

/// What `ibsm sim ARGS` asks for.
#[derive(Debug)]
pub enum SimCli {
    /// Print this help text.
    Help(String),
    /// Print the version.
    Version,
    /// Write the configuration to the file (`-c`).
    CreateConfig(PathBuf, Box<config::Options>),
    /// Run, after printing these warnings.
    Run(Box<SimArgs>, Vec<String>),
}

/// `ibsm sim`'s options besides OpenSM's.
pub const SIM_EXTRAS: &[ExtraOpt] = &[
    ExtraOpt {
        long: "routing",
        short: None,
        metavar: Some("ENGINES"),
        help: "routing engines, as -R",
    },
    ExtraOpt {
        long: "seed",
        short: None,
        metavar: Some("N"),
        help: "simulator seed (faults)",
    },
    ExtraOpt {
        long: "faults",
        short: None,
        metavar: Some("SPEC"),
        help: "faults per link crossing: drop, dup, corrupt, garble, delay=P:D, symbol \
               (e.g. drop=0.01,corrupt=0.0001,delay=0.01:5ms; see `ibsm sim serve --help`)",
    },
    ExtraOpt {
        long: "sm-at",
        short: None,
        metavar: Some("NODE[:PORT]"),
        help: "where the SM attaches (name or 0xGUID)",
    },
    ExtraOpt {
        long: "guid2lid",
        short: None,
        metavar: Some("FILE"),
        help: "guid2lid file to honour at start",
    },
    ExtraOpt {
        long: "time-limit",
        short: None,
        metavar: Some("SECONDS"),
        help: "virtual-time limit (default 600)",
    },
    ExtraOpt {
        long: "verbose-log",
        short: None,
        metavar: None,
        help: "print verbose SM log lines (as -D 0x07)",
    },
    ExtraOpt {
        long: "allow-credit-loops",
        short: None,
        metavar: None,
        help: "a credit loop in the tables is reported but does not fail the run",
    },
    ExtraOpt {
        long: "allow-partial",
        short: None,
        metavar: None,
        help: "nodes of the topology not connected to the SM's port do not fail the run",
    },
    ExtraOpt {
        long: "allow-no-pairs",
        short: None,
        metavar: None,
        help: "a check of zero CA pairs does not fail the run",
    },
    ExtraOpt {
        long: "no-progress",
        short: None,
        metavar: None,
        help: "no progress display on a terminal",
    },
];

/// Options `ibsm sim` cannot honour (they concern a daemon on a real port), refused rather
/// than silently ignored: (is it set?, what to say).
fn sim_refused(o: &config::Options) -> Option<String> {
    let d = config::Options::default();
    let refused: [(bool, &str); 6] = [
        (
            o.daemon,
            "-B/--daemon: ibsm sim runs in the foreground and exits",
        ),
        (
            o.log_file != d.log_file,
            "-f/--log_file: ibsm sim prints its log on standard output",
        ),
        (
            o.transport != d.transport,
            "--transport: ibsm sim always uses the simulator",
        ),
        (
            o.ca_name != d.ca_name || o.ca_port != d.ca_port,
            "--ca/--port: ibsm sim attaches with --sm-at NODE[:PORT] or -g GUID",
        ),
        (
            o.cache_dir != d.cache_dir,
            "--cache-dir: ibsm sim keeps no state; use --guid2lid FILE and --dump-dir DIR",
        ),
        (
            o.honor_guid2lid_file,
            "-x/--honor_guid2lid: ibsm sim honours --guid2lid FILE",
        ),
    ];
    refused
        .iter()
        .find(|(set, _)| *set)
        .map(|(_, why)| format!("sim: {why}"))
}

/// Parses `ibsm sim`'s arguments (after `sim`). Never panics, whatever the input.
///
/// # Errors
/// The message to print for bad usage or input (exit status 2).
pub fn parse_cli(args: &[String]) -> Result<SimCli, String> {
    let parsed = match config::parse_options_args(args, SIM_EXTRAS, &Environment::isolated()) {
        Ok(p) => p,
        Err(e) => return Err(e.to_string()),
    };
    match parsed.run.action {
        Action::Help => {
            return Ok(SimCli::Help(format!(
                "usage: ibsm sim TOPOLOGY [options]\n\n{}",
                config::usage(SIM_EXTRAS)
            )));
        }
        Action::Version => return Ok(SimCli::Version),
        Action::CreateConfig(path) => {
            return Ok(SimCli::CreateConfig(path, Box::new(parsed.run.options)));
        }
        Action::Run => {}
    }
    // `ibsm sim` honours `guid` (-g): it picks the SM's port.
    let warnings: Vec<config::ConfigWarning> = parsed
        .run
        .warnings
        .iter()
        .filter(|w| !matches!(w, config::ConfigWarning::Inconsistent { message } if message.starts_with("guid ")))
        .cloned()
        .collect();
    let warnings = config::summarize_warnings(&warnings);
    let topology = match parsed.positionals.as_slice() {
        [t] => t.clone(),
        [] => return Err("sim: missing TOPOLOGY (a file or a spec such as fat-tree:2,36)".into()),
        [_, extra, ..] => return Err(format!("sim: unexpected argument {extra:?}")),
    };
    let mut options = parsed.run.options;
    if let Some(why) = sim_refused(&options) {
        return Err(why);
    }
    // A one-shot run exits non-zero when a file an option names cannot be read (a daemon
    // logs it and goes on, as OpenSM does).
    if let Some(e) = options.unreadable_option_files().first() {
        return Err(format!("ERR: {e}"));
    }
    let mut sim = SimConfig::default();
    let mut attach = (options.guid.0 != 0).then(|| format!("0x{:x}", options.guid.0));
    let mut guid2lid = None;
    let mut limit = Duration::from_secs(600);
    let mut verbose = options.log_flags & 0x04 != 0;
    let (mut allow_credit_loops, mut allow_partial, mut allow_no_pairs) = (false, false, false);
    let mut progress = true;
    for (name, value) in parsed.extras {
        let v = value.unwrap_or_default();
        match name {
            "routing" => match config::RoutingEngines::parse(&v) {
                Ok(r) => options.routing_engine = r,
                Err(e) => return Err(format!("--routing {v:?}: {e}")),
            },
            "seed" => match v.parse() {
                Ok(s) => sim.seed = s,
                Err(_) => return Err(format!("--seed {v:?}: expected a non-negative integer")),
            },
            "faults" => match FaultConfig::parse(&v) {
                Ok(f) => sim.faults = f,
                Err(e) => return Err(format!("--faults {v:?}: {e}")),
            },
            "sm-at" => {
                if attach.is_some() && options.guid.0 != 0 {
                    return Err("sim: give either -g GUID or --sm-at, not both".into());
                }
                attach = Some(v);
            }
            "guid2lid" => guid2lid = Some(v.into()),
            "time-limit" => match v.parse::<f64>().ok().filter(|s| *s > 0.0) {
                Some(s) => match Duration::try_from_secs_f64(s) {
                    Ok(d) => limit = d,
                    Err(_) => {
                        return Err(format!("--time-limit {v:?}: at most {} seconds", u64::MAX))
                    }
                },
                None => {
                    return Err(format!(
                        "--time-limit {v:?}: expected a positive number of seconds"
                    ))
                }
            },
            "verbose-log" => verbose = true,
            "allow-credit-loops" => allow_credit_loops = true,
            "allow-partial" => allow_partial = true,
            "allow-no-pairs" => allow_no_pairs = true,
            "no-progress" => progress = false,
            _ => {}
        }
    }
    let dump_dir = (options.dump_files_dir != config::Options::default().dump_files_dir)
        .then(|| options.dump_files_dir.clone());
    let (node_names, names_warning) = options.node_names();
    let args = SimArgs {
        topology,
        sm: sm::SmConfig {
            engine_options: options.engine_options(),
            ..options.to_sm_config()
        },
        sim,
        dump_dir,
        guid2lid,
        attach,
        limit,
        verbose,
        allow_credit_loops,
        allow_partial,
        allow_no_pairs,
        progress,
        consolidate_ipv6_snm: options.consolidate_ipv6_snm_req,
        exit_on_fatal: options.exit_on_fatal,
        drop_event_subscriptions: options.drop_event_subscriptions,
        node_names,
        sa_db_dump: options.sa_db_dump,
        sa_db_file: options.sa_db_file.clone(),
        mcgroup_join_validation: options.mcgroup_join_validation,
        ipoib_mcgroup_creation_validation: options.ipoib_mcgroup_creation_validation,
    };
    let mut warnings = warnings;
    warnings.extend(names_warning);
    warnings.extend(engine_file_hints(&options, &args));
    Ok(SimCli::Run(Box::new(args), warnings))
}

/// Warnings for an engine that will fail on a generated fabric for want of a file `ibsm topo`
/// can write: torus-2QoS without a readable torus_config on a torus or mesh (OpenSM's ERR
/// 4E11), dfp2 without a root_guid_file on a tree or Dragonfly+ fabric.
fn engine_file_hints(options: &config::Options, args: &SimArgs) -> Vec<String> {
    use config::RoutingEngineId as Id;
    use fabric_sim::topo::gen::{has_top_tier, Grid};
    let engines = &options.routing_engine.engines;
    let eo = &args.sm.engine_options;
    let spec = &args.topology;
    let mut out = Vec::new();
    if engines.contains(&Id::Torus2QoS) && matches!(Grid::of_spec(spec), Ok(Some(_))) {
        if let Some((path, Err(why))) = eo.torus_config.as_ref().map(|f| (&f.path, &f.contents)) {
            out.push(format!(
                "torus-2QoS cannot read its torus_config {path}: {why}; `ibsm topo {spec} --write-torus-conf FILE` writes one for this fabric (then --torus_config FILE)"
            ));
        }
    }
    if engines.contains(&Id::Dfp2) && eo.root_guid_file.is_none() && has_top_tier(spec) {
        out.push(format!(
            "dfp2 needs a root_guid_file; `ibsm topo {spec} --write-root-guids FILE` writes this fabric's (then --root_guid_file FILE)"
        ));
    }
    out
}

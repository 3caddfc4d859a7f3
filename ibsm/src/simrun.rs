//! `ibsm sim`: the SM core against the built-in simulated fabric.
//!
//! Loads a topology (file or generator spec), builds a [`Fabric`] with a real SMA on every
//! node, attaches the SM at a CA port (or a switch's port 0) exactly as on hardware, and drives
//! both on the simulator's virtual clock until the subnet is up (or nothing is left to do).
//! Afterwards it checks, from the SM's tables, that every CA reaches every CA along a shortest
//! path, writes OpenSM's dump files if asked, and prints a report.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId as TopoNode, Topology};
use ibmad::{NodeType, PortNum, Time};
use sm::check::Reachability;
use sm::{Command, Event, Level, Phase, PhaseStats, Sm, SmConfig};

use crate::persist::{write_atomic, write_dump_files, PersistError};

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
}

/// Why `ibsm sim` could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimRunError {
    /// The topology did not load.
    #[error("topology {spec:?}: {source}")]
    Topology {
        /// The argument.
        spec: String,
        /// Why.
        #[source]
        source: Box<fabric_sim::topo::LoadError>,
    },
    /// The simulator refused the topology or the attachment.
    #[error("simulator: {0}")]
    Sim(#[from] Box<fabric_sim::sim::SimError>),
    /// The SM configuration was rejected.
    #[error("SM configuration: {0}")]
    Config(#[from] sm::ConfigError),
    /// `--sm-at` named nothing usable.
    #[error("--sm-at {0:?}: {1}")]
    Attach(String, &'static str),
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

/// What happened.
#[derive(Debug)]
pub struct SimOutcome {
    /// SUBNET UP was reached.
    pub up: bool,
    /// Every CA reaches every CA along a shortest path (None when there were no tables).
    pub reachability: Option<Reachability>,
    /// Phase counters in order, with the wall time each took.
    pub phases: Vec<(Phase, PhaseStats, Duration)>,
    /// Nodes the SM found.
    pub nodes_found: usize,
    /// Nodes the SM could not reach.
    pub unreachable: usize,
    /// The engine that routed.
    pub engine: String,
    /// The route verifier's report (credit loops, balance; None when there were no tables).
    pub verify: Option<sm::verify::Report>,
    /// Virtual time at SUBNET UP (or at the end).
    pub virtual_time: Duration,
    /// Wall time of the whole run (after loading).
    pub wall: Duration,
}

impl SimOutcome {
    /// The subnet came up and every CA reaches every CA on a shortest path.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.up && self.reachability.as_ref().is_some_and(Reachability::is_ok)
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
    let Some(spec) = spec else {
        for id in t.nodes_of_type(NodeType::CA) {
            if let Some(p) = first_cabled(id) {
                return Ok((id, p));
            }
        }
        let sw = t.nodes_of_type(NodeType::SWITCH).next();
        return sw.map(|id| (id, PortNum(0))).ok_or(SimRunError::Attach(
            String::new(),
            "the topology has no node to attach to",
        ));
    };
    let (name, port) = match spec.rsplit_once(':') {
        Some((n, p)) => {
            let p: u8 = p.parse().map_err(|_| {
                SimRunError::Attach(spec.into(), "port after ':' must be a number 0..=254")
            })?;
            (n, Some(PortNum(p)))
        }
        None => (spec, None),
    };
    let id = t
        .nodes()
        .find(|(_, n)| {
            n.name() == name
                || name
                    .strip_prefix("0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .is_some_and(|g| n.guid().0 == g)
        })
        .map(|(id, _)| id)
        .ok_or(SimRunError::Attach(
            spec.into(),
            "no node with that name or GUID",
        ))?;
    let is_switch = t
        .nodes()
        .find(|(i, _)| *i == id)
        .is_some_and(|(_, n)| n.is_switch());
    let port = match port {
        Some(p) => p,
        None if is_switch => PortNum(0),
        None => first_cabled(id).ok_or(SimRunError::Attach(
            spec.into(),
            "that CA has no cabled port",
        ))?,
    };
    Ok((id, port))
}

fn fmt_dur(d: Duration) -> String {
    let us = d.as_micros();
    if us < 10_000 {
        format!("{:.3} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

struct Driver {
    fabric: Fabric,
    sm: Sm,
    h: SmHandle,
    buf: [u8; 256],
}

impl Driver {
    /// Delivers received MADs, fires due timers and drains transmits, all at the current time.
    fn process(&mut self) {
        let now = self.fabric.now();
        while let Ok(Some((meta, len))) = self.fabric.sm_recv(self.h, &mut self.buf) {
            let n = len.min(self.buf.len());
            self.sm.handle_mad(now, &meta, &self.buf[..n]);
        }
        if self.sm.poll_timeout().is_some_and(|t| t <= now) {
            self.sm.handle_timeout(now);
        }
        while let Some(tx) = self.sm.poll_transmit(now, &mut self.buf) {
            // Back-pressure from the simulator is counted there as a drop; the SM retries.
            let _ = self.fabric.sm_send(self.h, &tx.meta, &self.buf[..tx.len]);
        }
    }

    /// Moves virtual time to the next thing that happens (a fabric event or the SM's timer).
    /// Returns false when nothing is scheduled any more, or the next thing is past `limit`.
    fn advance(&mut self, limit: Time) -> bool {
        if self.fabric.sm_pending(self.h) > 0 {
            return true;
        }
        let now = self.fabric.now();
        let next = match (self.fabric.next_event_time(), self.sm.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => return false,
            },
        };
        if next > limit {
            return false;
        }
        self.fabric.run_until(next.max(now));
        true
    }
}

/// Runs the SM against the simulated fabric, printing log lines and the report to `out`.
///
/// # Errors
/// Bad topology, configuration or attachment; unreadable guid2lid; unwritable dump files.
pub fn run(args: &SimArgs, out: &mut dyn Write) -> Result<SimOutcome, SimRunError> {
    let load_start = Instant::now();
    let topo = Topology::from_spec_or_file(&args.topology).map_err(|e| SimRunError::Topology {
        spec: args.topology.clone(),
        source: Box::new(e),
    })?;
    let load_time = load_start.elapsed();
    let (at, port) = attach_point(&topo, args.attach.as_deref())?;
    let at_name = topo
        .nodes()
        .find(|(i, _)| *i == at)
        .map_or(String::new(), |(_, n)| n.name().to_string());
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

    let mut fabric = Fabric::new(&topo, args.sim.clone()).map_err(Box::new)?;
    let att = fabric.attach_sm(at, port).map_err(Box::new)?;
    let mut sm = Sm::new(SmConfig {
        port,
        ..args.sm.clone()
    })?;
    if let Some(path) = &args.guid2lid {
        match std::fs::read_to_string(path) {
            Ok(text) => sm.handle_command(Time::ZERO, Command::Guid2Lid(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                writeln!(
                    out,
                    "guid2lid {} not found: assigning afresh",
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
    }
    let mut d = Driver {
        fabric,
        sm,
        h: att.handle,
        buf: [0u8; 256],
    };

    let progress = std::io::stderr().is_terminal();
    let limit = Time::ZERO + args.limit;
    let start = Instant::now();
    let mut last_phase = start;
    let mut phases = Vec::new();
    let mut up = false;
    let mut up_at = Duration::ZERO;
    let mut unreachable = 0usize;
    let mut guid2lid_text: Option<String> = None;
    let mut rounds: u64 = 0;
    loop {
        d.process();
        rounds += 1;
        while let Some(ev) = d.sm.poll_event() {
            let vt = d.fabric.now().saturating_since(Time::ZERO);
            match ev {
                Event::Log { level, line } if level <= Level::Info || args.verbose => {
                    writeln!(out, "[{:>12}] {level:<5} {line}", fmt_dur(vt))?;
                }
                Event::PhaseDone { phase, stats } => {
                    let now = Instant::now();
                    phases.push((phase, stats, now - last_phase));
                    last_phase = now;
                }
                Event::NodeUnreachable { dr_path, attempts } => {
                    unreachable += 1;
                    writeln!(
                        out,
                        "[{:>12}] ERR   node at directed route {dr_path} did not answer after {attempts} attempts; skipped",
                        fmt_dur(vt)
                    )?;
                }
                Event::DuplicateGuid {
                    guid,
                    first,
                    second,
                } => {
                    writeln!(
                        out,
                        "[{:>12}] ERR   duplicate NodeGUID {guid} at {first} and {second}",
                        fmt_dur(vt)
                    )?;
                }
                Event::Guid2LidUpdated(text) => guid2lid_text = Some(text),
                Event::SubnetUp => {
                    up = true;
                    up_at = vt;
                }
                Event::Standby { master, priority } => {
                    writeln!(
                        out,
                        "[{:>12}] INFO  standing by for master SM {master} (priority {priority})",
                        fmt_dur(vt)
                    )?;
                }
                Event::SweepFailed { reason } => {
                    writeln!(out, "[{:>12}] ERR   sweep failed: {reason}", fmt_dur(vt))?;
                }
                _ => {}
            }
        }
        if up || !d.advance(limit) {
            break;
        }
        if progress && rounds.is_multiple_of(4096) {
            eprint!(
                "\r{:?} {:>10} SMPs sent, virtual {}   ",
                d.sm.state(),
                d.fabric.sm_stats(d.h).map_or(0, |s| s.sent),
                fmt_dur(d.fabric.now().saturating_since(Time::ZERO))
            );
        }
    }
    if progress {
        eprint!("\r{:70}\r", "");
    }
    let wall = start.elapsed();
    let virtual_time = if up {
        up_at
    } else {
        d.fabric.now().saturating_since(Time::ZERO)
    };

    let check_start = Instant::now();
    let verified = d.sm.lfts().map(|l| sm::verify::verify(d.sm.subnet(), l));
    let reachability = verified.as_ref().map(|v| v.reach.clone());
    let check_time = check_start.elapsed();

    if let Some(dir) = &args.dump_dir {
        write_dumps(dir, &d.sm, guid2lid_text.as_deref())?;
    }

    let outcome = SimOutcome {
        up,
        reachability,
        phases,
        nodes_found: d.sm.subnet().nodes.len(),
        unreachable,
        engine: d.sm.routing_engine_used().to_string(),
        verify: verified,
        virtual_time,
        wall,
    };
    report(out, &d, &outcome, check_time, args.dump_dir.as_deref())?;
    Ok(outcome)
}

fn write_dumps(dir: &Path, sm: &Sm, guid2lid: Option<&str>) -> Result<(), SimRunError> {
    write_dump_files(dir, sm)?;
    let g2l = guid2lid.map_or_else(|| sm.guid2lid().to_text(), str::to_string);
    write_atomic(&dir.join("guid2lid"), g2l.as_bytes())?;
    Ok(())
}

fn report(
    out: &mut dyn Write,
    d: &Driver,
    o: &SimOutcome,
    check_time: Duration,
    dump_dir: Option<&Path>,
) -> std::io::Result<()> {
    let subnet = d.sm.subnet();
    let switches = subnet.switches().count();
    let end_ports: Vec<_> = subnet.end_ports().collect();
    let lids: Vec<u16> = end_ports
        .iter()
        .map(|&(n, p)| subnet.port(n, p).map_or(0, |x| x.lid.0))
        .filter(|&l| l != 0)
        .collect();
    let linked = subnet.ports.iter().filter(|p| p.remote.is_some()).count();
    writeln!(out)?;
    writeln!(
        out,
        "nodes found      {} ({} switches, {} CAs/routers), {} linked ports, {} unreachable",
        o.nodes_found,
        switches,
        o.nodes_found - switches,
        linked,
        o.unreachable
    )?;
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
        "{:<16} {:>9} {:>8} {:>9} {:>12} {:>12}",
        "phase", "SMPs", "retried", "timed-out", "virtual", "wall"
    )?;
    let mut tot = PhaseStats::default();
    for (phase, s, wall) in &o.phases {
        writeln!(
            out,
            "{:<16} {:>9} {:>8} {:>9} {:>12} {:>12}",
            phase.to_string(),
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
        "{:<16} {:>9} {:>8} {:>9} {:>12} {:>12}",
        "total",
        tot.smps,
        tot.retried,
        tot.timed_out,
        fmt_dur(o.virtual_time),
        fmt_dur(o.wall)
    )?;
    match &o.reachability {
        Some(r) if r.is_ok() => writeln!(
            out,
            "check            every CA reaches every CA along a shortest path ({} pairs, {})",
            r.pairs,
            fmt_dur(check_time)
        )?,
        Some(r) => writeln!(
            out,
            "check            FAILED: {} unreachable pairs (e.g. {:?}), {} loops, {} longer than shortest",
            r.unreachable_count,
            r.unreachable.first(),
            r.loops,
            r.non_shortest
        )?,
        None => writeln!(out, "check            no forwarding tables were computed")?,
    }
    if let Some(v) = &o.verify {
        let b = &v.balance;
        writeln!(
            out,
            "credit loops     {}; routes per link max {} mean {:.1} stddev {:.2}",
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
            },
            b.per_link.max,
            b.per_link.mean,
            b.per_link.stddev
        )?;
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
        writeln!(out, "subnet did NOT come up (state {:?})", d.sm.state())?;
    }
    Ok(())
}

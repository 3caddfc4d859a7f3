//! `ibsm run`: the SM on a real port through the kernel's user_mad interface (or ibsim's
//! `libumad2sim.so` shim, which impersonates it).
//!
//! The loop is the whole daemon (STYLE P5): it maps `Instant` onto the core's [`Time`],
//! moves MADs between the [`UmadPort`] and the [`Sm`], sleeps in the port's receive until the
//! core's next timeout, writes log lines, persists guid2lid atomically after each assignment,
//! and with `-o` writes the dump files and exits once the subnet is up.
//!
//! Besides the SM's QP0 agents the port registers the SA class agent (SubnAdm version 2 on
//! QP1, with RMPP): the master SM hosts the SA, and every SubnAdm request to its port goes to
//! [`sm::sa::Sa`]. The loop hands the SA every new snapshot the SM builds at SUBNET UP
//! ([`sm::Sm::sa_snapshot`]), the SM's multicast tables and whether the SM is master with the
//! subnet up, and hands the SM the multicast groups after every change ([`sm::sa::Sa::follow`]:
//! the SA pre-creates the partitions' IPoIB groups, joins and leaves change them); the SA's answers
//! go out as they are (a GetTableResp as one long MAD where the transport does RMPP: the
//! kernel, `libibsm_umad.so`). Registering the class also keeps ibsim's shim alive: it
//! forwards every request ibsim does not answer itself to the SM's process and dereferences a
//! null agent for a class nobody registered.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ibmad::{MadPort, MgmtClass, PortError, Time};
use sm::drive::Agents;
use sm::{Command, Event, Level, Sm};
use umad::{AgentSpec, UmadConfig, UmadPort};

use crate::config::{Options, Transport};
use crate::ctl::{CtlServer, Request};
use crate::metrics::{Metrics, MetricsServer};
use crate::persist::{write_atomic, write_dump_files};
use crate::service::Signals;
use sm::perfmgr::{PerfEvent, PerfMgr};

/// Where log lines go: OpenSM's `log_file` (or standard output for `stdout`/`-`).
struct Log {
    out: Box<dyn Write>,
    verbose: bool,
    /// The file, to reopen after logrotate moved it (`None` for standard output).
    path: Option<PathBuf>,
    /// The same file, to truncate at the size limit.
    file: Option<File>,
    /// `log_max_size` in bytes; 0: none.
    limit: u64,
    /// Bytes the file holds (what it held when opened, plus what was written since).
    written: u64,
}

/// Civil date (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's algorithm).
pub(crate) fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `YYYY-MM-DD HH:MM:SS.uuuuuu` in UTC, from the system clock (log timestamps only).
fn timestamp() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:06}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        d.subsec_micros()
    )
}

impl Log {
    fn open(opts: &Options) -> Result<Log, String> {
        let verbose = opts.log_flags & 0x04 != 0;
        let p = &opts.log_file;
        let mut log = Log {
            out: Box::new(std::io::stdout()),
            verbose,
            path: None,
            file: None,
            limit: u64::from(opts.log_max_size) << 20,
            written: 0,
        };
        if p.as_os_str() == "stdout" || p.as_os_str() == "-" {
            return Ok(log);
        }
        log.path = Some(p.clone());
        log.reopen()?;
        if !opts.accum_log_file {
            log.truncate()?;
        }
        Ok(log)
    }

    /// Reopens the log file (SIGUSR1, after logrotate); standard output stays.
    fn reopen(&mut self) -> Result<(), String> {
        let Some(p) = &self.path else { return Ok(()) };
        let err = |e: std::io::Error| format!("log file {}: {e}", p.display());
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map_err(err)?;
        self.written = f.metadata().map_err(err)?.len();
        self.file = Some(f.try_clone().map_err(err)?);
        self.out = Box::new(f);
        Ok(())
    }

    /// Empties the log file (`-e` at start, the size limit later): appends go to its start.
    fn truncate(&mut self) -> Result<(), String> {
        if let (Some(f), Some(p)) = (&self.file, &self.path) {
            f.set_len(0)
                .map_err(|e| format!("log file {}: {e}", p.display()))?;
            self.written = 0;
        }
        Ok(())
    }

    /// `log_max_size` in MB (0: none), as on start and after SIGHUP.
    fn set_limit(&mut self, mb: u32) {
        self.limit = u64::from(mb) << 20;
    }

    /// OpenSM's log flags: 0x04 and above adds the verbose lines.
    fn set_flags(&mut self, flags: u8) {
        self.verbose = flags & 0x04 != 0;
    }

    fn line(&mut self, level: Level, text: &str) {
        if level > Level::Info && !self.verbose {
            return;
        }
        let code = match level {
            Level::Error => 0x01,
            Level::Warn | Level::Info => 0x02,
            Level::Verbose => 0x04,
        };
        let line = format!("{} [ibsm] 0x{code:02x} -> {text}\n", timestamp());
        let _ = self.out.write_all(line.as_bytes());
        let _ = self.out.flush();
        self.written += line.len() as u64;
        if self.limit > 0 && self.written > self.limit {
            // OpenSM's log_max_size: the file restarts from empty.
            let limit_mb = self.limit >> 20;
            if let Err(e) = self.truncate() {
                eprintln!("ibsm: {e}");
            } else {
                eprintln!("ibsm: log file exceeds the limit of {limit_mb} MB; truncating");
            }
        }
    }
}

/// How `ibsm run` is steered while it runs (see [`crate::ctl`], [`crate::service`]).
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// The command line, parsed again (with the config file) on SIGHUP.
    pub args: Vec<String>,
    /// The control socket to listen on; `None`: no socket.
    pub socket: Option<PathBuf>,
    /// The socket was asked for explicitly: failing to bind it is an error, not a warning.
    pub socket_required: bool,
    /// `--metrics-listen ADDR`: serve Prometheus/OpenMetrics text at `/metrics`.
    pub metrics_listen: Option<String>,
}

/// Runs the daemon with `opts`; returns the process exit status.
pub fn run(opts: &Options) -> ExitCode {
    run_controlled(opts, &Control::default())
}

/// [`run`] with a control socket and SIGHUP's command line.
pub fn run_controlled(opts: &Options, control: &Control) -> ExitCode {
    match run_inner(opts, control) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("ibsm: {msg}");
            log_fatal(opts, &msg);
            ExitCode::from(1)
        }
    }
}

/// In daemon mode (`-B`, standard error on `/dev/null`): appends the error that ends the run
/// to the log file, so that it is seen somewhere.
pub fn log_fatal(opts: &Options, msg: &str) {
    if !opts.daemon || matches!(opts.log_file.to_str(), Some("stdout" | "-")) {
        return;
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&opts.log_file)
    {
        use std::io::Write;
        let _ = writeln!(f, "ibsm: ERR: {msg}; exiting");
    }
}

/// `sa_db_file` (`-S`): the SA starts with the file's records, restored before the SM is
/// made so that a file that cannot be restored whole turns client re-registration back on
/// (OpenSM's loader does, so that the clients join again what was lost). A file that cannot
/// be opened is OpenSM's ERR 4C02, and nothing is restored.
fn restore_sa_db(
    opts: &Options,
    log: &mut Log,
    cfg: &mut sm::SmConfig,
    sa: &mut sm::sa::Sa,
    port: ibmad::PortNum,
) {
    let Some(path) = opts.sa_db_file.as_ref() else {
        return;
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            log.line(
                Level::Error,
                &format!(
                    "ERR 4C02: Can't open sa db file '{}' ({e}). Skip restoring",
                    path.display()
                ),
            );
            return;
        }
    };
    let mut errors = Vec::new();
    match sm::sa::db::parse(&text) {
        Ok(db) => {
            let done = sa.restore_db(&db, port, Time::ZERO);
            log.line(
                Level::Info,
                &format!(
                    "SA database restored from {}: {} multicast groups ({} members), {} services, {} event subscriptions",
                    path.display(),
                    done.groups,
                    done.members,
                    done.services,
                    done.informs
                ),
            );
            for why in &done.skipped {
                errors.push(format!("sa_db_file {}: {why}; skipped", path.display()));
            }
        }
        Err(e) => errors.push(format!(
            "ERR: sa_db_file {}: {e}; nothing restored",
            path.display()
        )),
    }
    for e in &errors {
        log.line(Level::Error, e);
    }
    if !errors.is_empty() && cfg.no_clients_rereg {
        cfg.no_clients_rereg = false;
        log.line(
            Level::Warn,
            "sa_db_file not restored whole: clients are asked to re-register (no_clients_rereg overridden)",
        );
    }
}

/// `sa_db_dump`: writes the SA database to `dump_files_dir/opensm-sa.dump` if it changed
/// since `last` (OpenSM's `osm_sa_db_file_dump` writes when its SA is dirty).
fn write_sa_db(opts: &Options, sa: &sm::sa::Sa, last: &mut String, log: &mut Log) {
    if !opts.sa_db_dump {
        return;
    }
    let text = sm::sa::db::dump(sa.state());
    if text == *last {
        return;
    }
    let dir = &opts.dump_files_dir;
    let written = std::fs::create_dir_all(dir)
        .map_err(|e| format!("create {}: {e}", dir.display()))
        .and_then(|()| {
            write_atomic(&dir.join("opensm-sa.dump"), text.as_bytes()).map_err(|e| e.to_string())
        });
    match written {
        Ok(()) => *last = text,
        Err(e) => log.line(Level::Error, &format!("ERR 4C01: opensm-sa.dump: {e}")),
    }
}

/// How often the loop looks at the control socket at most.
const CTL_POLL: Duration = Duration::from_millis(5);

/// Counters the loop keeps, for `status`.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    sent: u64,
    received: u64,
}

/// Hands the SM the files `fresh` names (torus-2QoS.conf, GUID files, lfts_file) if any
/// changed from what it routes with (`engine_opts`, updated), and logs which, after `why`.
fn take_engine_files(
    sm: &mut Sm,
    t: Time,
    log: &mut Log,
    engine_opts: &mut sm::routing::EngineOptions,
    fresh: &sm::routing::EngineOptions,
    why: &str,
) {
    let (files, changed) = engine_opts.with_files_of(fresh);
    if changed.is_empty() {
        return;
    }
    log.line(
        Level::Info,
        &format!(
            "{why}: {} changed: routing afresh with the new contents",
            changed.join(", ")
        ),
    );
    *engine_opts = files.clone();
    sm.handle_command(t, Command::EngineOptions(Box::new(files)));
}

fn status_text(sm: &Sm, opts: &Options, c: Counts) -> String {
    let subnet = sm.subnet();
    let switches = subnet.switches().count();
    let unhealthy: Vec<String> = sm
        .unhealthy_ports()
        .iter()
        .map(|(g, p)| format!("0x{:016x} port {p}", g.0))
        .collect();
    let unhealthy = if unhealthy.is_empty() {
        "none".to_string()
    } else {
        unhealthy.join(", ")
    };
    format!(
        "SM state: {:?}{}\nsweep stage: {:?}\nSM priority: {}\nSM LID: {}\nheavy sweeps: {}\nSMPs sent: {}\nMADs received: {}\nnodes: {} (switches {switches}, CAs {})\nunhealthy ports: {unhealthy}\n",
        sm.role(),
        if sm.is_up() { " (SUBNET UP)" } else { "" },
        sm.stage(),
        opts.sm_priority,
        sm.sm_lid().0,
        sm.heavy_sweeps(),
        c.sent,
        c.received,
        subnet.nodes.len(),
        subnet.nodes.len() - switches,
    )
}

fn run_inner(opts: &Options, control: &Control) -> Result<ExitCode, String> {
    if opts.transport == Transport::Sim {
        return Err(
            "transport `sim` is driven by `ibsm sim TOPOLOGY`; `ibsm run` supports `umad`".into(),
        );
    }
    // A one-shot run exits non-zero when a file an option names cannot be read; a daemon
    // logs the engine's error line naming the file and goes on, as OpenSM does.
    if opts.once {
        if let Some(e) = opts.unreadable_option_files().first() {
            return Err(format!("ERR: {e}"));
        }
    }
    let mut log = Log::open(opts)?;
    if let Err(e) = opts.qos_policy() {
        // As OpenSM (ERR AC04): the subnet runs with the default QoS, and the log says why.
        log.line(
            Level::Error,
            &format!("ERR: {e}; running without a QoS policy"),
        );
    }
    if let Err(e) = opts.partition_config() {
        // As OpenSM: "Partition configuration in error; retrying with default config".
        log.line(
            Level::Error,
            &format!("ERR: {e}; using the default partition configuration"),
        );
    }
    let signals = Signals::install().map_err(|e| format!("signal handlers: {e}"))?;
    let mut ctl = match &control.socket {
        None => None,
        Some(p) => match CtlServer::bind(p) {
            Ok(c) => Some(c),
            Err(e) if !control.socket_required => {
                log.line(
                    Level::Warn,
                    &format!("no control socket ({}: {e})", p.display()),
                );
                None
            }
            Err(e) => return Err(format!("control socket {}: {e}", p.display())),
        },
    };
    // Before the port is opened, as OpenSM's first line: time-to-SUBNET-UP measurements from
    // the log (`ibsm bench opensm`) then include opening the port for both SMs.
    log.line(
        Level::Info,
        &format!("ibsm {} starting", env!("CARGO_PKG_VERSION")),
    );
    // The kernel must stop waiting for a response before the SM core resends the request with
    // the same TID (see umad::port): half the transaction timeout.
    // `guid` (-g) picks the port by its GUID, as OpenSM's; else --ca/--port.
    let port_guid = (opts.guid.0 != 0).then_some(opts.guid);
    let mut ucfg = UmadConfig {
        ca: opts.ca_name.clone(),
        port: (opts.ca_port != 0).then_some(opts.ca_port),
        port_guid,
        response_timeout: (opts.to_sm_config().transaction_timeout / 2)
            .max(std::time::Duration::from_millis(1)),
        ..UmadConfig::default()
    };
    ucfg.agents.push(AgentSpec::sa());
    // The performance manager's client agent (answers only; `ibsm ctl perfmgr enable` can
    // start it at run time, so it is registered even with `perfmgr FALSE`).
    ucfg.agents.push(AgentSpec::gsi(
        MgmtClass::PERF_MGMT,
        1,
        umad::abi::MethodMask::NONE,
    ));
    let mut port = UmadPort::open(&ucfg).map_err(|e| e.to_string())?;
    let dev = port.device().clone();
    if let Some(g) = port_guid {
        let others = opts.ca_name.as_deref().is_some_and(|c| c != dev.ca)
            || (opts.ca_port != 0 && opts.ca_port != dev.port.0);
        if others {
            log.line(
                Level::Warn,
                &format!(
                    "guid 0x{:016x} is {} port {}: --ca/--port ignored",
                    g.0, dev.ca, dev.port
                ),
            );
        }
    }
    if let Err(e) = port.set_issm(true) {
        log.line(
            Level::Warn,
            &format!("could not set IsSM on {}: {e}", dev.issm_path),
        );
    }
    log.line(
        Level::Info,
        &format!(
            "ibsm {} bound to {} port {}",
            env!("CARGO_PKG_VERSION"),
            dev.ca,
            dev.port
        ),
    );

    let mut cfg = sm::SmConfig {
        engine_options: opts.engine_options(),
        ..opts.to_sm_config()
    };
    cfg.port = dev.port;
    // Under ibsim's shim the Armed/Active passes go by directed route, as OpenSM sends them:
    // LID-routed they would cross ports still in Init/Armed, which ibsim forwards only over
    // Active links (its `link_valid`), so every Set would time out for a whole retry round
    // before the DR fallback — 55 s for a 90-node fat tree (tests/interop_ibsim.rs). The IBA
    // passes SMPs on ports in Init and Armed, so on a real device the LID-routed passes stay.
    cfg.lid_routed = cfg.lid_routed && port.is_kernel_device();
    // `-o` exits at SUBNET UP and its SA answers nobody: the QoS tables the SA would serve are
    // not read (and no Gets are left in flight at exit, which ibsim's libumad2sim.so does not
    // survive: it crashes or hangs in its exit path).
    cfg.qos.read_tables = cfg.qos.read_tables && !opts.once;
    // The engine options as the SM has them: SIGHUP hands it the files they name, read again.
    let mut engine_opts = cfg.engine_options.clone();
    // Likewise the QoS configuration, which SIGHUP replaces (OpenSM's qos options can_update).
    let mut qos_cfg = cfg.qos.clone();
    let caps = port.caps();
    let mut sa = sm::sa::Sa::with_config(sm::sa::SaConfig {
        sa_key: opts.sa_key,
        transport_rmpp: caps.rmpp,
        max_mad_len: caps.max_mad_len,
        resp_time: opts.to_sm_config().transaction_timeout,
        report_retries: opts.to_sm_config().transaction_retries,
        // user_mad without RMPP is ibsim's shim: its clients can not reassemble either, so a
        // table is cut to one MAD there (the kernel and libibsm_umad.so do RMPP).
        segment: false,
        // A re-sweep's snapshot answers once its PathRecord index is built (below, off the
        // loop); the previous one answers meanwhile.
        swap_when_warm: true,
        multicast: !opts.disable_multicast,
        consolidate_ipv6_snm: opts.consolidate_ipv6_snm_req,
        drop_event_subscriptions: opts.drop_event_subscriptions,
        mcgroup_join_validation: opts.mcgroup_join_validation,
        ipoib_mcgroup_creation_validation: opts.ipoib_mcgroup_creation_validation,
        ..sm::sa::SaConfig::default()
    });
    restore_sa_db(opts, &mut log, &mut cfg, &mut sa, dev.port);
    let (node_names, names_warning) = opts.node_names();
    if let Some(w) = names_warning {
        log.line(Level::Warn, &w);
    }
    let mut sm = Sm::new(cfg).map_err(|e| e.to_string())?;
    let g2l_path: PathBuf = opts.cache_dir.join("guid2lid");
    if !opts.reassign_lids {
        if let Ok(text) = std::fs::read_to_string(&g2l_path) {
            if opts.exit_on_fatal {
                if let Some(fatal) = crate::persist::guid2lid_fatal(&g2l_path, &text) {
                    return Err(fatal);
                }
            }
            sm.handle_command(Time::ZERO, Command::Guid2Lid(text));
        }
    }
    let dump_dir = (opts.log_flags & 0x40 != 0
        || opts.dump_files_dir != Options::default().dump_files_dir)
        .then(|| opts.dump_files_dir.clone());

    let epoch = Instant::now();
    let now = || Time(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX));
    // Large enough for an RMPP-reassembled SA request where the kernel does RMPP (the SA's
    // answers may be longer: caps().max_mad_len is the send limit).
    let mut buf = vec![0u8; port.max_recv_len()];
    // What `sa_db_dump` last wrote (written again only when it changed).
    let mut sa_dumped = String::new();
    // The snapshot whose index is being built.
    let mut warming: Option<std::sync::Arc<sm::sa::SaSnapshot>> = None;
    let mut pm = PerfMgr::new(opts.perfmgr_config());
    pm.set_enabled(opts.perfmgr);
    let (mut sent, mut received) = (0u64, 0u64);
    let mut ready = false;
    let mut opts = opts.clone();
    let mut metrics = Metrics::new();
    let metrics_server = match &control.metrics_listen {
        Some(a) => Some(MetricsServer::bind(a)?),
        None => None,
    };
    let mut last_ctl = epoch;
    loop {
        let t = now();
        // Signals and the control socket, between two turns of the SM.
        let sig = signals.take();
        if sig.terminate {
            if sm.role() == sm::Role::Master {
                write_sa_db(&opts, &sa, &mut sa_dumped, &mut log);
            }
            log.line(Level::Info, "exiting on SIGTERM");
            crate::service::notify_stopping();
            return Ok(ExitCode::SUCCESS);
        }
        if sig.reopen_log {
            match log.reopen() {
                Ok(()) => log.line(Level::Info, "log file reopened (SIGUSR1)"),
                Err(e) => eprintln!("ibsm: SIGUSR1: {e}"),
            }
        }
        if sig.reload {
            match crate::config::parse_run_args(&control.args) {
                Ok(new) => {
                    log.set_flags(new.options.log_flags);
                    log.set_limit(new.options.log_max_size);
                    // The files the engines read (torus-2QoS.conf, GUID files, lfts_file) are
                    // taken again, as OpenSM reads them at each routing; other option
                    // changes wait for a restart.
                    let fresh = new.options.engine_options();
                    // QoS is taken below; the engines' `qos` follows it.
                    let without_qos = |mut c: sm::SmConfig| {
                        c.qos = sm::qos::QosConfig::default();
                        c
                    };
                    let mut others = fresh.with_files_of(&engine_opts).0;
                    others.qos = engine_opts.qos;
                    let restart = without_qos(new.options.to_sm_config())
                        != without_qos(opts.to_sm_config())
                        || others != engine_opts;
                    take_engine_files(&mut sm, t, &mut log, &mut engine_opts, &fresh, "SIGHUP");
                    let mut new_qos = new.options.qos_config();
                    if let Err(e) = new.options.qos_policy() {
                        // A policy that no longer parses does not drop the one in use.
                        log.line(
                            Level::Error,
                            &format!("SIGHUP: {e}; the policy in use is kept"),
                        );
                        new_qos.policy = qos_cfg.policy.clone();
                    }
                    if new_qos != qos_cfg {
                        log.line(
                            Level::Info,
                            "SIGHUP: QoS configuration changed (qos, qos_* or the policy file): programming it",
                        );
                        engine_opts.qos = new_qos.enabled;
                        qos_cfg = new_qos.clone();
                        sm.handle_command(t, Command::Qos(Box::new(new_qos)));
                    }
                    log.line(
                        Level::Info,
                        &format!(
                            "SIGHUP: re-read {}; heavy sweep{}",
                            new.config_file
                                .as_ref()
                                .map_or("the command line".to_string(), |f| f
                                    .display()
                                    .to_string()),
                            if restart {
                                " (changed SM options take effect at restart)"
                            } else {
                                ""
                            }
                        ),
                    );
                    opts.log_flags = new.options.log_flags;
                }
                Err(e) => log.line(
                    Level::Error,
                    &format!("SIGHUP: configuration not re-read: {e}"),
                ),
            }
            sm.handle_command(t, Command::HeavySweep);
        }
        if let Some(srv) = &metrics_server {
            srv.poll(|| {
                metrics.observe(&sm, opts.sm_priority);
                metrics.observe_perfmgr(&pm);
                metrics.observe_sa(sa.stats());
                metrics.render()
            });
        }
        // The control socket is looked at every CTL_POLL at most (an accept per turn was a
        // syscall per SA query under load); a request waits no longer than that, or than the
        // receive wait below when idle.
        if let Some(c) = ctl.as_mut().filter(|_| last_ctl.elapsed() >= CTL_POLL) {
            last_ctl = Instant::now();
            let counts = Counts { sent, received };
            c.poll(|req| match req {
                Request::Status => Ok(status_text(&sm, &opts, counts)),
                Request::Sweep { heavy } => {
                    let cmd = if heavy {
                        Command::HeavySweep
                    } else {
                        Command::Sweep
                    };
                    sm.handle_command(t, cmd);
                    log.line(
                        Level::Info,
                        &format!(
                            "{} sweep requested on the control socket",
                            if heavy { "heavy" } else { "light" }
                        ),
                    );
                    Ok(String::new())
                }
                Request::Reroute => {
                    // As OpenSM's reroute, which routes with the files as they are now.
                    let mut fresh = engine_opts.clone();
                    for (_, f) in fresh.files_mut() {
                        if let Some(f) = f {
                            f.contents =
                                std::fs::read_to_string(&f.path).map_err(|e| e.to_string());
                        }
                    }
                    take_engine_files(&mut sm, t, &mut log, &mut engine_opts, &fresh, "reroute");
                    sm.handle_command(t, Command::Reroute);
                    log.line(Level::Info, "reroute requested on the control socket");
                    Ok("rerouting (heavy sweep)".into())
                }
                Request::LogLevel(n) => {
                    log.set_flags(n);
                    opts.log_flags = n;
                    Ok(format!("log flags 0x{n:02x}"))
                }
                Request::Perfmgr(words) => crate::perf::request(&mut pm, t, &words),
                Request::Dump => {
                    let dir = opts.dump_files_dir.clone();
                    write_dump_files(&dir, &sm, &node_names)
                        .map(|()| format!("dump files written to {}", dir.display()))
                        .map_err(|e| e.to_string())
                }
            });
        }
        // Timers and sends of the SM and the performance manager (the shared drive loop's
        // agents); a send refused as WouldBlock is lost and retried on the agent's timeout.
        let mut agents = Agents::sm(&mut sm).with_perfmgr(&mut pm);
        agents.handle_timeouts(t);
        match agents.transmit(t, &mut port) {
            Ok(s) => sent += s.sm,
            Err(e) => log.line(Level::Error, &format!("send failed: {e}")),
        }
        while let Some(ev) = pm.poll_event() {
            match ev {
                PerfEvent::Log { level, line } => log.line(level, &line),
                PerfEvent::SweepDone(s) => {
                    metrics.perfmgr_sweep(&s);
                    log.line(
                        Level::Verbose,
                        &format!(
                            "perfmgr sweep: {} ports in {:.3} s ({} queries, {} timed out)",
                            s.ports,
                            s.elapsed.as_secs_f64(),
                            s.queries,
                            s.timed_out
                        ),
                    );
                }
            }
        }
        while let Some(ev) = sm.poll_event() {
            if let Some((level, line)) = ev.log_line() {
                log.line(level, &line);
            }
            match ev {
                Event::PhaseDone { phase, stats } => {
                    if phase == sm::Phase::LightSweep {
                        // OpenSM's "LIGHT SWEEP COMPLETE" is verbose too; this one counts.
                        log.line(
                            Level::Verbose,
                            &format!(
                                "light sweep done in {:.3} s: {} SMPs ({} retried, {} timed out); Sets: {}",
                                stats.elapsed.as_secs_f64(),
                                stats.smps,
                                stats.retried,
                                stats.timed_out,
                                stats.sets
                            ),
                        );
                    }
                    metrics.phase_done(phase, &stats);
                    if phase == sm::Phase::LightSweep && sm.role() == sm::Role::Master {
                        write_sa_db(&opts, &sa, &mut sa_dumped, &mut log);
                    }
                }
                Event::Guid2LidUpdated(text) => {
                    let _ = std::fs::create_dir_all(&opts.cache_dir);
                    if let Err(e) = write_atomic(&g2l_path, text.as_bytes()) {
                        log.line(Level::Error, &format!("guid2lid not saved: {e}"));
                    }
                }
                Event::SubnetUp => {
                    // The performance manager watches what the sweep found.
                    pm.set_targets(
                        t,
                        dev.port,
                        sm.sm_lid(),
                        sm::perfmgr::targets(sm.subnet(), pm.config().ignore_cas),
                    );
                    // This sweep's figures come in its HeavySweepDone line; these are the
                    // daemon's totals since it started.
                    log.line(
                        Level::Info,
                        &format!(
                            "SUBNET UP ({:.3} s after start): {sent} SMPs sent, {received} MADs received since start",
                            epoch.elapsed().as_secs_f64()
                        ),
                    );
                    if let Some(dir) = &dump_dir {
                        if let Err(e) = write_dump_files(dir, &sm, &node_names) {
                            log.line(Level::Error, &format!("dump files: {e}"));
                        }
                    }
                    write_sa_db(&opts, &sa, &mut sa_dumped, &mut log);
                    if !ready {
                        ready = true;
                        crate::service::notify_ready("SUBNET UP");
                    }
                    if opts.once {
                        println!("SUBNET UP");
                        return Ok(ExitCode::SUCCESS);
                    }
                }
                Event::Standby {
                    master, priority, ..
                } if opts.once => {
                    println!("STANDBY: master SM {master} has priority {priority}");
                    return Ok(ExitCode::SUCCESS);
                }
                // With -o, give up only once the SM does: after a sweep with errors it
                // re-sweeps at once a bounded number of times.
                Event::SweepFailed { reason } if opts.once && !sm.resweep_due() => {
                    println!("subnet did NOT come up: {reason}");
                    return Ok(ExitCode::from(1));
                }
                // Traps go to the SA's event subscribers (Report), as OpenSM forwards them.
                Event::TrapReceived {
                    ignored: false,
                    source,
                    notice,
                    ..
                } => sa.forward_trap(source, &notice),
                _ => {}
            }
        }
        // The PathRecord index of every new snapshot is built off this loop (the SM reached
        // SUBNET UP without it); the SA takes the snapshot once it is built, and answers from
        // the previous one meanwhile (the first one at once: a PathRecord query then waits
        // for its index).
        if let Some(snap) = sm.sa_snapshot().filter(|s| {
            !warming
                .as_ref()
                .is_some_and(|w| std::sync::Arc::ptr_eq(w, s))
        }) {
            warming = Some(snap.clone());
            let s = snap.clone();
            let _ = std::thread::Builder::new()
                .name("sa-index".into())
                .spawn(move || s.warm());
        }
        // The SA answers from the last subnet brought up, while this SM is master; the
        // multicast groups it holds go to the SM, which programs their MFTs.
        sa.follow(now(), &mut sm);
        // Lease expiry and Report retries; Reports (traps 64/65 of the new snapshot,
        // forwarded traps) go out here.
        let t = now();
        let mut agents = Agents::sm(&mut sm).with_sa(&mut sa);
        agents.handle_timeouts(t);
        match agents.transmit(t, &mut port) {
            Ok(s) => sent += s.sm,
            Err(e) => log.line(Level::Verbose, &format!("MAD not sent: {e}")),
        }
        let t = now();
        let due = [sm.poll_timeout(), pm.poll_timeout(), sa.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let wait = due
            .map_or(Duration::from_secs(1), |d| d.saturating_since(t))
            // Signals and control requests are looked at between waits.
            .min(Duration::from_millis(100));
        match port.recv_wait(&mut buf, wait) {
            Ok(Some((meta, len))) => {
                let mut next = Some((meta, len));
                // Take everything already queued before the next transmit round.
                let mut agents = Agents::sm(&mut sm).with_sa(&mut sa).with_perfmgr(&mut pm);
                while let Some((meta, len)) = next {
                    let mad = &buf[..len.min(buf.len())];
                    // SA requests are answered after the batch: the SA's queue bound (BUSY)
                    // sees the burst.
                    agents.dispatch(now(), &meta, mad);
                    received += 1;
                    metrics.mad_received(mad.get(3) == Some(&ibmad::Method::TRAP.0));
                    next = port.recv(&mut buf).ok().flatten();
                }
                match agents.transmit(now(), &mut port) {
                    Ok(s) => sent += s.sm,
                    Err(e) => log.line(Level::Verbose, &format!("MAD not sent: {e}")),
                }
                // Joins and leaves of the batch re-route multicast once.
                agents.follow(now());
            }
            Ok(None) => {}
            // A MAD longer than the buffer (cannot happen with max_mad_len) is dropped.
            Err(PortError::BadLength { .. }) => {}
            Err(e) => return Err(format!("receive on {} port {}: {e}", dev.ca, dev.port)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use umad::testutil::TempDir;

    fn opts(path: &std::path::Path) -> Options {
        Options {
            log_file: path.to_path_buf(),
            ..Options::default()
        }
    }

    #[test]
    fn the_log_accumulates_unless_erased() {
        let dir = TempDir::new("log").unwrap();
        let p = dir.path().join("ibsm.log");
        std::fs::write(&p, "earlier session\n").unwrap();
        Log::open(&opts(&p)).unwrap().line(Level::Info, "one");
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.starts_with("earlier session\n") && text.ends_with("-> one\n"),
            "{text}"
        );
        let erase = Options {
            accum_log_file: false,
            ..opts(&p)
        };
        Log::open(&erase).unwrap().line(Level::Info, "two");
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.ends_with("-> two\n"), "{text}");
    }

    #[test]
    fn the_log_restarts_past_its_size_limit() {
        let dir = TempDir::new("log").unwrap();
        let p = dir.path().join("ibsm.log");
        let mut log = Log::open(&Options {
            log_max_size: 1,
            ..opts(&p)
        })
        .unwrap();
        assert_eq!(log.limit, 1 << 20);
        let text = "x".repeat(1000);
        let mut max = 0;
        for _ in 0..3000 {
            log.line(Level::Info, &text);
            let len = std::fs::metadata(&p).unwrap().len();
            max = max.max(len);
        }
        // 3 MB written; the file never grew past the limit by more than one line and restarted.
        assert!(max <= (1 << 20) + 1100, "{max}");
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(
            len < max && len == log.written,
            "{len} {max} {}",
            log.written
        );
        // Appends continue at the start of the emptied file.
        let first = std::fs::read_to_string(&p).unwrap();
        assert!(
            first.lines().all(|l| l.ends_with(&text)),
            "garbled after a restart"
        );
    }
}

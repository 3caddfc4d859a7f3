//! `ibsm bench unlink` and `ibsm bench light`: what a running SM does about a change, and about
//! no change, on a fresh stock ibsim fabric, for stock OpenSM and `ibsm run` alike (issue 12).
//!
//! Both commands start ibsim with its console on a pipe (`-N 30000 -S 4000 -P 200000`), then one
//! SM alone as master on the topology's first CA (OpenSM: `opensm -e -R ENGINE -F CONF` with
//! `force_log_flush TRUE`; ibsm: `ibsm run -R ENGINE -F CONF` with ibsm's defaults), both with
//! `TZ=UTC` so their log times are on the bench's clock. After SUBNET UP the bench waits until
//! the SM is idle (its log quiet for a while; ibsm's `ctl status` also reports the Idle stage:
//! its SL-to-VL reads after SUBNET UP are done). SMPs are counted twice: from ibsm's own log
//! and, for both SMs, as PortXmitPkts of the SM's port as ibsim counts it (`perfquery -x` from
//! the second CA, before and after, less the port's reply to the first read).
//!
//! **unlink** (periodic sweeps off, `-s 0`: the SM reacts to ibsim's traps): writes
//! `Unlink "NODE"[PORT]` (default: the first core switch's port 1, a spine link) at ibsim's
//! console, waits for the SM to settle, then `ReLink` the same. For each change: time from the
//! console write to the next `SUBNET UP` line in the SM's log, heavy sweeps it ran, SMPs (and for
//! ibsm the Sets, from its `heavy sweep N done … Sets:` lines, plus the SL-to-VL reads of its
//! `QoS tables read: … SMPs` lines after SUBNET UP), and the SMPs as a share of ibsm's cold
//! bring-up (its first heavy sweep).
//!
//! **light** (a light sweep every `--interval` seconds, log flags 0x07 so both SMs log their
//! light sweeps: OpenSM's `INITIATING LIGHT SWEEP` / `LIGHT SWEEP COMPLETE`, ibsm's
//! `light sweep done in …`; ibsm with `read_qos_tables FALSE`, as its SL-to-VL reads after
//! SUBNET UP hold light sweeps back): after the first light sweep that follows the settle, counts
//! `--sweeps` more; time per sweep from the log, SMPs per sweep from PortXmitPkts (and ibsm's
//! log), and any LFT Set (there must be none: nothing changed).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use umad::testutil::{missing_peers, IbsimGuard, UMAD2SIM_LIB};

use crate::bench_cmd::{first_cas, log_time, on_path, BenchDir, Which, IBSIM_LIMITS};
use crate::bench_failover::{
    median, now_of_day, parse_sweep_line, since, spawn, stop_on_signals, stopped, wait_log, Proc,
};

const USAGE: &str = "\
usage: ibsm bench unlink TOPOLOGY [--runs N] [--only opensm|ibsm] [--link \"NODE\"[PORT]]
                                  [--routing ENGINE] [--keep DIR] [--timeout SECONDS]
       ibsm bench light TOPOLOGY [--runs N] [--only opensm|ibsm] [--sweeps N] [--interval S]
                                 [--routing ENGINE] [--keep DIR] [--timeout SECONDS]

unlink: on a fresh ibsim fabric brought up by one SM (OpenSM, then ibsm, alternately), cuts a
spine link at ibsim's console and restores it; reports the time from the console command to the
SM's next SUBNET UP and the SMPs (and ibsm's Sets) it sent for each change.
light: the same fabric with a light sweep every S seconds (default 3); reports time and SMPs of
N (default 5) light sweeps of the unchanged fabric.
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Unlink,
    Light,
}

#[derive(Debug)]
struct Args {
    mode: Mode,
    topology: String,
    runs: u32,
    only: Option<Which>,
    /// `"NODE"[PORT]` as ibsim's console takes it; `None`: the first switch's port 1.
    link: Option<String>,
    sweeps: u32,
    interval: u32,
    routing: String,
    keep: Option<PathBuf>,
    timeout: Duration,
}

fn parse_args(mode: Mode, args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        mode,
        topology: String::new(),
        runs: 3,
        only: None,
        link: None,
        sweeps: 5,
        interval: 3,
        routing: "minhop".into(),
        keep: None,
        timeout: Duration::from_secs(600),
    };
    let num = |name: &str, v: &str| -> Result<u32, String> {
        v.parse::<u32>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or(format!("{name} {v:?}: expected a positive integer"))
    };
    let mut it = args.iter();
    let mut topology = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--runs" => a.runs = num("--runs", &value("--runs")?)?,
            "--only" => {
                let v = value("--only")?;
                a.only = Some(match v.as_str() {
                    "opensm" => Which::OpenSm,
                    "ibsm" => Which::Ibsm,
                    _ => return Err(format!("--only {v:?}: expected opensm or ibsm")),
                });
            }
            "--link" if mode == Mode::Unlink => {
                let v = value("--link")?;
                parse_link(&v)?;
                a.link = Some(v);
            }
            "--sweeps" if mode == Mode::Light => a.sweeps = num("--sweeps", &value("--sweeps")?)?,
            "--interval" if mode == Mode::Light => {
                a.interval = num("--interval", &value("--interval")?)?;
            }
            "--routing" => a.routing = value("--routing")?,
            "--keep" => a.keep = Some(value("--keep")?.into()),
            "--timeout" => {
                a.timeout = Duration::from_secs(u64::from(num("--timeout", &value("--timeout")?)?));
            }
            s if !s.starts_with('-') && topology.is_none() => topology = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s:?}")),
        }
    }
    a.topology = topology.ok_or("missing TOPOLOGY")?;
    Ok(a)
}

/// `"NODE"[PORT]` → (NODE, PORT).
fn parse_link(s: &str) -> Result<(String, u8), String> {
    let bad = || format!("--link {s:?}: expected \"NODE\"[PORT], as ibsim's console takes it");
    let rest = s.strip_prefix('"').ok_or_else(bad)?;
    let (node, rest) = rest.split_once('"').ok_or_else(bad)?;
    let port = rest
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|p| p.parse::<u8>().ok())
        .filter(|p| *p >= 1)
        .ok_or_else(bad)?;
    if node.is_empty() {
        return Err(bad());
    }
    Ok((node.to_string(), port))
}

/// `ibsm bench unlink|light ARGS…`; `Err` is the message to print.
pub fn main(unlink: bool, args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return Ok(());
    }
    let a = parse_args(if unlink { Mode::Unlink } else { Mode::Light }, args)?;
    stop_on_signals()?;
    run(&a)
}

/// Figures of one change (unlink) or of the light sweeps (light), for one SM.
#[derive(Clone, Debug)]
struct Sample {
    which: Which,
    /// `Unlink`, `ReLink` or `light`.
    what: &'static str,
    /// Seconds: console write → SUBNET UP (unlink); median light sweep (light).
    secs: f64,
    /// Heavy sweeps after the change (unlink); light sweeps counted (light).
    sweeps: usize,
    /// SMPs from ibsm's log (per light sweep for light); `None` for OpenSM.
    log_smps: Option<u64>,
    /// PortXmitPkts delta (per light sweep for light).
    wire_smps: f64,
    /// Sets from ibsm's log (`none` if none; `-` for OpenSM).
    sets: String,
    /// The SM's cold bring-up SMPs (ibsm: its first heavy sweep; OpenSM: PortXmitPkts).
    cold_smps: f64,
}

fn run(a: &Args) -> Result<(), String> {
    if let Some(why) = missing_peers() {
        return Err(why);
    }
    for prog in ["opensm", "perfquery", "sminfo"] {
        if !on_path(prog) {
            return Err(format!(
                "{prog} not installed (apt-get install opensm infiniband-diags)"
            ));
        }
    }
    let progress = crate::progress::Progress::new(true);
    let topo = crate::simrun::load_topology(&a.topology, &progress)
        .map_err(|e| format!("{}: {e}", a.topology))?;
    let Some([sm_host, probe_host]) = first_cas::<2>(&topo) else {
        return Err("the topology needs two CAs (the SM's and the counter reader's)".into());
    };
    let (sm_host, probe_host) = (sm_host.as_str(), probe_host.as_str());
    let link = match &a.link {
        Some(l) => l.clone(),
        None => {
            let (_, sw) = topo
                .nodes()
                .find(|(_, n)| n.is_switch())
                .ok_or("the topology has no switch to unlink")?;
            format!("\"{}\"[1]", sw.name())
        }
    };
    let dir = BenchDir::new(a.keep.as_deref(), "unlink", &topo)?;
    let (work, net, self_exe) = (dir.work.clone(), dir.net.clone(), dir.self_exe.clone());
    match a.mode {
        Mode::Unlink => println!(
            "# {}: {} switches, {} CAs, {} links; SM at {sm_host:?}, counters read from \
             {probe_host:?}; change: Unlink/ReLink {link}; routing {}; sweep interval 0 (traps)",
            a.topology,
            topo.num_switches(),
            topo.num_cas(),
            topo.num_links(),
            a.routing
        ),
        Mode::Light => println!(
            "# {}: {} switches, {} CAs, {} links; SM at {sm_host:?}, counters read from \
             {probe_host:?}; light sweep every {} s, {} counted; routing {}",
            a.topology,
            topo.num_switches(),
            topo.num_cas(),
            topo.num_links(),
            a.interval,
            a.sweeps,
            a.routing
        ),
    }
    println!(
        "{:<4} {:<7} {:<7} {:>9} {:>7} {:>10} {:>10} {:>8}  Sets",
        "run", "sm", "change", "time [s]", "sweeps", "SMPs log", "SMPs wire", "% cold"
    );
    let mut samples = Vec::new();
    for r in 1..=a.runs {
        for which in [Which::OpenSm, Which::Ibsm] {
            if a.only.is_some_and(|o| o != which) {
                continue;
            }
            let dir = work.join(format!("run{r}-{}", which.name()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            progress.message(&format!("run {r}/{}: {}", a.runs, which.name()));
            let ctx = RunCtx {
                a,
                which,
                net: &net,
                sm_host,
                probe_host,
                dir: &dir,
                self_exe: &self_exe,
            };
            let got = match a.mode {
                Mode::Unlink => ctx.unlink(&link)?,
                Mode::Light => ctx.light()?,
            };
            for s in got {
                progress.suspend(|| println!("{}", row(&r.to_string(), &s)));
                samples.push(s);
            }
        }
    }
    progress.finish();
    print!("{}", summary(&samples));
    if a.keep.is_some() {
        println!("# logs kept in {}", work.display());
    }
    Ok(())
}

fn row(run: &str, s: &Sample) -> String {
    format!(
        "{run:<4} {:<7} {:<7} {:>9.3} {:>7} {:>10} {:>10.0} {:>7.2}%  {}",
        s.which.name(),
        s.what,
        s.secs,
        s.sweeps,
        s.log_smps.map_or("-".to_string(), |n| n.to_string()),
        s.wire_smps,
        100.0 * s.wire_smps / s.cold_smps.max(1.0),
        s.sets
    )
}

fn summary(samples: &[Sample]) -> String {
    let mut out = String::new();
    let mut whats: Vec<&str> = Vec::new();
    for s in samples {
        if !whats.contains(&s.what) {
            whats.push(s.what);
        }
    }
    for what in whats {
        let mut meds = [None, None];
        for (i, w) in [Which::OpenSm, Which::Ibsm].into_iter().enumerate() {
            let of: Vec<&Sample> = samples
                .iter()
                .filter(|s| s.which == w && s.what == what)
                .collect();
            if of.is_empty() {
                continue;
            }
            let secs: Vec<f64> = of.iter().map(|s| s.secs).collect();
            let min = secs.iter().copied().fold(f64::INFINITY, f64::min);
            let med = median(secs);
            let wire = median(of.iter().map(|s| s.wire_smps).collect());
            let cold = median(of.iter().map(|s| s.cold_smps).collect());
            let _ = writeln!(
                out,
                "{what:<7} {:<7} time min {min:.3} s, median {med:.3} s; SMPs (wire, median) {wire:.0} = {:.2}% of a cold bring-up ({cold:.0}); {} run(s)",
                w.name(),
                100.0 * wire / cold.max(1.0),
                of.len()
            );
            meds[i] = Some((min, med));
        }
        if let [Some((omin, omed)), Some((imin, imed))] = meds {
            let _ = writeln!(
                out,
                "{what:<7} OpenSM / ibsm: {:.1}x by median, {:.1}x by minimum",
                omed / imed.max(1e-9),
                omin / imin.max(1e-9)
            );
        }
    }
    out
}

struct RunCtx<'a> {
    a: &'a Args,
    which: Which,
    net: &'a Path,
    sm_host: &'a str,
    probe_host: &'a str,
    dir: &'a Path,
    self_exe: &'a Path,
}

/// Lines of a log at or after `t0` (seconds of the UTC day) that contain `pat`, with their
/// times; a line without a time stamp (the body of OpenSM's message boxes) has the time of the
/// last stamped line before it.
fn lines_after<'t>(text: &'t str, t0: f64, pat: &'t str) -> impl Iterator<Item = (f64, &'t str)> {
    text.lines()
        .scan(None, |last, l| {
            if let Some(at) = log_time(l) {
                *last = Some(at);
            }
            Some(last.map(|at| (at, l)))
        })
        .flatten()
        .filter(move |(at, l)| since(t0, *at) >= 0.0 && l.contains(pat))
}

/// ibsm's `heavy sweep N done in …` lines at or after `t0`: (SMPs, Sets text) each.
fn heavy_sweeps_after(text: &str, t0: f64) -> Vec<(u64, String)> {
    lines_after(text, t0, "heavy sweep ")
        .filter(|(_, l)| l.contains(" done in "))
        .filter_map(|(_, l)| parse_sweep_line(l))
        .collect()
}

/// The SMPs of ibsm's `QoS tables read: G Gets, N SMPs in …` lines at or after `t0` (the
/// SL-to-VL tables of ports the change brought, read after SUBNET UP).
fn qos_read_smps_after(text: &str, t0: f64) -> u64 {
    lines_after(text, t0, "QoS tables read: ")
        .filter_map(|(_, l)| {
            let rest = l.split("QoS tables read: ").nth(1)?;
            rest.split(", ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// Sums Sets texts (`PortInfo 3, LFT 2`) by attribute, in first-seen order.
fn sum_sets<'s>(texts: impl Iterator<Item = &'s str>) -> String {
    let mut by: Vec<(String, u64)> = Vec::new();
    for t in texts {
        for part in t.split(", ") {
            let Some((name, n)) = part.rsplit_once(' ') else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match by.iter_mut().find(|(k, _)| k == name) {
                Some((_, m)) => *m += n,
                None => by.push((name.to_string(), n)),
            }
        }
    }
    if by.is_empty() {
        return "none".into();
    }
    by.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl RunCtx<'_> {
    /// Starts the SM (daemon) on `sim` with sweep interval `sweep` and log flags `flags`.
    fn start_sm(&self, sim: &IbsimGuard, sweep: u32, flags: u8) -> Result<(Proc, PathBuf), String> {
        let dir = self.dir;
        let cache = dir.join("cache");
        std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
        let conf = dir.join("sm.conf");
        // ibsm reads every SL-to-VL table once after SUBNET UP (2.4 M Gets at k36, minutes
        // through the shim); no light sweep runs until they are in, so `light` turns them off.
        let text = match (self.a.mode, self.which) {
            (Mode::Light, Which::Ibsm) => "force_log_flush TRUE\nread_qos_tables FALSE\n",
            _ => "force_log_flush TRUE\n",
        };
        std::fs::write(&conf, text).map_err(|e| format!("{}: {e}", conf.display()))?;
        let name = self.which.name();
        let log = dir.join(format!("{name}.log"));
        let (sweep, flags) = (sweep.to_string(), format!("{flags:#04x}"));
        let mut cmd = match self.which {
            Which::OpenSm => {
                let mut c = sim.client("opensm", dir);
                c.arg("-e");
                c
            }
            Which::Ibsm => {
                let mut c = sim.client(self.self_exe, dir);
                c.arg("run").arg("--ctl-socket").arg(dir.join("ibsm.sock"));
                c
            }
        };
        cmd.args(["-R", &self.a.routing, "-s", &sweep, "-D", &flags, "-F"])
            .arg(&conf)
            .arg("-f")
            .arg(&log)
            .env("TZ", "UTC")
            .env("SIM_HOST", self.sm_host)
            .env("OSM_CACHE_DIR", &cache)
            .env("OSM_TMP_DIR", &cache);
        Ok((spawn(cmd, dir, name)?, log))
    }

    /// Waits for SUBNET UP, then until the SM is idle: its log unchanged for `quiet` and, for
    /// ibsm, its sweep stage Idle. Returns the log's text.
    fn settle(&self, proc: &mut Proc, log: &Path, quiet: Duration) -> Result<String, String> {
        wait_log(log, proc, "SUBNET UP", self.a.timeout, |t| {
            t.lines().any(|l| l.trim_end().ends_with("SUBNET UP"))
        })?;
        let t0 = Instant::now();
        let mut last = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
        let mut since_change = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let len = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
            if len != last {
                (last, since_change) = (len, Instant::now());
            }
            if since_change.elapsed() >= quiet && self.sm_idle() {
                return std::fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()));
            }
            if let Ok(Some(st)) = proc.0.try_wait() {
                return Err(format!("{}: exited with {st}", self.which.name()));
            }
            if stopped() {
                return Err("interrupted by a signal".into());
            }
            if t0.elapsed() > self.a.timeout {
                return Err(format!(
                    "{} not idle within {:?}; see {}",
                    self.which.name(),
                    self.a.timeout,
                    log.display()
                ));
            }
        }
    }

    /// OpenSM: true (its log is the only sign). ibsm: `ibsm ctl status` says `sweep stage: Idle`.
    fn sm_idle(&self) -> bool {
        if self.which == Which::OpenSm {
            return true;
        }
        Command::new(self.self_exe)
            .args(["ctl", "--socket"])
            .arg(self.dir.join("ibsm.sock"))
            .arg("status")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("sweep stage: Idle"))
    }

    /// A diag (`sminfo`, `perfquery`) under the shim on the probe CA; its stdout.
    fn diag(&self, sim: &IbsimGuard, prog: &str, args: &[&str]) -> Result<String, String> {
        let o = sim
            .client(prog, self.dir)
            .args(args)
            .env("LD_PRELOAD", UMAD2SIM_LIB)
            .env("SIM_HOST", self.probe_host)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("{prog}: {e}"))?;
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// The master SM's LID, by `sminfo` from the probe CA.
    fn sm_lid(&self, sim: &IbsimGuard) -> Result<String, String> {
        let out = self.diag(sim, "sminfo", &[])?;
        out.split_once("sm lid ")
            .and_then(|(_, r)| r.split_whitespace().next())
            .map(str::to_string)
            .ok_or_else(|| format!("sminfo: no SM LID in {out:?}"))
    }

    /// PortXmitPkts of port 1 at `lid`, read from the probe CA. The port's reply to the read
    /// is counted after the sample: a difference of two reads is one more than the SM sent.
    fn xmit_pkts(&self, sim: &IbsimGuard, lid: &str) -> Result<f64, String> {
        let out = self.diag(sim, "perfquery", &["-x", lid, "1"])?;
        out.lines()
            .find(|l| l.starts_with("PortXmitPkts:"))
            .and_then(|l| l.rsplit('.').next())
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("perfquery -x {lid} 1 gave no PortXmitPkts:\n{out}"))
    }

    /// ibsm: SMPs of its first heavy sweep; OpenSM: the port's PortXmitPkts now (after SUBNET UP
    /// and before anything else it sent but its bring-up).
    fn cold_smps(&self, text: &str, wire_now: f64) -> f64 {
        match self.which {
            Which::OpenSm => wire_now,
            Which::Ibsm => heavy_sweeps_after(text, 0.0)
                .first()
                .map_or(f64::NAN, |(n, _)| *n as f64),
        }
    }

    fn unlink(&self, link: &str) -> Result<Vec<Sample>, String> {
        let mut sim = IbsimGuard::start_with_console_and(self.net, &IBSIM_LIMITS)
            .map_err(|e| e.to_string())?;
        let (mut sm, log) = self.start_sm(&sim, 0, 0x03)?;
        let text = self.settle(&mut sm, &log, Duration::from_secs(2))?;
        let lid = self.sm_lid(&sim)?;
        let mut wire = self.xmit_pkts(&sim, &lid)?;
        let cold = self.cold_smps(&text, wire);
        let mut out = Vec::new();
        for (what, verb) in [("Unlink", "Unlink"), ("ReLink", "ReLink")] {
            let t0 = now_of_day();
            sim.console(&format!("{verb} {link}"))
                .map_err(|e| format!("ibsim console: {e}"))?;
            let up_after = |t: &str| {
                lines_after(t, t0, "SUBNET UP").any(|(_, l)| l.trim_end().ends_with("SUBNET UP"))
            };
            wait_log(
                &log,
                &mut sm,
                &format!("SUBNET UP after {verb}"),
                self.a.timeout,
                up_after,
            )?;
            let text = self.settle(&mut sm, &log, Duration::from_secs(2))?;
            let after = self.xmit_pkts(&sim, &lid)?;
            let ups: Vec<f64> = lines_after(&text, t0, "SUBNET UP")
                .filter(|(_, l)| l.trim_end().ends_with("SUBNET UP"))
                .map(|(at, _)| at)
                .collect();
            let sweeps = heavy_sweeps_after(&text, t0);
            let (log_smps, sets) = match self.which {
                Which::OpenSm => (None, "-".to_string()),
                Which::Ibsm => (
                    Some(
                        sweeps.iter().map(|(n, _)| n).sum::<u64>() + qos_read_smps_after(&text, t0),
                    ),
                    sum_sets(sweeps.iter().map(|(_, s)| s.as_str())),
                ),
            };
            out.push(Sample {
                which: self.which,
                what,
                secs: since(
                    t0,
                    *ups.first()
                        .ok_or_else(|| format!("no SUBNET UP after {verb} in {}", log.display()))?,
                ),
                sweeps: match self.which {
                    Which::OpenSm => ups.len(),
                    Which::Ibsm => sweeps.len(),
                },
                log_smps,
                wire_smps: after - wire - 1.0,
                sets,
                cold_smps: cold,
            });
            wire = after;
        }
        drop(sm);
        Ok(out)
    }

    fn light(&self) -> Result<Vec<Sample>, String> {
        let sim = IbsimGuard::start_with_console_and(self.net, &IBSIM_LIMITS)
            .map_err(|e| e.to_string())?;
        let (mut sm, log) = self.start_sm(&sim, self.a.interval, 0x07)?;
        // Quiet for half an interval: light sweeps log at every interval.
        let quiet = Duration::from_millis(500 * u64::from(self.a.interval));
        let text = self.settle(&mut sm, &log, quiet)?;
        let lid = self.sm_lid(&sim)?;
        let wire0 = self.xmit_pkts(&sim, &lid)?;
        let cold = self.cold_smps(&text, wire0);
        let done_pat = match self.which {
            Which::OpenSm => "LIGHT SWEEP COMPLETE",
            Which::Ibsm => "light sweep done in ",
        };
        let count = |t: &str, t0: f64| lines_after(t, t0, done_pat).count();
        // Start counting right after a light sweep has ended (the next is `interval` away).
        let t0 = now_of_day();
        wait_log(&log, &mut sm, "a light sweep", self.a.timeout, |t| {
            count(t, t0) >= 1
        })?;
        let t1 = now_of_day();
        let wire1 = self.xmit_pkts(&sim, &lid)?;
        let n = self.a.sweeps as usize;
        let text = wait_log(&log, &mut sm, "the light sweeps", self.a.timeout, |t| {
            count(t, t1) >= n
        })?;
        let wire2 = self.xmit_pkts(&sim, &lid)?;
        drop(sm);
        let late = lines_after(&text, t1, "heavy sweep ").count();
        if late > 0 {
            return Err(format!(
                "{}: a heavy sweep ran while light sweeps were counted; see {}",
                self.which.name(),
                log.display()
            ));
        }
        // Per sweep: (seconds, SMPs from the log, Sets).
        let mut per: Vec<(f64, Option<u64>, String)> = Vec::new();
        match self.which {
            Which::OpenSm => {
                let starts: Vec<f64> = lines_after(&text, t1, "INITIATING LIGHT SWEEP")
                    .map(|(at, _)| at)
                    .collect();
                for (end, _) in lines_after(&text, t1, done_pat).take(n) {
                    let start = starts
                        .iter()
                        .copied()
                        .filter(|s| since(*s, end) >= 0.0)
                        .fold(
                            f64::NAN,
                            |a: f64, s| if a.is_nan() || s > a { s } else { a },
                        );
                    per.push((since(start, end), None, "-".into()));
                }
            }
            Which::Ibsm => {
                for (_, l) in lines_after(&text, t1, done_pat).take(n) {
                    let secs = l
                        .split_once(done_pat)
                        .and_then(|(_, r)| r.split_whitespace().next())
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(f64::NAN);
                    let (smps, sets) = parse_sweep_line(l).unzip();
                    per.push((secs, smps, sets.unwrap_or_default()));
                }
            }
        }
        let log_smps = match self.which {
            Which::OpenSm => None,
            Which::Ibsm => Some(per.iter().filter_map(|p| p.1).max().unwrap_or(0)),
        };
        let sets = match self.which {
            Which::OpenSm => "-".into(),
            Which::Ibsm => sum_sets(per.iter().map(|p| p.2.as_str())),
        };
        Ok(vec![Sample {
            which: self.which,
            what: "light",
            secs: median(per.iter().map(|p| p.0).collect()),
            sweeps: per.len(),
            log_smps,
            wire_smps: (wire2 - wire1 - 1.0) / n as f64,
            sets,
            cold_smps: cold,
        }])
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn args_are_checked() {
        let a = parse_args(
            Mode::Unlink,
            &s(&["k.net", "--link", "\"core-0-0\"[3]", "--only", "ibsm"]),
        )
        .unwrap();
        assert_eq!(a.link.as_deref(), Some("\"core-0-0\"[3]"));
        assert_eq!((a.only, a.runs), (Some(Which::Ibsm), 3));
        assert!(parse_args(Mode::Unlink, &s(&["k.net", "--link", "core-0-0[3]"])).is_err());
        assert!(parse_args(Mode::Unlink, &s(&["k.net", "--link", "\"sw\"[0]"])).is_err());
        assert!(parse_args(Mode::Unlink, &s(&["k.net", "--sweeps", "3"])).is_err());
        let l = parse_args(
            Mode::Light,
            &s(&["k.net", "--sweeps", "3", "--interval", "2"]),
        )
        .unwrap();
        assert_eq!((l.sweeps, l.interval), (3, 2));
        assert!(parse_args(Mode::Light, &s(&["k.net", "--link", "\"a\"[1]"])).is_err());
        assert!(parse_args(Mode::Light, &s(&["k.net", "--sweeps", "0"])).is_err());
        assert!(parse_args(Mode::Light, &s(&[])).is_err());
        assert_eq!(
            parse_link("\"agg-1-0\"[12]").unwrap(),
            ("agg-1-0".into(), 12)
        );
    }

    #[test]
    fn sweeps_and_sets_are_read_from_the_log() {
        let log = "2026-12-06 12:00:00.000000 [ibsm] 0x02 -> heavy sweep 1 done in 0.500 s: \
                   1000 SMPs (0 retried, 0 timed out); Sets: PortInfo 10, LFT 20\n\
                   2026-12-06 12:00:05.000000 [ibsm] 0x02 -> heavy sweep 2 done in 0.100 s: \
                   30 SMPs (0 retried, 0 timed out); Sets: LFT 3\n\
                   2026-12-06 12:00:06.000000 [ibsm] 0x04 -> light sweep done in 0.010 s: \
                   20 SMPs (0 retried, 0 timed out); Sets: none\n\
                   2026-12-06 12:00:07.000000 [ibsm] 0x02 -> heavy sweep 3 done in 0.100 s: \
                   12 SMPs (0 retried, 0 timed out); Sets: PortInfo 2, LFT 1\n";
        let t0 = 12.0 * 3600.0 + 1.0;
        let after = heavy_sweeps_after(log, t0);
        assert_eq!(after.len(), 2);
        assert_eq!(after.iter().map(|x| x.0).sum::<u64>(), 42);
        assert_eq!(
            sum_sets(after.iter().map(|x| x.1.as_str())),
            "LFT 4, PortInfo 2"
        );
        assert_eq!(sum_sets(["none"].into_iter()), "none");
        assert_eq!(heavy_sweeps_after(log, 0.0).len(), 3);
        let qos = "2026-12-06 12:00:05.200000 [ibsm] 0x02 -> QoS tables read: 16 Gets, 17 SMPs in 1.2ms\n";
        assert_eq!(qos_read_smps_after(qos, t0), 17);
        assert_eq!(qos_read_smps_after(qos, t0 + 5.0), 0);
        let light = lines_after(log, t0, "light sweep done in ").count();
        assert_eq!(light, 1);
        let osm = "Dec 06 12:29:31 444580 [7503F6C0] 0x04 -> state_mgr_light_sweep_start:\n\n\
                   *** INITIATING LIGHT SWEEP ***\n\n\
                   Dec 06 12:29:31 473804 [7503F6C0] 0x04 -> do_sweep:\n\
                   *** LIGHT SWEEP COMPLETE ***\n";
        let box_at = |pat| lines_after(osm, 0.0, pat).next().map(|(at, _)| at);
        let start = box_at("INITIATING LIGHT SWEEP").unwrap();
        let end = box_at("LIGHT SWEEP COMPLETE").unwrap();
        assert!((since(start, end) - 0.029224).abs() < 1e-6);
    }

    #[test]
    fn summary_gives_the_ratio_of_medians_and_minima() {
        let mk = |which, secs| Sample {
            which,
            what: "Unlink",
            secs,
            sweeps: 1,
            log_smps: None,
            wire_smps: 50.0,
            sets: "-".into(),
            cold_smps: 1000.0,
        };
        let s = summary(&[
            mk(Which::OpenSm, 1.0),
            mk(Which::Ibsm, 0.1),
            mk(Which::OpenSm, 3.0),
            mk(Which::Ibsm, 0.2),
        ]);
        assert!(
            s.contains("OpenSM / ibsm: 13.3x by median, 10.0x by minimum"),
            "{s}"
        );
        assert!(s.contains("= 5.00% of a cold bring-up"), "{s}");
    }
}

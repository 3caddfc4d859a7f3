//! `ibsm bench failover`: the time from a master SM's death to SUBNET UP under the standby
//! ibsm that takes over, on a fresh stock ibsim fabric (issue 12).
//!
//! Each run starts ibsim (`-N 30000 -S 4000 -P 200000`), brings the fabric up with the master
//! (priority 10, on the topology's first CA), starts `ibsm run` as standby (priority 5, on the
//! second CA) and waits for its `Entering STANDBY state` line, lets it poll for a second, then
//! kills the master by PID (SIGKILL) and reads the standby's log:
//!
//! * **detect**: the kill → the standby's `Entering DISCOVERING state` line (its SMInfo polls of
//!   the master went unanswered `polling_retry_number` times, `sminfo_polling_timeout` apart);
//! * **take-over**: that line → the standby's `SUBNET UP` line (its heavy sweep);
//! * **total**: the kill → SUBNET UP;
//! * **SMPs**, **LFT Sets**, **Sets**: the standby's take-over sweep (its `heavy sweep N done`
//!   line); a subnet programmed by the dead master needs no LFT Set (target 0).
//!
//! Cases (`--case`, default both): `opensm-ibsm` — stock OpenSM master (`opensm -e -s 0 -p 10`,
//! `force_log_flush TRUE`), ibsm standby; `ibsm-ibsm` — ibsm master and ibsm standby.
//! Options: `--runs N` (default 1), `--polling-timeout MS` and `--polling-retries N` (the
//! standby's `sminfo_polling_timeout` and `polling_retry_number`; default OpenSM's 10000 ms and
//! 4), `--routing ENGINE` (default minhop), `--keep DIR`, `--timeout SECONDS` per wait (default
//! 300). Log times are UTC wall-clock times (ibsm's log format), so the kill is stamped on the
//! same clock.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use umad::testutil::{missing_peers, IbsimGuard};

use crate::bench_cmd::{first_cas, BenchDir, IBSIM_LIMITS};

const USAGE: &str = "\
usage: ibsm bench failover TOPOLOGY [--runs N] [--case opensm-ibsm|ibsm-ibsm]
                                    [--polling-timeout MS] [--polling-retries N]
                                    [--routing ENGINE] [--keep DIR] [--timeout SECONDS]

On a fresh ibsim fabric brought up by a master SM (OpenSM or ibsm) with `ibsm run` as standby,
kills the master and reports the time to SUBNET UP under ibsm (detection and take-over sweep)
and the SMPs and LFT Sets ibsm's take-over sweep sent.
";

/// Who is master before the kill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    OpenSmMaster,
    IbsmMaster,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::OpenSmMaster => "opensm-ibsm",
            Case::IbsmMaster => "ibsm-ibsm",
        }
    }
}

#[derive(Debug)]
struct Args {
    topology: String,
    runs: u32,
    cases: Vec<Case>,
    polling_timeout_ms: u32,
    polling_retries: u32,
    routing: String,
    keep: Option<PathBuf>,
    timeout: Duration,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        topology: String::new(),
        runs: 1,
        cases: vec![Case::OpenSmMaster, Case::IbsmMaster],
        polling_timeout_ms: 10_000,
        polling_retries: 4,
        routing: "minhop".into(),
        keep: None,
        timeout: Duration::from_secs(300),
    };
    let mut it = args.iter();
    let mut topology = None;
    let num = |name: &str, v: &str, min: u32| -> Result<u32, String> {
        v.parse::<u32>()
            .ok()
            .filter(|n| *n >= min)
            .ok_or(format!("{name} {v:?}: expected an integer ≥ {min}"))
    };
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--runs" => a.runs = num("--runs", &value("--runs")?, 1)?,
            "--case" => {
                let v = value("--case")?;
                a.cases = vec![match v.as_str() {
                    "opensm-ibsm" => Case::OpenSmMaster,
                    "ibsm-ibsm" => Case::IbsmMaster,
                    _ => return Err(format!("--case {v:?}: expected opensm-ibsm or ibsm-ibsm")),
                }];
            }
            "--polling-timeout" => {
                a.polling_timeout_ms = num("--polling-timeout", &value("--polling-timeout")?, 1)?;
            }
            "--polling-retries" => {
                a.polling_retries = num("--polling-retries", &value("--polling-retries")?, 0)?;
            }
            "--routing" => a.routing = value("--routing")?,
            "--keep" => a.keep = Some(value("--keep")?.into()),
            "--timeout" => {
                a.timeout =
                    Duration::from_secs(u64::from(num("--timeout", &value("--timeout")?, 1)?));
            }
            s if !s.starts_with('-') && topology.is_none() => topology = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s:?}")),
        }
    }
    a.topology = topology.ok_or("missing TOPOLOGY")?;
    Ok(a)
}

/// `ibsm bench failover ARGS…`; `Err` is the message to print.
pub fn main(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return Ok(());
    }
    let a = parse_args(args)?;
    stop_on_signals()?;
    run(&a)
}

/// One run's figures, in seconds.
#[derive(Debug)]
struct Sample {
    case: Case,
    detect: f64,
    takeover: f64,
    smps: u64,
    lft: u64,
    sets: String,
}

fn run(a: &Args) -> Result<(), String> {
    if let Some(why) = missing_peers() {
        return Err(why);
    }
    let progress = crate::progress::Progress::new(true);
    let topo = crate::simrun::load_topology(&a.topology, &progress)
        .map_err(|e| format!("{}: {e}", a.topology))?;
    let Some([master_host, standby_host]) = first_cas::<2>(&topo) else {
        return Err("the topology needs two CAs for the two SMs".into());
    };
    let (master_host, standby_host) = (master_host.as_str(), standby_host.as_str());
    let dir = BenchDir::new(a.keep.as_deref(), "failover", &topo)?;
    let (work, net, self_exe) = (dir.work.clone(), dir.net.clone(), dir.self_exe.clone());
    println!(
        "# {}: {} switches, {} CAs; master at {master_host:?} (priority 10), standby ibsm at \
         {standby_host:?} (priority 5); sminfo_polling_timeout {} ms, polling_retry_number {}; \
         routing {}",
        a.topology,
        topo.num_switches(),
        topo.num_cas(),
        a.polling_timeout_ms,
        a.polling_retries,
        a.routing
    );
    println!(
        "{:<4} {:<12} {:>10} {:>13} {:>10} {:>9} {:>9}  Sets",
        "run", "case", "detect [s]", "take-over [s]", "total [s]", "SMPs", "LFT Sets"
    );
    let mut samples = Vec::new();
    for r in 1..=a.runs {
        for &case in &a.cases {
            let dir = work.join(format!("run{r}-{}", case.name()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            progress.message(&format!("run {r}/{}: {}", a.runs, case.name()));
            let s = one_run(a, case, &net, master_host, standby_host, &dir, &self_exe)?;
            progress.suspend(|| {
                println!(
                    "{r:<4} {:<12} {:>10.3} {:>13.3} {:>10.3} {:>9} {:>9}  {}",
                    case.name(),
                    s.detect,
                    s.takeover,
                    s.detect + s.takeover,
                    s.smps,
                    s.lft,
                    s.sets
                );
            });
            samples.push(s);
        }
    }
    progress.finish();
    print!("{}", summary(&samples));
    if a.keep.is_some() {
        println!("# logs kept in {}", work.display());
    }
    Ok(())
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn summary(samples: &[Sample]) -> String {
    let mut out = String::new();
    for case in [Case::OpenSmMaster, Case::IbsmMaster] {
        let of: Vec<&Sample> = samples.iter().filter(|s| s.case == case).collect();
        if of.is_empty() {
            continue;
        }
        let med = |f: fn(&Sample) -> f64| median(of.iter().map(|s| f(s)).collect());
        let _ = writeln!(
            out,
            "median {:<12} {:>9.3} {:>13.3} {:>10.3} {:>9.0} {:>9.0}",
            case.name(),
            med(|s| s.detect),
            med(|s| s.takeover),
            med(|s| s.detect + s.takeover),
            med(|s| s.smps as f64),
            med(|s| s.lft as f64),
        );
    }
    out
}

/// Seconds of the UTC day now (the clock of ibsm's log timestamps).
pub(crate) fn now_of_day() -> f64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() % 86_400) as f64 + f64::from(d.subsec_micros()) / 1e6
}

/// Seconds of the day of an ibsm log line (`2026-11-29 18:39:22.645176 [ibsm] …`).
fn log_time(line: &str) -> Option<f64> {
    let hms = line.split_whitespace().nth(1)?;
    let (hms, us) = hms.split_once('.')?;
    let mut parts = hms.split(':').map(|p| p.parse::<u32>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    let us: u32 = us.parse().ok()?;
    Some(f64::from(h * 3600 + m * 60 + s) + f64::from(us) / 1e6)
}

/// `b - a` across midnight.
pub(crate) fn since(a: f64, b: f64) -> f64 {
    let d = b - a;
    if d < -43_200.0 {
        d + 86_400.0
    } else {
        d
    }
}

/// A child process killed (SIGKILL) and reaped when dropped.
pub(crate) struct Proc(pub(crate) Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Set by SIGTERM or SIGINT once [`stop_on_signals`] ran: the bench's waits give up, so the
/// processes it started (ibsim, the SMs) are stopped by their guards instead of being left
/// running when the bench is killed.
static STOP: std::sync::LazyLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::LazyLock::new(Default::default);

/// Makes SIGTERM and SIGINT end the bench's waits (an `Err`) instead of the process.
pub(crate) fn stop_on_signals() -> Result<(), String> {
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&STOP))
            .map_err(|e| format!("signal handler: {e}"))?;
    }
    Ok(())
}

/// A SIGTERM or SIGINT arrived (after [`stop_on_signals`]).
pub(crate) fn stopped() -> bool {
    STOP.load(std::sync::atomic::Ordering::Relaxed)
}

/// Polls `log` until `done(text)` holds; an error after `limit`, if `proc` exits, or on
/// SIGTERM/SIGINT ([`stop_on_signals`]).
pub(crate) fn wait_log(
    log: &Path,
    proc: &mut Proc,
    what: &str,
    limit: Duration,
    done: impl Fn(&str) -> bool,
) -> Result<String, String> {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if done(&text) {
            return Ok(text);
        }
        if let Ok(Some(st)) = proc.0.try_wait() {
            return Err(format!("{what}: exited with {st}; see {}", log.display()));
        }
        if stopped() {
            return Err(format!("{what}: interrupted by a signal"));
        }
        if t0.elapsed() > limit {
            return Err(format!(
                "{what}: not within {limit:?}; see {}",
                log.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn spawn(mut cmd: Command, dir: &Path, name: &str) -> Result<Proc, String> {
    let out = std::fs::File::create(dir.join(format!("{name}.stdout")))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    cmd.spawn()
        .map(Proc)
        .map_err(|e| format!("spawn {name}: {e}"))
}

/// `ibsm run` (daemon) under the shim at `host`, logging to DIR/NAME.log.
#[allow(clippy::too_many_arguments)]
fn ibsm_cmd(
    sim: &IbsimGuard,
    self_exe: &Path,
    a: &Args,
    host: &str,
    priority: u8,
    dir: &Path,
    name: &str,
) -> Result<(Command, PathBuf), String> {
    let cache = dir.join(format!("{name}-cache"));
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let conf = dir.join(format!("{name}.conf"));
    std::fs::write(
        &conf,
        format!(
            "sminfo_polling_timeout {}\npolling_retry_number {}\n",
            a.polling_timeout_ms, a.polling_retries
        ),
    )
    .map_err(|e| format!("{}: {e}", conf.display()))?;
    let log = dir.join(format!("{name}.log"));
    let mut cmd = sim.client(self_exe, dir);
    cmd.args(["run", "-R", &a.routing, "-p", &priority.to_string(), "-F"])
        .arg(&conf)
        .arg("--ctl-socket")
        .arg(dir.join(format!("{name}.sock")))
        .arg("-f")
        .arg(&log)
        .env("SIM_HOST", host)
        .env("OSM_CACHE_DIR", &cache)
        .env("OSM_TMP_DIR", &cache);
    Ok((cmd, log))
}

fn one_run(
    a: &Args,
    case: Case,
    net: &Path,
    master_host: &str,
    standby_host: &str,
    dir: &Path,
    self_exe: &Path,
) -> Result<Sample, String> {
    let sim = IbsimGuard::start_with(net, &IBSIM_LIMITS).map_err(|e| e.to_string())?;
    // The master brings the subnet up.
    let (mut master, master_log) = match case {
        Case::OpenSmMaster => {
            let cache = dir.join("opensm-cache");
            std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
            let conf = dir.join("opensm.conf");
            std::fs::write(&conf, "force_log_flush TRUE\n")
                .map_err(|e| format!("{}: {e}", conf.display()))?;
            let log = dir.join("opensm.log");
            let mut cmd = sim.client("opensm", dir);
            cmd.args(["-e", "-s", "0", "-p", "10", "-R", &a.routing, "-F"])
                .arg(&conf)
                .arg("-f")
                .arg(&log)
                .env("SIM_HOST", master_host)
                .env("OSM_CACHE_DIR", &cache)
                .env("OSM_TMP_DIR", &cache);
            (spawn(cmd, dir, "opensm")?, log)
        }
        Case::IbsmMaster => {
            let (cmd, log) = ibsm_cmd(&sim, self_exe, a, master_host, 10, dir, "master")?;
            (spawn(cmd, dir, "master")?, log)
        }
    };
    wait_log(
        &master_log,
        &mut master,
        "master SUBNET UP",
        a.timeout,
        |t| t.contains("SUBNET UP"),
    )?;
    // The standby finds the master and polls it.
    let (cmd, standby_log) = ibsm_cmd(&sim, self_exe, a, standby_host, 5, dir, "standby")?;
    let mut standby = spawn(cmd, dir, "standby")?;
    wait_log(
        &standby_log,
        &mut standby,
        "standby STANDBY",
        a.timeout,
        |t| t.contains("Entering STANDBY state"),
    )?;
    std::thread::sleep(Duration::from_secs(1));
    let killed = now_of_day();
    drop(master);
    let after = |t: &str, pat: &str| -> Option<(f64, String)> {
        t.lines()
            .filter_map(|l| log_time(l).map(|at| (at, l)))
            .find(|(at, l)| since(killed, *at) >= 0.0 && l.contains(pat))
            .map(|(at, l)| (at, l.to_string()))
    };
    let text = wait_log(
        &standby_log,
        &mut standby,
        "standby SUBNET UP",
        a.timeout,
        |t| after(t, "SUBNET UP").is_some(),
    )?;
    drop(standby);
    let (disc, _) = after(&text, "Entering DISCOVERING state").ok_or_else(|| {
        format!(
            "no DISCOVERING line after the kill in {}",
            standby_log.display()
        )
    })?;
    let (up, _) = after(&text, "SUBNET UP").ok_or("no SUBNET UP")?;
    let (_, sweep) = after(&text, "done in ").ok_or_else(|| {
        format!(
            "no heavy sweep line after the kill in {}",
            standby_log.display()
        )
    })?;
    let (smps, sets) =
        parse_sweep_line(&sweep).ok_or_else(|| format!("unexpected heavy sweep line {sweep:?}"))?;
    let lft = sets
        .split(", ")
        .find_map(|s| s.strip_prefix("LFT "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Ok(Sample {
        case,
        detect: since(killed, disc),
        takeover: since(disc, up),
        smps,
        lft,
        sets,
    })
}

/// SMPs and the Sets text of `… heavy sweep N done in X s: S SMPs (…); Sets: …`.
pub(crate) fn parse_sweep_line(l: &str) -> Option<(u64, String)> {
    let (_, rest) = l.split_once(" s: ")?;
    let smps = rest.split_whitespace().next()?.parse().ok()?;
    let (_, sets) = rest.split_once("Sets: ")?;
    Some((smps, sets.trim().to_string()))
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
        let a = parse_args(&s(&[
            "k.net",
            "--case",
            "ibsm-ibsm",
            "--polling-timeout",
            "500",
        ]))
        .unwrap();
        assert_eq!(
            (a.cases, a.polling_timeout_ms, a.polling_retries, a.runs),
            (vec![Case::IbsmMaster], 500, 4, 1)
        );
        assert!(parse_args(&s(&["k.net", "--case", "x"])).is_err());
        assert!(parse_args(&s(&["k.net", "--polling-timeout", "0"])).is_err());
        assert!(parse_args(&s(&[])).is_err());
    }

    #[test]
    fn sweep_lines_and_times_parse() {
        let l = "2026-12-02 19:37:16.302684 [ibsm] 0x02 -> heavy sweep 2 done in 0.712 s: \
                 12433 SMPs (0 retried, 0 timed out); Sets: PortInfo 628, LFT 3";
        assert_eq!(
            parse_sweep_line(l),
            Some((12433, "PortInfo 628, LFT 3".to_string()))
        );
        let t = log_time(l).unwrap();
        assert!((t - (19.0 * 3600.0 + 37.0 * 60.0 + 16.302684)).abs() < 1e-6);
        assert!((since(86_399.5, 0.25) - 0.75).abs() < 1e-9);
        assert!(since(10.0, 9.0) < 0.0);
    }
}

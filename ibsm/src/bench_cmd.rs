//! `ibsm bench opensm TOPOLOGY [options]`: stock OpenSM and `ibsm run -o` bring up the same
//! ibsim fabric, alternately, each on a fresh ibsim, and the command reports for every run:
//!
//! * **up** — time from the SM's first log line to its `SUBNET UP` line (both from the SM's
//!   own log, so the same clock and time zone);
//! * **wall**, **cpu** — the SM process's wall time and user+system CPU (`/usr/bin/time`);
//! * **SMPs** — PortXmitPkts of the SM's port as ibsim counts it (`perfquery -x` under the
//!   shim after the SM exits): every SMP the SM put on the wire, the same counter for both
//!   SMs (SMPs to the SM's own port never cross a link and are not counted);
//! * **ibsim cpu** — ibsim's user+system CPU during the SM run (`/proc/PID/stat` utime+stime
//!   just before the SM starts and just after it exits);
//! * **cpu/ibsim** — the SM's CPU divided by ibsim's.
//!
//! Both SMs attach to the same port: the first CA of the topology (`SIM_HOST`), so PortXmitPkts
//! counts exactly their SMPs. OpenSM runs as `opensm -o -e -s 0 -d 0 -R ENGINE` with an empty
//! cache dir (as `shared/tools/opensm-on-ibsim.sh`); ibsm as `ibsm run -o -R ENGINE` with its
//! default options (`--maxsmps N` only if given).
//! ibsim runs with raised limits (`-N 30000 -S 4000 -P 200000`).
//!
//! Options: `--runs N` (default 3), `--maxsmps N` (passed to ibsm: the ceiling of its adaptive
//! SMP window; default: ibsm's own, 256), `--routing ENGINE` (default minhop),
//! `--only opensm|ibsm`, `--keep DIR` (keep logs there instead of a temp dir),
//! `--timeout SECONDS` per SM run (default 900).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use umad::testutil::{missing_peers, IbsimGuard, TempDir, UMAD2SIM_LIB};

const USAGE: &str = "\
usage: ibsm bench opensm TOPOLOGY [--runs N] [--maxsmps N] [--routing ENGINE]
                                  [--only opensm|ibsm] [--keep DIR] [--timeout SECONDS]
       ibsm bench failover TOPOLOGY [--runs N] [--case opensm-ibsm|ibsm-ibsm] … (--help)
       ibsm bench unlink TOPOLOGY [--runs N] [--link 'NODE'[PORT]] … (--help)
       ibsm bench light TOPOLOGY [--runs N] [--sweeps N] [--interval S] … (--help)

Brings the same ibsim fabric up with stock OpenSM and with `ibsm run -o`, alternately, each on a
fresh ibsim, and reports time to SUBNET UP, SMPs sent, CPU of the SM and of ibsim.
TOPOLOGY is an ibsim .net file, an ibnetdiscover file or a generator spec (fat-tree:3,24).
";

/// ibsim's size limits (nodes, switches, ports) large enough for k36 fabrics.
pub(crate) const IBSIM_LIMITS: [&str; 6] = ["-N", "30000", "-S", "4000", "-P", "200000"];

/// Which SM a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    OpenSm,
    Ibsm,
}

impl Which {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Which::OpenSm => "opensm",
            Which::Ibsm => "ibsm",
        }
    }
}

/// One measured run.
#[derive(Clone, Debug)]
struct Sample {
    which: Which,
    up: f64,
    wall: f64,
    cpu: f64,
    smps: u64,
    ibsim_cpu: f64,
}

struct Args {
    topology: String,
    runs: u32,
    /// `--maxsmps` for ibsm; `None`: ibsm's default.
    maxsmps: Option<u32>,
    routing: String,
    only: Option<Which>,
    keep: Option<PathBuf>,
    timeout: Duration,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut it = args.iter();
    let mut a = Args {
        topology: String::new(),
        runs: 3,
        maxsmps: None,
        routing: "minhop".into(),
        only: None,
        keep: None,
        timeout: Duration::from_secs(900),
    };
    let mut topology = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--runs" => {
                let v = value("--runs")?;
                a.runs = v
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or(format!("--runs {v:?}: expected a positive integer"))?;
            }
            "--maxsmps" => {
                let v = value("--maxsmps")?;
                a.maxsmps = Some(
                    v.parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or(format!("--maxsmps {v:?}: expected a positive integer"))?,
                );
            }
            "--routing" => a.routing = value("--routing")?,
            "--only" => {
                let v = value("--only")?;
                a.only = Some(match v.as_str() {
                    "opensm" => Which::OpenSm,
                    "ibsm" => Which::Ibsm,
                    _ => return Err(format!("--only {v:?}: expected opensm or ibsm")),
                });
            }
            "--keep" => a.keep = Some(value("--keep")?.into()),
            "--timeout" => {
                let v = value("--timeout")?;
                let s: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0 && s.is_finite())
                    .ok_or(format!(
                        "--timeout {v:?}: expected a positive number of seconds"
                    ))?;
                a.timeout = Duration::from_secs_f64(s);
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s:?}")),
            s if topology.is_none() => topology = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s:?}")),
        }
    }
    a.topology = topology.ok_or("missing TOPOLOGY")?;
    Ok(a)
}

/// `ibsm bench ARGS…`: dispatches `opensm` and `failover`; returns the exit status.
pub fn main(args: &[String]) -> ExitCode {
    match args.split_first() {
        Some((sub, rest)) if sub == "opensm" => {
            if rest.iter().any(|a| a == "-h" || a == "--help") {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            match parse_args(rest).and_then(|a| run(&a)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("ibsm bench opensm: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Some((sub, rest)) if sub == "failover" => match crate::bench_failover::main(rest) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ibsm bench failover: {e}");
                ExitCode::from(1)
            }
        },
        Some((sub, rest)) if sub == "unlink" || sub == "light" => {
            match crate::bench_unlink::main(sub == "unlink", rest) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("ibsm bench {sub}: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Some((sub, _)) if sub == "-h" || sub == "--help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprint!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

pub(crate) fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

fn run(a: &Args) -> Result<(), String> {
    if let Some(why) = missing_peers() {
        return Err(why);
    }
    for prog in ["opensm", "perfquery"] {
        if !on_path(prog) {
            return Err(format!(
                "{prog} not installed (apt-get install opensm infiniband-diags)"
            ));
        }
    }
    if !Path::new("/usr/bin/time").is_file() {
        return Err("/usr/bin/time not installed (apt-get install time)".into());
    }
    let progress = crate::progress::Progress::new(true);
    let topo = crate::simrun::load_topology(&a.topology, &progress)
        .map_err(|e| format!("{}: {e}", a.topology))?;
    let host = topo
        .nodes()
        .find(|(_, n)| !n.is_switch())
        .map(|(_, n)| n.name().to_string())
        .ok_or("the topology has no CA for the SMs to attach to")?;
    let dir = BenchDir::new(a.keep.as_deref(), "bench", &topo)?;
    let (work, net, self_exe) = (dir.work.clone(), dir.net.clone(), dir.self_exe.clone());
    println!(
        "# {}: {} switches, {} CAs, {} links; SMs attach at {host:?}; routing {}; ibsm {}",
        a.topology,
        topo.num_switches(),
        topo.num_cas(),
        topo.num_links(),
        a.routing,
        a.maxsmps
            .map_or("with default options".to_string(), |n| format!(
                "--maxsmps {n}"
            ))
    );
    println!(
        "{:<4} {:<7} {:>9} {:>9} {:>9} {:>9} {:>11} {:>10}",
        "run", "sm", "up [s]", "wall [s]", "cpu [s]", "SMPs", "ibsim [s]", "cpu/ibsim"
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
            progress.message(&format!(
                "run {r}/{}: {} bringing up {}",
                a.runs,
                which.name(),
                a.topology
            ));
            let s = one_run(a, which, &net, &host, &dir, &self_exe)?;
            progress.suspend(|| {
                println!(
                    "{r:<4} {:<7} {:>9.3} {:>9.3} {:>9.3} {:>9} {:>11.3} {:>10.2}",
                    which.name(),
                    s.up,
                    s.wall,
                    s.cpu,
                    s.smps,
                    s.ibsim_cpu,
                    ratio(s.cpu, s.ibsim_cpu)
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

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::INFINITY
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn summary(samples: &[Sample]) -> String {
    let mut out = String::new();
    let med = |w: Which, f: fn(&Sample) -> f64| {
        median(samples.iter().filter(|s| s.which == w).map(f).collect())
    };
    for w in [Which::OpenSm, Which::Ibsm] {
        if !samples.iter().any(|s| s.which == w) {
            continue;
        }
        let _ = writeln!(
            out,
            "median {:<7} {:>9.3} {:>9.3} {:>9.3} {:>9.0} {:>11.3} {:>10.2}",
            w.name(),
            med(w, |s| s.up),
            med(w, |s| s.wall),
            med(w, |s| s.cpu),
            med(w, |s| s.smps as f64),
            med(w, |s| s.ibsim_cpu),
            med(w, |s| ratio(s.cpu, s.ibsim_cpu)),
        );
    }
    if samples.iter().any(|s| s.which == Which::OpenSm)
        && samples.iter().any(|s| s.which == Which::Ibsm)
    {
        let _ = writeln!(
            out,
            "speedup (median up, OpenSM / ibsm): {:.1}x; wall: {:.1}x; SMPs ibsm/OpenSM: {:.2}",
            med(Which::OpenSm, |s| s.up) / med(Which::Ibsm, |s| s.up),
            med(Which::OpenSm, |s| s.wall) / med(Which::Ibsm, |s| s.wall),
            med(Which::Ibsm, |s| s.smps as f64) / med(Which::OpenSm, |s| s.smps as f64),
        );
    }
    out
}

/// utime + stime of `pid` in seconds, from `/proc/PID/stat`.
fn proc_cpu(pid: u32) -> Result<f64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // Fields after the parenthesised comm: state is field 3, utime 14, stime 15.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or(format!("/proc/{pid}/stat: unexpected format"))?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| -> Result<f64, String> {
        f.get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .map(|t| t as f64 / 100.0) // USER_HZ is 100 on Linux
            .ok_or(format!("/proc/{pid}/stat: no field {}", i + 3))
    };
    Ok(tick(11)? + tick(12)?)
}

/// The names of the first `N` CAs of `topo` (where the bench's SMs and probes attach), or
/// `None` if it has fewer.
pub(crate) fn first_cas<const N: usize>(topo: &fabric_sim::topo::Topology) -> Option<[String; N]> {
    let cas: Vec<String> = topo
        .nodes()
        .filter(|(_, n)| !n.is_switch())
        .map(|(_, n)| n.name().to_string())
        .take(N)
        .collect();
    cas.try_into().ok()
}

/// Where a bench run works: `keep` if given (created, kept), else a temporary directory removed
/// when the returned [`BenchDir`] is dropped; `topo` saved there as `topology.net` for ibsim,
/// and the path of this executable (the ibsm the bench starts).
pub(crate) struct BenchDir {
    _tmp: Option<TempDir>,
    pub work: PathBuf,
    pub net: PathBuf,
    pub self_exe: PathBuf,
}

impl BenchDir {
    pub(crate) fn new(
        keep: Option<&Path>,
        tag: &str,
        topo: &fabric_sim::topo::Topology,
    ) -> Result<BenchDir, String> {
        let (tmp, work) = match keep {
            Some(d) => (None, d.to_path_buf()),
            None => {
                let t = TempDir::new(tag).map_err(|e| format!("temp dir: {e}"))?;
                let p = t.path().to_path_buf();
                (Some(t), p)
            }
        };
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let net = work.join("topology.net");
        topo.save_net(&net)
            .map_err(|e| format!("{}: {e}", net.display()))?;
        let self_exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
        Ok(BenchDir {
            _tmp: tmp,
            work,
            net,
            self_exe,
        })
    }
}

/// Seconds of the day of an OpenSM (`Nov 29 18:39:56 812142 [...]`) or ibsm
/// (`2026-11-29 18:39:22.645176 [ibsm]`) log line.
pub(crate) fn log_time(line: &str) -> Option<f64> {
    let w: Vec<&str> = line.split_whitespace().take(4).collect();
    let (hms, micros) = if w.first()?.contains('-') {
        let (hms, us) = w.get(1)?.split_once('.')?;
        (hms, us)
    } else {
        (*w.get(2)?, *w.get(3)?)
    };
    let mut parts = hms.split(':').map(|p| p.parse::<u32>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    let us: u32 = micros.parse().ok()?;
    Some(f64::from(h * 3600 + m * 60 + s) + f64::from(us) / 1e6)
}

/// Seconds from the first timestamped log line to the `SUBNET UP` line.
fn time_to_up(log: &str) -> Option<f64> {
    let first = log.lines().find_map(log_time)?;
    let up = log
        .lines()
        .find(|l| l.trim_end().ends_with("SUBNET UP"))
        .and_then(log_time)?;
    let d = up - first;
    Some(if d < 0.0 { d + 86_400.0 } else { d })
}

fn one_run(
    a: &Args,
    which: Which,
    net: &Path,
    host: &str,
    dir: &Path,
    self_exe: &Path,
) -> Result<Sample, String> {
    let sim = IbsimGuard::start_with(net, &IBSIM_LIMITS).map_err(|e| e.to_string())?;
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let log = dir.join(format!("{}.log", which.name()));
    let timefile = dir.join("time.txt");
    // /usr/bin/time itself must not load the shim: LD_PRELOAD goes through `env`.
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f")
        .arg("%e %U %S")
        .arg("-o")
        .arg(&timefile)
        .arg("env")
        .arg(format!("LD_PRELOAD={UMAD2SIM_LIB}"));
    match which {
        Which::OpenSm => {
            cmd.args([
                "opensm", "-o", "-e", "-s", "0", "-d", "0", "-R", &a.routing, "-f",
            ])
            .arg(&log);
        }
        Which::Ibsm => {
            cmd.arg(self_exe).args(["run", "-o", "-R", &a.routing]);
            if let Some(n) = a.maxsmps {
                cmd.arg("--maxsmps").arg(n.to_string());
            }
            cmd.arg("-f").arg(&log);
        }
    }
    cmd.env("IBSIM_SOCKNAME", sim.sockname())
        .env("SIM_HOST", host)
        .env("OSM_CACHE_DIR", &cache)
        .env("OSM_TMP_DIR", &cache)
        .current_dir(dir)
        .stdin(Stdio::null());
    let out = std::fs::File::create(dir.join("stdout.txt")).map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    cmd.stdout(out).stderr(err);

    let before = proc_cpu(sim.pid())?;
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", which.name()))?;
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t0.elapsed() > a.timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{} did not finish within {:?}; see {}",
                which.name(),
                a.timeout,
                dir.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let after = proc_cpu(sim.pid())?;
    if !status.success() {
        return Err(format!(
            "{} exited with {status}; see {}",
            which.name(),
            dir.display()
        ));
    }
    let log_text = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let up = time_to_up(&log_text).ok_or_else(|| format!("no SUBNET UP in {}", log.display()))?;
    let times =
        std::fs::read_to_string(&timefile).map_err(|e| format!("{}: {e}", timefile.display()))?;
    let t: Vec<f64> = times
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    let [wall, user, sys] = t[..] else {
        return Err(format!(
            "{}: unexpected content {times:?}",
            timefile.display()
        ));
    };
    // The SM's port counters, read through the shim from the same port (local: not counted).
    let pq = sim
        .client("perfquery", dir)
        .arg("-x")
        .env("SIM_HOST", host)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("perfquery: {e}"))?;
    let pq_text = String::from_utf8_lossy(&pq.stdout);
    let smps = pq_text
        .lines()
        .find(|l| l.starts_with("PortXmitPkts:"))
        .and_then(|l| l.rsplit('.').next())
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("perfquery -x gave no PortXmitPkts:\n{pq_text}"))?;
    Ok(Sample {
        which,
        up,
        wall,
        cpu: user + sys,
        smps,
        ibsim_cpu: after - before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_times_of_both_formats() {
        let o = "Nov 29 18:39:56 812142 [D3EB46C0] 0x02 -> SUBNET UP";
        assert_eq!(log_time(o), Some(18.0 * 3600.0 + 39.0 * 60.0 + 56.812142));
        let i = "2026-11-29 18:39:22.645176 [ibsm] 0x02 -> SUBNET UP";
        assert_eq!(log_time(i), Some(18.0 * 3600.0 + 39.0 * 60.0 + 22.645176));
        assert_eq!(log_time("garbage"), None);
        assert_eq!(log_time(""), None);
    }

    #[test]
    fn time_to_up_spans_midnight_and_needs_the_line() {
        let log = "Nov 29 23:59:59 500000 [A] 0x03 -> OpenSM 3.3.23\n\
                   Nov 30 00:00:01 000000 [B] 0x02 -> SUBNET UP\n";
        let d = time_to_up(log).unwrap();
        assert!((d - 1.5).abs() < 1e-6, "{d}");
        assert_eq!(time_to_up("Nov 29 23:59:59 500000 [A] 0x03 -> x\n"), None);
    }

    #[test]
    fn args_are_checked() {
        let s = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        let a = parse_args(&s(&["k.net", "--runs", "5", "--only", "ibsm"])).unwrap();
        assert_eq!((a.runs, a.only, a.maxsmps), (5, Some(Which::Ibsm), None));
        assert!(parse_args(&s(&["--runs", "0", "k.net"])).is_err());
        assert!(parse_args(&s(&["k.net", "--only", "x"])).is_err());
        assert!(parse_args(&s(&["k.net", "extra"])).is_err());
        assert!(parse_args(&s(&["--runs"])).is_err());
        assert!(parse_args(&s(&[])).is_err());
    }

    #[test]
    fn median_and_summary() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        let mk = |which, up| Sample {
            which,
            up,
            wall: up,
            cpu: 1.0,
            smps: 10,
            ibsim_cpu: 2.0,
        };
        let s = summary(&[mk(Which::OpenSm, 10.0), mk(Which::Ibsm, 2.0)]);
        assert!(
            s.contains("speedup (median up, OpenSM / ibsm): 5.0x"),
            "{s}"
        );
        assert!(s.contains("0.50"), "{s}");
    }

    #[test]
    fn own_process_cpu_is_readable() {
        let c = proc_cpu(std::process::id()).unwrap();
        assert!(c >= 0.0);
        assert!(proc_cpu(u32::MAX).is_err());
    }
}

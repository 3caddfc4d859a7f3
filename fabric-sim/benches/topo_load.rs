//! Topology load benchmark: generate k36 (`fat-tree:3,36`, 1,620 switches, 11,664 CAs), write
//! it as ibsim `.net` and ibnetdiscover text and read it back; the same for a 101,306-CA fat
//! tree (`fat-tree:3,74`); and the peak memory of a process that only builds / loads the
//! 100k-CA fabric (measured in a child process from /proc/self/status VmHWM).
//!
//! Run: `cargo bench -p fabric-sim --bench topo_load` (plain `harness = false` binary; it
//! prints a table).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use fabric_sim::topo::Topology;

const K36: &str = "fat-tree:3,36";
const BIG: &str = "fat-tree:3,74";

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t0 = Instant::now();
        let v = f();
        best = best.min(t0.elapsed());
        out = Some(v);
    }
    (best, out.unwrap())
}

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("topo-bench-{}-{name}", std::process::id()))
}

fn ms(d: Duration) -> String {
    format!("{:9.1} ms", d.as_secs_f64() * 1e3)
}

fn bench_spec(spec: &str, runs: usize) {
    let (d, t) = time(runs, || Topology::generate(spec).unwrap());
    println!(
        "{spec:<16} {} switches, {} CAs, {} links",
        t.num_switches(),
        t.num_cas(),
        t.num_links()
    );
    println!("  generate                    {}", ms(d));
    let (d, net) = time(runs, || t.to_net());
    println!(
        "  write .net (to String)      {}  ({} KiB)",
        ms(d),
        net.len() / 1024
    );
    let p = tmp("net");
    let (d, ()) = time(runs, || t.save_net(&p).unwrap());
    println!("  write .net file             {}", ms(d));
    let (d, back) = time(runs, || Topology::from_file(&p).unwrap());
    println!("  read .net file              {}", ms(d));
    assert!(back == t, "{spec}: .net round trip");
    let (d, disc) = time(runs, || t.to_ibnetdiscover(false));
    println!(
        "  write ibnetdiscover         {}  ({} KiB)",
        ms(d),
        disc.len() / 1024
    );
    let (d, back) = time(runs, || Topology::parse_ibnetdiscover(&disc).unwrap());
    println!("  read ibnetdiscover          {}", ms(d));
    assert_eq!(t.diff(&back), None, "{spec}: ibnetdiscover round trip");
    let (d, ()) = time(runs, || t.validate().unwrap());
    println!("  validate                    {}", ms(d));
    let _ = std::fs::remove_file(&p);
}

/// Child mode: build or load the big fabric and report VmHWM.
fn child(mode: &str, arg: Option<&str>) {
    let before = status_kib("VmRSS:");
    let t = match mode {
        "generate" => Topology::generate(BIG).unwrap(),
        "load" => Topology::from_file(arg.unwrap()).unwrap(),
        _ => return,
    };
    let after = status_kib("VmRSS:");
    println!(
        "{} {} {} {}",
        t.num_cas(),
        before,
        after,
        status_kib("VmHWM:")
    );
}

fn peak(mode: &str, arg: Option<&str>) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.arg("--child").arg(mode);
    if let Some(a) = arg {
        cmd.arg(a);
    }
    let out = cmd.output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    let v: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    match v.as_slice() {
        [cas, before, after, hwm] => format!(
            "{cas} CAs: RSS {:.1} MiB -> {:.1} MiB (topology ~{:.1} MiB), peak (VmHWM) {:.1} MiB",
            *before as f64 / 1024.0,
            *after as f64 / 1024.0,
            (after.saturating_sub(*before)) as f64 / 1024.0,
            *hwm as f64 / 1024.0
        ),
        _ => format!("child failed: {s} {}", String::from_utf8_lossy(&out.stderr)),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], args.get(i + 2).map(String::as_str));
        return;
    }
    // `cargo bench` passes `--bench`; ignore it.
    println!("fabric-sim topology load benchmark (best of N runs)\n");
    bench_spec(K36, 5);
    println!();
    bench_spec(BIG, 3);
    println!();
    let p = tmp("big.net");
    Topology::generate(BIG).unwrap().save_net(&p).unwrap();
    println!("peak memory, generate {BIG}: {}", peak("generate", None));
    println!(
        "peak memory, load {BIG} .net file: {}",
        peak("load", p.to_str())
    );
    let _ = std::fs::remove_file(&p);
}

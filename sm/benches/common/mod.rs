//! Measurement helpers shared by the routing benchmarks: best-of-N wall time, CPU time per
//! run (robust on a shared machine) and peak resident memory.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::Subnet;

#[path = "../../tests/fixtures/mod.rs"]
pub mod fixtures;

/// The fat-tree radix k: the first numeric command-line argument, 36 by default.
pub fn k_arg() -> u8 {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(36)
}

/// `fat_tree(k)` with fresh LIDs (LMC 0), after printing its size; `None` (after printing why)
/// if LID assignment fails.
pub fn fat_tree_with_lids(k: u8) -> Option<Subnet> {
    let mut subnet = fixtures::fat_tree(k);
    let switches = subnet.switches().count();
    let cas = subnet.nodes.len() - switches;
    println!("topology        fat-tree k={k}: {switches} switches, {cas} CAs");
    if let Err(e) = assign_lids(&mut subnet, &LidConfig::default(), &Guid2Lid::new()) {
        eprintln!("LID assignment failed: {e}");
        return None;
    }
    Some(subnet)
}

/// Peak resident set size (VmHWM) of this process in KiB.
pub fn vm_hwm_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Process CPU time (user + system) from /proc/self/stat, in clock ticks (1/100 s).
pub fn cpu_ticks() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit(')').next()?.to_string();
            let f: Vec<u64> = rest
                .split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|x| x.parse().ok())
                .collect();
            Some(f.iter().sum())
        })
        .unwrap_or(0)
}

/// Best wall time of `runs` runs, and the average CPU time per run (robust when the machine
/// is shared: wall time includes waiting for a core, CPU time does not).
pub fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    let c0 = cpu_ticks();
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        out = Some(v);
    }
    let cpu = Duration::from_millis((cpu_ticks() - c0) * 10 / runs.max(1) as u64);
    match out {
        Some(v) => (best, cpu, v),
        None => (best, cpu, f()),
    }
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

//! Up/Down on the k36 fat tree (1,620 switches, 11,664 CAs) with 1 and 2 threads, and the
//! route verifier's own time (reachability walks, channel dependency graph, balance) on the
//! resulting tables, plus peak memory.
//!
//! Run: `cargo bench -p sm --bench route_updn` (optionally `-- K` for another even k).
//! The best of 3 runs is reported, with the average CPU time per run.

use std::time::{Duration, Instant};

use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::fixtures::fat_tree;
use sm::routing::updn::{Mode, UpDn};
use sm::routing::{EngineOptions, Lfts, RoutingEngine};

fn vm_hwm_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn cpu_ticks() -> u64 {
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

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, Duration, Option<T>) {
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
    (best, cpu, out)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let k: u8 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(36);
    let mut subnet = fat_tree(k);
    let switches = subnet.switches().count();
    let cas = subnet.nodes.len() - switches;
    println!("topology        fat-tree k={k}: {switches} switches, {cas} CAs");
    if let Err(e) = assign_lids(&mut subnet, &LidConfig::default(), &Guid2Lid::new()) {
        eprintln!("LID assignment failed: {e}");
        return;
    }
    let engine = UpDn::new(EngineOptions::default(), Mode::UpDown);
    let mut lfts: Option<Lfts> = None;
    for threads in [1usize, 2] {
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("thread pool: {e}");
                return;
            }
        };
        let (t, cpu, l) = best_of(3, || {
            pool.install(|| {
                let mut rng = rand::rngs::mock::StepRng::new(0, 0);
                engine.route(&subnet, &mut rng)
            })
        });
        let l = match l {
            Some(Ok(l)) => l,
            other => {
                eprintln!("updn failed: {other:?}");
                return;
            }
        };
        if let Some(prev) = &lfts {
            assert!(prev == &l, "1-thread and 2-thread tables differ");
        }
        println!(
            "updn   {threads} thread{} {} wall (cpu {})",
            if threads == 1 { " " } else { "s" },
            ms(t),
            ms(cpu)
        );
        lfts = Some(l);
    }
    let Some(l) = lfts else { return };
    for threads in [1usize, 2] {
        let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
            return;
        };
        let (t, cpu, r) = best_of(1, || pool.install(|| sm::verify::verify(&subnet, &l)));
        let Some(r) = r else { return };
        println!(
            "verify {threads} thread{} {} wall (cpu {}): {} pairs, {} unreachable, {} loops, {} non-shortest, CDG {} channels / {} dependencies, {}, routes per link max {} stddev {:.2}",
            if threads == 1 { " " } else { "s" },
            ms(t),
            ms(cpu),
            r.reach.pairs,
            r.reach.unreachable_count,
            r.reach.loops,
            r.reach.non_shortest,
            r.cdg_channels,
            r.cdg_dependencies,
            if r.credit_loop.is_some() { "CYCLE" } else { "acyclic" },
            r.balance.per_link.max,
            r.balance.per_link.stddev
        );
    }
    if let Some(kib) = vm_hwm_kib() {
        println!("peak RSS        {:.0} MiB", kib as f64 / 1024.0);
    }
}

//! Min-hop on the k36 fat tree (1,620 switches, 11,664 CAs): LID assignment, hop matrix,
//! routing with 1 and 2 threads, the all-pairs reachability check, and memory.
//!
//! Run: `cargo bench -p sm --bench route_minhop` (optionally `-- K` for another even k,
//! `-- --no-check` to skip the reachability check).
//! Prints one line per measurement; the best of a few runs is reported for the routing steps.

use std::time::{Duration, Instant};

use sm::check::check_all_pairs_with;
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::graph::HopMatrix;
use sm::routing::minhop::MinHop;
use sm::routing::{EngineOptions, Lfts};

mod common;
use common::fixtures::fat_tree;
use common::{best_of, k_arg, ms, vm_hwm_kib};

fn main() {
    let k = k_arg();
    let t = Instant::now();
    let mut subnet = fat_tree(k);
    let build = t.elapsed();
    let switches = subnet.switches().count();
    let cas = subnet.nodes.len() - switches;
    println!(
        "topology        fat-tree k={k}: {switches} switches, {cas} CAs (built in {})",
        ms(build)
    );

    let t = Instant::now();
    let rep = match assign_lids(&mut subnet, &LidConfig::default(), &Guid2Lid::new()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("LID assignment failed: {e}");
            return;
        }
    };
    println!(
        "assign_lids     {} ({} new, top {})",
        ms(t.elapsed()),
        rep.new,
        rep.top
    );

    let engine = MinHop::new(EngineOptions::default());
    let mut results: Vec<(usize, Duration, Duration, Duration)> = Vec::new();
    let mut lfts: Option<Lfts> = None;
    let mut hm_bytes = 0;
    for threads in [1usize, 2] {
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("thread pool: {e}");
                return;
            }
        };
        let (t_hm, c_hm, hm) = best_of(5, || pool.install(|| HopMatrix::build(&subnet)));
        let (t_route, c_route, l) = best_of(5, || pool.install(|| engine.route_with(&subnet, &hm)));
        hm_bytes = hm.memory_bytes();
        if let Some(prev) = &lfts {
            assert!(prev == &l, "1-thread and 2-thread tables differ");
        }
        lfts = Some(l);
        results.push((threads, t_hm, t_route, c_hm + c_route));
    }
    for (threads, t_hm, t_route, cpu) in &results {
        println!(
            "minhop {threads} thread{} hop matrix {}, LFTs {}, total {} wall (cpu {})",
            if *threads == 1 { " " } else { "s" },
            ms(*t_hm),
            ms(*t_route),
            ms(*t_hm + *t_route),
            ms(*cpu)
        );
    }
    let Some(lfts) = lfts else { return };
    let lft_bytes = lfts.switches().len() * (usize::from(lfts.top().0) + 1);
    println!(
        "memory          LFTs {:.1} MiB, hop matrix + graph {:.1} MiB, peak RSS {:.1} MiB",
        lft_bytes as f64 / 1048576.0,
        hm_bytes as f64 / 1048576.0,
        vm_hwm_kib().unwrap_or(0) as f64 / 1024.0
    );
    if std::env::args().any(|a| a == "--no-check") {
        return;
    }
    for threads in [1usize, 2] {
        let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
            return;
        };
        let hm = HopMatrix::build(&subnet);
        let (t_chk, c_chk, r) = best_of(3, || {
            pool.install(|| check_all_pairs_with(&subnet, &lfts, &hm))
        });
        println!(
            "check_all_pairs {threads} thread{} {} wall (cpu {}) — {} pairs, {} walks, ok={}",
            if threads == 1 { " " } else { "s" },
            ms(t_chk),
            ms(c_chk),
            r.pairs,
            r.walks,
            r.is_ok()
        );
    }
}

//! ftree on the k36 fat tree (`fat-tree:3,36`: 1,620 switches, 11,664 CAs): routing with 1
//! and 2 threads, the all-pairs reachability check of the result, and memory.
//!
//! Run: `cargo bench -p sm --bench route_ftree` (optionally `-- K` for another even k,
//! `-- --no-check` to skip the reachability check). The best of 5 runs is reported, with the
//! average CPU time per run (the machine is shared, so wall time includes waiting for a core).

use std::time::Instant;

use sm::check::check_all_pairs;
use sm::routing::ftree::FatTree;
use sm::routing::{EngineOptions, Lfts, RoutingEngine};

mod common;
use common::{best_of, fat_tree_with_lids, k_arg, ms, vm_hwm_kib};

fn main() {
    let Some(subnet) = fat_tree_with_lids(k_arg()) else {
        return;
    };
    let engine = FatTree::new(&EngineOptions::default());
    let mut lfts: Option<Lfts> = None;
    for threads in [1usize, 2] {
        let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
            eprintln!("thread pool");
            return;
        };
        let (t, cpu, l) = best_of(5, || {
            pool.install(|| engine.route(&subnet, &mut rand::rngs::mock::StepRng::new(0, 1)))
        });
        let l = match l {
            Ok(r) => r.lfts,
            other => {
                eprintln!("ftree failed: {other:?}");
                return;
            }
        };
        if let Some(prev) = &lfts {
            assert!(prev == &l, "1-thread and 2-thread tables differ");
        }
        lfts = Some(l);
        println!(
            "ftree  {threads} thread{} {} wall (cpu {})",
            if threads == 1 { " " } else { "s" },
            ms(t),
            ms(cpu)
        );
    }
    let Some(lfts) = lfts else { return };
    let lft_bytes = lfts.switches().len() * (usize::from(lfts.top().0) + 1);
    println!(
        "memory          LFTs {:.1} MiB, peak RSS {:.1} MiB",
        lft_bytes as f64 / 1048576.0,
        vm_hwm_kib().unwrap_or(0) as f64 / 1024.0
    );
    if std::env::args().any(|a| a == "--no-check") {
        return;
    }
    let t = Instant::now();
    let r = check_all_pairs(&subnet, &lfts);
    println!(
        "check_all_pairs {} — {} pairs, ok={}",
        ms(t.elapsed()),
        r.pairs,
        r.is_ok()
    );
}

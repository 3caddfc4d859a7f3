//! Up/Down on the k36 fat tree (1,620 switches, 11,664 CAs) with 1 and 2 threads, and the
//! route verifier's own time (reachability walks, channel dependency graph, balance) on the
//! resulting tables, plus peak memory.
//!
//! Run: `cargo bench -p sm --bench route_updn` (optionally `-- K` for another even k).
//! The best of 3 runs is reported, with the average CPU time per run.

use sm::routing::updn::{Mode, UpDn};
use sm::routing::{EngineOptions, Lfts, RoutingEngine};

mod common;
use common::{best_of, fat_tree_with_lids, k_arg, ms, vm_hwm_kib};

fn main() {
    let Some(subnet) = fat_tree_with_lids(k_arg()) else {
        return;
    };
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
            Ok(r) => r.lfts,
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

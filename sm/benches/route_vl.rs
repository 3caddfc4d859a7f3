//! Route computation time of the VL engines (and any other engine) on a generated fabric: the
//! figures docs/benchmarks.md sets beside OpenSM's same engine.
//!
//! Run: `cargo bench -p sm --bench route_vl -- ENGINE SPEC [VLCAP] [RUNS]`, e.g.
//! `cargo bench -p sm --bench route_vl -- dfsssp fat-tree:3,24`. `SPEC` is a fabric-sim
//! generator spec; every port gets VLCap `VLCAP` (default 4 = VL0-7, as ibsim's fabrics);
//! QoS is on (`-Q`), `max_op_vls` 5. For torus-2QoS the torus-2QoS.conf of the generated torus
//! is made from its GUIDs. Prints the best wall time of `RUNS` (default 3) runs on 1 and on
//! 2 threads, the average CPU time per run, the engine's log lines that count VLs, and the
//! peak memory. With `ROUTE_VL_DIGEST=1` in the environment it also prints a digest of the
//! result (every LFT, the path SL of every ordered pair of end-port LIDs, or the error and
//! the engine's log), so a change meant to keep the tables identical can show it did, and a
//! second digest of the SL-to-VL and VL arbitration tables the engine set. The
//! engine's random choices come from an RNG that always draws 0, or with `ROUTE_VL_SEED=N`
//! from ChaCha8 seeded with N. `ROUTE_VL_FAULT=link:NAME:PORT` cables out that switch port,
//! `ROUTE_VL_FAULT=switch:NAME` removes that switch (and the CAs cabled only to it) before
//! routing (empty: none; `fabric_sim::topo::Fault`, as `ibsm topo --fault`), e.g.
//! `ROUTE_VL_FAULT=switch:sw-2-2-2` on torus:8,8,8 — the failed-link and failed-switch fabrics
//! torus-2QoS routes around. `ROUTE_VL_LMC=N` gives every end port 2^N LIDs (as `-l N`;
//! default 0).

use fabric_sim::topo::gen::Grid;
use fabric_sim::topo::Topology;
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::{engine_by_name, EngineOptions, OptionFile};

mod common;
use common::{best_of, ms, vm_hwm_kib};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let (Some(engine), Some(spec)) = (args.first(), args.get(1)) else {
        eprintln!("usage: cargo bench -p sm --bench route_vl -- ENGINE SPEC [VLCAP] [RUNS]");
        return;
    };
    let vl_cap: u8 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(4);
    let runs: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(3);
    let t = match Topology::generate(spec) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{spec}: {e}");
            return;
        }
    };
    let t = match std::env::var("ROUTE_VL_FAULT") {
        Ok(f) if !f.is_empty() => match f
            .parse::<fabric_sim::topo::Fault>()
            .and_then(|fault| t.with_fault(&fault))
        {
            Ok(t) => {
                println!("fault           {f}");
                t
            }
            Err(e) => {
                eprintln!("ROUTE_VL_FAULT={f} on {spec}: {e}");
                return;
            }
        },
        _ => t,
    };
    let mut s = fabric_sim::topo::subnet::to_subnet(&t);
    for p in &mut s.ports {
        if let Some(i) = p.info.as_mut() {
            i.set_vl_cap(vl_cap);
        }
    }
    let lmc = match std::env::var("ROUTE_VL_LMC") {
        Ok(l) if !l.is_empty() => match l.parse::<u8>() {
            Ok(l) if l <= 7 => l,
            _ => {
                eprintln!("ROUTE_VL_LMC={l}: not an LMC (0..=7)");
                return;
            }
        },
        _ => 0,
    };
    let lids = LidConfig {
        lmc,
        ..LidConfig::default()
    };
    if let Err(e) = assign_lids(&mut s, &lids, &Guid2Lid::new()) {
        eprintln!("LID assignment failed: {e}");
        return;
    }
    println!(
        "topology        {spec}: {} switches, {} CAs, VLCap {vl_cap}{}",
        t.num_switches(),
        t.num_cas(),
        if lmc > 0 {
            format!(", LMC {lmc}")
        } else {
            String::new()
        }
    );
    let mut opts = EngineOptions {
        qos: true,
        ..EngineOptions::default()
    };
    if engine == "torus-2QoS" {
        let Ok(Some(grid)) = Grid::of_spec(spec) else {
            eprintln!("torus-2QoS: {spec} is not a generated torus or mesh");
            return;
        };
        let conf = fabric_sim::topo::subnet::torus_conf(&grid);
        opts.torus_config = Some(OptionFile::from_text("torus-2QoS.conf", &conf));
    }
    let eng = match engine_by_name(engine, &opts) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    let seed: Option<u64> = std::env::var("ROUTE_VL_SEED")
        .ok()
        .and_then(|x| x.parse().ok());
    for threads in [1usize, 2] {
        let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
            return;
        };
        let (wall, cpu, (r, log)) = best_of(runs, || {
            pool.install(|| {
                let mut rng: Box<dyn rand::RngCore> = match seed {
                    Some(x) => {
                        Box::new(<rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(x))
                    }
                    None => Box::new(rand::rngs::mock::StepRng::new(0, 0)),
                };
                let mut log = Vec::new();
                let r = eng.route_logged(&s, &mut *rng, &mut log);
                (r, log)
            })
        });
        if threads == 1 && std::env::var_os("ROUTE_VL_DIGEST").is_some() {
            println!("digest          {:016x}", digest(&s, &r, &log));
            if let Ok(routes) = &r {
                // SL-to-VL and VL arbitration, apart so the digest above stays comparable.
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                format!("{:?} {:?}", routes.sl2vl, routes.vlarb).hash(&mut h);
                println!("digest vl       {:016x}", h.finish());
            }
        }
        match r {
            Ok(_) => println!(
                "{engine:<10} {threads} thread{} {} wall (cpu {})",
                if threads == 1 { " " } else { "s" },
                ms(wall),
                ms(cpu)
            ),
            Err(e) => {
                println!(
                    "{engine:<10} {threads} thread{} failed after {} wall (cpu {}): {e}",
                    if threads == 1 { " " } else { "s" },
                    ms(wall),
                    ms(cpu)
                );
                for l in log {
                    println!("  {l}");
                }
                return;
            }
        }
        if threads == 1 {
            for l in log.iter().filter(|l| {
                l.contains("needed")
                    || l.contains("Lanes")
                    || l.contains("virtual layers")
                    || l.contains("escape paths")
                    || l.contains("backtracking")
                    || l.contains("islands")
            }) {
                println!("  {l}");
            }
        }
    }
    if let Some(kib) = vm_hwm_kib() {
        println!("peak RSS        {:.0} MiB", kib as f64 / 1024.0);
    }
}

/// A hash of what the engine returned: the LFT of every switch and the SL of every path
/// between end-port LIDs (switch port 0 included), or the error; and the engine's log.
fn digest(
    s: &sm::Subnet,
    r: &Result<sm::routing::Routes, sm::routing::RouteError>,
    log: &[String],
) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    log.hash(&mut h);
    match r {
        Err(e) => e.to_string().hash(&mut h),
        Ok(routes) => {
            for &sw in routes.lfts.switches() {
                s.node(sw).guid.0.hash(&mut h);
                routes.lfts.table(sw).hash(&mut h);
            }
            let mut lids: Vec<ibmad::Lid> = s
                .end_ports()
                .filter_map(|(n, p)| s.port(n, p).map(|x| x.lid))
                .collect();
            lids.sort_unstable_by_key(|l| l.0);
            lids.dedup();
            for &a in &lids {
                for &b in &lids {
                    routes.sl(a, b).hash(&mut h);
                }
            }
        }
    }
    h.finish()
}

//! SA PathRecord answers in process: the per-sweep index and the query rate.
//!
//! Run: `cargo bench -p sm --bench sa_path` (k = 36 by default; `-- K` for another even k).
//! The fabric is the k-ary fat tree of the routing benchmarks (k36: 1,620 switches, 11,664 CAs)
//! with LIDs, min-hop LFTs and 4x QDR / MTU 4096 ports. Prints:
//! - the index build time with 1 and 2 threads and its memory;
//! - single PathRecord SubnAdmGets by LID pair and by GID pair, random pairs, on one thread:
//!   each query parses its 64-byte request record and writes its 64-byte answer (what the SA
//!   front door adds — the MAD header — is not counted here);
//! - at k ≤ 16 only (`-- 16`): a GetTable of all pairs (the world query) and one half-world
//!   GetTable per end port (what `osmtest -f c` asks), records per second.

use std::time::Instant;

use ibmad::sa_rec::path::{comp, PathRecordRepr};
use ibmad::zerocopy::IntoBytes;
use ibmad::{Gid, Lid};
use rand::{Rng, SeedableRng};
use sm::routing::minhop::MinHop;
use sm::routing::{EngineOptions, RoutingEngine};
use sm::sa::path::{answer_into, PathCtx, PathIndex, PathRequest};

mod common;
use common::{fat_tree_with_lids, k_arg, ms, vm_hwm_kib};

const PREFIX: u64 = 0xfe80_0000_0000_0000;

fn main() {
    let k = k_arg();
    let Some(mut subnet) = fat_tree_with_lids(k) else {
        return;
    };
    for p in &mut subnet.ports {
        if let Some(pi) = p.info.as_mut() {
            pi.set_mtu_cap(5);
            pi.set_link_speed_active(4);
        }
    }
    let t = Instant::now();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let routes = match MinHop::new(EngineOptions::default()).route(&subnet, &mut rng) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("routing failed: {e}");
            return;
        }
    };
    let lfts = routes.lfts;
    println!("minhop          {}", ms(t.elapsed()));
    let mut ix = None;
    for threads in [1usize, 2] {
        let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
            return;
        };
        let t = Instant::now();
        let built = pool.install(|| PathIndex::build(&subnet, &lfts, None));
        println!(
            "index build     {threads} thread{} {}",
            if threads == 1 { " " } else { "s" },
            ms(t.elapsed())
        );
        ix = Some(built);
    }
    let Some(ix) = ix else { return };
    println!(
        "index memory    {:.1} MiB ({} end ports), peak RSS {:.1} MiB",
        ix.memory_bytes() as f64 / 1048576.0,
        ix.end_ports(),
        vm_hwm_kib().unwrap_or(0) as f64 / 1024.0
    );
    let ctx = PathCtx::new(&ix, &subnet, &lfts);
    let ends: Vec<(Lid, Gid)> = subnet
        .end_ports()
        .filter_map(|(n, p)| subnet.port(n, p))
        .map(|x| (x.lid, Gid::new(PREFIX, x.guid)))
        .collect();
    let requester = ends[0].0;
    const N: usize = 2_000_000;
    let pairs: Vec<(usize, usize)> = (0..N)
        .map(|_| (rng.gen_range(0..ends.len()), rng.gen_range(0..ends.len())))
        .collect();
    for (what, cm) in [
        ("LID pair", comp::SLID | comp::DLID),
        ("GID pair", comp::SGID | comp::DGID | comp::NUMB_PATH),
    ] {
        let reqs: Vec<[u8; 64]> = pairs
            .iter()
            .map(|&(a, b)| {
                let r = PathRecordRepr {
                    slid: ends[a].0,
                    dlid: ends[b].0,
                    sgid: ends[a].1,
                    dgid: ends[b].1,
                    numb_path: 1,
                    ..PathRecordRepr::default()
                };
                let mut out = [0u8; 64];
                out.copy_from_slice(r.to_raw().as_bytes());
                out
            })
            .collect();
        let mut buf = Vec::with_capacity(64);
        let mut answered = 0usize;
        let t = Instant::now();
        for raw in &reqs {
            let Ok(record) = PathRecordRepr::parse(raw) else {
                continue;
            };
            let req = PathRequest {
                get: true,
                comp_mask: cm,
                record,
                requester,
            };
            buf.clear();
            if answer_into(&ctx, &req, &mut buf).is_ok() && buf.len() == 64 {
                answered += 1;
            }
        }
        let el = t.elapsed();
        println!(
            "Get by {what}  {N} queries in {}: {:.2} M answers/s on one thread ({answered} answered)",
            ms(el),
            answered as f64 / el.as_secs_f64() / 1e6
        );
    }
    if k > 16 {
        // All pairs at k36 are 176 M records (11 GB of answer): run `-- 16` for the tables.
        println!("GetTable        skipped above k16 (run with -- 16)");
        return;
    }
    // The world: every ordered pair in one GetTable.
    let world = PathRequest {
        get: false,
        comp_mask: 0,
        record: PathRecordRepr::default(),
        requester,
    };
    let mut buf = Vec::new();
    let t = Instant::now();
    let ok = answer_into(&ctx, &world, &mut buf).is_ok();
    let el = t.elapsed();
    let recs = buf.len() / 64;
    println!(
        "GetTable world  {recs} records ({} end ports²) in {}: {:.2} M records/s, {:.0} MiB, ok={ok}",
        ends.len(),
        ms(el),
        recs as f64 / el.as_secs_f64() / 1e6,
        buf.len() as f64 / 1048576.0
    );
    drop(buf);
    // Half-world per source, as osmtest -f c asks (SGID | NumbPath 1).
    let mut buf = Vec::new();
    let mut recs = 0usize;
    let t = Instant::now();
    for &(_, gid) in &ends {
        let r = PathRecordRepr {
            sgid: gid,
            numb_path: 1,
            ..PathRecordRepr::default()
        };
        let req = PathRequest {
            get: false,
            comp_mask: comp::SGID | comp::NUMB_PATH,
            record: r,
            requester,
        };
        buf.clear();
        if answer_into(&ctx, &req, &mut buf).is_ok() {
            recs += buf.len() / 64;
        }
    }
    let el = t.elapsed();
    println!(
        "GetTable halves {} queries, {recs} records in {}: {:.2} M records/s",
        ends.len(),
        ms(el),
        recs as f64 / el.as_secs_f64() / 1e6
    );
}

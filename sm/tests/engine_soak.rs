//! Soaks of the VL engines on generated fabrics with random failures: every table an engine
//! returns must be free of credit loops under the VL-aware check (the test's own and
//! `sm::verify::vl`, which must agree), and every CA must reach every CA and every switch LID,
//! and every switch every CA, without dead ends or forwarding loops. An engine may refuse a
//! fabric; these count only what it routes. Disconnected fabrics are skipped.
//!
//! Each test runs `IBSM_SOAK_CASES` fabrics (default 24, a few seconds); the runs that found
//! the faults fixed on 2026-12-07 were 400–2,000 cases:
//! `IBSM_SOAK_CASES=2000 cargo test --release -p sm --test engine_soak`.
#![allow(clippy::unwrap_used)]

mod vl_util;

use fabric_sim::topo::gen::{root_guids, Grid};
use fabric_sim::topo::{subnet::torus_conf, PortRef, Topology};
use ibmad::{NodeType, PortNum};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sm::check::check_all_pairs;
use sm::routing::{route_chain_with, EngineOptions, OptionFile};
use sm::Subnet;
use vl_util::{switch_walk_failures, topo_subnet, vl_check};

fn cases() -> u64 {
    std::env::var("IBSM_SOAK_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

/// Whether every CA reaches every CA and switch over minhop's tables (else the fabric is in
/// pieces, and the soak skips it).
fn connected(s: &Subnet) -> bool {
    let out = route_chain_with(&["minhop".into()], true, s, 0, &EngineOptions::default()).unwrap();
    let r = check_all_pairs(s, &out.routes.lfts);
    r.unreachable_count == 0 && r.switch_failures == 0 && r.pairs > 0
}

/// Routes `s` with `engine` and checks what it returns; a refusal is fine. The failure, if
/// any, as a line naming the case.
fn judge(s: &Subnet, case: &str, engine: &str, opts: &EngineOptions) -> Option<String> {
    let out = route_chain_with(&[engine.to_string()], true, s, 0, opts).ok()?;
    let rep = vl_check(s, &out.routes, 5);
    let reach = check_all_pairs(s, &out.routes.lfts);
    // A switch's traps to the SM.
    let to_cas = switch_walk_failures(s, &out.routes.lfts, |n| !s.node(n).is_switch()).len();
    let ok = rep.ok()
        && reach.unreachable_count == 0
        && reach.switch_failures == 0
        && reach.loops == 0
        && to_cas == 0;
    (!ok).then(|| {
        format!(
            "{case} {engine}: cycle {:?}, unreachable {}, CA→switch {}, loops {}, switch→CA {to_cas}",
            rep.cycle.map(|c| c.len()),
            reach.unreachable_count,
            reach.switch_failures,
            reach.loops
        )
    })
}

/// Cuts up to `max` random switch-to-switch links; the cuts, as text.
fn cut_links(t: &mut Topology, rng: &mut ChaCha8Rng, max: usize) -> String {
    let mut what = String::new();
    for _ in 0..rng.gen_range(0..=max) {
        let ends: Vec<PortRef> = t
            .links()
            .filter(|l| {
                [l.a, l.b]
                    .iter()
                    .all(|e| t.node(e.node).unwrap().node_type() == NodeType::SWITCH)
            })
            .map(|l| l.a)
            .collect();
        if ends.is_empty() {
            break;
        }
        let p = ends[rng.gen_range(0..ends.len())];
        what += &format!(" {}:{}", t.node(p.node).unwrap().name(), p.port.0);
        t.disconnect(p).unwrap();
    }
    what
}

/// Random irregular graphs, LMC 0 or 1: nue with 1, 2 and all VLs, dfsssp, lash.
#[test]
fn random_graphs() {
    let mut bad = Vec::new();
    for seed in 0..cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let sw = rng.gen_range(8..64);
        let spec = format!(
            "random:{sw},{},{},{seed},ports={}",
            rng.gen_range(2..90),
            rng.gen_range(0..2 * sw),
            [6, 8, 12, 36][rng.gen_range(0..4)]
        );
        let Ok(t) = Topology::generate(&spec) else {
            continue;
        };
        let lmc = u8::from(rng.gen_bool(0.2));
        let s = topo_subnet(&t, lmc, 4);
        if !connected(&s) {
            continue;
        }
        let case = format!("{spec} lmc {lmc}");
        for vls in [1, 2, 0] {
            let o = EngineOptions {
                qos: true,
                nue_max_num_vls: vls,
                ..EngineOptions::default()
            };
            bad.extend(judge(&s, &format!("{case} vls {vls}"), "nue", &o));
        }
        let o = EngineOptions {
            qos: true,
            ..EngineOptions::default()
        };
        for engine in ["dfsssp", "lash"] {
            bad.extend(judge(&s, &case, engine, &o));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Tori and meshes with up to two failed links and maybe a failed switch, LMC 0 or 1:
/// torus-2QoS (with `ibsm topo`'s configuration), nue, dfsssp, lash, dor.
#[test]
fn grids_with_failures() {
    let mut bad = Vec::new();
    for seed in 0..cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let dims = rng.gen_range(2..=3);
        let radices: Vec<String> = (0..dims)
            .map(|_| rng.gen_range(2..=6).to_string())
            .collect();
        let kind = if rng.gen_bool(0.3) { "mesh" } else { "torus" };
        let spec = format!("{kind}:{},cas={}", radices.join(","), rng.gen_range(1..=2));
        let mut t = Topology::generate(&spec).unwrap();
        let conf = torus_conf(&Grid::of_spec(&spec).unwrap().unwrap());
        let mut what = cut_links(&mut t, &mut rng, 2);
        if rng.gen_bool(0.2) {
            let sws: Vec<_> = t.nodes_of_type(NodeType::SWITCH).collect();
            let name = t
                .node(sws[rng.gen_range(0..sws.len())])
                .unwrap()
                .name()
                .to_string();
            t = t.without_switch(&name).unwrap();
            what += &format!(" {name} gone");
        }
        let lmc = u8::from(rng.gen_bool(0.25));
        let s = topo_subnet(&t, lmc, 4);
        if !connected(&s) {
            continue;
        }
        let case = format!("{spec}{what} lmc {lmc}");
        let o = EngineOptions {
            qos: true,
            torus_config: Some(OptionFile::from_text("torus-2QoS.conf", &conf)),
            ..EngineOptions::default()
        };
        for engine in ["torus-2QoS", "nue", "dfsssp", "lash", "dor"] {
            bad.extend(judge(&s, &case, engine, &o));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Dragonfly+ fabrics with up to three failed links, 1, 2 or 8 data VLs, LMC 0 or 1: dfp
/// (with QoS off and on), dfp2 (with `ibsm topo`'s root GUIDs), nue, dfsssp.
#[test]
fn dragonflies_with_failures() {
    let mut bad = Vec::new();
    for seed in 0..cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let spec = format!(
            "dragonfly:{},{},{},{},links={}",
            rng.gen_range(2..=6),
            rng.gen_range(1..=4),
            rng.gen_range(1..=4),
            rng.gen_range(1..=3),
            rng.gen_range(1..=2)
        );
        let mut t = Topology::generate(&spec).unwrap();
        let roots: String = root_guids(&spec)
            .unwrap()
            .unwrap()
            .iter()
            .map(|g| format!("0x{:016x}\n", g.0))
            .collect();
        let what = cut_links(&mut t, &mut rng, 3);
        let vl_cap = [1, 2, 4][rng.gen_range(0..3)];
        let lmc = u8::from(rng.gen_bool(0.2));
        let s = topo_subnet(&t, lmc, vl_cap);
        if !connected(&s) {
            continue;
        }
        let case = format!("{spec}{what} vlcap {vl_cap} lmc {lmc}");
        for (engine, qos) in [
            ("dfp", false),
            ("dfp", true),
            ("dfp2", true),
            ("nue", true),
            ("dfsssp", true),
        ] {
            let o = EngineOptions {
                qos,
                root_guid_file: Some(OptionFile::from_text("roots", &roots)),
                ..EngineOptions::default()
            };
            bad.extend(judge(&s, &format!("{case} qos {qos}"), engine, &o));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Sanity of the soaks themselves: on a torus with a failed link every engine above routes
/// (so `judge` is not judging refusals only), and a table with a dead end is caught.
#[test]
fn the_soak_judges_what_it_should() {
    let mut t = Topology::generate("torus:4,4,3").unwrap();
    let n = t.node_by_name("sw-1-1-1").unwrap();
    t.disconnect(PortRef {
        node: n,
        port: PortNum(1),
    })
    .unwrap();
    let s = topo_subnet(&t, 0, 4);
    assert!(connected(&s));
    let conf = torus_conf(&Grid::of_spec("torus:4,4,3").unwrap().unwrap());
    let o = EngineOptions {
        qos: true,
        torus_config: Some(OptionFile::from_text("torus-2QoS.conf", &conf)),
        ..EngineOptions::default()
    };
    for engine in ["torus-2QoS", "nue", "dfsssp", "lash"] {
        route_chain_with(&[engine.to_string()], true, &s, 0, &o).unwrap();
        assert_eq!(judge(&s, "torus:4,4,3", engine, &o), None, "{engine}");
    }
    // minhop's tables on this torus have credit loops: judged bad.
    assert!(judge(&s, "torus:4,4,3", "minhop", &o).is_some());
}

//! sssp and dfsssp on generated fabrics: shortest paths everywhere, balanced, and for dfsssp
//! free of credit loops under the VL-aware check with the VLs the ports allow.
#![allow(clippy::unwrap_used)]

mod vl_util;

use sm::check::check_all_pairs;
use sm::routing::{route_chain_with, EngineOptions, RouteError};
use vl_util::{subnet, vl_check};

fn opts(qos: bool) -> EngineOptions {
    EngineOptions {
        qos,
        ..EngineOptions::default()
    }
}

fn run(spec: &str, engine: &str, qos: bool, vl_cap: u8) -> (sm::Subnet, sm::routing::RouteOutcome) {
    let s = subnet(spec, 0, vl_cap);
    let out = route_chain_with(&[engine.to_string()], true, &s, 0, &opts(qos)).unwrap();
    (s, out)
}

#[test]
fn dfsssp_fat_tree_needs_one_layer() {
    let (s, out) = run("fat-tree:2,8", "dfsssp", true, 4);
    assert_eq!(out.engine, "dfsssp");
    assert!(
        out.log
            .iter()
            .any(|l| l.ends_with("Virtual Lanes needed: 1")),
        "{:?}",
        out.log
    );
    let reach = check_all_pairs(&s, &out.routes.lfts);
    assert_eq!(
        (reach.unreachable_count, reach.non_shortest),
        (0, 0),
        "{reach:?}"
    );
    let rep = vl_check(&s, &out.routes, 5);
    assert!(rep.ok(), "{rep:?}");
    assert_eq!(rep.detours, 0);
}

#[test]
fn dfsssp_torus_uses_layers_and_is_deadlock_free() {
    for spec in ["torus:5,5", "torus:4,4,3", "torus:6,3,cas=2"] {
        let (s, out) = run(spec, "dfsssp", true, 4);
        assert_eq!(out.engine, "dfsssp", "{spec}: {:?}", out.log);
        let needed: u8 = out
            .log
            .iter()
            .find_map(|l| l.strip_prefix("dfsssp_remove_deadlocks: Virtual Lanes needed: "))
            .unwrap()
            .parse()
            .unwrap();
        // Rings of 5 or more switches carry two-hop shortest paths all the way round: a loop
        // on one layer. (A ring of 4 may be balanced without one.)
        if spec != "torus:4,4,3" {
            assert!(needed >= 2, "{spec}: needs more than one layer");
        }
        let rep = vl_check(&s, &out.routes, 5);
        assert!(rep.ok(), "{spec}: {rep:?}");
        assert_eq!(rep.detours, 0, "{spec}: shortest paths");
        // The path SLs use the spare VLs too (OpenSM's vl_split_count).
        assert_eq!(rep.max_sl, 7, "{spec}");
    }
}

#[test]
fn sssp_is_shortest_and_not_layered() {
    let (s, out) = run("torus:5,5", "sssp", true, 4);
    assert_eq!(out.engine, "sssp");
    assert!(out.routes.path_sl.is_none());
    let reach = check_all_pairs(&s, &out.routes.lfts);
    assert_eq!(
        (reach.unreachable_count, reach.non_shortest),
        (0, 0),
        "{reach:?}"
    );
    // sssp promises no deadlock freedom: on a torus its single layer has a loop.
    assert!(vl_check(&s, &out.routes, 5).cycle.is_some());
}

#[test]
fn dfsssp_without_qos_or_vls_fails_on_a_torus_and_the_chain_falls_back() {
    for (qos, cap) in [(false, 4), (true, 1)] {
        let s = subnet("torus:5,5", 0, cap);
        let err = route_chain_with(&["dfsssp".to_string()], true, &s, 0, &opts(qos)).unwrap_err();
        let RouteError::AllEnginesFailed { log, .. } = err else {
            panic!("{err:?}")
        };
        assert!(
            log.iter()
                .any(|l| l.contains("ERR AD25: Not enough VLs available (avail=1")),
            "{log:?}"
        );
        let out = route_chain_with(&["dfsssp".to_string()], false, &s, 0, &opts(qos)).unwrap();
        assert_eq!(out.engine, "minhop");
    }
}

#[test]
fn dfsssp_random_irregular_fabrics() {
    for seed in 1..6u64 {
        let spec = format!("random:24,30,20,{seed},ports=10");
        let (s, out) = run(&spec, "dfsssp", true, 4);
        assert_eq!(out.engine, "dfsssp", "{spec}: {:?}", out.log);
        let rep = vl_check(&s, &out.routes, 5);
        assert!(rep.ok(), "{spec}: {rep:?}");
        assert_eq!(rep.detours, 0, "{spec}");
    }
}

#[test]
fn dfsssp_lmc_routes_every_lid() {
    let s = subnet("torus:4,4", 2, 4);
    let out = route_chain_with(&["dfsssp".to_string()], true, &s, 0, &opts(true)).unwrap();
    assert_eq!(out.engine, "dfsssp");
    let reach = check_all_pairs(&s, &out.routes.lfts);
    assert_eq!(
        (reach.unreachable_count, reach.non_shortest),
        (0, 0),
        "{reach:?}"
    );
    // Deadlock-free over every LID of every port, not only the base LIDs.
    let rep = vl_check(&s, &out.routes, 5);
    assert!(rep.ok(), "{rep:?}");
    assert_eq!(rep.pairs, 16 * 4 * 15 * 4);
}

/// With LMC 1, sssp's credit loop on this random graph is on the paths to the ports' second
/// LIDs only: the check walks every LID of each port's range (and agrees with
/// `sm::verify::vl`, which does too), where one over the base LIDs alone found nothing
/// (seen when this was written).
#[test]
fn sssp_lmc_loops_are_seen_on_every_lid() {
    let spec = "random:29,5,37,35,ports=36";
    let (s, out) = {
        let s = subnet(spec, 1, 4);
        let out = route_chain_with(&["sssp".to_string()], true, &s, 0, &opts(true)).unwrap();
        (s, out)
    };
    assert_eq!(out.engine, "sssp");
    let rep = vl_check(&s, &out.routes, 5);
    assert!(rep.cycle.is_some(), "{spec}: {rep:?}");
    assert_eq!(rep.pairs, 10 * 2 * 9 * 2);
}

/// Listing each switch's channels one hop closer once per run of destinations behind the
/// same switch changes no route: sssp and dfsssp give the same tables and SLs with and
/// without it, with CAs several to a switch (fat tree, random graph), one to a switch
/// (torus), and with LMC.
#[test]
fn sssp_listed_runs_change_no_route() {
    use sm::routing::dfsssp::Sssp;
    use sm::routing::RoutingEngine;
    for (spec, lmc) in [
        ("fat-tree:3,8", 0),
        ("random:40,120,60,5", 0),
        ("torus:4,4,3", 0),
        ("fat-tree:2,8", 2),
    ] {
        let s = subnet(spec, lmc, 4);
        for df in [false, true] {
            let route = |plain: bool| {
                let e = if df {
                    Sssp::dfsssp(opts(true))
                } else {
                    Sssp::new(opts(true))
                };
                let e = if plain { e.plain() } else { e };
                let mut rng = rand::rngs::mock::StepRng::new(0, 1);
                e.route_logged(&s, &mut rng, &mut Vec::new()).unwrap()
            };
            assert_eq!(route(false), route(true), "{spec}, dfsssp {df}");
        }
    }
}

/// OpenSM's dry run: a switch no other reaches makes sssp and dfsssp refuse the fabric
/// (ERR AD0C, with how many are reachable), so the chain falls back.
#[test]
fn sssp_refuses_a_detached_switch() {
    let mut s = subnet("mesh:3,3", 0, 4);
    // Cut every switch link of the first switch (its CA stays cabled).
    let sw = s.switches().next().unwrap();
    for p in 1..=s.node(sw).num_ports {
        let p = ibmad::PortNum(p);
        let Some((rn, rp)) = s.port(sw, p).unwrap().remote else {
            continue;
        };
        if !s.node(rn).is_switch() {
            continue;
        }
        for (a, b) in [(sw, p), (rn, rp)] {
            let info = s.port_mut(a, b).unwrap().info.as_mut().unwrap();
            info.set_port_state(ibmad::PortState::DOWN);
            info.set_phys_state(ibmad::PhysState::POLLING);
        }
    }
    for engine in ["sssp", "dfsssp"] {
        let err = route_chain_with(&[engine.to_string()], true, &s, 0, &opts(true)).unwrap_err();
        let RouteError::AllEnginesFailed { log, .. } = err else {
            panic!("{engine}")
        };
        // Slot 0 is the cut switch: it reaches only itself.
        assert!(
            log.iter().any(|l| l.contains(
                "ERR AD0C: unsupported network state (detached and inaccessible switches found: 1 of 9 reachable)"
            )),
            "{engine}: {log:?}"
        );
    }
}

/// Breaking a cycle moves every route through one dependency to the next layer at once. On
/// these random graphs each route of the top layer then fits a lower layer on its own, so that
/// layer empties: 2 VLs where the cycle breaking alone ended on 3, and where OpenSM 3.3.23's
/// dfsssp needs 2 (`tests/vl-count-vs-opensm.sh`, seeds 68, 82, 97 and 131). The tables stay
/// free of credit loops.
#[test]
fn dfsssp_empties_a_top_layer_whose_routes_fit_lower() {
    for spec in [
        "random:22,22,6,68,ports=13",
        "random:21,21,18,82,ports=9",
        "random:27,27,21,97,ports=15",
        "random:34,34,5,131,ports=13",
    ] {
        dfsssp_in_two_lanes_after_emptying_the_third(spec, 0);
    }
}

/// With LMC 1 these graphs end with a handful of routes (1 to 16) on a third lane that fit
/// neither lower lane as it is; OpenSM's dfsssp needs 2 VLs on each
/// (`LMC=1 tests/vl-count-vs-opensm.sh`). Moving the routes of one dependency on the cycle a
/// straggler closes to the other lower lane makes room for it.
#[test]
fn dfsssp_makes_room_for_the_last_routes_of_a_top_layer() {
    for spec in [
        "random:34,34,10,32,ports=13",
        "random:22,22,6,68,ports=13",
        "random:31,31,34,74,ports=10",
        "random:17,17,12,6,ports=14",
    ] {
        let (s, out) = dfsssp_in_two_lanes_after_emptying_the_third(spec, 1);
        let reach = check_all_pairs(&s, &out.routes.lfts);
        assert_eq!(
            (reach.unreachable_count, reach.non_shortest),
            (0, 0),
            "{spec}: {reach:?}"
        );
    }
}

/// dfsssp on `spec` with `lmc`: routed, in 2 VLs after lane 2 was emptied, and free of
/// credit loops under the VL-aware check.
fn dfsssp_in_two_lanes_after_emptying_the_third(
    spec: &str,
    lmc: u8,
) -> (sm::Subnet, sm::routing::RouteOutcome) {
    let s = subnet(spec, lmc, 4);
    let out = route_chain_with(&["dfsssp".to_string()], true, &s, 0, &opts(true)).unwrap();
    assert_eq!(out.engine, "dfsssp", "{spec}: {:?}", out.log);
    let has = |end: &str| out.log.iter().any(|l| l.ends_with(end));
    assert!(has("Virtual Lanes needed: 2"), "{spec}: {:?}", out.log);
    assert!(
        has("of lane 2 moved to lower lanes"),
        "{spec}: {:?}",
        out.log
    );
    let rep = vl_check(&s, &out.routes, 5);
    assert!(rep.ok(), "{spec} lmc {lmc}: {rep:?}");
    (s, out)
}

/// `avoid_throttled_links`: a leaf-spine link trained down to 1x while both ends enable 4x is
/// throttled; with the option sssp, dfsssp and nue route nothing over it (and say so for each
/// direction, as OpenSM logs it), every CA still reaches every CA; without it, routes use it.
#[test]
fn throttled_links_are_avoided_when_asked() {
    use ibmad::PortNum;
    let mut s = subnet("fat-tree:2,8", 0, 4);
    let leaf = s
        .switches()
        .find(|&n| {
            (1..=s.node(n).num_ports).any(|p| {
                s.port(n, PortNum(p))
                    .and_then(|x| x.remote)
                    .is_some_and(|(r, _)| !s.node(r).is_switch())
            })
        })
        .unwrap();
    let (up, (spine, down)) = (1..=s.node(leaf).num_ports)
        .find_map(|p| {
            let r = s.port(leaf, PortNum(p))?.remote?;
            s.node(r.0).is_switch().then_some((PortNum(p), r))
        })
        .unwrap();
    // Both ends enable 1x and 4x at SDR, and run 4x: not throttled.
    for (n, p) in [(leaf, up), (spine, down)] {
        let pi = s.port_mut(n, p).unwrap().info.as_mut().unwrap();
        pi.link_width_enabled = 1 | 2;
        pi.set_link_speed_enabled(1);
        assert_eq!((pi.link_width_active, pi.link_speed_active()), (2, 1));
    }
    assert!(!sm::routing::graph::link_throttled(&s, leaf, up));
    // Trained down to 1x.
    for (n, p) in [(leaf, up), (spine, down)] {
        s.port_mut(n, p)
            .unwrap()
            .info
            .as_mut()
            .unwrap()
            .link_width_active = 1;
    }
    assert!(sm::routing::graph::link_throttled(&s, leaf, up));
    assert!(sm::routing::graph::link_throttled(&s, spine, down));
    let uses = |out: &sm::routing::RouteOutcome| {
        let lfts = &out.routes.lfts;
        let on = |n, p: PortNum| lfts.table(n).unwrap().iter().filter(|&&e| e == p.0).count();
        on(leaf, up) + on(spine, down)
    };
    for engine in ["sssp", "dfsssp", "nue"] {
        for avoid in [false, true] {
            let o = EngineOptions {
                avoid_throttled_links: avoid,
                ..opts(true)
            };
            let out = route_chain_with(&[engine.to_string()], true, &s, 0, &o).unwrap();
            assert_eq!(out.engine, engine, "{:?}", out.log);
            let said = out
                .log
                .iter()
                .filter(|l| l.contains("Detected and ignoring throttled link"))
                .count();
            assert_eq!(said, if avoid { 2 } else { 0 }, "{engine}: {:?}", out.log);
            let reach = check_all_pairs(&s, &out.routes.lfts);
            assert_eq!(
                reach.unreachable_count, 0,
                "{engine} avoid {avoid}: {reach:?}"
            );
            if avoid {
                assert_eq!(uses(&out), 0, "{engine} routes over the throttled link");
            } else {
                assert!(uses(&out) > 0, "{engine} never used the link anyway");
            }
        }
    }
}

//! dor on meshes and hypercubes: shortest, deadlock-free on one VL; refused (with the chain
//! falling back) where dimension order has a credit loop, as on a torus.
#![allow(clippy::unwrap_used)]

mod vl_util;

use sm::check::check_all_pairs;
use sm::routing::{route_chain_with, EngineOptions, RouteError};
use vl_util::{subnet, vl_check};

#[test]
fn dor_on_meshes_and_hypercubes() {
    for spec in [
        "mesh:4,4",
        "mesh:3,4,3,cas=2",
        "hypercube:4",
        "hypercube:5,cas=2",
    ] {
        let s = subnet(spec, 0, 1);
        let out =
            route_chain_with(&["dor".to_string()], true, &s, 0, &EngineOptions::default()).unwrap();
        assert_eq!(out.engine, "dor", "{spec}");
        let reach = check_all_pairs(&s, &out.routes.lfts);
        assert_eq!(
            (reach.unreachable_count, reach.non_shortest),
            (0, 0),
            "{spec}"
        );
        let rep = vl_check(&s, &out.routes, 5);
        assert!(rep.ok(), "{spec}: {rep:?}");
        assert_eq!(rep.vls_used, vec![0]);
    }
}

#[test]
fn dor_refuses_a_torus() {
    let s = subnet("torus:5,5", 0, 1);
    let err =
        route_chain_with(&["dor".to_string()], true, &s, 0, &EngineOptions::default()).unwrap_err();
    let RouteError::AllEnginesFailed { log, .. } = err else {
        panic!()
    };
    assert!(
        log.iter()
            .any(|l| l.contains("dor: cannot route: dimension-order routes have a credit loop")),
        "{log:?}"
    );
}

/// hypercube:3 with the switch `sw-000` and the LID of the CA at the opposite corner.
fn cube_corners() -> (sm::Subnet, sm::NodeId, ibmad::Lid) {
    let s = subnet("hypercube:3", 0, 1);
    let a = s.node_by_guid(ibmad::Guid(0x0002_0000_0000_0000)).unwrap(); // sw-000
    let far = s
        .end_ports()
        .find(|&(n, _)| s.node(n).desc == "ca-111-0")
        .map(|(n, p)| s.port(n, p).unwrap().lid)
        .unwrap();
    (s, a, far)
}

#[test]
fn dor_uses_the_lowest_dimension() {
    // On a hypercube the first hop toward the opposite corner is dimension 0 (port 1).
    let (s, a, far) = cube_corners();
    let out =
        route_chain_with(&["dor".to_string()], true, &s, 0, &EngineOptions::default()).unwrap();
    assert_eq!(out.routes.lfts.get(a, far), Some(ibmad::PortNum(1)));
}

/// `port_search_ordering_file` (OpenSM `-O`) sets dor's dimension order: on a hypercube
/// with every switch scanning port 3 first, the first hop toward the opposite corner is
/// dimension 2 (port 3), and the routes stay shortest and deadlock-free; a switch whose line
/// names a port it does not have keeps the port order.
#[test]
fn search_ordering_file_sets_the_dimension_order() {
    let (s, a, far) = cube_corners();
    let with = |line: &str| {
        let text: String = s
            .switches()
            .map(|sw| format!("{:#x} {line}\n", s.node(sw).guid.0))
            .collect();
        let opts = EngineOptions {
            port_search_ordering_file: Some(sm::routing::OptionFile::from_text("o", &text)),
            ..EngineOptions::default()
        };
        route_chain_with(&["dor".to_string()], true, &s, 0, &opts).unwrap()
    };
    let out = with("3 2 1");
    assert_eq!(out.engine, "dor", "{:?}", out.log);
    assert_eq!(out.routes.lfts.get(a, far), Some(ibmad::PortNum(3)));
    let reach = check_all_pairs(&s, &out.routes.lfts);
    assert_eq!((reach.unreachable_count, reach.non_shortest), (0, 0));
    assert!(vl_check(&s, &out.routes, 5).ok());
    // Port 9 is no port of these switches: every line is skipped.
    let out = with("3 9");
    assert_eq!(out.routes.lfts.get(a, far), Some(ibmad::PortNum(1)));
}

/// The pass over every switch's row that dor's credit-loop check uses finds the dependencies
/// the walk of every destination's tree from every switch counts: on tori (credit loops),
/// parallel links, meshes, a hypercube and an irregular graph, toward every LID.
#[test]
fn deps_from_every_switch_match_the_tree_walk() {
    use sm::routing::cdg::{deps_from_every_switch, lft_columns, route_dep_counts, ChannelGraph};
    use sm::routing::graph::HopMatrix;
    use sm::routing::minhop::MinHop;
    for spec in [
        "torus:4,4",
        "torus:2,3,4",
        "mesh:3,4,3,cas=2",
        "hypercube:4",
        "random:20,30,25,3",
    ] {
        let s = subnet(spec, 0, 1);
        let hm = HopMatrix::build(&s);
        let lfts = MinHop::new(EngineOptions::default()).route_with(&s, &hm);
        let g = hm.graph();
        let n = g.switch_count();
        let cg = ChannelGraph::new(g);
        let lids: Vec<u16> = (1..=sm::routing::max_lid(&s).0).collect();
        let cols = lft_columns(g, &lfts, &lids);
        let counts = route_dep_counts(&cg, &cols, n, lids.len(), &vec![1; n]);
        let want: Vec<bool> = counts.iter().map(|&x| x > 0).collect();
        assert!(want.iter().any(|&x| x), "{spec}: no dependency at all");
        assert_eq!(deps_from_every_switch(g, &cg, &lfts, &lids), want, "{spec}");
    }
}

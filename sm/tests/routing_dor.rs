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

#[test]
fn dor_uses_the_lowest_dimension() {
    // On a hypercube the first hop toward the opposite corner is dimension 0 (port 1).
    let s = subnet("hypercube:3", 0, 1);
    let out =
        route_chain_with(&["dor".to_string()], true, &s, 0, &EngineOptions::default()).unwrap();
    let a = s.node_by_guid(ibmad::Guid(0x0002_0000_0000_0000)).unwrap(); // sw-000
    let far = s
        .end_ports()
        .find(|&(n, _)| s.node(n).desc == "ca-111-0")
        .map(|(n, p)| s.port(n, p).unwrap().lid)
        .unwrap();
    assert_eq!(out.routes.lfts.get(a, far), Some(ibmad::PortNum(1)));
}

//! dfp/dfp2 on Dragonfly+ fabrics: minimal routes, Min Hop + 1 adaptive groups, and the
//! VL increment at global-to-global turns, deadlock-free under the VL-aware check over every
//! path the adaptive groups allow.
#![allow(clippy::unwrap_used)]

mod vl_util;

use fabric_sim::topo::{PortRef, Topology};
use ibmad::PortNum;
use sm::check::check_all_pairs;
use sm::routing::{route_chain_with, EngineOptions, OptionFile, RouteError};
use vl_util::{subnet, switch_walk_failures, topo_subnet, vl_check};

fn run(
    s: &sm::Subnet,
    engine: &str,
    opts: &EngineOptions,
) -> Result<sm::routing::RouteOutcome, RouteError> {
    route_chain_with(&[engine.to_string()], true, s, 0, opts)
}

#[test]
fn dfp_on_dragonfly_plus() {
    for spec in [
        "dragonfly:5,4,3,2",
        "dragonfly:6,2,2,2",
        "dragonfly:4,3,2,2,links=2",
        // One global link per spine: a spine's only global link reaches one spine of the
        // other group, so routes toward the other spine (a switch without CAs) must turn
        // down→up inside its group (the dead ends this once had).
        "dragonfly:3,2,2,2",
    ] {
        let s = subnet(spec, 0, 4);
        let out =
            run(&s, "dfp", &EngineOptions::default()).unwrap_or_else(|e| panic!("{spec}: {e:?}"));
        assert_eq!(out.engine, "dfp");
        let reach = check_all_pairs(&s, &out.routes.lfts);
        assert_eq!(reach.unreachable_count, 0, "{spec}");
        assert!(reach.switch_pairs > 0, "{spec}: {reach:?}");
        assert_eq!(
            (reach.switch_failures, reach.loops),
            (0, 0),
            "{spec}: every CA reaches every switch LID: {reach:?}"
        );
        let bad = switch_walk_failures(&s, &out.routes.lfts, |_| true);
        assert!(
            bad.is_empty(),
            "{spec}: {} switch → LID dead ends, e.g. {:?}",
            bad.len(),
            &bad[..bad.len().min(8)]
        );
        // Every group pair is linked: the tables are shortest.
        assert_eq!(reach.non_shortest, 0, "{spec}: {reach:?}");
        let rep = vl_check(&s, &out.routes, 5);
        assert!(rep.ok(), "{spec}: {rep:?}");
        let ar = out.routes.ar.as_ref().unwrap();
        assert!(ar.group_count() > 0, "{spec}: Min Hop + 1 groups");
        // A spine with a single global link has no global→global turn to make.
        let one_global_per_spine = spec == "dragonfly:3,2,2,2";
        assert_eq!(
            rep.vls_used.contains(&1),
            !one_global_per_spine,
            "{spec}: detours turn onto VL 1: {rep:?}"
        );
        assert!(rep.vls_used.iter().all(|&v| v <= 1), "{spec}: {rep:?}");
    }
}

/// Groups without a direct global link reach each other through a third group (one turn at
/// its spine, which has links to both).
#[test]
fn sparse_global_links_route_through_an_intermediate_group() {
    let mut t = Topology::generate("dragonfly:5,2,1,2").unwrap();
    // Cut every global link between group 0 and group 1.
    let cut: Vec<PortRef> = t
        .links()
        .filter(|l| {
            let a = t.node(l.a.node).unwrap().name().to_string();
            let b = t.node(l.b.node).unwrap().name().to_string();
            (a.starts_with("g0-spine") && b.starts_with("g1-spine"))
                || (a.starts_with("g1-spine") && b.starts_with("g0-spine"))
        })
        .map(|l| l.a)
        .collect();
    assert!(!cut.is_empty());
    for p in cut {
        t.disconnect(p).unwrap();
    }
    let s = topo_subnet(&t, 0, 4);
    let out = run(&s, "dfp", &EngineOptions::default()).unwrap();
    let reach = check_all_pairs(&s, &out.routes.lfts);
    assert_eq!(reach.unreachable_count, 0);
    assert_eq!(reach.switch_failures, 0, "{reach:?}");
    assert_eq!(switch_walk_failures(&s, &out.routes.lfts, |_| true), vec![]);
    assert_eq!(reach.non_shortest, 0, "the detour is the shortest way here");
    let rep = vl_check(&s, &out.routes, 5);
    assert!(rep.ok(), "{rep:?}");
    // One VL: no turns allowed, so groups 0 and 1 cannot reach each other.
    let s1 = topo_subnet(&t, 0, 1);
    let e = format!(
        "{:?}",
        run(&s1, "dfp", &EngineOptions::default()).unwrap_err()
    );
    assert!(
        e.contains("no direct global link, and a detour needs 2 data VLs"),
        "{e}"
    );
}

/// A failed leaf-to-spine link: the leaf reaches that spine's own LID only up, down to
/// another leaf and up again, a route the Dragonfly+ rules do not make (found by a soak of
/// random link failures: the leaf's LFT had no entry for it). Management routes like it are
/// taken from any neighbour already routed; the CA-to-CA routes stay Dragonfly+ and
/// deadlock-free.
#[test]
fn switch_lids_stay_reachable_after_a_failed_leaf_link() {
    for engine in ["dfp", "dfp2"] {
        for (spec, cuts) in [
            ("dragonfly:5,3,3,3,links=2", &[("g1-spine-2", 2)][..]),
            (
                "dragonfly:6,2,4,1,links=2",
                &[("g2-spine-3", 2), ("g3-spine-0", 1)][..],
            ),
        ] {
            let mut t = Topology::generate(spec).unwrap();
            for &(name, port) in cuts {
                let node = t.node_by_name(name).unwrap();
                t.disconnect(PortRef {
                    node,
                    port: PortNum(port),
                })
                .unwrap()
                .unwrap();
            }
            let s = topo_subnet(&t, 0, 4);
            let roots: String = fabric_sim::topo::gen::root_guids(spec)
                .unwrap()
                .unwrap()
                .iter()
                .map(|g| format!("0x{:016x}\n", g.0))
                .collect();
            let opts = EngineOptions {
                qos: true,
                root_guid_file: Some(OptionFile::from_text("roots", &roots)),
                ..EngineOptions::default()
            };
            let out = run(&s, engine, &opts).unwrap_or_else(|e| panic!("{engine} {spec}: {e:?}"));
            let reach = check_all_pairs(&s, &out.routes.lfts);
            assert_eq!(
                (reach.unreachable_count, reach.switch_failures, reach.loops),
                (0, 0, 0),
                "{engine} {spec} without {cuts:?}: {reach:?}"
            );
            assert_eq!(switch_walk_failures(&s, &out.routes.lfts, |_| true), vec![]);
            let rep = vl_check(&s, &out.routes, 5);
            assert!(rep.ok(), "{engine} {spec}: {rep:?}");
        }
    }
}

#[test]
fn dfp_refuses_what_is_not_dragonfly_plus() {
    // Every switch of a torus has CAs: no roots.
    let s = subnet("torus:4,4", 0, 4);
    let e = format!(
        "{:?}",
        run(&s, "dfp", &EngineOptions::default()).unwrap_err()
    );
    assert!(e.contains("no root switches"), "{e}");
    // dfp2 needs a root file.
    let s = subnet("dragonfly:4,2,2,1", 0, 4);
    let e = format!(
        "{:?}",
        run(&s, "dfp2", &EngineOptions::default()).unwrap_err()
    );
    assert!(e.contains("dfp2 needs a root_guid_file"), "{e}");
}

/// dfp2: islands that are 3-level trees (k-ary 3-trees), roots from the file.
#[test]
fn dfp2_multi_level_islands() {
    use fabric_sim::topo::NewNode;
    // Three islands, each a copy of kary-ntree:2,3 (3 levels × 4 switches, 8 CAs); the top
    // switches of different islands linked on their free up-ports.
    let one = Topology::generate("kary-ntree:2,3").unwrap();
    let mut t = Topology::new();
    let mut top: Vec<Vec<fabric_sim::topo::NodeId>> = Vec::new();
    for i in 0..3u64 {
        let mut map = std::collections::HashMap::new();
        let mut tops = Vec::new();
        for (id, n) in one.nodes() {
            let guid = ibmad::Guid(n.guid().0 + (i << 32));
            let nid = t
                .add_node(NewNode::new(
                    n.node_type(),
                    n.num_ports(),
                    guid,
                    format!("i{i}-{}", n.name()),
                ))
                .unwrap();
            for (p, port) in one.ports(id) {
                t.set_port_guid(
                    PortRef { node: nid, port: p },
                    ibmad::Guid(port.guid().0 + (i << 32)),
                )
                .unwrap();
            }
            if n.name().starts_with("s0-") {
                tops.push(nid);
            }
            map.insert(id, nid);
        }
        for l in one.links() {
            t.connect(
                PortRef {
                    node: map[&l.a.node],
                    port: l.a.port,
                },
                PortRef {
                    node: map[&l.b.node],
                    port: l.b.port,
                },
            )
            .unwrap();
        }
        top.push(tops);
    }
    // Global links: top switch j of island a port 3 → island b (one per pair), port 4 the other.
    let pairs = [(0usize, 1usize, 3u8, 3u8), (1, 2, 4, 3), (2, 0, 4, 4)];
    for &(a, b, pa, pb) in &pairs {
        for (&ta, &tb) in top[a].iter().zip(&top[b]) {
            t.connect(
                PortRef {
                    node: ta,
                    port: PortNum(pa),
                },
                PortRef {
                    node: tb,
                    port: PortNum(pb),
                },
            )
            .unwrap();
        }
    }
    let s = topo_subnet(&t, 0, 4);
    let roots: String = t
        .nodes()
        .filter(|(_, n)| n.name().contains("-s0-"))
        .map(|(_, n)| format!("0x{:016x}\n", n.guid().0))
        .collect();
    let opts = EngineOptions {
        root_guid_file: Some(OptionFile::from_text("roots", &roots)),
        ..EngineOptions::default()
    };
    let e = format!("{:?}", run(&s, "dfp", &opts).unwrap_err());
    assert!(e.contains("use dfp2"), "{e}");
    let out = run(&s, "dfp2", &opts).unwrap_or_else(|e| panic!("{e:?}"));
    let reach = check_all_pairs(&s, &out.routes.lfts);
    assert_eq!(reach.unreachable_count, 0, "{reach:?}");
    assert_eq!(reach.switch_failures, 0, "{reach:?}");
    assert_eq!(switch_walk_failures(&s, &out.routes.lfts, |_| true), vec![]);
    let rep = vl_check(&s, &out.routes, 5);
    assert!(rep.ok(), "{rep:?}");
}

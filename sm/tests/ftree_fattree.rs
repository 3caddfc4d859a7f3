//! The ftree engine on generated fat trees (2- and 3-level, partial, parallel links, k-ary
//! n-trees): every CA pair reachable over shortest paths, no down→up turn, an acyclic channel
//! dependency graph, and each leaf's up-links carrying its destinations within one; refusal and
//! fallback on a torus, a random graph and with LMC > 0; GUID files.
#![allow(clippy::unwrap_used)]

mod ftree_util;

use ftree_util::{cdg_has_cycle, down_up_turns, leaf_uplink_loads, subnet};
use sm::check::check_all_pairs;
use sm::routing::ftree::{parse_guid_list, FatTree};
use sm::routing::{
    route_chain, route_chain_with, EngineOptions, OptionFile, RouteError, RoutingEngine,
};

fn ftree_ok(spec: &str) {
    let s = subnet(spec, 0);
    let out = route_chain(&["ftree".to_string()], true, &s, 0)
        .unwrap_or_else(|e| panic!("{spec}: {e:?}"));
    assert_eq!(out.engine, "ftree", "{spec}: {:?}", out.log);
    assert!(
        out.log
            .iter()
            .any(|l| l == "osm_ucast_mgr_process: ftree tables configured on all switches"),
        "{:?}",
        out.log
    );
    let r = check_all_pairs(&s, &out.routes.lfts);
    assert!(r.is_ok(), "{spec}: {r:?}");
    assert_eq!(
        down_up_turns(&s, &out.routes.lfts),
        0,
        "{spec}: down→up turns"
    );
    assert!(!cdg_has_cycle(&s, &out.routes.lfts), "{spec}: credit loop");
    // The team verifier agrees (its own CDG over all routes, switch-to-switch channels).
    let v = sm::verify::verify(&s, &out.routes.lfts);
    assert!(
        v.is_ok() && v.credit_loop.is_none(),
        "{spec}: {}",
        v.summary(&s)
    );
    assert!(v.cdg_dependencies > 0, "{spec}: empty CDG");
    // Every leaf reaches every switch LID (switch routes are up*/down* too).
    for (_, _, _, leaf) in ftree_util::ca_ports(&s) {
        for sw in s.switches() {
            let lid = s.lid_of(sw, ibmad::PortNum(0));
            assert!(
                ftree_util::walk_to_switch(&s, &out.routes.lfts, leaf, lid, sw),
                "{spec}: leaf {leaf:?} cannot reach switch LID {}",
                lid.0
            );
        }
    }
    for (leaf, loads) in leaf_uplink_loads(&s, &out.routes.lfts) {
        let min = loads.iter().map(|l| l.1).min().unwrap_or(0);
        let max = loads.iter().map(|l| l.1).max().unwrap_or(0);
        assert!(
            max - min <= 1,
            "{spec}: leaf {leaf:?} up-link loads {loads:?}"
        );
    }
}

#[test]
fn two_level_full() {
    ftree_ok("fat-tree:2,8");
    ftree_ok("fat-tree:2,12");
}

#[test]
fn two_level_partial_and_parallel() {
    ftree_ok("fat-tree:2,8,hosts=3");
    ftree_ok("fat-tree:2,12,leaves=5");
    ftree_ok("fat-tree:2,8,par=2");
    ftree_ok("fat-tree:2,12,par=3,hosts=5");
}

#[test]
fn three_level_full() {
    ftree_ok("fat-tree:3,4");
    ftree_ok("fat-tree:3,8");
}

#[test]
fn three_level_partial_and_parallel() {
    ftree_ok("fat-tree:3,8,hosts=3");
    ftree_ok("fat-tree:3,8,pods=5");
    ftree_ok("fat-tree:3,8,par=2");
}

#[test]
fn kary_ntrees() {
    ftree_ok("kary-ntree:2,3");
    ftree_ok("kary-ntree:3,3");
    ftree_ok("kary-ntree:2,4");
    ftree_ok("kary-ntree:4,2");
}

/// On a leaf with as many CAs as up-links, every destination leaves on its own spine: the
/// destinations of one leaf use all spines from every other leaf (routing.md §7 E7).
#[test]
fn destinations_of_a_leaf_use_distinct_spines() {
    let s = subnet("fat-tree:2,8", 0);
    let out = route_chain(&["ftree".to_string()], true, &s, 0).unwrap();
    let cas = ftree_util::ca_ports(&s);
    let leaf0 = cas[0].3;
    let other = cas.iter().find(|c| c.3 != leaf0).unwrap().3;
    let ports: std::collections::HashSet<u8> = cas
        .iter()
        .filter(|c| c.3 == leaf0)
        .map(|c| out.routes.lfts.get(other, c.2).unwrap().0)
        .collect();
    assert_eq!(ports.len(), 4, "4 destinations, 4 spines: {ports:?}");
}

fn refused(spec: &str, lmc: u8, needle: &str) {
    let s = subnet(spec, lmc);
    let e = FatTree::new(&EngineOptions::default())
        .route(&s, &mut rand::rngs::mock::StepRng::new(0, 1))
        .unwrap_err();
    match &e {
        RouteError::Unroutable { engine, reason } => {
            assert_eq!(*engine, "ftree");
            assert!(reason.contains(needle), "{spec}: {reason}");
        }
        other => panic!("{spec}: {other:?}"),
    }
    // The chain falls back to min-hop and logs why.
    let out = route_chain(&["ftree".to_string()], false, &s, 0).unwrap();
    assert_eq!(out.engine, "minhop");
    assert!(out
        .log
        .iter()
        .any(|l| l == "ucast_mgr_route: ftree: cannot build lid matrices"));
    assert!(out
        .log
        .iter()
        .any(|l| l == "osm_ucast_mgr_process: minhop tables configured on all switches"));
    assert!(check_all_pairs(&s, &out.routes.lfts).unreachable_count == 0);
    // With no_fallback the whole chain fails.
    assert!(matches!(
        route_chain(
            &["ftree".to_string(), "no_fallback".to_string()],
            false,
            &s,
            0
        ),
        Err(RouteError::AllEnginesFailed { .. })
    ));
}

#[test]
fn torus_is_refused_with_opensm_wording() {
    // OpenSM 3.3.23 on ibsim, torus3x3 (sm/testdata/opensm-ftree/README.md):
    // "construct_fabric: ERR AB2B: Found more than one root on fabric with maximum rank 0".
    refused(
        "torus:3,3",
        0,
        "Found more than one root on fabric with maximum rank 0",
    );
    refused("torus:4,4,2", 0, "Found more than one root");
}

/// A dragonfly ranks as a fat tree (spines over leaves), but its groups meet only over
/// same-rank links between spines. OpenSM's ftree routes those; ibsm's never uses them, and
/// its tables had left 432 of 576 CA pairs unreachable. It refuses instead, and min-hop
/// reaches every pair. Spines cabled to each other where every leaf still reaches a common
/// root are routed as before.
#[test]
fn groups_joined_only_by_same_rank_links_are_refused() {
    refused("dragonfly:4,3,2,2", 0, "without same-rank links");
    refused("dragonfly:4,3,2,2,links=2", 0, "without same-rank links");
    let s = subnet("dragonfly:4,3,2,2", 0);
    let out = route_chain(&["ftree".to_string()], false, &s, 0).unwrap();
    assert!(
        out.log
            .iter()
            .any(|l| l.contains("reach no common root going up")),
        "{:?}",
        out.log
    );
    // Two spines over two leaves, the spines also cabled to each other.
    let net = r#"
Switch 4 "spine-0"
[1] "leaf-0"[1]
[2] "leaf-1"[1]
[3] "spine-1"[3]

Switch 4 "spine-1"
[1] "leaf-0"[2]
[2] "leaf-1"[2]
[3] "spine-0"[3]

Switch 4 "leaf-0"
[1] "spine-0"[1]
[2] "spine-1"[1]
[3] "h-0"[1]

Switch 4 "leaf-1"
[1] "spine-0"[2]
[2] "spine-1"[2]
[3] "h-1"[1]

Hca 1 "h-0"
[1] "leaf-0"[3]

Hca 1 "h-1"
[1] "leaf-1"[3]
"#;
    let s = ftree_util::subnet_of(&fabric_sim::topo::Topology::parse_net(net).unwrap(), 0);
    let out = route_chain(&["ftree".to_string()], true, &s, 0).unwrap();
    assert_eq!(out.engine, "ftree", "{:?}", out.log);
    assert!(check_all_pairs(&s, &out.routes.lfts).is_ok());
}

#[test]
fn random_graph_is_refused() {
    let s = subnet("random:12,8,6,7", 0);
    let r = FatTree::new(&EngineOptions::default())
        .route(&s, &mut rand::rngs::mock::StepRng::new(0, 1));
    assert!(matches!(r, Err(RouteError::Unroutable { .. })), "{r:?}");
    let out = route_chain(&["ftree".to_string()], false, &s, 0).unwrap();
    assert_eq!(out.engine, "minhop");
}

#[test]
fn lmc_above_zero_is_refused() {
    refused(
        "fat-tree:2,8",
        1,
        "LMC > 0 is not supported by fat-tree routing",
    );
}

#[test]
fn single_switch_is_refused() {
    refused("fat-tree:2,4,leaves=1", 0, "topology is not fat-tree");
}

#[test]
fn guid_list_parsing_follows_parse_node_map() {
    let l = parse_guid_list("# c\n\n  0x0002c9000000000a  name\n0x10#x\n017\n42\n").unwrap();
    assert_eq!(
        l.iter().map(|g| g.0).collect::<Vec<_>>(),
        vec![0x0002_c900_0000_000a, 0x10, 0o17, 42]
    );
    let e = parse_guid_list("0x1\n0xzz\n0x3\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(parse_guid_list("0x1junk\n").is_err());
}

fn opts_with_cn(text: &str) -> EngineOptions {
    EngineOptions {
        cn_guid_file: Some(OptionFile::from_text("/etc/opensm/cn.txt", text)),
        ..EngineOptions::default()
    }
}

#[test]
fn cn_guid_file_marks_compute_nodes_and_the_rest_is_still_routed() {
    let s = subnet("fat-tree:2,8", 0);
    let cas = ftree_util::ca_ports(&s);
    // Half of the CA ports are compute nodes.
    let text: String = cas
        .iter()
        .step_by(2)
        .map(|c| format!("0x{:016x}\n", s.port(c.0, c.1).unwrap().guid.0))
        .collect();
    let out = route_chain_with(&["ftree".to_string()], true, &s, 0, &opts_with_cn(&text)).unwrap();
    assert_eq!(out.engine, "ftree");
    assert!(check_all_pairs(&s, &out.routes.lfts).is_ok());
    assert!(!cdg_has_cycle(&s, &out.routes.lfts));
    // No valid compute node: refused.
    let out = route_chain_with(
        &["ftree".to_string()],
        false,
        &s,
        0,
        &opts_with_cn("0x0123456789abcdef\n"),
    )
    .unwrap();
    assert_eq!(out.engine, "minhop");
    assert!(out
        .log
        .iter()
        .any(|l| l.contains("Fabric has no valid compute nodes")));
    // A malformed line rejects the file, as OpenSM's parse_node_map does.
    let out = route_chain_with(
        &["ftree".to_string()],
        false,
        &s,
        0,
        &opts_with_cn("0x1\nbad\n"),
    )
    .unwrap();
    assert_eq!(out.engine, "minhop");
    assert!(out
        .log
        .iter()
        .any(|l| l.contains("Failed reading guid files - falling back to default routing")));
    assert!(out.log.iter().any(|l| l.contains("line 2")));
}

#[test]
fn unreadable_io_guid_file_is_refused() {
    let s = subnet("fat-tree:2,8", 0);
    let opts = EngineOptions {
        io_guid_file: Some(OptionFile {
            path: "/nonexistent".to_string(),
            contents: Err("No such file or directory".to_string()),
        }),
        ..EngineOptions::default()
    };
    let out = route_chain_with(&["ftree".to_string()], false, &s, 0, &opts).unwrap();
    assert_eq!(out.engine, "minhop");
    assert!(out.log.iter().any(|l| l.contains("ERR AB28")));
}

#[test]
fn deterministic() {
    let s = subnet("fat-tree:3,8,hosts=3", 0);
    let a = route_chain(&["ftree".to_string()], true, &s, 0).unwrap();
    let b = route_chain(&["ftree".to_string()], true, &s, 99).unwrap();
    assert_eq!(a.routes.lfts, b.routes.lfts);
}

/// A leaf that lost one up-link makes the tree asymmetric: refused (OpenSM's validation, ERR
/// AB0D wording) and min-hop takes over; with a root GUID file the validation is skipped (as in
/// OpenSM) and ftree routes it, deadlock-free and fully reachable.
#[test]
fn asymmetric_tree_refused_unless_roots_are_given() {
    use fabric_sim::topo::{PortRef, Topology};
    let mut t = Topology::generate("fat-tree:2,8").unwrap();
    let leaf = t.node_by_name("leaf-0").unwrap();
    t.disconnect(PortRef {
        node: leaf,
        port: ibmad::PortNum(5),
    })
    .unwrap();
    let mut s = ftree_util::from_topology(&t);
    sm::lid::assign_lids(
        &mut s,
        &sm::lid::LidConfig::default(),
        &sm::lid::Guid2Lid::new(),
    )
    .unwrap();
    let out = route_chain(&["ftree".to_string()], false, &s, 0).unwrap();
    assert_eq!(out.engine, "minhop", "{:?}", out.log);
    assert!(out
        .log
        .iter()
        .any(|l| l == "construct_fabric: Fabric topology is not a fat-tree"));
    assert!(out
        .log
        .iter()
        .any(|l| l.contains("ERR AB0D") && l.contains("different number of")));
    // Roots: the spines.
    let roots: String = t
        .nodes()
        .filter(|(_, n)| n.name().starts_with("spine"))
        .map(|(_, n)| format!("0x{:016x}\n", n.guid().0))
        .collect();
    assert!(!roots.is_empty());
    let opts = EngineOptions {
        root_guid_file: Some(OptionFile::from_text("/etc/opensm/roots", &roots)),
        ..EngineOptions::default()
    };
    let out = route_chain_with(&["ftree".to_string()], true, &s, 0, &opts).unwrap();
    assert_eq!(out.engine, "ftree");
    // Every CA pair over shortest paths; the only unreachable switch LID is spine-0 from the
    // 4 CAs of leaf-0 (reaching it would need leaf-0 → spine → leaf → spine-0: down then up).
    let r = check_all_pairs(&s, &out.routes.lfts);
    assert_eq!(
        (
            r.unreachable_count,
            r.loops,
            r.non_shortest,
            r.switch_failures
        ),
        (0, 0, 0, 4),
        "{r:?}"
    );
    assert!(!cdg_has_cycle(&s, &out.routes.lfts));
    assert!(sm::verify::verify(&s, &out.routes.lfts)
        .credit_loop
        .is_none());
}

/// Roots given explicitly on a symmetric tree give the same tables as auto-detection.
#[test]
fn root_file_matching_autodetection_changes_nothing() {
    let s = subnet("fat-tree:3,8,hosts=3", 0);
    let roots: String = s
        .nodes
        .iter()
        .filter(|n| n.is_switch() && n.desc.starts_with("core"))
        .map(|n| format!("0x{:016x}\n", n.guid.0))
        .collect();
    assert!(!roots.is_empty());
    let opts = EngineOptions {
        root_guid_file: Some(OptionFile::from_text("roots", &roots)),
        ..EngineOptions::default()
    };
    let a = route_chain(&["ftree".to_string()], true, &s, 0).unwrap();
    let b = route_chain_with(&["ftree".to_string()], true, &s, 0, &opts).unwrap();
    assert_eq!(a.routes.lfts, b.routes.lfts);
}

/// Every (switch, switch LID) route the tables give, as channels (switch, out port), or
/// `None` where one switch does not reach another.
fn switch_routes(s: &sm::Subnet, lfts: &sm::routing::Lfts) -> Option<Vec<Vec<(sm::NodeId, u8)>>> {
    let mut out = Vec::new();
    for from in s.switches() {
        for to in s.switches() {
            let lid = s.lid_of(to, ibmad::PortNum(0));
            let (mut cur, mut path) = (from, Vec::new());
            loop {
                let p = lfts.get(cur, lid)?;
                if p.0 == 0 {
                    if cur != to {
                        return None;
                    }
                    break;
                }
                path.push((cur, p.0));
                let (rn, _) = s.port(cur, p)?.remote?;
                if path.len() > 64 || !s.node(rn).is_switch() {
                    return None;
                }
                cur = rn;
            }
            out.push(path);
        }
    }
    Some(out)
}

/// `connect_roots` (`-z`) as OpenSM's `fabric_route_roots`: without it some switches above
/// the leaves do not reach each other (two roots, or aggregation switches under different
/// roots); with it every switch reaches every switch, the entries that were set stay as they
/// were, each new entry of an upper switch is its port toward the last leaf, and the
/// switch-to-switch and CA routes together close no credit loop.
#[test]
fn connect_roots_routes_every_switch_pair_through_the_last_leaf() {
    for spec in ["fat-tree:2,8", "fat-tree:3,4", "fat-tree:3,6"] {
        let s = subnet(spec, 0);
        let route = |connect: bool| {
            let opts = EngineOptions {
                connect_roots: connect,
                ..EngineOptions::default()
            };
            route_chain_with(&["ftree".to_string()], true, &s, 0, &opts).unwrap()
        };
        let (plain, with) = (route(false), route(true));
        assert_eq!(with.engine, "ftree", "{spec}: {:?}", with.log);
        assert!(
            switch_routes(&s, &plain.routes.lfts).is_none(),
            "{spec}: every switch pair is routed without connect_roots"
        );
        let routes = switch_routes(&s, &with.routes.lfts)
            .unwrap_or_else(|| panic!("{spec}: a switch pair is still unrouted"));
        assert_eq!(routes.len(), s.switches().count().pow(2));
        // On these trees the new routes close no credit loop, with the CA routes or alone.
        let mut all = ftree_util::all_routes(&s, &with.routes.lfts);
        all.extend(routes);
        assert!(!ftree_util::routes_have_cycle(all), "{spec}: credit loop");
        let line = with
            .log
            .iter()
            .find(|l| l.starts_with("fabric_route_roots: connect_roots: "))
            .unwrap_or_else(|| panic!("{spec}: {:?}", with.log));
        let leaf_guid = u64::from_str_radix(line.rsplit("0x").next().unwrap(), 16).unwrap();
        let leaf = s.node_by_guid(ibmad::Guid(leaf_guid)).unwrap();
        let leaf_lid = s.lid_of(leaf, ibmad::PortNum(0));
        let mut new = 0;
        for sw in s.switches() {
            for (lid, (&a, &b)) in plain
                .routes
                .lfts
                .table(sw)
                .unwrap()
                .iter()
                .zip(with.routes.lfts.table(sw).unwrap())
                .enumerate()
            {
                if a != b {
                    assert_eq!(a, sm::routing::NO_PATH, "{spec}: a set entry changed");
                    let toward = with.routes.lfts.get(sw, leaf_lid).unwrap();
                    assert_eq!(b, toward.0, "{spec}: LID {lid} not toward the leaf");
                    new += 1;
                }
            }
        }
        assert!(
            line.contains(&format!(": {new} switch-LID entries")),
            "{line}"
        );
    }
}

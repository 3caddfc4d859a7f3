//! Min-hop fixtures from the requirements (subnet-init.md §4.3 T-MINHOP-LITERAL, T-MINHOP-TIE
//! cases a/b/c), LMC spreading rules, the engine chain with OpenSM's fallback and log lines,
//! and a property test on random fabrics.
#![allow(clippy::unwrap_used)]

use ibmad::{Guid, Lid, NodeType, PortNum};
use proptest::prelude::*;
use sm::check::check_all_pairs;
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::graph::HopMatrix;
use sm::routing::minhop::MinHop;
use sm::routing::{
    engine_by_name, route_chain, route_chain_with, EngineOptions, Lfts, RouteError, RoutingEngine,
};
use sm::{NodeId, Subnet};

mod fixtures;
use fixtures::{add, connect, fat_tree, node};

fn sw(s: &mut Subnet, guid: u64, name: &str) -> NodeId {
    add(s, node(guid, NodeType::SWITCH, 8, name))
}

fn ca(s: &mut Subnet, guid: u64, name: &str) -> NodeId {
    add(s, node(guid, NodeType::CA, 1, name))
}

/// Assigns LIDs with the given port-GUID → LID pins (the rest fresh), LMC `lmc`.
fn lids(s: &mut Subnet, pins: &[(u64, u16)], lmc: u8) {
    let mut g = Guid2Lid::new();
    for &(guid, lid) in pins {
        g.set(Guid(guid), Lid(lid), Lid(lid + (1 << lmc) - 1));
    }
    let rep = assign_lids(
        s,
        &LidConfig {
            lmc,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &g,
    )
    .unwrap();
    assert_eq!(rep.from_guid2lid, pins.len());
}

fn minhop(s: &Subnet) -> Lfts {
    let mut rng = rand::rngs::mock::StepRng::new(0, 0);
    MinHop::new(EngineOptions::default())
        .route(s, &mut rng)
        .unwrap()
        .lfts
}

fn ca_port_guid(s: &Subnet, n: NodeId) -> u64 {
    s.port(n, PortNum(1)).unwrap().guid.0
}

/// Routes per port of switch `sw` to CA LIDs (what OpenSM's port counters count).
fn ca_routes_per_port(s: &Subnet, l: &Lfts, sw: NodeId) -> [u32; 9] {
    let mut c = [0; 9];
    for (n, p) in s.end_ports() {
        if s.node(n).is_switch() {
            continue;
        }
        if let Some(port) = l.get(sw, s.port(n, p).unwrap().lid) {
            c[usize::from(port.0)] += 1;
        }
    }
    c
}

/// T-MINHOP-LITERAL: the seed topology as drawn. Via p1: A→C→D (2 switch hops), via p2:
/// A→D (1), via p3: A→E→B→D (3). The seed's answer "port 1" is wrong; min-hop gives 2.
#[test]
fn t_minhop_literal_routes_lid8_via_port_2() {
    let mut s = Subnet::new();
    let a = sw(&mut s, 0x0a, "A");
    let b = sw(&mut s, 0x0b, "B");
    let c = sw(&mut s, 0x0c, "C");
    let d = sw(&mut s, 0x0d, "D");
    let e = sw(&mut s, 0x0e, "E");
    let h13 = ca(&mut s, 0x1300, "H13");
    s.nodes[a.idx()].dr_path = ibmad::DrPath::local();
    connect(&mut s, (a, 1), (c, 4)); // X = 4
    connect(&mut s, (c, 6), (d, 2));
    connect(&mut s, (a, 2), (d, 1)); // Z = 1
    connect(&mut s, (a, 3), (e, 1));
    connect(&mut s, (e, 2), (b, 1));
    connect(&mut s, (b, 2), (d, 4));
    connect(&mut s, (d, 3), (h13, 1));
    let g = ca_port_guid(&s, h13);
    lids(&mut s, &[(g, 8)], 0);
    assert_eq!(s.port(h13, PortNum(1)).unwrap().lid, Lid(8));

    let hm = HopMatrix::build(&s);
    assert_eq!(hm.hops(a, d), Some(1));
    assert_eq!(hm.hops(c, d), Some(1));
    assert_eq!(hm.hops(e, d), Some(2));

    let l = minhop(&s);
    assert_eq!(l.get(a, Lid(8)), Some(PortNum(2)));
    assert_eq!(l.get(c, Lid(8)), Some(PortNum(6)));
    assert_eq!(l.get(d, Lid(8)), Some(PortNum(3)));
    // E: via A (p1) and via B (p2) are both 2 switch hops; equal counts → lowest port.
    assert_eq!(l.get(e, Lid(8)), Some(PortNum(1)));
    assert_eq!(l.get(b, Lid(8)), Some(PortNum(2)));
    assert!(check_all_pairs(&s, &l).is_ok());
}

/// T-MINHOP-TIE topology, the "C and D symmetric" form: A.p1→C, A.p2→D, C and D both reach
/// E, H13 (LID 8) hangs off E. From A, H13 is 2 switch hops via p1 or p2. Extra CAs Y (on D,
/// reachable from A only via p2) and Z (on C, only via p1) load the counters before H13 is
/// routed: D and C sort before E in OpenSM's destination order (GUID low byte first).
fn tie(with_y: bool, with_z: bool) -> (Subnet, NodeId) {
    let mut s = Subnet::new();
    let a = sw(&mut s, 0x01, "A");
    let c = sw(&mut s, 0x03, "C");
    let d = sw(&mut s, 0x04, "D");
    let e = sw(&mut s, 0x05, "E");
    s.nodes[a.idx()].dr_path = ibmad::DrPath::local();
    connect(&mut s, (a, 1), (c, 1));
    connect(&mut s, (a, 2), (d, 1));
    connect(&mut s, (c, 2), (e, 1));
    connect(&mut s, (d, 2), (e, 2));
    let h13 = ca(&mut s, 0x1300, "H13");
    connect(&mut s, (e, 3), (h13, 1));
    if with_y {
        let y = ca(&mut s, 0x2000, "Y");
        connect(&mut s, (d, 3), (y, 1));
    }
    if with_z {
        let z = ca(&mut s, 0x3000, "Z");
        connect(&mut s, (c, 3), (z, 1));
    }
    let g = ca_port_guid(&s, h13);
    lids(&mut s, &[(g, 8)], 0);
    (s, a)
}

#[test]
fn t_minhop_tie_a_fewer_routes_on_port_1_wins() {
    let (s, a) = tie(true, false);
    let l = minhop(&s);
    assert_eq!(l.get(a, Lid(8)), Some(PortNum(1)));
    // Y went out p2 first (its only min-hop port), then H13 took the emptier p1.
    assert_eq!(ca_routes_per_port(&s, &l, a)[1..3], [1, 1]);
}

#[test]
fn t_minhop_tie_b_equal_counts_lowest_port_wins() {
    for (y, z) in [(false, false), (true, true)] {
        let (s, a) = tie(y, z);
        let l = minhop(&s);
        assert_eq!(l.get(a, Lid(8)), Some(PortNum(1)), "y={y} z={z}");
        let per = ca_routes_per_port(&s, &l, a);
        assert_eq!(per[1], 1 + u32::from(z), "p1 counted once more for LID 8");
        assert_eq!(per[2], u32::from(y));
    }
}

#[test]
fn t_minhop_tie_c_more_routes_on_port_1_loses() {
    let (s, a) = tie(false, true);
    let l = minhop(&s);
    assert_eq!(l.get(a, Lid(8)), Some(PortNum(2)));
    assert_eq!(ca_routes_per_port(&s, &l, a)[1..3], [1, 1]);
}

#[test]
fn switch_lid_routes_are_not_counted_by_default_but_can_be() {
    // A has 3 parallel links to D, H1 hangs off D, LMC 1. Offset 0: H1 → p1, D's LID → p2.
    // Offset 1 starts after p1: if the route to D's LID was not counted p2 is still empty and
    // wins; with port_profile_switch_nodes it counts and p3 wins.
    let mut s = Subnet::new();
    let a = sw(&mut s, 0x01, "A");
    let d = sw(&mut s, 0x02, "D");
    s.nodes[a.idx()].dr_path = ibmad::DrPath::local();
    for p in 1..=3 {
        connect(&mut s, (a, p), (d, p + 4));
    }
    let h1 = ca(&mut s, 0x100, "H1");
    connect(&mut s, (d, 1), (h1, 1));
    lids(&mut s, &[], 1);
    let base = s.lid_of(h1, PortNum(1));
    let mut rng = rand::rngs::mock::StepRng::new(0, 0);
    let l = MinHop::new(EngineOptions::default())
        .route(&s, &mut rng)
        .unwrap()
        .lfts;
    assert_eq!(l.get(a, base), Some(PortNum(1)));
    assert_eq!(l.get(a, s.lid_of(d, PortNum(0))), Some(PortNum(2)));
    assert_eq!(l.get(a, Lid(base.0 + 1)), Some(PortNum(2)));
    assert_eq!(
        l.get(a, s.lid_of(a, PortNum(0))),
        Some(PortNum(0)),
        "own LID → port 0"
    );
    let counted = EngineOptions {
        port_profile_switch_nodes: true,
        ..EngineOptions::default()
    };
    let l = MinHop::new(counted).route(&s, &mut rng).unwrap().lfts;
    assert_eq!(l.get(a, Lid(base.0 + 1)), Some(PortNum(3)));
}

/// A→S1/S2/S3→D→H with LMC 1. W CAs on S2/S3 load ports before H is routed.
fn lmc_fabric(s3_sys_same: bool, w_on_s2: bool) -> (Subnet, NodeId, NodeId) {
    let mut s = Subnet::new();
    let a = sw(&mut s, 0x01, "A");
    let s1 = sw(&mut s, 0x11, "S1");
    let s2 = sw(&mut s, 0x12, "S2");
    let s3 = sw(&mut s, 0x13, "S3");
    let d = sw(&mut s, 0x20, "D");
    s.nodes[a.idx()].dr_path = ibmad::DrPath::local();
    s.nodes[s1.idx()].sys_guid = Guid(0xAAAA);
    s.nodes[s2.idx()].sys_guid = Guid(0xAAAA);
    if s3_sys_same {
        s.nodes[s3.idx()].sys_guid = Guid(0xAAAA);
    }
    for (i, x) in [s1, s2, s3].into_iter().enumerate() {
        connect(&mut s, (a, i as u8 + 1), (x, 1));
        connect(&mut s, (x, 2), (d, i as u8 + 1));
    }
    let h = ca(&mut s, 0x9000, "H");
    connect(&mut s, (d, 5), (h, 1));
    if w_on_s2 {
        let w2 = ca(&mut s, 0x7000, "W2");
        connect(&mut s, (s2, 3), (w2, 1));
    }
    let w3 = ca(&mut s, 0x8000, "W3");
    connect(&mut s, (s3, 3), (w3, 1));
    lids(&mut s, &[], 1);
    (s, a, h)
}

#[test]
fn lmc_prefers_a_port_to_another_system_over_fewer_routes() {
    // Offset 0: W3 → p3, H → p1 (S1, system AAAA). Offset 1: W3 → p3 again (count 2); for H
    // p2 has fewer routes but leads to the same system AAAA; p3 leads to another system.
    let (s, a, h) = lmc_fabric(false, false);
    let l = minhop(&s);
    let base = s.port(h, PortNum(1)).unwrap().lid;
    assert_eq!(s.port(h, PortNum(1)).unwrap().lmc, 1);
    assert_eq!(l.get(a, base), Some(PortNum(1)));
    assert_eq!(l.get(a, Lid(base.0 + 1)), Some(PortNum(3)));
    assert!(check_all_pairs(&s, &l).is_ok());
}

#[test]
fn lmc_prefers_an_unused_node_when_all_share_the_system() {
    // All of S1..S3 in system AAAA. Offset 0: W2 → p2, W3 → p3, H → p1. Offset 1: W2 → p2,
    // W3 → p3 (counts 2/2), H: p1 has the fewest routes (1) but S1 already carries H's first
    // LID; p2 leads to an unused node with the fewest routes among those.
    let (s, a, h) = lmc_fabric(true, true);
    let l = minhop(&s);
    let base = s.port(h, PortNum(1)).unwrap().lid;
    assert_eq!(l.get(a, base), Some(PortNum(1)));
    assert_eq!(l.get(a, Lid(base.0 + 1)), Some(PortNum(2)));
}

#[test]
fn lmc_lids_of_a_directly_attached_ca_all_use_its_port() {
    let (s, _, h) = lmc_fabric(false, false);
    let l = minhop(&s);
    let d = s.node_by_guid(Guid(0x20)).unwrap();
    let base = s.port(h, PortNum(1)).unwrap().lid;
    assert_eq!(l.get(d, base), Some(PortNum(5)));
    assert_eq!(l.get(d, Lid(base.0 + 1)), Some(PortNum(5)));
}

#[test]
fn unreachable_destination_is_no_path() {
    let mut s = Subnet::new();
    let a = sw(&mut s, 0x01, "A");
    let b = sw(&mut s, 0x02, "B");
    s.nodes[a.idx()].dr_path = ibmad::DrPath::local();
    let h = ca(&mut s, 0x100, "H");
    connect(&mut s, (b, 1), (h, 1)); // B is not linked to A
    lids(&mut s, &[], 0);
    let l = minhop(&s);
    let lid = s.port(h, PortNum(1)).unwrap().lid;
    assert_eq!(l.get(a, lid), None);
    assert_eq!(l.table(a).unwrap()[usize::from(lid.0)], 0xFF);
    assert_eq!(l.get(b, lid), Some(PortNum(1)));
    let r = check_all_pairs(&s, &l);
    assert_eq!(r.unreachable_count, 0, "H only talks to itself via B");
}

#[test]
fn multi_homed_ca_gets_a_route_to_each_port_via_its_own_switch() {
    // One 2-port CA, port 1 on S1 and port 2 on S2; S1–S2–S3 in a line, G on S3.
    let mut s = Subnet::new();
    let s1 = sw(&mut s, 0x01, "S1");
    let s2 = sw(&mut s, 0x02, "S2");
    let s3 = sw(&mut s, 0x03, "S3");
    s.nodes[s1.idx()].dr_path = ibmad::DrPath::local();
    connect(&mut s, (s1, 1), (s2, 1));
    connect(&mut s, (s2, 2), (s3, 1));
    let h = add(&mut s, node(0x500, NodeType::CA, 2, "H"));
    connect(&mut s, (h, 1), (s1, 5));
    connect(&mut s, (h, 2), (s2, 5));
    let g = ca(&mut s, 0x600, "G");
    connect(&mut s, (g, 1), (s3, 5));
    lids(&mut s, &[], 0);
    let (l1, l2) = (s.lid_of(h, PortNum(1)), s.lid_of(h, PortNum(2)));
    assert_ne!(l1, l2, "one LID per CA port");
    let l = minhop(&s);
    assert_eq!(l.get(s3, l1), Some(PortNum(1)));
    assert_eq!(
        l.get(s2, l1),
        Some(PortNum(1)),
        "towards S1, not into H's port 2"
    );
    assert_eq!(l.get(s2, l2), Some(PortNum(5)));
    assert_eq!(l.get(s1, l2), Some(PortNum(1)));
    let r = check_all_pairs(&s, &l);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.pairs, 3 * 3);
}

#[test]
fn down_link_is_not_routed_through() {
    let (mut s, a) = tie(false, false);
    // Take A.p1 down: only p2 remains.
    let mut pi = s.port(a, PortNum(1)).unwrap().info.unwrap();
    pi.set_port_state(ibmad::PortState::DOWN);
    s.port_mut(a, PortNum(1)).unwrap().info = Some(pi);
    let l = minhop(&s);
    assert_eq!(l.get(a, Lid(8)), Some(PortNum(2)));
}

#[test]
fn engine_chain_falls_back_to_minhop_with_opensm_log_lines() {
    let s = fat_tree(4);
    let mut s2 = s.clone();
    lids(&mut s2, &[], 0);
    let out = route_chain(&["up-down".to_string()], false, &s2, 1).unwrap();
    assert_eq!(out.engine, "minhop");
    let have = sm::routing::ENGINES.join(", ");
    assert_eq!(
        out.log,
        vec![
            format!("setup_routing_engine: cannot find or setup routing engine 'up-down' (ibsm has {have})"),
            "setup_routing_engines: Failed to setup routing engine 'up-down'".to_string(),
            "osm_ucast_mgr_process: minhop tables configured on all switches".to_string(),
        ]
    );
    let out = route_chain(&["bogus,minhop".to_string()], false, &s2, 1).unwrap();
    assert_eq!(out.engine, "minhop");
    assert!(out.log[0].contains("cannot find or setup routing engine 'bogus'"));
    // issue 11: the engine-setup lines are error-level and name the engines we have.
    assert_eq!(
        sm::routing::log_line_level(&out.log[0]),
        sm::Level::Error,
        "{}",
        out.log[0]
    );
    assert!(out.log[0].contains(&have));
    assert_eq!(sm::routing::log_line_level(&out.log[2]), sm::Level::Info);
    assert!(check_all_pairs(&s2, &out.routes.lfts).is_ok());

    for (engines, nf) in [
        (vec!["up-down".to_string()], true),
        (vec!["up-down,no_fallback".to_string()], false),
    ] {
        match route_chain(&engines, nf, &s2, 1) {
            Err(RouteError::AllEnginesFailed { tried, log }) => {
                assert_eq!(tried, vec!["up-down".to_string()]);
                assert_eq!(
                    log.last().unwrap(),
                    "osm_ucast_mgr_process: No routing engine able to successfully configure  switch tables on current fabric"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    let out = route_chain(&[], false, &s2, 1).unwrap();
    assert_eq!(out.engine, "minhop");
}

#[test]
fn engine_names() {
    let o = EngineOptions::default();
    assert_eq!(engine_by_name("minhop", &o).unwrap().name(), "minhop");
    assert_eq!(engine_by_name("null", &o).unwrap().name(), "minhop");
    for e in sm::routing::ENGINES {
        assert_eq!(engine_by_name(e, &o).unwrap().name(), *e);
    }
    assert!(matches!(
        engine_by_name("up-down", &o).err(),
        Some(RouteError::UnknownEngine(n)) if n == "up-down"
    ));
}

#[test]
fn fat_tree_k4_and_k8_route_all_pairs_on_shortest_paths() {
    for k in [4u8, 8] {
        let mut s = fat_tree(k);
        lids(&mut s, &[], 0);
        let l = minhop(&s);
        let r = check_all_pairs(&s, &l);
        let cas = u64::from(k) * u64::from(k) * u64::from(k) / 4;
        assert_eq!(r.pairs, cas * cas);
        assert!(r.is_ok(), "k={k}: {r:?}");
        // Balanced: at an edge switch every up port carries the same number of CA routes.
        let edge = s
            .node_by_guid(s.nodes.iter().find(|n| n.desc == "edge-0-0").unwrap().guid)
            .unwrap();
        let mut per = vec![0u32; usize::from(k) + 1];
        for (n, p) in s.end_ports() {
            if !s.node(n).is_switch() {
                if let Some(port) = l.get(edge, s.port(n, p).unwrap().lid) {
                    per[usize::from(port.0)] += 1;
                }
            }
        }
        let up = &per[usize::from(k / 2) + 1..];
        assert!(
            up.iter().all(|&c| c == up[0]) && up[0] > 0,
            "k={k}: {per:?}"
        );
    }
}

/// A random connected fabric: a spanning tree of switches plus extra links, 0–2 CAs each.
fn random_fabric(n_sw: usize, extra: &[(usize, usize)], cas: &[u8], parents: &[usize]) -> Subnet {
    let mut s = Subnet::new();
    let ids: Vec<NodeId> = (0..n_sw)
        .map(|i| {
            add(
                &mut s,
                node(0x100 + i as u64, NodeType::SWITCH, 16, &format!("s{i}")),
            )
        })
        .collect();
    s.nodes[ids[0].idx()].dr_path = ibmad::DrPath::local();
    let mut next_port = vec![1u8; n_sw];
    let link = |s: &mut Subnet, a: usize, b: usize, np: &mut Vec<u8>| {
        if a == b || np[a] > 16 || np[b] > 16 {
            return;
        }
        connect(s, (ids[a], np[a]), (ids[b], np[b]));
        np[a] += 1;
        np[b] += 1;
    };
    for i in 1..n_sw {
        link(&mut s, i, parents[i - 1] % i, &mut next_port);
    }
    for &(a, b) in extra {
        link(&mut s, a % n_sw, b % n_sw, &mut next_port);
    }
    let mut g = 0x10_0000u64;
    for (i, &k) in cas.iter().enumerate().take(n_sw) {
        for _ in 0..k {
            if next_port[i] > 16 {
                break;
            }
            g += 0x10;
            let c = add(&mut s, node(g, NodeType::CA, 1, "h"));
            connect(&mut s, (c, 1), (ids[i], next_port[i]));
            next_port[i] += 1;
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_connected_fabrics_route_every_pair_on_a_shortest_path(
        n_sw in 2usize..10,
        parents in proptest::collection::vec(0usize..100, 9),
        extra in proptest::collection::vec((0usize..10, 0usize..10), 0..8),
        cas in proptest::collection::vec(0u8..3, 10),
        lmc in 0u8..3,
    ) {
        let mut s = random_fabric(n_sw, &extra, &cas, &parents);
        lids(&mut s, &[], lmc);
        let l = minhop(&s);
        let r = check_all_pairs(&s, &l);
        prop_assert!(r.is_ok(), "{:?}", r);
        // Deterministic.
        prop_assert_eq!(&l, &minhop(&s));
    }
}

/// Min-hop with LMC 0 and no scattering, through the dedicated loop or the general one.
fn minhop_loop(s: &Subnet, count_switches: bool, plain: bool) -> Lfts {
    let mut rng = rand::rngs::mock::StepRng::new(0, 0);
    let opts = EngineOptions {
        port_profile_switch_nodes: count_switches,
        ..EngineOptions::default()
    };
    MinHop::new(opts)
        .with_plain_loop(plain)
        .route(s, &mut rng)
        .unwrap()
        .lfts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The cold LMC-0 loop (runs of destinations, shared cursors, one-port lists) picks
    /// exactly what the general loop picks: random fabrics, some with a CA cut off (no path),
    /// with and without counting routes to switches.
    #[test]
    fn plain_loop_routes_exactly_as_the_general_loop(
        n_sw in 2usize..12,
        parents in proptest::collection::vec(0usize..100, 11),
        extra in proptest::collection::vec((0usize..12, 0usize..12), 0..14),
        cas in proptest::collection::vec(0u8..4, 12),
        cut in any::<bool>(),
        count_switches in any::<bool>(),
    ) {
        let mut s = random_fabric(n_sw, &extra, &cas, &parents);
        lids(&mut s, &[], 0);
        if cut {
            let ca_link = s.switches().find_map(|n| {
                (1..=16u8).find(|&p| {
                    s.port(n, PortNum(p))
                        .and_then(|x| x.remote)
                        .is_some_and(|(rn, _)| !s.node(rn).is_switch())
                })
                .map(|p| (n, p))
            });
            if let Some((n, p)) = ca_link {
                link_down(&mut s, n, p);
            }
        }
        prop_assert_eq!(
            minhop_loop(&s, count_switches, true),
            minhop_loop(&s, count_switches, false)
        );
    }
}

#[test]
fn plain_loop_routes_a_fat_tree_exactly_as_the_general_loop() {
    let mut s = fat_tree(8);
    lids(&mut s, &[], 0);
    for count_switches in [false, true] {
        let plain = minhop_loop(&s, count_switches, true);
        assert_eq!(plain, minhop_loop(&s, count_switches, false));
        assert!(check_all_pairs(&s, &plain).is_ok());
    }
}

/// Takes the link at `(n, p)` down at both ends in the model.
fn link_down(s: &mut Subnet, n: NodeId, p: u8) {
    let (rn, rp) = s.port(n, PortNum(p)).unwrap().remote.unwrap();
    for (a, b) in [(n, PortNum(p)), (rn, rp)] {
        let info = s.port_mut(a, b).unwrap().info.as_mut().unwrap();
        info.set_port_state(ibmad::PortState::DOWN);
        info.set_phys_state(ibmad::PhysState::POLLING);
    }
}

/// Every switch's table of `l`, by switch GUID (what the SM passes back as existing LFTs).
fn existing(s: &Subnet, l: &Lfts) -> sm::routing::ExistingLfts {
    let mut e = sm::routing::ExistingLfts::default();
    for id in s.switches() {
        e.insert(s.node(id).guid, l.table(id).unwrap().to_vec());
    }
    e
}

/// With the switches' current tables, min-hop hands back a switch's table without balancing
/// when every entry of it is kept; the result must be exactly that of the full balancing loop,
/// after a link failure (switch–switch and CA), with LMC 1 and with `scatter_ports`.
#[test]
fn reusing_kept_tables_routes_exactly_as_balancing_them() {
    for (lmc, scatter) in [(0u8, 0u64), (1, 0), (0, 7)] {
        let mut s = fat_tree(8);
        lids(&mut s, &[], lmc);
        let opts = EngineOptions {
            scatter_ports: scatter,
            ..EngineOptions::default()
        };
        let route = |s: &Subnet, o: &EngineOptions, reuse: bool| {
            use rand::SeedableRng;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            MinHop::new(o.clone())
                .with_row_reuse(reuse)
                .route(s, &mut rng)
                .unwrap()
                .lfts
        };
        let before = route(&s, &opts, true);
        // A core–aggregation link, an aggregation–edge link and a CA's link go down.
        let sws: Vec<NodeId> = s.switches().collect();
        let core = sws[0];
        link_down(&mut s, core, 1);
        let agg = sws
            .iter()
            .copied()
            .find(|&n| s.node(n).desc.starts_with("agg-3"))
            .unwrap();
        let to_edge = (1..=8u8)
            .find(|&p| {
                s.port(agg, PortNum(p))
                    .and_then(|x| x.remote)
                    .is_some_and(|(rn, _)| s.node(rn).desc.starts_with("edge"))
            })
            .unwrap();
        link_down(&mut s, agg, to_edge);
        let (ca_sw, ca_port) = sws
            .iter()
            .find_map(|&n| {
                (1..=8u8).find_map(|p| {
                    let (rn, _) = s.port(n, PortNum(p))?.remote?;
                    (!s.node(rn).is_switch() && s.node(n).desc.starts_with("edge-5"))
                        .then_some((n, p))
                })
            })
            .unwrap();
        let (ca, ca_p) = s.port(ca_sw, PortNum(ca_port)).unwrap().remote.unwrap();
        let ca_lid = usize::from(s.port(ca, ca_p).unwrap().lid.0);
        let ca_lids = ca_lid..ca_lid + (1 << lmc);
        link_down(&mut s, ca_sw, ca_port);
        let kept = EngineOptions {
            existing_lfts: Some(std::sync::Arc::new(existing(&s, &before))),
            ..opts.clone()
        };
        let fast = route(&s, &kept, true);
        let full = route(&s, &kept, false);
        let mut moved = 0;
        let mut same_rows = 0;
        for &sw in &sws {
            assert_eq!(
                fast.table(sw),
                full.table(sw),
                "lmc {lmc} scatter {scatter}: switch {}",
                s.node(sw).desc
            );
            // Apart from the cut CA's own LIDs (no path now, on every switch).
            let (a, b) = (fast.table(sw).unwrap(), before.table(sw).unwrap());
            let differ = (0..a.len()).any(|l| a[l] != b[l] && !ca_lids.contains(&l));
            if !differ {
                same_rows += 1;
            } else {
                moved += 1;
            }
        }
        assert!(moved > 0, "the failures moved routes");
        assert!(same_rows > 0, "some switches kept the rest of their table");
        // Every pair still takes a shortest path (the cut CA aside, which nothing reaches).
        let r = check_all_pairs(&s, &fast);
        assert_eq!((r.loops, r.non_shortest), (0, 0), "{r:?}");
    }
}

/// `guid_routing_order_file` (OpenSM `ucast_mgr_build_lfts`): the listed end ports are routed
/// first, in the file's order, which moves the balancing; a file that does not parse is
/// logged (ERR 3A0D) and the usual order kept; with `guid_routing_order_no_scatter` the
/// listed ports are routed without `scatter_ports`.
#[test]
fn guid_routing_order_file_routes_the_listed_ports_first() {
    use sm::routing::{route_chain_with, OptionFile};
    let t = fabric_sim::topo::Topology::generate("fat-tree:2,8").unwrap();
    let mut s = fabric_sim::topo::subnet::to_subnet(&t);
    lids(&mut s, &[], 0);
    let route = |opts: &EngineOptions| {
        let out = route_chain_with(&["minhop".to_string()], true, &s, 0, opts).unwrap();
        (out.routes.lfts, out.log)
    };
    let (plain, log) = route(&EngineOptions::default());
    assert!(log.iter().all(|l| !l.contains("3A0D")), "{log:?}");
    // The CA ports, last first.
    let mut cas: Vec<u64> = s
        .end_ports()
        .filter(|&(n, _)| s.node(n).node_type == NodeType::CA)
        .map(|(n, p)| s.port(n, p).unwrap().guid.0)
        .collect();
    cas.reverse();
    let text: String = cas.iter().map(|g| format!("0x{g:016x}\n")).collect();
    let with_file = |text: &str, scatter: u64, no_scatter: bool| EngineOptions {
        guid_routing_order_file: Some(OptionFile::from_text("order.txt", text)),
        guid_routing_order_no_scatter: no_scatter,
        scatter_ports: scatter,
        ..EngineOptions::default()
    };
    let (ordered, log) = route(&with_file(&text, 0, false));
    assert!(log.iter().all(|l| !l.contains("3A0D")), "{log:?}");
    assert_ne!(ordered, plain, "the order moved no route");
    assert!(check_all_pairs(&s, &ordered).is_ok());
    // Listing a port twice, or a GUID the fabric lacks, changes nothing.
    let noisy = format!("# comment\n0x1234\n{text}0x{:016x}\n", cas[0]);
    assert_eq!(route(&with_file(&noisy, 0, false)).0, ordered);
    // A file that does not parse: the usual order, and OpenSM's error line.
    let (bad, log) = route(&with_file("0x12 zz\nnot-a-guid\n", 0, false));
    assert_eq!(bad, plain);
    assert!(
        log.iter()
            .any(|l| l.contains("ERR 3A0D: cannot parse guid routing order file 'order.txt'")),
        "{log:?}"
    );
    // Every end port listed and none scattered: the tables of the same order unscattered.
    let all: String = s
        .end_ports()
        .map(|(n, p)| format!("0x{:016x}\n", s.port(n, p).unwrap().guid.0))
        .collect();
    let unscattered = route(&with_file(&all, 0, false)).0;
    assert_eq!(route(&with_file(&all, 7919, true)).0, unscattered);
    assert_ne!(route(&with_file(&all, 7919, false)).0, unscattered);
}

fn minhop_shifted(s: &Subnet) -> Lfts {
    let opts = EngineOptions {
        port_shifting: true,
        ..EngineOptions::default()
    };
    route_chain_with(&["minhop".to_string()], true, s, 0, &opts)
        .unwrap()
        .routes
        .lfts
}

/// `port_shifting` (OpenSM `osm_switch_recommend_path`): the equally short ports are scanned
/// from position (routes on them ÷ their number) mod their number. On the tie fabric with Y
/// and Z each port of A carries one route when H13 is routed: 2 ÷ 2 = 1, so the scan starts
/// at p2, and p2 wins the tie that p1 wins without shifting. With no routes yet the scan
/// starts at p1, as without shifting.
#[test]
fn port_shifting_starts_the_scan_where_the_routes_say() {
    let (s, a) = tie(true, true);
    assert_eq!(minhop(&s).get(a, Lid(8)), Some(PortNum(1)));
    assert_eq!(minhop_shifted(&s).get(a, Lid(8)), Some(PortNum(2)));
    let (s, a) = tie(false, false);
    assert_eq!(minhop_shifted(&s).get(a, Lid(8)), Some(PortNum(1)));
    // Still the fewest routes first: with Z only, p1 carries one and p2 none.
    let (s, a) = tie(false, true);
    assert_eq!(minhop_shifted(&s).get(a, Lid(8)), Some(PortNum(2)));
}

/// On generated fabrics port_shifting moves routes and keeps every one minimal.
#[test]
fn port_shifting_moves_routes_and_keeps_them_minimal() {
    for spec in ["fat-tree:2,8", "fat-tree:3,4", "random:24,40,20,1,ports=12"] {
        let t = fabric_sim::topo::Topology::generate(spec).unwrap();
        let mut s = fabric_sim::topo::subnet::to_subnet(&t);
        lids(&mut s, &[], 0);
        let (plain, shifted) = (minhop(&s), minhop_shifted(&s));
        assert_ne!(plain, shifted, "{spec}: port_shifting moved no route");
        let r = sm::verify::verify(&s, &shifted);
        assert!(
            r.reach.pairs > 0 && r.reach.unreachable.is_empty(),
            "{spec}: {}",
            r.summary(&s)
        );
        assert_eq!(r.reach.non_shortest, 0, "{spec}");
    }
}

fn minhop_with(s: &Subnet, opts: &EngineOptions) -> (Lfts, Vec<String>) {
    let out = route_chain_with(&["minhop".to_string()], true, s, 0, opts).unwrap();
    (out.routes.lfts, out.log)
}

fn file(name: &str, text: &str) -> Option<sm::routing::OptionFile> {
    Some(sm::routing::OptionFile::from_text(name, text))
}

/// `port_prof_ignore_file` (OpenSM `-i`): routes out of a listed switch port are not counted.
/// On the tie fabric with Z, Z's route leaves A on p1, so H13 takes the emptier p2; with A's
/// p1 ignored Z's route is not counted, the ports tie, and H13 takes p1. A line that is no
/// GUID ends the file with OpenSM's ERR 3A0E, the lines before it kept.
#[test]
fn port_prof_ignore_file_leaves_routes_uncounted() {
    let (s, a) = tie(false, true);
    let guid = s.node(a).guid.0;
    let opts = |text: &str| EngineOptions {
        port_prof_ignore_file: file("ignore", text),
        ..EngineOptions::default()
    };
    assert_eq!(minhop(&s).get(a, Lid(8)), Some(PortNum(2)));
    let (l, log) = minhop_with(&s, &opts(&format!("# A's first port\n{guid:#x} 1\n")));
    assert_eq!(l.get(a, Lid(8)), Some(PortNum(1)), "{log:?}");
    // Another port, a port A does not have, a switch that does not exist: no effect.
    let (l, _) = minhop_with(&s, &opts(&format!("{guid:#x} 2\n{guid:#x} 9\n0x77 1\n")));
    assert_eq!(l.get(a, Lid(8)), Some(PortNum(2)));
    let (l, log) = minhop_with(&s, &opts(&format!("{guid:#x} 1\nnot-a-guid\n")));
    assert_eq!(
        l.get(a, Lid(8)),
        Some(PortNum(1)),
        "the line before the bad one counts"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("ERR 3A0E") && l.contains("line 2")),
        "{log:?}"
    );
}

/// `hop_weights_file` (OpenSM `-w`): a hop out of a weighted port counts as that many hops.
/// On the tie fabric H13 is two hops from A through p1 or p2; p1 weighted 3 leaves p2 the
/// only shortest port, whatever the counters say (with Y loading p2 first, p1 would win
/// unweighted). Weight 0, above 255 or missing: the line is skipped, as OpenSM does.
#[test]
fn hop_weights_file_weighs_the_hops_out_of_a_port() {
    let (s, a) = tie(true, false);
    let guid = s.node(a).guid.0;
    let opts = |text: &str| EngineOptions {
        hop_weights_file: file("weights", text),
        ..EngineOptions::default()
    };
    assert_eq!(minhop(&s).get(a, Lid(8)), Some(PortNum(1)));
    let (l, log) = minhop_with(&s, &opts(&format!("{guid:#x} 1 3\n")));
    assert_eq!(l.get(a, Lid(8)), Some(PortNum(2)), "{log:?}");
    assert!(check_all_pairs(&s, &l).is_ok());
    for skipped in ["1 0", "1 256", "1", "1 x"] {
        let (l, _) = minhop_with(&s, &opts(&format!("{guid:#x} {skipped}\n")));
        assert_eq!(l.get(a, Lid(8)), Some(PortNum(1)), "{skipped}");
    }
    let (_, log) = minhop_with(&s, &opts("0x1zz 1 2\n"));
    assert!(log.iter().any(|l| l.contains("ERR 3A05")), "{log:?}");
}

/// On generated fabrics both files move routes; weighted routes reach every pair.
#[test]
fn port_files_move_routes_on_generated_fabrics() {
    for spec in ["fat-tree:2,8", "random:24,40,20,1,ports=12"] {
        let t = fabric_sim::topo::Topology::generate(spec).unwrap();
        let mut s = fabric_sim::topo::subnet::to_subnet(&t);
        lids(&mut s, &[], 0);
        // The first switch-facing port of every switch with a CA: it has equally short
        // alternatives on both fabrics.
        let remote = |sw: NodeId, p: u8| s.port(sw, PortNum(p)).and_then(|x| x.remote);
        let picked: Vec<(u64, u8)> = s
            .switches()
            .filter(|&sw| {
                (1..=s.node(sw).num_ports)
                    .any(|p| remote(sw, p).is_some_and(|(r, _)| !s.node(r).is_switch()))
            })
            .filter_map(|sw| {
                let p = (1..=s.node(sw).num_ports)
                    .find(|&p| remote(sw, p).is_some_and(|(r, _)| s.node(r).is_switch()))?;
                Some((s.node(sw).guid.0, p))
            })
            .collect();
        assert!(!picked.is_empty());
        let lines = |extra: &str| -> String {
            picked
                .iter()
                .map(|(g, p)| format!("{g:#x} {p}{extra}\n"))
                .collect()
        };
        let plain = minhop(&s);
        let ignore = EngineOptions {
            port_prof_ignore_file: file("ignore", &lines("")),
            ..EngineOptions::default()
        };
        let weights = EngineOptions {
            hop_weights_file: file("weights", &lines(" 3")),
            ..EngineOptions::default()
        };
        let (li, _) = minhop_with(&s, &ignore);
        let (lw, _) = minhop_with(&s, &weights);
        assert_ne!(plain, li, "{spec}: the ignore file moved no route");
        assert_ne!(plain, lw, "{spec}: the weights moved no route");
        for l in [&li, &lw] {
            let r = sm::verify::verify(&s, l);
            assert!(r.reach.unreachable.is_empty(), "{spec}: {}", r.summary(&s));
        }
    }
}

/// `port_search_ordering_file` (OpenSM `-O`): a listed switch scans its ports in the file's
/// order (the rest after them, ascending), so ties go to the first listed. On the tie fabric
/// A's ports tie for H13; "2 1" gives it p2. A repeated port or port 0 skips the line; a line
/// that is no GUID ends the file with ERR 3A0F.
#[test]
fn port_search_ordering_file_orders_the_scan() {
    let (s, a) = tie(false, false);
    let guid = s.node(a).guid.0;
    let opts = |text: &str| EngineOptions {
        port_search_ordering_file: file("order", text),
        ..EngineOptions::default()
    };
    assert_eq!(minhop(&s).get(a, Lid(8)), Some(PortNum(1)));
    for (text, want) in [
        (format!("{guid:#x} 2 1\n"), 2),
        (format!("{guid:#x} 2 # then the rest\n"), 2),
        (format!("{guid:#x} 2 2\n"), 1),
        (format!("{guid:#x} 0 2\n"), 1),
        (format!("{guid:#x} 1 2\n{guid:#x} 2 1\n"), 1),
    ] {
        let (l, log) = minhop_with(&s, &opts(&text));
        assert_eq!(l.get(a, Lid(8)), Some(PortNum(want)), "{text:?} {log:?}");
    }
    let (_, log) = minhop_with(&s, &opts("zz 2 1\n"));
    assert!(log.iter().any(|l| l.contains("ERR 3A0F")), "{log:?}");
}

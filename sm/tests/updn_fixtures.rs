//! Up/Down fixtures of routing.md §6.1 (F1–F4), a switch ring where minhop has a credit loop
//! and updn has none, root-file handling and the no-root fallback chain, dnup, scatter_ports,
//! and fat trees.
#![allow(clippy::unwrap_used)]

use ibmad::{Guid, Lid, NodeType, PortNum};
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::updn::{parse_guid_file, Mode, UpDn};
use sm::routing::{route_chain_with, EngineOptions, Lfts, OptionFile, RoutingEngine};
use sm::verify::verify;
use sm::{NodeId, Subnet};

mod fixtures;
use fixtures::{add, connect, fat_tree, node};

fn sw(s: &mut Subnet, guid: u64, name: &str) -> NodeId {
    add(s, node(guid, NodeType::SWITCH, 8, name))
}

fn ca(s: &mut Subnet, guid: u64, name: &str) -> NodeId {
    add(s, node(guid, NodeType::CA, 1, name))
}

fn lids(s: &mut Subnet) {
    assign_lids(
        s,
        &LidConfig {
            lmc: 0,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &Guid2Lid::new(),
    )
    .unwrap();
}

fn lid(s: &Subnet, n: NodeId) -> Lid {
    s.lid_of(n, PortNum(1))
}

fn roots(guids: &[u64]) -> EngineOptions {
    let text: String = guids.iter().map(|g| format!("0x{g:016x}\n")).collect();
    EngineOptions {
        root_guid_file: Some(OptionFile::from_text("roots.conf", &text)),
        ..EngineOptions::default()
    }
}

fn run(engine: &str, s: &Subnet, opts: &EngineOptions) -> (Lfts, Vec<String>, &'static str) {
    let out = route_chain_with(&[engine.to_string()], false, s, 0, opts).unwrap();
    (out.routes.lfts, out.log, out.engine)
}

/// Walks the tables from CA `a` to CA `b`; the switches visited, or None on a dead end/loop.
fn walk(s: &Subnet, l: &Lfts, a: NodeId, b: NodeId) -> Option<Vec<NodeId>> {
    let dst = lid(s, b);
    let (mut cur, _) = s.port(a, PortNum(1))?.remote?;
    let mut path = vec![cur];
    for _ in 0..64 {
        let p = l.get(cur, dst)?;
        let (rn, _) = s.port(cur, p)?.remote?;
        if rn == b {
            return Some(path);
        }
        if !s.node(rn).is_switch() {
            return None;
        }
        cur = rn;
        path.push(cur);
    }
    None
}

fn port_to(s: &Subnet, from: NodeId, to: NodeId) -> PortNum {
    (1..=s.node(from).num_ports)
        .map(PortNum)
        .find(|&p| s.port(from, p).and_then(|x| x.remote).map(|r| r.0) == Some(to))
        .unwrap()
}

/// A ring of `n` switches, one CA each (switch ports 1/2 ring, 3 CA).
fn ring(n: u64) -> (Subnet, Vec<NodeId>, Vec<NodeId>) {
    let mut s = Subnet::new();
    let sws: Vec<NodeId> = (0..n)
        .map(|i| sw(&mut s, 0x100 + i, &format!("ring-{i}")))
        .collect();
    let cas: Vec<NodeId> = (0..n)
        .map(|i| ca(&mut s, 0x1000 + i * 16, &format!("h-{i}")))
        .collect();
    s.nodes[sws[0].idx()].dr_path = ibmad::DrPath::local();
    for i in 0..n as usize {
        connect(&mut s, (sws[i], 1), (sws[(i + 1) % n as usize], 2));
        connect(&mut s, (sws[i], 3), (cas[i], 1));
    }
    lids(&mut s);
    (s, sws, cas)
}

#[test]
fn ring_minhop_has_a_credit_loop_the_verifier_finds_and_updn_has_none() {
    let (s, sws, _) = ring(6);
    let (mh, _, _) = run("minhop", &s, &EngineOptions::default());
    let r = verify(&s, &mh);
    assert_eq!(r.reach.unreachable_count, 0);
    let cycle = r
        .credit_loop
        .clone()
        .expect("minhop on a ring must have a CDG cycle");
    assert!(cycle.len() >= 3, "{cycle:?}");
    // The cycle is a closed chain of links: each link starts where the previous one ends.
    for w in 0..cycle.len() {
        let (a, b) = (cycle[w], cycle[(w + 1) % cycle.len()]);
        assert_eq!(a.to, b.from);
        assert!(sws.contains(&a.from));
    }
    assert!(!r.is_ok());
    assert!(r.summary(&s).contains("CYCLE FOUND"));

    let (up, log, engine) = run("updn", &s, &EngineOptions::default());
    assert_eq!(engine, "updn");
    // A ring has no histogram root: the minimum-eccentricity fallback is logged.
    assert!(
        log.iter().any(|l| l.contains("minimum eccentricity")),
        "{log:?}"
    );
    let r = verify(&s, &up);
    assert!(r.credit_loop.is_none());
    assert_eq!(
        r.reach.unreachable_count, 0,
        "every pair has a legal path on a ring"
    );
    assert_eq!(r.reach.loops, 0);
    assert!(r.is_ok());
    // Up/down on a ring of 6 must detour for some pairs.
    assert!(r.reach.non_shortest > 0);
    assert!(r.hops.max_extra > 0 && r.hops.max <= 5, "{:?}", r.hops);
}

#[test]
fn f1_pipeline_is_routed_by_updn_on_shortest_paths() {
    // host-01, host-02 -- leaf-A -- spine-A -- spine-B -- leaf-C -- host-11, host-12
    //                                                  \-- leaf-D -- host-13
    let mut s = Subnet::new();
    let la = sw(&mut s, 0x10, "leaf-A");
    let sa = sw(&mut s, 0x20, "spine-SW-A");
    let sb = sw(&mut s, 0x30, "spine-SW-B");
    let lc = sw(&mut s, 0x40, "leaf-C");
    let ld = sw(&mut s, 0x50, "leaf-D");
    s.nodes[sa.idx()].dr_path = ibmad::DrPath::local();
    let h: Vec<NodeId> = ["host-01", "host-02", "host-11", "host-12", "host-13"]
        .iter()
        .enumerate()
        .map(|(i, n)| ca(&mut s, 0x1000 + 16 * i as u64, n))
        .collect();
    connect(&mut s, (la, 1), (sa, 1));
    connect(&mut s, (sa, 2), (sb, 1));
    connect(&mut s, (sb, 2), (lc, 1));
    connect(&mut s, (sb, 3), (ld, 1));
    connect(&mut s, (la, 2), (h[0], 1));
    connect(&mut s, (la, 3), (h[1], 1));
    connect(&mut s, (lc, 2), (h[2], 1));
    connect(&mut s, (lc, 3), (h[3], 1));
    connect(&mut s, (ld, 2), (h[4], 1));
    lids(&mut s);
    for engine in ["updn", "minhop"] {
        let (l, _, e) = run(engine, &s, &EngineOptions::default());
        assert_eq!(e, engine);
        let r = verify(&s, &l);
        assert!(r.is_ok(), "{engine}: {}", r.summary(&s));
        assert_eq!(r.reach.non_shortest, 0);
        // H11 → H13: leaf-C → spine-B → leaf-D → host-13.
        assert_eq!(walk(&s, &l, h[2], h[4]), Some(vec![lc, sb, ld]));
        assert_eq!(l.get(lc, lid(&s, h[4])), Some(port_to(&s, lc, sb)));
        assert_eq!(l.get(sb, lid(&s, h[4])), Some(port_to(&s, sb, ld)));
        assert_eq!(l.get(ld, lid(&s, h[4])), Some(PortNum(2)));
    }
}

#[test]
fn f2_same_rank_link_direction_by_guid_and_all_pairs_legal() {
    // spine (root) -- sw-A, sw-B; sw-A -- sw-B directly (same rank); host15 on A, host16 on B.
    let mut s = Subnet::new();
    let sp = sw(&mut s, 0x10, "spine");
    let a = sw(&mut s, 0x30, "sw-A");
    let b = sw(&mut s, 0x20, "sw-B");
    s.nodes[sp.idx()].dr_path = ibmad::DrPath::local();
    let h15 = ca(&mut s, 0x1500, "host15");
    let h16 = ca(&mut s, 0x1600, "host16");
    connect(&mut s, (sp, 1), (a, 1));
    connect(&mut s, (sp, 2), (b, 1));
    connect(&mut s, (a, 2), (b, 2));
    connect(&mut s, (a, 3), (h15, 1));
    connect(&mut s, (b, 3), (h16, 1));
    lids(&mut s);
    let (l, log, e) = run("updn", &s, &roots(&[0x10]));
    assert_eq!(e, "updn", "{log:?}");
    let r = verify(&s, &l);
    assert!(r.is_ok(), "{}", r.summary(&s));
    // A single same-rank hop is legal either way: the direct link is used both ways.
    assert_eq!(walk(&s, &l, h15, h16), Some(vec![a, b]));
    assert_eq!(walk(&s, &l, h16, h15), Some(vec![b, a]));
    // The spine reaches both hosts straight down.
    assert_eq!(l.get(sp, lid(&s, h16)), Some(PortNum(2)));
    assert_eq!(l.get(sp, lid(&s, h15)), Some(PortNum(1)));
}

/// F3/F4 builder: spines A, B; leaves 1–4; `extra_a3` adds the spine-A–leaf-3 link (F4).
fn two_level(f4: bool) -> (Subnet, [NodeId; 2], [NodeId; 4], Vec<NodeId>) {
    let mut s = Subnet::new();
    let spa = sw(&mut s, 0xA0, "spine-A");
    let spb = sw(&mut s, 0xB0, "spine-B");
    s.nodes[spa.idx()].dr_path = ibmad::DrPath::local();
    let leaves = [
        sw(&mut s, 0x11, "leaf-1"),
        sw(&mut s, 0x12, "leaf-2"),
        sw(&mut s, 0x13, "leaf-3"),
        sw(&mut s, 0x14, "leaf-4"),
    ];
    connect(&mut s, (spa, 1), (leaves[0], 1));
    connect(&mut s, (spa, 2), (leaves[1], 1));
    connect(&mut s, (spb, 3), (leaves[2], 2));
    connect(&mut s, (spb, 4), (leaves[3], 2));
    if f4 {
        connect(&mut s, (spa, 3), (leaves[2], 1));
    }
    // H10..H17, two per leaf.
    let hosts: Vec<NodeId> = (0..8u64)
        .map(|i| {
            let h = ca(&mut s, 0x1000 + 16 * i, &format!("H{}", 10 + i));
            connect(
                &mut s,
                (leaves[(i / 2) as usize], 5 + (i % 2) as u8),
                (h, 1),
            );
            h
        })
        .collect();
    lids(&mut s);
    (s, [spa, spb], leaves, hosts)
}

#[test]
fn f3_h11_h12_via_spine_a_both_ways() {
    let (s, [spa, _], leaves, h) = two_level(false);
    let (l, log, e) = run("updn", &s, &roots(&[0xA0, 0xB0]));
    assert_eq!(e, "updn", "{log:?}");
    let (h11, h12) = (h[1], h[2]);
    assert_eq!(
        walk(&s, &l, h11, h12),
        Some(vec![leaves[0], spa, leaves[1]])
    );
    assert_eq!(
        walk(&s, &l, h12, h11),
        Some(vec![leaves[1], spa, leaves[0]])
    );
    assert_eq!(l.get(leaves[0], lid(&s, h12)), Some(PortNum(1)));
    assert_eq!(l.get(spa, lid(&s, h12)), Some(PortNum(2)));
    assert_eq!(l.get(leaves[1], lid(&s, h12)), Some(PortNum(5)));
    let r = verify(&s, &l);
    assert!(r.credit_loop.is_none());
    assert_eq!(r.reach.loops, 0);
}

#[test]
fn f4_h10_h13_unreachable_under_updn_reachable_under_minhop() {
    let (s, [spa, spb], leaves, h) = two_level(true);
    // F4 as specified: H10 on leaf-1, H13 on leaf-4 (the fixture's hosts H10 and H16/H17 are
    // on leaf-1 and leaf-4; pick the first host of each).
    let (h10, h13) = (h[0], h[6]);
    let (l, log, e) = run("updn", &s, &roots(&[0xA0, 0xB0]));
    assert_eq!(e, "updn", "{log:?}");
    assert_eq!(walk(&s, &l, h10, h13), None);
    assert_eq!(walk(&s, &l, h13, h10), None);
    // No entry for LID(H13) on leaf-1 and spine-A, and none for LID(H10) on leaf-4/spine-B.
    assert_eq!(l.get(leaves[0], lid(&s, h13)), None);
    assert_eq!(l.get(spa, lid(&s, h13)), None);
    assert_eq!(l.get(leaves[3], lid(&s, h10)), None);
    assert_eq!(l.get(spb, lid(&s, h10)), None);
    // leaf-3 reaches both sides legally (up to the spine above each destination).
    assert_eq!(
        walk(&s, &l, h[4], h13),
        Some(vec![leaves[2], spb, leaves[3]])
    );
    assert_eq!(
        walk(&s, &l, h[4], h10),
        Some(vec![leaves[2], spa, leaves[0]])
    );
    let r = verify(&s, &l);
    assert!(r.credit_loop.is_none());
    assert_eq!(r.reach.loops, 0);
    // Exactly the leaf-1/leaf-2 ↔ leaf-4 pairs are unreachable: 4 hosts × 2 hosts × 2 ways.
    assert_eq!(r.reach.unreachable_count, 16, "{}", r.summary(&s));

    let (mh, _, _) = run("minhop", &s, &EngineOptions::default());
    assert_eq!(
        walk(&s, &mh, h10, h13),
        Some(vec![leaves[0], spa, leaves[2], spb, leaves[3]])
    );
    let r = verify(&s, &mh);
    assert_eq!(r.reach.unreachable_count, 0);
}

#[test]
fn root_file_parsing_follows_parse_node_map() {
    let g = parse_guid_file("# roots\n\n  0x0002c90300000001  # spine\n0X10\n017\n42\n").unwrap();
    assert_eq!(
        g,
        vec![
            (3, Guid(0x0002_c903_0000_0001)),
            (4, Guid(0x10)),
            (5, Guid(0o17)),
            (6, Guid(42))
        ]
    );
    let e = parse_guid_file("0x10\n0002c903zz\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.to_string().contains("octal"), "{e}");
    let e = parse_guid_file("0x10\n0x20\nspine-1\n").unwrap_err();
    assert_eq!(e.line, 3);
    assert!(parse_guid_file("0x1g\n").is_err());
    assert!(parse_guid_file("0x10000000000000000\n").is_err());
}

#[test]
fn bad_root_file_line_is_reported_and_roots_are_auto_detected() {
    let (s, _, _, _) = two_level(false);
    let opts = EngineOptions {
        root_guid_file: Some(OptionFile::from_text("r.conf", "0xa0\n0xb0 junk\nbad\n")),
        ..EngineOptions::default()
    };
    let (_, log, e) = run("updn", &s, &opts);
    assert_eq!(e, "updn");
    let err = log.iter().find(|l| l.contains("ERR AA02")).unwrap();
    assert!(err.contains("'r.conf'") && err.contains("line 3"), "{err}");
    // Auto-detection on a two-level tree finds the spines by the hop histogram.
    assert!(log.iter().any(|l| l.contains("hop histogram")), "{log:?}");
}

#[test]
fn unreadable_root_file_falls_back_to_auto_detection() {
    let (s, _, _, _) = two_level(false);
    let opts = EngineOptions {
        root_guid_file: Some(OptionFile {
            path: "/nope".into(),
            contents: Err("No such file or directory".into()),
        }),
        ..EngineOptions::default()
    };
    let (_, log, e) = run("updn", &s, &opts);
    assert_eq!(e, "updn");
    assert!(log[0].contains("ERR AA02") && log[0].contains("No such file"));
}

#[test]
fn root_file_without_switches_disables_updn_and_falls_back_to_minhop() {
    let (s, _, _, _) = two_level(false);
    for text in ["", "# nothing\n", "0xdeadbeef\n"] {
        let opts = EngineOptions {
            root_guid_file: Some(OptionFile::from_text("r.conf", text)),
            ..EngineOptions::default()
        };
        let (_, log, e) = run("updn", &s, &opts);
        assert_eq!(e, "minhop");
        let i = log
            .iter()
            .position(|l| {
                l == "updn_lid_matrices: disabling UPDN algorithm, no root nodes were found"
            })
            .unwrap();
        let j = log
            .iter()
            .position(|l| l == "ucast_mgr_route: updn: cannot build lid matrices")
            .unwrap();
        assert!(i < j);
        assert_eq!(
            log.last().unwrap(),
            "osm_ucast_mgr_process: minhop tables configured on all switches"
        );
    }
    // With no_fallback the chain fails.
    let opts = EngineOptions {
        root_guid_file: Some(OptionFile::from_text("r.conf", "")),
        ..EngineOptions::default()
    };
    assert!(route_chain_with(&["updn".to_string()], true, &s, 0, &opts).is_err());
}

#[test]
fn ca_guid_in_root_file_names_its_switch() {
    let (s, [spa, _], _, h) = two_level(false);
    // A CA on leaf-1 as "root": leaf-1 becomes the root, so spine-A is rank 1.
    let g = s.node(h[0]).guid.0;
    let e = UpDn::new(roots(&[g]), Mode::UpDown);
    let mut log = Vec::new();
    let hm = sm::routing::graph::SwitchGraph::build(&s);
    let r = e.rank(&s, &hm, &mut log).unwrap();
    assert_eq!(r.roots.len(), 1);
    assert_eq!(s.node(r.roots[0]).desc, "leaf-1");
    assert_eq!(r.rank[spa.idx()], 1);
    assert!(log.iter().any(|l| l.contains("is a CA")), "{log:?}");
}

#[test]
fn fat_trees_updn_and_dnup_are_deadlock_free_min_hop_and_balanced_like_minhop() {
    for k in [4u8, 8] {
        let mut s = fat_tree(k);
        lids(&mut s);
        let (mh, _, _) = run("minhop", &s, &EngineOptions::default());
        let rm = verify(&s, &mh);
        for engine in ["updn", "dnup"] {
            let (l, log, e) = run(engine, &s, &EngineOptions::default());
            assert_eq!(e, engine, "{log:?}");
            let r = verify(&s, &l);
            assert!(r.is_ok(), "{engine} k{k}: {}", r.summary(&s));
            let cas = u64::from(k).pow(3) / 4;
            assert_eq!(r.reach.pairs, cas * cas);
            if engine == "updn" {
                assert_eq!(r.reach.non_shortest, 0);
                assert!(log.iter().any(|l| l.contains("hop histogram")), "{log:?}");
                assert!(r.balance.per_link.max <= rm.balance.per_link.max);
            }
        }
    }
}

#[test]
fn dnup_forbids_up_then_down() {
    // On F4 dnup ranks the leaves 0; spines are rank 1. Legal routes go away from the leaves
    // first and then back toward them, so leaf-1 → spine-A → leaf-3 → spine-B → leaf-4
    // (toward spine, toward leaf, away, toward) is not legal: H10↔H13 stays unreachable,
    // while leaf-3's hosts reach both sides.
    let (s, _, _, h) = two_level(true);
    let (l, _, e) = run("dnup", &s, &EngineOptions::default());
    assert_eq!(e, "dnup");
    assert_eq!(walk(&s, &l, h[0], h[6]), None);
    assert!(walk(&s, &l, h[4], h[6]).is_some());
    assert!(walk(&s, &l, h[0], h[2]).is_some());
    assert!(verify(&s, &l).credit_loop.is_none());
}

#[test]
fn scatter_ports_is_reproducible_and_keeps_routes_minimal() {
    let mut s = fat_tree(8);
    lids(&mut s);
    let with = |seed: u64, engine: &str| {
        let opts = EngineOptions {
            scatter_ports: seed,
            ..EngineOptions::default()
        };
        route_chain_with(&[engine.to_string()], true, &s, seed, &opts)
            .unwrap()
            .routes
            .lfts
    };
    for engine in ["minhop", "updn"] {
        let plain = with(0, engine);
        let a = with(7, engine);
        let b = with(7, engine);
        let c = with(11, engine);
        assert_eq!(a, b, "{engine}: same seed, same tables");
        assert_ne!(a, plain, "{engine}: scattering changes ties");
        assert_ne!(a, c, "{engine}: another seed, other tables");
        let r = verify(&s, &a);
        assert!(r.is_ok() && r.reach.non_shortest == 0, "{}", r.summary(&s));
    }
}

#[test]
fn engine_names_resolve() {
    let o = EngineOptions::default();
    for n in ["updn", "dnup", "file"] {
        assert_eq!(sm::routing::engine_by_name(n, &o).unwrap().name(), n);
    }
    let _ = UpDn::new(o, Mode::DownUp).name();
}

#[test]
fn updn_with_lmc_routes_every_lid_deadlock_free() {
    let mut s = fat_tree(4);
    assign_lids(
        &mut s,
        &LidConfig {
            lmc: 2,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &Guid2Lid::new(),
    )
    .unwrap();
    let (l, _, e) = run("updn", &s, &EngineOptions::default());
    assert_eq!(e, "updn");
    let r = verify(&s, &l);
    assert!(r.is_ok(), "{}", r.summary(&s));
    // 16 CAs × 16 CAs × 4 LIDs each.
    assert_eq!(r.reach.pairs, 16 * 16 * 4);
    assert_eq!(r.reach.non_shortest, 0);
    // The 4 LIDs of a CA on another pod leave an edge switch over both up-links.
    let edge = s
        .switches()
        .find(|&x| s.node(x).desc == "edge-0-0")
        .unwrap();
    let far = s
        .node_ids()
        .find(|&x| s.node(x).desc == "host-3-1-1")
        .unwrap();
    let base = s.lid_of(far, PortNum(1)).0;
    let ports: std::collections::BTreeSet<u8> = (0..4)
        .map(|o| l.get(edge, Lid(base + o)).unwrap().0)
        .collect();
    assert_eq!(ports.len(), 2, "{ports:?}");
}

#[test]
fn dnup_without_leaf_switches_fails_and_falls_back() {
    // Two switches, no CAs: dnup has no rank-0 leaf (OpenSM ERR AE0D).
    let mut s = Subnet::new();
    let a = sw(&mut s, 0xa, "a");
    let b = sw(&mut s, 0xb, "b");
    s.nodes[a.idx()].dr_path = ibmad::DrPath::local();
    connect(&mut s, (a, 1), (b, 1));
    lids(&mut s);
    let (_, log, e) = run("dnup", &s, &EngineOptions::default());
    assert_eq!(e, "minhop");
    assert!(
        log[0].contains("ERR AE0D: No leaf switches found"),
        "{log:?}"
    );
    assert!(log.contains(&"ucast_mgr_route: dnup: cannot build lid matrices".to_string()));
}

/// Switch-to-switch hop counts by BFS over the subnet's switch links.
fn switch_hops(s: &Subnet, from: NodeId) -> std::collections::HashMap<NodeId, u32> {
    let mut d = std::collections::HashMap::from([(from, 0u32)]);
    let mut q = std::collections::VecDeque::from([from]);
    while let Some(u) = q.pop_front() {
        for p in 1..=s.node(u).num_ports {
            let Some((r, _)) = s.port(u, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            if s.node(r).is_switch() && !d.contains_key(&r) {
                d.insert(r, d[&u] + 1);
                q.push_back(r);
            }
        }
    }
    d
}

/// dnup with `connect_roots` (`-z`): the top switches of a fat tree reach each other only up
/// (toward the leaves) and down again, which dnup forbids, so without it those entries stay
/// unset. With it every switch reaches every switch, the entries down/up gave stay as they
/// were, and each new entry is a min-hop port (OpenSM relaxes the forbidden turn with a weight
/// larger than any legal path, which on a fat tree gives the same candidates).
#[test]
fn dnup_connect_roots_routes_what_down_up_cannot_by_min_hop() {
    let mut s = fat_tree(4);
    lids(&mut s);
    let switches: Vec<NodeId> = s.switches().collect();
    let route = |connect: bool| {
        let opts = EngineOptions {
            connect_roots: connect,
            ..EngineOptions::default()
        };
        let (l, log, e) = run("dnup", &s, &opts);
        assert_eq!(e, "dnup", "{log:?}");
        (l, log)
    };
    let ((plain, _), (with, log)) = (route(false), route(true));
    assert!(
        log.iter()
            .any(|l| l.contains("connect_roots: switches with no down/up route")),
        "{log:?}"
    );
    let mut new = 0;
    for &a in &switches {
        let hops = switch_hops(&s, a);
        for &b in &switches {
            let t = s.lid_of(b, PortNum(0));
            match (plain.get(a, t), with.get(a, t)) {
                (Some(x), y) => assert_eq!(Some(x), y, "a down/up entry changed"),
                (None, None) => panic!("{a:?} still has no route to {b:?}"),
                (None, Some(p)) => {
                    let (r, _) = s.port(a, p).unwrap().remote.unwrap();
                    let rh = switch_hops(&s, r);
                    assert_eq!(rh[&b] + 1, hops[&b], "not a min-hop port");
                    new += 1;
                }
            }
        }
    }
    assert!(new > 0, "down/up routed every switch pair on its own");
    // The CA routes are the same.
    let cas: Vec<NodeId> = s
        .node_ids()
        .filter(|&n| s.node(n).node_type == NodeType::CA)
        .collect();
    for &a in &cas {
        for &b in &cas {
            assert_eq!(walk(&s, &plain, a, b), walk(&s, &with, a, b));
        }
    }
}

/// `ids_guid_file` (OpenSM `-m`): updn orders switches of one rank by the file's ids, not
/// their GUIDs, which decides the direction of same-rank links. On a 5×5 torus (odd rings:
/// same-rank links) with one root, reversing the order moves routes, which stay free of credit
/// loops and reach every pair; a bad id ends the file with ERR AA05 / AA03, the lines before
/// it kept.
#[test]
fn ids_guid_file_orders_switches_of_one_rank() {
    let t = fabric_sim::topo::Topology::generate("torus:5,5").unwrap();
    let mut s = fabric_sim::topo::subnet::to_subnet(&t);
    lids(&mut s);
    let sws: Vec<NodeId> = s.switches().collect();
    let root = format!("{:#x}\n", s.node(sws[0]).guid.0);
    let route = |ids: Option<String>| {
        let opts = EngineOptions {
            root_guid_file: Some(OptionFile::from_text("roots", &root)),
            ids_guid_file: ids.map(|t| OptionFile::from_text("ids", &t)),
            ..EngineOptions::default()
        };
        let (l, log, e) = run("updn", &s, &opts);
        assert_eq!(e, "updn", "{log:?}");
        (l, log)
    };
    let reversed: String = sws
        .iter()
        .enumerate()
        .map(|(i, &sw)| format!("{:#x} {}\n", s.node(sw).guid.0, 1000 - i))
        .collect();
    let (plain, _) = route(None);
    let (rev, log) = route(Some(reversed.clone()));
    assert_ne!(plain, rev, "the ids moved no route");
    let r = verify(&s, &rev);
    assert!(r.is_ok() && r.credit_loop.is_none(), "{}", r.summary(&s));
    // The GUIDs as ids: the same tables.
    let same: String = sws
        .iter()
        .map(|&sw| format!("{0:#x} {0:#x}\n", s.node(sw).guid.0))
        .collect();
    assert_eq!(route(Some(same)).0, plain, "{log:?}");
    // A bad id on the last line: the ids before it still count.
    let (bad, log) = route(Some(format!(
        "{reversed}{:#x} twelve\n",
        s.node(sws[1]).guid.0
    )));
    assert_eq!(bad, rev);
    assert!(
        log.iter()
            .any(|l| l.contains("ERR AA03") && l.contains("ERR AA05")),
        "{log:?}"
    );
}

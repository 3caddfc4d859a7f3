//! torus-2QoS on generated tori and meshes: dimension-order routes, deadlock-free under the
//! VL-aware check with its own SL-to-VL tables, around a failed link and a failed switch,
//! keeping every path SL the pristine fabric had; OpenSM's refusals.
#![allow(clippy::unwrap_used)]

mod vl_util;

use fabric_sim::topo::gen::SWITCH_GUID_BASE;
use fabric_sim::topo::{PortRef, Topology};
use ibmad::{Lid, NodeType, PortNum};
use sm::routing::torus::TorusConfig;
use sm::routing::{route_chain_with, EngineOptions, OptionFile, RouteError, RouteOutcome};
use sm::Subnet;
use vl_util::{topo_subnet, vl_check};

fn conf(size: [usize; 3], mesh: bool) -> String {
    TorusConfig::for_grid(size, mesh, SWITCH_GUID_BASE)
}

fn opts(conf: &str) -> EngineOptions {
    EngineOptions {
        qos: true,
        torus_config: Some(OptionFile::from_text("/etc/opensm/torus-2QoS.conf", conf)),
        ..EngineOptions::default()
    }
}

fn route(s: &Subnet, conf: &str) -> Result<RouteOutcome, RouteError> {
    route_chain_with(&["torus-2QoS".to_string()], true, s, 0, &opts(conf))
}

/// Every (SLID, DLID) → SL between CA ports of `s`, by CA node GUID pair.
fn sls(s: &Subnet, out: &RouteOutcome) -> Vec<((u64, u64), u8)> {
    let cas: Vec<(u64, Lid)> = s
        .end_ports()
        .filter(|&(n, _)| s.node(n).node_type == NodeType::CA)
        .map(|(n, p)| (s.node(n).guid.0, s.port(n, p).unwrap().lid))
        .collect();
    let mut v = Vec::new();
    for &(ga, la) in &cas {
        for &(gb, lb) in &cas {
            v.push(((ga, gb), out.routes.sl(la, lb)));
        }
    }
    v.sort_unstable();
    v
}

/// torus-2QoS with configuration `c` on `t` (`spec` after the failure `what`): it routes,
/// deadlock-free, and every pair left keeps the SL it had in `sl0`.
fn assert_sls_kept(spec: &str, what: &str, t: &Topology, c: &str, sl0: &[((u64, u64), u8)]) {
    let s = topo_subnet(t, 0, 4);
    let out = route(&s, c).unwrap_or_else(|e| panic!("{spec}, {what}: {e:?}"));
    let rep = vl_check(&s, &out.routes, 5);
    assert!(rep.ok(), "{spec}, {what}: {rep:?}");
    let after = sls(&s, &out);
    let keep: Vec<_> = sl0
        .iter()
        .filter(|(k, _)| after.binary_search_by(|(x, _)| x.cmp(k)).is_ok())
        .cloned()
        .collect();
    assert_eq!(after, keep, "{spec}, {what}: SLs changed");
}

fn grid(spec: &str) -> (Topology, [usize; 3]) {
    let t = Topology::generate(spec).unwrap();
    let g = fabric_sim::topo::gen::Grid::of_spec(spec).unwrap().unwrap();
    (t, g.size.map(|d| d as usize))
}

#[test]
fn pristine_tori_and_meshes() {
    for spec in [
        "torus:5,5",
        "torus:4,4,4",
        "torus:6,5,3,cas=2",
        "mesh:4,5",
        "torus:2,3,4",
    ] {
        let (t, size) = grid(spec);
        let s = topo_subnet(&t, 0, 4);
        let out = route(&s, &conf(size, spec.starts_with("mesh")))
            .unwrap_or_else(|e| panic!("{spec}: {e:?}"));
        assert_eq!(out.engine, "torus-2QoS", "{spec}");
        let rep = vl_check(&s, &out.routes, 5);
        assert!(rep.ok(), "{spec}: {rep:?}");
        assert_eq!(
            rep.detours, 0,
            "{spec}: DOR is shortest on a pristine torus"
        );
        // QoS level 0 on inter-switch links: the loop VL bit only.
        assert!(rep.vls_used.iter().all(|&v| v <= 1), "{spec}: {rep:?}");
        assert!(out.routes.sl2vl.is_some());
    }
}

/// The VL arbitration the SM programs with torus-2QoS and `qos` on with OpenSM's default
/// tables: switch ports facing CAs get them folded onto VLs 0 and 1 (OpenSM
/// `torus_update_osm_vlarb`), inter-switch ports and CA ports get them as configured.
#[test]
fn vlarb_folds_on_ca_facing_switch_ports_only() {
    use ibmad::attr::VlArbEntryRepr;
    use sm::qos::program::desired_vlarb;
    use sm::qos::QosConfig;
    let (t, size) = grid("torus:3,3");
    let mut s = topo_subnet(&t, 0, 4);
    for p in &mut s.ports {
        if let Some(i) = p.info.as_mut() {
            i.vl_arb_low_cap = 8;
            i.vl_arb_high_cap = 8;
        }
    }
    let out = route(&s, &conf(size, false)).unwrap();
    let arb = out
        .routes
        .vlarb
        .as_ref()
        .expect("torus-2QoS sets VL arbitration folds");
    let cfg = QosConfig {
        enabled: true,
        ..QosConfig::default()
    };
    let e = |vl, weight| VlArbEntryRepr { vl, weight };
    let (mut folded, mut plain, mut cas) = (0, 0, 0);
    for sw in s.switches().collect::<Vec<_>>() {
        for p in 1..=s.node(sw).num_ports {
            let Some((rn, _)) = s.port(sw, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            let d = desired_vlarb(&cfg, 5, &s, Some(arb), sw, PortNum(p));
            let (low, high) = (d[0].unwrap(), d[2].unwrap());
            if s.node(rn).is_switch() {
                plain += 1;
                assert_eq!(
                    low[..8],
                    [0u8, 1, 2, 3, 4, 5, 6, 7].map(|v| e(v, if v == 0 { 0 } else { 4 }))
                );
                assert_eq!(high[0], e(0, 4));
            } else {
                folded += 1;
                assert_eq!(low[..3], [e(0, 0), e(1, 4), e(0, 0)], "sw {sw:?} port {p}");
                assert!(low[2..].iter().all(|x| *x == e(0, 0)));
                assert_eq!(high[..3], [e(0, 4), e(1, 0), e(0, 0)]);
                let ca = desired_vlarb(
                    &cfg,
                    5,
                    &s,
                    Some(arb),
                    rn,
                    s.port(sw, PortNum(p)).unwrap().remote.unwrap().1,
                );
                assert_eq!(
                    ca[0].unwrap()[..3],
                    [e(0, 0), e(1, 4), e(2, 4)],
                    "the CA's own port is not folded"
                );
                cas += 1;
            }
        }
    }
    assert!(
        folded == 9 && plain == 9 * 4 && cas == 9,
        "{folded} {plain} {cas}"
    );
}

#[test]
fn qos_level_one_uses_the_upper_vls() {
    let (t, size) = grid("torus:5,5");
    let s = topo_subnet(&t, 0, 4);
    let out = route(&s, &conf(size, false)).unwrap();
    let t2 = out.routes.sl2vl.as_ref().unwrap();
    // An inter-switch output (port 1 = +x) maps SL 8 | bits to VL 4 | loop bit.
    let sw = s.switches().next().unwrap();
    assert_eq!(t2.vl(sw, PortNum(2), PortNum(1), 8), Some(4));
    assert_eq!(t2.vl(sw, PortNum(2), PortNum(1), 9), Some(5));
    assert_eq!(t2.vl(sw, PortNum(2), PortNum(1), 1), Some(1));
    // A CA-facing output (port 5) carries the QoS level only.
    assert_eq!(t2.vl(sw, PortNum(1), PortNum(5), 9), Some(1));
    assert_eq!(t2.vl(sw, PortNum(1), PortNum(5), 1), Some(0));
    // A y→x turn (in on port 3 = +y, out on port 1 = +x) is illegal under DOR: VL bit 1.
    assert_eq!(t2.vl(sw, PortNum(3), PortNum(1), 0), Some(2));
}

fn cut(t: &mut Topology, name: &str, port: u8) {
    let n = t.node_by_name(name).unwrap();
    t.disconnect(PortRef {
        node: n,
        port: PortNum(port),
    })
    .unwrap();
}

/// The acceptance test: after a link failure (and after a switch failure) the
/// re-route keeps every path SL granted before, and stays deadlock-free.
#[test]
fn failures_keep_every_granted_sl() {
    for spec in ["torus:5,5", "torus:4,4,4", "torus:6,4,3"] {
        let (t, size) = grid(spec);
        let c = conf(size, false);
        let s0 = topo_subnet(&t, 0, 4);
        let before = route(&s0, &c).unwrap();
        let sl0 = sls(&s0, &before);
        let nd = size.iter().filter(|&&x| x > 1).count().max(2);
        let name = |c: [usize; 3]| {
            format!(
                "sw-{}",
                c[..nd]
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("-")
            )
        };
        // One failed link, then two in different rings.
        let mut t1 = t.clone();
        cut(&mut t1, &name([1, 1, 0]), 1);
        let mut t2 = t1.clone();
        cut(&mut t2, &name([2, 3, size[2] - 1]), 3);
        for tt in [&t1, &t2] {
            let s = topo_subnet(tt, 0, 4);
            let out = route(&s, &c).unwrap_or_else(|e| panic!("{spec}: {e:?}"));
            let rep = vl_check(&s, &out.routes, 5);
            assert!(rep.ok(), "{spec}: {rep:?}");
            assert!(rep.detours > 0, "{spec}: routes go around the failed link");
            assert_eq!(
                sls(&s, &out),
                sl0,
                "{spec}: SLs changed after a link failure"
            );
        }
        // A failed switch.
        let victim = name([2, 2, size[2] / 2]);
        let t3 = t.without_switch(&victim).unwrap();
        assert_sls_kept(spec, &format!("without {victim}"), &t3, &c, &sl0);
    }
}

/// The same where the failure is the first seed's: one of its links (its switches are then
/// placed by the configuration, as OpenSM does) or its common switch (the configuration's
/// second seed takes over, its dateline offsets giving every switch the same coordinates).
/// torus:5,7 without the y link is where placing a line across the missing seed link once put
/// a switch beside the line on it (seen when this was written).
#[test]
fn seed_failures_keep_every_granted_sl() {
    for spec in ["torus:5,5", "torus:5,7", "torus:4,4,4", "torus:6,4,3"] {
        let (t, size) = grid(spec);
        let c = conf(size, false);
        let s0 = topo_subnet(&t, 0, 4);
        let sl0 = sls(&s0, &route(&s0, &c).unwrap());
        let origin = if size[2] > 1 { "sw-0-0-0" } else { "sw-0-0" };
        let mut faults = Vec::new();
        for port in (0..3).filter(|&d| size[d] > 1).map(|d| 2 * d as u8 + 1) {
            let mut tt = t.clone();
            cut(&mut tt, origin, port);
            faults.push((format!("{origin} port {port} down"), tt));
        }
        faults.push((format!("{origin} gone"), t.without_switch(origin).unwrap()));
        for (what, tt) in faults {
            assert_sls_kept(spec, &what, &tt, &c, &sl0);
        }
    }
}

/// One random failure, a switch-to-switch link or a whole switch, on random 2D and 3D tori:
/// torus-2QoS routes around it, deadlock-free, and every granted SL stays (a soak of 1,500 such
/// cases on radices 3 to 7 found the two faults `seed_failures_keep_every_granted_sl` covers).
#[test]
fn random_single_failures_keep_every_granted_sl() {
    use rand::{Rng, SeedableRng};
    for seed in 0..40u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let dims = rng.gen_range(2..=3);
        let radices: Vec<String> = (0..dims)
            .map(|_| rng.gen_range(3..=5).to_string())
            .collect();
        let spec = format!("torus:{}", radices.join(","));
        let (t, size) = grid(&spec);
        let c = conf(size, false);
        let s0 = topo_subnet(&t, 0, 4);
        let sl0 = sls(&s0, &route(&s0, &c).unwrap());
        let switches: Vec<_> = t.nodes_of_type(NodeType::SWITCH).collect();
        let victim = switches[rng.gen_range(0..switches.len())];
        let name = t.node(victim).unwrap().name().to_string();
        let (what, tt) = if rng.gen_bool(0.6) {
            let port = rng.gen_range(1..=2 * dims as u8);
            let mut tt = t.clone();
            cut(&mut tt, &name, port);
            (format!("{name} port {port} down"), tt)
        } else {
            (format!("{name} gone"), t.without_switch(&name).unwrap())
        };
        assert_sls_kept(&spec, &what, &tt, &c, &sl0);
    }
}

#[test]
fn fabrics_torus_2qos_refuses() {
    let (t, size) = grid("torus:5,5");
    let c = conf(size, false);
    // Two failed links on one ring break it into two pieces.
    let mut tt = t.clone();
    cut(&mut tt, "sw-1-1", 1);
    cut(&mut tt, "sw-3-1", 1);
    let s = topo_subnet(&tt, 0, 4);
    let e = format!("{:?}", route(&s, &c).unwrap_err());
    assert!(e.contains("ERR 4E33: disjoint failures in x ring"), "{e}");
    // A missing switch with only 2 data VLs.
    let s = topo_subnet(&t.without_switch("sw-2-2").unwrap(), 0, 2);
    let e = format!("{:?}", route(&s, &c).unwrap_err());
    assert!(e.contains("needs 4 data VLs"), "{e}");
    // One data VL.
    let s = topo_subnet(&t, 0, 1);
    let e = format!("{:?}", route(&s, &c).unwrap_err());
    assert!(e.contains("ERR 4E48"), "{e}");
    // QoS off, no configuration, a bad configuration.
    let s = topo_subnet(&t, 0, 4);
    let mut o = opts(&c);
    o.qos = false;
    let e = format!(
        "{:?}",
        route_chain_with(&["torus-2QoS".into()], true, &s, 0, &o).unwrap_err()
    );
    assert!(e.contains("ERR 4E44"), "{e}");
    let o = EngineOptions {
        qos: true,
        ..EngineOptions::default()
    };
    let e = format!(
        "{:?}",
        route_chain_with(&["torus-2QoS".into()], true, &s, 0, &o).unwrap_err()
    );
    assert!(e.contains("ERR 4E11"), "{e}");
    let e = format!("{:?}", route(&s, "torus 5 5 1\nxp_link 0x1\n").unwrap_err());
    assert!(
        e.contains("torus-2QoS.conf:2: xp_link: expected two switch GUIDs"),
        "{e}"
    );
    let e = format!("{:?}", route(&s, "torus 5 x 1\n").unwrap_err());
    assert!(e.contains(":1: torus: bad radix"), "{e}");
    // Wrong radix: switches that do not fit.
    let e = format!("{:?}", route(&s, &conf([5, 6, 1], false)).unwrap_err());
    assert!(
        e.contains("could not place") || e.contains("two switches"),
        "{e}"
    );
    // Missing switches not in one Z column.
    let (t4, size4) = grid("torus:4,4,4");
    let t4 = t4
        .without_switch("sw-1-1-1")
        .unwrap()
        .without_switch("sw-2-2-2")
        .unwrap();
    let s = topo_subnet(&t4, 0, 4);
    let e = format!("{:?}", route(&s, &conf(size4, false)).unwrap_err());
    assert!(e.contains("ERR 4E38"), "{e}");
}

#[test]
fn conf_parsing() {
    let c = TorusConfig::parse(
        "# comment\n\ntorus 4T 5m 1 extra tokens\nxp_link 0x10 0x11\nxm_link 0x10 0x13\ny_dateline -2\nnext_seed\nyp_link 0x20 0x25 # c\nport_order 7 10 7 8\nportgroup_max_ports 17\n",
    )
    .unwrap();
    assert_eq!(c.size, [4, 5, 1]);
    assert_eq!(c.mesh, [false, true, false]);
    assert_eq!(c.seeds.len(), 2);
    assert_eq!(c.seeds[0].dateline, [0, -2, 0]);
    assert_eq!(c.port_order, vec![7, 10, 8]);
    assert_eq!(c.portgroup_max_ports, 17);
    let e = TorusConfig::parse("torus 4 4 4\nbogus 1\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(TorusConfig::parse("xp_link 1 2\n").is_err(), "no size");
    assert!(TorusConfig::parse("torus 5 5 1\nx_dateline 5\n").is_err());
}

#[test]
fn dateline_offsets_move_the_wrap_sl() {
    // Moving the dateline by 2 moves which paths wrap: the SL of some pair changes.
    let (t, size) = grid("torus:5,5");
    let s = topo_subnet(&t, 0, 4);
    let a = route(&s, &conf(size, false)).unwrap();
    // In the first seed (the second, after `next_seed`, has its own offsets).
    let moved = conf(size, false).replacen("next_seed\n", "x_dateline 2\nnext_seed\n", 1);
    assert!(moved.contains("x_dateline 2\nnext_seed"));
    let b = route(&s, &moved).unwrap();
    assert_ne!(sls(&s, &a), sls(&s, &b));
    assert!(vl_check(&s, &b.routes, 5).ok());
}

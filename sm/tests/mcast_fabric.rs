//! Multicast end to end on the simulated fabric: the SM brings the subnet up, gets the SA's
//! groups ([`sm::Command::McastGroups`]), builds a spanning tree per MLID and programs the MFT
//! blocks into the switches' agents; the simulator then switches multicast data packets by
//! those MFTs ([`fabric_sim::sim::Fabric::send_multicast`]): every receiving member gets
//! exactly one copy, send-only members and non-members none. A second pass with the same
//! groups sends no MFT SMP, a change sends only the blocks it touches.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, PortRef, Topology};
use ibmad::{Guid, Lid, NodeType, PortNum, Time};
use sm::mcast::{McastGroup, McastMember};
use sm::{Command, Sm, SmConfig};

fn drive(f: &mut Fabric, h: SmHandle, sm: &mut Sm, until: Time) {
    sm::drive(sm, &mut f.sm_port(h), until, |_| {}).unwrap();
}

struct Bed {
    f: Fabric,
    h: SmHandle,
    sm: Sm,
    topo: Topology,
    cas: Vec<NodeId>,
}

impl Bed {
    fn new(spec: &str) -> Bed {
        Bed::with(spec, SmConfig::default())
    }

    /// The SM with `cfg` (its port and sweeping set here) on the generated fabric `spec`.
    fn with(spec: &str, cfg: SmConfig) -> Bed {
        Bed::on(Topology::generate(spec).unwrap(), cfg)
    }

    /// The SM with `cfg` on `topo`.
    fn on(topo: Topology, cfg: SmConfig) -> Bed {
        let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
        let cas: Vec<NodeId> = topo.nodes_of_type(NodeType::CA).collect();
        let h = f.attach_sm(cas[0], PortNum(1)).unwrap().handle;
        let cfg = SmConfig {
            port: PortNum(1),
            sweep_interval: std::time::Duration::ZERO,
            ..cfg
        };
        let mut sm = Sm::new(cfg).unwrap();
        drive(&mut f, h, &mut sm, Time::from_millis(60_000));
        assert!(sm.is_up(), "the subnet came up");
        Bed {
            f,
            h,
            sm,
            topo,
            cas,
        }
    }

    fn guid(&self, ca: NodeId) -> Guid {
        self.topo
            .port(PortRef {
                node: ca,
                port: PortNum(1),
            })
            .unwrap()
            .guid()
    }

    fn groups(&mut self, groups: Vec<McastGroup>) {
        let now = self.f.now();
        self.sm.handle_command(now, Command::McastGroups(groups));
        let until = now + std::time::Duration::from_secs(30);
        drive(&mut self.f, self.h, &mut self.sm, until);
    }

    /// Sends from `from` and returns how many copies each CA received.
    fn copies(&self, from: NodeId, mlid: Lid) -> Vec<usize> {
        let d = self.f.send_multicast(from, PortNum(1), mlid).unwrap();
        assert!(!d.storm, "the MFTs loop");
        let mut n = vec![0; self.cas.len()];
        for r in d.received {
            let i = self.cas.iter().position(|&c| c == r.node).unwrap();
            n[i] += 1;
        }
        n
    }
}

fn member(g: Guid, receives: bool) -> McastMember {
    McastMember {
        port_guid: g,
        receives,
    }
}

#[test]
fn every_receiving_member_gets_one_copy_and_nobody_else_any() {
    let mut b = Bed::new("fat-tree:3,4");
    let n = b.cas.len();
    assert!(n >= 16, "{n} CAs");
    // Group A: every third CA full, CA 1 send-only. Group B: CAs 2 and n-1.
    let full: Vec<usize> = (0..n).step_by(3).collect();
    let mlid_a = Lid(0xC000);
    let mlid_b = Lid(0xC021); // block 1
    let mut a = McastGroup {
        mlid: mlid_a,
        members: full
            .iter()
            .map(|&i| member(b.guid(b.cas[i]), true))
            .collect(),
    };
    a.members.push(member(b.guid(b.cas[1]), false));
    let grp_b = McastGroup {
        mlid: mlid_b,
        members: vec![
            member(b.guid(b.cas[2]), true),
            member(b.guid(b.cas[n - 1]), true),
        ],
    };
    b.groups(vec![a.clone(), grp_b.clone()]);
    let first = b.sm.mft_programmer().stats();
    assert!(first.last_sets > 0, "{first:?}");

    for sender in [full[0], full[full.len() - 1], 1] {
        let got = b.copies(b.cas[sender], mlid_a);
        for (i, &c) in got.iter().enumerate() {
            let want = usize::from(full.contains(&i) && i != sender);
            assert_eq!(c, want, "group A from CA {sender}: CA {i} got {c} copies");
        }
    }
    let got = b.copies(b.cas[2], mlid_b);
    for (i, &c) in got.iter().enumerate() {
        assert_eq!(c, usize::from(i == n - 1), "group B: CA {i}");
    }
    // An MLID no switch forwards reaches nobody.
    let d =
        b.f.send_multicast(b.cas[0], PortNum(1), Lid(0xC100))
            .unwrap();
    assert!(d.received.is_empty() && d.no_entry >= 1);

    // The same groups again: nothing to send.
    b.groups(vec![a.clone(), grp_b.clone()]);
    let again = b.sm.mft_programmer().stats();
    assert_eq!(again.last_sets, 0, "{again:?}");

    // CA 4 joins group A: only the (block 0) entries of switches on the changed branch.
    a.members.push(member(b.guid(b.cas[4]), true));
    b.groups(vec![a.clone(), grp_b.clone()]);
    let change = b.sm.mft_programmer().stats();
    assert!(
        change.last_sets >= 1 && change.last_sets < first.last_sets,
        "{change:?} vs {first:?}"
    );
    let got = b.copies(b.cas[0], mlid_a);
    assert_eq!(got[4], 1);

    // Group B deleted: its entries are cleared, and the packet reaches nobody.
    b.groups(vec![a.clone()]);
    let got = b.copies(b.cas[2], mlid_b);
    assert!(got.iter().all(|&c| c == 0), "{got:?}");

    // A heavy sweep re-routes and re-derives the trees: the switches already hold them.
    let now = b.f.now();
    b.sm.handle_command(now, Command::HeavySweep);
    drive(
        &mut b.f,
        b.h,
        &mut b.sm,
        now + std::time::Duration::from_secs(60),
    );
    assert!(b.sm.is_up());
    let heavy = b.sm.mft_programmer().stats();
    assert_eq!(heavy.last_sets, 0, "{heavy:?}");
    let got = b.copies(b.cas[3], mlid_a);
    assert_eq!(got[0], 1);
}

/// torus-2QoS gives a master spanning tree (OpenSM `torus_master_stree`), and the running SM
/// routes groups on it: the MFTs it programs are the master tree's subtrees, not the group's
/// own min-hop tree (which crosses datelines: `torus_mcast` shows the credit loops that
/// makes), and every receiving member still gets exactly one copy.
#[test]
fn groups_follow_the_torus_2qos_master_tree() {
    let spec = "torus:6,6";
    let grid = fabric_sim::topo::gen::Grid::of_spec(spec).unwrap().unwrap();
    let conf = fabric_sim::topo::subnet::torus_conf(&grid);
    let mut cfg = SmConfig {
        routing_engine: vec!["torus-2QoS".into(), "no_fallback".into()],
        ..SmConfig::default()
    };
    cfg.qos.enabled = true;
    cfg.engine_options.qos = true;
    cfg.engine_options.torus_config =
        Some(sm::routing::OptionFile::from_text("torus-2QoS.conf", &conf));
    let mut b = Bed::with(spec, cfg);
    let all = McastGroup {
        mlid: Lid(0xC000),
        members: b.cas.iter().map(|&c| member(b.guid(c), true)).collect(),
    };
    let pair = McastGroup {
        mlid: Lid(0xC001),
        members: vec![
            member(b.guid(b.cas[0]), true),
            member(b.guid(b.cas[b.cas.len() - 1]), true),
        ],
    };
    let groups = vec![all, pair];
    b.groups(groups.clone());
    let tree =
        b.sm.routes()
            .and_then(|r| r.mcast_tree.clone())
            .expect("torus-2QoS routed and gave a master tree");
    let s = b.sm.subnet();
    let want = sm::mcast::compute_on(s, &groups, Some(&tree));
    let own = sm::mcast::compute(s, &groups);
    assert_eq!((want.routed, want.off_master_tree), (2, 0));
    let got = b.sm.mfts().expect("a multicast pass ran");
    assert_eq!(**got, want, "the SM's MFTs are not the master tree's");
    assert_ne!(**got, own, "the master tree is the groups' own trees here");
    let n = b.cas.len();
    for sender in [0, n / 2, n - 1] {
        let copies = b.copies(b.cas[sender], Lid(0xC000));
        for (i, &c) in copies.iter().enumerate() {
            assert_eq!(c, usize::from(i != sender), "from CA {sender}: CA {i}");
        }
    }
    let copies = b.copies(b.cas[0], Lid(0xC001));
    for (i, &c) in copies.iter().enumerate() {
        assert_eq!(c, usize::from(i == n - 1), "pair group: CA {i}");
    }
}

/// sssp, dfsssp and nue hand multicast their unicast link loads, and the running SM grows
/// each group's tree over them by Dijkstra (OpenSM `dfsssp_do_mcast_routing`,
/// `nue_do_mcast_routing`): the MFTs it programs are those trees, not the min-hop ones, and
/// every receiving member gets exactly one copy.
#[test]
fn groups_grow_over_the_engines_link_loads() {
    for engine in ["sssp", "dfsssp", "nue"] {
        let mut cfg = SmConfig {
            routing_engine: vec![engine.into(), "no_fallback".into()],
            ..SmConfig::default()
        };
        cfg.qos.enabled = true;
        cfg.engine_options.qos = true;
        let mut b = Bed::with("random:16,32,14,3,ports=8", cfg);
        let n = b.cas.len();
        let groups: Vec<McastGroup> = [1usize, 3, 5]
            .iter()
            .enumerate()
            .map(|(k, &step)| McastGroup {
                mlid: Lid(0xC000 + k as u16),
                members: (k..n)
                    .step_by(step)
                    .map(|i| member(b.guid(b.cas[i]), true))
                    .collect(),
            })
            .collect();
        b.groups(groups.clone());
        let routes = b.sm.routes().expect("routed");
        assert!(routes.mcast_loads.is_some(), "{engine} gave no loads");
        let s = b.sm.subnet();
        let want = sm::mcast::compute_for(s, &groups, Some(routes));
        let own = sm::mcast::compute(s, &groups);
        assert_eq!(want.routed, 3);
        let got = b.sm.mfts().expect("a multicast pass ran");
        assert_eq!(
            **got, want,
            "{engine}: the SM's MFTs are not the loads' trees"
        );
        assert_ne!(
            **got, own,
            "{engine}: the loads' trees are the min-hop ones here"
        );
        for (k, g) in groups.iter().enumerate() {
            let members: Vec<usize> = (k..n).step_by([1, 3, 5][k]).collect();
            for &sender in members.iter().take(3) {
                let copies = b.copies(b.cas[sender], g.mlid);
                for (i, &c) in copies.iter().enumerate() {
                    let want = usize::from(i != sender && members.contains(&i));
                    assert_eq!(c, want, "{engine} group {k} from CA {sender}: CA {i}");
                }
            }
        }
    }
}

/// Two switches joined by two cables that cross (port 1 to port 2 and port 2 to port 1), as
/// cabling on real fabrics often does, with two CAs each: the group's tree must use both
/// ends of one cable, or the packets circle between the switches for ever.
#[test]
fn crossed_parallel_cables_carry_one_copy() {
    let net = r#"
Switch 8 "sw-a"
[1] "sw-b"[2]
[2] "sw-b"[1]
[3] "ca-a1"[1]
[4] "ca-a2"[1]

Switch 8 "sw-b"
[1] "sw-a"[2]
[2] "sw-a"[1]
[3] "ca-b1"[1]
[4] "ca-b2"[1]

Hca 1 "ca-a1"
[1] "sw-a"[3]

Hca 1 "ca-a2"
[1] "sw-a"[4]

Hca 1 "ca-b1"
[1] "sw-b"[3]

Hca 1 "ca-b2"
[1] "sw-b"[4]
"#;
    let mut b = Bed::on(Topology::parse_net(net).unwrap(), SmConfig::default());
    let n = b.cas.len();
    assert_eq!(n, 4);
    let grp = McastGroup {
        mlid: Lid(0xC000),
        members: b.cas.iter().map(|&c| member(b.guid(c), true)).collect(),
    };
    b.groups(vec![grp]);
    for sender in 0..n {
        let copies = b.copies(b.cas[sender], Lid(0xC000));
        for (i, &c) in copies.iter().enumerate() {
            assert_eq!(c, usize::from(i != sender), "from CA {sender}: CA {i}");
        }
    }
}

/// `disable_multicast` (OpenSM `-d 3`): the SM runs no multicast pass, so a group the SA
/// hands it gets no MFT entry anywhere and its packets reach nobody; with the option off the
/// same group is programmed (the first test).
#[test]
fn disable_multicast_programs_no_mft() {
    let mut b = Bed::with(
        "fat-tree:2,4",
        SmConfig {
            disable_multicast: true,
            ..SmConfig::default()
        },
    );
    let mlid = Lid(0xC000);
    let g = McastGroup {
        mlid,
        members: b.cas.iter().map(|&c| member(b.guid(c), true)).collect(),
    };
    b.groups(vec![g]);
    let st = b.sm.mft_programmer().stats();
    assert_eq!(st.last_sets, 0, "{st:?}");
    assert!(b.sm.mfts().is_none(), "a multicast pass ran");
    let d = b.f.send_multicast(b.cas[0], PortNum(1), mlid).unwrap();
    assert!(d.received.is_empty() && d.no_entry >= 1, "{d:?}");
}

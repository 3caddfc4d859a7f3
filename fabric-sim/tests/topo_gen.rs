//! Generators: counts, symmetry, connectivity, determinism, bad specs; writer round trips.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::path::Path;

use fabric_sim::topo::gen::{has_top_tier, root_guids, Grid, CA_GUID_BASE, SWITCH_GUID_BASE};
use fabric_sim::topo::{LinkSpeed, LinkWidth, LoadError, NodeId, PortRef, SpecError, Topology};
use ibmad::{Guid, NodeType, PortNum};

fn gen(spec: &str) -> Topology {
    Topology::generate(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// Every node reachable from node 0 over links.
fn connected(t: &Topology) -> bool {
    let n = t.num_nodes();
    if n == 0 {
        return true;
    }
    let mut seen = vec![false; n];
    let mut q = VecDeque::from([NodeId(0)]);
    seen[0] = true;
    let mut count = 1;
    while let Some(id) = q.pop_front() {
        for (_, p) in t.ports(id) {
            if let Some(peer) = p.peer() {
                if !seen[peer.node.index()] {
                    seen[peer.node.index()] = true;
                    count += 1;
                    q.push_back(peer.node);
                }
            }
        }
    }
    count == n
}

/// Links are symmetric and every port's peer points back.
fn symmetric(t: &Topology) {
    t.validate().unwrap();
    for l in t.links() {
        assert_eq!(t.peer(l.a), Some(l.b));
        assert_eq!(t.peer(l.b), Some(l.a));
        assert_eq!(t.port(l.a).unwrap().attrs(), t.port(l.b).unwrap().attrs());
    }
}

fn counts(t: &Topology) -> (usize, usize) {
    (t.num_switches(), t.num_cas())
}

#[test]
fn fat_tree_2_level() {
    let t = gen("fat-tree:2,36");
    assert_eq!(counts(&t), (54, 648));
    assert_eq!(t.num_links(), 36 * 18 + 648);
    symmetric(&t);
    assert!(connected(&t));
    // Every switch port is used.
    for id in t.nodes_of_type(NodeType::SWITCH) {
        assert!(t.ports(id).skip(1).all(|(_, p)| p.peer().is_some()));
    }
    // Partial, with parallel links: 9 spines, 2 links from each leaf to each.
    let t = gen("fat-tree:2,36,leaves=10,hosts=4,par=2");
    assert_eq!(counts(&t), (19, 40));
    symmetric(&t);
    assert!(connected(&t));
    let leaf = t.node_by_name("leaf-0").unwrap();
    let spine0 = t.node_by_name("spine-0").unwrap();
    let to_spine0 = t
        .ports(leaf)
        .filter(|(_, p)| p.peer().map(|r| r.node) == Some(spine0))
        .count();
    assert_eq!(to_spine0, 2);
}

#[test]
fn fat_tree_3_level_k36() {
    let t = gen("fat-tree:3,36");
    assert_eq!(counts(&t), (1620, 11664));
    // Edge-agg, agg-core and host links.
    assert_eq!(t.num_links(), 36 * 18 * 18 * 2 + 11664);
    symmetric(&t);
    assert!(connected(&t));
    let t = gen("fat-tree:3,8,pods=4,hosts=2");
    assert_eq!(counts(&t), (16 + 4 * 8, 4 * 4 * 2));
    symmetric(&t);
    assert!(connected(&t));
    let t = gen("fat-tree:3,8,par=2");
    assert_eq!(counts(&t), (8 + 4 * 8, 4 * 4 * 4));
    symmetric(&t);
    assert!(connected(&t));
}

#[test]
fn kary_ntree() {
    let t = gen("kary-ntree:4,3");
    assert_eq!(counts(&t), (3 * 16, 64));
    symmetric(&t);
    assert!(connected(&t));
    let t = gen("kary-ntree:2,1");
    assert_eq!(counts(&t), (1, 2));
    let t = gen("kary-ntree:18,3");
    assert_eq!(counts(&t), (972, 5832));
    symmetric(&t);
    assert!(connected(&t));
}

#[test]
fn torus_and_mesh() {
    let t = gen("torus:8,8,8");
    assert_eq!(counts(&t), (512, 512));
    assert_eq!(t.num_links(), 512 * 3 + 512);
    symmetric(&t);
    assert!(connected(&t));
    let t = gen("mesh:4,3,cas=2");
    assert_eq!(counts(&t), (12, 24));
    assert_eq!(t.num_links(), (3 * 3 + 4 * 2) + 24);
    symmetric(&t);
    assert!(connected(&t));
    // Size-2 torus dimensions get two parallel links; size 1 gets none.
    let t = gen("torus:2,1");
    assert_eq!(t.num_links(), 2 + 2);
    // Port layout: +x on port 1 reaches the -x port (2) of the next switch.
    let t = gen("torus:4,4");
    let a = t.node_by_name("sw-0-0").unwrap();
    let b = t.node_by_name("sw-1-0").unwrap();
    assert_eq!(
        t.peer(PortRef {
            node: a,
            port: PortNum(1)
        }),
        Some(PortRef {
            node: b,
            port: PortNum(2)
        })
    );
    let wrap = t.node_by_name("sw-3-0").unwrap();
    assert_eq!(
        t.peer(PortRef {
            node: wrap,
            port: PortNum(1)
        })
        .unwrap()
        .node,
        a
    );
}

#[test]
fn grid_of_spec() {
    let g = |spec: &str| Grid::of_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    assert_eq!(
        g("torus:8,8,8"),
        Some(Grid {
            size: [8, 8, 8],
            wrap: true
        })
    );
    assert_eq!(
        g("mesh:4,3,cas=2,rate=4xEDR"),
        Some(Grid {
            size: [4, 3, 1],
            wrap: false
        })
    );
    assert_eq!(
        g("torus:5"),
        Some(Grid {
            size: [5, 1, 1],
            wrap: true
        })
    );
    assert_eq!(g("fat-tree:2,8"), None);
    assert_eq!(g("hypercube:3"), None);
    // The generator's own checks.
    for bad in [
        "torus:0,4",
        "mesh:2,2,2,2",
        "torus:4,4,ports=3",
        "torus:",
        "nosuch:1",
    ] {
        let e = Grid::of_spec(bad).unwrap_err();
        assert!(matches!(e, SpecError::Bad { .. }), "{bad}: {e}");
        assert!(Topology::generate(bad).is_err(), "{bad}");
    }
}

#[test]
fn root_guids_are_the_top_tier() {
    let roots = |spec: &str| {
        let t = gen(spec);
        let r = root_guids(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let r = r.unwrap_or_else(|| panic!("{spec}: no roots"));
        r.iter()
            .map(|g| {
                let id = t.node_by_guid(*g).unwrap();
                t.node(id).unwrap().desc().to_string()
            })
            .collect::<Vec<String>>()
    };
    let all = |names: &[String], n: usize, pat: &str| {
        assert_eq!(names.len(), n, "{names:?}");
        assert!(names.iter().all(|x| x.contains(pat)), "{names:?}");
    };
    all(&roots("fat-tree:2,8"), 4, "spine-");
    all(&roots("fat-tree:2,8,par=2"), 2, "spine-");
    all(&roots("fat-tree:3,8"), 16, "core-");
    all(&roots("kary-ntree:3,3"), 9, "s0-");
    // Every group's spines: the Dragonfly+ islands' roots.
    all(&roots("dragonfly:3,4,2,2"), 6, "-spine-");
    for spec in [
        "fat-tree:2,8",
        "fat-tree:3,8",
        "kary-ntree:3,3",
        "dragonfly:3,4,2,2",
    ] {
        assert!(has_top_tier(spec), "{spec}");
    }
    for spec in ["torus:4,4", "mesh:3,3", "hypercube:3", "random:8,4,2,1"] {
        assert_eq!(root_guids(spec).unwrap(), None, "{spec}");
        assert!(!has_top_tier(spec), "{spec}");
    }
    for bad in ["fat-tree:4,8", "fat-tree:3,7", "dragonfly:1", "nosuch:1"] {
        assert!(root_guids(bad).is_err(), "{bad}");
    }
}

#[test]
fn hypercube() {
    let t = gen("hypercube:4,cas=2");
    assert_eq!(counts(&t), (16, 32));
    assert_eq!(t.num_links(), 16 * 4 / 2 + 32);
    symmetric(&t);
    assert!(connected(&t));
    // Port d+1 is dimension d on both ends: sw-0101 port 2 reaches sw-0111 port 2.
    let a = t.node_by_name("sw-0101").unwrap();
    let b = t.node_by_name("sw-0111").unwrap();
    assert_eq!(
        t.peer(PortRef {
            node: a,
            port: PortNum(2)
        }),
        Some(PortRef {
            node: b,
            port: PortNum(2)
        })
    );
    assert!(Topology::generate("hypercube:0").is_err());
    assert!(Topology::generate("hypercube:17").is_err());
}

#[test]
fn dragonfly_plus() {
    let t = gen("dragonfly:5,4,3,2");
    assert_eq!(counts(&t), (5 * 7, 5 * 4 * 2));
    let global = t
        .links()
        .filter(|l| {
            let na = t.node(l.a.node).unwrap().name().to_string();
            let nb = t.node(l.b.node).unwrap().name().to_string();
            na.contains("spine") && nb.contains("spine")
        })
        .count();
    assert_eq!(global, 5 * 4 / 2);
    symmetric(&t);
    assert!(connected(&t));
    let t = gen("dragonfly:4,2,2,1,links=3");
    symmetric(&t);
    assert!(connected(&t));
}

#[test]
fn random_graphs_are_connected_with_dual_port_cas() {
    for seed in 0..20 {
        let spec = format!("random:30,40,25,{seed}");
        let t = gen(&spec);
        assert_eq!(counts(&t), (30, 40));
        assert_eq!(t.num_links(), 29 + 25 + 80);
        symmetric(&t);
        assert!(connected(&t), "{spec}");
        for id in t.nodes_of_type(NodeType::CA) {
            let peers: Vec<NodeId> = t.ports(id).map(|(_, p)| p.peer().unwrap().node).collect();
            assert_eq!(peers.len(), 2);
            assert_ne!(peers[0], peers[1], "{spec}: CA on two different switches");
        }
    }
    assert!(
        Topology::generate("random:3,100,0,1").is_err(),
        "not enough ports"
    );
    let t = gen("random:1,2,0,7,ports=4");
    assert_eq!(counts(&t), (1, 2));
    let t = gen("random:3,1,0,18446744073709551615");
    assert_eq!(counts(&t), (3, 1));
}

#[test]
fn generation_is_deterministic() {
    for spec in [
        "fat-tree:2,8",
        "fat-tree:3,6",
        "kary-ntree:3,3",
        "torus:3,3,3",
        "dragonfly:3,2,2,2",
        "random:20,30,10,42",
    ] {
        let a = gen(spec);
        let b = gen(spec);
        assert_eq!(a, b, "{spec}");
        assert_eq!(a.to_net(), b.to_net(), "{spec}");
    }
    assert_ne!(gen("random:20,30,10,1"), gen("random:20,30,10,2"));
}

#[test]
fn guid_scheme() {
    let t = gen("fat-tree:2,4");
    // Spines first, then leaves, then CAs.
    let s0 = t.node(t.node_by_name("spine-0").unwrap()).unwrap();
    assert_eq!(s0.guid(), Guid(SWITCH_GUID_BASE));
    let l0 = t.node(t.node_by_name("leaf-0").unwrap()).unwrap();
    assert_eq!(l0.guid(), Guid(SWITCH_GUID_BASE + 2));
    let h1 = t.node_by_name("h-0-1").unwrap();
    assert_eq!(t.node(h1).unwrap().guid(), Guid(CA_GUID_BASE + 2));
    assert_eq!(
        t.port(PortRef {
            node: h1,
            port: PortNum(1)
        })
        .unwrap()
        .guid(),
        Guid(CA_GUID_BASE + 3)
    );
    // Dual-port CAs take three GUIDs each.
    let t = gen("random:4,3,0,9");
    let c2 = t.node(t.node_by_name("ca-2").unwrap()).unwrap();
    assert_eq!(c2.guid(), Guid(CA_GUID_BASE + 6));
}

#[test]
fn rate_and_mtu_options() {
    let t = gen("fat-tree:2,4,rate=4xHDR,mtu=5,vl=3");
    for l in t.links() {
        let a = t.port(l.a).unwrap().attrs();
        assert_eq!((a.width, a.speed), (LinkWidth::X4, LinkSpeed::Hdr));
        assert_eq!(a.mtu.bytes(), 4096);
        assert_eq!(a.vl_cap.data_vls(), 4);
    }
}

#[test]
fn bad_specs_are_explained() {
    let cases = [
        ("fat-tree:4,36", "levels must be 2 or 3"),
        ("fat-tree:2,35", "must be even"),
        ("fat-tree:2", "usage: fat-tree"),
        ("fat-tree:2,36,par=5", "must divide"),
        ("fat-tree:2,36,hosts=19", "above 18"),
        ("fat-tree:3,36,leaves=3", "use pods="),
        ("fat-tree:2,x", "not a non-negative integer"),
        ("fat-tree:2,36,colour=red", "unknown option"),
        ("torus:0,4", "at least 1"),
        ("torus:1000,1000,1000", "too many"),
        ("kary-ntree:1,3", "K must be"),
        ("dragonfly:2,2,2", "usage: dragonfly"),
        ("random:3,2,1", "usage: random"),
        ("hypertorus:4", "unknown generator"),
        ("fat-tree", "expected name:args"),
        ("fat-tree:2,4,rate=4xXDR", "is not like 4xQDR"),
        ("mesh:2,2,hosts=3", "unknown option"),
        ("dragonfly:18446744073709551615,2,2,2", "too large"),
        ("kary-ntree:9223372036854775808,2", "too large"),
        ("random:100000,0,0,1,ports=254", "port slots"),
        // issue 11: 1 M CAs is refused at once, naming the limit.
        ("dragonfly:100,100,100,100", "generator limit of 250000"),
        ("random:18446744073709551615,1,1,1", "too large"),
    ];
    for (spec, needle) in cases {
        let e = Topology::generate(spec).unwrap_err();
        assert!(matches!(e, SpecError::Bad { .. }), "{spec}: {e:?}");
        let msg = e.to_string();
        assert!(msg.contains(needle), "{spec}: {msg:?} lacks {needle:?}");
        assert!(msg.contains(spec), "{msg}");
    }
}

#[test]
fn from_spec_or_file_decides() {
    let t = Topology::from_spec_or_file("torus:2,2").unwrap();
    assert_eq!(t.num_switches(), 4);
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ibsim-net-examples/net");
    let t = Topology::from_spec_or_file(p.to_str().unwrap()).unwrap();
    assert_eq!(t.num_switches(), 2);
    assert!(matches!(
        Topology::from_spec_or_file("/no/such/file.net"),
        Err(LoadError::NotFound(_))
    ));
    assert!(matches!(
        Topology::from_spec_or_file("fat-tree:9,9"),
        Err(LoadError::Spec(_))
    ));
}

#[test]
fn net_round_trip_is_exact() {
    for spec in [
        "fat-tree:2,8,rate=4xEDR",
        "fat-tree:3,6,par=3,pods=2",
        "kary-ntree:3,2",
        "torus:3,2,2,cas=2,mtu=3",
        "mesh:3,1",
        "dragonfly:3,2,2,1,links=2,rate=12xNDR,vl=5",
        "random:10,12,6,3",
        "random:10,12,6,4,rate=4xFDR10",
    ] {
        let t = gen(spec);
        let text = t.to_net();
        let back = Topology::parse_net(&text).unwrap_or_else(|e| panic!("{spec}: {e}\n{text}"));
        assert!(back == t, "{spec}: {:?}", t.diff(&back));
        assert_eq!(back.to_net(), text, "{spec}");
    }
    // Files, too: the attrs example with explicit GUIDs, vendor ids, a router, 1x links.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    for f in [
        "net.attrs",
        "ibsim-net-examples/net.2sw2path4hca2port",
        "ibnetdiscover/attrs.sm.txt",
    ] {
        let t = Topology::from_file(dir.join(f)).unwrap();
        let back = Topology::parse_net(&t.to_net()).unwrap();
        assert!(back == t, "{f}: {:?}\n{}", t.diff(&back), t.to_net());
    }
}

#[test]
fn ibnetdiscover_round_trip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut tops: Vec<(String, Topology)> = [
        "fat-tree:2,8,rate=4xEDR",
        "kary-ntree:3,2",
        "random:10,12,6,3,rate=2xNDR",
        "dragonfly:3,2,2,1,rate=4xFDR10",
    ]
    .iter()
    .map(|s| (s.to_string(), gen(s)))
    .collect();
    for f in [
        "net.attrs",
        "ibnetdiscover/attrs.sm.txt",
        "ibnetdiscover/net.sm.txt",
    ] {
        tops.push((f.to_string(), Topology::from_file(dir.join(f)).unwrap()));
    }
    for (what, t) in tops {
        for full in [false, true] {
            let text = t.to_ibnetdiscover(full);
            let back = Topology::parse_ibnetdiscover(&text)
                .unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
            assert_eq!(t.diff(&back), None, "{what}\n{text}");
            // Second generation is byte-identical.
            assert_eq!(back.to_ibnetdiscover(full), text, "{what}");
        }
    }
}

/// Drops the "generated on <date>" line, the only line that differs between runs.
fn without_date(s: &str) -> String {
    s.lines()
        .filter(|l| !l.starts_with("# Topology file: generated"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn ibnetdiscover_writer_matches_real_output() {
    // Real ibnetdiscover lists nodes in its own discovery order; compare record by record.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ibnetdiscover");
    for f in [
        "net.sm.txt",
        "net.1.sm.txt",
        "net.2sw2path.sm.txt",
        "net.2sw2path4hca.sm.txt",
        "net.2sw2path4hca2port.sm.txt",
        "net.nosm.txt",
        "attrs.nosm.txt",
        "attrs.nosm-full.txt",
        "attrs.sm.txt",
        "b2b.nosm.txt",
    ] {
        let real = std::fs::read_to_string(dir.join(f)).unwrap();
        let t = Topology::parse_ibnetdiscover(&real).unwrap();
        let ours = t.to_ibnetdiscover(f.contains("full"));
        let records = |s: &str| {
            let mut v: Vec<String> = without_date(s)
                .split("\n\n")
                .skip(1)
                .map(|r| r.trim_end().to_string())
                .collect();
            v.sort();
            v
        };
        assert_eq!(records(&ours), records(&real), "{f}\n--- ours\n{ours}");
        // The preamble names the node the capture started from (the first in ibsim's file).
        let initiated = |s: &str| {
            s.lines()
                .find(|l| l.starts_with("# Initiated from"))
                .map(str::to_string)
        };
        assert!(initiated(&ours).is_some());
    }
}

#[test]
fn real_ibsim_sees_our_generated_fabrics() {
    // testdata/ibnetdiscover/gen-*.nosm.txt: ibsim loaded `generate(spec).to_net()` and
    // ibnetdiscover walked it (see testdata/README.md).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ibnetdiscover");
    for (file, spec) in [
        ("gen-fat-tree-2-8-edr.nosm.txt", "fat-tree:2,8,rate=4xEDR"),
        ("gen-random-10-12-6-3.nosm.txt", "random:10,12,6,3"),
        ("gen-dragonfly-3-2-2-1.nosm.txt", "dragonfly:3,2,2,1"),
    ] {
        let t = gen(spec);
        let real = std::fs::read_to_string(dir.join(file)).unwrap();
        let seen = Topology::parse_ibnetdiscover(&real).unwrap();
        assert_eq!(t.diff(&seen), None, "{spec}");
        let records = |s: &str| {
            let mut v: Vec<String> = without_date(s)
                .split("\n\n")
                .skip(1)
                .map(|r| r.trim_end().to_string())
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            records(&t.to_ibnetdiscover(false)),
            records(&real),
            "{spec}"
        );
    }
}

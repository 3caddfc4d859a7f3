//! Topology files: ibsim net-examples, ibnetdiscover captures, malformed input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use fabric_sim::topo::{LinkSpeed, LinkWidth, ParseErrorKind, PortRef, Topology};
use ibmad::{Guid, Lid, NodeType, PortNum};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

fn pr(t: &Topology, name: &str, port: u8) -> PortRef {
    PortRef {
        node: t.node_by_name(name).unwrap(),
        port: PortNum(port),
    }
}

#[test]
fn every_ibsim_net_example_loads() {
    let dir = testdata("ibsim-net-examples");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if !p.file_name().unwrap().to_str().unwrap().starts_with("net") {
            continue;
        }
        let t = Topology::from_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        t.validate().unwrap();
        assert!(t.num_switches() >= 1 && t.num_cas() >= 2, "{}", p.display());
        n += 1;
    }
    assert_eq!(n, 5, "the five net-examples shipped with ibsim-utils 0.10");
}

#[test]
fn installed_net_examples_load_too() {
    // The same files straight from the package, when it is installed.
    let dir = Path::new("/usr/share/doc/ibsim-utils/net-examples");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_str().unwrap().starts_with("net") {
            Topology::from_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
}

#[test]
fn net_example_guids_follow_ibsim() {
    // Compare with testdata/ibnetdiscover/net.sm.txt, which ibsim produced from the same file.
    let t = Topology::from_file(testdata("ibsim-net-examples/net")).unwrap();
    let sw1 = t.node(t.node_by_name("Switch1").unwrap()).unwrap();
    assert_eq!(sw1.guid(), Guid(0x200000));
    assert_eq!(sw1.node_type(), NodeType::SWITCH);
    assert_eq!(sw1.num_ports(), 8);
    let hca2 = t.node_by_name("Hca2").unwrap();
    assert_eq!(t.node(hca2).unwrap().guid(), Guid(0x100003));
    assert_eq!(t.port(pr(&t, "Hca2", 2)).unwrap().guid(), Guid(0x100005));
    assert_eq!(t.peer(pr(&t, "Hca2", 2)), Some(pr(&t, "Switch1", 2)));
    assert_eq!(t.num_links(), 4);
    let a = t.port(pr(&t, "Switch1", 3)).unwrap().attrs();
    assert_eq!((a.width, a.speed), (LinkWidth::X4, LinkSpeed::Sdr));
}

#[test]
fn ibnetdiscover_captures_match_their_net_files() {
    for name in [
        "net",
        "net.1",
        "net.2sw2path",
        "net.2sw2path4hca",
        "net.2sw2path4hca2port",
    ] {
        let net = Topology::from_file(testdata(&format!("ibsim-net-examples/{name}"))).unwrap();
        let disc = Topology::from_file(testdata(&format!("ibnetdiscover/{name}.sm.txt"))).unwrap();
        disc.validate().unwrap();
        // Names differ ("Switch1" vs "S-0000000000200000") and the capture carries LIDs;
        // everything else is the same fabric.
        assert_eq!(net.num_nodes(), disc.num_nodes(), "{name}");
        assert_eq!(net.num_links(), disc.num_links(), "{name}");
        for (id, n) in net.nodes() {
            let did = disc.node_by_guid(n.guid()).unwrap();
            let dn = disc.node(did).unwrap();
            assert_eq!(dn.desc(), n.desc());
            assert_eq!(dn.num_ports(), n.num_ports());
            for (p, port) in net.ports(id) {
                let dp = disc.port(PortRef { node: did, port: p }).unwrap();
                assert_eq!(dp.guid(), port.guid());
                assert_eq!(dp.attrs(), port.attrs(), "{name} {} port {p}", n.name());
                let peer_guid = |t: &Topology, r: Option<PortRef>| {
                    r.map(|r| (t.node(r.node).unwrap().guid(), r.port))
                };
                assert_eq!(peer_guid(&disc, dp.peer()), peer_guid(&net, port.peer()));
            }
        }
    }
}

#[test]
fn ibnetdiscover_capture_with_lids_and_rates() {
    // testdata/ibnetdiscover/attrs.sm.txt: ibsim on testdata/net.attrs, OpenSM, ibnetdiscover.
    let t = Topology::from_file(testdata("ibnetdiscover/attrs.sm.txt")).unwrap();
    t.validate().unwrap();
    assert_eq!((t.num_switches(), t.num_cas(), t.num_routers()), (2, 2, 1));
    let spine = t.node_by_guid(Guid(0x0002_c903_0000_1000)).unwrap();
    let sn = t.node(spine).unwrap();
    assert_eq!(sn.desc(), "spine A");
    assert_eq!(sn.name(), "S-0002c90300001000");
    assert!(sn.enhanced_port0());
    assert_eq!(sn.sys_image_guid(), Guid(0x0002_c903_0000_1fff));
    assert_eq!((sn.vendor_id(), sn.device_id()), (0x2c9, 0xc738));
    let p0 = t
        .port(PortRef {
            node: spine,
            port: PortNum(0),
        })
        .unwrap();
    assert_eq!(p0.lid(), Lid(1));
    let p1 = t
        .port(PortRef {
            node: spine,
            port: PortNum(1),
        })
        .unwrap();
    assert_eq!(
        (p1.attrs().width, p1.attrs().speed),
        (LinkWidth::X12, LinkSpeed::Edr)
    );
    let hca = t.port_by_guid(Guid(0x0002_c903_0000_2001)).unwrap();
    assert_eq!(t.port(hca).unwrap().lid(), Lid(3));
    assert_eq!(
        t.peer(hca),
        Some(PortRef {
            node: spine,
            port: PortNum(1)
        })
    );
    let rt = t.node_by_guid(Guid(0x0002_c903_0000_3000)).unwrap();
    assert_eq!(t.node(rt).unwrap().node_type(), NodeType::ROUTER);
}

#[test]
fn net_attrs_matches_its_ibnetdiscover_capture() {
    // Without an SM ibsim keeps the file's rates: the sw-a/sw-b port 3 link is 1x (w=1 & w=3).
    let net = Topology::from_file(testdata("net.attrs")).unwrap();
    for cap in ["attrs.nosm.txt", "attrs.nosm-full.txt"] {
        let disc = Topology::from_file(testdata(&format!("ibnetdiscover/{cap}"))).unwrap();
        assert_eq!(net.diff(&disc), None, "{cap}");
    }
    let a = net.port(pr(&net, "sw-a", 3)).unwrap().attrs();
    assert_eq!((a.width, a.speed), (LinkWidth::X1, LinkSpeed::Sdr));
    let a = net.port(pr(&net, "hca-2", 1)).unwrap().attrs();
    assert_eq!(a.speed, LinkSpeed::Hdr);
    // devid persists across nodes in ibsim; vendid and sysimgguid apply to one node only.
    let h2 = net.node(net.node_by_name("hca-2").unwrap()).unwrap();
    assert_eq!((h2.vendor_id(), h2.device_id()), (0, 0x1017));
    assert_eq!(h2.sys_image_guid(), h2.guid());
}

fn parse_err(text: &str) -> (usize, ParseErrorKind, String) {
    let e = Topology::parse_net(text).unwrap_err();
    (e.line, e.kind.clone(), e.to_string())
}

#[test]
fn malformed_files_name_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        // unknown keyword
        (
            "Switch 8 \"a\"\n[1] \"b\"[1]\n\nFrobnicate 3\n",
            4,
            "unrecognised",
        ),
        // header without port count
        ("\n\nSwitch \"a\"\n", 3, "number of ports"),
        // header with too many ports
        ("Switch 300 \"a\"\n", 1, "outside 1..=254"),
        // port beyond NumPorts
        ("Switch 8 \"a\"\n[9] \"b\"[1]\n", 2, "outside 1..=8"),
        // missing closing bracket
        ("Hca 2 \"a\"\n[1 \"b\"[1]\n", 2, "missing ']'"),
        // unknown peer
        (
            "Switch 8 \"a\"\n[1] \"nobody\"[1]\n",
            2,
            "unknown node \"nobody\"",
        ),
        // asymmetric: b says it is linked to a[2], a says a[1]
        (
            "Switch 8 \"a\"\n[1] \"b\"[1]\n\nHca 1 \"b\"\n[1] \"a\"[2]\n",
            2,
            "asymmetric",
        ),
        // only one side listed
        (
            "Switch 8 \"a\"\n[1] \"b\"[1]\n\nHca 1 \"b\"\n",
            2,
            "lists no port 1",
        ),
        // duplicate GUID names both nodes
        (
            "switchguid=0x10\nSwitch 8 \"a\"\n\nswitchguid=0x10\nSwitch 8 \"b\"\n",
            5,
            "\"a\" and node \"b\"",
        ),
        // duplicate name
        (
            "Switch 8 \"a\"\n\nSwitch 8 \"a\"\n",
            3,
            "duplicate node name",
        ),
        // bad width option
        (
            "Switch 8 \"a\"\n[1] \"b\"[1] w=40\n\nHca 1 \"b\"\n[1] \"a\"[1]\n",
            2,
            "LinkWidthEnabled mask",
        ),
        // bad rate text
        (
            "Switch 8 \"a\"\n[1] \"b\"[1] # \"b\" lid 1 4xZZZ\n\nHca 1 \"b\"\n[1] \"a\"[1]\n",
            2,
            "speed must be",
        ),
        // port line before any node
        ("[1] \"b\"[1]\n", 1, "outside a node record"),
        // no common width
        (
            "Switch 8 \"a\"\n[1] \"b\"[1] w=1\n\nHca 1 \"b\"\n[1] \"a\"[1] w=2\n",
            2,
            "no common width",
        ),
        // port listed twice
        (
            "Switch 8 \"a\"\n[1] \"b\"[1]\n[1] \"b\"[2]\n",
            3,
            "listed twice",
        ),
        // bad guid value
        ("caguid=zz\n", 1, "expected a number"),
        // alias lines
        ("Switch 8 \"a\"\n@[1] \"x\"\n", 2, "alias"),
        // peer GUID that does not match
        (
            "Switch 8 \"a\"\n[1] \"b\"[1](99)\n\nHca 1 \"b\"\n[1] \"a\"[1]\n",
            2,
            "does not match",
        ),
    ];
    for (text, line, needle) in cases {
        let (l, _, msg) = parse_err(text);
        assert_eq!(l, *line, "{text:?}: {msg}");
        assert!(msg.contains(needle), "{text:?}: {msg:?} lacks {needle:?}");
        assert!(msg.starts_with(&format!("line {line}: ")), "{msg}");
    }
}

#[test]
fn file_errors_name_the_file() {
    let dir = std::env::temp_dir().join(format!("topo-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.net");
    std::fs::write(&p, "Switch 8 \"a\"\n[1] \"b\"[1]\n").unwrap();
    let e = Topology::from_file(&p).unwrap_err().to_string();
    assert!(e.contains("bad.net: line 2"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn include_and_guid_directives() {
    let dir = std::env::temp_dir().join(format!("topo-inc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hcas.net"),
        "caguid=0x500\nHca 1 \"h\"\n[1] \"s\"[4] s=7\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("top.net"),
        "switchguid=0x1000\nswitchguid+5\nSwitch 8 \"s\"\n[4] \"h\"[1] s=0\n\ninclude \"hcas.net\"\ndo echo hi\n",
    )
    .unwrap();
    let t = Topology::from_file(dir.join("top.net")).unwrap();
    assert_eq!(
        t.node(t.node_by_name("s").unwrap()).unwrap().guid(),
        Guid(0x1005)
    );
    assert_eq!(t.port(pr(&t, "h", 1)).unwrap().guid(), Guid(0x501));
    // s=0 means QDR (ibsim 0.12); the peer enables SDR|DDR|QDR.
    assert_eq!(
        t.port(pr(&t, "h", 1)).unwrap().attrs().speed,
        LinkSpeed::Qdr
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

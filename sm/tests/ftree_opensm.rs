//! Our ftree against stock OpenSM 3.3.23's ftree on the same fabrics
//! (`sm/testdata/opensm-ftree/<topology>/`, commands in the README there): both sets of tables
//! are deadlock-free (no channel-dependency cycle) and reach every CA pair, our maximum
//! routes per link is no higher than OpenSM's, and our leaf switches' CA entries are OpenSM's.
#![allow(clippy::unwrap_used)]

mod ftree_util;

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use ftree_util::{cdg_has_cycle, max_routes_per_link};
use ibmad::{Guid, Lid, PortNum};
use sm::check::check_all_pairs;
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::max_lid;
use sm::routing::{route_chain, Lfts};
use sm::Subnet;

mod fixtures;
use fixtures::from_ibnetdiscover;

fn dir(t: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/opensm-ftree")
        .join(t)
}

fn read(t: &str, f: &str) -> String {
    fs::read_to_string(dir(t).join(f)).unwrap()
}

/// OpenSM's `opensm-lfts.dump` as tables over `s` (switches found by GUID).
fn parse_lfts_dump(s: &Subnet, text: &str) -> Lfts {
    let mut l = Lfts::new(s, max_lid(s));
    let mut cur = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Unicast lids ") {
            let g = rest.split(" guid ").nth(1).unwrap();
            let g = g.split_whitespace().next().unwrap();
            let guid = u64::from_str_radix(g.trim_start_matches("0x"), 16).unwrap();
            cur = Some(s.node_by_guid(Guid(guid)).unwrap());
        } else if line.starts_with("0x") {
            let mut f = line.split_whitespace();
            let lid = u16::from_str_radix(f.next().unwrap().trim_start_matches("0x"), 16).unwrap();
            let port: u8 = f.next().unwrap().parse().unwrap();
            assert!(l.set(cur.unwrap(), Lid(lid), Some(PortNum(port))));
        }
    }
    l
}

fn compare(t: &str) {
    let mut s = from_ibnetdiscover(&read(t, "net.txt")).unwrap();
    let rep = assign_lids(&mut s, &LidConfig::default(), &Guid2Lid::new()).unwrap();
    // Same LIDs as OpenSM's cold run, so the tables are comparable entry by entry.
    assert_eq!(rep.guid2lid.to_text(), read(t, "guid2lid"), "{t}: guid2lid");
    let log = read(t, "osm.log");
    assert!(
        log.contains("ftree tables configured on all switches"),
        "{t}: OpenSM did not use ftree"
    );
    let theirs = parse_lfts_dump(&s, &read(t, "opensm-lfts.dump"));
    let out = route_chain(&["ftree".to_string()], true, &s, 0).unwrap();
    let ours = out.routes.lfts;
    let rt = check_all_pairs(&s, &theirs);
    let ro = check_all_pairs(&s, &ours);
    assert!(rt.is_ok(), "{t}: OpenSM {rt:?}");
    assert!(ro.is_ok(), "{t}: ours {ro:?}");
    assert!(
        !cdg_has_cycle(&s, &theirs),
        "{t}: OpenSM's tables have a credit loop"
    );
    assert!(
        !cdg_has_cycle(&s, &ours),
        "{t}: our tables have a credit loop"
    );
    let (mo, mt) = (
        max_routes_per_link(&s, &ours),
        max_routes_per_link(&s, &theirs),
    );
    assert!(mo <= mt, "{t}: max routes per link ours {mo} > OpenSM {mt}");
    // CA entries: on leaf switches ours are OpenSM's exactly (same main-path choices, same
    // index order); on all switches, count how many agree (informational).
    let cas = ftree_util::ca_ports(&s);
    let leaves: HashMap<_, ()> = cas.iter().map(|c| (c.3, ())).collect();
    let (mut same, mut total) = (0, 0);
    for &sw in ours.switches() {
        for c in &cas {
            let eq = ours.get(sw, c.2) == theirs.get(sw, c.2);
            if leaves.contains_key(&sw) {
                assert!(eq, "{t}: leaf {sw:?} entry for LID {} differs", c.2 .0);
            }
            total += 1;
            same += usize::from(eq);
        }
    }
    eprintln!("{t}: max routes/link ours {mo}, OpenSM {mt}; CA entries equal {same}/{total}");
}

#[test]
fn fattree2l() {
    compare("fattree2l");
}

#[test]
fn fattree3l_k4() {
    compare("fattree3l-k4");
}

#[test]
fn fattree3l_k6() {
    compare("fattree3l-k6");
}

#[test]
fn ft2_k8_hosts3() {
    compare("ft2-k8-hosts3");
}

#[test]
fn ft2_k8_par2() {
    compare("ft2-k8-par2");
}

#[test]
fn kary_2_3() {
    compare("kary-2-3");
}

#[test]
fn ft3_k8() {
    compare("ft3-k8");
}

/// Writes the generated topologies as ibsim .net files into `$FTREE_NET_DIR` (used to make
/// the fixtures; see the README).
#[test]
#[ignore]
fn write_nets() {
    let out = PathBuf::from(std::env::var("FTREE_NET_DIR").unwrap());
    fs::create_dir_all(&out).unwrap();
    for (name, spec) in [
        ("ft2-k8-hosts3", "fat-tree:2,8,hosts=3"),
        ("ft2-k8-par2", "fat-tree:2,8,par=2"),
        ("kary-2-3", "kary-ntree:2,3"),
        ("ft3-k8", "fat-tree:3,8"),
    ] {
        let t = fabric_sim::topo::Topology::generate(spec).unwrap();
        fs::write(out.join(format!("{name}.net")), t.to_net()).unwrap();
    }
}

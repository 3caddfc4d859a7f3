//! Our LID assignment, min-hop and dumps against what stock OpenSM 3.3.23 produced on the same
//! ibsim fabrics (`sm/testdata/opensm/<topology>/`, see the README there for the command).
//!
//! Each test rebuilds the subnet from OpenSM's own view of it (`net.txt`, ibnetdiscover
//! output), assigns LIDs fresh (OpenSM ran cold, so it assigned fresh too) and compares
//! `guid2lid`, `opensm-lfts.dump` and `opensm-subnet.lst` byte for byte.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::PathBuf;

use sm::check::check_all_pairs;
use sm::dump::{ibnetdiscover_with_header, lfts_dump, subnet_lst};
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::route_chain;
use sm::Subnet;

mod fixtures;
use fixtures::from_ibnetdiscover;

fn dir(t: &str) -> PathBuf {
    if t.starts_with('/') {
        return PathBuf::from(t);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/opensm")
        .join(t)
}

fn read(t: &str, f: &str) -> String {
    fs::read_to_string(dir(t).join(f)).unwrap()
}

/// The subnet as OpenSM saw it. ibsim reports NodeInfo.Revision 0xA1 for every node, which
/// ibnetdiscover does not print.
fn subnet(t: &str) -> Subnet {
    let mut s = from_ibnetdiscover(&read(t, "net.txt")).unwrap();
    for n in &mut s.nodes {
        n.revision = 0xA1;
    }
    s
}

fn check_fixture(t: &str, lmc: u8) {
    let mut s = subnet(t);
    // Fresh assignment, as OpenSM's cold run did.
    let rep = assign_lids(
        &mut s,
        &LidConfig {
            lmc,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &Guid2Lid::new(),
    )
    .unwrap();
    assert_eq!(rep.new, s.end_ports().count());
    assert_eq!(rep.guid2lid.to_text(), read(t, "guid2lid"), "{t}: guid2lid");

    let out = route_chain(&["minhop".to_string()], false, &s, 0).unwrap();
    assert_eq!(out.engine, "minhop");
    let log = read(t, "osm.log");
    for line in &out.log {
        assert!(
            log.contains(line.as_str()),
            "{t}: OpenSM log lacks {line:?}"
        );
    }
    assert_eq!(
        lfts_dump(&s, &out.routes.lfts),
        read(t, "opensm-lfts.dump"),
        "{t}: lfts"
    );
    assert_eq!(
        subnet_lst(&s),
        read(t, "opensm-subnet.lst"),
        "{t}: subnet.lst"
    );

    let r = check_all_pairs(&s, &out.routes.lfts);
    assert!(r.is_ok(), "{t}: {r:?}");
    let cas = s
        .end_ports()
        .filter(|&(n, p)| !s.node(n).is_switch() && s.port(n, p).unwrap().remote.is_some())
        .count() as u64;
    assert_eq!(r.pairs, cas * cas * (1 << lmc));
}

#[test]
fn net_2sw2path_matches_opensm() {
    check_fixture("2sw2path", 0);
}

#[test]
fn fat_tree_2_level_matches_opensm() {
    check_fixture("fattree2l", 0);
}

#[test]
fn fat_tree_2_level_lmc1_matches_opensm() {
    check_fixture("fattree2l-lmc1", 1);
}

#[test]
fn tree_with_dual_homed_hca_matches_opensm() {
    check_fixture("tree3", 0);
}

#[test]
fn fat_tree_3_level_k4_matches_opensm() {
    check_fixture("fattree3l-k4", 0);
}

/// 99 guid2lid entries: OpenSM's hash table rehashes (11 → 19 bins) while it is written.
#[test]
fn fat_tree_3_level_k6_matches_opensm() {
    check_fixture("fattree3l-k6", 0);
}

#[test]
fn torus_3x3_matches_opensm() {
    check_fixture("torus3x3", 0);
}

#[test]
fn torus_3x3_lmc2_matches_opensm() {
    check_fixture("torus3x3-lmc2", 2);
}

#[test]
fn persisted_guid2lid_is_honoured() {
    // LIDs from OpenSM's guid2lid on a subnet whose ports carry no LID.
    let t = "fattree2l-lmc1";
    let mut s = subnet(t);
    let (g2l, warn) = Guid2Lid::parse(&read(t, "guid2lid"));
    assert!(warn.is_empty());
    let rep = assign_lids(
        &mut s,
        &LidConfig {
            lmc: 1,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &g2l,
    )
    .unwrap();
    assert_eq!(rep.from_guid2lid, g2l.len());
    assert_eq!(rep.new, 0);
    for (n, p) in s.end_ports() {
        let port = s.port(n, p).unwrap();
        let (b, _) = g2l.get(port.guid).unwrap();
        assert_eq!(port.lid, b);
    }
    let out = route_chain(&[], false, &s, 0).unwrap();
    assert_eq!(lfts_dump(&s, &out.routes.lfts), read(t, "opensm-lfts.dump"));
}

#[test]
fn ibnetdiscover_round_trips_opensm_view() {
    for t in ["2sw2path", "fattree2l", "tree3"] {
        let mut s = subnet(t);
        assign_lids(&mut s, &LidConfig::default(), &Guid2Lid::new()).unwrap();
        let want = read(t, "net.txt");
        let date = want
            .lines()
            .find_map(|l| l.strip_prefix("# Topology file: generated on "))
            .unwrap();
        assert_eq!(ibnetdiscover_with_header(&s, Some(date)), want, "{t}");
    }
}

/// Compares any `opensm-on-ibsim.sh` output directory (too big to commit), e.g.
/// `SM_OPENSM_DIR=/tmp/osm/k12 SM_OPENSM_LMC=0 cargo test -p sm --test routing_opensm -- --ignored`.
#[test]
#[ignore = "needs SM_OPENSM_DIR pointing at an opensm-on-ibsim.sh output directory"]
fn external_opensm_run_matches() {
    let d = std::env::var("SM_OPENSM_DIR").unwrap();
    let lmc = std::env::var("SM_OPENSM_LMC").map_or(0, |v| v.parse().unwrap());
    check_fixture(&d, lmc);
}

//! The reachability checker finds what it is meant to find: dead ends, loops, detours.
#![allow(clippy::unwrap_used)]

use ibmad::NodeType;
use ibmad::{Lid, PortNum};
use sm::check::check_all_pairs;
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::route_chain;
use sm::{NodeId, Subnet};

mod fixtures;
use fixtures::{add, connect, fat_tree, node};

fn routed() -> (Subnet, sm::routing::Lfts) {
    let mut s = fat_tree(4);
    assign_lids(&mut s, &LidConfig::default(), &Guid2Lid::new()).unwrap();
    let out = route_chain(&[], false, &s, 0).unwrap();
    (s, out.routes.lfts)
}

fn by_desc(s: &Subnet, d: &str) -> NodeId {
    s.node_ids().find(|&n| s.node(n).desc == d).unwrap()
}

fn host_lid(s: &Subnet, d: &str) -> Lid {
    s.lid_of(by_desc(s, d), PortNum(1))
}

#[test]
fn healthy_tables_pass() {
    let (s, l) = routed();
    let r = check_all_pairs(&s, &l);
    assert!(r.is_ok());
    assert_eq!(r.pairs, 16 * 16);
    assert_eq!(r.walks, 8 * 16, "one walk per (edge switch, CA LID)");
    assert_eq!(r.switch_pairs, 16 * 20, "every CA to every switch LID");
    assert_eq!(r.switch_failures, 0);
}

#[test]
fn a_broken_switch_lid_entry_is_found() {
    let (s, mut l) = routed();
    let core = by_desc(&s, "core-0");
    let edge = by_desc(&s, "edge-0-0");
    l.set(edge, s.lid_of(core, PortNum(0)), None);
    let r = check_all_pairs(&s, &l);
    assert_eq!(r.switch_failures, 2, "the two hosts of edge-0-0");
    assert_eq!(r.unreachable_count, 0);
    assert!(!r.is_ok());
}

#[test]
fn a_missing_entry_is_unreachable_for_every_source_behind_it() {
    let (s, mut l) = routed();
    let dst = host_lid(&s, "host-1-0-0");
    let edge = by_desc(&s, "edge-0-0");
    l.set(edge, dst, None);
    let r = check_all_pairs(&s, &l);
    assert_eq!(r.unreachable_count, 2, "both hosts of edge-0-0");
    assert_eq!(r.unreachable.len(), 1);
    assert_eq!(r.unreachable[0].1, dst);
    assert_eq!(r.loops + r.non_shortest, 0);
}

#[test]
fn wrong_port_delivery_is_unreachable() {
    let (s, mut l) = routed();
    let dst = host_lid(&s, "host-0-0-0");
    let edge = by_desc(&s, "edge-0-0");
    l.set(edge, dst, Some(PortNum(2))); // host-0-0-1
    let r = check_all_pairs(&s, &l);
    assert_eq!(r.unreachable_count, 4 * 4, "every source switch's hosts");
}

#[test]
fn a_forwarding_loop_is_found() {
    let (s, mut l) = routed();
    let dst = host_lid(&s, "host-0-0-0");
    // edge-0-0 up ports are 3 and 4 → agg-0-0 / agg-0-1 (port 1 on each faces edge-0-0).
    let agg = by_desc(&s, "agg-0-0");
    let edge = by_desc(&s, "edge-0-0");
    l.set(edge, dst, Some(PortNum(3)));
    l.set(agg, dst, Some(PortNum(1)));
    let r = check_all_pairs(&s, &l);
    assert!(r.loops > 0);
}

#[test]
fn a_detour_is_not_shortest() {
    // Ring A-B-C-D-E-A, host H on C, host G on A. From A, C is 2 hops via B; point A's entry
    // at E instead: A → E → D → C is 3 hops and still delivered.
    let mut s = Subnet::new();
    let sws: Vec<NodeId> = (0..5u64)
        .map(|i| {
            add(
                &mut s,
                node(0x10 + i, NodeType::SWITCH, 4, &format!("s{i}")),
            )
        })
        .collect();
    s.nodes[sws[0].idx()].dr_path = ibmad::DrPath::local();
    for i in 0..5 {
        connect(&mut s, (sws[i], 1), (sws[(i + 1) % 5], 2));
    }
    let h = add(&mut s, node(0x100, NodeType::CA, 1, "H"));
    let g = add(&mut s, node(0x200, NodeType::CA, 1, "G"));
    connect(&mut s, (sws[2], 3), (h, 1));
    connect(&mut s, (sws[0], 3), (g, 1));
    assign_lids(&mut s, &LidConfig::default(), &Guid2Lid::new()).unwrap();
    let mut l = route_chain(&[], false, &s, 0).unwrap().routes.lfts;
    assert!(check_all_pairs(&s, &l).is_ok());
    let dst = s.lid_of(h, PortNum(1));
    assert_eq!(l.get(sws[0], dst), Some(PortNum(1)), "A → B");
    l.set(sws[0], dst, Some(PortNum(2))); // A → E
    let r = check_all_pairs(&s, &l);
    assert_eq!(r.unreachable_count + r.loops, 0);
    assert_eq!(r.non_shortest, 1, "G → H only");
}

#[test]
fn stale_tables_from_a_smaller_subnet_do_not_panic() {
    let (mut s, l) = routed();
    // A new leaf switch with a host appears after routing.
    let new_sw = add(&mut s, node(0xABC, NodeType::SWITCH, 4, "late"));
    let new_ca = add(&mut s, node(0xDEF0, NodeType::CA, 1, "late-host"));
    connect(&mut s, (new_sw, 1), (new_ca, 1));
    assign_lids(&mut s, &LidConfig::default(), &Guid2Lid::new()).unwrap();
    let r = check_all_pairs(&s, &l);
    assert!(!r.is_ok());
    assert!(
        r.unreachable_count >= 16,
        "nobody reaches the late host: {r:?}"
    );
    // And the other way round: tables naming nodes the subnet does not have.
    let small = Subnet::new();
    let r = check_all_pairs(&small, &l);
    assert_eq!(r.pairs, 0);
    assert!(sm::dump::lfts_dump(&small, &l).is_empty());
}

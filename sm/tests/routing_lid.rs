//! LID assignment rules (subnet-init.md §3): ranges, alignment, reuse order, conflicts,
//! persistence, LMC limits and LID exhaustion.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use ibmad::{Guid, Lid, PortNum};
use sm::lid::{assign_lids, Guid2Lid, LidConfig, LidError};
use sm::{NodeId, Subnet};

mod fixtures;
use fixtures::fat_tree;

fn cfg(lmc: u8) -> LidConfig {
    LidConfig {
        lmc,
        reassign_lids: false,
        lmc_esp0: false,
    }
}

fn set_port_lid(s: &mut Subnet, n: NodeId, p: u8, lid: u16) {
    let port = s.port_mut(n, PortNum(p)).unwrap();
    let mut pi = port.info.unwrap();
    pi.lid.set(lid);
    port.info = Some(pi);
}

/// Every end port's range: (base, count), checking alignment and no overlap.
fn ranges(s: &Subnet) -> Vec<(NodeId, PortNum, u16, u16)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (n, p) in s.end_ports() {
        let port = s.port(n, p).unwrap();
        let count = 1u16 << port.lmc;
        assert!(port.lid.0 >= 1 && port.lid.0 + count - 1 <= 0xBFFF);
        assert_eq!(port.lid.0 % count, 0, "aligned base");
        for l in port.lid.0..port.lid.0 + count {
            assert!(seen.insert(l), "LID {l} given twice");
        }
        out.push((n, p, port.lid.0, count));
    }
    out
}

#[test]
fn fresh_assignment_gives_unique_aligned_ranges_switches_one_lid() {
    for lmc in [0u8, 1, 2, 3] {
        let mut s = fat_tree(4);
        let rep = assign_lids(&mut s, &cfg(lmc), &Guid2Lid::new()).unwrap();
        let r = ranges(&s);
        assert_eq!(rep.new, r.len());
        assert_eq!(rep.guid2lid.len(), r.len());
        for &(n, _, _, count) in &r {
            if s.node(n).is_switch() {
                assert_eq!(count, 1, "switch port 0 gets one LID under LMC {lmc}");
            } else {
                assert_eq!(count, 1 << lmc);
            }
        }
        let top = r.iter().map(|&(_, _, b, c)| b + c - 1).max().unwrap();
        assert_eq!(rep.top, Lid(top));
    }
}

#[test]
fn sm_port_gets_the_first_lid() {
    let mut s = fat_tree(4);
    assign_lids(&mut s, &cfg(0), &Guid2Lid::new()).unwrap();
    let (n, p) = s.sm_port().unwrap();
    assert_eq!(s.lid_of(n, p), Lid(1));
}

#[test]
fn existing_valid_lid_is_kept_and_avoided_by_new_ranges() {
    let mut s = fat_tree(4);
    let ca = s
        .end_ports()
        .find(|&(n, _)| !s.node(n).is_switch())
        .unwrap();
    set_port_lid(&mut s, ca.0, ca.1 .0, 3);
    let rep = assign_lids(&mut s, &cfg(0), &Guid2Lid::new()).unwrap();
    assert_eq!(rep.kept_existing, 1);
    assert_eq!(s.lid_of(ca.0, ca.1), Lid(3));
    ranges(&s);
}

#[test]
fn misaligned_existing_lid_is_replaced_under_lmc() {
    let mut s = fat_tree(4);
    let ca = s
        .end_ports()
        .find(|&(n, _)| !s.node(n).is_switch())
        .unwrap();
    set_port_lid(&mut s, ca.0, ca.1 .0, 5); // not a multiple of 4
    let rep = assign_lids(&mut s, &cfg(2), &Guid2Lid::new()).unwrap();
    assert_eq!(rep.kept_existing, 0);
    assert_ne!(s.lid_of(ca.0, ca.1), Lid(5));
    ranges(&s);
}

#[test]
fn duplicate_existing_lids_first_in_port_guid_order_keeps_it() {
    let mut s = fat_tree(4);
    let mut cas: Vec<(NodeId, PortNum)> = s
        .end_ports()
        .filter(|&(n, _)| !s.node(n).is_switch())
        .take(2)
        .collect();
    for &(n, p) in &cas {
        set_port_lid(&mut s, n, p.0, 40);
    }
    // OpenSM's port_guid_tbl order: GUID compared as network-order bytes read little-endian.
    cas.sort_by_key(|&(n, p)| s.port(n, p).unwrap().guid.0.swap_bytes());
    let rep = assign_lids(&mut s, &cfg(0), &Guid2Lid::new()).unwrap();
    assert_eq!(rep.kept_existing, 1);
    assert_eq!(rep.conflicts, 1);
    assert_eq!(s.lid_of(cas[0].0, cas[0].1), Lid(40));
    assert_ne!(s.lid_of(cas[1].0, cas[1].1), Lid(40));
    ranges(&s);
}

#[test]
fn guid2lid_beats_existing_lid_and_absent_entries_stay_reserved() {
    let mut s = fat_tree(4);
    let ca = s
        .end_ports()
        .find(|&(n, _)| !s.node(n).is_switch())
        .unwrap();
    let guid = s.port(ca.0, ca.1).unwrap().guid;
    set_port_lid(&mut s, ca.0, ca.1 .0, 3);
    let mut g = Guid2Lid::new();
    g.set(guid, Lid(77), Lid(77));
    g.set(Guid(0xdead_beef), Lid(1), Lid(1)); // a port that is not here now
    let rep = assign_lids(&mut s, &cfg(0), &g).unwrap();
    assert_eq!(rep.from_guid2lid, 1);
    assert_eq!(s.lid_of(ca.0, ca.1), Lid(77));
    assert!(
        ranges(&s).iter().all(|&(_, _, b, _)| b != 1),
        "LID 1 stays reserved"
    );
    assert_eq!(rep.guid2lid.get(Guid(0xdead_beef)), Some((Lid(1), Lid(1))));
    assert_eq!(rep.guid2lid.get(guid), Some((Lid(77), Lid(77))));
}

#[test]
fn overlapping_or_misaligned_persisted_entries_are_dropped() {
    let mut s = fat_tree(4);
    let cas: Vec<(NodeId, PortNum)> = s
        .end_ports()
        .filter(|&(n, _)| !s.node(n).is_switch())
        .take(3)
        .collect();
    let g0 = s.port(cas[0].0, cas[0].1).unwrap().guid;
    let g1 = s.port(cas[1].0, cas[1].1).unwrap().guid;
    let g2 = s.port(cas[2].0, cas[2].1).unwrap().guid;
    let mut g = Guid2Lid::new();
    g.set(g0, Lid(8), Lid(9));
    g.set(g1, Lid(9), Lid(9)); // overlaps the first entry
    g.set(g2, Lid(13), Lid(14)); // misaligned for LMC 1
    let rep = assign_lids(&mut s, &cfg(1), &g).unwrap();
    assert_eq!(rep.dropped_entries, 2);
    assert_eq!(rep.from_guid2lid, 1);
    assert_eq!(s.lid_of(cas[0].0, cas[0].1), Lid(8));
    ranges(&s);
}

#[test]
fn reassign_ignores_persisted_and_existing() {
    let mut s = fat_tree(4);
    let ca = s
        .end_ports()
        .find(|&(n, _)| !s.node(n).is_switch())
        .unwrap();
    set_port_lid(&mut s, ca.0, ca.1 .0, 3000);
    let mut g = Guid2Lid::new();
    g.set(s.port(ca.0, ca.1).unwrap().guid, Lid(2000), Lid(2000));
    let rep = assign_lids(
        &mut s,
        &LidConfig {
            lmc: 0,
            reassign_lids: true,
            lmc_esp0: false,
        },
        &g,
    )
    .unwrap();
    assert_eq!(rep.from_guid2lid + rep.kept_existing, 0);
    let n = s.end_ports().count() as u16;
    assert!(s.lid_of(ca.0, ca.1).0 <= n, "packed from 1");
    assert_eq!(rep.top, Lid(n));
}

#[test]
fn lmc_above_7_is_an_error() {
    let mut s = fat_tree(4);
    assert_eq!(
        assign_lids(&mut s, &cfg(8), &Guid2Lid::new()),
        Err(LidError::BadLmc { lmc: 8 })
    );
}

#[test]
fn running_out_of_lids_is_an_error() {
    // k=12: 432 CAs × 128 LIDs > 0xBFFF.
    let mut s = fat_tree(12);
    // issue 11: refused up front, with the numbers.
    match assign_lids(&mut s, &cfg(7), &Guid2Lid::new()) {
        Err(e @ LidError::SpaceExceeded { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("needs 55476 unicast LIDs (432 CA/router ports x 128 LIDs (LMC 7) + 180 switches x 1)")
                    && text.contains("holds 49151"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(sm::lid::lid_space_check(49_151, 0, 0).is_ok());
    assert!(sm::lid::lid_space_check(49_151, 1, 0).is_err());
    assert!(sm::lid::lid_space_check(24_575, 0, 1).is_ok());
    assert!(
        sm::lid::lid_space_check(24_576, 0, 1).is_err(),
        "LID 0's range is unusable"
    );
    // LMC 6 fits: 432 × 64 + 180 switches < 49151.
    let mut s = fat_tree(12);
    assign_lids(&mut s, &cfg(6), &Guid2Lid::new()).unwrap();
    ranges(&s);
}

#[test]
fn guid2lid_text_round_trips() {
    let mut s = fat_tree(8);
    let rep = assign_lids(&mut s, &cfg(1), &Guid2Lid::new()).unwrap();
    let text = rep.guid2lid.to_text();
    let (back, warn) = Guid2Lid::parse(&text);
    assert!(warn.is_empty());
    assert_eq!(back.len(), rep.guid2lid.len());
    for (g, b, l) in rep.guid2lid.iter() {
        assert_eq!(back.get(g), Some((b, l)));
    }
    // A second sweep from the persisted file keeps every LID.
    let before: Vec<Lid> = s.end_ports().map(|(n, p)| s.lid_of(n, p)).collect();
    let rep2 = assign_lids(&mut s, &cfg(1), &back).unwrap();
    assert_eq!(rep2.from_guid2lid, before.len());
    let after: Vec<Lid> = s.end_ports().map(|(n, p)| s.lid_of(n, p)).collect();
    assert_eq!(before, after);
}

#[test]
fn sm_on_a_ca_port_2_gets_the_first_lid_when_discovery_says_so() {
    use fixtures::{add, connect, node};
    use ibmad::NodeType;
    let mut s = Subnet::new();
    let h = add(&mut s, node(0x900, NodeType::CA, 2, "sm-host"));
    let a = add(&mut s, node(0x10, NodeType::SWITCH, 4, "A"));
    s.nodes[h.idx()].dr_path = ibmad::DrPath::local();
    connect(&mut s, (h, 1), (a, 1));
    connect(&mut s, (h, 2), (a, 2));
    s.local_port = Some(PortNum(2));
    assert_eq!(s.sm_port(), Some((h, PortNum(2))));
    assign_lids(&mut s, &cfg(0), &Guid2Lid::new()).unwrap();
    assert_eq!(s.lid_of(h, PortNum(2)), Lid(1));
    s.local_port = None;
    assert_eq!(s.sm_port(), Some((h, PortNum(1))));
}

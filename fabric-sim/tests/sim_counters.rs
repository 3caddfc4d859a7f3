//! Every port's performance counters: traffic, CRC failures (the `corrupt` fault), symbol
//! errors, LinkDowned on flaps, switch relay errors, and a reboot's clean slate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use std::time::Duration;

use fabric_sim::sim::counters::MAD_PACKET_WORDS;
use fabric_sim::sim::{DropReason, Fabric, FaultConfig, PortCounters, SimConfig};
use fabric_sim::topo::NodeId;
use ibmad::attr::NodeInfo;
use ibmad::{Lid, PhysState, PortNum, SmpAttrId};
use sim_util::*;

fn node(f: &Fabric, name: &str) -> NodeId {
    f.node_by_name(name).unwrap()
}

fn pc(f: &Fabric, name: &str, port: u8) -> PortCounters {
    *f.port_counters(node(f, name), PortNum(port)).unwrap()
}

#[test]
fn a_round_trip_counts_one_packet_each_way_on_every_link_it_crosses() {
    let (mut f, sm) = fdisc(SimConfig::default());
    // SM.p1 -> C.p2 -> C.p4 -> A.p1, and back.
    let r = dr_get(&mut f, sm, "0,1,4", SmpAttrId::NODE_INFO, 0, 1).expect("answer");
    let ni: NodeInfo = attr(&r);
    assert_eq!(ni.node_guid.get(), 0xa0a000);
    for (name, port) in [("SM", 1), ("C", 2), ("C", 4), ("A", 1)] {
        let c = pc(&f, name, port);
        assert_eq!(
            (c.port_xmit_pkts, c.port_rcv_pkts),
            (1, 1),
            "{name}.{port}: {c:?}"
        );
        assert_eq!(c.port_xmit_data, MAD_PACKET_WORDS, "{name}.{port}");
        assert_eq!(c.port_rcv_data, MAD_PACKET_WORDS, "{name}.{port}");
        assert_eq!(c.port_unicast_xmit_pkts, 1);
        assert!(c.no_errors(), "{name}.{port}: {c:?}");
    }
    // Ports the SMP did not cross saw nothing, and a switch's port 0 is not on the wire.
    assert_eq!(pc(&f, "C", 6), PortCounters::default());
    assert_eq!(pc(&f, "A", 2), PortCounters::default());
    assert_eq!(pc(&f, "C", 0), PortCounters::default());
    // A CA has no port 0; no port beyond NumPorts.
    assert!(f.port_counters(node(&f, "SM"), PortNum(0)).is_none());
    assert!(f.port_counters(node(&f, "C"), PortNum(9)).is_none());
}

#[test]
fn a_corrupted_mad_is_dropped_by_the_receiving_port_and_counted_in_port_rcv_errors() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let faults = FaultConfig::parse("corrupt=1").unwrap();
    let (c, a) = (node(&f, "C"), node(&f, "A"));
    f.set_link_faults(c, PortNum(4), Some(faults)).unwrap();
    let before = f.stats().dropped.get(DropReason::BadCrc);
    // Across the corrupting C-A cable: never answered, never seen by A's SMA.
    let delivered = f.stats().delivered;
    assert!(dr_get(&mut f, sm, "0,1,4", SmpAttrId::NODE_INFO, 0, 2).is_none());
    assert_eq!(f.stats().dropped.get(DropReason::BadCrc), before + 1);
    assert_eq!(f.stats().faults.corrupted, 1);
    // The SMP reached C's agent (which passes directed-route SMPs on), and no agent after it.
    assert_eq!(f.stats().delivered, delivered + 1);
    let rx = *f.port_counters(a, PortNum(1)).unwrap();
    assert_eq!((rx.port_rcv_errors, rx.port_rcv_pkts), (1, 0), "{rx:?}");
    let tx = *f.port_counters(c, PortNum(4)).unwrap();
    assert_eq!((tx.port_xmit_pkts, tx.port_rcv_errors), (1, 0), "{tx:?}");
    // The rest of the fabric is unaffected: C itself answers.
    assert!(dr_get(&mut f, sm, "0,1", SmpAttrId::NODE_INFO, 0, 3).is_some());
}

#[test]
fn symbol_errors_are_counted_at_the_receiver_and_the_mad_still_arrives() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let c = node(&f, "C");
    f.set_link_faults(c, PortNum(4), Some(FaultConfig::parse("symbol=1").unwrap()))
        .unwrap();
    assert!(dr_get(&mut f, sm, "0,1,4", SmpAttrId::NODE_INFO, 0, 4).is_some());
    // One crossing each way: A.p1 received one, C.p4 received the answer.
    assert_eq!(pc(&f, "A", 1).symbol_error_counter, 1);
    assert_eq!(pc(&f, "C", 4).symbol_error_counter, 1);
    assert_eq!(pc(&f, "C", 2).symbol_error_counter, 0);
    assert_eq!(f.stats().faults.symbol_errors, 2);
}

#[test]
fn a_flap_counts_link_downed_on_both_ends_an_sm_requested_disable_does_not() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let c = node(&f, "C");
    f.set_link(c, PortNum(4), false).unwrap();
    f.set_link(c, PortNum(4), true).unwrap();
    settle(&mut f, Duration::from_millis(5));
    assert_eq!(pc(&f, "C", 4).link_downed_counter, 1);
    assert_eq!(pc(&f, "A", 1).link_downed_counter, 1);
    // The SM disables C.p6 (to D) through PortInfo: not a flap.
    edit_port_info(&mut f, sm, "0,1", 6, |pi| {
        pi.set_phys_state(PhysState::DISABLED)
    });
    settle(&mut f, Duration::from_millis(5));
    assert!(!f.is_link_up(c, PortNum(6)));
    assert_eq!(pc(&f, "C", 6).link_downed_counter, 0);
    assert_eq!(pc(&f, "D", 5).link_downed_counter, 0);
}

#[test]
fn a_reboot_clears_the_nodes_counters_and_its_peers_count_link_downed() {
    let (mut f, sm) = fdisc(SimConfig::default());
    assert!(dr_get(&mut f, sm, "0,1,4", SmpAttrId::NODE_INFO, 0, 5).is_some());
    assert_eq!(pc(&f, "A", 1).port_rcv_pkts, 1);
    f.reboot(node(&f, "A")).unwrap();
    settle(&mut f, Duration::from_millis(5));
    assert_eq!(pc(&f, "A", 1).port_rcv_pkts, 0);
    assert_eq!(pc(&f, "A", 1).link_downed_counter, 0);
    for (peer, port) in [("C", 4), ("D", 1), ("E", 1)] {
        assert_eq!(pc(&f, peer, port).link_downed_counter, 1, "{peer}.{port}");
    }
}

#[test]
fn a_lid_routed_mad_without_an_lft_entry_is_a_switch_relay_error_at_the_ingress_port() {
    let (mut f, sm) = fdisc(SimConfig::default());
    set_lid(&mut f, sm, "0", 1, 1);
    // C has no LFT entry for LID 7: the SMP dies at C.p2.
    assert!(lid_get(&mut f, sm, Lid(7), SmpAttrId::NODE_INFO, 0, 6).is_none());
    assert_eq!(pc(&f, "C", 2).port_rcv_switch_relay_errors, 1);
    assert_eq!(pc(&f, "SM", 1).port_rcv_switch_relay_errors, 0);
}

#[test]
fn clearing_and_injecting_through_port_counters_mut() {
    let (mut f, sm) = fdisc(SimConfig::default());
    assert!(dr_get(&mut f, sm, "0,1", SmpAttrId::NODE_INFO, 0, 7).is_some());
    let c = node(&f, "C");
    let m = f.port_counters_mut(c, PortNum(2)).unwrap();
    assert_eq!(m.port_rcv_pkts, 1);
    *m = PortCounters::default();
    m.port_rcv_errors = 3;
    assert_eq!(pc(&f, "C", 2).port_rcv_errors, 3);
    assert!(!pc(&f, "C", 2).no_errors());
}

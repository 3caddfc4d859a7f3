//! GMPs in the simulator: LID-routed through the switches' LFTs over Active links only,
//! delivered to QP1 of the destination end port, to the attachment that registered the class
//! or answered by the node.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use std::time::Duration;

use fabric_sim::sim::{DropReason, Fabric, SimConfig, SmHandle};
use ibmad::{Lid, MadMeta, MadPort, Method, MgmtClass, PortNum, PortState};
use sim_util::*;

/// LIDs of F-DISC's path SM - C - A - D - H10.
const SM: u16 = 1;
const C: u16 = 2;
const A: u16 = 3;
const D: u16 = 4;
const H10: u16 = 5;

/// Gives the path SM - C - A - D - H10 LIDs and LFTs, and every port on it the state `state`
/// (Armed then Active for Active).
fn program_path(f: &mut Fabric, sm: SmHandle, state: PortState) {
    set_lid(f, sm, "0", 1, SM);
    set_lid(f, sm, "0,1", 0, C);
    set_lid(f, sm, "0,1,4", 0, A);
    set_lid(f, sm, "0,1,4,2", 0, D);
    set_lid(f, sm, "0,1,4,2,3", 1, H10);
    set_lft(
        f,
        sm,
        "0,1",
        &[(SM, 2), (C, 0), (A, 4), (D, 4), (H10, 4)],
        5,
    );
    set_lft(
        f,
        sm,
        "0,1,4",
        &[(SM, 1), (C, 1), (A, 0), (D, 2), (H10, 2)],
        5,
    );
    set_lft(
        f,
        sm,
        "0,1,4,2",
        &[(SM, 1), (C, 1), (A, 1), (D, 0), (H10, 3)],
        5,
    );
    let ports = [
        ("0", 1),
        ("0,1", 2),
        ("0,1", 4),
        ("0,1,4", 1),
        ("0,1,4", 2),
        ("0,1,4,2", 1),
        ("0,1,4,2", 3),
        ("0,1,4,2,3", 1),
    ];
    for target in [PortState::ARMED, PortState::ACTIVE] {
        if state == PortState::INIT || (state == PortState::ARMED && target == PortState::ACTIVE) {
            break;
        }
        for (path, port) in ports {
            let pi = edit_port_info(f, sm, path, port, |pi| pi.set_port_state(target));
            assert_eq!(pi.port_state(), target, "{path} port {port}");
        }
    }
}

/// A GMP request of `class`/`method` with TID `tid` (class version 1, attribute 0x0012).
fn gmp(class: MgmtClass, method: Method, tid: u64) -> [u8; 256] {
    let mut m = [0u8; 256];
    m[0] = 1;
    m[1] = class.0;
    m[2] = 1;
    m[3] = method.0;
    m[8..16].copy_from_slice(&tid.to_be_bytes());
    m[16..18].copy_from_slice(&0x0012u16.to_be_bytes());
    m
}

fn gmp_meta(dlid: u16) -> MadMeta {
    MadMeta {
        port: PortNum(1),
        slid: Lid(0),
        dlid: Lid(dlid),
        qp: 1,
        ..MadMeta::default()
    }
}

/// Everything queued for `h`, raw.
fn recv_all(f: &mut Fabric, h: SmHandle) -> Vec<(MadMeta, u32, [u8; 256])> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    while let Some((meta, qp, len)) = f.sm_recv_qp(h, &mut buf).unwrap() {
        assert_eq!(len, 256);
        out.push((meta, qp, buf));
    }
    out
}

const VENDOR: MgmtClass = MgmtClass(0x09);

#[test]
fn a_get_of_a_class_nobody_serves_is_answered_unsupported_across_four_links() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_path(&mut f, sm, PortState::ACTIVE);
    let _ = recv_all(&mut f, sm);
    let before = *f
        .port_counters(f.node_by_name("H10").unwrap(), PortNum(1))
        .unwrap();
    let req = gmp(VENDOR, Method::GET, 0x1234);
    f.sm_port(sm).send(&gmp_meta(H10), &req).unwrap();
    settle(&mut f, Duration::from_millis(1));
    let got = recv_all(&mut f, sm);
    assert_eq!(got.len(), 1, "{got:?}");
    let (meta, qp, mad) = got[0];
    assert_eq!(mad[3], Method::GET_RESP.0);
    assert_eq!(
        u16::from_be_bytes([mad[4], mad[5]]),
        0x000C,
        "method/attr not supported"
    );
    assert_eq!(&mad[8..16], &0x1234u64.to_be_bytes());
    assert_eq!(
        (meta.slid, meta.dlid, meta.qp, qp),
        (Lid(H10), Lid(SM), 1, 1)
    );
    // One packet each way on H10's port, LID-forwarded by C, A and D both ways.
    let after = *f
        .port_counters(f.node_by_name("H10").unwrap(), PortNum(1))
        .unwrap();
    assert_eq!(after.port_rcv_pkts - before.port_rcv_pkts, 1);
    assert_eq!(after.port_xmit_pkts - before.port_xmit_pkts, 1);
}

#[test]
fn gmps_need_active_ports_smps_do_not() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_path(&mut f, sm, PortState::ARMED);
    let _ = recv_all(&mut f, sm);
    let discards = |f: &Fabric| {
        f.port_counters(f.node_by_name("SM").unwrap(), PortNum(1))
            .unwrap()
            .port_xmit_discards
    };
    let before = f.stats().dropped.get(DropReason::NotActive);
    f.sm_port(sm)
        .send(&gmp_meta(H10), &gmp(VENDOR, Method::GET, 1))
        .unwrap();
    settle(&mut f, Duration::from_millis(1));
    assert!(recv_all(&mut f, sm).is_empty());
    assert_eq!(f.stats().dropped.get(DropReason::NotActive), before + 1);
    assert_eq!(discards(&f), 1, "the SM's own Armed port discards it");
    // A LID-routed SMP over the same Armed path is answered.
    let r = lid_get(&mut f, sm, Lid(H10), ibmad::SmpAttrId::NODE_INFO, 0, 2);
    assert!(r.is_some());
}

#[test]
fn a_registered_attachment_receives_its_class_and_answers() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_path(&mut f, sm, PortState::ACTIVE);
    let _ = recv_all(&mut f, sm);
    let h10 = f.node_by_name("H10").unwrap();
    let agent = f.attach_client(h10, PortNum(1)).unwrap().handle;
    let sa = MgmtClass(0x03);
    // Not registered yet: unsupported, answered by the node.
    f.sm_port(sm)
        .send(&gmp_meta(H10), &gmp(sa, Method::GET, 7))
        .unwrap();
    settle(&mut f, Duration::from_millis(1));
    assert!(recv_all(&mut f, agent).is_empty());
    assert_eq!(recv_all(&mut f, sm)[0].2[5], 0x0C);
    // Registered: the request reaches it with the requester's LID and QP.
    assert!(f.register_class(agent, sa));
    assert!(!f.register_class(agent, MgmtClass::SUBN_LID_ROUTED));
    f.sm_port(sm)
        .send(&gmp_meta(H10), &gmp(sa, Method::GET, 8))
        .unwrap();
    settle(&mut f, Duration::from_millis(1));
    let got = recv_all(&mut f, agent);
    assert_eq!(got.len(), 1);
    let (meta, qp, mut mad) = got[0];
    assert_eq!(
        (meta.slid, meta.dlid, meta.qp, meta.port, qp),
        (Lid(SM), Lid(H10), 1, PortNum(1), 1)
    );
    assert!(recv_all(&mut f, sm).is_empty());
    // Its answer goes back to the requester.
    mad[3] = Method::GET_RESP.0;
    mad[64] = 0xAB;
    let back = MadMeta {
        port: PortNum(1),
        slid: Lid(H10),
        dlid: meta.slid,
        qp: meta.qp,
        ..MadMeta::default()
    };
    f.sm_port(agent).send(&back, &mad).unwrap();
    settle(&mut f, Duration::from_millis(1));
    let got = recv_all(&mut f, sm);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].2[3], got[0].2[64]), (Method::GET_RESP.0, 0xAB));
    // Unregistered again: the node answers.
    assert!(f.unregister_class(agent, sa));
    f.sm_port(sm)
        .send(&gmp_meta(H10), &gmp(sa, Method::GET, 9))
        .unwrap();
    settle(&mut f, Duration::from_millis(1));
    assert!(recv_all(&mut f, agent).is_empty());
    assert_eq!(recv_all(&mut f, sm).len(), 1);
}

#[test]
fn a_gmp_to_its_own_port_is_delivered_without_crossing_a_link_and_bad_gmps_are_refused() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_path(&mut f, sm, PortState::ACTIVE);
    let _ = recv_all(&mut f, sm);
    let sm_node = f.node_by_name("SM").unwrap();
    let before = *f.port_counters(sm_node, PortNum(1)).unwrap();
    f.sm_port(sm)
        .send(&gmp_meta(SM), &gmp(VENDOR, Method::GET, 3))
        .unwrap();
    settle(&mut f, Duration::from_millis(1));
    assert_eq!(recv_all(&mut f, sm).len(), 1);
    assert_eq!(*f.port_counters(sm_node, PortNum(1)).unwrap(), before);
    // A GMP needs QP > 0 and a unicast DLID; other methods than Get/Set get no error answer.
    let mut m = gmp_meta(H10);
    m.qp = 0;
    assert!(f
        .sm_port(sm)
        .send(&m, &gmp(VENDOR, Method::GET, 4))
        .is_err());
    assert!(f
        .sm_port(sm)
        .send(&gmp_meta(0xFFFF), &gmp(VENDOR, Method::GET, 4))
        .is_err());
    let no_agent = f.stats().dropped.get(DropReason::NoAgent);
    f.sm_port(sm)
        .send(&gmp_meta(H10), &gmp(VENDOR, Method::SEND, 5))
        .unwrap();
    settle(&mut f, Duration::from_millis(1));
    assert!(recv_all(&mut f, sm).is_empty());
    assert_eq!(f.stats().dropped.get(DropReason::NoAgent), no_agent + 1);
}

/// A PortCounters request for `port_select` (Set clears what `select` names).
fn pc_req(method: Method, port_select: u8, select: u32, tid: u64) -> [u8; 256] {
    use ibmad::perf::{CounterSelect, PerfMad, PortCountersRepr};
    use ibmad::zerocopy::IntoBytes;
    use ibmad::{GmpAttrRepr, PmaAttrId};
    let mut m = PerfMad::request(method, PmaAttrId::PORT_COUNTERS, 0, tid);
    PortCountersRepr {
        port_select,
        counter_select: CounterSelect(select),
        ..PortCountersRepr::default()
    }
    .emit(&mut m.data)
    .unwrap();
    let mut out = [0u8; 256];
    out.copy_from_slice(m.as_bytes());
    out
}

/// Sends `req` to `dlid` and returns the one answer: its MAD status and PortCounters.
fn pma_ask(
    f: &mut Fabric,
    sm: SmHandle,
    dlid: u16,
    req: &[u8; 256],
) -> (u16, ibmad::perf::PortCountersRepr) {
    use ibmad::GmpAttrRepr;
    f.sm_port(sm).send(&gmp_meta(dlid), req).unwrap();
    settle(f, Duration::from_millis(1));
    let got = recv_all(f, sm);
    assert_eq!(got.len(), 1, "{got:?}");
    let (meta, _, mad) = got[0];
    assert_eq!(meta.slid, Lid(dlid));
    assert_eq!(
        (mad[1], mad[3]),
        (MgmtClass::PERF_MGMT.0, Method::GET_RESP.0)
    );
    assert_eq!(&mad[8..16], &req[8..16], "TID echoed");
    let status = u16::from_be_bytes([mad[4], mad[5]]);
    (
        status,
        ibmad::perf::PortCountersRepr::parse(&mad[64..]).unwrap(),
    )
}

#[test]
fn every_node_s_pma_reports_the_simulator_s_counters_and_a_set_clears_them() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_path(&mut f, sm, PortState::ACTIVE);
    let _ = recv_all(&mut f, sm);
    let h10 = f.node_by_name("H10").unwrap();
    let d = f.node_by_name("D").unwrap();
    // A CA answers for the port the MAD arrived on; the values are the simulator's counters
    // as they were when the request arrived (the request itself counted).
    let want = *f.port_counters(h10, PortNum(1)).unwrap();
    let (st, pc) = pma_ask(&mut f, sm, H10, &pc_req(Method::GET, 1, 0, 1));
    assert_eq!(st, 0);
    assert_eq!(pc.port_select, 1);
    assert_eq!(u64::from(pc.port_rcv_pkts), want.port_rcv_pkts + 1);
    assert_eq!(u64::from(pc.port_xmit_pkts), want.port_xmit_pkts);
    assert_eq!(u64::from(pc.port_rcv_data), want.port_rcv_data + 72);
    assert!(pc.port_rcv_pkts > 1, "the path's SMPs were counted: {pc:?}");
    // Another port of a CA is an invalid field.
    let (st, _) = pma_ask(&mut f, sm, H10, &pc_req(Method::GET, 2, 0, 2));
    assert_eq!(st, 0x001C);
    // A switch answers for any of its ports, port 0 included, and for all of them at once.
    let d3 = *f.port_counters(d, PortNum(3)).unwrap();
    let (st, pc) = pma_ask(&mut f, sm, D, &pc_req(Method::GET, 3, 0, 3));
    assert_eq!(st, 0);
    assert_eq!(u64::from(pc.port_xmit_pkts), d3.port_xmit_pkts);
    let (st, _) = pma_ask(&mut f, sm, D, &pc_req(Method::GET, 0, 0, 4));
    assert_eq!(st, 0);
    let (st, all) = pma_ask(&mut f, sm, D, &pc_req(Method::GET, 0xFF, 0, 5));
    assert_eq!(st, 0);
    assert!(all.port_xmit_pkts > pc.port_xmit_pkts, "{all:?} vs {pc:?}");
    // Injected errors show; a Set with every CounterSelect bit clears them and the traffic.
    f.port_counters_mut(d, PortNum(3))
        .unwrap()
        .symbol_error_counter = 7;
    let (_, pc) = pma_ask(&mut f, sm, D, &pc_req(Method::GET, 3, 0, 6));
    assert_eq!(pc.symbol_error_counter, 7);
    let (st, pc) = pma_ask(&mut f, sm, D, &pc_req(Method::SET, 3, 0xFFFF, 7));
    assert_eq!(st, 0);
    assert_eq!((pc.symbol_error_counter, pc.port_xmit_pkts), (0, 0));
    let after = *f.port_counters(d, PortNum(3)).unwrap();
    assert_eq!(after.symbol_error_counter, 0);
    assert!(
        after.port_xmit_pkts <= 1,
        "cleared, then the answer: {after:?}"
    );
}

#[test]
fn a_pma_answers_nothing_to_a_trap_or_a_trap_repress() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_path(&mut f, sm, PortState::ACTIVE);
    let _ = recv_all(&mut f, sm);
    let no_agent = f.stats().dropped.get(DropReason::NoAgent);
    for method in [Method::TRAP, Method::TRAP_REPRESS] {
        let mut req = pc_req(Method::GET, 1, 0, 9);
        req[3] = method.0;
        f.sm_port(sm).send(&gmp_meta(H10), &req).unwrap();
        settle(&mut f, Duration::from_millis(1));
        assert!(recv_all(&mut f, sm).is_empty(), "{method:?}");
    }
    assert_eq!(f.stats().dropped.get(DropReason::NoAgent), no_agent + 2);
}

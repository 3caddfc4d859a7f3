//! Traps (IBA vol1 §13.4.8, §14.2.5.1): 128 on switch port state change, 144 on capability
//! mask / NodeDescription change; repetition with back-off until TrapRepress.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::attr::port_info::cap;
use ibmad::attr::Notice;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{Lid, Method, MgmtClass, PortNum, Smp, SmpAttrId, Status, Time, TrapNum};
use sma::{Event, LinkEvent};

/// A switch with LID 1 whose master SM (LID 5, SL 2) is reached through port 1.
fn managed_switch() -> sma::Agent {
    let mut a = switch(0x700, 4);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let mut p0 = pi_template(&a, 0);
    p0.lid.set(1);
    p0.master_sm_lid.set(5);
    p0.set_master_sm_sl(2);
    p0.set_subnet_timeout(18);
    assert_eq!(set_pi(&mut a, 0, 0, &p0).status(), Status::OK);
    let mut si = a.switch_info().unwrap();
    si.linear_fdb_top.set(5);
    si.set_port_state_change(1);
    set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    let mut blk = [0xFFu8; 64];
    blk[1] = 0;
    blk[5] = 1;
    set(&mut a, 0, SmpAttrId::LINEAR_FT, 0, &blk);
    let _ = drain(&mut a);
    let _ = events(&mut a);
    a
}

fn repress(tid: u64) -> Smp {
    let mut s = Smp::lid_request(Method::TRAP_REPRESS, SmpAttrId::NOTICE, 0, tid);
    s.mgmt_class = MgmtClass::SUBN_LID_ROUTED.0;
    s
}

#[test]
fn trap_128_on_switch_port_change_repeats_until_repressed() {
    let mut a = managed_switch();
    a.handle_link(Time::ZERO, PortNum(3), UP);
    assert_eq!(a.switch_info().unwrap().port_state_change(), 1);
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    let (t, s) = &out[0];
    assert_eq!(s.class(), MgmtClass::SUBN_LID_ROUTED);
    assert_eq!(s.method(), Method::TRAP);
    assert_eq!(s.attr(), SmpAttrId::NOTICE);
    assert_eq!(
        t.meta.port,
        PortNum(1),
        "egress by the LFT entry for the SM LID"
    );
    assert_eq!((t.meta.slid, t.meta.dlid, t.meta.sl), (Lid(1), Lid(5), 2));
    let n = Notice::read_from_prefix(&s.data).unwrap().0;
    assert_eq!(n.is_generic(), 1);
    assert_eq!(n.trap_num(), TrapNum::LINK_STATE_CHANGE);
    assert_eq!(n.producer_type(), 2);
    assert_eq!(n.issuer_lid(), Lid(1));
    assert_eq!(&n.data_details[..2], &1u16.to_be_bytes());
    let tid = s.tid.get();
    assert!(events(&mut a).contains(&Event::TrapQueued {
        trap: TrapNum::LINK_STATE_CHANGE,
        tid
    }));

    // Retransmissions: same TID, doubling interval (SubnetTimeOut 18 = 4.096us * 2^18).
    let first = sma::rules::trap_interval(18);
    let mut expect = Time::ZERO + first;
    let mut interval = first;
    for _ in 0..4 {
        let due = a.poll_timeout().unwrap();
        assert_eq!(due, expect);
        a.handle_timeout(due);
        let out = drain(&mut a);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.tid.get(), tid);
        interval *= 2;
        expect = due + interval;
    }
    // Another change while pending does not queue a second trap.
    a.handle_link(Time::ZERO, PortNum(3), LinkEvent::Down);
    assert!(drain(&mut a).is_empty());
    assert_eq!(a.pending_traps(), 1);

    // A TrapRepress with another TID is ignored; with the right TID the trap is retired.
    a.handle_mad(expect, &lid_meta(1, 5, 1), repress(tid + 100).as_bytes());
    assert_eq!(a.pending_traps(), 1);
    a.handle_mad(expect, &lid_meta(1, 5, 1), repress(tid).as_bytes());
    assert_eq!(a.pending_traps(), 0);
    assert_eq!(a.poll_timeout(), None);
    assert!(events(&mut a).contains(&Event::TrapRepressed {
        trap: TrapNum::LINK_STATE_CHANGE,
        tid
    }));
    assert!(drain(&mut a).is_empty(), "TrapRepress is not answered");
}

#[test]
fn trap_backoff_is_capped() {
    let mut a = managed_switch();
    a.handle_link(Time::ZERO, PortNum(3), UP);
    let _ = drain(&mut a);
    let base = sma::rules::trap_interval(18);
    let mut last = Time::ZERO;
    let mut gaps = Vec::new();
    for _ in 0..10 {
        let due = a.poll_timeout().unwrap();
        gaps.push(due - last);
        last = due;
        a.handle_timeout(due);
        let _ = drain(&mut a);
    }
    assert_eq!(
        *gaps.last().unwrap(),
        base * sma::rules::TRAP_BACKOFF_MAX_FACTOR
    );
    assert!(gaps.windows(2).all(|w| w[1] >= w[0]));
}

#[test]
fn no_trap_without_a_master_sm() {
    let mut a = switch(0x700, 4);
    a.handle_link(Time::ZERO, PortNum(3), UP);
    assert_eq!(
        a.switch_info().unwrap().port_state_change(),
        1,
        "PSC still set"
    );
    assert!(drain(&mut a).is_empty());
    assert_eq!(a.pending_traps(), 0);
    assert_eq!(a.poll_timeout(), None);
}

#[test]
fn trap_144_on_capability_mask_change() {
    let mut a = ca(0x500, 1);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let mut pi = pi_template(&a, 1);
    pi.lid.set(3);
    pi.master_sm_lid.set(9);
    set_pi(&mut a, 1, 1, &pi);
    let _ = drain(&mut a);
    let mask = port_info(&a, 1).capability_mask.get() | cap::IS_SM;
    assert!(a.set_capability_mask(Time::ZERO, PortNum(1), mask));
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    let (t, s) = &out[0];
    assert_eq!(
        (t.meta.port, t.meta.slid, t.meta.dlid),
        (PortNum(1), Lid(3), Lid(9))
    );
    let n = Notice::read_from_prefix(&s.data).unwrap().0;
    assert_eq!(n.trap_num(), TrapNum::LOCAL_CHANGES);
    assert_eq!(n.producer_type(), 1);
    assert_eq!(&n.data_details[2..4], &3u16.to_be_bytes());
    assert_eq!(&n.data_details[6..10], &mask.to_be_bytes());
    // Same mask again: nothing.
    assert!(a.set_capability_mask(Time::ZERO, PortNum(1), mask));
    assert!(drain(&mut a).is_empty());
    // A switch external port is not an end port.
    let mut sw = switch(0x700, 2);
    assert!(!sw.set_capability_mask(Time::ZERO, PortNum(1), 0));
}

#[test]
fn trap_144_on_node_description_change() {
    let mut a = managed_switch();
    a.set_node_description(Time::ZERO, "renamed");
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    let n = Notice::read_from_prefix(&out[0].1.data).unwrap().0;
    assert_eq!(n.trap_num(), TrapNum::LOCAL_CHANGES);
    assert_eq!(
        &n.data_details[10..12],
        &sma::trap::change_flags::NODE_DESCRIPTION.to_be_bytes()
    );
    let nd = get(&mut a, 0, SmpAttrId::NODE_DESC, 0);
    assert_eq!(&nd.data[..7], b"renamed");
}

#[test]
fn trap_to_an_sm_on_this_switch_is_handed_over_locally() {
    let mut a = switch(0x700, 4);
    let mut p0 = pi_template(&a, 0);
    p0.lid.set(1);
    p0.master_sm_lid.set(1);
    set_pi(&mut a, 0, 0, &p0);
    let mut si = a.switch_info().unwrap();
    si.linear_fdb_top.set(1);
    set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    let mut blk = [0xFFu8; 64];
    blk[1] = 0;
    set(&mut a, 0, SmpAttrId::LINEAR_FT, 0, &blk);
    let _ = events(&mut a);
    a.handle_link(Time::ZERO, PortNum(2), UP);
    assert!(drain(&mut a).is_empty());
    let ev = events(&mut a);
    assert!(ev
        .iter()
        .any(|e| matches!(e, Event::ForSm { mad, .. } if mad[3] == Method::TRAP.0)));
}

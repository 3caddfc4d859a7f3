//! LID-routed SMPs (class 0x01, IBA vol1 §14.2.1.1): answered with our LID as SLID, to the
//! requester's SLID; a CA answers out of the ingress port, a switch by its LFT.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::attr::NodeInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{Lid, Method, MgmtClass, PortNum, Smp, SmpAttrId, Status, Time};
use sma::{Discard, Event};

#[test]
fn ca_answers_out_of_the_ingress_port() {
    let mut a = ca(0x500, 2);
    a.handle_link(Time::ZERO, PortNum(2), UP);
    let mut pi = pi_template(&a, 2);
    pi.lid.set(8);
    pi.set_lmc(1);
    set_pi(&mut a, 2, 2, &pi);
    let req = Smp::lid_request(Method::GET, SmpAttrId::NODE_INFO, 0, 42);
    a.handle_mad(Time::ZERO, &lid_meta(2, 1, 9), req.as_bytes());
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    let (t, s) = &out[0];
    assert_eq!(t.meta.port, PortNum(2));
    assert_eq!(
        (t.meta.slid, t.meta.dlid),
        (Lid(9), Lid(1)),
        "answers from the LID it was sent to"
    );
    assert_eq!(s.class(), MgmtClass::SUBN_LID_ROUTED);
    assert_eq!(s.method(), Method::GET_RESP);
    assert_eq!(s.tid.get(), 42);
    assert_eq!(s.status(), Status::OK);
    let ni = NodeInfo::read_from_prefix(&s.data).unwrap().0;
    assert_eq!(ni.local_port_num, 2);
}

#[test]
fn switch_answers_through_its_lft() {
    let mut a = switch(0x700, 4);
    a.handle_link(Time::ZERO, PortNum(3), UP);
    let mut p0 = pi_template(&a, 0);
    p0.lid.set(2);
    set_pi(&mut a, 0, 0, &p0);
    let req = Smp::lid_request(Method::GET, SmpAttrId::PORT_INFO, 3, 7);
    // No route to the requester yet: dropped.
    a.handle_mad(Time::ZERO, &lid_meta(3, 1, 2), req.as_bytes());
    assert!(drain(&mut a).is_empty());
    assert!(events(&mut a).iter().any(|e| matches!(
        e,
        Event::Discarded {
            reason: Discard::NoRoute(Lid(1)),
            ..
        }
    )));
    let mut si = a.switch_info().unwrap();
    si.linear_fdb_top.set(2);
    set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    let mut blk = [0xFFu8; 64];
    blk[1] = 3;
    blk[2] = 0;
    set(&mut a, 0, SmpAttrId::LINEAR_FT, 0, &blk);
    a.handle_mad(Time::ZERO, &lid_meta(1, 1, 2), req.as_bytes());
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].0.meta.port,
        PortNum(3),
        "LFT[1] = 3, not the ingress port"
    );
    assert_eq!((out[0].0.meta.slid, out[0].0.meta.dlid), (Lid(2), Lid(1)));
}

#[test]
fn lid_routed_responses_and_traps_go_to_the_sm() {
    let mut a = ca(0x500, 1);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    for m in [Method::GET_RESP, Method::TRAP] {
        let s = Smp::lid_request(m, SmpAttrId::NODE_INFO, 0, 1);
        a.handle_mad(Time::ZERO, &lid_meta(1, 4, 3), s.as_bytes());
        assert!(drain(&mut a).is_empty());
        assert!(events(&mut a)
            .iter()
            .any(|e| matches!(e, Event::ForSm { mad, .. } if mad[3] == m.0)));
    }
}

#[test]
fn malformed_mads_are_dropped_and_counted() {
    let mut a = ca(0x500, 1);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let good = Smp::lid_request(Method::GET, SmpAttrId::NODE_INFO, 0, 1);
    a.handle_mad(Time::ZERO, &lid_meta(1, 4, 3), &good.as_bytes()[..255]);
    let mut bad_base = good;
    bad_base.base_version = 2;
    a.handle_mad(Time::ZERO, &lid_meta(1, 4, 3), bad_base.as_bytes());
    let mut sa = good;
    sa.mgmt_class = MgmtClass::SUBN_ADM.0;
    a.handle_mad(Time::ZERO, &lid_meta(1, 4, 3), sa.as_bytes());
    assert!(drain(&mut a).is_empty());
    assert_eq!(a.stats().malformed, 3);
    let reasons: Vec<Discard> = events(&mut a)
        .into_iter()
        .filter_map(|e| match e {
            Event::Discarded { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            Discard::BadLength { len: 255 },
            Discard::BadBaseVersion(2),
            Discard::NotSmp(MgmtClass::SUBN_ADM)
        ]
    );
}

#[test]
fn mad_on_a_port_that_does_not_exist_is_dropped() {
    let mut a = ca(0x500, 1);
    let s = Smp::lid_request(Method::GET, SmpAttrId::NODE_INFO, 0, 1);
    a.handle_mad(Time::ZERO, &lid_meta(0, 1, 2), s.as_bytes());
    a.handle_mad(Time::ZERO, &lid_meta(3, 1, 2), s.as_bytes());
    assert!(drain(&mut a).is_empty());
    let reasons: Vec<Discard> = events(&mut a)
        .into_iter()
        .filter_map(|e| match e {
            Event::Discarded { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            Discard::BadIngressPort(PortNum(0)),
            Discard::BadIngressPort(PortNum(3))
        ]
    );
}

#[test]
fn short_transmit_buffer_keeps_the_mad_queued() {
    let mut a = ca(0x500, 1);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let s = Smp::lid_request(Method::GET, SmpAttrId::NODE_INFO, 0, 1);
    a.handle_mad(Time::ZERO, &lid_meta(1, 4, 0), s.as_bytes());
    let mut small = [0u8; 100];
    assert!(a.poll_transmit(Time::ZERO, &mut small).is_none());
    let mut big = [0u8; 300];
    let t = a.poll_transmit(Time::ZERO, &mut big).unwrap();
    assert_eq!(t.len, 256);
    assert_eq!(big[3], Method::GET_RESP.0);
    assert!(a.poll_transmit(Time::ZERO, &mut big).is_none());
}

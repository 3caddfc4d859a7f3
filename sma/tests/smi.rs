//! The directed-route compliance statements (IBA vol1 §14.2.2, C14-6, C14-9:1..5,
//! C14-13:1..5) as the agent applies them end to end: each test feeds bytes to a real agent and
//! checks what comes out. The rules themselves are `ibmad::smi`'s (tested there in isolation).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::smi::DiscardReason;
use ibmad::zerocopy::IntoBytes;
use ibmad::{DrPath, Lid, Method, PortNum, Smp, SmpAttrId, Status, Time};
use sma::{Discard, Event};

fn up_switch(ports: u8) -> sma::Agent {
    let mut a = switch(0x700, ports);
    for p in 1..=ports {
        a.handle_link(Time::ZERO, PortNum(p), UP);
    }
    let _ = events(&mut a);
    a
}

fn req(path: &[u8]) -> Smp {
    Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        5,
        &DrPath::new(path).unwrap(),
    )
}

fn discards<H: sma::Hardware>(a: &mut sma::Agent<H>) -> Vec<Discard> {
    events(a)
        .into_iter()
        .filter_map(|e| match e {
            Event::Discarded { reason, .. } => Some(reason),
            _ => None,
        })
        .collect()
}

#[test]
fn c14_6_hop_count_above_63_is_dropped() {
    let mut a = up_switch(4);
    let mut s = req(&[1]);
    s.hop_cnt = 64;
    s.hop_ptr = 1;
    a.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    assert!(drain(&mut a).is_empty());
    assert_eq!(
        discards(&mut a),
        vec![Discard::Smi(DiscardReason::HopCountTooLarge)]
    );
}

#[test]
fn c14_9_1_unadvanced_hop_pointer_is_dropped() {
    let mut a = up_switch(4);
    let s = req(&[1, 2]); // hop_ptr still 0
    a.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    assert!(drain(&mut a).is_empty());
    assert_eq!(
        discards(&mut a),
        vec![Discard::Smi(DiscardReason::HopPtrNotAdvanced)]
    );
}

#[test]
fn c14_9_2_switch_records_return_path_and_forwards() {
    let mut a = up_switch(4);
    let s = dr(Method::GET, SmpAttrId::NODE_INFO, 0, &[1, 3, 2]);
    a.handle_mad(Time::ZERO, &meta(4), s.as_bytes());
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    let (t, f) = &out[0];
    assert_eq!(t.meta.port, PortNum(3), "egress = InitialPath[2]");
    assert_eq!(
        (t.meta.slid, t.meta.dlid),
        (Lid::PERMISSIVE, Lid::PERMISSIVE)
    );
    assert_eq!(f.hop_ptr, 2);
    assert_eq!(f.return_path[1], 4, "ReturnPath[1] = ingress port");
    assert_eq!(f.method(), Method::GET, "forwarded, not answered");
    assert_eq!(a.stats().forwarded, 1);
}

#[test]
fn c14_9_2_ca_and_bad_next_port_are_dropped() {
    let mut c = ca(0x500, 1);
    c.handle_link(Time::ZERO, PortNum(1), UP);
    let s = dr(Method::GET, SmpAttrId::NODE_INFO, 0, &[1, 1]);
    c.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    assert!(drain(&mut c).is_empty());
    assert_eq!(
        discards(&mut c),
        vec![Discard::Smi(DiscardReason::NotASwitch)]
    );

    let mut a = up_switch(4);
    let s = dr(Method::GET, SmpAttrId::NODE_INFO, 0, &[1, 9]);
    a.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    assert!(drain(&mut a).is_empty());
    assert_eq!(
        discards(&mut a),
        vec![Discard::Smi(DiscardReason::BadNextPort)]
    );
}

#[test]
fn c14_9_3_non_permissive_dr_dlid_continues_lid_routed_at_a_switch() {
    let mut a = up_switch(4);
    let mut si = a.switch_info().unwrap();
    si.linear_fdb_top.set(63);
    set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    let mut blk = [0xFFu8; 64];
    blk[12] = 2;
    set(&mut a, 0, SmpAttrId::LINEAR_FT, 0, &blk);
    let mut s = req(&[1]);
    s.dr_dlid.set(12);
    let _ = ibmad::smi::advance(&mut s, false);
    a.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.meta.port, PortNum(2), "LFT[12]");
    assert_eq!(out[0].0.meta.dlid, Lid(12));
    assert!(out[0].1.is_dr());
    // A CA at the end of the DR segment with a non-permissive DrDLID drops it.
    let mut c = ca(0x500, 1);
    c.handle_link(Time::ZERO, PortNum(1), UP);
    c.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    assert!(drain(&mut c).is_empty());
    assert_eq!(
        discards(&mut c),
        vec![Discard::Smi(DiscardReason::NotPermissive)]
    );
}

#[test]
fn c14_9_3_end_of_path_is_answered_back_out_the_ingress_port() {
    let mut a = up_switch(4);
    let s = dr(Method::GET, SmpAttrId::NODE_INFO, 0, &[3]);
    a.handle_mad(Time::ZERO, &meta(2), s.as_bytes());
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    let (t, r) = &out[0];
    assert_eq!(t.meta.port, PortNum(2));
    assert_eq!(r.method(), Method::GET_RESP);
    assert_eq!(r.status(), Status::OK);
    assert!(r.direction());
    assert_eq!(
        r.hop_ptr, 1,
        "responder moved it back from hop_cnt+1 (C14-13:1)"
    );
    assert_eq!(r.return_path[1], 2);
    assert_eq!(a.stats().answered, 1);
}

#[test]
fn c14_9_4_zero_hop_smp_is_answered_to_the_local_sm() {
    let mut c = ca(0x500, 1);
    let r = get(&mut c, 1, SmpAttrId::NODE_INFO, 0);
    assert!(r.direction());
    assert_eq!(r.hop_ptr, 0);
    assert_eq!(r.hop_cnt, 0);
}

#[test]
fn c14_9_5_unreasonable_hop_pointer_is_dropped() {
    let mut a = up_switch(4);
    let mut s = req(&[1, 2]);
    s.hop_ptr = 9;
    a.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    assert!(drain(&mut a).is_empty());
    assert_eq!(
        discards(&mut a),
        vec![Discard::Smi(DiscardReason::BadHopPtr)]
    );
}

#[test]
fn c14_13_2_returning_smp_forwarded_along_return_path() {
    let mut a = up_switch(4);
    let mut s = req(&[1, 3, 2]);
    s.set_direction(true);
    s.method = Method::GET_RESP.0;
    s.hop_ptr = 2;
    s.return_path[1] = 4;
    s.return_path[2] = 1;
    a.handle_mad(Time::ZERO, &meta(3), s.as_bytes());
    let out = drain(&mut a);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.meta.port, PortNum(4), "egress = ReturnPath[1]");
    assert_eq!(out[0].1.hop_ptr, 1);
}

#[test]
fn c14_13_3_end_of_return_path_goes_to_the_sm() {
    let mut c = ca(0x500, 1);
    c.handle_link(Time::ZERO, PortNum(1), UP);
    let mut s = req(&[1]);
    s.set_direction(true);
    s.method = Method::GET_RESP.0;
    s.hop_ptr = 1;
    c.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    assert!(drain(&mut c).is_empty());
    let ev = events(&mut c);
    let mad = ev
        .iter()
        .find_map(|e| match e {
            Event::ForSm { mad, meta } if meta.port == PortNum(1) => Some(mad),
            _ => None,
        })
        .expect("handed to the SM");
    assert_eq!(mad[6], 0, "hop pointer 0 at the SM");
    assert_eq!(c.stats().to_sm, 1);
}

#[test]
fn end_of_return_path_stays_in_a_lent_buffer() {
    let mut s = req(&[1]);
    s.set_direction(true);
    s.method = Method::GET_RESP.0;
    s.hop_ptr = 1;
    let mut c = ca(0x500, 1);
    c.handle_link(Time::ZERO, PortNum(1), UP);
    let _ = events(&mut c);
    let mut buf = s.as_bytes().to_vec();
    let lent = c.handle_mad_lent(Time::ZERO, &meta(1), &mut buf);
    assert!(
        matches!(lent, Some(sma::Lent::ForSm(m)) if m.port == PortNum(1)),
        "{lent:?}"
    );
    assert_eq!(buf[6], 0, "hop pointer 0 at the SM, in the lent buffer");
    assert!(drain(&mut c).is_empty());
    assert!(events(&mut c).is_empty(), "no boxed copy besides");
    assert_eq!(c.stats().to_sm, 1);
    // Behind an event already queued (the link coming up), it stays an event, in order.
    let mut c = ca(0x500, 1);
    c.handle_link(Time::ZERO, PortNum(1), UP);
    let mut buf = s.as_bytes().to_vec();
    assert_eq!(c.handle_mad_lent(Time::ZERO, &meta(1), &mut buf), None);
    let ev = events(&mut c);
    let at = ev
        .iter()
        .position(|e| matches!(e, Event::ForSm { mad, .. } if mad[6] == 0))
        .expect("handed to the SM");
    assert!(at > 0, "{ev:?}");
    assert_eq!(c.stats().to_sm, 1);
}

#[test]
fn c14_13_5_unreasonable_return_hop_pointer_is_dropped() {
    let mut a = up_switch(4);
    let mut s = req(&[1]);
    s.set_direction(true);
    s.hop_ptr = 7;
    a.handle_mad(Time::ZERO, &meta(1), s.as_bytes());
    assert!(drain(&mut a).is_empty());
    assert_eq!(
        discards(&mut a),
        vec![Discard::Smi(DiscardReason::BadHopPtr)]
    );
}

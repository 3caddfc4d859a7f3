//! Port state machine through the agent (IBA vol1 §7.2, §14.2.5.6): link events, Sets of
//! PortState and PortPhysicalState, switch port 0, trap-free bookkeeping, reset.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::{PhysState, PortNum, PortState, Status, Time};
use sma::{Event, LinkEvent, LinkRequest};

/// Brings CA port 1 to `state` the legal way.
fn ca_in(state: PortState) -> sma::Agent<Recorder> {
    let mut a = rec_ca(0x500, 1);
    if state == PortState::DOWN {
        return a;
    }
    a.handle_link(Time::ZERO, PortNum(1), UP);
    for s in [PortState::ARMED, PortState::ACTIVE] {
        if port_info(&a, 1).port_state() == state {
            break;
        }
        let mut pi = pi_template(&a, 1);
        pi.set_port_state(s);
        assert_eq!(set_pi(&mut a, 1, 1, &pi).status(), Status::OK);
    }
    assert_eq!(port_info(&a, 1).port_state(), state);
    a.hardware_mut().link_requests.clear();
    a
}

/// Table-driven: (current, requested PortState) → status and resulting state, through the
/// real Set path. A Set arriving on a Down port is delivered by the local SM (0-hop).
#[test]
fn s7_2_port_state_sets_through_the_agent() {
    use PortState as S;
    let (ok, bad) = (Status::OK, Status::INVALID_FIELD);
    let table = [
        (S::DOWN, S::ARMED, bad, S::DOWN),
        (S::DOWN, S::ACTIVE, bad, S::DOWN),
        (S::DOWN, S::INIT, bad, S::DOWN),
        (S::DOWN, S::DOWN, ok, S::DOWN),
        (S::INIT, S::ARMED, ok, S::ARMED),
        (S::INIT, S::ACTIVE, bad, S::INIT),
        (S::INIT, S::INIT, ok, S::INIT),
        (S::INIT, S::DOWN, ok, S::DOWN),
        (S::ARMED, S::ACTIVE, ok, S::ACTIVE),
        (S::ARMED, S::INIT, bad, S::ARMED),
        (S::ARMED, S::ARMED, ok, S::ARMED),
        (S::ARMED, S::DOWN, ok, S::DOWN),
        (S::ACTIVE, S::ARMED, bad, S::ACTIVE),
        (S::ACTIVE, S::ACTIVE, ok, S::ACTIVE),
        (S::ACTIVE, S::DOWN, ok, S::DOWN),
        (S::ACTIVE, S::NO_CHANGE, ok, S::ACTIVE),
    ];
    for (from, req, want_status, want_state) in table {
        let mut a = ca_in(from);
        let mut pi = pi_template(&a, 1);
        pi.set_port_state(req);
        let r = set_pi(&mut a, 1, 1, &pi);
        assert_eq!(r.status(), want_status, "{from:?} -> {req:?}");
        assert_eq!(
            port_info(&a, 1).port_state(),
            want_state,
            "{from:?} -> {req:?}"
        );
        let downed = a
            .hardware()
            .link_requests
            .contains(&(PortNum(1), LinkRequest::Down));
        assert_eq!(
            downed,
            req == S::DOWN,
            "{from:?} -> {req:?}: hardware told to drop the link"
        );
    }
}

#[test]
fn link_up_brings_down_to_init_and_link_down_back() {
    let mut a = ca(0x500, 1);
    let pi = port_info(&a, 1);
    assert_eq!(
        (pi.port_state(), pi.phys_state()),
        (PortState::DOWN, PhysState::POLLING)
    );
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let pi = port_info(&a, 1);
    assert_eq!(
        (pi.port_state(), pi.phys_state()),
        (PortState::INIT, PhysState::LINK_UP)
    );
    a.handle_link(Time::ZERO, PortNum(1), LinkEvent::Down);
    let pi = port_info(&a, 1);
    assert_eq!(
        (pi.port_state(), pi.phys_state()),
        (PortState::DOWN, PhysState::POLLING)
    );
    let ev = events(&mut a);
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, Event::PortStateChanged { .. }))
            .count(),
        2
    );
}

#[test]
fn active_port_link_flap_goes_down_then_init() {
    let mut a = ca_in(PortState::ACTIVE);
    a.handle_link(Time::ZERO, PortNum(1), LinkEvent::Down);
    assert_eq!(port_info(&a, 1).port_state(), PortState::DOWN);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    assert_eq!(
        port_info(&a, 1).port_state(),
        PortState::INIT,
        "never straight back to Active"
    );
}

#[test]
fn phys_disable_and_poll() {
    let mut a = ca_in(PortState::ACTIVE);
    let mut pi = pi_template(&a, 1);
    pi.set_phys_state(PhysState::DISABLED);
    assert_eq!(set_pi(&mut a, 1, 1, &pi).status(), Status::OK);
    let p = port_info(&a, 1);
    assert_eq!(
        (p.port_state(), p.phys_state()),
        (PortState::DOWN, PhysState::DISABLED)
    );
    assert_eq!(
        a.hardware().link_requests,
        vec![(PortNum(1), LinkRequest::Disable)]
    );
    // A disabled port ignores the carrier's link-up.
    a.handle_link(Time::ZERO, PortNum(1), UP);
    assert_eq!(port_info(&a, 1).phys_state(), PhysState::DISABLED);
    let mut pi = pi_template(&a, 1);
    pi.set_phys_state(PhysState::POLLING);
    assert_eq!(set_pi(&mut a, 1, 1, &pi).status(), Status::OK);
    assert_eq!(port_info(&a, 1).phys_state(), PhysState::POLLING);
    assert_eq!(
        a.hardware().link_requests[1],
        (PortNum(1), LinkRequest::Poll)
    );
    a.handle_link(Time::ZERO, PortNum(1), UP);
    assert_eq!(port_info(&a, 1).port_state(), PortState::INIT);
}

#[test]
fn switch_port0_is_link_up_and_settable() {
    // A base port 0 is Active from power-up (ibsim and real switches; OpenSM never drives it).
    let mut a = rec_switch(0x700, 4);
    let p0 = port_info(&a, 0);
    assert_eq!(
        (p0.port_state(), p0.phys_state()),
        (PortState::ACTIVE, PhysState::LINK_UP)
    );
    let mut pi = pi_template(&a, 0);
    pi.set_port_state(PortState::DOWN);
    assert_eq!(set_pi(&mut a, 0, 0, &pi).status(), Status::OK);
    assert_eq!(
        port_info(&a, 0).port_state(),
        PortState::INIT,
        "no link: straight back to Init"
    );
    for s in [PortState::ARMED, PortState::ACTIVE] {
        let mut pi = pi_template(&a, 0);
        pi.set_port_state(s);
        assert_eq!(set_pi(&mut a, 0, 0, &pi).status(), Status::OK);
        assert_eq!(port_info(&a, 0).port_state(), s);
    }
    let mut pi = pi_template(&a, 0);
    pi.set_phys_state(PhysState::DISABLED);
    assert_eq!(set_pi(&mut a, 0, 0, &pi).status(), Status::INVALID_FIELD);
    assert!(a.hardware().link_requests.is_empty());
    // The carrier's link events do not apply to port 0.
    a.handle_link(Time::ZERO, PortNum(0), LinkEvent::Down);
    assert_eq!(port_info(&a, 0).phys_state(), PhysState::LINK_UP);

    // An enhanced port 0 starts in Init; the SM arms and activates it like an end port.
    let mut cfg = common::switch_cfg(0x701, 4);
    cfg.enhanced_port0 = true;
    let e = sma::Agent::new(cfg, sma::NoHardware).unwrap();
    assert_eq!(
        e.port_info(PortNum(0)).unwrap().port_state(),
        PortState::INIT
    );
}

#[test]
fn switch_external_link_changes_set_port_state_change() {
    let mut a = switch(0x700, 4);
    assert_eq!(a.switch_info().unwrap().port_state_change(), 0);
    a.handle_link(Time::ZERO, PortNum(2), UP);
    assert_eq!(a.switch_info().unwrap().port_state_change(), 1);
    let mut si = a.switch_info().unwrap();
    si.set_port_state_change(1);
    set(
        &mut a,
        0,
        ibmad::SmpAttrId::SWITCH_INFO,
        0,
        ibmad::zerocopy::IntoBytes::as_bytes(&si),
    );
    assert_eq!(a.switch_info().unwrap().port_state_change(), 0);
    // Init -> Armed by Set is not a link-state-machine change: PSC stays clear.
    let mut pi = pi_template(&a, 2);
    pi.set_port_state(PortState::ARMED);
    assert_eq!(set_pi(&mut a, 0, 2, &pi).status(), Status::OK);
    assert_eq!(a.switch_info().unwrap().port_state_change(), 0);
    a.handle_link(Time::ZERO, PortNum(2), LinkEvent::Down);
    assert_eq!(a.switch_info().unwrap().port_state_change(), 1);
}

#[test]
fn reset_forgets_everything_the_sm_set_but_keeps_links() {
    let mut a = switch(0x700, 4);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let mut p0 = pi_template(&a, 0);
    p0.lid.set(5);
    p0.master_sm_lid.set(0x77);
    set_pi(&mut a, 0, 0, &p0);
    let mut pi = pi_template(&a, 1);
    pi.set_port_state(PortState::ARMED);
    set_pi(&mut a, 0, 1, &pi);
    let mut si = a.switch_info().unwrap();
    si.linear_fdb_top.set(63);
    set(
        &mut a,
        0,
        ibmad::SmpAttrId::SWITCH_INFO,
        0,
        ibmad::zerocopy::IntoBytes::as_bytes(&si),
    );
    set(&mut a, 0, ibmad::SmpAttrId::LINEAR_FT, 0, &[1u8; 64]);
    assert_eq!(a.lft_port(ibmad::Lid(5)), Some(PortNum(1)));
    a.reset(Time::ZERO);
    assert_eq!(port_info(&a, 0).lid.get(), 0);
    assert_eq!(port_info(&a, 0).master_sm_lid.get(), 0);
    assert_eq!(
        port_info(&a, 1).port_state(),
        PortState::INIT,
        "link still up: Init"
    );
    assert_eq!(port_info(&a, 1).phys_state(), PhysState::LINK_UP);
    assert_eq!(port_info(&a, 2).port_state(), PortState::DOWN);
    assert_eq!(a.lft_port(ibmad::Lid(5)), None);
    assert_eq!(a.switch_info().unwrap().linear_fdb_top.get(), 0);
    assert_eq!(
        get(&mut a, 0, ibmad::SmpAttrId::LINEAR_FT, 0).data,
        [0xFF; 64]
    );
}

#[test]
fn link_up_on_an_up_port_only_updates_the_active_values() {
    let mut a = switch(0x700, 4);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let _ = events(&mut a);
    let mut si = a.switch_info().unwrap();
    si.set_port_state_change(1);
    set(
        &mut a,
        0,
        ibmad::SmpAttrId::SWITCH_INFO,
        0,
        ibmad::zerocopy::IntoBytes::as_bytes(&si),
    );
    let _ = events(&mut a);
    a.handle_link(
        Time::ZERO,
        PortNum(1),
        LinkEvent::Up {
            width_active: 1,
            speed_active: 1,
            speed_ext_active: 0,
        },
    );
    let p = port_info(&a, 1);
    assert_eq!((p.link_width_active, p.link_speed_active()), (1, 1));
    assert_eq!(p.port_state(), PortState::INIT);
    assert!(events(&mut a).is_empty(), "no state change, no event");
    assert_eq!(a.switch_info().unwrap().port_state_change(), 0);
}

#[test]
fn link_events_for_missing_ports_are_ignored() {
    let mut a = ca(0x500, 1);
    a.handle_link(Time::ZERO, PortNum(0), UP);
    a.handle_link(Time::ZERO, PortNum(2), UP);
    assert!(events(&mut a).is_empty());
    assert!(a.port_info(PortNum(0)).is_none());
    assert!(a.port_info(PortNum(2)).is_none());
}

/// Set PortState=Down on the very port the request came in on: the port is logically Down at
/// once, the GetResp still goes out (the link drops when the carrier says so), and the
/// link-up that follows retraining brings it back to Init.
#[test]
fn set_down_on_the_ingress_port_still_answers() {
    let mut a = rec_switch(0x700, 4);
    a.handle_link(Time::ZERO, PortNum(2), UP);
    let mut pi = pi_template(&a, 2);
    pi.set_port_state(PortState::DOWN);
    let mut req = dr(ibmad::Method::SET, ibmad::SmpAttrId::PORT_INFO, 2, &[2]);
    req.data
        .copy_from_slice(ibmad::zerocopy::IntoBytes::as_bytes(&pi));
    a.handle_mad(
        Time::ZERO,
        &meta(2),
        ibmad::zerocopy::IntoBytes::as_bytes(&req),
    );
    let out = drain(&mut a);
    assert_eq!(out.len(), 1, "the GetResp leaves before the link drops");
    assert_eq!(out[0].0.meta.port, PortNum(2));
    assert_eq!(out[0].1.status(), Status::OK);
    let p = port_info(&a, 2);
    assert_eq!(
        (p.port_state(), p.phys_state()),
        (PortState::DOWN, PhysState::LINK_UP)
    );
    assert_eq!(
        a.hardware().link_requests,
        vec![(PortNum(2), LinkRequest::Down)]
    );
    a.handle_link(Time::ZERO, PortNum(2), LinkEvent::Down);
    assert_eq!(port_info(&a, 2).phys_state(), PhysState::POLLING);
    a.handle_link(Time::ZERO, PortNum(2), UP);
    assert_eq!(port_info(&a, 2).port_state(), PortState::INIT);
}

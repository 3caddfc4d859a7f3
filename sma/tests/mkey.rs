//! M_Key protection through the agent (IBA vol1 §14.2.4): levels 0–3, M_KeyViolations,
//! lease timer, trap 256.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::attr::PortInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{Lid, Method, PortNum, SmpAttrId, Status, Time, TrapNum};
use sma::{Event, Timer};

const KEY: u64 = 0x1122_3344_5566_7788;

/// A CA whose port 1 is up, has LID 3, master SM LID 1, M_Key KEY at `protect`, lease `lease`.
fn protected(protect: u8, lease: u16) -> sma::Agent {
    let mut a = ca(0x500, 1);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let mut pi = pi_template(&a, 1);
    pi.lid.set(3);
    pi.master_sm_lid.set(1);
    pi.m_key.set(KEY);
    pi.set_m_key_protect_bits(protect);
    pi.m_key_lease_period.set(lease);
    assert_eq!(set_pi(&mut a, 1, 1, &pi).status(), Status::OK);
    let _ = events(&mut a);
    a
}

fn get_with(a: &mut sma::Agent, key: u64) -> Option<ibmad::Smp> {
    let mut req = dr(Method::GET, SmpAttrId::PORT_INFO, 0, &[]);
    req.m_key.set(key);
    local(a, 1, req)
}

#[test]
fn s14_2_4_get_with_wrong_key_per_level() {
    for protect in 0..=3u8 {
        let mut a = protected(protect, 0);
        let r = get_with(&mut a, 0xBAD);
        match protect {
            0 => {
                let pi = PortInfo::read_from_prefix(&r.unwrap().data).unwrap().0;
                assert_eq!(pi.m_key.get(), KEY, "level 0 returns the key");
            }
            1 => {
                let pi = PortInfo::read_from_prefix(&r.unwrap().data).unwrap().0;
                assert_eq!(pi.m_key.get(), 0, "level 1 masks the key");
                assert_eq!(pi.lid.get(), 3, "other fields still returned");
            }
            _ => assert!(r.is_none(), "level {protect}: dropped silently"),
        }
        let violations = port_info(&a, 1).m_key_violations.get();
        assert_eq!(violations, u16::from(protect >= 2), "level {protect}");
        // The right key always works and returns the key.
        let pi = PortInfo::read_from_prefix(&get_with(&mut a, KEY).unwrap().data)
            .unwrap()
            .0;
        assert_eq!(pi.m_key.get(), KEY);
    }
}

#[test]
fn s14_2_4_set_with_wrong_key_always_fails_and_changes_nothing() {
    for protect in 0..=3u8 {
        let mut a = protected(protect, 0);
        let before = port_info(&a, 1);
        let mut pi = pi_template(&a, 1);
        pi.lid.set(44);
        let mut req = dr(Method::SET, SmpAttrId::PORT_INFO, 1, &[]);
        req.data.copy_from_slice(pi.as_bytes());
        req.m_key.set(0xBAD);
        assert!(
            local(&mut a, 1, req).is_none(),
            "level {protect}: no response"
        );
        let after = port_info(&a, 1);
        assert_eq!(after.lid.get(), 3);
        assert_eq!(
            after.m_key_violations.get(),
            before.m_key_violations.get() + 1
        );
        assert!(events(&mut a)
            .iter()
            .any(|e| matches!(e, Event::MKeyViolation { .. })));
        // With the key the Set goes through.
        req.m_key.set(KEY);
        let r = local(&mut a, 1, req).unwrap();
        assert_eq!(r.status(), Status::OK);
        assert_eq!(port_info(&a, 1).lid.get(), 44);
    }
}

#[test]
fn s14_2_4_violation_sends_trap_256_to_the_master_sm() {
    let mut a = protected(2, 0);
    let _ = drain(&mut a);
    let mut req = dr(Method::SET, SmpAttrId::PORT_INFO, 1, &[]);
    req.m_key.set(0xBAD);
    req.attr_mod.set(1);
    a.handle_mad(Time::ZERO, &meta(1), req.as_bytes());
    let out = drain(&mut a);
    assert_eq!(out.len(), 1, "only the trap, no response");
    let (t, s) = &out[0];
    assert_eq!(s.method(), Method::TRAP);
    assert!(!s.is_dr());
    assert_eq!(s.attr(), SmpAttrId::NOTICE);
    assert_eq!(
        (t.meta.slid, t.meta.dlid, t.meta.port),
        (Lid(3), Lid(1), PortNum(1))
    );
    let n = ibmad::attr::Notice::read_from_prefix(&s.data).unwrap().0;
    assert_eq!(n.trap_num(), TrapNum::BAD_M_KEY);
    assert_eq!(n.issuer_lid(), Lid(3));
    assert_eq!(n.data_details[6], Method::SET.0);
    assert_eq!(
        &n.data_details[8..10],
        &SmpAttrId::PORT_INFO.0.to_be_bytes()
    );
    assert_eq!(&n.data_details[14..22], &0xBADu64.to_be_bytes());
    assert_eq!(n.data_details[23] & 0x80, 0x80, "DR notice");
}

#[test]
fn s14_2_4_lease_expiry_clears_protection() {
    let mut a = protected(3, 10);
    assert_eq!(
        a.timer(Timer::MKeyLease),
        None,
        "lease timer idle until a violation"
    );
    assert!(get_with(&mut a, 0xBAD).is_none());
    let deadline = a.timer(Timer::MKeyLease).unwrap();
    assert_eq!(deadline, Time::ZERO + core::time::Duration::from_secs(10));
    // A second violation does not restart the timer.
    a.handle_timeout(Time::from_millis(5000));
    assert!(get_with(&mut a, 0xBAD).is_none());
    assert_eq!(a.timer(Timer::MKeyLease), Some(deadline));
    a.handle_timeout(deadline);
    assert_eq!(port_info(&a, 1).m_key_protect_bits(), 0);
    assert!(events(&mut a).contains(&Event::MKeyLeaseExpired { port: PortNum(1) }));
    // Protection is gone: a Get with any key now succeeds and shows the key (level 0).
    let pi = PortInfo::read_from_prefix(&get_with(&mut a, 0xBAD).unwrap().data)
        .unwrap()
        .0;
    assert_eq!(pi.m_key.get(), KEY);
}

#[test]
fn s14_2_4_right_key_stops_the_lease_timer() {
    let mut a = protected(3, 10);
    assert!(get_with(&mut a, 0xBAD).is_none());
    assert!(a.timer(Timer::MKeyLease).is_some());
    assert!(get_with(&mut a, KEY).is_some());
    assert_eq!(a.timer(Timer::MKeyLease), None);
    a.handle_timeout(Time::from_millis(60_000));
    assert_eq!(port_info(&a, 1).m_key_protect_bits(), 3);
}

#[test]
fn switch_m_key_lives_in_port0() {
    let mut a = switch(0x700, 4);
    let mut p0 = pi_template(&a, 0);
    p0.m_key.set(KEY);
    p0.set_m_key_protect_bits(2);
    assert_eq!(set_pi(&mut a, 0, 0, &p0).status(), Status::OK);
    a.handle_link(Time::ZERO, PortNum(3), UP);
    let mut req = dr(Method::GET, SmpAttrId::NODE_INFO, 0, &[]);
    req.m_key.set(0xBAD);
    assert!(
        local(&mut a, 3, req).is_none(),
        "ingress port 3, key of port 0"
    );
    assert_eq!(port_info(&a, 0).m_key_violations.get(), 1);
}

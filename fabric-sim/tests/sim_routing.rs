//! LID-routed forwarding through LFTs programmed by hand with PortInfo / LFT / SwitchInfo Sets,
//! port-state gating, and SM attachment rules.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use std::time::Duration;

use fabric_sim::sim::{DropReason, SimConfig, SimError, TraceKind};
use ibmad::attr::{NodeInfo, PortInfo};
use ibmad::zerocopy::IntoBytes;
use ibmad::{Lid, MadPort, Method, PhysState, PortNum, PortState, SmpAttrId, Status};
use sim_util::*;

#[test]
fn lid_routed_get_follows_the_lfts_and_the_answer_comes_back() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_fdisc_lids(&mut f, sm);

    let s0 = *f.stats();
    let (meta, resp) = lid_get(&mut f, sm, Lid(5), SmpAttrId::NODE_INFO, 0, 0x77).unwrap();
    assert_eq!(resp.method(), Method::GET_RESP);
    assert_eq!(resp.status(), Status::OK);
    assert!(!resp.is_dr());
    let ni: NodeInfo = attr(&resp);
    let h10 = f.node_by_name("H10").unwrap();
    assert_eq!(ni.node_guid(), f.topology().node(h10).unwrap().guid());
    assert_eq!(ni.local_port_num, 1);
    // The response is addressed to the SM port's LID and comes from H10's.
    assert_eq!(meta.dlid, Lid(1));
    assert_eq!(meta.slid, Lid(5));
    let s1 = *f.stats();
    // SM→C→A→D→H10 and back: 8 link hops, the three switches forward each way by LFT.
    assert_eq!(s1.hops - s0.hops, 8);
    assert_eq!(s1.lid_forwarded - s0.lid_forwarded, 6);

    // A switch answers for its own LID (port 0): only C forwards, both ways.
    let (_, resp) = lid_get(&mut f, sm, Lid(3), SmpAttrId::NODE_INFO, 0, 0x78).unwrap();
    let ni: NodeInfo = attr(&resp);
    let a = f.node_by_name("A").unwrap();
    assert_eq!(ni.node_guid(), f.topology().node(a).unwrap().guid());
    let s2 = *f.stats();
    assert_eq!(s2.hops - s1.hops, 4);
    assert_eq!(s2.lid_forwarded - s1.lid_forwarded, 2);
}

#[test]
fn unrouted_and_misaddressed_lids_are_dropped_and_counted() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_fdisc_lids(&mut f, sm);
    let before = f.stats().dropped;
    // LID 9 is above C's LinearFDBTop: no route.
    assert!(lid_get(&mut f, sm, Lid(9), SmpAttrId::NODE_INFO, 0, 1).is_none());
    assert_eq!(
        f.stats().dropped.get(DropReason::NoRoute) - before.get(DropReason::NoRoute),
        1
    );
    // LID 6 is routed by C back to the SM host, whose port does not own it.
    assert!(lid_get(&mut f, sm, Lid(6), SmpAttrId::NODE_INFO, 0, 2).is_none());
    assert_eq!(
        f.stats().dropped.get(DropReason::DlidMismatch) - before.get(DropReason::DlidMismatch),
        1
    );
}

#[test]
fn lid_routing_needs_programmed_lfts() {
    // Before any LFT is written every entry is 0xFF: the first switch drops the SMP.
    let (mut f, sm) = fdisc(SimConfig::default());
    set_lid(&mut f, sm, "0", 1, 1);
    set_lid(&mut f, sm, "0,1,4,2,3", 1, 5);
    assert!(lid_get(&mut f, sm, Lid(5), SmpAttrId::NODE_INFO, 0, 3).is_none());
    assert_eq!(f.stats().dropped.get(DropReason::NoRoute), 1);
}

#[test]
fn ports_come_up_in_init_after_cabling() {
    let (f, _) = fdisc(SimConfig::default());
    let d = f.node_by_name("D").unwrap();
    let agent = f.agent(d).unwrap();
    for p in 1..=5 {
        let pi = agent.port_info(PortNum(p)).unwrap();
        assert_eq!(pi.port_state(), PortState::INIT, "D.p{p}");
        assert_eq!(pi.phys_state(), PhysState::LINK_UP, "D.p{p}");
        assert!(f.is_link_up(d, PortNum(p)));
    }
    // D.p6..8 have no cable.
    let pi = agent.port_info(PortNum(6)).unwrap();
    assert_eq!(pi.port_state(), PortState::DOWN);
    assert_eq!(pi.phys_state(), PhysState::POLLING);
}

#[test]
fn a_down_link_carries_nothing() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let a = f.node_by_name("A").unwrap();
    assert!(dr_get(&mut f, sm, "0,1,4,2", SmpAttrId::NODE_INFO, 0, 1).is_some());
    f.set_link(a, PortNum(2), false).unwrap();
    assert!(!f.is_link_up(a, PortNum(2)));
    let d = f.node_by_name("D").unwrap();
    assert_eq!(
        f.agent(d)
            .unwrap()
            .port_info(PortNum(1))
            .unwrap()
            .port_state(),
        PortState::DOWN
    );
    let hops = f.stats().hops;
    assert!(dr_get(&mut f, sm, "0,1,4,2", SmpAttrId::NODE_INFO, 0, 2).is_none());
    // The SMP got as far as A (2 hops) and no further.
    assert_eq!(f.stats().hops - hops, 2);
    // Restoring the cable brings both ends back to Init and the path works again.
    f.set_link(a, PortNum(2), true).unwrap();
    assert_eq!(
        f.agent(d)
            .unwrap()
            .port_info(PortNum(1))
            .unwrap()
            .port_state(),
        PortState::INIT
    );
    assert!(dr_get(&mut f, sm, "0,1,4,2", SmpAttrId::NODE_INFO, 0, 3).is_some());
}

#[test]
fn a_mad_in_flight_on_a_link_that_goes_down_is_lost() {
    let cfg = SimConfig {
        hop_latency: Duration::from_micros(10),
        ..SimConfig::default()
    };
    let (mut f, sm) = fdisc(cfg);
    let c = f.node_by_name("C").unwrap();
    let req = ibmad::Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        1,
        &ibmad::DrPath::parse("0,1,4").unwrap(),
    );
    f.sm_port(sm).send(&dr_meta(), req.as_bytes()).unwrap();
    // C forwards at t = 10 us; the SMP is on the C–A cable until t = 20 us.
    let cut = f.now() + Duration::from_micros(15);
    f.schedule_link(cut, c, PortNum(4), false).unwrap();
    settle(&mut f, Duration::from_millis(1));
    assert!(drain(&mut f, sm).is_empty());
    assert_eq!(f.stats().dropped.get(DropReason::PortDown), 1);
}

#[test]
fn sm_set_port_state_down_takes_the_link_down_and_it_retrains() {
    let cfg = SimConfig {
        link_retrain_time: Duration::from_millis(2),
        trace: true,
        ..SimConfig::default()
    };
    let (mut f, sm) = fdisc(cfg);
    let initial = f.stats().link_changes;
    assert_eq!(initial, 2 * 9, "9 cables, both ends came up");
    // PortInfo Set PortState=Down on A's port 3 (towards E).
    let got = dr_get(&mut f, sm, "0,1,4", SmpAttrId::PORT_INFO, 3, 1).unwrap();
    let mut pi: PortInfo = attr(&got);
    pi.set_port_state(PortState::DOWN);
    pi.set_phys_state_raw(0);
    let r = dr_set(
        &mut f,
        sm,
        "0,1,4",
        SmpAttrId::PORT_INFO,
        3,
        2,
        pi.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status(), Status::OK);
    f.run_until(f.now() + Duration::from_millis(5));
    let (a, e) = (f.node_by_name("A").unwrap(), f.node_by_name("E").unwrap());
    assert!(f.is_link_up(a, PortNum(3)));
    assert_eq!(
        f.agent(e)
            .unwrap()
            .port_info(PortNum(1))
            .unwrap()
            .port_state(),
        PortState::INIT
    );
    assert_eq!(
        f.stats().link_changes - initial,
        4,
        "both ends down, then up"
    );
    // Down on both ends at the Set, up on both ends one retraining time later.
    let ev: Vec<_> = f
        .trace()
        .iter()
        .filter(|t| matches!(t.kind, TraceKind::LinkDown | TraceKind::LinkUp))
        .filter(|t| t.time > ibmad::Time::ZERO)
        .map(|t| (t.kind, t.node, t.port, t.time))
        .collect();
    assert_eq!(ev.len(), 4, "{ev:?}");
    assert_eq!((ev[0].0, ev[0].1, ev[0].2), (TraceKind::LinkDown, a.0, 3));
    assert_eq!((ev[1].0, ev[1].1, ev[1].2), (TraceKind::LinkDown, e.0, 1));
    assert_eq!(ev[2].0, TraceKind::LinkUp);
    assert_eq!(ev[3].0, TraceKind::LinkUp);
    assert_eq!(ev[2].3 - ev[0].3, Duration::from_millis(2));
}

#[test]
fn sm_disable_keeps_the_link_down() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let got = dr_get(&mut f, sm, "0,1,4", SmpAttrId::PORT_INFO, 3, 1).unwrap();
    let mut pi: PortInfo = attr(&got);
    pi.set_port_state_raw(0);
    pi.set_phys_state(PhysState::DISABLED);
    let r = dr_set(
        &mut f,
        sm,
        "0,1,4",
        SmpAttrId::PORT_INFO,
        3,
        2,
        pi.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status(), Status::OK);
    f.run_until(f.now() + Duration::from_millis(50));
    let a = f.node_by_name("A").unwrap();
    assert!(!f.is_link_up(a, PortNum(3)));
    assert!(dr_get(&mut f, sm, "0,1,4,3", SmpAttrId::NODE_INFO, 0, 3).is_none());
    // Polling re-enables it.
    pi.set_phys_state(PhysState::POLLING);
    let r = dr_set(
        &mut f,
        sm,
        "0,1,4",
        SmpAttrId::PORT_INFO,
        3,
        4,
        pi.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status(), Status::OK);
    f.run_until(f.now() + Duration::from_millis(50));
    assert!(f.is_link_up(a, PortNum(3)));
    assert!(dr_get(&mut f, sm, "0,1,4,3", SmpAttrId::NODE_INFO, 0, 5).is_some());
}

#[test]
fn sm_attachment_rules() {
    let (mut f, _) = fdisc(SimConfig::default());
    let c = f.node_by_name("C").unwrap();
    assert!(matches!(
        f.attach_sm(c, PortNum(2)),
        Err(SimError::BadSmPort { .. })
    ));
    assert!(f.attach_sm(c, PortNum(0)).is_ok());
    assert!(matches!(
        f.attach_sm(c, PortNum(0)),
        Err(SimError::SmAlreadyAttached { .. })
    ));
    let h10 = f.node_by_name("H10").unwrap();
    assert!(matches!(
        f.attach_sm(h10, PortNum(2)),
        Err(SimError::NoSuchPort { .. })
    ));
    assert!(matches!(
        f.attach_sm_by_name("nope", PortNum(1)),
        Err(SimError::UnknownName(_))
    ));
    assert!(matches!(
        f.attach_sm_by_guid(ibmad::Guid(0xdead), PortNum(1)),
        Err(SimError::UnknownGuid(_))
    ));
}

#[test]
fn an_sm_on_switch_port_0_discovers_through_the_switch() {
    let (mut f, _) = fdisc(SimConfig::default());
    let c = f.node_by_name("C").unwrap();
    let sm = f.attach_sm(c, PortNum(0)).unwrap().handle;
    // 0 hops: C's own SMA, LocalPortNum 0.
    let r = dr_get(&mut f, sm, "0", SmpAttrId::NODE_INFO, 0, 1).unwrap();
    let ni: NodeInfo = attr(&r);
    assert_eq!(ni.local_port_num, 0);
    assert_eq!(ni.node_guid(), f.topology().node(c).unwrap().guid());
    // Out of C's port 4: A, which sees the SMP on its port 1.
    let r = dr_get(&mut f, sm, "0,4", SmpAttrId::NODE_INFO, 0, 2).unwrap();
    let ni: NodeInfo = attr(&r);
    assert_eq!(ni.local_port_num, 1);
    assert_eq!(r.return_path[1], 1);
    // Out of port 2: the SM host CA.
    let r = dr_get(&mut f, sm, "0,2", SmpAttrId::NODE_INFO, 0, 3).unwrap();
    let ni: NodeInfo = attr(&r);
    assert_eq!(ni.node_type(), ibmad::NodeType::CA);
}

#[test]
fn two_sms_each_get_only_their_own_answers() {
    let (mut f, sm1) = fdisc(SimConfig::default());
    let sm2 = f.attach_sm_by_name("H13", PortNum(1)).unwrap().handle;
    let p = ibmad::DrPath::parse("0,1,4").unwrap();
    let q1 = ibmad::Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 11, &p);
    // From H13: H13.p1 → D.p4, then D.p1 → A.p2.
    let p2 = ibmad::DrPath::parse("0,1,1").unwrap();
    let q2 = ibmad::Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 22, &p2);
    f.sm_port(sm1).send(&dr_meta(), q1.as_bytes()).unwrap();
    f.sm_port(sm2).send(&dr_meta(), q2.as_bytes()).unwrap();
    settle(&mut f, Duration::from_millis(10));
    let r1 = drain(&mut f, sm1);
    let r2 = drain(&mut f, sm2);
    assert_eq!(r1.len(), 1);
    assert_eq!(r2.len(), 1);
    assert_eq!(r1[0].1.tid.get(), 11);
    assert_eq!(r2[0].1.tid.get(), 22);
    let a1: NodeInfo = attr(&r1[0].1);
    let a2: NodeInfo = attr(&r2[0].1);
    assert_eq!(a1.node_guid(), a2.node_guid(), "both reached A");
    assert_eq!((a1.local_port_num, a2.local_port_num), (1, 2));
    assert_eq!(f.sm_stats(sm1).unwrap().sent, 1);
    assert_eq!(f.sm_stats(sm2).unwrap().received, 1);
}

#[test]
fn an_sminfo_get_reaches_the_other_sm_and_its_answer_comes_back() {
    // Two-SM set-up: the SMA of an SM's port hands SMInfo requests to that SM (IsSM is set
    // when it attaches); the SM answers through its own port.
    let (mut f, sm1) = fdisc(SimConfig::default());
    let h13 = f.node_by_name("H13").unwrap();
    let sm2 = f.attach_sm(h13, PortNum(1)).unwrap().handle;
    let pi = f.agent(h13).unwrap().port_info(PortNum(1)).unwrap();
    assert_ne!(
        pi.capability_mask.get() & ibmad::attr::port_info::cap::IS_SM,
        0
    );
    let path = ibmad::DrPath::parse("0,1,4,2,4").unwrap();
    let q = ibmad::Smp::dr_request(Method::GET, SmpAttrId::SM_INFO, 0, 0x51, &path);
    f.sm_port(sm1).send(&dr_meta(), q.as_bytes()).unwrap();
    settle(&mut f, Duration::from_millis(1));
    let got = drain(&mut f, sm2);
    assert_eq!(got.len(), 1, "SM2 receives the SMInfo Get");
    let (meta, mut req) = got.into_iter().next().unwrap();
    assert_eq!(meta.port, PortNum(1));
    assert_eq!(req.attr(), SmpAttrId::SM_INFO);
    assert_eq!(req.method(), Method::GET);
    // SM2 answers the way an SM does: make the response and send it back from its node.
    ibmad::smi::make_response(&mut req);
    f.sm_port(sm2).send(&dr_meta(), req.as_bytes()).unwrap();
    settle(&mut f, Duration::from_millis(1));
    let back = drain(&mut f, sm1);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].1.tid.get(), 0x51);
    assert_eq!(back[0].1.method(), Method::GET_RESP);
    assert_eq!(back[0].1.hop_ptr, 0);
}

#[test]
fn a_detached_sm_gets_nothing_and_its_port_is_closed() {
    let (mut f, sm1) = fdisc(SimConfig::default());
    let h13 = f.node_by_name("H13").unwrap();
    let sm2 = f.attach_sm(h13, PortNum(1)).unwrap().handle;
    f.detach_sm(sm2);
    let pi = f.agent(h13).unwrap().port_info(PortNum(1)).unwrap();
    assert_eq!(
        pi.capability_mask.get() & ibmad::attr::port_info::cap::IS_SM,
        0
    );
    assert!(matches!(
        f.sm_port(sm2).send(&dr_meta(), &[0u8; 256]),
        Err(ibmad::PortError::Closed)
    ));
    // Without IsSM the SMA answers SMInfo itself: "method/attribute not supported".
    let r = dr_get(&mut f, sm1, "0,1,4,2,4", SmpAttrId::SM_INFO, 0, 3).unwrap();
    assert_eq!(r.status(), Status::METHOD_ATTR_NOT_SUPPORTED);
    // The port can be attached again.
    assert!(f.attach_sm(h13, PortNum(1)).is_ok());
}

#[test]
fn an_sm_host_that_reboots_registers_its_sm_again() {
    let (mut f, _sm1) = fdisc(SimConfig::default());
    let h13 = f.node_by_name("H13").unwrap();
    let _sm2 = f.attach_sm(h13, PortNum(1)).unwrap();
    f.reboot(h13).unwrap();
    f.run_for(Duration::from_millis(5));
    let pi = f.agent(h13).unwrap().port_info(PortNum(1)).unwrap();
    assert_ne!(
        pi.capability_mask.get() & ibmad::attr::port_info::cap::IS_SM,
        0
    );
    assert_eq!(pi.port_state(), PortState::INIT);
}

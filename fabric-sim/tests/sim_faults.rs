//! Seeded fault injection, determinism, node reboot and muted SMAs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use std::time::Duration;

use fabric_sim::sim::{DropReason, Fabric, FaultConfig, SimConfig, SmHandle};
use ibmad::attr::{NodeInfo, PortInfo};
use ibmad::zerocopy::IntoBytes;
use ibmad::{DrPath, Lid, MadPort, Method, PortNum, PortState, Smp, SmpAttrId, Time};
use sim_util::*;

/// Sends `n` DR NodeInfo Gets to H10 (4 hops) spaced 1 µs apart and runs to completion.
/// Returns the number of distinct transactions answered (duplicates count once).
fn blast(f: &mut Fabric, sm: SmHandle, n: u64) -> usize {
    let path = DrPath::parse("0,1,4,2,3").unwrap();
    for i in 0..n {
        let q = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, i, &path);
        f.sm_port(sm).send(&dr_meta(), q.as_bytes()).unwrap();
        f.run_for(Duration::from_micros(1));
    }
    settle(f, Duration::from_secs(1));
    let tids: std::collections::BTreeSet<u64> =
        drain(f, sm).iter().map(|(_, r)| r.tid.get()).collect();
    tids.len()
}

fn with_faults(seed: u64, spec: &str) -> SimConfig {
    SimConfig {
        seed,
        faults: spec.parse().unwrap(),
        trace: true,
        ..SimConfig::default()
    }
}

#[test]
fn same_seed_same_run_different_seed_different_run() {
    let spec = "drop=0.05,dup=0.05,corrupt=0.05,delay=0.1:20us";
    let run = |seed| {
        let (mut f, sm) = fdisc(with_faults(seed, spec));
        let got = blast(&mut f, sm, 300);
        (got, *f.stats(), f.trace().to_vec())
    };
    let (g1, s1, t1) = run(42);
    let (g2, s2, t2) = run(42);
    assert_eq!(g1, g2);
    assert_eq!(s1, s2);
    assert_eq!(t1, t2, "identical event trace for the same seed");
    assert!(t1.len() > 1000);
    let (_, s3, t3) = run(43);
    assert_ne!(t1, t3, "a different seed changes the run");
    assert_ne!(s1.faults, s3.faults);
}

#[test]
fn without_faults_the_seed_does_not_matter() {
    let run = |seed| {
        let cfg = SimConfig {
            seed,
            trace: true,
            ..SimConfig::default()
        };
        let (mut f, sm) = fdisc(cfg);
        let got = blast(&mut f, sm, 50);
        (got, *f.stats(), f.trace().to_vec())
    };
    let (g1, s1, t1) = run(1);
    let (g2, s2, t2) = run(2);
    assert_eq!(g1, 50);
    assert_eq!((g1, s1), (g2, s2));
    assert_eq!(t1, t2);
}

#[test]
fn fault_statistics_match_the_configured_rates() {
    let cfg = SimConfig {
        seed: 7,
        faults: FaultConfig::parse("drop=0.1,dup=0.05,corrupt=0.02,delay=0.2:5us").unwrap(),
        ..SimConfig::default()
    };
    let (mut f, sm) = fdisc(cfg);
    let got = blast(&mut f, sm, 5000);
    let s = *f.stats();
    let tx = s.transmitted as f64;
    assert!(tx > 20_000.0, "{s}");
    let rate = |n: u64| n as f64 / tx;
    let drop = rate(s.faults.dropped);
    let dup = rate(s.faults.duplicated) / (1.0 - 0.1);
    let corrupt = rate(s.faults.corrupted) / (1.0 - 0.1);
    let delay = rate(s.faults.delayed) / (1.0 - 0.1);
    assert!((0.09..0.11).contains(&drop), "drop {drop}");
    assert!((0.04..0.06).contains(&dup), "dup {dup}");
    assert!((0.015..0.025).contains(&corrupt), "corrupt {corrupt}");
    assert!((0.18..0.22).contains(&delay), "delay {delay}");
    assert_eq!(s.dropped.get(DropReason::Fault), s.faults.dropped);
    // An 8-link round trip survives drops with probability 0.9^8 ≈ 0.43 (duplicates add a
    // few); corruption can also kill it.
    let ok = got as f64 / 5000.0;
    assert!((0.35..0.60).contains(&ok), "round trips {ok}");
}

#[test]
fn bad_fault_specs_are_rejected_with_a_clear_error() {
    let e = "drop=2".parse::<FaultConfig>().unwrap_err().to_string();
    assert!(e.contains("drop") && e.contains("probability"), "{e}");
    let e = "delay=0.1".parse::<FaultConfig>().unwrap_err().to_string();
    assert!(e.contains("RATE:DURATION"), "{e}");
}

#[test]
fn reboot_loses_sm_state_and_the_links_retrain() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_fdisc_lids(&mut f, sm);
    assert!(lid_get(&mut f, sm, Lid(5), SmpAttrId::NODE_INFO, 0, 1).is_some());
    let d = f.node_by_name("D").unwrap();
    assert_eq!(f.agent(d).unwrap().lft_port(Lid(5)), Some(PortNum(3)));

    f.reboot(d).unwrap();
    assert!(!f.is_link_up(d, PortNum(1)), "links drop at the reboot");
    let a = f.node_by_name("A").unwrap();
    assert_eq!(
        f.agent(a)
            .unwrap()
            .port_info(PortNum(2))
            .unwrap()
            .port_state(),
        PortState::DOWN,
        "the neighbour sees the link go down"
    );
    f.run_for(Duration::from_millis(5));
    assert!(f.is_link_up(d, PortNum(1)), "links retrain");
    assert_eq!(f.stats().reboots, 1);
    // The LFT and the LID are gone: LID-routed traffic to H10 now dies at D...
    assert_eq!(f.agent(d).unwrap().lft_port(Lid(5)), None);
    let before = f.stats().dropped.get(DropReason::NoRoute);
    assert!(lid_get(&mut f, sm, Lid(5), SmpAttrId::NODE_INFO, 0, 2).is_none());
    assert_eq!(f.stats().dropped.get(DropReason::NoRoute), before + 1);
    // ...and D's port 0 has LID 0 again, in its power-up state (a base port 0 is Active).
    let r = dr_get(&mut f, sm, "0,1,4,2", SmpAttrId::PORT_INFO, 0, 3).unwrap();
    let pi: PortInfo = attr(&r);
    assert_eq!(pi.lid.get(), 0);
    assert_eq!(pi.port_state(), PortState::ACTIVE);
    let r = dr_get(&mut f, sm, "0,1,4,2", SmpAttrId::PORT_INFO, 1, 4).unwrap();
    let pi: PortInfo = attr(&r);
    assert_eq!(pi.port_state(), PortState::INIT);
}

#[test]
fn scheduled_reboot_happens_at_its_time() {
    let (mut f, _sm) = fdisc(SimConfig::default());
    let h10 = f.node_by_name("H10").unwrap();
    let t = Time::from_millis(3);
    f.schedule_reboot(t, h10).unwrap();
    f.run_until(Time::from_millis(2));
    assert_eq!(f.stats().reboots, 0);
    f.run_until(Time::from_millis(3));
    assert_eq!(f.stats().reboots, 1);
    assert!(f.schedule_reboot(Time::from_millis(1), h10).is_err());
}

#[test]
fn a_muted_node_never_answers_but_still_forwards() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let a = f.node_by_name("A").unwrap();
    f.set_mute(a, true).unwrap();
    assert!(f.is_muted(a));
    for tid in 0..3 {
        assert!(dr_get(&mut f, sm, "0,1,4", SmpAttrId::NODE_INFO, 0, tid).is_none());
    }
    assert_eq!(f.stats().dropped.get(DropReason::Muted), 3);
    assert_eq!(f.agent(a).unwrap().stats().answered, 0);
    // Paths through A still work.
    let r = dr_get(&mut f, sm, "0,1,4,2,3", SmpAttrId::NODE_INFO, 0, 9).unwrap();
    let ni: NodeInfo = attr(&r);
    assert_eq!(ni.node_type(), ibmad::NodeType::CA);
    // Unmuted, it answers again.
    f.set_mute(a, false).unwrap();
    assert!(dr_get(&mut f, sm, "0,1,4", SmpAttrId::NODE_INFO, 0, 10).is_some());
}

#[test]
fn a_muted_switch_still_lid_routes() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_fdisc_lids(&mut f, sm);
    let a = f.node_by_name("A").unwrap();
    f.set_mute(a, true).unwrap();
    assert!(lid_get(&mut f, sm, Lid(3), SmpAttrId::NODE_INFO, 0, 1).is_none());
    assert!(lid_get(&mut f, sm, Lid(5), SmpAttrId::NODE_INFO, 0, 2).is_some());
}

#[test]
fn sm_port_rejects_what_is_not_an_smp() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let mut port = f.sm_port(sm);
    assert!(matches!(
        port.send(&dr_meta(), &[0u8; 100]),
        Err(ibmad::PortError::BadLength { len: 100, .. })
    ));
    let mut mad = [0u8; 256];
    mad[0] = 1;
    mad[1] = 0x03; // SA
    assert!(port.send(&dr_meta(), &mad).is_err());
    let mut small = [0u8; 10];
    assert!(matches!(port.recv(&mut small), Ok(None)));
}

#[test]
fn a_link_down_trap_reaches_the_sm_and_repeats_until_repressed() {
    let (mut f, sm) = fdisc(SimConfig::default());
    program_fdisc_lids(&mut f, sm);
    // A reports to the SM at LID 1.
    edit_port_info(&mut f, sm, "0,1,4", 0, |pi| pi.master_sm_lid.set(1));
    let a = f.node_by_name("A").unwrap();
    f.set_link(a, PortNum(3), false).unwrap();
    f.run_for(Duration::from_millis(1));
    let got = drain(&mut f, sm);
    assert_eq!(got.len(), 1, "{got:?}");
    let (meta, trap) = got[0];
    assert_eq!(trap.method(), Method::TRAP);
    assert_eq!(trap.attr(), SmpAttrId::NOTICE);
    assert!(!trap.is_dr());
    assert_eq!(meta.slid, Lid(3), "from A's LID");
    assert_eq!(meta.dlid, Lid(1), "to the SM's LID");
    let notice: ibmad::attr::Notice = attr(&trap);
    assert_eq!(notice.trap_num(), ibmad::TrapNum::LINK_STATE_CHANGE);

    // Unrepressed, the trap is sent again (with back-off).
    f.run_for(Duration::from_secs(2));
    let again = drain(&mut f, sm);
    assert!(!again.is_empty(), "trap 128 repeats until repressed");
    assert!(again.iter().all(|(_, t)| t.tid.get() == trap.tid.get()));

    // TrapRepress, LID-routed back to A: the repeats stop.
    let mut repress = trap;
    repress.method = Method::TRAP_REPRESS.0;
    f.sm_port(sm)
        .send(&lid_meta(Lid(3)), repress.as_bytes())
        .unwrap();
    f.run_for(Duration::from_millis(1));
    let _ = drain(&mut f, sm);
    f.run_for(Duration::from_secs(10));
    assert!(drain(&mut f, sm).is_empty(), "no trap after TrapRepress");
}

#[test]
fn virtual_time_follows_hop_latency_and_service_time() {
    let cfg = SimConfig {
        hop_latency: Duration::from_micros(1),
        sma_service_time: Duration::from_micros(10),
        ..SimConfig::default()
    };
    let (mut f, sm) = fdisc(cfg);
    let t0 = f.now();
    let path = DrPath::parse("0,1,4,2,3").unwrap();
    let q = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 1, &path);
    f.sm_port(sm).send(&dr_meta(), q.as_bytes()).unwrap();
    while f.sm_pending(sm) == 0 {
        f.step().expect("the response is on its way");
    }
    // 4 hops out, 4 back; the switches pass the SMP through at wire speed, H10's SMA takes
    // the service time, and the SM host hands the returning SMP to its SM on arrival.
    assert_eq!(f.now() - t0, Duration::from_micros(8 + 10));
}

#[test]
fn a_flaky_cable_loses_only_its_own_traffic() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let d = f.node_by_name("D").unwrap();
    // D.p3 – H10.p1 drops everything; the rest of the fabric is clean.
    f.set_link_faults(d, PortNum(3), Some("drop=1".parse().unwrap()))
        .unwrap();
    assert!(dr_get(&mut f, sm, "0,1,4,2,3", SmpAttrId::NODE_INFO, 0, 1).is_none());
    assert!(dr_get(&mut f, sm, "0,1,4,2,4", SmpAttrId::NODE_INFO, 0, 2).is_some());
    assert_eq!(f.stats().faults.dropped, 1);
    // Set from the other end, cleared: H10 answers again.
    let h10 = f.node_by_name("H10").unwrap();
    f.set_link_faults(h10, PortNum(1), None).unwrap();
    assert!(dr_get(&mut f, sm, "0,1,4,2,3", SmpAttrId::NODE_INFO, 0, 3).is_some());
    assert!(
        f.set_link_faults(d, PortNum(7), None).is_err(),
        "D.p7 has no cable"
    );
}

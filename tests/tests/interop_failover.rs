//! Failover with stock OpenSM as the peer SM (issue 12), in our simulated fabric served over
//! ibsim's protocol: an in-process ibsm (the `sm` core, driven on the server's clock) and
//! OpenSM as a shim client.
//!
//! - OpenSM master, ibsm standby: ibsm polls OpenSM (no re-discovery); OpenSM is killed by PID
//!   → ibsm is master within `sminfo_polling_timeout × (polling_retry_number + 1)` plus one
//!   sweep, every port keeps its LID and ibsm sends no LFT Set.
//! - ibsm master, OpenSM standby: OpenSM polls ibsm and reads a rising ActCount; ibsm dies →
//!   OpenSM takes over with the same LIDs.
//! - Handover both ways: a higher-priority OpenSM started second gets the subnet by ibsm's
//!   SMInfo Set HANDOVER (ibsm stands by and polls it, LIDs unchanged); a higher ibsm started
//!   second is handed the subnet by OpenSM (whichever of the two sees the other first), with
//!   never two masters. These run under our shim: OpenSM's trap 144 is retired by our
//!   TrapRepress only where a TrapRepress completes the trap's send, as the kernel's ib_mad
//!   does; under umad2sim the trap stays outstanding and OpenSM never finishes a sweep.
//!
//! Skipped loudly when the peers are missing, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use fabric_sim::ibsim_server::IbsimServer;
use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, Topology};
use ibmad::attr::SmInfo;
use ibmad::zerocopy::FromBytes;
use ibmad::{Direction, Lid, MadMeta, Method, NodeType, PortNum, Smp, SmpAttrId, Tap};
use sm::drive::Agents;
use umad::testutil::TempDir;

mod interop_util;
use interop_util::*;

/// An in-process ibsm on the served fabric, counting what it sends.
struct Ibsm {
    h: SmHandle,
    sm: sm::Sm,
    /// SMPs sent by (method, attribute).
    sent: HashMap<(u8, u16), u64>,
    /// ActCount of every SMInfo GetResp it sent (answers to OpenSM's polls).
    act_counts: Vec<u32>,
    /// SMInfo Sets received, by attribute modifier (HANDOVER 1, ACKNOWLEDGE 2, …).
    sminfo_sets: HashMap<u32, u64>,
    events: Vec<sm::Event>,
}

impl Ibsm {
    fn start(server: &mut IbsimServer, node: NodeId, cfg: sm::SmConfig) -> Ibsm {
        let h = server
            .fabric_mut()
            .attach_sm(node, PortNum(1))
            .unwrap()
            .handle;
        Ibsm {
            h,
            sm: sm::Sm::new(cfg).unwrap(),
            sent: HashMap::new(),
            act_counts: Vec::new(),
            sminfo_sets: HashMap::new(),
            events: Vec::new(),
        }
    }

    fn sent(&self, method: Method, attr: SmpAttrId) -> u64 {
        self.sent.get(&(method.0, attr.0)).copied().unwrap_or(0)
    }

    /// One turn: serve the fabric a little, then the SM's MADs in, timers, MADs out.
    fn turn(&mut self, server: &mut IbsimServer) {
        server.poll(Duration::from_millis(1)).unwrap();
        let f = server.fabric_mut();
        let now = f.now();
        let (sminfo_sets, sent, act_counts, events) = (
            &mut self.sminfo_sets,
            &mut self.sent,
            &mut self.act_counts,
            &mut self.events,
        );
        let mut port = f.sm_port(self.h);
        let mut tap = Tap::new(&mut port, |dir, _: &MadMeta, mad: &[u8]| {
            let Ok(smp) = Smp::ref_from_bytes(mad) else {
                return true;
            };
            match dir {
                Direction::Recv => {
                    if smp.method() == Method::SET && smp.attr() == SmpAttrId::SM_INFO {
                        *sminfo_sets.entry(smp.attr_mod.get()).or_default() += 1;
                    }
                }
                Direction::Send => {
                    *sent.entry((smp.method, smp.attr().0)).or_default() += 1;
                    if smp.method() == Method::GET_RESP && smp.attr() == SmpAttrId::SM_INFO {
                        let info = SmInfo::ref_from_prefix(&smp.data).unwrap().0;
                        act_counts.push(info.act_count.get());
                    }
                }
            }
            true
        });
        let _ = sm::drive::turn(&mut Agents::sm(&mut self.sm), &mut tap, now, &mut |_, e| {
            events.push(e);
            ControlFlow::Continue(())
        })
        .unwrap();
        server.service();
    }

    /// Turns until `done` or `limit` (then panics with `what`).
    fn turn_until(
        &mut self,
        server: &mut IbsimServer,
        limit: Duration,
        what: &str,
        mut done: impl FnMut(&Ibsm) -> bool,
    ) -> Duration {
        let start = Instant::now();
        while !done(self) {
            assert!(
                start.elapsed() < limit,
                "{what} within {limit:?}: role {:?}, events {:#?}",
                self.sm.role(),
                self.events
            );
            self.turn(server);
        }
        start.elapsed()
    }
}

/// Every port's LID as its SMA holds it (switch port 0, CA ports 1..).
fn lids(server: &IbsimServer) -> Vec<(NodeId, u8, Lid)> {
    let f = server.fabric();
    let mut v = Vec::new();
    for (id, _) in f.topology().nodes() {
        let a = f.agent(id).unwrap();
        let ports: Vec<u8> = if a.is_switch() {
            vec![0]
        } else {
            (1..=a.num_ports()).collect()
        };
        for p in ports {
            if let Some(pi) = a.port_info(PortNum(p)) {
                v.push((id, p, pi.lid()));
            }
        }
    }
    v
}

const POLL: Duration = Duration::from_millis(500);
const RETRIES: u32 = 2;

fn ibsm_cfg(priority: u8) -> sm::SmConfig {
    sm::SmConfig {
        port: PortNum(1),
        sm_priority: priority,
        sminfo_polling_timeout: POLL,
        polling_retry_number: RETRIES,
        ..sm::SmConfig::default()
    }
}

/// An OpenSM config file: short polling (so that its failover is quick) and a flushed log.
fn opensm_conf(dir: &std::path::Path) -> String {
    let p = dir.join("opensm.conf");
    std::fs::write(
        &p,
        "force_log_flush TRUE\nsminfo_polling_timeout 500\npolling_retry_number 2\n",
    )
    .unwrap();
    p.display().to_string()
}

fn wait_for_log(log: &std::path::Path, needle: &str, limit: Duration, server: &mut IbsimServer) {
    let start = Instant::now();
    loop {
        server.poll(Duration::from_millis(5)).unwrap();
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "OpenSM's log has no {needle:?} within {limit:?}:\n{text}"
        );
    }
}

#[test]
fn ibsm_standby_polls_opensm_and_takes_over_when_it_is_killed() {
    let test = "failover_from_opensm";
    if !peers(test) {
        return;
    }
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
    let mut server = IbsimServer::bind(fabric, &sock_name()).unwrap();
    let dir = TempDir::new(test).unwrap();
    let client = Served::client_of(&server);
    let conf = opensm_conf(dir.path());
    let (opensm, log) = spawn_opensm(
        &client,
        dir.path(),
        "opensm.log",
        &["-p", "14", "-F", &conf],
    );
    wait_for_log(&log, "SUBNET UP", Duration::from_secs(30), &mut server);

    let ca = topo.nodes_of_type(NodeType::CA).last().unwrap();
    let mut ibsm = Ibsm::start(&mut server, ca, ibsm_cfg(3));
    ibsm.turn_until(&mut server, Duration::from_secs(20), "standby", |s| {
        s.sm.role() == sm::Role::Standby
    });
    let master = ibsm.sm.role_machine().master().copied().unwrap();
    assert_eq!(master.priority, 14);
    let before = lids(&server);
    assert!(before.iter().all(|(_, _, l)| l.is_unicast()), "{before:?}");

    // Standing by: polls, no re-discovery; OpenSM's ActCount rises.
    let probes = ibsm.sent(Method::GET, SmpAttrId::NODE_INFO);
    let polls = ibsm.sent(Method::GET, SmpAttrId::SM_INFO);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        ibsm.turn(&mut server);
    }
    assert_eq!(ibsm.sm.role(), sm::Role::Standby);
    assert_eq!(ibsm.sent(Method::GET, SmpAttrId::NODE_INFO), probes);
    let new_polls = ibsm.sent(Method::GET, SmpAttrId::SM_INFO) - polls;
    assert!(
        (4..=8).contains(&new_polls),
        "a poll every 500 ms: {new_polls}"
    );
    let later = ibsm.sm.role_machine().master().copied().unwrap();
    assert!(
        later.act_count > master.act_count,
        "OpenSM's ActCount {} -> {}",
        master.act_count,
        later.act_count
    );

    // Kill OpenSM (by PID, on drop) and time the takeover.
    let lft_sets = ibsm.sent(Method::SET, SmpAttrId::LINEAR_FT);
    drop(opensm);
    let took = ibsm.turn_until(&mut server, Duration::from_secs(15), "master", |s| {
        s.sm.role() == sm::Role::Master && s.sm.is_up()
    });
    let detection = POLL * (RETRIES + 1);
    assert!(
        took < detection + Duration::from_secs(3),
        "took over in {took:?} (detection at most {detection:?})"
    );
    assert!(ibsm.events.iter().any(|e| matches!(
        e,
        sm::Event::RoleChanged {
            cause: sm::role::RoleCause::MasterLost { .. },
            ..
        }
    )));
    assert_eq!(lids(&server), before, "the same LIDs under ibsm");
    assert_eq!(
        ibsm.sent(Method::SET, SmpAttrId::LINEAR_FT),
        lft_sets,
        "OpenSM's tables route the unchanged fabric: no LFT Set"
    );
}

#[test]
fn opensm_stands_by_polls_ibsm_and_takes_over_with_the_same_lids() {
    let test = "failover_to_opensm";
    if !peers(test) {
        return;
    }
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
    let mut server = IbsimServer::bind(fabric, &sock_name()).unwrap();
    let ca = topo.nodes_of_type(NodeType::CA).last().unwrap();
    let mut ibsm = Ibsm::start(&mut server, ca, ibsm_cfg(14));
    ibsm.turn_until(&mut server, Duration::from_secs(20), "up", |s| s.sm.is_up());
    let before = lids(&server);

    let dir = TempDir::new(test).unwrap();
    let client = Served::client_of(&server);
    let conf = opensm_conf(dir.path());
    let (_opensm, log) = spawn_opensm(&client, dir.path(), "opensm.log", &["-p", "3", "-F", &conf]);
    let start = Instant::now();
    loop {
        ibsm.turn(&mut server);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("Entering STANDBY state") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "OpenSM did not stand by:\n{text}"
        );
    }
    // OpenSM polls ibsm; every answer shows a higher ActCount than the one before.
    let polled = ibsm.act_counts.len();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        ibsm.turn(&mut server);
    }
    assert_eq!(ibsm.sm.role(), sm::Role::Master);
    let answers = &ibsm.act_counts[polled..];
    assert!(answers.len() >= 3, "OpenSM polled ibsm: {answers:?}");
    assert!(
        answers.windows(2).all(|w| w[1] > w[0]),
        "ActCount rises: {answers:?}"
    );

    // ibsm dies: OpenSM notices and configures the subnet with the LIDs it finds.
    server.fabric_mut().detach_sm(ibsm.h);
    let text_before = std::fs::read_to_string(&log).unwrap_or_default();
    let ups_before = text_before.matches("SUBNET UP").count();
    let start = Instant::now();
    loop {
        server.poll(Duration::from_millis(5)).unwrap();
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.matches("SUBNET UP").count() > ups_before {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "OpenSM did not take over:\n{text}"
        );
    }
    assert_eq!(lids(&server), before, "the same LIDs under OpenSM");
}

/// The last SM state OpenSM's log reports ("Entering MASTER state" and so on), if any.
fn opensm_state(log: &std::path::Path) -> Option<&'static str> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    ["MASTER", "STANDBY", "DISCOVERING", "NOT-ACTIVE"]
        .into_iter()
        .filter_map(|s| text.rfind(&format!("Entering {s} state")).map(|at| (at, s)))
        .max()
        .map(|(_, s)| s)
}

#[test]
fn a_higher_opensm_started_second_takes_over_from_ibsm_by_handover() {
    let test = "handover_to_opensm";
    // OpenSM's trap 144 and its retirement by our TrapRepress need the kernel's ib_mad
    // behaviour (a TrapRepress completes the trap's send; sends time out): umad2sim has
    // neither, so under it OpenSM waits for ever on the trap and never finishes a sweep.
    umad::testutil::set_current_shim(umad::testutil::Shim::Ibsm);
    if !peers(test) {
        return;
    }
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
    let mut server = IbsimServer::bind(fabric, &sock_name()).unwrap();
    let ca = topo.nodes_of_type(NodeType::CA).last().unwrap();
    let mut ibsm = Ibsm::start(&mut server, ca, ibsm_cfg(3));
    ibsm.turn_until(&mut server, Duration::from_secs(20), "up", |s| s.sm.is_up());
    let before = lids(&server);

    let dir = TempDir::new(test).unwrap();
    let client = Served::client_of(&server);
    let conf = opensm_conf(dir.path());
    let (_opensm, log) = spawn_opensm(
        &client,
        dir.path(),
        "opensm.log",
        &["-p", "14", "-F", &conf],
    );
    // ibsm hands over (SMInfo Set HANDOVER) and stands by; OpenSM is master.
    ibsm.turn_until(&mut server, Duration::from_secs(30), "standby", |s| {
        s.sm.role() == sm::Role::Standby
    });
    let start = Instant::now();
    while opensm_state(&log) != Some("MASTER")
        || !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("SUBNET UP")
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "OpenSM did not take over: {:#?}",
            &ibsm.events[ibsm.events.len().saturating_sub(12)..]
        );
        ibsm.turn(&mut server);
        if opensm_state(&log) == Some("MASTER") {
            assert_ne!(ibsm.sm.role(), sm::Role::Master, "two masters");
        }
    }
    assert!(
        ibsm.sent(Method::SET, SmpAttrId::SM_INFO) >= 1,
        "HANDOVER sent"
    );
    // ibsm now polls OpenSM, and stays standing by.
    let polls = ibsm.sent(Method::GET, SmpAttrId::SM_INFO);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        ibsm.turn(&mut server);
        assert_eq!(ibsm.sm.role(), sm::Role::Standby);
    }
    assert!(ibsm.sent(Method::GET, SmpAttrId::SM_INFO) > polls);
    assert_eq!(
        ibsm.sm.role_machine().master().map(|m| m.priority),
        Some(14)
    );
    assert_eq!(opensm_state(&log), Some("MASTER"));
    assert_eq!(lids(&server), before, "the same LIDs under OpenSM");
}

#[test]
fn a_higher_ibsm_started_second_takes_over_from_opensm_by_handover() {
    let test = "handover_from_opensm";
    // OpenSM's trap 144 and its retirement by our TrapRepress need the kernel's ib_mad
    // behaviour (a TrapRepress completes the trap's send; sends time out): umad2sim has
    // neither, so under it OpenSM waits for ever on the trap and never finishes a sweep.
    umad::testutil::set_current_shim(umad::testutil::Shim::Ibsm);
    if !peers(test) {
        return;
    }
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
    let mut server = IbsimServer::bind(fabric, &sock_name()).unwrap();
    let dir = TempDir::new(test).unwrap();
    let client = Served::client_of(&server);
    let conf = opensm_conf(dir.path());
    let (_opensm, log) = spawn_opensm(&client, dir.path(), "opensm.log", &["-p", "3", "-F", &conf]);
    wait_for_log(&log, "SUBNET UP", Duration::from_secs(30), &mut server);
    let before = lids(&server);

    let ca = topo.nodes_of_type(NodeType::CA).last().unwrap();
    let mut ibsm = Ibsm::start(&mut server, ca, ibsm_cfg(14));
    // Whichever sees the other first, OpenSM hands over to the higher ibsm: either ibsm stands
    // by, finds its master lower (trap 144) and is handed over to (then acknowledges), or
    // OpenSM's own sweep finds ibsm discovering with a higher priority and hands over at once
    // (IBA C14-60.1.1; OpenSM's state_mgr_get_highest_sm) — ibsm, DISCOVERING, re-sweeps and
    // is elected. Either way a HANDOVER comes from OpenSM and there is never a second master.
    ibsm.turn_until(&mut server, Duration::from_secs(30), "master", |s| {
        s.sm.role() == sm::Role::Master && s.sm.is_up()
    });
    assert!(
        ibsm.sminfo_sets.get(&1).copied().unwrap_or(0) >= 1,
        "HANDOVER received from OpenSM: {:?}\n{:#?}",
        ibsm.sminfo_sets,
        ibsm.events
    );
    let via_standby = ibsm.events.iter().any(|e| {
        matches!(
            e,
            sm::Event::RoleChanged {
                from: sm::Role::Standby,
                to: sm::Role::Master,
                cause: sm::role::RoleCause::SetFrom { .. },
            }
        )
    });
    if via_standby {
        assert!(
            ibsm.sent(Method::SET, SmpAttrId::SM_INFO) >= 1,
            "ACKNOWLEDGE sent"
        );
    }
    wait_for_log(
        &log,
        "Entering STANDBY state",
        Duration::from_secs(5),
        &mut server,
    );
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        ibsm.turn(&mut server);
        assert_eq!(ibsm.sm.role(), sm::Role::Master);
    }
    assert_eq!(opensm_state(&log), Some("STANDBY"));
    assert_eq!(lids(&server), before, "the same LIDs under ibsm");
}

//! The SM core against a hand-built fabric (tests/common): discovery order and routes, full
//! bring-up, loss/duplication, mute nodes, duplicate GUIDs, re-sweeps that send nothing,
//! guid2lid persistence, light sweeps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashSet;

use common::{drive, Fake};
use ibmad::{DrPath, Guid, PortNum, PortState, Time};
use sm::{Command, Event, Phase, Sm, SmConfig};

fn cfg() -> SmConfig {
    SmConfig {
        sweep_interval: core::time::Duration::ZERO,
        ..SmConfig::default()
    }
}

/// Fixture F-DISC (subnet-init.md §2.3): SM.1–C.2, C.4–A.1, A.2–D.1, D.3–H10.1, plus the
/// branch A.3–E.1, E.2–B.1, B.2–D.2 (a cycle A–D–B–E–A) and D.4–H13.1 (filler port).
fn f_disc() -> (Fake, [usize; 8]) {
    let mut f = Fake::new();
    let sm = f.add(0x100, false, 1, "sm host");
    let c = f.add(0xC, true, 6, "C");
    let a = f.add(0xA, true, 6, "A");
    let d = f.add(0xD, true, 6, "D");
    let h10 = f.add(0x1000, false, 1, "host 10");
    let e = f.add(0xE, true, 6, "E");
    let b = f.add(0xB, true, 6, "B");
    let h13 = f.add(0x1300, false, 1, "host 13");
    f.link(sm, 1, c, 2);
    f.link(c, 4, a, 1);
    f.link(a, 2, d, 1);
    f.link(d, 3, h10, 1);
    f.link(a, 3, e, 1);
    f.link(e, 2, b, 1);
    f.link(b, 2, d, 2);
    f.link(d, 4, h13, 1);
    (f, [sm, c, a, d, h10, e, b, h13])
}

fn bring_up(sm: &mut Sm, f: &mut Fake) -> Vec<Event> {
    let mut now = Time::ZERO;
    drive(sm, f, &mut now, Time::from_millis(60_000))
}

fn assert_all_active(f: &Fake) {
    for (i, n) in f.nodes.iter().enumerate() {
        for (p, port) in n.ports.iter().enumerate() {
            if port.remote.is_some() && !f.nodes[i].mute {
                let peer_mute = port.remote.is_some_and(|(r, _)| f.nodes[r].mute);
                if !peer_mute {
                    assert_eq!(
                        port.info.port_state(),
                        PortState::ACTIVE,
                        "node {:#x} port {p}",
                        n.guid
                    );
                }
            }
        }
    }
}

#[test]
fn f_disc_routes_and_links() {
    let (mut f, [_, c, a, d, h10, e, b, h13]) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    let ev = bring_up(&mut sm, &mut f);
    assert!(ev.contains(&Event::SubnetUp), "{ev:#?}");
    let s = sm.subnet();
    let path = |guid: u64| s.node(s.node_by_guid(Guid(guid)).unwrap()).dr_path;
    // The walk of the seed, hop by hop.
    assert_eq!(path(f.nodes[c].guid).to_string(), "0,1");
    assert_eq!(path(f.nodes[a].guid).to_string(), "0,1,4");
    assert_eq!(path(f.nodes[d].guid).to_string(), "0,1,4,2");
    assert_eq!(path(f.nodes[h10].guid).to_string(), "0,1,4,2,3");
    // The other branches were walked too (BFS, ascending ports).
    assert_eq!(path(f.nodes[e].guid).to_string(), "0,1,4,3");
    assert_eq!(path(f.nodes[h13].guid).to_string(), "0,1,4,2,4");
    assert!(s.node_by_guid(Guid(f.nodes[b].guid)).is_some());
    assert_eq!(s.nodes.len(), 8);
    // The cycle's closing link B.2–D.2 is a link, not a new node.
    let bid = s.node_by_guid(Guid(0xB)).unwrap();
    let did = s.node_by_guid(Guid(0xD)).unwrap();
    assert_eq!(
        s.port(bid, PortNum(2)).unwrap().remote,
        Some((did, PortNum(2)))
    );
    assert_eq!(s.node(did).desc, "D");
    assert_all_active(&f);
}

#[test]
fn never_probes_beyond_a_ca_and_each_link_once() {
    let (mut f, _) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    bring_up(&mut sm, &mut f);
    let (ph, disc) = sm.phase_history()[0];
    assert_eq!(ph, Phase::Discovery);
    // 8 nodes: 8 NodeInfo for new nodes + at most one extra for the cycle-closing link;
    // NodeDesc 8, SwitchInfo 5, PortInfo 5*7 + 3.
    let expected_max = 9 + 8 + 5 + 35 + 3;
    assert!(
        disc.smps <= expected_max as u64,
        "{} discovery SMPs > {expected_max}",
        disc.smps
    );
    assert_eq!(disc.retried, 0);
}

#[test]
fn lids_unique_and_sm_lid_programmed() {
    let (mut f, ids) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    bring_up(&mut sm, &mut f);
    let mut lids = HashSet::new();
    for &n in &ids {
        let p = if f.nodes[n].is_switch { 0 } else { 1 };
        let lid = f.lid_of(n, p);
        assert!(lid != 0 && lid < 0xC000, "node {n} has no LID");
        assert!(lids.insert(lid), "duplicate LID {lid}");
        let info = f.nodes[n].ports[p as usize].info;
        assert_eq!(info.master_sm_lid.get(), sm.sm_lid().0);
    }
    assert_eq!(f.lid_of(ids[0], 1), sm.sm_lid().0);
    // MTU/VL configured on a switch-switch link: min of caps (5/4) capped by max_op_vls 5.
    let a = &f.nodes[ids[2]].ports[2].info;
    assert_eq!(a.neighbor_mtu(), 5);
    assert_eq!(a.operational_vls(), 4);
}

#[test]
fn lfts_programmed_route_every_ca_to_every_ca() {
    let (mut f, ids) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    bring_up(&mut sm, &mut f);
    let cas: Vec<usize> = ids
        .iter()
        .copied()
        .filter(|&n| !f.nodes[n].is_switch)
        .collect();
    // Walk the programmed LFTs in the fake from every CA to every CA.
    for &src in &cas {
        for &dst in &cas {
            if src == dst {
                continue;
            }
            let dlid = f.lid_of(dst, 1) as usize;
            let (mut n, mut hops) = (f.nodes[src].ports[1].remote.unwrap().0, 0);
            while n != dst {
                assert!(f.nodes[n].is_switch);
                let out = f.nodes[n].lft[dlid];
                assert_ne!(
                    out, 0xFF,
                    "no route at {:#x} to lid {dlid}",
                    f.nodes[n].guid
                );
                n = f.nodes[n].ports[out as usize].remote.unwrap().0;
                hops += 1;
                assert!(hops < 10, "loop");
            }
        }
    }
}

#[test]
fn second_heavy_sweep_sends_no_programming() {
    let (mut f, _) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    let mut now = Time::ZERO;
    drive(&mut sm, &mut f, &mut now, Time::from_millis(60_000));
    let sets_before = f.sets_seen;
    sm.handle_command(now, Command::HeavySweep);
    let ev = drive(&mut sm, &mut f, &mut now, Time::from_millis(120_000));
    assert!(ev.contains(&Event::SubnetUp));
    assert_eq!(f.sets_seen, sets_before, "an unchanged fabric needs no Set");
    let prog = sm
        .phase_history()
        .iter()
        .rev()
        .find(|(p, _)| *p == Phase::Programming)
        .unwrap()
        .1;
    assert_eq!(prog.smps, 0);
}

/// Issue 12: a new SM (a restarted daemon, a standby taking over) on a subnet that is already
/// programmed reads the LFT blocks it does not know instead of writing them, keeps the LIDs
/// the ports hold, and so sends no Set at all; its next heavy sweep sends nothing either (the
/// blocks it read stay known although no SwitchInfo Set taught it the switch's top).
#[test]
fn a_new_sm_on_a_programmed_subnet_reads_the_tables_and_sets_nothing() {
    let (mut f, ids) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    bring_up(&mut sm, &mut f);
    let lfts: Vec<Vec<u8>> = ids.iter().map(|&n| f.nodes[n].lft.clone()).collect();
    let sets_before = f.sets_seen;
    let mut sm2 = Sm::new(cfg()).unwrap();
    let mut now = Time::ZERO;
    let ev = drive(&mut sm2, &mut f, &mut now, Time::from_millis(60_000));
    assert!(ev.contains(&Event::SubnetUp), "{ev:#?}");
    assert_eq!(
        f.sets_seen, sets_before,
        "nothing was wrong, nothing is written"
    );
    let prog = |sm: &Sm| {
        sm.phase_history()
            .iter()
            .rev()
            .find(|(p, _)| *p == Phase::Programming)
            .unwrap()
            .1
    };
    assert_eq!(prog(&sm2).smps, 5, "one LFT block read per switch");
    sm2.handle_command(now, Command::HeavySweep);
    let ev = drive(&mut sm2, &mut f, &mut now, Time::from_millis(120_000));
    assert!(ev.contains(&Event::SubnetUp));
    assert_eq!(f.sets_seen, sets_before);
    assert_eq!(prog(&sm2).smps, 0, "the blocks read are still known");
    let after: Vec<Vec<u8>> = ids.iter().map(|&n| f.nodes[n].lft.clone()).collect();
    assert_eq!(after, lfts);
}

#[test]
fn loss_and_duplicates_give_the_same_result() {
    let (mut clean, ids) = f_disc();
    let mut sm0 = Sm::new(cfg()).unwrap();
    bring_up(&mut sm0, &mut clean);
    let (mut lossy, _) = f_disc();
    lossy.drop_every = 7;
    lossy.dup_every = 5;
    let mut sm1 = Sm::new(cfg()).unwrap();
    let ev = bring_up(&mut sm1, &mut lossy);
    assert!(ev.contains(&Event::SubnetUp), "{ev:#?}");
    assert!(sm1.phase_history().iter().any(|(_, s)| s.retried > 0));
    for &n in &ids {
        assert_eq!(clean.nodes[n].lft, lossy.nodes[n].lft);
        for p in 0..clean.nodes[n].ports.len() as u8 {
            assert_eq!(clean.lid_of(n, p), lossy.lid_of(n, p));
        }
    }
    assert_all_active(&lossy);
}

/// issue 11: a node that never answers is reported, the rest is programmed and Active, but
/// the sweep did not find every reachable node: no SUBNET UP, "ERRORS DURING INITIALIZATION"
/// (after the bounded re-sweeps) instead.
#[test]
fn mute_node_is_reported_the_rest_is_active_and_the_subnet_is_not_up() {
    let (mut f, [_, _, _, _, _, e, _, _]) = f_disc();
    f.nodes[e].mute = true;
    let mut sm = Sm::new(cfg()).unwrap();
    let ev = bring_up(&mut sm, &mut f);
    let unreachable: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            Event::NodeUnreachable {
                dr_path, attempts, ..
            } => Some((*dr_path, *attempts)),
            _ => None,
        })
        .collect();
    assert!(
        unreachable.contains(&(DrPath::parse("0,1,4,3").unwrap(), 8)),
        "{unreachable:?}"
    );
    assert!(!ev.contains(&Event::SubnetUp), "{ev:#?}");
    assert!(!sm.is_up());
    let failed: Vec<String> = ev
        .iter()
        .filter_map(|e| match e {
            Event::SweepFailed { reason } => Some(reason.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed.len(),
        3,
        "the sweep and its two re-sweeps: {failed:?}"
    );
    assert!(
        failed[0].contains("ERRORS DURING INITIALIZATION")
            && failed[0].contains("directed route 0,1,4,3"),
        "{failed:?}"
    );
    assert!(sm.subnet().node_by_guid(Guid(0xE)).is_none());
    assert_eq!(sm.subnet().nodes.len(), 7);
    assert_all_active(&f);
}

#[test]
fn duplicate_guid_is_reported() {
    let (mut f, [_, _, _, _, _, _, b, _]) = f_disc();
    // B claims C's GUID.
    f.nodes[b].guid = 0xC;
    let mut sm = Sm::new(cfg()).unwrap();
    let ev = bring_up(&mut sm, &mut f);
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::DuplicateGuid { guid, .. } if *guid == Guid(0xC))),
        "{ev:#?}"
    );
    // The impostor is not linked through C's unused (Down) port 1.
    let s = sm.subnet();
    let c = s.node_by_guid(Guid(0xC)).unwrap();
    assert_eq!(s.port(c, PortNum(1)).unwrap().remote, None);
}

#[test]
fn restart_with_guid2lid_keeps_lids() {
    let (mut f, ids) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    let ev = bring_up(&mut sm, &mut f);
    let text = ev
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Guid2LidUpdated(t) => Some(t.clone()),
            _ => None,
        })
        .unwrap();
    let lids: Vec<u16> = ids
        .iter()
        .map(|&n| f.lid_of(n, if f.nodes[n].is_switch { 0 } else { 1 }))
        .collect();
    // A fresh fabric (LIDs lost, e.g. power cycle) and a new SM given the file.
    let (mut f2, _) = f_disc();
    let mut sm2 = Sm::new(SmConfig { seed: 0, ..cfg() }).unwrap();
    // Discover in a different order: the SM's LID assignment order must not matter.
    sm2.handle_command(Time::ZERO, Command::Guid2Lid(text));
    bring_up(&mut sm2, &mut f2);
    let lids2: Vec<u16> = ids
        .iter()
        .map(|&n| f2.lid_of(n, if f2.nodes[n].is_switch { 0 } else { 1 }))
        .collect();
    assert_eq!(lids, lids2);
}

#[test]
fn corrupt_guid2lid_warns_with_line_and_assigns_fresh() {
    let (mut f, _) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    sm.handle_command(
        Time::ZERO,
        Command::Guid2Lid("0x000000000000000c 1 1\nthis is not a guid line\n".into()),
    );
    let ev = bring_up(&mut sm, &mut f);
    let warn = ev
        .iter()
        .find_map(|e| match e.log_line() {
            Some((sm::Level::Warn, line)) if line.contains("guid2lid") => Some(line),
            _ => None,
        })
        .expect("a guid2lid warning");
    assert!(warn.contains('2'), "names the line: {warn}");
    assert!(ev.contains(&Event::SubnetUp));
}

#[test]
fn light_sweep_quiet_then_link_change_triggers_heavy() {
    let (mut f, [_, _, _, d, _, _, _, h13]) = f_disc();
    let mut sm = Sm::new(SmConfig {
        sweep_interval: core::time::Duration::from_secs(10),
        ..SmConfig::default()
    })
    .unwrap();
    let mut now = Time::ZERO;
    let ev = drive(&mut sm, &mut f, &mut now, Time::from_millis(5_000));
    assert!(ev.contains(&Event::SubnetUp));
    assert_eq!(sm.heavy_sweeps(), 1);
    // One quiet light sweep.
    drive(&mut sm, &mut f, &mut now, Time::from_millis(15_000));
    assert_eq!(sm.heavy_sweeps(), 1);
    assert!(sm
        .phase_history()
        .iter()
        .any(|(p, _)| *p == Phase::LightSweep));
    // Pull H13's cable: the next light sweep sees PortStateChange and sweeps heavily.
    f.unlink(d, 4);
    let ev = drive(&mut sm, &mut f, &mut now, Time::from_millis(25_000));
    assert_eq!(sm.heavy_sweeps(), 2, "{ev:#?}");
    assert!(sm.subnet().node_by_guid(Guid(f.nodes[h13].guid)).is_none());
    assert!(ev.contains(&Event::SubnetUp));
}

/// Monitoring requirement 37 (004:S32): a switch port that is up but has no known remote is
/// probed with a directed-route NodeInfo Get through it, and the node behind it is learned
/// once it answers. Here E's management agent is silent, so A's port 3 is Active with nothing
/// known behind it and the subnet is not up; as OpenSM does after initialization errors, every
/// `sweep_interval` is then a heavy sweep, which probes the port again. When E answers, the
/// next one learns it — no trap and no PortStateChange tells the SM (the link never went down).
#[test]
fn an_up_port_with_no_known_remote_is_probed_each_interval_and_its_node_learned() {
    let (mut f, [_, _, a, _, _, e, _, _]) = f_disc();
    f.nodes[e].mute = true;
    let mut sm = Sm::new(SmConfig {
        sweep_interval: core::time::Duration::from_secs(10),
        ..SmConfig::default()
    })
    .unwrap();
    let mut now = Time::ZERO;
    let ev = drive(&mut sm, &mut f, &mut now, Time::from_millis(20_000));
    assert!(!ev.contains(&Event::SubnetUp), "{ev:#?}");
    assert!(sm.subnet().node_by_guid(Guid(0xE)).is_none());
    let aid = sm.subnet().node_by_guid(Guid(0xA)).unwrap();
    assert_eq!(sm.subnet().port(aid, PortNum(3)).unwrap().remote, None);
    assert_ne!(f.nodes[a].ports[3].info.port_state(), PortState::DOWN);
    // While E stays silent, each interval (after the sweep before it ended) probes it again —
    // one NodeUnreachable per sweep for its route — and nothing comes up.
    let heavy = sm.heavy_sweeps();
    let ev = drive(&mut sm, &mut f, &mut now, Time::from_millis(50_000));
    let probes = ev
        .iter()
        .filter(|e| {
            matches!(e, Event::NodeUnreachable { dr_path, .. }
                if *dr_path == DrPath::parse("0,1,4,3").unwrap())
        })
        .count();
    let sweeps = sm.heavy_sweeps() - heavy;
    assert!(sweeps >= 2, "{sweeps} heavy sweeps in 30 s: {ev:#?}");
    // (the last of them may still be waiting for E when the drive stops)
    assert!(
        probes >= 2 && probes as u64 + 1 >= sweeps,
        "{probes} probes: {ev:#?}"
    );
    assert!(!sm.is_up());
    // E's agent comes alive: within one interval the SM knows it and the subnet is up.
    f.nodes[e].mute = false;
    let ev = drive(&mut sm, &mut f, &mut now, Time::from_millis(62_000));
    assert!(ev.contains(&Event::SubnetUp), "{ev:#?}");
    let eid = sm.subnet().node_by_guid(Guid(0xE)).unwrap();
    assert_eq!(
        sm.subnet().port(aid, PortNum(3)).unwrap().remote,
        Some((eid, PortNum(1)))
    );
    assert!(sm.is_up());
    assert_all_active(&f);
}

#[test]
fn phase_stats_and_log_lines() {
    let (mut f, _) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    let ev = bring_up(&mut sm, &mut f);
    let lines: Vec<String> = ev
        .iter()
        .filter_map(|e| e.log_line())
        .map(|l| l.1)
        .collect();
    assert!(lines
        .iter()
        .any(|l| l.contains("minhop tables configured on all switches")));
    assert_eq!(lines.last().map(String::as_str), Some("SUBNET UP"));
    let phases: Vec<Phase> = sm.phase_history().iter().map(|x| x.0).collect();
    assert_eq!(
        phases,
        vec![
            Phase::Discovery,
            Phase::LidAssignment,
            Phase::Routing,
            Phase::Programming,
            Phase::Arming,
            Phase::Activation
        ]
    );
    for (p, s) in sm.phase_history() {
        println!("{p}: {s:?}");
    }
    let total: u64 = sm.phase_history().iter().map(|x| x.1.smps).sum();
    assert_eq!(total, f.smps_seen);
    // Arming and activation: one Set per linked port each (8 links = 16 ports) and per
    // switch port 0 (5).
    assert_eq!(sm.phase_history()[4].1.smps, 21);
    assert_eq!(sm.phase_history()[5].1.smps, 21);
    // Both state passes went LID-routed (the LFTs were written and acknowledged before).
    assert_eq!(f.lid_routed_seen, 42);
}

#[test]
fn directed_route_only_when_lid_routing_is_off() {
    let (mut f, _) = f_disc();
    let mut sm = Sm::new(SmConfig {
        lid_routed: false,
        ..cfg()
    })
    .unwrap();
    let ev = bring_up(&mut sm, &mut f);
    assert!(ev.contains(&Event::SubnetUp));
    assert_eq!(f.lid_routed_seen, 0);
}

#[test]
fn lid_routed_sets_fall_back_to_directed_route() {
    let (mut f, _) = f_disc();
    f.lid_broken = true;
    let mut sm = Sm::new(cfg()).unwrap();
    let ev = bring_up(&mut sm, &mut f);
    assert!(ev.contains(&Event::SubnetUp), "{ev:#?}");
    assert_all_active(&f);
    // One round of 4 LID-routed attempts per Set, then directed route.
    assert_eq!(f.lid_routed_seen, 42 * 4);
    let arming = sm.phase_history()[4].1;
    assert_eq!(arming.retried, 21 * 4);
    assert_eq!(arming.timed_out, 0);
}

#[test]
fn folding_configuration_into_arm_saves_a_set_per_port() {
    let (mut f0, ids) = f_disc();
    let mut sm0 = Sm::new(cfg()).unwrap();
    bring_up(&mut sm0, &mut f0);
    let (mut f1, _) = f_disc();
    let mut sm1 = Sm::new(SmConfig {
        fold_config_into_arm: true,
        ..cfg()
    })
    .unwrap();
    let ev = bring_up(&mut sm1, &mut f1);
    assert!(ev.contains(&Event::SubnetUp));
    assert_all_active(&f1);
    for &n in &ids {
        assert_eq!(f0.nodes[n].lft, f1.nodes[n].lft);
        for (a, b) in f0.nodes[n].ports.iter().zip(&f1.nodes[n].ports) {
            assert_eq!(a.info, b.info, "node {n}");
        }
    }
    // Every PortInfo configuration Set of the unfolded run is saved (8 end ports + 13
    // switch-side link ports in F-DISC).
    assert_eq!(f0.sets_seen - f1.sets_seen, 21);
}

#[test]
fn trap_128_is_repressed_and_triggers_a_heavy_sweep() {
    use ibmad::attr::Notice;
    use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
    use ibmad::{Lid, MadMeta, Method, Smp, SmpAttrId, TrapNum};
    let (mut f, _) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    let mut now = Time::ZERO;
    drive(&mut sm, &mut f, &mut now, Time::from_millis(60_000));
    assert_eq!(sm.heavy_sweeps(), 1);
    let mut n = Notice::new_zeroed();
    n.set_is_generic(1);
    n.trap_num.set(TrapNum::LINK_STATE_CHANGE.0);
    n.issuer_lid.set(3);
    let mut trap = Smp::lid_request(Method::TRAP, SmpAttrId::NOTICE, 0, 0xABCD_0000_0042);
    trap.data[..64].copy_from_slice(n.as_bytes());
    let meta = MadMeta {
        slid: Lid(3),
        dlid: sm.sm_lid(),
        ..MadMeta::default()
    };
    sm.handle_mad(now, &meta, trap.as_bytes());
    let mut buf = [0u8; 256];
    let tx = sm.poll_transmit(now, &mut buf).expect("a TrapRepress");
    let rep = Smp::read_from_bytes(&buf).unwrap();
    assert_eq!(rep.method(), Method::TRAP_REPRESS);
    assert_eq!(rep.tid.get(), 0xABCD_0000_0042, "same TID, all 64 bits");
    assert_eq!(tx.meta.dlid, Lid(3));
    assert_eq!(tx.meta.slid, sm.sm_lid());
    let ev = drive(&mut sm, &mut f, &mut now, Time::from_millis(120_000));
    assert_eq!(sm.heavy_sweeps(), 2);
    assert!(ev.contains(&Event::SubnetUp));
}

#[test]
fn responses_with_wrong_attribute_or_unknown_tid_are_ignored() {
    use ibmad::zerocopy::{FromBytes, IntoBytes};
    use ibmad::{MadMeta, Smp, SmpAttrId};
    let mut sm = Sm::new(cfg()).unwrap();
    sm.handle_timeout(Time::ZERO);
    let mut buf = [0u8; 256];
    let first = sm
        .poll_transmit(Time::ZERO, &mut buf)
        .expect("NodeInfo of the SM's node");
    assert_eq!(first.len, 256);
    let req = Smp::read_from_bytes(&buf).unwrap();
    assert_eq!(req.attr(), SmpAttrId::NODE_INFO);
    assert_eq!(req.hop_cnt, 0);
    assert_eq!(req.tid.get() >> 32, 0, "only the low 32 TID bits are used");
    // A response carrying another attribute, and one with another TID: both ignored, so the
    // request is still outstanding and is resent at its timeout.
    let mut bad = req;
    bad.set_direction(true);
    bad.method = 0x81;
    bad.attr_id.set(SmpAttrId::PORT_INFO.0);
    sm.handle_mad(Time(10), &MadMeta::default(), bad.as_bytes());
    let mut other = req;
    other.set_direction(true);
    other.method = 0x81;
    other.tid.set(req.tid.get() + 1000);
    sm.handle_mad(Time(20), &MadMeta::default(), other.as_bytes());
    // A short MAD is ignored too.
    sm.handle_mad(Time(30), &MadMeta::default(), &buf[..100]);
    assert!(sm.poll_transmit(Time(40), &mut buf).is_none());
    let t = sm.poll_timeout().unwrap();
    assert_eq!(t, Time::from_millis(200));
    sm.handle_timeout(t);
    let again = sm.poll_transmit(t, &mut buf).expect("resent");
    assert_eq!(again.len, 256);
    assert_eq!(Smp::read_from_bytes(&buf).unwrap().tid.get(), req.tid.get());
}

/// issue 11: a response whose directed route (hop count, InitialPath, DrSLID/DrDLID) or
/// NodeType does not match what was sent creates no node; the request stays outstanding.
#[test]
fn responses_with_another_route_or_a_reserved_node_type_create_no_node() {
    use ibmad::attr::NodeInfo;
    use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
    use ibmad::{Lid, MadMeta, NodeType, Smp, SmpAttrId};
    let mut sm = Sm::new(cfg()).unwrap();
    sm.handle_timeout(Time::ZERO);
    let mut buf = [0u8; 256];
    let _ = sm.poll_transmit(Time::ZERO, &mut buf).expect("first SMP");
    let req = Smp::read_from_bytes(&buf).unwrap();
    assert_eq!(req.attr(), SmpAttrId::NODE_INFO);
    let answer = |f: &dyn Fn(&mut Smp)| {
        let mut r = req;
        r.set_direction(true);
        r.method = 0x81;
        let mut ni = NodeInfo::new_zeroed();
        ni.node_type = NodeType::CA.0;
        ni.num_ports = 1;
        ni.local_port_num = 1;
        ni.node_guid.set(0x100);
        ni.port_guid.set(0x100);
        r.data[..ni.as_bytes().len()].copy_from_slice(ni.as_bytes());
        f(&mut r);
        r
    };
    let bad: [&dyn Fn(&mut Smp); 5] = [
        &|r| r.hop_cnt = 1,
        &|r| {
            r.hop_cnt = 2;
            r.initial_path[1] = 1;
            r.initial_path[2] = 7;
        },
        &|r| r.dr_slid.set(5),
        &|r| r.dr_dlid.set(Lid(9).0),
        &|r| r.data[2] = 5, // NodeType (byte 2) 5 is reserved
    ];
    for (i, f) in bad.iter().enumerate() {
        let r = answer(f);
        sm.handle_mad(Time(10 + i as u64), &MadMeta::default(), r.as_bytes());
        assert!(
            sm.subnet().nodes.is_empty(),
            "case {i}: a node was created from a mismatched response"
        );
    }
    // The matching answer is taken.
    let good = answer(&|_| {});
    sm.handle_mad(Time(100), &MadMeta::default(), good.as_bytes());
    assert_eq!(sm.subnet().nodes.len(), 1);
}

/// Drives like `common::drive`, but calls `after` after every SM call with the events that
/// call produced.
fn drive_observed(sm: &mut Sm, f: &mut Fake, until: Time, mut after: impl FnMut(&Sm, Vec<Event>)) {
    let mut now = Time::ZERO;
    let mut buf = [0u8; 256];
    let meta = ibmad::MadMeta::default();
    loop {
        while let Some(tx) = sm.poll_transmit(now, &mut buf) {
            f.send_meta(now, &tx.meta, &buf);
        }
        let evs: Vec<Event> = std::iter::from_fn(|| sm.poll_event()).collect();
        after(sm, evs);
        let next_mad = f.in_flight.front().map(|x| x.0);
        let Some(next) = [next_mad, sm.poll_timeout()].into_iter().flatten().min() else {
            break;
        };
        if next > until {
            break;
        }
        now = now.max(next);
        if let Some((t, resp)) = f.in_flight.front().copied() {
            if t <= now {
                f.in_flight.pop_front();
                sm.handle_mad(now, &meta, &resp);
                continue;
            }
        }
        if sm.poll_timeout().is_some_and(|t| t <= now) {
            sm.handle_timeout(now);
        }
    }
}

/// issue 11 (figures): LID assignment and routing each run in their own `handle_timeout`,
/// due at once, so an owner timing its calls attributes their wall time to them and not to
/// discovery.
#[test]
fn lid_assignment_and_routing_each_run_in_their_own_call() {
    let (mut f, _) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    let mut calls: Vec<Vec<Phase>> = Vec::new();
    drive_observed(&mut sm, &mut f, Time::from_millis(60_000), |_, evs| {
        let done: Vec<Phase> = evs
            .iter()
            .filter_map(|e| match e {
                Event::PhaseDone { phase, .. } => Some(*phase),
                _ => None,
            })
            .collect();
        if !done.is_empty() {
            calls.push(done);
        }
    });
    let order: Vec<Phase> = calls.iter().flatten().copied().collect();
    assert_eq!(
        order[..3],
        [Phase::Discovery, Phase::LidAssignment, Phase::Routing],
        "{calls:?}"
    );
    for c in &calls {
        assert_eq!(c.len(), 1, "one phase per call: {calls:?}");
    }
    assert!(sm.is_up());
}

/// issue 11: when a sweep with errors ends, the owner reading `SweepFailed` still sees that
/// sweep's subnet and tables; `resweep_due` says whether the SM sweeps again at once.
#[test]
fn a_failed_sweep_is_readable_before_the_resweep_starts() {
    let (mut f, [_, _, _, _, _, e, _, _]) = f_disc();
    f.nodes[e].mute = true;
    let mut sm = Sm::new(cfg()).unwrap();
    let mut seen = Vec::new();
    drive_observed(&mut sm, &mut f, Time::from_millis(120_000), |sm, evs| {
        for ev in evs {
            if let Event::SweepFailed { .. } = ev {
                seen.push((
                    sm.resweep_due(),
                    sm.subnet().nodes.len(),
                    sm.lfts().is_some(),
                ));
            }
        }
    });
    assert_eq!(
        seen,
        vec![(true, 7, true), (true, 7, true), (false, 7, true)],
        "the sweep, two immediate re-sweeps, then the SM waits"
    );
}

/// Issue 12 (logs): each heavy sweep reports its own figures — its SMPs (all its phases, not
/// the total since start), its time from its own start, and its Sets by attribute.
#[test]
fn every_heavy_sweep_reports_its_own_smps_and_sets() {
    let (mut f, _) = f_disc();
    let mut sm = Sm::new(cfg()).unwrap();
    let mut now = Time::ZERO;
    let first = drive(&mut sm, &mut f, &mut now, Time::from_millis(60_000));
    let done = |ev: &[Event]| {
        ev.iter()
            .find_map(|e| match e {
                Event::HeavySweepDone { sweep, up, stats } => Some((*sweep, *up, *stats)),
                _ => None,
            })
            .unwrap()
    };
    let phase_smps = |ev: &[Event]| -> u64 {
        ev.iter()
            .map(|e| match e {
                Event::PhaseDone { phase, stats } if *phase != Phase::LightSweep => stats.smps,
                _ => 0,
            })
            .sum()
    };
    let (n1, up1, s1) = done(&first);
    assert_eq!((n1, up1), (1, true));
    assert_eq!(s1.smps, phase_smps(&first));
    assert_eq!(
        s1.sets.total(),
        f.sets_seen,
        "every Set the fabric saw, counted once"
    );
    assert!(s1.sets.port_info > 0 && s1.sets.lft > 0, "{:?}", s1.sets);
    assert!(s1.elapsed > std::time::Duration::ZERO);
    let line = Event::HeavySweepDone {
        sweep: n1,
        up: up1,
        stats: s1,
    }
    .log_line()
    .unwrap()
    .1;
    assert!(line.starts_with("heavy sweep 1 done in "), "{line}");
    assert!(
        line.contains(&format!("PortInfo {}", s1.sets.port_info)),
        "{line}"
    );

    sm.handle_command(now, Command::HeavySweep);
    let second = drive(&mut sm, &mut f, &mut now, Time::from_millis(120_000));
    let (n2, up2, s2) = done(&second);
    assert_eq!((n2, up2), (2, true));
    assert_eq!(s2.smps, phase_smps(&second), "not cumulative");
    assert!(s2.smps < s1.smps);
    assert_eq!(s2.sets.total(), 0, "{:?}", s2.sets);
    assert!(Event::HeavySweepDone {
        sweep: n2,
        up: up2,
        stats: s2
    }
    .log_line()
    .unwrap()
    .1
    .ends_with("Sets: none"));
}

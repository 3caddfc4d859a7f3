//! Ports that flood link-integrity traps, through the simulated fabric (OpenSM
//! `shutup_noisy_port`): from the tenth identical trap 129 naming a switch port, the port is
//! marked unhealthy and a heavy sweep routes every route off its link, every CA pair still
//! reachable; once the mark ages out (60 s) the next sweep may use the link again. With
//! `babbling_port_policy`, the 250th trap disables the port.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use fabric_sim::sim::{Fabric, SmHandle};
use fabric_sim::topo::{NodeId, PortRef, Topology};
use ibmad::attr::Notice;
use ibmad::zerocopy::{FromZeros, IntoBytes};
use ibmad::{Lid, MadMeta, Method, NodeType, PhysState, PortNum, Smp, SmpAttrId, TrapNum};
use sm::{Command, Sm, SmConfig};

/// A leaf switch, one of its ports to a spine, and the spine's end of that link.
fn leaf_uplink(topo: &Topology) -> (NodeId, u8, NodeId, u8) {
    let leaf = topo
        .nodes_of_type(NodeType::SWITCH)
        .find(|&n| topo.node(n).unwrap().name().starts_with("leaf"))
        .unwrap();
    for p in 1..=topo.node(leaf).unwrap().num_ports() {
        let Some(r) = topo.peer(PortRef {
            node: leaf,
            port: PortNum(p),
        }) else {
            continue;
        };
        if topo.node(r.node).unwrap().is_switch() {
            return (leaf, p, r.node, r.port.0);
        }
    }
    panic!("no uplink");
}

/// `n` identical traps 129 from `leaf` naming its port `port`, each 10 ms after the last.
fn flood(f: &mut Fabric, h: SmHandle, sm: &mut Sm, leaf: NodeId, port: u8, n: u32) {
    let lid = f.agent(leaf).unwrap().port_info(PortNum(0)).unwrap().lid();
    let mut notice = Notice::new_zeroed();
    notice.set_is_generic(1);
    notice.trap_num.set(TrapNum::LOCAL_LINK_INTEGRITY.0);
    notice.issuer_lid.set(lid.0);
    notice.data_details[2..4].copy_from_slice(&lid.0.to_be_bytes());
    notice.data_details[4] = port;
    for i in 0..n {
        let now = f.now();
        let mut trap = Smp::lid_request(Method::TRAP, SmpAttrId::NOTICE, 0, 0x7700 + u64::from(i));
        trap.data[..64].copy_from_slice(notice.as_bytes());
        let meta = MadMeta {
            slid: lid,
            dlid: sm.sm_lid(),
            ..MadMeta::default()
        };
        sm.handle_mad(now, &meta, trap.as_bytes());
        sim_util::drive(f, h, sm, now + std::time::Duration::from_millis(10));
    }
}

/// The LIDs switch `sw`'s table sends out of `port`.
fn lids_out_of(f: &Fabric, sw: NodeId, port: u8, top: u16) -> Vec<u16> {
    let a = f.agent(sw).unwrap();
    (1..=top)
        .filter(|&l| a.lft_port(Lid(l)) == Some(PortNum(port)))
        .collect()
}

#[test]
fn a_port_flooding_integrity_traps_is_routed_around_until_it_ages_out() {
    let (topo, mut f, h, mut sm) = sim_util::bring_up("fat-tree:2,4", SmConfig::default());
    let (leaf, up, spine, down) = leaf_uplink(&topo);
    let top = 64;
    assert!(
        !lids_out_of(&f, leaf, up, top).is_empty(),
        "the uplink carries routes"
    );
    // Nine traps: ignored as noise.
    flood(&mut f, h, &mut sm, leaf, up, 9);
    assert!(sm.unhealthy_ports().is_empty());
    // The tenth: unhealthy, and a heavy sweep moves every route off the link.
    let sweeps = sm.heavy_sweeps();
    flood(&mut f, h, &mut sm, leaf, up, 1);
    let guid = topo.node(leaf).unwrap().guid();
    assert_eq!(sm.unhealthy_ports(), vec![(guid, up)]);
    let t = f.now() + std::time::Duration::from_secs(20);
    sim_util::drive(&mut f, h, &mut sm, t);
    assert!(sm.heavy_sweeps() > sweeps && sm.is_up());
    assert_eq!(lids_out_of(&f, leaf, up, top), Vec::<u16>::new());
    assert_eq!(lids_out_of(&f, spine, down, top), Vec::<u16>::new());
    let reach = sm::check::check_all_pairs(sm.subnet(), sm.lfts().unwrap());
    assert_eq!(reach.unreachable_count, 0, "{reach:?}");
    // 60 s later the mark has aged out: a reroute may use the link again. (The fabric's
    // clock moves only with events: run it forward.)
    let t = f.now() + std::time::Duration::from_secs(61);
    f.run_until(t);
    sim_util::drive(&mut f, h, &mut sm, t);
    let before = sm.heavy_sweeps();
    sm.handle_command(f.now(), Command::Reroute);
    let t = f.now() + std::time::Duration::from_secs(20);
    sim_util::drive(&mut f, h, &mut sm, t);
    assert!(
        sm.heavy_sweeps() > before,
        "{} {}",
        sm.heavy_sweeps(),
        before
    );
    assert!(sm.unhealthy_ports().is_empty());
    assert!(
        !lids_out_of(&f, leaf, up, top).is_empty(),
        "the link is used again"
    );
}

#[test]
fn babbling_port_policy_disables_the_port() {
    let cfg = SmConfig {
        babbling_port_policy: true,
        ..SmConfig::default()
    };
    let (topo, mut f, h, mut sm) = sim_util::bring_up("fat-tree:2,4", cfg);
    let (leaf, up, _, _) = leaf_uplink(&topo);
    let phys = |f: &Fabric| {
        f.agent(leaf)
            .unwrap()
            .port_info(PortNum(up))
            .unwrap()
            .phys_state()
    };
    flood(&mut f, h, &mut sm, leaf, up, 249);
    assert_ne!(phys(&f), PhysState::DISABLED, "249 traps");
    flood(&mut f, h, &mut sm, leaf, up, 1);
    let t = f.now() + std::time::Duration::from_secs(1);
    sim_util::drive(&mut f, h, &mut sm, t);
    assert_eq!(phys(&f), PhysState::DISABLED);
}

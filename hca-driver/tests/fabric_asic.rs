//! End to end, in process: every switch of a simulated fabric is an RA-1 device model driven by
//! our driver and a host SMA (`hca_driver::sim::AsicNode`, plugged into the fabric as the
//! node's external agent). Our SM on a simulated CA discovers, programs and activates the
//! fabric; the LFTs the SM computed must be exactly what sits in the models' LFT registers, and
//! every cabled switch port must be Active in the model's PORT_STATE registers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use fabric_sim::sim::{node_config, Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, Topology};
use hca_driver::regs::logical;
use hca_driver::sim::AsicNode;
use hca_driver::{DriverConfig, InProcessBackend, ModelConfig};
use ibmad::{NodeType, PortNum, Time};
use sm::{Event, Sm, SmConfig};

struct Run {
    fabric: Fabric,
    sm: Sm,
    h: SmHandle,
    events: Vec<Event>,
    models: Vec<(NodeId, u64, InProcessBackend)>,
}

fn model_config(topo: &Topology, id: NodeId) -> ModelConfig {
    let nc = node_config(topo, id).unwrap();
    ModelConfig {
        node_guid: nc.node_guid.0,
        num_ports: nc.num_ports,
        ports: nc.ports.clone(),
        lft_blocks: 768,
        mft_blocks: 32,
        fault: hca_driver::ModelFault::None,
    }
}

fn start(spec: &str) -> Run {
    let topo = Topology::generate(spec).unwrap();
    let mut fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
    let mut models = Vec::new();
    let switches: Vec<NodeId> = topo.nodes_of_type(NodeType::SWITCH).collect();
    assert!(switches.len() >= 2, "{spec}: need at least two switches");
    for id in switches {
        let cfg = model_config(&topo, id);
        let guid = cfg.node_guid;
        let desc = topo.node(id).unwrap().desc().to_string();
        let drv = DriverConfig {
            rx_log2: 5,
            tx_log2: 5,
            spare_buffers: 32,
            ..DriverConfig::default()
        };
        let node = AsicNode::new(cfg, drv, &desc, fabric.now()).unwrap();
        models.push((id, guid, node.backend().clone()));
        assert!(fabric.set_external(id, Box::new(node)).unwrap().is_none());
    }
    let ca = topo.nodes_of_type(NodeType::CA).next().unwrap();
    let att = fabric.attach_sm(ca, PortNum(1)).unwrap();
    let sm = Sm::new(SmConfig {
        port: PortNum(1),
        sweep_interval: Duration::ZERO,
        ..SmConfig::default()
    })
    .unwrap();
    Run {
        fabric,
        sm,
        h: att.handle,
        events: Vec::new(),
        models,
    }
}

impl Run {
    fn drive(&mut self, limit: Time) {
        let events = &mut self.events;
        sm::drive(&mut self.sm, &mut self.fabric.sm_port(self.h), limit, |e| {
            events.push(e)
        })
        .unwrap();
    }
}

fn check_models_equal_sm(run: &Run) {
    let lfts = run.sm.lfts().expect("the SM computed LFTs");
    let subnet = run.sm.subnet();
    let top = lfts.top().0;
    for (id, guid, backend) in &run.models {
        let sw = subnet
            .switches()
            .find(|&s| subnet.node(s).guid.0 == *guid)
            .unwrap_or_else(|| panic!("switch {guid:#x} not discovered"));
        let want = lfts.table(sw).unwrap();
        let m = backend.model().lock().unwrap();
        assert_eq!(m.lft_top(), top, "LFT_TOP of {guid:#x}");
        for lid in 0..=top {
            let block = m.lft_block(lid / 64).unwrap();
            let got = block[usize::from(lid % 64)];
            assert_eq!(
                got,
                want[usize::from(lid)],
                "switch {guid:#x} LID {lid}: model register vs SM table"
            );
        }
        // The data plane (what the fabric forwards with) is the registers.
        let cabled = run
            .fabric
            .topology()
            .ports(*id)
            .filter(|(p, port)| p.0 >= 1 && port.peer().is_some())
            .count();
        let active = (1..=m.num_ports())
            .filter(|&p| m.port_logical(p) == logical::ACTIVE)
            .count();
        assert_eq!(active, cabled, "switch {guid:#x}: every cabled port Active");
        assert!(m.counter(hca_driver::regs::RX_SMPS) > 0);
        assert!(m.counter(hca_driver::regs::TX_SMPS) > 0);
    }
}

#[test]
fn sm_brings_up_a_fabric_of_ra1_models() {
    let mut run = start("fat-tree:2,4");
    run.drive(Time::from_millis(600_000));
    assert!(
        run.events.contains(&Event::SubnetUp),
        "no SUBNET UP; last events: {:#?}",
        &run.events[run.events.len().saturating_sub(20)..]
    );
    eprintln!(
        "{} model switches, {} events, now {:?}",
        run.models.len(),
        run.events.len(),
        run.fabric.now()
    );
    check_models_equal_sm(&run);
    // The built-in agents of the model switches were never used.
    for (id, _, _) in &run.models {
        assert_eq!(run.fabric.agent(*id).unwrap().stats().received, 0);
    }
}

#[test]
fn a_cut_link_becomes_a_trap_and_the_sm_reprograms_the_models() {
    let mut run = start("fat-tree:2,4");
    run.drive(Time::from_millis(600_000));
    let ups = |r: &Run| r.events.iter().filter(|e| **e == Event::SubnetUp).count();
    assert_eq!(ups(&run), 1);
    // A switch-to-switch cable.
    let topo = run.fabric.topology().clone();
    let link = topo
        .links()
        .find(|l| {
            topo.node(l.a.node).unwrap().is_switch() && topo.node(l.b.node).unwrap().is_switch()
        })
        .unwrap();
    let sent_before: u32 = run
        .models
        .iter()
        .map(|(_, _, b)| b.model().lock().unwrap().counter(hca_driver::regs::TX_SMPS))
        .sum();
    run.fabric
        .set_link(link.a.node, link.a.port, false)
        .unwrap();
    // The models saw the link go down in their registers.
    for end in [link.a, link.b] {
        let (_, _, b) = run
            .models
            .iter()
            .find(|(id, _, _)| *id == end.node)
            .unwrap();
        let m = b.model().lock().unwrap();
        assert_eq!(m.port_logical(end.port.0), logical::DOWN);
        assert_eq!(m.port_phys(end.port.0), hca_driver::regs::phys::POLLING);
    }
    let t = run.fabric.now() + Duration::from_secs(600);
    run.drive(t);
    // No periodic sweeps are configured: only the host SMAs' traps 128 can have made the SM
    // sweep again and reach SUBNET UP a second time.
    assert!(ups(&run) >= 2, "the traps did not lead to a new sweep");
    let sent_after: u32 = run
        .models
        .iter()
        .map(|(_, _, b)| b.model().lock().unwrap().counter(hca_driver::regs::TX_SMPS))
        .sum();
    assert!(sent_after > sent_before);
    // Every model except the cut ports: all cabled ports Active and LFTs == SM tables again.
    let lfts = run.sm.lfts().unwrap();
    let subnet = run.sm.subnet();
    for (_, guid, b) in &run.models {
        let sw = subnet
            .switches()
            .find(|&s| subnet.node(s).guid.0 == *guid)
            .unwrap();
        let want = lfts.table(sw).unwrap();
        let m = b.model().lock().unwrap();
        for lid in 0..=lfts.top().0 {
            assert_eq!(
                m.lft_block(lid / 64).unwrap()[usize::from(lid % 64)],
                want[usize::from(lid)],
                "switch {guid:#x} LID {lid} after the reroute"
            );
        }
    }
}

#[test]
fn larger_fabric_with_several_lft_blocks() {
    // 16-port switches: 8 spines, 16 leaves, 128 CAs — LIDs beyond one 64-entry LFT block.
    let mut run = start("fat-tree:2,16");
    run.drive(Time::from_millis(600_000));
    assert!(run.events.contains(&Event::SubnetUp));
    let top = run.sm.lfts().unwrap().top().0;
    assert!(
        top >= 128,
        "LinearFDBTop {top}: several LFT blocks programmed"
    );
    let rx: u32 = run
        .models
        .iter()
        .map(|(_, _, b)| b.model().lock().unwrap().counter(hca_driver::regs::RX_SMPS))
        .sum();
    eprintln!(
        "{} models, top {top}, {rx} SMPs through the models' QP0 rings",
        run.models.len()
    );
    check_models_equal_sm(&run);
}

/// RA-1 v1.1 in a fabric: after bring-up, a PerfMgt Get from the SM's CA is LID-routed to a
/// model switch, reaches the host PMA on QP1 and comes back with the counters the model's
/// registers hold (the SMPs of the bring-up counted).
#[test]
fn a_pma_get_to_a_model_switch_is_answered_from_its_counter_registers() {
    use hca_driver::regs::P_RCV_PKTS;
    use ibmad::perf::{CounterSelect, PerfMad, PortCountersRepr};
    use ibmad::zerocopy::IntoBytes;
    use ibmad::{GmpAttrRepr, Lid, MadMeta, Method, PmaAttrId};
    let mut run = start("fat-tree:2,4");
    run.drive(Time::from_millis(600_000));
    assert!(run.events.contains(&Event::SubnetUp));
    let (id, guid, backend) = run.models[0].clone();
    let _ = guid;
    let lid = backend
        .model()
        .lock()
        .unwrap()
        .read(hca_driver::regs::SW_LID) as u16;
    assert_ne!(lid, 0, "the SM gave the switch a LID");
    let my_lid = run.sm.sm_lid();
    let cabled: Vec<u8> = run
        .fabric
        .topology()
        .ports(id)
        .filter(|(p, port)| p.0 >= 1 && port.peer().is_some())
        .map(|(p, _)| p.0)
        .collect();
    for (tid, port_select) in [(0x77u64, cabled[0]), (0x78, 0xFF)] {
        let mut m = PerfMad::request(Method::GET, PmaAttrId::PORT_COUNTERS, 0, tid);
        PortCountersRepr {
            port_select,
            counter_select: CounterSelect(0),
            ..PortCountersRepr::default()
        }
        .emit(&mut m.data)
        .unwrap();
        let meta = MadMeta {
            port: PortNum(1),
            slid: my_lid,
            dlid: Lid(lid),
            qp: 1,
            ..MadMeta::default()
        };
        run.fabric.sm_send(run.h, &meta, m.as_bytes()).unwrap();
        run.fabric
            .run_until(Time(run.fabric.now().0 + 1_000_000_000));
        let mut buf = [0u8; 256];
        let (rmeta, len) = run
            .fabric
            .sm_recv(run.h, &mut buf)
            .unwrap()
            .expect("an answer");
        assert_eq!(len, 256);
        assert_eq!(rmeta.slid, Lid(lid));
        assert_eq!((buf[1], buf[3]), (0x04, Method::GET_RESP.0));
        assert_eq!(&buf[8..16], &tid.to_be_bytes());
        assert_eq!(u16::from_be_bytes([buf[4], buf[5]]), 0);
        let pc = PortCountersRepr::parse(&buf[64..]).unwrap();
        assert_eq!(pc.port_select, port_select);
        assert!(pc.port_xmit_pkts > 0 && pc.port_rcv_pkts > 0, "{pc:?}");
        if port_select != 0xFF {
            let m = backend.model().lock().unwrap();
            let reg = m.port_counter(port_select, P_RCV_PKTS);
            assert_eq!(pc.port_rcv_pkts, reg, "the register the PMA read");
        }
    }
}

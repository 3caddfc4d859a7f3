//! `Fabric::set_external`: a node's management handed to an outside agent (here a real
//! `sma::Agent` behind the trait, plus knobs), its data-plane state taken from that agent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use fabric_sim::sim::{node_config, ExternalAgent, Fabric, SimConfig};
use fabric_sim::topo::{NodeId, Topology};
use ibmad::attr::NodeInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{
    DrPath, Lid, MadMeta, MadPort, Method, NodeType, PortNum, PortState, Smp, SmpAttrId, Time,
};
use sma::{Agent, LinkEvent, LinkRequest, NoHardware, Transmit};

#[derive(Default)]
struct Log {
    delivered: Vec<(u8, u64)>,
    links: Vec<(u8, bool)>,
}

struct Ext {
    agent: Agent<NoHardware>,
    log: Arc<Mutex<Log>>,
    requests: VecDeque<(PortNum, LinkRequest)>,
    own_lid: u16,
}

impl ExternalAgent for Ext {
    fn deliver(&mut self, now: Time, meta: &MadMeta, mad: &[u8]) {
        let tid = u64::from_be_bytes(mad[8..16].try_into().unwrap());
        self.log.lock().unwrap().delivered.push((meta.port.0, tid));
        self.agent.handle_mad(now, meta, mad);
    }
    fn link(&mut self, now: Time, port: PortNum, ev: LinkEvent) {
        self.log
            .lock()
            .unwrap()
            .links
            .push((port.0, matches!(ev, LinkEvent::Up { .. })));
        self.agent.handle_link(now, port, ev);
    }
    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        self.agent.poll_transmit(now, buf)
    }
    fn poll_link_request(&mut self) -> Option<(PortNum, LinkRequest)> {
        self.requests.pop_front()
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.agent.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Time) {
        self.agent.handle_timeout(now);
    }
    fn lft_port(&self, _dlid: Lid) -> Option<PortNum> {
        None
    }
    fn lid_matches(&self, dlid: Lid) -> bool {
        dlid.0 == self.own_lid
    }
    fn port_state(&self, port: PortNum) -> PortState {
        self.agent
            .port_info(port)
            .map_or(PortState::DOWN, |p| p.port_state())
    }
}

fn setup() -> (Fabric, NodeId, Arc<Mutex<Log>>, fabric_sim::sim::SmHandle) {
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let mut fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
    let ca = topo.nodes_of_type(NodeType::CA).next().unwrap();
    let leaf = topo
        .peer(fabric_sim::topo::PortRef {
            node: ca,
            port: PortNum(1),
        })
        .unwrap()
        .node;
    let log = Arc::new(Mutex::new(Log::default()));
    let ext = Ext {
        agent: Agent::new(node_config(&topo, leaf).unwrap(), NoHardware).unwrap(),
        log: log.clone(),
        requests: VecDeque::new(),
        own_lid: 77,
    };
    assert!(fabric.set_external(leaf, Box::new(ext)).unwrap().is_none());
    let sm = fabric.attach_sm(ca, PortNum(1)).unwrap().handle;
    (fabric, leaf, log, sm)
}

fn meta() -> MadMeta {
    MadMeta {
        port: PortNum(1),
        slid: Lid::PERMISSIVE,
        dlid: Lid::PERMISSIVE,
        qp: 0,
        sl: 0,
        ..Default::default()
    }
}

#[test]
fn external_node_answers_instead_of_the_built_in_agent() {
    let (mut fabric, leaf, log, sm) = setup();
    // The links that were up were reported to the external agent.
    let cabled = fabric
        .topology()
        .ports(leaf)
        .filter(|(p, port)| p.0 >= 1 && port.peer().is_some())
        .count();
    assert_eq!(log.lock().unwrap().links.len(), cabled);
    assert!(log.lock().unwrap().links.iter().all(|&(_, up)| up));
    assert!(fabric.external(leaf).is_some());

    let req = Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        42,
        &DrPath::parse("0,1").unwrap(),
    );
    fabric.sm_port(sm).send(&meta(), req.as_bytes()).unwrap();
    fabric.run_until(Time::from_millis(1));
    let mut buf = [0u8; 256];
    let (_, len) = fabric
        .sm_port(sm)
        .recv(&mut buf)
        .unwrap()
        .expect("an answer");
    let resp = Smp::ref_from_bytes(&buf[..len]).unwrap();
    let (ni, _) = NodeInfo::ref_from_prefix(&resp.data).unwrap();
    assert_eq!(ni.node_type(), NodeType::SWITCH);
    assert_eq!(log.lock().unwrap().delivered, vec![(1, 42)]);
    assert_eq!(fabric.agent(leaf).unwrap().stats().received, 0);
}

#[test]
fn lid_routing_uses_the_external_state() {
    let (mut fabric, _leaf, log, sm) = setup();
    let mut m = meta();
    // LID 77 is the external node's own LID (its lid_matches): delivered to it.
    m.dlid = Lid(77);
    m.slid = Lid(1);
    let req = Smp::lid_request(Method::GET, SmpAttrId::NODE_INFO, 0, 7);
    fabric.sm_port(sm).send(&m, req.as_bytes()).unwrap();
    // LID 78: its LFT (lft_port → None) drops it.
    m.dlid = Lid(78);
    let req = Smp::lid_request(Method::GET, SmpAttrId::NODE_INFO, 0, 8);
    fabric.sm_port(sm).send(&m, req.as_bytes()).unwrap();
    let dropped0 = fabric.stats().dropped.total();
    fabric.run_until(Time::from_millis(1));
    assert_eq!(log.lock().unwrap().delivered, vec![(1, 7)]);
    assert_eq!(fabric.stats().dropped.total(), dropped0 + 1);
}

#[test]
fn link_requests_from_the_external_node_are_carried_out() {
    let (mut fabric, leaf, log, _sm) = setup();
    let up_port = fabric
        .topology()
        .ports(leaf)
        .find(|(p, port)| p.0 >= 2 && port.peer().is_some())
        .unwrap()
        .0;
    assert!(fabric.is_link_up(leaf, up_port));
    let before = log.lock().unwrap().links.len();
    assert!(fabric.external_mut(leaf).is_some());
    // Replace the external agent by one that asks for Disable on one port.
    let topo = fabric.topology().clone();
    let log2 = Arc::new(Mutex::new(Log::default()));
    let mut ext = Ext {
        agent: Agent::new(node_config(&topo, leaf).unwrap(), NoHardware).unwrap(),
        log: log2.clone(),
        requests: VecDeque::new(),
        own_lid: 77,
    };
    ext.requests.push_back((up_port, LinkRequest::Disable));
    let old = fabric.set_external(leaf, Box::new(ext)).unwrap();
    assert!(old.is_some(), "the previous external agent is handed back");
    fabric.run_until(Time::from_millis(1));
    assert!(!fabric.is_link_up(leaf, up_port), "Disable was carried out");
    assert!(log2
        .lock()
        .unwrap()
        .links
        .iter()
        .any(|&(p, up)| p == up_port.0 && !up));
    assert_eq!(log.lock().unwrap().links.len(), before);
}

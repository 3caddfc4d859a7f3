//! Test harness: node configs, a tiny wired fabric of real agents moving bytes by hand, and
//! SMP builders.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use ibmad::smi::{self, Forward};
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, Guid, Lid, MadMeta, Method, NodeType, PortNum, Smp, SmpAttrId, Time};
use sma::{Agent, Event, LinkEvent, NodeConfig, PortConfig, Transmit};

pub const UP: LinkEvent = LinkEvent::Up {
    width_active: 2,
    speed_active: 4,
    speed_ext_active: 0,
};

pub fn switch_cfg(guid: u64, ports: u8) -> NodeConfig {
    NodeConfig {
        node_type: NodeType::SWITCH,
        node_guid: Guid(guid),
        sys_image_guid: Guid(guid),
        desc: format!("switch {guid:#x}"),
        num_ports: ports,
        port_guids: (0..=ports).map(|_| Guid(guid)).collect(),
        ports: vec![PortConfig::default_qdr_4x(); usize::from(ports) + 1],
        vendor_id: 0x0002c9,
        device_id: 0xbd36,
        revision: 0xa0,
        lft_cap: 49152,
        mft_cap: 1024,
        enhanced_port0: false,
    }
}

pub fn ca_cfg(guid: u64, ports: u8) -> NodeConfig {
    NodeConfig {
        node_type: NodeType::CA,
        node_guid: Guid(guid),
        sys_image_guid: Guid(guid),
        desc: format!("host {guid:#x}"),
        num_ports: ports,
        port_guids: (0..=ports).map(|p| Guid(guid + u64::from(p))).collect(),
        ports: vec![PortConfig::default_qdr_4x(); usize::from(ports) + 1],
        vendor_id: 0x0002c9,
        device_id: 0x673c,
        revision: 1,
        lft_cap: 0,
        mft_cap: 0,
        enhanced_port0: false,
    }
}

pub fn switch(guid: u64, ports: u8) -> Agent {
    Agent::new(switch_cfg(guid, ports), sma::NoHardware).unwrap()
}

pub fn ca(guid: u64, ports: u8) -> Agent {
    Agent::new(ca_cfg(guid, ports), sma::NoHardware).unwrap()
}

pub fn meta(port: u8) -> MadMeta {
    MadMeta {
        port: PortNum(port),
        slid: Lid::PERMISSIVE,
        dlid: Lid::PERMISSIVE,
        qp: 0,
        sl: 0,
        ..Default::default()
    }
}

pub fn lid_meta(port: u8, slid: u16, dlid: u16) -> MadMeta {
    MadMeta {
        port: PortNum(port),
        slid: Lid(slid),
        dlid: Lid(dlid),
        qp: 0,
        sl: 0,
        ..Default::default()
    }
}

/// All queued transmits.
pub fn drain<H: sma::Hardware>(a: &mut Agent<H>) -> Vec<(Transmit, Smp)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    while let Some(t) = a.poll_transmit(Time::ZERO, &mut buf) {
        out.push((t, Smp::read_from_bytes(&buf[..t.len]).unwrap()));
    }
    out
}

thread_local! {
    /// Events `local` polled past while looking for the response; `events` returns them first.
    static STASH: std::cell::RefCell<Vec<Event>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Every pending event (including those `local` stashed). Tests use one agent at a time.
pub fn events<H: sma::Hardware>(a: &mut Agent<H>) -> Vec<Event> {
    let mut v = STASH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    v.extend(std::iter::from_fn(|| a.poll_event()));
    v
}

/// A DR request as the SM's own SMI sends it: hop pointer already advanced (C14-9:1).
/// For a 0-hop path the request is for the local SMA.
pub fn dr(method: Method, attr: SmpAttrId, attr_mod: u32, path: &[u8]) -> Smp {
    let mut s = Smp::dr_request(method, attr, attr_mod, 0x1234, &DrPath::new(path).unwrap());
    let _ = smi::advance(&mut s, false);
    s
}

/// Sends a 0-hop DR request to `a` (arriving on `port`) and returns the response the local SM
/// gets back (via Event::ForSm).
pub fn local<H: sma::Hardware>(a: &mut Agent<H>, port: u8, req: Smp) -> Option<Smp> {
    a.handle_mad(Time::ZERO, &meta(port), req.as_bytes());
    let mut got = None;
    for e in std::iter::from_fn(|| a.poll_event()).collect::<Vec<_>>() {
        match e {
            Event::ForSm { mad, .. } if got.is_none() => {
                got = Some(Smp::read_from_bytes(&mad[..]).unwrap());
            }
            e => STASH.with(|s| s.borrow_mut().push(e)),
        }
    }
    got
}

/// Local Get with the data of the response.
pub fn get<H: sma::Hardware>(a: &mut Agent<H>, port: u8, attr: SmpAttrId, attr_mod: u32) -> Smp {
    local(a, port, dr(Method::GET, attr, attr_mod, &[])).expect("a response")
}

/// Local Set of `data`.
pub fn set<H: sma::Hardware>(
    a: &mut Agent<H>,
    port: u8,
    attr: SmpAttrId,
    attr_mod: u32,
    data: &[u8],
) -> Smp {
    let mut s = dr(Method::SET, attr, attr_mod, &[]);
    s.data[..data.len()].copy_from_slice(data);
    local(a, port, s).expect("a response")
}

pub fn set_mkey<H: sma::Hardware>(a: &mut Agent<H>, port: u8, req: Smp) -> Option<Smp> {
    local(a, port, req)
}

/// A fabric of real agents wired port to port. Node 0 is where the SM sits.
pub struct Fabric {
    pub nodes: Vec<Agent>,
    pub links: HashMap<(usize, u8), (usize, u8)>,
    /// MADs that reached the SM (node, ingress meta, smp).
    pub to_sm: Vec<(usize, MadMeta, Smp)>,
    /// Every hop delivered: (from node, from port, to node, to port).
    pub hops: Vec<(usize, u8, usize, u8)>,
}

impl Fabric {
    pub fn new(nodes: Vec<Agent>) -> Fabric {
        Fabric {
            nodes,
            links: HashMap::new(),
            to_sm: Vec::new(),
            hops: Vec::new(),
        }
    }

    pub fn link(&mut self, a: usize, pa: u8, b: usize, pb: u8) {
        self.links.insert((a, pa), (b, pb));
        self.links.insert((b, pb), (a, pa));
        self.nodes[a].handle_link(Time::ZERO, PortNum(pa), UP);
        self.nodes[b].handle_link(Time::ZERO, PortNum(pb), UP);
        for n in &mut self.nodes {
            let _ = events(n);
        }
    }

    /// The SM on node `sm` sends `smp` (hop pointer 0) out of its port; runs to quiescence.
    pub fn sm_send(&mut self, sm: usize, mut smp: Smp) {
        match smi::advance(&mut smp, self.nodes[sm].is_switch()) {
            Forward::Out(p) => self.deliver(sm, p.0, smp),
            Forward::Local => {
                self.nodes[sm].handle_mad(Time::ZERO, &meta(1), smp.as_bytes());
            }
            f => panic!("SM could not send: {f:?}"),
        }
        self.run();
    }

    fn deliver(&mut self, from: usize, port: u8, smp: Smp) {
        if let Some(&(to, tp)) = self.links.get(&(from, port)) {
            self.hops.push((from, port, to, tp));
            let m = MadMeta {
                port: PortNum(tp),
                ..meta(tp)
            };
            self.nodes[to].handle_mad(Time::ZERO, &m, smp.as_bytes());
        }
    }

    pub fn run(&mut self) {
        for _ in 0..10_000 {
            let mut moved = false;
            for i in 0..self.nodes.len() {
                for (t, s) in drain(&mut self.nodes[i]) {
                    moved = true;
                    self.deliver(i, t.meta.port.0, s);
                }
                for e in events(&mut self.nodes[i]) {
                    if let Event::ForSm { meta, mad } = e {
                        self.to_sm
                            .push((i, meta, Smp::read_from_bytes(&mad[..]).unwrap()));
                    }
                }
            }
            if !moved {
                return;
            }
        }
        panic!("fabric did not quiesce");
    }
}

/// A Hardware that records every call.
#[derive(Default, Debug)]
pub struct Recorder {
    pub link_requests: Vec<(PortNum, sma::LinkRequest)>,
    pub port_infos: Vec<PortNum>,
    pub lft_blocks: Vec<u16>,
    pub switch_infos: usize,
    pub mft_blocks: Vec<(u16, u8)>,
    pub sl2vl: Vec<(PortNum, PortNum)>,
    pub vl_arb: Vec<(PortNum, u8)>,
    pub pkeys: Vec<PortNum>,
    pub guid_infos: Vec<PortNum>,
}

impl sma::Hardware for Recorder {
    fn port_info_written(&mut self, port: PortNum, _pi: &ibmad::attr::PortInfo) {
        self.port_infos.push(port);
    }
    fn link_request(&mut self, port: PortNum, req: sma::LinkRequest) {
        self.link_requests.push((port, req));
    }
    fn switch_info_written(&mut self, _si: &ibmad::attr::SwitchInfo) {
        self.switch_infos += 1;
    }
    fn lft_block_written(&mut self, block: u16, _ports: &[u8; 64]) {
        self.lft_blocks.push(block);
    }
    fn mft_block_written(&mut self, block: u16, position: u8, _m: &ibmad::attr::MftBlock) {
        self.mft_blocks.push((block, position));
    }
    fn sl2vl_written(&mut self, i: PortNum, o: PortNum, _t: &ibmad::attr::SlToVl) {
        self.sl2vl.push((i, o));
    }
    fn vl_arb_written(&mut self, port: PortNum, block: u8, _t: &ibmad::attr::VlArbTable) {
        self.vl_arb.push((port, block));
    }
    fn pkeys_written(&mut self, port: PortNum, _b: u16, _t: &ibmad::attr::PKeyTable) {
        self.pkeys.push(port);
    }
    fn guid_info_written(&mut self, port: PortNum, _b: u16, _t: &ibmad::attr::GuidInfo) {
        self.guid_infos.push(port);
    }
}

pub fn rec_switch(guid: u64, ports: u8) -> Agent<Recorder> {
    Agent::new(switch_cfg(guid, ports), Recorder::default()).unwrap()
}

pub fn rec_ca(guid: u64, ports: u8) -> Agent<Recorder> {
    Agent::new(ca_cfg(guid, ports), Recorder::default()).unwrap()
}

pub fn port_info<H: sma::Hardware>(a: &Agent<H>, port: u8) -> ibmad::attr::PortInfo {
    *a.port_info(PortNum(port)).unwrap()
}

/// PortInfo Set of `pi` to `port` of `a` (arriving on `in_port`), returning the response.
pub fn set_pi<H: sma::Hardware>(
    a: &mut Agent<H>,
    in_port: u8,
    port: u8,
    pi: &ibmad::attr::PortInfo,
) -> Smp {
    set(
        a,
        in_port,
        SmpAttrId::PORT_INFO,
        u32::from(port),
        pi.as_bytes(),
    )
}

/// A parameter-only PortInfo Set template: the current value with PortState/PhysState = 0.
pub fn pi_template<H: sma::Hardware>(a: &Agent<H>, port: u8) -> ibmad::attr::PortInfo {
    let mut pi = port_info(a, port);
    pi.set_port_state(ibmad::PortState::NO_CHANGE);
    pi.set_phys_state(ibmad::PhysState::NO_CHANGE);
    pi
}

//! A minimal hand-built fabric for the SM core's tests: nodes with ports and links, a tiny
//! SMA per node (Get/Set of NodeInfo, NodeDescription, SwitchInfo, PortInfo, LFT), and
//! directed-route forwarding with the same `ibmad::smi` rules the real stack uses. Loss and
//! duplication are deterministic (every n-th SMP).
#![allow(dead_code)]

use std::collections::VecDeque;

use ibmad::attr::{NodeDesc, NodeInfo, PortInfo, SwitchInfo};
use ibmad::smi::{self, Forward, SmiAction};
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
use ibmad::{MadMeta, Method, PhysState, PortNum, PortState, Smp, SmpAttrId, Status, Time};
use sm::{Event, Sm};

pub struct FPort {
    pub info: PortInfo,
    pub remote: Option<(usize, u8)>,
}

pub struct FNode {
    pub guid: u64,
    pub is_switch: bool,
    pub ports: Vec<FPort>,
    pub desc: String,
    pub si: SwitchInfo,
    pub lft: Vec<u8>,
    pub mute: bool,
}

pub struct Fake {
    pub nodes: Vec<FNode>,
    /// Node the SM runs on and its port.
    pub sm_node: usize,
    pub sm_port: u8,
    pub in_flight: VecDeque<(Time, [u8; 256])>,
    pub latency: u64,
    /// Drop every n-th SMP handed to the fabric (0 = never).
    pub drop_every: u64,
    /// Duplicate every n-th response (0 = never).
    pub dup_every: u64,
    pub count: u64,
    pub smps_seen: u64,
    pub sets_seen: u64,
    pub lid_routed_seen: u64,
    /// Lose every LID-routed SMP (as with broken LFTs).
    pub lid_broken: bool,
}

fn port_info(state: PortState, local: u8) -> PortInfo {
    let mut p = PortInfo::new_zeroed();
    p.set_port_state(state);
    p.set_phys_state(if state == PortState::DOWN {
        PhysState::POLLING
    } else {
        PhysState::LINK_UP
    });
    p.local_port_num = local;
    p.set_mtu_cap(5);
    p.set_vl_cap(4);
    p.set_neighbor_mtu(1);
    p.set_operational_vls(1);
    p.link_width_supported = 3;
    p.link_width_enabled = 3;
    p.set_link_speed_supported(7);
    p.set_link_speed_enabled(7);
    p
}

impl Fake {
    pub fn new() -> Fake {
        Fake {
            nodes: Vec::new(),
            sm_node: 0,
            sm_port: 1,
            in_flight: VecDeque::new(),
            latency: 1_000,
            drop_every: 0,
            dup_every: 0,
            count: 0,
            smps_seen: 0,
            sets_seen: 0,
            lid_routed_seen: 0,
            lid_broken: false,
        }
    }

    pub fn add(&mut self, guid: u64, is_switch: bool, nports: u8, desc: &str) -> usize {
        let first = if is_switch { 0 } else { 1 };
        let ports = (0..=nports)
            .map(|p| {
                // A switch's port 0 has no cable: LinkUp, logical state Init (as sma).
                let st = if is_switch && p == 0 {
                    PortState::INIT
                } else {
                    PortState::DOWN
                };
                let _ = first;
                FPort {
                    info: port_info(st, p),
                    remote: None,
                }
            })
            .collect();
        let mut si = SwitchInfo::new_zeroed();
        si.linear_fdb_cap.set(0xC000);
        self.nodes.push(FNode {
            guid,
            is_switch,
            ports,
            desc: desc.to_string(),
            si,
            lft: vec![0xFF; 0xC000],
            mute: false,
        });
        self.nodes.len() - 1
    }

    /// Cables a.pa to b.pb; both ports train to LinkUp/Init.
    pub fn link(&mut self, a: usize, pa: u8, b: usize, pb: u8) {
        for (n, p, r) in [(a, pa, (b, pb)), (b, pb, (a, pa))] {
            let port = &mut self.nodes[n].ports[p as usize];
            port.remote = Some(r);
            port.info.set_port_state(PortState::INIT);
            port.info.set_phys_state(PhysState::LINK_UP);
            if self.nodes[n].is_switch {
                self.nodes[n].si.set_port_state_change(1);
            }
        }
    }

    pub fn unlink(&mut self, a: usize, pa: u8) {
        if let Some((b, pb)) = self.nodes[a].ports[pa as usize].remote.take() {
            self.nodes[b].ports[pb as usize].remote = None;
            for (n, p) in [(a, pa), (b, pb)] {
                let port = &mut self.nodes[n].ports[p as usize];
                port.info.set_port_state(PortState::DOWN);
                port.info.set_phys_state(PhysState::POLLING);
                if self.nodes[n].is_switch {
                    self.nodes[n].si.set_port_state_change(1);
                }
            }
        }
    }

    fn answer(&mut self, n: usize, in_port: u8, smp: &mut Smp) {
        let node = &mut self.nodes[n];
        let am = smp.attr_mod.get();
        let set = smp.method() == Method::SET;
        if set {
            self.sets_seen += 1;
        }
        let mut status = Status::OK;
        match smp.attr() {
            SmpAttrId::NODE_INFO => {
                let mut ni = NodeInfo::new_zeroed();
                ni.base_version = 1;
                ni.class_version = 1;
                ni.node_type = if node.is_switch { 2 } else { 1 };
                ni.num_ports = (node.ports.len() - 1) as u8;
                ni.node_guid.set(node.guid);
                ni.system_image_guid.set(node.guid);
                let pg = if node.is_switch {
                    node.guid
                } else {
                    node.guid + u64::from(in_port)
                };
                ni.port_guid.set(pg);
                ni.local_port_num = in_port;
                smp.data = [0; 64];
                smp.data[..40].copy_from_slice(ni.as_bytes());
            }
            SmpAttrId::NODE_DESC => {
                smp.data = NodeDesc::from_str_lossy(&node.desc).text;
            }
            SmpAttrId::SWITCH_INFO if node.is_switch => {
                if set {
                    let (new, _) = SwitchInfo::read_from_prefix(&smp.data).unwrap();
                    node.si.linear_fdb_top = new.linear_fdb_top;
                    node.si.set_life_time_value(new.life_time_value());
                    if new.port_state_change() == 1 {
                        node.si.set_port_state_change(0);
                    }
                }
                smp.data = node.si.as_bytes().try_into().unwrap();
            }
            SmpAttrId::LINEAR_FT if node.is_switch => {
                let b = am as usize * 64;
                if set {
                    node.lft[b..b + 64].copy_from_slice(&smp.data);
                }
                smp.data.copy_from_slice(&node.lft[b..b + 64]);
            }
            SmpAttrId::PORT_INFO => {
                let p = if node.is_switch {
                    am as usize
                } else {
                    in_port as usize
                };
                match node.ports.get_mut(p) {
                    None => status = Status::INVALID_FIELD,
                    Some(port) => {
                        if set {
                            let (new, _) = PortInfo::read_from_prefix(&smp.data).unwrap();
                            let cur = port.info.port_state();
                            let to = new.port_state();
                            let ok = match to {
                                PortState::NO_CHANGE => true,
                                PortState::ARMED => cur == PortState::INIT,
                                PortState::ACTIVE => cur == PortState::ARMED,
                                _ => false,
                            };
                            if ok {
                                let i = &mut port.info;
                                i.lid = new.lid;
                                i.set_lmc(new.lmc());
                                i.master_sm_lid = new.master_sm_lid;
                                i.set_subnet_timeout(new.subnet_timeout());
                                i.set_neighbor_mtu(new.neighbor_mtu());
                                i.set_operational_vls(new.operational_vls());
                                i.link_width_enabled = new.link_width_enabled;
                                i.set_link_speed_enabled(new.link_speed_enabled());
                                i.vl_high_limit = new.vl_high_limit;
                                i.set_hoq_life(new.hoq_life());
                                i.set_vl_stall_count(new.vl_stall_count());
                                i.set_local_phy_errors(new.local_phy_errors());
                                i.set_overrun_errors(new.overrun_errors());
                                i.m_key = new.m_key;
                                i.gid_prefix = new.gid_prefix;
                                if to != PortState::NO_CHANGE {
                                    i.set_port_state(to);
                                }
                            } else {
                                status = Status::INVALID_FIELD;
                            }
                        }
                        let mut out = port.info;
                        out.local_port_num = in_port;
                        smp.data = out.as_bytes().try_into().unwrap();
                    }
                }
            }
            _ => status = Status::METHOD_ATTR_NOT_SUPPORTED,
        }
        smp.set_status(status);
        smi::make_response(smp);
    }

    /// Walks one SMP from the SM through the fabric; returns the response if any.
    fn walk(&mut self, raw: &[u8; 256]) -> Option<[u8; 256]> {
        let mut smp = Smp::read_from_bytes(raw).ok()?;
        // The SM's node originates (C14-9:1); hop count 0 means local delivery.
        let mut node = self.sm_node;
        let mut fwd = smi::advance(&mut smp, self.nodes[node].is_switch);
        let mut in_port = self.sm_port;
        for _ in 0..200 {
            match fwd {
                Forward::Local => {
                    if smp.direction() {
                        return (node == self.sm_node).then(|| smp.as_bytes().try_into().unwrap());
                    }
                    if self.nodes[node].mute {
                        return None;
                    }
                    let ip = if smp.hop_cnt == 0 {
                        self.sm_port
                    } else {
                        in_port
                    };
                    let ip = if self.nodes[node].is_switch && smp.hop_cnt == 0 {
                        0
                    } else {
                        ip
                    };
                    self.answer(node, ip, &mut smp);
                    fwd = smi::advance(&mut smp, self.nodes[node].is_switch);
                }
                Forward::Out(p) => {
                    let (rn, rp) = self.nodes[node].ports.get(p.0 as usize)?.remote?;
                    node = rn;
                    in_port = rp;
                    let is_sw = self.nodes[node].is_switch;
                    let np = (self.nodes[node].ports.len() - 1) as u8;
                    match smi::on_receive(&mut smp, is_sw, np, PortNum(rp)) {
                        SmiAction::Handle => {}
                        SmiAction::Discard(_) => return None,
                    }
                    fwd = smi::advance(&mut smp, is_sw);
                }
                _ => return None,
            }
        }
        None
    }

    /// The node and port a LID names (switch: port 0's LID; CA: that port's).
    fn owner(&self, lid: u16) -> Option<(usize, u8)> {
        self.nodes.iter().enumerate().find_map(|(i, n)| {
            n.ports.iter().enumerate().find_map(|(p, port)| {
                let end = if n.is_switch { p == 0 } else { p >= 1 };
                (end && port.info.lid.get() == lid && lid != 0).then_some((i, p as u8))
            })
        })
    }

    /// Moves a LID-routed SMP from node `at` (arrived on `in_port`, or originated there) to the
    /// node owning `dlid`, by the switches' LFTs; returns (node, arrival port).
    fn lid_route(&self, mut at: usize, mut in_port: u8, dlid: u16) -> Option<(usize, u8)> {
        let (target, tport) = self.owner(dlid)?;
        for _ in 0..64 {
            if at == target {
                return Some((
                    at,
                    if self.nodes[at].is_switch {
                        in_port
                    } else {
                        tport
                    },
                ));
            }
            let n = &self.nodes[at];
            let out = if n.is_switch {
                n.lft[dlid as usize]
            } else {
                in_port
            };
            let port = n.ports.get(out as usize)?;
            if port.info.port_state() == PortState::DOWN {
                return None;
            }
            let (rn, rp) = port.remote?;
            at = rn;
            in_port = rp;
        }
        None
    }

    fn lid_walk(&mut self, raw: &[u8; 256], slid: u16, dlid: u16) -> Option<[u8; 256]> {
        let mut smp = Smp::read_from_bytes(raw).ok()?;
        let (node, in_port) = self.lid_route(self.sm_node, self.sm_port, dlid)?;
        if self.nodes[node].mute {
            return None;
        }
        self.answer(node, in_port, &mut smp);
        // Back to the SM's LID.
        let (back, _) = self.lid_route(node, in_port, slid)?;
        (back == self.sm_node).then(|| smp.as_bytes().try_into().unwrap())
    }

    /// Hands one SMP from the SM to the fabric at `now`.
    pub fn send_meta(&mut self, now: Time, meta: &MadMeta, raw: &[u8; 256]) {
        if raw[1] == 0x01 {
            self.count += 1;
            self.smps_seen += 1;
            self.lid_routed_seen += 1;
            if self.lid_broken || self.drop_every != 0 && self.count.is_multiple_of(self.drop_every)
            {
                return;
            }
            let slid = self.nodes[self.sm_node].ports[self.sm_port as usize]
                .info
                .lid
                .get();
            let slid = if meta.slid.0 != 0 { meta.slid.0 } else { slid };
            if let Some(resp) = self.lid_walk(raw, slid, meta.dlid.0) {
                self.in_flight.push_back((Time(now.0 + self.latency), resp));
            }
            return;
        }
        self.send(now, raw);
    }

    /// Hands one directed-route SMP from the SM to the fabric at `now`.
    pub fn send(&mut self, now: Time, raw: &[u8; 256]) {
        self.count += 1;
        self.smps_seen += 1;
        if self.drop_every != 0 && self.count.is_multiple_of(self.drop_every) {
            return;
        }
        if let Some(resp) = self.walk(raw) {
            let at = Time(now.0 + self.latency);
            self.in_flight.push_back((at, resp));
            if self.dup_every != 0 && self.count.is_multiple_of(self.dup_every) {
                self.in_flight
                    .push_back((Time(at.0 + 3 * self.latency), resp));
            }
        }
    }

    pub fn lid_of(&self, n: usize, p: u8) -> u16 {
        self.nodes[n].ports[p as usize].info.lid.get()
    }
}

/// Runs the SM against the fake until nothing is left to do or `until` is reached; returns
/// the events seen.
pub fn drive(sm: &mut Sm, f: &mut Fake, now: &mut Time, until: Time) -> Vec<Event> {
    let mut events = Vec::new();
    let mut buf = [0u8; 256];
    let meta = MadMeta::default();
    loop {
        while let Some(tx) = sm.poll_transmit(*now, &mut buf) {
            assert_eq!(tx.len, 256);
            f.send_meta(*now, &tx.meta, &buf);
        }
        while let Some(e) = sm.poll_event() {
            events.push(e);
        }
        let next_mad = f.in_flight.front().map(|x| x.0);
        let next = match (next_mad, sm.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
        if next > until {
            break;
        }
        *now = (*now).max(next);
        let mut any = false;
        while f.in_flight.front().is_some_and(|x| x.0 <= *now) {
            let (_, resp) = f.in_flight.pop_front().unwrap();
            sm.handle_mad(*now, &meta, &resp);
            any = true;
        }
        if sm.poll_timeout().is_some_and(|t| t <= *now) {
            sm.handle_timeout(*now);
            any = true;
        }
        if !any && next_mad.is_none() && sm.poll_timeout().is_none() {
            break;
        }
    }
    while let Some(e) = sm.poll_event() {
        events.push(e);
    }
    events
}

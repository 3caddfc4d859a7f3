//! A fabric scan by directed route, in libibnetdisc's order.
//!
//! The walk is libibnetdisc's: NodeInfo along a path; for a new node its NodeDescription, and
//! for a switch its SwitchInfo and PortInfo of port 0 and then of every port; for a CA the
//! PortInfo of the port it was reached through; every LinkUp switch port other than the one
//! the scan came in by (and the local port of the starting node) is probed with NodeInfo one
//! hop further. Answers are handled in issue order ([`super::client`]), so nodes are created
//! in the order libibnetdisc creates them on an in-order fabric; the tools print them newest
//! first ([`Scan::print_order`]), as libibnetdisc's list is built by prepending.

use std::collections::HashMap;

use ibmad::attr::{NodeDesc, NodeInfo, PortInfo, SwitchInfo};
use ibmad::zerocopy::FromBytes;
use ibmad::{DrPath, Guid, Lid, NodeType, PhysState, PortNum, SmpAttrId};

use super::client::{Addr, Client, Req, SmpError};

/// One port of a scanned node.
#[derive(Clone, Debug, Default)]
pub struct ScanPort {
    /// PortInfo, if it was read.
    pub info: Option<PortInfo>,
    /// PortGUID (a switch's ports all carry the node's).
    pub guid: Guid,
    /// The far end: (node index, port number).
    pub remote: Option<(usize, u8)>,
}

/// A scanned node.
#[derive(Clone, Debug)]
pub struct ScanNode {
    /// NodeInfo as first read.
    pub info: NodeInfo,
    /// NodeDescription (empty if it could not be read).
    pub desc: String,
    /// The directed route it was first reached by.
    pub path: DrPath,
    /// SwitchInfo, for a switch.
    pub switch_info: Option<SwitchInfo>,
    /// Ports `0..=NumPorts`.
    pub ports: Vec<ScanPort>,
}

impl ScanNode {
    /// True for a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::SWITCH.0
    }
    /// NodeGUID.
    #[must_use]
    pub fn guid(&self) -> Guid {
        self.info.node_guid()
    }
    /// The port's PortInfo.
    #[must_use]
    pub fn port_info(&self, p: u8) -> Option<&PortInfo> {
        self.ports.get(usize::from(p))?.info.as_ref()
    }
    /// The LID a port answers to: port 0's for a switch (base LID).
    #[must_use]
    pub fn lid(&self, p: u8) -> Lid {
        let p = if self.is_switch() { 0 } else { p };
        self.port_info(p).map_or(Lid::UNASSIGNED, PortInfo::lid)
    }
    /// The LMC of that LID.
    #[must_use]
    pub fn lmc(&self, p: u8) -> u8 {
        let p = if self.is_switch() { 0 } else { p };
        self.port_info(p).map_or(0, PortInfo::lmc)
    }
}

/// The result of a scan.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Nodes in creation order.
    pub nodes: Vec<ScanNode>,
    /// The starting node and the port the scan left from.
    pub from: Option<(usize, u8)>,
    /// Requests that got no answer, with what was asked.
    pub failures: Vec<String>,
    by_guid: HashMap<Guid, usize>,
}

#[derive(Clone, Copy, Debug)]
enum Tag {
    NodeInfo { from: Option<(usize, u8)> },
    NodeDesc(usize),
    SwitchInfo(usize),
    PortInfo(usize, u8),
}

impl Scan {
    /// Scans the fabric from the local port, at most `max_hops` hops (0 = no limit).
    ///
    /// # Errors
    /// A transport failure (per-request failures are recorded in [`Scan::failures`]).
    pub fn run(client: &mut Client<'_>, max_hops: usize) -> Result<Scan, SmpError> {
        let mut scan = Scan::default();
        let start = Req::get(Addr::Dr(DrPath::local()), SmpAttrId::NODE_INFO, 0);
        client.run(
            vec![(start, Tag::NodeInfo { from: None })],
            |tag, req, res, queue| {
                let Addr::Dr(path) = req.addr else { return };
                let data = match res {
                    Ok(d) => d,
                    Err(e) => {
                        scan.failures.push(format!(
                            "{:?} via {}: {e}",
                            req.attr,
                            req.addr.describe()
                        ));
                        return;
                    }
                };
                let mut more = Vec::new();
                scan.handle(tag, path, &data, max_hops, &mut more);
                queue.extend(more);
            },
        )?;
        Ok(scan)
    }

    fn handle(
        &mut self,
        tag: Tag,
        path: DrPath,
        data: &[u8; 64],
        max_hops: usize,
        out: &mut Vec<(Req, Tag)>,
    ) {
        let at = |attr, am| Req::get(Addr::Dr(path), attr, am);
        match tag {
            Tag::NodeInfo { from } => {
                let Ok(ni) = NodeInfo::read_from_bytes(&data[..size_of::<NodeInfo>()]) else {
                    return;
                };
                let guid = ni.node_guid();
                let port = ni.local_port_num;
                let (id, new) = match self.by_guid.get(&guid) {
                    Some(&id) => (id, false),
                    None => {
                        let id = self.nodes.len();
                        self.nodes.push(ScanNode {
                            info: ni,
                            desc: String::new(),
                            path,
                            switch_info: None,
                            ports: vec![ScanPort::default(); usize::from(ni.num_ports) + 1],
                        });
                        self.by_guid.insert(guid, id);
                        (id, true)
                    }
                };
                if let Some(p) = self.nodes[id].ports.get_mut(usize::from(port)) {
                    p.guid = ni.port_guid();
                }
                match from {
                    None => self.from = Some((id, port)),
                    Some((rn, rp)) => {
                        if let Some(p) = self.nodes[id].ports.get_mut(usize::from(port)) {
                            p.remote = Some((rn, rp));
                        }
                        if let Some(p) = self.nodes[rn].ports.get_mut(usize::from(rp)) {
                            p.remote = Some((id, port));
                        }
                    }
                }
                let is_switch = self.nodes[id].is_switch();
                if new {
                    out.push((at(SmpAttrId::NODE_DESC, 0), Tag::NodeDesc(id)));
                    if is_switch {
                        out.push((at(SmpAttrId::SWITCH_INFO, 0), Tag::SwitchInfo(id)));
                        out.push((at(SmpAttrId::PORT_INFO, 0), Tag::PortInfo(id, 0)));
                    }
                }
                if !is_switch {
                    out.push((
                        at(SmpAttrId::PORT_INFO, u32::from(port)),
                        Tag::PortInfo(id, port),
                    ));
                }
            }
            Tag::NodeDesc(id) => {
                if let Ok(nd) = NodeDesc::read_from_bytes(&data[..]) {
                    self.nodes[id].desc = nd.as_string();
                }
            }
            Tag::SwitchInfo(id) => {
                if let Ok(si) = SwitchInfo::read_from_bytes(&data[..]) {
                    self.nodes[id].switch_info = Some(si);
                }
            }
            Tag::PortInfo(id, p) => {
                let Ok(pi) = PortInfo::read_from_bytes(&data[..]) else {
                    return;
                };
                let node = &mut self.nodes[id];
                let is_switch = node.is_switch();
                let port_guid = node.info.port_guid();
                let local = pi.local_port_num;
                if let Some(port) = node.ports.get_mut(usize::from(p)) {
                    port.info = Some(pi);
                    if is_switch {
                        port.guid = port_guid;
                    }
                }
                if is_switch && p == 0 {
                    for q in 1..=node.info.num_ports {
                        out.push((at(SmpAttrId::PORT_INFO, u32::from(q)), Tag::PortInfo(id, q)));
                    }
                    return;
                }
                let from_here = self.from == Some((id, p));
                let onward = p != 0
                    && pi.phys_state() == PhysState::LINK_UP
                    && ((is_switch && p != local) || from_here);
                // A CA forwards no directed route: only the starting node's port leads on.
                if !onward || (!is_switch && !path.is_empty()) {
                    return;
                }
                if max_hops != 0 && path.len() >= max_hops {
                    return;
                }
                if let Ok(next) = path.push(p) {
                    out.push((
                        Req::get(Addr::Dr(next), SmpAttrId::NODE_INFO, 0),
                        Tag::NodeInfo {
                            from: Some((id, p)),
                        },
                    ));
                }
            }
        }
    }

    /// Node indices newest first, as libibnetdisc's lists (iblinkinfo, dump_fts).
    #[must_use]
    pub fn print_order(&self) -> Vec<usize> {
        (0..self.nodes.len()).rev().collect()
    }

    /// The node with this NodeGUID.
    #[must_use]
    pub fn node_by_guid(&self, g: Guid) -> Option<usize> {
        self.by_guid.get(&g).copied()
    }

    /// The node and port a LID belongs to (a switch's LID belongs to its port 0; a CA's LMC
    /// range to its port).
    #[must_use]
    pub fn port_by_lid(&self, lid: Lid) -> Option<(usize, u8)> {
        for (i, n) in self.nodes.iter().enumerate() {
            let ports: Vec<u8> = if n.is_switch() {
                vec![0]
            } else {
                (1..=n.info.num_ports).collect()
            };
            for p in ports {
                let Some(pi) = n.port_info(p) else { continue };
                let base = pi.lid().0;
                let span = 1u32 << pi.lmc();
                if base != 0
                    && u32::from(lid.0) >= u32::from(base)
                    && u32::from(lid.0) < u32::from(base) + span
                {
                    return Some((i, p));
                }
            }
        }
        None
    }

    /// The scan as an SM [`sm::Subnet`], nodes newest first, so that the SM's ibnetdiscover
    /// writer ([`sm::dump::ibnetdiscover_with_header`]) prints them in the stock tool's order.
    #[must_use]
    pub fn to_subnet(&self) -> sm::Subnet {
        let order = self.print_order();
        let mut new_id = vec![sm::NodeId(0); self.nodes.len()];
        let mut subnet = sm::Subnet::new();
        for &i in &order {
            let n = &self.nodes[i];
            let ni = &n.info;
            new_id[i] = subnet.add_node(sm::Node {
                guid: ni.node_guid(),
                sys_guid: ni.system_image_guid(),
                node_type: ni.node_type(),
                num_ports: ni.num_ports,
                desc: n.desc.clone(),
                vendor_id: ni.vendor_id(),
                device_id: ni.device_id.get(),
                revision: ni.revision.get(),
                partition_cap: ni.partition_cap.get(),
                dr_path: n.path,
                first_port: 0,
                switch_info: n.switch_info,
            });
        }
        for (i, n) in self.nodes.iter().enumerate() {
            for (p, port) in n.ports.iter().enumerate() {
                let Ok(pn) = u8::try_from(p) else { continue };
                let lid = n.lid(pn);
                let lmc = n.lmc(pn);
                let remote = port.remote.map(|(rn, rp)| (new_id[rn], PortNum(rp)));
                if let Some(sp) = subnet.port_mut(new_id[i], PortNum(pn)) {
                    sp.guid = port.guid;
                    sp.info = port.info;
                    sp.remote = remote;
                    sp.lid = lid;
                    sp.lmc = lmc;
                }
            }
        }
        if let Some((n, p)) = self.from {
            if !self.nodes[n].is_switch() {
                subnet.local_port = Some(PortNum(p));
            }
        }
        subnet
    }
}

//! Discovery: the directed-route walk that fills a [`Subnet`] (IBA vol1 §14.2.2; OpenSM
//! `osm_node_info_rcv.c` / `osm_port_info_rcv.c` behaviour).
//!
//! The walk starts with NodeInfo of the SM's own node (hop count 0). For every **new** node
//! (by NodeGUID) it asks NodeInfo first, then NodeDescription, SwitchInfo (switches) and the
//! PortInfo of every port (switches: 0..=NumPorts; CAs: the port reached). It extends the route
//! only through **switch** ports whose PortState is not Down, never through the port it
//! arrived on, and never through a port whose far end is already known (so each link is
//! probed once, not once from each side). The SM's own CA is the one CA used as a gate, for
//! its own port. A NodeGUID seen again is a new link to a known node; the same GUID answered
//! with a different NodeType/NumPorts, or on a port already linked elsewhere, is reported as
//! a duplicate GUID and not linked.
//!
//! The module is pure: responses come in as attribute views, the SMPs to send next go out as
//! requests for the SM's transaction engine, and reports as [`Event`]s.

use ibmad::attr::{NodeDesc, NodeInfo, PortInfo, SwitchInfo};
use ibmad::{DrPath, NodeType, PhysState, PortNum, PortState, SmpAttrId};
use zerocopy::IntoBytes;

use crate::event::Event;
use crate::subnet::{Node, NodeId, Subnet};
use crate::txn::{Purpose, Request};

/// State of one discovery walk.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    /// The subnet found so far.
    pub subnet: Subnet,
    /// Per node: the port its first NodeInfo arrived on (LocalPortNum).
    arrival: Vec<u8>,
    /// (node, port) whose PortInfo Get was queued this walk.
    requested: foldhash::HashSet<(NodeId, u8)>,
    /// Routes to CA ports other than the one the node was first reached through.
    port_paths: crate::FastMap<(NodeId, u8), DrPath>,
    /// The SM's port number on its own node.
    sm_port: u8,
    /// Nodes whose walk went through a duplicate GUID (never extended).
    pub duplicates: usize,
}

impl Discovery {
    /// A new walk from the SM's port `sm_port`; returns it and its first request.
    pub fn start(sm_port: PortNum) -> (Discovery, Request) {
        let d = Discovery {
            sm_port: sm_port.0,
            ..Discovery::default()
        };
        let r = Request::get(
            DrPath::local(),
            SmpAttrId::NODE_INFO,
            0,
            Purpose::Probe { from: None },
        );
        (d, r)
    }

    /// The route to use for SMPs about port `p` of node `id`: a CA port reached on its own
    /// route uses that route; everything else the node's route.
    pub fn port_path(&self, id: NodeId, p: PortNum) -> DrPath {
        self.port_paths
            .get(&(id, p.0))
            .copied()
            .unwrap_or(self.subnet.node(id).dr_path)
    }

    /// True if a queued request asks for something already known (checked just before it is
    /// sent): a probe through a port whose far end has been found meanwhile.
    pub fn already_known(&self, req: &Request) -> bool {
        match req.purpose {
            Purpose::Probe {
                from: Some((id, p)),
            } => self
                .subnet
                .port(id, p)
                .is_some_and(|port| port.remote.is_some()),
            _ => false,
        }
    }

    /// A NodeInfo response to a probe along `path` sent out of `from`.
    pub fn on_node_info(
        &mut self,
        path: DrPath,
        from: Option<(NodeId, PortNum)>,
        ni: &NodeInfo,
        out: &mut Vec<Request>,
        events: &mut Vec<Event>,
    ) {
        let guid = ni.node_guid();
        let lp = ni.local_port();
        if path.is_empty() && from.is_none() {
            // The 0-hop answer comes from the SM's own node: LocalPortNum is the SM's port,
            // which gets the first LID (OpenSM's order) even on a multi-port CA.
            self.subnet.local_port = Some(lp);
        }
        if let Some(id) = self.subnet.node_by_guid(guid) {
            let n = self.subnet.node(id);
            let (n_is_switch, n_path) = (n.is_switch(), n.dr_path);
            let consistent_node = n.node_type == ni.node_type() && n.num_ports == ni.num_ports;
            let port_ok = match self.subnet.port(id, lp) {
                None => false,
                // Linked elsewhere, or known to be Down: not the port this answer came from.
                Some(port) => {
                    (port.remote.is_none() || port.remote == from)
                        && port.info.is_none_or(|i| i.port_state() != PortState::DOWN)
                }
            };
            // Reaching the SM's own node again through the fabric is a loop back, not a
            // duplicate, unless its port is linked elsewhere.
            if !consistent_node || !port_ok || (from.is_none() && id.0 != 0) {
                self.duplicates += 1;
                events.push(Event::DuplicateGuid {
                    guid,
                    first: n_path,
                    second: path,
                });
                return;
            }
            if let Some(f) = from {
                self.subnet.link(f, (id, lp));
            }
            if !n_is_switch {
                if let Some(port) = self.subnet.port_mut(id, lp) {
                    port.guid = ni.port_guid();
                }
                self.port_paths.entry((id, lp.0)).or_insert(path);
                self.request_port_info(id, lp, path, out);
            }
            return;
        }
        if let Err(why) = check_node_info(ni) {
            events.push(Event::BadNodeInfo {
                guid,
                dr_path: path,
                why,
            });
            return;
        }
        let is_switch = ni.node_type() == NodeType::SWITCH;
        let id = self.subnet.add_node(Node {
            guid,
            sys_guid: ni.system_image_guid(),
            node_type: ni.node_type(),
            num_ports: ni.num_ports,
            desc: String::new(),
            vendor_id: ni.vendor_id(),
            device_id: ni.device_id.get(),
            revision: ni.revision.get(),
            partition_cap: ni.partition_cap.get(),
            dr_path: path,
            first_port: 0,
            switch_info: None,
        });
        if self.arrival.len() <= id.idx() {
            self.arrival.resize(id.idx() + 1, 0);
        }
        self.arrival[id.idx()] = lp.0;
        if is_switch {
            for p in 0..=ni.num_ports {
                if let Some(port) = self.subnet.port_mut(id, PortNum(p)) {
                    port.guid = ni.port_guid();
                }
            }
        } else if let Some(port) = self.subnet.port_mut(id, lp) {
            port.guid = ni.port_guid();
        }
        if let Some(f) = from {
            self.subnet.link(f, (id, lp));
        }
        out.push(Request::get(
            path,
            SmpAttrId::NODE_DESC,
            0,
            Purpose::NodeDesc(id),
        ));
        if is_switch {
            out.push(Request::get(
                path,
                SmpAttrId::SWITCH_INFO,
                0,
                Purpose::SwitchInfo(id),
            ));
            for p in 0..=ni.num_ports {
                self.request_port_info(id, PortNum(p), path, out);
            }
        } else {
            self.request_port_info(id, lp, path, out);
        }
    }

    fn request_port_info(&mut self, id: NodeId, p: PortNum, path: DrPath, out: &mut Vec<Request>) {
        if self.requested.insert((id, p.0)) {
            out.push(Request::get(
                path,
                SmpAttrId::PORT_INFO,
                p.0.into(),
                Purpose::PortInfo(id, p),
            ));
        }
    }

    /// A PortInfo response for port `p` of node `id`.
    pub fn on_port_info(&mut self, id: NodeId, p: PortNum, pi: &PortInfo, out: &mut Vec<Request>) {
        let Some(port) = self.subnet.port_mut(id, p) else {
            return;
        };
        port.info = Some(*pi);
        let linked = port.remote.is_some();
        // A port whose physical link is not up (PortPhysicalState Disabled, Polling …, IBA vol1
        // §14.2.5.6) carries nothing, whatever its logical state says (ibsim leaves a
        // disabled port Active). NO_CHANGE (0) is not a state a Get reports: an agent that
        // leaves the field zero is taken at its LinkState.
        let phys = pi.phys_state();
        let up = pi.port_state() != PortState::DOWN
            && pi.port_state().0 <= PortState::ACTIVE.0
            && (phys == PhysState::LINK_UP || phys == PhysState::NO_CHANGE);
        let n = self.subnet.node(id);
        let gate = if n.is_switch() {
            // A switch gates through every port but the one it was reached through (the
            // SM's own switch, reached on port 0, through all).
            p.0 >= 1 && p.0 != self.arrival.get(id.idx()).copied().unwrap_or(0)
        } else {
            // The SM's own CA is the gate for the SM's port only.
            id.0 == 0 && n.dr_path.is_empty() && p.0 == self.sm_port
        };
        if !gate || !up || linked {
            return;
        }
        if let Ok(path) = n.dr_path.push(p.0) {
            out.push(Request::get(
                path,
                SmpAttrId::NODE_INFO,
                0,
                Purpose::Probe {
                    from: Some((id, p)),
                },
            ));
        }
    }

    /// A NodeDescription response.
    pub fn on_node_desc(&mut self, id: NodeId, nd: &NodeDesc) {
        if let Some(n) = self.subnet.nodes.get_mut(id.idx()) {
            n.desc = nd.as_string();
        }
    }

    /// A SwitchInfo response.
    pub fn on_switch_info(&mut self, id: NodeId, si: &SwitchInfo) {
        if let Some(n) = self.subnet.nodes.get_mut(id.idx()) {
            n.switch_info = Some(*si);
        }
    }
}

/// Whether a NodeInfo describes a node the SM can add: a NodeType the IBA defines (CA,
/// switch, router), a NodeGUID other than 0, at least one port, and (for a CA or router) a
/// LocalPortNum within NumPorts. A response that fails this was damaged on the way or comes
/// from a broken agent; the SM does not add a node from it.
pub(crate) fn check_node_info(ni: &NodeInfo) -> Result<(), String> {
    let t = ni.node_type();
    if ![NodeType::CA, NodeType::SWITCH, NodeType::ROUTER].contains(&t) {
        return Err(format!("reserved NodeType {}", ni.node_type));
    }
    if ni.node_guid().0 == 0 {
        return Err("NodeGUID 0".into());
    }
    let lp = ni.local_port();
    if ni.num_ports == 0 || (t != NodeType::SWITCH && lp.0 > ni.num_ports) {
        return Err(format!("NumPorts {} LocalPortNum {}", ni.num_ports, lp));
    }
    Ok(())
}

/// Copies an attribute view into a 64-byte SMP data field.
pub(crate) fn data_of<T: IntoBytes + zerocopy::Immutable>(v: &T) -> [u8; 64] {
    let mut d = [0u8; 64];
    let b = v.as_bytes();
    let n = b.len().min(64);
    d[..n].copy_from_slice(&b[..n]);
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::{Guid, PhysState};
    use zerocopy::FromZeros;

    fn ni(guid: u64, t: NodeType, ports: u8, local: u8) -> NodeInfo {
        let mut n = NodeInfo::new_zeroed();
        n.node_type = t.0;
        n.num_ports = ports;
        n.node_guid.set(guid);
        n.port_guid.set(guid);
        n.local_port_num = local;
        n
    }
    fn pi(state: PortState) -> PortInfo {
        let mut p = PortInfo::new_zeroed();
        p.set_port_state(state);
        p.set_phys_state(if state == PortState::DOWN {
            PhysState::POLLING
        } else {
            PhysState::LINK_UP
        });
        p
    }
    fn kinds(out: &[Request]) -> Vec<(SmpAttrId, u32)> {
        out.iter().map(|r| (r.attr, r.attr_mod)).collect()
    }

    #[test]
    fn new_switch_asks_desc_switchinfo_and_every_port_after_nodeinfo() {
        let (mut d, first) = Discovery::start(PortNum(1));
        assert_eq!(first.attr, SmpAttrId::NODE_INFO);
        assert!(
            first.path.is_empty(),
            "hop count 0 first: the SM's own node"
        );
        let (mut out, mut ev) = (Vec::new(), Vec::new());
        d.on_node_info(
            DrPath::local(),
            None,
            &ni(1, NodeType::CA, 1, 1),
            &mut out,
            &mut ev,
        );
        assert_eq!(
            kinds(&out),
            vec![(SmpAttrId::NODE_DESC, 0), (SmpAttrId::PORT_INFO, 1)]
        );
        // The SM's CA gates through its own port only.
        out.clear();
        d.on_port_info(NodeId(0), PortNum(1), &pi(PortState::INIT), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].path.to_string(), "0,1");
        // A 4-port switch behind it, reached on its port 2.
        out.clear();
        let p1 = DrPath::parse("0,1").unwrap();
        d.on_node_info(
            p1,
            Some((NodeId(0), PortNum(1))),
            &ni(2, NodeType::SWITCH, 4, 2),
            &mut out,
            &mut ev,
        );
        assert_eq!(
            kinds(&out),
            vec![
                (SmpAttrId::NODE_DESC, 0),
                (SmpAttrId::SWITCH_INFO, 0),
                (SmpAttrId::PORT_INFO, 0),
                (SmpAttrId::PORT_INFO, 1),
                (SmpAttrId::PORT_INFO, 2),
                (SmpAttrId::PORT_INFO, 3),
                (SmpAttrId::PORT_INFO, 4),
            ]
        );
        let sw = NodeId(1);
        assert_eq!(
            d.subnet.port(sw, PortNum(2)).unwrap().remote,
            Some((NodeId(0), PortNum(1)))
        );
        // Probes: only through up ports, never port 0, never the arrival port.
        out.clear();
        d.on_port_info(sw, PortNum(0), &pi(PortState::ACTIVE), &mut out);
        d.on_port_info(sw, PortNum(1), &pi(PortState::DOWN), &mut out);
        d.on_port_info(sw, PortNum(2), &pi(PortState::INIT), &mut out);
        d.on_port_info(sw, PortNum(3), &pi(PortState::INIT), &mut out);
        d.on_port_info(sw, PortNum(4), &pi(PortState::ACTIVE), &mut out);
        let probes: Vec<String> = out.iter().map(|r| r.path.to_string()).collect();
        assert_eq!(probes, vec!["0,1,3", "0,1,4"]);
        assert!(ev.is_empty());
    }

    #[test]
    fn ca_is_never_a_gate_and_a_known_guid_is_a_link() {
        let (mut d, _) = Discovery::start(PortNum(1));
        let (mut out, mut ev) = (Vec::new(), Vec::new());
        d.on_node_info(
            DrPath::local(),
            None,
            &ni(1, NodeType::SWITCH, 4, 0),
            &mut out,
            &mut ev,
        );
        out.clear();
        // Two ports of the root switch lead to one dual-port CA.
        let a = DrPath::parse("0,1").unwrap();
        let b = DrPath::parse("0,2").unwrap();
        d.on_node_info(
            a,
            Some((NodeId(0), PortNum(1))),
            &ni(9, NodeType::CA, 2, 1),
            &mut out,
            &mut ev,
        );
        d.on_node_info(
            b,
            Some((NodeId(0), PortNum(2))),
            &ni(9, NodeType::CA, 2, 2),
            &mut out,
            &mut ev,
        );
        assert_eq!(d.subnet.nodes.len(), 2, "same GUID: one node");
        let ca = NodeId(1);
        assert_eq!(
            d.subnet.port(ca, PortNum(2)).unwrap().remote,
            Some((NodeId(0), PortNum(2)))
        );
        // PortInfo of each CA port, each on the route that reaches it.
        let pis: Vec<(u32, String)> = out
            .iter()
            .filter(|r| r.attr == SmpAttrId::PORT_INFO)
            .map(|r| (r.attr_mod, r.path.to_string()))
            .collect();
        assert_eq!(pis, vec![(1, "0,1".into()), (2, "0,2".into())]);
        assert_eq!(d.port_path(ca, PortNum(2)).to_string(), "0,2");
        out.clear();
        d.on_port_info(ca, PortNum(1), &pi(PortState::INIT), &mut out);
        assert!(out.is_empty(), "no probe beyond a CA");
        // The same GUID claiming to be a switch is a duplicate.
        d.on_node_info(
            DrPath::parse("0,3").unwrap(),
            Some((NodeId(0), PortNum(3))),
            &ni(9, NodeType::SWITCH, 8, 1),
            &mut out,
            &mut ev,
        );
        assert!(matches!(ev.as_slice(), [Event::DuplicateGuid { guid, .. }] if *guid == Guid(9)));
        assert_eq!(d.duplicates, 1);
    }
}

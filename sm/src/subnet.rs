//! The SM's model of the subnet: compact arrays indexed by [`NodeId`], not a pointer graph, so
//! that k36 (13k nodes, 70k ports) and 100k-CA fabrics stay small and fast to walk.
//!
//! Discovery fills it from NodeInfo / NodeDescription / SwitchInfo / PortInfo responses; LID
//! assignment writes [`Port::lid`]; routing engines read it and produce [`crate::routing::Lfts`].
//! Ports of a node are stored contiguously: `ports[node.first_port + p]` for p in
//! `0..=num_ports` (index 0 is a switch's management port; unused for a CA).

use ibmad::attr::{PortInfo, SwitchInfo};
use ibmad::{DrPath, Guid, Lid, NodeType, PortNum, PortState};

/// Index of a node in [`Subnet::nodes`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct NodeId(pub u32);

impl NodeId {
    /// As an index.
    #[must_use]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// A discovered node.
#[derive(Clone, Debug)]
pub struct Node {
    /// NodeGUID.
    pub guid: Guid,
    /// SystemImageGUID.
    pub sys_guid: Guid,
    /// NodeType.
    pub node_type: NodeType,
    /// NumPorts (physical; a switch's port 0 not counted).
    pub num_ports: u8,
    /// NodeDescription text.
    pub desc: String,
    /// VendorID (24 bits).
    pub vendor_id: u32,
    /// DeviceID.
    pub device_id: u16,
    /// Revision.
    pub revision: u32,
    /// PartitionCap: P_Key table entries per end port (NodeInfo; 0 if not known).
    pub partition_cap: u16,
    /// The directed route from the SM's port by which this node was first reached.
    pub dr_path: DrPath,
    /// Index of this node's port 0 in [`Subnet::ports`].
    pub first_port: u32,
    /// SwitchInfo, for switches.
    pub switch_info: Option<SwitchInfo>,
}

impl Node {
    /// A node record with this identity and no vendor, device or revision, reached by the
    /// one-hop route `1` (not the SM's node); [`Subnet::add_node`] fills in `first_port`.
    #[must_use]
    pub fn new(guid: Guid, node_type: NodeType, num_ports: u8, desc: &str) -> Node {
        Node {
            guid,
            sys_guid: guid,
            node_type,
            num_ports,
            desc: desc.to_string(),
            vendor_id: 0,
            device_id: 0,
            revision: 0,
            partition_cap: 0,
            dr_path: DrPath::new(&[1]).unwrap_or(DrPath::local()),
            first_port: 0,
            switch_info: None,
        }
    }

    /// True for switches.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.node_type == NodeType::SWITCH
    }
}

/// One port of a node.
#[derive(Clone, Debug)]
pub struct Port {
    /// PortGUID (a switch's ports all carry the node's port-0 GUID).
    pub guid: Guid,
    /// The PortInfo last read from or acknowledged by the port, if any.
    pub info: Option<PortInfo>,
    /// The far end of the link, if the port is linked to a discovered node.
    pub remote: Option<(NodeId, PortNum)>,
    /// The LID the SM assigned (base LID; LMC from the config), or 0.
    pub lid: Lid,
    /// The LMC assigned with the LID.
    pub lmc: u8,
    /// OpenSM's unhealthy physical port: a switch port that flooded link-integrity traps
    /// (129–131). No route crosses a switch-to-switch link with an unhealthy end
    /// ([`crate::routing::graph::link_usable`]) until the mark ages out.
    pub unhealthy: bool,
}

impl Port {
    fn empty() -> Port {
        Port {
            guid: Guid(0),
            info: None,
            remote: None,
            lid: Lid::UNASSIGNED,
            lmc: 0,
            unhealthy: false,
        }
    }
    /// The port's logical state as last read (Down if unknown).
    #[must_use]
    pub fn state(&self) -> PortState {
        self.info.map_or(PortState::DOWN, |i| i.port_state())
    }

    /// Every LID the port answers to: `2^lmc` from its base LID (none while unassigned; LIDs
    /// past the unicast range are left out).
    pub fn lids(&self) -> impl Iterator<Item = u16> {
        let count = if self.lid == Lid::UNASSIGNED {
            0
        } else {
            1u16 << self.lmc.min(7)
        };
        let base = self.lid.0;
        (0..count).map_while(move |o| base.checked_add(o).filter(|&l| l <= Lid::UNICAST_MAX.0))
    }
}

/// The whole discovered subnet.
#[derive(Clone, Debug, Default)]
pub struct Subnet {
    /// Nodes in discovery order.
    pub nodes: Vec<Node>,
    /// Ports, `num_ports + 1` per node, contiguous per node.
    pub ports: Vec<Port>,
    /// The SM's own port number on the node reached by the empty directed route, when known
    /// (discovery sets it for an SM on a multi-port CA); see [`Subnet::sm_port`].
    pub local_port: Option<PortNum>,
    by_guid: crate::FastMap<Guid, NodeId>,
}

impl Subnet {
    /// An empty subnet.
    #[must_use]
    pub fn new() -> Subnet {
        Subnet::default()
    }

    /// Adds a node with `num_ports + 1` empty ports and returns its id; if a node with this
    /// NodeGUID already exists, returns that id and changes nothing.
    pub fn add_node(&mut self, mut node: Node) -> NodeId {
        if let Some(&id) = self.by_guid.get(&node.guid) {
            return id;
        }
        let id = NodeId(self.nodes.len() as u32);
        node.first_port = self.ports.len() as u32;
        let n = usize::from(node.num_ports) + 1;
        self.ports.extend((0..n).map(|_| Port::empty()));
        self.by_guid.insert(node.guid, id);
        self.nodes.push(node);
        id
    }

    /// The node with this NodeGUID.
    #[must_use]
    pub fn node_by_guid(&self, guid: Guid) -> Option<NodeId> {
        self.by_guid.get(&guid).copied()
    }

    /// The node.
    #[must_use]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.idx()]
    }

    /// Port `p` of node `id`, if `p <= num_ports`.
    #[must_use]
    pub fn port(&self, id: NodeId, p: PortNum) -> Option<&Port> {
        let n = self.nodes.get(id.idx())?;
        if p.0 > n.num_ports {
            return None;
        }
        self.ports.get(n.first_port as usize + usize::from(p.0))
    }

    /// Mutable port `p` of node `id`.
    pub fn port_mut(&mut self, id: NodeId, p: PortNum) -> Option<&mut Port> {
        let n = self.nodes.get(id.idx())?;
        if p.0 > n.num_ports {
            return None;
        }
        self.ports.get_mut(n.first_port as usize + usize::from(p.0))
    }

    /// Records a link between two ports (both directions).
    pub fn link(&mut self, a: (NodeId, PortNum), b: (NodeId, PortNum)) {
        if let Some(pa) = self.port_mut(a.0, a.1) {
            pa.remote = Some(b);
        }
        if let Some(pb) = self.port_mut(b.0, b.1) {
            pb.remote = Some(a);
        }
    }

    /// Node ids of all switches, in discovery order.
    pub fn switches(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_switch())
            .map(|(i, _)| NodeId(i as u32))
    }

    /// All node ids.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// The end ports that get LIDs: (node, port) for every switch port 0 and every CA/router
    /// port that has been discovered (has PortInfo).
    pub fn end_ports(&self) -> impl Iterator<Item = (NodeId, PortNum)> + '_ {
        self.node_ids().flat_map(move |id| {
            let n = self.node(id);
            let range = if n.is_switch() {
                0..=0
            } else {
                1..=n.num_ports
            };
            range.filter_map(move |p| {
                let port = self.port(id, PortNum(p))?;
                port.info.map(|_| (id, PortNum(p)))
            })
        })
    }

    /// The LID of node `id` as a routing destination for port `p` (a switch's LID is on port 0).
    #[must_use]
    pub fn lid_of(&self, id: NodeId, p: PortNum) -> Lid {
        let n = self.node(id);
        let p = if n.is_switch() { PortNum(0) } else { p };
        self.port(id, p).map_or(Lid::UNASSIGNED, |port| port.lid)
    }
}

/// A PortInfo for a linked, Active 4x SDR port: what every cabled port of a subnet built
/// without discovery ([`Subnet::add_active_node`], [`Subnet::connect_active`]) holds.
#[must_use]
pub fn active_port_info() -> PortInfo {
    let mut pi = <PortInfo as zerocopy::FromZeros>::new_zeroed();
    pi.set_port_state(PortState::ACTIVE);
    pi.set_phys_state(ibmad::PhysState::LINK_UP);
    pi.link_width_active = 2;
    pi.set_link_speed_active(1);
    pi
}

/// Building a subnet without discovery — from a topology file (`ibsm verify`), a generator or
/// a test — as discovery would have recorded it once every port answered and every link came up.
/// LIDs stay 0: run [`crate::lid::assign_lids`] next.
impl Subnet {
    /// Adds a node with port GUIDs as IBA nodes report them (every port of a switch carries the
    /// NodeGUID, port *p* of a CA or router NodeGUID + *p*) and, for a switch, an Active port 0.
    pub fn add_active_node(&mut self, n: Node) -> NodeId {
        let is_sw = n.is_switch();
        let guid = n.guid;
        let np = n.num_ports;
        let id = self.add_node(n);
        for p in 0..=np {
            if let Some(port) = self.port_mut(id, PortNum(p)) {
                port.guid = if is_sw {
                    guid
                } else {
                    Guid(guid.0.wrapping_add(u64::from(p)))
                };
                if is_sw && p == 0 {
                    port.info = Some(active_port_info());
                }
            }
        }
        id
    }

    /// Links two ports and marks both Active ([`active_port_info`]).
    pub fn connect_active(&mut self, a: (NodeId, PortNum), b: (NodeId, PortNum)) {
        self.link(a, b);
        for (n, p) in [a, b] {
            if let Some(port) = self.port_mut(n, p) {
                port.info = Some(active_port_info());
            }
        }
    }
}

impl Subnet {
    /// True if port `p` of node `id` is linked to a discovered port and its logical state is
    /// Init, Armed or Active (the OpenSM "has a remote physp" condition routing requires).
    #[must_use]
    pub fn is_link_up(&self, id: NodeId, p: PortNum) -> bool {
        self.port(id, p).is_some_and(|port| {
            port.remote.is_some()
                && matches!(
                    port.state(),
                    PortState::INIT | PortState::ARMED | PortState::ACTIVE
                )
        })
    }

    /// The SM's own end port: the node reached by the empty directed route — its port 0 if a
    /// switch, else [`Subnet::local_port`] if set and discovered, else the CA's lowest-numbered
    /// port that has PortInfo.
    #[must_use]
    pub fn sm_port(&self) -> Option<(NodeId, PortNum)> {
        let id = self
            .node_ids()
            .find(|&id| self.node(id).dr_path.is_empty())?;
        if let Some(p) = self.local_port {
            if !self.node(id).is_switch() && self.port(id, p).is_some_and(|x| x.info.is_some()) {
                return Some((id, p));
            }
        }
        self.end_ports().find(|&(n, _)| n == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(guid: u64, t: NodeType, ports: u8) -> Node {
        Node {
            dr_path: DrPath::local(),
            ..Node::new(Guid(guid), t, ports, "")
        }
    }

    #[test]
    fn rediscovered_guid_is_the_same_node() {
        let mut s = Subnet::new();
        let a = s.add_node(node(1, NodeType::SWITCH, 4));
        let b = s.add_node(node(2, NodeType::CA, 1));
        assert_eq!(s.add_node(node(1, NodeType::SWITCH, 4)), a);
        assert_eq!(s.nodes.len(), 2);
        assert_eq!(s.ports.len(), 5 + 2);
        s.link((a, PortNum(3)), (b, PortNum(1)));
        assert_eq!(s.port(b, PortNum(1)).unwrap().remote, Some((a, PortNum(3))));
        assert!(s.port(a, PortNum(5)).is_none());
    }
}

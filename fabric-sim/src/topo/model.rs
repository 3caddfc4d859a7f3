//! The compact topology model: nodes and ports in flat arrays, indexed by [`NodeId`].

use std::collections::HashMap;
use std::fmt;

use ibmad::{Guid, Lid, NodeType, PortNum};

use super::attrs::LinkAttrs;
use super::error::TopoError;

/// Index of a node in a [`Topology`] (dense, 0-based, in insertion order).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as `usize`.
    #[must_use]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// One end of a link: a node and one of its ports.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct PortRef {
    /// The node.
    pub node: NodeId,
    /// The port number.
    pub port: PortNum,
}

/// A link, each listed once with `a < b`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Link {
    /// The lower end.
    pub a: PortRef,
    /// The higher end.
    pub b: PortRef,
}

/// What a new node looks like; see [`Topology::add_node`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewNode {
    /// CA, switch or router.
    pub node_type: NodeType,
    /// NumPorts (1..=254), not counting a switch's port 0.
    pub num_ports: u8,
    /// NodeGUID.
    pub guid: Guid,
    /// SystemImageGUID; `None` means the node GUID (ibsim's default).
    pub sys_image_guid: Option<Guid>,
    /// Unique name: the quoted id of the topology file (`"Switch1"`, `"S-0002c9..."`).
    pub name: String,
    /// NodeDescription; `None` means the name (ibsim's default).
    pub desc: Option<String>,
    /// NodeInfo VendorID (24 bits).
    pub vendor_id: u32,
    /// NodeInfo DeviceID.
    pub device_id: u16,
}

impl NewNode {
    /// A node with ibsim's defaults: vendor/device 0, system image GUID = node GUID,
    /// description = name.
    #[must_use]
    pub fn new(node_type: NodeType, num_ports: u8, guid: Guid, name: impl Into<String>) -> Self {
        NewNode {
            node_type,
            num_ports,
            guid,
            sys_image_guid: None,
            name: name.into(),
            desc: None,
            vendor_id: 0,
            device_id: 0,
        }
    }
}

/// A node: its NodeInfo/NodeDescription facts and where its ports live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    node_type: NodeType,
    num_ports: u8,
    enhanced_port0: bool,
    device_id: u16,
    vendor_id: u32,
    first_port: u32,
    guid: Guid,
    sys_image_guid: Guid,
    name: Box<str>,
    desc: Option<Box<str>>,
}

impl Node {
    /// NodeType: [`NodeType::CA`], [`NodeType::SWITCH`] or [`NodeType::ROUTER`].
    #[must_use]
    pub fn node_type(&self) -> NodeType {
        self.node_type
    }
    /// True for a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.node_type == NodeType::SWITCH
    }
    /// NumPorts (external ports; a switch also has port 0).
    #[must_use]
    pub fn num_ports(&self) -> u8 {
        self.num_ports
    }
    /// The lowest port number: 0 for a switch, 1 otherwise.
    #[must_use]
    pub fn first_port(&self) -> u8 {
        u8::from(!self.is_switch())
    }
    /// Port numbers this node has: `0..=n` for a switch, `1..=n` otherwise.
    pub fn port_numbers(&self) -> impl Iterator<Item = PortNum> {
        (self.first_port()..=self.num_ports).map(PortNum)
    }
    /// NodeGUID.
    #[must_use]
    pub fn guid(&self) -> Guid {
        self.guid
    }
    /// SystemImageGUID.
    #[must_use]
    pub fn sys_image_guid(&self) -> Guid {
        self.sys_image_guid
    }
    /// The node's unique name in the topology file.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
    /// NodeDescription (the name unless the file gave one).
    #[must_use]
    pub fn desc(&self) -> &str {
        self.desc.as_deref().unwrap_or(&self.name)
    }
    /// True when the description was given explicitly rather than defaulted to the name.
    #[must_use]
    pub fn has_explicit_desc(&self) -> bool {
        self.desc.is_some()
    }
    /// NodeInfo VendorID.
    #[must_use]
    pub fn vendor_id(&self) -> u32 {
        self.vendor_id
    }
    /// NodeInfo DeviceID.
    #[must_use]
    pub fn device_id(&self) -> u16 {
        self.device_id
    }
    /// SwitchInfo EnhancedPort0 (ibnetdiscover's "enhanced port 0"); false for non-switches.
    #[must_use]
    pub fn enhanced_port0(&self) -> bool {
        self.enhanced_port0
    }
}

const NO_PEER: u32 = u32::MAX;

/// A port: its GUID, link peer, link attributes and (optional, from files) LID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    guid: Guid,
    peer_node: u32,
    peer_port: u8,
    lmc: u8,
    lid: Lid,
    attrs: LinkAttrs,
}

impl Port {
    fn new(guid: Guid) -> Port {
        Port {
            guid,
            peer_node: NO_PEER,
            peer_port: 0,
            lmc: 0,
            lid: Lid(0),
            attrs: LinkAttrs::default(),
        }
    }
    /// PortGUID.
    #[must_use]
    pub fn guid(&self) -> Guid {
        self.guid
    }
    /// The other end of this port's link.
    #[must_use]
    pub fn peer(&self) -> Option<PortRef> {
        (self.peer_node != NO_PEER).then_some(PortRef {
            node: NodeId(self.peer_node),
            port: PortNum(self.peer_port),
        })
    }
    /// Width, speed, MTU and VL capability.
    #[must_use]
    pub fn attrs(&self) -> LinkAttrs {
        self.attrs
    }
    /// The LID the topology file recorded (0 if none; an SM assigns the real one).
    #[must_use]
    pub fn lid(&self) -> Lid {
        self.lid
    }
    /// The LMC the topology file recorded.
    #[must_use]
    pub fn lmc(&self) -> u8 {
        self.lmc
    }
}

/// A fabric: nodes, their ports and the links between them.
///
/// Storage is two flat vectors: `nodes` and `ports`, where node *n* owns the slots
/// `first_port(n) .. first_port(n) + num_ports + 1` (slot 0 is port 0; it is unused for CAs and
/// routers). A port is 24 bytes, so a 100,000-CA fat tree takes tens of MB. Lookups by GUID,
/// port GUID and name go through hash indexes kept in step by every mutating method.
///
/// Invariants (checked by every mutator, re-checked by [`Topology::validate`]):
/// - node GUIDs are unique, port GUIDs are unique, names are unique;
/// - every link is symmetric and never uses a switch's port 0;
/// - both ends of a link carry the same [`LinkAttrs`].
#[derive(Clone, Debug, Default)]
pub struct Topology {
    nodes: Vec<Node>,
    ports: Vec<Port>,
    by_guid: HashMap<Guid, NodeId>,
    by_port_guid: HashMap<Guid, PortRef>,
    by_name: HashMap<Box<str>, NodeId>,
    /// ibnetdiscover's "Initiated from node N port P": (NodeGUID, PortGUID).
    initiated_from: Option<(Guid, Option<Guid>)>,
}

/// Two topologies are equal when their nodes and ports are, in the same order.
impl PartialEq for Topology {
    fn eq(&self, other: &Self) -> bool {
        self.nodes == other.nodes && self.ports == other.ports
    }
}
impl Eq for Topology {}

const MAX_NAME: usize = 64;

impl Topology {
    /// An empty fabric.
    #[must_use]
    pub fn new() -> Topology {
        Topology::default()
    }

    /// An empty fabric with room for `nodes` nodes and `ports` port slots.
    #[must_use]
    pub fn with_capacity(nodes: usize, ports: usize) -> Topology {
        Topology {
            nodes: Vec::with_capacity(nodes),
            ports: Vec::with_capacity(ports),
            by_guid: HashMap::with_capacity(nodes),
            by_port_guid: HashMap::with_capacity(ports),
            by_name: HashMap::with_capacity(nodes),
            initiated_from: None,
        }
    }

    /// Adds a node. Port GUIDs follow ibsim: a switch's ports all carry the node GUID; port
    /// *p* of a CA or router carries node GUID + *p*. Use [`Topology::set_port_guid`] to
    /// override.
    ///
    /// Errors: port count outside 1..=254, duplicate name or GUID (naming both nodes), a name
    /// with `"`, `#`, `@` or a line break, a description over 64 bytes.
    pub fn add_node(&mut self, new: NewNode) -> Result<NodeId, TopoError> {
        let NewNode {
            node_type,
            num_ports,
            guid,
            sys_image_guid,
            name,
            desc,
            vendor_id,
            device_id,
        } = new;
        if num_ports == 0 || num_ports > PortNum::MAX.0 {
            return Err(TopoError::BadPortCount {
                node: name,
                ports: u32::from(num_ports),
            });
        }
        check_name(&name)?;
        if let Some(d) = &desc {
            if d.len() > MAX_NAME {
                return Err(TopoError::DescriptionTooLong {
                    node: name,
                    len: d.len(),
                });
            }
            if d.contains(['"', '\n', '\r']) {
                return Err(TopoError::BadName {
                    name: d.clone(),
                    reason: "a description cannot contain '\"' or a line break",
                });
            }
        }
        if self.by_name.contains_key(name.as_str()) {
            return Err(TopoError::DuplicateName { name });
        }
        if guid.0 == 0 {
            return Err(TopoError::ZeroGuid { node: name });
        }
        if let Some(other) = self.by_guid.get(&guid) {
            return Err(TopoError::DuplicateGuid {
                guid,
                first: self.nodes[other.index()].name.to_string(),
                second: name,
            });
        }
        let id = NodeId(
            u32::try_from(self.nodes.len()).map_err(|_| TopoError::TooLarge {
                what: "more than 2^32 nodes",
            })?,
        );
        let first_port = u32::try_from(self.ports.len())
            .ok()
            .filter(|f| f.checked_add(u32::from(num_ports) + 1).is_some())
            .ok_or(TopoError::TooLarge {
                what: "more than 2^32 ports",
            })?;
        let is_switch = node_type == NodeType::SWITCH;
        // Check every port GUID before changing anything.
        let port_guid = |p: u8| {
            if is_switch {
                guid
            } else {
                Guid(guid.0.wrapping_add(u64::from(p)))
            }
        };
        let first = u8::from(!is_switch);
        let check_ports = if is_switch { 0..=0 } else { 1..=num_ports };
        for p in check_ports {
            let pg = port_guid(p);
            if let Some(other) = self.by_port_guid.get(&pg) {
                return Err(TopoError::DuplicateGuid {
                    guid: pg,
                    first: self.nodes[other.node.index()].name.to_string(),
                    second: name,
                });
            }
        }
        self.ports
            .push(Port::new(if is_switch { guid } else { Guid(0) }));
        for p in 1..=num_ports {
            self.ports.push(Port::new(port_guid(p)));
        }
        if is_switch {
            self.by_port_guid.insert(
                guid,
                PortRef {
                    node: id,
                    port: PortNum(0),
                },
            );
        } else {
            for p in first..=num_ports {
                self.by_port_guid.insert(
                    port_guid(p),
                    PortRef {
                        node: id,
                        port: PortNum(p),
                    },
                );
            }
        }
        // A description equal to the name is the default; store it as such so that equality
        // does not depend on whether a file spelled it out.
        let desc = desc.filter(|d| *d != name);
        let name: Box<str> = name.into_boxed_str();
        self.by_guid.insert(guid, id);
        self.by_name.insert(name.clone(), id);
        self.nodes.push(Node {
            node_type,
            num_ports,
            enhanced_port0: false,
            device_id,
            vendor_id: vendor_id & 0x00ff_ffff,
            first_port,
            guid,
            sys_image_guid: sys_image_guid.unwrap_or(guid),
            name,
            desc: desc.map(String::into_boxed_str),
        });
        Ok(id)
    }

    /// Links `a` and `b` with default attributes; both ports must exist, be free and not be
    /// port 0.
    pub fn connect(&mut self, a: PortRef, b: PortRef) -> Result<(), TopoError> {
        self.connect_with(a, b, LinkAttrs::default())
    }

    /// Links `a` and `b` with the given attributes on both ends.
    pub fn connect_with(
        &mut self,
        a: PortRef,
        b: PortRef,
        attrs: LinkAttrs,
    ) -> Result<(), TopoError> {
        let ia = self.link_slot(a)?;
        let ib = self.link_slot(b)?;
        if ia == ib {
            return Err(TopoError::SelfLink {
                node: self.name_of(a.node),
                port: a.port.0,
            });
        }
        self.ports[ia].peer_node = b.node.0;
        self.ports[ia].peer_port = b.port.0;
        self.ports[ia].attrs = attrs;
        self.ports[ib].peer_node = a.node.0;
        self.ports[ib].peer_port = a.port.0;
        self.ports[ib].attrs = attrs;
        Ok(())
    }

    /// Removes the link at `at` (both ends); returns the former peer.
    pub fn disconnect(&mut self, at: PortRef) -> Result<Option<PortRef>, TopoError> {
        let i = self.slot(at)?;
        let peer = self.ports[i].peer();
        if let Some(p) = peer {
            let j = self.slot(p)?;
            self.ports[j].peer_node = NO_PEER;
            self.ports[j].peer_port = 0;
        }
        self.ports[i].peer_node = NO_PEER;
        self.ports[i].peer_port = 0;
        Ok(peer)
    }

    /// Sets the attributes of `at` and, if linked, of its peer.
    pub fn set_link_attrs(&mut self, at: PortRef, attrs: LinkAttrs) -> Result<(), TopoError> {
        let i = self.slot(at)?;
        self.ports[i].attrs = attrs;
        if let Some(p) = self.ports[i].peer() {
            let j = self.slot(p)?;
            self.ports[j].attrs = attrs;
        }
        Ok(())
    }

    /// Records a LID and LMC for a port (a switch records them on port 0).
    pub fn set_lid(&mut self, at: PortRef, lid: Lid, lmc: u8) -> Result<(), TopoError> {
        let i = self.slot(at)?;
        self.ports[i].lid = lid;
        self.ports[i].lmc = lmc;
        Ok(())
    }

    /// Sets a port GUID. For a switch every port shares port 0's GUID, so `at.port` is
    /// ignored and all of them change.
    pub fn set_port_guid(&mut self, at: PortRef, guid: Guid) -> Result<(), TopoError> {
        let node = self.node_checked(at.node)?;
        let is_switch = node.is_switch();
        let key = if is_switch {
            PortRef {
                node: at.node,
                port: PortNum(0),
            }
        } else {
            at
        };
        let i = self.slot(key)?;
        let old = self.ports[i].guid;
        if old == guid {
            return Ok(());
        }
        if guid.0 == 0 {
            return Err(TopoError::ZeroGuid {
                node: self.name_of(at.node),
            });
        }
        if let Some(other) = self.by_port_guid.get(&guid) {
            return Err(TopoError::DuplicateGuid {
                guid,
                first: self.name_of(other.node),
                second: self.name_of(at.node),
            });
        }
        self.by_port_guid.remove(&old);
        self.by_port_guid.insert(guid, key);
        if is_switch {
            let (start, n) = self.port_span(at.node);
            for p in &mut self.ports[start..start + n] {
                p.guid = guid;
            }
        } else {
            self.ports[i].guid = guid;
        }
        Ok(())
    }

    /// Sets NodeDescription (`None`: use the name).
    pub fn set_desc(&mut self, node: NodeId, desc: Option<String>) -> Result<(), TopoError> {
        let name = self.name_of(node);
        if let Some(d) = &desc {
            if d.len() > MAX_NAME {
                return Err(TopoError::DescriptionTooLong {
                    node: name,
                    len: d.len(),
                });
            }
        }
        let desc = desc.filter(|d| *d != name);
        self.node_mut(node)?.desc = desc.map(String::into_boxed_str);
        Ok(())
    }

    /// Sets SwitchInfo EnhancedPort0 (ignored for non-switches).
    pub fn set_enhanced_port0(&mut self, node: NodeId, on: bool) -> Result<(), TopoError> {
        let n = self.node_mut(node)?;
        n.enhanced_port0 = on && n.is_switch();
        Ok(())
    }

    /// The node (and port, if the text named one) an ibnetdiscover walk was initiated from
    /// (`# Initiated from node N port P`), i.e. where the SM that discovered the fabric sat;
    /// `None` if not recorded or if it names no node of this topology.
    #[must_use]
    pub fn initiated_from(&self) -> Option<(NodeId, Option<PortNum>)> {
        let (n, p) = self.initiated_from?;
        let id = self.node_by_guid(n)?;
        let port = p
            .and_then(|g| self.port_by_guid(g))
            .filter(|r| r.node == id)
            .map(|r| r.port);
        Some((id, port))
    }

    /// Records where the fabric was discovered from (see [`Topology::initiated_from`]); the
    /// GUIDs are resolved when read, so this may precede the nodes.
    pub fn set_initiated_from(&mut self, node: Guid, port: Option<Guid>) {
        self.initiated_from = Some((node, port));
    }

    /// Number of nodes.
    #[must_use]
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }
    /// Number of switches.
    #[must_use]
    pub fn num_switches(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_switch()).count()
    }
    /// Number of channel adapters.
    #[must_use]
    pub fn num_cas(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.node_type == NodeType::CA)
            .count()
    }
    /// Number of routers.
    #[must_use]
    pub fn num_routers(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.node_type == NodeType::ROUTER)
            .count()
    }
    /// Number of links (each counted once).
    #[must_use]
    pub fn num_links(&self) -> usize {
        self.links().count()
    }

    /// All nodes with their ids, in id order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u32), n))
    }

    /// Node ids of one type, in id order.
    pub fn nodes_of_type(&self, t: NodeType) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes()
            .filter(move |(_, n)| n.node_type == t)
            .map(|(id, _)| id)
    }

    /// A node, or `None` if `id` is out of range.
    #[must_use]
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index())
    }

    /// A port, or `None` if the node or port does not exist (port 0 of a CA does not).
    #[must_use]
    pub fn port(&self, at: PortRef) -> Option<&Port> {
        self.slot(at).ok().map(|i| &self.ports[i])
    }

    /// The peer of a port, if linked.
    #[must_use]
    pub fn peer(&self, at: PortRef) -> Option<PortRef> {
        self.port(at).and_then(Port::peer)
    }

    /// A node's ports with their numbers (from port 0 for a switch, 1 otherwise).
    pub fn ports(&self, id: NodeId) -> impl Iterator<Item = (PortNum, &Port)> {
        let (start, n, first) = match self.nodes.get(id.index()) {
            Some(node) => (
                node.first_port as usize,
                usize::from(node.num_ports) + 1,
                usize::from(node.first_port()),
            ),
            None => (0, 0, 0),
        };
        self.ports[start..start + n]
            .iter()
            .enumerate()
            .skip(first)
            .map(|(p, port)| (PortNum(p as u8), port))
    }

    /// Every link once, lower end first, in node/port order.
    pub fn links(&self) -> impl Iterator<Item = Link> + '_ {
        self.nodes().flat_map(move |(id, _)| {
            self.ports(id).filter_map(move |(p, port)| {
                let a = PortRef { node: id, port: p };
                port.peer().filter(|b| a < *b).map(|b| Link { a, b })
            })
        })
    }

    /// The node with this NodeGUID.
    #[must_use]
    pub fn node_by_guid(&self, guid: Guid) -> Option<NodeId> {
        self.by_guid.get(&guid).copied()
    }

    /// The port with this PortGUID (a switch answers with port 0).
    #[must_use]
    pub fn port_by_guid(&self, guid: Guid) -> Option<PortRef> {
        self.by_port_guid.get(&guid).copied()
    }

    /// The node with this name (the topology file's quoted id).
    #[must_use]
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// The first node whose NodeDescription is `desc` (descriptions need not be unique).
    #[must_use]
    pub fn node_by_desc(&self, desc: &str) -> Option<NodeId> {
        self.nodes()
            .find(|(_, n)| n.desc() == desc)
            .map(|(id, _)| id)
    }

    /// Re-checks every invariant: unique GUIDs and names, port ranges, symmetric links with
    /// equal attributes on both ends, no link on port 0.
    pub fn validate(&self) -> Result<(), TopoError> {
        let mut guids: HashMap<Guid, NodeId> = HashMap::with_capacity(self.nodes.len());
        let mut names: HashMap<&str, NodeId> = HashMap::with_capacity(self.nodes.len());
        let mut port_guids: HashMap<Guid, NodeId> = HashMap::with_capacity(self.ports.len());
        for (id, n) in self.nodes() {
            if let Some(first) = guids.insert(n.guid, id) {
                return Err(TopoError::DuplicateGuid {
                    guid: n.guid,
                    first: self.name_of(first),
                    second: n.name.to_string(),
                });
            }
            if names.insert(&n.name, id).is_some() {
                return Err(TopoError::DuplicateName {
                    name: n.name.to_string(),
                });
            }
            for (p, port) in self.ports(id) {
                if n.is_switch() && p.0 > 0 {
                    continue;
                }
                if let Some(first) = port_guids.insert(port.guid, id) {
                    return Err(TopoError::DuplicateGuid {
                        guid: port.guid,
                        first: self.name_of(first),
                        second: n.name.to_string(),
                    });
                }
            }
            for (p, port) in self.ports(id) {
                let Some(peer) = port.peer() else { continue };
                let here = PortRef { node: id, port: p };
                if p.0 == 0 {
                    return Err(TopoError::LinkOnPort0 {
                        node: n.name.to_string(),
                    });
                }
                let asym = |detail: String| TopoError::AsymmetricLink {
                    node: n.name.to_string(),
                    port: p.0,
                    peer: self.name_of(peer.node),
                    peer_port: peer.port.0,
                    detail,
                };
                let Some(back) = self.port(peer) else {
                    return Err(asym("that port does not exist".into()));
                };
                if back.peer() != Some(here) {
                    return Err(asym(match back.peer() {
                        Some(o) => format!(
                            "that port is linked to {:?} port {}",
                            self.name_of(o.node),
                            o.port
                        ),
                        None => "that port is not linked".into(),
                    }));
                }
                if back.attrs != port.attrs {
                    return Err(asym(format!(
                        "the ends disagree on attributes ({:?} vs {:?})",
                        port.attrs, back.attrs
                    )));
                }
            }
        }
        Ok(())
    }

    /// Compares two fabrics by GUID, ignoring node order and names: node type, port count,
    /// description, system image GUID, vendor/device ids, port GUIDs, links (as GUID/port
    /// pairs), link attributes and LIDs. Returns the first difference found.
    #[must_use]
    pub fn diff(&self, other: &Topology) -> Option<String> {
        if self.nodes.len() != other.nodes.len() {
            return Some(format!(
                "{} nodes vs {} nodes",
                self.nodes.len(),
                other.nodes.len()
            ));
        }
        for (id, a) in self.nodes() {
            let Some(oid) = other.node_by_guid(a.guid) else {
                return Some(format!("node {:?} ({}) missing", a.name, a.guid));
            };
            let Some(b) = other.node(oid) else {
                return Some(format!("node {:?} index broken", a.name));
            };
            let facts = |n: &Node| {
                (
                    n.node_type,
                    n.num_ports,
                    n.desc().to_string(),
                    n.sys_image_guid,
                    n.vendor_id,
                    n.device_id,
                    n.enhanced_port0,
                )
            };
            if facts(a) != facts(b) {
                return Some(format!("node {}: {:?} vs {:?}", a.guid, facts(a), facts(b)));
            }
            for ((p, pa), (_, pb)) in self.ports(id).zip(other.ports(oid)) {
                let peer_key = |t: &Topology, port: &Port| {
                    port.peer()
                        .and_then(|r| t.node(r.node).map(|n| (n.guid, r.port)))
                };
                let ka = (pa.guid, pa.attrs, pa.lid, pa.lmc, peer_key(self, pa));
                let kb = (pb.guid, pb.attrs, pb.lid, pb.lmc, peer_key(other, pb));
                if ka != kb {
                    return Some(format!("node {} port {p}: {ka:?} vs {kb:?}", a.guid));
                }
            }
        }
        None
    }

    fn name_of(&self, id: NodeId) -> String {
        self.nodes
            .get(id.index())
            .map_or_else(|| id.to_string(), |n| n.name.to_string())
    }

    fn node_checked(&self, id: NodeId) -> Result<&Node, TopoError> {
        self.nodes
            .get(id.index())
            .ok_or(TopoError::NoSuchNode(id.0))
    }

    fn node_mut(&mut self, id: NodeId) -> Result<&mut Node, TopoError> {
        self.nodes
            .get_mut(id.index())
            .ok_or(TopoError::NoSuchNode(id.0))
    }

    fn port_span(&self, id: NodeId) -> (usize, usize) {
        self.nodes.get(id.index()).map_or((0, 0), |n| {
            (n.first_port as usize, usize::from(n.num_ports) + 1)
        })
    }

    /// The slot of an existing port.
    fn slot(&self, at: PortRef) -> Result<usize, TopoError> {
        let n = self.node_checked(at.node)?;
        if at.port.0 > n.num_ports || at.port.0 < n.first_port() {
            return Err(TopoError::NoSuchPort {
                node: n.name.to_string(),
                port: at.port.0,
                num_ports: n.num_ports,
            });
        }
        Ok(n.first_port as usize + usize::from(at.port.0))
    }

    /// The slot of a port that may take a new link.
    fn link_slot(&self, at: PortRef) -> Result<usize, TopoError> {
        let i = self.slot(at)?;
        if at.port.0 == 0 {
            return Err(TopoError::LinkOnPort0 {
                node: self.name_of(at.node),
            });
        }
        if let Some(peer) = self.ports[i].peer() {
            return Err(TopoError::PortInUse {
                node: self.name_of(at.node),
                port: at.port.0,
                peer: self.name_of(peer.node),
                peer_port: peer.port.0,
            });
        }
        Ok(i)
    }
}

/// Names travel inside double quotes in both file formats, and ibsim reserves `#` and `@`.
fn check_name(name: &str) -> Result<(), TopoError> {
    let reason = if name.is_empty() {
        Some("a name cannot be empty")
    } else if name.len() > MAX_NAME {
        Some("a name is at most 64 bytes")
    } else if name.contains(['"', '#', '@', '\n', '\r']) {
        Some("a name cannot contain '\"', '#', '@' or a line break")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(TopoError::BadName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(n: NodeId, p: u8) -> PortRef {
        PortRef {
            node: n,
            port: PortNum(p),
        }
    }

    #[test]
    fn build_and_query() {
        let mut t = Topology::new();
        let s = t
            .add_node(NewNode::new(NodeType::SWITCH, 8, Guid(0x200000), "sw"))
            .unwrap();
        let h = t
            .add_node(NewNode::new(NodeType::CA, 2, Guid(0x100000), "h"))
            .unwrap();
        t.connect(pr(s, 1), pr(h, 2)).unwrap();
        assert_eq!(t.peer(pr(h, 2)), Some(pr(s, 1)));
        assert_eq!(t.port(pr(h, 2)).unwrap().guid(), Guid(0x100002));
        assert_eq!(t.port(pr(s, 5)).unwrap().guid(), Guid(0x200000));
        assert!(t.port(pr(h, 0)).is_none());
        assert_eq!(t.port_by_guid(Guid(0x100001)), Some(pr(h, 1)));
        assert_eq!(t.node_by_name("h"), Some(h));
        assert_eq!(t.node_by_guid(Guid(0x200000)), Some(s));
        assert_eq!(t.num_links(), 1);
        assert_eq!(t.ports(s).count(), 9);
        assert_eq!(t.ports(h).count(), 2);
        t.validate().unwrap();
        assert!(matches!(
            t.connect(pr(s, 1), pr(h, 1)),
            Err(TopoError::PortInUse { .. })
        ));
        assert!(matches!(
            t.connect(pr(s, 0), pr(h, 1)),
            Err(TopoError::LinkOnPort0 { .. })
        ));
        assert!(matches!(
            t.connect(pr(s, 9), pr(h, 1)),
            Err(TopoError::NoSuchPort { .. })
        ));
        assert_eq!(t.disconnect(pr(h, 2)).unwrap(), Some(pr(s, 1)));
        assert_eq!(t.num_links(), 0);
    }

    #[test]
    fn duplicate_guid_names_both_nodes() {
        let mut t = Topology::new();
        t.add_node(NewNode::new(NodeType::SWITCH, 8, Guid(7), "first"))
            .unwrap();
        let e = t
            .add_node(NewNode::new(NodeType::SWITCH, 8, Guid(7), "second"))
            .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("first") && msg.contains("second"), "{msg}");
        // A CA whose port GUID collides with a switch GUID.
        let e = t
            .add_node(NewNode::new(NodeType::CA, 1, Guid(6), "third"))
            .unwrap_err();
        assert!(e.to_string().contains("first") && e.to_string().contains("third"));
    }

    #[test]
    fn bad_names_and_counts() {
        let mut t = Topology::new();
        for bad in ["", "a\"b", "a#b", "a@b"] {
            assert!(t
                .add_node(NewNode::new(NodeType::CA, 1, Guid(1), bad))
                .is_err());
        }
        assert!(matches!(
            t.add_node(NewNode::new(NodeType::CA, 0, Guid(1), "z")),
            Err(TopoError::BadPortCount { .. })
        ));
        assert!(matches!(
            t.add_node(NewNode::new(NodeType::CA, 255, Guid(1), "z")),
            Err(TopoError::BadPortCount { .. })
        ));
    }

    #[test]
    fn port_is_compact() {
        assert!(std::mem::size_of::<Port>() <= 24);
    }
}

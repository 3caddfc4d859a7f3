//! Faults put into a topology before an SM sees it: a cable pulled (`link:NAME:PORT`), or a
//! switch gone together with the CAs cabled only to it (`switch:NAME`). The route benches
//! (`ROUTE_VL_FAULT`), the engine tests and `ibsm topo --fault` use the same forms, so a
//! failed-link or failed-switch fabric can be handed to OpenSM on ibsim as well.

use std::collections::HashMap;
use std::str::FromStr;

use ibmad::PortNum;

use super::{NewNode, PortRef, TopoError, Topology};

/// One fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The cable on this port of the named node (both ends come out).
    Link {
        /// The node's name.
        node: String,
        /// Its port.
        port: u8,
    },
    /// The named switch, and every CA whose cables all lead to it.
    Switch(String),
}

/// Why a fault could not be parsed or put in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// Not `link:NAME:PORT` or `switch:NAME`.
    #[error("bad fault {0:?}: expected link:NAME:PORT or switch:NAME")]
    Syntax(String),
    /// No node has the name.
    #[error("no node named {0:?}")]
    NoNode(String),
    /// `switch:` names a node that is not a switch.
    #[error("{0:?} is not a switch")]
    NotSwitch(String),
    /// `link:` names a port without a cable.
    #[error("{node:?} port {port} has no link")]
    NotLinked {
        /// The node.
        node: String,
        /// The port.
        port: u8,
    },
    /// The topology refused the change.
    #[error(transparent)]
    Topo(#[from] TopoError),
}

impl FromStr for Fault {
    type Err = FaultError;

    fn from_str(s: &str) -> Result<Fault, FaultError> {
        let bad = || FaultError::Syntax(s.to_string());
        match s.split_once(':') {
            Some(("link", rest)) => {
                let (node, port) = rest.rsplit_once(':').ok_or_else(bad)?;
                let port = port.parse().map_err(|_| bad())?;
                if node.is_empty() {
                    return Err(bad());
                }
                Ok(Fault::Link {
                    node: node.to_string(),
                    port,
                })
            }
            Some(("switch", node)) if !node.is_empty() => Ok(Fault::Switch(node.to_string())),
            _ => Err(bad()),
        }
    }
}

impl Topology {
    /// A copy of the topology with `fault` put in.
    ///
    /// # Errors
    /// The named node or port does not exist, `switch:` names a non-switch, or `link:` names
    /// a port without a cable.
    pub fn with_fault(&self, fault: &Fault) -> Result<Topology, FaultError> {
        match fault {
            Fault::Link { node, port } => {
                let id = self
                    .node_by_name(node)
                    .ok_or_else(|| FaultError::NoNode(node.clone()))?;
                let mut t = self.clone();
                let at = PortRef {
                    node: id,
                    port: PortNum(*port),
                };
                match t.disconnect(at)? {
                    Some(_) => Ok(t),
                    None => Err(FaultError::NotLinked {
                        node: node.clone(),
                        port: *port,
                    }),
                }
            }
            Fault::Switch(name) => self.without_switch(name),
        }
    }

    /// A copy of the topology without the switch `name` and without the CAs (and routers)
    /// whose cables all lead to it; a node with no cable at all stays. Node and port GUIDs,
    /// names and link attributes are kept, nodes in the same order.
    ///
    /// # Errors
    /// No node has the name, or it is not a switch.
    pub fn without_switch(&self, name: &str) -> Result<Topology, FaultError> {
        let gone = self
            .node_by_name(name)
            .ok_or_else(|| FaultError::NoNode(name.to_string()))?;
        if !self.node(gone).is_some_and(|n| n.is_switch()) {
            return Err(FaultError::NotSwitch(name.to_string()));
        }
        let cabled_only_to_gone = |id| {
            self.ports(id).any(|(_, p)| p.peer().is_some())
                && self
                    .ports(id)
                    .all(|(_, p)| p.peer().is_none_or(|r| r.node == gone))
        };
        let mut out = Topology::new();
        let mut map = HashMap::new();
        for (id, n) in self.nodes() {
            if id == gone || (!n.is_switch() && cabled_only_to_gone(id)) {
                continue;
            }
            let mut nn = NewNode::new(n.node_type(), n.num_ports(), n.guid(), n.name());
            nn.sys_image_guid = Some(n.sys_image_guid());
            let nid = out.add_node(nn)?;
            for (port, p) in self.ports(id) {
                out.set_port_guid(PortRef { node: nid, port }, p.guid())?;
            }
            map.insert(id, nid);
        }
        for l in self.links() {
            if let (Some(&a), Some(&b)) = (map.get(&l.a.node), map.get(&l.b.node)) {
                let attrs = self.port(l.a).map(|p| p.attrs()).unwrap_or_default();
                out.connect_with(
                    PortRef { node: a, ..l.a },
                    PortRef { node: b, ..l.b },
                    attrs,
                )?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn faults_parse_and_bad_ones_are_named() {
        assert_eq!(
            "link:sw-0-0:3".parse(),
            Ok(Fault::Link {
                node: "sw-0-0".into(),
                port: 3
            })
        );
        assert_eq!("switch:sw-1".parse(), Ok(Fault::Switch("sw-1".into())));
        for bad in [
            "",
            "link",
            "link:sw",
            "link::3",
            "link:sw:x",
            "switch:",
            "cable:a:1",
        ] {
            assert_eq!(
                bad.parse::<Fault>(),
                Err(FaultError::Syntax(bad.into())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_link_fault_pulls_one_cable() {
        let t = Topology::generate("torus:3,3").unwrap();
        let f = t.with_fault(&"link:sw-1-1:1".parse().unwrap()).unwrap();
        assert_eq!(f.num_links(), t.num_links() - 1);
        assert_eq!(f.num_switches(), t.num_switches());
        let at = PortRef {
            node: f.node_by_name("sw-1-1").unwrap(),
            port: PortNum(1),
        };
        assert!(f.peer(at).is_none());
        // Twice is an error: the port has no cable any more.
        assert_eq!(
            f.with_fault(&"link:sw-1-1:1".parse().unwrap()),
            Err(FaultError::NotLinked {
                node: "sw-1-1".into(),
                port: 1
            })
        );
        assert_eq!(
            t.with_fault(&"link:nope:1".parse().unwrap()),
            Err(FaultError::NoNode("nope".into()))
        );
    }

    #[test]
    fn a_switch_fault_takes_its_lone_cas_with_it() {
        // One CA per switch on the torus: it goes with its switch.
        let t = Topology::generate("torus:3,3").unwrap();
        let f = t.with_fault(&"switch:sw-1-1".parse().unwrap()).unwrap();
        assert_eq!(f.num_switches(), t.num_switches() - 1);
        assert_eq!(f.num_cas(), t.num_cas() - 1);
        assert!(f.node_by_name("sw-1-1").is_none());
        // The four switch links and the CA's cable are gone.
        assert_eq!(f.num_links(), t.num_links() - 5);
        let kept = f.node_by_name("sw-0-0").unwrap();
        let old = t.node_by_name("sw-0-0").unwrap();
        assert_eq!(f.node(kept).unwrap().guid(), t.node(old).unwrap().guid());
        // Dual-port CAs on two switches stay, with one cable left.
        let r = Topology::generate("random:6,6,3,1,ports=8").unwrap();
        let sw = r
            .nodes()
            .find(|(_, n)| n.is_switch())
            .map(|(_, n)| n.name().to_string())
            .unwrap();
        let f = r.without_switch(&sw).unwrap();
        assert_eq!(f.num_cas(), r.num_cas());
        let ca = r
            .nodes()
            .find(|(_, n)| !n.is_switch())
            .map(|(_, n)| n.name().to_string())
            .unwrap();
        assert_eq!(r.without_switch(&ca), Err(FaultError::NotSwitch(ca)));
    }
}

//! Helpers for the updn/verify tests: fabric-sim topologies as SM subnets.
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::HashMap;

use fabric_sim::topo::Topology;
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::fixtures::{add, connect, node};
use sm::Subnet;

/// A fabric-sim topology as an SM subnet (all links Active, no LIDs yet).
pub fn from_topology(t: &Topology) -> Subnet {
    let mut s = Subnet::new();
    let mut ids = HashMap::new();
    let mut first_sw = true;
    for (id, n) in t.nodes() {
        let mut nd = node(n.guid().0, n.node_type(), n.num_ports(), n.desc());
        if n.is_switch() && first_sw {
            nd.dr_path = ibmad::DrPath::local();
            first_sw = false;
        }
        let sid = add(&mut s, nd);
        for (p, port) in t.ports(id) {
            if let Some(x) = s.port_mut(sid, p) {
                x.guid = port.guid();
            }
        }
        ids.insert(id, sid);
    }
    for l in t.links() {
        connect(
            &mut s,
            (ids[&l.a.node], l.a.port.0),
            (ids[&l.b.node], l.b.port.0),
        );
    }
    s
}

/// Fresh LIDs, LMC 0.
pub fn lids(s: &mut Subnet) {
    assign_lids(
        s,
        &LidConfig {
            lmc: 0,
            reassign_lids: false,
        },
        &Guid2Lid::new(),
    )
    .unwrap();
}

/// The generator spec or file as a subnet with fresh LIDs.
pub fn subnet(spec: &str) -> Subnet {
    let t = Topology::from_spec_or_file(spec).unwrap();
    let mut s = from_topology(&t);
    lids(&mut s);
    s
}

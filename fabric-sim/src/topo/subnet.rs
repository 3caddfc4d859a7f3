//! A [`Topology`] as the SM's model of a subnet ([`sm::Subnet`]), as discovery would have
//! recorded it once every port answered and every cabled link came up: for judging tables
//! against a topology file (`ibsm verify`), for the routing tests and for comparing with what
//! another SM programmed. This is the one topology → subnet conversion; feature `subnet`.

use ibmad::{DrPath, NodeType, PortNum};
use sm::{Node, NodeId, Subnet};

use super::{NodeId as TopoNode, Topology};

/// `t` as an SM subnet:
/// - every node in topology order (`sm::NodeId(i)` is topology node `i`) with its GUIDs,
///   NodeType, port count, VendorID, DeviceID and NodeDescription;
/// - every port with the topology's port GUID; every cabled port linked and Active (4x SDR,
///   [`sm::subnet::active_port_info`]), a switch's port 0 Active;
/// - the SM's node (the one at the empty directed route) where the fabric was discovered from
///   (ibnetdiscover's `# Initiated from node … port …`, which also gives the SM's port on a
///   multi-port CA), else the first switch, else the first node;
/// - no LIDs (run [`sm::lid::assign_lids`], or [`copy_lids`] for those the topology records).
#[must_use]
pub fn to_subnet(t: &Topology) -> Subnet {
    let origin = t.initiated_from();
    let sm_node: Option<TopoNode> = origin.map(|(n, _)| n).or_else(|| {
        t.nodes_of_type(NodeType::SWITCH)
            .next()
            .or_else(|| t.nodes().next().map(|(id, _)| id))
    });
    let mut s = Subnet::new();
    for (id, n) in t.nodes() {
        let mut nd = Node::new(n.guid(), n.node_type(), n.num_ports(), n.desc());
        nd.sys_guid = n.sys_image_guid();
        nd.vendor_id = n.vendor_id();
        nd.device_id = n.device_id();
        if Some(id) == sm_node {
            nd.dr_path = DrPath::local();
        }
        let sid = s.add_active_node(nd);
        for (p, port) in t.ports(id) {
            if let Some(x) = s.port_mut(sid, p) {
                x.guid = port.guid();
            }
        }
    }
    s.local_port = origin.and_then(|(_, p)| p).filter(|p| p.0 != 0);
    for l in t.links() {
        s.connect_active(
            (NodeId(l.a.node.0), l.a.port),
            (NodeId(l.b.node.0), l.b.port),
        );
    }
    s
}

/// Gives the end ports of `s` (built from `t` by [`to_subnet`]) the LIDs and LMCs `t` records
/// (ibsim `lid`/`lmc` annotations, ibnetdiscover's `lid` comments); ports without one keep
/// LID 0.
pub fn copy_lids(t: &Topology, s: &mut Subnet) {
    for (id, _) in t.nodes() {
        for (p, port) in t.ports(id) {
            if let Some(x) = s.port_mut(NodeId(id.0), PortNum(p.0)) {
                x.lid = port.lid();
                x.lmc = port.lmc();
            }
        }
    }
}

/// The torus-2QoS.conf (OpenSM's format, [`sm::routing::torus::TorusConfig`]) of a generated
/// torus or mesh: its size and two seeds of links that fix the axes
/// ([`sm::routing::torus::TorusConfig::for_grid`]), switch (x, y, z) having GUID
/// [`super::gen::SWITCH_GUID_BASE`] + x + X·(y + Y·z).
#[must_use]
pub fn torus_conf(grid: &super::gen::Grid) -> String {
    let size = grid.size.map(|d| usize::try_from(d).unwrap_or(usize::MAX));
    sm::routing::torus::TorusConfig::for_grid(size, !grid.wrap, super::gen::SWITCH_GUID_BASE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::{Guid, Lid};

    #[test]
    fn initiated_from_names_the_sm_node_and_port() {
        let text = "\
# Initiated from node 0000000000100000 port 0000000000100002

vendid=0x2c9
devid=0xbd36
sysimgguid=0x200000
switchguid=0x200000(200000)
Switch\t4 \"S-0000000000200000\"\t\t# \"sw\" base port 0 lid 1 lmc 0
[1]\t\"H-0000000000100000\"[2](100002) \t\t# \"host\" lid 2 4xSDR

vendid=0x2c9
devid=0x1003
sysimgguid=0x100000
caguid=0x100000
Ca\t2 \"H-0000000000100000\"\t\t# \"host\"
[2](100002) \t\"S-0000000000200000\"[1]\t\t# lid 2 lmc 0 \"sw\" lid 1 4xSDR
";
        let t = Topology::parse_ibnetdiscover(text).unwrap();
        let mut s = to_subnet(&t);
        let (sw, ca) = (NodeId(0), NodeId(1));
        assert!(s.node(ca).dr_path.is_empty(), "the SM's node");
        assert!(!s.node(sw).dr_path.is_empty());
        assert_eq!(s.sm_port(), Some((ca, PortNum(2))));
        assert_eq!(s.node(sw).vendor_id, 0x2c9);
        assert_eq!(s.node(ca).device_id, 0x1003);
        assert_eq!(s.node(sw).desc, "sw");
        assert_eq!(s.port(ca, PortNum(2)).unwrap().guid, Guid(0x100002));
        assert_eq!(
            s.port(sw, PortNum(1)).unwrap().remote,
            Some((ca, PortNum(2)))
        );
        assert!(s.is_link_up(sw, PortNum(1)));
        assert!(!s.is_link_up(ca, PortNum(1)), "an uncabled port");
        assert_eq!(s.port(ca, PortNum(2)).unwrap().lid, Lid(0));
        copy_lids(&t, &mut s);
        assert_eq!(s.lid_of(ca, PortNum(2)), Lid(2));
        assert_eq!(s.lid_of(sw, PortNum(3)), Lid(1));
        // Written back, the origin line is kept.
        assert!(t
            .to_ibnetdiscover(false)
            .contains("# Initiated from node 0000000000100000 port 0000000000100002"));
    }

    #[test]
    fn without_an_origin_the_first_switch_is_the_sm_node() {
        let t = Topology::generate("fat-tree:2,4").unwrap();
        let s = to_subnet(&t);
        let first_sw = t.nodes_of_type(NodeType::SWITCH).next().unwrap();
        let (n, p) = s.sm_port().unwrap();
        assert_eq!((n.0, p), (first_sw.0, PortNum(0)));
        assert_eq!(s.nodes.len(), t.num_nodes());
        let linked = s.ports.iter().filter(|p| p.remote.is_some()).count();
        assert_eq!(linked, 2 * t.num_links());
    }
}

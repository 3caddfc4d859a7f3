//! Fixture F-DISC (subnet-init.md §2.3): the seed's four-round discovery walk, sent as
//! hand-built DR NodeInfo Gets through the simulator's `MadPort`, answered by real SMAs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use fabric_sim::sim::{SimConfig, TraceKind};
use fabric_sim::topo::NodeId;
use ibmad::attr::NodeInfo;
use ibmad::{Method, NodeType, PortNum, SmpAttrId, Status};
use sim_util::*;

/// One round of the seed's walk (subnet-init.md §2.3 table).
struct Round {
    round: u32,
    target: &'static str,
    /// libibmad path string.
    path: &'static str,
    /// NodeInfo.LocalPortNum of the responder.
    local_port: u8,
    node_type: NodeType,
    /// ReturnPath[1..=hop_cnt] after the outbound trip.
    ret: &'static [u8],
    /// "Return egress ports" column: (node, port) each hop of the response leaves by.
    egress: &'static [(&'static str, u8)],
}

const ROUNDS: [Round; 4] = [
    Round {
        round: 1,
        target: "C",
        path: "0,1",
        local_port: 2,
        node_type: NodeType::SWITCH,
        ret: &[2],
        egress: &[("C", 2)],
    },
    Round {
        round: 2,
        target: "A",
        path: "0,1,4",
        local_port: 1,
        node_type: NodeType::SWITCH,
        ret: &[2, 1],
        egress: &[("A", 1), ("C", 2)],
    },
    Round {
        round: 3,
        target: "D",
        path: "0,1,4,2",
        local_port: 1,
        node_type: NodeType::SWITCH,
        ret: &[2, 1, 1],
        egress: &[("D", 1), ("A", 1), ("C", 2)],
    },
    Round {
        round: 4,
        target: "H10",
        path: "0,1,4,2,3",
        local_port: 1,
        node_type: NodeType::CA,
        ret: &[2, 1, 1, 1],
        egress: &[("H10", 1), ("D", 1), ("A", 1), ("C", 2)],
    },
];

#[test]
fn f_disc_walk_answers_exactly_as_the_seed_says() {
    let cfg = SimConfig {
        trace: true,
        ..SimConfig::default()
    };
    let (mut f, sm) = fdisc(cfg);
    let names = f.names();
    for r in ROUNDS {
        let round = r.round;
        let tid = 0x1000 + u64::from(round);
        let hops_before = f.stats().hops;
        let resp = dr_get(&mut f, sm, r.path, SmpAttrId::NODE_INFO, 0, tid)
            .unwrap_or_else(|| panic!("round {round}: no response from {}", r.target));
        assert_eq!(resp.method(), Method::GET_RESP, "round {round}");
        assert_eq!(resp.status(), Status::OK, "round {round}");
        assert!(resp.direction(), "round {round}: D bit");
        assert_eq!(resp.hop_ptr, 0, "round {round}: hop pointer back at 0");
        let hc = r.ret.len();
        assert_eq!(usize::from(resp.hop_cnt), hc, "round {round}");
        assert!(resp.dr_slid().is_permissive() && resp.dr_dlid().is_permissive());
        assert_eq!(
            &resp.return_path[1..=hc],
            r.ret,
            "round {round}: ReturnPath"
        );
        let ni: NodeInfo = attr(&resp);
        assert_eq!(
            ni.local_port_num, r.local_port,
            "round {round}: LocalPortNum"
        );
        assert_eq!(ni.node_type(), r.node_type, "round {round}: NodeType");
        let id = names[r.target];
        assert_eq!(
            ni.node_guid(),
            f.topology().node(id).unwrap().guid(),
            "round {round}: NodeGUID is {}'s",
            r.target
        );
        // Out and back: exactly 2 × hop count link traversals.
        assert_eq!(f.stats().hops - hops_before, 2 * hc as u64, "round {round}");
        // The response left each hop by the seed's return egress port: the peer of the port
        // where the trace saw it arrive.
        let egress: Vec<(String, u8)> = f
            .trace()
            .iter()
            .filter(|e| {
                e.kind == TraceKind::Arrive && e.tid == tid && e.method == Method::GET_RESP.0
            })
            .map(|e| {
                let peer = f.peer(NodeId(e.node), PortNum(e.port)).unwrap();
                let name = f.topology().node(peer.node).unwrap().name().to_string();
                (name, peer.port.0)
            })
            .collect();
        let want: Vec<(String, u8)> = r.egress.iter().map(|(n, p)| (n.to_string(), *p)).collect();
        assert_eq!(egress, want, "round {round}: return egress ports");
    }
}

#[test]
fn f_disc_zero_hop_query_answers_from_the_sm_host_itself() {
    let (mut f, sm) = fdisc(SimConfig::default());
    let resp = dr_get(&mut f, sm, "0", SmpAttrId::NODE_INFO, 0, 7).unwrap();
    let ni: NodeInfo = attr(&resp);
    assert_eq!(ni.node_type(), NodeType::CA);
    assert_eq!(ni.local_port_num, 1);
    let sm_host = f.node_by_name("SM").unwrap();
    assert_eq!(ni.node_guid(), f.topology().node(sm_host).unwrap().guid());
    assert_eq!(f.stats().hops, 0, "a 0-hop SMP never crosses a link");
}

#[test]
fn f_disc_other_branches_are_reachable() {
    // E, B and H13 (filler wiring) are found by the same mechanism.
    let (mut f, sm) = fdisc(SimConfig::default());
    for (path, name, local) in [
        ("0,1,4,3", "E", 1),
        ("0,1,4,3,2", "B", 1),
        ("0,1,4,2,4", "H13", 1),
        ("0,1,6", "D", 5),
        ("0,1,4,2,2", "B", 2),
    ] {
        let resp = dr_get(&mut f, sm, path, SmpAttrId::NODE_INFO, 0, 9).unwrap();
        let ni: NodeInfo = attr(&resp);
        let id = f.node_by_name(name).unwrap();
        assert_eq!(
            ni.node_guid(),
            f.topology().node(id).unwrap().guid(),
            "{path}"
        );
        assert_eq!(ni.local_port_num, local, "{path}");
    }
}

#[test]
fn a_path_through_a_ca_is_discarded() {
    // C14-9:2: a CA is never an intermediate hop; H10 drops the SMP and nothing returns.
    let (mut f, sm) = fdisc(SimConfig::default());
    assert!(dr_get(&mut f, sm, "0,1,4,2,3,1", SmpAttrId::NODE_INFO, 0, 5).is_none());
    let h10 = f.node_by_name("H10").unwrap();
    assert_eq!(f.agent(h10).unwrap().stats().discarded, 1);
}

#[test]
fn a_path_into_an_uncabled_port_returns_nothing() {
    let (mut f, sm) = fdisc(SimConfig::default());
    assert!(dr_get(&mut f, sm, "0,1,7", SmpAttrId::NODE_INFO, 0, 5).is_none());
}

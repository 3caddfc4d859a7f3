//! Fixture F-DISC (requirements/subnet-init.md §2.3): directed-route discovery through a chain
//! of real switch agents, bytes moved by hand. Checks responder LocalPortNum, return paths and
//! the hop-by-hop return route for each round.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::attr::NodeInfo;
use ibmad::zerocopy::FromBytes;
use ibmad::{Method, NodeType, SmpAttrId};

const SM: usize = 0;
const C: usize = 1;
const A: usize = 2;
const D: usize = 3;
const H10: usize = 4;
const E: usize = 5;
const B: usize = 6;
const H13: usize = 7;

fn fabric() -> Fabric {
    let mut f = Fabric::new(vec![
        ca(0x100, 1),
        switch(0xC0, 8),
        switch(0xA0, 8),
        switch(0xD0, 8),
        ca(0x1000, 1),
        switch(0xE0, 8),
        switch(0xB0, 8),
        ca(0x1300, 1),
    ]);
    // The walk's wiring (§2.3) ...
    f.link(SM, 1, C, 2);
    f.link(C, 4, A, 1);
    f.link(A, 2, D, 1);
    f.link(D, 3, H10, 1);
    // ... and the other branches (§2.1 L368; H13 on filler port D.p4 per §2.4).
    f.link(A, 3, E, 1);
    f.link(E, 2, B, 1);
    f.link(B, 2, D, 2);
    f.link(D, 4, H13, 1);
    f
}

/// F-DISC rounds 1–4: DR paths 0,1 / 0,1,4 / 0,1,4,2 / 0,1,4,2,3 reach C, A, D, H10 with
/// LocalPortNum 2, 1, 1, 1 and return paths [2], [2,1], [2,1,1], [2,1,1,1].
#[test]
fn f_disc_rounds_1_to_4() {
    type Round<'a> = (&'a [u8], usize, NodeType, u8, &'a [u8]);
    let rounds: [Round; 4] = [
        (&[1], C, NodeType::SWITCH, 2, &[2]),
        (&[1, 4], A, NodeType::SWITCH, 1, &[2, 1]),
        (&[1, 4, 2], D, NodeType::SWITCH, 1, &[2, 1, 1]),
        (&[1, 4, 2, 3], H10, NodeType::CA, 1, &[2, 1, 1, 1]),
    ];
    for (path, target, ty, local_port, ret) in rounds {
        let mut f = fabric();
        let req = ibmad::Smp::dr_request(
            Method::GET,
            SmpAttrId::NODE_INFO,
            0,
            7,
            &ibmad::DrPath::new(path).unwrap(),
        );
        f.sm_send(SM, req);
        assert_eq!(f.to_sm.len(), 1, "path {path:?}: exactly one response");
        let (node, meta, resp) = &f.to_sm[0];
        assert_eq!(*node, SM);
        assert_eq!(meta.port.0, 1);
        assert_eq!(resp.method(), Method::GET_RESP);
        assert!(resp.direction(), "D bit set on the way back");
        assert_eq!(resp.hop_ptr, 0);
        assert_eq!(usize::from(resp.hop_cnt), path.len());
        assert_eq!(resp.status().0, 0);
        assert_eq!(
            &resp.return_path[1..=path.len()],
            ret,
            "return path for {path:?}"
        );
        let ni = NodeInfo::read_from_prefix(&resp.data).unwrap().0;
        assert_eq!(ni.node_type(), ty);
        assert_eq!(ni.node_guid(), f.nodes[target].node_guid());
        assert_eq!(ni.local_port_num, local_port, "LocalPortNum for {path:?}");
        // Hops: out along the path, back along the return path, ending at SM port 1.
        let n = path.len();
        assert_eq!(f.hops.len(), 2 * n);
        let back: Vec<(usize, u8)> = f.hops[n..].iter().map(|h| (h.0, h.1)).collect();
        let expect_back: Vec<u8> = ret.iter().rev().copied().collect();
        assert_eq!(
            back.iter().map(|b| b.1).collect::<Vec<_>>(),
            expect_back,
            "return egress ports for {path:?}"
        );
        assert_eq!(f.hops.last().unwrap().2, SM);
    }
}

/// The other branches are reachable too (E, B via A.p3; H13 via D.p4), and a probe beyond a
/// CA is dropped by the CA (C14-9:2).
#[test]
fn f_disc_other_branches_and_no_gate_through_ca() {
    for (path, target, ty) in [
        (vec![1u8, 4, 3], E, NodeType::SWITCH),
        (vec![1, 4, 3, 2], B, NodeType::SWITCH),
        (vec![1, 4, 2, 4], H13, NodeType::CA),
    ] {
        let mut f = fabric();
        let req = ibmad::Smp::dr_request(
            Method::GET,
            SmpAttrId::NODE_INFO,
            0,
            9,
            &ibmad::DrPath::new(&path).unwrap(),
        );
        f.sm_send(SM, req);
        assert_eq!(f.to_sm.len(), 1);
        let ni = NodeInfo::read_from_prefix(&f.to_sm[0].2.data).unwrap().0;
        assert_eq!(ni.node_guid(), f.nodes[target].node_guid());
        assert_eq!(ni.node_type(), ty);
    }
    let mut f = fabric();
    let req = ibmad::Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        9,
        &ibmad::DrPath::new(&[1, 4, 2, 3, 1]).unwrap(),
    );
    f.sm_send(SM, req);
    assert!(f.to_sm.is_empty(), "H10 must not act as a gate");
    assert_eq!(f.nodes[H10].stats().discarded, 1);
}

/// A DR probe out of a port whose link is down goes nowhere (dropped at the switch).
#[test]
fn dr_forwarding_drops_on_down_egress_port() {
    let mut f = fabric();
    let req = ibmad::Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        9,
        &ibmad::DrPath::new(&[1, 7]).unwrap(),
    );
    f.sm_send(SM, req);
    assert!(f.to_sm.is_empty());
    assert_eq!(f.nodes[C].stats().discarded, 1);
}

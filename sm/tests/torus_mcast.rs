//! torus-2QoS's multicast master spanning tree (OpenSM `torus_master_stree`): a group that
//! spans every CA, routed on it, adds no credit loop to the unicast routes on the (link, VL)
//! channels they share. The check here is written apart from the verifier: unicast paths
//! between every pair of CAs at their path SL, and every way a multicast packet (SL 0, as
//! IPoIB's broadcast group) can be forwarded through each tree switch, each hop's VL from
//! the engine's SL-to-VL tables.
#![allow(clippy::unwrap_used)]

mod vl_util;

use std::collections::{HashMap, HashSet};

use fabric_sim::topo::gen::SWITCH_GUID_BASE;
use fabric_sim::topo::{PortRef, Topology};
use ibmad::attr::SwitchInfo;
use ibmad::{Lid, NodeType, PortNum};
use sm::mcast::{compute, compute_on, McastGroup, McastMember, Mfts, PortMask};
use sm::routing::torus::TorusConfig;
use sm::routing::{route_chain_with, EngineOptions, OptionFile, Routes};
use sm::{NodeId, Subnet};
use vl_util::topo_subnet;
use zerocopy::FromZeros;

const MLID: Lid = Lid(0xC000);

/// A channel: (switch, output port, VL).
type Ch = (NodeId, u8, u8);

/// `t` with VL0-7 ports and switches that take 1,024 MLIDs, as our agents report.
fn mcast_subnet(t: &Topology) -> Subnet {
    let mut s = topo_subnet(t, 0, 4);
    for id in s.switches().collect::<Vec<_>>() {
        let mut si = SwitchInfo::new_zeroed();
        si.multicast_fdb_cap.set(1024);
        s.nodes[id.idx()].switch_info = Some(si);
    }
    s
}

fn route(s: &Subnet, size: [usize; 3], mesh: bool) -> Routes {
    let opts = EngineOptions {
        qos: true,
        torus_config: Some(OptionFile::from_text(
            "torus-2QoS.conf",
            &TorusConfig::for_grid(size, mesh, SWITCH_GUID_BASE),
        )),
        ..EngineOptions::default()
    };
    route_chain_with(&["torus-2QoS".to_string()], true, s, 0, &opts)
        .unwrap()
        .routes
}

/// Every CA port, receiving.
fn all_cas(s: &Subnet) -> McastGroup {
    McastGroup {
        mlid: MLID,
        members: s
            .end_ports()
            .filter(|&(n, _)| s.node(n).node_type == NodeType::CA)
            .map(|(n, p)| McastMember {
                port_guid: s.port(n, p).unwrap().guid,
                receives: true,
            })
            .collect(),
    }
}

fn ports(m: &PortMask) -> Vec<u8> {
    (0..=255u8)
        .filter(|&p| m[usize::from(p / 64)] >> (p % 64) & 1 == 1)
        .collect()
}

/// The switch and port at the far end of (`n`, `p`), if it is a switch.
fn far_switch(s: &Subnet, n: NodeId, p: u8) -> Option<(NodeId, u8)> {
    let (rn, rp) = s.port(n, PortNum(p))?.remote?;
    s.node(rn).is_switch().then_some((rn, rp.0))
}

/// The channel dependencies of unicast between every pair of CAs and of the group `mlid` as
/// `mfts` forwards it (SL 0).
fn deps(s: &Subnet, r: &Routes, mfts: &Mfts) -> HashMap<Ch, HashSet<Ch>> {
    let sl2vl = r.sl2vl.as_ref().unwrap();
    let vl = |n: NodeId, i: u8, o: u8, sl: u8| sl2vl.vl(n, PortNum(i), PortNum(o), sl).unwrap();
    let mut d: HashMap<Ch, HashSet<Ch>> = HashMap::new();
    let cas: Vec<(NodeId, PortNum, Lid)> = s
        .end_ports()
        .filter(|&(n, _)| s.node(n).node_type == NodeType::CA)
        .map(|(n, p)| (n, p, s.port(n, p).unwrap().lid))
        .collect();
    for &(n, p, slid) in &cas {
        for &(_, _, dlid) in &cas {
            if slid == dlid {
                continue;
            }
            let sl = r.sl(slid, dlid);
            let (mut sw, mut ip) = s.port(n, p).unwrap().remote.unwrap();
            let mut prev: Option<Ch> = None;
            for _ in 0..64 {
                let op = r.lfts.get(sw, dlid).unwrap().0;
                let ch = (sw, op, vl(sw, ip.0, op, sl));
                if let Some(x) = prev {
                    d.entry(x).or_default().insert(ch);
                }
                prev = Some(ch);
                match far_switch(s, sw, op) {
                    Some((nsw, np)) => (sw, ip) = (nsw, PortNum(np)),
                    None => break,
                }
            }
        }
    }
    for u in s.switches() {
        let Some(mu) = mfts.mask(u, MLID) else {
            continue;
        };
        let mu = ports(mu);
        for &pu in &mu {
            let Some((v, a)) = far_switch(s, u, pu) else {
                continue;
            };
            let Some(mv) = mfts.mask(v, MLID) else {
                continue;
            };
            for &x in mu.iter().filter(|&&x| x != pu) {
                let from = (u, pu, vl(u, x, pu, 0));
                for &b in ports(mv).iter().filter(|&&b| b != a) {
                    d.entry(from).or_default().insert((v, b, vl(v, a, b, 0)));
                }
            }
        }
    }
    d
}

fn has_cycle(d: &HashMap<Ch, HashSet<Ch>>) -> bool {
    let mut state: HashMap<Ch, u8> = HashMap::new();
    for &s in d.keys() {
        if state.contains_key(&s) {
            continue;
        }
        let mut stack = vec![(s, d[&s].iter().copied().collect::<Vec<_>>())];
        state.insert(s, 1);
        while let Some((v, next)) = stack.last_mut() {
            match next.pop() {
                Some(w) => match state.get(&w) {
                    Some(1) => return true,
                    Some(_) => {}
                    None => {
                        state.insert(w, 1);
                        let succ = d
                            .get(&w)
                            .map(|x| x.iter().copied().collect())
                            .unwrap_or_default();
                        stack.push((w, succ));
                    }
                },
                None => {
                    state.insert(*v, 2);
                    stack.pop();
                }
            }
        }
    }
    false
}

/// Tori in 2 and 3 dimensions, each whole, with a link cut and with a switch lost, and a
/// whole mesh: (what, topology, grid size, mesh).
fn fabrics() -> Vec<(String, Topology, [usize; 3], bool)> {
    let mut v = Vec::new();
    for spec in [
        "torus:4,4,4",
        "torus:5,4,3",
        "torus:6,6",
        "torus:8,8,2",
        "mesh:4,4,3",
    ] {
        let mesh = spec.starts_with("mesh");
        let t = Topology::generate(spec).unwrap();
        let g = fabric_sim::topo::gen::Grid::of_spec(spec).unwrap().unwrap();
        let size = g.size.map(|d| d as usize);
        let name = |x: usize, y: usize| match size[2] {
            1 => format!("sw-{x}-{y}"),
            _ => format!("sw-{x}-{y}-0"),
        };
        v.push((spec.to_string(), t.clone(), size, mesh));
        if mesh {
            continue; // a failure splits a mesh line: torus-2QoS refuses it, as OpenSM's
        }
        let mut cut = t.clone();
        let node = cut.node_by_name(&name(1, 1)).unwrap();
        cut.disconnect(PortRef {
            node,
            port: PortNum(1),
        })
        .unwrap();
        v.push((
            format!("{spec}, link {}[1] cut", name(1, 1)),
            cut,
            size,
            mesh,
        ));
        v.push((
            format!("{spec}, switch {} lost", name(2, 1)),
            t.without_switch(&name(2, 1)).unwrap(),
            size,
            mesh,
        ));
    }
    v
}

#[test]
fn multicast_on_the_master_tree_adds_no_credit_loop() {
    for (what, t, size, mesh) in fabrics() {
        let s = mcast_subnet(&t);
        let r = route(&s, size, mesh);
        let tree = r
            .mcast_tree
            .as_ref()
            .expect("torus-2QoS gives a master tree");
        // It spans every switch, and the all-CA group reaches every switch.
        for sw in s.switches() {
            assert!(tree.reaches_root(sw), "{what}: switch {sw:?} off the tree");
        }
        let g = all_cas(&s);
        let mfts = compute_on(&s, std::slice::from_ref(&g), Some(tree));
        assert_eq!((mfts.routed, mfts.off_master_tree), (1, 0), "{what}");
        for sw in s.switches() {
            assert!(
                mfts.mask(sw, MLID).is_some(),
                "{what}: {sw:?} not on the group's tree"
            );
        }
        assert!(
            !has_cycle(&deps(&s, &r, &mfts)),
            "{what}: multicast on the master tree closes a credit loop"
        );
    }
}

/// Why the master tree: a group's own min-hop tree crosses datelines on VL 0, and on some of
/// these fabrics that closes a credit loop with unicast.
#[test]
fn a_groups_own_tree_can_close_a_credit_loop() {
    let mut cyclic = Vec::new();
    for (what, t, size, mesh) in fabrics() {
        let s = mcast_subnet(&t);
        let r = route(&s, size, mesh);
        let mfts = compute(&s, &[all_cas(&s)]);
        if has_cycle(&deps(&s, &r, &mfts)) {
            cyclic.push(what);
        }
    }
    // Found so: every fabric here but torus:4,4,4 whole and with a link cut, and the mesh.
    for want in ["torus:5,4,3", "torus:6,6", "torus:8,8,2"] {
        assert!(
            cyclic.iter().any(|c| c == want),
            "{want} not among {cyclic:?}"
        );
    }
}

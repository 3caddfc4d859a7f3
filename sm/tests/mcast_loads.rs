//! The channel loads sssp, dfsssp and nue hand to multicast ([`sm::routing::Routes::mcast_loads`],
//! OpenSM's link weights that `dfsssp_do_mcast_routing` and `nue_do_mcast_routing` grow their
//! trees over) are the unicast routes their LFTs carry: recomputed here from the tables alone,
//! every destination LID's route from every switch adding the LIDs behind that switch to each
//! channel it takes; the base is `D²`, `D` every end port's LIDs (switches' included).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod vl_util;

use std::collections::HashMap;

use ibmad::{Lid, NodeType, PortNum};
use sm::routing::{route_chain_with, EngineOptions};
use sm::{NodeId, Subnet};
use vl_util::subnet;

/// Per (switch, port): the LIDs routed over the channel leaving there, from the LFTs, toward
/// the destination LIDs `dests` (each with its switch).
fn loads_from_lfts(
    s: &Subnet,
    lfts: &sm::routing::Lfts,
    behind: &HashMap<NodeId, u64>,
    dests: &[(Lid, NodeId)],
) -> HashMap<(NodeId, PortNum), u64> {
    let mut out: HashMap<(NodeId, PortNum), u64> = HashMap::new();
    for &(d, t) in dests {
        for (&v, &w) in behind {
            let mut x = v;
            let mut hops = 0;
            while x != t {
                let p = lfts.get(x, d).unwrap();
                *out.entry((x, p)).or_default() += w;
                x = s.port(x, p).unwrap().remote.unwrap().0;
                hops += 1;
                assert!(hops < 64, "LID {d:?} loops from {v:?}");
            }
        }
    }
    out
}

fn check(spec: &str, engine: &str, lmc: u8) {
    let s = subnet(spec, lmc, 4);
    let opts = EngineOptions {
        qos: true,
        ..EngineOptions::default()
    };
    let out = route_chain_with(&[engine.to_string()], true, &s, 0, &opts).unwrap();
    assert_eq!(out.engine, engine, "{spec}: {:?}", out.log);
    let loads = out
        .routes
        .mcast_loads
        .as_ref()
        .expect("the engine gives loads");
    // LIDs behind every switch (its own and its CAs'), and the destination LIDs.
    let mut behind: HashMap<NodeId, u64> = HashMap::new();
    let mut dests: Vec<(Lid, NodeId, bool)> = Vec::new();
    for (id, p) in s.end_ports() {
        let port = s.port(id, p).unwrap();
        let sw = if s.node(id).is_switch() {
            id
        } else {
            match port.remote {
                Some((r, _)) if s.node(r).is_switch() => r,
                _ => continue,
            }
        };
        let ca = s.node(id).node_type == NodeType::CA;
        for l in port.lids() {
            *behind.entry(sw).or_default() += 1;
            dests.push((Lid(l), sw, ca));
        }
    }
    for sw in s.switches() {
        behind.entry(sw).or_default();
    }
    let d = dests.len() as u64;
    assert_eq!(loads.base, d * d, "{spec} {engine}: D² for {d} LIDs");
    // nue balances over its destinations only: the CAs' LIDs (nue_include_switches off).
    let routed: Vec<(Lid, NodeId)> = dests
        .iter()
        .filter(|x| engine != "nue" || x.2)
        .map(|x| (x.0, x.1))
        .collect();
    let want = loads_from_lfts(&s, &out.routes.lfts, &behind, &routed);
    let mut channels = 0;
    let mut loaded = 0;
    for sw in s.switches() {
        for p in 1..=s.node(sw).num_ports {
            let p = PortNum(p);
            let to_switch = s
                .port(sw, p)
                .and_then(|x| x.remote)
                .is_some_and(|(r, _)| s.node(r).is_switch() && r != sw);
            if !to_switch || !sm::routing::graph::link_usable(&s, sw, p) {
                continue;
            }
            channels += 1;
            let w = want.get(&(sw, p)).copied().unwrap_or(0);
            loaded += usize::from(w > 0);
            assert_eq!(
                loads.load(sw, p),
                w,
                "{spec} {engine}: switch {:#x} port {}",
                s.node(sw).guid.0,
                p.0
            );
        }
    }
    assert!(
        channels > 0 && loaded * 2 > channels,
        "{spec} {engine}: {loaded} of {channels} channels loaded"
    );
}

#[test]
fn sssp_and_dfsssp_hand_multicast_the_loads_of_their_tables() {
    for spec in ["fat-tree:2,8", "torus:4,4", "random:12,24,10,5,ports=8"] {
        check(spec, "sssp", 0);
        check(spec, "dfsssp", 0);
    }
    check("torus:3,4", "dfsssp", 1);
}

#[test]
fn nue_hands_multicast_the_loads_of_its_tables() {
    for spec in ["fat-tree:2,8", "torus:4,4", "random:12,24,10,5,ports=8"] {
        check(spec, "nue", 0);
    }
    check("torus:3,4", "nue", 1);
}

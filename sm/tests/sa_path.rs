//! PathRecord answers against an independent oracle: OpenSM's hop-by-hop walk
//! (`pr_rcv_get_path_parms`) written out plainly here, on fat trees and random fabrics routed by
//! real engines, with random MTUs, widths and speeds per port. Every ordered pair of end ports
//! (and every LID of an LMC range) must get the MTU, rate and reversibility the walk gives.
#![allow(clippy::unwrap_used)]

use ibmad::attr::PortInfo;
use ibmad::sa_rec::path::{comp, port_rate, rate_order, PathRecordRepr, CAP_HAS_EXT_SPEEDS};
use ibmad::{Lid, NodeType, PortNum};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::{engine_by_name, EngineOptions, Lfts};
use sm::sa::path::{answer, PathCtx, PathIndex, PathRequest};
use sm::{NodeId, Subnet};

mod fixtures;
use fixtures::{add, connect, fat_tree, node};

/// Random MTUCap 1..=5, width 1x/4x/12x and speed SDR/DDR/QDR on every port with PortInfo.
fn randomize(s: &mut Subnet, seed: u64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for p in &mut s.ports {
        if let Some(pi) = p.info.as_mut() {
            pi.set_mtu_cap(rng.gen_range(1..=5));
            pi.link_width_active = [1u8, 2, 8][rng.gen_range(0..3)];
            pi.set_link_speed_active([1u8, 2, 4][rng.gen_range(0..3)]);
        }
    }
}

fn route(s: &mut Subnet, engine: &str, lmc: u8) -> Lfts {
    assign_lids(
        s,
        &LidConfig {
            lmc,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &Guid2Lid::new(),
    )
    .unwrap();
    let e = engine_by_name(engine, &EngineOptions::default()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    e.route(s, &mut rng).unwrap().lfts
}

/// A port's PortInfo (zeroed for a port without one, as OpenSM's physp holds).
fn info(s: &Subnet, n: NodeId, p: u8) -> PortInfo {
    s.port(n, PortNum(p))
        .and_then(|x| x.info)
        .unwrap_or_else(ibmad::zerocopy::FromZeros::new_zeroed)
}

/// OpenSM's rate of a port: extended speeds of the port, or for a switch of its port 0.
fn rate_rank(s: &Subnet, n: NodeId, p: u8) -> u8 {
    let owner = if s.node(n).is_switch() { 0 } else { p };
    let ext = info(s, n, owner).capability_mask.get() & CAP_HAS_EXT_SPEEDS != 0;
    rate_order(port_rate(&info(s, n, p), ext)).unwrap()
}

/// The walk of `osm_sa_path_record.c: pr_rcv_get_path_parms`, MTU and rate rank only.
fn walk(
    s: &Subnet,
    lfts: &Lfts,
    src: (NodeId, u8),
    dst: (NodeId, u8),
    dlid: Lid,
) -> Option<(u8, u8)> {
    let mut mtu = info(s, src.0, src.1).mtu_cap();
    let mut rate = rate_rank(s, src.0, src.1);
    let mut at = src;
    if s.node(src.0).is_switch() {
        at = (src.0, lfts.get(src.0, dlid)?.0);
    }
    let mut dest = dst;
    if s.node(dst.0).is_switch() {
        dest = (dst.0, lfts.get(dst.0, dlid)?.0);
    }
    let mut hops = 0;
    while at != dest {
        let (n, p) = s.port(at.0, PortNum(at.1))?.remote?;
        at = (n, p.0);
        if at == dest {
            break;
        }
        if !s.node(n).is_switch() {
            return None;
        }
        mtu = mtu.min(info(s, n, p.0).mtu_cap());
        rate = rate.min(rate_rank(s, n, p.0));
        let e = lfts.get(n, dlid)?;
        at = (n, e.0);
        mtu = mtu.min(info(s, n, e.0).mtu_cap());
        rate = rate.min(rate_rank(s, n, e.0));
        hops += 1;
        if hops > 64 {
            return None;
        }
    }
    mtu = mtu.min(info(s, at.0, at.1).mtu_cap());
    rate = rate.min(rate_rank(s, at.0, at.1));
    Some((mtu, rate))
}

fn ends(s: &Subnet) -> Vec<(NodeId, u8, u16, u8)> {
    s.end_ports()
        .map(|(n, p)| {
            let port = s.port(n, p).unwrap();
            (n, p.0, port.lid.0, port.lmc)
        })
        .collect()
}

/// Checks every (source LID, destination LID) pair of `s` against the walk; returns the
/// number of pairs with a path.
fn check_all(s: &Subnet, lfts: &Lfts) -> usize {
    let ix = PathIndex::build(s, lfts, None);
    let ctx = PathCtx::new(&ix, s, lfts);
    let e = ends(s);
    let requester = Lid(e[0].2);
    let mut with_path = 0;
    for &(sn, sp, sbase, slmc) in &e {
        for &(dn, dp, dbase, dlmc) in &e {
            for sl in sbase..sbase + (1 << slmc) {
                for dl in dbase..dbase + (1 << dlmc) {
                    let rec = PathRecordRepr {
                        slid: Lid(sl),
                        dlid: Lid(dl),
                        ..PathRecordRepr::default()
                    };
                    let req = PathRequest {
                        get: true,
                        comp_mask: comp::SLID | comp::DLID,
                        record: rec,
                        requester,
                    };
                    let got = answer(&ctx, &req).unwrap();
                    let want = walk(s, lfts, (sn, sp), (dn, dp), Lid(dl));
                    let back = walk(s, lfts, (dn, dp), (sn, sp), Lid(sl));
                    match want {
                        None => assert!(got.is_empty(), "{sl} -> {dl}: no path expected"),
                        Some((mtu, rank)) => {
                            assert_eq!(got.len(), 64, "{sl} -> {dl}: one record expected");
                            let r = PathRecordRepr::parse(&got).unwrap();
                            assert_eq!(r.mtu, mtu, "{sl} -> {dl} MTU");
                            assert_eq!(rate_order(r.rate), Some(rank), "{sl} -> {dl} rate");
                            assert_eq!(r.reversible, back.is_some(), "{sl} -> {dl} reversible");
                            with_path += 1;
                        }
                    }
                }
            }
        }
    }
    with_path
}

#[test]
fn fat_tree_all_pairs_match_the_walk() {
    for (engine, lmc) in [("minhop", 0), ("ftree", 0), ("updn", 1)] {
        let mut s = fat_tree(4);
        randomize(&mut s, 7);
        let lfts = route(&mut s, engine, lmc);
        let e = ends(&s).len();
        let n = check_all(&s, &lfts);
        let lids = e * (1 << lmc);
        // Min-hop routes every LID from every LID (ftree does not route switch to switch, and
        // up/down leaves some LMC LIDs unrouted; the pairs they route are checked all the same).
        if engine == "minhop" {
            assert_eq!(n, lids * lids, "{engine}: every pair routed");
        } else {
            assert!(n > 0);
        }
    }
}

#[test]
fn world_query_counts_every_ordered_pair() {
    let mut s = fat_tree(4);
    let lfts = route(&mut s, "minhop", 0);
    let ix = PathIndex::build(&s, &lfts, None);
    let ctx = PathCtx::new(&ix, &s, &lfts);
    let e = ends(&s);
    let req = PathRequest {
        get: false,
        comp_mask: 0,
        record: PathRecordRepr::default(),
        requester: Lid(e[0].2),
    };
    let got = answer(&ctx, &req).unwrap();
    assert_eq!(got.len() / 64, e.len() * e.len());
    assert_eq!(ix.end_ports(), e.len());
}

fn random_fabric(seed: u64, switches: usize, cas: usize) -> Subnet {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut s = Subnet::new();
    let sw: Vec<NodeId> = (0..switches)
        .map(|i| add(&mut s, node(0x1000 + i as u64, NodeType::SWITCH, 8, "sw")))
        .collect();
    s.nodes[sw[0].idx()].dr_path = ibmad::DrPath::local();
    let mut free: Vec<Vec<u8>> = (0..switches).map(|_| (1..=8).collect()).collect();
    // A spanning chain, then random extra links.
    for i in 1..switches {
        let j = rng.gen_range(0..i);
        if let (Some(a), Some(b)) = (free[i].pop(), free[j].pop()) {
            connect(&mut s, (sw[i], a), (sw[j], b));
        }
    }
    for _ in 0..switches {
        let (i, j) = (rng.gen_range(0..switches), rng.gen_range(0..switches));
        if i != j {
            if let (Some(a), Some(b)) = (free[i].pop(), free[j].pop()) {
                connect(&mut s, (sw[i], a), (sw[j], b));
            }
        }
    }
    for c in 0..cas {
        let i = rng.gen_range(0..switches);
        if let Some(p) = free[i].pop() {
            let ca = add(
                &mut s,
                node(0x10_0000 + 0x10 * c as u64, NodeType::CA, 1, "ca"),
            );
            connect(&mut s, (sw[i], p), (ca, 1));
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn random_fabrics_match_the_walk(seed in any::<u64>(), switches in 1usize..7, cas in 0usize..10) {
        let mut s = random_fabric(seed, switches, cas);
        randomize(&mut s, seed ^ 0x55);
        let lfts = route(&mut s, "minhop", 0);
        check_all(&s, &lfts);
    }

    /// LFTs scrambled at random (loops, dead ends, ports that lead nowhere): the table still
    /// agrees with the walk, and never answers a path the walk cannot follow.
    #[test]
    fn scrambled_lfts_match_the_walk(seed in any::<u64>(), switches in 2usize..6, cas in 1usize..8) {
        let mut s = random_fabric(seed, switches, cas);
        randomize(&mut s, seed);
        let mut lfts = route(&mut s, "minhop", 0);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let sws: Vec<NodeId> = lfts.switches().to_vec();
        for _ in 0..(switches * 4) {
            let sw = sws[rng.gen_range(0..sws.len())];
            let lid = Lid(rng.gen_range(1..=lfts.top().0.max(1)));
            let p = rng.gen_range(0..=9u8);
            lfts.set(sw, lid, if p == 9 { None } else { Some(PortNum(p)) });
        }
        check_all(&s, &lfts);
    }
}

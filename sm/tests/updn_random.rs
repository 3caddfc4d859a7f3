//! Property tests over random irregular fabrics: updn and dnup are always free of credit loops
//! and forwarding loops, and route a CA pair exactly when a legal up*down* (dnup: down*up*)
//! switch path exists under the engine's own ranking — checked against an independent search.
#![allow(clippy::unwrap_used)]

mod updn_util;

use ibmad::{NodeType, PortNum};
use proptest::prelude::*;
use sm::routing::graph::SwitchGraph;
use sm::routing::updn::{Mode, UpDn, UNRANKED};
use sm::routing::{EngineOptions, Lfts, OptionFile, RoutingEngine};
use sm::verify::verify;
use sm::{NodeId, Subnet};

mod fixtures;
use fixtures::{add, connect, node};

/// `n` switches (8 ports) joined by a random spanning tree plus `extra` random links, CAs on
/// the switches listed in `cas`.
fn fabric(n: usize, parents: &[usize], extra: &[(usize, usize)], cas: &[usize]) -> Subnet {
    let mut s = Subnet::new();
    let sws: Vec<NodeId> = (0..n)
        .map(|i| {
            add(
                &mut s,
                node(
                    0x100 + i as u64 * 7 % 31 + i as u64 * 64,
                    NodeType::SWITCH,
                    8,
                    &format!("s{i}"),
                ),
            )
        })
        .collect();
    s.nodes[sws[0].idx()].dr_path = ibmad::DrPath::local();
    let mut next = vec![1u8; n];
    let mut link = |s: &mut Subnet, a: usize, b: usize| {
        if a == b || next[a] > 8 || next[b] > 8 {
            return;
        }
        connect(s, (sws[a], next[a]), (sws[b], next[b]));
        next[a] += 1;
        next[b] += 1;
    };
    for i in 1..n {
        link(&mut s, i, parents[i - 1] % i);
    }
    for &(a, b) in extra {
        link(&mut s, a % n, b % n);
    }
    for (k, &c) in cas.iter().enumerate() {
        let c = c % n;
        if next[c] > 8 {
            continue;
        }
        let h = add(
            &mut s,
            node(0x10_0000 + k as u64 * 16, NodeType::CA, 1, &format!("h{k}")),
        );
        connect(&mut s, (sws[c], next[c]), (h, 1));
        next[c] += 1;
    }
    updn_util::lids(&mut s);
    s
}

/// Independent oracle: is there a switch path a→b whose moves are first-phase* then
/// second-phase* (updn: up* down*)?
fn legal(s: &Subnet, rank: &[u32], up_first: bool, a: NodeId, b: NodeId) -> bool {
    if rank[a.idx()] == UNRANKED || rank[b.idx()] == UNRANKED {
        return a == b;
    }
    let key = |n: NodeId| (rank[n.idx()], s.node(n).guid.0);
    let first = |x: NodeId, y: NodeId| (key(y) < key(x)) == up_first;
    // States: (switch, in second phase).
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(a, false)];
    while let Some((u, ph)) = stack.pop() {
        if u == b {
            return true;
        }
        if !seen.insert((u, ph)) {
            continue;
        }
        for p in 1..=s.node(u).num_ports {
            let Some((v, _)) = s.port(u, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            if !s.node(v).is_switch() || rank[v.idx()] == UNRANKED {
                continue;
            }
            if first(u, v) {
                if !ph {
                    stack.push((v, false));
                }
            } else {
                stack.push((v, true));
            }
        }
    }
    false
}

fn cas(s: &Subnet) -> Vec<(NodeId, NodeId)> {
    s.end_ports()
        .filter(|&(n, _)| !s.node(n).is_switch())
        .map(|(n, p)| (n, s.port(n, p).unwrap().remote.unwrap().0))
        .collect()
}

fn arrives(s: &Subnet, l: &Lfts, from_sw: NodeId, to: NodeId) -> bool {
    let lid = s.lid_of(to, PortNum(1));
    let mut cur = from_sw;
    for _ in 0..64 {
        let Some(p) = l.get(cur, lid) else {
            return false;
        };
        let Some((rn, _)) = s.port(cur, p).and_then(|x| x.remote) else {
            return false;
        };
        if rn == to {
            return true;
        }
        if !s.node(rn).is_switch() {
            return false;
        }
        cur = rn;
    }
    false
}

fn check(s: &Subnet, mode: Mode, opts: EngineOptions) -> Result<(), TestCaseError> {
    let e = UpDn::new(opts, mode);
    let mut log = Vec::new();
    let hm = SwitchGraph::build(s);
    let Some(ranking) = e.rank(s, &hm, &mut log) else {
        return Ok(()); // no root: the engine fails (tested elsewhere)
    };
    let mut rng = rand::rngs::mock::StepRng::new(0, 0);
    let l = e.route(s, &mut rng).unwrap().lfts;
    let r = verify(s, &l);
    prop_assert!(r.credit_loop.is_none(), "{}", r.summary(s));
    prop_assert_eq!(r.reach.loops, 0);
    let up_first = mode == Mode::UpDown;
    for &(a, asw) in &cas(s) {
        for &(b, bsw) in &cas(s) {
            if a == b {
                continue;
            }
            let want = legal(s, &ranking.rank, up_first, asw, bsw);
            prop_assert_eq!(
                arrives(s, &l, asw, b),
                want,
                "{:?} -> {:?} legal={}",
                s.node(a).desc,
                s.node(b).desc,
                want
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn updn_auto_roots_deadlock_free_and_total(
        n in 2usize..14,
        parents in proptest::collection::vec(0usize..100, 13),
        extra in proptest::collection::vec((0usize..14, 0usize..14), 0..12),
        cas in proptest::collection::vec(0usize..14, 2..12),
    ) {
        let s = fabric(n, &parents, &extra, &cas);
        check(&s, Mode::UpDown, EngineOptions::default())?;
        // Connected fabric + auto roots: every pair has a legal path, so all are routed.
        let mut rng = rand::rngs::mock::StepRng::new(0, 0);
        let l = UpDn::new(EngineOptions::default(), Mode::UpDown).route(&s, &mut rng).unwrap().lfts;
        prop_assert_eq!(verify(&s, &l).reach.unreachable_count, 0);
    }

    #[test]
    fn updn_random_root_sets_route_exactly_the_legal_pairs(
        n in 2usize..14,
        parents in proptest::collection::vec(0usize..100, 13),
        extra in proptest::collection::vec((0usize..14, 0usize..14), 0..12),
        cas in proptest::collection::vec(0usize..14, 2..12),
        roots in proptest::collection::btree_set(0usize..14, 1..4),
    ) {
        let s = fabric(n, &parents, &extra, &cas);
        let sws: Vec<NodeId> = s.switches().collect();
        let text: String = roots
            .iter()
            .map(|&r| format!("0x{:x}\n", s.node(sws[r % sws.len()]).guid.0))
            .collect();
        let opts = EngineOptions {
            root_guid_file: Some(OptionFile::from_text("r", &text)),
            ..EngineOptions::default()
        };
        check(&s, Mode::UpDown, opts)?;
    }

    #[test]
    fn dnup_deadlock_free_and_routes_exactly_the_legal_pairs(
        n in 2usize..14,
        parents in proptest::collection::vec(0usize..100, 13),
        extra in proptest::collection::vec((0usize..14, 0usize..14), 0..12),
        cas in proptest::collection::vec(0usize..14, 2..12),
    ) {
        let s = fabric(n, &parents, &extra, &cas);
        check(&s, Mode::DownUp, EngineOptions::default())?;
    }
}

#[test]
fn generated_irregular_fabrics_are_deadlock_free_under_updn() {
    for spec in [
        "random:24,40,20,1,ports=12",
        "random:40,60,50,2,ports=16",
        "torus:4,4",
        "torus:3,3,3",
        "mesh:4,3",
        "dragonfly:4,2,2,2",
    ] {
        let s = updn_util::subnet(spec);
        let mut rng = rand::rngs::mock::StepRng::new(0, 0);
        let l = UpDn::new(EngineOptions::default(), Mode::UpDown)
            .route(&s, &mut rng)
            .unwrap()
            .lfts;
        let r = verify(&s, &l);
        assert!(r.is_ok(), "{spec}: {}", r.summary(&s));
        check(&s, Mode::UpDown, EngineOptions::default()).unwrap();
    }
}

//! Incremental heavy sweeps and `use_ucast_cache` (issue 12; monitoring requirements §5,
//! checklist items 45, 50, 52–58), on the simulator with the real SMA on every node.
//!
//! A k8 three-level fat tree (`fat-tree:3,8`: 80 switches, 128 CAs) is brought up cold; then
//! one change is made (a link or a node goes down, or comes back), and the SMPs the SM sends
//! until the subnet is up again are counted by (method, attribute) at the SM's port. A local
//! change must cost at most 5 % of the cold bring-up's SMPs, change the switches' tables only
//! where it must (with the cache, nowhere), keep every LID, and leave every present CA
//! reaching every other present CA through the tables the switches hold (checked with the
//! SM's verifier, [`sm::check::check_all_pairs`], over tables read back from the agents).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::time::Duration;

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, Topology};
use ibmad::zerocopy::FromBytes;
use ibmad::{Direction, Lid, MadMeta, Method, NodeType, PortNum, Smp, SmpAttrId, Tap};
use sm::drive::Agents;
use sm::{Event, Level, Sm, SmConfig};

/// (switch, LID) → port (0xFF: none), as the agents hold their tables.
type LftMap = HashMap<(NodeId, u16), u8>;

struct Bed {
    f: Fabric,
    h: SmHandle,
    sm: Sm,
    /// SMPs sent by the SM, by (method, attribute), since the last [`Bed::reset`].
    sent: HashMap<(u8, u16), u64>,
    events: Vec<Event>,
}

fn cfg(cache: bool) -> SmConfig {
    SmConfig {
        port: PortNum(1),
        // No periodic light sweep: what is counted is what the change costs. The traps the
        // switches send start the sweeps.
        sweep_interval: Duration::ZERO,
        use_ucast_cache: cache,
        ..SmConfig::default()
    }
}

impl Bed {
    fn new(topo: &Topology, at: NodeId, cfg: SmConfig) -> Bed {
        let mut f = Fabric::new(topo, SimConfig::default()).unwrap();
        let h = f.attach_sm(at, PortNum(1)).unwrap().handle;
        Bed {
            f,
            h,
            sm: Sm::new(cfg).unwrap(),
            sent: HashMap::new(),
            events: Vec::new(),
        }
    }

    /// A k8 three-level fat tree, brought up cold; returns the bed and the cold SMP count.
    fn k8(cache: bool) -> (Bed, u64) {
        let topo = Topology::generate("fat-tree:3,8").unwrap();
        let at = topo.nodes_of_type(NodeType::CA).next().unwrap();
        let mut bed = Bed::new(&topo, at, cfg(cache));
        bed.run_for(Duration::from_secs(10));
        assert!(bed.sm.is_up());
        let cold = bed.smps();
        assert!(cold > 5_000, "cold bring-up: {cold} SMPs");
        bed.reset();
        (bed, cold)
    }

    fn run_for(&mut self, d: Duration) {
        let until = self.f.now() + d;
        let (sent, events) = (&mut self.sent, &mut self.events);
        let mut port = self.f.sm_port(self.h);
        let mut tap = Tap::new(&mut port, |dir, _: &MadMeta, mad: &[u8]| {
            if let (Direction::Send, Ok(smp)) = (dir, Smp::ref_from_bytes(mad)) {
                *sent.entry((smp.method, smp.attr().0)).or_default() += 1;
            }
            true
        });
        let _ = sm::drive::drive_agents(&mut Agents::sm(&mut self.sm), &mut tap, until, |_, e| {
            events.push(e);
            ControlFlow::Continue(())
        })
        .unwrap();
        self.f.run_until(until);
    }

    /// The figures of every heavy sweep done since the last [`Bed::reset`].
    fn heavy_sweeps(&self) -> Vec<sm::PhaseStats> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::HeavySweepDone { stats, .. } => Some(*stats),
                _ => None,
            })
            .collect()
    }

    fn reset(&mut self) {
        self.sent.clear();
        self.events.clear();
    }

    fn smps(&self) -> u64 {
        self.sent.values().sum()
    }

    fn sent(&self, method: Method, attr: SmpAttrId) -> u64 {
        self.sent.get(&(method.0, attr.0)).copied().unwrap_or(0)
    }

    fn lft_sets(&self) -> u64 {
        self.sent(Method::SET, SmpAttrId::LINEAR_FT)
    }

    fn logged(&self, what: &str) -> bool {
        self.events
            .iter()
            .any(|e| matches!(e, Event::Log { line, .. } if line.contains(what)))
    }

    fn log_lines(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Log { level, line } if *level <= Level::Info => Some(line.clone()),
                _ => None,
            })
            .collect()
    }

    /// Every end port's LID as its agent holds it: (node, port) → LID.
    fn lids(&self) -> HashMap<(NodeId, u8), u16> {
        let mut m = HashMap::new();
        for (id, _) in self.f.topology().nodes() {
            let a = self.f.agent(id).unwrap();
            let ports: Vec<u8> = if a.is_switch() {
                vec![0]
            } else {
                (1..=a.num_ports()).collect()
            };
            for p in ports {
                if let Some(pi) = a.port_info(PortNum(p)) {
                    m.insert((id, p), pi.lid());
                }
            }
        }
        m.into_iter().map(|(k, l)| (k, l.0)).collect()
    }

    fn top(&self) -> u16 {
        self.lids().values().copied().max().unwrap()
    }

    fn lfts(&self) -> LftMap {
        let top = self.top();
        let mut m = HashMap::new();
        for sw in self.f.topology().nodes_of_type(NodeType::SWITCH) {
            let a = self.f.agent(sw).unwrap();
            for lid in 1..=top {
                m.insert((sw, lid), a.lft_port(Lid(lid)).map_or(0xFF, |p| p.0));
            }
        }
        m
    }

    /// Every CA in the SM's model reaches every other through the tables the switches hold
    /// (the verifier over tables read back from the agents).
    fn assert_all_pairs(&self) {
        let s = self.sm.subnet();
        let top = Lid(self.top());
        let mut lfts = sm::routing::Lfts::new(s, top);
        for id in s.switches() {
            let node = self.f.node_by_guid(s.node(id).guid).unwrap();
            let a = self.f.agent(node).unwrap();
            for lid in 1..=top.0 {
                lfts.set(id, Lid(lid), a.lft_port(Lid(lid)));
            }
        }
        let r = sm::check::check_all_pairs(s, &lfts);
        assert!(r.is_ok(), "{r:?}");
        let cas = s.nodes.iter().filter(|n| !n.is_switch()).count();
        assert!(cas > 0);
    }

    /// Switch levels of the fat tree: 0 for a switch with a CA, then by distance.
    fn levels(&self) -> HashMap<NodeId, u32> {
        let t = self.f.topology();
        let mut lv = HashMap::new();
        let mut frontier: Vec<NodeId> = t
            .nodes_of_type(NodeType::SWITCH)
            .filter(|&sw| self.neighbours(sw).iter().any(|&(_, n)| !self.is_switch(n)))
            .collect();
        let mut d = 0;
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for sw in frontier {
                if lv.contains_key(&sw) {
                    continue;
                }
                lv.insert(sw, d);
                for (_, n) in self.neighbours(sw) {
                    if self.is_switch(n) && !lv.contains_key(&n) {
                        next.push(n);
                    }
                }
            }
            frontier = next;
            d += 1;
        }
        lv
    }

    /// The switches of one [`Bed::levels`] level, lowest NodeId first (a fixed choice, where
    /// a HashMap's order changed the figures between runs).
    fn at_level(&self, level: u32) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = self
            .levels()
            .into_iter()
            .filter(|&(_, l)| l == level)
            .map(|(n, _)| n)
            .collect();
        v.sort();
        v
    }

    fn is_switch(&self, n: NodeId) -> bool {
        self.f.agent(n).unwrap().is_switch()
    }

    fn neighbours(&self, n: NodeId) -> Vec<(u8, NodeId)> {
        let np = self.f.agent(n).unwrap().num_ports();
        (1..=np)
            .filter_map(|p| Some((p, self.f.peer(n, PortNum(p))?.node)))
            .collect()
    }

    /// Takes every cabled port of `n` down or up (a node powered off or on).
    fn set_node(&mut self, n: NodeId, up: bool) {
        for (p, _) in self.neighbours(n) {
            self.f.set_link(n, PortNum(p), up).unwrap();
        }
    }

    /// The LIDs `n` holds (switch port 0, CA ports).
    fn lids_of(&self, n: NodeId, lids: &HashMap<(NodeId, u8), u16>) -> HashSet<u16> {
        lids.iter()
            .filter(|(&(m, _), _)| m == n)
            .map(|(_, &l)| l)
            .collect()
    }

    /// The (switch, LID) entries of `lfts` whose route crosses the link `a`–`b`.
    fn routes_over(
        &self,
        lfts: &LftMap,
        a: (NodeId, u8),
        b: (NodeId, u8),
    ) -> HashSet<(NodeId, u16)> {
        let owner: HashMap<u16, NodeId> = self.lids().iter().map(|(&(n, _), &l)| (l, n)).collect();
        let crossed = |sw: NodeId, lid: u16| -> bool {
            let mut at = sw;
            for _ in 0..16 {
                if owner.get(&lid) == Some(&at) {
                    return false;
                }
                let port = lfts[&(at, lid)];
                if port == 0 || port == 0xFF {
                    return false;
                }
                if (at, port) == a || (at, port) == b {
                    return true;
                }
                let Some(next) = self.f.peer(at, PortNum(port)) else {
                    return false;
                };
                if !self.is_switch(next.node) {
                    return false;
                }
                at = next.node;
            }
            false
        };
        lfts.keys()
            .copied()
            .filter(|&(sw, lid)| crossed(sw, lid))
            .collect()
    }

    /// The `i`th CA of the topology.
    fn ca(&self, i: usize) -> NodeId {
        self.f
            .topology()
            .nodes_of_type(NodeType::CA)
            .nth(i)
            .unwrap()
    }

    /// True if the SM's model holds node `n`.
    fn in_model(&self, n: NodeId) -> bool {
        let g = self.f.topology().node(n).unwrap().guid();
        self.sm.subnet().node_by_guid(g).is_some()
    }

    /// Every end port but those of `gone` holds the LID it held in `lids`.
    fn assert_lids_kept(&self, lids: &HashMap<(NodeId, u8), u16>, gone: NodeId) {
        let mut now = self.lids();
        now.retain(|&(n, _), _| n != gone);
        let mut expect = lids.clone();
        expect.retain(|&(n, _), _| n != gone);
        assert_eq!(now, expect, "LIDs unchanged");
    }

    /// Cuts link `n`[`p`] and runs 10 s: the subnet is up again after incremental sweeps in
    /// which no SMP timed out or was resent, the first of them shorter than one transaction
    /// timeout, and every CA reaches every CA.
    fn cut_without_timeout(&mut self, n: NodeId, p: u8) {
        self.reset();
        self.f.set_link(n, PortNum(p), false).unwrap();
        self.run_for(Duration::from_secs(10));
        assert!(self.sm.is_up());
        self.assert_incremental();
        let sweeps = self.heavy_sweeps();
        assert!(!sweeps.is_empty());
        eprintln!(
            "link {n:?}[{p}] down: {} heavy sweep(s), the first in {:?}, {} SMPs",
            sweeps.len(),
            sweeps[0].elapsed,
            self.smps()
        );
        let lost: u64 = sweeps.iter().map(|s| s.timed_out + s.retried).sum();
        assert_eq!(
            lost,
            0,
            "{n:?} port {p}: SMPs timed out or resent: {:#?}",
            self.log_lines()
        );
        let timeout = SmConfig::default().transaction_timeout;
        assert!(
            sweeps[0].elapsed < timeout,
            "the first heavy sweep took {:?} (timeout {timeout:?})",
            sweeps[0].elapsed
        );
        self.assert_all_pairs();
    }

    /// The change was handled by an incremental sweep, not a full discovery.
    fn assert_incremental(&self) {
        assert!(
            self.logged("incremental discovery:")
                && !self.logged("falling back to a full discovery")
                && !self.logged("full discovery:"),
            "{:#?}",
            self.log_lines()
        );
    }
}

/// (switch, LID) entries that differ.
fn changed(before: &LftMap, after: &LftMap) -> Vec<(NodeId, u16)> {
    before
        .iter()
        .filter(|(k, v)| after.get(k).is_some_and(|a| a != *v))
        .map(|(k, _)| *k)
        .collect()
}

/// The switches whose tables differ.
fn switches_changed(before: &LftMap, after: &LftMap) -> HashSet<NodeId> {
    changed(before, after).into_iter().map(|(s, _)| s).collect()
}

fn report(what: &str, bed: &Bed, cold: u64) {
    eprintln!(
        "{what}: {} SMPs ({:.2} % of the cold bring-up's {cold}), {} LFT Sets",
        bed.smps(),
        100.0 * bed.smps() as f64 / cold as f64,
        bed.lft_sets()
    );
}

fn assert_local(bed: &Bed, cold: u64) {
    assert!(
        bed.smps() * 20 <= cold,
        "{} SMPs for a local change, cold bring-up {cold}",
        bed.smps()
    );
}

#[test]
fn spine_link_down_rereads_only_its_two_switches_and_moves_only_the_routes_over_it() {
    let (mut bed, cold) = Bed::k8(false);
    let lids = bed.lids();
    let before = bed.lfts();
    let spine = bed.at_level(2)[0];
    let (p, agg) = bed.neighbours(spine)[0];
    let pa = bed
        .neighbours(agg)
        .into_iter()
        .find(|&(_, n)| n == spine)
        .unwrap()
        .0;
    let used = bed.routes_over(&before, (spine, p), (agg, pa));
    bed.f.set_link(spine, PortNum(p), false).unwrap();
    bed.run_for(Duration::from_secs(10));
    report("spine link down", &bed, cold);
    // The heavy sweeps' own figures count every SMP of the change, the light sweep run
    // first included (all but the TrapRepresses).
    let reported: u64 = bed
        .events
        .iter()
        .filter_map(|e| match e {
            Event::HeavySweepDone { stats, .. } => Some(stats.smps),
            _ => None,
        })
        .sum();
    let repress = bed
        .sent
        .iter()
        .filter(|(&(m, _), _)| m == Method::TRAP_REPRESS.0)
        .map(|(_, &n)| n)
        .sum::<u64>();
    assert_eq!(reported, bed.smps() - repress, "{:?}", bed.sent);
    assert!(bed.sm.is_up());
    bed.assert_incremental();
    assert_local(&bed, cold);
    // Discovery read the two switches of the link, not the fabric.
    assert!(bed.sent(Method::GET, SmpAttrId::NODE_INFO) < 40);
    let after = bed.lfts();
    let moved = changed(&before, &after);
    assert!(!moved.is_empty());
    let stray: Vec<_> = moved.iter().filter(|k| !used.contains(k)).take(8).collect();
    assert!(
        stray.is_empty(),
        "entries that did not use the link moved: {stray:?}"
    );
    assert!(bed.lft_sets() > 0);
    assert_eq!(bed.lids(), lids, "LIDs unchanged");
    bed.assert_all_pairs();
}

#[test]
fn ca_down_changes_only_its_own_entries() {
    let (mut bed, cold) = Bed::k8(false);
    let lids = bed.lids();
    let before = bed.lfts();
    let ca = bed.ca(37);
    let gone = bed.lids_of(ca, &lids);
    bed.f.set_link(ca, PortNum(1), false).unwrap();
    bed.run_for(Duration::from_secs(10));
    report("CA down", &bed, cold);
    assert!(bed.sm.is_up());
    bed.assert_incremental();
    assert_local(&bed, cold);
    let after = bed.lfts();
    let moved = changed(&before, &after);
    assert!(moved.iter().all(|(_, l)| gone.contains(l)), "{moved:?}");
    assert!(
        !moved.is_empty(),
        "without the cache the lost LID's entries go to no path"
    );
    assert!(!bed.in_model(ca));
    bed.assert_lids_kept(&lids, ca);
    bed.assert_all_pairs();
}

#[test]
fn with_the_cache_a_lost_ca_sends_no_lft_set_and_gets_its_lid_back() {
    let (mut bed, cold) = Bed::k8(true);
    let lids = bed.lids();
    let before = bed.lfts();
    let ca = bed.ca(37);
    bed.f.set_link(ca, PortNum(1), false).unwrap();
    bed.run_for(Duration::from_secs(10));
    report("CA down with the cache", &bed, cold);
    assert!(bed.sm.is_up());
    bed.assert_incremental();
    assert!(bed.logged("cached routing"), "{:#?}", bed.log_lines());
    assert_local(&bed, cold);
    assert_eq!(bed.lft_sets(), 0);
    assert!(switches_changed(&before, &bed.lfts()).is_empty());
    bed.assert_all_pairs();
    // It comes back: the same LID, its routes already in place, still no LFT Set.
    bed.reset();
    bed.f.set_link(ca, PortNum(1), true).unwrap();
    bed.run_for(Duration::from_secs(10));
    report("CA back with the cache", &bed, cold);
    assert!(bed.sm.is_up());
    bed.assert_incremental();
    assert_local(&bed, cold);
    assert_eq!(bed.lft_sets(), 0);
    assert!(bed.in_model(ca));
    assert_eq!(bed.lids(), lids, "the same LIDs");
    assert_eq!(bed.lfts(), before);
    bed.assert_all_pairs();
}

#[test]
fn with_the_cache_a_lost_leaf_sends_no_lft_set_and_comes_back_with_its_lids() {
    let (mut bed, cold) = Bed::k8(true);
    let lids = bed.lids();
    let before = bed.lfts();
    // A leaf that is not the SM's own.
    let sm_leaf = bed.f.peer(bed.ca(0), PortNum(1)).unwrap().node;
    let leaf = bed.at_level(0).into_iter().find(|&n| n != sm_leaf).unwrap();
    bed.set_node(leaf, false);
    bed.run_for(Duration::from_secs(10));
    report("leaf switch down with the cache", &bed, cold);
    assert!(bed.sm.is_up());
    assert!(bed.logged("cached routing"), "{:#?}", bed.log_lines());
    assert_local(&bed, cold);
    assert_eq!(bed.lft_sets(), 0);
    assert!(!bed.in_model(leaf), "the leaf is gone from the model");
    bed.assert_all_pairs();
    bed.reset();
    bed.set_node(leaf, true);
    bed.run_for(Duration::from_secs(10));
    report("leaf switch back with the cache", &bed, cold);
    assert!(bed.sm.is_up());
    assert_eq!(bed.lft_sets(), 0, "{:#?}", bed.log_lines());
    assert_eq!(bed.lids(), lids, "the same LIDs");
    // The returning leaf's own table is the one it was programmed with before (its SMA kept
    // it through the link loss), so nothing changed anywhere.
    assert_eq!(bed.lfts(), before);
    bed.assert_all_pairs();
}

#[test]
fn with_the_cache_a_lost_spine_switch_still_recomputes() {
    let (mut bed, cold) = Bed::k8(true);
    let lids = bed.lids();
    let before = bed.lfts();
    let spines = bed.at_level(2);
    let spine = spines[0];
    bed.set_node(spine, false);
    bed.run_for(Duration::from_secs(10));
    report("spine switch down with the cache", &bed, cold);
    assert!(bed.sm.is_up());
    bed.assert_incremental();
    assert!(bed.logged("recomputing routes"), "{:#?}", bed.log_lines());
    // The sweep that handled the loss recomputed; a later sweep (for the traps of switches
    // whose route to the SM crossed the spine, resent once the tables were right) may find
    // nothing new and use the cache.
    let first = bed
        .log_lines()
        .into_iter()
        .find(|l| l.starts_with("use_ucast_cache"))
        .unwrap();
    assert!(first.contains("non-leaf switch is gone"), "{first}");
    assert_local(&bed, cold);
    assert!(bed.lft_sets() > 0, "routes through the spine moved");
    let after = bed.lfts();
    // Only routes that went through the spine moved: no entry points at a port toward it.
    for (&(sw, lid), &port) in &after {
        if port != 0xFF && port != 0 {
            if let Some(peer) = bed.f.peer(sw, PortNum(port)) {
                assert!(
                    peer.node != spine,
                    "switch {sw:?} still routes LID {lid} into the dead spine"
                );
            }
        }
    }
    // The other spines keep their tables, but for the dead spine's own LID.
    let dead = bed.lids_of(spine, &lids);
    for (sw, lid) in changed(&before, &after) {
        assert!(
            !spines.contains(&sw) || dead.contains(&lid),
            "spine {sw:?} LID {lid} moved"
        );
    }
    bed.assert_lids_kept(&lids, spine);
    bed.assert_all_pairs();
}

#[test]
fn a_returning_ca_without_the_cache_gets_its_lid_back() {
    let (mut bed, cold) = Bed::k8(false);
    let lids = bed.lids();
    let ca = bed.ca(90);
    bed.f.set_link(ca, PortNum(1), false).unwrap();
    bed.run_for(Duration::from_secs(10));
    bed.reset();
    bed.f.set_link(ca, PortNum(1), true).unwrap();
    bed.run_for(Duration::from_secs(10));
    report("CA back", &bed, cold);
    assert!(bed.sm.is_up());
    bed.assert_incremental();
    assert_eq!(bed.lids(), lids, "the same LIDs");
    bed.assert_all_pairs();
}

#[test]
fn a_heavy_sweep_with_no_change_sends_no_lft_set() {
    let (mut bed, cold) = Bed::k8(false);
    let before = bed.lfts();
    // A link that flaps between two sweeps: its switches report a change, the walk finds the
    // same fabric.
    let ca = bed.ca(50);
    bed.f.set_link(ca, PortNum(1), false).unwrap();
    bed.f.set_link(ca, PortNum(1), true).unwrap();
    bed.run_for(Duration::from_secs(10));
    report("flap", &bed, cold);
    assert!(bed.sm.is_up());
    assert!(bed.sm.heavy_sweeps() >= 2);
    bed.assert_incremental();
    assert_eq!(bed.lft_sets(), 0);
    assert_eq!(bed.lfts(), before);
    // An operator's heavy sweep discovers everything again and still sets nothing.
    bed.reset();
    let now = bed.f.now();
    bed.sm.handle_command(now, sm::Command::HeavySweep);
    bed.run_for(Duration::from_secs(10));
    assert!(bed.logged("full discovery: operator request"));
    assert_eq!(bed.lft_sets(), 0);
    assert!(bed.sm.is_up());
}

/// Seed 003 §5.4 (monitoring requirements §5.4, checklist item 50): switches A–E, hosts 10,
/// 11, 12, 14. Host 10 → host 11 runs E port 2 → B port 2 → D port 5; the B–E link fails and
/// the route becomes E port 1 → A port 2 → D port 5. Host 12 ↔ host 14 (D → A → C) does not
/// use B–E and is untouched.
#[test]
fn seed_5_4_b_e_link_down_moves_host_11_on_e_and_leaves_12_14_alone() {
    let net = r#"
Hca 1 "h10"
[1] "E"[3]

Switch 4 "E"
[1] "A"[1]
[2] "B"[1]
[3] "h10"[1]

Switch 4 "A"
[1] "E"[1]
[2] "D"[1]
[3] "C"[1]

Switch 4 "B"
[1] "E"[2]
[2] "D"[2]

Switch 6 "D"
[1] "A"[2]
[2] "B"[2]
[4] "h12"[1]
[5] "h11"[1]

Switch 4 "C"
[1] "A"[3]
[2] "h14"[1]

Hca 1 "h11"
[1] "D"[5]

Hca 1 "h12"
[1] "D"[4]

Hca 1 "h14"
[1] "C"[2]
"#;
    let topo = Topology::parse_net(net).unwrap();
    let id = |name: &str| topo.nodes().find(|(_, n)| n.name() == name).unwrap().0;
    let (a, b, c, d, e) = (id("A"), id("B"), id("C"), id("D"), id("E"));
    let mut bed = Bed::new(&topo, id("h10"), cfg(false));
    bed.run_for(Duration::from_secs(5));
    assert!(bed.sm.is_up());
    let lids = bed.lids();
    let lid = |n: &str| lids[&(id(n), 1)];
    let before = bed.lfts();
    let route = |m: &LftMap, sw: NodeId, host: &str| m[&(sw, lid(host))];
    // The example's starting point.
    assert_eq!(
        route(&before, e, "h11"),
        2,
        "host 10 → 11 leaves E by port 2 (to B)"
    );
    assert_eq!(route(&before, b, "h11"), 2);
    assert_eq!(route(&before, d, "h11"), 5);
    assert_eq!(route(&before, d, "h14"), 1, "host 12 → 14: D → A");
    assert_eq!(route(&before, a, "h14"), 3, "A → C");
    assert_eq!(route(&before, c, "h14"), 2);
    assert_eq!(route(&before, c, "h12"), 1, "host 14 → 12: C → A");
    assert_eq!(route(&before, a, "h12"), 2, "A → D");
    assert_eq!(route(&before, d, "h12"), 4);
    let used = bed.routes_over(&before, (e, 2), (b, 1));
    bed.reset();
    bed.f.set_link(b, PortNum(1), false).unwrap();
    bed.run_for(Duration::from_secs(5));
    assert!(bed.sm.is_up());
    bed.assert_incremental();
    let after = bed.lfts();
    assert_eq!(route(&after, e, "h11"), 1, "E port 1 …");
    assert_eq!(route(&after, a, "h11"), 2, "… A port 2 …");
    assert_eq!(route(&after, d, "h11"), 5, "… D port 5");
    // Host 12 ↔ host 14 entries on D, A and C are untouched.
    for (sw, host) in [
        (d, "h14"),
        (a, "h14"),
        (c, "h14"),
        (c, "h12"),
        (a, "h12"),
        (d, "h12"),
    ] {
        assert_eq!(
            route(&after, sw, host),
            route(&before, sw, host),
            "{host} at {sw:?}"
        );
    }
    // Only entries whose route went over B–E moved.
    for k in changed(&before, &after) {
        assert!(used.contains(&k), "{k:?} moved but did not use B–E");
    }
    assert_eq!(bed.lids(), lids);
    bed.assert_all_pairs();
}

/// What the incremental walk cannot explain sends it back to a full discovery, logged: a leaf
/// that changed (a CA link went down) and whose SMA then stopped answering. Its neighbours'
/// ports toward it stay up, so the walk reaches it and its reads are given up. The full
/// discovery cannot read it either, so the sweep fails (no SUBNET UP over a node it could not
/// configure); once the SMA answers again a sweep brings the subnet up without the CA.
#[test]
fn an_unexplained_difference_falls_back_to_a_full_discovery() {
    let (mut bed, _) = Bed::k8(false);
    let topo = bed.f.topology().clone();
    let sm_ca = topo.nodes_of_type(NodeType::CA).next().unwrap();
    let sm_leaf = bed.f.peer(sm_ca, PortNum(1)).unwrap().node;
    let (ca, leaf) = topo
        .nodes_of_type(NodeType::CA)
        .map(|ca| (ca, bed.f.peer(ca, PortNum(1)).unwrap().node))
        .find(|&(_, leaf)| leaf != sm_leaf)
        .unwrap();
    bed.f.set_link(ca, PortNum(1), false).unwrap();
    bed.f.set_mute(leaf, true).unwrap();
    bed.run_for(Duration::from_secs(20));
    assert!(
        bed.logged("falling back to a full discovery") && bed.logged("full discovery:"),
        "{:#?}",
        bed.log_lines()
    );
    assert!(!bed.sm.is_up(), "a leaf it could not read: no SUBNET UP");
    bed.f.set_mute(leaf, false).unwrap();
    bed.reset();
    let now = bed.f.now();
    bed.sm.handle_command(now, sm::Command::Sweep);
    bed.run_for(Duration::from_secs(20));
    assert!(bed.sm.is_up(), "{:#?}", bed.log_lines());
    assert!(!bed.in_model(ca));
    bed.assert_all_pairs();
}

/// After a spine link is cut, the light sweep that precedes the incremental heavy sweep (it
/// reads every switch's PortStateChange) must not wait for SMPs lost on the dead link: its
/// SwitchInfo Gets go around the switches that sent the traps, so the change is handled
/// with no transaction timing out, well within one transaction timeout of the first trap.
#[test]
fn a_cut_spine_link_costs_no_timeout() {
    let (mut bed, _) = Bed::k8(false);
    let sm_leaf = bed.f.peer(bed.ca(0), PortNum(1)).unwrap().node;
    // Every spine link whose cut stays away from the SM's own leaf: try a few of them.
    let spines = bed.at_level(2);
    for &spine in spines.iter().take(4) {
        let (p, agg) = bed.neighbours(spine)[0];
        assert_ne!(agg, sm_leaf);
        bed.cut_without_timeout(spine, p);
        assert!(!bed.logged("went unanswered"), "{:#?}", bed.log_lines());
        assert!(
            !bed.events
                .iter()
                .any(|e| matches!(e, Event::Guid2LidUpdated(_))),
            "every LID kept: the guid2lid map is not handed out to be written again"
        );
    }
}

/// The same when the cut link is the SM's own leaf switch's uplink: every route from the SM
/// passes that trap issuer, so the light sweep first reads the issuer's ports and then the
/// other switches around the port it found Down — still no SMP times out (43 did before).
#[test]
fn a_cut_uplink_of_the_sms_own_leaf_costs_no_timeout() {
    let (mut bed, _) = Bed::k8(false);
    let sm_leaf = bed.f.peer(bed.ca(0), PortNum(1)).unwrap().node;
    let uplinks: Vec<u8> = bed
        .neighbours(sm_leaf)
        .into_iter()
        .filter(|&(_, n)| bed.is_switch(n))
        .map(|(p, _)| p)
        .collect();
    assert!(uplinks.len() >= 2);
    for &p in uplinks.iter().take(2) {
        bed.cut_without_timeout(sm_leaf, p);
    }
}

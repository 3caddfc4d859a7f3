//! Reachability check of computed LFTs: from every CA port to every CA LID (every LMC LID),
//! follow the tables hop by hop and verify there is no dead end, no loop, that the packet
//! arrives at the port owning the LID, and that the number of switch-to-switch hops equals the
//! shortest path (`routing.md` §4.2, the table-level part of the verification checklist).
//! The same walk also checks every switch LID (arrival on the switch's port 0), counted
//! separately in [`Reachability::switch_pairs`]. Two CA ports cabled back to back reach
//! each other without a table ([`Reachability::direct_pairs`]); a cabled CA port without a LID
//! or with its link down is left out and listed in [`Reachability::skipped`].
//!
//! Every CA attached to the same switch sees the same tables from its first switch on, so the
//! walk runs once per (source switch, destination LID) and counts for all CA ports attached to
//! that switch — 648 × 11,664 walks instead of 136 M at k36. Source switches are checked in
//! parallel with the `parallel` feature.

use ibmad::{Lid, PortNum};

use crate::routing::graph::{link_usable, HopMatrix};
use crate::routing::{Lfts, NO_PATH};
use crate::subnet::{NodeId, Subnet};

/// At most this many example pairs are kept in [`Reachability::unreachable`].
pub const MAX_EXAMPLES: usize = 64;

/// Result of [`check_all_pairs`]. Pair counts are CA-port-to-LID pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reachability {
    /// Pairs checked (source CA port × destination CA LID, self included).
    pub pairs: u64,
    /// Table walks done (source switch × destination LID).
    pub walks: u64,
    /// Pairs that hit a missing entry (0xFF), a down/unlinked port, port 0, or arrived at the
    /// wrong port.
    pub unreachable_count: u64,
    /// Up to [`MAX_EXAMPLES`] unreachable `(source LID, destination LID)` pairs.
    pub unreachable: Vec<(Lid, Lid)>,
    /// Pairs whose walk revisited more switches than exist (a forwarding loop).
    pub loops: u64,
    /// Pairs that arrived over more switch hops than the shortest path.
    pub non_shortest: u64,
    /// Pairs (source CA port × switch LID) checked for reaching the switches' port 0 — the
    /// path of LID-routed SMPs from an SM on a CA.
    pub switch_pairs: u64,
    /// Of those, pairs that dead-ended or looped.
    pub switch_failures: u64,
    /// Of those, pairs that arrived over more switch hops than the shortest path.
    pub switch_non_shortest: u64,
    /// Of [`Reachability::pairs`], pairs between two CA ports cabled to each other (no
    /// switch in between: each reaches itself and its peer).
    pub direct_pairs: u64,
    /// CA ports that are neither source nor destination, and why (at most
    /// [`MAX_EXAMPLES`]; [`Reachability::skipped_count`] counts them all).
    pub skipped: Vec<Skipped>,
    /// How many CA ports were skipped.
    pub skipped_count: u64,
    /// Of those, how many are cabled but have no LID.
    pub no_lid: u64,
}

/// A CA port the check left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The CA.
    pub node: NodeId,
    /// Its port.
    pub port: PortNum,
    /// Why.
    pub reason: SkipReason,
}

/// Why a CA port was left out of the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// It is cabled but has no LID (none assigned, or none in the dump being judged): no
    /// table can route to it.
    NoLid,
    /// Its link is down (or its far end is Down).
    LinkDown,
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SkipReason::NoLid => "no LID",
            SkipReason::LinkDown => "link down",
        })
    }
}

impl Reachability {
    /// True if every pair arrived over a shortest path and no cabled CA port lacks a LID.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.unreachable_count == 0
            && self.loops == 0
            && self.non_shortest == 0
            && self.switch_failures == 0
            && self.switch_non_shortest == 0
            && self.no_lid == 0
    }

    fn merge(mut self, o: Reachability) -> Reachability {
        self.pairs += o.pairs;
        self.walks += o.walks;
        self.unreachable_count += o.unreachable_count;
        self.loops += o.loops;
        self.non_shortest += o.non_shortest;
        self.switch_pairs += o.switch_pairs;
        self.switch_failures += o.switch_failures;
        self.switch_non_shortest += o.switch_non_shortest;
        self.direct_pairs += o.direct_pairs;
        self.skipped_count += o.skipped_count;
        self.no_lid += o.no_lid;
        for e in o.skipped {
            if self.skipped.len() < MAX_EXAMPLES {
                self.skipped.push(e);
            }
        }
        for e in o.unreachable {
            if self.unreachable.len() < MAX_EXAMPLES {
                self.unreachable.push(e);
            }
        }
        self
    }
}

struct CaPort {
    node: NodeId,
    port: PortNum,
    lid: Lid,
    nlids: u16,
    sw: NodeId,
}

enum Walk {
    Arrived(u32),
    Dead,
    Loop,
}

/// Checks `lfts` against `subnet` (see the module docs). CA ports without LID or without a
/// usable link to a switch are neither sources nor destinations.
#[must_use]
pub fn check_all_pairs(subnet: &Subnet, lfts: &Lfts) -> Reachability {
    let hm = HopMatrix::build(subnet);
    check_all_pairs_with(subnet, lfts, &hm)
}

/// [`check_all_pairs`] with a prebuilt hop matrix.
#[must_use]
pub fn check_all_pairs_with(subnet: &Subnet, lfts: &Lfts, hm: &HopMatrix) -> Reachability {
    // CA ports cabled to a switch take part; one cabled to another CA reaches itself and
    // its peer directly; the rest are skipped with the reason.
    let mut extra = Reachability::default();
    let skip = |r: &mut Reachability, node: NodeId, port: PortNum, reason: SkipReason| {
        r.skipped_count += 1;
        if reason == SkipReason::NoLid {
            r.no_lid += 1;
        }
        if r.skipped.len() < MAX_EXAMPLES {
            r.skipped.push(Skipped { node, port, reason });
        }
    };
    let mut cas: Vec<CaPort> = Vec::new();
    for (n, p) in subnet.end_ports() {
        if subnet.node(n).is_switch() {
            continue;
        }
        let Some(port) = subnet.port(n, p) else {
            continue;
        };
        let Some((rn, rp)) = port.remote else {
            continue; // not cabled: nothing to route
        };
        if !link_usable(subnet, n, p) {
            skip(&mut extra, n, p, SkipReason::LinkDown);
            continue;
        }
        if port.lid == Lid::UNASSIGNED {
            skip(&mut extra, n, p, SkipReason::NoLid);
            continue;
        }
        let nlids = 1u16 << port.lmc.min(7);
        if !subnet.node(rn).is_switch() {
            // Back to back: every LID of this port and of its peer is reached without a
            // table. Counted from this side only for the source, both sides as destinations.
            let peer_lids = subnet
                .port(rn, rp)
                .filter(|q| q.lid != Lid::UNASSIGNED)
                .map_or(0, |q| 1u64 << q.lmc.min(7));
            let n_pairs = u64::from(nlids) + peer_lids;
            extra.pairs += n_pairs;
            extra.direct_pairs += n_pairs;
            continue;
        }
        cas.push(CaPort {
            node: n,
            port: p,
            lid: port.lid,
            nlids,
            sw: rn,
        });
    }
    // Sources: switches with attached CA ports, with the count and one example LID.
    let mut src: Vec<(NodeId, u64, Lid)> = Vec::new();
    {
        let mut by_sw: Vec<Option<usize>> = vec![None; subnet.nodes.len()];
        for c in &cas {
            match by_sw[c.sw.idx()] {
                Some(i) => src[i].1 += 1,
                None => {
                    by_sw[c.sw.idx()] = Some(src.len());
                    src.push((c.sw, 1, c.lid));
                }
            }
        }
    }
    let max_hops = hm.switch_count() as u32 + 1;
    // Precomputed next hop per (switch slot, port): a switch slot, a CA index, or dead.
    const DEAD: u32 = u32::MAX;
    const CA: u32 = 0x8000_0000;
    // Tables of this subnet's switches only (a stale `Lfts` may name other nodes).
    let slots = lfts.slots_in(subnet);
    let sws = slots.switches();
    let slot_of = |n: NodeId| slots.slot(n).map_or(u32::MAX, |i| i as u32);
    let mut ca_of = std::collections::HashMap::new();
    for (i, c) in cas.iter().enumerate() {
        ca_of.insert((c.node, c.port), i as u32);
    }
    let rows: Vec<&[u8]> = sws.iter().map(|&s| lfts.table(s).unwrap_or(&[])).collect();
    let mut next = vec![DEAD; sws.len() * 256];
    for (i, &s) in sws.iter().enumerate() {
        for p in 1..=subnet.node(s).num_ports {
            let Some((rn, rp)) = subnet.port(s, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            if !link_usable(subnet, s, PortNum(p)) {
                continue;
            }
            next[i * 256 + usize::from(p)] = if subnet.node(rn).is_switch() {
                match slot_of(rn) {
                    u32::MAX => DEAD,
                    x => x,
                }
            } else {
                ca_of.get(&(rn, rp)).map_or(DEAD, |&c| CA | c)
            };
        }
    }
    // `dst`: a CA index, or `SW | slot` for a switch's port 0.
    const SW: u32 = 0x4000_0000;
    let walk_one = |s: usize, lid: Lid, dst: u32| -> Walk {
        let mut cur = s;
        let mut hops = 0u32;
        loop {
            let port = rows[cur]
                .get(usize::from(lid.0))
                .copied()
                .unwrap_or(NO_PATH);
            if port == 0 && dst == SW | cur as u32 {
                return Walk::Arrived(hops);
            }
            if port == NO_PATH || port == 0 {
                return Walk::Dead;
            }
            let nx = next[cur * 256 + usize::from(port)];
            if nx == DEAD {
                return Walk::Dead;
            }
            if nx & CA != 0 {
                return if nx == CA | dst {
                    Walk::Arrived(hops)
                } else {
                    Walk::Dead
                };
            }
            hops += 1;
            if hops > max_hops {
                return Walk::Loop;
            }
            cur = nx as usize;
        }
    };
    let per_source = |&(s, n_src, src_lid): &(NodeId, u64, Lid)| -> Reachability {
        let mut r = Reachability::default();
        let s_slot = slot_of(s) as usize;
        if s_slot == u32::MAX as usize {
            // No table for this switch: every walk from it dead-ends.
            let dsts: u64 = cas.iter().map(|d| u64::from(d.nlids)).sum();
            r.walks += dsts;
            r.pairs += dsts * n_src;
            r.unreachable_count += dsts * n_src;
            r.switch_pairs += sws.len() as u64 * n_src;
            r.switch_failures += sws.len() as u64 * n_src;
            if let Some(d) = cas.first() {
                r.unreachable.push((src_lid, d.lid));
            }
            return r;
        }
        for (di, d) in cas.iter().enumerate() {
            let shortest = hm.hops(s, d.sw).map(u32::from);
            for off in 0..d.nlids {
                let Some(l) = d.lid.0.checked_add(off) else {
                    continue;
                };
                let lid = Lid(l);
                r.walks += 1;
                r.pairs += n_src;
                match walk_one(s_slot, lid, di as u32) {
                    Walk::Arrived(h) => {
                        if Some(h) != shortest {
                            r.non_shortest += n_src;
                        }
                    }
                    Walk::Dead => {
                        r.unreachable_count += n_src;
                        if r.unreachable.len() < MAX_EXAMPLES {
                            r.unreachable.push((src_lid, lid));
                        }
                    }
                    Walk::Loop => r.loops += n_src,
                }
            }
        }
        for (t_slot, &t) in sws.iter().enumerate() {
            let lid = subnet.lid_of(t, PortNum(0));
            if lid == Lid::UNASSIGNED {
                continue;
            }
            r.switch_pairs += n_src;
            match walk_one(s_slot, lid, SW | t_slot as u32) {
                Walk::Arrived(h) => {
                    if Some(h) != hm.hops(s, t).map(u32::from) {
                        r.switch_non_shortest += n_src;
                    }
                }
                Walk::Dead | Walk::Loop => r.switch_failures += n_src,
            }
        }
        r
    };
    #[cfg(feature = "parallel")]
    let r = {
        use rayon::prelude::*;
        src.par_iter()
            .map(per_source)
            .reduce(Reachability::default, Reachability::merge)
    };
    #[cfg(not(feature = "parallel"))]
    let r = src
        .iter()
        .map(per_source)
        .fold(Reachability::default(), Reachability::merge);
    r.merge(extra)
}

//! Dimension-order routing (OpenSM `dor`: min-hop with `is_dor`, `osm_ucast_mgr.c` /
//! `osm_switch_recommend_path`) for meshes and hypercubes.
//!
//! Every route is a minimum-hop route, but instead of spreading destinations over all the
//! equally short ports, a switch uses the *lowest dimension* that gets it closer: the
//! lowest-numbered minimum-hop port, and among the ports that reach the same neighbour
//! through parallel links, the least loaded (OpenSM: "use the first dimension, but spread
//! traffic out among the group of ports representing that dimension"). The balancing and the
//! destination order are min-hop's ([`super::minhop`]); with LMC > 0, min-hop's LMC spreading
//! applies within that group.
//!
//! Port numbers are the dimensions (or, for a switch a `port_search_ordering_file` lists, its
//! order there), so the fabric must be cabled consistently: a hypercube
//! uses the same port for a dimension on both ends of each cable, a mesh one pair of ports per
//! dimension all along it (fabric-sim's `mesh:` and `hypercube:` generators do). Then the
//! routes are deadlock-free on one VL. OpenSM routes any fabric this way and leaves the credit
//! loops of a torus or a miscabled mesh in place; this engine checks its own tables and fails
//! — so the chain falls back — when they have a credit loop, naming a link of it.

use super::cdg::{deps_from_every_switch, find_cycle, lft_columns, route_dep_counts, ChannelGraph};
use super::graph::{Candidates, HopMatrix};
use super::minhop::{balance, scatter_seed};
use super::{EngineOptions, RouteError, Routes, RoutingEngine};
use crate::subnet::Subnet;
use ibmad::{Lid, PortNum};

/// The lowest dimension of switch slot `si` under the scan order `rank`: toward each
/// destination, the first min-hop port in that order and the ports reaching the same
/// neighbour (OpenSM's `is_dor` with `port_search_ordering_file`).
fn first_dimension_in(hm: &HopMatrix, si: usize, rank: &[u8; 256]) -> Candidates {
    Candidates::min_hop(hm, si)
        .ordered_by(rank)
        .first_neighbour_only(hm, si)
}

/// The dor engine.
#[derive(Clone, Debug, Default)]
pub struct Dor {
    opts: EngineOptions,
}

impl Dor {
    /// With options.
    #[must_use]
    pub fn new(opts: EngineOptions) -> Dor {
        Dor { opts }
    }
}

impl RoutingEngine for Dor {
    fn name(&self) -> &'static str {
        "dor"
    }

    fn route_logged(
        &self,
        subnet: &Subnet,
        rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        let hm = HopMatrix::build(subnet);
        let scatter = scatter_seed(&self.opts, rng);
        super::minhop::log_option_files(&self.opts, log);
        let (orders, _) = super::minhop::search_orders(subnet, &self.opts);
        let lfts = balance(subnet, hm.graph(), &self.opts, scatter, &|si| {
            // With a port_search_ordering_file the dimensions are the switch's scan order.
            match hm.graph().switch_at(si).and_then(|sw| orders.get(&sw)) {
                Some(rank) => first_dimension_in(&hm, si, rank),
                None => Candidates::lowest_dimension(&hm, si),
            }
        });
        // Credit loops of the CA-to-CA routes on the one VL dor uses.
        let g = hm.graph();
        let n = g.switch_count();
        let cg = ChannelGraph::new(g);
        let mut is_src = vec![0u32; n];
        let mut lids = Vec::new();
        for (a, &sw) in g.slots().switches().iter().enumerate() {
            for p in 1..=subnet.node(sw).num_ports {
                let Some((rn, rp)) = subnet.port(sw, PortNum(p)).and_then(|x| x.remote) else {
                    continue;
                };
                if subnet.node(rn).is_switch() {
                    continue;
                }
                if let Some(rport) = subnet.port(rn, rp) {
                    if rport.lid != Lid::UNASSIGNED {
                        is_src[a] = 1;
                        lids.extend(rport.lids());
                    }
                }
            }
        }
        let used = if is_src.iter().all(|&x| x > 0) {
            deps_from_every_switch(g, &cg, &lfts, &lids)
        } else {
            let cols = lft_columns(g, &lfts, &lids);
            let counts = route_dep_counts(&cg, &cols, n, lids.len(), &is_src);
            counts.iter().map(|&x| x > 0).collect()
        };
        if let Some(cycle) = find_cycle(&cg, &|d: usize| used[d]) {
            let c = cycle.first().copied().unwrap_or(0);
            let (a, b) = (cg.from_slot(c), cg.to_slot(c).0);
            let name = |x: usize| {
                g.switch_at(x).map_or_else(String::new, |s| {
                    let nd = subnet.node(s);
                    format!("0x{:016x} '{}'", nd.guid.0, nd.desc)
                })
            };
            return Err(RouteError::Unroutable {
                engine: "dor",
                reason: format!(
                    "dimension-order routes have a credit loop of {} links (one is {} port {} -> {}): dor is deadlock-free only on a mesh or hypercube cabled in dimension order",
                    cycle.len(),
                    name(a),
                    cg.port(c),
                    name(b)
                ),
            });
        }
        Ok(Routes::new(lfts))
    }
}

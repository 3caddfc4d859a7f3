//! Helpers for the updn/verify tests: fabric-sim topologies as SM subnets.
#![allow(clippy::unwrap_used, dead_code)]

use fabric_sim::topo::Topology;
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::Subnet;

/// A fabric-sim topology as an SM subnet (all links Active, no LIDs yet): fabric-sim's one
/// topology → subnet conversion.
pub use fabric_sim::topo::subnet::to_subnet as from_topology;

/// Fresh LIDs, LMC 0.
pub fn lids(s: &mut Subnet) {
    assign_lids(
        s,
        &LidConfig {
            lmc: 0,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &Guid2Lid::new(),
    )
    .unwrap();
}

/// The generator spec or file as a subnet with fresh LIDs.
pub fn subnet(spec: &str) -> Subnet {
    let t = Topology::from_spec_or_file(spec).unwrap();
    let mut s = from_topology(&t);
    lids(&mut s);
    s
}

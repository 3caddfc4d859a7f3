//! # Fabric topology: the model, its file formats and generators
//!
//! [`Topology`] is the static description of a fabric that the simulator instantiates: nodes
//! (switches, CAs, routers) with their NodeInfo facts, ports with GUIDs, links and link
//! attributes. It is stored as flat arrays indexed by [`NodeId`] (no pointer graph), so a
//! 100,000-CA fabric fits in tens of megabytes and loads in well under a second.
//!
//! Three ways to get one:
//! - **files** — [`Topology::from_file`] / [`Topology::parse_net`] read ibsim `.net` files and
//!   ibnetdiscover output (one grammar, documented in [`parse`]); [`Topology::to_net`] and
//!   [`Topology::to_ibnetdiscover`] write them back (see [`write`](mod@write));
//! - **generators** — [`Topology::generate`] builds fat trees, k-ary n-trees, tori, meshes,
//!   dragonfly+ and random graphs from short specs such as `fat-tree:3,36` (see [`gen`]);
//! - **by hand** — [`Topology::add_node`] and [`Topology::connect`].
//!
//! [`Topology::from_spec_or_file`] picks between a file and a spec.
//!
//! Invariants: node GUIDs, port GUIDs and names are unique; links are symmetric, never on a
//! switch's port 0, and carry the same [`LinkAttrs`] on both ends. Every mutator keeps them;
//! [`Topology::validate`] re-checks them. Nothing here panics on any input.
//!
//! Defaults follow what ibsim reports for a port with no annotations (checked with
//! `smpquery portinfo` against ibsim 0.10): 4x, SDR, MTU 2048, VL0-7.

pub mod attrs;
pub mod error;
pub mod fault;
pub mod gen;
pub mod model;
pub mod parse;
#[cfg(feature = "subnet")]
pub mod subnet;
pub mod write;

pub use attrs::{LinkAttrs, LinkSpeed, LinkWidth, Mtu, VlCap};
pub use error::{LoadError, ParseError, ParseErrorKind, SpecError, TopoError};
pub use fault::{Fault, FaultError};
pub use model::{Link, NewNode, Node, NodeId, Port, PortRef, Topology};

impl Topology {
    /// A topology from `s`: an existing file (ibsim `.net` or ibnetdiscover), or else a
    /// generator spec `name:args` (see [`gen`]).
    pub fn from_spec_or_file(s: &str) -> Result<Topology, LoadError> {
        let path = std::path::Path::new(s);
        if path.is_file() {
            return Topology::from_file(path);
        }
        match s.split_once(':') {
            Some((name, _)) if gen::is_generator(name) => Ok(Topology::generate(s)?),
            _ => Err(LoadError::NotFound(s.to_string())),
        }
    }
}

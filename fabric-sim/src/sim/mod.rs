//! The simulator engine: a virtual clock, a deterministic event queue, links with trained
//! width/speed, seeded fault injection, and a real `sma::Agent` on every node ([`Fabric`]).
//!
//! - [`fabric`]: the [`Fabric`] itself — model, event loop and forwarding rules, links and
//!   faults, SM attachment, tracing, external agents (one submodule each);
//! - [`queue`]: the `(time, seq)`-ordered [`EventQueue`];
//! - [`link`]: link training ([`train`]);
//! - [`fault`]: the `--faults` spec ([`FaultConfig`]) and the seeded [`FaultInjector`];
//! - [`stats`]: the simulator's own counters ([`SimStats`], [`DropReason`]);
//! - [`counters`]: every port's performance counters ([`PortCounters`]), as a PMA reports them.
//!
//! A run is a pure function of the topology, the [`SimConfig`] (seed included) and the calls
//! made on the fabric: same inputs, same event trace.
//!
//! # Example
//!
//! An SM on a CA of a 2-level fat tree asks the leaf switch above it for its NodeInfo:
//!
//! ```
//! use fabric_sim::sim::{Fabric, SimConfig};
//! use fabric_sim::topo::Topology;
//! use ibmad::attr::NodeInfo;
//! use ibmad::zerocopy::{FromBytes, IntoBytes};
//! use ibmad::{DrPath, Lid, MadMeta, MadPort, Method, NodeType, PortNum, Smp, SmpAttrId, Time};
//!
//! let topo = Topology::generate("fat-tree:2,4").unwrap();
//! let mut fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
//! let host = topo.nodes_of_type(NodeType::CA).next().unwrap();
//! let sm = fabric.attach_sm(host, PortNum(1)).unwrap().handle;
//!
//! let req = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 1, &DrPath::parse("0,1").unwrap());
//! let meta = MadMeta::smp_dr(PortNum(1));
//! fabric.sm_port(sm).send(&meta, req.as_bytes()).unwrap();
//! fabric.run_until(Time::from_millis(1));
//!
//! let mut buf = [0u8; 256];
//! let (_, len) = fabric.sm_port(sm).recv(&mut buf).unwrap().expect("an answer");
//! let resp = Smp::ref_from_bytes(&buf[..len]).unwrap();
//! let (ni, _) = NodeInfo::ref_from_prefix(&resp.data).unwrap();
//! assert_eq!(ni.node_type(), NodeType::SWITCH);
//! assert_eq!(fabric.stats().hops, 2);
//! ```

pub mod counters;
pub mod fabric;
pub mod fault;
pub mod link;
pub mod queue;
pub mod stats;

pub use counters::PortCounters;
pub use fabric::{
    node_config, ExternalAgent, Fabric, McastDelivery, SimAgent, SimConfig, SimError, SimHw,
    SimPort, SmAttachment, SmHandle, TraceEntry, TraceKind,
};
pub use fault::{FaultConfig, FaultInjector, FaultSpecError};
pub use link::{train, LinkCaps, Trained};
pub use queue::EventQueue;
pub use stats::{DropCounts, DropReason, FaultCounts, SimStats, SmStats};

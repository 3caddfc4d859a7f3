//! The simulator engine: a virtual clock, a deterministic event queue, links with trained
//! width/speed, seeded fault injection, and (in [`fabric`]) a real `sma::Agent` on every node.

pub mod fabric;
pub mod fault;
pub mod link;
pub mod queue;
pub mod stats;

pub use fabric::{
    node_config, Fabric, SimAgent, SimConfig, SimError, SimHw, SimPort, SmAttachment, SmHandle,
    TraceEntry, TraceKind,
};
pub use fault::{FaultConfig, FaultInjector, FaultSpecError};
pub use link::{train, LinkCaps, Trained};
pub use queue::EventQueue;
pub use stats::{DropCounts, DropReason, FaultCounts, SimStats, SmStats};

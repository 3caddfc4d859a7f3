//! # fabric-sim — deterministic InfiniBand fabric simulator
#![forbid(unsafe_code)]
#![deny(missing_docs)]
pub mod ibsim_server;
pub mod sim;
pub mod topo;
pub use sim::{Fabric, FaultConfig, SimConfig, SimError, SimPort, SmAttachment, SmHandle};

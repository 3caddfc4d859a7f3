//! # sm — the subnet manager, sans-IO
//!
//! Discovery → LID assignment → routing → programming → activation, as a state machine that
//! reads no clock, opens no files and spawns no threads (STYLE P5). The caller feeds it MADs
//! and time and drains the MADs and events it produces.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod subnet;

pub use subnet::{Node, NodeId, Port, Subnet};
pub mod check;
pub mod config;
pub mod core;
pub mod discovery;
pub mod drive;
pub mod dump;
pub mod event;
mod incremental;
pub mod lid;
pub mod mcast;
pub mod names;
pub mod partition;
pub mod perfmgr;
pub mod program;
pub mod qos;
pub mod role;
pub mod routing;
pub mod sa;
pub mod sminfo;
pub mod sweep;
pub mod timer;
pub mod trap;
mod txn;
mod ucast_cache;
pub mod verify;
mod wire_window;

/// A map keyed by values the fabric reports (GUIDs) and looked up on every acknowledgement:
/// foldhash's randomly seeded hasher instead of SipHash. The keys are bounded by the fabric's
/// size and the per-process seed is never exposed, which is the "minimal" HashDoS resistance
/// foldhash offers against inputs chosen in advance; SipHash cost ≈ 3 % of a bring-up.
pub(crate) type FastMap<K, V> = foldhash::HashMap<K, V>;

pub use crate::config::{ConfigError, SmConfig};
pub use crate::core::{Sm, Transmit};
pub use crate::drive::drive;
pub use crate::event::{Command, Event, Level, Phase, PhaseStats, SweepFailure};
pub use crate::role::Role;
pub use crate::sweep::Stage;

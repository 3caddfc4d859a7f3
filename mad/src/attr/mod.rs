//! SMP attribute payloads, one module per attribute (STYLE P3). Each is a 64-byte (or shorter)
//! zerocopy struct read from / written into [`crate::smp::Smp::data`] with `ref_from_prefix`.

pub mod node_desc;
pub mod node_info;
pub mod notice;
pub mod port_info;
pub mod sm_info;
pub mod switch_info;
pub mod tables;

pub use node_desc::NodeDesc;
pub use node_info::NodeInfo;
pub use notice::Notice;
pub use port_info::PortInfo;
pub use sm_info::SmInfo;
pub use switch_info::SwitchInfo;
pub use tables::{GuidInfo, LftBlock, MftBlock, PKeyTable, SlToVl, VlArbEntry, VlArbTable};

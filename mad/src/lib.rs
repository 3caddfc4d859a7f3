//! # ibmad — InfiniBand management datagrams on the wire
//!
//! This is the bottom layer of the stack: how subnet-management packets (SMPs) and their
//! attributes are laid out in bytes (IBA vol1 chapters 13 and 14), how general-service MADs
//! (GMPs) are (the common header in [`gmp`], RMPP in [`rmpp`], subnet administration in [`sa`],
//! performance management in [`perf`], ClassPortInfo in [`class_port_info`]; chapters 13, 15
//! and 16), the scalar types that give those bytes meaning, the directed-route processing
//! rules every SMA, switch model and SM must apply identically, and the [`MadPort`] trait
//! through which every transport moves MADs with their addressing ([`MadMeta`]: QP, Q_Key,
//! P_Key index, SL, path bits, GRH).
//!
//! Guarantees:
//! - no I/O and no `unsafe`; nothing here panics on any input bytes;
//! - every wire struct is `#[repr(C)]`, alignment 1, big-endian, with its size and field offsets
//!   pinned by `const` assertions, so it can be cast in place out of a transport buffer;
//! - sub-byte fields are declared in the IBA's Byte[Bit] notation ([`field`]);
//! - codes (classes, methods, status, attribute ids, traps) are newtypes ([`codes`]).
//!
//! Two levels for every layout (STYLE P1): a **view** checked once for length —
//! [`SmpPacket::new_checked`] for the SMP, `T::ref_from_prefix(&smp.data)` for an attribute —
//! whose accessors then never fail, and a validated **`Repr`** — [`SmpRepr::parse`],
//! [`AttrRepr::parse`] — that rejects what the IBA forbids with a typed [`ParseError`] and
//! `emit`s canonical bytes (reserved fields zero). Every view and `Repr` has a tcpdump-like
//! `Display`; [`pretty::pretty_smp`] prints any bytes at all.
//!
//! Call pattern: `let smp = Smp::ref_from_bytes(&buf[..256])?` then
//! `NodeInfo::ref_from_prefix(&smp.data)`; build with [`Smp::dr_request`] and write attributes
//! into `smp.data` with `as_bytes()`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod attr;
pub mod class_port_info;
pub mod codes;
pub mod error;
pub mod field;
pub mod gmp;
pub mod ibsim;
pub mod perf;
pub mod port;
pub mod pretty;
pub mod rmpp;
pub mod sa;
pub mod sa_rec;
pub mod smi;
pub mod smp;
pub mod time;
pub mod types;

pub use attr::{AttrRepr, SmpAttr};
pub use class_port_info::{ClassPortInfo, ClassPortInfoRepr};
pub use codes::{
    Method, MgmtClass, NodeType, PhysState, PmaAttrId, PortState, SaAttrId, SmState, SmpAttrId,
    Status, TrapNum,
};
pub use error::{Layer, LenError, ParseError};
pub use gmp::{GmpAttrRepr, Packet as GmpPacket, Repr as GmpRepr};
pub use perf::{PerfAttr, PerfMad, Repr as PerfRepr};
pub use port::{
    Direction, Grh, MadMeta, MadPort, PortCaps, PortError, Tap, VirtualClockPort, MAD_LEN,
};
pub use rmpp::{Repr as RmppRepr, RmppHeader};
pub use sa::{Packet as SaPacket, Repr as SaRepr, SaHeader, SaMad};
pub use sa_rec::mcmember::Repr as McMemberRepr;
pub use smp::{
    DrRoute, MadHeader, Packet as SmpPacket, Repr as SmpRepr, Route as SmpRoute, Smp, SMP_LEN,
};
pub use time::Time;
pub use types::{DrPath, DrPathError, Gid, Guid, Lid, MKey, PKey, PortNum, QKey};
pub use zerocopy;

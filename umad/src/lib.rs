//! # umad — the kernel user_mad transport
//!
//! This crate is the OS boundary between the SM/SMA cores and a Linux RDMA stack: it moves
//! MADs through `/dev/infiniband/umadN` (the `ib_umad` character device) and implements
//! [`ibmad::MadPort`] for them as [`UmadPort`]. Agents ([`AgentSpec`]) can be of any class and
//! version, on QP0 (SMPs) or QP1 (GMPs, Q_Key 0x80010000); an agent registered with an RMPP
//! version (the SA's, [`AgentSpec::sa`]) has the kernel segment and reassemble RMPP, so it
//! sends and receives MADs longer than 256 bytes ([`ibmad::MadPort::caps`] says so).
//!
//! Layers, bottom up:
//! * [`abi`] — the user_mad ABI: the 56/64-byte per-MAD header ([`abi::UmadHdr`]), the agent
//!   registration structs and the ioctl numbers (built from magic 0x1b, nr and size);
//! * `sys` (private) — the only module with `unsafe`: one wrapper per libc call (`open`, `read`,
//!   `write`, `poll`, `ioctl`, `close`, `opendir`/`readdir`, `fstat`) plus the io_uring engine;
//!   every failure is a [`SysError`] naming the operation with its errno;
//! * [`sysfs`] — CA/port discovery from `/sys/class/infiniband*`;
//! * [`port`] — [`UmadPort`]: open, register agents, send/receive (RMPP-reassembled MADs
//!   included), IsSM;
//! * [`raw`] — [`raw::RawUmad`]: the bare user_mad calls on one file (any class, any length).
//! * [`testutil`] — start/stop ibsim for tests ([`testutil::IbsimGuard`]).
//!
//! Guarantees: no panics on any input; every syscall goes through the libc symbols (never
//! `std::fs`, whose `open64` ibsim's `libumad2sim.so` does not interpose), so the same binary
//! runs against real hardware and, under `LD_PRELOAD=libumad2sim.so`, against ibsim.
//!
//! Use:
//! ```no_run
//! use ibmad::{DrPath, MadMeta, MadPort, Method, Smp, SmpAttrId};
//! use ibmad::zerocopy::IntoBytes;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut port = umad::UmadPort::open(&umad::UmadConfig::default())?;
//! let smp = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 1, &DrPath::local());
//! port.send(&MadMeta::default(), smp.as_bytes())?;
//! let mut buf = [0u8; 256];
//! let got = port.recv_wait(&mut buf, std::time::Duration::from_secs(1))?;
//! # let _ = got; Ok(()) }
//! ```
//!
//! ## Running against ibsim (`libumad2sim.so`)
//! Verified behaviour of Debian's ibsim 0.10 shim, all handled here (see `tests/ibsim.rs`):
//! * only `REGISTER_AGENT` works (`REGISTER_AGENT2` → EINVAL), so the header is the 56-byte one;
//! * `read` on an empty queue *returns* `-EWOULDBLOCK` instead of -1/errno;
//! * `poll` only waits on the umad fd, so receiving runs in its own thread;
//! * descriptors are fake numbers ≥ 1024: [`IoMode::Auto`] detects that (`fstat` fails) and
//!   never uses io_uring there; [`IoMode::Uring`] is refused with [`UmadError::UringUnavailable`];
//! * the shim builds its fake sysfs in `./sys-<pid>/` (cwd must be writable) and removes it at
//!   exit; opening `issm0` sets PortInfo.CapabilityMask.IsSM and closing it clears it;
//! * an undeliverable SMP comes back as the request itself with header status 110 (ETIMEDOUT);
//! * **received MADs are only valid up to byte 231**: the shim's receive buffer is 288 bytes
//!   (56-byte header + 232 MAD bytes) while it reports 312, so bytes 232..255 (ReturnPath[40..63]
//!   of a DR SMP) are heap garbage. Harmless for paths shorter than 40 hops.
//! * TIDs: the shim puts the agent id into TID bits 32..47 and ibsim its client slot into bits
//!   48..63; match responses on the low 32 bits (as on a real kernel).
#![deny(missing_docs)]

pub mod abi;
pub mod error;
pub mod port;
pub mod raw;
mod sys;
pub mod sysfs;
pub mod testutil;

pub use error::{SysError, UmadError};
pub use port::{
    Agent, AgentSpec, IoMode, PortStats, Received, UmadConfig, UmadPort, DEFAULT_MAX_MAD_LEN,
    DEFAULT_MAX_SEND_LEN,
};
pub use sys::uring::UringStats;
pub use sysfs::{CaInfo, PortAttrs, SysPaths, UmadDevice};

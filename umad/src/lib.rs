//! # umad — the kernel user_mad transport
//!
//! This crate is the OS boundary between the SM/SMA cores and a Linux RDMA stack: it moves
//! 256-byte MADs through `/dev/infiniband/umadN` (the `ib_umad` character device) and implements
//! [`ibmad::MadPort`] for them as [`UmadPort`].
//!
//! Layers, bottom up:
//! * [`abi`] — the user_mad ABI: the 56/64-byte per-MAD header ([`abi::UmadHdr`]), the agent
//!   registration structs and the ioctl numbers (built from magic 0x1b, nr and size);
//! * `sys` (private) — the only module with `unsafe`: one wrapper per libc call (`open`, `read`,
//!   `write`, `poll`, `ioctl`, `close`, `opendir`/`readdir`, `fstat`) plus the io_uring engine;
//!   every failure is a [`SysError`] naming the operation with its errno;
//! * [`sysfs`] — CA/port discovery from `/sys/class/infiniband*`;
//! * [`port`] — [`UmadPort`]: open, register QP0 agents, send/receive, IsSM.
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
#![deny(missing_docs)]

pub mod abi;
pub mod error;
pub mod port;
mod sys;
pub mod sysfs;
pub mod testutil;

pub use error::{SysError, UmadError};
pub use port::{Agent, IoMode, PortStats, Received, UmadConfig, UmadPort};
pub use sys::uring::UringStats;
pub use sysfs::{CaInfo, PortAttrs, SysPaths, UmadDevice};

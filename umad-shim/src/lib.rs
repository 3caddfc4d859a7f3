//! # libibsm_umad — a user_mad that behaves like the kernel's, for simulated fabrics
//!
//! An `LD_PRELOAD` library (`libibsm_umad.so`), a drop-in replacement for ibsim's
//! `libumad2sim.so`: the programs it is preloaded into (OpenSM, osmtest, saquery and the other
//! infiniband-diags, `ibsm run`) see a CA `ibsim0` with one port, `/dev/infiniband/umad0` and
//! `issm0`, and the sysfs files libibumad reads, while their MADs travel as 256-byte frames
//! through a simulator speaking ibsim's client protocol — stock `ibsim` or `ibsm sim serve`
//! (`IBSIM_SOCKNAME`, `SIM_HOST`, `SIM_SET_ISSM` as for ibsim's shim).
//!
//! Unlike ibsim's shim it does what the kernel's `ib_umad` + `ib_mad` do between a process and
//! the wire: response timeouts and retries (`ETIMEDOUT` to the reader, late responses
//! dropped), RMPP segmentation, windows, ACKs, retransmission, ABORT/STOP and reassembly for
//! agents registered with `rmpp_version` 1, both header sizes, all four user_mad ioctls,
//! blocking and non-blocking reads, and readiness for `poll`/`select`/`epoll`; the port's sysfs
//! files are re-read from the simulator at every open.
//!
//! Layers:
//! * [`rmpp`] — the RMPP sender and receiver machines (sans-IO);
//! * [`timers`] — the timeout table;
//! * [`core`] — ib_umad + ib_mad as a sans-IO model: files, agents, sends, dispatch;
//! * [`sysfs`] — the emulated tree and the kernel's file formats (pure);
//! * [`client`] — ibsim's control protocol: attach with a bounded retry, clear refusals;
//! * [`runtime`] — the process-wide glue: lazy start, the engine thread, descriptors;
//! * `sys` — the only `unsafe`: the interposed libc entry points and raw syscalls.
//!
//! Environment: `IBSIM_SOCKNAME` (default `sim`), `SIM_HOST` (node name or NodeDescription),
//! `SIM_SET_ISSM`, `IBSM_UMAD_CONNECT_TIMEOUT` (seconds to wait for the simulator, default
//! 10), `IBSM_UMAD_DEBUG=1` (a stderr line per protocol event), `IBSM_UMAD_FAULTS`
//! (`drop-data-seg=N`, `max-acks=N`: fault injection for tests).
#![deny(missing_docs)]

pub mod client;
pub mod core;
pub mod rmpp;
pub mod runtime;
mod sys;
pub mod sysfs;
#[cfg(test)]
mod testnet;
pub mod timers;

//! # ibsm — the command's library half
//!
//! `ibsm` is thin glue (STYLE "Crate boundaries"): it owns the clock, the configuration, logging
//! and the command line, and moves MADs between a `MadPort` and the sans-IO cores. The logic
//! lives here, in a library target, so it can be tested; `src/main.rs` only dispatches.
//!
//! * [`config`] — OpenSM-compatible options: defaults, the `opensm.conf` file format (read and
//!   write) and the command-line options shared by `ibsm run` and `ibsm sim`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod asic_cmd;
pub mod bench_cmd;
pub mod bench_failover;
pub mod bench_unlink;
pub mod config;
pub mod ctl;
pub mod daemon;
pub mod diag;
pub mod metrics;
pub mod perf;
pub mod persist;
pub mod progress;
pub mod serve_cmd;
pub mod service;
pub mod simrun;
pub mod sma_cmd;
pub mod verify_cmd;

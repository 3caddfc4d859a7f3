//! # hca-driver — user-space driver for the RA-1 reference switch ASIC
//!
//! docs/reference-asic.md is the interface. Layers:
//! * [`backend`] — [`DeviceBackend`]: kernel VFIO, vfio-user, or the in-process model, all
//!   behind `vfio::VfioDevice`.
//! * [`mmio`] — [`Regs`]: BAR0 access and the bounded poll ([`InitError::Timeout`]).
//! * [`pool`] — [`MadPool`]/[`MadBuf`]: DMA buffers as ownership tokens (STYLE P10).
//! * [`ring`] — descriptor rings and the CQ with named barriers.
//! * [`driver`] — [`Hca`]: bring-up, datapath, interrupt and busy-poll modes, `MadPort`.
//! * [`host`] — [`HostSma`]: `sma::Agent` over the driver, with [`AsicHw`] writing accepted
//!   Sets to the registers and port-change interrupts becoming link events (and traps).
//! * [`model`] — the RA-1 device model ([`AsicModel`]), in process ([`model::inproc`]) or
//!   served over vfio-user ([`model::server`]).
//! * [`sim`] — [`sim::AsicNode`]: a model + driver + host SMA plugged into a `fabric_sim`
//!   fabric node as its external agent.
//!
//! `unsafe` is allowed only in [`pool`] (the `MadBuf` slice views); docs/unsafe.md lists it.

pub mod backend;
pub mod driver;
pub mod error;
pub mod host;
pub mod mmio;
pub mod model;
pub mod pool;
pub mod regs;
pub mod ring;
pub mod sim;

pub use backend::{DeviceBackend, InProcessBackend, KernelBackend, UserBackend};
pub use driver::{DeviceFacts, DriverConfig, DriverStats, Hca, IrqMode, RxMeta};
pub use error::{DriverError, InitError};
pub use host::{AsicHw, HostSma};
pub use mmio::Regs;
pub use model::{AsicModel, ModelConfig, ModelFault};
pub use pool::{MadBuf, MadPool};
pub use ring::{Completion, TxMeta};

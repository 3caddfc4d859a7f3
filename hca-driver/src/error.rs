//! Typed errors (STYLE P11): bring-up failures and datapath failures, each naming what failed.

use std::time::Duration;

use vfio::VfioError;

/// Bring-up failed (RA-1 §4.1).
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A device access (register, config space, DMA map, MSI-X) failed.
    #[error("device access during bring-up failed")]
    Vfio(#[from] VfioError),
    /// `ID` is not the RA-1 magic.
    #[error("ID register reads {got:#010x}; not an RA-1 device (expected 0x41524131)")]
    NotRa1 {
        /// The value read.
        got: u32,
    },
    /// `VERSION` major is not 1.
    #[error("RA-1 interface version {major}.{minor} is not supported (need major 1)")]
    Version {
        /// Major.
        major: u16,
        /// Minor.
        minor: u16,
    },
    /// A bounded wait expired: `reg & mask` never reached the wanted value.
    #[error("timeout: {reg} & {mask:#x} not reached after {waited:?}")]
    Timeout {
        /// The register polled.
        reg: &'static str,
        /// The bits waited for.
        mask: u32,
        /// How long the driver waited.
        waited: Duration,
    },
    /// The device answered the init handshake with `STATUS.INIT_ERR`.
    #[error("device rejected the ring configuration (ERR_CAUSE {cause:#x})")]
    Rejected {
        /// `ERR_CAUSE`.
        cause: u32,
    },
    /// The driver configuration is invalid.
    #[error("bad driver configuration: {0}")]
    Config(String),
    /// The device has no ports or too many.
    #[error("device reports {0} ports; RA-1 allows 1..=254")]
    BadPorts(u8),
}

/// A datapath failure.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// A device access failed.
    #[error("device access failed")]
    Vfio(#[from] VfioError),
    /// The device stopped (RA-1 §7.5); a reset is required.
    #[error("device stopped: ERR_CAUSE {cause:#x} at {addr:#x}")]
    Fatal {
        /// `ERR_CAUSE`.
        cause: u32,
        /// `ERR_ADDR`.
        addr: u64,
    },
    /// The TX ring is full (back-pressure: retry after completions were polled).
    #[error("TX ring full")]
    TxFull,
    /// No free MAD buffer.
    #[error("MAD buffer pool exhausted")]
    PoolEmpty,
    /// QP0 carries exactly 256-byte MADs.
    #[error("MAD length {len}; QP0 carries exactly 256 bytes")]
    BadLength {
        /// The length given.
        len: usize,
    },
    /// A CQE named a ring slot that holds no posted buffer (device or driver bug).
    #[error("completion for ring {ring} slot {index} that has no posted buffer")]
    BadCompletion {
        /// 0 RX, 1 TX.
        ring: u8,
        /// Slot.
        index: u16,
    },
}

//! Register access for the driver: typed reads/writes of BAR0 through [`vfio::RegisterIo`]
//! (raw-pointer volatile access when mmapped, messages otherwise — never a reference to device
//! memory, STYLE P10) and the bounded poll every bring-up wait uses (STYLE P11).

use std::sync::Arc;
use std::time::{Duration, Instant};

use vfio::RegisterIo;

use crate::error::InitError;
use crate::regs;

/// BAR0 of an RA-1 device. Cloning shares the handle.
#[derive(Debug, Clone)]
pub struct Regs {
    io: Arc<dyn RegisterIo>,
}

impl Regs {
    /// Wraps BAR0.
    pub fn new(io: Arc<dyn RegisterIo>) -> Regs {
        Regs { io }
    }

    /// Reads register `off`.
    pub fn read(&self, off: u64) -> vfio::Result<u32> {
        self.io.read32(off)
    }

    /// Writes register `off`.
    pub fn write(&self, off: u64, v: u32) -> vfio::Result<()> {
        self.io.write32(off, v)
    }

    /// Reads a register of port `p`.
    pub fn port_read(&self, p: u8, off: u64) -> vfio::Result<u32> {
        self.io.read32(regs::port_base(p) + off)
    }

    /// Writes a register of port `p`.
    pub fn port_write(&self, p: u8, off: u64, v: u32) -> vfio::Result<()> {
        self.io.write32(regs::port_base(p) + off, v)
    }

    /// Polls `reg` until `done(value)` holds, at most `limit`. Spins briefly, then sleeps with
    /// growing steps (≤ 1 ms). Returns the last value read, or
    /// [`InitError::Timeout`] naming `reg` and `mask`.
    pub fn wait_until(
        &self,
        reg: u64,
        mask: u32,
        limit: Duration,
        done: impl Fn(u32) -> bool,
    ) -> Result<u32, InitError> {
        let start = Instant::now();
        let mut step = Duration::from_micros(1);
        loop {
            let v = self.read(reg)?;
            if done(v) {
                return Ok(v);
            }
            let waited = start.elapsed();
            if waited >= limit {
                return Err(InitError::Timeout {
                    reg: regs::reg_name(reg),
                    mask,
                    waited,
                });
            }
            std::thread::sleep(step.min(limit - waited));
            step = (step * 2).min(Duration::from_millis(1));
        }
    }
}

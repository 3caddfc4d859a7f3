//! QEMU's educational PCI device `edu` (PCI 1234:11e8), as QEMU's `docs/specs/edu.rst`
//! describes it: a 1 MiB BAR0 of 32-bit registers, a factorial unit, an interrupt raise/ack
//! pair signalled by MSI, and a DMA engine that copies between host memory (through the IOMMU)
//! and a 4 KiB buffer inside the device at device address `0x40000`.
//!
//! Register access goes through [`hca_driver::Regs`] (BAR0 via `vfio::RegisterIo`) and every
//! wait through its bounded [`Regs::wait_until`].

use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context};
use hca_driver::Regs;
use vfio::VfioDevice;

/// PCI vendor ID.
pub const VENDOR: u16 = 0x1234;
/// PCI device ID.
pub const DEVICE: u16 = 0x11E8;

/// BAR0 registers (edu.rst "MMIO area spec").
#[rustfmt::skip]
pub mod regs {
    /// 0x00 (RO) identification: `0xRRrr00ed` (major, minor version).
    pub const ID: u64             = 0x00;
    /// 0x04 (RW) card liveness check: reads back the inverse of what was written.
    pub const LIVENESS: u64       = 0x04;
    /// 0x08 (RW) factorial: write n, read n! once `STATUS.COMPUTING` clears.
    pub const FACTORIAL: u64      = 0x08;
    /// 0x20 (RW) status, bitwise OR.
    pub const STATUS: u64         = 0x20;
    /// 0x24 (RO) interrupt status.
    pub const IRQ_STATUS: u64     = 0x24;
    /// 0x60 (WO) interrupt raise: ORs the value into IRQ_STATUS and signals.
    pub const IRQ_RAISE: u64      = 0x60;
    /// 0x64 (WO) interrupt acknowledge: clears the written bits.
    pub const IRQ_ACK: u64        = 0x64;
    /// 0x80 (RW) DMA source address.
    pub const DMA_SRC: u64        = 0x80;
    /// 0x88 (RW) DMA destination address.
    pub const DMA_DST: u64        = 0x88;
    /// 0x90 (RW) DMA transfer count.
    pub const DMA_COUNT: u64      = 0x90;
    /// 0x98 (RW) DMA command, bitwise OR.
    pub const DMA_CMD: u64        = 0x98;

    /// STATUS bit 0: computing factorial (RO).
    pub const STATUS_COMPUTING: u32 = 0x01;
    /// STATUS bit 7: raise an interrupt after the factorial.
    pub const STATUS_IRQFACT: u32   = 0x80;
    /// DMA_CMD bit 0: start transfer (clears when done).
    pub const DMA_START: u32        = 0x01;
    /// DMA_CMD bit 1: direction, 1 = from edu to RAM.
    pub const DMA_TO_RAM: u32       = 0x02;
    /// DMA_CMD bit 2: raise interrupt 0x100 when done.
    pub const DMA_IRQ: u32          = 0x04;
    /// IRQ_STATUS value of a factorial completion.
    pub const IRQ_FACT: u32         = 0x001;
    /// IRQ_STATUS value of a DMA completion.
    pub const IRQ_DMA: u32          = 0x100;
}

/// Device address of the 4 KiB DMA buffer inside edu.
pub const DMA_BUF: u64 = 0x4_0000;
/// Size of that buffer.
pub const DMA_BUF_LEN: u64 = 4096;
/// The transfer size [`Edu::copy`] uses: half the buffer.
pub const CHUNK: u64 = 2048;
/// edu masks host DMA addresses to 28 bits (its default `dma_mask`).
pub const DMA_ADDR_LIMIT: u64 = 1 << 28;
/// The IOVA window the tests map edu's buffers in: below [`DMA_ADDR_LIMIT`].
pub const IOVA_WINDOW: (u64, u64) = (0x0100_0000, 0x0400_0000);
/// How far off `IBSM_HWTEST_BREAK=dma-iova` points the device (into IOVA space that is never
/// mapped, still below [`DMA_ADDR_LIMIT`]).
pub const WRONG_IOVA_SHIFT: u64 = 0x0800_0000;

/// Bound on each wait (a DMA takes 100 ms of virtual time; TCG guests on a loaded host are slow).
pub const WAIT: Duration = Duration::from_secs(20);

/// An opened edu device.
#[derive(Debug, Clone)]
pub struct Edu {
    /// The device.
    pub dev: Arc<dyn VfioDevice>,
    /// BAR0.
    pub regs: Regs,
}

impl Edu {
    /// Wraps an opened device after checking its IDs.
    pub fn new(dev: Arc<dyn VfioDevice>) -> anyhow::Result<Edu> {
        let vendor = dev.config_read16(0)?;
        let device = dev.config_read16(2)?;
        ensure!(
            (vendor, device) == (VENDOR, DEVICE),
            "config space says {vendor:04x}:{device:04x}, not edu ({VENDOR:04x}:{DEVICE:04x})"
        );
        let regs = Regs::new(dev.bar(0).context("BAR0")?);
        Ok(Edu { dev, regs })
    }

    /// n! computed by the device (bounded wait on `STATUS.COMPUTING`).
    pub fn factorial(&self, n: u32) -> anyhow::Result<u32> {
        self.regs.write(regs::FACTORIAL, n)?;
        self.regs
            .wait_until(regs::STATUS, regs::STATUS_COMPUTING, WAIT, |v| {
                v & regs::STATUS_COMPUTING == 0
            })
            .context("factorial never finished")?;
        Ok(self.regs.read(regs::FACTORIAL)?)
    }

    /// Starts a DMA of `len` bytes from host address `iova` into the device buffer at `at`.
    pub fn start_to_device(&self, iova: u64, at: u64, len: u64, irq: bool) -> anyhow::Result<()> {
        self.start(iova, DMA_BUF + at, at, len, irq_bit(irq))
    }

    /// Starts a DMA of `len` bytes from the device buffer at `at` to host address `iova`.
    pub fn start_to_ram(&self, at: u64, iova: u64, len: u64, irq: bool) -> anyhow::Result<()> {
        self.start(DMA_BUF + at, iova, at, len, regs::DMA_TO_RAM | irq_bit(irq))
    }

    fn start(&self, src: u64, dst: u64, at: u64, len: u64, cmd: u32) -> anyhow::Result<()> {
        // edu aborts the whole VM on a device-buffer range it rejects, and QEMU 7.2's check
        // also rejects a transfer ending exactly at the end of the buffer: never use the last
        // byte ([`CHUNK`]-sized transfers at offset 0 always fit).
        ensure!(
            len > 0 && at.checked_add(len).is_some_and(|e| e < DMA_BUF_LEN),
            "edu DMA of {len:#x} bytes at buffer offset {at:#x} does not fit its 4 KiB buffer"
        );
        let host = if cmd & regs::DMA_TO_RAM != 0 {
            dst
        } else {
            src
        };
        ensure!(
            host + len <= DMA_ADDR_LIMIT,
            "host address {host:#x} is beyond edu's 28-bit DMA mask"
        );
        self.wait_dma().context("a previous DMA is still running")?;
        // Host addresses < 2^28 fit the low 32 bits; edu's registers are 64-bit and a 32-bit
        // write sets the whole value.
        self.regs.write(regs::DMA_SRC, low32(src))?;
        self.regs.write(regs::DMA_DST, low32(dst))?;
        self.regs.write(regs::DMA_COUNT, low32(len))?;
        // The buffer contents written by the CPU must be visible before the device starts.
        vfio::wmb();
        self.regs.write(regs::DMA_CMD, regs::DMA_START | cmd)?;
        Ok(())
    }

    /// Waits (bounded) until no DMA is running.
    pub fn wait_dma(&self) -> anyhow::Result<()> {
        self.regs
            .wait_until(regs::DMA_CMD, regs::DMA_START, WAIT, |v| {
                v & regs::DMA_START == 0
            })
            .context("edu DMA did not complete")?;
        // The device's writes are complete; order our reads of the buffer after this.
        vfio::dma_rmb();
        Ok(())
    }

    /// Copies `len` bytes from host `src` through the device buffer to host `dst`, in
    /// [`CHUNK`]-byte round trips, waiting for every DMA.
    pub fn copy(&self, src: u64, dst: u64, len: u64) -> anyhow::Result<()> {
        let mut done = 0;
        while done < len {
            let n = CHUNK.min(len - done);
            self.start_to_device(src + done, 0, n, false)?;
            self.wait_dma()?;
            self.start_to_ram(0, dst + done, n, false)?;
            self.wait_dma()?;
            done += n;
        }
        Ok(())
    }
}

fn irq_bit(irq: bool) -> u32 {
    if irq {
        regs::DMA_IRQ
    } else {
        0
    }
}

fn low32(v: u64) -> u32 {
    (v & 0xFFFF_FFFF) as u32
}

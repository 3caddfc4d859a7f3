//! The in-process backend: the RA-1 model running in this process behind the same
//! [`VfioDevice`] interface as kernel VFIO and vfio-user.
//!
//! BAR0 accesses become calls into the [`AsicModel`]; DMA maps re-map the client's memfd (the
//! same pages, a second mapping) so the model reads and writes host memory by IOVA exactly as a
//! device would; MSI-X vectors signal the eventfds the driver registered. No `unsafe` here: the
//! model touches host memory only through [`MmioRegion`]'s bounds-checked volatile accessors.

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use vfio::{
    DeviceFlags, DeviceInfo, DmaMemory, IrqInfo, MmioRegion, PciCommand, RegionFlags, RegionInfo,
    RegisterIo, Sys, VfioDevice, VfioError, CONFIG_REGION, MSIX_IRQ_INDEX, PCI_COMMAND,
};

use super::{AsicModel, DeviceEnv, DmaFault, ModelConfig};
use crate::regs::{BAR0_SIZE, MSIX_VECTORS};

/// Host memory and interrupt lines of the in-process device.
#[derive(Debug)]
pub struct InProcEnv {
    sys: Arc<dyn Sys>,
    /// IOVA → (window over the memfd, its length).
    dma: RwLock<BTreeMap<u64, MmioRegion>>,
    irqs: Mutex<Vec<Option<RawFd>>>,
    command: AtomicU16,
}

impl InProcEnv {
    /// Runs `f` on the window that holds `[iova, iova + len)` and the offset in it (one read
    /// lock, no clone of the window).
    fn with_window<R>(
        &self,
        iova: u64,
        len: usize,
        f: impl FnOnce(&MmioRegion, u64) -> vfio::Result<R>,
    ) -> Result<R, DmaFault> {
        let map = self.dma.read().map_err(|_| DmaFault { iova })?;
        let (&base, w) = map.range(..=iova).next_back().ok_or(DmaFault { iova })?;
        let off = iova - base;
        match off.checked_add(len as u64) {
            Some(end)
                if end <= w.len() as u64 && off.is_multiple_of(4) && len.is_multiple_of(4) =>
            {
                f(w, off).map_err(|_| DmaFault { iova })
            }
            _ => Err(DmaFault { iova }),
        }
    }
}

impl DeviceEnv for InProcEnv {
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        self.with_window(iova, buf.len(), |w, off| {
            for (i, c) in buf.chunks_exact_mut(4).enumerate() {
                c.copy_from_slice(&w.read32(off + 4 * i as u64)?.to_le_bytes());
            }
            Ok(())
        })
    }

    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), DmaFault> {
        self.with_window(iova, data.len(), |w, off| {
            for (i, c) in data.chunks_exact(4).enumerate() {
                w.write32(
                    off + 4 * i as u64,
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                )?;
            }
            Ok(())
        })
    }

    fn dma_write32(&self, iova: u64, v: u32) -> Result<(), DmaFault> {
        self.with_window(iova, 4, |w, off| w.write32(off, v))
    }

    fn bus_master(&self) -> bool {
        PciCommand::from_bits_retain(self.command.load(Ordering::Acquire))
            .contains(PciCommand::BUS_MASTER)
    }

    fn raise_irq(&self, vector: u32) {
        let fd = self
            .irqs
            .lock()
            .ok()
            .and_then(|v| v.get(vector as usize).copied().flatten());
        if let Some(fd) = fd {
            if let Err(e) = self.sys.eventfd_write(fd, 1) {
                tracing::warn!("in-process model: MSI-X vector {vector}: {e}");
            }
        }
    }
}

#[derive(Debug)]
struct Shared {
    model: Mutex<AsicModel>,
    env: InProcEnv,
}

/// The RA-1 model as a [`VfioDevice`] in this process. Cloning shares the device.
#[derive(Debug, Clone)]
pub struct InProcessDevice {
    shared: Arc<Shared>,
}

/// BAR0 of an [`InProcessDevice`].
#[derive(Debug)]
struct InProcBar {
    shared: Arc<Shared>,
}

fn poisoned(op: &'static str) -> VfioError {
    VfioError::InvalidArgument {
        op,
        reason: "device model lock poisoned".into(),
    }
}

fn check(offset: u64, width: usize) -> vfio::Result<()> {
    if !offset.is_multiple_of(4) || offset + width as u64 > BAR0_SIZE || width != 4 {
        return Err(VfioError::OutOfBounds {
            offset,
            width,
            len: BAR0_SIZE,
        });
    }
    Ok(())
}

impl RegisterIo for InProcBar {
    fn len(&self) -> u64 {
        BAR0_SIZE
    }
    fn read32(&self, offset: u64) -> vfio::Result<u32> {
        check(offset, 4)?;
        let mut m = self.shared.model.lock().map_err(|_| poisoned("read32"))?;
        Ok(m.read(offset))
    }
    fn write32(&self, offset: u64, value: u32) -> vfio::Result<()> {
        check(offset, 4)?;
        let mut m = self.shared.model.lock().map_err(|_| poisoned("write32"))?;
        m.write(offset, value, &self.shared.env);
        Ok(())
    }
}

impl InProcessDevice {
    /// A new device running `cfg`, using `sys` for memfd mappings and eventfds.
    pub fn new(cfg: ModelConfig, sys: Arc<dyn Sys>) -> InProcessDevice {
        InProcessDevice {
            shared: Arc::new(Shared {
                model: Mutex::new(AsicModel::new(cfg)),
                env: InProcEnv {
                    sys,
                    dma: RwLock::new(BTreeMap::new()),
                    irqs: Mutex::new(vec![None; MSIX_VECTORS as usize]),
                    command: AtomicU16::new(0),
                },
            }),
        }
    }

    /// Runs `f` on the model with its environment (the wire side: deliver SMPs, link events).
    pub fn with_model<R>(&self, f: impl FnOnce(&mut AsicModel, &dyn DeviceEnv) -> R) -> Option<R> {
        let mut m = self.shared.model.lock().ok()?;
        Some(f(&mut m, &self.shared.env))
    }

    /// The model, locked (read-only inspection in tests and glue).
    pub fn lock(&self) -> Option<MutexGuard<'_, AsicModel>> {
        self.shared.model.lock().ok()
    }
}

impl VfioDevice for InProcessDevice {
    fn sys(&self) -> &Arc<dyn Sys> {
        &self.shared.env.sys
    }
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            flags: DeviceFlags::PCI | DeviceFlags::RESET,
            num_regions: 9,
            num_irqs: 5,
        }
    }
    fn region_info(&self, index: u32) -> vfio::Result<RegionInfo> {
        let (flags, size) = match index {
            0 => (RegionFlags::READ | RegionFlags::WRITE, BAR0_SIZE),
            CONFIG_REGION => (RegionFlags::READ | RegionFlags::WRITE, 256),
            1..=8 => (RegionFlags::empty(), 0),
            _ => return Err(VfioError::NoSuchRegion { index, count: 9 }),
        };
        Ok(RegionInfo {
            index,
            flags,
            size,
            offset: 0,
            caps: Vec::new(),
        })
    }
    fn region_read(&self, index: u32, offset: u64, buf: &mut [u8]) -> vfio::Result<()> {
        match index {
            0 => {
                check(offset, buf.len())?;
                let v = InProcBar {
                    shared: self.shared.clone(),
                }
                .read32(offset)?;
                buf.copy_from_slice(&v.to_le_bytes());
                Ok(())
            }
            CONFIG_REGION => {
                let mut cfg = [0u8; 256];
                cfg[0..2].copy_from_slice(&crate::regs::PCI_VENDOR.to_le_bytes());
                cfg[2..4].copy_from_slice(&crate::regs::PCI_DEVICE_SWITCH.to_le_bytes());
                let cmd = self.shared.env.command.load(Ordering::Acquire);
                cfg[4..6].copy_from_slice(&cmd.to_le_bytes());
                cfg[8] = 0x10;
                cfg[9..12].copy_from_slice(&[0x00, 0x06, 0x0C]);
                let o = usize::try_from(offset).unwrap_or(usize::MAX);
                match o.checked_add(buf.len()).and_then(|e| cfg.get(o..e)) {
                    Some(s) => {
                        buf.copy_from_slice(s);
                        Ok(())
                    }
                    None => Err(VfioError::OutOfBounds {
                        offset,
                        width: buf.len(),
                        len: 256,
                    }),
                }
            }
            _ => Err(VfioError::NoSuchRegion { index, count: 9 }),
        }
    }
    fn region_write(&self, index: u32, offset: u64, data: &[u8]) -> vfio::Result<()> {
        match index {
            0 => {
                check(offset, data.len())?;
                let v = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
                InProcBar {
                    shared: self.shared.clone(),
                }
                .write32(offset, v)
            }
            CONFIG_REGION => {
                if offset == PCI_COMMAND && data.len() == 2 {
                    let v = u16::from_le_bytes([data[0], data[1]]);
                    self.shared.env.command.store(v, Ordering::Release);
                }
                Ok(())
            }
            _ => Err(VfioError::NoSuchRegion { index, count: 9 }),
        }
    }
    fn bar(&self, index: u32) -> vfio::Result<Arc<dyn RegisterIo>> {
        if index != 0 {
            return Err(VfioError::NoSuchRegion { index, count: 9 });
        }
        Ok(Arc::new(InProcBar {
            shared: self.shared.clone(),
        }))
    }
    fn irq_info(&self, index: u32) -> vfio::Result<IrqInfo> {
        Ok(IrqInfo {
            index,
            flags: 0,
            count: if index == MSIX_IRQ_INDEX {
                MSIX_VECTORS
            } else {
                0
            },
        })
    }
    fn set_irq_eventfds(&self, index: u32, start: u32, fds: &[RawFd]) -> vfio::Result<()> {
        if index != MSIX_IRQ_INDEX || start as usize + fds.len() > MSIX_VECTORS as usize {
            return Err(VfioError::InvalidArgument {
                op: "set_irq_eventfds",
                reason: format!("index {index}, vectors {start}+{}", fds.len()),
            });
        }
        let mut irqs = self.shared.env.irqs.lock().map_err(|_| poisoned("irq"))?;
        for (i, fd) in fds.iter().enumerate() {
            irqs[start as usize + i] = Some(*fd);
        }
        Ok(())
    }
    fn disable_irqs(&self, _index: u32) -> vfio::Result<()> {
        let mut irqs = self.shared.env.irqs.lock().map_err(|_| poisoned("irq"))?;
        irqs.iter_mut().for_each(|v| *v = None);
        Ok(())
    }
    fn reset(&self) -> vfio::Result<()> {
        InProcBar {
            shared: self.shared.clone(),
        }
        .write32(crate::regs::CTRL, crate::regs::CTRL_RESET)
    }
    fn dma_map(&self, mem: &DmaMemory, offset: u64, len: u64, iova: u64) -> vfio::Result<u64> {
        let len_us = usize::try_from(len).map_err(|_| VfioError::InvalidArgument {
            op: "dma_map",
            reason: format!("length {len:#x}"),
        })?;
        let map = self.shared.env.sys.mmap(mem.fd(), offset, len_us)?;
        let win = MmioRegion::new(Arc::new(map), 0)?;
        self.shared
            .env
            .dma
            .write()
            .map_err(|_| poisoned("dma_map"))?
            .insert(iova, win);
        Ok(iova)
    }
    fn dma_unmap(&self, addr: u64, _len: u64) -> vfio::Result<()> {
        let removed = self
            .shared
            .env
            .dma
            .write()
            .map_err(|_| poisoned("dma_unmap"))?
            .remove(&addr);
        match removed {
            Some(_) => Ok(()),
            None => Err(VfioError::NotAllocated {
                iova: addr,
                len: _len,
            }),
        }
    }
}

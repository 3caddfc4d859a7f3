//! The device interface shared by kernel VFIO ([`crate::KernelDevice`]) and vfio-user
//! ([`crate::user::UserDevice`]): a driver written against [`VfioDevice`] runs unchanged on both.

use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;

use bitflags::bitflags;
use vfio_bindings::bindings::vfio::{
    VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_MSI_IRQ_INDEX,
};

use crate::dma::DmaMemory;
use crate::error::{Result, VfioError};
use crate::region::{RegionInfo, RegisterIo};
use crate::sys::{Fd, Sys};

/// Region index of PCI config space.
pub const CONFIG_REGION: u32 = VFIO_PCI_CONFIG_REGION_INDEX;
/// IRQ index of MSI.
pub const MSI_IRQ_INDEX: u32 = VFIO_PCI_MSI_IRQ_INDEX;
/// IRQ index of MSI-X.
pub const MSIX_IRQ_INDEX: u32 = VFIO_PCI_MSIX_IRQ_INDEX;
/// Offset of the PCI Command register in config space.
pub const PCI_COMMAND: u64 = 0x04;

bitflags! {
    /// `VFIO_DEVICE_FLAGS_*`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct DeviceFlags: u32 {
        /// Device supports reset.
        const RESET = 1 << 0;
        /// vfio-pci device.
        const PCI = 1 << 1;
    }
}

bitflags! {
    /// PCI Command register bits this crate uses.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct PciCommand: u16 {
        /// I/O space enable.
        const IO = 1 << 0;
        /// Memory space enable.
        const MEMORY = 1 << 1;
        /// Bus master enable: the device may DMA.
        const BUS_MASTER = 1 << 2;
        /// INTx disable.
        const INTX_DISABLE = 1 << 10;
    }
}

/// `VFIO_DEVICE_GET_INFO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Flags.
    pub flags: DeviceFlags,
    /// Number of regions.
    pub num_regions: u32,
    /// Number of IRQ indexes.
    pub num_irqs: u32,
}

/// `VFIO_DEVICE_GET_IRQ_INFO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqInfo {
    /// IRQ index.
    pub index: u32,
    /// `VFIO_IRQ_INFO_*` flags.
    pub flags: u32,
    /// Number of vectors.
    pub count: u32,
}

/// An eventfd: how a device's interrupt vector reaches us (and, on vfio-user, how the server
/// signals it).
#[derive(Debug)]
pub struct EventFd {
    fd: Fd,
}

impl EventFd {
    /// A new non-blocking eventfd.
    pub fn new(sys: &Arc<dyn Sys>) -> Result<Self> {
        Ok(EventFd {
            fd: Fd::new(sys.clone(), sys.eventfd()?),
        })
    }
    /// Wrap a descriptor received from elsewhere (a vfio-user server gets the client's
    /// eventfds this way).
    pub fn from_fd(fd: Fd) -> Self {
        EventFd { fd }
    }
    /// The descriptor (for `SET_IRQS`).
    pub fn raw(&self) -> RawFd {
        self.fd.raw()
    }
    /// Take the count of signals since the last read (`None` if none).
    pub fn take(&self) -> Result<Option<u64>> {
        self.fd.sys().eventfd_read(self.fd.raw())
    }
    /// Signal it (add 1).
    pub fn signal(&self) -> Result<()> {
        self.fd.sys().eventfd_write(self.fd.raw(), 1)
    }
    /// Wait up to `timeout` for a signal; returns the count taken, `None` on timeout.
    pub fn wait(&self, timeout: Duration) -> Result<Option<u64>> {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        match self.fd.sys().poll_in(&[self.fd.raw()], ms)? {
            Some(_) => self.take(),
            None => Ok(None),
        }
    }
}

/// A PCI device reached through VFIO (kernel) or vfio-user.
pub trait VfioDevice: Send + Sync + std::fmt::Debug {
    /// The syscall seam this device uses (for memfds and eventfds it needs).
    fn sys(&self) -> &Arc<dyn Sys>;
    /// Device info.
    fn info(&self) -> DeviceInfo;
    /// Region info (cached at open).
    fn region_info(&self, index: u32) -> Result<RegionInfo>;
    /// Read `buf.len()` bytes of region `index` at `offset` (message/syscall based).
    fn region_read(&self, index: u32, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Write `data` to region `index` at `offset`.
    fn region_write(&self, index: u32, offset: u64, data: &[u8]) -> Result<()>;
    /// 32-bit register access to region `index`: mmapped where the region allows it, through
    /// [`region_read`](Self::region_read)/[`region_write`](Self::region_write) elsewhere.
    fn bar(&self, index: u32) -> Result<Arc<dyn RegisterIo>>;
    /// IRQ index info.
    fn irq_info(&self, index: u32) -> Result<IrqInfo>;
    /// Connect `fds` to vectors `start..` of IRQ `index` (`SET_IRQS`, `DATA_EVENTFD|TRIGGER`).
    fn set_irq_eventfds(&self, index: u32, start: u32, fds: &[RawFd]) -> Result<()>;
    /// Disable IRQ `index` (`SET_IRQS`, `DATA_NONE|TRIGGER`, count 0).
    fn disable_irqs(&self, index: u32) -> Result<()>;
    /// Function-level reset.
    fn reset(&self) -> Result<()>;
    /// Make `len` bytes of `mem` from `offset` reachable by the device at `iova`. Returns the
    /// address the device must use: `iova` with an IOMMU or vfio-user, the physical address in
    /// no-IOMMU mode.
    fn dma_map(&self, mem: &DmaMemory, offset: u64, len: u64, iova: u64) -> Result<u64>;
    /// Undo a [`dma_map`](Self::dma_map) (by the address it returned).
    fn dma_unmap(&self, addr: u64, len: u64) -> Result<()>;

    /// Read config space.
    fn read_config(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.region_read(CONFIG_REGION, offset, buf)
    }
    /// Write config space.
    fn write_config(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.region_write(CONFIG_REGION, offset, data)
    }
    /// Read a little-endian 16-bit config register.
    fn config_read16(&self, offset: u64) -> Result<u16> {
        let mut b = [0u8; 2];
        self.read_config(offset, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }
    /// Write a little-endian 16-bit config register.
    fn config_write16(&self, offset: u64, value: u16) -> Result<()> {
        self.write_config(offset, &value.to_le_bytes())
    }
    /// Set Memory Space and Bus Master Enable in the Command register (read-modify-write);
    /// returns the new value.
    fn enable_bus_master(&self) -> Result<PciCommand> {
        let cmd = PciCommand::from_bits_retain(self.config_read16(PCI_COMMAND)?);
        let new = cmd | PciCommand::MEMORY | PciCommand::BUS_MASTER;
        if new != cmd {
            self.config_write16(PCI_COMMAND, new.bits())?;
        }
        Ok(new)
    }
    /// Clear Bus Master Enable (the device stops DMA).
    fn disable_bus_master(&self) -> Result<()> {
        let cmd = PciCommand::from_bits_retain(self.config_read16(PCI_COMMAND)?);
        self.config_write16(PCI_COMMAND, (cmd - PciCommand::BUS_MASTER).bits())
    }
    /// Create `vectors` eventfds and connect them to MSI-X vectors `0..vectors`.
    fn enable_msix(&self, vectors: u32) -> Result<Vec<EventFd>> {
        enable_eventfds(self, MSIX_IRQ_INDEX, vectors, "enable_msix")
    }
    /// Create `vectors` eventfds and connect them to MSI vectors `0..vectors` (the kernel
    /// programs the MSI capability; a device usually has 1, 2, 4, … 32 of them).
    fn enable_msi(&self, vectors: u32) -> Result<Vec<EventFd>> {
        enable_eventfds(self, MSI_IRQ_INDEX, vectors, "enable_msi")
    }
}

/// `vectors` new eventfds connected to vectors `0..vectors` of IRQ `index`, after checking the
/// count against `VFIO_DEVICE_GET_IRQ_INFO`.
fn enable_eventfds<D: VfioDevice + ?Sized>(
    dev: &D,
    index: u32,
    vectors: u32,
    op: &'static str,
) -> Result<Vec<EventFd>> {
    let info = dev.irq_info(index)?;
    if vectors == 0 || vectors > info.count {
        return Err(VfioError::InvalidArgument {
            op,
            reason: format!("{vectors} vectors requested, device has {}", info.count),
        });
    }
    let fds = (0..vectors)
        .map(|_| EventFd::new(dev.sys()))
        .collect::<Result<Vec<_>>>()?;
    let raw: Vec<RawFd> = fds.iter().map(EventFd::raw).collect();
    dev.set_irq_eventfds(index, 0, &raw)?;
    Ok(fds)
}

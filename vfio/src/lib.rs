//! # vfio — the OS boundary for kernel-bypass device access
//!
//! The only crate in the workspace that does VFIO ioctls or maps device memory (STYLE P8).
//!
//! Layers, bottom up:
//! * [`sys`] — the syscall seam: [`Sys`] (one method per system call), [`RealSys`] (the
//!   kernel) and [`FakeSys`] (an in-memory kernel for tests). Every failure is a
//!   [`VfioError`] naming the operation with errno as its source.
//! * [`region`] — region info and capability parsing (sparse mmap), and [`MmioRegion`]: bounds-
//!   checked volatile 32-bit access through a raw pointer, never a reference (STYLE P10).
//! * [`iova`] — [`IovaAllocator`]: first-fit IOVA ranges with coalescing.
//! * [`dma`] — [`DmaMemory`] (memfd, huge pages when present), [`DmaBuffer`] (volatile access,
//!   `unsafe` zero-copy slices for the owner), [`Dma`] (map/unmap bookkeeping), barriers
//!   [`dma_rmb`]/[`dma_wmb`]/[`wmb`].
//! * [`device`] — [`VfioDevice`], the device interface a driver is written against.
//! * [`kernel`] — [`KernelDevice`]: container/group (Type1v2, no-IOMMU) and iommufd/cdev.
//! * [`user`] — [`UserDevice`]: a vfio-user client over a UNIX socket, same interface, and
//!   [`user::server`], a minimal server loop for device models.

//!
//! `unsafe` is allowed only in `sys` (and its `fake`), `region` and `dma`; docs/unsafe.md lists
//! every site with what its proof relies on.
//!
//! ```no_run
//! use std::sync::Arc;
//! use vfio::{Dma, HugePages, IommuMode, KernelDevice, RealSys, VfioDevice, DEFAULT_IOVA_WINDOW};
//! # fn main() -> Result<(), vfio::VfioError> {
//! let dev: Arc<dyn VfioDevice> = Arc::new(KernelDevice::open(RealSys::shared(), "0000:01:00.0", IommuMode::Auto)?);
//! dev.enable_bus_master()?;
//! let bar0 = dev.bar(0)?;
//! let id = bar0.read32(0x000)?;
//! let irqs = dev.enable_msix(4)?;
//! let dma = Dma::new(dev.clone(), DEFAULT_IOVA_WINDOW, HugePages::Auto)?;
//! let ring = dma.alloc(4096)?;
//! bar0.write32(0x1000, ring.iova() as u32)?;
//! # let _ = (id, irqs); Ok(()) }
//! ```

pub mod device;
pub mod dma;
pub mod error;
pub mod iova;
pub mod kernel;
pub mod region;
pub mod sys;
pub mod user;

pub use device::{
    DeviceFlags, DeviceInfo, EventFd, IrqInfo, PciCommand, VfioDevice, CONFIG_REGION,
    MSIX_IRQ_INDEX, MSI_IRQ_INDEX, PCI_COMMAND,
};
pub use dma::{dma_rmb, dma_wmb, wmb, Dma, DmaBuffer, DmaMemory, HugePages, DEFAULT_IOVA_WINDOW};
pub use error::{Result, VfioError};
pub use iova::IovaAllocator;
pub use kernel::{IommuMode, KernelDevice};
pub use region::{MmioRegion, RegionCap, RegionFlags, RegionInfo, RegisterIo, SparseArea};
pub use sys::fake::{FakeState, FakeSys};
pub use sys::{Fd, Mapping, RealSys, Sys};
pub use user::UserDevice;

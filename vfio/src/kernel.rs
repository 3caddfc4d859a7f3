//! Kernel VFIO: open a PCI device through the legacy container/group API (Type1v2 IOMMU or
//! no-IOMMU) or through iommufd + the VFIO device cdev, and implement [`VfioDevice`] on it.
//!
//! Sequences follow Documentation/driver-api/vfio.rst (container/group) and
//! Documentation/userspace-api/iommufd.rst + vfio.rst "VFIO device cdev" (iommufd):
//! * container: open `/dev/vfio/vfio` → `GET_API_VERSION == VFIO_API_VERSION` →
//!   `CHECK_EXTENSION(type)` → open `/dev/vfio/N` → `GROUP_GET_STATUS` has `VIABLE` →
//!   `GROUP_SET_CONTAINER` → `SET_IOMMU(type)` → `GROUP_GET_DEVICE_FD(bdf)`;
//! * no-IOMMU: the same with `VFIO_NOIOMMU_IOMMU` and group node `/dev/vfio/noiommu-N`; DMA
//!   addresses are physical addresses from `/proc/self/pagemap` (needs CAP_SYS_ADMIN) and each
//!   mapped range must be physically contiguous;
//! * iommufd: open `/dev/vfio/devices/vfioX` (from `/sys/bus/pci/devices/BDF/vfio-dev/`) →
//!   open `/dev/iommu` → `VFIO_DEVICE_BIND_IOMMUFD` → `IOMMU_IOAS_ALLOC` →
//!   `VFIO_DEVICE_ATTACH_IOMMUFD_PT(ioas)`; DMA through `IOMMU_IOAS_MAP/UNMAP`.

use std::os::fd::RawFd;
use std::sync::Arc;

use nix::errno::Errno;
use vfio_bindings::bindings::vfio::{
    VFIO_TYPE1v2_IOMMU, VFIO_API_VERSION, VFIO_NOIOMMU_IOMMU, VFIO_PCI_VGA_REGION_INDEX,
};

use crate::device::{DeviceFlags, DeviceInfo, IrqInfo, VfioDevice};
use crate::dma::DmaMemory;
use crate::error::{Result, VfioError};
use crate::region::{MmioRegion, RegionFlags, RegionInfo, RegisterIo, REGION_INFO_LEN};
use crate::sys::{Fd, IrqAction, Sys};

/// Which kernel path to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IommuMode {
    /// iommufd/cdev when `/dev/iommu` and the device cdev exist, else container/group Type1v2,
    /// else (group node `noiommu-N` only) no-IOMMU.
    #[default]
    Auto,
    /// Legacy container/group with `VFIO_TYPE1v2_IOMMU`.
    Type1v2,
    /// iommufd with the VFIO device cdev.
    Iommufd,
    /// Legacy container/group with `VFIO_NOIOMMU_IOMMU` (unsafe for the host: the device can DMA
    /// anywhere; only for hardware without an IOMMU).
    NoIommu,
}

#[derive(Debug)]
enum Backend {
    Container {
        // Held open so the group stays attached; declaration order = drop order: the group
        // leaves the container before the container is closed.
        #[allow(dead_code)]
        group: Fd,
        container: Fd,
        noiommu: bool,
    },
    Iommufd {
        iommufd: Fd,
        ioas: u32,
    },
}

/// A PCI device opened through kernel VFIO.
#[derive(Debug)]
pub struct KernelDevice {
    name: String,
    // Dropped before `backend`: the device fd is closed before its group/iommufd.
    device: Arc<Fd>,
    backend: Backend,
    info: DeviceInfo,
    regions: Vec<RegionInfo>,
    sys: Arc<dyn Sys>,
}

/// Check that `bdf` looks like `DDDD:BB:DD.F` (hex), so it can go into sysfs paths.
pub fn validate_bdf(bdf: &str) -> Result<()> {
    let b = bdf.as_bytes();
    let hex = |r: std::ops::Range<usize>| {
        b.get(r)
            .is_some_and(|s| s.iter().all(u8::is_ascii_hexdigit))
    };
    let ok = b.len() == 12
        && hex(0..4)
        && b[4] == b':'
        && hex(5..7)
        && b[7] == b':'
        && hex(8..10)
        && b[10] == b'.'
        && matches!(b[11], b'0'..=b'7');
    if ok {
        Ok(())
    } else {
        Err(VfioError::DeviceNotFound {
            device: bdf.to_string(),
            reason: "not a PCI address of the form DDDD:BB:DD.F".into(),
        })
    }
}

/// The IOMMU group number of `bdf` (from the sysfs `iommu_group` link).
pub fn iommu_group(sys: &dyn Sys, bdf: &str) -> Result<u32> {
    validate_bdf(bdf)?;
    let link = sys.read_link(&format!("/sys/bus/pci/devices/{bdf}/iommu_group"))?;
    link.rsplit('/')
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| VfioError::DeviceNotFound {
            device: bdf.to_string(),
            reason: format!("iommu_group link {link:?} does not end in a group number"),
        })
}

impl KernelDevice {
    /// Open `bdf` (e.g. `0000:01:00.0`, bound to vfio-pci) using `mode`.
    pub fn open(sys: Arc<dyn Sys>, bdf: &str, mode: IommuMode) -> Result<Self> {
        validate_bdf(bdf)?;
        match mode {
            IommuMode::Type1v2 => Self::open_container(sys, bdf, false),
            IommuMode::NoIommu => Self::open_container(sys, bdf, true),
            IommuMode::Iommufd => Self::open_iommufd(sys, bdf),
            IommuMode::Auto => {
                let cdev = sys
                    .read_dir(&format!("/sys/bus/pci/devices/{bdf}/vfio-dev"))
                    .ok();
                if cdev.is_some_and(|d| !d.is_empty()) {
                    match Self::open_iommufd(sys.clone(), bdf) {
                        Ok(d) => return Ok(d),
                        Err(e) => tracing::debug!(
                            "iommufd path for {bdf} failed ({e}); trying the group path"
                        ),
                    }
                }
                let group = iommu_group(sys.as_ref(), bdf)?;
                let plain = format!("/dev/vfio/{group}");
                match Self::open_container(sys.clone(), bdf, false) {
                    Err(VfioError::Sys {
                        op: "open",
                        target,
                        source: Errno::ENOENT,
                    }) if target == plain => {}
                    Err(VfioError::IommuUnsupported { .. }) => {}
                    r => return r,
                }
                tracing::warn!(
                    "{bdf}: no IOMMU; using VFIO no-IOMMU mode (the device can DMA anywhere)"
                );
                Self::open_container(sys, bdf, true)
            }
        }
    }

    fn open_container(sys: Arc<dyn Sys>, bdf: &str, noiommu: bool) -> Result<Self> {
        let (iommu_type, name) = if noiommu {
            (VFIO_NOIOMMU_IOMMU, "VFIO_NOIOMMU_IOMMU")
        } else {
            (VFIO_TYPE1v2_IOMMU, "VFIO_TYPE1v2_IOMMU")
        };
        let container = Fd::new(sys.clone(), sys.open("/dev/vfio/vfio")?);
        let version = sys.get_api_version(container.raw())?;
        if version != VFIO_API_VERSION as i32 {
            return Err(VfioError::ApiVersion {
                got: version,
                expected: VFIO_API_VERSION as i32,
            });
        }
        if !sys.check_extension(container.raw(), iommu_type)? {
            return Err(VfioError::IommuUnsupported { iommu_type, name });
        }
        let group_no = iommu_group(sys.as_ref(), bdf)?;
        let path = if noiommu {
            format!("/dev/vfio/noiommu-{group_no}")
        } else {
            format!("/dev/vfio/{group_no}")
        };
        let group = Fd::new(sys.clone(), sys.open(&path)?);
        let flags = sys.group_get_status(group.raw())?;
        if flags & vfio_bindings::bindings::vfio::VFIO_GROUP_FLAGS_VIABLE == 0 {
            return Err(VfioError::GroupNotViable { group: path });
        }
        sys.group_set_container(group.raw(), container.raw())?;
        if let Err(e) = sys.set_iommu(container.raw(), iommu_type) {
            let _ = sys.group_unset_container(group.raw());
            return Err(e);
        }
        let device = match sys.group_get_device_fd(group.raw(), bdf) {
            Ok(fd) => Fd::new(sys.clone(), fd),
            Err(e) => {
                let _ = sys.group_unset_container(group.raw());
                return Err(e);
            }
        };
        Self::finish(
            sys,
            bdf,
            device,
            Backend::Container {
                group,
                container,
                noiommu,
            },
        )
    }

    fn open_iommufd(sys: Arc<dyn Sys>, bdf: &str) -> Result<Self> {
        let dir = format!("/sys/bus/pci/devices/{bdf}/vfio-dev");
        let names = sys.read_dir(&dir)?;
        let cdev = names
            .iter()
            .find(|n| n.starts_with("vfio"))
            .ok_or_else(|| VfioError::DeviceNotFound {
                device: bdf.to_string(),
                reason: format!(
                    "no vfioN entry in {dir} (kernel without VFIO cdev, or not bound to vfio-pci)"
                ),
            })?;
        let device = Fd::new(sys.clone(), sys.open(&format!("/dev/vfio/devices/{cdev}"))?);
        let iommufd = Fd::new(sys.clone(), sys.open("/dev/iommu")?);
        sys.device_bind_iommufd(device.raw(), iommufd.raw())?;
        let ioas = sys.ioas_alloc(iommufd.raw())?;
        sys.device_attach_iommufd_pt(device.raw(), ioas)?;
        Self::finish(sys, bdf, device, Backend::Iommufd { iommufd, ioas })
    }

    fn finish(sys: Arc<dyn Sys>, bdf: &str, device: Fd, backend: Backend) -> Result<Self> {
        let raw = sys.device_get_info(device.raw())?;
        let info = DeviceInfo {
            flags: DeviceFlags::from_bits_retain(raw.flags),
            num_regions: raw.num_regions,
            num_irqs: raw.num_irqs,
        };
        let regions = (0..info.num_regions)
            .map(|i| match query_region(sys.as_ref(), device.raw(), i) {
                // vfio-pci counts the VGA region in `num_regions` for every device but answers
                // EINVAL for it unless the device is a VGA device (seen on Linux 6.1): absent.
                Err(VfioError::Sys {
                    source: Errno::EINVAL,
                    ..
                }) if i == VFIO_PCI_VGA_REGION_INDEX => Ok(RegionInfo {
                    index: i,
                    flags: RegionFlags::empty(),
                    size: 0,
                    offset: 0,
                    caps: Vec::new(),
                }),
                r => r,
            })
            .collect::<Result<Vec<_>>>()?;
        tracing::debug!(device = bdf, regions = regions.len(), "VFIO device open");
        Ok(KernelDevice {
            name: bdf.to_string(),
            device: Arc::new(device),
            backend,
            info,
            regions,
            sys,
        })
    }

    /// The PCI address.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Which path is in use.
    pub fn mode(&self) -> IommuMode {
        match self.backend {
            Backend::Container { noiommu: true, .. } => IommuMode::NoIommu,
            Backend::Container { .. } => IommuMode::Type1v2,
            Backend::Iommufd { .. } => IommuMode::Iommufd,
        }
    }

    fn region(&self, index: u32) -> Result<&RegionInfo> {
        self.regions
            .get(index as usize)
            .ok_or(VfioError::NoSuchRegion {
                index,
                count: self.info.num_regions,
            })
    }

    /// Physical address of `len` bytes at `vaddr`, which must be physically contiguous
    /// (no-IOMMU DMA). Reads one pagemap entry per page.
    fn physical(&self, vaddr: u64, len: u64, page: u64) -> Result<u64> {
        let pagemap = Fd::new(self.sys.clone(), self.sys.open("/proc/self/pagemap")?);
        let pages = len.div_ceil(page) as usize;
        let small = 4096u64;
        let mut first = 0u64;
        for i in 0..pages {
            let va = vaddr + i as u64 * page;
            let mut e = [0u8; 8];
            self.sys.pread(pagemap.raw(), &mut e, (va / small) * 8)?;
            let entry = u64::from_ne_bytes(e);
            let pfn = entry & ((1 << 55) - 1);
            if entry & (1 << 63) == 0 || pfn == 0 {
                return Err(VfioError::Sys {
                    op: "pagemap",
                    target: format!("{va:#x} (page not present, or no CAP_SYS_ADMIN)"),
                    source: Errno::EFAULT,
                });
            }
            let pa = pfn * small + va % small;
            if i == 0 {
                first = pa;
            } else if pa != first + i as u64 * page {
                return Err(VfioError::NotContiguous { vaddr, page: i });
            }
        }
        Ok(first)
    }
}

/// `VFIO_DEVICE_GET_REGION_INFO` with a buffer grown to whatever `argsz` the kernel asks for.
pub(crate) fn query_region(sys: &dyn Sys, device: RawFd, index: u32) -> Result<RegionInfo> {
    let mut buf = vec![0u64; 32]; // 256 bytes: enough for the header and a few caps
    for _ in 0..2 {
        sys.device_get_region_info(device, index, &mut buf)?;
        let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let need = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if need <= bytes.len() || need < REGION_INFO_LEN {
            return RegionInfo::parse(index, &bytes);
        }
        if need > 1 << 20 {
            return Err(VfioError::BadCapChain {
                index,
                offset: 0,
                reason: "kernel asked for more than 1 MiB of region info",
            });
        }
        buf = vec![0u64; need.div_ceil(8)];
    }
    Err(VfioError::BadCapChain {
        index,
        offset: 0,
        reason: "region info kept growing",
    })
}

impl VfioDevice for KernelDevice {
    fn sys(&self) -> &Arc<dyn Sys> {
        &self.sys
    }

    fn info(&self) -> DeviceInfo {
        self.info
    }

    fn region_info(&self, index: u32) -> Result<RegionInfo> {
        self.region(index).cloned()
    }

    fn region_read(&self, index: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        let r = self.region(index)?;
        check_range(offset, buf.len(), r.size)?;
        self.sys.pread(self.device.raw(), buf, r.offset + offset)
    }

    fn region_write(&self, index: u32, offset: u64, data: &[u8]) -> Result<()> {
        let r = self.region(index)?;
        check_range(offset, data.len(), r.size)?;
        self.sys.pwrite(self.device.raw(), data, r.offset + offset)
    }

    fn bar(&self, index: u32) -> Result<Arc<dyn RegisterIo>> {
        let r = self.region(index)?.clone();
        let mut windows = Vec::new();
        for area in r.mmap_areas() {
            let len = usize::try_from(area.size).map_err(|_| VfioError::InvalidArgument {
                op: "bar",
                reason: format!("region {index} area of {:#x} bytes", area.size),
            })?;
            let map = self
                .sys
                .mmap(self.device.raw(), r.offset + area.offset, len)?;
            windows.push(MmioRegion::new(Arc::new(map), area.offset)?);
        }
        Ok(Arc::new(KernelRegionIo {
            sys: self.sys.clone(),
            device: self.device.clone(),
            file_offset: r.offset,
            len: r.size,
            windows,
        }))
    }

    fn irq_info(&self, index: u32) -> Result<IrqInfo> {
        let i = self.sys.device_get_irq_info(self.device.raw(), index)?;
        Ok(IrqInfo {
            index: i.index,
            flags: i.flags,
            count: i.count,
        })
    }

    fn set_irq_eventfds(&self, index: u32, start: u32, fds: &[RawFd]) -> Result<()> {
        self.sys
            .device_set_irqs(self.device.raw(), index, start, IrqAction::Eventfds, fds)
    }

    fn disable_irqs(&self, index: u32) -> Result<()> {
        self.sys
            .device_set_irqs(self.device.raw(), index, 0, IrqAction::Disable, &[])
    }

    fn reset(&self) -> Result<()> {
        self.sys.device_reset(self.device.raw())
    }

    fn dma_map(&self, mem: &DmaMemory, offset: u64, len: u64, iova: u64) -> Result<u64> {
        check_range(
            offset,
            usize::try_from(len).unwrap_or(usize::MAX),
            mem.len() as u64,
        )?;
        let vaddr = mem.vaddr() + offset;
        match &self.backend {
            Backend::Container {
                container,
                noiommu: false,
                ..
            } => self
                .sys
                .iommu_map_dma(container.raw(), vaddr, iova, len)
                .map(|()| iova),
            Backend::Container { noiommu: true, .. } => self.physical(vaddr, len, mem.page_size()),
            Backend::Iommufd { iommufd, ioas } => self
                .sys
                .ioas_map(iommufd.raw(), *ioas, vaddr, len, iova)
                .map(|()| iova),
        }
    }

    fn dma_unmap(&self, addr: u64, len: u64) -> Result<()> {
        let unmapped = match &self.backend {
            Backend::Container {
                container,
                noiommu: false,
                ..
            } => self.sys.iommu_unmap_dma(container.raw(), addr, len)?,
            Backend::Container { noiommu: true, .. } => return Ok(()),
            Backend::Iommufd { iommufd, ioas } => {
                self.sys.ioas_unmap(iommufd.raw(), *ioas, addr, len)?
            }
        };
        if unmapped != len {
            return Err(VfioError::NotAllocated { iova: addr, len });
        }
        Ok(())
    }
}

fn check_range(offset: u64, len: usize, size: u64) -> Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(VfioError::OutOfBounds {
            offset,
            width: len,
            len: size,
        }),
    }
}

/// Register access to a kernel VFIO region: mmapped windows where the sparse-mmap capability
/// allows, `pread`/`pwrite` on the device fd for the rest.
#[derive(Debug)]
struct KernelRegionIo {
    sys: Arc<dyn Sys>,
    device: Arc<Fd>,
    file_offset: u64,
    len: u64,
    windows: Vec<MmioRegion>,
}

impl KernelRegionIo {
    fn window(&self, offset: u64) -> Option<&MmioRegion> {
        self.windows
            .iter()
            .find(|w| offset >= w.base() && offset + 4 <= w.base() + w.len() as u64)
    }
    fn check(&self, offset: u64) -> Result<()> {
        if !offset.is_multiple_of(4) || crate::region::exceeds(offset.checked_add(4), self.len) {
            return Err(VfioError::OutOfBounds {
                offset,
                width: 4,
                len: self.len,
            });
        }
        Ok(())
    }
}

impl RegisterIo for KernelRegionIo {
    fn len(&self) -> u64 {
        self.len
    }
    fn read32(&self, offset: u64) -> Result<u32> {
        self.check(offset)?;
        if let Some(w) = self.window(offset) {
            return w.read32(offset - w.base());
        }
        let mut b = [0u8; 4];
        self.sys
            .pread(self.device.raw(), &mut b, self.file_offset + offset)?;
        Ok(u32::from_le_bytes(b))
    }
    fn write32(&self, offset: u64, value: u32) -> Result<()> {
        self.check(offset)?;
        if let Some(w) = self.window(offset) {
            return w.write32(offset - w.base(), value);
        }
        self.sys.pwrite(
            self.device.raw(),
            &value.to_le_bytes(),
            self.file_offset + offset,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{PciCommand, MSIX_IRQ_INDEX, MSI_IRQ_INDEX, PCI_COMMAND};
    use crate::dma::{Dma, HugePages};
    use crate::sys::fake::{sparse_mmap_cap, FakeState, FakeSys, STANDARD_BDF};

    fn fake(st: FakeState) -> (Arc<FakeSys>, Arc<dyn Sys>) {
        let f = FakeSys::new(st);
        let s: Arc<dyn Sys> = f.clone();
        (f, s)
    }

    fn open_std() -> (Arc<FakeSys>, KernelDevice) {
        let (f, s) = fake(FakeState::standard().unwrap());
        let d = KernelDevice::open(s, STANDARD_BDF, IommuMode::Auto).unwrap();
        (f, d)
    }

    #[test]
    fn container_group_sequence_in_order() {
        let (f, d) = open_std();
        assert_eq!(d.mode(), IommuMode::Type1v2);
        assert_eq!(d.info().num_regions, 9);
        assert!(d.info().flags.contains(DeviceFlags::PCI));
        let calls = f.with(|s| s.calls.clone());
        let want = [
            "VFIO_GET_API_VERSION",
            "VFIO_CHECK_EXTENSION",
            "readlink",
            "open",
            "VFIO_GROUP_GET_STATUS",
            "VFIO_GROUP_SET_CONTAINER",
            "VFIO_SET_IOMMU",
            "VFIO_GROUP_GET_DEVICE_FD",
            "VFIO_DEVICE_GET_INFO",
        ];
        let mut it = calls.iter();
        for w in want {
            assert!(
                it.any(|c| c == w),
                "{w} missing or out of order in {calls:?}"
            );
        }
        let bar0 = d.region_info(0).unwrap();
        assert_eq!(bar0.size, 0x2_0000);
        assert_eq!(bar0.mmap_areas().len(), 1);
        assert_eq!(d.region_info(1).unwrap().size, 0);
        assert!(matches!(
            d.region_info(9),
            Err(VfioError::NoSuchRegion { index: 9, count: 9 })
        ));
        drop(d);
        assert_eq!(f.with(|s| s.open_fds()), 0, "every fd closed");
    }

    fn open_err(st: FakeState, mode: IommuMode) -> (Arc<FakeSys>, VfioError) {
        let (f, s) = fake(st);
        let e = KernelDevice::open(s, STANDARD_BDF, mode).unwrap_err();
        assert_eq!(f.with(|s| s.open_fds()), 0, "no fd leaked on error: {e}");
        (f, e)
    }

    #[test]
    fn open_errors_name_the_operation_and_keep_errno() {
        let mut st = FakeState::standard().unwrap();
        st.fail.insert("open", Errno::EACCES);
        let (_, e) = open_err(st, IommuMode::Type1v2);
        assert_eq!(e.errno(), Some(Errno::EACCES));
        assert!(e.to_string().contains("open on /dev/vfio/vfio"), "{e}");
        assert!(std::error::Error::source(&e).is_some());

        let mut st = FakeState::standard().unwrap();
        st.api_version = 1;
        let (_, e) = open_err(st, IommuMode::Type1v2);
        assert!(
            matches!(
                e,
                VfioError::ApiVersion {
                    got: 1,
                    expected: 0
                }
            ),
            "{e}"
        );

        let mut st = FakeState::standard().unwrap();
        st.extensions.clear();
        let (_, e) = open_err(st, IommuMode::Type1v2);
        assert!(
            matches!(e, VfioError::IommuUnsupported { iommu_type: 3, .. }),
            "{e}"
        );

        let mut st = FakeState::standard().unwrap();
        st.groups.insert("/dev/vfio/7".into(), (0, vec![0]));
        let (_, e) = open_err(st, IommuMode::Type1v2);
        assert!(
            matches!(&e, VfioError::GroupNotViable { group } if group == "/dev/vfio/7"),
            "{e}"
        );

        let mut st = FakeState::standard().unwrap();
        st.fail.insert("VFIO_GROUP_GET_DEVICE_FD", Errno::ENODEV);
        let (f, e) = open_err(st, IommuMode::Type1v2);
        assert!(
            matches!(
                e,
                VfioError::Sys {
                    op: "VFIO_GROUP_GET_DEVICE_FD",
                    source: Errno::ENODEV,
                    ..
                }
            ),
            "{e}"
        );
        assert!(f.with(|s| s.calls.contains(&"VFIO_GROUP_UNSET_CONTAINER".to_string())));

        let mut st = FakeState::standard().unwrap();
        st.fail.insert("VFIO_SET_IOMMU", Errno::EBUSY);
        let (_, e) = open_err(st, IommuMode::Type1v2);
        assert_eq!(e.errno(), Some(Errno::EBUSY));

        let mut st = FakeState::standard().unwrap();
        st.links.clear();
        let (_, e) = open_err(st, IommuMode::Type1v2);
        assert!(
            matches!(
                e,
                VfioError::Sys {
                    op: "readlink",
                    source: Errno::ENOENT,
                    ..
                }
            ),
            "{e}"
        );

        let mut st = FakeState::standard().unwrap();
        st.fail.insert("VFIO_DEVICE_GET_REGION_INFO", Errno::EIO);
        let (_, e) = open_err(st, IommuMode::Type1v2);
        assert!(
            matches!(
                e,
                VfioError::Sys {
                    op: "VFIO_DEVICE_GET_REGION_INFO",
                    ..
                }
            ),
            "{e}"
        );

        let (_, e) = open_err(FakeState::standard().unwrap(), IommuMode::Iommufd);
        assert!(matches!(e, VfioError::Sys { op: "read_dir", .. }), "{e}");
    }

    #[test]
    fn an_absent_vga_region_is_empty_but_other_refused_regions_fail_the_open() {
        // The standard device's VGA index answers EINVAL, as vfio-pci does for non-VGA devices.
        let (_, d) = open_std();
        let vga = d.region_info(VFIO_PCI_VGA_REGION_INDEX).unwrap();
        assert_eq!((vga.size, vga.flags), (0, RegionFlags::empty()));
        assert!(vga.mmap_areas().is_empty());
        // Any other region refusing is a real error, named.
        let mut st = FakeState::standard().unwrap();
        st.devices[0].regions[2] = crate::sys::fake::FakeRegion::refused();
        let (_, e) = open_err(st, IommuMode::Type1v2);
        assert!(
            matches!(
                &e,
                VfioError::Sys {
                    op: "VFIO_DEVICE_GET_REGION_INFO",
                    source: Errno::EINVAL,
                    target,
                } if target == "region 2"
            ),
            "{e}"
        );
    }

    #[test]
    fn group_in_use_is_busy() {
        let (f, s) = fake(FakeState::standard().unwrap());
        let _d = KernelDevice::open(s.clone(), STANDARD_BDF, IommuMode::Type1v2).unwrap();
        let e = KernelDevice::open(s, STANDARD_BDF, IommuMode::Type1v2).unwrap_err();
        assert_eq!(e.errno(), Some(Errno::EBUSY));
        assert!(f.with(|s| s.open_fds()) > 0);
    }

    #[test]
    fn bad_addresses_are_refused_before_any_syscall() {
        for bdf in [
            "",
            "01:00.0",
            "0000:01:00.8",
            "0000:01:00.0/../x",
            "zzzz:01:00.0",
        ] {
            let (f, s) = fake(FakeState::standard().unwrap());
            let e = KernelDevice::open(s, bdf, IommuMode::Auto).unwrap_err();
            assert!(matches!(e, VfioError::DeviceNotFound { .. }), "{bdf}: {e}");
            assert!(f.with(|s| s.calls.is_empty()));
        }
    }

    fn noiommu_state() -> FakeState {
        let mut st = FakeState::standard().unwrap();
        let g = st.groups.remove("/dev/vfio/7").unwrap();
        st.groups.insert("/dev/vfio/noiommu-7".into(), g);
        st.extensions = vec![VFIO_NOIOMMU_IOMMU];
        st
    }

    #[test]
    fn auto_falls_back_to_noiommu_and_maps_physical_addresses() {
        let (f, s) = fake(noiommu_state());
        let d: Arc<dyn VfioDevice> =
            Arc::new(KernelDevice::open(s, STANDARD_BDF, IommuMode::Auto).unwrap());
        let dma = Dma::new(d.clone(), (0x1000_0000, 0x2000_0000), HugePages::Never).unwrap();
        let buf = dma.alloc(8192).unwrap();
        // The fake pagemap says pfn = page + 0x1000.
        let vaddr = buf.memory().vaddr();
        assert_eq!(buf.iova(), (vaddr / 4096 + 0x1000) * 4096);
        assert!(
            f.with(|s| s.dma.is_empty()),
            "no IOMMU map in no-IOMMU mode"
        );
        dma.free(&buf).unwrap();

        f.with(|s| s.scramble_pagemap = true);
        let e = dma.alloc(8192).unwrap_err();
        assert!(matches!(e, VfioError::NotContiguous { page: 1, .. }), "{e}");
        assert!(
            dma.alloc(4096).is_ok(),
            "a single page is always contiguous"
        );
    }

    #[test]
    fn noiommu_explicit_needs_the_extension() {
        let mut st = noiommu_state();
        st.extensions = vec![VFIO_TYPE1v2_IOMMU];
        let (_, e) = open_err(st, IommuMode::NoIommu);
        assert!(
            matches!(e, VfioError::IommuUnsupported { iommu_type: 8, .. }),
            "{e}"
        );
    }

    fn iommufd_state() -> FakeState {
        let mut st = FakeState::standard().unwrap();
        st.iommufd = true;
        st.cdevs.insert("/dev/vfio/devices/vfio3".into(), 0);
        st.dirs.insert(
            format!("/sys/bus/pci/devices/{STANDARD_BDF}/vfio-dev"),
            vec!["vfio3".into()],
        );
        st
    }

    #[test]
    fn iommufd_path_binds_attaches_and_maps() {
        let (f, s) = fake(iommufd_state());
        let d: Arc<dyn VfioDevice> =
            Arc::new(KernelDevice::open(s, STANDARD_BDF, IommuMode::Auto).unwrap());
        let calls = f.with(|s| s.calls.clone());
        let pos = |c: &str| calls.iter().position(|x| x == c).unwrap();
        assert!(pos("VFIO_DEVICE_BIND_IOMMUFD") < pos("IOMMU_IOAS_ALLOC"));
        assert!(pos("IOMMU_IOAS_ALLOC") < pos("VFIO_DEVICE_ATTACH_IOMMUFD_PT"));
        assert!(
            !calls.iter().any(|c| c == "VFIO_GET_API_VERSION"),
            "no container on this path"
        );
        let dma = Dma::new(d.clone(), (0x10_0000, 0x20_0000), HugePages::Never).unwrap();
        let b = dma.alloc(100).unwrap();
        assert_eq!(
            f.with(|s| s.dma.get(&b.iova()).copied()),
            Some((b.memory().vaddr(), 4096))
        );
        dma.free(&b).unwrap();
        assert!(f.with(|s| s.dma.is_empty()));
        drop(b);
        drop(dma);
        drop(d);
        assert_eq!(f.with(|s| s.open_fds()), 0);
    }

    #[test]
    fn iommufd_failure_in_auto_falls_back_to_the_group() {
        let mut st = iommufd_state();
        st.fail.insert("VFIO_DEVICE_BIND_IOMMUFD", Errno::EPERM);
        let (_, s) = fake(st);
        let d = KernelDevice::open(s, STANDARD_BDF, IommuMode::Auto).unwrap();
        assert_eq!(d.mode(), IommuMode::Type1v2);
    }

    #[test]
    fn config_space_and_bus_master() {
        let (_, d) = open_std();
        assert_eq!(d.config_read16(0).unwrap(), 0x1DED);
        assert_eq!(d.config_read16(2).unwrap(), 0xA501);
        d.config_write16(PCI_COMMAND, PciCommand::INTX_DISABLE.bits())
            .unwrap();
        let cmd = d.enable_bus_master().unwrap();
        assert_eq!(
            cmd,
            PciCommand::INTX_DISABLE | PciCommand::MEMORY | PciCommand::BUS_MASTER
        );
        assert_eq!(d.config_read16(PCI_COMMAND).unwrap(), cmd.bits());
        d.disable_bus_master().unwrap();
        assert_eq!(
            d.config_read16(PCI_COMMAND).unwrap(),
            (PciCommand::INTX_DISABLE | PciCommand::MEMORY).bits()
        );
        let mut b = [0u8; 4];
        assert!(matches!(
            d.read_config(254, &mut b),
            Err(VfioError::OutOfBounds {
                offset: 254,
                width: 4,
                len: 256
            })
        ));
        assert!(matches!(
            d.region_read(12, 0, &mut b),
            Err(VfioError::NoSuchRegion { .. })
        ));
    }

    #[test]
    fn bar_uses_mmap_windows_and_falls_back_to_pread_outside_them() {
        let mut st = FakeState::standard().unwrap();
        st.devices[0].regions[0].caps = sparse_mmap_cap(&[(0, 0x1000), (0x1_0000, 0x1_0000)], 0);
        let (f, s) = fake(st);
        let d = KernelDevice::open(s, STANDARD_BDF, IommuMode::Type1v2).unwrap();
        let bar = d.bar(0).unwrap();
        assert_eq!(bar.len(), 0x2_0000);
        let preads = || {
            f.with(|s| {
                s.calls
                    .iter()
                    .filter(|c| *c == "pread" || *c == "pwrite")
                    .count()
            })
        };
        let before = preads();
        bar.write32(0x18, 0xCAFE_F00D).unwrap(); // window 0
        bar.write32(0x1_0100, 7).unwrap(); // window 1
        assert_eq!(preads(), before, "mmapped windows need no syscalls");
        bar.write32(0x1800, 0x1234_5678).unwrap(); // outside: pwrite
        assert_eq!(bar.read32(0x1800).unwrap(), 0x1234_5678);
        assert_eq!(preads(), before + 2);
        // Same bytes through both paths.
        let mut b = [0u8; 4];
        d.region_read(0, 0x18, &mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), 0xCAFE_F00D);
        d.region_read(0, 0x1_0100, &mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), 7);
        assert!(bar.read32(0x2_0000).is_err());
        assert!(bar.read32(0x1802).is_err());
        assert_eq!(
            f.with(|s| s.calls.iter().filter(|c| *c == "mmap").count()),
            2
        );
    }

    #[test]
    fn non_mmappable_bar_goes_through_pread_pwrite() {
        let (f, d) = open_std();
        let bar2 = d.bar(2).unwrap();
        bar2.write32(0x10, 0x55AA_55AA).unwrap();
        assert_eq!(bar2.read32(0x10).unwrap(), 0x55AA_55AA);
        let calls = f.with(|s| s.calls.clone());
        assert!(!calls.iter().any(|c| c == "mmap"), "{calls:?}");
        assert!(calls.iter().any(|c| c == "pwrite") && calls.iter().any(|c| c == "pread"));
        // An absent BAR has no registers at all.
        assert!(matches!(
            d.bar(1).unwrap().read32(0),
            Err(VfioError::OutOfBounds { len: 0, .. })
        ));
        // A failing pread keeps its errno.
        f.with(|s| s.fail.insert("pread", Errno::EIO));
        assert!(matches!(
            bar2.read32(0),
            Err(VfioError::Sys {
                op: "pread",
                source: Errno::EIO,
                ..
            })
        ));
    }

    #[test]
    fn auto_uses_noiommu_when_only_the_noiommu_group_node_exists() {
        let mut st = noiommu_state();
        st.extensions = vec![VFIO_TYPE1v2_IOMMU, VFIO_NOIOMMU_IOMMU];
        let (f, s) = fake(st);
        let d = KernelDevice::open(s, STANDARD_BDF, IommuMode::Auto).unwrap();
        assert_eq!(d.mode(), IommuMode::NoIommu);
        drop(d);
        assert_eq!(f.with(|s| s.open_fds()), 0);
    }

    #[test]
    fn msix_eventfds() {
        let (f, d) = open_std();
        let fds = d.enable_msix(4).unwrap();
        let connected = f.with(|s| s.irq_fds.get(&MSIX_IRQ_INDEX).cloned()).unwrap();
        assert_eq!(connected, fds.iter().map(|e| e.raw()).collect::<Vec<_>>());
        assert!(f.trigger_irq(MSIX_IRQ_INDEX, 2));
        assert!(f.trigger_irq(MSIX_IRQ_INDEX, 2));
        assert_eq!(fds[2].take().unwrap(), Some(2));
        assert_eq!(fds[2].take().unwrap(), None);
        assert_eq!(fds[0].take().unwrap(), None);
        assert!(f.trigger_irq(MSIX_IRQ_INDEX, 0));
        assert_eq!(
            fds[0].wait(std::time::Duration::from_millis(1)).unwrap(),
            Some(1)
        );
        assert!(matches!(
            d.enable_msix(5),
            Err(VfioError::InvalidArgument { .. })
        ));
        assert!(matches!(
            d.enable_msix(0),
            Err(VfioError::InvalidArgument { .. })
        ));
        d.disable_irqs(MSIX_IRQ_INDEX).unwrap();
        assert!(!f.trigger_irq(MSIX_IRQ_INDEX, 0));
        f.with(|s| s.fail.insert("VFIO_DEVICE_SET_IRQS", Errno::EINVAL));
        let e = d.enable_msix(1).unwrap_err();
        assert!(
            matches!(
                e,
                VfioError::Sys {
                    op: "VFIO_DEVICE_SET_IRQS",
                    source: Errno::EINVAL,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn msi_eventfds() {
        let (f, d) = open_std();
        // The standard fake device has one MSI vector (index 1), like QEMU's edu.
        let fds = d.enable_msi(1).unwrap();
        let connected = f.with(|s| s.irq_fds.get(&MSI_IRQ_INDEX).cloned()).unwrap();
        assert_eq!(connected, vec![fds[0].raw()]);
        assert!(
            f.with(|s| !s.irq_fds.contains_key(&MSIX_IRQ_INDEX)),
            "MSI-X untouched"
        );
        assert!(f.trigger_irq(MSI_IRQ_INDEX, 0));
        assert_eq!(
            fds[0].wait(std::time::Duration::from_millis(1)).unwrap(),
            Some(1)
        );
        let e = d.enable_msi(2).unwrap_err();
        assert!(
            matches!(
                e,
                VfioError::InvalidArgument {
                    op: "enable_msi",
                    ..
                }
            ),
            "{e}"
        );
        d.disable_irqs(MSI_IRQ_INDEX).unwrap();
        assert!(!f.trigger_irq(MSI_IRQ_INDEX, 0));
    }

    #[test]
    fn reset_goes_to_the_device() {
        let (f, d) = open_std();
        d.reset().unwrap();
        assert_eq!(f.with(|s| s.resets), 1);
    }

    #[test]
    fn dma_bookkeeping() {
        let (f, s) = fake(FakeState::standard().unwrap());
        let d: Arc<dyn VfioDevice> =
            Arc::new(KernelDevice::open(s, STANDARD_BDF, IommuMode::Type1v2).unwrap());
        let dma = Dma::new(
            d.clone(),
            (0x10_0000, 0x10_0000 + 5 * 4096),
            HugePages::Never,
        )
        .unwrap();
        let a = dma.alloc(4096).unwrap();
        let b = dma.alloc(4097).unwrap(); // two pages
        let c = dma.alloc(1).unwrap();
        assert_eq!(
            dma.mappings(),
            vec![(a.iova(), 4096), (b.iova(), 8192), (c.iova(), 4096)]
        );
        let kernel = f.with(|s| s.dma.clone());
        assert_eq!(kernel.len(), 3);
        assert_eq!(kernel[&b.iova()], (b.memory().vaddr(), 8192));
        assert_eq!(b.len(), 4097);
        // Window full (5 pages used... 4 used, 1 left): a 2-page request fails, IOVA untouched.
        let e = dma.alloc(8192).unwrap_err();
        assert!(
            matches!(
                e,
                VfioError::IovaExhausted {
                    largest_free: 4096,
                    ..
                }
            ),
            "{e}"
        );
        // A failing MAP_DMA gives the IOVA back.
        f.with(|s| s.fail.insert("VFIO_IOMMU_MAP_DMA", Errno::ENOMEM));
        let free = dma.iova_free();
        assert_eq!(dma.alloc(10).unwrap_err().errno(), Some(Errno::ENOMEM));
        assert_eq!(dma.iova_free(), free);
        f.with(|s| s.fail.clear());
        // Free: unmapped in the kernel; a second free and a sub-slice free are refused.
        dma.free(&b).unwrap();
        assert!(!f.with(|s| s.dma.contains_key(&b.iova())));
        assert!(matches!(dma.free(&b), Err(VfioError::NotAllocated { .. })));
        assert!(matches!(
            dma.free(&a.slice(0, 8).unwrap().slice(4, 4).unwrap()),
            Err(VfioError::NotAllocated { .. })
        ));
        // The freed 2 pages can be reused.
        let b2 = dma.alloc(8192).unwrap();
        assert_eq!(b2.iova(), b.iova());
        // Dropping the bookkeeping unmaps the rest.
        drop(dma);
        assert!(f.with(|s| s.dma.is_empty()));
        // The memory itself outlives the mapping as long as a handle exists.
        a.write32(0, 5).unwrap();
        assert_eq!(a.read32(0).unwrap(), 5);
    }

    #[test]
    fn huge_pages_when_present() {
        let mut st = FakeState::standard().unwrap();
        st.hugetlb = true;
        st.text_files.insert(
            "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages".into(),
            "2\n".into(),
        );
        let (f, s) = fake(st);
        let m = crate::dma::DmaMemory::new(&s, 3 << 20, HugePages::Auto).unwrap();
        assert!(m.is_huge());
        assert_eq!(m.len(), 4 << 20);
        // Not enough free pages: 4 KiB pages.
        let m = crate::dma::DmaMemory::new(&s, 6 << 20, HugePages::Auto).unwrap();
        assert!(!m.is_huge());
        // Small allocations never use huge pages.
        assert!(!crate::dma::DmaMemory::new(&s, 4096, HugePages::Auto)
            .unwrap()
            .is_huge());
        // hugetlbfs refuses (pool empty at memfd time): Auto falls back, Require fails.
        f.with(|s| s.hugetlb = false);
        assert!(!crate::dma::DmaMemory::new(&s, 2 << 20, HugePages::Auto)
            .unwrap()
            .is_huge());
        let e = crate::dma::DmaMemory::new(&s, 2 << 20, HugePages::Require).unwrap_err();
        assert!(
            matches!(
                e,
                VfioError::Sys {
                    op: "memfd_create",
                    ..
                }
            ),
            "{e}"
        );
        assert!(crate::dma::DmaMemory::new(&s, 0, HugePages::Never).is_err());
    }

    #[test]
    fn unmap_of_a_different_size_is_an_error() {
        let (_, d) = open_std();
        let mem = crate::dma::DmaMemory::new(d.sys(), 8192, HugePages::Never).unwrap();
        d.dma_map(&mem, 0, 8192, 0x10_0000).unwrap();
        let e = d.dma_map(&mem, 0, 4096, 0x10_1000).unwrap_err();
        assert_eq!(
            e.errno(),
            Some(Errno::EEXIST),
            "overlap refused like the kernel"
        );
        assert!(matches!(
            d.dma_map(&mem, 4096, 8192, 0x20_0000),
            Err(VfioError::OutOfBounds { .. })
        ));
        // Half of a mapping: Type1v2 refuses (EINVAL, as on Linux 6.1) and keeps it mapped.
        let e = d.dma_unmap(0x10_0000, 4096).unwrap_err();
        assert!(
            matches!(
                e,
                VfioError::Sys {
                    op: "VFIO_IOMMU_UNMAP_DMA",
                    source: Errno::EINVAL,
                    ..
                }
            ),
            "{e}"
        );
        let e = d.dma_unmap(0x0F_F000, 8192).unwrap_err();
        assert_eq!(e.errno(), Some(Errno::EINVAL), "cuts the start: {e}");
        // A range with no mapping at all unmaps nothing, which the crate reports.
        assert!(matches!(
            d.dma_unmap(0x30_0000, 4096),
            Err(VfioError::NotAllocated { .. })
        ));
        d.dma_unmap(0x10_0000, 8192).unwrap();
    }
}

//! [`FakeSys`]: an in-memory kernel behind the [`Sys`] seam.
//!
//! It models what this crate relies on and nothing more: `/dev/vfio/vfio` containers with an API
//! version and extensions, groups with a viability flag, devices with regions (backed by heap
//! memory, so `pread`/`pwrite` and `mmap` see the same bytes), capability chains supplied as raw
//! bytes, IRQ indexes, the IOMMU map (checked for overlaps like the kernel does), iommufd IOASes,
//! eventfds, memfds, `/proc/self/pagemap` and a few sysfs links/dirs. Any operation can be made
//! to fail with a chosen errno ([`FakeState::fail`]); every call is logged ([`FakeState::calls`]);
//! open descriptors are counted so tests can check that nothing leaks.
//!
//! It is public (not `#[cfg(test)]`) so that `hca-driver` tests can use it too.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

use nix::errno::Errno;
use vfio_bindings::bindings::vfio::{
    vfio_device_info, vfio_irq_info, VFIO_TYPE1v2_IOMMU, VFIO_DEVICE_FLAGS_PCI,
    VFIO_DEVICE_FLAGS_RESET, VFIO_GROUP_FLAGS_CONTAINER_SET, VFIO_GROUP_FLAGS_VIABLE,
    VFIO_IRQ_INFO_EVENTFD, VFIO_REGION_INFO_CAP_SPARSE_MMAP, VFIO_REGION_INFO_FLAG_CAPS,
    VFIO_REGION_INFO_FLAG_MMAP, VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};

use super::{fail, IrqAction, Mapping, Sys};
use crate::error::Result;

/// A zeroed, page-aligned heap block standing in for device or memfd memory.
pub struct FakeMem {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: `FakeMem` owns its allocation exclusively (freed once, in `Drop`); the pointer is only
// used for raw copies and volatile accesses, like device memory shared with another agent.
unsafe impl Send for FakeMem {}
// SAFETY: as for `Send`; `&FakeMem` only hands out the address.
unsafe impl Sync for FakeMem {}

impl FakeMem {
    /// Allocate `len` zeroed bytes (at least one page, page aligned).
    pub fn new(len: usize) -> Result<Arc<Self>> {
        let layout = Layout::from_size_align(len.max(4096), 4096)
            .map_err(|_| fail("alloc", "fake memory", Errno::ENOMEM))?;
        // SAFETY: `alloc_zeroed` requires "layout must have non-zero size"; it is ≥ 4096.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| fail("alloc", "fake memory", Errno::ENOMEM))?;
        Ok(Arc::new(FakeMem { ptr, layout }))
    }
    /// Start address.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }
    /// Usable length.
    pub fn len(&self) -> usize {
        self.layout.size()
    }
    /// Never true (at least one page).
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Copy out `buf.len()` bytes at `off` (bounds-checked).
    pub fn read(&self, off: usize, buf: &mut [u8]) -> Result<()> {
        self.check(off, buf.len())?;
        let src = self.ptr.as_ptr().wrapping_add(off);
        // SAFETY: `copy_nonoverlapping` needs "src valid for reads of count bytes, dst valid for
        // writes of count bytes, nonoverlapping": `off + len ≤ self.len()` was checked, `buf` is
        // a distinct exclusively borrowed Rust slice, u8 has alignment 1.
        unsafe { std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }
    /// Copy `data` in at `off` (bounds-checked).
    pub fn write(&self, off: usize, data: &[u8]) -> Result<()> {
        self.check(off, data.len())?;
        let dst = self.ptr.as_ptr().wrapping_add(off);
        // SAFETY: as in `read`, with the roles swapped: `dst` has `data.len()` writable bytes
        // inside the allocation; `data` is a distinct borrowed slice.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }
    fn check(&self, off: usize, len: usize) -> Result<()> {
        match off.checked_add(len) {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(fail(
                "fake access",
                format!("{off:#x}+{len:#x}"),
                Errno::EFAULT,
            )),
        }
    }
}

impl Drop for FakeMem {
    fn drop(&mut self) {
        // SAFETY: `dealloc` requires "ptr allocated by this allocator with the same layout";
        // `ptr` came from `alloc_zeroed(self.layout)` and is freed only here.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

impl std::fmt::Debug for FakeMem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FakeMem({:#x} bytes)", self.len())
    }
}

/// One region of a fake device. Its file offset is `index << 40`, like vfio-pci.
#[derive(Debug, Clone)]
pub struct FakeRegion {
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: u32,
    /// Size in bytes (0 = not implemented).
    pub size: u64,
    /// Raw capability chain, `next` offsets counted from the start of `vfio_region_info`
    /// (so the first capability sits at 32); see [`sparse_mmap_cap`].
    pub caps: Vec<u8>,
    /// Backing store for `pread`/`pwrite`/`mmap` (None when `size` is 0).
    pub mem: Option<Arc<FakeMem>>,
    /// `VFIO_DEVICE_GET_REGION_INFO` fails with `EINVAL`, as vfio-pci answers for the VGA
    /// region of a device that is not a VGA device.
    pub einval: bool,
}

impl FakeRegion {
    /// A region of `size` bytes with `flags`, zero-filled.
    pub fn new(flags: u32, size: u64) -> Result<Self> {
        let mem = if size > 0 {
            let len =
                usize::try_from(size).map_err(|_| fail("alloc", "fake region", Errno::ENOMEM))?;
            Some(FakeMem::new(len)?)
        } else {
            None
        };
        Ok(FakeRegion {
            flags,
            size,
            caps: Vec::new(),
            mem,
            einval: false,
        })
    }

    /// A region index the kernel refuses with `EINVAL` (see [`FakeRegion::einval`]).
    pub fn refused() -> Self {
        FakeRegion {
            flags: 0,
            size: 0,
            caps: Vec::new(),
            mem: None,
            einval: true,
        }
    }
}

/// A fake VFIO device.
#[derive(Debug, Clone)]
pub struct FakeDevice {
    /// Its name (`VFIO_GROUP_GET_DEVICE_FD` argument): the PCI address.
    pub name: String,
    /// `VFIO_DEVICE_FLAGS_*`.
    pub flags: u32,
    /// Regions by index.
    pub regions: Vec<FakeRegion>,
    /// IRQ indexes: `count` per index.
    pub irq_counts: Vec<u32>,
}

#[derive(Debug)]
enum File {
    Container {
        iommu: Option<u32>,
    },
    Group {
        path: String,
        container: Option<RawFd>,
    },
    Device {
        dev: usize,
    },
    Iommufd,
    EventFd {
        count: u64,
    },
    Memfd {
        mem: Option<Arc<FakeMem>>,
        huge: bool,
    },
    Pagemap,
}

/// The fake kernel's state; tests configure it before use and inspect it afterwards.
#[derive(Debug)]
pub struct FakeState {
    /// What `VFIO_GET_API_VERSION` returns.
    pub api_version: i32,
    /// Extensions `VFIO_CHECK_EXTENSION` reports.
    pub extensions: Vec<u32>,
    /// Group device nodes (`/dev/vfio/7`, `/dev/vfio/noiommu-0`) → group flags (without
    /// `CONTAINER_SET`, which the fake tracks) and the devices in that group.
    pub groups: BTreeMap<String, (u32, Vec<usize>)>,
    /// Devices; groups and cdevs refer to them by index.
    pub devices: Vec<FakeDevice>,
    /// cdev nodes (`/dev/vfio/devices/vfio0`) → device index.
    pub cdevs: BTreeMap<String, usize>,
    /// Whether `/dev/iommu` can be opened.
    pub iommufd: bool,
    /// Symlinks for `readlink`.
    pub links: BTreeMap<String, String>,
    /// Directories for `read_dir`.
    pub dirs: BTreeMap<String, Vec<String>>,
    /// Text files for `read_file`.
    pub text_files: BTreeMap<String, String>,
    /// Operation name (as in `VfioError::Sys::op`) → errno to fail it with.
    pub fail: BTreeMap<&'static str, Errno>,
    /// The IOMMU map (both paths): IOVA → (vaddr, size).
    pub dma: BTreeMap<u64, (u64, u64)>,
    /// Eventfds connected per IRQ index (index → fds by vector, -1 = none).
    pub irq_fds: BTreeMap<u32, Vec<RawFd>>,
    /// Whether `MFD_HUGETLB` memfds work.
    pub hugetlb: bool,
    /// `/proc/self/pagemap`: when true, each page's frame number is scrambled so no two
    /// consecutive virtual pages are physically adjacent.
    pub scramble_pagemap: bool,
    /// Every call, in order (operation names).
    pub calls: Vec<String>,
    /// How many `VFIO_DEVICE_RESET`s were done.
    pub resets: u32,
    files: BTreeMap<RawFd, File>,
    next_fd: RawFd,
    next_ioas: u32,
}

impl Default for FakeState {
    fn default() -> Self {
        FakeState {
            api_version: 0,
            extensions: vec![VFIO_TYPE1v2_IOMMU],
            groups: BTreeMap::new(),
            devices: Vec::new(),
            cdevs: BTreeMap::new(),
            iommufd: false,
            links: BTreeMap::new(),
            dirs: BTreeMap::new(),
            text_files: BTreeMap::new(),
            fail: BTreeMap::new(),
            dma: BTreeMap::new(),
            irq_fds: BTreeMap::new(),
            hugetlb: false,
            scramble_pagemap: false,
            calls: Vec::new(),
            resets: 0,
            files: BTreeMap::new(),
            next_fd: 100,
            next_ioas: 1,
        }
    }
}

/// The PCI address of the device in [`FakeState::standard`].
pub const STANDARD_BDF: &str = "0000:01:00.0";

impl FakeState {
    /// One RA-1-like device at [`STANDARD_BDF`] in IOMMU group 7 (viable), Type1v2 supported:
    /// BAR0 128 KiB read/write/mmap with a sparse-mmap capability covering it, BAR2 4 KiB
    /// read/write without mmap (MSI-X table), BAR1/3/4/5 and ROM absent, config space 256 bytes
    /// (vendor/device `0x1DED:0xA501`), no VGA region (its index answers `EINVAL`, like
    /// vfio-pci), MSI-X index with 4 vectors. The sysfs `iommu_group` link is in place.
    pub fn standard() -> Result<Self> {
        let mut st = FakeState::default();
        let rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
        let mut regions = Vec::new();
        let mut bar0 = FakeRegion::new(
            rw | VFIO_REGION_INFO_FLAG_MMAP | VFIO_REGION_INFO_FLAG_CAPS,
            0x2_0000,
        )?;
        bar0.caps = sparse_mmap_cap(&[(0, 0x2_0000)], 0);
        regions.push(bar0);
        regions.push(FakeRegion::new(0, 0)?); // upper half of the 64-bit BAR0
        regions.push(FakeRegion::new(rw, 0x1000)?); // BAR2: MSI-X table, not mmappable
        for _ in 3..=6 {
            regions.push(FakeRegion::new(0, 0)?);
        }
        let cfg = FakeRegion::new(rw, 256)?;
        if let Some(mem) = &cfg.mem {
            mem.write(0, &[0xED, 0x1D, 0x01, 0xA5])?;
        }
        regions.push(cfg);
        regions.push(FakeRegion::refused()); // VGA: vfio-pci says EINVAL for a non-VGA device
        st.devices.push(FakeDevice {
            name: STANDARD_BDF.to_string(),
            flags: VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET,
            regions,
            irq_counts: vec![1, 1, 4, 1, 1],
        });
        st.groups
            .insert("/dev/vfio/7".into(), (VFIO_GROUP_FLAGS_VIABLE, vec![0]));
        st.links.insert(
            format!("/sys/bus/pci/devices/{STANDARD_BDF}/iommu_group"),
            "../../../../kernel/iommu_groups/7".into(),
        );
        Ok(st)
    }

    /// Open descriptors (for leak checks).
    pub fn open_fds(&self) -> usize {
        self.files.len()
    }

    fn add(&mut self, f: File) -> RawFd {
        let fd = self.next_fd;
        self.next_fd += 1;
        self.files.insert(fd, f);
        fd
    }

    fn check_fail(&mut self, op: &'static str, target: impl Into<String>) -> Result<()> {
        self.calls.push(op.to_string());
        match self.fail.get(op) {
            Some(e) => Err(fail(op, target, *e)),
            None => Ok(()),
        }
    }

    fn device(&self, fd: RawFd, op: &'static str) -> Result<&FakeDevice> {
        match self.files.get(&fd) {
            Some(File::Device { dev }) => self
                .devices
                .get(*dev)
                .ok_or_else(|| fail(op, "fake", Errno::ENODEV)),
            _ => Err(fail(op, format!("fd {fd}"), Errno::EBADF)),
        }
    }

    fn region_at(
        &self,
        fd: RawFd,
        offset: u64,
        len: usize,
        op: &'static str,
    ) -> Result<(Arc<FakeMem>, usize)> {
        let dev = self.device(fd, op)?;
        let index = usize::try_from(offset >> 40).map_err(|_| fail(op, "offset", Errno::EINVAL))?;
        let inner = offset & ((1 << 40) - 1);
        let r = dev
            .regions
            .get(index)
            .ok_or_else(|| fail(op, format!("region {index}"), Errno::EINVAL))?;
        let end = inner.checked_add(len as u64);
        match (&r.mem, end) {
            (Some(mem), Some(end)) if end <= r.size => {
                let off = usize::try_from(inner).map_err(|_| fail(op, "offset", Errno::EINVAL))?;
                Ok((mem.clone(), off))
            }
            _ => Err(fail(
                op,
                format!("region {index} @ {inner:#x}+{len:#x}"),
                Errno::EINVAL,
            )),
        }
    }

    fn map_dma(&mut self, op: &'static str, vaddr: u64, iova: u64, size: u64) -> Result<()> {
        if size == 0 || iova.checked_add(size).is_none() {
            return Err(fail(op, format!("iova {iova:#x}"), Errno::EINVAL));
        }
        let overlaps = self
            .dma
            .iter()
            .any(|(&start, &(_, len))| start < iova + size && iova < start + len);
        if overlaps {
            return Err(fail(op, format!("iova {iova:#x}+{size:#x}"), Errno::EEXIST));
        }
        self.dma.insert(iova, (vaddr, size));
        Ok(())
    }

    fn unmap_dma(&mut self, iova: u64, size: u64) -> u64 {
        let keys: Vec<u64> = self
            .dma
            .iter()
            .filter(|(&start, &(_, len))| start >= iova && start + len <= iova + size)
            .map(|(&k, _)| k)
            .collect();
        let mut n = 0;
        for k in keys {
            if let Some((_, len)) = self.dma.remove(&k) {
                n += len;
            }
        }
        n
    }
}

/// A `VFIO_REGION_INFO_CAP_SPARSE_MMAP` capability (header + areas) as raw bytes, placed at
/// offset 32 of the reply, with `next` = `next` (0 = last).
pub fn sparse_mmap_cap(areas: &[(u64, u64)], next: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(VFIO_REGION_INFO_CAP_SPARSE_MMAP as u16).to_ne_bytes());
    v.extend_from_slice(&1u16.to_ne_bytes());
    v.extend_from_slice(&next.to_ne_bytes());
    v.extend_from_slice(&(areas.len() as u32).to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    for &(off, size) in areas {
        v.extend_from_slice(&off.to_ne_bytes());
        v.extend_from_slice(&size.to_ne_bytes());
    }
    v
}

/// The fake kernel.
#[derive(Debug)]
pub struct FakeSys {
    state: Mutex<FakeState>,
}

impl FakeSys {
    /// A fake kernel in `state`.
    pub fn new(state: FakeState) -> Arc<Self> {
        Arc::new(FakeSys {
            state: Mutex::new(state),
        })
    }
    /// Inspect or change the state.
    pub fn with<R>(&self, f: impl FnOnce(&mut FakeState) -> R) -> R {
        f(&mut self.lock())
    }
    /// Signal vector `vector` of IRQ index `index`, as the device would (writes 1 to its eventfd).
    /// Returns false if no eventfd is connected.
    pub fn trigger_irq(&self, index: u32, vector: usize) -> bool {
        let mut st = self.lock();
        let fd = st.irq_fds.get(&index).and_then(|v| v.get(vector)).copied();
        match fd.and_then(|fd| st.files.get_mut(&fd)) {
            Some(File::EventFd { count }) => {
                *count += 1;
                true
            }
            _ => false,
        }
    }
    fn lock(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Sys for FakeSys {
    fn open(&self, path: &str) -> Result<RawFd> {
        let mut st = self.lock();
        st.check_fail("open", path)?;
        let file = if path == "/dev/vfio/vfio" {
            File::Container { iommu: None }
        } else if st.groups.contains_key(path) {
            let busy = st
                .files
                .values()
                .any(|f| matches!(f, File::Group { path: p, .. } if p == path));
            if busy {
                return Err(fail("open", path, Errno::EBUSY));
            }
            File::Group {
                path: path.to_string(),
                container: None,
            }
        } else if let Some(&dev) = st.cdevs.get(path) {
            File::Device { dev }
        } else if path == "/dev/iommu" && st.iommufd {
            File::Iommufd
        } else if path == "/proc/self/pagemap" {
            File::Pagemap
        } else {
            return Err(fail("open", path, Errno::ENOENT));
        };
        Ok(st.add(file))
    }

    fn close(&self, fd: RawFd) {
        let mut st = self.lock();
        st.calls.push("close".into());
        st.files.remove(&fd);
    }

    fn get_api_version(&self, container: RawFd) -> Result<i32> {
        let mut st = self.lock();
        st.check_fail("VFIO_GET_API_VERSION", format!("fd {container}"))?;
        match st.files.get(&container) {
            Some(File::Container { .. }) => Ok(st.api_version),
            _ => Err(fail(
                "VFIO_GET_API_VERSION",
                format!("fd {container}"),
                Errno::ENOTTY,
            )),
        }
    }

    fn check_extension(&self, container: RawFd, ext: u32) -> Result<bool> {
        let mut st = self.lock();
        st.check_fail("VFIO_CHECK_EXTENSION", format!("fd {container}"))?;
        Ok(st.extensions.contains(&ext))
    }

    fn set_iommu(&self, container: RawFd, iommu_type: u32) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("VFIO_SET_IOMMU", format!("fd {container}"))?;
        if !st.extensions.contains(&iommu_type) {
            return Err(fail(
                "VFIO_SET_IOMMU",
                format!("fd {container}"),
                Errno::EINVAL,
            ));
        }
        let has_group = st
            .files
            .values()
            .any(|f| matches!(f, File::Group { container: Some(c), .. } if *c == container));
        match st.files.get_mut(&container) {
            // The kernel refuses SET_IOMMU before a group is attached.
            Some(File::Container { iommu }) if has_group && iommu.is_none() => {
                *iommu = Some(iommu_type);
                Ok(())
            }
            _ => Err(fail(
                "VFIO_SET_IOMMU",
                format!("fd {container}"),
                Errno::EINVAL,
            )),
        }
    }

    fn group_get_status(&self, group: RawFd) -> Result<u32> {
        let mut st = self.lock();
        st.check_fail("VFIO_GROUP_GET_STATUS", format!("fd {group}"))?;
        match st.files.get(&group) {
            Some(File::Group { path, container }) => {
                let flags = st.groups.get(path).map_or(0, |g| g.0);
                let set = if container.is_some() {
                    VFIO_GROUP_FLAGS_CONTAINER_SET
                } else {
                    0
                };
                Ok(flags | set)
            }
            _ => Err(fail(
                "VFIO_GROUP_GET_STATUS",
                format!("fd {group}"),
                Errno::ENOTTY,
            )),
        }
    }

    fn group_set_container(&self, group: RawFd, container: RawFd) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("VFIO_GROUP_SET_CONTAINER", format!("fd {group}"))?;
        if !matches!(st.files.get(&container), Some(File::Container { .. })) {
            return Err(fail(
                "VFIO_GROUP_SET_CONTAINER",
                format!("fd {group}"),
                Errno::EBADF,
            ));
        }
        match st.files.get_mut(&group) {
            Some(File::Group {
                container: c @ None,
                ..
            }) => {
                *c = Some(container);
                Ok(())
            }
            _ => Err(fail(
                "VFIO_GROUP_SET_CONTAINER",
                format!("fd {group}"),
                Errno::EINVAL,
            )),
        }
    }

    fn group_unset_container(&self, group: RawFd) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("VFIO_GROUP_UNSET_CONTAINER", format!("fd {group}"))?;
        match st.files.get_mut(&group) {
            Some(File::Group {
                container: c @ Some(_),
                ..
            }) => {
                *c = None;
                Ok(())
            }
            _ => Err(fail(
                "VFIO_GROUP_UNSET_CONTAINER",
                format!("fd {group}"),
                Errno::EINVAL,
            )),
        }
    }

    fn group_get_device_fd(&self, group: RawFd, name: &str) -> Result<RawFd> {
        let mut st = self.lock();
        st.check_fail("VFIO_GROUP_GET_DEVICE_FD", name)?;
        let (path, container) = match st.files.get(&group) {
            Some(File::Group { path, container }) => (path.clone(), *container),
            _ => return Err(fail("VFIO_GROUP_GET_DEVICE_FD", name, Errno::EBADF)),
        };
        let iommu_set = matches!(
            container.and_then(|c| st.files.get(&c)),
            Some(File::Container { iommu: Some(_) })
        );
        if !iommu_set {
            return Err(fail("VFIO_GROUP_GET_DEVICE_FD", name, Errno::EINVAL));
        }
        let members = st
            .groups
            .get(&path)
            .map(|g| g.1.clone())
            .unwrap_or_default();
        let dev = members
            .into_iter()
            .find(|&d| st.devices.get(d).is_some_and(|x| x.name == name))
            .ok_or_else(|| fail("VFIO_GROUP_GET_DEVICE_FD", name, Errno::ENODEV))?;
        Ok(st.add(File::Device { dev }))
    }

    fn device_get_info(&self, device: RawFd) -> Result<vfio_device_info> {
        let mut st = self.lock();
        st.check_fail("VFIO_DEVICE_GET_INFO", format!("fd {device}"))?;
        let d = st.device(device, "VFIO_DEVICE_GET_INFO")?;
        Ok(vfio_device_info {
            argsz: 16,
            flags: d.flags,
            num_regions: d.regions.len() as u32,
            num_irqs: d.irq_counts.len() as u32,
        })
    }

    fn device_get_region_info(&self, device: RawFd, index: u32, buf: &mut [u64]) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("VFIO_DEVICE_GET_REGION_INFO", format!("region {index}"))?;
        let d = st.device(device, "VFIO_DEVICE_GET_REGION_INFO")?;
        let r = d
            .regions
            .get(index as usize)
            .filter(|r| !r.einval)
            .ok_or_else(|| {
                fail(
                    "VFIO_DEVICE_GET_REGION_INFO",
                    format!("region {index}"),
                    Errno::EINVAL,
                )
            })?;
        let argsz = buf.len() * 8;
        let need = 32 + r.caps.len();
        let fits = !r.caps.is_empty() && argsz >= need;
        let mut bytes = Vec::with_capacity(need);
        bytes.extend_from_slice(&(need as u32).to_ne_bytes());
        bytes.extend_from_slice(&r.flags.to_ne_bytes());
        bytes.extend_from_slice(&index.to_ne_bytes());
        bytes.extend_from_slice(&(if fits { 32u32 } else { 0 }).to_ne_bytes());
        bytes.extend_from_slice(&r.size.to_ne_bytes());
        bytes.extend_from_slice(&(u64::from(index) << 40).to_ne_bytes());
        if fits {
            bytes.extend_from_slice(&r.caps);
        }
        bytes.resize(bytes.len().div_ceil(8) * 8, 0);
        for (w, chunk) in buf.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *w = u64::from_ne_bytes(b);
        }
        Ok(())
    }

    fn device_get_irq_info(&self, device: RawFd, index: u32) -> Result<vfio_irq_info> {
        let mut st = self.lock();
        st.check_fail("VFIO_DEVICE_GET_IRQ_INFO", format!("irq index {index}"))?;
        let d = st.device(device, "VFIO_DEVICE_GET_IRQ_INFO")?;
        let count = *d.irq_counts.get(index as usize).ok_or_else(|| {
            fail(
                "VFIO_DEVICE_GET_IRQ_INFO",
                format!("irq index {index}"),
                Errno::EINVAL,
            )
        })?;
        Ok(vfio_irq_info {
            argsz: 16,
            flags: VFIO_IRQ_INFO_EVENTFD,
            index,
            count,
        })
    }

    fn device_set_irqs(
        &self,
        device: RawFd,
        index: u32,
        start: u32,
        action: IrqAction,
        fds: &[RawFd],
    ) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("VFIO_DEVICE_SET_IRQS", format!("irq index {index}"))?;
        let d = st.device(device, "VFIO_DEVICE_SET_IRQS")?;
        let count = d.irq_counts.get(index as usize).copied().unwrap_or(0);
        match action {
            IrqAction::Disable => {
                st.irq_fds.remove(&index);
            }
            IrqAction::Eventfds => {
                let end = start as usize + fds.len();
                if end > count as usize {
                    return Err(fail(
                        "VFIO_DEVICE_SET_IRQS",
                        format!("irq index {index}"),
                        Errno::EINVAL,
                    ));
                }
                for &fd in fds {
                    if fd >= 0 && !matches!(st.files.get(&fd), Some(File::EventFd { .. })) {
                        return Err(fail(
                            "VFIO_DEVICE_SET_IRQS",
                            format!("fd {fd}"),
                            Errno::EBADF,
                        ));
                    }
                }
                let v = st.irq_fds.entry(index).or_default();
                if v.len() < end {
                    v.resize(end, -1);
                }
                v[start as usize..end].copy_from_slice(fds);
            }
        }
        Ok(())
    }

    fn device_reset(&self, device: RawFd) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("VFIO_DEVICE_RESET", format!("fd {device}"))?;
        st.device(device, "VFIO_DEVICE_RESET")?;
        st.resets += 1;
        Ok(())
    }

    fn iommu_map_dma(&self, container: RawFd, vaddr: u64, iova: u64, size: u64) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("VFIO_IOMMU_MAP_DMA", format!("iova {iova:#x}"))?;
        match st.files.get(&container) {
            Some(File::Container { iommu: Some(_) }) => {
                st.map_dma("VFIO_IOMMU_MAP_DMA", vaddr, iova, size)
            }
            _ => Err(fail(
                "VFIO_IOMMU_MAP_DMA",
                format!("fd {container}"),
                Errno::EINVAL,
            )),
        }
    }

    fn iommu_unmap_dma(&self, container: RawFd, iova: u64, size: u64) -> Result<u64> {
        let mut st = self.lock();
        st.check_fail("VFIO_IOMMU_UNMAP_DMA", format!("iova {iova:#x}"))?;
        match st.files.get(&container) {
            Some(File::Container { iommu: Some(_) }) => {
                // Type1v2 unmaps whole mappings only: a range that cuts one is EINVAL (as Linux
                // 6.1 answers in the QEMU guest run, hwtest/src/cases.rs).
                let end = iova.saturating_add(size);
                let cuts = st.dma.iter().any(|(&start, &(_, len))| {
                    let last = start + len;
                    (start < iova && last > iova) || (start < end && last > end)
                });
                if cuts {
                    return Err(fail(
                        "VFIO_IOMMU_UNMAP_DMA",
                        format!("iova {iova:#x}+{size:#x}"),
                        Errno::EINVAL,
                    ));
                }
                Ok(st.unmap_dma(iova, size))
            }
            _ => Err(fail(
                "VFIO_IOMMU_UNMAP_DMA",
                format!("fd {container}"),
                Errno::EINVAL,
            )),
        }
    }

    fn device_bind_iommufd(&self, device: RawFd, iommufd: RawFd) -> Result<u32> {
        let mut st = self.lock();
        st.check_fail("VFIO_DEVICE_BIND_IOMMUFD", format!("fd {device}"))?;
        st.device(device, "VFIO_DEVICE_BIND_IOMMUFD")?;
        match st.files.get(&iommufd) {
            Some(File::Iommufd) => Ok(1),
            _ => Err(fail(
                "VFIO_DEVICE_BIND_IOMMUFD",
                format!("fd {iommufd}"),
                Errno::EBADF,
            )),
        }
    }

    fn device_attach_iommufd_pt(&self, device: RawFd, pt_id: u32) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("VFIO_DEVICE_ATTACH_IOMMUFD_PT", format!("pt {pt_id}"))?;
        st.device(device, "VFIO_DEVICE_ATTACH_IOMMUFD_PT")?;
        if pt_id == 0 || pt_id >= st.next_ioas {
            return Err(fail(
                "VFIO_DEVICE_ATTACH_IOMMUFD_PT",
                format!("pt {pt_id}"),
                Errno::ENOENT,
            ));
        }
        Ok(())
    }

    fn ioas_alloc(&self, iommufd: RawFd) -> Result<u32> {
        let mut st = self.lock();
        st.check_fail("IOMMU_IOAS_ALLOC", format!("fd {iommufd}"))?;
        if !matches!(st.files.get(&iommufd), Some(File::Iommufd)) {
            return Err(fail(
                "IOMMU_IOAS_ALLOC",
                format!("fd {iommufd}"),
                Errno::ENOTTY,
            ));
        }
        let id = st.next_ioas;
        st.next_ioas += 1;
        Ok(id)
    }

    fn ioas_map(&self, iommufd: RawFd, ioas: u32, vaddr: u64, len: u64, iova: u64) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("IOMMU_IOAS_MAP", format!("iova {iova:#x}"))?;
        if !matches!(st.files.get(&iommufd), Some(File::Iommufd)) || ioas == 0 {
            return Err(fail(
                "IOMMU_IOAS_MAP",
                format!("ioas {ioas}"),
                Errno::ENOENT,
            ));
        }
        st.map_dma("IOMMU_IOAS_MAP", vaddr, iova, len)
    }

    fn ioas_unmap(&self, iommufd: RawFd, ioas: u32, iova: u64, len: u64) -> Result<u64> {
        let mut st = self.lock();
        st.check_fail("IOMMU_IOAS_UNMAP", format!("iova {iova:#x}"))?;
        if !matches!(st.files.get(&iommufd), Some(File::Iommufd)) || ioas == 0 {
            return Err(fail(
                "IOMMU_IOAS_UNMAP",
                format!("ioas {ioas}"),
                Errno::ENOENT,
            ));
        }
        let n = st.unmap_dma(iova, len);
        if n == 0 {
            return Err(fail(
                "IOMMU_IOAS_UNMAP",
                format!("iova {iova:#x}"),
                Errno::ENOENT,
            ));
        }
        Ok(n)
    }

    fn pread(&self, fd: RawFd, buf: &mut [u8], offset: u64) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("pread", format!("fd {fd}"))?;
        if matches!(st.files.get(&fd), Some(File::Pagemap)) {
            // 8 bytes per page: bit 63 present, bits 54..0 frame number.
            let scramble = st.scramble_pagemap;
            for (i, chunk) in buf.chunks_mut(8).enumerate() {
                let page = offset / 8 + i as u64;
                let pfn = if scramble {
                    page.wrapping_mul(7) ^ 0x5555
                } else {
                    page + 0x1000
                };
                let entry = (1u64 << 63) | (pfn & ((1 << 55) - 1));
                let b = entry.to_ne_bytes();
                chunk.copy_from_slice(&b[..chunk.len()]);
            }
            return Ok(());
        }
        let (mem, off) = st.region_at(fd, offset, buf.len(), "pread")?;
        mem.read(off, buf)
    }

    fn pwrite(&self, fd: RawFd, data: &[u8], offset: u64) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("pwrite", format!("fd {fd}"))?;
        let (mem, off) = st.region_at(fd, offset, data.len(), "pwrite")?;
        mem.write(off, data)
    }

    fn mmap(&self, fd: RawFd, offset: u64, len: usize) -> Result<Mapping> {
        let mut st = self.lock();
        st.check_fail("mmap", format!("fd {fd}"))?;
        if let Some(File::Memfd { mem, .. }) = st.files.get(&fd) {
            let mem = mem
                .clone()
                .ok_or_else(|| fail("mmap", format!("fd {fd}"), Errno::EINVAL))?;
            let off = usize::try_from(offset).map_err(|_| fail("mmap", "offset", Errno::EINVAL))?;
            return Mapping::fake(mem, off, len);
        }
        let dev = st.device(fd, "mmap")?;
        let index = (offset >> 40) as usize;
        let mmappable = dev
            .regions
            .get(index)
            .is_some_and(|r| r.flags & VFIO_REGION_INFO_FLAG_MMAP != 0);
        if !mmappable {
            return Err(fail("mmap", format!("region {index}"), Errno::EINVAL));
        }
        let (mem, off) = st.region_at(fd, offset, len, "mmap")?;
        Mapping::fake(mem, off, len)
    }

    fn memfd_create(&self, name: &str, huge_2m: bool) -> Result<RawFd> {
        let mut st = self.lock();
        st.check_fail("memfd_create", name)?;
        if huge_2m && !st.hugetlb {
            return Err(fail("memfd_create", name, Errno::EINVAL));
        }
        Ok(st.add(File::Memfd {
            mem: None,
            huge: huge_2m,
        }))
    }

    fn ftruncate(&self, fd: RawFd, len: u64) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("ftruncate", format!("fd {fd}"))?;
        match st.files.get_mut(&fd) {
            Some(File::Memfd { mem, huge }) => {
                if *huge && !len.is_multiple_of(2 << 20) {
                    return Err(fail("ftruncate", format!("fd {fd}"), Errno::EINVAL));
                }
                let l = usize::try_from(len).map_err(|_| fail("ftruncate", "len", Errno::EFBIG))?;
                *mem = Some(FakeMem::new(l)?);
                Ok(())
            }
            _ => Err(fail("ftruncate", format!("fd {fd}"), Errno::EINVAL)),
        }
    }

    fn eventfd(&self) -> Result<RawFd> {
        let mut st = self.lock();
        st.check_fail("eventfd", "new")?;
        Ok(st.add(File::EventFd { count: 0 }))
    }

    fn eventfd_read(&self, fd: RawFd) -> Result<Option<u64>> {
        let mut st = self.lock();
        st.check_fail("read(eventfd)", format!("fd {fd}"))?;
        match st.files.get_mut(&fd) {
            Some(File::EventFd { count }) => Ok(match std::mem::take(count) {
                0 => None,
                n => Some(n),
            }),
            _ => Err(fail("read(eventfd)", format!("fd {fd}"), Errno::EBADF)),
        }
    }

    fn eventfd_write(&self, fd: RawFd, value: u64) -> Result<()> {
        let mut st = self.lock();
        st.check_fail("write(eventfd)", format!("fd {fd}"))?;
        match st.files.get_mut(&fd) {
            Some(File::EventFd { count }) => {
                *count += value;
                Ok(())
            }
            _ => Err(fail("write(eventfd)", format!("fd {fd}"), Errno::EBADF)),
        }
    }

    /// Never blocks: reports the first eventfd with a nonzero count, else a timeout at once.
    fn poll_in(&self, fds: &[RawFd], _timeout_ms: i32) -> Result<Option<usize>> {
        let mut st = self.lock();
        st.check_fail("poll", "fds")?;
        Ok(fds
            .iter()
            .position(|fd| matches!(st.files.get(fd), Some(File::EventFd { count }) if *count > 0)))
    }

    fn read_link(&self, path: &str) -> Result<String> {
        let mut st = self.lock();
        st.check_fail("readlink", path)?;
        st.links
            .get(path)
            .cloned()
            .ok_or_else(|| fail("readlink", path, Errno::ENOENT))
    }

    fn read_dir(&self, path: &str) -> Result<Vec<String>> {
        let mut st = self.lock();
        st.check_fail("read_dir", path)?;
        st.dirs
            .get(path)
            .cloned()
            .ok_or_else(|| fail("read_dir", path, Errno::ENOENT))
    }

    fn read_file(&self, path: &str) -> Result<String> {
        let mut st = self.lock();
        st.check_fail("read", path)?;
        st.text_files
            .get(path)
            .cloned()
            .ok_or_else(|| fail("read", path, Errno::ENOENT))
    }
}

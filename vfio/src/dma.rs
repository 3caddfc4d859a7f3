//! DMA memory: memfd-backed buffers mapped for the device at IOVAs from an [`IovaAllocator`],
//! accessed by the CPU only through volatile raw-pointer handles, plus the named barriers.
//!
//! Ownership model (STYLE P10, docs/DESIGN.md "vfio and device memory"): a [`DmaBuffer`] is a
//! handle, not a borrow. Whether the CPU or the device owns the bytes behind it at a given moment
//! is decided by the protocol on top (descriptor `OWN` bits, CQE phase bits), and the driver
//! above (`hca-driver`) turns that into ownership tokens. This module gives it the tools:
//! * volatile, bounds-checked word/byte accessors that are correct whoever owns the memory;
//! * [`DmaBuffer::as_slice`]/[`DmaBuffer::as_mut_slice`] — `unsafe`, for zero-copy parsing —
//!   whose contract is exactly "software owns these bytes for the whole borrow";
//! * [`dma_rmb`] (`Acquire` fence: after seeing the device's ownership/phase bit and before
//!   reading the data it guards) and [`dma_wmb`]/[`wmb`] (`Release` fence: after writing a
//!   descriptor and before handing it over or ringing the doorbell).
//!
//! `#![allow(unsafe_code)]` covers the two slice constructors (docs/unsafe.md).
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::device::VfioDevice;
use crate::error::{Result, VfioError};
use crate::iova::IovaAllocator;
use crate::region::VolatileSpan;
use crate::sys::{Fd, Mapping, Sys};

/// Read barrier for DMA memory (the kernel's `dma_rmb()`): an `Acquire` fence. Issue it after a
/// volatile read has shown that the device handed a buffer/CQE back, before reading the data.
#[inline]
pub fn dma_rmb() {
    fence(Ordering::Acquire);
}

/// Write barrier for DMA memory (the kernel's `dma_wmb()`): a `Release` fence. Issue it after
/// writing a descriptor's contents and before setting its ownership bit.
#[inline]
pub fn dma_wmb() {
    fence(Ordering::Release);
}

/// Write barrier before a doorbell (the kernel's `wmb()`): a `Release` fence ordering all
/// earlier memory writes before the following MMIO write. On x86 MMIO is uncached and strongly
/// ordered, so this only stops the compiler; on weaker architectures see docs/DESIGN.md.
#[inline]
pub fn wmb() {
    fence(Ordering::Release);
}

/// Small pages.
pub const PAGE_4K: u64 = 4096;
/// x86-64 huge pages.
pub const PAGE_2M: u64 = 2 << 20;

/// Huge-page policy for new DMA memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HugePages {
    /// 2 MiB pages when the allocation is ≥ 1 MiB and enough are free
    /// (`/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages`), else 4 KiB pages.
    #[default]
    Auto,
    /// Always 4 KiB pages.
    Never,
    /// 2 MiB pages or an error.
    Require,
}

const FREE_HUGEPAGES: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages";

/// A memfd and its shared mapping: the host memory behind DMA buffers. The fd can be passed to a
/// vfio-user server, which maps the same pages.
#[derive(Debug)]
pub struct DmaMemory {
    map: Arc<Mapping>,
    fd: Fd,
    huge: bool,
}

impl DmaMemory {
    /// Create `len` bytes (rounded up to the page size) of zeroed shared memory.
    pub fn new(sys: &Arc<dyn Sys>, len: usize, huge: HugePages) -> Result<Self> {
        if len == 0 {
            return Err(VfioError::InvalidArgument {
                op: "DmaMemory::new",
                reason: "zero length".into(),
            });
        }
        let want_huge = match huge {
            HugePages::Never => false,
            HugePages::Require => true,
            HugePages::Auto => {
                let pages = (len as u64).div_ceil(PAGE_2M);
                len as u64 >= PAGE_2M / 2
                    && sys
                        .read_file(FREE_HUGEPAGES)
                        .ok()
                        .and_then(|s| s.trim().parse::<u64>().ok())
                        .is_some_and(|free| free >= pages)
            }
        };
        match Self::create(sys, len, want_huge) {
            Err(e) if want_huge && huge == HugePages::Auto => {
                tracing::debug!("huge-page memfd failed ({e}); using 4 KiB pages");
                Self::create(sys, len, false)
            }
            r => r,
        }
    }

    fn create(sys: &Arc<dyn Sys>, len: usize, huge: bool) -> Result<Self> {
        let page = if huge { PAGE_2M } else { PAGE_4K };
        let size = (len as u64).div_ceil(page) * page;
        let fd = Fd::new(sys.clone(), sys.memfd_create("vfio-dma", huge)?);
        sys.ftruncate(fd.raw(), size)?;
        let n = usize::try_from(size).map_err(|_| VfioError::InvalidArgument {
            op: "DmaMemory::new",
            reason: format!("size {size:#x} too large"),
        })?;
        let map = Arc::new(sys.mmap(fd.raw(), 0, n)?);
        Ok(DmaMemory { map, fd, huge })
    }

    /// The memfd (for vfio-user `DMA_MAP`).
    pub fn fd(&self) -> RawFd {
        self.fd.raw()
    }
    /// Length in bytes (a multiple of the page size).
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// Process virtual address of the mapping (for `VFIO_IOMMU_MAP_DMA`).
    pub fn vaddr(&self) -> u64 {
        self.map.ptr().as_ptr() as u64
    }
    /// Whether 2 MiB pages back it.
    pub fn is_huge(&self) -> bool {
        self.huge
    }
    /// Page size of the backing memory.
    pub fn page_size(&self) -> u64 {
        if self.huge {
            PAGE_2M
        } else {
            PAGE_4K
        }
    }
    pub(crate) fn span(&self, offset: usize, len: usize) -> Result<VolatileSpan> {
        VolatileSpan::of(&self.map, offset, len)
    }
}

/// A piece of DMA memory with its device address: what descriptors point at.
///
/// Cloning makes another handle to the same bytes (no copy); the memory lives as long as any
/// handle or the device mapping does.
#[derive(Debug, Clone)]
pub struct DmaBuffer {
    mem: Arc<DmaMemory>,
    span: VolatileSpan,
    offset: usize,
    iova: u64,
}

impl DmaBuffer {
    /// Device address (IOVA; the physical address in no-IOMMU mode) of byte 0.
    pub fn iova(&self) -> u64 {
        self.iova
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.span.len()
    }
    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.span.len() == 0
    }
    /// Offset of this buffer inside its [`DmaMemory`].
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// The memory behind it.
    pub fn memory(&self) -> &Arc<DmaMemory> {
        &self.mem
    }
    /// A sub-buffer of `len` bytes at `offset` (same memory, IOVA shifted accordingly).
    pub fn slice(&self, offset: usize, len: usize) -> Result<DmaBuffer> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len() => {}
            _ => {
                return Err(VfioError::OutOfBounds {
                    offset: offset as u64,
                    width: len,
                    len: self.len() as u64,
                })
            }
        }
        Ok(DmaBuffer {
            mem: self.mem.clone(),
            span: self.mem.span(self.offset + offset, len)?,
            offset: self.offset + offset,
            iova: self.iova + offset as u64,
        })
    }

    /// Volatile read of a byte.
    pub fn read8(&self, off: u64) -> Result<u8> {
        self.span.read8(off)
    }
    /// Volatile write of a byte.
    pub fn write8(&self, off: u64, v: u8) -> Result<()> {
        self.span.write8(off, v)
    }
    /// Volatile little-endian 16-bit read (aligned).
    pub fn read16(&self, off: u64) -> Result<u16> {
        self.span.read16(off)
    }
    /// Volatile little-endian 16-bit write (aligned).
    pub fn write16(&self, off: u64, v: u16) -> Result<()> {
        self.span.write16(off, v)
    }
    /// Volatile little-endian 32-bit read (aligned).
    pub fn read32(&self, off: u64) -> Result<u32> {
        self.span.read32(off)
    }
    /// Volatile little-endian 32-bit write (aligned).
    pub fn write32(&self, off: u64, v: u32) -> Result<()> {
        self.span.write32(off, v)
    }
    /// Volatile little-endian 64-bit read (aligned).
    pub fn read64(&self, off: u64) -> Result<u64> {
        self.span.read64(off)
    }
    /// Volatile little-endian 64-bit write (aligned).
    pub fn write64(&self, off: u64, v: u64) -> Result<()> {
        self.span.write64(off, v)
    }
    /// Copy bytes out with volatile reads (aligned 8-byte words where possible).
    pub fn read_bytes(&self, off: u64, buf: &mut [u8]) -> Result<()> {
        self.check(off, buf.len())?;
        let mut i = 0usize;
        while i < buf.len() {
            let at = off + i as u64;
            if self.word_aligned(at) && buf.len() - i >= 8 {
                let w = self.span.read64(at)?.to_le_bytes();
                buf[i..i + 8].copy_from_slice(&w);
                i += 8;
            } else {
                buf[i] = self.span.read8(at)?;
                i += 1;
            }
        }
        Ok(())
    }
    /// Copy bytes in with volatile writes (aligned 8-byte words where possible).
    pub fn write_bytes(&self, off: u64, data: &[u8]) -> Result<()> {
        self.check(off, data.len())?;
        let mut i = 0usize;
        while i < data.len() {
            let at = off + i as u64;
            if self.word_aligned(at) && data.len() - i >= 8 {
                let mut w = [0u8; 8];
                w.copy_from_slice(&data[i..i + 8]);
                self.span.write64(at, u64::from_le_bytes(w))?;
                i += 8;
            } else {
                self.span.write8(at, data[i])?;
                i += 1;
            }
        }
        Ok(())
    }

    /// Whether an 8-byte access at `off` is aligned both inside this buffer and in memory
    /// (the span checks both; a sub-buffer at an odd offset is copied byte by byte).
    fn word_aligned(&self, off: u64) -> bool {
        off.is_multiple_of(8) && (self.offset as u64).is_multiple_of(8)
    }

    fn check(&self, off: u64, len: usize) -> Result<()> {
        match off.checked_add(len as u64) {
            Some(end) if end <= self.len() as u64 => Ok(()),
            _ => Err(VfioError::OutOfBounds {
                offset: off,
                width: len,
                len: self.len() as u64,
            }),
        }
    }

    /// The bytes as a shared slice, for zero-copy parsing.
    ///
    /// # Safety
    /// For the whole lifetime of the returned slice, software must own these bytes: the device
    /// must not write them (the buffer has been handed back — ownership/phase bit seen and
    /// [`dma_rmb`] issued — and is not re-posted before the slice is dropped), and no other
    /// handle may write them.
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: `from_raw_parts` needs "data valid for reads for len bytes, properly aligned,
        // initialized, not mutated for the lifetime 'a": the span lies inside a live mapping
        // held by `self.mem` (≥ the borrow of `self`), u8 has alignment 1, memfd pages are
        // zero-initialized, and the caller guarantees no mutation (this fn's contract).
        unsafe { std::slice::from_raw_parts(self.span.ptr().as_ptr(), self.span.len()) }
    }

    /// The bytes as an exclusive slice, for building a MAD in place.
    ///
    /// # Safety
    /// For the whole lifetime of the returned slice, software must own these bytes exclusively:
    /// the device does not read or write them (not posted yet, or completion seen + [`dma_rmb`]),
    /// and no other handle (clone or overlapping [`slice`](Self::slice)) accesses them.
    pub unsafe fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `from_raw_parts_mut` needs "valid for reads and writes for len bytes, properly
        // aligned, not accessed through any other pointer for 'a": live writable mapping held by
        // `self.mem`, alignment 1, exclusivity guaranteed by the caller (this fn's contract).
        unsafe { std::slice::from_raw_parts_mut(self.span.ptr().as_ptr(), self.span.len()) }
    }
}

#[derive(Debug)]
struct Mapped {
    mem: Arc<DmaMemory>,
    iova: u64,
    len: u64,
}

/// DMA bookkeeping for one device: allocates memory, picks IOVAs, maps and unmaps, and remembers
/// every live mapping so that nothing is unmapped twice or left mapped (all are unmapped on drop).
#[derive(Debug)]
pub struct Dma {
    dev: Arc<dyn VfioDevice>,
    state: Mutex<DmaState>,
    huge: HugePages,
}

#[derive(Debug)]
struct DmaState {
    iova: IovaAllocator,
    /// Device address → mapping.
    maps: BTreeMap<u64, Mapped>,
}

/// Default IOVA window: 64 GiB from 64 GiB up, clear of the x86 MSI window and low memory holes.
pub const DEFAULT_IOVA_WINDOW: (u64, u64) = (0x10_0000_0000, 0x20_0000_0000);

impl Dma {
    /// Bookkeeping for `dev` over the IOVA window `[start, end)`.
    pub fn new(dev: Arc<dyn VfioDevice>, window: (u64, u64), huge: HugePages) -> Result<Self> {
        Ok(Dma {
            dev,
            state: Mutex::new(DmaState {
                iova: IovaAllocator::new(window.0, window.1)?,
                maps: BTreeMap::new(),
            }),
            huge,
        })
    }

    fn lock(&self) -> MutexGuard<'_, DmaState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Allocate `len` bytes of zeroed DMA memory and map it for the device.
    pub fn alloc(&self, len: usize) -> Result<DmaBuffer> {
        let mem = Arc::new(DmaMemory::new(self.dev.sys(), len, self.huge)?);
        let size = mem.len() as u64;
        let mut st = self.lock();
        let iova = st.iova.alloc(size, mem.page_size())?;
        let addr = match self.dev.dma_map(&mem, 0, size, iova) {
            Ok(a) => a,
            Err(e) => {
                let _ = st.iova.free(iova, size);
                return Err(e);
            }
        };
        st.maps.insert(
            addr,
            Mapped {
                mem: mem.clone(),
                iova,
                len: size,
            },
        );
        let span = mem.span(0, len)?;
        Ok(DmaBuffer {
            mem,
            span,
            offset: 0,
            iova: addr,
        })
    }

    /// Unmap and release a buffer returned by [`alloc`](Self::alloc) (not a sub-slice).
    /// The bytes stay valid for other handles, but the device can no longer reach them.
    pub fn free(&self, buf: &DmaBuffer) -> Result<()> {
        let mut st = self.lock();
        let found = st
            .maps
            .get(&buf.iova)
            .filter(|m| buf.offset == 0 && Arc::ptr_eq(&m.mem, &buf.mem))
            .map(|m| (m.iova, m.len));
        let Some((iova, len)) = found else {
            return Err(VfioError::NotAllocated {
                iova: buf.iova,
                len: buf.len() as u64,
            });
        };
        self.dev.dma_unmap(buf.iova, len)?;
        st.maps.remove(&buf.iova);
        st.iova.free(iova, len)
    }

    /// Live mappings as (device address, length), in address order.
    pub fn mappings(&self) -> Vec<(u64, u64)> {
        self.lock().maps.iter().map(|(&a, m)| (a, m.len)).collect()
    }

    /// Bytes of IOVA space still free.
    pub fn iova_free(&self) -> u64 {
        self.lock().iova.free_bytes()
    }
}

impl Drop for Dma {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for (&addr, m) in &st.maps {
            if let Err(e) = self.dev.dma_unmap(addr, m.len) {
                tracing::warn!("unmapping DMA {addr:#x}+{:#x} on drop: {e}", m.len);
            }
        }
        st.maps.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{IommuMode, KernelDevice};
    use crate::sys::fake::{FakeState, FakeSys, STANDARD_BDF};

    #[test]
    fn dma_buffer_access() {
        let f = FakeSys::new(FakeState::standard().unwrap());
        let d: Arc<dyn VfioDevice> =
            Arc::new(KernelDevice::open(f, STANDARD_BDF, IommuMode::Type1v2).unwrap());
        let dma = Dma::new(d, (0x10_0000, 0x20_0000), HugePages::Never).unwrap();
        let mut buf = dma.alloc(512).unwrap();
        // Unaligned head, aligned words, tail: bytes land in memory order.
        let pattern: Vec<u8> = (0..37).collect();
        buf.write_bytes(3, &pattern).unwrap();
        let mut back = vec![0u8; 37];
        buf.read_bytes(3, &mut back).unwrap();
        assert_eq!(back, pattern);
        assert_eq!(buf.read8(3 + 20).unwrap(), 20);
        assert_eq!(buf.read32(8).unwrap(), u32::from_le_bytes([5, 6, 7, 8]));
        buf.write_bytes(256, &[1, 2, 3, 4, 5]).unwrap();
        let mut out = [0u8; 5];
        buf.read_bytes(256, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 5]);
        assert!(buf.read_bytes(510, &mut out).is_err());
        assert!(buf.write_bytes(u64::MAX, &out).is_err());
        let sub = buf.slice(256, 256).unwrap();
        assert_eq!(sub.iova(), buf.iova() + 256);
        assert_eq!(sub.read32(0).unwrap(), 0x0403_0201);
        assert!(buf.slice(500, 13).is_err());
        // A sub-buffer at an odd offset: word accesses follow the absolute alignment.
        let odd = buf.slice(3, 37).unwrap();
        let bytes: Vec<u8> = (100..137).collect();
        odd.write_bytes(0, &bytes).unwrap();
        let mut back = vec![0u8; 37];
        odd.read_bytes(0, &mut back).unwrap();
        assert_eq!(back, bytes);
        assert_eq!(buf.read8(3).unwrap(), 100);
        assert_eq!(buf.read64(8).unwrap().to_le_bytes()[0], 105);
        // SAFETY: no device touches this buffer in the test; no other handle writes meanwhile.
        let bytes = unsafe { sub.as_slice() };
        assert_eq!(&bytes[..5], &[1, 2, 3, 4, 5]);
        // SAFETY: as above, and `buf` is the only handle used during the borrow.
        let m = unsafe { buf.as_mut_slice() };
        m[0] = 0xAA;
        assert_eq!(buf.read8(0).unwrap(), 0xAA);
    }
}

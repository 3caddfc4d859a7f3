//! Device regions: region info and capability parsing, and [`MmioRegion`], the only way this
//! workspace touches memory-mapped device registers.
//!
//! STYLE P10: a Rust reference (`&u32`, `&Registers`, `&[u8]`) to device memory is never created.
//! The compiler may assume the memory behind a reference does not change and may read it
//! speculatively or more than once (rust-lang/unsafe-code-guidelines#411, japaric/vcell#10);
//! device registers change by themselves and reads can have side effects. [`MmioRegion`] keeps a
//! `NonNull<u8>` and a length and does bounds-checked `read_volatile`/`write_volatile` of whole,
//! aligned 32-bit words, like vm-memory's `VolatileRef::load/store`.
//!
//! `#![allow(unsafe_code)]` here covers the private `VolatileSpan`'s accessors only (docs/unsafe.md).
#![allow(unsafe_code)]

use std::ptr::NonNull;
use std::sync::Arc;

use bitflags::bitflags;
use vfio_bindings::bindings::vfio::{
    VFIO_REGION_INFO_CAP_MSIX_MAPPABLE, VFIO_REGION_INFO_CAP_SPARSE_MMAP, VFIO_REGION_INFO_CAP_TYPE,
};

use crate::error::{Result, VfioError};
use crate::sys::Mapping;

bitflags! {
    /// `VFIO_REGION_INFO_FLAG_*`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct RegionFlags: u32 {
        /// Region supports read.
        const READ = 1 << 0;
        /// Region supports write.
        const WRITE = 1 << 1;
        /// Region supports mmap.
        const MMAP = 1 << 2;
        /// Info has a capability chain.
        const CAPS = 1 << 3;
    }
}

/// One mmap-able window of a region (`struct vfio_region_sparse_mmap_area`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparseArea {
    /// Offset inside the region.
    pub offset: u64,
    /// Length in bytes.
    pub size: u64,
}

/// A region-info capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionCap {
    /// `VFIO_REGION_INFO_CAP_SPARSE_MMAP`: only these areas may be mmapped.
    SparseMmap(Vec<SparseArea>),
    /// `VFIO_REGION_INFO_CAP_TYPE`: a device-specific region.
    Type {
        /// Region type.
        ty: u32,
        /// Region subtype.
        subtype: u32,
    },
    /// `VFIO_REGION_INFO_CAP_MSIX_MAPPABLE`: the MSI-X table may be mmapped too.
    MsixMappable,
    /// A capability this crate does not interpret.
    Unknown {
        /// Capability id.
        id: u16,
        /// Capability version.
        version: u16,
    },
}

/// What `VFIO_DEVICE_GET_REGION_INFO` (or vfio-user `DEVICE_GET_REGION_INFO`) said about a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// Region index.
    pub index: u32,
    /// Access flags.
    pub flags: RegionFlags,
    /// Size in bytes (0: region not implemented).
    pub size: u64,
    /// Offset of the region in the device fd (kernel VFIO; vfio-user: 0 or the mmap offset in
    /// the passed fd).
    pub offset: u64,
    /// Parsed capability chain.
    pub caps: Vec<RegionCap>,
}

/// Size of `struct vfio_region_info` without capabilities.
pub const REGION_INFO_LEN: usize = 32;
/// Capability chains longer than this are treated as malformed (loop protection).
const MAX_CAPS: usize = 64;

fn rd_u16(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off + 2)?;
    Some(u16::from_ne_bytes([s[0], s[1]]))
}
fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off + 4)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}
fn rd_u64(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_ne_bytes(a))
}

impl RegionInfo {
    /// Parse a region-info reply: the 32-byte `vfio_region_info` followed by its capability
    /// chain (offsets counted from the start of `bytes`), as the kernel and vfio-user return it.
    pub fn parse(index: u32, bytes: &[u8]) -> Result<Self> {
        let bad = |offset: usize, reason: &'static str| VfioError::BadCapChain {
            index,
            offset: u32::try_from(offset).unwrap_or(u32::MAX),
            reason,
        };
        if bytes.len() < REGION_INFO_LEN {
            return Err(bad(0, "reply shorter than struct vfio_region_info"));
        }
        let flags = RegionFlags::from_bits_retain(rd_u32(bytes, 4).unwrap_or(0));
        let cap_offset = rd_u32(bytes, 12).unwrap_or(0) as usize;
        let size = rd_u64(bytes, 16).unwrap_or(0);
        let offset = rd_u64(bytes, 24).unwrap_or(0);
        let mut caps = Vec::new();
        if flags.contains(RegionFlags::CAPS) {
            let mut off = cap_offset;
            while off != 0 {
                if caps.len() >= MAX_CAPS {
                    return Err(bad(off, "too many capabilities (loop?)"));
                }
                if off < REGION_INFO_LEN || !off.is_multiple_of(4) {
                    return Err(bad(
                        off,
                        "capability offset inside the header or misaligned",
                    ));
                }
                let (Some(id), Some(version), Some(next)) = (
                    rd_u16(bytes, off),
                    rd_u16(bytes, off + 2),
                    rd_u32(bytes, off + 4),
                ) else {
                    return Err(bad(off, "capability header past the end of the reply"));
                };
                let cap = match u32::from(id) {
                    VFIO_REGION_INFO_CAP_SPARSE_MMAP => {
                        let nr = rd_u32(bytes, off + 8)
                            .ok_or_else(|| bad(off, "sparse-mmap capability truncated"))?
                            as usize;
                        let mut areas = Vec::with_capacity(nr.min(64));
                        for i in 0..nr {
                            let a = off + 16 + i * 16;
                            let (Some(o), Some(s)) = (rd_u64(bytes, a), rd_u64(bytes, a + 8))
                            else {
                                return Err(bad(a, "sparse-mmap area past the end of the reply"));
                            };
                            if crate::region::exceeds(o.checked_add(s), size) {
                                return Err(bad(a, "sparse-mmap area outside the region"));
                            }
                            areas.push(SparseArea { offset: o, size: s });
                        }
                        RegionCap::SparseMmap(areas)
                    }
                    VFIO_REGION_INFO_CAP_TYPE => {
                        let (Some(ty), Some(subtype)) =
                            (rd_u32(bytes, off + 8), rd_u32(bytes, off + 12))
                        else {
                            return Err(bad(off, "type capability truncated"));
                        };
                        RegionCap::Type { ty, subtype }
                    }
                    VFIO_REGION_INFO_CAP_MSIX_MAPPABLE => RegionCap::MsixMappable,
                    _ => RegionCap::Unknown { id, version },
                };
                caps.push(cap);
                let next = next as usize;
                if next != 0 && next <= off {
                    return Err(bad(off, "capability chain goes backwards (loop)"));
                }
                off = next;
            }
        }
        Ok(RegionInfo {
            index,
            flags,
            size,
            offset,
            caps,
        })
    }

    /// The parts of the region that may be mmapped: none without `MMAP`; the sparse areas (empty
    /// ones dropped) when a sparse-mmap capability is present; else the whole region.
    pub fn mmap_areas(&self) -> Vec<SparseArea> {
        if !self.flags.contains(RegionFlags::MMAP) || self.size == 0 {
            return Vec::new();
        }
        for c in &self.caps {
            if let RegionCap::SparseMmap(areas) = c {
                return areas.iter().copied().filter(|a| a.size > 0).collect();
            }
        }
        vec![SparseArea {
            offset: 0,
            size: self.size,
        }]
    }
}

/// True when a `checked_add` end overflowed (`None`) or lies beyond `max`.
pub(crate) fn exceeds(end: Option<u64>, max: u64) -> bool {
    !matches!(end, Some(e) if e <= max)
}

/// Register access to one device region, however it is reached: an mmapped BAR
/// ([`MmioRegion`]), `pread`/`pwrite` on the device fd, or vfio-user messages. All registers in
/// docs/reference-asic.md are aligned 32-bit little-endian words.
pub trait RegisterIo: Send + Sync + std::fmt::Debug {
    /// Region length in bytes.
    fn len(&self) -> u64;
    /// True for an empty region.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Read the 32-bit register at `offset` (aligned, in bounds).
    fn read32(&self, offset: u64) -> Result<u32>;
    /// Write the 32-bit register at `offset` (aligned, in bounds).
    fn write32(&self, offset: u64, value: u32) -> Result<()>;
}

/// A bounds-checked raw span of memory that something other than this program may change at any
/// time (device registers, DMA memory). Only volatile, aligned accesses; never references.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VolatileSpan {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the span is an address range inside a `Mapping` kept alive by its owner
// (`MmioRegion`/`DmaBuffer` hold the `Arc<Mapping>`); every access is a volatile read/write of a
// whole aligned word, the same contract as vm-memory's `VolatileSlice` ("Send + Sync").
unsafe impl Send for VolatileSpan {}
// SAFETY: as for `Send`.
unsafe impl Sync for VolatileSpan {}

impl VolatileSpan {
    /// A span over `len` bytes of `map` starting at `offset`.
    pub(crate) fn of(map: &Mapping, offset: usize, len: usize) -> Result<Self> {
        match offset.checked_add(len) {
            Some(end) if end <= map.len() => {}
            _ => {
                return Err(VfioError::OutOfBounds {
                    offset: offset as u64,
                    width: len,
                    len: map.len() as u64,
                })
            }
        }
        let ptr = NonNull::new(map.ptr().as_ptr().wrapping_add(offset)).ok_or(
            VfioError::OutOfBounds {
                offset: offset as u64,
                width: len,
                len: map.len() as u64,
            },
        )?;
        Ok(VolatileSpan { ptr, len })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The address of `width` bytes at `offset`, if they are inside the span and aligned.
    fn at(&self, offset: u64, width: usize) -> Result<*mut u8> {
        let err = || VfioError::OutOfBounds {
            offset,
            width,
            len: self.len as u64,
        };
        let off = usize::try_from(offset).map_err(|_| err())?;
        match off.checked_add(width) {
            Some(end) if end <= self.len && off % width == 0 => {}
            _ => return Err(err()),
        }
        let p = self.ptr.as_ptr().wrapping_add(off);
        // The mapping base is page aligned; still check the absolute address.
        if !(p as usize).is_multiple_of(width) {
            return Err(err());
        }
        Ok(p)
    }

    pub(crate) fn read8(&self, offset: u64) -> Result<u8> {
        let p = self.at(offset, 1)?;
        // SAFETY: `read_volatile` needs "src must be valid for reads and properly aligned":
        // `at` checked `offset + 1 ≤ len` inside a live mapping; u8 needs no alignment.
        Ok(unsafe { p.read_volatile() })
    }

    pub(crate) fn write8(&self, offset: u64, v: u8) -> Result<()> {
        let p = self.at(offset, 1)?;
        // SAFETY: `write_volatile` needs "dst must be valid for writes and properly aligned":
        // `at` checked bounds inside a live, writable (PROT_WRITE) mapping.
        unsafe { p.write_volatile(v) };
        Ok(())
    }

    pub(crate) fn read16(&self, offset: u64) -> Result<u16> {
        let p = self.at(offset, 2)?.cast::<u16>();
        // SAFETY: as `read8`; `at` also checked 2-byte alignment of the absolute address.
        Ok(u16::from_le(unsafe { p.read_volatile() }))
    }

    pub(crate) fn write16(&self, offset: u64, v: u16) -> Result<()> {
        let p = self.at(offset, 2)?.cast::<u16>();
        // SAFETY: as `write8`; `at` also checked 2-byte alignment.
        unsafe { p.write_volatile(v.to_le()) };
        Ok(())
    }

    pub(crate) fn read32(&self, offset: u64) -> Result<u32> {
        let p = self.at(offset, 4)?.cast::<u32>();
        // SAFETY: as `read8`; `at` also checked 4-byte alignment.
        Ok(u32::from_le(unsafe { p.read_volatile() }))
    }

    pub(crate) fn write32(&self, offset: u64, v: u32) -> Result<()> {
        let p = self.at(offset, 4)?.cast::<u32>();
        // SAFETY: as `write8`; `at` also checked 4-byte alignment.
        unsafe { p.write_volatile(v.to_le()) };
        Ok(())
    }

    pub(crate) fn read64(&self, offset: u64) -> Result<u64> {
        let p = self.at(offset, 8)?.cast::<u64>();
        // SAFETY: as `read8`; `at` also checked 8-byte alignment.
        Ok(u64::from_le(unsafe { p.read_volatile() }))
    }

    pub(crate) fn write64(&self, offset: u64, v: u64) -> Result<()> {
        let p = self.at(offset, 8)?.cast::<u64>();
        // SAFETY: as `write8`; `at` also checked 8-byte alignment.
        unsafe { p.write_volatile(v.to_le()) };
        Ok(())
    }
}

/// Memory-mapped device registers: a raw pointer and a length, never a reference (STYLE P10).
///
/// Holds the mapping alive (`Arc<Mapping>`), so the pointer cannot dangle. Accesses are 32-bit,
/// aligned, bounds-checked and volatile; values are little-endian as in the datasheet.
#[derive(Debug, Clone)]
pub struct MmioRegion {
    _map: Arc<Mapping>,
    span: VolatileSpan,
    /// Offset of this window inside its device region (for sparse areas).
    base: u64,
}

impl MmioRegion {
    /// The whole of `map`, which starts at offset `base` of its region.
    pub fn new(map: Arc<Mapping>, base: u64) -> Result<Self> {
        let span = VolatileSpan::of(&map, 0, map.len())?;
        Ok(MmioRegion {
            _map: map,
            span,
            base,
        })
    }
    /// Offset of this window inside its device region.
    pub fn base(&self) -> u64 {
        self.base
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.span.len()
    }
    /// True if empty (never, for a mapping).
    pub fn is_empty(&self) -> bool {
        self.span.len() == 0
    }
    /// Volatile 32-bit read at `offset` (relative to this window).
    pub fn read32(&self, offset: u64) -> Result<u32> {
        self.span.read32(offset)
    }
    /// Volatile 32-bit write at `offset` (relative to this window).
    pub fn write32(&self, offset: u64, value: u32) -> Result<()> {
        self.span.write32(offset, value)
    }
}

impl RegisterIo for MmioRegion {
    fn len(&self) -> u64 {
        self.span.len() as u64
    }
    fn read32(&self, offset: u64) -> Result<u32> {
        self.span.read32(offset)
    }
    fn write32(&self, offset: u64, value: u32) -> Result<()> {
        self.span.write32(offset, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fake::{sparse_mmap_cap, FakeMem};

    fn header(flags: u32, cap_offset: u32, size: u64) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&cap_offset.to_ne_bytes());
        v.extend_from_slice(&size.to_ne_bytes());
        v.extend_from_slice(&(1u64 << 40).to_ne_bytes());
        v
    }

    #[test]
    fn parses_sparse_mmap_and_type_caps() {
        let mut b = header(0xF, 32, 0x4000);
        let sparse = sparse_mmap_cap(&[(0, 0x1000), (0x2000, 0x1000), (0x3000, 0)], 0);
        let type_off = 32 + sparse.len() as u32;
        b.extend_from_slice(&sparse_mmap_cap(
            &[(0, 0x1000), (0x2000, 0x1000), (0x3000, 0)],
            type_off,
        ));
        b.extend_from_slice(&2u16.to_ne_bytes());
        b.extend_from_slice(&1u16.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&0x8000_0000u32.to_ne_bytes());
        b.extend_from_slice(&5u32.to_ne_bytes());
        let info = RegionInfo::parse(1, &b).unwrap();
        assert_eq!(info.size, 0x4000);
        assert_eq!(info.offset, 1 << 40);
        assert_eq!(info.caps.len(), 2);
        assert_eq!(
            info.caps[1],
            RegionCap::Type {
                ty: 0x8000_0000,
                subtype: 5
            }
        );
        // The empty area is dropped from the mmap list.
        assert_eq!(
            info.mmap_areas(),
            vec![
                SparseArea {
                    offset: 0,
                    size: 0x1000
                },
                SparseArea {
                    offset: 0x2000,
                    size: 0x1000
                }
            ]
        );
    }

    #[test]
    fn mmap_areas_without_caps_and_without_mmap() {
        let info = RegionInfo::parse(0, &header(0x7, 0, 0x2000)).unwrap();
        assert_eq!(
            info.mmap_areas(),
            vec![SparseArea {
                offset: 0,
                size: 0x2000
            }]
        );
        let info = RegionInfo::parse(0, &header(0x3, 0, 0x2000)).unwrap();
        assert!(info.mmap_areas().is_empty());
        // Caps flag set but cap_offset 0 (kernel: argsz was too small) -> no caps, whole region.
        let info = RegionInfo::parse(0, &header(0xF, 0, 0x2000)).unwrap();
        assert!(info.caps.is_empty());
    }

    #[test]
    fn rejects_malformed_chains() {
        let short = RegionInfo::parse(0, &[0u8; 31]).unwrap_err();
        assert!(
            matches!(short, VfioError::BadCapChain { offset: 0, .. }),
            "{short}"
        );

        let mut b = header(0xF, 16, 0x1000);
        b.extend_from_slice(&sparse_mmap_cap(&[], 0));
        let e = RegionInfo::parse(0, &b).unwrap_err();
        assert!(
            matches!(e, VfioError::BadCapChain { offset: 16, .. }),
            "{e}"
        );

        let mut b = header(0xF, 32, 0x1000);
        b.extend_from_slice(&sparse_mmap_cap(&[(0, 0x1000)], 32)); // points at itself
        let e = RegionInfo::parse(0, &b).unwrap_err();
        assert!(e.to_string().contains("backwards"), "{e}");

        let mut b = header(0xF, 32, 0x1000);
        b.extend_from_slice(&sparse_mmap_cap(&[(0x800, 0x1000)], 0)); // past the region end
        let e = RegionInfo::parse(0, &b).unwrap_err();
        assert!(e.to_string().contains("outside the region"), "{e}");

        let mut b = header(0xF, 32, 0x1000);
        let mut cap = sparse_mmap_cap(&[(0, 0x1000), (0, 0x10)], 0);
        cap.truncate(cap.len() - 4); // second area cut short
        b.extend_from_slice(&cap);
        let e = RegionInfo::parse(0, &b).unwrap_err();
        assert!(
            matches!(e, VfioError::BadCapChain { offset: 64, .. }),
            "{e}"
        );

        let mut b = header(0xF, 32, 0x1000);
        b.extend_from_slice(&[7, 0, 1]); // header cut short
        let e = RegionInfo::parse(0, &b).unwrap_err();
        assert!(e.to_string().contains("past the end"), "{e}");
    }

    #[test]
    fn unknown_caps_are_kept() {
        let mut b = header(0xF, 32, 0x1000);
        b.extend_from_slice(&77u16.to_ne_bytes());
        b.extend_from_slice(&3u16.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        let info = RegionInfo::parse(0, &b).unwrap();
        assert_eq!(info.caps, vec![RegionCap::Unknown { id: 77, version: 3 }]);
    }

    fn region(len: usize) -> (std::sync::Arc<FakeMem>, MmioRegion) {
        let mem = FakeMem::new(len).unwrap();
        let map = Arc::new(Mapping::fake(mem.clone(), 0, len).unwrap());
        (mem, MmioRegion::new(map, 0).unwrap())
    }

    #[test]
    fn mmio_reads_and_writes_little_endian_words() {
        let (mem, r) = region(4096);
        r.write32(8, 0x1122_3344).unwrap();
        let mut b = [0u8; 4];
        mem.read(8, &mut b).unwrap();
        assert_eq!(b, [0x44, 0x33, 0x22, 0x11]);
        mem.write(0xFFC, &[1, 2, 3, 4]).unwrap();
        assert_eq!(r.read32(0xFFC).unwrap(), 0x0403_0201);
        assert_eq!(RegisterIo::len(&r), 4096);
    }

    #[test]
    fn mmio_bounds_and_alignment_are_checked() {
        let (_mem, r) = region(4096);
        for off in [4096u64, 4094, 4093, u64::MAX, u64::MAX - 2] {
            let e = r.read32(off).unwrap_err();
            assert!(
                matches!(
                    e,
                    VfioError::OutOfBounds {
                        width: 4,
                        len: 4096,
                        ..
                    }
                ),
                "{off}: {e}"
            );
            assert!(r.write32(off, 1).is_err(), "{off}");
        }
        for off in [1u64, 2, 3, 6] {
            assert!(r.read32(off).is_err(), "misaligned {off}");
        }
        assert!(r.read32(4092).is_ok());
    }

    #[test]
    fn span_widths() {
        let mem = FakeMem::new(64).unwrap();
        let map = Mapping::fake(mem, 0, 64).unwrap();
        let s = VolatileSpan::of(&map, 16, 32).unwrap();
        s.write64(8, 0x0102_0304_0506_0708).unwrap();
        assert_eq!(s.read8(8).unwrap(), 0x08);
        assert_eq!(s.read16(14).unwrap(), 0x0102);
        s.write16(0, 0xBEEF).unwrap();
        s.write8(2, 0x7F).unwrap();
        assert_eq!(s.read32(0).unwrap(), 0x007F_BEEF);
        assert_eq!(s.read64(8).unwrap(), 0x0102_0304_0506_0708);
        assert!(s.read64(32).is_err());
        assert!(s.read64(4).is_err());
        assert!(VolatileSpan::of(&map, 40, 32).is_err());
    }
}

//! The MAD buffer pool: 256-byte DMA buffers that move between software and the device as
//! ownership tokens (STYLE P10, docs/DESIGN.md "vfio and device memory").
//!
//! * A [`MadBuf`] is software's token: it derefs to the 256 bytes, and only it can. It is made
//!   by [`MadPool::alloc`] (a free buffer the device does not know) or by the ring code when a
//!   completion hands a buffer back (after the CQE phase bit was seen and `dma_rmb()` — an
//!   `Acquire` fence — was issued). Dropping it returns the buffer to the pool.
//! * Posting a buffer to a ring *consumes* the `MadBuf` and leaves a `DeviceOwned` in the
//!   ring slot: no deref, no slice, only the IOVA. Software therefore cannot hold a `&[u8]` into
//!   a buffer the device may write.
//!
//! `unsafe` here: the two slice views in `Deref`/`DerefMut`, each with its proof.
#![allow(unsafe_code)]

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

use ibmad::zerocopy::FromBytes;
use ibmad::Smp;
use vfio::{Dma, DmaBuffer};

use crate::regs::MAD_LEN;

#[derive(Debug)]
struct PoolShared {
    mem: DmaBuffer,
    free: Mutex<Vec<u32>>,
    count: u32,
}

/// A fixed set of 256-byte DMA buffers. Cloning shares the pool.
#[derive(Debug, Clone)]
pub struct MadPool {
    shared: Arc<PoolShared>,
}

impl MadPool {
    /// `count` buffers in one DMA allocation mapped for the device.
    pub fn new(dma: &Dma, count: u32) -> vfio::Result<MadPool> {
        let mem = dma.alloc(count as usize * MAD_LEN)?;
        Ok(MadPool {
            shared: Arc::new(PoolShared {
                mem,
                free: Mutex::new((0..count).rev().collect()),
                count,
            }),
        })
    }

    /// A free buffer (its previous contents are not cleared), or `None` if all are in use.
    pub fn alloc(&self) -> Option<MadBuf> {
        let idx = self.shared.free.lock().ok()?.pop()?;
        let buf = self
            .shared
            .mem
            .slice(idx as usize * MAD_LEN, MAD_LEN)
            .ok()?;
        Some(MadBuf {
            pool: Some(self.shared.clone()),
            idx,
            buf,
        })
    }

    /// Buffers currently free.
    pub fn available(&self) -> usize {
        self.shared.free.lock().map_or(0, |f| f.len())
    }

    /// Buffers in the pool.
    pub fn capacity(&self) -> u32 {
        self.shared.count
    }
}

/// Software's ownership token for one 256-byte MAD buffer. See the [module docs](self).
#[derive(Debug)]
pub struct MadBuf {
    /// `None` once moved into a ring (then `Drop` does nothing).
    pool: Option<Arc<PoolShared>>,
    idx: u32,
    buf: DmaBuffer,
}

impl MadBuf {
    /// Device address of the buffer.
    pub fn iova(&self) -> u64 {
        self.buf.iova()
    }

    /// Pool index (for tests and statistics).
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// Zero-copy view of the buffer as an SMP.
    pub fn smp(&self) -> Option<&Smp> {
        Smp::ref_from_bytes(self).ok()
    }

    /// Hands the buffer to the device: the token is consumed; the ring keeps the returned
    /// [`DeviceOwned`] until the completion.
    pub(crate) fn into_device(mut self) -> DeviceOwned {
        DeviceOwned {
            pool: self.pool.take(),
            idx: self.idx,
            buf: self.buf.clone(),
        }
    }
}

impl Deref for MadBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `DmaBuffer::as_slice` requires "for the whole lifetime of the returned slice,
        // software must own these bytes: the device must not write them … and no other handle
        // may write them". A `MadBuf` exists only while software owns its buffer: `alloc` takes
        // it from the free list (never posted), `DeviceOwned::reclaim` makes one only after the
        // CQE phase was seen and `dma_rmb()` issued (ring.rs), and posting consumes the
        // `MadBuf` (`into_device`), which the borrow of `self` forbids while this slice lives.
        // Each index is in exactly one of free list / MadBuf / DeviceOwned, so no other handle
        // writes these 256 bytes.
        unsafe { self.buf.as_slice() }
    }
}

impl DerefMut for MadBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: `DmaBuffer::as_mut_slice` requires exclusive software ownership for the
        // borrow: the device does not access the bytes (same argument as `deref`) and no other
        // handle does — the pool's backing handle is used only to cut slices, never to access
        // bytes, and this index belongs to this `MadBuf` alone; `&mut self` excludes other views.
        unsafe { self.buf.as_mut_slice() }
    }
}

impl Drop for MadBuf {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            if let Ok(mut f) = pool.free.lock() {
                f.push(self.idx);
            }
        }
    }
}

/// A buffer the device owns (posted to a ring). No access to its bytes.
#[derive(Debug)]
pub(crate) struct DeviceOwned {
    pool: Option<Arc<PoolShared>>,
    idx: u32,
    buf: DmaBuffer,
}

impl DeviceOwned {
    /// Back to software. Only ring.rs calls this, after the buffer's CQE was seen and
    /// `dma_rmb()` issued.
    pub(crate) fn reclaim(mut self) -> MadBuf {
        MadBuf {
            pool: self.pool.take(),
            idx: self.idx,
            buf: self.buf.clone(),
        }
    }
}

//! QP0 descriptor rings and the completion queue in host memory (RA-1 §7.2), with the
//! barriers named after the kernel's: `dma_wmb()` between writing a descriptor and setting its
//! `OWN` bit, `wmb()` before a doorbell (the caller rings it), `dma_rmb()` after seeing a CQE's
//! phase bit and before reading the CQE or touching the buffer it returns.
//!
//! All ring memory is accessed through [`vfio::DmaBuffer`]'s volatile accessors: no `unsafe`
//! and no reference into memory the device writes.

use vfio::{dma_rmb, dma_wmb, DmaBuffer};

use crate::pool::{DeviceOwned, MadBuf};
use crate::regs::{cqe, desc, DESC_OWN, DESC_SIZE, MAD_LEN};

/// Addressing of a TX descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxMeta {
    /// Egress port 1..=N, or `regs::PORT_BY_LFT`.
    pub port: u8,
    /// LRH DLID.
    pub dlid: u16,
    /// LRH SLID.
    pub slid: u16,
    /// LRH SL.
    pub sl: u8,
    /// v1.1: 0 sends an SMP from QP0 on VL15, 1 a GMP from QP1 (RA-1 §7.7).
    pub qp: u8,
    /// v1.1: destination QP of a QP1 send (24 bits); 0 for QP0.
    pub dqp: u32,
}

/// A descriptor ring (RX or TX).
#[derive(Debug)]
pub(crate) struct DescRing {
    mem: DmaBuffer,
    log2: u32,
    /// Descriptors ever posted (the doorbell value).
    prod: u32,
    /// Descriptors completed (seen in the CQ).
    done: u32,
    slots: Vec<Option<DeviceOwned>>,
}

impl DescRing {
    pub(crate) fn new(mem: DmaBuffer, log2: u32) -> DescRing {
        let n = 1usize << log2;
        DescRing {
            mem,
            log2,
            prod: 0,
            done: 0,
            slots: (0..n).map(|_| None).collect(),
        }
    }

    pub(crate) fn iova(&self) -> u64 {
        self.mem.iova()
    }

    pub(crate) fn size(&self) -> u32 {
        1 << self.log2
    }

    pub(crate) fn prod(&self) -> u32 {
        self.prod
    }

    /// Posted and not yet completed.
    pub(crate) fn outstanding(&self) -> u32 {
        self.prod.wrapping_sub(self.done)
    }

    pub(crate) fn is_full(&self) -> bool {
        self.outstanding() >= self.size()
    }

    /// Writes the descriptor for `buf` (OWN = 0), `dma_wmb()`, sets OWN. The buffer token moves
    /// into the ring. Returns it back if the ring is full. The caller rings the doorbell.
    pub(crate) fn post(&mut self, buf: MadBuf, meta: TxMeta) -> Result<(), MadBuf> {
        if self.is_full() {
            return Err(buf);
        }
        let slot = self.prod & (self.size() - 1);
        let base = u64::from(slot) * DESC_SIZE;
        let word = (MAD_LEN as u32) | (u32::from(meta.port) << 16);
        let wr = || -> vfio::Result<()> {
            self.mem.write64(base + desc::ADDR, buf.iova())?;
            self.mem.write32(base + desc::LEN_PORT_FLAGS, word)?;
            self.mem.write32(
                base + desc::LIDS,
                u32::from(meta.dlid) | (u32::from(meta.slid) << 16),
            )?;
            self.mem.write32(
                base + desc::SL,
                u32::from(meta.sl) | (u32::from(meta.qp) << 8),
            )?;
            self.mem.write32(base + desc::DQP, meta.dqp & 0x00FF_FFFF)?;
            self.mem
                .write64(base + desc::COOKIE, u64::from(self.prod))?;
            // The descriptor's contents before its ownership bit.
            dma_wmb();
            self.mem.write32(
                base + desc::LEN_PORT_FLAGS,
                word | (u32::from(DESC_OWN) << 24),
            )
        };
        if wr().is_err() {
            return Err(buf);
        }
        self.slots[slot as usize] = Some(buf.into_device());
        self.prod = self.prod.wrapping_add(1);
        Ok(())
    }

    /// The completion for `index` arrived (its CQE was read after `dma_rmb()`): the buffer
    /// returns to software.
    pub(crate) fn complete(&mut self, index: u16) -> Option<MadBuf> {
        let owned = self.slots.get_mut(usize::from(index))?.take()?;
        self.done = self.done.wrapping_add(1);
        Some(owned.reclaim())
    }
}

/// One completion, copied out of the CQ after the `Acquire` fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Descriptor cookie.
    pub cookie: u64,
    /// Bytes transferred.
    pub byte_count: u16,
    /// RX: ingress port; TX: egress port used.
    pub port: u8,
    /// CQE status (`regs::status`).
    pub status: u8,
    /// RX: LRH SLID.
    pub slid: u16,
    /// LRH DLID.
    pub dlid: u16,
    /// RX: LRH SL.
    pub sl: u8,
    /// 0 RX, 1 TX.
    pub ring: u8,
    /// Descriptor slot.
    pub index: u16,
    /// v1.1: the QP the packet arrived at (RX) or was sent from (TX): 0 or 1.
    pub qp: u8,
    /// v1.1, RX of a GMP: the sender's QP (24 bits).
    pub src_qp: u32,
}

/// The completion queue.
#[derive(Debug)]
pub(crate) struct CompletionQueue {
    mem: DmaBuffer,
    log2: u32,
    cons: u32,
}

impl CompletionQueue {
    pub(crate) fn new(mem: DmaBuffer, log2: u32) -> CompletionQueue {
        CompletionQueue { mem, log2, cons: 0 }
    }

    pub(crate) fn iova(&self) -> u64 {
        self.mem.iova()
    }

    pub(crate) fn cons(&self) -> u32 {
        self.cons
    }

    /// The next CQE if the device has written it: volatile read of the phase word, then
    /// `dma_rmb()`, then the rest.
    pub(crate) fn poll(&mut self) -> vfio::Result<Option<Completion>> {
        let slot = self.cons & ((1 << self.log2) - 1);
        let base = u64::from(slot) * DESC_SIZE;
        let expected = u32::from((self.cons >> self.log2) & 1 == 0);
        let flags = self.mem.read32(base + cqe::FLAGS)?;
        if flags & 1 != expected {
            return Ok(None);
        }
        // The device wrote bytes 0..28 before the phase word; read them only now.
        dma_rmb();
        let cps = self.mem.read32(base + cqe::COUNT_PORT_STATUS)?;
        let lids = self.mem.read32(base + cqe::LIDS)?;
        let sri = self.mem.read32(base + cqe::SL_RING_INDEX)?;
        let qps = self.mem.read32(base + cqe::QP_SRC)?;
        let c = Completion {
            cookie: self.mem.read64(base + cqe::COOKIE)?,
            byte_count: cps as u16,
            port: (cps >> 16) as u8,
            status: (cps >> 24) as u8,
            slid: lids as u16,
            dlid: (lids >> 16) as u16,
            sl: sri as u8,
            ring: (sri >> 8) as u8,
            index: (sri >> 16) as u16,
            qp: qps as u8,
            src_qp: qps >> 8,
        };
        self.cons = self.cons.wrapping_add(1);
        Ok(Some(c))
    }
}

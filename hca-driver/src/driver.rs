//! [`Hca`]: bring-up (RA-1 §4.1, every wait bounded), the QP0 datapath and [`MadPort`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibmad::{Lid, MadMeta, MadPort, MgmtClass, PortCaps, PortError, PortNum, QKey};
use vfio::{wmb, Dma, EventFd, HugePages, VfioDevice, DEFAULT_IOVA_WINDOW, MSIX_IRQ_INDEX};

use crate::backend::DeviceBackend;
use crate::error::{DriverError, InitError};
use crate::mmio::Regs;
use crate::pool::{MadBuf, MadPool};
use crate::regs::{self, *};
use crate::ring::{Completion, CompletionQueue, DescRing, TxMeta};

/// How completions are noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IrqMode {
    /// Poll the CQ phase bit; all interrupt causes stay masked.
    BusyPoll,
    /// MSI-X eventfds (RX, TX, PORT, ERR); [`Hca::wait`] sleeps on them.
    Interrupt,
}

/// Driver parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverConfig {
    /// log2 of the RX ring size (4..=12).
    pub rx_log2: u32,
    /// log2 of the TX ring size (4..=12).
    pub tx_log2: u32,
    /// Extra pool buffers beyond the rings (received MADs software still holds).
    pub spare_buffers: u32,
    /// Interrupt or busy-poll.
    pub mode: IrqMode,
    /// Slack added to the device's advertised timeouts.
    pub slack: Duration,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            rx_log2: 8,
            tx_log2: 8,
            spare_buffers: 256,
            mode: IrqMode::BusyPoll,
            slack: Duration::from_millis(10),
        }
    }
}

/// What bring-up read from the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceFacts {
    /// `VERSION` major/minor.
    pub version: (u16, u16),
    /// `NODE_GUID`.
    pub node_guid: u64,
    /// `CAPS.NUM_PORTS`.
    pub num_ports: u8,
    /// `CAPS.SWITCH`.
    pub is_switch: bool,
    /// `CAPS.VL_CAP`.
    pub vl_cap: u8,
    /// `CAPS.MTU_CAP`.
    pub mtu_cap: u8,
    /// `FDB_CAP.LFT_BLOCKS`.
    pub lft_blocks: u16,
    /// `FDB_CAP.MFT_BLOCKS`.
    pub mft_blocks: u16,
    /// Reset bound.
    pub reset_timeout: Duration,
    /// Init bound.
    pub init_timeout: Duration,
    /// `CAPS.QP1` on a v1.1 device: GMPs reach the host on QP1 (RA-1 §7.7); the driver then
    /// sets `CTRL.QP1_EN`.
    pub qp1: bool,
}

/// Metadata of a received SMP (from its CQE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxMeta {
    /// Ingress port.
    pub port: u8,
    /// LRH SLID.
    pub slid: u16,
    /// LRH DLID.
    pub dlid: u16,
    /// LRH SL.
    pub sl: u8,
    /// The QP it arrived at: 0 (an SMP) or 1 (a GMP, RA-1 v1.1 §7.7).
    pub qp: u8,
    /// A GMP's sender QP (0 for an SMP).
    pub src_qp: u32,
}

impl RxMeta {
    /// As [`MadMeta`] (`port` = ingress port, or 0 for a GMP to a switch; `qp` = the remote
    /// QP, with the GSI Q_Key for a GMP).
    pub fn mad_meta(&self) -> MadMeta {
        MadMeta {
            port: PortNum(self.port),
            slid: Lid(self.slid),
            dlid: Lid(self.dlid),
            qp: if self.qp == 1 { self.src_qp } else { 0 },
            qkey: if self.qp == 1 { QKey::GSI } else { QKey(0) },
            sl: self.sl,
            ..Default::default()
        }
    }
}

/// Datapath counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// RX completions with status OK.
    pub rx: u64,
    /// RX completions with an error status (dropped).
    pub rx_errors: u64,
    /// TX completions OK.
    pub tx: u64,
    /// TX completions with an error status.
    pub tx_errors: u64,
    /// Sends refused because the TX ring was full.
    pub tx_full: u64,
    /// RX refills skipped because the pool was empty.
    pub rx_starved: u64,
    /// Interrupts taken.
    pub interrupts: u64,
}

fn cap_timeout(ms: u32, dflt: u32) -> Duration {
    let ms = if ms == 0 { dflt } else { ms.min(1000) };
    Duration::from_millis(u64::from(ms))
}

/// An RA-1 device brought up, with its QP0 rings running.
#[derive(Debug)]
pub struct Hca {
    dev: Arc<dyn VfioDevice>,
    regs: Regs,
    // Field order matters for drop: rings and pool before the DMA mappings.
    rx: DescRing,
    tx: DescRing,
    cq: CompletionQueue,
    pool: MadPool,
    irqs: Vec<EventFd>,
    facts: DeviceFacts,
    cfg: DriverConfig,
    received: VecDeque<(RxMeta, MadBuf)>,
    tx_done: VecDeque<Completion>,
    stats: DriverStats,
    /// Descriptors posted without their doorbell yet.
    tx_unrung: bool,
    dma: Dma,
}

impl Hca {
    /// Brings the device up (RA-1 §4.1).
    pub fn open(backend: &dyn DeviceBackend, cfg: DriverConfig) -> Result<Hca, InitError> {
        for l in [cfg.rx_log2, cfg.tx_log2] {
            if !(RING_LOG2_MIN..=RING_LOG2_MAX).contains(&l) {
                return Err(InitError::Config(format!(
                    "ring size 2^{l} outside 2^{RING_LOG2_MIN}..=2^{RING_LOG2_MAX}"
                )));
            }
        }
        let dev = backend.device();
        // 1. Memory space + bus master.
        dev.enable_bus_master()?;
        let regs = Regs::new(dev.bar(0)?);
        // 2. Identity.
        let id = regs.read(ID)?;
        if id != ID_MAGIC {
            return Err(InitError::NotRa1 { got: id });
        }
        let ver = regs.read(VERSION)?;
        let version = ((ver >> 16) as u16, ver as u16);
        if u32::from(version.0) != VERSION_MAJOR {
            return Err(InitError::Version {
                major: version.0,
                minor: version.1,
            });
        }
        let caps = regs.read(CAPS)?;
        let fdb = regs.read(FDB_CAP)?;
        let to = regs.read(TIMEOUTS)?;
        let guid =
            u64::from(regs.read(NODE_GUID_LO)?) | (u64::from(regs.read(NODE_GUID_HI)?) << 32);
        let num_ports = (caps >> 8) as u8;
        if num_ports == 0 || num_ports == 255 {
            return Err(InitError::BadPorts(num_ports));
        }
        let facts = DeviceFacts {
            version,
            node_guid: guid,
            num_ports,
            is_switch: caps & CAPS_SWITCH != 0,
            vl_cap: ((caps >> 16) & 0xF) as u8,
            mtu_cap: ((caps >> 20) & 0xF) as u8,
            lft_blocks: fdb as u16,
            mft_blocks: (fdb >> 16) as u16,
            reset_timeout: cap_timeout(to & 0xFFFF, 10),
            init_timeout: cap_timeout(to >> 16, 100),
            qp1: version.1 >= 1 && caps & CAPS_QP1 != 0,
        };
        // 3. Reset, bounded.
        regs.write(CTRL, CTRL_RESET)?;
        regs.wait_until(CTRL, CTRL_RESET, facts.reset_timeout + cfg.slack, |v| {
            v & CTRL_RESET == 0
        })?;
        // 4. Rings.
        let dma = Dma::new(dev.clone(), DEFAULT_IOVA_WINDOW, HugePages::Auto)?;
        let cq_log2 = cfg.rx_log2.max(cfg.tx_log2) + 1;
        let rx = DescRing::new(dma.alloc((DESC_SIZE as usize) << cfg.rx_log2)?, cfg.rx_log2);
        let tx = DescRing::new(dma.alloc((DESC_SIZE as usize) << cfg.tx_log2)?, cfg.tx_log2);
        // Fresh memfd pages are zero: the CQ starts zeroed as §4.1 step 4 requires.
        let cq = CompletionQueue::new(dma.alloc((DESC_SIZE as usize) << cq_log2)?, cq_log2);
        let pool = MadPool::new(&dma, rx.size() + tx.size() + cfg.spare_buffers)?;
        let lo_hi = |v: u64| (v as u32, (v >> 32) as u32);
        for (base, size, iova, log2) in [
            (RXQ_BASE_LO, RXQ_SIZE, rx.iova(), cfg.rx_log2),
            (TXQ_BASE_LO, TXQ_SIZE, tx.iova(), cfg.tx_log2),
            (CQ_BASE_LO, CQ_SIZE, cq.iova(), cq_log2),
        ] {
            let (lo, hi) = lo_hi(iova);
            regs.write(base, lo)?;
            regs.write(base + 4, hi)?;
            regs.write(size, log2)?;
        }
        let irqs = match cfg.mode {
            IrqMode::Interrupt => dev.enable_msix(MSIX_VECTORS)?,
            IrqMode::BusyPoll => Vec::new(),
        };
        let mut hca = Hca {
            dev,
            regs,
            rx,
            tx,
            cq,
            pool,
            irqs,
            facts,
            cfg,
            received: VecDeque::new(),
            tx_done: VecDeque::new(),
            stats: DriverStats::default(),
            tx_unrung: false,
            dma,
        };
        hca.refill_rx().map_err(|e| match e {
            DriverError::Vfio(v) => InitError::Vfio(v),
            other => InitError::Config(other.to_string()),
        })?;
        // 5. Init handshake, bounded.
        let int_en = if cfg.mode == IrqMode::Interrupt {
            CTRL_INT_EN
        } else {
            0
        };
        let qp1_en = if hca.facts.qp1 { CTRL_QP1_EN } else { 0 };
        hca.regs
            .write(CTRL, CTRL_INIT | CTRL_QP0_EN | int_en | qp1_en)?;
        let st = hca.regs.wait_until(
            STATUS,
            STATUS_READY | STATUS_INIT_ERR,
            hca.facts.init_timeout + cfg.slack,
            |v| v & (STATUS_READY | STATUS_INIT_ERR) != 0,
        )?;
        if st & STATUS_INIT_ERR != 0 {
            return Err(InitError::Rejected {
                cause: hca.regs.read(ERR_CAUSE)?,
            });
        }
        // 6. Interrupts.
        if cfg.mode == IrqMode::Interrupt {
            hca.regs.write(INT_MASK, 0)?;
        }
        Ok(hca)
    }

    /// What bring-up read.
    pub fn facts(&self) -> &DeviceFacts {
        &self.facts
    }

    /// BAR0 (for the host SMA's register writes).
    pub fn regs(&self) -> Regs {
        self.regs.clone()
    }

    /// The device.
    pub fn device(&self) -> &Arc<dyn VfioDevice> {
        &self.dev
    }

    /// Counters.
    pub fn stats(&self) -> DriverStats {
        self.stats
    }

    /// DMA bookkeeping (mappings of the rings and the pool).
    pub fn dma(&self) -> &Dma {
        &self.dma
    }

    /// The buffer pool.
    pub fn pool(&self) -> &MadPool {
        &self.pool
    }

    /// A free buffer to build a MAD in (zero-copy send: fill it, then [`Hca::post_send`]).
    pub fn alloc(&self) -> Option<MadBuf> {
        self.pool.alloc()
    }

    /// The driver configuration.
    pub fn config(&self) -> &DriverConfig {
        &self.cfg
    }

    fn refill_rx(&mut self) -> Result<(), DriverError> {
        let before = self.rx.prod();
        while !self.rx.is_full() {
            let Some(b) = self.pool.alloc() else {
                self.stats.rx_starved += 1;
                break;
            };
            let meta = TxMeta {
                port: 0,
                dlid: 0,
                slid: 0,
                sl: 0,
                qp: 0,
                dqp: 0,
            };
            if self.rx.post(b, meta).is_err() {
                break;
            }
        }
        if self.rx.prod() != before {
            // Descriptors (OWN set) before the doorbell.
            wmb();
            self.regs.write(RXQ_PROD, self.rx.prod())?;
        }
        Ok(())
    }

    /// Posts `buf` (the MAD, 256 bytes) for sending. Back-pressure: when the TX ring is full
    /// the buffer comes back with [`DriverError::TxFull`]; poll completions and retry.
    pub fn post_send(&mut self, buf: MadBuf, meta: TxMeta) -> Result<(), (DriverError, MadBuf)> {
        if let Err(b) = self.tx.post(buf, meta) {
            self.stats.tx_full += 1;
            return Err((DriverError::TxFull, b));
        }
        self.tx_unrung = false;
        wmb();
        if let Err(e) = self.regs.write(TXQ_PROD, self.tx.prod()) {
            // The descriptor is posted; the next doorbell publishes it.
            tracing::warn!("TXQ_PROD doorbell: {e}");
        }
        Ok(())
    }

    /// Posts `buf` without ringing the doorbell (batching): call [`Hca::ring_tx_doorbell`]
    /// after the batch. Back-pressure as [`Hca::post_send`].
    pub fn post_send_deferred(
        &mut self,
        buf: MadBuf,
        meta: TxMeta,
    ) -> Result<(), (DriverError, MadBuf)> {
        if let Err(b) = self.tx.post(buf, meta) {
            self.stats.tx_full += 1;
            return Err((DriverError::TxFull, b));
        }
        self.tx_unrung = true;
        Ok(())
    }

    /// Publishes descriptors posted with [`Hca::post_send_deferred`]: `wmb()` then `TXQ_PROD`.
    pub fn ring_tx_doorbell(&mut self) -> Result<(), DriverError> {
        if self.tx_unrung {
            self.tx_unrung = false;
            wmb();
            self.regs.write(TXQ_PROD, self.tx.prod())?;
        }
        Ok(())
    }

    /// Drains the CQ: received MADs queue for [`Hca::recv_token`] (the RX ring is refilled from the
    /// pool), sent buffers return to the pool. Returns the number of completions.
    pub fn poll(&mut self) -> Result<usize, DriverError> {
        self.ring_tx_doorbell()?;
        let mut n = 0;
        while let Some(c) = self.cq.poll()? {
            n += 1;
            match c.ring {
                0 => {
                    let buf = self
                        .rx
                        .complete(c.index)
                        .ok_or(DriverError::BadCompletion {
                            ring: 0,
                            index: c.index,
                        })?;
                    if c.status == status::OK && c.byte_count as usize == MAD_LEN {
                        self.stats.rx += 1;
                        let meta = RxMeta {
                            port: c.port,
                            slid: c.slid,
                            dlid: c.dlid,
                            sl: c.sl,
                            qp: c.qp,
                            src_qp: c.src_qp,
                        };
                        self.received.push_back((meta, buf));
                    } else {
                        self.stats.rx_errors += 1;
                    }
                }
                _ => {
                    let _buf = self
                        .tx
                        .complete(c.index)
                        .ok_or(DriverError::BadCompletion {
                            ring: 1,
                            index: c.index,
                        })?;
                    if c.status == status::OK {
                        self.stats.tx += 1;
                    } else {
                        self.stats.tx_errors += 1;
                        if self.tx_done.len() < 1024 {
                            self.tx_done.push_back(c);
                        }
                    }
                }
            }
        }
        if n > 0 {
            wmb();
            self.regs.write(CQ_CONS, self.cq.cons())?;
        }
        // Also after a starved refill: buffers software released since then go back on the ring.
        if !self.rx.is_full() {
            self.refill_rx()?;
        }
        if n == 0 && self.regs.read(STATUS)? & STATUS_FATAL != 0 {
            let cause = self.regs.read(ERR_CAUSE)?;
            let addr = u64::from(self.regs.read(ERR_ADDR_LO)?)
                | (u64::from(self.regs.read(ERR_ADDR_HI)?) << 32);
            return Err(DriverError::Fatal { cause, addr });
        }
        Ok(n)
    }

    /// The next received MAD: its metadata and the buffer token (zero-copy: deref it, or
    /// [`MadBuf::smp`]). Dropping the token returns the buffer to the pool.
    pub fn recv_token(&mut self) -> Option<(RxMeta, MadBuf)> {
        self.received.pop_front()
    }

    /// TX completions with an error status since the last call.
    pub fn take_tx_errors(&mut self) -> Vec<Completion> {
        self.tx_done.drain(..).collect()
    }

    /// Sends still owned by the device.
    pub fn tx_outstanding(&self) -> u32 {
        self.tx.outstanding()
    }

    /// Waits up to `timeout` for device activity. Interrupt mode: sleeps on the MSI-X eventfds
    /// and clears the causes that fired (RA-1 §8: cause first, then drain). Busy-poll: spins on
    /// the CQ. Returns true if something may be ready.
    pub fn wait(&mut self, timeout: Duration) -> Result<bool, DriverError> {
        let deadline = Instant::now() + timeout;
        match self.cfg.mode {
            IrqMode::Interrupt => {
                let fds: Vec<_> = self.irqs.iter().map(EventFd::raw).collect();
                let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
                let fired = self.dev.sys().poll_in(&fds, ms)?;
                if fired.is_none() {
                    return Ok(false);
                }
                let mut cause = 0;
                for (i, e) in self.irqs.iter().enumerate() {
                    if e.take()?.is_some() {
                        cause |= 1 << i;
                        self.stats.interrupts += 1;
                    }
                }
                // Clear RX/TX causes (PORT is cleared by `take_port_changes`).
                let w1c = cause & (INT_RX | INT_TX | INT_ERR);
                if w1c != 0 {
                    self.regs.write(INT_CAUSE, w1c)?;
                }
                Ok(true)
            }
            IrqMode::BusyPoll => loop {
                if self.poll()? > 0 || !self.received.is_empty() {
                    return Ok(true);
                }
                if Instant::now() >= deadline {
                    return Ok(false);
                }
                std::hint::spin_loop();
            },
        }
    }

    /// Ports whose state changed (RA-1 §5.2: clear `INT_CAUSE.PORT`, read and W1C the
    /// bitmap).
    pub fn take_port_changes(&mut self) -> Result<Vec<u8>, DriverError> {
        self.regs.write(INT_CAUSE, INT_PORT)?;
        let mut out = Vec::new();
        let words = usize::from(self.facts.num_ports) / 32 + 1;
        for w in 0..words.min(8) {
            let off = PORT_CHANGE + 4 * w as u64;
            let bits = self.regs.read(off)?;
            if bits != 0 {
                self.regs.write(off, bits)?;
                for b in 0..32 {
                    if bits & (1 << b) != 0 {
                        out.push((w * 32 + b) as u8);
                    }
                }
            }
        }
        Ok(out)
    }

    /// `PORT_STATE` of `port`: (LOGICAL, PHYS).
    pub fn port_state(&self, port: u8) -> Result<(u32, u32), DriverError> {
        let v = self.regs.port_read(port, P_STATE)?;
        Ok((v & 0xF, (v >> 4) & 0xF))
    }

    /// A QP0 counter (`regs::RX_SMPS` …).
    pub fn counter(&self, off: u64) -> Result<u32, DriverError> {
        Ok(self.regs.read(off)?)
    }
}

impl Drop for Hca {
    fn drop(&mut self) {
        // Stop the device before its memory goes: reset discards pending work (RA-1 §4.1).
        let _ = self.regs.write(regs::CTRL, regs::CTRL_RESET);
        if !self.irqs.is_empty() {
            let _ = self.dev.disable_irqs(MSIX_IRQ_INDEX);
        }
    }
}

fn port_err(e: DriverError) -> PortError {
    match e {
        DriverError::TxFull | DriverError::PoolEmpty => PortError::WouldBlock,
        DriverError::BadLength { len } => PortError::BadLength {
            len,
            expected: MAD_LEN,
        },
        other => PortError::Other(other.to_string()),
    }
}

impl MadPort for Hca {
    /// 256-byte MADs, no RMPP; GMPs on QP1 where the device has them (RA-1 v1.1).
    fn caps(&self) -> PortCaps {
        PortCaps {
            gmp: self.facts.qp1,
            ..PortCaps::SMP_ONLY
        }
    }

    /// `meta.port` is the egress port (1..=N), or 255 to route by the device's LFT to
    /// `meta.dlid`.
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        if mad.len() != MAD_LEN {
            return Err(port_err(DriverError::BadLength { len: mad.len() }));
        }
        if self.tx.is_full() {
            self.poll().map_err(port_err)?;
        }
        let mut buf = self.pool.alloc().ok_or(PortError::WouldBlock)?;
        buf.copy_from_slice(mad);
        let gmp = !MgmtClass(mad[1]).is_smp();
        let tx = TxMeta {
            port: meta.port.0,
            dlid: meta.dlid.0,
            slid: meta.slid.0,
            sl: meta.sl,
            qp: u8::from(gmp),
            dqp: if gmp { meta.qp } else { 0 },
        };
        self.post_send(buf, tx).map_err(|(e, _)| port_err(e))
    }

    /// `meta.port` is the ingress port from the CQE.
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError> {
        if self.received.is_empty() {
            self.poll().map_err(port_err)?;
        }
        let Some((meta, mad)) = self.received.front() else {
            return Ok(None);
        };
        let len = buf.len();
        let out = buf.get_mut(..MAD_LEN).ok_or(PortError::BadLength {
            len,
            expected: MAD_LEN,
        })?;
        out.copy_from_slice(mad);
        let m = meta.mad_meta();
        self.received.pop_front();
        Ok(Some((m, MAD_LEN)))
    }
}

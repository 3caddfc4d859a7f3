//! The RA-1 reference switch ASIC as a device model (docs/reference-asic.md).
//!
//! [`AsicModel`] is the register file, the QP0 rings, the port state machines and the LFT/MFT of
//! one switch. It is sans-IO: host memory and interrupts are reached through a [`DeviceEnv`]
//! (the in-process backend's DMA table, or the vfio-user server's context), and the wire is a
//! pair of queues — SMPs arrive through [`AsicModel::receive`], leave through
//! [`AsicModel::poll_wire`]; link changes come in through [`AsicModel::link_up`] /
//! [`AsicModel::link_down`] and link requests the host made leave through
//! [`AsicModel::poll_link_request`]. The data plane's view (what a fabric forwards with) is
//! [`AsicModel::lft_port`], [`AsicModel::lid_matches`] and [`AsicModel::port_logical`].
//!
//! Timing: the model does its work synchronously inside the register write that triggers it (a
//! doorbell), which satisfies RA-1 §7.4 ("on the next event-loop turn") trivially.

pub mod inproc;
pub mod server;

use std::collections::VecDeque;

use sma::{LinkRequest, PortConfig};

use crate::regs::{self, *};

/// Host memory and interrupt lines as the device sees them.
pub trait DeviceEnv {
    /// DMA read of host memory at `iova`.
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaFault>;
    /// DMA write of host memory at `iova`.
    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), DmaFault>;
    /// One aligned little-endian 32-bit DMA write (CQE phase word).
    fn dma_write32(&self, iova: u64, v: u32) -> Result<(), DmaFault> {
        self.dma_write(iova, &v.to_le_bytes())
    }
    /// Config-space Bus Master Enable.
    fn bus_master(&self) -> bool;
    /// Send MSI-X message `vector`.
    fn raise_irq(&self, vector: u32);
}

/// A DMA access hit unmapped memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("DMA fault at IOVA {iova:#x}")]
pub struct DmaFault {
    /// The address.
    pub iova: u64,
}

/// Injected misbehaviour, for fault tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelFault {
    /// Behaves per RA-1.
    #[default]
    None,
    /// `CTRL.RESET` never self-clears.
    ResetStuck,
    /// `CTRL.INIT` never produces `READY` or `INIT_ERR`.
    InitStuck,
}

/// Static facts of the modelled switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// NodeGUID (strap).
    pub node_guid: u64,
    /// External ports, 1..=254.
    pub num_ports: u8,
    /// Port capabilities, index = port number 0..=num_ports (0 unused).
    pub ports: Vec<PortConfig>,
    /// LFT capacity in 64-entry blocks (768 = 49152 LIDs).
    pub lft_blocks: u16,
    /// MFT capacity in 32-MLID blocks.
    pub mft_blocks: u16,
    /// Injected fault.
    pub fault: ModelFault,
}

impl ModelConfig {
    /// A switch with `num_ports` QDR 4x ports.
    pub fn switch(node_guid: u64, num_ports: u8) -> ModelConfig {
        ModelConfig {
            node_guid,
            num_ports,
            ports: vec![PortConfig::default_qdr_4x(); usize::from(num_ports) + 1],
            lft_blocks: 768,
            mft_blocks: 32,
            fault: ModelFault::None,
        }
    }
}

/// An SMP leaving the switch on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireTx {
    /// Egress port (after LFT lookup).
    pub port: u8,
    /// LRH SLID.
    pub slid: u16,
    /// LRH DLID.
    pub dlid: u16,
    /// LRH SL.
    pub sl: u8,
    /// v1.1: the source QP, 0 (an SMP on VL15) or 1 (a GMP from QP1, RA-1 §7.7).
    pub qp: u8,
    /// v1.1: the destination QP of a GMP (0 for an SMP).
    pub dqp: u32,
    /// The 256 MAD bytes.
    pub mad: Box<[u8; MAD_LEN]>,
}

/// What happened to an SMP handed to [`AsicModel::receive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxOutcome {
    /// Written to the host (RX buffer + CQE).
    Delivered,
    /// Failed the checks of RA-1 §7.1 (`RX_DROP_MALFORMED`, port `RCV_ERRORS`).
    Malformed,
    /// Before `READY` / while `QP0_EN = 0` (`RX_DROP_NOT_READY`).
    NotReady,
    /// No RX descriptor or CQ full (`RX_DROP_NO_DESC`, port `VL15_DROPPED`).
    NoDescriptor,
    /// The device is stopped (fatal error).
    Fatal,
}

#[derive(Debug, Clone, Copy, Default)]
struct Ring {
    base_lo: u32,
    base_hi: u32,
    log2: u32,
    prod: u32,
    cons: u32,
}

impl Ring {
    fn base(&self) -> u64 {
        (u64::from(self.base_hi) << 32) | u64::from(self.base_lo)
    }
    fn size(&self) -> u32 {
        1u32 << self.log2.min(13)
    }
    fn slot_addr(&self, index: u32) -> u64 {
        self.base() + u64::from(index & (self.size() - 1)) * DESC_SIZE
    }
    fn occupancy(&self) -> u32 {
        self.prod.wrapping_sub(self.cons)
    }
}

#[derive(Debug, Clone, Copy)]
struct PortRegs {
    logical: u32,
    phys: u32,
    width_enabled: u8,
    width_supported: u8,
    width_active: u8,
    speed_enabled: u8,
    speed_supported: u8,
    speed_active: u8,
    ext_enabled: u8,
    ext_supported: u8,
    ext_active: u8,
    mtu_cap: u8,
    neighbor_mtu: u8,
    vl_cap: u8,
    oper_vls: u8,
    down_reason: u8,
    down_count: u16,
    ctrl: u32,
    /// Counters at `+0x40..=+0x68`, index (off - 0x40) / 4.
    counters: [u32; 11],
}

impl PortRegs {
    fn new(c: &PortConfig) -> PortRegs {
        PortRegs {
            logical: logical::DOWN,
            phys: phys::POLLING,
            width_enabled: c.width_supported,
            width_supported: c.width_supported,
            width_active: 0,
            speed_enabled: c.speed_supported,
            speed_supported: c.speed_supported,
            speed_active: 0,
            ext_enabled: c.speed_ext_supported,
            ext_supported: c.speed_ext_supported,
            ext_active: 0,
            mtu_cap: c.mtu_cap,
            neighbor_mtu: c.mtu_cap,
            vl_cap: c.vl_cap,
            oper_vls: 1,
            down_reason: 0,
            down_count: 0,
            ctrl: 1,
            counters: [0; 11],
        }
    }
    fn bump(&mut self, off: u64) {
        self.add(off, 1);
    }
    fn add(&mut self, off: u64, n: u32) {
        if let Some(c) = self.counters.get_mut(((off - 0x40) / 4) as usize) {
            *c = c.saturating_add(n);
        }
    }
    /// One MAD packet received: RCV_PKTS and RCV_DATA (LRH+BTH+DETH+MAD+ICRC = 288 octets).
    fn count_rcv(&mut self) {
        self.bump(P_RCV_PKTS);
        self.add(P_RCV_DATA, MAD_PACKET_WORDS);
    }
    /// One MAD packet sent: XMIT_PKTS and XMIT_DATA.
    fn count_xmit(&mut self) {
        self.bump(P_XMIT_PKTS);
        self.add(P_XMIT_DATA, MAD_PACKET_WORDS);
    }
}

/// 4-byte words of one MAD packet on the wire: (LRH 8 + BTH 12 + DETH 8 + MAD 256 + ICRC 4) / 4.
const MAD_PACKET_WORDS: u32 = 72;

/// Counter index for [`AsicModel::counter`].
const QP0_COUNTERS: usize = 8;

/// One RA-1 switch. See the [module documentation](self).
#[derive(Debug)]
pub struct AsicModel {
    cfg: ModelConfig,
    scratch: u32,
    ctrl: u32,
    status: u32,
    err_cause: u32,
    err_addr: u64,
    int_cause: u32,
    int_mask: u32,
    sw_lid: u32,
    lft_top: u32,
    port_change: [u32; 8],
    rxq: Ring,
    txq: Ring,
    cq: Ring,
    qp0: [u32; QP0_COUNTERS],
    lft: Vec<u8>,
    lft_block: u32,
    mft: Vec<u16>,
    mft_sel: u32,
    ports: Vec<PortRegs>,
    wire: VecDeque<WireTx>,
    link_requests: VecDeque<(u8, LinkRequest)>,
}

impl AsicModel {
    /// A switch in its power-on state (as after a reset; links not trained).
    pub fn new(cfg: ModelConfig) -> AsicModel {
        let np = usize::from(cfg.num_ports);
        let mut ports = Vec::with_capacity(np + 1);
        for p in 0..=np {
            let c = cfg
                .ports
                .get(p)
                .copied()
                .unwrap_or_else(PortConfig::default_qdr_4x);
            ports.push(PortRegs::new(&c));
        }
        let lft_len = usize::from(cfg.lft_blocks) * 64;
        let mft_len = usize::from(cfg.mft_blocks) * 32 * 16;
        AsicModel {
            cfg,
            scratch: 0,
            ctrl: 0,
            status: 0,
            err_cause: 0,
            err_addr: 0,
            int_cause: 0,
            int_mask: INT_ALL,
            sw_lid: 0,
            lft_top: 0,
            port_change: [0; 8],
            rxq: Ring::default(),
            txq: Ring::default(),
            cq: Ring::default(),
            qp0: [0; QP0_COUNTERS],
            lft: vec![0xFF; lft_len],
            lft_block: 0,
            mft: vec![0; mft_len],
            mft_sel: 0,
            ports,
            wire: VecDeque::new(),
            link_requests: VecDeque::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// External ports.
    pub fn num_ports(&self) -> u8 {
        self.cfg.num_ports
    }

    fn caps(&self) -> u32 {
        let p1 = self.ports.get(1).copied();
        let (vl, mtu) = p1.map_or((4, 5), |p| (p.vl_cap, p.mtu_cap));
        CAPS_SWITCH
            | CAPS_QP1
            | (u32::from(self.cfg.num_ports) << 8)
            | (u32::from(vl & 0xF) << 16)
            | (u32::from(mtu & 0xF) << 20)
    }

    fn ready(&self) -> bool {
        self.status & STATUS_READY != 0
            && self.status & STATUS_FATAL == 0
            && self.ctrl & CTRL_QP0_EN != 0
    }

    /// Register read (BAR0, 32-bit aligned).
    pub fn read(&mut self, off: u64) -> u32 {
        match off {
            ID => ID_MAGIC,
            VERSION => (VERSION_MAJOR << 16) | VERSION_MINOR,
            CAPS => self.caps(),
            FDB_CAP => u32::from(self.cfg.lft_blocks) | (u32::from(self.cfg.mft_blocks) << 16),
            NODE_GUID_LO => self.cfg.node_guid as u32,
            NODE_GUID_HI => (self.cfg.node_guid >> 32) as u32,
            SCRATCH => self.scratch,
            TIMEOUTS => 0x0064_000A,
            CTRL => self.ctrl,
            STATUS => {
                let run = if self.ready() { STATUS_QP0_RUN } else { 0 };
                (self.status & !STATUS_QP0_RUN) | run
            }
            ERR_CAUSE => self.err_cause,
            ERR_ADDR_LO => self.err_addr as u32,
            ERR_ADDR_HI => (self.err_addr >> 32) as u32,
            INT_CAUSE => self.int_cause,
            INT_MASK => self.int_mask,
            SW_LID => self.sw_lid,
            LFT_TOP => self.lft_top,
            0x100..=0x11C => self.port_change[((off - 0x100) / 4) as usize],
            RXQ_BASE_LO => self.rxq.base_lo,
            RXQ_BASE_HI => self.rxq.base_hi,
            RXQ_SIZE => self.rxq.log2,
            RXQ_PROD => self.rxq.prod,
            RXQ_CONS => self.rxq.cons,
            TXQ_BASE_LO => self.txq.base_lo,
            TXQ_BASE_HI => self.txq.base_hi,
            TXQ_SIZE => self.txq.log2,
            TXQ_PROD => self.txq.prod,
            TXQ_CONS => self.txq.cons,
            CQ_BASE_LO => self.cq.base_lo,
            CQ_BASE_HI => self.cq.base_hi,
            CQ_SIZE => self.cq.log2,
            CQ_PROD => self.cq.prod,
            CQ_CONS => self.cq.cons,
            0x1100..=0x111C => self.qp0[((off - 0x1100) / 4) as usize],
            LFT_BLOCK => self.lft_block,
            0x2040..=0x207C => {
                let k = ((off - LFT_WIN) / 4) as usize;
                let base = self.lft_block as usize * 64 + k * 4;
                match self.lft.get(base..base + 4) {
                    Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                    None => 0,
                }
            }
            MFT_SEL => self.mft_sel,
            0x2140..=0x217C => {
                let k = ((off - MFT_WIN) / 4) as usize;
                let (a, b) = (self.mft_index(2 * k), self.mft_index(2 * k + 1));
                let get = |i: Option<usize>| i.and_then(|i| self.mft.get(i)).copied().unwrap_or(0);
                u32::from(get(a)) | (u32::from(get(b)) << 16)
            }
            0x1_0000..=0x1_FFFF => self.port_read(off),
            _ => {
                self.error(ERR_REG_ACCESS, off);
                0
            }
        }
    }

    fn mft_index(&self, entry: usize) -> Option<usize> {
        let b = (self.mft_sel & 0x1FF) as usize;
        let q = ((self.mft_sel >> 16) & 0xF) as usize;
        let i = ((b * 32 + entry) * 16) + q;
        (i < self.mft.len()).then_some(i)
    }

    fn port_read(&mut self, off: u64) -> u32 {
        let p = ((off - 0x1_0000) / 0x100) as usize;
        let r = off & 0xFF;
        let Some(pr) = self.ports.get(p).filter(|_| p >= 1) else {
            self.error(ERR_REG_ACCESS, off);
            return 0;
        };
        let w = |e: u8, s: u8, a: u8| u32::from(e) | (u32::from(s) << 8) | (u32::from(a) << 16);
        match r {
            P_STATE => pr.logical | (pr.phys << 4),
            P_LINK_WIDTH => w(pr.width_enabled, pr.width_supported, pr.width_active),
            P_LINK_SPEED => w(pr.speed_enabled, pr.speed_supported, pr.speed_active),
            P_LINK_SPEED_EXT => w(pr.ext_enabled, pr.ext_supported, pr.ext_active),
            P_MTU => u32::from(pr.mtu_cap) | (u32::from(pr.neighbor_mtu) << 4),
            P_VL => u32::from(pr.vl_cap) | (u32::from(pr.oper_vls) << 4),
            P_LINK_DOWN => u32::from(pr.down_reason) | (u32::from(pr.down_count) << 16),
            P_CTRL => pr.ctrl,
            0x20 => 0,
            0x40..=0x68 => {
                let i = ((r - 0x40) / 4) as usize;
                // RC: cleared by writing any value (RA-1 §5), not by reading.
                pr.counters.get(i).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// Register write (BAR0, 32-bit aligned).
    pub fn write(&mut self, off: u64, v: u32, env: &dyn DeviceEnv) {
        match off {
            SCRATCH => self.scratch = v,
            CTRL => self.write_ctrl(v, env),
            ERR_CAUSE => {
                self.err_cause &= !v;
            }
            INT_CAUSE => self.int_cause &= !v,
            INT_MASK => self.int_mask = v & INT_ALL,
            SW_LID => self.sw_lid = v & 0x7_FFFF,
            LFT_TOP => self.lft_top = v & 0xFFFF,
            0x100..=0x11C => self.port_change[((off - 0x100) / 4) as usize] &= !v,
            RXQ_BASE_LO => self.rxq.base_lo = v,
            RXQ_BASE_HI => self.rxq.base_hi = v,
            RXQ_SIZE => self.rxq.log2 = v & 0xF,
            RXQ_PROD => {
                if v.wrapping_sub(self.rxq.cons) > self.rxq.size() {
                    self.error(ERR_DOORBELL, off);
                } else {
                    self.rxq.prod = v;
                }
            }
            TXQ_BASE_LO => self.txq.base_lo = v,
            TXQ_BASE_HI => self.txq.base_hi = v,
            TXQ_SIZE => self.txq.log2 = v & 0xF,
            TXQ_PROD => {
                if v.wrapping_sub(self.txq.cons) > self.txq.size() {
                    self.error(ERR_DOORBELL, off);
                } else {
                    self.txq.prod = v;
                    self.process_tx(env);
                }
            }
            CQ_BASE_LO => self.cq.base_lo = v,
            CQ_BASE_HI => self.cq.base_hi = v,
            CQ_SIZE => self.cq.log2 = v & 0xF,
            CQ_CONS => {
                if self.cq.prod.wrapping_sub(v) > self.cq.size() {
                    self.error(ERR_DOORBELL, off);
                } else {
                    self.cq.cons = v;
                    self.process_tx(env);
                }
            }
            0x1100..=0x111C => self.qp0[((off - 0x1100) / 4) as usize] = 0,
            LFT_BLOCK => {
                if v >= u32::from(self.cfg.lft_blocks) {
                    self.error(ERR_REG_ACCESS, off);
                }
                self.lft_block = v & 0xFFFF;
            }
            0x2040..=0x207C => {
                let k = ((off - LFT_WIN) / 4) as usize;
                let base = self.lft_block as usize * 64 + k * 4;
                if let Some(b) = self.lft.get_mut(base..base + 4) {
                    b.copy_from_slice(&v.to_le_bytes());
                }
            }
            MFT_SEL => self.mft_sel = v & 0xF_01FF,
            0x2140..=0x217C => {
                let k = ((off - MFT_WIN) / 4) as usize;
                for (j, val) in [(2 * k, v as u16), (2 * k + 1, (v >> 16) as u16)] {
                    if let Some(i) = self.mft_index(j) {
                        self.mft[i] = val;
                    }
                }
            }
            0x1_0000..=0x1_FFFF => self.port_write(off, v, env),
            ID | VERSION | CAPS | FDB_CAP | NODE_GUID_LO | NODE_GUID_HI | TIMEOUTS | STATUS
            | ERR_ADDR_LO | ERR_ADDR_HI | RXQ_CONS | TXQ_CONS | CQ_PROD => {}
            _ => self.error(ERR_REG_ACCESS, off),
        }
    }

    fn write_ctrl(&mut self, v: u32, env: &dyn DeviceEnv) {
        if v & CTRL_RESET != 0 {
            self.reset();
            if self.cfg.fault == ModelFault::ResetStuck {
                self.ctrl |= CTRL_RESET;
            }
            return;
        }
        let was_ready = self.status & STATUS_READY != 0;
        self.ctrl =
            (self.ctrl & CTRL_RESET) | (v & (CTRL_INIT | CTRL_QP0_EN | CTRL_INT_EN | CTRL_QP1_EN));
        if v & CTRL_INIT != 0 && !was_ready && self.status & STATUS_INIT_ERR == 0 {
            if self.cfg.fault == ModelFault::InitStuck {
                return;
            }
            if self.rings_ok() {
                self.status |= STATUS_READY;
            } else {
                self.status |= STATUS_INIT_ERR;
                self.error(ERR_RING_CFG, 0);
            }
        }
        if self.ready() {
            self.process_tx(env);
        }
    }

    fn rings_ok(&self) -> bool {
        let ring_ok =
            |r: &Ring, max: u32| r.base_lo & 0x3F == 0 && (RING_LOG2_MIN..=max).contains(&r.log2);
        ring_ok(&self.rxq, RING_LOG2_MAX)
            && ring_ok(&self.txq, RING_LOG2_MAX)
            && ring_ok(&self.cq, CQ_LOG2_MAX)
            && u64::from(self.cq.size()) >= u64::from(self.rxq.size()) + u64::from(self.txq.size())
    }

    /// `CTRL.RESET` (RA-1 §4.1 step 3): rings stop, pending work is discarded, registers and
    /// tables return to their reset values, external ports' logical state goes Down.
    fn reset(&mut self) {
        self.scratch = 0;
        self.ctrl = 0;
        self.status = 0;
        self.err_cause = 0;
        self.err_addr = 0;
        self.int_cause = 0;
        self.int_mask = INT_ALL;
        self.sw_lid = 0;
        self.lft_top = 0;
        self.port_change = [0; 8];
        self.rxq = Ring::default();
        self.txq = Ring::default();
        self.cq = Ring::default();
        self.qp0 = [0; QP0_COUNTERS];
        self.lft.fill(0xFF);
        self.mft.fill(0);
        self.lft_block = 0;
        self.mft_sel = 0;
        for p in self.ports.iter_mut().skip(1) {
            // Link training results on the wire stay; the SM-visible state restarts at Init
            // (LinkUp) or Down.
            p.logical = if p.phys == phys::LINK_UP {
                logical::INIT
            } else {
                logical::DOWN
            };
            p.neighbor_mtu = p.mtu_cap;
            p.oper_vls = 1;
            p.ctrl = 1;
            p.counters = [0; 11];
        }
    }

    fn port_write(&mut self, off: u64, v: u32, env: &dyn DeviceEnv) {
        let p = ((off - 0x1_0000) / 0x100) as usize;
        let r = off & 0xFF;
        if p == 0 || p > usize::from(self.cfg.num_ports) {
            return self.error(ERR_REG_ACCESS, off);
        }
        let port = p as u8;
        match r {
            P_STATE => {
                let req_l = (v >> 8) & 0xF;
                let req_p = (v >> 12) & 0xF;
                self.port_request(port, req_l, req_p, env);
            }
            P_LINK_WIDTH => self.ports[p].width_enabled = v as u8,
            P_LINK_SPEED => self.ports[p].speed_enabled = v as u8,
            P_LINK_SPEED_EXT => self.ports[p].ext_enabled = v as u8,
            P_MTU => self.ports[p].neighbor_mtu = ((v >> 4) & 0xF) as u8,
            P_VL => self.ports[p].oper_vls = ((v >> 4) & 0xF) as u8,
            P_CTRL => self.ports[p].ctrl = v & 3,
            0x40..=0x68 => {
                if let Some(c) = self.ports[p].counters.get_mut(((r - 0x40) / 4) as usize) {
                    *c = 0;
                }
            }
            _ => {}
        }
    }

    fn port_request(&mut self, port: u8, req_l: u32, req_p: u32, env: &dyn DeviceEnv) {
        let p = usize::from(port);
        let before = (self.ports[p].logical, self.ports[p].phys);
        match req_l {
            logical::DOWN if self.ports[p].logical != logical::DOWN => {
                self.ports[p].logical = logical::DOWN;
                self.ports[p].down_reason = 2;
                if self.ports[p].phys == phys::LINK_UP {
                    self.link_requests.push_back((port, LinkRequest::Down));
                }
            }
            logical::ARMED if self.ports[p].logical == logical::INIT => {
                self.ports[p].logical = logical::ARMED;
            }
            logical::ACTIVE if self.ports[p].logical == logical::ARMED => {
                self.ports[p].logical = logical::ACTIVE;
            }
            _ => {}
        }
        match req_p {
            phys::DISABLED if self.ports[p].phys != phys::DISABLED => {
                let was_up = self.ports[p].phys == phys::LINK_UP;
                self.ports[p].phys = phys::DISABLED;
                self.ports[p].logical = logical::DOWN;
                if was_up {
                    self.ports[p].down_reason = 1;
                    self.count_down(p);
                }
                self.link_requests.push_back((port, LinkRequest::Disable));
            }
            phys::POLLING if self.ports[p].phys == phys::DISABLED => {
                self.ports[p].phys = phys::POLLING;
                self.link_requests.push_back((port, LinkRequest::Poll));
            }
            _ => {}
        }
        if (self.ports[p].logical, self.ports[p].phys) != before {
            self.port_changed(port, env);
        }
    }

    fn count_down(&mut self, p: usize) {
        let pr = &mut self.ports[p];
        pr.down_count = pr.down_count.saturating_add(1);
        pr.width_active = 0;
        pr.speed_active = 0;
        pr.ext_active = 0;
        pr.bump(0x48);
    }

    fn port_changed(&mut self, port: u8, env: &dyn DeviceEnv) {
        let p = usize::from(port);
        if self.ports[p].ctrl & 1 == 0 {
            return;
        }
        let (w, b) = (p / 32, 1u32 << (p % 32));
        if self.port_change[w] & b == 0 {
            self.port_change[w] |= b;
            self.raise(INT_PORT, env);
        }
    }

    /// The wire trained port `port` (RA-1 §5.1): PHYS LinkUp, LOGICAL Down → Init.
    pub fn link_up(&mut self, port: u8, width: u8, speed: u8, speed_ext: u8, env: &dyn DeviceEnv) {
        let p = usize::from(port);
        if p == 0 || p >= self.ports.len() || self.ports[p].phys == phys::DISABLED {
            return;
        }
        let before = (self.ports[p].logical, self.ports[p].phys);
        let pr = &mut self.ports[p];
        pr.phys = phys::LINK_UP;
        pr.width_active = width;
        pr.speed_active = speed;
        pr.ext_active = speed_ext;
        if pr.logical == logical::DOWN {
            pr.logical = logical::INIT;
        }
        if (pr.logical, pr.phys) != before {
            self.port_changed(port, env);
        }
    }

    /// The link of `port` went down (peer gone, or a requested retrain/disable carried out).
    pub fn link_down(&mut self, port: u8, env: &dyn DeviceEnv) {
        let p = usize::from(port);
        if p == 0 || p >= self.ports.len() {
            return;
        }
        let before = (self.ports[p].logical, self.ports[p].phys);
        if self.ports[p].phys == phys::LINK_UP {
            if self.ports[p].logical != logical::DOWN {
                self.ports[p].down_reason = 3;
            }
            self.count_down(p);
            self.ports[p].phys = phys::POLLING;
        }
        self.ports[p].logical = logical::DOWN;
        if (self.ports[p].logical, self.ports[p].phys) != before {
            self.port_changed(port, env);
        }
    }

    fn raise(&mut self, cause: u32, env: &dyn DeviceEnv) {
        if self.int_cause & cause != 0 {
            self.int_cause |= cause;
            return;
        }
        self.int_cause |= cause;
        if self.ctrl & CTRL_INT_EN != 0 && self.int_mask & cause == 0 {
            env.raise_irq(cause.trailing_zeros());
        }
    }

    fn error(&mut self, cause: u32, addr: u64) {
        if self.err_cause == 0 {
            self.err_addr = addr;
        }
        self.err_cause |= cause;
        if cause & ERR_FATAL_MASK != 0 {
            self.status |= STATUS_FATAL;
        }
        // Recorded in INT_CAUSE for a polling host; only fatal errors (`fatal`, which has the
        // environment) send the ERR MSI-X message.
        self.int_cause |= INT_ERR;
    }

    fn bump(&mut self, off: u64) {
        let i = ((off - 0x1100) / 4) as usize;
        if let Some(c) = self.qp0.get_mut(i) {
            *c = c.saturating_add(1);
        }
    }

    fn cq_full(&self) -> bool {
        self.cq.occupancy() >= self.cq.size()
    }

    /// Writes a CQE (bytes 0..28, then the phase word last).
    fn write_cqe(
        &mut self,
        env: &dyn DeviceEnv,
        cookie: u64,
        count_port_status: u32,
        lids: u32,
        sl_ring_index: u32,
        qp_src: u32,
    ) -> Result<(), DmaFault> {
        let addr = self.cq.slot_addr(self.cq.prod);
        let mut b = [0u8; 28];
        b[20..24].copy_from_slice(&qp_src.to_le_bytes());
        b[0..8].copy_from_slice(&cookie.to_le_bytes());
        b[8..12].copy_from_slice(&count_port_status.to_le_bytes());
        b[12..16].copy_from_slice(&lids.to_le_bytes());
        b[16..20].copy_from_slice(&sl_ring_index.to_le_bytes());
        env.dma_write(addr, &b)?;
        let phase = u32::from((self.cq.prod >> self.cq.log2) & 1 == 0);
        env.dma_write32(addr + cqe::FLAGS, phase)?;
        self.cq.prod = self.cq.prod.wrapping_add(1);
        Ok(())
    }

    fn fatal(&mut self, cause: u32, addr: u64, env: &dyn DeviceEnv) {
        let was = self.err_cause & cause != 0;
        self.error(cause, addr);
        if !was {
            self.int_cause &= !INT_ERR;
            self.raise(INT_ERR, env);
        }
    }

    /// An SMP arrived on external port `port` for the switch's management (RA-1 §7.1: every DR
    /// SMP, LID-routed ones for the switch's LIDs). `mad` is the packet payload.
    pub fn receive(
        &mut self,
        port: u8,
        slid: u16,
        dlid: u16,
        sl: u8,
        mad: &[u8],
        env: &dyn DeviceEnv,
    ) -> RxOutcome {
        let p = usize::from(port);
        let well_formed = mad.len() == MAD_LEN
            && mad[0] == 1
            && (mad[1] == 0x01 || mad[1] == 0x81)
            && p >= 1
            && p < self.ports.len();
        if !well_formed {
            return self.malformed(p);
        }
        self.ports[p].count_rcv();
        if self.status & STATUS_FATAL != 0 {
            return RxOutcome::Fatal;
        }
        if !self.ready() {
            self.bump(RX_DROP_NOT_READY);
            self.ports[p].bump(P_VL15_DROPPED);
            return RxOutcome::NotReady;
        }
        let out = self.write_to_host(port, slid, dlid, sl, 0, mad, env);
        if out == RxOutcome::NoDescriptor {
            self.ports[p].bump(P_VL15_DROPPED);
        }
        if out == RxOutcome::Delivered {
            self.bump(RX_SMPS);
        }
        out
    }

    /// A GMP to QP1 of the switch (RA-1 v1.1 §7.7): its DLID is one of the switch's LIDs and it
    /// came in on data VL `sl`'s lane from `src_qp` of `slid`. `ingress` is the external port
    /// it crossed, when known (its counters count it). Delivered to the host with CQE `PORT` 0
    /// (the management port the GMP is addressed to) and `QP` 1 while `CTRL.QP1_EN` is set;
    /// otherwise dropped as in v1.0 (counted in `RCV_ERRORS` of the ingress port).
    #[allow(clippy::too_many_arguments)]
    pub fn receive_gmp(
        &mut self,
        ingress: Option<u8>,
        slid: u16,
        dlid: u16,
        sl: u8,
        src_qp: u32,
        mad: &[u8],
        env: &dyn DeviceEnv,
    ) -> RxOutcome {
        let p = ingress.map_or(0, usize::from);
        let well_formed = mad.len() == MAD_LEN
            && mad[0] == 1
            && mad[1] != 0x01
            && mad[1] != 0x81
            && p < self.ports.len()
            && self.ctrl & CTRL_QP1_EN != 0;
        if !well_formed {
            return self.malformed(p);
        }
        if p != 0 {
            self.ports[p].count_rcv();
        }
        if self.status & STATUS_FATAL != 0 {
            return RxOutcome::Fatal;
        }
        if !self.ready() {
            self.bump(RX_DROP_NOT_READY);
            return RxOutcome::NotReady;
        }
        let qp_src = 1 | ((src_qp & 0x00FF_FFFF) << 8);
        let out = self.write_to_host(0, slid, dlid, sl, qp_src, mad, env);
        if out == RxOutcome::Delivered {
            self.bump(RX_GMPS);
        }
        out
    }

    fn malformed(&mut self, p: usize) -> RxOutcome {
        self.bump(RX_DROP_MALFORMED);
        if let Some(pr) = self.ports.get_mut(p).filter(|_| p >= 1) {
            pr.bump(P_RCV_ERRORS);
        }
        RxOutcome::Malformed
    }

    /// Writes a received MAD into the next RX buffer and its CQE (`cqe_port`, `qp_src` as
    /// the CQE carries them).
    #[allow(clippy::too_many_arguments)]
    fn write_to_host(
        &mut self,
        cqe_port: u8,
        slid: u16,
        dlid: u16,
        sl: u8,
        qp_src: u32,
        mad: &[u8],
        env: &dyn DeviceEnv,
    ) -> RxOutcome {
        if self.rxq.occupancy() == 0 || self.cq_full() || !env.bus_master() {
            self.bump(RX_DROP_NO_DESC);
            return RxOutcome::NoDescriptor;
        }
        let idx = self.rxq.cons;
        let da = self.rxq.slot_addr(idx);
        let mut d = [0u8; 32];
        if env.dma_read(da, &mut d).is_err() {
            self.fatal(ERR_DESC_FETCH, da, env);
            return RxOutcome::Fatal;
        }
        let word = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
        let (len, flags) = (word & 0xFFFF, (word >> 24) as u8);
        if flags & DESC_OWN == 0 {
            self.fatal(ERR_BAD_DESC, da, env);
            return RxOutcome::Fatal;
        }
        let addr = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
        let cookie = u64::from_le_bytes([d[24], d[25], d[26], d[27], d[28], d[29], d[30], d[31]]);
        let st = if len < MAD_LEN as u32 {
            status::LEN_ERR
        } else {
            if env.dma_write(addr, mad).is_err() {
                self.fatal(ERR_BUF_DMA, addr, env);
                return RxOutcome::Fatal;
            }
            status::OK
        };
        if env.dma_write32(da + 8, word & 0x00FF_FFFF).is_err() {
            self.fatal(ERR_DESC_FETCH, da, env);
            return RxOutcome::Fatal;
        }
        let count = if st == status::OK { MAD_LEN as u32 } else { 0 };
        let cps = count | (u32::from(cqe_port) << 16) | (u32::from(st) << 24);
        let lids = u32::from(slid) | (u32::from(dlid) << 16);
        let sri = u32::from(sl) | (idx & (self.rxq.size() - 1)) << 16;
        if self.write_cqe(env, cookie, cps, lids, sri, qp_src).is_err() {
            self.fatal(ERR_CQE_WRITE, self.cq.slot_addr(self.cq.prod), env);
            return RxOutcome::Fatal;
        }
        self.rxq.cons = self.rxq.cons.wrapping_add(1);
        if st != status::OK {
            self.bump(RX_DROP_MALFORMED);
            self.raise(INT_RX, env);
            return RxOutcome::Malformed;
        }
        self.raise(INT_RX, env);
        RxOutcome::Delivered
    }

    /// Runs the TX ring: every posted descriptor is sent (or completed with an error status)
    /// while the CQ has room.
    fn process_tx(&mut self, env: &dyn DeviceEnv) {
        if !self.ready() || !env.bus_master() {
            return;
        }
        while self.txq.occupancy() > 0 && !self.cq_full() && self.status & STATUS_FATAL == 0 {
            let idx = self.txq.cons;
            let da = self.txq.slot_addr(idx);
            let mut d = [0u8; 32];
            if env.dma_read(da, &mut d).is_err() {
                return self.fatal(ERR_DESC_FETCH, da, env);
            }
            let word = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
            let (len, port, flags) = (word & 0xFFFF, (word >> 16) as u8, (word >> 24) as u8);
            if flags & DESC_OWN == 0 {
                return self.fatal(ERR_BAD_DESC, da, env);
            }
            let addr = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
            let dlid = u16::from_le_bytes([d[12], d[13]]);
            let slid = u16::from_le_bytes([d[14], d[15]]);
            let sl = d[16];
            let qp = d[17];
            let dqp = u32::from_le_bytes([d[20], d[21], d[22], d[23]]) & 0x00FF_FFFF;
            let cookie =
                u64::from_le_bytes([d[24], d[25], d[26], d[27], d[28], d[29], d[30], d[31]]);
            let (st, egress) = if qp > 1 || (qp == 1 && self.ctrl & CTRL_QP1_EN == 0) {
                (status::BAD_QP, port)
            } else {
                self.tx_route(len, port, dlid, qp == 1)
            };
            if st == status::OK {
                let mut mad = Box::new([0u8; MAD_LEN]);
                if env.dma_read(addr, &mut mad[..]).is_err() {
                    return self.fatal(ERR_BUF_DMA, addr, env);
                }
                self.wire.push_back(WireTx {
                    port: egress,
                    slid,
                    dlid,
                    sl,
                    qp,
                    dqp: if qp == 1 { dqp } else { 0 },
                    mad,
                });
                self.bump(if qp == 1 { TX_GMPS } else { TX_SMPS });
                self.ports[usize::from(egress)].count_xmit();
            } else {
                self.bump(TX_ERRORS);
            }
            if env.dma_write32(da + 8, word & 0x00FF_FFFF).is_err() {
                return self.fatal(ERR_DESC_FETCH, da, env);
            }
            let count = if st == status::OK { MAD_LEN as u32 } else { 0 };
            let cps = count | (u32::from(egress) << 16) | (u32::from(st) << 24);
            let sri = (1 << 8) | ((idx & (self.txq.size() - 1)) << 16);
            if self
                .write_cqe(env, cookie, cps, u32::from(dlid) << 16, sri, u32::from(qp))
                .is_err()
            {
                return self.fatal(ERR_CQE_WRITE, self.cq.slot_addr(self.cq.prod), env);
            }
            self.txq.cons = self.txq.cons.wrapping_add(1);
            self.raise(INT_TX, env);
        }
    }

    /// (CQE status, egress port) for a TX descriptor; a GMP (`gmp`) needs an Active egress
    /// port (data VLs), an SMP a LinkUp one.
    fn tx_route(&self, len: u32, port: u8, dlid: u16, gmp: bool) -> (u8, u8) {
        if len != MAD_LEN as u32 {
            return (status::LEN_ERR, port);
        }
        let egress = if port == PORT_BY_LFT {
            match self.lft_port(dlid) {
                Some(0) => return (status::BAD_PORT, 0),
                Some(p) => p,
                None => return (status::LFT_MISS, port),
            }
        } else {
            port
        };
        if egress == 0 || egress > self.cfg.num_ports {
            return (status::BAD_PORT, egress);
        }
        let pr = &self.ports[usize::from(egress)];
        if pr.phys != phys::LINK_UP || (gmp && pr.logical != logical::ACTIVE) {
            return (status::PORT_DOWN, egress);
        }
        (status::OK, egress)
    }

    // ----- the wire and the data plane --------------------------------------------------

    /// The next SMP the switch puts on the wire.
    pub fn poll_wire(&mut self) -> Option<WireTx> {
        self.wire.pop_front()
    }

    /// The next physical link change the host requested (`REQ_LOGICAL = Down` on a LinkUp port,
    /// `REQ_PHYS`), for the wire to carry out.
    pub fn poll_link_request(&mut self) -> Option<(u8, LinkRequest)> {
        self.link_requests.pop_front()
    }

    /// The LFT's egress port for `dlid` (`None`: drop — entry 0xFF/invalid or above `LFT_TOP`).
    pub fn lft_port(&self, dlid: u16) -> Option<u8> {
        if u32::from(dlid) > self.lft_top {
            return None;
        }
        match self.lft.get(usize::from(dlid)).copied() {
            Some(p) if p <= self.cfg.num_ports => Some(p),
            _ => None,
        }
    }

    /// True if `dlid` is one of the switch's own LIDs (`SW_LID`/LMC) or permissive.
    pub fn lid_matches(&self, dlid: u16) -> bool {
        if dlid == 0xFFFF {
            return true;
        }
        let base = self.sw_lid & 0xFFFF;
        let lmc = (self.sw_lid >> 16) & 7;
        base != 0 && (base..base + (1 << lmc)).contains(&u32::from(dlid))
    }

    /// `PORT_STATE.LOGICAL` of `port` (IBA PortState code; 0 for no such port).
    pub fn port_logical(&self, port: u8) -> u32 {
        self.ports.get(usize::from(port)).map_or(0, |p| p.logical)
    }

    /// `PORT_STATE.PHYS` of `port`.
    pub fn port_phys(&self, port: u8) -> u32 {
        self.ports.get(usize::from(port)).map_or(0, |p| p.phys)
    }

    /// LFT block `b` (64 entries), as the registers hold it.
    pub fn lft_block(&self, b: u16) -> Option<[u8; 64]> {
        let s = usize::from(b) * 64;
        let mut out = [0u8; 64];
        out.copy_from_slice(self.lft.get(s..s + 64)?);
        Some(out)
    }

    /// `LFT_TOP`.
    pub fn lft_top(&self) -> u16 {
        self.lft_top as u16
    }

    /// A counter register of external port `port` (`regs::P_RCV_PKTS` …; RA-1 §5); 0 for a
    /// port or register the device lacks.
    pub fn port_counter(&self, port: u8, off: u64) -> u32 {
        self.ports
            .get(usize::from(port))
            .filter(|_| port >= 1)
            .and_then(|p| p.counters.get((off.wrapping_sub(0x40) / 4) as usize))
            .copied()
            .unwrap_or(0)
    }

    /// A QP0 counter register (`regs::RX_SMPS` …).
    pub fn counter(&self, off: u64) -> u32 {
        self.qp0
            .get(((off.wrapping_sub(regs::RX_SMPS)) / 4) as usize)
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;

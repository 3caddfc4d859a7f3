//! The host SMA: `sma::Agent` running over the driver for a switch that has no firmware agent.
//!
//! * Received SMPs come from the QP0 RX ring with their ingress port and go to
//!   `Agent::handle_mad` straight from the DMA buffer (no copy).
//! * The agent's transmits are written by `Agent::poll_transmit` straight into pool buffers and
//!   posted with their egress port (DR hops and responses) — RA-1 §7.1.
//! * Accepted Sets reach the device through [`AsicHw`] (the `sma::Hardware` hook): LFT blocks
//!   into the LFT window, LinearFDBTop, the switch LID, port state requests, NeighborMTU,
//!   OperationalVLs, enabled widths/speeds, MFT blocks.
//! * Port-state changes arrive as `PORT` interrupts (or are polled): the changed ports' registers
//!   are read and reported to the agent as link events, which become traps 128.
//! * GMPs (RA-1 v1.1, QP1): PerfMgt is answered by a [`sma::Pma`] reading and clearing the
//!   device's per-port counter registers ([`RegCounters`], RA-1 §5); the answer leaves QP1
//!   routed by the LFT to the requester. Other classes get the "method/attribute not
//!   supported" GetResp a Get/Set is owed (a Linux host's MAD layer does the same); anything
//!   else is dropped.

use std::collections::VecDeque;
use std::time::Duration;

use ibmad::attr::{MftBlock, PortInfo, SwitchInfo};
use ibmad::{Guid, MadMeta, MgmtClass, NodeType, PortNum, PortState, Time};
use sma::pma::{Counter, CounterSet, CounterSource, Counters, Pma, PmaConfig};
use sma::{Agent, ConfigError, Hardware, LinkEvent, LinkRequest, NodeConfig, PortConfig};

use crate::driver::Hca;
use crate::error::DriverError;
use crate::mmio::Regs;
use crate::pool::MadBuf;
use crate::regs::*;
use crate::ring::TxMeta;

/// `sma::Hardware` for an RA-1 switch: accepted Sets become register writes.
#[derive(Debug)]
pub struct AsicHw {
    regs: Regs,
    num_ports: u8,
    /// Register writes that failed (the Set was already applied in the agent).
    pub write_errors: u64,
    /// LFT blocks written to the device.
    pub lft_blocks_written: u64,
}

impl AsicHw {
    /// Over BAR0 of a device with `num_ports` external ports.
    pub fn new(regs: Regs, num_ports: u8) -> AsicHw {
        AsicHw {
            regs,
            num_ports,
            write_errors: 0,
            lft_blocks_written: 0,
        }
    }

    fn w(&mut self, off: u64, v: u32) {
        if let Err(e) = self.regs.write(off, v) {
            self.write_errors += 1;
            tracing::warn!("host SMA register write {off:#x}: {e}");
        }
    }

    fn external(&self, port: PortNum) -> bool {
        port.0 >= 1 && port.0 <= self.num_ports
    }
}

impl Hardware for AsicHw {
    fn port_info_written(&mut self, port: PortNum, pi: &PortInfo) {
        if port.0 == 0 {
            self.w(SW_LID, u32::from(pi.lid().0) | (u32::from(pi.lmc()) << 16));
            return;
        }
        if !self.external(port) {
            return;
        }
        let b = port_base(port.0);
        self.w(b + P_LINK_WIDTH, u32::from(pi.link_width_enabled));
        self.w(b + P_MTU, u32::from(pi.neighbor_mtu()) << 4);
        self.w(b + P_VL, u32::from(pi.operational_vls()) << 4);
        let req = match pi.port_state() {
            PortState::ARMED => logical::ARMED,
            PortState::ACTIVE => logical::ACTIVE,
            _ => 0,
        };
        if req != 0 {
            self.w(b + P_STATE, req << 8);
        }
    }

    fn link_request(&mut self, port: PortNum, req: LinkRequest) {
        if !self.external(port) {
            return;
        }
        let v = match req {
            LinkRequest::Down => logical::DOWN << 8,
            LinkRequest::Disable => phys::DISABLED << 12,
            LinkRequest::Poll => phys::POLLING << 12,
        };
        self.w(port_base(port.0) + P_STATE, v);
    }

    fn switch_info_written(&mut self, si: &SwitchInfo) {
        self.w(LFT_TOP, u32::from(si.linear_fdb_top.get()));
    }

    fn lft_block_written(&mut self, block: u16, ports: &[u8; 64]) {
        self.w(LFT_BLOCK, u32::from(block));
        for (k, c) in ports.chunks_exact(4).enumerate() {
            self.w(
                LFT_WIN + 4 * k as u64,
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            );
        }
        self.lft_blocks_written += 1;
    }

    fn mft_block_written(&mut self, block: u16, position: u8, masks: &MftBlock) {
        self.w(MFT_SEL, u32::from(block) | (u32::from(position) << 16));
        let m: Vec<u16> = masks.masks.iter().map(|v| v.get()).collect();
        for (k, pair) in m.chunks_exact(2).enumerate() {
            self.w(
                MFT_WIN + 4 * k as u64,
                u32::from(pair[0]) | (u32::from(pair[1]) << 16),
            );
        }
    }
}

/// Host SMA counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostStats {
    /// SMPs handed to the agent.
    pub received: u64,
    /// SMPs the agent sent.
    pub sent: u64,
    /// Transmits waiting for TX ring space right now.
    pub pending: usize,
    /// Port-change events processed.
    pub port_events: u64,
    /// GMPs received on QP1.
    pub gmps: u64,
    /// GMP answers sent (PMA answers and "not supported" statuses).
    pub gmp_answers: u64,
}

/// The counter registers of RA-1 §5 behind each [`Counter`] (`None`: the device has none;
/// reads 0, a Set ignores it).
fn counter_reg(c: Counter) -> Option<u64> {
    Some(match c {
        Counter::SymbolErrors => P_SYMBOL_ERR,
        Counter::LinkErrorRecovery => P_LINK_ERR_RECOVERY,
        Counter::LinkDowned => P_LINK_DOWNED,
        Counter::RcvErrors => P_RCV_ERRORS,
        Counter::RcvSwitchRelayErrors => P_RCV_SW_RELAY_ERR,
        Counter::XmitDiscards => P_XMIT_DISCARDS,
        Counter::Vl15Dropped => P_VL15_DROPPED,
        Counter::XmitData => P_XMIT_DATA,
        Counter::RcvData => P_RCV_DATA,
        Counter::XmitPkts => P_XMIT_PKTS,
        Counter::RcvPkts => P_RCV_PKTS,
        _ => return None,
    })
}

/// A switch's counters as the PMA sees them: the external ports' counter registers (RA-1 §5);
/// management port 0 has none and reads 0.
#[derive(Debug)]
pub struct RegCounters<'a> {
    regs: &'a Regs,
    num_ports: u8,
}

impl CounterSource for RegCounters<'_> {
    fn counters(&mut self, port: PortNum) -> Option<Counters> {
        if port.0 > self.num_ports {
            return None;
        }
        let mut c = Counters::default();
        if port.0 == 0 {
            return Some(c);
        }
        for &k in Counter::ALL {
            if let Some(off) = counter_reg(k) {
                // A register that cannot be read shows 0; the PMA has no error for it.
                *c.get_mut(k) = u64::from(self.regs.port_read(port.0, off).unwrap_or(0));
            }
        }
        Some(c)
    }
    fn clear(&mut self, port: PortNum, which: CounterSet) {
        if port.0 == 0 || port.0 > self.num_ports {
            return;
        }
        for &k in Counter::ALL {
            if let Some(off) = counter_reg(k).filter(|_| which.contains(k)) {
                // RC: any write clears (RA-1 §5).
                if let Err(e) = self.regs.port_write(port.0, off, 0) {
                    tracing::warn!("clearing {k:?} of port {}: {e}", port.0);
                }
            }
        }
    }
}

/// `sma::Agent` over an RA-1 device. See the [module docs](self).
pub struct HostSma {
    agent: Agent<AsicHw>,
    hca: Hca,
    pending: VecDeque<(TxMeta, MadBuf)>,
    stats: HostStats,
}

impl std::fmt::Debug for HostSma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSma")
            .field("hca", &self.hca)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// The `sma::NodeConfig` of the device behind `hca`: NodeGUID, port count and capabilities from
/// its registers.
pub fn node_config(hca: &Hca, desc: &str) -> Result<NodeConfig, DriverError> {
    let f = *hca.facts();
    let regs = hca.regs();
    let mut ports = Vec::with_capacity(usize::from(f.num_ports) + 1);
    for p in 1..=f.num_ports {
        let w = regs.port_read(p, P_LINK_WIDTH)?;
        let s = regs.port_read(p, P_LINK_SPEED)?;
        let e = regs.port_read(p, P_LINK_SPEED_EXT)?;
        let mtu = regs.port_read(p, P_MTU)?;
        let vl = regs.port_read(p, P_VL)?;
        ports.push(PortConfig {
            width_supported: (w >> 8) as u8,
            speed_supported: (s >> 8) as u8,
            speed_ext_supported: (e >> 8) as u8,
            mtu_cap: (mtu & 0xF) as u8,
            vl_cap: (vl & 0xF) as u8,
        });
    }
    let p0 = ports
        .first()
        .copied()
        .unwrap_or_else(PortConfig::default_qdr_4x);
    ports.insert(0, p0);
    let guid = Guid(f.node_guid);
    Ok(NodeConfig {
        node_type: if f.is_switch {
            NodeType::SWITCH
        } else {
            NodeType::CA
        },
        node_guid: guid,
        sys_image_guid: guid,
        desc: desc.to_string(),
        num_ports: f.num_ports,
        port_guids: vec![guid; usize::from(f.num_ports) + 1],
        ports,
        vendor_id: 0x1DED,
        device_id: PCI_DEVICE_SWITCH,
        revision: 0x10,
        lft_cap: (u32::from(f.lft_blocks) * 64).min(0xC000) as u16,
        mft_cap: (u32::from(f.mft_blocks) * 32).min(16383) as u16,
        enhanced_port0: false,
    })
}

/// Why the host SMA could not start.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Reading the device failed.
    #[error("reading the device failed")]
    Driver(#[from] DriverError),
    /// The device's facts do not make a valid SMA configuration.
    #[error("device facts are not a valid SMA configuration")]
    Config(#[from] ConfigError),
}

impl HostSma {
    /// An agent for the device behind `hca` (NodeDescription `desc`); ports already LinkUp are
    /// reported to the agent at `now`.
    pub fn new(hca: Hca, desc: &str, now: Time) -> Result<HostSma, HostError> {
        let cfg = node_config(&hca, desc)?;
        let hw = AsicHw::new(hca.regs(), hca.facts().num_ports);
        let agent = Agent::new(cfg, hw)?;
        let mut h = HostSma {
            agent,
            hca,
            pending: VecDeque::new(),
            stats: HostStats::default(),
        };
        let all: Vec<u8> = (1..=h.hca.facts().num_ports).collect();
        h.hca.take_port_changes()?;
        h.sync_ports(now, &all)?;
        Ok(h)
    }

    /// The agent.
    pub fn agent(&self) -> &Agent<AsicHw> {
        &self.agent
    }

    /// The driver.
    pub fn hca(&self) -> &Hca {
        &self.hca
    }

    /// The driver, mutable.
    pub fn hca_mut(&mut self) -> &mut Hca {
        &mut self.hca
    }

    /// Counters.
    pub fn stats(&self) -> HostStats {
        HostStats {
            pending: self.pending.len(),
            ..self.stats
        }
    }

    fn sync_ports(&mut self, now: Time, ports: &[u8]) -> Result<(), DriverError> {
        let regs = self.hca.regs();
        for &p in ports {
            if p == 0 || p > self.hca.facts().num_ports {
                continue;
            }
            self.stats.port_events += 1;
            let (_logical, ph) = self.hca.port_state(p)?;
            let ev = if ph == phys::LINK_UP {
                LinkEvent::Up {
                    width_active: (regs.port_read(p, P_LINK_WIDTH)? >> 16) as u8,
                    speed_active: (regs.port_read(p, P_LINK_SPEED)? >> 16) as u8,
                    speed_ext_active: (regs.port_read(p, P_LINK_SPEED_EXT)? >> 16) as u8,
                }
            } else {
                LinkEvent::Down
            };
            let up_in_agent = self
                .agent
                .port_info(PortNum(p))
                .is_some_and(|pi| pi.phys_state() == ibmad::PhysState::LINK_UP);
            // Only physical transitions are link events; logical ones were requested by the
            // agent itself.
            let down_in_agent = self
                .agent
                .port_info(PortNum(p))
                .is_some_and(|pi| pi.port_state() == PortState::DOWN);
            match ev {
                LinkEvent::Up { .. } if !up_in_agent => self.agent.handle_link(now, PortNum(p), ev),
                LinkEvent::Down if up_in_agent || !down_in_agent => {
                    self.agent.handle_link(now, PortNum(p), ev)
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Handles port changes (RA-1 §5.2): the changed ports become link events.
    pub fn handle_port_changes(&mut self, now: Time) -> Result<usize, DriverError> {
        let changed = self.hca.take_port_changes()?;
        self.sync_ports(now, &changed)?;
        self.drain(now)?;
        Ok(changed.len())
    }

    /// One turn: completions, received SMPs through the agent, port changes (when
    /// `INT_CAUSE.PORT` is set), agent timers due at `now`, transmits. Returns the number of
    /// SMPs handled.
    pub fn poll(&mut self, now: Time) -> Result<usize, DriverError> {
        self.flush()?;
        self.hca.poll()?;
        let mut n = 0;
        while let Some((meta, buf)) = self.hca.recv_token() {
            if meta.qp == 1 {
                self.answer_gmp(&meta.mad_meta(), &buf)?;
                drop(buf);
                n += 1;
                continue;
            }
            // Zero copy: the agent parses the DMA buffer the device wrote.
            self.agent.handle_mad(now, &meta.mad_meta(), &buf);
            drop(buf);
            self.stats.received += 1;
            n += 1;
            if n % 64 == 0 {
                self.drain(now)?;
            }
        }
        if self.hca.regs().read(INT_CAUSE)? & INT_PORT != 0 {
            self.handle_port_changes(now)?;
        }
        if self.agent.poll_timeout().is_some_and(|t| t <= now) {
            self.agent.handle_timeout(now);
        }
        self.drain(now)?;
        Ok(n)
    }

    /// Waits up to `timeout` for device activity (interrupts or busy-poll).
    pub fn wait(&mut self, timeout: Duration) -> Result<bool, DriverError> {
        self.hca.wait(timeout)
    }

    /// Hands `mad` to the agent as if it had arrived on `meta.port`, and transmits what the
    /// agent answers. A management client on the host (a diagnostic, an SM behind port 0)
    /// reaches its own switch's SMA this way: its directed route ends where it starts.
    ///
    /// # Errors
    /// Posting the answer failed.
    pub fn inject(
        &mut self,
        now: Time,
        meta: &ibmad::MadMeta,
        mad: &[u8],
    ) -> Result<(), DriverError> {
        self.agent.handle_mad(now, meta, mad);
        self.drain(now)
    }

    /// The agent's next event — among them [`sma::Event::ForSm`], the responses and traps
    /// it hands to a management client on the host.
    pub fn poll_event(&mut self) -> Option<sma::Event> {
        self.agent.poll_event()
    }

    /// When the agent next needs [`HostSma::poll`] for a timer.
    pub fn next_timer(&self) -> Option<Time> {
        self.agent.poll_timeout()
    }

    fn flush(&mut self) -> Result<(), DriverError> {
        while let Some((meta, buf)) = self.pending.pop_front() {
            match self.hca.post_send_deferred(buf, meta) {
                Ok(()) => self.stats.sent += 1,
                Err((DriverError::TxFull, b)) => {
                    self.pending.push_front((meta, b));
                    self.hca.poll()?;
                    if self.hca.tx_outstanding() >= 1 << self.hca.config().tx_log2 {
                        return Ok(());
                    }
                }
                Err((e, _)) => return Err(e),
            }
        }
        Ok(())
    }

    /// The answer a GMP is owed (see the module docs): PerfMgt from the PMA over the device's
    /// counter registers, other classes the "not supported" GetResp; `None` for a MAD that
    /// gets no answer.
    fn gmp_answer(&self, meta: &MadMeta, mad: &[u8]) -> Option<[u8; MAD_LEN]> {
        let f = *self.hca.facts();
        let mut answer = [0u8; MAD_LEN];
        let class = MgmtClass(mad.get(1).copied().unwrap_or(0));
        if class == MgmtClass::PERF_MGMT {
            let regs = self.hca.regs();
            let mut src = RegCounters {
                regs: &regs,
                num_ports: f.num_ports,
            };
            let mut pma = Pma::new(PmaConfig::for_node(f.is_switch, f.num_ports));
            let reply = pma.handle_mad(&mut src, meta, mad)?;
            answer.copy_from_slice(ibmad::zerocopy::IntoBytes::as_bytes(&reply.mad));
        } else {
            answer.copy_from_slice(mad.get(..MAD_LEN)?);
            if !ibmad::gmp::answer_unserved(&mut answer) {
                return None;
            }
        }
        Some(answer)
    }

    /// A GMP from the host itself to this device's agents (a management client on the host
    /// addressing its own node, which needs no LID): the answer, as
    /// [`HostSma::poll`] would send it to a remote requester; `None` if none is owed.
    pub fn answer_local_gmp(&mut self, meta: &MadMeta, mad: &[u8]) -> Option<[u8; MAD_LEN]> {
        self.stats.gmps += 1;
        let answer = self.gmp_answer(meta, mad)?;
        self.stats.gmp_answers += 1;
        Some(answer)
    }

    /// Answers a GMP that arrived on QP1: the answer is queued for the TX ring, from QP1 to
    /// the requester's QP, routed by the LFT.
    fn answer_gmp(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), DriverError> {
        self.stats.gmps += 1;
        let f = *self.hca.facts();
        let Some(answer) = self.gmp_answer(meta, mad) else {
            return Ok(());
        };
        let Some(mut buf) = self.hca.alloc() else {
            tracing::warn!("GMP answer dropped: no buffer");
            return Ok(());
        };
        buf.copy_from_slice(&answer);
        let tx = TxMeta {
            port: if f.is_switch {
                PORT_BY_LFT
            } else {
                meta.port.0
            },
            dlid: meta.slid.0,
            slid: meta.dlid.0,
            sl: meta.sl,
            qp: 1,
            dqp: meta.qp,
        };
        self.stats.gmp_answers += 1;
        self.pending.push_back((tx, buf));
        self.flush()
    }

    /// Publishes everything posted this turn with one doorbell.
    fn publish(&mut self) -> Result<(), DriverError> {
        self.hca.ring_tx_doorbell()
    }

    /// Moves the agent's transmits into TX descriptors (zero copy: the agent writes into the
    /// pool buffer that is posted). Back-pressure: when the ring is full they wait in order.
    fn drain(&mut self, now: Time) -> Result<(), DriverError> {
        loop {
            let mut buf = match self.hca.alloc() {
                Some(b) => b,
                None => {
                    self.hca.poll()?;
                    match self.hca.alloc() {
                        Some(b) => b,
                        None => return self.publish(),
                    }
                }
            };
            let Some(tx) = self.agent.poll_transmit(now, &mut buf) else {
                return self.publish();
            };
            let meta = TxMeta {
                port: tx.meta.port.0,
                dlid: tx.meta.dlid.0,
                slid: tx.meta.slid.0,
                sl: tx.meta.sl,
                qp: 0,
                dqp: 0,
            };
            self.pending.push_back((meta, buf));
            self.flush()?;
        }
    }
}

//! SM attachment: SMs at CA ports or switch port 0, their queues and their [`SimPort`].

use std::collections::{HashMap, VecDeque};

use ibmad::attr::port_info::cap::IS_SM;
use ibmad::smi::{self, Forward};
use ibmad::zerocopy::FromBytes;
use ibmad::{
    Guid, Lid, MadMeta, MadPort, Method, MgmtClass, PortError, PortNum, Smp, Time,
    VirtualClockPort, SMP_LEN,
};

use super::{Fabric, SimError, TraceKind};
use crate::sim::counters::bump;
use crate::sim::stats::{DropReason, SmStats};
use crate::topo::NodeId;

/// Identifies an SM attached with [`Fabric::attach_sm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SmHandle(pub u32);

/// Where an SM is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SmAttachment {
    /// Its handle.
    pub handle: SmHandle,
    /// The node it runs on.
    pub node: NodeId,
    /// The port it sends from: a CA port, or 0 on a switch.
    pub port: PortNum,
}

pub(super) struct SmSlot {
    node: u32,
    port: u8,
    active: bool,
    /// The attachment set IsSM on its port.
    is_sm: bool,
    /// GMP classes registered (bit `c % 64` of word `c / 64`).
    classes: [u64; 4],
    /// What reached the attachment, with the local QP it arrived on and the buffer holding
    /// it (released when taken or discarded).
    queue: VecDeque<(MadMeta, u32, u32)>,
    stats: SmStats,
}

impl SmSlot {
    fn registered(&self, class: MgmtClass) -> bool {
        self.classes[usize::from(class.0 / 64)] & (1 << (class.0 % 64)) != 0
    }
}

impl Fabric {
    /// Queues a MAD for the SM attached at node `n` (on a switch: at port 0; on a CA: at
    /// `meta.port`). `qp` is the local QP it arrived on (0 for SMPs, 1 for GMPs to the GSI).
    /// A GMP request goes only to an attachment that registered its class
    /// ([`Fabric::register_class`]); SMPs and responses go to any attachment there.
    /// The MAD is in buffer `buf`, which the queue keeps (or releases). Returns false (the MAD
    /// counted as dropped) if no attachment takes it.
    pub(super) fn queue_for_sm(&mut self, n: u32, mut meta: MadMeta, qp: u32, buf: u32) -> bool {
        let is_switch = self.agents[n as usize].is_switch();
        let (class, method) = {
            let d = &self.pool.slot(buf).data;
            (MgmtClass(d[1]), Method(d[3]))
        };
        let gmp_request = !class.is_smp() && !method.is_response();
        let found = self.sms.iter().position(|s| {
            s.active
                && s.node == n
                && (is_switch || s.port == meta.port.0)
                && (!gmp_request || s.registered(class))
        });
        let Some(i) = found else {
            self.stats.dropped.bump(DropReason::NoSm);
            if self.cfg.trace {
                let d = self.pool.slot(buf).data;
                self.trace_hdr(TraceKind::Drop(DropReason::NoSm), n, meta.port.0, &d);
            }
            self.pool.release(buf);
            return false;
        };
        if self.sms[i].queue.len() >= self.cfg.sm_queue_cap {
            self.sms[i].stats.overflowed += 1;
            self.stats.dropped.bump(DropReason::SmQueueFull);
            if class.is_smp() {
                let g = self.base[n as usize] as usize + usize::from(self.sms[i].port);
                bump(&mut self.counters[g].vl15_dropped);
            }
            self.pool.release(buf);
            return false;
        }
        self.stats.to_sm += 1;
        if self.cfg.trace {
            let d = self.pool.slot(buf).data;
            self.trace_hdr(TraceKind::ToSm, n, meta.port.0, &d);
        }
        meta.port = PortNum(self.sms[i].port);
        self.sms[i].queue.push_back((meta, qp, buf));
        true
    }

    /// True if a GMP request of `class` reaching node `n`'s `port` goes to an attachment.
    pub(super) fn class_registered(&self, n: u32, port: u8, class: MgmtClass) -> bool {
        let is_switch = self.agents[n as usize].is_switch();
        self.sms.iter().any(|s| {
            s.active && s.node == n && (is_switch || s.port == port) && s.registered(class)
        })
    }

    /// Registers attachment `h` as the agent of GMP class `class` at its port: requests of
    /// that class reaching the port's QP1 are queued for it instead of being answered by the
    /// node (the PMA for PerfMgt; "unsupported" for a Get or Set of any other class), as a
    /// `user_mad` agent registration does on a host. SMP classes can not be registered (SMPs
    /// reach an attachment through its node's SMA). Returns false for an SMP class or a
    /// detached handle.
    pub fn register_class(&mut self, h: SmHandle, class: MgmtClass) -> bool {
        self.set_class(h, class, true)
    }

    /// Undoes [`Fabric::register_class`]; returns false for an SMP class or a detached handle.
    pub fn unregister_class(&mut self, h: SmHandle, class: MgmtClass) -> bool {
        self.set_class(h, class, false)
    }

    fn set_class(&mut self, h: SmHandle, class: MgmtClass, on: bool) -> bool {
        let Some(sm) = self.sms.get_mut(h.0 as usize).filter(|s| s.active) else {
            return false;
        };
        if class.is_smp() {
            return false;
        }
        let (word, bit) = (usize::from(class.0 / 64), class.0 % 64);
        if on {
            sm.classes[word] |= 1 << bit;
        } else {
            sm.classes[word] &= !(1 << bit);
        }
        true
    }

    // ----- SMs --------------------------------------------------------------------------

    /// Attaches an SM at `port` of `node`: a CA/router port, or port 0 of a switch. The port's
    /// PortInfo.CapabilityMask gets IsSM (see [`Fabric::set_sm_capability`]).
    pub fn attach_sm(&mut self, node: NodeId, port: PortNum) -> Result<SmAttachment, SimError> {
        self.attach(node, port, true)
    }

    /// Attaches a management client that is not (yet) an SM — a diagnostic tool, a PerfMgr:
    /// like [`Fabric::attach_sm`], but IsSM stays clear until [`Fabric::set_sm_capability`].
    pub fn attach_client(&mut self, node: NodeId, port: PortNum) -> Result<SmAttachment, SimError> {
        self.attach(node, port, false)
    }

    /// Sets or clears IsSM on the attachment's port, as an SM does when it opens (or closes)
    /// its HCA's SM interface; a change queues trap 144. With IsSM set, SMInfo requests to the
    /// port are handed to the attachment.
    pub fn set_sm_capability(&mut self, h: SmHandle, on: bool) {
        let Some(sm) = self.sms.get_mut(h.0 as usize).filter(|s| s.active) else {
            return;
        };
        sm.is_sm = on;
        let (n, p) = (sm.node, sm.port);
        self.set_is_sm(n, p, on);
    }

    fn attach(
        &mut self,
        node: NodeId,
        port: PortNum,
        is_sm: bool,
    ) -> Result<SmAttachment, SimError> {
        let n = self.check_node(node)?;
        let a = &self.agents[n as usize];
        if a.is_switch() && port.0 != 0 {
            return Err(SimError::BadSmPort {
                node,
                port,
                reason: "on a switch an SM runs behind management port 0",
            });
        }
        if !a.is_switch() && (port.0 == 0 || port.0 > a.num_ports()) {
            return Err(SimError::NoSuchPort { node, port });
        }
        if self
            .sms
            .iter()
            .any(|s| s.active && s.node == n && s.port == port.0)
        {
            return Err(SimError::SmAlreadyAttached { node, port });
        }
        let handle = SmHandle(self.sms.len() as u32);
        self.sms.push(SmSlot {
            node: n,
            port: port.0,
            active: true,
            is_sm,
            classes: [0; 4],
            queue: VecDeque::new(),
            stats: SmStats::default(),
        });
        if is_sm {
            self.set_is_sm(n, port.0, true);
        }
        Ok(SmAttachment { handle, node, port })
    }

    /// Sets or clears PortInfo.CapabilityMask.IsSM on the SM's port, as an SM does when it
    /// registers with (or leaves) its HCA; the agent then routes SMInfo requests to the SM and
    /// queues trap 144 (capability mask changed).
    pub(super) fn set_is_sm(&mut self, n: u32, port: u8, on: bool) {
        let ni = n as usize;
        let p = PortNum(port);
        let Some(mask) = self.agents[ni]
            .port_info(p)
            .map(|pi| pi.capability_mask.get())
        else {
            return;
        };
        let new = if on { mask | IS_SM } else { mask & !IS_SM };
        if self.agents[ni].set_capability_mask(self.now, p, new) {
            self.after_agent(n, self.service_ns);
        }
    }

    /// After a reboot of node `n`: the SMs attached there come back with their node and
    /// register again (IsSM).
    pub(super) fn reregister_sms(&mut self, n: u32) {
        let sm_ports: Vec<u8> = self
            .sms
            .iter()
            .filter(|s| s.active && s.is_sm && s.node == n)
            .map(|s| s.port)
            .collect();
        for p in sm_ports {
            self.set_is_sm(n, p, true);
        }
    }

    /// Detaches an SM (the SM process died): its queue is discarded, IsSM is cleared on its
    /// port, and MADs for it are dropped ([`DropReason::NoSm`]) from now on. The handle stays
    /// invalid; its [`SimPort`] reports [`PortError::Closed`].
    pub fn detach_sm(&mut self, h: SmHandle) {
        let Some(sm) = self.sms.get_mut(h.0 as usize) else {
            return;
        };
        if !sm.active {
            return;
        }
        sm.active = false;
        for (_, _, buf) in sm.queue.drain(..) {
            self.pool.release(buf);
        }
        let (n, p) = (sm.node, sm.port);
        self.set_is_sm(n, p, false);
    }

    /// [`Fabric::attach_sm`] by NodeGUID.
    pub fn attach_sm_by_guid(
        &mut self,
        guid: Guid,
        port: PortNum,
    ) -> Result<SmAttachment, SimError> {
        let node = self
            .topo
            .node_by_guid(guid)
            .ok_or(SimError::UnknownGuid(guid))?;
        self.attach_sm(node, port)
    }

    /// [`Fabric::attach_sm`] by the topology's node name.
    pub fn attach_sm_by_name(
        &mut self,
        name: &str,
        port: PortNum,
    ) -> Result<SmAttachment, SimError> {
        let node = self
            .topo
            .node_by_name(name)
            .ok_or_else(|| SimError::UnknownName(name.to_string()))?;
        self.attach_sm(node, port)
    }

    /// Where an SM is attached.
    #[must_use]
    pub fn sm_attachment(&self, h: SmHandle) -> Option<SmAttachment> {
        let s = self.sms.get(h.0 as usize)?;
        Some(SmAttachment {
            handle: h,
            node: NodeId(s.node),
            port: PortNum(s.port),
        })
    }

    /// The [`MadPort`] of an attached SM.
    pub fn sm_port(&mut self, h: SmHandle) -> SimPort<'_> {
        SimPort {
            fabric: self,
            sm: h,
        }
    }

    /// Counters of one SM.
    #[must_use]
    pub fn sm_stats(&self, h: SmHandle) -> Option<SmStats> {
        self.sms.get(h.0 as usize).map(|s| s.stats)
    }

    /// Number of MADs waiting for an SM.
    #[must_use]
    pub fn sm_pending(&self, h: SmHandle) -> usize {
        self.sms.get(h.0 as usize).map_or(0, |s| s.queue.len())
    }

    /// The SM's node originates `mad` now: a DR SMP goes through `ibmad::smi::advance` (hop
    /// pointer 0 → 1) and out of the port it names (0 hops: to the local agent); a LID-routed
    /// SMP leaves the SM's CA port, or is switched by the LFT of the SM's switch. `meta.slid` 0
    /// means "the SM port's LID"; `meta.port` is ignored (the attachment fixes it).
    pub fn sm_send(&mut self, h: SmHandle, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        let Some(sm) = self.sms.get_mut(h.0 as usize).filter(|s| s.active) else {
            return Err(PortError::Closed);
        };
        if mad.len() != SMP_LEN {
            return Err(PortError::BadLength {
                len: mad.len(),
                expected: SMP_LEN,
            });
        }
        let class = MgmtClass(mad[1]);
        if !class.is_smp() && (meta.qp == 0 || !meta.dlid.is_unicast()) {
            return Err(PortError::Other(format!(
                "a GMP (class {:#04x}) needs a QP other than 0 and a unicast DLID; got QP {} \
                 and DLID {}",
                class.0, meta.qp, meta.dlid.0
            )));
        }
        sm.stats.sent += 1;
        let (n, p) = (sm.node, sm.port);
        self.stats.from_sm += 1;
        let buf = self.pool.alloc();
        self.pool.slot_mut(buf).data.copy_from_slice(mad);
        if self.cfg.trace {
            self.trace_mad(TraceKind::FromSm, n, p, buf);
        }
        let ni = n as usize;
        let is_switch = self.agents[ni].is_switch();
        {
            // Source QP: 0 for SMPs, the GSI (QP1) for GMPs; destination QP: the caller's.
            let s = self.pool.slot_mut(buf);
            s.sqp = u32::from(!class.is_smp());
            s.dqp = meta.qp;
        }
        if mad[1] == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            let s = self.pool.slot_mut(buf);
            s.slid = Lid::PERMISSIVE.0;
            s.dlid = Lid::PERMISSIVE.0;
            s.sl = meta.sl;
            let fwd = match Smp::mut_from_bytes(&mut s.data) {
                Ok(smp) => smi::advance(smp, is_switch),
                Err(_) => Forward::Discard(smi::DiscardReason::NotDirectedRoute),
            };
            match fwd {
                // A CA sends only out of the port the SM is bound to (C14-9:1: the egress port
                // must be InitialPath[1]).
                Forward::Out(q) if is_switch || q.0 == p => {
                    self.transmit(n, q.0, buf, self.now.0);
                }
                Forward::Local => self.push_local(n, p, buf),
                Forward::LidRouted(lid) => self.send_lid_from(n, p, buf, lid, self.now.0),
                Forward::Out(_) | Forward::Discard(_) => {
                    self.drop_buf(buf, DropReason::SmiDiscard, n, p)
                }
            }
        } else {
            let own = self.agents[ni]
                .port_info(PortNum(p))
                .map_or(Lid(0), |pi| pi.lid());
            let s = self.pool.slot_mut(buf);
            s.slid = if meta.slid.0 != 0 { meta.slid.0 } else { own.0 };
            s.sl = meta.sl;
            self.send_lid_from(n, p, buf, meta.dlid, self.now.0);
        }
        Ok(())
    }

    pub(super) fn push_local(&mut self, n: u32, port: u8, buf: u32) {
        self.push_local_at(n, port, buf, self.now.0);
    }

    fn push_local_at(&mut self, n: u32, port: u8, buf: u32, at: u64) {
        self.push_arrive(Time(at), n, port, true, buf);
    }

    /// A LID-routed MAD originated at node `n` (an SM's or agent's CA port `p`, or switch
    /// port 0), leaving at `depart`: to itself if `dlid` is the port's own, else out of the CA
    /// port or by the switch's LFT.
    pub(super) fn send_lid_from(&mut self, n: u32, p: u8, buf: u32, dlid: Lid, depart: u64) {
        self.pool.slot_mut(buf).dlid = dlid.0;
        let ni = n as usize;
        let a = &self.agents[ni];
        let ext = self.external[ni].as_deref();
        if a.is_switch() {
            let (mine, out) = match ext {
                Some(e) => (e.lid_matches(dlid), e.lft_port(dlid)),
                None => (a.lid_matches(PortNum::MGMT, dlid), a.lft_port(dlid)),
            };
            if mine {
                return self.push_local_at(n, 0, buf, depart);
            }
            match out {
                Some(PortNum(0)) => self.push_local_at(n, 0, buf, depart),
                Some(PortNum(out)) => self.transmit(n, out, buf, depart),
                None => self.drop_buf(buf, DropReason::NoRoute, n, p),
            }
        } else if ext.map_or_else(|| a.lid_matches(PortNum(p), dlid), |e| e.lid_matches(dlid)) {
            self.push_local_at(n, p, buf, depart);
        } else {
            self.transmit(n, p, buf, depart);
        }
    }

    /// Takes the next MAD queued for SM `h` into `buf`.
    pub fn sm_recv(
        &mut self,
        h: SmHandle,
        buf: &mut [u8],
    ) -> Result<Option<(MadMeta, usize)>, PortError> {
        Ok(self.sm_recv_qp(h, buf)?.map(|(meta, _, len)| (meta, len)))
    }

    /// [`Fabric::sm_recv`], also returning the local QP the MAD arrived on (0 for SMPs; the
    /// destination QP of a GMP, 1 for the GSI) — what an ibsim-protocol server needs to pick
    /// the client registered on that QP.
    pub fn sm_recv_qp(
        &mut self,
        h: SmHandle,
        buf: &mut [u8],
    ) -> Result<Option<(MadMeta, u32, usize)>, PortError> {
        let Some(sm) = self.sms.get_mut(h.0 as usize).filter(|s| s.active) else {
            return Err(PortError::Closed);
        };
        if sm.queue.is_empty() {
            return Ok(None);
        }
        let Some(out) = buf.get_mut(..SMP_LEN) else {
            return Err(PortError::BadLength {
                len: buf.len(),
                expected: SMP_LEN,
            });
        };
        let Some((meta, qp, buf)) = sm.queue.pop_front() else {
            return Ok(None);
        };
        sm.stats.received += 1;
        out.copy_from_slice(&self.pool.slot(buf).data);
        self.pool.release(buf);
        Ok(Some((meta, qp, SMP_LEN)))
    }
}

/// An attached SM's view of the fabric: an [`ibmad::MadPort`] borrowing the [`Fabric`].
///
/// `send` originates a MAD at the SM's node now; `recv` takes MADs that reached the SM. Neither
/// advances the clock: drive the fabric ([`Fabric::step`], [`Fabric::run_until`]) in between.
pub struct SimPort<'a> {
    fabric: &'a mut Fabric,
    sm: SmHandle,
}

impl SimPort<'_> {
    /// The fabric behind the port.
    pub fn fabric(&mut self) -> &mut Fabric {
        self.fabric
    }
    /// The SM this port belongs to.
    #[must_use]
    pub fn handle(&self) -> SmHandle {
        self.sm
    }
}

impl MadPort for SimPort<'_> {
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        self.fabric.sm_send(self.sm, meta, mad)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError> {
        self.fabric.sm_recv(self.sm, buf)
    }
}

impl VirtualClockPort for SimPort<'_> {
    fn now(&self) -> Time {
        self.fabric.now()
    }
    fn pending(&self) -> usize {
        self.fabric.sm_pending(self.sm)
    }
    fn next_event_time(&self) -> Option<Time> {
        self.fabric.next_event_time()
    }
    fn run_until(&mut self, t: Time) {
        self.fabric.run_until(t);
    }
}

/// Name → handle lookups the scenario tests use.
impl Fabric {
    /// Every attached (not detached) SM.
    pub fn sms(&self) -> impl Iterator<Item = SmAttachment> + '_ {
        self.sms
            .iter()
            .enumerate()
            .filter(|(_, s)| s.active)
            .map(|(i, s)| SmAttachment {
                handle: SmHandle(i as u32),
                node: NodeId(s.node),
                port: PortNum(s.port),
            })
    }

    /// Nodes by name, for building scenario tables.
    #[must_use]
    pub fn names(&self) -> HashMap<String, NodeId> {
        self.topo
            .nodes()
            .map(|(id, n)| (n.name().to_string(), id))
            .collect()
    }
}

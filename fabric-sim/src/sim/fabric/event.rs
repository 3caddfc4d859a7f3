//! The event loop and MAD movement: arrivals, LID switching, delivery to agents.

use std::time::Duration;

use ibmad::zerocopy::FromBytes;
use ibmad::{Lid, MadMeta, Method, MgmtClass, PortNum, PortState, Smp, SmpAttrId, Time, SMP_LEN};
use sma::{Event, Lent, LinkEvent, LinkRequest};

use super::{Ev, Fabric, TraceKind, CUT, DISABLED, NO_PEER, NO_TIMER, UP};
use crate::sim::counters::{bump, MAD_PACKET_OCTETS};
use crate::sim::stats::DropReason;

impl Fabric {
    // ----- clock and event loop ---------------------------------------------------------

    /// The virtual clock.
    #[must_use]
    pub fn now(&self) -> Time {
        self.now
    }

    /// The time of the next pending event, if any.
    #[must_use]
    pub fn next_event_time(&self) -> Option<Time> {
        self.queue.peek_time()
    }

    /// Number of pending events.
    #[must_use]
    pub fn pending_events(&self) -> usize {
        self.queue.len()
    }

    /// Processes the earliest pending event (advancing the clock to it) and returns its time;
    /// `None` if nothing is pending.
    pub fn step(&mut self) -> Option<Time> {
        let (t, ev) = self.queue.pop()?;
        self.now = self.now.max(t);
        self.process(ev);
        Some(t)
    }

    /// Processes every event due at or before `t`, then sets the clock to `t` (if later).
    pub fn run_until(&mut self, t: Time) {
        while let Some((at, ev)) = self.queue.pop_due(t) {
            self.now = self.now.max(at);
            self.process(ev);
        }
        self.now = self.now.max(t);
    }

    /// [`Fabric::run_until`] `now + d`.
    pub fn run_for(&mut self, d: Duration) {
        let t = self.now + d;
        self.run_until(t);
    }

    /// Processes events until none is pending or the next one is after `limit`; returns the
    /// clock. Unlike [`Fabric::run_until`] the clock stops at the last event processed.
    pub fn run_until_idle(&mut self, limit: Time) -> Time {
        while let Some((at, ev)) = self.queue.pop_due(limit) {
            self.now = self.now.max(at);
            self.process(ev);
        }
        self.now
    }

    pub(super) fn process(&mut self, ev: Ev) {
        self.stats.events += 1;
        match ev {
            Ev::Arrive {
                node,
                port,
                local,
                buf,
            } => {
                self.arrivals_pending -= 1;
                self.arrive(node, port, local, buf);
            }
            Ev::Timer { node } => {
                let n = node as usize;
                if self.timer_at[n] == self.now.0 {
                    self.timer_at[n] = NO_TIMER;
                    self.stats.timers += 1;
                    self.trace_ev(TraceKind::Timer, node, 0);
                    if let Some(ext) = self.external[n].as_mut() {
                        ext.handle_timeout(self.now);
                    } else {
                        self.agents[n].handle_timeout(self.now);
                    }
                    self.after_agent(node, self.service_ns);
                }
            }
            Ev::Retrain { gport } => self.phys_up(gport),
            Ev::LinkSet { gport, up } => {
                let g = gport as usize;
                let Some(pg) = self.peer_gport(gport) else {
                    return;
                };
                if up {
                    self.flags[g] &= !CUT;
                    self.flags[pg as usize] &= !CUT;
                    self.phys_up(gport);
                } else {
                    self.flags[g] |= CUT;
                    self.flags[pg as usize] |= CUT;
                    self.phys_down(gport, true);
                }
            }
            Ev::LinkReq { gport, req } => match req {
                LinkRequest::Down => {
                    self.phys_down(gport, false);
                    self.schedule_retrain(gport);
                }
                LinkRequest::Disable => {
                    self.flags[gport as usize] |= DISABLED;
                    self.phys_down(gport, false);
                }
                LinkRequest::Poll => {
                    self.flags[gport as usize] &= !DISABLED;
                    self.schedule_retrain(gport);
                }
            },
            Ev::Reboot { node } => self.do_reboot(node),
        }
    }

    // ----- MAD movement -----------------------------------------------------------------

    pub(super) fn node_port_of(&self, gport: u32) -> Option<(u32, u8)> {
        // The peer's peer is this port: cheaper than searching `base`.
        let g = gport as usize;
        let pn = *self.peer_node.get(g)?;
        if pn == NO_PEER {
            return None;
        }
        let pg = self.base[pn as usize] as usize + usize::from(self.peer_port[g]);
        Some((self.peer_node[pg], self.peer_port[pg]))
    }

    pub(super) fn peer_gport(&self, gport: u32) -> Option<u32> {
        let g = gport as usize;
        let pn = *self.peer_node.get(g)?;
        if pn == NO_PEER {
            return None;
        }
        Some(self.base[pn as usize] + u32::from(self.peer_port[g]))
    }

    /// True if `port` of agent `n` may pass SMPs: physically LinkUp (fabric view) and its
    /// PortState is not Down (IBA vol1 §7.2; Init/Armed/Active all carry SMPs).
    pub(super) fn port_passes(&self, n: u32, port: u8) -> bool {
        self.link_state(n, port)
            .is_some_and(|s| s != PortState::DOWN)
    }

    /// The PortState of a port whose link is physically up (`None` if it is not).
    fn link_state(&self, n: u32, port: u8) -> Option<PortState> {
        let ni = n as usize;
        let g = self.base[ni] as usize + usize::from(port);
        if self.flags[g] & UP == 0 {
            return None;
        }
        match &self.external[ni] {
            Some(ext) => Some(ext.port_state(PortNum(port))),
            None => self.agents[ni]
                .port_info(PortNum(port))
                .map(|pi| pi.port_state()),
        }
    }

    pub(super) fn drop_buf(&mut self, buf: u32, reason: DropReason, node: u32, port: u8) {
        self.stats.dropped.bump(reason);
        if self.cfg.trace {
            self.trace_mad(TraceKind::Drop(reason), node, port, buf);
        }
        self.pool.release(buf);
    }

    /// Puts the MAD in `buf` on the wire out of `port` of node `n`, leaving at `depart`.
    pub(super) fn transmit(&mut self, n: u32, port: u8, buf: u32, depart: u64) {
        let ni = n as usize;
        if port == 0 || port > self.agents[ni].num_ports() {
            return self.drop_buf(buf, DropReason::NoLink, n, port);
        }
        let g = self.base[ni] as usize + usize::from(port);
        let pn = self.peer_node[g];
        if pn == NO_PEER {
            return self.drop_buf(buf, DropReason::NoLink, n, port);
        }
        // Egress: the physical link decides. A port the SM has just set Down (logical Down,
        // link still up) sends the SetResp before the carrier drops the link — the link
        // request is carried out only once that response has crossed (see `after_agent`), as
        // on hardware; OpenSM's first sweep relies on it (it sets Down to apply OpVLs/MTU).
        if self.flags[g] & UP == 0 {
            bump(&mut self.counters[g].port_xmit_discards);
            return self.drop_buf(buf, DropReason::PortDown, n, port);
        }
        if !MgmtClass(self.pool.slot(buf).data[1]).is_smp() && !self.port_active(n, port) {
            // A GMP is a data packet: a port that is not Active discards it.
            bump(&mut self.counters[g].port_xmit_discards);
            return self.drop_buf(buf, DropReason::NotActive, n, port);
        }
        self.stats.transmitted += 1;
        self.counters[g].count_xmit(MAD_PACKET_OCTETS, false);
        {
            let s = self.pool.slot_mut(buf);
            s.bad_crc = false;
            s.symbol_error = false;
        }
        let pp = self.peer_port[g];
        let mut arrival = depart.saturating_add(self.hop_ns);
        let decision = if !self.faulty {
            None
        } else if !self.link_faults.is_empty() {
            let key = (g as u32).min(self.base[pn as usize] + u32::from(pp));
            match self.link_faults.get_mut(&key) {
                Some(inj) => Some(inj.decide(SMP_LEN)),
                None if !self.faults.config().is_none() => Some(self.faults.decide(SMP_LEN)),
                None => None,
            }
        } else if !self.faults.config().is_none() {
            Some(self.faults.decide(SMP_LEN))
        } else {
            None
        };
        if let Some(d) = decision {
            if d.drop {
                self.stats.faults.dropped += 1;
                return self.drop_buf(buf, DropReason::Fault, n, port);
            }
            if d.bad_crc {
                self.stats.faults.corrupted += 1;
                self.pool.slot_mut(buf).bad_crc = true;
            }
            if let Some((byte, bit)) = d.corrupt {
                self.stats.faults.garbled += 1;
                if let Some(b) = self.pool.slot_mut(buf).data.get_mut(usize::from(byte)) {
                    *b ^= 1 << bit;
                }
            }
            if d.symbol_error {
                self.stats.faults.symbol_errors += 1;
                self.pool.slot_mut(buf).symbol_error = true;
            }
            if d.extra_delay_ns > 0 {
                self.stats.faults.delayed += 1;
                arrival = arrival.saturating_add(d.extra_delay_ns);
            }
            if d.duplicate {
                self.stats.faults.duplicated += 1;
                let copy = self.pool.alloc();
                let src = self.pool.slot(buf).clone();
                *self.pool.slot_mut(copy) = src;
                self.push_arrive(Time(arrival), pn, pp, false, copy);
            }
        }
        self.push_arrive(Time(arrival), pn, pp, false, buf);
    }

    pub(super) fn push_arrive(&mut self, at: Time, node: u32, port: u8, local: bool, buf: u32) {
        self.arrivals_pending += 1;
        self.queue.push(
            at,
            Ev::Arrive {
                node,
                port,
                local,
                buf,
            },
        );
    }

    /// True if the SMA of a muted node would consume this SMP (so the fabric drops it).
    pub(super) fn consumed_by_sma(smp: &Smp) -> bool {
        if smp.is_dr() {
            !smp.direction() && smp.hop_ptr >= smp.hop_cnt
        } else {
            let m = smp.method();
            !m.is_response() && m != Method::TRAP && smp.attr() != SmpAttrId::SM_INFO
        }
    }

    pub(super) fn arrive(&mut self, n: u32, port: u8, local: bool, buf: u32) {
        let ni = n as usize;
        if !local {
            self.stats.hops += 1;
        }
        if self.cfg.trace {
            self.trace_mad(TraceKind::Arrive, n, port, buf);
        }
        if !local {
            let g = self.base[ni] as usize + usize::from(port);
            let (bad_crc, symbol_error) = {
                let s = self.pool.slot(buf);
                (s.bad_crc, s.symbol_error)
            };
            if !self.port_passes(n, port) {
                return self.drop_buf(buf, DropReason::PortDown, n, port);
            }
            if symbol_error {
                bump(&mut self.counters[g].symbol_error_counter);
            }
            if bad_crc {
                // The receiver's VCRC/ICRC check fails: discarded at the port, never seen by
                // an agent (IBA vol1 §16.1.3.5 PortRcvErrors: local physical errors).
                bump(&mut self.counters[g].port_rcv_errors);
                return self.drop_buf(buf, DropReason::BadCrc, n, port);
            }
            self.counters[g].count_rcv(MAD_PACKET_OCTETS, false);
        }
        let class = self.pool.slot(buf).data[1];
        if class == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            let (pass_through, consumed) = {
                let Ok(smp) = Smp::ref_from_bytes(&self.pool.slot(buf).data) else {
                    return self.drop_buf(buf, DropReason::NotSmp, n, port);
                };
                let (hp, hc) = (smp.hop_ptr, smp.hop_cnt);
                let through = self.agents[ni].is_switch()
                    && if smp.direction() {
                        hp >= 2 && hp <= hc
                    } else {
                        hp != 0 && hp < hc
                    };
                (through, Fabric::consumed_by_sma(smp))
            };
            if self.muted[ni] && consumed {
                return self.drop_buf(buf, DropReason::Muted, n, port);
            }
            let delay = if pass_through { 0 } else { self.service_ns };
            self.deliver(n, port, buf, delay);
        } else if class == MgmtClass::SUBN_LID_ROUTED.0 {
            self.route_lid(n, port, local, buf, false);
        } else {
            self.route_lid(n, port, local, buf, true);
        }
    }

    /// LID routing at node `n` of a MAD that reached `port`: a switch forwards by its LFT; an
    /// end port accepts the DLIDs of its LID range. An SMP (`gmp`
    /// false) passes ports in Init/Armed/Active and the permissive DLID reaches the SMA; a GMP
    /// is a data packet: it needs Active ports ([`DropReason::NotActive`]), and is delivered to
    /// QP1 of the end port ([`Fabric::deliver_gmp`]).
    fn route_lid(&mut self, n: u32, port: u8, local: bool, buf: u32, gmp: bool) {
        let ni = n as usize;
        if gmp && !local && !self.port_active(n, port) {
            return self.drop_buf(buf, DropReason::NotActive, n, port);
        }
        let dlid = Lid(self.pool.slot(buf).dlid);
        let agent = &self.agents[ni];
        let ext = self.external[ni].as_deref();
        let mine = if let Some(ext) = ext {
            ext.lid_matches(dlid)
        } else if agent.is_switch() {
            agent.lid_matches(PortNum::MGMT, dlid)
        } else {
            agent.lid_matches(PortNum(port), dlid)
        };
        let deliver = |f: &mut Fabric| {
            if gmp {
                f.deliver_gmp(n, port, buf);
            } else {
                f.deliver_lid_local(n, port, buf);
            }
        };
        if mine || (!gmp && dlid.is_permissive()) {
            return deliver(self);
        }
        if !agent.is_switch() {
            return self.drop_buf(buf, DropReason::DlidMismatch, n, port);
        }
        let out = match ext {
            Some(ext) => ext.lft_port(dlid),
            None => agent.lft_port(dlid),
        };
        match out {
            Some(PortNum(0)) => deliver(self),
            Some(PortNum(out)) => {
                self.stats.lid_forwarded += 1;
                if self.cfg.trace {
                    self.trace_mad(TraceKind::LidForward, n, out, buf);
                }
                self.transmit(n, out, buf, self.now.0);
            }
            None => {
                if !local {
                    let g = self.base[ni] as usize + usize::from(port);
                    bump(&mut self.counters[g].port_rcv_switch_relay_errors);
                }
                self.drop_buf(buf, DropReason::NoRoute, n, port)
            }
        }
    }

    /// True if `port` of node `n` may carry data packets: physically LinkUp and PortState
    /// Active (IBA vol1 §7.2: only an Active port transmits and accepts data packets). Switch
    /// port 0 is internal and always carries them.
    pub(super) fn port_active(&self, n: u32, port: u8) -> bool {
        if port == 0 {
            return self.agents[n as usize].is_switch();
        }
        self.link_state(n, port) == Some(PortState::ACTIVE)
    }

    pub(super) fn deliver_lid_local(&mut self, n: u32, port: u8, buf: u32) {
        if self.muted[n as usize] {
            let consumed = Smp::ref_from_bytes(&self.pool.slot(buf).data)
                .map(Fabric::consumed_by_sma)
                .unwrap_or(true);
            if consumed {
                return self.drop_buf(buf, DropReason::Muted, n, port);
            }
        }
        self.deliver(n, port, buf, self.service_ns);
    }

    /// Hands the MAD to the agent, then collects what the agent produced.
    pub(super) fn deliver(&mut self, n: u32, port: u8, buf: u32, delay: u64) {
        self.stats.delivered += 1;
        if self.cfg.trace {
            self.trace_mad(TraceKind::Deliver, n, port, buf);
        }
        let slot = self.pool.slot_mut(buf);
        let meta = MadMeta {
            port: PortNum(port),
            slid: Lid(slot.slid),
            dlid: Lid(slot.dlid),
            qp: 0,
            sl: slot.sl,
            ..Default::default()
        };
        let lent = match self.external[n as usize].as_mut() {
            Some(ext) => {
                ext.deliver(self.now, &meta, &slot.data);
                None
            }
            // The agent's first answer (a DR SMP passed on, a response) stays in this buffer
            // and leaves first, as it would from the agent's transmit queue; the rest of what
            // it sends is drained below.
            // A MAD for the local SM may stay in it too; it is queued for the SM before the
            // events drained below, as the agent's first event would have been.
            None => self.agents[n as usize].handle_mad_lent(self.now, &meta, &mut slot.data),
        };
        let mut for_sm = None;
        match lent {
            Some(Lent::Transmit(out)) => {
                let depart = self.now.0.saturating_add(delay);
                self.transmit_from_agent(n, buf, &out, depart);
            }
            Some(Lent::ForSm(m)) => for_sm = Some((m, buf)),
            None => self.pool.release(buf),
        }
        self.after_agent_with(n, delay, for_sm);
    }

    /// Drains an agent after any input: transmits (leaving after `delay` ns), events (MADs for
    /// the local SM), link requests, and its next timer.
    pub(super) fn after_agent(&mut self, n: u32, delay: u64) {
        self.after_agent_with(n, delay, None);
    }

    /// [`Fabric::after_agent`], with a MAD the agent left for the local SM in buffer `buf`
    /// (queued ahead of its events).
    fn after_agent_with(&mut self, n: u32, delay: u64, for_sm: Option<(MadMeta, u32)>) {
        let ni = n as usize;
        let depart = self.now.0.saturating_add(delay);
        if self.external[ni].is_some() {
            return self.after_external(n, depart);
        }
        while self.agents[ni].has_transmit() {
            let buf = self.pool.alloc();
            let out = self.agents[ni].poll_transmit(self.now, &mut self.pool.slot_mut(buf).data);
            let Some(tx) = out else {
                self.pool.release(buf);
                break;
            };
            self.transmit_from_agent(n, buf, &tx.meta, depart);
        }
        if let Some((meta, buf)) = for_sm {
            self.queue_for_sm(n, meta, 0, buf);
        }
        while let Some(ev) = self.agents[ni].poll_event() {
            if let Event::ForSm { meta, mad } = ev {
                let buf = self.pool.alloc();
                self.pool.slot_mut(buf).data = *mad;
                self.queue_for_sm(n, meta, 0, buf);
            }
        }
        if !self.agents[ni].hardware().requests.is_empty() {
            let reqs = std::mem::take(&mut self.agents[ni].hardware_mut().requests);
            for (p, req) in reqs {
                self.queue_link_request(n, p, req, depart);
            }
        }
        let t = self.agents[ni].poll_timeout();
        self.arm_timer(n, t);
    }

    /// Puts a MAD an agent wrote into `buf` on the wire with the addressing of `meta`: an SMP
    /// out of `meta.port` (the agent chose the egress port), a GMP LID-routed from end port
    /// `meta.port` to `meta.dlid`.
    pub(super) fn transmit_from_agent(&mut self, n: u32, buf: u32, meta: &MadMeta, depart: u64) {
        let s = self.pool.slot_mut(buf);
        s.slid = meta.slid.0;
        s.dlid = meta.dlid.0;
        s.sl = meta.sl;
        let gmp = !MgmtClass(s.data[1]).is_smp();
        s.sqp = u32::from(gmp);
        s.dqp = meta.qp;
        if gmp {
            self.send_lid_from(n, meta.port.0, buf, meta.dlid, depart);
        } else {
            self.transmit(n, meta.port.0, buf, depart);
        }
    }

    /// Carries out a node's link request once what it sent at `depart` (its SetResp) has
    /// crossed the link.
    pub(super) fn queue_link_request(&mut self, n: u32, p: PortNum, req: LinkRequest, depart: u64) {
        let ni = n as usize;
        if p.0 == 0 || p.0 > self.agents[ni].num_ports() {
            return;
        }
        let gport = self.base[ni] + u32::from(p.0);
        let at = Time(depart.saturating_add(self.hop_ns));
        self.queue.push(at, Ev::LinkReq { gport, req });
    }

    /// Schedules node `n`'s next timer event (`None`: no timer).
    pub(super) fn arm_timer(&mut self, n: u32, t: Option<Time>) {
        let ni = n as usize;
        match t {
            Some(t) => {
                let t = t.max(self.now);
                if self.timer_at[ni] != t.0 {
                    self.timer_at[ni] = t.0;
                    self.queue.push(t, Ev::Timer { node: n });
                }
            }
            None => self.timer_at[ni] = NO_TIMER,
        }
    }

    /// Reports a link change to the node's agent (built-in or external).
    pub(super) fn link_event(&mut self, node: u32, port: u8, ev: LinkEvent) {
        let now = self.now;
        match self.external[node as usize].as_mut() {
            Some(ext) => ext.link(now, PortNum(port), ev),
            None => self.agents[node as usize].handle_link(now, PortNum(port), ev),
        }
    }
}

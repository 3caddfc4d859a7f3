//! GMPs at their destination: what answers at QP1 of an end port.
//!
//! A GMP that reached the end port its DLID names (a CA port, or a switch's port 0) is a
//! datagram for that port's QP1, the GSI (IBA vol1 §13.5.1), and goes to:
//! 1. an attachment there, for a response (it answers a request the attachment sent) or for a
//!    request of a class the attachment registered ([`Fabric::register_class`]) — as the
//!    kernel hands a MAD to the `user_mad` agent registered for its class;
//! 2. else the node itself: an external agent that serves GMPs
//!    ([`super::ExternalAgent::handles_gmp`]), or the node's PMA for PerfMgt — a
//!    [`sma::Pma`] advertising what ibsim's does ([`PmaConfig::for_node`]), reading and
//!    clearing the simulator's own per-port counters ([`crate::sim::counters`]); a MAD the PMA
//!    does not answer (a response, a Trap, a malformed one) is dropped;
//! 3. else no agent serves the class: a Get or Set is answered GetResp with status 0x000C
//!    (method/attribute not supported) as a Linux host's MAD layer answers unmatched requests;
//!    anything else is dropped ([`DropReason::NoAgent`]).
//!
//! Answers leave the port the request arrived on after the SMA service time, LID-routed back
//! to the requester's LID and QP.

use ibmad::zerocopy::IntoBytes;
use ibmad::{Lid, MadMeta, Method, MgmtClass, PortNum};
use sma::pma::{CounterSet, CounterSource, Counters, Pma, PmaConfig};

use super::Fabric;
use crate::sim::counters::PortCounters;
use crate::sim::stats::DropReason;

/// One node's counters as the PMA sees them: `ports[p]` is port `p` (index 0 a switch's
/// management port; a CA has none).
struct NodeCounters<'a> {
    ports: &'a mut [PortCounters],
    is_switch: bool,
}

impl NodeCounters<'_> {
    fn index(&self, port: PortNum) -> Option<usize> {
        (port.0 != 0 || self.is_switch).then_some(usize::from(port.0))
    }
}

impl CounterSource for NodeCounters<'_> {
    fn counters(&mut self, port: PortNum) -> Option<Counters> {
        self.index(port).and_then(|i| self.ports.get(i)).copied()
    }
    fn clear(&mut self, port: PortNum, which: CounterSet) {
        if let Some(c) = self.index(port).and_then(|i| self.ports.get_mut(i)) {
            c.clear(which);
        }
    }
}

impl Fabric {
    /// Delivers the GMP in `buf`, which reached `port` of node `n` and whose DLID is that end
    /// port's, to QP1 there (see the module documentation).
    pub(super) fn deliver_gmp(&mut self, n: u32, port: u8, buf: u32) {
        let ni = n as usize;
        self.stats.delivered += 1;
        if self.cfg.trace {
            self.trace_mad(super::TraceKind::Deliver, n, port, buf);
        }
        // A switch's GSI sits behind management port 0.
        let end_port = if self.agents[ni].is_switch() { 0 } else { port };
        let (meta, qp, class, method) = {
            let s = self.pool.slot(buf);
            let meta = MadMeta {
                port: PortNum(end_port),
                slid: Lid(s.slid),
                dlid: Lid(s.dlid),
                qp: s.sqp,
                sl: s.sl,
                ..Default::default()
            };
            (meta, s.dqp, MgmtClass(s.data[1]), Method(s.data[3]))
        };
        if method.is_response() || self.class_registered(n, end_port, class) {
            self.queue_for_sm(n, meta, qp, buf);
            return;
        }
        if self.external[ni].as_ref().is_some_and(|e| e.handles_gmp()) {
            let now = self.now;
            if let Some(ext) = self.external[ni].as_mut() {
                ext.deliver(now, &meta, &self.pool.slot(buf).data);
            }
            self.pool.release(buf);
            return self.after_agent(n, self.service_ns);
        }
        if class == MgmtClass::PERF_MGMT {
            return self.answer_pma(n, &meta, port, buf);
        }
        if ibmad::gmp::answer_unserved(&mut self.pool.slot_mut(buf).data) {
            return self.send_gmp_reply(n, end_port, buf);
        }
        self.drop_buf(buf, DropReason::NoAgent, n, port);
    }

    /// The node's PMA answers the PerfMgt MAD in `buf` (received at `meta.port`, the end port;
    /// `port` is the physical port it arrived on) from the node's counters.
    fn answer_pma(&mut self, n: u32, meta: &MadMeta, port: u8, buf: u32) {
        let ni = n as usize;
        let is_switch = self.agents[ni].is_switch();
        let num_ports = self.agents[ni].num_ports();
        let lo = self.base[ni] as usize;
        let hi = lo + usize::from(num_ports) + 1;
        let reply = {
            let Some(ports) = self.counters.get_mut(lo..hi) else {
                return self.drop_buf(buf, DropReason::NoAgent, n, port);
            };
            let mut src = NodeCounters { ports, is_switch };
            let mut pma = Pma::new(PmaConfig::for_node(is_switch, num_ports));
            pma.handle_mad(&mut src, meta, &self.pool.slot(buf).data)
        };
        let Some(reply) = reply else {
            return self.drop_buf(buf, DropReason::NoAgent, n, port);
        };
        self.pool
            .slot_mut(buf)
            .data
            .copy_from_slice(reply.mad.as_bytes());
        self.send_gmp_reply(n, meta.port.0, buf);
    }

    /// Sends the answer now in `buf` (the request's slot, its bytes rewritten) back to the
    /// requester: source and destination LIDs and QPs swapped, leaving after the service time.
    fn send_gmp_reply(&mut self, n: u32, end_port: u8, buf: u32) {
        let s = self.pool.slot_mut(buf);
        let requester = Lid(s.slid);
        s.slid = s.dlid;
        s.dqp = s.sqp;
        s.sqp = 1;
        let depart = self.now.0.saturating_add(self.service_ns);
        self.send_lid_from(n, end_port, buf, requester, depart);
    }
}

//! External agents: nodes whose management runs outside the fabric.

use ibmad::{Lid, MadMeta, PortNum, PortState, Time};
use sma::{LinkEvent, LinkRequest};

use super::{Fabric, SimError, NO_TIMER, UP};
use crate::topo::NodeId;

/// The management side of a node that the fabric does not run itself — e.g. a switch ASIC
/// model whose SMA is host software reached through a driver ([`Fabric::set_external`]).
///
/// For an external node the fabric hands every SMP that would go to the built-in agent to
/// [`ExternalAgent::deliver`] (with the ingress port in `meta.port`), sends what
/// [`ExternalAgent::poll_transmit`] returns out of `meta.port`, reports link changes to
/// [`ExternalAgent::link`], carries out [`ExternalAgent::poll_link_request`]s, and forwards
/// LID-routed SMPs with the node's own data-plane state ([`ExternalAgent::lft_port`],
/// [`ExternalAgent::lid_matches`], [`ExternalAgent::port_state`]). The built-in agent of the
/// node is not used any more.
pub trait ExternalAgent: Send {
    /// An SMP for this node's management arrived on `meta.port`.
    fn deliver(&mut self, now: Time, meta: &MadMeta, mad: &[u8]);
    /// The physical link of `port` changed.
    fn link(&mut self, now: Time, port: PortNum, ev: LinkEvent);
    /// The next SMP to put on the wire out of `meta.port` (written into `buf[..256]`).
    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<sma::Transmit>;
    /// The next physical link change the node asks for.
    fn poll_link_request(&mut self) -> Option<(PortNum, LinkRequest)>;
    /// When [`ExternalAgent::handle_timeout`] is next due.
    fn poll_timeout(&self) -> Option<Time>;
    /// A timer is due.
    fn handle_timeout(&mut self, now: Time);
    /// Egress port for a LID-routed packet to `dlid` (`Some(0)`: deliver to management).
    fn lft_port(&self, dlid: Lid) -> Option<PortNum>;
    /// True if `dlid` addresses the node's management (its own LID).
    fn lid_matches(&self, dlid: Lid) -> bool;
    /// Logical state of `port` (Down/Init/Armed/Active).
    fn port_state(&self, port: PortNum) -> PortState;
    /// True if the node serves GMPs itself: GMP requests for its ports are then handed to
    /// [`ExternalAgent::deliver`] too (`meta.qp` = the requester's QP, `meta.port` = 0 on a
    /// switch), and its answers carried back like its SMPs. The default, false, lets the
    /// fabric's PMA answer for the node from the fabric's counters.
    fn handles_gmp(&self) -> bool {
        false
    }
}

impl Fabric {
    /// Hands `node`'s management to `ext` (see [`ExternalAgent`]) from now on. The links of
    /// the node that are up are reported to it as [`LinkEvent::Up`] with their trained width
    /// and speed. Returns the external agent that was there before, if any.
    pub fn set_external(
        &mut self,
        node: NodeId,
        ext: Box<dyn ExternalAgent>,
    ) -> Result<Option<Box<dyn ExternalAgent>>, SimError> {
        let n = self.check_node(node)?;
        let ni = n as usize;
        let old = self.external[ni].replace(ext);
        let np = self.agents[ni].num_ports();
        for p in 1..=np {
            let g = self.base[ni] as usize + usize::from(p);
            if self.flags[g] & UP == 0 {
                continue;
            }
            let Some(pi) = self.agents[ni].port_info(PortNum(p)) else {
                continue;
            };
            let ev = LinkEvent::Up {
                width_active: pi.link_width_active,
                speed_active: pi.link_speed_active(),
                speed_ext_active: pi.link_speed_ext_active(),
            };
            self.link_event(n, p, ev);
        }
        self.timer_at[ni] = NO_TIMER;
        self.after_agent(n, self.service_ns);
        Ok(old)
    }

    /// The external agent of `node`, if it has one.
    #[must_use]
    pub fn external(&self, node: NodeId) -> Option<&dyn ExternalAgent> {
        self.external.get(node.index())?.as_deref()
    }

    /// The external agent of `node`, mutable (call [`Fabric::poke`] after changing it).
    pub fn external_mut(&mut self, node: NodeId) -> Option<&mut (dyn ExternalAgent + 'static)> {
        self.external.get_mut(node.index())?.as_deref_mut()
    }

    /// Collects what `node`'s agent produced outside a fabric event (after an
    /// [`Fabric::external_mut`] call): transmits, link requests, its next timer.
    pub fn poke(&mut self, node: NodeId) -> Result<(), SimError> {
        let n = self.check_node(node)?;
        self.after_agent(n, 0);
        Ok(())
    }

    /// [`Fabric::after_agent`] for an external node.
    pub(super) fn after_external(&mut self, n: u32, depart: u64) {
        let ni = n as usize;
        loop {
            let buf = self.pool.alloc();
            let now = self.now;
            let out = match self.external[ni].as_mut() {
                Some(ext) => ext.poll_transmit(now, &mut self.pool.slot_mut(buf).data),
                None => None,
            };
            let Some(tx) = out else {
                self.pool.release(buf);
                break;
            };
            self.transmit_from_agent(n, buf, &tx.meta, depart);
        }
        while let Some((p, req)) = self.external[ni]
            .as_mut()
            .and_then(|e| e.poll_link_request())
        {
            self.queue_link_request(n, p, req, depart);
        }
        let t = self.external[ni].as_ref().and_then(|e| e.poll_timeout());
        self.arm_timer(n, t);
    }
}

//! Physical links (training, down/up, reboots) and the public fault controls.

use ibmad::{PortNum, Time};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sma::LinkEvent;

use super::{Ev, Fabric, SimError, TraceKind, CUT, DISABLED, NO_PEER, NO_TIMER, UP};
use crate::sim::counters::{bump, PortCounters};
use crate::sim::fault::{FaultConfig, FaultInjector};
use crate::sim::link::{train, LinkCaps};
use crate::topo::NodeId;

impl Fabric {
    // ----- physical links ---------------------------------------------------------------

    pub(super) fn caps(&self, n: u32, port: u8) -> LinkCaps {
        let Some(pi) = self.agents[n as usize].port_info(PortNum(port)) else {
            return LinkCaps::default();
        };
        let pick = |enabled: u8, supported: u8| {
            let e = enabled & supported;
            if e == 0 {
                supported
            } else {
                e
            }
        };
        LinkCaps {
            width: pick(pi.link_width_enabled, pi.link_width_supported),
            speed: pick(pi.link_speed_enabled(), pi.link_speed_supported()),
            speed_ext: pi.link_speed_ext_enabled() & pi.link_speed_ext_supported(),
        }
    }

    /// Brings the link of `gport` up on both ends if it is cabled, not cut, not disabled at
    /// either end, and the ends have a common width and speed.
    pub(super) fn phys_up(&mut self, gport: u32) {
        let Some(pg) = self.peer_gport(gport) else {
            return;
        };
        let (g, pgi) = (gport as usize, pg as usize);
        if self.flags[g] & UP != 0 || (self.flags[g] | self.flags[pgi]) & (CUT | DISABLED) != 0 {
            return;
        }
        let (Some((n, p)), Some((pn, pp))) = (self.node_port_of(gport), self.node_port_of(pg))
        else {
            return;
        };
        let Some(t) = train(self.caps(n, p), self.caps(pn, pp)) else {
            return;
        };
        self.flags[g] |= UP;
        self.flags[pgi] |= UP;
        let ev = LinkEvent::Up {
            width_active: t.width_active,
            speed_active: t.speed_active,
            speed_ext_active: t.speed_ext_active,
        };
        for (node, port) in [(n, p), (pn, pp)] {
            self.stats.link_changes += 1;
            self.trace_ev(TraceKind::LinkUp, node, port);
            self.link_event(node, port, ev);
            self.after_agent(node, self.service_ns);
        }
    }

    /// Takes the link of `gport` down on both ends (if it is up). `flap`: neither end asked
    /// for it (a cut cable, a reboot), so both ends count LinkDowned.
    pub(super) fn phys_down(&mut self, gport: u32, flap: bool) {
        let Some(pg) = self.peer_gport(gport) else {
            return;
        };
        let (g, pgi) = (gport as usize, pg as usize);
        if self.flags[g] & UP == 0 {
            return;
        }
        let (Some((n, p)), Some((pn, pp))) = (self.node_port_of(gport), self.node_port_of(pg))
        else {
            return;
        };
        self.flags[g] &= !UP;
        self.flags[pgi] &= !UP;
        if flap {
            bump(&mut self.counters[g].link_downed_counter);
            bump(&mut self.counters[pgi].link_downed_counter);
        }
        for (node, port) in [(n, p), (pn, pp)] {
            self.stats.link_changes += 1;
            self.trace_ev(TraceKind::LinkDown, node, port);
            self.link_event(node, port, LinkEvent::Down);
            self.after_agent(node, self.service_ns);
        }
    }

    pub(super) fn schedule_retrain(&mut self, gport: u32) {
        let t = self.now + self.cfg.link_retrain_time;
        self.queue.push(t, Ev::Retrain { gport });
    }

    pub(super) fn do_reboot(&mut self, n: u32) {
        let ni = n as usize;
        self.stats.reboots += 1;
        self.trace_ev(TraceKind::Reboot, n, 0);
        let np = self.agents[ni].num_ports();
        for p in 1..=np {
            let g = self.base[ni] + u32::from(p);
            self.phys_down(g, true);
            // Power-on: ports come back enabled.
            self.flags[g as usize] &= !DISABLED;
        }
        // Power-on: the node's counters start from zero.
        let (lo, hi) = (self.base[ni] as usize, self.base[ni + 1] as usize);
        self.counters[lo..hi].fill(PortCounters::default());
        self.agents[ni].reset(self.now);
        self.agents[ni].hardware_mut().requests.clear();
        self.timer_at[ni] = NO_TIMER;
        self.after_agent(n, self.service_ns);
        self.reregister_sms(n);
        for p in 1..=np {
            let g = self.base[ni] + u32::from(p);
            if self.peer_node[g as usize] != NO_PEER {
                self.schedule_retrain(g);
            }
        }
    }

    // ----- public fault controls --------------------------------------------------------

    pub(super) fn check_node(&self, node: NodeId) -> Result<u32, SimError> {
        if node.index() < self.agents.len() {
            Ok(node.0)
        } else {
            Err(SimError::NoSuchNode(node))
        }
    }

    pub(super) fn cabled_gport(&self, node: NodeId, port: PortNum) -> Result<u32, SimError> {
        let n = self.check_node(node)?;
        let a = &self.agents[n as usize];
        if port.0 == 0 || port.0 > a.num_ports() {
            return Err(SimError::NoSuchPort { node, port });
        }
        let g = self.base[n as usize] + u32::from(port.0);
        if self.peer_node[g as usize] == NO_PEER {
            return Err(SimError::NotCabled { node, port });
        }
        Ok(g)
    }

    /// Cuts (`up = false`) or restores (`up = true`) the cable at `node`/`port` now. Both agents
    /// get `LinkEvent::Down` / `LinkEvent::Up` (and produce whatever traps they produce). A
    /// restored cable trains at once, unless an SM has disabled either end (PortPhysicalState
    /// Disabled), in which case it stays down until the SM sets Polling.
    pub fn set_link(&mut self, node: NodeId, port: PortNum, up: bool) -> Result<(), SimError> {
        let gport = self.cabled_gport(node, port)?;
        self.process(Ev::LinkSet { gport, up });
        Ok(())
    }

    /// [`Fabric::set_link`] at time `at`.
    pub fn schedule_link(
        &mut self,
        at: Time,
        node: NodeId,
        port: PortNum,
        up: bool,
    ) -> Result<(), SimError> {
        let gport = self.cabled_gport(node, port)?;
        self.check_future(at)?;
        self.queue.push(at, Ev::LinkSet { gport, up });
        Ok(())
    }

    pub(super) fn check_future(&self, at: Time) -> Result<(), SimError> {
        if at < self.now {
            return Err(SimError::InThePast { at, now: self.now });
        }
        Ok(())
    }

    /// True if the physical link of `node`/`port` is up.
    #[must_use]
    pub fn is_link_up(&self, node: NodeId, port: PortNum) -> bool {
        self.cabled_gport(node, port)
            .is_ok_and(|g| self.flags[g as usize] & UP != 0)
    }

    /// Reboots `node` now: its links drop (peers see LinkEvent::Down), the agent loses every
    /// SM-set value (`Agent::reset`), and the links retrain after
    /// [`SimConfig::link_retrain_time`]. Ports the SM had disabled come back enabled. An SM
    /// attached to the node stays attached (its queue is kept) and re-registers: IsSM is set
    /// again on its port.
    ///
    /// [`SimConfig::link_retrain_time`]: super::SimConfig::link_retrain_time
    pub fn reboot(&mut self, node: NodeId) -> Result<(), SimError> {
        let n = self.check_node(node)?;
        self.process(Ev::Reboot { node: n });
        Ok(())
    }

    /// [`Fabric::reboot`] at time `at`.
    pub fn schedule_reboot(&mut self, at: Time, node: NodeId) -> Result<(), SimError> {
        let n = self.check_node(node)?;
        self.check_future(at)?;
        self.queue.push(at, Ev::Reboot { node: n });
        Ok(())
    }

    /// Mutes (or unmutes) the SMA of `node`; see the module documentation for what a muted
    /// node still does.
    pub fn set_mute(&mut self, node: NodeId, muted: bool) -> Result<(), SimError> {
        let n = self.check_node(node)?;
        self.muted[n as usize] = muted;
        Ok(())
    }

    /// True if `node`'s SMA is muted.
    #[must_use]
    pub fn is_muted(&self, node: NodeId) -> bool {
        self.muted.get(node.index()).copied().unwrap_or(false)
    }

    /// Replaces the fabric-wide fault rates from now on (the random stream continues).
    pub fn set_faults(&mut self, faults: FaultConfig) {
        self.cfg.faults = faults;
        self.faults.set_config(faults);
        self.refresh_faulty();
    }

    /// Recomputes [`Fabric::faulty`](super::Fabric) after a fault rate changed.
    pub(super) fn refresh_faulty(&mut self) {
        self.faulty = !self.faults.config().is_none() || !self.link_faults.is_empty();
    }

    /// Gives the cable at `node`/`port` its own fault rates (both directions), replacing the
    /// fabric-wide ones on that cable; `None` returns it to the fabric-wide rates. Each such
    /// cable draws from its own ChaCha8 stream, seeded from [`SimConfig::seed`] and the cable,
    /// so a flaky cable does not perturb the randomness of the rest of the fabric.
    ///
    /// [`SimConfig::seed`]: super::SimConfig::seed
    pub fn set_link_faults(
        &mut self,
        node: NodeId,
        port: PortNum,
        faults: Option<FaultConfig>,
    ) -> Result<(), SimError> {
        let g = self.cabled_gport(node, port)?;
        let key = self.peer_gport(g).map_or(g, |pg| g.min(pg));
        match faults {
            Some(cfg) => {
                let seed = self.cfg.seed ^ u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let inj = FaultInjector::new(cfg, ChaCha8Rng::seed_from_u64(seed));
                self.link_faults.insert(key, inj);
            }
            None => {
                self.link_faults.remove(&key);
            }
        }
        self.refresh_faulty();
        Ok(())
    }
}

//! PortInfo (0x0015, IBA vol1 §14.2.5.6): Get and Set.
//!
//! AttributeModifier = port number (0..=NumPorts on a switch; on a CA 0 means the receiving
//! port) in bits 7..0, and bit 31 SMSupportsExtendedSpeeds: a Set without it leaves
//! LinkSpeedExtEnabled as it is (the SM does not know the extended speeds). On a switch, LID, LMC, MasterSMLID/SL, SubnetTimeOut and the M_Key fields live in
//! port 0's PortInfo; in an external port's Set they are ignored and read back as 0.

use ibmad::attr::PortInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{PhysState, PortState};

use super::Req;
use crate::agent::Agent;
use crate::error::SmaError;
use crate::event::Event;
use crate::hw::{Hardware, LinkRequest};
use crate::rules::{self, PhysChange, StateChange};

/// PortInfo AttributeModifier bit 31, SMSupportsExtendedSpeeds.
const SM_SUPPORTS_EXT_SPEEDS: u32 = 1 << 31;

impl<H: Hardware> Agent<H> {
    pub(crate) fn get_port_info(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let port = self.modifier_port(req, req.attr_mod & !SM_SUPPORTS_EXT_SPEEDS)?;
        let mut pi = self.ports[usize::from(port.0)].pi;
        pi.local_port_num = req.in_port.0;
        if req.masked {
            // M_KeyProtectBits = 1 and a wrong key: the M_Key reads as 0 (IBA vol1 §14.2.4.1).
            pi.m_key.set(0);
        }
        data.copy_from_slice(pi.as_bytes());
        Ok(())
    }

    pub(crate) fn set_port_info(&mut self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let port = self.modifier_port(req, req.attr_mod & !SM_SUPPORTS_EXT_SPEEDS)?;
        let ext_speeds = req.attr_mod & SM_SUPPORTS_EXT_SPEEDS != 0;
        let i = usize::from(port.0);
        let rq = PortInfo::read_from_bytes(&data[..]).map_err(|_| req.bad_field("*", "short"))?;
        let cur = self.ports[i].pi;
        let cfg = self.ports[i].cfg;
        let is_sp0 = self.is_switch && port.0 == 0;
        let end_port = !self.is_switch || is_sp0;

        // ---- validate everything first: an invalid Set changes nothing ----
        let state = rules::port_state_set(cur.port_state(), rq.port_state())
            .map_err(|w| req.bad_field("PortState", w))?;
        let phys = rules::phys_state_set(rq.phys_state(), !is_sp0)
            .map_err(|w| req.bad_field("PortPhysicalState", w))?;
        let lwe = rules::resolve_enabled(
            rq.link_width_enabled,
            cur.link_width_enabled,
            cfg.width_supported,
            0xFF,
            None,
        )
        .map_err(|w| req.bad_field("LinkWidthEnabled", w))?;
        let lse = rules::resolve_enabled(
            rq.link_speed_enabled(),
            cur.link_speed_enabled(),
            cfg.speed_supported,
            0x0F,
            None,
        )
        .map_err(|w| req.bad_field("LinkSpeedEnabled", w))?;
        let lsee = rules::resolve_enabled(
            if ext_speeds {
                rq.link_speed_ext_enabled()
            } else {
                0 // keep
            },
            cur.link_speed_ext_enabled(),
            cfg.speed_ext_supported,
            0x1F,
            Some(0x1E),
        )
        .map_err(|w| req.bad_field("LinkSpeedExtEnabled", w))?;
        let mtu = rq.neighbor_mtu();
        if mtu == 0 || mtu > cfg.mtu_cap {
            return Err(req.bad_field("NeighborMTU", "must be 1..=MTUCap"));
        }
        let op_vls = rq.operational_vls();
        if op_vls > cfg.vl_cap {
            return Err(req.bad_field("OperationalVLs", "above VLCap"));
        }
        let ldd = rq.link_down_default_state();
        if ldd > PhysState::POLLING.0 {
            return Err(req.bad_field(
                "LinkDownDefaultState",
                "only NoStateChange, Sleep and Polling",
            ));
        }
        if end_port {
            let lid = rq.lid();
            if lid != cur.lid() && !lid.is_unicast() {
                return Err(req.bad_field("LID", "outside the unicast range 0x0001..=0xBFFF"));
            }
            let sm = rq.master_sm_lid();
            if sm != cur.master_sm_lid() && sm.0 != 0 && !sm.is_unicast() {
                return Err(req.bad_field("MasterSMLID", "not a unicast LID"));
            }
        }

        // ---- apply ----
        let mut new = cur;
        new.gid_prefix = rq.gid_prefix;
        if end_port {
            new.lid = rq.lid;
            new.master_sm_lid = rq.master_sm_lid;
            new.m_key = rq.m_key;
            new.m_key_lease_period = rq.m_key_lease_period;
            new.set_m_key_protect_bits(rq.m_key_protect_bits());
            let lmc = if is_sp0 && !self.enhanced_port0 {
                0 // base switch port 0 has a single LID
            } else {
                rq.lmc()
            };
            new.set_lmc(lmc);
            new.set_master_sm_sl(rq.master_sm_sl());
            new.set_subnet_timeout(rq.subnet_timeout());
        }
        new.link_width_enabled = lwe;
        new.set_link_speed_enabled(lse);
        new.set_link_speed_ext_enabled(lsee);
        if ldd != 0 {
            new.set_link_down_default_state(ldd);
        }
        new.set_neighbor_mtu(mtu);
        if op_vls != 0 {
            new.set_operational_vls(op_vls);
        }
        new.vl_high_limit = rq.vl_high_limit;
        new.set_init_type(rq.init_type());
        new.set_hoq_life(rq.hoq_life());
        new.set_vl_stall_count(rq.vl_stall_count());
        new.b43 = (new.b43 & 0xF0) | (rq.b43 & 0x0F);
        new.m_key_violations = rq.m_key_violations;
        new.p_key_violations = rq.p_key_violations;
        new.q_key_violations = rq.q_key_violations;
        new.set_local_phy_errors(rq.local_phy_errors());
        new.set_overrun_errors(rq.overrun_errors());
        new.set_mcast_pkey_trap_suppression(rq.mcast_pkey_trap_suppression());
        new.set_client_reregister(0);

        let mut link_req = None;
        match phys {
            PhysChange::Disable => {
                new.set_phys_state(PhysState::DISABLED);
                new.set_port_state(PortState::DOWN);
                link_req = Some(LinkRequest::Disable);
            }
            PhysChange::Poll => {
                new.set_phys_state(PhysState::POLLING);
                new.set_port_state(PortState::DOWN);
                link_req = Some(LinkRequest::Poll);
            }
            PhysChange::None => match state {
                StateChange::None => {}
                // Port 0 has no link to retrain: Down takes it straight back to Init.
                StateChange::Down if is_sp0 => new.set_port_state(PortState::INIT),
                // Logical Down now; the physical state follows when the carrier reports the
                // link going down (LinkEvent::Down), so the GetResp can still leave this port.
                StateChange::Down => {
                    new.set_port_state(PortState::DOWN);
                    link_req = Some(LinkRequest::Down);
                }
                StateChange::Arm => new.set_port_state(PortState::ARMED),
                StateChange::Activate => new.set_port_state(PortState::ACTIVE),
            },
        }
        self.ports[i].pi = new;
        if new.m_key_lease_period.get() == 0 && self.ports[i].lease_deadline.take().is_some() {
            self.rearm_lease_timer();
        }

        // ---- side effects ----
        if let Some(r) = link_req {
            self.link_request(port, r);
        }
        self.hw.port_info_written(port, &new);
        if end_port && (new.lid != cur.lid || new.lmc() != cur.lmc()) {
            self.push_event(Event::LidChanged {
                port,
                lid: new.lid(),
                lmc: new.lmc(),
            });
        }
        if !self.is_switch && rq.client_reregister() == 1 {
            self.push_event(Event::ClientReregister { port });
        }
        if new.port_state() != cur.port_state() || new.phys_state() != cur.phys_state() {
            let toggled =
                (new.port_state() == PortState::DOWN) != (cur.port_state() == PortState::DOWN);
            self.state_changed(req.now, port, toggled);
        }

        let mut out = new;
        out.local_port_num = req.in_port.0;
        data.copy_from_slice(out.as_bytes());
        Ok(())
    }
}

//! Traps (IBA vol1 §13.4.8, §14.2.5.1 Notice): 128 (switch port state change), 144 (local
//! changes: CapabilityMask, NodeDescription), 256 (bad M_Key).
//!
//! A trap is sent LID-routed (class 0x01, Method Trap, attribute Notice) from the issuing end
//! port (CA port or switch port 0) to its MasterSMLID, on MasterSMSL, and repeated with
//! doubling back-off (first interval = SubnetTimeOut, at least 1 ms, capped at 32×) until a
//! TrapRepress with the same TID arrives. A trap is only queued while the issuing port has a
//! LID and a valid MasterSMLID (there is nobody to tell otherwise); one trap per (number, port)
//! is outstanding at a time — a newer event of the same kind updates the pending Notice.

use core::time::Duration;

use ibmad::attr::notice::{notice_type, producer};
use ibmad::attr::Notice;
use ibmad::zerocopy::{FromZeros, IntoBytes};
use ibmad::{MadMeta, Method, NodeType, PortNum, Smp, SmpAttrId, Time, TrapNum};

use crate::agent::{Agent, Served};
use crate::event::{Discard, Event};
use crate::hw::Hardware;
use crate::rules;
use crate::timer::Timer;

/// At most this many traps are outstanding; a new one evicts the oldest.
pub const MAX_PENDING_TRAPS: usize = 16;

/// Trap 144 change flags (DataDetails ChangeFlags, as OpenSM's `TRAP_144_MASK_*`).
pub mod change_flags {
    /// NodeDescription changed.
    pub const NODE_DESCRIPTION: u16 = 0x0001;
    /// LinkWidthEnabled changed.
    pub const LINK_WIDTH_ENABLED: u16 = 0x0002;
    /// LinkSpeedEnabled changed.
    pub const LINK_SPEED_ENABLED: u16 = 0x0004;
    /// SM priority changed.
    pub const SM_PRIORITY: u16 = 0x0008;
}

pub(crate) struct PendingTrap {
    pub(crate) tid: u64,
    pub(crate) trap: TrapNum,
    pub(crate) port: PortNum,
    pub(crate) notice: Notice,
    pub(crate) next: Time,
    pub(crate) interval: Duration,
    pub(crate) base: Duration,
}

impl<H: Hardware> Agent<H> {
    /// Changes the CapabilityMask of an end port (a CA port, or port 0 of a switch) — e.g. a
    /// co-located SM sets or clears IsSM (0x2). With IsSM set, SMInfo requests to this port are
    /// handed to the SM ([`Event::ForSm`]); without, they are answered "method/attribute not
    /// supported". A change queues trap 144 with the new mask. Returns false (and does nothing)
    /// for a port that is not an end port.
    pub fn set_capability_mask(&mut self, now: Time, port: PortNum, mask: u32) -> bool {
        if !self.port_exists(port) || (self.is_switch && port.0 != 0) {
            return false;
        }
        let pi = &mut self.ports[usize::from(port.0)].pi;
        if pi.capability_mask.get() == mask {
            return true;
        }
        pi.capability_mask.set(mask);
        self.queue_trap_144(now, port, 0);
        true
    }

    /// Changes the NodeDescription and queues trap 144 (NodeDescription changed) from every
    /// end port.
    pub fn set_node_description(&mut self, now: Time, desc: &str) {
        let d = ibmad::attr::NodeDesc::from_str_lossy(desc);
        if d == self.desc {
            return;
        }
        self.desc = d;
        if self.is_switch {
            self.queue_trap_144(now, PortNum::MGMT, change_flags::NODE_DESCRIPTION);
        } else {
            for p in 1..=self.num_ports {
                self.queue_trap_144(now, PortNum(p), change_flags::NODE_DESCRIPTION);
            }
        }
    }

    /// Number of traps waiting for a TrapRepress.
    #[must_use]
    pub fn pending_traps(&self) -> usize {
        self.traps.len()
    }

    fn producer_type(&self) -> u32 {
        match self.node_type {
            NodeType::SWITCH => producer::SWITCH,
            NodeType::ROUTER => producer::ROUTER,
            _ => producer::CA,
        }
    }

    fn notice(&self, trap: TrapNum, ty: u8, port: PortNum) -> Notice {
        let mut n = Notice::new_zeroed();
        n.set_is_generic(1);
        n.set_notice_type(ty);
        n.set_producer_type(self.producer_type());
        n.trap_num.set(trap.0);
        n.issuer_lid
            .set(self.ports[usize::from(port.0)].pi.lid.get());
        n
    }

    /// Trap 128: link state of a switch port changed (DataDetails: LIDADDR of the switch).
    pub(crate) fn queue_trap_128(&mut self, now: Time) {
        let mut n = self.notice(
            TrapNum::LINK_STATE_CHANGE,
            notice_type::URGENT,
            PortNum::MGMT,
        );
        let lid = n.issuer_lid.get();
        n.data_details[0..2].copy_from_slice(&lid.to_be_bytes());
        self.queue_trap(now, PortNum::MGMT, n);
    }

    /// Trap 144: local changes (DataDetails: LIDADDR, OtherLocalChanges, CapabilityMask,
    /// ChangeFlags, CapabilityMask2).
    pub(crate) fn queue_trap_144(&mut self, now: Time, port: PortNum, flags: u16) {
        let mut n = self.notice(TrapNum::LOCAL_CHANGES, notice_type::INFO, port);
        let pi = self.ports[usize::from(port.0)].pi;
        let d = &mut n.data_details;
        d[2..4].copy_from_slice(&pi.lid.get().to_be_bytes());
        d[5] = 0;
        d[6..10].copy_from_slice(&pi.capability_mask.get().to_be_bytes());
        d[10..12].copy_from_slice(&flags.to_be_bytes());
        d[12..14].copy_from_slice(&pi.capability_mask2.get().to_be_bytes());
        self.queue_trap(now, port, n);
    }

    /// Trap 256: bad M_Key (DataDetails: LIDADDR, DRSLID, Method, AttributeID,
    /// AttributeModifier, M_Key, DR notice flags/hop count, DR return path up to 30 hops).
    pub(crate) fn queue_trap_256(&mut self, now: Time, port: PortNum, meta: &MadMeta, smp: &Smp) {
        let mut n = self.notice(TrapNum::BAD_M_KEY, notice_type::SECURITY, port);
        let lid = n.issuer_lid.get();
        let d = &mut n.data_details;
        d[2..4].copy_from_slice(&lid.to_be_bytes());
        let slid = if smp.is_dr() {
            smp.dr_slid.get()
        } else {
            meta.slid.0
        };
        d[4..6].copy_from_slice(&slid.to_be_bytes());
        d[6] = smp.method;
        d[8..10].copy_from_slice(&smp.attr_id.get().to_be_bytes());
        d[10..14].copy_from_slice(&smp.attr_mod.get().to_be_bytes());
        d[14..22].copy_from_slice(&smp.m_key.get().to_be_bytes());
        if smp.is_dr() {
            let hops = usize::from(smp.hop_cnt.min(63));
            let kept = hops.min(30);
            let truncated = if hops > 30 { 0x40 } else { 0 };
            d[23] = 0x80 | truncated | (smp.hop_cnt & 0x3F);
            d[24..24 + kept].copy_from_slice(&smp.return_path[1..=kept]);
        }
        self.queue_trap(now, port, n);
    }

    fn trap_target_valid(&self, port: PortNum) -> bool {
        let pi = &self.ports[usize::from(port.0)].pi;
        pi.lid().is_unicast() && pi.master_sm_lid().is_unicast()
    }

    fn queue_trap(&mut self, now: Time, port: PortNum, notice: Notice) {
        if !self.trap_target_valid(port) {
            return;
        }
        let trap = notice.trap_num();
        if let Some(t) = self
            .traps
            .iter_mut()
            .find(|t| t.trap == trap && t.port == port)
        {
            t.notice = notice;
            return;
        }
        if self.traps.len() >= MAX_PENDING_TRAPS {
            self.traps.remove(0);
        }
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        let base = rules::trap_interval(self.ports[usize::from(port.0)].pi.subnet_timeout());
        self.traps.push(PendingTrap {
            tid,
            trap,
            port,
            notice,
            next: now + base,
            interval: base,
            base,
        });
        self.push_event(Event::TrapQueued { trap, tid });
        self.send_trap(self.traps.len() - 1);
        self.rearm_trap_timer();
    }

    fn send_trap(&mut self, idx: usize) {
        let Some(t) = self.traps.get(idx) else {
            return;
        };
        let port = t.port;
        if !self.trap_target_valid(port) {
            return;
        }
        let mut smp = Smp::lid_request(Method::TRAP, SmpAttrId::NOTICE, 0, t.tid);
        smp.data.copy_from_slice(t.notice.as_bytes());
        let pi = self.ports[usize::from(port.0)].pi;
        self.stats.traps_sent += 1;
        // A trap is built here, not in a lent input buffer: always queued.
        let _ = self.push_lid_routed(
            port,
            pi.lid(),
            pi.master_sm_lid(),
            pi.master_sm_sl(),
            &smp,
            false,
        );
    }

    pub(crate) fn resend_traps(&mut self, now: Time) {
        for i in 0..self.traps.len() {
            if self.traps[i].next <= now {
                self.send_trap(i);
                let t = &mut self.traps[i];
                let cap = t.base * rules::TRAP_BACKOFF_MAX_FACTOR;
                t.interval = (t.interval * 2).min(cap);
                t.next = now + t.interval;
            }
        }
        self.rearm_trap_timer();
    }

    fn rearm_trap_timer(&mut self) {
        let next = self.traps.iter().map(|t| t.next).min();
        self.timers.set_opt(Timer::TrapResend, next);
    }

    /// A TrapRepress arrived: retire the trap with that TID.
    pub(crate) fn trap_repress(&mut self, tid: u64) -> Served {
        let Some(i) = self.traps.iter().position(|t| t.tid == tid) else {
            return Served::Drop(Discard::Unexpected(Method::TRAP_REPRESS));
        };
        let t = self.traps.remove(i);
        self.push_event(Event::TrapRepressed { trap: t.trap, tid });
        self.rearm_trap_timer();
        Served::Silent
    }
}

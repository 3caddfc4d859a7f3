//! [`Agent`]: the SMA state machine — receive path, directed-route forwarding, replies, link
//! events, timers. Attribute handlers live in [`crate::attrs`], traps in [`crate::trap`].

use std::collections::VecDeque;

use ibmad::attr::port_info::cap;
use ibmad::attr::{GuidInfo, NodeDesc, PKeyTable, PortInfo, SlToVl, SwitchInfo, VlArbTable};
use ibmad::smi::{self, Forward, SmiAction};
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
use ibmad::{
    Guid, Lid, MadMeta, Method, MgmtClass, NodeType, PhysState, PortNum, PortState, Smp, SmpAttrId,
    Status, Time, SMP_LEN,
};

use crate::config::{ConfigError, NodeConfig, PortConfig};
use crate::error::SmaError;
use crate::event::{Discard, Event};
use crate::hw::{Hardware, LinkRequest, NoHardware};
use crate::rules::{self, MKeyCheck};
use crate::timer::{Timer, TimerTable};
use crate::trap::PendingTrap;

/// Transmit queue bound: beyond it new transmits are dropped (counted, [`Discard::TxQueueFull`]).
pub const MAX_TX_QUEUE: usize = 4096;
/// Event queue bound: beyond it the oldest event is dropped (counted in [`Stats`]).
pub const MAX_EVENTS: usize = 4096;
/// Entries per P_Key block, and the PartitionCap this SMA reports (one block).
pub const PARTITION_CAP: u16 = 32;
/// GUIDCap: one GUIDInfo block of 8.
pub const GUID_CAP: u8 = 8;
/// VLArbitrationHighCap / LowCap reported.
pub const VL_ARB_CAP: u8 = 8;
/// The default LifeTimeValue of SwitchInfo (as ibsim reports).
pub const DEFAULT_LIFE_TIME: u8 = 18;

/// A MAD for the caller to put on the wire: `meta.port` is the egress port; for LID-routed
/// sends `meta.slid`/`meta.dlid` are the LRH LIDs (permissive for directed-route hops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Egress port and LRH addressing.
    pub meta: MadMeta,
    /// Bytes written into the caller's buffer (always 256).
    pub len: usize,
}

/// A change of a port's physical link, reported by the carrier (simulator or driver).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// Training finished: PortPhysicalState LinkUp; PortState Down → Init.
    Up {
        /// LinkWidthActive (1 = 1x, 2 = 4x, …).
        width_active: u8,
        /// LinkSpeedActive (1 = SDR, 2 = DDR, 4 = QDR).
        speed_active: u8,
        /// LinkSpeedExtActive (0 = none).
        speed_ext_active: u8,
    },
    /// The link went down: PortState Down, PortPhysicalState per LinkDownDefaultState.
    Down,
}

/// Counters, for tests and the simulator's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// MADs given to `handle_mad`.
    pub received: u64,
    /// Dropped before SMP processing: wrong length, base version, or class.
    pub malformed: u64,
    /// Dropped by the directed-route rules or for lack of a route / link.
    pub discarded: u64,
    /// DR SMPs forwarded by this switch.
    pub forwarded: u64,
    /// Requests answered by this SMA.
    pub answered: u64,
    /// MADs handed to the co-located SM.
    pub to_sm: u64,
    /// M_Key check failures.
    pub mkey_violations: u64,
    /// Transmits dropped because the queue was full.
    pub tx_dropped: u64,
    /// Events dropped because nobody polled them.
    pub events_dropped: u64,
    /// Traps sent (including retransmissions).
    pub traps_sent: u64,
}

pub(crate) struct PortData {
    pub(crate) pi: PortInfo,
    pub(crate) guid: Guid,
    pub(crate) cfg: PortConfig,
    pub(crate) pkeys: PKeyTable,
    pub(crate) guids: GuidInfo,
    /// SLtoVL of a CA port (switches keep theirs per port pair in [`SwitchState`]).
    pub(crate) sl2vl: SlToVl,
    pub(crate) vl_arb: Option<Box<[VlArbTable; 4]>>,
    pub(crate) lease_deadline: Option<Time>,
}

pub(crate) struct SwitchState {
    pub(crate) info: SwitchInfo,
    /// LinearForwardingTable, grown lazily in 64-entry blocks; missing entries read 0xFF.
    pub(crate) lft: Vec<u8>,
    /// MFT port masks, index `entry * positions + position`, grown lazily.
    pub(crate) mft: Vec<u16>,
    pub(crate) mft_positions: usize,
    /// SLtoVL per (in, out) pair, index `in * (n+1) + out`; empty until the first Set.
    pub(crate) sl2vl: Vec<SlToVl>,
}

pub(crate) struct OutMad {
    pub(crate) meta: MadMeta,
    pub(crate) smp: Smp,
}

/// The subnet management agent of one node (a CA or a switch with management port 0).
///
/// Sans-IO (STYLE P5): it reads no clock and does no I/O. The caller:
/// 1. feeds received MADs to [`Agent::handle_mad`] and link changes to [`Agent::handle_link`];
/// 2. drains [`Agent::poll_transmit`] until `None` after every input and sends each MAD out of
///    `meta.port`;
/// 3. calls [`Agent::handle_timeout`] when [`Agent::poll_timeout`] is reached;
/// 4. drains [`Agent::poll_event`] (bounded queue: unpolled events are eventually dropped).
///
/// `now` must never decrease between calls.
pub struct Agent<H: Hardware = NoHardware> {
    pub(crate) node_type: NodeType,
    pub(crate) is_switch: bool,
    pub(crate) node_guid: Guid,
    pub(crate) sys_image_guid: Guid,
    pub(crate) desc: NodeDesc,
    pub(crate) num_ports: u8,
    pub(crate) vendor_id: u32,
    pub(crate) device_id: u16,
    pub(crate) revision: u32,
    pub(crate) lft_cap: u16,
    pub(crate) mft_cap: u16,
    pub(crate) enhanced_port0: bool,
    pub(crate) ports: Vec<PortData>,
    pub(crate) sw: Option<SwitchState>,
    pub(crate) tx: VecDeque<OutMad>,
    pub(crate) events: VecDeque<Event>,
    pub(crate) timers: TimerTable,
    pub(crate) traps: Vec<PendingTrap>,
    pub(crate) next_tid: u64,
    pub(crate) stats: Stats,
    pub(crate) hw: H,
    /// What [`Agent::hand_to_sm`] left in the lent buffer (its addressing).
    lent_sm: Option<MadMeta>,
}

/// What [`Agent::handle_mad_lent`] left in the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lent {
    /// A MAD to put on the wire with this addressing, as a [`Transmit`] would carry it.
    Transmit(MadMeta),
    /// A MAD for the co-located SM, as an [`Event::ForSm`] with this `meta` would carry it.
    ForSm(MadMeta),
}

/// What to do with a request after it was served.
pub(crate) enum Served {
    /// Send the response now in the SMP (status set).
    Reply,
    /// Hand the SMP unchanged to the co-located SM.
    ToSm,
    /// Drop it.
    Drop(Discard),
    /// Consumed without answer (TrapRepress).
    Silent,
}

fn initial_port_info(
    port: u8,
    cfg: &PortConfig,
    is_switch: bool,
    enhanced_port0: bool,
) -> PortInfo {
    let mut pi = PortInfo::new_zeroed();
    pi.gid_prefix.set(0xFE80_0000_0000_0000);
    let is_sp0 = is_switch && port == 0;
    let mut mask = cap::IS_TRAP_SUP | cap::IS_SL_MAP_SUP | cap::IS_SYS_IMAGE_GUID_SUP;
    if !is_switch || is_sp0 {
        mask |= cap::IS_NOTICE_SUP | cap::IS_CAP_MASK_NOTICE_SUP;
    }
    if cfg.speed_ext_supported != 0 {
        mask |= cap::IS_EXT_SPEEDS_SUP;
    }
    if !is_switch {
        mask |= cap::IS_CM_SUP | cap::IS_CLIENT_REREG_SUP;
    }
    pi.capability_mask.set(mask);
    pi.local_port_num = port;
    pi.link_width_enabled = cfg.width_supported;
    pi.link_width_supported = cfg.width_supported;
    pi.set_link_speed_supported(cfg.speed_supported);
    pi.set_link_speed_enabled(cfg.speed_supported);
    pi.set_link_speed_ext_supported(cfg.speed_ext_supported);
    pi.set_link_speed_ext_enabled(cfg.speed_ext_supported);
    pi.set_link_down_default_state(PhysState::POLLING.0);
    pi.set_mtu_cap(cfg.mtu_cap);
    pi.set_neighbor_mtu(cfg.mtu_cap);
    pi.set_vl_cap(cfg.vl_cap);
    // OperationalVLs starts at VLCap, as ibsim's ports do: OpenSM then finds nothing to change
    // on a freshly trained link and does not bounce it Down to apply a new value.
    pi.set_operational_vls(cfg.vl_cap);
    pi.vl_arb_high_cap = VL_ARB_CAP;
    pi.vl_arb_low_cap = VL_ARB_CAP;
    pi.set_vl_stall_count(7);
    pi.set_resp_time_value(8);
    if !is_switch || is_sp0 {
        pi.guid_cap = GUID_CAP;
    }
    if is_sp0 {
        // Port 0 has no physical link: it is always LinkUp. A base port 0 (no enhanced port 0)
        // reports Active from power-up, as ibsim's and real switches' do — OpenSM never drives
        // its state; an enhanced port 0 starts in Init and is armed/activated by the SM like an
        // end port.
        let top = highest_bit(cfg.width_supported);
        pi.link_width_active = top;
        pi.set_link_speed_active(highest_bit(cfg.speed_supported));
        pi.set_phys_state(PhysState::LINK_UP);
        pi.set_port_state(if enhanced_port0 {
            PortState::INIT
        } else {
            PortState::ACTIVE
        });
    } else {
        pi.set_phys_state(PhysState::POLLING);
        pi.set_port_state(PortState::DOWN);
    }
    pi
}

fn highest_bit(mask: u8) -> u8 {
    if mask == 0 {
        0
    } else {
        1 << (7 - mask.leading_zeros())
    }
}

fn default_pkeys() -> PKeyTable {
    let mut t = PKeyTable::new_zeroed();
    t.pkeys[0].set(0xFFFF);
    t
}

impl<H: Hardware> Agent<H> {
    /// An agent for the node `cfg` describes, with every SM-set field at its reset value:
    /// LIDs 0, LFT empty (all 0xFF), external ports Down/Polling, switch port 0 Init/LinkUp.
    pub fn new(cfg: NodeConfig, hw: H) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let is_switch = cfg.node_type == NodeType::SWITCH;
        let mut ports = Vec::with_capacity(cfg.ports.len());
        for (i, (pc, guid)) in cfg.ports.iter().zip(cfg.port_guids.iter()).enumerate() {
            let port = u8::try_from(i).unwrap_or(u8::MAX);
            let mut guids = GuidInfo::new_zeroed();
            guids.guids[0].set(guid.0);
            ports.push(PortData {
                pi: initial_port_info(port, pc, is_switch, cfg.enhanced_port0),
                guid: *guid,
                cfg: *pc,
                pkeys: default_pkeys(),
                guids,
                sl2vl: SlToVl::default(),
                vl_arb: None,
                lease_deadline: None,
            });
        }
        let sw = is_switch
            .then(|| SwitchState::new(cfg.num_ports, cfg.enhanced_port0, cfg.lft_cap, cfg.mft_cap));
        Ok(Agent {
            node_type: cfg.node_type,
            is_switch,
            node_guid: cfg.node_guid,
            sys_image_guid: cfg.sys_image_guid,
            desc: NodeDesc::from_str_lossy(&cfg.desc),
            num_ports: cfg.num_ports,
            vendor_id: cfg.vendor_id,
            device_id: cfg.device_id,
            revision: cfg.revision,
            lft_cap: cfg.lft_cap,
            mft_cap: cfg.mft_cap,
            enhanced_port0: cfg.enhanced_port0,
            ports,
            sw,
            // Room for one: the carrier drains the queue after every input, so it rarely holds
            // more, and a first push into an empty VecDeque would reserve four 280-byte
            // entries — 54 MB over the 47,824 agents of a fat-tree:3,56 simulation.
            tx: VecDeque::with_capacity(1),
            events: VecDeque::new(),
            timers: TimerTable::default(),
            traps: Vec::new(),
            next_tid: 1,
            stats: Stats::default(),
            hw,
            lent_sm: None,
        })
    }

    // ----- inputs -----------------------------------------------------------------------

    /// A MAD arrived on `meta.port` (for LID-routed SMPs `meta.slid` is the requester's LID).
    ///
    /// Non-SMP, wrong-length and BaseVersion≠1 MADs are dropped and counted. DR SMPs go through
    /// [`ibmad::smi::on_receive`] and [`ibmad::smi::advance`]: a switch forwards them, the end
    /// node answers them (or hands a returning one to its SM, [`Event::ForSm`]). LID-routed SMPs
    /// are answered: the carrier decided they are for this node.
    pub fn handle_mad(&mut self, now: Time, meta: &MadMeta, mad: &[u8]) {
        self.stats.received += 1;
        if !self.mad_acceptable(meta, mad.len(), mad.get(..2)) {
            return;
        }
        let Ok(mut smp) = Smp::read_from_bytes(mad) else {
            return self.malformed(meta.port, Discard::BadLength { len: mad.len() });
        };
        let _ = self.handle_smp(now, meta, &mut smp, false);
    }

    /// [`Agent::handle_mad`] for a carrier that lends the MAD's own buffer: the first MAD the
    /// agent sends in answer — a directed-route SMP passed on, or the response to the request
    /// — is left in `mad` ([`Lent::Transmit`]) instead of being copied into the transmit queue
    /// (when the queue is empty; otherwise it is queued behind what is there), and a MAD for
    /// the co-located SM is left there ([`Lent::ForSm`]) instead of a boxed copy in
    /// [`Event::ForSm`] (when no event is queued before it). The caller puts a
    /// [`Lent::Transmit`] on the wire as it would a [`Transmit`] or queues a [`Lent::ForSm`]
    /// for the SM first, then drains [`Agent::poll_transmit`] and [`Agent::poll_event`] as
    /// after any input: the MADs sent and handed to the SM, their order, the checks and the
    /// counters are the same as with `handle_mad`. On `None` nothing was left in `mad` (its
    /// content is then unspecified).
    pub fn handle_mad_lent(&mut self, now: Time, meta: &MadMeta, mad: &mut [u8]) -> Option<Lent> {
        self.stats.received += 1;
        if !self.mad_acceptable(meta, mad.len(), mad.get(..2)) {
            return None;
        }
        let Ok(smp) = Smp::mut_from_bytes(mad) else {
            self.malformed(meta.port, Discard::BadLength { len: mad.len() });
            return None;
        };
        let tx = self.handle_smp(now, meta, smp, true);
        match self.lent_sm.take() {
            Some(m) => Some(Lent::ForSm(m)),
            None => tx.map(Lent::Transmit),
        }
    }

    /// The checks of a received MAD before it is parsed: length, BaseVersion, class, ingress
    /// port (counted and reported when they fail). `head` is the MAD's first two bytes.
    fn mad_acceptable(&mut self, meta: &MadMeta, len: usize, head: Option<&[u8]>) -> bool {
        let Some(&[base_version, class]) = head.filter(|_| len == SMP_LEN) else {
            self.malformed(meta.port, Discard::BadLength { len });
            return false;
        };
        if base_version != 1 {
            self.malformed(meta.port, Discard::BadBaseVersion(base_version));
            return false;
        }
        if !MgmtClass(class).is_smp() {
            self.malformed(meta.port, Discard::NotSmp(MgmtClass(class)));
            return false;
        }
        if !self.port_exists(meta.port) {
            self.discard(meta.port, Discard::BadIngressPort(meta.port));
            return false;
        }
        true
    }

    /// A parsed SMP that passed [`Agent::mad_acceptable`]; `lend`: see [`Agent::push_tx`].
    fn handle_smp(
        &mut self,
        now: Time,
        meta: &MadMeta,
        smp: &mut Smp,
        lend: bool,
    ) -> Option<MadMeta> {
        if smp.is_dr() {
            self.handle_dr(now, meta, smp, lend)
        } else {
            self.handle_lid_routed(now, meta, smp, lend)
        }
    }

    fn handle_dr(
        &mut self,
        now: Time,
        meta: &MadMeta,
        smp: &mut Smp,
        lend: bool,
    ) -> Option<MadMeta> {
        if let SmiAction::Discard(r) =
            smi::on_receive(smp, self.is_switch, self.num_ports, meta.port)
        {
            self.discard(meta.port, Discard::Smi(r));
            return None;
        }
        match smi::advance(smp, self.is_switch) {
            Forward::Out(p) => {
                self.stats.forwarded += 1;
                self.push_dr(p, smp, lend)
            }
            Forward::LidRouted(lid) => {
                self.stats.forwarded += 1;
                let slid = self.mgmt_lid(meta.port);
                self.push_lid_routed(meta.port, slid, lid, 0, smp, lend)
            }
            Forward::Discard(r) => {
                self.discard(meta.port, Discard::Smi(r));
                None
            }
            Forward::Local if smp.direction() => {
                self.hand_to_sm(*meta, smp, lend);
                None
            }
            Forward::Local => match self.serve(now, meta, smp) {
                Served::Reply => {
                    self.stats.answered += 1;
                    self.reply_dr(meta, smp, lend)
                }
                other => self.settle_unanswered(meta, smp, other, lend),
            },
        }
    }

    fn handle_lid_routed(
        &mut self,
        now: Time,
        meta: &MadMeta,
        smp: &mut Smp,
        lend: bool,
    ) -> Option<MadMeta> {
        match self.serve(now, meta, smp) {
            Served::Reply => {
                self.stats.answered += 1;
                smp.method = Method::GET_RESP.0;
                let mgmt = self.mgmt_port(meta.port);
                let slid = if self.lid_matches(mgmt, meta.dlid) {
                    meta.dlid
                } else {
                    self.ports[usize::from(mgmt.0)].pi.lid()
                };
                self.push_lid_routed(meta.port, slid, meta.slid, meta.sl, smp, lend)
            }
            other => self.settle_unanswered(meta, smp, other, lend),
        }
    }

    /// What [`Agent::serve`] decided other than a reply: hand the SMP to the co-located SM,
    /// count the discard, or nothing. Sends nothing on the wire.
    fn settle_unanswered(
        &mut self,
        meta: &MadMeta,
        smp: &mut Smp,
        served: Served,
        lend: bool,
    ) -> Option<MadMeta> {
        match served {
            Served::ToSm => self.hand_to_sm(*meta, smp, lend),
            Served::Drop(r) => self.discard(meta.port, r),
            Served::Reply | Served::Silent => {}
        }
        None
    }

    /// Serves a request addressed to this SMA: method and version checks, M_Key check,
    /// attribute dispatch. On `Reply` the SMP holds the response data and status (the caller
    /// turns it around).
    fn serve(&mut self, now: Time, meta: &MadMeta, smp: &mut Smp) -> Served {
        let method = smp.method();
        if method.is_response() || method == Method::TRAP {
            return Served::ToSm;
        }
        let mgmt = self.mgmt_port(meta.port);
        if method == Method::TRAP_REPRESS {
            return match self.mkey_check(now, mgmt, meta, smp) {
                MKeyCheck::Fail => Served::Drop(Discard::MKey),
                _ => self.trap_repress(smp.tid.get()),
            };
        }
        if smp.class_version != 1 {
            return self.error_reply(
                smp,
                SmaError::BadVersion {
                    base: smp.base_version,
                    class: smp.class_version,
                },
            );
        }
        if method != Method::GET && method != Method::SET {
            return self.error_reply(smp, SmaError::MethodNotSupported(method));
        }
        let check = self.mkey_check(now, mgmt, meta, smp);
        if check == MKeyCheck::Fail {
            return Served::Drop(Discard::MKey);
        }
        let attr = smp.attr();
        if attr == SmpAttrId::SM_INFO {
            if self.ports[usize::from(mgmt.0)].pi.capability_mask.get() & cap::IS_SM != 0 {
                return Served::ToSm;
            }
            return self.error_reply(smp, SmaError::MethodAttrNotSupported { method, attr });
        }
        let req = crate::attrs::Req {
            now,
            in_port: meta.port,
            attr,
            attr_mod: smp.attr_mod.get(),
            masked: check == MKeyCheck::GetMasked,
        };
        let res = if method == Method::GET {
            self.get_attr(&req, &mut smp.data)
        } else {
            self.set_attr(&req, &mut smp.data)
        };
        match res {
            Ok(()) => smp.set_status(Status::OK),
            Err(e) => smp.set_status(Status::from(e)),
        }
        Served::Reply
    }

    fn error_reply(&mut self, smp: &mut Smp, e: SmaError) -> Served {
        smp.set_status(Status::from(e));
        Served::Reply
    }

    fn reply_dr(&mut self, meta: &MadMeta, smp: &mut Smp, lend: bool) -> Option<MadMeta> {
        let status = smp.status();
        smi::make_response(smp);
        smp.set_status(status);
        match smi::advance(smp, self.is_switch) {
            Forward::Out(p) => self.push_dr(p, smp, lend),
            Forward::Local => {
                self.hand_to_sm(*meta, smp, lend);
                None
            }
            Forward::LidRouted(lid) => {
                let slid = self.mgmt_lid(meta.port);
                self.push_lid_routed(meta.port, slid, lid, 0, smp, lend)
            }
            Forward::Discard(r) => {
                self.discard(meta.port, Discard::Smi(r));
                None
            }
        }
    }

    /// The link of `port` changed. Up: LinkUp and Down → Init; Down: PortState Down and
    /// PortPhysicalState = LinkDownDefaultState (Polling). Ignored for switch port 0, for ports
    /// that do not exist, and for Up while the port is Disabled. On a switch a Down ↔ non-Down
    /// change sets SwitchInfo.PortStateChange and queues trap 128.
    pub fn handle_link(&mut self, now: Time, port: PortNum, ev: LinkEvent) {
        if !self.port_exists(port) || (self.is_switch && port.0 == 0) {
            return;
        }
        let i = usize::from(port.0);
        let before = self.ports[i].pi;
        let pi = &mut self.ports[i].pi;
        let was_down = pi.port_state() == PortState::DOWN;
        match ev {
            LinkEvent::Up {
                width_active,
                speed_active,
                speed_ext_active,
            } => {
                if pi.phys_state() == PhysState::DISABLED {
                    return;
                }
                pi.link_width_active = width_active;
                pi.set_link_speed_active(speed_active);
                pi.set_link_speed_ext_active(speed_ext_active);
                pi.set_phys_state(PhysState::LINK_UP);
                if was_down {
                    pi.set_port_state(PortState::INIT);
                }
            }
            LinkEvent::Down => {
                if pi.phys_state() != PhysState::DISABLED {
                    let dflt = pi.link_down_default_state();
                    let phys = if dflt == PhysState::SLEEP.0 {
                        PhysState::SLEEP
                    } else {
                        PhysState::POLLING
                    };
                    pi.set_phys_state(phys);
                }
                pi.set_port_state(PortState::DOWN);
            }
        }
        let after = self.ports[i].pi;
        if after.port_state() != before.port_state() || after.phys_state() != before.phys_state() {
            let now_down = after.port_state() == PortState::DOWN;
            self.state_changed(now, port, was_down != now_down);
        }
    }

    /// Call when [`Agent::poll_timeout`] is reached: retransmits due traps and expires M_Key
    /// leases.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.timers.is_expired(Timer::MKeyLease, now) {
            for i in 0..self.ports.len() {
                if self.ports[i].lease_deadline.is_some_and(|d| d <= now) {
                    self.ports[i].lease_deadline = None;
                    self.ports[i].pi.set_m_key_protect_bits(0);
                    let port = PortNum(u8::try_from(i).unwrap_or(u8::MAX));
                    self.push_event(Event::MKeyLeaseExpired { port });
                }
            }
            self.rearm_lease_timer();
        }
        if self.timers.is_expired(Timer::TrapResend, now) {
            self.resend_traps(now);
        }
    }

    /// Node reboot: every SM-set value is lost — LIDs, LMC, SM LID, M_Keys, LFT (all 0xFF),
    /// LinearFDBTop, MFT, QoS and P_Key tables, pending traps and queued transmits. Links keep
    /// their physical state: a port whose link is up comes back in Init, others Down; switch
    /// port 0 in Init.
    pub fn reset(&mut self, now: Time) {
        let _ = now;
        let is_switch = self.is_switch;
        let ep0 = self.enhanced_port0;
        for (i, p) in self.ports.iter_mut().enumerate() {
            let port = u8::try_from(i).unwrap_or(u8::MAX);
            let old = p.pi;
            let mut pi = initial_port_info(port, &p.cfg, is_switch, ep0);
            if !(is_switch && port == 0) {
                pi.set_phys_state(old.phys_state());
                pi.link_width_active = old.link_width_active;
                pi.set_link_speed_active(old.link_speed_active());
                pi.set_link_speed_ext_active(old.link_speed_ext_active());
                if old.phys_state() == PhysState::LINK_UP {
                    pi.set_port_state(PortState::INIT);
                }
            }
            p.pi = pi;
            p.pkeys = default_pkeys();
            let mut guids = GuidInfo::new_zeroed();
            guids.guids[0].set(p.guid.0);
            p.guids = guids;
            p.sl2vl = SlToVl::default();
            p.vl_arb = None;
            p.lease_deadline = None;
        }
        if self.sw.is_some() {
            self.sw = Some(SwitchState::new(
                self.num_ports,
                ep0,
                self.lft_cap,
                self.mft_cap,
            ));
        }
        self.tx.clear();
        self.traps.clear();
        self.timers = TimerTable::default();
    }

    // ----- outputs ----------------------------------------------------------------------

    /// The next MAD to send: written into `buf[..256]`. Returns `None` when nothing is queued,
    /// or when `buf` is shorter than 256 bytes (the MAD stays queued).
    #[must_use]
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        let _ = now;
        let out = buf.get_mut(..SMP_LEN)?;
        let m = self.tx.pop_front()?;
        out.copy_from_slice(m.smp.as_bytes());
        Some(Transmit {
            meta: m.meta,
            len: SMP_LEN,
        })
    }

    /// True if [`Agent::poll_transmit`] has a MAD to hand out (a carrier can skip lending
    /// it a buffer otherwise).
    #[must_use]
    pub fn has_transmit(&self) -> bool {
        !self.tx.is_empty()
    }

    /// The next time [`Agent::handle_timeout`] must be called, if any.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        self.timers.next_timeout()
    }

    /// The deadline of one timer (for tests and diagnostics).
    #[must_use]
    pub fn timer(&self, t: Timer) -> Option<Time> {
        self.timers.get(t)
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ----- queries ----------------------------------------------------------------------

    /// The stored PortInfo of `port` (LocalPortNum = `port`); `None` for a port that does not
    /// exist (including port 0 of a CA).
    #[must_use]
    pub fn port_info(&self, port: PortNum) -> Option<&PortInfo> {
        if !self.port_exists(port) {
            return None;
        }
        self.ports.get(usize::from(port.0)).map(|p| &p.pi)
    }

    /// The P_Key table (one block, [`PARTITION_CAP`] entries) of `port`: a CA port, or any
    /// port of a switch (0 = its management port); `None` for a port that does not exist.
    #[must_use]
    pub fn pkeys(&self, port: PortNum) -> Option<&PKeyTable> {
        if !self.port_exists(port) {
            return None;
        }
        self.ports.get(usize::from(port.0)).map(|p| &p.pkeys)
    }

    /// Data-plane LFT lookup: the egress port for `lid`, or `None` if the entry is 0xFF (or any
    /// port beyond NumPorts), `lid` is above LinearFDBTop, or this is not a switch.
    #[must_use]
    pub fn lft_port(&self, lid: Lid) -> Option<PortNum> {
        let sw = self.sw.as_ref()?;
        if lid.0 > sw.info.linear_fdb_top.get() {
            return None;
        }
        let p = *sw.lft.get(usize::from(lid.0))?;
        (p <= self.num_ports).then_some(PortNum(p))
    }

    /// True if the end port `port` (a CA port, or a switch's port 0) owns `lid`: its base LID
    /// is nonzero and `lid` is in `base ..= base + 2^LMC - 1`.
    #[must_use]
    pub fn lid_matches(&self, port: PortNum, lid: Lid) -> bool {
        if self.is_switch && port.0 != 0 {
            return false;
        }
        let Some(pi) = self.port_info(port) else {
            return false;
        };
        let base = u32::from(pi.lid.get());
        if base == 0 {
            return false;
        }
        let n = 1u32 << pi.lmc();
        let l = u32::from(lid.0);
        l >= base && l < base + n
    }

    /// True for a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.is_switch
    }
    /// NumPorts.
    #[must_use]
    pub fn num_ports(&self) -> u8 {
        self.num_ports
    }
    /// NodeGUID.
    #[must_use]
    pub fn node_guid(&self) -> Guid {
        self.node_guid
    }
    /// NodeType as configured.
    #[must_use]
    pub fn node_type(&self) -> NodeType {
        self.node_type
    }
    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
    /// SwitchInfo as a Get would return it (`None` on a CA).
    #[must_use]
    pub fn switch_info(&self) -> Option<SwitchInfo> {
        self.sw.as_ref().map(|s| s.info)
    }
    /// The hardware hook.
    pub fn hardware(&self) -> &H {
        &self.hw
    }
    /// The hardware hook, mutably.
    pub fn hardware_mut(&mut self) -> &mut H {
        &mut self.hw
    }

    // ----- plumbing ---------------------------------------------------------------------

    pub(crate) fn port_exists(&self, port: PortNum) -> bool {
        port.0 <= self.num_ports && (self.is_switch || port.0 != 0)
    }

    /// The port whose PortInfo holds LID / M_Key / SM fields for SMPs arriving on `in_port`:
    /// the port itself on a CA, port 0 on a switch.
    pub(crate) fn mgmt_port(&self, in_port: PortNum) -> PortNum {
        if self.is_switch {
            PortNum::MGMT
        } else {
            in_port
        }
    }

    pub(crate) fn mgmt_lid(&self, in_port: PortNum) -> Lid {
        let m = self.mgmt_port(in_port);
        self.ports
            .get(usize::from(m.0))
            .map_or(Lid(0), |p| p.pi.lid())
    }

    pub(crate) fn link_up(&self, port: PortNum) -> bool {
        self.ports
            .get(usize::from(port.0))
            .is_some_and(|p| p.pi.phys_state() == PhysState::LINK_UP)
    }

    fn malformed(&mut self, port: PortNum, reason: Discard) {
        self.stats.malformed += 1;
        self.push_event(Event::Discarded { port, reason });
    }

    pub(crate) fn discard(&mut self, port: PortNum, reason: Discard) {
        self.stats.discarded += 1;
        self.push_event(Event::Discarded { port, reason });
    }

    pub(crate) fn push_event(&mut self, e: Event) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
            self.stats.events_dropped += 1;
        }
        self.events.push_back(e);
    }

    /// Hands `smp` to the co-located SM: as [`Event::ForSm`], or with `lend` (`smp` is the
    /// buffer lent to [`Agent::handle_mad_lent`]) and no event queued, left where it is.
    pub(crate) fn hand_to_sm(&mut self, meta: MadMeta, smp: &Smp, lend: bool) {
        self.stats.to_sm += 1;
        if lend && self.lent_sm.is_none() && self.events.is_empty() {
            self.lent_sm = Some(meta);
            return;
        }
        let mut mad = Box::new([0u8; SMP_LEN]);
        mad.copy_from_slice(smp.as_bytes());
        self.push_event(Event::ForSm { meta, mad });
    }

    /// Queues `smp` for [`Agent::poll_transmit`] — or, with `lend` (`smp` is the input buffer
    /// of [`Agent::handle_mad_lent`]) and nothing queued before it, leaves it where it is
    /// and returns its addressing: the carrier sends it first, as it would have been.
    fn push_tx(&mut self, meta: MadMeta, smp: &Smp, lend: bool) -> Option<MadMeta> {
        if lend && self.tx.is_empty() {
            return Some(meta);
        }
        if self.tx.len() >= MAX_TX_QUEUE {
            self.stats.tx_dropped += 1;
            self.push_event(Event::Discarded {
                port: meta.port,
                reason: Discard::TxQueueFull,
            });
            return None;
        }
        self.tx.push_back(OutMad { meta, smp: *smp });
        None
    }

    /// Queues a directed-route hop out of `port` (an external port whose link is up); `lend`:
    /// see [`Agent::push_tx`].
    pub(crate) fn push_dr(&mut self, port: PortNum, smp: &Smp, lend: bool) -> Option<MadMeta> {
        if port.0 == 0 || port.0 > self.num_ports {
            self.discard(port, Discard::BadEgressPort(port));
            return None;
        }
        if !self.link_up(port) {
            self.discard(port, Discard::EgressDown(port));
            return None;
        }
        let meta = MadMeta {
            port,
            slid: Lid::PERMISSIVE,
            dlid: Lid::PERMISSIVE,
            qp: 0,
            sl: 0,
            ..Default::default()
        };
        self.push_tx(meta, smp, lend)
    }

    /// Queues a LID-routed send to `dlid`: a CA sends out of `ca_port`, a switch looks `dlid`
    /// up in its LFT (port 0 = this switch: handed to the local SM); `lend`: see
    /// [`Agent::push_tx`].
    pub(crate) fn push_lid_routed(
        &mut self,
        ca_port: PortNum,
        slid: Lid,
        dlid: Lid,
        sl: u8,
        smp: &Smp,
        lend: bool,
    ) -> Option<MadMeta> {
        if !dlid.is_unicast() {
            self.discard(ca_port, Discard::NoRoute(dlid));
            return None;
        }
        let port = if self.is_switch {
            match self.lft_port(dlid) {
                Some(p) => p,
                None => {
                    self.discard(ca_port, Discard::NoRoute(dlid));
                    return None;
                }
            }
        } else {
            ca_port
        };
        let meta = MadMeta {
            port,
            slid,
            dlid,
            qp: 0,
            sl,
            ..Default::default()
        };
        if self.is_switch && port.0 == 0 {
            self.hand_to_sm(meta, smp, lend);
            return None;
        }
        if !self.link_up(port) {
            self.discard(port, Discard::EgressDown(port));
            return None;
        }
        self.push_tx(meta, smp, lend)
    }

    /// The M_Key check of IBA vol1 §14.2.4 for an SMP to the SMA of `mgmt`, with its side
    /// effects: on a match the lease timer stops; on a failure M_KeyViolations counts up, the
    /// lease timer starts (if a lease period is set and it is not already running), an event
    /// is raised and trap 256 is queued.
    fn mkey_check(&mut self, now: Time, mgmt: PortNum, meta: &MadMeta, smp: &Smp) -> MKeyCheck {
        let i = usize::from(mgmt.0);
        let pi = self.ports[i].pi;
        let r = rules::check_mkey(
            pi.m_key(),
            pi.m_key_protect_bits(),
            smp.m_key(),
            smp.method(),
        );
        match r {
            MKeyCheck::Match => {
                if self.ports[i].lease_deadline.take().is_some() {
                    self.rearm_lease_timer();
                }
            }
            MKeyCheck::Fail => {
                self.stats.mkey_violations += 1;
                let p = &mut self.ports[i];
                let v = p.pi.m_key_violations.get().saturating_add(1);
                p.pi.m_key_violations.set(v);
                let lease = p.pi.m_key_lease_period.get();
                if lease != 0 && p.lease_deadline.is_none() {
                    p.lease_deadline =
                        Some(now + core::time::Duration::from_secs(u64::from(lease)));
                    self.rearm_lease_timer();
                }
                self.push_event(Event::MKeyViolation {
                    port: mgmt,
                    method: smp.method(),
                    attr: smp.attr(),
                });
                self.queue_trap_256(now, mgmt, meta, smp);
            }
            MKeyCheck::GetAllowed | MKeyCheck::GetMasked => {}
        }
        r
    }

    pub(crate) fn rearm_lease_timer(&mut self) {
        let next = self.ports.iter().filter_map(|p| p.lease_deadline).min();
        self.timers.set_opt(Timer::MKeyLease, next);
    }

    /// Bookkeeping after a port's state changed: event, and on a switch external port whose
    /// Down-ness changed, PortStateChange and trap 128.
    pub(crate) fn state_changed(&mut self, now: Time, port: PortNum, down_toggled: bool) {
        let pi = self.ports[usize::from(port.0)].pi;
        self.push_event(Event::PortStateChanged {
            port,
            state: pi.port_state(),
            phys: pi.phys_state(),
        });
        if down_toggled && self.is_switch && port.0 != 0 {
            if let Some(sw) = self.sw.as_mut() {
                sw.info.set_port_state_change(1);
            }
            self.queue_trap_128(now);
        }
    }

    pub(crate) fn link_request(&mut self, port: PortNum, req: LinkRequest) {
        self.hw.link_request(port, req);
    }
}

impl SwitchState {
    fn new(num_ports: u8, enhanced_port0: bool, lft_cap: u16, mft_cap: u16) -> SwitchState {
        let mut info = SwitchInfo::new_zeroed();
        info.linear_fdb_cap.set(lft_cap);
        info.multicast_fdb_cap.set(mft_cap);
        info.set_life_time_value(DEFAULT_LIFE_TIME);
        info.partition_enforcement_cap.set(PARTITION_CAP);
        info.set_inbound_enforcement_cap(1);
        info.set_outbound_enforcement_cap(1);
        info.set_filter_raw_inbound_cap(1);
        info.set_filter_raw_outbound_cap(1);
        info.set_enhanced_port0(u8::from(enhanced_port0));
        // The SLtoVL handler implements the all-inputs / all-outputs modifier bits.
        info.set_optimized_sl2vl(1);
        SwitchState {
            info,
            lft: Vec::new(),
            mft: Vec::new(),
            mft_positions: (usize::from(num_ports) + 1).div_ceil(16),
            sl2vl: Vec::new(),
        }
    }
}

//! [`Sm`]: the subnet manager as a sans-IO state machine (STYLE P5).
//!
//! # Call protocol
//!
//! The owner (the `ibsm` daemon, or a test driving the simulator) runs this loop:
//!
//! 1. feed every received MAD to [`Sm::handle_mad`];
//! 2. when the clock reaches [`Sm::poll_timeout`], call [`Sm::handle_timeout`];
//! 3. give operator input to [`Sm::handle_command`];
//! 4. after any of these, drain [`Sm::poll_transmit`] (until `None`, or until the transport
//!    reports back-pressure — an SMP handed out is considered sent) and [`Sm::poll_event`];
//! 5. sleep until the next MAD or `poll_timeout()`.
//!
//! `now` must never decrease between calls (any monotonic clock; the simulator's virtual
//! clock works). The SM reads no clock, opens no file and starts no thread. It starts its
//! first heavy sweep at the first `handle_timeout` (its sweep timer is armed at time zero), so
//! a [`Command::Guid2Lid`] given before that is used for the first LID assignment.
//!
//! # Inside
//!
//! `Sm` is the facade: it parses and checks MADs, matches responses to requests, answers
//! SMInfo Gets and traps, and hands everything else to its parts:
//! - the **role machine** ([`crate::role::SmRole`]): NOTACTIVE/DISCOVERING/STANDBY/MASTER,
//!   the election, standby polling, SMInfo Set (HANDOVER…) and trap 144; its polls and Sets
//!   use a transaction window of their own, so a dead master never holds up a sweep phase;
//! - the **sweep pipeline** ([`crate::sweep`]): heavy sweep (discovery ([`crate::discovery`])
//!   → election poll → LID assignment ([`crate::lid`]) → routing
//!   ([`crate::routing::route_chain`]) → programming ([`crate::program`]: only what differs
//!   from what the node holds) → once all of that is acknowledged, Init→Armed on every linked
//!   port → once all are Armed, Armed→Active → `SUBNET UP` when every linked port reported
//!   Active in its Set response) and light sweep (sweep timer or [`Command::Sweep`]:
//!   SwitchInfo of every switch; a set PortStateChange bit or a switch that stopped answering
//!   triggers a heavy sweep);
//! - the **transaction engine** (window, TIDs, retries) and the **timer table**.
//!
//! Every trap is answered with a TrapRepress carrying its TID; what it then triggers (heavy or
//! light sweep, NodeDescription refresh, nothing for a flood) is [`crate::trap`]'s decision.

use ibmad::attr::notice::{notice_type, producer};
use ibmad::attr::{NodeInfo, Notice, SmInfo};
use ibmad::{Lid, NodeType};
use ibmad::{MadMeta, Method, SmState, Smp, SmpAttrId, Status, Time, TrapNum, SMP_LEN};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::config::{ConfigError, SmConfig};
use crate::event::{Command, Event, Events, Level, Phase, PhaseStats};
use crate::lid::Guid2Lid;
use crate::role::{Role, RoleAction, SmAddr, SmRole};
use crate::routing::{Lfts, Routes};
use crate::subnet::Subnet;
use crate::sweep::{Ctx, Stage, Sweep};
use crate::timer::{Timer, TimerTable};
use crate::trap::{TrapAction, TrapTracker, FLOOD_THRESHOLD};
use crate::txn::{Engine, Purpose, Request};

/// The role machine's transactions use TIDs from here on, apart from the sweep pipeline's.
const ROLE_TID_BASE: u32 = 0x8000_0000;

/// One MAD written by [`Sm::poll_transmit`] into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Transmit {
    /// Where it goes (local port, LIDs; QP 0).
    pub meta: MadMeta,
    /// Bytes written at the front of the buffer (always 256).
    pub len: usize,
}

/// The pipeline's view of the SM's shared parts (disjoint borrows of `Sm`'s fields).
macro_rules! ctx {
    ($sm:ident) => {
        Ctx {
            cfg: &$sm.cfg,
            txn: &mut $sm.txn,
            timers: &mut $sm.timers,
            events: &mut $sm.events,
            role: &mut $sm.role,
        }
    };
}

/// The subnet manager. See the module documentation for the call protocol.
#[derive(Debug)]
pub struct Sm {
    cfg: SmConfig,
    txn: Engine,
    timers: TimerTable,
    events: Events,
    /// The role machine's polls and SMInfo Sets: a window of their own, so that a poll of a
    /// dead master never holds up a sweep phase.
    role_txn: Engine,
    /// Answers (SMInfo GetResp, TrapRepress) and traps waiting for `poll_transmit`.
    out_raw: std::collections::VecDeque<(MadMeta, [u8; SMP_LEN])>,
    role: SmRole,
    sweep: Sweep,
    traps: TrapTracker,
    /// MADs handed out by `poll_transmit` (SMInfo.ActCount, as OpenSM's `qp0_mads_sent`).
    mads_sent: u64,
    /// TIDs of the traps this SM sends (trap 144).
    next_trap_tid: u32,
}

impl Sm {
    /// A subnet manager with configuration `cfg` (validated).
    pub fn new(cfg: SmConfig) -> Result<Sm, ConfigError> {
        cfg.validate()?;
        let txn = Engine::new(
            cfg.max_wire_smps,
            cfg.max_smps_per_node,
            cfg.transaction_timeout,
            cfg.transaction_retries,
            cfg.retry_rounds,
        );
        let role_txn = Engine::with_first_tid(
            ROLE_TID_BASE,
            crate::wire_window::WireWindow::fixed(4),
            1,
            cfg.transaction_timeout,
            cfg.transaction_retries,
            1,
        );
        let mut timers = TimerTable::default();
        timers.set(Timer::Sweep, Time::ZERO);
        let mut events = Events::default();
        for w in cfg.warnings() {
            events.log(Level::Warn, w);
        }
        Ok(Sm {
            role: SmRole::new(cfg.role_config()),
            sweep: Sweep::new(&cfg),
            cfg,
            txn,
            role_txn,
            timers,
            events,
            out_raw: std::collections::VecDeque::new(),
            traps: TrapTracker::default(),
            mads_sent: 0,
            next_trap_tid: 1,
        })
    }

    // ----- accessors -------------------------------------------------------------------

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SmConfig {
        &self.cfg
    }
    /// The subnet as discovered by the current (or last) heavy sweep, with LIDs once assigned.
    #[must_use]
    pub fn subnet(&self) -> &Subnet {
        self.sweep.subnet()
    }
    /// The routes computed by the last routing run.
    #[must_use]
    pub fn routes(&self) -> Option<&Routes> {
        self.sweep.routes()
    }
    /// The SL-to-VL and VLArbitration tables node `id` of [`Sm::subnet`] is known to hold:
    /// those its Set responses acknowledged (QoS programming, [`crate::qos::program`]); `None`
    /// when the SM never programmed it.
    #[must_use]
    pub fn known_qos(&self, id: crate::subnet::NodeId) -> Option<&crate::qos::program::KnownQos> {
        self.sweep.known_qos(id)
    }

    /// The partitions resolved against the last heavy sweep's subnet and laid out as the SM
    /// programs them: each end port's P_Keys ([`crate::partition::PkeyPlan::port_pkeys`],
    /// what PathRecord's partition check uses), the tables of end ports and of the switch ports
    /// facing them, and the enforcement bits.
    #[must_use]
    pub fn pkey_plan(&self) -> &crate::partition::PkeyPlan {
        self.sweep.pkey_plan()
    }

    /// The P_KeyTable blocks the SM knows each port to hold (read or acknowledged), by
    /// (NodeGUID, port): what P_KeyTableRecord answers from.
    #[must_use]
    pub fn known_pkeys(&self) -> &crate::partition::KnownPkeys {
        self.sweep.known_pkeys()
    }
    /// The LFTs computed by the last routing run.
    #[must_use]
    pub fn lfts(&self) -> Option<&Lfts> {
        self.sweep.routes().map(|r| &r.lfts)
    }
    /// The SA's picture of the subnet (nodes, ports, links, routes, QoS tables, SMs, config
    /// facts, LID and GUID indexes), built when the last heavy sweep brought the subnet up; a
    /// new `Arc` after every such sweep, so the owner hands it to [`crate::sa::Sa`] when the
    /// pointer changes. `None` before the first SUBNET UP.
    #[must_use]
    pub fn sa_snapshot(&self) -> Option<&std::sync::Arc<crate::sa::SaSnapshot>> {
        self.sweep.sa_snapshot()
    }
    /// Switch ports marked unhealthy by link-integrity trap floods (not aged out yet), by
    /// (node GUID, port): no route crosses their links.
    #[must_use]
    pub fn unhealthy_ports(&self) -> Vec<(ibmad::Guid, u8)> {
        self.sweep.unhealthy_ports()
    }

    /// The multicast tables (MLID → port mask per switch) of the last multicast pass: what
    /// the SA's MulticastForwardingTableRecords report ([`crate::sa::Sa::set_mfts`]); a new
    /// `Arc` only when a pass changed them.
    #[must_use]
    pub fn mfts(&self) -> Option<&std::sync::Arc<crate::mcast::Mfts>> {
        self.sweep.mfts()
    }
    /// The multicast programmer: the MFT blocks each switch is known to hold, pass counters.
    #[must_use]
    pub fn mft_programmer(&self) -> &crate::mcast::program::MftProgrammer {
        self.sweep.mft_programmer()
    }
    /// The routing engine that produced [`Sm::lfts`].
    #[must_use]
    pub fn routing_engine_used(&self) -> &'static str {
        self.sweep.engine_used()
    }
    /// The current GUID→LID map.
    #[must_use]
    pub fn guid2lid(&self) -> &Guid2Lid {
        self.sweep.guid2lid()
    }
    /// The SM's role (IBA vol1 §14.4): DISCOVERING, STANDBY, MASTER, …
    #[must_use]
    pub fn role(&self) -> Role {
        self.role.role()
    }
    /// The role machine (its master when standing by, its priority).
    #[must_use]
    pub fn role_machine(&self) -> &SmRole {
        &self.role
    }
    /// Where the sweep pipeline is.
    #[must_use]
    pub fn stage(&self) -> Stage {
        self.sweep.stage()
    }
    /// True once a heavy sweep has brought the subnet up (until a sweep fails).
    #[must_use]
    pub fn is_up(&self) -> bool {
        self.sweep.is_up()
    }
    /// The SM's own LID (0 before LID assignment).
    #[must_use]
    pub fn sm_lid(&self) -> Lid {
        self.sweep.sm_lid()
    }
    /// Counters of every finished phase, oldest first.
    #[must_use]
    pub fn phase_history(&self) -> &[(Phase, PhaseStats)] {
        self.sweep.history()
    }
    /// Heavy sweeps started so far.
    #[must_use]
    pub fn heavy_sweeps(&self) -> u64 {
        self.sweep.heavy_sweeps()
    }
    /// True after a heavy sweep that ended with errors ([`Event::SweepFailed`]) when the SM
    /// sweeps again at once (a bounded number of times); false when it waits for its sweep
    /// interval (or, with sweeping disabled, for a command). Until the re-sweep starts (at
    /// the next [`Sm::handle_timeout`]), [`Sm::subnet`] and [`Sm::lfts`] are the failed
    /// sweep's.
    #[must_use]
    pub fn resweep_due(&self) -> bool {
        self.sweep.resweep_due()
    }

    // ----- inputs ----------------------------------------------------------------------

    /// A MAD received on the SM's port. Responses are matched by the low 32 bits of the TID
    /// and checked (directed route, returning, same attribute and modifier); anything else —
    /// a late duplicate, a malformed MAD, a request for another class — is ignored.
    pub fn handle_mad(&mut self, now: Time, meta: &MadMeta, mad: &[u8]) {
        let Some(bytes) = mad.get(..SMP_LEN) else {
            return;
        };
        let Ok(smp) = Smp::ref_from_bytes(bytes) else {
            return;
        };
        if smp.base_version != 1 || !smp.class().is_smp() || smp.class_version != 1 {
            return;
        }
        let smp = *smp;
        match smp.method() {
            Method::GET_RESP => self.on_response(now, &smp),
            Method::TRAP => self.on_trap(now, meta, &smp),
            Method::GET if smp.attr() == SmpAttrId::SM_INFO => {
                self.answer_sminfo(meta, &smp, Status::OK);
            }
            Method::SET if smp.attr() == SmpAttrId::SM_INFO => self.on_sminfo_set(now, meta, &smp),
            _ => {}
        }
        self.run_role(now);
        self.step(now);
    }

    /// This SM's SMInfo as the role machine reports it now.
    fn facts(&mut self) -> crate::sminfo::Facts {
        // The own GUID is known from the first NodeInfo of the first sweep on.
        self.role
            .set_own_guid(crate::sminfo::own_guid(self.sweep.subnet()));
        let act_count = (self.mads_sent & u64::from(u32::MAX)) as u32;
        self.role.sminfo_facts(self.cfg.m_key, act_count)
    }

    /// Another SM's SMInfo Get or Set: answered with our GUID, SM_Key (to an authenticated
    /// requester), activity count, priority and role — see [`crate::sminfo`].
    fn answer_sminfo(&mut self, meta: &MadMeta, req: &Smp, status: Status) {
        let facts = self.facts();
        self.answer_with(meta, req, &facts, status);
    }

    fn answer_with(
        &mut self,
        meta: &MadMeta,
        req: &Smp,
        facts: &crate::sminfo::Facts,
        status: Status,
    ) {
        let own_lid = self.sweep.own_port_lid();
        if let Some((m, resp)) =
            crate::sminfo::respond(meta, req, facts, self.cfg.port, own_lid, status)
        {
            let mut raw = [0u8; SMP_LEN];
            raw.copy_from_slice(resp.as_bytes());
            self.out_raw.push_back((m, raw));
        }
    }

    /// SubnSet(SMInfo) from another SM (HANDOVER, ACKNOWLEDGE, DISABLE, STANDBY, DISCOVER):
    /// the role machine decides; the answer carries our SMInfo as it was when the Set arrived,
    /// with status 7 (InvalidField) if the Set was refused.
    fn on_sminfo_set(&mut self, now: Time, meta: &MadMeta, req: &Smp) {
        let Ok((sender, _)) = SmInfo::read_from_prefix(&req.data[..]) else {
            return;
        };
        let facts = self.facts();
        let from = SmAddr {
            guid: sender.guid(),
            path: crate::sminfo::route_back(req).unwrap_or_default(),
            lid: if req.is_dr() {
                Lid::UNASSIGNED
            } else {
                meta.slid
            },
        };
        let attr_mod = req.attr_mod.get();
        let status = match self
            .role
            .handle_set(now, &mut self.timers, attr_mod, &sender, from)
        {
            Ok(()) => Status::OK,
            Err(why) => {
                self.events.push(Event::SmInfoSetRefused {
                    sender: sender.guid(),
                    attr_mod,
                    why,
                });
                Status::INVALID_FIELD
            }
        };
        self.answer_with(meta, req, &facts, status);
    }

    /// Carries out what the role machine asked for and forwards its events.
    fn run_role(&mut self, now: Time) {
        for e in self.role.take_events() {
            self.events.push(e);
        }
        for a in self.role.take_actions() {
            match a {
                RoleAction::Rediscover => self.sweep.request_rediscover(),
                RoleAction::Poll(to) => {
                    let mut r =
                        Request::get(to.path, SmpAttrId::SM_INFO, 0, Purpose::SmPoll(to.guid));
                    r.dlid = self.role_dlid(&to);
                    self.role_txn.submit(r);
                }
                RoleAction::Set {
                    to,
                    attr_mod,
                    state,
                } => {
                    let mut facts = self.facts();
                    facts.state = state;
                    let mut data = [0u8; 64];
                    if let Ok((info, _)) = SmInfo::mut_from_prefix(&mut data[..]) {
                        crate::sminfo::fill(info, &facts, true);
                    }
                    let mut r = Request::set(
                        to.path,
                        SmpAttrId::SM_INFO,
                        attr_mod,
                        data,
                        Purpose::SmSet(to.guid),
                    );
                    r.dlid = self.role_dlid(&to);
                    self.role_txn.submit(r);
                }
                RoleAction::Trap144(to) => self.send_trap_144(&to),
            }
        }
        let _ = now;
    }

    /// LID-routed role traffic goes to the SM's LID when both ends have one (and LID routing
    /// is on); else by directed route.
    fn role_dlid(&self, to: &SmAddr) -> Lid {
        if self.cfg.lid_routed && to.lid.is_unicast() && self.sweep.own_port_lid().is_unicast() {
            to.lid
        } else {
            Lid::UNASSIGNED
        }
    }

    /// Trap 144 (local changes, SM priority changed) to the master SM at `to`, as OpenSM's
    /// `osm_send_trap144`: LID-routed from our port's LID, the Notice's DataDetails carrying
    /// our LID, OtherLocalChanges, our CapabilityMask and the SM-priority ChangeFlag.
    fn send_trap_144(&mut self, to: &SmAddr) {
        let own = self.sweep.own_port_lid();
        if !own.is_unicast() || !to.lid.is_unicast() {
            return;
        }
        let cap = self.sweep.own_port_capability_mask();
        let mut n = Notice::new_zeroed();
        n.set_is_generic(1);
        n.set_notice_type(notice_type::INFO);
        n.set_producer_type(if self.sweep.own_node_type() == Some(NodeType::SWITCH) {
            producer::SWITCH
        } else {
            producer::CA
        });
        n.trap_num.set(TrapNum::LOCAL_CHANGES.0);
        n.issuer_lid.set(own.0);
        let d = &mut n.data_details;
        d[2..4].copy_from_slice(&own.0.to_be_bytes());
        d[5] = 0x01; // OtherLocalChanges
        d[6..10].copy_from_slice(&cap.to_be_bytes());
        d[10..12].copy_from_slice(&0x0008u16.to_be_bytes()); // SM priority changed
        let tid = ROLE_TID_BASE | 0x4000_0000 | (self.next_trap_tid & 0x3FFF_FFFF);
        self.next_trap_tid = self.next_trap_tid.wrapping_add(1);
        let mut smp = Smp::lid_request(Method::TRAP, SmpAttrId::NOTICE, 0, u64::from(tid));
        smp.data.copy_from_slice(n.as_bytes());
        let m = MadMeta {
            port: self.cfg.port,
            slid: own,
            dlid: to.lid,
            ..MadMeta::default()
        };
        let mut raw = [0u8; SMP_LEN];
        raw.copy_from_slice(smp.as_bytes());
        self.out_raw.push_back((m, raw));
        self.events.log(
            Level::Verbose,
            format!(
                "Sending Trap 144 (SM priority change) to SM {} at LID {}",
                to.guid, to.lid
            ),
        );
    }

    /// Time has reached [`Sm::poll_timeout`]: resend or give up on late SMPs, fire timers.
    pub fn handle_timeout(&mut self, now: Time) {
        for f in self.txn.expire(now) {
            let mut cx = ctx!(self);
            self.sweep.on_failed(f, &mut cx);
        }
        // A poll or Set that got no answer: the poll timer counts the miss.
        for f in self.role_txn.expire(now) {
            self.events.log(
                Level::Verbose,
                format!("SMInfo {} to {} got no answer", f.req.method, f.req.path),
            );
        }
        // Only the timers due on entry: one re-armed while handling them (the next
        // computation step) waits for the next call.
        let due: Vec<Timer> = std::iter::from_fn(|| self.timers.take_expired(now)).collect();
        for t in due {
            if t.is_role_timer() {
                self.role.handle_timeout(now, t, &mut self.timers);
                self.run_role(now);
                continue;
            }
            match t {
                Timer::Sweep => {
                    let mut cx = ctx!(self);
                    self.sweep.request_sweep(now, &mut cx);
                }
                Timer::TrapSweep => self.sweep.request_heavy(),
                Timer::Compute => {
                    let mut cx = ctx!(self);
                    self.sweep.compute_step(now, &mut cx);
                }
                Timer::SmInfoPoll => {}
            }
        }
        self.run_role(now);
        self.step(now);
    }

    /// An operator command.
    pub fn handle_command(&mut self, now: Time, cmd: Command) {
        match cmd {
            Command::Sweep => {
                let mut cx = ctx!(self);
                self.sweep.request_sweep(now, &mut cx);
            }
            Command::HeavySweep => self.sweep.request_full("operator request"),
            Command::Reroute => self.sweep.request_reroute(),
            Command::Guid2Lid(text) => {
                let (map, warnings) = Guid2Lid::parse(&text);
                for w in warnings {
                    self.events.push(Event::Guid2LidWarning(w));
                }
                self.sweep.set_guid2lid(map);
            }
            Command::McastGroups(groups) => self.sweep.set_mcast_groups(groups),
            Command::EngineOptions(eo) => {
                self.cfg.engine_options = *eo;
                self.sweep.request_reroute();
            }
            Command::Qos(q) => {
                let toggled = self.cfg.qos.enabled != q.enabled;
                self.cfg.engine_options.qos = q.enabled;
                self.cfg.qos = *q;
                if toggled {
                    self.sweep.request_reroute();
                } else {
                    self.sweep.request_full("QoS configuration changed");
                }
            }
        }
        self.step(now);
    }

    // ----- outputs ---------------------------------------------------------------------

    /// Writes the next SMP to send into `buf` (at least 256 bytes; a shorter buffer gets
    /// nothing) and says where it goes. Directed-route requests leave with hop pointer 0 and
    /// DrSLID = DrDLID = permissive; the transport (kernel SMI or simulator) applies the
    /// originator's `ibmad::smi::advance`.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        let t = self.poll_transmit_inner(now, buf);
        if t.is_some() {
            self.mads_sent += 1;
        }
        t
    }

    fn poll_transmit_inner(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        let out = buf.get_mut(..SMP_LEN)?;
        if let Some((meta, raw)) = self.out_raw.pop_front() {
            out.copy_from_slice(&raw);
            return Some(Transmit { meta, len: SMP_LEN });
        }
        if let Some((tid, req)) = self.role_txn.next_to_send(now, |_| false) {
            return Some(emit(&self.cfg, out, tid, req, self.sweep.own_port_lid()));
        }
        for _ in 0..8 {
            let disc = self.sweep.discovery();
            if let Some((tid, req)) = self.txn.next_to_send(now, |r| disc.already_known(r)) {
                return Some(emit(&self.cfg, out, tid, req, self.sweep.sm_lid()));
            }
            // Skipped requests may have finished a phase; let the next one queue its SMPs.
            if !self.txn.is_idle() || matches!(self.sweep.stage(), Stage::Idle | Stage::Computing) {
                return None;
            }
            self.step(now);
        }
        None
    }

    /// The time at which [`Sm::handle_timeout`] must next be called, if any.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        [
            self.txn.next_deadline(),
            self.role_txn.next_deadline(),
            self.timers.next_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next event, if any.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop()
    }

    // ----- internals -------------------------------------------------------------------

    /// Advances the pipeline as far as it can go without new input.
    fn step(&mut self, now: Time) {
        let mut cx = ctx!(self);
        self.sweep.step(now, &mut cx);
    }

    fn on_response(&mut self, now: Time, smp: &Smp) {
        // Directed-route responses come back with D set; LID-routed ones as class 0x01.
        if smp.is_dr() && !smp.direction() {
            return;
        }
        let tid = smp.tid.get() as u32;
        if self.role_txn.peek(tid).is_some() {
            self.on_role_response(now, tid, smp);
            return;
        }
        let Some(req) = self.txn.peek(tid) else {
            return; // unknown TID: a late duplicate or not ours
        };
        let lid_routed = req.dlid != Lid::UNASSIGNED;
        if req.attr != smp.attr() || req.attr_mod != smp.attr_mod.get() {
            return;
        }
        // A LID-routed request may be answered either way only after a fallback to DR
        // (which clears `dlid`), so the class must match what was last sent.
        if smp.is_dr() == lid_routed {
            return;
        }
        // A directed-route response keeps the request's hop count, InitialPath and the
        // permissive DrSLID/DrDLID it was sent with (IBA vol1 §14.2.2.2: the responder only
        // sets D and the method). One that does not was damaged or is not ours: creating a
        // node from it would add a phantom, so it is dropped and the request is resent.
        if smp.is_dr()
            && (smp.initial_dr_path() != Some(req.path)
                || smp.dr_slid() != Lid::PERMISSIVE
                || smp.dr_dlid() != Lid::PERMISSIVE)
        {
            self.events.log(
                Level::Verbose,
                format!(
                    "response TID 0x{tid:x} {} for {}: directed route does not match the request's; ignored",
                    smp.attr(),
                    req.path
                ),
            );
            return;
        }
        // A NodeInfo that describes no valid node is damage, not an answer: the probe stays
        // outstanding (resent, and reported if it never gets a usable answer).
        if let (Purpose::Probe { .. }, Status::OK) = (req.purpose, smp.status()) {
            let why = NodeInfo::ref_from_prefix(&smp.data[..])
                .map_err(|_| "short NodeInfo".to_string())
                .and_then(|(ni, _)| crate::discovery::check_node_info(ni));
            if let Err(why) = why {
                self.events.log(
                    Level::Verbose,
                    format!(
                        "NodeInfo response TID 0x{tid:x} from {}: {why}; ignored",
                        req.path
                    ),
                );
                return;
            }
        }
        let Some(req) = self.txn.complete(now, tid) else {
            return;
        };
        self.txn.prune();
        let status = smp.status();
        let suppressed =
            self.cfg.suppress_sl2vl_mad_status_errors && req.attr == SmpAttrId::SL_TO_VL_TABLE;
        let mut cx = ctx!(self);
        if status != Status::OK && !suppressed {
            cx.events.push(Event::ErrorStatus {
                dr_path: req.path,
                method: req.method,
                attr: req.attr,
                attr_mod: req.attr_mod,
                status,
            });
            self.sweep.on_error_status(&req);
            return;
        }
        self.sweep.on_answer(&req, &smp.data, &mut cx);
    }

    /// The answer to a poll or SMInfo Set of the role machine.
    fn on_role_response(&mut self, now: Time, tid: u32, smp: &Smp) {
        let Some(req) = self.role_txn.peek(tid) else {
            return;
        };
        if req.attr != smp.attr() || req.attr_mod != smp.attr_mod.get() {
            return;
        }
        let Some(req) = self.role_txn.complete(now, tid) else {
            return;
        };
        self.role_txn.prune();
        let Ok((info, _)) = SmInfo::read_from_prefix(&smp.data[..]) else {
            return;
        };
        match req.purpose {
            Purpose::SmPoll(guid) if smp.status() == Status::OK && info.guid() == guid => {
                self.role.on_poll_answer(&info);
            }
            Purpose::SmSet(guid) => {
                let level = if smp.status() == Status::OK {
                    Level::Verbose
                } else {
                    Level::Error
                };
                self.events.log(
                    level,
                    format!(
                        "SMInfo Set {} to SM {guid} answered with status {} (remote state {})",
                        req.attr_mod,
                        smp.status(),
                        SmState(info.sm_state_raw())
                    ),
                );
            }
            _ => {}
        }
    }

    /// A trap (IBA vol1 §13.4.8): repressed (same TID) whatever it says, counted against
    /// floods, then acted on as [`crate::trap::classify`] says.
    fn on_trap(&mut self, now: Time, meta: &MadMeta, smp: &Smp) {
        let Ok((notice, _)) = Notice::read_from_prefix(&smp.data[..]) else {
            return;
        };
        // TrapRepress (IBA vol1 §13.4.9): same TID, attribute and Notice, method 0x07, back to
        // the issuer. Traps are LID-routed; a directed-route one is not answered. It carries
        // the M_Key the SM gives every port, as OpenSM puts the issuing port's M_Key in it
        // (`osm_trap_rcv.c`): the trap's own field may be 0, and a TrapRepress with the wrong
        // key fails the issuer's M_Key check at any protection level (IBA vol1 §14.2.4.1), so
        // the trap is resent and each repress counts a violation and raises trap 256.
        if !smp.is_dr() {
            let mut rep = *smp;
            rep.method = Method::TRAP_REPRESS.0;
            rep.status.set(0);
            rep.m_key.set(self.cfg.m_key);
            let own = self.sweep.own_port_lid();
            let m = MadMeta {
                port: meta.port,
                slid: own,
                dlid: meta.slid,
                sl: meta.sl,
                ..MadMeta::default()
            };
            let mut raw = [0u8; SMP_LEN];
            raw.copy_from_slice(rep.as_bytes());
            self.out_raw.push_back((m, raw));
        }
        let count = self.traps.register(now, meta.slid, &notice);
        let flood = count >= FLOOD_THRESHOLD;
        self.events.push(Event::TrapReceived {
            trap: notice.trap_num(),
            issuer: notice.issuer_lid(),
            tid: smp.tid.get(),
            repeat: count,
            ignored: flood,
            source: meta.slid,
            notice,
        });
        if flood && self.role.may_sweep() && notice.is_generic() != 0 {
            self.on_trap_flood(now, &notice, count);
        }
        if flood || !self.role.may_sweep() {
            return;
        }
        // Trap 144 from our own port reports what this SM did itself (IsSM set when it
        // opened the port): nothing to sweep for.
        let issuer = notice.issuer_lid();
        if notice.trap_num() == TrapNum::LOCAL_CHANGES
            && issuer.is_unicast()
            && (issuer == self.sweep.own_port_lid() || issuer == self.sweep.sm_lid())
        {
            return;
        }
        match crate::trap::classify(&notice, self.cfg.sweep_on_trap) {
            TrapAction::None => {}
            TrapAction::HeavySweep { issuer } => {
                self.sweep.note_trap(issuer);
                if self.timers.get(Timer::TrapSweep).is_none() {
                    self.timers.set(Timer::TrapSweep, now);
                }
            }
            TrapAction::LightSweep => {
                let mut cx = ctx!(self);
                self.sweep.request_sweep(now, &mut cx);
            }
            TrapAction::NodeDescription { issuer } => {
                let mut cx = ctx!(self);
                self.sweep.refresh_node_desc(issuer, &mut cx);
            }
        }
    }
}

impl Sm {
    /// A flood of link-integrity traps (129 local link integrity, 130 excessive buffer
    /// overrun, 131 flow-control watchdog) names a bad port (OpenSM `shutup_noisy_port`):
    /// with `babbling_port_policy`, from [`BABBLING_THRESHOLD`] traps on, the port is disabled;
    /// else it is marked unhealthy for [`UNHEALTHY_TIMEOUT`] and a heavy sweep routes around it.
    fn on_trap_flood(&mut self, now: Time, notice: &Notice, count: u32) {
        let integrity = [
            TrapNum::LOCAL_LINK_INTEGRITY,
            TrapNum::EXCESSIVE_BUFFER_OVERRUN,
            TrapNum::FLOW_CONTROL_WATCHDOG,
        ];
        if !integrity.contains(&notice.trap_num()) {
            return;
        }
        // DataDetails of traps 129–131 (IBA vol1 §14.2.5.1, Notice): reserved (2 bytes),
        // LIDADDR, PORTNO.
        let d = &notice.data_details;
        let lid = Lid(u16::from_be_bytes([d[2], d[3]]));
        let port = d[4];
        if self.cfg.babbling_port_policy && count >= BABBLING_THRESHOLD {
            let mut cx = ctx!(self);
            if let Some(g) = self.sweep.disable_port(lid, port, &mut cx) {
                self.events.log(
                    Level::Info,
                    format!(
                        "babbling_port_policy: disabling port {port} of 0x{:016x} (LID {}) after {count} traps {}",
                        g.0,
                        lid.0,
                        notice.trap_num().0
                    ),
                );
            }
            return;
        }
        if let Some(g) = self
            .sweep
            .mark_unhealthy(lid, port, now + UNHEALTHY_TIMEOUT)
        {
            self.events.log(
                Level::Info,
                format!(
                    "port {port} of 0x{:016x} (LID {}) sent trap {} {count} times: marked unhealthy for {} s, routes avoid it",
                    g.0,
                    lid.0,
                    notice.trap_num().0,
                    UNHEALTHY_TIMEOUT.as_secs()
                ),
            );
        }
    }
}

/// How long a port that flooded link-integrity traps stays unhealthy (OpenSM
/// `OSM_DEFAULT_UNHEALTHY_TIMEOUT`, 60 s).
pub const UNHEALTHY_TIMEOUT: core::time::Duration = core::time::Duration::from_secs(60);

/// The count of identical link-integrity traps from which on `babbling_port_policy` disables
/// the port (OpenSM: 250).
pub const BABBLING_THRESHOLD: u32 = 250;

/// Writes `req` as an SMP with TID `tid` into `out` (directed route, or LID-routed from
/// `own_lid` when the request has a DLID).
fn emit(cfg: &SmConfig, out: &mut [u8], tid: u32, req: &Request, own_lid: Lid) -> Transmit {
    let lid_routed = req.dlid != Lid::UNASSIGNED;
    let mut smp = if lid_routed {
        Smp::lid_request(req.method, req.attr, req.attr_mod, u64::from(tid))
    } else {
        Smp::dr_request(
            req.method,
            req.attr,
            req.attr_mod,
            u64::from(tid),
            &req.path,
        )
    };
    smp.m_key.set(cfg.m_key);
    smp.data = req.data;
    out.copy_from_slice(smp.as_bytes());
    let (slid, dlid) = if lid_routed {
        (own_lid, req.dlid)
    } else {
        (Lid::PERMISSIVE, Lid::PERMISSIVE)
    };
    let meta = MadMeta {
        port: cfg.port,
        slid,
        dlid,
        ..MadMeta::default()
    };
    Transmit { meta, len: SMP_LEN }
}

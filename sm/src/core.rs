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
//! # A sweep
//!
//! Heavy sweep: discovery ([`crate::discovery`]) → LID assignment ([`crate::lid`]) → routing
//! ([`crate::routing::route_chain`]) → programming ([`crate::program`]: SwitchInfo, PortInfo
//! configuration and LFT blocks, only where they differ from what the node holds) → once all
//! of that is acknowledged, Init→Armed on every linked port → once all are Armed,
//! Armed→Active → `SUBNET UP` when every linked port reported Active in its Set response.
//! Light sweep (sweep timer or [`Command::Sweep`]): SwitchInfo of every switch; a set
//! PortStateChange bit or a switch that stopped answering triggers a heavy sweep. A trap 128
//! (LinkStateChange) is answered with TrapRepress and triggers a heavy sweep.

use std::collections::{HashMap, HashSet, VecDeque};

use ibmad::attr::{NodeDesc, NodeInfo, Notice, PortInfo, SwitchInfo};
use ibmad::{
    DrPath, Guid, Lid, MadMeta, Method, PortNum, PortState, Smp, SmpAttrId, Status, Time, TrapNum,
    SMP_LEN,
};
use zerocopy::{FromBytes, IntoBytes};

use crate::config::{ConfigError, SmConfig};
use crate::discovery::{data_of, Discovery};
use crate::event::{Command, Event, Level, Phase, PhaseStats};
use crate::lid::{assign_lids, Guid2Lid, LidConfig};
use crate::program;
use crate::routing::{route_chain_with, Lfts, Routes};
use crate::subnet::{NodeId, Subnet};
use crate::timer::{Timer, TimerTable};
use crate::txn::{Engine, Failed, Purpose, Request};

/// One MAD written by [`Sm::poll_transmit`] into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Transmit {
    /// Where it goes (local port, LIDs; QP 0).
    pub meta: MadMeta,
    /// Bytes written at the front of the buffer (always 256).
    pub len: usize,
}

/// Where the SM is in its cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmState {
    /// No sweep running.
    Idle,
    /// Heavy sweep: directed-route walk.
    Discovering,
    /// Heavy sweep: LID assignment, then routing (pure computation, one step per
    /// [`Sm::handle_timeout`], due at once).
    Computing,
    /// Heavy sweep: SwitchInfo / PortInfo / LFT Sets.
    Programming,
    /// Heavy sweep: Init → Armed.
    Arming,
    /// Heavy sweep: Armed → Active.
    Activating,
    /// Light sweep.
    LightSweep,
    /// Heavy sweep: asking the other SMs found by discovery for their SMInfo.
    PollingSms,
    /// Another SM with a higher priority (or the same priority and a lower GUID) is master
    /// or discovering: this SM does not program the subnet, and rediscovers at every sweep
    /// interval to see whether that master is still there (IBA vol1 §14.4.1.1).
    Standby,
}

/// What the SM last knew a switch's LFT to hold, by NodeGUID (survives sweeps).
#[derive(Debug, Default)]
struct KnownLft {
    /// LinearFDBTop last acknowledged.
    top: u16,
    /// Blocks acknowledged by a Set response; `None` = unknown.
    blocks: Vec<Option<[u8; 64]>>,
}

/// The subnet manager. See the module documentation for the call protocol.
#[derive(Debug)]
pub struct Sm {
    cfg: SmConfig,
    engine: Engine,
    timers: TimerTable,
    events: VecDeque<Event>,
    state: SmState,
    phase: Phase,
    phase_start: Time,
    disc: Discovery,
    guid2lid: Guid2Lid,
    routes: Option<Routes>,
    engine_used: &'static str,
    known_lft: HashMap<Guid, KnownLft>,
    sm_lid: Lid,
    reported: HashSet<DrPath>,
    out_raw: VecDeque<(MadMeta, [u8; SMP_LEN])>,
    up: bool,
    heavy_requested: bool,
    light_changed: bool,
    sweeps: u64,
    /// The current heavy sweep's programming phase has been acknowledged.
    lfts_programmed: bool,
    /// The last heavy sweep had errors and an immediate re-sweep is scheduled.
    resweep_due: bool,
    set_failures: usize,
    resweeps: u32,
    history: Vec<(Phase, PhaseStats)>,
    /// The best other SM seen in this sweep's SMInfo poll that outranks us: (GUID, priority).
    better_sm: Option<(Guid, u8)>,
}

impl Sm {
    /// A subnet manager with configuration `cfg` (validated).
    pub fn new(cfg: SmConfig) -> Result<Sm, ConfigError> {
        cfg.validate()?;
        let engine = Engine::new(
            cfg.max_wire_smps,
            cfg.max_smps_per_node,
            cfg.transaction_timeout,
            cfg.transaction_retries,
            cfg.retry_rounds,
        );
        let mut timers = TimerTable::default();
        timers.set(Timer::Sweep, Time::ZERO);
        let (disc, _) = Discovery::start(cfg.port);
        Ok(Sm {
            cfg,
            engine,
            timers,
            events: VecDeque::new(),
            state: SmState::Idle,
            phase: Phase::Discovery,
            phase_start: Time::ZERO,
            disc,
            guid2lid: Guid2Lid::new(),
            routes: None,
            engine_used: "none",
            known_lft: HashMap::new(),
            sm_lid: Lid::UNASSIGNED,
            reported: HashSet::new(),
            out_raw: VecDeque::new(),
            up: false,
            heavy_requested: false,
            light_changed: false,
            sweeps: 0,
            lfts_programmed: false,
            resweep_due: false,
            set_failures: 0,
            resweeps: 0,
            history: Vec::new(),
            better_sm: None,
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
        &self.disc.subnet
    }
    /// The routes computed by the last routing run.
    #[must_use]
    pub fn routes(&self) -> Option<&Routes> {
        self.routes.as_ref()
    }
    /// The LFTs computed by the last routing run.
    #[must_use]
    pub fn lfts(&self) -> Option<&Lfts> {
        self.routes.as_ref().map(|r| &r.lfts)
    }
    /// The routing engine that produced [`Sm::lfts`].
    #[must_use]
    pub fn routing_engine_used(&self) -> &'static str {
        self.engine_used
    }
    /// The current GUID→LID map.
    #[must_use]
    pub fn guid2lid(&self) -> &Guid2Lid {
        &self.guid2lid
    }
    /// Where the SM is in its cycle.
    #[must_use]
    pub fn state(&self) -> SmState {
        self.state
    }
    /// True once a heavy sweep has brought the subnet up (until a sweep fails).
    #[must_use]
    pub fn is_up(&self) -> bool {
        self.up
    }
    /// The SM's own LID (0 before LID assignment).
    #[must_use]
    pub fn sm_lid(&self) -> Lid {
        self.sm_lid
    }
    /// Counters of every finished phase, oldest first.
    #[must_use]
    pub fn phase_history(&self) -> &[(Phase, PhaseStats)] {
        &self.history
    }
    /// Heavy sweeps started so far.
    #[must_use]
    pub fn heavy_sweeps(&self) -> u64 {
        self.sweeps
    }
    /// True after a heavy sweep that ended with errors ([`Event::SweepFailed`]) when the SM
    /// sweeps again at once (a bounded number of times); false when it waits for its sweep
    /// interval (or, with sweeping disabled, for a command). Until the re-sweep starts (at
    /// the next [`Sm::handle_timeout`]), [`Sm::subnet`] and [`Sm::lfts`] are the failed
    /// sweep's.
    #[must_use]
    pub fn resweep_due(&self) -> bool {
        self.resweep_due
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
            Method::GET_RESP => self.on_response(&smp),
            Method::TRAP => self.on_trap(now, meta, &smp),
            Method::GET if smp.attr() == SmpAttrId::SM_INFO => self.on_sminfo_get(meta, &smp),
            _ => {}
        }
        self.step(now);
    }

    /// Another SM's SMInfo Get: answered with our GUID, SM_Key, activity count, priority and
    /// state (Master once the subnet is up, else Discovering) — see [`crate::sminfo`].
    fn on_sminfo_get(&mut self, meta: &MadMeta, req: &Smp) {
        let facts = crate::sminfo::Facts {
            guid: crate::sminfo::own_guid(&self.disc.subnet),
            sm_key: self.cfg.sm_key,
            m_key: self.cfg.m_key,
            act_count: u32::try_from(self.sweeps).unwrap_or(u32::MAX),
            priority: self.cfg.sm_priority,
            state: if self.up {
                ibmad::SmState::MASTER
            } else if self.state == SmState::Standby {
                ibmad::SmState::STANDBY
            } else {
                ibmad::SmState::DISCOVERING
            },
        };
        if let Some((m, resp)) =
            crate::sminfo::answer(meta, req, &facts, self.cfg.port, self.sm_lid)
        {
            let mut raw = [0u8; SMP_LEN];
            raw.copy_from_slice(resp.as_bytes());
            self.out_raw.push_back((m, raw));
        }
    }

    /// Time has reached [`Sm::poll_timeout`]: resend or give up on late SMPs, fire timers.
    pub fn handle_timeout(&mut self, now: Time) {
        for f in self.engine.expire(now) {
            self.on_failed(f);
        }
        // Only the timers due on entry: one re-armed while handling them (the next
        // computation step) waits for the next call.
        let due: Vec<Timer> = std::iter::from_fn(|| self.timers.take_expired(now)).collect();
        for t in due {
            match t {
                Timer::Sweep => {
                    if !self.up {
                        self.heavy_requested = true;
                    } else if self.state == SmState::Idle {
                        self.start_light(now);
                    }
                }
                Timer::TrapSweep => self.heavy_requested = true,
                Timer::Compute => self.compute_step(now),
            }
        }
        self.step(now);
    }

    /// An operator command.
    pub fn handle_command(&mut self, now: Time, cmd: Command) {
        match cmd {
            Command::Sweep => {
                if !self.up {
                    self.heavy_requested = true;
                } else if self.state == SmState::Idle {
                    self.start_light(now);
                }
            }
            Command::HeavySweep => self.heavy_requested = true,
            Command::Guid2Lid(text) => {
                let (map, warnings) = Guid2Lid::parse(&text);
                for w in &warnings {
                    self.log(Level::Warn, format!("guid2lid: {w}"));
                }
                self.guid2lid = map;
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
        let out = buf.get_mut(..SMP_LEN)?;
        if let Some((meta, raw)) = self.out_raw.pop_front() {
            out.copy_from_slice(&raw);
            return Some(Transmit { meta, len: SMP_LEN });
        }
        for _ in 0..8 {
            let disc = &self.disc;
            if let Some((tid, req)) = self.engine.next_to_send(now, |r| disc.already_known(r)) {
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
                smp.m_key.set(self.cfg.m_key);
                smp.data = req.data;
                out.copy_from_slice(smp.as_bytes());
                let meta = if lid_routed {
                    MadMeta {
                        port: self.cfg.port,
                        slid: self.sm_lid,
                        dlid: req.dlid,
                        qp: 0,
                        sl: 0,
                    }
                } else {
                    MadMeta {
                        port: self.cfg.port,
                        slid: Lid::PERMISSIVE,
                        dlid: Lid::PERMISSIVE,
                        qp: 0,
                        sl: 0,
                    }
                };
                return Some(Transmit { meta, len: SMP_LEN });
            }
            // Skipped requests may have finished a phase; let the next one queue its SMPs.
            if !self.engine.is_idle() || matches!(self.state, SmState::Idle | SmState::Computing) {
                return None;
            }
            self.step(now);
        }
        None
    }

    /// The time at which [`Sm::handle_timeout`] must next be called, if any.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        match (self.engine.next_deadline(), self.timers.next_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next event, if any.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ----- internals -------------------------------------------------------------------

    fn log(&mut self, level: Level, line: String) {
        self.events.push_back(Event::Log { level, line });
    }

    fn submit_all(&mut self, reqs: Vec<Request>) {
        for r in reqs {
            self.engine.submit(r);
        }
    }

    fn on_response(&mut self, smp: &Smp) {
        // Directed-route responses come back with D set; LID-routed ones as class 0x01.
        if smp.is_dr() && !smp.direction() {
            return;
        }
        let tid = smp.tid.get() as u32;
        let Some(req) = self.engine.peek(tid) else {
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
            self.log(
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
                self.log(
                    Level::Verbose,
                    format!(
                        "NodeInfo response TID 0x{tid:x} from {}: {why}; ignored",
                        req.path
                    ),
                );
                return;
            }
        }
        let Some(req) = self.engine.complete(tid) else {
            return;
        };
        self.engine.prune();
        let status = smp.status();
        if status != Status::OK {
            self.log(
                Level::Error,
                format!(
                    "ERR 3108: {} {} {} at {} returned status {}",
                    req.method, req.attr, req.attr_mod, req.path, status
                ),
            );
            match req.purpose {
                Purpose::SetPortInfo(..) | Purpose::SetLft(..) | Purpose::SetSwitchInfo(_) => {
                    self.set_failures += 1;
                }
                Purpose::LightSwitchInfo(_) => self.light_changed = true,
                _ => {}
            }
            return;
        }
        let data = &smp.data;
        let mut out = Vec::new();
        match req.purpose {
            Purpose::Probe { from } => {
                if let Ok((ni, _)) = NodeInfo::ref_from_prefix(data) {
                    let mut evs = Vec::new();
                    self.disc
                        .on_node_info(req.path, from, ni, &mut out, &mut evs);
                    self.events.extend(evs);
                }
            }
            Purpose::NodeDesc(id) => {
                if let Ok((nd, _)) = NodeDesc::ref_from_prefix(data) {
                    self.disc.on_node_desc(id, nd);
                }
            }
            Purpose::SwitchInfo(id) => {
                if let Ok((si, _)) = SwitchInfo::ref_from_prefix(data) {
                    self.disc.on_switch_info(id, si);
                }
            }
            Purpose::PortInfo(id, p) => {
                if let Ok((pi, _)) = PortInfo::ref_from_prefix(data) {
                    self.disc.on_port_info(id, p, pi, &mut out);
                }
            }
            Purpose::SetSwitchInfo(id) => {
                if let Ok((si, _)) = SwitchInfo::ref_from_prefix(data) {
                    let guid = self.disc.subnet.node(id).guid;
                    self.known_lft.entry(guid).or_default().top = si.linear_fdb_top.get();
                    self.disc.on_switch_info(id, si);
                }
            }
            Purpose::SetLft(id, b) => {
                let guid = self.disc.subnet.node(id).guid;
                let k = self.known_lft.entry(guid).or_default();
                let i = usize::from(b);
                if k.blocks.len() <= i {
                    k.blocks.resize(i + 1, None);
                }
                k.blocks[i] = Some(*data);
            }
            Purpose::SetPortInfo(id, p) => {
                if let Ok((pi, _)) = PortInfo::ref_from_prefix(data) {
                    if let Some(port) = self.disc.subnet.port_mut(id, p) {
                        port.info = Some(*pi);
                    }
                }
            }
            Purpose::LightSwitchInfo(_) => {
                if let Ok((si, _)) = SwitchInfo::ref_from_prefix(data) {
                    if si.port_state_change() != 0 {
                        self.light_changed = true;
                    }
                }
            }
            Purpose::SmInfo(_) => {
                if let Ok((info, _)) = ibmad::attr::SmInfo::ref_from_prefix(data) {
                    self.on_other_sm(info);
                }
            }
        }
        self.submit_all(out);
    }

    fn on_failed(&mut self, f: Failed) {
        if let Purpose::SmInfo(_) = f.req.purpose {
            // The port advertises IsSM but no SM answers: it takes no part in the election.
            self.log(
                Level::Verbose,
                format!(
                    "SMInfo Get to {} got no answer; ignoring that SM",
                    f.req.path
                ),
            );
            return;
        }
        if self.reported.insert(f.req.path) {
            self.events.push_back(Event::NodeUnreachable {
                dr_path: f.req.path,
                attempts: f.attempts,
            });
            self.log(
                Level::Error,
                format!(
                    "ERR 3120: {} {} to {} timed out after {} attempts",
                    f.req.method, f.req.attr, f.req.path, f.attempts
                ),
            );
        }
        match f.req.purpose {
            Purpose::LightSwitchInfo(_) => self.light_changed = true,
            Purpose::SetPortInfo(..) | Purpose::SetLft(..) | Purpose::SetSwitchInfo(_) => {
                self.set_failures += 1;
            }
            _ => {}
        }
    }

    fn on_trap(&mut self, now: Time, meta: &MadMeta, smp: &Smp) {
        let Ok((notice, _)) = Notice::ref_from_prefix(&smp.data) else {
            return;
        };
        let trap = notice.trap_num();
        self.log(
            Level::Info,
            format!(
                "Received Trap {} ({}) from LID {}",
                trap.0,
                trap,
                notice.issuer_lid()
            ),
        );
        // TrapRepress (IBA vol1 §13.4.9): same TID and attribute, method 0x07, back to the
        // issuer.
        if !smp.is_dr() {
            let mut rep = *smp;
            rep.method = Method::TRAP_REPRESS.0;
            rep.status.set(0);
            let m = MadMeta {
                port: meta.port,
                slid: self.sm_lid,
                dlid: meta.slid,
                qp: 0,
                sl: meta.sl,
            };
            let mut raw = [0u8; SMP_LEN];
            raw.copy_from_slice(rep.as_bytes());
            self.out_raw.push_back((m, raw));
        }
        if trap == TrapNum::LINK_STATE_CHANGE && self.timers.get(Timer::TrapSweep).is_none() {
            self.timers.set(Timer::TrapSweep, now);
        }
    }

    fn end_phase(&mut self, now: Time) -> PhaseStats {
        let mut stats = self.engine.take_stats();
        stats.elapsed = now.saturating_since(self.phase_start);
        self.history.push((self.phase, stats));
        self.events.push_back(Event::PhaseDone {
            phase: self.phase,
            stats,
        });
        self.phase_start = now;
        stats
    }

    fn begin(&mut self, now: Time, phase: Phase, state: SmState) {
        self.phase = phase;
        self.phase_start = now;
        self.state = state;
    }

    /// Advances the state machine as far as it can go without new input.
    fn step(&mut self, now: Time) {
        loop {
            if !self.engine.is_idle() {
                return;
            }
            match self.state {
                SmState::Idle => {
                    if self.heavy_requested {
                        self.start_heavy(now);
                    } else {
                        return;
                    }
                }
                SmState::Discovering => self.finish_discovery(now),
                SmState::Computing => return,
                SmState::PollingSms => self.finish_sm_poll(now),
                SmState::Standby => {
                    if self.heavy_requested {
                        self.start_heavy(now);
                    } else {
                        return;
                    }
                }
                SmState::Programming => {
                    self.end_phase(now);
                    self.lfts_programmed = true;
                    self.start_arming(now);
                }
                SmState::Arming => {
                    self.end_phase(now);
                    self.start_activation(now);
                }
                SmState::Activating => {
                    self.end_phase(now);
                    self.finish_heavy(now);
                }
                SmState::LightSweep => {
                    self.end_phase(now);
                    self.state = SmState::Idle;
                    if self.light_changed {
                        self.log(
                            Level::Info,
                            "light sweep found a change: starting heavy sweep".into(),
                        );
                        self.heavy_requested = true;
                    } else {
                        self.arm_sweep(now);
                    }
                }
            }
        }
    }

    fn arm_sweep(&mut self, now: Time) {
        if self.cfg.sweep_interval.is_zero() {
            self.timers.stop(Timer::Sweep);
        } else {
            self.timers.set(Timer::Sweep, now + self.cfg.sweep_interval);
        }
    }

    fn start_light(&mut self, now: Time) {
        self.begin(now, Phase::LightSweep, SmState::LightSweep);
        self.light_changed = false;
        let s = &self.disc.subnet;
        let reqs: Vec<Request> = s
            .switches()
            .map(|id| {
                let mut r = Request::get(
                    s.node(id).dr_path,
                    SmpAttrId::SWITCH_INFO,
                    0,
                    Purpose::LightSwitchInfo(id),
                );
                r.dlid = self.lid_route(id, PortNum(0));
                r
            })
            .collect();
        self.submit_all(reqs);
    }

    fn start_heavy(&mut self, now: Time) {
        self.heavy_requested = false;
        self.resweep_due = false;
        self.timers.stop(Timer::TrapSweep);
        self.timers.stop(Timer::Compute);
        self.sweeps += 1;
        self.set_failures = 0;
        self.lfts_programmed = false;
        self.reported.clear();
        self.log(
            Level::Info,
            format!("Entering DISCOVERING state (heavy sweep {})", self.sweeps),
        );
        self.begin(now, Phase::Discovery, SmState::Discovering);
        let (disc, first) = Discovery::start(self.cfg.port);
        self.disc = disc;
        self.engine.submit(first);
    }

    fn fail_sweep(&mut self, now: Time, reason: String) {
        self.log(Level::Error, reason.clone());
        self.events.push_back(Event::SweepFailed { reason });
        self.state = SmState::Idle;
        self.up = false;
        self.arm_sweep(now);
    }

    fn finish_discovery(&mut self, now: Time) {
        let stats = self.end_phase(now);
        let n_sw = self.disc.subnet.switches().count();
        let n = self.disc.subnet.nodes.len();
        self.log(
            Level::Info,
            format!(
                "discovery done: {} nodes ({} switches, {} CAs), {} SMPs",
                n,
                n_sw,
                n - n_sw,
                stats.smps
            ),
        );
        let Some(own) = self.disc.subnet.sm_port() else {
            self.fail_sweep(now, "ERR 3A01: the SM's own port did not answer".into());
            return;
        };
        // Master election (IBA vol1 §14.4.1.1): ask every other end port that advertises
        // IsSM for its SMInfo before taking the subnet over.
        let s = &self.disc.subnet;
        let polls: Vec<Request> = s
            .end_ports()
            .filter(|&(id, p)| (id, p) != own)
            .filter(|&(id, p)| {
                s.port(id, p).and_then(|x| x.info).is_some_and(|i| {
                    i.capability_mask.get() & ibmad::attr::port_info::cap::IS_SM != 0
                })
            })
            .map(|(id, _)| {
                Request::get(
                    s.node(id).dr_path,
                    SmpAttrId::SM_INFO,
                    0,
                    Purpose::SmInfo(id),
                )
            })
            .collect();
        self.better_sm = None;
        if !polls.is_empty() {
            self.log(
                Level::Info,
                format!("polling {} other SM port(s) for SMInfo", polls.len()),
            );
            self.state = SmState::PollingSms;
            self.submit_all(polls);
            return;
        }
        self.after_discovery(now);
    }

    /// An SMInfo answer from another SM: does it outrank us (higher priority, or the same
    /// priority and a lower GUID) while it is master or still discovering?
    fn on_other_sm(&mut self, info: &ibmad::attr::SmInfo) {
        let state = info.sm_state();
        if state != ibmad::SmState::MASTER && state != ibmad::SmState::DISCOVERING {
            return;
        }
        let own = crate::sminfo::own_guid(&self.disc.subnet);
        let (prio, guid) = (info.priority(), info.guid());
        let outranks = prio > self.cfg.sm_priority || (prio == self.cfg.sm_priority && guid < own);
        if outranks && self.better_sm.is_none_or(|(_, p)| prio > p) {
            self.better_sm = Some((guid, prio));
        }
    }

    fn finish_sm_poll(&mut self, now: Time) {
        match self.better_sm {
            Some((guid, prio)) => {
                self.log(
                    Level::Info,
                    format!(
                        "Entering STANDBY state: SM {guid} with priority {prio} outranks ours ({})",
                        self.cfg.sm_priority
                    ),
                );
                self.events.push_back(Event::Standby {
                    master: guid,
                    priority: prio,
                });
                self.state = SmState::Standby;
                self.up = false;
                self.arm_sweep(now);
            }
            None => self.after_discovery(now),
        }
    }

    /// The rest of a heavy sweep once discovery (and the SM poll) is done: LID assignment
    /// and routing, each in its own [`Sm::handle_timeout`] (see [`Timer::Compute`]), then
    /// programming.
    fn after_discovery(&mut self, now: Time) {
        // Switches whose LFT top changed behind our back (reboot): forget their blocks.
        for id in self.disc.subnet.switches() {
            let node = self.disc.subnet.node(id);
            if let (Some(si), Some(k)) = (node.switch_info, self.known_lft.get_mut(&node.guid)) {
                if si.linear_fdb_top.get() != k.top {
                    *k = KnownLft::default();
                }
            }
        }
        self.begin(now, Phase::LidAssignment, SmState::Computing);
        self.timers.set(Timer::Compute, now);
    }

    /// One computation step of a heavy sweep: LID assignment, or routing.
    fn compute_step(&mut self, now: Time) {
        if self.state != SmState::Computing {
            return;
        }
        match self.phase {
            Phase::LidAssignment => self.assign_lids_step(now),
            Phase::Routing => self.routing_step(now),
            _ => {}
        }
    }

    fn assign_lids_step(&mut self, now: Time) {
        let lc = LidConfig {
            lmc: self.cfg.lmc,
            reassign_lids: self.cfg.reassign_lids && self.sweeps == 1,
        };
        match assign_lids(&mut self.disc.subnet, &lc, &self.guid2lid) {
            Ok(rep) => {
                self.log(
                    Level::Info,
                    format!(
                        "LID assignment: {} from guid2lid, {} kept, {} new, {} conflicts; top {}",
                        rep.from_guid2lid, rep.kept_existing, rep.new, rep.conflicts, rep.top
                    ),
                );
                self.guid2lid = rep.guid2lid;
                self.events
                    .push_back(Event::Guid2LidUpdated(self.guid2lid.to_text()));
            }
            Err(e) => {
                self.end_phase(now);
                self.fail_sweep(now, format!("ERR 0307: LID assignment failed: {e}"));
                return;
            }
        }
        self.end_phase(now);
        self.sm_lid = self
            .disc
            .subnet
            .sm_port()
            .map_or(Lid::UNASSIGNED, |(n, p)| self.disc.subnet.lid_of(n, p));
        self.begin(now, Phase::Routing, SmState::Computing);
        self.timers.set(Timer::Compute, now);
    }

    fn routing_step(&mut self, now: Time) {
        let routed = route_chain_with(
            &self.cfg.routing_engine,
            self.cfg.no_fallback,
            &self.disc.subnet,
            self.cfg.seed,
            &crate::routing::EngineOptions {
                scatter_ports: self.cfg.seed,
                ..self.cfg.engine_options.clone()
            },
        );
        match routed {
            Ok(outcome) => {
                for l in outcome.log {
                    self.log(crate::routing::log_line_level(&l), l);
                }
                self.engine_used = outcome.engine;
                self.routes = Some(outcome.routes);
            }
            Err(e) => {
                if let crate::routing::RouteError::AllEnginesFailed { log, .. } = &e {
                    for l in log.clone() {
                        self.log(Level::Error, l);
                    }
                }
                self.end_phase(now);
                self.fail_sweep(
                    now,
                    format!(
                        "ERR 3A0A: No routing engine able to successfully configure switch tables on current fabric ({e})"
                    ),
                );
                return;
            }
        }
        self.end_phase(now);
        self.start_programming(now);
    }

    fn start_programming(&mut self, now: Time) {
        self.begin(now, Phase::Programming, SmState::Programming);
        let mut reqs = Vec::new();
        let s = &self.disc.subnet;
        let top = self.lfts().map_or(Lid(0), Lfts::top);
        // SwitchInfo first (LinearFDBTop before the blocks it covers).
        for id in s.switches() {
            let node = s.node(id);
            if let Some(cur) = node.switch_info {
                if let Some(set) = program::switch_info_set(&self.cfg, &cur, top) {
                    reqs.push(Request::set(
                        node.dr_path,
                        SmpAttrId::SWITCH_INFO,
                        0,
                        data_of(&set),
                        Purpose::SetSwitchInfo(id),
                    ));
                }
            }
        }
        // PortInfo configuration (or, folded, with the Armed Set).
        for id in s.node_ids().filter(|_| !self.cfg.fold_config_into_arm) {
            let node = s.node(id);
            for p in 0..=node.num_ports {
                let p = PortNum(p);
                let Some(cur) = s.port(id, p).and_then(|x| x.info) else {
                    continue;
                };
                let Some(want) = program::desired_port_info(&self.cfg, s, id, p, self.sm_lid)
                else {
                    continue;
                };
                if let Some(set) = program::config_set(&cur, &want) {
                    reqs.push(Request::set(
                        self.disc.port_path(id, p),
                        SmpAttrId::PORT_INFO,
                        p.0.into(),
                        data_of(&set),
                        Purpose::SetPortInfo(id, p),
                    ));
                }
            }
        }
        // LFT blocks, block-major across switches, only where they differ from what the
        // switch is known to hold.
        if let Some(lfts) = self.routes.as_ref().map(|r| &r.lfts) {
            let nblocks = program::lft_blocks(top);
            let sws: Vec<NodeId> = s.switches().collect();
            for b in 0..nblocks {
                for &id in &sws {
                    let Some(table) = lfts.table(id) else {
                        continue;
                    };
                    let want = program::lft_block(table, b);
                    let node = s.node(id);
                    let known = self
                        .known_lft
                        .get(&node.guid)
                        .and_then(|k| k.blocks.get(usize::from(b)).copied().flatten());
                    if known == Some(want) {
                        continue;
                    }
                    reqs.push(Request::set(
                        node.dr_path,
                        SmpAttrId::LINEAR_FT,
                        b.into(),
                        want,
                        Purpose::SetLft(id, b),
                    ));
                }
            }
        }
        self.submit_all(reqs);
    }

    /// The LID to reach port `p` of node `id` by a LID-routed SMP, or 0 for "use the
    /// directed route": LID routing is used only with [`SmConfig::lid_routed`], once the SM's
    /// own port and the target port hold (acknowledged) their LIDs and the LFTs are programmed.
    fn lid_route(&self, id: NodeId, p: PortNum) -> Lid {
        if !self.cfg.lid_routed || !self.lfts_programmed || self.sm_lid == Lid::UNASSIGNED {
            return Lid::UNASSIGNED;
        }
        let s = &self.disc.subnet;
        let held = |n: NodeId, q: PortNum| {
            s.port(n, q)
                .and_then(|x| x.info)
                .map_or(Lid::UNASSIGNED, |i| i.lid())
        };
        let Some((sn, sp)) = s.sm_port() else {
            return Lid::UNASSIGNED;
        };
        if held(
            sn,
            if s.node(sn).is_switch() {
                PortNum(0)
            } else {
                sp
            },
        ) != self.sm_lid
        {
            return Lid::UNASSIGNED;
        }
        let q = if s.node(id).is_switch() {
            PortNum(0)
        } else {
            p
        };
        let lid = held(id, q);
        if lid.is_unicast() && s.port(id, q).is_some_and(|x| x.lid == lid) {
            lid
        } else {
            Lid::UNASSIGNED
        }
    }

    fn state_pass(&mut self, from: PortState, to: PortState, with_config: bool) {
        let s = &self.disc.subnet;
        let mut reqs = Vec::new();
        for id in s.node_ids() {
            for p in 0..=s.node(id).num_ports {
                let p = PortNum(p);
                let Some(info) = s.port(id, p).and_then(|x| x.info) else {
                    continue;
                };
                let want = if with_config {
                    program::desired_port_info(&self.cfg, s, id, p, self.sm_lid)
                } else {
                    None
                };
                let in_pass = program::in_state_pass(s, id, p) && info.port_state() == from;
                let set = match (in_pass, want) {
                    (true, Some(w)) => program::state_set(&w, to),
                    (true, None) => program::state_set(&info, to),
                    // Not armed (Down, or its neighbour is unknown) but still configured.
                    (false, Some(w)) => match program::config_set(&info, &w) {
                        Some(c) => c,
                        None => continue,
                    },
                    (false, None) => continue,
                };
                let mut r = Request::set(
                    self.disc.port_path(id, p),
                    SmpAttrId::PORT_INFO,
                    p.0.into(),
                    data_of(&set),
                    Purpose::SetPortInfo(id, p),
                );
                if !with_config {
                    r.dlid = self.lid_route(id, p);
                }
                reqs.push(r);
            }
        }
        self.submit_all(reqs);
    }

    fn start_arming(&mut self, now: Time) {
        if self.set_failures > 0 {
            self.log(
                Level::Error,
                format!(
                    "ERR 3A05: {} programming Sets failed; ports are armed anyway and the next sweep reprograms",
                    self.set_failures
                ),
            );
        }
        self.log(
            Level::Info,
            "LINKS PORTS CONFIGURED - SET LINKS TO ARMED STATE".into(),
        );
        self.begin(now, Phase::Arming, SmState::Arming);
        self.state_pass(
            PortState::INIT,
            PortState::ARMED,
            self.cfg.fold_config_into_arm,
        );
    }

    fn start_activation(&mut self, now: Time) {
        self.log(Level::Info, "SET LINKS TO ACTIVE STATE".into());
        self.begin(now, Phase::Activation, SmState::Activating);
        self.state_pass(PortState::ARMED, PortState::ACTIVE, false);
    }

    fn finish_heavy(&mut self, now: Time) {
        let s = &self.disc.subnet;
        let (mut linked, mut mgmt) = (0usize, 0usize);
        let mut not_active = Vec::new();
        for id in s.node_ids() {
            for p in 0..=s.node(id).num_ports {
                if program::in_state_pass(s, id, PortNum(p)) {
                    if p == 0 {
                        mgmt += 1;
                    } else {
                        linked += 1;
                    }
                    if s.port(id, PortNum(p)).map(|x| x.state()) != Some(PortState::ACTIVE) {
                        not_active.push((s.node(id).guid, p));
                    }
                }
            }
        }
        // A sweep that lost SMPs for good (a node that did not answer, a Set never
        // acknowledged) did not find or configure every reachable node: OpenSM's "ERRORS
        // DURING INITIALIZATION", not SUBNET UP (stricter than OpenSM, which forgives a node
        // whose NodeInfo Get timed out).
        let lost = self.reported.len();
        let failed_sets = self.set_failures;
        if not_active.is_empty() && (lost > 0 || failed_sets > 0) {
            // The nearest failure first: it is usually the cause of those behind it.
            let mut routes: Vec<DrPath> = self.reported.iter().copied().collect();
            routes.sort_by(|a, b| (a.len(), a.ports()).cmp(&(b.len(), b.ports())));
            let first = routes.first().map_or(String::new(), |r| {
                format!(
                    " (first at directed route {r}{})",
                    if lost > 1 { ", ..." } else { "" }
                )
            });
            self.fail_sweep(
                now,
                format!(
                    "ERR 3A07: ERRORS DURING INITIALIZATION: no answer on {lost} directed route(s){first}, {failed_sets} Set(s) failed; the subnet is not up"
                ),
            );
        } else if not_active.is_empty() {
            self.state = SmState::Idle;
            self.up = true;
            self.log(
                Level::Info,
                format!("{linked} linked ports and {mgmt} switch ports 0 Active"),
            );
            self.log(Level::Info, "SUBNET UP".into());
            self.events.push_back(Event::SubnetUp);
            self.arm_sweep(now);
        } else {
            let first = not_active
                .iter()
                .take(4)
                .map(|(g, p)| format!("{g}/{p}"))
                .collect::<Vec<_>>()
                .join(", ");
            self.fail_sweep(
                now,
                format!(
                    "ERR 3A06: {} of {} ports (linked ports and switch ports 0) are not Active ({first} ...)",
                    not_active.len(),
                    linked + mgmt
                ),
            );
        }
        // Such a sweep may have missed part of the fabric or left it half programmed: sweep
        // again at once, a bounded number of times (OpenSM re-sweeps after an initialization
        // error too), then at the sweep interval. LIDs persist through guid2lid and
        // programming is diffed, so a re-sweep only sends what is still missing.
        let errors = lost > 0 || failed_sets > 0;
        if errors && self.resweeps < MAX_RESWEEPS {
            self.resweeps += 1;
            self.log(
                Level::Info,
                format!(
                    "sweep had errors ({} unreachable routes, {} failed Sets): re-sweeping ({}/{})",
                    self.reported.len(),
                    self.set_failures,
                    self.resweeps,
                    MAX_RESWEEPS
                ),
            );
            // At the next handle_timeout, so the owner still sees this sweep's subnet and
            // tables when it reads the SweepFailed event.
            self.resweep_due = true;
            self.timers.set(Timer::Sweep, now);
        } else if !errors {
            self.resweeps = 0;
        }
    }
}

/// Immediate re-sweeps after a heavy sweep with errors before waiting for the sweep timer.
const MAX_RESWEEPS: u32 = 2;

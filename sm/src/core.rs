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
//!   the election, its timers;
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
//! A trap 128 (LinkStateChange) is answered with TrapRepress and triggers a heavy sweep.

use ibmad::attr::{NodeInfo, Notice};
use ibmad::Lid;
use ibmad::{MadMeta, Method, Smp, SmpAttrId, Status, Time, TrapNum, SMP_LEN};
use zerocopy::{FromBytes, IntoBytes};

use crate::config::{ConfigError, SmConfig};
use crate::event::{Command, Event, Events, Level, Phase, PhaseStats};
use crate::lid::Guid2Lid;
use crate::role::{Role, RoleAction, SmRole};
use crate::routing::{Lfts, Routes};
use crate::subnet::Subnet;
use crate::sweep::{Ctx, Stage, Sweep};
use crate::timer::{Timer, TimerTable};
use crate::txn::{Engine, Purpose};

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
    /// Answers (SMInfo GetResp, TrapRepress) waiting for `poll_transmit`.
    out_raw: std::collections::VecDeque<(MadMeta, [u8; SMP_LEN])>,
    role: SmRole,
    sweep: Sweep,
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
        let mut timers = TimerTable::default();
        timers.set(Timer::Sweep, Time::ZERO);
        Ok(Sm {
            role: SmRole::new(cfg.sm_priority, cfg.sweep_interval),
            sweep: Sweep::new(&cfg),
            cfg,
            txn,
            timers,
            events: Events::default(),
            out_raw: std::collections::VecDeque::new(),
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
    /// The LFTs computed by the last routing run.
    #[must_use]
    pub fn lfts(&self) -> Option<&Lfts> {
        self.sweep.routes().map(|r| &r.lfts)
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
            Method::GET_RESP => self.on_response(&smp),
            Method::TRAP => self.on_trap(now, meta, &smp),
            Method::GET if smp.attr() == SmpAttrId::SM_INFO => self.on_sminfo_get(meta, &smp),
            _ => {}
        }
        self.step(now);
    }

    /// Another SM's SMInfo Get: answered with our GUID, SM_Key, activity count, priority and
    /// role — see [`crate::sminfo`].
    fn on_sminfo_get(&mut self, meta: &MadMeta, req: &Smp) {
        // The own GUID is known from the first NodeInfo of the first sweep on.
        let own = crate::sminfo::own_guid(self.sweep.subnet());
        if own.0 != 0 {
            self.role.set_own_guid(own);
        }
        let act_count = u32::try_from(self.sweep.heavy_sweeps()).unwrap_or(u32::MAX);
        let facts = self
            .role
            .sminfo_facts(self.cfg.sm_key, self.cfg.m_key, act_count);
        if let Some((m, resp)) =
            crate::sminfo::answer(meta, req, &facts, self.cfg.port, self.sweep.sm_lid())
        {
            let mut raw = [0u8; SMP_LEN];
            raw.copy_from_slice(resp.as_bytes());
            self.out_raw.push_back((m, raw));
        }
    }

    /// Time has reached [`Sm::poll_timeout`]: resend or give up on late SMPs, fire timers.
    pub fn handle_timeout(&mut self, now: Time) {
        for f in self.txn.expire(now) {
            let mut cx = ctx!(self);
            self.sweep.on_failed(f, &mut cx);
        }
        // Only the timers due on entry: one re-armed while handling them (the next
        // computation step) waits for the next call.
        let due: Vec<Timer> = std::iter::from_fn(|| self.timers.take_expired(now)).collect();
        for t in due {
            if t.is_role_timer() {
                match self.role.handle_timeout(t) {
                    RoleAction::Rediscover => self.sweep.request_heavy(),
                    RoleAction::None => {}
                }
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
        self.step(now);
    }

    /// An operator command.
    pub fn handle_command(&mut self, now: Time, cmd: Command) {
        match cmd {
            Command::Sweep => {
                let mut cx = ctx!(self);
                self.sweep.request_sweep(now, &mut cx);
            }
            Command::HeavySweep => self.sweep.request_heavy(),
            Command::Guid2Lid(text) => {
                let (map, warnings) = Guid2Lid::parse(&text);
                for w in warnings {
                    self.events.push(Event::Guid2LidWarning(w));
                }
                self.sweep.set_guid2lid(map);
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
            let disc = self.sweep.discovery();
            if let Some((tid, req)) = self.txn.next_to_send(now, |r| disc.already_known(r)) {
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
                let (slid, dlid) = if lid_routed {
                    (self.sweep.sm_lid(), req.dlid)
                } else {
                    (Lid::PERMISSIVE, Lid::PERMISSIVE)
                };
                let meta = MadMeta {
                    port: self.cfg.port,
                    slid,
                    dlid,
                    qp: 0,
                    sl: 0,
                    ..Default::default()
                };
                return Some(Transmit { meta, len: SMP_LEN });
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
        match (self.txn.next_deadline(), self.timers.next_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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

    fn on_response(&mut self, smp: &Smp) {
        // Directed-route responses come back with D set; LID-routed ones as class 0x01.
        if smp.is_dr() && !smp.direction() {
            return;
        }
        let tid = smp.tid.get() as u32;
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
        let Some(req) = self.txn.complete(tid) else {
            return;
        };
        self.txn.prune();
        let status = smp.status();
        let mut cx = ctx!(self);
        if status != Status::OK {
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

    fn on_trap(&mut self, now: Time, meta: &MadMeta, smp: &Smp) {
        let Ok((notice, _)) = Notice::ref_from_prefix(&smp.data) else {
            return;
        };
        let trap = notice.trap_num();
        self.events.log(
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
                slid: self.sweep.sm_lid(),
                dlid: meta.slid,
                qp: 0,
                sl: meta.sl,
                ..Default::default()
            };
            let mut raw = [0u8; SMP_LEN];
            raw.copy_from_slice(rep.as_bytes());
            self.out_raw.push_back((m, raw));
        }
        if trap == TrapNum::LINK_STATE_CHANGE && self.timers.get(Timer::TrapSweep).is_none() {
            self.timers.set(Timer::TrapSweep, now);
        }
    }
}

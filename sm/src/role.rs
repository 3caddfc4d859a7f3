//! The IBA SM role (vol1 §14.4 "Subnet Manager states"): NOTACTIVE, DISCOVERING, STANDBY,
//! MASTER — whether this SM may program the subnet — as a state machine of its own, apart from
//! the sweep pipeline ([`crate::sweep`]) that discovers, assigns LIDs, routes and programs.
//!
//! The machine reads no clock and sends nothing itself: it arms [`Timer::SmInfoPoll`] in the
//! SM's [`TimerTable`], and what it wants sent or done is queued as [`RoleAction`]s (drained by
//! [`crate::Sm`] after every call) and reported as [`Event`]s.
//!
//! # Transitions (OpenSM `osm_sm_state_mgr.c` / `osm_sminfo_rcv.c` / `osm_state_mgr.c`)
//! | From | Input | To | Done |
//! |---|---|---|---|
//! | (start) | — | DISCOVERING | heavy sweep |
//! | DISCOVERING | election: a MASTER, or a higher DISCOVERING/STANDBY SM | STANDBY | poll it |
//! | DISCOVERING | election: nobody | MASTER | first-master sweep |
//! | DISCOVERING | SMInfo Set HANDOVER | DISCOVERING | sweep |
//! | STANDBY | `polling_retry_number` polls unanswered, or Set DISCOVER | DISCOVERING | heavy sweep (coming out of standby) |
//! | STANDBY | Set HANDOVER | MASTER | ACKNOWLEDGE to the sender, first-master sweep |
//! | STANDBY | Set DISABLE | NOTACTIVE | stop polling |
//! | STANDBY | Set ACKNOWLEDGE | STANDBY | — |
//! | NOTACTIVE | Set STANDBY | STANDBY | poll the sender |
//! | MASTER | heavy sweep finds a higher SM (not NOTACTIVE) | STANDBY | Set HANDOVER to it, poll it |
//! | MASTER | heavy sweep finds a lower MASTER | MASTER | wait for its HANDOVER (C14-60.2.1): poll it, program nothing |
//! | MASTER | the polled master stops answering, or Set HANDOVER | MASTER | first-master heavy sweep |
//!
//! - **Higher** ([`outranks`]): higher priority, or the same priority and a lower port GUID
//!   (§14.4.1.1). The priority this SM compares and advertises is `sm_priority`, and
//!   `max(sm_priority, master_sm_priority)` while MASTER ([`SmRole::advertised_priority`]).
//! - **Polling**: every `sminfo_polling_timeout` the polled SM gets an SMInfo Get; an answer
//!   that shows it alive (MASTER; or, polled by a standby, a higher STANDBY) resets the count
//!   of missed polls, and at the tick that finds `polling_retry_number` (at least 1) polls in a
//!   row unanswered it is declared gone. A standby whose master answers but is lower than itself
//!   sends that master trap 144 (SM priority changed) so that it hands over; so does a master
//!   waiting for a lower master's HANDOVER.
//! - **SMInfo Set** ([`SmRole::handle_set`]): HANDOVER, DISABLE, STANDBY and DISCOVER are
//!   accepted only from a sender whose SMInfo (the Set's payload) says MASTER, ACKNOWLEDGE only
//!   from a STANDBY, and only where the table above has the transition; anything else is
//!   refused (the caller answers status 7, InvalidField). With a non-zero SM_Key, a Set or an
//!   SMInfo answer carrying another SM_Key is ignored (an SM of another administrative domain).

use core::time::Duration;

use ibmad::attr::sm_info::control;
use ibmad::attr::SmInfo;
use ibmad::{DrPath, Guid, Lid, SmState, Time};

use crate::event::Event;
use crate::sminfo::Facts;
use crate::timer::{Timer, TimerTable};

/// The SM's role (IBA vol1 §14.4). [`Role::code`] is the SMInfo.SMState value it reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Not taking part (entered by SMInfo Set DISABLE).
    NotActive,
    /// Sweeping to find out whether it should be master.
    Discovering,
    /// Another SM is master; this one polls it and programs nothing.
    Standby,
    /// This SM manages the subnet.
    Master,
}

impl Role {
    /// The SMInfo.SMState code (§14.2.5.13).
    #[must_use]
    pub fn code(self) -> SmState {
        match self {
            Role::NotActive => SmState::NOT_ACTIVE,
            Role::Discovering => SmState::DISCOVERING,
            Role::Standby => SmState::STANDBY,
            Role::Master => SmState::MASTER,
        }
    }

    /// OpenSM's name of the state, as in "Entering MASTER state".
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Role::NotActive => "NOT ACTIVE",
            Role::Discovering => "DISCOVERING",
            Role::Standby => "STANDBY",
            Role::Master => "MASTER",
        }
    }
}

impl core::fmt::Display for Role {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Another SM, as its SMInfo answer described it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteSm {
    /// Its port GUID (SMInfo.GUID).
    pub guid: Guid,
    /// SMInfo.Priority.
    pub priority: u8,
    /// SMInfo.SMState.
    pub state: SmState,
    /// SMInfo.ActCount.
    pub act_count: u32,
}

impl RemoteSm {
    /// From an SMInfo answer.
    #[must_use]
    pub fn from_sm_info(info: &SmInfo) -> RemoteSm {
        RemoteSm {
            guid: info.guid(),
            priority: info.priority(),
            state: info.sm_state(),
            act_count: info.act_count.get(),
        }
    }
}

/// Where another SM's port is: the directed route from this SM, and its LID if it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmAddr {
    /// The SM's port GUID.
    pub guid: Guid,
    /// Directed route to the node the port is on.
    pub path: DrPath,
    /// The port's LID (0 if unknown or unassigned).
    pub lid: Lid,
}

/// An SM this one knows of: its last SMInfo and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownSm {
    /// What its last SMInfo said.
    pub info: RemoteSm,
    /// Where it is.
    pub addr: SmAddr,
}

/// IBA vol1 §14.4.1.1: SM `a` outranks SM `b` if its priority is higher, or the priorities are
/// equal and its port GUID is lower. `(priority, guid)` pairs.
#[must_use]
pub fn outranks(a: (u8, Guid), b: (u8, Guid)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// The outcome of an election, at the end of a heavy sweep's SMInfo poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Election {
    /// No SM outranks this one: it is MASTER and programs the subnet.
    Master,
    /// This SM (DISCOVERING) stands by for that SM and polls it.
    Standby(RemoteSm),
    /// This SM was MASTER and found a higher SM: it hands over (SMInfo Set HANDOVER, queued as
    /// a [`RoleAction`]) and stands by for it.
    HandOver(RemoteSm),
    /// This SM is MASTER and found another, lower MASTER: it waits for that SM's HANDOVER
    /// (C14-60.2.1), polling it, and programs nothing meanwhile.
    WaitForHandover(RemoteSm),
}

/// What the role machine asks of the SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleAction {
    /// Run a heavy sweep now, from scratch (a first-master or coming-out-of-standby sweep, or a
    /// DISCOVERING one).
    Rediscover,
    /// Send an SMInfo Get to this SM (a poll).
    Poll(SmAddr),
    /// Send an SMInfo Set with this AttributeModifier ([`control`]) to this SM; `state` is the
    /// SMState this SM must report in the payload (the receiver checks it).
    Set {
        /// To whom.
        to: SmAddr,
        /// HANDOVER or ACKNOWLEDGE.
        attr_mod: u32,
        /// SMState in the payload.
        state: SmState,
    },
    /// Send trap 144 with the SM-priority-changed flag to this (master) SM.
    Trap144(SmAddr),
}

/// Why an SMInfo Set was refused (answered with status 7, InvalidField).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetRefused {
    /// The AttributeModifier is no SMInfo control value.
    BadModifier(u32),
    /// The sender's SMState does not allow this control (HANDOVER/DISABLE/STANDBY/DISCOVER need
    /// MASTER, ACKNOWLEDGE needs STANDBY).
    SenderState(SmState),
    /// This SM's state has no such transition.
    Transition(Role),
    /// The sender's SM_Key differs from this SM's non-zero SM_Key.
    SmKey,
}

impl core::fmt::Display for SetRefused {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SetRefused::BadModifier(m) => write!(f, "AttributeModifier {m} is no SMInfo control"),
            SetRefused::SenderState(s) => write!(f, "not allowed from a sender in state {s}"),
            SetRefused::Transition(r) => write!(f, "no such transition in {r} state"),
            SetRefused::SmKey => f.write_str("the sender's SM_Key does not match ours"),
        }
    }
}

/// Why the role changed ([`Event::RoleChanged`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleCause {
    /// A heavy sweep began (the SM was STANDBY or NOTACTIVE and is asked to sweep).
    Sweep,
    /// The election found no SM outranking this one.
    Elected,
    /// The election found this SM to stand by for.
    Outranked(RemoteSm),
    /// The polled master did not answer this many polls in a row (failover).
    MasterLost {
        /// The master's port GUID.
        master: Guid,
        /// Polls unanswered.
        misses: u32,
    },
    /// An SMInfo Set from this SM (HANDOVER, DISABLE, STANDBY, DISCOVER).
    SetFrom {
        /// The sender's port GUID.
        sender: Guid,
        /// The control value.
        attr_mod: u32,
    },
    /// This SM handed the subnet over to that SM.
    HandedOver(Guid),
}

/// The role machine's configuration (from [`crate::SmConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoleConfig {
    /// `sm_priority`, 0..=15.
    pub priority: u8,
    /// `master_sm_priority`, 0..=15; 0 = the same as `sm_priority`.
    pub master_priority: u8,
    /// `sminfo_polling_timeout`: time between two polls (zero: never poll).
    pub polling_timeout: Duration,
    /// `polling_retry_number`: polls in a row without an answer that mean the polled SM is
    /// gone (at least 1).
    pub polling_retries: u32,
    /// `sm_key`.
    pub sm_key: u64,
    /// `ignore_other_sm`: take no part in elections (always MASTER).
    pub ignore_other_sm: bool,
    /// `sm_inactive` (OpenSM `-I`): start in NOTACTIVE instead of DISCOVERING: no sweep until
    /// another SM sets this one to STANDBY.
    pub start_inactive: bool,
}

impl Default for RoleConfig {
    fn default() -> RoleConfig {
        RoleConfig {
            priority: 0,
            master_priority: 0,
            polling_timeout: Duration::from_secs(10),
            polling_retries: 4,
            sm_key: 1,
            ignore_other_sm: false,
            start_inactive: false,
        }
    }
}

/// The role state machine. See the module documentation.
#[derive(Debug)]
pub struct SmRole {
    cfg: RoleConfig,
    role: Role,
    /// This SM's port GUID, once discovery found it (0 before).
    own_guid: Guid,
    /// The other SMs the last heavy sweep found (and light sweeps refreshed).
    sms: Vec<KnownSm>,
    /// During an election: the SM this one would stand by for (DISCOVERING).
    contender: Option<KnownSm>,
    /// STANDBY: the master polled. MASTER: the lower master waited on for its HANDOVER.
    polled: Option<KnownSm>,
    /// Polls of `polled` in a row without an answer showing it alive.
    misses: u32,
    /// The last poll got such an answer.
    answered: bool,
    /// The next heavy sweep is this SM's first as master after another SM was (coming out of
    /// standby, or a HANDOVER received): LIDs come from the ports first, every port is told to
    /// re-register.
    takeover: bool,
    /// This SM has not finished a sweep as master yet (cold start or takeover).
    first_master_sweep: bool,
    actions: Vec<RoleAction>,
    events: Vec<Event>,
}

impl SmRole {
    /// A role machine; it starts DISCOVERING.
    #[must_use]
    pub fn new(cfg: RoleConfig) -> SmRole {
        SmRole {
            role: if cfg.start_inactive {
                Role::NotActive
            } else {
                Role::Discovering
            },
            cfg,
            own_guid: Guid(0),
            sms: Vec::new(),
            contender: None,
            polled: None,
            misses: 0,
            answered: true,
            takeover: false,
            first_master_sweep: true,
            actions: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The current role.
    #[must_use]
    pub fn role(&self) -> Role {
        self.role
    }

    /// In STANDBY: the master this SM stands by for (and polls).
    #[must_use]
    pub fn master(&self) -> Option<&RemoteSm> {
        match self.role {
            Role::Standby => self.polled.as_ref().map(|k| &k.info),
            _ => None,
        }
    }

    /// The SM this one polls: its master when STANDBY, or the lower master it waits on for a
    /// HANDOVER when MASTER.
    #[must_use]
    pub fn polled(&self) -> Option<&KnownSm> {
        self.polled.as_ref()
    }

    /// The other SMs known from the last heavy sweep (and light sweeps).
    #[must_use]
    pub fn known_sms(&self) -> &[KnownSm] {
        &self.sms
    }

    /// This SM's configured priority (`sm_priority`).
    #[must_use]
    pub fn priority(&self) -> u8 {
        self.cfg.priority
    }

    /// The priority this SM reports and compares: `sm_priority`, and while MASTER the higher of
    /// `sm_priority` and `master_sm_priority`.
    #[must_use]
    pub fn advertised_priority(&self) -> u8 {
        if self.role == Role::Master && self.cfg.master_priority != 0 {
            self.cfg.priority.max(self.cfg.master_priority).min(15)
        } else {
            self.cfg.priority.min(15)
        }
    }

    /// This SM's port GUID (0 until discovery found it).
    #[must_use]
    pub fn own_guid(&self) -> Guid {
        self.own_guid
    }

    /// Discovery found this SM's own port GUID (the election's tie-break).
    pub fn set_own_guid(&mut self, guid: Guid) {
        if guid.0 != 0 {
            self.own_guid = guid;
        }
    }

    /// True while this SM may sweep (DISCOVERING or MASTER); a STANDBY or NOTACTIVE SM sweeps
    /// only when the role machine itself asks ([`RoleAction::Rediscover`]).
    #[must_use]
    pub fn may_sweep(&self) -> bool {
        matches!(self.role, Role::Discovering | Role::Master)
    }

    /// True if the next (or current) heavy sweep takes over a subnet another SM managed:
    /// keep the LIDs the ports hold (ignore the guid2lid file unless honoured), read what the
    /// switches hold before writing, and ask every end port to re-register (ClientReregister).
    #[must_use]
    pub fn is_takeover(&self) -> bool {
        self.takeover
    }

    /// True until this SM has finished a heavy sweep as MASTER since it became master.
    #[must_use]
    pub fn is_first_master_sweep(&self) -> bool {
        self.first_master_sweep
    }

    /// A heavy sweep as MASTER brought the subnet up: the takeover is complete.
    pub fn master_sweep_done(&mut self) {
        if self.role == Role::Master {
            self.takeover = false;
            self.first_master_sweep = false;
        }
    }

    /// What the machine wants done since the last call (the caller executes them in order).
    pub fn take_actions(&mut self) -> Vec<RoleAction> {
        core::mem::take(&mut self.actions)
    }

    /// Events since the last call.
    pub fn take_events(&mut self) -> Vec<Event> {
        core::mem::take(&mut self.events)
    }

    fn enter(&mut self, to: Role, cause: RoleCause) {
        let from = self.role;
        self.role = to;
        if to == Role::Master && from != Role::Master {
            self.first_master_sweep = true;
        }
        self.events.push(Event::RoleChanged { from, to, cause });
    }

    fn start_polling(&mut self, now: Time, timers: &mut TimerTable, sm: KnownSm) {
        self.polled = Some(sm);
        self.misses = 0;
        self.answered = true;
        if self.cfg.polling_timeout.is_zero() {
            timers.stop(Timer::SmInfoPoll);
            return;
        }
        // One poll at once (OpenSM `sm_state_mgr_start_polling`), then one per tick.
        self.answered = false;
        self.actions.push(RoleAction::Poll(sm.addr));
        timers.set(Timer::SmInfoPoll, now + self.cfg.polling_timeout);
    }

    fn stop_polling(&mut self, timers: &mut TimerTable) {
        self.polled = None;
        self.misses = 0;
        timers.stop(Timer::SmInfoPoll);
    }

    /// A heavy sweep begins: a STANDBY or NOTACTIVE SM becomes DISCOVERING (a MASTER stays
    /// MASTER, keeping any poll of a master it waits on); the election starts over.
    pub fn begin_election(&mut self, timers: &mut TimerTable) {
        if matches!(self.role, Role::Standby | Role::NotActive) {
            self.stop_polling(timers);
            self.enter(Role::Discovering, RoleCause::Sweep);
        }
        self.contender = None;
        self.sms.clear();
    }

    /// An SMInfo answer from another SM during a heavy sweep's poll of the SM ports. It is
    /// remembered (for light sweeps and the handover decision); while DISCOVERING, a MASTER, or
    /// a higher DISCOVERING or STANDBY SM, becomes the SM to stand by for (a MASTER first, the
    /// highest of them). Answers with another non-zero SM_Key, and our own, are ignored.
    pub fn on_remote_sm(&mut self, info: &SmInfo, addr: SmAddr) {
        if self.cfg.ignore_other_sm || !self.accept(info) {
            return;
        }
        let sm = KnownSm {
            info: RemoteSm::from_sm_info(info),
            addr: SmAddr {
                guid: info.guid(),
                ..addr
            },
        };
        match self.sms.iter_mut().find(|k| k.info.guid == sm.info.guid) {
            Some(k) => *k = sm,
            None => self.sms.push(sm),
        }
        if self.role != Role::Discovering {
            return;
        }
        let r = sm.info;
        let counts = r.state == SmState::MASTER
            || ((r.state == SmState::DISCOVERING || r.state == SmState::STANDBY)
                && self.is_higher(&r));
        if !counts {
            return;
        }
        let better = match self.contender {
            None => true,
            Some(c) => {
                let (cm, rm) = (c.info.state == SmState::MASTER, r.state == SmState::MASTER);
                (rm && !cm)
                    || (rm == cm && outranks((r.priority, r.guid), (c.info.priority, c.info.guid)))
            }
        };
        if better {
            self.contender = Some(sm);
        }
    }

    /// True if `info` is from another SM whose SM_Key may be listened to.
    fn accept(&mut self, info: &SmInfo) -> bool {
        if info.guid() == self.own_guid || info.guid().0 == 0 {
            return false;
        }
        let key = info.sm_key.get();
        if self.cfg.sm_key != 0 && key != self.cfg.sm_key {
            self.events.push(Event::SmKeyMismatch {
                sm: info.guid(),
                sm_key: key,
            });
            return false;
        }
        true
    }

    /// True if `r` outranks this SM as it advertises itself now.
    fn is_higher(&self, r: &RemoteSm) -> bool {
        outranks(
            (r.priority, r.guid),
            (self.advertised_priority(), self.own_guid),
        )
    }

    /// Every SMInfo Get of a heavy sweep was answered or gave up: the election's outcome (see
    /// the module documentation).
    pub fn conclude_election(&mut self, now: Time, timers: &mut TimerTable) -> Election {
        match self.role {
            Role::Discovering => match self.contender.take() {
                Some(m) => {
                    self.enter(Role::Standby, RoleCause::Outranked(m.info));
                    self.start_polling(now, timers, m);
                    Election::Standby(m.info)
                }
                None => {
                    self.enter(Role::Master, RoleCause::Elected);
                    Election::Master
                }
            },
            Role::Master => {
                let highest = self
                    .sms
                    .iter()
                    .filter(|k| k.info.state != SmState::NOT_ACTIVE && self.is_higher(&k.info))
                    .copied()
                    .reduce(|a, b| {
                        if outranks(
                            (b.info.priority, b.info.guid),
                            (a.info.priority, a.info.guid),
                        ) {
                            b
                        } else {
                            a
                        }
                    });
                if let Some(h) = highest {
                    // The payload must say MASTER: the receiver checks the sender's state.
                    self.actions.push(RoleAction::Set {
                        to: h.addr,
                        attr_mod: control::HANDOVER,
                        state: SmState::MASTER,
                    });
                    self.enter(Role::Standby, RoleCause::HandedOver(h.info.guid));
                    self.takeover = false;
                    self.start_polling(now, timers, h);
                    return Election::HandOver(h.info);
                }
                let other_master = self
                    .sms
                    .iter()
                    .find(|k| k.info.state == SmState::MASTER)
                    .copied();
                if let Some(m) = other_master {
                    if self.polled.map(|p| p.info.guid) != Some(m.info.guid) {
                        self.start_polling(now, timers, m);
                    } else {
                        self.polled = Some(m);
                    }
                    self.actions.push(RoleAction::Trap144(m.addr));
                    return Election::WaitForHandover(m.info);
                }
                if self.polled.is_some() {
                    self.stop_polling(timers);
                }
                Election::Master
            }
            Role::Standby | Role::NotActive => match self.polled {
                Some(p) => Election::Standby(p.info),
                None => Election::Master,
            },
        }
    }

    /// [`Timer::SmInfoPoll`] fired: poll again, or declare the polled SM gone.
    pub fn handle_timeout(&mut self, now: Time, t: Timer, timers: &mut TimerTable) {
        if t != Timer::SmInfoPoll {
            return;
        }
        let Some(p) = self.polled else {
            return;
        };
        if !matches!(self.role, Role::Standby | Role::Master) {
            return;
        }
        if !self.answered {
            self.misses += 1;
        }
        if self.misses >= self.cfg.polling_retries.max(1) {
            let misses = self.misses;
            self.stop_polling(timers);
            match self.role {
                Role::Standby => {
                    // Failover (C14-61): the master is gone; sweep and elect.
                    self.takeover = true;
                    self.enter(
                        Role::Discovering,
                        RoleCause::MasterLost {
                            master: p.info.guid,
                            misses,
                        },
                    );
                    self.actions.push(RoleAction::Rediscover);
                }
                _ => {
                    // The master this one waited on is gone: sweep and configure.
                    self.events.push(Event::PolledSmLost {
                        sm: p.info.guid,
                        misses,
                    });
                    self.actions.push(RoleAction::Rediscover);
                }
            }
            return;
        }
        self.answered = false;
        self.actions.push(RoleAction::Poll(p.addr));
        timers.set(Timer::SmInfoPoll, now + self.cfg.polling_timeout);
    }

    /// The answer to a poll ([`RoleAction::Poll`]).
    pub fn on_poll_answer(&mut self, info: &SmInfo) {
        let Some(p) = self.polled else {
            return;
        };
        if info.guid() != p.info.guid || !self.accept(info) {
            return;
        }
        let r = RemoteSm::from_sm_info(info);
        let higher = self.is_higher(&r);
        let alive = match (self.role, r.state) {
            (Role::Standby, SmState::MASTER) => {
                if !higher {
                    // We outrank our master: ask it to hand over.
                    self.actions.push(RoleAction::Trap144(p.addr));
                }
                true
            }
            // Polled while it was master and now standing by: alive only if still higher.
            (Role::Standby, SmState::STANDBY) => higher,
            (Role::Master, SmState::MASTER) => {
                if higher {
                    self.actions.push(RoleAction::Rediscover);
                } else {
                    self.actions.push(RoleAction::Trap144(p.addr));
                }
                true
            }
            _ => false,
        };
        if let Some(k) = self.polled.as_mut() {
            k.info = r;
        }
        if alive {
            self.misses = 0;
            self.answered = true;
        }
    }

    /// An SMInfo answer from a known SM during a light sweep: a MASTER that sees another
    /// MASTER, or a higher STANDBY, sweeps heavily (the handover logic runs after it). Returns
    /// true if a heavy sweep is needed.
    pub fn on_light_sweep_sm(&mut self, info: &SmInfo) -> bool {
        if self.role != Role::Master || self.cfg.ignore_other_sm || !self.accept(info) {
            return false;
        }
        let r = RemoteSm::from_sm_info(info);
        let known = self.sms.iter_mut().find(|k| k.info.guid == r.guid);
        let changed = match known {
            Some(k) => {
                let c = k.info.state != r.state || k.info.priority != r.priority;
                k.info = r;
                c
            }
            None => true,
        };
        let needs =
            r.state == SmState::MASTER || (r.state == SmState::STANDBY && self.is_higher(&r));
        needs && (changed || self.polled.is_none())
    }

    /// SubnSet(SMInfo) from another SM: `attr_mod` is the control value, `sender` the Set's
    /// payload (the sender's own SMInfo), `from` where the sender is (if known). On success the
    /// state changed as the module table says (and actions are queued); on refusal nothing
    /// changed and the caller answers status 7.
    pub fn handle_set(
        &mut self,
        now: Time,
        timers: &mut TimerTable,
        attr_mod: u32,
        sender: &SmInfo,
        from: SmAddr,
    ) -> Result<(), SetRefused> {
        let key = sender.sm_key.get();
        if self.cfg.sm_key != 0 && key != self.cfg.sm_key {
            return Err(SetRefused::SmKey);
        }
        let s = sender.sm_state();
        // Sender legality (OpenSM smi_rcv_check_set_req_legality).
        match attr_mod {
            control::ACKNOWLEDGE if s != SmState::STANDBY => {
                return Err(SetRefused::SenderState(s))
            }
            control::HANDOVER | control::DISABLE | control::STANDBY | control::DISCOVER
                if s != SmState::MASTER =>
            {
                return Err(SetRefused::SenderState(s))
            }
            control::HANDOVER
            | control::ACKNOWLEDGE
            | control::DISABLE
            | control::STANDBY
            | control::DISCOVER => {}
            m => return Err(SetRefused::BadModifier(m)),
        }
        // Transition legality (osm_sm_state_mgr_check_legality).
        let legal = matches!(
            (self.role, attr_mod),
            (Role::Discovering, control::HANDOVER)
                | (
                    Role::Standby,
                    control::DISCOVER | control::DISABLE | control::HANDOVER | control::ACKNOWLEDGE
                )
                | (Role::NotActive, control::STANDBY)
                | (Role::Master, control::HANDOVER)
        );
        if !legal {
            return Err(SetRefused::Transition(self.role));
        }
        let known = self
            .sms
            .iter()
            .find(|k| k.info.guid == sender.guid())
            .copied();
        let addr = known.map_or(
            SmAddr {
                guid: sender.guid(),
                ..from
            },
            |k| k.addr,
        );
        let cause = RoleCause::SetFrom {
            sender: sender.guid(),
            attr_mod,
        };
        match (self.role, attr_mod) {
            (Role::Discovering, _) => self.actions.push(RoleAction::Rediscover),
            (Role::Standby, control::HANDOVER) => {
                // Acknowledge as the standby that received it, then take over.
                self.actions.push(RoleAction::Set {
                    to: addr,
                    attr_mod: control::ACKNOWLEDGE,
                    state: SmState::STANDBY,
                });
                self.stop_polling(timers);
                self.takeover = true;
                self.enter(Role::Master, cause);
                self.actions.push(RoleAction::Rediscover);
            }
            (Role::Standby, control::DISCOVER) => {
                self.stop_polling(timers);
                self.takeover = true;
                self.enter(Role::Discovering, cause);
                self.actions.push(RoleAction::Rediscover);
            }
            (Role::Standby, control::DISABLE) => {
                self.stop_polling(timers);
                self.enter(Role::NotActive, cause);
            }
            (Role::NotActive, _) => {
                let info = RemoteSm::from_sm_info(sender);
                self.enter(Role::Standby, cause);
                self.start_polling(now, timers, KnownSm { info, addr });
            }
            (Role::Master, _) => {
                // The master we waited on handed over: configure the subnet afresh.
                self.stop_polling(timers);
                self.takeover = true;
                self.first_master_sweep = true;
                self.actions.push(RoleAction::Rediscover);
            }
            _ => {} // ACKNOWLEDGE in STANDBY: nothing to do
        }
        Ok(())
    }

    /// What this SM reports in SMInfo (the answer to another SM's Get, the payload of its
    /// Sets).
    #[must_use]
    pub fn sminfo_facts(&self, m_key: u64, act_count: u32) -> Facts {
        Facts {
            guid: self.own_guid,
            sm_key: self.cfg.sm_key,
            m_key,
            act_count,
            priority: self.advertised_priority(),
            state: self.role.code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::zerocopy::FromZeros;

    fn info(guid: u64, priority: u8, state: SmState) -> SmInfo {
        let mut i = SmInfo::new_zeroed();
        i.guid.set(guid);
        i.sm_key.set(1);
        i.set_priority(priority);
        i.set_sm_state_raw(state.0);
        i
    }

    fn addr(guid: u64) -> SmAddr {
        SmAddr {
            guid: Guid(guid),
            path: DrPath::new(&[1, u8::try_from(guid & 0x3F).unwrap()]).unwrap(),
            lid: Lid(u16::try_from(guid & 0xFF).unwrap()),
        }
    }

    fn role(priority: u8, master_priority: u8) -> SmRole {
        let mut r = SmRole::new(RoleConfig {
            priority,
            master_priority,
            polling_timeout: Duration::from_secs(10),
            polling_retries: 3,
            ..RoleConfig::default()
        });
        r.set_own_guid(Guid(0x50));
        r
    }

    fn master(p: u8) -> (SmRole, TimerTable) {
        let mut t = TimerTable::default();
        let mut r = role(p, 0);
        r.begin_election(&mut t);
        assert_eq!(r.conclude_election(Time(0), &mut t), Election::Master);
        r.take_events();
        (r, t)
    }

    fn standby_for(p: u8, m: u64, mp: u8) -> (SmRole, TimerTable) {
        let mut t = TimerTable::default();
        let mut r = role(p, 0);
        r.begin_election(&mut t);
        r.on_remote_sm(&info(m, mp, SmState::MASTER), addr(m));
        assert!(matches!(
            r.conclude_election(Time(0), &mut t),
            Election::Standby(_)
        ));
        r.take_actions();
        r.take_events();
        (r, t)
    }

    #[test]
    fn c14_4_1_1_priority_then_lower_guid_wins() {
        assert!(outranks((5, Guid(9)), (4, Guid(1))));
        assert!(!outranks((4, Guid(1)), (5, Guid(9))));
        assert!(outranks((5, Guid(1)), (5, Guid(2))));
        assert!(!outranks((5, Guid(2)), (5, Guid(2))), "not itself");
    }

    #[test]
    fn discovering_stands_by_for_any_master_or_a_higher_standby_or_discovering_sm() {
        let mut t = TimerTable::default();
        let mut r = role(3, 0);
        r.begin_election(&mut t);
        r.on_remote_sm(&info(0x10, 2, SmState::STANDBY), addr(0x10)); // lower standby
        r.on_remote_sm(&info(0x60, 3, SmState::DISCOVERING), addr(0x60)); // same prio, higher GUID
        assert_eq!(r.conclude_election(Time(0), &mut t), Election::Master);
        assert_eq!(r.role(), Role::Master);

        // A lower MASTER still wins the election of a DISCOVERING SM (OpenSM: master found).
        let mut r = role(9, 0);
        r.begin_election(&mut t);
        r.on_remote_sm(&info(0x20, 12, SmState::STANDBY), addr(0x20));
        r.on_remote_sm(&info(0x40, 1, SmState::MASTER), addr(0x40));
        let e = r.conclude_election(Time(100), &mut t);
        assert!(
            matches!(e, Election::Standby(m) if m.guid == Guid(0x40)),
            "{e:?}"
        );
        assert_eq!(r.role(), Role::Standby);
        assert_eq!(r.master().unwrap().guid, Guid(0x40));
        // Polling starts at once and the timer is armed.
        assert_eq!(r.take_actions(), vec![RoleAction::Poll(addr(0x40))]);
        assert_eq!(
            t.get(Timer::SmInfoPoll),
            Some(Time(100) + Duration::from_secs(10))
        );
        // A higher standby alone is enough.
        let mut r = role(3, 0);
        r.begin_election(&mut t);
        r.on_remote_sm(&info(0x70, 7, SmState::STANDBY), addr(0x70));
        assert!(matches!(
            r.conclude_election(Time(0), &mut t),
            Election::Standby(_)
        ));
    }

    #[test]
    fn sm_key_mismatch_and_own_answer_are_ignored() {
        let mut t = TimerTable::default();
        let mut r = role(0, 0);
        r.begin_election(&mut t);
        let mut other = info(0x10, 15, SmState::MASTER);
        other.sm_key.set(0xBAD);
        r.on_remote_sm(&other, addr(0x10));
        r.on_remote_sm(&info(0x50, 15, SmState::MASTER), addr(0x50)); // ourselves
        assert_eq!(r.conclude_election(Time(0), &mut t), Election::Master);
        assert!(r
            .take_events()
            .iter()
            .any(|e| matches!(e, Event::SmKeyMismatch { sm, .. } if *sm == Guid(0x10))));
        // SM_Key 0 listens to everyone.
        let mut r = SmRole::new(RoleConfig {
            sm_key: 0,
            ..RoleConfig::default()
        });
        r.set_own_guid(Guid(0x50));
        r.begin_election(&mut t);
        r.on_remote_sm(&other, addr(0x10));
        assert!(matches!(
            r.conclude_election(Time(0), &mut t),
            Election::Standby(_)
        ));
    }

    #[test]
    fn standby_polls_and_fails_over_after_the_retry_number_of_misses() {
        let (mut r, mut t) = standby_for(0, 0x10, 5);
        let tick = Duration::from_secs(10);
        // Answered polls keep it standing by (and it outranks nobody: no trap).
        for k in 1..=5u64 {
            r.on_poll_answer(&info(0x10, 5, SmState::MASTER));
            r.handle_timeout(Time(0) + tick * k as u32, Timer::SmInfoPoll, &mut t);
            assert_eq!(r.take_actions(), vec![RoleAction::Poll(addr(0x10))]);
            assert_eq!(r.role(), Role::Standby);
        }
        // The master dies: polls 1, 2 unanswered → still standby; the 3rd miss fails over.
        let base = Time(0) + tick * 5;
        r.handle_timeout(base + tick, Timer::SmInfoPoll, &mut t);
        r.handle_timeout(base + tick * 2, Timer::SmInfoPoll, &mut t);
        assert_eq!(r.role(), Role::Standby);
        r.take_actions();
        r.handle_timeout(base + tick * 3, Timer::SmInfoPoll, &mut t);
        assert_eq!(r.role(), Role::Discovering);
        assert_eq!(r.take_actions(), vec![RoleAction::Rediscover]);
        assert!(r.is_takeover());
        assert_eq!(t.get(Timer::SmInfoPoll), None);
        assert!(r.take_events().iter().any(|e| matches!(
            e,
            Event::RoleChanged {
                to: Role::Discovering,
                cause: RoleCause::MasterLost { misses: 3, .. },
                ..
            }
        )));
        // The heavy sweep finds nobody: MASTER.
        r.begin_election(&mut t);
        assert_eq!(
            r.conclude_election(base + tick * 4, &mut t),
            Election::Master
        );
        assert!(r.is_takeover() && r.is_first_master_sweep());
        r.master_sweep_done();
        assert!(!r.is_takeover() && !r.is_first_master_sweep());
    }

    #[test]
    fn a_standby_that_outranks_its_master_sends_trap_144() {
        let (mut r, mut t) = standby_for(14, 0x10, 13);
        r.on_poll_answer(&info(0x10, 13, SmState::MASTER));
        assert_eq!(r.take_actions(), vec![RoleAction::Trap144(addr(0x10))]);
        // Advertising 15 as master (master_sm_priority) keeps it quiet.
        r.on_poll_answer(&info(0x10, 15, SmState::MASTER));
        assert!(r.take_actions().is_empty());
        let _ = &mut t;
    }

    #[test]
    fn master_sm_priority_is_advertised_only_while_master() {
        let mut t = TimerTable::default();
        let mut r = role(13, 15);
        assert_eq!(r.advertised_priority(), 13);
        assert_eq!(r.sminfo_facts(0, 1).priority, 13);
        r.begin_election(&mut t);
        assert_eq!(r.conclude_election(Time(0), &mut t), Election::Master);
        assert_eq!(r.advertised_priority(), 15);
        assert_eq!(r.sminfo_facts(0, 1).priority, 15);
        // DF-2: a recovered priority-14 standby does not outrank a master advertising 15.
        r.begin_election(&mut t);
        r.on_remote_sm(&info(0x10, 14, SmState::STANDBY), addr(0x10));
        assert_eq!(r.conclude_election(Time(1), &mut t), Election::Master);
    }

    #[test]
    fn a_master_hands_over_to_a_higher_sm_and_polls_it() {
        let (mut r, mut t) = master(13);
        r.begin_election(&mut t);
        r.on_remote_sm(&info(0x10, 14, SmState::STANDBY), addr(0x10));
        r.on_remote_sm(&info(0x11, 2, SmState::STANDBY), addr(0x11));
        let e = r.conclude_election(Time(7), &mut t);
        assert!(matches!(e, Election::HandOver(m) if m.guid == Guid(0x10)));
        assert_eq!(r.role(), Role::Standby);
        assert_eq!(
            r.take_actions(),
            vec![
                RoleAction::Set {
                    to: addr(0x10),
                    attr_mod: control::HANDOVER,
                    state: SmState::MASTER
                },
                RoleAction::Poll(addr(0x10)),
            ]
        );
        // The new master answers as MASTER: alive. The ACKNOWLEDGE it sends is accepted.
        r.on_poll_answer(&info(0x10, 14, SmState::MASTER));
        assert!(r.take_actions().is_empty());
        assert_eq!(
            r.handle_set(
                Time(8),
                &mut t,
                control::ACKNOWLEDGE,
                &info(0x10, 14, SmState::STANDBY),
                addr(0x10)
            ),
            Ok(())
        );
        assert_eq!(r.role(), Role::Standby);
    }

    #[test]
    fn a_master_finding_a_lower_master_waits_for_its_handover() {
        let (mut r, mut t) = master(9);
        r.begin_election(&mut t);
        r.on_remote_sm(&info(0x10, 3, SmState::MASTER), addr(0x10));
        let e = r.conclude_election(Time(0), &mut t);
        assert!(matches!(e, Election::WaitForHandover(_)));
        assert_eq!(r.role(), Role::Master);
        assert_eq!(
            r.take_actions(),
            vec![
                RoleAction::Poll(addr(0x10)),
                RoleAction::Trap144(addr(0x10))
            ]
        );
        // Its HANDOVER arrives: a first-master sweep.
        assert_eq!(
            r.handle_set(
                Time(1),
                &mut t,
                control::HANDOVER,
                &info(0x10, 3, SmState::MASTER),
                addr(0x10)
            ),
            Ok(())
        );
        assert_eq!(r.take_actions(), vec![RoleAction::Rediscover]);
        assert_eq!(r.polled(), None);
        assert!(r.is_first_master_sweep());
    }

    #[test]
    fn c14_4_set_legality_by_sender_state_and_transition() {
        let m = info(0x10, 5, SmState::MASTER);
        let s = info(0x10, 5, SmState::STANDBY);
        // ACKNOWLEDGE only from a standby; the others only from a master.
        let (mut r, mut t) = standby_for(0, 0x10, 5);
        assert_eq!(
            r.handle_set(Time(1), &mut t, control::ACKNOWLEDGE, &m, addr(0x10)),
            Err(SetRefused::SenderState(SmState::MASTER))
        );
        for am in [
            control::HANDOVER,
            control::DISABLE,
            control::STANDBY,
            control::DISCOVER,
        ] {
            assert_eq!(
                r.handle_set(Time(1), &mut t, am, &s, addr(0x10)),
                Err(SetRefused::SenderState(SmState::STANDBY)),
                "{am}"
            );
        }
        assert_eq!(
            r.handle_set(Time(1), &mut t, 9, &m, addr(0x10)),
            Err(SetRefused::BadModifier(9))
        );
        // STANDBY in STANDBY state is no transition.
        assert_eq!(
            r.handle_set(Time(1), &mut t, control::STANDBY, &m, addr(0x10)),
            Err(SetRefused::Transition(Role::Standby))
        );
        // A foreign SM_Key is refused.
        let mut foreign = m;
        foreign.sm_key.set(7);
        assert_eq!(
            r.handle_set(Time(1), &mut t, control::DISCOVER, &foreign, addr(0x10)),
            Err(SetRefused::SmKey)
        );
        assert_eq!(r.role(), Role::Standby, "nothing changed");
        // DISABLE → NOTACTIVE; then STANDBY → STANDBY polling the sender.
        assert_eq!(
            r.handle_set(Time(1), &mut t, control::DISABLE, &m, addr(0x10)),
            Ok(())
        );
        assert_eq!(r.role(), Role::NotActive);
        assert_eq!(t.get(Timer::SmInfoPoll), None);
        assert_eq!(
            r.handle_set(Time(2), &mut t, control::HANDOVER, &m, addr(0x10)),
            Err(SetRefused::Transition(Role::NotActive))
        );
        r.take_actions();
        assert_eq!(
            r.handle_set(Time(2), &mut t, control::STANDBY, &m, addr(0x10)),
            Ok(())
        );
        assert_eq!(r.role(), Role::Standby);
        assert_eq!(r.take_actions(), vec![RoleAction::Poll(addr(0x10))]);
        // DISCOVER → DISCOVERING and a sweep.
        assert_eq!(
            r.handle_set(Time(3), &mut t, control::DISCOVER, &m, addr(0x10)),
            Ok(())
        );
        assert_eq!(r.role(), Role::Discovering);
        assert_eq!(r.take_actions(), vec![RoleAction::Rediscover]);
        // A MASTER refuses everything but HANDOVER.
        let (mut r, mut t) = master(3);
        for am in [control::DISABLE, control::STANDBY, control::DISCOVER] {
            assert_eq!(
                r.handle_set(Time(1), &mut t, am, &m, addr(0x10)),
                Err(SetRefused::Transition(Role::Master))
            );
        }
        assert_eq!(
            r.handle_set(Time(1), &mut t, control::ACKNOWLEDGE, &s, addr(0x10)),
            Err(SetRefused::Transition(Role::Master))
        );
    }

    #[test]
    fn a_standby_receiving_handover_acknowledges_and_becomes_master() {
        let (mut r, mut t) = standby_for(3, 0x10, 9);
        assert_eq!(
            r.handle_set(
                Time(5),
                &mut t,
                control::HANDOVER,
                &info(0x10, 9, SmState::MASTER),
                addr(0x10)
            ),
            Ok(())
        );
        assert_eq!(r.role(), Role::Master);
        assert_eq!(
            r.take_actions(),
            vec![
                RoleAction::Set {
                    to: addr(0x10),
                    attr_mod: control::ACKNOWLEDGE,
                    state: SmState::STANDBY
                },
                RoleAction::Rediscover
            ]
        );
        assert!(r.is_takeover());
        assert_eq!(t.get(Timer::SmInfoPoll), None);
    }

    #[test]
    fn light_sweep_asks_for_a_heavy_sweep_on_a_master_or_higher_standby() {
        let (mut r, mut t) = master(5);
        r.begin_election(&mut t);
        r.on_remote_sm(&info(0x10, 2, SmState::STANDBY), addr(0x10));
        assert_eq!(r.conclude_election(Time(0), &mut t), Election::Master);
        assert!(!r.on_light_sweep_sm(&info(0x10, 2, SmState::STANDBY)));
        assert!(
            r.on_light_sweep_sm(&info(0x10, 9, SmState::STANDBY)),
            "raised its priority"
        );
        assert!(
            r.on_light_sweep_sm(&info(0x10, 2, SmState::MASTER)),
            "a second master"
        );
    }

    #[test]
    fn no_polling_timeout_means_no_poll_timer() {
        let mut t = TimerTable::default();
        let mut r = SmRole::new(RoleConfig {
            polling_timeout: Duration::ZERO,
            ..RoleConfig::default()
        });
        r.begin_election(&mut t);
        r.on_remote_sm(&info(0x1, 15, SmState::MASTER), addr(0x1));
        assert!(matches!(
            r.conclude_election(Time(5), &mut t),
            Election::Standby(_)
        ));
        assert_eq!(t.next_timeout(), None);
        assert!(r.take_actions().is_empty());
    }
}

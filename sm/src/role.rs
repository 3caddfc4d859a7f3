//! The IBA SM role (vol1 §14.4 "Subnet Manager states"): NOTACTIVE, DISCOVERING, STANDBY,
//! MASTER — whether this SM may program the subnet — as a state machine of its own, apart from
//! the sweep pipeline ([`crate::sweep`]) that discovers, assigns LIDs, routes and programs.
//!
//! The two meet at three points, all driven by [`crate::Sm`]:
//! 1. a heavy sweep begins → [`SmRole::begin_election`] (a STANDBY SM becomes DISCOVERING);
//! 2. discovery is done and the other SMs' SMInfo answers are in ([`SmRole::on_remote_sm`]) →
//!    [`SmRole::conclude_election`] decides: [`Election::Master`] (the pipeline carries on and
//!    programs) or [`Election::Standby`] (it stops; this SM programs nothing);
//! 3. a role timer fires → [`SmRole::handle_timeout`] says what the pipeline should do
//!    ([`RoleAction`]).
//!
//! The machine reads no clock and sends nothing itself: it arms its timers in the SM's
//! [`TimerTable`] and answers with values.
//!
//! # What it does (wave 1 behaviour)
//! - It starts DISCOVERING and answers SMInfo Get in every state ([`SmRole::sminfo_facts`]).
//! - The election (§14.4.1.1): another SM that is MASTER or DISCOVERING and outranks this one
//!   ([`outranks`]: higher priority, or the same priority and a lower port GUID) puts this SM in
//!   STANDBY; otherwise it becomes MASTER.
//! - In STANDBY the role timer [`Timer::SmInfoPoll`] fires every sweep interval and asks for a
//!   heavy sweep ([`RoleAction::Rediscover`]): the SM rediscovers and re-runs the election, so
//!   it takes over once the master is gone.
//!
//! # Where the rest of §14.4 goes (issue 12)
//! - Standby polling: on [`Timer::SmInfoPoll`] a STANDBY SM polls [`SmRole::master`] with
//!   SMInfo Get instead of rediscovering (a new [`RoleAction`] carrying the Get), counts missed
//!   answers, and after `polling_retry_number` misses goes DISCOVERING (failover).
//! - SubnSet(SMInfo) with AttrMod HANDOVER / ACKNOWLEDGE / DISABLE / STANDBY / DISCOVER: a
//!   `handle_set(attr_mod, sender)` here, returning the transition or the status-7 refusal of
//!   an illegal one.
//! - Handover: [`SmRole::conclude_election`] returning a third outcome for a MASTER that finds
//!   a higher SM (send HANDOVER, then STANDBY and polling).
//! - ActCount and `master_sm_priority` in [`SmRole::sminfo_facts`].

use core::time::Duration;

use ibmad::attr::SmInfo;
use ibmad::{Guid, SmState, Time};

use crate::sminfo::Facts;
use crate::timer::{Timer, TimerTable};

/// The SM's role (IBA vol1 §14.4). [`Role::code`] is the SMInfo.SMState value it reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Not taking part (entered by SMInfo Set DISABLE; not used yet).
    NotActive,
    /// Sweeping to find out whether it should be master.
    Discovering,
    /// Another SM is master; this one programs nothing.
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

/// IBA vol1 §14.4.1.1: SM `a` outranks SM `b` if its priority is higher, or the priorities are
/// equal and its port GUID is lower. `(priority, guid)` pairs.
#[must_use]
pub fn outranks(a: (u8, Guid), b: (u8, Guid)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// The outcome of an election.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Election {
    /// No SM outranks this one: it is MASTER and programs the subnet.
    Master,
    /// This SM stands by for that master.
    Standby(RemoteSm),
}

/// What the role machine asks of the sweep pipeline after a timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum RoleAction {
    /// Nothing.
    None,
    /// Run a heavy sweep (which re-runs the election).
    Rediscover,
}

/// The role state machine. See the module documentation.
#[derive(Debug)]
pub struct SmRole {
    role: Role,
    priority: u8,
    /// How often a STANDBY SM checks on its master.
    check_interval: Duration,
    /// This SM's port GUID, once discovery found it (0 before).
    own_guid: Guid,
    /// During an election: the highest-ranked SM seen so far that outranks this one.
    contender: Option<RemoteSm>,
    /// In STANDBY: the master.
    master: Option<RemoteSm>,
}

impl SmRole {
    /// A role machine for an SM of `priority` (0..=15) that, in STANDBY, checks on its master
    /// every `check_interval` (zero: never). It starts DISCOVERING.
    #[must_use]
    pub fn new(priority: u8, check_interval: Duration) -> SmRole {
        SmRole {
            role: Role::Discovering,
            priority,
            check_interval,
            own_guid: Guid(0),
            contender: None,
            master: None,
        }
    }

    /// The current role.
    #[must_use]
    pub fn role(&self) -> Role {
        self.role
    }

    /// In STANDBY: the master this SM stands by for.
    #[must_use]
    pub fn master(&self) -> Option<&RemoteSm> {
        self.master.as_ref()
    }

    /// This SM's priority.
    #[must_use]
    pub fn priority(&self) -> u8 {
        self.priority
    }

    /// A heavy sweep begins: a STANDBY or NOTACTIVE SM becomes DISCOVERING (a MASTER stays
    /// MASTER); the election starts over.
    pub fn begin_election(&mut self, timers: &mut TimerTable) {
        if matches!(self.role, Role::Standby | Role::NotActive) {
            self.role = Role::Discovering;
        }
        self.contender = None;
        timers.stop(Timer::SmInfoPoll);
    }

    /// Discovery found this SM's own port GUID (the election's tie-break).
    pub fn set_own_guid(&mut self, guid: Guid) {
        self.own_guid = guid;
    }

    /// An SMInfo answer from another SM during the election. Only a MASTER or DISCOVERING SM
    /// that outranks this one counts; the highest-ranked such SM is remembered.
    pub fn on_remote_sm(&mut self, sm: RemoteSm) {
        if sm.state != SmState::MASTER && sm.state != SmState::DISCOVERING {
            return;
        }
        if !outranks((sm.priority, sm.guid), (self.priority, self.own_guid)) {
            return;
        }
        if self
            .contender
            .is_none_or(|c| outranks((sm.priority, sm.guid), (c.priority, c.guid)))
        {
            self.contender = Some(sm);
        }
    }

    /// Every SMInfo Get of the election was answered or gave up: STANDBY if another SM
    /// outranks this one (arming [`Timer::SmInfoPoll`]), else MASTER.
    pub fn conclude_election(&mut self, now: Time, timers: &mut TimerTable) -> Election {
        match self.contender.take() {
            Some(m) => {
                self.role = Role::Standby;
                self.master = Some(m);
                if !self.check_interval.is_zero() {
                    timers.set(Timer::SmInfoPoll, now + self.check_interval);
                }
                Election::Standby(m)
            }
            None => {
                self.role = Role::Master;
                self.master = None;
                Election::Master
            }
        }
    }

    /// A role timer fired (the caller passes only role timers).
    pub fn handle_timeout(&mut self, t: Timer) -> RoleAction {
        match (t, self.role) {
            // Wave 1 has no SMInfo polling: checking on the master means rediscovering.
            (Timer::SmInfoPoll, Role::Standby) => RoleAction::Rediscover,
            _ => RoleAction::None,
        }
    }

    /// What this SM reports in SMInfo (the answer to another SM's Get).
    #[must_use]
    pub fn sminfo_facts(&self, sm_key: u64, m_key: u64, act_count: u32) -> Facts {
        Facts {
            guid: self.own_guid,
            sm_key,
            m_key,
            act_count,
            priority: self.priority,
            state: self.role.code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(guid: u64, priority: u8, state: SmState) -> RemoteSm {
        RemoteSm {
            guid: Guid(guid),
            priority,
            state,
            act_count: 0,
        }
    }

    #[test]
    fn c14_4_1_1_priority_then_lower_guid_wins() {
        assert!(outranks((5, Guid(9)), (4, Guid(1))));
        assert!(!outranks((4, Guid(1)), (5, Guid(9))));
        assert!(outranks((5, Guid(1)), (5, Guid(2))));
        assert!(!outranks((5, Guid(2)), (5, Guid(2))), "not itself");
    }

    #[test]
    fn outranked_by_a_master_or_discovering_sm_stands_by() {
        let mut t = TimerTable::default();
        let mut r = SmRole::new(3, Duration::from_secs(10));
        assert_eq!(r.role(), Role::Discovering);
        r.set_own_guid(Guid(0x50));
        r.begin_election(&mut t);
        r.on_remote_sm(remote(0x10, 9, SmState::STANDBY)); // standbys do not count
        r.on_remote_sm(remote(0x60, 3, SmState::DISCOVERING)); // same prio, higher GUID
        r.on_remote_sm(remote(0x40, 3, SmState::MASTER));
        r.on_remote_sm(remote(0x70, 7, SmState::MASTER));
        r.on_remote_sm(remote(0x20, 5, SmState::DISCOVERING));
        let e = r.conclude_election(Time(100), &mut t);
        assert_eq!(e, Election::Standby(remote(0x70, 7, SmState::MASTER)));
        assert_eq!(r.role(), Role::Standby);
        assert_eq!(r.sminfo_facts(0, 0, 1).state, SmState::STANDBY);
        assert_eq!(
            t.get(Timer::SmInfoPoll),
            Some(Time(100) + Duration::from_secs(10))
        );
        assert_eq!(r.handle_timeout(Timer::SmInfoPoll), RoleAction::Rediscover);
        // The next heavy sweep: DISCOVERING again, nobody outranks → MASTER.
        r.begin_election(&mut t);
        assert_eq!(r.role(), Role::Discovering);
        assert_eq!(t.get(Timer::SmInfoPoll), None);
        assert_eq!(r.conclude_election(Time(200), &mut t), Election::Master);
        assert_eq!(r.role(), Role::Master);
        assert_eq!(r.sminfo_facts(0, 0, 1).state, SmState::MASTER);
        assert_eq!(r.handle_timeout(Timer::SmInfoPoll), RoleAction::None);
        // A master re-sweeping stays master through the election.
        r.begin_election(&mut t);
        assert_eq!(r.role(), Role::Master);
    }

    #[test]
    fn no_check_interval_means_no_standby_timer() {
        let mut t = TimerTable::default();
        let mut r = SmRole::new(0, Duration::ZERO);
        r.on_remote_sm(remote(0x1, 15, SmState::MASTER));
        assert!(matches!(
            r.conclude_election(Time(5), &mut t),
            Election::Standby(_)
        ));
        assert_eq!(t.next_timeout(), None);
    }
}

//! What the SM tells its owner ([`Event`], drained with [`crate::Sm::poll_event`]) and what the
//! owner tells the SM ([`Command`], given to [`crate::Sm::handle_command`]).
//!
//! Failures are typed events, not log strings (STYLE P11): an unreachable node
//! ([`Event::NodeUnreachable`]), an error status ([`Event::ErrorStatus`]), a duplicate GUID, a
//! NodeInfo that describes no node, programming Sets that failed, a failed sweep with its
//! [`SweepFailure`]. Progress lines are [`Event::Log`] events — the SM has no logger.
//!
//! **Rendering is here, in one place:** [`Event::log_line`] gives every event's log line
//! (OpenSM-style text with its `ERR xxxx` code where it has one, without timestamp) or `None`
//! for events that are data only. `ibsm run` writes those lines to its log file in OpenSM's
//! format, `ibsm sim` to its output with the virtual time; neither formats an event itself.

use std::collections::VecDeque;

use core::fmt;
use core::time::Duration;

use ibmad::{DrPath, Guid, Lid, Method, SmpAttrId, Status, TrapNum};

use crate::lid::{Guid2LidWarning, LidError};
use crate::role::{Role, RoleCause, SetRefused};
use crate::routing::RouteError;

/// Severity of a [`Event::Log`] line (OpenSM's log levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// An error (OpenSM `OSM_LOG_ERROR`).
    Error,
    /// Something odd but handled.
    Warn,
    /// Normal progress (OpenSM `OSM_LOG_INFO`), e.g. "SUBNET UP".
    Info,
    /// Detail (OpenSM `OSM_LOG_VERBOSE`).
    Verbose,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Error => "ERR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Verbose => "VERBOSE",
        })
    }
}

/// A phase of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Directed-route walk of the fabric.
    Discovery,
    /// LID assignment (pure computation).
    LidAssignment,
    /// Routing-engine run (pure computation).
    Routing,
    /// SwitchInfo, LFT and PortInfo configuration Sets.
    Programming,
    /// Init → Armed Sets.
    Arming,
    /// Armed → Active Sets.
    Activation,
    /// A light sweep (SwitchInfo re-read).
    LightSweep,
    /// After SUBNET UP: the SL-to-VL and VLArbitration tables the SM does not program are read
    /// for the SA (`read_qos_tables`); not part of the heavy sweep's figures.
    QosRead,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Discovery => "discovery",
            Phase::LidAssignment => "lid-assignment",
            Phase::Routing => "routing",
            Phase::Programming => "programming",
            Phase::Arming => "arming",
            Phase::Activation => "activation",
            Phase::LightSweep => "light-sweep",
            Phase::QosRead => "qos-read",
        })
    }
}

/// Counters for one phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseStats {
    /// SMPs put on the wire, retries included.
    pub smps: u64,
    /// Of those, resends after a timeout.
    pub retried: u64,
    /// Transactions abandoned after the last retry.
    pub timed_out: u64,
    /// Requests dropped before sending because the answer was already known.
    pub skipped: u64,
    /// (Virtual) time from the phase's start to its end.
    pub elapsed: Duration,
    /// Sets put on the wire (first attempts), by attribute.
    pub sets: SetCounts,
}

impl PhaseStats {
    /// Adds `o`'s counters (and time) to these.
    pub fn add(&mut self, o: &PhaseStats) {
        self.smps += o.smps;
        self.retried += o.retried;
        self.timed_out += o.timed_out;
        self.skipped += o.skipped;
        self.elapsed += o.elapsed;
        self.sets.add(&o.sets);
    }
}

/// Sets sent, by attribute: what a sweep changed in the fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetCounts {
    /// PortInfo.
    pub port_info: u64,
    /// SwitchInfo.
    pub switch_info: u64,
    /// LinearForwardingTable blocks.
    pub lft: u64,
    /// MulticastForwardingTable blocks.
    pub mft: u64,
    /// P_KeyTable blocks.
    pub pkey: u64,
    /// SLtoVLMappingTable.
    pub sl2vl: u64,
    /// VLArbitrationTable.
    pub vlarb: u64,
    /// SMInfo (HANDOVER, ACKNOWLEDGE, …).
    pub sm_info: u64,
    /// Any other attribute.
    pub other: u64,
}

impl SetCounts {
    /// Counts one Set of `attr`.
    pub fn count(&mut self, attr: ibmad::SmpAttrId) {
        use ibmad::SmpAttrId as A;
        let c = match attr {
            A::PORT_INFO => &mut self.port_info,
            A::SWITCH_INFO => &mut self.switch_info,
            A::LINEAR_FT => &mut self.lft,
            A::MULTICAST_FT => &mut self.mft,
            A::P_KEY_TABLE => &mut self.pkey,
            A::SL_TO_VL_TABLE => &mut self.sl2vl,
            A::VL_ARB_TABLE => &mut self.vlarb,
            A::SM_INFO => &mut self.sm_info,
            _ => &mut self.other,
        };
        *c += 1;
    }

    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &SetCounts) {
        self.port_info += o.port_info;
        self.switch_info += o.switch_info;
        self.lft += o.lft;
        self.mft += o.mft;
        self.pkey += o.pkey;
        self.sl2vl += o.sl2vl;
        self.vlarb += o.vlarb;
        self.sm_info += o.sm_info;
        self.other += o.other;
    }

    /// All Sets.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.by_name().iter().map(|&(_, n)| n).sum()
    }

    /// The counts with the names the log uses.
    fn by_name(&self) -> [(&'static str, u64); 9] {
        [
            ("PortInfo", self.port_info),
            ("SwitchInfo", self.switch_info),
            ("LFT", self.lft),
            ("MFT", self.mft),
            ("P_KeyTable", self.pkey),
            ("SL2VL", self.sl2vl),
            ("VLArb", self.vlarb),
            ("SMInfo", self.sm_info),
            ("other", self.other),
        ]
    }
}

impl core::fmt::Display for SetCounts {
    /// `PortInfo 32, LFT 26` (attributes with no Set left out; `none` if there is none).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let all = self.by_name();
        let mut first = true;
        for (name, n) in all.into_iter().filter(|&(_, n)| n > 0) {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{name} {n}")?;
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// Something the SM reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A log line, OpenSM-style text without timestamp.
    Log {
        /// Severity.
        level: Level,
        /// The text.
        line: String,
    },
    /// A phase finished.
    PhaseDone {
        /// Which.
        phase: Phase,
        /// Its counters.
        stats: PhaseStats,
    },
    /// An SMP got no answer after all retries (the node behind that route is left out of the
    /// subnet, or was not configured). Reported once per route and sweep.
    NodeUnreachable {
        /// The directed route that was tried.
        dr_path: DrPath,
        /// How many times the SMP was sent.
        attempts: u32,
        /// The request's method.
        method: Method,
        /// The request's attribute.
        attr: SmpAttrId,
    },
    /// A response came back with a non-zero status (a Set the node refused, a Get of an
    /// attribute it lacks).
    ErrorStatus {
        /// The route the request went along.
        dr_path: DrPath,
        /// The request's method.
        method: Method,
        /// The request's attribute and modifier.
        attr: SmpAttrId,
        /// AttributeModifier.
        attr_mod: u32,
        /// The status in the response.
        status: Status,
    },
    /// Two different nodes answered with the same NodeGUID; the second is ignored.
    DuplicateGuid {
        /// The GUID.
        guid: Guid,
        /// Route to the node that has it first.
        first: DrPath,
        /// Route to the node that claims it too.
        second: DrPath,
    },
    /// A NodeInfo answer describes a node the SM cannot add (bad port counts, …); ignored.
    BadNodeInfo {
        /// The NodeGUID it gave.
        guid: Guid,
        /// The route it came back on.
        dr_path: DrPath,
        /// What is wrong with it.
        why: String,
    },
    /// A line of the GUID→LID text given with [`Command::Guid2Lid`] was not used.
    Guid2LidWarning(Guid2LidWarning),
    /// The GUID→LID map changed; the owner should persist this text (atomically) and pass it
    /// back with [`Command::Guid2Lid`] after a restart.
    Guid2LidUpdated(String),
    /// Programming Sets of this heavy sweep failed (error status or no answer); the ports are
    /// armed anyway and the next sweep reprograms what is still missing.
    SetsFailed {
        /// How many.
        count: usize,
    },
    /// A port that advertises IsSM did not answer SMInfo Get: it takes no part in the election.
    SmSilent {
        /// The route to it.
        dr_path: DrPath,
    },
    /// Every reachable linked port is Active ("SUBNET UP").
    SubnetUp,
    /// A heavy sweep ended — up (followed by [`Event::SubnetUp`]) or not (followed by
    /// [`Event::SweepFailed`]) — with its own figures: time from its start, SMPs, and Sets by
    /// attribute (what it changed in the fabric).
    HeavySweepDone {
        /// Its number (1 = the first heavy sweep).
        sweep: u64,
        /// It brought the subnet up.
        up: bool,
        /// Its counters, all phases added; `elapsed` from its start to its end.
        stats: PhaseStats,
    },
    /// Another SM outranks this one (IBA vol1 §14.4.1.1): this SM stays in STANDBY and does
    /// not program the subnet; it rediscovers at every sweep interval.
    Standby {
        /// The winning SM's port GUID.
        master: Guid,
        /// Its priority.
        priority: u8,
        /// This SM's priority.
        own_priority: u8,
    },
    /// The heavy sweep could not complete; the SM sweeps again (at once, a bounded number of
    /// times, then at its sweep interval).
    SweepFailed {
        /// Why.
        reason: SweepFailure,
    },
    /// The SM's role changed (IBA vol1 §14.4).
    RoleChanged {
        /// The role before.
        from: Role,
        /// The role now.
        to: Role,
        /// Why.
        cause: RoleCause,
    },
    /// Another SM's SMInfo carries an SM_Key other than this SM's (non-zero) one: that SM is
    /// ignored (OpenSM ERR 2F18).
    SmKeyMismatch {
        /// Its port GUID.
        sm: Guid,
        /// The SM_Key it showed.
        sm_key: u64,
    },
    /// The lower master this (master) SM waited on for a HANDOVER stopped answering; the SM
    /// sweeps and configures the subnet.
    PolledSmLost {
        /// Its port GUID.
        sm: Guid,
        /// Polls in a row without an answer.
        misses: u32,
    },
    /// A trap arrived (it was repressed with its TID).
    TrapReceived {
        /// Its number.
        trap: TrapNum,
        /// IssuerLID.
        issuer: Lid,
        /// Its TID.
        tid: u64,
        /// Identical traps in a row within the aging window, this one included.
        repeat: u32,
        /// True if ignored as part of a flood ([`crate::trap::FLOOD_THRESHOLD`] or more).
        ignored: bool,
        /// The trap's source LID (the SMP's SLID).
        source: Lid,
        /// The Notice, for the SA to forward to subscribers ([`crate::sa::Sa::forward_trap`])
        /// unless `ignored`.
        notice: ibmad::attr::notice::Notice,
    },
    /// An SMInfo Set from another SM was refused (answered with status 7).
    SmInfoSetRefused {
        /// The sender's port GUID (from the Set's payload).
        sender: Guid,
        /// The AttributeModifier.
        attr_mod: u32,
        /// Why.
        why: SetRefused,
    },
}

impl Event {
    /// The log line of this event, with its severity: OpenSM-style text (and `ERR xxxx` code)
    /// without timestamp; `None` for events that carry data only ([`Event::PhaseDone`],
    /// [`Event::Guid2LidUpdated`]). The one place events become text.
    #[must_use]
    pub fn log_line(&self) -> Option<(Level, String)> {
        Some(match self {
            Event::Log { level, line } => (*level, line.clone()),
            Event::PhaseDone { .. } | Event::Guid2LidUpdated(_) => return None,
            Event::NodeUnreachable {
                dr_path,
                attempts,
                method,
                attr,
            } => (
                Level::Error,
                format!("ERR 3120: {method} {attr} to {dr_path} timed out after {attempts} attempts"),
            ),
            Event::ErrorStatus {
                dr_path,
                method,
                attr,
                attr_mod,
                status,
            } => (
                Level::Error,
                format!("ERR 3108: {method} {attr} {attr_mod} at {dr_path} returned status {status}"),
            ),
            Event::DuplicateGuid {
                guid,
                first,
                second,
            } => (
                Level::Error,
                format!("duplicate NodeGUID {guid} at {first} and {second}"),
            ),
            Event::BadNodeInfo { guid, dr_path, why } => (
                Level::Error,
                format!("ERR 0D01: node {guid} at {dr_path}: {why}; ignored"),
            ),
            Event::Guid2LidWarning(w) => (Level::Warn, format!("guid2lid: {w}")),
            Event::SetsFailed { count } => (
                Level::Error,
                format!(
                    "ERR 3A05: {count} programming Sets failed; ports are armed anyway and the next sweep reprograms"
                ),
            ),
            Event::SmSilent { dr_path } => (
                Level::Verbose,
                format!("SMInfo Get to {dr_path} got no answer; ignoring that SM"),
            ),
            Event::SubnetUp => (Level::Info, "SUBNET UP".to_string()),
            Event::HeavySweepDone { sweep, up, stats } => (
                Level::Info,
                format!(
                    "heavy sweep {sweep} {} in {:.3} s: {} SMPs ({} retried, {} timed out); Sets: {}",
                    if *up { "done" } else { "failed" },
                    stats.elapsed.as_secs_f64(),
                    stats.smps,
                    stats.retried,
                    stats.timed_out,
                    stats.sets
                ),
            ),
            Event::Standby {
                master,
                priority,
                own_priority,
            } => (
                Level::Info,
                format!(
                    "Entering STANDBY state: SM {master} with priority {priority} outranks ours ({own_priority})"
                ),
            ),
            Event::SweepFailed { reason } => (Level::Error, reason.to_string()),
            Event::RoleChanged { from, to, cause } => (
                Level::Info,
                format!("Entering {to} state (was {from}): {}", role_cause_text(cause)),
            ),
            Event::SmKeyMismatch { sm, sm_key } => (
                Level::Error,
                format!(
                    "ERR 2F18: Got SM {sm} with sm_key {sm_key:#018x} that doesn't match our local sm_key. Ignoring SMInfo"
                ),
            ),
            Event::PolledSmLost { sm, misses } => (
                Level::Info,
                format!("master SM {sm} we waited on for a HANDOVER did not answer {misses} polls: forcing a heavy sweep"),
            ),
            Event::TrapReceived {
                trap,
                issuer,
                tid,
                repeat,
                ignored,
                ..
            } => {
                let base = format!("Received Trap {} ({trap}) from LID {issuer}, TID {tid:#x}", trap.0);
                if *ignored {
                    (
                        Level::Verbose,
                        format!("{base}: received {repeat} times in a row, ignoring noisy traps"),
                    )
                } else if *repeat > 1 {
                    (Level::Info, format!("{base} (repeat {repeat})"))
                } else {
                    (Level::Info, base)
                }
            }
            Event::SmInfoSetRefused {
                sender,
                attr_mod,
                why,
            } => (
                Level::Error,
                format!(
                    "ERR 2F04: SMInfo Set AttributeModifier {attr_mod} ({}) from SM {sender} refused: {why}",
                    control_name(*attr_mod)
                ),
            ),
        })
    }
}

/// The name of an SMInfo control value (IBA vol1 §14.4.1).
fn control_name(attr_mod: u32) -> &'static str {
    use ibmad::attr::sm_info::control;
    match attr_mod {
        control::HANDOVER => "HANDOVER",
        control::ACKNOWLEDGE => "ACKNOWLEDGE",
        control::DISABLE => "DISABLE",
        control::STANDBY => "STANDBY",
        control::DISCOVER => "DISCOVER",
        _ => "unknown",
    }
}

fn role_cause_text(cause: &RoleCause) -> String {
    match cause {
        RoleCause::Sweep => "sweeping".to_string(),
        RoleCause::Elected => "no SM outranks this one".to_string(),
        RoleCause::Outranked(m) => format!(
            "SM {} (priority {}, state {}) is master or outranks this one",
            m.guid, m.priority, m.state
        ),
        RoleCause::MasterLost { master, misses } => {
            format!("master SM {master} did not answer {misses} SMInfo polls in a row")
        }
        RoleCause::SetFrom { sender, attr_mod } => {
            format!("SMInfo Set {} from SM {sender}", control_name(*attr_mod))
        }
        RoleCause::HandedOver(to) => format!("handed the subnet over to SM {to}"),
    }
}

/// Why a heavy sweep failed ([`Event::SweepFailed`]); `Display` is the log line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SweepFailure {
    /// The SM's own node did not answer NodeInfo.
    OwnPortSilent,
    /// LID assignment failed.
    LidAssignment(LidError),
    /// No routing engine of the chain could route the fabric.
    NoRoutingEngine(RouteError),
    /// Ports of the state passes are not Active.
    PortsNotActive {
        /// How many are not.
        not_active: usize,
        /// Ports in the state passes (linked ports and switch ports 0).
        ports: usize,
        /// The first few of them: (NodeGUID, port).
        first: Vec<(Guid, u8)>,
    },
    /// SMPs were lost for good (OpenSM's "ERRORS DURING INITIALIZATION"): the sweep did not
    /// find or configure every reachable node.
    Initialization {
        /// Directed routes that got no answer.
        unreachable: usize,
        /// The nearest of them.
        first: Option<DrPath>,
        /// Programming Sets that failed.
        failed_sets: usize,
    },
}

impl fmt::Display for SweepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepFailure::OwnPortSilent => f.write_str("ERR 3A01: the SM's own port did not answer"),
            SweepFailure::LidAssignment(e) => write!(f, "ERR 0307: LID assignment failed: {e}"),
            SweepFailure::NoRoutingEngine(e) => write!(
                f,
                "ERR 3A0A: No routing engine able to successfully configure switch tables on current fabric ({e})"
            ),
            SweepFailure::PortsNotActive {
                not_active,
                ports,
                first,
            } => {
                let first = first
                    .iter()
                    .map(|(g, p)| format!("{g}/{p}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                write!(
                    f,
                    "ERR 3A06: {not_active} of {ports} ports (linked ports and switch ports 0) are not Active ({first} ...)"
                )
            }
            SweepFailure::Initialization {
                unreachable,
                first,
                failed_sets,
            } => {
                let first = first.map_or(String::new(), |r| {
                    format!(
                        " (first at directed route {r}{})",
                        if *unreachable > 1 { ", ..." } else { "" }
                    )
                });
                write!(
                    f,
                    "ERR 3A07: ERRORS DURING INITIALIZATION: no answer on {unreachable} directed route(s){first}, {failed_sets} Set(s) failed; the subnet is not up"
                )
            }
        }
    }
}

impl std::error::Error for SweepFailure {}

/// An instruction from the owner.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Command {
    /// Run a light sweep now (a heavy one follows if anything changed).
    Sweep,
    /// Run a heavy sweep now: rediscover, reassign, reroute, reprogram.
    HeavySweep,
    /// A heavy sweep whose routing chooses every route afresh (OpenSM's `reroute`): routes
    /// are otherwise kept where still valid, so balance can drift after many changes.
    Reroute,
    /// The persisted GUID→LID file's text, given before the first sweep completes discovery.
    Guid2Lid(String),
    /// The multicast groups the SA holds (all of them, after any change): the SM recomputes
    /// the spanning trees and programs the MFT blocks that changed ([`crate::mcast`]).
    McastGroups(Vec<crate::mcast::McastGroup>),
    /// New routing-engine options, typically the files they name read again (OpenSM reads
    /// torus-2QoS.conf, the root/compute/I-O GUID files and the LFT file each time it routes):
    /// they replace [`crate::SmConfig::engine_options`] and the next heavy sweep routes
    /// afresh with them, as [`Command::Reroute`].
    EngineOptions(Box<crate::routing::EngineOptions>),
    /// A new QoS configuration (`qos`, the `qos_*` options, the parsed policy file), as
    /// OpenSM takes them on SIGHUP: it replaces [`crate::SmConfig::qos`] and the next heavy
    /// sweep programs it. Turning `qos` on or off also routes afresh (the VL engines use more
    /// than VL0 only with it).
    Qos(Box<crate::qos::QosConfig>),
}

/// The SM's queue of events for its owner ([`crate::Sm::poll_event`]).
#[derive(Debug, Default)]
pub(crate) struct Events(VecDeque<Event>);

impl Events {
    pub fn push(&mut self, e: Event) {
        self.0.push_back(e);
    }
    pub fn log(&mut self, level: Level, line: String) {
        self.push(Event::Log { level, line });
    }
    pub fn extend(&mut self, evs: impl IntoIterator<Item = Event>) {
        self.0.extend(evs);
    }
    pub fn pop(&mut self) -> Option<Event> {
        self.0.pop_front()
    }
}

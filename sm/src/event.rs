//! What the SM tells its owner ([`Event`], drained with [`crate::Sm::poll_event`]) and what the
//! owner tells the SM ([`Command`], given to [`crate::Sm::handle_command`]).
//!
//! Failures are events, not logs (STYLE P11): an unreachable node, a duplicate GUID. Log lines
//! are events too — the SM has no logger; the daemon writes `Event::Log` lines to its log file
//! in OpenSM's format.

use std::collections::VecDeque;

use core::fmt;
use core::time::Duration;

use ibmad::{DrPath, Guid};

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
    /// A node did not answer after all retries; it is left out of the subnet.
    NodeUnreachable {
        /// The directed route that was tried.
        dr_path: DrPath,
        /// How many times the SMP was sent.
        attempts: u32,
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
    /// The GUID→LID map changed; the owner should persist this text (atomically) and pass it
    /// back with [`Command::Guid2Lid`] after a restart.
    Guid2LidUpdated(String),
    /// Every reachable linked port is Active (logged as "SUBNET UP" as well).
    SubnetUp,
    /// Another SM outranks this one (IBA vol1 §14.4.1.1): this SM stays in STANDBY and does
    /// not program the subnet; it rediscovers at every sweep interval.
    Standby {
        /// The winning SM's port GUID.
        master: Guid,
        /// Its priority.
        priority: u8,
    },
    /// The heavy sweep could not complete (e.g. no routing engine succeeded); the next sweep
    /// retries.
    SweepFailed {
        /// Why.
        reason: String,
    },
}

/// An instruction from the owner.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Command {
    /// Run a light sweep now (a heavy one follows if anything changed).
    Sweep,
    /// Run a heavy sweep now: rediscover, reassign, reroute, reprogram.
    HeavySweep,
    /// The persisted GUID→LID file's text, given before the first sweep completes discovery.
    Guid2Lid(String),
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

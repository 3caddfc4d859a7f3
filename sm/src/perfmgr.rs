//! The performance manager: sweeps every port's PerfMgt counters, sans-IO (STYLE P5).
//!
//! What OpenSM's PerfMgr does (its option names and defaults: [`PerfMgrConfig`]), as a state
//! machine the daemon drives like the [`crate::Sm`]: it hands the PerfMgr the ports to watch
//! ([`PerfMgr::set_targets`], from the SM's subnet after each sweep), feeds it time and the
//! PerfMgt answers that arrive, and sends what [`PerfMgr::poll_transmit`] produces.
//!
//! A sweep, every `perfmgr_sweep_time_s`:
//! 1. ClassPortInfo Get once per PMA (a switch's port 0 LID, each CA port's LID) when
//!    `perfmgr_query_cpi`: the capability mask says whether PortCountersExtended exists
//!    (IsExtendedWidthSupported or …NoIETF, IBA vol1 §16.1.2). Without the query, extended
//!    counters are tried, and a PMA that refuses them is asked PortCounters only from then on.
//! 2. PortCounters Get per port (the error counters, PortXmitWait) and, where it exists,
//!    PortCountersExtended Get (64-bit data and packet counters).
//! 3. Per port, the sample is turned into 64-bit running totals: the increase since the last
//!    sample is added (a value below the last one was cleared by someone else: the new value
//!    is the increase). Error-counter increases are logged (`perfmgr_log_errors`), PortXmitWait
//!    increases above `perfmgr_xmit_wait_threshold` too (`perfmgr_xmit_wait_log`).
//! 4. A PortCounters field past ¾ of its width is cleared with a PortCounters Set before it
//!    saturates (a saturated counter stops counting, IBA vol1 §16.1.3.5); with extended
//!    counters the data and packet counters are left alone (they are read at 64 bits).
//!
//! Queries are pipelined: at most `perfmgr_max_outstanding_queries` are in flight, each
//! retried `transaction_retries` times after `transaction_timeout`, as the SM's SMPs are.
//! Answers are matched on the low 32 bits of the TransactionID (transports own the rest).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::time::Duration;

use ibmad::class_port_info::ClassPortInfoRepr;
use ibmad::perf::{cap, CounterSelect, PerfMad, PortCountersExtRepr, PortCountersRepr};
use ibmad::zerocopy::IntoBytes;
use ibmad::{
    GmpAttrRepr, Guid, Lid, MadMeta, Method, MgmtClass, PerfRepr, PmaAttrId, PortNum, Time,
};

use crate::event::Level;
use crate::subnet::Subnet;
use crate::Transmit;

/// OpenSM's PerfMgr options (`osm_subnet.c` defaults) plus the SM's transaction timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfMgrConfig {
    /// `perfmgr_sweep_time_s`: time between sweeps; zero sweeps only when asked. Default 180 s.
    pub sweep_time: Duration,
    /// `perfmgr_max_outstanding_queries`: queries in flight at once. Default 500.
    pub max_outstanding: usize,
    /// `perfmgr_ignore_cas`: watch switch ports only. Default FALSE.
    pub ignore_cas: bool,
    /// `perfmgr_rm_nodes`: forget the ports of nodes that left the subnet. Default TRUE.
    pub rm_nodes: bool,
    /// `perfmgr_log_errors`: log error-counter increases. Default TRUE.
    pub log_errors: bool,
    /// `perfmgr_query_cpi`: ask each PMA's ClassPortInfo for its capabilities. Default TRUE.
    pub query_cpi: bool,
    /// `perfmgr_xmit_wait_log`: log PortXmitWait increases. Default FALSE.
    pub xmit_wait_log: bool,
    /// `perfmgr_xmit_wait_threshold`: the PortXmitWait increase worth a log line. Default 65535.
    pub xmit_wait_threshold: u64,
    /// `transaction_timeout`: wait for an answer. Default 200 ms.
    pub timeout: Duration,
    /// `transaction_retries`: resends after a timeout. Default 3.
    pub retries: u32,
}

impl Default for PerfMgrConfig {
    fn default() -> Self {
        PerfMgrConfig {
            sweep_time: Duration::from_secs(180),
            max_outstanding: 500,
            ignore_cas: false,
            rm_nodes: true,
            log_errors: true,
            query_cpi: true,
            xmit_wait_log: false,
            xmit_wait_threshold: 0xFFFF,
            timeout: Duration::from_millis(200),
            retries: 3,
        }
    }
}

/// One counter of a port, in PortCounters' order, then PortCountersExtended's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Counter {
    /// SymbolErrorCounter.
    SymbolErrors,
    /// LinkErrorRecoveryCounter.
    LinkErrorRecovery,
    /// LinkDownedCounter.
    LinkDowned,
    /// PortRcvErrors.
    RcvErrors,
    /// PortRcvRemotePhysicalErrors.
    RcvRemotePhysicalErrors,
    /// PortRcvSwitchRelayErrors.
    RcvSwitchRelayErrors,
    /// PortXmitDiscards.
    XmitDiscards,
    /// PortXmitConstraintErrors.
    XmitConstraintErrors,
    /// PortRcvConstraintErrors.
    RcvConstraintErrors,
    /// LocalLinkIntegrityErrors.
    LocalLinkIntegrityErrors,
    /// ExcessiveBufferOverrunErrors.
    ExcessiveBufferOverrunErrors,
    /// VL15Dropped.
    Vl15Dropped,
    /// PortXmitData (32-bit words).
    XmitData,
    /// PortRcvData (32-bit words).
    RcvData,
    /// PortXmitPkts.
    XmitPkts,
    /// PortRcvPkts.
    RcvPkts,
    /// PortXmitWait.
    XmitWait,
    /// QP1Dropped.
    Qp1Dropped,
    /// PortUnicastXmitPkts (extended counters only).
    UnicastXmitPkts,
    /// PortUnicastRcvPkts (extended counters only).
    UnicastRcvPkts,
    /// PortMulticastXmitPkts (extended counters only).
    MulticastXmitPkts,
    /// PortMulticastRcvPkts (extended counters only).
    MulticastRcvPkts,
}

/// Number of [`Counter`]s.
pub const NUM_COUNTERS: usize = 22;

impl Counter {
    /// Every counter, in index order.
    pub const ALL: [Counter; NUM_COUNTERS] = [
        Counter::SymbolErrors,
        Counter::LinkErrorRecovery,
        Counter::LinkDowned,
        Counter::RcvErrors,
        Counter::RcvRemotePhysicalErrors,
        Counter::RcvSwitchRelayErrors,
        Counter::XmitDiscards,
        Counter::XmitConstraintErrors,
        Counter::RcvConstraintErrors,
        Counter::LocalLinkIntegrityErrors,
        Counter::ExcessiveBufferOverrunErrors,
        Counter::Vl15Dropped,
        Counter::XmitData,
        Counter::RcvData,
        Counter::XmitPkts,
        Counter::RcvPkts,
        Counter::XmitWait,
        Counter::Qp1Dropped,
        Counter::UnicastXmitPkts,
        Counter::UnicastRcvPkts,
        Counter::MulticastXmitPkts,
        Counter::MulticastRcvPkts,
    ];

    /// The IBA's (and perfquery's) name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Counter::SymbolErrors => "SymbolErrorCounter",
            Counter::LinkErrorRecovery => "LinkErrorRecoveryCounter",
            Counter::LinkDowned => "LinkDownedCounter",
            Counter::RcvErrors => "PortRcvErrors",
            Counter::RcvRemotePhysicalErrors => "PortRcvRemotePhysicalErrors",
            Counter::RcvSwitchRelayErrors => "PortRcvSwitchRelayErrors",
            Counter::XmitDiscards => "PortXmitDiscards",
            Counter::XmitConstraintErrors => "PortXmitConstraintErrors",
            Counter::RcvConstraintErrors => "PortRcvConstraintErrors",
            Counter::LocalLinkIntegrityErrors => "LocalLinkIntegrityErrors",
            Counter::ExcessiveBufferOverrunErrors => "ExcessiveBufferOverrunErrors",
            Counter::Vl15Dropped => "VL15Dropped",
            Counter::XmitData => "PortXmitData",
            Counter::RcvData => "PortRcvData",
            Counter::XmitPkts => "PortXmitPkts",
            Counter::RcvPkts => "PortRcvPkts",
            Counter::XmitWait => "PortXmitWait",
            Counter::Qp1Dropped => "QP1Dropped",
            Counter::UnicastXmitPkts => "PortUnicastXmitPkts",
            Counter::UnicastRcvPkts => "PortUnicastRcvPkts",
            Counter::MulticastXmitPkts => "PortMulticastXmitPkts",
            Counter::MulticastRcvPkts => "PortMulticastRcvPkts",
        }
    }

    /// The field's width in PortCounters (IBA vol1 Table 247), 64 for the counters only
    /// PortCountersExtended has.
    #[must_use]
    pub const fn pc_bits(self) -> u32 {
        match self {
            Counter::LocalLinkIntegrityErrors | Counter::ExcessiveBufferOverrunErrors => 4,
            Counter::LinkErrorRecovery
            | Counter::LinkDowned
            | Counter::XmitConstraintErrors
            | Counter::RcvConstraintErrors => 8,
            Counter::SymbolErrors
            | Counter::RcvErrors
            | Counter::RcvRemotePhysicalErrors
            | Counter::RcvSwitchRelayErrors
            | Counter::XmitDiscards
            | Counter::Vl15Dropped
            | Counter::Qp1Dropped => 16,
            Counter::XmitData
            | Counter::RcvData
            | Counter::XmitPkts
            | Counter::RcvPkts
            | Counter::XmitWait => 32,
            Counter::UnicastXmitPkts
            | Counter::UnicastRcvPkts
            | Counter::MulticastXmitPkts
            | Counter::MulticastRcvPkts => 64,
        }
    }

    /// Counts faults (what `perfmgr_log_errors` and ibqueryerrors report).
    #[must_use]
    pub const fn is_error(self) -> bool {
        (self as usize) <= Counter::Vl15Dropped as usize || matches!(self, Counter::Qp1Dropped)
    }

    /// Its PortCounters CounterSelect | CounterSelect2 << 16 bit (0 for extended-only ones).
    #[must_use]
    pub const fn pc_select(self) -> u32 {
        if (self as usize) <= Counter::Qp1Dropped as usize {
            1 << (self as usize)
        } else {
            0
        }
    }

    /// Read from PortCountersExtended when the PMA has it (data and packet counts).
    #[must_use]
    pub const fn from_ext(self) -> bool {
        matches!(
            self,
            Counter::XmitData
                | Counter::RcvData
                | Counter::XmitPkts
                | Counter::RcvPkts
                | Counter::UnicastXmitPkts
                | Counter::UnicastRcvPkts
                | Counter::MulticastXmitPkts
                | Counter::MulticastRcvPkts
        )
    }
}

/// One value per [`Counter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counters(pub [u64; NUM_COUNTERS]);

impl Counters {
    /// The value of `c`.
    #[must_use]
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c as usize]
    }
    fn set(&mut self, c: Counter, v: u64) {
        self.0[c as usize] = v;
    }

    /// The PortCounters fields.
    #[must_use]
    pub fn from_pc(p: &PortCountersRepr) -> Counters {
        let mut c = Counters::default();
        for (k, v) in [
            (Counter::SymbolErrors, u64::from(p.symbol_error_counter)),
            (
                Counter::LinkErrorRecovery,
                p.link_error_recovery_counter.into(),
            ),
            (Counter::LinkDowned, p.link_downed_counter.into()),
            (Counter::RcvErrors, p.port_rcv_errors.into()),
            (
                Counter::RcvRemotePhysicalErrors,
                p.port_rcv_remote_physical_errors.into(),
            ),
            (
                Counter::RcvSwitchRelayErrors,
                p.port_rcv_switch_relay_errors.into(),
            ),
            (Counter::XmitDiscards, p.port_xmit_discards.into()),
            (
                Counter::XmitConstraintErrors,
                p.port_xmit_constraint_errors.into(),
            ),
            (
                Counter::RcvConstraintErrors,
                p.port_rcv_constraint_errors.into(),
            ),
            (
                Counter::LocalLinkIntegrityErrors,
                p.local_link_integrity_errors.into(),
            ),
            (
                Counter::ExcessiveBufferOverrunErrors,
                p.excessive_buffer_overrun_errors.into(),
            ),
            (Counter::Vl15Dropped, p.vl15_dropped.into()),
            (Counter::XmitData, p.port_xmit_data.into()),
            (Counter::RcvData, p.port_rcv_data.into()),
            (Counter::XmitPkts, p.port_xmit_pkts.into()),
            (Counter::RcvPkts, p.port_rcv_pkts.into()),
            (Counter::XmitWait, p.port_xmit_wait.into()),
            (Counter::Qp1Dropped, p.qp1_dropped.into()),
        ] {
            c.set(k, v);
        }
        c
    }

    /// Overwrites the data and packet counters with PortCountersExtended's.
    pub fn merge_ext(&mut self, e: &PortCountersExtRepr) {
        for (k, v) in [
            (Counter::XmitData, e.port_xmit_data),
            (Counter::RcvData, e.port_rcv_data),
            (Counter::XmitPkts, e.port_xmit_pkts),
            (Counter::RcvPkts, e.port_rcv_pkts),
            (Counter::UnicastXmitPkts, e.port_unicast_xmit_pkts),
            (Counter::UnicastRcvPkts, e.port_unicast_rcv_pkts),
            (Counter::MulticastXmitPkts, e.port_multicast_xmit_pkts),
            (Counter::MulticastRcvPkts, e.port_multicast_rcv_pkts),
        ] {
            self.set(k, v);
        }
    }
}

/// A PMA and the ports it answers for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// NodeGUID.
    pub node_guid: Guid,
    /// NodeDescription.
    pub node_desc: String,
    /// A switch (the PMA is at port 0's LID and answers for every port).
    pub is_switch: bool,
    /// Where the PMA is.
    pub lid: Lid,
    /// The ports to read.
    pub ports: Vec<PortNum>,
}

/// The PMAs of `subnet`: each switch (its linked ports) at its port-0 LID and, unless
/// `ignore_cas`, each linked CA/router port at its own LID. Ports without a LID are skipped.
#[must_use]
pub fn targets(subnet: &Subnet, ignore_cas: bool) -> Vec<Target> {
    let mut out = Vec::new();
    for id in subnet.node_ids() {
        let n = subnet.node(id);
        let linked = |p: u8| {
            subnet
                .port(id, PortNum(p))
                .is_some_and(|x| x.remote.is_some())
        };
        if n.is_switch() {
            let lid = subnet.lid_of(id, PortNum(0));
            let ports: Vec<PortNum> = (1..=n.num_ports)
                .filter(|&p| linked(p))
                .map(PortNum)
                .collect();
            if lid.0 != 0 && !ports.is_empty() {
                out.push(Target {
                    node_guid: n.guid,
                    node_desc: n.desc.clone(),
                    is_switch: true,
                    lid,
                    ports,
                });
            }
        } else if !ignore_cas {
            for p in (1..=n.num_ports).filter(|&p| linked(p)) {
                let lid = subnet.lid_of(id, PortNum(p));
                if lid.0 != 0 {
                    out.push(Target {
                        node_guid: n.guid,
                        node_desc: n.desc.clone(),
                        is_switch: false,
                        lid,
                        ports: vec![PortNum(p)],
                    });
                }
            }
        }
    }
    out
}

/// What the PerfMgr knows of one port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortRecord {
    /// NodeGUID.
    pub node_guid: Guid,
    /// NodeDescription.
    pub node_desc: String,
    /// Port number.
    pub port: PortNum,
    /// LID of its PMA.
    pub lid: Lid,
    /// Running 64-bit totals since the PerfMgr first read the port (or `clear_counters`).
    pub total: Counters,
    /// The last values read from the port.
    pub last: Option<Counters>,
    /// When the last sample arrived.
    pub last_sample: Option<Time>,
    /// Samples taken.
    pub samples: u64,
    /// PortCounters Sets sent to keep counters from saturating.
    pub clears: u64,
}

/// Counts of one finished sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepStats {
    /// Ports sampled.
    pub ports: u64,
    /// PerfMgt requests sent, resends included.
    pub queries: u64,
    /// Requests given up after the last retry.
    pub timed_out: u64,
    /// Answers with an error status.
    pub errors: u64,
    /// PortCounters Sets sent to clear counters near saturation.
    pub clears: u64,
    /// Start to last answer.
    pub elapsed: Duration,
}

/// What the PerfMgr reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PerfEvent {
    /// A log line (OpenSM-style `ERR 54xx` prefixes on problems).
    Log {
        /// Severity.
        level: Level,
        /// The text.
        line: String,
    },
    /// A sweep finished.
    SweepDone(SweepStats),
}

/// A status line for `ibsm ctl perfmgr status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfStatus {
    /// Sweeps finished.
    pub sweeps: u64,
    /// A sweep is under way.
    pub sweeping: bool,
    /// Ports known.
    pub ports: usize,
    /// PMAs known.
    pub targets: usize,
    /// The last finished sweep.
    pub last: Option<SweepStats>,
}

impl fmt::Display for PerfStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "perfmgr sweeps: {}{}",
            self.sweeps,
            if self.sweeping { " (sweeping)" } else { "" }
        )?;
        writeln!(
            f,
            "perfmgr nodes/ports: {} PMAs, {} ports",
            self.targets, self.ports
        )?;
        if let Some(s) = self.last {
            writeln!(
                f,
                "last sweep: {} ports in {:.3} s, {} queries, {} timed out, {} error answers, {} clears",
                s.ports,
                s.elapsed.as_secs_f64(),
                s.queries,
                s.timed_out,
                s.errors,
                s.clears
            )?;
        }
        Ok(())
    }
}

type Key = (Guid, PortNum);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Query {
    Cpi { lid: Lid },
    Pc { key: Key, lid: Lid },
    Pce { key: Key, lid: Lid },
    Clear { key: Key, lid: Lid, select: u32 },
}

struct InFlight {
    query: Query,
    deadline: Time,
    attempts: u32,
}

/// Capabilities of a PMA, by LID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caps {
    /// ClassPortInfo asked, not answered yet.
    Pending,
    /// PortCountersExtended exists (or is being tried).
    Ext,
    /// PortCounters only.
    Basic,
}

/// A port's sample being put together.
#[derive(Clone, Copy, Debug, Default)]
struct Partial {
    pc: Option<PortCountersRepr>,
    pce: Option<PortCountersExtRepr>,
    /// Extended counters were asked for and are still due.
    want_ext: bool,
    pc_done: bool,
}

/// The performance manager. Call order as [`crate::Sm`]'s: `handle_*` with the time,
/// then drain `poll_transmit` and `poll_event`, and call again at `poll_timeout`.
pub struct PerfMgr {
    cfg: PerfMgrConfig,
    enabled: bool,
    local: Option<(PortNum, Lid)>,
    targets: Vec<Target>,
    records: BTreeMap<Key, PortRecord>,
    caps: HashMap<Lid, Caps>,
    queue: VecDeque<Query>,
    in_flight: HashMap<u32, InFlight>,
    /// Attempts so far of requests queued again after a timeout.
    resend_attempts: HashMap<Query, u32>,
    partial: HashMap<Key, Partial>,
    next_tid: u32,
    sweep_start: Option<Time>,
    next_sweep: Option<Time>,
    sweep_asked: bool,
    stats: SweepStats,
    status: PerfStatus,
    events: VecDeque<PerfEvent>,
}

impl PerfMgr {
    /// A PerfMgr that sweeps once it has targets.
    #[must_use]
    pub fn new(cfg: PerfMgrConfig) -> PerfMgr {
        PerfMgr {
            cfg,
            enabled: true,
            local: None,
            targets: Vec::new(),
            records: BTreeMap::new(),
            caps: HashMap::new(),
            queue: VecDeque::new(),
            in_flight: HashMap::new(),
            resend_attempts: HashMap::new(),
            partial: HashMap::new(),
            next_tid: 0x5000_0000,
            sweep_start: None,
            next_sweep: None,
            sweep_asked: false,
            stats: SweepStats::default(),
            status: PerfStatus::default(),
            events: VecDeque::new(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &PerfMgrConfig {
        &self.cfg
    }

    /// Changes the sweep period (`perfmgr sweep_time`); the next sweep is due that long after
    /// the last one started.
    pub fn set_sweep_time(&mut self, now: Time, t: Duration) {
        self.cfg.sweep_time = t;
        self.next_sweep = (!t.is_zero()).then(|| self.sweep_start.unwrap_or(now) + t);
    }

    /// Enables or disables sweeping (`perfmgr enable|disable`); a sweep under way finishes.
    pub fn set_enabled(&mut self, on: bool) {
        self.enabled = on;
    }

    /// Sweeping is enabled.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The ports to watch and where requests leave from: `port` of the local node, source LID
    /// `slid` (the SM's). The first call starts a sweep; later calls take effect at the next.
    /// With `perfmgr_rm_nodes`, ports no longer among the targets are forgotten.
    pub fn set_targets(&mut self, now: Time, port: PortNum, slid: Lid, targets: Vec<Target>) {
        let first = self.targets.is_empty() && !targets.is_empty();
        self.local = Some((port, slid));
        if self.cfg.rm_nodes {
            let keep: std::collections::HashSet<Key> = targets
                .iter()
                .flat_map(|t| t.ports.iter().map(move |p| (t.node_guid, *p)))
                .collect();
            self.records.retain(|k, _| keep.contains(k));
        }
        // A LID that moved to another node is asked its capabilities again.
        let lids: std::collections::HashSet<Lid> = targets.iter().map(|t| t.lid).collect();
        self.caps.retain(|l, _| lids.contains(l));
        self.targets = targets;
        self.status.targets = self.targets.len();
        if first && self.sweep_start.is_none() {
            self.next_sweep = Some(now);
        }
    }

    /// Sweeps now (`perfmgr sweep`), or right after the sweep under way.
    pub fn request_sweep(&mut self) {
        self.sweep_asked = true;
    }

    /// Forgets the running totals (`perfmgr clear_counters`); the next samples start them
    /// again from the values read then.
    pub fn clear_counters(&mut self) {
        for r in self.records.values_mut() {
            r.total = Counters::default();
        }
    }

    /// Every port known, by (NodeGUID, port).
    pub fn ports(&self) -> impl Iterator<Item = &PortRecord> {
        self.records.values()
    }

    /// Sweeps, ports, the last sweep.
    #[must_use]
    pub fn status(&self) -> PerfStatus {
        PerfStatus {
            ports: self.records.len(),
            sweeping: self.sweep_start.is_some(),
            ..self.status
        }
    }

    /// Queries sent and not yet answered or given up.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// When [`PerfMgr::handle_timeout`] is next due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        let resend = self.in_flight.values().map(|f| f.deadline).min();
        let sweep = if self.sweep_start.is_none() && self.enabled && self.local.is_some() {
            self.next_sweep
        } else {
            None
        };
        match (resend, sweep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Resends and gives up timed-out requests; starts a sweep that is due.
    pub fn handle_timeout(&mut self, now: Time) {
        let expired: Vec<u32> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        for tid in expired {
            let Some(mut f) = self.in_flight.remove(&tid) else {
                continue;
            };
            if f.attempts <= self.cfg.retries {
                // Resent first, ahead of new requests, under a fresh TID.
                f.attempts += 1;
                self.queue.push_front(f.query);
                self.resend_attempts.insert(f.query, f.attempts);
            } else {
                self.stats.timed_out += 1;
                self.failed(f.query, "timed out");
            }
        }
        self.maybe_start(now);
        self.maybe_finish(now);
    }

    fn maybe_start(&mut self, now: Time) {
        if self.sweep_start.is_some() || !self.enabled || self.local.is_none() {
            return;
        }
        let due = self.next_sweep.is_some_and(|t| t <= now);
        if !(due || self.sweep_asked) || self.targets.is_empty() {
            return;
        }
        self.sweep_asked = false;
        self.sweep_start = Some(now);
        self.stats = SweepStats::default();
        self.next_sweep = (!self.cfg.sweep_time.is_zero()).then(|| now + self.cfg.sweep_time);
        let targets = std::mem::take(&mut self.targets);
        for t in &targets {
            let caps = *self.caps.entry(t.lid).or_insert(if self.cfg.query_cpi {
                Caps::Pending
            } else {
                Caps::Ext
            });
            match caps {
                Caps::Pending => self.queue.push_back(Query::Cpi { lid: t.lid }),
                _ => self.queue_ports(t, caps),
            }
        }
        self.targets = targets;
    }

    fn queue_ports(&mut self, t: &Target, caps: Caps) {
        for &p in &t.ports {
            let key = (t.node_guid, p);
            let rec = self.records.entry(key).or_insert_with(|| PortRecord {
                node_guid: t.node_guid,
                node_desc: t.node_desc.clone(),
                port: p,
                lid: t.lid,
                total: Counters::default(),
                last: None,
                last_sample: None,
                samples: 0,
                clears: 0,
            });
            rec.node_desc.clone_from(&t.node_desc);
            rec.lid = t.lid;
            let want_ext = caps == Caps::Ext;
            self.partial.insert(
                key,
                Partial {
                    want_ext,
                    ..Partial::default()
                },
            );
            self.queue.push_back(Query::Pc { key, lid: t.lid });
            if want_ext {
                self.queue.push_back(Query::Pce { key, lid: t.lid });
            }
        }
    }

    fn maybe_finish(&mut self, now: Time) {
        let Some(start) = self.sweep_start else {
            return;
        };
        if !self.queue.is_empty() || !self.in_flight.is_empty() {
            return;
        }
        self.sweep_start = None;
        self.partial.clear();
        self.stats.elapsed = now.saturating_since(start);
        self.status.sweeps += 1;
        self.status.last = Some(self.stats);
        self.events.push_back(PerfEvent::SweepDone(self.stats));
        if self.sweep_asked {
            self.maybe_start(now);
        }
    }

    /// The next request, written into `buf` (at least 256 bytes), within the window.
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        self.maybe_start(now);
        if self.in_flight.len() >= self.cfg.max_outstanding.max(1) {
            return None;
        }
        let (port, slid) = self.local?;
        let query = self.queue.pop_front()?;
        let attempts = self.resend_attempts.remove(&query).unwrap_or(1);
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        let (lid, mad) = match query {
            Query::Cpi { lid } => (
                lid,
                PerfMad::request(Method::GET, PmaAttrId::CLASS_PORT_INFO, 0, tid.into()),
            ),
            Query::Pc { key, lid } => {
                let mut m = PerfMad::request(Method::GET, PmaAttrId::PORT_COUNTERS, 0, tid.into());
                let pc = PortCountersRepr {
                    port_select: key.1 .0,
                    counter_select: CounterSelect(0xFFFF),
                    ..PortCountersRepr::default()
                };
                let _ = pc.emit(&mut m.data);
                (lid, m)
            }
            Query::Pce { key, lid } => {
                let mut m =
                    PerfMad::request(Method::GET, PmaAttrId::PORT_COUNTERS_EXT, 0, tid.into());
                let pce = PortCountersExtRepr {
                    port_select: key.1 .0,
                    ..PortCountersExtRepr::default()
                };
                let _ = pce.emit(&mut m.data);
                (lid, m)
            }
            Query::Clear { key, lid, select } => {
                let mut m = PerfMad::request(Method::SET, PmaAttrId::PORT_COUNTERS, 0, tid.into());
                let pc = PortCountersRepr {
                    port_select: key.1 .0,
                    counter_select: CounterSelect(select),
                    ..PortCountersRepr::default()
                };
                let _ = pc.emit(&mut m.data);
                (lid, m)
            }
        };
        let bytes = mad.as_bytes();
        let dst = buf.get_mut(..bytes.len())?;
        dst.copy_from_slice(bytes);
        self.stats.queries += 1;
        self.in_flight.insert(
            tid,
            InFlight {
                query,
                deadline: now + self.cfg.timeout,
                attempts,
            },
        );
        Some(Transmit {
            meta: MadMeta::gmp(port, slid, lid),
            len: bytes.len(),
        })
    }

    /// A PerfMgt MAD arrived. Returns false if it is not an answer to one of our requests
    /// (another class, a request, an unknown TID): the caller may hand it elsewhere.
    pub fn handle_mad(&mut self, now: Time, _meta: &MadMeta, mad: &[u8]) -> bool {
        if mad.get(1) != Some(&MgmtClass::PERF_MGMT.0) {
            return false;
        }
        let Ok(r) = PerfRepr::parse_bytes(mad) else {
            return false;
        };
        if r.header.method != Method::GET_RESP {
            return false;
        }
        let tid = r.header.tid as u32;
        let Some(f) = self.in_flight.remove(&tid) else {
            return false;
        };
        if r.header.status.0 != 0 {
            self.stats.errors += 1;
            let why = format!("status 0x{:04x}", r.header.status.0);
            self.failed(f.query, &why);
        } else {
            self.answered(now, f.query, &r);
        }
        self.maybe_finish(now);
        true
    }

    fn answered(&mut self, now: Time, q: Query, r: &PerfRepr) {
        match q {
            Query::Cpi { lid } => {
                let caps = match r.attr::<ClassPortInfoRepr>() {
                    Ok(c) if c.capability_mask & (cap::EXT_WIDTH | cap::EXT_WIDTH_NO_IETF) != 0 => {
                        Caps::Ext
                    }
                    _ => Caps::Basic,
                };
                self.cpi_known(lid, caps);
            }
            Query::Pc { key, .. } => match r.attr::<PortCountersRepr>() {
                Ok(pc) => {
                    if let Some(p) = self.partial.get_mut(&key) {
                        p.pc = Some(pc);
                        p.pc_done = true;
                    }
                    self.complete(now, key);
                }
                Err(e) => self.failed(q, &e.to_string()),
            },
            Query::Pce { key, .. } => match r.attr::<PortCountersExtRepr>() {
                Ok(pce) => {
                    if let Some(p) = self.partial.get_mut(&key) {
                        p.pce = Some(pce);
                        p.want_ext = false;
                    }
                    self.complete(now, key);
                }
                Err(e) => self.failed(q, &e.to_string()),
            },
            Query::Clear { key, select, .. } => {
                if let Some(rec) = self.records.get_mut(&key) {
                    rec.clears += 1;
                    if let Some(last) = rec.last.as_mut() {
                        for c in Counter::ALL {
                            if c.pc_select() & select != 0 {
                                last.set(c, 0);
                            }
                        }
                    }
                }
            }
        }
    }

    fn cpi_known(&mut self, lid: Lid, caps: Caps) {
        self.caps.insert(lid, caps);
        let targets: Vec<Target> = self
            .targets
            .iter()
            .filter(|t| t.lid == lid)
            .cloned()
            .collect();
        for t in &targets {
            self.queue_ports(t, caps);
        }
    }

    fn failed(&mut self, q: Query, why: &str) {
        match q {
            Query::Cpi { lid } => {
                self.log(
                    Level::Verbose,
                    format!(
                        "perfmgr: ClassPortInfo of LID {} {why}; PortCounters only",
                        lid.0
                    ),
                );
                self.cpi_known(lid, Caps::Basic);
            }
            Query::Pc { key, lid } => {
                self.log(
                    Level::Error,
                    format!(
                        "ERR 5402: perfmgr: PortCounters of node {} port {} (LID {}) {why}",
                        key.0, key.1 .0, lid.0
                    ),
                );
                self.partial.remove(&key);
            }
            Query::Pce { key, lid } => {
                // The PMA has no extended counters after all: PortCounters from now on.
                self.caps.insert(lid, Caps::Basic);
                if let Some(p) = self.partial.get_mut(&key) {
                    p.want_ext = false;
                }
                // PortCounters already answered: the sample is complete without them.
                self.complete_at_failure(key);
            }
            Query::Clear { key, lid, .. } => self.log(
                Level::Error,
                format!(
                    "ERR 5403: perfmgr: clearing the counters of node {} port {} (LID {}) {why}",
                    key.0, key.1 .0, lid.0
                ),
            ),
        }
    }

    fn complete_at_failure(&mut self, key: Key) {
        // A sample waiting only for the extended counters goes on with PortCounters' 32 bits.
        self.complete(self.sweep_start.unwrap_or(Time::ZERO), key);
    }

    /// Folds a finished sample into the port's totals, logs and clears.
    fn complete(&mut self, now: Time, key: Key) {
        let Some(p) = self.partial.get(&key).copied() else {
            return;
        };
        if !p.pc_done || p.want_ext {
            return;
        }
        self.partial.remove(&key);
        let Some(pc) = p.pc else {
            return;
        };
        let mut raw = Counters::from_pc(&pc);
        if let Some(e) = &p.pce {
            raw.merge_ext(e);
        }
        let ext = p.pce.is_some();
        let Some(rec) = self.records.get_mut(&key) else {
            return;
        };
        let mut delta = Counters::default();
        for c in Counter::ALL {
            let now_v = raw.get(c);
            let d = match rec.last {
                // Below the last value: cleared by someone else since; all of it is new.
                Some(l) if now_v >= l.get(c) => now_v - l.get(c),
                Some(_) => now_v,
                None => 0,
            };
            delta.set(c, d);
            if rec.last.is_none() {
                // The first sample is the baseline: what the port counted before is its own.
                rec.total.set(c, now_v);
            } else {
                rec.total.set(c, rec.total.get(c).saturating_add(d));
            }
        }
        rec.last = Some(raw);
        rec.last_sample = Some(now);
        rec.samples += 1;
        self.stats.ports += 1;
        let (guid, desc, lid) = (rec.node_guid, rec.node_desc.clone(), rec.lid);
        let had_baseline = rec.samples > 1;
        // Log error increases.
        if self.cfg.log_errors && had_baseline {
            let errs: Vec<String> = Counter::ALL
                .iter()
                .filter(|c| c.is_error() && delta.get(**c) > 0)
                .map(|c| format!("{} +{}", c.name(), delta.get(*c)))
                .collect();
            if !errs.is_empty() {
                self.log(
                    Level::Error,
                    format!(
                        "ERR 5401: perfmgr: errors on node {guid} \"{desc}\" port {}: {}",
                        key.1 .0,
                        errs.join(", ")
                    ),
                );
            }
        }
        if self.cfg.xmit_wait_log
            && had_baseline
            && delta.get(Counter::XmitWait) > self.cfg.xmit_wait_threshold
        {
            self.log(
                Level::Info,
                format!(
                    "perfmgr: PortXmitWait +{} on node {guid} \"{desc}\" port {} (threshold {})",
                    delta.get(Counter::XmitWait),
                    key.1 .0,
                    self.cfg.xmit_wait_threshold
                ),
            );
        }
        // Clear what is past ¾ of its PortCounters width, before it saturates.
        let mut select = 0u32;
        for c in Counter::ALL {
            let bits = c.pc_bits();
            if bits >= 64 || (ext && c.from_ext()) {
                continue;
            }
            let max = (1u64 << bits) - 1;
            if raw.get(c) > max / 4 * 3 {
                select |= c.pc_select();
            }
        }
        if select != 0 {
            self.stats.clears += 1;
            self.queue.push_back(Query::Clear { key, lid, select });
        }
    }

    fn log(&mut self, level: Level, line: String) {
        self.events.push_back(PerfEvent::Log { level, line });
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<PerfEvent> {
        self.events.pop_front()
    }
}

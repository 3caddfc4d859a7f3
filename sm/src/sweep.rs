//! The sweep pipeline: what a heavy sweep does — discovery ([`crate::discovery`]) → the
//! election poll (answers go to the role machine, [`crate::role`]) → LID assignment
//! ([`crate::lid`]) → routing ([`crate::routing::route_chain_with`]) → programming
//! ([`crate::program`]) → Init→Armed → Armed→Active → `SUBNET UP` — and the light sweep
//! (SwitchInfo of every switch; a PortStateChange or a silent switch asks for a heavy sweep).
//!
//! [`Sweep`] owns the pipeline's state: its [`Stage`], the phase counters, the subnet being
//! discovered, the GUID→LID map, the routes, the programming state and the errors of the
//! current sweep. It does no I/O: requests go to the SM's transaction engine, reports to its
//! event queue, timers to its timer table, all handed in as a [`Ctx`] by [`crate::Sm`], which
//! owns them and the role machine.
//!
//! Whether the pipeline may program at all is the role machine's decision: after the poll of
//! the other SMs, [`crate::role::SmRole::conclude_election`] says MASTER (carry on) or STANDBY
//! (stop; the SM programs nothing).

use std::collections::{HashMap, HashSet};

use ibmad::attr::{NodeDesc, NodeInfo, PortInfo, SmInfo, SwitchInfo};
use ibmad::{DrPath, Guid, Lid, PortNum, PortState, SmpAttrId, Time};
use zerocopy::FromBytes;

use crate::config::SmConfig;
use crate::discovery::Discovery;
use crate::event::{Event, Events, Level, Phase, PhaseStats, SweepFailure};
use crate::incremental::{Cached, Replay, MAX_RESTARTS};
use crate::lid::{assign_lids, Guid2Lid, LidConfig};
use crate::mcast::program::MftProgrammer;
use crate::mcast::{McastGroup, Mfts};
use crate::program::{self, Programmer};
use crate::role::{Election, Role, SmAddr, SmRole};
use crate::routing::{route_chain_with, Lfts, Routes};
use crate::sa::snapshot::{ConfigFacts, SaSnapshot, SmEntry, SnapshotInput};
use crate::subnet::Subnet;
use crate::timer::{Timer, TimerTable};
use crate::txn::{Engine, Failed, Purpose, Request};
use crate::ucast_cache::RoutedBase;

/// Where the sweep pipeline is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// No sweep running.
    Idle,
    /// Heavy sweep: directed-route walk.
    Discovering,
    /// Heavy sweep: asking the other SMs found by discovery for their SMInfo (the election).
    PollingSms,
    /// Heavy sweep: LID assignment, then routing (pure computation, one step per
    /// `Sm::handle_timeout`, due at once: [`Timer::Compute`]).
    Computing,
    /// Heavy sweep: SwitchInfo / PortInfo / LFT Sets.
    Programming,
    /// Heavy sweep: Init → Armed.
    Arming,
    /// Heavy sweep: Armed → Active.
    Activating,
    /// Light sweep.
    LightSweep,
    /// After SUBNET UP: reading the QoS tables the SM does not program, for the SA
    /// ([`crate::qos::program::QosReads`]).
    ReadingQos,
}

/// Immediate re-sweeps after a heavy sweep with errors before waiting for the sweep timer.
const MAX_RESWEEPS: u32 = 2;

/// The SMPs the pipeline keeps in flight (`max_wire_smps`, at least 64): the compact work
/// lists (LFT Sets, QoS Gets) are fed two windows at a time, and the LFT Sets go out
/// block-major within groups of one window's switches ([`Programmer::lft_sets`]).
fn window(cfg: &SmConfig) -> usize {
    cfg.max_wire_smps.max(64)
}

/// The end port of `s` holding `lid` (its PortInfo's LID, else the one assigned).
fn port_by_lid_in(s: &Subnet, lid: Lid) -> Option<(crate::subnet::NodeId, PortNum)> {
    if !lid.is_unicast() {
        return None;
    }
    s.end_ports().find(|&(n, p)| {
        s.port(n, p).is_some_and(|x| {
            let base = x.info.map_or(x.lid, |i| i.lid());
            let n_lids = 1u32 << x.lmc.min(7);
            base.is_unicast()
                && u32::from(lid.0) >= u32::from(base.0)
                && u32::from(lid.0) < u32::from(base.0) + n_lids
        })
    })
}

/// What the pipeline works with but does not own (all owned by [`crate::Sm`]).
pub(crate) struct Ctx<'a> {
    pub cfg: &'a SmConfig,
    pub txn: &'a mut Engine,
    pub timers: &'a mut TimerTable,
    pub events: &'a mut Events,
    pub role: &'a mut SmRole,
}

impl Ctx<'_> {
    fn submit_all(&mut self, reqs: Vec<Request>) {
        for r in reqs {
            self.txn.submit(r);
        }
    }

    fn arm_sweep(&mut self, now: Time) {
        if self.cfg.sweep_interval.is_zero() {
            self.timers.stop(Timer::Sweep);
        } else {
            self.timers.set(Timer::Sweep, now + self.cfg.sweep_interval);
        }
    }
}

/// The errors of the current heavy sweep.
#[derive(Debug, Default)]
struct SweepErrors {
    /// Directed routes on which an SMP was given up (each reported once).
    unreachable: HashSet<DrPath>,
    /// Probes of unknown remotes given up, judged when discovery ends ([`Sweep::judge_probes`]).
    probes: Vec<Failed>,
    /// Light-sweep SwitchInfo Gets given up (reported in one line when the light sweep ends).
    light_lost: Vec<DrPath>,
    /// Programming Sets that failed (error status or no answer).
    set_failures: usize,
}

/// The sweep pipeline's state. See the module documentation.
#[derive(Debug)]
pub(crate) struct Sweep {
    stage: Stage,
    phase: Phase,
    phase_start: Time,
    history: Vec<(Phase, PhaseStats)>,
    /// When the current heavy sweep began, and its counters so far (every phase of it).
    heavy_began: Time,
    heavy_stats: PhaseStats,
    disc: Discovery,
    guid2lid: Guid2Lid,
    /// Shared with the SA snapshot of the sweep that computed them.
    routes: Option<std::sync::Arc<Routes>>,
    engine_used: &'static str,
    program: Programmer,
    sm_lid: Lid,
    /// A heavy sweep brought the subnet up (until a sweep fails).
    up: bool,
    heavy_requested: bool,
    /// The next routing ignores what the switches hold (a reroute request).
    reroute_requested: bool,
    /// Switch ports marked unhealthy by link-integrity trap floods, by (node GUID, port),
    /// with when the mark ages out (OpenSM's `OSM_DEFAULT_UNHEALTHY_TIMEOUT`).
    unhealthy: HashMap<(ibmad::Guid, u8), Time>,
    /// The switch ports with a link when routes were last computed (by switch GUID): a
    /// routing that finds a new one (a new switch, a new link, a new end port) balances
    /// afresh, as OpenSM sets `ignore_existing_lfts` for a port that needs an update.
    routed_links: Option<foldhash::HashSet<(ibmad::Guid, u8)>>,
    /// Programming: the LFT reads are out, the Sets not yet planned.
    reading_lfts: bool,
    /// The current light sweep saw a change.
    light_changed: bool,
    heavy_sweeps: u64,
    /// The current heavy sweep's programming has been acknowledged.
    lfts_programmed: bool,
    /// The last heavy sweep had errors and an immediate re-sweep is scheduled.
    resweep_due: bool,
    errors: SweepErrors,
    resweeps: u32,
    /// The SA's picture of the subnet, built at the last SUBNET UP.
    snapshot: Option<std::sync::Arc<SaSnapshot>>,
    /// Every link any discovery has seen, both directions, by (node GUID, port): where a
    /// port's cable went, for judging a probe that got no answer ([`Sweep::judge_probes`]).
    links_seen: HashMap<(Guid, PortNum), (Guid, PortNum)>,
    mcast: McastState,
    /// The QoS Gets not yet handed to the transaction engine (fed as it drains, so a large
    /// fabric's millions of Gets are never queued at once), and how many were handed out.
    qos_reads: crate::qos::program::QosReads,
    qos_reads_sent: usize,
    /// SUBNET UP was just reported: the QoS reads are planned in the next
    /// [`Timer::Compute`] step, so listing millions of Gets (≈ 0.2 s at 3,920 switches) does
    /// not delay the report. Dropped if the pipeline is no longer idle by then (a heavy sweep
    /// clears it and plans its own reads).
    qos_reads_due: bool,
    /// The LFT block Sets of this sweep's programming not yet handed to the transaction
    /// engine ([`Programmer::lft_sets`]): fed a few windows at a time, as the QoS reads, so
    /// a fabric's millions of blocks are never all requests at once.
    lft_sets: std::collections::VecDeque<crate::program::LftSet>,
    /// The NodeInfo each node last answered (by NodeGUID): what an incremental walk answers a
    /// probe through a clean port with ([`crate::incremental`]).
    node_info: crate::FastMap<Guid, NodeInfo>,
    /// Nodes (by NodeGUID) seen to change since the last heavy sweep began: switches with
    /// PortStateChange at a light sweep, trap issuers.
    dirty: HashSet<Guid>,
    /// The next heavy sweep discovers the whole fabric, and why (operator, role machine, a
    /// trap from an unknown LID).
    full_reason: Option<String>,
    /// The dirty set comes from a light sweep that just ended (every switch's
    /// PortStateChange was read).
    psc_fresh: bool,
    /// A light sweep runs before the requested heavy sweep to find the switches that changed.
    heavy_after_light: bool,
    /// Switches (by NodeGUID) the last light sweep could not read.
    light_silent: HashSet<Guid>,
    /// The light sweep before a trap's heavy sweep: switches that only a trap issuer's ports
    /// reach, read once the issuers' ports are in ([`Sweep::light_second_pass`]); the
    /// issuers (by NodeGUID) whose ports were read; and the ports read Down (or not read).
    light_deferred: Vec<crate::subnet::NodeId>,
    light_read: HashSet<Guid>,
    light_dead: HashSet<(crate::subnet::NodeId, PortNum)>,
    /// The light sweep run before the requested heavy sweep: when it began and its figures,
    /// added to the heavy sweep's.
    pre_pass: Option<(Time, PhaseStats)>,
    /// The current heavy sweep's walk replays the previous model (an incremental sweep).
    replay: Option<Replay>,
    /// The topology and tables of the last routing computed (`use_ucast_cache`).
    ucast_base: Option<RoutedBase>,
}

/// The multicast side of the pipeline: the groups the SA reported, the tables computed from
/// them, and their programming ([`crate::mcast`]).
#[derive(Debug, Default)]
struct McastState {
    groups: Vec<McastGroup>,
    mfts: Option<std::sync::Arc<Mfts>>,
    prog: MftProgrammer,
    /// The groups changed since the last pass.
    dirty: bool,
}

impl Sweep {
    pub fn new(cfg: &SmConfig) -> Sweep {
        let (disc, _) = Discovery::start(cfg.port);
        Sweep {
            stage: Stage::Idle,
            phase: Phase::Discovery,
            phase_start: Time::ZERO,
            history: Vec::new(),
            heavy_began: Time::ZERO,
            heavy_stats: PhaseStats::default(),
            disc,
            guid2lid: Guid2Lid::new(),
            routes: None,
            engine_used: "none",
            program: Programmer::default(),
            sm_lid: Lid::UNASSIGNED,
            up: false,
            heavy_requested: false,
            reroute_requested: false,
            unhealthy: HashMap::new(),
            routed_links: None,
            reading_lfts: false,
            light_changed: false,
            heavy_sweeps: 0,
            lfts_programmed: false,
            resweep_due: false,
            errors: SweepErrors::default(),
            resweeps: 0,
            snapshot: None,
            links_seen: HashMap::new(),
            mcast: McastState::default(),
            qos_reads: crate::qos::program::QosReads::default(),
            qos_reads_sent: 0,
            qos_reads_due: false,
            lft_sets: std::collections::VecDeque::new(),
            node_info: crate::FastMap::default(),
            dirty: HashSet::new(),
            full_reason: None,
            psc_fresh: false,
            heavy_after_light: false,
            light_silent: HashSet::new(),
            light_deferred: Vec::new(),
            light_read: HashSet::new(),
            light_dead: HashSet::new(),
            pre_pass: None,
            replay: None,
            ucast_base: None,
        }
    }

    // ----- state for the accessors of `Sm` ---------------------------------------------

    pub fn stage(&self) -> Stage {
        self.stage
    }
    pub fn subnet(&self) -> &Subnet {
        &self.disc.subnet
    }
    pub fn discovery(&self) -> &Discovery {
        &self.disc
    }
    pub fn routes(&self) -> Option<&Routes> {
        self.routes.as_deref()
    }
    pub fn known_qos(&self, id: crate::subnet::NodeId) -> Option<&crate::qos::program::KnownQos> {
        self.program.known_qos(self.disc.subnet.node(id).guid)
    }
    pub fn sa_snapshot(&self) -> Option<&std::sync::Arc<SaSnapshot>> {
        self.snapshot.as_ref()
    }

    /// The SA snapshot of the subnet as this sweep brought it up (see [`crate::sa::snapshot`]).
    fn build_snapshot(&self, cx: &Ctx<'_>) -> SaSnapshot {
        let known = |id| self.known_qos(id);
        let others: Vec<_> = cx.role.known_sms().iter().map(|k| k.info).collect();
        let facts = cx.role.sminfo_facts(cx.cfg.m_key, 0);
        let mut snap = SaSnapshot::build(&SnapshotInput {
            generation: self.heavy_sweeps,
            subnet: &self.disc.subnet,
            routes: self.routes.as_ref(),
            known_qos: &known,
            own: SmEntry {
                guid: facts.guid,
                lid: self.sm_lid,
                sm_key: facts.sm_key,
                act_count: facts.act_count,
                priority: facts.priority,
                state: facts.state,
            },
            others: &others,
            facts: ConfigFacts {
                subnet_prefix: cx.cfg.subnet_prefix,
                subnet_timeout: cx.cfg.subnet_timeout,
                lmc: cx.cfg.lmc,
                packet_life_time: cx.cfg.packet_life_time,
                sm_key: cx.cfg.sm_key,
                sm_lid: self.sm_lid,
                max_op_vls: cx.cfg.max_op_vls,
                qos: cx.cfg.qos.enabled,
            },
            qos_policy: cx.cfg.qos.policy.as_ref(),
        });
        // The P_Key tables the SM programmed (partitions): end ports and the switch ports
        // facing them, in index order.
        snap.pkeys = self
            .program
            .pkey_plan()
            .tables()
            .into_iter()
            .map(|t| {
                let v = t.table.iter().map(|&k| ibmad::PKey(k)).collect();
                ((t.node, t.port), v)
            })
            .collect();
        // The multicast groups the partitions pre-create (the SA creates them).
        snap.mcast_groups = cx
            .cfg
            .partitions
            .partitions
            .iter()
            .flat_map(|p| p.groups.iter().copied())
            .collect();
        // Their PathRecord SLs (partitions.conf `sl=`; 0 without qos, as OpenSM's).
        snap.partition_sls = cx
            .cfg
            .partitions
            .partitions
            .iter()
            .map(|p| (p.pkey, p.sl))
            .collect();
        snap
    }

    pub fn pkey_plan(&self) -> &crate::partition::PkeyPlan {
        self.program.pkey_plan()
    }
    pub fn known_pkeys(&self) -> &crate::partition::KnownPkeys {
        self.program.known_pkeys()
    }
    pub fn engine_used(&self) -> &'static str {
        self.engine_used
    }
    pub fn guid2lid(&self) -> &Guid2Lid {
        &self.guid2lid
    }
    pub fn set_guid2lid(&mut self, map: Guid2Lid) {
        self.guid2lid = map;
    }
    pub fn is_up(&self) -> bool {
        self.up
    }
    pub fn sm_lid(&self) -> Lid {
        self.sm_lid
    }
    pub fn history(&self) -> &[(Phase, PhaseStats)] {
        &self.history
    }
    pub fn heavy_sweeps(&self) -> u64 {
        self.heavy_sweeps
    }
    pub fn resweep_due(&self) -> bool {
        self.resweep_due
    }

    /// The LID the SM's own port holds now (as last read or acknowledged; 0 before the first
    /// discovery): a standby's is the one its master assigned.
    pub fn own_port_lid(&self) -> Lid {
        let s = &self.disc.subnet;
        s.sm_port()
            .and_then(|(n, p)| {
                let p = if s.node(n).is_switch() { PortNum(0) } else { p };
                s.port(n, p)
            })
            .and_then(|x| x.info)
            .map_or(Lid::UNASSIGNED, |i| i.lid())
    }

    /// The CapabilityMask of the SM's own port, as last read.
    pub fn own_port_capability_mask(&self) -> u32 {
        let s = &self.disc.subnet;
        s.sm_port()
            .and_then(|(n, p)| s.port(n, p))
            .and_then(|x| x.info)
            .map_or(0, |i| i.capability_mask.get())
    }

    /// The type of the SM's own node, once discovered.
    pub fn own_node_type(&self) -> Option<ibmad::NodeType> {
        let s = &self.disc.subnet;
        s.sm_port().map(|(n, _)| s.node(n).node_type)
    }

    /// The end port holding `lid` in the current model.
    fn port_by_lid(&self, lid: Lid) -> Option<(crate::subnet::NodeId, PortNum)> {
        port_by_lid_in(&self.disc.subnet, lid)
    }

    // ----- requests from the SM --------------------------------------------------------

    /// Sweep timer or operator `Sweep`: a light sweep when the subnet is up and the pipeline
    /// idle, else a heavy sweep. Nothing while STANDBY or NOTACTIVE: such an SM sweeps only
    /// when the role machine says so.
    pub fn request_sweep(&mut self, now: Time, cx: &mut Ctx<'_>) {
        if !cx.role.may_sweep() {
            return;
        }
        if !self.up || cx.cfg.force_heavy_sweep {
            self.heavy_requested = true;
        } else if self.stage == Stage::Idle {
            self.start_light(now, cx);
        } else if self.stage == Stage::ReadingQos {
            // The light sweep waits for the next interval.
            cx.arm_sweep(now);
        }
    }

    /// A heavy sweep as soon as the pipeline is idle (while DISCOVERING or MASTER); an
    /// incremental one when the model allows it ([`crate::incremental`]).
    pub fn request_heavy(&mut self) {
        self.heavy_requested = true;
    }

    /// A heavy sweep that discovers the whole fabric (an operator's `sweep heavy`: the model
    /// is not trusted).
    pub fn request_full(&mut self, why: &str) {
        self.full_reason.get_or_insert_with(|| why.to_string());
        self.heavy_requested = true;
    }

    /// A heavy sweep whose routing ignores the tables the switches hold (OpenSM's reroute:
    /// every route chosen afresh, balance restored), with a full discovery.
    pub fn request_reroute(&mut self) {
        self.reroute_requested = true;
        self.request_full("reroute requested");
    }

    /// Port `port` of the node at `lid` flooded link-integrity traps (129–131): it is marked
    /// unhealthy until `until`, and a heavy sweep routes around it (OpenSM
    /// `shutup_noisy_port`). Returns the node's GUID if the port was not marked yet; `None`
    /// if it was, or if no node has that LID.
    pub fn mark_unhealthy(&mut self, lid: Lid, port: u8, until: Time) -> Option<ibmad::Guid> {
        let (id, _) = self.port_by_lid(lid)?;
        let guid = self.disc.subnet.node(id).guid;
        let fresh = self.unhealthy.insert((guid, port), until).is_none();
        if let Some(p) = self.disc.subnet.port_mut(id, PortNum(port)) {
            p.unhealthy = true;
        }
        if fresh {
            self.request_full("a port flooded link-integrity traps");
        }
        fresh.then_some(guid)
    }

    /// The unhealthy marks that have not aged out by `now`, applied to the subnet about to be
    /// routed (discovery builds its ports afresh).
    fn apply_health(&mut self, now: Time) {
        self.unhealthy.retain(|_, until| *until > now);
        let s = &mut self.disc.subnet;
        let ids: Vec<_> = s.node_ids().collect();
        for id in ids {
            let guid = s.node(id).guid;
            for p in 0..=s.node(id).num_ports {
                let bad = self.unhealthy.contains_key(&(guid, p));
                if let Some(port) = s.port_mut(id, PortNum(p)) {
                    port.unhealthy = bad;
                }
            }
        }
    }

    /// `babbling_port_policy`: disables port `port` of the node at `lid` (a PortInfo Set with
    /// PortPhysicalState Disabled, IBA vol1 §14.2.5.6; OpenSM `disable_port`). Returns the node's GUID, or `None`
    /// if no node has that LID or the port was never read.
    pub fn disable_port(&mut self, lid: Lid, port: u8, cx: &mut Ctx<'_>) -> Option<ibmad::Guid> {
        let (id, _) = self.port_by_lid(lid)?;
        let p = PortNum(port);
        let info = self.disc.subnet.port(id, p)?.info?;
        let mut set = crate::program::state_set(&info, ibmad::PortState::NO_CHANGE);
        set.set_phys_state(ibmad::PhysState::DISABLED);
        cx.txn.submit(Request::set(
            self.disc.port_path(id, p),
            SmpAttrId::PORT_INFO,
            crate::program::port_info_set_mod(&self.disc.subnet, id, p),
            crate::discovery::data_of(&set),
            Purpose::SetPortInfo(id, p),
        ));
        Some(self.disc.subnet.node(id).guid)
    }

    /// Switch ports marked unhealthy now, by (node GUID, port).
    #[must_use]
    pub fn unhealthy_ports(&self) -> Vec<(ibmad::Guid, u8)> {
        let mut v: Vec<_> = self.unhealthy.keys().copied().collect();
        v.sort();
        v
    }

    /// A trap (128, 144) from `issuer` asks for a heavy sweep: the node at that LID is
    /// dirty; a LID the model does not hold makes the next heavy sweep a full one.
    pub fn note_trap(&mut self, issuer: Lid) {
        let found = self
            .port_by_lid(issuer)
            .map(|(id, _)| self.disc.subnet.node(id).guid);
        let found = found.or_else(|| {
            let old = &self.replay.as_ref()?.old;
            port_by_lid_in(old, issuer).map(|(id, _)| old.node(id).guid)
        });
        match found {
            Some(g) => {
                self.dirty.insert(g);
            }
            None => {
                self.full_reason.get_or_insert_with(|| {
                    format!("a trap from LID {} the model does not hold", issuer.0)
                });
            }
        }
    }

    /// The switch ports that have a link now, by switch GUID.
    fn linked_switch_ports(&self) -> foldhash::HashSet<(ibmad::Guid, u8)> {
        let s = &self.disc.subnet;
        s.switches()
            .flat_map(|id| {
                let n = s.node(id);
                (1..=n.num_ports)
                    .filter_map(move |p| s.is_link_up(id, PortNum(p)).then_some((n.guid, p)))
            })
            .collect()
    }

    /// The role machine's heavy sweep from scratch (failover, handover, DISCOVER).
    pub fn request_rediscover(&mut self) {
        self.request_full("the role machine asked for a discovery");
    }

    /// Trap 144 reported a new NodeDescription at `lid`: read it again (when no sweep runs;
    /// a running heavy sweep reads every description anyway).
    pub fn refresh_node_desc(&mut self, lid: Lid, cx: &mut Ctx<'_>) {
        if self.stage != Stage::Idle {
            return;
        }
        if let Some((id, _)) = self.port_by_lid(lid) {
            let path = self.disc.subnet.node(id).dr_path;
            cx.txn.submit(Request::get(
                path,
                SmpAttrId::NODE_DESC,
                0,
                Purpose::NodeDesc(id),
            ));
        }
    }

    // ----- answers -----------------------------------------------------------------------

    /// A successful answer to a request this pipeline sent.
    pub fn on_answer(&mut self, req: &Request, data: &[u8; 64], cx: &mut Ctx<'_>) {
        let mut out = Vec::new();
        match req.purpose {
            Purpose::Probe { from } => {
                if let Ok((ni, _)) = NodeInfo::ref_from_prefix(data) {
                    let mut evs = Vec::new();
                    self.disc
                        .on_node_info(req.path, from, ni, &mut out, &mut evs);
                    cx.events.extend(evs);
                    let guid = ni.node_guid();
                    let s = &self.disc.subnet;
                    if s.node_by_guid(guid).is_some_and(|id| {
                        let n = s.node(id);
                        n.node_type == ni.node_type() && n.num_ports == ni.num_ports
                    }) {
                        self.node_info.insert(guid, *ni);
                        // A CA sets no PortStateChange: one reached by a real probe (behind a
                        // port of a dirty switch) is read again.
                        if let Some(r) = self.replay.as_mut() {
                            if ni.node_type() != ibmad::NodeType::SWITCH {
                                r.dirty.insert(guid);
                            }
                        }
                    }
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
                    if let Some(rep) = self.replay.as_mut().filter(|r| r.verifying) {
                        rep.on_verified(
                            self.disc.subnet.node(id).guid,
                            si.port_state_change() != 0,
                        );
                    }
                }
            }
            Purpose::PortInfo(id, p) => {
                if let Ok((pi, _)) = PortInfo::ref_from_prefix(data) {
                    self.disc.on_port_info(id, p, pi, &mut out);
                }
            }
            Purpose::SetSwitchInfo(_)
            | Purpose::SetLft(..)
            | Purpose::GetLft(..)
            | Purpose::SetPortInfo(..) => {
                if let Purpose::SetPortInfo(id, p) = req.purpose {
                    self.program
                        .on_port_info_set_ack(&self.disc.subnet, id, p, &req.data, data);
                }
                self.program.on_ack(&mut self.disc, req.purpose, data);
            }
            Purpose::SetQos(id, p) | Purpose::GetQos(id, p) => {
                self.program
                    .on_qos_ack(&self.disc, id, p, req.attr, req.attr_mod, data);
            }
            Purpose::GetPkeys(id, p, b) | Purpose::SetPkeys(id, p, b) => {
                self.program.on_pkey_ack(&self.disc, id, p, b, data);
            }
            Purpose::SetMft(id, b, pos) => {
                self.mcast.prog.on_ack(&self.disc.subnet, id, b, pos, data);
            }
            Purpose::LightPortInfo(id, p) => {
                let was = self.disc.subnet.port(id, p).and_then(|x| x.info);
                if let Ok((pi, _)) = PortInfo::ref_from_prefix(data) {
                    if pi.port_state() == PortState::DOWN {
                        self.light_dead.insert((id, p));
                    }
                }
                if let (Ok((pi, _)), Some(was)) = (PortInfo::ref_from_prefix(data), was) {
                    if (pi.port_state(), pi.phys_state()) != (was.port_state(), was.phys_state()) {
                        self.dirty.insert(self.disc.subnet.node(id).guid);
                        cx.events.log(
                            Level::Info,
                            format!(
                                "light sweep: port {} of {} is now {} / {}",
                                p.0,
                                self.disc.subnet.node(id).guid,
                                pi.port_state(),
                                pi.phys_state()
                            ),
                        );
                        self.light_changed = true;
                    }
                }
            }
            Purpose::LightSwitchInfo(id) => {
                if let Ok((si, _)) = SwitchInfo::ref_from_prefix(data) {
                    if si.port_state_change() != 0 {
                        self.light_changed = true;
                        self.dirty.insert(self.disc.subnet.node(id).guid);
                    }
                }
            }
            Purpose::SmInfo(id, p) => {
                if let Ok((info, _)) = SmInfo::ref_from_prefix(data) {
                    let s = &self.disc.subnet;
                    let addr = SmAddr {
                        guid: info.guid(),
                        path: self.disc.port_path(id, p),
                        lid: s
                            .port(id, p)
                            .and_then(|x| x.info)
                            .map_or(Lid::UNASSIGNED, |i| i.lid()),
                    };
                    cx.events.log(
                        Level::Verbose,
                        format!(
                            "SM {} at {}: {} with priority {}",
                            info.guid(),
                            addr.path,
                            info.sm_state(),
                            info.priority()
                        ),
                    );
                    cx.role.on_remote_sm(info, addr);
                }
            }
            Purpose::LightSmInfo(_) => {
                if let Ok((info, _)) = SmInfo::ref_from_prefix(data) {
                    if cx.role.on_light_sweep_sm(info) {
                        cx.events.log(
                            Level::Info,
                            format!(
                                "light sweep: SM {} is {} with priority {}: a heavy sweep decides who is master",
                                info.guid(),
                                info.sm_state(),
                                info.priority()
                            ),
                        );
                        self.light_changed = true;
                    }
                }
            }
            Purpose::SmPoll(_) | Purpose::SmSet(_) => {}
        }
        self.dispatch(out, cx);
    }

    /// Hands the walk's requests to the transaction engine, except those an incremental
    /// sweep answers from the previous model at once (breadth first, as the wire would).
    fn dispatch(&mut self, reqs: Vec<Request>, cx: &mut Ctx<'_>) {
        if self.replay.is_none() {
            cx.submit_all(reqs);
            return;
        }
        let mut queue: std::collections::VecDeque<Request> = reqs.into();
        while let Some(r) = queue.pop_front() {
            let Some(rep) = self.replay.as_mut() else {
                cx.txn.submit(r);
                continue;
            };
            let Some(ans) = rep.answer(&self.disc, &self.node_info, &r) else {
                cx.txn.submit(r);
                continue;
            };
            rep.cached += 1;
            let mut out = Vec::new();
            match (ans, r.purpose) {
                (Cached::NodeInfo(ni), Purpose::Probe { from }) => {
                    let mut evs = Vec::new();
                    self.disc
                        .on_node_info(r.path, from, &ni, &mut out, &mut evs);
                    if !evs.is_empty() {
                        // The model's answer contradicts what the walk found: the node it
                        // came from is stale.
                        if let (Some((id, _)), Some(rep)) = (from, self.replay.as_mut()) {
                            rep.suspects.insert(self.disc.subnet.node(id).guid);
                        }
                    }
                }
                (Cached::Desc(d), Purpose::NodeDesc(id)) => {
                    if let Some(n) = self.disc.subnet.nodes.get_mut(id.idx()) {
                        n.desc = d;
                    }
                }
                (Cached::SwitchInfo(si), Purpose::SwitchInfo(id)) => {
                    self.disc.on_switch_info(id, &si);
                }
                (Cached::PortInfo(pi), Purpose::PortInfo(id, p)) => {
                    self.disc.on_port_info(id, p, &pi, &mut out);
                }
                _ => {}
            }
            queue.extend(out);
        }
    }

    /// An answer with an error status.
    pub fn on_error_status(&mut self, req: &Request) {
        match req.purpose {
            Purpose::SetPortInfo(..)
            | Purpose::SetLft(..)
            | Purpose::SetSwitchInfo(_)
            | Purpose::SetMft(..)
            | Purpose::SetQos(..)
            | Purpose::SetPkeys(..) => {
                self.errors.set_failures += 1;
            }
            Purpose::LightSwitchInfo(id) => {
                self.light_changed = true;
                self.dirty.insert(self.disc.subnet.node(id).guid);
            }
            _ => {}
        }
    }

    /// A request given up after its last retry.
    pub fn on_failed(&mut self, f: Failed, cx: &mut Ctx<'_>) {
        if let Purpose::LightSmInfo(guid) = f.req.purpose {
            cx.events.log(
                Level::Verbose,
                format!("light sweep: SM {guid} did not answer SMInfo Get"),
            );
            return;
        }
        if let Purpose::SmInfo(..) = f.req.purpose {
            // The port advertises IsSM but no SM answers: it takes no part in the election.
            cx.events.push(Event::SmSilent {
                dr_path: f.req.path,
            });
            return;
        }
        if let Purpose::Probe { from: Some(_) } = f.req.purpose {
            self.errors.probes.push(f);
            return;
        }
        if let Purpose::LightSwitchInfo(id) = f.req.purpose {
            self.light_silent.insert(self.disc.subnet.node(id).guid);
        }
        if let (Purpose::SwitchInfo(id), Some(rep)) = (f.req.purpose, self.replay.as_mut()) {
            if rep.verifying {
                rep.on_silent(&self.disc.subnet, id);
                return;
            }
        }
        if let Purpose::LightPortInfo(id, p) = f.req.purpose {
            self.light_dead.insert((id, p));
        }
        if let Purpose::LightSwitchInfo(_) | Purpose::LightPortInfo(..) = f.req.purpose {
            self.errors.light_lost.push(f.req.path);
            self.light_changed = true;
            return;
        }
        if self.errors.unreachable.insert(f.req.path) {
            cx.events.push(Event::NodeUnreachable {
                dr_path: f.req.path,
                attempts: f.attempts,
                method: f.req.method,
                attr: f.req.attr,
            });
        }
        match f.req.purpose {
            Purpose::LightSwitchInfo(_) => self.light_changed = true,
            Purpose::SetPortInfo(..)
            | Purpose::SetLft(..)
            | Purpose::SetSwitchInfo(_)
            | Purpose::SetMft(..)
            | Purpose::SetQos(..)
            | Purpose::SetPkeys(..) => {
                self.errors.set_failures += 1;
            }
            _ => {}
        }
    }

    // ----- the pipeline ------------------------------------------------------------------

    /// Advances the pipeline as far as it can go without new input.
    pub fn step(&mut self, now: Time, cx: &mut Ctx<'_>) {
        loop {
            if self.stage == Stage::ReadingQos {
                self.feed_qos_reads(cx);
            }
            if !self.lft_sets.is_empty() {
                self.feed_lft_sets(cx);
            }
            if !cx.txn.is_idle() {
                return;
            }
            match self.stage {
                Stage::Idle => {
                    if self.heavy_requested
                        && cx.role.may_sweep()
                        && !self.psc_fresh
                        && self.full_discovery_reason(cx).is_none()
                    {
                        // Asked for by a trap, not a light sweep: read every switch's
                        // PortStateChange first, so the incremental walk knows every switch
                        // that changed, not only the one that sent the trap.
                        self.heavy_requested = false;
                        self.heavy_after_light = true;
                        cx.events.log(
                            Level::Verbose,
                            "heavy sweep requested: a light sweep first finds the switches that changed".into(),
                        );
                        self.start_light(now, cx);
                    } else if self.heavy_requested && cx.role.may_sweep() {
                        self.start_heavy(now, cx);
                    } else if self.mcast.dirty && self.up && cx.role.role() == Role::Master {
                        self.mcast_pass(cx);
                    } else {
                        return;
                    }
                }
                Stage::Discovering => self.finish_discovery(now, cx),
                Stage::PollingSms => self.finish_sm_poll(now, cx),
                Stage::Computing => return,
                Stage::Programming if self.reading_lfts => self.plan_programming(cx),
                Stage::Programming => {
                    self.end_phase(now, cx);
                    self.lfts_programmed = true;
                    self.start_arming(now, cx);
                }
                Stage::Arming => {
                    self.end_phase(now, cx);
                    self.start_activation(now, cx);
                }
                Stage::Activating => {
                    self.end_phase(now, cx);
                    self.finish_heavy(now, cx);
                }
                Stage::ReadingQos => self.finish_qos_reads(now, cx),
                Stage::LightSweep if !self.light_deferred.is_empty() => {
                    self.light_second_pass(cx);
                }
                Stage::LightSweep => {
                    let began = self.phase_start;
                    let stats = self.end_phase(now, cx);
                    if self.heavy_after_light {
                        // The heavy sweep's own first step: its figures count it.
                        self.pre_pass = Some((began, stats));
                    }
                    self.stage = Stage::Idle;
                    let lost = std::mem::take(&mut self.errors.light_lost);
                    if let Some(first) = lost.iter().min_by_key(|p| (p.len(), p.ports())) {
                        // One line for every switch behind one dead link, not one each.
                        cx.events.log(
                            Level::Info,
                            format!(
                                "light sweep: {} request(s) to switches went unanswered (nearest at directed route {first})",
                                lost.len()
                            ),
                        );
                    }
                    if self.light_changed || self.heavy_after_light {
                        cx.events.log(
                            Level::Info,
                            format!(
                                "light sweep found a change: starting heavy sweep ({} switches changed)",
                                self.dirty.len()
                            ),
                        );
                        self.heavy_after_light = false;
                        self.heavy_requested = true;
                        self.psc_fresh = true;
                    } else {
                        cx.arm_sweep(now);
                    }
                }
            }
        }
    }

    fn end_phase(&mut self, now: Time, cx: &mut Ctx<'_>) -> PhaseStats {
        let mut stats = cx.txn.take_stats();
        stats.elapsed = now.saturating_since(self.phase_start);
        self.history.push((self.phase, stats));
        if !matches!(self.phase, Phase::LightSweep | Phase::QosRead) {
            self.heavy_stats.add(&stats);
        }
        cx.events.push(Event::PhaseDone {
            phase: self.phase,
            stats,
        });
        if !matches!(self.phase, Phase::LightSweep | Phase::QosRead) && stats.smps > 0 {
            let w = cx.txn.window();
            let us = |d: Option<core::time::Duration>| {
                d.map_or("-".to_string(), |d| format!("{:.0}", d.as_secs_f64() * 1e6))
            };
            cx.events.log(
                Level::Info,
                format!(
                    "SMP window after {}: {} (peak {}, ceiling {}; least RTT {} µs, last interval's {} µs)",
                    self.phase,
                    w.limit(),
                    w.peak(),
                    cx.cfg.max_wire_smps,
                    us(w.floor_rtt()),
                    us(w.last_rtt())
                ),
            );
        }
        self.phase_start = now;
        stats
    }

    fn begin(&mut self, now: Time, phase: Phase, stage: Stage) {
        self.phase = phase;
        self.phase_start = now;
        self.stage = stage;
    }

    fn start_light(&mut self, now: Time, cx: &mut Ctx<'_>) {
        self.begin(now, Phase::LightSweep, Stage::LightSweep);
        self.light_changed = false;
        self.light_silent.clear();
        self.pre_pass = None;
        self.light_deferred.clear();
        self.light_read.clear();
        self.light_dead.clear();
        let s = &self.disc.subnet;
        // Before a heavy sweep asked for by traps, the switches known to have changed (the
        // trap issuers: dirty) are read by the walk anyway, and every other switch is read
        // by directed route around them ([`crate::incremental::routes_around`]): the link
        // that failed has a trap issuer at one end, so no Get is lost on it.
        let around = (self.heavy_after_light && !self.dirty.is_empty())
            .then(|| crate::incremental::routes_around(s, &self.dirty, &HashSet::new()));
        let dirty = &self.dirty;
        // Switches reached only through an issuer (the SM's own switch, say): the issuers'
        // linked ports are read first, and those switches afterwards around the ports found
        // Down ([`Sweep::light_second_pass`]).
        let mut issuer_reads = Vec::new();
        if let Some(m) = &around {
            self.light_deferred = s
                .switches()
                .filter(|id| !dirty.contains(&s.node(*id).guid) && !m.contains_key(id))
                .collect();
            if !self.light_deferred.is_empty() {
                for id in s.switches() {
                    let n = s.node(id);
                    let (true, Some(&path)) = (dirty.contains(&n.guid), m.get(&id)) else {
                        continue;
                    };
                    self.light_read.insert(n.guid);
                    for p in 1..=n.num_ports {
                        if s.port(id, PortNum(p)).is_some_and(|x| x.remote.is_some()) {
                            issuer_reads.push(Request::get(
                                path,
                                SmpAttrId::PORT_INFO,
                                p.into(),
                                Purpose::LightPortInfo(id, PortNum(p)),
                            ));
                        }
                    }
                }
            }
        }
        cx.submit_all(issuer_reads);
        let deferred: HashSet<_> = self.light_deferred.iter().copied().collect();
        let reqs: Vec<Request> = s
            .switches()
            .filter(|&id| around.is_none() || !dirty.contains(&s.node(id).guid))
            .filter(|id| !deferred.contains(id))
            .map(|id| {
                let path = around.as_ref().and_then(|m| m.get(&id).copied());
                self.light_switch_get(cx.cfg, id, path)
            })
            .collect();
        cx.submit_all(reqs);
        // Ports up on one side only: re-read, since a change there sends no trap.
        let around = &around;
        let half: Vec<Request> = s
            .switches()
            .filter(|&id| around.is_none() || !dirty.contains(&s.node(id).guid))
            .flat_map(|id| {
                let n = s.node(id);
                let path = around
                    .as_ref()
                    .and_then(|m| m.get(&id).copied())
                    .unwrap_or(n.dr_path);
                (1..=n.num_ports).filter_map(move |p| {
                    let port = s.port(id, PortNum(p))?;
                    (port.remote.is_none()
                        && port.info.is_some()
                        && port.state() != PortState::DOWN)
                        .then(|| {
                            Request::get(
                                path,
                                SmpAttrId::PORT_INFO,
                                p.into(),
                                Purpose::LightPortInfo(id, PortNum(p)),
                            )
                        })
                })
            })
            .collect();
        cx.submit_all(half);
        // The other SMs: one that became master, or a standby that now outranks us, means a
        // heavy sweep (which runs the handover logic).
        let sms: Vec<Request> = cx
            .role
            .known_sms()
            .iter()
            .map(|k| {
                Request::get(
                    k.addr.path,
                    SmpAttrId::SM_INFO,
                    0,
                    Purpose::LightSmInfo(k.info.guid),
                )
            })
            .collect();
        cx.submit_all(sms);
    }

    /// The light sweep's SwitchInfo Get of switch `id`, by directed route `path` if given,
    /// else along its discovery route (LID-routed where [`SmConfig::lid_routed`] allows).
    fn light_switch_get(
        &self,
        cfg: &SmConfig,
        id: crate::subnet::NodeId,
        path: Option<DrPath>,
    ) -> Request {
        let s = &self.disc.subnet;
        let mut r = Request::get(
            path.unwrap_or(s.node(id).dr_path),
            SmpAttrId::SWITCH_INFO,
            0,
            Purpose::LightSwitchInfo(id),
        );
        if path.is_none() {
            r.dlid = self.lid_route(cfg, id, PortNum(0));
        }
        // Before an incremental heavy sweep a switch that does not answer at once is read
        // again on its new route by the walk ([`Replay::unverified`]): no resends down a
        // route that is likely broken.
        r.once = self.heavy_after_light;
        r
    }

    /// The trap issuers' ports are in: the switches only they reach are read by directed
    /// route through them, around the ports read Down (or not read at all).
    fn light_second_pass(&mut self, cx: &mut Ctx<'_>) {
        let deferred = std::mem::take(&mut self.light_deferred);
        let avoid: HashSet<Guid> = self.dirty.difference(&self.light_read).copied().collect();
        let m = crate::incremental::routes_around(&self.disc.subnet, &avoid, &self.light_dead);
        let reqs: Vec<Request> = deferred
            .into_iter()
            .map(|id| self.light_switch_get(cx.cfg, id, m.get(&id).copied()))
            .collect();
        cx.submit_all(reqs);
    }

    fn start_heavy(&mut self, now: Time, cx: &mut Ctx<'_>) {
        self.heavy_requested = false;
        self.resweep_due = false;
        cx.timers.stop(Timer::TrapSweep);
        cx.timers.stop(Timer::Compute);
        self.qos_reads_due = false;
        self.heavy_sweeps += 1;
        // A light sweep run for this heavy sweep (see `heavy_after_light`) is part of it.
        let (began, stats) = self.pre_pass.take().unwrap_or((now, PhaseStats::default()));
        self.heavy_began = began;
        self.heavy_stats = stats;
        self.errors = SweepErrors::default();
        self.lfts_programmed = false;
        self.lft_sets.clear();
        let full = self.full_discovery_reason(cx);
        let dirty = std::mem::take(&mut self.dirty);
        self.full_reason = None;
        self.psc_fresh = false;
        self.heavy_after_light = false;
        cx.role.begin_election(cx.timers);
        cx.events.log(
            Level::Info,
            format!(
                "Entering DISCOVERING state (heavy sweep {})",
                self.heavy_sweeps
            ),
        );
        self.begin(now, Phase::Discovery, Stage::Discovering);
        match full {
            None => {
                cx.events.log(
                    Level::Info,
                    format!(
                        "incremental heavy sweep: {} nodes changed since the last sweep; the rest is answered from the model",
                        dirty.len()
                    ),
                );
                let old = std::mem::take(&mut self.disc.subnet);
                let mut rep = Replay::new(old, dirty);
                rep.unverified = std::mem::take(&mut self.light_silent);
                self.replay = Some(rep);
            }
            Some(why) => {
                cx.events.log(Level::Info, format!("full discovery: {why}"));
                self.replay = None;
            }
        }
        self.start_walk(cx);
    }

    /// A new discovery walk (replaying [`Sweep::replay`] if set).
    fn start_walk(&mut self, cx: &mut Ctx<'_>) {
        let (disc, first) = Discovery::start(cx.cfg.port);
        self.disc = disc;
        self.dispatch(vec![first], cx);
    }

    /// Why the next heavy sweep must discover the whole fabric, or `None`: it may be
    /// incremental.
    fn full_discovery_reason(&self, cx: &Ctx<'_>) -> Option<String> {
        if let Some(r) = &self.full_reason {
            return Some(r.clone());
        }
        if !self.up || self.disc.subnet.nodes.is_empty() {
            return Some("no subnet model from a good sweep".into());
        }
        if cx.role.is_first_master_sweep() {
            return Some("first heavy sweep as master".into());
        }
        if cx.cfg.force_heavy_sweep {
            return Some("force_heavy_sweep".into());
        }
        None
    }

    /// Discovery is complete; judges an incremental walk: accepted (`true`), or walked again
    /// with the nodes found stale marked dirty, or replaced by a full discovery (`false`:
    /// a new walk is under way).
    fn judge_replay(&mut self, cx: &mut Ctx<'_>) -> bool {
        let Some(mut rep) = self.replay.take() else {
            return true;
        };
        // Switches the light sweep could not read, now reached on another route: their
        // PortStateChange first.
        if !rep.verifying && !rep.unverified.is_empty() && self.errors.unreachable.is_empty() {
            let s = &self.disc.subnet;
            let reads: Vec<Request> = s
                .switches()
                .filter(|&id| {
                    let g = s.node(id).guid;
                    rep.unverified.contains(&g) && !rep.dirty.contains(&g)
                })
                .map(|id| {
                    let mut r = Request::get(
                        s.node(id).dr_path,
                        SmpAttrId::SWITCH_INFO,
                        0,
                        Purpose::SwitchInfo(id),
                    );
                    // Not resent: a switch that does not answer makes its neighbours dirty
                    // and the walk runs again, which costs less than the resends' timeouts
                    // when the route is dead.
                    r.once = true;
                    r
                })
                .collect();
            rep.verifying = true;
            if !reads.is_empty() {
                cx.events.log(
                    Level::Info,
                    format!(
                        "incremental discovery: reading PortStateChange of {} switches the light sweep could not reach, on their new routes",
                        reads.len()
                    ),
                );
                self.replay = Some(rep);
                cx.submit_all(reads);
                return false;
            }
        }
        let racing = rep.check_links(&self.disc.subnet);
        let unreachable = self.errors.unreachable.len();
        let suspects = rep.suspects.len();
        let problem = if unreachable > 0 {
            Some(format!("{unreachable} directed routes unreachable"))
        } else if racing {
            Some("a link changed during the walk".to_string())
        } else if suspects == 0 && self.disc.duplicates > 0 {
            Some(format!("{} duplicate GUID answers", self.disc.duplicates))
        } else if suspects > 0 && rep.restarts >= MAX_RESTARTS {
            Some(format!(
                "{suspects} nodes still differ from the model after {} walks",
                rep.restarts + 1
            ))
        } else {
            None
        };
        self.errors = SweepErrors::default();
        if let Some(why) = problem {
            cx.events.log(
                Level::Info,
                format!("incremental discovery: {why}: falling back to a full discovery"),
            );
            self.start_walk(cx);
            return false;
        }
        if suspects > 0 {
            cx.events.log(
                Level::Info,
                format!(
                    "incremental discovery: {suspects} nodes differ from the model: walking again with them re-read"
                ),
            );
            let s = std::mem::take(&mut rep.suspects);
            rep.dirty.extend(s);
            rep.restarts += 1;
            rep.cached = 0;
            rep.verifying = false;
            self.replay = Some(rep);
            self.start_walk(cx);
            return false;
        }
        let s = &self.disc.subnet;
        let gone = rep
            .old
            .nodes
            .iter()
            .filter(|n| s.node_by_guid(n.guid).is_none())
            .count();
        let new = s
            .nodes
            .iter()
            .filter(|n| rep.old.node_by_guid(n.guid).is_none())
            .count();
        cx.events.log(
            Level::Info,
            format!(
                "incremental discovery: {} answers from the model, {} nodes re-read; {gone} nodes gone, {new} new",
                rep.cached,
                rep.dirty.len()
            ),
        );
        true
    }

    /// The heavy sweep's own figures (not the daemon's totals), before its outcome.
    fn report_heavy(&mut self, now: Time, up: bool, cx: &mut Ctx<'_>) {
        let mut stats = self.heavy_stats;
        stats.elapsed = now.saturating_since(self.heavy_began);
        cx.events.push(Event::HeavySweepDone {
            sweep: self.heavy_sweeps,
            up,
            stats,
        });
    }

    fn fail_sweep(&mut self, now: Time, reason: SweepFailure, cx: &mut Ctx<'_>) {
        self.report_heavy(now, false, cx);
        cx.events.push(Event::SweepFailed { reason });
        self.stage = Stage::Idle;
        self.up = false;
        cx.arm_sweep(now);
    }

    /// The probes of unknown remotes that were given up, now that discovery is complete: one
    /// through a port whose far end, as an earlier discovery saw the cable, is now physically
    /// not up (a port disabled on one side only, as ibsim's `ibportstate … disable` leaves
    /// it: the near side still reports LinkUp) found that link down, not a mute node; it is
    /// logged and costs the sweep nothing. Any other is an unreachable route, as before.
    fn judge_probes(&mut self, cx: &mut Ctx<'_>) {
        let s = &self.disc.subnet;
        for id in s.node_ids() {
            let g = s.node(id).guid;
            for p in 0..=s.node(id).num_ports {
                if let Some((rn, rp)) = s.port(id, PortNum(p)).and_then(|x| x.remote) {
                    self.links_seen
                        .insert((g, PortNum(p)), (s.node(rn).guid, rp));
                }
            }
        }
        let probes = std::mem::take(&mut self.errors.probes);
        for f in probes {
            let Purpose::Probe {
                from: Some((id, p)),
            } = f.req.purpose
            else {
                continue;
            };
            let far = self
                .links_seen
                .get(&(s.node(id).guid, p))
                .and_then(|&(guid, rp)| {
                    let info = s.port(s.node_by_guid(guid)?, rp)?.info?;
                    let ps = info.phys_state();
                    (ps != ibmad::PhysState::LINK_UP && ps != ibmad::PhysState::NO_CHANGE)
                        .then_some((guid, rp, ps))
                });
            if let Some((guid, rp, ps)) = far {
                cx.events.log(
                    Level::Info,
                    format!(
                        "no answer through {}: its far end, port {} of {guid}, is {ps}: link down",
                        f.req.path, rp.0
                    ),
                );
            } else if self.errors.unreachable.insert(f.req.path) {
                cx.events.push(Event::NodeUnreachable {
                    dr_path: f.req.path,
                    attempts: f.attempts,
                    method: f.req.method,
                    attr: f.req.attr,
                });
            }
        }
    }

    fn finish_discovery(&mut self, now: Time, cx: &mut Ctx<'_>) {
        self.judge_probes(cx);
        if !self.judge_replay(cx) {
            return;
        }
        let stats = self.end_phase(now, cx);
        let n_sw = self.disc.subnet.switches().count();
        let n = self.disc.subnet.nodes.len();
        cx.events.log(
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
            self.fail_sweep(now, SweepFailure::OwnPortSilent, cx);
            return;
        };
        cx.role
            .set_own_guid(crate::sminfo::own_guid(&self.disc.subnet));
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
            .map(|(id, p)| {
                Request::get(
                    self.disc.port_path(id, p),
                    SmpAttrId::SM_INFO,
                    0,
                    Purpose::SmInfo(id, p),
                )
            })
            .collect();
        if !polls.is_empty() {
            cx.events.log(
                Level::Info,
                format!("polling {} other SM port(s) for SMInfo", polls.len()),
            );
            self.stage = Stage::PollingSms;
            cx.submit_all(polls);
            return;
        }
        self.finish_sm_poll(now, cx);
    }

    /// The election poll is done: the role machine decides.
    fn finish_sm_poll(&mut self, now: Time, cx: &mut Ctx<'_>) {
        match cx.role.conclude_election(now, cx.timers) {
            Election::Standby(m) | Election::HandOver(m) => {
                cx.events.push(Event::Standby {
                    master: m.guid,
                    priority: m.priority,
                    own_priority: cx.role.priority(),
                });
                self.stage = Stage::Idle;
                self.up = false;
            }
            Election::WaitForHandover(m) => {
                cx.events.log(
                    Level::Info,
                    format!(
                        "SM {} (priority {}) is master too: waiting for its HANDOVER (C14-60.2.1)",
                        m.guid, m.priority
                    ),
                );
                self.stage = Stage::Idle;
                cx.arm_sweep(now);
            }
            Election::Master => self.after_discovery(now, cx),
        }
    }

    /// The rest of a heavy sweep once this SM is master: LID assignment and routing, each in
    /// its own `Sm::handle_timeout` (see [`Timer::Compute`]), then programming.
    fn after_discovery(&mut self, now: Time, cx: &mut Ctx<'_>) {
        for guid in self.program.forget_changed_tops(&self.disc.subnet) {
            self.mcast.prog.forget(guid);
        }
        self.program.forget_reset_qos(&self.disc.subnet);
        self.begin(now, Phase::LidAssignment, Stage::Computing);
        cx.timers.set(Timer::Compute, now);
    }

    /// [`Timer::Compute`] fired: one computation step of a heavy sweep (LID assignment, or
    /// routing), or the QoS reads that follow SUBNET UP.
    pub fn compute_step(&mut self, now: Time, cx: &mut Ctx<'_>) {
        if std::mem::take(&mut self.qos_reads_due) && self.stage == Stage::Idle {
            self.start_qos_reads(now, cx);
            return;
        }
        if self.stage != Stage::Computing {
            return;
        }
        match self.phase {
            Phase::LidAssignment => self.assign_lids_step(now, cx),
            Phase::Routing => self.routing_step(now, cx),
            _ => {}
        }
    }

    fn assign_lids_step(&mut self, now: Time, cx: &mut Ctx<'_>) {
        let lc = LidConfig {
            lmc: cx.cfg.lmc,
            reassign_lids: cx.cfg.reassign_lids && self.heavy_sweeps == 1,
            lmc_esp0: cx.cfg.lmc_esp0,
        };
        // Coming out of standby the ports' LIDs (the old master's) come first: the guid2lid
        // map is only honoured if asked to (OpenSM `honor_guid2lid_file`).
        let empty = Guid2Lid::new();
        let map = if cx.role.is_takeover() && !cx.cfg.honor_guid2lid_file {
            &empty
        } else {
            &self.guid2lid
        };
        match assign_lids(&mut self.disc.subnet, &lc, map) {
            Ok(rep) => {
                cx.events.log(
                    Level::Info,
                    format!(
                        "LID assignment: {} from guid2lid, {} kept, {} new, {} conflicts; top {}",
                        rep.from_guid2lid, rep.kept_existing, rep.new, rep.conflicts, rep.top
                    ),
                );
                // Persisted only when it changed (OpenSM's osm_db_store writes a domain only
                // when dirty): an incremental sweep that keeps every LID writes no file, and
                // its owner's atomic write (two fsyncs) stays out of the sweep.
                if rep.guid2lid != self.guid2lid {
                    self.guid2lid = rep.guid2lid;
                    cx.events
                        .push(Event::Guid2LidUpdated(self.guid2lid.to_text()));
                }
            }
            Err(e) => {
                self.end_phase(now, cx);
                self.fail_sweep(now, SweepFailure::LidAssignment(e), cx);
                return;
            }
        }
        self.end_phase(now, cx);
        self.sm_lid = self
            .disc
            .subnet
            .sm_port()
            .map_or(Lid::UNASSIGNED, |(n, p)| self.disc.subnet.lid_of(n, p));
        self.begin(now, Phase::Routing, Stage::Computing);
        cx.timers.set(Timer::Compute, now);
    }

    fn routing_step(&mut self, now: Time, cx: &mut Ctx<'_>) {
        self.apply_health(now);
        // Keep what the switches hold where it is still valid (OpenSM without
        // ignore_existing_lfts), unless this is the first sweep as master, a reroute, or the
        // fabric gained a link.
        let links = self.linked_switch_ports();
        let grew = self
            .routed_links
            .as_ref()
            .is_none_or(|before| !links.is_subset(before));
        let existing = if cx.role.is_first_master_sweep() || self.reroute_requested || grew {
            None
        } else {
            self.program
                .existing_lfts(&self.disc.subnet)
                .map(std::sync::Arc::new)
        };
        if cx.cfg.use_ucast_cache && !self.reroute_requested {
            if let Some(base) = &self.ucast_base {
                match base.check(&self.disc.subnet) {
                    Ok(lost) => {
                        cx.events.log(
                            Level::Info,
                            format!(
                                "use_ucast_cache: configuring switch tables using cached routing ({lost} links lost since routing was computed, all to CAs or leaf switches gone)"
                            ),
                        );
                        self.routes = Some(std::sync::Arc::new(base.tables_for(&self.disc.subnet)));
                        self.end_phase(now, cx);
                        self.start_programming(now, cx);
                        return;
                    }
                    Err(why) => cx.events.log(
                        Level::Info,
                        format!("use_ucast_cache: {why}: recomputing routes"),
                    ),
                }
            }
        }
        self.reroute_requested = false;
        self.routed_links = Some(links);
        let routed = route_chain_with(
            &cx.cfg.routing_engine,
            cx.cfg.no_fallback,
            &self.disc.subnet,
            cx.cfg.seed,
            &crate::routing::EngineOptions {
                scatter_ports: cx.cfg.seed,
                qos: cx.cfg.engine_options.qos || cx.cfg.qos.enabled,
                existing_lfts: existing,
                ..cx.cfg.engine_options.clone()
            },
        );
        match routed {
            Ok(outcome) => {
                for l in outcome.log {
                    cx.events.log(crate::routing::log_line_level(&l), l);
                }
                self.engine_used = outcome.engine;
                let routes = std::sync::Arc::new(outcome.routes);
                self.ucast_base = cx
                    .cfg
                    .use_ucast_cache
                    .then(|| RoutedBase::new(&self.disc.subnet, routes.clone()));
                self.routes = Some(routes);
            }
            Err(e) => {
                if let crate::routing::RouteError::AllEnginesFailed { log, .. } = &e {
                    for l in log.clone() {
                        cx.events.log(Level::Error, l);
                    }
                }
                self.end_phase(now, cx);
                self.fail_sweep(now, SweepFailure::NoRoutingEngine(e), cx);
                return;
            }
        }
        self.end_phase(now, cx);
        self.start_programming(now, cx);
    }

    /// Programming: first the LFT blocks the SM does not know are read (after a restart or a
    /// takeover the switches usually hold the right tables already), then only what differs is
    /// set ([`Sweep::plan_programming`], once the reads are in).
    fn start_programming(&mut self, now: Time, cx: &mut Ctx<'_>) {
        self.begin(now, Phase::Programming, Stage::Programming);
        self.program
            .set_lft_base(&self.disc.subnet, self.routes.as_ref());
        let top = self.routes.as_ref().map_or(Lid(0), |r| r.lfts.top());
        let lfts: Option<&Lfts> = self.routes.as_ref().map(|r| &r.lfts);
        let mut reads = self.program.reads(&self.disc, lfts, top);
        reads.extend(self.program.pkey_reads(cx.cfg, &self.disc));
        if reads.is_empty() {
            self.plan_programming(cx);
        } else {
            self.reading_lfts = true;
            cx.submit_all(reads);
        }
    }

    fn plan_programming(&mut self, cx: &mut Ctx<'_>) {
        self.reading_lfts = false;
        let top = self.routes.as_ref().map_or(Lid(0), |r| r.lfts.top());
        let reqs = self.program.plan(
            cx.cfg,
            &self.disc,
            self.routes.as_deref(),
            top,
            self.sm_lid,
            cx.role.is_first_master_sweep(),
        );
        for o in self.program.pkey_plan().overflows() {
            cx.events.log(
                Level::Error,
                format!(
                    "partitions: node {} port {} holds {} P_Keys; dropped {:04x?}",
                    o.node_guid, o.port.0, o.cap, o.dropped
                ),
            );
        }
        cx.submit_all(reqs);
        self.lft_sets = self
            .program
            .lft_sets(
                &self.disc,
                self.routes.as_deref().map(|r| &r.lfts),
                top,
                window(cx.cfg),
            )
            .into();
        self.feed_lft_sets(cx);
        self.mcast_pass(cx);
    }

    /// Keeps about two windows of LFT block Sets queued (the rest stay compact in
    /// `lft_sets`).
    fn feed_lft_sets(&mut self, cx: &mut Ctx<'_>) {
        let Some(routes) = self.routes.as_deref() else {
            self.lft_sets.clear();
            return;
        };
        let room = (2 * window(cx.cfg)).saturating_sub(cx.txn.pending());
        for set in self.lft_sets.drain(..room.min(self.lft_sets.len())) {
            if let Some(req) = Programmer::lft_request(&self.disc, &routes.lfts, set) {
                cx.txn.submit(req);
            }
        }
    }

    // ----- multicast -------------------------------------------------------------------------

    /// The groups the SA holds changed: a multicast pass follows (at once when the pipeline
    /// is idle and the subnet up, else with the next heavy sweep's programming).
    pub fn set_mcast_groups(&mut self, groups: Vec<McastGroup>) {
        self.mcast.groups = groups;
        self.mcast.dirty = true;
    }

    /// The multicast tables the last pass computed.
    pub fn mfts(&self) -> Option<&std::sync::Arc<Mfts>> {
        self.mcast.mfts.as_ref()
    }

    /// The multicast programmer (known MFT blocks, counters).
    pub fn mft_programmer(&self) -> &MftProgrammer {
        &self.mcast.prog
    }

    /// One multicast pass: trees and tables from the current groups, then the MFT Sets of
    /// what differs ([`crate::mcast::program`]).
    fn mcast_pass(&mut self, cx: &mut Ctx<'_>) {
        self.mcast.dirty = false;
        if cx.cfg.disable_multicast {
            // OpenSM's disable_multicast: no multicast manager pass at all.
            return;
        }
        let mfts = crate::mcast::compute_for(
            &self.disc.subnet,
            &self.mcast.groups,
            self.routes.as_deref(),
        );
        self.mcast.prog.begin_pass();
        let reqs = self.mcast.prog.plan(&self.disc.subnet, &mfts);
        if mfts.over_cap > 0 || mfts.unknown_members > 0 {
            cx.events.log(
                Level::Info,
                format!(
                    "multicast: {} member ports not on the subnet, {} switch entries beyond MulticastFDBCap",
                    mfts.unknown_members, mfts.over_cap
                ),
            );
        }
        if mfts.off_master_tree > 0 {
            cx.events.log(
                Level::Error,
                format!(
                    "multicast: {} groups have member switches the routing engine's master spanning tree does not reach: routed on trees of their own",
                    mfts.off_master_tree
                ),
            );
        }
        cx.events.log(
            Level::Verbose,
            format!(
                "multicast pass: {} groups, {} routed, {} MFT requests",
                self.mcast.groups.len(),
                mfts.routed,
                reqs.len()
            ),
        );
        if self.mcast.mfts.as_deref() != Some(&mfts) {
            self.mcast.mfts = Some(std::sync::Arc::new(mfts));
        }
        cx.submit_all(reqs);
    }

    /// The LID to reach port `p` of node `id` by a LID-routed SMP, or 0 for "use the
    /// directed route": LID routing is used only with [`SmConfig::lid_routed`], once the SM's
    /// own port and the target port hold (acknowledged) their LIDs and the LFTs are programmed.
    fn lid_route(&self, cfg: &SmConfig, id: crate::subnet::NodeId, p: PortNum) -> Lid {
        if !cfg.lid_routed || !self.lfts_programmed || self.sm_lid == Lid::UNASSIGNED {
            return Lid::UNASSIGNED;
        }
        program::lid_route(&self.disc.subnet, self.sm_lid, id, p)
    }

    // ----- QoS table reads (after SUBNET UP) -------------------------------------------------

    /// The subnet is up: read the SL-to-VL and VLArbitration tables the SM neither programs
    /// nor knows ([`Programmer::qos_reads`]), so the SA serves what the ports hold. They run
    /// after SUBNET UP so they never delay it, and the SA snapshot is rebuilt once they are in.
    fn start_qos_reads(&mut self, now: Time, cx: &mut Ctx<'_>) {
        let reads = self
            .program
            .qos_reads(cx.cfg, &self.disc, self.routes.as_deref());
        if reads.is_empty() {
            return;
        }
        cx.events.log(
            Level::Verbose,
            format!("reading {} SL-to-VL / VLArbitration tables", reads.len()),
        );
        self.qos_reads = reads;
        self.qos_reads_sent = 0;
        self.begin(now, Phase::QosRead, Stage::ReadingQos);
        self.feed_qos_reads(cx);
    }

    /// Keeps about two windows of QoS Gets queued; a heavy sweep asked for meanwhile drops the
    /// rest (that sweep plans its own reads of what is still unknown).
    fn feed_qos_reads(&mut self, cx: &mut Ctx<'_>) {
        if self.heavy_requested {
            self.qos_reads.clear();
            return;
        }
        let room = (2 * window(cx.cfg)).saturating_sub(cx.txn.pending());
        for g in self.qos_reads.by_ref().take(room) {
            cx.txn.submit(Programmer::qos_read_request(&self.disc, &g));
            self.qos_reads_sent += 1;
        }
    }

    /// Every QoS Get handed out is answered (or given up): the SA's snapshot gets the tables.
    fn finish_qos_reads(&mut self, now: Time, cx: &mut Ctx<'_>) {
        let stats = self.end_phase(now, cx);
        self.stage = Stage::Idle;
        cx.events.log(
            Level::Info,
            format!(
                "QoS tables read: {} Gets, {} SMPs in {:?}",
                self.qos_reads_sent, stats.smps, stats.elapsed
            ),
        );
        if self.up {
            self.snapshot = Some(std::sync::Arc::new(self.build_snapshot(cx)));
        }
    }

    fn start_arming(&mut self, now: Time, cx: &mut Ctx<'_>) {
        if self.errors.set_failures > 0 {
            cx.events.push(Event::SetsFailed {
                count: self.errors.set_failures,
            });
        }
        cx.events.log(
            Level::Info,
            "LINKS PORTS CONFIGURED - SET LINKS TO ARMED STATE".into(),
        );
        self.begin(now, Phase::Arming, Stage::Arming);
        let reqs = program::state_pass(
            cx.cfg,
            &self.disc,
            self.routes.as_deref(),
            self.program.pkey_plan(),
            self.sm_lid,
            PortState::INIT,
            PortState::ARMED,
            cx.cfg.fold_config_into_arm,
            cx.role.is_first_master_sweep(),
            |id, p| self.lid_route(cx.cfg, id, p),
        );
        cx.submit_all(reqs);
    }

    fn start_activation(&mut self, now: Time, cx: &mut Ctx<'_>) {
        cx.events
            .log(Level::Info, "SET LINKS TO ACTIVE STATE".into());
        self.begin(now, Phase::Activation, Stage::Activating);
        let reqs = program::state_pass(
            cx.cfg,
            &self.disc,
            self.routes.as_deref(),
            self.program.pkey_plan(),
            self.sm_lid,
            PortState::ARMED,
            PortState::ACTIVE,
            false,
            false,
            |id, p| self.lid_route(cx.cfg, id, p),
        );
        cx.submit_all(reqs);
    }

    fn finish_heavy(&mut self, now: Time, cx: &mut Ctx<'_>) {
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
        let lost = self.errors.unreachable.len();
        let failed_sets = self.errors.set_failures;
        if not_active.is_empty() && (lost > 0 || failed_sets > 0) {
            // The nearest failure first: it is usually the cause of those behind it.
            let first = self
                .errors
                .unreachable
                .iter()
                .copied()
                .min_by(|a, b| (a.len(), a.ports()).cmp(&(b.len(), b.ports())));
            self.fail_sweep(
                now,
                SweepFailure::Initialization {
                    unreachable: lost,
                    first,
                    failed_sets,
                },
                cx,
            );
        } else if not_active.is_empty() {
            self.stage = Stage::Idle;
            self.up = true;
            cx.events.log(
                Level::Info,
                format!("{linked} linked ports and {mgmt} switch ports 0 Active"),
            );
            self.report_heavy(now, true, cx);
            cx.role.master_sweep_done();
            self.snapshot = Some(std::sync::Arc::new(self.build_snapshot(cx)));
            cx.events.push(Event::SubnetUp);
            cx.arm_sweep(now);
            self.qos_reads_due = true;
            cx.timers.set(Timer::Compute, now);
        } else {
            self.fail_sweep(
                now,
                SweepFailure::PortsNotActive {
                    not_active: not_active.len(),
                    ports: linked + mgmt,
                    first: not_active.iter().take(4).copied().collect(),
                },
                cx,
            );
        }
        // Such a sweep may have missed part of the fabric or left it half programmed: sweep
        // again at once, a bounded number of times (OpenSM re-sweeps after an initialization
        // error too), then at the sweep interval. LIDs persist through guid2lid and
        // programming is diffed, so a re-sweep only sends what is still missing.
        let errors = lost > 0 || failed_sets > 0;
        if errors && self.resweeps < MAX_RESWEEPS {
            self.resweeps += 1;
            cx.events.log(
                Level::Info,
                format!(
                    "sweep had errors ({} unreachable routes, {} failed Sets): re-sweeping ({}/{})",
                    lost, failed_sets, self.resweeps, MAX_RESWEEPS
                ),
            );
            // At the next handle_timeout, so the owner still sees this sweep's subnet and
            // tables when it reads the SweepFailed event.
            self.resweep_due = true;
            cx.timers.set(Timer::Sweep, now);
        } else if !errors {
            self.resweeps = 0;
        }
    }
}

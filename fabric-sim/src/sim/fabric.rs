//! [`Fabric`]: a simulated subnet — one real [`sma::Agent`] per node, links between their ports,
//! a virtual clock and a deterministic event queue.
//!
//! # Model
//!
//! * **Nodes.** Every node of the [`Topology`] gets an `sma::Agent` built from its NodeInfo facts
//!   and per-port link attributes (see [`node_config`]). Agents live in one `Vec`, indexed by the
//!   topology's [`NodeId`].
//! * **Links.** Per-port flat arrays hold the peer and a few state bits. At construction every
//!   cabled link trains (highest width/speed common to both ends' *enabled* masks, see
//!   [`crate::sim::link`]) and both agents get `LinkEvent::Up`, so every port starts in Init, as
//!   right after cabling.
//! * **Carrying MADs.** A MAD an agent transmits (or an SM sends) leaves its node at `now` (+ the
//!   SMA service time if the agent *handled* it rather than just passing a directed-route SMP
//!   through), crosses the link in [`SimConfig::hop_latency`] (+ any injected delay) and is
//!   handed to the peer agent's `handle_mad`. The fabric applies the IBA port-state rule (a port
//!   that is Down or physically not LinkUp passes nothing; Init/Armed/Active pass SMPs — this
//!   simulator carries only SMPs) on both the egress and the ingress port.
//! * **Directed route** SMPs are processed by the agents themselves with `ibmad::smi`; the fabric
//!   only moves bytes. **LID-routed** SMPs are switched by the fabric: at a switch the SMP goes to
//!   the agent if the DLID is the switch's own (`lid_matches(0, dlid)`), else out of
//!   `agent.lft_port(dlid)` (no entry → dropped, counted [`DropReason::NoRoute`]); at a CA it is
//!   delivered if `lid_matches(port, dlid)`, else dropped ([`DropReason::DlidMismatch`]).
//! * **SMs** attach at a CA port or a switch's port 0 ([`Fabric::attach_sm`]) and talk through
//!   [`SimPort`], an [`ibmad::MadPort`]. An SM's node originates its sends exactly as hardware:
//!   `ibmad::smi::advance` for DR (a 0-hop SMP goes to the local agent), the SM's port or the
//!   switch's LFT for LID-routed. What agents hand to the co-located SM (`sma::Event::ForSm`:
//!   returning DR SMPs, LID-routed responses, traps, SMInfo requests) is queued for the SM
//!   attached at that node and port.
//! * **Time** is virtual: nothing happens between events. [`Fabric::next_event_time`],
//!   [`Fabric::step`] and [`Fabric::run_until`] let a test loop jump from event to event.
//!   Events at the same time run in scheduling order, so a run is a pure function of the
//!   topology, the [`SimConfig`] (seed included) and the calls made on the fabric.
//!
//! # Faults
//!
//! [`FaultConfig`] rates apply to every link transmission (drop, corrupt, duplicate, delay; one
//! ChaCha8 stream seeded from [`SimConfig::seed`]). Scheduled faults: link down/up
//! ([`Fabric::schedule_link`]), node reboot ([`Fabric::schedule_reboot`]: links drop, the agent
//! loses all SM-set state, links retrain after [`SimConfig::link_retrain_time`]) and muted SMAs
//! ([`Fabric::set_mute`]).
//!
//! **Mute semantics** (OpenSM's "non-responding node"): a muted node's SMA never answers — the
//! fabric drops every SMP that the SMA itself would consume (a DR SMP at the end of its outbound
//! path; a LID-routed Get/Set/TrapRepress for the node's LID). The node keeps forwarding: a muted
//! switch still passes DR SMPs through and LID-routes by its LFT, and returning DR SMPs, responses
//! and traps still reach an SM on the muted node. To take a node off the fabric entirely, take
//! its links down.
//!
//! # Link requests from the SM
//!
//! The agents report PortInfo-driven link requests through [`sma::Hardware::link_request`]
//! (captured by [`SimHw`]): `Down` drops the link on both ends and retrains it after
//! `link_retrain_time`; `Disable` drops it and keeps it down; `Poll` re-enables a disabled port
//! and retrains.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use ibmad::attr::port_info::cap::IS_SM;
use ibmad::smi::{self, Forward};
use ibmad::zerocopy::FromBytes;
use ibmad::{
    Guid, Lid, MadMeta, MadPort, Method, MgmtClass, PortError, PortNum, PortState, Smp, SmpAttrId,
    Time, SMP_LEN,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sma::{Agent, ConfigError, Event, Hardware, LinkEvent, LinkRequest, NodeConfig, PortConfig};

use super::fault::{FaultConfig, FaultInjector};
use super::link::{train, LinkCaps};
use super::queue::EventQueue;
use super::stats::{DropReason, SimStats, SmStats};
use crate::topo::{LinkAttrs, NodeId, PortRef, Topology};

/// Simulator parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// Seeds the fault injector's ChaCha8 stream.
    pub seed: u64,
    /// Time a MAD spends on one link (wire + switch pass-through).
    pub hop_latency: Duration,
    /// Time an SMA takes to handle a MAD it consumes (answer, trap, local SM hand-off).
    pub sma_service_time: Duration,
    /// Time a link takes to retrain after a reboot or an SM-requested Down/Poll.
    pub link_retrain_time: Duration,
    /// Per-transmission fault rates.
    pub faults: FaultConfig,
    /// Record every event in [`Fabric::trace`] (for determinism tests; costs memory).
    pub trace: bool,
    /// Bound of each SM's receive queue; beyond it MADs are dropped ([`DropReason::SmQueueFull`]).
    pub sm_queue_cap: usize,
}

impl Default for SimConfig {
    /// Seed 0, 100 ns per hop, 1 µs SMA service time, 1 ms link retraining, no faults, no trace,
    /// 65536-MAD SM queues.
    fn default() -> Self {
        SimConfig {
            seed: 0,
            hop_latency: Duration::from_nanos(100),
            sma_service_time: Duration::from_micros(1),
            link_retrain_time: Duration::from_millis(1),
            faults: FaultConfig::NONE,
            trace: false,
            sm_queue_cap: 65536,
        }
    }
}

/// Errors of the simulator's API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The topology describes a node an SMA can not impersonate.
    #[error("node {node:?}: {source}")]
    Config {
        /// The node's name.
        node: String,
        /// What the SMA rejected.
        #[source]
        source: ConfigError,
    },
    /// The topology holds more ports than the simulator indexes.
    #[error("topology too large for the simulator: {0}")]
    TooLarge(&'static str),
    /// No node with this id.
    #[error("no node {0}")]
    NoSuchNode(NodeId),
    /// No node with this GUID.
    #[error("no node with GUID {0}")]
    UnknownGuid(Guid),
    /// No node with this name.
    #[error("no node named {0:?}")]
    UnknownName(String),
    /// The node has no such port.
    #[error("node {node} has no port {port}")]
    NoSuchPort {
        /// The node.
        node: NodeId,
        /// The port.
        port: PortNum,
    },
    /// The port has no cable.
    #[error("node {node} port {port} is not cabled")]
    NotCabled {
        /// The node.
        node: NodeId,
        /// The port.
        port: PortNum,
    },
    /// An SM can attach only at a CA/router port or at a switch's port 0.
    #[error("an SM can not attach at node {node} port {port}: {reason}")]
    BadSmPort {
        /// The node.
        node: NodeId,
        /// The port.
        port: PortNum,
        /// Why.
        reason: &'static str,
    },
    /// An SM is already attached there.
    #[error("an SM is already attached at node {node} port {port}")]
    SmAlreadyAttached {
        /// The node.
        node: NodeId,
        /// The port.
        port: PortNum,
    },
    /// A time in the past was given for a scheduled fault.
    #[error("time {at:?} is before the current time {now:?}")]
    InThePast {
        /// The time asked for.
        at: Time,
        /// The fabric's clock.
        now: Time,
    },
}

/// The [`sma::Hardware`] hook of every simulated agent: records the PortInfo link requests an
/// SM made so the fabric can act on the physical link.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimHw {
    requests: Vec<(PortNum, LinkRequest)>,
}

impl Hardware for SimHw {
    fn link_request(&mut self, port: PortNum, req: LinkRequest) {
        self.requests.push((port, req));
    }
}

/// The agent type every simulated node runs.
pub type SimAgent = Agent<SimHw>;

/// The management side of a node that the fabric does not run itself — e.g. a switch ASIC
/// model whose SMA is host software reached through a driver ([`Fabric::set_external`]).
///
/// For an external node the fabric hands every SMP that would go to the built-in agent to
/// [`ExternalAgent::deliver`] (with the ingress port in `meta.port`), sends what
/// [`ExternalAgent::poll_transmit`] returns out of `meta.port`, reports link changes to
/// [`ExternalAgent::link`], carries out [`ExternalAgent::poll_link_request`]s, and forwards
/// LID-routed SMPs with the node's own data-plane state ([`ExternalAgent::lft_port`],
/// [`ExternalAgent::lid_matches`], [`ExternalAgent::port_state`]). The built-in agent of the
/// node is not used any more.
pub trait ExternalAgent: Send {
    /// An SMP for this node's management arrived on `meta.port`.
    fn deliver(&mut self, now: Time, meta: &MadMeta, mad: &[u8]);
    /// The physical link of `port` changed.
    fn link(&mut self, now: Time, port: PortNum, ev: LinkEvent);
    /// The next SMP to put on the wire out of `meta.port` (written into `buf[..256]`).
    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<sma::Transmit>;
    /// The next physical link change the node asks for.
    fn poll_link_request(&mut self) -> Option<(PortNum, LinkRequest)>;
    /// When [`ExternalAgent::handle_timeout`] is next due.
    fn poll_timeout(&self) -> Option<Time>;
    /// A timer is due.
    fn handle_timeout(&mut self, now: Time);
    /// Egress port for a LID-routed packet to `dlid` (`Some(0)`: deliver to management).
    fn lft_port(&self, dlid: Lid) -> Option<PortNum>;
    /// True if `dlid` addresses the node's management (its own LID).
    fn lid_matches(&self, dlid: Lid) -> bool;
    /// Logical state of `port` (Down/Init/Armed/Active).
    fn port_state(&self, port: PortNum) -> PortState;
}

/// Identifies an SM attached with [`Fabric::attach_sm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SmHandle(pub u32);

/// Where an SM is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SmAttachment {
    /// Its handle.
    pub handle: SmHandle,
    /// The node it runs on.
    pub node: NodeId,
    /// The port it sends from: a CA port, or 0 on a switch.
    pub port: PortNum,
}

/// What a [`TraceEntry`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// A MAD reached a port from the wire (or locally, from the node's SM).
    Arrive,
    /// A MAD was handed to an agent.
    Deliver,
    /// A MAD was forwarded by a switch's LFT.
    LidForward,
    /// A MAD was queued for an SM.
    ToSm,
    /// An SM sent a MAD.
    FromSm,
    /// A MAD was dropped.
    Drop(DropReason),
    /// An agent timer fired.
    Timer,
    /// A port's physical link came up.
    LinkUp,
    /// A port's physical link went down.
    LinkDown,
    /// A node rebooted.
    Reboot,
}

/// One recorded event (with [`SimConfig::trace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceEntry {
    /// When.
    pub time: Time,
    /// What.
    pub kind: TraceKind,
    /// Node index.
    pub node: u32,
    /// Port.
    pub port: u8,
    /// MgmtClass of the MAD (0 for non-MAD events).
    pub class: u8,
    /// Method of the MAD.
    pub method: u8,
    /// AttributeID of the MAD.
    pub attr: u16,
    /// TransactionID of the MAD.
    pub tid: u64,
}

/// One line: `time node:port kind class method attr tid`.
impl core::fmt::Display for TraceEntry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{:>12}ns #{}:{} {:?}",
            self.time.as_nanos(),
            self.node,
            self.port,
            self.kind
        )?;
        if self.class != 0 {
            write!(
                f,
                " class={:#04x} {:?} {:?} tid={:#x}",
                self.class,
                Method(self.method),
                SmpAttrId(self.attr),
                self.tid
            )?;
        }
        Ok(())
    }
}

/// A 256-byte MAD buffer in flight, with its LRH addressing.
#[derive(Clone)]
struct Slot {
    data: [u8; SMP_LEN],
    slid: u16,
    dlid: u16,
    sl: u8,
}

/// Fixed-size MAD buffers reused through a free list: no allocation per MAD once warm.
#[derive(Default)]
struct Pool {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Pool {
    fn alloc(&mut self) -> u32 {
        if let Some(i) = self.free.pop() {
            return i;
        }
        self.slots.push(Slot {
            data: [0; SMP_LEN],
            slid: 0,
            dlid: 0,
            sl: 0,
        });
        (self.slots.len() - 1) as u32
    }
    fn release(&mut self, i: u32) {
        self.free.push(i);
    }
    fn slot(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }
    fn slot_mut(&mut self, i: u32) -> &mut Slot {
        &mut self.slots[i as usize]
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A MAD reaches `port` of `node`; `local` = from the node itself (no link crossed).
    Arrive {
        node: u32,
        port: u8,
        local: bool,
        buf: u32,
    },
    /// An agent's timer may be due.
    Timer { node: u32 },
    /// Try to (re)train the link of a global port.
    Retrain { gport: u32 },
    /// A test-scheduled cable change.
    LinkSet { gport: u32, up: bool },
    /// An SM-requested link change (from `SimHw`).
    LinkReq { gport: u32, req: LinkRequest },
    /// A node reboot.
    Reboot { node: u32 },
}

/// Per-port state bits.
const UP: u8 = 1;
const DISABLED: u8 = 2;
const CUT: u8 = 4;

const NO_PEER: u32 = u32::MAX;
const NO_TIMER: u64 = u64::MAX;

struct SmSlot {
    node: u32,
    port: u8,
    active: bool,
    queue: VecDeque<(MadMeta, Box<[u8; SMP_LEN]>)>,
    stats: SmStats,
}

/// The simulated fabric. See the [module documentation](self).
pub struct Fabric {
    cfg: SimConfig,
    now: Time,
    queue: EventQueue<Ev>,
    agents: Vec<SimAgent>,
    /// Nodes whose management runs outside the fabric (see [`ExternalAgent`]).
    external: Vec<Option<Box<dyn ExternalAgent>>>,
    /// Global index of each node's port 0 (ports `base..=base+num_ports`); one extra entry.
    base: Vec<u32>,
    peer_node: Vec<u32>,
    peer_port: Vec<u8>,
    flags: Vec<u8>,
    timer_at: Vec<u64>,
    muted: Vec<bool>,
    pool: Pool,
    sms: Vec<SmSlot>,
    faults: FaultInjector,
    /// Per-cable injectors, keyed by the lower global port of the cable.
    link_faults: HashMap<u32, FaultInjector>,
    stats: SimStats,
    trace: Vec<TraceEntry>,
    topo: Topology,
    service_ns: u64,
    hop_ns: u64,
    arrivals_pending: usize,
}

fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// PortInfo capability masks for a link with these active attributes: every width/speed up to
/// the active one is supported, so two ends with equal attributes train exactly to them.
fn port_config(attrs: &LinkAttrs) -> PortConfig {
    let w = attrs.width.code();
    let s = attrs.speed.speed_code();
    let e = attrs.speed.ext_code();
    PortConfig {
        // A port of width N can always fall back to 1x.
        width_supported: w | 1,
        speed_supported: s | s.saturating_sub(1),
        speed_ext_supported: e | e.saturating_sub(1),
        mtu_cap: attrs.mtu.code(),
        vl_cap: attrs.vl_cap.code(),
    }
}

/// The `sma::NodeConfig` the simulator gives the agent of `id`: NodeInfo facts from the
/// topology, port GUIDs, port capabilities from each port's link attributes, LinearFDBCap 49152
/// and MulticastFDBCap 1024 on switches.
pub fn node_config(topo: &Topology, id: NodeId) -> Option<NodeConfig> {
    let n = topo.node(id)?;
    let np = usize::from(n.num_ports());
    let mut port_guids = vec![Guid(0); np + 1];
    let mut ports = vec![port_config(&LinkAttrs::default()); np + 1];
    for (p, port) in topo.ports(id) {
        let i = usize::from(p.0);
        if i <= np {
            port_guids[i] = port.guid();
            ports[i] = port_config(&port.attrs());
        }
    }
    if n.is_switch() && np >= 1 {
        // Port 0 has no cable; give it the capabilities of port 1.
        ports[0] = ports[1];
    }
    Some(NodeConfig {
        node_type: n.node_type(),
        node_guid: n.guid(),
        sys_image_guid: n.sys_image_guid(),
        desc: n.desc().to_string(),
        num_ports: n.num_ports(),
        port_guids,
        ports,
        vendor_id: n.vendor_id(),
        device_id: n.device_id(),
        revision: 0,
        lft_cap: 0xC000,
        mft_cap: 1024,
        enhanced_port0: n.enhanced_port0(),
    })
}

impl Fabric {
    /// Builds the fabric: one agent per node, every cabled link trained and reported Up to both
    /// agents at time 0.
    pub fn new(topo: &Topology, cfg: SimConfig) -> Result<Fabric, SimError> {
        let nn = topo.num_nodes();
        let mut agents = Vec::with_capacity(nn);
        let mut base = Vec::with_capacity(nn + 1);
        let mut total: u64 = 0;
        for (id, node) in topo.nodes() {
            base.push(u32::try_from(total).map_err(|_| SimError::TooLarge("ports"))?);
            total += u64::from(node.num_ports()) + 1;
            let nc = node_config(topo, id).ok_or(SimError::NoSuchNode(id))?;
            let agent = Agent::new(nc, SimHw::default()).map_err(|source| SimError::Config {
                node: node.name().to_string(),
                source,
            })?;
            agents.push(agent);
        }
        let total32 = u32::try_from(total).map_err(|_| SimError::TooLarge("ports"))?;
        if total32 == u32::MAX {
            return Err(SimError::TooLarge("ports"));
        }
        base.push(total32);
        let np = total as usize;
        let mut peer_node = vec![NO_PEER; np];
        let mut peer_port = vec![0u8; np];
        for link in topo.links() {
            for (a, b) in [(link.a, link.b), (link.b, link.a)] {
                let g = base[a.node.index()] as usize + usize::from(a.port.0);
                peer_node[g] = b.node.0;
                peer_port[g] = b.port.0;
            }
        }
        let faults = FaultInjector::new(cfg.faults, ChaCha8Rng::seed_from_u64(cfg.seed));
        let mut f = Fabric {
            service_ns: dur_ns(cfg.sma_service_time),
            hop_ns: dur_ns(cfg.hop_latency),
            cfg,
            now: Time::ZERO,
            queue: EventQueue::new(),
            agents,
            external: (0..nn).map(|_| None).collect(),
            base,
            peer_node,
            peer_port,
            flags: vec![0; np],
            timer_at: vec![NO_TIMER; nn],
            muted: vec![false; nn],
            pool: Pool::default(),
            sms: Vec::new(),
            faults,
            link_faults: HashMap::new(),
            stats: SimStats::default(),
            trace: Vec::new(),
            topo: topo.clone(),
            arrivals_pending: 0,
        };
        for g in 0..np {
            let pn = f.peer_node[g];
            if pn == NO_PEER {
                continue;
            }
            let pg = f.base[pn as usize] as usize + usize::from(f.peer_port[g]);
            if g < pg {
                f.phys_up(g as u32);
            }
        }
        Ok(f)
    }

    // ----- clock and event loop ---------------------------------------------------------

    /// The virtual clock.
    #[must_use]
    pub fn now(&self) -> Time {
        self.now
    }

    /// The time of the next pending event, if any.
    #[must_use]
    pub fn next_event_time(&self) -> Option<Time> {
        self.queue.peek_time()
    }

    /// Number of pending events.
    #[must_use]
    pub fn pending_events(&self) -> usize {
        self.queue.len()
    }

    /// Processes the earliest pending event (advancing the clock to it) and returns its time;
    /// `None` if nothing is pending.
    pub fn step(&mut self) -> Option<Time> {
        let (t, ev) = self.queue.pop()?;
        self.now = self.now.max(t);
        self.process(ev);
        Some(t)
    }

    /// Processes every event due at or before `t`, then sets the clock to `t` (if later).
    pub fn run_until(&mut self, t: Time) {
        while let Some((at, ev)) = self.queue.pop_due(t) {
            self.now = self.now.max(at);
            self.process(ev);
        }
        self.now = self.now.max(t);
    }

    /// [`Fabric::run_until`] `now + d`.
    pub fn run_for(&mut self, d: Duration) {
        let t = self.now + d;
        self.run_until(t);
    }

    /// Processes events until none is pending or the next one is after `limit`; returns the
    /// clock. Unlike [`Fabric::run_until`] the clock stops at the last event processed.
    pub fn run_until_idle(&mut self, limit: Time) -> Time {
        while let Some((at, ev)) = self.queue.pop_due(limit) {
            self.now = self.now.max(at);
            self.process(ev);
        }
        self.now
    }

    fn process(&mut self, ev: Ev) {
        self.stats.events += 1;
        match ev {
            Ev::Arrive {
                node,
                port,
                local,
                buf,
            } => {
                self.arrivals_pending -= 1;
                self.arrive(node, port, local, buf);
            }
            Ev::Timer { node } => {
                let n = node as usize;
                if self.timer_at[n] == self.now.0 {
                    self.timer_at[n] = NO_TIMER;
                    self.stats.timers += 1;
                    self.trace_ev(TraceKind::Timer, node, 0);
                    if let Some(ext) = self.external[n].as_mut() {
                        ext.handle_timeout(self.now);
                    } else {
                        self.agents[n].handle_timeout(self.now);
                    }
                    self.after_agent(node, self.service_ns);
                }
            }
            Ev::Retrain { gport } => self.phys_up(gport),
            Ev::LinkSet { gport, up } => {
                let g = gport as usize;
                let Some(pg) = self.peer_gport(gport) else {
                    return;
                };
                if up {
                    self.flags[g] &= !CUT;
                    self.flags[pg as usize] &= !CUT;
                    self.phys_up(gport);
                } else {
                    self.flags[g] |= CUT;
                    self.flags[pg as usize] |= CUT;
                    self.phys_down(gport);
                }
            }
            Ev::LinkReq { gport, req } => match req {
                LinkRequest::Down => {
                    self.phys_down(gport);
                    self.schedule_retrain(gport);
                }
                LinkRequest::Disable => {
                    self.flags[gport as usize] |= DISABLED;
                    self.phys_down(gport);
                }
                LinkRequest::Poll => {
                    self.flags[gport as usize] &= !DISABLED;
                    self.schedule_retrain(gport);
                }
            },
            Ev::Reboot { node } => self.do_reboot(node),
        }
    }

    // ----- MAD movement -----------------------------------------------------------------

    fn node_port_of(&self, gport: u32) -> Option<(u32, u8)> {
        // The peer's peer is this port: cheaper than searching `base`.
        let g = gport as usize;
        let pn = *self.peer_node.get(g)?;
        if pn == NO_PEER {
            return None;
        }
        let pg = self.base[pn as usize] as usize + usize::from(self.peer_port[g]);
        Some((self.peer_node[pg], self.peer_port[pg]))
    }

    fn peer_gport(&self, gport: u32) -> Option<u32> {
        let g = gport as usize;
        let pn = *self.peer_node.get(g)?;
        if pn == NO_PEER {
            return None;
        }
        Some(self.base[pn as usize] + u32::from(self.peer_port[g]))
    }

    /// True if `port` of agent `n` may pass SMPs: physically LinkUp (fabric view) and its
    /// PortState is not Down (IBA vol1 §7.2; Init/Armed/Active all carry SMPs).
    fn port_passes(&self, n: u32, port: u8) -> bool {
        let g = self.base[n as usize] as usize + usize::from(port);
        if self.flags[g] & UP == 0 {
            return false;
        }
        if let Some(ext) = &self.external[n as usize] {
            return ext.port_state(PortNum(port)) != PortState::DOWN;
        }
        self.agents[n as usize]
            .port_info(PortNum(port))
            .is_some_and(|pi| pi.port_state() != PortState::DOWN)
    }

    fn drop_buf(&mut self, buf: u32, reason: DropReason, node: u32, port: u8) {
        self.stats.dropped.bump(reason);
        if self.cfg.trace {
            self.trace_mad(TraceKind::Drop(reason), node, port, buf);
        }
        self.pool.release(buf);
    }

    /// Puts the MAD in `buf` on the wire out of `port` of node `n`, leaving at `depart`.
    fn transmit(&mut self, n: u32, port: u8, buf: u32, depart: u64) {
        let ni = n as usize;
        if port == 0 || port > self.agents[ni].num_ports() {
            return self.drop_buf(buf, DropReason::NoLink, n, port);
        }
        let g = self.base[ni] as usize + usize::from(port);
        let pn = self.peer_node[g];
        if pn == NO_PEER {
            return self.drop_buf(buf, DropReason::NoLink, n, port);
        }
        // Egress: the physical link decides. A port the SM has just set Down (logical Down,
        // link still up) sends the SetResp before the carrier drops the link — the link
        // request is carried out only once that response has crossed (see `after_agent`), as
        // on hardware; OpenSM's first sweep relies on it (it sets Down to apply OpVLs/MTU).
        if self.flags[g] & UP == 0 {
            return self.drop_buf(buf, DropReason::PortDown, n, port);
        }
        self.stats.transmitted += 1;
        let pp = self.peer_port[g];
        let mut arrival = depart.saturating_add(self.hop_ns);
        let decision = if !self.link_faults.is_empty() {
            let key = (g as u32).min(self.base[pn as usize] + u32::from(pp));
            match self.link_faults.get_mut(&key) {
                Some(inj) => Some(inj.decide(SMP_LEN)),
                None if !self.faults.config().is_none() => Some(self.faults.decide(SMP_LEN)),
                None => None,
            }
        } else if !self.faults.config().is_none() {
            Some(self.faults.decide(SMP_LEN))
        } else {
            None
        };
        if let Some(d) = decision {
            if d.drop {
                self.stats.faults.dropped += 1;
                return self.drop_buf(buf, DropReason::Fault, n, port);
            }
            if let Some((byte, bit)) = d.corrupt {
                self.stats.faults.corrupted += 1;
                if let Some(b) = self.pool.slot_mut(buf).data.get_mut(usize::from(byte)) {
                    *b ^= 1 << bit;
                }
            }
            if d.extra_delay_ns > 0 {
                self.stats.faults.delayed += 1;
                arrival = arrival.saturating_add(d.extra_delay_ns);
            }
            if d.duplicate {
                self.stats.faults.duplicated += 1;
                let copy = self.pool.alloc();
                let src = self.pool.slot(buf).clone();
                *self.pool.slot_mut(copy) = src;
                self.push_arrive(Time(arrival), pn, pp, false, copy);
            }
        }
        self.push_arrive(Time(arrival), pn, pp, false, buf);
    }

    fn push_arrive(&mut self, at: Time, node: u32, port: u8, local: bool, buf: u32) {
        self.arrivals_pending += 1;
        self.queue.push(
            at,
            Ev::Arrive {
                node,
                port,
                local,
                buf,
            },
        );
    }

    /// True if the SMA of a muted node would consume this SMP (so the fabric drops it).
    fn consumed_by_sma(smp: &Smp) -> bool {
        if smp.is_dr() {
            !smp.direction() && smp.hop_ptr >= smp.hop_cnt
        } else {
            let m = smp.method();
            !m.is_response() && m != Method::TRAP && smp.attr() != SmpAttrId::SM_INFO
        }
    }

    fn arrive(&mut self, n: u32, port: u8, local: bool, buf: u32) {
        let ni = n as usize;
        if !local {
            self.stats.hops += 1;
        }
        if self.cfg.trace {
            self.trace_mad(TraceKind::Arrive, n, port, buf);
        }
        if !local && !self.port_passes(n, port) {
            return self.drop_buf(buf, DropReason::PortDown, n, port);
        }
        let class = self.pool.slot(buf).data[1];
        if class == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            let (pass_through, consumed) = {
                let Ok(smp) = Smp::ref_from_bytes(&self.pool.slot(buf).data) else {
                    return self.drop_buf(buf, DropReason::NotSmp, n, port);
                };
                let (hp, hc) = (smp.hop_ptr, smp.hop_cnt);
                let through = self.agents[ni].is_switch()
                    && if smp.direction() {
                        hp >= 2 && hp <= hc
                    } else {
                        hp != 0 && hp < hc
                    };
                (through, Fabric::consumed_by_sma(smp))
            };
            if self.muted[ni] && consumed {
                return self.drop_buf(buf, DropReason::Muted, n, port);
            }
            let delay = if pass_through { 0 } else { self.service_ns };
            self.deliver(n, port, buf, delay);
        } else if class == MgmtClass::SUBN_LID_ROUTED.0 {
            let dlid = Lid(self.pool.slot(buf).dlid);
            let agent = &self.agents[ni];
            let ext = self.external[ni].as_deref();
            let mine = if let Some(ext) = ext {
                ext.lid_matches(dlid)
            } else if agent.is_switch() {
                agent.lid_matches(PortNum::MGMT, dlid)
            } else {
                agent.lid_matches(PortNum(port), dlid)
            };
            if mine || dlid.is_permissive() {
                return self.deliver_lid_local(n, port, buf);
            }
            if !agent.is_switch() {
                return self.drop_buf(buf, DropReason::DlidMismatch, n, port);
            }
            let out = match ext {
                Some(ext) => ext.lft_port(dlid),
                None => agent.lft_port(dlid),
            };
            match out {
                Some(PortNum(0)) => self.deliver_lid_local(n, port, buf),
                Some(PortNum(out)) => {
                    self.stats.lid_forwarded += 1;
                    if self.cfg.trace {
                        self.trace_mad(TraceKind::LidForward, n, out, buf);
                    }
                    self.transmit(n, out, buf, self.now.0);
                }
                None => self.drop_buf(buf, DropReason::NoRoute, n, port),
            }
        } else {
            self.drop_buf(buf, DropReason::NotSmp, n, port);
        }
    }

    fn deliver_lid_local(&mut self, n: u32, port: u8, buf: u32) {
        if self.muted[n as usize] {
            let consumed = Smp::ref_from_bytes(&self.pool.slot(buf).data)
                .map(Fabric::consumed_by_sma)
                .unwrap_or(true);
            if consumed {
                return self.drop_buf(buf, DropReason::Muted, n, port);
            }
        }
        self.deliver(n, port, buf, self.service_ns);
    }

    /// Hands the MAD to the agent, then collects what the agent produced.
    fn deliver(&mut self, n: u32, port: u8, buf: u32, delay: u64) {
        self.stats.delivered += 1;
        if self.cfg.trace {
            self.trace_mad(TraceKind::Deliver, n, port, buf);
        }
        let slot = self.pool.slot(buf);
        let meta = MadMeta {
            port: PortNum(port),
            slid: Lid(slot.slid),
            dlid: Lid(slot.dlid),
            qp: 0,
            sl: slot.sl,
        };
        match self.external[n as usize].as_mut() {
            Some(ext) => ext.deliver(self.now, &meta, &slot.data),
            None => self.agents[n as usize].handle_mad(self.now, &meta, &slot.data),
        }
        self.pool.release(buf);
        self.after_agent(n, delay);
    }

    /// Drains an agent after any input: transmits (leaving after `delay` ns), events (MADs for
    /// the local SM), link requests, and its next timer.
    fn after_agent(&mut self, n: u32, delay: u64) {
        let ni = n as usize;
        let depart = self.now.0.saturating_add(delay);
        if self.external[ni].is_some() {
            return self.after_external(n, depart);
        }
        loop {
            let buf = self.pool.alloc();
            let out = self.agents[ni].poll_transmit(self.now, &mut self.pool.slot_mut(buf).data);
            let Some(tx) = out else {
                self.pool.release(buf);
                break;
            };
            let s = self.pool.slot_mut(buf);
            s.slid = tx.meta.slid.0;
            s.dlid = tx.meta.dlid.0;
            s.sl = tx.meta.sl;
            self.transmit(n, tx.meta.port.0, buf, depart);
        }
        while let Some(ev) = self.agents[ni].poll_event() {
            if let Event::ForSm { meta, mad } = ev {
                self.queue_for_sm(n, meta, mad);
            }
        }
        if !self.agents[ni].hardware().requests.is_empty() {
            let reqs = std::mem::take(&mut self.agents[ni].hardware_mut().requests);
            for (p, req) in reqs {
                if p.0 == 0 || p.0 > self.agents[ni].num_ports() {
                    continue;
                }
                let gport = self.base[ni] + u32::from(p.0);
                // After what the agent just sent (its SetResp) has crossed the link.
                let at = Time(depart.saturating_add(self.hop_ns));
                self.queue.push(at, Ev::LinkReq { gport, req });
            }
        }
        match self.agents[ni].poll_timeout() {
            Some(t) => {
                let t = t.max(self.now);
                if self.timer_at[ni] != t.0 {
                    self.timer_at[ni] = t.0;
                    self.queue.push(t, Ev::Timer { node: n });
                }
            }
            None => self.timer_at[ni] = NO_TIMER,
        }
    }

    /// [`Fabric::after_agent`] for an external node.
    fn after_external(&mut self, n: u32, depart: u64) {
        let ni = n as usize;
        loop {
            let buf = self.pool.alloc();
            let now = self.now;
            let out = match self.external[ni].as_mut() {
                Some(ext) => ext.poll_transmit(now, &mut self.pool.slot_mut(buf).data),
                None => None,
            };
            let Some(tx) = out else {
                self.pool.release(buf);
                break;
            };
            let s = self.pool.slot_mut(buf);
            s.slid = tx.meta.slid.0;
            s.dlid = tx.meta.dlid.0;
            s.sl = tx.meta.sl;
            self.transmit(n, tx.meta.port.0, buf, depart);
        }
        let np = self.agents[ni].num_ports();
        while let Some((p, req)) = self.external[ni]
            .as_mut()
            .and_then(|e| e.poll_link_request())
        {
            if p.0 == 0 || p.0 > np {
                continue;
            }
            let gport = self.base[ni] + u32::from(p.0);
            let at = Time(depart.saturating_add(self.hop_ns));
            self.queue.push(at, Ev::LinkReq { gport, req });
        }
        match self.external[ni].as_ref().and_then(|e| e.poll_timeout()) {
            Some(t) => {
                let t = t.max(self.now);
                if self.timer_at[ni] != t.0 {
                    self.timer_at[ni] = t.0;
                    self.queue.push(t, Ev::Timer { node: n });
                }
            }
            None => self.timer_at[ni] = NO_TIMER,
        }
    }

    /// Reports a link change to the node's agent (built-in or external).
    fn link_event(&mut self, node: u32, port: u8, ev: LinkEvent) {
        let now = self.now;
        match self.external[node as usize].as_mut() {
            Some(ext) => ext.link(now, PortNum(port), ev),
            None => self.agents[node as usize].handle_link(now, PortNum(port), ev),
        }
    }

    fn queue_for_sm(&mut self, n: u32, mut meta: MadMeta, mad: Box<[u8; SMP_LEN]>) {
        let is_switch = self.agents[n as usize].is_switch();
        let found = self
            .sms
            .iter()
            .position(|s| s.active && s.node == n && (is_switch || s.port == meta.port.0));
        let Some(i) = found else {
            self.stats.dropped.bump(DropReason::NoSm);
            if self.cfg.trace {
                self.trace_hdr(TraceKind::Drop(DropReason::NoSm), n, meta.port.0, &mad[..]);
            }
            return;
        };
        if self.sms[i].queue.len() >= self.cfg.sm_queue_cap {
            self.sms[i].stats.overflowed += 1;
            self.stats.dropped.bump(DropReason::SmQueueFull);
            return;
        }
        self.stats.to_sm += 1;
        if self.cfg.trace {
            self.trace_hdr(TraceKind::ToSm, n, meta.port.0, &mad[..]);
        }
        meta.port = PortNum(self.sms[i].port);
        self.sms[i].queue.push_back((meta, mad));
    }

    // ----- physical links ---------------------------------------------------------------

    fn caps(&self, n: u32, port: u8) -> LinkCaps {
        let Some(pi) = self.agents[n as usize].port_info(PortNum(port)) else {
            return LinkCaps::default();
        };
        let pick = |enabled: u8, supported: u8| {
            let e = enabled & supported;
            if e == 0 {
                supported
            } else {
                e
            }
        };
        LinkCaps {
            width: pick(pi.link_width_enabled, pi.link_width_supported),
            speed: pick(pi.link_speed_enabled(), pi.link_speed_supported()),
            speed_ext: pi.link_speed_ext_enabled() & pi.link_speed_ext_supported(),
        }
    }

    /// Brings the link of `gport` up on both ends if it is cabled, not cut, not disabled at
    /// either end, and the ends have a common width and speed.
    fn phys_up(&mut self, gport: u32) {
        let Some(pg) = self.peer_gport(gport) else {
            return;
        };
        let (g, pgi) = (gport as usize, pg as usize);
        if self.flags[g] & UP != 0 || (self.flags[g] | self.flags[pgi]) & (CUT | DISABLED) != 0 {
            return;
        }
        let (Some((n, p)), Some((pn, pp))) = (self.node_port_of(gport), self.node_port_of(pg))
        else {
            return;
        };
        let Some(t) = train(self.caps(n, p), self.caps(pn, pp)) else {
            return;
        };
        self.flags[g] |= UP;
        self.flags[pgi] |= UP;
        let ev = LinkEvent::Up {
            width_active: t.width_active,
            speed_active: t.speed_active,
            speed_ext_active: t.speed_ext_active,
        };
        for (node, port) in [(n, p), (pn, pp)] {
            self.stats.link_changes += 1;
            self.trace_ev(TraceKind::LinkUp, node, port);
            self.link_event(node, port, ev);
            self.after_agent(node, self.service_ns);
        }
    }

    /// Takes the link of `gport` down on both ends (if it is up).
    fn phys_down(&mut self, gport: u32) {
        let Some(pg) = self.peer_gport(gport) else {
            return;
        };
        let (g, pgi) = (gport as usize, pg as usize);
        if self.flags[g] & UP == 0 {
            return;
        }
        let (Some((n, p)), Some((pn, pp))) = (self.node_port_of(gport), self.node_port_of(pg))
        else {
            return;
        };
        self.flags[g] &= !UP;
        self.flags[pgi] &= !UP;
        for (node, port) in [(n, p), (pn, pp)] {
            self.stats.link_changes += 1;
            self.trace_ev(TraceKind::LinkDown, node, port);
            self.link_event(node, port, LinkEvent::Down);
            self.after_agent(node, self.service_ns);
        }
    }

    fn schedule_retrain(&mut self, gport: u32) {
        let t = self.now + self.cfg.link_retrain_time;
        self.queue.push(t, Ev::Retrain { gport });
    }

    fn do_reboot(&mut self, n: u32) {
        let ni = n as usize;
        self.stats.reboots += 1;
        self.trace_ev(TraceKind::Reboot, n, 0);
        let np = self.agents[ni].num_ports();
        for p in 1..=np {
            let g = self.base[ni] + u32::from(p);
            self.phys_down(g);
            // Power-on: ports come back enabled.
            self.flags[g as usize] &= !DISABLED;
        }
        self.agents[ni].reset(self.now);
        self.agents[ni].hardware_mut().requests.clear();
        self.timer_at[ni] = NO_TIMER;
        self.after_agent(n, self.service_ns);
        // An SM attached here comes back with its node and registers again (IsSM).
        let sm_ports: Vec<u8> = self
            .sms
            .iter()
            .filter(|s| s.active && s.node == n)
            .map(|s| s.port)
            .collect();
        for p in sm_ports {
            self.set_is_sm(n, p, true);
        }
        for p in 1..=np {
            let g = self.base[ni] + u32::from(p);
            if self.peer_node[g as usize] != NO_PEER {
                self.schedule_retrain(g);
            }
        }
    }

    // ----- public fault controls --------------------------------------------------------

    fn check_node(&self, node: NodeId) -> Result<u32, SimError> {
        if node.index() < self.agents.len() {
            Ok(node.0)
        } else {
            Err(SimError::NoSuchNode(node))
        }
    }

    fn cabled_gport(&self, node: NodeId, port: PortNum) -> Result<u32, SimError> {
        let n = self.check_node(node)?;
        let a = &self.agents[n as usize];
        if port.0 == 0 || port.0 > a.num_ports() {
            return Err(SimError::NoSuchPort { node, port });
        }
        let g = self.base[n as usize] + u32::from(port.0);
        if self.peer_node[g as usize] == NO_PEER {
            return Err(SimError::NotCabled { node, port });
        }
        Ok(g)
    }

    /// Cuts (`up = false`) or restores (`up = true`) the cable at `node`/`port` now. Both agents
    /// get `LinkEvent::Down` / `LinkEvent::Up` (and produce whatever traps they produce). A
    /// restored cable trains at once, unless an SM has disabled either end (PortPhysicalState
    /// Disabled), in which case it stays down until the SM sets Polling.
    pub fn set_link(&mut self, node: NodeId, port: PortNum, up: bool) -> Result<(), SimError> {
        let gport = self.cabled_gport(node, port)?;
        self.process(Ev::LinkSet { gport, up });
        Ok(())
    }

    /// [`Fabric::set_link`] at time `at`.
    pub fn schedule_link(
        &mut self,
        at: Time,
        node: NodeId,
        port: PortNum,
        up: bool,
    ) -> Result<(), SimError> {
        let gport = self.cabled_gport(node, port)?;
        self.check_future(at)?;
        self.queue.push(at, Ev::LinkSet { gport, up });
        Ok(())
    }

    fn check_future(&self, at: Time) -> Result<(), SimError> {
        if at < self.now {
            return Err(SimError::InThePast { at, now: self.now });
        }
        Ok(())
    }

    /// True if the physical link of `node`/`port` is up.
    #[must_use]
    pub fn is_link_up(&self, node: NodeId, port: PortNum) -> bool {
        self.cabled_gport(node, port)
            .is_ok_and(|g| self.flags[g as usize] & UP != 0)
    }

    /// Reboots `node` now: its links drop (peers see LinkEvent::Down), the agent loses every
    /// SM-set value (`Agent::reset`), and the links retrain after
    /// [`SimConfig::link_retrain_time`]. Ports the SM had disabled come back enabled. An SM
    /// attached to the node stays attached (its queue is kept) and re-registers: IsSM is set
    /// again on its port.
    pub fn reboot(&mut self, node: NodeId) -> Result<(), SimError> {
        let n = self.check_node(node)?;
        self.process(Ev::Reboot { node: n });
        Ok(())
    }

    /// [`Fabric::reboot`] at time `at`.
    pub fn schedule_reboot(&mut self, at: Time, node: NodeId) -> Result<(), SimError> {
        let n = self.check_node(node)?;
        self.check_future(at)?;
        self.queue.push(at, Ev::Reboot { node: n });
        Ok(())
    }

    /// Mutes (or unmutes) the SMA of `node`; see the module documentation for what a muted
    /// node still does.
    pub fn set_mute(&mut self, node: NodeId, muted: bool) -> Result<(), SimError> {
        let n = self.check_node(node)?;
        self.muted[n as usize] = muted;
        Ok(())
    }

    /// True if `node`'s SMA is muted.
    #[must_use]
    pub fn is_muted(&self, node: NodeId) -> bool {
        self.muted.get(node.index()).copied().unwrap_or(false)
    }

    /// Replaces the fabric-wide fault rates from now on (the random stream continues).
    pub fn set_faults(&mut self, faults: FaultConfig) {
        self.cfg.faults = faults;
        self.faults.set_config(faults);
    }

    /// Gives the cable at `node`/`port` its own fault rates (both directions), replacing the
    /// fabric-wide ones on that cable; `None` returns it to the fabric-wide rates. Each such
    /// cable draws from its own ChaCha8 stream, seeded from [`SimConfig::seed`] and the cable,
    /// so a flaky cable does not perturb the randomness of the rest of the fabric.
    pub fn set_link_faults(
        &mut self,
        node: NodeId,
        port: PortNum,
        faults: Option<FaultConfig>,
    ) -> Result<(), SimError> {
        let g = self.cabled_gport(node, port)?;
        let key = self.peer_gport(g).map_or(g, |pg| g.min(pg));
        match faults {
            Some(cfg) => {
                let seed = self.cfg.seed ^ u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let inj = FaultInjector::new(cfg, ChaCha8Rng::seed_from_u64(seed));
                self.link_faults.insert(key, inj);
            }
            None => {
                self.link_faults.remove(&key);
            }
        }
        Ok(())
    }

    // ----- SMs --------------------------------------------------------------------------

    /// Attaches an SM at `port` of `node`: a CA/router port, or port 0 of a switch.
    pub fn attach_sm(&mut self, node: NodeId, port: PortNum) -> Result<SmAttachment, SimError> {
        let n = self.check_node(node)?;
        let a = &self.agents[n as usize];
        if a.is_switch() && port.0 != 0 {
            return Err(SimError::BadSmPort {
                node,
                port,
                reason: "on a switch an SM runs behind management port 0",
            });
        }
        if !a.is_switch() && (port.0 == 0 || port.0 > a.num_ports()) {
            return Err(SimError::NoSuchPort { node, port });
        }
        if self
            .sms
            .iter()
            .any(|s| s.active && s.node == n && s.port == port.0)
        {
            return Err(SimError::SmAlreadyAttached { node, port });
        }
        let handle = SmHandle(self.sms.len() as u32);
        self.sms.push(SmSlot {
            node: n,
            port: port.0,
            active: true,
            queue: VecDeque::new(),
            stats: SmStats::default(),
        });
        self.set_is_sm(n, port.0, true);
        Ok(SmAttachment { handle, node, port })
    }

    /// Sets or clears PortInfo.CapabilityMask.IsSM on the SM's port, as an SM does when it
    /// registers with (or leaves) its HCA; the agent then routes SMInfo requests to the SM and
    /// queues trap 144 (capability mask changed).
    fn set_is_sm(&mut self, n: u32, port: u8, on: bool) {
        let ni = n as usize;
        let p = PortNum(port);
        let Some(mask) = self.agents[ni]
            .port_info(p)
            .map(|pi| pi.capability_mask.get())
        else {
            return;
        };
        let new = if on { mask | IS_SM } else { mask & !IS_SM };
        if self.agents[ni].set_capability_mask(self.now, p, new) {
            self.after_agent(n, self.service_ns);
        }
    }

    /// Detaches an SM (the SM process died): its queue is discarded, IsSM is cleared on its
    /// port, and MADs for it are dropped ([`DropReason::NoSm`]) from now on. The handle stays
    /// invalid; its [`SimPort`] reports [`PortError::Closed`].
    pub fn detach_sm(&mut self, h: SmHandle) {
        let Some(sm) = self.sms.get_mut(h.0 as usize) else {
            return;
        };
        if !sm.active {
            return;
        }
        sm.active = false;
        sm.queue.clear();
        let (n, p) = (sm.node, sm.port);
        self.set_is_sm(n, p, false);
    }

    /// [`Fabric::attach_sm`] by NodeGUID.
    pub fn attach_sm_by_guid(
        &mut self,
        guid: Guid,
        port: PortNum,
    ) -> Result<SmAttachment, SimError> {
        let node = self
            .topo
            .node_by_guid(guid)
            .ok_or(SimError::UnknownGuid(guid))?;
        self.attach_sm(node, port)
    }

    /// [`Fabric::attach_sm`] by the topology's node name.
    pub fn attach_sm_by_name(
        &mut self,
        name: &str,
        port: PortNum,
    ) -> Result<SmAttachment, SimError> {
        let node = self
            .topo
            .node_by_name(name)
            .ok_or_else(|| SimError::UnknownName(name.to_string()))?;
        self.attach_sm(node, port)
    }

    /// Where an SM is attached.
    #[must_use]
    pub fn sm_attachment(&self, h: SmHandle) -> Option<SmAttachment> {
        let s = self.sms.get(h.0 as usize)?;
        Some(SmAttachment {
            handle: h,
            node: NodeId(s.node),
            port: PortNum(s.port),
        })
    }

    /// The [`MadPort`] of an attached SM.
    pub fn sm_port(&mut self, h: SmHandle) -> SimPort<'_> {
        SimPort {
            fabric: self,
            sm: h,
        }
    }

    /// Counters of one SM.
    #[must_use]
    pub fn sm_stats(&self, h: SmHandle) -> Option<SmStats> {
        self.sms.get(h.0 as usize).map(|s| s.stats)
    }

    /// Number of MADs waiting for an SM.
    #[must_use]
    pub fn sm_pending(&self, h: SmHandle) -> usize {
        self.sms.get(h.0 as usize).map_or(0, |s| s.queue.len())
    }

    /// The SM's node originates `mad` now: a DR SMP goes through `ibmad::smi::advance` (hop
    /// pointer 0 → 1) and out of the port it names (0 hops: to the local agent); a LID-routed
    /// SMP leaves the SM's CA port, or is switched by the LFT of the SM's switch. `meta.slid` 0
    /// means "the SM port's LID"; `meta.port` is ignored (the attachment fixes it).
    pub fn sm_send(&mut self, h: SmHandle, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        let Some(sm) = self.sms.get_mut(h.0 as usize).filter(|s| s.active) else {
            return Err(PortError::Closed);
        };
        if mad.len() != SMP_LEN {
            return Err(PortError::BadLength {
                len: mad.len(),
                expected: SMP_LEN,
            });
        }
        if !MgmtClass(mad[1]).is_smp() {
            return Err(PortError::Other(format!(
                "the simulator carries only SMPs; management class {:#04x} given",
                mad[1]
            )));
        }
        sm.stats.sent += 1;
        let (n, p) = (sm.node, sm.port);
        self.stats.from_sm += 1;
        let buf = self.pool.alloc();
        self.pool.slot_mut(buf).data.copy_from_slice(mad);
        if self.cfg.trace {
            self.trace_mad(TraceKind::FromSm, n, p, buf);
        }
        let ni = n as usize;
        let is_switch = self.agents[ni].is_switch();
        if mad[1] == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            let s = self.pool.slot_mut(buf);
            s.slid = Lid::PERMISSIVE.0;
            s.dlid = Lid::PERMISSIVE.0;
            s.sl = meta.sl;
            let fwd = match Smp::mut_from_bytes(&mut s.data) {
                Ok(smp) => smi::advance(smp, is_switch),
                Err(_) => Forward::Discard(smi::DiscardReason::NotDirectedRoute),
            };
            match fwd {
                // A CA sends only out of the port the SM is bound to (C14-9:1: the egress port
                // must be InitialPath[1]).
                Forward::Out(q) if is_switch || q.0 == p => {
                    self.transmit(n, q.0, buf, self.now.0);
                }
                Forward::Local => self.push_local(n, p, buf),
                Forward::LidRouted(lid) => self.send_lid_from(n, p, buf, lid),
                Forward::Out(_) | Forward::Discard(_) => {
                    self.drop_buf(buf, DropReason::SmiDiscard, n, p)
                }
            }
        } else {
            let own = self.agents[ni]
                .port_info(PortNum(p))
                .map_or(Lid(0), |pi| pi.lid());
            let s = self.pool.slot_mut(buf);
            s.slid = if meta.slid.0 != 0 { meta.slid.0 } else { own.0 };
            s.sl = meta.sl;
            self.send_lid_from(n, p, buf, meta.dlid);
        }
        Ok(())
    }

    fn push_local(&mut self, n: u32, port: u8, buf: u32) {
        self.push_arrive(self.now, n, port, true, buf);
    }

    /// A LID-routed MAD originated at node `n` (an SM's CA port `p`, or switch port 0).
    fn send_lid_from(&mut self, n: u32, p: u8, buf: u32, dlid: Lid) {
        self.pool.slot_mut(buf).dlid = dlid.0;
        let a = &self.agents[n as usize];
        if a.is_switch() {
            if a.lid_matches(PortNum::MGMT, dlid) {
                return self.push_local(n, 0, buf);
            }
            match a.lft_port(dlid) {
                Some(PortNum(0)) => self.push_local(n, 0, buf),
                Some(PortNum(out)) => self.transmit(n, out, buf, self.now.0),
                None => self.drop_buf(buf, DropReason::NoRoute, n, p),
            }
        } else if a.lid_matches(PortNum(p), dlid) {
            self.push_local(n, p, buf);
        } else {
            self.transmit(n, p, buf, self.now.0);
        }
    }

    /// Takes the next MAD queued for SM `h` into `buf`.
    pub fn sm_recv(
        &mut self,
        h: SmHandle,
        buf: &mut [u8],
    ) -> Result<Option<(MadMeta, usize)>, PortError> {
        let Some(sm) = self.sms.get_mut(h.0 as usize).filter(|s| s.active) else {
            return Err(PortError::Closed);
        };
        if sm.queue.is_empty() {
            return Ok(None);
        }
        let Some(out) = buf.get_mut(..SMP_LEN) else {
            return Err(PortError::BadLength {
                len: buf.len(),
                expected: SMP_LEN,
            });
        };
        let Some((meta, mad)) = sm.queue.pop_front() else {
            return Ok(None);
        };
        out.copy_from_slice(&mad[..]);
        sm.stats.received += 1;
        Ok(Some((meta, SMP_LEN)))
    }

    // ----- queries ----------------------------------------------------------------------

    /// Fabric-wide counters.
    #[must_use]
    pub fn stats(&self) -> &SimStats {
        &self.stats
    }

    /// MAD buffers currently in use. Every buffer is either on a wire (a pending arrival) or
    /// free, so this equals [`Fabric::mads_on_the_wire`] between events — a leak check.
    #[must_use]
    pub fn mads_in_flight(&self) -> usize {
        self.pool.slots.len() - self.pool.free.len()
    }

    /// MADs scheduled to arrive at a port (pending arrival events).
    #[must_use]
    pub fn mads_on_the_wire(&self) -> usize {
        self.arrivals_pending
    }

    /// The recorded events (empty unless [`SimConfig::trace`]).
    #[must_use]
    pub fn trace(&self) -> &[TraceEntry] {
        &self.trace
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The topology the fabric was built from.
    #[must_use]
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Number of nodes.
    #[must_use]
    pub fn num_nodes(&self) -> usize {
        self.agents.len()
    }

    /// The agent of `node`.
    #[must_use]
    pub fn agent(&self, node: NodeId) -> Option<&SimAgent> {
        self.agents.get(node.index())
    }

    /// Hands `node`'s management to `ext` (see [`ExternalAgent`]) from now on. The links of
    /// the node that are up are reported to it as [`LinkEvent::Up`] with their trained width
    /// and speed. Returns the external agent that was there before, if any.
    pub fn set_external(
        &mut self,
        node: NodeId,
        ext: Box<dyn ExternalAgent>,
    ) -> Result<Option<Box<dyn ExternalAgent>>, SimError> {
        let n = self.check_node(node)?;
        let ni = n as usize;
        let old = self.external[ni].replace(ext);
        let np = self.agents[ni].num_ports();
        for p in 1..=np {
            let g = self.base[ni] as usize + usize::from(p);
            if self.flags[g] & UP == 0 {
                continue;
            }
            let Some(pi) = self.agents[ni].port_info(PortNum(p)) else {
                continue;
            };
            let ev = LinkEvent::Up {
                width_active: pi.link_width_active,
                speed_active: pi.link_speed_active(),
                speed_ext_active: pi.link_speed_ext_active(),
            };
            self.link_event(n, p, ev);
        }
        self.timer_at[ni] = NO_TIMER;
        self.after_agent(n, self.service_ns);
        Ok(old)
    }

    /// The external agent of `node`, if it has one.
    #[must_use]
    pub fn external(&self, node: NodeId) -> Option<&dyn ExternalAgent> {
        self.external.get(node.index())?.as_deref()
    }

    /// The external agent of `node`, mutable (call [`Fabric::poke`] after changing it).
    pub fn external_mut(&mut self, node: NodeId) -> Option<&mut (dyn ExternalAgent + 'static)> {
        self.external.get_mut(node.index())?.as_deref_mut()
    }

    /// Collects what `node`'s agent produced outside a fabric event (after an
    /// [`Fabric::external_mut`] call): transmits, link requests, its next timer.
    pub fn poke(&mut self, node: NodeId) -> Result<(), SimError> {
        let n = self.check_node(node)?;
        self.after_agent(n, 0);
        Ok(())
    }

    /// The node with this NodeGUID.
    #[must_use]
    pub fn node_by_guid(&self, guid: Guid) -> Option<NodeId> {
        self.topo.node_by_guid(guid)
    }

    /// The node with this topology name.
    #[must_use]
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.topo.node_by_name(name)
    }

    /// The far end of `node`/`port`'s cable.
    #[must_use]
    pub fn peer(&self, node: NodeId, port: PortNum) -> Option<PortRef> {
        self.topo.peer(PortRef { node, port })
    }

    // ----- tracing ----------------------------------------------------------------------

    fn trace_ev(&mut self, kind: TraceKind, node: u32, port: u8) {
        if self.cfg.trace {
            self.trace.push(TraceEntry {
                time: self.now,
                kind,
                node,
                port,
                class: 0,
                method: 0,
                attr: 0,
                tid: 0,
            });
        }
    }

    fn trace_mad(&mut self, kind: TraceKind, node: u32, port: u8, buf: u32) {
        let data = self.pool.slot(buf).data;
        self.trace_hdr(kind, node, port, &data);
    }

    fn trace_hdr(&mut self, kind: TraceKind, node: u32, port: u8, mad: &[u8]) {
        let (class, method, attr, tid) = match Smp::ref_from_bytes(mad) {
            Ok(s) => (s.mgmt_class, s.method, s.attr_id.get(), s.tid.get()),
            Err(_) => (0, 0, 0, 0),
        };
        self.trace.push(TraceEntry {
            time: self.now,
            kind,
            node,
            port,
            class,
            method,
            attr,
            tid,
        });
    }
}

/// An attached SM's view of the fabric: an [`ibmad::MadPort`] borrowing the [`Fabric`].
///
/// `send` originates a MAD at the SM's node now; `recv` takes MADs that reached the SM. Neither
/// advances the clock: drive the fabric ([`Fabric::step`], [`Fabric::run_until`]) in between.
pub struct SimPort<'a> {
    fabric: &'a mut Fabric,
    sm: SmHandle,
}

impl SimPort<'_> {
    /// The fabric behind the port.
    pub fn fabric(&mut self) -> &mut Fabric {
        self.fabric
    }
    /// The SM this port belongs to.
    #[must_use]
    pub fn handle(&self) -> SmHandle {
        self.sm
    }
}

impl MadPort for SimPort<'_> {
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        self.fabric.sm_send(self.sm, meta, mad)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError> {
        self.fabric.sm_recv(self.sm, buf)
    }
}

/// Name → handle lookups the scenario tests use.
impl Fabric {
    /// Every attached (not detached) SM.
    pub fn sms(&self) -> impl Iterator<Item = SmAttachment> + '_ {
        self.sms
            .iter()
            .enumerate()
            .filter(|(_, s)| s.active)
            .map(|(i, s)| SmAttachment {
                handle: SmHandle(i as u32),
                node: NodeId(s.node),
                port: PortNum(s.port),
            })
    }

    /// Nodes by name, for building scenario tables.
    #[must_use]
    pub fn names(&self) -> HashMap<String, NodeId> {
        self.topo
            .nodes()
            .map(|(id, n)| (n.name().to_string(), id))
            .collect()
    }
}

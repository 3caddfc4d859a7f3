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
//! [`DropReason::NoRoute`]: super::DropReason::NoRoute
//! [`DropReason::DlidMismatch`]: super::DropReason::DlidMismatch
//! [`DropReason::BadCrc`]: super::DropReason::BadCrc
//!
//! # Faults
//!
//! [`FaultConfig`] rates apply to every link transmission (drop, corrupt, garble, duplicate,
//! delay, symbol; one ChaCha8 stream seeded from [`SimConfig::seed`]). A corrupted MAD fails the
//! receiving port's CRC check: that port discards it ([`DropReason::BadCrc`]) and counts it in
//! its PortRcvErrors, as a real port does — no agent or SM ever sees corrupted bytes (garbling
//! is the unrealistic fault that delivers them). Every port keeps its performance counters
//! ([`Fabric::port_counters`], [`crate::sim::counters`]). Scheduled faults: link down/up
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
//!
//! # Source layout
//!
//! This module holds the model (configuration, errors, the [`Fabric`] state and its
//! construction, queries); the rest is split by concern:
//! - `event`: the clock, the event loop and MAD movement (egress, faults, arrival, LID
//!   switching, delivery to agents);
//! - `links`: physical links (training, down/up, reboots) and the public fault controls;
//! - `sm`: SM attachment, the SMs' queues and [`SimPort`];
//! - `trace`: the event trace ([`TraceEntry`]);
//! - `external`: nodes whose management runs outside the fabric ([`ExternalAgent`]);
//! - `mcast`: multicast data packets switched by the agents' MFTs ([`Fabric::send_multicast`]).

mod event;
mod external;
mod gmp;
mod links;
mod mcast;
mod sm;
mod trace;

pub use external::ExternalAgent;
pub use mcast::{McastDelivery, STORM_LIMIT};
pub use sm::{SimPort, SmAttachment, SmHandle};
pub use trace::{TraceEntry, TraceKind};

use std::collections::HashMap;
use std::time::Duration;

use ibmad::{Guid, PortNum, Time, SMP_LEN};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sma::{Agent, ConfigError, Hardware, LinkRequest, NodeConfig, PortConfig};

use super::counters::PortCounters;
use super::fault::{FaultConfig, FaultInjector};
use super::queue::EventQueue;
use super::stats::SimStats;
use crate::topo::{LinkAttrs, NodeId, PortRef, Topology};
use sm::SmSlot;

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
    /// Bound of each SM's receive queue; beyond it MADs are dropped
    /// ([`DropReason::SmQueueFull`](super::DropReason::SmQueueFull)).
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

/// A 256-byte MAD buffer in flight, with its LRH addressing.
#[derive(Clone)]
struct Slot {
    data: [u8; SMP_LEN],
    slid: u16,
    dlid: u16,
    sl: u8,
    /// This link crossing failed the receiver's CRC check (the `corrupt` fault).
    bad_crc: bool,
    /// This link crossing costs the receiver a symbol error (the `symbol` fault).
    symbol_error: bool,
    /// Source QP (BTH/DETH): 0 for SMPs, 1 for GMPs from a GSI.
    sqp: u32,
    /// Destination QP: 0 for SMPs, 1 for GMPs to a GSI.
    dqp: u32,
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
            bad_crc: false,
            symbol_error: false,
            sqp: 0,
            dqp: 0,
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
    /// Performance counters of every global port.
    counters: Vec<PortCounters>,
    timer_at: Vec<u64>,
    muted: Vec<bool>,
    pool: Pool,
    sms: Vec<SmSlot>,
    faults: FaultInjector,
    /// Per-cable injectors, keyed by the lower global port of the cable.
    link_faults: HashMap<u32, FaultInjector>,
    /// True if any fault rate is set (fabric-wide or on a cable): a transmit without it
    /// skips the fault decision.
    faulty: bool,
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
            counters: vec![PortCounters::default(); np],
            timer_at: vec![NO_TIMER; nn],
            muted: vec![false; nn],
            pool: Pool::default(),
            sms: Vec::new(),
            faults,
            link_faults: HashMap::new(),
            faulty: false,
            stats: SimStats::default(),
            trace: Vec::new(),
            topo: topo.clone(),
            arrivals_pending: 0,
        };
        f.refresh_faulty();
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
}

impl Fabric {
    // ----- queries ----------------------------------------------------------------------

    /// Fabric-wide counters.
    #[must_use]
    pub fn stats(&self) -> &SimStats {
        &self.stats
    }

    /// MAD buffers currently in use. Every buffer is on a wire (a pending arrival), queued
    /// for an attached SM ([`Fabric::sm_pending`]) or free, so between events this equals
    /// [`Fabric::mads_on_the_wire`] plus the SMs' queues — a leak check.
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

    /// Global index of `node`'s `port` (0 = a switch's management port), if it exists.
    fn gport_of(&self, node: NodeId, port: PortNum) -> Option<usize> {
        let a = self.agents.get(node.index())?;
        if port.0 > a.num_ports() || (port.0 == 0 && !a.is_switch()) {
            return None;
        }
        Some(self.base[node.index()] as usize + usize::from(port.0))
    }

    /// The performance counters of `node`'s `port` (port 0: a switch's management port), as
    /// the PMA reports them; see [`crate::sim::counters`] for what is counted.
    #[must_use]
    pub fn port_counters(&self, node: NodeId, port: PortNum) -> Option<&PortCounters> {
        let g = self.gport_of(node, port)?;
        self.counters.get(g)
    }

    /// The performance counters of `node`'s `port`, mutable: to clear them, or to inject
    /// counts the fault model does not produce.
    pub fn port_counters_mut(&mut self, node: NodeId, port: PortNum) -> Option<&mut PortCounters> {
        let g = self.gport_of(node, port)?;
        self.counters.get_mut(g)
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
}

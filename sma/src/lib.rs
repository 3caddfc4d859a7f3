//! # sma — subnet management agent (sans-IO)
//!
//! The SMA is the part of every InfiniBand node that answers the subnet manager: it owns the
//! node's management state (NodeInfo, PortInfo, SwitchInfo, forwarding, QoS and key tables),
//! answers Get/Set SMPs, forwards directed-route SMPs when the node is a switch, enforces the
//! M_Key, and reports events to the master SM with traps (IBA vol1 chapter 14).
//!
//! This crate is a sans-IO core (STYLE P5): [`Agent`] reads no clock, opens no files and spawns
//! no threads. Inputs are [`Agent::handle_mad`] (a received 256-byte SMP with its
//! [`ibmad::MadMeta`]), [`Agent::handle_link`] (the carrier's link up/down) and
//! [`Agent::handle_timeout`]; outputs are [`Agent::poll_transmit`] (MADs to send, `meta.port`
//! = egress port), [`Agent::poll_timeout`] and [`Agent::poll_event`]. `now` never decreases.
//!
//! Guarantees:
//! - no input bytes make it panic; every MAD produces at most one transmit (a forwarded hop or
//!   a response) plus, rarely, one trap;
//! - the directed-route rules are exactly [`ibmad::smi`]'s, shared with the SM and simulator;
//! - an invalid Set changes nothing and is answered with the status [`SmaError`] maps to;
//! - the forwarding path (receive, on_receive, advance, queue) does not allocate once the
//!   transmit queue has warmed up.
//!
//! The performance-management agent is beside it: [`Pma`] ([`pma`]) answers PerfMgt GMPs
//! (ClassPortInfo, PortCounters, PortCountersExtended) from counters its owner keeps and hands
//! over through a [`CounterSource`] ([`CounterTable`] is the ready-made one). It is a separate
//! value because GMPs arrive on QP1, not through the SMA's SMP path.
//!
//! Accepted Sets reach the device through the [`Hardware`] trait ([`NoHardware`] ignores them).
//! A co-located SM receives its MADs as [`Event::ForSm`]; SMInfo requests go to it when the
//! port's CapabilityMask has IsSM ([`Agent::set_capability_mask`]), and are answered
//! "method/attribute not supported" otherwise.
//!
//! # Decisions worth knowing
//!
//! - **SMInfo**: handed to the co-located SM ([`Event::ForSm`], request unchanged) when the
//!   receiving end port has IsSM in its CapabilityMask; otherwise answered with status
//!   "method/attribute not supported" (0x000C).
//! - **Same-state Sets** (Armed → Armed, Active → Active, Init → Init) are accepted as no-ops so
//!   that a retried Set whose GetResp was lost succeeds again; every other transition not in
//!   the IBA state machine is INVALID_FIELD ([`rules::port_state_set`]).
//! - **PortState := Down** sets the logical state at once and asks the carrier
//!   ([`Hardware::link_request`]) to drop the link; the physical state follows the carrier's
//!   [`LinkEvent`]s. On a switch's port 0 (no link) Down returns straight to Init.
//! - **Switch port 0** holds the switch's LID, LMC (forced to 0 unless EnhancedPort0), M_Key and
//!   SM fields; external ports ignore those fields in a Set and read them as 0.
//! - **Traps** are queued only while the issuing port has a LID and a unicast MasterSMLID; one
//!   per (trap number, port) is outstanding, retransmitted from SubnetTimeOut with doubling
//!   back-off (capped at 32×) until repressed.
//! - **Tables**: LFT grows lazily in 64-entry blocks (0xFF = no path); one P_Key block per port
//!   (PartitionCap 32, entry 0 = 0xFFFF), one GUIDInfo block (GUIDCap 8, entry 0 read-only),
//!   SLtoVL per (in, out) pair on switches allocated on the first Set.
//!
//! Not provided: the LID-routed tail of a directed route on the *responder* side (a request
//! delivered through a non-permissive DrDLID is answered along the DR return path rules only,
//! as Linux's SMI does), RandomForwardingTable, PortInfoExtended and vendor attributes
//! (answered 0x000C), data-packet-triggered Armed → Active.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod agent;
mod attrs;
pub mod config;
pub mod error;
pub mod event;
pub mod hw;
pub mod pma;
pub mod rules;
pub mod timer;
pub mod trap;

pub use agent::{
    Agent, Lent, LinkEvent, Stats, Transmit, DEFAULT_LIFE_TIME, GUID_CAP, MAX_EVENTS, MAX_TX_QUEUE,
    PARTITION_CAP, VL_ARB_CAP,
};
pub use config::{ConfigError, NodeConfig, PortConfig};
pub use error::SmaError;
pub use event::{Discard, Event};
pub use hw::{Hardware, LinkRequest, NoHardware};
pub use pma::{
    Counter, CounterSet, CounterSource, CounterTable, Counters, Pma, PmaConfig, PmaError, PmaStats,
    Reply,
};
pub use timer::{Timer, TimerTable};

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
//! Accepted Sets reach the device through the [`Hardware`] trait ([`NoHardware`] ignores them).
//! A co-located SM receives its MADs as [`Event::ForSm`]; SMInfo requests go to it when the
//! port's CapabilityMask has IsSM ([`Agent::set_capability_mask`]), and are answered
//! "method/attribute not supported" otherwise.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod agent;
mod attrs;
pub mod config;
pub mod error;
pub mod event;
pub mod hw;
pub mod rules;
pub mod timer;
pub mod trap;

pub use agent::{
    Agent, LinkEvent, Stats, Transmit, DEFAULT_LIFE_TIME, GUID_CAP, MAX_EVENTS, MAX_TX_QUEUE,
    PARTITION_CAP, VL_ARB_CAP,
};
pub use config::{ConfigError, NodeConfig, PortConfig};
pub use error::SmaError;
pub use event::{Discard, Event};
pub use hw::{Hardware, LinkRequest, NoHardware};
pub use timer::{Timer, TimerTable};

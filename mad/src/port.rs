//! [`MadPort`]: the one seam every transport implements — the simulator, the kernel user_mad
//! device, ibsim's socket protocol and the VFIO driver alike.
//!
//! A port moves one 256-byte MAD at a time together with its addressing metadata. It never
//! blocks inside `send`: a full queue is reported as [`PortError::WouldBlock`] (back-pressure),
//! never a panic or a silent drop.

use crate::types::{Lid, PortNum};

/// Addressing metadata that travels with a MAD (the parts of LRH/BTH/DETH a MAD user sees).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MadMeta {
    /// The local port the MAD leaves on or arrived at.
    pub port: PortNum,
    /// Source LID (permissive for directed-route SMPs sent from the SM).
    pub slid: Lid,
    /// Destination LID (permissive for directed-route SMPs).
    pub dlid: Lid,
    /// Remote QP number (0 for SMPs).
    pub qp: u32,
    /// Service level.
    pub sl: u8,
}

/// What can go wrong moving a MAD.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// The send queue is full; try again after receiving or waiting.
    #[error("transport send queue full")]
    WouldBlock,
    /// The buffer is not a whole MAD of an accepted size.
    #[error("MAD length {len} not accepted (expected {expected})")]
    BadLength {
        /// The length given.
        len: usize,
        /// The length the transport needs.
        expected: usize,
    },
    /// The transport is closed (peer gone, device removed).
    #[error("transport closed")]
    Closed,
    /// An operating-system or transport-level error, described.
    #[error("transport error: {0}")]
    Other(String),
}

/// A transport that sends and receives MADs.
pub trait MadPort {
    /// Queues one MAD for sending. Never blocks; [`PortError::WouldBlock`] when full.
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError>;
    /// Takes one received MAD into `buf`, returning its metadata and length, or `Ok(None)` if
    /// none is waiting.
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError>;
}

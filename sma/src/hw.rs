//! [`Hardware`]: where accepted Sets reach the device.
//!
//! The agent keeps the authoritative copy of every table; the hardware hook is told after a Set
//! has been validated and applied, so a simulator can model its data plane and a real device can
//! program registers. Every method has a no-op default; [`NoHardware`] implements none.

use ibmad::attr::{GuidInfo, MftBlock, PKeyTable, PortInfo, SlToVl, SwitchInfo, VlArbTable};
use ibmad::PortNum;

/// A request to the physical link of a port, made by an SM through PortInfo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkRequest {
    /// PortState := Down: take the link down; it retrains by itself (the carrier decides if and
    /// when it comes back with [`crate::LinkEvent::Up`]). The agent has set PortState Down but
    /// keeps PortPhysicalState LinkUp (so the GetResp can leave) until the carrier reports
    /// [`crate::LinkEvent::Down`].
    Down,
    /// PortPhysicalState := Disabled: take the link down and keep it down.
    Disable,
    /// PortPhysicalState := Polling: (re-)enable the port and start link training.
    Poll,
}

/// Device hooks called after a validated Set has been applied. All default to no-ops.
#[allow(unused_variables)]
pub trait Hardware {
    /// PortInfo of `port` after a Set (the stored value; LocalPortNum = `port`).
    fn port_info_written(&mut self, port: PortNum, pi: &PortInfo) {}
    /// A physical link request for `port` (never port 0 of a switch).
    fn link_request(&mut self, port: PortNum, req: LinkRequest) {}
    /// SwitchInfo after a Set.
    fn switch_info_written(&mut self, si: &SwitchInfo) {}
    /// LinearForwardingTable block `block` (LIDs `block*64..`) written.
    fn lft_block_written(&mut self, block: u16, ports: &[u8; 64]) {}
    /// MulticastForwardingTable block written (`position` = group of 16 ports).
    fn mft_block_written(&mut self, block: u16, position: u8, masks: &MftBlock) {}
    /// SLtoVL table for (`in_port`, `out_port`) written; CAs pass their port twice.
    fn sl2vl_written(&mut self, in_port: PortNum, out_port: PortNum, table: &SlToVl) {}
    /// VLArbitration block (1..=4) of `port` written.
    fn vl_arb_written(&mut self, port: PortNum, block: u8, table: &VlArbTable) {}
    /// P_Key block of `port` written.
    fn pkeys_written(&mut self, port: PortNum, block: u16, table: &PKeyTable) {}
    /// GUIDInfo block of `port` written.
    fn guid_info_written(&mut self, port: PortNum, block: u16, table: &GuidInfo) {}
}

/// No device behind the agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoHardware;

impl Hardware for NoHardware {}

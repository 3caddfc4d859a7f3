//! Multicast data packets (DLID 0xC000..=0xFFFE) switched by the MulticastForwardingTables the
//! SM programmed into the agents (IBA vol1 §18.2.4.3.3): the data plane, modelled without time.
//!
//! [`Fabric::send_multicast`] injects one packet at an end port and follows every copy: a
//! switch that receives it on port *i* sends a copy out of every port in its MFT entry for the
//! DLID except *i* (a port outside the entry gets none; no entry: the packet is dropped); a
//! copy leaves only through an Active port whose link is up and whose peer port is Active
//! (data packets need Active, unlike SMPs); a copy reaching a CA port, or a switch's port 0
//! named in the mask, is received there. Nothing is lost or delayed (faults apply to MADs
//! only) and the result is independent of the order copies are followed in.
//!
//! The walk is bounded: a switch handling more than [`STORM_LIMIT`] copies of the one
//! packet means the MFTs loop, and [`McastDelivery::storm`] says so instead of running
//! forever — a correct spanning tree hands each switch exactly one copy.

use std::collections::VecDeque;

use ibmad::{Lid, PortNum};

use super::{Fabric, SimError};
use crate::topo::{NodeId, PortRef};

/// Copies of one packet a single switch may handle before the walk calls it a storm.
pub const STORM_LIMIT: usize = 64;

/// What became of one multicast packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McastDelivery {
    /// Every end port that received a copy, once per copy (a duplicate appears twice).
    pub received: Vec<PortRef>,
    /// Copies handled by switches (one per switch on a loop-free tree).
    pub switch_copies: usize,
    /// Copies that arrived at a switch with no MFT entry for the DLID (dropped).
    pub no_entry: usize,
    /// Copies not sent because the egress or peer port was not Active or the link was down.
    pub blocked: usize,
    /// The MFTs loop: a switch handled more than [`STORM_LIMIT`] copies and the walk stopped.
    pub storm: bool,
}

impl Fabric {
    /// Sends one multicast data packet with DLID `mlid` from `port` of `node` (a CA port, or
    /// port 0 of a switch) and follows it through the switches' MFTs; see the module docs.
    pub fn send_multicast(
        &self,
        node: NodeId,
        port: PortNum,
        mlid: Lid,
    ) -> Result<McastDelivery, SimError> {
        let n = self.check_node(node)?;
        let agent = &self.agents[n as usize];
        let mut out = McastDelivery::default();
        if !mlid.is_multicast() {
            return Ok(out);
        }
        let mut queue: VecDeque<(NodeId, PortNum)> = VecDeque::new();
        if agent.is_switch() {
            if port.0 != 0 {
                return Err(SimError::NoSuchPort { node, port });
            }
            queue.push_back((node, PortNum(0)));
        } else {
            if port.0 == 0 || port.0 > agent.num_ports() {
                return Err(SimError::NoSuchPort { node, port });
            }
            self.cross(node, port, &mut queue, &mut out);
        }
        let mut handled = vec![0usize; self.agents.len()];
        while let Some((sw, in_port)) = queue.pop_front() {
            let i = sw.index();
            handled[i] += 1;
            if handled[i] > STORM_LIMIT {
                out.storm = true;
                break;
            }
            out.switch_copies += 1;
            let masks = self.agents[i].mft_masks(mlid);
            if masks.is_empty() {
                out.no_entry += 1;
                continue;
            }
            let np = self.agents[i].num_ports();
            for (pos, mask) in masks {
                for bit in 0..16u16 {
                    if mask & (1 << bit) == 0 {
                        continue;
                    }
                    let p = u16::from(pos) * 16 + bit;
                    let Ok(p) = u8::try_from(p) else { continue };
                    if p > np || p == in_port.0 {
                        continue;
                    }
                    if p == 0 {
                        out.received.push(PortRef {
                            node: sw,
                            port: PortNum(0),
                        });
                    } else {
                        self.cross(sw, PortNum(p), &mut queue, &mut out);
                    }
                }
            }
        }
        Ok(out)
    }

    /// One copy leaves `node`/`port`: received by a CA, queued at a switch, or blocked.
    fn cross(
        &self,
        node: NodeId,
        port: PortNum,
        queue: &mut VecDeque<(NodeId, PortNum)>,
        out: &mut McastDelivery,
    ) {
        let Some(peer) = self.peer(node, port) else {
            out.blocked += 1;
            return;
        };
        if !self.is_link_up(node, port)
            || !self.port_active(node.0, port.0)
            || !self.port_active(peer.node.0, peer.port.0)
        {
            out.blocked += 1;
            return;
        }
        if self.agents[peer.node.index()].is_switch() {
            queue.push_back((peer.node, peer.port));
        } else {
            out.received.push(peer);
        }
    }
}

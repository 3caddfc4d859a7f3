//! MFT programming by diff (STYLE P7): the SM keeps, per switch NodeGUID and across sweeps,
//! the MulticastForwardingTable blocks each switch acknowledged, and sends only the
//! (block, position) pairs whose desired masks differ.
//!
//! [`MftProgrammer::plan`] sends a Set for
//! - every block known to hold other masks than the desired ones (entries of groups that
//!   moved or went away are cleared this way);
//! - every block whose content is unknown (a fresh SM, a switch reset) from block 0 up to the
//!   highest block the switch forwards — exactly what OpenSM sends on every pass. Reading such
//!   a block first would cost the same SMP as writing it, so it is written; unknown blocks
//!   above the switch's highest are left alone, as OpenSM leaves them.
//!
//! A Set whose answer never comes leaves its block unknown: the next pass sends it again.
//! Sends are block-major across switches (block 0 position 0.. of every switch, then block 1),
//! so the transaction window keeps every switch busy (OpenSM stripes the same way, but resends
//! every block of every switch on every pass).

use std::collections::HashMap;

use ibmad::attr::MftBlock;
use ibmad::{Guid, SmpAttrId};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::{positions, Mfts};
use crate::subnet::{NodeId, Subnet};
use crate::txn::{Purpose, Request};

/// What one switch is known to hold: (block, position) → masks.
#[derive(Clone, Debug, Default)]
pub struct KnownMft {
    blocks: HashMap<(u16, u8), [u16; 32]>,
}

impl KnownMft {
    /// The acknowledged masks of (block, position), if known.
    #[must_use]
    pub fn block(&self, block: u16, position: u8) -> Option<&[u16; 32]> {
        self.blocks.get(&(block, position))
    }

    /// The highest block known to hold an entry.
    fn max_used_block(&self) -> Option<u16> {
        self.blocks
            .iter()
            .filter(|(_, m)| m.iter().any(|&x| x != 0))
            .map(|(&(b, _), _)| b)
            .max()
    }
}

/// Counters of the multicast passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct McastStats {
    /// Multicast passes run (heavy sweeps and group changes).
    pub passes: u64,
    /// MFT Sets sent by the last pass.
    pub last_sets: usize,
    /// MFT Sets sent in total.
    pub sets: u64,
}

/// Known MFT state per switch NodeGUID, and the diff against desired tables.
#[derive(Debug, Default)]
pub struct MftProgrammer {
    known: HashMap<Guid, KnownMft>,
    stats: McastStats,
}

impl MftProgrammer {
    /// Counters.
    #[must_use]
    pub fn stats(&self) -> McastStats {
        self.stats
    }

    /// What switch `guid` is known to hold.
    #[must_use]
    pub fn known(&self, guid: Guid) -> Option<&KnownMft> {
        self.known.get(&guid)
    }

    /// Forgets what switch `guid` holds (it was reset).
    pub fn forget(&mut self, guid: Guid) {
        self.known.remove(&guid);
    }

    /// Starts a pass's counters.
    pub(crate) fn begin_pass(&mut self) {
        self.stats.passes += 1;
        self.stats.last_sets = 0;
    }

    /// The MFT Sets of one pass (see the module docs), block-major across switches.
    pub(crate) fn plan(&mut self, s: &Subnet, want: &Mfts) -> Vec<Request> {
        let mut reqs = Vec::new();
        // Per switch: the highest block to send (known blocks with entries count: groups
        // that went away must be cleared).
        let mut tops: Vec<(NodeId, u16, u16)> = Vec::new();
        for id in s.switches() {
            let node = s.node(id);
            let cap = node.switch_info.map_or(0, |si| si.multicast_fdb_cap.get());
            if cap == 0 {
                continue;
            }
            let cap_blocks = cap.div_ceil(super::MFT_BLOCK_SIZE);
            let wanted = want
                .table(id)
                .and_then(|t| t.keys().next_back())
                .map(|l| (l.0 - 0xC000) / super::MFT_BLOCK_SIZE);
            let known = self
                .known
                .get(&node.guid)
                .and_then(KnownMft::max_used_block);
            if let Some(top) = wanted.max(known) {
                tops.push((id, top.min(cap_blocks - 1), wanted.unwrap_or(0)));
            }
        }
        let Some(max_block) = tops.iter().map(|t| t.1).max() else {
            return reqs;
        };
        for b in 0..=max_block {
            for &(id, top, wanted_top) in &tops {
                if b > top {
                    continue;
                }
                let node = s.node(id);
                let known = self.known.get(&node.guid);
                for pos in 0..positions(node.num_ports) {
                    let desired = want.block(id, b, pos);
                    let send = match known.and_then(|k| k.block(b, pos)) {
                        Some(have) => *have != desired,
                        None => b <= wanted_top && want.table(id).is_some_and(|t| !t.is_empty()),
                    };
                    if send {
                        reqs.push(set_req(node.dr_path, id, b, pos, &desired));
                    }
                }
            }
        }
        self.stats.last_sets += reqs.len();
        self.stats.sets += reqs.len() as u64;
        reqs
    }

    /// A Set of (block, position) on switch `id` was answered with `data`.
    pub(crate) fn on_ack(&mut self, s: &Subnet, id: NodeId, block: u16, pos: u8, data: &[u8]) {
        let Ok((raw, _)) = MftBlock::ref_from_prefix(data) else {
            return;
        };
        let mut masks = [0u16; 32];
        for (m, r) in masks.iter_mut().zip(raw.masks.iter()) {
            *m = r.get();
        }
        let guid = s.node(id).guid;
        self.known
            .entry(guid)
            .or_default()
            .blocks
            .insert((block, pos), masks);
    }
}

fn set_req(path: ibmad::DrPath, id: NodeId, b: u16, pos: u8, masks: &[u16; 32]) -> Request {
    let mut raw = MftBlock::new_zeroed();
    for (r, &m) in raw.masks.iter_mut().zip(masks.iter()) {
        r.set(m);
    }
    let mut data = [0u8; 64];
    data.copy_from_slice(raw.as_bytes());
    Request::set(
        path,
        SmpAttrId::MULTICAST_FT,
        u32::from(b) | (u32::from(pos) << 28),
        data,
        Purpose::SetMft(id, b, pos),
    )
}

//! MFT programming by diff (STYLE P7): the SM keeps, per switch NodeGUID and across sweeps,
//! the MulticastForwardingTable blocks each switch acknowledged, and sends only the
//! (block, position) pairs whose desired masks differ.
//!
//! A pass has two rounds:
//! 1. [`MftProgrammer::plan`] with `first_round`: a Set for every block known to differ, and
//!    for every block whose content is unknown and whose desired masks are not all zero (a Get
//!    would cost the same SMP); a **Get** for an unknown block that should be empty, within
//!    blocks `0..=max_block` — a switch taken over from another SM may hold stale entries
//!    there;
//! 2. once those are answered, [`MftProgrammer::plan`] again without `first_round`: Sets for
//!    what the Gets found stale. A block whose Set or Get failed stays unknown and is dealt
//!    with at the next pass.
//!
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
}

/// Counters of the multicast passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct McastStats {
    /// Multicast passes run (heavy sweeps and group changes).
    pub passes: u64,
    /// MFT Sets sent by the last pass.
    pub last_sets: usize,
    /// MFT Gets sent by the last pass.
    pub last_gets: usize,
    /// MFT Sets sent in total.
    pub sets: u64,
    /// MFT Gets sent in total.
    pub gets: u64,
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
        self.stats.last_gets = 0;
    }

    /// The MFT requests of one round (see the module docs), block-major across switches.
    pub(crate) fn plan(&mut self, s: &Subnet, want: &Mfts, first_round: bool) -> Vec<Request> {
        let mut reqs = Vec::new();
        // Blocks still holding entries of groups now gone must be cleared too.
        let Some(max_block) = want.max_block().max(self.max_known_block()) else {
            return reqs;
        };
        let switches: Vec<NodeId> = s
            .switches()
            .filter(|&id| {
                s.node(id)
                    .switch_info
                    .is_some_and(|si| si.multicast_fdb_cap.get() > 0)
            })
            .collect();
        for b in 0..=max_block {
            for &id in &switches {
                let node = s.node(id);
                let cap_blocks = node.switch_info.map_or(0, |si| {
                    si.multicast_fdb_cap.get().div_ceil(super::MFT_BLOCK_SIZE)
                });
                if b >= cap_blocks {
                    continue;
                }
                let known = self.known.get(&node.guid);
                for pos in 0..positions(node.num_ports) {
                    let desired = want.block(id, b, pos);
                    let attr_mod = u32::from(b) | (u32::from(pos) << 28);
                    match known.and_then(|k| k.block(b, pos)) {
                        Some(have) if *have == desired => {}
                        Some(_) => reqs.push(set_req(node.dr_path, id, b, pos, &desired)),
                        None if !first_round => {}
                        None if desired.iter().any(|&m| m != 0) => {
                            reqs.push(set_req(node.dr_path, id, b, pos, &desired));
                        }
                        None => reqs.push(Request::get(
                            node.dr_path,
                            SmpAttrId::MULTICAST_FT,
                            attr_mod,
                            Purpose::GetMft(id, b, pos),
                        )),
                    }
                }
            }
        }
        for r in &reqs {
            if r.method == ibmad::Method::SET {
                self.stats.last_sets += 1;
                self.stats.sets += 1;
            } else {
                self.stats.last_gets += 1;
                self.stats.gets += 1;
            }
        }
        reqs
    }

    fn max_known_block(&self) -> Option<u16> {
        self.known
            .values()
            .flat_map(|k| {
                k.blocks
                    .iter()
                    .filter(|(_, m)| m.iter().any(|&x| x != 0))
                    .map(|(&(b, _), _)| b)
            })
            .max()
    }

    /// A Set or Get of (block, position) on switch `id` was answered with `data`.
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

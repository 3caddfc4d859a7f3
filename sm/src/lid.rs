//! LID assignment (IBA vol1 §4.1.3, §14.2.5.6 LID/LMC) and the OpenSM `guid2lid` file.
//!
//! # What gets LIDs
//! Every end port from [`Subnet::end_ports`] gets one range of `2^LMC` LIDs whose base is aligned
//! to the range size, inside the unicast range 0x0001–0xBFFF. A switch gets one range on port 0;
//! under LMC > 0 that range is a **single LID**, OpenSM's rule for switches whose port 0 is not
//! "enhanced port 0 with LMC" (`osm_switch_sp0_is_lmc_capable`): with the non-default
//! [`LidConfig::lmc_esp0`], a switch whose SwitchInfo says EnhancedPort0 gets `2^LMC` LIDs
//! like a CA port.
//!
//! # Order and rules (OpenSM `osm_lid_mgr.c`, `lid_mgr_get_port_lid`)
//! Ports are processed SM port first ([`Subnet::sm_port`]), then in OpenSM's `port_guid_tbl`
//! order: ascending by the port GUID **as stored in network byte order and compared as a host
//! `u64`** on a little-endian machine, i.e. ascending `guid.swap_bytes()`. For each port:
//! 1. a valid entry of the persisted [`Guid2Lid`] is used;
//! 2. else the LID the port already carries (PortInfo.LID) is kept if it is a unicast LID,
//!    aligned, and its whole range is free;
//! 3. else the port gets a new range from the free ranges, first fit, with OpenSM's range
//!    consumption (a misaligned range start is rounded up with `(lid + n) & !(n - 1)` and the
//!    skipped LIDs are not reused in this pass — this is why LMC=1 fabrics show holes).
//!
//! **Conflict resolution** (documented rule): persisted entries are validated in file order and
//! the first entry claiming a LID wins (later overlapping entries are dropped); then ports are
//! visited in the order above and the first port claiming a LID by rule 2 keeps it, later ports
//! with the same LID get new ranges (counted in [`LidReport::conflicts`]). Persisted entries of
//! ports that are absent now stay reserved and stay in the returned [`Guid2Lid`], as in OpenSM.
//! This is implemented as two passes (keep, then allocate) rather than OpenSM's single pass with
//! precomputed free ranges; the results are the same except in contrived cases where OpenSM's
//! free-range list was computed from a LID table that a later duplicate overwrote.
//!
//! `reassign_lids` ignores the persisted map and the ports' current LIDs (OpenSM `-r`, meant for
//! the first master sweep only; the caller decides when).

use std::collections::HashMap;
use std::fmt;
use std::fmt::Write as _;

use ibmad::{Guid, Lid, PortNum};
use thiserror::Error;

use crate::subnet::{NodeId, Subnet};

/// The persistent port-GUID → LID-range map, in OpenSM's `guid2lid` format.
///
/// Entries keep their insertion order; [`Guid2Lid::to_text`] reproduces the order in which
/// OpenSM's `st` hash table writes them, so a file written after the same sequence of
/// insertions is byte-identical.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guid2Lid {
    entries: Vec<(Guid, Lid, Lid)>,
    index: HashMap<Guid, usize>,
}

/// A problem found while parsing a `guid2lid` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guid2LidWarning {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub problem: Guid2LidProblem,
}

/// The kinds of `guid2lid` problems.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Guid2LidProblem {
    /// The line is not `GUID LID LID`; the whole file was discarded.
    Syntax(String),
    /// The same GUID appeared again; the later entry was ignored (OpenSM ERR 6106).
    DuplicateGuid(Guid),
    /// The range is not a valid unicast range (LID 0, base > last, above 0xBFFF, or GUID 0);
    /// the entry was dropped (OpenSM ERR 0312).
    IllegalRange {
        /// The GUID.
        guid: Guid,
        /// Base LID.
        base: u32,
        /// Last LID.
        last: u32,
    },
}

impl fmt::Display for Guid2LidWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            Guid2LidProblem::Syntax(s) => write!(
                f,
                "guid2lid line {}: cannot parse {s:?}; discarding the whole file",
                self.line
            ),
            Guid2LidProblem::DuplicateGuid(g) => {
                write!(f, "guid2lid line {}: duplicate key {g}, ignored", self.line)
            }
            Guid2LidProblem::IllegalRange { guid, base, last } => write!(
                f,
                "guid2lid line {}: illegal LID range [{base}:{last}] for guid {guid}, dropped",
                self.line
            ),
        }
    }
}

fn parse_num(t: &str) -> Option<u64> {
    // strtoull(.., 0): 0x → hex, leading 0 → octal, else decimal.
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

impl Guid2Lid {
    /// An empty map.
    #[must_use]
    pub fn new() -> Guid2Lid {
        Guid2Lid::default()
    }

    /// Parses OpenSM's `guid2lid` text: one `0xGUID 0xBASE 0xLAST` per line, entries separated
    /// by blank lines, `#` lines are comments.
    ///
    /// A line that does not have exactly three numbers makes the whole file unusable: the result
    /// is an **empty map** plus a [`Guid2LidProblem::Syntax`] warning, and the caller does a fresh
    /// assignment (OpenSM stops restoring at the first bad line and reports ERR 0317). Entries
    /// with an illegal range or a duplicate GUID are dropped individually with a warning, as
    /// OpenSM's `lid_mgr_validate_db` and restore do.
    #[must_use]
    pub fn parse(text: &str) -> (Guid2Lid, Vec<Guid2LidWarning>) {
        let mut map = Guid2Lid::new();
        let mut warnings = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let toks: Vec<&str> = t.split_whitespace().collect();
            let nums: Option<Vec<u64>> = if toks.len() == 3 {
                toks.iter().map(|x| parse_num(x)).collect()
            } else {
                None
            };
            let Some(nums) = nums else {
                return (
                    Guid2Lid::new(),
                    vec![Guid2LidWarning {
                        line,
                        problem: Guid2LidProblem::Syntax(raw.to_string()),
                    }],
                );
            };
            let guid = Guid(nums[0]);
            let (base, last) = (nums[1], nums[2]);
            if map.index.contains_key(&guid) {
                warnings.push(Guid2LidWarning {
                    line,
                    problem: Guid2LidProblem::DuplicateGuid(guid),
                });
                continue;
            }
            if guid.0 == 0 || base == 0 || base > last || last > u64::from(Lid::UNICAST_MAX.0) {
                warnings.push(Guid2LidWarning {
                    line,
                    problem: Guid2LidProblem::IllegalRange {
                        guid,
                        base: u32::try_from(base).unwrap_or(u32::MAX),
                        last: u32::try_from(last).unwrap_or(u32::MAX),
                    },
                });
                continue;
            }
            // Both fit in u16: checked against UNICAST_MAX above.
            map.set(guid, Lid(base as u16), Lid(last as u16));
        }
        (map, warnings)
    }

    /// The text OpenSM writes for this map: `0x%016x 0x%04x 0x%04x` then an empty line per
    /// entry, in the iteration order of OpenSM's `st` string hash table after inserting the
    /// entries in this map's order (`st.c`: hash `h = h*997 + c; h + (h >> 5)`, 11 bins
    /// initially, rehash to the next table size when entries/bins > 5, new entries at the head
    /// of their bin).
    #[must_use]
    pub fn to_text(&self) -> String {
        let keys: Vec<String> = self
            .entries
            .iter()
            .map(|(g, _, _)| format!("0x{:016x}", g.0))
            .collect();
        let order = st_iteration_order(&keys);
        let mut out = String::with_capacity(self.entries.len() * 36);
        for i in order {
            let (_, b, l) = self.entries[i];
            let _ = write!(out, "{} 0x{:04x} 0x{:04x}\n\n", keys[i], b.0, l.0);
        }
        out
    }

    /// The range stored for `guid`.
    #[must_use]
    pub fn get(&self, guid: Guid) -> Option<(Lid, Lid)> {
        self.index
            .get(&guid)
            .map(|&i| (self.entries[i].1, self.entries[i].2))
    }

    /// Stores a range: replaces an existing entry in place, or appends.
    pub fn set(&mut self, guid: Guid, base: Lid, last: Lid) {
        if let Some(&i) = self.index.get(&guid) {
            self.entries[i] = (guid, base, last);
        } else {
            self.index.insert(guid, self.entries.len());
            self.entries.push((guid, base, last));
        }
    }

    /// Removes an entry.
    pub fn remove(&mut self, guid: Guid) -> Option<(Lid, Lid)> {
        let i = self.index.remove(&guid)?;
        let (_, b, l) = self.entries.remove(i);
        for v in self.index.values_mut() {
            if *v > i {
                *v -= 1;
            }
        }
        Some((b, l))
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries `(port GUID, base LID, last LID)` in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (Guid, Lid, Lid)> + '_ {
        self.entries.iter().copied()
    }
}

/// OpenSM `st.c` default string hash.
fn st_strhash(key: &str) -> u32 {
    let mut val: i32 = 0;
    for c in key.bytes() {
        val = val.wrapping_mul(997).wrapping_add(i32::from(c as i8));
    }
    val.wrapping_add(val >> 5) as u32
}

/// OpenSM `st.c` `new_size`: the `primes` entry for the first power of two (from 8) above `size`.
fn st_new_size(size: usize) -> usize {
    const PRIMES: [usize; 22] = [
        8 + 3,
        16 + 3,
        32 + 5,
        64 + 3,
        128 + 3,
        256 + 27,
        512 + 9,
        1024 + 9,
        2048 + 5,
        4096 + 3,
        8192 + 27,
        16384 + 43,
        32768 + 3,
        65536 + 45,
        131072 + 29,
        262144 + 3,
        524288 + 21,
        1048576 + 7,
        2097152 + 17,
        4194304 + 15,
        8388608 + 9,
        16777216 + 43,
    ];
    let mut newsize = 8usize;
    for p in PRIMES {
        if newsize > size {
            return p;
        }
        newsize <<= 1;
    }
    PRIMES[PRIMES.len() - 1]
}

/// The order in which `st_foreach` visits keys inserted in the given order.
fn st_iteration_order(keys: &[String]) -> Vec<usize> {
    let mut nbins = st_new_size(0);
    let mut bins: Vec<Vec<usize>> = vec![Vec::new(); nbins]; // each bin: tail..head (push = head)
    let hashes: Vec<u32> = keys.iter().map(|k| st_strhash(k)).collect();
    for (n, &h) in hashes.iter().enumerate() {
        if n / nbins > 5 {
            let new_n = st_new_size(nbins + 1);
            let mut nb: Vec<Vec<usize>> = vec![Vec::new(); new_n];
            for bin in &bins {
                // walk from head (last pushed) to tail, pushing each to the new bin's head
                for &e in bin.iter().rev() {
                    nb[hashes[e] as usize % new_n].push(e);
                }
            }
            bins = nb;
            nbins = new_n;
        }
        bins[h as usize % nbins].push(n);
    }
    bins.iter().flat_map(|b| b.iter().rev().copied()).collect()
}

/// LID assignment settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LidConfig {
    /// LID Mask Control, 0..=7: CA ports get `2^lmc` LIDs.
    pub lmc: u8,
    /// Ignore persisted and current LIDs and assign everything fresh (OpenSM `-r`).
    pub reassign_lids: bool,
    /// OpenSM `lmc_esp0`: a switch whose port 0 is enhanced (SwitchInfo.EnhancedPort0) gets
    /// `2^lmc` LIDs too; otherwise every switch gets one.
    pub lmc_esp0: bool,
}

/// Why LID assignment failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum LidError {
    /// LMC above 7 (IBA: LMC is a 3-bit field).
    #[error("LMC {lmc} is out of range 0..=7")]
    BadLmc {
        /// The requested LMC.
        lmc: u8,
    },
    /// The fabric needs more LIDs than the unicast space 0x0001–0xBFFF holds.
    #[error(
        "the subnet needs {needed} unicast LIDs ({ca_ports} CA/router ports x {} LIDs (LMC {lmc}) + {switches} switches x 1) but the unicast LID space 0x0001-0xBFFF holds {available}",
        1u32 << (*lmc).min(7)
    )]
    SpaceExceeded {
        /// End ports of CAs and routers.
        ca_ports: usize,
        /// Switches (one LID each).
        switches: usize,
        /// The LMC.
        lmc: u8,
        /// LIDs needed at least.
        needed: usize,
        /// LIDs the unicast space holds.
        available: usize,
    },
    /// The unicast LID space 0x0001–0xBFFF has no free aligned range left (OpenSM ERR 0307).
    #[error("ran out of unicast LIDs: no free range of {needed} LIDs for port {guid}")]
    OutOfLids {
        /// The port that could not get a range.
        guid: Guid,
        /// How many LIDs it needed.
        needed: u16,
    },
}

/// Checks, before any assignment, that `ca_ports` CA/router ports with 2^`lmc` LIDs each and
/// `switches` switches (one LID each, on port 0) can fit the unicast LID space 0x0001–0xBFFF
/// at all; a fabric that cannot is refused with the numbers instead of failing port by port
/// on every sweep.
///
/// # Errors
/// [`LidError::SpaceExceeded`] with the counts; [`LidError::BadLmc`] for LMC above 7.
pub fn lid_space_check(ca_ports: usize, switches: usize, lmc: u8) -> Result<(), LidError> {
    if lmc > 7 {
        return Err(LidError::BadLmc { lmc });
    }
    let per = 1usize << lmc;
    // Aligned ranges of 2^lmc LIDs that avoid LID 0, and the LIDs in all.
    let ranges = if lmc == 0 {
        UCAST_MAX
    } else {
        (UCAST_MAX + 1) / per - 1
    };
    let needed = ca_ports.saturating_mul(per).saturating_add(switches);
    if ca_ports > ranges || needed > UCAST_MAX {
        return Err(LidError::SpaceExceeded {
            ca_ports,
            switches,
            lmc,
            needed,
            available: UCAST_MAX,
        });
    }
    Ok(())
}

/// What [`assign_lids`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LidReport {
    /// Ports whose range came from the persisted map.
    pub from_guid2lid: usize,
    /// Ports that kept the LID they already carried.
    pub kept_existing: usize,
    /// Ports that got a new range.
    pub new: usize,
    /// Ports whose current LID could not be kept because another port or entry claimed it.
    pub conflicts: usize,
    /// Persisted entries dropped as invalid for this LMC or overlapping an earlier entry.
    pub dropped_entries: usize,
    /// The highest LID given to a present port (0 if none): the LFT top.
    pub top: Lid,
    /// The map to persist now.
    pub guid2lid: Guid2Lid,
}

const UCAST_MAX: usize = Lid::UNICAST_MAX.0 as usize;

#[derive(Clone, Copy)]
enum Choice {
    Range(u16, u16),
    Pending { had_lid: bool },
}

/// Assigns LIDs to every end port of `subnet` (see the module docs for rules and order), writes
/// [`crate::Port::lid`] / [`crate::Port::lmc`], and returns counts plus the new guid2lid map.
pub fn assign_lids(
    subnet: &mut Subnet,
    cfg: &LidConfig,
    persisted: &Guid2Lid,
) -> Result<LidReport, LidError> {
    if cfg.lmc > 7 {
        return Err(LidError::BadLmc { lmc: cfg.lmc });
    }
    let lmc_n = 1u16 << cfg.lmc;
    let mut report = LidReport::default();
    // OpenSM osm_switch_sp0_is_lmc_capable: an enhanced port 0 under lmc_esp0.
    let lmc_capable = |n: NodeId| {
        let node = subnet.node(n);
        !node.is_switch()
            || (cfg.lmc_esp0
                && node
                    .switch_info
                    .as_ref()
                    .is_some_and(|si| si.enhanced_port0() != 0))
    };
    let switches = subnet.switches().filter(|&n| !lmc_capable(n)).count();
    let ca_ports = subnet.end_ports().filter(|&(n, _)| lmc_capable(n)).count();
    lid_space_check(ca_ports, switches, cfg.lmc)?;

    // Processing order: SM port first, then port_guid_tbl order.
    let mut ports: Vec<(NodeId, PortNum, Guid)> = subnet
        .end_ports()
        .filter_map(|(n, p)| subnet.port(n, p).map(|port| (n, p, port.guid)))
        .collect();
    ports.sort_by_key(|&(n, p, g)| (g.0.swap_bytes(), n, p));
    if let Some(sm) = subnet.sm_port() {
        if let Some(i) = ports.iter().position(|&(n, p, _)| (n, p) == sm) {
            let e = ports.remove(i);
            ports.insert(0, e);
        }
    }
    let num_lids = |n: NodeId| -> u16 {
        if lmc_capable(n) {
            lmc_n
        } else {
            1
        }
    };

    let mut used = vec![false; UCAST_MAX + 1];
    let mut db = Guid2Lid::new();
    if !cfg.reassign_lids {
        // lid_mgr_validate_db: alignment (for real ranges) and overlaps, first entry wins.
        for (g, b, l) in persisted.iter() {
            let (b16, l16) = (b.0, l.0);
            let ok = b16 != 0
                && b16 <= l16
                && usize::from(l16) <= UCAST_MAX
                && (b16 == l16 || b16 & !(lmc_n - 1) == b16)
                && (b16..=l16).all(|x| !used[usize::from(x)]);
            if ok {
                for x in b16..=l16.min(b16.saturating_add(lmc_n - 1)) {
                    used[usize::from(x)] = true;
                }
                db.set(g, b, l);
            } else {
                report.dropped_entries += 1;
            }
        }
        // lid_mgr_init_sweep: entries of present ports must be wide and aligned enough.
        for &(n, _, g) in &ports {
            let need = num_lids(n);
            if let Some((b, l)) = db.get(g) {
                if need != 1 && (b.0 & !(need - 1) != b.0 || l.0 - b.0 + 1 < need) {
                    db.remove(g);
                    for x in b.0..=l.0 {
                        used[usize::from(x)] = false;
                    }
                    report.dropped_entries += 1;
                }
            }
        }
    }

    // Pass 1: persisted entries and current LIDs.
    let mut choices: Vec<Choice> = Vec::with_capacity(ports.len());
    let mut seen: HashMap<Guid, usize> = HashMap::new();
    for (i, &(n, p, g)) in ports.iter().enumerate() {
        let need = num_lids(n);
        if let Some(&j) = seen.get(&g) {
            // Same port GUID seen twice (a duplicate-GUID fabric): share the first's range.
            choices.push(choices[j]);
            continue;
        }
        seen.insert(g, i);
        if cfg.reassign_lids {
            choices.push(Choice::Pending { had_lid: false });
            continue;
        }
        if let Some((b, _)) = db.get(g) {
            let last = b.0 + need - 1;
            for x in b.0..=last {
                used[usize::from(x)] = true;
            }
            report.from_guid2lid += 1;
            choices.push(Choice::Range(b.0, last));
            continue;
        }
        let cur = subnet
            .port(n, p)
            .and_then(|port| port.info)
            .map_or(0, |pi| pi.lid().0);
        if cur != 0 {
            let last = u32::from(cur) + u32::from(need) - 1;
            let aligned = cur & !(need - 1) == cur;
            if aligned
                && last <= UCAST_MAX as u32
                && (cur..=last as u16).all(|x| !used[usize::from(x)])
            {
                for x in cur..=last as u16 {
                    used[usize::from(x)] = true;
                }
                report.kept_existing += 1;
                choices.push(Choice::Range(cur, last as u16));
                continue;
            }
        }
        choices.push(Choice::Pending {
            had_lid: cur != 0 && usize::from(cur) <= UCAST_MAX,
        });
    }

    // Free ranges from what is left, then first-fit with OpenSM's consumption rule.
    let mut free: Vec<(u16, u16)> = Vec::new();
    let mut start: Option<u16> = None;
    for x in 1..=UCAST_MAX as u16 {
        match (used[usize::from(x)], start) {
            (false, None) => start = Some(x),
            (true, Some(s)) => {
                free.push((s, x - 1));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        free.push((s, UCAST_MAX as u16));
    }
    let mut first_free = 0usize;
    for (i, &(n, _, g)) in ports.iter().enumerate() {
        let Choice::Pending { had_lid } = choices[i] else {
            continue;
        };
        if let Some(&j) = seen.get(&g) {
            if j != i {
                choices[i] = choices[j];
                continue;
            }
        }
        let need = num_lids(n);
        let mut got = None;
        for r in free.iter_mut().skip(first_free) {
            let mut lid = u32::from(r.0);
            if need > 1 && lid & !(u32::from(need) - 1) != lid {
                lid = (lid + u32::from(need)) & !(u32::from(need) - 1);
            }
            let last = lid + u32::from(need) - 1;
            if last <= u32::from(r.1) {
                got = Some((lid as u16, last as u16));
                if last == u32::from(r.1) {
                    // consumed: mark empty so it is skipped
                    *r = (1, 0);
                } else {
                    r.0 = (last + 1) as u16;
                }
                break;
            }
        }
        while first_free < free.len() && free[first_free].0 > free[first_free].1 {
            first_free += 1;
        }
        let Some((b, l)) = got else {
            return Err(LidError::OutOfLids {
                guid: g,
                needed: need,
            });
        };
        if had_lid {
            report.conflicts += 1;
        }
        report.new += 1;
        choices[i] = Choice::Range(b, l);
    }

    // Write back.
    let lmcs: Vec<u8> = ports
        .iter()
        .map(|&(n, _, _)| if lmc_capable(n) { cfg.lmc } else { 0 })
        .collect();
    let mut top = 0u16;
    for (i, &(n, p, g)) in ports.iter().enumerate() {
        let Choice::Range(b, l) = choices[i] else {
            continue;
        };
        top = top.max(l);
        let lmc = lmcs[i];
        db.set(g, Lid(b), Lid(l));
        if let Some(port) = subnet.port_mut(n, p) {
            port.lid = Lid(b);
            port.lmc = lmc;
        }
    }
    report.top = Lid(top);
    report.guid2lid = db;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn st_order_matches_opensm_2sw2path() {
        // Insertion order = OpenSM's processing order on net.2sw2path; file order from
        // testdata/opensm/2sw2path/guid2lid.
        let mut m = Guid2Lid::new();
        m.set(Guid(0x200000), Lid(1), Lid(1));
        m.set(Guid(0x100001), Lid(2), Lid(2));
        m.set(Guid(0x200001), Lid(3), Lid(3));
        m.set(Guid(0x100004), Lid(4), Lid(4));
        assert_eq!(
            m.to_text(),
            "0x0000000000100004 0x0004 0x0004\n\n0x0000000000200000 0x0001 0x0001\n\n\
             0x0000000000200001 0x0003 0x0003\n\n0x0000000000100001 0x0002 0x0002\n\n"
        );
    }

    #[test]
    fn syntax_error_discards_file() {
        let (m, w) = Guid2Lid::parse("0x1 0x1 0x1\n\n0x2 0x2\n");
        assert!(m.is_empty());
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].line, 3);
        assert!(matches!(w[0].problem, Guid2LidProblem::Syntax(_)));
    }

    #[test]
    fn illegal_and_duplicate_entries_are_dropped() {
        let (m, w) =
            Guid2Lid::parse("0x1 0x1 0x1\n\n0x1 0x5 0x5\n\n0x2 0x0 0x0\n\n0x3 0xc000 0xc000\n");
        assert_eq!(m.len(), 1);
        assert_eq!(m.get(Guid(1)), Some((Lid(1), Lid(1))));
        assert_eq!(w.len(), 3);
        assert_eq!(w[0].line, 3);
    }

    #[test]
    fn remove_keeps_index_consistent() {
        let mut m = Guid2Lid::new();
        for i in 1..5u16 {
            m.set(Guid(u64::from(i)), Lid(i), Lid(i));
        }
        assert_eq!(m.remove(Guid(2)), Some((Lid(2), Lid(2))));
        assert_eq!(m.get(Guid(4)), Some((Lid(4), Lid(4))));
        m.set(Guid(3), Lid(9), Lid(9));
        assert_eq!(m.iter().map(|e| e.0 .0).collect::<Vec<_>>(), vec![1, 3, 4]);
    }
}

//! LFT dumps as input: a parser for the three text formats switch tables are dumped in, and the
//! `file` routing engine (OpenSM `-R file` with `lfts_file`), which loads the tables instead of
//! computing them. The text is handed in (the front end reads the file).
//!
//! Accepted formats, mixed freely in one text:
//! - `opensm-lfts.dump` (OpenSM `dump_ucast_lfts`): a header
//!   `Unicast lids [0-14] of switch Lid 3 guid 0x… ('desc'):`, entries
//!   `0x0001 001 # Channel Adapter portguid 0x…: 'desc'`, a trailer `14 lids dumped`;
//! - `dump_fts` (infiniband-diags): header `Unicast lids [0x0-0xe] of switch DR path slid 0;
//!   dlid 0; 0,1 guid 0x… (desc):`, two column-title lines, entries
//!   `0x0002 001 : (Channel Adapter portguid 0x…: 'H11')`, trailer `13 valid lids dumped`;
//! - `ibroute` (one switch): as dump_fts with `of switch Lid 2 guid 0x… (desc):`.
//!
//! The destination text of an entry, when it names a `portguid`, records which port owned the
//! LID when the dump was taken: [`LftDump::apply_lids`] gives a topology those LIDs, so tables
//! dumped by another SM (OpenSM) can be judged against the same topology.

use ibmad::{Guid, Lid, PortNum};
use thiserror::Error;

use super::{EngineOptions, Lfts, RouteError, Routes, RoutingEngine};
use crate::subnet::{NodeId, Subnet};

/// A problem in an LFT dump, or between a dump and a subnet.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub struct DumpError {
    /// 1-based line (0 when the problem is not tied to a line).
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for DumpError {
    /// "line N: what", or the problem alone when no line is at fault (a switch the dump
    /// lacks, a dump with no table at all).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            f.write_str(&self.what)
        } else {
            write!(f, "line {}: {}", self.line, self.what)
        }
    }
}

/// One LFT entry of a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpEntry {
    /// Destination LID.
    pub lid: Lid,
    /// Egress port.
    pub port: PortNum,
    /// The port GUID that owned the LID, if the dump says.
    pub owner: Option<Guid>,
    /// 1-based line.
    pub line: usize,
}

/// One switch's table in a dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpSwitch {
    /// NodeGUID from the header.
    pub guid: Guid,
    /// The switch's LID if the header gives it (`switch Lid N`).
    pub lid: Option<Lid>,
    /// Description from the header.
    pub desc: String,
    /// 1-based line of the header.
    pub line: usize,
    /// The last LID of the header's range (`[0x0-0x80]`, `[0-128]`): the switch's
    /// LinearFDBTop where the tool dumped the whole table.
    pub top: Option<Lid>,
    /// Entries in file order.
    pub entries: Vec<DumpEntry>,
}

/// A parsed dump.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LftDump {
    /// Switch tables in file order.
    pub switches: Vec<DumpSwitch>,
}

fn hex_after(s: &str, tag: &str) -> Option<u64> {
    let i = s.find(tag)? + tag.len();
    let h: String = s[i..].chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&h, 16).ok()
}

/// Parses a dump (see the module docs for the formats).
pub fn parse_lft_dump(text: &str) -> Result<LftDump, DumpError> {
    let mut out = LftDump::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let s = raw.trim();
        let err = |what: &str| DumpError {
            line,
            what: format!("{what}: '{s}'"),
        };
        if s.is_empty()
            || s.ends_with("lids dumped")
            || s.starts_with("Lid ")
            || s.starts_with("Port ")
            || s == "Port"
        {
            continue;
        }
        if s.starts_with("Unicast lids [") {
            let guid = hex_after(s, " guid 0x").ok_or_else(|| err("header without 'guid 0x…'"))?;
            let lid = s
                .find("switch Lid ")
                .map(|k| &s[k + "switch Lid ".len()..])
                .and_then(|r| r.split_whitespace().next())
                .map(|t| t.parse::<u16>().map_err(|_| err("bad switch LID")))
                .transpose()?
                .map(Lid);
            let desc = s
                .find(" guid 0x")
                .and_then(|k| s[k..].find('(').map(|j| &s[k + j + 1..]))
                .map(|r| {
                    r.trim_end_matches(':')
                        .trim_end_matches(')')
                        .trim_matches('\'')
                        .to_string()
                })
                .unwrap_or_default();
            let top = s
                .strip_prefix("Unicast lids [")
                .and_then(|r| r.split_once(']'))
                .and_then(|(range, _)| range.split_once('-'))
                .and_then(|(_, end)| crate::dump::parse_lid(end.trim()))
                .map(Lid);
            out.switches.push(DumpSwitch {
                guid: Guid(guid),
                lid,
                desc,
                line,
                top,
                entries: Vec::new(),
            });
            continue;
        }
        if let Some(h) = s.strip_prefix("0x") {
            let mut it = h.split_whitespace();
            let lid_s = it.next().unwrap_or("");
            let lid = u16::from_str_radix(lid_s, 16).map_err(|_| err("bad LID"))?;
            if lid > Lid::UNICAST_MAX.0 {
                return Err(err("LID beyond the unicast range"));
            }
            let port_s = it.next().ok_or_else(|| err("entry without a port"))?;
            let port: u8 = port_s
                .parse()
                .map_err(|_| err("port is not a number 0..=254"))?;
            if port == 0xFF {
                continue; // an explicit "no path"
            }
            let owner = hex_after(s, "portguid 0x").map(Guid);
            let sw = out
                .switches
                .last_mut()
                .ok_or_else(|| err("entry before any 'Unicast lids' header"))?;
            sw.entries.push(DumpEntry {
                lid: Lid(lid),
                port: PortNum(port),
                owner,
                line,
            });
            continue;
        }
        return Err(err("not an LFT dump line"));
    }
    if out.switches.is_empty() {
        return Err(DumpError {
            line: 0,
            what: "no 'Unicast lids' table in the text".to_string(),
        });
    }
    Ok(out)
}

impl LftDump {
    /// Top LIDs that are a multiple of 64 and that no table of the dump has an entry for,
    /// ascending. LinearFDBTop (IBA vol1 §14.2.5.4) is the highest valid LID, so the table
    /// has blocks 0 ..= top / 64; `dump_fts` and `ibroute` (infiniband-diags) read blocks only below
    /// `ALIGN(top, 64) / 64`, so a top LID alone in its block is never read: every route to
    /// it looks missing though the switches may forward it.
    #[must_use]
    pub fn unread_top_lids(&self) -> Vec<Lid> {
        let mut tops: Vec<Lid> = self
            .switches
            .iter()
            .filter_map(|sw| sw.top)
            .filter(|t| t.0 > 0 && t.0 % 64 == 0)
            .collect();
        tops.sort_unstable();
        tops.dedup();
        tops.retain(|&t| {
            self.switches
                .iter()
                .all(|sw| sw.entries.iter().all(|e| e.lid != t))
        });
        tops
    }

    /// Highest LID in any entry.
    #[must_use]
    pub fn top(&self) -> Lid {
        self.switches
            .iter()
            .flat_map(|s| s.entries.iter().map(|e| e.lid))
            .max()
            .unwrap_or(Lid(0))
    }

    /// The tables as [`Lfts`] for `subnet`: switches matched by NodeGUID. Every switch of the
    /// subnet must have a table and every entry must name a port the switch has.
    pub fn to_lfts(&self, subnet: &Subnet) -> Result<Lfts, DumpError> {
        let top = self.top().max(super::max_lid(subnet));
        let mut lfts = Lfts::new(subnet, top);
        let mut seen = vec![false; subnet.nodes.len()];
        for sw in &self.switches {
            let id = subnet
                .node_by_guid(sw.guid)
                .filter(|&n| subnet.node(n).is_switch())
                .ok_or_else(|| DumpError {
                    line: sw.line,
                    what: format!("switch 0x{:016x} is not in the topology", sw.guid.0),
                })?;
            seen[id.idx()] = true;
            let np = subnet.node(id).num_ports;
            for e in &sw.entries {
                if e.port.0 > np {
                    return Err(DumpError {
                        line: e.line,
                        what: format!(
                            "port {} of switch 0x{:016x} does not exist (it has {np})",
                            e.port.0, sw.guid.0
                        ),
                    });
                }
                lfts.set(id, e.lid, Some(e.port));
            }
        }
        if let Some(missing) = subnet.switches().find(|s| !seen[s.idx()]) {
            return Err(DumpError {
                line: 0,
                what: format!(
                    "no table for switch 0x{:016x} ('{}')",
                    subnet.node(missing).guid.0,
                    subnet.node(missing).desc
                ),
            });
        }
        Ok(lfts)
    }

    /// Gives the subnet's ports the LIDs the dump records (entries naming a `portguid`; a
    /// switch's own LID also from `switch Lid N`). Consecutive LIDs of one port set its LMC.
    /// Returns the number of ports given a LID; an owner GUID that is no port of the subnet is
    /// an error.
    pub fn apply_lids(&self, subnet: &mut Subnet) -> Result<usize, DumpError> {
        let mut by_port: std::collections::HashMap<Guid, (NodeId, PortNum)> =
            std::collections::HashMap::new();
        for (n, p) in subnet.end_ports().collect::<Vec<_>>() {
            if let Some(x) = subnet.port(n, p) {
                by_port.insert(x.guid, (n, p));
            }
        }
        // owner → (min LID, max LID)
        let mut lids: std::collections::BTreeMap<(u32, u8), (u16, u16)> =
            std::collections::BTreeMap::new();
        let mut note = |np: (NodeId, PortNum), l: u16| {
            let e = lids.entry((np.0 .0, np.1 .0)).or_insert((l, l));
            e.0 = e.0.min(l);
            e.1 = e.1.max(l);
        };
        for sw in &self.switches {
            if let (Some(l), Some(id)) = (sw.lid, subnet.node_by_guid(sw.guid)) {
                note((id, PortNum(0)), l.0);
            }
            for e in &sw.entries {
                let Some(g) = e.owner else { continue };
                let np = by_port.get(&g).copied().ok_or_else(|| DumpError {
                    line: e.line,
                    what: format!(
                        "LID {} belongs to port 0x{:016x}, which is not in the topology",
                        e.lid.0, g.0
                    ),
                })?;
                note(np, e.lid.0);
            }
        }
        let mut count = 0;
        for ((n, p), (lo, hi)) in lids {
            let span = u32::from(hi - lo) + 1;
            let lmc = (0..8u8).find(|&k| 1u32 << k >= span).unwrap_or(7);
            if let Some(port) = subnet.port_mut(NodeId(n), PortNum(p)) {
                port.lid = Lid(lo);
                port.lmc = lmc;
                count += 1;
            }
        }
        Ok(count)
    }
}

/// The `file` engine: tables from [`EngineOptions::lfts_file`].
#[derive(Clone, Debug)]
pub struct FileEngine {
    opts: EngineOptions,
}

impl FileEngine {
    /// With options.
    #[must_use]
    pub fn new(opts: EngineOptions) -> FileEngine {
        FileEngine { opts }
    }

    fn load(&self, subnet: &Subnet, log: &mut Vec<String>) -> Result<Lfts, RouteError> {
        let fail = |reason: String| RouteError::Unroutable {
            engine: "file",
            reason,
        };
        let f = self
            .opts
            .lfts_file
            .as_ref()
            .ok_or_else(|| fail("no lfts_file configured".to_string()))?;
        let text = f
            .contents
            .as_ref()
            .map_err(|e| fail(format!("cannot read '{}': {e}", f.path)))?;
        let dump = parse_lft_dump(text).map_err(|e| fail(format!("'{}': {e}", f.path)))?;
        let lfts = dump
            .to_lfts(subnet)
            .map_err(|e| fail(format!("'{}': {e}", f.path)))?;
        log.push(format!(
            "do_ucast_file_load: loaded the tables of {} switches from '{}'",
            dump.switches.len(),
            f.path
        ));
        for top in dump.unread_top_lids() {
            log.push(format!(
                "do_ucast_file_load: WRN: no table in '{}' lists LID {1} (0x{1:x}), the top of \
                 its tables, so no switch will forward it: dump_fts and ibroute do not read the \
                 LFT block of a top LID that is a multiple of 64 (`ibsm dump-fts` does)",
                f.path, top.0
            ));
        }
        Ok(lfts)
    }
}

impl RoutingEngine for FileEngine {
    fn name(&self) -> &'static str {
        "file"
    }

    fn route_logged(
        &self,
        subnet: &Subnet,
        _rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError> {
        self.load(subnet, log).map(Routes::new)
    }
}

//! Text dumps in the formats of OpenSM's dump files and of `ibnetdiscover`, returned as
//! strings (the caller writes the files; this crate does no I/O).
//!
//! - [`lfts_dump`]: `opensm-lfts.dump` (OpenSM `osm_dump.c` `dump_ucast_lfts`);
//! - [`subnet_lst`]: `opensm-subnet.lst` (`dump_topology_node`);
//! - [`ibnetdiscover`]: the topology in `ibnetdiscover` format (infiniband-diags);
//! - [`sl2vl_dump`]: `opensm-sl2vl.dump` (`dump_sl2vl_tbl`), read back by [`parse_sl2vl_dump`];
//! - [`write_path_sl_dump`]: `ibsm-path-sl.dump`, the SL of every path (ours; `docs/dumps.md`),
//!   read back by [`parse_path_sl_dump`]; path SLs from `saquery -p` output:
//!   [`parse_saquery_paths`];
//! - the `guid2lid` file: [`crate::lid::Guid2Lid::to_text`].
//!
//! Node order is OpenSM's `cl_qmap` order: ascending GUID compared as the network-order bytes
//! read as a little-endian `u64` (`guid.swap_bytes()`); `sm/testdata/opensm/*` holds the files
//! stock OpenSM 3.3.23 wrote for the same fabrics, compared byte for byte in
//! `sm/tests/routing_opensm.rs`.

use std::fmt::Write as _;

use ibmad::attr::SlToVl;
use ibmad::{Lid, NodeType, PortNum, PortState};

use crate::names::NodeNames;
use crate::routing::file::DumpError;
use crate::routing::Lfts;
use crate::subnet::{Node, NodeId, Subnet};

/// `ib_get_node_type_str`.
fn node_type_str(t: NodeType) -> &'static str {
    match t {
        NodeType::CA => "Channel Adapter",
        NodeType::SWITCH => "Switch",
        NodeType::ROUTER => "Router",
        _ => "UNKNOWN",
    }
}

/// Map LID → (node, port) for every end port's LID range.
fn lid_owners(subnet: &Subnet, top: Lid) -> Vec<Option<(NodeId, PortNum)>> {
    let mut v = vec![None; usize::from(top.0) + 1];
    for (n, p) in subnet.end_ports() {
        let Some(port) = subnet.port(n, p) else {
            continue;
        };
        if port.lid == Lid::UNASSIGNED {
            continue;
        }
        let base = usize::from(port.lid.0);
        for l in base..base + (1usize << port.lmc.min(7)) {
            if let Some(e) = v.get_mut(l) {
                *e = Some((n, p));
            }
        }
    }
    v
}

fn qmap_order(subnet: &Subnet, ids: impl Iterator<Item = NodeId>) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = ids.collect();
    v.sort_by_key(|&n| subnet.node(n).guid.0.swap_bytes());
    v
}

/// `opensm-lfts.dump`: per switch, every LID whose entry is a valid port.
#[must_use]
pub fn lfts_dump(subnet: &Subnet, lfts: &Lfts) -> String {
    lfts_dump_named(subnet, lfts, &NodeNames::default())
}

/// [`lfts_dump`] with the names of a node name map in place of NodeDescriptions.
#[must_use]
pub fn lfts_dump_named(subnet: &Subnet, lfts: &Lfts, names: &NodeNames) -> String {
    let top = lfts.top();
    let owners = lid_owners(subnet, top);
    let mut out = String::new();
    let sws = lfts
        .switches()
        .iter()
        .copied()
        .filter(|s| s.idx() < subnet.nodes.len());
    for sw in qmap_order(subnet, sws) {
        let node = subnet.node(sw);
        let _ = writeln!(
            out,
            "Unicast lids [0-{}] of switch Lid {} guid 0x{:016x} ('{}'):",
            top.0,
            subnet.lid_of(sw, PortNum(0)).0,
            node.guid.0,
            names.desc(node.guid, &node.desc)
        );
        let Some(t) = lfts.table(sw) else {
            continue;
        };
        for (lid, &port) in t.iter().enumerate() {
            if port > node.num_ports {
                continue;
            }
            let _ = write!(out, "0x{lid:04x} {port:03} # ");
            match owners.get(lid).copied().flatten() {
                Some((n, p)) => {
                    let on = subnet.node(n);
                    let g = subnet.port(n, p).map_or(0, |x| x.guid.0);
                    let _ = writeln!(
                        out,
                        "{} portguid 0x{g:016x}: '{}'",
                        node_type_str(on.node_type),
                        names.desc(on.guid, &on.desc)
                    );
                }
                None => out.push_str("unknown node and type\n"),
            }
        }
        let _ = writeln!(out, "{} lids dumped", top.0);
    }
    out
}

fn type_tag(t: NodeType) -> &'static str {
    match t {
        NodeType::SWITCH => "SW",
        NodeType::CA => "CA",
        NodeType::ROUTER => "Rt",
        _ => "**",
    }
}

/// The port OpenSM takes LID and capabilities from: port 0 for a switch, else the port.
fn default_port(node: &Node, p: PortNum) -> PortNum {
    if node.is_switch() {
        PortNum(0)
    } else {
        p
    }
}

/// `opensm-subnet.lst`: one line per linked port of every node, with the neighbour.
///
/// The `-SM` tag marks ports whose LID equals the SM's LID ([`Subnet::sm_port`]) — what
/// OpenSM's `base_lid == master_sm_base_lid` test yields once PortInfo is programmed. Speeds
/// come from PortInfo (LinkSpeedActive, or LinkSpeedExtActive when the neighbour's
/// CapabilityMask has IsExtendedSpeedsSupported, as OpenSM does); Mellanox FDR10 is not known.
#[must_use]
pub fn subnet_lst(subnet: &Subnet) -> String {
    subnet_lst_named(subnet, &NodeNames::default())
}

/// [`subnet_lst`] with the names of a node name map in place of NodeDescriptions.
#[must_use]
pub fn subnet_lst_named(subnet: &Subnet, names: &NodeNames) -> String {
    let sm_lid = subnet
        .sm_port()
        .map_or(Lid::UNASSIGNED, |(n, p)| subnet.lid_of(n, p));
    let is_sm = |n: NodeId, p: PortNum| {
        let l = subnet.lid_of(n, p);
        l != Lid::UNASSIGNED && l == sm_lid
    };
    let mut out = String::new();
    for id in qmap_order(subnet, subnet.node_ids()) {
        let node = subnet.node(id);
        for c in 1..=node.num_ports {
            let cp = PortNum(c);
            let Some(port) = subnet.port(id, cp) else {
                continue;
            };
            let Some((rn, rp)) = port.remote else {
                continue;
            };
            let rnode = subnet.node(rn);
            let _ = write!(
                out,
                "{{ {}{} Ports:{:02X} SystemGUID:{:016x} NodeGUID:{:016x} PortGUID:{:016x} VenID:{:06X} DevID:{:04X} Rev:{:08X} {{{}}} LID:{:04X} PN:{:02X} }} ",
                type_tag(node.node_type),
                if is_sm(id, cp) { "-SM" } else { "" },
                node.num_ports,
                node.sys_guid.0,
                node.guid.0,
                port.guid.0,
                node.vendor_id,
                node.device_id,
                node.revision,
                names.desc(node.guid, &node.desc),
                subnet.lid_of(id, cp).0,
                c
            );
            let rport_guid = subnet.port(rn, rp).map_or(0, |x| x.guid.0);
            // OpenSM prints the neighbour's DevID with cl_ntoh32 on a 16-bit field.
            let rdev = u32::from(rnode.device_id) << 16;
            let _ = write!(
                out,
                "{{ {}{} Ports:{:02X} SystemGUID:{:016x} NodeGUID:{:016x} PortGUID:{:016x} VenID:{:08X} DevID:{:04X} Rev:{:08X} {{{}}} LID:{:04X} PN:{:02X} }} ",
                type_tag(rnode.node_type),
                if is_sm(rn, rp) { "-SM" } else { "" },
                rnode.num_ports,
                rnode.sys_guid.0,
                rnode.guid.0,
                rport_guid,
                rnode.vendor_id,
                rdev,
                rnode.revision,
                names.desc(rnode.guid, &rnode.desc),
                subnet.lid_of(rn, rp).0,
                rp.0
            );
            let info = port.info;
            // OpenSM consults the *neighbour's* default port for the capability masks.
            let rdef = subnet
                .port(rn, default_port(rnode, rp))
                .and_then(|x| x.info);
            let width = info.map_or(0, |i| i.link_width_active);
            let mut w = match width {
                1 => "1x",
                2 => "4x",
                4 => "8x",
                8 => "12x",
                _ => "??",
            };
            if width == 16 && rdef.is_some_and(|r| r.capability_mask2.get() & 0x0010 != 0) {
                w = "2x";
            }
            let mut spd = match info.map_or(0, |i| i.link_speed_active()) {
                1 => "2.5",
                2 => "5",
                4 => "10",
                _ => "??",
            };
            if rdef.is_some_and(|r| {
                r.capability_mask.get() & ibmad::attr::port_info::cap::IS_EXT_SPEEDS_SUP != 0
            }) {
                match info.map_or(0, |i| i.link_speed_ext_active()) {
                    0 => {}
                    1 => spd = "14",
                    2 => spd = "25",
                    4 => spd = "50",
                    _ => spd = "??",
                }
            }
            let log = match port.state() {
                PortState::ACTIVE => "ACT",
                PortState::ARMED => "ARM",
                PortState::INIT => "INI",
                _ => "DWN",
            };
            let _ = writeln!(out, "PHY={w} LOG={log} SPD={spd}");
        }
    }
    out
}

/// ibnetdiscover's width+speed text, e.g. `4xSDR`.
fn width_speed(subnet: &Subnet, n: NodeId, p: PortNum) -> String {
    let Some(i) = subnet.port(n, p).and_then(|x| x.info) else {
        return "??".to_string();
    };
    let w = match i.link_width_active {
        1 => "1x",
        2 => "4x",
        4 => "8x",
        8 => "12x",
        16 => "2x",
        _ => "?x",
    };
    let s = match i.link_speed_ext_active() {
        1 => "FDR",
        2 => "EDR",
        4 => "HDR",
        8 => "NDR",
        _ => match i.link_speed_active() {
            1 => "SDR",
            2 => "DDR",
            4 => "QDR",
            _ => "?",
        },
    };
    format!("{w}{s}")
}

fn node_name(node: &Node) -> String {
    let c = if node.is_switch() { 'S' } else { 'H' };
    format!("{c}-{:016x}", node.guid.0)
}

/// The topology in `ibnetdiscover` format (switches first, then CAs/routers, each in
/// discovery order). The header names the SM's node and port; there is no date (this crate
/// reads no clock) — use [`ibnetdiscover_with_header`] to supply one.
#[must_use]
pub fn ibnetdiscover(subnet: &Subnet) -> String {
    ibnetdiscover_with_header(subnet, None)
}

/// [`ibnetdiscover`] with `generated on <date>` in the header.
#[must_use]
pub fn ibnetdiscover_with_header(subnet: &Subnet, date: Option<&str>) -> String {
    ibnetdiscover_named(subnet, date, &NodeNames::default())
}

/// [`ibnetdiscover_with_header`] with the names of a node name map in the `# "…"` comments,
/// as `ibnetdiscover --node-name-map` prints them.
#[must_use]
pub fn ibnetdiscover_named(subnet: &Subnet, date: Option<&str>, names: &NodeNames) -> String {
    let mut out = String::from("#\n");
    match date {
        Some(d) => {
            let _ = writeln!(out, "# Topology file: generated on {d}");
        }
        None => out.push_str("# Topology file: generated by sm\n"),
    }
    out.push_str("#\n");
    if let Some((n, p)) = subnet.sm_port() {
        let g = subnet.port(n, p).map_or(0, |x| x.guid.0);
        let _ = writeln!(
            out,
            "# Initiated from node {:016x} port {g:016x}",
            subnet.node(n).guid.0
        );
    }
    let order: Vec<NodeId> = subnet
        .switches()
        .chain(subnet.node_ids().filter(|&n| !subnet.node(n).is_switch()))
        .collect();
    for id in order {
        let node = subnet.node(id);
        let _ = write!(
            out,
            "\nvendid=0x{:x}\ndevid=0x{:x}\nsysimgguid=0x{:x}\n",
            node.vendor_id, node.device_id, node.sys_guid.0
        );
        if node.is_switch() {
            let p0 = subnet.port(id, PortNum(0));
            let _ = write!(
                out,
                "switchguid=0x{:x}({:x})\nSwitch\t{} \"{}\"\t\t# \"{}\" base port 0 lid {} lmc {}\n",
                node.guid.0,
                p0.map_or(0, |x| x.guid.0),
                node.num_ports,
                node_name(node),
                names.desc(node.guid, &node.desc),
                p0.map_or(0, |x| x.lid.0),
                p0.map_or(0, |x| x.lmc)
            );
        } else {
            let kind = if node.node_type == NodeType::ROUTER {
                ("rtguid", "Rt")
            } else {
                ("caguid", "Ca")
            };
            let _ = write!(
                out,
                "{}=0x{:x}\n{}\t{} \"{}\"\t\t# \"{}\"\n",
                kind.0,
                node.guid.0,
                kind.1,
                node.num_ports,
                node_name(node),
                names.desc(node.guid, &node.desc)
            );
        }
        for p in 1..=node.num_ports {
            let pn = PortNum(p);
            let Some(port) = subnet.port(id, pn) else {
                continue;
            };
            let Some((rn, rp)) = port.remote else {
                continue;
            };
            let rnode = subnet.node(rn);
            let rport = subnet.port(rn, rp);
            let rguid = if rnode.is_switch() {
                String::new()
            } else {
                format!("({:x})", rport.map_or(0, |x| x.guid.0))
            };
            let rlid = subnet.lid_of(rn, rp).0;
            let ws = width_speed(subnet, id, pn);
            if node.is_switch() {
                let _ = writeln!(
                    out,
                    "[{p}]\t\"{}\"[{}]{rguid}{}\t\t# \"{}\" lid {rlid} {ws}",
                    node_name(rnode),
                    rp.0,
                    if rguid.is_empty() { "" } else { " " },
                    names.desc(rnode.guid, &rnode.desc)
                );
            } else {
                let _ = writeln!(
                    out,
                    "[{p}]({:x}) \t\"{}\"[{}]{rguid}\t\t# lid {} lmc {} \"{}\" lid {rlid} {ws}",
                    port.guid.0,
                    node_name(rnode),
                    rp.0,
                    port.lid.0,
                    port.lmc,
                    names.desc(rnode.guid, &rnode.desc)
                );
            }
        }
    }
    out
}

/// The SL-to-VL table a node holds for (input, output) — CA and router: for the port, `in` is
/// 0 — as the caller knows it; `None` prints as all VL 0, what OpenSM prints for a table it
/// never wrote.
pub type Sl2VlLookup<'a> = &'a dyn Fn(NodeId, PortNum, PortNum) -> Option<SlToVl>;

fn sl2vl_row(out: &mut String, inp: u8, outp: u8, t: Option<SlToVl>) {
    let _ = write!(out, "{inp:<3} {outp:<3} :");
    for sl in 0..16u8 {
        let v = t.and_then(|t| t.vl(sl)).unwrap_or(0);
        let _ = write!(out, " {v:<2}");
    }
    out.push('\n');
}

/// `opensm-sl2vl.dump` (OpenSM `osm_dump.c` `dump_sl2vl_tbl`): per end port in port-GUID
/// order (a switch once, under its port 0), a header `<Type> 0x<port GUID>, base LID n,
/// "<desc>"`, a column line and a rule, then `in out : vl(SL0) … vl(SL15)` rows — for a switch
/// every input 0..=NumPorts of every linked output port, for a CA or router one `0   0` row —
/// and a closing rule and a blank line.
#[must_use]
pub fn sl2vl_dump(subnet: &Subnet, tables: Sl2VlLookup<'_>) -> String {
    sl2vl_dump_named(subnet, tables, &NodeNames::default())
}

/// [`sl2vl_dump`] with the names of a node name map in the headers.
#[must_use]
pub fn sl2vl_dump_named(subnet: &Subnet, tables: Sl2VlLookup<'_>, names: &NodeNames) -> String {
    const HEADER: &str = "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15";
    const RULE: &str = "#--------------------------------------------------------";
    let mut ports: Vec<(NodeId, PortNum, u64)> = subnet
        .end_ports()
        .filter_map(|(n, p)| Some((n, p, subnet.port(n, p)?.guid.0)))
        .collect();
    ports.sort_by_key(|&(_, _, g)| g.swap_bytes());
    let mut out = String::new();
    for (n, p, guid) in ports {
        let node = subnet.node(n);
        if node.num_ports == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "{} 0x{guid:016x}, base LID {}, \"{}\"\n{HEADER}\n{RULE}",
            node_type_str(node.node_type),
            subnet.lid_of(n, p).0,
            names.desc(node.guid, &node.desc)
        );
        if node.is_switch() {
            for o in 0..=node.num_ports {
                if subnet.port(n, PortNum(o)).and_then(|x| x.remote).is_none() {
                    continue;
                }
                for i in 0..=node.num_ports {
                    sl2vl_row(&mut out, i, o, tables(n, PortNum(i), PortNum(o)));
                }
            }
        } else {
            sl2vl_row(&mut out, 0, 0, tables(n, PortNum(0), p));
        }
        let _ = writeln!(out, "{RULE}\n");
    }
    out
}

/// Reads an `opensm-sl2vl.dump` (OpenSM's or ours) into tables for the nodes of `subnet`,
/// matched by port GUID. Ports the subnet does not have are skipped and counted.
///
/// # Errors
/// A malformed header or row, with its line.
pub fn parse_sl2vl_dump(
    subnet: &Subnet,
    text: &str,
) -> Result<(crate::routing::vl::Sl2VlTables, usize), DumpError> {
    use std::collections::HashMap;
    let mut by_guid: HashMap<u64, (NodeId, PortNum)> = HashMap::new();
    for (n, p) in subnet.end_ports() {
        if let Some(port) = subnet.port(n, p) {
            by_guid.insert(port.guid.0, (n, p));
        }
    }
    let mut t = crate::routing::vl::Sl2VlTables::new(subnet);
    let mut cur: Option<(NodeId, PortNum)> = None;
    let mut unknown = 0usize;
    let mut skipping = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let s = raw.trim();
        let err = |what: &str| DumpError {
            line,
            what: format!("{what}: '{s}'"),
        };
        if s.is_empty() || s.starts_with('#') {
            continue;
        }
        if let Some(k) = s.find(" 0x") {
            if s[k..].contains(", base LID") {
                let hex = s[k + 3..]
                    .split(',')
                    .next()
                    .ok_or_else(|| err("header without a GUID"))?;
                let g = u64::from_str_radix(hex.trim(), 16).map_err(|_| err("bad GUID"))?;
                cur = by_guid.get(&g).copied();
                skipping = cur.is_none();
                if skipping {
                    unknown += 1;
                }
                continue;
            }
        }
        let Some((ports, vls)) = s.split_once(':') else {
            return Err(err("neither a header nor an 'in out : VLs' row"));
        };
        if skipping {
            continue;
        }
        let Some((n, p)) = cur else {
            return Err(err("row before any header"));
        };
        let mut it = ports.split_whitespace();
        let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
            return Err(err("row without 'in out'"));
        };
        let inp: u8 = a.parse().map_err(|_| err("bad input port"))?;
        let outp: u8 = b.parse().map_err(|_| err("bad output port"))?;
        let v: Vec<u8> = vls
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| err("bad VL"))?;
        if v.len() != 16 || v.iter().any(|&x| x > 15) {
            return Err(err("want 16 VLs of 0..=15"));
        }
        let mut tbl = SlToVl::default();
        for (sl, &x) in (0u8..).zip(&v) {
            tbl.set_vl(sl, x);
        }
        let ok = if subnet.node(n).is_switch() {
            t.set(subnet, n, PortNum(inp), PortNum(outp), tbl)
        } else {
            t.set(subnet, n, PortNum(0), p, tbl)
        };
        if !ok {
            return Err(err("port beyond the node's NumPorts"));
        }
    }
    Ok((t, unknown))
}

/// Writes `ibsm-path-sl.dump`: a comment header, then `SLID DLID SL` (decimal) for every
/// ordered pair of end-port LIDs of different ports (every LID of an LMC range), sources in
/// LID order. See `docs/dumps.md`.
///
/// # Errors
/// The writer's.
pub fn write_path_sl_dump<W: std::io::Write>(
    subnet: &Subnet,
    sls: &crate::routing::vl::PathSls,
    mut w: W,
) -> std::io::Result<()> {
    let mut lids: Vec<(u16, u16, usize)> = Vec::new(); // (first, last, owner index)
    for (k, (n, p)) in subnet.end_ports().enumerate() {
        let Some(port) = subnet.port(n, p) else {
            continue;
        };
        if port.lid == Lid::UNASSIGNED {
            continue;
        }
        let last = u32::from(port.lid.0) + (1u32 << port.lmc.min(7)) - 1;
        lids.push((
            port.lid.0,
            last.min(u32::from(Lid::UNICAST_MAX.0)) as u16,
            k,
        ));
    }
    lids.sort_unstable();
    writeln!(
        w,
        "# ibsm-path-sl.dump: SLID DLID SL (decimal), one line per ordered pair of end-port LIDs"
    )?;
    let mut line = String::with_capacity(32);
    for &(sa, sb, so) in &lids {
        for s in sa..=sb {
            for &(da, db, dn) in &lids {
                if dn == so {
                    continue;
                }
                for d in da..=db {
                    line.clear();
                    let sl = sls.get(Lid(s), Lid(d)).unwrap_or(0);
                    let _ = writeln!(line, "{s} {d} {sl}");
                    w.write_all(line.as_bytes())?;
                }
            }
        }
    }
    Ok(())
}

/// A LID written in hex (`0x80`) or decimal (`128`).
pub(crate) fn parse_lid(t: &str) -> Option<u16> {
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u16::from_str_radix(h, 16).ok(),
        None => t.parse().ok(),
    }
}

/// Reads an `ibsm-path-sl.dump` (LIDs decimal or `0x` hex; `#` comments).
///
/// # Errors
/// A line that is not `SLID DLID SL` with SL 0..=15.
pub fn parse_path_sl_dump(text: &str) -> Result<crate::verify::vl::SlMap, DumpError> {
    let mut m = crate::verify::vl::SlMap::default();
    for (i, raw) in text.lines().enumerate() {
        let s = raw.split('#').next().unwrap_or("").trim();
        if s.is_empty() {
            continue;
        }
        let mut it = s.split_whitespace();
        let parsed = (|| {
            let a = parse_lid(it.next()?)?;
            let b = parse_lid(it.next()?)?;
            let sl: u8 = it.next()?.parse().ok().filter(|&x| x <= 15)?;
            it.next().is_none().then_some((a, b, sl))
        })();
        let Some((a, b, sl)) = parsed else {
            return Err(DumpError {
                line: i + 1,
                what: format!("want 'SLID DLID SL' with SL 0..=15: '{s}'"),
            });
        };
        m.pairs.insert((Lid(a), Lid(b)), sl);
    }
    Ok(m)
}

/// Reads the path SLs out of `saquery -p` output (infiniband-diags' `PathRecord dump:` blocks
/// with `slid`, `dlid` and `sl` fields), e.g. collected by running `saquery -p SLID DLID` for
/// each pair, or `saquery -p` once where the SA transport carries multi-record answers.
///
/// # Errors
/// A record without `slid`, `dlid` or `sl`, or a value that does not parse.
pub fn parse_saquery_paths(text: &str) -> Result<crate::verify::vl::SlMap, DumpError> {
    /// A record being read: its first line, SLID, DLID, SL.
    type Rec = (usize, Option<u16>, Option<u16>, Option<u8>);
    let mut m = crate::verify::vl::SlMap::default();
    let mut rec: Option<Rec> = None;
    let flush =
        |rec: &mut Option<Rec>, m: &mut crate::verify::vl::SlMap| -> Result<(), DumpError> {
            if let Some((line, s, d, sl)) = rec.take() {
                match (s, d, sl) {
                    (Some(s), Some(d), Some(sl)) => {
                        m.pairs.insert((Lid(s), Lid(d)), sl);
                    }
                    _ => {
                        return Err(DumpError {
                            line,
                            what: "PathRecord without slid, dlid and sl".to_string(),
                        })
                    }
                }
            }
            Ok(())
        };
    for (i, raw) in text.lines().enumerate() {
        let s = raw.trim();
        if s.starts_with("PathRecord dump") {
            flush(&mut rec, &mut m)?;
            rec = Some((i + 1, None, None, None));
            continue;
        }
        let Some(r) = rec.as_mut() else { continue };
        let Some(dots) = s.find("..") else { continue };
        let key = &s[..dots];
        let val = s[dots..].trim_start_matches('.').trim();
        let bad = || DumpError {
            line: i + 1,
            what: format!("bad {key} value: '{val}'"),
        };
        match key {
            "slid" => r.1 = Some(parse_lid(val).ok_or_else(bad)?),
            "dlid" => r.2 = Some(parse_lid(val).ok_or_else(bad)?),
            "sl" => {
                let v = parse_lid(val).filter(|&x| x <= 15).ok_or_else(bad)?;
                r.3 = Some(v as u8);
            }
            _ => {}
        }
    }
    flush(&mut rec, &mut m)?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::graph::SwitchSlots;
    use crate::routing::vl::{sl2vl_modulo, PathSls};
    use crate::subnet::Node;
    use ibmad::Guid;

    /// sw (GUID 0x10, 2 ports, LID 1) with CA a (0x20, port GUID 0x21, LID 2) on port 1 and
    /// CA b (0x30, port GUID 0x31, LID 3) on port 2.
    fn fabric() -> (Subnet, NodeId, NodeId, NodeId) {
        let mut s = Subnet::new();
        let sw = s.add_active_node(Node::new(Guid(0x10), NodeType::SWITCH, 2, "sw one"));
        let a = s.add_active_node(Node::new(Guid(0x20), NodeType::CA, 1, "a HCA-1"));
        let b = s.add_active_node(Node::new(Guid(0x30), NodeType::CA, 1, "b HCA-1"));
        s.connect_active((sw, PortNum(1)), (a, PortNum(1)));
        s.connect_active((sw, PortNum(2)), (b, PortNum(1)));
        s.port_mut(sw, PortNum(0)).unwrap().lid = Lid(1);
        s.port_mut(a, PortNum(1)).unwrap().lid = Lid(2);
        s.port_mut(b, PortNum(1)).unwrap().lid = Lid(3);
        (s, sw, a, b)
    }

    #[test]
    fn sl2vl_dump_is_opensms_format_and_reads_back() {
        let (s, sw, a, b) = fabric();
        let m = sl2vl_modulo(8);
        let look = |n: NodeId, i: PortNum, o: PortNum| -> Option<SlToVl> {
            (n == sw && i.0 == 1 && o.0 == 2 || n == a).then_some(m)
        };
        let text = sl2vl_dump(&s, &look);
        // Layout of OpenSM 3.3.23's dump_sl2vl_tbl: header, columns, rule, rows, rule, blank.
        let expect_sw = "Switch 0x0000000000000010, base LID 1, \"sw one\"\n\
#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n\
#--------------------------------------------------------\n\
0   1   : 0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0 \n";
        assert!(text.starts_with(expect_sw), "{text}");
        assert!(text.contains("1   2   : 0  1  2  3  4  5  6  7  0  1  2  3  4  5  6  7 \n"));
        assert!(
            text.contains("Channel Adapter 0x0000000000000021, base LID 2, \"a HCA-1\"\n#in out")
        );
        assert!(text.contains("#--------------------------------------------------------\n\n"));
        // 2 linked outputs × 3 inputs for the switch, one row per CA.
        assert_eq!(
            text.lines()
                .filter(|l| l.contains(" : ") && !l.starts_with('#'))
                .count(),
            6 + 2
        );
        let (t, unknown) = parse_sl2vl_dump(&s, &text).unwrap();
        assert_eq!(unknown, 0);
        assert_eq!(t.get(sw, PortNum(1), PortNum(2)), Some(m));
        assert_eq!(t.get(sw, PortNum(2), PortNum(1)), Some(SlToVl::default()));
        assert_eq!(t.get(a, PortNum(0), PortNum(1)), Some(m));
        assert_eq!(t.get(b, PortNum(0), PortNum(1)), Some(SlToVl::default()));
        let bad = text.replace("1   2   : 0  1", "1   2   : 0  16");
        let e = parse_sl2vl_dump(&s, &bad).unwrap_err();
        assert!(e.what.contains("16 VLs of 0..=15"), "{e:?}");
        assert_eq!(
            bad.lines().nth(e.line - 1).map(|l| l.starts_with("1   2")),
            Some(true)
        );
    }

    #[test]
    fn path_sl_dump_round_trip() {
        let (s, sw, _, _) = fabric();
        let slots = SwitchSlots::new(&s);
        let mut sls = PathSls::per_source_switch(&s, &slots, Lid(3));
        sls.set_from_switch(sw, Lid(3), 4);
        let mut out = Vec::new();
        write_path_sl_dump(&s, &sls, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rows, ["1 2 0", "1 3 4", "2 1 0", "2 3 4", "3 1 0", "3 2 0"]);
        let m = parse_path_sl_dump(&text).unwrap();
        assert_eq!(m.pairs.len(), 6);
        assert_eq!(m.pairs[&(Lid(2), Lid(3))], 4);
        assert_eq!(parse_path_sl_dump("1 2 16\n").unwrap_err().line, 1);
        assert_eq!(
            parse_path_sl_dump("0x1 0x2 3 # hex\n").unwrap().pairs[&(Lid(1), Lid(2))],
            3
        );
    }

    #[test]
    fn saquery_path_records() {
        // The layout of infiniband-diags 44 `saquery -p` (dump_path_record).
        let text = "PathRecord dump:\n\
\t\tservice_id..............0x0000000000000000\n\
\t\tdgid....................fe80::2:c903:0:3\n\
\t\tsgid....................fe80::2:c903:0:2\n\
\t\tdlid....................3\n\
\t\tslid....................2\n\
\t\thop_flow_raw............0x0\n\
\t\ttclass..................0x0\n\
\t\tnum_path_revers.........0x80\n\
\t\tpkey....................0xFFFF\n\
\t\tqos_class...............0x0\n\
\t\tsl......................0x5\n\
\t\tmtu.....................0x84\n\
\t\trate....................0x83\n\
\t\tpkt_life................0x92\n\
\t\tpreference..............0x0\n\
\t\tresv2...................0x000000000000\n\
PathRecord dump:\n\
\t\tdlid....................2\n\
\t\tslid....................3\n\
\t\tsl......................0x0\n";
        let m = parse_saquery_paths(text).unwrap();
        assert_eq!(m.pairs[&(Lid(2), Lid(3))], 5);
        assert_eq!(m.pairs[&(Lid(3), Lid(2))], 0);
        let e =
            parse_saquery_paths("PathRecord dump:\n\t\tdlid....................2\n").unwrap_err();
        assert_eq!(e.line, 1);
    }
}

//! Text dumps in the formats of OpenSM's dump files and of `ibnetdiscover`, returned as
//! strings (the caller writes the files; this crate does no I/O).
//!
//! - [`lfts_dump`]: `opensm-lfts.dump` (OpenSM `osm_dump.c` `dump_ucast_lfts`);
//! - [`subnet_lst`]: `opensm-subnet.lst` (`dump_topology_node`);
//! - [`ibnetdiscover`]: the topology in `ibnetdiscover` format (infiniband-diags);
//! - the `guid2lid` file: [`crate::lid::Guid2Lid::to_text`].
//!
//! Node order is OpenSM's `cl_qmap` order: ascending GUID compared as the network-order bytes
//! read as a little-endian `u64` (`guid.swap_bytes()`); `sm/testdata/opensm/*` holds the files
//! stock OpenSM 3.3.23 wrote for the same fabrics, compared byte for byte in
//! `sm/tests/routing_opensm.rs`.

use std::fmt::Write as _;

use ibmad::{Lid, NodeType, PortNum, PortState};

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
            node.desc
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
                        on.desc
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
                node.desc,
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
                rnode.desc,
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
                node.desc,
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
                node.desc
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
                    rnode.desc
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
                    rnode.desc
                );
            }
        }
    }
    out
}

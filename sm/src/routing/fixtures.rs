//! Building [`Subnet`]s without discovery, for routing tests and benchmarks: a k-ary fat-tree
//! generator and a reader for `ibnetdiscover` text (the format `sm/testdata/opensm/*/net.txt`
//! holds). Ports get a PortInfo in state Active, 4x SDR, so routing sees them as linked and up.
//! LIDs are left at 0: run [`crate::lid::assign_lids`] next.

use std::collections::HashMap;

use ibmad::attr::PortInfo;
use ibmad::{DrPath, Guid, NodeType, PortNum, PortState};
use thiserror::Error;
use zerocopy::FromZeros;

use crate::subnet::{Node, NodeId, Subnet};

/// A PortInfo for a linked, Active, 4x SDR port.
#[must_use]
pub fn active_port_info() -> PortInfo {
    let mut pi = PortInfo::new_zeroed();
    pi.set_port_state(PortState::ACTIVE);
    pi.set_phys_state(ibmad::PhysState::LINK_UP);
    pi.link_width_active = 2;
    pi.set_link_speed_active(1);
    pi
}

/// A node record with the given identity (first port index is filled in by `add_node`).
#[must_use]
pub fn node(guid: u64, node_type: NodeType, num_ports: u8, desc: &str) -> Node {
    Node {
        guid: Guid(guid),
        sys_guid: Guid(guid),
        node_type,
        num_ports,
        desc: desc.to_string(),
        vendor_id: 0,
        device_id: 0,
        revision: 0,
        dr_path: DrPath::new(&[1]).unwrap_or(DrPath::local()),
        first_port: 0,
        switch_info: None,
    }
}

/// Adds a node; switches get port 0 GUID = node GUID and an Active port-0 PortInfo; CA port
/// GUIDs are `node GUID + port`.
pub fn add(subnet: &mut Subnet, n: Node) -> NodeId {
    let is_sw = n.is_switch();
    let guid = n.guid;
    let np = n.num_ports;
    let id = subnet.add_node(n);
    for p in 0..=np {
        if let Some(port) = subnet.port_mut(id, PortNum(p)) {
            port.guid = if is_sw {
                guid
            } else {
                Guid(guid.0 + u64::from(p))
            };
            if is_sw && p == 0 {
                port.info = Some(active_port_info());
            }
        }
    }
    id
}

/// Links two ports and marks both Active.
pub fn connect(subnet: &mut Subnet, a: (NodeId, u8), b: (NodeId, u8)) {
    subnet.link((a.0, PortNum(a.1)), (b.0, PortNum(b.1)));
    for (n, p) in [a, b] {
        if let Some(port) = subnet.port_mut(n, PortNum(p)) {
            port.info = Some(active_port_info());
        }
    }
}

/// The classic 3-level k-ary fat tree (k even): k pods of k/2 edge and k/2 aggregation
/// switches, (k/2)² core switches, k/2 single-port CAs per edge switch — k = 36 gives 1,620
/// switches and 11,664 CAs. Switch ports 1..k/2 face down, k/2+1..k face up. The first core
/// switch is the SM's node (empty DR path).
#[must_use]
pub fn fat_tree(k: u8) -> Subnet {
    let h = usize::from(k / 2);
    let mut s = Subnet::new();
    let mut next_sw = 0x0002_c900_0000_0000u64;
    let mut next_ca = 0x0001_c900_0000_0000u64;
    let mut sw = |s: &mut Subnet, desc: String| {
        next_sw += 1;
        add(s, node(next_sw, NodeType::SWITCH, k, &desc))
    };
    let core: Vec<NodeId> = (0..h * h)
        .map(|i| sw(&mut s, format!("core-{i}")))
        .collect();
    if let Some(&c0) = core.first() {
        s.nodes[c0.idx()].dr_path = DrPath::local();
    }
    for pod in 0..usize::from(k) {
        let aggs: Vec<NodeId> = (0..h)
            .map(|i| sw(&mut s, format!("agg-{pod}-{i}")))
            .collect();
        let edges: Vec<NodeId> = (0..h)
            .map(|i| sw(&mut s, format!("edge-{pod}-{i}")))
            .collect();
        for (ai, &a) in aggs.iter().enumerate() {
            for (j, &c) in core[ai * h..(ai + 1) * h].iter().enumerate() {
                connect(&mut s, (a, (h + 1 + j) as u8), (c, (pod + 1) as u8));
            }
            for (ei, &e) in edges.iter().enumerate() {
                connect(&mut s, (e, (h + 1 + ai) as u8), (a, (ei + 1) as u8));
            }
        }
        for (ei, &e) in edges.iter().enumerate() {
            for hi in 0..h {
                next_ca += 0x10;
                let ca = add(
                    &mut s,
                    node(next_ca, NodeType::CA, 1, &format!("host-{pod}-{ei}-{hi}")),
                );
                connect(&mut s, (ca, 1), (e, (hi + 1) as u8));
            }
        }
    }
    s
}

/// A problem in `ibnetdiscover` text.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("ibnetdiscover line {line}: {what}")]
pub struct TopoError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

struct PNode {
    guid: u64,
    sys: u64,
    t: NodeType,
    ports: u8,
    desc: String,
    vendor: u32,
    device: u16,
}

struct PLink {
    from: u64,
    port: u8,
    port_guid: Option<u64>,
    to: u64,
    rport: u8,
    rport_guid: Option<u64>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// Parses `"S-0000000000200001"` / `"H-…"` node names (the GUID) — the names ibnetdiscover
/// prints without a node-name map.
fn name_guid(s: &str) -> Option<u64> {
    hex(s.get(2..)?)
}

/// `[n]` then optional `(hexguid)`; returns (n, guid, rest).
fn port_ref(s: &str) -> Option<(u8, Option<u64>, &str)> {
    let s = s.trim_start().strip_prefix('[')?;
    let close = s.find(']')?;
    let n: u8 = s[..close].parse().ok()?;
    let rest = &s[close + 1..];
    if let Some(r) = rest.strip_prefix('(') {
        let c = r.find(')')?;
        return Some((n, Some(hex(&r[..c])?), &r[c + 1..]));
    }
    Some((n, None, rest))
}

/// Reads `ibnetdiscover` output (as produced by infiniband-diags; node names must be the
/// default `S-<guid>` / `H-<guid>`). The node named in `# Initiated from node …` becomes the
/// SM's node. Node descriptions come from the `# "desc"` comments.
pub fn from_ibnetdiscover(text: &str) -> Result<Subnet, TopoError> {
    let mut nodes: Vec<PNode> = Vec::new();
    let mut links: Vec<PLink> = Vec::new();
    let mut sm_node = None;
    let (mut sys, mut vendor, mut device) = (0u64, 0u32, 0u16);
    let err = |line: usize, what: &str| TopoError {
        line,
        what: what.to_string(),
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim_end();
        if let Some(r) = t.strip_prefix("# Initiated from node ") {
            sm_node = r.split_whitespace().next().and_then(hex);
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(v) = t.strip_prefix("sysimgguid=") {
            sys = hex(v).ok_or_else(|| err(line, "bad sysimgguid"))?;
        } else if let Some(v) = t.strip_prefix("vendid=") {
            vendor = hex(v).ok_or_else(|| err(line, "bad vendid"))? as u32;
        } else if let Some(v) = t.strip_prefix("devid=") {
            device = hex(v).ok_or_else(|| err(line, "bad devid"))? as u16;
        } else if t.contains('=') && !t.starts_with('[') {
            // switchguid= / caguid= / rtguid=: the node line carries the GUID too
        } else if t.starts_with("Switch") || t.starts_with("Ca") || t.starts_with("Rt") {
            let ty = if t.starts_with("Switch") {
                NodeType::SWITCH
            } else if t.starts_with("Ca") {
                NodeType::CA
            } else {
                NodeType::ROUTER
            };
            let parts: Vec<&str> = t.split('"').collect();
            if parts.len() < 3 {
                return Err(err(line, "node line without a quoted name"));
            }
            let ports: u8 = parts[0]
                .split_whitespace()
                .nth(1)
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| err(line, "bad port count"))?;
            let guid =
                name_guid(parts[1]).ok_or_else(|| err(line, "node name is not S-/H-<guid>"))?;
            let desc = parts.get(3).map_or(String::new(), |d| (*d).to_string());
            nodes.push(PNode {
                guid,
                sys,
                t: ty,
                ports,
                desc,
                vendor,
                device,
            });
        } else if t.starts_with('[') {
            let cur = nodes
                .last()
                .ok_or_else(|| err(line, "port line before any node"))?;
            let (p, pg, rest) = port_ref(t).ok_or_else(|| err(line, "bad local port"))?;
            let q: Vec<&str> = rest.split('"').collect();
            if q.len() < 3 {
                return Err(err(line, "port line without a quoted peer"));
            }
            let to = name_guid(q[1]).ok_or_else(|| err(line, "peer name is not S-/H-<guid>"))?;
            let (rp, rpg, _) = port_ref(q[2]).ok_or_else(|| err(line, "bad peer port"))?;
            links.push(PLink {
                from: cur.guid,
                port: p,
                port_guid: pg,
                to,
                rport: rp,
                rport_guid: rpg,
            });
        } else {
            return Err(err(line, "unrecognised line"));
        }
    }
    let mut s = Subnet::new();
    let mut ids: HashMap<u64, NodeId> = HashMap::new();
    for n in &nodes {
        let mut nd = node(n.guid, n.t, n.ports, &n.desc);
        nd.sys_guid = Guid(n.sys);
        nd.vendor_id = n.vendor;
        nd.device_id = n.device;
        if Some(n.guid) == sm_node {
            nd.dr_path = DrPath::local();
        }
        let id = add(&mut s, nd);
        ids.insert(n.guid, id);
    }
    for l in &links {
        let (Some(&a), Some(&b)) = (ids.get(&l.from), ids.get(&l.to)) else {
            return Err(err(0, &format!("link to unknown node {:#x}", l.to)));
        };
        connect(&mut s, (a, l.port), (b, l.rport));
        for (n, p, g) in [(a, l.port, l.port_guid), (b, l.rport, l.rport_guid)] {
            if let (Some(g), Some(port)) = (g, s.port_mut(n, PortNum(p))) {
                port.guid = Guid(g);
            }
        }
    }
    Ok(s)
}

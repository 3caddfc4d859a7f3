//! PathRecord queries (IBA vol1 §15.2.5.16): which paths the SA answers, and with which
//! parameters — OpenSM's behaviour (`osm_sa_path_record.c`), computed from tables made once
//! per sweep instead of a hop-by-hop walk per record.
//!
//! # Per sweep: [`PathIndex::build`]
//!
//! The index holds every end port (switch port 0, CA and router ports) in OpenSM's port order,
//! LID → port and GUID → port maps, each port's MTU and rate, and **one entry per (switch,
//! destination LID)**: the smallest MTU and rate and the hop count of the LID-routed path from
//! that switch's egress port to the destination, as the LFTs route it. The table is filled one
//! destination column at a time by following each switch's LFT entry to the next switch with
//! memoisation (each entry is computed once; LFT loops and paths over 64 hops are marked
//! invalid), so a k36 fat tree (1,620 switches × 13k LIDs) is filled in well under a second
//! and takes 2 bytes an entry. A record's path parameters are then at most three table reads.
//!
//! What OpenSM's walk takes into account, and this table reproduces exactly: the source port
//! (a switch's port 0), every switch's ingress and egress port on the way (MTUCap and the rate
//! of LinkWidthActive × LinkSpeed(Ext)Active, extended speeds as the switch's port 0
//! advertises them), and the destination port; for a switch as the source, its egress port is
//! not looked at (OpenSM starts from port 0 and the next switch's ingress port).
//!
//! # Per query: [`answer`]
//!
//! - Validation: a Rate or MTU given with its selector must be a valid code (else
//!   ERR_REQ_INVALID); ServiceID is given as both halves or not at all (else
//!   ERR_REQ_INSUFFICIENT_COMPONENTS).
//! - A multicast DGID is answered from the group ([`McGroupView`]): its MLID, P_Key, SL,
//!   TClass, FlowLabel, HopLimit, and its MTU, rate and packet lifetime with selector Exactly;
//!   no group, or a request that does not match it: no records.
//! - Endpoints: SGID / DGID (the subnet prefix or link-local, else ERR_REQ_INVALID_GID, as is
//!   an unknown GUID — OpenSM answers an empty set there, IBA says invalid GID), SLID / DLID
//!   (any LID of a port's LMC range; an unknown LID: no records). An SGID and SLID (or DGID and
//!   DLID) naming different ports: ERR_REQ_INVALID. With both ends known: the pair; with one:
//!   a half world (every end port as the other end); with none: the world.
//! - Per port pair: the requester, the source and the destination must share a P_Key
//!   ([`PKeyView`]; the default partition 0xFFFF where no table is known). LID pairs in
//!   OpenSM's preference order: first LID *i* ↔ LID *i* (preference 0), then the other
//!   combinations (preference 2); SubnAdmGet takes one path, GetTable with NumbPath that many,
//!   otherwise all.
//! - Per LID pair: the path's MTU and rate, limited by the QoS level (qos-policy.conf, when
//!   QoS is on), then the MTU / rate / PacketLifeTime selectors (greater than, less than —
//!   lowering to the highest value below —, exactly, best); PacketLifeTime is
//!   `subnet_timeout`, the level's `packet-life`, or 0 for a loopback path; P_Key as OpenSM
//!   picks it; SL from the request, the QoS level, the partition, else 0 — with QoS on, an SL
//!   the SL-to-VL tables on the path map to VL15 is refused; a routing engine's path SL
//!   ([`crate::routing::Routes::path_sl`]) overrides, keeping the bits the engine leaves to
//!   that SL (torus-2QoS: bit 3, the QoS level), and a requested SL it does not match is
//!   refused. Reversible when the reverse path also qualifies; a query asking for reversible
//!   paths gets only those.
//!
//! Answers carry selector Exactly (2) on MTU, rate and PacketLifeTime, QoSClass 0, TClass 0,
//! FlowLabel 0, HopLimit 0, ServiceID 0 and NumbPath 0 (Reversible bit as computed), as
//! OpenSM's do.

mod multi;

use std::collections::HashMap;

use ibmad::sa::status as sa_status;
use ibmad::sa_rec::path::{
    self as wire, comp, rate_order, PathRecordRepr, Selector, PATH_RECORD_LEN,
};
use ibmad::zerocopy::IntoBytes;
use ibmad::{Gid, Guid, Lid, PKey, PortNum, Status};

use crate::dump::Sl2VlLookup;
use crate::qos::policy::{PartitionView, PathQuery, PolicyPort, QosLevel, QosPolicy};
use crate::routing::vl::PathSls;
use crate::routing::{Lfts, NO_PATH};
use crate::subnet::{NodeId, Subnet};

pub use multi::{answer_multi_into, MultiPathRequest, MAX_PATHS};

/// Maximum switches a path may cross (OpenSM `MAX_HOPS`).
pub const MAX_HOPS: u8 = 64;
/// OpenSM's default SL.
const DEFAULT_SL: u8 = 0;
/// The VL that drops.
const VL15: u8 = 15;

const NONE: u32 = u32::MAX;

/// Table entries: bit 15 set = a valid path, bits 0..2 MTU, 3..7 rate rank, 8..14 hops.
const UNKNOWN: u16 = 0;
const INVALID: u16 = 0x7FFF;
const IN_PROGRESS: u16 = 0x7FFE;
const VALID: u16 = 0x8000;

/// MTU (3 bits) and rate rank (5 bits) of a port or path, packed in a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Caps(u8);

impl Caps {
    fn new(mtu: u8, rank: u8) -> Caps {
        Caps((mtu.min(7)) | (rank.min(31) << 3))
    }
    fn mtu(self) -> u8 {
        self.0 & 7
    }
    fn rank(self) -> u8 {
        self.0 >> 3
    }
    fn min(self, o: Caps) -> Caps {
        Caps::new(self.mtu().min(o.mtu()), self.rank().min(o.rank()))
    }
    fn entry(self, hops: u8) -> u16 {
        VALID | u16::from(self.0) | (u16::from(hops.min(127)) << 8)
    }
    fn of_entry(e: u16) -> Option<(Caps, u8)> {
        (e & VALID != 0).then_some((Caps((e & 0xFF) as u8), ((e >> 8) & 0x7F) as u8))
    }
}

/// How an end port leaves its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    /// A switch's port 0, or a CA port without a discovered link.
    None,
    /// Into a switch (its slot in the LFTs) through its port `ingress` (global port index).
    Switch { slot: u32, ingress: u32 },
    /// Straight to another end port (index in [`PathIndex::ends`]).
    Direct { end: u32 },
}

/// One end port of the index.
#[derive(Clone, Debug)]
struct EndPort {
    guid: Guid,
    node: NodeId,
    port: PortNum,
    /// Base LID (0: none assigned).
    lid: u16,
    lmc: u8,
    switch: bool,
    /// Index into [`Subnet::ports`].
    gidx: u32,
    link: Link,
}

impl EndPort {
    fn lid_range(&self) -> (u16, u16) {
        let n = (1u32 << self.lmc.min(7)) - 1;
        let last = (u32::from(self.lid) + n).min(u32::from(Lid::UNICAST_MAX.0));
        (self.lid, last as u16)
    }
}

/// The per-sweep PathRecord index; see the module docs. Build it once per subnet model and
/// LFTs, then answer any number of queries from it (it is immutable and `Sync`).
#[derive(Clone, Debug, Default)]
pub struct PathIndex {
    ends: Vec<EndPort>,
    by_lid: Vec<u32>,
    by_guid: HashMap<Guid, u32>,
    /// Per [`Subnet::ports`] index: MTUCap and rate rank.
    caps: Vec<Caps>,
    /// LFT slot of each node (switches with a table), [`NONE`] otherwise.
    slot_of_node: Vec<u32>,
    nsw: usize,
    /// `width` columns of `nsw` entries: `down[dlid * nsw + slot]`.
    down: Vec<u16>,
    sm_end: Option<u32>,
    may_drop: bool,
}

fn port_caps(subnet: &Subnet) -> Vec<Caps> {
    let mut caps = vec![Caps::new(0, 0); subnet.ports.len()];
    for id in subnet.node_ids() {
        let node = subnet.node(id);
        let base = node.first_port as usize;
        // A switch's ports use the extended speeds its port 0 advertises (OpenSM p0_extended).
        let sw_ext = node.is_switch()
            && subnet
                .port(id, PortNum(0))
                .and_then(|p| p.info)
                .is_some_and(|pi| pi.capability_mask.get() & wire::CAP_HAS_EXT_SPEEDS != 0);
        for p in 0..=node.num_ports {
            // A port never read counts as OpenSM's zeroed PortInfo: MTU 0, 2.5 Gb/s.
            let Some(pi) = subnet.port(id, PortNum(p)).map(|x| {
                x.info
                    .unwrap_or_else(ibmad::zerocopy::FromZeros::new_zeroed)
            }) else {
                continue;
            };
            let ext = if node.is_switch() {
                sw_ext
            } else {
                pi.capability_mask.get() & wire::CAP_HAS_EXT_SPEEDS != 0
            };
            let rank = rate_order(wire::port_rate(&pi, ext)).unwrap_or(0);
            if let Some(c) = caps.get_mut(base + usize::from(p)) {
                *c = Caps::new(pi.mtu_cap(), rank);
            }
        }
    }
    caps
}

/// What one switch does for one destination LID.
enum Step {
    /// No usable route.
    Bad,
    /// The destination is reached; the caps of the ports on the way.
    Term(Caps),
    /// On to the switch of this slot, with the caps of this hop.
    Next(Caps, u32),
}

struct ColumnCtx<'a> {
    subnet: &'a Subnet,
    rows: &'a [Option<&'a [u8]>],
    sws: &'a [NodeId],
    slot_of_node: &'a [u32],
    caps: &'a [Caps],
}

impl ColumnCtx<'_> {
    fn gidx(&self, n: NodeId, p: u8) -> usize {
        self.subnet.node(n).first_port as usize + usize::from(p)
    }

    fn cap(&self, n: NodeId, p: u8) -> Caps {
        self.caps
            .get(self.gidx(n, p))
            .copied()
            .unwrap_or(Caps::new(0, 0))
    }

    /// `dest` is the destination's port as OpenSM's walk ends on it: a CA or router port, or
    /// for a switch the port its own LFT gives for the LID (port 0 when programmed right).
    fn step(&self, slot: usize, d: usize, dest: (NodeId, PortNum)) -> Step {
        let (Some(&s), Some(Some(row))) = (self.sws.get(slot), self.rows.get(slot)) else {
            return Step::Bad;
        };
        let e = row.get(d).copied().unwrap_or(NO_PATH);
        if e == NO_PATH || e > self.subnet.node(s).num_ports {
            return Step::Bad;
        }
        if (s, PortNum(e)) == dest {
            // The destination switch: its egress port is where the walk ends.
            return Step::Term(self.cap(s, e));
        }
        if e == 0 {
            return Step::Bad; // routed to itself, but the LID is not its own
        }
        let Some((t, q)) = self.subnet.port(s, PortNum(e)).and_then(|x| x.remote) else {
            return Step::Bad;
        };
        let hop = self.cap(s, e).min(self.cap(t, q.0));
        if (t, q) == dest {
            return Step::Term(hop);
        }
        match self.slot_of_node.get(t.idx()) {
            Some(&ts) if ts != NONE => Step::Next(hop, ts),
            _ => Step::Bad,
        }
    }

    /// Fills column `d` (destination LID `d`, end port `dest`) of the down table.
    fn fill(
        &self,
        col: &mut [u16],
        d: usize,
        dest: (NodeId, PortNum),
        stack: &mut Vec<(u32, Step)>,
    ) {
        for start in 0..col.len() {
            if col[start] != UNKNOWN {
                continue;
            }
            stack.clear();
            let mut cur = start;
            let mut tail = INVALID;
            loop {
                match col[cur] {
                    IN_PROGRESS => {
                        tail = INVALID; // an LFT loop
                        break;
                    }
                    UNKNOWN => {}
                    v => {
                        tail = v;
                        break;
                    }
                }
                col[cur] = IN_PROGRESS;
                match self.step(cur, d, dest) {
                    Step::Next(c, next) => {
                        stack.push((cur as u32, Step::Next(c, next)));
                        cur = next as usize;
                    }
                    other => {
                        stack.push((cur as u32, other));
                        break;
                    }
                }
            }
            let mut val = tail;
            while let Some((slot, st)) = stack.pop() {
                val = match st {
                    Step::Bad => INVALID,
                    Step::Term(c) => c.entry(0),
                    Step::Next(c, _) => match Caps::of_entry(val) {
                        Some((rest, hops)) if hops < MAX_HOPS => c.min(rest).entry(hops + 1),
                        _ => INVALID,
                    },
                };
                col[slot as usize] = val;
            }
        }
    }
}

impl PathIndex {
    /// Builds the index of `subnet` routed by `lfts`. `sl2vl` (the tables the SM programmed;
    /// only looked at with QoS on) tells whether any SL-to-VL table maps an SL to VL15, in
    /// which case queries check the tables on each path.
    #[must_use]
    pub fn build(subnet: &Subnet, lfts: &Lfts, sl2vl: Option<Sl2VlLookup<'_>>) -> PathIndex {
        let caps = port_caps(subnet);
        let slots = lfts.slots_in(subnet);
        let sws: Vec<NodeId> = slots.switches().to_vec();
        let mut slot_of_node = vec![NONE; subnet.nodes.len()];
        for (i, s) in sws.iter().enumerate() {
            slot_of_node[s.idx()] = i as u32;
        }
        let mut ends: Vec<EndPort> = subnet
            .end_ports()
            .filter_map(|(n, p)| {
                let port = subnet.port(n, p)?;
                let node = subnet.node(n);
                let link = match port.remote {
                    Some((t, q)) if !node.is_switch() => {
                        match slot_of_node.get(t.idx()) {
                            Some(&s) if s != NONE => Link::Switch {
                                slot: s,
                                ingress: subnet.node(t).first_port + u32::from(q.0),
                            },
                            // Resolved to an end index below.
                            _ => Link::Direct {
                                end: subnet.node(t).first_port + u32::from(q.0),
                            },
                        }
                    }
                    _ => Link::None,
                };
                Some(EndPort {
                    guid: port.guid,
                    node: n,
                    port: p,
                    lid: port.lid.0,
                    lmc: port.lmc,
                    switch: node.is_switch(),
                    gidx: node.first_port + u32::from(p.0),
                    link,
                })
            })
            .collect();
        // OpenSM's port order: its GUID map is keyed by the GUID in network byte order.
        ends.sort_by_key(|e| e.guid.0.swap_bytes());
        let by_gidx: HashMap<u32, u32> = ends
            .iter()
            .enumerate()
            .map(|(i, e)| (e.gidx, i as u32))
            .collect();
        for e in &mut ends {
            if let Link::Direct { end } = e.link {
                e.link = match by_gidx.get(&end) {
                    Some(&i) => Link::Direct { end: i },
                    None => Link::None,
                };
            }
        }
        let width = usize::from(lfts.top().0).max(crate::routing::max_lid(subnet).0.into()) + 1;
        let mut by_lid = vec![NONE; width];
        let mut by_guid = HashMap::with_capacity(ends.len());
        for (i, e) in ends.iter().enumerate() {
            by_guid.entry(e.guid).or_insert(i as u32);
            if e.lid == 0 {
                continue;
            }
            let (a, b) = e.lid_range();
            for l in a..=b {
                if let Some(x) = by_lid.get_mut(usize::from(l)) {
                    *x = i as u32;
                }
            }
        }
        let sm_end = subnet
            .sm_port()
            .and_then(|(n, p)| by_gidx.get(&(subnet.node(n).first_port + u32::from(p.0))))
            .copied();
        let nsw = sws.len();
        let rows: Vec<Option<&[u8]>> = sws.iter().map(|&s| lfts.table(s)).collect();
        let mut down = vec![UNKNOWN; width * nsw];
        let cx = ColumnCtx {
            subnet,
            rows: &rows,
            sws: &sws,
            slot_of_node: &slot_of_node,
            caps: &caps,
        };
        let dest_of = |d: usize| -> Option<(NodeId, PortNum)> {
            let e = ends.get(*by_lid.get(d)? as usize)?;
            dest_port(lfts, e, d as u16)
        };
        if nsw > 0 {
            #[cfg(feature = "parallel")]
            {
                use rayon::prelude::*;
                down.par_chunks_mut(nsw)
                    .enumerate()
                    .for_each_init(Vec::new, |stack, (d, col)| {
                        if let Some(dest) = dest_of(d) {
                            cx.fill(col, d, dest, stack);
                        }
                    });
            }
            #[cfg(not(feature = "parallel"))]
            {
                let mut stack = Vec::new();
                for (d, col) in down.chunks_mut(nsw).enumerate() {
                    if let Some(dest) = dest_of(d) {
                        cx.fill(col, d, dest, &mut stack);
                    }
                }
            }
        }
        let may_drop = sl2vl.is_some_and(|f| any_drop(subnet, f));
        PathIndex {
            ends,
            by_lid,
            by_guid,
            caps,
            slot_of_node,
            nsw,
            down,
            sm_end,
            may_drop,
        }
    }

    /// Number of end ports indexed.
    #[must_use]
    pub fn end_ports(&self) -> usize {
        self.ends.len()
    }

    /// Bytes of the per-(switch, destination) table.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.down.len() * 2 + self.by_lid.len() * 4 + self.caps.len()
    }

    fn end_by_lid(&self, lid: u16) -> Option<u32> {
        match self.by_lid.get(usize::from(lid)) {
            Some(&i) if i != NONE => Some(i),
            _ => None,
        }
    }

    fn down(&self, slot: u32, dlid: u16) -> Option<(Caps, u8)> {
        let i = usize::from(dlid) * self.nsw + slot as usize;
        Caps::of_entry(*self.down.get(i)?)
    }

    fn cap(&self, gidx: u32) -> Caps {
        self.caps
            .get(gidx as usize)
            .copied()
            .unwrap_or(Caps::new(0, 0))
    }

    /// The smallest MTU and rate of the LID-routed path from `src` to `dst`'s LID `dlid`.
    fn raw_path(
        &self,
        subnet: &Subnet,
        lfts: &Lfts,
        src: u32,
        dst: u32,
        dlid: u16,
    ) -> Option<Caps> {
        let s = self.ends.get(src as usize)?;
        let d = self.ends.get(dst as usize)?;
        let dest = dest_port(lfts, d, dlid)?;
        let own = self.cap(s.gidx);
        // Where the source's walk leaves from: a CA port itself, a switch's routed port.
        let out = if s.switch {
            (s.node, lfts.get(s.node, Lid(dlid))?)
        } else {
            (s.node, s.port)
        };
        if out == dest {
            return Some(own.min(self.cap(s.node_gidx(subnet, out.1))));
        }
        let (t, q) = match (s.switch, s.link) {
            (false, Link::Switch { slot, ingress }) => {
                let (rest, _) = self.down(slot, dlid)?;
                return Some(own.min(self.cap(ingress)).min(rest));
            }
            (false, Link::Direct { end }) => {
                return (end == dst).then(|| own.min(self.cap(d.gidx)));
            }
            (false, Link::None) => return None,
            (true, _) => subnet.port(out.0, out.1)?.remote?,
        };
        let ingress = self.cap(subnet.node(t).first_port + u32::from(q.0));
        if (t, q) == dest {
            return Some(own.min(ingress));
        }
        let slot = *self.slot_of_node.get(t.idx())?;
        if slot == NONE {
            return None;
        }
        let (rest, _) = self.down(slot, dlid)?;
        Some(own.min(ingress).min(rest))
    }
}

/// The port OpenSM's walk to LID `dlid` of end port `e` ends on: the port itself, or for a
/// switch the port its LFT routes its own LID to (port 0 when programmed right); `None` if the
/// switch has no route for it.
fn dest_port(lfts: &Lfts, e: &EndPort, dlid: u16) -> Option<(NodeId, PortNum)> {
    if e.switch {
        Some((e.node, lfts.get(e.node, Lid(dlid))?))
    } else {
        Some((e.node, e.port))
    }
}

impl EndPort {
    /// Global index of port `p` of this end port's node.
    fn node_gidx(&self, subnet: &Subnet, p: PortNum) -> u32 {
        subnet.node(self.node).first_port + u32::from(p.0)
    }
}

/// True if any SL-to-VL table of the subnet maps an SL to VL15.
fn any_drop(subnet: &Subnet, f: Sl2VlLookup<'_>) -> bool {
    let drops = |t: Option<ibmad::attr::SlToVl>| {
        t.is_some_and(|t| (0..16).any(|sl| t.vl(sl) == Some(VL15)))
    };
    subnet.node_ids().any(|id| {
        let n = subnet.node(id);
        if n.is_switch() {
            (0..=n.num_ports)
                .any(|i| (0..=n.num_ports).any(|o| drops(f(id, PortNum(i), PortNum(o)))))
        } else {
            (1..=n.num_ports).any(|p| drops(f(id, PortNum(0), PortNum(p))))
        }
    })
}

/// P_Key tables of end ports, for the partition rules (engineer D's partition manager fills
/// them in the SA snapshot).
pub trait PKeyView {
    /// The P_Key table of end port (`node`, `port`); `None` if the SM knows none, in which
    /// case the port counts as a full member of the default partition only.
    fn pkeys(&self, node: NodeId, port: PortNum) -> Option<&[PKey]>;
    /// The SL of the partition with this P_Key base (partitions.conf `sl=`), if configured.
    fn partition_sl(&self, _base: u16) -> Option<u8> {
        None
    }
}

/// No P_Key data: every port is a full member of the default partition.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultPartition;

impl PKeyView for DefaultPartition {
    fn pkeys(&self, _: NodeId, _: PortNum) -> Option<&[PKey]> {
        None
    }
}

/// What a PathRecord to a multicast group answers (the group's MCMemberRecord values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McPathGroup {
    /// MGID.
    pub mgid: Gid,
    /// MLID.
    pub mlid: Lid,
    /// P_Key.
    pub pkey: PKey,
    /// SL.
    pub sl: u8,
    /// FlowLabel.
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub tclass: u8,
    /// MTU code.
    pub mtu: u8,
    /// Rate code.
    pub rate: u8,
    /// PacketLifeTime.
    pub packet_life: u8,
}

/// Multicast groups, for PathRecords with a multicast DGID (engineer C's groups).
pub trait McGroupView {
    /// The group with this MGID.
    fn group(&self, mgid: &Gid) -> Option<McPathGroup>;
    /// True if the port with `port_guid` is a member of group `mgid`.
    fn is_member(&self, mgid: &Gid, port_guid: Guid) -> bool;
}

/// No multicast groups.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoGroups;

impl McGroupView for NoGroups {
    fn group(&self, _: &Gid) -> Option<McPathGroup> {
        None
    }
    fn is_member(&self, _: &Gid, _: Guid) -> bool {
        false
    }
}

/// Subnet options the answers depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathConfig {
    /// The subnet prefix (GIDs of the subnet).
    pub subnet_prefix: u64,
    /// `subnet_timeout`: the PacketLifeTime of non-loopback paths.
    pub subnet_timeout: u8,
    /// `qos`: QoS levels and the VL15 check apply.
    pub qos: bool,
}

impl Default for PathConfig {
    fn default() -> Self {
        PathConfig {
            subnet_prefix: 0xfe80_0000_0000_0000,
            subnet_timeout: 18,
            qos: false,
        }
    }
}

/// Everything a query reads: the index and the snapshot data it was built from.
#[derive(Clone, Copy)]
pub struct PathCtx<'a> {
    /// The index of this snapshot.
    pub index: &'a PathIndex,
    /// The subnet model the index was built from.
    pub subnet: &'a Subnet,
    /// The LFTs the index was built from.
    pub lfts: &'a Lfts,
    /// Options.
    pub config: PathConfig,
    /// The routing engine's path SLs.
    pub path_sl: Option<&'a PathSls>,
    /// The QoS policy (looked at only with `config.qos`).
    pub policy: Option<&'a QosPolicy>,
    /// The SL-to-VL tables programmed (looked at only with `config.qos`).
    pub sl2vl: Option<Sl2VlLookup<'a>>,
    /// P_Key tables.
    pub pkeys: &'a dyn PKeyView,
    /// Partitions as the QoS policy's port groups see them.
    pub parts: &'a dyn PartitionView,
    /// Multicast groups.
    pub groups: &'a dyn McGroupView,
}

impl<'a> PathCtx<'a> {
    /// A context with defaults: no path SLs, QoS off, the default partition, no groups.
    #[must_use]
    pub fn new(index: &'a PathIndex, subnet: &'a Subnet, lfts: &'a Lfts) -> PathCtx<'a> {
        PathCtx {
            index,
            subnet,
            lfts,
            config: PathConfig::default(),
            path_sl: None,
            policy: None,
            sl2vl: None,
            pkeys: &DefaultPartition,
            parts: &crate::qos::policy::NoPartitions,
            groups: &NoGroups,
        }
    }
}

/// A PathRecord query: the method and what the request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathRequest {
    /// SubnAdmGet (one path at most) rather than GetTable.
    pub get: bool,
    /// ComponentMask.
    pub comp_mask: u64,
    /// The request record.
    pub record: PathRecordRepr,
    /// The requester's LID (the request's SLID).
    pub requester: Lid,
}

/// Answers a PathRecord query: the records (64 bytes each, in answer order) or an SA status.
///
/// # Errors
/// The SA status for an invalid request (see the module docs).
pub fn answer(ctx: &PathCtx<'_>, req: &PathRequest) -> Result<Vec<u8>, Status> {
    let mut out = Vec::new();
    answer_into(ctx, req, &mut out)?;
    Ok(out)
}

/// [`answer`] appending to `out` (which is left with whole records only).
///
/// # Errors
/// As [`answer`].
pub fn answer_into(ctx: &PathCtx<'_>, req: &PathRequest, out: &mut Vec<u8>) -> Result<(), Status> {
    let cm = req.comp_mask;
    let pr = &req.record;
    validate(cm, pr)?;
    let ix = ctx.index;
    let Some(requester) = ix.end_by_lid(req.requester.0) else {
        // OpenSM drops a request from a port it does not know ("ERR 1F16"); say why instead.
        return Err(sa_status::REQ_INVALID);
    };
    if cm & comp::DGID != 0 && pr.dgid.0[0] == 0xFF {
        multicast(ctx, req, requester, out);
        return Ok(());
    }
    let prefix_ok = |g: &Gid| is_link_local(g) || g.prefix() == ctx.config.subnet_prefix;
    let mut src = None;
    let mut dst = None;
    if cm & comp::SGID != 0 {
        if !prefix_ok(&pr.sgid) {
            return Err(sa_status::REQ_INVALID_GID);
        }
        src = Some(
            *ix.by_guid
                .get(&pr.sgid.guid())
                .ok_or(sa_status::REQ_INVALID_GID)?,
        );
    }
    let src_by_lid = if cm & comp::SLID != 0 {
        match ix.end_by_lid(pr.slid.0) {
            Some(i) => Some(i),
            None => return Ok(()), // no such LID: no records
        }
    } else {
        None
    };
    if cm & comp::DGID != 0 {
        if !prefix_ok(&pr.dgid) {
            // Off-subnet: would go through a router; none is configured.
            return Err(sa_status::REQ_INVALID_GID);
        }
        dst = Some(
            *ix.by_guid
                .get(&pr.dgid.guid())
                .ok_or(sa_status::REQ_INVALID_GID)?,
        );
    }
    let dst_by_lid = if cm & comp::DLID != 0 {
        match ix.end_by_lid(pr.dlid.0) {
            Some(i) => Some(i),
            None => return Ok(()),
        }
    } else {
        None
    };
    if let (Some(a), Some(b)) = (src, src_by_lid) {
        if a != b {
            return Err(sa_status::REQ_INVALID);
        }
    }
    if let (Some(a), Some(b)) = (dst, dst_by_lid) {
        if a != b {
            return Err(sa_status::REQ_INVALID);
        }
    }
    let src = src.or(src_by_lid);
    let dst = dst.or(dst_by_lid);
    let mut q = Query {
        ctx,
        req,
        requester,
        out,
        count: 0,
    };
    let n = ix.ends.len() as u32;
    match (src, dst) {
        (Some(s), Some(d)) => q.pair(s, d),
        (Some(s), None) => {
            for d in 0..n {
                q.pair(s, d);
                if q.full() {
                    break;
                }
            }
        }
        (None, Some(d)) => {
            for s in 0..n {
                q.pair(s, d);
                if q.full() {
                    break;
                }
            }
        }
        (None, None) => {
            'world: for d in 0..n {
                for s in 0..n {
                    q.pair(s, d);
                    if q.full() {
                        break 'world;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The checks of a query's values: a Rate or MTU given with its selector must be a valid code
/// (else ERR_REQ_INVALID); ServiceID is given as both halves or not at all (else
/// ERR_REQ_INSUFFICIENT_COMPONENTS).
fn validate(cm: u64, pr: &PathRecordRepr) -> Result<(), Status> {
    if cm & (comp::RATE_SELECTOR | comp::RATE) == comp::RATE_SELECTOR | comp::RATE
        && !wire::rate_is_valid(pr.rate)
    {
        return Err(sa_status::REQ_INVALID);
    }
    if cm & (comp::MTU_SELECTOR | comp::MTU) == comp::MTU_SELECTOR | comp::MTU
        && !wire::mtu_is_valid(pr.mtu)
    {
        return Err(sa_status::REQ_INVALID);
    }
    let sid = cm & comp::SERVICE_ID;
    if sid != 0 && sid != comp::SERVICE_ID {
        return Err(sa_status::REQ_INSUFFICIENT_COMPONENTS);
    }
    Ok(())
}

fn is_link_local(g: &Gid) -> bool {
    g.0[0] == 0xFE && g.0[1] & 0xC0 == 0x80
}

/// P_Key `a` of one port and `b` of another are shared: same base, at least one full member.
fn pkeys_match(a: PKey, b: PKey) -> bool {
    a.base() == b.base() && (a.is_full_member() || b.is_full_member())
}

const DEFAULT_PKEYS: [PKey; 1] = [PKey::DEFAULT_FULL];

struct Query<'a, 'c> {
    ctx: &'a PathCtx<'c>,
    req: &'a PathRequest,
    requester: u32,
    out: &'a mut Vec<u8>,
    count: usize,
}

/// Path parameters of one direction.
#[derive(Clone, Copy, Debug)]
struct Params {
    mtu: u8,
    rate: u8,
    pkt_life: u8,
    pkey: PKey,
    sl: u8,
}

impl Query<'_, '_> {
    fn full(&self) -> bool {
        self.req.get && self.count > 0
    }

    fn pkeys(&self, end: u32) -> &[PKey] {
        let ix = self.ctx.index;
        match ix.ends.get(end as usize) {
            Some(e) => self
                .ctx
                .pkeys
                .pkeys(e.node, e.port)
                .unwrap_or(&DEFAULT_PKEYS),
            None => &[],
        }
    }

    /// The first P_Key (lowest base) `a` shares with `b` — `a`'s entry (OpenSM
    /// `osm_physp_find_common_pkey`); `filter` restricts the bases.
    fn common_pkey(&self, a: u32, b: u32, filter: impl Fn(u16) -> bool) -> Option<PKey> {
        let (ka, kb) = (self.pkeys(a), self.pkeys(b));
        ka.iter()
            .filter(|k| k.base() != 0 && filter(k.base()))
            .filter(|k| kb.iter().any(|&j| pkeys_match(**k, j)))
            .min_by_key(|k| k.base())
            .copied()
    }

    fn share_pkey(&self, a: u32, b: u32) -> bool {
        a == b || self.common_pkey(a, b, |_| true).is_some()
    }

    fn pair(&mut self, s: u32, d: u32) {
        let ix = self.ctx.index;
        let r = self.requester;
        if !(self.share_pkey(r, s) && self.share_pkey(r, d) && self.share_pkey(s, d)) {
            return;
        }
        let (Some(se), Some(de)) = (ix.ends.get(s as usize), ix.ends.get(d as usize)) else {
            return;
        };
        let cm = self.req.comp_mask;
        let pr = &self.req.record;
        let (smin, smax) = if cm & comp::SLID != 0 {
            (pr.slid.0, pr.slid.0)
        } else {
            se.lid_range()
        };
        let (dmin, dmax) = if cm & comp::DLID != 0 {
            (pr.dlid.0, pr.dlid.0)
        } else {
            de.lid_range()
        };
        if smin == 0 || dmin == 0 {
            return;
        }
        let iterations: usize = if self.req.get {
            1
        } else if cm & comp::NUMB_PATH != 0 {
            usize::from(pr.numb_path)
        } else {
            usize::MAX
        };
        let mut found = 0usize;
        // Preference 0: LID i ↔ LID i.
        let (mut sl, mut dl) = (smin, dmin);
        while found < iterations {
            if self.lid_pair(s, d, sl, dl, 0) {
                found += 1;
            }
            if sl >= smax || dl >= dmax {
                break;
            }
            sl += 1;
            dl += 1;
        }
        if found >= iterations {
            return;
        }
        // Preference 2: the other combinations.
        for (so, sl) in (smin..=smax).enumerate() {
            for (doff, dl) in (dmin..=dmax).enumerate() {
                if found >= iterations {
                    return;
                }
                if so == doff {
                    continue;
                }
                if self.lid_pair(s, d, sl, dl, 2) {
                    found += 1;
                }
            }
        }
    }

    /// Appends the record of one LID pair if it qualifies.
    fn lid_pair(&mut self, s: u32, d: u32, slid: u16, dlid: u16, preference: u8) -> bool {
        let Some(fwd) = self.params(s, slid, d, dlid) else {
            return false;
        };
        let reversible = self.params(d, dlid, s, slid).is_some();
        let cm = self.req.comp_mask;
        let pr = &self.req.record;
        if cm & comp::REVERSIBLE != 0 && pr.reversible && !reversible {
            return false;
        }
        let ix = self.ctx.index;
        let (Some(se), Some(de)) = (ix.ends.get(s as usize), ix.ends.get(d as usize)) else {
            return false;
        };
        let prefix = self.ctx.config.subnet_prefix;
        let mut rate = fwd.rate;
        if rate >= 19 {
            let pi = |e: &EndPort| self.ctx.subnet.port(e.node, e.port).and_then(|p| p.info);
            if let Some(p) = pi(se) {
                rate = wire::rate_2x_hdr_fixup(&p, rate);
            }
            if reversible {
                if let Some(p) = pi(de) {
                    rate = wire::rate_2x_hdr_fixup(&p, rate);
                }
            }
        }
        let rec = PathRecordRepr {
            dgid: Gid::new(prefix, de.guid),
            sgid: if cm & comp::SGID != 0 {
                pr.sgid
            } else {
                Gid::new(prefix, se.guid)
            },
            dlid: Lid(dlid),
            slid: Lid(slid),
            reversible,
            pkey: fwd.pkey,
            sl: fwd.sl,
            mtu_selector: Selector::Exactly,
            mtu: fwd.mtu,
            rate_selector: Selector::Exactly,
            rate,
            packet_life_selector: Selector::Exactly,
            packet_life: if s == d { 0 } else { fwd.pkt_life },
            preference,
            ..PathRecordRepr::default()
        };
        self.out.extend_from_slice(rec.to_raw().as_bytes());
        self.count += 1;
        true
    }

    fn policy_port(&self, e: &EndPort) -> PolicyPort<'_> {
        let node = self.ctx.subnet.node(e.node);
        PolicyPort {
            guid: e.guid,
            node_desc: &node.desc,
            port_num: e.port.0,
            node_type: node.node_type,
            is_sm: self.ctx.index.sm_end.is_some_and(|i| {
                self.ctx
                    .index
                    .ends
                    .get(i as usize)
                    .is_some_and(|x| x.gidx == e.gidx)
            }),
        }
    }

    /// The SLs the SL-to-VL tables on the path do not drop (bit per SL).
    fn valid_sls(&self, s: &EndPort, d: &EndPort, dlid: u16) -> u16 {
        let ctx = self.ctx;
        let Some(f) = ctx.sl2vl.filter(|_| ctx.config.qos && ctx.index.may_drop) else {
            return 0xFFFF;
        };
        let mut mask = 0xFFFFu16;
        let mut clear = |t: Option<ibmad::attr::SlToVl>| {
            if let Some(t) = t {
                for sl in 0..16u8 {
                    if t.vl(sl) == Some(VL15) {
                        mask &= !(1 << sl);
                    }
                }
            }
        };
        let subnet = ctx.subnet;
        let mut cur = if s.switch {
            let Some(e) = ctx.lfts.get(s.node, Lid(dlid)) else {
                return mask;
            };
            clear(f(s.node, PortNum(0), e));
            subnet.port(s.node, e).and_then(|p| p.remote)
        } else {
            clear(f(s.node, PortNum(0), s.port));
            subnet.port(s.node, s.port).and_then(|p| p.remote)
        };
        for _ in 0..=MAX_HOPS {
            let Some((t, q)) = cur else { break };
            if (t, q) == (d.node, d.port) || !subnet.node(t).is_switch() {
                break;
            }
            let Some(e) = ctx.lfts.get(t, Lid(dlid)) else {
                break;
            };
            clear(f(t, q, e));
            if e.0 == 0 {
                break;
            }
            cur = subnet.port(t, e).and_then(|p| p.remote);
        }
        mask
    }

    /// The parameters of the path from end `s` (LID `slid`) to end `d` (LID `dlid`) under the
    /// request's constraints; `None` if it does not qualify (OpenSM `pr_rcv_get_path_parms`).
    fn params(&self, s: u32, slid: u16, d: u32, dlid: u16) -> Option<Params> {
        let ctx = self.ctx;
        let ix = ctx.index;
        let cm = self.req.comp_mask;
        let pr = &self.req.record;
        let caps = ix.raw_path(ctx.subnet, ctx.lfts, s, d, dlid)?;
        let (se, de) = (ix.ends.get(s as usize)?, ix.ends.get(d as usize)?);
        let mut mtu = caps.mtu();
        let mut rank = caps.rank();
        let valid = self.valid_sls(se, de, dlid);
        if valid == 0 {
            return None;
        }
        let level: Option<&QosLevel> = match ctx.policy {
            Some(p) if ctx.config.qos => {
                let q = PathQuery {
                    service_id: (cm & comp::SERVICE_ID != 0).then_some(pr.service_id),
                    qos_class: (cm & comp::QOS_CLASS != 0).then_some(pr.qos_class),
                    pkey: (cm & comp::PKEY != 0).then_some(pr.pkey.0),
                };
                Some(p.level_for(&self.policy_port(se), &self.policy_port(de), &q, ctx.parts))
            }
            _ => None,
        };
        if let Some(l) = level {
            if let Some(m) = l.mtu_limit {
                mtu = mtu.min(m);
            }
            if let Some(r) = l.rate_limit.and_then(rate_order) {
                rank = rank.min(r);
            }
            if valid & (1 << (l.sl & 15)) == 0 {
                return None;
            }
        }
        let mut pkt_life = match level.and_then(|l| l.packet_life) {
            _ if s == d => 0,
            Some(p) => p,
            None => ctx.config.subnet_timeout,
        };
        // Selectors; a selector without its value is ignored, as OpenSM does.
        if cm & (comp::MTU_SELECTOR | comp::MTU) == comp::MTU_SELECTOR | comp::MTU {
            mtu = select(pr.mtu_selector, mtu, pr.mtu, false)?;
        }
        if cm & (comp::RATE_SELECTOR | comp::RATE) == comp::RATE_SELECTOR | comp::RATE {
            // Rates compare by rank; "exactly" means the path's rate itself (OpenSM).
            rank = select(pr.rate_selector, rank, rate_order(pr.rate)?, true)?;
        }
        if cm & (comp::PACKET_LIFE_SELECTOR | comp::PACKET_LIFE)
            == comp::PACKET_LIFE_SELECTOR | comp::PACKET_LIFE
        {
            pkt_life = select(pr.packet_life_selector, pkt_life, pr.packet_life, false)?;
        }
        let raw = cm & comp::RAW_TRAFFIC != 0 && pr.raw_traffic;
        let level_pkeys = level.filter(|l| !l.pkeys.is_empty());
        let pkey = if raw {
            self.common_pkey(s, d, |_| true)
        } else if cm & comp::PKEY != 0 {
            // The requested P_Key, if both ends hold it (OpenSM osm_physp_share_this_pkey)
            // and the QoS level, if it lists P_Keys, lists it.
            let k = pr.pkey;
            let this = |e: u32| self.pkeys(e).iter().copied().find(|a| a.base() == k.base());
            let shared = matches!((this(s), this(d)), (Some(a), Some(b)) if pkeys_match(a, b));
            if !shared || level_pkeys.is_some_and(|l| !l.pkeys.contains(u64::from(k.base()))) {
                return None;
            }
            Some(k)
        } else if let Some(l) = level_pkeys {
            Some(self.common_pkey(s, d, |b| l.pkeys.contains(u64::from(b)))?)
        } else {
            Some(self.common_pkey(s, d, |_| true)?)
        };
        let mut sl = if cm & comp::SL != 0 {
            if level.is_some_and(|l| l.sl != pr.sl) {
                return None;
            }
            pr.sl
        } else if let Some(l) = level {
            l.sl
        } else if let Some(k) = pkey.filter(|k| k.base() != 0) {
            ctx.pkeys.partition_sl(k.base()).unwrap_or(DEFAULT_SL)
        } else if ctx.config.qos {
            if valid & (1 << DEFAULT_SL) != 0 {
                DEFAULT_SL
            } else {
                valid.trailing_zeros() as u8
            }
        } else {
            DEFAULT_SL
        };
        if ctx.config.qos && valid & (1 << (sl & 15)) == 0 {
            return None;
        }
        if let Some(t) = ctx.path_sl {
            let hint = sl;
            if let Some(e) = t.granted(Lid(slid), Lid(dlid), hint) {
                sl = e.min(15);
            }
            if cm & comp::SL != 0 && sl != hint {
                return None;
            }
        }
        let rate = wire::rate_of_order(rank).unwrap_or(0);
        Some(Params {
            mtu,
            rate,
            pkt_life,
            pkey: if raw {
                PKey(0)
            } else {
                pkey.unwrap_or(PKey(0))
            },
            sl,
        })
    }
}

/// Applies a selector to the path's value `have` against the request's `want` (MTU codes,
/// rate ranks and packet lifetimes all order numerically; 0 is no value). "Less than" lowers
/// to the highest value below `want`; "exactly" takes `want` if the path offers at least that,
/// or with `exact_eq` only if it offers exactly that. `None`: the path does not qualify.
fn select(sel: Selector, have: u8, want: u8, exact_eq: bool) -> Option<u8> {
    match sel {
        Selector::GreaterThan => (have > want).then_some(have),
        Selector::LessThan if have < want => Some(have),
        Selector::LessThan => want.checked_sub(1).filter(|&x| x > 0),
        Selector::Exactly if exact_eq => (have == want).then_some(want),
        Selector::Exactly => (have >= want).then_some(want),
        Selector::Best => Some(have),
    }
}

/// A PathRecord to a multicast group (OpenSM `pr_process_multicast`).
fn multicast(ctx: &PathCtx<'_>, req: &PathRequest, requester: u32, out: &mut Vec<u8>) {
    let cm = req.comp_mask;
    let pr = &req.record;
    let Some(g) = ctx.groups.group(&pr.dgid) else {
        return;
    };
    let ix = ctx.index;
    if cm & comp::DLID != 0 && pr.dlid != g.mlid {
        return;
    }
    if cm & comp::SGID != 0 && !ctx.groups.is_member(&g.mgid, pr.sgid.guid()) {
        return;
    }
    if cm & comp::SLID != 0 {
        let member = ix
            .end_by_lid(pr.slid.0)
            .and_then(|i| ix.ends.get(i as usize))
            .is_some_and(|e| ctx.groups.is_member(&g.mgid, e.guid));
        if !member {
            return;
        }
    }
    if cm & comp::PKEY != 0 && pr.pkey != g.pkey {
        return;
    }
    // The requester must be in the group's partition.
    let in_partition = ix.ends.get(requester as usize).is_some_and(|e| {
        ctx.pkeys
            .pkeys(e.node, e.port)
            .unwrap_or(&DEFAULT_PKEYS)
            .iter()
            .any(|k| k.base() == g.pkey.base())
    });
    if !in_partition {
        return;
    }
    if cm & comp::SL != 0 && pr.sl != g.sl {
        return;
    }
    if cm & comp::NUMB_PATH != 0 && !req.get && pr.numb_path == 0 {
        return;
    }
    if cm & comp::FLOW_LABEL != 0 && pr.flow_label != g.flow_label {
        return;
    }
    if cm & comp::HOP_LIMIT != 0 && pr.hop_limit != g.hop_limit {
        return;
    }
    if cm & comp::TCLASS != 0 && pr.tclass != g.tclass {
        return;
    }
    // Scope (MGID byte 1, bits 3..0) 2 is link-local; wider scopes get HopLimit 0xFF.
    let hop_limit = if g.mgid.0[1] & 0x0F == 2 {
        g.hop_limit
    } else {
        0xFF
    };
    let rec = PathRecordRepr {
        dgid: g.mgid,
        dlid: g.mlid,
        tclass: g.tclass,
        reversible: false,
        numb_path: 1,
        pkey: g.pkey,
        sl: g.sl,
        qos_class: 0,
        flow_label: g.flow_label,
        hop_limit,
        mtu_selector: Selector::Exactly,
        mtu: g.mtu,
        rate_selector: Selector::Exactly,
        rate: g.rate,
        packet_life_selector: Selector::Exactly,
        packet_life: g.packet_life,
        ..*pr
    };
    out.extend_from_slice(rec.to_raw().as_bytes());
}

/// Bytes of one PathRecord in an answer.
pub const RECORD_LEN: usize = PATH_RECORD_LEN;

/// The snapshot's P_Key tables as a [`PKeyView`] (a port without a table: default partition),
/// with its partitions' SLs.
struct SnapPKeys<'a>(&'a super::snapshot::PKeyTables, &'a [(u16, u8)]);

impl PKeyView for SnapPKeys<'_> {
    fn pkeys(&self, node: NodeId, port: PortNum) -> Option<&[PKey]> {
        self.0.get(&(node, port)).map(Vec::as_slice)
    }
    fn partition_sl(&self, base: u16) -> Option<u8> {
        self.1.iter().find(|&&(k, _)| k == base).map(|&(_, sl)| sl)
    }
}

/// Runs `f` with the query context of `snap`; `None` if the snapshot has no routes (no paths).
fn with_ctx<R>(snap: &super::SaSnapshot, f: impl FnOnce(&PathCtx<'_>) -> R) -> Option<R> {
    let routes = snap.routes.as_ref()?;
    let pkeys = SnapPKeys(&snap.pkeys, &snap.partition_sls);
    let sl2vl = |n: NodeId, i: PortNum, o: PortNum| snap.known_qos(n)?.sl2vl(i, o);
    let ctx = PathCtx {
        config: PathConfig {
            subnet_prefix: snap.facts.subnet_prefix,
            subnet_timeout: snap.facts.subnet_timeout,
            qos: snap.facts.qos,
        },
        path_sl: routes.path_sl.as_ref(),
        policy: snap.qos_policy.as_ref(),
        sl2vl: Some(&sl2vl),
        pkeys: &pkeys,
        ..PathCtx::new(snap.path(), &snap.subnet, &routes.lfts)
    };
    Some(f(&ctx))
}

fn records(r: Result<Vec<u8>, Status>) -> super::Answer {
    match r {
        Ok(data) => super::Answer::Records {
            size: RECORD_LEN,
            data,
        },
        Err(s) => super::Answer::Status(s),
    }
}

/// The SA's PathRecord arm (attribute 0x0035): SubnAdmGet and SubnAdmGetTable answered from
/// the snapshot's [`PathIndex`]; any other method: method/attribute not supported (OpenSM
/// ERR 1F17). A snapshot without routes has no paths.
#[must_use]
pub fn handle(snap: &super::SaSnapshot, q: &super::SaQuery<'_>) -> super::Answer {
    use super::Answer;
    use ibmad::Method;
    if !matches!(q.method, Method::GET | Method::GET_TABLE) {
        return Answer::unsupported();
    }
    let Ok(record) = PathRecordRepr::parse(q.record) else {
        return Answer::Status(sa_status::REQ_INVALID);
    };
    let req = PathRequest {
        get: q.method == Method::GET,
        comp_mask: q.comp_mask,
        record,
        requester: q.meta.slid,
    };
    records(with_ctx(snap, |ctx| answer(ctx, &req)).unwrap_or(Ok(Vec::new())))
}

/// The SA's MultiPathRecord arm (attribute 0x003A): SubnAdmGetMulti answered with PathRecords
/// ([`answer_multi_into`]); any other method: method/attribute not supported (OpenSM ERR
/// 4513). A request announcing more GIDs than it carries: ERR_REQ_INVALID.
#[must_use]
pub fn handle_multi(snap: &super::SaSnapshot, q: &super::SaQuery<'_>) -> super::Answer {
    use super::Answer;
    use ibmad::sa_rec::multipath::{comp as mcomp, MultiPathRecordRepr};
    use ibmad::Method;
    if q.method != Method::GET_MULTI {
        return Answer::unsupported();
    }
    let both = mcomp::SGID_COUNT | mcomp::DGID_COUNT;
    if q.comp_mask & both != both {
        return Answer::Status(sa_status::REQ_INSUFFICIENT_COMPONENTS);
    }
    let Ok(record) = MultiPathRecordRepr::parse(q.record) else {
        return Answer::Status(sa_status::REQ_INVALID);
    };
    let req = MultiPathRequest {
        comp_mask: q.comp_mask,
        record,
        requester: q.meta.slid,
    };
    records(
        with_ctx(snap, |ctx| {
            let mut out = Vec::new();
            answer_multi_into(ctx, &req, &mut out).map(|()| out)
        })
        .unwrap_or(Ok(Vec::new())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::{active_port_info, Node};
    use ibmad::attr::SlToVl;
    use ibmad::NodeType;

    const PREFIX: u64 = 0xfe80_0000_0000_0000;

    /// Two switches A (LID 1) and B (LID 2) joined by A.3–B.3 and A.4–B.4; CAs h1 (LID 3) on
    /// A.1, h2 (LID 4) on A.2, h3 (LID 5) on B.1. Every port 4x QDR, MTU 4096, except A.3
    /// (MTU 2048) and B.3 (4x SDR). LFTs by hand: A→B over port 3, B→A over port 3.
    struct Fab {
        s: Subnet,
        lfts: Lfts,
        a: NodeId,
        b: NodeId,
        h: [NodeId; 3],
    }

    fn pi(mtu: u8, speed: u8) -> ibmad::attr::PortInfo {
        let mut p = active_port_info();
        p.set_mtu_cap(mtu);
        p.set_link_speed_active(speed);
        p
    }

    fn fab() -> Fab {
        fab_lmc(0)
    }

    fn fab_lmc(lmc: u8) -> Fab {
        let mut s = Subnet::new();
        let sw = |s: &mut Subnet, g: u64| {
            s.add_active_node(Node::new(Guid(g), NodeType::SWITCH, 4, "sw"))
        };
        let a = sw(&mut s, 0xA0);
        let b = sw(&mut s, 0xB0);
        let ca = |s: &mut Subnet, g: u64, d: &str| {
            s.add_active_node(Node::new(Guid(g), NodeType::CA, 1, d))
        };
        let h = [
            ca(&mut s, 0x100, "h1"),
            ca(&mut s, 0x200, "h2"),
            ca(&mut s, 0x300, "h3"),
        ];
        s.nodes[a.idx()].dr_path = ibmad::DrPath::local();
        for (x, y) in [
            ((a, 3), (b, 3)),
            ((a, 4), (b, 4)),
            ((a, 1), (h[0], 1)),
            ((a, 2), (h[1], 1)),
            ((b, 1), (h[2], 1)),
        ] {
            s.connect_active((x.0, PortNum(x.1)), (y.0, PortNum(y.1)));
        }
        for id in s.node_ids().collect::<Vec<_>>() {
            for p in 0..=s.node(id).num_ports {
                if let Some(port) = s.port_mut(id, PortNum(p)) {
                    if port.info.is_some() {
                        port.info = Some(pi(5, 4));
                    }
                }
            }
        }
        s.port_mut(a, PortNum(3)).unwrap().info = Some(pi(4, 4));
        s.port_mut(b, PortNum(3)).unwrap().info = Some(pi(5, 1));
        // LIDs: A 1, B 2, h1/h2/h3 with LMC ranges from 3 on.
        let step = 1u16 << lmc;
        s.port_mut(a, PortNum(0)).unwrap().lid = Lid(1);
        s.port_mut(b, PortNum(0)).unwrap().lid = Lid(2);
        for (i, &n) in h.iter().enumerate() {
            let p = s.port_mut(n, PortNum(1)).unwrap();
            p.lid = Lid(3 + step * i as u16);
            p.lmc = lmc;
        }
        let top = Lid(3 + step * 3 - 1);
        let mut lfts = Lfts::new(&s, top);
        lfts.set(a, Lid(1), Some(PortNum(0)));
        lfts.set(b, Lid(2), Some(PortNum(0)));
        lfts.set(a, Lid(2), Some(PortNum(3)));
        lfts.set(b, Lid(1), Some(PortNum(3)));
        for i in 0..3u16 {
            for l in 0..step {
                let lid = Lid(3 + step * i + l);
                let (pa, pb) = match i {
                    0 => (1, 3),
                    1 => (2, 3),
                    _ => (3, 1),
                };
                lfts.set(a, lid, Some(PortNum(pa)));
                lfts.set(b, lid, Some(PortNum(pb)));
            }
        }
        Fab { s, lfts, a, b, h }
    }

    fn query(
        f: &Fab,
        ix: &PathIndex,
        get: bool,
        cm: u64,
        rec: PathRecordRepr,
    ) -> Result<Vec<PathRecordRepr>, Status> {
        let ctx = PathCtx::new(ix, &f.s, &f.lfts);
        query_ctx(&ctx, get, cm, rec, Lid(3))
    }

    fn query_ctx(
        ctx: &PathCtx<'_>,
        get: bool,
        cm: u64,
        rec: PathRecordRepr,
        requester: Lid,
    ) -> Result<Vec<PathRecordRepr>, Status> {
        let req = PathRequest {
            get,
            comp_mask: cm,
            record: rec,
            requester,
        };
        let bytes = answer(ctx, &req)?;
        assert_eq!(bytes.len() % 64, 0);
        Ok(bytes
            .chunks(64)
            .map(|c| PathRecordRepr::parse(c).unwrap())
            .collect())
    }

    fn lids(s: u16, d: u16) -> PathRecordRepr {
        PathRecordRepr {
            slid: Lid(s),
            dlid: Lid(d),
            ..PathRecordRepr::default()
        }
    }

    const BY_LIDS: u64 = comp::SLID | comp::DLID;

    #[test]
    fn pair_by_lids_takes_the_smallest_mtu_and_rate_on_the_routed_path() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        let r = query(&f, &ix, true, BY_LIDS, lids(3, 5)).unwrap();
        assert_eq!(r.len(), 1);
        let r = r[0];
        assert_eq!((r.slid, r.dlid), (Lid(3), Lid(5)));
        assert_eq!(r.sgid, Gid::new(PREFIX, Guid(0x101)));
        assert_eq!(r.dgid, Gid::new(PREFIX, Guid(0x301)));
        // A.3 limits the MTU to 2048, B.3 the rate to 4x SDR.
        assert_eq!((r.mtu_selector, r.mtu), (Selector::Exactly, 4));
        assert_eq!((r.rate_selector, r.rate), (Selector::Exactly, 3));
        assert_eq!(
            (r.packet_life_selector, r.packet_life),
            (Selector::Exactly, 18)
        );
        assert_eq!(
            (r.pkey, r.sl, r.preference, r.numb_path),
            (PKey(0xFFFF), 0, 0, 0)
        );
        assert!(r.reversible);
        // Between h1 and h2, through A only: 4096 and 40 Gb/s.
        let r = query(&f, &ix, true, BY_LIDS, lids(3, 4)).unwrap()[0];
        assert_eq!((r.mtu, r.rate), (5, 7));
        // Loopback: PacketLifeTime 0.
        let r = query(&f, &ix, true, BY_LIDS, lids(5, 5)).unwrap()[0];
        assert_eq!((r.mtu, r.rate, r.packet_life), (5, 7, 0));
    }

    #[test]
    fn a_switch_source_starts_at_its_port_0() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        // A → h3: OpenSM looks at A's port 0, not its egress port A.3 (MTU 2048); B.3 is SDR.
        let r = query(&f, &ix, true, BY_LIDS, lids(1, 5)).unwrap()[0];
        assert_eq!((r.mtu, r.rate), (5, 3));
        // h3 → A: B.3 egress (SDR), A.3 ingress (2048), then A's port 0.
        let r = query(&f, &ix, true, BY_LIDS, lids(5, 1)).unwrap()[0];
        assert_eq!((r.mtu, r.rate), (4, 3));
        let r = query(&f, &ix, true, BY_LIDS, lids(1, 1)).unwrap()[0];
        assert_eq!((r.mtu, r.packet_life), (5, 0));
    }

    #[test]
    fn world_and_half_world_cover_every_ordered_pair() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        let all = query(&f, &ix, false, 0, PathRecordRepr::default()).unwrap();
        assert_eq!(all.len(), 25);
        let mut pairs: Vec<(u16, u16)> = all.iter().map(|r| (r.slid.0, r.dlid.0)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len(), 25);
        // Half world by SGID, as osmtest -f c asks (SGID | NumbPath 1).
        let rec = PathRecordRepr {
            sgid: Gid::new(PREFIX, Guid(0x201)),
            numb_path: 1,
            ..PathRecordRepr::default()
        };
        let half = query(&f, &ix, false, comp::SGID | comp::NUMB_PATH, rec).unwrap();
        assert_eq!(half.len(), 5);
        assert!(half.iter().all(|r| r.slid == Lid(4) && r.sgid == rec.sgid));
        // Half world by DLID, and a Get of the world: one record.
        let half = query(&f, &ix, false, comp::DLID, lids(0, 2)).unwrap();
        assert_eq!(half.len(), 5);
        assert_eq!(
            query(&f, &ix, true, 0, PathRecordRepr::default())
                .unwrap()
                .len(),
            1
        );
        // NumbPath 0 in a GetTable: nothing.
        let none = query(&f, &ix, false, comp::NUMB_PATH, PathRecordRepr::default()).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn endpoint_errors() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        // SGID of h1 with SLID of h2: the pair disagrees.
        let mut rec = lids(4, 5);
        rec.sgid = Gid::new(PREFIX, Guid(0x101));
        assert_eq!(
            query(&f, &ix, true, BY_LIDS | comp::SGID, rec),
            Err(sa_status::REQ_INVALID)
        );
        let mut rec = lids(3, 4);
        rec.dgid = Gid::new(PREFIX, Guid(0x301));
        assert_eq!(
            query(&f, &ix, true, BY_LIDS | comp::DGID, rec),
            Err(sa_status::REQ_INVALID)
        );
        // Unknown GUID, foreign prefix: invalid GID; link-local prefix is accepted.
        rec.dgid = Gid::new(PREFIX, Guid(0x999));
        assert_eq!(
            query(&f, &ix, true, comp::DGID, rec),
            Err(sa_status::REQ_INVALID_GID)
        );
        rec.dgid = Gid::new(0xfec0_0000_0000_0000, Guid(0x301));
        assert_eq!(
            query(&f, &ix, true, comp::DGID, rec),
            Err(sa_status::REQ_INVALID_GID)
        );
        rec.dgid = Gid::new(0xfe80_0000_0000_0000, Guid(0x301));
        assert_eq!(query(&f, &ix, true, comp::DGID, rec).unwrap().len(), 1);
        // Unknown LID: no records.
        assert!(query(&f, &ix, false, BY_LIDS, lids(3, 77))
            .unwrap()
            .is_empty());
        // One ServiceID half: insufficient components.
        assert_eq!(
            query(&f, &ix, true, comp::SERVICE_ID_MSB, rec),
            Err(sa_status::REQ_INSUFFICIENT_COMPONENTS)
        );
        assert!(query(&f, &ix, true, comp::SERVICE_ID | BY_LIDS, lids(3, 5)).is_ok());
        // Invalid MTU / rate codes with their selectors.
        let mut bad = lids(3, 5);
        bad.mtu = 6;
        assert_eq!(
            query(&f, &ix, true, BY_LIDS | comp::MTU | comp::MTU_SELECTOR, bad),
            Err(sa_status::REQ_INVALID)
        );
        // ... but a value without its selector is ignored.
        assert_eq!(
            query(&f, &ix, true, BY_LIDS | comp::MTU, bad)
                .unwrap()
                .len(),
            1
        );
        bad.rate = 1;
        assert_eq!(
            query(
                &f,
                &ix,
                true,
                BY_LIDS | comp::RATE | comp::RATE_SELECTOR,
                bad
            ),
            Err(sa_status::REQ_INVALID)
        );
        // A requester the SA does not know.
        let ctx = PathCtx::new(&ix, &f.s, &f.lfts);
        assert_eq!(
            query_ctx(&ctx, true, BY_LIDS, lids(3, 5), Lid(99)),
            Err(sa_status::REQ_INVALID)
        );
    }

    fn sel(cm_extra: u64, f: impl Fn(&mut PathRecordRepr)) -> Option<PathRecordRepr> {
        let fb = fab();
        let ix = PathIndex::build(&fb.s, &fb.lfts, None);
        let mut rec = lids(3, 5);
        f(&mut rec);
        let r = query(&fb, &ix, true, BY_LIDS | cm_extra, rec).unwrap();
        r.first().copied()
    }

    #[test]
    fn mtu_rate_and_lifetime_selectors() {
        const MTU: u64 = comp::MTU | comp::MTU_SELECTOR;
        const RATE: u64 = comp::RATE | comp::RATE_SELECTOR;
        const LIFE: u64 = comp::PACKET_LIFE | comp::PACKET_LIFE_SELECTOR;
        let with = |s: Selector, v: u8| {
            move |r: &mut PathRecordRepr| {
                r.mtu_selector = s;
                r.mtu = v;
                r.rate_selector = s;
                r.rate = v;
                r.packet_life_selector = s;
                r.packet_life = v;
            }
        };
        // The path offers MTU 2048 (4), 10 Gb/s (3), lifetime 18.
        assert_eq!(
            sel(MTU, with(Selector::GreaterThan, 3)).map(|r| r.mtu),
            Some(4)
        );
        assert!(sel(MTU, with(Selector::GreaterThan, 4)).is_none());
        assert_eq!(
            sel(MTU, with(Selector::LessThan, 4)).map(|r| r.mtu),
            Some(3)
        );
        assert_eq!(
            sel(MTU, with(Selector::LessThan, 5)).map(|r| r.mtu),
            Some(4)
        );
        assert!(sel(MTU, with(Selector::LessThan, 1)).is_none());
        assert_eq!(sel(MTU, with(Selector::Exactly, 2)).map(|r| r.mtu), Some(2));
        assert!(sel(MTU, with(Selector::Exactly, 5)).is_none());
        assert_eq!(sel(MTU, with(Selector::Best, 1)).map(|r| r.mtu), Some(4));
        // Rates: exactly means exactly; less than 10 Gb/s gives 5 Gb/s (code 5).
        assert_eq!(
            sel(RATE, with(Selector::Exactly, 3)).map(|r| r.rate),
            Some(3)
        );
        assert!(sel(RATE, with(Selector::Exactly, 2)).is_none());
        assert_eq!(
            sel(RATE, with(Selector::LessThan, 3)).map(|r| r.rate),
            Some(5)
        );
        assert_eq!(
            sel(RATE, with(Selector::GreaterThan, 5)).map(|r| r.rate),
            Some(3)
        );
        assert!(sel(RATE, with(Selector::GreaterThan, 7)).is_none());
        // 30 Gb/s (code 4) ranks above 10: less than it keeps 10.
        assert_eq!(
            sel(RATE, with(Selector::LessThan, 4)).map(|r| r.rate),
            Some(3)
        );
        // Packet lifetime.
        assert_eq!(
            sel(LIFE, with(Selector::LessThan, 10)).map(|r| r.packet_life),
            Some(9)
        );
        assert_eq!(
            sel(LIFE, with(Selector::Exactly, 12)).map(|r| r.packet_life),
            Some(12)
        );
        assert!(sel(LIFE, with(Selector::GreaterThan, 18)).is_none());
        assert_eq!(
            sel(LIFE, with(Selector::Best, 0)).map(|r| r.packet_life),
            Some(18)
        );
    }

    #[test]
    fn lmc_paths_in_opensm_preference_order() {
        let f = fab_lmc(1);
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        // h1 = LIDs 3-4, h3 = LIDs 7-8.
        let rec = PathRecordRepr {
            sgid: Gid::new(PREFIX, Guid(0x101)),
            dgid: Gid::new(PREFIX, Guid(0x301)),
            ..PathRecordRepr::default()
        };
        let cm = comp::SGID | comp::DGID;
        let r = query(&f, &ix, false, cm, rec).unwrap();
        let got: Vec<(u16, u16, u8)> = r
            .iter()
            .map(|r| (r.slid.0, r.dlid.0, r.preference))
            .collect();
        assert_eq!(got, vec![(3, 7, 0), (4, 8, 0), (3, 8, 2), (4, 7, 2)]);
        // NumbPath limits, Get takes one.
        let two = PathRecordRepr {
            numb_path: 3,
            ..rec
        };
        assert_eq!(
            query(&f, &ix, false, cm | comp::NUMB_PATH, two)
                .unwrap()
                .len(),
            3
        );
        assert_eq!(query(&f, &ix, true, cm, rec).unwrap().len(), 1);
        // A non-base LID resolves to the same port.
        let r = query(&f, &ix, false, BY_LIDS, lids(4, 8)).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].sgid, Gid::new(PREFIX, Guid(0x101)));
    }

    #[test]
    fn broken_routes_give_no_path_and_one_way_paths_are_not_reversible() {
        let mut f = fab();
        // B sends LID 3 (h1) back to... B.1 (h3): a dead end at a CA.
        f.lfts.set(f.b, Lid(3), Some(PortNum(1)));
        // A and B send LID 4 (h2) to each other: a loop.
        f.lfts.set(f.a, Lid(4), Some(PortNum(3)));
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        assert!(query(&f, &ix, true, BY_LIDS, lids(5, 4))
            .unwrap()
            .is_empty());
        assert!(query(&f, &ix, true, BY_LIDS, lids(3, 4))
            .unwrap()
            .is_empty());
        assert!(query(&f, &ix, true, BY_LIDS, lids(5, 3))
            .unwrap()
            .is_empty());
        // h1 → h3 still works, but h3 → h1 does not: not reversible.
        let r = query(&f, &ix, true, BY_LIDS, lids(3, 5)).unwrap()[0];
        assert!(!r.reversible);
        let want_rev = PathRecordRepr {
            reversible: true,
            ..lids(3, 5)
        };
        assert!(query(&f, &ix, true, BY_LIDS | comp::REVERSIBLE, want_rev)
            .unwrap()
            .is_empty());
        // Reversible = 0 in the mask is "don't care".
        assert_eq!(
            query(&f, &ix, true, BY_LIDS | comp::REVERSIBLE, lids(3, 5))
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn the_routing_engine_decides_the_sl() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        let mut sls = PathSls::per_lid_pair(Lid(5));
        assert!(sls.set_pair(Lid(3), Lid(5), 6));
        let mut ctx = PathCtx::new(&ix, &f.s, &f.lfts);
        ctx.path_sl = Some(&sls);
        let r = query_ctx(&ctx, true, BY_LIDS, lids(3, 5), Lid(3)).unwrap()[0];
        assert_eq!(r.sl, 6);
        // A requested SL the engine does not give: refused; the right one: answered.
        let mut rec = lids(3, 5);
        rec.sl = 2;
        assert!(query_ctx(&ctx, true, BY_LIDS | comp::SL, rec, Lid(3))
            .unwrap()
            .is_empty());
        rec.sl = 6;
        assert_eq!(
            query_ctx(&ctx, true, BY_LIDS | comp::SL, rec, Lid(3))
                .unwrap()
                .len(),
            1
        );
        // Without the engine's SLs a requested SL is taken as asked.
        let ctx = PathCtx::new(&ix, &f.s, &f.lfts);
        rec.sl = 2;
        assert_eq!(
            query_ctx(&ctx, true, BY_LIDS | comp::SL, rec, Lid(3)).unwrap()[0].sl,
            2
        );
    }

    #[test]
    fn qos_policy_levels_apply() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        let text = "qos-levels\n qos-level\n name: DEFAULT\n sl: 0\n end-qos-level\n qos-level\n name: slow\n sl: 3\n mtu-limit: 2\n rate-limit: 2\n packet-life: 12\n end-qos-level\nend-qos-levels\nqos-match-rules\n qos-match-rule\n service-id: 0x10\n qos-level-name: slow\n end-qos-match-rule\nend-qos-match-rules\n";
        let policy = QosPolicy::parse(text, "qos-policy.conf").unwrap();
        let mut ctx = PathCtx::new(&ix, &f.s, &f.lfts);
        ctx.policy = Some(&policy);
        ctx.config.qos = true;
        let mut rec = lids(3, 5);
        rec.service_id = 0x10;
        let r = query_ctx(&ctx, true, BY_LIDS | comp::SERVICE_ID, rec, Lid(3)).unwrap()[0];
        assert_eq!((r.sl, r.mtu, r.rate, r.packet_life), (3, 2, 2, 12));
        // Another service: the default level.
        rec.service_id = 0x11;
        let r = query_ctx(&ctx, true, BY_LIDS | comp::SERVICE_ID, rec, Lid(3)).unwrap()[0];
        assert_eq!((r.sl, r.mtu, r.rate, r.packet_life), (0, 4, 3, 18));
        // A requested SL other than the level's: refused.
        rec.service_id = 0x10;
        rec.sl = 1;
        assert!(query_ctx(
            &ctx,
            true,
            BY_LIDS | comp::SERVICE_ID | comp::SL,
            rec,
            Lid(3)
        )
        .unwrap()
        .is_empty());
        // With qos off the policy is not looked at.
        ctx.config.qos = false;
        let r = query_ctx(&ctx, true, BY_LIDS | comp::SERVICE_ID, rec, Lid(3)).unwrap()[0];
        assert_eq!((r.sl, r.mtu), (0, 4));
    }

    #[test]
    fn sls_mapped_to_vl15_are_refused() {
        let f = fab();
        // Switch B maps SL 0 to VL 15 from its port 3 to port 1 (toward h3).
        let (bnode, a) = (f.b, f.a);
        let lookup = move |n: NodeId, i: PortNum, o: PortNum| -> Option<SlToVl> {
            let mut t = SlToVl::default();
            if n == bnode && i == PortNum(3) && o == PortNum(1) {
                t.set_vl(0, 15);
                t.set_vl(1, 15);
            }
            let _ = a;
            Some(t)
        };
        let ix = PathIndex::build(&f.s, &f.lfts, Some(&lookup));
        let mut ctx = PathCtx::new(&ix, &f.s, &f.lfts);
        ctx.sl2vl = Some(&lookup);
        ctx.config.qos = true;
        // No SL asked: the partition's SL 0 is dropped on the way, so no path (OpenSM 1F24).
        assert!(query_ctx(&ctx, true, BY_LIDS, lids(3, 5), Lid(3))
            .unwrap()
            .is_empty());
        // An SL that gets through is answered; a dropped one is not.
        let mut rec = lids(3, 5);
        rec.sl = 2;
        assert_eq!(
            query_ctx(&ctx, true, BY_LIDS | comp::SL, rec, Lid(3)).unwrap()[0].sl,
            2
        );
        rec.sl = 1;
        assert!(query_ctx(&ctx, true, BY_LIDS | comp::SL, rec, Lid(3))
            .unwrap()
            .is_empty());
        // The reverse direction does not cross B.3 → B.1: SL 0 is fine, but not reversible.
        let r = query_ctx(&ctx, true, BY_LIDS, lids(5, 3), Lid(3)).unwrap()[0];
        assert_eq!(r.sl, 0);
        assert!(!r.reversible);
        // A path that avoids B: untouched.
        assert_eq!(
            query_ctx(&ctx, true, BY_LIDS, lids(3, 4), Lid(3)).unwrap()[0].sl,
            0
        );
        // With qos off the tables are not looked at.
        ctx.config.qos = false;
        assert_eq!(
            query_ctx(&ctx, true, BY_LIDS, lids(3, 5), Lid(3))
                .unwrap()
                .len(),
            1
        );
    }

    struct Parts {
        /// (node, pkeys) — every other port: default partition.
        tables: Vec<(NodeId, Vec<PKey>)>,
    }

    impl PKeyView for Parts {
        fn pkeys(&self, node: NodeId, _: PortNum) -> Option<&[PKey]> {
            self.tables
                .iter()
                .find(|(n, _)| *n == node)
                .map(|(_, k)| &k[..])
        }
        fn partition_sl(&self, base: u16) -> Option<u8> {
            (base == 0x0001).then_some(5)
        }
    }

    #[test]
    fn partitions_limit_paths() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        // h1: full member of 0x0001; h2: limited member of 0x0001; h3: default only.
        let parts = Parts {
            tables: vec![
                (f.h[0], vec![PKey(0x8001), PKey(0x7FFF)]),
                (f.h[1], vec![PKey(0x0001)]),
                (f.h[2], vec![PKey(0xFFFF)]),
            ],
        };
        let mut ctx = PathCtx::new(&ix, &f.s, &f.lfts);
        ctx.pkeys = &parts;
        // h1 ↔ h2 share 0x0001 (one full member): P_Key h1's entry, the partition's SL.
        let r = query_ctx(&ctx, true, BY_LIDS, lids(3, 4), Lid(3)).unwrap()[0];
        assert_eq!((r.pkey, r.sl), (PKey(0x8001), 5));
        // h2 ↔ h3 share nothing; h1 ↔ h3 share the default partition (h1 limited, h3 full).
        assert!(query_ctx(&ctx, false, BY_LIDS, lids(4, 5), Lid(3))
            .unwrap()
            .is_empty());
        let r = query_ctx(&ctx, true, BY_LIDS, lids(3, 5), Lid(3)).unwrap()[0];
        assert_eq!((r.pkey, r.sl), (PKey(0x7FFF), 0));
        // The requester must share a P_Key with both ends: h2 asking for h1 → h3.
        assert!(query_ctx(&ctx, true, BY_LIDS, lids(3, 5), Lid(4))
            .unwrap()
            .is_empty());
        // A P_Key asked for must be held by both ends.
        let mut rec = lids(3, 4);
        rec.pkey = PKey(0x8001);
        assert_eq!(
            query_ctx(&ctx, true, BY_LIDS | comp::PKEY, rec, Lid(3)).unwrap()[0].pkey,
            PKey(0x8001)
        );
        rec.pkey = PKey(0xFFFF);
        assert!(query_ctx(&ctx, true, BY_LIDS | comp::PKEY, rec, Lid(3))
            .unwrap()
            .is_empty());
        // The world from h2's point of view: only h1 and h2 themselves... and the switches
        // (default partition, full) do not share with h2 either.
        let world = query_ctx(&ctx, false, 0, PathRecordRepr::default(), Lid(4)).unwrap();
        let mut got: Vec<(u16, u16)> = world.iter().map(|r| (r.slid.0, r.dlid.0)).collect();
        got.sort_unstable();
        assert_eq!(got, vec![(3, 3), (3, 4), (4, 3)]);
    }

    struct OneGroup(McPathGroup);

    impl McGroupView for OneGroup {
        fn group(&self, mgid: &Gid) -> Option<McPathGroup> {
            (*mgid == self.0.mgid).then_some(self.0)
        }
        fn is_member(&self, _: &Gid, guid: Guid) -> bool {
            guid == Guid(0x101)
        }
    }

    #[test]
    fn multicast_destinations_answer_from_the_group() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        let mut mgid = [0u8; 16];
        mgid[..4].copy_from_slice(&[0xff, 0x12, 0x40, 0x1b]);
        mgid[4..6].copy_from_slice(&[0xff, 0xff]);
        mgid[12..].copy_from_slice(&[0xff; 4]);
        let mgid = Gid(mgid);
        let rec = PathRecordRepr {
            sgid: Gid::new(PREFIX, Guid(0x101)),
            dgid: mgid,
            ..PathRecordRepr::default()
        };
        let cm = comp::SGID | comp::DGID;
        // No groups yet: no records.
        assert!(query(&f, &ix, true, cm, rec).unwrap().is_empty());
        let g = OneGroup(McPathGroup {
            mgid,
            mlid: Lid(0xC000),
            pkey: PKey(0xFFFF),
            sl: 1,
            flow_label: 0x12345,
            hop_limit: 0,
            tclass: 3,
            mtu: 4,
            rate: 3,
            packet_life: 18,
        });
        let mut ctx = PathCtx::new(&ix, &f.s, &f.lfts);
        ctx.groups = &g;
        let r = query_ctx(&ctx, true, cm, rec, Lid(3)).unwrap();
        assert_eq!(r.len(), 1);
        let r = r[0];
        assert_eq!(
            (r.dlid, r.dgid, r.sgid, r.pkey, r.sl, r.tclass),
            (Lid(0xC000), mgid, rec.sgid, PKey(0xFFFF), 1, 3)
        );
        assert_eq!(
            (r.mtu_selector, r.mtu, r.rate, r.packet_life, r.numb_path),
            (Selector::Exactly, 4, 3, 18, 1)
        );
        assert_eq!((r.flow_label, r.hop_limit), (0x12345, 0));
        // A non-member SGID, a wrong DLID: nothing.
        let other = PathRecordRepr {
            sgid: Gid::new(PREFIX, Guid(0x201)),
            ..rec
        };
        assert!(query_ctx(&ctx, true, cm, other, Lid(3)).unwrap().is_empty());
        let wrong = PathRecordRepr {
            dlid: Lid(0xC001),
            ..rec
        };
        assert!(query_ctx(&ctx, true, cm | comp::DLID, wrong, Lid(3))
            .unwrap()
            .is_empty());
    }

    /// The whole SA: a PathRecord GetTable and Get through [`crate::sa::Sa::handle_mad`],
    /// answered from a snapshot with routes; other methods are not supported.
    #[test]
    fn through_the_sa_front_door() {
        use crate::routing::Routes;
        use crate::sa::snapshot::{ConfigFacts, SaSnapshot, SmEntry, SnapshotInput};
        use crate::sa::{Sa, SaConfig, Serving};
        use ibmad::{
            gmp::Repr as GmpRepr, MadMeta, Method, MgmtClass, QKey, SaAttrId, SaRepr, SmState, Time,
        };
        let f = fab();
        let routes = std::sync::Arc::new(Routes::new(f.lfts.clone()));
        let none = |_| None;
        let snap = SaSnapshot::build(&SnapshotInput {
            generation: 1,
            subnet: &f.s,
            routes: Some(&routes),
            known_qos: &none,
            own: SmEntry {
                guid: Guid(0xA0),
                lid: Lid(1),
                sm_key: 1,
                act_count: 0,
                priority: 0,
                state: SmState::MASTER,
            },
            others: &[],
            facts: ConfigFacts {
                subnet_prefix: PREFIX,
                subnet_timeout: 18,
                ..ConfigFacts::default()
            },
            qos_policy: None,
        });
        let mut sa = Sa::with_config(SaConfig {
            transport_rmpp: true,
            max_mad_len: 1 << 20,
            ..SaConfig::default()
        });
        assert!(sa.set_snapshot(std::sync::Arc::new(snap)));
        sa.set_serving(Serving {
            master: true,
            up: true,
        });
        let meta = MadMeta {
            qp: 1,
            qkey: QKey::GSI,
            ..MadMeta::gmp(PortNum(1), Lid(3), Lid(1))
        };
        let mut ask_attr = |method: Method, attr: SaAttrId, cm: u64, rec: &[u8]| {
            let r = SaRepr {
                header: GmpRepr::request(MgmtClass::SUBN_ADM, method, attr.0, 0, 7),
                rmpp: ibmad::RmppRepr::Inactive,
                sm_key: 0,
                attr_offset: 0,
                comp_mask: cm,
            };
            let mut m = r.to_mad();
            m[56..56 + rec.len()].copy_from_slice(rec);
            sa.handle_mad(Time::ZERO, &meta, &m);
            let out = sa.poll_transmit(Time::ZERO).unwrap();
            // An RMPP answer is as long as its records; the parser wants a whole MAD.
            let mut whole = out.mad.clone();
            whole.resize(whole.len().max(256), 0);
            let a = SaRepr::parse_bytes(&whole).unwrap();
            (a, out.mad)
        };
        let mut ask = |method: Method, cm: u64, rec: PathRecordRepr| {
            ask_attr(method, SaAttrId::PATH_RECORD, cm, rec.to_raw().as_bytes())
        };
        // GetTable of the world: 25 records of 64 bytes, AttributeOffset 8 words.
        let (a, mad) = ask(Method::GET_TABLE, 0, PathRecordRepr::default());
        assert_eq!(
            (a.header.method, a.header.status, a.attr_offset),
            (Method::GET_TABLE_RESP, Status::OK, 8)
        );
        assert_eq!(mad.len(), 56 + 25 * 64);
        // Get by LIDs.
        let (a, mad) = ask(Method::GET, BY_LIDS, lids(3, 5));
        assert_eq!(
            (a.header.method, a.header.status),
            (Method::GET_RESP, Status::OK)
        );
        let r = PathRecordRepr::parse(&mad[56..]).unwrap();
        assert_eq!((r.slid, r.dlid, r.mtu, r.rate), (Lid(3), Lid(5), 4, 3));
        // A Get with no path: ERR_NO_RECORDS; a bad request: its status.
        let (a, _) = ask(Method::GET, BY_LIDS, lids(3, 77));
        assert_eq!(a.header.status, sa_status::NO_RECORDS);
        let (a, _) = ask(Method::GET, comp::SERVICE_ID_LSB, lids(3, 5));
        assert_eq!(a.header.status, sa_status::REQ_INSUFFICIENT_COMPONENTS);
        // Set and Delete: not supported.
        for m in [Method::SET, Method::DELETE] {
            let (a, _) = ask(m, BY_LIDS, lids(3, 5));
            assert_eq!(a.header.status, Status::METHOD_ATTR_NOT_SUPPORTED);
        }
        // MultiPathRecord: GetMulti from h1 to h3 is answered as PathRecords (GetMultiResp,
        // attribute PathRecord, RMPP); any other method is not supported.
        use ibmad::sa_rec::multipath::{comp as mp, MultiPathRecordRepr};
        let mpr = MultiPathRecordRepr {
            sgids: vec![Gid::new(PREFIX, Guid(0x101))],
            dgids: vec![Gid::new(PREFIX, Guid(0x301))],
            ..MultiPathRecordRepr::default()
        };
        let mut bytes = vec![0u8; mpr.buffer_len()];
        mpr.emit(&mut bytes).unwrap();
        let counts = mp::SGID_COUNT | mp::DGID_COUNT;
        let (a, mad) = ask_attr(
            Method::GET_MULTI,
            SaAttrId::MULTI_PATH_RECORD,
            counts,
            &bytes,
        );
        assert_eq!(
            (
                a.header.method,
                a.header.status,
                a.header.sa_attr(),
                a.attr_offset
            ),
            (Method::GET_MULTI_RESP, Status::OK, SaAttrId::PATH_RECORD, 8)
        );
        assert_eq!(mad.len(), 56 + 64);
        let r = PathRecordRepr::parse(&mad[56..]).unwrap();
        assert_eq!((r.slid, r.dlid, r.reversible), (Lid(3), Lid(5), true));
        let (a, _) = ask_attr(
            Method::GET_MULTI,
            SaAttrId::MULTI_PATH_RECORD,
            mp::SGID_COUNT,
            &bytes,
        );
        assert_eq!(a.header.status, sa_status::REQ_INSUFFICIENT_COMPONENTS);
        let (a, _) = ask_attr(
            Method::GET_TABLE,
            SaAttrId::MULTI_PATH_RECORD,
            counts,
            &bytes,
        );
        assert_eq!(a.header.status, Status::METHOD_ATTR_NOT_SUPPORTED);
    }

    fn multi(
        f: &Fab,
        ix: &PathIndex,
        cm: u64,
        sgids: &[u64],
        dgids: &[u64],
        path: PathRecordRepr,
    ) -> Result<Vec<PathRecordRepr>, Status> {
        use ibmad::sa_rec::multipath::MultiPathRecordRepr;
        let ctx = PathCtx::new(ix, &f.s, &f.lfts);
        let gid = |g: &u64| Gid::new(PREFIX, Guid(*g));
        let req = MultiPathRequest {
            comp_mask: cm,
            record: MultiPathRecordRepr {
                path,
                independence: 0,
                sgids: sgids.iter().map(gid).collect(),
                dgids: dgids.iter().map(gid).collect(),
            },
            requester: Lid(3),
        };
        let mut out = Vec::new();
        answer_multi_into(&ctx, &req, &mut out)?;
        Ok(out
            .chunks(64)
            .map(|c| PathRecordRepr::parse(c).unwrap())
            .collect())
    }

    use ibmad::sa_rec::multipath::comp as mp;
    const COUNTS: u64 = mp::SGID_COUNT | mp::DGID_COUNT;

    #[test]
    fn multipath_request_errors() {
        let f = fab();
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        let d = PathRecordRepr::default();
        // S/DGIDCount are required.
        for cm in [0, mp::SGID_COUNT, mp::DGID_COUNT] {
            assert_eq!(
                multi(&f, &ix, cm, &[0x101], &[0x301], d),
                Err(sa_status::REQ_INSUFFICIENT_COMPONENTS)
            );
        }
        // No source or no destination.
        assert_eq!(
            multi(&f, &ix, COUNTS, &[], &[0x301], d),
            Err(sa_status::REQ_INVALID)
        );
        assert_eq!(
            multi(&f, &ix, COUNTS, &[0x101], &[], d),
            Err(sa_status::REQ_INVALID)
        );
        // Unknown GUID; multicast source or destination (osmtest's IPoIB MGID cases).
        assert_eq!(
            multi(&f, &ix, COUNTS, &[0x101], &[0x999], d),
            Err(sa_status::REQ_INVALID_GID)
        );
        let ctx = PathCtx::new(&ix, &f.s, &f.lfts);
        let mgid = Gid([
            0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        ]);
        let h1 = Gid::new(PREFIX, Guid(0x101));
        for (s, dst) in [(h1, mgid), (mgid, h1)] {
            let req = MultiPathRequest {
                comp_mask: COUNTS,
                record: ibmad::sa_rec::multipath::MultiPathRecordRepr {
                    sgids: vec![s],
                    dgids: vec![dst],
                    ..Default::default()
                },
                requester: Lid(3),
            };
            assert_eq!(
                answer_multi_into(&ctx, &req, &mut Vec::new()),
                Err(sa_status::REQ_INVALID_GID)
            );
        }
        // One ServiceID half; an invalid MTU with its selector.
        assert_eq!(
            multi(&f, &ix, COUNTS | mp::SERVICE_ID_MSB, &[0x101], &[0x301], d),
            Err(sa_status::REQ_INSUFFICIENT_COMPONENTS)
        );
        let bad = PathRecordRepr { mtu: 7, ..d };
        assert_eq!(
            multi(
                &f,
                &ix,
                COUNTS | mp::MTU | mp::MTU_SELECTOR,
                &[0x101],
                &[0x301],
                bad
            ),
            Err(sa_status::REQ_INVALID)
        );
    }

    #[test]
    fn multipath_pairs_are_the_pathrecords_of_each_pair() {
        let f = fab_lmc(1);
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        let d = PathRecordRepr::default();
        let pr = |s: u64, t: u64| {
            let rec = PathRecordRepr {
                sgid: Gid::new(PREFIX, Guid(s)),
                dgid: Gid::new(PREFIX, Guid(t)),
                ..d
            };
            query(&f, &ix, false, comp::SGID | comp::DGID, rec).unwrap()
        };
        // One pair: exactly the PathRecord GetTable by GIDs (4 LID pairs with LMC 1).
        let r = multi(&f, &ix, COUNTS, &[0x101], &[0x301], d).unwrap();
        assert_eq!(r, pr(0x101, 0x301));
        // Pairs in request order; NumbPath cuts across pairs.
        let r = multi(&f, &ix, COUNTS, &[0x201, 0x101], &[0x301], d).unwrap();
        let mut want = pr(0x201, 0x301);
        want.extend(pr(0x101, 0x301));
        assert_eq!(r, want);
        let five = PathRecordRepr { numb_path: 5, ..d };
        let r = multi(
            &f,
            &ix,
            COUNTS | mp::NUMB_PATH,
            &[0x201, 0x101],
            &[0x301],
            five,
        )
        .unwrap();
        assert_eq!(r, want[..5]);
        let zero = PathRecordRepr { numb_path: 0, ..d };
        let r = multi(&f, &ix, COUNTS | mp::NUMB_PATH, &[0x101], &[0x301], zero).unwrap();
        assert!(r.is_empty());
        // Shared components constrain as in a PathRecord: SL 3 is given back, MTU > 4096 none.
        let sl3 = PathRecordRepr { sl: 3, ..d };
        let r = multi(&f, &ix, COUNTS | mp::SL, &[0x101], &[0x301], sl3).unwrap();
        assert!(r.len() == 4 && r.iter().all(|p| p.sl == 3));
        let big = PathRecordRepr {
            mtu: 5,
            mtu_selector: Selector::GreaterThan,
            ..d
        };
        let cm = COUNTS | mp::MTU | mp::MTU_SELECTOR;
        assert!(multi(&f, &ix, cm, &[0x101], &[0x301], big)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn multipath_apm_takes_one_path_per_source_on_a_diagonal() {
        let f = fab_lmc(1);
        let ix = PathIndex::build(&f.s, &f.lfts, None);
        let two = PathRecordRepr {
            numb_path: 2,
            ..PathRecordRepr::default()
        };
        // h1 = LIDs 3-4, h2 = 5-6, h3 = 7-8. Sources sorted by GUID (h1, h2); base offset
        // hash(3, 7, lmc 1) = ((1 << 4) | 3) % 103 = 19: h1 starts at LID offset 1, h2 at 0.
        let r = multi(
            &f,
            &ix,
            COUNTS | mp::NUMB_PATH,
            &[0x201, 0x101],
            &[0x301, 0x301],
            two,
        )
        .unwrap();
        let got: Vec<(u16, u16, u8)> = r
            .iter()
            .map(|p| (p.slid.0, p.dlid.0, p.preference))
            .collect();
        assert_eq!(got, [(4, 8, 0), (5, 7, 0)]);
        // osmtest -f a: its own port four times — two loopback paths.
        let r = multi(
            &f,
            &ix,
            COUNTS | mp::NUMB_PATH,
            &[0x101; 2],
            &[0x101; 2],
            two,
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|p| p.sgid == p.dgid && p.packet_life == 0));
    }
}

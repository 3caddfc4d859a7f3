//! QoS programming as a diff (STYLE P7): the SL-to-VL and VLArbitration tables every port
//! should hold ([`desired_sl2vl`], [`desired_vlarb`]), what the SM knows each node to hold
//! ([`KnownQos`], filled from Set responses), and the Sets that turn one into the other
//! ([`plan`]). Pure functions over values; [`crate::program`] turns [`QosSet`]s into requests.
//!
//! What is desired where (OpenSM `osm_qos.c`, with the differences named):
//! - **Which ports.** Switch external ports that are not Down (their SL-to-VL tables for every
//!   input port 0..=NumPorts), switch port 0 when the switch has an enhanced port 0, and CA and
//!   router ports linked to a discovered node. SL-to-VL only where the port (on a switch, port
//!   0) reports CapabilityMask.IsSLMappingSupported; VLArbitration only where VLCap > 1, one
//!   block per 32 entries of VLArbitrationLowCap / HighCap (blocks 1–2 low, 3–4 high).
//! - **Which values.** A table the routing engine set ([`crate::routing::vl`]) wins;
//!   otherwise, with `qos` on, the port's class ([`super::PortClass`]); otherwise nothing is
//!   programmed. Column 0 of a switch (output port 0) takes the `qos_sw0` table from every
//!   input (OpenSM writes it with the `qos_swe` table from inputs ≥ 1 and `qos_sw0` from port 0).
//! - **Masking.** Every VL except 15 is masked to the output port's OperationalVLs as the SM
//!   programs them ([`crate::routing::vl::link_op_vls`]) with OpenSM's mask
//!   `2^(OperVLs−1) − 1` (OpenSM masks with the OperVLs the port held before the sweep's
//!   PortInfo Sets, so a fresh fabric needs a second sweep to settle; we do not).
//! - **How few SMPs.** Where SwitchInfo.OptimizedSLtoVLMappingProgramming is set and
//!   `use_optimized_slvl` is on, a switch's SL-to-VL tables go out as one all-inputs /
//!   all-outputs Set (AttributeModifier 0x30000) plus one all-inputs Set (0x20000 | out) per
//!   output port whose tables differ from that — OpenSM's form — or, when fewer, one
//!   all-inputs Set per output port that needs one; per-pair Sets ([`modifier::sl2vl`]) remain for
//!   output ports whose tables differ between inputs (engine tables). Without the capability:
//!   one Set per (input, output) pair that differs from what the switch holds.
//!
//! Nothing is sent where the node is known to hold the desired table already: a table is
//! known once a Set response carrying it arrives ([`KnownQos::on_ack`]), and unknown before.

use ibmad::attr::modifier::{self, Sl2VlMod, VlArbMod, SL2VL_ALL_PORTS};
use ibmad::attr::{PortInfo, SlToVl, VlArbEntry, VlArbEntryRepr, VlArbTable};
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{NodeType, PortNum, PortState, SmpAttrId};

use super::{PortClass, QosConfig};
use crate::routing::vl::{link_op_vls, VlArbTables, VL_DROP};
use crate::routing::Routes;
use crate::subnet::{NodeId, Subnet};

/// Entries of one VLArbitration block.
pub const VLARB_BLOCK: usize = 32;

/// One QoS Set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QosSet {
    /// The node.
    pub node: NodeId,
    /// The port the Set is addressed through: 0 on a switch, the CA or router port otherwise
    /// (the AttributeModifier then says port 0, "the port this SMP arrives on", as OpenSM).
    pub port: PortNum,
    /// `SL_TO_VL_TABLE` or `VL_ARB_TABLE`.
    pub attr: SmpAttrId,
    /// The AttributeModifier.
    pub attr_mod: u32,
    /// The SMP data field.
    pub data: [u8; 64],
}

/// The VL mask OpenSM applies for an OperationalVLs code (`2^(code−1) − 1`; code 0 as 1).
#[must_use]
pub fn vl_mask(op_vls: u8) -> u8 {
    let c = op_vls.clamp(1, 5);
    ((1u16 << (c - 1)) - 1) as u8
}

/// `t` with every VL but 15 masked to `op_vls` (OpenSM `sl2vl_update_table`).
#[must_use]
pub fn mask_sl2vl(t: SlToVl, op_vls: u8) -> SlToVl {
    let m = vl_mask(op_vls);
    let mut out = t;
    for sl in 0..16u8 {
        let v = t.vl(sl).unwrap_or(0);
        out.set_vl(sl, if v == VL_DROP { v } else { v & m });
    }
    out
}

/// The OperationalVLs code the SM programs on (node, port): the link's for an external port,
/// the port's own (VLCap if it reports none) for switch port 0.
fn op_vls(subnet: &Subnet, id: NodeId, p: PortNum, max_op_vls: u8) -> u8 {
    let Some(port) = subnet.port(id, p) else {
        return 1;
    };
    let Some(info) = port.info.as_ref() else {
        return 1;
    };
    if p.0 == 0 && subnet.node(id).is_switch() {
        let v = info.operational_vls();
        return if v == 0 { info.vl_cap().max(1) } else { v };
    }
    let remote = port
        .remote
        .and_then(|(rn, rp)| subnet.port(rn, rp))
        .and_then(|r| r.info.as_ref());
    link_op_vls(info, remote, max_op_vls)
}

fn class_of(subnet: &Subnet, id: NodeId, p: PortNum) -> PortClass {
    let n = subnet.node(id);
    if n.is_switch() {
        if p.0 == 0 {
            PortClass::SwitchPort0
        } else {
            PortClass::SwitchExternal
        }
    } else if n.node_type == NodeType::ROUTER {
        PortClass::Router
    } else {
        PortClass::Ca
    }
}

fn enhanced_port0(subnet: &Subnet, id: NodeId) -> bool {
    subnet
        .node(id)
        .switch_info
        .is_some_and(|si| si.enhanced_port0() != 0)
}

fn port_info(subnet: &Subnet, id: NodeId, p: PortNum) -> Option<&PortInfo> {
    subnet.port(id, p)?.info.as_ref()
}

/// The ports of node `id` that take QoS tables as output ports (see the module docs).
#[must_use]
pub fn qos_ports(subnet: &Subnet, id: NodeId) -> Vec<PortNum> {
    let n = subnet.node(id);
    let mut v = Vec::new();
    if n.is_switch() {
        if enhanced_port0(subnet, id) && port_info(subnet, id, PortNum(0)).is_some() {
            v.push(PortNum(0));
        }
        for p in 1..=n.num_ports {
            if port_info(subnet, id, PortNum(p)).is_some_and(|i| i.port_state() != PortState::DOWN)
            {
                v.push(PortNum(p));
            }
        }
    } else {
        for p in 1..=n.num_ports {
            let Some(port) = subnet.port(id, PortNum(p)) else {
                continue;
            };
            if port.remote.is_some() && port.info.is_some_and(|i| i.port_state() != PortState::DOWN)
            {
                v.push(PortNum(p));
            }
        }
    }
    v
}

fn sl_map_supported(subnet: &Subnet, id: NodeId, p: PortNum) -> bool {
    let q = if subnet.node(id).is_switch() {
        PortNum(0)
    } else {
        p
    };
    port_info(subnet, id, q)
        .is_some_and(|i| i.capability_mask.get() & ibmad::attr::port_info::cap::IS_SL_MAP_SUP != 0)
}

/// The SL-to-VL table (`in_port`, `out_port`) of node `id` should hold (CA, router: of port
/// `out_port`), or `None` if the SM does not program it.
#[must_use]
pub fn desired_sl2vl(
    cfg: &QosConfig,
    max_op_vls: u8,
    subnet: &Subnet,
    routes: Option<&Routes>,
    id: NodeId,
    in_port: PortNum,
    out_port: PortNum,
) -> Option<SlToVl> {
    if !sl_map_supported(subnet, id, out_port) {
        return None;
    }
    let engine = routes
        .and_then(|r| r.sl2vl.as_ref())
        .and_then(|t| t.get(id, in_port, out_port));
    let t = match engine {
        Some(t) => t,
        None if cfg.enabled => cfg.class(class_of(subnet, id, out_port)).sl2vl,
        None => return None,
    };
    Some(mask_sl2vl(t, op_vls(subnet, id, out_port, max_op_vls)))
}

/// The four VLArbitration blocks port `p` of node `id` should hold (index 0..4 = blocks 1..=4;
/// `None` = not programmed).
#[must_use]
pub fn desired_vlarb(
    cfg: &QosConfig,
    max_op_vls: u8,
    subnet: &Subnet,
    engine: Option<&VlArbTables>,
    id: NodeId,
    p: PortNum,
) -> [Option<[VlArbEntryRepr; VLARB_BLOCK]>; 4] {
    let mut out = [None; 4];
    let Some(info) = port_info(subnet, id, p) else {
        return out;
    };
    if info.vl_cap() <= 1 {
        return out; // no VLArb with one data VL
    }
    let eng = engine.and_then(|e| e.get(id, p));
    if eng.is_none() && !cfg.enabled {
        return out;
    }
    // A fold rewrites the configured tables; engine entries are taken as they are.
    let fold = match eng {
        Some(_) => None,
        None => engine.and_then(|e| e.fold(id, p)),
    };
    let class = cfg.class(class_of(subnet, id, p));
    let mask = vl_mask(op_vls(subnet, id, p, max_op_vls));
    let low: Vec<VlArbEntryRepr> = eng.map_or(class.vlarb_low.to_vec(), |e| e.low.clone());
    let high: Vec<VlArbEntryRepr> = eng.map_or(class.vlarb_high.to_vec(), |e| e.high.clone());
    for (base, cap, table) in [
        (0usize, info.vl_arb_low_cap, &low),
        (2, info.vl_arb_high_cap, &high),
    ] {
        let cap = usize::from(cap).min(2 * VLARB_BLOCK);
        for b in 0..2 {
            let start = b * VLARB_BLOCK;
            if cap <= start {
                continue;
            }
            let len = (cap - start).min(VLARB_BLOCK);
            let mut blk = [VlArbEntryRepr::default(); VLARB_BLOCK];
            for (i, e) in blk.iter_mut().enumerate().take(len) {
                if let Some(src) = table.get(start + i) {
                    *e = *src;
                }
            }
            // As OpenSM's vlarb_update_table_block: the engine's rewrite of the block's
            // entries first, then the VL mask.
            if let Some(f) = fold {
                f.apply(&mut blk[..len]);
            }
            for e in &mut blk[..len] {
                e.vl &= mask;
            }
            out[base + b] = Some(blk);
        }
    }
    out
}

/// The PortInfo.VLHighLimit port `p` should hold with `qos` on (0 where VLCap is 1, as
/// OpenSM), or `None` when the SM leaves it alone (`qos` off and no engine value).
#[must_use]
pub fn desired_high_limit(
    cfg: &QosConfig,
    subnet: &Subnet,
    engine: Option<&VlArbTables>,
    id: NodeId,
    p: PortNum,
) -> Option<u8> {
    let info = port_info(subnet, id, p)?;
    let eng = engine.and_then(|e| e.get(id, p)).and_then(|e| e.high_limit);
    if eng.is_none() && !cfg.enabled {
        return None;
    }
    if info.vl_cap() <= 1 {
        return Some(0);
    }
    Some(eng.unwrap_or_else(|| cfg.class(class_of(subnet, id, p)).high_limit))
}

/// What the SM knows one node's SL-to-VL and VLArbitration tables to hold (acknowledged by
/// a Set response); unknown entries read `None`.
///
/// Stored as palettes: each distinct table once, and per (input, output) pair or per port and
/// block a 16-bit index into it (0 = unknown). A switch holds `(n+1)²` SL-to-VL tables, almost
/// all equal, so a 57-port switch costs ≈ 7 KB instead of ≈ 44 KB — 3,920 of them at
/// `fat-tree:3,56`, once in the SM and once in every SA snapshot.
#[derive(Clone, Debug, Default)]
pub struct KnownQos {
    switch: bool,
    num_ports: u8,
    /// Switch: `(n+1)²`, index `in * (n+1) + out`; end node: `n+1`, index = port. Each entry
    /// is 0 (unknown) or 1 + an index into `sl2vl_tables`.
    sl2vl: Vec<u16>,
    sl2vl_tables: Vec<SlToVl>,
    /// Per port, blocks 1..=4: 0 (unknown) or 1 + an index into `vlarb_blocks`.
    vlarb: Vec<[u16; 4]>,
    vlarb_blocks: Vec<[u8; 64]>,
}

/// The palette index (1-based) of `v` in `palette`, added if new. When the palette outgrows
/// the slots that refer to it (`refs`, stale tables after many changes), it is rebuilt with
/// the referenced entries only, so it never holds more tables than there are slots.
fn intern<T: Copy + PartialEq>(palette: &mut Vec<T>, refs: &mut [u16], v: T) -> u16 {
    if let Some(i) = palette.iter().rposition(|t| *t == v) {
        return u16::try_from(i + 1).unwrap_or(0);
    }
    if palette.len() >= refs.len().max(1) || palette.len() >= usize::from(u16::MAX - 1) {
        let mut live: Vec<T> = Vec::new();
        let mut remap = vec![0u16; palette.len() + 1];
        for r in refs.iter_mut().filter(|r| **r != 0) {
            let old = usize::from(*r);
            if remap[old] == 0 {
                live.push(palette[old - 1]);
                remap[old] = u16::try_from(live.len()).unwrap_or(0);
            }
            *r = remap[old];
        }
        *palette = live;
    }
    palette.push(v);
    u16::try_from(palette.len()).unwrap_or(0)
}

impl PartialEq for KnownQos {
    /// Equal when every table reads the same (palettes may differ in order and content).
    fn eq(&self, other: &Self) -> bool {
        self.switch == other.switch
            && self.num_ports == other.num_ports
            && self.sl2vl.len() == other.sl2vl.len()
            && self.vlarb.len() == other.vlarb.len()
            && self
                .sl2vl
                .iter()
                .zip(&other.sl2vl)
                .all(|(&a, &b)| self.sl2vl_at(a) == other.sl2vl_at(b))
            && self.vlarb.iter().zip(&other.vlarb).all(|(a, b)| {
                a.iter()
                    .zip(b)
                    .all(|(&x, &y)| self.vlarb_at(x) == other.vlarb_at(y))
            })
    }
}
impl Eq for KnownQos {}

impl KnownQos {
    /// Nothing known about a node with `num_ports` ports.
    #[must_use]
    pub fn new(switch: bool, num_ports: u8) -> KnownQos {
        let n = usize::from(num_ports) + 1;
        KnownQos {
            switch,
            num_ports,
            sl2vl: vec![0; if switch { n * n } else { n }],
            sl2vl_tables: Vec::new(),
            vlarb: vec![[0; 4]; n],
            vlarb_blocks: Vec::new(),
        }
    }

    fn sl2vl_at(&self, k: u16) -> Option<SlToVl> {
        self.sl2vl_tables
            .get(usize::from(k.checked_sub(1)?))
            .copied()
    }

    fn vlarb_at(&self, k: u16) -> Option<[u8; 64]> {
        self.vlarb_blocks
            .get(usize::from(k.checked_sub(1)?))
            .copied()
    }

    fn idx(&self, i: u8, o: u8) -> Option<usize> {
        if o > self.num_ports || i > self.num_ports {
            return None;
        }
        Some(if self.switch {
            usize::from(i) * (usize::from(self.num_ports) + 1) + usize::from(o)
        } else {
            usize::from(o)
        })
    }

    /// The SL-to-VL table known for (`in_port`, `out_port`) (end node: port `out_port`).
    #[must_use]
    pub fn sl2vl(&self, in_port: PortNum, out_port: PortNum) -> Option<SlToVl> {
        self.sl2vl_at(*self.sl2vl.get(self.idx(in_port.0, out_port.0)?)?)
    }

    /// The VLArbitration block (1..=4) known for port `p`.
    #[must_use]
    pub fn vlarb(&self, p: PortNum, block: u8) -> Option<[u8; 64]> {
        let b = usize::from(block.checked_sub(1)?);
        self.vlarb_at(*self.vlarb.get(usize::from(p.0))?.get(b)?)
    }

    /// Forgets everything about port `p` (it was reset): its VLArbitration blocks and every
    /// SL-to-VL table it is the input or output of.
    pub fn forget_port(&mut self, p: PortNum) {
        if let Some(v) = self.vlarb.get_mut(usize::from(p.0)) {
            *v = [0; 4];
        }
        for q in 0..=self.num_ports {
            for (i, o) in [(p.0, q), (q, p.0)] {
                if let Some(k) = self.idx(i, o) {
                    self.sl2vl[k] = 0;
                }
            }
        }
    }

    /// A Set or Get response (status 0) for this node: `attr` with `attr_mod`, sent through
    /// `port` ([`QosSet::port`], [`QosGet::port`]), answered with `data`. The optimized SL-to-VL forms cover every
    /// input and/or output port 0..=NumPorts.
    pub fn on_ack(&mut self, port: PortNum, attr: SmpAttrId, attr_mod: u32, data: &[u8; 64]) {
        if attr == SmpAttrId::SL_TO_VL_TABLE {
            let Ok((t, _)) = SlToVl::read_from_prefix(&data[..]) else {
                return;
            };
            if !self.switch {
                if let Some(k) = self.idx(0, port.0) {
                    self.sl2vl[k] = intern(&mut self.sl2vl_tables, &mut self.sl2vl, t);
                }
                return;
            }
            let n = self.num_ports;
            let pick = |all: bool, p: u8| if all { 0..=n } else { p..=p };
            let m = Sl2VlMod::from_raw(attr_mod);
            let ins = pick(m.all_inputs, m.in_port);
            let outs = pick(m.all_outputs, m.out_port);
            let key = intern(&mut self.sl2vl_tables, &mut self.sl2vl, t);
            for i in ins {
                for o in outs.clone() {
                    if let Some(k) = self.idx(i, o) {
                        self.sl2vl[k] = key;
                    }
                }
            }
        } else if attr == SmpAttrId::VL_ARB_TABLE {
            let m = VlArbMod::from_raw(attr_mod);
            let p = if self.switch {
                u8::try_from(m.port).unwrap_or(u8::MAX)
            } else {
                port.0
            };
            let b = usize::from(m.block).checked_sub(1);
            let Some(b) = b.filter(|&b| b < 4 && usize::from(p) < self.vlarb.len()) else {
                return;
            };
            let key = intern(&mut self.vlarb_blocks, self.vlarb.as_flattened_mut(), *data);
            self.vlarb[usize::from(p)][b] = key;
        }
    }
}

fn sl2vl_data(t: SlToVl) -> [u8; 64] {
    let mut d = [0u8; 64];
    d[..8].copy_from_slice(t.as_bytes());
    d
}

fn vlarb_data(blk: &[VlArbEntryRepr; VLARB_BLOCK]) -> [u8; 64] {
    let mut raw = VlArbTable {
        entries: [VlArbEntry::default(); VLARB_BLOCK],
    };
    for (r, e) in raw.entries.iter_mut().zip(blk) {
        r.vl = e.vl & 0x0F;
        r.weight = e.weight;
    }
    let mut d = [0u8; 64];
    d.copy_from_slice(raw.as_bytes());
    d
}

/// What [`plan`] needs.
pub struct PlanInputs<'a> {
    /// The QoS configuration.
    pub cfg: &'a QosConfig,
    /// `max_op_vls`.
    pub max_op_vls: u8,
    /// The subnet (with the PortInfo, SwitchInfo and links discovery found).
    pub subnet: &'a Subnet,
    /// The routes, whose VL parts the engine may have set.
    pub routes: Option<&'a Routes>,
}

/// The Sets of one switch's SL-to-VL tables: desired `want[in][out]` for the output ports
/// `outs`, against `known`.
fn plan_switch_sl2vl(
    id: NodeId,
    n: u8,
    outs: &[PortNum],
    want: &dyn Fn(PortNum, PortNum) -> Option<SlToVl>,
    known: Option<&KnownQos>,
    optimized: bool,
    sets: &mut Vec<QosSet>,
) {
    let set = |attr_mod: u32, t: SlToVl| QosSet {
        node: id,
        port: PortNum(0),
        attr: SmpAttrId::SL_TO_VL_TABLE,
        attr_mod,
        data: sl2vl_data(t),
    };
    // Per output column: the desired tables per input, whether uniform, the mismatches.
    struct Col {
        out: PortNum,
        want: Vec<Option<SlToVl>>,
        uniform: Option<SlToVl>,
        mismatched: Vec<u8>,
    }
    let mut cols = Vec::new();
    for &o in outs {
        let w: Vec<Option<SlToVl>> = (0..=n).map(|i| want(PortNum(i), o)).collect();
        if w.iter().all(Option::is_none) {
            continue;
        }
        let mismatched: Vec<u8> = (0..=n)
            .filter(|&i| {
                let d = w[usize::from(i)];
                d.is_some() && known.and_then(|k| k.sl2vl(PortNum(i), o)) != d
            })
            .collect();
        let first = w[0];
        let uniform = if w.iter().all(|x| *x == first) {
            first
        } else {
            None
        };
        cols.push(Col {
            out: o,
            want: w,
            uniform,
            mismatched,
        });
    }
    if cols.iter().all(|c| c.mismatched.is_empty()) {
        return;
    }
    if !optimized {
        for c in &cols {
            for &i in &c.mismatched {
                if let Some(t) = c.want[usize::from(i)] {
                    sets.push(set(modifier::sl2vl(PortNum(i), c.out), t));
                }
            }
        }
        return;
    }
    // A: per column, one all-inputs Set if uniform, else per-pair Sets.
    let cost_a: usize = cols
        .iter()
        .map(|c| match (c.mismatched.is_empty(), c.uniform) {
            (true, _) => 0,
            (false, Some(_)) => 1,
            (false, None) => c.mismatched.len(),
        })
        .sum();
    // B: one all-in/all-out Set with the most common uniform column, then fix-ups.
    let mut counts: Vec<(SlToVl, usize)> = Vec::new();
    for t in cols.iter().filter_map(|c| c.uniform) {
        match counts.iter_mut().find(|(x, _)| *x == t) {
            Some(e) => e.1 += 1,
            None => counts.push((t, 1)),
        }
    }
    let common = counts.iter().max_by_key(|(_, k)| *k).map(|(t, _)| *t);
    let cost_b = common.map(|t| {
        1 + cols
            .iter()
            .map(|c| match c.uniform {
                Some(u) if u == t => 0,
                Some(_) => 1,
                None => c.want.iter().filter(|w| w.is_some_and(|w| w != t)).count(),
            })
            .sum::<usize>()
    });
    match (common, cost_b) {
        (Some(t), Some(b)) if b < cost_a => {
            sets.push(set(SL2VL_ALL_PORTS, t));
            for c in &cols {
                match c.uniform {
                    Some(u) if u == t => {}
                    Some(u) => sets.push(set(modifier::sl2vl_all_inputs(c.out), u)),
                    None => {
                        for (i, w) in (0u8..).zip(&c.want) {
                            if let Some(w) = w.filter(|w| *w != t) {
                                sets.push(set(modifier::sl2vl(PortNum(i), c.out), w));
                            }
                        }
                    }
                }
            }
        }
        _ => {
            for c in cols.iter().filter(|c| !c.mismatched.is_empty()) {
                match c.uniform {
                    Some(u) => sets.push(set(modifier::sl2vl_all_inputs(c.out), u)),
                    None => {
                        for &i in &c.mismatched {
                            if let Some(t) = c.want[usize::from(i)] {
                                sets.push(set(modifier::sl2vl(PortNum(i), c.out), t));
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The QoS Sets of one node, in sending order (SL-to-VL, then VLArbitration).
pub fn plan_node(inp: &PlanInputs<'_>, id: NodeId, known: Option<&KnownQos>) -> Vec<QosSet> {
    let s = inp.subnet;
    let node = s.node(id);
    let outs = qos_ports(s, id);
    let mut sets = Vec::new();
    let want =
        |i: PortNum, o: PortNum| desired_sl2vl(inp.cfg, inp.max_op_vls, s, inp.routes, id, i, o);
    if node.is_switch() {
        let optimized = inp.cfg.use_optimized_slvl
            && node.switch_info.is_some_and(|si| si.optimized_sl2vl() != 0);
        plan_switch_sl2vl(
            id,
            node.num_ports,
            &outs,
            &want,
            known,
            optimized,
            &mut sets,
        );
    } else {
        for &p in &outs {
            if let Some(t) = want(p, p) {
                if known.and_then(|k| k.sl2vl(p, p)) != Some(t) {
                    sets.push(QosSet {
                        node: id,
                        port: p,
                        attr: SmpAttrId::SL_TO_VL_TABLE,
                        attr_mod: 0,
                        data: sl2vl_data(t),
                    });
                }
            }
        }
    }
    let engine_arb = inp.routes.and_then(|r| r.vlarb.as_ref());
    for &p in &outs {
        let blocks = desired_vlarb(inp.cfg, inp.max_op_vls, s, engine_arb, id, p);
        for (b, blk) in (1u8..).zip(blocks.iter()) {
            let Some(blk) = blk else { continue };
            let data = vlarb_data(blk);
            if known.and_then(|k| k.vlarb(p, b)) == Some(data) {
                continue;
            }
            let (port, mod_port) = if node.is_switch() {
                (PortNum(0), p)
            } else {
                (p, PortNum(0))
            };
            sets.push(QosSet {
                node: id,
                port,
                attr: SmpAttrId::VL_ARB_TABLE,
                attr_mod: modifier::vlarb(mod_port, b),
                data,
            });
        }
    }
    sets
}

/// The first item of every list, then the second, … (so the pipeline keeps every node busy).
fn interleave<T: Copy>(per_node: &[Vec<T>]) -> Vec<T> {
    let mut out = Vec::with_capacity(per_node.iter().map(Vec::len).sum());
    let longest = per_node.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..longest {
        out.extend(per_node.iter().filter_map(|v| v.get(k).copied()));
    }
    out
}

/// Every QoS Set of the subnet, interleaved across nodes (the first Set of every node, then
/// the second, …) so the pipeline keeps every node busy; `known(node)` is what the SM knows
/// that node to hold.
pub fn plan<'k>(
    inp: &PlanInputs<'_>,
    known: impl Fn(NodeId) -> Option<&'k KnownQos>,
) -> Vec<QosSet> {
    let per_node: Vec<Vec<QosSet>> = inp
        .subnet
        .node_ids()
        .map(|id| plan_node(inp, id, known(id)))
        .filter(|v| !v.is_empty())
        .collect();
    interleave(&per_node)
}

/// One QoS Get: a table the SM neither programs nor knows, read so that the SA can serve
/// what the port holds ([`QosReads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QosGet {
    /// The node.
    pub node: NodeId,
    /// The port the Get is addressed through ([`QosSet::port`]).
    pub port: PortNum,
    /// `SL_TO_VL_TABLE` or `VL_ARB_TABLE`.
    pub attr: SmpAttrId,
    /// The AttributeModifier: [`modifier::sl2vl`]`(in, out)` on a switch, 0 on a CA
    /// (SL-to-VL); [`modifier::vlarb`]`(port, block)` on a switch, port 0 on a CA
    /// (VLArbitration).
    pub attr_mod: u32,
}

/// Whether VLArbitration block `block` (1..=4) of a port with PortInfo `info` exists: the
/// port has more than one data VL (VLCap > 1) and the block's first entry is within
/// VLArbitrationLowCap (blocks 1, 2) or HighCap (3, 4), 32 entries a block (IBA vol1
/// §14.2.5.9). A block that does not exist holds no entry; the SA serves it as zeros (weight 0:
/// an unused entry), as OpenSM's SA serves every block of every port.
#[must_use]
pub fn vlarb_block_exists(info: &PortInfo, block: u8) -> bool {
    if !(1..=4).contains(&block) || info.vl_cap() <= 1 {
        return false;
    }
    let cap = if block <= 2 {
        info.vl_arb_low_cap
    } else {
        info.vl_arb_high_cap
    };
    let first = if block.is_multiple_of(2) {
        VLARB_BLOCK
    } else {
        0
    };
    usize::from(cap) > first
}

/// Whether node `id` holds SL-to-VL tables for port `p` at all: the port (on a switch, port 0)
/// reports CapabilityMask.IsSLMappingSupported. A port without one sends every SL on VL 0 (the
/// SA serves an all-zero table).
#[must_use]
pub fn sl2vl_exists(subnet: &Subnet, id: NodeId, p: PortNum) -> bool {
    sl_map_supported(subnet, id, p)
}

/// The Gets of every SL-to-VL and VLArbitration table the SM does not program this sweep
/// ([`plan`]) and does not know ([`KnownQos`]), interleaved across nodes like [`plan`]: on a
/// switch every (input, output) pair 0..=NumPorts and the existing VLArbitration blocks of
/// every port 0..=NumPorts whose PortInfo is known (Down ports too: their tables are there and
/// the SA serves them, as OpenSM's); on a CA or router every linked port. Tables a Set
/// response or a Get response made known are not read again until the port is reset
/// ([`KnownQos::forget_port`]) or the switch rebooted.
///
/// They are a compact work list: a bit per (node, table) to read, handed out lazily in that
/// interleaved order. A large fabric reads millions of tables (13.3 M at `fat-tree:3,56`, 57²
/// SL-to-VL pairs per switch): 12 bytes a [`QosGet`], twice while interleaving, was ≈ 300 MB;
/// the bits are ≈ 2 MB.
#[derive(Clone, Debug, Default)]
pub struct QosReads {
    /// Nodes with Gets left, in node order.
    nodes: Vec<NodeReads>,
    /// The node whose turn it is in the current round.
    pos: usize,
    /// Gets left.
    left: usize,
}

#[derive(Clone, Debug)]
struct NodeReads {
    node: NodeId,
    /// A CA or router: addressed through the port itself ([`QosSet::port`]).
    via: bool,
    /// `NumPorts + 1`.
    n1: u32,
    /// SL-to-VL bits (`out * n1 + in` on a switch, `out` on an end node), then VLArbitration
    /// bits (`n1 * n1` + `port * 4 + block - 1`).
    bits: Vec<u64>,
    /// The next bit to look at.
    next: u32,
}

impl NodeReads {
    fn new(node: NodeId, via: bool, num_ports: u8) -> NodeReads {
        let n1 = u32::from(num_ports) + 1;
        let total = (n1 * n1 + 4 * n1) as usize;
        NodeReads {
            node,
            via,
            n1,
            bits: vec![0; total.div_ceil(64)],
            next: 0,
        }
    }

    fn set(&mut self, bit: u32) {
        self.bits[(bit / 64) as usize] |= 1 << (bit % 64);
    }

    /// The next Get of this node, if any.
    fn pop(&mut self) -> Option<QosGet> {
        let total = self.bits.len() as u32 * 64;
        let mut at = self.next;
        while at < total {
            let w = self.bits[(at / 64) as usize] >> (at % 64);
            if w == 0 {
                at = (at / 64 + 1) * 64;
                continue;
            }
            at += w.trailing_zeros();
            break;
        }
        if at >= total {
            self.next = total;
            return None;
        }
        self.next = at + 1;
        let sl_bits = self.n1 * self.n1;
        let port = |p: u32| PortNum(u8::try_from(p).unwrap_or(u8::MAX));
        Some(if at < sl_bits {
            let (o, i) = (at / self.n1, at % self.n1);
            QosGet {
                node: self.node,
                port: if self.via { port(at) } else { PortNum(0) },
                attr: SmpAttrId::SL_TO_VL_TABLE,
                attr_mod: if self.via {
                    0
                } else {
                    modifier::sl2vl(port(i), port(o))
                },
            }
        } else {
            let (p, b) = ((at - sl_bits) / 4, (at - sl_bits) % 4 + 1);
            QosGet {
                node: self.node,
                port: if self.via { port(p) } else { PortNum(0) },
                attr: SmpAttrId::VL_ARB_TABLE,
                attr_mod: modifier::vlarb(if self.via { PortNum(0) } else { port(p) }, b as u8),
            }
        })
    }
}

impl QosReads {
    /// The Gets to read (see [`QosReads`]).
    pub fn new<'k>(inp: &PlanInputs<'_>, known: impl Fn(NodeId) -> Option<&'k KnownQos>) -> Self {
        let s = inp.subnet;
        let engine_arb = inp.routes.and_then(|r| r.vlarb.as_ref());
        let mut nodes = Vec::new();
        let mut left = 0;
        for id in s.node_ids() {
            let node = s.node(id);
            let k = known(id);
            let programmed_outs = qos_ports(s, id);
            let via = !node.is_switch();
            let mut v = NodeReads::new(id, via, node.num_ports);
            let mut count = 0;
            let outs: Vec<PortNum> = if node.is_switch() {
                (0..=node.num_ports)
                    .map(PortNum)
                    .filter(|&p| port_info(s, id, p).is_some())
                    .collect()
            } else {
                programmed_outs.clone()
            };
            let want = |i: PortNum, o: PortNum| {
                programmed_outs.contains(&o)
                    && desired_sl2vl(inp.cfg, inp.max_op_vls, s, inp.routes, id, i, o).is_some()
            };
            for &o in &outs {
                if !sl_map_supported(s, id, o) {
                    continue;
                }
                let ins: Vec<PortNum> = if node.is_switch() {
                    (0..=node.num_ports).map(PortNum).collect()
                } else {
                    vec![o]
                };
                for i in ins {
                    if want(i, o) || k.and_then(|k| k.sl2vl(i, o)).is_some() {
                        continue;
                    }
                    let bit = if via {
                        u32::from(o.0)
                    } else {
                        u32::from(o.0) * v.n1 + u32::from(i.0)
                    };
                    v.set(bit);
                    count += 1;
                }
            }
            for &p in &outs {
                let Some(info) = port_info(s, id, p) else {
                    continue;
                };
                let desired = if programmed_outs.contains(&p) {
                    desired_vlarb(inp.cfg, inp.max_op_vls, s, engine_arb, id, p)
                } else {
                    [None; 4]
                };
                for b in 1..=4u8 {
                    if !vlarb_block_exists(info, b)
                        || desired[usize::from(b - 1)].is_some()
                        || k.and_then(|k| k.vlarb(p, b)).is_some()
                    {
                        continue;
                    }
                    v.set(v.n1 * v.n1 + u32::from(p.0) * 4 + u32::from(b - 1));
                    count += 1;
                }
            }
            if count > 0 {
                left += count;
                nodes.push(v);
            }
        }
        QosReads {
            nodes,
            pos: 0,
            left,
        }
    }

    /// Gets left.
    #[must_use]
    pub fn len(&self) -> usize {
        self.left
    }

    /// True if no Get is left.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// Drops every Get left.
    pub fn clear(&mut self) {
        *self = QosReads::default();
    }
}

impl Iterator for QosReads {
    type Item = QosGet;

    /// Round-robin over the nodes with Gets left: the k-th Get of every such node, then the
    /// (k+1)-th — the order [`interleave`] gives.
    fn next(&mut self) -> Option<QosGet> {
        loop {
            if self.nodes.is_empty() {
                return None;
            }
            if self.pos >= self.nodes.len() {
                // End of a round: drop the nodes that are done.
                self.nodes.retain(|n| n.next < n.bits.len() as u32 * 64);
                self.pos = 0;
                continue;
            }
            let i = self.pos;
            self.pos += 1;
            if let Some(g) = self.nodes[i].pop() {
                self.left -= 1;
                return Some(g);
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// Every SL-to-VL table the SM programs on this subnet ([`desired_sl2vl`] for every
/// (input, output) pair of every QoS port), as the VL-aware check reads them
/// ([`crate::verify::vl::VlInputs::sl2vl`]); pairs the SM leaves alone stay unset (VL 0).
#[must_use]
pub fn programmed_sl2vl(inp: &PlanInputs<'_>) -> crate::routing::vl::Sl2VlTables {
    let s = inp.subnet;
    let mut t = crate::routing::vl::Sl2VlTables::new(s);
    for id in s.node_ids() {
        let node = s.node(id);
        for o in qos_ports(s, id) {
            let ins: Vec<PortNum> = if node.is_switch() {
                (0..=node.num_ports).map(PortNum).collect()
            } else {
                vec![o]
            };
            for i in ins {
                if let Some(w) = desired_sl2vl(inp.cfg, inp.max_op_vls, s, inp.routes, id, i, o) {
                    t.set(s, id, i, o, w);
                }
            }
        }
    }
    t
}

/// What [`plan`] would send to a subnet whose tables are all unknown, as (SL-to-VL Sets,
/// VLArbitration Sets).
#[must_use]
pub fn count_cold(inp: &PlanInputs<'_>) -> (usize, usize) {
    let sets = plan(inp, |_| None);
    let sl = sets
        .iter()
        .filter(|s| s.attr == SmpAttrId::SL_TO_VL_TABLE)
        .count();
    (sl, sets.len() - sl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::{parse_sl2vl, QosOptions};

    /// Every Get of [`QosReads`], in order.
    fn reads<'k>(
        inp: &PlanInputs<'_>,
        known: impl Fn(NodeId) -> Option<&'k KnownQos>,
    ) -> Vec<QosGet> {
        QosReads::new(inp, known).collect()
    }
    use crate::routing::vl::{sl2vl_modulo, Sl2VlTables, VlArbPort};
    use crate::routing::Lfts;
    use crate::subnet::{active_port_info, Node};
    use ibmad::attr::port_info::cap::IS_SL_MAP_SUP;
    use ibmad::attr::SwitchInfo;
    use ibmad::zerocopy::FromZeros;
    use ibmad::{Guid, Lid};

    fn qos_pi(vl_cap: u8) -> PortInfo {
        let mut pi = active_port_info();
        pi.set_vl_cap(vl_cap);
        pi.capability_mask.set(IS_SL_MAP_SUP);
        pi.vl_arb_low_cap = 8;
        pi.vl_arb_high_cap = 8;
        pi
    }

    /// One 4-port switch (optimized SL-to-VL as given) with CAs on ports 1..=3; port 4 Down.
    /// Every port VLCap 4 (VL0-7) except the CA on port 3: VLCap 2 (VL0-1).
    fn fabric(optimized: bool) -> (Subnet, NodeId, Vec<NodeId>) {
        let mut s = Subnet::new();
        let mut sw = Node::new(Guid(1), NodeType::SWITCH, 4, "sw");
        let mut si = SwitchInfo::new_zeroed();
        si.set_optimized_sl2vl(u8::from(optimized));
        sw.switch_info = Some(si);
        let sw = s.add_active_node(sw);
        let cas: Vec<NodeId> = (0..3)
            .map(|k| s.add_active_node(Node::new(Guid(0x10 + k), NodeType::CA, 1, "ca")))
            .collect();
        for (k, &c) in cas.iter().enumerate() {
            s.connect_active((sw, PortNum(k as u8 + 1)), (c, PortNum(1)));
        }
        for p in 0..=3 {
            s.port_mut(sw, PortNum(p)).unwrap().info = Some(qos_pi(4));
        }
        let mut down = qos_pi(4);
        down.set_port_state(PortState::DOWN);
        s.port_mut(sw, PortNum(4)).unwrap().info = Some(down);
        for (k, &c) in cas.iter().enumerate() {
            s.port_mut(c, PortNum(1)).unwrap().info = Some(qos_pi(if k == 2 { 2 } else { 4 }));
        }
        (s, sw, cas)
    }

    fn cfg_on() -> QosConfig {
        QosConfig {
            enabled: true,
            ..QosConfig::default()
        }
    }

    fn ack_all(
        sets: &[QosSet],
        known: &mut std::collections::HashMap<NodeId, KnownQos>,
        s: &Subnet,
    ) {
        for q in sets {
            let n = s.node(q.node);
            known
                .entry(q.node)
                .or_insert_with(|| KnownQos::new(n.is_switch(), n.num_ports))
                .on_ack(q.port, q.attr, q.attr_mod, &q.data);
        }
    }

    fn sl2vl_sets(sets: &[QosSet]) -> Vec<&QosSet> {
        sets.iter()
            .filter(|q| q.attr == SmpAttrId::SL_TO_VL_TABLE)
            .collect()
    }

    #[test]
    fn optimized_switch_is_one_smp_plus_a_fixup_per_odd_port() {
        let (s, sw, _) = fabric(true);
        let cfg = cfg_on();
        let inp = PlanInputs {
            cfg: &cfg,
            max_op_vls: 5,
            subnet: &s,
            routes: None,
        };
        let sets = plan(&inp, |_| None);
        let sw_sl: Vec<&QosSet> = sl2vl_sets(&sets)
            .into_iter()
            .filter(|q| q.node == sw)
            .collect();
        // Ports 1, 2 run VL0-7 (OperVLs 4), port 3 VL0-1 (OperVLs 2): one all/all Set with
        // the mask of the majority, one all-inputs Set for port 3.
        assert_eq!(
            sw_sl.iter().map(|q| q.attr_mod).collect::<Vec<_>>(),
            vec![0x30000, 0x20003]
        );
        let t3 = SlToVl::read_from_prefix(&sw_sl[1].data[..]).unwrap().0;
        assert_eq!(t3.vl(5), Some(1), "VL 5 masked to VL0-1");
        assert_eq!(t3.vl(15), Some(7 & 1), "SL 15 -> VL 7, masked");
        let t = SlToVl::read_from_prefix(&sw_sl[0].data[..]).unwrap().0;
        assert_eq!(t.vl(5), Some(5));
        // CA ports: one SL-to-VL each (modifier 0), VLArb blocks 1 and 3 (caps 8).
        let ca_sets: Vec<&QosSet> = sets.iter().filter(|q| q.node != sw).collect();
        assert_eq!(ca_sets.len(), 3 * 3);
        assert!(ca_sets.iter().all(|q| q.attr_mod & 0xFFFF == 0));
        // Switch VLArb: ports 1..=3 (4 is Down), blocks 1 and 3.
        let arb: Vec<u32> = sets
            .iter()
            .filter(|q| q.node == sw && q.attr == SmpAttrId::VL_ARB_TABLE)
            .map(|q| q.attr_mod)
            .collect();
        assert_eq!(
            arb,
            vec![0x10001, 0x30001, 0x10002, 0x30002, 0x10003, 0x30003]
        );
        // Acknowledged, nothing is resent.
        let mut known = std::collections::HashMap::new();
        ack_all(&sets, &mut known, &s);
        assert!(plan(&inp, |n| known.get(&n)).is_empty());
        // A changed qos_swe_sl2vl is one Set again.
        let cfg2 = QosConfig {
            swe: QosOptions {
                sl2vl: Some(parse_sl2vl("1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1").unwrap()),
                ..QosOptions::default()
            },
            ..cfg_on()
        };
        let again = plan(&PlanInputs { cfg: &cfg2, ..inp }, |n| known.get(&n));
        assert_eq!(
            again.iter().map(|q| q.attr_mod).collect::<Vec<_>>(),
            vec![0x30000],
            "port 3's mask folds the new table to the same VL 1"
        );
    }

    #[test]
    fn without_the_capability_one_smp_per_pair() {
        let (s, sw, _) = fabric(false);
        let cfg = cfg_on();
        let inp = PlanInputs {
            cfg: &cfg,
            max_op_vls: 5,
            subnet: &s,
            routes: None,
        };
        let n = sl2vl_sets(&plan(&inp, |_| None))
            .into_iter()
            .filter(|q| q.node == sw)
            .count();
        assert_eq!(n, 5 * 3, "inputs 0..=4 × outputs 1..=3 (OpenSM's form)");
        let off = QosConfig {
            use_optimized_slvl: false,
            ..cfg_on()
        };
        let (s2, sw2, _) = fabric(true);
        let n2 = sl2vl_sets(&plan(
            &PlanInputs {
                cfg: &off,
                subnet: &s2,
                ..inp
            },
            |_| None,
        ))
        .into_iter()
        .filter(|q| q.node == sw2)
        .count();
        assert_eq!(n2, 15, "use_optimized_slvl FALSE");
    }

    #[test]
    fn qos_off_programs_nothing_but_engine_tables() {
        let (s, sw, cas) = fabric(true);
        let cfg = QosConfig::default();
        let inp = PlanInputs {
            cfg: &cfg,
            max_op_vls: 5,
            subnet: &s,
            routes: None,
        };
        assert!(plan(&inp, |_| None).is_empty());
        // An engine that varies the VL by input port on output 1.
        let mut t = Sl2VlTables::new(&s);
        t.set_node(&s, sw, sl2vl_modulo(2));
        let mut one = SlToVl::default();
        for sl in 0..16 {
            one.set_vl(sl, 1);
        }
        t.set(&s, sw, PortNum(2), PortNum(1), one);
        t.set(&s, cas[0], PortNum(0), PortNum(1), one);
        let routes = Routes::new(Lfts::new(&s, Lid(8))).with_sl2vl(t);
        let sets = plan(
            &PlanInputs {
                routes: Some(&routes),
                ..inp
            },
            |_| None,
        );
        let mods: Vec<(NodeId, u32)> = sets.iter().map(|q| (q.node, q.attr_mod)).collect();
        // Outputs 2 and 3 are uniform (modulo 2): the all/all Set covers them; output 1 is not
        // uniform: the pairs that differ from the all/all table.
        assert_eq!(
            mods,
            vec![(sw, 0x30000), (cas[0], 0), (sw, 0x0201)],
            "no VLArb: QoS is off and the engine set none"
        );
    }

    #[test]
    fn engine_vlarb_and_high_limit_override() {
        let (s, sw, _) = fabric(true);
        let cfg = cfg_on();
        let mut arb = VlArbTables::default();
        arb.ports.insert(
            (sw, PortNum(1)),
            VlArbPort {
                low: vec![VlArbEntryRepr { vl: 9, weight: 7 }],
                high: vec![],
                high_limit: Some(255),
            },
        );
        let d = desired_vlarb(&cfg, 5, &s, Some(&arb), sw, PortNum(1));
        let low = d[0].unwrap();
        assert_eq!(
            low[0],
            VlArbEntryRepr {
                vl: 9 & 7,
                weight: 7
            },
            "masked to VL0-7"
        );
        assert_eq!(low[1], VlArbEntryRepr::default());
        assert!(d[1].is_none(), "LowCap 8: one block");
        assert_eq!(
            d[2].unwrap()[0],
            VlArbEntryRepr::default(),
            "engine's empty high table"
        );
        assert_eq!(
            desired_high_limit(&cfg, &s, Some(&arb), sw, PortNum(1)),
            Some(255)
        );
        assert_eq!(desired_high_limit(&cfg, &s, None, sw, PortNum(2)), Some(0));
        assert_eq!(
            desired_high_limit(&QosConfig::default(), &s, None, sw, PortNum(2)),
            None,
            "QoS off leaves VLHighLimit alone"
        );
        // Default tables: low 0:0,1:4,…; high 0:4.
        let dflt = desired_vlarb(&cfg, 5, &s, None, sw, PortNum(2));
        assert_eq!(dflt[0].unwrap()[1], VlArbEntryRepr { vl: 1, weight: 4 });
        assert_eq!(
            dflt[0].unwrap()[8],
            VlArbEntryRepr::default(),
            "beyond LowCap 8"
        );
        assert_eq!(dflt[2].unwrap()[0], VlArbEntryRepr { vl: 0, weight: 4 });
    }

    #[test]
    fn reads_cover_what_is_neither_programmed_nor_known() {
        let (s, sw, _) = fabric(true);
        let off = QosConfig::default();
        let inp = PlanInputs {
            cfg: &off,
            max_op_vls: 5,
            subnet: &s,
            routes: None,
        };
        let gets = reads(&inp, |_| None);
        let count = |n: Option<NodeId>, a: SmpAttrId| {
            gets.iter()
                .filter(|g| n.is_none_or(|n| g.node == n) && g.attr == a)
                .count()
        };
        // The switch: every (input, output) pair of ports 0..=4 (the Down port 4 too), and
        // VLArbitration blocks 1 and 3 (caps 8) of every port; each CA: one SL-to-VL table and
        // blocks 1 and 3.
        assert_eq!(count(Some(sw), SmpAttrId::SL_TO_VL_TABLE), 25);
        assert_eq!(count(Some(sw), SmpAttrId::VL_ARB_TABLE), 10);
        assert_eq!(gets.len(), 25 + 10 + 3 * 3);
        assert!(gets.iter().any(|g| g.node == sw && g.attr_mod == 0x0304));
        assert!(gets.iter().any(|g| g.node == sw && g.attr_mod == 0x3_0004));
        assert!(gets
            .iter()
            .filter(|g| g.node != sw)
            .all(|g| g.port == PortNum(1) && g.attr_mod & 0xFFFF == 0));
        assert_eq!(
            gets[0].node, sw,
            "interleaved: the first Get of every node first"
        );
        assert_ne!(gets[1].node, sw);
        // Answered (a GetResp carries the table), nothing is read again.
        let mut known = std::collections::HashMap::new();
        for g in &gets {
            let n = s.node(g.node);
            known
                .entry(g.node)
                .or_insert_with(|| KnownQos::new(n.is_switch(), n.num_ports))
                .on_ack(g.port, g.attr, g.attr_mod, &[0; 64]);
        }
        assert!(reads(&inp, |n| known.get(&n)).is_empty());
        // A reset port is read again: its pairs as input or output, its blocks.
        known.get_mut(&sw).unwrap().forget_port(PortNum(2));
        assert_eq!(reads(&inp, |n| known.get(&n)).len(), 2 * 5 - 1 + 2);
        // qos on: what the SM programs is not read — on the switch, output port 0 (base port
        // 0) and the Down port 4, as outputs; the CAs not at all.
        let on = cfg_on();
        let gets = reads(&PlanInputs { cfg: &on, ..inp }, |_| None);
        assert!(gets.iter().all(|g| g.node == sw), "{gets:?}");
        let outs: std::collections::BTreeSet<u32> = gets
            .iter()
            .map(|g| {
                if g.attr == SmpAttrId::SL_TO_VL_TABLE {
                    g.attr_mod & 0xFF
                } else {
                    g.attr_mod & 0xFFFF
                }
            })
            .collect();
        assert_eq!(outs, [0, 4].into());
        assert_eq!(gets.len(), 2 * 5 + 2 * 2);
    }

    #[test]
    fn masks() {
        assert_eq!([1, 2, 3, 4, 5].map(vl_mask), [0, 1, 3, 7, 15]);
        let t = parse_sl2vl("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15").unwrap();
        let m = mask_sl2vl(t, 3);
        assert_eq!(m.vl(6), Some(2));
        assert_eq!(m.vl(15), Some(15), "drop survives the mask");
    }

    #[test]
    fn known_state_expands_optimized_forms_and_forgets_ports() {
        let mut k = KnownQos::new(true, 3);
        let t = sl2vl_modulo(3);
        let d = sl2vl_data(t);
        k.on_ack(PortNum(0), SmpAttrId::SL_TO_VL_TABLE, 0x30000, &d);
        assert_eq!(k.sl2vl(PortNum(3), PortNum(0)), Some(t));
        let u = sl2vl_modulo(2);
        k.on_ack(
            PortNum(0),
            SmpAttrId::SL_TO_VL_TABLE,
            0x20002,
            &sl2vl_data(u),
        );
        assert_eq!(k.sl2vl(PortNum(1), PortNum(2)), Some(u));
        assert_eq!(k.sl2vl(PortNum(1), PortNum(3)), Some(t));
        k.on_ack(
            PortNum(0),
            SmpAttrId::SL_TO_VL_TABLE,
            0x10100,
            &sl2vl_data(u),
        );
        assert_eq!(
            k.sl2vl(PortNum(1), PortNum(3)),
            Some(u),
            "all outputs of input 1"
        );
        k.forget_port(PortNum(2));
        assert_eq!(k.sl2vl(PortNum(1), PortNum(2)), None);
        assert_eq!(k.sl2vl(PortNum(2), PortNum(3)), None);
        assert_eq!(k.sl2vl(PortNum(1), PortNum(3)), Some(u));
        k.on_ack(PortNum(0), SmpAttrId::VL_ARB_TABLE, 0x30001, &[7; 64]);
        assert_eq!(k.vlarb(PortNum(1), 3), Some([7; 64]));
        let mut ca = KnownQos::new(false, 2);
        ca.on_ack(PortNum(2), SmpAttrId::VL_ARB_TABLE, 0x10000, &[1; 64]);
        assert_eq!(
            ca.vlarb(PortNum(2), 1),
            Some([1; 64]),
            "CA: the port the Set went through"
        );
    }
}

//! The virtual-lane parts of [`super::Routes`]: per-path service levels ([`PathSls`]),
//! SL-to-VL tables ([`Sl2VlTables`]) and VL arbitration tables ([`VlArbTables`]), plus the VL
//! budget an engine may use ([`VlBudget`]).
//!
//! # The contract between engines and the SM
//!
//! Each part is an `Option` in [`super::Routes`]. **An engine that leaves a part `None` does not
//! decide it**, and the SM then does what OpenSM does for an engine without the matching hook:
//!
//! | part | `None` (engine does not decide) | `Some` (engine decides) |
//! |---|---|---|
//! | [`super::Routes::path_sl`] | every path is SL 0 as far as routing goes; the SA answers PathRecords from the QoS policy (`qos-policy.conf`) or SL 0 | the SA's PathRecord SL for (SLID, DLID); the policy's SL is not applied to those paths (OpenSM `path_sl` hook); `ibsm-path-sl.dump` is written |
//! | [`super::Routes::sl2vl`] | with `qos` on, every port gets the `qos_*_sl2vl` table of its class (one SMP per switch where OptimizedSLtoVLMappingProgramming allows); with `qos` off SL-to-VL is not programmed | the engine's tables are programmed on every node it set, **whether or not `qos` is on** (OpenSM's `update_sl2vl` hook, which OpenSM applies only with `qos`); on a switch one SMP per (input, output) pair, except that where OptimizedSLtoVLMappingProgramming and `use_optimized_slvl` allow, an output port whose tables are the same from every input gets one all-inputs SMP; nodes the engine did not set are treated as under `None`; `opensm-sl2vl.dump` is written |
//! | [`super::Routes::vlarb`] | with `qos` on, `qos_*_vlarb_{high,low}` and `qos_*_high_limit`; off: not programmed | the engine's entries replace the configured ones on the ports it set, or a [`VlArbFold`] rewrites the configured ones block by block (OpenSM `update_vlarb` hook) |
//!
//! Within a part that is `Some`, absence is per node or port: [`Sl2VlTables::get`] returns
//! `None` for a node the engine did not set, and that node gets the `None` treatment.
//!
//! Every VL an engine writes is **masked to the port's OperationalVLs** before it is sent, as
//! OpenSM's `sl2vl_update_table` does (VL 15, "drop", is kept). An engine must therefore stay
//! within [`VlBudget`]: a VL beyond it silently folds onto a lower VL on the wire, and the
//! verifier's VL-aware credit-loop check ([`crate::verify`]) will find the resulting loop.
//!
//! Engines that need `qos` (OpenSM's torus-2QoS, lash and dfsssp require `-Q`) check
//! [`super::EngineOptions::qos`] themselves and fail (so the chain falls back) when it is off.
//!
//! # Sizes
//!
//! [`PathSls`] is one byte per (source, destination). Choose the coarsest granularity the
//! engine needs: per destination LID (nue's layers: one row), per (source switch,
//! destination switch) (torus-2QoS: the SL follows from the two switches' coordinates; k36
//! would be 1,620² = 2.6 MB), per (source switch, destination LID) (lash, dfsssp: every end
//! port behind one switch follows the same tables, so k36 is 1,620 rows × 13k LIDs = 21 MB),
//! or per (source LID, destination LID) (k36: 13k × 13k = 176 MB; only for small fabrics). [`Sl2VlTables`] is 8 bytes per (input, output) pair of each switch the engine
//! sets (k36: 1,620 × 37² × 8 B = 18 MB) and per end port.

use std::collections::BTreeMap;

use ibmad::attr::{PortInfo, SlToVl, VlArbEntryRepr};
use ibmad::{Lid, PortNum};

use super::graph::SwitchSlots;
use crate::subnet::{NodeId, Subnet};

/// Number of service levels (SL 0..=15).
pub const NUM_SLS: usize = 16;
/// The VL that means "drop packets of this SL" in an SL-to-VL table.
pub const VL_DROP: u8 = 15;
/// Entries of a VLArbitration table of one priority: two 32-entry blocks.
pub const VLARB_ENTRIES: usize = 64;

/// Data VLs an OperationalVLs / VLCap code allows (IBA vol1 §14.2.5.6: 1 = VL0, 2 = VL0–1,
/// 3 = VL0–3, 4 = VL0–7, 5 = VL0–14; 0 and reserved codes allow none).
#[must_use]
pub fn data_vls(code: u8) -> u8 {
    match code {
        1 => 1,
        2 => 2,
        3 => 4,
        4 => 8,
        5 => 15,
        _ => 0,
    }
}

/// The OperationalVLs code the SM programs on a linked port: min(VLCap of both ends,
/// `max_op_vls`), at least 1 (OpenSM `osm_physp_calc_link_op_vls`; `max_op_vls` 0 acts as 1).
/// A port without a discovered remote keeps its own VLCap (capped), as OpenSM does for an
/// unlinked port's current OperVLs.
#[must_use]
pub fn link_op_vls(local: &PortInfo, remote: Option<&PortInfo>, max_op_vls: u8) -> u8 {
    let mut v = local.vl_cap();
    if let Some(r) = remote {
        v = v.min(r.vl_cap());
    }
    v.max(1).min(max_op_vls.max(1))
}

/// The OperationalVLs code the SM will program on port `p` of node `n` ([`link_op_vls`] of the
/// port and its remote); `None` if the port was never read.
#[must_use]
pub fn port_op_vls(subnet: &Subnet, n: NodeId, p: PortNum, max_op_vls: u8) -> Option<u8> {
    let port = subnet.port(n, p)?;
    let info = port.info.as_ref()?;
    let remote = port
        .remote
        .and_then(|(rn, rp)| subnet.port(rn, rp))
        .and_then(|r| r.info.as_ref());
    Some(link_op_vls(info, remote, max_op_vls))
}

/// How many data VLs an engine may use, as OpenSM computes `min_data_vls` /
/// `min_sw_data_vls` (`osm_port_info_rcv.c`): per port `2^(VLCap−1)` capped at
/// `2^(max_op_vls−1)` and at 15, minimum over the ports that are not Down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlBudget {
    /// Minimum over end ports (CA and router ports, switch port 0).
    pub min_data_vls: u8,
    /// Minimum over switch external ports.
    pub min_sw_data_vls: u8,
}

impl VlBudget {
    /// The budget of `subnet` under `max_op_vls` (1..=5; 0 acts as 1). A subnet without such
    /// ports gets 15, OpenSM's starting value.
    #[must_use]
    pub fn of(subnet: &Subnet, max_op_vls: u8) -> VlBudget {
        let cap = 1u32 << (max_op_vls.clamp(1, 5) - 1);
        let mut b = VlBudget {
            min_data_vls: 15,
            min_sw_data_vls: 15,
        };
        for id in subnet.node_ids() {
            let node = subnet.node(id);
            for p in 0..=node.num_ports {
                let Some(info) = subnet.port(id, PortNum(p)).and_then(|x| x.info) else {
                    continue;
                };
                if info.port_state() == ibmad::PortState::DOWN {
                    continue;
                }
                let code = info.vl_cap().clamp(1, 5);
                let v = (1u32 << (code - 1)).min(cap).min(15) as u8;
                let slot = if node.is_switch() && p != 0 {
                    &mut b.min_sw_data_vls
                } else {
                    &mut b.min_data_vls
                };
                *slot = (*slot).min(v);
            }
        }
        b
    }

    /// The smaller of the two minima: VLs usable on every port.
    #[must_use]
    pub fn min(&self) -> u8 {
        self.min_data_vls.min(self.min_sw_data_vls)
    }
}

/// Which sources one row of a [`PathSls`] covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlSource {
    /// One row: the SL depends on the destination LID only.
    Dest,
    /// One row per switch ([`SwitchSlots`] order): the SL of (SLID, DLID) is the row of the
    /// switch SLID's port is attached to (a switch's own LID: the switch itself).
    Switch,
    /// One row per source LID `0..=top`.
    Lid,
    /// One row per source switch as for [`SlSource::Switch`], one column per destination
    /// switch (the same slots): the SL of (SLID, DLID) is that of the switches behind the two
    /// LIDs; a DLID behind no switch is SL 0.
    SwitchPair,
}

const NO_ROW: u32 = u32::MAX;

/// Per-path service levels: SL (0..=15) for each (source, destination LID), the source at the
/// granularity of [`SlSource`]. Unset entries are SL 0. See the module docs for the contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSls {
    top: Lid,
    width: usize,
    source: SlSource,
    /// Row of each source LID `0..=top`; [`NO_ROW`] for LIDs of no end port.
    row_of_lid: Vec<u32>,
    /// [`SlSource::SwitchPair`]: the column of each destination LID `0..=top` ([`NO_ROW`]:
    /// none, SL 0); empty otherwise (the column is the LID).
    col_of_lid: Vec<u32>,
    /// Entries per row: `width`, or the number of switches for [`SlSource::SwitchPair`].
    stride: usize,
    slots: Option<SwitchSlots>,
    data: Vec<u8>,
    /// SL bits taken from the SL the SA would give the path without the engine (the
    /// request's, the QoS level's, the partition's): [`PathSls::with_hint_bits`].
    hint_bits: u8,
}

impl PathSls {
    /// SL per destination LID `0..=top`, all 0.
    #[must_use]
    pub fn per_dest(top: Lid) -> PathSls {
        let width = usize::from(top.0) + 1;
        PathSls {
            top,
            width,
            source: SlSource::Dest,
            row_of_lid: vec![0; width],
            col_of_lid: Vec::new(),
            stride: width,
            slots: None,
            data: vec![0; width],
            hint_bits: 0,
        }
    }

    /// SL per (source switch, destination LID `0..=top`), all 0; rows in `slots` order. Each
    /// end-port LID of `subnet` (with its LMC range) is mapped to the switch its port is linked
    /// to, a switch's LID to the switch itself; a CA port linked to no switch has no row.
    #[must_use]
    pub fn per_source_switch(subnet: &Subnet, slots: &SwitchSlots, top: Lid) -> PathSls {
        let width = usize::from(top.0) + 1;
        PathSls {
            top,
            width,
            source: SlSource::Switch,
            row_of_lid: Self::switch_of_lid(subnet, slots, width),
            col_of_lid: Vec::new(),
            stride: width,
            data: vec![0; width * slots.len()],
            slots: Some(slots.clone()),
            hint_bits: 0,
        }
    }

    /// SL per (source switch, destination switch), all 0; rows and columns in `slots` order.
    /// Source and destination LIDs (with their LMC ranges) map to switches as in
    /// [`PathSls::per_source_switch`]; [`PathSls::set_dest_slot`] changes a destination's.
    #[must_use]
    pub fn per_switch_pair(subnet: &Subnet, slots: &SwitchSlots, top: Lid) -> PathSls {
        let width = usize::from(top.0) + 1;
        let row_of_lid = Self::switch_of_lid(subnet, slots, width);
        PathSls {
            top,
            width,
            source: SlSource::SwitchPair,
            col_of_lid: row_of_lid.clone(),
            row_of_lid,
            stride: slots.len(),
            data: vec![0; slots.len() * slots.len()],
            slots: Some(slots.clone()),
            hint_bits: 0,
        }
    }

    /// The slot of the switch each end-port LID `0..width` is behind (a switch's own LIDs: the
    /// switch), [`NO_ROW`] for others.
    fn switch_of_lid(subnet: &Subnet, slots: &SwitchSlots, width: usize) -> Vec<u32> {
        let mut row_of_lid = vec![NO_ROW; width];
        for (n, p) in subnet.end_ports() {
            let Some(port) = subnet.port(n, p) else {
                continue;
            };
            if port.lid == Lid::UNASSIGNED {
                continue;
            }
            let sw = if subnet.node(n).is_switch() {
                Some(n)
            } else {
                port.remote
                    .map(|(rn, _)| rn)
                    .filter(|&rn| subnet.node(rn).is_switch())
            };
            let Some(row) = sw.and_then(|s| slots.slot(s)) else {
                continue;
            };
            let base = usize::from(port.lid.0);
            for l in base..base + (1usize << port.lmc.min(7)) {
                if let Some(e) = row_of_lid.get_mut(l) {
                    *e = row as u32;
                }
            }
        }
        row_of_lid
    }

    /// SL per (source LID, destination LID), both `0..=top`, all 0. Quadratic in the LID
    /// space: for small fabrics only.
    #[must_use]
    pub fn per_lid_pair(top: Lid) -> PathSls {
        let width = usize::from(top.0) + 1;
        PathSls {
            top,
            width,
            source: SlSource::Lid,
            row_of_lid: (0..width as u32).collect(),
            col_of_lid: Vec::new(),
            stride: width,
            slots: None,
            data: vec![0; width * width],
            hint_bits: 0,
        }
    }

    /// The highest destination (and source) LID covered.
    #[must_use]
    pub fn top(&self) -> Lid {
        self.top
    }

    /// The source granularity.
    #[must_use]
    pub fn source(&self) -> SlSource {
        self.source
    }

    /// The SL of the path from `slid` to `dlid`; `None` if either is beyond top or `slid` is
    /// the LID of no end port known when the table was made.
    #[must_use]
    #[inline]
    pub fn get(&self, slid: Lid, dlid: Lid) -> Option<u8> {
        let row = *self.row_of_lid.get(usize::from(slid.0))?;
        if row == NO_ROW {
            return None;
        }
        let mut d = usize::from(dlid.0);
        if d >= self.width {
            return None;
        }
        if self.source == SlSource::SwitchPair {
            d = *self.col_of_lid.get(d)? as usize;
            if d == NO_ROW as usize {
                return Some(0);
            }
        }
        self.data.get(row as usize * self.stride + d).copied()
    }

    /// These SLs with `bits` taken from the SL the SA would otherwise give a path (the
    /// request's, the QoS level's, the partition's): torus-2QoS leaves bit 3, the QoS level,
    /// to the request (OpenSM `torus_path_sl`: `sl_set_qos(sl_get_qos(path_sl_hint))`).
    /// The engine's SLs must have those bits clear.
    #[must_use]
    pub fn with_hint_bits(mut self, bits: u8) -> PathSls {
        self.hint_bits = bits & 0x0F;
        self
    }

    /// The SL the SA grants the path from `slid` to `dlid` when it would otherwise give
    /// `hint` ([`PathSls::get`] with the [`PathSls::with_hint_bits`] of `hint`).
    #[must_use]
    pub fn granted(&self, slid: Lid, dlid: Lid, hint: u8) -> Option<u8> {
        self.get(slid, dlid).map(|sl| sl | (hint & self.hint_bits))
    }

    /// Makes destination LID `dlid` one of the switch in slot `slot` ([`SlSource::SwitchPair`]
    /// only; `None`: of no switch, SL 0 from everywhere). Returns false for another
    /// granularity, `dlid` beyond top or a slot beyond the switches.
    pub fn set_dest_slot(&mut self, dlid: Lid, slot: Option<usize>) -> bool {
        let col = match slot {
            Some(s) if s < self.stride => s as u32,
            Some(_) => return false,
            None => NO_ROW,
        };
        match self.col_of_lid.get_mut(usize::from(dlid.0)) {
            Some(e) if self.source == SlSource::SwitchPair => {
                *e = col;
                true
            }
            _ => false,
        }
    }

    /// Sets the SL toward `dlid` from every source (the whole column). Returns false if `dlid`
    /// is beyond top, `sl > 15` or the granularity is [`SlSource::SwitchPair`] (a column there
    /// is every LID behind a switch).
    pub fn set_dest(&mut self, dlid: Lid, sl: u8) -> bool {
        let d = usize::from(dlid.0);
        if d >= self.width || usize::from(sl) >= NUM_SLS || self.source == SlSource::SwitchPair {
            return false;
        }
        for row in self.data.chunks_mut(self.width) {
            row[d] = sl;
        }
        true
    }

    /// Sets the SL from switch `sw`'s row toward `dlid` ([`SlSource::Switch`] only). Returns
    /// false for another granularity, a switch without a row, `dlid` beyond top or `sl > 15`.
    pub fn set_from_switch(&mut self, sw: NodeId, dlid: Lid, sl: u8) -> bool {
        match self.switch_row_mut(sw) {
            Some(row) if usize::from(sl) < NUM_SLS => match row.get_mut(usize::from(dlid.0)) {
                Some(e) => {
                    *e = sl;
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    /// Sets the SL of (`slid`, `dlid`) ([`SlSource::Lid`] only). Returns false for another
    /// granularity, a LID beyond top or `sl > 15`.
    pub fn set_pair(&mut self, slid: Lid, dlid: Lid, sl: u8) -> bool {
        let (s, d) = (usize::from(slid.0), usize::from(dlid.0));
        if self.source != SlSource::Lid || s >= self.width || d >= self.width || sl > 15 {
            return false;
        }
        self.data[s * self.width + d] = sl;
        true
    }

    /// The row of switch `sw` ([`SlSource::Switch`]), indexed by destination LID.
    pub fn switch_row_mut(&mut self, sw: NodeId) -> Option<&mut [u8]> {
        self.row_of_switch_mut(SlSource::Switch, sw)
    }

    /// The row of switch `sw` ([`SlSource::SwitchPair`]), indexed by destination slot.
    pub fn switch_pair_row_mut(&mut self, sw: NodeId) -> Option<&mut [u8]> {
        self.row_of_switch_mut(SlSource::SwitchPair, sw)
    }

    /// Switch `sw`'s row if the table has granularity `source` (rows per switch slot).
    fn row_of_switch_mut(&mut self, source: SlSource, sw: NodeId) -> Option<&mut [u8]> {
        if self.source != source {
            return None;
        }
        let slot = self.slots.as_ref()?.slot(sw)?;
        let b = slot * self.stride;
        self.data.get_mut(b..b + self.stride)
    }

    /// All rows as one slice (`rows × width`, row-major; width = top + 1, or the number of
    /// switches for [`SlSource::SwitchPair`]), for engines that fill rows in parallel
    /// (`par_chunks_mut(width)`); rows are in the order of [`SlSource`]: one row, switch
    /// slots, or source LIDs. Values above 15 are read as 15.
    pub fn rows_mut(&mut self) -> (&mut [u8], usize) {
        (&mut self.data, self.stride)
    }

    /// The switch order of the rows ([`SlSource::Switch`]).
    #[must_use]
    pub fn slots(&self) -> Option<&SwitchSlots> {
        self.slots.as_ref()
    }

    /// The highest SL used by any path (0 if none set).
    #[must_use]
    pub fn max_sl(&self) -> u8 {
        self.data.iter().copied().max().unwrap_or(0).min(15)
    }
}

/// The SL-to-VL tables of one node: per (input, output) port pair on a switch, per port on a
/// CA or router.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NodeSl2Vl {
    switch: bool,
    num_ports: u8,
    /// Switch: `(n+1)²` tables, index `in * (n+1) + out`; end node: `n+1`, index = port.
    tables: Vec<SlToVl>,
}

/// SL-to-VL mapping tables an engine decided, per node (see the module docs for what an
/// unset node means). Table values are the VL for each SL, as in the SLtoVLMappingTable
/// attribute ([`SlToVl`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sl2VlTables {
    nodes: Vec<Option<Box<NodeSl2Vl>>>,
}

impl Sl2VlTables {
    /// No node set.
    #[must_use]
    pub fn new(subnet: &Subnet) -> Sl2VlTables {
        Sl2VlTables {
            nodes: vec![None; subnet.nodes.len()],
        }
    }

    fn node_mut(&mut self, subnet: &Subnet, id: NodeId) -> Option<&mut NodeSl2Vl> {
        if id.idx() >= subnet.nodes.len() {
            return None;
        }
        if self.nodes.len() < subnet.nodes.len() {
            self.nodes.resize(subnet.nodes.len(), None);
        }
        let node = subnet.node(id);
        let n = usize::from(node.num_ports) + 1;
        let e = self.nodes.get_mut(id.idx())?;
        let t = e.get_or_insert_with(|| {
            Box::new(NodeSl2Vl {
                switch: node.is_switch(),
                num_ports: node.num_ports,
                tables: vec![SlToVl::default(); if node.is_switch() { n * n } else { n }],
            })
        });
        Some(t)
    }

    /// Sets every (input, output) pair of switch (or every port of end node) `id` to `table`.
    /// Returns false if `id` is not a node of `subnet`.
    pub fn set_node(&mut self, subnet: &Subnet, id: NodeId, table: SlToVl) -> bool {
        match self.node_mut(subnet, id) {
            Some(t) => {
                t.tables.fill(table);
                true
            }
            None => false,
        }
    }

    /// The (input, output) tables of switch `id` as one row-major slice: input port `i`'s
    /// tables are `[i * (NumPorts + 1)..][..NumPorts + 1]`, indexed by output port. A switch
    /// set for the first time starts all-VL0. `None` if `id` is not a switch of `subnet`.
    pub fn switch_tables_mut(&mut self, subnet: &Subnet, id: NodeId) -> Option<&mut [SlToVl]> {
        if subnet.nodes.get(id.idx()).is_none_or(|n| !n.is_switch()) {
            return None;
        }
        self.node_mut(subnet, id)
            .filter(|t| t.switch)
            .map(|t| t.tables.as_mut_slice())
    }

    /// Sets the table of (`in_port`, `out_port`) on a switch, or of port `out_port` on a CA or
    /// router (`in_port` is ignored there). A node set for the first time starts with every
    /// other table all-VL0. Returns false for an unknown node or a port beyond NumPorts.
    pub fn set(
        &mut self,
        subnet: &Subnet,
        id: NodeId,
        in_port: PortNum,
        out_port: PortNum,
        table: SlToVl,
    ) -> bool {
        let Some(t) = self.node_mut(subnet, id) else {
            return false;
        };
        match t.index(in_port, out_port) {
            Some(i) => {
                t.tables[i] = table;
                true
            }
            None => false,
        }
    }

    /// The table of (`in_port`, `out_port`) (CA/router: of port `out_port`); `None` if the
    /// engine did not set this node or a port is beyond NumPorts.
    #[must_use]
    pub fn get(&self, id: NodeId, in_port: PortNum, out_port: PortNum) -> Option<SlToVl> {
        let t = self.nodes.get(id.idx())?.as_ref()?;
        t.tables.get(t.index(in_port, out_port)?).copied()
    }

    /// The VL for `sl` from `in_port` to `out_port` (see [`Sl2VlTables::get`]).
    #[must_use]
    pub fn vl(&self, id: NodeId, in_port: PortNum, out_port: PortNum, sl: u8) -> Option<u8> {
        self.get(id, in_port, out_port)?.vl(sl)
    }

    /// True if the engine set any table of node `id`.
    #[must_use]
    pub fn has_node(&self, id: NodeId) -> bool {
        self.nodes.get(id.idx()).is_some_and(Option::is_some)
    }

    /// Nodes with tables, in id order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_some())
            .map(|(i, _)| NodeId(i as u32))
    }

    /// True if no node is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.iter().all(Option::is_none)
    }
}

impl NodeSl2Vl {
    fn index(&self, in_port: PortNum, out_port: PortNum) -> Option<usize> {
        if out_port.0 > self.num_ports {
            return None;
        }
        if !self.switch {
            return Some(usize::from(out_port.0));
        }
        if in_port.0 > self.num_ports {
            return None;
        }
        Some(usize::from(in_port.0) * (usize::from(self.num_ports) + 1) + usize::from(out_port.0))
    }
}

/// The VL arbitration an engine wants on one port. Entries beyond the port's
/// VLArbitrationHighCap / LowCap are not sent; the VL of each entry is masked to OperVLs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VlArbPort {
    /// High-priority table, up to [`VLARB_ENTRIES`] entries (blocks 3 and 4).
    pub high: Vec<VlArbEntryRepr>,
    /// Low-priority table, up to [`VLARB_ENTRIES`] entries (blocks 1 and 2).
    pub low: Vec<VlArbEntryRepr>,
    /// PortInfo.VLHighLimit; `None` keeps the configured `qos_*_high_limit`.
    pub high_limit: Option<u8>,
}

/// A rewrite an engine asks for of the *configured* VL arbitration of a port (OpenSM's
/// `update_vlarb` hook, which edits each `qos_*_vlarb_*` block before the SM masks it to the
/// port's OperationalVLs and sends it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlArbFold {
    /// torus-2QoS on a switch port that faces an end port (OpenSM `torus_update_osm_vlarb`):
    /// inter-switch links carry QoS level 0 on VLs 0–3 and level 1 on VLs 4–7, links to end
    /// ports only VL 0 (level 0) and VL 1 (level 1). The switch-external tables the port gets
    /// are written for the former, so in each block the entries for VL 0 are kept, those for
    /// VL 4 become VL 1, every other entry is dropped, and the kept ones move to the front of
    /// the block in their order (the rest of the block is `0:0`).
    TorusEndport,
}

impl VlArbFold {
    /// Applies the rewrite to one block (the entries the port's capability admits).
    pub fn apply(self, block: &mut [VlArbEntryRepr]) {
        match self {
            VlArbFold::TorusEndport => {
                let mut next = 0;
                for i in 0..block.len() {
                    let e = block[i];
                    let vl = match e.vl {
                        0 => 0,
                        4 => 1,
                        _ => {
                            block[i] = VlArbEntryRepr::default();
                            continue;
                        }
                    };
                    block[i] = VlArbEntryRepr::default();
                    block[next] = VlArbEntryRepr {
                        vl,
                        weight: e.weight,
                    };
                    next += 1;
                }
            }
        }
    }
}

/// VL arbitration tables an engine decided, per (node, port); ports not present get the QoS
/// configuration (see the module docs). A switch's external ports are its output ports; port
/// 0 of a switch counts only with an enhanced port 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VlArbTables {
    /// The ports the engine set.
    pub ports: BTreeMap<(NodeId, PortNum), VlArbPort>,
    /// Ports whose configured tables the engine rewrites ([`VlArbFold`]) instead of replacing
    /// them; a port in [`VlArbTables::ports`] takes those entries and no fold.
    pub folds: BTreeMap<(NodeId, PortNum), VlArbFold>,
}

impl VlArbTables {
    /// The engine's arbitration for a port, if it set one.
    #[must_use]
    pub fn get(&self, id: NodeId, p: PortNum) -> Option<&VlArbPort> {
        self.ports.get(&(id, p))
    }

    /// The fold the engine asks for on a port's configured tables, if any.
    #[must_use]
    pub fn fold(&self, id: NodeId, p: PortNum) -> Option<VlArbFold> {
        self.folds.get(&(id, p)).copied()
    }
}

/// An SL-to-VL table from a VL per SL (`vls[sl]`, low 4 bits kept).
#[must_use]
pub fn sl2vl_from(vls: [u8; NUM_SLS]) -> SlToVl {
    let mut t = SlToVl::default();
    for (sl, &v) in (0u8..).zip(vls.iter()) {
        t.set_vl(sl, v & 0x0F);
    }
    t
}

/// The table mapping SL *i* to VL *i* mod `vls` (nue's recommended 1:1 mapping) — SL 15 also
/// folds, it is not "drop".
#[must_use]
pub fn sl2vl_modulo(vls: u8) -> SlToVl {
    let m = vls.clamp(1, 15);
    let mut v = [0u8; NUM_SLS];
    for (sl, e) in (0u8..).zip(v.iter_mut()) {
        *e = sl % m;
    }
    sl2vl_from(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::{active_port_info, Node};
    use ibmad::{Guid, NodeType};

    /// The SA's SL is the engine's, plus only the hint bits the engine leaves to it.
    #[test]
    fn granted_keeps_only_the_hint_bits() {
        let mut t = PathSls::per_lid_pair(Lid(4));
        assert!(t.set_pair(Lid(1), Lid(2), 5));
        assert_eq!(
            t.granted(Lid(1), Lid(2), 0xB),
            Some(5),
            "no hint bits by default"
        );
        let t = t.with_hint_bits(8);
        assert_eq!(t.granted(Lid(1), Lid(2), 0xB), Some(0xD));
        assert_eq!(t.granted(Lid(1), Lid(2), 3), Some(5));
        assert_eq!(t.get(Lid(1), Lid(2)), Some(5));
        assert_eq!(t.granted(Lid(9), Lid(2), 8), None);
    }

    /// sw(1) port 1 — ca(2) port 1; sw port 2 — ca(3) port 1. LIDs: sw 1, ca2 2, ca3 3..=4
    /// (LMC 1).
    fn fabric() -> (Subnet, NodeId, NodeId, NodeId) {
        let mut s = Subnet::new();
        let sw = s.add_active_node(Node::new(Guid(1), NodeType::SWITCH, 2, "sw"));
        let a = s.add_active_node(Node::new(Guid(0x10), NodeType::CA, 1, "a"));
        let b = s.add_active_node(Node::new(Guid(0x20), NodeType::CA, 1, "b"));
        s.connect_active((sw, PortNum(1)), (a, PortNum(1)));
        s.connect_active((sw, PortNum(2)), (b, PortNum(1)));
        s.port_mut(sw, PortNum(0)).unwrap().lid = Lid(1);
        s.port_mut(a, PortNum(1)).unwrap().lid = Lid(2);
        let pb = s.port_mut(b, PortNum(1)).unwrap();
        pb.lid = Lid(3);
        pb.lmc = 1;
        (s, sw, a, b)
    }

    #[test]
    fn torus_endport_fold_keeps_vl0_moves_vl4_to_vl1_and_compacts() {
        let e = |vl, weight| VlArbEntryRepr { vl, weight };
        // OpenSM's default qos_vlarb_low, first 8 entries: 0:0,1:4,…,7:4.
        let mut low: Vec<VlArbEntryRepr> =
            (0..8).map(|v| e(v, if v == 0 { 0 } else { 4 })).collect();
        VlArbFold::TorusEndport.apply(&mut low);
        assert_eq!(low[..3], [e(0, 0), e(1, 4), e(0, 0)], "VL 4 became VL 1");
        assert!(low[2..].iter().all(|x| *x == VlArbEntryRepr::default()));
        // Order kept, weights carried, entries after the last kept one zeroed.
        let mut blk = vec![e(3, 9), e(4, 7), e(1, 1), e(0, 5), e(4, 2), e(2, 3)];
        VlArbFold::TorusEndport.apply(&mut blk);
        assert_eq!(
            blk,
            vec![e(1, 7), e(0, 5), e(1, 2), e(0, 0), e(0, 0), e(0, 0)]
        );
    }

    #[test]
    fn data_vls_codes() {
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 6].map(data_vls),
            [0, 1, 2, 4, 8, 15, 0],
            "IBA OperationalVLs encoding"
        );
    }

    #[test]
    fn per_source_switch_maps_every_lid_of_the_switch() {
        let (s, sw, _, _) = fabric();
        let slots = SwitchSlots::new(&s);
        let mut t = PathSls::per_source_switch(&s, &slots, Lid(4));
        assert!(t.set_from_switch(sw, Lid(2), 3));
        assert_eq!(t.get(Lid(3), Lid(2)), Some(3), "CA b behind sw");
        assert_eq!(t.get(Lid(4), Lid(2)), Some(3), "LMC range too");
        assert_eq!(t.get(Lid(1), Lid(2)), Some(3), "the switch's own LID");
        assert_eq!(t.get(Lid(2), Lid(3)), Some(0), "unset is SL 0");
        assert_eq!(t.get(Lid(5), Lid(2)), None, "beyond top");
        assert_eq!(t.get(Lid(0), Lid(2)), None, "LID 0 is no end port");
        assert!(!t.set_pair(Lid(2), Lid(3), 1), "wrong granularity");
        assert!(!t.set_from_switch(sw, Lid(2), 16), "SL 16 does not exist");
        assert_eq!(t.max_sl(), 3);
    }

    #[test]
    fn per_switch_pair_maps_both_ends_to_switches() {
        let (s, sw, _, _) = fabric();
        let slots = SwitchSlots::new(&s);
        let mut t = PathSls::per_switch_pair(&s, &slots, Lid(4));
        assert_eq!(t.source(), SlSource::SwitchPair);
        assert!(!t.set_from_switch(sw, Lid(2), 3), "wrong granularity");
        assert!(!t.set_dest(Lid(2), 3), "a column is a whole switch here");
        let row = t.switch_pair_row_mut(sw).unwrap();
        assert_eq!(row.len(), 1, "one column per switch");
        row[0] = 5;
        assert_eq!(
            t.get(Lid(3), Lid(2)),
            Some(5),
            "CA to CA behind the same switch"
        );
        assert_eq!(
            t.get(Lid(4), Lid(1)),
            Some(5),
            "LMC range to the switch's own LID"
        );
        assert_eq!(t.get(Lid(5), Lid(2)), None, "beyond top");
        assert_eq!(t.get(Lid(0), Lid(2)), None, "LID 0 is no end port");
        assert_eq!(
            t.get(Lid(2), Lid(0)),
            Some(0),
            "a destination of no switch is SL 0"
        );
        assert!(t.set_dest_slot(Lid(2), None));
        assert_eq!(t.get(Lid(3), Lid(2)), Some(0), "moved off the switch");
        assert!(t.set_dest_slot(Lid(2), Some(0)));
        assert_eq!(t.get(Lid(3), Lid(2)), Some(5));
        assert!(!t.set_dest_slot(Lid(2), Some(1)), "no second switch");
        assert!(!t.set_dest_slot(Lid(5), Some(0)), "beyond top");
        assert_eq!(t.max_sl(), 5);
        let (rows, width) = t.rows_mut();
        assert_eq!((rows.len(), width), (1, 1));
        let mut d = PathSls::per_dest(Lid(4));
        assert!(!d.set_dest_slot(Lid(2), Some(0)), "wrong granularity");
        assert!(d.switch_pair_row_mut(sw).is_none());
    }

    #[test]
    fn per_dest_and_per_pair() {
        let mut d = PathSls::per_dest(Lid(4));
        assert!(d.set_dest(Lid(3), 5));
        assert_eq!(d.get(Lid(2), Lid(3)), Some(5));
        assert_eq!(d.get(Lid(4), Lid(3)), Some(5));
        let mut p = PathSls::per_lid_pair(Lid(4));
        assert!(p.set_pair(Lid(2), Lid(3), 7));
        assert_eq!(p.get(Lid(2), Lid(3)), Some(7));
        assert_eq!(p.get(Lid(3), Lid(2)), Some(0));
        assert!(p.set_dest(Lid(4), 2));
        assert_eq!(p.get(Lid(1), Lid(4)), Some(2));
    }

    #[test]
    fn sl2vl_switch_tables_are_row_major_by_input() {
        let (s, sw, a, _) = fabric();
        let mut t = Sl2VlTables::new(&s);
        let rows = t.switch_tables_mut(&s, sw).unwrap();
        assert_eq!(rows.len(), 9, "(NumPorts + 1)² tables");
        for (k, e) in rows.iter_mut().enumerate() {
            *e = sl2vl_modulo(1 + k as u8);
        }
        for i in 0..3u8 {
            for o in 0..3u8 {
                assert_eq!(
                    t.get(sw, PortNum(i), PortNum(o)),
                    Some(sl2vl_modulo(1 + i * 3 + o))
                );
            }
        }
        assert!(
            t.switch_tables_mut(&s, a).is_none(),
            "a CA has no port pairs"
        );
        assert!(!t.has_node(a), "and is left unset");
    }

    #[test]
    fn sl2vl_tables_per_pair_and_per_port() {
        let (s, sw, a, b) = fabric();
        let mut t = Sl2VlTables::new(&s);
        assert!(t.is_empty());
        let m = sl2vl_modulo(2);
        assert!(t.set_node(&s, sw, m));
        let mut one = SlToVl::default();
        one.set_vl(0, 1);
        assert!(t.set(&s, sw, PortNum(1), PortNum(2), one));
        assert_eq!(t.vl(sw, PortNum(1), PortNum(2), 0), Some(1));
        assert_eq!(t.vl(sw, PortNum(2), PortNum(1), 0), Some(0));
        assert_eq!(t.vl(sw, PortNum(2), PortNum(1), 3), Some(1));
        assert!(
            !t.set(&s, sw, PortNum(3), PortNum(1), one),
            "beyond NumPorts"
        );
        assert!(t.set(&s, a, PortNum(0), PortNum(1), one));
        assert_eq!(
            t.vl(a, PortNum(9), PortNum(1), 0),
            Some(1),
            "CA: in ignored"
        );
        assert!(!t.has_node(b));
        assert_eq!(
            t.get(b, PortNum(0), PortNum(1)),
            None,
            "not set: engine leaves it"
        );
        assert_eq!(t.nodes().collect::<Vec<_>>(), vec![sw, a]);
    }

    #[test]
    fn budget_is_min_over_ports_capped_by_max_op_vls() {
        let (mut s, sw, a, _) = fabric();
        for (n, p) in [(sw, 0), (sw, 1), (sw, 2), (a, 1)] {
            s.port_mut(n, PortNum(p))
                .unwrap()
                .info
                .as_mut()
                .unwrap()
                .set_vl_cap(4);
        }
        let b = s.node_ids().nth(2).unwrap();
        s.port_mut(b, PortNum(1))
            .unwrap()
            .info
            .as_mut()
            .unwrap()
            .set_vl_cap(3);
        let v = VlBudget::of(&s, 5);
        assert_eq!(v.min_sw_data_vls, 8);
        assert_eq!(v.min_data_vls, 4, "CA b has VLCap 3 = VL0-3");
        assert_eq!(VlBudget::of(&s, 2).min(), 2);
        let pi = active_port_info();
        let mut big = pi;
        big.set_vl_cap(5);
        let mut small = pi;
        small.set_vl_cap(3);
        assert_eq!(link_op_vls(&big, Some(&small), 5), 3);
        assert_eq!(link_op_vls(&big, Some(&big), 4), 4);
        assert_eq!(
            link_op_vls(&pi, None, 0),
            1,
            "VLCap 0 and max_op_vls 0 act as 1"
        );
        assert_eq!(port_op_vls(&s, sw, PortNum(2), 5), Some(3));
    }

    #[test]
    fn modulo_table() {
        let t = sl2vl_modulo(4);
        assert_eq!((0..16).map(|sl| t.vl(sl).unwrap()).collect::<Vec<_>>(), {
            (0..16u8).map(|sl| sl % 4).collect::<Vec<_>>()
        });
    }
}

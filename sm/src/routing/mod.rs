//! Unicast routing: the engine interface, the engine chain with OpenSM's fallback, and what
//! engines produce: [`Routes`] — the linear forwarding tables ([`Lfts`]) and, for engines that
//! use virtual lanes, path SLs, SL-to-VL and VL arbitration tables ([`vl`]).
//!
//! Engines are pure (STYLE P7): they read a [`Subnet`] whose ports carry LIDs
//! ([`crate::lid::assign_lids`]) and return [`Routes`]; they never touch switches. The shared
//! graph code (usable links, switch slots, BFS, hop matrix, candidate ports) is in [`graph`];
//! [`crate::program`] turns `Routes` into SMPs by diffing them against what the switches hold.
//! The chain
//! ([`route_chain`]) tries the configured engines in order and, unless `no_fallback` is given,
//! falls back to min-hop (OpenSM `osm_ucast_mgr_process`), recording the log lines OpenSM prints
//! so operators can grep for `"<engine> tables configured on all switches"`.

pub mod ar;
pub mod cdg;
pub mod dfp;
pub mod dfsssp;
pub mod dor;
pub mod file;
pub mod ftree;
pub mod graph;
pub mod lash;
pub mod minhop;
pub mod nue;
pub mod torus;
pub mod updn;
pub mod vl;

use ibmad::{Lid, PortNum};
use rand::SeedableRng;
use thiserror::Error;

use crate::subnet::{NodeId, Subnet};
use graph::SwitchSlots;

/// LFT entry meaning "no path" (OpenSM `OSM_NO_PATH`).
pub const NO_PATH: u8 = 0xFF;

/// Entries per LinearForwardingTable block (IBA vol1 §14.2.5.10).
pub const LFT_BLOCK: usize = 64;

/// Desired linear forwarding tables: one row per switch (in [`SwitchSlots`] order), indexed by
/// LID `0..=top`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lfts {
    top: Lid,
    width: usize,
    slots: SwitchSlots,
    data: Vec<u8>,
}

impl Lfts {
    /// Empty tables (every entry [`NO_PATH`]) for every switch of `subnet`, LIDs `0..=top`.
    #[must_use]
    pub fn new(subnet: &Subnet, top: Lid) -> Lfts {
        Lfts::with_slots(SwitchSlots::new(subnet), top)
    }

    /// Empty tables for the switches of `slots` (one row per slot), LIDs `0..=top`.
    #[must_use]
    pub fn with_slots(slots: SwitchSlots, top: Lid) -> Lfts {
        let width = usize::from(top.0) + 1;
        Lfts {
            top,
            width,
            data: vec![NO_PATH; width * slots.len()],
            slots,
        }
    }

    /// Tables for the switches of `slots` whose every row the caller fills (e.g. with
    /// [`NO_PATH`]) before writing it: the memory is only allocated — zeroed pages the kernel
    /// hands out at first touch — so that touching and filling a row happens on the thread
    /// that computes it, right before the row is written.
    pub(crate) fn with_slots_unfilled(slots: SwitchSlots, top: Lid) -> Lfts {
        let width = usize::from(top.0) + 1;
        Lfts {
            top,
            width,
            data: vec![0; width * slots.len()],
            slots,
        }
    }

    /// The highest LID the tables cover (SwitchInfo.LinearFDBTop).
    #[must_use]
    pub fn top(&self) -> Lid {
        self.top
    }

    /// Switches that have a table, in discovery order.
    #[must_use]
    pub fn switches(&self) -> &[NodeId] {
        self.slots.switches()
    }

    /// The row order: switch ↔ slot.
    #[must_use]
    pub fn slots(&self) -> &SwitchSlots {
        &self.slots
    }

    /// The rows that are switches of `subnet`, in row order (tables computed for another
    /// subnet may name nodes this one does not have).
    #[must_use]
    pub fn slots_in(&self, subnet: &Subnet) -> SwitchSlots {
        SwitchSlots::from_switches(
            subnet.nodes.len(),
            self.switches()
                .iter()
                .copied()
                .filter(|s| s.idx() < subnet.nodes.len() && subnet.node(*s).is_switch()),
        )
    }

    /// The egress port for `lid` at switch `sw`; `None` if no path, not a switch or beyond top.
    #[must_use]
    #[inline]
    pub fn get(&self, sw: NodeId, lid: Lid) -> Option<PortNum> {
        let t = self.table(sw)?;
        match t.get(usize::from(lid.0)) {
            Some(&p) if p != NO_PATH => Some(PortNum(p)),
            _ => None,
        }
    }

    /// The whole row of switch `sw` (index = LID, [`NO_PATH`] = none).
    #[must_use]
    #[inline]
    pub fn table(&self, sw: NodeId) -> Option<&[u8]> {
        let b = self.slots.slot(sw)? * self.width;
        self.data.get(b..b + self.width)
    }

    /// Mutable row of switch `sw`.
    #[inline]
    pub fn table_mut(&mut self, sw: NodeId) -> Option<&mut [u8]> {
        let b = self.slots.slot(sw)? * self.width;
        self.data.get_mut(b..b + self.width)
    }

    /// Sets one entry (`None` = no path). Returns false if `sw` has no table or `lid > top`.
    #[inline]
    pub fn set(&mut self, sw: NodeId, lid: Lid, port: Option<PortNum>) -> bool {
        match self
            .table_mut(sw)
            .and_then(|t| t.get_mut(usize::from(lid.0)))
        {
            Some(e) => {
                *e = port.map_or(NO_PATH, |p| p.0);
                true
            }
            None => false,
        }
    }

    /// Number of 64-entry LFT blocks needed to cover `0..=top`.
    #[must_use]
    pub fn num_blocks(&self) -> usize {
        self.width.div_ceil(LFT_BLOCK)
    }

    /// Block `block` of switch `sw` as sent in a LinearForwardingTable Set (entries past top
    /// are [`NO_PATH`]).
    #[must_use]
    pub fn block(&self, sw: NodeId, block: usize) -> Option<[u8; LFT_BLOCK]> {
        let t = self.table(sw)?;
        let start = block.checked_mul(LFT_BLOCK)?;
        if start >= t.len() {
            return None;
        }
        let mut out = [NO_PATH; LFT_BLOCK];
        let end = (start + LFT_BLOCK).min(t.len());
        out[..end - start].copy_from_slice(&t[start..end]);
        Some(out)
    }

    /// All rows as one slice per switch: `(switch, row)`.
    #[cfg(not(feature = "parallel"))]
    pub(crate) fn rows_mut(&mut self) -> impl Iterator<Item = (NodeId, &mut [u8])> {
        self.slots
            .switches()
            .iter()
            .copied()
            .zip(self.data.chunks_mut(self.width.max(1)))
    }

    /// Parallel version of [`Lfts::rows_mut`].
    #[cfg(feature = "parallel")]
    pub(crate) fn par_rows_mut(
        &mut self,
    ) -> impl rayon::iter::IndexedParallelIterator<Item = (NodeId, &mut [u8])> {
        use rayon::prelude::*;
        let w = self.width.max(1);
        self.slots
            .switches()
            .par_iter()
            .copied()
            .zip(self.data.par_chunks_mut(w))
    }

    /// Sets every row from LID-major columns: `cols[l * n + a]` is the entry of slot `a` for
    /// LID `l`, `n` the number of slots (an engine that routes a destination at a time writes
    /// one column per LID). Returns false, changing nothing, if `cols` is not `width * n`
    /// long. Transposed 8 × 8 entries at a time (eight words in, eight out), in tiles of 64
    /// LIDs so the rows written stay in cache: a byte at a time, every read of a column
    /// touched another cache line (k36 and the 1,024-switch random graph: 17 MiB).
    pub(crate) fn set_lid_major(&mut self, cols: &[u8]) -> bool {
        let (w, n) = (self.width, self.slots.len());
        if cols.len() != w * n {
            return false;
        }
        const TILE: usize = 64;
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&cols[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let (n8, w8) = (n - n % 8, w - w % 8);
        for lt in (0..w8).step_by(TILE) {
            let lend = (lt + TILE).min(w8);
            for a in (0..n8).step_by(8) {
                for l in (lt..lend).step_by(8) {
                    let mut r = [0u64; 8];
                    for (i, x) in r.iter_mut().enumerate() {
                        *x = word((l + i) * n + a);
                    }
                    transpose8x8(&mut r);
                    for (i, x) in r.iter().enumerate() {
                        let o = (a + i) * w + l;
                        self.data[o..o + 8].copy_from_slice(&x.to_le_bytes());
                    }
                }
            }
        }
        // The edges: slots past the last multiple of 8, LIDs past it.
        for a in 0..n {
            let from = if a < n8 { w8 } else { 0 };
            for l in from..w {
                self.data[a * w + l] = cols[l * n + a];
            }
        }
        true
    }
}

/// Transposes the 8 × 8 bytes of `r` (row `i` = word `i`, column `j` = its byte `j`, little
/// endian): 2 × 2 blocks of bytes, then of 16-bit pairs, then of 32-bit halves swap across
/// the diagonal.
#[inline]
fn transpose8x8(r: &mut [u64; 8]) {
    const M1: u64 = 0x00ff_00ff_00ff_00ff;
    const M2: u64 = 0x0000_ffff_0000_ffff;
    const M4: u64 = 0x0000_0000_ffff_ffff;
    for (s, m, pairs) in [
        (8, M1, [(0, 1), (2, 3), (4, 5), (6, 7)]),
        (16, M2, [(0, 2), (1, 3), (4, 6), (5, 7)]),
        (32, M4, [(0, 4), (1, 5), (2, 6), (3, 7)]),
    ] {
        for (i, j) in pairs {
            let t = ((r[i] >> s) ^ r[j]) & m;
            r[j] ^= t;
            r[i] ^= t << s;
        }
    }
}

/// The highest LID of any end port, the top of the LFTs an engine computes.
#[must_use]
pub fn max_lid(subnet: &Subnet) -> Lid {
    subnet
        .end_ports()
        .filter_map(|(n, p)| subnet.port(n, p))
        .filter(|x| x.lid != Lid::UNASSIGNED)
        .map(|x| {
            let last = u32::from(x.lid.0) + (1u32 << x.lmc.min(7)) - 1;
            Lid(last.min(u32::from(Lid::UNICAST_MAX.0)) as u16)
        })
        .max()
        .unwrap_or(Lid::UNASSIGNED)
}

/// What a routing run decided, for [`crate::program`] to program (STYLE P7).
///
/// The unicast LFTs always; the virtual-lane parts (per-path service levels, SL-to-VL tables
/// per (input, output) port, VLArb tables) only from engines that decide them. **A part left
/// `None` means "this engine does not decide it"**: the SM leaves those tables to the QoS
/// configuration (`qos`, `qos_*`) or as the ports hold them. The full contract — what the SM
/// programs, dumps and answers in the SA for each part, set or not, and the masking to
/// OperationalVLs — is in [`vl`]'s module docs. The type is `#[non_exhaustive]` so that it
/// grows (multicast routing adds MFTs) without touching engines that do not use the new
/// parts: build it with [`Routes::new`] and the `with_*` methods.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Routes {
    /// Unicast linear forwarding tables, one row per switch.
    pub lfts: Lfts,
    /// The SL of each path (SA PathRecord SL); `None`: the engine assigns no SLs.
    pub path_sl: Option<vl::PathSls>,
    /// SL-to-VL tables; `None`: the engine leaves SL-to-VL to the QoS configuration.
    pub sl2vl: Option<vl::Sl2VlTables>,
    /// VL arbitration; `None`: the engine leaves it to the QoS configuration.
    pub vlarb: Option<vl::VlArbTables>,
    /// Adaptive-routing groups (dfp, dfp2); `None`: static routing only. Not programmed yet
    /// (no vendor attribute is defined, see [`ar`]).
    pub ar: Option<ar::ArTables>,
    /// The master spanning tree multicast groups are routed on (torus-2QoS); `None`: each
    /// group gets a tree of its own ([`crate::mcast`]).
    pub mcast_tree: Option<crate::mcast::MasterTree>,
    /// The unicast load of every switch-to-switch channel (sssp, dfsssp, nue): groups' trees
    /// are then grown by Dijkstra over them ([`crate::mcast`]); `None`: min-hop trees.
    pub mcast_loads: Option<crate::mcast::ChannelLoads>,
}

impl Routes {
    /// Routes that consist of unicast LFTs only.
    #[must_use]
    pub fn new(lfts: Lfts) -> Routes {
        Routes {
            lfts,
            path_sl: None,
            sl2vl: None,
            vlarb: None,
            ar: None,
            mcast_tree: None,
            mcast_loads: None,
        }
    }

    /// These routes with per-path SLs.
    #[must_use]
    pub fn with_path_sl(mut self, sls: vl::PathSls) -> Routes {
        self.path_sl = Some(sls);
        self
    }

    /// These routes with SL-to-VL tables.
    #[must_use]
    pub fn with_sl2vl(mut self, t: vl::Sl2VlTables) -> Routes {
        self.sl2vl = Some(t);
        self
    }

    /// These routes with VL arbitration tables.
    #[must_use]
    pub fn with_vlarb(mut self, t: vl::VlArbTables) -> Routes {
        self.vlarb = Some(t);
        self
    }

    /// These routes with adaptive-routing groups.
    #[must_use]
    pub fn with_ar(mut self, t: ar::ArTables) -> Routes {
        self.ar = Some(t);
        self
    }

    /// These routes with a master spanning tree for multicast.
    #[must_use]
    pub fn with_mcast_tree(mut self, t: crate::mcast::MasterTree) -> Routes {
        self.mcast_tree = Some(t);
        self
    }

    /// These routes with the channel loads multicast trees are grown over.
    #[must_use]
    pub fn with_mcast_loads(mut self, l: crate::mcast::ChannelLoads) -> Routes {
        self.mcast_loads = Some(l);
        self
    }

    /// The SL of the path `slid` → `dlid`: the engine's, or 0 when it assigns none.
    #[must_use]
    pub fn sl(&self, slid: Lid, dlid: Lid) -> u8 {
        self.path_sl
            .as_ref()
            .and_then(|t| t.get(slid, dlid))
            .unwrap_or(0)
    }
}

impl From<Lfts> for Routes {
    fn from(lfts: Lfts) -> Routes {
        Routes::new(lfts)
    }
}

/// Why routing failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RouteError {
    /// The name is no engine this SM knows.
    #[error("cannot find or setup routing engine '{0}'")]
    UnknownEngine(String),
    /// The subnet is not routable by this engine (bad input, named in the text).
    #[error("{engine}: cannot route: {reason}")]
    Unroutable {
        /// Engine name.
        engine: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Every engine failed and `no_fallback` was given (or min-hop itself failed).
    #[error("no routing engine able to configure switch tables (tried {tried:?})")]
    AllEnginesFailed {
        /// Engines tried, in order.
        tried: Vec<String>,
        /// The OpenSM-style log lines of the attempt (as in [`RouteOutcome::log`]).
        log: Vec<String>,
    },
}

/// Options shared by engines (OpenSM names in brackets). `Default` gives OpenSM's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineOptions {
    /// Count routes to switch LIDs in the per-port balancing counters
    /// `port_profile_switch_nodes`; OpenSM default false.
    pub port_profile_switch_nodes: bool,
    /// `scatter_ports`: 0 = off; otherwise minhop and updn choose at random (from the RNG
    /// handed to the engine, so reproducibly) among the equally loaded minimum-hop ports.
    pub scatter_ports: u64,
    /// `port_shifting`: minhop, updn and dnup scan a switch's equally short ports from a
    /// place that moves with the routes already on them, so that the LIDs of a destination
    /// group do not line up on the same port of every switch (OpenSM's `port_shifting`).
    /// Default false.
    pub port_shifting: bool,
    /// `avoid_throttled_links`: sssp, dfsssp and nue route over no switch-to-switch link
    /// that runs below the fastest speed or widest width both ends enable, or at different
    /// speeds or widths at its two ends ([`graph::link_throttled`], OpenSM's
    /// `osm_link_is_throttled`). Default false.
    pub avoid_throttled_links: bool,
    /// `port_prof_ignore_file` (`-i`): lines `SWITCH-GUID PORT`; routes minhop, updn and dnup
    /// send out those switch ports are not counted by the balancing. As read by the caller.
    pub port_prof_ignore_file: Option<OptionFile>,
    /// `hop_weights_file` (`-w`): lines `SWITCH-GUID PORT WEIGHT` (1..=255, default 1): minhop
    /// and dor count a hop out of that port as WEIGHT hops when choosing the shortest ports.
    /// As read by the caller.
    pub hop_weights_file: Option<OptionFile>,
    /// `port_search_ordering_file` (`-O`, formerly `dimn_ports_file`): lines `SWITCH-GUID
    /// PORT PORT …`, the order in which minhop, updn, dnup and dor scan that switch's ports
    /// (the listed ones first, then the rest ascending); for dor, the dimension order. As read
    /// by the caller.
    pub port_search_ordering_file: Option<OptionFile>,
    /// `ids_guid_file` (`-m`): lines `SWITCH-GUID ID`; updn orders switches of one rank by
    /// these ids instead of their GUIDs. As read by the caller.
    pub ids_guid_file: Option<OptionFile>,
    /// `root_guid_file` for updn/dnup, as read by the caller (engines do no I/O).
    pub root_guid_file: Option<OptionFile>,
    /// `lfts_file` for the `file` engine, as read by the caller.
    pub lfts_file: Option<OptionFile>,
    /// `cn_guid_file` for ftree: compute-node port GUIDs, as read by the caller.
    pub cn_guid_file: Option<OptionFile>,
    /// `io_guid_file` for ftree: I/O-node port GUIDs, as read by the caller.
    pub io_guid_file: Option<OptionFile>,
    /// `qos`: QoS programming is on (`-Q`). Engines that need it (OpenSM's torus-2QoS,
    /// lash, dfsssp) fail when it is off; see [`vl`] for what the SM does with VL parts either
    /// way. Default false.
    pub qos: bool,
    /// `max_op_vls`, 1..=5 (0 acts as 1): the cap on PortInfo.OperationalVLs the SM programs,
    /// which with the ports' VLCap bounds the VLs an engine may use ([`vl::VlBudget::of`]).
    /// Default 5 (VL0–14), as OpenSM.
    pub max_op_vls: u8,
    /// `lash_start_vl`: the first SL (and VL) lash uses; default 0.
    pub lash_start_vl: u8,
    /// `do_mesh_analysis` for lash: parallel links count as one, their routes shared
    /// round-robin; default false.
    pub do_mesh_analysis: bool,
    /// `nue_max_num_vls`: the VLs (layers) nue may use, 0 = all the ports allow; default 1.
    pub nue_max_num_vls: u8,
    /// `nue_include_switches`: nue routes switch LIDs deadlock-free too; default false.
    pub nue_include_switches: bool,
    /// `torus_config`: torus-2QoS.conf, as read by the caller.
    pub torus_config: Option<OptionFile>,
    /// `guid_routing_order_file`: port GUIDs, one per line, that the engines balancing with
    /// [`minhop`]'s loop (minhop, updn, dnup, dor, dfp) route first, in this order, before
    /// the usual order (OpenSM's `port_order_list`); as read by the caller.
    pub guid_routing_order_file: Option<OptionFile>,
    /// `guid_routing_order_no_scatter`: the ports of the routing order file are routed
    /// without `scatter_ports`; default false.
    pub guid_routing_order_no_scatter: bool,
    /// `connect_roots` (`-z`): updn routes the LIDs of its root switches (and the CAs on them)
    /// by plain min-hop, so roots reach each other, which up/down alone does not allow
    /// (OpenSM `updn_clear_non_root_hops`); not deadlock-free for that traffic. ftree routes
    /// the switch LIDs its upper switches have no route to through its last leaf (OpenSM
    /// `fabric_route_roots`); dnup routes the LIDs a switch has no down/up route to by
    /// min-hop. Default false.
    pub connect_roots: bool,
    /// The LFTs the switches hold now, by switch GUID; `None` = OpenSM's
    /// `ignore_existing_lfts` (every route chosen afresh). With them, the engines that
    /// balance with [`minhop`]'s loop (minhop, updn, dnup, dor, dfp) keep an entry whose port
    /// is still a candidate (still minimal, or still legal for the engine) and choose only
    /// the others — OpenSM's `osm_switch_recommend_path`, so that a change moves only the
    /// routes it has to. The SM passes them on re-sweeps that found no new switch and no new
    /// link, and not after a reroute request.
    pub existing_lfts: Option<std::sync::Arc<ExistingLfts>>,
}

/// What the switches' LFTs hold, by switch GUID (see [`EngineOptions::existing_lfts`]).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExistingLfts {
    tables: std::collections::HashMap<ibmad::Guid, Vec<u8>>,
}

impl ExistingLfts {
    /// Records `table` (port per LID, [`NO_PATH`] where unknown) for switch `guid`.
    pub fn insert(&mut self, guid: ibmad::Guid, table: Vec<u8>) {
        self.tables.insert(guid, table);
    }

    /// The table of switch `guid`, if known.
    #[must_use]
    pub fn get(&self, guid: ibmad::Guid) -> Option<&[u8]> {
        self.tables.get(&guid).map(Vec::as_slice)
    }

    /// Switches with a table.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// No switch has a table.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

impl core::fmt::Debug for ExistingLfts {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ExistingLfts({} switches)", self.tables.len())
    }
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        EngineOptions {
            port_profile_switch_nodes: false,
            scatter_ports: 0,
            root_guid_file: None,
            lfts_file: None,
            cn_guid_file: None,
            io_guid_file: None,
            qos: false,
            max_op_vls: 5,
            lash_start_vl: 0,
            do_mesh_analysis: false,
            nue_max_num_vls: 1,
            nue_include_switches: false,
            torus_config: None,
            guid_routing_order_file: None,
            guid_routing_order_no_scatter: false,
            connect_roots: false,
            port_shifting: false,
            avoid_throttled_links: false,
            port_prof_ignore_file: None,
            hop_weights_file: None,
            port_search_ordering_file: None,
            ids_guid_file: None,
            existing_lfts: None,
        }
    }
}

impl EngineOptions {
    /// The files these options name, by OpenSM option name.
    pub fn files_mut(&mut self) -> [(&'static str, &mut Option<OptionFile>); 10] {
        [
            ("root_guid_file", &mut self.root_guid_file),
            ("lfts_file", &mut self.lfts_file),
            ("cn_guid_file", &mut self.cn_guid_file),
            ("io_guid_file", &mut self.io_guid_file),
            ("torus_config", &mut self.torus_config),
            ("guid_routing_order_file", &mut self.guid_routing_order_file),
            ("port_prof_ignore_file", &mut self.port_prof_ignore_file),
            ("hop_weights_file", &mut self.hop_weights_file),
            (
                "port_search_ordering_file",
                &mut self.port_search_ordering_file,
            ),
            ("ids_guid_file", &mut self.ids_guid_file),
        ]
    }

    /// These options with the files `fresh` names (as read again by the front end), and the
    /// names of the options whose file changed (path, text, or whether it could be read).
    /// OpenSM reads these files each time it routes, so a changed file takes effect at the
    /// next routing; every other option keeps its value.
    #[must_use]
    pub fn with_files_of(&self, fresh: &EngineOptions) -> (EngineOptions, Vec<&'static str>) {
        let mut out = self.clone();
        let mut fresh = fresh.clone();
        let mut changed = Vec::new();
        for ((name, mine), (_, theirs)) in out.files_mut().into_iter().zip(fresh.files_mut()) {
            if *mine != *theirs {
                changed.push(name);
                *mine = theirs.take();
            }
        }
        (out, changed)
    }

    /// The VLs this subnet lets an engine use under [`EngineOptions::max_op_vls`].
    #[must_use]
    pub fn vl_budget(&self, subnet: &Subnet) -> vl::VlBudget {
        vl::VlBudget::of(subnet, self.max_op_vls)
    }
}

/// A file named by an option, read by the front end: the path (for messages) and its text, or
/// why it could not be read (engines then behave as OpenSM does when `fopen` fails).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionFile {
    /// The path as configured.
    pub path: String,
    /// The contents, or the read error as text.
    pub contents: Result<String, String>,
}

impl OptionFile {
    /// A file whose text is already in memory.
    #[must_use]
    pub fn from_text(path: &str, text: &str) -> OptionFile {
        OptionFile {
            path: path.to_string(),
            contents: Ok(text.to_string()),
        }
    }
}

/// A routing engine: pure function from subnet (with LIDs) to [`Routes`].
pub trait RoutingEngine: Send + Sync {
    /// The OpenSM name (`minhop`, `updn`, …).
    fn name(&self) -> &'static str;
    /// Computes the routes. `rng` is the only source of randomness an engine may use.
    /// Appends OpenSM-style log lines (`function: message`) to `log`; [`route_chain`] calls
    /// this.
    fn route_logged(
        &self,
        subnet: &Subnet,
        rng: &mut dyn rand::RngCore,
        log: &mut Vec<String>,
    ) -> Result<Routes, RouteError>;
    /// [`RoutingEngine::route_logged`] without the log.
    fn route(&self, subnet: &Subnet, rng: &mut dyn rand::RngCore) -> Result<Routes, RouteError> {
        self.route_logged(subnet, rng, &mut Vec::new())
    }
}

/// The engines this SM implements, by OpenSM name (`null` is accepted as minhop too).
pub const ENGINES: &[&str] = &[
    "minhop",
    "updn",
    "dnup",
    "ftree",
    "file",
    "sssp",
    "dfsssp",
    "lash",
    "nue",
    "dor",
    "torus-2QoS",
    "dfp",
    "dfp2",
];

/// The severity of a [`RouteOutcome::log`] line: OpenSM logs the engine-setup lines and
/// every `ERR` line at error level, the rest at info level.
#[must_use]
pub fn log_line_level(line: &str) -> crate::event::Level {
    if line.contains("ERR ") || line.starts_with("setup_routing_engine") {
        crate::event::Level::Error
    } else {
        crate::event::Level::Info
    }
}

/// The engine called `name` (`"minhop"`, or the legacy `"null"`).
pub fn engine_by_name(
    name: &str,
    opts: &EngineOptions,
) -> Result<Box<dyn RoutingEngine>, RouteError> {
    match name {
        "minhop" | "null" => Ok(Box::new(minhop::MinHop::new(opts.clone()))),
        "updn" => Ok(Box::new(updn::UpDn::new(opts.clone(), updn::Mode::UpDown))),
        "dnup" => Ok(Box::new(updn::UpDn::new(opts.clone(), updn::Mode::DownUp))),
        "file" => Ok(Box::new(file::FileEngine::new(opts.clone()))),
        "ftree" => Ok(Box::new(ftree::FatTree::new(opts))),
        "sssp" => Ok(Box::new(dfsssp::Sssp::new(opts.clone()))),
        "dfsssp" => Ok(Box::new(dfsssp::Sssp::dfsssp(opts.clone()))),
        "lash" => Ok(Box::new(lash::Lash::new(opts.clone()))),
        "nue" => Ok(Box::new(nue::Nue::new(opts.clone()))),
        "dor" => Ok(Box::new(dor::Dor::new(opts.clone()))),
        "torus-2QoS" => Ok(Box::new(torus::Torus2QoS::new(opts.clone()))),
        "dfp" => Ok(Box::new(dfp::Dfp::new(opts.clone()))),
        "dfp2" => Ok(Box::new(dfp::Dfp::dfp2(opts.clone()))),
        n => Err(RouteError::UnknownEngine(n.to_string())),
    }
}

/// What [`route_chain`] produced.
#[derive(Clone, Debug)]
pub struct RouteOutcome {
    /// The routes.
    pub routes: Routes,
    /// The engine that produced them (`"none"` for a subnet without switches).
    pub engine: &'static str,
    /// OpenSM-style log lines, `function: message`, in order.
    pub log: Vec<String>,
}

/// Runs the engine chain: each name in order (the token `no_fallback` in the list has the same
/// effect as `no_fallback = true`), then min-hop as the fallback unless disabled. An empty list
/// means min-hop. `seed` seeds the RNG handed to engines (ChaCha8) and is the `scatter_ports`
/// option (0 = off).
pub fn route_chain(
    engines: &[String],
    no_fallback: bool,
    subnet: &Subnet,
    seed: u64,
) -> Result<RouteOutcome, RouteError> {
    route_chain_with(
        engines,
        no_fallback,
        subnet,
        seed,
        &EngineOptions {
            scatter_ports: seed,
            ..EngineOptions::default()
        },
    )
}

/// [`route_chain`] with explicit engine options.
pub fn route_chain_with(
    engines: &[String],
    no_fallback: bool,
    subnet: &Subnet,
    seed: u64,
    opts: &EngineOptions,
) -> Result<RouteOutcome, RouteError> {
    let mut log = Vec::new();
    let mut no_fallback = no_fallback;
    let mut chain: Vec<Box<dyn RoutingEngine>> = Vec::new();
    let mut tried = Vec::new();
    for name in engines.iter().flat_map(|e| e.split([',', ' ', '\t'])) {
        if name.is_empty() {
            continue;
        }
        if name == "no_fallback" {
            no_fallback = true;
            continue;
        }
        match engine_by_name(name, opts) {
            Ok(e) => chain.push(e),
            Err(e) => {
                tried.push(name.to_string());
                if matches!(e, RouteError::UnknownEngine(_)) {
                    log.push(format!(
                        "setup_routing_engine: cannot find or setup routing engine '{name}' (ibsm has {})",
                        ENGINES.join(", ")
                    ));
                } else {
                    log.push(format!(
                        "setup_routing_engine: {e} (ibsm has {})",
                        ENGINES.join(", ")
                    ));
                }
                log.push(format!(
                    "setup_routing_engines: Failed to setup routing engine '{name}'"
                ));
            }
        }
    }
    if subnet.switches().next().is_none() {
        return Ok(RouteOutcome {
            routes: Routes::new(Lfts::new(subnet, Lid(0))),
            engine: "none",
            log,
        });
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for e in &chain {
        tried.push(e.name().to_string());
        match e.route_logged(subnet, &mut rng, &mut log) {
            Ok(routes) => {
                log.push(format!(
                    "osm_ucast_mgr_process: {} tables configured on all switches",
                    e.name()
                ));
                return Ok(RouteOutcome {
                    routes,
                    engine: e.name(),
                    log,
                });
            }
            Err(err) => {
                log.push(format!("ucast_mgr_route: {err}"));
                log.push(format!(
                    "ucast_mgr_route: {}: cannot build lid matrices",
                    e.name()
                ));
            }
        }
    }
    if !no_fallback {
        let mh = minhop::MinHop::new(opts.clone());
        tried.push(mh.name().to_string());
        match mh.route(subnet, &mut rng) {
            Ok(routes) => {
                log.push(format!(
                    "osm_ucast_mgr_process: {} tables configured on all switches",
                    mh.name()
                ));
                return Ok(RouteOutcome {
                    routes,
                    engine: mh.name(),
                    log,
                });
            }
            Err(err) => log.push(format!("ucast_mgr_route: {err}")),
        }
    }
    log.push(
        "osm_ucast_mgr_process: No routing engine able to successfully configure  switch tables on current fabric"
            .to_string(),
    );
    Err(RouteError::AllEnginesFailed { tried, log })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files come from the fresh options, named when they differ; every other option
    /// stays.
    #[test]
    fn with_files_of_takes_the_files_and_keeps_the_rest() {
        let old = EngineOptions {
            lash_start_vl: 2,
            torus_config: Some(OptionFile::from_text("t.conf", "torus 4 4 4\n")),
            root_guid_file: Some(OptionFile::from_text("roots", "0x1\n")),
            ..EngineOptions::default()
        };
        let fresh = EngineOptions {
            lash_start_vl: 0,
            torus_config: Some(OptionFile::from_text(
                "t.conf",
                "torus 4 4 4\nx_dateline 1\n",
            )),
            root_guid_file: Some(OptionFile::from_text("roots", "0x1\n")),
            lfts_file: Some(OptionFile {
                path: "lfts".into(),
                contents: Err("No such file".into()),
            }),
            ..EngineOptions::default()
        };
        let (new, changed) = old.with_files_of(&fresh);
        assert_eq!(changed, ["lfts_file", "torus_config"]);
        assert_eq!(new.torus_config, fresh.torus_config);
        assert_eq!(new.lfts_file, fresh.lfts_file);
        assert_eq!(new.lash_start_vl, 2, "not a file: kept");
        let (same, none) = new.with_files_of(&fresh);
        assert_eq!((same, none.len()), (new, 0));
    }

    /// `set_lid_major` is the plain transpose, on sizes that are and are not multiples of 8
    /// and of its 64-LID tiles.
    #[test]
    fn set_lid_major_transposes() {
        for (n, top) in [
            (1usize, 0u16),
            (3, 9),
            (8, 63),
            (9, 64),
            (16, 200),
            (21, 130),
        ] {
            let switches: Vec<NodeId> = (0..n as u32).map(NodeId).collect();
            let slots = SwitchSlots::from_switches(n, switches.iter().copied());
            let mut lfts = Lfts::with_slots(slots, Lid(top));
            let w = usize::from(top) + 1;
            let cols: Vec<u8> = (0..w * n).map(|i| (i * 7 % 251) as u8).collect();
            assert!(!lfts.set_lid_major(&cols[1..]), "a short input is refused");
            assert!(lfts.set_lid_major(&cols));
            for (a, &sw) in switches.iter().enumerate() {
                let row = lfts.table(sw).expect("row");
                for l in 0..w {
                    assert_eq!(row[l], cols[l * n + a], "n {n} top {top} slot {a} LID {l}");
                }
            }
        }
    }
}

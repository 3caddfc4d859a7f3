//! Programming (STYLE P7): compute the desired SwitchInfo, LFT blocks and PortInfo of every
//! node, diff them against what the node is known to hold, and emit Sets only for what
//! differs.
//!
//! - **Desired state**: [`switch_info_set`] (LinearFDBTop from the routes), [`lft_block`] of the
//!   routes' tables, [`desired_port_info`] (the policy below), [`state_set`] for the two state
//!   passes.
//! - **Known state**: the SwitchInfo and PortInfo last read from or acknowledged by each node
//!   (kept in the subnet model), and per switch (by NodeGUID, across sweeps) the LFT blocks
//!   acknowledged by a Set response. A block counts as unknown until its SetResp arrives, so a
//!   lost Set is resent on the next sweep; a switch whose LinearFDBTop changed behind the SM's
//!   back (a reboot) has its blocks forgotten.
//! - **The diff**: `Programmer::plan` (SwitchInfo first, then PortInfo configuration, then the
//!   QoS tables — SL-to-VL and VLArbitration — that differ from what each node is known to hold,
//!   [`crate::qos::program::plan`]), `Programmer::lft_sets` (the LFT blocks, block-major across
//!   groups of switches as large as the window, so the pipeline keeps many switches busy
//!   while one group's tables stay in cache, as a compact work list the pipeline
//!   turns into Sets a few windows at a time) and `state_pass`; acknowledgements come back through
//!   `Programmer::on_ack`. Known QoS tables are kept per NodeGUID across sweeps, like the LFT
//!   blocks, and forgotten with them when a switch was reset.
//!
//! The pure functions here are public; the request-building half is crate-internal and is
//! driven by the sweep pipeline ([`crate::sweep`]).
//!
//! PortInfo policy (OpenSM `osm_link_mgr.c` / `osm_lid_mgr.c` values):
//! - end ports (CA ports, switch port 0): LID, LMC, MasterSMLID, MasterSMSL (the engine's
//!   path SL from the port to the SM, else `sm_sl`: [`master_sm_sl`]), SubnetTimeOut, M_Key,
//!   M_KeyProtectBits, M_KeyLeasePeriod, GidPrefix;
//! - linked physical ports (CA ports, switch ports ≥ 1 with a discovered neighbour):
//!   NeighborMTU = min(MTUCap of both ends), OperationalVLs = min(VLCap of both ends,
//!   max_op_vls), VLHighLimit, and LinkWidthEnabled / LinkSpeedEnabled / LinkSpeedExtEnabled
//!   as `force_link_width` / `force_link_speed` / `force_link_speed_ext` say (by default the
//!   "set to supported" codes 255 / 15 / 31, sent only where the port does not already enable
//!   all it supports, as OpenSM; the Active values are training results and never written);
//!   the Set's AttributeModifier carries SMSupportsExtendedSpeeds where the port has them;
//! - every Set carries PortState = NoStateChange, PortPhysicalState = NoStateChange and
//!   LinkDownDefaultState = NoStateChange unless it is one of the two state passes.
//!
//! A configuration Set is sent only when one of those fields differs from the PortInfo last
//! read from (or acknowledged by) the port; a port that already holds its configuration gets
//! no configuration SMP at all.

use ibmad::attr::modifier;
use ibmad::attr::tables::{LFT_BLOCK_SIZE, LFT_NO_PATH};
use ibmad::attr::{PortInfo, SwitchInfo};
use ibmad::{Guid, Lid, PhysState, PortNum, PortState, SmpAttrId};
use zerocopy::FromBytes;

use crate::config::SmConfig;
use crate::discovery::{data_of, Discovery};
use crate::partition::{block_data, KnownPkeys, PkeyPlan};
use crate::qos::program::{KnownQos, PlanInputs};
use crate::routing::{Lfts, Routes};
use crate::subnet::{NodeId, Subnet};
use crate::txn::{Purpose, Request};
use crate::FastMap;

/// What the SM last knew a switch's LFT to hold, by NodeGUID (survives sweeps).
///
/// A block acknowledged with the content the current routes give it ([`Programmer::set_lft_base`])
/// is recorded as "same as the base" (one byte) instead of a copy of its 64 bytes: after a
/// cold bring-up every block is, and a third copy of every LFT (187 MB at `fat-tree:3,56`,
/// next to the routes and the switches' own) is not kept. Blocks that differ from the base
/// keep their bytes in `own`.
#[derive(Debug, Default)]
struct KnownLft {
    /// LinearFDBTop last acknowledged.
    top: u16,
    /// Per block: [`BLOCK_UNKNOWN`], [`BLOCK_BASE`] or [`BLOCK_OWN`].
    blocks: Vec<u8>,
    /// The bytes of the [`BLOCK_OWN`] blocks.
    own: FastMap<u16, [u8; 64]>,
    /// This switch's row in the base routes' tables (a [`NodeId`] of the subnet they were
    /// computed for), when some block is [`BLOCK_BASE`].
    base_node: Option<NodeId>,
}

/// A block whose content the SM does not know.
const BLOCK_UNKNOWN: u8 = 0;
/// A block known to hold what the base routes give it.
const BLOCK_BASE: u8 = 1;
/// A block known to hold the bytes in [`KnownLft::own`].
const BLOCK_OWN: u8 = 2;

impl KnownLft {
    /// The content block `b` is known to have, if known; `base` is [`Programmer::lft_base`].
    fn block(&self, b: u16, base: Option<&Lfts>) -> Option<[u8; 64]> {
        match self.blocks.get(usize::from(b)).copied()? {
            BLOCK_BASE => Some(lft_block(base?.table(self.base_node?)?, b)),
            BLOCK_OWN => self.own.get(&b).copied(),
            _ => None,
        }
    }

    fn is_known(&self, b: u16) -> bool {
        self.blocks
            .get(usize::from(b))
            .is_some_and(|&k| k != BLOCK_UNKNOWN)
    }
}

/// The configuration the SM last set on a port and what the port answered to its latest Set
/// ([`Programmer::on_port_info_set_ack`]).
#[derive(Clone, Copy, Debug)]
struct KnownPortInfo {
    /// The configuration asked for ([`settle_key`] of the Set's payload).
    asked: PortInfo,
    /// The port's answer (GetResp) to the SM's latest PortInfo Set.
    answer: PortInfo,
}

/// A PortInfo with the fields a configuration Set does not set (states, LinkDownDefault,
/// ClientReregister) cleared: what two configurations are compared by.
fn settle_key(pi: &PortInfo) -> PortInfo {
    let mut k = *pi;
    no_state_change(&mut k);
    k.set_client_reregister(0);
    k
}

/// One LFT block Set still to make ([`Programmer::lft_sets`]): the switch and the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LftSet {
    pub node: NodeId,
    pub block: u16,
}

/// The known state that outlives one sweep's subnet model (the LFT blocks each switch holds),
/// and the diff of desired against known state as Set requests.
#[derive(Debug, Default)]
pub(crate) struct Programmer {
    known_lft: FastMap<Guid, KnownLft>,
    /// The routes whose tables [`BLOCK_BASE`] blocks refer to ([`Programmer::set_lft_base`]).
    lft_base: Option<std::sync::Arc<Routes>>,
    /// By (NodeGUID, port).
    known_pi: FastMap<(Guid, u8), KnownPortInfo>,
    known_qos: FastMap<Guid, KnownQos>,
    known_pkeys: KnownPkeys,
    /// This sweep's partitions resolved against the subnet (and, once planned, laid out).
    pkeys: PkeyPlan,
}

impl Programmer {
    /// Forgets the blocks of every switch whose LinearFDBTop (just read by discovery) is not
    /// the one last acknowledged: it was reset or rebooted.
    /// Returns the NodeGUIDs of the switches forgotten.
    pub fn forget_changed_tops(&mut self, subnet: &Subnet) -> Vec<Guid> {
        let mut reset = Vec::new();
        for id in subnet.switches() {
            let node = subnet.node(id);
            if let (Some(si), Some(k)) = (node.switch_info, self.known_lft.get_mut(&node.guid)) {
                if si.linear_fdb_top.get() != k.top {
                    *k = KnownLft::default();
                    self.known_qos.remove(&node.guid);
                    reset.push(node.guid);
                }
            }
        }
        reset
    }

    /// Makes `routes` (computed for `subnet`) the base that known LFT blocks are recorded
    /// against. A block known to hold what the previous base gave it keeps that mark if the
    /// new routes give it the same content, and otherwise keeps its bytes.
    pub fn set_lft_base(&mut self, subnet: &Subnet, routes: Option<&std::sync::Arc<Routes>>) {
        let same = match (&self.lft_base, routes) {
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if same {
            return;
        }
        let old = self.lft_base.as_deref().map(|r| &r.lfts);
        let new = routes.map(|r| &r.lfts);
        for (guid, k) in &mut self.known_lft {
            let Some(old_node) = k.base_node.take() else {
                continue;
            };
            let old_row = old.and_then(|l| l.table(old_node));
            let new_node = subnet.node_by_guid(*guid);
            let new_row = new.zip(new_node).and_then(|(l, n)| l.table(n));
            let mut any_base = false;
            for (b, state) in k.blocks.iter_mut().enumerate() {
                if *state != BLOCK_BASE {
                    continue;
                }
                let b = u16::try_from(b).unwrap_or(u16::MAX);
                let Some(was) = old_row.map(|t| lft_block(t, b)) else {
                    *state = BLOCK_UNKNOWN;
                    continue;
                };
                if new_row.is_some_and(|t| lft_block(t, b) == was) {
                    any_base = true;
                } else {
                    *state = BLOCK_OWN;
                    k.own.insert(b, was);
                }
            }
            if any_base {
                k.base_node = new_node;
            }
        }
        self.lft_base = routes.cloned();
    }

    /// What the switches of `subnet` are known to hold (acknowledged or read blocks; unknown
    /// entries are [`LFT_NO_PATH`]), for an engine that keeps still-valid entries
    /// ([`crate::routing::EngineOptions::existing_lfts`]). `None` if no block is known.
    pub fn existing_lfts(&self, subnet: &Subnet) -> Option<crate::routing::ExistingLfts> {
        let mut e = crate::routing::ExistingLfts::default();
        for id in subnet.switches() {
            let guid = subnet.node(id).guid;
            let Some(k) = self.known_lft.get(&guid) else {
                continue;
            };
            if k.blocks.iter().all(|&b| b == BLOCK_UNKNOWN) {
                continue;
            }
            let base = self.lft_base.as_deref().map(|r| &r.lfts);
            let mut table = vec![LFT_NO_PATH; k.blocks.len() * LFT_BLOCK_SIZE];
            for b in 0..k.blocks.len() {
                if let Some(blk) = k.block(u16::try_from(b).unwrap_or(u16::MAX), base) {
                    table[b * LFT_BLOCK_SIZE..(b + 1) * LFT_BLOCK_SIZE].copy_from_slice(&blk);
                }
            }
            e.insert(guid, table);
        }
        (!e.is_empty()).then_some(e)
    }

    /// LFT block Gets for the blocks of `0..=top` that a switch may already hold but whose
    /// content the SM does not know (after a restart or a takeover): read before written, so
    /// that a block already right is not written again. Blocks above the switch's current
    /// LinearFDBTop (and every block of a switch whose top is 0, a fresh one) hold nothing to
    /// keep and are not read.
    pub fn reads(&self, disc: &Discovery, lfts: Option<&Lfts>, top: Lid) -> Vec<Request> {
        let Some(lfts) = lfts else {
            return Vec::new();
        };
        let s = &disc.subnet;
        let mut reqs = Vec::new();
        for b in 0..lft_blocks(top) {
            for id in s.switches() {
                let node = s.node(id);
                let cur_top = node.switch_info.map_or(0, |si| si.linear_fdb_top.get());
                if lfts.table(id).is_none()
                    || cur_top == 0
                    || usize::from(b) * LFT_BLOCK_SIZE > usize::from(cur_top)
                {
                    continue;
                }
                let known = self
                    .known_lft
                    .get(&node.guid)
                    .is_some_and(|k| k.is_known(b));
                if !known {
                    reqs.push(Request::get(
                        node.dr_path,
                        SmpAttrId::LINEAR_FT,
                        b.into(),
                        Purpose::GetLft(id, b),
                    ));
                }
            }
        }
        reqs
    }

    /// Resolves the partitions against this sweep's subnet ([`PkeyPlan::resolve`]), forgets
    /// the P_Key tables of ports that were reset, and returns the P_KeyTable Gets of the
    /// blocks the SM does not know (read before written, as the LFT blocks).
    pub fn pkey_reads(&mut self, cfg: &SmConfig, disc: &Discovery) -> Vec<Request> {
        let s = &disc.subnet;
        self.known_pkeys.forget_reset_ports(s);
        self.pkeys = PkeyPlan::resolve(&cfg.partitions, s);
        self.pkeys
            .reads(s, cfg.partitions.enforce, &self.known_pkeys)
            .into_iter()
            .map(|(id, p, b)| {
                let (path, m) = pkey_addr(disc, id, p, b);
                Request::get(path, SmpAttrId::P_KEY_TABLE, m, Purpose::GetPkeys(id, p, b))
            })
            .collect()
    }

    /// A P_KeyTable block of (node, port) was read or acknowledged.
    pub fn on_pkey_ack(
        &mut self,
        disc: &Discovery,
        id: NodeId,
        p: PortNum,
        b: u16,
        data: &[u8; 64],
    ) {
        self.known_pkeys
            .on_block(disc.subnet.node(id).guid, p, b, data);
    }

    /// This sweep's partition plan.
    pub fn pkey_plan(&self) -> &PkeyPlan {
        &self.pkeys
    }

    /// What the SM knows the ports to hold.
    pub fn known_pkeys(&self) -> &KnownPkeys {
        &self.known_pkeys
    }

    /// The programming Sets of a heavy sweep but the LFT blocks, in sending order: SwitchInfo
    /// (LinearFDBTop = `top` before the blocks it covers), the P_KeyTable blocks that differ
    /// from what each port holds ([`crate::partition`]), PortInfo configuration (unless it is
    /// folded into the Armed pass; with the partition enforcement bits), then the QoS Sets
    /// (SL-to-VL, VLArbitration) of `routes` and [`SmConfig::qos`] that differ from what each
    /// node is known to hold. The LFT blocks follow these: [`Programmer::lft_sets`].
    pub fn plan(
        &mut self,
        cfg: &SmConfig,
        disc: &Discovery,
        routes: Option<&Routes>,
        top: Lid,
        sm_lid: Lid,
        new_master: bool,
    ) -> Vec<Request> {
        let mut reqs = Vec::new();
        let s = &disc.subnet;
        for id in s.switches() {
            let node = s.node(id);
            if let Some(cur) = node.switch_info {
                if let Some(set) = switch_info_set(cfg, &cur, top) {
                    reqs.push(Request::set(
                        node.dr_path,
                        SmpAttrId::SWITCH_INFO,
                        0,
                        data_of(&set),
                        Purpose::SetSwitchInfo(id),
                    ));
                }
            }
        }
        let known = &self.known_pkeys;
        let keep = cfg.partitions.keep_indexes;
        self.pkeys
            .layout_all(s, cfg.partitions.enforce, keep, |id, p| {
                known.table(s.node(id).guid, p)
            });
        for (id, p, b, blk) in self.pkeys.sets(s, &self.known_pkeys) {
            let (path, m) = pkey_addr(disc, id, p, b);
            reqs.push(Request::set(
                path,
                SmpAttrId::P_KEY_TABLE,
                m,
                block_data(&blk),
                Purpose::SetPkeys(id, p, b),
            ));
        }
        for id in s.node_ids().filter(|_| !cfg.fold_config_into_arm) {
            let node = s.node(id);
            for p in 0..=node.num_ports {
                let p = PortNum(p);
                let Some(cur) = s.port(id, p).and_then(|x| x.info) else {
                    continue;
                };
                let Some(want) = desired_port_info(cfg, s, id, p, sm_lid, routes)
                    .map(|w| with_enforcement(w, &self.pkeys, id, p))
                else {
                    continue;
                };
                let rereg = client_reregister(cfg, s, id, p, &cur, &want, new_master);
                if !rereg && self.settled(s.node(id).guid, p, &cur, &want) {
                    continue;
                }
                if let Some(set) = configure(&cur, &want, rereg) {
                    reqs.push(Request::set(
                        disc.port_path(id, p),
                        SmpAttrId::PORT_INFO,
                        port_info_set_mod(s, id, p),
                        data_of(&set),
                        Purpose::SetPortInfo(id, p),
                    ));
                }
            }
        }
        self.plan_qos(cfg, disc, routes, &mut reqs);
        reqs
    }

    /// The LFT blocks of `lfts` (LIDs `0..=top`) that differ from what each switch is known
    /// to hold, block-major across groups of `group` switches (block 0 of every switch of
    /// the group, then block 1, …; then the next group), so the pipeline keeps many switches
    /// busy with few Sets each. A compact work list, not requests: a large fabric has
    /// millions of blocks (2.9 M at 3,920 switches × 47,824 LIDs), and
    /// [`Programmer::lft_request`] makes each Set only when the pipeline has room for it.
    ///
    /// Why groups rather than block-major over the whole fabric: with a group as large as
    /// the window (`max_wire_smps`), each switch still has about two Sets in flight, while
    /// the group's table rows and the switches on its paths stay in the host's caches
    /// instead of every Set touching a different switch's row (a cache and TLB miss each in
    /// the SM, and in the simulator a cold agent per hop). At 3,920 switches this halved the
    /// time per Set in the simulator, with the same virtual time (docs/benchmarks.md).
    pub fn lft_sets(
        &self,
        disc: &Discovery,
        lfts: Option<&Lfts>,
        top: Lid,
        group: usize,
    ) -> Vec<LftSet> {
        let Some(lfts) = lfts else {
            return Vec::new();
        };
        let s = &disc.subnet;
        let base = self.lft_base.as_deref().map(|r| &r.lfts);
        // A block marked "same as the base" is known equal without comparing when the base
        // is these very tables and the row is this switch's.
        let base_is_lfts = base.is_some_and(|b| std::ptr::eq(b, lfts));
        // (switch, its table, what it is known to hold)
        type Row<'a> = (NodeId, &'a [u8], Option<&'a KnownLft>);
        let sws: Vec<Row<'_>> = s
            .switches()
            .filter_map(|id| {
                let table = lfts.table(id)?;
                Some((id, table, self.known_lft.get(&s.node(id).guid)))
            })
            .collect();
        let mut sets = Vec::new();
        for rows in sws.chunks(group.max(1)) {
            for b in 0..lft_blocks(top) {
                for &(node, table, known) in rows {
                    if let Some(k) = known {
                        let state = k.blocks.get(usize::from(b)).copied();
                        if state == Some(BLOCK_BASE) && base_is_lfts && k.base_node == Some(node) {
                            continue;
                        }
                        if k.block(b, base) == Some(lft_block(table, b)) {
                            continue;
                        }
                    }
                    sets.push(LftSet { node, block: b });
                }
            }
        }
        sets
    }

    /// The Set of one block of [`Programmer::lft_sets`]' list (`None` if the switch has no
    /// table in `lfts`).
    pub fn lft_request(disc: &Discovery, lfts: &Lfts, set: LftSet) -> Option<Request> {
        let table = lfts.table(set.node)?;
        Some(Request::set(
            disc.subnet.node(set.node).dr_path,
            SmpAttrId::LINEAR_FT,
            set.block.into(),
            lft_block(table, set.block),
            Purpose::SetLft(set.node, set.block),
        ))
    }

    /// The QoS Sets (see [`crate::qos::program`]): only where `qos` is on or the engine set a
    /// VL table, and only what differs from the acknowledged state.
    fn plan_qos(
        &self,
        cfg: &SmConfig,
        disc: &Discovery,
        routes: Option<&Routes>,
        reqs: &mut Vec<Request>,
    ) {
        let engine_tables = routes.is_some_and(|r| r.sl2vl.is_some() || r.vlarb.is_some());
        if !cfg.qos.enabled && !engine_tables {
            return;
        }
        let s = &disc.subnet;
        let inp = plan_inputs(cfg, s, routes);
        let sets = crate::qos::program::plan(&inp, |id| self.known_qos.get(&s.node(id).guid));
        for q in sets {
            reqs.push(Request::set(
                qos_path(disc, q.node, q.port),
                q.attr,
                q.attr_mod,
                q.data,
                Purpose::SetQos(q.node, q.port),
            ));
        }
    }

    /// A QoS Set (`attr`, `attr_mod`) was acknowledged with `data`: the node's known tables.
    pub fn on_qos_ack(
        &mut self,
        disc: &Discovery,
        id: NodeId,
        port: PortNum,
        attr: SmpAttrId,
        attr_mod: u32,
        data: &[u8; 64],
    ) {
        let node = disc.subnet.node(id);
        self.known_qos
            .entry(node.guid)
            .or_insert_with(|| KnownQos::new(node.is_switch(), node.num_ports))
            .on_ack(port, attr, attr_mod, data);
    }

    /// Forgets the QoS tables of every port now in Init (retrained or reset since the last
    /// sweep: a rebooted CA, a replugged cable), so they are read or programmed again.
    pub fn forget_reset_qos(&mut self, subnet: &Subnet) {
        for id in subnet.node_ids() {
            let n = subnet.node(id);
            let Some(k) = self.known_qos.get_mut(&n.guid) else {
                continue;
            };
            for p in 0..=n.num_ports {
                let reset = subnet
                    .port(id, PortNum(p))
                    .and_then(|x| x.info)
                    .is_some_and(|i| i.port_state() == PortState::INIT);
                if reset {
                    k.forget_port(PortNum(p));
                }
            }
        }
    }

    /// The Gets of the QoS tables the SM neither programs this sweep nor knows
    /// ([`crate::qos::program::QosReads`]), as requests; none with `read_qos_tables` off.
    pub fn qos_reads(
        &self,
        cfg: &SmConfig,
        disc: &Discovery,
        routes: Option<&Routes>,
    ) -> crate::qos::program::QosReads {
        if !cfg.qos.read_tables {
            return crate::qos::program::QosReads::default();
        }
        let s = &disc.subnet;
        let inp = plan_inputs(cfg, s, routes);
        crate::qos::program::QosReads::new(&inp, |id| self.known_qos.get(&s.node(id).guid))
    }

    /// The request of one QoS Get.
    pub fn qos_read_request(disc: &Discovery, g: &crate::qos::program::QosGet) -> Request {
        Request::get(
            qos_path(disc, g.node, g.port),
            g.attr,
            g.attr_mod,
            Purpose::GetQos(g.node, g.port),
        )
    }

    /// What the SM knows node `guid` to hold (acknowledged QoS Sets), if anything.
    pub fn known_qos(&self, guid: Guid) -> Option<&KnownQos> {
        self.known_qos.get(&guid)
    }

    /// A PortInfo Set of port `p` of node `id` (payload `sent`) was answered with `answer`
    /// (status 0). A configuration Set (PortState NoChange) records what was asked and the
    /// answer; a state Set only the answer.
    pub fn on_port_info_set_ack(
        &mut self,
        s: &Subnet,
        id: NodeId,
        p: PortNum,
        sent: &[u8; 64],
        answer: &[u8; 64],
    ) {
        let (Ok((sent, _)), Ok((answer, _))) = (
            PortInfo::ref_from_prefix(sent),
            PortInfo::ref_from_prefix(answer),
        ) else {
            return;
        };
        let Some(node) = s.nodes.get(id.idx()) else {
            return;
        };
        let key = (node.guid, p.0);
        if sent.port_state() == PortState::NO_CHANGE {
            self.known_pi.insert(
                key,
                KnownPortInfo {
                    asked: settle_key(sent),
                    answer: *answer,
                },
            );
        } else if let Some(k) = self.known_pi.get_mut(&key) {
            k.answer = *answer;
        }
    }

    /// True if port `p` of the node `guid` was already asked for the configuration `want`
    /// and has not changed since it answered (`cur` is that answer): no Set again. A port
    /// that accepts a Set but keeps reporting its own value for a field it does not implement
    /// (ibsim: LinkWidthEnabled after "set to supported", SubnetTimeout) is not written at
    /// every sweep; one that was reset or reconfigured by someone else answers differently.
    fn settled(&self, guid: Guid, p: PortNum, cur: &PortInfo, want: &PortInfo) -> bool {
        self.known_pi
            .get(&(guid, p.0))
            .is_some_and(|k| k.answer == *cur && k.asked == settle_key(want))
    }

    /// A programming Set was acknowledged, or an LFT block read (GetResp with status 0): what
    /// the node answered is now its known state.
    pub fn on_ack(&mut self, disc: &mut Discovery, purpose: Purpose, data: &[u8; 64]) {
        match purpose {
            Purpose::SetSwitchInfo(id) => {
                if let Ok((si, _)) = SwitchInfo::ref_from_prefix(data) {
                    let guid = disc.subnet.node(id).guid;
                    self.known_lft.entry(guid).or_default().top = si.linear_fdb_top.get();
                    disc.on_switch_info(id, si);
                }
            }
            Purpose::SetLft(id, b) | Purpose::GetLft(id, b) => {
                let node = disc.subnet.node(id);
                let k = self.known_lft.entry(node.guid).or_default();
                // The blocks are known for the top the switch holds now (read by discovery or
                // just acknowledged): a switch whose top was already right gets no SwitchInfo
                // Set, and its blocks must not be forgotten at the next sweep for that.
                if let Some(si) = node.switch_info {
                    k.top = si.linear_fdb_top.get();
                }
                let i = usize::from(b);
                if k.blocks.len() <= i {
                    // Room for every block up to the top at once (blocks arrive block-major:
                    // growing one at a time would copy each switch's list ~log2(blocks) times).
                    let all = usize::from(lft_blocks(Lid(k.top)));
                    k.blocks.resize((i + 1).max(all), BLOCK_UNKNOWN);
                }
                // The same as the base gives this switch's row (the usual case: the SM just
                // set it from there), or its own bytes.
                let base = self.lft_base.as_deref().map(|r| &r.lfts);
                let row = base.and_then(|l| l.table(id));
                let matches_base = row.is_some_and(|t| lft_block(t, b) == *data)
                    && k.base_node.is_none_or(|n| n == id);
                if matches_base {
                    k.blocks[i] = BLOCK_BASE;
                    k.base_node = Some(id);
                    k.own.remove(&b);
                } else {
                    k.blocks[i] = BLOCK_OWN;
                    k.own.insert(b, *data);
                }
            }
            Purpose::SetPortInfo(id, p) => {
                if let Ok((pi, _)) = PortInfo::ref_from_prefix(data) {
                    if let Some(port) = disc.subnet.port_mut(id, p) {
                        port.info = Some(*pi);
                    }
                }
            }
            _ => {}
        }
    }
}

/// One state pass (Init→Armed or Armed→Active): a PortInfo Set with PortState = `to` for every
/// port of the pass now in `from`; with `with_config` (configuration folded into the Armed
/// pass) the Set carries the desired configuration too, and ports outside the pass that still
/// differ get their configuration Set. Without it, each Set goes LID-routed to
/// `lid_route(node, port)` where that is not 0.
#[allow(clippy::too_many_arguments)]
pub(crate) fn state_pass(
    cfg: &SmConfig,
    disc: &Discovery,
    routes: Option<&Routes>,
    pkeys: &PkeyPlan,
    sm_lid: Lid,
    from: PortState,
    to: PortState,
    with_config: bool,
    new_master: bool,
    lid_route: impl Fn(NodeId, PortNum) -> Lid,
) -> Vec<Request> {
    let s = &disc.subnet;
    let mut reqs = Vec::new();
    for id in s.node_ids() {
        for p in 0..=s.node(id).num_ports {
            let p = PortNum(p);
            let Some(info) = s.port(id, p).and_then(|x| x.info) else {
                continue;
            };
            let want = if with_config {
                desired_port_info(cfg, s, id, p, sm_lid, routes)
                    .map(|w| with_enforcement(w, pkeys, id, p))
            } else {
                None
            };
            let in_pass = in_state_pass(s, id, p) && info.port_state() == from;
            let rereg =
                want.is_some_and(|w| client_reregister(cfg, s, id, p, &info, &w, new_master));
            let set = match (in_pass, want) {
                (true, Some(w)) => {
                    let mut set = state_set(&w, to);
                    set.set_client_reregister(u8::from(rereg));
                    set
                }
                (true, None) => state_set(&info, to),
                // Not armed (Down, or its neighbour is unknown, or already Active under a new
                // master) but still configured.
                (false, Some(w)) => match configure(&info, &w, rereg) {
                    Some(c) => c,
                    None => continue,
                },
                (false, None) => continue,
            };
            let mut r = Request::set(
                disc.port_path(id, p),
                SmpAttrId::PORT_INFO,
                port_info_set_mod(s, id, p),
                data_of(&set),
                Purpose::SetPortInfo(id, p),
            );
            if !with_config {
                r.dlid = lid_route(id, p);
            }
            reqs.push(r);
        }
    }
    reqs
}

/// The LID by which port `p` of node `id` can be reached with a LID-routed SMP from the SM at
/// `sm_lid`, or 0 for "use the directed route": both the SM's own port and the target port
/// must hold (acknowledged) the LIDs the SM assigned them. The caller also checks that the
/// LFTs are programmed.
#[must_use]
pub fn lid_route(s: &Subnet, sm_lid: Lid, id: NodeId, p: PortNum) -> Lid {
    let held = |n: NodeId, q: PortNum| {
        s.port(n, q)
            .and_then(|x| x.info)
            .map_or(Lid::UNASSIGNED, |i| i.lid())
    };
    let Some((sn, sp)) = s.sm_port() else {
        return Lid::UNASSIGNED;
    };
    let own = if s.node(sn).is_switch() {
        PortNum(0)
    } else {
        sp
    };
    if held(sn, own) != sm_lid {
        return Lid::UNASSIGNED;
    }
    let q = if s.node(id).is_switch() {
        PortNum(0)
    } else {
        p
    };
    let lid = held(id, q);
    if lid.is_unicast() && s.port(id, q).is_some_and(|x| x.lid == lid) {
        lid
    } else {
        Lid::UNASSIGNED
    }
}

/// The QoS planning inputs of this SM's configuration.
fn plan_inputs<'a>(cfg: &'a SmConfig, s: &'a Subnet, routes: Option<&'a Routes>) -> PlanInputs<'a> {
    PlanInputs {
        cfg: &cfg.qos,
        max_op_vls: cfg.max_op_vls,
        subnet: s,
        routes,
    }
}

/// The directed route of a QoS SMP for node `id` sent through `port`: a switch's own route,
/// a CA's or router's route that ends at that port.
fn qos_path(disc: &Discovery, id: NodeId, port: PortNum) -> ibmad::DrPath {
    let n = disc.subnet.node(id);
    if n.is_switch() {
        n.dr_path
    } else {
        disc.port_path(id, port)
    }
}

/// The directed route and AttributeModifier of P_KeyTable block `b` of port `p` of node `id`:
/// a switch's table by port number in bits 31..16 along the switch's route; a CA port's along
/// the route that ends at that port (modifier = block).
fn pkey_addr(disc: &Discovery, id: NodeId, p: PortNum, b: u16) -> (ibmad::DrPath, u32) {
    let n = disc.subnet.node(id);
    if n.is_switch() {
        (n.dr_path, modifier::pkey(p, b))
    } else {
        (disc.port_path(id, p), modifier::pkey(PortNum(0), b))
    }
}

/// `want` with the PartitionEnforcementInbound/Outbound bits the partition plan asks of switch
/// port `p` of `id` (unchanged where the plan leaves the port alone).
#[must_use]
pub fn with_enforcement(mut want: PortInfo, pkeys: &PkeyPlan, id: NodeId, p: PortNum) -> PortInfo {
    if let Some((inb, outb)) = pkeys.enforcement(id, p) {
        want.set_partition_enforcement_inbound(u8::from(inb));
        want.set_partition_enforcement_outbound(u8::from(outb));
    }
    want
}

/// PortInfo.MasterSMSL (IBA vol1 §14.2.5.6) of an end port whose LID is `lid`: the SL the
/// routing engine gives the path from it to the SM's LID, with `sm_sl` as the request's hint
/// (torus-2QoS keeps its QoS bit), where the engine assigns path SLs; else `sm_sl`. OpenSM
/// `link_mgr_get_smsl`: SA queries from the port then ride the SL the engine made
/// deadlock-free.
#[must_use]
pub fn master_sm_sl(cfg: &SmConfig, routes: Option<&Routes>, lid: Lid, sm_lid: Lid) -> u8 {
    routes
        .and_then(|r| r.path_sl.as_ref())
        .filter(|_| lid != Lid::UNASSIGNED && sm_lid != Lid::UNASSIGNED)
        .and_then(|t| t.granted(lid, sm_lid, cfg.sm_sl))
        .unwrap_or(cfg.sm_sl)
        & 0x0F
}

/// The PortInfo the port should hold, derived from what it holds now (`None` if the port was
/// never read); `routes` give the MasterSMSL ([`master_sm_sl`]).
#[must_use]
pub fn desired_port_info(
    cfg: &SmConfig,
    subnet: &Subnet,
    id: NodeId,
    p: PortNum,
    sm_lid: Lid,
    routes: Option<&Routes>,
) -> Option<PortInfo> {
    let node = subnet.node(id);
    let port = subnet.port(id, p)?;
    let cur = port.info?;
    let mut want = cur;
    let end_port = if node.is_switch() { p.0 == 0 } else { p.0 >= 1 };
    if end_port {
        want.lid.set(port.lid.0);
        want.set_lmc(port.lmc);
        want.master_sm_lid.set(sm_lid.0);
        want.set_master_sm_sl(master_sm_sl(cfg, routes, port.lid, sm_lid));
        want.set_subnet_timeout(cfg.subnet_timeout);
        want.m_key.set(cfg.m_key);
        // OpenSM lid_mgr_set_physp_pi / link_mgr_set_physp_pi.
        want.m_key_lease_period.set(cfg.m_key_lease_period);
        want.set_m_key_protect_bits(cfg.m_key_protection_level.min(3));
        want.gid_prefix.set(cfg.subnet_prefix);
    }
    if p.0 >= 1 {
        if let Some((rn, rp)) = port.remote {
            if let Some(rinfo) = subnet.port(rn, rp).and_then(|r| r.info) {
                let mtu = cur.mtu_cap().max(1).min(rinfo.mtu_cap().max(1));
                let vls = cur
                    .vl_cap()
                    .max(1)
                    .min(rinfo.vl_cap().max(1))
                    .min(cfg.max_op_vls);
                want.set_neighbor_mtu(mtu);
                want.set_operational_vls(vls);
                // With qos on, the port class's qos_[ca_|swe_|rtr_]high_limit (OpenSM
                // osm_qos.c sets it per class, osm_link_mgr.c writes it).
                want.vl_high_limit =
                    crate::qos::program::desired_high_limit(&cfg.qos, subnet, None, id, p)
                        .unwrap_or(cfg.vl_high_limit);
                force_link(cfg, subnet, id, &cur, &rinfo, rn, &mut want);
                // OpenSM link_mgr_set_physp_pi: the head-of-queue lifetime and VL stall
                // count of switch ports (the leaf values toward CAs and routers) and the
                // HOQ lifetime of router ports; the error thresholds of every port.
                let to_switch = subnet.node(rn).is_switch();
                if node.is_switch() {
                    let (hoq, stall) = if to_switch {
                        (cfg.head_of_queue_lifetime, cfg.vl_stall_count)
                    } else {
                        (cfg.leaf_head_of_queue_lifetime, cfg.leaf_vl_stall_count)
                    };
                    want.set_hoq_life(hoq.min(31));
                    want.set_vl_stall_count(stall.min(7));
                } else if node.node_type == ibmad::NodeType::ROUTER {
                    want.set_hoq_life(cfg.leaf_head_of_queue_lifetime.min(31));
                }
                want.set_local_phy_errors(cfg.local_phy_errors_threshold.min(15));
                want.set_overrun_errors(cfg.overrun_errors_threshold.min(15));
            }
        }
    }
    Some(want)
}

/// `force_link_width`, `force_link_speed` and `force_link_speed_ext` ([`SmConfig`]) applied
/// to `want`, the desired PortInfo of a linked port of node `id` (`cur` its PortInfo, `rinfo`
/// its neighbour's, a port of node `rn`), as OpenSM `osm_link_mgr.c` does: the option value is
/// written as it is — the "set to supported" values (255, 15, 31) are resolved by the port's
/// SMA — and a "set to supported" value only where the enabled field differs from the
/// supported one, so a port that already enables everything it supports gets no Set for it.
/// A width mask with 2X needs IsLinkWidth2XSupported and the extended speeds need
/// IsExtendedSpeedsSupported on both ends (a switch port answers with its port 0's
/// capability masks).
fn force_link(
    cfg: &SmConfig,
    subnet: &Subnet,
    id: NodeId,
    cur: &PortInfo,
    rinfo: &PortInfo,
    rn: NodeId,
    want: &mut PortInfo,
) {
    use ibmad::attr::port_info::cap::IS_EXT_SPEEDS_SUP;
    let lw = cfg.force_link_width;
    if lw != 0
        && (lw < WIDTH_2X || caps(subnet, id, cur).1 & CAP2_IS_LINK_WIDTH_2X_SUP != 0)
        && (lw != SET_LWS || cur.link_width_enabled != cur.link_width_supported)
    {
        want.link_width_enabled = lw;
    }
    let ls = cfg.force_link_speed;
    if ls != 0 && (ls != SET_LSS || cur.link_speed_enabled() != cur.link_speed_supported()) {
        want.set_link_speed_enabled(ls);
    }
    let lse = cfg.force_link_speed_ext;
    if lse != 0
        && caps(subnet, id, cur).0 & IS_EXT_SPEEDS_SUP != 0
        && caps(subnet, rn, rinfo).0 & IS_EXT_SPEEDS_SUP != 0
        && (lse != SET_LSES || cur.link_speed_ext_enabled() != cur.link_speed_ext_supported())
    {
        want.set_link_speed_ext_enabled(lse);
    }
}

/// LinkWidthEnabled "set to LinkWidthSupported" (IBA vol1 §14.2.5.6).
const SET_LWS: u8 = 255;
/// LinkSpeedEnabled "set to LinkSpeedSupported".
const SET_LSS: u8 = 15;
/// LinkSpeedExtEnabled "set to LinkSpeedExtSupported".
const SET_LSES: u8 = 31;
/// The 2X bit of the link width masks (IBA 1.3 MgtWG RefIDs #9306-9309).
const WIDTH_2X: u8 = 16;
/// CapabilityMask2.IsLinkWidth2XSupported.
const CAP2_IS_LINK_WIDTH_2X_SUP: u16 = 0x0010;

/// (CapabilityMask, CapabilityMask2) that speak for a port of node `id` whose PortInfo is
/// `info`: a switch's external ports carry no capability masks of their own, its port 0's do.
fn caps(subnet: &Subnet, id: NodeId, info: &PortInfo) -> (u32, u16) {
    let info = if subnet.node(id).is_switch() {
        subnet
            .port(id, PortNum(0))
            .and_then(|p| p.info)
            .unwrap_or(*info)
    } else {
        *info
    };
    (info.capability_mask.get(), info.capability_mask2.get())
}

/// The AttributeModifier of a PortInfo Set to port `p` of node `id`: the port number, with
/// bit 31 (SMSupportsExtendedSpeeds, IBA vol1 §14.2.5.6) where the port announces
/// IsExtendedSpeedsSupported, as OpenSM sets it; without it the port ignores
/// LinkSpeedExtEnabled.
#[must_use]
pub fn port_info_set_mod(subnet: &Subnet, id: NodeId, p: PortNum) -> u32 {
    use ibmad::attr::port_info::cap::IS_EXT_SPEEDS_SUP;
    let ext = subnet
        .port(id, p)
        .and_then(|x| x.info)
        .is_some_and(|i| caps(subnet, id, &i).0 & IS_EXT_SPEEDS_SUP != 0);
    u32::from(p.0) | if ext { SM_SUPPORTS_EXT_SPEEDS } else { 0 }
}

/// PortInfo AttributeModifier bit 31, SMSupportsExtendedSpeeds.
pub const SM_SUPPORTS_EXT_SPEEDS: u32 = 1 << 31;

/// The configuration Set for a port, or `None` if the port already holds `want`.
#[must_use]
pub fn config_set(cur: &PortInfo, want: &PortInfo) -> Option<PortInfo> {
    configure(cur, want, false)
}

/// The configuration Set for a port — `want`, changing no state, with ClientReregister if
/// `rereg` ([`client_reregister`]) — or `None` if the port already holds `want` and need not
/// be asked to re-register.
#[must_use]
pub fn configure(cur: &PortInfo, want: &PortInfo, rereg: bool) -> Option<PortInfo> {
    if cur == want && !rereg {
        return None;
    }
    let mut s = *want;
    no_state_change(&mut s);
    s.set_client_reregister(u8::from(rereg));
    Some(s)
}

/// True if the configuration Set of CA port `p` must ask it to re-register with the SA
/// (PortInfo.ClientReregister, IBA vol1 §14.2.5.6 and §14.4.11; OpenSM `osm_lid_mgr.c`): its
/// MasterSMLID changes — a new port, or a new master on another port after a failover or
/// handover — or this is the SM's first heavy sweep as master (`new_master`: a restarted SM on
/// the same port holds none of the SA registrations the clients made with its predecessor),
/// and the port supports it (CapabilityMask.IsClientReregistrationSupported), unless
/// `no_clients_rereg`.
#[must_use]
pub fn client_reregister(
    cfg: &SmConfig,
    subnet: &Subnet,
    id: NodeId,
    p: PortNum,
    cur: &PortInfo,
    want: &PortInfo,
    new_master: bool,
) -> bool {
    !cfg.no_clients_rereg
        && !subnet.node(id).is_switch()
        && p.0 >= 1
        && (new_master || cur.master_sm_lid.get() != want.master_sm_lid.get())
        && cur.capability_mask.get() & ibmad::attr::port_info::cap::IS_CLIENT_REREG_SUP != 0
}

/// A state-pass Set: `info` (the port's last acknowledged PortInfo) with PortState = `to`.
#[must_use]
pub fn state_set(info: &PortInfo, to: PortState) -> PortInfo {
    let mut s = *info;
    no_state_change(&mut s);
    s.set_port_state(to);
    s
}

fn no_state_change(s: &mut PortInfo) {
    s.set_port_state(PortState::NO_CHANGE);
    s.set_phys_state(PhysState::NO_CHANGE);
    s.set_link_down_default_state(0);
}

/// True for a port that takes part in the state passes and must be Active for SUBNET UP: a
/// physical port (CA port or switch port ≥ 1) whose link is up and whose far end was
/// discovered, or a switch's port 0 (no physical link, but a logical state the SM drives from
/// Init to Active like any other).
#[must_use]
pub fn in_state_pass(subnet: &Subnet, id: NodeId, p: PortNum) -> bool {
    let Some(port) = subnet.port(id, p) else {
        return false;
    };
    let Some(info) = port.info else {
        return false;
    };
    if p.0 == 0 {
        return subnet.node(id).is_switch();
    }
    port.remote.is_some()
        && (info.phys_state() == PhysState::LINK_UP || info.port_state() != PortState::DOWN)
}

/// The SwitchInfo Set for a switch (LinearFDBTop = `top`, LifeTimeValue, PortStateChange
/// cleared by writing 1), or `None` if the switch already holds it and has no pending
/// PortStateChange.
#[must_use]
pub fn switch_info_set(cfg: &SmConfig, cur: &SwitchInfo, top: Lid) -> Option<SwitchInfo> {
    if cur.linear_fdb_top.get() == top.0
        && cur.life_time_value() == cfg.packet_life_time
        && cur.port_state_change() == 0
    {
        return None;
    }
    let mut s = *cur;
    s.linear_fdb_top.set(top.0);
    s.set_life_time_value(cfg.packet_life_time);
    s.set_port_state_change(1);
    Some(s)
}

/// Block `b` of a linear forwarding table given as a LID-indexed slice (entries past its end
/// are "no path").
#[must_use]
pub fn lft_block(table: &[u8], b: u16) -> [u8; 64] {
    let mut out = [LFT_NO_PATH; 64];
    let start = usize::from(b) * LFT_BLOCK_SIZE;
    if let Some(src) = table.get(start..) {
        let n = src.len().min(LFT_BLOCK_SIZE);
        out[..n].copy_from_slice(&src[..n]);
    }
    out
}

/// Number of LFT blocks that cover LIDs `0..=top`.
#[must_use]
pub fn lft_blocks(top: Lid) -> u16 {
    (usize::from(top.0) / LFT_BLOCK_SIZE + 1) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::Node;
    use ibmad::{DrPath, Guid, NodeType};

    fn node(guid: u64, t: NodeType, ports: u8) -> Node {
        Node {
            dr_path: DrPath::local(),
            ..Node::new(Guid(guid), t, ports, "")
        }
    }

    fn pi(mtu: u8, vl: u8, state: PortState) -> PortInfo {
        let mut p = <PortInfo as zerocopy::FromZeros>::new_zeroed();
        p.set_mtu_cap(mtu);
        p.set_vl_cap(vl);
        p.set_port_state(state);
        p.set_phys_state(PhysState::LINK_UP);
        p.link_width_supported = 3;
        p.set_link_speed_supported(7);
        p
    }

    fn two_nodes() -> (Subnet, NodeId, NodeId) {
        let mut s = Subnet::new();
        let sw = s.add_node(node(1, NodeType::SWITCH, 4));
        let ca = s.add_node(node(2, NodeType::CA, 1));
        s.link((sw, PortNum(3)), (ca, PortNum(1)));
        s.port_mut(sw, PortNum(3)).unwrap().info = Some(pi(5, 4, PortState::INIT));
        s.port_mut(sw, PortNum(0)).unwrap().info = Some(pi(5, 4, PortState::ACTIVE));
        s.port_mut(ca, PortNum(1)).unwrap().info = Some(pi(4, 3, PortState::INIT));
        s.port_mut(ca, PortNum(1)).unwrap().lid = Lid(7);
        s.port_mut(sw, PortNum(0)).unwrap().lid = Lid(1);
        (s, sw, ca)
    }

    #[test]
    fn force_link_options_as_opensm() {
        let (mut s, sw, ca) = two_nodes();
        let d = SmConfig::default();
        let want = |s: &Subnet, cfg: &SmConfig| {
            desired_port_info(cfg, s, sw, PortNum(3), Lid(7), None).unwrap()
        };
        // A port that already enables everything it supports: "set to supported" leaves it.
        for q in [(sw, PortNum(3)), (ca, PortNum(1))] {
            let i = s.port_mut(q.0, q.1).unwrap().info.as_mut().unwrap();
            i.link_width_enabled = 3;
            i.set_link_speed_enabled(7);
        }
        let w = want(&s, &d);
        assert_eq!((w.link_width_enabled, w.link_speed_enabled()), (3, 7));
        // An explicit mask is written even where it equals what the port enables.
        let cfg = SmConfig {
            force_link_width: 2,
            force_link_speed: 1,
            ..d.clone()
        };
        let w = want(&s, &cfg);
        assert_eq!((w.link_width_enabled, w.link_speed_enabled()), (2, 1));
        // 0 = leave alone, whatever the port holds.
        s.port_mut(sw, PortNum(3))
            .unwrap()
            .info
            .as_mut()
            .unwrap()
            .link_width_enabled = 1;
        let cfg = SmConfig {
            force_link_width: 0,
            force_link_speed: 0,
            ..d.clone()
        };
        let w = want(&s, &cfg);
        assert_eq!((w.link_width_enabled, w.link_speed_enabled()), (1, 7));
        // A mask with 2X only where port 0's CapabilityMask2 says IsLinkWidth2XSupported.
        let cfg = SmConfig {
            force_link_width: 18,
            ..d.clone()
        };
        assert_eq!(want(&s, &cfg).link_width_enabled, 1);
        assert_eq!(want(&s, &d).link_width_enabled, 1, "255 too");
        let p0 = s.port_mut(sw, PortNum(0)).unwrap().info.as_mut().unwrap();
        p0.capability_mask2.set(CAP2_IS_LINK_WIDTH_2X_SUP);
        assert_eq!(want(&s, &cfg).link_width_enabled, 18);
        assert_eq!(want(&s, &d).link_width_enabled, 255);
        // Extended speeds: only with IsExtendedSpeedsSupported at both ends, and the Set then
        // carries SMSupportsExtendedSpeeds.
        use ibmad::attr::port_info::cap::IS_EXT_SPEEDS_SUP;
        let ext = |s: &mut Subnet, id: NodeId, p: u8| {
            let i = s.port_mut(id, PortNum(p)).unwrap().info.as_mut().unwrap();
            i.capability_mask.set(IS_EXT_SPEEDS_SUP);
            i.set_link_speed_ext_supported(3);
        };
        ext(&mut s, sw, 3); // an external port's own mask does not count
        assert_eq!(want(&s, &d).link_speed_ext_enabled(), 0);
        assert_eq!(port_info_set_mod(&s, sw, PortNum(3)), 3);
        ext(&mut s, sw, 0);
        assert_eq!(want(&s, &d).link_speed_ext_enabled(), 0, "the CA lacks it");
        assert_eq!(
            port_info_set_mod(&s, sw, PortNum(3)),
            3 | SM_SUPPORTS_EXT_SPEEDS
        );
        ext(&mut s, ca, 1);
        assert_eq!(want(&s, &d).link_speed_ext_enabled(), 31);
        let cfg = SmConfig {
            force_link_speed_ext: 30,
            ..d.clone()
        };
        assert_eq!(want(&s, &cfg).link_speed_ext_enabled(), 30);
        // Bad values are refused by validate.
        for bad in [
            SmConfig {
                force_link_width: 32,
                ..d.clone()
            },
            SmConfig {
                force_link_speed: 8,
                ..d.clone()
            },
            SmConfig {
                force_link_speed_ext: 16,
                ..d.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn mtu_and_vls_are_min_of_both_ends_and_cap() {
        let (s, sw, ca) = two_nodes();
        let cfg = SmConfig {
            max_op_vls: 2,
            ..SmConfig::default()
        };
        let w = desired_port_info(&cfg, &s, sw, PortNum(3), Lid(7), None).unwrap();
        assert_eq!(w.neighbor_mtu(), 4);
        assert_eq!(w.operational_vls(), 2);
        // OpenSM's force_link_* defaults, "set to supported", are written as they are (15);
        // 255 is above the 2X bit, so only to a port announcing IsLinkWidth2XSupported.
        assert_eq!(w.link_width_enabled, 0);
        assert_eq!(w.link_speed_enabled(), 15);
        assert_eq!(w.lid.get(), 0, "a switch external port gets no LID");
        let c = desired_port_info(&cfg, &s, ca, PortNum(1), Lid(7), None).unwrap();
        assert_eq!(c.lid(), Lid(7));
        assert_eq!(c.master_sm_lid(), Lid(7));
        assert_eq!(c.subnet_timeout(), 18);
        assert_eq!(
            c.gid_prefix.get(),
            0xfe80_0000_0000_0000,
            "OpenSM's link-local prefix"
        );
        assert_eq!(w.gid_prefix.get(), 0, "external switch ports keep theirs");
        let z = desired_port_info(&cfg, &s, sw, PortNum(0), Lid(7), None).unwrap();
        assert_eq!(z.lid(), Lid(1));
        assert_eq!(z.neighbor_mtu(), 0, "port 0 has no link");
    }

    /// OpenSM `link_mgr_set_physp_pi`: switch ports get the head-of-queue lifetime and VL stall
    /// count (the leaf values toward CAs and routers, the others toward switches), router ports
    /// the leaf HOQ lifetime, CA ports neither; every linked port the error thresholds.
    #[test]
    fn hoq_lifetime_vl_stall_and_error_thresholds_as_opensm() {
        let (mut s, sw, ca) = two_nodes();
        let sw2 = s.add_node(node(3, NodeType::SWITCH, 4));
        let rtr = s.add_node(node(4, NodeType::ROUTER, 2));
        s.link((sw, PortNum(1)), (sw2, PortNum(1)));
        s.link((sw, PortNum(2)), (rtr, PortNum(1)));
        for (n, p) in [(sw, 1), (sw, 2), (sw2, 1), (rtr, 1)] {
            s.port_mut(n, PortNum(p)).unwrap().info = Some(pi(5, 4, PortState::INIT));
        }
        let defaults = SmConfig::default();
        let tuned = SmConfig {
            head_of_queue_lifetime: 0x13,
            leaf_head_of_queue_lifetime: 0x0e,
            vl_stall_count: 5,
            leaf_vl_stall_count: 3,
            local_phy_errors_threshold: 9,
            overrun_errors_threshold: 10,
            ..SmConfig::default()
        };
        let want = |cfg: &SmConfig, n: NodeId, p: u8| {
            let w = desired_port_info(cfg, &s, n, PortNum(p), Lid(7), None).unwrap();
            (
                w.hoq_life(),
                w.vl_stall_count(),
                w.local_phy_errors(),
                w.overrun_errors(),
            )
        };
        // OpenSM's defaults: 0x12 / 0x10, 7 / 7, 8, 8.
        assert_eq!(want(&defaults, sw, 1), (0x12, 7, 8, 8), "switch to switch");
        assert_eq!(want(&defaults, sw, 3), (0x10, 7, 8, 8), "switch to CA");
        assert_eq!(want(&tuned, sw, 1), (0x13, 5, 9, 10), "switch to switch");
        assert_eq!(want(&tuned, sw2, 1), (0x13, 5, 9, 10), "switch to switch");
        assert_eq!(want(&tuned, sw, 3), (0x0e, 3, 9, 10), "switch to CA");
        assert_eq!(want(&tuned, sw, 2), (0x0e, 3, 9, 10), "switch to router");
        assert_eq!(
            want(&tuned, rtr, 1),
            (0x0e, 0, 9, 10),
            "router port: HOQ only"
        );
        assert_eq!(
            want(&tuned, ca, 1),
            (0, 0, 9, 10),
            "CA port: thresholds only"
        );
        // Port 0 has no link: left as it is.
        assert_eq!(want(&tuned, sw, 0), (0, 0, 0, 0));
    }

    #[test]
    fn vl_high_limit_per_port_class_with_qos_on() {
        use crate::qos::{QosConfig, QosOptions};
        let (s, sw, ca) = two_nodes();
        let class = |h: u8| QosOptions {
            high_limit: Some(h),
            ..QosOptions::default()
        };
        let cfg = SmConfig {
            qos: QosConfig {
                enabled: true,
                default: class(3),
                ca: class(255),
                swe: class(9),
                ..QosConfig::default()
            },
            ..SmConfig::default()
        };
        let hl = |cfg: &SmConfig, n: NodeId, p: u8| {
            desired_port_info(cfg, &s, n, PortNum(p), Lid(7), None)
                .unwrap()
                .vl_high_limit
        };
        assert_eq!(hl(&cfg, sw, 3), 9, "qos_swe_high_limit");
        assert_eq!(hl(&cfg, ca, 1), 255, "qos_ca_high_limit");
        let dflt = SmConfig {
            qos: QosConfig {
                ca: QosOptions::default(),
                ..cfg.qos.clone()
            },
            ..cfg.clone()
        };
        assert_eq!(hl(&dflt, ca, 1), 3, "falls back to qos_high_limit");
        assert_eq!(hl(&SmConfig::default(), ca, 1), 0, "qos off: vl_high_limit");
    }

    #[test]
    fn config_set_only_when_different_and_with_no_state_change() {
        let (s, _sw, ca) = two_nodes();
        let cfg = SmConfig::default();
        let cur = s.port(ca, PortNum(1)).unwrap().info.unwrap();
        let want = desired_port_info(&cfg, &s, ca, PortNum(1), Lid(7), None).unwrap();
        let set = config_set(&cur, &want).unwrap();
        assert_eq!(set.port_state(), PortState::NO_CHANGE);
        assert_eq!(set.phys_state(), PhysState::NO_CHANGE);
        assert_eq!(set.lid(), Lid(7));
        // Once acknowledged (the port now holds `want`, state unchanged), nothing is sent.
        assert!(config_set(&want, &want).is_none());
    }

    #[test]
    fn client_reregister_only_for_ca_ports_whose_master_changes_or_a_new_master() {
        use ibmad::attr::port_info::cap::IS_CLIENT_REREG_SUP;
        let (mut s, sw, ca) = two_nodes();
        let cfg = SmConfig::default();
        let mut cur = s.port(ca, PortNum(1)).unwrap().info.unwrap();
        cur.capability_mask.set(IS_CLIENT_REREG_SUP);
        s.port_mut(ca, PortNum(1)).unwrap().info = Some(cur);
        let want = desired_port_info(&cfg, &s, ca, PortNum(1), Lid(7), None).unwrap();
        let rereg = |cfg: &SmConfig, id, p, cur: &PortInfo, want: &PortInfo, new_master| {
            client_reregister(cfg, &s, id, PortNum(p), cur, want, new_master)
        };
        assert!(rereg(&cfg, ca, 1, &cur, &want, false));
        // Same master LID: no re-registration, unless this SM has just become master (a
        // restarted SM on the same port knows none of the clients' registrations).
        assert!(!rereg(&cfg, ca, 1, &want, &want, false));
        assert!(rereg(&cfg, ca, 1, &want, &want, true));
        // Not supported, a switch port, or no_clients_rereg: none.
        let mut unsup = cur;
        unsup.capability_mask.set(0);
        assert!(!rereg(&cfg, ca, 1, &unsup, &want, true));
        let sw_cur = s.port(sw, PortNum(0)).unwrap().info.unwrap();
        let sw_want = desired_port_info(&cfg, &s, sw, PortNum(0), Lid(7), None).unwrap();
        assert!(!rereg(&cfg, sw, 0, &sw_cur, &sw_want, true));
        let off = SmConfig {
            no_clients_rereg: true,
            ..SmConfig::default()
        };
        assert!(!rereg(&off, ca, 1, &cur, &want, true));
        // A port that holds everything still gets a Set to re-register, changing no state.
        let set = configure(&want, &want, true).unwrap();
        assert_eq!(set.client_reregister(), 1);
        assert_eq!(set.port_state(), PortState::NO_CHANGE);
        assert!(configure(&want, &want, false).is_none());
    }

    #[test]
    fn state_set_changes_only_the_state() {
        let cur = pi(5, 4, PortState::INIT);
        let s = state_set(&cur, PortState::ARMED);
        assert_eq!(s.port_state(), PortState::ARMED);
        assert_eq!(s.phys_state(), PhysState::NO_CHANGE);
        assert_eq!(s.mtu_cap(), 5);
    }

    /// A port that accepts a configuration Set but keeps reporting its own value for a field
    /// (ibsim: SubnetTimeout, LinkWidthEnabled after 255) is not written again while it
    /// answers as it did; once it answers differently (reset), it is.
    #[test]
    fn a_port_that_answered_the_same_configuration_is_not_set_again() {
        let (s, _, ca) = two_nodes();
        let cfg = SmConfig::default();
        let mut disc = Discovery::start(PortNum(1)).0;
        disc.subnet = s;
        let pi_sets = |prog: &mut Programmer, disc: &Discovery| {
            prog.plan(&cfg, disc, None, Lid(7), Lid(1), false)
                .into_iter()
                .filter(|r| r.purpose == Purpose::SetPortInfo(ca, PortNum(1)))
                .collect::<Vec<_>>()
        };
        let mut prog = Programmer::default();
        let first = pi_sets(&mut prog, &disc);
        assert_eq!(first.len(), 1, "a new port is configured");
        // The port answers with everything but SubnetTimeout, which it does not implement.
        let mut answer = *PortInfo::ref_from_prefix(&first[0].data).unwrap().0;
        answer.set_port_state(PortState::INIT);
        answer.set_phys_state(PhysState::LINK_UP);
        answer.set_subnet_timeout(31);
        prog.on_port_info_set_ack(
            &disc.subnet,
            ca,
            PortNum(1),
            &first[0].data,
            &data_of(&answer),
        );
        prog.on_ack(&mut disc, first[0].purpose, &data_of(&answer));
        assert!(
            pi_sets(&mut prog, &disc).is_empty(),
            "answered as before: settled"
        );
        // Without that memory the field would differ at every sweep.
        assert!(pi_sets(&mut Programmer::default(), &disc).len() == 1);
        // The port was reset: it answers a Get differently and is configured again.
        let mut reset = answer;
        reset.lid.set(0);
        disc.subnet.port_mut(ca, PortNum(1)).unwrap().info = Some(reset);
        assert_eq!(pi_sets(&mut prog, &disc).len(), 1);
    }

    #[test]
    fn switch_info_diff() {
        let cfg = SmConfig::default();
        let mut si = <SwitchInfo as zerocopy::FromZeros>::new_zeroed();
        si.set_port_state_change(1);
        let set = switch_info_set(&cfg, &si, Lid(40)).unwrap();
        assert_eq!(set.linear_fdb_top.get(), 40);
        assert_eq!(set.life_time_value(), 0x12);
        assert_eq!(set.port_state_change(), 1, "write 1 to clear");
        let mut held = set;
        held.set_port_state_change(0);
        assert!(switch_info_set(&cfg, &held, Lid(40)).is_none());
        assert!(switch_info_set(&cfg, &held, Lid(41)).is_some());
    }

    #[test]
    fn lft_sets_are_block_major_within_groups_of_switches() {
        let mut s = Subnet::new();
        let sws: Vec<NodeId> = (1..=3)
            .map(|g| s.add_node(node(g, NodeType::SWITCH, 4)))
            .collect();
        let mut disc = Discovery::start(PortNum(1)).0;
        disc.subnet = s;
        let top = Lid(100); // blocks 0 and 1
        let lfts = Lfts::new(&disc.subnet, top);
        let order = |group| -> Vec<(NodeId, u16)> {
            Programmer::default()
                .lft_sets(&disc, Some(&lfts), top, group)
                .iter()
                .map(|x| (x.node, x.block))
                .collect()
        };
        let (a, b, c) = (sws[0], sws[1], sws[2]);
        assert_eq!(
            order(2),
            vec![(a, 0), (b, 0), (a, 1), (b, 1), (c, 0), (c, 1)],
            "block-major inside a group of two, then the next group"
        );
        assert_eq!(
            order(64),
            vec![(a, 0), (b, 0), (c, 0), (a, 1), (b, 1), (c, 1)],
            "one group: block-major over every switch"
        );
        assert_eq!(order(0), order(1), "a zero group is a group of one");
    }

    #[test]
    fn lft_block_slicing() {
        let table: Vec<u8> = (0..100).map(|i| (i % 7) as u8).collect();
        let b0 = lft_block(&table, 0);
        assert_eq!(b0[5], 5);
        let b1 = lft_block(&table, 1);
        assert_eq!(b1[0], (64 % 7) as u8);
        assert_eq!(b1[36], 0xFF, "past the table: no path");
        assert_eq!(lft_block(&table, 9), [0xFF; 64]);
        assert_eq!(lft_blocks(Lid(63)), 1);
        assert_eq!(lft_blocks(Lid(64)), 2);
    }
}

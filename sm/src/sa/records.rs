//! The simple records: read-only views of the [`SaSnapshot`], answered to Get and GetTable
//! (anything else: method/attribute not supported). Each handler walks the candidates (using
//! an index when the component mask selects the key) and offers them to a [`Collector`],
//! which applies the component mask.

use ibmad::attr::PortInfo;
use ibmad::attr::{AttrRepr, NodeInfoRepr};
use ibmad::sa_rec::node::comp as nr_comp;
use ibmad::sa_rec::{selected, NodeRecord, SaRecord};
use ibmad::zerocopy::{FromZeros, IntoBytes};
use ibmad::{Lid, PortNum, PortState};

use super::snapshot::Mfts;
use super::{Answer, Collector, SaQuery, SaSnapshot};
use crate::subnet::NodeId;

/// NodeRecord (0x0011): one per end port with a LID (a switch: port 0; a CA or router: each
/// port with a LID), keyed by the base LID, with that port's PortGUID and LocalPortNum.
pub fn node_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    if !q.is_read() {
        return Answer::unsupported();
    }
    let mut c = Collector::new::<NodeRecord>(q);
    let one = |c: &mut Collector<'_>, lid: Lid, id: NodeId, p: PortNum| {
        if let Some(r) = node_record(snap, lid, id, p) {
            c.offer(r.as_bytes());
        }
    };
    if let Some(lid) = selected::<NodeRecord>(q.comp_mask, 0, q.record) {
        let lid = Lid(u16::try_from(lid).unwrap_or(0));
        if let Some((id, p)) = snap.by_lid(lid) {
            // Keyed by the base LID: another LID of the LMC range matches nothing.
            if snap.subnet.lid_of(id, p) == lid {
                one(&mut c, lid, id, p);
            }
        }
        return c.finish();
    }
    if q.comp_mask & nr_comp::PORT_GUID != 0 {
        if let Some(g) = selected::<NodeRecord>(q.comp_mask, 8, q.record) {
            if let Some((id, p)) = snap.by_port_guid(ibmad::Guid(g)) {
                one(&mut c, snap.subnet.lid_of(id, p), id, p);
            }
        }
        return c.finish();
    }
    for (lid, id, p) in snap.lid_ports() {
        one(&mut c, lid, id, p);
        if c.is_full() {
            break;
        }
    }
    c.finish()
}

/// The NodeRecord of port `p` of node `id`, under `lid`.
fn node_record(snap: &SaSnapshot, lid: Lid, id: NodeId, p: PortNum) -> Option<NodeRecord> {
    let n = snap.subnet.nodes.get(id.idx())?;
    let port = snap.subnet.port(id, p)?;
    let mut r = NodeRecord::new_zeroed();
    r.lid.set(lid.0);
    r.node_info = NodeInfoRepr {
        base_version: 1,
        class_version: 1,
        node_type: n.node_type,
        num_ports: n.num_ports,
        system_image_guid: n.sys_guid,
        node_guid: n.guid,
        port_guid: port.guid,
        partition_cap: n.partition_cap,
        device_id: n.device_id,
        revision: n.revision,
        // The port the record is about (a switch: its port 0).
        local_port_num: if n.is_switch() { PortNum(0) } else { p },
        vendor_id: n.vendor_id,
    }
    .to_raw();
    r.node_desc = ibmad::attr::NodeDesc::from_str_lossy(&n.desc);
    debug_assert_eq!(r.as_bytes().len(), NodeRecord::LEN);
    Some(r)
}

// ----- shared helpers ------------------------------------------------------------------

/// The LID-keyed side of a query: `Ok(None)` when the component at `comp_idx` (a 16-bit LID
/// at byte `byte` of the record) is not selected; `Ok(Some((base, node, port)))` for the end
/// port owning the LID (any LID of its LMC range), with `query` rewritten to carry the base
/// LID, as the records are keyed; `Err(())` when no port owns it (no records).
fn lid_key(
    snap: &SaSnapshot,
    mask: u64,
    comp_idx: u32,
    byte: usize,
    query: &mut [u8],
) -> Result<Option<(Lid, NodeId, PortNum)>, ()> {
    if mask & (1u64 << comp_idx) == 0 {
        return Ok(None);
    }
    let raw = query
        .get(byte..byte + 2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let (id, p) = snap.by_lid(Lid(raw)).ok_or(())?;
    let base = snap.subnet.lid_of(id, p);
    if let Some(b) = query.get_mut(byte..byte + 2) {
        b.copy_from_slice(&base.0.to_be_bytes());
    }
    Ok(Some((base, id, p)))
}

/// The request's record, as long as record `R` (zero-padded), to rewrite keys in.
fn query_copy<R: SaRecord>(q: &SaQuery<'_>) -> Vec<u8> {
    let mut v = q.record.get(..R::LEN).unwrap_or(q.record).to_vec();
    v.resize(R::LEN, 0);
    v
}

/// Nodes a query keyed by node LID looks at: the one that owns the LID, or all.
fn key_nodes(snap: &SaSnapshot, key: Option<(Lid, NodeId, PortNum)>) -> Vec<NodeId> {
    match key {
        Some((_, id, _)) => vec![id],
        None => snap.subnet.node_ids().collect(),
    }
}

/// Answers a read-only record type: Get/GetTable only.
macro_rules! read_only {
    ($q:expr) => {
        if !$q.is_read() {
            return Answer::unsupported();
        }
    };
}

// ----- ClassPortInfo -------------------------------------------------------------------

/// SA ClassPortInfo CapabilityMask bits (IBA vol1 §15.2.1.1; the names are OpenSM's
/// `OSM_CAP_IS_*`).
pub mod cap {
    /// IsSubnetGetSetNoticeSupported.
    pub const GET_SET_NOTICE: u16 = 1 << 1;
    /// IsUDMulticastSupported.
    pub const UD_MCAST: u16 = 1 << 9;
    /// IsMultiPathSupported.
    pub const MULTIPATH: u16 = 1 << 10;
    /// IsPortInfoCapMaskMatchSupported.
    pub const PORT_INFO_CAPMASK_MATCH: u16 = 1 << 13;
    /// CapabilityMask2: IsQoSSupported.
    pub const CAP2_QOS: u32 = 1 << 1;
    /// CapabilityMask2: IsFullPortInfoRecordSupported.
    pub const CAP2_FULL_PORTINFO_REC: u32 = 1 << 6;
    /// CapabilityMask2: IsPortInfoCapMask2MatchSupported.
    pub const CAP2_PORT_INFO_CAPMASK2_MATCH: u32 = 1 << 10;
}

/// The RespTimeValue encoding (4.096 µs × 2^v) of the smallest time at least `t`, 0..=31.
#[must_use]
pub fn resp_time_value(t: core::time::Duration) -> u8 {
    let ns = t.as_nanos();
    (0u8..31).find(|&v| 4096u128 << v >= ns).unwrap_or(31)
}

/// ClassPortInfo (0x0001), Get only: ClassVersion 2; the capabilities of what this SA serves
/// (PortInfoRecord CapabilityMask/CapabilityMask2 matching, full PortInfoRecords) plus
/// `extra_cap`/`extra_cap2` for the records other owners serve; RespTimeValue from
/// `resp_time`; Redirect and Trap QP 1 with the GSI Q_Key and no redirection.
pub fn class_port_info(
    q: &SaQuery<'_>,
    resp_time: core::time::Duration,
    extra_cap: u16,
    extra_cap2: u32,
) -> Answer {
    if q.method != ibmad::Method::GET {
        return Answer::unsupported();
    }
    use ibmad::class_port_info::Endpoint;
    use ibmad::GmpAttrRepr;
    let gsi = Endpoint {
        qp: 1,
        qkey: ibmad::QKey::GSI,
        ..Endpoint::default()
    };
    let cpi = ibmad::ClassPortInfoRepr {
        base_version: 1,
        class_version: 2,
        capability_mask: cap::PORT_INFO_CAPMASK_MATCH | extra_cap,
        capability_mask2: cap::CAP2_FULL_PORTINFO_REC
            | cap::CAP2_PORT_INFO_CAPMASK2_MATCH
            | extra_cap2,
        resp_time_value: resp_time_value(resp_time),
        redirect: gsi,
        trap: Endpoint { qp: 0, ..gsi },
        trap_hop_limit: 0,
    };
    let raw = cpi.to_raw();
    Answer::Records {
        size: 72,
        data: raw.as_bytes().to_vec(),
    }
}

// ----- PortInfoRecord --------------------------------------------------------------------

/// PortInfoRecord (0x0012): one per port with PortInfo (every port of a switch, each
/// discovered CA/router port), keyed by the end port's base LID and the port number; a LID
/// of the LMC range selects the port. M_Key is 0 unless the requester is trusted. Options
/// are echoed when selected. AttributeModifier bit 31: CapabilityMask(2) match by bits.
/// A port whose PortState is Down is served with PortState and PortPhysicalState alone, the
/// rest zero: OpenSM `osm_physp_set_port_info` copies only those two fields of a Down port's
/// PortInfo (IBA vol1 C14-24-2.1), so a port it never saw up reads as zeros there (one that
/// went down keeps OpenSM's stale copy of the rest, which ibsm does not imitate).
pub fn port_info_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use ibmad::sa_rec::port::{capability_match, comp, ENHANCED_CAP_MATCH};
    use ibmad::sa_rec::PortInfoRecord;
    read_only!(q);
    let mut query = query_copy::<PortInfoRecord>(q);
    // The port's base LID in PortInfo (component 5) keys the same way.
    let key = match (
        lid_key(snap, q.comp_mask, 0, 0, &mut query),
        lid_key(snap, q.comp_mask, 5, 20, &mut query),
    ) {
        (Err(()), _) | (_, Err(())) => return Collector::new::<PortInfoRecord>(q).finish(),
        (Ok(a), Ok(b)) => a.or(b),
    };
    let enhanced = q.attr_mod & ENHANCED_CAP_MATCH != 0;
    let mut mask = q.comp_mask;
    if enhanced {
        mask &= !(comp::CAPABILITY_MASK | comp::CAPABILITY_MASK2);
    }
    let Ok(qrec) = PortInfoRecord::parse(&query) else {
        return Answer::Status(ibmad::sa::status::REQ_INVALID);
    };
    let mut c = Collector::with_query::<PortInfoRecord>(q, &query, mask);
    for id in key_nodes(snap, key) {
        let n = snap.subnet.node(id);
        let lid = snap.subnet.lid_of(id, PortNum(0)); // a switch's LID; CAs: below
        for p in 0..=n.num_ports {
            let p = PortNum(p);
            let Some(port) = snap.subnet.port(id, p) else {
                continue;
            };
            let Some(info) = port.info else { continue };
            if !n.is_switch() && p.0 == 0 {
                continue;
            }
            let mut r = PortInfoRecord::new_zeroed();
            r.lid.set(if n.is_switch() { lid.0 } else { port.lid.0 });
            r.port_num = p.0;
            if q.comp_mask & comp::OPTIONS != 0 {
                r.options = qrec.options;
            }
            r.port_info = if info.port_state() == PortState::DOWN {
                let mut down = PortInfo::new_zeroed();
                down.set_port_state(PortState::DOWN);
                down.set_phys_state(info.phys_state());
                down
            } else {
                info
            };
            if !q.trusted {
                r.port_info.m_key.set(0);
            }
            if enhanced && !capability_match(q.comp_mask, &qrec, &r) {
                continue;
            }
            c.offer(r.as_bytes());
            if c.is_full() {
                return c.finish();
            }
        }
    }
    c.finish()
}

// ----- SwitchInfoRecord ------------------------------------------------------------------

/// SwitchInfoRecord (0x0014): one per switch with SwitchInfo, keyed by its LID.
pub fn switch_info_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use ibmad::sa_rec::SwitchInfoRecord;
    read_only!(q);
    let mut query = query_copy::<SwitchInfoRecord>(q);
    let Ok(key) = lid_key(snap, q.comp_mask, 0, 0, &mut query) else {
        return Collector::new::<SwitchInfoRecord>(q).finish();
    };
    let mut c = Collector::with_query::<SwitchInfoRecord>(q, &query, q.comp_mask);
    for id in key_nodes(snap, key) {
        let n = snap.subnet.node(id);
        let Some(si) = n.switch_info.filter(|_| n.is_switch()) else {
            continue;
        };
        let mut r = SwitchInfoRecord::new_zeroed();
        r.lid.set(snap.subnet.lid_of(id, PortNum(0)).0);
        let b = si.as_bytes();
        r.switch_info
            .copy_from_slice(b.get(..20).unwrap_or(&[0; 20]));
        c.offer(r.as_bytes());
        if c.is_full() {
            break;
        }
    }
    c.finish()
}

// ----- LinearForwardingTableRecord -------------------------------------------------------

/// LinearForwardingTableRecord (0x0015): blocks 0..=top/64 of every switch's routed LFT
/// (the LFTs the SM programmed), keyed by the switch's LID and the block.
pub fn lft_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use ibmad::sa_rec::lft::comp;
    use ibmad::sa_rec::LftRecord;
    read_only!(q);
    let mut query = query_copy::<LftRecord>(q);
    let Ok(key) = lid_key(snap, q.comp_mask, 0, 0, &mut query) else {
        return Collector::new::<LftRecord>(q).finish();
    };
    let mut c = Collector::with_query::<LftRecord>(q, &query, q.comp_mask);
    let Some(lfts) = snap.routes.as_ref().map(|r| &r.lfts) else {
        return c.finish();
    };
    let blocks = usize::from(lfts.top().0) / 64 + 1;
    let only = (q.comp_mask & comp::BLOCK_NUM != 0)
        .then(|| usize::from(u16::from_be_bytes([query[2], query[3]])));
    for id in key_nodes(snap, key) {
        if !snap.subnet.node(id).is_switch() {
            continue;
        }
        let lid = snap.subnet.lid_of(id, PortNum(0));
        let range = match only {
            Some(b) if b < blocks => b..b + 1,
            Some(_) => 0..0,
            None => 0..blocks,
        };
        for b in range {
            let Some(block) = lfts.block(id, b) else {
                continue;
            };
            let mut r = LftRecord::new_zeroed();
            r.lid.set(lid.0);
            r.block_num.set(u16::try_from(b).unwrap_or(u16::MAX));
            r.lft = block;
            c.offer(r.as_bytes());
            if c.is_full() {
                return c.finish();
            }
        }
    }
    c.finish()
}

// ----- MulticastForwardingTableRecord ----------------------------------------------------

/// MulticastForwardingTableRecord (0x0017): for every switch with multicast entries in the
/// MFTs of the last multicast pass ([`super::Sa::set_mfts`]), blocks 0..=the highest block in use × positions 0..=NumPorts/16, keyed
/// by the switch's LID, position and block (OpenSM's set of records).
pub fn mft_records(snap: &SaSnapshot, mfts: &Mfts, q: &SaQuery<'_>) -> Answer {
    use ibmad::sa_rec::mft::comp;
    use ibmad::sa_rec::MftRecord;
    read_only!(q);
    let mut query = query_copy::<MftRecord>(q);
    let Ok(key) = lid_key(snap, q.comp_mask, 0, 0, &mut query) else {
        return Collector::new::<MftRecord>(q).finish();
    };
    let mut c = Collector::with_query::<MftRecord>(q, &query, q.comp_mask);
    let pb = u16::from_be_bytes([query[2], query[3]]);
    let (want_pos, want_block) = (
        (q.comp_mask & comp::POSITION != 0).then_some((pb >> 12) as u8),
        (q.comp_mask & comp::BLOCK_NUM != 0).then_some(pb & 0x1FF),
    );
    for id in key_nodes(snap, key) {
        let n = snap.subnet.node(id);
        let Some(table) = mfts.table(id).filter(|t| !t.is_empty() && n.is_switch()) else {
            continue;
        };
        let max_block = table
            .keys()
            .map(|m| m.0.saturating_sub(0xC000) / 32)
            .max()
            .unwrap_or(0);
        let max_pos = n.num_ports / 16;
        let lid = snap.subnet.lid_of(id, PortNum(0));
        for block in 0..=max_block {
            if want_block.is_some_and(|b| b != block) {
                continue;
            }
            for pos in 0..=max_pos {
                if want_pos.is_some_and(|p| p != pos) {
                    continue;
                }
                let mut r = MftRecord::new_zeroed();
                r.lid.set(lid.0);
                r.set_position_block(pos, block);
                for (i, e) in r.mft.iter_mut().enumerate() {
                    let mlid = Lid(0xC000 + block * 32 + i as u16);
                    if let Some(m) = table.get(&mlid) {
                        e.set(crate::mcast::position_mask(m, pos));
                    }
                }
                c.offer(r.as_bytes());
                if c.is_full() {
                    return c.finish();
                }
            }
        }
    }
    c.finish()
}

// ----- LinkRecord ------------------------------------------------------------------------

/// LinkRecord (0x0020): both directions of every link between discovered ports, from (LID,
/// port) to (port, LID), LIDs the end ports' base LIDs; a LID of the LMC range selects.
pub fn link_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use ibmad::sa_rec::LinkRecord;
    read_only!(q);
    let mut query = query_copy::<LinkRecord>(q);
    let (Ok(from), Ok(to)) = (
        lid_key(snap, q.comp_mask, 0, 0, &mut query),
        lid_key(snap, q.comp_mask, 3, 4, &mut query),
    ) else {
        return Collector::new::<LinkRecord>(q).finish();
    };
    let mut c = Collector::with_query::<LinkRecord>(q, &query, q.comp_mask);
    // From the FromLID's node, or the ToLID's remote ends, or everywhere.
    let nodes = match (from, to) {
        (Some(k), _) | (None, Some(k)) => {
            let mut v = key_nodes(snap, Some(k));
            if from.is_none() {
                // The links into the ToLID's node start at its neighbours.
                let id = v[0];
                let n = snap.subnet.node(id);
                v = (0..=n.num_ports)
                    .filter_map(|p| snap.subnet.port(id, PortNum(p))?.remote.map(|r| r.0))
                    .collect();
                v.sort();
                v.dedup();
            }
            v
        }
        (None, None) => snap.subnet.node_ids().collect(),
    };
    for id in nodes {
        let n = snap.subnet.node(id);
        for p in 0..=n.num_ports {
            let Some((rn, rp)) = snap.subnet.port(id, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            let mut r = LinkRecord::new_zeroed();
            r.from_lid.set(snap.subnet.lid_of(id, PortNum(p)).0);
            r.from_port = p;
            r.to_port = rp.0;
            r.to_lid.set(snap.subnet.lid_of(rn, rp).0);
            c.offer(r.as_bytes());
            if c.is_full() {
                return c.finish();
            }
        }
    }
    c.finish()
}

// ----- GUIDInfoRecord --------------------------------------------------------------------

/// GUIDInfoRecord (0x0030), Get/GetTable: for every end port with a LID, blocks
/// 0..GUIDCap/8 (at least one) of its GUIDInfo: the port GUID at index 0 (no alias GUIDs
/// are assigned).
pub fn guid_info_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use ibmad::sa_rec::GuidInfoRecord;
    read_only!(q);
    let mut query = query_copy::<GuidInfoRecord>(q);
    let Ok(key) = lid_key(snap, q.comp_mask, 0, 0, &mut query) else {
        return Collector::new::<GuidInfoRecord>(q).finish();
    };
    let mut c = Collector::with_query::<GuidInfoRecord>(q, &query, q.comp_mask);
    let ports: Vec<(Lid, NodeId, PortNum)> = match key {
        Some(k) => vec![k],
        None => snap.lid_ports().collect(),
    };
    for (lid, id, p) in ports {
        let Some(port) = snap.subnet.port(id, p) else {
            continue;
        };
        let cap = port.info.map_or(1, |i| i.guid_cap.max(1));
        for b in 0..cap.div_ceil(8) {
            let mut r = GuidInfoRecord::new_zeroed();
            r.lid.set(lid.0);
            r.block_num = b;
            if b == 0 {
                r.guids[0].set(port.guid.0);
            }
            c.offer(r.as_bytes());
            if c.is_full() {
                return c.finish();
            }
        }
    }
    c.finish()
}

// ----- P_KeyTableRecord ------------------------------------------------------------------

/// P_KeyTableRecord (0x0033), trusted requesters only (others: ERR_REQ_DENIED): for every
/// end port with a LID (CA ports, switch port 0) and every switch port the snapshot has a
/// table for, the blocks of 32 entries of its P_Key table (an end port: PartitionCap / 32
/// blocks); a port without a table in the snapshot holds the default one (0xFFFF at index
/// 0), as the SMA starts.
pub fn pkey_table_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use ibmad::sa_rec::PKeyTableRecord;
    read_only!(q);
    if !q.trusted {
        return Answer::Status(ibmad::sa::status::REQ_DENIED);
    }
    let mut query = query_copy::<PKeyTableRecord>(q);
    let Ok(key) = lid_key(snap, q.comp_mask, 0, 0, &mut query) else {
        return Collector::new::<PKeyTableRecord>(q).finish();
    };
    let mut c = Collector::with_query::<PKeyTableRecord>(q, &query, q.comp_mask);
    let default = [ibmad::PKey(0xFFFF)];
    for id in key_nodes(snap, key) {
        let n = snap.subnet.node(id);
        for p in 0..=n.num_ports {
            let p = PortNum(p);
            let Some(port) = snap.subnet.port(id, p) else {
                continue;
            };
            let table = snap.pkeys.get(&(id, p));
            let end_port = if n.is_switch() { p.0 == 0 } else { p.0 > 0 };
            if port.info.is_none() || (!end_port && table.is_none()) {
                continue;
            }
            let lid = snap.subnet.lid_of(id, p);
            if key.is_none() && lid == Lid::UNASSIGNED {
                continue;
            }
            let entries: &[ibmad::PKey] = table.map_or(&default, Vec::as_slice);
            // Every block the port has (PartitionCap entries on an end port), at least those
            // with entries.
            let cap = if end_port {
                usize::from(n.partition_cap)
            } else {
                0
            };
            let blocks = entries.len().max(cap).div_ceil(32).max(1);
            for b in 0..blocks {
                let chunk = entries.get(b * 32..).unwrap_or(&[]);
                let mut r = PKeyTableRecord::new_zeroed();
                r.lid.set(lid.0);
                r.block_num.set(u16::try_from(b).unwrap_or(u16::MAX));
                r.port_num = p.0;
                for (e, k) in r.pkeys.iter_mut().zip(chunk) {
                    e.set(k.0);
                }
                c.offer(r.as_bytes());
                if c.is_full() {
                    return c.finish();
                }
            }
        }
    }
    c.finish()
}

// ----- SMInfoRecord ----------------------------------------------------------------------

/// SMInfoRecord (0x0018), Get/GetTable (a Set is refused with 0x000C, not dropped as OpenSM
/// does): this SM and the SMs the sweep found, keyed by LID; SM_Key 0 unless trusted.
pub fn sm_info_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use ibmad::sa_rec::SmInfoRecord;
    read_only!(q);
    let mut query = query_copy::<SmInfoRecord>(q);
    if lid_key(snap, q.comp_mask, 0, 0, &mut query).is_err() {
        return Collector::new::<SmInfoRecord>(q).finish();
    }
    let mut c = Collector::with_query::<SmInfoRecord>(q, &query, q.comp_mask);
    for sm in &snap.sms {
        let mut r = SmInfoRecord::new_zeroed();
        r.lid.set(sm.lid.0);
        r.guid.set(sm.guid.0);
        r.sm_key.set(if q.trusted { sm.sm_key } else { 0 });
        r.act_count.set(sm.act_count);
        r.priority_state = (sm.priority << 4) | (sm.state.0 & 0xF);
        c.offer(r.as_bytes());
    }
    c.finish()
}

// ----- SL2VL and VLArbitration table records ---------------------------------------------

/// SLtoVLMappingTableRecord (0x0013): the SL-to-VL tables the SM programmed, or read after
/// SUBNET UP (`read_qos_tables`), as the nodes acknowledged them: a switch's per (input,
/// output) pair 0..=NumPorts, a CA's or router's per port with InputPortNum = OutputPortNum = 0
/// (OpenSM's form; the LID names the port, and a query's port components are not applied to
/// it). A port without SL-to-VL mapping (CapabilityMask.IsSLMappingSupported clear) sends every
/// SL on VL 0: its table is served as all zeros. Unknown tables (a read that failed, reading
/// off) are not served.
pub fn sl2vl_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use crate::qos::program::sl2vl_exists;
    use ibmad::sa_rec::Sl2VlRecord;
    read_only!(q);
    let mut query = query_copy::<Sl2VlRecord>(q);
    let Ok(key) = lid_key(snap, q.comp_mask, 0, 0, &mut query) else {
        return Collector::new::<Sl2VlRecord>(q).finish();
    };
    if let Some((_, id, _)) = key {
        if !snap.subnet.node(id).is_switch() {
            query[2] = 0;
            query[3] = 0;
        }
    }
    let mut c = Collector::with_query::<Sl2VlRecord>(q, &query, q.comp_mask);
    for id in key_nodes(snap, key) {
        let known = snap.known_qos(id);
        let n = snap.subnet.node(id);
        // (input, output, the port the table belongs to).
        let pairs: Vec<(u8, u8, u8)> = if n.is_switch() {
            (0..=n.num_ports)
                .flat_map(|o| (0..=n.num_ports).map(move |i| (i, o, o)))
                .collect()
        } else {
            (1..=n.num_ports)
                .filter(|&p| {
                    snap.subnet
                        .port(id, PortNum(p))
                        .is_some_and(|x| x.info.is_some())
                })
                .map(|p| (0, 0, p))
                .collect()
        };
        for (i, o, p) in pairs {
            let t = if sl2vl_exists(&snap.subnet, id, PortNum(p)) {
                let (ki, ko) = if n.is_switch() { (i, o) } else { (0, p) };
                match known.and_then(|k| k.sl2vl(PortNum(ki), PortNum(ko))) {
                    Some(t) => t.raw,
                    None => continue,
                }
            } else {
                [0; 8]
            };
            let mut r = Sl2VlRecord::new_zeroed();
            r.lid.set(snap.subnet.lid_of(id, PortNum(p)).0);
            r.in_port = i;
            r.out_port = o;
            r.sl2vl = t;
            c.offer(r.as_bytes());
            if c.is_full() {
                return c.finish();
            }
        }
    }
    c.finish()
}

/// VLArbitrationTableRecord (0x0036): blocks 1..=4 of every port (a switch's 0..=NumPorts, a
/// CA's or router's ports), as OpenSM's SA serves them: the blocks the SM programmed or read
/// (`read_qos_tables`) as acknowledged; a block the port does not have (VLCap 1, or beyond
/// VLArbitrationLowCap / HighCap) holds no entry and is served as zeros; unknown blocks are
/// not served. On a CA the query's OutputPortNum is the port the LID names (OpenSM: "the SA
/// should figure it out"; `osmtest -f q` asks with port 0).
pub fn vlarb_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    use crate::qos::program::vlarb_block_exists;
    use ibmad::sa_rec::VlArbRecord;
    read_only!(q);
    let mut query = query_copy::<VlArbRecord>(q);
    let Ok(key) = lid_key(snap, q.comp_mask, 0, 0, &mut query) else {
        return Collector::new::<VlArbRecord>(q).finish();
    };
    if let Some((_, id, p)) = key {
        if !snap.subnet.node(id).is_switch() {
            query[2] = p.0;
        }
    }
    let mut c = Collector::with_query::<VlArbRecord>(q, &query, q.comp_mask);
    for id in key_nodes(snap, key) {
        let known = snap.known_qos(id);
        let n = snap.subnet.node(id);
        let first = u8::from(!n.is_switch());
        for p in first..=n.num_ports {
            let Some(info) = snap.subnet.port(id, PortNum(p)).and_then(|x| x.info) else {
                continue;
            };
            for b in 1..=4u8 {
                let t = if vlarb_block_exists(&info, b) {
                    match known.and_then(|k| k.vlarb(PortNum(p), b)) {
                        Some(t) => t,
                        None => continue,
                    }
                } else {
                    [0; 64]
                };
                let mut r = VlArbRecord::new_zeroed();
                r.lid.set(snap.subnet.lid_of(id, PortNum(p)).0);
                r.out_port = p;
                r.block_num = b;
                r.table = t;
                c.offer(r.as_bytes());
                if c.is_full() {
                    return c.finish();
                }
            }
        }
    }
    c.finish()
}

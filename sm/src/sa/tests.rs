use std::sync::Arc;

use super::*;
use crate::lid::{assign_lids, Guid2Lid, LidConfig};
use crate::subnet::{Node, Subnet};
use ibmad::sa_rec::node::comp;
use ibmad::sa_rec::NodeRecordRepr;
use ibmad::{gmp::Repr as GmpRepr, DrPath, Guid, Lid, PortNum, QKey};

fn req_with(
    method: Method,
    attr: SaAttrId,
    sm_key: u64,
    comp_mask: u64,
    rec: &[u8],
) -> [u8; MAD_LEN] {
    let r = SaRepr {
        header: GmpRepr::request(MgmtClass::SUBN_ADM, method, attr.0, 0, 0x55),
        rmpp: ibmad::RmppRepr::Inactive,
        sm_key,
        attr_offset: 0,
        comp_mask,
    };
    let mut m = r.to_mad();
    m[SA_DATA_OFFSET..SA_DATA_OFFSET + rec.len()].copy_from_slice(rec);
    m
}

fn req(method: Method, attr: SaAttrId) -> [u8; MAD_LEN] {
    req_with(method, attr, 0, 0x3, &[])
}

fn meta() -> MadMeta {
    MadMeta {
        qp: 1,
        qkey: QKey::GSI,
        ..MadMeta::gmp(PortNum(1), Lid(4), Lid(1))
    }
}

/// A switch (4 ports) with two CAs on ports 1 and 2; LIDs 1 (switch), 2, 3.
fn subnet() -> Subnet {
    let mut s = Subnet::new();
    let sw = s.add_active_node(Node {
        dr_path: DrPath::local(),
        ..Node::new(Guid(0x100), ibmad::NodeType::SWITCH, 4, "sw")
    });
    for i in 1..=2u8 {
        let ca = s.add_active_node(Node {
            partition_cap: 64,
            ..Node::new(
                Guid(0x200 * u64::from(i)),
                ibmad::NodeType::CA,
                1,
                &format!("ca{i}"),
            )
        });
        s.connect_active((sw, PortNum(i)), (ca, PortNum(1)));
    }
    assign_lids(&mut s, &LidConfig::default(), &Guid2Lid::default()).unwrap();
    s
}

fn snapshot() -> Arc<SaSnapshot> {
    Arc::new(crate::sa::snapshot::tests::snap(&subnet()))
}

fn serving_sa(cfg: SaConfig) -> Sa {
    let mut sa = Sa::with_config(cfg);
    assert!(sa.set_snapshot(snapshot()));
    sa.set_serving(Serving {
        master: true,
        up: true,
    });
    sa
}

fn ask(sa: &mut Sa, mad: &[u8]) -> Option<SaReply> {
    sa.handle_mad(Time::ZERO, &meta(), mad);
    sa.poll_transmit(Time::ZERO)
}

/// The headers of an answer (a short RMPP message padded for the parser).
fn headers(r: &SaReply) -> SaRepr {
    let mut m = r.mad.clone();
    m.resize(m.len().max(MAD_LEN), 0);
    SaRepr::parse_bytes(&m).unwrap()
}

fn records(r: &SaReply) -> Vec<NodeRecordRepr> {
    let a = headers(r);
    let size = a.record_len();
    if size == 0 {
        return Vec::new();
    }
    let n = match a.rmpp {
        ibmad::RmppRepr::Data { payload_len, .. } => (payload_len as usize - 20) / size,
        _ => 1,
    };
    (0..n)
        .map(|i| {
            let off = SA_DATA_OFFSET + i * size;
            NodeRecordRepr::parse(&r.mad[off..off + size]).unwrap()
        })
        .collect()
}

#[test]
fn unserved_attributes_get_method_attr_not_supported() {
    let mut sa = serving_sa(SaConfig::default());
    for (m, resp) in [
        (Method::GET, Method::GET_RESP),
        (Method::SET, Method::GET_RESP),
        (Method::GET_TABLE, Method::GET_TABLE_RESP),
        (Method::GET_TRACE_TABLE, Method::GET_TRACE_TABLE_RESP),
        (Method::GET_MULTI, Method::GET_MULTI_RESP),
        (Method::DELETE, Method::DELETE_RESP),
    ] {
        let attr = SaAttrId::TRACE_RECORD;
        let r = ask(&mut sa, &req(m, attr)).unwrap();
        let a = SaRepr::parse_bytes(&r.mad).unwrap();
        assert_eq!(a.header.method, resp, "{m}");
        assert_eq!(a.header.status, Status::METHOD_ATTR_NOT_SUPPORTED);
        assert_eq!(a.header.tid, 0x55);
        assert_eq!((a.sm_key, a.attr_offset, a.comp_mask), (0, 0, 0x3));
        // Back to the requester (LID 4) from the SA's LID (1), to its QP.
        assert_eq!((r.meta.dlid, r.meta.slid, r.meta.qp), (Lid(4), Lid(1), 1));
    }
    // NodeRecord is read-only.
    for m in [Method::SET, Method::DELETE] {
        let r = ask(&mut sa, &req(m, SaAttrId::NODE_RECORD)).unwrap();
        assert_eq!(&r.mad[4..6], &[0x00, 0x0C]);
    }
    assert_eq!(sa.stats().answered, 8);
}

#[test]
fn bad_version_and_unknown_methods() {
    let mut sa = serving_sa(SaConfig::default());
    let mut v1 = req(Method::GET_TABLE, SaAttrId::PATH_RECORD);
    v1[2] = 1;
    let r = ask(&mut sa, &v1).unwrap();
    assert_eq!(&r.mad[2..6], &[1, 0x92, 0x00, 0x04]);
    let mut odd = req(Method::GET, SaAttrId::NODE_RECORD);
    odd[3] = 0x33;
    let r = ask(&mut sa, &odd).unwrap();
    assert_eq!(&r.mad[3..6], &[0xB3, 0x00, 0x08]);
}

#[test]
fn answers_are_never_answered_and_garbage_is_dropped() {
    let mut sa = serving_sa(SaConfig::default());
    for m in [
        Method::GET_RESP,
        Method::REPORT_RESP,
        Method::GET_TABLE_RESP,
    ] {
        assert!(ask(&mut sa, &req(m, SaAttrId::NODE_RECORD)).is_none());
    }
    let mut perf = req(Method::GET, SaAttrId::NODE_RECORD);
    perf[1] = 0x04;
    assert!(ask(&mut sa, &perf).is_none());
    let mut b2 = req(Method::GET, SaAttrId::NODE_RECORD);
    b2[0] = 2;
    assert!(ask(&mut sa, &b2).is_none());
    assert!(ask(&mut sa, &[1, 3, 2, 1]).is_none());
    // An RMPP-active request with a broken RMPP header still gets its error answer, under
    // the PathRecord id for a GetMulti(MultiPathRecord) (o15-0.2.7).
    let mut rmpp = req(Method::GET_MULTI, SaAttrId::MULTI_PATH_RECORD);
    rmpp[26] = 0x01;
    let r = ask(&mut sa, &rmpp).unwrap();
    let a = SaRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!(a.attr(), SaAttrId::PATH_RECORD);
    assert_eq!(
        sa.stats(),
        SaStats {
            received: 7,
            answered: 1,
            dropped: 6,
            ..SaStats::default()
        }
    );
}

/// C15-0.1.5: a non-zero SM_Key other than the SA key is discarded; 0 and the key are served.
#[test]
fn c15_0_1_5_wrong_sm_key_is_discarded() {
    let mut sa = serving_sa(SaConfig {
        sa_key: 0x77,
        ..SaConfig::default()
    });
    let q = |key| req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, key, 0, &[]);
    assert!(ask(&mut sa, &q(9999)).is_none());
    assert_eq!(sa.stats().bad_key, 1);
    for key in [0, 0x77] {
        let r = ask(&mut sa, &q(key)).unwrap();
        assert_eq!(&r.mad[4..6], &[0, 0]);
        // Responses never carry the SM_Key.
        assert_eq!(&r.mad[36..44], &[0; 8]);
    }
}

#[test]
fn not_master_drops_and_no_subnet_is_busy() {
    let mut sa = Sa::new();
    let q = req(Method::GET_TABLE, SaAttrId::NODE_RECORD);
    // Standby (or discovering): no SA here.
    assert!(ask(&mut sa, &q).is_none());
    sa.set_serving(Serving {
        master: true,
        up: false,
    });
    let r = ask(&mut sa, &q).unwrap();
    assert_eq!(&r.mad[3..6], &[0x92, 0x00, 0x01]);
    assert_eq!(sa.stats().busy, 1);
    // A snapshot but the subnet went down: busy too.
    sa.set_snapshot(snapshot());
    let r = ask(&mut sa, &q).unwrap();
    assert_eq!(&r.mad[4..6], &[0x00, 0x01]);
    sa.set_serving(Serving {
        master: true,
        up: true,
    });
    let r = ask(&mut sa, &q).unwrap();
    assert_eq!(&r.mad[4..6], &[0x00, 0x00]);
    sa.set_serving(Serving {
        master: false,
        up: true,
    });
    assert!(ask(&mut sa, &q).is_none());
}

#[test]
fn snapshot_swap_is_by_pointer() {
    let mut sa = Sa::new();
    let s = snapshot();
    assert!(sa.set_snapshot(s.clone()));
    assert!(!sa.set_snapshot(s));
    assert!(sa.set_snapshot(snapshot()));
}

#[test]
fn with_swap_when_warm_a_new_snapshot_answers_once_its_index_is_built() {
    let mut sa = Sa::with_config(SaConfig {
        swap_when_warm: true,
        ..SaConfig::default()
    });
    // The first snapshot is taken at once (nothing else could answer).
    let first = snapshot();
    assert!(!first.is_warm());
    assert!(sa.offer_snapshot(&first));
    // A re-sweep's snapshot waits for its index; the first one answers meanwhile.
    let second = snapshot();
    assert!(!sa.offer_snapshot(&second));
    assert!(Arc::ptr_eq(sa.snapshot().unwrap(), &first));
    second.warm();
    assert!(second.is_warm());
    assert!(sa.offer_snapshot(&second));
    assert!(Arc::ptr_eq(sa.snapshot().unwrap(), &second));
    // Without the option every snapshot is taken at once.
    let mut plain = Sa::new();
    assert!(plain.offer_snapshot(&snapshot()));
    assert!(plain.offer_snapshot(&snapshot()));
}

/// A serving SA on an RMPP transport that carries MADs up to `max_mad_len` bytes, and its
/// answer to a GetTable of every NodeRecord.
fn node_table_on_rmpp(max_mad_len: usize) -> (Sa, SaReply) {
    let mut sa = serving_sa(SaConfig {
        transport_rmpp: true,
        max_mad_len,
        ..SaConfig::default()
    });
    let r = ask(
        &mut sa,
        &req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, 0, 0, &[]),
    )
    .unwrap();
    (sa, r)
}

#[test]
fn node_record_table_on_an_rmpp_transport() {
    let (mut sa, r) = node_table_on_rmpp(8192);
    let a = SaRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!(a.header.method, Method::GET_TABLE_RESP);
    assert_eq!(a.header.status, Status::OK);
    assert_eq!(a.attr_offset, 14);
    assert_eq!(r.mad.len(), SA_DATA_OFFSET + 3 * 112);
    let recs = records(&r);
    // An empty table: the headers alone.
    let mut q = [0u8; 108];
    q[1] = 9;
    let e = ask(
        &mut sa,
        &req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, 0, comp::LID, &q),
    )
    .unwrap();
    assert_eq!(e.mad.len(), SA_DATA_OFFSET);
    assert_eq!(a.rmpp, ibmad::RmppRepr::single(20 + 3 * 112));
    let lids: Vec<u16> = recs.iter().map(|r| r.lid.0).collect();
    assert_eq!(lids, [1, 2, 3]);
    let sw = &recs[0];
    assert_eq!(sw.node_info.node_type, ibmad::NodeType::SWITCH);
    assert_eq!(sw.node_info.local_port_num, PortNum(0));
    assert_eq!(
        (sw.node_info.port_guid, sw.node_desc.text.as_str()),
        (Guid(0x100), "sw")
    );
    let ca = &recs[1];
    assert_eq!(ca.node_info.node_guid, Guid(0x200));
    assert_eq!(ca.node_info.port_guid, Guid(0x201));
    assert_eq!(ca.node_info.local_port_num, PortNum(1));
    assert_eq!(ca.node_info.partition_cap, 64);
}

#[test]
fn a_table_longer_than_the_transport_carries_is_refused_not_cut() {
    // Room for two of the three 112-byte records: ERR_NO_RESOURCES, not a silent two.
    let (_, r) = node_table_on_rmpp(SA_DATA_OFFSET + 2 * 112 + 50);
    let a = SaRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!(a.header.status, sa_status::NO_RESOURCES);
    assert!(records(&r).is_empty());
}

#[test]
fn node_record_table_without_segmenting_is_one_mad() {
    // ibsim's shim: its clients do no RMPP, so the table is cut to what one MAD holds.
    let mut sa = serving_sa(SaConfig {
        segment: false,
        ..SaConfig::default()
    });
    let r = ask(
        &mut sa,
        &req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, 0, 0, &[]),
    )
    .unwrap();
    assert_eq!(r.mad.len(), MAD_LEN);
    assert_eq!(records(&r).len(), 1);
    assert!(sa.state().transfers.is_empty());
}

#[test]
fn node_record_table_without_rmpp_is_segmented_by_the_sa() {
    let mut sa = serving_sa(SaConfig::default());
    let r = ask(
        &mut sa,
        &req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, 0, 0, &[]),
    )
    .unwrap();
    // Three NodeRecords (3 × 112 bytes) do not fit one MAD: segment 1 of 2, window 1;
    // PayloadLength as the kernel counts it (the SA header in every segment): 2 × 220 − 64
    // bytes of padding.
    assert_eq!(r.mad.len(), MAD_LEN);
    let h = headers(&r);
    assert!(
        matches!(
            h.rmpp,
            ibmad::RmppRepr::Data {
                first: true,
                last: false,
                segment: 1,
                payload_len: 376,
                ..
            }
        ),
        "{:?}",
        h.rmpp
    );
    assert!(sa.poll_transmit(Time::ZERO).is_none(), "the window is 1");
    // The requester's ACK (the R bit flipped) opens the window: segment 2, Last.
    let mut ack = [0u8; MAD_LEN];
    ack[..SA_DATA_OFFSET].copy_from_slice(&r.mad[..SA_DATA_OFFSET]);
    ack[3] ^= 0x80;
    ack[25] = ibmad::rmpp::RmppType::ACK.0;
    ack[26] = ibmad::rmpp::RmppFlags::ACTIVE;
    ack[28..32].copy_from_slice(&1u32.to_be_bytes());
    ack[32..36].copy_from_slice(&2u32.to_be_bytes());
    sa.handle_mad(Time::ZERO, &meta(), &ack);
    let r2 = sa.poll_transmit(Time::ZERO).unwrap();
    assert_eq!(&r2.mad[..24], &r.mad[..24], "same headers, same TID");
    assert_eq!(u32::from_be_bytes(r2.mad[28..32].try_into().unwrap()), 2);
    assert_ne!(r2.mad[26] & ibmad::rmpp::RmppFlags::LAST, 0);
    ack[28..32].copy_from_slice(&2u32.to_be_bytes());
    sa.handle_mad(Time::ZERO, &meta(), &ack);
    assert!(sa.state().transfers.is_empty());
    assert_eq!(sa.state().transfers.stats().completed, 1);
}

#[test]
fn node_record_get_rules_and_component_masks() {
    let mut sa = serving_sa(SaConfig::default());
    let mut rec = [0u8; 108];
    // Get without components: three records match — too many (C15-0.1.30).
    let r = ask(
        &mut sa,
        &req_with(Method::GET, SaAttrId::NODE_RECORD, 0, 0, &rec),
    )
    .unwrap();
    assert_eq!(&r.mad[3..6], &[0x81, 0x04, 0x00]);
    // Get by LID 3: that CA.
    rec[0..2].copy_from_slice(&[0, 3]);
    let r = ask(
        &mut sa,
        &req_with(Method::GET, SaAttrId::NODE_RECORD, 0, comp::LID, &rec),
    )
    .unwrap();
    let a = SaRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!(
        (a.header.method, a.header.status),
        (Method::GET_RESP, Status::OK)
    );
    assert_eq!(a.rmpp, ibmad::RmppRepr::Inactive);
    let got = NodeRecordRepr::parse(&r.mad[SA_DATA_OFFSET..]).unwrap();
    assert_eq!((got.lid, got.node_desc.text.as_str()), (Lid(3), "ca2"));
    // An unknown LID: no records.
    rec[0..2].copy_from_slice(&[0, 9]);
    let r = ask(
        &mut sa,
        &req_with(Method::GET, SaAttrId::NODE_RECORD, 0, comp::LID, &rec),
    )
    .unwrap();
    assert_eq!(&r.mad[4..6], &[0x03, 0x00]);
    // GetTable of nothing: an empty table, AttributeOffset 0.
    let r = ask(
        &mut sa,
        &req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, 0, comp::LID, &rec),
    )
    .unwrap();
    let a = SaRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!((a.header.status, a.attr_offset), (Status::OK, 0));
    assert_eq!(a.rmpp, ibmad::RmppRepr::single(20));
    // By NodeType = switch.
    rec[6] = 2;
    let r = ask(
        &mut sa,
        &req_with(Method::GET, SaAttrId::NODE_RECORD, 0, comp::NODE_TYPE, &rec),
    )
    .unwrap();
    assert_eq!(records(&r)[0].lid, Lid(1));
    // By PortGUID.
    rec[24..32].copy_from_slice(&0x401u64.to_be_bytes());
    let r = ask(
        &mut sa,
        &req_with(Method::GET, SaAttrId::NODE_RECORD, 0, comp::PORT_GUID, &rec),
    )
    .unwrap();
    assert_eq!(records(&r)[0].lid, Lid(3));
    // PortGUID of the CA and NodeType switch: contradictory.
    let r = ask(
        &mut sa,
        &req_with(
            Method::GET,
            SaAttrId::NODE_RECORD,
            0,
            comp::PORT_GUID | comp::NODE_TYPE,
            &rec,
        ),
    )
    .unwrap();
    assert_eq!(&r.mad[4..6], &[0x03, 0x00]);
}

// ----- the simple records ----------------------------------------------------------------

use crate::qos::program::KnownQos;
use crate::routing::{Lfts, Routes};
use ibmad::sa_rec::{self as rec, SaRecord};
use ibmad::SmpAttrId;

/// The fixture with LFTs (top LID 3: LID l leaves by port l-1, the switch itself by 0), a
/// SwitchInfo, QoS tables the CAs acknowledged, and an MFT entry.
fn rich_snapshot() -> Arc<SaSnapshot> {
    use ibmad::zerocopy::FromZeros;
    let mut s = subnet();
    let mut si = ibmad::attr::SwitchInfo::new_zeroed();
    si.linear_fdb_cap.set(0xC000);
    si.linear_fdb_top.set(3);
    si.multicast_fdb_cap.set(32);
    s.nodes[0].switch_info = Some(si);
    let mut lfts = Lfts::new(&s, Lid(3));
    let sw = crate::subnet::NodeId(0);
    for l in 1..=3u16 {
        lfts.set(sw, Lid(l), Some(PortNum(u8::try_from(l - 1).unwrap())));
    }
    let routes = std::sync::Arc::new(Routes::new(lfts));
    // ca1 (LID 2) maps SLs and has 4 data VLs and 8 + 8 VLArbitration entries; the switch
    // maps SLs; ca2 and the switch ports keep the fixture's PortInfo (no SL mapping, VLCap 0).
    let sl_map = ibmad::attr::port_info::cap::IS_SL_MAP_SUP;
    for (n, p) in [(1u32, 1u8), (0, 0)] {
        let port = s.port_mut(crate::subnet::NodeId(n), PortNum(p)).unwrap();
        let pi = port.info.as_mut().unwrap();
        pi.capability_mask.set(pi.capability_mask.get() | sl_map);
        if n == 1 {
            pi.set_vl_cap(3);
            pi.vl_arb_low_cap = 8;
            pi.vl_arb_high_cap = 8;
        }
    }
    let mut sw_qos = KnownQos::new(true, 4);
    let mut t12 = [0u8; 64];
    t12[..8].copy_from_slice(&[0x11; 8]);
    sw_qos.on_ack(PortNum(0), SmpAttrId::SL_TO_VL_TABLE, 0x0102, &t12);
    let mut qos = KnownQos::new(false, 1);
    let mut data = [0u8; 64];
    data[..8].copy_from_slice(&[0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67]);
    qos.on_ack(PortNum(1), SmpAttrId::SL_TO_VL_TABLE, 0, &data);
    let mut vla = [0u8; 64];
    vla[0..2].copy_from_slice(&[0x00, 0x40]);
    qos.on_ack(PortNum(1), SmpAttrId::VL_ARB_TABLE, 1 << 16, &vla);
    let known = |id: crate::subnet::NodeId| match id.0 {
        0 => Some(&sw_qos),
        1 => Some(&qos),
        _ => None,
    };
    let snap = SaSnapshot::build(&crate::sa::snapshot::SnapshotInput {
        generation: 1,
        subnet: &s,
        routes: Some(&routes),
        known_qos: &known,
        own: crate::sa::snapshot::SmEntry {
            guid: Guid(0x201),
            lid: Lid(2),
            sm_key: 0x1234,
            act_count: 7,
            priority: 5,
            state: ibmad::SmState::MASTER,
        },
        others: &[],
        facts: crate::sa::snapshot::ConfigFacts::default(),
        qos_policy: None,
    });
    Arc::new(snap)
}

/// The MFTs of the fixture: MLID 0xC001 with both CAs, so ports 1 and 2 of the switch.
fn rich_mfts(snap: &SaSnapshot) -> Arc<crate::mcast::Mfts> {
    let s = &snap.subnet;
    let members = s
        .end_ports()
        .filter(|&(id, _)| !s.node(id).is_switch())
        .map(|(id, p)| crate::mcast::McastMember {
            port_guid: s.port(id, p).unwrap().guid,
            receives: true,
        })
        .collect();
    let group = crate::mcast::McastGroup {
        mlid: Lid(0xC001),
        members,
    };
    Arc::new(crate::mcast::compute(s, &[group]))
}

fn rich_sa() -> Sa {
    let mut sa = Sa::with_config(SaConfig {
        transport_rmpp: true,
        max_mad_len: 1 << 16,
        ..SaConfig::default()
    });
    let snap = rich_snapshot();
    sa.set_mfts(rich_mfts(&snap));
    sa.set_snapshot(snap);
    sa.set_serving(Serving {
        master: true,
        up: true,
    });
    sa
}

/// Asks `attr` with `method`, `mask` and record bytes `q`; the status and the records.
fn query(
    sa: &mut Sa,
    method: Method,
    attr: SaAttrId,
    key: u64,
    mask: u64,
    q: &[u8],
) -> (u16, Vec<Vec<u8>>) {
    let r = ask(sa, &req_with(method, attr, key, mask, q)).unwrap();
    let a = headers(&r);
    let size = a.record_len();
    let n = match a.rmpp {
        ibmad::RmppRepr::Data { payload_len, .. } if size > 0 => (payload_len as usize - 20) / size,
        _ if a.header.status == Status::OK && size > 0 => 1,
        _ => 0,
    };
    let recs = (0..n)
        .map(|i| r.mad[SA_DATA_OFFSET + i * size..SA_DATA_OFFSET + (i + 1) * size].to_vec())
        .collect();
    (a.header.status.0, recs)
}

fn table<R: SaRecord>(sa: &mut Sa, mask: u64, q: &[u8]) -> Vec<Vec<u8>> {
    let (st, recs) = query(sa, Method::GET_TABLE, R::ATTR, 0, mask, q);
    assert_eq!(st, 0);
    recs
}

#[test]
fn class_port_info_capabilities_and_resp_time() {
    let mut sa = rich_sa();
    let (st, recs) = query(&mut sa, Method::GET, SaAttrId::CLASS_PORT_INFO, 0, 0, &[]);
    assert_eq!(st, 0);
    let cpi = <ibmad::ClassPortInfoRepr as ibmad::GmpAttrRepr>::parse(&recs[0]).unwrap();
    assert_eq!((cpi.base_version, cpi.class_version), (1, 2));
    // IsUDMulticastSupported, as OpenSM unless disable_multicast.
    assert_eq!(
        cpi.capability_mask,
        records::cap::PORT_INFO_CAPMASK_MATCH | records::cap::UD_MCAST
    );
    let mut off = Sa::with_config(SaConfig {
        multicast: false,
        ..SaConfig::default()
    });
    off.set_snapshot(rich_snapshot());
    off.set_serving(Serving {
        master: true,
        up: true,
    });
    let (_, recs) = query(&mut off, Method::GET, SaAttrId::CLASS_PORT_INFO, 0, 0, &[]);
    let cpi_off = <ibmad::ClassPortInfoRepr as ibmad::GmpAttrRepr>::parse(&recs[0]).unwrap();
    assert_eq!(
        cpi_off.capability_mask,
        records::cap::PORT_INFO_CAPMASK_MATCH
    );
    assert_eq!(
        cpi.capability_mask2 & records::cap::CAP2_PORT_INFO_CAPMASK2_MATCH,
        1 << 10
    );
    // 200 ms: 4.096 µs × 2^16 = 268 ms (OpenSM's 0x10).
    assert_eq!(cpi.resp_time_value, 16);
    assert_eq!((cpi.redirect.qp, cpi.redirect.qkey), (1, ibmad::QKey::GSI));
    let (st, _) = query(
        &mut sa,
        Method::GET_TABLE,
        SaAttrId::CLASS_PORT_INFO,
        0,
        0,
        &[],
    );
    assert_eq!(st, 0x000C);
    assert_eq!(
        records::resp_time_value(core::time::Duration::from_millis(1000)),
        18
    );
    assert_eq!(records::resp_time_value(core::time::Duration::ZERO), 0);
}

#[test]
fn a_down_port_info_record_carries_its_states_only() {
    use ibmad::zerocopy::IntoBytes;
    use ibmad::PortState;
    use rec::port::comp;
    let mut s = subnet();
    let sw = crate::subnet::NodeId(0);
    let pi = s
        .port_mut(sw, PortNum(3))
        .unwrap()
        .info
        .get_or_insert_with(ibmad::zerocopy::FromZeros::new_zeroed);
    pi.set_port_state(PortState::DOWN);
    pi.set_phys_state(ibmad::PhysState::POLLING);
    pi.link_width_supported = 3;
    pi.gid_prefix.set(0xfe80_0000_0000_0000);
    pi.set_mtu_cap(4);
    let mut sa = Sa::with_config(SaConfig::default());
    assert!(sa.set_snapshot(Arc::new(crate::sa::snapshot::tests::snap(&s))));
    sa.set_serving(Serving {
        master: true,
        up: true,
    });
    let mut q = [0u8; 68];
    q[1] = 1;
    q[2] = 3;
    let one = table::<rec::PortInfoRecord>(&mut sa, comp::LID | comp::PORT_NUM, &q);
    assert_eq!(one.len(), 1);
    let r = rec::PortInfoRecord::parse(&one[0]).unwrap();
    assert_eq!((r.lid.get(), r.port_num), (1, 3));
    assert_eq!(r.port_info.port_state(), PortState::DOWN);
    assert_eq!(r.port_info.phys_state(), ibmad::PhysState::POLLING);
    let mut blank = r.port_info;
    blank.set_port_state(PortState::NO_CHANGE);
    blank.set_phys_state(ibmad::PhysState::NO_CHANGE);
    assert_eq!(
        blank.as_bytes(),
        [0u8; 64].as_slice(),
        "as OpenSM serves a Down port: every other field 0"
    );
}

#[test]
fn port_info_records_keys_masks_and_m_key() {
    use rec::port::comp;
    let mut sa = rich_sa();
    // Every port with PortInfo: switch ports 0..2 (3 and 4 were never read) and both CA
    // ports.
    let all = table::<rec::PortInfoRecord>(&mut sa, 0, &[]);
    assert_eq!(all.len(), 5);
    let mut q = [0u8; 68];
    q[1] = 1; // the switch's LID
    assert_eq!(
        table::<rec::PortInfoRecord>(&mut sa, comp::LID, &q).len(),
        3
    );
    q[2] = 2;
    let one = table::<rec::PortInfoRecord>(&mut sa, comp::LID | comp::PORT_NUM, &q);
    assert_eq!(one.len(), 1);
    let r = rec::PortInfoRecord::parse(&one[0]).unwrap();
    assert_eq!((r.lid.get(), r.port_num), (1, 2));
    // PortState Active (4) on every port of the fixture.
    let mut q = [0u8; 68];
    q[4 + 32] = 0x04;
    assert_eq!(
        table::<rec::PortInfoRecord>(&mut sa, comp::PORT_STATE, &q).len(),
        5
    );
    q[4 + 32] = 0x01;
    assert_eq!(
        table::<rec::PortInfoRecord>(&mut sa, comp::PORT_STATE, &q).len(),
        0
    );
    // Options echoed.
    let mut q = [0u8; 68];
    q[1] = 2;
    q[3] = 0x80;
    let r = table::<rec::PortInfoRecord>(&mut sa, comp::LID | comp::OPTIONS, &q);
    assert_eq!(r[0][3], 0x80);
    // A LID of nobody: no records; a Get of one port: a GetResp.
    q[1] = 9;
    assert_eq!(
        table::<rec::PortInfoRecord>(&mut sa, comp::LID, &q).len(),
        0
    );
    q[1] = 3;
    let (st, r) = query(
        &mut sa,
        Method::GET,
        SaAttrId::PORT_INFO_RECORD,
        0,
        comp::LID,
        &q,
    );
    assert_eq!((st, r.len()), (0, 1));
}

#[test]
fn port_info_record_enhanced_capability_match() {
    use rec::port::comp;
    let mut snap = (*rich_snapshot()).clone();
    let ca = snap.by_lid(Lid(2)).unwrap();
    let port = snap.subnet.port_mut(ca.0, ca.1).unwrap();
    let mut pi = port.info.unwrap();
    pi.capability_mask.set(0x0000_0A02); // IsSM among others
    pi.m_key.set(0x99);
    port.info = Some(pi);
    let mut sa = rich_sa();
    sa.set_snapshot(Arc::new(snap));
    let mut q = [0u8; 68];
    q[4 + 20..4 + 24].copy_from_slice(&0x0000_0002u32.to_be_bytes());
    let mut m = req_with(
        Method::GET_TABLE,
        SaAttrId::PORT_INFO_RECORD,
        0,
        comp::CAPABILITY_MASK,
        &q,
    );
    // Exact match: nobody has CapabilityMask == IsSM alone.
    let r = ask(&mut sa, &m).unwrap();
    assert_eq!(r.mad.len(), SA_DATA_OFFSET);
    m[20] |= 0x80; // AttributeModifier bit 31: match by bits
    let r = ask(&mut sa, &m).unwrap();
    let a = headers(&r);
    assert_eq!(a.rmpp, ibmad::RmppRepr::single(20 + 72));
    let got = rec::PortInfoRecord::parse(&r.mad[SA_DATA_OFFSET..]).unwrap();
    assert_eq!(got.lid.get(), 2);
    // Untrusted: M_Key hidden; trusted (SM_Key = sa_key 1): shown.
    assert_eq!(got.port_info.m_key.get(), 0);
    let mut t = req_with(
        Method::GET_TABLE,
        SaAttrId::PORT_INFO_RECORD,
        1,
        comp::CAPABILITY_MASK,
        &q,
    );
    t[20] |= 0x80;
    let r = ask(&mut sa, &t).unwrap();
    let got = rec::PortInfoRecord::parse(&r.mad[SA_DATA_OFFSET..]).unwrap();
    assert_eq!(got.port_info.m_key.get(), 0x99);
}

#[test]
fn link_records_both_directions_and_keys() {
    use rec::link::comp;
    let mut sa = rich_sa();
    assert_eq!(table::<rec::LinkRecord>(&mut sa, 0, &[]).len(), 4);
    let from_sw = table::<rec::LinkRecord>(&mut sa, comp::FROM_LID, &[0, 1]);
    assert_eq!(from_sw.len(), 2);
    let to_ca = table::<rec::LinkRecord>(&mut sa, comp::TO_LID, &[0, 0, 0, 0, 0, 3]);
    assert_eq!(to_ca.len(), 1);
    let r = rec::LinkRecord::parse(&to_ca[0]).unwrap();
    assert_eq!(
        (r.from_lid.get(), r.from_port, r.to_port, r.to_lid.get()),
        (1, 2, 1, 3)
    );
    let both =
        table::<rec::LinkRecord>(&mut sa, comp::FROM_LID | comp::TO_LID, &[0, 2, 0, 0, 0, 1]);
    assert_eq!(both.len(), 1);
    assert_eq!(
        table::<rec::LinkRecord>(&mut sa, comp::FROM_LID, &[0, 7]).len(),
        0
    );
}

#[test]
fn switch_lft_and_mft_records() {
    use rec::{lft, mft};
    let mut sa = rich_sa();
    let sw = table::<rec::SwitchInfoRecord>(&mut sa, 0, &[]);
    assert_eq!(sw.len(), 1);
    assert_eq!(&sw[0][0..6], &[0, 1, 0, 0, 0xC0, 0x00]);
    // LIDs 0..=3: one block.
    let l = table::<rec::LftRecord>(&mut sa, 0, &[]);
    assert_eq!(l.len(), 1);
    let r = rec::LftRecord::parse(&l[0]).unwrap();
    assert_eq!((r.lid.get(), r.block_num.get()), (1, 0));
    assert_eq!(&r.lft[..5], &[0xFF, 0, 1, 2, 0xFF]);
    assert_eq!(
        table::<rec::LftRecord>(&mut sa, lft::comp::BLOCK_NUM, &[0, 0, 0, 1]).len(),
        0
    );
    // MFT: MLID 0xC001 is in block 0; the 4-port switch has position 0 only.
    let m = table::<rec::MftRecord>(&mut sa, 0, &[]);
    assert_eq!(m.len(), 1);
    let r = rec::MftRecord::parse(&m[0]).unwrap();
    assert_eq!(
        (r.position(), r.block_num(), r.mft[1].get(), r.mft[0].get()),
        (0, 0, 0b110, 0)
    );
    assert_eq!(
        table::<rec::MftRecord>(&mut sa, mft::comp::POSITION, &[0, 0, 0x10, 0]).len(),
        0
    );
}

#[test]
fn guid_info_and_pkey_table_records() {
    use rec::pkey::comp;
    let mut sa = rich_sa();
    let g = table::<rec::GuidInfoRecord>(&mut sa, 0, &[]);
    assert_eq!(g.len(), 3);
    let r = rec::GuidInfoRecord::parse(&g[1]).unwrap();
    assert_eq!((r.lid.get(), r.guids[0].get()), (2, 0x201));
    // P_KeyTableRecord: trusted only.
    let (st, _) = query(
        &mut sa,
        Method::GET_TABLE,
        SaAttrId::P_KEY_TABLE_RECORD,
        0,
        0,
        &[],
    );
    assert_eq!(st, 0x0700);
    // The switch (PartitionCap 0: one block) and two CAs of PartitionCap 64: two blocks.
    let (st, recs) = query(
        &mut sa,
        Method::GET_TABLE,
        SaAttrId::P_KEY_TABLE_RECORD,
        1,
        0,
        &[],
    );
    assert_eq!((st, recs.len()), (0, 5));
    let r = rec::PKeyTableRecord::parse(&recs[2]).unwrap();
    assert_eq!(
        (r.lid.get(), r.block_num.get(), r.pkeys[0].get()),
        (2, 1, 0)
    );
    let r = rec::PKeyTableRecord::parse(&recs[1]).unwrap();
    assert_eq!(
        (r.lid.get(), r.port_num, r.pkeys[0].get(), r.pkeys[1].get()),
        (2, 1, 0xFFFF, 0)
    );
    let (_, recs) = query(
        &mut sa,
        Method::GET_TABLE,
        SaAttrId::P_KEY_TABLE_RECORD,
        1,
        comp::LID,
        &[0, 3],
    );
    assert_eq!(recs.len(), 2);
}

#[test]
fn sm_info_records_and_a_refused_set() {
    let mut sa = rich_sa();
    let (st, recs) = query(
        &mut sa,
        Method::GET_TABLE,
        SaAttrId::SM_INFO_RECORD,
        0,
        0,
        &[],
    );
    assert_eq!((st, recs.len()), (0, 1));
    let r = rec::SmInfoRecord::parse(&recs[0]).unwrap();
    assert_eq!((r.lid.get(), r.guid.get(), r.sm_key.get()), (2, 0x201, 0));
    assert_eq!((r.act_count.get(), r.priority_state), (7, 0x53));
    let (_, recs) = query(
        &mut sa,
        Method::GET_TABLE,
        SaAttrId::SM_INFO_RECORD,
        1,
        0,
        &[],
    );
    assert_eq!(
        rec::SmInfoRecord::parse(&recs[0]).unwrap().sm_key.get(),
        0x1234
    );
    // osmtest: SubnAdmSet(SMInfoRecord) must fail — with an answer, not a timeout.
    let (st, _) = query(&mut sa, Method::SET, SaAttrId::SM_INFO_RECORD, 0, 0, &[]);
    assert_eq!(st, 0x000C);
}

#[test]
fn sl2vl_and_vlarb_records_from_acknowledged_tables() {
    let mut sa = rich_sa();
    let s = table::<rec::Sl2VlRecord>(&mut sa, 0, &[]);
    let keys: Vec<(u16, u8, u8, u8)> = s
        .iter()
        .map(|b| {
            let r = rec::Sl2VlRecord::parse(b).unwrap();
            (r.lid.get(), r.in_port, r.out_port, r.sl2vl[1])
        })
        .collect();
    // The switch: only the known pair (input 1, output 2) of its 25; ca1: its known table
    // with OpenSM's ports 0/0; ca2 maps no SLs: all zeros (every SL on VL 0).
    assert_eq!(keys, vec![(1, 1, 2, 0x11), (2, 0, 0, 0x23), (3, 0, 0, 0)]);
    // osmtest -f q: by LID with input and output port 0.
    let mut q = [0u8; 16];
    q[..2].copy_from_slice(&2u16.to_be_bytes());
    let (st, one) = query(&mut sa, Method::GET, rec::Sl2VlRecord::ATTR, 0, 0b111, &q);
    assert_eq!((st, one.len()), (0, 1));
    assert_eq!(rec::Sl2VlRecord::parse(&one[0]).unwrap().sl2vl[1], 0x23);

    let v = table::<rec::VlArbRecord>(&mut sa, 0, &[]);
    let blocks: Vec<(u16, u8, u8, u8)> = v
        .iter()
        .map(|b| {
            let r = rec::VlArbRecord::parse(b).unwrap();
            (r.lid.get(), r.out_port, r.block_num, r.table[1])
        })
        .collect();
    // Switch ports 0..=2 (3 and 4 were never read) and ca2 have VLCap 0: no arbitration, four
    // zero blocks each; ca1: block 1 as acknowledged, blocks 2 and 4 do not exist (caps 8),
    // block 3 is unknown.
    assert_eq!(blocks.len(), 3 * 4 + 3 + 4, "{blocks:?}");
    assert!(blocks.contains(&(2, 1, 1, 0x40)));
    assert!(blocks.contains(&(2, 1, 2, 0)) && blocks.contains(&(2, 1, 4, 0)));
    assert!(!blocks.iter().any(|b| (b.0, b.2) == (2, 3)));
    assert!(blocks.contains(&(1, 0, 4, 0)) && blocks.contains(&(3, 1, 3, 0)));
    // osmtest -f q asks a CA with port 0: the SA answers for the port the LID names.
    let mut q = [0u8; 72];
    q[..2].copy_from_slice(&2u16.to_be_bytes());
    q[3] = 1;
    let (st, one) = query(&mut sa, Method::GET, rec::VlArbRecord::ATTR, 0, 0b111, &q);
    assert_eq!((st, one.len()), (0, 1));
    let r = rec::VlArbRecord::parse(&one[0]).unwrap();
    assert_eq!((r.out_port, r.block_num, r.table[1]), (1, 1, 0x40));
    q[3] = 3;
    let (st, none) = query(&mut sa, Method::GET, rec::VlArbRecord::ATTR, 0, 0b111, &q);
    assert_eq!(
        (st, none.len()),
        (ibmad::sa::status::NO_RECORDS.0, 0),
        "unknown block: no records"
    );
}

#[test]
fn a_full_request_queue_answers_busy_at_once() {
    let mut sa = serving_sa(SaConfig {
        max_pending: 2,
        ..SaConfig::default()
    });
    let mut q = req(Method::GET_TABLE, SaAttrId::NODE_RECORD);
    for tid in 1..=5u64 {
        q[8..16].copy_from_slice(&tid.to_be_bytes());
        sa.handle_mad(Time::ZERO, &meta(), &q);
    }
    // Over the bound: a wrong SM_Key is still discarded, a response still not answered.
    sa.handle_mad(
        Time::ZERO,
        &meta(),
        &req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, 9999, 0, &[]),
    );
    let mut resp = q;
    resp[3] = Method::GET_RESP.0;
    sa.handle_mad(Time::ZERO, &meta(), &resp);
    assert_eq!(sa.pending(), 2);
    let out: Vec<SaReply> = std::iter::from_fn(|| sa.poll_transmit(Time::ZERO)).collect();
    assert_eq!(out.len(), 5);
    let got: Vec<(u64, Status)> = out
        .iter()
        .map(|r| {
            let h = headers(r).header;
            (h.tid, h.status)
        })
        .collect();
    // The three beyond the bound at once with BUSY, then the two queued, answered.
    assert_eq!(
        got,
        vec![
            (3, Status::BUSY),
            (4, Status::BUSY),
            (5, Status::BUSY),
            (1, Status::OK),
            (2, Status::OK)
        ]
    );
    assert_eq!(headers(&out[3]).header.method, Method::GET_TABLE_RESP);
    let st = sa.stats();
    assert_eq!((st.queue_full, st.busy, st.answered), (3, 0, 5));
    assert_eq!((st.bad_key, st.dropped, st.received), (1, 2, 7));
    assert_eq!(sa.pending(), 0);
}

// ----- MCMemberRecord ----------------------------------------------------------------------

mod mcmember_through_the_sa {
    use super::*;
    use crate::sa::mcmember::{ipoib_broadcast_mgid, CREATE_COMP_MASK, JOIN_COMP_MASK};
    use ibmad::sa_rec::mcmember::{comp as mc, join, Repr as Mc, RECORD_LEN};
    use ibmad::{Gid, PKey};

    /// The fixture's snapshot with the default partition's broadcast group to pre-create and
    /// a MulticastFDBCap on the switch.
    fn mc_snapshot() -> Arc<SaSnapshot> {
        let mut snap = crate::sa::snapshot::tests::snap(&{
            let mut s = subnet();
            let mut si = <ibmad::attr::SwitchInfo as ibmad::zerocopy::FromZeros>::new_zeroed();
            si.multicast_fdb_cap.set(64);
            s.nodes[0].switch_info = Some(si);
            // CAs of MTUCap 2048 (and 4x SDR: 10 Gb/s), as IPoIB's broadcast group needs.
            for port in &mut s.ports {
                if let Some(pi) = port.info.as_mut() {
                    pi.set_mtu_cap(4);
                }
            }
            s
        });
        snap.facts.subnet_timeout = 18;
        snap.mcast_groups = crate::partition::PartitionConfig::default()
            .partitions
            .iter()
            .flat_map(|p| p.groups.iter().copied())
            .collect();
        Arc::new(snap)
    }

    fn mc_sa() -> Sa {
        let mut sa = Sa::new();
        assert!(sa.set_snapshot(mc_snapshot()));
        sa.set_serving(Serving {
            master: true,
            up: true,
        });
        sa
    }

    /// The port GID of CA `i` (1 or 2; LIDs 2 and 3).
    fn ca_gid(sa: &Sa, i: usize) -> Gid {
        let s = &sa.snapshot().unwrap().subnet;
        let (id, p) = s
            .end_ports()
            .filter(|&(id, _)| !s.node(id).is_switch())
            .nth(i - 1)
            .unwrap();
        Gid::new(0, s.port(id, p).unwrap().guid)
    }

    /// Sends `rec` with `method` and `mask` from LID `from`; the answer's status and records.
    fn mc_ask(sa: &mut Sa, method: Method, mask: u64, rec: &Mc, from: u16) -> (Status, Vec<Mc>) {
        let mut b = [0u8; RECORD_LEN];
        assert!(rec.emit(&mut b));
        let m = req_with(method, SaAttrId::MC_MEMBER_RECORD, 0, mask, &b);
        let meta = MadMeta::gmp(PortNum(1), Lid(from), Lid(1));
        sa.handle_mad(Time::ZERO, &meta, &m);
        let r = sa.poll_transmit(Time::ZERO).unwrap();
        let h = headers(&r);
        let n = match h.rmpp {
            ibmad::RmppRepr::Data { payload_len, .. } => (payload_len as usize - 20) / 56,
            _ => usize::from(h.header.status == Status::OK),
        };
        let recs = (0..n)
            .map(|i| Mc::parse(&r.mad[SA_DATA_OFFSET + i * 56..]).unwrap())
            .collect();
        (h.header.status, recs)
    }

    #[test]
    fn broadcast_group_precreated_joins_creates_leaves_and_notices() {
        let mut sa = mc_sa();
        let bcast = ipoib_broadcast_mgid(PKey(0x7fff), 2);
        // The snapshot created the default partition's broadcast group, MLID 0xC000, and the
        // SM is told (no member yet).
        let g = sa.poll_mcast_groups().expect("groups changed");
        assert_eq!(
            (g.len(), g[0].mlid, g[0].members.len()),
            (1, Lid(0xC000), 0)
        );
        assert!(sa.poll_mcast_groups().is_none(), "once per change");
        // GetTable: the group as OpenSM shows it (saquery -g).
        let (st, all) = mc_ask(&mut sa, Method::GET_TABLE, 0, &Mc::default(), 2);
        assert_eq!((st, all.len()), (Status::OK, 1));
        let b = all[0];
        assert_eq!(
            (b.mgid, b.q_key, b.mlid, b.p_key, b.hop_limit, b.scope),
            (bcast, QKey(0x0B1B), Lid(0xC000), PKey(0xffff), 0, 2)
        );
        assert_eq!(
            (b.mtu_selector, b.mtu, b.rate_selector, b.rate),
            (2, 4, 2, 3)
        );
        assert_eq!((b.packet_life_selector, b.packet_life), (2, 18));
        // IPoIB's broadcast join: MGID|PortGID|JoinState only.
        let me = ca_gid(&sa, 1);
        let j = Mc {
            mgid: bcast,
            port_gid: me,
            join_state: join::FULL,
            ..Mc::default()
        };
        let (st, r) = mc_ask(&mut sa, Method::SET, JOIN_COMP_MASK, &j, 2);
        assert_eq!(
            (st, r[0].mlid, r[0].port_gid, r[0].join_state),
            (Status::OK, Lid(0xC000), me, 1)
        );
        let g = sa.poll_mcast_groups().unwrap();
        assert_eq!(g[0].members.len(), 1);
        // A create from the other CA gets the next MLID; a Get by MGID finds it.
        let other = ca_gid(&sa, 2);
        let mut mgid = [0u8; 16];
        mgid[..4].copy_from_slice(&[0xff, 0x15, 0x12, 0x34]);
        let c = Mc {
            mgid: Gid(mgid),
            port_gid: other,
            q_key: QKey(0x1234),
            p_key: PKey(0xffff),
            join_state: join::FULL,
            ..Mc::default()
        };
        let (st, r) = mc_ask(&mut sa, Method::SET, CREATE_COMP_MASK, &c, 3);
        assert_eq!((st, r[0].mlid), (Status::OK, Lid(0xC001)));
        assert_eq!(sa.poll_mcast_groups().unwrap().len(), 2);
        let (st, r) = mc_ask(&mut sa, Method::GET, mc::MGID, &c, 2);
        assert_eq!(
            (st, r[0].mlid, r[0].port_gid),
            (Status::OK, Lid(0xC001), Gid::default())
        );
        // Without the create components: insufficient.
        let mut c2 = c;
        c2.mgid.0[15] = 9;
        let (st, _) = mc_ask(&mut sa, Method::SET, JOIN_COMP_MASK, &c2, 3);
        assert_eq!(st, ibmad::sa::status::REQ_INSUFFICIENT_COMPONENTS);
        // A re-sweep's snapshot keeps the groups and their MLIDs.
        assert!(sa.set_snapshot(mc_snapshot()));
        let g = sa.poll_mcast_groups();
        assert!(g.is_none(), "nothing changed: {g:?}");
        let (_, all) = mc_ask(&mut sa, Method::GET_TABLE, 0, &Mc::default(), 2);
        let mlids: Vec<Lid> = all.iter().map(|r| r.mlid).collect();
        assert_eq!(mlids, [Lid(0xC000), Lid(0xC001)]);
        // Leave: the group goes (trap 67), the SM is told, a Get finds nothing.
        let (st, r) = mc_ask(&mut sa, Method::DELETE, JOIN_COMP_MASK, &c, 3);
        assert_eq!((st, r[0].join_state), (Status::OK, 0));
        assert_eq!(sa.poll_mcast_groups().unwrap().len(), 1);
        let (st, _) = mc_ask(&mut sa, Method::GET, mc::MGID, &c, 2);
        assert_eq!(st, ibmad::sa::status::NO_RECORDS);
        // Another method: not supported.
        let (st, _) = mc_ask(&mut sa, Method::GET_MULTI, 0, &c, 2);
        assert_eq!(st, Status::METHOD_ATTR_NOT_SUPPORTED);
    }
}

/// `drop_event_subscriptions`: an SM coming out of standby drops every InformInfo and
/// ServiceRecord (OpenSM `state_mgr_sa_clean`); without the option both stay (only the
/// multicast memberships go).
#[test]
fn drop_event_subscriptions_clears_services_and_subscriptions_after_standby() {
    use ibmad::sa_rec::inform::{InformInfo, ALL_16, ALL_24};
    use ibmad::sa_rec::service::{comp as svc, ServiceRecord};
    use ibmad::zerocopy::{FromZeros, IntoBytes};
    for drop in [false, true] {
        let mut sa = serving_sa(SaConfig {
            drop_event_subscriptions: drop,
            ..SaConfig::default()
        });
        let snap = sa.snapshot().unwrap().clone();
        let (node, port) = snap.subnet.end_ports().next().unwrap();
        let p = snap.subnet.port(node, port).unwrap();
        let (lid, guid) = (p.lid, p.guid);
        let from = MadMeta {
            qp: 1,
            qkey: QKey::GSI,
            ..MadMeta::gmp(PortNum(1), lid, Lid(1))
        };
        let mut ii = InformInfo::new_zeroed();
        ii.lid_range_begin.set(ALL_16);
        ii.is_generic = 1;
        ii.subscribe = 1;
        ii.trap_type.set(ALL_16);
        ii.trap_num.set(64);
        ii.set_producer_type(ALL_24);
        let set = req_with(Method::SET, SaAttrId::INFORM_INFO, 0, 0, ii.as_bytes());
        sa.handle_mad(Time::ZERO, &from, &set);
        let mut sr = ServiceRecord::new_zeroed();
        sr.service_id.set(0x1234);
        sr.service_gid = ibmad::Gid::new(snap.facts.subnet_prefix, guid).0;
        sr.service_name[..4].copy_from_slice(b"test");
        let mask = svc::SERVICE_ID | svc::SERVICE_GID | svc::SERVICE_NAME;
        let set = req_with(
            Method::SET,
            SaAttrId::SERVICE_RECORD,
            0,
            mask,
            sr.as_bytes(),
        );
        sa.handle_mad(Time::ZERO, &from, &set);
        while let Some(r) = sa.poll_transmit(Time::ZERO) {
            assert_eq!(headers(&r).header.status, Status::OK);
        }
        assert_eq!(
            (sa.state().informs.len(), sa.state().services.len()),
            (1, 1)
        );
        for master in [false, true] {
            sa.set_serving(Serving { master, up: true });
        }
        let left = (sa.state().informs.len(), sa.state().services.len());
        assert_eq!(left, if drop { (0, 0) } else { (1, 1) }, "drop {drop}");
    }
}

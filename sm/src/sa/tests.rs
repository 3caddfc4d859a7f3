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

fn records(r: &SaReply) -> Vec<NodeRecordRepr> {
    let a = SaRepr::parse_bytes(&r.mad).unwrap();
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
        for attr in [
            SaAttrId::MC_MEMBER_RECORD,
            SaAttrId::SERVICE_RECORD,
            SaAttrId::TRACE_RECORD,
        ] {
            let r = ask(&mut sa, &req(m, attr)).unwrap();
            let a = SaRepr::parse_bytes(&r.mad).unwrap();
            assert_eq!(a.header.method, resp, "{m}");
            assert_eq!(a.header.status, Status::METHOD_ATTR_NOT_SUPPORTED);
            assert_eq!(a.header.tid, 0x55);
            assert_eq!((a.sm_key, a.attr_offset, a.comp_mask), (0, 0, 0x3));
            // Back to the requester (LID 4) from the SA's LID (1), to its QP.
            assert_eq!((r.meta.dlid, r.meta.slid, r.meta.qp), (Lid(4), Lid(1), 1));
        }
    }
    // NodeRecord is read-only.
    for m in [Method::SET, Method::DELETE] {
        let r = ask(&mut sa, &req(m, SaAttrId::NODE_RECORD)).unwrap();
        assert_eq!(&r.mad[4..6], &[0x00, 0x0C]);
    }
    assert_eq!(sa.stats().answered, 20);
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
fn node_record_table_on_an_rmpp_transport() {
    let mut sa = serving_sa(SaConfig {
        transport_rmpp: true,
        max_mad_len: 8192,
        ..SaConfig::default()
    });
    let r = ask(
        &mut sa,
        &req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, 0, 0, &[]),
    )
    .unwrap();
    let a = SaRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!(a.header.method, Method::GET_TABLE_RESP);
    assert_eq!(a.header.status, Status::OK);
    assert_eq!(a.attr_offset, 14);
    assert_eq!(r.mad.len(), SA_DATA_OFFSET + 3 * 112);
    assert_eq!(a.rmpp, ibmad::RmppRepr::single(20 + 3 * 112));
    let recs = records(&r);
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
fn node_record_table_without_rmpp_is_one_mad() {
    let mut sa = serving_sa(SaConfig::default());
    let r = ask(
        &mut sa,
        &req_with(Method::GET_TABLE, SaAttrId::NODE_RECORD, 0, 0, &[]),
    )
    .unwrap();
    assert_eq!(r.mad.len(), MAD_LEN);
    assert_eq!(records(&r).len(), 1);
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

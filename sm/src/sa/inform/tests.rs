use std::sync::Arc;

use super::*;
use crate::lid::{assign_lids, Guid2Lid, LidConfig};
use crate::sa::{Sa, SaConfig, Serving};
use crate::subnet::{Node, Subnet};
use ibmad::sa_rec::inform::comp;
use ibmad::zerocopy::FromBytes;
use ibmad::{DrPath, NodeType, PortNum, SaAttrId, Status};

const PREFIX: u64 = 0xfe80_0000_0000_0000;

/// A switch (GUID 0x100, 8 ports) with CAs 0x200·i (port GUID 0x200·i + 1) on ports `cas`.
fn star(cas: &[u8]) -> Subnet {
    let mut s = Subnet::new();
    let sw = s.add_active_node(Node {
        dr_path: DrPath::local(),
        ..Node::new(Guid(0x100), NodeType::SWITCH, 8, "sw")
    });
    for &i in cas {
        let ca = s.add_active_node(Node::new(
            Guid(0x200 * u64::from(i)),
            NodeType::CA,
            1,
            &format!("ca{i}"),
        ));
        s.connect_active((sw, PortNum(i)), (ca, PortNum(1)));
    }
    // The same LIDs in every snapshot: switch 1, CA i at LID 1 + i.
    let mut g2l = Guid2Lid::new();
    g2l.set(Guid(0x100), Lid(1), Lid(1));
    for &i in cas {
        let l = Lid(1 + u16::from(i));
        g2l.set(Guid(0x200 * u64::from(i) + 1), l, l);
    }
    assign_lids(&mut s, &LidConfig::default(), &g2l).unwrap();
    s
}

fn snap_of(s: &Subnet, pkeys: &[(u64, &[u16])]) -> Arc<SaSnapshot> {
    let mut snap = crate::sa::snapshot::tests::snap(s);
    snap.facts.subnet_prefix = PREFIX;
    snap.facts.sm_lid = Lid(1);
    for &(guid, keys) in pkeys {
        let port = snap.by_port_guid(Guid(guid)).unwrap();
        snap.pkeys
            .insert(port, keys.iter().map(|&k| PKey(k)).collect());
    }
    Arc::new(snap)
}

fn lid(snap: &SaSnapshot, guid: u64) -> Lid {
    let (n, p) = snap.by_port_guid(Guid(guid)).unwrap();
    snap.subnet.lid_of(n, p)
}

fn sa_with(snap: Arc<SaSnapshot>) -> Sa {
    let mut sa = Sa::with_config(SaConfig::default());
    sa.set_snapshot(snap);
    sa.set_serving(Serving {
        master: true,
        up: true,
    });
    sa
}

/// An InformInfo for generic trap `trap` (0xFFFF: all) from any LID, any type and producer.
fn ii(trap: u16, subscribe: u8) -> InformInfo {
    let mut ii = InformInfo::new_zeroed();
    ii.lid_range_begin.set(ALL_16);
    ii.is_generic = 1;
    ii.subscribe = subscribe;
    ii.trap_type.set(ALL_16);
    ii.trap_num.set(trap);
    ii.qpn_resp_time.set(0x10); // QPN 0, RespTimeValue 16 (268 ms)
    ii.set_producer_type(ALL_24);
    ii
}

fn mad(method: Method, attr: SaAttrId, sm_key: u64, mask: u64, rec: &[u8]) -> [u8; MAD_LEN] {
    let r = SaRepr {
        header: gmp::Repr::request(MgmtClass::SUBN_ADM, method, attr.0, 0, 0x77),
        rmpp: RmppRepr::Inactive,
        sm_key,
        attr_offset: 0,
        comp_mask: mask,
    };
    let mut m = r.to_mad();
    m[SA_DATA_OFFSET..SA_DATA_OFFSET + rec.len()].copy_from_slice(rec);
    m
}

fn from(slid: Lid) -> MadMeta {
    MadMeta::gmp(PortNum(1), slid, Lid(1))
}

fn ask(sa: &mut Sa, who: Lid, m: &[u8; MAD_LEN]) -> SaReply {
    sa.handle_mad(Time::ZERO, &from(who), m);
    sa.poll_transmit(Time::ZERO).unwrap()
}

fn status(r: &SaReply) -> Status {
    SaRepr::parse_bytes(&r.mad).unwrap().header.status
}

fn set(sa: &mut Sa, who: Lid, ii: &InformInfo, sm_key: u64) -> SaReply {
    ask(
        sa,
        who,
        &mad(Method::SET, SaAttrId::INFORM_INFO, sm_key, 0, ii.as_bytes()),
    )
}

fn table(
    sa: &mut Sa,
    who: Lid,
    sm_key: u64,
    mask: u64,
    q: &InformInfoRecord,
) -> Vec<InformInfoRecord> {
    let r = ask(
        sa,
        who,
        &mad(
            Method::GET_TABLE,
            SaAttrId::INFORM_INFO_RECORD,
            sm_key,
            mask,
            q.as_bytes(),
        ),
    );
    assert_eq!(status(&r), Status::OK);
    let h = SaRepr::parse_bytes(&r.mad).unwrap();
    let n = match h.rmpp {
        RmppRepr::Data { payload_len, .. } => (payload_len as usize - 20) / 64,
        _ => 0,
    };
    (0..n)
        .map(|i| {
            let off = SA_DATA_OFFSET + 64 * i;
            InformInfoRecord::read_from_bytes(&r.mad[off..off + 60]).unwrap()
        })
        .collect()
}

fn notice_of(r: &SaReply) -> SaNotice {
    SaNotice::read_from_bytes(&r.mad[SA_DATA_OFFSET..SA_DATA_OFFSET + 80]).unwrap()
}

#[test]
fn subscribe_list_unsubscribe() {
    let snap = snap_of(&star(&[1, 2]), &[]);
    let (a, b) = (lid(&snap, 0x201), lid(&snap, 0x401));
    let mut sa = sa_with(snap);
    let sub = ii(64, 1);
    let r = set(&mut sa, a, &sub, 0);
    let h = SaRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!(
        (h.header.method, h.header.status),
        (Method::GET_RESP, Status::OK)
    );
    // o13-12.1.1: the answer is a copy of the request's InformInfo.
    assert_eq!(&r.mad[SA_DATA_OFFSET..SA_DATA_OFFSET + 36], sub.as_bytes());
    // Twice is one subscription; another trap is another.
    set(&mut sa, a, &sub, 0);
    set(&mut sa, b, &ii(65, 1), 0);
    assert_eq!(sa.state().informs.len(), 2);

    let all = table(&mut sa, a, 0, 0, &InformInfoRecord::new_zeroed());
    assert_eq!(all.len(), 2);
    // The newest first (as OpenSM lists them); QPN hidden from an untrusted requester.
    assert_eq!(all[0].inform_info.trap_num.get(), 65);
    assert_eq!(guid_of_gid(&all[1].subscriber_gid), Guid(0x201));
    assert_eq!(&all[1].subscriber_gid[..8], &PREFIX.to_be_bytes());
    assert!(all.iter().all(|r| r.inform_info.qpn() == 0));
    let trusted = table(&mut sa, a, 1, 0, &InformInfoRecord::new_zeroed());
    assert!(trusted.iter().all(|r| r.inform_info.qpn() == 1));
    // By SubscriberGID.
    let mut q = InformInfoRecord::new_zeroed();
    q.subscriber_gid = Gid::new(PREFIX, Guid(0x401)).0;
    let one = table(&mut sa, a, 0, comp::SUBSCRIBER_GID, &q);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].inform_info.trap_num.get(), 65);
    // A Get of two records: too many.
    let r = ask(
        &mut sa,
        a,
        &mad(Method::GET, SaAttrId::INFORM_INFO_RECORD, 0, 0, &[]),
    );
    assert_eq!(status(&r), sa_status::TOO_MANY_RECORDS);

    // Unsubscribe: only from the same address, only what exists.
    let r = set(&mut sa, b, &ii(64, 0), 0);
    assert_eq!(status(&r), sa_status::REQ_INVALID);
    let mut un = ii(64, 0);
    un.set_qpn(1); // the stored QPN is the requester's QP
    assert_eq!(status(&set(&mut sa, a, &un, 0)), Status::OK);
    assert_eq!(sa.state().informs.len(), 1);
    assert_eq!(status(&set(&mut sa, a, &un, 0)), sa_status::REQ_INVALID);

    // Bad requests.
    assert_eq!(
        status(&set(&mut sa, a, &ii(64, 2), 0)),
        sa_status::REQ_INVALID
    );
    assert_eq!(
        status(&set(&mut sa, a, &ii(256, 1), 0)),
        sa_status::REQ_INVALID
    );
    assert_eq!(status(&set(&mut sa, a, &ii(256, 1), 1)), Status::OK);
    assert_eq!(
        status(&set(&mut sa, Lid(0x99), &ii(64, 1), 0)),
        sa_status::REQ_INVALID
    );
    let r = ask(
        &mut sa,
        a,
        &mad(Method::GET, SaAttrId::INFORM_INFO, 0, 0, &[]),
    );
    assert_eq!(status(&r), Status::METHOD_ATTR_NOT_SUPPORTED);
    let r = ask(
        &mut sa,
        a,
        &mad(Method::SET, SaAttrId::INFORM_INFO_RECORD, 0, 0, &[]),
    );
    assert_eq!(status(&r), Status::METHOD_ATTR_NOT_SUPPORTED);
}

#[test]
fn partitions_limit_subscriptions_and_listing() {
    // 0x201 and 0x401 share nothing: 0x401 is in 0x8010 only.
    let snap = snap_of(&star(&[1, 2]), &[(0x401, &[0x8010])]);
    let (a, b) = (lid(&snap, 0x201), lid(&snap, 0x401));
    let mut sa = sa_with(snap.clone());
    // o13-14.1.1: a subscription naming a port the requester can not reach is refused.
    let mut by_gid = ii(64, 1);
    by_gid.gid = Gid::new(PREFIX, Guid(0x401)).0;
    assert_eq!(status(&set(&mut sa, a, &by_gid, 0)), sa_status::REQ_INVALID);
    let mut by_lid = ii(64, 1);
    by_lid.lid_range_begin.set(a.0);
    by_lid.lid_range_end.set(b.0);
    assert_eq!(status(&set(&mut sa, a, &by_lid, 0)), sa_status::REQ_INVALID);
    by_lid.lid_range_end.set(0); // just itself
    assert_eq!(status(&set(&mut sa, a, &by_lid, 0)), Status::OK);
    // b does not see a's subscription.
    assert!(table(&mut sa, b, 0, 0, &InformInfoRecord::new_zeroed()).is_empty());
    assert_eq!(
        table(&mut sa, a, 0, 0, &InformInfoRecord::new_zeroed()).len(),
        1
    );
}

/// Sends every Report queued and returns them.
fn drain(sa: &mut Sa, now: Time) -> Vec<SaReply> {
    std::iter::from_fn(|| sa.poll_transmit(now)).collect()
}

fn report_resp(tid: u64) -> [u8; MAD_LEN] {
    let mut r = SaRepr {
        header: gmp::Repr::request(MgmtClass::SUBN_ADM, Method::REPORT, 2, 0, tid),
        rmpp: RmppRepr::Inactive,
        sm_key: 0,
        attr_offset: 0,
        comp_mask: 0,
    };
    r.header.method = Method::REPORT_RESP;
    r.to_mad()
}

#[test]
fn traps_64_65_reported_until_answered_then_the_subscriber_dropped() {
    let two = star(&[1, 2]);
    let s1 = snap_of(&two, &[]);
    let (a, b) = (lid(&s1, 0x201), lid(&s1, 0x401));
    let mut sa = sa_with(s1);
    set(&mut sa, a, &ii(64, 1), 0);
    set(&mut sa, b, &ii(65, 1), 0);
    assert_eq!(sa.poll_timeout(), None);

    // A CA joins: trap 64 to a only.
    let s2 = snap_of(&star(&[1, 2, 3]), &[]);
    assert!(sa.set_snapshot(s2));
    let t0 = Time::from_millis(1000);
    assert_eq!(
        sa.poll_timeout(),
        Some(Time::ZERO),
        "a Report waits to be sent"
    );
    let sent = drain(&mut sa, t0);
    assert_eq!(sent.len(), 1);
    let r = &sent[0];
    assert_eq!((r.meta.dlid, r.meta.qp), (a, 1));
    let h = SaRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!(h.header.method, Method::REPORT);
    assert_eq!(h.header.attr_id, SaAttrId::NOTICE.0);
    assert_eq!(h.header.tid, u64::from(REPORT_TID_BASE));
    let n = notice_of(r);
    assert_eq!(n.notice.is_generic(), 1);
    assert_eq!(n.notice.notice_type(), notice_type::SUBNET_MGMT);
    assert_eq!(n.notice.producer_type(), producer::CLASS_MANAGER);
    assert_eq!(
        (n.notice.trap_num.get(), n.notice.issuer_lid.get()),
        (64, 1)
    );
    assert_eq!(n.details_gid(), Gid::new(PREFIX, Guid(0x601)).0);
    assert_eq!(n.issuer_gid, Gid::new(PREFIX, Guid(0x100)).0);
    // Its timer: 4.096 µs × 2^16 + the SA's 200 ms.
    let due = t0 + Duration::from_nanos(4096 << 16) + Duration::from_millis(200);
    assert_eq!(sa.poll_timeout(), Some(due));
    // The ReportResp retires it: nothing more, whatever the time.
    sa.handle_mad(t0, &from(a), &report_resp(h.header.tid));
    assert_eq!(sa.poll_timeout(), None);
    assert_eq!(sa.state().informs.stats().acked, 1);

    // The CA leaves: trap 65 to b, which never answers.
    assert!(sa.set_snapshot(snap_of(&two, &[])));
    let sent = drain(&mut sa, t0);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].meta.dlid, b);
    let tid = SaRepr::parse_bytes(&sent[0].mad).unwrap().header.tid;
    assert_eq!(tid, u64::from(REPORT_TID_BASE) + 1);
    assert_eq!(notice_of(&sent[0]).notice.trap_num.get(), 65);
    let mut now;
    for resend in 1..=3 {
        now = sa.poll_timeout().unwrap();
        sa.handle_timeout(now);
        let again = drain(&mut sa, now);
        assert_eq!(again.len(), 1, "resend {resend}");
        assert_eq!(again[0].mad, sent[0].mad, "the same Report, the same TID");
    }
    now = sa.poll_timeout().unwrap();
    sa.handle_timeout(now);
    assert!(drain(&mut sa, now).is_empty());
    assert_eq!(sa.poll_timeout(), None);
    let left = table(&mut sa, a, 0, 0, &InformInfoRecord::new_zeroed());
    assert_eq!(left.len(), 1, "b's subscription dropped");
    assert_eq!(left[0].inform_info.trap_num.get(), 64);
    let st = sa.state().informs.stats();
    assert_eq!((st.sent, st.acked, st.timed_out), (5, 1, 1));
    // A late or unknown ReportResp changes nothing.
    sa.handle_mad(now, &from(b), &report_resp(tid));
    assert_eq!(sa.stats().dropped, 1);
}

#[test]
fn forwarded_traps_match_by_number_lid_and_partition() {
    let snap = snap_of(&star(&[1, 2]), &[]);
    let (a, b) = (lid(&snap, 0x201), lid(&snap, 0x401));
    let mut sa = sa_with(snap);
    set(&mut sa, a, &ii(128, 1), 0);
    let mut ranged = ii(ALL_16, 1);
    ranged.lid_range_begin.set(1);
    ranged.lid_range_end.set(1);
    set(&mut sa, b, &ranged, 0);
    let mut n = Notice::new_zeroed();
    n.set_is_generic(1);
    n.set_notice_type(notice_type::URGENT);
    n.set_producer_type(producer::SWITCH);
    n.trap_num.set(128);
    n.issuer_lid.set(1);
    sa.forward_trap(Lid(1), &n);
    let sent = drain(&mut sa, Time::ZERO);
    assert_eq!(sent.len(), 2);
    for r in &sent {
        let got = notice_of(r);
        assert_eq!(got.notice, n);
        assert_eq!(
            got.issuer_gid,
            Gid::new(PREFIX, Guid(0x100)).0,
            "the switch's GID"
        );
    }
    // 129–131 are the SM's own business; a trap from another LID misses the range.
    n.trap_num.set(129);
    sa.forward_trap(Lid(1), &n);
    assert!(drain(&mut sa, Time::ZERO).is_empty());
    n.trap_num.set(128);
    n.issuer_lid.set(a.0);
    sa.forward_trap(a, &n);
    assert_eq!(
        drain(&mut sa, Time::ZERO).len(),
        1,
        "only the trap-128 subscriber"
    );
    // o13-17.1.2: once b shares no partition with the source, its ranged subscription goes.
    sa.set_snapshot(snap_of(&star(&[1, 2]), &[(0x401, &[0x8010])]));
    n.issuer_lid.set(1);
    sa.forward_trap(Lid(1), &n);
    assert_eq!(drain(&mut sa, Time::ZERO).len(), 1);
    assert_eq!(sa.state().informs.len(), 1);
    // Not master: nothing is forwarded.
    sa.set_serving(Serving {
        master: false,
        up: true,
    });
    sa.forward_trap(Lid(1), &n);
    assert!(drain(&mut sa, Time::ZERO).is_empty());
}

#[test]
fn group_notices_go_to_members_of_the_group_partition() {
    let snap = snap_of(&star(&[1, 2]), &[(0x401, &[0x8010])]);
    let (a, b) = (lid(&snap, 0x201), lid(&snap, 0x401));
    let mut sa = sa_with(snap);
    set(&mut sa, a, &ii(66, 1), 0);
    set(&mut sa, b, &ii(66, 1), 0);
    let mgid = Gid([
        0xff, 0x12, 0x40, 0x1b, 0x80, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    ]);
    sa.report_mc_notice(&crate::sa::mcmember::McNotice {
        trap: 66,
        mgid,
        p_key: PKey(0x8010),
    });
    let sent = drain(&mut sa, Time::ZERO);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].meta.dlid, b);
    let n = notice_of(&sent[0]);
    assert_eq!((n.notice.trap_num.get(), n.details_gid()), (66, mgid.0));
}

#[test]
fn joins_and_leaves_through_the_sa_report_traps_66_and_67() {
    use crate::sa::mcmember::{CREATE_COMP_MASK, JOIN_COMP_MASK};
    use ibmad::sa_rec::mcmember::{join, Repr as Mc, RECORD_LEN};
    // Ports of MTUCap 2048: a group can be realised on them.
    let mut s = star(&[1, 2]);
    for port in &mut s.ports {
        if let Some(pi) = port.info.as_mut() {
            pi.set_mtu_cap(4);
        }
    }
    let snap = snap_of(&s, &[]);
    let (a, b) = (lid(&snap, 0x201), lid(&snap, 0x401));
    let mut sa = sa_with(snap);
    set(&mut sa, a, &ii(66, 1), 0);
    set(&mut sa, a, &ii(67, 1), 0);
    let mut mgid = [0u8; 16];
    mgid[..4].copy_from_slice(&[0xff, 0x15, 0x12, 0x34]);
    let rec = Mc {
        mgid: Gid(mgid),
        port_gid: Gid::new(PREFIX, Guid(0x401)),
        q_key: ibmad::QKey(0x1234),
        p_key: PKey(0xffff),
        join_state: join::FULL,
        ..Mc::default()
    };
    let mut bytes = [0u8; RECORD_LEN];
    assert!(rec.emit(&mut bytes));
    let mc = |method, mask| mad(method, SaAttrId::MC_MEMBER_RECORD, 0, mask, &bytes);
    // b creates the group: trap 66 to a, with the MGID in the details.
    assert_eq!(
        status(&ask(&mut sa, b, &mc(Method::SET, CREATE_COMP_MASK))),
        Status::OK
    );
    let sent = drain(&mut sa, Time::ZERO);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].meta.dlid, a);
    let n = notice_of(&sent[0]);
    assert_eq!((n.notice.trap_num.get(), n.details_gid()), (66, mgid));
    // b leaves, the group goes: trap 67.
    assert_eq!(
        status(&ask(&mut sa, b, &mc(Method::DELETE, JOIN_COMP_MASK))),
        Status::OK
    );
    let sent = drain(&mut sa, Time::ZERO);
    let traps: Vec<u16> = sent
        .iter()
        .map(|r| notice_of(r).notice.trap_num.get())
        .collect();
    assert!(traps.contains(&67), "{traps:?}");
}

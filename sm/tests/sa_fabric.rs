//! The SA end to end on the simulated fabric: the SM (with its SA on the same port) brings a
//! fat tree up and a client on another CA talks to the SA through the simulator, which does no
//! RMPP.
//!
//! Event forwarding: the client subscribes with SubnAdmSet(InformInfo) and is
//! told by SubnAdmReport(Notice) that a CA came into service (trap 64) when that CA's cable is
//! plugged in, and that it went out of service (trap 65) when it is pulled: the switch's trap
//! 128 makes the SM sweep, and the sweep's snapshot tells the SA which end ports changed. A
//! Report the client does not answer is resent with the same TID; the ReportResp stops it.
//!
//! RMPP: a GetTable answer longer than one MAD reaches the client whole — the SA segments it,
//! sends by the client's window, retransmits a lost segment after the ACK timeout, and
//! aborts a transfer the client never acknowledges.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::ControlFlow;
use std::time::Duration;

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, PortRef, Topology};
use ibmad::rmpp::transfer::{ack_for, Receiver, RecvOutcome};
use ibmad::rmpp::{RmppHeader, RmppType};
use ibmad::sa::SA_DATA_OFFSET;
use ibmad::sa_rec::inform::{InformInfo, SaNotice, ALL_16, ALL_24};
use ibmad::sa_rec::mcmember::{join, Repr as McMemberRepr};
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
use ibmad::{
    gmp, Gid, Lid, MadMeta, Method, MgmtClass, NodeType, PKey, PortNum, QKey, RmppRepr, SaAttrId,
    SaRepr, Time,
};
use sm::drive::Agents;
use sm::sa::{Sa, SaConfig};
use sm::{Sm, SmConfig};

struct Bed {
    f: Fabric,
    h: SmHandle,
    sm: Sm,
    sa: Sa,
    client: SmHandle,
    /// What reached the client, in order.
    inbox: Vec<(MadMeta, [u8; 256])>,
    /// Answer Reports with ReportResp.
    ack: bool,
    /// How the client takes RMPP DATA: `Some(window)` acknowledges, `None` ignores.
    rmpp_window: Option<u32>,
    /// Segment numbers the client loses the first time they arrive.
    lose: Vec<u32>,
    rx: Option<Receiver>,
    /// Messages the client reassembled.
    messages: Vec<Vec<u8>>,
}

impl Bed {
    /// One turn of everything at the fabric's time; false once nothing is left to do before
    /// `until`.
    fn turn(&mut self, until: Time) -> bool {
        let mut buf = [0u8; 256];
        let now = self.f.now();
        let mut agents = Agents::sm(&mut self.sm).with_sa(&mut self.sa);
        let _ = sm::drive::turn(
            &mut agents,
            &mut self.f.sm_port(self.h),
            now,
            &mut |_, _| ControlFlow::Continue(()),
        )
        .unwrap();
        while let Ok(Some((meta, _))) = self.f.sm_recv(self.client, &mut buf) {
            self.client_rmpp(&meta, &buf);
            if self.ack && buf[3] == Method::REPORT.0 {
                let mut resp = buf;
                resp[3] = Method::REPORT_RESP.0;
                self.f.sm_send(self.client, &meta.reply(), &resp).unwrap();
            }
            self.inbox.push((meta, buf));
        }
        if self.f.sm_pending(self.client) > 0 {
            return true;
        }
        let agents = Agents::sm(&mut self.sm).with_sa(&mut self.sa);
        sm::drive::advance(&agents, &mut self.f.sm_port(self.h), until)
    }

    /// The client's RMPP receiver: DATA segments reassembled and acknowledged.
    fn client_rmpp(&mut self, meta: &MadMeta, m: &[u8; 256]) {
        let Some(h) = RmppHeader::ref_from_bytes(&m[24..36])
            .ok()
            .filter(|h| h.is_active())
        else {
            return;
        };
        if h.kind() != RmppType::DATA {
            return;
        }
        let seg = h.data1.get();
        if let Some(i) = self.lose.iter().position(|&l| l == seg) {
            self.lose.remove(i);
            return;
        }
        let Some(window) = self.rmpp_window else {
            return;
        };
        let out = match self.rx.as_mut() {
            Some(rx) if seg != 1 => rx.handle_data(m).unwrap(),
            _ => {
                let (rx, out) = Receiver::start(m, SA_DATA_OFFSET, window).unwrap();
                self.rx = Some(rx);
                out
            }
        };
        let first = self.rx.as_ref().unwrap().first_segment();
        let ack = match out {
            RecvOutcome::Quiet => return,
            RecvOutcome::Ack { seg, newwin } => ack_for(&first, SA_DATA_OFFSET, seg, newwin),
            RecvOutcome::Complete {
                seg,
                newwin,
                message,
            } => {
                self.messages.push(message);
                self.rx = None;
                ack_for(&first, SA_DATA_OFFSET, seg, newwin)
            }
        };
        self.f.sm_send(self.client, &meta.reply(), &ack).unwrap();
    }

    fn run_for(&mut self, d: Duration) {
        let until = self.f.now() + d;
        for _ in 0..2_000_000 {
            if !self.turn(until) {
                self.f.run_until(until.max(self.f.now()));
                return;
            }
        }
        panic!("the fabric did not settle");
    }

    /// Reports (method 0x06) the client received, as (TID, notice).
    fn reports(&self) -> Vec<(u64, SaNotice)> {
        self.inbox
            .iter()
            .filter(|(_, m)| m[1] == MgmtClass::SUBN_ADM.0 && m[3] == Method::REPORT.0)
            .map(|(_, m)| {
                let h = SaRepr::parse_bytes(&m[..]).unwrap();
                assert_eq!(h.header.attr_id, SaAttrId::NOTICE.0);
                let n = SaNotice::read_from_bytes(&m[SA_DATA_OFFSET..SA_DATA_OFFSET + 80]).unwrap();
                (h.header.tid, n)
            })
            .collect()
    }
}

fn port_guid(topo: &Topology, n: NodeId) -> ibmad::Guid {
    topo.port(PortRef {
        node: n,
        port: PortNum(1),
    })
    .unwrap()
    .guid()
}

/// A fat tree up, the SM at the first CA, the client at the second, CA `late` (the last one)
/// unplugged.
fn bring_up() -> (Bed, Topology, NodeId) {
    bring_up_with(SaConfig::default())
}

/// [`bring_up`] with the SA configured as `sa`.
fn bring_up_with(sa: SaConfig) -> (Bed, Topology, NodeId) {
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
    let cas: Vec<NodeId> = topo.nodes_of_type(NodeType::CA).collect();
    assert!(cas.len() >= 3);
    let late = *cas.last().unwrap();
    f.set_link(late, PortNum(1), false).unwrap();
    let h = f.attach_sm(cas[0], PortNum(1)).unwrap().handle;
    assert!(f.register_class(h, MgmtClass::SUBN_ADM));
    let client = f.attach_client(cas[1], PortNum(1)).unwrap().handle;
    // A subscriber's agent takes Reports (requests of its class).
    assert!(f.register_class(client, MgmtClass::SUBN_ADM));
    let cfg = SmConfig {
        port: PortNum(1),
        sweep_interval: Duration::ZERO,
        ..SmConfig::default()
    };
    let mut b = Bed {
        f,
        h,
        sm: Sm::new(cfg).unwrap(),
        sa: Sa::with_config(sa),
        client,
        inbox: Vec::new(),
        ack: true,
        rmpp_window: Some(4),
        lose: Vec::new(),
        rx: None,
        messages: Vec::new(),
    };
    b.run_for(Duration::from_secs(60));
    assert!(b.sm.is_up(), "the subnet came up");
    (b, topo, late)
}

/// A SubnAdm request from the client to the SM's SA: `method` on `attr` with ComponentMask
/// `mask`, the record `rec` and TID `tid`.
fn sa_request(b: &mut Bed, method: Method, attr: SaAttrId, mask: u64, rec: &[u8], tid: u64) {
    let repr = SaRepr {
        header: gmp::Repr::request(MgmtClass::SUBN_ADM, method, attr.0, 0, tid),
        rmpp: RmppRepr::Inactive,
        sm_key: 0,
        attr_offset: 0,
        comp_mask: mask,
    };
    let mut m = repr.to_mad();
    m[SA_DATA_OFFSET..SA_DATA_OFFSET + rec.len()].copy_from_slice(rec);
    let meta = MadMeta::gmp(PortNum(1), Lid(0), b.sm.sm_lid());
    b.f.sm_send(b.client, &meta, &m).unwrap();
}

/// The client subscribes to generic trap `trap` from any issuer (RespTimeValue 18: about
/// 1 s), TID `tid`.
fn subscribe(b: &mut Bed, trap: u16, tid: u64) {
    let mut ii = InformInfo::new_zeroed();
    ii.lid_range_begin.set(ALL_16);
    ii.is_generic = 1;
    ii.subscribe = 1;
    ii.trap_type.set(ALL_16);
    ii.trap_num.set(trap);
    ii.qpn_resp_time.set(0x12);
    ii.set_producer_type(ALL_24);
    sa_request(b, Method::SET, SaAttrId::INFORM_INFO, 0, ii.as_bytes(), tid);
}

#[test]
fn a_subscriber_is_told_when_a_ca_joins_and_leaves() {
    let (mut b, topo, late) = bring_up();
    let sm_lid = b.sm.sm_lid();

    // Subscribe to traps 64 and 65 (generic, any issuer).
    for trap in [64u16, 65] {
        subscribe(&mut b, trap, 0x1000 + u64::from(trap));
    }
    b.run_for(Duration::from_secs(1));
    let answers: Vec<_> = b
        .inbox
        .iter()
        .filter(|(_, m)| m[3] == Method::GET_RESP.0)
        .map(|(_, m)| SaRepr::parse_bytes(&m[..]).unwrap().header)
        .collect();
    assert_eq!(answers.len(), 2, "both subscriptions answered");
    assert!(answers.iter().all(|h| h.status == ibmad::Status::OK));
    assert_eq!(b.sa.state().informs.len(), 2);
    assert!(b.reports().is_empty());

    // The late CA is plugged in: trap 128 → sweep → trap 64 about it.
    b.f.set_link(late, PortNum(1), true).unwrap();
    b.run_for(Duration::from_secs(30));
    let prefix = 0xfe80_0000_0000_0000;
    let joined = Gid::new(prefix, port_guid(&topo, late)).0;
    let reps = b.reports();
    assert_eq!(reps.len(), 1, "one Report: {reps:?}");
    let (tid, n) = reps[0];
    assert!((0x6000_0000..0x7000_0000).contains(&tid), "{tid:#x}");
    assert_eq!(n.notice.trap_num.get(), 64);
    assert_eq!(n.details_gid(), joined);
    assert_eq!(n.notice.issuer_lid.get(), sm_lid.0);
    // Answered: not resent.
    b.run_for(Duration::from_secs(10));
    assert_eq!(b.reports().len(), 1);
    assert_eq!(b.sa.state().informs.stats().acked, 1);

    // Pulled again, and this time the client does not answer: the Report comes again with
    // the same TID, then the subscription is dropped.
    b.ack = false;
    b.f.set_link(late, PortNum(1), false).unwrap();
    b.run_for(Duration::from_secs(60));
    let reps = b.reports();
    let gone: Vec<_> = reps[1..].to_vec();
    assert!(!gone.is_empty());
    assert!(gone.iter().all(|(t, n)| *t == gone[0].0
        && n.notice.trap_num.get() == 65
        && n.details_gid() == joined));
    assert_eq!(gone.len(), 4, "sent once and resent 3 times");
    assert_eq!(
        b.sa.state().informs.len(),
        1,
        "the trap-65 subscription dropped"
    );
}

/// A GetTable(NodeRecord) from the client.
fn node_table(b: &mut Bed, tid: u64) {
    sa_request(b, Method::GET_TABLE, SaAttrId::NODE_RECORD, 0, &[], tid);
}

/// Node GUIDs of the NodeRecords in a reassembled GetTableResp.
fn node_guids(m: &[u8]) -> Vec<u64> {
    let h = SaRepr::parse_bytes(&m[..256]).unwrap();
    assert_eq!(h.header.method, Method::GET_TABLE_RESP);
    let size = h.record_len();
    assert_eq!(size, 112);
    assert_eq!((m.len() - SA_DATA_OFFSET) % size, 0, "whole records");
    m[SA_DATA_OFFSET..]
        .chunks(size)
        .map(|r| {
            ibmad::sa_rec::NodeRecordRepr::parse(r)
                .unwrap()
                .node_info
                .node_guid
                .0
        })
        .collect()
}

#[test]
fn a_table_longer_than_a_mad_arrives_whole() {
    let (mut b, topo, _) = bring_up();
    let nodes = b.sm.subnet().nodes.len();
    assert!(
        nodes * 112 > 200,
        "{nodes} NodeRecords need several segments"
    );
    // Window 4, and segment 3 lost once: the SA resends after its ACK timeout.
    b.lose = vec![3];
    node_table(&mut b, 0x51);
    b.run_for(Duration::from_secs(5));
    assert_eq!(b.messages.len(), 1, "reassembled");
    let mut got = node_guids(&b.messages[0]);
    assert_eq!(got.len(), nodes);
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), nodes, "every node once");
    let want: std::collections::BTreeSet<u64> =
        b.sm.subnet().nodes.iter().map(|n| n.guid.0).collect();
    assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    assert!(topo.nodes_of_type(NodeType::SWITCH).count() > 0);
    let st = b.sa.state().transfers.stats();
    assert_eq!((st.started, st.completed, st.aborted), (1, 1, 0));
    let segs = nodes.saturating_mul(112).div_ceil(200) as u64;
    assert!(
        st.segments > segs,
        "a retransmission: {} of {segs}",
        st.segments
    );
    assert!(b.sa.state().transfers.is_empty());

    // A client that never acknowledges: segment 1 four times (sent, 3 retries), then ABORT.
    b.rmpp_window = None;
    b.inbox.clear();
    node_table(&mut b, 0x52);
    b.run_for(Duration::from_secs(5));
    let kinds: Vec<(u32, u8)> = b
        .inbox
        .iter()
        .filter_map(|(_, m)| {
            let h = RmppHeader::ref_from_bytes(&m[24..36]).ok()?;
            h.is_active().then(|| (h.data1.get(), h.rmpp_type))
        })
        .collect();
    let data1 = (1, RmppType::DATA.0);
    assert_eq!(
        kinds,
        vec![data1, data1, data1, data1, (0, RmppType::ABORT.0)]
    );
    assert!(b.sa.state().transfers.is_empty());
    assert_eq!(b.sa.state().transfers.stats().aborted, 1);
}

/// The client creates, for `port`'s GID (its own or, as a proxy, another CA's), the IPv6
/// solicited-node group of that port's last 24 GUID bits, as an IPoIB driver does for its
/// link-local address; returns the MLID the SA answered with.
fn join_snm(b: &mut Bed, topo: &Topology, port: NodeId, tid: u64) -> Lid {
    let prefix = 0xfe80_0000_0000_0000;
    let guid = port_guid(topo, port);
    let mut mgid = [0u8; 16];
    mgid[..4].copy_from_slice(&[0xff, 0x12, 0x60, 0x1b]);
    mgid[4..6].copy_from_slice(&[0xff, 0xff]);
    mgid[11] = 1;
    mgid[12] = 0xff;
    mgid[13..].copy_from_slice(&guid.0.to_be_bytes()[5..]);
    let rec = McMemberRepr {
        mgid: Gid(mgid),
        port_gid: Gid::new(prefix, guid),
        q_key: QKey(0x0B1B),
        p_key: PKey(0xffff),
        join_state: join::FULL,
        ..McMemberRepr::default()
    };
    let mut buf = [0u8; 200];
    assert!(rec.emit(&mut buf));
    let mask = sm::sa::mcmember::CREATE_COMP_MASK;
    sa_request(b, Method::SET, SaAttrId::MC_MEMBER_RECORD, mask, &buf, tid);
    b.run_for(Duration::from_secs(2));
    let (_, answer) = b
        .inbox
        .iter()
        .find(|(_, m)| {
            let h = SaRepr::parse_bytes(&m[..]).unwrap().header;
            h.tid == tid && h.method == Method::GET_RESP
        })
        .expect("the SA answered the join");
    let h = SaRepr::parse_bytes(&answer[..]).unwrap().header;
    assert_eq!(h.status, ibmad::Status::OK, "join {tid:#x}");
    McMemberRepr::parse(&answer[SA_DATA_OFFSET..]).unwrap().mlid
}

/// `consolidate_ipv6_snm_req` end to end: two CAs' IPv6 solicited-node groups, joined over
/// the SA, get one MLID, and the SM programs that MLID's tree to both, so a neighbour
/// solicitation sent on it reaches the other CA. Without the option each group has its own
/// MLID and the packet reaches only the first group's member.
#[test]
fn consolidated_ipv6_solicited_node_groups_share_one_routed_mlid() {
    for consolidate in [false, true] {
        let (mut b, topo, _) = bring_up_with(SaConfig {
            consolidate_ipv6_snm: consolidate,
            ..SaConfig::default()
        });
        let cas: Vec<NodeId> = topo.nodes_of_type(NodeType::CA).collect();
        let (me, other) = (cas[1], cas[2]);
        let mine = join_snm(&mut b, &topo, me, 0x71);
        let theirs = join_snm(&mut b, &topo, other, 0x72);
        assert_eq!(mine == theirs, consolidate, "{mine:?} {theirs:?}");
        let snm = b.sa.state().mcast.groups();
        let snm = snm.filter(|g| sm::sa::mcmember::is_ipv6_snm(g.rec.mgid));
        assert_eq!(snm.count(), 2, "two groups for the SA either way");
        // The SM re-routes multicast with the new groups.
        b.run_for(Duration::from_secs(5));
        let d = b.f.send_multicast(me, PortNum(1), mine).unwrap();
        let got: Vec<NodeId> = d.received.iter().map(|p| p.node).collect();
        assert!(!d.storm, "{d:?}");
        if consolidate {
            assert_eq!(d.no_entry, 0, "{d:?}");
        }
        assert_eq!(got.contains(&other), consolidate, "{got:?}");
        assert_eq!(got.len(), usize::from(consolidate), "{got:?}");
    }
}

/// `drop_event_subscriptions`: the client subscribes to traps 64 and 65, then its own cable
/// is pulled. With the option the sweep that finds its port gone drops both subscriptions;
/// without it both stay (no Report goes to a subscriber that is not in the subnet, so none
/// runs out of retries either).
#[test]
fn a_departed_subscribers_subscriptions_go_with_drop_event_subscriptions() {
    for drop in [false, true] {
        let (mut b, topo, _) = bring_up_with(SaConfig {
            drop_event_subscriptions: drop,
            ..SaConfig::default()
        });
        for trap in [64u16, 65] {
            subscribe(&mut b, trap, 0x2000 + u64::from(trap));
        }
        b.run_for(Duration::from_secs(1));
        assert_eq!(b.sa.state().informs.len(), 2);
        let me = topo.nodes_of_type(NodeType::CA).nth(1).unwrap();
        b.f.set_link(me, PortNum(1), false).unwrap();
        b.run_for(Duration::from_secs(60));
        let left = b.sa.state().informs.len();
        assert_eq!(left, if drop { 0 } else { 2 }, "drop {drop}");
    }
}

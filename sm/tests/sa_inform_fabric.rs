//! Event forwarding end to end on the simulated fabric: the SM (with its SA on the same port)
//! brings a fat tree up, a client on another CA subscribes with SubnAdmSet(InformInfo) and is
//! told by SubnAdmReport(Notice) that a CA came into service (trap 64) when that CA's cable is
//! plugged in, and that it went out of service (trap 65) when it is pulled: the switch's trap
//! 128 makes the SM sweep, and the sweep's snapshot tells the SA which end ports changed. A
//! Report the client does not answer is resent with the same TID; the ReportResp stops it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, PortRef, Topology};
use ibmad::sa::SA_DATA_OFFSET;
use ibmad::sa_rec::inform::{InformInfo, SaNotice, ALL_16, ALL_24};
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
use ibmad::{
    gmp, Gid, Lid, MadMeta, Method, MgmtClass, NodeType, PortNum, RmppRepr, SaAttrId, SaRepr, Time,
};
use sm::sa::{Sa, SaConfig, Serving};
use sm::{Event, Sm, SmConfig};

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
}

impl Bed {
    /// One turn of everything at the fabric's time; false once nothing is left to do before
    /// `until`.
    fn turn(&mut self, until: Time) -> bool {
        let mut buf = [0u8; 256];
        let now = self.f.now();
        while let Ok(Some((meta, len))) = self.f.sm_recv(self.h, &mut buf) {
            if buf[1] == MgmtClass::SUBN_ADM.0 {
                self.sa.handle_mad(now, &meta, &buf[..len]);
            } else {
                self.sm.handle_mad(now, &meta, &buf[..len]);
            }
        }
        if self.sm.poll_timeout().is_some_and(|t| t <= now) {
            self.sm.handle_timeout(now);
        }
        while let Some(tx) = self.sm.poll_transmit(now, &mut buf) {
            self.f.sm_send(self.h, &tx.meta, &buf[..tx.len]).unwrap();
        }
        while let Some(ev) = self.sm.poll_event() {
            if let Event::TrapReceived {
                ignored: false,
                source,
                notice,
                ..
            } = ev
            {
                self.sa.forward_trap(source, &notice);
            }
        }
        if let Some(s) = self.sm.sa_snapshot() {
            self.sa.set_snapshot(s.clone());
        }
        self.sa.set_serving(Serving {
            master: self.sm.role() == sm::Role::Master,
            up: self.sm.is_up(),
        });
        if self.sa.poll_timeout().is_some_and(|t| t <= now) {
            self.sa.handle_timeout(now);
        }
        while let Some(r) = self.sa.poll_transmit(now) {
            self.f.sm_send(self.h, &r.meta, &r.mad).unwrap();
        }
        while let Ok(Some((meta, _))) = self.f.sm_recv(self.client, &mut buf) {
            if self.ack && buf[3] == Method::REPORT.0 {
                let mut resp = buf;
                resp[3] = Method::REPORT_RESP.0;
                self.f.sm_send(self.client, &meta.reply(), &resp).unwrap();
            }
            self.inbox.push((meta, buf));
        }
        if self.f.sm_pending(self.h) > 0 || self.f.sm_pending(self.client) > 0 {
            return true;
        }
        let next = [
            self.f.next_event_time(),
            self.sm.poll_timeout(),
            self.sa.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            Some(t) if t <= until => {
                self.f.run_until(t.max(now));
                true
            }
            _ => false,
        }
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

#[test]
fn a_subscriber_is_told_when_a_ca_joins_and_leaves() {
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
        sa: Sa::with_config(SaConfig::default()),
        client,
        inbox: Vec::new(),
        ack: true,
    };
    b.run_for(Duration::from_secs(60));
    assert!(b.sm.is_up(), "the subnet came up");
    let sm_lid = b.sm.sm_lid();

    // Subscribe to traps 64 and 65 (generic, any issuer).
    for trap in [64u16, 65] {
        let mut ii = InformInfo::new_zeroed();
        ii.lid_range_begin.set(ALL_16);
        ii.is_generic = 1;
        ii.subscribe = 1;
        ii.trap_type.set(ALL_16);
        ii.trap_num.set(trap);
        ii.qpn_resp_time.set(0x12); // RespTimeValue 18: about 1 s
        ii.set_producer_type(ALL_24);
        let repr = SaRepr {
            header: gmp::Repr::request(
                MgmtClass::SUBN_ADM,
                Method::SET,
                SaAttrId::INFORM_INFO.0,
                0,
                0x1000 + u64::from(trap),
            ),
            rmpp: RmppRepr::Inactive,
            sm_key: 0,
            attr_offset: 0,
            comp_mask: 0,
        };
        let mut m = repr.to_mad();
        m[SA_DATA_OFFSET..SA_DATA_OFFSET + 36].copy_from_slice(ii.as_bytes());
        let meta = MadMeta::gmp(PortNum(1), Lid(0), sm_lid);
        b.f.sm_send(b.client, &meta, &m).unwrap();
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

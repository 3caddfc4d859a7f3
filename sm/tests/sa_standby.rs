//! The SA of an SM that stops being master and becomes master again (IBA vol1 C15-0.1.3;
//! OpenSM `osm_sa_mad_ctrl.c` "SM not MASTER. MAD ignored", `osm_state_mgr.c`
//! `state_mgr_sa_clean`): two of our SMs, each with its SA, on one simulated fabric, and an SA
//! client on a third CA.
//!
//! A handover makes the first SM standby: its SA answers nothing from then on (the client
//! times out and asks the new master), and keeps its groups while standby. When the new
//! master dies and the first SM takes the subnet back, its SA drops the multicast memberships
//! the ports made with it before (they joined another master meanwhile): the group the client
//! created is gone, the IPoIB broadcast group stays, empty; the takeover sweep asks every CA
//! port to re-register (PortInfo.ClientReregister), and the client's join is answered again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::ControlFlow;
use std::time::Duration;

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, Topology};
use ibmad::attr::PortInfo;
use ibmad::sa::SA_DATA_OFFSET;
use ibmad::sa_rec::mcmember::{join, Repr as McMemberRepr};
use ibmad::zerocopy::FromBytes;
use ibmad::{
    gmp, Direction, Gid, Lid, MadMeta, Method, MgmtClass, NodeType, PKey, PortNum, QKey, RmppRepr,
    SaAttrId, SaRepr, Smp, SmpAttrId, Status, Tap, Time,
};
use sm::drive::Agents;
use sm::sa::{Sa, SaConfig};
use sm::{Role, Sm, SmConfig};

struct Proc {
    h: SmHandle,
    sm: Sm,
    sa: Sa,
    alive: bool,
    /// PortInfo Sets with ClientReregister.
    rereg: u64,
}

struct Bed {
    f: Fabric,
    procs: Vec<Proc>,
    client: SmHandle,
    /// What reached the client: (TID, method, status).
    inbox: Vec<(u64, Method, Status)>,
}

fn cfg(priority: u8) -> SmConfig {
    SmConfig {
        port: PortNum(1),
        sm_priority: priority,
        sweep_interval: Duration::from_secs(10),
        sminfo_polling_timeout: Duration::from_secs(2),
        polling_retry_number: 3,
        ..SmConfig::default()
    }
}

impl Bed {
    fn new() -> Bed {
        let topo = Topology::generate("fat-tree:2,4").unwrap();
        let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
        let ca = topo.nodes_of_type(NodeType::CA).nth(2).unwrap();
        let client = f.attach_client(ca, PortNum(1)).unwrap().handle;
        assert!(f.register_class(client, MgmtClass::SUBN_ADM));
        Bed {
            f,
            procs: Vec::new(),
            client,
            inbox: Vec::new(),
        }
    }

    fn ca(&self, i: usize) -> NodeId {
        self.f
            .topology()
            .nodes_of_type(NodeType::CA)
            .nth(i)
            .unwrap()
    }

    /// The LID of CA `i`'s port 1, as its SMA holds it.
    fn lid_of(&self, i: usize) -> Lid {
        self.f
            .agent(self.ca(i))
            .unwrap()
            .port_info(PortNum(1))
            .unwrap()
            .lid()
    }

    fn gid_of(&self, i: usize) -> Gid {
        let guid = self
            .f
            .topology()
            .port(fabric_sim::topo::PortRef {
                node: self.ca(i),
                port: PortNum(1),
            })
            .unwrap()
            .guid();
        Gid::new(0xfe80_0000_0000_0000, guid)
    }

    /// Starts an SM with its SA on CA `i`; returns its index.
    fn start(&mut self, i: usize, cfg: SmConfig) -> usize {
        let node = self.ca(i);
        let h = self.f.attach_sm(node, PortNum(1)).unwrap().handle;
        assert!(self.f.register_class(h, MgmtClass::SUBN_ADM));
        self.procs.push(Proc {
            h,
            sm: Sm::new(cfg).unwrap(),
            sa: Sa::with_config(SaConfig::default()),
            alive: true,
            rereg: 0,
        });
        self.procs.len() - 1
    }

    fn kill(&mut self, p: usize) {
        self.procs[p].alive = false;
        self.f.detach_sm(self.procs[p].h);
    }

    fn run_until(&mut self, until: Time) {
        let mut buf = [0u8; 256];
        for _ in 0..10_000_000 {
            let now = self.f.now();
            let mut busy = false;
            for p in self.procs.iter_mut().filter(|p| p.alive) {
                let rereg = &mut p.rereg;
                let mut port = self.f.sm_port(p.h);
                let mut tap = Tap::new(&mut port, |dir, _: &MadMeta, mad: &[u8]| {
                    if let (Direction::Send, Ok(smp)) = (dir, Smp::ref_from_bytes(mad)) {
                        if smp.method() == Method::SET && smp.attr() == SmpAttrId::PORT_INFO {
                            let pi = PortInfo::ref_from_prefix(&smp.data).unwrap().0;
                            *rereg += u64::from(pi.client_reregister());
                        }
                    }
                    true
                });
                let mut agents = Agents::sm(&mut p.sm).with_sa(&mut p.sa);
                let _ = sm::drive::turn(&mut agents, &mut tap, now, &mut |_, _| {
                    ControlFlow::Continue(())
                })
                .unwrap();
                busy |= self.f.sm_pending(p.h) > 0;
            }
            while let Ok(Some(_)) = self.f.sm_recv(self.client, &mut buf) {
                let h = SaRepr::parse_bytes(&buf[..]).unwrap().header;
                self.inbox.push((h.tid, h.method, h.status));
            }
            if busy {
                continue;
            }
            let next = self
                .procs
                .iter()
                .filter(|p| p.alive)
                .flat_map(|p| [p.sm.poll_timeout(), p.sa.poll_timeout()])
                .flatten()
                .chain(self.f.next_event_time())
                .min();
            match next {
                Some(t) if t <= until => self.f.run_until(t.max(now)),
                _ => {
                    self.f.run_until(until);
                    return;
                }
            }
        }
        panic!("the bed did not settle");
    }

    fn run_for(&mut self, d: Duration) {
        let t = self.f.now() + d;
        self.run_until(t);
    }

    /// Sends an SA request from the client to `sa_lid` and runs 3 s; the answer's status, or
    /// `None` if nothing came back.
    fn ask(
        &mut self,
        sa_lid: Lid,
        method: Method,
        attr: SaAttrId,
        mask: u64,
        rec: &[u8],
        tid: u64,
    ) -> Option<Status> {
        let repr = SaRepr {
            header: gmp::Repr::request(MgmtClass::SUBN_ADM, method, attr.0, 0, tid),
            rmpp: RmppRepr::Inactive,
            sm_key: 0,
            attr_offset: 0,
            comp_mask: mask,
        };
        let mut m = repr.to_mad();
        m[SA_DATA_OFFSET..SA_DATA_OFFSET + rec.len()].copy_from_slice(rec);
        let meta = MadMeta::gmp(PortNum(1), Lid(0), sa_lid);
        self.f.sm_send(self.client, &meta, &m).unwrap();
        self.run_for(Duration::from_secs(3));
        self.inbox
            .iter()
            .find(|(t, method, _)| *t & 0xFFFF_FFFF == tid && method.is_response())
            .map(|&(_, _, s)| s)
    }

    /// The client creates (or joins) group `mgid` as a full member at the SA on `sa_lid`.
    fn join(&mut self, sa_lid: Lid, mgid: Gid, tid: u64) -> Option<Status> {
        let rec = McMemberRepr {
            mgid,
            port_gid: self.gid_of(2),
            q_key: QKey(0x1234),
            p_key: PKey(0xffff),
            join_state: join::FULL,
            ..McMemberRepr::default()
        };
        let mut b = [0u8; 200];
        assert!(rec.emit(&mut b));
        let mask = sm::sa::mcmember::CREATE_COMP_MASK;
        self.ask(
            sa_lid,
            Method::SET,
            SaAttrId::MC_MEMBER_RECORD,
            mask,
            &b,
            tid,
        )
    }

    /// SA ClassPortInfo Get from the client to `sa_lid`.
    fn class_port_info(&mut self, sa_lid: Lid, tid: u64) -> Option<Status> {
        self.ask(sa_lid, Method::GET, SaAttrId::CLASS_PORT_INFO, 0, &[], tid)
    }
}

fn client_group() -> Gid {
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = 0x15;
    g[2] = 0x12;
    g[3] = 0x34;
    g[15] = 0x01;
    Gid(g)
}

#[test]
fn a_standby_sa_answers_nothing_and_drops_memberships_when_master_again() {
    let mut bed = Bed::new();
    let a = bed.start(0, cfg(3));
    bed.run_for(Duration::from_secs(5));
    assert_eq!(bed.procs[a].sm.role(), Role::Master);
    assert!(bed.procs[a].sm.is_up());
    let a_lid = bed.lid_of(0);
    let mgid = client_group();
    assert_eq!(
        bed.join(a_lid, mgid, 0x100),
        Some(Status::OK),
        "joined at the master"
    );
    let db = &bed.procs[a].sa.state().mcast;
    assert!(db.lookup(mgid).is_some());
    let broadcast: Vec<Gid> = db
        .groups()
        .filter(|g| g.well_known)
        .map(|g| g.rec.mgid)
        .collect();
    assert!(
        !broadcast.is_empty(),
        "the IPoIB broadcast group is pre-created"
    );

    // A higher SM comes: handover, the first SM stands by.
    let b = bed.start(1, cfg(9));
    bed.run_for(Duration::from_secs(30));
    assert_eq!(bed.procs[b].sm.role(), Role::Master);
    assert_eq!(bed.procs[a].sm.role(), Role::Standby);
    let b_lid = bed.lid_of(1);
    let dropped = bed.procs[a].sa.stats().dropped;
    assert_eq!(
        bed.class_port_info(a_lid, 0x200),
        None,
        "a standby SA answers nothing (C15-0.1.3)"
    );
    assert_eq!(bed.procs[a].sa.stats().dropped, dropped + 1);
    assert_eq!(bed.join(a_lid, mgid, 0x201), None, "nor a join");
    assert_eq!(
        bed.class_port_info(b_lid, 0x202),
        Some(Status::OK),
        "the new master's SA answers"
    );
    assert!(
        bed.procs[a].sa.state().mcast.lookup(mgid).is_some(),
        "the standby keeps its groups (as OpenSM) until it is master again"
    );

    // The new master dies; the first SM takes the subnet back.
    bed.procs[a].rereg = 0;
    bed.kill(b);
    bed.run_for(Duration::from_secs(2 * 4 + 5));
    let pa = &bed.procs[a];
    assert_eq!(pa.sm.role(), Role::Master);
    assert!(pa.sm.is_up());
    let db = &pa.sa.state().mcast;
    assert!(
        db.lookup(mgid).is_none(),
        "the client's group went with its membership"
    );
    for g in &broadcast {
        let group = db
            .groups()
            .find(|x| x.rec.mgid == *g)
            .expect("broadcast group kept");
        assert!(group.members.is_empty(), "no stale member in {g:?}");
    }
    // Every CA port learns the new master and is asked to re-register with its SA.
    let ca_ports = bed.f.topology().nodes_of_type(NodeType::CA).count() as u64;
    assert_eq!(pa.rereg, ca_ports);
    assert_eq!(bed.class_port_info(a_lid, 0x300), Some(Status::OK));
    assert_eq!(
        bed.join(a_lid, mgid, 0x301),
        Some(Status::OK),
        "the client joins again"
    );
    assert!(bed.procs[a].sa.state().mcast.lookup(mgid).is_some());
}

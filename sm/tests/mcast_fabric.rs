//! Multicast end to end on the simulated fabric: the SM brings the subnet up, gets the SA's
//! groups ([`sm::Command::McastGroups`]), builds a spanning tree per MLID and programs the MFT
//! blocks into the switches' agents; the simulator then switches multicast data packets by
//! those MFTs ([`fabric_sim::sim::Fabric::send_multicast`]): every receiving member gets
//! exactly one copy, send-only members and non-members none. A second pass with the same
//! groups sends no MFT SMP, a change sends only the blocks it touches.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, PortRef, Topology};
use ibmad::{Guid, Lid, NodeType, PortNum, Time};
use sm::mcast::{McastGroup, McastMember};
use sm::{Command, Sm, SmConfig};

fn drive(f: &mut Fabric, h: SmHandle, sm: &mut Sm, until: Time) {
    sm::drive(sm, &mut f.sm_port(h), until, |_| {}).unwrap();
}

struct Bed {
    f: Fabric,
    h: SmHandle,
    sm: Sm,
    topo: Topology,
    cas: Vec<NodeId>,
}

impl Bed {
    fn new(spec: &str) -> Bed {
        let topo = Topology::generate(spec).unwrap();
        let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
        let cas: Vec<NodeId> = topo.nodes_of_type(NodeType::CA).collect();
        let h = f.attach_sm(cas[0], PortNum(1)).unwrap().handle;
        let cfg = SmConfig {
            port: PortNum(1),
            sweep_interval: std::time::Duration::ZERO,
            ..SmConfig::default()
        };
        let mut sm = Sm::new(cfg).unwrap();
        drive(&mut f, h, &mut sm, Time::from_millis(60_000));
        assert!(sm.is_up(), "the subnet came up");
        Bed {
            f,
            h,
            sm,
            topo,
            cas,
        }
    }

    fn guid(&self, ca: NodeId) -> Guid {
        self.topo
            .port(PortRef {
                node: ca,
                port: PortNum(1),
            })
            .unwrap()
            .guid()
    }

    fn groups(&mut self, groups: Vec<McastGroup>) {
        let now = self.f.now();
        self.sm.handle_command(now, Command::McastGroups(groups));
        let until = now + std::time::Duration::from_secs(30);
        drive(&mut self.f, self.h, &mut self.sm, until);
    }

    /// Sends from `from` and returns how many copies each CA received.
    fn copies(&self, from: NodeId, mlid: Lid) -> Vec<usize> {
        let d = self.f.send_multicast(from, PortNum(1), mlid).unwrap();
        assert!(!d.storm, "the MFTs loop");
        let mut n = vec![0; self.cas.len()];
        for r in d.received {
            let i = self.cas.iter().position(|&c| c == r.node).unwrap();
            n[i] += 1;
        }
        n
    }
}

fn member(g: Guid, receives: bool) -> McastMember {
    McastMember {
        port_guid: g,
        receives,
    }
}

#[test]
fn every_receiving_member_gets_one_copy_and_nobody_else_any() {
    let mut b = Bed::new("fat-tree:3,4");
    let n = b.cas.len();
    assert!(n >= 16, "{n} CAs");
    // Group A: every third CA full, CA 1 send-only. Group B: CAs 2 and n-1.
    let full: Vec<usize> = (0..n).step_by(3).collect();
    let mlid_a = Lid(0xC000);
    let mlid_b = Lid(0xC021); // block 1
    let mut a = McastGroup {
        mlid: mlid_a,
        members: full
            .iter()
            .map(|&i| member(b.guid(b.cas[i]), true))
            .collect(),
    };
    a.members.push(member(b.guid(b.cas[1]), false));
    let grp_b = McastGroup {
        mlid: mlid_b,
        members: vec![
            member(b.guid(b.cas[2]), true),
            member(b.guid(b.cas[n - 1]), true),
        ],
    };
    b.groups(vec![a.clone(), grp_b.clone()]);
    let first = b.sm.mft_programmer().stats();
    assert!(first.last_sets > 0, "{first:?}");

    for sender in [full[0], full[full.len() - 1], 1] {
        let got = b.copies(b.cas[sender], mlid_a);
        for (i, &c) in got.iter().enumerate() {
            let want = usize::from(full.contains(&i) && i != sender);
            assert_eq!(c, want, "group A from CA {sender}: CA {i} got {c} copies");
        }
    }
    let got = b.copies(b.cas[2], mlid_b);
    for (i, &c) in got.iter().enumerate() {
        assert_eq!(c, usize::from(i == n - 1), "group B: CA {i}");
    }
    // An MLID no switch forwards reaches nobody.
    let d =
        b.f.send_multicast(b.cas[0], PortNum(1), Lid(0xC100))
            .unwrap();
    assert!(d.received.is_empty() && d.no_entry >= 1);

    // The same groups again: nothing to send.
    b.groups(vec![a.clone(), grp_b.clone()]);
    let again = b.sm.mft_programmer().stats();
    assert_eq!(again.last_sets, 0, "{again:?}");

    // CA 4 joins group A: only the (block 0) entries of switches on the changed branch.
    a.members.push(member(b.guid(b.cas[4]), true));
    b.groups(vec![a.clone(), grp_b.clone()]);
    let change = b.sm.mft_programmer().stats();
    assert!(
        change.last_sets >= 1 && change.last_sets < first.last_sets,
        "{change:?} vs {first:?}"
    );
    let got = b.copies(b.cas[0], mlid_a);
    assert_eq!(got[4], 1);

    // Group B deleted: its entries are cleared, and the packet reaches nobody.
    b.groups(vec![a.clone()]);
    let got = b.copies(b.cas[2], mlid_b);
    assert!(got.iter().all(|&c| c == 0), "{got:?}");

    // A heavy sweep re-routes and re-derives the trees: the switches already hold them.
    let now = b.f.now();
    b.sm.handle_command(now, Command::HeavySweep);
    drive(
        &mut b.f,
        b.h,
        &mut b.sm,
        now + std::time::Duration::from_secs(60),
    );
    assert!(b.sm.is_up());
    let heavy = b.sm.mft_programmer().stats();
    assert_eq!(heavy.last_sets, 0, "{heavy:?}");
    let got = b.copies(b.cas[3], mlid_a);
    assert_eq!(got[0], 1);
}

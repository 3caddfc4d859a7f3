//! Multicast: MCMember joins per second in process, and MFT SMPs per multicast pass (ours,
//! diffed, against OpenSM's resend-everything count for the same tables).
//!
//! `cargo bench -p ibsm-tests --bench mcast [-- SPEC] [--joins N] [--routing ENGINES]` (SPEC
//! defaults to `fat-tree:3,16`, N to 1000, ENGINES to the SM's default, minhop; with sssp,
//! dfsssp or nue the trees grow over the engine's link loads). The SM brings SPEC up in the
//! simulator (SM on the first CA); then:
//! 1. **joins**: N CAs join the IPoIB broadcast group, then N create a group of their own
//!    (`sm::sa::mcmember::McastDb::join`, the SA's whole rule set, on the subnet as the SM
//!    found it); wall time and joins/s; then the same joins and creates as SubnAdmSet MADs
//!    through the SA (`sm::sa::Sa::handle_mad` → `poll_transmit`, on the SM's snapshot);
//! 2. **MFT SMPs**: the SM programs the trees of those groups (`Command::McastGroups`); MFT
//!    Sets and Gets of the first pass, of a pass after one more join, of a pass with nothing
//!    changed and of a heavy sweep, against OpenSM's count for every pass: on every switch that
//!    forwards a group, every block up to its highest in use × every position
//!    (`mcast_mgr_set_mftables`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{PortRef, Topology};
use ibmad::gmp::Repr as GmpRepr;
use ibmad::sa::SA_DATA_OFFSET;
use ibmad::sa_rec::mcmember::{comp, join, Repr as McMemberRepr};
use ibmad::{
    Gid, Guid, Lid, Method, MgmtClass, NodeType, PKey, PortNum, QKey, RmppRepr, SaAttrId, SaRepr,
    Time,
};
use sm::sa::mcmember::{
    ipoib_broadcast_mgid, IpoibParams, McRequest, McastDb, SubnetPorts, CREATE_COMP_MASK,
    JOIN_COMP_MASK,
};
use sm::{Command, Sm, SmConfig};

const PREFIX: u64 = 0xfe80_0000_0000_0000;

fn drive(f: &mut Fabric, h: SmHandle, sm: &mut Sm, until: Time) {
    sm::drive(sm, &mut f.sm_port(h), until, |_| {}).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let joins = args
        .iter()
        .position(|a| a == "--joins")
        .map_or(1000, |i| args[i + 1].parse::<usize>().unwrap());
    let routing: Vec<String> = args
        .iter()
        .position(|a| a == "--routing")
        .map(|i| args[i + 1].split(',').map(String::from).collect())
        .unwrap_or_default();
    let spec = args
        .iter()
        .enumerate()
        .find(|(i, a)| {
            !a.starts_with("--") && (*i == 0 || !["--joins", "--routing"].contains(&&*args[i - 1]))
        })
        .map_or("fat-tree:3,16", |(_, a)| a.as_str())
        .to_string();

    let topo = Topology::from_spec_or_file(&spec).unwrap();
    let cas: Vec<_> = topo.nodes_of_type(NodeType::CA).collect();
    let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
    let h = f.attach_sm(cas[0], PortNum(1)).unwrap().handle;
    let mut cfg = SmConfig {
        port: PortNum(1),
        sweep_interval: Duration::ZERO,
        ..SmConfig::default()
    };
    if !routing.is_empty() {
        cfg.routing_engine = routing;
    }
    let mut sm = Sm::new(cfg).unwrap();
    drive(&mut f, h, &mut sm, Time::from_millis(120_000));
    assert!(sm.is_up());
    let s = sm.subnet().clone();
    let switches = s.switches().count();
    let loads = sm.routes().is_some_and(|r| r.mcast_loads.is_some());
    println!(
        "{spec}: {switches} switches, {} CAs; {} routed, trees {}",
        cas.len(),
        sm.routing_engine_used(),
        if loads {
            "grown over the engine's link loads"
        } else {
            "min-hop"
        }
    );
    let n = joins.min(cas.len());
    let guid = |i: usize| -> Guid {
        topo.port(PortRef {
            node: cas[i],
            port: PortNum(1),
        })
        .unwrap()
        .guid()
    };
    let lid = |i: usize| -> Lid {
        let (id, p) = (
            s.node_by_guid(topo.node(cas[i]).unwrap().guid()).unwrap(),
            PortNum(1),
        );
        s.lid_of(id, p)
    };

    // 1. joins, in process.
    let t0 = Instant::now();
    let ports = SubnetPorts::new(&s);
    let index = t0.elapsed();
    let mut db = McastDb::new();
    db.ensure_ipoib_broadcast(PKey(0x7fff), &IpoibParams::default());
    let bcast = ipoib_broadcast_mgid(PKey(0x7fff), 2);
    let reqs: Vec<(McMemberRepr, Lid)> = (0..n)
        .map(|i| {
            (
                McMemberRepr {
                    mgid: bcast,
                    port_gid: Gid::new(PREFIX, guid(i)),
                    join_state: join::FULL,
                    ..McMemberRepr::default()
                },
                lid(i),
            )
        })
        .collect();
    let t1 = Instant::now();
    for (rec, from) in &reqs {
        let r = McRequest {
            rec,
            comp_mask: JOIN_COMP_MASK,
            requester: *from,
            trusted: false,
            subnet_prefix: PREFIX,
        };
        db.join(&ports, &r).unwrap();
    }
    let joined = t1.elapsed();
    let creates: Vec<(McMemberRepr, Lid)> = (0..n)
        .map(|i| {
            let mut mgid = [0u8; 16];
            mgid[0] = 0xff;
            mgid[1] = 0x15;
            mgid[8..].copy_from_slice(&(i as u64).to_be_bytes());
            (
                McMemberRepr {
                    mgid: Gid(mgid),
                    port_gid: Gid::new(PREFIX, guid(i)),
                    q_key: QKey(0x1234),
                    p_key: PKey(0xffff),
                    join_state: join::FULL,
                    ..McMemberRepr::default()
                },
                lid(i),
            )
        })
        .collect();
    let t2 = Instant::now();
    for (rec, from) in &creates {
        let r = McRequest {
            rec,
            comp_mask: CREATE_COMP_MASK,
            requester: *from,
            trusted: false,
            subnet_prefix: PREFIX,
        };
        db.join(&ports, &r).unwrap();
    }
    let created = t2.elapsed();
    // A second member in each group (the next CA), so every group gets a tree.
    for (i, (rec, _)) in creates.iter().enumerate() {
        let j = (i + 1) % n;
        let r2 = McMemberRepr {
            port_gid: Gid::new(PREFIX, guid(j)),
            ..*rec
        };
        let r = McRequest {
            rec: &r2,
            comp_mask: JOIN_COMP_MASK | comp::QKEY,
            requester: lid(j),
            trusted: false,
            subnet_prefix: PREFIX,
        };
        db.join(&ports, &r).unwrap();
    }
    let rate = |k: usize, d: Duration| k as f64 / d.as_secs_f64();
    println!(
        "joins: index {:.2} ms; {n} joins of the broadcast group {:.2} ms ({:.0} joins/s); {n} creates {:.2} ms ({:.0} creates/s)",
        index.as_secs_f64() * 1e3,
        joined.as_secs_f64() * 1e3,
        rate(n, joined),
        created.as_secs_f64() * 1e3,
        rate(n, created),
    );

    // 1b. The same joins and creates through the SA: each a SubnAdmSet(MCMemberRecord) MAD
    // into `Sa::handle_mad`, its GetResp out of `Sa::poll_transmit` (parse, SM_Key and
    // serving checks, the rules, the answer MAD), on the SM's own snapshot.
    let mut sa = sm::sa::Sa::new();
    sa.follow(f.now(), &mut sm);
    let mad = |rec: &McMemberRepr, mask: u64, tid: u64| -> Vec<u8> {
        let r = SaRepr {
            header: GmpRepr::request(
                MgmtClass::SUBN_ADM,
                Method::SET,
                SaAttrId::MC_MEMBER_RECORD.0,
                0,
                tid,
            ),
            rmpp: RmppRepr::Inactive,
            sm_key: 0,
            attr_offset: 0,
            comp_mask: mask,
        };
        let mut m = r.to_mad().to_vec();
        assert!(rec.emit(&mut m[SA_DATA_OFFSET..]));
        m
    };
    let join_mads: Vec<(Vec<u8>, Lid)> = reqs
        .iter()
        .zip(0u64..)
        .map(|((rec, from), tid)| (mad(rec, JOIN_COMP_MASK, tid), *from))
        .collect();
    let create_mads: Vec<(Vec<u8>, Lid)> = creates
        .iter()
        .zip(0u64..)
        .map(|((rec, from), tid)| (mad(rec, CREATE_COMP_MASK, tid), *from))
        .collect();
    let through_sa = |sa: &mut sm::sa::Sa, mads: &[(Vec<u8>, Lid)]| -> Duration {
        let t = Instant::now();
        for (m, from) in mads {
            let meta = ibmad::MadMeta::gmp(PortNum(1), *from, sm.sm_lid());
            sa.handle_mad(Time::ZERO, &meta, m);
            let r = sa.poll_transmit(Time::ZERO).expect("an answer");
            assert_eq!(&r.mad[4..6], &[0, 0], "status of a join");
        }
        t.elapsed()
    };
    let sa_joined = through_sa(&mut sa, &join_mads);
    let sa_created = through_sa(&mut sa, &create_mads);
    println!(
        "through the SA (MADs): {n} joins of the broadcast group {:.2} ms ({:.0} joins/s); {n} creates {:.2} ms ({:.0} creates/s)",
        sa_joined.as_secs_f64() * 1e3,
        rate(n, sa_joined),
        sa_created.as_secs_f64() * 1e3,
        rate(n, sa_created),
    );

    // 2. MFT SMPs per pass.
    // OpenSM sends, on every pass, blocks 0..=max_block_in_use of every switch's table for
    // every position; a switch's max_block_in_use never shrinks, so the highest block it
    // forwards now is a lower bound.
    let opensm_count = |sm: &Sm| -> usize {
        let Some(m) = sm.mfts() else { return 0 };
        let s = sm.subnet();
        s.switches()
            .filter_map(|id| {
                let top = m.table(id)?.keys().next_back()?;
                let blocks = usize::from((top.0 - 0xC000) / 32) + 1;
                Some(blocks * usize::from(sm::mcast::positions(s.node(id).num_ports)))
            })
            .sum()
    };
    let pass = |name: &str, sm: &mut Sm, f: &mut Fabric, cmd: Command| {
        let now = f.now();
        let t = Instant::now();
        sm.handle_command(now, cmd);
        drive(f, h, sm, now + Duration::from_secs(120));
        let st = sm.mft_programmer().stats();
        println!(
            "{name}: {} MFT Sets, {:.1} ms wall (OpenSM: {} MFT Sets)",
            st.last_sets,
            t.elapsed().as_secs_f64() * 1e3,
            opensm_count(sm)
        );
    };
    let groups = db.routing_groups();
    println!(
        "{} groups, highest MLID {:#06x}",
        groups.len(),
        groups.iter().map(|g| g.mlid.0).max().unwrap_or(0)
    );
    pass(
        "first pass",
        &mut sm,
        &mut f,
        Command::McastGroups(groups.clone()),
    );
    pass(
        "no change",
        &mut sm,
        &mut f,
        Command::McastGroups(groups.clone()),
    );
    // One more member: the last CA joins the first group of its own.
    let last = cas.len() - 1;
    let extra = McMemberRepr {
        port_gid: Gid::new(PREFIX, guid(last)),
        ..creates[0].0
    };
    db.join(
        &ports,
        &McRequest {
            rec: &extra,
            comp_mask: JOIN_COMP_MASK,
            requester: lid(last),
            trusted: false,
            subnet_prefix: PREFIX,
        },
    )
    .unwrap();
    pass(
        "one join",
        &mut sm,
        &mut f,
        Command::McastGroups(db.routing_groups()),
    );
    pass("heavy sweep", &mut sm, &mut f, Command::HeavySweep);
}

//! Two of our SMs in one simulated subnet (IBA vol1 §14.4; monitoring requirements §1–§3):
//! election, standby polling, failover, handover and the double-failover scenarios DF-1/DF-2,
//! with the real SMA on every node and the virtual clock of the simulator.
//!
//! The driver counts, per SM, the SMPs it sends by (method, attribute), so that a test can say
//! "this takeover sent no LinearForwardingTable Set" or "this standby sent no NodeInfo Get".
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::time::Duration;

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId, Topology};
use ibmad::attr::PortInfo;
use ibmad::zerocopy::FromBytes;
use ibmad::{Direction, Lid, MadMeta, Method, NodeType, PortNum, Smp, SmpAttrId, Tap, Time};
use sm::drive::Agents;
use sm::role::RoleCause;
use sm::{Event, Role, Sm, SmConfig};

/// One SM process: its attachment, its core, what it sent and what it reported.
struct Proc {
    h: SmHandle,
    sm: Sm,
    alive: bool,
    sent: HashMap<(u8, u16), u64>,
    /// PortInfo Sets with ClientReregister.
    rereg: u64,
    events: Vec<Event>,
}

impl Proc {
    fn sent(&self, method: Method, attr: SmpAttrId) -> u64 {
        self.sent.get(&(method.0, attr.0)).copied().unwrap_or(0)
    }

    fn reset_counts(&mut self) {
        self.sent.clear();
        self.rereg = 0;
        self.events.clear();
    }

    fn role_changes(&self) -> Vec<(Role, Role)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::RoleChanged { from, to, .. } => Some((*from, *to)),
                _ => None,
            })
            .collect()
    }
}

struct Bed {
    f: Fabric,
    procs: Vec<Proc>,
    /// The most MASTERs seen at once among the live SMs, over every sample.
    max_masters: usize,
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
        let f = Fabric::new(&topo, SimConfig::default()).unwrap();
        Bed {
            f,
            procs: Vec::new(),
            max_masters: 0,
        }
    }

    fn with(spec: &str) -> Bed {
        let topo = Topology::generate(spec).unwrap();
        let f = Fabric::new(&topo, SimConfig::default()).unwrap();
        Bed {
            f,
            procs: Vec::new(),
            max_masters: 0,
        }
    }

    /// Every switch's LFT as its SMA holds it: (switch, LID) → port (0xFF = none), for the
    /// LIDs 1..=top.
    fn lfts(&self, top: u16) -> LftMap {
        let mut m = HashMap::new();
        for sw in self.f.topology().nodes_of_type(NodeType::SWITCH) {
            let a = self.f.agent(sw).unwrap();
            for lid in 1..=top {
                m.insert((sw, lid), a.lft_port(Lid(lid)).map_or(0xFF, |p| p.0));
            }
        }
        m
    }

    /// The node holding `lid` (switch port 0 or a CA port).
    fn node_of_lid(&self, lid: u16) -> Option<NodeId> {
        self.lids()
            .into_iter()
            .find(|&(_, _, l)| l.0 == lid)
            .map(|(n, _, _)| n)
    }

    fn ca(&self, i: usize) -> NodeId {
        self.f
            .topology()
            .nodes_of_type(NodeType::CA)
            .nth(i)
            .unwrap()
    }

    /// Starts an SM on CA `i`, port 1; returns its index.
    fn start(&mut self, i: usize, cfg: SmConfig) -> usize {
        let node = self.ca(i);
        let h = self.f.attach_sm(node, PortNum(1)).unwrap().handle;
        self.procs.push(Proc {
            h,
            sm: Sm::new(cfg).unwrap(),
            alive: true,
            sent: HashMap::new(),
            rereg: 0,
            events: Vec::new(),
        });
        self.procs.len() - 1
    }

    /// The SM process dies (its port's IsSM goes, MADs to it are dropped).
    fn kill(&mut self, p: usize) {
        self.procs[p].alive = false;
        self.f.detach_sm(self.procs[p].h);
    }

    fn masters(&self) -> usize {
        self.procs
            .iter()
            .filter(|p| p.alive && p.sm.role() == Role::Master)
            .count()
    }

    /// Runs fabric and SMs until virtual time `until`.
    fn run_until(&mut self, until: Time) {
        for _ in 0..10_000_000 {
            let now = self.f.now();
            let mut busy = false;
            for p in self.procs.iter_mut().filter(|p| p.alive) {
                let (sent, rereg, events) = (&mut p.sent, &mut p.rereg, &mut p.events);
                let mut port = self.f.sm_port(p.h);
                let mut tap = Tap::new(&mut port, |dir, _: &MadMeta, mad: &[u8]| {
                    if let (Direction::Send, Ok(smp)) = (dir, Smp::ref_from_bytes(mad)) {
                        *sent.entry((smp.method, smp.attr().0)).or_default() += 1;
                        if smp.method() == Method::SET && smp.attr() == SmpAttrId::PORT_INFO {
                            let pi = PortInfo::ref_from_prefix(&smp.data).unwrap().0;
                            *rereg += u64::from(pi.client_reregister());
                        }
                    }
                    true
                });
                let _ = sm::drive::turn(&mut Agents::sm(&mut p.sm), &mut tap, now, &mut |_, e| {
                    events.push(e);
                    ControlFlow::Continue(())
                })
                .unwrap();
                busy |= self.f.sm_pending(p.h) > 0;
            }
            self.max_masters = self.max_masters.max(self.masters());
            if busy {
                continue;
            }
            let next = self
                .procs
                .iter()
                .filter(|p| p.alive)
                .filter_map(|p| p.sm.poll_timeout())
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

    /// Every port's LID as its SMA holds it (switch port 0, CA ports 1..).
    fn lids(&self) -> Vec<(NodeId, u8, Lid)> {
        let mut v = Vec::new();
        for (id, _) in self.f.topology().nodes() {
            let a = self.f.agent(id).unwrap();
            let ports: Vec<u8> = if a.is_switch() {
                vec![0]
            } else {
                (1..=a.num_ports()).collect()
            };
            for p in ports {
                if let Some(pi) = a.port_info(PortNum(p)) {
                    v.push((id, p, pi.lid()));
                }
            }
        }
        v
    }
}

/// A bed with an SM of priority `pa` on CA 0 brought up alone, then one of `pb` on CA 1.
fn two_sms(a: SmConfig, b: SmConfig) -> Bed {
    let mut bed = Bed::new();
    bed.start(0, a);
    bed.run_for(Duration::from_secs(5));
    assert!(bed.procs[0].sm.is_up(), "the first SM brings the subnet up");
    bed.start(1, b);
    bed.run_for(Duration::from_secs(30));
    bed
}

#[test]
fn a_standby_polls_its_master_instead_of_rediscovering_and_sees_act_count_rise() {
    let mut bed = two_sms(cfg(5), cfg(3));
    assert_eq!(bed.procs[0].sm.role(), Role::Master);
    assert_eq!(bed.procs[1].sm.role(), Role::Standby);
    assert_eq!(bed.max_masters, 1);
    let master_guid = bed.procs[0].sm.role_machine().own_guid();
    assert_eq!(
        bed.procs[1].sm.role_machine().master().unwrap().guid,
        master_guid
    );
    let c0 = bed.procs[1].sm.role_machine().master().unwrap().act_count;
    let sweeps = bed.procs[1].sm.heavy_sweeps();
    bed.procs[1].reset_counts();
    // Six sweep intervals of standing by.
    bed.run_for(Duration::from_secs(60));
    let sb = &bed.procs[1];
    assert_eq!(sb.sm.role(), Role::Standby);
    assert_eq!(
        sb.sm.heavy_sweeps(),
        sweeps,
        "a standby does not re-discover"
    );
    assert_eq!(sb.sent(Method::GET, SmpAttrId::NODE_INFO), 0);
    let polls = sb.sent(Method::GET, SmpAttrId::SM_INFO);
    assert!((25..=35).contains(&polls), "one poll per 2 s: {polls}");
    let c1 = sb.sm.role_machine().master().unwrap().act_count;
    assert!(c1 > c0, "the master's ActCount rises: {c0} -> {c1}");
}

#[test]
fn failover_keeps_every_lid_and_sends_no_lft_set() {
    let mut bed = two_sms(cfg(5), cfg(3));
    assert_eq!(bed.procs[1].sm.role(), Role::Standby);
    let lids = bed.lids();
    assert!(lids.iter().all(|(_, _, l)| l.is_unicast()));
    bed.procs[1].reset_counts();
    bed.kill(0);
    // Detection: at most (retries + 1) polling periods; then one heavy sweep.
    bed.run_for(Duration::from_secs(2 * 4 + 2));
    let sb = &bed.procs[1];
    assert_eq!(sb.sm.role(), Role::Master, "{:?}", sb.role_changes());
    assert!(sb.sm.is_up());
    assert!(sb.events.iter().any(|e| matches!(
        e,
        Event::RoleChanged {
            cause: RoleCause::MasterLost { misses: 3, .. },
            ..
        }
    )));
    assert_eq!(bed.lids(), lids, "the same LIDs under the new master");
    assert_eq!(
        sb.sent(Method::SET, SmpAttrId::LINEAR_FT),
        0,
        "the switches already hold the right tables"
    );
    // Every CA port learns the new master's LID and is asked to re-register with the SA.
    let ca_ports: u64 = bed
        .f
        .topology()
        .nodes_of_type(NodeType::CA)
        .map(|id| u64::from(bed.f.agent(id).unwrap().num_ports()))
        .sum();
    assert_eq!(sb.rereg, ca_ports);
}

#[test]
fn a_higher_sm_started_second_takes_over_by_handover() {
    let mut bed = two_sms(cfg(3), cfg(9));
    let (a, b) = (&bed.procs[0], &bed.procs[1]);
    assert_eq!(b.sm.role(), Role::Master, "b: {:?}", b.role_changes());
    assert_eq!(a.sm.role(), Role::Standby, "a: {:?}", a.role_changes());
    assert!(
        a.sent(Method::SET, SmpAttrId::SM_INFO) >= 1,
        "a sent HANDOVER"
    );
    let b_guid = b.sm.role_machine().own_guid();
    assert!(
        a.events.iter().any(|e| matches!(
            e,
            Event::RoleChanged { cause: RoleCause::HandedOver(g), .. } if *g == b_guid
        )),
        "a handed over to b: {:?}",
        a.role_changes()
    );
    // b acknowledges a HANDOVER that reaches it as STANDBY. One that reaches it while it is
    // still DISCOVERING (a's incremental heavy sweep after b's trap 144 ends before b's first
    // discovery) finds a standing by at b's own election instead.
    let b_elected = b.events.iter().any(|e| {
        matches!(
            e,
            Event::RoleChanged {
                to: Role::Master,
                cause: RoleCause::Elected,
                ..
            }
        )
    });
    assert!(
        b.sent(Method::SET, SmpAttrId::SM_INFO) >= 1 || b_elected,
        "b acknowledged, or was elected with a standing by: {:?}",
        b.role_changes()
    );
    assert_eq!(bed.max_masters, 1, "never two masters at once");
    assert!(b.sm.is_up());
    assert_eq!(b.sent(Method::SET, SmpAttrId::LINEAR_FT), 0);
    // And it stays that way.
    bed.procs[0].reset_counts();
    bed.run_for(Duration::from_secs(30));
    assert_eq!(bed.procs[0].sm.role(), Role::Standby);
    assert_eq!(bed.procs[1].sm.role(), Role::Master);
    assert!(bed.procs[0].role_changes().is_empty());
}

/// Seed 003 §3, DF-1 (`master_sm_priority` off) and DF-2 (15 on the standby).
fn double_failover(master_sm_priority: u8) -> Bed {
    let mut b_cfg = cfg(13);
    b_cfg.master_sm_priority = master_sm_priority;
    let mut bed = two_sms(cfg(14), b_cfg);
    assert_eq!(bed.procs[0].sm.role(), Role::Master);
    assert_eq!(bed.procs[1].sm.role(), Role::Standby);
    bed.kill(0);
    bed.run_for(Duration::from_secs(15));
    assert_eq!(bed.procs[1].sm.role(), Role::Master);
    bed.procs[1].reset_counts();
    // The old master comes back, priority 14, on the same port.
    bed.start(0, cfg(14));
    bed.run_for(Duration::from_secs(40));
    assert_eq!(bed.max_masters, 1);
    bed
}

#[test]
fn df_1_a_recovered_higher_master_takes_the_subnet_back() {
    let bed = double_failover(0);
    let (a, b) = (&bed.procs[2], &bed.procs[1]);
    assert_eq!(a.sm.role(), Role::Master, "{:?}", a.role_changes());
    assert_eq!(b.sm.role(), Role::Standby, "{:?}", b.role_changes());
    assert_eq!(b.role_changes(), vec![(Role::Master, Role::Standby)]);
}

#[test]
fn df_2_master_sm_priority_15_keeps_the_recovered_sm_standing_by() {
    let bed = double_failover(15);
    let (a, b) = (&bed.procs[2], &bed.procs[1]);
    assert_eq!(a.sm.role(), Role::Standby, "{:?}", a.role_changes());
    assert_eq!(b.sm.role(), Role::Master);
    assert!(b.role_changes().is_empty(), "{:?}", b.role_changes());
    assert_eq!(a.sm.role_machine().master().unwrap().priority, 15);
    // No second heavy sweep of the subnet beyond the light ones.
    assert_eq!(b.sent(Method::SET, SmpAttrId::LINEAR_FT), 0);
}

/// A restarted SM on the same port (the daemon restarted, the same LID) holds none of the SA
/// registrations the clients made with its predecessor: its first heavy sweep as master asks
/// every CA port to re-register (PortInfo.ClientReregister, IBA vol1 §14.4.11, as OpenSM does
/// on its first master sweep) — and changes nothing else: no LFT Set, no port state change,
/// the same LIDs. Its later sweeps ask nobody.
#[test]
fn a_restarted_sm_asks_every_ca_port_to_re_register_and_changes_nothing_else() {
    let mut bed = Bed::new();
    let first = bed.start(0, cfg(5));
    bed.run_for(Duration::from_secs(5));
    assert!(bed.procs[first].sm.is_up());
    let lids = bed.lids();
    bed.kill(first);
    bed.run_for(Duration::from_secs(1));
    let again = bed.start(0, cfg(5));
    bed.run_for(Duration::from_secs(5));
    let p = &bed.procs[again];
    assert!(p.sm.is_up());
    assert_eq!(bed.lids(), lids, "the same LIDs");
    assert_eq!(p.sent(Method::SET, SmpAttrId::LINEAR_FT), 0);
    let ca_ports: u64 = bed
        .f
        .topology()
        .nodes_of_type(NodeType::CA)
        .map(|id| u64::from(bed.f.agent(id).unwrap().num_ports()))
        .sum();
    assert_eq!(p.rereg, ca_ports, "every CA port is asked to re-register");
    assert_eq!(
        p.sent(Method::SET, SmpAttrId::PORT_INFO),
        ca_ports,
        "a PortInfo Set for re-registration only"
    );
    // Every port stayed Active.
    for (id, _) in bed.f.topology().nodes() {
        let a = bed.f.agent(id).unwrap();
        for q in 1..=a.num_ports() {
            if let Some(pi) = a.port_info(PortNum(q)) {
                if bed.f.peer(id, PortNum(q)).is_some() {
                    assert_eq!(pi.port_state(), ibmad::PortState::ACTIVE);
                }
            }
        }
    }
    bed.procs[again].reset_counts();
    let now = bed.f.now();
    bed.procs[again]
        .sm
        .handle_command(now, sm::Command::HeavySweep);
    bed.run_for(Duration::from_secs(5));
    assert_eq!(bed.procs[again].rereg, 0, "later sweeps ask nobody");
}

/// Monitoring requirement 30 (seed 003 §3, DF-3): with `master_sm_priority` 15 on the master
/// and every `sm_priority` at most 14, a newly started SM of a higher `sm_priority` than the
/// master's own stands by — the master advertises 15 while MASTER — and no handover happens.
#[test]
fn df_3_master_sm_priority_15_keeps_a_newly_started_higher_sm_standing_by() {
    let mut a_cfg = cfg(13);
    a_cfg.master_sm_priority = 15;
    let bed = two_sms(a_cfg, cfg(14));
    let (a, b) = (&bed.procs[0], &bed.procs[1]);
    assert_eq!(a.sm.role(), Role::Master, "{:?}", a.role_changes());
    assert_eq!(b.sm.role(), Role::Standby, "{:?}", b.role_changes());
    assert_eq!(
        a.role_changes(),
        vec![(Role::Discovering, Role::Master)],
        "the master's only change is its own election"
    );
    assert_eq!(b.sm.role_machine().master().unwrap().priority, 15);
    assert_eq!(a.sent(Method::SET, SmpAttrId::SM_INFO), 0, "no HANDOVER");
    assert_eq!(bed.max_masters, 1);
}

/// Monitoring requirement 6 (seed 003 §1): with every SM at the same priority the SM on the
/// lowest port GUID is master — whichever starts first, and again after each of them restarts.
#[test]
fn at_equal_priority_the_lowest_port_guid_is_master_across_restarts() {
    let mut bed = Bed::new();
    let guid = |bed: &Bed, ca: NodeId| {
        bed.f
            .topology()
            .port(fabric_sim::topo::PortRef {
                node: ca,
                port: PortNum(1),
            })
            .unwrap()
            .guid()
    };
    let (c0, c1) = (bed.ca(0), bed.ca(1));
    let (low, high) = if guid(&bed, c0) < guid(&bed, c1) {
        (0, 1)
    } else {
        (1, 0)
    };
    let master = |bed: &Bed| -> Vec<ibmad::Guid> {
        bed.procs
            .iter()
            .filter(|p| p.alive && p.sm.role() == Role::Master)
            .map(|p| p.sm.role_machine().own_guid())
            .collect()
    };
    let (low_ca, high_ca) = (guid(&bed, bed.ca(low)), guid(&bed, bed.ca(high)));
    // The higher GUID starts first and brings the subnet up; the lower one takes it over.
    let h = bed.start(high, cfg(0));
    bed.run_for(Duration::from_secs(5));
    assert_eq!(master(&bed), vec![high_ca]);
    let l = bed.start(low, cfg(0));
    bed.run_for(Duration::from_secs(30));
    assert_eq!(master(&bed), vec![low_ca], "the lower GUID wins");
    // The master restarts: the other takes over, then the restarted one takes the subnet back.
    bed.kill(l);
    bed.run_for(Duration::from_secs(15));
    assert_eq!(master(&bed), vec![high_ca]);
    let l = bed.start(low, cfg(0));
    bed.run_for(Duration::from_secs(40));
    assert_eq!(master(&bed), vec![low_ca], "after the master's restart");
    // The standby restarts: nothing changes.
    bed.kill(h);
    bed.run_for(Duration::from_secs(5));
    bed.start(high, cfg(0));
    bed.run_for(Duration::from_secs(30));
    assert_eq!(master(&bed), vec![low_ca], "after the standby's restart");
    assert_eq!(bed.procs[l].sm.role(), Role::Master);
    assert_eq!(bed.max_masters, 1, "never two masters at once");
}

/// Monitoring requirement 4: two SMs on the two ports of one dual-port CA are two SMs — each
/// reports its own port's GUID in SMInfo, they elect one master and the other polls it.
#[test]
fn two_sms_on_the_two_ports_of_one_ca_report_their_own_port_guids() {
    let mut bed = Bed::with("random:8,12,4,3,ports=8");
    let topo = bed.f.topology();
    let ca = topo
        .nodes_of_type(NodeType::CA)
        .find(|&id| {
            topo.ports(id)
                .filter(|(p, port)| p.0 >= 1 && port.peer().is_some())
                .count()
                == 2
        })
        .expect("a dual-port CA with both ports cabled");
    let guids: Vec<_> = topo.ports(ca).map(|(_, port)| port.guid()).collect();
    for (port, prio) in [(1, 5), (2, 3)] {
        let h = bed.f.attach_sm(ca, PortNum(port)).unwrap().handle;
        bed.procs.push(Proc {
            h,
            sm: Sm::new(SmConfig {
                port: PortNum(port),
                ..cfg(prio)
            })
            .unwrap(),
            alive: true,
            sent: HashMap::new(),
            rereg: 0,
            events: Vec::new(),
        });
        bed.run_for(Duration::from_secs(10));
    }
    bed.run_for(Duration::from_secs(20));
    let (a, b) = (&bed.procs[0], &bed.procs[1]);
    assert_eq!(a.sm.role_machine().own_guid(), guids[0]);
    assert_eq!(b.sm.role_machine().own_guid(), guids[1]);
    assert_ne!(guids[0], guids[1]);
    assert_eq!(a.sm.role(), Role::Master);
    assert_eq!(b.sm.role(), Role::Standby);
    assert_eq!(b.sm.role_machine().master().unwrap().guid, guids[0]);
    assert_eq!(bed.max_masters, 1);
}

/// Monitoring requirement 34 (seed 003 §4): light sweeps come every `sweep_interval`, and 0
/// turns them off — no SwitchInfo Get after SUBNET UP.
#[test]
fn light_sweeps_every_sweep_interval_and_none_with_zero() {
    for (interval, sweeps) in [(10, 6u64), (0, 0)] {
        let mut bed = Bed::new();
        bed.start(
            0,
            SmConfig {
                sweep_interval: Duration::from_secs(interval),
                ..cfg(5)
            },
        );
        bed.run_for(Duration::from_secs(5));
        assert!(bed.procs[0].sm.is_up());
        bed.procs[0].reset_counts();
        bed.run_for(Duration::from_secs(60));
        let switches = bed.f.topology().nodes_of_type(NodeType::SWITCH).count() as u64;
        let got = bed.procs[0].sent(Method::GET, SmpAttrId::SWITCH_INFO);
        assert_eq!(
            got,
            sweeps * switches,
            "sweep_interval {interval} s: one SwitchInfo per switch per light sweep"
        );
        assert_eq!(bed.procs[0].sent(Method::GET, SmpAttrId::NODE_INFO), 0);
    }
}

/// Monitoring requirement 39 (seed 003 L305): the light sweep's SMP load is bounded — at a
/// 10 s `sweep_interval` on a fabric of about a thousand ports, at most a few hundred Gets in
/// any second. `fat-tree:2,24` has 36 switches and 288 CAs: 1,152 ports. Counted second by
/// second of virtual time over two minutes after SUBNET UP.
#[test]
fn light_sweep_load_stays_bounded_on_a_thousand_port_fabric() {
    let mut bed = Bed::with("fat-tree:2,24");
    bed.start(0, cfg(5));
    bed.run_for(Duration::from_secs(10));
    assert!(bed.procs[0].sm.is_up());
    let switches = bed.f.topology().nodes_of_type(NodeType::SWITCH).count() as u64;
    let ports: u64 = bed
        .f
        .topology()
        .nodes()
        .map(|(id, _)| u64::from(bed.f.agent(id).unwrap().num_ports()))
        .sum();
    assert!((1_000..1_300).contains(&ports), "{ports} ports");
    bed.procs[0].reset_counts();
    let mut per_second = Vec::new();
    for _ in 0..120 {
        bed.run_for(Duration::from_secs(1));
        per_second.push(bed.procs[0].sent.values().sum::<u64>());
        bed.procs[0].reset_counts();
    }
    let total: u64 = per_second.iter().sum();
    let busiest = per_second.iter().copied().max().unwrap();
    // Twelve light sweeps of one SwitchInfo Get per switch, and nothing else.
    assert_eq!(total, 12 * switches, "SMPs per second: {per_second:?}");
    assert!(
        busiest <= 300,
        "{busiest} SMPs in one second: {per_second:?}"
    );
    assert_eq!(
        per_second.iter().filter(|&&n| n > 0).count(),
        12,
        "one burst per sweep_interval: {per_second:?}"
    );
}

/// LFT entries by (switch, LID), as [`Bed::lfts`] reads them.
type LftMap = HashMap<(NodeId, u16), u8>;

/// A 3-level k8 fat tree (80 switches) brought up by one SM: the bed, the highest LID and
/// every switch's LFT.
fn k8_fat_tree_up() -> (Bed, u16, LftMap) {
    let mut bed = Bed::with("fat-tree:3,8");
    bed.start(0, cfg(5));
    bed.run_for(Duration::from_secs(10));
    assert!(bed.procs[0].sm.is_up());
    let top = bed.lids().iter().map(|&(_, _, l)| l.0).max().unwrap();
    let lfts = bed.lfts(top);
    (bed, top, lfts)
}

/// The (switch, LID) entries that differ between two readings.
fn changed_entries(before: &LftMap, after: &LftMap) -> Vec<(NodeId, u16)> {
    before
        .iter()
        .filter(|(k, v)| after[k] != **v)
        .map(|(k, _)| *k)
        .collect()
}

/// Issue 12 (route churn): on re-sweeps the SM keeps every LFT entry whose port is still
/// minimal (OpenSM without `ignore_existing_lfts`). A CA leaving changes only its own LID's
/// entries — one per switch — where choosing every route afresh changed 2,405 entries on all
/// 80 switches of this fat tree.
#[test]
fn a_vanished_end_port_changes_only_its_own_entries() {
    let (mut bed, top, before) = k8_fat_tree_up();
    let ca = bed.ca(37);
    let gone = bed
        .lids()
        .into_iter()
        .find(|&(n, _, _)| n == ca)
        .map(|(_, _, l)| l.0)
        .unwrap();
    let sweeps = bed.procs[0].sm.heavy_sweeps();
    bed.f.set_link(ca, PortNum(1), false).unwrap();
    bed.run_for(Duration::from_secs(15));
    assert!(
        bed.procs[0].sm.heavy_sweeps() > sweeps,
        "the trap caused a heavy sweep"
    );
    assert!(bed.procs[0].sm.is_up());
    let after = bed.lfts(top);
    let changed = changed_entries(&before, &after);
    let switches = bed.f.topology().nodes_of_type(NodeType::SWITCH).count();
    assert!(
        changed.iter().all(|&(_, lid)| lid == gone),
        "only LID {gone}'s entries change: {:?}",
        changed
            .iter()
            .filter(|&&(_, l)| l != gone)
            .take(8)
            .collect::<Vec<_>>()
    );
    assert_eq!(changed.len(), switches, "one entry per switch");
    assert!(changed.iter().all(|k| after[k] == 0xFF), "to no path");
    // The kept routes are not what routing afresh gives; a reroute request (OpenSM's
    // `reroute`) chooses every route afresh.
    use sm::routing::RoutingEngine;
    let fresh = |sm: &Sm| {
        sm::routing::minhop::MinHop::new(sm::routing::EngineOptions::default())
            .route(sm.subnet(), &mut rand::rngs::mock::StepRng::new(0, 0))
            .unwrap()
            .lfts
    };
    let sm = &bed.procs[0].sm;
    assert_ne!(sm.lfts().unwrap(), &fresh(sm), "existing entries were kept");
    let now = bed.f.now();
    bed.procs[0].sm.handle_command(now, sm::Command::Reroute);
    bed.run_for(Duration::from_secs(5));
    let sm = &bed.procs[0].sm;
    assert!(sm.is_up());
    assert_eq!(sm.lfts().unwrap(), &fresh(sm), "a reroute routes afresh");
}

/// Issue 12 (route churn): a failed switch-to-switch link moves only routes that crossed it
/// (before the failure, following the LFTs from that switch toward that LID went over the
/// link), and every destination stays reachable.
#[test]
fn a_failed_link_moves_only_the_routes_that_used_it() {
    let (mut bed, top, before) = k8_fat_tree_up();
    // A link between two switches: the first switch-to-switch cable of the topology.
    let topo = bed.f.topology();
    let (a, pa, b, pb) = topo
        .nodes_of_type(NodeType::SWITCH)
        .find_map(|sw| {
            (1..=bed.f.agent(sw).unwrap().num_ports()).find_map(|p| {
                let peer = bed.f.peer(sw, PortNum(p))?;
                bed.f.agent(peer.node).unwrap().is_switch().then_some((
                    sw,
                    p,
                    peer.node,
                    peer.port.0,
                ))
            })
        })
        .unwrap();
    // Which (switch, LID) routes crossed the link, by the tables before.
    let crossed = |sw: NodeId, lid: u16| -> bool {
        let dst = bed.node_of_lid(lid);
        let mut at = sw;
        for _ in 0..16 {
            if Some(at) == dst {
                return false;
            }
            let Some(&port) = before.get(&(at, lid)) else {
                return false;
            };
            if port == 0 || port == 0xFF {
                return false;
            }
            if (at, port) == (a, pa) || (at, port) == (b, pb) {
                return true;
            }
            let Some(next) = bed.f.peer(at, PortNum(port)) else {
                return false;
            };
            at = next.node;
        }
        false
    };
    let used: std::collections::HashSet<(NodeId, u16)> = before
        .keys()
        .copied()
        .filter(|&(sw, lid)| crossed(sw, lid))
        .collect();
    assert!(!used.is_empty());
    bed.f.set_link(a, PortNum(pa), false).unwrap();
    bed.run_for(Duration::from_secs(15));
    assert!(bed.procs[0].sm.is_up());
    let after = bed.lfts(top);
    let changed = changed_entries(&before, &after);
    assert!(!changed.is_empty(), "routes over the dead link moved");
    let stray: Vec<_> = changed
        .iter()
        .filter(|k| !used.contains(k))
        .take(8)
        .collect();
    assert!(
        stray.is_empty(),
        "entries changed that did not use the link: {stray:?}"
    );
    assert!(
        changed.iter().all(|k| after[k] != 0xFF),
        "every destination stays reachable"
    );
    eprintln!(
        "failed link {a:?}/{pa}–{b:?}/{pb}: {} of {} crossing routes changed",
        changed.len(),
        used.len()
    );
}

/// `sm_inactive` (OpenSM `-I`): an SM started NOTACTIVE sends no SMP and never comes up on
/// its own; another SM started later becomes master and brings the subnet up, passes over the
/// NOTACTIVE one in its election (OpenSM skips NOTACTIVE SMs), and the inactive SM stays
/// NOTACTIVE with one master on the subnet throughout.
#[test]
fn an_inactive_sm_stays_out_until_told() {
    let mut bed = Bed::new();
    let a = bed.start(
        0,
        SmConfig {
            sm_inactive: true,
            ..cfg(15)
        },
    );
    bed.run_for(Duration::from_secs(30));
    assert_eq!(bed.procs[a].sm.role(), Role::NotActive);
    assert!(!bed.procs[a].sm.is_up());
    assert!(bed.procs[a].sent.is_empty(), "{:?}", bed.procs[a].sent);
    let b = bed.start(1, cfg(0));
    bed.run_for(Duration::from_secs(30));
    assert_eq!(bed.procs[b].sm.role(), Role::Master);
    assert!(
        bed.procs[b].sm.is_up(),
        "the active SM brings the subnet up"
    );
    assert_eq!(bed.procs[a].sm.role(), Role::NotActive);
    assert!(bed.procs[a].role_changes().is_empty());
    assert_eq!(bed.max_masters, 1);
}

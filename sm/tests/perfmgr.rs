//! The performance manager against real PMAs (`sma::Pma` over `CounterTable`s), on a virtual
//! clock: totals equal the ports' counters, increases accumulate across sweeps and across
//! clears, error increases are logged, counters near saturation are cleared, the window holds,
//! lost answers are retried and then given up, PMAs without extended counters fall back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::time::Duration;

use ibmad::{Guid, Lid, MadMeta, PortNum, Time};
use sm::perfmgr::{Counter, PerfEvent, PerfMgr, PerfMgrConfig, SweepStats, Target};
use sma::pma::{CounterTable, Pma, PmaConfig};

struct Node {
    pma: Pma,
    table: CounterTable,
    /// Answers nothing (a PMA behind a dead path).
    mute: bool,
}

struct Bench {
    pm: PerfMgr,
    nodes: HashMap<Lid, Node>,
    now: Time,
    events: Vec<PerfEvent>,
    max_in_flight: usize,
    sent: u64,
}

const SW: Lid = Lid(1);
const CA1: Lid = Lid(2);
const CA2: Lid = Lid(3);

fn targets() -> Vec<Target> {
    vec![
        Target {
            node_guid: Guid(0x100),
            node_desc: "sw0".into(),
            is_switch: true,
            lid: SW,
            ports: (1..=4).map(PortNum).collect(),
        },
        Target {
            node_guid: Guid(0x200),
            node_desc: "ca1 HCA-1".into(),
            is_switch: false,
            lid: CA1,
            ports: vec![PortNum(1)],
        },
        Target {
            node_guid: Guid(0x300),
            node_desc: "ca2 HCA-1".into(),
            is_switch: false,
            lid: CA2,
            ports: vec![PortNum(1)],
        },
    ]
}

fn bench(cfg: PerfMgrConfig, ext: bool) -> Bench {
    let mut nodes = HashMap::new();
    for (lid, sw, n) in [(SW, true, 4), (CA1, false, 1), (CA2, false, 1)] {
        let mut pc = PmaConfig::for_node(sw, n);
        if !ext {
            pc.capability_mask &= !ibmad::perf::cap::EXT_WIDTH;
        }
        nodes.insert(
            lid,
            Node {
                pma: Pma::new(pc),
                table: CounterTable::new(sw, n),
                mute: false,
            },
        );
    }
    let mut pm = PerfMgr::new(cfg);
    pm.set_targets(Time::ZERO, PortNum(1), Lid(2), targets());
    Bench {
        pm,
        nodes,
        now: Time::ZERO,
        events: Vec::new(),
        max_in_flight: 0,
        sent: 0,
    }
}

impl Bench {
    /// Runs until a sweep finishes (or `limit` of virtual time passes); its stats.
    fn sweep(&mut self) -> Option<SweepStats> {
        self.pm.request_sweep();
        let limit = self.now + Duration::from_secs(60);
        let mut buf = [0u8; 256];
        loop {
            let mut replies = Vec::new();
            let mut in_flight = 0usize;
            while let Some(tx) = self.pm.poll_transmit(self.now, &mut buf) {
                self.sent += 1;
                in_flight += 1;
                let node = self
                    .nodes
                    .get_mut(&tx.meta.dlid)
                    .expect("a PMA at the DLID");
                assert_eq!(tx.meta.qp, 1);
                if node.mute {
                    continue;
                }
                let rx = MadMeta {
                    port: PortNum(1),
                    ..tx.meta
                };
                if let Some(r) = node.pma.handle_mad(&mut node.table, &rx, &buf[..tx.len]) {
                    replies.push(r);
                }
            }
            self.max_in_flight = self.max_in_flight.max(in_flight);
            let mut done = None;
            for r in replies {
                let bytes = ibmad::zerocopy::IntoBytes::as_bytes(&r.mad).to_vec();
                assert!(self.pm.handle_mad(self.now, &r.meta, &bytes));
            }
            while let Some(e) = self.pm.poll_event() {
                if let PerfEvent::SweepDone(s) = e {
                    done = Some(s);
                }
                self.events.push(e);
            }
            if done.is_some() {
                return done;
            }
            match self.pm.poll_timeout() {
                Some(t) if t > self.now => self.now = t,
                Some(_) => {}
                None if self.pm.status().sweeping => {}
                None => return None,
            }
            if self.now > limit {
                return None;
            }
            self.pm.handle_timeout(self.now);
        }
    }

    fn counters(&mut self, lid: Lid, port: u8) -> &mut sma::pma::Counters {
        self.nodes
            .get_mut(&lid)
            .unwrap()
            .table
            .port_mut(PortNum(port))
            .unwrap()
    }

    fn total(&self, guid: u64, port: u8, c: Counter) -> u64 {
        self.pm
            .ports()
            .find(|r| r.node_guid == Guid(guid) && r.port == PortNum(port))
            .unwrap_or_else(|| panic!("no record of {guid:#x} port {port}"))
            .total
            .get(c)
    }

    fn logs(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                PerfEvent::Log { line, .. } => Some(line.clone()),
                PerfEvent::SweepDone(_) => None,
            })
            .collect()
    }
}

fn quiet() -> PerfMgrConfig {
    PerfMgrConfig {
        sweep_time: Duration::ZERO,
        ..PerfMgrConfig::default()
    }
}

#[test]
fn defaults_are_opensms() {
    let c = PerfMgrConfig::default();
    assert_eq!(c.sweep_time, Duration::from_secs(180));
    assert_eq!(c.max_outstanding, 500);
    assert!(!c.ignore_cas && c.rm_nodes && c.log_errors && c.query_cpi && !c.xmit_wait_log);
    assert_eq!(c.xmit_wait_threshold, 0xFFFF);
}

#[test]
fn the_first_sweep_reads_every_port_and_totals_equal_the_counters() {
    let mut b = bench(quiet(), true);
    b.counters(SW, 3).port_xmit_data = 5_000_000_000; // past 32 bits: only the extended has it
    b.counters(SW, 3).symbol_error_counter = 7;
    b.counters(CA1, 1).port_rcv_pkts = 42;
    let s = b.sweep().expect("a sweep");
    // 3 ClassPortInfo, then PortCounters + PortCountersExtended for 6 ports.
    assert_eq!(s.ports, 6);
    assert_eq!(s.queries, 3 + 12);
    assert_eq!((s.timed_out, s.errors, s.clears), (0, 0, 0));
    assert_eq!(b.total(0x100, 3, Counter::XmitData), 5_000_000_000);
    assert_eq!(b.total(0x100, 3, Counter::SymbolErrors), 7);
    assert_eq!(b.total(0x200, 1, Counter::RcvPkts), 42);
    assert_eq!(b.pm.ports().count(), 6);
    // A first sample is the baseline: nothing is logged for errors counted before.
    assert!(
        b.logs().iter().all(|l| !l.contains("ERR 5401")),
        "{:?}",
        b.logs()
    );
    // The second sweep asks no ClassPortInfo again.
    let s = b.sweep().unwrap();
    assert_eq!(s.queries, 12);
}

#[test]
fn increases_accumulate_and_an_outside_clear_is_counted_whole() {
    let mut b = bench(quiet(), true);
    b.counters(CA2, 1).port_xmit_pkts = 100;
    b.sweep().unwrap();
    b.counters(CA2, 1).port_xmit_pkts = 150;
    b.sweep().unwrap();
    assert_eq!(b.total(0x300, 1, Counter::XmitPkts), 150);
    // Someone (perfquery -r) cleared the port, then 30 more packets went out.
    b.counters(CA2, 1).port_xmit_pkts = 30;
    b.sweep().unwrap();
    assert_eq!(b.total(0x300, 1, Counter::XmitPkts), 180);
}

#[test]
fn error_increases_are_logged_with_the_counter_node_and_port() {
    let mut b = bench(quiet(), true);
    b.sweep().unwrap();
    b.counters(SW, 2).port_rcv_errors = 3;
    b.counters(SW, 2).link_downed_counter = 1;
    b.sweep().unwrap();
    let logs = b.logs();
    let l = logs
        .iter()
        .find(|l| l.contains("ERR 5401"))
        .unwrap_or_else(|| panic!("{logs:?}"));
    assert!(
        l.contains("0x0000000000000100") || l.contains("0x100"),
        "{l}"
    );
    assert!(l.contains("\"sw0\" port 2"), "{l}");
    assert!(l.contains("PortRcvErrors +3"), "{l}");
    assert!(l.contains("LinkDownedCounter +1"), "{l}");
    // Not with perfmgr_log_errors FALSE.
    let mut b = bench(
        PerfMgrConfig {
            log_errors: false,
            ..quiet()
        },
        true,
    );
    b.sweep().unwrap();
    b.counters(SW, 2).port_rcv_errors = 3;
    b.sweep().unwrap();
    assert!(b.logs().iter().all(|l| !l.contains("ERR 5401")));
}

#[test]
fn xmit_wait_above_the_threshold_is_logged_when_asked() {
    let cfg = PerfMgrConfig {
        xmit_wait_log: true,
        xmit_wait_threshold: 1000,
        ..quiet()
    };
    let mut b = bench(cfg, true);
    b.sweep().unwrap();
    b.counters(CA1, 1).port_xmit_wait = 999;
    b.sweep().unwrap();
    assert!(b.logs().iter().all(|l| !l.contains("PortXmitWait")));
    b.counters(CA1, 1).port_xmit_wait = 999 + 1001;
    b.sweep().unwrap();
    assert!(
        b.logs().iter().any(|l| l.contains("PortXmitWait +1001")),
        "{:?}",
        b.logs()
    );
}

#[test]
fn counters_past_three_quarters_are_cleared_and_the_total_keeps_counting() {
    let mut b = bench(quiet(), true);
    // 16-bit SymbolErrorCounter past ¾; 32-bit PortXmitData past ¾ but read at 64 bits.
    b.counters(SW, 1).symbol_error_counter = 0xC001;
    b.counters(SW, 1).port_xmit_data = 0xF000_0000;
    let s = b.sweep().unwrap();
    assert_eq!(s.clears, 1);
    // The Set went out after the sample; run it.
    b.sweep().unwrap();
    let c = *b.counters(SW, 1);
    assert_eq!(c.symbol_error_counter, 0, "cleared");
    assert_eq!(
        c.port_xmit_data, 0xF000_0000,
        "extended counters are left alone"
    );
    b.counters(SW, 1).symbol_error_counter = 5;
    b.sweep().unwrap();
    assert_eq!(b.total(0x100, 1, Counter::SymbolErrors), 0xC001 + 5);
    let rec =
        b.pm.ports()
            .find(|r| r.port == PortNum(1) && r.node_guid == Guid(0x100));
    assert_eq!(rec.unwrap().clears, 1);
}

#[test]
fn without_extended_counters_data_comes_from_port_counters_and_is_cleared_too() {
    let mut b = bench(quiet(), false);
    b.counters(CA1, 1).port_rcv_data = 0xD000_0000;
    let s = b.sweep().unwrap();
    // 3 ClassPortInfo, PortCounters only, and the Set that clears.
    assert_eq!(s.queries, 3 + 6 + 1);
    assert_eq!(s.clears, 1);
    assert_eq!(b.total(0x200, 1, Counter::RcvData), 0xD000_0000);
    b.sweep().unwrap();
    assert_eq!(b.counters(CA1, 1).port_rcv_data, 0);
    b.counters(CA1, 1).port_rcv_data = 10;
    b.sweep().unwrap();
    assert_eq!(b.total(0x200, 1, Counter::RcvData), 0xD000_0000 + 10);
}

#[test]
fn without_class_port_info_extended_counters_are_tried_then_dropped() {
    let cfg = PerfMgrConfig {
        query_cpi: false,
        ..quiet()
    };
    let mut b = bench(cfg, false);
    b.counters(CA2, 1).port_xmit_pkts = 9;
    let s = b.sweep().unwrap();
    assert_eq!(
        s.queries, 12,
        "no ClassPortInfo; extended tried on every port"
    );
    assert_eq!(s.errors, 6, "refused by PMAs without them");
    assert_eq!(b.total(0x300, 1, Counter::XmitPkts), 9);
    let s = b.sweep().unwrap();
    assert_eq!((s.queries, s.errors), (6, 0), "PortCounters only now");
}

#[test]
fn the_window_bounds_requests_in_flight() {
    let cfg = PerfMgrConfig {
        max_outstanding: 2,
        ..quiet()
    };
    let mut b = bench(cfg, true);
    let s = b.sweep().unwrap();
    assert_eq!(s.ports, 6);
    assert_eq!(b.max_in_flight, 2);
}

#[test]
fn a_pma_that_never_answers_is_retried_then_given_up() {
    let cfg = quiet();
    let retries = cfg.retries;
    let mut b = bench(cfg, true);
    b.nodes.get_mut(&CA2).unwrap().mute = true;
    let s = b.sweep().expect("the sweep ends despite the mute PMA");
    assert_eq!(s.ports, 5);
    // Its ClassPortInfo times out (1 + retries sends); then PortCounters only, timing out too.
    assert_eq!(s.timed_out, 2);
    assert_eq!(s.queries, 2 + 10 + 2 * u64::from(1 + retries));
    assert!(
        b.logs().iter().any(|l| l.contains("ERR 5402")),
        "{:?}",
        b.logs()
    );
    assert!(b.now >= Time::ZERO + Duration::from_millis(200) * (2 * (1 + retries)));
}

#[test]
fn sweeps_run_every_sweep_time() {
    let cfg = PerfMgrConfig {
        sweep_time: Duration::from_secs(10),
        ..PerfMgrConfig::default()
    };
    let mut b = bench(cfg, true);
    // The first sweep starts at once (targets set at time 0).
    assert_eq!(b.pm.poll_timeout(), Some(Time::ZERO));
    b.sweep().unwrap();
    let next = b.pm.poll_timeout().unwrap();
    assert_eq!(next, Time::ZERO + Duration::from_secs(10));
    b.pm.set_enabled(false);
    assert_eq!(b.pm.poll_timeout(), None, "disabled: nothing due");
}

#[test]
fn nodes_that_left_are_forgotten_unless_rm_nodes_is_false() {
    for rm in [true, false] {
        let cfg = PerfMgrConfig {
            rm_nodes: rm,
            ..quiet()
        };
        let mut b = bench(cfg, true);
        b.sweep().unwrap();
        let mut t = targets();
        t.retain(|t| t.lid != CA2);
        b.pm.set_targets(b.now, PortNum(1), Lid(2), t);
        let kept = b.pm.ports().any(|r| r.node_guid == Guid(0x300));
        assert_eq!(kept, !rm);
        let s = b.sweep().unwrap();
        assert_eq!(s.ports, 5);
    }
}

#[test]
fn targets_follow_the_subnet() {
    let (mut sub, ..) = (sm::Subnet::new(),);
    let sw = sub.add_active_node(sm::Node::new(Guid(0x10), ibmad::NodeType::SWITCH, 4, "sw"));
    let ca = sub.add_active_node(sm::Node::new(Guid(0x20), ibmad::NodeType::CA, 2, "ca"));
    sub.connect_active((sw, PortNum(1)), (ca, PortNum(1)));
    sub.port_mut(sw, PortNum(0)).unwrap().lid = Lid(1);
    sub.port_mut(ca, PortNum(1)).unwrap().lid = Lid(2);
    let t = sm::perfmgr::targets(&sub, false);
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!((t[0].lid, t[0].ports.clone()), (Lid(1), vec![PortNum(1)]));
    assert_eq!((t[1].lid, t[1].ports.clone()), (Lid(2), vec![PortNum(1)]));
    assert_eq!(
        sm::perfmgr::targets(&sub, true).len(),
        1,
        "perfmgr_ignore_cas"
    );
}

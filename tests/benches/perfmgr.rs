//! The performance manager's sweep in the simulator: every port's counters read
//! (PortCountersExtended after each PMA's ClassPortInfo, OpenSM's perfmgr defaults: a window of
//! 500 queries), wall time and virtual time, after the SM brought the fabric up.
//!
//! `cargo bench -p ibsm-tests --bench perfmgr [-- SPEC...]` (SPEC defaults to `fat-tree:3,16
//! fat-tree:3,36`). Two sweeps per fabric: the first also asks every ClassPortInfo, the second
//! reads counters only (what every later sweep costs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::Topology;
use ibmad::{NodeType, PortNum, Time};
use sm::perfmgr::{targets, PerfEvent, PerfMgr, PerfMgrConfig, SweepStats};
use sm::{Sm, SmConfig};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let specs: Vec<&str> = if args.is_empty() {
        vec!["fat-tree:3,16", "fat-tree:3,36"]
    } else {
        args.iter().map(String::as_str).collect()
    };
    for spec in specs {
        run(spec);
    }
}

/// Runs the perfmgr's sweep over the fabric; its stats, the wall time and the most queries in
/// flight at once.
fn sweep(f: &mut Fabric, h: SmHandle, pm: &mut PerfMgr) -> (SweepStats, Duration, usize) {
    let t0 = Instant::now();
    if !pm.status().sweeping {
        pm.request_sweep();
    }
    let mut buf = [0u8; 256];
    let (mut in_flight, mut most) = (0usize, 0usize);
    loop {
        let now = f.now();
        while let Some((meta, len)) = f.sm_recv(h, &mut buf).unwrap() {
            if pm.handle_mad(now, &meta, &buf[..len]) {
                in_flight = in_flight.saturating_sub(1);
            }
        }
        if pm.poll_timeout().is_some_and(|t| t <= now) {
            pm.handle_timeout(now);
        }
        while let Some(tx) = pm.poll_transmit(now, &mut buf) {
            f.sm_send(h, &tx.meta, &buf[..tx.len]).unwrap();
            in_flight += 1;
        }
        most = most.max(in_flight);
        while let Some(e) = pm.poll_event() {
            if let PerfEvent::SweepDone(s) = e {
                return (s, t0.elapsed(), most);
            }
        }
        if f.sm_pending(h) > 0 {
            continue;
        }
        let next = [f.next_event_time(), pm.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .expect("a sweep under way has something scheduled");
        f.run_until(next.max(now));
    }
}

fn run(spec: &str) {
    let topo = Topology::from_spec_or_file(spec).unwrap();
    let ca = topo.nodes_of_type(NodeType::CA).next().unwrap();
    let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
    let h = f.attach_sm(ca, PortNum(1)).unwrap().handle;
    let mut sm = Sm::new(SmConfig {
        port: PortNum(1),
        sweep_interval: Duration::ZERO,
        ..SmConfig::default()
    })
    .unwrap();
    let t0 = Instant::now();
    sm::drive(
        &mut sm,
        &mut f.sm_port(h),
        Time::from_millis(600_000),
        |_| {},
    )
    .unwrap();
    assert!(sm.is_up(), "{spec}: the subnet did not come up");
    println!(
        "{spec}: {} switches, {} CAs; SUBNET UP in {:.2} s wall",
        topo.num_switches(),
        topo.nodes_of_type(NodeType::CA).count(),
        t0.elapsed().as_secs_f64()
    );
    let cfg = PerfMgrConfig {
        sweep_time: Duration::ZERO,
        ..PerfMgrConfig::default()
    };
    let mut pm = PerfMgr::new(cfg.clone());
    pm.set_enabled(true);
    // The first call starts the first sweep.
    pm.set_targets(
        f.now(),
        PortNum(1),
        sm.sm_lid(),
        targets(sm.subnet(), cfg.ignore_cas),
    );
    for label in ["first sweep (ClassPortInfo too)", "next sweep"] {
        let v0 = f.now();
        let (s, wall, most) = sweep(&mut f, h, &mut pm);
        let virt = Duration::from_nanos(f.now().0 - v0.0);
        assert_eq!(s.timed_out, 0, "{spec}: {s:?}");
        println!(
            "  {label}: {} ports, {} queries ({} errors, {} timed out), at most {most} in flight; \
             {:.3} s wall ({:.0} ports/s), {:.3} ms virtual",
            s.ports,
            s.queries,
            s.errors,
            s.timed_out,
            wall.as_secs_f64(),
            s.ports as f64 / wall.as_secs_f64(),
            virt.as_secs_f64() * 1e3,
        );
    }
}

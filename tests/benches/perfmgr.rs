//! The performance manager's sweep in the simulator: every port's counters read
//! (PortCountersExtended after each PMA's ClassPortInfo, OpenSM's perfmgr defaults: a window of
//! 500 queries), wall time and virtual time, after the SM brought the fabric up.
//!
//! `cargo bench -p ibsm-tests --bench perfmgr [-- SPEC...]` (SPEC defaults to `fat-tree:3,16
//! fat-tree:3,36`). Two sweeps per fabric: the first also asks every ClassPortInfo, the second
//! reads counters only (what every later sweep costs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::Topology;
use ibmad::{NodeType, PortNum, Time};
use sm::drive::Agents;
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

/// Runs the perfmgr's sweep over the fabric, beside the SM that brought it up, in the shared
/// drive loop; its stats, the wall time and the most queries in flight at once.
fn sweep(
    f: &mut Fabric,
    h: SmHandle,
    sm: &mut Sm,
    pm: &mut PerfMgr,
) -> (SweepStats, Duration, usize) {
    let t0 = Instant::now();
    if !pm.status().sweeping {
        pm.request_sweep();
    }
    let mut most = 0usize;
    let mut agents = Agents::sm(sm).with_perfmgr(pm);
    loop {
        let now = f.now();
        let _ = sm::drive::turn(&mut agents, &mut f.sm_port(h), now, &mut |_, _| {
            ControlFlow::Continue(())
        })
        .unwrap();
        let pm = agents.perfmgr.as_deref_mut().unwrap();
        most = most.max(pm.in_flight());
        while let Some(e) = pm.poll_event() {
            if let PerfEvent::SweepDone(s) = e {
                return (s, t0.elapsed(), most);
            }
        }
        assert!(
            sm::drive::advance(&agents, &mut f.sm_port(h), Time(u64::MAX)),
            "a sweep under way has something scheduled"
        );
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
        let (s, wall, most) = sweep(&mut f, h, &mut sm, &mut pm);
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

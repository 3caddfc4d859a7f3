//! Simulator scale and speed (harness = false; prints results, asserts nothing).
//!
//! `cargo bench -p fabric-sim --bench sim_forward` runs every scenario, each in a fresh child
//! process so that the peak RSS (VmHWM) it reports belongs to that scenario alone:
//!
//! - `build SPEC`: generate the topology and build the `Fabric` (one real `sma::Agent` per node,
//!   every link trained); prints times, node/port counts and peak RSS.
//! - `hops SPEC HOPS`: attach an SM at the first CA, find every switch exactly HOPS directed-route
//!   hops away, and send DR NodeInfo Gets to them round-robin in windows of 4096 until ~2 M
//!   link hops have been carried; prints hops/s (each request is HOPS hops out and HOPS back,
//!   every hop a real agent `handle_mad` + `ibmad::smi` processing).
//!
//! Run one scenario: `cargo bench -p fabric-sim --bench sim_forward -- hops fat-tree:3,36 5`.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::process::Command;
use std::time::{Duration, Instant};

use fabric_sim::sim::{Fabric, SimConfig};
use fabric_sim::topo::{NodeId, Topology};
use ibmad::zerocopy::IntoBytes;
use ibmad::{DrPath, Lid, MadMeta, MadPort, Method, NodeType, PortNum, Smp, SmpAttrId, Time};

fn vm_hwm_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn build(spec: &str) -> (Topology, Fabric) {
    let t0 = Instant::now();
    let topo = Topology::generate(spec).expect("spec");
    let t_topo = t0.elapsed();
    let t1 = Instant::now();
    let fabric = Fabric::new(&topo, SimConfig::default()).expect("fabric");
    let t_fab = t1.elapsed();
    let ports: usize = topo.nodes().map(|(_, n)| usize::from(n.num_ports())).sum();
    println!(
        "build {spec}: {} nodes ({} switches, {} CAs), {} ports, {} links; topology {:.3} s, \
         fabric {:.3} s; peak RSS {:.1} MiB",
        topo.num_nodes(),
        topo.num_switches(),
        topo.num_cas(),
        ports,
        topo.num_links(),
        t_topo.as_secs_f64(),
        t_fab.as_secs_f64(),
        vm_hwm_mib()
    );
    (topo, fabric)
}

/// Directed routes from `from` (leaving its port 1) to every switch exactly `hops` hops away,
/// through switches only (breadth-first, lowest port first).
fn paths_at_distance(topo: &Topology, from: NodeId, hops: usize) -> Vec<DrPath> {
    let mut seen = vec![false; topo.num_nodes()];
    seen[from.index()] = true;
    let mut q = VecDeque::new();
    q.push_back((from, DrPath::local()));
    let mut out = Vec::new();
    while let Some((n, path)) = q.pop_front() {
        if path.len() == hops {
            if topo.node(n).is_some_and(|x| x.is_switch()) {
                out.push(path);
            }
            continue;
        }
        let is_origin = n == from;
        if !is_origin && !topo.node(n).is_some_and(|x| x.is_switch()) {
            continue;
        }
        for (p, port) in topo.ports(n) {
            if p.0 == 0 || (is_origin && p.0 != 1) {
                continue;
            }
            let Some(peer) = port.peer() else { continue };
            if seen[peer.node.index()] {
                continue;
            }
            seen[peer.node.index()] = true;
            q.push_back((peer.node, path.push(p.0).expect("short path")));
        }
    }
    out
}

fn hops(spec: &str, hops: usize) {
    let (topo, mut f) = build(spec);
    let host = topo
        .nodes_of_type(NodeType::CA)
        .next()
        .expect("a CA to host the SM");
    let sm = f.attach_sm(host, PortNum(1)).expect("attach").handle;
    let paths = paths_at_distance(&topo, host, hops);
    assert!(!paths.is_empty(), "no switch {hops} hops from the SM");
    let meta = MadMeta {
        port: PortNum(1),
        slid: Lid::PERMISSIVE,
        dlid: Lid::PERMISSIVE,
        qp: 0,
        sl: 0,
        ..Default::default()
    };
    let window = 4096usize;
    let target_hops: u64 = 2_000_000;
    let mut buf = [0u8; 256];
    let mut sent = 0u64;
    let mut answered = 0u64;
    let hops0 = f.stats().hops;
    let ev0 = f.stats().events;
    let t0 = Instant::now();
    while f.stats().hops - hops0 < target_hops {
        for i in 0..window {
            let path = &paths[(sent as usize + i) % paths.len()];
            let q = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, sent + i as u64, path);
            f.sm_port(sm).send(&meta, q.as_bytes()).expect("send");
        }
        sent += window as u64;
        let limit = f.now() + Duration::from_secs(1);
        f.run_until_idle(limit);
        let mut port = f.sm_port(sm);
        while port.recv(&mut buf).expect("recv").is_some() {
            answered += 1;
        }
    }
    let el = t0.elapsed().as_secs_f64();
    let h = f.stats().hops - hops0;
    let ev = f.stats().events - ev0;
    println!(
        "hops {spec} ({hops}-hop DR NodeInfo Gets to {} switches): {sent} requests, {answered} \
         answered, {h} link hops, {ev} events in {el:.3} s = {:.2} M hops/s, {:.0} k requests/s; \
         virtual time {:?}; peak RSS {:.1} MiB",
        paths.len(),
        h as f64 / el / 1e6,
        sent as f64 / el / 1e3,
        f.now().saturating_since(Time::ZERO),
        vm_hwm_mib()
    );
    assert_eq!(answered, sent, "every request answered");
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    match args.first().map(String::as_str) {
        Some("build") => {
            build(args.get(1).map_or("fat-tree:3,36", String::as_str));
        }
        Some("hops") => hops(
            args.get(1).map_or("fat-tree:3,36", String::as_str),
            args.get(2).and_then(|h| h.parse().ok()).unwrap_or(5),
        ),
        Some(other) => eprintln!("unknown scenario {other:?}; expected build or hops"),
        None => {
            let exe = std::env::current_exe().expect("own path");
            for scenario in [
                &["build", "fat-tree:3,36"][..],
                &["build", "fat-tree:3,74"],
                &["hops", "fat-tree:3,36", "5"],
                &["hops", "fat-tree:2,36", "3"],
            ] {
                let status = Command::new(&exe).args(scenario).status().expect("spawn");
                if !status.success() {
                    eprintln!("scenario {scenario:?} failed: {status}");
                }
            }
        }
    }
}

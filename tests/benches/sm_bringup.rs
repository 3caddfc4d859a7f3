//! Cold bring-up of `sm::Sm` in the simulator: wall time, virtual time and SMPs per phase.
//!
//! `cargo bench -p ibsm-tests --bench sm_bringup [-- SPEC...] [--fold] [--faults F] [--no-qos-read]`
//! SPEC defaults to `fat-tree:3,16 fat-tree:3,36`. The SM sits on the first CA, or with
//! `--sm-first` where ibsim puts it (the first node of the topology; a switch's port 0), as
//! OpenSM does under `opensm-on-ibsim.sh`. `--write-net SPEC PATH` writes the
//! topology as an ibsim `.net` file (for running OpenSM on the same fabric) and exits.
//! `--no-qos-read` sets `read_qos_tables` FALSE (no SL-to-VL / VLArbitration reads after
//! SUBNET UP, the `qos-read` phase). `--lft-hash` prints a hash of every switch's LFT as the
//! simulated agents hold it (LIDs 0..=LinearFDBTop), to check that a change kept the tables.
//! Each phase's row shows the process's resident set (VmRSS) when it ended (Linux).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use core::time::Duration;

use fabric_sim::sim::{Fabric, FaultConfig, SimConfig};
use fabric_sim::topo::Topology;
use ibmad::{NodeType, PortNum, Time};
use sm::{Event, Sm, SmConfig};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--write-net") {
        let t = Topology::from_spec_or_file(&args[1]).unwrap();
        t.save_net(&args[2]).unwrap();
        eprintln!("wrote {}", args[2]);
        return;
    }
    let fold = args.iter().any(|a| a == "--fold");
    let sm_first = args.iter().any(|a| a == "--sm-first");
    let qos_read = !args.iter().any(|a| a == "--no-qos-read");
    let lft_hash = args.iter().any(|a| a == "--lft-hash");
    let faults = args
        .iter()
        .position(|a| a == "--faults")
        .map(|i| FaultConfig::parse(&args[i + 1]).unwrap());
    let mut specs: Vec<&str> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !(a.starts_with("--") || *i > 0 && args[i - 1] == "--faults"))
        .map(|(_, a)| a.as_str())
        .collect();
    if specs.is_empty() {
        specs = vec!["fat-tree:3,16", "fat-tree:3,36"];
    }
    for spec in specs {
        run(
            spec,
            fold,
            sm_first,
            qos_read,
            faults.unwrap_or(FaultConfig::NONE),
            lft_hash,
        );
    }
}

/// The process's resident set size in MiB (`VmRSS`, or `VmHWM` for the peak), if readable.
fn rss_mib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// The process's CPU time so far (user + system, all threads), from `/proc/self/stat` in
/// USER_HZ ticks (100 per second on Linux), if readable. On a shared machine the CPU time of
/// a phase says more than its wall time.
fn cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at state, field 3;
    // utime and stime are fields 14 and 15.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// FNV-1a over every switch's LFT entries 0..=LinearFDBTop (in node order) as the agents hold
/// them, and the number of entries hashed.
fn lft_hash(topo: &Topology, fabric: &Fabric) -> (u64, u64) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut n = 0;
    for (id, _) in topo.nodes() {
        let a = fabric.agent(id).unwrap();
        let Some(si) = a.switch_info() else { continue };
        for lid in 0..=si.linear_fdb_top.get() {
            let p = a.lft_port(ibmad::Lid(lid)).map_or(0xFF, |p| p.0);
            h = (h ^ u64::from(p)).wrapping_mul(0x0000_0100_0000_01b3);
            n += 1;
        }
    }
    (h, n)
}

/// What the bench takes from the SM's events: phase times and the first SUBNET UP.
struct Seen {
    t1: Instant,
    phase_wall: Vec<(sm::Phase, Duration, Option<u64>, Duration)>,
    last: Instant,
    last_cpu: Duration,
    up: bool,
    up_wall: Duration,
    ups: u32,
}

impl Seen {
    fn take(&mut self, sm: &mut Sm) {
        while let Some(e) = sm.poll_event() {
            match e {
                Event::PhaseDone { phase, .. } => {
                    let cpu = cpu_time().unwrap_or_default();
                    self.phase_wall.push((
                        phase,
                        self.last.elapsed(),
                        rss_mib("VmRSS:"),
                        cpu.saturating_sub(self.last_cpu),
                    ));
                    self.last_cpu = cpu;
                    self.last = Instant::now();
                }
                Event::SubnetUp => {
                    if !self.up {
                        self.up_wall = self.t1.elapsed();
                    }
                    self.up = true;
                    self.ups += 1;
                }
                _ => {}
            }
        }
    }
}

fn run(spec: &str, fold: bool, sm_first: bool, qos_read: bool, faults: FaultConfig, hash: bool) {
    let t0 = Instant::now();
    let topo = Topology::from_spec_or_file(spec).unwrap();
    let (node, port) = if sm_first {
        let (id, n) = topo.nodes().next().expect("a node");
        if n.is_switch() {
            (id, PortNum(0))
        } else {
            (id, PortNum(1))
        }
    } else {
        let ca = topo
            .nodes_of_type(NodeType::CA)
            .next()
            .expect("a CA for the SM");
        (ca, PortNum(1))
    };
    let mut fabric = Fabric::new(
        &topo,
        SimConfig {
            faults,
            ..SimConfig::default()
        },
    )
    .unwrap();
    let h = fabric.attach_sm(node, port).unwrap().handle;
    let mut sm = Sm::new(SmConfig {
        port,
        sweep_interval: Duration::ZERO,
        fold_config_into_arm: fold,
        qos: sm::qos::QosConfig {
            read_tables: qos_read,
            ..sm::qos::QosConfig::default()
        },
        ..SmConfig::default()
    })
    .unwrap();
    let setup = t0.elapsed();
    let t1 = Instant::now();
    let mut seen = Seen {
        t1,
        phase_wall: Vec::new(),
        last: Instant::now(),
        last_cpu: cpu_time().unwrap_or_default(),
        up: false,
        up_wall: Duration::ZERO,
        ups: 0,
    };
    // The longest batch of MADs handled at one instant: the one whose MAD ends discovery and
    // runs LID assignment and routing inside handle_mad (the rest of the batch costs µs).
    // Timed per batch, not per MAD: two clock reads per MAD were ≈ 2 % of the run.
    let mut compute = Duration::ZERO;
    let mut buf = [0u8; 256];
    loop {
        let now = fabric.now();
        if fabric.sm_pending(h) > 0 {
            let c = Instant::now();
            while let Ok(Some((meta, len))) = fabric.sm_recv(h, &mut buf) {
                sm.handle_mad(now, &meta, &buf[..len]);
            }
            compute = compute.max(c.elapsed());
            // The SM's events are read after the MADs of each instant and after the timer
            // step, as `sm::drive::turn` reads them after each call: a SUBNET UP is seen
            // before the timer step that follows it runs.
            seen.take(&mut sm);
        }
        if sm.poll_timeout().is_some_and(|t| t <= now) {
            sm.handle_timeout(now);
            seen.take(&mut sm);
        }
        while let Some(tx) = sm.poll_transmit(now, &mut buf) {
            fabric.sm_send(h, &tx.meta, &buf[..tx.len]).unwrap();
        }
        seen.take(&mut sm);
        let up = seen.up;
        // Done once up and idle (a sweep with errors re-sweeps at once, so it is not idle).
        if up && sm.stage() == sm::Stage::Idle && sm.poll_timeout().is_none() {
            break;
        }
        if fabric.sm_pending(h) > 0 {
            continue;
        }
        let next = match (fabric.next_event_time(), sm.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
        if next > Time::from_millis(3_600_000) {
            break;
        }
        fabric.run_until(next.max(now));
    }
    let wall = t1.elapsed();
    let Seen {
        phase_wall,
        up,
        up_wall,
        ups,
        ..
    } = seen;
    assert!(up, "{spec}: no SUBNET UP");
    let sw = topo.num_switches();
    let cas = topo.num_cas();
    println!(
        "\n{spec}{}{}{}: {sw} switches, {cas} CAs, {} links; setup {:.2?}, bring-up wall {:.2?} (of which LID assignment + routing {:.2?}), virtual {:.2?}",
        if fold { " --fold" } else { "" },
        if sm_first { " --sm-first" } else { "" },
        if qos_read { "" } else { " --no-qos-read" },
        topo.num_links(),
        setup,
        wall,
        compute,
        Duration::from_nanos(fabric.now().as_nanos()),
    );
    println!(
        "heavy sweeps {}, SUBNET UP {ups} times, first after {up_wall:.2?} wall",
        sm.heavy_sweeps()
    );
    println!(
        "| phase | SMPs | retried | timed out | skipped | virtual time | wall | CPU | RSS at end |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut total = 0;
    for ((phase, s), (_, w, rss, cpu)) in sm.phase_history().iter().zip(&phase_wall) {
        total += s.smps;
        println!(
            "| {phase} | {} | {} | {} | {} | {:.2?} | {:.2?} | {:.2?} | {} MiB |",
            s.smps,
            s.retried,
            s.timed_out,
            s.skipped,
            s.elapsed,
            w,
            cpu,
            rss.unwrap_or(0)
        );
    }
    println!(
        "| **total** | **{total}** | | | | | **{wall:.2?}** | | peak {} MiB |",
        rss_mib("VmHWM:").unwrap_or(0)
    );
    if hash {
        let (h, n) = lft_hash(&topo, &fabric);
        println!("LFT hash {h:016x} over {n} entries");
    }
}

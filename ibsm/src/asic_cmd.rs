//! `ibsm asic-model TOPOLOGY --socket-dir DIR`: a simulated fabric whose switches are RA-1
//! device models, each served over vfio-user on its own socket (`DIR/<NodeGUID>.sock`), for
//! host SMAs in other processes (`ibsm sma --device vfio-user:SOCKET`). With `--sm` our SM runs
//! on the first CA once every model has been brought up by its host; on SUBNET UP the LFTs in
//! the models' registers are compared with the SM's tables.
//!
//! Time: the fabric's virtual clock follows the wall clock (the hosts answer in real time).

use std::ops::ControlFlow;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fabric_sim::sim::{node_config, Fabric, SimConfig, SmHandle};
use fabric_sim::topo::NodeId;
use hca_driver::model::server::ServedAsic;
use hca_driver::regs;
use hca_driver::sim::RemoteAsicNode;
use hca_driver::ModelConfig;
use ibmad::{NodeType, PortNum, Time};
use sm::drive::Agents;
use sm::{Event, Sm, SmConfig};
use vfio::RealSys;

const USAGE: &str = "usage: ibsm asic-model TOPOLOGY --socket-dir DIR [--sm] [--exit-on-up] [--cut-link-after-up] [--time-limit SECONDS]\n";

struct Switch {
    id: NodeId,
    name: String,
    guid: u64,
    cfg: ModelConfig,
    listener: UnixListener,
    served: Option<Arc<Mutex<ServedAsic>>>,
    gone: bool,
}

struct SmRun {
    sm: Sm,
    h: SmHandle,
}

/// Entry point (arguments after `asic-model`).
pub fn main(args: &[String]) -> ExitCode {
    let mut topology = None;
    let mut dir = None;
    let mut run_sm = false;
    let mut exit_on_up = false;
    let mut cut_after_up = false;
    let mut limit = Duration::from_secs(120);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--socket-dir" => dir = it.next().map(PathBuf::from),
            "--sm" => run_sm = true,
            "--exit-on-up" => exit_on_up = true,
            "--cut-link-after-up" => cut_after_up = true,
            "--time-limit" => match it.next().and_then(|v| v.parse::<f64>().ok()) {
                Some(s) if s > 0.0 && s.is_finite() => limit = Duration::from_secs_f64(s),
                _ => return usage("--time-limit needs a positive number of seconds"),
            },
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            t if topology.is_none() && !t.starts_with('-') => topology = Some(t.to_string()),
            other => return usage(&format!("unexpected argument {other:?}")),
        }
    }
    let (Some(topology), Some(dir)) = (topology, dir) else {
        return usage("TOPOLOGY and --socket-dir are required");
    };
    let topo = match crate::simrun::load_topology(&topology, &crate::progress::Progress::new(true))
    {
        Ok(t) => t,
        Err(e) => return fail(format!("{topology}: {e}")),
    };
    let mut fabric = match Fabric::new(&topo, SimConfig::default()) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let mut switches = Vec::new();
    for id in topo.nodes_of_type(NodeType::SWITCH) {
        let Some(nc) = node_config(&topo, id) else {
            continue;
        };
        let name = topo
            .node(id)
            .map(|n| n.desc().to_string())
            .unwrap_or_default();
        let guid = nc.node_guid.0;
        let path = dir.join(format!("{guid:016x}.sock"));
        let _ = std::fs::remove_file(&path);
        let listener = match UnixListener::bind(&path) {
            Ok(l) => l,
            Err(e) => return fail(format!("{}: {e}", path.display())),
        };
        if let Err(e) = listener.set_nonblocking(true) {
            return fail(format!("{}: {e}", path.display()));
        }
        println!(
            "asic-model: switch {name:?} NodeGUID {guid:#018x} at {}",
            path.display()
        );
        switches.push(Switch {
            id,
            name,
            guid,
            cfg: ModelConfig {
                node_guid: guid,
                num_ports: nc.num_ports,
                ports: nc.ports.clone(),
                lft_blocks: 768,
                mft_blocks: 32,
                fault: hca_driver::ModelFault::None,
            },
            listener,
            served: None,
            gone: false,
        });
    }
    if switches.is_empty() {
        return fail("the topology has no switches");
    }
    let ca = topo.nodes_of_type(NodeType::CA).next();
    let sys = RealSys::shared();
    let start = Instant::now();
    let mut sm: Option<SmRun> = None;
    let mut ups = 0usize;
    loop {
        if start.elapsed() >= limit {
            return fail(format!("time limit reached ({ups} SUBNET UP)"));
        }
        // New hosts; a switch whose host went away takes the next one (its model starts
        // again from reset, as a device does when a new host brings it up).
        for s in switches.iter_mut().filter(|s| s.served.is_none() || s.gone) {
            if let Ok((sock, _)) = s.listener.accept() {
                if sock.set_nonblocking(false).is_err() {
                    continue;
                }
                let served = Arc::new(Mutex::new(ServedAsic::new(
                    sock,
                    sys.clone(),
                    s.cfg.clone(),
                )));
                if let Err(e) =
                    fabric.set_external(s.id, Box::new(RemoteAsicNode::new(served.clone())))
                {
                    return fail(e);
                }
                println!("asic-model: host connected for {:?}", s.name);
                s.served = Some(served);
                s.gone = false;
            }
        }
        // Requests from hosts.
        let mut busy = false;
        for s in switches.iter_mut() {
            let Some(served) = s.served.clone() else {
                continue;
            };
            if s.gone {
                continue;
            }
            let Ok(mut g) = served.lock() else {
                continue;
            };
            for _ in 0..512 {
                match sys.poll_in(&[g.socket()], 0) {
                    Ok(Some(_)) => {
                        busy = true;
                        if let Err(e) = g.serve_one() {
                            println!("asic-model: host of {:?} gone: {e}", s.name);
                            s.gone = true;
                            break;
                        }
                    }
                    _ => break,
                }
            }
        }
        for s in &switches {
            if s.served.is_some() {
                let _ = fabric.poke(s.id);
            }
        }
        // Start the SM once every model is READY.
        if run_sm && sm.is_none() && switches.iter().all(ready) {
            let Some(ca) = ca else {
                return fail("--sm needs a CA in the topology");
            };
            let h = match fabric.attach_sm(ca, PortNum(1)) {
                Ok(a) => a.handle,
                Err(e) => return fail(e),
            };
            let mut cfg = SmConfig {
                port: PortNum(1),
                ..SmConfig::default()
            };
            if cut_after_up {
                // No periodic sweeps: only the host SMAs' traps can trigger the second one.
                cfg.sweep_interval = Duration::ZERO;
            }
            match Sm::new(cfg) {
                Ok(s) => sm = Some(SmRun { sm: s, h }),
                Err(e) => return fail(e),
            }
            println!(
                "asic-model: all {} models READY; SM started",
                switches.len()
            );
        }
        if let Some(r) = sm.as_mut() {
            let now = fabric.now();
            let mut events = Vec::new();
            // A send the simulator refuses is retried by the SM on its timeout.
            let _ = sm::drive::turn(
                &mut Agents::sm(&mut r.sm),
                &mut fabric.sm_port(r.h),
                now,
                &mut |_, e| {
                    events.push(e);
                    ControlFlow::Continue(())
                },
            );
            for e in events {
                if e == Event::SubnetUp {
                    ups += 1;
                    println!("asic-model: SUBNET UP");
                    match compare(&r.sm, &switches) {
                        Ok(n) => {
                            println!("asic-model: LFTs in {n} model switches match the SM's tables")
                        }
                        Err(msg) => return fail(msg),
                    }
                    if cut_after_up && ups == 1 {
                        let link = topo.links().find(|l| {
                            [l.a.node, l.b.node]
                                .iter()
                                .all(|&n| topo.node(n).is_some_and(|x| x.is_switch()))
                        });
                        let Some(l) = link else {
                            return fail("--cut-link-after-up: no switch-to-switch link");
                        };
                        if let Err(e) = fabric.set_link(l.a.node, l.a.port, false) {
                            return fail(e);
                        }
                        println!(
                            "asic-model: cut the link {:?} port {} - {:?} port {}",
                            topo.node(l.a.node)
                                .map(|n| n.desc().to_string())
                                .unwrap_or_default(),
                            l.a.port.0,
                            topo.node(l.b.node)
                                .map(|n| n.desc().to_string())
                                .unwrap_or_default(),
                            l.b.port.0
                        );
                    } else if exit_on_up {
                        return ExitCode::SUCCESS;
                    }
                }
            }
        }
        let vnow = Time(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
        fabric.run_until(vnow.max(fabric.now()));
        if !busy {
            let fds: Vec<_> = switches
                .iter()
                .filter(|s| !s.gone)
                .filter_map(|s| s.served.as_ref()?.lock().ok().map(|g| g.socket()))
                .collect();
            if fds.is_empty() {
                std::thread::sleep(Duration::from_millis(1));
            } else {
                let _ = sys.poll_in(&fds, 1);
            }
        }
    }
}

fn ready(s: &Switch) -> bool {
    s.served.as_ref().is_some_and(|a| {
        a.lock()
            .is_ok_and(|mut g| g.with_model(|m, _| m.read(regs::STATUS)) & regs::STATUS_READY != 0)
    })
}

/// Every model's LFT registers equal the SM's table for it; returns how many were compared.
fn compare(sm: &Sm, switches: &[Switch]) -> Result<usize, String> {
    let lfts = sm.lfts().ok_or("SUBNET UP without LFTs")?;
    let subnet = sm.subnet();
    let mut n = 0;
    for s in switches {
        let sw = subnet
            .switches()
            .find(|&x| subnet.node(x).guid.0 == s.guid)
            .ok_or_else(|| format!("switch {:?} ({:#x}) not discovered", s.name, s.guid))?;
        let want = lfts.table(sw).ok_or("no table")?;
        let served = s.served.as_ref().ok_or("no host")?;
        let mut g = served.lock().map_err(|_| "lock")?;
        let m = g.model();
        if m.lft_top() != lfts.top().0 {
            return Err(format!(
                "{:?}: LFT_TOP {} != {}",
                s.name,
                m.lft_top(),
                lfts.top().0
            ));
        }
        for lid in 0..=lfts.top().0 {
            let got = m.lft_block(lid / 64).map(|b| b[usize::from(lid % 64)]);
            if got != want.get(usize::from(lid)).copied() {
                return Err(format!(
                    "{:?} LID {lid}: register {got:?}, SM {:?}",
                    s.name,
                    want.get(usize::from(lid))
                ));
            }
        }
        n += 1;
    }
    Ok(n)
}

fn usage(msg: &str) -> ExitCode {
    eprint!("ibsm asic-model: {msg}\n{USAGE}");
    ExitCode::from(2)
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("ibsm asic-model: {msg}");
    ExitCode::from(1)
}

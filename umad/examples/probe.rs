//! `probe` — open a user_mad port and print NodeInfo along directed-route paths.
//!
//! ```text
//! probe [--ca NAME] [--port N] [--mode auto|syscall|uring] [PATH ...]
//! ```
//! Each PATH is a directed route in libibmad notation (`0` = this port, `0,1,3` = out of port 1,
//! then port 3). Without PATHs it probes `0`. Against ibsim, run it as
//! `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so IBSIM_SOCKNAME=... probe 0 0,1`
//! from a writable directory.

use std::time::{Duration, Instant};

use ibmad::attr::NodeInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, MadMeta, MadPort, Method, Smp, SmpAttrId};
use umad::{IoMode, UmadConfig, UmadPort};

fn main() {
    if let Err(e) = run() {
        let mut msg = e.to_string();
        let mut src = e.source();
        while let Some(s) = src {
            msg.push_str(&format!(": {s}"));
            src = s.source();
        }
        eprintln!("probe: {msg}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut cfg = UmadConfig::default();
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ca" => cfg.ca = args.next(),
            "--port" => cfg.port = args.next().map(|p| p.parse()).transpose()?,
            "--mode" => {
                cfg.mode = match args.next().as_deref() {
                    Some("syscall") => IoMode::Syscall,
                    Some("uring") => IoMode::Uring,
                    Some("auto") | None => IoMode::Auto,
                    Some(m) => return Err(format!("unknown mode {m:?}").into()),
                }
            }
            "-h" | "--help" => {
                println!("probe [--ca NAME] [--port N] [--mode auto|syscall|uring] [PATH ...]");
                return Ok(());
            }
            p => paths.push(DrPath::parse(p)?),
        }
    }
    if paths.is_empty() {
        paths.push(DrPath::local());
    }
    for ca in umad::sysfs::list_cas()? {
        println!(
            "CA {} node_guid {:?} type {}",
            ca.name, ca.node_guid, ca.node_type
        );
        for p in &ca.ports {
            println!(
                "  port {} lid {:?} sm_lid {:?} state {} phys {} cap {:#010x}",
                p.num.0, p.lid, p.sm_lid, p.state, p.phys_state, p.cap_mask
            );
        }
    }
    let mut port = UmadPort::open(&cfg)?;
    println!(
        "opened {} ({} port {}), mode {:?}, header {} bytes, agents {:?}",
        port.device().umad_path,
        port.device().ca,
        port.device().port.0,
        port.mode(),
        port.framing().hdr_len(),
        port.agents()
    );
    for (i, path) in paths.iter().enumerate() {
        let tid = 0x5000 + i as u64;
        let req = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, tid, path);
        port.send(&MadMeta::default(), req.as_bytes())?;
        let mut buf = [0u8; 256];
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut answered = false;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let Some(r) = port.recv_timeout(&mut buf, Some(left))? else {
                break;
            };
            let smp = Smp::read_from_bytes(&buf[..]).map_err(|_| "short MAD")?;
            if smp.tid.get() & 0xFFFF_FFFF != tid {
                continue;
            }
            answered = true;
            if r.status != 0 {
                println!("path {path:?}: no answer (status {})", r.status);
            } else {
                let (ni, _) =
                    NodeInfo::read_from_prefix(&smp.data).map_err(|_| "short NodeInfo")?;
                println!(
                    "path {path:?}: {:?} guid {:?} ports {} local_port {}",
                    ni.node_type(),
                    ni.node_guid(),
                    ni.num_ports,
                    ni.local_port_num
                );
            }
            break;
        }
        if !answered {
            println!("path {path:?}: timeout");
        }
    }
    Ok(())
}

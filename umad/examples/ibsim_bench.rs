//! `ibsim_bench` — SMP throughput of [`umad::UmadPort`] against ibsim through libumad2sim.so.
//!
//! ```text
//! cargo run --release -p umad --example ibsim_bench -- [COUNT] [WINDOW...]
//! ```
//! Starts ibsim on `umad/tests/data/umad-3node.net` (private socket name), re-executes itself
//! under `LD_PRELOAD=libumad2sim.so` in a temp dir, and there sends COUNT directed-route
//! NodeInfo Gets over 2 hops (HCA → switch → HCA) keeping WINDOW requests outstanding, for each
//! WINDOW given (default 1 8 64). Prints SMPs/s and the mean round trip for each.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, MadMeta, MadPort, Method, Smp, SmpAttrId};
use umad::testutil::{missing_peers, IbsimGuard, TempDir};
use umad::{UmadConfig, UmadPort};

const CHILD: &str = "UMAD_BENCH_CHILD";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if std::env::var_os(CHILD).is_some() {
        return child(&args);
    }
    if let Some(why) = missing_peers() {
        eprintln!("SKIPPED: {why}");
        return Ok(());
    }
    let net = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/umad-3node.net");
    let sim = IbsimGuard::start(&net)?;
    let dir = TempDir::new("bench")?;
    let status = sim
        .client(std::env::current_exe()?, dir.path())
        .args(&args)
        .env(CHILD, "1")
        .status()?;
    if !status.success() {
        return Err(format!(
            "bench child failed: {status}; ibsim said:\n{}",
            sim.output()
        )
        .into());
    }
    Ok(())
}

fn child(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = args
        .first()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(20_000);
    let mut windows: Vec<usize> = args[1.min(args.len())..]
        .iter()
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    if windows.is_empty() {
        windows = vec![1, 8, 64];
    }
    let mut port = UmadPort::open(&UmadConfig::default())?;
    let path = DrPath::new(&[1, 2])?;
    let mut buf = [0u8; 256];
    let mut next_tid: u64 = 1;
    println!(
        "umad over umad2sim ({:?} mode), DR NodeInfo over 2 hops, {count} SMPs per run",
        port.mode()
    );
    for &window in &windows {
        let mut outstanding: HashSet<u32> = HashSet::new();
        let (mut sent, mut done) = (0usize, 0usize);
        let t0 = Instant::now();
        while done < count {
            while sent < count && outstanding.len() < window {
                let tid = next_tid;
                next_tid += 1;
                let smp = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, tid, &path);
                port.send(&MadMeta::default(), smp.as_bytes())?;
                outstanding.insert(tid as u32);
                sent += 1;
            }
            let Some(r) = port.recv_timeout(&mut buf, Some(Duration::from_secs(5)))? else {
                return Err(format!("stalled with {} outstanding", outstanding.len()).into());
            };
            let smp = Smp::read_from_bytes(&buf[..]).map_err(|_| "short MAD")?;
            if r.status != 0 {
                return Err(format!("send failed, status {}", r.status).into());
            }
            if outstanding.remove(&(smp.tid.get() as u32)) {
                done += 1;
            }
        }
        let el = t0.elapsed();
        println!(
            "window {window:>4}: {:>9.0} SMP/s, mean round trip {:>7.1} us (wall {:.3} s)",
            count as f64 / el.as_secs_f64(),
            el.as_secs_f64() * 1e6 / count as f64 * window.min(count) as f64,
            el.as_secs_f64()
        );
    }
    Ok(())
}

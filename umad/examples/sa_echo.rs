//! `sa_echo` — the floor of an SA round trip: a responder that answers every SubnAdm request
//! at once, with no SA behind it, so that a benchmark client (`osmtest -f f -s4`) measures only
//! its own side, the transport and the simulator (`tests/sa-bench.sh` runs it after the SMs).
//!
//! ```text
//! LD_PRELOAD=libibsm_umad.so SIM_HOST=<the SM's node> \
//!     cargo run --release -p umad --example sa_echo -- [--mode inline|syscall] [--count N]
//! ```
//! Opens the first port through user_mad (the kernel's or a shim's), registers the SA class
//! agent, takes IsSM (so that a simulator hands it the SA requests, as to an SM), and answers
//! every request with the request itself turned into its response: method | 0x80, status 0,
//! the record echoed (a Get's "one record"). Exits after N answers (default: never), printing
//! the number answered. (Killed instead, it leaves the simulator thinking an SM still runs on
//! the node — no exit handler tells it — and the next SM there is refused IsSM: start the
//! next SM on a fresh simulator, or give `--count`.)
//!
//! `--mode inline` (the default) reads on the main thread; `syscall` through umad's receive
//! thread, as `ibsm run` did before it read inline (one more thread hop per MAD).

use std::time::Duration;

use ibmad::{MadPort, MgmtClass, PortError, MAD_LEN};
use umad::{AgentSpec, IoMode, UmadConfig, UmadPort};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut mode = IoMode::Inline;
    let mut count = u64::MAX;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mode" => {
                mode = match args.next().as_deref() {
                    Some("inline") => IoMode::Inline,
                    Some("syscall") => IoMode::Syscall,
                    other => {
                        return Err(
                            format!("--mode: expected inline or syscall, got {other:?}").into()
                        )
                    }
                }
            }
            "--count" => {
                count = args
                    .next()
                    .ok_or("--count: a number expected")?
                    .parse()
                    .map_err(|e| format!("--count: {e}"))?;
            }
            _ => {
                return Err(
                    format!("unknown argument {a:?} (--mode inline|syscall, --count N)").into(),
                )
            }
        }
    }
    let cfg = UmadConfig {
        mode,
        agents: vec![AgentSpec::sa()],
        ..UmadConfig::default()
    };
    let mut port = UmadPort::open(&cfg)?;
    port.set_issm(true)?;
    eprintln!(
        "sa_echo: answering SubnAdm requests on {} port {}",
        port.device().ca,
        port.device().port
    );
    let mut buf = vec![0u8; port.max_recv_len()];
    let mut answered = 0u64;
    while answered < count {
        let (meta, len) = match port.recv_wait(&mut buf, Duration::from_secs(1)) {
            Ok(Some(r)) => r,
            Ok(None) | Err(PortError::BadLength { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        let Some(req) = buf.get(..len.min(MAD_LEN)).filter(|m| m.len() == MAD_LEN) else {
            continue;
        };
        if req[1] != MgmtClass::SUBN_ADM.0 || req[3] & 0x80 != 0 {
            continue;
        }
        let mut resp = [0u8; MAD_LEN];
        resp.copy_from_slice(req);
        resp[3] |= 0x80;
        resp[4..6].fill(0); // status
        resp[24..36].fill(0); // RMPP header: a single MAD
        port.send(&meta.reply(), &resp)?;
        answered += 1;
    }
    eprintln!("sa_echo: {answered} answered");
    Ok(())
}

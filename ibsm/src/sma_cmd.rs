//! `ibsm sma --device SPEC`: the host SMA for a switch ASIC without a firmware agent — opens
//! the RA-1 device through VFIO (`0000:BB:DD.F`) or vfio-user (`vfio-user:SOCKET`), brings it
//! up and runs `sma::Agent` over the QP0 rings until the device goes away or the time limit.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use hca_driver::{backend, DriverConfig, DriverError, Hca, HostSma, IrqMode};
use ibmad::Time;

const USAGE: &str = "usage: ibsm sma --device (vfio-user:SOCKET | 0000:BB:DD.F) [--desc TEXT] [--busy-poll] [--time-limit SECONDS]\n";

/// Entry point (arguments after `sma`).
pub fn main(args: &[String]) -> ExitCode {
    let mut device = None;
    let mut desc = String::from("ibsm host SMA");
    let mut mode = IrqMode::Interrupt;
    let mut limit: Option<Duration> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--device" => device = it.next().cloned(),
            "--desc" => match it.next() {
                Some(d) => desc = d.clone(),
                None => return usage("--desc needs TEXT"),
            },
            "--busy-poll" => mode = IrqMode::BusyPoll,
            "--time-limit" => match it.next().and_then(|v| v.parse::<f64>().ok()) {
                Some(s) if s > 0.0 && s.is_finite() => limit = Some(Duration::from_secs_f64(s)),
                _ => return usage("--time-limit needs a positive number of seconds"),
            },
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unexpected argument {other:?}")),
        }
    }
    let Some(device) = device else {
        return usage("--device is required");
    };
    let be = match backend::open(&device) {
        Ok(b) => b,
        Err(e) => return fail(format!("{device}: {}", chain(&e))),
    };
    let cfg = DriverConfig {
        mode,
        ..DriverConfig::default()
    };
    let hca = match Hca::open(be.as_ref(), cfg) {
        Ok(h) => h,
        Err(e) => return fail(format!("{}: bring-up failed: {}", be.describe(), chain(&e))),
    };
    let f = *hca.facts();
    let start = Instant::now();
    let now = || Time(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    let mut host = match HostSma::new(hca, &desc, now()) {
        Ok(h) => h,
        Err(e) => return fail(format!("{}: {}", be.describe(), chain(&e))),
    };
    println!(
        "ibsm sma: {} up: NodeGUID {:#018x}, {} ports, RA-1 {}.{}",
        be.describe(),
        f.node_guid,
        f.num_ports,
        f.version.0,
        f.version.1
    );
    let code = loop {
        if limit.is_some_and(|l| start.elapsed() >= l) {
            break ExitCode::SUCCESS;
        }
        if let Err(e) = host.wait(Duration::from_millis(5)) {
            break report(e);
        }
        if let Err(e) = host.poll(now()) {
            break report(e);
        }
    };
    let s = host.stats();
    let a = host.agent().stats();
    println!(
        "ibsm sma: received {} SMPs, sent {}, answered {}, traps {}, port events {}",
        s.received, s.sent, a.answered, a.traps_sent, s.port_events
    );
    code
}

/// The error and its sources, `: `-separated (the errno is at the end of a vfio error).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        out.push_str(&format!(": {s}"));
        src = s.source();
    }
    out
}

fn report(e: DriverError) -> ExitCode {
    // A vfio-user peer that went away ends the SMA normally.
    let chain = chain(&e);
    if chain.contains("ECONNRESET") || chain.contains("EPIPE") || chain.contains("closed") {
        println!("ibsm sma: device closed ({chain})");
        return ExitCode::SUCCESS;
    }
    fail(chain)
}

fn usage(msg: &str) -> ExitCode {
    eprint!("ibsm sma: {msg}\n{USAGE}");
    ExitCode::from(2)
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("ibsm sma: {msg}");
    ExitCode::from(1)
}

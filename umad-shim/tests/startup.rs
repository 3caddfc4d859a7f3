//! Start-up of `libibsm_umad.so`: every way attaching to the simulator can fail ends in a clear
//! message on stderr within a bounded time, and the process is not killed (its own error path
//! runs): no simulator (after `IBSM_UMAD_CONNECT_TIMEOUT`), a `SIM_HOST` naming no node, an SM
//! client already on the node, all ten client slots taken.
//!
//! Skipped loudly without ibsim / infiniband-diags, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::{child_cmd, client, opensm, peers, run_bounded, Proc, ROLE};
use umad::testutil::{IbsimGuard, TempDir};

#[test]
fn no_simulator_is_a_clear_error_after_a_bounded_wait() {
    if !peers("shim startup: no simulator", &["ibstat"]) {
        return;
    }
    let dir = TempDir::new("nosim").unwrap();
    let name = format!("nosim{}", std::process::id());
    let mut c = std::process::Command::new("ibstat");
    c.current_dir(dir.path())
        .env("LD_PRELOAD", common::shim())
        .env("IBSIM_SOCKNAME", &name)
        .env("IBSM_UMAD_CONNECT_TIMEOUT", "1");
    let (out, in_time, took) = run_bounded(c, Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(in_time, "ibstat hung without a simulator:\n{err}");
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("no simulator at IBSIM_SOCKNAME={name}")),
        "{err}"
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(10),
        "waited {took:?} for a 1 s connect timeout"
    );
}

#[test]
fn a_bad_sim_host_and_a_second_sm_are_named() {
    if !peers("shim startup: bad SIM_HOST", &["ibstat", "opensm"]) {
        return;
    }
    let sim = IbsimGuard::start(&common::net_2sw4hca()).unwrap();
    let dir = TempDir::new("badhost").unwrap();
    let (out, in_time, _) = run_bounded(
        client(&sim, "ibstat", "nosuchnode", dir.path()),
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(in_time && !out.status.success(), "{err}");
    assert!(
        err.contains("SIM_HOST=nosuchnode names no node of the fabric"),
        "{err}"
    );
    // ibsim is fine and the next client attaches.
    let (out, in_time, _) = run_bounded(
        client(&sim, "ibstat", "Hca1", dir.path()),
        Duration::from_secs(20),
    );
    let text = common::expect_ok("ibstat on Hca1", &out, in_time);
    assert!(text.contains("CA 'ibsim0'"), "{text}");
    // With an SM on Hca1, a second client asking to be SM there at CONNECT is refused.
    let (_sm, _) = opensm(&sim, "Hca1", dir.path(), &[]);
    let mut c = client(&sim, "ibstat", "Hca1", dir.path());
    c.env("SIM_SET_ISSM", "1");
    let (out, in_time, _) = run_bounded(c, Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(in_time && !out.status.success(), "{err}");
    assert!(
        err.contains("SIM_SET_ISSM is set but Hca1 already has an SM client"),
        "{err}"
    );
}

#[test]
fn full_client_slots_are_named() {
    if !peers("shim startup: slots full", &["ibstat"]) {
        return;
    }
    let sim = IbsimGuard::start(&common::net_2sw4hca()).unwrap();
    let dir = TempDir::new("slots").unwrap();
    let mut holders = Vec::new();
    for _ in 0..10 {
        let mut c = child_cmd(&sim, "hold", "Hca2", dir.path(), &[]);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut p = Proc(c.spawn().unwrap());
        let out = p.0.stdout.take().unwrap();
        let mut line = String::new();
        let mut r = BufReader::new(out);
        while !line.contains("HOLDING") {
            line.clear();
            assert!(r.read_line(&mut line).unwrap() > 0, "holder exited early");
        }
        holders.push(p);
    }
    let (out, in_time, _) = run_bounded(
        client(&sim, "ibstat", "Hca1", dir.path()),
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(in_time && !out.status.success(), "{err}");
    assert!(err.contains("all 10 client slots are taken"), "{err}");
    drop(holders);
}

/// Child roles (run only as a child of the tests above).
#[test]
#[ignore = "child process of the tests in this file"]
fn child() {
    match std::env::var(ROLE).as_deref() {
        Ok("hold") => {
            // Attach (reading the emulated sysfs connects), then hold the slot until stdin
            // closes or the parent kills us.
            let cas: Vec<_> = std::fs::read_dir("/sys/class/infiniband")
                .unwrap()
                .collect();
            assert_eq!(cas.len(), 1);
            println!("HOLDING");
            let mut s = String::new();
            let _ = std::io::stdin().read_line(&mut s);
        }
        other => eprintln!("no role ({other:?}): nothing to do"),
    }
}

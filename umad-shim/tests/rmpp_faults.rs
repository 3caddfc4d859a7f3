//! RMPP under faults, between stock OpenSM (the SA, on Hca1) and stock `saquery` (on Hca2), both
//! under `libibsm_umad.so` on stock ibsim, with the shim's fault injection
//! (`IBSM_UMAD_FAULTS`) on one side and its protocol trace (`IBSM_UMAD_DEBUG`) on the other:
//!
//! * OpenSM's shim drops the first transmission of DATA segment 2 of every transfer: the
//!   six-record NodeRecord answer (four segments) still arrives whole, after one ACK timeout
//!   (2 s, OpenSM sends responses with `timeout_ms` 0) and a retransmission;
//! * saquery's shim never acknowledges: OpenSM's shim retransmits until its retries (OpenSM's
//!   default 3) are spent, 4 × 2 s, then sends ABORT (status TMR) and reports the send failed
//!   to OpenSM; saquery's request times out with an error, not a hang; OpenSM keeps serving.
//!
//! Skipped loudly without ibsim / opensm / infiniband-diags, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{client, opensm, peers, run_bounded};
use umad::testutil::{IbsimGuard, TempDir};

/// Top-level record headers ("NodeRecord dump:") in saquery's output.
fn records(text: &str, what: &str) -> usize {
    text.lines().filter(|l| l.starts_with(what)).count()
}

fn wait_for(path: &Path, needle: &str, limit: Duration) -> String {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) || t0.elapsed() > limit {
            return text;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_lost_segment_is_retransmitted_and_the_answer_is_complete() {
    if !peers("shim rmpp lost segment", &["opensm", "saquery"]) {
        return;
    }
    let sim = IbsimGuard::start(&common::net_2sw4hca()).unwrap();
    let dir = TempDir::new("lostseg").unwrap();
    let (_sm, _) = opensm(
        &sim,
        "Hca1",
        dir.path(),
        &[
            ("IBSM_UMAD_FAULTS", "drop-data-seg=2"),
            ("IBSM_UMAD_DEBUG", "1"),
        ],
    );
    let mut q = client(&sim, "saquery", "Hca2", dir.path());
    q.args(["-t", "5000"]);
    let (out, in_time, took) = run_bounded(q, Duration::from_secs(30));
    let text = common::expect_ok("saquery", &out, in_time);
    assert_eq!(records(&text, "NodeRecord dump:"), 6, "{text}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(5),
        "one 2 s ACK timeout expected, took {took:?}"
    );
    let trace = std::fs::read_to_string(dir.path().join("opensm.stderr")).unwrap();
    assert!(trace.contains("fault: dropped DATA segment 2"), "{trace}");
    assert!(
        trace.contains("ACK timeout, retransmit after segment 1"),
        "{trace}"
    );
}

#[test]
fn a_receiver_that_stops_acking_gets_an_abort_and_the_client_an_error() {
    if !peers("shim rmpp no acks", &["opensm", "saquery"]) {
        return;
    }
    let sim = IbsimGuard::start(&common::net_2sw4hca()).unwrap();
    let dir = TempDir::new("noack").unwrap();
    let (_sm, _) = opensm(&sim, "Hca1", dir.path(), &[("IBSM_UMAD_DEBUG", "1")]);
    let t0 = Instant::now();
    let mut q = client(&sim, "saquery", "Hca2", dir.path());
    q.args(["-t", "3000"]).env("IBSM_UMAD_FAULTS", "max-acks=0");
    let (out, in_time, took) = run_bounded(q, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(in_time, "saquery hung:\n{err}");
    assert!(
        !out.status.success(),
        "saquery succeeded without acknowledging:\n{err}"
    );
    assert!(took < Duration::from_secs(10), "saquery took {took:?}");
    let trace = wait_for(
        &dir.path().join("opensm.stderr"),
        "no ACK after the retries, ABORT (TMR)",
        Duration::from_secs(20),
    );
    assert!(
        trace.contains("no ACK after the retries, ABORT (TMR)"),
        "OpenSM's shim did not give up:\n{trace}"
    );
    assert!(trace.contains("reported with status 110"), "{trace}");
    let gave_up = t0.elapsed();
    assert!(
        gave_up >= Duration::from_secs(8),
        "4 ACK windows of 2 s expected, gave up after {gave_up:?}"
    );
    // OpenSM still serves.
    let (out, in_time, _) = run_bounded(
        client(&sim, "saquery", "Hca3", dir.path()),
        Duration::from_secs(30),
    );
    let text = common::expect_ok("saquery after the abort", &out, in_time);
    assert_eq!(records(&text, "NodeRecord dump:"), 6, "{text}");
}

//! Link changes on stock ibsim with `ibsm run` as the SM (issue 12, "Against real peers"):
//! ibsim's console cuts and restores a spine link (`Unlink "sw"[p]`, `ReLink`) and all links
//! of a switch (`Unlink "sw"`, `ReLink "sw"`, ibsim's node down/up), and `ibportstate`
//! disables and enables a switch port (ibsim sends no trap for that: the light sweep finds it).
//! After each change and the sweep it causes, stock `ibnetdiscover` and `dump_fts` read the
//! fabric and its tables back, the topology has the links it must have, and `ibsm verify`
//! judges the tables: every CA reaches every CA, no loop, no credit loop.
//!
//! Skipped loudly without ibsim / infiniband-diags, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabric_sim::topo::Topology;
use umad::testutil::{peers_or_skip, IbsimGuard, TempDir};

mod daemon_common;
use daemon_common::{wait_for, Daemon, IBSM};

/// Heavy sweeps the daemon's log reports as done.
fn heavy_sweeps(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("-> heavy sweep ") && l.contains(" done in "))
        .count()
}

/// Waits until a heavy sweep after `before` has finished and no other followed for 1.5 s.
fn settled_after(log: &Path, before: usize, what: &str) {
    wait_for(
        &format!("a heavy sweep after {what}"),
        Duration::from_secs(30),
        || (heavy_sweeps(log) > before).then_some(String::new()),
    );
    let mut n = heavy_sweeps(log);
    let mut quiet = Instant::now();
    while quiet.elapsed() < Duration::from_millis(1500) {
        std::thread::sleep(Duration::from_millis(100));
        let m = heavy_sweeps(log);
        if m != n {
            (n, quiet) = (m, Instant::now());
        }
    }
}

/// The fabric as `ibnetdiscover` sees it and its tables as `dump_fts` reads them, from `host`;
/// `ibsm verify` must pass on them. Returns the number of links found.
fn check(sim: &IbsimGuard, dir: &Path, host: &str, step: &str) -> usize {
    let run = |prog: &str, out: &str| {
        let o = sim
            .client(prog, dir)
            .env("SIM_HOST", host)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{prog} after {step}: {o:?}");
        let p = dir.join(out);
        std::fs::write(&p, &o.stdout).unwrap();
        p
    };
    let disc = run("ibnetdiscover", "disc.txt");
    let fts = run("dump_fts", "fts.txt");
    let v = Command::new(IBSM)
        .args(["verify", "--topology"])
        .arg(&disc)
        .arg("--lfts")
        .arg(&fts)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&v.stdout);
    assert!(
        v.status.success() && report.starts_with("verify: PASSED"),
        "tables after {step}:\n{report}{}",
        String::from_utf8_lossy(&v.stderr)
    );
    let text = std::fs::read_to_string(&disc).unwrap();
    Topology::parse_ibnetdiscover(&text)
        .unwrap_or_else(|e| panic!("ibnetdiscover after {step}: {e}"))
        .num_links()
}

#[test]
fn tables_are_right_again_after_every_link_change() {
    let test = "tables_are_right_again_after_every_link_change";
    if !peers_or_skip(test) {
        return;
    }
    let topo = Topology::generate("fat-tree:3,4").unwrap();
    let links = topo.num_links();
    let dir = TempDir::new("links").unwrap();
    let net = dir.path().join("fabric.net");
    std::fs::write(&net, topo.to_net()).unwrap();
    let mut sim = IbsimGuard::start_with_console(&net).unwrap();
    let (log, conf) = (dir.path().join("ibsm.log"), dir.path().join("ibsm.conf"));
    // A light sweep every second, so a port disabled without a trap is found quickly.
    std::fs::write(&conf, "sweep_interval 1\nforce_log_flush TRUE\n").unwrap();
    let child = sim
        .client(IBSM, dir.path())
        .env("SIM_HOST", "h-0-0-0")
        .env("OSM_CACHE_DIR", dir.path())
        .args(["run", "-F"])
        .arg(&conf)
        .arg("-f")
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _daemon = Daemon(Some(child));
    wait_for("SUBNET UP", Duration::from_secs(60), || {
        (heavy_sweeps(&log) > 0).then_some(String::new())
    });
    // The scans run from the last CA, far from the SM (on the first one).
    let host = "h-3-1-1";
    assert_eq!(check(&sim, dir.path(), host, "bring-up"), links);

    // (change, what it does to the link count).
    let console: [(&str, usize); 4] = [
        ("Unlink \"core-0-0\"[1]", links - 1),
        ("ReLink \"core-0-0\"[1]", links),
        ("Unlink \"agg-1-0\"", links - 4),
        ("ReLink \"agg-1-0\"", links),
    ];
    for (cmd, want) in console {
        let before = heavy_sweeps(&log);
        sim.console(cmd).unwrap();
        settled_after(&log, before, cmd);
        assert_eq!(
            check(&sim, dir.path(), host, cmd),
            want,
            "links after {cmd}"
        );
    }
    // edge-0-0's uplink port 3, from the CA beside the SM (DR 0,1 is edge-0-0). ibsim changes
    // only that side: disabled, the port still reports LinkState Active (its peer LinkUp), and
    // enabled it stays Polling — ibsim trains no link — so the link stays down; each change
    // must still end in a sweep that succeeds (a failed sweep is not counted as done).
    for (state, want) in [("disable", links - 1), ("enable", links - 1)] {
        let before = heavy_sweeps(&log);
        let o = sim
            .client("ibportstate", dir.path())
            .env("SIM_HOST", "h-0-0-1")
            .args(["-D", "0,1", "3", state])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "ibportstate {state}: {o:?}");
        let what = format!("ibportstate 3 {state}");
        settled_after(&log, before, &what);
        assert_eq!(
            check(&sim, dir.path(), host, &what),
            want,
            "links after {what}"
        );
    }
}

//! GMPs against `ibsm run` under ibsim's shim (issue 9), and under ours (`umad::both_shims!`).
//!
//! ibsim hands every request it does not answer itself (everything but SMPs and PerfMgt) to
//! the SM's process on the destination port, and the shim's receiver dereferences a null
//! agent for a class nobody registered there: before the daemon registered SubnAdm, one
//! `saquery` killed `ibsm run` with SIGSEGV. Now the daemon registers the SA class agent and
//! its SA answers:
//!
//! * `saquery NR` (GetTable NodeRecord) returns the NodeRecord of every end port, LIDs and
//!   descriptions as the fabric has them — all four through `libibsm_umad.so` (RMPP), the first
//!   MAD's worth through ibsim's shim (one 256-byte MAD, no RMPP);
//! * `saquery PR` (GetTable PathRecord) returns every ordered pair of end ports (the first
//!   MAD's worth through ibsim's shim);
//! * `saquery -c` returns the SA's ClassPortInfo (class version 2);
//! * `osmtest -f c` finishes (an answer to every query, not a timeout);
//! * `ibsm run` is still running afterwards, still answers SMInfo (`sminfo`), and is stopped
//!   by its PID.
//!
//! Without ibsim, the shim, infiniband-diags or opensm's osmtest the test prints "SKIPPED: …"
//! and passes, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may unwrap (team rule)

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use umad::both_shims;
use umad::testutil::{
    peers_or_skip, report_skip, require_peers, wait_bounded, IbsimGuard, TempDir,
};

const TOOLS: [&str; 3] = ["saquery", "osmtest", "sminfo"];

fn peers(test: &str) -> bool {
    if !peers_or_skip(test) {
        return false;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for t in TOOLS {
        if !std::env::split_paths(&path).any(|p| p.join(t).is_file()) {
            let why = format!("{t} not installed (apt-get install infiniband-diags opensm)");
            assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
            report_skip(test, &why);
            return false;
        }
    }
    true
}

/// Runs a shim client to completion, at most `limit` (killed by PID after that); returns its
/// output, whether it finished in time, and how long it took.
fn run_bounded(mut cmd: Command, limit: Duration) -> (Output, bool, Duration) {
    let t0 = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, in_time) = wait_bounded(child, limit).unwrap();
    (out, in_time, t0.elapsed())
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Stops `ibsm run` (by PID) when dropped, also when an assertion fails.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn net_2sw2path() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric-sim/testdata/ibsim-net-examples/net.2sw2path");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

both_shims! {
    fn sa_requests_to_an_ibsm_master_get_an_error_status_and_ibsm_keeps_running() {
        let test = "sa_requests_to_an_ibsm_master_get_an_error_status_and_ibsm_keeps_running";
        if !peers(test) {
            return;
        }
        let sim = IbsimGuard::start_text(&net_2sw2path(), &[]).unwrap();
        let dir = TempDir::new("gmp").unwrap();
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let log = dir.path().join("ibsm.log");
        let mut daemon = Daemon(
            sim.client(env!("CARGO_BIN_EXE_ibsm"), dir.path())
                .args(["run", "-f"])
                .arg(&log)
                .env("OSM_CACHE_DIR", &cache)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let t0 = Instant::now();
        loop {
            let l = std::fs::read_to_string(&log).unwrap_or_default();
            if l.contains("SUBNET UP") {
                break;
            }
            assert!(
                daemon.0.try_wait().unwrap().is_none(),
                "ibsm run exited before SUBNET UP\nlog:\n{l}"
            );
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "no SUBNET UP in 60 s\nlog:\n{l}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // Clients on the other CA (the daemon runs on the first one, Hca1).
        let client = |prog: &str| {
            let mut c = sim.client(prog, dir.path());
            c.env("SIM_HOST", "Hca2");
            c
        };

        let mut c = client("saquery");
        c.arg("NR");
        let (out, in_time, _) = run_bounded(c, Duration::from_secs(30));
        let t = text(&out);
        assert!(in_time && out.status.success(), "saquery NR failed\n{t}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let field = |name: &str| -> Vec<String> {
            stdout
                .lines()
                .filter_map(|l| l.trim().strip_prefix(name))
                .map(|v| v.trim_start_matches('.').to_string())
                .collect()
        };
        let (lids, descs) = (field("lid"), field("NodeDescription"));
        // The daemon is the SM on ibsim's first node (Switch1): LID 1 first.
        if umad::testutil::current_shim() == umad::testutil::Shim::Ibsm {
            // Every end port (one port of each HCA is cabled), in LID order.
            assert_eq!(lids, ["1", "2", "3", "4"], "{t}");
            let mut d = descs.clone();
            d.sort();
            assert_eq!(d, ["Hca1", "Hca2", "Switch1", "Switch2"], "{t}");
        } else {
            // One MAD: one 108-byte NodeRecord.
            assert_eq!((lids, descs), (vec!["1".to_string()], vec!["Switch1".to_string()]), "{t}");
        }

        // PathRecords: every ordered pair of the 4 end ports through our shim (RMPP); the
        // first MAD's worth (3 records of 64 bytes) through ibsim's.
        let mut c = client("saquery");
        c.arg("PR");
        let (out, in_time, _) = run_bounded(c, Duration::from_secs(30));
        let t = text(&out);
        assert!(in_time && out.status.success(), "saquery PR failed\n{t}");
        let n = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("PathRecord dump:"))
            .count();
        let want = if umad::testutil::current_shim() == umad::testutil::Shim::Ibsm {
            16
        } else {
            3
        };
        assert_eq!(n, want, "saquery PR\n{t}");

        // ClassPortInfo: the SA's.
        let (out, in_time, _) = run_bounded(
            {
                let mut c = client("saquery");
                c.arg("-c");
                c
            },
            Duration::from_secs(30),
        );
        let t = text(&out);
        assert!(in_time && out.status.success(), "saquery -c failed\n{t}");
        assert!(t.contains("Class version............2"), "{t}");

        let inv = dir.path().join("inventory.dat");
        let mut c = client("osmtest");
        c.arg("-f").arg("c").arg("-i").arg(&inv);
        let (out, in_time, _) = run_bounded(c, Duration::from_secs(60));
        let t = text(&out);
        assert!(in_time, "osmtest -f c hung\n{t}");
        assert!(
            daemon.0.try_wait().unwrap().is_none(),
            "ibsm died on osmtest -f c\n{t}"
        );

        // Still the master: answers SMInfo.
        let (out, in_time, _) = run_bounded(client("sminfo"), Duration::from_secs(30));
        let t = text(&out);
        assert!(in_time && out.status.success(), "sminfo failed\n{t}");
        assert!(t.contains("state 3"), "ibsm is not MASTER any more\n{t}");
        assert!(daemon.0.try_wait().unwrap().is_none(), "ibsm died");
        drop(daemon);
        sim.stop();
    }
}

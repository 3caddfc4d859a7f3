//! Stock `osmtest` against ibsm as master SM and SA (issue 13, "Done when"): `ibsm run` on the
//! first CA of a simulated fabric under `libibsm_umad.so` (RMPP and timeouts as the kernel
//! does them), `osmtest` on the second CA, on stock `ibsim` and on `ibsm sim serve`.
//!
//! [`FLOWS`] is the list of osmtest flows, run in its order on one bring-up (`-f c` writes the
//! inventory the validating flows read): a flow is one line. Each flow must exit 0 within its
//! time limit, print its `OSMTEST: TEST "…" PASS` line and no FAIL line, and afterwards ibsm
//! must still be running and still be the master (`sminfo` from the client CA: state 3). Every
//! flow is run even when an earlier one failed; the test fails listing every failed flow.
//!
//! Fabrics are small generated ones (CI runs every case; each case takes well under a minute).
//!
//! Skipped loudly without ibsim / opensm's osmtest / infiniband-diags, unless
//! `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod daemon_common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use daemon_common::{Daemon, IBSM};
use fabric_sim::topo::Topology;
use umad::testutil::{
    peers_or_skip, report_skip, require_peers, set_current_shim, wait_bounded, IbsimGuard, Shim,
    TempDir,
};

/// The osmtest flows, in the order they run: (`osmtest -f FLAG`, time limit in seconds, what
/// it checks). One line per flow.
const FLOWS: &[(&str, u64, &str)] = &[
    ("c", 30, "inventory: NR, PIR, PR, LR"),
    ("s", 40, "ServiceRecords: register, lease, query, delete"),
    (
        "m",
        40,
        "MCMemberRecords: IPoIB broadcast group, join rules, create, leave",
    ),
];

/// Which simulator serves the fabric.
#[derive(Clone, Copy, Debug)]
enum Server {
    /// Stock `ibsim`.
    Ibsim,
    /// `ibsm sim serve`.
    IbsmServe,
}

/// `(name, N)` of the `Ca`/`Hca` lines of a .net text: the N-th CA's node name.
fn ca_name(net: &str, n: usize) -> String {
    net.lines()
        .filter(|l| l.starts_with("Hca") || l.starts_with("Ca"))
        .filter_map(|l| l.split('"').nth(1))
        .nth(n)
        .unwrap_or_else(|| panic!("the topology has fewer than {} CAs", n + 1))
        .to_string()
}

fn have(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs every flow of [`FLOWS`] against ibsm master on the fabric `spec` served by `server`.
fn run(spec: &str, server: Server) {
    let test = format!("osmtest_master {spec} on {server:?}");
    set_current_shim(Shim::Ibsm);
    if !peers_or_skip(&test) {
        return;
    }
    for prog in ["osmtest", "sminfo"] {
        if !have(prog) {
            let why = format!("{prog} not installed (apt-get install opensm infiniband-diags)");
            assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
            report_skip(&test, &why);
            return;
        }
    }
    let dir = TempDir::new("osmtest").unwrap();
    let net = Topology::generate(spec).unwrap().to_net();
    let net_file = dir.path().join("fabric.net");
    std::fs::write(&net_file, &net).unwrap();
    let (sm_host, cl_host) = (ca_name(&net, 0), ca_name(&net, 1));
    let sim = match server {
        Server::Ibsim => IbsimGuard::start(&net_file),
        Server::IbsmServe => IbsimGuard::start_ibsm_serve(Path::new(IBSM), &net_file),
    }
    .unwrap();

    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let log = dir.path().join("ibsm.log");
    let mut daemon = Daemon(Some(
        sim.client(IBSM, dir.path())
            .args(["run", "-f"])
            .arg(&log)
            .arg("--ctl-socket")
            .arg(dir.path().join("ctl.sock"))
            .env("OSM_CACHE_DIR", &cache)
            .env("SIM_HOST", &sm_host)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    ));
    let ibsm_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut alive = || daemon.0.as_mut().unwrap().try_wait().unwrap().is_none();
    let t0 = Instant::now();
    while !ibsm_log().contains("SUBNET UP") {
        assert!(
            alive(),
            "{test}: ibsm run exited before SUBNET UP\n{}",
            ibsm_log()
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{test}: no SUBNET UP in 60 s\n{}",
            ibsm_log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let client = |prog: &str| {
        let mut c = sim.client(prog, dir.path());
        c.env("SIM_HOST", &cl_host)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let inventory = dir.path().join("inventory.dat");
    let mut failed = Vec::new();
    for &(flag, limit_s, what) in FLOWS {
        let t = Instant::now();
        let child = client("osmtest")
            .args(["-f", flag, "-t", "2000", "-i"])
            .arg(&inventory)
            .spawn()
            .unwrap();
        let (out, in_time) = wait_bounded(child, Duration::from_secs(limit_s)).unwrap();
        let took = t.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let verdicts: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with("OSMTEST: TEST"))
            .collect();
        let passed = in_time
            && out.status.success()
            && !verdicts.is_empty()
            && verdicts.iter().all(|l| l.ends_with(" PASS"));
        eprintln!(
            "{test}: osmtest -f {} ({}): {} in {took:.1?} {verdicts:?}",
            flag,
            what,
            if passed { "PASS" } else { "FAIL" }
        );
        if !passed {
            let errs: Vec<&str> = stdout
                .lines()
                .filter(|l| l.contains("ERR"))
                .take(40)
                .collect();
            failed.push(format!(
                "osmtest -f {} ({}): {}, {:?} in time: {in_time}; ERR lines (first 40):\n{}\n{}",
                flag,
                what,
                out.status,
                verdicts,
                errs.join("\n"),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        // ibsm survived the flow and is still the master.
        assert!(
            alive(),
            "{test}: ibsm died during osmtest -f {}\n{}",
            flag,
            ibsm_log()
        );
        let (out, in_time) =
            wait_bounded(client("sminfo").spawn().unwrap(), Duration::from_secs(30)).unwrap();
        let t = text(&out);
        assert!(
            in_time && out.status.success() && t.contains("state 3"),
            "{test}: after osmtest -f {} ibsm is not the master: {t}",
            flag
        );
    }
    assert!(
        failed.is_empty(),
        "{test}: {} of {} flows failed:\n{}",
        failed.len(),
        FLOWS.len(),
        failed.join("\n\n")
    );
    drop(daemon);
    sim.stop();
}

#[test]
fn fat_tree_on_ibsim() {
    run("fat-tree:2,4", Server::Ibsim);
}

#[test]
fn fat_tree_on_ibsm_sim_serve() {
    run("fat-tree:2,4", Server::IbsmServe);
}

#[test]
fn random_graph_with_dual_port_cas_on_ibsm_sim_serve() {
    run("random:4,4,2,7,ports=8", Server::IbsmServe);
}

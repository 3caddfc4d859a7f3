//! Link changes on stock ibsim with `ibsm run` as the SM (issue 12, "Against real peers"):
//! ibsim's console cuts and restores a spine link (`Unlink "sw"[p]`, `ReLink`) and all links
//! of a switch (`Unlink "sw"`, `ReLink "sw"`, ibsim's node down/up), and `ibportstate`
//! disables and enables a switch port (ibsim sends no trap for that: the light sweep finds it).
//! After each change and the sweep it causes, stock `ibnetdiscover` and `dump_fts` read the
//! fabric and its tables back, the topology has the links it must have, and `ibsm verify`
//! judges the tables: every CA reaches every CA, no loop, no credit loop.
//!
//! The same with the VL engines (issue 14) on a torus: torus-2QoS, lash, dfsssp and nue, each
//! with a link and a switch lost and restored. After each re-route the tables the fabric holds
//! must pass `ibsm verify --vl` with the path SLs the SA then grants (`saquery -p`, under our
//! shim for RMPP) and the daemon's `opensm-sl2vl.dump`; torus-2QoS must also grant every path
//! the SL it granted at bring-up. And a lost master: a standby running lash takes over and
//! grants every path the SL the old master granted.
//!
//! Skipped loudly without ibsim / infiniband-diags, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabric_sim::topo::gen::Grid;
use fabric_sim::topo::Topology;
use ibmad::Lid;
use umad::testutil::{peers_or_skip, set_current_shim, IbsimGuard, Shim, TempDir};

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

/// A test under our shim (`saquery -p`'s multi-record answers need RMPP) on the generated
/// fabric `spec`: the topology, a temp dir named after `tag` with a `dumps` folder, and a
/// fresh ibsim of it (with a console when `console`). `None` when the peers are missing and
/// the test is skipped.
fn shim_fabric(
    test: &str,
    spec: &str,
    tag: &str,
    console: bool,
) -> Option<(Topology, TempDir, IbsimGuard)> {
    set_current_shim(Shim::Ibsm);
    if !peers_or_skip(test) {
        return None;
    }
    let topo = Topology::generate(spec).unwrap();
    let dir = TempDir::new(tag).unwrap();
    std::fs::create_dir_all(dir.path().join("dumps")).unwrap();
    let net = dir.path().join("fabric.net");
    std::fs::write(&net, topo.to_net()).unwrap();
    let sim = if console {
        IbsimGuard::start_with_console(&net)
    } else {
        IbsimGuard::start(&net)
    };
    Some((topo, dir, sim.unwrap()))
}

/// `ibsm run -F CONF -f LOG --ctl-socket CWD/ctl.sock ARGS` as a shim client of `sim` on
/// node `host`, in `cwd` (its cache too), its output discarded; the daemon (killed by PID
/// when dropped) and its PID.
fn spawn_ibsm(
    sim: &IbsimGuard,
    (cwd, host): (&Path, &str),
    (conf, log): (&Path, &Path),
    args: &[&OsStr],
) -> (Daemon, String) {
    let child = sim
        .client(IBSM, cwd)
        .env("SIM_HOST", host)
        .env("OSM_CACHE_DIR", cwd)
        .args([OsStr::new("run"), OsStr::new("-F"), conf.as_os_str()])
        .args([
            OsStr::new("-f"),
            log.as_os_str(),
            OsStr::new("--ctl-socket"),
        ])
        .arg(cwd.join("ctl.sock"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    (Daemon(Some(child)), pid)
}

/// SIGHUP to the daemon `pid`, then [`settled_after`] (`what` names the change); its log.
fn sighup(pid: &str, log: &Path, what: &str) -> String {
    let sweeps = heavy_sweeps(log);
    let o = Command::new("kill").args(["-HUP", pid]).output().unwrap();
    assert!(o.status.success(), "kill -HUP: {o:?}");
    settled_after(log, sweeps, what);
    std::fs::read_to_string(log).unwrap()
}

/// Waits (60 s) until the daemon logging to `log` has finished a heavy sweep.
fn wait_up(log: &Path) {
    wait_for("SUBNET UP", Duration::from_secs(60), || {
        (heavy_sweeps(log) > 0).then_some(String::new())
    });
}

/// The fabric as stock `ibnetdiscover` sees it and its tables as `dump_fts` reads them, from
/// `host` after `step`, written to `dir`/disc.txt and `dir`/fts.txt (returned).
fn scan(sim: &IbsimGuard, dir: &Path, host: &str, step: &str) -> (PathBuf, PathBuf) {
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
    (run("ibnetdiscover", "disc.txt"), run("dump_fts", "fts.txt"))
}

/// [`scan`]; `ibsm verify` must pass on what it read. Returns the number of links found.
fn check(sim: &IbsimGuard, dir: &Path, host: &str, step: &str) -> usize {
    let (disc, fts) = scan(sim, dir, host, step);
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
    let (_daemon, _) = spawn_ibsm(&sim, (dir.path(), "h-0-0-0"), (&conf, &log), &[]);
    wait_up(&log);
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

/// The path SLs the running SA grants, from `saquery -p` on `host` (written to `out`).
fn granted_sls(sim: &IbsimGuard, dir: &Path, host: &str, out: &str) -> HashMap<(Lid, Lid), u8> {
    let o = sim
        .client("saquery", dir)
        .env("SIM_HOST", host)
        .arg("-p")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "saquery -p ({out}): {o:?}");
    std::fs::write(dir.join(out), &o.stdout).unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    sm::dump::parse_saquery_paths(&text)
        .unwrap_or_else(|e| panic!("saquery -p ({out}): {e}"))
        .pairs
}

/// `ibsm verify --vl` of the running SM's tables as the fabric holds them after `step`: the
/// topology from `ibnetdiscover`, the LFTs from `dump_fts`, the SL2VL tables from the daemon's
/// `opensm-sl2vl.dump` and the path SLs from `saquery -p` (`pr`). Must pass `engine`'s
/// promise and be acyclic on (link, VL) channels.
fn verify_vl(sim: &IbsimGuard, dir: &Path, engine: &str, host: &str, pr: &str, step: &str) {
    let (disc, fts) = scan(sim, dir, host, step);
    let v = Command::new(IBSM)
        .arg("verify")
        .arg("--topology")
        .arg(disc)
        .arg("--lfts")
        .arg(fts)
        .args(["--vl", "--engine", engine, "--sl2vl"])
        .arg(dir.join("dumps/opensm-sl2vl.dump"))
        .arg("--saquery")
        .arg(dir.join(pr))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&v.stdout);
    assert!(
        v.status.success()
            && report.starts_with("verify: PASSED")
            && report.contains("acyclic (deadlock-free)"),
        "{engine}: tables after {step}:\n{report}{}",
        String::from_utf8_lossy(&v.stderr)
    );
}

/// A VL engine in a running SM (issue 14) on a generated torus on stock ibsim: a link cut and
/// restored, then a switch (and its CA) lost and restored. After each change and its re-route
/// the SA answers for exactly the end ports left, a route has moved off the cut link, and the
/// tables the fabric holds pass the VL-aware check with the SLs the SA now grants and the
/// daemon's SL2VL dump. With `keep_sls` (torus-2QoS's promise) every path SL the SA grants
/// must also be the one it granted at bring-up: an SL is a QoS contract with applications
/// that hold it. Runs under our shim: `saquery -p`'s multi-record answer needs RMPP.
fn vl_engine_through_link_changes(test: &str, engine: &str, spec: &str, keep_sls: bool) {
    let Some((topo, dir, mut sim)) = shim_fabric(test, spec, "links-vl", true) else {
        return;
    };
    // A top LID that is a multiple of 64 would be alone in its LFT block, which stock
    // dump_fts does not read (see `ibsm verify`'s note).
    let ends = topo.num_cas() + topo.num_switches();
    assert_ne!(
        ends % 64,
        0,
        "{spec}: pick a fabric whose top LID dump_fts reads"
    );
    let (log, conf) = (dir.path().join("ibsm.log"), dir.path().join("ibsm.conf"));
    std::fs::write(&conf, "sweep_interval 1\nforce_log_flush TRUE\n").unwrap();
    let routing = format!("{engine},no_fallback");
    let mut args: Vec<&OsStr> = ["-Q", "-R", &routing, "--dump_files_dir", "dumps"]
        .map(OsStr::new)
        .to_vec();
    let tconf = dir.path().join("torus-2QoS.conf");
    if engine == "torus-2QoS" {
        let grid = Grid::of_spec(spec).unwrap().unwrap();
        std::fs::write(&tconf, fabric_sim::topo::subnet::torus_conf(&grid)).unwrap();
        args.extend([OsStr::new("--torus_config"), tconf.as_os_str()]);
    }
    let (_daemon, _) = spawn_ibsm(&sim, (dir.path(), "ca-0-0-0-0"), (&conf, &log), &args);
    wait_up(&log);
    // Queries from the far side of the torus. The SA answers for every ordered pair of end
    // ports, switch port 0 included.
    let host = "ca-2-2-2-0";
    let granted = granted_sls(&sim, dir.path(), host, "pr-up.txt");
    assert_eq!(granted.len(), ends * ends, "saquery -p at bring-up");
    if keep_sls {
        assert!(
            granted.values().any(|&sl| sl != 0),
            "{engine} granted SL 0 to every path"
        );
    }
    verify_vl(&sim, dir.path(), engine, host, "pr-up.txt", "bring-up");
    let tables_up = std::fs::read_to_string(dir.path().join("fts.txt")).unwrap();

    // A link in x, then a whole switch with its CA (two end ports fewer), each restored.
    let changes = [
        ("Unlink \"sw-1-0-0\"[1]", ends),
        ("ReLink \"sw-1-0-0\"[1]", ends),
        ("Unlink \"sw-3-1-2\"", ends - 2),
        ("ReLink \"sw-3-1-2\"", ends),
    ];
    for (i, (cmd, now_ends)) in changes.into_iter().enumerate() {
        let before = heavy_sweeps(&log);
        sim.console(cmd).unwrap();
        settled_after(&log, before, cmd);
        let pr = format!("pr-{i}.txt");
        let now = granted_sls(&sim, dir.path(), host, &pr);
        assert_eq!(now.len(), now_ends * now_ends, "saquery -p after {cmd}");
        for (pair, sl) in now.iter().filter(|_| keep_sls) {
            let was = granted.get(pair).copied();
            assert_eq!(
                Some(*sl),
                was,
                "after {cmd}: path {pair:?} was granted SL {}, now {sl}",
                was.map_or("none".to_string(), |w| w.to_string())
            );
        }
        verify_vl(&sim, dir.path(), engine, host, &pr, cmd);
        if i == 0 {
            let tables = std::fs::read_to_string(dir.path().join("fts.txt")).unwrap();
            assert_ne!(
                tables, tables_up,
                "{engine}: no route moved off the cut link"
            );
        }
    }
}

#[test]
fn torus_2qos_keeps_granted_sls_through_link_changes() {
    vl_engine_through_link_changes(
        "torus_2qos_keeps_granted_sls_through_link_changes",
        "torus-2QoS",
        "torus:5,4,4",
        true,
    );
}

#[test]
fn lash_stays_deadlock_free_through_link_changes() {
    vl_engine_through_link_changes(
        "lash_stays_deadlock_free_through_link_changes",
        "lash",
        "torus:4,4,3",
        false,
    );
}

#[test]
fn dfsssp_stays_deadlock_free_through_link_changes() {
    vl_engine_through_link_changes(
        "dfsssp_stays_deadlock_free_through_link_changes",
        "dfsssp",
        "torus:4,4,3",
        false,
    );
}

#[test]
fn nue_stays_deadlock_free_through_link_changes() {
    vl_engine_through_link_changes(
        "nue_stays_deadlock_free_through_link_changes",
        "nue",
        "torus:4,4,3",
        false,
    );
}

/// A standby ibsm takes over from a lost master (issue 14 with issue 12): both run lash with
/// `-Q` on a 4×4×3 ibsim torus. The lash lanes come from a seeded generator, so the new
/// master must grant every path the SL the old one granted, and the tables the fabric then
/// holds must pass the VL-aware check with those SLs and the new master's SL2VL dump.
#[test]
fn lash_path_sls_survive_a_failover() {
    let test = "lash_path_sls_survive_a_failover";
    let Some((topo, dir, sim)) = shim_fabric(test, "torus:4,4,3", "links-failover", false) else {
        return;
    };
    let conf = dir.path().join("ibsm.conf");
    // A lost master is noticed after 2 polls 0.5 s apart.
    std::fs::write(
        &conf,
        "sweep_interval 1\nforce_log_flush TRUE\nsminfo_polling_timeout 500\npolling_retry_number 2\n",
    )
    .unwrap();
    let start = |name: &str, host: &str, priority: &str| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(d.join("dumps")).unwrap();
        let log = d.join("ibsm.log");
        let args = [
            "-Q",
            "-R",
            "lash,no_fallback",
            "-p",
            priority,
            "--dump_files_dir",
            "dumps",
        ];
        let (daemon, _) = spawn_ibsm(&sim, (&d, host), (&conf, &log), &args.map(OsStr::new));
        (daemon, log)
    };
    let (master, master_log) = start("master", "ca-0-0-0-0", "5");
    wait_up(&master_log);
    let (_standby, standby_log) = start("standby", "ca-3-3-2-0", "1");
    wait_for("the standby", Duration::from_secs(60), || {
        std::fs::read_to_string(&standby_log)
            .unwrap_or_default()
            .contains("Entering STANDBY state")
            .then_some(String::new())
    });
    let host = "ca-2-2-2-0";
    let ends = topo.num_cas() + topo.num_switches();
    let granted = granted_sls(&sim, dir.path(), host, "pr-master.txt");
    assert_eq!(granted.len(), ends * ends, "saquery -p from the master");
    assert!(granted.values().any(|&sl| sl != 0), "lash used one lane");

    drop(master); // killed by PID, and reaped
    wait_for("the standby's takeover", Duration::from_secs(60), || {
        (heavy_sweeps(&standby_log) > 0).then_some(String::new())
    });
    let log = std::fs::read_to_string(&standby_log).unwrap();
    assert!(log.contains("Entering MASTER state"), "{log}");
    let now = granted_sls(&sim, dir.path(), host, "pr-standby.txt");
    assert_eq!(now.len(), granted.len(), "saquery -p from the new master");
    let changed: Vec<_> = granted
        .iter()
        .filter(|(pair, sl)| now.get(pair) != Some(sl))
        .collect();
    assert!(
        changed.is_empty(),
        "the new master grants {} of {} paths another SL, e.g. {:?} (was {}, now {:?})",
        changed.len(),
        granted.len(),
        changed[0].0,
        changed[0].1,
        now.get(changed[0].0)
    );
    std::fs::create_dir_all(dir.path().join("dumps")).unwrap();
    std::fs::copy(
        dir.path().join("standby/dumps/opensm-sl2vl.dump"),
        dir.path().join("dumps/opensm-sl2vl.dump"),
    )
    .unwrap();
    verify_vl(
        &sim,
        dir.path(),
        "lash",
        host,
        "pr-standby.txt",
        "the takeover",
    );
}

/// OpenSM reads torus-2QoS.conf each time it routes; ibsm reads the files its engines name
/// again on SIGHUP and on `ibsm ctl reroute`. Moving the first seed's x dateline must change
/// the SLs the SA grants (the path SL says which datelines a path crosses), and the fabric's
/// tables must then pass the VL-aware check with the new SLs. A second SIGHUP with nothing
/// changed says nothing of the file; the dateline moved back and a reroute give the first
/// SLs back.
#[test]
fn torus_2qos_conf_is_read_again_on_sighup() {
    let test = "torus_2qos_conf_is_read_again_on_sighup";
    let spec = "torus:4,4,3";
    let Some((_, dir, sim)) = shim_fabric(test, spec, "links-sighup", false) else {
        return;
    };
    let tconf = dir.path().join("torus-2QoS.conf");
    let grid = Grid::of_spec(spec).unwrap().unwrap();
    let text = fabric_sim::topo::subnet::torus_conf(&grid);
    std::fs::write(&tconf, &text).unwrap();
    let (log, conf) = (dir.path().join("ibsm.log"), dir.path().join("ibsm.conf"));
    std::fs::write(&conf, "sweep_interval 1\nforce_log_flush TRUE\n").unwrap();
    let mut args = [
        "-Q",
        "-R",
        "torus-2QoS,no_fallback",
        "--dump_files_dir",
        "dumps",
    ]
    .map(OsStr::new)
    .to_vec();
    args.extend([OsStr::new("--torus_config"), tconf.as_os_str()]);
    let (_daemon, pid) = spawn_ibsm(&sim, (dir.path(), "ca-0-0-0-0"), (&conf, &log), &args);
    wait_up(&log);
    let host = "ca-2-2-2-0";
    let before = granted_sls(&sim, dir.path(), host, "pr-before.txt");
    let hup = |what: &str| sighup(&pid, &log, what);

    // The first seed's x dateline one step on.
    let moved = text.replacen("next_seed", "x_dateline 1\nnext_seed", 1);
    assert_ne!(moved, text, "the conf has a second seed");
    std::fs::write(&tconf, &moved).unwrap();
    let text_log = hup("SIGHUP with a new dateline");
    assert!(
        text_log.contains("SIGHUP: torus_config changed: routing afresh with the new contents"),
        "{text_log}"
    );
    let after = granted_sls(&sim, dir.path(), host, "pr-after.txt");
    assert_eq!(after.len(), before.len());
    let moved_sls = after
        .iter()
        .filter(|(k, v)| before.get(k) != Some(v))
        .count();
    assert!(moved_sls > 0, "no path SL changed with the dateline");
    verify_vl(
        &sim,
        dir.path(),
        "torus-2QoS",
        host,
        "pr-after.txt",
        "the new dateline",
    );

    let n = text_log.matches("torus_config changed").count();
    let again = hup("SIGHUP with nothing changed");
    assert_eq!(again.matches("torus_config changed").count(), n, "{again}");

    // `ibsm ctl reroute` routes with the file as it is now too: the dateline back.
    std::fs::write(&tconf, &text).unwrap();
    let sweeps = heavy_sweeps(&log);
    let o = Command::new(IBSM)
        .args(["ctl", "--socket"])
        .arg(dir.path().join("ctl.sock"))
        .arg("reroute")
        .output()
        .unwrap();
    assert!(o.status.success(), "ibsm ctl reroute: {o:?}");
    settled_after(&log, sweeps, "ibsm ctl reroute");
    let text_log = std::fs::read_to_string(&log).unwrap();
    assert!(
        text_log.contains("reroute: torus_config changed: routing afresh with the new contents"),
        "{text_log}"
    );
    let back = granted_sls(&sim, dir.path(), host, "pr-back.txt");
    assert_eq!(back, before, "the old dateline's SLs are not back");
}

/// QoS on SIGHUP, as OpenSM (its `qos` and `qos_*` options can be updated, and it reads the
/// policy file at each heavy sweep): a QoS level's SL changed in qos-policy.conf reaches the
/// PathRecords; a policy that no longer parses is named in the log and the one in use is kept;
/// a changed `qos_vlarb_high` is programmed (VLArbitration Sets) by the sweep that follows.
/// First, a daemon started with a policy that does not parse logs why and runs without it.
#[test]
fn qos_policy_and_options_are_taken_on_sighup() {
    let test = "qos_policy_and_options_are_taken_on_sighup";
    set_current_shim(Shim::Ibsm);
    if !peers_or_skip(test) {
        return;
    }
    let dir = TempDir::new("links-qos-hup").unwrap();
    let net = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric-sim/testdata/ibsim-net-examples/net.2sw2path4hca");
    let policy = dir.path().join("qos-policy.conf");
    let level = |sl: u8| {
        format!(
            "port-groups\n  port-group\n    name: Storage\n    port-name: Hca1/P1\n  end-port-group\n\
             end-port-groups\nqos-levels\n  qos-level\n    name: DEFAULT\n    sl: 0\n\
             end-qos-level\n  qos-level\n    name: StorageQoS\n    sl: {sl}\n  end-qos-level\n\
             end-qos-levels\nqos-match-rules\n  qos-match-rule\n    destination: Storage\n\
             qos-level-name: StorageQoS\n  end-qos-match-rule\nend-qos-match-rules\n"
        )
    };
    let sim = IbsimGuard::start(&net).unwrap();
    let (log, conf) = (dir.path().join("ibsm.log"), dir.path().join("ibsm.conf"));
    let base = "sweep_interval 1\nforce_log_flush TRUE\n";
    std::fs::write(&conf, base).unwrap();
    let start = || {
        let _ = std::fs::remove_file(&log);
        let args = [OsStr::new("-Q"), OsStr::new("-Y"), policy.as_os_str()];
        let (daemon, pid) = spawn_ibsm(&sim, (dir.path(), "Hca2"), (&conf, &log), &args);
        wait_up(&log);
        (pid, daemon)
    };
    // Without a DEFAULT level the policy is refused (OpenSM ERR AC10), and the log says so.
    std::fs::write(&policy, level(3).replace("name: DEFAULT", "name: Other")).unwrap();
    let (pid, mut daemon) = start();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("ERR AC10") && text.contains("running without a QoS policy"),
        "{text}"
    );
    // SIGTERM, so the shim detaches from ibsim before the next daemon takes the same node
    // (after a SIGKILL the next one got no SA requests there).
    let o = Command::new("kill").arg(&pid).output().unwrap();
    assert!(o.status.success(), "kill: {o:?}");
    daemon.0.take().unwrap().wait().unwrap();

    std::fs::write(&policy, level(3)).unwrap();
    let (pid, _daemon) = start();
    // Paths to Hca1's port: 6 end ports (4 CAs, 2 switches) ask for it.
    let to_storage = |name: &str, sl: u8| {
        let sls = granted_sls(&sim, dir.path(), "Hca4", name);
        sls.values().filter(|&&s| s == sl).count()
    };
    assert_eq!(to_storage("pr-0.txt", 3), 6);
    let hup = |what: &str| sighup(&pid, &log, what);

    std::fs::write(&policy, level(4)).unwrap();
    let text = hup("the level's SL changed");
    assert!(text.contains("SIGHUP: QoS configuration changed"), "{text}");
    assert_eq!(to_storage("pr-1.txt", 4), 6);

    std::fs::write(&policy, level(5) + "garbage {\n").unwrap();
    let text = hup("a broken policy");
    assert!(text.contains("the policy in use is kept"), "{text}");
    assert_eq!(
        to_storage("pr-2.txt", 4),
        6,
        "the policy in use was dropped"
    );

    std::fs::write(&policy, level(4)).unwrap();
    std::fs::write(&conf, format!("{base}qos_vlarb_high 0:64,1:64\n")).unwrap();
    let text = hup("qos_vlarb_high changed");
    let last = text
        .lines()
        .filter(|l| l.contains("-> heavy sweep ") && l.contains(" done in "))
        .find(|l| l.contains("VLArb"));
    assert!(
        last.is_some(),
        "no VLArbitration Set after the change:\n{text}"
    );
}

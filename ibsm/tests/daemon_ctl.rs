//! `ibsm run` as a service on an ibsim fabric (under `libumad2sim.so`, then again under
//! `libibsm_umad.so`): readiness through `$NOTIFY_SOCKET` at SUBNET UP, the control socket
//! (`ibsm ctl status | sweep | reroute | loglevel | dump | perfmgr`), SIGHUP (config re-read +
//! heavy sweep), SIGUSR1 (log reopened after a rename, as logrotate does) and SIGTERM (clean
//! exit, socket removed); the `--metrics-listen` endpoint, scraped with `curl` and checked by
//! `promtool check metrics` (Debian `prometheus`), with values that match the fabric.
//!
//! Without ibsim/the shim the test prints "SKIPPED: …" and passes, unless
//! `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may unwrap (team rule)

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ibmad::attr::port_info::cap::IS_SM;
use umad::testutil::{peers_or_skip, IbsimGuard, TempDir};

mod daemon_common;
use daemon_common::*;

fn heavy_sweeps(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("heavy sweeps: "))
        .unwrap()
        .parse()
        .unwrap()
}

/// The CapabilityMask of Switch1's port 0 (where the daemon runs: the first port of the file),
/// read by `smpquery` from Hca2 by directed route (Hca2 → Switch2 → Switch1), so it does not
/// depend on the SM's LIDs.
fn sm_port_capmask(sim: &IbsimGuard, dir: &Path) -> u32 {
    let out = sim
        .client("smpquery", dir)
        .env("SIM_HOST", "Hca2")
        .args(["-D", "portinfo", "0,1,3", "0"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix("CapMask:"))
        .map(|v| v.trim_start_matches('.'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.strip_prefix("0x"))
        .unwrap_or_else(|| panic!("no CapMask in smpquery output: {text}"));
    u32::from_str_radix(hex, 16).unwrap()
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args(["-s", sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -s {sig} {pid}");
}

#[test]
fn daemon_is_a_controllable_service() {
    let test = "daemon_is_a_controllable_service";
    if !peers_or_skip(test) {
        return;
    }
    let net: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric-sim/testdata/ibsim-net-examples/net.2sw2path");
    let sim = IbsimGuard::start(&net).unwrap();
    let dir = TempDir::new("ctl").unwrap();
    let d = dir.path();
    let (sock, log, conf, dumps) = (
        d.join("run/ibsm.sock"),
        d.join("ibsm.log"),
        d.join("ibsm.conf"),
        d.join("dumps"),
    );
    std::fs::write(&conf, "sm_priority 3\nforce_log_flush TRUE\n").unwrap();
    let notify = UnixDatagram::bind(d.join("notify")).unwrap();
    let listen = free_listen_addr();
    notify
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let child = sim
        .client(IBSM, d)
        .args(["run", "-F"])
        .arg(&conf)
        .arg("-f")
        .arg(&log)
        .arg("--ctl-socket")
        .arg(&sock)
        .arg("--dump-dir")
        .arg(&dumps)
        .args(["--metrics-listen", &listen])
        .env("OSM_CACHE_DIR", d)
        .env("NOTIFY_SOCKET", d.join("notify"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut daemon = Daemon(Some(child));
    // READY=1 arrives once the subnet is up.
    let mut buf = [0u8; 512];
    let n = notify.recv(&mut buf).expect("no READY=1 within 60 s");
    let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(
        msg.contains("READY=1") && msg.contains("STATUS=SUBNET UP"),
        "{msg}"
    );
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "control socket mode");

    let status = ctl_ok(&sock, &["status"]);
    assert!(status.contains("(SUBNET UP)"), "{status}");
    assert!(status.contains("SM priority: 3\n"), "{status}");
    assert!(status.contains("nodes: 4 (switches 2, CAs 2)"), "{status}");
    assert!(status.contains("unhealthy ports: none\n"), "{status}");
    let h0 = heavy_sweeps(&status);

    // Metrics: valid exposition, values that match the fabric (2 switches, 2 CAs, 4 links).
    let text = scrape(&listen, &[]);
    // A scraper asking for OpenMetrics (as Prometheus does) gets it, `# EOF` ended.
    let om = scrape(
        &listen,
        &["Accept: application/openmetrics-text; version=1.0.0"],
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE ibsm_sweeps counter\n"), "{om}");
    assert!(
        text.contains("# TYPE ibsm_sweeps_total counter\n"),
        "{text}"
    );
    for want in [
        "ibsm_subnet_up 1\n",
        "ibsm_lids_in_use 4\n",
        "ibsm_nodes{type=\"switch\"} 2\n",
        "ibsm_nodes{type=\"ca\"} 2\n",
        "ibsm_ports{state=\"active\"} 8\n",
        "ibsm_sm_priority 3\n",
        "ibsm_sweeps_total{kind=\"heavy\"} ",
        "ibsm_smps_sent_total ",
        "ibsm_sweep_phase_seconds_bucket{le=",
    ] {
        assert!(text.contains(want), "no {want:?} in\n{text}");
    }
    if have_tool(test, "promtool", "prometheus") {
        promtool_check(&text);
    }

    // sweep heavy / reroute: heavy sweeps happen.
    ctl_ok(&sock, &["sweep", "heavy"]);
    wait_for("a heavy sweep", Duration::from_secs(30), || {
        let s = ctl_ok(&sock, &["status"]);
        (heavy_sweeps(&s) > h0 && s.contains("(SUBNET UP)")).then_some(s)
    });
    let h1 = heavy_sweeps(&ctl_ok(&sock, &["status"]));
    assert!(ctl_ok(&sock, &["reroute"]).contains("rerouting"));
    wait_for("a reroute", Duration::from_secs(30), || {
        let s = ctl_ok(&sock, &["status"]);
        (heavy_sweeps(&s) > h1 && s.contains("(SUBNET UP)")).then_some(s)
    });
    ctl_ok(&sock, &["sweep", "light"]);
    assert_eq!(ctl_ok(&sock, &["loglevel", "0x07"]), "log flags 0x07\n");
    let dump = ctl_ok(&sock, &["dump"]);
    assert!(dump.contains("dump files written"), "{dump}");
    let topo = std::fs::read_to_string(dumps.join("ibnetdiscover.topo")).unwrap();
    assert!(topo.contains("\"Switch2\""), "{topo}");
    // perfmgr FALSE: the performance manager is there but does not sweep.
    let pm = ctl_ok(&sock, &["perfmgr", "status"]);
    assert!(
        pm.contains("perfmgr: disabled") && pm.contains("perfmgr sweeps: 0"),
        "{pm}"
    );
    // Refusals say why.
    let out = ctl(&sock, &["perfmgr", "sideways"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown perfmgr request"));
    let out = ctl(&sock, &["sweep", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
    let out = ctl(&d.join("nothing.sock"), &["status"]);
    assert_eq!(out.status.code(), Some(2));

    // SIGHUP: the config is read again and a heavy sweep follows.
    let h2 = heavy_sweeps(&ctl_ok(&sock, &["status"]));
    std::fs::write(
        &conf,
        "sm_priority 3\nforce_log_flush TRUE\nlog_flags 0x03\n",
    )
    .unwrap();
    signal(pid, "HUP");
    wait_for("the SIGHUP sweep", Duration::from_secs(30), || {
        let s = ctl_ok(&sock, &["status"]);
        (heavy_sweeps(&s) > h2).then_some(s)
    });
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(&format!("SIGHUP: re-read {}", conf.display())),
        "{text}"
    );

    // SIGUSR1 after a rename: a new log file.
    std::fs::rename(&log, d.join("ibsm.log.1")).unwrap();
    signal(pid, "USR1");
    wait_for("the reopened log", Duration::from_secs(10), || {
        let t = std::fs::read_to_string(&log).ok()?;
        t.contains("log file reopened (SIGUSR1)").then_some(t)
    });

    // SIGTERM: a clean exit, the socket gone, IsSM cleared on the SM's port (issue 12: a dead
    // SM must not stay registered, or the next trap goes to it).
    assert_ne!(
        sm_port_capmask(&sim, d) & IS_SM,
        0,
        "IsSM set while running"
    );
    signal(pid, "TERM");
    let mut child = daemon.0.take().unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status}");
    assert!(!sock.exists(), "control socket left behind");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("exiting on SIGTERM"), "{text}");
    // Each heavy sweep logs its own figures (issue 12), the SUBNET UP line the totals (in the
    // log file renamed before SIGUSR1).
    let first = std::fs::read_to_string(d.join("ibsm.log.1")).unwrap();
    assert!(first.contains("heavy sweep 1 done in "), "{first}");
    assert!(first.contains("since start"), "{first}");
    assert_eq!(
        sm_port_capmask(&sim, d) & IS_SM,
        0,
        "IsSM left set after SIGTERM"
    );
}

/// [`daemon_is_a_controllable_service`] with `ibsm run` and its clients under
/// `libibsm_umad.so` instead of ibsim's shim (issue 10: interop tests under both shims).
#[test]
fn daemon_is_a_controllable_service_under_libibsm_umad() {
    umad::testutil::set_current_shim(umad::testutil::Shim::Ibsm);
    daemon_is_a_controllable_service();
}

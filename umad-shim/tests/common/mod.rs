//! Helpers of the shim's end-to-end tests: ibsim with a private socket name, stock OpenSM and
//! diags under `libibsm_umad.so`, and this test binary re-run as a child under the shim (the
//! `child` test of each file, selected by `SHIM_TEST_ROLE`). Every process is stopped by PID.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use umad::testutil::{
    peers_or_skip, report_skip, require_peers, set_current_shim, IbsimGuard, Shim,
};

/// The env var that selects a child role.
pub const ROLE: &str = "SHIM_TEST_ROLE";

/// The shim library under test.
pub fn shim() -> PathBuf {
    Shim::Ibsm.path().unwrap()
}

/// ibsim + the shim + `progs` present? Skips loudly (or fails under IBSM_REQUIRE_PEERS=1).
pub fn peers(test: &str, progs: &[&str]) -> bool {
    set_current_shim(Shim::Ibsm);
    if !peers_or_skip(test) {
        return false;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for p in progs {
        if !std::env::split_paths(&path).any(|d| d.join(p).is_file()) {
            let why = format!("{p} not installed (apt-get install opensm infiniband-diags)");
            assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
            report_skip(test, &why);
            return false;
        }
    }
    true
}

/// A child process killed (by PID) and reaped on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// ibsim's example fabric with 2 switches and 4 HCAs (Hca1..Hca4).
pub fn net_2sw4hca() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric-sim/testdata/ibsim-net-examples/net.2sw2path4hca")
}

/// A command for `program` on node `host` of `sim`, under the shim, in `cwd`.
pub fn client(
    sim: &IbsimGuard,
    program: impl AsRef<std::ffi::OsStr>,
    host: &str,
    cwd: &Path,
) -> Command {
    let mut c = sim.client(program, cwd);
    c.env("LD_PRELOAD", shim())
        .env("SIM_HOST", host)
        .env_remove("IBSM_UMAD_FAULTS")
        .env_remove("IBSM_UMAD_DEBUG");
    c
}

/// Starts OpenSM on `host` (`-e -s 0 -d 2`, cache in `cwd`) with extra env, and waits (at
/// most 30 s) for SUBNET UP. Its stderr goes to `cwd/opensm.stderr`.
pub fn opensm(sim: &IbsimGuard, host: &str, cwd: &Path, env: &[(&str, &str)]) -> (Proc, PathBuf) {
    let log = cwd.join("opensm.log");
    let cache = cwd.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let err = std::fs::File::create(cwd.join("opensm.stderr")).unwrap();
    let mut c = client(sim, "opensm", host, cwd);
    c.args(["-e", "-s", "0", "-d", "2", "-f"])
        .arg(&log)
        .env("OSM_CACHE_DIR", &cache)
        .env("OSM_TMP_DIR", &cache)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err);
    for (k, v) in env {
        c.env(k, v);
    }
    let mut p = Proc(c.spawn().unwrap());
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("SUBNET UP") {
            return (p, log);
        }
        if let Ok(Some(st)) = p.0.try_wait() {
            panic!("opensm exited ({st}) before SUBNET UP:\n{text}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no SUBNET UP in 30 s:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `cmd` to completion, at most `limit` ([`umad::testutil::wait_bounded`]). Returns its
/// output, whether it finished in time, and how long it ran.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> (Output, bool, Duration) {
    let t0 = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, in_time) = umad::testutil::wait_bounded(child, limit).unwrap();
    (out, in_time, t0.elapsed())
}

/// This test binary re-run as the `child` test with `role` (and `env`), under the shim.
pub fn child_cmd(
    sim: &IbsimGuard,
    role: &str,
    host: &str,
    cwd: &Path,
    env: &[(&str, &str)],
) -> Command {
    let exe = std::env::current_exe().unwrap();
    let mut c = client(sim, exe, host, cwd);
    c.args([
        "--exact",
        "child",
        "--ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(ROLE, role);
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Panics with everything a failed child printed.
pub fn expect_ok(what: &str, out: &Output, in_time: bool) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        in_time && out.status.success(),
        "{what}: in time {in_time}, {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stdout
}

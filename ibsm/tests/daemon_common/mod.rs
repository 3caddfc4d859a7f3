//! Helpers shared by the tests that run `ibsm run` as a daemon: the control-socket client,
//! bounded waits, the daemon guard, a free TCP port, scraping and `promtool check metrics`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const IBSM: &str = env!("CARGO_BIN_EXE_ibsm");

/// `ibsm ctl --socket SOCK REQ…`.
pub fn ctl(sock: &Path, req: &[&str]) -> Output {
    Command::new(IBSM)
        .arg("ctl")
        .arg("--socket")
        .arg(sock)
        .args(req)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// [`ctl`] that must succeed; its standard output.
pub fn ctl_ok(sock: &Path, req: &[&str]) -> String {
    let out = ctl(sock, req);
    assert!(out.status.success(), "ibsm ctl {req:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Polls `f` every 100 ms until it gives a value; fails after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> Option<String>) -> String {
    let t = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kills the daemon (by PID, through `Child::kill`) if the test ends early.
pub struct Daemon(pub Option<std::process::Child>);
impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `127.0.0.1:PORT` with a port free a moment ago.
pub fn free_listen_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

/// `GET http://ADDR/metrics` with curl (extra header lines in `headers`).
pub fn scrape(listen: &str, headers: &[&str]) -> String {
    let mut c = Command::new("curl");
    c.arg("-sf");
    for h in headers {
        c.args(["-H", h]);
    }
    let out = c.arg(format!("http://{listen}/metrics")).output().unwrap();
    assert!(out.status.success(), "curl: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `promtool check metrics` on `text` must pass.
pub fn promtool_check(text: &str) {
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {out:?}\n{text}"
    );
}

/// True if `tool --version` runs; otherwise reports the skip (failing under
/// `IBSM_REQUIRE_PEERS=1`).
pub fn have_tool(test: &str, tool: &str, package: &str) -> bool {
    if Command::new(tool).arg("--version").output().is_ok() {
        return true;
    }
    let why = format!("{tool} not installed (apt-get install {package})");
    assert!(
        !umad::testutil::require_peers(),
        "IBSM_REQUIRE_PEERS=1 but {why}"
    );
    umad::testutil::report_skip(test, &why);
    false
}

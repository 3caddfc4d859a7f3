//! Test helpers: run ibsim on a topology with a private socket name, and run client processes
//! against it under `libumad2sim.so`.
//!
//! [`IbsimGuard::start`] spawns `ibsim -s -n <topology>` with `IBSIM_SOCKNAME` set to a name
//! unique to this process, waits (bounded) until it prints "ready", and stops it by PID (kill +
//! wait) when dropped, also when a test panics. [`IbsimGuard::client`] builds a
//! [`Command`] with `LD_PRELOAD` and `IBSIM_SOCKNAME` set and a writable working directory
//! (umad2sim writes its fake sysfs tree to `./sys-<pid>/`). LD_PRELOAD only takes effect at
//! process start, so shim clients are always child processes.
//!
//! Two shims ([`Shim`]): ibsim's `libumad2sim.so` and this workspace's `libibsm_umad.so`
//! (`umad-shim`). A test thread's clients use [`current_shim`]; [`both_shims!`] defines a
//! test once per shim.
//!
//! [`missing_peers`] tells whether ibsim and the shim are installed; tests should skip loudly
//! when they are not, unless `IBSM_REQUIRE_PEERS=1` ([`require_peers`]).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Debian's path of the umad2sim LD_PRELOAD shim.
pub const UMAD2SIM_LIB: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// File name of this workspace's shim (`umad-shim`, a cdylib).
pub const IBSM_UMAD_LIB: &str = "libibsm_umad.so";

/// The LD_PRELOAD libraries simulator clients can run under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shim {
    /// ibsim's `libumad2sim.so` (one 256-byte MAD per message, no RMPP, no timeouts).
    Umad2sim,
    /// This workspace's `libibsm_umad.so` (ib_umad + ib_mad behaviour: RMPP, timeouts).
    Ibsm,
}

impl Shim {
    /// Both, for tests that run with each.
    pub const ALL: [Shim; 2] = [Shim::Umad2sim, Shim::Ibsm];

    /// A short name for messages and test names.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Shim::Umad2sim => "umad2sim",
            Shim::Ibsm => "ibsm-umad",
        }
    }

    /// The library to preload.
    ///
    /// # Errors
    /// Why it is not available: ibsim-utils not installed, or `libibsm_umad.so` not built
    /// (crates whose tests use it list `umad-shim` as a dev-dependency, so cargo builds it).
    pub fn path(self) -> Result<PathBuf, String> {
        match self {
            Shim::Umad2sim if Path::new(UMAD2SIM_LIB).is_file() => Ok(UMAD2SIM_LIB.into()),
            Shim::Umad2sim => Err(format!(
                "{UMAD2SIM_LIB} not installed (apt-get install ibsim-utils)"
            )),
            Shim::Ibsm => ibsm_umad_lib().ok_or_else(|| {
                format!(
                    "{IBSM_UMAD_LIB} not found next to the test binary (build it: cargo build -p umad-shim; or set IBSM_UMAD_SHIM)"
                )
            }),
        }
    }
}

std::thread_local! {
    static CURRENT_SHIM: std::cell::Cell<Shim> = const { std::cell::Cell::new(Shim::Umad2sim) };
}

/// The shim the calling test thread's clients preload ([`IbsimGuard::client`],
/// [`peers_or_skip`]): umad2sim unless [`set_current_shim`] (or [`both_shims!`]) chose ours.
#[must_use]
pub fn current_shim() -> Shim {
    CURRENT_SHIM.with(std::cell::Cell::get)
}

/// Sets the calling thread's shim (each test runs on its own thread).
pub fn set_current_shim(shim: Shim) {
    CURRENT_SHIM.with(|c| c.set(shim));
}

/// Defines a test twice, as `NAME::umad2sim` and `NAME::ibsm_umad`, with [`current_shim`] set
/// accordingly: every client the body starts through this module runs under ibsim's shim, then
/// under ours.
///
/// ```ignore
/// umad::both_shims! {
///     /// What it checks.
///     fn my_interop_test() { /* ... */ }
/// }
/// ```
#[macro_export]
macro_rules! both_shims {
    ($(#[$m:meta])* fn $name:ident() $body:block) => {
        $(#[$m])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn body() $body
            #[test]
            fn umad2sim() {
                $crate::testutil::set_current_shim($crate::testutil::Shim::Umad2sim);
                body();
            }
            #[test]
            fn ibsm_umad() {
                $crate::testutil::set_current_shim($crate::testutil::Shim::Ibsm);
                body();
            }
        }
    };
}

/// Where `libibsm_umad.so` is: `$IBSM_UMAD_SHIM`, else the newest of `target/<profile>/deps/`
/// and `target/<profile>/` next to the running executable (cargo builds a dependency's cdylib
/// into `deps/` and copies a built package's into the profile directory).
#[must_use]
pub fn ibsm_umad_lib() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IBSM_UMAD_SHIM") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let mut found: Vec<(std::time::SystemTime, PathBuf)> =
        [dir.to_path_buf(), dir.parent()?.to_path_buf()]
            .into_iter()
            .chain(dir.parent().map(|d| d.join("deps")))
            .map(|d| d.join(IBSM_UMAD_LIB))
            .filter_map(|p| {
                let t = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
                Some((t, p))
            })
            .collect();
    found.sort();
    found.pop().map(|(_, p)| p)
}

/// Errors starting ibsim.
#[derive(Debug, thiserror::Error)]
pub enum IbsimError {
    /// The ibsim binary could not be started.
    #[error("cannot start {program}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// ibsim exited or stayed silent instead of printing "ready".
    #[error("the simulator (ibsim) did not become ready within {waited:?}; its output:\n{output}")]
    NotReady {
        /// How long we waited.
        waited: Duration,
        /// What it printed.
        output: String,
    },
}

/// Why the ibsim peers cannot be used here, or `None` if they can.
#[must_use]
pub fn missing_peers() -> Option<String> {
    let have_ibsim = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("ibsim").is_file()));
    if !have_ibsim {
        return Some("ibsim not installed (apt-get install ibsim-utils)".into());
    }
    if !Path::new(UMAD2SIM_LIB).is_file() {
        return Some(format!(
            "{UMAD2SIM_LIB} not installed (apt-get install ibsim-utils)"
        ));
    }
    None
}

/// Reports a skipped test on stderr directly (not through `eprintln!`, which the test harness
/// captures and hides for passing tests), so the skip is visible in every `cargo test` run.
pub fn report_skip(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

/// The standard gate for tests that need ibsim: `true` = go ahead. Without the peers it reports
/// the skip and returns `false`, or panics when `IBSM_REQUIRE_PEERS=1`.
///
/// # Panics
/// When the peers are missing and `IBSM_REQUIRE_PEERS=1` (that is the point).
#[must_use]
#[allow(clippy::panic)]
pub fn peers_or_skip(test: &str) -> bool {
    let shim = current_shim();
    let missing = missing_peers().or_else(|| shim.path().err());
    let test = &format!("{test}[{}]", shim.name());
    match missing {
        None => true,
        Some(why) if require_peers() => panic!("IBSM_REQUIRE_PEERS=1 but {why}"),
        Some(why) => {
            report_skip(
                test,
                &format!("{why} (set IBSM_REQUIRE_PEERS=1 to make this fatal)"),
            );
            false
        }
    }
}

/// True when `IBSM_REQUIRE_PEERS=1`: missing peers are a failure, not a skip.
#[must_use]
pub fn require_peers() -> bool {
    std::env::var("IBSM_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// A running ibsim, stopped (kill + wait) on drop.
#[derive(Debug)]
pub struct IbsimGuard {
    child: Child,
    sockname: String,
    log: Arc<Mutex<String>>,
    /// The topology file written by [`IbsimGuard::start_text`], removed after ibsim stops.
    owned_topology: Option<TempDir>,
    /// The stdout/stderr drain threads (end at EOF once ibsim exits).
    readers: Vec<std::thread::JoinHandle<()>>,
    /// ibsim's console input ([`IbsimGuard::start_with_console`]).
    console: Option<std::process::ChildStdin>,
}

fn append(log: &Mutex<String>, line: &str) {
    let mut g = log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    g.push_str(line);
    g.push('\n');
}

impl IbsimGuard {
    /// Starts `ibsim -s -n <topology>` with a private socket name and waits up to 20 s for it to
    /// print "ready".
    ///
    /// # Errors
    /// [`IbsimError::Spawn`], [`IbsimError::NotReady`] (the process is stopped first).
    pub fn start(topology: &Path) -> Result<IbsimGuard, IbsimError> {
        Self::start_with(topology, &[])
    }

    /// [`IbsimGuard::start`] with extra ibsim options (e.g. `["-N", "30000"]`) before the file.
    ///
    /// # Errors
    /// As [`IbsimGuard::start`].
    pub fn start_with(topology: &Path, extra: &[&str]) -> Result<IbsimGuard, IbsimError> {
        let sockname = Self::fresh_sockname();
        let mut cmd = Command::new("ibsim");
        cmd.arg("-s").arg("-n").args(extra).arg(topology);
        Self::spawn(cmd, "ibsim", sockname, false)
    }

    /// `ibsim -s <topology>` with its console on a pipe: [`IbsimGuard::console`] sends it
    /// commands (`Unlink "sw"[5]`, `ReLink "sw"`, …), as an operator types them.
    ///
    /// # Errors
    /// As [`IbsimGuard::start`].
    pub fn start_with_console(topology: &Path) -> Result<IbsimGuard, IbsimError> {
        Self::start_with_console_and(topology, &[])
    }

    /// [`IbsimGuard::start_with_console`] with extra ibsim options (e.g. `["-N", "30000"]`)
    /// before the file.
    ///
    /// # Errors
    /// As [`IbsimGuard::start`].
    pub fn start_with_console_and(
        topology: &Path,
        extra: &[&str],
    ) -> Result<IbsimGuard, IbsimError> {
        let sockname = Self::fresh_sockname();
        let mut cmd = Command::new("ibsim");
        cmd.arg("-s").args(extra).arg(topology);
        Self::spawn(cmd, "ibsim", sockname, true)
    }

    /// Sends one console command (a started [`IbsimGuard::start_with_console`] only).
    ///
    /// # Errors
    /// No console, or ibsim stopped reading it.
    pub fn console(&mut self, command: &str) -> std::io::Result<()> {
        use std::io::Write;
        let c = self
            .console
            .as_mut()
            .ok_or_else(|| std::io::Error::other("ibsim was started without a console"))?;
        writeln!(c, "{command}")?;
        c.flush()
    }

    /// The workspace's ibsim-compatible server in place of stock ibsim: `IBSM sim serve
    /// TOPOLOGY --socket-name NAME` (`ibsm` = the path of the `ibsm` binary, e.g.
    /// `env!("CARGO_BIN_EXE_ibsm")`), with a private socket name, waited for and stopped as
    /// [`IbsimGuard::start`] does; its clients are made the same way ([`IbsimGuard::client`]).
    ///
    /// # Errors
    /// As [`IbsimGuard::start`].
    pub fn start_ibsm_serve(ibsm: &Path, topology: &Path) -> Result<IbsimGuard, IbsimError> {
        let sockname = Self::fresh_sockname();
        let mut cmd = Command::new(ibsm);
        cmd.args(["sim", "serve"])
            .arg(topology)
            .arg("--socket-name")
            .arg(&sockname);
        Self::spawn(cmd, "ibsm sim serve", sockname, false)
    }

    fn fresh_sockname() -> String {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        format!(
            "umadt{}_{}_{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            nanos % 100_000
        )
    }

    /// Spawns the server `cmd` on `sockname` (its stdin a pipe kept as the console with
    /// `console`, else null) and waits (20 s) for it to print "ready".
    fn spawn(
        mut cmd: Command,
        program: &str,
        sockname: String,
        console: bool,
    ) -> Result<IbsimGuard, IbsimError> {
        let stdin = if console {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let mut child = cmd
            .env("IBSIM_SOCKNAME", &sockname)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| IbsimError::Spawn {
                program: program.into(),
                source,
            })?;
        let log = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            let log = Arc::clone(&log);
            readers.push(std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    append(&log, &line);
                    if line.contains("ready") {
                        let _ = ready_tx.send(());
                    }
                }
            }));
        }
        if let Some(mut err) = child.stderr.take() {
            let log = Arc::clone(&log);
            readers.push(std::thread::spawn(move || {
                let mut s = String::new();
                let mut chunk = [0u8; 4096];
                while let Ok(n) = err.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    s.push_str(&String::from_utf8_lossy(&chunk[..n]));
                    while let Some(i) = s.find('\n') {
                        append(&log, &s[..i]);
                        s.drain(..=i);
                    }
                }
                if !s.is_empty() {
                    append(&log, &s);
                }
            }));
        }
        let console = child.stdin.take();
        let guard = IbsimGuard {
            child,
            sockname,
            log,
            owned_topology: None,
            readers,
            console,
        };
        let waited = Duration::from_secs(20);
        match ready_rx.recv_timeout(waited) {
            Ok(()) => Ok(guard),
            Err(_) => {
                let mut guard = guard;
                let _ = guard.child.kill();
                let _ = guard.child.wait();
                // ibsim is gone, so both pipes are at EOF: collect everything it printed.
                for r in guard.readers.drain(..) {
                    let _ = r.join();
                }
                let output = guard.output();
                Err(IbsimError::NotReady { waited, output })
            }
        }
    }

    /// Writes `net` (ibsim .net text) to a private temp file and starts ibsim on it; the file is
    /// removed when the guard drops.
    ///
    /// # Errors
    /// [`IbsimError::Spawn`] also when the file cannot be written; [`IbsimError::NotReady`].
    pub fn start_text(net: &str, extra: &[&str]) -> Result<IbsimGuard, IbsimError> {
        let spawn_err = |source| IbsimError::Spawn {
            program: "ibsim (writing the topology file)".into(),
            source,
        };
        let dir = TempDir::new("net").map_err(spawn_err)?;
        let file = dir.path().join("topology.net");
        std::fs::write(&file, net).map_err(spawn_err)?;
        let mut g = Self::start_with(&file, extra)?;
        g.owned_topology = Some(dir);
        Ok(g)
    }

    /// The `IBSIM_SOCKNAME` this instance listens on.
    #[must_use]
    pub fn sockname(&self) -> &str {
        &self.sockname
    }

    /// ibsim's PID.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything ibsim printed so far (stdout and stderr, line-interleaved).
    #[must_use]
    pub fn output(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A command for `program` that runs against this ibsim: `LD_PRELOAD` = the thread's
    /// [`current_shim`],
    /// `IBSIM_SOCKNAME` set, working directory `cwd` (must be writable). Set `SIM_HOST` on it to
    /// attach to another node than the first one in the topology file.
    #[must_use]
    pub fn client(&self, program: impl AsRef<std::ffi::OsStr>, cwd: &Path) -> Command {
        let mut c = Command::new(program);
        let lib = current_shim()
            .path()
            .unwrap_or_else(|_| UMAD2SIM_LIB.into());
        c.env("LD_PRELOAD", lib)
            .env("IBSIM_SOCKNAME", &self.sockname)
            .current_dir(cwd);
        c
    }

    /// Stops ibsim now (same as dropping the guard).
    pub fn stop(self) {}
}

impl Drop for IbsimGuard {
    fn drop(&mut self) {
        // By PID: `Child::kill` signals exactly this process.
        let _ = self.child.kill();
        let _ = self.child.wait();
        // `owned_topology` (if any) is removed after this, once ibsim has exited.
    }
}

/// Waits for `child` at most `limit` while draining its pipes (a child blocked on a full pipe
/// would never exit). On timeout it is sent SIGTERM (so a script's exit trap can stop what it
/// started), then SIGKILL if it is still there 5 s later — by PID. Returns its output and
/// whether it finished in time.
///
/// # Errors
/// Waiting for the child failed.
pub fn wait_bounded(
    child: std::process::Child,
    limit: Duration,
) -> std::io::Result<(std::process::Output, bool)> {
    let pid = child.id().to_string();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let (out, in_time) = match rx.recv_timeout(limit) {
        Ok(out) => (out, true),
        Err(_) => {
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
            match rx.recv_timeout(Duration::from_secs(5)) {
                Ok(out) => (out, false),
                Err(_) => {
                    let _ = Command::new("kill").args(["-KILL", &pid]).status();
                    (
                        rx.recv()
                            .map_err(|e| std::io::Error::other(e.to_string()))?,
                        false,
                    )
                }
            }
        }
    };
    let _ = waiter.join();
    Ok((out?, in_time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_bounded_returns_output_or_kills() {
        let c = Command::new("sh")
            .args(["-c", "echo hi"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (out, in_time) = wait_bounded(c, Duration::from_secs(10)).unwrap();
        assert!(in_time && out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
        let c = Command::new("sleep").arg("30").spawn().unwrap();
        let t0 = std::time::Instant::now();
        let (out, in_time) = wait_bounded(c, Duration::from_millis(200)).unwrap();
        assert!(!in_time && !out.status.success());
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn guard_starts_and_stops_ibsim_from_text() {
        if !peers_or_skip("guard_starts_and_stops_ibsim_from_text") {
            return;
        }
        let net = "Switch\t4 \"S1\"\n[1]\t\"H1\"[1]\n\nHca\t1 \"H1\"\n[1]\t\"S1\"[1]\n";
        let g = IbsimGuard::start_text(net, &[]).unwrap();
        let pid = g.pid();
        assert!(g.output().contains("ready"), "{}", g.output());
        assert!(g.sockname().starts_with("umadt"));
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        assert!(proc_dir.exists());
        let topo = g.owned_topology.as_ref().unwrap().path().to_path_buf();
        assert!(topo.join("topology.net").exists());
        g.stop();
        // Reaped by wait(): the pid is gone (or reused by an unrelated non-ibsim process).
        let comm = std::fs::read_to_string(proc_dir.join("comm")).unwrap_or_default();
        assert_ne!(comm.trim(), "ibsim");
        assert!(!topo.exists(), "topology temp dir removed");
    }

    #[test]
    fn a_bad_topology_is_not_ready_with_output() {
        if !peers_or_skip("a_bad_topology_is_not_ready_with_output") {
            return;
        }
        let e = IbsimGuard::start(Path::new("/nonexistent/x.net")).unwrap_err();
        match e {
            IbsimError::NotReady { output, .. } => assert!(!output.is_empty()),
            other => panic!("{other:?}"),
        }
    }
}

/// A fresh writable directory for a shim client, removed on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `$TMPDIR/umad-<tag>-<pid>-<n>`.
    ///
    /// # Errors
    /// The failed `create_dir_all`.
    pub fn new(tag: &str) -> std::io::Result<TempDir> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "umad-{tag}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path)?;
        Ok(TempDir { path })
    }
    /// The directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

//! Helpers of the interop tests that run stock OpenSM and infiniband-diags, under the test
//! thread's LD_PRELOAD shim ([`current_shim`]: ibsim's umad2sim or our libibsm_umad), against
//! our served fabric ([`Served`]) or against stock ibsim ([`umad::testutil::IbsimGuard`]);
//! both are a [`ShimFabric`].
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fabric_sim::ibsim_server::IbsimServer;
use fabric_sim::sim::{Fabric, SimConfig};
use fabric_sim::topo::Topology;
use umad::testutil::{current_shim, peers_or_skip, report_skip, require_peers, IbsimGuard, Shim};

/// A fabric shim clients can run against: our server or stock ibsim.
pub trait ShimFabric {
    /// `program` as a shim client of this fabric, running in `cwd`.
    fn client(&self, program: &str, cwd: &Path) -> Command;

    /// Runs a shim client and returns its stdout; panics (with its output) if it fails.
    fn diag(&self, cwd: &Path, program: &str, args: &[&str]) -> String {
        let out = self
            .client(program, cwd)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

impl ShimFabric for Served {
    fn client(&self, program: &str, cwd: &Path) -> Command {
        Served::client(self, program, cwd)
    }
}

impl ShimFabric for IbsimGuard {
    fn client(&self, program: &str, cwd: &Path) -> Command {
        let mut c = IbsimGuard::client(self, program, cwd);
        c.env_remove("SIM_HOST");
        c
    }
}

/// The programs the OpenSM interop tests run.
pub const TOOLS: &[&str] = &[
    "opensm",
    "sminfo",
    "saquery",
    "ibnetdiscover",
    "ibswitches",
    "ibhosts",
    "iblinkinfo",
    "smpquery",
    "ibroute",
    "dump_fts",
];

/// True = run. Missing tools skip loudly (or fail under IBSM_REQUIRE_PEERS=1).
pub fn peers(test: &str) -> bool {
    peers_with(test, TOOLS)
}

/// [`peers`] with another list of programs.
pub fn peers_with(test: &str, tools: &[&str]) -> bool {
    if !peers_or_skip(test) {
        return false;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| !std::env::split_paths(&path).any(|d| d.join(t).is_file()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!("{missing:?} not installed (apt-get install opensm infiniband-diags)");
    assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
    report_skip(test, &why);
    false
}

/// A private IBSIM_SOCKNAME.
pub fn sock_name() -> String {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    format!(
        "ibsmsrv{}x{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// A file of fabric-sim/testdata/ibsim-net-examples.
pub fn net_example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric-sim/testdata/ibsim-net-examples")
        .join(name)
}

/// The server, serving on its own thread until stopped.
pub struct Served {
    /// The socket name (IBSIM_SOCKNAME).
    pub name: String,
    /// SIM_HOST for clients (node name); None = ibsim's default, the topology's first node.
    pub host: Option<String>,
    /// The LD_PRELOAD library of its clients (the creating test thread's [`current_shim`]).
    pub shim: Shim,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<IbsimServer>>,
}

impl Served {
    pub fn start(topo: &Topology) -> Served {
        Served::start_fabric(Fabric::new(topo, SimConfig::default()).unwrap())
    }

    /// Only the client side of a server the test drives itself (no serving thread).
    pub fn client_of(server: &IbsimServer) -> Served {
        Served {
            name: server.name().to_string(),
            host: None,
            shim: current_shim(),
            stop: Arc::new(AtomicBool::new(true)),
            thread: None,
        }
    }

    /// Serves an already built fabric (e.g. one whose switches are RA-1 device models).
    pub fn start_fabric(fabric: Fabric) -> Served {
        let name = sock_name();
        let mut server = IbsimServer::bind(fabric, &name).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            server.run(&flag).unwrap();
            server
        });
        Served {
            name,
            host: None,
            shim: current_shim(),
            stop,
            thread: Some(thread),
        }
    }

    /// A shim client of this server, running in `cwd`.
    pub fn client(&self, program: &str, cwd: &Path) -> Command {
        let mut c = Command::new(program);
        c.env("LD_PRELOAD", self.shim.path().unwrap())
            .env("IBSIM_SOCKNAME", &self.name)
            .env_remove("SIM_HOST")
            .current_dir(cwd);
        if let Some(h) = &self.host {
            c.env("SIM_HOST", h);
        }
        c
    }

    /// Stops serving and hands the server (and its fabric) back.
    pub fn finish(mut self) -> IbsimServer {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A child process killed (by PID) and reaped on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `opensm -e -s 1 -R ENGINE` until its log says SUBNET UP (at most 30 s), stops it and
/// returns the log.
pub fn opensm_until_up(served: &impl ShimFabric, dir: &Path, engine: &str) -> String {
    opensm_up(served, dir, engine).1
}

/// Starts `opensm -e -s 1 -R ENGINE` and waits (at most 30 s) until its log says SUBNET UP;
/// returns the running OpenSM (stopped when dropped) and the log so far.
pub fn opensm_up(served: &impl ShimFabric, dir: &Path, engine: &str) -> (Proc, String) {
    opensm_up_with(served, dir, engine, &[])
}

/// [`opensm_up`] with extra OpenSM arguments.
pub fn opensm_up_with(
    served: &impl ShimFabric,
    dir: &Path,
    engine: &str,
    extra: &[&str],
) -> (Proc, String) {
    let mut args = vec!["-R", engine];
    args.extend_from_slice(extra);
    let (mut proc, log) = spawn_opensm(served, dir, &format!("opensm-{engine}.log"), &args);
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("SUBNET UP") {
            return (proc, text);
        }
        if let Ok(Some(status)) = proc.0.try_wait() {
            panic!("opensm exited ({status}) before SUBNET UP:\n{text}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no SUBNET UP within 30 s:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts OpenSM as a daemon (`-e -s 1 -d 2 ARGS -f DIR/LOG`, cache and dump files in
/// DIR/cache) under the shim as a client of `served`; returns it (stopped when dropped) and
/// its log path.
pub fn spawn_opensm(
    served: &impl ShimFabric,
    dir: &Path,
    log: &str,
    args: &[&str],
) -> (Proc, PathBuf) {
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let log = dir.join(log);
    let child = served
        .client("opensm", dir)
        .args(["-e", "-s", "1", "-d", "2"])
        .args(args)
        .arg("-f")
        .arg(&log)
        .env("OSM_CACHE_DIR", &cache)
        .env("OSM_TMP_DIR", &cache)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (Proc(child), log)
}

/// A server handed back by [`Served::finish`], served again.
pub struct Rewrap(pub Served);

impl Rewrap {
    /// Serves `server` on a thread again.
    pub fn serve(mut server: IbsimServer) -> Rewrap {
        let name = server.name().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            server.run(&flag).unwrap();
            server
        });
        Rewrap(Served {
            name,
            host: None,
            shim: current_shim(),
            stop,
            thread: Some(thread),
        })
    }
}

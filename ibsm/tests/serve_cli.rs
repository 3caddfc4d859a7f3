//! `ibsm sim serve`: the command binds the sockets, prints "ready", and serves stock diag tools
//! (run under ibsim's umad2sim shim, and under ours) until it is killed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use umad::both_shims;
use umad::testutil::{current_shim, peers_or_skip, report_skip, require_peers, TempDir};

/// Killed (by PID) and reaped on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(topology: &str, name: &str) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["sim", "serve", topology, "--socket-name", name])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let proc = Proc(child);
    let start = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(l) if l.trim() == "ready" => return proc,
            Ok(_) => {}
            Err(_) => assert!(
                start.elapsed() < Duration::from_secs(20),
                "ibsm sim serve did not print ready"
            ),
        }
    }
}

both_shims! {
    fn serve_prints_ready_and_ibnetdiscover_finds_every_node() {
        let test = "serve_cli_ibnetdiscover";
        if !peers_or_skip(test) {
            return;
        }
        let have = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("ibnetdiscover").is_file()));
        if !have {
            assert!(
                !require_peers(),
                "IBSM_REQUIRE_PEERS=1 but ibnetdiscover is missing"
            );
            report_skip(test, "ibnetdiscover not installed (infiniband-diags)");
            return;
        }
        let net = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fabric-sim/testdata/ibsim-net-examples/net.2sw2path4hca");
        let name = format!("ibsmcli{}{}", std::process::id(), current_shim().name());
        let _server = serve(net.to_str().unwrap(), &name);
        let dir = TempDir::new(test).unwrap();
        let out = Command::new("ibnetdiscover")
            .env("LD_PRELOAD", current_shim().path().unwrap())
            .env("IBSIM_SOCKNAME", &name)
            .env_remove("SIM_HOST")
            .current_dir(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        let topo = fabric_sim::topo::Topology::from_file(&net).unwrap();
        for (_, n) in topo.nodes() {
            assert!(
                text.contains(&format!("{:016x}", n.guid().0)),
                "{} missing:\n{text}",
                n.name()
            );
        }
        // A second server on the same socket name is refused with a clear error.
        let again = Command::new(env!("CARGO_BIN_EXE_ibsm"))
            .args([
                "sim",
                "serve",
                net.to_str().unwrap(),
                "--socket-name",
                &name,
            ])
            .output()
            .unwrap();
        assert!(!again.status.success());
        let err = String::from_utf8_lossy(&again.stderr);
        assert!(err.contains("cannot bind"), "{err}");
    }
}

#[test]
fn serve_rejects_bad_arguments() {
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["sim", "serve"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TOPOLOGY"));
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(["sim", "serve", "no-such-generator:1", "--socket-name", "x"])
        .output()
        .unwrap();
    // A bad topology is bad input (2), as for `ibsm sim`.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-generator:1"));
}

//! Separate processes: `ibsm asic-model` serves every switch of a simulated fat tree as an RA-1
//! device model over vfio-user; one `ibsm sma --device vfio-user:SOCKET` process per switch
//! brings its model up and runs the host SMA; our SM (in the model process, on a simulated CA)
//! must reach SUBNET UP, and the LFTs in the models' registers must equal its tables.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn ibsm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ibsm"))
}

struct Kill(Vec<Child>);
impl Drop for Kill {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs `ibsm asic-model fat-tree:2,4 --sm --exit-on-up EXTRA…` with one `ibsm sma` per
/// switch; returns the model's stdout and every host's stdout.
fn run(tag: &str, extra: &[&str]) -> (String, Vec<String>) {
    let dir: PathBuf = std::env::temp_dir().join(format!("ibsm-asic-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = ibsm()
        .args(["asic-model", "fat-tree:2,4", "--socket-dir"])
        .arg(&dir)
        .args(["--sm", "--exit-on-up", "--time-limit", "90"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // fat-tree:2,4 has 6 switches: wait for their sockets.
    let t = Instant::now();
    let socks = loop {
        let mut s: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "sock"))
            .collect();
        if s.len() == 6 {
            s.sort();
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "sockets did not appear"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut hosts = Kill(Vec::new());
    for (i, s) in socks.iter().enumerate() {
        // One host busy-polls the CQ (all causes masked), the others sleep on MSI-X eventfds.
        let mode: &[&str] = if i == 0 { &["--busy-poll"] } else { &[] };
        hosts.0.push(
            ibsm()
                .args(["sma", "--device", &format!("vfio-user:{}", s.display())])
                .args(mode)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
    }
    let out = model.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "asic-model failed:\n{stdout}\n{stderr}"
    );
    // The model process is gone: every host SMA sees its device close and exits normally.
    let mut outs = Vec::new();
    for h in std::mem::take(&mut hosts.0) {
        let o = h.wait_with_output().unwrap();
        assert!(o.status.success(), "an ibsm sma exited with {}", o.status);
        outs.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    let _ = std::fs::remove_dir_all(&dir);
    (stdout, outs)
}

#[test]
fn separate_processes_reach_subnet_up() {
    let (stdout, hosts) = run("up", &[]);
    assert!(stdout.contains("all 6 models READY"), "{stdout}");
    assert!(stdout.contains("SUBNET UP"), "{stdout}");
    assert!(
        stdout.contains("LFTs in 6 model switches match the SM's tables"),
        "{stdout}"
    );
    assert_eq!(hosts.len(), 6);
    for h in &hosts {
        assert!(h.contains("up: NodeGUID"), "{h}");
        assert!(h.contains("device closed"), "{h}");
    }
}

/// A cable cut after SUBNET UP: both models raise a PORT interrupt (MSI-X eventfd over
/// vfio-user), their host SMAs turn it into trap 128, and the SM — with periodic sweeps off —
/// sweeps again, reroutes and reprograms the models.
#[test]
fn port_change_interrupts_become_traps_across_processes() {
    let (stdout, hosts) = run("cut", &["--cut-link-after-up"]);
    assert!(stdout.contains("cut the link"), "{stdout}");
    assert_eq!(stdout.matches("SUBNET UP").count(), 2, "{stdout}");
    assert_eq!(
        stdout
            .matches("LFTs in 6 model switches match the SM's tables")
            .count(),
        2,
        "{stdout}"
    );
    let traps: u64 = hosts
        .iter()
        .filter_map(|h| {
            let i = h.find("traps ")?;
            h[i + 6..].split(',').next()?.trim().parse::<u64>().ok()
        })
        .sum();
    assert!(traps >= 1, "no host SMA sent a trap: {hosts:#?}");
}

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

#[test]
fn separate_processes_reach_subnet_up() {
    let dir: PathBuf = std::env::temp_dir().join(format!("ibsm-asic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = ibsm()
        .args(["asic-model", "fat-tree:2,4", "--socket-dir"])
        .arg(&dir)
        .args(["--sm", "--exit-on-up", "--time-limit", "90"])
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
    for s in &socks {
        hosts.0.push(
            ibsm()
                .args(["sma", "--device", &format!("vfio-user:{}", s.display())])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
    }
    let out = model.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "asic-model failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all 6 models READY"), "{stdout}");
    assert!(stdout.contains("SUBNET UP"), "{stdout}");
    assert!(
        stdout.contains("LFTs in 6 model switches match the SM's tables"),
        "{stdout}"
    );
    // The model process is gone: every host SMA sees its device close and exits normally.
    let t = Instant::now();
    for h in &mut hosts.0 {
        loop {
            if let Some(st) = h.try_wait().unwrap() {
                assert!(st.success(), "an ibsm sma exited with {st}");
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "ibsm sma did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

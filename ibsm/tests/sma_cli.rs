//! `ibsm sma` / `ibsm asic-model` argument and device errors: clear messages, no hang.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn ibsm(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn sma_needs_a_device() {
    let (code, _, err) = ibsm(&["sma"]);
    assert_eq!(code, 2);
    assert!(err.contains("--device is required"), "{err}");
}

#[test]
fn sma_names_a_missing_pci_device_and_its_errno() {
    let (code, _, err) = ibsm(&["sma", "--device", "0000:99:1f.7"]);
    assert_eq!(code, 1);
    assert!(err.contains("0000:99:1f.7"), "{err}");
    assert!(err.contains("ENOENT"), "errno kept: {err}");
}

#[test]
fn sma_names_a_missing_vfio_user_socket() {
    let (code, _, err) = ibsm(&["sma", "--device", "vfio-user:/nonexistent/asic.sock"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent/asic.sock"), "{err}");
    assert!(err.contains("connect"), "{err}");
}

#[test]
fn asic_model_needs_a_socket_dir_and_a_valid_topology() {
    let (code, _, err) = ibsm(&["asic-model", "fat-tree:2,4"]);
    assert_eq!(code, 2);
    assert!(err.contains("--socket-dir"), "{err}");
    let (code, _, err) = ibsm(&["asic-model", "no-such-spec:1", "--socket-dir", "/tmp"]);
    assert_eq!(code, 1);
    assert!(err.contains("no-such-spec:1"), "{err}");
}

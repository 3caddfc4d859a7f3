//! The Debian package: `cargo deb -p ibsm` builds it from the metadata in ibsm/Cargo.toml and
//! it holds the command, the systemd unit, the default configuration (a conffile), the
//! logrotate snippet and the operator guide.
//!
//! cargo-deb is not a Debian package; it comes from crates.io (`cargo install cargo-deb`).
//! `.ci/run` does not install it: compiling it and a release build of ibsm would take a large
//! part of CI's time budget. Without it this test prints "SKIPPED: …" and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may unwrap (team rule)

use std::path::Path;
use std::process::Command;

use umad::testutil::{report_skip, TempDir};

#[test]
fn debian_package_holds_the_service() {
    let test = "debian_package_holds_the_service";
    let have = Command::new("cargo")
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        report_skip(
            test,
            "cargo-deb not installed (cargo install cargo-deb); .ci/run does not install it",
        );
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = TempDir::new("deb").unwrap();
    let deb = out.path().join("ibsm.deb");
    // Its own target directory: the outer `cargo test` holds the workspace's.
    let target = root.join("target").join("package-test");
    let built = Command::new("cargo")
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        .args(["deb", "-p", "ibsm", "--output"])
        .arg(&deb)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "cargo deb: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let list = Command::new("dpkg-deb")
        .arg("-c")
        .arg(&deb)
        .output()
        .unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    for f in [
        "./usr/bin/ibsm",
        "./etc/ibsm/ibsm.conf",
        "./etc/logrotate.d/ibsm",
        "/systemd/system/ibsm.service",
        "./usr/share/doc/ibsm/operator-guide.md",
    ] {
        assert!(list.lines().any(|l| l.contains(f)), "{f} missing:\n{list}");
    }
    let ctl = out.path().join("control");
    let ok = Command::new("dpkg-deb")
        .arg("-e")
        .arg(&deb)
        .arg(&ctl)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let conffiles = std::fs::read_to_string(ctl.join("conffiles")).unwrap();
    assert!(conffiles.contains("/etc/ibsm/ibsm.conf"), "{conffiles}");
    let control = std::fs::read_to_string(ctl.join("control")).unwrap();
    assert!(control.contains("Package: ibsm\n"), "{control}");
    assert!(control.contains(&format!("Version: {}", env!("CARGO_PKG_VERSION"))));
    let unit = std::fs::read_to_string(root.join("contrib/ibsm.service")).unwrap();
    assert!(unit.contains("Type=notify"));
}

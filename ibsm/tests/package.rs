//! The Debian package: `cargo deb -p ibsm` builds it from the metadata in ibsm/Cargo.toml and
//! it holds the command, the systemd unit, the default configuration (a conffile), the
//! logrotate snippet and the operator guide.
//!
//! cargo-deb is not a Debian package; it comes from crates.io (`cargo install cargo-deb`), and
//! `.ci/run` installs it. So that the test costs no release build, it packages the `ibsm` this
//! test run built (`cargo deb --no-build` over a target directory holding it where a release
//! build would be): the package's contents and control files are what is checked, and they do
//! not depend on the profile. Without cargo-deb the test prints "SKIPPED: …" and passes,
//! unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code (team rule)

use std::path::Path;
use std::process::Command;

use umad::testutil::{report_skip, require_peers, TempDir};

#[test]
fn debian_package_holds_the_service() {
    let test = "debian_package_holds_the_service";
    let have = Command::new("cargo")
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        let why = "cargo-deb not installed (cargo install cargo-deb; .ci/run does)";
        if require_peers() {
            panic!("IBSM_REQUIRE_PEERS=1 but {why}");
        }
        report_skip(test, why);
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = TempDir::new("deb").unwrap();
    let deb = out.path().join("ibsm.deb");
    // Where `cargo deb` looks for a release build (the asset `target/release/ibsm`).
    let target = out.path().join("target");
    std::fs::create_dir_all(target.join("release")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_ibsm"), target.join("release/ibsm")).unwrap();
    let built = Command::new("cargo")
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        .args([
            "deb",
            "-p",
            "ibsm",
            "--no-build",
            "--no-strip",
            "--fast",
            "--output",
        ])
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

//! The VFIO kernel tests in a QEMU guest: `hwtest/guest/run.sh` boots Debian's kernel under TCG
//! with an emulated Intel IOMMU, QEMU's `edu` and `e1000e` devices and a non-viable group, and
//! runs the `vfio-kernel-tests` binary built with this crate inside it (docs/hwtest.md).
//!
//! Needs `qemu-system-x86`, `linux-image-amd64` and `busybox-static` (and read access to
//! `/boot/vmlinuz-*`, which Debian makes root-only). Without them the tests skip loudly, and
//! fail under `IBSM_REQUIRE_PEERS=1` (CI installs them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

/// Every case the guest must pass, written out here so that a case silently dropped from the
/// binary's plan fails this test too.
const CASES: [&str; 13] = [
    "edu_bar0_identification_and_liveness",
    "edu_factorial",
    "edu_bus_master_enable",
    "edu_dma_round_trip_through_the_iommu",
    "edu_dma_to_an_unmapped_iova_is_blocked",
    "edu_msi_through_an_eventfd",
    "hca_driver_mad_pool_over_edu_dma",
    "e1000e_regions_and_mmap_info",
    "e1000e_msix_vectors_fire_from_ics",
    "e1000e_device_reset",
    "error_group_not_viable",
    "error_second_open_of_a_group_is_busy",
    "error_overlapping_dma_map_is_eexist",
];

/// The cases that need edu to reach the right memory; `--break dma-iova` must fail them.
const DMA_CASES: [&str; 2] = [
    "edu_dma_round_trip_through_the_iommu",
    "hca_driver_mad_pool_over_edu_dma",
];

/// One guest at a time: two TCG guests at once on a 2-core machine only slow each other.
static GUEST: Mutex<()> = Mutex::new(());

fn require_peers() -> bool {
    std::env::var("IBSM_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Straight to stderr, so it shows for passing tests too (the harness captures `eprintln!`).
fn tell(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

struct Run {
    code: i32,
    /// The guest's serial console.
    log: String,
    /// The script's own messages (and QEMU's).
    notes: String,
    secs: f64,
}

impl Run {
    fn has_line(&self, prefix: &str) -> bool {
        self.log.lines().any(|l| l.starts_with(prefix))
    }
    fn dump(&self) -> String {
        format!(
            "exit {}\n--- guest console ---\n{}\n--- run.sh ---\n{}",
            self.code, self.log, self.notes
        )
    }
}

/// Runs the guest script; `None` (after a loud skip) when a prerequisite is missing.
fn run_guest(test: &str, extra: &[&str]) -> Option<Run> {
    let _one = GUEST.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::temp_dir().join(format!("ibsm-qemu-guest-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("console.log");
    let t = Instant::now();
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/guest/run.sh"))
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_vfio-kernel-tests"))
        .arg("--log")
        .arg(&log)
        .args(extra)
        .output()
        .expect("cannot run bash");
    let secs = t.elapsed().as_secs_f64();
    let code = out.status.code().unwrap_or(-1);
    let notes = String::from_utf8_lossy(&out.stderr).into_owned();
    if code == 77 {
        let why = notes
            .lines()
            .find_map(|l| l.strip_prefix("guest: SKIP-PREREQUISITE: "))
            .unwrap_or("a prerequisite is missing")
            .to_string();
        assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
        tell(&format!(
            "SKIPPED: {test}: {why} (set IBSM_REQUIRE_PEERS=1 to make this fatal)"
        ));
        let _ = std::fs::remove_dir_all(&dir);
        return None;
    }
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    Some(Run {
        code,
        log: log_text,
        notes,
        secs,
    })
}

fn uptime(run: &Run, what: &str) -> String {
    run.log
        .lines()
        .find_map(|l| l.strip_prefix(&format!("IBSM-GUEST-UPTIME {what} ")))
        .unwrap_or("?")
        .to_string()
}

#[test]
fn vfio_kernel_paths_pass_in_a_qemu_guest() {
    let Some(run) = run_guest("vfio_kernel_paths_pass_in_a_qemu_guest", &[]) else {
        return;
    };
    assert_eq!(run.code, 0, "the guest tests failed:\n{}", run.dump());
    for case in CASES {
        assert!(
            run.has_line(&format!("PASS {case} (")),
            "no PASS line for {case}:\n{}",
            run.dump()
        );
    }
    // The blocked write was the IOMMU's doing: the guest kernel logged the fault for edu.
    assert!(
        run.log
            .lines()
            .any(|l| l.contains("DMA Write") && l.contains("Request device [00:02.0] fault addr")),
        "no IOMMU write fault for edu (00:02.0) in the guest's kernel log:\n{}",
        run.dump()
    );
    tell(&format!(
        "qemu guest: {} VFIO kernel cases passed; boot + tests {:.1} s wall (TCG), guest uptime \
         {} s at the first case, {} s after the last",
        CASES.len(),
        run.secs,
        uptime(&run, "tests"),
        uptime(&run, "done")
    ));
}

#[test]
fn a_wrong_dma_iova_makes_the_guest_tests_fail() {
    let Some(run) = run_guest(
        "a_wrong_dma_iova_makes_the_guest_tests_fail",
        &["--break", "dma-iova"],
    ) else {
        return;
    };
    assert_eq!(
        run.code,
        1,
        "with edu given wrong IOVAs the guest run must fail (exit 1):\n{}",
        run.dump()
    );
    for case in DMA_CASES {
        assert!(
            run.has_line(&format!("FAIL {case} (")),
            "{case} did not fail with a wrong IOVA:\n{}",
            run.dump()
        );
    }
    // Only the DMA cases fail: the breakage is the mapping, not the device or the guest.
    for case in CASES.iter().filter(|c| !DMA_CASES.contains(c)) {
        assert!(
            run.has_line(&format!("PASS {case} (")),
            "{case} should still pass:\n{}",
            run.dump()
        );
    }
    tell(&format!(
        "qemu guest (IBSM_HWTEST_BREAK=dma-iova): {} DMA cases failed as they must; {:.1} s wall",
        DMA_CASES.len(),
        run.secs
    ));
}

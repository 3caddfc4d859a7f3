//! ibsm's SA against stock OpenSM's on the same fabric (issue 13): `tests/sa-diff.sh` runs
//! OpenSM, then `ibsm run` with OpenSM's guid2lid, on one simulated fabric (stock `ibsim`, and
//! `ibsm sim serve`), dumps every record type ibsm serves with stock `saquery` through
//! `libibsm_umad.so` from both, and compares them as record sets after the normalisations its
//! header documents (PathRecords included: `saquery -p`, every ordered pair). Every record
//! type must compare equal, and the record types every subnet has (NodeRecord … GUIDInfoRecord,
//! PathRecord) must be non-empty on both sides.
//!
//! Skipped loudly without ibsim / opensm / infiniband-diags, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use umad::testutil::{peers_or_skip, report_skip, require_peers, set_current_shim, Shim};

const TYPES: [&str; 18] = [
    "NR", "PIR", "SWIR", "LFTR", "MFTR", "LR", "SMIR", "GIR", "SL2VL", "VLAR", "CPI", "PKTR",
    "MCMR", "MCG", "MCM", "MCMT", "PR", "ISSM",
];
/// Record types every fabric has (MCMR, MCG, MCM: the default partition's IPoIB broadcast
/// group, which both SMs pre-create; SL2VL, VLAR: every port's tables; ISSM: the SM's port).
const NON_EMPTY: [&str; 16] = [
    "NR", "PIR", "SWIR", "LFTR", "LR", "SMIR", "GIR", "SL2VL", "VLAR", "CPI", "PKTR", "MCMR",
    "MCG", "MCM", "PR", "ISSM",
];

fn have(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

fn run(server: &str) {
    let test = format!("sa_diff on {server}");
    set_current_shim(Shim::Ibsm);
    if !peers_or_skip(&test) {
        return;
    }
    for prog in ["opensm", "saquery", "bash", "awk"] {
        if !have(prog) {
            let why = format!("{prog} not installed (apt-get install opensm infiniband-diags)");
            assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
            report_skip(&test, &why);
            return;
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let net = root.join("fabric-sim/testdata/ibsim-net-examples/net.2sw2path");
    let child = Command::new("bash")
        .arg(root.join("tests/sa-diff.sh"))
        .args(["--server", server])
        .arg(&net)
        .env("IBSM_UMAD_SHIM", Shim::Ibsm.path().unwrap())
        .env("IBSM_BIN", env!("CARGO_BIN_EXE_ibsm"))
        .env_remove("IBSIM_SOCKNAME")
        .env_remove("SIM_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, in_time) = umad::testutil::wait_bounded(child, Duration::from_secs(300)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(in_time, "{test}: no result in 300 s\n{stdout}\n{stderr}");
    eprintln!("{test}:\n{stdout}");
    let mut seen = Vec::new();
    for l in stdout.lines().filter(|l| l.starts_with("DIFF ")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 7, "{l}");
        assert_eq!(f[6], "PASS", "{test}: {l}\n{stdout}\n{stderr}");
        let count = |s: &str, p: &str| -> usize { s.strip_prefix(p).unwrap().parse().unwrap() };
        let (a, b) = (count(f[4], "opensm="), count(f[5], "ibsm="));
        if NON_EMPTY.contains(&f[3]) {
            assert!(a > 0 && b > 0, "{test}: empty {}: {l}", f[3]);
        }
        seen.push(f[3].to_string());
    }
    assert_eq!(
        seen, TYPES,
        "{test}: record types compared\n{stdout}\n{stderr}"
    );
    assert!(
        out.status.success(),
        "{test}: {:?}\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn every_served_record_type_matches_opensm_on_ibsim() {
    run("ibsim");
}

#[test]
fn every_served_record_type_matches_opensm_on_ibsm_sim_serve() {
    run("ibsm");
}

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
    run_with(server, &[]);
}

/// Runs tests/sa-diff.sh on `server` with `extra` options; checks every record type PASSes
/// (non-empty where every fabric has records) and returns its standard output.
fn run_with(server: &str, extra: &[&str]) -> String {
    let test = format!("sa_diff on {server} {extra:?}");
    set_current_shim(Shim::Ibsm);
    if !peers_or_skip(&test) {
        return String::new();
    }
    for prog in ["opensm", "saquery", "bash", "awk"] {
        if !have(prog) {
            let why = format!("{prog} not installed (apt-get install opensm infiniband-diags)");
            assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
            report_skip(&test, &why);
            return String::new();
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let net = root.join("fabric-sim/testdata/ibsim-net-examples/net.2sw2path");
    let child = Command::new("bash")
        .arg(root.join("tests/sa-diff.sh"))
        .args(["--server", server])
        .args(extra)
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
    stdout.into_owned()
}

#[test]
fn every_served_record_type_matches_opensm_on_ibsim() {
    run("ibsim");
}

#[test]
fn every_served_record_type_matches_opensm_on_ibsm_sim_serve() {
    run("ibsm");
}

/// partitions.conf's IPoIB options end to end, against OpenSM on the same file: two `ipoib`
/// partitions with mtu=, rate=, sl=, scope=, Q_Key=, TClass=, FlowLabel=, an IPv4 group and a
/// group with its own flags. With QoS on, a partition's sl= reaches its broadcast group and the
/// PathRecords of its P_Key (OpenSM overrides it to 0 without QoS: the plain run checks that).
fn partitions(server: &str) {
    let dir = umad::testutil::TempDir::new("sa-diff-parts").unwrap();
    let conf = dir.path().join("partitions.conf");
    std::fs::write(
        &conf,
        "Default=0x7fff, ipoib, mtu=5, rate=7, sl=2, scope=2, scope=5, Q_Key=0x1234, \
         TClass=8, FlowLabel=0x123 : ALL=full ;\n\
         storage=0x8001, ipoib, mtu=4, rate=6, sl=3 : ALL_CAS=full ;\n\
         storage=0x8001 : mgid=ff12:401b::0707\n\
         \t, mgid=ff15::1,sl=1,Q_Key=0xBEEF,rate=3,mtu=2 ;\n",
    )
    .unwrap();
    let conf = conf.to_str().unwrap();
    for qos in [false, true] {
        let mut args = vec!["--partitions", conf, "--keep"];
        if qos {
            args.push("--qos");
        }
        let out = run_with(server, &args);
        if out.is_empty() {
            return; // skipped
        }
        // Both SMs read the file: four pre-created groups (the default partition alone has one).
        assert!(
            out.lines().any(|l| l.contains(" MCG opensm=4 ibsm=4 PASS")),
            "{out}"
        );
        let work = out
            .lines()
            .find_map(|l| l.strip_prefix("work directory: "))
            .expect("the kept work directory");
        let work = Path::new(work);
        let mcg = std::fs::read_to_string(work.join("ibsm/MCG.out")).unwrap();
        let pr = std::fs::read_to_string(work.join("ibsm/PR.out")).unwrap();
        std::fs::remove_dir_all(work).unwrap();
        // The default partition's broadcast group as the options say (and OpenSM built it).
        let bcast = mcg
            .split("MCMemberRecord group dump:")
            .find(|r| r.contains("ff12:401b:ffff::ffff:ffff"))
            .unwrap_or_else(|| panic!("no default broadcast group:\n{mcg}"));
        for want in [
            "Mtu.....................0x85",
            "Rate....................0x87",
        ] {
            assert!(bcast.contains(want), "{want}:\n{bcast}");
        }
        let sl = if qos { "0x2" } else { "0x0" };
        assert!(
            bcast.contains(&format!("SL......................{sl}")),
            "qos {qos}: broadcast SL {sl}:\n{bcast}"
        );
        // PathRecords of the default P_Key carry its SL (with QoS).
        let default_paths: Vec<&str> = pr
            .split("PathRecord dump:")
            .filter(|r| r.contains("pkey....................0xFFFF"))
            .collect();
        assert!(!default_paths.is_empty(), "{pr}");
        assert!(
            default_paths
                .iter()
                .all(|r| r.contains(&format!("sl......................{sl}"))),
            "qos {qos}: PathRecord SL {sl}:\n{pr}"
        );
    }
}

#[test]
fn partitions_conf_ipoib_options_match_opensm_on_ibsm_sim_serve() {
    partitions("ibsm");
}

//! The SA reference runs of issue 10 as tests: `tests/sa-reference.sh` (stock OpenSM as SM and
//! SA, stock `saquery` and `osmtest -f c` / `-f a` as clients, all under `libibsm_umad.so`) on
//! each reference topology, with the fabric simulated by stock `ibsim` and by `ibsm sim serve`,
//! and every check it prints must pass.
//!
//! The script derives the record counts each query must return from the `.net` file; this test
//! derives them again from [`fabric_sim::topo::Topology`] and checks the script asked for the
//! same numbers, so neither can drift into agreeing with a wrong OpenSM answer. The reference
//! files are the generators' output (checked byte for byte), so they can be rebuilt from specs.
//!
//! Skipped loudly without ibsim / opensm / infiniband-diags, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use fabric_sim::topo::Topology;
use umad::testutil::{peers_or_skip, report_skip, require_peers, set_current_shim, Shim};

/// (file stem, generator spec).
const CASES: [(&str, &str); 3] = [
    ("fat-tree-3-8", "fat-tree:3,8"),
    ("torus-4-4-cas4", "torus:4,4,cas=4"),
    ("random-16-48-8-7", "random:16,48,8,7,ports=12"),
];

fn data(stem: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/sa-reference")
        .join(format!("{stem}.net"))
}

#[test]
fn reference_topologies_are_the_generators_output() {
    for (stem, spec) in CASES {
        let file = std::fs::read_to_string(data(stem)).unwrap();
        let generated = Topology::generate(spec).unwrap().to_net();
        assert!(
            file == generated,
            "{stem}.net is not `{spec}` (regenerate: ibsm topo {spec} --write-net tests/data/sa-reference/{stem}.net)"
        );
    }
}

/// The counts the topology implies (see the script's header), from the model.
fn expected(topo: &Topology) -> BTreeMap<&'static str, usize> {
    let switches = topo.num_switches();
    let mut sw_ports = 0;
    let mut ca_ports = 0;
    for (id, n) in topo.nodes() {
        if n.is_switch() {
            sw_ports += usize::from(n.num_ports()) + 1;
        } else {
            ca_ports += topo.ports(id).filter(|(_, p)| p.peer().is_some()).count();
        }
    }
    let e = switches + ca_ports;
    BTreeMap::from([
        ("saquery:NR", e),
        ("saquery:-p", e * e),
        ("saquery:PIR", sw_ports + ca_ports),
        ("saquery:-x", 2 * topo.num_links()),
        ("saquery:SWIR", switches),
        ("saquery:LFTR", switches * (e / 64 + 1)),
        ("inventory-NODE", e),
        ("inventory-PORT", sw_ports + ca_ports),
        ("inventory-PATH", e * e),
        ("inventory-LINK", 2 * topo.num_links()),
    ])
}

fn have(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

fn run(stem: &str, spec: &str, server: &str) {
    let test = format!("sa_reference {stem} on {server}");
    set_current_shim(Shim::Ibsm);
    if !peers_or_skip(&test) {
        return;
    }
    for prog in ["opensm", "osmtest", "saquery", "bash", "awk"] {
        if !have(prog) {
            let why = format!("{prog} not installed (apt-get install opensm infiniband-diags)");
            assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
            report_skip(&test, &why);
            return;
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/sa-reference.sh");
    let child = Command::new("bash")
        .arg(&script)
        .args(["--server", server])
        .arg(data(stem))
        .env("IBSM_UMAD_SHIM", Shim::Ibsm.path().unwrap())
        .env("IBSM_BIN", env!("CARGO_BIN_EXE_ibsm"))
        .env_remove("IBSIM_SOCKNAME")
        .env_remove("SIM_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // On timeout the script gets SIGTERM first: its exit trap stops its simulator and OpenSM.
    let (out, in_time) = umad::testutil::wait_bounded(child, Duration::from_secs(600)).unwrap();
    assert!(
        in_time,
        "{test}: no result in 600 s\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{test}:\n{stdout}");
    let mut checks = BTreeMap::new();
    for l in stdout.lines().filter(|l| l.starts_with("CHECK ")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 8, "{l}");
        assert_eq!(f[6], "PASS", "{test}: {l}\n{stdout}\n{stderr}");
        let want: usize = f[5].trim_start_matches("want=").parse().unwrap();
        checks.insert(f[3].to_string(), want);
    }
    assert!(
        out.status.success(),
        "{test}: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    for what in ["opensm-subnet-up", "saquery:-m", "osmtest-c", "osmtest-a"] {
        assert!(
            checks.contains_key(what),
            "{test}: no {what} check\n{stdout}"
        );
    }
    let topo = Topology::generate(spec).unwrap();
    for (what, n) in expected(&topo) {
        assert_eq!(
            checks.get(what),
            Some(&n),
            "{test}: the script expects another {what} count than the topology implies"
        );
    }
}

#[test]
fn fat_tree_of_128_cas_on_ibsim() {
    run("fat-tree-3-8", "fat-tree:3,8", "ibsim");
}

#[test]
fn torus_on_ibsim() {
    run("torus-4-4-cas4", "torus:4,4,cas=4", "ibsim");
}

#[test]
fn random_graph_on_ibsim() {
    run("random-16-48-8-7", "random:16,48,8,7,ports=12", "ibsim");
}

#[test]
fn fat_tree_of_128_cas_on_ibsm_sim_serve() {
    run("fat-tree-3-8", "fat-tree:3,8", "ibsm");
}

#[test]
fn torus_on_ibsm_sim_serve() {
    run("torus-4-4-cas4", "torus:4,4,cas=4", "ibsm");
}

#[test]
fn random_graph_on_ibsm_sim_serve() {
    run("random-16-48-8-7", "random:16,48,8,7,ports=12", "ibsm");
}

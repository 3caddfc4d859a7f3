//! ibsm's SA against stock OpenSM's on the same fabric (issue 13): `tests/sa-diff.sh` runs
//! OpenSM, then `ibsm run` with OpenSM's guid2lid, on one simulated fabric (stock `ibsim`, and
//! `ibsm sim serve`), dumps every record type ibsm serves with stock `saquery` through
//! `libibsm_umad.so` from both, and compares them as record sets after the normalisations its
//! header documents (PathRecords included: `saquery -p`, every ordered pair). Every record
//! type must compare equal, and the record types every subnet has (NodeRecord … GUIDInfoRecord,
//! PathRecord) must be non-empty on both sides. Further cases: partitions.conf's IPoIB options,
//! a qos-policy.conf's QoS levels in the PathRecords, and torus-2QoS on a generated torus (its
//! LFTs and path SLs are OpenSM's).
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

/// Runs tests/sa-diff.sh on `server` with `extra` options on net.2sw2path; see [`run_on`].
fn run_with(server: &str, extra: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    run_on(
        server,
        &root.join("fabric-sim/testdata/ibsim-net-examples/net.2sw2path"),
        extra,
    )
}

/// Runs tests/sa-diff.sh on `server` and the fabric `net` with `extra` options; checks every
/// record type PASSes (non-empty where every fabric has records) and returns its standard
/// output (empty when skipped).
fn run_on(server: &str, net: &Path, extra: &[&str]) -> String {
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
    let child = Command::new("bash")
        .arg(root.join("tests/sa-diff.sh"))
        .args(["--server", server])
        .args(extra)
        .arg(net)
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
        let work = kept_dir(&out);
        let mcg = std::fs::read_to_string(work.join("ibsm/MCG.out")).unwrap();
        let pr = std::fs::read_to_string(work.join("ibsm/PR.out")).unwrap();
        std::fs::remove_dir_all(&work).unwrap();
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

/// The work directory a `--keep` run names in its output.
fn kept_dir(out: &str) -> std::path::PathBuf {
    out.lines()
        .find_map(|l| l.strip_prefix("work directory: "))
        .expect("the kept work directory")
        .into()
}

/// The `saquery -p` output of each SM (OpenSM's, ibsm's) in the work directory a `--keep` run
/// names; the directory is removed.
fn kept_paths(out: &str) -> (String, String) {
    let work = kept_dir(out);
    let read = |sm: &str| std::fs::read_to_string(work.join(sm).join("PR.out")).unwrap();
    let both = (read("opensm"), read("ibsm"));
    std::fs::remove_dir_all(&work).unwrap();
    both
}

/// How many PathRecords of a `saquery -p` dump carry `field` (e.g. `sl......................0x3`).
fn count_records(pr: &str, field: &str) -> usize {
    pr.split("PathRecord dump:")
        .filter(|r| r.contains(field))
        .count()
}

/// qos-policy.conf (`-Q -Y`, issue 14) end to end, against OpenSM on the same file: port
/// groups by port name, QoS levels with SL, MTU limit, rate limit and packet lifetime, and
/// match rules by source and destination group. Every PathRecord must equal OpenSM's, and the
/// levels must really apply: Compute→Storage paths (2) take SL 3, MTU 512, packet lifetime 14,
/// Compute→Compute paths (4, both directions and each port to itself) SL 5. Then the same with
/// a simplified qos-ulps section.
#[test]
fn qos_policy_levels_match_opensm_on_ibsim() {
    let dir = umad::testutil::TempDir::new("sa-diff-qos-policy").unwrap();
    let policy = dir.path().join("qos-policy.conf");
    std::fs::write(
        &policy,
        "port-groups\n\
         \tport-group\n\t\tname: Storage\n\t\tport-name: Hca1/P1\n\tend-port-group\n\
         \tport-group\n\t\tname: Compute\n\t\tport-name: Hca2/P1, Hca3/P1\n\tend-port-group\n\
         end-port-groups\n\n\
         qos-levels\n\
         \tqos-level\n\t\tname: DEFAULT\n\t\tsl: 0\n\tend-qos-level\n\
         \tqos-level\n\t\tname: StorageQoS\n\t\tsl: 3\n\t\tmtu-limit: 2\n\t\trate-limit: 3\n\
         \t\tpacket-life: 14\n\tend-qos-level\n\
         \tqos-level\n\t\tname: ComputeQoS\n\t\tsl: 5\n\tend-qos-level\n\
         end-qos-levels\n\n\
         qos-match-rules\n\
         \tqos-match-rule\n\t\tsource: Compute\n\t\tdestination: Storage\n\
         \t\tqos-level-name: StorageQoS\n\tend-qos-match-rule\n\
         \tqos-match-rule\n\t\tsource: Compute\n\t\tdestination: Compute\n\
         \t\tqos-level-name: ComputeQoS\n\tend-qos-match-rule\n\
         end-qos-match-rules\n",
    )
    .unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let net = root.join("fabric-sim/testdata/ibsim-net-examples/net.2sw2path4hca");
    let out = run_on(
        "ibsim",
        &net,
        &["--qos-policy", policy.to_str().unwrap(), "--keep"],
    );
    if out.is_empty() {
        return; // skipped
    }
    let (osm, ours) = kept_paths(&out);
    for (sm, pr) in [("opensm", &osm), ("ibsm", &ours)] {
        let n = |f: &str| count_records(pr, f);
        assert_eq!(n("sl......................0x3"), 2, "{sm}:\n{pr}");
        assert_eq!(n("sl......................0x5"), 4, "{sm}:\n{pr}");
        assert_eq!(n("pkt_life................0x8E"), 2, "{sm}:\n{pr}");
        assert_eq!(n("mtu.....................0x82"), 2, "{sm}:\n{pr}");
    }

    // The simplified qos-ulps section, with OpenSM's precedence (the first matching line
    // wins): to Hca1 SL 2 (6 paths), from Hca2 SL 6 (5 more), to Hca4 SL 7 (the srp line
    // matches without a service ID, 5 more), the rest the default SL 1.
    std::fs::write(
        &policy,
        "qos-ulps\n\
         \tdefault : 1\n\
         \tipoib : 4\n\
         \tany, target-port-guid 0x0000000000100001 : 2\n\
         \tany, source-port-guid 0x0000000000100004 : 6\n\
         \tsdp, port-num 1 : 3\n\
         \tsrp, target-port-guid 0x000000000010000a : 7\n\
         end-qos-ulps\n",
    )
    .unwrap();
    let out = run_on(
        "ibsim",
        &net,
        &["--qos-policy", policy.to_str().unwrap(), "--keep"],
    );
    let (osm, ours) = kept_paths(&out);
    for (sm, pr) in [("opensm", &osm), ("ibsm", &ours)] {
        for (sl, want) in [(1, 20), (2, 6), (6, 5), (7, 5)] {
            let got = count_records(pr, &format!("sl......................0x{sl}"));
            assert_eq!(got, want, "{sm}: SL {sl}:\n{pr}");
        }
    }
}

/// torus-2QoS (issue 14) against OpenSM's on the same 4×4×3 ibsim torus and torus-2QoS.conf:
/// every record type equal, so the LFTs (LinearForwardingTableRecords) are OpenSM's block for
/// block and every PathRecord (9,216, each ordered pair of end ports) carries OpenSM's path SL.
/// A qos-policy.conf puts the paths to two CAs on a QoS level with SL 8: the SA keeps that
/// bit 3 beside the dateline bits, as OpenSM's `torus_path_sl`.
#[test]
fn torus_2qos_tables_and_path_sls_match_opensm_on_ibsim() {
    let dir = umad::testutil::TempDir::new("sa-diff-torus").unwrap();
    let spec = "torus:4,4,3";
    let topo = fabric_sim::topo::Topology::generate(spec).unwrap();
    let net = dir.path().join("torus.net");
    std::fs::write(&net, topo.to_net()).unwrap();
    let conf = dir.path().join("torus-2QoS.conf");
    let grid = fabric_sim::topo::gen::Grid::of_spec(spec).unwrap().unwrap();
    std::fs::write(&conf, fabric_sim::topo::subnet::torus_conf(&grid)).unwrap();
    let policy = dir.path().join("qos-policy.conf");
    std::fs::write(
        &policy,
        "port-groups\n  port-group\n    name: High\n    port-name: ca-1-1-1-0/P1, ca-2-3-0-0/P1\n\
         end-port-group\nend-port-groups\nqos-levels\n  qos-level\n    name: DEFAULT\n\
         sl: 0\n  end-qos-level\n  qos-level\n    name: HighQoS\n    sl: 8\n  end-qos-level\n\
         end-qos-levels\nqos-match-rules\n  qos-match-rule\n    destination: High\n\
         qos-level-name: HighQoS\n  end-qos-match-rule\nend-qos-match-rules\n",
    )
    .unwrap();
    let out = run_on(
        "ibsim",
        &net,
        &[
            "--qos-policy",
            policy.to_str().unwrap(),
            "--routing",
            "torus-2QoS",
            "--torus-config",
            conf.to_str().unwrap(),
            "--keep",
        ],
    );
    if out.is_empty() {
        return; // skipped
    }
    assert!(
        out.contains(" LFTR opensm=96 ibsm=96 PASS")
            && out.contains(" PR opensm=9216 ibsm=9216 PASS"),
        "{out}"
    );
    let (_, ours) = kept_paths(&out);
    // Paths that cross a ring's dateline take its SL bit (x 1, y 2, z 4); the 192 paths to
    // the two CAs (from each of the 96 end ports) also bit 3.
    let on = |sl: u8| count_records(&ours, &format!("sl......................0x{sl:X}"));
    for sl in 0..8 {
        assert!(on(sl) > 0 && on(sl) < 9216, "{} paths on SL {sl}", on(sl));
    }
    assert_eq!((8..16).map(on).sum::<usize>(), 192);
}

/// sa-diff on ibsim with `extra`: every record type passes ([`run_on`]), and the LFTs of all
/// `switches` were compared (LFTR).
fn lfts_match_opensm(net: &Path, extra: &[&str], switches: usize) {
    let out = run_on("ibsim", net, extra);
    if out.is_empty() {
        return; // skipped
    }
    assert!(
        out.contains(&format!(" LFTR opensm={switches} ibsm={switches} PASS")),
        "{out}"
    );
}

/// fat-tree:2,8 as `DIR/ft.net`, and as a subnet with fresh LIDs for the checks in process
/// (the SMs on ibsim assign their own).
fn fat_tree_2_8(dir: &Path) -> (fabric_sim::topo::Topology, std::path::PathBuf, sm::Subnet) {
    let topo = fabric_sim::topo::Topology::generate("fat-tree:2,8").unwrap();
    let net = dir.join("ft.net");
    std::fs::write(&net, topo.to_net()).unwrap();
    let mut s = fabric_sim::topo::subnet::to_subnet(&topo);
    sm::lid::assign_lids(
        &mut s,
        &sm::lid::LidConfig {
            lmc: 0,
            reassign_lids: false,
            lmc_esp0: false,
        },
        &sm::lid::Guid2Lid::new(),
    )
    .unwrap();
    (topo, net, s)
}

/// `guid_routing_order_file` (`-X`) against OpenSM on the same file: the CA ports listed last
/// first, minhop routes them first, and every switch's LFT (LFTR) equals OpenSM's. The order
/// does move routes on this fabric: ibsm's minhop without the file gives other tables.
#[test]
fn guid_routing_order_matches_opensm_on_ibsim() {
    use sm::routing::{route_chain_with, EngineOptions, OptionFile};
    let dir = umad::testutil::TempDir::new("sa-diff-order").unwrap();
    let (topo, net, s) = fat_tree_2_8(dir.path());
    let mut cas: Vec<u64> = s
        .end_ports()
        .filter(|&(n, _)| s.node(n).node_type == ibmad::NodeType::CA)
        .map(|(n, p)| s.port(n, p).unwrap().guid.0)
        .collect();
    cas.reverse();
    let text: String = cas.iter().map(|g| format!("0x{g:016x}\n")).collect();
    let order = dir.path().join("guid-routing-order.txt");
    std::fs::write(&order, &text).unwrap();
    let lfts = |opts: &EngineOptions| {
        route_chain_with(&["minhop".to_string()], true, &s, 0, opts)
            .unwrap()
            .routes
            .lfts
    };
    let ordered = EngineOptions {
        guid_routing_order_file: Some(OptionFile::from_text("order", &text)),
        ..EngineOptions::default()
    };
    assert_ne!(
        lfts(&ordered),
        lfts(&EngineOptions::default()),
        "the order moves no route on this fabric"
    );
    lfts_match_opensm(
        &net,
        &[
            "--routing",
            "minhop",
            "--guid-routing-order",
            order.to_str().unwrap(),
        ],
        topo.num_switches(),
    );
}

/// `connect_roots` (`-z`) with updn against OpenSM: the spines of a two-level fat tree given
/// as roots reach each other only down and up again, which up/down forbids; with
/// connect_roots both SMs route the roots' LIDs by min-hop, and every switch's LFT (LFTR)
/// equals OpenSM's. Without it ibsm's updn leaves the spine-to-spine entries unset.
#[test]
fn connect_roots_matches_opensm_on_ibsim() {
    use sm::routing::{route_chain_with, EngineOptions, OptionFile};
    let dir = umad::testutil::TempDir::new("sa-diff-roots").unwrap();
    let (topo, net, s) = fat_tree_2_8(dir.path());
    // The spines: the switches without CAs.
    let spines: Vec<sm::NodeId> = s
        .switches()
        .filter(|&sw| {
            (1..=s.node(sw).num_ports).all(|p| {
                s.port(sw, ibmad::PortNum(p))
                    .and_then(|x| x.remote)
                    .is_none_or(|(r, _)| s.node(r).is_switch())
            })
        })
        .collect();
    assert!(spines.len() >= 2, "{} spines", spines.len());
    let text: String = spines
        .iter()
        .map(|&sw| format!("0x{:016x}\n", s.node(sw).guid.0))
        .collect();
    let roots = dir.path().join("root-guids.txt");
    std::fs::write(&roots, &text).unwrap();
    let spine_to_spine = |connect: bool| {
        let opts = EngineOptions {
            root_guid_file: Some(OptionFile::from_text("roots", &text)),
            connect_roots: connect,
            ..EngineOptions::default()
        };
        let out = route_chain_with(&["updn".to_string()], true, &s, 0, &opts).unwrap();
        let lid = s.lid_of(spines[1], ibmad::PortNum(0));
        out.routes.lfts.get(spines[0], lid)
    };
    assert_eq!(
        spine_to_spine(false),
        None,
        "up/down routes no spine to a spine"
    );
    assert!(spine_to_spine(true).is_some(), "connect_roots routes them");
    lfts_match_opensm(
        &net,
        &[
            "--routing",
            "updn",
            "--root-guid-file",
            roots.to_str().unwrap(),
            "--connect-roots",
        ],
        topo.num_switches(),
    );
}

/// `connect_roots` (`-z`) with ftree against OpenSM: on a two-level fat tree the spines reach
/// each other only down and up again; with connect_roots both SMs route those LIDs through
/// the last leaf (OpenSM `fabric_route_roots`), and every switch's LFT (LFTR) equals OpenSM's.
/// Without it ibsm's ftree leaves the spine-to-spine entries unset.
#[test]
fn ftree_connect_roots_matches_opensm_on_ibsim() {
    use sm::routing::{route_chain_with, EngineOptions};
    let dir = umad::testutil::TempDir::new("sa-diff-ftree-roots").unwrap();
    let (topo, net, s) = fat_tree_2_8(dir.path());
    let unset = |connect: bool| {
        let opts = EngineOptions {
            connect_roots: connect,
            ..EngineOptions::default()
        };
        let out = route_chain_with(&["ftree".to_string()], true, &s, 0, &opts).unwrap();
        assert_eq!(out.engine, "ftree", "{:?}", out.log);
        s.switches()
            .flat_map(|a| s.switches().map(move |b| (a, b)))
            .filter(|&(a, b)| {
                out.routes
                    .lfts
                    .get(a, s.lid_of(b, ibmad::PortNum(0)))
                    .is_none()
            })
            .count()
    };
    assert!(
        unset(false) > 0,
        "ftree routes every switch pair on its own"
    );
    assert_eq!(unset(true), 0, "connect_roots leaves switch pairs unrouted");
    lfts_match_opensm(
        &net,
        &["--routing", "ftree", "--connect-roots"],
        topo.num_switches(),
    );
}

/// `spec` generated and written as `DIR/<spec>.net`.
fn generated_net(dir: &Path, spec: &str) -> (fabric_sim::topo::Topology, std::path::PathBuf) {
    let topo = fabric_sim::topo::Topology::generate(spec).unwrap();
    let net = dir.join(format!("{}.net", spec.replace([':', ',', '='], "-")));
    std::fs::write(&net, topo.to_net()).unwrap();
    (topo, net)
}

/// sa-diff on ibsim with `extra`: false if it was skipped (no peers); else it asserts that
/// every switch's LFT equals OpenSM's: the LFTR line (one record per switch and block of 64
/// LIDs, so at least `switches`) passes.
fn lftr_pass(net: &Path, extra: &[&str], switches: usize) -> bool {
    let out = run_on("ibsim", net, extra);
    if out.is_empty() {
        return false;
    }
    let lftr = out.lines().find(|l| l.contains(" LFTR ")).unwrap_or("");
    let n: usize = lftr
        .split_whitespace()
        .find_map(|w| w.strip_prefix("opensm="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(
        n >= switches && lftr.ends_with(&format!("ibsm={n} PASS")),
        "{extra:?}: {out}"
    );
    true
}

/// The first switch-facing port of every switch with a CA: (switch GUID, port).
fn leaf_uplinks(s: &sm::Subnet) -> Vec<(u64, u8)> {
    let remote = |sw: sm::NodeId, p: u8| s.port(sw, ibmad::PortNum(p)).and_then(|x| x.remote);
    s.switches()
        .filter(|&sw| {
            (1..=s.node(sw).num_ports)
                .any(|p| remote(sw, p).is_some_and(|(r, _)| !s.node(r).is_switch()))
        })
        .filter_map(|sw| {
            let p = (1..=s.node(sw).num_ports)
                .find(|&p| remote(sw, p).is_some_and(|(r, _)| s.node(r).is_switch()))?;
            Some((s.node(sw).guid.0, p))
        })
        .collect()
}

/// `connect_roots` (`-z`) with dnup against OpenSM: the top switches of two- and three-level
/// fat trees reach each other only toward the leaves and away again, which down/up forbids;
/// with connect_roots both SMs route those LIDs by min-hop, and every switch's LFT (LFTR)
/// equals OpenSM's.
#[test]
fn dnup_connect_roots_matches_opensm_on_ibsim() {
    let dir = umad::testutil::TempDir::new("sa-diff-dnup-roots").unwrap();
    for spec in ["fat-tree:2,8", "fat-tree:3,4"] {
        let (topo, net) = generated_net(dir.path(), spec);
        let args = ["--routing", "dnup", "--connect-roots"];
        if !lftr_pass(&net, &args, topo.num_switches()) {
            return; // skipped
        }
    }
}

/// `port_shifting` (`--port-shifting`) against OpenSM: minhop on a fat tree, and with LMC 1
/// (OpenSM's second scan redoes the system/node spreading) on a random irregular graph;
/// every switch's LFT (LFTR) equals OpenSM's. (The option moves routes on both fabrics:
/// `routing_minhop::port_shifting_moves_routes_and_keeps_them_minimal`.)
#[test]
fn port_shifting_matches_opensm_on_ibsim() {
    let dir = umad::testutil::TempDir::new("sa-diff-shift").unwrap();
    for (spec, lmc) in [("fat-tree:2,8", "0"), ("random:24,40,20,1,ports=12", "1")] {
        let (topo, net) = generated_net(dir.path(), spec);
        let args = ["--routing", "minhop", "--port-shifting", "--lmc", lmc];
        if !lftr_pass(&net, &args, topo.num_switches()) {
            return; // skipped
        }
    }
}

/// `port_prof_ignore_file` (`-i`) and `hop_weights_file` (`-w`) against OpenSM: with the same
/// files (the first switch-facing port of every leaf; weight 3 there), every switch's LFT
/// (LFTR) equals OpenSM's, on a fat tree and on a random irregular graph (the ignore file
/// there with LMC 1). The files move routes on both fabrics:
/// `routing_minhop::port_files_move_routes_on_generated_fabrics`.
#[test]
fn port_files_match_opensm_on_ibsim() {
    let dir = umad::testutil::TempDir::new("sa-diff-portfiles").unwrap();
    for spec in ["fat-tree:2,8", "random:24,40,20,1,ports=12"] {
        let (topo, net) = generated_net(dir.path(), spec);
        let picked = leaf_uplinks(&fabric_sim::topo::subnet::to_subnet(&topo));
        let write = |name: &str, extra: &str| {
            let text: String = picked
                .iter()
                .map(|(g, p)| format!("{g:#018x} {p}{extra}\n"))
                .collect();
            let path = net.with_extension(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let (ignore, weights) = (write("ignore", ""), write("weights", " 3"));
        let lmc = if spec.starts_with("random") { "1" } else { "0" };
        for extra in [
            ["--ignore-guids", ignore.to_str().unwrap(), "--lmc", lmc],
            ["--hop-weights", weights.to_str().unwrap(), "--lmc", "0"],
        ] {
            let mut args = vec!["--routing", "minhop"];
            args.extend(extra);
            if !lftr_pass(&net, &args, topo.num_switches()) {
                return; // skipped
            }
        }
    }
}

/// `port_search_ordering_file` (`-O`) against OpenSM: with the same file, every switch's LFT
/// (LFTR) equals OpenSM's for minhop on a fat tree (every leaf scanning its up-ports last
/// first; LMC 1, so the LIDs' rotating scan start goes through the order too) and for dor on
/// a mesh (every switch taking the second dimension first).
#[test]
fn search_ordering_file_matches_opensm_on_ibsim() {
    let dir = umad::testutil::TempDir::new("sa-diff-order-ports").unwrap();
    for (spec, engine, lmc, order) in [
        ("fat-tree:2,8", "minhop", "1", "8 7 6 5"),
        ("mesh:4,3", "dor", "0", "3 4 1 2"),
    ] {
        let (topo, net) = generated_net(dir.path(), spec);
        let s = fabric_sim::topo::subnet::to_subnet(&topo);
        let text: String = s
            .switches()
            .map(|sw| format!("{:#018x} {order}\n", s.node(sw).guid.0))
            .collect();
        let file = net.with_extension("order");
        std::fs::write(&file, text).unwrap();
        let args = [
            "--routing",
            engine,
            "--search-order",
            file.to_str().unwrap(),
            "--lmc",
            lmc,
        ];
        if !lftr_pass(&net, &args, topo.num_switches()) {
            return; // skipped
        }
    }
}

/// `ids_guid_file` (`-m`) against OpenSM: updn on a 5×5 torus (same-rank links) with one root
/// and the switches' ids in reverse GUID order; every switch's LFT (LFTR) equals OpenSM's.
/// (The ids move routes there: `updn_fixtures::ids_guid_file_orders_switches_of_one_rank`.)
#[test]
fn ids_guid_file_matches_opensm_on_ibsim() {
    let dir = umad::testutil::TempDir::new("sa-diff-ids").unwrap();
    let (topo, net) = generated_net(dir.path(), "torus:5,5");
    let s = fabric_sim::topo::subnet::to_subnet(&topo);
    let sws: Vec<sm::NodeId> = s.switches().collect();
    let roots = dir.path().join("roots");
    std::fs::write(&roots, format!("{:#018x}\n", s.node(sws[0]).guid.0)).unwrap();
    let ids = dir.path().join("ids");
    let text: String = sws
        .iter()
        .enumerate()
        .map(|(i, &sw)| format!("{:#018x} {}\n", s.node(sw).guid.0, 1000 - i))
        .collect();
    std::fs::write(&ids, text).unwrap();
    lfts_match_opensm(
        &net,
        &[
            "--routing",
            "updn",
            "--root-guid-file",
            roots.to_str().unwrap(),
            "--ids-guid-file",
            ids.to_str().unwrap(),
        ],
        topo.num_switches(),
    );
}

//! The diagnostics (`ibsm discover | query | route | dump-fts | links | trace | portstate | stat`)
//! against the stock infiniband-diags on the same ibsim fabric, and over the simulator.
//!
//! * `umad_matches_stock_diags`: on ibsim fabrics brought up by `ibsm run -o`, every command
//!   over umad (under `libumad2sim.so`, and again under `libibsm_umad.so`) prints exactly
//!   what the stock tool prints — the only difference allowed is ibnetdiscover's "generated
//!   on" date (docs/operator-guide.md) — and its `--json` carries the same fields;
//! * `portstate_changes_the_port`: `ibsm portstate … disable/enable` changes the port, as the
//!   stock `ibportstate` then reads it;
//! * `sim_transport_matches_ibsim`: `--transport sim:TOPOLOGY` on the same topology prints what
//!   the stock tools print on ibsim (the simulator's SM attaches where ibsim's shim does and
//!   assigns the same LIDs); links differ only in iblinkinfo's "Could be" notes (the
//!   simulator's ports support only their active width and speed);
//! * `stat_matches_ibstat`: `ibsm stat` prints the fields the stock `ibstat` prints for the same
//!   port (a switch and a CA);
//! * `dot_renders_a_k8_fat_tree`: `discover --dot --routes` of `fat-tree:3,8` renders with
//!   Graphviz' `dot -Tpng`, one edge per link, every switch link labelled with route counts.
//!
//! Without ibsim/the shim/infiniband-diags/graphviz the tests print "SKIPPED: …" and pass,
//! unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may unwrap (team rule)

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use fabric_sim::topo::Topology;
use umad::testutil::{peers_or_skip, report_skip, require_peers, IbsimGuard, TempDir};

const IBSM: &str = env!("CARGO_BIN_EXE_ibsm");

fn have(prog: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|p| p.join(prog).is_file())
}

/// ibsim + shim, and the named programs.
fn peers(test: &str, progs: &[(&str, &str)]) -> bool {
    if !peers_or_skip(test) {
        return false;
    }
    for (prog, pkg) in progs {
        if !have(prog) {
            let why = format!("{prog} not installed (apt-get install {pkg})");
            assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
            report_skip(test, &why);
            return false;
        }
    }
    true
}

/// Runs `c` (bounded by 120 s, killed by PID on timeout) and returns its output.
fn run(mut c: Command) -> Output {
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output().unwrap());
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => {
            waiter.join().unwrap();
            out
        }
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            let out = rx.recv().unwrap();
            waiter.join().unwrap();
            panic!(
                "{c:?} did not finish in 120 s\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Runs `prog args` under the shim; panics unless it succeeds; returns stdout.
fn shim(sim: &IbsimGuard, dir: &Path, prog: &str, args: &[&str]) -> String {
    let mut c = sim.client(prog, dir);
    c.args(args);
    let out = run(c);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{prog} {args:?}: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs `prog args` under the shim and returns stdout whatever its exit status.
fn shim_any(sim: &IbsimGuard, dir: &Path, prog: &str, args: &[&str]) -> String {
    let mut c = sim.client(prog, dir);
    c.args(args);
    String::from_utf8_lossy(&run(c).stdout).into_owned()
}

/// ibnetdiscover's header carries the time it ran: the one difference allowed.
fn mask_date(s: &str) -> String {
    s.lines()
        .map(|l| {
            if l.starts_with("# Topology file: generated on ") {
                "# Topology file: generated on <date>"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn example(name: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric-sim/testdata/ibsim-net-examples")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Starts ibsim on `net` and brings the subnet up with `ibsm run -o` under the shim.
fn fabric(net: &str, dir: &Path) -> IbsimGuard {
    let sim = IbsimGuard::start_text(net, &[]).unwrap();
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let mut c = sim.client(IBSM, dir);
    c.args(["run", "-o", "-f"])
        .arg(dir.join("sm.log"))
        .env("OSM_CACHE_DIR", &cache);
    let out = run(c);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("SUBNET UP"),
        "ibsm run -o: {out:?}\nibsim:\n{}",
        sim.output()
    );
    sim
}

/// Starts ibsim on `net` and brings the subnet up with stock OpenSM (`opensm -o`), which
/// leaves the links at ibsim's initial width and speed as the simulator has them.
fn fabric_opensm(net: &str, dir: &Path) -> IbsimGuard {
    let sim = IbsimGuard::start_text(net, &[]).unwrap();
    let mut c = sim.client("opensm", dir);
    c.args(["-o", "-f"])
        .arg(dir.join("osm.log"))
        .env("OSM_CACHE_DIR", dir)
        .env("OSM_TMP_DIR", dir);
    let out = run(c);
    let log = std::fs::read_to_string(dir.join("osm.log")).unwrap_or_default();
    assert!(log.contains("SUBNET UP"), "opensm -o: {out:?}\n{log}");
    sim
}

/// (type, LID) of every destination in the first switch's table of the stock dump_fts.
fn lids(dump_fts: &str) -> Vec<(String, u16)> {
    let mut out = Vec::new();
    for l in dump_fts.lines() {
        if l.ends_with("lids dumped ") {
            break;
        }
        let Some(lid) = l.strip_prefix("0x") else {
            continue;
        };
        let lid = u16::from_str_radix(&lid[..4], 16).unwrap();
        let t = if l.contains("(Switch ") { "sw" } else { "ca" };
        out.push((t.to_string(), lid));
    }
    out
}

/// `Name:....value` lines of a libibmad listing (capability bit lines folded away).
fn listing(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            if k.starts_with('#') || !v.starts_with('.') {
                return None;
            }
            Some((k.to_string(), v.trim_start_matches('.').to_string()))
        })
        .collect()
}

/// Every field of the text listing is in the JSON with the same value.
fn same_fields(text: &str, json: &str, what: &str) {
    let v: serde_json::Value = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("{what} --json is not JSON ({e}):\n{json}"));
    let obj = v.get("portinfo").unwrap_or(&v);
    let fields = listing(text);
    assert!(!fields.is_empty(), "{what}: no fields in\n{text}");
    for (k, want) in fields {
        let got = obj
            .get(&k)
            .unwrap_or_else(|| panic!("{what} --json lacks {k}:\n{json}"));
        let got = match got {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Object(o) => format!("{:#x}", o["value"].as_u64().unwrap()),
            other => other.to_string(),
        };
        assert_eq!(got, want, "{what}: field {k}");
    }
}

#[test]
fn umad_matches_stock_diags() {
    let test = "umad_matches_stock_diags";
    if !peers(test, &[("ibnetdiscover", "infiniband-diags")]) {
        return;
    }
    let nets = [
        ("net.2sw2path", example("net.2sw2path")),
        ("net.2sw2path4hca2port", example("net.2sw2path4hca2port")),
        (
            "fat-tree:2,4",
            Topology::generate("fat-tree:2,4").unwrap().to_net(),
        ),
    ];
    for (name, net) in nets {
        let dir = TempDir::new("diag").unwrap();
        let sim = fabric(&net, dir.path());
        let fts = shim(&sim, dir.path(), "dump_fts", &[]);
        let dests = lids(&fts);
        assert!(dests.len() >= 4, "{name}: {fts}");
        let mut pairs: Vec<(Vec<String>, Vec<String>)> = Vec::new();
        let mut add = |stock: &str, ours: &str| {
            let w = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
            pairs.push((w(stock), w(ours)));
        };
        add("ibnetdiscover", "discover");
        add("iblinkinfo", "links");
        add("dump_fts", "dump-fts");
        add("smpquery -D nodeinfo 0", "query -D nodeinfo 0");
        add("smpquery -D portinfo 0 1", "query -D portinfo 0 1");
        add("ibportstate -D 0 1", "portstate -D 0 1");
        add("ibroute -D 0", "route -D 0");
        // --skip-sl: no SA PathRecord queries, which (no SA here) cost switch relay errors
        // that the next run would report; ours never asks the SA.
        add("ibqueryerrors --skip-sl", "counters --errors");
        let cas: Vec<u16> = dests.iter().filter(|d| d.0 == "ca").map(|d| d.1).collect();
        for (t, l) in &dests {
            add(
                &format!("smpquery nodeinfo {l}"),
                &format!("query nodeinfo {l}"),
            );
            add(
                &format!("smpquery nodedesc {l}"),
                &format!("query nodedesc {l}"),
            );
            add(
                &format!("smpquery sl2vl {l} 1"),
                &format!("query sl2vl {l} 1"),
            );
            add(
                &format!("smpquery vlarb {l} 1"),
                &format!("query vlarb {l} 1"),
            );
            if t == "sw" {
                add(&format!("ibroute {l}"), &format!("route {l}"));
                add(
                    &format!("smpquery switchinfo {l}"),
                    &format!("query switchinfo {l}"),
                );
                add(
                    &format!("smpquery portinfo {l} 1"),
                    &format!("query portinfo {l} 1"),
                );
                add(
                    &format!("smpquery pkeys {l} 1"),
                    &format!("query pkeys {l} 1"),
                );
            } else {
                add(
                    &format!("smpquery portinfo {l}"),
                    &format!("query portinfo {l}"),
                );
                add(&format!("smpquery pkeys {l}"), &format!("query pkeys {l}"));
                add(&format!("smpquery GI {l}"), &format!("query guids {l}"));
                add(&format!("ibportstate {l} 1"), &format!("portstate {l} 1"));
            }
        }
        if let (Some(a), Some(b)) = (cas.first(), cas.last()) {
            add(&format!("ibtracert {a} {b}"), &format!("trace {a} {b}"));
            add(&format!("ibtracert {b} {a}"), &format!("trace {b} {a}"));
        }
        for (stock, ours) in &pairs {
            let s_args: Vec<&str> = stock[1..].iter().map(String::as_str).collect();
            let o_args: Vec<&str> = ours.iter().map(String::as_str).collect();
            // ibqueryerrors exits 1 when it found errors (relay errors that the SMPs of the
            // commands before cost are likely): both must say the same either way.
            let run = if stock[0] == "ibqueryerrors" {
                shim_any
            } else {
                shim
            };
            let want = run(&sim, dir.path(), &stock[0], &s_args);
            let got = run(&sim, dir.path(), IBSM, &o_args);
            assert_eq!(
                mask_date(&got),
                mask_date(&want),
                "{name}: `ibsm {}` differs from `{}`",
                ours.join(" "),
                stock.join(" ")
            );
            // The JSON twin of an attribute listing carries the same fields.
            if ours[0] == "query" && ["nodeinfo", "portinfo", "switchinfo"].contains(&o_args[1])
                || ours[0] == "portstate"
            {
                let mut j = o_args.clone();
                j.push("--json");
                let js = shim(&sim, dir.path(), IBSM, &j);
                let own = got.split("Peer PortInfo:").next().unwrap();
                same_fields(own, &js, &ours.join(" "));
            }
        }
        eprintln!("{test}: {name}: {} commands identical", pairs.len());
        // --json of the scans parses and names every node.
        let js = shim(&sim, dir.path(), IBSM, &["discover", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&js).unwrap();
        let topo = Topology::parse_net(&net).unwrap();
        assert_eq!(
            v["nodes"].as_array().unwrap().len(),
            topo.num_nodes(),
            "{name}"
        );
    }
}

/// The `Key: value` lines of ibstat's output (and ours), by key.
fn stat_fields(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.trim().split_once(": "))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// `ibsm stat` (SMPs to the local SMA) against the stock `ibstat` (the shim's sysfs) on the
/// same port: a switch's port 0 and a CA's port 1 of an ibsim fabric brought up by ibsm.
#[test]
fn stat_matches_ibstat() {
    let test = "stat_matches_ibstat";
    if !peers(test, &[("ibstat", "infiniband-diags")]) {
        return;
    }
    let dir = TempDir::new("diag").unwrap();
    let sim = fabric(&example("net.2sw2path4hca2port"), dir.path());
    for host in ["Switch1", "Hca1"] {
        let run_on = |prog: &str, args: &[&str]| {
            let mut c = sim.client(prog, dir.path());
            c.args(args).env("SIM_HOST", host);
            let out = run(c);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "{prog} on {host}: {out:?}");
            text
        };
        let stock = run_on("ibstat", &[]);
        let ours = run_on(IBSM, &["stat"]);
        let (s, o) = (stat_fields(&stock), stat_fields(&ours));
        let keys = [
            "State",
            "Physical state",
            "Rate",
            "Base lid",
            "LMC",
            "SM lid",
            "Capability mask",
            "Port GUID",
            "Node GUID",
            "System image GUID",
        ];
        for k in keys {
            assert!(s.contains_key(k), "ibstat on {host} has no {k:?}:\n{stock}");
            assert_eq!(
                o.get(k),
                s.get(k),
                "{k} on {host}\nibstat:\n{stock}\nours:\n{ours}"
            );
        }
        assert_eq!(o["State"], "Active", "{ours}");
        assert_ne!(o["Base lid"], "0", "{ours}");
        let kind = if host.starts_with("Switch") {
            "Switch"
        } else {
            "CA"
        };
        assert!(ours.starts_with(&format!("{kind} '")), "{ours}");
        // -p: the port GUID alone, as ibstat -p.
        let guids = run_on(IBSM, &["stat", "-p"]);
        assert_eq!(guids.trim(), s["Port GUID"], "{guids}");
    }
}

#[test]
fn portstate_changes_the_port() {
    let test = "portstate_changes_the_port";
    if !peers(test, &[("ibportstate", "infiniband-diags")]) {
        return;
    }
    let dir = TempDir::new("diag").unwrap();
    let sim = fabric(&example("net.2sw2path"), dir.path());
    let phys = |text: &str| {
        listing(text)
            .into_iter()
            .filter(|(k, _)| k == "PhysLinkState")
            .map(|(_, v)| v)
            .collect::<Vec<_>>()
    };
    // Switch1 port 5 is the second of two parallel links to Switch2.
    let out = shim(
        &sim,
        dir.path(),
        IBSM,
        &["portstate", "-D", "0", "5", "disable"],
    );
    assert!(out.starts_with("Initial Switch PortInfo:\n"), "{out}");
    assert!(
        out.contains("Disable may be irreversible\n\nAfter PortInfo set:\n"),
        "{out}"
    );
    assert_eq!(phys(&out), ["LinkUp", "Disabled"], "{out}");
    // ibsim leaves LinkState Active on a disabled port, so ibportstate then fails to query
    // the peer: read what it printed before that.
    let now = shim_any(&sim, dir.path(), "ibportstate", &["-D", "0", "5"]);
    assert_eq!(phys(&now)[0], "Disabled", "{now}");
    let out = shim(
        &sim,
        dir.path(),
        IBSM,
        &["portstate", "-D", "0", "5", "enable"],
    );
    assert_eq!(phys(&out)[0], "Disabled", "{out}");
    let now = shim_any(&sim, dir.path(), "ibportstate", &["-D", "0", "5"]);
    assert_ne!(phys(&now)[0], "Disabled", "{now}");
    // Speed and width Sets carry the value asked for.
    let out = shim(
        &sim,
        dir.path(),
        IBSM,
        &["portstate", "-D", "0", "3", "speed", "1", "width", "2"],
    );
    let after = out.split("After PortInfo set:").nth(1).unwrap();
    assert!(
        after.contains("LinkSpeedEnabled:................2.5 Gbps\n"),
        "{out}"
    );
    assert!(
        after.contains("LinkWidthEnabled:................4X\n"),
        "{out}"
    );
    // Bad input is refused with a message, before anything is sent.
    let mut c = Command::new(IBSM);
    c.args([
        "portstate",
        "--transport",
        "sim:net",
        "-D",
        "0",
        "5",
        "speed",
        "99",
    ]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid speed value 99"));
}

/// iblinkinfo's "(Could be …)" notes depend on what the ports support, which differs between
/// ibsim and the simulator.
fn strip_could_be(s: &str) -> String {
    s.lines()
        .map(|l| match l.rfind("\" (") {
            Some(i) if l.ends_with(')') => l[..i + 1].to_string(),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn sim_transport_matches_ibsim() {
    let test = "sim_transport_matches_ibsim";
    if !peers(
        test,
        &[("ibnetdiscover", "infiniband-diags"), ("opensm", "opensm")],
    ) {
        return;
    }
    let dir = TempDir::new("diag").unwrap();
    let file = dir.path().join("net.2sw2path");
    let net = example("net.2sw2path");
    std::fs::write(&file, &net).unwrap();
    let sim = fabric_opensm(&net, dir.path());
    let spec = format!("sim:{}", file.display());
    // Exact: the scans, tables, routes and node attributes. PortInfo contents differ between
    // ibsim's switch model and our SMA (capability masks, supported widths), and so do
    // NodeInfo's PartitionCap and Revision, SwitchInfo's capacities and the SL2VL tables, so those are compared by their header line only.
    let cases: [(&str, &[&str], &[&str], bool); 13] = [
        // The PMA's header line: LID, port and CapabilityMask (the counts differ: the
        // fabrics carried different traffic).
        ("perfquery", &["3", "3"], &["counters", "3", "3"], false),
        (
            "perfquery",
            &["-x", "2", "1"],
            &["counters", "-x", "2", "1"],
            false,
        ),
        ("ibnetdiscover", &[], &["discover"], true),
        ("dump_fts", &[], &["dump-fts"], true),
        ("iblinkinfo", &[], &["links"], true),
        ("ibroute", &["3"], &["route", "3"], true),
        ("ibtracert", &["2", "4"], &["trace", "2", "4"], true),
        (
            "smpquery",
            &["-D", "nodeinfo", "0,3"],
            &["query", "-D", "nodeinfo", "0,3"],
            false,
        ),
        (
            "smpquery",
            &["nodedesc", "4"],
            &["query", "nodedesc", "4"],
            true,
        ),
        (
            "smpquery",
            &["-D", "switchinfo", "0,3"],
            &["query", "-D", "switchinfo", "0,3"],
            false,
        ),
        ("smpquery", &["sl2vl", "2"], &["query", "sl2vl", "2"], false),
        (
            "smpquery",
            &["-D", "portinfo", "0,3", "1"],
            &["query", "-D", "portinfo", "0,3", "1"],
            false,
        ),
        (
            "ibportstate",
            &["-D", "0", "3"],
            &["portstate", "-D", "0", "3"],
            false,
        ),
    ];
    for (prog, s_args, o_args, exact) in cases {
        let want = shim(&sim, dir.path(), prog, s_args);
        let mut c = Command::new(IBSM);
        c.args(o_args).args(["--transport", &spec]);
        let out = run(c);
        let got = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "ibsm {o_args:?} over {spec}: {out:?}");
        let (got, want) = if exact {
            (
                strip_could_be(&mask_date(&got)),
                strip_could_be(&mask_date(&want)),
            )
        } else {
            let head = |t: &str| t.lines().next().unwrap_or_default().to_string();
            (head(&got), head(&want))
        };
        assert_eq!(
            got,
            want,
            "`ibsm {}` over {spec} differs from `{prog} {}` on ibsim",
            o_args.join(" "),
            s_args.join(" ")
        );
    }
}

/// `Name:....value` fields as numbers (hex or decimal).
fn numbers(text: &str) -> Vec<(String, u64)> {
    listing(text)
        .into_iter()
        .map(|(k, v)| {
            let n = match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).unwrap(),
                None => v.parse().unwrap(),
            };
            (k, n)
        })
        .collect()
}

#[test]
fn counters_match_perfquery() {
    let test = "counters_match_perfquery";
    if !peers(test, &[("perfquery", "infiniband-diags")]) {
        return;
    }
    let dir = TempDir::new("diag").unwrap();
    let sim = fabric(&example("net.2sw2path"), dir.path());
    let d = dir.path();
    // Switch1 (LID 1) port 3, Hca1 (LID 2) port 1, Switch1 all ports; basic and extended.
    for args in [
        &["1", "3"][..],
        &["2", "1"],
        &["-a", "1"],
        &["-x", "1", "3"],
        &["-x", "2", "1"],
    ] {
        // Every MAD moves the data and packet counters: ours must lie between perfquery
        // before and after, field by field, with the same header, names and order.
        let before = shim(&sim, d, "perfquery", args);
        let mut o = vec!["counters"];
        o.extend_from_slice(args);
        let ours = shim(&sim, d, IBSM, &o);
        let after = shim(&sim, d, "perfquery", args);
        let head = |t: &str| t.lines().next().unwrap_or_default().to_string();
        assert_eq!(head(&ours), head(&before), "ibsm {o:?}");
        let (b, g, a) = (numbers(&before), numbers(&ours), numbers(&after));
        let names = |v: &[(String, u64)]| v.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&g),
            names(&b),
            "ibsm {o:?}:\n{ours}\nperfquery:\n{before}"
        );
        for ((k, lo), ((_, v), (_, hi))) in b.iter().zip(g.iter().zip(a.iter())) {
            assert!(
                lo <= v && v <= hi,
                "ibsm {o:?} {k}: {v} not within perfquery's {lo}..={hi}"
            );
        }
        // --json carries the same fields.
        o.push("--json");
        let json: serde_json::Value = serde_json::from_str(&shim(&sim, d, IBSM, &o)).unwrap();
        for (k, _) in &g {
            assert!(
                json["counters"].get(k).is_some(),
                "--json lacks {k}: {json}"
            );
        }
    }
    // -R resets (and prints nothing); -r prints, then resets.
    let pkts = |t: &str| {
        numbers(t)
            .into_iter()
            .find(|(k, _)| k == "PortXmitPkts")
            .unwrap()
            .1
    };
    let before = pkts(&shim(&sim, d, "perfquery", &["2", "1"]));
    assert!(before > 10, "{before}");
    assert_eq!(shim(&sim, d, IBSM, &["counters", "-R", "2", "1"]), "");
    let after = pkts(&shim(&sim, d, "perfquery", &["2", "1"]));
    assert!(
        after < 5,
        "PortXmitPkts {after} after a reset (was {before})"
    );
    let read = shim(&sim, d, IBSM, &["counters", "-r", "2", "1"]);
    assert!(read.starts_with("# Port counters: Lid 2 port 1"), "{read}");
    assert!(pkts(&shim(&sim, d, "perfquery", &["2", "1"])) < 5);
    // LID-routed only; a LID nobody has times out.
    let mut c = sim.client(IBSM, d);
    c.args(["counters", "-D", "0", "1"]);
    assert_eq!(run(c).status.code(), Some(2));
    let mut c = sim.client(IBSM, d);
    c.args(["counters", "-t", "50", "99", "1"]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

#[test]
fn dot_renders_a_k8_fat_tree() {
    let test = "dot_renders_a_k8_fat_tree";
    if !have("dot") {
        let why = "dot not installed (apt-get install graphviz)";
        assert!(!require_peers(), "IBSM_REQUIRE_PEERS=1 but {why}");
        report_skip(test, why);
        return;
    }
    let spec = "fat-tree:3,8";
    let mut c = Command::new(IBSM);
    c.args([
        "discover",
        "--dot",
        "--routes",
        "--transport",
        &format!("sim:{spec}"),
    ]);
    let out = run(c);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let topo = Topology::generate(spec).unwrap();
    let edges = text.lines().filter(|l| l.contains(" -- ")).count();
    assert_eq!(edges, topo.num_links(), "one edge per link");
    let nodes = text.lines().filter(|l| l.contains("[shape=")).count();
    assert_eq!(nodes, topo.num_nodes());
    // Every link is labelled with its width and speed; switch ends with route counts.
    assert!(text
        .lines()
        .filter(|l| l.contains(" -- "))
        .all(|l| l.contains("label=\"4X ") && l.contains("\\nroutes ")));
    assert!(
        !text.contains("routes -/-"),
        "a link between two switches without counts"
    );
    let dir = TempDir::new("dot").unwrap();
    let png = dir.path().join("k8.png");
    let dotfile = dir.path().join("k8.dot");
    std::fs::write(&dotfile, &text).unwrap();
    let mut c = Command::new("dot");
    c.arg("-Tpng").arg("-o").arg(&png).arg(&dotfile);
    let out = run(c);
    assert!(out.status.success(), "dot -Tpng: {out:?}");
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(bytes.len() > 10_000, "PNG of {} bytes", bytes.len());
}

/// torus:4,4,4 has 128 LIDs, so every switch's LinearFDBTop is 0x80, the one LID of LFT block
/// 2. `route` must read that block (infiniband-diags' ibroute stops a block short there and
/// drops the LID), and its entry must agree with `dump-fts`.
#[test]
fn route_reads_the_block_of_a_top_lid_that_is_a_multiple_of_64() {
    let spec = "sim:torus:4,4,4";
    let mut c = Command::new(IBSM);
    c.args(["route", "1", "--transport", spec]);
    let out = run(c);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "route 1: {out:?}");
    assert!(
        text.starts_with("Unicast lids [0x0-0x80] of switch Lid 1 "),
        "{text}"
    );
    assert!(text.ends_with("128 valid lids dumped \n"), "{text}");
    let top = text
        .lines()
        .find(|l| l.starts_with("0x0080 "))
        .unwrap_or_else(|| panic!("no entry for LID 0x80\n{text}"));
    assert!(top.ends_with("'ca-3-3-3-0')"), "{top}");
    // The same switch in dump-fts: its table is the one whose LID 1 leaves on port 0.
    let mut c = Command::new(IBSM);
    c.args(["dump-fts", "--transport", spec]);
    let out = run(c);
    let fts = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "dump-fts: {out:?}");
    let table = fts
        .split("Unicast lids ")
        .find(|t| t.contains("\n0x0001 000 "))
        .unwrap_or_else(|| panic!("no switch with LID 1 in dump-fts\n{fts}"));
    assert!(
        table.lines().any(|l| l == top),
        "route's '{top}' is not in dump-fts' table of that switch\n{table}"
    );
}

#[test]
fn bad_transport_and_arguments_are_named() {
    for (args, code, needle) in [
        (
            &["discover", "--transport", "rdma"][..],
            2,
            "unknown transport",
        ),
        (
            &["query", "nodeinfo", "--transport", "sim:net.none"],
            2,
            "net.none",
        ),
        (
            &["query", "bogus", "1", "--transport", "sim:fat-tree:2,4"],
            2,
            "unknown query",
        ),
        (
            &[
                "query",
                "nodeinfo",
                "0xc001",
                "--transport",
                "sim:fat-tree:2,4",
            ],
            2,
            "unicast LID",
        ),
        (
            &[
                "query",
                "nodeinfo",
                "999",
                "--transport",
                "sim:fat-tree:2,4",
            ],
            1,
            "no response",
        ),
        (&["route", "--frobnicate"], 2, "--frobnicate"),
        (&["trace", "1"], 2, "DST"),
    ] {
        let mut c = Command::new(IBSM);
        c.args(args);
        let out = run(c);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// Children killed (by PID, through `Child::kill`) and reaped when dropped.
struct Procs(Vec<std::process::Child>);
impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Every diagnostic over vfio-user: `ibsm asic-model fat-tree:2,4 --sm` serves the six switches
/// as RA-1 models, `ibsm sma` hosts bring them up and the SM reaches SUBNET UP; then the host of
/// spine 0 leaves and each command takes its place (running the host SMA while it works) and
/// queries the fabric from the spine's port 0 by directed route. (The spine's model restarts
/// from reset with each new host, so LID-routed queries from it have no LFT to leave by; LID
/// addressing is covered over umad and sim.)
#[test]
fn vfio_user_transport_runs_every_diag() {
    let dir = TempDir::new("diag-vfio").unwrap();
    let log = dir.path().join("asic.out");
    let mut procs = Procs(Vec::new());
    procs.0.push(
        Command::new(IBSM)
            .args([
                "asic-model",
                "fat-tree:2,4",
                "--sm",
                "--time-limit",
                "150",
                "--socket-dir",
            ])
            .arg(dir.path())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t = std::time::Instant::now();
    let socks = loop {
        let mut s: Vec<PathBuf> = std::fs::read_dir(dir.path())
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
    // Spine 0 (NodeGUID 0x0002000000000000) has a host only until the subnet is up.
    let mut spine_host = None;
    for (i, s) in socks.iter().enumerate() {
        let limit = if i == 0 { "6" } else { "140" };
        let child = Command::new(IBSM)
            .args(["sma", "--device", &format!("vfio-user:{}", s.display())])
            .args(["--time-limit", limit])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if i == 0 {
            spine_host = Some(child);
        } else {
            procs.0.push(child);
        }
    }
    let up = |t: &std::time::Instant| loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("SUBNET UP") {
            break text;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no SUBNET UP:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    up(&t);
    let status = spine_host.unwrap().wait().unwrap();
    assert!(status.success(), "spine host: {status}");
    let spec = format!("vfio-user:{}", socks[0].display());
    let diag = |args: &[&str]| {
        let mut c = Command::new(IBSM);
        c.args(args).args(["--transport", &spec]);
        let out = run(c);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "ibsm {args:?} over {spec}: {out:?}\nasic-model:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        text
    };
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    // The scan finds every node; the CAs carry the LIDs the SM gave them.
    let disc = diag(&["discover"]);
    let switches = disc.lines().filter(|l| l.starts_with("Switch\t")).count();
    let cas = disc.lines().filter(|l| l.starts_with("Ca\t")).count();
    assert_eq!((switches, cas), (6, 8), "{disc}");
    assert!(
        disc.contains("Initiated from node 0002000000000000"),
        "{disc}"
    );
    assert!(!disc.contains("# lid 0 lmc 0"), "a CA without LID:\n{disc}");
    let js: serde_json::Value = serde_json::from_str(&diag(&["discover", "--json"])).unwrap();
    assert_eq!(js["nodes"].as_array().unwrap().len(), topo.num_nodes());
    let links = diag(&["links"]);
    // Every link is up at both ends (spine 0's own ports restarted with its model: Init).
    let up = links.matches("/  LinkUp)").count();
    assert_eq!(up, 2 * topo.num_links(), "{links}");
    assert!(links.matches("Active/  LinkUp").count() >= 2 * topo.num_links() - 4);
    let fts = diag(&["dump-fts"]);
    assert_eq!(fts.matches("Unicast lids").count(), 6, "{fts}");
    // Leaf 0x…02 (spine port 1) routes every one of the 14 LIDs.
    let route = diag(&["route", "-D", "0,1"]);
    assert!(route.contains("guid 0x0002000000000002"), "{route}");
    assert!(route.ends_with("14 valid lids dumped \n"), "{route}");
    let trace = diag(&["trace", "-D", "0,1,1", "0,1,2"]);
    let last = trace.lines().last().unwrap_or_default();
    assert!(
        trace.starts_with("From ca {0x0001000000000000} portnum 1"),
        "{trace}"
    );
    assert!(
        last.starts_with("To ca {0x0001000000000002} portnum 1"),
        "{trace}"
    );
    assert_eq!(trace.lines().count(), 4, "CA, leaf, CA:\n{trace}");
    let q = |args: &[&str], needle: &str| {
        let mut a = vec!["query", "-D"];
        a.extend_from_slice(args);
        let text = diag(&a);
        assert!(text.contains(needle), "{a:?}:\n{text}");
    };
    q(
        &["nodeinfo", "0,1"],
        "NodeType:........................Switch\n",
    );
    q(&["nodedesc", "0"], "Node Description:");
    q(
        &["portinfo", "0,1,1"],
        "LinkState:.......................Active\n",
    );
    q(&["switchinfo", "0,1"], "LinearFdbTop:....................");
    q(&["pkeys", "0,1,1"], "0xffff");
    q(&["guids", "0,1,1"], "guids capacity for this port");
    q(&["sl2vl", "0,1", "1"], "ports: in  0, out  1:");
    q(&["vlarb", "0,1,1", "1"], "# VLArbitration tables:");
    q(&["sminfo", "0,1,1"], "SMINFO_MASTER");
    let ps = diag(&["portstate", "-D", "0,1", "1"]);
    assert!(
        ps.contains("Peer PortInfo:\n# Port info: DR path slid 65535; dlid 65535; 0,1,1 port 1"),
        "{ps}"
    );
    // ibstat of the ASIC's management port, where there is no sysfs to read (its LID reads 0:
    // the model restarted after the SM's sweep, as the counters' header below shows).
    let st = diag(&["stat"]);
    assert!(
        st.starts_with(&format!("Switch '{spec}'\n")) && st.contains("\tPort 0:\n"),
        "{st}"
    );
    assert!(st.contains("\t\tState: Active\n"), "{st}");
    assert!(st.contains("\tNode GUID: 0x0002000000000000\n"), "{st}");
    assert!(st.contains("\t\tBase lid: 0\n\t\tLMC: 0\n"), "{st}");
    // perfquery of the local port: the host's PMA over the model's counter registers answers
    // without a LID, in the format (and with the fields) of a switch's PMA in the simulator.
    let names = |text: &str| -> Vec<String> {
        text.lines()
            .skip(1)
            .map(|l| l.split(':').next().unwrap_or_default().to_string())
            .collect()
    };
    for args in [&["counters"][..], &["counters", "-x", "-a"]] {
        let text = diag(args);
        let mut c = Command::new(IBSM);
        c.args(args).args(["1", "--transport", "sim:fat-tree:2,4"]);
        if args.len() == 1 {
            c.arg("0");
        }
        let out = run(c);
        let sim = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?} on sim: {out:?}");
        let (head, sim_head) = (
            text.lines().next().unwrap_or_default(),
            sim.lines().next().unwrap_or_default(),
        );
        assert_eq!(
            head.replacen("Lid 0", "Lid 1", 1),
            sim_head,
            "{args:?} over vfio-user:\n{text}\non sim:\n{sim}"
        );
        assert_eq!(names(&text), names(&sim), "{text}\n{sim}");
    }
    drop(procs);
}

/// [`umad_matches_stock_diags`] again, every program (`ibsm run -o`, the diagnostics, the stock
/// tools) under `libibsm_umad.so` instead of ibsim's shim (issue 10: the interop tests run under
/// both shims).
#[test]
fn umad_matches_stock_diags_under_libibsm_umad() {
    umad::testutil::set_current_shim(umad::testutil::Shim::Ibsm);
    umad_matches_stock_diags();
}

/// [`portstate_changes_the_port`] under `libibsm_umad.so`.
#[test]
fn portstate_changes_the_port_under_libibsm_umad() {
    umad::testutil::set_current_shim(umad::testutil::Shim::Ibsm);
    portstate_changes_the_port();
}

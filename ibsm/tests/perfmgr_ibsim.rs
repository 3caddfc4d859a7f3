//! The performance manager of `ibsm run` on an ibsim fabric (under `libumad2sim.so`), against
//! stock `perfquery`: every linked port is read, each counter ibsm reports lies between two
//! `perfquery -x` readings taken before and after its sweep (equal for the error counters,
//! which nothing moves here), the `ibsm ctl perfmgr` requests work, and the per-port series of
//! `--metrics-listen` carry the same values and pass `promtool check metrics`.
//!
//! Without ibsim/the shim/perfquery the test prints "SKIPPED: …" and passes, unless
//! `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may unwrap (team rule)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use umad::testutil::{peers_or_skip, IbsimGuard, TempDir};

mod daemon_common;
use daemon_common::*;

fn sweeps(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("perfmgr sweeps: "))
        .and_then(|v| v.split_whitespace().next())
        .unwrap_or_else(|| panic!("no sweep count in {status}"))
        .parse()
        .unwrap()
}

/// `Name:....value` lines of perfquery into a map.
fn perfquery_fields(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let v = v.trim_start_matches('.').trim();
            Some((k.trim().to_string(), v.parse().ok()?))
        })
        .collect()
}

/// `print_counters` of one port: `(desc, guid, port, lid)` and its counters.
type PortKey = (String, String, u8, u16);
/// Counter name → value.
type Fields = BTreeMap<String, u64>;

fn parse_print(text: &str) -> BTreeMap<PortKey, BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let mut cur: Option<PortKey> = None;
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix('"') {
            // "desc" 0xguid port N (LID L): …
            let (desc, rest) = rest.split_once('"').unwrap();
            let w: Vec<&str> = rest.split_whitespace().collect();
            let lid = w[4].trim_end_matches("):").parse().unwrap();
            let key = (
                desc.to_string(),
                w[0].to_string(),
                w[2].parse().unwrap(),
                lid,
            );
            out.insert(key.clone(), BTreeMap::new());
            cur = Some(key);
        } else if let (Some(k), Some((name, v))) = (&cur, l.split_once(':')) {
            out.get_mut(k)
                .unwrap()
                .insert(name.trim().to_string(), v.trim().parse().unwrap());
        }
    }
    out
}

#[test]
fn perfmgr_counters_match_perfquery() {
    let test = "perfmgr_counters_match_perfquery";
    if !peers_or_skip(test) {
        return;
    }
    for (tool, package) in [
        ("perfquery", "infiniband-diags"),
        ("promtool", "prometheus"),
        ("curl", "curl"),
    ] {
        if !have_tool(test, tool, package) {
            return;
        }
    }
    let net: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric-sim/testdata/ibsim-net-examples/net.2sw2path");
    let sim = IbsimGuard::start(&net).unwrap();
    let dir = TempDir::new("perfmgr").unwrap();
    let d = dir.path();
    let (sock, log, conf) = (d.join("ibsm.sock"), d.join("ibsm.log"), d.join("ibsm.conf"));
    // No periodic SM or PerfMgr sweeps: the only traffic is what the test asks for.
    std::fs::write(
        &conf,
        "perfmgr TRUE\nperfmgr_sweep_time_s 0\nsweep_interval 0\nforce_log_flush TRUE\n",
    )
    .unwrap();
    let listen = free_listen_addr();
    let child = sim
        .client(IBSM, d)
        .args(["run", "-F"])
        .arg(&conf)
        .arg("-f")
        .arg(&log)
        .arg("--ctl-socket")
        .arg(&sock)
        .args(["--metrics-listen", &listen])
        .env("OSM_CACHE_DIR", d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _daemon = Daemon(Some(child));
    // The first PerfMgr sweep follows SUBNET UP.
    let status = wait_for("the first perfmgr sweep", Duration::from_secs(60), || {
        let out = ctl(&sock, &["perfmgr", "status"]);
        let s = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && sweeps(&s) >= 1 && !s.contains("(sweeping)")).then_some(s)
    });
    assert!(status.contains("perfmgr: enabled"), "{status}");
    // 2 switches × 3 linked ports + 2 CAs × 1.
    assert!(status.contains("4 PMAs, 8 ports"), "{status}");
    assert!(status.contains("0 timed out"), "{status}");

    let ports = parse_print(&ctl_ok(&sock, &["perfmgr", "print_counters"]));
    assert_eq!(ports.len(), 8, "{ports:?}");
    let perfquery = |lid: u16, port: u8| {
        let out = sim
            .client("perfquery", d)
            .args(["-x", &lid.to_string(), &port.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "perfquery -x {lid} {port}: {out:?}");
        perfquery_fields(&String::from_utf8(out.stdout).unwrap())
    };
    let basic = |lid: u16, port: u8| {
        let out = sim
            .client("perfquery", d)
            .args([&lid.to_string(), &port.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "perfquery {lid} {port}: {out:?}");
        perfquery_fields(&String::from_utf8(out.stdout).unwrap())
    };
    let before: BTreeMap<&PortKey, (Fields, Fields)> = ports
        .keys()
        .map(|k| (k, (basic(k.3, k.2), perfquery(k.3, k.2))))
        .collect();
    let n = sweeps(&ctl_ok(&sock, &["perfmgr", "status"]));
    assert!(ctl_ok(&sock, &["perfmgr", "sweep"]).contains("requested"));
    wait_for("the second perfmgr sweep", Duration::from_secs(30), || {
        let s = ctl_ok(&sock, &["perfmgr", "status"]);
        (sweeps(&s) > n && !s.contains("(sweeping)")).then_some(s)
    });
    let ours = parse_print(&ctl_ok(&sock, &["perfmgr", "print_counters"]));
    let is_err =
        |n: &str| n.ends_with("Errors") || n.ends_with("Counter") || n.ends_with("Dropped");
    let mut moved = 0;
    for (k, (b0, x0)) in &before {
        let (b1, x1) = (basic(k.3, k.2), perfquery(k.3, k.2));
        let o = &ours[*k];
        for (name, v) in o {
            // Extended counters by perfquery -x's names, the rest by perfquery's.
            let (lo, hi) = match (x0.get(name), b0.get(name)) {
                (Some(a), _) if name.starts_with("Port") && x1.contains_key(name) => (*a, x1[name]),
                (_, Some(a)) => (*a, b1[name]),
                _ => continue,
            };
            assert!(
                lo <= *v && *v <= hi,
                "{k:?} {name}: ibsm {v} not within perfquery's {lo}..={hi}"
            );
            if is_err(name) {
                assert_eq!(lo, hi, "{k:?} {name}: an error counter moved");
            }
            moved += u64::from(hi > 0);
        }
    }
    assert!(
        moved > 0,
        "no counter moved at all: the comparison proves nothing"
    );

    // An SA query from the other CA (the daemon runs on the first one), counted by the SA.
    let out = sim
        .client("saquery", d)
        .env("SIM_HOST", "Hca2")
        .arg("NR")
        .output()
        .unwrap();
    assert!(out.status.success(), "saquery NR: {out:?}");

    // The same values on the metrics endpoint; the exposition passes promtool.
    let text = scrape(&listen, &[]);
    let (k, o) = ours.iter().next().unwrap();
    let series = format!(
        "ibsm_port_xmit_packets_total{{node_guid=\"{}\",node_desc=\"{}\",port=\"{}\"}} {}\n",
        k.1, k.0, k.2, o["PortXmitPkts"]
    );
    assert!(text.contains(&series), "no {series:?} in\n{text}");
    assert!(text.contains("ibsm_perfmgr_ports 8\n"), "{text}");
    let sa = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
    };
    assert!(sa("ibsm_sa_answered_total") >= 1, "{text}");
    assert!(
        sa("ibsm_sa_mads_received_total") >= sa("ibsm_sa_answered_total"),
        "{text}"
    );
    promtool_check(&text);

    // The console requests.
    assert!(ctl_ok(&sock, &["perfmgr", "sweep_time", "30"]).contains("30 s"));
    assert!(ctl_ok(&sock, &["perfmgr", "status"]).contains("sweep time 30 s"));
    assert!(ctl_ok(&sock, &["perfmgr", "disable"]).contains("disabled"));
    // print_errors: exactly the ports and counters with errors (ibsim counts a few switch
    // relay errors while the subnet comes up), as perfquery shows them.
    let errs = parse_print(&ctl_ok(&sock, &["perfmgr", "print_errors"]));
    let want: BTreeMap<PortKey, BTreeMap<String, u64>> = ours
        .iter()
        .map(|(k, c)| {
            let e = c
                .iter()
                .filter(|(n, v)| is_err(n) && **v > 0)
                .map(|(n, v)| (n.clone(), *v))
                .collect::<BTreeMap<_, _>>();
            (k.clone(), e)
        })
        .filter(|(_, e)| !e.is_empty())
        .collect();
    assert_eq!(errs, want);
    let one = ctl_ok(&sock, &["perfmgr", "print_counters", &k.0]);
    assert!(one.contains(&format!("\"{}\"", k.0)), "{one}");
    let out = ctl(&sock, &["perfmgr", "frobnicate"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown perfmgr request"));
}

//! Performance management end to end: stock `perfquery` and `ibqueryerrors` (run under ibsim's
//! umad2sim shim, stock OpenSM as the SM) against our served fabric, each answer compared with
//! stock ibsim's on the same topology; counters that move with traffic, clear on reset and show
//! injected errors; `perfquery` aimed at OpenSM's own port; and a served switch port disabled
//! and enabled with `ibportstate`, brought back by OpenSM on our trap.
//!
//! Skipped loudly when the peers are missing, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fabric_sim::sim::{Fabric, FaultConfig};
use fabric_sim::topo::Topology;
use ibmad::PortNum;
use umad::testutil::{IbsimGuard, TempDir};

mod interop_util;
use interop_util::*;

const PERF_TOOLS: &[&str] = &[
    "opensm",
    "perfquery",
    "ibqueryerrors",
    "ibnetdiscover",
    "ibportstate",
];

/// One perfquery listing: the `Name:.....value` lines, in order.
type Listing = Vec<(String, u64)>;

/// Parses perfquery's `Name:......value` lines (values in decimal or 0x hex).
fn listing(text: &str) -> Listing {
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            if name.starts_with('#') || name.contains(' ') || !rest.starts_with('.') {
                return None;
            }
            let v = rest.trim_start_matches('.').trim();
            let value = match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).ok()?,
                None => v.parse().ok()?,
            };
            Some((name.to_string(), value))
        })
        .collect()
}

fn names(l: &Listing) -> Vec<&str> {
    l.iter().map(|(n, _)| n.as_str()).collect()
}

fn value(l: &Listing, name: &str) -> u64 {
    l.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in {l:?}"))
        .1
}

/// A port as `ibnetdiscover -p` lists it: node name and port number → LID (a switch's ports
/// carry the switch's LID). Switch port 0 is added for every switch.
fn ports(fab: &impl ShimFabric, dir: &Path) -> BTreeMap<(String, u8), (u16, bool)> {
    let text = fab.diag(dir, "ibnetdiscover", &["-p"]);
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 3 || !(t[0] == "SW" || t[0] == "CA") {
            continue;
        }
        let (Ok(lid), Ok(port)) = (t[1].parse::<u16>(), t[2].parse::<u8>()) else {
            continue;
        };
        let Some(name) = line.split('\'').nth(1) else {
            continue;
        };
        let sw = t[0] == "SW";
        out.insert((name.to_string(), port), (lid, sw));
        if sw {
            out.insert((name.to_string(), 0), (lid, sw));
        }
    }
    assert!(!out.is_empty(), "ibnetdiscover -p listed no ports:\n{text}");
    out
}

/// Runs perfquery with `args`; its listing, or the failure text.
fn perfquery(fab: &impl ShimFabric, dir: &Path, args: &[&str]) -> Result<Listing, String> {
    let out = fab
        .client("perfquery", dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{} {stdout} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(listing(&stdout))
}

/// Every perfquery form (plain, `-x`, `-a` per node, `-R`) on every port of a fabric: the
/// listings by (form, node, port).
fn survey(fab: &impl ShimFabric, dir: &Path) -> BTreeMap<(String, String, u8), Listing> {
    let mut out = BTreeMap::new();
    let ports = ports(fab, dir);
    for ((node, port), (lid, _)) in &ports {
        let (l, p) = (lid.to_string(), port.to_string());
        for form in ["", "-x"] {
            let mut args: Vec<&str> = Vec::new();
            if !form.is_empty() {
                args.push(form);
            }
            args.extend([l.as_str(), p.as_str()]);
            let got = perfquery(fab, dir, &args)
                .unwrap_or_else(|e| panic!("perfquery {args:?} ({node} port {port}): {e}"));
            out.insert((form.to_string(), node.clone(), *port), got);
        }
    }
    let lids: BTreeMap<&String, u16> = ports.iter().map(|((n, _), (l, _))| (n, *l)).collect();
    for (node, lid) in lids {
        let l = lid.to_string();
        let got = perfquery(fab, dir, &["-a", &l])
            .unwrap_or_else(|e| panic!("perfquery -a {l} ({node}): {e}"));
        out.insert(("-a".to_string(), node.clone(), 0xFF), got);
    }
    out
}

/// Our served fabric and stock ibsim on `topo`, OpenSM up on both; every perfquery form on
/// every port answers on ours with the fields ibsim's answer has.
fn same_fields_as_ibsim(test: &str, topo: &Topology) {
    if !peers_with(test, PERF_TOOLS) {
        return;
    }
    let dir = TempDir::new(test).unwrap();
    let ours_dir = dir.path().join("ours");
    let ref_dir = dir.path().join("ibsim");
    std::fs::create_dir_all(&ours_dir).unwrap();
    std::fs::create_dir_all(&ref_dir).unwrap();

    let ibsim = IbsimGuard::start_text(&topo.to_net(), &[]).unwrap();
    let (osm_ref, _) = opensm_up(&ibsim, &ref_dir, "minhop");
    let reference = survey(&ibsim, &ref_dir);
    drop(osm_ref);
    drop(ibsim);

    let served = Served::start(topo);
    let (osm, _) = opensm_up(&served, &ours_dir, "minhop");
    let ours = survey(&served, &ours_dir);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        reference.keys().collect::<Vec<_>>(),
        "the same ports answer"
    );
    for (key, theirs) in &reference {
        let mine = &ours[key];
        assert_eq!(names(mine), names(theirs), "fields of perfquery {key:?}");
    }
    // Every cabled port moved traffic during the bring-up (DR SMPs count as packets).
    for ((form, node, port), l) in &ours {
        if form.is_empty() && *port != 0 {
            assert!(value(l, "PortXmitPkts") > 0, "{node} port {port}: {l:?}");
            assert!(value(l, "PortRcvData") > 0, "{node} port {port}: {l:?}");
            assert_eq!(value(l, "SymbolErrorCounter"), 0, "{node} port {port}");
        }
    }
    drop(osm);
    let server = served.finish();
    // A CA port's PortRcvPkts as perfquery read it last (-x is the last form per port) is what
    // the fabric counts; the answer to that read left the port after the read.
    let fabric = server.fabric();
    let (id, ca) = fabric
        .topology()
        .nodes()
        .find(|(_, n)| !n.is_switch())
        .unwrap();
    let port = ca
        .port_numbers()
        .find(|&p| fabric.peer(id, p).is_some())
        .unwrap();
    let shown = value(
        &ours[&("-x".into(), ca.desc().to_string(), port.0)],
        "PortRcvPkts",
    );
    let now = fabric.port_counters(id, port).unwrap().port_rcv_pkts;
    assert!(now >= shown, "{now} < {shown}");
}

#[test]
fn perfquery_answers_every_port_of_a_three_level_fat_tree_like_ibsim() {
    same_fields_as_ibsim(
        "perf_fields_fat_tree_3",
        &Topology::generate("fat-tree:3,4").unwrap(),
    );
}

#[test]
fn perfquery_answers_every_port_of_a_torus_like_ibsim() {
    same_fields_as_ibsim(
        "perf_fields_torus",
        &Topology::generate("torus:3,3,2").unwrap(),
    );
}

/// The node name and LID of a CA port of `topo` whose node is not `avoid`, and its port.
fn some_ca(fabric: &Fabric, avoid: &str) -> (String, fabric_sim::topo::NodeId, PortNum) {
    let topo = fabric.topology();
    topo.nodes()
        .filter(|(_, n)| !n.is_switch() && n.name() != avoid)
        .find_map(|(id, n)| {
            let p = n.port_numbers().find(|&p| fabric.peer(id, p).is_some())?;
            Some((n.name().to_string(), id, p))
        })
        .unwrap()
}

fn lid_of(fabric: &Fabric, id: fabric_sim::topo::NodeId, port: PortNum) -> u16 {
    fabric.agent(id).unwrap().port_info(port).unwrap().lid().0
}

/// On our served fabric (OpenSM without periodic sweeps, so only the test's MADs move):
/// perfquery shows exactly the fabric's counters, they move with traffic, `-R` clears them, and
/// ibqueryerrors finds every port clean, then shows the symbol and receive errors injected on
/// one cable.
#[test]
fn counters_move_with_traffic_clear_on_reset_and_ibqueryerrors_shows_injected_errors() {
    let test = "perf_counters_and_errors";
    if !peers_with(test, PERF_TOOLS) {
        return;
    }
    let dir = TempDir::new(test).unwrap();
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let served = Served::start(&topo);
    let (osm, _) = opensm_up_with(&served, dir.path(), "minhop", &["-s", "0"]);
    // OpenSM's first sweeps are over once the subnet is up; let its last MADs land.
    std::thread::sleep(Duration::from_millis(300));

    let server = served.finish();
    let (name, id, port) = some_ca(server.fabric(), "");
    let lid = lid_of(server.fabric(), id, port).to_string();
    let before = *server.fabric().port_counters(id, port).unwrap();
    let served = Rewrap::serve(server).0;
    let p = port.0.to_string();
    let first = perfquery(&served, dir.path(), &[&lid, &p]).unwrap();
    // perfquery asks ClassPortInfo, then PortCounters: two requests in before the counters are
    // read, one answer out.
    assert_eq!(
        value(&first, "PortRcvPkts"),
        before.port_rcv_pkts + 2,
        "{name}"
    );
    assert_eq!(
        value(&first, "PortXmitPkts"),
        before.port_xmit_pkts + 1,
        "{name}"
    );
    assert_eq!(value(&first, "PortRcvData"), before.port_rcv_data + 2 * 72);
    // Traffic moves them: a second read sees the first read's packets.
    let second = perfquery(&served, dir.path(), &[&lid, &p]).unwrap();
    assert_eq!(
        value(&second, "PortRcvPkts"),
        value(&first, "PortRcvPkts") + 2
    );
    assert_eq!(
        value(&second, "PortXmitPkts"),
        value(&first, "PortXmitPkts") + 2
    );
    // -r shows the counters, then clears them; the next read sees only what came after.
    let reset = perfquery(&served, dir.path(), &["-r", &lid, &p]).unwrap();
    assert!(value(&reset, "PortXmitData") > 0);
    let after = perfquery(&served, dir.path(), &[&lid, &p]).unwrap();
    assert!(value(&after, "PortRcvPkts") <= 3, "{after:?}");
    assert!(value(&after, "PortXmitPkts") <= 2, "{after:?}");
    assert!(value(&after, "PortXmitData") < value(&reset, "PortXmitData"));
    let x = perfquery(&served, dir.path(), &["-x", &lid, &p]).unwrap();
    assert!(
        value(&x, "PortXmitData") <= 4 * 72,
        "64-bit counters cleared too: {x:?}"
    );
    // -R clears without showing: traffic counted since is gone.
    assert!(value(&x, "PortRcvPkts") > 0, "{x:?}");
    let quiet = perfquery(&served, dir.path(), &["-R", &lid, &p]).unwrap();
    assert!(
        quiet.is_empty(),
        "perfquery -R prints no counters: {quiet:?}"
    );
    let x = perfquery(&served, dir.path(), &["-x", &lid, &p]).unwrap();
    assert!(value(&x, "PortRcvPkts") <= 3, "cleared by -R: {x:?}");

    // A clean fabric: no port has errors.
    let clean = served.diag(dir.path(), "ibqueryerrors", &[]);
    assert!(
        clean.contains("0 ports have errors beyond threshold"),
        "{clean}"
    );

    // Errors on the cable of one CA: every crossing costs the receiver a symbol error, and a
    // fifth of them fail the CRC (dropped, PortRcvErrors).
    let mut server = served.finish();
    let faults = FaultConfig::parse("symbol=1,corrupt=0.2").unwrap();
    server
        .fabric_mut()
        .set_link_faults(id, port, Some(faults))
        .unwrap();
    let served = Rewrap::serve(server).0;
    for _ in 0..10 {
        // Some are lost to the CRC failures (status 110 back at once).
        let _ = perfquery(&served, dir.path(), &[&lid, &p]);
    }
    let mut server = served.finish();
    server.fabric_mut().set_link_faults(id, port, None).unwrap();
    let c = *server.fabric().port_counters(id, port).unwrap();
    assert!(
        c.symbol_error_counter >= 10 && c.port_rcv_errors > 0,
        "{c:?}"
    );
    let served = Rewrap::serve(server).0;
    // ibqueryerrors exits 1 when it found ports with errors.
    let out = served
        .client("ibqueryerrors", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let dirty = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(dirty.contains(&name), "{dirty}");
    assert!(dirty.contains("SymbolErrorCounter"), "{dirty}");
    assert!(dirty.contains("PortRcvErrors"), "{dirty}");
    assert!(
        !dirty.contains("0 ports have errors beyond threshold"),
        "{dirty}"
    );
    drop(osm);
}

/// `perfquery` aimed at the port where OpenSM runs is answered by that node's PMA; OpenSM never
/// sees it (its shim has no PerfMgt agent and would crash on it) and keeps running.
#[test]
fn perfquery_to_the_opensm_node_leaves_opensm_running() {
    let test = "perf_to_opensm_node";
    if !peers_with(test, PERF_TOOLS) {
        return;
    }
    let dir = TempDir::new(test).unwrap();
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let served = Served::start(&topo);
    let (mut osm, _) = opensm_up(&served, dir.path(), "minhop");
    // OpenSM runs on the topology's first node (a switch: its port 0, LID 1 here).
    let server = served.finish();
    let first = server.fabric().topology().nodes().next().unwrap().0;
    let lid = lid_of(server.fabric(), first, PortNum(0)).to_string();
    let served = Rewrap::serve(server).0;
    for args in [
        vec![lid.as_str(), "1"],
        vec!["-x", &lid, "1"],
        vec!["-a", &lid],
    ] {
        let l = perfquery(&served, dir.path(), &args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert!(value(&l, "PortXmitData") > 0, "{args:?}: {l:?}");
    }
    // Without arguments perfquery asks its own port: the client shares OpenSM's node, the
    // switch, so that is management port 0, which no link crosses (all counters 0).
    let own = perfquery(&served, dir.path(), &[]).unwrap();
    assert_eq!(value(&own, "PortSelect"), 0, "{own:?}");
    assert_eq!(value(&own, "PortXmitData"), 0, "{own:?}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(osm.0.try_wait().unwrap().is_none(), "OpenSM died");
    // And it still serves: SMInfo from it.
    let sminfo = served.diag(dir.path(), "sminfo", &[]);
    assert!(sminfo.contains("SMINFO_MASTER"), "{sminfo}");
}

/// `ibportstate LID PORT disable`, then `enable`, on a served switch port: OpenSM re-sweeps on
/// the switch's trap 128 and the port is Active again within 2 s.
#[test]
fn a_switch_port_disabled_and_enabled_with_ibportstate_is_active_again_within_two_seconds() {
    let test = "ibportstate_disable_enable";
    if !peers_with(test, PERF_TOOLS) {
        return;
    }
    let dir = TempDir::new(test).unwrap();
    let topo = Topology::generate("fat-tree:3,4").unwrap();
    let served = Served::start(&topo);
    let (osm, _) = opensm_up(&served, dir.path(), "minhop");
    let server = served.finish();
    // An edge switch's port to one of its CAs.
    let fabric = server.fabric();
    let (_, ca, ca_port) = some_ca(fabric, "");
    let peer = fabric.peer(ca, ca_port).unwrap();
    let lid = lid_of(fabric, peer.node, PortNum(0)).to_string();
    let port = peer.port.0.to_string();
    let served = Rewrap::serve(server).0;
    let state = |served: &Served| {
        let text = served.diag(dir.path(), "ibportstate", &[&lid, &port]);
        text.lines()
            .find(|l| l.starts_with("LinkState:"))
            .map(|l| {
                l.trim_start_matches("LinkState:")
                    .trim_start_matches('.')
                    .to_string()
            })
            .unwrap_or_else(|| panic!("no LinkState in {text}"))
    };
    assert_eq!(state(&served), "Active");
    served.diag(dir.path(), "ibportstate", &[&lid, &port, "disable"]);
    let start = Instant::now();
    while state(&served) != "Down" {
        assert!(start.elapsed() < Duration::from_secs(2), "not Down");
        std::thread::sleep(Duration::from_millis(50));
    }
    served.diag(dir.path(), "ibportstate", &[&lid, &port, "enable"]);
    let start = Instant::now();
    loop {
        let s = state(&served);
        if s == "Active" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "still {s} 2 s after enable"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(osm);
}

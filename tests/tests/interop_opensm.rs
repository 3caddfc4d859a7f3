//! Stock OpenSM and infiniband-diags against *our* simulated fabric: the fabric-sim is served
//! in-process over ibsim's client protocol ([`fabric_sim::ibsim_server`]), and the Debian
//! programs run as child processes under an LD_PRELOAD shim with a private `IBSIM_SOCKNAME`,
//! in a private temp dir. Every test runs twice (`umad::both_shims!`): under ibsim's
//! `libumad2sim.so` and under our `libibsm_umad.so`.
//!
//! OpenSM runs as a daemon with `-s 1` until its log says SUBNET UP, then is stopped by PID. Not
//! `-o`: our SMA starts every port with OperationalVLs = 1 (VL0), so OpenSM's first heavy sweep
//! sets the CA ports Down to apply its OpVLs (as on hardware whose ports come up VL0-only), and
//! that sweep ends "Errors during initialization" by design; the next one (1 s later) brings
//! the subnet up. ibsim starts ports at VLCap, which is why `opensm -o` comes up there at once.
//!
//! OpenSM buffers its log file; `-d 2` makes it flush after every message so "SUBNET UP" is
//! seen as soon as it is written.
//!
//! Skipped loudly when opensm / ibsim-utils / infiniband-diags are missing, unless
//! `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fabric_sim::ibsim_server::IbsimServer;
use fabric_sim::sim::{Fabric, SimConfig};
use fabric_sim::topo::Topology;
use ibmad::{Lid, NodeType, PortNum};
use sm::check::check_all_pairs;
use sm::routing::Lfts;
use sm::subnet::{NodeId, Subnet};
use umad::both_shims;
use umad::testutil::TempDir;

mod interop_util;
use interop_util::*;

/// The subnet as our SMAs hold it after OpenSM programmed it (topology + every agent's
/// PortInfo and SwitchInfo), and the LFTs read back from the agents.
fn programmed(fabric: &Fabric) -> (Subnet, Lfts) {
    let topo = fabric.topology();
    let mut subnet = fabric_sim::topo::subnet::to_subnet(topo);
    for (id, n) in topo.nodes() {
        let a = fabric.agent(id).unwrap();
        let sid = NodeId(id.0);
        subnet.nodes[sid.idx()].switch_info = a.switch_info();
        for p in 0..=n.num_ports() {
            let pi = a.port_info(PortNum(p)).copied();
            let port = subnet.port_mut(sid, PortNum(p)).unwrap();
            port.info = pi;
            if let Some(pi) = pi {
                port.lid = pi.lid();
                port.lmc = pi.lmc();
            }
        }
    }
    let top = subnet
        .end_ports()
        .map(|(n, p)| subnet.port(n, p).unwrap().lid.0)
        .max()
        .unwrap_or(0);
    let mut lfts = Lfts::new(&subnet, Lid(top));
    for sw in subnet.switches().collect::<Vec<_>>() {
        let a = fabric.agent(fabric_sim::topo::NodeId(sw.0)).unwrap();
        for lid in 1..=top {
            lfts.set(sw, Lid(lid), a.lft_port(Lid(lid)));
        }
    }
    (subnet, lfts)
}

/// LID of every end port (switch port 0, CA ports), from the agents.
fn lids(fabric: &Fabric) -> Vec<(fabric_sim::topo::NodeId, PortNum, Lid)> {
    let mut v = Vec::new();
    for (id, n) in fabric.topology().nodes() {
        let a = fabric.agent(id).unwrap();
        let ports: Vec<u8> = if n.is_switch() {
            vec![0]
        } else {
            (1..=n.num_ports()).collect()
        };
        for p in ports {
            if fabric.topology().node(id).unwrap().is_switch()
                || fabric.peer(id, PortNum(p)).is_some()
            {
                v.push((id, PortNum(p), a.port_info(PortNum(p)).unwrap().lid()));
            }
        }
    }
    v
}

/// OpenSM brings the fabric up with `engine`; the tables it programmed, read back from our
/// SMAs, reach every CA from every CA (shortest paths when `shortest`).
fn opensm_brings_up(test: &str, topo: &Topology, engine: &str, shortest: bool) {
    if !peers(test) {
        return;
    }
    let dir = TempDir::new(test).unwrap();
    let served = Served::start(topo);
    let log = opensm_until_up(&served, dir.path(), engine);
    assert!(
        log.contains(&format!("{engine} tables configured on all switches")),
        "OpenSM did not route with {engine} (fell back?):\n{log}"
    );
    let server = served.finish();
    let fabric = server.fabric();
    for (id, p, lid) in lids(fabric) {
        assert!(lid.is_unicast(), "node {id} port {p} has no LID");
        let pi = fabric.agent(id).unwrap().port_info(p).unwrap();
        // OpenSM never sets the state of a base switch port 0 (osm_link_mgr.c skips it), so
        // only CA ports are checked for Active here.
        if p.0 != 0 {
            assert_eq!(
                pi.port_state(),
                ibmad::PortState::ACTIVE,
                "node {id} port {p}"
            );
        }
    }
    let (subnet, lfts) = programmed(fabric);
    let r = check_all_pairs(&subnet, &lfts);
    assert!(r.pairs > 0);
    assert_eq!(r.unreachable_count, 0, "{engine}: {r:?}");
    assert_eq!(r.loops, 0, "{engine}: {r:?}");
    if shortest {
        assert!(r.is_ok(), "{engine}: {r:?}");
    }
    // The full verifier: also no credit loop (CDG cycle).
    let rep = sm::verify::verify(&subnet, &lfts);
    assert!(rep.is_ok(), "{engine}: {}", rep.summary(&subnet));
}

both_shims! {
    fn opensm_minhop_brings_up_net_2sw2path_and_its_tables_pass_our_checker() {
        let topo = Topology::from_file(net_example("net.2sw2path")).unwrap();
        opensm_brings_up("opensm_minhop_2sw2path", &topo, "minhop", true);
    }
}

both_shims! {
    fn opensm_updn_brings_up_a_fat_tree() {
        let topo = Topology::generate("fat-tree:2,4").unwrap();
        opensm_brings_up("opensm_updn_fat_tree", &topo, "updn", true);
    }
}

both_shims! {
    fn opensm_ftree_brings_up_a_fat_tree() {
        let topo = Topology::generate("fat-tree:2,4").unwrap();
        opensm_brings_up("opensm_ftree_fat_tree", &topo, "ftree", true);
    }
}

/// `0x0005 001 : (...)` lines of ibroute / dump_fts → LID → port.
fn parse_routes(text: &str) -> BTreeMap<u16, u8> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let lid = u16::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            let port = w.next()?.parse().ok()?;
            (w.next()? == ":").then_some((lid, port))
        })
        .collect()
}

both_shims! {
    fn diags_see_the_fabric_opensm_configured() {
        let test = "diags_on_served_fabric";
        if !peers(test) {
            return;
        }
        let topo = Topology::from_file(net_example("net.2sw2path4hca")).unwrap();
        let dir = TempDir::new(test).unwrap();
        let served = Served::start(&topo);
        let (opensm, log) = opensm_up(&served, dir.path(), "minhop");
        assert!(log.contains("SUBNET UP"));
        let d = dir.path();

        // While OpenSM runs: `sminfo` (an SMInfo Get to the SM's LID, forwarded by the server to
        // OpenSM, the SM client) and `saquery` (an SA query, class 0x03, forwarded likewise).
        let smi = served.diag(d, "sminfo", &[]);
        assert!(smi.contains("SMINFO_MASTER"), "{smi}");
        assert!(smi.contains("priority 0"), "{smi}");
        let sa = served.diag(d, "saquery", &[]);
        assert!(sa.contains("NodeRecord dump"), "{sa}");
        drop(opensm);

        // ibnetdiscover: every node, by GUID.
        let net = served.diag(d, "ibnetdiscover", &[]);
        for (_, n) in topo.nodes() {
            assert!(
                net.contains(&format!("{:016x}", n.guid().0)),
                "{} ({:#x}) missing:\n{net}",
                n.name(),
                n.guid().0
            );
        }
        // ibswitches / ibhosts: one line per node of the kind, with its GUID.
        let sw = served.diag(d, "ibswitches", &[]);
        let ca = served.diag(d, "ibhosts", &[]);
        assert_eq!(
            sw.lines().filter(|l| l.starts_with("Switch")).count(),
            topo.num_switches(),
            "{sw}"
        );
        assert_eq!(
            ca.lines().filter(|l| l.starts_with("Ca")).count(),
            topo.num_cas(),
            "{ca}"
        );
        for (_, n) in topo.nodes() {
            let text = if n.is_switch() { &sw } else { &ca };
            assert!(
                text.contains(&format!("0x{:016x}", n.guid().0)),
                "{}:\n{text}",
                n.name()
            );
        }
        // iblinkinfo: every cabled port shows an Active/LinkUp link, nothing else.
        let links = served.diag(d, "iblinkinfo", &[]);
        // Lines of cabled ports (an uncabled switch port shows `==( Down/ Polling)==> [ ] ""`).
        let link_lines: Vec<&str> = links
            .lines()
            .filter(|l| l.contains("==(") && !l.contains("[  ] \"\" ("))
            .collect();
        assert!(
            link_lines.len() >= topo.num_links(),
            "{} link lines for {} links:\n{links}",
            link_lines.len(),
            topo.num_links()
        );
        for l in &link_lines {
            assert!(l.contains("Active/  LinkUp"), "not Active: {l}");
        }

        // Stop serving to read the agents, then serve the same fabric again for the LID-routed diags.
        let server = served.finish();
        let fabric_lids = lids(server.fabric());
        let sm_lid = {
            let (id, p, _) = fabric_lids[0];
            server
                .fabric()
                .agent(id)
                .unwrap()
                .port_info(p)
                .unwrap()
                .master_sm_lid()
        };
        let lft: Vec<(u16, BTreeMap<u16, u8>)> = topo
            .nodes()
            .filter(|(_, n)| n.is_switch())
            .map(|(id, _)| {
                let a = server.fabric().agent(id).unwrap();
                let lid = a.port_info(PortNum(0)).unwrap().lid().0;
                let top = a.switch_info().unwrap().linear_fdb_top.get();
                let map = (1..=top)
                    .filter_map(|l| a.lft_port(Lid(l)).map(|p| (l, p.0)))
                    .collect();
                (lid, map)
            })
            .collect();
        let (subnet, _) = programmed(server.fabric());
        let served = Rewrap::serve(server);

        for (id, p, lid) in &fabric_lids {
            let n = topo.node(*id).unwrap();
            let ni = served
                .0
                .diag(d, "smpquery", &["nodeinfo", &lid.0.to_string()]);
            assert!(
                ni.contains(&format!("0x{:016x}", n.guid().0)),
                "{}:\n{ni}",
                n.name()
            );
            let pi = served.0.diag(
                d,
                "smpquery",
                &["portinfo", &lid.0.to_string(), &p.0.to_string()],
            );
            let field = |name: &str| {
                pi.lines()
                    .find(|l| l.starts_with(name))
                    .and_then(|l| l.rsplit('.').next())
                    .map(str::to_string)
                    .unwrap_or_default()
            };
            assert_eq!(field("Lid:"), lid.0.to_string(), "{pi}");
            assert_eq!(field("SMLid:"), sm_lid.0.to_string(), "{pi}");
            if n.node_type() != NodeType::SWITCH {
                assert_eq!(field("LinkState:"), "Active", "{pi}");
            } else {
                let si = served
                    .0
                    .diag(d, "smpquery", &["switchinfo", &lid.0.to_string()]);
                let top = lft
                    .iter()
                    .map(|(_, m)| *m.keys().max().unwrap())
                    .max()
                    .unwrap();
                assert!(
                    si.contains(&format!("LinearFdbTop:....................{top}")),
                    "{si}"
                );
            }
        }
        // ibroute (LID-routed LinearForwardingTable Gets) reads exactly what our agents hold.
        for (lid, want) in &lft {
            let text = served.0.diag(d, "ibroute", &[&lid.to_string()]);
            assert_eq!(&parse_routes(&text), want, "switch LID {lid}:\n{text}");
        }
        // dump_fts (directed route through ibnetdisc) gives the same tables.
        let fts = served.0.diag(d, "dump_fts", &[]);
        let blocks: Vec<&str> = fts.split("Unicast lids").skip(1).collect();
        assert_eq!(blocks.len(), lft.len(), "{fts}");
        let all: Vec<BTreeMap<u16, u8>> = blocks.iter().map(|b| parse_routes(b)).collect();
        // ... and those tables, parsed from dump_fts's text, pass our verifier.
        let dump = sm::routing::file::parse_lft_dump(&fts).unwrap();
        let from_dump = dump.to_lfts(&subnet).unwrap();
        let rep = sm::verify::verify(&subnet, &from_dump);
        assert!(rep.is_ok(), "{}", rep.summary(&subnet));
        assert!(rep.reach.pairs > 0);
        for (lid, want) in &lft {
            assert!(
                all.contains(want),
                "switch LID {lid}: table not in dump_fts:\n{fts}"
            );
        }
    }
}

/// One turn of an in-process ibsm on the served fabric: its MADs in, its timers, its MADs out,
/// then the server carries them; returns the SM's events. SMInfo GetResps with TID `probe` are
/// handed to `seen` (the SM never sees them).
fn ibsm_turn(
    server: &mut IbsimServer,
    h: fabric_sim::sim::SmHandle,
    sm: &mut sm::Sm,
    probe: u64,
    seen: &mut Vec<ibmad::attr::SmInfo>,
) -> Vec<sm::Event> {
    use ibmad::zerocopy::FromBytes;
    let f = server.fabric_mut();
    let now = f.now();
    let mut port = f.sm_port(h);
    let mut tap = ibmad::Tap::new(&mut port, |dir, _: &ibmad::MadMeta, mad: &[u8]| {
        match ibmad::Smp::ref_from_bytes(mad) {
            Ok(smp)
                if dir == ibmad::Direction::Recv
                    && smp.tid.get() == probe
                    && smp.attr() == ibmad::SmpAttrId::SM_INFO =>
            {
                seen.push(*ibmad::attr::SmInfo::ref_from_prefix(&smp.data).unwrap().0);
                false
            }
            _ => true,
        }
    });
    let mut events = Vec::new();
    let _ = sm::drive::turn(
        &mut sm::drive::Agents::sm(sm),
        &mut tap,
        now,
        &mut |_, e| {
            events.push(e);
            std::ops::ControlFlow::Continue(())
        },
    )
    .unwrap();
    server.service();
    events
}

both_shims! {
    fn opensm_and_ibsm_answer_each_others_sminfo_and_the_higher_priority_stays_master() {
        let test = "two_sms_sminfo";
        if !peers(test) {
            return;
        }
        use ibmad::zerocopy::IntoBytes;
        let topo = Topology::generate("fat-tree:2,4").unwrap();
        let fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
        let mut server = IbsimServer::bind(fabric, &sock_name()).unwrap();
        // ibsm (priority 15) on the last CA, OpenSM (priority 0) on the first node (a spine).
        let ca = topo.nodes_of_type(NodeType::CA).last().unwrap();
        let h = server
            .fabric_mut()
            .attach_sm(ca, PortNum(1))
            .unwrap()
            .handle;
        let cfg = sm::SmConfig {
            port: PortNum(1),
            sm_priority: 15,
            ..sm::SmConfig::default()
        };
        let mut ibsm = sm::Sm::new(cfg).unwrap();
        let mut seen = Vec::new();
        let start = Instant::now();
        while !ibsm.is_up() {
            assert!(start.elapsed() < Duration::from_secs(20), "ibsm not up");
            server.poll(Duration::from_millis(1)).unwrap();
            let _ = ibsm_turn(&mut server, h, &mut ibsm, 0, &mut seen);
        }

        let dir = TempDir::new(test).unwrap();
        let client = Served::client_of(&server);
        let (_opensm, log) = spawn_opensm(&client, dir.path(), "opensm.log", &[]);

        // OpenSM finds ibsm's port (IsSM), asks its SMInfo, and stands by.
        let start = Instant::now();
        let text = loop {
            server.poll(Duration::from_millis(2)).unwrap();
            let _ = ibsm_turn(&mut server, h, &mut ibsm, 0, &mut seen);
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("Entering STANDBY state") {
                break text;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "OpenSM did not stand by:\n{text}"
            );
        };
        assert!(!text.contains("SUBNET UP"), "OpenSM took over:\n{text}");

        // ibsm's side of the exchange: an SMInfo Get to OpenSM's port (the spine's port 0, LID
        // routed over the tables ibsm programmed) is answered by OpenSM through the server.
        let spine = topo.nodes().next().unwrap().0;
        let spine_lid = server
            .fabric()
            .agent(spine)
            .unwrap()
            .port_info(PortNum(0))
            .unwrap()
            .lid();
        let probe = 0x5151_0000_0000_beef_u64 & 0x0000_ffff_ffff_ffff;
        let req = ibmad::Smp::lid_request(ibmad::Method::GET, ibmad::SmpAttrId::SM_INFO, 0, probe);
        let meta = ibmad::MadMeta {
            port: PortNum(1),
            slid: Lid(0),
            dlid: spine_lid,
            qp: 0,
            sl: 0,
            ..Default::default()
        };
        server
            .fabric_mut()
            .sm_send(h, &meta, req.as_bytes())
            .unwrap();
        server.service();
        let start = Instant::now();
        while seen.is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "OpenSM did not answer SMInfo Get"
            );
            server.poll(Duration::from_millis(2)).unwrap();
            let _ = ibsm_turn(&mut server, h, &mut ibsm, probe, &mut seen);
        }
        let theirs = seen[0];
        assert_eq!(theirs.guid().0, topo.node(spine).unwrap().guid().0);
        assert_eq!(theirs.priority(), 0);
        assert_eq!(theirs.sm_state(), ibmad::SmState::STANDBY);
        // ibsm kept the subnet.
        assert!(ibsm.is_up());
    }
}

both_shims! {
    fn a_cut_cable_reaches_opensm_as_trap_128_and_it_resweeps() {
        let test = "trap128_to_opensm";
        if !peers(test) {
            return;
        }
        let topo = Topology::generate("fat-tree:2,4").unwrap();
        let dir = TempDir::new(test).unwrap();
        let served = Served::start(&topo);
        let (opensm, _) = opensm_up(&served, dir.path(), "minhop");
        let log = dir.path().join("opensm-minhop.log");
        // The log so far (it already holds traps 128 from the first sweep's link bounces).
        let seen = std::fs::read_to_string(&log).unwrap().len();

        // Cut leaf-0's uplink to spine-1 (OpenSM runs on spine-0, the first node).
        let mut server = served.finish();
        let leaf = server.fabric().node_by_name("leaf-0").unwrap();
        let spine1 = server.fabric().node_by_name("spine-1").unwrap();
        let port = topo
            .ports(leaf)
            .find(|(_, p)| p.peer().is_some_and(|r| r.node == spine1))
            .map(|(n, _)| n)
            .unwrap();
        let issuers: Vec<String> = [leaf, spine1]
            .iter()
            .map(|&n| {
                let lid = server
                    .fabric()
                    .agent(n)
                    .unwrap()
                    .port_info(PortNum(0))
                    .unwrap()
                    .lid();
                format!(
                    "num:128 (Link state change) Producer:2 (Switch) from LID:{} ",
                    lid.0
                )
            })
            .collect();
        server.fabric_mut().set_link(leaf, port, false).unwrap();
        let served = Rewrap::serve(server);

        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let new = text.get(seen..).unwrap_or("");
            // A trap 128 after the cut, then a completed heavy sweep after that trap.
            let trap = issuers.iter().filter_map(|t| new.find(t.as_str())).min();
            if trap.is_some_and(|i| new[i..].contains("SUBNET UP")) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no trap 128 / re-sweep seen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(opensm);
        let server = served.0.finish();
        // The re-programmed tables still reach every CA without the cut cable.
        let (subnet, lfts) = programmed(server.fabric());
        let r = check_all_pairs(&subnet, &lfts);
        assert_eq!(r.unreachable_count, 0, "{r:?}");
        assert_eq!(r.loops, 0, "{r:?}");
    }
}

both_shims! {
    fn opensm_minhop_brings_up_dual_port_hcas() {
        let topo = Topology::from_file(net_example("net.2sw2path4hca2port")).unwrap();
        opensm_brings_up("opensm_minhop_2port", &topo, "minhop", true);
    }
}

both_shims! {
    fn opensm_ftree_brings_up_a_three_level_fat_tree() {
        let topo = Topology::generate("fat-tree:3,4").unwrap();
        opensm_brings_up("opensm_ftree_3level", &topo, "ftree", true);
    }
}

both_shims! {
    /// `opensm -o -e` (one sweep, then exit) reaches SUBNET UP within two runs: the first run may
    /// end "Errors during initialization" after bouncing the CA links to apply OperationalVLs (see
    /// the module docs); the second finds the ports configured.
    fn opensm_run_once_reaches_subnet_up_within_two_runs() {
        let test = "opensm_run_once";
        if !peers(test) {
            return;
        }
        let topo = Topology::from_file(net_example("net.2sw2path")).unwrap();
        let dir = TempDir::new(test).unwrap();
        let served = Served::start(&topo);
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let mut logs = Vec::new();
        for run in 0..2 {
            let log = dir.path().join(format!("opensm-o-{run}.log"));
            let mut cmd = served.client("opensm", dir.path());
            cmd.args(["-o", "-e", "-f"])
                .arg(&log)
                .env("OSM_CACHE_DIR", &cache)
                .env("OSM_TMP_DIR", &cache)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut proc = Proc(cmd.spawn().unwrap());
            let start = Instant::now();
            while proc.0.try_wait().unwrap().is_none() {
                assert!(start.elapsed() < Duration::from_secs(30), "opensm -o hangs");
                std::thread::sleep(Duration::from_millis(50));
            }
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("SUBNET UP") {
                return;
            }
            // Only the OpVLs/MTU link bounce may spoil the first run.
            assert!(
                text.contains("Errors during initialization"),
                "run {run}: neither SUBNET UP nor the known first-sweep errors:\n{text}"
            );
            logs.push(text);
        }
        panic!(
            "no SUBNET UP in two `opensm -o` runs:\n{}",
            logs.join("\n----\n")
        );
    }
}

both_shims! {
    /// Issue 6: stock OpenSM brings up a fabric whose every switch is an RA-1 reference-ASIC device
    /// model driven by our driver and host SMA (in process), and the LFTs OpenSM computed (its own
    /// opensm-lfts.dump) are exactly what sits in the models' LFT registers.
    fn opensm_brings_up_a_fabric_of_ra1_switch_models() {
        use fabric_sim::sim::node_config;
        use hca_driver::sim::AsicNode;
        use hca_driver::{DriverConfig, ModelConfig, ModelFault};

        if !peers("opensm_ra1_models") {
            return;
        }
        let topo = Topology::generate("fat-tree:2,4").unwrap();
        let mut fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
        let mut models = Vec::new();
        let switches: Vec<_> = topo.nodes_of_type(NodeType::SWITCH).collect();
        for id in switches {
            let nc = node_config(&topo, id).unwrap();
            let cfg = ModelConfig {
                node_guid: nc.node_guid.0,
                num_ports: nc.num_ports,
                ports: nc.ports.clone(),
                lft_blocks: 768,
                mft_blocks: 32,
                fault: ModelFault::None,
            };
            let drv = DriverConfig {
                rx_log2: 5,
                tx_log2: 5,
                spare_buffers: 32,
                ..DriverConfig::default()
            };
            let desc = topo.node(id).unwrap().desc().to_string();
            let node = AsicNode::new(cfg, drv, &desc, fabric.now()).unwrap();
            models.push((nc.node_guid.0, node.backend().clone()));
            assert!(fabric.set_external(id, Box::new(node)).unwrap().is_none());
        }
        let dir = TempDir::new("opensm_ra1_models").unwrap();
        let mut served = Served::start_fabric(fabric);
        // OpenSM runs on a CA (the first node, ibsim's default, is a switch model here).
        let ca = topo.nodes_of_type(NodeType::CA).next().unwrap();
        served.host = Some(topo.node(ca).unwrap().name().to_string());
        let (proc, log) = opensm_up_with(&served, dir.path(), "minhop", &["-D", "0x43"]);
        assert!(
            log.contains("minhop tables configured on all switches"),
            "{log}"
        );
        // OpenSM writes its dump files at the end of the sweep that logged SUBNET UP.
        let dump = dir.path().join("cache").join("opensm-lfts.dump");
        let start = Instant::now();
        let text = loop {
            let t = std::fs::read_to_string(&dump).unwrap_or_default();
            if t.matches("Unicast lids").count() == models.len() && t.ends_with('\n') {
                break t;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no complete opensm-lfts.dump:\n{t}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        drop(proc);
        let server = served.finish();
        let parsed = sm::routing::file::parse_lft_dump(&text).unwrap();
        assert_eq!(parsed.switches.len(), models.len());
        let mut checked = 0;
        for sw in &parsed.switches {
            let (_, backend) = models
                .iter()
                .find(|(g, _)| *g == sw.guid.0)
                .unwrap_or_else(|| panic!("{:#x} is not a model", sw.guid.0));
            let m = backend.model().lock().unwrap();
            for e in &sw.entries {
                let block = m.lft_block(e.lid.0 / 64).unwrap();
                assert_eq!(
                    block[usize::from(e.lid.0 % 64)],
                    e.port.0,
                    "switch {:#x} LID {}: model register vs OpenSM's table",
                    sw.guid.0,
                    e.lid.0
                );
                checked += 1;
            }
        }
        assert!(checked > 0);
        // Every cabled CA port (built-in agents) is Active.
        let fabric = server.fabric();
        for id in fabric.topology().nodes_of_type(NodeType::CA) {
            let a = fabric.agent(id).unwrap();
            assert_eq!(
                a.port_info(PortNum(1)).unwrap().port_state(),
                ibmad::PortState::ACTIVE
            );
        }
    }
}

both_shims! {
    /// The other way round: OpenSM (priority 15) is master; an ibsm (priority 0) started later
    /// finds OpenSM's port (IsSM), asks its SMInfo after discovery, and stands by without
    /// programming anything.
    fn ibsm_stands_by_for_a_higher_priority_opensm() {
        let test = "ibsm_stands_by";
        if !peers(test) {
            return;
        }
        let topo = Topology::generate("fat-tree:2,4").unwrap();
        let fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
        let mut server = IbsimServer::bind(fabric, &sock_name()).unwrap();
        let dir = TempDir::new(test).unwrap();
        let client = Served::client_of(&server);
        let (_opensm, log) = spawn_opensm(&client, dir.path(), "opensm.log", &["-p", "15"]);
        let start = Instant::now();
        loop {
            server.poll(Duration::from_millis(2)).unwrap();
            if std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("SUBNET UP")
            {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "OpenSM not up");
        }

        let ca = topo.nodes_of_type(NodeType::CA).last().unwrap();
        let h = server
            .fabric_mut()
            .attach_sm(ca, PortNum(1))
            .unwrap()
            .handle;
        let mut ibsm = sm::Sm::new(sm::SmConfig {
            port: PortNum(1),
            sm_priority: 0,
            sweep_interval: Duration::ZERO,
            ..sm::SmConfig::default()
        })
        .unwrap();
        let mut seen = Vec::new();
        let mut events = Vec::new();
        let start = Instant::now();
        let (master, priority) = loop {
            server.poll(Duration::from_millis(1)).unwrap();
            events.extend(ibsm_turn(&mut server, h, &mut ibsm, 0, &mut seen));
            if let Some(sm::Event::Standby {
                master, priority, ..
            }) = events
                .iter()
                .find(|e| matches!(e, sm::Event::Standby { .. }))
            {
                break (*master, *priority);
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "ibsm did not stand by: {events:?}"
            );
        };
        let spine = topo.nodes().next().unwrap().0;
        assert_eq!(
            master.0,
            topo.node(spine).unwrap().guid().0,
            "OpenSM's port GUID"
        );
        assert_eq!(priority, 15);
        assert_eq!(ibsm.role(), sm::Role::Standby);
        assert!(!ibsm.is_up());
        assert!(ibsm.lfts().is_none(), "a standby SM programs nothing");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            !text.contains("Entering STANDBY state"),
            "OpenSM stays master:\n{text}"
        );
    }
}

/// Stock OpenSM's VL engines (`-Q -R ENGINE`) manage our simulated 4×4×3 torus (issue 14):
/// OpenSM routes with the engine (no fallback) and reaches SUBNET UP; its SA grants a path SL
/// for every ordered pair of end ports (`saquery -p`, under our shim for RMPP); every SL2VL
/// table OpenSM says it set (its `opensm-sl2vl.dump`) is the one our SMAs hold; and the tables
/// our SMAs hold — LFTs, SL2VL and the SA's path SLs — are deadlock-free under the VL-aware
/// check and reach every CA from every CA.
fn opensm_vl_engine_on_our_torus(test: &str, engine: &str) {
    opensm_vl_engine_on(test, "torus:4,4,3", engine);
}

/// [`opensm_vl_engine_on_our_torus`] on the generated torus `spec`.
fn opensm_vl_engine_on(test: &str, spec: &str, engine: &str) {
    use sm::routing::vl::Sl2VlTables;
    use sm::verify::vl::{VlInputs, VlLimit};

    umad::testutil::set_current_shim(umad::testutil::Shim::Ibsm);
    if !peers(test) {
        return;
    }
    let topo = Topology::generate(spec).unwrap();
    let dir = TempDir::new(test).unwrap();
    let mut served = Served::start(&topo);
    served.host = Some("ca-0-0-0-0".into());
    let tconf = dir.path().join("torus-2QoS.conf");
    let grid = fabric_sim::topo::gen::Grid::of_spec(spec).unwrap().unwrap();
    std::fs::write(&tconf, fabric_sim::topo::subnet::torus_conf(&grid)).unwrap();
    let mut extra = vec!["-Q", "-D", "0x43"];
    if engine == "torus-2QoS" {
        extra.extend(["--torus_config", tconf.to_str().unwrap()]);
    }
    let (osm, log) = opensm_up_with(&served, dir.path(), engine, &extra);
    assert!(
        log.contains(&format!("{engine} tables configured on all switches")),
        "OpenSM did not route with {engine} (fell back?):\n{log}"
    );
    let pr = served.diag(dir.path(), "saquery", &["-p"]);
    let sls = sm::dump::parse_saquery_paths(&pr).unwrap();
    let ends = topo.num_cas() + topo.num_switches();
    assert_eq!(sls.pairs.len(), ends * ends, "saquery -p");
    let dump = std::fs::read_to_string(dir.path().join("cache/opensm-sl2vl.dump")).unwrap();
    drop(osm);
    let server = served.finish();
    let fabric = server.fabric();
    let (subnet, lfts) = programmed(fabric);

    // The SL-to-VL tables as our SMAs hold them.
    let table = |a: &fabric_sim::sim::SimAgent, i: u8, o: u8| {
        let mut t = ibmad::attr::SlToVl::default();
        for sl in 0..16 {
            t.set_vl(sl, a.sl_to_vl(PortNum(i), PortNum(o), sl).unwrap());
        }
        t
    };
    let mut held = Sl2VlTables::new(&subnet);
    for (id, n) in topo.nodes() {
        let a = fabric.agent(id).unwrap();
        let sid = NodeId(id.0);
        let np = n.num_ports();
        if n.is_switch() {
            for i in 0..=np {
                for o in 0..=np {
                    held.set(&subnet, sid, PortNum(i), PortNum(o), table(a, i, o));
                }
            }
        } else {
            for p in 1..=np {
                held.set(&subnet, sid, PortNum(p), PortNum(p), table(a, p, p));
            }
        }
    }
    // What OpenSM set is what they hold.
    let (want, unknown) = sm::dump::parse_sl2vl_dump(&subnet, &dump).unwrap();
    assert_eq!(unknown, 0, "opensm-sl2vl.dump names GUIDs the fabric lacks");
    let mut compared = 0;
    for (id, n) in topo.nodes() {
        let sid = NodeId(id.0);
        for i in 0..=n.num_ports() {
            for o in 0..=n.num_ports() {
                if let Some(w) = want.get(sid, PortNum(i), PortNum(o)) {
                    assert_eq!(
                        held.get(sid, PortNum(i), PortNum(o)),
                        Some(w),
                        "{engine}: node {id} SL2VL {i}->{o}"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 0, "{engine}: opensm-sl2vl.dump held no table");
    let rep = sm::verify::verify_with_vls(
        &subnet,
        &lfts,
        &VlInputs {
            sl2vl: &held,
            path_sl: &sls,
            limit: VlLimit::OperVls,
        },
    );
    let vl = rep.vl.as_ref().expect("judged with VLs");
    assert!(vl.routes > 0, "{engine}: {}", rep.summary(&subnet));
    assert!(
        vl.credit_loop.is_none(),
        "{engine}: {}",
        rep.summary(&subnet)
    );
    let r = check_all_pairs(&subnet, &lfts);
    assert!(
        r.pairs > 0 && r.unreachable_count == 0 && r.loops == 0,
        "{engine}: {r:?}"
    );
}

#[test]
fn opensm_lash_manages_our_torus() {
    opensm_vl_engine_on_our_torus("opensm_lash_manages_our_torus", "lash");
}

#[test]
fn opensm_dfsssp_manages_our_torus() {
    opensm_vl_engine_on_our_torus("opensm_dfsssp_manages_our_torus", "dfsssp");
}

#[test]
fn opensm_torus_2qos_manages_our_torus() {
    opensm_vl_engine_on_our_torus("opensm_torus_2qos_manages_our_torus", "torus-2QoS");
}

#[test]
fn opensm_nue_manages_our_torus() {
    opensm_vl_engine_on_our_torus("opensm_nue_manages_our_torus", "nue");
}

/// A torus with a dimension of 2 has two cables between each pair of neighbours there, and
/// the generator crosses them (port 1 to port 2, port 2 to port 1), as real cabling often is:
/// stock OpenSM's lash and torus-2QoS manage it through our SMAs just the same.
#[test]
fn opensm_vl_engines_manage_our_torus_with_crossed_parallel_cables() {
    for engine in ["lash", "torus-2QoS"] {
        opensm_vl_engine_on(
            "opensm_vl_engines_manage_our_torus_with_crossed_parallel_cables",
            "torus:2,3,4",
            engine,
        );
    }
}

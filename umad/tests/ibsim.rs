//! Interop test: the real user_mad code path against ibsim through an LD_PRELOAD shim —
//! Debian's `libumad2sim.so`, then our `libibsm_umad.so` (`umad::both_shims!`).
//!
//! `dr_nodeinfo_through_umad2sim` starts ibsim on `tests/data/umad-3node.net` with a private
//! `IBSIM_SOCKNAME`, then re-executes this test binary (LD_PRELOAD only takes effect at process
//! start) running the ignored test `shim_child` in a fresh temp dir (umad2sim writes
//! `./sys-<pid>`). The child's expectations differ where the shims do: umad2sim's descriptors
//! are fake, it refuses `REGISTER_AGENT2` and echoes an undeliverable request at once; ours
//! are eventfds, take `REGISTER_AGENT2` (64-byte headers) and report the request timed out
//! after its `timeout_ms`, with the 24-byte MAD header as the kernel does.
//! The child discovers the port from the shim's fake sysfs, opens and registers it, and sends
//! directed-route NodeInfo Gets over 0, 1 and 2 hops, checking NodeType and NodeGUID against what
//! the .net file says. ibsim is stopped by its guard, also on failure.
//!
//! Without ibsim or the shim the test prints "SKIPPED: …" and passes, unless
//! `IBSM_REQUIRE_PEERS=1`, in which case it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may unwrap (team rule)

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use ibmad::attr::{NodeInfo, PortInfo};
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, Lid, MadMeta, MadPort, Method, NodeType, Smp, SmpAttrId};
use umad::both_shims;
use umad::testutil::{current_shim, peers_or_skip, IbsimGuard, Shim, TempDir};
use umad::{IoMode, UmadConfig, UmadError, UmadPort};

const CHILD_ENV: &str = "UMAD_SHIM_CHILD";
/// Which shim the child runs under (`Shim::name`).
const SHIM_ENV: &str = "UMAD_SHIM_KIND";

fn net_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/umad-3node.net")
}

/// (node type, GUID) per node id, parsed from the .net file: a `caguid=`/`switchguid=` line sets
/// the GUID of the node header that follows it.
fn expected_nodes() -> Vec<(String, NodeType, u64)> {
    let text = std::fs::read_to_string(net_file()).unwrap();
    let mut guid = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(v) = l
            .strip_prefix("caguid=")
            .or_else(|| l.strip_prefix("switchguid="))
        {
            guid = Some(u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap());
        } else if l.starts_with("Hca") || l.starts_with("Switch") {
            let name = l.split('"').nth(1).unwrap().to_string();
            let ty = if l.starts_with("Hca") {
                NodeType::CA
            } else {
                NodeType::SWITCH
            };
            out.push((name, ty, guid.take().unwrap()));
        }
    }
    out
}

/// Re-executes this test binary under the shim in `dir`, running only the ignored test `name`,
/// and waits for it (at most 60 s, then killed by PID). Checks that it passed and really ran
/// (was not filtered out by the harness); returns its stdout.
fn run_shim_child(sim: &IbsimGuard, dir: &Path, name: &str) -> String {
    run_shim_child_on(sim, dir, name, None)
}

/// [`run_shim_child`] on node `host` (`SIM_HOST`; `None` = the topology's first node).
fn run_shim_child_on(sim: &IbsimGuard, dir: &Path, name: &str, host: Option<&str>) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = sim.client(&exe, dir);
    if let Some(h) = host {
        cmd.env("SIM_HOST", h);
    }
    let child = cmd
        .args(["--exact", name, "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .env(SHIM_ENV, current_shim().name())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, in_time) = umad::testutil::wait_bounded(child, Duration::from_secs(60)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- {name} stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    assert!(in_time, "{name} timed out");
    assert!(
        out.status.success(),
        "{name} failed: {:?}\nibsim output:\n{}",
        out.status,
        sim.output()
    );
    assert!(stdout.contains("1 passed"), "child did not run {name}");
    stdout
}

both_shims! {
    fn dr_nodeinfo_through_umad2sim() {
        if !peers_or_skip("umad dr_nodeinfo_through_umad2sim") {
            return;
        }
        let sim = IbsimGuard::start(&net_file()).unwrap();
        let dir = TempDir::new("shim").unwrap();
        let stdout = run_shim_child(&sim, dir.path(), "shim_child");
        assert!(stdout.contains("NODEINFO-OK hops=2"), "{stdout}");
        // The shim wrote its fake sysfs tree into the child's cwd and removed it at exit.
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        eprintln!("left in the shim's cwd: {leftovers:?}");
        drop(dir);
        sim.stop();
    }
}

fn node_info_at(port: &mut UmadPort, path: &[u8], tid: u64) -> (NodeInfo, Smp) {
    let smp = get_at(port, path, SmpAttrId::NODE_INFO, 0, tid);
    let (ni, _) = NodeInfo::read_from_prefix(&smp.data).unwrap();
    (ni, smp)
}

fn get_at(port: &mut UmadPort, path: &[u8], attr: SmpAttrId, amod: u32, tid: u64) -> Smp {
    let p = DrPath::new(path).unwrap();
    let req = Smp::dr_request(Method::GET, attr, amod, tid, &p);
    port.send(&MadMeta::default(), req.as_bytes()).unwrap();
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no GetResp for path {path:?}");
        let Some((meta, n)) = port.recv_wait(&mut buf, left).unwrap() else {
            continue;
        };
        assert_eq!(n, 256);
        let smp = Smp::read_from_bytes(&buf[..]).unwrap();
        // The kernel/shim owns the upper TID bits: match on the low 32.
        if smp.tid.get() & 0xFFFF_FFFF != tid & 0xFFFF_FFFF {
            continue;
        }
        assert_eq!(
            meta.slid,
            Lid::PERMISSIVE,
            "DR responses carry the permissive SLID"
        );
        assert_eq!(smp.method(), Method::GET_RESP);
        assert!(smp.direction(), "D bit set on the return path");
        assert_eq!(smp.status().0, 0);
        assert_eq!(smp.hop_cnt as usize, path.len());
        return smp;
    }
}

/// Runs inside the LD_PRELOAD child only (ignored otherwise).
#[test]
#[ignore = "runs only as the child process of dr_nodeinfo_through_umad2sim"]
fn shim_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        eprintln!("shim_child: not under {CHILD_ENV}, nothing to do");
        return;
    }
    let nodes = expected_nodes();
    assert_eq!(nodes.len(), 3);
    let ours = std::env::var(SHIM_ENV).is_ok_and(|v| v == Shim::Ibsm.name());

    // Discovery through the shim's fake sysfs.
    let cas = umad::sysfs::list_cas().unwrap();
    println!("CAs: {cas:?}");
    assert_eq!(cas.len(), 1);
    assert_eq!(
        cas[0].node_guid.0, nodes[0].2,
        "sysfs node_guid = first node"
    );
    let dev = umad::sysfs::find_device(None, None).unwrap();
    println!("device: {dev:?}");
    assert_eq!(dev.umad_path, "/dev/infiniband/umad0");

    // Clear errors for bad names.
    let e = umad::sysfs::find_device(Some("mlx5_9"), None).unwrap_err();
    assert!(matches!(e, UmadError::CaNotFound { .. }), "{e:?}");
    let e = umad::sysfs::find_device(Some(&dev.ca), Some(9)).unwrap_err();
    assert!(
        matches!(e, UmadError::PortNotFound { port: 9, .. }),
        "{e:?}"
    );

    // Explicit io_uring on the shim's fake fd is refused with a reason.
    let e = UmadPort::open(&UmadConfig {
        mode: IoMode::Uring,
        ..UmadConfig::default()
    })
    .err()
    .unwrap();
    assert!(matches!(e, UmadError::UringUnavailable { .. }), "{e:?}");

    if ours {
        // A receive thread works on the shim's descriptor too (a real fd it can poll), though
        // Auto does not choose it there.
        let mut threaded = UmadPort::open(&UmadConfig {
            mode: IoMode::Syscall,
            ..UmadConfig::default()
        })
        .unwrap();
        assert_eq!(threaded.mode(), IoMode::Syscall);
        let smp = get_at(&mut threaded, &[], SmpAttrId::NODE_INFO, 0, 0x5150);
        assert_eq!(smp.attr(), SmpAttrId::NODE_INFO);
    }
    let mut port = UmadPort::open(&UmadConfig::default()).unwrap();
    assert!(
        !port.is_kernel_device(),
        "a shim's descriptors are not the kernel's"
    );
    if ours {
        assert_eq!(
            port.mode(),
            IoMode::Inline,
            "auto mode reads on the caller's thread under our shim: its engine thread queues"
        );
        assert_eq!(
            port.framing(),
            umad::abi::HdrFraming::New,
            "REGISTER_AGENT2 works: 64-byte headers"
        );
    } else {
        assert_eq!(
            port.mode(),
            IoMode::Inline,
            "auto mode reads on the caller's thread under umad2sim"
        );
        assert_eq!(
            port.framing(),
            umad::abi::HdrFraming::Old,
            "umad2sim refuses REGISTER_AGENT2"
        );
    }
    assert_eq!(port.agents().len(), 2);
    let cap = |port: &mut UmadPort, tid| {
        let smp = get_at(port, &[], SmpAttrId::PORT_INFO, 0, tid);
        let (pi, _) = PortInfo::read_from_prefix(&smp.data).unwrap();
        pi.capability_mask.get()
    };
    assert_eq!(
        cap(&mut port, 0x2001) & ibmad::attr::port_info::cap::IS_SM,
        0
    );
    port.set_issm(true).unwrap();
    assert!(port.is_sm());
    assert_ne!(
        cap(&mut port, 0x2002) & ibmad::attr::port_info::cap::IS_SM,
        0,
        "opening issm0 sets CapabilityMask.IsSM"
    );

    // hop 0: ourselves (Hca1); hop 1 out of port 1: Switch1; hop 2 out of switch port 2: Hca2.
    let (ni, _) = node_info_at(&mut port, &[], 0x1001);
    assert_eq!(ni.node_type(), nodes[0].1);
    assert_eq!(ni.node_guid().0, nodes[0].2);
    assert_eq!(ni.local_port_num, 1);
    println!("NODEINFO-OK hops=0 guid={:#x}", ni.node_guid().0);

    let (ni, smp) = node_info_at(&mut port, &[1], 0x1002);
    assert_eq!(ni.node_type(), nodes[1].1);
    assert_eq!(ni.node_guid().0, nodes[1].2);
    assert_eq!(ni.local_port_num, 1, "arrived on Switch1 port 1");
    assert_eq!(smp.return_path[1], 1);
    println!("NODEINFO-OK hops=1 guid={:#x}", ni.node_guid().0);

    let (ni, _) = node_info_at(&mut port, &[1, 2], 0x1003);
    assert_eq!(ni.node_type(), nodes[2].1);
    assert_eq!(ni.node_guid().0, nodes[2].2);
    println!("NODEINFO-OK hops=2 guid={:#x}", ni.node_guid().0);

    // A path into nowhere comes back as a failed-send report (status 110), which recv() skips.
    let p = DrPath::new(&[1, 7]).unwrap();
    let mut req = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 0x1004, &p);
    req.return_path[50] = 0xAB;
    req.return_path[20] = 0xCD;
    port.send(&MadMeta::default(), req.as_bytes()).unwrap();
    let mut buf = [0u8; 256];
    let r = port
        .recv_timeout(&mut buf, Some(Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    assert_eq!(
        r.status, 110,
        "ibsim reports an unroutable DR SMP as ETIMEDOUT"
    );
    println!("UNREACHABLE-OK status={}", r.status);
    if ours {
        // As the kernel: the send comes back after its timeout_ms with the MAD header only.
        assert_eq!(r.len, 24, "a timed-out send carries the 24-byte MAD header");
        assert_eq!(
            u64::from_be_bytes(buf[8..16].try_into().unwrap()) & 0xFFFF_FFFF,
            0x1004
        );
        port.set_issm(false).unwrap();
        return;
    }
    // umad2sim echoes the request, intact up to byte 231. Bytes 232..255 are NOT delivered by
    // umad2sim 0.10 (its receive buffer is 288 bytes = header 56 + 232 MAD bytes; the rest is
    // whatever follows on the heap), so only report them.
    assert_eq!(buf[212], 0xCD, "echoed request body");
    println!(
        "echoed request tail: byte 242 = {:#04x} (sent 0xab; umad2sim truncates at 232)",
        buf[242]
    );

    port.set_issm(false).unwrap();
    assert!(!port.is_sm());
    assert_eq!(
        cap(&mut port, 0x2003) & ibmad::attr::port_info::cap::IS_SM,
        0,
        "closing issm0 clears IsSM"
    );
    drop(port);
}

both_shims! {
    /// A PerfMgt Get round trip through user_mad under each shim (issue 9): one OpenSM sweep
    /// gives the fabric its LIDs, then a child registers a PerfMgt agent on QP1 next to the SMP
    /// agents, asks ibsim's PMA on Switch1 and on Hca2 for ClassPortInfo and PortCounters
    /// (LID-routed, QP1, Q_Key 0x80010000) and decodes the answers with ibmad's PerfMgt types.
    fn pma_get_through_umad2sim() {
        if !peers_or_skip("umad pma_get_through_umad2sim") {
            return;
        }
        if !opensm_or_skip("umad pma_get_through_umad2sim") {
            return;
        }
        let sim = IbsimGuard::start(&net_file()).unwrap();
        let dir = TempDir::new("pma").unwrap();
        let osm_log = dir.path().join("osm.log");
        let osm = sim
            .client("opensm", dir.path())
            .arg("-o")
            .arg("-f")
            .arg(&osm_log)
            .env("OSM_CACHE_DIR", dir.path())
            .env("OSM_TMP_DIR", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (_, in_time) = umad::testutil::wait_bounded(osm, Duration::from_secs(60)).unwrap();
        assert!(in_time, "opensm -o did not finish in 60 s");
        let log = std::fs::read_to_string(&osm_log).unwrap_or_default();
        assert!(
            log.contains("SUBNET UP"),
            "OpenSM did not bring the subnet up:\n{log}"
        );

        let stdout = run_shim_child(&sim, dir.path(), "pma_child");
        assert_eq!(stdout.matches("PMA-OK").count(), 2, "{stdout}");
        sim.stop();
    }
}

/// Sends one PerfMgt Get to `dlid` and returns the decoded answer.
fn perf_get(
    port: &mut UmadPort,
    me: Lid,
    dlid: Lid,
    attr: ibmad::PmaAttrId,
    port_select: u8,
    tid: u64,
) -> ibmad::PerfRepr {
    let mut req = ibmad::PerfMad::request(Method::GET, attr, 0, tid);
    req.data[1] = port_select;
    let meta = MadMeta::gmp(ibmad::PortNum(1), me, dlid);
    port.send(&meta, req.as_bytes()).unwrap();
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no PerfMgt answer from LID {dlid}");
        let Some((meta, n)) = port.recv_wait(&mut buf, left).unwrap() else {
            continue;
        };
        let r = ibmad::PerfRepr::parse_bytes(&buf[..n]).unwrap();
        if r.header.tid & 0xFFFF_FFFF != tid & 0xFFFF_FFFF {
            continue;
        }
        assert_eq!(r.header.method, Method::GET_RESP);
        assert_eq!(r.header.status, ibmad::Status::OK, "{r}");
        assert_eq!(meta.slid, dlid, "answered from the LID asked");
        assert_eq!(meta.qp, 1, "from the PMA's QP1");
        return r;
    }
}

/// Runs inside the LD_PRELOAD child of `pma_get_through_umad2sim` only.
#[test]
#[ignore = "runs only as the child process of pma_get_through_umad2sim"]
fn pma_child() {
    use ibmad::perf::{cap, PortCountersRepr};
    use ibmad::{ClassPortInfoRepr, MgmtClass, PmaAttrId};
    use umad::{abi::MethodMask, AgentSpec};
    if std::env::var_os(CHILD_ENV).is_none() {
        eprintln!("pma_child: not under {CHILD_ENV}, nothing to do");
        return;
    }
    let mut cfg = UmadConfig::default();
    cfg.agents
        .push(AgentSpec::gsi(MgmtClass::PERF_MGMT, 1, MethodMask::NONE));
    let mut port = UmadPort::open(&cfg).unwrap();
    assert_eq!(port.agents().len(), 3);
    assert_eq!(port.agents()[2].qpn, 1);
    let caps = port.caps();
    assert!(caps.gmp, "a QP1 agent is registered");
    assert!(!caps.rmpp, "no RMPP agent");
    assert_eq!(caps.max_mad_len, 256);

    // LIDs by directed route: ours (Hca1 port 1), Switch1 (port 0), Hca2 (port 1).
    let lid_at = |port: &mut UmadPort, path: &[u8], p: u32, tid| {
        let smp = get_at(port, path, SmpAttrId::PORT_INFO, p, tid);
        let (pi, _) = PortInfo::read_from_prefix(&smp.data).unwrap();
        Lid(pi.lid.get())
    };
    let me = lid_at(&mut port, &[], 0, 0x3001);
    let sw = lid_at(&mut port, &[1], 0, 0x3002);
    let hca2 = lid_at(&mut port, &[1, 2], 1, 0x3003);
    assert!(me.is_unicast() && sw.is_unicast() && hca2.is_unicast());
    println!("LIDs: me {me} switch {sw} hca2 {hca2}");

    for (dlid, is_switch, tid) in [(sw, true, 0x4000u64), (hca2, false, 0x5000)] {
        let cpi = perf_get(&mut port, me, dlid, PmaAttrId::CLASS_PORT_INFO, 0, tid);
        let cpi: ClassPortInfoRepr = cpi.attr().unwrap();
        assert_eq!((cpi.base_version, cpi.class_version), (1, 1));
        assert_eq!(
            cpi.capability_mask & cap::ALL_PORT_SELECT != 0,
            is_switch,
            "ibsim: AllPortSelect on switches only"
        );
        // Switch1 port 1 faces us; Hca2's port 1 faces the switch. Both carried OpenSM's SMPs.
        let r = perf_get(&mut port, me, dlid, PmaAttrId::PORT_COUNTERS, 1, tid + 1);
        let pc: PortCountersRepr = r.attr().unwrap();
        assert_eq!(pc.port_select, 1);
        assert!(pc.port_xmit_pkts > 0 && pc.port_rcv_pkts > 0, "{pc:?}");
        assert_eq!(
            pc.port_xmit_data % 72,
            0,
            "ibsim counts 72 words per MAD: {pc:?}"
        );
        if is_switch {
            let all = perf_get(&mut port, me, dlid, PmaAttrId::PORT_COUNTERS, 0xFF, tid + 2);
            let all: PortCountersRepr = all.attr().unwrap();
            assert_eq!(all.port_select, 0xFF);
            assert!(all.port_xmit_pkts >= pc.port_xmit_pkts, "{all:?} vs {pc:?}");
        }
        println!(
            "PMA-OK lid {dlid} xmit {} rcv {} pkts",
            pc.port_xmit_pkts, pc.port_rcv_pkts
        );
    }
}

/// True if stock OpenSM is installed; else a loud skip (a failure under `IBSM_REQUIRE_PEERS=1`).
fn opensm_or_skip(test: &str) -> bool {
    let have = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("opensm").is_file()));
    if !have {
        assert!(
            !umad::testutil::require_peers(),
            "IBSM_REQUIRE_PEERS=1 but opensm is not installed"
        );
        umad::testutil::report_skip(test, "opensm not installed");
    }
    have
}

/// Stock OpenSM as SM and SA of an ibsim fabric, stopped by its PID on drop.
struct OpenSm(std::process::Child);

impl OpenSm {
    /// Starts OpenSM as a daemon on the first CA of `sim` (log flushed per line: `-d 2`) and
    /// waits (at most 60 s) until its log says SUBNET UP.
    fn up(sim: &IbsimGuard, dir: &Path) -> OpenSm {
        let log = dir.join("osm-daemon.log");
        let child = sim
            .client("opensm", dir)
            .args(["-e", "-s", "0", "-d", "2", "-f"])
            .arg(&log)
            .env("OSM_CACHE_DIR", dir)
            .env("OSM_TMP_DIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let osm = OpenSm(child);
        let t0 = Instant::now();
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("SUBNET UP") {
                return osm;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "OpenSM not up in 60 s:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for OpenSm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An SA table longer than one MAD through [`UmadPort`] under `libibsm_umad.so` (issue 10):
/// stock OpenSM is SM and SA of the 3-node fabric; a child registers a SubnAdm client agent
/// (class version 2, RMPP version 1) beside the SMP agents, so `caps()` reports RMPP, sends a
/// GetTable NodeRecord to the master SM's LID and reads the answer whole — one buffer longer
/// than 256 bytes holding one NodeRecord per node with the GUIDs the .net file names. Under
/// ibsim's shim the same request yields one truncated MAD (the failure the shim fixes), so this
/// test runs under ours only.
#[test]
fn sa_table_longer_than_a_mad_through_libibsm_umad() {
    let test = "umad sa_table_longer_than_a_mad_through_libibsm_umad";
    umad::testutil::set_current_shim(Shim::Ibsm);
    if !peers_or_skip(test) || !opensm_or_skip(test) {
        return;
    }
    let sim = IbsimGuard::start(&net_file()).unwrap();
    let dir = TempDir::new("satable").unwrap();
    let osm = OpenSm::up(&sim, dir.path());
    // The client attaches to the second CA (OpenSM holds the first).
    let hca2 = expected_nodes()
        .into_iter()
        .filter(|(_, t, _)| *t == NodeType::CA)
        .nth(1)
        .unwrap()
        .0;
    let client_dir = TempDir::new("satable-client").unwrap();
    let stdout = run_shim_child_on(&sim, client_dir.path(), "sa_table_child", Some(&hca2));
    assert!(stdout.contains("SA-TABLE-OK records=3"), "{stdout}");
    drop(osm);
    sim.stop();
}

/// Runs inside the LD_PRELOAD child of `sa_table_longer_than_a_mad_through_libibsm_umad` only.
#[test]
#[ignore = "runs only as the child process of sa_table_longer_than_a_mad_through_libibsm_umad"]
fn sa_table_child() {
    use ibmad::{gmp, rmpp, sa, MgmtClass, PortNum, SaAttrId, Status};
    use umad::{abi::MethodMask, AgentSpec};
    if std::env::var_os(CHILD_ENV).is_none() {
        eprintln!("sa_table_child: not under {CHILD_ENV}, nothing to do");
        return;
    }
    let mut cfg = UmadConfig::default();
    cfg.agents
        .push(AgentSpec::gsi(MgmtClass::SUBN_ADM, 2, MethodMask::NONE));
    let mut port = UmadPort::open(&cfg).unwrap();
    assert_eq!(port.agents()[2].rmpp_version, 1, "SubnAdm uses RMPP");
    let caps = port.caps();
    assert!(caps.gmp && caps.rmpp, "libibsm_umad does RMPP: {caps:?}");
    // What it sends (an SA's long tables) is bounded apart from what it receives.
    assert_eq!(caps.max_mad_len, umad::DEFAULT_MAX_SEND_LEN);
    assert_eq!(port.max_recv_len(), umad::DEFAULT_MAX_MAD_LEN);

    let smp = get_at(&mut port, &[], SmpAttrId::PORT_INFO, 0, 0x6001);
    let (pi, _) = PortInfo::read_from_prefix(&smp.data).unwrap();
    let (me, sm) = (Lid(pi.lid.get()), pi.master_sm_lid());
    assert!(me.is_unicast() && sm.is_unicast() && me != sm, "{me} {sm}");

    let tid = 0x7001;
    let req = sa::Repr {
        header: gmp::Repr::request(
            MgmtClass::SUBN_ADM,
            Method::GET_TABLE,
            SaAttrId::NODE_RECORD.0,
            0,
            tid,
        ),
        rmpp: rmpp::Repr::Inactive,
        sm_key: 0,
        attr_offset: 0,
        comp_mask: 0,
    }
    .to_mad();
    port.send(&MadMeta::gmp(PortNum(1), me, sm), &req).unwrap();
    let mut buf = vec![0u8; port.max_recv_len()];
    let deadline = Instant::now() + Duration::from_secs(10);
    let n = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no GetTableResp from the SA at LID {sm}");
        let Some((meta, n)) = port.recv_wait(&mut buf, left).unwrap() else {
            continue;
        };
        if buf[1] == MgmtClass::SUBN_ADM.0
            && u64::from_be_bytes(buf[8..16].try_into().unwrap()) & 0xFFFF_FFFF == tid
        {
            assert_eq!(meta.slid, sm, "answered by the SA");
            break n;
        }
    };
    assert!(
        n > 256,
        "the table arrives whole, not as one segment: {n} bytes"
    );
    let r = sa::Repr::parse_bytes(&buf[..n]).unwrap();
    assert_eq!(r.header.method, Method::GET_TABLE_RESP);
    assert_eq!(r.header.status, Status::OK);
    let rec = r.record_len();
    assert!(
        rec >= 108,
        "NodeRecord is 108 bytes: AttributeOffset {}",
        r.attr_offset
    );
    let records = &buf[sa::SA_DATA_OFFSET..n];
    let count = records.len() / rec;
    let mut got: Vec<u64> = records
        .chunks_exact(rec)
        .map(|r| {
            NodeInfo::read_from_prefix(&r[4..])
                .unwrap()
                .0
                .node_guid
                .get()
        })
        .collect();
    got.sort_unstable();
    let mut want: Vec<u64> = expected_nodes().into_iter().map(|(_, _, g)| g).collect();
    want.sort_unstable();
    assert_eq!(got, want, "one NodeRecord per node");
    println!("SA-TABLE-OK records={count} bytes={n}");
}

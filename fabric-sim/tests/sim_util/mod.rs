//! Helpers shared by the simulator's scenario tests: load a fixture, send one SMP as an SM and
//! collect the answer.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::Topology;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, Lid, MadMeta, MadPort, Method, PortNum, Smp, SmpAttrId, Time};

/// A file under fabric-sim/testdata.
pub fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// The F-DISC topology (subnet-init.md §2.3).
pub fn fdisc_topology() -> Topology {
    Topology::from_file(testdata("sim_fdisc.net")).unwrap()
}

/// F-DISC as a fabric with the SM attached at the SM host's port 1.
pub fn fdisc(cfg: SimConfig) -> (Fabric, SmHandle) {
    let mut f = Fabric::new(&fdisc_topology(), cfg).unwrap();
    let sm = f.attach_sm_by_name("SM", PortNum(1)).unwrap();
    (f, sm.handle)
}

/// Metadata for a directed-route send.
pub fn dr_meta() -> MadMeta {
    MadMeta {
        port: PortNum(1),
        slid: Lid::PERMISSIVE,
        dlid: Lid::PERMISSIVE,
        qp: 0,
        sl: 0,
        ..Default::default()
    }
}

/// Metadata for a LID-routed send to `dlid` (source LID: the SM port's own).
pub fn lid_meta(dlid: Lid) -> MadMeta {
    MadMeta {
        port: PortNum(1),
        slid: Lid(0),
        dlid,
        qp: 0,
        sl: 0,
        ..Default::default()
    }
}

/// Runs the fabric for at most `d` of virtual time or until nothing is pending.
pub fn settle(f: &mut Fabric, d: Duration) {
    let limit = f.now() + d;
    f.run_until_idle(limit);
}

/// Everything queued for the SM.
pub fn drain(f: &mut Fabric, sm: SmHandle) -> Vec<(MadMeta, Smp)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    let mut port = f.sm_port(sm);
    while let Some((meta, len)) = port.recv(&mut buf).unwrap() {
        assert_eq!(len, 256);
        out.push((meta, Smp::read_from_bytes(&buf).unwrap()));
    }
    out
}

/// Sends `smp` from the SM, lets the fabric settle (10 ms) and returns the responses whose TID
/// matches.
pub fn exchange(f: &mut Fabric, sm: SmHandle, meta: &MadMeta, smp: &Smp) -> Vec<(MadMeta, Smp)> {
    f.sm_port(sm).send(meta, smp.as_bytes()).unwrap();
    settle(f, Duration::from_millis(10));
    drain(f, sm)
        .into_iter()
        .filter(|(_, r)| r.tid.get() == smp.tid.get())
        .collect()
}

/// A DR Get along `path` (libibmad notation); the single response, if one came back.
pub fn dr_get(
    f: &mut Fabric,
    sm: SmHandle,
    path: &str,
    attr: SmpAttrId,
    attr_mod: u32,
    tid: u64,
) -> Option<Smp> {
    let p = DrPath::parse(path).unwrap();
    let req = Smp::dr_request(Method::GET, attr, attr_mod, tid, &p);
    let mut r = exchange(f, sm, &dr_meta(), &req);
    assert!(r.len() <= 1, "more than one response to tid {tid}: {r:?}");
    r.pop().map(|(_, s)| s)
}

/// A DR Set along `path` with `data` as the attribute; the single response, if one came back.
pub fn dr_set(
    f: &mut Fabric,
    sm: SmHandle,
    path: &str,
    attr: SmpAttrId,
    attr_mod: u32,
    tid: u64,
    data: &[u8],
) -> Option<Smp> {
    let p = DrPath::parse(path).unwrap();
    let mut req = Smp::dr_request(Method::SET, attr, attr_mod, tid, &p);
    req.data[..data.len()].copy_from_slice(data);
    let mut r = exchange(f, sm, &dr_meta(), &req);
    assert!(r.len() <= 1, "more than one response to tid {tid}: {r:?}");
    r.pop().map(|(_, s)| s)
}

/// A LID-routed Get to `dlid`; the single response, if one came back.
pub fn lid_get(
    f: &mut Fabric,
    sm: SmHandle,
    dlid: Lid,
    attr: SmpAttrId,
    attr_mod: u32,
    tid: u64,
) -> Option<(MadMeta, Smp)> {
    let req = Smp::lid_request(Method::GET, attr, attr_mod, tid);
    let mut r = exchange(f, sm, &lid_meta(dlid), &req);
    assert!(r.len() <= 1, "more than one response to tid {tid}: {r:?}");
    r.pop()
}

/// Reads attribute `T` out of a response's data field.
pub fn attr<T: FromBytes + ibmad::zerocopy::KnownLayout + ibmad::zerocopy::Immutable + Copy>(
    smp: &Smp,
) -> T {
    *T::ref_from_prefix(&smp.data).unwrap().0
}

/// `Time` `ms` milliseconds after `t`.
pub fn after(t: Time, ms: u64) -> Time {
    t + Duration::from_millis(ms)
}

/// Gets PortInfo of `port` over `path`, lets `edit` change it (PortState/PhysState start as
/// "no change"), Sets it and checks the SetResp; returns the PortInfo the SMA answered with.
pub fn edit_port_info(
    f: &mut Fabric,
    sm: SmHandle,
    path: &str,
    port: u32,
    edit: impl FnOnce(&mut ibmad::attr::PortInfo),
) -> ibmad::attr::PortInfo {
    use ibmad::attr::PortInfo;
    let got = dr_get(f, sm, path, SmpAttrId::PORT_INFO, port, 0x5000).unwrap();
    let mut pi: PortInfo = attr(&got);
    pi.set_port_state_raw(0);
    pi.set_phys_state_raw(0);
    edit(&mut pi);
    let r = dr_set(
        f,
        sm,
        path,
        SmpAttrId::PORT_INFO,
        port,
        0x5001,
        pi.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status(), ibmad::Status::OK, "PortInfo Set at {path}");
    attr(&r)
}

/// Sets the LID of `port` over `path`.
pub fn set_lid(f: &mut Fabric, sm: SmHandle, path: &str, port: u32, lid: u16) {
    let back = edit_port_info(f, sm, path, port, |pi| pi.lid.set(lid));
    assert_eq!(back.lid.get(), lid);
}

/// Writes LFT block 0 of the switch at `path` (`entries[i] = (lid, port)`, the rest 0xFF) and
/// sets LinearFDBTop to `top`.
pub fn set_lft(f: &mut Fabric, sm: SmHandle, path: &str, entries: &[(u16, u8)], top: u16) {
    use ibmad::attr::SwitchInfo;
    let mut block = [0xFFu8; 64];
    for (lid, port) in entries {
        block[usize::from(*lid)] = *port;
    }
    let r = dr_set(f, sm, path, SmpAttrId::LINEAR_FT, 0, 0x6000, &block).unwrap();
    assert_eq!(r.status(), ibmad::Status::OK, "LFT Set at {path}");
    let got = dr_get(f, sm, path, SmpAttrId::SWITCH_INFO, 0, 0x6001).unwrap();
    let mut si: SwitchInfo = attr(&got);
    si.linear_fdb_top.set(top);
    let r = dr_set(
        f,
        sm,
        path,
        SmpAttrId::SWITCH_INFO,
        0,
        0x6002,
        si.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status(), ibmad::Status::OK, "SwitchInfo Set at {path}");
}

/// F-DISC's main chain programmed by hand: LIDs SM=1, C=2, A=3, D=4, H10=5 and LFTs on C, A,
/// D that route them (plus C: LID 6 → port 2, back towards the SM host, which does not own it).
pub fn program_fdisc_lids(f: &mut Fabric, sm: SmHandle) {
    set_lid(f, sm, "0", 1, 1);
    set_lid(f, sm, "0,1", 0, 2);
    set_lid(f, sm, "0,1,4", 0, 3);
    set_lid(f, sm, "0,1,4,2", 0, 4);
    set_lid(f, sm, "0,1,4,2,3", 1, 5);
    set_lft(
        f,
        sm,
        "0,1",
        &[(1, 2), (2, 0), (3, 4), (4, 4), (5, 4), (6, 2)],
        6,
    );
    set_lft(f, sm, "0,1,4", &[(1, 1), (2, 1), (3, 0), (4, 2), (5, 2)], 5);
    set_lft(
        f,
        sm,
        "0,1,4,2",
        &[(1, 1), (2, 1), (3, 1), (4, 0), (5, 3)],
        5,
    );
}

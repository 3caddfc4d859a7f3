//! The user_mad ABI as a process sees it through `libibsm_umad.so`, against stock OpenSM's SA on
//! stock ibsim (`net.2sw2path4hca`: 2 switches, 4 HCAs; OpenSM on Hca1, the clients on Hca2).
//!
//! `user_mad_calls_behave_like_the_kernel` runs a child (this binary, under the shim) that uses
//! the bare calls (`umad::raw::RawUmad`): `REGISTER_AGENT2` with an unknown flag is `EINVAL` and
//! writes the supported flags back, then switches to 64-byte headers; `ENABLE_PKEY` after a
//! registration is `EINVAL`; an empty non-blocking read is `EAGAIN`; a write with an unknown
//! agent is `EINVAL`; epoll and select see the response arrive; a six-record NodeRecord
//! GetTable (four RMPP segments) read with a one-MAD buffer is `ENOSPC` with the needed length
//! in the header, then reads whole; a request to a LID nobody has comes back `ETIMEDOUT` after
//! `timeout_ms × (retries + 1)` with the 24-byte MAD header; a blocking descriptor with the
//! 56-byte header (`REGISTER_AGENT`) blocks in `read` until the answer is there.
//!
//! `sysfs_is_live` starts a child before any SM, which reads its port's `lid`, `sm_lid` and
//! `state` (0x0, 0x0, INIT), waits until OpenSM is up, and reads them again in the same process
//! (the LID OpenSM gave it, OpenSM's LID, ACTIVE).
//!
//! Skipped loudly without ibsim / opensm, unless `IBSM_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{child_cmd, expect_ok, opensm, peers, run_bounded, Proc, ROLE};
use umad::abi::{HdrFraming, RegReq, RegReq2, UmadHdr};
use umad::raw::RawUmad;
use umad::testutil::{IbsimGuard, TempDir};

#[test]
fn user_mad_calls_behave_like_the_kernel() {
    if !peers("shim abi", &["opensm"]) {
        return;
    }
    let sim = IbsimGuard::start(&common::net_2sw4hca()).unwrap();
    let dir = TempDir::new("abi").unwrap();
    let (_sm, _) = opensm(&sim, "Hca1", dir.path(), &[]);
    let (out, in_time, _) = run_bounded(
        child_cmd(&sim, "abi", "Hca2", dir.path(), &[]),
        Duration::from_secs(60),
    );
    let stdout = expect_ok("abi child", &out, in_time);
    assert!(stdout.contains("ABI-OK"), "{stdout}");
}

#[test]
fn sysfs_is_live() {
    if !peers("shim live sysfs", &["opensm"]) {
        return;
    }
    let sim = IbsimGuard::start(&common::net_2sw4hca()).unwrap();
    let dir = TempDir::new("live").unwrap();
    let mut c = child_cmd(&sim, "live", "Hca2", dir.path(), &[]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut p = Proc(c.spawn().unwrap());
    let mut stdin = p.0.stdin.take().unwrap();
    let mut lines = BufReader::new(p.0.stdout.take().unwrap()).lines();
    let mut next = |tag: &str| loop {
        let l = lines.next().expect("child ended").unwrap();
        // The harness prints "test child ... " before the child's own output.
        if let Some(at) = l.find(tag) {
            return l[at + tag.len()..].trim().to_string();
        }
    };
    assert_eq!(next("BEFORE"), "lid=0x0 sm_lid=0x0 state=2: INIT");
    let (_sm, _) = opensm(&sim, "Hca1", dir.path(), &[]);
    writeln!(stdin, "go").unwrap();
    let after = next("AFTER");
    let v: Vec<&str> = after.split_whitespace().collect();
    assert!(v[0].starts_with("lid=0x") && v[0] != "lid=0x0", "{after}");
    assert!(
        v[1].starts_with("sm_lid=0x") && v[1] != "sm_lid=0x0",
        "{after}"
    );
    assert_eq!(&after[after.find("state=").unwrap()..], "state=4: ACTIVE");
    assert_ne!(v[0][4..], v[1][7..], "our LID is not the SM's: {after}");
    drop(stdin);
    assert!(p.0.wait().unwrap().success());
}

// ---- the children ----

fn sysfs(path: &str) -> String {
    std::fs::read_to_string(format!("/sys/class/infiniband/ibsim0/ports/1/{path}"))
        .unwrap()
        .trim()
        .to_string()
}

fn hdr_bytes(framing: HdrFraming, h: &UmadHdr, mad: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; framing.hdr_len()];
    h.encode(framing, &mut b).unwrap();
    b.extend_from_slice(mad);
    b
}

/// An SA MAD (class 3, version 2).
fn sa_mad(method: u8, attr: u16, tid: u32) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[0] = 1;
    m[1] = 0x03;
    m[2] = 2;
    m[3] = method;
    m[12..16].copy_from_slice(&tid.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m
}

fn errno(e: &umad::SysError) -> i32 {
    e.errno().unwrap_or(0)
}

fn abi_child() {
    assert_eq!(
        std::fs::read_to_string("/sys/class/infiniband_mad/abi_version").unwrap(),
        "5\n"
    );
    assert_eq!(sysfs("state"), "4: ACTIVE");
    let sm_lid = u16::from_str_radix(sysfs("sm_lid").trim_start_matches("0x"), 16).unwrap();
    assert_ne!(sm_lid, 0);

    let u = RawUmad::open("/dev/infiniband/umad0", true).unwrap();
    let mut bad = RegReq2 {
        qpn: 1,
        mgmt_class: 0x03,
        mgmt_class_version: 2,
        rmpp_version: 1,
        flags: 0x2,
        ..RegReq2::default()
    };
    let e = u.register2(&mut bad).unwrap_err();
    assert_eq!(errno(&e), libc::EINVAL);
    assert_eq!(bad.flags, 1, "the supported flags (USER_RMPP) come back");
    let mut req = RegReq2 { flags: 0, ..bad };
    let agent = u.register2(&mut req).unwrap();
    let e = u.enable_pkey().unwrap_err();
    assert_eq!(errno(&e), libc::EINVAL, "ENABLE_PKEY after a registration");
    let fr = HdrFraming::New;
    let mut buf = vec![0u8; 1 << 16];
    assert_eq!(
        u.read(&mut buf).unwrap(),
        None,
        "empty non-blocking read: EAGAIN"
    );

    let h = |id, lid, timeout_ms, retries| UmadHdr {
        id,
        qpn: 1,
        qkey: 0x8001_0000,
        lid,
        timeout_ms,
        retries,
        ..UmadHdr::default()
    };
    let e = u
        .write(&hdr_bytes(
            fr,
            &h(agent + 5, sm_lid, 0, 0),
            &sa_mad(0x12, 0x11, 1),
        ))
        .unwrap_err();
    assert_eq!(errno(&e), libc::EINVAL, "unknown agent");

    // NodeRecord GetTable: 6 records of 112 bytes (108 padded to 8-byte words) = 728 bytes, four RMPP segments.
    let msg = hdr_bytes(fr, &h(agent, sm_lid, 2000, 0), &sa_mad(0x12, 0x11, 7));
    assert_eq!(u.write(&msg).unwrap(), Some(msg.len()));
    let ep = nix::sys::epoll::Epoll::new(nix::sys::epoll::EpollCreateFlags::empty()).unwrap();
    ep.add(
        u.as_fd(),
        nix::sys::epoll::EpollEvent::new(nix::sys::epoll::EpollFlags::EPOLLIN, 7),
    )
    .unwrap();
    let mut evs = [nix::sys::epoll::EpollEvent::empty()];
    let n = ep.wait(&mut evs, 3000u16).unwrap();
    assert_eq!((n, evs[0].data()), (1, 7), "epoll sees the response");
    let mut set = nix::sys::select::FdSet::new();
    set.insert(u.as_fd());
    let mut tv = nix::sys::time::TimeVal::new(0, 0);
    let n = nix::sys::select::select(None, &mut set, None, None, &mut tv).unwrap();
    assert_eq!(n, 1, "select sees it too");
    let mut small = vec![0u8; 64 + 256];
    let e = u.read(&mut small).unwrap_err();
    assert_eq!(errno(&e), libc::ENOSPC);
    let got = UmadHdr::decode(fr, &small).unwrap();
    assert_eq!(got.length as usize, 64 + 56 + 6 * 112, "the length needed");
    assert_eq!(got.status, 0);
    let n = u.read(&mut buf).unwrap().unwrap();
    assert_eq!(n, 64 + 56 + 6 * 112);
    let mad = &buf[64..n];
    assert_eq!(mad[3], 0x92, "GetTableResp");
    assert_eq!(u32::from_be_bytes(mad[12..16].try_into().unwrap()), 7);
    assert!(
        !u.poll_readable(Some(Duration::ZERO)).unwrap(),
        "nothing left"
    );
    println!("RMPP-OK {} bytes", n - 64);

    // Nobody has LID 999: 200 ms x (2 + 1).
    let t0 = Instant::now();
    let msg = hdr_bytes(fr, &h(agent, 999, 200, 2), &sa_mad(0x01, 0x11, 8));
    u.write(&msg).unwrap();
    assert!(u.poll_readable(Some(Duration::from_secs(5))).unwrap());
    let took = t0.elapsed();
    let n = u.read(&mut buf).unwrap().unwrap();
    let got = UmadHdr::decode(fr, &buf).unwrap();
    assert_eq!(got.status, libc::ETIMEDOUT as u32);
    assert_eq!((got.timeout_ms, got.retries, got.lid), (200, 2, 999));
    assert_eq!(n, 64 + 24, "header + the MAD header");
    assert_eq!(
        u32::from_be_bytes(buf[64 + 12..64 + 16].try_into().unwrap()),
        8
    );
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_millis(1200),
        "ETIMEDOUT after {took:?}, expected 600 ms"
    );
    println!("TIMEOUT-OK {took:?}");

    // A blocking descriptor with the 56-byte header.
    let b = RawUmad::open("/dev/infiniband/umad0", false).unwrap();
    let mut r1 = RegReq {
        qpn: 1,
        mgmt_class: 0x03,
        mgmt_class_version: 2,
        rmpp_version: 1,
        ..RegReq::default()
    };
    let a1 = b.register(&mut r1).unwrap();
    let msg = hdr_bytes(
        HdrFraming::Old,
        &h(a1, sm_lid, 2000, 0),
        &sa_mad(0x12, 0x11, 9),
    );
    b.write(&msg).unwrap();
    let n = b.read(&mut buf).unwrap().unwrap();
    assert_eq!(
        n,
        56 + 56 + 6 * 112,
        "blocking read returns the whole answer"
    );
    b.unregister(a1).unwrap();
    let e = b.write(&msg).unwrap_err();
    assert_eq!(errno(&e), libc::EINVAL, "write after unregister");
    u.unregister(agent).unwrap();
    println!("ABI-OK");
}

fn live_child() {
    let show = || {
        format!(
            "lid={} sm_lid={} state={}",
            sysfs("lid"),
            sysfs("sm_lid"),
            sysfs("state")
        )
    };
    println!("BEFORE {}", show());
    let mut s = String::new();
    std::io::stdin().read_line(&mut s).unwrap();
    println!("AFTER {}", show());
    let _ = std::io::stdin().read_line(&mut s);
}

/// Child roles (run only as children of the tests above).
#[test]
#[ignore = "child process of the tests in this file"]
fn child() {
    match std::env::var(ROLE).as_deref() {
        Ok("abi") => abi_child(),
        Ok("live") => live_child(),
        other => eprintln!("no role ({other:?}): nothing to do"),
    }
}

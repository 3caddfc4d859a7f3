//! Hardware tests for a real RA-1 device bound to vfio-pci (docs/hwtest.md).
//!
//! Run only when `IBSM_HWTEST_BDF` names the device (`0000:BB:DD.F`); otherwise every test
//! prints why it is skipped and passes. The `ra1_device` test target of the `hwtest` crate:
//! `IBSM_HWTEST_BDF=0000:01:00.0 cargo test -p hwtest --test ra1_device -- --test-threads 1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hca_driver::regs;
use hca_driver::{DriverConfig, Hca, HostSma, IrqMode, KernelBackend};
use ibmad::Time;
use vfio::IommuMode;

fn bdf() -> Option<String> {
    match std::env::var("IBSM_HWTEST_BDF") {
        Ok(b) if !b.is_empty() => Some(b),
        _ => {
            eprintln!("skipped: IBSM_HWTEST_BDF is not set (see docs/hwtest.md)");
            None
        }
    }
}

fn open(mode: IrqMode) -> Option<Hca> {
    let bdf = bdf()?;
    let be = KernelBackend::open(&bdf, IommuMode::Auto)
        .unwrap_or_else(|e| panic!("{bdf}: cannot open through VFIO: {e}"));
    let cfg = DriverConfig {
        mode,
        ..DriverConfig::default()
    };
    Some(Hca::open(&be, cfg).unwrap_or_else(|e| panic!("{bdf}: bring-up failed: {e}")))
}

#[test]
fn identity_version_and_bounded_bring_up() {
    let t = Instant::now();
    let Some(hca) = open(IrqMode::BusyPoll) else {
        return;
    };
    let f = hca.facts();
    assert_eq!(f.version.0, 1);
    assert!((1..=254).contains(&f.num_ports));
    assert!(f.is_switch, "these tests expect the switch variant");
    // Bring-up may take at most RESET_MS + INIT_MS (+ slack) plus DMA setup.
    assert!(t.elapsed() < f.reset_timeout + f.init_timeout + Duration::from_secs(2));
    let st = hca.regs().read(regs::STATUS).unwrap();
    assert_ne!(st & regs::STATUS_READY, 0);
    assert_eq!(st & regs::STATUS_FATAL, 0);
}

#[test]
fn scratch_and_lft_window_round_trip() {
    let Some(hca) = open(IrqMode::BusyPoll) else {
        return;
    };
    let r = hca.regs();
    for v in [0xA5A5_5A5A, 0x0123_4567, 0] {
        r.write(regs::SCRATCH, v).unwrap();
        assert_eq!(r.read(regs::SCRATCH).unwrap(), v);
    }
    // After reset every LFT entry is 0xFF; write block 1 and read it back byte-exact.
    r.write(regs::LFT_BLOCK, 1).unwrap();
    assert_eq!(r.read(regs::LFT_WIN).unwrap(), 0xFFFF_FFFF);
    let n = hca.facts().num_ports;
    for k in 0..16u64 {
        let b = |j: u64| ((k * 4 + j) % u64::from(n) + 1) as u32;
        let v = b(0) | b(1) << 8 | b(2) << 16 | b(3) << 24;
        r.write(regs::LFT_WIN + 4 * k, v).unwrap();
        assert_eq!(r.read(regs::LFT_WIN + 4 * k).unwrap(), v);
    }
    for k in 0..16u64 {
        r.write(regs::LFT_WIN + 4 * k, 0xFFFF_FFFF).unwrap();
    }
}

#[test]
fn port_registers_are_sane() {
    let Some(hca) = open(IrqMode::BusyPoll) else {
        return;
    };
    for p in 1..=hca.facts().num_ports {
        let (logical, phys) = hca.port_state(p).unwrap();
        assert!((1..=4).contains(&logical), "port {p}: LOGICAL {logical}");
        assert!((1..=6).contains(&phys), "port {p}: PHYS {phys}");
        if phys == regs::phys::LINK_UP {
            let w = hca.regs().port_read(p, regs::P_LINK_WIDTH).unwrap();
            assert_eq!(
                ((w >> 16) & 0xFF).count_ones(),
                1,
                "port {p}: one active width"
            );
        }
    }
}

#[test]
fn interrupt_mode_and_host_sma_run() {
    let Some(hca) = open(IrqMode::Interrupt) else {
        return;
    };
    let secs: u64 = std::env::var("IBSM_HWTEST_SMA_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let start = Instant::now();
    let mut host = HostSma::new(hca, "ibsm hwtest", Time::ZERO).unwrap();
    while start.elapsed() < Duration::from_secs(secs) {
        host.wait(Duration::from_millis(10)).unwrap();
        let now = Time(start.elapsed().as_nanos() as u64);
        host.poll(now).unwrap();
    }
    eprintln!(
        "host SMA: {:?}, driver: {:?}",
        host.stats(),
        host.hca().stats()
    );
    let st = host.hca().regs().read(regs::STATUS).unwrap();
    assert_eq!(st & regs::STATUS_FATAL, 0, "device went fatal");
}

//! Driver against the in-process RA-1 model: bring-up faults (bounded waits), TX back-pressure
//! without loss or duplication, RX overflow accounting, malformed SMPs, interrupt mode,
//! ownership tokens, MadPort.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hca_driver::regs::{self, INT_PORT, INT_RX, STATUS_INIT_ERR, STATUS_READY};
use hca_driver::{
    DriverConfig, DriverError, Hca, InProcessBackend, InitError, IrqMode, ModelConfig, ModelFault,
    TxMeta,
};
use ibmad::zerocopy::IntoBytes;
use ibmad::{DrPath, Lid, MadMeta, MadPort, Method, PortError, PortNum, Smp, SmpAttrId};

fn smp(tid: u64) -> [u8; 256] {
    let s = Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        tid,
        &DrPath::parse("0,1").unwrap(),
    );
    let mut b = [0u8; 256];
    b.copy_from_slice(s.as_bytes());
    b
}

fn tid_of(mad: &[u8]) -> u64 {
    u64::from_be_bytes(mad[8..16].try_into().unwrap())
}

fn backend(fault: ModelFault) -> InProcessBackend {
    let mut cfg = ModelConfig::switch(0x0002_c903_0000_1000, 8);
    cfg.fault = fault;
    let b = InProcessBackend::new(cfg);
    for p in 1..=8 {
        b.model().with_model(|m, env| m.link_up(p, 2, 4, 0, env));
    }
    b
}

fn small() -> DriverConfig {
    DriverConfig {
        rx_log2: 4,
        tx_log2: 4,
        spare_buffers: 16,
        ..DriverConfig::default()
    }
}

fn inject(b: &InProcessBackend, port: u8, mad: &[u8]) -> hca_driver::model::RxOutcome {
    b.model()
        .with_model(|m, env| m.receive(port, 0xFFFF, 0xFFFF, 0, mad, env))
        .unwrap()
}

#[test]
fn bring_up_reads_identity_and_runs() {
    let b = backend(ModelFault::None);
    let hca = Hca::open(&b, small()).unwrap();
    let f = hca.facts();
    assert_eq!(f.node_guid, 0x0002_c903_0000_1000);
    assert_eq!(f.num_ports, 8);
    assert!(f.is_switch);
    assert_eq!(f.version, (1, 1));
    assert!(f.qp1, "the v1.1 model has QP1");
    assert_eq!(f.lft_blocks, 768);
    assert_eq!(f.init_timeout, Duration::from_millis(100));
    let st = hca.regs().read(regs::STATUS).unwrap();
    assert_eq!(
        st & (STATUS_READY | regs::STATUS_QP0_RUN),
        STATUS_READY | regs::STATUS_QP0_RUN
    );
    // RX ring was filled: 16 descriptors published.
    assert_eq!(hca.regs().read(regs::RXQ_PROD).unwrap(), 16);
    // Three ring allocations and the pool are mapped for the device.
    assert_eq!(hca.dma().mappings().len(), 4);
}

#[test]
fn init_that_never_completes_is_a_timeout_not_a_hang() {
    let b = backend(ModelFault::InitStuck);
    let t = Instant::now();
    let err = Hca::open(&b, small()).unwrap_err();
    let el = t.elapsed();
    match err {
        InitError::Timeout { reg, mask, waited } => {
            assert_eq!(reg, "STATUS");
            assert_eq!(mask, STATUS_READY | STATUS_INIT_ERR);
            assert!(waited >= Duration::from_millis(100), "{waited:?}");
        }
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(el < Duration::from_secs(2), "bounded: {el:?}");
}

#[test]
fn reset_that_never_completes_is_a_timeout() {
    let b = backend(ModelFault::ResetStuck);
    match Hca::open(&b, small()).unwrap_err() {
        InitError::Timeout { reg, mask, waited } => {
            assert_eq!(reg, "CTRL");
            assert_eq!(mask, regs::CTRL_RESET);
            assert!(waited >= Duration::from_millis(10));
        }
        other => panic!("expected a timeout, got {other}"),
    }
}

#[test]
fn bad_ring_sizes_are_refused_before_touching_the_device() {
    let b = backend(ModelFault::None);
    let cfg = DriverConfig {
        rx_log2: 13,
        ..small()
    };
    assert!(matches!(Hca::open(&b, cfg), Err(InitError::Config(_))));
}

#[test]
fn device_rejects_a_bad_ring_config() {
    // Drive the model's handshake directly with a CQ too small for RX + TX.
    let b = backend(ModelFault::None);
    let dev = b.model().clone();
    let r = dev.with_model(|m, env| {
        m.write(regs::CTRL, regs::CTRL_RESET, env);
        for (base, size, log2) in [
            (regs::RXQ_BASE_LO, regs::RXQ_SIZE, 4),
            (regs::TXQ_BASE_LO, regs::TXQ_SIZE, 4),
            (regs::CQ_BASE_LO, regs::CQ_SIZE, 4),
        ] {
            m.write(base, 0x1000, env);
            m.write(size, log2, env);
        }
        m.write(regs::CTRL, regs::CTRL_INIT | regs::CTRL_QP0_EN, env);
        (m.read(regs::STATUS), m.read(regs::ERR_CAUSE))
    });
    let (st, cause) = r.unwrap();
    assert_eq!(st & STATUS_INIT_ERR, STATUS_INIT_ERR);
    assert_eq!(st & STATUS_READY, 0);
    assert_eq!(cause & regs::ERR_RING_CFG, regs::ERR_RING_CFG);
}

#[test]
fn tx_overflow_is_back_pressure_without_loss_or_duplication() {
    let b = backend(ModelFault::None);
    let mut hca = Hca::open(&b, small()).unwrap();
    // Fill the CQ with RX completions the host does not consume yet: 16 RX + 16 TX = 32 slots.
    for i in 0..16 {
        assert_eq!(
            inject(&b, 1, &smp(10_000 + i)),
            hca_driver::model::RxOutcome::Delivered
        );
    }
    let total = 500u64;
    let mut next = 0u64;
    let mut refused = 0u64;
    let mut wire = Vec::new();
    let meta = TxMeta {
        port: 3,
        dlid: 0xFFFF,
        slid: 0xFFFF,
        sl: 0,
        qp: 0,
        dqp: 0,
    };
    while next < total {
        let mut buf = hca.alloc().expect("pool");
        buf.copy_from_slice(&smp(next));
        match hca.post_send(buf, meta) {
            Ok(()) => next += 1,
            Err((DriverError::TxFull, back)) => {
                // The buffer came back to us intact: nothing was lost.
                assert_eq!(tid_of(&back), next);
                refused += 1;
                drop(back);
                hca.poll().unwrap();
                while hca.recv_token().is_some() {}
            }
            Err((e, _)) => panic!("{e}"),
        }
        while let Some(w) = b.model().with_model(|m, _| m.poll_wire()).unwrap() {
            assert_eq!(w.port, 3);
            wire.push(tid_of(&w.mad[..]));
        }
    }
    hca.poll().unwrap();
    while let Some(w) = b.model().with_model(|m, _| m.poll_wire()).unwrap() {
        wire.push(tid_of(&w.mad[..]));
    }
    assert!(
        refused > 0,
        "the ring never filled: no back-pressure exercised"
    );
    assert_eq!(
        wire,
        (0..total).collect::<Vec<_>>(),
        "every MAD once, in order"
    );
    assert_eq!(hca.stats().tx, total);
    assert_eq!(
        b.model().lock().unwrap().counter(regs::TX_SMPS),
        total as u32
    );
    // All buffers are back (rings hold 16 RX buffers).
    hca.poll().unwrap();
    assert_eq!(hca.tx_outstanding(), 0);
    assert_eq!(hca.pool().available(), 48 - 16);
}

#[test]
fn rx_overflow_is_counted_and_nothing_is_duplicated() {
    let b = backend(ModelFault::None);
    let mut hca = Hca::open(&b, small()).unwrap();
    let mut delivered = 0;
    for i in 0..100 {
        if inject(&b, 2, &smp(i)) == hca_driver::model::RxOutcome::Delivered {
            delivered += 1;
        }
    }
    assert_eq!(delivered, 16, "the RX ring holds 16 descriptors");
    let m = b.model().lock().unwrap();
    assert_eq!(m.counter(regs::RX_DROP_NO_DESC), 84);
    assert_eq!(m.counter(regs::RX_SMPS), 16);
    drop(m);
    assert_eq!(hca.regs().port_read(2, regs::P_VL15_DROPPED).unwrap(), 84);
    hca.poll().unwrap();
    let mut got = Vec::new();
    while let Some((meta, buf)) = hca.recv_token() {
        assert_eq!(meta.port, 2, "ingress port from the CQE");
        got.push(tid_of(&buf));
    }
    assert_eq!(got, (0..16).collect::<Vec<_>>());
    // The ring was refilled: the next SMP is delivered again.
    assert_eq!(
        inject(&b, 2, &smp(999)),
        hca_driver::model::RxOutcome::Delivered
    );
}

#[test]
fn malformed_smps_from_the_wire_are_dropped_and_counted() {
    let b = backend(ModelFault::None);
    let mut hca = Hca::open(&b, small()).unwrap();
    let mut bad_version = smp(1);
    bad_version[0] = 2;
    let mut bad_class = smp(2);
    bad_class[1] = 0x04;
    let short = &smp(3)[..200];
    for m in [&bad_version[..], &bad_class[..], short] {
        assert_eq!(inject(&b, 5, m), hca_driver::model::RxOutcome::Malformed);
    }
    assert_eq!(
        inject(&b, 5, &smp(4)),
        hca_driver::model::RxOutcome::Delivered
    );
    assert_eq!(hca.counter(regs::RX_DROP_MALFORMED).unwrap(), 3);
    assert_eq!(hca.regs().port_read(5, regs::P_RCV_ERRORS).unwrap(), 3);
    hca.poll().unwrap();
    let (_, buf) = hca.recv_token().unwrap();
    assert_eq!(tid_of(&buf), 4);
    assert!(hca.recv_token().is_none());
}

#[test]
fn interrupt_mode_wakes_on_rx_and_port_change() {
    let b = backend(ModelFault::None);
    let cfg = DriverConfig {
        mode: IrqMode::Interrupt,
        ..small()
    };
    let mut hca = Hca::open(&b, cfg).unwrap();
    assert!(
        !hca.wait(Duration::from_millis(20)).unwrap(),
        "nothing pending"
    );
    inject(&b, 4, &smp(77));
    let t = Instant::now();
    assert!(hca.wait(Duration::from_secs(2)).unwrap());
    assert!(t.elapsed() < Duration::from_secs(1));
    hca.poll().unwrap();
    let (meta, buf) = hca.recv_token().unwrap();
    assert_eq!((meta.port, tid_of(&buf)), (4, 77));
    // The cause was cleared by the handler, so the next SMP raises a new interrupt.
    assert_eq!(hca.regs().read(regs::INT_CAUSE).unwrap() & INT_RX, 0);
    inject(&b, 4, &smp(78));
    assert!(hca.wait(Duration::from_secs(2)).unwrap());
    // Port change: link down on port 6.
    b.model().with_model(|m, env| m.link_down(6, env));
    assert!(hca.wait(Duration::from_secs(2)).unwrap());
    assert_ne!(hca.regs().read(regs::INT_CAUSE).unwrap() & INT_PORT, 0);
    assert_eq!(hca.take_port_changes().unwrap(), vec![6]);
    assert_eq!(
        hca.port_state(6).unwrap(),
        (regs::logical::DOWN, regs::phys::POLLING)
    );
    assert!(hca.stats().interrupts >= 3);
}

#[test]
fn received_buffers_are_tokens_returned_on_drop() {
    let b = backend(ModelFault::None);
    let mut hca = Hca::open(&b, small()).unwrap();
    let free0 = hca.pool().available();
    inject(&b, 1, &smp(5));
    hca.poll().unwrap();
    // The RX slot was refilled from the pool; software holds the received token.
    assert_eq!(hca.pool().available(), free0 - 1);
    let (_, buf) = hca.recv_token().unwrap();
    let s = buf.smp().expect("zero-copy SMP view");
    assert_eq!(s.attr(), SmpAttrId::NODE_INFO);
    drop(buf);
    assert_eq!(hca.pool().available(), free0);
}

#[test]
fn madport_send_and_recv() {
    let b = backend(ModelFault::None);
    let mut hca = Hca::open(&b, small()).unwrap();
    let meta = MadMeta {
        port: PortNum(7),
        slid: Lid::PERMISSIVE,
        dlid: Lid::PERMISSIVE,
        qp: 0,
        sl: 0,
        ..Default::default()
    };
    hca.send(&meta, &smp(1)).unwrap();
    assert!(matches!(
        hca.send(&meta, &[0u8; 10]),
        Err(PortError::BadLength {
            len: 10,
            expected: 256
        })
    ));
    let w = b.model().with_model(|m, _| m.poll_wire()).unwrap().unwrap();
    assert_eq!((w.port, tid_of(&w.mad[..])), (7, 1));
    inject(&b, 3, &smp(2));
    let mut buf = [0u8; 256];
    let (m, len) = hca.recv(&mut buf).unwrap().unwrap();
    assert_eq!((m.port, len, tid_of(&buf)), (PortNum(3), 256, 2));
    assert!(hca.recv(&mut buf).unwrap().is_none());
    // Egress on a port whose link is down completes with an error status, counted.
    b.model().with_model(|m, env| m.link_down(8, env));
    let down = MadMeta {
        port: PortNum(8),
        ..meta
    };
    hca.send(&down, &smp(3)).unwrap();
    hca.poll().unwrap();
    let errs = hca.take_tx_errors();
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].status, regs::status::PORT_DOWN);
    assert_eq!(hca.counter(regs::TX_ERRORS).unwrap(), 1);
}

#[test]
fn host_sma_drops_and_counts_smps_the_asic_passes_but_the_smi_rejects() {
    use hca_driver::HostSma;
    use ibmad::Time;
    let b = backend(ModelFault::None);
    let hca = Hca::open(&b, small()).unwrap();
    let mut host = HostSma::new(hca, "test switch", Time::ZERO).unwrap();
    // Well-formed for the ASIC (version 1, class 0x81, 256 bytes) but an invalid directed
    // route: hop count 64 (> 63).
    let mut bad = smp(1);
    bad[6] = 0; // hop pointer
    bad[7] = 64; // hop count
    assert_eq!(inject(&b, 1, &bad), hca_driver::model::RxOutcome::Delivered);
    // A valid request: hop pointer 1 of 1 (as it arrives after the originator's hop).
    let mut good = smp(2);
    good[6] = 1;
    assert_eq!(
        inject(&b, 1, &good),
        hca_driver::model::RxOutcome::Delivered
    );
    assert_eq!(host.poll(Time::ZERO).unwrap(), 2);
    let a = host.agent().stats();
    assert_eq!(a.received, 2);
    assert_eq!(a.discarded, 1, "the bad route was dropped and counted");
    assert_eq!(a.answered, 1);
    let w = b.model().with_model(|m, _| m.poll_wire()).unwrap().unwrap();
    assert_eq!((w.port, tid_of(&w.mad[..])), (1, 2));
    assert!(b
        .model()
        .with_model(|m, _| m.poll_wire())
        .unwrap()
        .is_none());
}

#[test]
fn a_bad_descriptor_stops_the_device_and_poll_reports_it() {
    let b = backend(ModelFault::None);
    let cfg = DriverConfig {
        mode: IrqMode::Interrupt,
        ..small()
    };
    let mut hca = Hca::open(&b, cfg).unwrap();
    // Ring the TX doorbell for a descriptor that was never written (OWN = 0): RA-1 §7.2/§7.5
    // make that BAD_DESC, fatal.
    hca.regs().write(regs::TXQ_PROD, 1).unwrap();
    let st = hca.regs().read(regs::STATUS).unwrap();
    assert_ne!(st & regs::STATUS_FATAL, 0);
    assert_eq!(st & regs::STATUS_QP0_RUN, 0);
    // The ERR vector fired.
    assert!(hca.wait(Duration::from_secs(2)).unwrap());
    match hca.poll() {
        Err(DriverError::Fatal { cause, addr }) => {
            assert_eq!(cause & regs::ERR_BAD_DESC, regs::ERR_BAD_DESC);
            let txq = u64::from(hca.regs().read(regs::TXQ_BASE_LO).unwrap())
                | u64::from(hca.regs().read(regs::TXQ_BASE_HI).unwrap()) << 32;
            assert_eq!(addr, txq, "ERR_ADDR names the descriptor");
        }
        other => panic!("expected Fatal, got {other:?}"),
    }
    // Nothing more happens until a reset: SMPs are not delivered.
    assert_eq!(inject(&b, 1, &smp(1)), hca_driver::model::RxOutcome::Fatal);
}

#[test]
fn mft_window_round_trip_through_the_host_hardware_hook() {
    use ibmad::attr::MftBlock;
    use ibmad::zerocopy::FromZeros;
    use sma::Hardware;
    let b = backend(ModelFault::None);
    let hca = Hca::open(&b, small()).unwrap();
    let mut hw = hca_driver::AsicHw::new(hca.regs(), 8);
    let mut blk = MftBlock::new_zeroed();
    for (i, m) in blk.masks.iter_mut().enumerate() {
        m.set(0x0100 | i as u16);
    }
    hw.mft_block_written(3, 0, &blk);
    let r = hca.regs();
    r.write(regs::MFT_SEL, 3).unwrap();
    for k in 0..16u64 {
        let v = r.read(regs::MFT_WIN + 4 * k).unwrap();
        assert_eq!(v & 0xFFFF, 0x0100 | (2 * k as u32));
        assert_eq!(v >> 16, 0x0100 | (2 * k as u32 + 1));
    }
    // Another position of the same block is untouched.
    r.write(regs::MFT_SEL, 3 | 1 << 16).unwrap();
    assert_eq!(r.read(regs::MFT_WIN).unwrap(), 0);
    // LFT through the same hook.
    let mut ports = [0xFFu8; 64];
    ports[5] = 7;
    hw.lft_block_written(1, &ports);
    assert_eq!(b.model().lock().unwrap().lft_block(1).unwrap(), ports);
    assert_eq!(hw.write_errors, 0);
}

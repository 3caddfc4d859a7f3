//! Property test: any interleaving of SMPs arriving from the wire, sends, and CQ polls keeps the
//! ring protocol exact — every delivered SMP reaches software once and in order, every accepted
//! send leaves on the wire once and in order, refused sends hand their buffer back, and every
//! buffer returns to the pool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hca_driver::model::RxOutcome;
use hca_driver::{DriverConfig, DriverError, Hca, InProcessBackend, ModelConfig, TxMeta};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Inject(u8),
    Send(u8),
    Poll,
    Recv(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u8..40).prop_map(Op::Inject),
        (1u8..40).prop_map(Op::Send),
        Just(Op::Poll),
        (1u8..40).prop_map(Op::Recv),
    ]
}

fn mad(tid: u64) -> [u8; 256] {
    let mut b = [0u8; 256];
    b[0] = 1;
    b[1] = 0x81;
    b[2] = 1;
    b[3] = 1;
    b[8..16].copy_from_slice(&tid.to_be_bytes());
    b
}

fn tid(m: &[u8]) -> u64 {
    u64::from_be_bytes(m[8..16].try_into().unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn ring_protocol_is_exact(ops in proptest::collection::vec(op(), 1..60)) {
        let b = InProcessBackend::new(ModelConfig::switch(7, 4));
        for p in 1..=4 {
            b.model().with_model(|m, env| m.link_up(p, 2, 4, 0, env));
        }
        let cfg = DriverConfig { rx_log2: 4, tx_log2: 4, spare_buffers: 8, ..DriverConfig::default() };
        let mut hca = Hca::open(&b, cfg).unwrap();
        let meta = TxMeta { port: 2, dlid: 0xFFFF, slid: 0xFFFF, sl: 0, qp: 0, dqp: 0 };
        let (mut next_rx, mut next_tx) = (0u64, 1_000_000u64);
        let (mut delivered, mut accepted) = (Vec::new(), Vec::new());
        let (mut received, mut wire) = (Vec::new(), Vec::new());
        let mut held = Vec::new();
        for o in ops {
            match o {
                Op::Inject(n) => for _ in 0..n {
                    let t = next_rx;
                    next_rx += 1;
                    let r = b.model().with_model(|m, env| m.receive(1, 0xFFFF, 0xFFFF, 0, &mad(t), env)).unwrap();
                    if r == RxOutcome::Delivered { delivered.push(t); } else { prop_assert_eq!(r, RxOutcome::NoDescriptor); }
                },
                Op::Send(n) => for _ in 0..n {
                    let Some(mut buf) = hca.alloc() else { break };
                    buf.copy_from_slice(&mad(next_tx));
                    match hca.post_send(buf, meta) {
                        Ok(()) => { accepted.push(next_tx); next_tx += 1; }
                        Err((DriverError::TxFull, back)) => { prop_assert_eq!(tid(&back), next_tx); break; }
                        Err((e, _)) => panic!("{e}"),
                    }
                },
                Op::Poll => { hca.poll().unwrap(); },
                Op::Recv(n) => for _ in 0..n {
                    match hca.recv_token() {
                        // Keep some tokens a while: the pool must cope.
                        Some((_, buf)) => { received.push(tid(&buf)); if held.len() < 4 { held.push(buf); } }
                        None => break,
                    }
                },
            }
            while let Some(w) = b.model().with_model(|m, _| m.poll_wire()).unwrap() {
                wire.push(tid(&w.mad[..]));
            }
        }
        held.clear();
        for _ in 0..8 {
            hca.poll().unwrap();
            while let Some((_, buf)) = hca.recv_token() { received.push(tid(&buf)); }
            while let Some(w) = b.model().with_model(|m, _| m.poll_wire()).unwrap() {
                wire.push(tid(&w.mad[..]));
            }
        }
        prop_assert_eq!(&received, &delivered);
        prop_assert_eq!(&wire, &accepted);
        prop_assert_eq!(hca.tx_outstanding(), 0);
        // Everything but the 16 posted RX buffers is back in the pool.
        prop_assert_eq!(hca.pool().available(), hca.pool().capacity() as usize - 16);
        let m = b.model().lock().unwrap();
        prop_assert_eq!(m.counter(hca_driver::regs::RX_SMPS) as usize, delivered.len());
        prop_assert_eq!(m.counter(hca_driver::regs::RX_DROP_NO_DESC) as u64, next_rx - delivered.len() as u64);
    }
}

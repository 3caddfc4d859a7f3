//! MADs per second through the host SMA + driver + in-process RA-1 model: NodeInfo Gets arrive
//! on the model's wire side, go up the RX ring, are answered by `sma::Agent`, and the responses
//! go down the TX ring back onto the model's wire. Also the driver alone (echo: RX token →
//! TX post, no agent) to give the driver cost per MAD.
//!
//! `cargo bench -p hca-driver --bench sma_path` (release). Prints one line per case.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use hca_driver::{DriverConfig, Hca, HostSma, InProcessBackend, ModelConfig, TxMeta};
use ibmad::zerocopy::IntoBytes;
use ibmad::{smi, DrPath, Method, Smp, SmpAttrId, Time};

fn request(tid: u64) -> [u8; 256] {
    let mut s = Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        tid,
        &DrPath::parse("0,1").unwrap(),
    );
    // As the originator sends it: hop pointer 0 -> 1.
    let _ = smi::advance(&mut s, false);
    let mut b = [0u8; 256];
    b.copy_from_slice(s.as_bytes());
    b
}

fn backend() -> InProcessBackend {
    let b = InProcessBackend::new(ModelConfig::switch(0x0002_c903_00ab_cd00, 36));
    for p in 1..=36 {
        b.model().with_model(|m, env| m.link_up(p, 2, 4, 0, env));
    }
    b
}

const BATCH: u64 = 64;

fn host_sma(total: u64) -> f64 {
    let b = backend();
    let cfg = DriverConfig {
        rx_log2: 8,
        tx_log2: 8,
        spare_buffers: 256,
        ..DriverConfig::default()
    };
    let hca = Hca::open(&b, cfg).unwrap();
    let mut host = HostSma::new(hca, "bench switch", Time::ZERO).unwrap();
    let req = request(1);
    let mut answered = 0u64;
    let t = Instant::now();
    let mut sent = 0;
    while answered < total {
        b.model().with_model(|m, env| {
            for _ in 0..BATCH {
                m.receive(1, 0xFFFF, 0xFFFF, 0, &req, env);
            }
        });
        sent += BATCH;
        host.poll(Time::ZERO).unwrap();
        b.model().with_model(|m, _| {
            while let Some(w) = m.poll_wire() {
                debug_assert_eq!(w.port, 1);
                answered += 1;
            }
        });
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(answered, sent, "every request answered");
    assert_eq!(host.agent().stats().answered, answered);
    answered as f64 / secs
}

fn driver_echo(total: u64) -> f64 {
    let b = backend();
    let cfg = DriverConfig {
        rx_log2: 8,
        tx_log2: 8,
        spare_buffers: 256,
        ..DriverConfig::default()
    };
    let mut hca = Hca::open(&b, cfg).unwrap();
    let req = request(1);
    let mut echoed = 0u64;
    let meta = TxMeta {
        port: 1,
        dlid: 0xFFFF,
        slid: 0xFFFF,
        sl: 0,
        qp: 0,
        dqp: 0,
    };
    let t = Instant::now();
    while echoed < total {
        b.model().with_model(|m, env| {
            for _ in 0..BATCH {
                m.receive(1, 0xFFFF, 0xFFFF, 0, &req, env);
            }
        });
        hca.poll().unwrap();
        while let Some((_, buf)) = hca.recv_token() {
            // Zero copy: the received buffer itself is posted for sending.
            if hca.post_send(buf, meta).is_err() {
                hca.poll().unwrap();
            }
        }
        b.model().with_model(|m, _| {
            while m.poll_wire().is_some() {
                echoed += 1;
            }
        });
    }
    echoed as f64 / t.elapsed().as_secs_f64()
}

/// Host SMA + driver over vfio-user: the model serves in another thread on a socketpair
/// (registers by messages; rings, buffers and CQ in the shared memfds).
fn vfio_user(total: u64) -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{mpsc, Arc};
    let (a, bsock) = std::os::unix::net::UnixStream::pair().unwrap();
    let (tx, rx) = mpsc::channel::<u64>();
    let wire = Arc::new(AtomicU64::new(0));
    let w2 = wire.clone();
    let h = std::thread::spawn(move || {
        let sys = vfio::RealSys::shared();
        let mut s = hca_driver::model::server::ServedAsic::new(
            bsock,
            sys.clone(),
            ModelConfig::switch(0x0002_c903_00ab_cd01, 36),
        );
        s.with_model(|m, env| {
            for p in 1..=36 {
                m.link_up(p, 2, 4, 0, env);
            }
        });
        let req = request(1);
        loop {
            match sys.poll_in(&[s.socket()], 0) {
                Ok(Some(_)) => {
                    if s.serve_one().is_err() {
                        return;
                    }
                }
                Ok(None) => std::thread::yield_now(),
                Err(_) => return,
            }
            while let Ok(n) = rx.try_recv() {
                s.with_model(|m, env| {
                    for _ in 0..n {
                        m.receive(1, 0xFFFF, 0xFFFF, 0, &req, env);
                    }
                });
            }
            let n = s.with_model(|m, _| {
                let mut n = 0;
                while m.poll_wire().is_some() {
                    n += 1;
                }
                n
            });
            w2.fetch_add(n, Ordering::Relaxed);
        }
    });
    let dev = vfio::UserDevice::from_stream(a, vfio::RealSys::shared()).unwrap();
    let be = hca_driver::UserBackend::from_device("bench", dev);
    let cfg = DriverConfig {
        rx_log2: 8,
        tx_log2: 8,
        spare_buffers: 256,
        ..DriverConfig::default()
    };
    let hca = Hca::open(&be, cfg).unwrap();
    let mut host = HostSma::new(hca, "bench switch", Time::ZERO).unwrap();
    let t = Instant::now();
    let mut sent = 0;
    while sent < total {
        tx.send(BATCH).unwrap();
        sent += BATCH;
        while wire.load(Ordering::Relaxed) < sent {
            host.poll(Time::ZERO).unwrap();
        }
    }
    let rate = sent as f64 / t.elapsed().as_secs_f64();
    drop(host);
    drop(be);
    drop(tx);
    h.join().unwrap();
    rate
}

fn main() {
    let n = 2_000_000;
    let rate = host_sma(n);
    println!(
        "hca-driver host SMA + driver + in-process model: {n} NodeInfo Gets answered, {:.2} M MAD/s ({:.0} ns/MAD)",
        rate / 1e6,
        1e9 / rate
    );
    let m = 100_000;
    let rate = vfio_user(m);
    println!(
        "hca-driver host SMA + driver + vfio-user model (thread, socketpair): {m} answered, {:.3} M MAD/s ({:.0} ns/MAD)",
        rate / 1e6,
        1e9 / rate
    );
    let rate = driver_echo(n);
    println!(
        "hca-driver driver + in-process model (RX -> TX echo, no agent): {:.2} M MAD/s ({:.0} ns/MAD)",
        rate / 1e6,
        1e9 / rate
    );
}

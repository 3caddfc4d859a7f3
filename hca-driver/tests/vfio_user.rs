//! The same driver and host SMA over vfio-user: the RA-1 model is served on one end of a UNIX
//! socket (in a thread here, a separate process with `ibsm asic-model`), the driver opens it
//! with `vfio::UserDevice` — registers by REGION_READ/WRITE messages, DMA through the memfds
//! passed with DMA_MAP, MSI-X through eventfds passed with SET_IRQS.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use hca_driver::model::server::ServedAsic;
use hca_driver::model::WireTx;
use hca_driver::{
    DriverConfig, Hca, HostSma, InitError, IrqMode, ModelConfig, ModelFault, UserBackend,
};
use ibmad::attr::NodeInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{smi, DrPath, Method, Smp, SmpAttrId, Time};
use vfio::{RealSys, UserDevice};

enum Cmd {
    Inject(u8, Box<[u8; 256]>),
}

fn serve(
    cfg: ModelConfig,
) -> (
    UserBackend,
    mpsc::Sender<Cmd>,
    mpsc::Receiver<WireTx>,
    thread::JoinHandle<()>,
) {
    let (a, b) = UnixStream::pair().unwrap();
    let (ctx, crx) = mpsc::channel::<Cmd>();
    let (wtx, wrx) = mpsc::channel::<WireTx>();
    let nports = cfg.num_ports;
    let h = thread::spawn(move || {
        let sys = RealSys::shared();
        let mut s = ServedAsic::new(b, sys.clone(), cfg);
        s.with_model(|m, env| {
            for p in 1..=nports {
                m.link_up(p, 2, 4, 0, env);
            }
        });
        loop {
            match sys.poll_in(&[s.socket()], 1) {
                Ok(Some(_)) => {
                    if s.serve_one().is_err() {
                        return; // client gone
                    }
                }
                Ok(None) => {}
                Err(_) => return,
            }
            while let Ok(Cmd::Inject(p, mad)) = crx.try_recv() {
                s.with_model(|m, env| m.receive(p, 0xFFFF, 0xFFFF, 0, &mad[..], env));
            }
            while let Some(w) = s.with_model(|m, _| m.poll_wire()) {
                if wtx.send(w).is_err() {
                    return;
                }
            }
        }
    });
    let dev = UserDevice::from_stream(a, RealSys::shared()).unwrap();
    (UserBackend::from_device("pair", dev), ctx, wrx, h)
}

fn node_info_get(tid: u64) -> Box<[u8; 256]> {
    let mut s = Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        tid,
        &DrPath::parse("0,3").unwrap(),
    );
    let _ = smi::advance(&mut s, false);
    let mut b = Box::new([0u8; 256]);
    b.copy_from_slice(s.as_bytes());
    b
}

#[test]
fn host_sma_answers_through_a_vfio_user_model() {
    let guid = 0x0002_c903_0042_0000;
    let (backend, cmd, wire, h) = serve(ModelConfig::switch(guid, 4));
    let cfg = DriverConfig {
        rx_log2: 4,
        tx_log2: 4,
        spare_buffers: 16,
        mode: IrqMode::Interrupt,
        ..DriverConfig::default()
    };
    let hca = Hca::open(&backend, cfg).unwrap();
    assert_eq!(hca.facts().node_guid, guid);
    let mut host = HostSma::new(hca, "vfio-user switch", Time::ZERO).unwrap();
    for tid in 1..=20u64 {
        cmd.send(Cmd::Inject(3, node_info_get(tid))).unwrap();
        // The RX interrupt wakes us (eventfd passed over the socket).
        let t = Instant::now();
        while host.poll(Time::ZERO).unwrap() == 0 {
            assert!(t.elapsed() < Duration::from_secs(5), "no RX for tid {tid}");
            host.wait(Duration::from_millis(50)).unwrap();
        }
        let w = wire.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(w.port, 3, "the response leaves by the ingress port");
        let resp = Smp::ref_from_bytes(&w.mad[..]).unwrap();
        assert!(resp.method().is_response());
        assert_eq!(resp.tid.get(), tid);
        let (ni, _) = NodeInfo::ref_from_prefix(&resp.data).unwrap();
        assert_eq!(ni.node_guid.get(), guid);
        assert_eq!(ni.num_ports, 4);
    }
    assert!(host.hca().stats().interrupts > 0);
    drop(host);
    drop(backend);
    drop(cmd);
    h.join().unwrap();
}

#[test]
fn init_timeout_over_vfio_user_is_bounded() {
    let mut cfg = ModelConfig::switch(1, 2);
    cfg.fault = ModelFault::InitStuck;
    let (backend, _cmd, _wire, _h) = serve(cfg);
    let t = Instant::now();
    let err = Hca::open(&backend, DriverConfig::default()).unwrap_err();
    assert!(
        matches!(err, InitError::Timeout { reg: "STATUS", .. }),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(3));
}

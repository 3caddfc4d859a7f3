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
    /// A GMP arriving on the port, from (SLID, QP) to the switch's LID.
    InjectGmp(u8, u16, u32, u16, Box<[u8; 256]>),
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
            while let Ok(c) = crx.try_recv() {
                match c {
                    Cmd::Inject(p, mad) => {
                        s.with_model(|m, env| m.receive(p, 0xFFFF, 0xFFFF, 0, &mad[..], env));
                    }
                    Cmd::InjectGmp(p, slid, qp, dlid, mad) => {
                        s.with_model(|m, env| {
                            m.receive_gmp(Some(p), slid, dlid, 0, qp, &mad[..], env)
                        });
                    }
                }
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

fn port_counters_req(method: Method, port_select: u8, tid: u64) -> Box<[u8; 256]> {
    use ibmad::perf::{CounterSelect, PerfMad, PortCountersRepr};
    use ibmad::{GmpAttrRepr, PmaAttrId};
    let mut m = PerfMad::request(method, PmaAttrId::PORT_COUNTERS, 0, tid);
    PortCountersRepr {
        port_select,
        counter_select: CounterSelect(0xFFFF),
        ..PortCountersRepr::default()
    }
    .emit(&mut m.data)
    .unwrap();
    let mut b = Box::new([0u8; 256]);
    b.copy_from_slice(m.as_bytes());
    b
}

/// RA-1 v1.1: a PerfMgt Get reaches the host's QP1 over vfio-user, the host PMA answers from
/// the device's counter registers, and the answer leaves QP1 by the LFT to the requester; a
/// Set clears the registers.
#[test]
fn host_pma_answers_a_gmp_through_a_vfio_user_model() {
    use hca_driver::regs::{
        port_base, LFT_BLOCK, LFT_TOP, LFT_WIN, P_RCV_PKTS, P_STATE, RX_GMPS, SW_LID, TX_GMPS,
    };
    use ibmad::perf::PortCountersRepr;
    use ibmad::GmpAttrRepr;
    let (backend, cmd, wire, h) = serve(ModelConfig::switch(0x0002_c903_0042_0001, 4));
    let hca = Hca::open(&backend, DriverConfig::default()).unwrap();
    assert!(
        hca.facts().qp1,
        "a v1.1 model advertises QP1: {:?}",
        hca.facts()
    );
    assert_eq!(hca.facts().version, (1, 1));
    let mut host = HostSma::new(hca, "vfio-user switch", Time::ZERO).unwrap();
    // The SM's part, done by hand: switch LID 5, LID 9 behind port 3, port 3 Active.
    // (Regs hold the device open: every handle is dropped before the end, so the socket
    // closes and the server thread ends.)
    let regs = host.hca().regs();
    regs.write(SW_LID, 5).unwrap();
    regs.write(LFT_BLOCK, 0).unwrap();
    regs.write(LFT_WIN + 8, 0xFFFF_03FF).unwrap(); // LID 9 -> port 3
    regs.write(LFT_TOP, 9).unwrap();
    for req in [3u32, 4] {
        regs.port_write(3, P_STATE, req << 8).unwrap();
    }
    assert_eq!(regs.read(port_base(3) + P_STATE).unwrap() & 0xF, 4);
    drop(regs);
    let ask = |host: &mut HostSma, method: Method, tid: u64| {
        cmd.send(Cmd::InjectGmp(
            3,
            9,
            0x42,
            5,
            port_counters_req(method, 3, tid),
        ))
        .unwrap();
        let t = Instant::now();
        while host.poll(Time::ZERO).unwrap() == 0 {
            assert!(t.elapsed() < Duration::from_secs(5), "no RX for tid {tid}");
            host.wait(Duration::from_millis(20)).unwrap();
        }
        let w = wire
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}: TX errors {:?}", host.hca_mut().take_tx_errors()));
        assert_eq!(
            (w.port, w.qp, w.dqp),
            (3, 1, 0x42),
            "QP1 to the requester's QP"
        );
        assert_eq!((w.slid, w.dlid), (5, 9));
        assert_eq!((w.mad[1], w.mad[3]), (0x04, Method::GET_RESP.0));
        assert_eq!(&w.mad[8..16], &tid.to_be_bytes());
        assert_eq!(u16::from_be_bytes([w.mad[4], w.mad[5]]), 0, "status");
        PortCountersRepr::parse(&w.mad[64..]).unwrap()
    };
    let first = ask(&mut host, Method::GET, 1);
    assert_eq!(first.port_select, 3);
    assert_eq!((first.port_rcv_pkts, first.port_rcv_data), (1, 72));
    assert_eq!(host.hca().regs().port_read(3, P_RCV_PKTS).unwrap(), 1);
    // The answer went out of port 3: the next read shows it.
    let second = ask(&mut host, Method::GET, 2);
    assert_eq!((second.port_rcv_pkts, second.port_xmit_pkts), (2, 1));
    // A Set with every CounterSelect bit clears the registers (then answers with them).
    let cleared = ask(&mut host, Method::SET, 3);
    assert_eq!((cleared.port_rcv_pkts, cleared.port_xmit_pkts), (0, 0));
    let regs = host.hca().regs();
    assert_eq!(regs.port_read(3, P_RCV_PKTS).unwrap(), 0);
    assert_eq!(regs.read(RX_GMPS).unwrap(), 3);
    assert_eq!(regs.read(TX_GMPS).unwrap(), 3);
    assert_eq!(host.stats().gmps, 3);
    drop(regs);
    drop(host);
    drop(backend);
    drop(cmd);
    h.join().unwrap();
}

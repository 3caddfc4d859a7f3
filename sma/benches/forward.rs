//! Hot-path throughput of the agent, measured with std::time (no external harness):
//! - `forward`: a switch forwarding an outbound DR SMP at an intermediate hop
//!   (handle_mad → on_receive → advance → queue → poll_transmit);
//! - `return`: the same for a returning (D=1) SMP;
//! - `answer`: a switch answering a DR Get(NodeInfo) at the end of its path;
//! - `lid_answer`: a CA answering a LID-routed Get(PortInfo).
//!
//! Run: `cargo bench -p sma --bench forward`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
// A benchmark measures wall time; the library itself never reads a clock.
#![allow(clippy::disallowed_methods)]

use std::hint::black_box;
use std::time::Instant;

use ibmad::smi;
use ibmad::zerocopy::IntoBytes;
use ibmad::{DrPath, Guid, Lid, MadMeta, Method, NodeType, PortNum, Smp, SmpAttrId, Time};
use sma::{Agent, LinkEvent, NoHardware, NodeConfig, PortConfig};

const UP: LinkEvent = LinkEvent::Up {
    width_active: 2,
    speed_active: 4,
    speed_ext_active: 0,
};

fn node(ty: NodeType, ports: u8) -> Agent {
    let cfg = NodeConfig {
        node_type: ty,
        node_guid: Guid(0x10),
        sys_image_guid: Guid(0x10),
        desc: "bench".into(),
        num_ports: ports,
        port_guids: (0..=ports).map(|p| Guid(0x10 + u64::from(p))).collect(),
        ports: vec![PortConfig::default_qdr_4x(); usize::from(ports) + 1],
        vendor_id: 0x2c9,
        device_id: 1,
        revision: 1,
        lft_cap: 49152,
        mft_cap: 1024,
        enhanced_port0: false,
    };
    let mut a = Agent::new(cfg, NoHardware).unwrap();
    for p in 1..=ports {
        a.handle_link(Time::ZERO, PortNum(p), UP);
    }
    while a.poll_event().is_some() {}
    a
}

fn meta(port: u8) -> MadMeta {
    MadMeta {
        port: PortNum(port),
        slid: Lid::PERMISSIVE,
        dlid: Lid::PERMISSIVE,
        qp: 0,
        sl: 0,
        ..Default::default()
    }
}

fn run(name: &str, a: &mut Agent, m: &MadMeta, mad: &[u8], iters: u64) {
    let mut buf = [0u8; 256];
    // Warm-up (grows the queue once).
    for _ in 0..1000 {
        a.handle_mad(Time::ZERO, m, mad);
        let _ = a.poll_transmit(Time::ZERO, &mut buf);
    }
    let t0 = Instant::now();
    let mut sent = 0u64;
    for _ in 0..iters {
        a.handle_mad(Time::ZERO, black_box(m), black_box(mad));
        if a.poll_transmit(Time::ZERO, &mut buf).is_some() {
            sent += 1;
        }
    }
    let dt = t0.elapsed();
    assert_eq!(sent, iters, "{name}: every input produced one transmit");
    let per = dt.as_nanos() as f64 / iters as f64;
    println!(
        "{name:<11} {iters} SMPs in {:.3} s: {per:.0} ns/SMP, {:.2} M SMP/s",
        dt.as_secs_f64(),
        1e3 / per
    );
}

fn main() {
    let iters = 5_000_000;
    let mut sw = node(NodeType::SWITCH, 36);

    // Outbound intermediate hop: path 1,5,7 arriving on port 3 with hop_ptr 1 → out port 5.
    let mut s = Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        1,
        &DrPath::new(&[1, 5, 7]).unwrap(),
    );
    let _ = smi::advance(&mut s, false);
    run("forward", &mut sw, &meta(3), s.as_bytes(), iters);

    // Returning intermediate hop: D=1, hop_ptr 3 of 3 → out ReturnPath[2].
    let mut r = s;
    r.set_direction(true);
    r.method = Method::GET_RESP.0;
    r.hop_ptr = 3;
    r.return_path[1] = 2;
    r.return_path[2] = 6;
    run("return", &mut sw, &meta(7), r.as_bytes(), iters);

    // End of path: the switch answers Get(NodeInfo) and sends the response back.
    let mut e = Smp::dr_request(
        Method::GET,
        SmpAttrId::NODE_INFO,
        0,
        1,
        &DrPath::new(&[1]).unwrap(),
    );
    let _ = smi::advance(&mut e, false);
    run("answer", &mut sw, &meta(1), e.as_bytes(), iters);

    // LID-routed Get(PortInfo) to a CA port with LID 7.
    let mut ca = node(NodeType::CA, 1);
    let mut set = Smp::dr_request(Method::SET, SmpAttrId::PORT_INFO, 1, 1, &DrPath::local());
    let _ = smi::advance(&mut set, false);
    let mut pi = *ca.port_info(PortNum(1)).unwrap();
    pi.lid.set(7);
    pi.set_port_state(ibmad::PortState::NO_CHANGE);
    pi.set_phys_state(ibmad::PhysState::NO_CHANGE);
    set.data.copy_from_slice(pi.as_bytes());
    ca.handle_mad(Time::ZERO, &meta(1), set.as_bytes());
    while ca.poll_event().is_some() {}
    let l = Smp::lid_request(Method::GET, SmpAttrId::PORT_INFO, 1, 9);
    let lm = MadMeta {
        port: PortNum(1),
        slid: Lid(1),
        dlid: Lid(7),
        qp: 0,
        sl: 0,
        ..Default::default()
    };
    run("lid_answer", &mut ca, &lm, l.as_bytes(), iters);
}

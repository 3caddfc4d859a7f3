//! Property: arbitrary bytes never panic the agent, and a Get never yields more than one
//! transmit (a forwarded hop, or a response, or — on an M_Key failure — a trap).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::{Lid, MadMeta, Method, PortNum, Time};
use proptest::prelude::*;
use sma::Event;

fn agents() -> Vec<sma::Agent> {
    let mut sw = switch(0x700, 8);
    let mut c = ca(0x500, 2);
    for p in 1..=8 {
        sw.handle_link(Time::ZERO, PortNum(p), UP);
    }
    c.handle_link(Time::ZERO, PortNum(1), UP);
    vec![sw, c]
}

/// Makes 256 random bytes an SMP header: BaseVersion 1, class LID-routed or directed route,
/// ClassVersion 1, the method, DR hop pointer and count, and the attribute ID.
fn shape_smp(bytes: &mut [u8], dr: bool, method: u8, hop_ptr: u8, hop_cnt: u8, attr: u16) {
    bytes[0] = 1;
    bytes[1] = if dr { 0x81 } else { 0x01 };
    bytes[2] = 1;
    bytes[3] = method;
    bytes[6] = hop_ptr;
    bytes[7] = hop_cnt;
    bytes[16..18].copy_from_slice(&attr.to_be_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        port in 0u8..10,
        slid in any::<u16>(),
        dlid in any::<u16>(),
    ) {
        for mut a in agents() {
            let m = MadMeta { port: PortNum(port), slid: Lid(slid), dlid: Lid(dlid), qp: 0, sl: 0, ..Default::default() };
            a.handle_mad(Time::ZERO, &m, &bytes);
            prop_assert!(drain(&mut a).len() <= 2);
        }
    }

    /// SMP-shaped input (256 bytes, version 1, class 0x01/0x81) reaches the deep paths.
    #[test]
    fn smp_shaped_bytes_get_at_most_one_transmit(
        mut bytes in proptest::collection::vec(any::<u8>(), 256),
        dr in any::<bool>(),
        method in prop_oneof![Just(1u8), Just(2), any::<u8>()],
        attr in prop_oneof![0x10u16..0x21, any::<u16>()],
        hop_cnt in 0u8..70,
        hop_ptr in 0u8..70,
        port in 0u8..4,
    ) {
        shape_smp(&mut bytes, dr, method, hop_ptr, hop_cnt, attr);
        for mut a in agents() {
            let m = MadMeta { port: PortNum(port), slid: Lid(1), dlid: Lid(2), qp: 0, sl: 0, ..Default::default() };
            a.handle_mad(Time::ZERO, &m, &bytes);
            let n = drain(&mut a).len();
            if method == Method::GET.0 {
                prop_assert!(n <= 1, "a Get produced {n} transmits");
            } else {
                prop_assert!(n <= 2);
            }
            a.handle_timeout(Time::from_millis(100_000));
            let _ = drain(&mut a);
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Entry {
    Copying,
    /// `handle_mad_lent`: a MAD left for the SM counts as the first event.
    Lent,
}

/// Everything an agent sends after one input, as `(addressing, bytes)` in sending order, by
/// the copying entry point or by the lending one (the lent buffer first, then the queue), and
/// its events (with `Entry::Lent`, a MAD left for the SM first, as `Event::ForSm`).
fn outputs(
    a: &mut sma::Agent,
    m: &MadMeta,
    bytes: &[u8],
    entry: Entry,
) -> (Vec<(MadMeta, Vec<u8>)>, Vec<Event>) {
    let mut out = Vec::new();
    let mut evs = Vec::new();
    let mut buf = bytes.to_vec();
    match entry {
        Entry::Copying => a.handle_mad(Time::ZERO, m, bytes),
        Entry::Lent => match a.handle_mad_lent(Time::ZERO, m, &mut buf) {
            Some(sma::Lent::Transmit(meta)) => out.push((meta, buf)),
            Some(sma::Lent::ForSm(meta)) => {
                let mut mad = Box::new([0u8; 256]);
                mad.copy_from_slice(&buf);
                evs.push(Event::ForSm { meta, mad });
            }
            None => {}
        },
    }
    for (t, smp) in drain(a) {
        out.push((t.meta, ibmad::zerocopy::IntoBytes::as_bytes(&smp).to_vec()));
    }
    evs.extend(events(a));
    (out, evs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// `handle_mad_lent` sends the same MADs in the same order as `handle_mad`, with the same
    /// events (a MAD lent for the SM in the place of its `Event::ForSm`) and counters — for DR
    /// hops passed on, responses, MADs for the SM, discards and traps alike.
    #[test]
    fn lent_handling_sends_what_copying_handling_sends(
        mut bytes in proptest::collection::vec(any::<u8>(), 256),
        dr in any::<bool>(),
        method in prop_oneof![Just(1u8), Just(2), Just(0x81), any::<u8>()],
        attr in prop_oneof![0x10u16..0x21, any::<u16>()],
        hop_cnt in 0u8..5,
        hop_ptr in 0u8..6,
        port in 0u8..4,
        dlid in prop_oneof![Just(2u16), Just(0xFFFF), any::<u16>()],
        protect in 0u8..4,
        queued in any::<bool>(),
    ) {
        shape_smp(&mut bytes, dr, method, hop_ptr, hop_cnt, attr);
        for i in 0..2 {
            let mut copying = agents().swap_remove(i);
            let mut lending_sm = agents().swap_remove(i);
            // LIDs and an M_Key (requests without it may fail the check and queue a trap 256
            // before any response).
            for x in [&mut copying, &mut lending_sm] {
                let mgmt = if x.is_switch() { 0 } else { 1 };
                let mut pi = pi_template(x, mgmt);
                pi.lid.set(3);
                pi.master_sm_lid.set(1);
                if protect > 0 {
                    pi.m_key.set(0x55);
                    pi.set_m_key_protect_bits(protect);
                }
                let _ = set_pi(x, 1, mgmt, &pi);
                let _ = drain(x);
                let _ = events(x);
                if queued && protect > 0 {
                    // A Set with a wrong M_Key leaves a trap 256 in the transmit queue (on
                    // the CA, whose port 1 leads to the SM): it must still leave first.
                    let mut bad = common::dr(Method::SET, ibmad::SmpAttrId::PORT_INFO, 0, &[]);
                    bad.m_key.set(0xBAD);
                    x.handle_mad(Time::ZERO, &common::meta(1), ibmad::zerocopy::IntoBytes::as_bytes(&bad));
                }
            }
            let m = MadMeta { port: PortNum(port), slid: Lid(1), dlid: Lid(dlid), qp: 0, sl: 0, ..Default::default() };
            let want = outputs(&mut copying, &m, &bytes, Entry::Copying);
            let got_sm = outputs(&mut lending_sm, &m, &bytes, Entry::Lent);
            prop_assert_eq!(&got_sm, &want);
            prop_assert_eq!(lending_sm.stats(), copying.stats());
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Mad {
        set: bool,
        attr: u16,
        attr_mod: u32,
        data: Vec<u8>,
        port: u8,
    },
    LinkUp(u8),
    LinkDown(u8),
    Timeout(u64),
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (
            any::<bool>(),
            prop_oneof![Just(0x15u16), Just(0x12), Just(0x19), Just(0x1B), Just(0x16), Just(0x17), Just(0x18), Just(0x14), 0x10u16..0x21],
            prop_oneof![0u32..6, any::<u32>()],
            proptest::collection::vec(any::<u8>(), 64),
            0u8..4,
        )
            .prop_map(|(set, attr, attr_mod, data, port)| Op::Mad { set, attr, attr_mod, data, port }),
        2 => (0u8..4).prop_map(Op::LinkUp),
        1 => (0u8..4).prop_map(Op::LinkDown),
        1 => (0u64..100_000).prop_map(Op::Timeout),
        1 => Just(Op::Reset),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random sequences of local Gets/Sets with random data, link events, timeouts and resets:
    /// no panic, every local request answered exactly once, and the state invariants hold
    /// (a port whose link is not up is logically Down; LFT lookups name existing ports).
    #[test]
    fn random_operation_sequences_keep_invariants(ops in proptest::collection::vec(op(), 1..60)) {
        for mut a in agents() {
            let mut now = 0u64;
            for op in &ops {
                match op {
                    Op::Mad { set, attr, attr_mod, data, port } => {
                        let m = if *set { Method::SET } else { Method::GET };
                        let mut s = dr(m, ibmad::SmpAttrId(*attr), *attr_mod, &[]);
                        s.data.copy_from_slice(data);
                        let port = if a.is_switch() { *port } else { 1 + port % 2 };
                        // With a nonzero M_Key set by an earlier random Set the request may be
                        // dropped; otherwise exactly one response comes back.
                        let protected = a.port_info(PortNum(if a.is_switch() { 0 } else { port }))
                            .is_some_and(|p| p.m_key.get() != 0);
                        let r = local(&mut a, port, s);
                        prop_assert!(r.is_some() || protected);
                    }
                    Op::LinkUp(p) => a.handle_link(Time(now), PortNum(*p), UP),
                    Op::LinkDown(p) => a.handle_link(Time(now), PortNum(*p), sma::LinkEvent::Down),
                    Op::Timeout(dt) => {
                        now += dt * 1_000_000;
                        a.handle_timeout(Time(now));
                        // Nothing is left due right after handle_timeout.
                        prop_assert!(a.poll_timeout().is_none_or(|t| t > Time(now)));
                    }
                    Op::Reset => a.reset(Time(now)),
                }
                let _ = drain(&mut a);
                for p in 0..=a.num_ports() {
                    if let Some(pi) = a.port_info(PortNum(p)) {
                        if pi.phys_state() != ibmad::PhysState::LINK_UP {
                            prop_assert_eq!(pi.port_state(), ibmad::PortState::DOWN);
                        }
                    }
                }
                for lid in [1u16, 2, 63, 64, 1000, 0xBFFF] {
                    if let Some(p) = a.lft_port(Lid(lid)) {
                        prop_assert!(p.0 <= a.num_ports());
                    }
                }
            }
        }
    }
}

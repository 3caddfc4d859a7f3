//! Property: arbitrary bytes never panic the agent, and a Get never yields more than one
//! transmit (a forwarded hop, or a response, or — on an M_Key failure — a trap).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::{Lid, MadMeta, Method, PortNum, Time};
use proptest::prelude::*;

fn agents() -> Vec<sma::Agent> {
    let mut sw = switch(0x700, 8);
    let mut c = ca(0x500, 2);
    for p in 1..=8 {
        sw.handle_link(Time::ZERO, PortNum(p), UP);
    }
    c.handle_link(Time::ZERO, PortNum(1), UP);
    vec![sw, c]
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
            let m = MadMeta { port: PortNum(port), slid: Lid(slid), dlid: Lid(dlid), qp: 0, sl: 0 };
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
        bytes[0] = 1;
        bytes[1] = if dr { 0x81 } else { 0x01 };
        bytes[2] = 1;
        bytes[3] = method;
        bytes[6] = hop_ptr;
        bytes[7] = hop_cnt;
        bytes[16..18].copy_from_slice(&attr.to_be_bytes());
        for mut a in agents() {
            let m = MadMeta { port: PortNum(port), slid: Lid(1), dlid: Lid(2), qp: 0, sl: 0 };
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

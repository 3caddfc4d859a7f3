//! Robustness: whatever bytes an SM (or a corrupting link) puts on the fabric, nothing panics
//! and no MAD buffer leaks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use std::time::Duration;

use fabric_sim::sim::SimConfig;
use ibmad::MadPort;
use proptest::prelude::*;
use sim_util::*;

/// An SMP-shaped 256-byte MAD: version 1, an SMP class, everything else arbitrary but with the
/// hop fields and paths biased towards values that reach into the fixture.
fn smp_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<u8>(), 256),
        prop_oneof![Just(0x01u8), Just(0x81u8)],
        0u8..8,
        0u8..8,
        proptest::collection::vec(0u8..9, 8),
        any::<bool>(),
    )
        .prop_map(|(mut b, class, hop_ptr, hop_cnt, path, d)| {
            b[0] = 1;
            b[1] = class;
            b[2] = 1;
            b[6] = hop_ptr;
            b[7] = hop_cnt;
            if d {
                b[4] |= 0x80;
            } else {
                b[4] &= 0x7F;
            }
            for (i, p) in path.iter().enumerate() {
                b[129 + i] = *p;
                b[193 + i] = *p;
            }
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_smps_never_panic_or_leak(mads in proptest::collection::vec(smp_bytes(), 1..20)) {
        let (mut f, sm) = fdisc(SimConfig::default());
        for m in &mads {
            let dlid = ibmad::Lid(u16::from_be_bytes([m[40], m[41]]) % 16);
            f.sm_port(sm).send(&lid_meta(dlid), m).unwrap();
            f.run_for(Duration::from_micros(3));
        }
        settle(&mut f, Duration::from_millis(50));
        let _ = drain(&mut f, sm);
        prop_assert_eq!(f.mads_in_flight(), f.mads_on_the_wire());
    }
}

#[test]
fn heavy_faults_do_not_leak_buffers() {
    let cfg = SimConfig {
        seed: 3,
        faults: "drop=0.2,dup=0.2,corrupt=0.1,garble=0.2,delay=0.3:50us"
            .parse()
            .unwrap(),
        ..SimConfig::default()
    };
    let (mut f, sm) = fdisc(cfg);
    let path = ibmad::DrPath::parse("0,1,4,2,3").unwrap();
    for i in 0..2000 {
        let q =
            ibmad::Smp::dr_request(ibmad::Method::GET, ibmad::SmpAttrId::NODE_INFO, 0, i, &path);
        use ibmad::zerocopy::IntoBytes;
        f.sm_port(sm).send(&dr_meta(), q.as_bytes()).unwrap();
        f.run_for(Duration::from_micros(1));
        assert_eq!(f.mads_in_flight(), f.mads_on_the_wire() + f.sm_pending(sm));
    }
    settle(&mut f, Duration::from_secs(1));
    assert_eq!(f.mads_on_the_wire(), 0);
    assert!(
        f.sm_pending(sm) > 0,
        "answers queued for the SM hold their buffers"
    );
    assert_eq!(f.mads_in_flight(), f.sm_pending(sm));
    // Detaching discards the queue and gives its buffers back.
    f.detach_sm(sm);
    assert_eq!(f.mads_in_flight(), 0);
    assert!(f.stats().faults.garbled > 100);
    assert!(f.stats().faults.corrupted > 50);
}

//! Property tests: the reader never panics, whatever the input; every generated fabric
//! round-trips through both writers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabric_sim::topo::Topology;
use proptest::prelude::*;

const SAMPLE: &str = include_str!("../testdata/ibnetdiscover/attrs.sm.txt");
const SAMPLE_NET: &str = include_str!("../testdata/net.attrs");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reader_never_panics_on_garbage(s in "\\PC{0,400}") {
        let _ = Topology::parse_net(&s);
    }

    #[test]
    fn reader_never_panics_on_mutated_files(
        which in any::<bool>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), "[\\[\\]\"#=() 0-9a-zA-Z\\n]{0,6}"), 1..6),
    ) {
        let mut text = if which { SAMPLE } else { SAMPLE_NET }.to_string();
        for (at, ins) in edits {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            // Replace up to 3 bytes at `i` with `ins`.
            let mut end = (i + 3).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.replace_range(i..end, &ins);
        }
        if let Ok(t) = Topology::parse_net(&text) {
            // Whatever parsed is a valid fabric and writes back out.
            t.validate().unwrap();
            let back = Topology::parse_net(&t.to_net()).unwrap();
            prop_assert!(back == t);
        } else {
            let e = Topology::parse_net(&text).unwrap_err();
            prop_assert!(e.line >= 1 && e.line <= text.lines().count().max(1));
        }
    }

    #[test]
    fn random_fabrics_round_trip(
        switches in 1u64..12,
        cas in 0u64..16,
        extra in 0u64..8,
        seed in any::<u64>(),
        rate in prop::sample::select(vec!["4xSDR", "1xDDR", "12xQDR", "4xFDR10", "8xEDR", "2xHDR", "4xNDR"]),
    ) {
        let spec = format!("random:{switches},{cas},{extra},{seed},ports=12,rate={rate}");
        let Ok(t) = Topology::generate(&spec) else {
            // Only legitimate refusals: not enough free ports.
            return Ok(());
        };
        let net = Topology::parse_net(&t.to_net()).unwrap();
        prop_assert!(net == t, "{}: {:?}", spec, t.diff(&net));
        for full in [false, true] {
            let disc = Topology::parse_ibnetdiscover(&t.to_ibnetdiscover(full)).unwrap();
            prop_assert_eq!(t.diff(&disc), None, "{}", spec);
        }
    }
}

//! Replays the fuzz seed corpus (`mad/fuzz/corpus/parse_mad/*.bin`, every SMP captured from
//! ibsim by `mad/testdata/capture.sh`) through the same oracle as the `parse_mad` fuzz target,
//! so CI exercises it without cargo-fuzz: every captured SMP parses, round-trips through
//! `emit`, and pretty-prints; every data-carrying response decodes its attribute.

use std::path::Path;

use ibmad::pretty::{method_carries_data, pretty_smp};
use ibmad::{SmpAttr, SmpAttrId, SmpPacket, SmpRepr};

#[test]
fn seed_corpus_parses_round_trips_and_prints() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/parse_mad");
    let mut n = 0;
    let mut decoded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 256, "{}", path.display());
        let text = pretty_smp(&data).to_string();
        assert!(text.starts_with("Subn"), "{}: {text}", path.display());
        let pkt = SmpPacket::new_checked(&data[..]).unwrap();
        let repr = SmpRepr::parse(&pkt).unwrap();
        let mut out = [0u8; 256];
        repr.emit_bytes(&mut out).unwrap();
        assert_eq!(SmpRepr::parse_bytes(&out), Ok(repr));
        let known = [
            SmpAttrId::NODE_DESC,
            SmpAttrId::NODE_INFO,
            SmpAttrId::SWITCH_INFO,
            SmpAttrId::GUID_INFO,
            SmpAttrId::PORT_INFO,
            SmpAttrId::P_KEY_TABLE,
            SmpAttrId::SL_TO_VL_TABLE,
            SmpAttrId::VL_ARB_TABLE,
            SmpAttrId::LINEAR_FT,
            SmpAttrId::MULTICAST_FT,
            SmpAttrId::SM_INFO,
        ];
        if method_carries_data(repr.method) && known.contains(&repr.attr_id) {
            let attr = SmpAttr::parse(repr.attr_id, &repr.data)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!text.contains("not decoded"), "{text}");
            let mut buf = [0u8; 64];
            attr.emit(&mut buf).unwrap();
            assert_eq!(SmpAttr::parse(repr.attr_id, &buf).unwrap(), attr);
            decoded += 1;
        }
        n += 1;
    }
    assert!(n >= 100, "only {n} seeds");
    assert!(decoded >= 50, "only {decoded} attributes decoded");
}

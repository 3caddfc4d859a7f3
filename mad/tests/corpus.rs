//! Replays the fuzz seed corpus (`mad/fuzz/corpus/parse_mad/*.bin`, every MAD captured from
//! ibsim by `mad/testdata/capture.sh`) through the same oracle as the `parse_mad` fuzz target,
//! so CI exercises it without cargo-fuzz: every captured SMP parses, round-trips through
//! `emit`, and pretty-prints; every data-carrying response decodes its attribute. The PerfMgt
//! and SubnAdm MADs (perfquery against ibsim's PMA, saquery against OpenSM's SA) do the same
//! through the GMP layouts.

use std::path::Path;

use ibmad::pretty::{method_carries_data, pretty_mad, pretty_smp};
use ibmad::{
    GmpAttrRepr, Method, MgmtClass, ParseError, PerfAttr, PerfRepr, SaPacket, SaRepr, SmpAttr,
    SmpAttrId, SmpPacket, SmpRepr,
};

#[test]
fn seed_corpus_parses_round_trips_and_prints() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/parse_mad");
    let mut n = 0;
    let mut decoded = 0;
    let mut gmps = 0;
    let mut gmp_decoded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 256, "{}", path.display());
        if !MgmtClass(data[1]).is_smp() {
            gmps += 1;
            gmp_decoded += check_gmp(&path, &data);
            continue;
        }
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
    assert!(gmps >= 20, "only {gmps} GMP seeds");
    assert!(
        gmp_decoded >= 6,
        "only {gmp_decoded} GMP attributes decoded"
    );
}

/// One captured GMP through the oracle; returns 1 if an attribute was decoded.
#[allow(clippy::unwrap_used)] // a test helper
fn check_gmp(path: &Path, data: &[u8]) -> usize {
    let text = pretty_mad(data).to_string();
    assert!(!text.contains("truncated"), "{}: {text}", path.display());
    match MgmtClass(data[1]) {
        MgmtClass::PERF_MGMT => {
            assert!(text.starts_with("Perf"), "{}: {text}", path.display());
            let r =
                PerfRepr::parse_bytes(data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut out = [0u8; 256];
            r.emit_bytes(&mut out).unwrap();
            assert_eq!(PerfRepr::parse_bytes(&out), Ok(r));
            if r.header.method == Method::GET_RESP && r.header.status.0 == 0 {
                let a = PerfAttr::parse(r.attr_id(), &r.data).unwrap();
                let mut buf = [0u8; 192];
                a.emit(&mut buf).unwrap();
                assert_eq!(PerfAttr::parse(r.attr_id(), &buf).unwrap(), a);
                assert!(!text.contains("not decoded"), "{text}");
                return 1;
            }
            0
        }
        MgmtClass::SUBN_ADM => {
            assert!(text.starts_with("SubnAdm"), "{}: {text}", path.display());
            let pkt = SaPacket::new_checked(data).unwrap();
            match SaRepr::parse(&pkt) {
                Ok(r) => {
                    let mut out = data.to_vec();
                    r.emit(&mut out).unwrap();
                    assert_eq!(SaRepr::parse_bytes(&out), Ok(r));
                    if r.header.method == Method::GET_RESP && r.header.attr_id == 1 {
                        ibmad::ClassPortInfoRepr::parse(pkt.data()).unwrap();
                        return 1;
                    }
                    0
                }
                // OpenSM's table answers under ibsim's shim carry RMPPFlags.Active without the
                // rest of an RMPP header (the kernel's RMPP sender would have filled it in).
                Err(e) => {
                    assert_eq!(
                        e,
                        ParseError::BadRmppVersion { got: 0 },
                        "{}",
                        path.display()
                    );
                    assert_eq!(r_method(data), Method::GET_TABLE_RESP);
                    0
                }
            }
        }
        c => panic!("{}: unexpected class {c:?}", path.display()),
    }
}

fn r_method(data: &[u8]) -> Method {
    Method(data[3])
}

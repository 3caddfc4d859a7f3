//! Parse any bytes as a MAD and pretty-print them (STYLE P13/P14): the printer must not panic,
//! and whatever parses must survive `emit` → `parse` unchanged (the invariant oracle). SMPs go
//! through the SMP layouts; PerfMgt and SubnAdm MADs through the GMP ones (common header, RMPP
//! and SA headers, ClassPortInfo, PortCounters, PortCountersExtended).
//!
//! Seed corpus: `corpus/parse_mad/*.bin`, every MAD captured from ibsim by
//! `mad/testdata/capture.sh`. Run: `cd mad/fuzz && cargo +nightly fuzz run parse_mad`.
#![no_main]

use ibmad::pretty::{pretty_mad, pretty_smp};
use ibmad::{
    GmpRepr, PerfAttr, PerfRepr, PmaAttrId, RmppRepr, SaRepr, SmpAttr, SmpPacket, SmpRepr,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pretty_smp(data).to_string();
    let _ = pretty_mad(data).to_string();
    gmp(data);
    let Ok(pkt) = SmpPacket::new_checked(data) else {
        return;
    };
    let _ = format!("{pkt} {pkt:#}");
    let Ok(repr) = SmpRepr::parse(&pkt) else {
        return;
    };
    let mut out = [0u8; 256];
    assert!(repr.emit_bytes(&mut out).is_ok());
    assert_eq!(SmpRepr::parse_bytes(&out), Ok(repr));
    if let Ok(attr) = SmpAttr::parse(repr.attr_id, &repr.data) {
        let _ = attr.to_string();
        let mut buf = [0u8; 64];
        assert!(attr.emit(&mut buf).is_ok());
        assert_eq!(SmpAttr::parse(repr.attr_id, &buf).as_ref(), Ok(&attr));
    }
});

/// The GMP oracle: every layout that parses round-trips.
fn gmp(data: &[u8]) {
    if let Ok(h) = GmpRepr::parse_bytes(data) {
        let mut out = data.to_vec();
        assert!(h.emit_bytes(&mut out).is_ok());
        assert_eq!(GmpRepr::parse_bytes(&out), Ok(h));
        let _ = h.to_string();
    }
    if let Some(rmpp) = data.get(24..) {
        if let Ok(r) = RmppRepr::parse(rmpp) {
            let mut out = [0u8; 12];
            assert!(r.emit(&mut out).is_ok());
            assert_eq!(RmppRepr::parse(&out), Ok(r));
        }
    }
    if let Ok(sa) = SaRepr::parse_bytes(data) {
        let mut out = data.to_vec();
        assert!(sa.emit(&mut out).is_ok());
        assert_eq!(SaRepr::parse_bytes(&out), Ok(sa));
        let _ = sa.to_string();
    }
    if let Ok(p) = PerfRepr::parse_bytes(data) {
        let mut out = [0u8; 256];
        assert!(p.emit_bytes(&mut out).is_ok());
        assert_eq!(PerfRepr::parse_bytes(&out), Ok(p));
        let _ = format!("{p:#}");
        for id in [p.attr_id(), PmaAttrId::CLASS_PORT_INFO, PmaAttrId::PORT_COUNTERS, PmaAttrId::PORT_COUNTERS_EXT] {
            if let Ok(a) = PerfAttr::parse(id, &p.data) {
                let mut buf = [0u8; 192];
                assert!(a.emit(&mut buf).is_ok());
                assert_eq!(PerfAttr::parse(id, &buf).as_ref(), Ok(&a));
            }
        }
    }
}

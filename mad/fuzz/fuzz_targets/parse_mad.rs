//! Parse any bytes as a MAD and pretty-print them (STYLE P13/P14): the printer must not panic,
//! and whatever parses must survive `emit` → `parse` unchanged (the invariant oracle).
//!
//! Seed corpus: `corpus/parse_mad/*.bin`, every SMP captured from ibsim by
//! `mad/testdata/capture.sh`. Run: `cd mad/fuzz && cargo +nightly fuzz run parse_mad`.
#![no_main]

use ibmad::pretty::pretty_smp;
use ibmad::{SmpAttr, SmpPacket, SmpRepr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pretty_smp(data).to_string();
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

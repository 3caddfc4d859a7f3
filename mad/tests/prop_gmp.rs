//! Property tests (STYLE P13) for the GMP layouts: `emit(parse(x)) == canonical(x)` for the
//! common header, the RMPP header, the SA headers and the PerfMgt attributes, and no panic
//! from parsing or printing arbitrary bytes as a GMP.
//!
//! `canonical(x)` is `x` with its reserved bits cleared, written out here from the layout
//! tables in the module docs (`mad/src/{gmp,rmpp,sa,class_port_info}.rs`, `mad/src/perf/`),
//! independently of the library.

use ibmad::perf::{PortCountersExtRepr, PortCountersRepr};
use ibmad::pretty::pretty_mad;
use ibmad::rmpp::RMPP_HEADER_LEN;
use ibmad::{
    ClassPortInfoRepr, GmpAttrRepr, GmpRepr, PerfAttr, PerfRepr, PmaAttrId, RmppRepr, SaRepr,
};
use proptest::prelude::*;

fn round_trip<A: GmpAttrRepr + PartialEq + std::fmt::Debug + std::fmt::Display>(
    x: &[u8],
    canonical: &[u8],
) -> Result<(), TestCaseError> {
    let r = A::parse(x).map_err(|e| TestCaseError::fail(format!("parse: {e}")))?;
    let n = r.buffer_len();
    let mut out = vec![0u8; n];
    r.emit(&mut out)
        .map_err(|e| TestCaseError::fail(format!("emit: {e}")))?;
    prop_assert_eq!(&out[..], &canonical[..n]);
    prop_assert!(r.emit(&mut out[..n - 1]).is_err());
    prop_assert_eq!(A::parse(&out).ok(), Some(r));
    Ok(())
}

fn mad() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 256)
}

/// (class, class version, methods) of the classes the GMP header decodes.
fn class_and_method() -> impl Strategy<Value = (u8, u8, u8)> {
    prop_oneof![
        prop::sample::select(vec![
            0x01u8, 0x02, 0x81, 0x06, 0x86, 0x12, 0x92, 0x13, 0x93, 0x14, 0x94, 0x15, 0x95
        ])
        .prop_map(|m| (0x03u8, 2u8, m)),
        prop::sample::select(vec![0x01u8, 0x02, 0x81]).prop_map(|m| (0x04u8, 1u8, m)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn gmp_header_round_trips(mut x in mad(), (class, ver, method) in class_and_method()) {
        x[0] = 1;
        x[1] = class;
        x[2] = ver;
        x[3] = method;
        let r = GmpRepr::parse_bytes(&x).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut out = [0u8; 24];
        r.emit_bytes(&mut out).unwrap();
        let mut canonical = x.clone();
        canonical[18..20].fill(0);
        prop_assert_eq!(&out[..], &canonical[..24]);
        prop_assert_eq!(GmpRepr::parse_bytes(&[&out[..], &x[24..]].concat()).ok(), Some(r));
    }

    #[test]
    fn rmpp_round_trips(mut x in prop::array::uniform12(any::<u8>()), t in 1u8..=4) {
        x[0] = 1;
        x[1] = t;
        x[2] |= 1; // Active
        let r = RmppRepr::parse(&x).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut out = [0u8; RMPP_HEADER_LEN];
        r.emit(&mut out).unwrap();
        let mut canonical = x;
        match t {
            1 => canonical[3] = 0,                       // DATA: status Normal
            2 => { canonical[2] = (x[2] & 0xF8) | 1; canonical[3] = 0 } // ACK: no First/Last
            _ => { canonical[2] = (x[2] & 0xF8) | 1; canonical[4..].fill(0) } // STOP/ABORT
        }
        prop_assert_eq!(out, canonical);
        prop_assert_eq!(RmppRepr::parse(&out), Ok(r));
    }

    #[test]
    fn rmpp_inactive_is_all_zero(mut x in prop::array::uniform12(any::<u8>())) {
        x[2] &= !1;
        prop_assert_eq!(RmppRepr::parse(&x), Ok(RmppRepr::Inactive));
        let mut out = [0xFFu8; RMPP_HEADER_LEN];
        RmppRepr::Inactive.emit(&mut out).unwrap();
        prop_assert_eq!(out, [0u8; RMPP_HEADER_LEN]);
    }

    #[test]
    fn sa_headers_round_trip(mut x in mad(), m in prop::sample::select(vec![0x01u8, 0x12, 0x92, 0x15])) {
        x[0] = 1;
        x[1] = 0x03;
        x[2] = 2;
        x[3] = m;
        x[26] &= !1; // RMPP inactive: its bytes are not part of the value
        let r = SaRepr::parse_bytes(&x).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut out = x.clone();
        r.emit(&mut out).unwrap();
        let mut canonical = x.clone();
        canonical[18..20].fill(0);
        canonical[24..36].fill(0);
        canonical[46..48].fill(0);
        prop_assert_eq!(&out[..], &canonical[..]);
        prop_assert_eq!(SaRepr::parse_bytes(&out).ok(), Some(r));
    }

    #[test]
    fn class_port_info_round_trips(x in prop::collection::vec(any::<u8>(), 72)) {
        let mut canonical = x.clone();
        canonical[32] = 0; // RedirectQP bits 31..24 reserved
        round_trip::<ClassPortInfoRepr>(&x, &canonical)?;
    }

    #[test]
    fn port_counters_round_trip(x in prop::collection::vec(any::<u8>(), 44)) {
        let mut canonical = x.clone();
        canonical[0] = 0;
        round_trip::<PortCountersRepr>(&x, &canonical)?;
    }

    #[test]
    fn port_counters_ext_round_trip(x in prop::collection::vec(any::<u8>(), 184)) {
        let mut canonical = x.clone();
        canonical[0] = 0;
        round_trip::<PortCountersExtRepr>(&x, &canonical)?;
    }

    /// Saturation never exceeds a field's width and is the identity below it.
    #[test]
    fn saturating_is_min(v in any::<u64>()) {
        let c = PortCountersExtRepr { symbol_error_counter: v, local_link_integrity_errors: v,
                                      port_xmit_data: v, link_downed_counter: v,
                                      ..PortCountersExtRepr::default() };
        let pc = PortCountersRepr::saturating(&c);
        prop_assert_eq!(u64::from(pc.symbol_error_counter), v.min(0xFFFF));
        prop_assert_eq!(u64::from(pc.local_link_integrity_errors), v.min(0xF));
        prop_assert_eq!(u64::from(pc.port_xmit_data), v.min(0xFFFF_FFFF));
        prop_assert_eq!(u64::from(pc.link_downed_counter), v.min(0xFF));
    }

    /// Nothing panics on arbitrary bytes of any length, and GMP-shaped bytes print by class.
    #[test]
    fn arbitrary_bytes_never_panic(
        x in prop::collection::vec(any::<u8>(), 0..600),
        class in prop::sample::select(vec![0x03u8, 0x04, 0x07, 0x81]),
        attr in prop::sample::select(vec![0x01u16, 0x12, 0x1D, 0x10, 0x35]),
    ) {
        let _ = pretty_mad(&x).to_string();
        let _ = GmpRepr::parse_bytes(&x);
        let _ = SaRepr::parse_bytes(&x);
        let _ = PerfRepr::parse_bytes(&x).map(|r| format!("{r:#}"));
        for a in [PmaAttrId::CLASS_PORT_INFO, PmaAttrId::PORT_COUNTERS, PmaAttrId::PORT_COUNTERS_EXT, PmaAttrId(attr)] {
            let _ = PerfAttr::parse(a, &x).map(|v| v.to_string());
        }
        let mut m = x.clone();
        m.resize(m.len().max(256), 0);
        m[0] = 1;
        m[1] = class;
        m[16..18].copy_from_slice(&attr.to_be_bytes());
        let text = pretty_mad(&m).to_string();
        let prefix = match class { 0x03 => "SubnAdm", 0x04 => "Perf", 0x81 => "Subn", _ => "class 0x07" };
        prop_assert!(text.starts_with(prefix), "{}", text);
    }
}

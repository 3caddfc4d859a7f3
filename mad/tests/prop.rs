//! Property tests (STYLE P13): `emit(parse(x)) == canonical(x)` for the SMP header and every
//! attribute `Repr`, and no panic from parsing or printing arbitrary bytes.
//!
//! `canonical(x)` is `x` with the reserved bits cleared, written out here independently of the
//! library from the layouts in docs/spec-map.md / the attribute module docs.

use ibmad::attr::{
    GuidInfoRepr, LftBlockRepr, MftBlockRepr, NodeDescRepr, NodeInfoRepr, NoticeRepr,
    PKeyTableRepr, PortInfoRepr, SlToVlRepr, SmInfoRepr, SwitchInfoRepr, VlArbTableRepr,
};
use ibmad::pretty::pretty_smp;
use ibmad::{AttrRepr, SmpAttr, SmpAttrId, SmpPacket, SmpRepr};
use proptest::prelude::*;

/// Parses `x`, emits into a zeroed buffer, and checks the bytes equal `canonical` (compared over
/// `buffer_len`), and that parsing the output gives the same value.
fn round_trip<A: AttrRepr + Clone + PartialEq + std::fmt::Debug + std::fmt::Display>(
    x: &[u8],
    canonical: &[u8],
) -> Result<(), TestCaseError> {
    let r = A::parse(x).map_err(|e| TestCaseError::fail(format!("parse: {e}")))?;
    let n = r.buffer_len();
    let mut out = vec![0u8; n];
    r.emit(&mut out)
        .map_err(|e| TestCaseError::fail(format!("emit: {e}")))?;
    prop_assert_eq!(&out[..], &canonical[..n]);
    prop_assert_eq!(A::parse(&out).ok(), Some(r.clone()));
    let _ = r.to_string();
    Ok(())
}

fn bytes64() -> impl Strategy<Value = [u8; 64]> {
    prop::array::uniform32(any::<u8>()).prop_flat_map(|a| {
        prop::array::uniform32(any::<u8>()).prop_map(move |b| {
            let mut out = [0u8; 64];
            out[..32].copy_from_slice(&a);
            out[32..].copy_from_slice(&b);
            out
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn node_info_round_trips(mut x in bytes64()) {
        // Make the validated fields valid: NodeType 1..=3, NumPorts >= 1, LocalPortNum <= NumPorts.
        x[2] = 1 + x[2] % 3;
        x[3] = x[3].max(1);
        x[36] %= x[3].saturating_add(1).max(1);
        round_trip::<NodeInfoRepr>(&x, &x)?;
    }

    #[test]
    fn node_info_rejects_reserved_node_types(mut x in bytes64(), t in 4u8..=255) {
        x[2] = t;
        prop_assert!(NodeInfoRepr::parse(&x).is_err());
    }

    #[test]
    fn switch_info_round_trips(x in bytes64()) {
        let mut c = x;
        c[16] &= 0xF8;
        c[17] = 0;
        c[20..].fill(0);
        round_trip::<SwitchInfoRepr>(&x, &c)?;
    }

    #[test]
    fn port_info_round_trips(mut x in bytes64()) {
        // Valid encodings: PortState <= 4, PhysState <= 7, LinkDownDefaultState <= 2,
        // NeighborMTU/MTUCap/VLCap/OperationalVLs <= 5.
        let nib = |v: u8, max: u8| v % (max + 1);
        x[32] = (x[32] & 0xF0) | nib(x[32] & 0x0F, 4);
        x[33] = (nib(x[33] >> 4, 7) << 4) | nib(x[33] & 0x0F, 2);
        x[36] = (nib(x[36] >> 4, 5) << 4) | (x[36] & 0x0F);
        x[37] = (nib(x[37] >> 4, 5) << 4) | (x[37] & 0x0F);
        x[41] = (x[41] & 0xF0) | nib(x[41] & 0x0F, 5);
        x[43] = (nib(x[43] >> 4, 5) << 4) | (x[43] & 0x0F);
        let mut c = x;
        c[34] &= 0xC7;
        c[52] &= 0x1F;
        c[56] = 0;
        c[63] &= 0x1F;
        round_trip::<PortInfoRepr>(&x, &c)?;
    }

    #[test]
    fn sm_info_round_trips(mut x in bytes64()) {
        x[20] = (x[20] & 0xF0) | (x[20] & 0x03);
        let mut c = x;
        c[21..].fill(0);
        round_trip::<SmInfoRepr>(&x, &c)?;
    }

    #[test]
    fn notice_round_trips(x in bytes64()) {
        round_trip::<NoticeRepr>(&x, &x)?;
    }

    #[test]
    fn node_desc_round_trips(s in "[a-zA-Z0-9 _.-]{0,64}", tail in bytes64()) {
        let mut x = tail;
        x[..s.len()].copy_from_slice(s.as_bytes());
        if s.len() < 64 {
            x[s.len()] = 0;
        }
        let mut c = [0u8; 64];
        c[..s.len()].copy_from_slice(s.as_bytes());
        round_trip::<NodeDescRepr>(&x, &c)?;
    }

    #[test]
    fn tables_round_trip(x in bytes64()) {
        round_trip::<GuidInfoRepr>(&x, &x)?;
        round_trip::<PKeyTableRepr>(&x, &x)?;
        round_trip::<SlToVlRepr>(&x, &x)?;
        round_trip::<LftBlockRepr>(&x, &x)?;
        round_trip::<MftBlockRepr>(&x, &x)?;
        let mut c = x;
        for b in c.iter_mut().step_by(2) {
            *b &= 0x0F;
        }
        round_trip::<VlArbTableRepr>(&x, &c)?;
    }

    #[test]
    fn smp_header_round_trips(
        mut x in prop::collection::vec(any::<u8>(), 256),
        dr in any::<bool>(),
        method in prop::sample::select(vec![0x01u8, 0x02, 0x81, 0x05, 0x07]),
        hop_cnt in 0u8..=63,
        hop_ptr_off in 0u8..=64,
    ) {
        x[0] = 1;
        x[1] = if dr { 0x81 } else { 0x01 };
        x[2] = 1;
        x[3] = method;
        x[6] = hop_ptr_off % (hop_cnt + 2);
        x[7] = hop_cnt;
        let r = SmpRepr::parse_bytes(&x).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut out = [0u8; 256];
        r.emit_bytes(&mut out).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut c = x.clone();
        c[18..20].fill(0);
        if dr {
            c[36..64].fill(0);
            let n = usize::from(hop_cnt);
            c[128] = 0;
            c[129 + n..192].fill(0);
            c[192] = 0;
            c[193 + n..256].fill(0);
        } else {
            c[6..8].fill(0);
            c[32..64].fill(0);
            c[128..].fill(0);
        }
        prop_assert_eq!(&out[..], &c[..]);
        prop_assert_eq!(SmpRepr::parse_bytes(&out), Ok(r));
        prop_assert_eq!(r.to_string(), SmpPacket::new_checked(&out[..]).unwrap().to_string());
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        x in prop::collection::vec(any::<u8>(), 0..512),
        id in any::<u16>(),
    ) {
        let _ = pretty_smp(&x).to_string();
        if let Ok(p) = SmpPacket::new_checked(&x[..]) {
            let _ = p.to_string();
            let _ = format!("{p:#}");
            if let Ok(r) = SmpRepr::parse(&p) {
                let _ = r.to_string();
                let _ = SmpAttr::parse(r.attr_id, &r.data).map(|a| a.to_string());
            }
        }
        let _ = SmpRepr::parse_bytes(&x);
        for a in [
            SmpAttrId(id), SmpAttrId::NOTICE, SmpAttrId::NODE_DESC, SmpAttrId::NODE_INFO,
            SmpAttrId::SWITCH_INFO, SmpAttrId::GUID_INFO, SmpAttrId::PORT_INFO,
            SmpAttrId::P_KEY_TABLE, SmpAttrId::SL_TO_VL_TABLE, SmpAttrId::VL_ARB_TABLE,
            SmpAttrId::LINEAR_FT, SmpAttrId::MULTICAST_FT, SmpAttrId::SM_INFO,
        ] {
            if let Ok(v) = SmpAttr::parse(a, &x) {
                let _ = v.to_string();
                let mut out = vec![0u8; v.buffer_len()];
                prop_assert!(v.emit(&mut out).is_ok());
                prop_assert!(v.emit(&mut out[..v.buffer_len() - 1]).is_err());
            }
        }
    }

    /// Every SMP pretty-prints, whatever its header says; DR/LID/valid or not.
    #[test]
    fn pretty_prints_smp_shaped_bytes(
        mut x in prop::collection::vec(any::<u8>(), 256),
        attr in prop::sample::select(vec![0x02u16, 0x10, 0x11, 0x12, 0x14, 0x15, 0x16,
                                          0x17, 0x18, 0x19, 0x1B, 0x20, 0x1A, 0xFF90]),
        method in prop::sample::select(vec![0x01u8, 0x02, 0x81, 0x05, 0x07, 0x06]),
    ) {
        x[0] = 1;
        x[1] = if x[1] & 1 == 0 { 0x81 } else { 0x01 };
        x[2] = 1;
        x[3] = method;
        x[16..18].copy_from_slice(&attr.to_be_bytes());
        let text = pretty_smp(&x).to_string();
        prop_assert!(text.starts_with("Subn"), "{}", text);
    }
}

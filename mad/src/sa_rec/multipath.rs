//! MultiPathRecord (SA attribute 0x003A) — IBA vol1 §15.2.5.20: the query of SubnAdmGetMulti
//! (method 0x14), answered with PathRecords (SubnAdmGetMultiResp 0x94, attribute PathRecord,
//! o15-0.2.7). A 24-byte header, then SGIDCount source GIDs and DGIDCount destination GIDs
//! (16 bytes each; 11 fit in one MAD, more need an RMPP request).
//!
//! | bytes | field |
//! |---|---|
//! | 0..3 | RawTraffic (0[7]), Reserved (0[6..4]), FlowLabel (20 bits, 0[3..0]..2), HopLimit (3) |
//! | 4 | TClass |
//! | 5 | Reversible (5[7]), NumbPath (5[6..0]) |
//! | 6..7 | P_Key |
//! | 8..9 | QoSClass (12 bits, 8..9[7..4]), SL (9[3..0]) |
//! | 10 | MTUSelector (10[7..6]), MTU (10[5..0]) |
//! | 11 | RateSelector (11[7..6]), Rate (11[5..0]) |
//! | 12 | PacketLifeTimeSelector (12[7..6]), PacketLifeTime (12[5..0]) |
//! | 13 | ServiceID8MSB |
//! | 14 | IndependenceSelector (14[7..6]), Reserved (14[5..0]) |
//! | 15 | SGIDCount |
//! | 16 | DGIDCount |
//! | 17..23 | ServiceID56LSB |
//! | 24.. | SDGID: the source GIDs, then the destination GIDs |
//!
//! View of the header: [`MultiPathRecordHeader`]; validated value with its GID lists:
//! [`MultiPathRecordRepr`]. [`comp`] holds the ComponentMask bits (OpenSM `IB_MPR_COMPMASK_*`);
//! [`MultiPathRecordRepr::path_query`] turns the components a MultiPathRecord shares with a
//! PathRecord into a PathRecord query, so the SA answers both with the same rules.

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::path::{self, PathRecord, PathRecordRepr};
use crate::codes::{MgmtClass, SaAttrId};
use crate::error::{check_len, Layer, LenError};
use crate::types::Gid;

/// Size of the header before the GIDs.
pub const MULTI_PATH_HEADER_LEN: usize = 24;
/// Bytes of one GID of the SDGID list.
pub const GID_LEN: usize = 16;
/// GIDs that fit in one 256-byte SA MAD (200 data bytes).
pub const GIDS_PER_MAD: usize = (200 - MULTI_PATH_HEADER_LEN) / GID_LEN;

const LAYER: Layer = Layer::GmpAttr {
    class: MgmtClass::SUBN_ADM,
    attr: SaAttrId::MULTI_PATH_RECORD.0,
};

/// The fixed part of a MultiPathRecord, 24 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct MultiPathRecordHeader {
    /// RawTraffic (bit 31) / Reserved (30..28) / FlowLabel (27..8) / HopLimit (7..0) — bytes 0..3.
    pub raw_flow_hop: U32,
    /// TClass — byte 4.
    pub tclass: u8,
    /// Reversible (7) / NumbPath (6..0) — byte 5.
    pub b5: u8,
    /// P_Key — bytes 6..7.
    pub pkey: U16,
    /// QoSClass (15..4) / SL (3..0) — bytes 8..9.
    pub qos_class_sl: U16,
    /// MTUSelector (7..6) / MTU (5..0) — byte 10.
    pub b10: u8,
    /// RateSelector (7..6) / Rate (5..0) — byte 11.
    pub b11: u8,
    /// PacketLifeTimeSelector (7..6) / PacketLifeTime (5..0) — byte 12.
    pub b12: u8,
    /// ServiceID8MSB — byte 13.
    pub service_id_msb: u8,
    /// IndependenceSelector (7..6) / Reserved (5..0) — byte 14.
    pub b14: u8,
    /// SGIDCount — byte 15.
    pub sgid_count: u8,
    /// DGIDCount — byte 16.
    pub dgid_count: u8,
    /// ServiceID56LSB — bytes 17..23.
    pub service_id_lsb: [u8; 7],
}
const _: () = assert!(size_of::<MultiPathRecordHeader>() == MULTI_PATH_HEADER_LEN);
const _: () = assert!(core::mem::offset_of!(MultiPathRecordHeader, tclass) == 4);
const _: () = assert!(core::mem::offset_of!(MultiPathRecordHeader, pkey) == 6);
const _: () = assert!(core::mem::offset_of!(MultiPathRecordHeader, qos_class_sl) == 8);
const _: () = assert!(core::mem::offset_of!(MultiPathRecordHeader, b10) == 10);
const _: () = assert!(core::mem::offset_of!(MultiPathRecordHeader, service_id_msb) == 13);
const _: () = assert!(core::mem::offset_of!(MultiPathRecordHeader, sgid_count) == 15);
const _: () = assert!(core::mem::offset_of!(MultiPathRecordHeader, service_id_lsb) == 17);
const _: () = assert!(GIDS_PER_MAD == 11);

crate::sub_byte_fields!(MultiPathRecordHeader {
    /// Reversible — byte 5, bit 7.
    reversible, set_reversible: b5[7..7];
    /// NumbPath — byte 5, bits 6..0.
    numb_path, set_numb_path: b5[6..0];
    /// MTUSelector — byte 10, bits 7..6.
    mtu_selector, set_mtu_selector: b10[7..6];
    /// MTU — byte 10, bits 5..0.
    mtu, set_mtu: b10[5..0];
    /// RateSelector — byte 11, bits 7..6.
    rate_selector, set_rate_selector: b11[7..6];
    /// Rate — byte 11, bits 5..0.
    rate, set_rate: b11[5..0];
    /// PacketLifeTimeSelector — byte 12, bits 7..6.
    packet_life_selector, set_packet_life_selector: b12[7..6];
    /// PacketLifeTime — byte 12, bits 5..0.
    packet_life, set_packet_life: b12[5..0];
    /// IndependenceSelector — byte 14, bits 7..6.
    independence, set_independence: b14[7..6];
});

/// ComponentMask bits of a MultiPathRecord query, in IBA order (OpenSM `IB_MPR_COMPMASK_*`).
pub mod comp {
    /// RawTraffic (bit 0).
    pub const RAW_TRAFFIC: u64 = 1 << 0;
    /// Reserved (bit 1).
    pub const RESERVED0: u64 = 1 << 1;
    /// FlowLabel (bit 2).
    pub const FLOW_LABEL: u64 = 1 << 2;
    /// HopLimit (bit 3).
    pub const HOP_LIMIT: u64 = 1 << 3;
    /// TClass (bit 4).
    pub const TCLASS: u64 = 1 << 4;
    /// Reversible (bit 5).
    pub const REVERSIBLE: u64 = 1 << 5;
    /// NumbPath (bit 6).
    pub const NUMB_PATH: u64 = 1 << 6;
    /// P_Key (bit 7).
    pub const PKEY: u64 = 1 << 7;
    /// QoSClass (bit 8).
    pub const QOS_CLASS: u64 = 1 << 8;
    /// SL (bit 9).
    pub const SL: u64 = 1 << 9;
    /// MTUSelector (bit 10).
    pub const MTU_SELECTOR: u64 = 1 << 10;
    /// MTU (bit 11).
    pub const MTU: u64 = 1 << 11;
    /// RateSelector (bit 12).
    pub const RATE_SELECTOR: u64 = 1 << 12;
    /// Rate (bit 13).
    pub const RATE: u64 = 1 << 13;
    /// PacketLifeTimeSelector (bit 14).
    pub const PACKET_LIFE_SELECTOR: u64 = 1 << 14;
    /// PacketLifeTime (bit 15).
    pub const PACKET_LIFE: u64 = 1 << 15;
    /// ServiceID8MSB (bit 16).
    pub const SERVICE_ID_MSB: u64 = 1 << 16;
    /// IndependenceSelector (bit 17).
    pub const INDEPENDENCE: u64 = 1 << 17;
    /// Reserved (bit 18).
    pub const RESERVED1: u64 = 1 << 18;
    /// SGIDCount (bit 19).
    pub const SGID_COUNT: u64 = 1 << 19;
    /// DGIDCount (bit 20).
    pub const DGID_COUNT: u64 = 1 << 20;
    /// ServiceID56LSB (bit 21).
    pub const SERVICE_ID_LSB: u64 = 1 << 21;
    /// Both halves of ServiceID.
    pub const SERVICE_ID: u64 = SERVICE_ID_MSB | SERVICE_ID_LSB;
}

/// The components a MultiPathRecord shares with a PathRecord: (MultiPathRecord bit,
/// PathRecord bit).
const SHARED: [(u64, u64); 17] = [
    (comp::RAW_TRAFFIC, path::comp::RAW_TRAFFIC),
    (comp::FLOW_LABEL, path::comp::FLOW_LABEL),
    (comp::HOP_LIMIT, path::comp::HOP_LIMIT),
    (comp::TCLASS, path::comp::TCLASS),
    (comp::REVERSIBLE, path::comp::REVERSIBLE),
    (comp::NUMB_PATH, path::comp::NUMB_PATH),
    (comp::PKEY, path::comp::PKEY),
    (comp::QOS_CLASS, path::comp::QOS_CLASS),
    (comp::SL, path::comp::SL),
    (comp::MTU_SELECTOR, path::comp::MTU_SELECTOR),
    (comp::MTU, path::comp::MTU),
    (comp::RATE_SELECTOR, path::comp::RATE_SELECTOR),
    (comp::RATE, path::comp::RATE),
    (comp::PACKET_LIFE_SELECTOR, path::comp::PACKET_LIFE_SELECTOR),
    (comp::PACKET_LIFE, path::comp::PACKET_LIFE),
    (comp::SERVICE_ID_MSB, path::comp::SERVICE_ID_MSB),
    (comp::SERVICE_ID_LSB, path::comp::SERVICE_ID_LSB),
];

/// MultiPathRecord, validated: the header's values and the GID lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MultiPathRecordRepr {
    /// The fields shared with a PathRecord (SGID, DGID, SLID, DLID and Preference unused).
    pub path: PathRecordRepr,
    /// IndependenceSelector (2 bits).
    pub independence: u8,
    /// The source GIDs (SGIDCount of them).
    pub sgids: Vec<Gid>,
    /// The destination GIDs (DGIDCount of them).
    pub dgids: Vec<Gid>,
}

impl MultiPathRecordRepr {
    /// Parses a MultiPathRecord: the header and the SGIDCount + DGIDCount GIDs after it.
    ///
    /// # Errors
    /// `data` is shorter than the header, or than the GIDs its counts announce.
    pub fn parse(data: &[u8]) -> Result<MultiPathRecordRepr, LenError> {
        check_len(data, MULTI_PATH_HEADER_LEN, LAYER, 0)?;
        let Ok((h, rest)) = MultiPathRecordHeader::ref_from_prefix(data) else {
            // Unreachable after check_len; reported as the same error.
            return Err(LenError {
                required: MULTI_PATH_HEADER_LEN,
                got: data.len(),
                layer: LAYER,
                offset: 0,
            });
        };
        let (ns, nd) = (usize::from(h.sgid_count), usize::from(h.dgid_count));
        check_len(data, MULTI_PATH_HEADER_LEN + (ns + nd) * GID_LEN, LAYER, 0)?;
        let mut gids = rest
            .chunks_exact(GID_LEN)
            .take(ns + nd)
            .map(|c| Gid(c.try_into().unwrap_or([0; 16])));
        let sgids = gids.by_ref().take(ns).collect();
        let dgids = gids.collect();
        let mut lsb = [0u8; 8];
        lsb[1..].copy_from_slice(&h.service_id_lsb);
        // The shared fields have the same encodings as in a PathRecord.
        let mut pr = PathRecord::new_zeroed();
        pr.service_id
            .set((u64::from(h.service_id_msb) << 56) | u64::from_be_bytes(lsb));
        pr.raw_flow_hop = h.raw_flow_hop;
        pr.tclass = h.tclass;
        pr.b49 = h.b5;
        pr.pkey = h.pkey;
        pr.qos_class_sl = h.qos_class_sl;
        (pr.b54, pr.b55, pr.b56) = (h.b10, h.b11, h.b12);
        Ok(MultiPathRecordRepr {
            path: PathRecordRepr::from_raw(&pr),
            independence: h.independence(),
            sgids,
            dgids,
        })
    }

    /// The header on the wire (counts from the GID lists, at most 255 each).
    #[must_use]
    pub fn header(&self) -> MultiPathRecordHeader {
        let p = self.path.to_raw();
        let mut h = MultiPathRecordHeader::new_zeroed();
        h.raw_flow_hop = p.raw_flow_hop;
        h.tclass = p.tclass;
        h.b5 = p.b49;
        h.pkey = p.pkey;
        h.qos_class_sl = p.qos_class_sl;
        (h.b10, h.b11, h.b12) = (p.b54, p.b55, p.b56);
        let sid = p.service_id.get();
        h.service_id_msb = (sid >> 56) as u8;
        h.service_id_lsb.copy_from_slice(&sid.to_be_bytes()[1..]);
        h.set_independence(self.independence);
        h.sgid_count = u8::try_from(self.sgids.len()).unwrap_or(u8::MAX);
        h.dgid_count = u8::try_from(self.dgids.len()).unwrap_or(u8::MAX);
        h
    }

    /// Bytes [`MultiPathRecordRepr::emit`] writes: the header and every GID.
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        MULTI_PATH_HEADER_LEN + (self.sgids.len() + self.dgids.len()) * GID_LEN
    }

    /// Writes the record (header, source GIDs, destination GIDs) into the front of `data`.
    ///
    /// # Errors
    /// `data` is shorter than [`MultiPathRecordRepr::buffer_len`].
    pub fn emit(&self, data: &mut [u8]) -> Result<(), LenError> {
        check_len(data, self.buffer_len(), LAYER, 0)?;
        let (head, rest) = data.split_at_mut(MULTI_PATH_HEADER_LEN);
        head.copy_from_slice(self.header().as_bytes());
        for (dst, g) in rest
            .chunks_exact_mut(GID_LEN)
            .zip(self.sgids.iter().chain(&self.dgids))
        {
            dst.copy_from_slice(&g.0);
        }
        Ok(())
    }

    /// The PathRecord query with the same constraints as this MultiPathRecord query under
    /// `mask` (MultiPathRecord bits): the shared components' values and PathRecord mask bits.
    /// SGID/DGID are left for the caller (one pair at a time).
    #[must_use]
    pub fn path_query(&self, mask: u64) -> (PathRecordRepr, u64) {
        let pr_mask = SHARED
            .iter()
            .filter(|(m, _)| mask & m != 0)
            .fold(0, |acc, (_, p)| acc | p);
        (self.path, pr_mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa_rec::path::Selector;
    use crate::types::PKey;
    use proptest::prelude::*;

    /// The MultiPathRecord `osmtest -f a` sends for its APM case (OpenSM 3.3.23
    /// osmtest_validate_against_db): SGIDCount 2, DGIDCount 2, NumbPath 2, the same port GID
    /// four times (port GUID 0x0001000000000001, default prefix).
    fn apm_bytes() -> Vec<u8> {
        let mut b = vec![0u8; 24];
        b[5] = 2; // NumbPath
        b[15] = 2;
        b[16] = 2;
        for _ in 0..4 {
            b.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
            b.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 1]);
        }
        b.resize(200, 0);
        b
    }

    #[test]
    fn parse_the_osmtest_apm_request() {
        let r = MultiPathRecordRepr::parse(&apm_bytes()).unwrap();
        let gid = Gid::new(0xfe80_0000_0000_0000, crate::Guid(0x0001_0000_0000_0001));
        assert_eq!(r.sgids, [gid, gid]);
        assert_eq!(r.dgids, [gid, gid]);
        assert_eq!(r.path.numb_path, 2);
        assert!(!r.path.reversible);
        let mut out = vec![0u8; 200];
        r.emit(&mut out).unwrap();
        assert_eq!(out, apm_bytes());
    }

    #[test]
    fn fields_at_their_offsets() {
        let mut b = [0u8; 24];
        b[0..4].copy_from_slice(&0x8123_4567u32.to_be_bytes()); // raw, flow 0x12345, hop 0x67
        b[4] = 0x11; // TClass
        b[5] = 0x83; // reversible, 3 paths
        b[6..8].copy_from_slice(&[0x80, 0x01]);
        b[8..10].copy_from_slice(&[0x12, 0x35]); // QoSClass 0x123, SL 5
        b[10] = 0x84; // MTU exactly 2048
        b[11] = 0x43; // rate less than 10 Gb/s
        b[12] = 0xd2; // lifetime best, 18
        b[13] = 0xaa;
        b[14] = 0x40; // independence 1
        b[17..24].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7]);
        let r = MultiPathRecordRepr::parse(&b).unwrap();
        let p = r.path;
        assert!(p.raw_traffic && p.reversible);
        assert_eq!((p.flow_label, p.hop_limit, p.tclass), (0x12345, 0x67, 0x11));
        assert_eq!(
            (p.numb_path, p.pkey, p.qos_class, p.sl),
            (3, PKey(0x8001), 0x123, 5)
        );
        assert_eq!((p.mtu_selector, p.mtu), (Selector::Exactly, 4));
        assert_eq!((p.rate_selector, p.rate), (Selector::LessThan, 3));
        assert_eq!(
            (p.packet_life_selector, p.packet_life),
            (Selector::Best, 18)
        );
        assert_eq!(p.service_id, 0xaa01_0203_0405_0607);
        assert_eq!(r.independence, 1);
        assert!(r.sgids.is_empty() && r.dgids.is_empty());
        let mut out = [0u8; 24];
        r.emit(&mut out).unwrap();
        assert_eq!(out, b);
    }

    #[test]
    fn short_records_are_refused() {
        assert!(MultiPathRecordRepr::parse(&[0u8; 23]).is_err());
        let mut b = apm_bytes();
        b.truncate(24 + 3 * 16 + 15); // four GIDs announced, 3 and a bit carried
        let e = MultiPathRecordRepr::parse(&b).unwrap_err();
        assert_eq!((e.required, e.got), (24 + 64, b.len()));
        let r = MultiPathRecordRepr::parse(&apm_bytes()).unwrap();
        assert!(r.emit(&mut [0u8; 87]).is_err());
    }

    #[test]
    fn path_query_maps_the_shared_components() {
        let r = MultiPathRecordRepr::parse(&apm_bytes()).unwrap();
        let (q, m) = r.path_query(
            comp::SGID_COUNT | comp::DGID_COUNT | comp::NUMB_PATH | comp::MTU | comp::SERVICE_ID,
        );
        assert_eq!(
            m,
            path::comp::NUMB_PATH | path::comp::MTU | path::comp::SERVICE_ID
        );
        assert_eq!(q.numb_path, 2);
        // Every shared bit maps to the PathRecord bit of the same name.
        let (_, all) = r.path_query(u64::MAX);
        assert_eq!(all.count_ones(), 17);
        assert_eq!(
            all & (path::comp::SGID | path::comp::DGID | path::comp::SLID),
            0
        );
    }

    proptest! {
        #[test]
        fn round_trip(
            head in proptest::collection::vec(any::<u8>(), 24),
            ns in 0usize..6,
            nd in 0usize..6,
            gids in proptest::collection::vec(any::<[u8; 16]>(), 12),
        ) {
            let mut b = head.clone();
            b[0] &= 0x8F; // reserved bits 30..28 zero
            b[14] &= 0xC0;
            b[15] = ns as u8;
            b[16] = nd as u8;
            for g in gids.iter().take(ns + nd) {
                b.extend_from_slice(g);
            }
            let r = MultiPathRecordRepr::parse(&b).unwrap();
            prop_assert_eq!(r.buffer_len(), b.len());
            let mut out = vec![0u8; b.len()];
            r.emit(&mut out).unwrap();
            prop_assert_eq!(out, b);
        }
    }
}

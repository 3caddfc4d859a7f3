//! InformInfo (SubnAdm attribute 0x0003, IBA vol1 §13.4.8.3 / §15.2.5.12), InformInfoRecord
//! (0x00F3, §15.2.5.13) and the Notice an SA forwards in a Report (attribute 0x0002 with
//! IssuerGID, §13.4.8.2).
//!
//! InformInfo, 36 bytes:
//!
//! | bytes | field |
//! |---|---|
//! | 0..15 | GID (0: use the LID range) |
//! | 16..17 | LIDRangeBegin (0xFFFF: every port the manager manages) |
//! | 18..19 | LIDRangeEnd |
//! | 20..21 | Reserved |
//! | 22 | IsGeneric |
//! | 23 | Subscribe (1 subscribe, 0 unsubscribe) |
//! | 24..25 | Type (0xFFFF: all) |
//! | 26..27 | TrapNumber (generic) / DeviceID (vendor), 0xFFFF: all |
//! | 28..31 | QPN (31..8), Reserved (7..5), RespTimeValue (4..0) |
//! | 32 | Reserved |
//! | 33..35 | ProducerType (generic) / VendorID (vendor), 0xFFFFFF: all |
//!
//! InformInfoRecord, 60 bytes (64 in a MAD):
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..15 | SubscriberGID (0) |
//! | 16..17 | Enum (1) |
//! | 18..23 | Reserved (2) |
//! | 24..59 | InformInfo: GID (3), LIDRangeBegin (4), LIDRangeEnd (5), Reserved (6), IsGeneric (7), Subscribe (8), Type (9), TrapNumber/DeviceID (10), QPN (11), Reserved (12), RespTimeValue (13), Reserved (14), ProducerType/VendorID (15) |

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component, SaRecord};
use crate::attr::notice::Notice;
use crate::codes::SaAttrId;

/// InformInfo, 36 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct InformInfo {
    /// GID — bytes 0..15.
    pub gid: [u8; 16],
    /// LIDRangeBegin — bytes 16..17.
    pub lid_range_begin: U16,
    /// LIDRangeEnd — bytes 18..19.
    pub lid_range_end: U16,
    /// Reserved — bytes 20..21.
    pub resv: U16,
    /// IsGeneric — byte 22.
    pub is_generic: u8,
    /// Subscribe — byte 23.
    pub subscribe: u8,
    /// Type — bytes 24..25.
    pub trap_type: U16,
    /// TrapNumber (generic) or DeviceID (vendor) — bytes 26..27.
    pub trap_num: U16,
    /// QPN (31..8), Reserved (7..5), RespTimeValue (4..0) — bytes 28..31.
    pub qpn_resp_time: U32,
    /// Reserved — byte 32.
    pub resv2: u8,
    /// ProducerType (generic) or VendorID (vendor) — bytes 33..35.
    pub producer_type: [u8; 3],
}
const _: () = assert!(size_of::<InformInfo>() == 36);
const _: () = assert!(core::mem::offset_of!(InformInfo, is_generic) == 22);
const _: () = assert!(core::mem::offset_of!(InformInfo, qpn_resp_time) == 28);
const _: () = assert!(core::mem::offset_of!(InformInfo, producer_type) == 33);

/// "All" in Type, TrapNumber/DeviceID and LIDRangeBegin.
pub const ALL_16: u16 = 0xFFFF;
/// "All" in ProducerType/VendorID.
pub const ALL_24: u32 = 0xFF_FFFF;

impl InformInfo {
    /// QPN (24 bits).
    #[must_use]
    pub fn qpn(&self) -> u32 {
        self.qpn_resp_time.get() >> 8
    }
    /// Sets QPN (low 24 bits of `qpn`), keeping RespTimeValue.
    pub fn set_qpn(&mut self, qpn: u32) {
        let v = self.qpn_resp_time.get();
        self.qpn_resp_time
            .set(((qpn & 0xFF_FFFF) << 8) | (v & 0xFF));
    }
    /// RespTimeValue (5 bits): the subscriber answers a Report within 4.096 µs × 2^value.
    #[must_use]
    pub fn resp_time_value(&self) -> u8 {
        (self.qpn_resp_time.get() & 0x1F) as u8
    }
    /// ProducerType (generic) or VendorID (vendor), 24 bits.
    #[must_use]
    pub fn producer_type(&self) -> u32 {
        crate::field::be24(&self.producer_type)
    }
    /// Sets ProducerType/VendorID from the low 24 bits.
    pub fn set_producer_type(&mut self, v: u32) {
        crate::field::set_be24(&mut self.producer_type, v);
    }
    /// Reads an InformInfo from the front of `buf`, bytes past its end as zero.
    #[must_use]
    pub fn read_padded(buf: &[u8]) -> InformInfo {
        let mut ii = InformInfo::new_zeroed();
        let n = buf.len().min(36);
        ii.as_mut_bytes()[..n].copy_from_slice(&buf[..n]);
        ii
    }
}

/// InformInfo's fields in component order (the InformInfo part of InformInfoRecord's
/// components, shifted by `byte` bytes).
const fn inform_components(byte: u32) -> [Component; 13] {
    [
        Component::bytes(byte, 16),
        Component::bytes(byte + 16, 2),
        Component::bytes(byte + 18, 2),
        Component::reserved((byte + 20) * 8, 16),
        Component::bytes(byte + 22, 1),
        Component::bytes(byte + 23, 1),
        Component::bytes(byte + 24, 2),
        Component::bytes(byte + 26, 2),
        Component::new((byte + 28) * 8, 24),
        Component::reserved((byte + 31) * 8, 3),
        Component::new((byte + 31) * 8 + 3, 5),
        Component::reserved((byte + 32) * 8, 8),
        Component::new((byte + 33) * 8, 24),
    ]
}

const INFORM_COMPONENTS: [Component; 13] = inform_components(0);

impl SaRecord for InformInfo {
    const ATTR: SaAttrId = SaAttrId::INFORM_INFO;
    const LEN: usize = 36;
    const COMPONENTS: &'static [Component] = &INFORM_COMPONENTS;
}
const _: () = assert!(super::components_fit(InformInfo::COMPONENTS, 36));

/// InformInfoRecord, 60 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct InformInfoRecord {
    /// SubscriberGID — bytes 0..15 (RID).
    pub subscriber_gid: [u8; 16],
    /// Enum — bytes 16..17 (RID).
    pub subscriber_enum: U16,
    /// Reserved — bytes 18..23.
    pub resv: [u8; 6],
    /// InformInfo — bytes 24..59.
    pub inform_info: InformInfo,
}

sa_record! {
    InformInfoRecord, INFORM_INFO_RECORD, 60;
    /// SubscriberGID.
    SUBSCRIBER_GID = 0 => Component::bytes(0, 16);
    /// Enum.
    ENUM = 1 => Component::bytes(16, 2);
    /// Reserved.
    RESERVED_0 = 2 => Component::reserved(18 * 8, 48);
    /// InformInfo.GID.
    GID = 3 => INFORM_RECORD_COMPONENTS[0];
    /// InformInfo.LIDRangeBegin.
    LID_RANGE_BEGIN = 4 => INFORM_RECORD_COMPONENTS[1];
    /// InformInfo.LIDRangeEnd.
    LID_RANGE_END = 5 => INFORM_RECORD_COMPONENTS[2];
    /// Reserved.
    RESERVED_1 = 6 => INFORM_RECORD_COMPONENTS[3];
    /// InformInfo.IsGeneric.
    IS_GENERIC = 7 => INFORM_RECORD_COMPONENTS[4];
    /// InformInfo.Subscribe.
    SUBSCRIBE = 8 => INFORM_RECORD_COMPONENTS[5];
    /// InformInfo.Type.
    TYPE = 9 => INFORM_RECORD_COMPONENTS[6];
    /// InformInfo.TrapNumber (generic) / DeviceID (vendor).
    TRAP_NUMBER = 10 => INFORM_RECORD_COMPONENTS[7];
    /// InformInfo.QPN.
    QPN = 11 => INFORM_RECORD_COMPONENTS[8];
    /// Reserved.
    RESERVED_2 = 12 => INFORM_RECORD_COMPONENTS[9];
    /// InformInfo.RespTimeValue.
    RESP_TIME_VALUE = 13 => INFORM_RECORD_COMPONENTS[10];
    /// Reserved.
    RESERVED_3 = 14 => INFORM_RECORD_COMPONENTS[11];
    /// InformInfo.ProducerType (generic) / VendorID (vendor).
    PRODUCER_TYPE = 15 => INFORM_RECORD_COMPONENTS[12];
}

const INFORM_RECORD_COMPONENTS: [Component; 13] = inform_components(24);

/// The Notice an SA sends in a Report (IBA vol1 §13.4.8.2): the 64 bytes a Trap SMP carries
/// and IssuerGID, 80 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct SaNotice {
    /// The Notice, bytes 0..63.
    pub notice: Notice,
    /// IssuerGID — bytes 64..79.
    pub issuer_gid: [u8; 16],
}
const _: () = assert!(size_of::<SaNotice>() == 80);

impl SaNotice {
    /// The GID in the DataDetails of traps 64–67 (bytes 16..31 of the Notice): the port that
    /// came into / went out of service, or the multicast group's MGID.
    #[must_use]
    pub fn details_gid(&self) -> [u8; 16] {
        let mut g = [0u8; 16];
        g.copy_from_slice(&self.notice.data_details[6..22]);
        g
    }
    /// Sets the GID of traps 64–67's DataDetails.
    pub fn set_details_gid(&mut self, gid: [u8; 16]) {
        self.notice.data_details[6..22].copy_from_slice(&gid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa_rec::matches;

    #[test]
    fn inform_info_fields() {
        let mut b = [0u8; 36];
        b[17] = 0xFF;
        b[16] = 0xFF;
        b[22] = 1;
        b[23] = 1;
        b[26..28].copy_from_slice(&64u16.to_be_bytes());
        b[28..32].copy_from_slice(&0x0000_0113u32.to_be_bytes());
        b[33..36].copy_from_slice(&[0, 0, 4]);
        let mut ii = InformInfo::read_padded(&b);
        assert_eq!(ii.lid_range_begin.get(), ALL_16);
        assert_eq!((ii.is_generic, ii.subscribe, ii.trap_num.get()), (1, 1, 64));
        assert_eq!((ii.qpn(), ii.resp_time_value()), (1, 0x13));
        assert_eq!(ii.producer_type(), 4);
        ii.set_qpn(0x12_3456);
        assert_eq!((ii.qpn(), ii.resp_time_value()), (0x12_3456, 0x13));
        ii.set_producer_type(ALL_24);
        assert_eq!(&ii.as_bytes()[33..36], &[0xFF; 3]);
        assert_eq!(InformInfo::read_padded(&b[..10]).subscribe, 0);
    }

    #[test]
    fn record_components_select_the_inform_info_fields() {
        let mut a = InformInfoRecord::new_zeroed();
        a.subscriber_gid[15] = 7;
        a.inform_info.trap_num.set(65);
        a.inform_info.set_qpn(5);
        let mut b = a;
        b.inform_info.set_qpn(6);
        let (qa, qb) = (a.as_bytes(), b.as_bytes());
        assert!(matches(
            InformInfoRecord::COMPONENTS,
            comp::TRAP_NUMBER,
            qa,
            qb
        ));
        assert!(!matches(InformInfoRecord::COMPONENTS, comp::QPN, qa, qb));
        b.inform_info
            .qpn_resp_time
            .set(a.inform_info.qpn_resp_time.get() | 3);
        b.inform_info.set_qpn(5);
        assert!(matches(
            InformInfoRecord::COMPONENTS,
            comp::QPN,
            qa,
            b.as_bytes()
        ));
        assert!(!matches(
            InformInfoRecord::COMPONENTS,
            comp::RESP_TIME_VALUE,
            qa,
            b.as_bytes()
        ));
        let mut raw = [0u8; 60];
        raw[18] = 0xFF; // reserved: zeroed by parse
        raw[40] = 0x12;
        let r = InformInfoRecord::parse(&raw).unwrap();
        assert_eq!(
            (r.resv[0], r.inform_info.lid_range_begin.get()),
            (0, 0x1200)
        );
        assert!(InformInfoRecord::parse(&raw[..59]).is_err());
    }

    #[test]
    fn notice_details_gid() {
        let mut n = SaNotice::new_zeroed();
        let g = [0xAB; 16];
        n.set_details_gid(g);
        assert_eq!(n.details_gid(), g);
        assert_eq!(n.as_bytes()[16..32], g);
    }
}

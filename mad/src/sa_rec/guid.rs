//! GUIDInfoRecord (SubnAdm attribute 0x0030, IBA vol1 §15.2.5, "GUIDInfoRecord"): one 8-GUID
//! block of an end port's GUIDInfo (its port GUID at index 0, alias GUIDs after it), keyed by
//! the port's LID and the block.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2 | BlockNum (1) |
//! | 3 | Reserved (2) |
//! | 4..7 | Reserved (3) |
//! | 8..71 | GUID 0..7 (4..11) |
//!
//! 72 bytes.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// GUIDInfoRecord, 72 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct GuidInfoRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// BlockNum — byte 2 (RID).
    pub block_num: u8,
    /// Reserved — byte 3.
    pub resv: u8,
    /// Reserved — bytes 4..7.
    pub resv2: U32,
    /// GUIDInfo: 8 GUIDs — bytes 8..71.
    pub guids: [U64; 8],
}

sa_record! {
    GuidInfoRecord, GUID_INFO_RECORD, 72;
    /// LID.
    LID = 0 => Component::bytes(0, 2);
    /// BlockNum.
    BLOCK_NUM = 1 => Component::bytes(2, 1);
    /// Reserved.
    RESERVED_1 = 2 => Component::reserved(24, 8);
    /// Reserved.
    RESERVED_2 = 3 => Component::reserved(32, 32);
    /// GUID 0.
    GID0 = 4 => Component::bytes(8, 8);
    /// GUID 1.
    GID1 = 5 => Component::bytes(16, 8);
    /// GUID 2.
    GID2 = 6 => Component::bytes(24, 8);
    /// GUID 3.
    GID3 = 7 => Component::bytes(32, 8);
    /// GUID 4.
    GID4 = 8 => Component::bytes(40, 8);
    /// GUID 5.
    GID5 = 9 => Component::bytes(48, 8);
    /// GUID 6.
    GID6 = 10 => Component::bytes(56, 8);
    /// GUID 7.
    GID7 = 11 => Component::bytes(64, 8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_reserved() {
        let mut b = [0u8; 72];
        b[1] = 5;
        b[3] = 0xFF;
        b[15] = 0x11;
        let r = GuidInfoRecord::parse(&b).unwrap();
        assert_eq!((r.lid.get(), r.resv, r.guids[0].get()), (5, 0, 0x11));
        let mut out = [0u8; 72];
        r.emit(&mut out).unwrap();
        assert_eq!(out[3], 0);
        assert!(GuidInfoRecord::parse(&b[..71]).is_err());
    }
}

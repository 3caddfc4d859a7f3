//! SMInfoRecord (SubnAdm attribute 0x0018, IBA vol1 §15.2.5, "SMInfoRecord"): the SMInfo of an
//! SM of the subnet, keyed by its port's LID.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2..3 | Reserved (1) |
//! | 4..11 | GUID (2) |
//! | 12..19 | SM_Key (3) |
//! | 20..23 | ActCount (4) |
//! | 24, bits 7..4 | Priority (5) |
//! | 24, bits 3..0 | SMState (6) |
//!
//! 25 bytes; 32 in a MAD.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// SMInfoRecord, 25 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct SmInfoRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// Reserved — bytes 2..3.
    pub resv: U16,
    /// GUID — bytes 4..11.
    pub guid: U64,
    /// SM_Key — bytes 12..19.
    pub sm_key: U64,
    /// ActCount — bytes 20..23.
    pub act_count: U32,
    /// Priority (7..4) / SMState (3..0) — byte 24.
    pub priority_state: u8,
}

sa_record! {
    SmInfoRecord, SM_INFO_RECORD, 25;
    /// LID.
    LID = 0 => Component::bytes(0, 2);
    /// Reserved.
    RESERVED = 1 => Component::reserved(16, 16);
    /// GUID.
    GUID = 2 => Component::bytes(4, 8);
    /// SM_Key.
    SM_KEY = 3 => Component::bytes(12, 8);
    /// ActCount.
    ACT_COUNT = 4 => Component::bytes(20, 4);
    /// Priority.
    PRIORITY = 5 => Component::at(24, 7, 4);
    /// SMState.
    SM_STATE = 6 => Component::at(24, 3, 4);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa_rec::{matches, SaRecord};

    #[test]
    fn round_trip_and_fields() {
        let mut b = [0u8; 32];
        b[1] = 1;
        b[2] = 0x12;
        b[11] = 0x42;
        b[24] = 0x13;
        let r = SmInfoRecord::parse(&b).unwrap();
        assert_eq!((r.lid.get(), r.resv.get(), r.guid.get()), (1, 0, 0x42));
        let mut q = b;
        q[24] = 0x03;
        assert!(matches(SmInfoRecord::COMPONENTS, comp::SM_STATE, &q, &b));
        assert!(!matches(SmInfoRecord::COMPONENTS, comp::PRIORITY, &q, &b));
        let mut out = [0u8; 25];
        r.emit(&mut out).unwrap();
        assert_eq!(out[24], 0x13);
        assert!(SmInfoRecord::parse(&b[..24]).is_err());
    }
}

//! P_KeyTableRecord (SubnAdm attribute 0x0033, IBA vol1 §15.2.5.11): one 32-entry block of a
//! port's P_Key table, keyed by LID (a CA port's, a switch's port-0 LID), block and port
//! number (switches; reserved for CAs). Served to trusted requesters only.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2..3 | BlockNum (1) |
//! | 4 | PortNum (2) |
//! | 5..7 | Reserved (3) |
//! | 8..71 | P_KeyTable (4) |
//!
//! 72 bytes.

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// P_KeyTableRecord, 72 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct PKeyTableRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// BlockNum — bytes 2..3 (RID).
    pub block_num: U16,
    /// PortNum — byte 4 (RID).
    pub port_num: u8,
    /// Reserved — bytes 5..7.
    pub resv: [u8; 3],
    /// P_KeyTable block — bytes 8..71.
    pub pkeys: [U16; 32],
}

sa_record! {
    PKeyTableRecord, P_KEY_TABLE_RECORD, 72;
    /// LID.
    LID = 0 => Component::bytes(0, 2);
    /// BlockNum.
    BLOCK_NUM = 1 => Component::bytes(2, 2);
    /// PortNum.
    PORT_NUM = 2 => Component::bytes(4, 1);
    /// Reserved.
    RESERVED = 3 => Component::reserved(40, 24);
    /// P_KeyTable.
    P_KEY_TABLE = 4 => Component::bytes(8, 64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_reserved() {
        let mut b = [0u8; 72];
        b[1] = 2;
        b[4] = 3;
        b[6] = 0xFF;
        b[8..10].copy_from_slice(&[0xFF, 0xFF]);
        let r = PKeyTableRecord::parse(&b).unwrap();
        assert_eq!(
            (r.lid.get(), r.port_num, r.resv, r.pkeys[0].get()),
            (2, 3, [0; 3], 0xFFFF)
        );
        let mut out = [0u8; 72];
        r.emit(&mut out).unwrap();
        assert_eq!(out[6], 0);
        assert!(PKeyTableRecord::parse(&b[..71]).is_err());
    }
}

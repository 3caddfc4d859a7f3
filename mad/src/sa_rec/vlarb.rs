//! VLArbitrationTableRecord (SubnAdm attribute 0x0036, IBA vol1 §15.2.5.9): one block of a
//! port's VLArbitration table (1, 2: low priority; 3, 4: high), keyed by LID, output port and
//! block.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2 | OutputPortNum (1) |
//! | 3 | BlockNum (2) |
//! | 4..7 | Reserved (3) |
//! | 8..71 | VLArbitrationTable (4): 32 (VL, weight) entries |
//!
//! 72 bytes.

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// VLArbitrationTableRecord, 72 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct VlArbRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// OutputPortNum — byte 2 (RID).
    pub out_port: u8,
    /// BlockNum — byte 3 (RID).
    pub block_num: u8,
    /// Reserved — bytes 4..7.
    pub resv: U32,
    /// VLArbitrationTable block — bytes 8..71.
    pub table: [u8; 64],
}

sa_record! {
    VlArbRecord, VL_ARB_RECORD, 72;
    /// LID.
    LID = 0 => Component::bytes(0, 2);
    /// OutputPortNum.
    OUT_PORT = 1 => Component::bytes(2, 1);
    /// BlockNum.
    BLOCK_NUM = 2 => Component::bytes(3, 1);
    /// Reserved.
    RESERVED = 3 => Component::reserved(32, 32);
    /// VLArbitrationTable.
    TABLE = 4 => Component::bytes(8, 64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b = [0u8; 72];
        b[1] = 4;
        b[2] = 1;
        b[3] = 2;
        b[5] = 1;
        b[8] = 0x01;
        b[9] = 0x40;
        let r = VlArbRecord::parse(&b).unwrap();
        assert_eq!(
            (r.lid.get(), r.out_port, r.block_num, r.resv.get()),
            (4, 1, 2, 0)
        );
        let mut out = [0u8; 72];
        r.emit(&mut out).unwrap();
        assert_eq!(&out[8..10], &[1, 0x40]);
        assert!(VlArbRecord::parse(&b[..71]).is_err());
    }
}

//! SLtoVLMappingTableRecord (SubnAdm attribute 0x0013, IBA vol1 §15.2.5.4): the SL-to-VL table
//! of one (input port, output port) pair of a switch, or of a CA port, keyed by LID and ports.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2 | InputPortNum (1) |
//! | 3 | OutputPortNum (2) |
//! | 4..7 | Reserved (3) |
//! | 8..15 | SLtoVLMappingTable (4) |
//!
//! 16 bytes.

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// SLtoVLMappingTableRecord, 16 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct Sl2VlRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// InputPortNum — byte 2 (RID).
    pub in_port: u8,
    /// OutputPortNum — byte 3 (RID).
    pub out_port: u8,
    /// Reserved — bytes 4..7.
    pub resv: U32,
    /// SLtoVLMappingTable — bytes 8..15 (two SLs per byte, SL 0 in bits 7..4 of byte 8).
    pub sl2vl: [u8; 8],
}

sa_record! {
    Sl2VlRecord, SL_TO_VL_RECORD, 16;
    /// LID.
    LID = 0 => Component::bytes(0, 2);
    /// InputPortNum.
    IN_PORT = 1 => Component::bytes(2, 1);
    /// OutputPortNum.
    OUT_PORT = 2 => Component::bytes(3, 1);
    /// Reserved.
    RESERVED = 3 => Component::reserved(32, 32);
    /// SLtoVLMappingTable.
    SL2VL = 4 => Component::bytes(8, 8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let b = [
            0, 4, 1, 2, 9, 9, 9, 9, 0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67,
        ];
        let r = Sl2VlRecord::parse(&b).unwrap();
        assert_eq!(
            (r.lid.get(), r.in_port, r.out_port, r.resv.get()),
            (4, 1, 2, 0)
        );
        let mut out = [0u8; 16];
        r.emit(&mut out).unwrap();
        assert_eq!(&out[8..], &b[8..]);
        assert!(Sl2VlRecord::parse(&b[..15]).is_err());
    }
}

//! LinearForwardingTableRecord (SubnAdm attribute 0x0015, IBA vol1 §15.2.5.6): one 64-entry
//! block of a switch's linear forwarding table, keyed by the switch's LID and the block.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2..3 | BlockNum (1) |
//! | 4..7 | Reserved (2) |
//! | 8..71 | LinearForwardingTable (3): the output port of LIDs 64·BlockNum … +63 |
//!
//! 72 bytes.

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// LinearForwardingTableRecord, 72 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct LftRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// BlockNum — bytes 2..3 (RID).
    pub block_num: U16,
    /// Reserved — bytes 4..7.
    pub resv: U32,
    /// LinearForwardingTable — bytes 8..71.
    pub lft: [u8; 64],
}

sa_record! {
    LftRecord, LFT_RECORD, 72;
    /// LID.
    LID = 0 => Component::bytes(0, 2);
    /// BlockNum.
    BLOCK_NUM = 1 => Component::bytes(2, 2);
    /// Reserved.
    RESERVED = 2 => Component::reserved(32, 32);
    /// LinearForwardingTable.
    LFT = 3 => Component::bytes(8, 64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::mads;

    /// Block 0 of Switch1's LFT as ibsim answers it (mad/testdata/lft_sw1_lid1.mads).
    const LFT: &str = include_str!("../../testdata/lft_sw1_lid1.mads");

    #[test]
    fn round_trip_and_reserved() {
        let smp = mads(LFT, "rcv")[0];
        let mut b = [0u8; 72];
        b[1] = 1;
        b[4] = 0xAA;
        b[8..72].copy_from_slice(&smp[64..128]);
        let r = LftRecord::parse(&b).unwrap();
        assert_eq!((r.lid.get(), r.block_num.get(), r.resv.get()), (1, 0, 0));
        assert_eq!(&r.lft[..], &smp[64..128]);
        let mut out = [0u8; 72];
        r.emit(&mut out).unwrap();
        assert_eq!(&out[8..], &smp[64..128]);
        assert!(LftRecord::parse(&b[..71]).is_err());
    }
}

//! MulticastForwardingTableRecord (SubnAdm attribute 0x0017, IBA vol1 §15.2.5.8): one block of
//! a switch's multicast forwarding table — 32 MLIDs (block *b*: 0xC000 + 32·b …) × 16 ports
//! (position *p*: ports 16·p … 16·p+15) — keyed by the switch's LID, position and block.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2, bits 7..4 | Position (1) |
//! | 2, bits 3..1 | Reserved (2) |
//! | 2 bit 0 .. 3 | BlockNum (3), 9 bits |
//! | 4..7 | Reserved (4) |
//! | 8..71 | MulticastForwardingTable (5): 32 PortMasks, bit *i* = port 16·Position + *i* |
//!
//! 72 bytes.

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// MulticastForwardingTableRecord, 72 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct MftRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// Position (15..12) / Reserved (11..9) / BlockNum (8..0) — bytes 2..3.
    pub position_block: U16,
    /// Reserved — bytes 4..7.
    pub resv: U32,
    /// MulticastForwardingTable — bytes 8..71.
    pub mft: [U16; 32],
}

impl MftRecord {
    /// Position.
    #[must_use]
    pub fn position(&self) -> u8 {
        (self.position_block.get() >> 12) as u8
    }
    /// BlockNum.
    #[must_use]
    pub fn block_num(&self) -> u16 {
        self.position_block.get() & 0x01FF
    }
    /// Sets Position and BlockNum.
    pub fn set_position_block(&mut self, position: u8, block: u16) {
        self.position_block
            .set((u16::from(position & 0xF) << 12) | (block & 0x01FF));
    }
}

sa_record! {
    MftRecord, MFT_RECORD, 72;
    /// LID.
    LID = 0 => Component::bytes(0, 2);
    /// Position.
    POSITION = 1 => Component::at(2, 7, 4);
    /// Reserved.
    RESERVED_1 = 2 => Component::reserved_at(2, 3, 3);
    /// BlockNum.
    BLOCK_NUM = 3 => Component::at(2, 0, 9);
    /// Reserved.
    RESERVED_2 = 4 => Component::reserved(32, 32);
    /// MulticastForwardingTable.
    MFT = 5 => Component::bytes(8, 64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa_rec::{matches, SaRecord};
    use zerocopy::FromZeros;

    #[test]
    fn position_and_block() {
        let mut r = MftRecord::new_zeroed();
        r.set_position_block(2, 0x1FF);
        assert_eq!((r.position(), r.block_num()), (2, 0x1FF));
        assert_eq!(r.as_bytes()[2..4], [0x21, 0xFF]);
        let mut b = [0u8; 72];
        r.emit(&mut b).unwrap();
        b[2] |= 0x0E; // reserved bits
        let p = MftRecord::parse(&b).unwrap();
        assert_eq!(p, r);
        let mut q = MftRecord::new_zeroed();
        q.set_position_block(0, 0x1FF);
        assert!(matches(
            MftRecord::COMPONENTS,
            comp::BLOCK_NUM,
            q.as_bytes(),
            r.as_bytes()
        ));
        assert!(!matches(
            MftRecord::COMPONENTS,
            comp::POSITION,
            q.as_bytes(),
            r.as_bytes()
        ));
    }
}

//! LinkRecord (SubnAdm attribute 0x0020, IBA vol1 §15.2.5, "LinkRecord"): one direction of a
//! link, from (LID, port) to (port, LID); the LIDs are the end ports' base LIDs (a switch's
//! port-0 LID).
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | FromLID (0) |
//! | 2 | FromPort (1) |
//! | 3 | ToPort (2) |
//! | 4..5 | ToLID (3) |
//!
//! 6 bytes; 8 in a MAD.

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// LinkRecord, 6 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct LinkRecord {
    /// FromLID — bytes 0..1 (RID).
    pub from_lid: U16,
    /// FromPort — byte 2 (RID).
    pub from_port: u8,
    /// ToPort — byte 3.
    pub to_port: u8,
    /// ToLID — bytes 4..5.
    pub to_lid: U16,
}

sa_record! {
    LinkRecord, LINK_RECORD, 6;
    /// FromLID.
    FROM_LID = 0 => Component::bytes(0, 2);
    /// FromPort.
    FROM_PORT = 1 => Component::bytes(2, 1);
    /// ToPort.
    TO_PORT = 2 => Component::bytes(3, 1);
    /// ToLID.
    TO_LID = 3 => Component::bytes(4, 2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa_rec::padded_len;

    #[test]
    fn round_trip() {
        let b = [0, 2, 3, 1, 0, 7, 0xEE, 0xEE];
        let r = LinkRecord::parse(&b).unwrap();
        assert_eq!(
            (r.from_lid.get(), r.from_port, r.to_port, r.to_lid.get()),
            (2, 3, 1, 7)
        );
        let mut out = [0u8; 8];
        r.emit(&mut out).unwrap();
        assert_eq!(out, [0, 2, 3, 1, 0, 7, 0, 0]);
        assert_eq!(padded_len(6), 8);
        assert!(LinkRecord::parse(&b[..5]).is_err());
    }
}

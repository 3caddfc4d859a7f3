//! SMInfo (attribute 0x0020), 21 bytes used — IBA vol1 §14.2.5.13.

use zerocopy::byteorder::big_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::SmState;
use crate::types::Guid;

/// SMInfo.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct SmInfo {
    /// GUID — bytes 0..7 (port GUID of the SM).
    pub guid: U64,
    /// SM_Key — bytes 8..15.
    pub sm_key: U64,
    /// ActCount — bytes 16..19.
    pub act_count: U32,
    /// Priority (7..4) / SMState (3..0) — byte 20.
    pub b20: u8,
    /// Reserved — bytes 21..63.
    pub reserved: [u8; 43],
}
const _: () = assert!(size_of::<SmInfo>() == 64);
const _: () = assert!(core::mem::offset_of!(SmInfo, b20) == 20);

crate::sub_byte_fields!(SmInfo {
    /// Priority — byte 20, bits 7..4.
    priority, set_priority: b20[7..4];
    /// SMState — byte 20, bits 3..0 (raw).
    sm_state_raw, set_sm_state_raw: b20[3..0];
});

impl SmInfo {
    /// SMState.
    #[must_use]
    pub fn sm_state(&self) -> SmState {
        SmState(self.sm_state_raw())
    }
    /// The SM's port GUID.
    #[must_use]
    pub fn guid(&self) -> Guid {
        Guid(self.guid.get())
    }
}

/// SMInfo Set attribute-modifier values (IBA vol1 §14.4.1, Table 188 "SMInfo Control").
pub mod control {
    /// Handover.
    pub const HANDOVER: u32 = 1;
    /// Acknowledge.
    pub const ACKNOWLEDGE: u32 = 2;
    /// Disable.
    pub const DISABLE: u32 = 3;
    /// Standby.
    pub const STANDBY: u32 = 4;
    /// Discover.
    pub const DISCOVER: u32 = 5;
}

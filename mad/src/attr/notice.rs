//! Notice (attribute 0x0002) as carried in a Trap SMP, 64 bytes — IBA vol1 §14.2.5.1 / §13.4.8.2.

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::TrapNum;
use crate::types::Lid;

/// Notice.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct Notice {
    /// IsGeneric (7) / Type (6..0) — byte 0.
    pub b0: u8,
    /// ProducerType (generic) or VendorID — bytes 1..3.
    pub producer_type: [u8; 3],
    /// TrapNumber (generic) or DeviceID — bytes 4..5.
    pub trap_num: U16,
    /// IssuerLID — bytes 6..7.
    pub issuer_lid: U16,
    /// NoticeToggle (15) / NoticeCount (14..0) — bytes 8..9.
    pub toggle_count: U16,
    /// DataDetails — bytes 10..63.
    pub data_details: [u8; 54],
}
const _: () = assert!(size_of::<Notice>() == 64);
const _: () = assert!(core::mem::offset_of!(Notice, data_details) == 10);

crate::sub_byte_fields!(Notice {
    /// IsGeneric — byte 0, bit 7.
    is_generic, set_is_generic: b0[7..7];
    /// Type — byte 0, bits 6..0 (0 fatal, 1 urgent, 2 security, 3 SM, 4 informational).
    notice_type, set_notice_type: b0[6..0];
});

/// Notice types (IBA vol1 §13.4.8.2, Table 124).
pub mod notice_type {
    /// Fatal.
    pub const FATAL: u8 = 0;
    /// Urgent.
    pub const URGENT: u8 = 1;
    /// Security.
    pub const SECURITY: u8 = 2;
    /// Subnet management.
    pub const SUBNET_MGMT: u8 = 3;
    /// Informational.
    pub const INFO: u8 = 4;
}

/// ProducerType for a generic notice (IBA vol1 Table 125): 1 CA, 2 switch, 3 router, 4 class manager.
pub mod producer {
    /// Channel adapter.
    pub const CA: u32 = 1;
    /// Switch.
    pub const SWITCH: u32 = 2;
    /// Router.
    pub const ROUTER: u32 = 3;
    /// Class manager.
    pub const CLASS_MANAGER: u32 = 4;
}

impl Notice {
    /// TrapNumber.
    #[must_use]
    pub fn trap_num(&self) -> TrapNum {
        TrapNum(self.trap_num.get())
    }
    /// IssuerLID.
    #[must_use]
    pub fn issuer_lid(&self) -> Lid {
        Lid(self.issuer_lid.get())
    }
    /// ProducerType as a 24-bit value.
    #[must_use]
    pub fn producer_type(&self) -> u32 {
        u32::from_be_bytes([
            0,
            self.producer_type[0],
            self.producer_type[1],
            self.producer_type[2],
        ])
    }
    /// Sets ProducerType from the low 24 bits.
    pub fn set_producer_type(&mut self, v: u32) {
        let b = v.to_be_bytes();
        self.producer_type = [b[1], b[2], b[3]];
    }
}

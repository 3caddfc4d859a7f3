//! Notice (attribute 0x0002) as carried in a Trap SMP, 64 bytes — IBA vol1 §14.2.5.1 / §13.4.8.2.
//!
//! View: [`Notice`]; validated value: [`NoticeRepr`] (see [`crate::attr`]).

use core::fmt;

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::attr::AttrRepr;
use crate::codes::{SmpAttrId, TrapNum};
use crate::error::ParseError;
use crate::pretty::{field, hexdump};
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
        crate::field::be24(&self.producer_type)
    }
    /// Sets ProducerType from the low 24 bits.
    pub fn set_producer_type(&mut self, v: u32) {
        crate::field::set_be24(&mut self.producer_type, v);
    }
}

impl Notice {
    /// NoticeToggle — bytes 8..9, bit 15.
    #[must_use]
    pub fn notice_toggle(&self) -> bool {
        self.toggle_count.get() & 0x8000 != 0
    }
    /// NoticeCount — bytes 8..9, bits 14..0.
    #[must_use]
    pub fn notice_count(&self) -> u16 {
        self.toggle_count.get() & 0x7FFF
    }
}

/// Field listing with IBA field names; DataDetails as hex.
impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "IsGeneric", self.is_generic())?;
        field(f, "Type", self.notice_type())?;
        if self.is_generic() != 0 {
            field(f, "ProducerType", self.producer_type())?;
            field(
                f,
                "TrapNumber",
                format_args!("{} ({})", self.trap_num.get(), self.trap_num()),
            )?;
        } else {
            field(f, "VendorID", format_args!("{:#08x}", self.producer_type()))?;
            field(f, "DeviceID", format_args!("{:#06x}", self.trap_num.get()))?;
        }
        field(f, "IssuerLID", self.issuer_lid())?;
        field(f, "NoticeToggle", u8::from(self.notice_toggle()))?;
        field(f, "NoticeCount", self.notice_count())?;
        writeln!(f, "DataDetails:")?;
        hexdump(f, &self.data_details)
    }
}

/// Who produced a notice: a generic notice names a producer type and a trap number, a
/// vendor-specific one a vendor and device id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// IsGeneric = 1.
    Generic {
        /// ProducerType (24 bits): 1 CA, 2 switch, 3 router, 4 class manager.
        producer_type: u32,
        /// TrapNumber.
        trap_num: TrapNum,
    },
    /// IsGeneric = 0.
    Vendor {
        /// VendorID (24 bits).
        vendor_id: u32,
        /// DeviceID.
        device_id: u16,
    },
}

/// Notice, validated.
///
/// Every bit pattern is accepted (Notice has no reserved bits outside DataDetails, whose layout
/// depends on the trap number and is kept raw). `emit` keeps the low 7 bits of `notice_type`,
/// the low 24 bits of the producer/vendor id and the low 15 bits of `notice_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NoticeRepr {
    /// Type (7 bits): 0 fatal, 1 urgent, 2 security, 3 subnet management, 4 informational.
    pub notice_type: u8,
    /// Generic or vendor-specific, with the fields that depend on it.
    pub kind: NoticeKind,
    /// IssuerLID.
    pub issuer_lid: Lid,
    /// NoticeToggle.
    pub notice_toggle: bool,
    /// NoticeCount (15 bits).
    pub notice_count: u16,
    /// DataDetails, raw.
    pub data_details: [u8; 54],
}

impl AttrRepr for NoticeRepr {
    type Raw = Notice;
    const ATTR_ID: SmpAttrId = SmpAttrId::NOTICE;

    fn from_raw(r: &Notice) -> Result<Self, ParseError> {
        let kind = if r.is_generic() != 0 {
            NoticeKind::Generic {
                producer_type: r.producer_type(),
                trap_num: r.trap_num(),
            }
        } else {
            NoticeKind::Vendor {
                vendor_id: r.producer_type(),
                device_id: r.trap_num.get(),
            }
        };
        Ok(NoticeRepr {
            notice_type: r.notice_type(),
            kind,
            issuer_lid: r.issuer_lid(),
            notice_toggle: r.notice_toggle(),
            notice_count: r.notice_count(),
            data_details: r.data_details,
        })
    }

    fn to_raw(&self) -> Notice {
        let mut r = Notice::new_zeroed();
        r.set_notice_type(self.notice_type);
        match self.kind {
            NoticeKind::Generic {
                producer_type,
                trap_num,
            } => {
                r.set_is_generic(1);
                r.set_producer_type(producer_type);
                r.trap_num.set(trap_num.0);
            }
            NoticeKind::Vendor {
                vendor_id,
                device_id,
            } => {
                r.set_producer_type(vendor_id);
                r.trap_num.set(device_id);
            }
        }
        r.issuer_lid.set(self.issuer_lid.0);
        let toggle = if self.notice_toggle { 0x8000 } else { 0 };
        r.toggle_count.set(toggle | (self.notice_count & 0x7FFF));
        r.data_details = self.data_details;
        r
    }
}

crate::attr::display_via_raw!(NoticeRepr);

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    /// A trap 128 (link state change) Notice from a switch at LID 3, as a switch SMA sends it:
    /// IsGeneric 1, Type 1 (urgent), ProducerType 2 (switch), IssuerLID 3, NoticeCount 0,
    /// DataDetails = {LIDADDR 3}. **Synthetic**: ibsim/infiniband-diags offer no way to dump
    /// the raw bytes of a trap (OpenSM logs only decoded fields), so this vector is built from
    /// the layout in IBA vol1 §14.2.5.1 / docs, not captured.
    static BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 0x81;
        b[3] = 0x02;
        b[5] = 0x80;
        b[7] = 0x03;
        b[11] = 0x03;
        b
    };

    fn repr() -> NoticeRepr {
        let mut data_details = [0u8; 54];
        data_details[1] = 3;
        NoticeRepr {
            notice_type: notice_type::URGENT,
            kind: NoticeKind::Generic {
                producer_type: producer::SWITCH,
                trap_num: TrapNum::LINK_STATE_CHANGE,
            },
            issuer_lid: Lid(3),
            notice_toggle: false,
            notice_count: 0,
            data_details,
        }
    }

    #[test]
    fn deconstruct() {
        let (n, _) = Notice::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(n.is_generic(), 1);
        assert_eq!(n.notice_type(), notice_type::URGENT);
        assert_eq!(n.producer_type(), producer::SWITCH);
        assert_eq!(n.trap_num(), TrapNum::LINK_STATE_CHANGE);
        assert_eq!(n.issuer_lid(), Lid(3));
        assert!(!n.notice_toggle());
    }

    #[test]
    fn construct() {
        let mut n = Notice::new_zeroed();
        n.set_is_generic(1);
        n.set_notice_type(notice_type::URGENT);
        n.set_producer_type(producer::SWITCH);
        n.trap_num.set(128);
        n.issuer_lid.set(3);
        n.data_details[1] = 3;
        assert_eq!(n.as_bytes(), &BYTES[..]);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(NoticeRepr::parse(&BYTES).unwrap(), repr());
        let mut out = [0u8; 64];
        repr().emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
    }

    #[test]
    fn vendor_notice_and_toggle() {
        let mut b = BYTES;
        b[0] = 0x04; // vendor, informational
        b[8] = 0x80; // toggle
        b[9] = 0x05; // count 5
        let r = NoticeRepr::parse(&b).unwrap();
        assert_eq!(
            r.kind,
            NoticeKind::Vendor {
                vendor_id: 2,
                device_id: 0x80
            }
        );
        assert!(r.notice_toggle);
        assert_eq!(r.notice_count, 5);
        let mut out = [0u8; 64];
        r.emit(&mut out).unwrap();
        assert_eq!(out, b);
    }

    #[test]
    fn impossible_len() {
        assert!(NoticeRepr::parse(&BYTES[..10]).is_err());
    }

    #[test]
    fn display_names_the_trap() {
        let t = repr().to_string();
        assert!(
            t.contains("TrapNumber:......................128 (LinkStateChange)\n"),
            "{t}"
        );
    }
}

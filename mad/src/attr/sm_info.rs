//! SMInfo (attribute 0x0020), 21 bytes used — IBA vol1 §14.2.5.13.
//!
//! View: [`SmInfo`]; validated value: [`SmInfoRepr`] (see [`crate::attr`]).

use core::fmt;

use zerocopy::byteorder::big_endian::{U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::attr::AttrRepr;
use crate::codes::{SmState, SmpAttrId};
use crate::error::ParseError;
use crate::pretty::field;
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

/// Field listing with IBA field names.
impl fmt::Display for SmInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "GUID", self.guid())?;
        field(f, "SM_Key", format_args!("{:#018x}", self.sm_key.get()))?;
        field(f, "ActCount", self.act_count.get())?;
        field(f, "Priority", self.priority())?;
        field(f, "SMState", self.sm_state())
    }
}

/// SMInfo, validated.
///
/// `parse` rejects an SMState above 3 (Master) with [`ParseError::InvalidValue`]. Bytes
/// 21..63 are reserved: ignored, emitted as zero. `emit` keeps the low 4 bits of `priority`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SmInfoRepr {
    /// GUID: the SM's port GUID.
    pub guid: Guid,
    /// SM_Key.
    pub sm_key: u64,
    /// ActCount.
    pub act_count: u32,
    /// Priority (4 bits).
    pub priority: u8,
    /// SMState.
    pub sm_state: SmState,
}

impl AttrRepr for SmInfoRepr {
    type Raw = SmInfo;
    const ATTR_ID: SmpAttrId = SmpAttrId::SM_INFO;

    fn from_raw(r: &SmInfo) -> Result<Self, ParseError> {
        if r.sm_state() > SmState::MASTER {
            return Err(ParseError::InvalidValue {
                attr: Self::ATTR_ID,
                field: "SMState",
                value: r.sm_state_raw().into(),
            });
        }
        Ok(SmInfoRepr {
            guid: r.guid(),
            sm_key: r.sm_key.get(),
            act_count: r.act_count.get(),
            priority: r.priority(),
            sm_state: r.sm_state(),
        })
    }

    fn to_raw(&self) -> SmInfo {
        let mut r = SmInfo::new_zeroed();
        r.guid.set(self.guid.0);
        r.sm_key.set(self.sm_key);
        r.act_count.set(self.act_count);
        r.set_priority(self.priority);
        r.set_sm_state_raw(self.sm_state.0);
        r
    }
}

crate::attr::display_via_raw!(SmInfoRepr);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::{data, rcv};
    use zerocopy::IntoBytes;

    /// SMInfo of a running OpenSM on ibsim's Switch1 port 0 (net.2sw2path): SMP data of the
    /// GetResp to `sminfo` (mad/testdata/sminfo_lid1.*, made by mad/testdata/capture.sh).
    /// OpenSM's default SM_Key is 1; the ActCount is whatever the heartbeat had reached.
    static BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[5] = 0x20; // GUID 0x200000
        b[15] = 0x01; // SM_Key 1
        b[19] = 0x44; // ActCount 68
        b[20] = 0x03; // Priority 0, SMState 3 (Master)
        b
    };

    fn repr() -> SmInfoRepr {
        SmInfoRepr {
            guid: Guid(0x20_0000),
            sm_key: 1,
            act_count: 68,
            priority: 0,
            sm_state: SmState::MASTER,
        }
    }

    #[test]
    fn bytes_are_the_capture() {
        let mad = rcv(include_str!("../../testdata/sminfo_lid1.mads"), 0x20, None);
        assert_eq!(data(&mad), BYTES);
    }

    #[test]
    fn deconstruct() {
        let (si, _) = SmInfo::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(si.guid(), Guid(0x20_0000));
        assert_eq!(si.sm_key.get(), 1);
        assert_eq!(si.act_count.get(), 68);
        assert_eq!(si.priority(), 0);
        assert_eq!(si.sm_state(), SmState::MASTER);
    }

    #[test]
    fn construct() {
        let mut si = SmInfo::new_zeroed();
        si.guid.set(0x20_0000);
        si.sm_key.set(1);
        si.act_count.set(68);
        si.set_sm_state_raw(3);
        assert_eq!(si.as_bytes(), &BYTES[..]);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(SmInfoRepr::parse(&BYTES).unwrap(), repr());
        let mut out = [0x11u8; 64];
        repr().emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
    }

    #[test]
    fn impossible_len() {
        assert!(SmInfoRepr::parse(&BYTES[..20]).is_err());
    }

    #[test]
    fn reserved_bits_and_values() {
        let mut b = BYTES;
        b[30] = 0xAB;
        let mut out = [0u8; 64];
        SmInfoRepr::parse(&b).unwrap().emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
        let mut b = BYTES;
        b[20] = 0x54; // priority 5, state 4: reserved
        assert!(matches!(
            SmInfoRepr::parse(&b),
            Err(ParseError::InvalidValue {
                field: "SMState",
                value: 4,
                ..
            })
        ));
        let (si, _) = SmInfo::mut_from_prefix(&mut b[..]).unwrap();
        si.set_sm_state_raw(2);
        assert_eq!(si.priority(), 5, "setting SMState keeps Priority");
    }

    /// `sminfo` prints `sm guid 0x200000, activity count 68 priority 0 state 3`.
    #[test]
    fn matches_sminfo() {
        let r = SmInfoRepr::parse(&data(&rcv(
            include_str!("../../testdata/sminfo_lid1.mads"),
            0x20,
            None,
        )))
        .unwrap();
        let txt = include_str!("../../testdata/sminfo_lid1.txt");
        let expect = format!(
            "sm guid {:#x}, activity count {} priority {} state {}",
            r.guid.0, r.act_count, r.priority, r.sm_state.0
        );
        assert!(txt.contains(&expect), "{expect}");
    }
}

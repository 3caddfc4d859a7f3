//! Table attributes: GUIDInfo (0x0014, §14.2.5.5), P_KeyTable (0x0016, §14.2.5.7),
//! SLtoVLMappingTable (0x0017, §14.2.5.8), VLArbitrationTable (0x0018, §14.2.5.9),
//! LinearForwardingTable (0x0019, §14.2.5.10), MulticastForwardingTable (0x001B, §14.2.5.12).
//! The attribute modifier encodings are documented on each type.

use zerocopy::byteorder::big_endian::{U16, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// GUIDInfo block: 8 GUIDs; AttributeModifier = block number.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct GuidInfo {
    /// GUIDBlock — 8 × 64 bits.
    pub guids: [U64; 8],
}
const _: () = assert!(size_of::<GuidInfo>() == 64);

/// P_KeyTable block: 32 P_Keys. AttributeModifier bits 15..0 = block; on a switch, bits 31..16 =
/// port number.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct PKeyTable {
    /// P_KeyTableBlock — 32 × 16 bits.
    pub pkeys: [U16; 32],
}
const _: () = assert!(size_of::<PKeyTable>() == 64);

/// Entries per P_KeyTable block.
pub const PKEYS_PER_BLOCK: usize = 32;

/// SLtoVLMappingTable: 16 SLs × 4 bits, SL0 in the high nibble of byte 0. Switch
/// AttributeModifier: bits 15..8 input port, 7..0 output port; bit 17 all inputs, bit 16 all outputs.
#[derive(
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
)]
#[repr(C)]
pub struct SlToVl {
    /// SLnToVL — 16 × 4 bits.
    pub raw: [u8; 8],
}
const _: () = assert!(size_of::<SlToVl>() == 8);

impl SlToVl {
    /// The VL for `sl` (0..=15); `None` for sl > 15.
    #[must_use]
    pub fn vl(&self, sl: u8) -> Option<u8> {
        let b = *self.raw.get(usize::from(sl / 2))?;
        Some(if sl.is_multiple_of(2) {
            b >> 4
        } else {
            b & 0x0F
        })
    }
    /// Sets the VL for `sl`; ignored for sl > 15.
    pub fn set_vl(&mut self, sl: u8, vl: u8) {
        if let Some(b) = self.raw.get_mut(usize::from(sl / 2)) {
            *b = if sl.is_multiple_of(2) {
                (*b & 0x0F) | (vl << 4)
            } else {
                (*b & 0xF0) | (vl & 0x0F)
            };
        }
    }
}

/// One VLArbitrationTable entry.
#[derive(
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
)]
#[repr(C)]
pub struct VlArbEntry {
    /// Reserved (7..4) / VL (3..0).
    pub vl: u8,
    /// Weight.
    pub weight: u8,
}

/// VLArbitrationTable block: 32 entries. AttributeModifier bits 31..16 = block (1, 2 low
/// priority; 3, 4 high priority), bits 15..0 = output port.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct VlArbTable {
    /// 32 × {VL, Weight}.
    pub entries: [VlArbEntry; 32],
}
const _: () = assert!(size_of::<VlArbTable>() == 64);

/// LinearForwardingTable block: 64 egress ports for LIDs `block*64 ..`; AttributeModifier = block.
/// 0xFF means "no route" (OpenSM `OSM_NO_PATH`).
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct LftBlock {
    /// Port for each LID of the block.
    pub ports: [u8; 64],
}
const _: () = assert!(size_of::<LftBlock>() == 64);

/// LIDs per LFT block.
pub const LFT_BLOCK_SIZE: usize = 64;
/// The LFT value for "no path".
pub const LFT_NO_PATH: u8 = 0xFF;

/// MulticastForwardingTable block: 32 port masks for MLIDs `0xC000 + block*32 ..`.
/// AttributeModifier bits 31..28 = position (group of 16 ports), bits 8..0 = block.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct MftBlock {
    /// PortMask per MLID.
    pub masks: [U16; 32],
}
const _: () = assert!(size_of::<MftBlock>() == 64);

//! Table attributes: GUIDInfo (0x0014, §14.2.5.5), P_KeyTable (0x0016, §14.2.5.7),
//! SLtoVLMappingTable (0x0017, §14.2.5.8), VLArbitrationTable (0x0018, §14.2.5.9),
//! LinearForwardingTable (0x0019, §14.2.5.10), MulticastForwardingTable (0x001B, §14.2.5.12).
//! The attribute modifier encodings are documented on each type; those of P_KeyTable,
//! SLtoVLMappingTable and VLArbitrationTable are built and decoded by [`super::modifier`].
//!
//! Views: the zerocopy structs; validated values: the `*Repr` types (see [`crate::attr`]).
//! Every entry value of these tables is valid, so their `parse` only checks the length;
//! the reserved high nibble of a VLArbitrationTable VL byte is dropped.

use core::fmt;

use zerocopy::byteorder::big_endian::{U16, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::attr::AttrRepr;
use crate::codes::SmpAttrId;
use crate::error::ParseError;
use crate::types::{Guid, PKey, PortNum};

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
/// port number ([`super::modifier::pkey`]).
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
/// AttributeModifier: bits 15..8 input port, 7..0 output port; bit 17 all inputs, bit 16 all outputs
/// ([`super::modifier::sl2vl`]).
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
/// priority; 3, 4 high priority), bits 15..0 = output port ([`super::modifier::vlarb`]).
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

/// Writes `items` `per_row` to a line, each line prefixed by the index of its first item
/// (the layout of `smpquery pkeys` / `guidinfo`).
fn rows<I: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    items: impl Iterator<Item = I>,
    per_row: usize,
) -> fmt::Result {
    for (i, item) in items.enumerate() {
        if i % per_row == 0 {
            if i != 0 {
                writeln!(f)?;
            }
            write!(f, "{i:>4}:")?;
        }
        write!(f, " {item}")?;
    }
    writeln!(f)
}

/// `GUID` as `0x` and 16 hex digits.
struct Hex64(u64);
impl fmt::Display for Hex64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}
/// A 16-bit value as `0x` and 4 hex digits.
struct Hex16(u16);
impl fmt::Display for Hex16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}
/// A byte as 2 hex digits.
struct Hex8(u8);
impl fmt::Display for Hex8 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x}", self.0)
    }
}

/// Two GUIDs a line, as `smpquery guidinfo` (index within the block).
impl fmt::Display for GuidInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        rows(f, self.guids.iter().map(|g| Hex64(g.get())), 2)
    }
}

/// Eight P_Keys a line, as `smpquery pkeys` (index within the block).
impl fmt::Display for PKeyTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        rows(f, self.pkeys.iter().map(|p| Hex16(p.get())), 8)
    }
}

/// Two lines, `SL: | 0| 1|…` and `VL: | 0| 1|…`, as `smpquery sl2vl`.
impl fmt::Display for SlToVl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SL: |")?;
        for sl in 0..16u8 {
            write!(f, "{sl:>2}|")?;
        }
        f.write_str("\nVL: |")?;
        for sl in 0..16u8 {
            write!(f, "{:>2}|", self.vl(sl).unwrap_or_default())?;
        }
        writeln!(f)
    }
}

/// `VL    : |0x0 |…` and `WEIGHT: |0x4 |…` lines, eight entries each, as `smpquery vlarb`.
impl fmt::Display for VlArbTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.entries.chunks(8) {
            f.write_str("VL    : |")?;
            for e in chunk {
                write!(f, "0x{:<2x}|", e.vl & 0x0F)?;
            }
            f.write_str("\nWEIGHT: |")?;
            for e in chunk {
                write!(f, "0x{:<2x}|", e.weight)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// Eight egress ports a line in hex (`ff` = no path), prefixed by the LID offset in the block.
impl fmt::Display for LftBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        rows(f, self.ports.iter().map(|p| Hex8(*p)), 8)
    }
}

/// Eight port masks a line, prefixed by the MLID offset in the block.
impl fmt::Display for MftBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        rows(f, self.masks.iter().map(|m| Hex16(m.get())), 8)
    }
}

/// GUIDInfo block, validated (every value is valid).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct GuidInfoRepr {
    /// GUIDs of the block; entry i is GUID index `block*8 + i`.
    pub guids: [Guid; 8],
}

impl AttrRepr for GuidInfoRepr {
    type Raw = GuidInfo;
    const ATTR_ID: SmpAttrId = SmpAttrId::GUID_INFO;
    fn from_raw(r: &GuidInfo) -> Result<Self, ParseError> {
        Ok(GuidInfoRepr {
            guids: r.guids.map(|g| Guid(g.get())),
        })
    }
    fn to_raw(&self) -> GuidInfo {
        GuidInfo {
            guids: self.guids.map(|g| U64::new(g.0)),
        }
    }
}

/// P_KeyTable block, validated (every value is valid; P_Key 0 is an empty entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PKeyTableRepr {
    /// P_Keys of the block; entry i is P_Key index `block*32 + i`.
    pub pkeys: [PKey; 32],
}

impl AttrRepr for PKeyTableRepr {
    type Raw = PKeyTable;
    const ATTR_ID: SmpAttrId = SmpAttrId::P_KEY_TABLE;
    fn from_raw(r: &PKeyTable) -> Result<Self, ParseError> {
        Ok(PKeyTableRepr {
            pkeys: r.pkeys.map(|p| PKey(p.get())),
        })
    }
    fn to_raw(&self) -> PKeyTable {
        PKeyTable {
            pkeys: self.pkeys.map(|p| U16::new(p.0)),
        }
    }
}

/// SLtoVLMappingTable, validated: the VL (4 bits) for each SL 0..=15.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SlToVlRepr {
    /// `vl[sl]`; `emit` keeps the low 4 bits of each.
    pub vl: [u8; 16],
}

impl AttrRepr for SlToVlRepr {
    type Raw = SlToVl;
    const ATTR_ID: SmpAttrId = SmpAttrId::SL_TO_VL_TABLE;
    fn from_raw(r: &SlToVl) -> Result<Self, ParseError> {
        let mut vl = [0u8; 16];
        for (sl, v) in (0u8..).zip(vl.iter_mut()) {
            *v = r.vl(sl).unwrap_or_default();
        }
        Ok(SlToVlRepr { vl })
    }
    fn to_raw(&self) -> SlToVl {
        let mut r = SlToVl::default();
        for (sl, v) in (0u8..).zip(self.vl.iter()) {
            r.set_vl(sl, *v);
        }
        r
    }
}

/// One VLArbitrationTable entry, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct VlArbEntryRepr {
    /// VL (4 bits; the high nibble of the wire byte is reserved).
    pub vl: u8,
    /// Weight (units of 64 bytes; 0 = entry skipped).
    pub weight: u8,
}

/// VLArbitrationTable block, validated: 32 entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct VlArbTableRepr {
    /// The entries in table order.
    pub entries: [VlArbEntryRepr; 32],
}

impl AttrRepr for VlArbTableRepr {
    type Raw = VlArbTable;
    const ATTR_ID: SmpAttrId = SmpAttrId::VL_ARB_TABLE;
    fn from_raw(r: &VlArbTable) -> Result<Self, ParseError> {
        Ok(VlArbTableRepr {
            entries: r.entries.map(|e| VlArbEntryRepr {
                vl: e.vl & 0x0F,
                weight: e.weight,
            }),
        })
    }
    fn to_raw(&self) -> VlArbTable {
        VlArbTable {
            entries: self.entries.map(|e| VlArbEntry {
                vl: e.vl & 0x0F,
                weight: e.weight,
            }),
        }
    }
}

/// LinearForwardingTable block, validated: the egress port for each of 64 LIDs
/// ([`LFT_NO_PATH`] = none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LftBlockRepr {
    /// `ports[i]` is the port for LID `block*64 + i`.
    pub ports: [PortNum; LFT_BLOCK_SIZE],
}

impl Default for LftBlockRepr {
    /// Every LID unrouted.
    fn default() -> Self {
        LftBlockRepr {
            ports: [PortNum(LFT_NO_PATH); LFT_BLOCK_SIZE],
        }
    }
}

impl AttrRepr for LftBlockRepr {
    type Raw = LftBlock;
    const ATTR_ID: SmpAttrId = SmpAttrId::LINEAR_FT;
    fn from_raw(r: &LftBlock) -> Result<Self, ParseError> {
        Ok(LftBlockRepr {
            ports: r.ports.map(PortNum),
        })
    }
    fn to_raw(&self) -> LftBlock {
        let mut r = LftBlock::new_zeroed();
        r.ports = self.ports.map(|p| p.0);
        r
    }
}

/// MulticastForwardingTable block, validated: 32 port masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct MftBlockRepr {
    /// `masks[i]` is the port mask for MLID `0xC000 + block*32 + i` (bit j = port
    /// `position*16 + j`).
    pub masks: [u16; 32],
}

impl AttrRepr for MftBlockRepr {
    type Raw = MftBlock;
    const ATTR_ID: SmpAttrId = SmpAttrId::MULTICAST_FT;
    fn from_raw(r: &MftBlock) -> Result<Self, ParseError> {
        Ok(MftBlockRepr {
            masks: r.masks.map(|m| m.get()),
        })
    }
    fn to_raw(&self) -> MftBlock {
        MftBlock {
            masks: self.masks.map(U16::new),
        }
    }
}

crate::attr::display_via_raw!(
    GuidInfoRepr,
    PKeyTableRepr,
    SlToVlRepr,
    VlArbTableRepr,
    LftBlockRepr,
    MftBlockRepr
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::{data, mads, rcv};
    use zerocopy::IntoBytes;

    /// LFT block 0 of ibsim's Switch1 (net.2sw2path) as OpenSM (minhop) programmed it: SMP
    /// data of the GetResp to the LinearForwardingTable Get issued by `ibroute 1`
    /// (mad/testdata/lft_sw1_lid1.*, made by mad/testdata/capture.sh). LID 1 → port 0 (self),
    /// 2 → 1, 3 → 5, 4 → 3, the rest 0xFF.
    static LFT_BYTES: [u8; 64] = {
        let mut b = [0xFFu8; 64];
        b[1] = 0;
        b[2] = 1;
        b[3] = 5;
        b[4] = 3;
        b
    };

    /// P_KeyTable block 0 of Hca1 port 1: `smpquery -K -D pkeys 0,1 1`
    /// (mad/testdata/pkey_hca1_dr1.*): 0xFFFF then empty entries.
    static PKEY_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 0xFF;
        b[1] = 0xFF;
        b
    };

    /// SLtoVLMappingTable of Hca1 port 1: `smpquery -K -D sl2vl 0,1 1`
    /// (mad/testdata/sl2vl_hca1_dr1.*): SLn → VLn, SL15 → VL7.
    static SL2VL_BYTES: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7];

    /// VLArbitrationTable low-priority block (modifier 0x00010001) of Hca1 port 1:
    /// `smpquery -K -D vlarb 0,1 1` (mad/testdata/vlarb_hca1_dr1.*).
    static VLARB_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        let head = [0, 0, 1, 4, 2, 4, 3, 4, 4, 4, 5, 4, 6, 4, 7, 4];
        let mut i = 0;
        while i < 16 {
            b[i] = head[i];
            i += 1;
        }
        b
    };

    /// GUIDInfo block 0 of Hca1: `smpquery -K -D guidinfo 0,1` (mad/testdata/guid_hca1_dr1.*).
    static GUID_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[5] = 0x10;
        b[7] = 0x01;
        b
    };

    #[test]
    fn bytes_are_the_capture() {
        let lft = rcv(
            include_str!("../../testdata/lft_sw1_lid1.mads"),
            0x19,
            Some(0),
        );
        assert_eq!(data(&lft), LFT_BYTES);
        let pk = rcv(
            include_str!("../../testdata/pkey_hca1_dr1.mads"),
            0x16,
            None,
        );
        assert_eq!(data(&pk), PKEY_BYTES);
        let sl = rcv(
            include_str!("../../testdata/sl2vl_hca1_dr1.mads"),
            0x17,
            None,
        );
        assert_eq!(&data(&sl)[..8], &SL2VL_BYTES[..]);
        let va = rcv(
            include_str!("../../testdata/vlarb_hca1_dr1.mads"),
            0x18,
            Some(0x0001_0001),
        );
        assert_eq!(data(&va), VLARB_BYTES);
        let gi = rcv(
            include_str!("../../testdata/guid_hca1_dr1.mads"),
            0x14,
            Some(0),
        );
        assert_eq!(data(&gi), GUID_BYTES);
    }

    #[test]
    fn deconstruct() {
        let (lft, _) = LftBlock::ref_from_prefix(&LFT_BYTES[..]).unwrap();
        assert_eq!(&lft.ports[..6], &[0xFF, 0, 1, 5, 3, 0xFF]);
        let (pk, _) = PKeyTable::ref_from_prefix(&PKEY_BYTES[..]).unwrap();
        assert_eq!(pk.pkeys[0].get(), 0xFFFF);
        let (sl, _) = SlToVl::ref_from_prefix(&SL2VL_BYTES[..]).unwrap();
        assert_eq!(
            (sl.vl(0), sl.vl(14), sl.vl(15), sl.vl(16)),
            (Some(0), Some(14), Some(7), None)
        );
        let (va, _) = VlArbTable::ref_from_prefix(&VLARB_BYTES[..]).unwrap();
        assert_eq!((va.entries[1].vl, va.entries[1].weight), (1, 4));
        let (gi, _) = GuidInfo::ref_from_prefix(&GUID_BYTES[..]).unwrap();
        assert_eq!(gi.guids[0].get(), 0x10_0001);
    }

    #[test]
    fn construct() {
        let mut lft = LftBlock { ports: [0xFF; 64] };
        lft.ports[1..5].copy_from_slice(&[0, 1, 5, 3]);
        assert_eq!(lft.as_bytes(), &LFT_BYTES[..]);
        let mut sl = SlToVl::default();
        for s in 0..15 {
            sl.set_vl(s, s);
        }
        sl.set_vl(15, 7);
        sl.set_vl(16, 3); // ignored
        assert_eq!(sl.as_bytes(), &SL2VL_BYTES[..]);
    }

    fn round_trip<A: AttrRepr + fmt::Debug + PartialEq>(bytes: &[u8]) -> A {
        let r = A::parse(bytes).unwrap();
        let mut out = vec![0x5Au8; bytes.len()];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(r.buffer_len(), bytes.len());
        assert!(
            A::parse(&bytes[..bytes.len() - 1]).is_err(),
            "impossible_len"
        );
        r
    }

    #[test]
    fn parse_and_emit() {
        let lft: LftBlockRepr = round_trip(&LFT_BYTES);
        assert_eq!(lft.ports[3], PortNum(5));
        let pk: PKeyTableRepr = round_trip(&PKEY_BYTES);
        assert_eq!(pk.pkeys[0], PKey::DEFAULT_FULL);
        let sl: SlToVlRepr = round_trip(&SL2VL_BYTES);
        assert_eq!(sl.vl[15], 7);
        let va: VlArbTableRepr = round_trip(&VLARB_BYTES);
        assert_eq!(va.entries[7], VlArbEntryRepr { vl: 7, weight: 4 });
        let gi: GuidInfoRepr = round_trip(&GUID_BYTES);
        assert_eq!(gi.guids[0], Guid(0x10_0001));
        let mft: MftBlockRepr = round_trip(&[0u8; 64]);
        assert_eq!(mft, MftBlockRepr::default());
    }

    #[test]
    fn vlarb_reserved_nibble() {
        let mut b = VLARB_BYTES;
        b[2] = 0xF1;
        let r = VlArbTableRepr::parse(&b).unwrap();
        assert_eq!(r.entries[1].vl, 1);
        let mut out = [0u8; 64];
        r.emit(&mut out).unwrap();
        assert_eq!(out, VLARB_BYTES);
    }

    /// Every LID `ibroute` listed is routed out the port it printed; every other LID up to
    /// LinearFDBTop is unrouted. Checked for both captured switches.
    #[test]
    fn lft_matches_ibroute() {
        for (mads, txt) in [
            (
                include_str!("../../testdata/lft_sw1_lid1.mads"),
                include_str!("../../testdata/lft_sw1_lid1.txt"),
            ),
            (
                include_str!("../../testdata/lft_sw2_dr3.mads"),
                include_str!("../../testdata/lft_sw2_dr3.txt"),
            ),
        ] {
            let lft = LftBlockRepr::parse(&data(&rcv(mads, 0x19, Some(0)))).unwrap();
            let mut listed = 0;
            for line in txt.lines() {
                let mut w = line.split_whitespace();
                let (Some(lid), Some(port), Some(":")) = (w.next(), w.next(), w.next()) else {
                    continue;
                };
                let Some(lid) = lid.strip_prefix("0x") else {
                    continue;
                };
                let lid = usize::from_str_radix(lid, 16).unwrap();
                let port: u8 = port.parse().unwrap();
                assert_eq!(lft.ports[lid], PortNum(port), "LID {lid}");
                listed += 1;
            }
            assert_eq!(listed, 4);
            let routed = lft.ports.iter().filter(|p| p.0 != LFT_NO_PATH).count();
            assert_eq!(routed, listed);
        }
    }

    /// `ibroute -M` found no multicast groups: every captured MFT block is all zero.
    #[test]
    fn mft_matches_ibroute() {
        let txt = include_str!("../../testdata/mft_sw1_lid1.txt");
        assert!(txt.contains("0 valid mlids dumped"));
        let blocks: Vec<_> = mads(include_str!("../../testdata/mft_sw1_lid1.mads"), "rcv")
            .into_iter()
            .filter(|m| m[16..18] == [0x00, 0x1B])
            .collect();
        assert!(blocks.len() >= 32);
        for m in blocks {
            assert_eq!(
                MftBlockRepr::parse(&data(&m)).unwrap(),
                MftBlockRepr::default()
            );
        }
    }

    /// Our listing of the P_Key block is smpquery's first four lines verbatim.
    #[test]
    fn pkeys_display_matches_smpquery() {
        let txt = include_str!("../../testdata/pkey_hca1_dr1.txt");
        let ours = PKeyTableRepr::parse(&PKEY_BYTES).unwrap().to_string();
        let theirs: Vec<&str> = txt.lines().skip(1).take(4).collect();
        assert_eq!(ours.lines().collect::<Vec<_>>(), theirs);
    }

    /// Our listing of the GUID block is smpquery's first four lines verbatim.
    #[test]
    fn guidinfo_display_matches_smpquery() {
        let txt = include_str!("../../testdata/guid_hca1_dr1.txt");
        let ours = GuidInfoRepr::parse(&GUID_BYTES).unwrap().to_string();
        let theirs: Vec<&str> = txt.lines().skip(1).take(4).collect();
        assert_eq!(ours.lines().collect::<Vec<_>>(), theirs);
    }

    /// The VL / WEIGHT rows of the low-priority block equal smpquery's.
    #[test]
    fn vlarb_display_matches_smpquery() {
        let txt = include_str!("../../testdata/vlarb_hca1_dr1.txt");
        let ours = VlArbTableRepr::parse(&VLARB_BYTES).unwrap().to_string();
        let theirs: Vec<&str> = txt.lines().skip(3).take(2).collect();
        let ours: Vec<&str> = ours.lines().take(2).collect();
        assert_eq!(ours, theirs);
    }

    /// The VL row equals smpquery's `ports: in 0, out 0:` row.
    #[test]
    fn sl2vl_matches_smpquery() {
        let txt = include_str!("../../testdata/sl2vl_hca1_dr1.txt");
        let row = txt.lines().find(|l| l.starts_with("ports:")).unwrap();
        let theirs = row.split_once(": |").unwrap().1;
        let ours = SlToVlRepr::parse(&SL2VL_BYTES).unwrap().to_string();
        let ours = ours.lines().nth(1).unwrap().strip_prefix("VL: |").unwrap();
        assert_eq!(ours, theirs);
    }
}

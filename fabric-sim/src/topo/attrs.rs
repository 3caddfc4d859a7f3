//! Per-port link attributes: width, speed, MTU and VL capability, as PortInfo codes.
//!
//! Each type is a closed set holding the *active* value of a link (one bit of the PortInfo
//! `LinkWidthActive` / `LinkSpeedActive` / `LinkSpeedExtActive` encodings), plus the conversions
//! the topology file formats need: ibsim's enable masks (`w=`, `s=`, `e=`) and ibnetdiscover's
//! `4xQDR` text.

use core::fmt;

/// LinkWidthActive (IBA vol1 §14.2.5.6, PortInfo): one lane-count bit.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum LinkWidth {
    /// 1x, code 1.
    X1,
    /// 4x, code 2.
    X4,
    /// 8x, code 4.
    X8,
    /// 12x, code 8.
    X12,
    /// 2x, code 16.
    X2,
}

impl LinkWidth {
    /// All widths, narrowest lane count last in preference order used by ibsim
    /// (12x, 8x, 4x, 2x, 1x: the widest common width wins).
    const PREFERENCE: [LinkWidth; 5] = [
        LinkWidth::X12,
        LinkWidth::X8,
        LinkWidth::X4,
        LinkWidth::X2,
        LinkWidth::X1,
    ];

    /// The PortInfo code (a single bit).
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            LinkWidth::X1 => 1,
            LinkWidth::X4 => 2,
            LinkWidth::X8 => 4,
            LinkWidth::X12 => 8,
            LinkWidth::X2 => 16,
        }
    }

    /// The width for a single-bit code, or `None`.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<LinkWidth> {
        match code {
            1 => Some(LinkWidth::X1),
            2 => Some(LinkWidth::X4),
            4 => Some(LinkWidth::X8),
            8 => Some(LinkWidth::X12),
            16 => Some(LinkWidth::X2),
            _ => None,
        }
    }

    /// Number of lanes: 1, 2, 4, 8 or 12.
    #[must_use]
    pub const fn lanes(self) -> u8 {
        match self {
            LinkWidth::X1 => 1,
            LinkWidth::X2 => 2,
            LinkWidth::X4 => 4,
            LinkWidth::X8 => 8,
            LinkWidth::X12 => 12,
        }
    }

    /// The width with `lanes` lanes (ibnetdiscover's `4x` notation).
    #[must_use]
    pub const fn from_lanes(lanes: u8) -> Option<LinkWidth> {
        match lanes {
            1 => Some(LinkWidth::X1),
            2 => Some(LinkWidth::X2),
            4 => Some(LinkWidth::X4),
            8 => Some(LinkWidth::X8),
            12 => Some(LinkWidth::X12),
            _ => None,
        }
    }

    /// The widest width present in an enable mask (LinkWidthEnabled encoding, 1..=31).
    #[must_use]
    pub fn widest_in_mask(mask: u8) -> Option<LinkWidth> {
        Self::PREFERENCE.into_iter().find(|w| mask & w.code() != 0)
    }
}

impl Default for LinkWidth {
    /// 4x, ibsim's default (`DEFAULT_LINKWIDTH`).
    fn default() -> Self {
        LinkWidth::X4
    }
}

/// `1x`, `4x`, `12x`… as ibnetdiscover prints it.
impl fmt::Display for LinkWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x", self.lanes())
    }
}

/// Active link speed: PortInfo LinkSpeedActive (SDR/DDR/QDR) and LinkSpeedExtActive
/// (FDR/EDR/HDR/NDR). FDR10 is the Mellanox extended-port-info speed.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum LinkSpeed {
    /// 2.5 Gb/s per lane; LinkSpeedActive 1.
    Sdr,
    /// 5 Gb/s; LinkSpeedActive 2.
    Ddr,
    /// 10 Gb/s; LinkSpeedActive 4.
    Qdr,
    /// Mellanox FDR10; LinkSpeedActive 4, MLNX ExtPortInfo speed 1.
    Fdr10,
    /// 14 Gb/s; LinkSpeedExtActive 1.
    Fdr,
    /// 25 Gb/s; LinkSpeedExtActive 2.
    Edr,
    /// 50 Gb/s; LinkSpeedExtActive 4.
    Hdr,
    /// 100 Gb/s; LinkSpeedExtActive 8.
    Ndr,
}

impl LinkSpeed {
    /// All speeds, in ibnetdiscover spelling.
    const NAMES: [(LinkSpeed, &'static str); 8] = [
        (LinkSpeed::Sdr, "SDR"),
        (LinkSpeed::Ddr, "DDR"),
        (LinkSpeed::Qdr, "QDR"),
        (LinkSpeed::Fdr10, "FDR10"),
        (LinkSpeed::Fdr, "FDR"),
        (LinkSpeed::Edr, "EDR"),
        (LinkSpeed::Hdr, "HDR"),
        (LinkSpeed::Ndr, "NDR"),
    ];

    /// PortInfo LinkSpeedActive code: 1, 2 or 4 (extended speeds run over QDR signalling
    /// in ibsim, so they report 4).
    #[must_use]
    pub const fn speed_code(self) -> u8 {
        match self {
            LinkSpeed::Sdr => 1,
            LinkSpeed::Ddr => 2,
            _ => 4,
        }
    }

    /// PortInfo LinkSpeedExtActive code: 0 (none), 1 FDR, 2 EDR, 4 HDR, 8 NDR.
    #[must_use]
    pub const fn ext_code(self) -> u8 {
        match self {
            LinkSpeed::Fdr => 1,
            LinkSpeed::Edr => 2,
            LinkSpeed::Hdr => 4,
            LinkSpeed::Ndr => 8,
            _ => 0,
        }
    }

    /// The speed from LinkSpeedActive and LinkSpeedExtActive codes (single bits);
    /// `None` for an invalid combination.
    #[must_use]
    pub const fn from_codes(speed: u8, ext: u8) -> Option<LinkSpeed> {
        match (speed, ext) {
            (1, 0) => Some(LinkSpeed::Sdr),
            (2, 0) => Some(LinkSpeed::Ddr),
            (4, 0) => Some(LinkSpeed::Qdr),
            (_, 1) => Some(LinkSpeed::Fdr),
            (_, 2) => Some(LinkSpeed::Edr),
            (_, 4) => Some(LinkSpeed::Hdr),
            (_, 8) => Some(LinkSpeed::Ndr),
            _ => None,
        }
    }

    /// The fastest speed in a pair of enable masks (LinkSpeedEnabled 1..=7 and
    /// LinkSpeedExtEnabled 0..=15), ibsim's rule for a link's active speed.
    #[must_use]
    pub fn fastest_in_masks(speed: u8, ext: u8) -> Option<LinkSpeed> {
        let ext_pick = [
            (8, LinkSpeed::Ndr),
            (4, LinkSpeed::Hdr),
            (2, LinkSpeed::Edr),
            (1, LinkSpeed::Fdr),
        ]
        .into_iter()
        .find(|(bit, _)| ext & bit != 0)
        .map(|(_, s)| s);
        ext_pick.or_else(|| {
            [
                (4, LinkSpeed::Qdr),
                (2, LinkSpeed::Ddr),
                (1, LinkSpeed::Sdr),
            ]
            .into_iter()
            .find(|(bit, _)| speed & bit != 0)
            .map(|(_, s)| s)
        })
    }

    /// The ibnetdiscover name: `SDR`, `QDR`, `FDR10`, `NDR`...
    #[must_use]
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("???", |(_, n)| n)
    }

    /// Parses an ibnetdiscover speed name (exact, case-sensitive).
    #[must_use]
    pub fn from_name(name: &str) -> Option<LinkSpeed> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(s, _)| *s)
    }
}

impl Default for LinkSpeed {
    /// SDR, ibsim's default (`DEFAULT_LINKSPEED`): `smpquery portinfo` on an ibsim port with no
    /// `s=` option reports LinkSpeedActive 2.5 Gbps.
    fn default() -> Self {
        LinkSpeed::Sdr
    }
}

impl fmt::Display for LinkSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// MTU code (IBA vol1 §14.2.5.6 NeighborMTU/MTUCap): 1 = 256 … 5 = 4096.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Mtu(u8);

impl Mtu {
    /// 256 bytes.
    pub const MTU_256: Mtu = Mtu(1);
    /// 512 bytes.
    pub const MTU_512: Mtu = Mtu(2);
    /// 1024 bytes.
    pub const MTU_1024: Mtu = Mtu(3);
    /// 2048 bytes.
    pub const MTU_2048: Mtu = Mtu(4);
    /// 4096 bytes.
    pub const MTU_4096: Mtu = Mtu(5);

    /// The MTU for a code 1..=5.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<Mtu> {
        if code >= 1 && code <= 5 {
            Some(Mtu(code))
        } else {
            None
        }
    }

    /// The code, 1..=5.
    #[must_use]
    pub const fn code(self) -> u8 {
        self.0
    }

    /// The size in bytes.
    #[must_use]
    pub const fn bytes(self) -> u16 {
        128u16 << self.0
    }
}

impl Default for Mtu {
    /// 2048 (code 4): what ibsim reports as MtuCap for every port.
    fn default() -> Self {
        Mtu::MTU_2048
    }
}

/// VLCap code (IBA vol1 §14.2.5.6): 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct VlCap(u8);

impl VlCap {
    /// VL0 only.
    pub const VL0: VlCap = VlCap(1);
    /// VL0-1.
    pub const VL0_1: VlCap = VlCap(2);
    /// VL0-3.
    pub const VL0_3: VlCap = VlCap(3);
    /// VL0-7.
    pub const VL0_7: VlCap = VlCap(4);
    /// VL0-14.
    pub const VL0_14: VlCap = VlCap(5);

    /// The capability for a code 1..=5.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<VlCap> {
        if code >= 1 && code <= 5 {
            Some(VlCap(code))
        } else {
            None
        }
    }

    /// The code, 1..=5.
    #[must_use]
    pub const fn code(self) -> u8 {
        self.0
    }

    /// Number of data VLs: 1, 2, 4, 8 or 15.
    #[must_use]
    pub const fn data_vls(self) -> u8 {
        match self.0 {
            1 => 1,
            2 => 2,
            3 => 4,
            4 => 8,
            _ => 15,
        }
    }
}

impl Default for VlCap {
    /// VL0-7 (code 4): what ibsim reports for every port.
    fn default() -> Self {
        VlCap::VL0_7
    }
}

/// The attributes of one port's link, all sides of a link carry the same values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct LinkAttrs {
    /// Active width.
    pub width: LinkWidth,
    /// Active speed.
    pub speed: LinkSpeed,
    /// MTU capability.
    pub mtu: Mtu,
    /// VL capability.
    pub vl_cap: VlCap,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_codes_round_trip() {
        for c in [1, 2, 4, 8, 16] {
            assert_eq!(LinkWidth::from_code(c).unwrap().code(), c);
        }
        assert_eq!(LinkWidth::from_code(3), None);
        assert_eq!(LinkWidth::widest_in_mask(3), Some(LinkWidth::X4));
        assert_eq!(LinkWidth::widest_in_mask(31), Some(LinkWidth::X12));
        assert_eq!(LinkWidth::widest_in_mask(0), None);
        assert_eq!(LinkWidth::X12.to_string(), "12x");
    }

    #[test]
    fn speed_codes() {
        assert_eq!(LinkSpeed::fastest_in_masks(7, 0), Some(LinkSpeed::Qdr));
        assert_eq!(LinkSpeed::fastest_in_masks(7, 3), Some(LinkSpeed::Edr));
        assert_eq!(LinkSpeed::fastest_in_masks(0, 0), None);
        for s in LinkSpeed::NAMES.map(|(s, _)| s) {
            assert_eq!(LinkSpeed::from_name(s.name()), Some(s));
            if s != LinkSpeed::Fdr10 {
                assert_eq!(LinkSpeed::from_codes(s.speed_code(), s.ext_code()), Some(s));
            }
        }
    }

    #[test]
    fn mtu_and_vlcap() {
        assert_eq!(Mtu::default().bytes(), 2048);
        assert_eq!(Mtu::MTU_4096.bytes(), 4096);
        assert_eq!(Mtu::from_code(6), None);
        assert_eq!(VlCap::default().data_vls(), 8);
        assert_eq!(VlCap::from_code(0), None);
    }
}

//! PathRecord (SA attribute 0x0035), 64 bytes — IBA vol1 §15.2.5.16; and the MTU, rate and
//! packet-lifetime codes with the selectors a query puts in front of them.
//!
//! | bytes | field |
//! |---|---|
//! | 0..7 | ServiceID (ServiceID8MSB = byte 0, ServiceID56LSB = bytes 1..7) |
//! | 8..23 | DGID |
//! | 24..39 | SGID |
//! | 40..41 | DLID |
//! | 42..43 | SLID |
//! | 44..47 | RawTraffic (44[7]), Reserved (44[6..4]), FlowLabel (20 bits, 44[3..0]..46), HopLimit (47) |
//! | 48 | TClass |
//! | 49 | Reversible (49[7]), NumbPath (49[6..0]) |
//! | 50..51 | P_Key |
//! | 52..53 | QoSClass (12 bits, 52..53[7..4]), SL (53[3..0]) |
//! | 54 | MTUSelector (54[7..6]), MTU (54[5..0]) |
//! | 55 | RateSelector (55[7..6]), Rate (55[5..0]) |
//! | 56 | PacketLifeTimeSelector (56[7..6]), PacketLifeTime (56[5..0]) |
//! | 57 | Preference |
//! | 58..63 | Reserved |
//!
//! View: [`PathRecord`] (cast any 64 bytes with `ref_from_prefix`; accessors never fail);
//! validated value: [`PathRecordRepr`], whose `parse` accepts every bit pattern (a PathRecord
//! has no invalid encodings; a query's values are judged by the SA) and whose `emit` writes
//! reserved bits as zero. [`comp`] holds the ComponentMask bits.
//!
//! The rate helpers ([`rate_order`], [`rate_prev`], [`port_rate`]) order and derive the IBA
//! rate codes as OpenSM does (`ordered_rates`, `ib_port_info_compute_rate`): the codes are
//! not in speed order, and paths are compared by effective data rate.

use core::fmt;

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::attr::PortInfo;
use crate::codes::{MgmtClass, SaAttrId};
use crate::error::{check_len, Layer, LenError};
use crate::pretty::field;
use crate::types::{Gid, Lid, PKey};

/// Size of a PathRecord.
pub const PATH_RECORD_LEN: usize = 64;

const LAYER: Layer = Layer::GmpAttr {
    class: MgmtClass::SUBN_ADM,
    attr: SaAttrId::PATH_RECORD.0,
};

/// PathRecord, 64 bytes (IBA vol1 §15.2.5.16).
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct PathRecord {
    /// ServiceID — bytes 0..7.
    pub service_id: U64,
    /// DGID — bytes 8..23.
    pub dgid: [u8; 16],
    /// SGID — bytes 24..39.
    pub sgid: [u8; 16],
    /// DLID — bytes 40..41.
    pub dlid: U16,
    /// SLID — bytes 42..43.
    pub slid: U16,
    /// RawTraffic (bit 31) / Reserved (30..28) / FlowLabel (27..8) / HopLimit (7..0) — bytes 44..47.
    pub raw_flow_hop: U32,
    /// TClass — byte 48.
    pub tclass: u8,
    /// Reversible (7) / NumbPath (6..0) — byte 49.
    pub b49: u8,
    /// P_Key — bytes 50..51.
    pub pkey: U16,
    /// QoSClass (15..4) / SL (3..0) — bytes 52..53.
    pub qos_class_sl: U16,
    /// MTUSelector (7..6) / MTU (5..0) — byte 54.
    pub b54: u8,
    /// RateSelector (7..6) / Rate (5..0) — byte 55.
    pub b55: u8,
    /// PacketLifeTimeSelector (7..6) / PacketLifeTime (5..0) — byte 56.
    pub b56: u8,
    /// Preference — byte 57.
    pub preference: u8,
    /// Reserved — bytes 58..63.
    pub reserved: [u8; 6],
}
const _: () = assert!(size_of::<PathRecord>() == PATH_RECORD_LEN);
const _: () = assert!(core::mem::offset_of!(PathRecord, dgid) == 8);
const _: () = assert!(core::mem::offset_of!(PathRecord, sgid) == 24);
const _: () = assert!(core::mem::offset_of!(PathRecord, dlid) == 40);
const _: () = assert!(core::mem::offset_of!(PathRecord, raw_flow_hop) == 44);
const _: () = assert!(core::mem::offset_of!(PathRecord, tclass) == 48);
const _: () = assert!(core::mem::offset_of!(PathRecord, pkey) == 50);
const _: () = assert!(core::mem::offset_of!(PathRecord, qos_class_sl) == 52);
const _: () = assert!(core::mem::offset_of!(PathRecord, b54) == 54);
const _: () = assert!(core::mem::offset_of!(PathRecord, preference) == 57);

crate::sub_byte_fields!(PathRecord {
    /// Reversible — byte 49, bit 7.
    reversible, set_reversible: b49[7..7];
    /// NumbPath — byte 49, bits 6..0.
    numb_path, set_numb_path: b49[6..0];
    /// MTUSelector — byte 54, bits 7..6.
    mtu_selector, set_mtu_selector: b54[7..6];
    /// MTU — byte 54, bits 5..0.
    mtu, set_mtu: b54[5..0];
    /// RateSelector — byte 55, bits 7..6.
    rate_selector, set_rate_selector: b55[7..6];
    /// Rate — byte 55, bits 5..0.
    rate, set_rate: b55[5..0];
    /// PacketLifeTimeSelector — byte 56, bits 7..6.
    packet_life_selector, set_packet_life_selector: b56[7..6];
    /// PacketLifeTime — byte 56, bits 5..0.
    packet_life, set_packet_life: b56[5..0];
});

impl PathRecord {
    /// RawTraffic — byte 44, bit 7.
    #[must_use]
    pub fn raw_traffic(&self) -> bool {
        self.raw_flow_hop.get() & (1 << 31) != 0
    }
    /// FlowLabel — byte 44 bits 3..0, bytes 45..46 (20 bits).
    #[must_use]
    pub fn flow_label(&self) -> u32 {
        (self.raw_flow_hop.get() >> 8) & 0xF_FFFF
    }
    /// HopLimit — byte 47.
    #[must_use]
    pub fn hop_limit(&self) -> u8 {
        (self.raw_flow_hop.get() & 0xFF) as u8
    }
    /// QoSClass — bytes 52..53, bits 15..4 (12 bits).
    #[must_use]
    pub fn qos_class(&self) -> u16 {
        self.qos_class_sl.get() >> 4
    }
    /// SL — byte 53, bits 3..0.
    #[must_use]
    pub fn sl(&self) -> u8 {
        (self.qos_class_sl.get() & 0xF) as u8
    }
    /// DGID.
    #[must_use]
    pub fn dgid(&self) -> Gid {
        Gid(self.dgid)
    }
    /// SGID.
    #[must_use]
    pub fn sgid(&self) -> Gid {
        Gid(self.sgid)
    }
}

/// Field listing with IBA field names, in the order `saquery -p` prints them.
impl fmt::Display for PathRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&PathRecordRepr::from_raw(self), f)
    }
}

/// ComponentMask bits of a PathRecord query, in IBA order (OpenSM `IB_PR_COMPMASK_*`).
pub mod comp {
    /// ServiceID8MSB (bit 0).
    pub const SERVICE_ID_MSB: u64 = 1 << 0;
    /// ServiceID56LSB (bit 1).
    pub const SERVICE_ID_LSB: u64 = 1 << 1;
    /// Both halves of ServiceID.
    pub const SERVICE_ID: u64 = SERVICE_ID_MSB | SERVICE_ID_LSB;
    /// DGID (bit 2).
    pub const DGID: u64 = 1 << 2;
    /// SGID (bit 3).
    pub const SGID: u64 = 1 << 3;
    /// DLID (bit 4).
    pub const DLID: u64 = 1 << 4;
    /// SLID (bit 5).
    pub const SLID: u64 = 1 << 5;
    /// RawTraffic (bit 6).
    pub const RAW_TRAFFIC: u64 = 1 << 6;
    /// Reserved (bit 7).
    pub const RESERVED0: u64 = 1 << 7;
    /// FlowLabel (bit 8).
    pub const FLOW_LABEL: u64 = 1 << 8;
    /// HopLimit (bit 9).
    pub const HOP_LIMIT: u64 = 1 << 9;
    /// TClass (bit 10).
    pub const TCLASS: u64 = 1 << 10;
    /// Reversible (bit 11).
    pub const REVERSIBLE: u64 = 1 << 11;
    /// NumbPath (bit 12).
    pub const NUMB_PATH: u64 = 1 << 12;
    /// P_Key (bit 13).
    pub const PKEY: u64 = 1 << 13;
    /// QoSClass (bit 14).
    pub const QOS_CLASS: u64 = 1 << 14;
    /// SL (bit 15).
    pub const SL: u64 = 1 << 15;
    /// MTUSelector (bit 16).
    pub const MTU_SELECTOR: u64 = 1 << 16;
    /// MTU (bit 17).
    pub const MTU: u64 = 1 << 17;
    /// RateSelector (bit 18).
    pub const RATE_SELECTOR: u64 = 1 << 18;
    /// Rate (bit 19).
    pub const RATE: u64 = 1 << 19;
    /// PacketLifeTimeSelector (bit 20).
    pub const PACKET_LIFE_SELECTOR: u64 = 1 << 20;
    /// PacketLifeTime (bit 21).
    pub const PACKET_LIFE: u64 = 1 << 21;
    /// Preference (bit 22).
    pub const PREFERENCE: u64 = 1 << 22;
}

/// The selector in front of an MTU, rate or packet lifetime (IBA vol1 §15.2.5.16): in a query,
/// how the value constrains the answer; in an answer, always [`Selector::Exactly`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Selector {
    /// 0: greater than the value.
    GreaterThan,
    /// 1: less than the value.
    LessThan,
    /// 2: exactly the value.
    Exactly,
    /// 3: the largest available (for a packet lifetime: the smallest).
    Best,
}

impl Selector {
    /// From the 2-bit field.
    #[must_use]
    pub const fn from_bits(v: u8) -> Selector {
        match v & 3 {
            0 => Selector::GreaterThan,
            1 => Selector::LessThan,
            2 => Selector::Exactly,
            _ => Selector::Best,
        }
    }
    /// The 2-bit field.
    #[must_use]
    pub const fn bits(self) -> u8 {
        match self {
            Selector::GreaterThan => 0,
            Selector::LessThan => 1,
            Selector::Exactly => 2,
            Selector::Best => 3,
        }
    }
}

/// PathRecord, validated (see the module docs: every bit pattern parses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PathRecordRepr {
    /// ServiceID.
    pub service_id: u64,
    /// DGID.
    pub dgid: Gid,
    /// SGID.
    pub sgid: Gid,
    /// DLID.
    pub dlid: Lid,
    /// SLID.
    pub slid: Lid,
    /// RawTraffic.
    pub raw_traffic: bool,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub tclass: u8,
    /// Reversible.
    pub reversible: bool,
    /// NumbPath (7 bits).
    pub numb_path: u8,
    /// P_Key.
    pub pkey: PKey,
    /// QoSClass (12 bits).
    pub qos_class: u16,
    /// SL (4 bits).
    pub sl: u8,
    /// MTUSelector.
    pub mtu_selector: Selector,
    /// MTU code (6 bits; 1..=5 are 256..4096 bytes).
    pub mtu: u8,
    /// RateSelector.
    pub rate_selector: Selector,
    /// Rate code (6 bits; 2..=24 defined).
    pub rate: u8,
    /// PacketLifeTimeSelector.
    pub packet_life_selector: Selector,
    /// PacketLifeTime (6 bits).
    pub packet_life: u8,
    /// Preference.
    pub preference: u8,
}

impl Default for PathRecordRepr {
    fn default() -> Self {
        PathRecordRepr::from_raw(&PathRecord::new_zeroed())
    }
}

impl PathRecordRepr {
    /// The value of a view. Never fails (see the module docs).
    #[must_use]
    pub fn from_raw(r: &PathRecord) -> PathRecordRepr {
        PathRecordRepr {
            service_id: r.service_id.get(),
            dgid: r.dgid(),
            sgid: r.sgid(),
            dlid: Lid(r.dlid.get()),
            slid: Lid(r.slid.get()),
            raw_traffic: r.raw_traffic(),
            flow_label: r.flow_label(),
            hop_limit: r.hop_limit(),
            tclass: r.tclass,
            reversible: r.reversible() != 0,
            numb_path: r.numb_path(),
            pkey: PKey(r.pkey.get()),
            qos_class: r.qos_class(),
            sl: r.sl(),
            mtu_selector: Selector::from_bits(r.mtu_selector()),
            mtu: r.mtu(),
            rate_selector: Selector::from_bits(r.rate_selector()),
            rate: r.rate(),
            packet_life_selector: Selector::from_bits(r.packet_life_selector()),
            packet_life: r.packet_life(),
            preference: r.preference,
        }
    }

    /// The wire struct: reserved bits zero, sub-byte fields keep their low bits.
    #[must_use]
    pub fn to_raw(&self) -> PathRecord {
        let mut r = PathRecord::new_zeroed();
        r.service_id.set(self.service_id);
        r.dgid = self.dgid.0;
        r.sgid = self.sgid.0;
        r.dlid.set(self.dlid.0);
        r.slid.set(self.slid.0);
        r.raw_flow_hop.set(
            (u32::from(self.raw_traffic) << 31)
                | ((self.flow_label & 0xF_FFFF) << 8)
                | u32::from(self.hop_limit),
        );
        r.tclass = self.tclass;
        r.set_reversible(u8::from(self.reversible));
        r.set_numb_path(self.numb_path);
        r.pkey.set(self.pkey.0);
        r.qos_class_sl
            .set(((self.qos_class & 0xFFF) << 4) | u16::from(self.sl & 0xF));
        r.set_mtu_selector(self.mtu_selector.bits());
        r.set_mtu(self.mtu);
        r.set_rate_selector(self.rate_selector.bits());
        r.set_rate(self.rate);
        r.set_packet_life_selector(self.packet_life_selector.bits());
        r.set_packet_life(self.packet_life);
        r.preference = self.preference;
        r
    }

    /// Parses the first 64 bytes of `data`.
    ///
    /// # Errors
    /// `data` is shorter than 64 bytes.
    pub fn parse(data: &[u8]) -> Result<PathRecordRepr, LenError> {
        check_len(data, PATH_RECORD_LEN, LAYER, 0)?;
        match PathRecord::ref_from_prefix(data) {
            Ok((r, _)) => Ok(PathRecordRepr::from_raw(r)),
            // Unreachable after check_len; reported as the same error.
            Err(_) => check_len(&[], PATH_RECORD_LEN, LAYER, 0).map(|()| PathRecordRepr::default()),
        }
    }

    /// Writes the record into the first 64 bytes of `data`.
    ///
    /// # Errors
    /// `data` is shorter than 64 bytes.
    pub fn emit(&self, data: &mut [u8]) -> Result<(), LenError> {
        check_len(data, PATH_RECORD_LEN, LAYER, 0)?;
        if let Some(out) = data.get_mut(..PATH_RECORD_LEN) {
            out.copy_from_slice(self.to_raw().as_bytes());
        }
        Ok(())
    }

    /// Bytes [`PathRecordRepr::emit`] writes.
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        PATH_RECORD_LEN
    }
}

/// Field listing with IBA field names, in the order `saquery -p` prints them.
impl fmt::Display for PathRecordRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "service_id", format_args!("{:#018x}", self.service_id))?;
        field(f, "dgid", self.dgid)?;
        field(f, "sgid", self.sgid)?;
        field(f, "dlid", format_args!("{:#x}", self.dlid.0))?;
        field(f, "slid", format_args!("{:#x}", self.slid.0))?;
        field(
            f,
            "hop_flow_raw",
            format_args!("{:#010x}", self.to_raw().raw_flow_hop.get()),
        )?;
        field(f, "tclass", format_args!("{:#x}", self.tclass))?;
        field(
            f,
            "num_path_revers",
            format_args!("{:#x}", self.to_raw().b49),
        )?;
        field(f, "pkey", format_args!("{:#06x}", self.pkey.0))?;
        field(f, "qos_class", format_args!("{:#x}", self.qos_class))?;
        field(f, "sl", format_args!("{:#x}", self.sl))?;
        field(f, "mtu", format_args!("{:#x}", self.to_raw().b54))?;
        field(f, "rate", format_args!("{:#x}", self.to_raw().b55))?;
        field(f, "pkt_life", format_args!("{:#x}", self.to_raw().b56))?;
        field(f, "preference", format_args!("{:#x}", self.preference))
    }
}

/// MTU codes 1..=5 (256..4096 bytes) are valid in a query (OpenSM `ib_mtu_is_valid`).
#[must_use]
pub const fn mtu_is_valid(code: u8) -> bool {
    matches!(code, 1..=5)
}

/// Rate codes 2..=24 are valid in a query (OpenSM `ib_rate_is_valid`).
#[must_use]
pub const fn rate_is_valid(code: u8) -> bool {
    matches!(code, 2..=24)
}

/// Rank of each rate code by effective data rate (index = code; 0 = not a rate), as OpenSM's
/// `ordered_rates`: 2.5, 5, 10, 14, 20, 30, 25, 28, 40, 60, 50, 56, 80, 120, 100, 112, 168,
/// 200, 300, 400, 600, 800, 1200 Gb/s.
const RATE_ORDER: [u8; 25] = [
    0, 0, 1, 3, 6, 2, 5, 9, 10, 13, 14, 4, 12, 16, 17, 7, 15, 18, 19, 8, 11, 20, 21, 22, 23,
];
/// The inverse of [`RATE_ORDER`]: the code of each rank.
const RATE_OF_ORDER: [u8; 24] = [
    0, 2, 5, 3, 11, 6, 4, 15, 19, 7, 8, 20, 12, 9, 10, 16, 13, 14, 17, 18, 21, 22, 23, 24,
];

/// The rank of rate `code` by effective data rate (1 = 2.5 Gb/s … 23 = 1200 Gb/s); `None` for
/// a code that is not a rate. Compare rates by rank, never by code.
#[must_use]
pub const fn rate_order(code: u8) -> Option<u8> {
    if rate_is_valid(code) {
        Some(RATE_ORDER[code as usize])
    } else {
        None
    }
}

/// The rate code of rank `order` (the inverse of [`rate_order`]).
#[must_use]
pub const fn rate_of_order(order: u8) -> Option<u8> {
    if order >= 1 && (order as usize) < RATE_OF_ORDER.len() {
        Some(RATE_OF_ORDER[order as usize])
    } else {
        None
    }
}

/// The nominal data rate of rate `code` in Gb/s, as the kernel's `rate` file and ibstat print
/// it ("2.5", "56", "100"; IBA vol1 §15.2.5.16, PathRecord Rate); `None` for a code that is
/// not a rate.
#[must_use]
pub const fn rate_gbps_text(code: u8) -> Option<&'static str> {
    const GBPS: [&str; 25] = [
        "", "", "2.5", "10", "30", "5", "20", "40", "60", "80", "120", "14", "56", "112", "168",
        "25", "100", "200", "300", "28", "50", "400", "600", "800", "1200",
    ];
    if rate_is_valid(code) {
        Some(GBPS[code as usize])
    } else {
        None
    }
}

/// The next lower rate than `code` (OpenSM `ib_path_rate_get_prev`); `None` below 2.5 Gb/s or
/// for a code that is not a rate.
#[must_use]
pub const fn rate_prev(code: u8) -> Option<u8> {
    match rate_order(code) {
        Some(o) if o > 1 => rate_of_order(o - 1),
        _ => None,
    }
}

/// The rate code of a link from a port's PortInfo (OpenSM `ib_port_info_compute_rate`):
/// LinkWidthActive × (LinkSpeedExtActive if `extended` and set, else LinkSpeedActive).
/// `extended` is IsExtendedSpeedsSupported of the port that decides (for a switch port: of
/// its port 0). Unknown widths count as 1x; an unknown speed gives 2.5 Gb/s.
#[must_use]
pub fn port_rate(pi: &PortInfo, extended: bool) -> u8 {
    // Codes per width 1x, 4x, 8x, 12x, 2x.
    let by_width = |t: [u8; 5]| match pi.link_width_active {
        2 => t[1],
        4 => t[2],
        8 => t[3],
        16 => t[4],
        _ => t[0],
    };
    if extended {
        let t = match pi.link_speed_ext_active() {
            1 => Some([11, 12, 13, 14, 19]), // 14 Gb/s (FDR)
            2 => Some([15, 16, 17, 18, 20]), // 25 Gb/s (EDR)
            4 => Some([20, 17, 21, 22, 16]), // 50 Gb/s (HDR)
            8 => Some([16, 21, 23, 24, 17]), // 100 Gb/s (NDR)
            _ => None,
        };
        if let Some(t) = t {
            return by_width(t);
        }
    }
    match pi.link_speed_active() {
        1 => by_width([2, 3, 6, 4, 5]),  // 2.5 Gb/s (SDR)
        2 => by_width([5, 6, 7, 8, 3]),  // 5 Gb/s (DDR)
        4 => by_width([3, 7, 9, 10, 6]), // 10 Gb/s (QDR)
        _ => 2,
    }
}

/// PortInfo.CapabilityMask bit IsExtendedSpeedsSupported (bit 14).
pub const CAP_HAS_EXT_SPEEDS: u32 = 1 << 14;
/// PortInfo.CapabilityMask bit IsCapabilityMask2Supported (bit 15).
pub const CAP_HAS_CAP_MASK2: u32 = 1 << 15;
/// PortInfo.CapabilityMask2 bit IsLinkWidth2xSupported (bit 4).
pub const CAP2_LINK_WIDTH_2X: u16 = 1 << 4;
/// PortInfo.CapabilityMask2 bit IsLinkSpeedHDRSupported (bit 5).
pub const CAP2_LINK_SPEED_HDR: u16 = 1 << 5;

/// A path rate an end port may not be able to use, lowered as OpenSM does for 2x and HDR rates
/// (`ib_path_rate_2x_hdr_fixups`): 28 Gb/s without 2x support → 25 (or 20 without extended
/// speeds); 50 Gb/s with neither 2x nor HDR → 40; 400/600 Gb/s without HDR → 300.
#[must_use]
pub fn rate_2x_hdr_fixup(pi: &PortInfo, rate: u8) -> u8 {
    let cap = pi.capability_mask.get();
    let cap2 = if cap & CAP_HAS_CAP_MASK2 != 0 {
        pi.capability_mask2.get()
    } else {
        0
    };
    match rate {
        19 if cap2 & CAP2_LINK_WIDTH_2X == 0 => {
            if cap & CAP_HAS_EXT_SPEEDS != 0 {
                15
            } else {
                6
            }
        }
        20 if cap2 & (CAP2_LINK_WIDTH_2X | CAP2_LINK_SPEED_HDR) == 0 => 7,
        21 | 22 if cap2 & CAP2_LINK_SPEED_HDR == 0 => 18,
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PathRecord answer of stock OpenSM 3.3.23 (`saquery -p` against OpenSM on ibsim, the
    /// record from LID 2 to LID 1 of a 2-switch fabric): SL 0, MTU 2048 exactly, 10 Gb/s
    /// exactly, PacketLifeTime 18 exactly, reversible, P_Key 0xFFFF.
    static BYTES: [u8; 64] = [
        0, 0, 0, 0, 0, 0, 0, 0, // ServiceID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01, // DGID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x02, // SGID
        0x00, 0x01, 0x00, 0x02, // DLID, SLID
        0, 0, 0, 0, // RawTraffic / FlowLabel / HopLimit
        0x00, 0x80, 0xff, 0xff, // TClass, Reversible|NumbPath, P_Key
        0x00, 0x00, 0x84, 0x83, 0x92,
        0x00, // QoSClass/SL, MTU, Rate, PacketLifeTime, Preference
        0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn deconstruct() {
        let (r, _) = PathRecord::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(r.dlid.get(), 1);
        assert_eq!(r.slid.get(), 2);
        assert_eq!(r.dgid().prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(r.sgid().guid().0, 0x0002_c903_0000_0002);
        assert_eq!(r.reversible(), 1);
        assert_eq!(r.numb_path(), 0);
        assert_eq!(r.pkey.get(), 0xffff);
        assert_eq!((r.mtu_selector(), r.mtu()), (2, 4));
        assert_eq!((r.rate_selector(), r.rate()), (2, 3));
        assert_eq!((r.packet_life_selector(), r.packet_life()), (2, 18));
        assert_eq!(
            (r.sl(), r.qos_class(), r.hop_limit(), r.flow_label()),
            (0, 0, 0, 0)
        );
    }

    #[test]
    fn construct_and_round_trip() {
        let repr = PathRecordRepr::parse(&BYTES).unwrap();
        assert_eq!(repr.mtu_selector, Selector::Exactly);
        assert!(repr.reversible && !repr.raw_traffic);
        let mut out = [0xAAu8; 64];
        repr.emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
        let built = PathRecordRepr {
            dgid: Gid::new(0xfe80_0000_0000_0000, crate::Guid(0x0002_c903_0000_0001)),
            sgid: Gid::new(0xfe80_0000_0000_0000, crate::Guid(0x0002_c903_0000_0002)),
            dlid: Lid(1),
            slid: Lid(2),
            reversible: true,
            pkey: PKey(0xffff),
            mtu_selector: Selector::Exactly,
            mtu: 4,
            rate_selector: Selector::Exactly,
            rate: 3,
            packet_life_selector: Selector::Exactly,
            packet_life: 18,
            ..PathRecordRepr::default()
        };
        assert_eq!(built.to_raw().as_bytes(), &BYTES[..]);
    }

    #[test]
    fn sub_byte_fields_and_reserved_bits() {
        let mut b = [0xFFu8; 64];
        let r = PathRecordRepr::parse(&b).unwrap();
        assert_eq!(r.flow_label, 0xF_FFFF);
        assert_eq!(
            (r.hop_limit, r.numb_path, r.qos_class, r.sl),
            (0xFF, 0x7F, 0xFFF, 0xF)
        );
        assert_eq!((r.mtu, r.rate, r.packet_life), (0x3F, 0x3F, 0x3F));
        let mut out = [0u8; 64];
        r.emit(&mut out).unwrap();
        // Reserved: byte 44 bits 6..4 and bytes 58..63 come out zero.
        b[44] = 0x8F;
        b[58..].fill(0);
        assert_eq!(out, b);
        assert_eq!(r.buffer_len(), 64);
    }

    #[test]
    fn impossible_len() {
        assert!(PathRecordRepr::parse(&BYTES[..63]).is_err());
        let mut short = [0u8; 10];
        assert!(PathRecordRepr::default().emit(&mut short).is_err());
    }

    #[test]
    fn rates_order_as_opensm() {
        // 30 Gb/s (12x SDR) ranks below 25 Gb/s (1x EDR) by effective rate.
        assert!(rate_order(4).unwrap() < rate_order(15).unwrap());
        for code in 2..=24u8 {
            assert_eq!(rate_of_order(rate_order(code).unwrap()), Some(code));
        }
        assert_eq!(rate_prev(3), Some(5)); // 10 → 5 Gb/s
        assert_eq!(rate_prev(2), None);
        assert_eq!(rate_prev(0), None);
        assert!(!rate_is_valid(1) && !rate_is_valid(25) && mtu_is_valid(5) && !mtu_is_valid(6));
    }

    #[test]
    fn port_rates() {
        let mut pi = PortInfo::new_zeroed();
        pi.link_width_active = 2;
        pi.set_link_speed_active(1);
        assert_eq!(port_rate(&pi, false), 3); // 4x SDR = 10 Gb/s
        pi.set_link_speed_active(4);
        assert_eq!(port_rate(&pi, false), 7); // 4x QDR = 40 Gb/s
        pi.set_link_speed_ext_active(2);
        assert_eq!(port_rate(&pi, false), 7);
        assert_eq!(port_rate(&pi, true), 16); // 4x EDR = 100 Gb/s
        pi.link_width_active = 8;
        pi.set_link_speed_ext_active(0);
        assert_eq!(port_rate(&pi, true), 10); // falls back to 12x QDR = 120 Gb/s
        assert_eq!(rate_gbps_text(10), Some("120"));
        assert_eq!(rate_gbps_text(2), Some("2.5"));
        assert_eq!(rate_gbps_text(12), Some("56"));
        assert_eq!(rate_gbps_text(1), None);
        // 2x/HDR fix-ups.
        assert_eq!(rate_2x_hdr_fixup(&pi, 19), 6);
        assert_eq!(rate_2x_hdr_fixup(&pi, 21), 18);
        pi.capability_mask
            .set(CAP_HAS_CAP_MASK2 | CAP_HAS_EXT_SPEEDS);
        pi.capability_mask2.set(CAP2_LINK_SPEED_HDR);
        assert_eq!(rate_2x_hdr_fixup(&pi, 21), 21);
        assert_eq!(rate_2x_hdr_fixup(&pi, 19), 15);
        assert_eq!(rate_2x_hdr_fixup(&pi, 20), 20);
        assert_eq!(rate_2x_hdr_fixup(&pi, 3), 3);
    }

    #[test]
    fn display_names_fields() {
        let s = PathRecordRepr::parse(&BYTES).unwrap().to_string();
        assert!(s.contains("dlid:") && s.contains("0x84") && s.contains("pkey:"));
    }
}

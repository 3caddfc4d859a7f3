//! SwitchInfo (attribute 0x0012), 20 bytes used of 64 — IBA vol1 §14.2.5.4.
//!
//! View: [`SwitchInfo`]; validated value: [`SwitchInfoRepr`] (see [`crate::attr`]).

use core::fmt;

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::attr::AttrRepr;
use crate::codes::SmpAttrId;
use crate::error::ParseError;
use crate::pretty::field;
use crate::types::{Lid, PortNum};

/// SwitchInfo.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct SwitchInfo {
    /// LinearFDBCap — bytes 0..1.
    pub linear_fdb_cap: U16,
    /// RandomFDBCap — bytes 2..3.
    pub random_fdb_cap: U16,
    /// MulticastFDBCap — bytes 4..5.
    pub multicast_fdb_cap: U16,
    /// LinearFDBTop — bytes 6..7.
    pub linear_fdb_top: U16,
    /// DefaultPort — byte 8.
    pub default_port: u8,
    /// DefaultMulticastPrimaryPort — byte 9.
    pub default_mcast_primary_port: u8,
    /// DefaultMulticastNotPrimaryPort — byte 10.
    pub default_mcast_not_primary_port: u8,
    /// LifeTimeValue (7..3) / PortStateChange (2) / OptimizedSLtoVLMappingProgramming (1..0) — byte 11.
    pub b11: u8,
    /// LIDsPerPort — bytes 12..13.
    pub lids_per_port: U16,
    /// PartitionEnforcementCap — bytes 14..15.
    pub partition_enforcement_cap: U16,
    /// InboundEnforcementCap (7) / OutboundEnforcementCap (6) / FilterRawInboundCap (5) /
    /// FilterRawOutboundCap (4) / EnhancedPort0 (3) — byte 16.
    pub b16: u8,
    /// Reserved — byte 17.
    pub resv17: u8,
    /// MulticastFDBTop — bytes 18..19.
    pub multicast_fdb_top: U16,
    /// Reserved — bytes 20..63.
    pub reserved: [u8; 44],
}
const _: () = assert!(size_of::<SwitchInfo>() == 64);
const _: () = assert!(core::mem::offset_of!(SwitchInfo, b11) == 11);
const _: () = assert!(core::mem::offset_of!(SwitchInfo, multicast_fdb_top) == 18);

crate::sub_byte_fields!(SwitchInfo {
    /// LifeTimeValue — byte 11, bits 7..3.
    life_time_value, set_life_time_value: b11[7..3];
    /// PortStateChange — byte 11, bit 2 (write 1 to clear).
    port_state_change, set_port_state_change: b11[2..2];
    /// OptimizedSLtoVLMappingProgramming — byte 11, bits 1..0.
    optimized_sl2vl, set_optimized_sl2vl: b11[1..0];
    /// InboundEnforcementCap — byte 16, bit 7.
    inbound_enforcement_cap, set_inbound_enforcement_cap: b16[7..7];
    /// OutboundEnforcementCap — byte 16, bit 6.
    outbound_enforcement_cap, set_outbound_enforcement_cap: b16[6..6];
    /// FilterRawInboundCap — byte 16, bit 5.
    filter_raw_inbound_cap, set_filter_raw_inbound_cap: b16[5..5];
    /// FilterRawOutboundCap — byte 16, bit 4.
    filter_raw_outbound_cap, set_filter_raw_outbound_cap: b16[4..4];
    /// EnhancedPort0 — byte 16, bit 3.
    enhanced_port0, set_enhanced_port0: b16[3..3];
});

/// Field listing in the layout of `smpquery switchinfo`, with IBA field names.
impl fmt::Display for SwitchInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "LinearFDBCap", self.linear_fdb_cap.get())?;
        field(f, "RandomFDBCap", self.random_fdb_cap.get())?;
        field(f, "MulticastFDBCap", self.multicast_fdb_cap.get())?;
        field(f, "LinearFDBTop", self.linear_fdb_top.get())?;
        field(f, "DefaultPort", self.default_port)?;
        field(
            f,
            "DefaultMulticastPrimaryPort",
            self.default_mcast_primary_port,
        )?;
        field(
            f,
            "DefaultMulticastNotPrimaryPort",
            self.default_mcast_not_primary_port,
        )?;
        field(f, "LifeTimeValue", self.life_time_value())?;
        field(f, "PortStateChange", self.port_state_change())?;
        field(
            f,
            "OptimizedSLtoVLMappingProgramming",
            self.optimized_sl2vl(),
        )?;
        field(f, "LIDsPerPort", self.lids_per_port.get())?;
        field(
            f,
            "PartitionEnforcementCap",
            self.partition_enforcement_cap.get(),
        )?;
        field(f, "InboundEnforcementCap", self.inbound_enforcement_cap())?;
        field(f, "OutboundEnforcementCap", self.outbound_enforcement_cap())?;
        field(f, "FilterRawInboundCap", self.filter_raw_inbound_cap())?;
        field(f, "FilterRawOutboundCap", self.filter_raw_outbound_cap())?;
        field(f, "EnhancedPort0", self.enhanced_port0())?;
        field(
            f,
            "MulticastFDBTop",
            format_args!("{:#06x}", self.multicast_fdb_top.get()),
        )
    }
}

/// SwitchInfo, validated.
///
/// Every value of the defined fields is accepted. Reserved bits (byte 16 bits 2..0, byte 17,
/// bytes 20..63) are ignored and emitted as zero; sub-byte fields keep only their low bits on
/// `emit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SwitchInfoRepr {
    /// LinearFDBCap.
    pub linear_fdb_cap: u16,
    /// RandomFDBCap.
    pub random_fdb_cap: u16,
    /// MulticastFDBCap.
    pub multicast_fdb_cap: u16,
    /// LinearFDBTop: the highest LID the linear table holds.
    pub linear_fdb_top: Lid,
    /// DefaultPort.
    pub default_port: PortNum,
    /// DefaultMulticastPrimaryPort.
    pub default_mcast_primary_port: PortNum,
    /// DefaultMulticastNotPrimaryPort.
    pub default_mcast_not_primary_port: PortNum,
    /// LifeTimeValue (5 bits).
    pub life_time_value: u8,
    /// PortStateChange.
    pub port_state_change: bool,
    /// OptimizedSLtoVLMappingProgramming (2 bits).
    pub optimized_sl2vl: u8,
    /// LIDsPerPort.
    pub lids_per_port: u16,
    /// PartitionEnforcementCap.
    pub partition_enforcement_cap: u16,
    /// InboundEnforcementCap.
    pub inbound_enforcement_cap: bool,
    /// OutboundEnforcementCap.
    pub outbound_enforcement_cap: bool,
    /// FilterRawInboundCap.
    pub filter_raw_inbound_cap: bool,
    /// FilterRawOutboundCap.
    pub filter_raw_outbound_cap: bool,
    /// EnhancedPort0.
    pub enhanced_port0: bool,
    /// MulticastFDBTop.
    pub multicast_fdb_top: Lid,
}

impl AttrRepr for SwitchInfoRepr {
    type Raw = SwitchInfo;
    const ATTR_ID: SmpAttrId = SmpAttrId::SWITCH_INFO;

    fn from_raw(r: &SwitchInfo) -> Result<Self, ParseError> {
        Ok(SwitchInfoRepr {
            linear_fdb_cap: r.linear_fdb_cap.get(),
            random_fdb_cap: r.random_fdb_cap.get(),
            multicast_fdb_cap: r.multicast_fdb_cap.get(),
            linear_fdb_top: Lid(r.linear_fdb_top.get()),
            default_port: PortNum(r.default_port),
            default_mcast_primary_port: PortNum(r.default_mcast_primary_port),
            default_mcast_not_primary_port: PortNum(r.default_mcast_not_primary_port),
            life_time_value: r.life_time_value(),
            port_state_change: r.port_state_change() != 0,
            optimized_sl2vl: r.optimized_sl2vl(),
            lids_per_port: r.lids_per_port.get(),
            partition_enforcement_cap: r.partition_enforcement_cap.get(),
            inbound_enforcement_cap: r.inbound_enforcement_cap() != 0,
            outbound_enforcement_cap: r.outbound_enforcement_cap() != 0,
            filter_raw_inbound_cap: r.filter_raw_inbound_cap() != 0,
            filter_raw_outbound_cap: r.filter_raw_outbound_cap() != 0,
            enhanced_port0: r.enhanced_port0() != 0,
            multicast_fdb_top: Lid(r.multicast_fdb_top.get()),
        })
    }

    fn to_raw(&self) -> SwitchInfo {
        let mut r = SwitchInfo::new_zeroed();
        r.linear_fdb_cap.set(self.linear_fdb_cap);
        r.random_fdb_cap.set(self.random_fdb_cap);
        r.multicast_fdb_cap.set(self.multicast_fdb_cap);
        r.linear_fdb_top.set(self.linear_fdb_top.0);
        r.default_port = self.default_port.0;
        r.default_mcast_primary_port = self.default_mcast_primary_port.0;
        r.default_mcast_not_primary_port = self.default_mcast_not_primary_port.0;
        r.set_life_time_value(self.life_time_value);
        r.set_port_state_change(self.port_state_change.into());
        r.set_optimized_sl2vl(self.optimized_sl2vl);
        r.lids_per_port.set(self.lids_per_port);
        r.partition_enforcement_cap
            .set(self.partition_enforcement_cap);
        r.set_inbound_enforcement_cap(self.inbound_enforcement_cap.into());
        r.set_outbound_enforcement_cap(self.outbound_enforcement_cap.into());
        r.set_filter_raw_inbound_cap(self.filter_raw_inbound_cap.into());
        r.set_filter_raw_outbound_cap(self.filter_raw_outbound_cap.into());
        r.set_enhanced_port0(self.enhanced_port0.into());
        r.multicast_fdb_top.set(self.multicast_fdb_top.0);
        r
    }
}

crate::attr::display_via_raw!(SwitchInfoRepr);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::{data, num, rcv, smpquery_fields, smpquery_value};
    use zerocopy::IntoBytes;

    /// SwitchInfo of ibsim's Switch1 (net.2sw2path) after one OpenSM sweep: SMP data of the
    /// GetResp to `smpquery -K -D switchinfo 0` (mad/testdata/si_sw1_dr0.*, made by
    /// mad/testdata/capture.sh). Bytes 20..63 are reserved and zero.
    static BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        let head: [u8; 20] = [
            0x78, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00,
            0x00, 0x40, 0x30, 0x00, 0x00, 0x00,
        ];
        let mut i = 0;
        while i < 20 {
            b[i] = head[i];
            i += 1;
        }
        b
    };

    fn repr() -> SwitchInfoRepr {
        SwitchInfoRepr {
            linear_fdb_cap: 30720,
            random_fdb_cap: 0,
            multicast_fdb_cap: 1024,
            linear_fdb_top: Lid(4),
            default_port: PortNum(0),
            default_mcast_primary_port: PortNum(0),
            default_mcast_not_primary_port: PortNum(0),
            life_time_value: 18,
            port_state_change: false,
            optimized_sl2vl: 0,
            lids_per_port: 0,
            partition_enforcement_cap: 64,
            inbound_enforcement_cap: false,
            outbound_enforcement_cap: false,
            filter_raw_inbound_cap: true,
            filter_raw_outbound_cap: true,
            enhanced_port0: false,
            multicast_fdb_top: Lid(0),
        }
    }

    #[test]
    fn bytes_are_the_capture() {
        let mad = rcv(include_str!("../../testdata/si_sw1_dr0.mads"), 0x12, None);
        assert_eq!(data(&mad), BYTES);
    }

    #[test]
    fn deconstruct() {
        let (si, _) = SwitchInfo::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(si.linear_fdb_cap.get(), 30720);
        assert_eq!(si.multicast_fdb_cap.get(), 1024);
        assert_eq!(si.linear_fdb_top.get(), 4);
        assert_eq!(si.life_time_value(), 18);
        assert_eq!(si.port_state_change(), 0);
        assert_eq!(si.partition_enforcement_cap.get(), 64);
        assert_eq!(si.filter_raw_inbound_cap(), 1);
        assert_eq!(si.filter_raw_outbound_cap(), 1);
        assert_eq!(si.enhanced_port0(), 0);
    }

    #[test]
    fn construct() {
        let mut si = SwitchInfo::new_zeroed();
        si.linear_fdb_cap.set(30720);
        si.multicast_fdb_cap.set(1024);
        si.linear_fdb_top.set(4);
        si.set_life_time_value(18);
        si.partition_enforcement_cap.set(64);
        si.set_filter_raw_inbound_cap(1);
        si.set_filter_raw_outbound_cap(1);
        assert_eq!(si.as_bytes(), &BYTES[..]);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(SwitchInfoRepr::parse(&BYTES).unwrap(), repr());
        let mut buf = [0xFFu8; 64];
        repr().emit(&mut buf).unwrap();
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn impossible_len() {
        assert!(matches!(
            SwitchInfoRepr::parse(&BYTES[..63]),
            Err(ParseError::Len(e)) if e.required == 64 && e.got == 63
        ));
    }

    #[test]
    fn reserved_bits() {
        let mut b = BYTES;
        b[16] |= 0x07;
        b[17] = 0xFF;
        b[40] = 0x5A;
        // The view preserves reserved bits when a neighbour is set ...
        let (si, _) = SwitchInfo::mut_from_prefix(&mut b[..]).unwrap();
        si.set_enhanced_port0(1);
        assert_eq!(si.b16, 0x3F);
        assert_eq!(si.resv17, 0xFF);
        // ... the Repr ignores them and emits zeros.
        let r = SwitchInfoRepr::parse(&b).unwrap();
        assert!(r.enhanced_port0);
        let mut out = [0u8; 64];
        r.emit(&mut out).unwrap();
        assert_eq!(out[16], 0x38);
        assert_eq!(out[17], 0);
        assert_eq!(out[40], 0);
    }

    /// The decode equals what smpquery printed for the same query.
    #[test]
    fn matches_smpquery() {
        for (mads, txt) in [
            (
                include_str!("../../testdata/si_sw1_dr0.mads"),
                include_str!("../../testdata/si_sw1_dr0.txt"),
            ),
            (
                include_str!("../../testdata/si_sw2_lid3.mads"),
                include_str!("../../testdata/si_sw2_lid3.txt"),
            ),
        ] {
            let r = SwitchInfoRepr::parse(&data(&rcv(mads, 0x12, None))).unwrap();
            let q = smpquery_fields(txt);
            let v = |k: &str| num(&smpquery_value(&q, k));
            assert_eq!(v("LinearFdbCap"), u64::from(r.linear_fdb_cap));
            assert_eq!(v("RandomFdbCap"), u64::from(r.random_fdb_cap));
            assert_eq!(v("McastFdbCap"), u64::from(r.multicast_fdb_cap));
            assert_eq!(v("LinearFdbTop"), u64::from(r.linear_fdb_top.0));
            assert_eq!(v("DefPort"), u64::from(r.default_port.0));
            assert_eq!(
                v("DefMcastPrimPort"),
                u64::from(r.default_mcast_primary_port.0)
            );
            assert_eq!(
                v("DefMcastNotPrimPort"),
                u64::from(r.default_mcast_not_primary_port.0)
            );
            assert_eq!(v("LifeTime"), u64::from(r.life_time_value));
            assert_eq!(v("StateChange"), u64::from(r.port_state_change));
            assert_eq!(v("OptSLtoVLMapping"), u64::from(r.optimized_sl2vl));
            assert_eq!(v("LidsPerPort"), u64::from(r.lids_per_port));
            assert_eq!(v("PartEnforceCap"), u64::from(r.partition_enforcement_cap));
            assert_eq!(v("InboundPartEnf"), u64::from(r.inbound_enforcement_cap));
            assert_eq!(v("OutboundPartEnf"), u64::from(r.outbound_enforcement_cap));
            assert_eq!(v("FilterRawInbound"), u64::from(r.filter_raw_inbound_cap));
            assert_eq!(v("FilterRawOutbound"), u64::from(r.filter_raw_outbound_cap));
            assert_eq!(v("EnhancedPort0"), u64::from(r.enhanced_port0));
            assert_eq!(v("MulticastFDBTop"), u64::from(r.multicast_fdb_top.0));
        }
    }

    #[test]
    fn display_lists_fields() {
        let text = repr().to_string();
        assert!(text.contains("LifeTimeValue:...................18\n"));
        assert!(text.contains("FilterRawInboundCap:.............1\n"));
    }
}

//! SwitchInfo (attribute 0x0012), 20 bytes used of 64 — IBA vol1 §14.2.5.4.

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

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

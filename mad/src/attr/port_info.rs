//! PortInfo (attribute 0x0015), 64 bytes — IBA vol1 §14.2.5.6 (the IBA 1.3 form with extended
//! speeds, as OpenSM's `ib_port_info_t`).

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::{PhysState, PortState};
use crate::types::{Lid, MKey};

/// PortInfo.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct PortInfo {
    /// M_Key — bytes 0..7.
    pub m_key: U64,
    /// GidPrefix — bytes 8..15.
    pub gid_prefix: U64,
    /// LID — bytes 16..17.
    pub lid: U16,
    /// MasterSMLID — bytes 18..19.
    pub master_sm_lid: U16,
    /// CapabilityMask — bytes 20..23.
    pub capability_mask: U32,
    /// DiagCode — bytes 24..25.
    pub diag_code: U16,
    /// M_KeyLeasePeriod — bytes 26..27.
    pub m_key_lease_period: U16,
    /// LocalPortNum — byte 28.
    pub local_port_num: u8,
    /// LinkWidthEnabled — byte 29.
    pub link_width_enabled: u8,
    /// LinkWidthSupported — byte 30.
    pub link_width_supported: u8,
    /// LinkWidthActive — byte 31.
    pub link_width_active: u8,
    /// LinkSpeedSupported (7..4) / PortState (3..0) — byte 32.
    pub b32: u8,
    /// PortPhysicalState (7..4) / LinkDownDefaultState (3..0) — byte 33.
    pub b33: u8,
    /// M_KeyProtectBits (7..6) / reserved (5..3) / LMC (2..0) — byte 34.
    pub b34: u8,
    /// LinkSpeedActive (7..4) / LinkSpeedEnabled (3..0) — byte 35.
    pub b35: u8,
    /// NeighborMTU (7..4) / MasterSMSL (3..0) — byte 36.
    pub b36: u8,
    /// VLCap (7..4) / InitType (3..0) — byte 37.
    pub b37: u8,
    /// VLHighLimit — byte 38.
    pub vl_high_limit: u8,
    /// VLArbitrationHighCap — byte 39.
    pub vl_arb_high_cap: u8,
    /// VLArbitrationLowCap — byte 40.
    pub vl_arb_low_cap: u8,
    /// InitTypeReply (7..4) / MTUCap (3..0) — byte 41.
    pub b41: u8,
    /// VLStallCount (7..5) / HOQLife (4..0) — byte 42.
    pub b42: u8,
    /// OperationalVLs (7..4) / PartitionEnforcementInbound (3) / PartitionEnforcementOutbound (2)
    /// / FilterRawInbound (1) / FilterRawOutbound (0) — byte 43.
    pub b43: u8,
    /// M_KeyViolations — bytes 44..45.
    pub m_key_violations: U16,
    /// P_KeyViolations — bytes 46..47.
    pub p_key_violations: U16,
    /// Q_KeyViolations — bytes 48..49.
    pub q_key_violations: U16,
    /// GUIDCap — byte 50.
    pub guid_cap: u8,
    /// ClientReregister (7) / MulticastPKeyTrapSuppressionEnabled (6..5) / SubnetTimeOut (4..0) — byte 51.
    pub b51: u8,
    /// Reserved (7..5) / RespTimeValue (4..0) — byte 52.
    pub b52: u8,
    /// LocalPhyErrors (7..4) / OverrunErrors (3..0) — byte 53.
    pub b53: u8,
    /// MaxCreditHint — bytes 54..55.
    pub max_credit_hint: U16,
    /// Reserved (31..24) / LinkRoundTripLatency (23..0) — bytes 56..59.
    pub link_round_trip_latency: U32,
    /// CapabilityMask2 — bytes 60..61.
    pub capability_mask2: U16,
    /// LinkSpeedExtActive (7..4) / LinkSpeedExtSupported (3..0) — byte 62.
    pub b62: u8,
    /// Reserved (7..5) / LinkSpeedExtEnabled (4..0) — byte 63.
    pub b63: u8,
}
const _: () = assert!(size_of::<PortInfo>() == 64);
const _: () = assert!(core::mem::offset_of!(PortInfo, lid) == 16);
const _: () = assert!(core::mem::offset_of!(PortInfo, local_port_num) == 28);
const _: () = assert!(core::mem::offset_of!(PortInfo, b32) == 32);
const _: () = assert!(core::mem::offset_of!(PortInfo, b43) == 43);
const _: () = assert!(core::mem::offset_of!(PortInfo, m_key_violations) == 44);
const _: () = assert!(core::mem::offset_of!(PortInfo, b51) == 51);
const _: () = assert!(core::mem::offset_of!(PortInfo, capability_mask2) == 60);

crate::sub_byte_fields!(PortInfo {
    /// LinkSpeedSupported — byte 32, bits 7..4.
    link_speed_supported, set_link_speed_supported: b32[7..4];
    /// PortState — byte 32, bits 3..0 (raw; see [`PortInfo::port_state`]).
    port_state_raw, set_port_state_raw: b32[3..0];
    /// PortPhysicalState — byte 33, bits 7..4 (raw).
    phys_state_raw, set_phys_state_raw: b33[7..4];
    /// LinkDownDefaultState — byte 33, bits 3..0.
    link_down_default_state, set_link_down_default_state: b33[3..0];
    /// M_KeyProtectBits — byte 34, bits 7..6.
    m_key_protect_bits, set_m_key_protect_bits: b34[7..6];
    /// LMC — byte 34, bits 2..0.
    lmc, set_lmc: b34[2..0];
    /// LinkSpeedActive — byte 35, bits 7..4.
    link_speed_active, set_link_speed_active: b35[7..4];
    /// LinkSpeedEnabled — byte 35, bits 3..0.
    link_speed_enabled, set_link_speed_enabled: b35[3..0];
    /// NeighborMTU — byte 36, bits 7..4.
    neighbor_mtu, set_neighbor_mtu: b36[7..4];
    /// MasterSMSL — byte 36, bits 3..0.
    master_sm_sl, set_master_sm_sl: b36[3..0];
    /// VLCap — byte 37, bits 7..4.
    vl_cap, set_vl_cap: b37[7..4];
    /// InitType — byte 37, bits 3..0.
    init_type, set_init_type: b37[3..0];
    /// InitTypeReply — byte 41, bits 7..4.
    init_type_reply, set_init_type_reply: b41[7..4];
    /// MTUCap — byte 41, bits 3..0.
    mtu_cap, set_mtu_cap: b41[3..0];
    /// VLStallCount — byte 42, bits 7..5.
    vl_stall_count, set_vl_stall_count: b42[7..5];
    /// HOQLife — byte 42, bits 4..0.
    hoq_life, set_hoq_life: b42[4..0];
    /// OperationalVLs — byte 43, bits 7..4.
    operational_vls, set_operational_vls: b43[7..4];
    /// PartitionEnforcementInbound — byte 43, bit 3.
    partition_enforcement_inbound, set_partition_enforcement_inbound: b43[3..3];
    /// PartitionEnforcementOutbound — byte 43, bit 2.
    partition_enforcement_outbound, set_partition_enforcement_outbound: b43[2..2];
    /// FilterRawInbound — byte 43, bit 1.
    filter_raw_inbound, set_filter_raw_inbound: b43[1..1];
    /// FilterRawOutbound — byte 43, bit 0.
    filter_raw_outbound, set_filter_raw_outbound: b43[0..0];
    /// ClientReregister — byte 51, bit 7.
    client_reregister, set_client_reregister: b51[7..7];
    /// MulticastPKeyTrapSuppressionEnabled — byte 51, bits 6..5.
    mcast_pkey_trap_suppression, set_mcast_pkey_trap_suppression: b51[6..5];
    /// SubnetTimeOut — byte 51, bits 4..0.
    subnet_timeout, set_subnet_timeout: b51[4..0];
    /// RespTimeValue — byte 52, bits 4..0.
    resp_time_value, set_resp_time_value: b52[4..0];
    /// LocalPhyErrors — byte 53, bits 7..4.
    local_phy_errors, set_local_phy_errors: b53[7..4];
    /// OverrunErrors — byte 53, bits 3..0.
    overrun_errors, set_overrun_errors: b53[3..0];
    /// LinkSpeedExtActive — byte 62, bits 7..4.
    link_speed_ext_active, set_link_speed_ext_active: b62[7..4];
    /// LinkSpeedExtSupported — byte 62, bits 3..0.
    link_speed_ext_supported, set_link_speed_ext_supported: b62[3..0];
    /// LinkSpeedExtEnabled — byte 63, bits 4..0.
    link_speed_ext_enabled, set_link_speed_ext_enabled: b63[4..0];
});

/// CapabilityMask bits (IBA vol1 §14.2.5.6, Table 152 "PortInfo CapabilityMask"; values as
/// OpenSM's `IB_PORT_CAP_*`).
pub mod cap {
    /// IsSM.
    pub const IS_SM: u32 = 0x0000_0002;
    /// IsNoticeSupported.
    pub const IS_NOTICE_SUP: u32 = 0x0000_0004;
    /// IsTrapSupported.
    pub const IS_TRAP_SUP: u32 = 0x0000_0008;
    /// IsAutomaticMigrationSupported.
    pub const IS_AUTO_MIGRATION_SUP: u32 = 0x0000_0020;
    /// IsSLMappingSupported.
    pub const IS_SL_MAP_SUP: u32 = 0x0000_0040;
    /// IsSMdisabled.
    pub const IS_SM_DISABLED: u32 = 0x0000_0400;
    /// IsSystemImageGUIDSupported.
    pub const IS_SYS_IMAGE_GUID_SUP: u32 = 0x0000_0800;
    /// IsExtendedSpeedsSupported.
    pub const IS_EXT_SPEEDS_SUP: u32 = 0x0000_4000;
    /// IsCapabilityMask2Supported.
    pub const IS_CAP_MASK2_SUP: u32 = 0x0000_8000;
    /// IsCommunicationManagementSupported.
    pub const IS_CM_SUP: u32 = 0x0001_0000;
    /// IsDeviceManagementSupported.
    pub const IS_DEVICE_MGMT_SUP: u32 = 0x0008_0000;
    /// IsVendorClassSupported.
    pub const IS_VENDOR_CLASS_SUP: u32 = 0x0010_0000;
    /// IsCapabilityMaskNoticeSupported.
    pub const IS_CAP_MASK_NOTICE_SUP: u32 = 0x0040_0000;
    /// IsClientReregistrationSupported.
    pub const IS_CLIENT_REREG_SUP: u32 = 0x0200_0000;
}

/// MTU codes (NeighborMTU / MTUCap): 1 = 256 … 5 = 4096.
#[must_use]
pub const fn mtu_bytes(code: u8) -> Option<u32> {
    match code {
        1 => Some(256),
        2 => Some(512),
        3 => Some(1024),
        4 => Some(2048),
        5 => Some(4096),
        _ => None,
    }
}

impl PortInfo {
    /// PortState.
    #[must_use]
    pub fn port_state(&self) -> PortState {
        PortState(self.port_state_raw())
    }
    /// Sets PortState.
    pub fn set_port_state(&mut self, s: PortState) {
        self.set_port_state_raw(s.0);
    }
    /// PortPhysicalState.
    #[must_use]
    pub fn phys_state(&self) -> PhysState {
        PhysState(self.phys_state_raw())
    }
    /// Sets PortPhysicalState.
    pub fn set_phys_state(&mut self, s: PhysState) {
        self.set_phys_state_raw(s.0);
    }
    /// LID.
    #[must_use]
    pub fn lid(&self) -> Lid {
        Lid(self.lid.get())
    }
    /// MasterSMLID.
    #[must_use]
    pub fn master_sm_lid(&self) -> Lid {
        Lid(self.master_sm_lid.get())
    }
    /// M_Key.
    #[must_use]
    pub fn m_key(&self) -> MKey {
        MKey(self.m_key.get())
    }
}

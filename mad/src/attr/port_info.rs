//! PortInfo (attribute 0x0015), 64 bytes — IBA vol1 §14.2.5.6 (the IBA 1.3 form with extended
//! speeds, as OpenSM's `ib_port_info_t`).

//!
//! View: [`PortInfo`]; validated value: [`PortInfoRepr`] (see [`crate::attr`]).

use core::fmt;

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::attr::AttrRepr;
use crate::codes::{PhysState, PortState, SmpAttrId};
use crate::error::ParseError;
use crate::pretty::field;
use crate::types::{Lid, MKey, PortNum};

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

impl PortInfo {
    /// LinkRoundTripLatency — bytes 56..59, bits 23..0.
    #[must_use]
    pub fn link_round_trip_latency(&self) -> u32 {
        self.link_round_trip_latency.get() & 0x00FF_FFFF
    }
    /// Sets LinkRoundTripLatency (low 24 bits of `v`), keeping the reserved byte 56.
    pub fn set_link_round_trip_latency(&mut self, v: u32) {
        let resv = self.link_round_trip_latency.get() & 0xFF00_0000;
        self.link_round_trip_latency.set(resv | (v & 0x00FF_FFFF));
    }
}

/// LinkWidth{Enabled,Supported,Active} bits shown as infiniband-diags does: `1X or 4X`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkWidths(pub u8);

impl LinkWidths {
    /// The widest width in the mask by lane count (12x, 8x, 4x, 2x, 1x), as link training
    /// picks and OpenSM's `ib_get_highest_link_width` ranks them; 0 for none.
    #[must_use]
    pub fn widest(self) -> u8 {
        [8u8, 4, 2, 16, 1]
            .into_iter()
            .find(|w| self.0 & w != 0)
            .unwrap_or(0)
    }
}

impl fmt::Display for LinkWidths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        list(
            f,
            self.0,
            &[(1, "1X"), (2, "4X"), (4, "8X"), (8, "12X"), (16, "2X")],
        )
    }
}

/// LinkSpeed{Supported,Active,Enabled} bits shown as infiniband-diags does: `2.5 Gbps or 5.0 Gbps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpeeds(pub u8);

impl fmt::Display for LinkSpeeds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        list(
            f,
            self.0,
            &[(1, "2.5 Gbps"), (2, "5.0 Gbps"), (4, "10.0 Gbps")],
        )
    }
}

/// VLCap / OperationalVLs codes shown as infiniband-diags does: `VL0-7`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlCount(pub u8);

impl fmt::Display for VlCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            1 => f.write_str("VL0"),
            2 => f.write_str("VL0-1"),
            3 => f.write_str("VL0-3"),
            4 => f.write_str("VL0-7"),
            5 => f.write_str("VL0-14"),
            v => write!(f, "{v}"),
        }
    }
}

/// MTU codes (NeighborMTU / MTUCap) shown in bytes, or the raw code if reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mtu(pub u8);

impl fmt::Display for Mtu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match mtu_bytes(self.0) {
            Some(b) => write!(f, "{b}"),
            None => write!(f, "code {}", self.0),
        }
    }
}

/// Writes the names of the set bits joined by " or ", plus any unnamed bits in hex.
fn list(f: &mut fmt::Formatter<'_>, v: u8, names: &[(u8, &str)]) -> fmt::Result {
    let mut first = true;
    let mut rest = v;
    for (bit, name) in names {
        if v & bit != 0 {
            if !first {
                f.write_str(" or ")?;
            }
            f.write_str(name)?;
            first = false;
            rest &= !bit;
        }
    }
    if rest != 0 || first {
        if !first {
            f.write_str(" or ")?;
        }
        write!(f, "{rest:#x}")?;
    }
    Ok(())
}

/// Field listing in the layout and order of `smpquery portinfo`, with IBA field names.
impl fmt::Display for PortInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "M_Key", format_args!("{:#018x}", self.m_key.get()))?;
        field(
            f,
            "GidPrefix",
            format_args!("{:#018x}", self.gid_prefix.get()),
        )?;
        field(f, "LID", self.lid.get())?;
        field(f, "MasterSMLID", self.master_sm_lid.get())?;
        field(
            f,
            "CapabilityMask",
            format_args!("{:#010x}", self.capability_mask.get()),
        )?;
        field(f, "DiagCode", format_args!("{:#06x}", self.diag_code.get()))?;
        field(f, "M_KeyLeasePeriod", self.m_key_lease_period.get())?;
        field(f, "LocalPortNum", self.local_port_num)?;
        field(f, "LinkWidthEnabled", LinkWidths(self.link_width_enabled))?;
        field(
            f,
            "LinkWidthSupported",
            LinkWidths(self.link_width_supported),
        )?;
        field(f, "LinkWidthActive", LinkWidths(self.link_width_active))?;
        field(
            f,
            "LinkSpeedSupported",
            LinkSpeeds(self.link_speed_supported()),
        )?;
        field(f, "PortState", self.port_state())?;
        field(f, "PortPhysicalState", self.phys_state())?;
        field(f, "LinkDownDefaultState", self.link_down_default_state())?;
        field(f, "M_KeyProtectBits", self.m_key_protect_bits())?;
        field(f, "LMC", self.lmc())?;
        field(f, "LinkSpeedActive", LinkSpeeds(self.link_speed_active()))?;
        field(f, "LinkSpeedEnabled", LinkSpeeds(self.link_speed_enabled()))?;
        field(f, "NeighborMTU", Mtu(self.neighbor_mtu()))?;
        field(f, "MasterSMSL", self.master_sm_sl())?;
        field(f, "VLCap", VlCount(self.vl_cap()))?;
        field(f, "InitType", format_args!("{:#04x}", self.init_type()))?;
        field(f, "VLHighLimit", self.vl_high_limit)?;
        field(f, "VLArbitrationHighCap", self.vl_arb_high_cap)?;
        field(f, "VLArbitrationLowCap", self.vl_arb_low_cap)?;
        field(
            f,
            "InitTypeReply",
            format_args!("{:#04x}", self.init_type_reply()),
        )?;
        field(f, "MTUCap", Mtu(self.mtu_cap()))?;
        field(f, "VLStallCount", self.vl_stall_count())?;
        field(f, "HOQLife", self.hoq_life())?;
        field(f, "OperationalVLs", VlCount(self.operational_vls()))?;
        field(
            f,
            "PartitionEnforcementInbound",
            self.partition_enforcement_inbound(),
        )?;
        field(
            f,
            "PartitionEnforcementOutbound",
            self.partition_enforcement_outbound(),
        )?;
        field(f, "FilterRawInbound", self.filter_raw_inbound())?;
        field(f, "FilterRawOutbound", self.filter_raw_outbound())?;
        field(f, "M_KeyViolations", self.m_key_violations.get())?;
        field(f, "P_KeyViolations", self.p_key_violations.get())?;
        field(f, "Q_KeyViolations", self.q_key_violations.get())?;
        field(f, "GUIDCap", self.guid_cap)?;
        field(f, "ClientReregister", self.client_reregister())?;
        field(
            f,
            "MulticastPKeyTrapSuppressionEnabled",
            self.mcast_pkey_trap_suppression(),
        )?;
        field(f, "SubnetTimeOut", self.subnet_timeout())?;
        field(f, "RespTimeValue", self.resp_time_value())?;
        field(f, "LocalPhyErrors", self.local_phy_errors())?;
        field(f, "OverrunErrors", self.overrun_errors())?;
        field(f, "MaxCreditHint", self.max_credit_hint.get())?;
        field(f, "LinkRoundTripLatency", self.link_round_trip_latency())?;
        field(
            f,
            "CapabilityMask2",
            format_args!("{:#06x}", self.capability_mask2.get()),
        )?;
        field(f, "LinkSpeedExtActive", self.link_speed_ext_active())?;
        field(f, "LinkSpeedExtSupported", self.link_speed_ext_supported())?;
        field(f, "LinkSpeedExtEnabled", self.link_speed_ext_enabled())
    }
}

/// PortInfo, validated.
///
/// `parse` rejects ([`ParseError::InvalidValue`]) the encodings the IBA reserves: PortState
/// above 4 (Active), PortPhysicalState above 7 (PhyTest), LinkDownDefaultState above 2
/// (Polling), NeighborMTU / MTUCap above 5 (4096), VLCap / OperationalVLs above 5 (VL0-14).
/// Zero is accepted everywhere (it means "no change" in a Set for several of these fields).
/// Reserved bits (byte 34 bits 5..3, byte 52 bits 7..5, byte 56, byte 63 bits 7..5) are
/// ignored and emitted as zero; sub-byte fields keep only their low bits on `emit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortInfoRepr {
    /// M_Key.
    pub m_key: MKey,
    /// GidPrefix.
    pub gid_prefix: u64,
    /// LID.
    pub lid: Lid,
    /// MasterSMLID.
    pub master_sm_lid: Lid,
    /// CapabilityMask (bits in [`cap`]).
    pub capability_mask: u32,
    /// DiagCode.
    pub diag_code: u16,
    /// M_KeyLeasePeriod.
    pub m_key_lease_period: u16,
    /// LocalPortNum.
    pub local_port_num: PortNum,
    /// LinkWidthEnabled.
    pub link_width_enabled: u8,
    /// LinkWidthSupported.
    pub link_width_supported: u8,
    /// LinkWidthActive.
    pub link_width_active: u8,
    /// LinkSpeedSupported (4 bits).
    pub link_speed_supported: u8,
    /// PortState.
    pub port_state: PortState,
    /// PortPhysicalState.
    pub phys_state: PhysState,
    /// LinkDownDefaultState (4 bits).
    pub link_down_default_state: u8,
    /// M_KeyProtectBits (2 bits).
    pub m_key_protect_bits: u8,
    /// LMC (3 bits).
    pub lmc: u8,
    /// LinkSpeedActive (4 bits).
    pub link_speed_active: u8,
    /// LinkSpeedEnabled (4 bits).
    pub link_speed_enabled: u8,
    /// NeighborMTU (4 bits).
    pub neighbor_mtu: u8,
    /// MasterSMSL (4 bits).
    pub master_sm_sl: u8,
    /// VLCap (4 bits).
    pub vl_cap: u8,
    /// InitType (4 bits).
    pub init_type: u8,
    /// VLHighLimit.
    pub vl_high_limit: u8,
    /// VLArbitrationHighCap.
    pub vl_arb_high_cap: u8,
    /// VLArbitrationLowCap.
    pub vl_arb_low_cap: u8,
    /// InitTypeReply (4 bits).
    pub init_type_reply: u8,
    /// MTUCap (4 bits).
    pub mtu_cap: u8,
    /// VLStallCount (3 bits).
    pub vl_stall_count: u8,
    /// HOQLife (5 bits).
    pub hoq_life: u8,
    /// OperationalVLs (4 bits).
    pub operational_vls: u8,
    /// PartitionEnforcementInbound.
    pub partition_enforcement_inbound: bool,
    /// PartitionEnforcementOutbound.
    pub partition_enforcement_outbound: bool,
    /// FilterRawInbound.
    pub filter_raw_inbound: bool,
    /// FilterRawOutbound.
    pub filter_raw_outbound: bool,
    /// M_KeyViolations.
    pub m_key_violations: u16,
    /// P_KeyViolations.
    pub p_key_violations: u16,
    /// Q_KeyViolations.
    pub q_key_violations: u16,
    /// GUIDCap.
    pub guid_cap: u8,
    /// ClientReregister.
    pub client_reregister: bool,
    /// MulticastPKeyTrapSuppressionEnabled (2 bits).
    pub mcast_pkey_trap_suppression: u8,
    /// SubnetTimeOut (5 bits).
    pub subnet_timeout: u8,
    /// RespTimeValue (5 bits).
    pub resp_time_value: u8,
    /// LocalPhyErrors (4 bits).
    pub local_phy_errors: u8,
    /// OverrunErrors (4 bits).
    pub overrun_errors: u8,
    /// MaxCreditHint.
    pub max_credit_hint: u16,
    /// LinkRoundTripLatency (24 bits).
    pub link_round_trip_latency: u32,
    /// CapabilityMask2.
    pub capability_mask2: u16,
    /// LinkSpeedExtActive (4 bits).
    pub link_speed_ext_active: u8,
    /// LinkSpeedExtSupported (4 bits).
    pub link_speed_ext_supported: u8,
    /// LinkSpeedExtEnabled (5 bits).
    pub link_speed_ext_enabled: u8,
}

impl AttrRepr for PortInfoRepr {
    type Raw = PortInfo;
    const ATTR_ID: SmpAttrId = SmpAttrId::PORT_INFO;

    fn from_raw(r: &PortInfo) -> Result<Self, ParseError> {
        let checks: [(&'static str, u8, u8); 7] = [
            ("PortState", r.port_state_raw(), 4),
            ("PortPhysicalState", r.phys_state_raw(), 7),
            ("LinkDownDefaultState", r.link_down_default_state(), 2),
            ("NeighborMTU", r.neighbor_mtu(), 5),
            ("MTUCap", r.mtu_cap(), 5),
            ("VLCap", r.vl_cap(), 5),
            ("OperationalVLs", r.operational_vls(), 5),
        ];
        for (field, value, max) in checks {
            if value > max {
                return Err(ParseError::InvalidValue {
                    attr: Self::ATTR_ID,
                    field,
                    value: value.into(),
                });
            }
        }
        Ok(PortInfoRepr {
            m_key: r.m_key(),
            gid_prefix: r.gid_prefix.get(),
            lid: r.lid(),
            master_sm_lid: r.master_sm_lid(),
            capability_mask: r.capability_mask.get(),
            diag_code: r.diag_code.get(),
            m_key_lease_period: r.m_key_lease_period.get(),
            local_port_num: PortNum(r.local_port_num),
            link_width_enabled: r.link_width_enabled,
            link_width_supported: r.link_width_supported,
            link_width_active: r.link_width_active,
            link_speed_supported: r.link_speed_supported(),
            port_state: r.port_state(),
            phys_state: r.phys_state(),
            link_down_default_state: r.link_down_default_state(),
            m_key_protect_bits: r.m_key_protect_bits(),
            lmc: r.lmc(),
            link_speed_active: r.link_speed_active(),
            link_speed_enabled: r.link_speed_enabled(),
            neighbor_mtu: r.neighbor_mtu(),
            master_sm_sl: r.master_sm_sl(),
            vl_cap: r.vl_cap(),
            init_type: r.init_type(),
            vl_high_limit: r.vl_high_limit,
            vl_arb_high_cap: r.vl_arb_high_cap,
            vl_arb_low_cap: r.vl_arb_low_cap,
            init_type_reply: r.init_type_reply(),
            mtu_cap: r.mtu_cap(),
            vl_stall_count: r.vl_stall_count(),
            hoq_life: r.hoq_life(),
            operational_vls: r.operational_vls(),
            partition_enforcement_inbound: r.partition_enforcement_inbound() != 0,
            partition_enforcement_outbound: r.partition_enforcement_outbound() != 0,
            filter_raw_inbound: r.filter_raw_inbound() != 0,
            filter_raw_outbound: r.filter_raw_outbound() != 0,
            m_key_violations: r.m_key_violations.get(),
            p_key_violations: r.p_key_violations.get(),
            q_key_violations: r.q_key_violations.get(),
            guid_cap: r.guid_cap,
            client_reregister: r.client_reregister() != 0,
            mcast_pkey_trap_suppression: r.mcast_pkey_trap_suppression(),
            subnet_timeout: r.subnet_timeout(),
            resp_time_value: r.resp_time_value(),
            local_phy_errors: r.local_phy_errors(),
            overrun_errors: r.overrun_errors(),
            max_credit_hint: r.max_credit_hint.get(),
            link_round_trip_latency: r.link_round_trip_latency(),
            capability_mask2: r.capability_mask2.get(),
            link_speed_ext_active: r.link_speed_ext_active(),
            link_speed_ext_supported: r.link_speed_ext_supported(),
            link_speed_ext_enabled: r.link_speed_ext_enabled(),
        })
    }

    fn to_raw(&self) -> PortInfo {
        let mut r = PortInfo::new_zeroed();
        r.m_key.set(self.m_key.0);
        r.gid_prefix.set(self.gid_prefix);
        r.lid.set(self.lid.0);
        r.master_sm_lid.set(self.master_sm_lid.0);
        r.capability_mask.set(self.capability_mask);
        r.diag_code.set(self.diag_code);
        r.m_key_lease_period.set(self.m_key_lease_period);
        r.local_port_num = self.local_port_num.0;
        r.link_width_enabled = self.link_width_enabled;
        r.link_width_supported = self.link_width_supported;
        r.link_width_active = self.link_width_active;
        r.set_link_speed_supported(self.link_speed_supported);
        r.set_port_state(self.port_state);
        r.set_phys_state(self.phys_state);
        r.set_link_down_default_state(self.link_down_default_state);
        r.set_m_key_protect_bits(self.m_key_protect_bits);
        r.set_lmc(self.lmc);
        r.set_link_speed_active(self.link_speed_active);
        r.set_link_speed_enabled(self.link_speed_enabled);
        r.set_neighbor_mtu(self.neighbor_mtu);
        r.set_master_sm_sl(self.master_sm_sl);
        r.set_vl_cap(self.vl_cap);
        r.set_init_type(self.init_type);
        r.vl_high_limit = self.vl_high_limit;
        r.vl_arb_high_cap = self.vl_arb_high_cap;
        r.vl_arb_low_cap = self.vl_arb_low_cap;
        r.set_init_type_reply(self.init_type_reply);
        r.set_mtu_cap(self.mtu_cap);
        r.set_vl_stall_count(self.vl_stall_count);
        r.set_hoq_life(self.hoq_life);
        r.set_operational_vls(self.operational_vls);
        r.set_partition_enforcement_inbound(self.partition_enforcement_inbound.into());
        r.set_partition_enforcement_outbound(self.partition_enforcement_outbound.into());
        r.set_filter_raw_inbound(self.filter_raw_inbound.into());
        r.set_filter_raw_outbound(self.filter_raw_outbound.into());
        r.m_key_violations.set(self.m_key_violations);
        r.p_key_violations.set(self.p_key_violations);
        r.q_key_violations.set(self.q_key_violations);
        r.guid_cap = self.guid_cap;
        r.set_client_reregister(self.client_reregister.into());
        r.set_mcast_pkey_trap_suppression(self.mcast_pkey_trap_suppression);
        r.set_subnet_timeout(self.subnet_timeout);
        r.set_resp_time_value(self.resp_time_value);
        r.set_local_phy_errors(self.local_phy_errors);
        r.set_overrun_errors(self.overrun_errors);
        r.max_credit_hint.set(self.max_credit_hint);
        r.set_link_round_trip_latency(self.link_round_trip_latency);
        r.capability_mask2.set(self.capability_mask2);
        r.set_link_speed_ext_active(self.link_speed_ext_active);
        r.set_link_speed_ext_supported(self.link_speed_ext_supported);
        r.set_link_speed_ext_enabled(self.link_speed_ext_enabled);
        r
    }
}

crate::attr::display_via_raw!(PortInfoRepr);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::{data, num, rcv, smpquery_fields, smpquery_value};
    use zerocopy::IntoBytes;

    /// PortInfo of ibsim's Hca1 port 1 (net.2sw2path) after one OpenSM sweep: SMP data of the
    /// GetResp to `smpquery -K portinfo 2 1` (LID-routed; mad/testdata/pi_hca1_p1_lid2.*, made
    /// by mad/testdata/capture.sh).
    static BYTES: [u8; 64] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x02, 0x00, 0x01, 0x00, 0x50, 0xc0, 0x48, 0x00, 0x00, 0x0f, 0xf9, 0x01, 0x02,
        0x1f, 0x02, 0x74, 0x52, 0x00, 0x11, 0x40, 0x40, 0x00, 0x08, 0x08, 0x04, 0xe0, 0x40, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x30, 0x00, 0x00,
    ];

    #[test]
    fn bytes_are_the_capture() {
        let mad = rcv(
            include_str!("../../testdata/pi_hca1_p1_lid2.mads"),
            0x15,
            None,
        );
        assert_eq!(data(&mad), BYTES);
    }

    #[test]
    fn deconstruct() {
        let (pi, _) = PortInfo::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(pi.gid_prefix.get(), 0xfe80_0000_0000_0000);
        assert_eq!(pi.lid(), Lid(2));
        assert_eq!(pi.master_sm_lid(), Lid(1));
        assert_eq!(pi.capability_mask.get(), 0x0050_c048);
        assert_eq!(pi.m_key_lease_period.get(), 4089);
        assert_eq!(pi.local_port_num, 1);
        assert_eq!(
            (
                pi.link_width_enabled,
                pi.link_width_supported,
                pi.link_width_active
            ),
            (2, 0x1f, 2)
        );
        assert_eq!(pi.link_speed_supported(), 7);
        assert_eq!(pi.port_state(), PortState::ACTIVE);
        assert_eq!(pi.phys_state(), PhysState::LINK_UP);
        assert_eq!(pi.link_down_default_state(), 2);
        assert_eq!(pi.lmc(), 0);
        assert_eq!((pi.link_speed_active(), pi.link_speed_enabled()), (1, 1));
        assert_eq!(pi.neighbor_mtu(), 4);
        assert_eq!(pi.vl_cap(), 4);
        assert_eq!(pi.mtu_cap(), 4);
        assert_eq!(pi.vl_stall_count(), 7);
        assert_eq!(pi.operational_vls(), 4);
        assert_eq!(pi.guid_cap, 32);
        assert_eq!(pi.subnet_timeout(), 31);
        assert_eq!(pi.capability_mask2.get(), 0x30);
    }

    #[test]
    fn construct() {
        let mut pi = PortInfo::new_zeroed();
        pi.gid_prefix.set(0xfe80_0000_0000_0000);
        pi.lid.set(2);
        pi.master_sm_lid.set(1);
        pi.capability_mask.set(0x0050_c048);
        pi.m_key_lease_period.set(4089);
        pi.local_port_num = 1;
        pi.link_width_enabled = 2;
        pi.link_width_supported = 0x1f;
        pi.link_width_active = 2;
        pi.set_link_speed_supported(7);
        pi.set_port_state(PortState::ACTIVE);
        pi.set_phys_state(PhysState::LINK_UP);
        pi.set_link_down_default_state(2);
        pi.set_link_speed_active(1);
        pi.set_link_speed_enabled(1);
        pi.set_neighbor_mtu(4);
        pi.set_vl_cap(4);
        pi.vl_arb_high_cap = 8;
        pi.vl_arb_low_cap = 8;
        pi.set_mtu_cap(4);
        pi.set_vl_stall_count(7);
        pi.set_operational_vls(4);
        pi.guid_cap = 32;
        pi.set_subnet_timeout(31);
        pi.capability_mask2.set(0x30);
        assert_eq!(pi.as_bytes(), &BYTES[..]);
    }

    #[test]
    fn parse_and_emit() {
        let r = PortInfoRepr::parse(&BYTES).unwrap();
        assert_eq!(r.lid, Lid(2));
        assert_eq!(r.port_state, PortState::ACTIVE);
        let mut out = [0xCCu8; 64];
        r.emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
    }

    #[test]
    fn impossible_len() {
        assert!(matches!(
            PortInfoRepr::parse(&BYTES[..32]),
            Err(ParseError::Len(e)) if e.required == 64 && e.got == 32
        ));
        assert!(PortInfoRepr::parse(&BYTES)
            .unwrap()
            .emit(&mut [0; 63])
            .is_err());
    }

    #[test]
    fn reserved_bits() {
        let mut b = BYTES;
        b[34] |= 0x38; // reserved 5..3
        b[52] |= 0xE0;
        b[56] = 0x77;
        b[63] |= 0xE0;
        // The view keeps them when neighbours change.
        let (pi, _) = PortInfo::mut_from_prefix(&mut b[..]).unwrap();
        pi.set_lmc(3);
        pi.set_resp_time_value(8);
        pi.set_link_round_trip_latency(0x12_3456);
        assert_eq!(pi.b34, 0x3B);
        assert_eq!(pi.b52, 0xE8);
        assert_eq!(pi.link_round_trip_latency.get(), 0x7712_3456);
        // The Repr drops them.
        let r = PortInfoRepr::parse(&b).unwrap();
        assert_eq!(
            (r.lmc, r.resp_time_value, r.link_round_trip_latency),
            (3, 8, 0x12_3456)
        );
        let mut out = [0u8; 64];
        r.emit(&mut out).unwrap();
        assert_eq!((out[34], out[52], out[56], out[63]), (0x03, 0x08, 0, 0));
    }

    #[test]
    fn rejects_reserved_encodings() {
        for (byte, val, name) in [
            (32, 0x75, "PortState"),
            (33, 0x82, "PortPhysicalState"),
            (33, 0x53, "LinkDownDefaultState"),
            (36, 0x60, "NeighborMTU"),
            (41, 0x06, "MTUCap"),
            (37, 0x60, "VLCap"),
            (43, 0x60, "OperationalVLs"),
        ] {
            let mut b = BYTES;
            b[byte] = val;
            match PortInfoRepr::parse(&b) {
                Err(ParseError::InvalidValue { field, .. }) => assert_eq!(field, name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    /// The decode of each capture equals what smpquery printed for the same query.
    #[test]
    fn matches_smpquery() {
        for (mads, txt) in [
            (
                include_str!("../../testdata/pi_hca1_p1_lid2.mads"),
                include_str!("../../testdata/pi_hca1_p1_lid2.txt"),
            ),
            (
                include_str!("../../testdata/pi_sw1_p0_dr0.mads"),
                include_str!("../../testdata/pi_sw1_p0_dr0.txt"),
            ),
            (
                include_str!("../../testdata/pi_sw1_p3_dr0.mads"),
                include_str!("../../testdata/pi_sw1_p3_dr0.txt"),
            ),
            (
                include_str!("../../testdata/pi_hca2_p1_dr3.mads"),
                include_str!("../../testdata/pi_hca2_p1_dr3.txt"),
            ),
        ] {
            let r = PortInfoRepr::parse(&data(&rcv(mads, 0x15, None))).unwrap();
            let q = smpquery_fields(txt);
            let s = |k: &str| smpquery_value(&q, k);
            let v = |k: &str| num(s(k).split_whitespace().next().unwrap());
            assert_eq!(v("Mkey"), r.m_key.0);
            assert_eq!(v("GidPrefix"), r.gid_prefix);
            assert_eq!(v("Lid"), u64::from(r.lid.0));
            assert_eq!(v("SMLid"), u64::from(r.master_sm_lid.0));
            assert_eq!(v("CapMask"), u64::from(r.capability_mask));
            assert_eq!(v("DiagCode"), u64::from(r.diag_code));
            assert_eq!(v("MkeyLeasePeriod"), u64::from(r.m_key_lease_period));
            assert_eq!(v("LocalPort"), u64::from(r.local_port_num.0));
            assert_eq!(
                s("LinkWidthEnabled"),
                LinkWidths(r.link_width_enabled).to_string()
            );
            assert_eq!(
                s("LinkWidthSupported"),
                LinkWidths(r.link_width_supported).to_string()
            );
            assert_eq!(
                s("LinkWidthActive"),
                LinkWidths(r.link_width_active).to_string()
            );
            assert_eq!(
                s("LinkSpeedSupported"),
                LinkSpeeds(r.link_speed_supported).to_string()
            );
            assert_eq!(s("LinkState"), r.port_state.to_string());
            assert_eq!(s("PhysLinkState"), r.phys_state.to_string());
            let ldd = ["NoChange", "Sleep", "Polling"][usize::from(r.link_down_default_state)];
            assert_eq!(s("LinkDownDefState"), ldd);
            assert_eq!(v("ProtectBits"), u64::from(r.m_key_protect_bits));
            assert_eq!(v("LMC"), u64::from(r.lmc));
            assert_eq!(
                s("LinkSpeedActive"),
                LinkSpeeds(r.link_speed_active).to_string()
            );
            assert_eq!(
                s("LinkSpeedEnabled"),
                LinkSpeeds(r.link_speed_enabled).to_string()
            );
            assert_eq!(s("NeighborMTU"), Mtu(r.neighbor_mtu).to_string());
            assert_eq!(v("SMSL"), u64::from(r.master_sm_sl));
            assert_eq!(s("VLCap"), VlCount(r.vl_cap).to_string());
            assert_eq!(v("InitType"), u64::from(r.init_type));
            assert_eq!(v("VLHighLimit"), u64::from(r.vl_high_limit));
            assert_eq!(v("VLArbHighCap"), u64::from(r.vl_arb_high_cap));
            assert_eq!(v("VLArbLowCap"), u64::from(r.vl_arb_low_cap));
            assert_eq!(v("InitReply"), u64::from(r.init_type_reply));
            assert_eq!(s("MtuCap"), Mtu(r.mtu_cap).to_string());
            assert_eq!(v("VLStallCount"), u64::from(r.vl_stall_count));
            assert_eq!(v("HoqLife"), u64::from(r.hoq_life));
            assert_eq!(s("OperVLs"), VlCount(r.operational_vls).to_string());
            assert_eq!(
                v("PartEnforceInb"),
                u64::from(r.partition_enforcement_inbound)
            );
            assert_eq!(
                v("PartEnforceOutb"),
                u64::from(r.partition_enforcement_outbound)
            );
            assert_eq!(v("FilterRawInb"), u64::from(r.filter_raw_inbound));
            assert_eq!(v("FilterRawOutb"), u64::from(r.filter_raw_outbound));
            assert_eq!(v("MkeyViolations"), u64::from(r.m_key_violations));
            assert_eq!(v("PkeyViolations"), u64::from(r.p_key_violations));
            assert_eq!(v("QkeyViolations"), u64::from(r.q_key_violations));
            assert_eq!(v("GuidCap"), u64::from(r.guid_cap));
            assert_eq!(v("ClientReregister"), u64::from(r.client_reregister));
            assert_eq!(
                v("McastPkeyTrapSuppressionEnabled"),
                u64::from(r.mcast_pkey_trap_suppression)
            );
            assert_eq!(v("SubnetTimeout"), u64::from(r.subnet_timeout));
            assert_eq!(v("RespTimeVal"), u64::from(r.resp_time_value));
            assert_eq!(v("LocalPhysErr"), u64::from(r.local_phy_errors));
            assert_eq!(v("OverrunErr"), u64::from(r.overrun_errors));
            assert_eq!(v("MaxCreditHint"), u64::from(r.max_credit_hint));
            assert_eq!(v("RoundTrip"), u64::from(r.link_round_trip_latency));
            assert_eq!(v("CapabilityMask2"), u64::from(r.capability_mask2));
            if r.link_speed_ext_active == 0 {
                assert_eq!(s("LinkSpeedExtActive"), "No Extended Speed");
            }
            assert_eq!(
                v("LinkSpeedExtSupported"),
                u64::from(r.link_speed_ext_supported)
            );
            assert_eq!(
                v("LinkSpeedExtEnabled"),
                u64::from(r.link_speed_ext_enabled)
            );
        }
    }

    #[test]
    fn display_lists_fields() {
        let (pi, _) = PortInfo::ref_from_prefix(&BYTES[..]).unwrap();
        let t = pi.to_string();
        assert!(t.contains("LinkWidthSupported:..............1X or 4X or 8X or 12X or 2X\n"));
        assert!(t.contains("PortState:.......................Active\n"));
        assert!(t.contains("NeighborMTU:.....................2048\n"));
        assert_eq!(t.lines().count(), 51);
    }
}

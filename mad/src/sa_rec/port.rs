//! PortInfoRecord (SubnAdm attribute 0x0012, IBA vol1 §15.2.5, "PortInfoRecord"): the PortInfo
//! of one port, keyed by the end port's LID (a switch's port 0 LID for every switch port) and
//! the port number.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | EndportLID (0) |
//! | 2 | PortNum (1) |
//! | 3 | Options (2) |
//! | 4..67 | PortInfo (bits 3..57: its fields in order, reserved fields included) |
//!
//! 68 bytes; 72 in a MAD. With bit 31 of the AttributeModifier set ("enhanced" match, an IBA
//! 1.2 erratum OpenSM follows), CapabilityMask and CapabilityMask2 match when every bit set in
//! the query is set in the record, not by equality ([`capability_match`]).

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};
use crate::attr::PortInfo;

/// PortInfoRecord, 68 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct PortInfoRecord {
    /// EndportLID — bytes 0..1 (RID).
    pub lid: U16,
    /// PortNum — byte 2 (RID).
    pub port_num: u8,
    /// Options — byte 3.
    pub options: u8,
    /// PortInfo — bytes 4..67.
    pub port_info: PortInfo,
}
const _: () = assert!(core::mem::offset_of!(PortInfoRecord, port_info) == 4);

/// PortInfo byte `b` of the record.
const fn pi(b: u32) -> u32 {
    4 + b
}

sa_record! {
    PortInfoRecord, PORT_INFO_RECORD, 68;
    /// EndportLID.
    LID = 0 => Component::bytes(0, 2);
    /// PortNum.
    PORT_NUM = 1 => Component::bytes(2, 1);
    /// Options (echoed, not matched).
    OPTIONS = 2 => Component::echo(24, 8);
    /// M_Key.
    M_KEY = 3 => Component::bytes(pi(0), 8);
    /// GidPrefix.
    GID_PREFIX = 4 => Component::bytes(pi(8), 8);
    /// LID (the port's base LID).
    BASE_LID = 5 => Component::bytes(pi(16), 2);
    /// MasterSMLID.
    MASTER_SM_LID = 6 => Component::bytes(pi(18), 2);
    /// CapabilityMask.
    CAPABILITY_MASK = 7 => Component::bytes(pi(20), 4);
    /// DiagCode.
    DIAG_CODE = 8 => Component::bytes(pi(24), 2);
    /// M_KeyLeasePeriod.
    M_KEY_LEASE_PERIOD = 9 => Component::bytes(pi(26), 2);
    /// LocalPortNum.
    LOCAL_PORT_NUM = 10 => Component::bytes(pi(28), 1);
    /// LinkWidthEnabled.
    LINK_WIDTH_ENABLED = 11 => Component::bytes(pi(29), 1);
    /// LinkWidthSupported.
    LINK_WIDTH_SUPPORTED = 12 => Component::bytes(pi(30), 1);
    /// LinkWidthActive.
    LINK_WIDTH_ACTIVE = 13 => Component::bytes(pi(31), 1);
    /// LinkSpeedSupported.
    LINK_SPEED_SUPPORTED = 14 => Component::at(pi(32), 7, 4);
    /// PortState.
    PORT_STATE = 15 => Component::at(pi(32), 3, 4);
    /// PortPhysicalState.
    PORT_PHYS_STATE = 16 => Component::at(pi(33), 7, 4);
    /// LinkDownDefaultState.
    LINK_DOWN_DEFAULT_STATE = 17 => Component::at(pi(33), 3, 4);
    /// M_KeyProtectBits.
    M_KEY_PROTECT_BITS = 18 => Component::at(pi(34), 7, 2);
    /// Reserved.
    RESERVED_1 = 19 => Component::reserved_at(pi(34), 5, 3);
    /// LMC.
    LMC = 20 => Component::at(pi(34), 2, 3);
    /// LinkSpeedActive.
    LINK_SPEED_ACTIVE = 21 => Component::at(pi(35), 7, 4);
    /// LinkSpeedEnabled.
    LINK_SPEED_ENABLED = 22 => Component::at(pi(35), 3, 4);
    /// NeighborMTU.
    NEIGHBOR_MTU = 23 => Component::at(pi(36), 7, 4);
    /// MasterSMSL.
    MASTER_SM_SL = 24 => Component::at(pi(36), 3, 4);
    /// VLCap.
    VL_CAP = 25 => Component::at(pi(37), 7, 4);
    /// InitType.
    INIT_TYPE = 26 => Component::at(pi(37), 3, 4);
    /// VLHighLimit.
    VL_HIGH_LIMIT = 27 => Component::bytes(pi(38), 1);
    /// VLArbitrationHighCap.
    VL_ARB_HIGH_CAP = 28 => Component::bytes(pi(39), 1);
    /// VLArbitrationLowCap.
    VL_ARB_LOW_CAP = 29 => Component::bytes(pi(40), 1);
    /// InitTypeReply.
    INIT_TYPE_REPLY = 30 => Component::at(pi(41), 7, 4);
    /// MTUCap.
    MTU_CAP = 31 => Component::at(pi(41), 3, 4);
    /// VLStallCount.
    VL_STALL_COUNT = 32 => Component::at(pi(42), 7, 3);
    /// HOQLife.
    HOQ_LIFE = 33 => Component::at(pi(42), 4, 5);
    /// OperationalVLs.
    OPERATIONAL_VLS = 34 => Component::at(pi(43), 7, 4);
    /// PartitionEnforcementInbound.
    PARTITION_ENFORCEMENT_INBOUND = 35 => Component::at(pi(43), 3, 1);
    /// PartitionEnforcementOutbound.
    PARTITION_ENFORCEMENT_OUTBOUND = 36 => Component::at(pi(43), 2, 1);
    /// FilterRawInbound.
    FILTER_RAW_INBOUND = 37 => Component::at(pi(43), 1, 1);
    /// FilterRawOutbound.
    FILTER_RAW_OUTBOUND = 38 => Component::at(pi(43), 0, 1);
    /// M_KeyViolations.
    M_KEY_VIOLATIONS = 39 => Component::bytes(pi(44), 2);
    /// P_KeyViolations.
    P_KEY_VIOLATIONS = 40 => Component::bytes(pi(46), 2);
    /// Q_KeyViolations.
    Q_KEY_VIOLATIONS = 41 => Component::bytes(pi(48), 2);
    /// GUIDCap.
    GUID_CAP = 42 => Component::bytes(pi(50), 1);
    /// ClientReregister.
    CLIENT_REREGISTER = 43 => Component::at(pi(51), 7, 1);
    /// Reserved (MulticastPKeyTrapSuppressionEnabled).
    RESERVED_2 = 44 => Component::reserved_at(pi(51), 6, 2);
    /// SubnetTimeOut.
    SUBNET_TIMEOUT = 45 => Component::at(pi(51), 4, 5);
    /// Reserved.
    RESERVED_3 = 46 => Component::reserved_at(pi(52), 7, 3);
    /// RespTimeValue.
    RESP_TIME_VALUE = 47 => Component::at(pi(52), 4, 5);
    /// LocalPhyErrors.
    LOCAL_PHY_ERRORS = 48 => Component::at(pi(53), 7, 4);
    /// OverrunErrors.
    OVERRUN_ERRORS = 49 => Component::at(pi(53), 3, 4);
    /// MaxCreditHint.
    MAX_CREDIT_HINT = 50 => Component::bytes(pi(54), 2);
    /// Reserved.
    RESERVED_4 = 51 => Component::reserved(pi(56) * 8, 8);
    /// LinkRoundTripLatency.
    LINK_ROUND_TRIP_LATENCY = 52 => Component::new(pi(57) * 8, 24);
    /// CapabilityMask2.
    CAPABILITY_MASK2 = 53 => Component::bytes(pi(60), 2);
    /// LinkSpeedExtActive.
    LINK_SPEED_EXT_ACTIVE = 54 => Component::at(pi(62), 7, 4);
    /// LinkSpeedExtSupported.
    LINK_SPEED_EXT_SUPPORTED = 55 => Component::at(pi(62), 3, 4);
    /// Reserved.
    RESERVED_5 = 56 => Component::reserved_at(pi(63), 7, 3);
    /// LinkSpeedExtEnabled.
    LINK_SPEED_EXT_ENABLED = 57 => Component::at(pi(63), 4, 5);
}

/// The AttributeModifier bit that asks for the "enhanced" CapabilityMask match.
pub const ENHANCED_CAP_MATCH: u32 = 1 << 31;

/// The CapabilityMask / CapabilityMask2 part of a PortInfoRecord match when the query asks for
/// the enhanced match: every bit the query sets is set in the record. `mask` is the query's
/// ComponentMask; components it does not select match.
#[must_use]
pub fn capability_match(mask: u64, query: &PortInfoRecord, rec: &PortInfoRecord) -> bool {
    let cm = query.port_info.capability_mask.get();
    let cm2 = query.port_info.capability_mask2.get();
    (mask & comp::CAPABILITY_MASK == 0 || rec.port_info.capability_mask.get() & cm == cm)
        && (mask & comp::CAPABILITY_MASK2 == 0 || rec.port_info.capability_mask2.get() & cm2 == cm2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::mads;
    use crate::sa_rec::{matches, SaRecord};
    use zerocopy::FromZeros;

    /// PortInfo of Switch1 port 3 as ibsim answers it (mad/testdata/pi_sw1_p3_dr0.mads).
    const PI: &str = include_str!("../../testdata/pi_sw1_p3_dr0.mads");

    fn record() -> PortInfoRecord {
        let smp = mads(PI, "rcv")[0];
        let mut b = [0u8; 68];
        b[0..2].copy_from_slice(&[0, 2]);
        b[2] = 3;
        b[4..68].copy_from_slice(&smp[64..128]);
        PortInfoRecord::parse(&b).unwrap()
    }

    #[test]
    fn layout_and_round_trip() {
        let r = record();
        assert_eq!(r.port_num, 3);
        let mut out = [0u8; 72];
        r.emit(&mut out).unwrap();
        assert_eq!(PortInfoRecord::parse(&out).unwrap(), r);
        assert!(r.emit(&mut [0u8; 67]).is_err());
        assert!(PortInfoRecord::parse(&out[..67]).is_err());
        assert_eq!(PortInfoRecord::COMPONENTS.len(), 58);
    }

    #[test]
    fn reserved_bits_zeroed() {
        let mut b = [0u8; 68];
        r_bytes(&record(), &mut b);
        b[4 + 34] |= 0x38; // reserved bits 5..3 of PortInfo byte 34
        b[3] = 0x80; // Options: kept
        let p = PortInfoRecord::parse(&b).unwrap();
        assert_eq!(p.port_info.b34 & 0x38, 0);
        assert_eq!(p.options, 0x80);
    }

    fn r_bytes(r: &PortInfoRecord, b: &mut [u8]) {
        r.emit(b).unwrap();
    }

    #[test]
    fn sub_byte_components() {
        let r = record();
        let mut q = PortInfoRecord::new_zeroed();
        q.port_info.b32 = r.port_info.b32 & 0x0F; // PortState only
        assert!(matches(
            PortInfoRecord::COMPONENTS,
            comp::PORT_STATE,
            q.as_bytes(),
            r.as_bytes()
        ));
        q.port_info.b32 ^= 0x01;
        assert!(!matches(
            PortInfoRecord::COMPONENTS,
            comp::PORT_STATE,
            q.as_bytes(),
            r.as_bytes()
        ));
        q.port_info.b34 = r.port_info.b34 & 0x07;
        assert!(matches(
            PortInfoRecord::COMPONENTS,
            comp::LMC,
            q.as_bytes(),
            r.as_bytes()
        ));
    }

    #[test]
    fn enhanced_capability_match() {
        let mut r = PortInfoRecord::new_zeroed();
        r.port_info.capability_mask.set(0x0251_0A6A);
        let mut q = PortInfoRecord::new_zeroed();
        q.port_info.capability_mask.set(0x0000_0002); // IsSM
        assert!(capability_match(comp::CAPABILITY_MASK, &q, &r));
        q.port_info.capability_mask.set(0x0000_0001);
        assert!(!capability_match(comp::CAPABILITY_MASK, &q, &r));
        assert!(capability_match(0, &q, &r));
        q.port_info.capability_mask2.set(4);
        assert!(!capability_match(comp::CAPABILITY_MASK2, &q, &r));
    }
}

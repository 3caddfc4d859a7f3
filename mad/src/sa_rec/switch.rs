//! SwitchInfoRecord (SubnAdm attribute 0x0014, IBA vol1 §15.2.5, "SwitchInfoRecord"): a
//! switch's SwitchInfo keyed by its port-0 LID.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2..3 | Reserved (1) |
//! | 4..23 | SwitchInfo's defined fields (bits 2..): LinearFDBCap, RandomFDBCap, MulticastFDBCap, LinearFDBTop, DefaultPort, DefaultMulticastPrimaryPort, DefaultMulticastNotPrimaryPort, LifeTimeValue, PortStateChange, OptimizedSLtoVLMappingProgramming, LIDsPerPort, PartitionEnforcementCap, InboundEnforcementCap, OutboundEnforcementCap, FilterRawInboundCap, FilterRawOutboundCap, EnhancedPort0, reserved, MulticastFDBTop |
//!
//! 24 bytes, as OpenSM sends it (the 20 defined bytes of SwitchInfo, §14.2.5.4, not the
//! 64-byte SMP payload). OpenSM defines mask bits only for LID and Reserved; the SwitchInfo
//! bits here follow the field order, the convention of NodeRecord and PortInfoRecord.

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{sa_record, Component};

/// SwitchInfoRecord, 24 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct SwitchInfoRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// Reserved — bytes 2..3.
    pub resv: U16,
    /// SwitchInfo bytes 0..19 — bytes 4..23.
    pub switch_info: [u8; 20],
}

sa_record! {
    SwitchInfoRecord, SWITCH_INFO_RECORD, 24;
    /// LID.
    LID = 0 => Component::bytes(0, 2);
    /// Reserved.
    RESERVED_1 = 1 => Component::reserved(16, 16);
    /// LinearFDBCap.
    LINEAR_FDB_CAP = 2 => Component::bytes(4, 2);
    /// RandomFDBCap.
    RANDOM_FDB_CAP = 3 => Component::bytes(6, 2);
    /// MulticastFDBCap.
    MULTICAST_FDB_CAP = 4 => Component::bytes(8, 2);
    /// LinearFDBTop.
    LINEAR_FDB_TOP = 5 => Component::bytes(10, 2);
    /// DefaultPort.
    DEFAULT_PORT = 6 => Component::bytes(12, 1);
    /// DefaultMulticastPrimaryPort.
    DEFAULT_MCAST_PRIMARY_PORT = 7 => Component::bytes(13, 1);
    /// DefaultMulticastNotPrimaryPort.
    DEFAULT_MCAST_NOT_PRIMARY_PORT = 8 => Component::bytes(14, 1);
    /// LifeTimeValue.
    LIFE_TIME_VALUE = 9 => Component::at(15, 7, 5);
    /// PortStateChange.
    PORT_STATE_CHANGE = 10 => Component::at(15, 2, 1);
    /// OptimizedSLtoVLMappingProgramming.
    OPTIMIZED_SL2VL = 11 => Component::at(15, 1, 2);
    /// LIDsPerPort.
    LIDS_PER_PORT = 12 => Component::bytes(16, 2);
    /// PartitionEnforcementCap.
    PARTITION_ENFORCEMENT_CAP = 13 => Component::bytes(18, 2);
    /// InboundEnforcementCap.
    INBOUND_ENFORCEMENT_CAP = 14 => Component::at(20, 7, 1);
    /// OutboundEnforcementCap.
    OUTBOUND_ENFORCEMENT_CAP = 15 => Component::at(20, 6, 1);
    /// FilterRawInboundCap.
    FILTER_RAW_INBOUND_CAP = 16 => Component::at(20, 5, 1);
    /// FilterRawOutboundCap.
    FILTER_RAW_OUTBOUND_CAP = 17 => Component::at(20, 4, 1);
    /// EnhancedPort0.
    ENHANCED_PORT0 = 18 => Component::at(20, 3, 1);
    /// Reserved.
    RESERVED_2 = 19 => Component::reserved(20 * 8 + 5, 11);
    /// MulticastFDBTop.
    MULTICAST_FDB_TOP = 20 => Component::bytes(22, 2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::mads;

    /// SwitchInfo of Switch2 (mad/testdata/si_sw2_lid3.mads is absent; ni capture's switch).
    #[test]
    fn round_trip_and_reserved() {
        let mut b = [0u8; 24];
        b[1] = 3;
        b[2] = 0xFF; // reserved
        b[4..6].copy_from_slice(&[0xC0, 0x00]); // LinearFDBCap 49152
        b[20] = 0xFF; // caps + reserved bits 2..0
        b[21] = 0xFF; // reserved
        let r = SwitchInfoRecord::parse(&b).unwrap();
        assert_eq!(r.lid.get(), 3);
        assert_eq!(r.resv.get(), 0);
        assert_eq!((r.switch_info[16], r.switch_info[17]), (0xF8, 0));
        let mut out = [0u8; 24];
        r.emit(&mut out).unwrap();
        assert_eq!(&out[4..6], &[0xC0, 0]);
        assert!(SwitchInfoRecord::parse(&b[..23]).is_err());
        let _ = mads;
    }
}

//! Code spaces as newtypes with named constants (STYLE P4): management class, method, status,
//! SMP attribute id, trap number. `Debug` prints the name, or hex for an unnamed value.

use core::fmt;

macro_rules! code_space {
    (
        $(#[$m:meta])*
        $name:ident($repr:ty) {
            $( $(#[$cm:meta])* $konst:ident = $val:expr; )*
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub $repr);

        impl $name {
            $( $(#[$cm])* pub const $konst: Self = Self($val); )*

            /// The constant's name, if this value has one.
            #[must_use]
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $val => Some(stringify!($konst)), )*
                    _ => None,
                }
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({:#x})", stringify!($name), self.0),
                }
            }
        }
    };
}

code_space! {
    /// Management class (IBA vol1 §13.4.4, Table 118 "Management Class Values").
    MgmtClass(u8) {
        /// Subnet management, LID-routed.
        SUBN_LID_ROUTED = 0x01;
        /// Subnet administration.
        SUBN_ADM = 0x03;
        /// Performance management.
        PERF_MGMT = 0x04;
        /// Baseboard management.
        BM = 0x05;
        /// Device management.
        DEV_MGMT = 0x06;
        /// Communication management.
        COMM_MGMT = 0x07;
        /// SNMP tunnelling.
        SNMP = 0x08;
        /// Subnet management, directed route.
        SUBN_DIRECTED_ROUTE = 0x81;
    }
}

impl MgmtClass {
    /// True for the two subnet-management (SMP) classes.
    #[must_use]
    pub const fn is_smp(self) -> bool {
        self.0 == 0x01 || self.0 == 0x81
    }
}

code_space! {
    /// MAD method (IBA vol1 §13.4.5 common methods, §15.2.2 the SubnAdm methods); bit 7
    /// (`RESP_BIT`) marks a response. Which methods a class defines is
    /// [`crate::gmp::method_defined`].
    Method(u8) {
        /// Get.
        GET = 0x01;
        /// Set.
        SET = 0x02;
        /// Send.
        SEND = 0x03;
        /// Trap.
        TRAP = 0x05;
        /// Report.
        REPORT = 0x06;
        /// TrapRepress.
        TRAP_REPRESS = 0x07;
        /// GetTable (SubnAdm).
        GET_TABLE = 0x12;
        /// GetTraceTable (SubnAdm).
        GET_TRACE_TABLE = 0x13;
        /// GetMulti (SubnAdm).
        GET_MULTI = 0x14;
        /// Delete (SubnAdm).
        DELETE = 0x15;
        /// GetResp (the answer to both Get and Set).
        GET_RESP = 0x81;
        /// ReportResp.
        REPORT_RESP = 0x86;
        /// GetTableResp (SubnAdm).
        GET_TABLE_RESP = 0x92;
        /// GetTraceTableResp (SubnAdm).
        GET_TRACE_TABLE_RESP = 0x93;
        /// GetMultiResp (SubnAdm).
        GET_MULTI_RESP = 0x94;
        /// DeleteResp (SubnAdm).
        DELETE_RESP = 0x95;
    }
}

impl Method {
    /// The response bit.
    pub const RESP_BIT: u8 = 0x80;
    /// True if bit 7 is set.
    #[must_use]
    pub const fn is_response(self) -> bool {
        self.0 & Self::RESP_BIT != 0
    }
    /// The method an agent answers this request with (IBA vol1 §13.4.5, §15.2.2): GetResp for
    /// Get and Set, ReportResp for Report, GetTableResp / GetTraceTableResp / GetMultiResp /
    /// DeleteResp for the SubnAdm methods. `None` for responses, for Send and Trap (which get
    /// no response method; a Trap is acknowledged by a TrapRepress) and for unknown methods.
    #[must_use]
    pub const fn response(self) -> Option<Method> {
        match self {
            Method::GET | Method::SET => Some(Method::GET_RESP),
            Method::REPORT => Some(Method::REPORT_RESP),
            Method::GET_TABLE => Some(Method::GET_TABLE_RESP),
            Method::GET_TRACE_TABLE => Some(Method::GET_TRACE_TABLE_RESP),
            Method::GET_MULTI => Some(Method::GET_MULTI_RESP),
            Method::DELETE => Some(Method::DELETE_RESP),
            _ => None,
        }
    }
}

code_space! {
    /// MAD status with the SMP direction bit removed (IBA vol1 §13.4.7, Table 119).
    ///
    /// For directed-route SMPs bit 15 of the wire field is the D bit; see [`crate::smp`]. The
    /// "invalid field" code is in bits 4..2.
    Status(u16) {
        /// Success.
        OK = 0x0000;
        /// Busy: the request was discarded, retry later.
        BUSY = 0x0001;
        /// Redirect required.
        REDIRECT = 0x0002;
        /// Bad base or class version (invalid-field code 1).
        BAD_VERSION = 0x0004;
        /// Method not supported (code 2).
        METHOD_NOT_SUPPORTED = 0x0008;
        /// Method/attribute combination not supported (code 3).
        METHOD_ATTR_NOT_SUPPORTED = 0x000C;
        /// Invalid value in an attribute field or the attribute modifier (code 7).
        INVALID_FIELD = 0x001C;
    }
}

impl Status {
    /// Mask of the status proper in an SMP (bit 15 is the direction bit).
    pub const SMP_MASK: u16 = 0x7FFF;
}

code_space! {
    /// Subnet-management attribute identifiers (IBA vol1 §14.2.5, Table 145). Per class: these
    /// are SMP ids only.
    SmpAttrId(u16) {
        /// ClassPortInfo.
        CLASS_PORT_INFO = 0x0001;
        /// Notice (Trap / TrapRepress payload).
        NOTICE = 0x0002;
        /// NodeDescription.
        NODE_DESC = 0x0010;
        /// NodeInfo.
        NODE_INFO = 0x0011;
        /// SwitchInfo.
        SWITCH_INFO = 0x0012;
        /// GUIDInfo.
        GUID_INFO = 0x0014;
        /// PortInfo.
        PORT_INFO = 0x0015;
        /// P_KeyTable.
        P_KEY_TABLE = 0x0016;
        /// SLtoVLMappingTable.
        SL_TO_VL_TABLE = 0x0017;
        /// VLArbitrationTable.
        VL_ARB_TABLE = 0x0018;
        /// LinearForwardingTable.
        LINEAR_FT = 0x0019;
        /// RandomForwardingTable.
        RANDOM_FT = 0x001A;
        /// MulticastForwardingTable.
        MULTICAST_FT = 0x001B;
        /// LinkSpeedWidthPairsTable.
        LINK_SPEED_WIDTH_PAIRS = 0x001C;
        /// VendorMADsTable.
        VENDOR_MADS_TABLE = 0x001D;
        /// HierarchyInfo.
        HIERARCHY_INFO = 0x001E;
        /// SMInfo.
        SM_INFO = 0x0020;
        /// VendorDiag.
        VENDOR_DIAG = 0x0030;
        /// LedInfo.
        LED_INFO = 0x0031;
        /// CableInfo.
        CABLE_INFO = 0x0032;
        /// PortInfoExtended.
        PORT_INFO_EXT = 0x0033;
    }
}

code_space! {
    /// Subnet-administration attribute identifiers (IBA vol1 §15.2.5). SubnAdm (class 0x03)
    /// ids only; the same number means another attribute in another class.
    SaAttrId(u16) {
        /// ClassPortInfo.
        CLASS_PORT_INFO = 0x0001;
        /// Notice.
        NOTICE = 0x0002;
        /// InformInfo.
        INFORM_INFO = 0x0003;
        /// NodeRecord.
        NODE_RECORD = 0x0011;
        /// PortInfoRecord.
        PORT_INFO_RECORD = 0x0012;
        /// SLtoVLMappingTableRecord.
        SL_TO_VL_RECORD = 0x0013;
        /// SwitchInfoRecord.
        SWITCH_INFO_RECORD = 0x0014;
        /// LinearForwardingTableRecord.
        LFT_RECORD = 0x0015;
        /// RandomForwardingTableRecord.
        RFT_RECORD = 0x0016;
        /// MulticastForwardingTableRecord.
        MFT_RECORD = 0x0017;
        /// SMInfoRecord.
        SM_INFO_RECORD = 0x0018;
        /// LinkSpeedWidthPairsTableRecord.
        LINK_SPEED_WIDTH_PAIRS_RECORD = 0x0019;
        /// LinkRecord.
        LINK_RECORD = 0x0020;
        /// GuidInfoRecord.
        GUID_INFO_RECORD = 0x0030;
        /// ServiceRecord.
        SERVICE_RECORD = 0x0031;
        /// P_KeyTableRecord.
        P_KEY_TABLE_RECORD = 0x0033;
        /// PathRecord.
        PATH_RECORD = 0x0035;
        /// VLArbitrationTableRecord.
        VL_ARB_RECORD = 0x0036;
        /// MCMemberRecord.
        MC_MEMBER_RECORD = 0x0038;
        /// TraceRecord.
        TRACE_RECORD = 0x0039;
        /// MultiPathRecord.
        MULTI_PATH_RECORD = 0x003A;
        /// ServiceAssociationRecord.
        SERVICE_ASSOCIATION_RECORD = 0x003B;
        /// InformInfoRecord.
        INFORM_INFO_RECORD = 0x00F3;
    }
}

code_space! {
    /// Performance-management attribute identifiers (IBA vol1 §16.1.2, §16.1.3, §16.1.4).
    /// PerfMgt (class 0x04) ids only.
    PmaAttrId(u16) {
        /// ClassPortInfo.
        CLASS_PORT_INFO = 0x0001;
        /// PortSamplesControl.
        PORT_SAMPLES_CONTROL = 0x0010;
        /// PortSamplesResult.
        PORT_SAMPLES_RESULT = 0x0011;
        /// PortCounters.
        PORT_COUNTERS = 0x0012;
        /// PortRcvErrorDetails.
        PORT_RCV_ERROR_DETAILS = 0x0015;
        /// PortXmitDiscardDetails.
        PORT_XMIT_DISCARD_DETAILS = 0x0016;
        /// PortOpRcvCounters.
        PORT_OP_RCV_COUNTERS = 0x0017;
        /// PortFlowCtlCounters.
        PORT_FLOW_CTL_COUNTERS = 0x0018;
        /// PortVLOpPackets.
        PORT_VL_OP_PACKETS = 0x0019;
        /// PortVLOpData.
        PORT_VL_OP_DATA = 0x001A;
        /// PortVLXmitFlowCtlUpdateErrors.
        PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS = 0x001B;
        /// PortVLXmitWaitCounters.
        PORT_VL_XMIT_WAIT_COUNTERS = 0x001C;
        /// PortCountersExtended.
        PORT_COUNTERS_EXT = 0x001D;
        /// PortSamplesResultExtended.
        PORT_SAMPLES_RESULT_EXT = 0x001E;
        /// PortExtendedSpeedsCounters.
        PORT_EXT_SPEEDS_COUNTERS = 0x001F;
        /// PortXmitDataSL.
        PORT_XMIT_DATA_SL = 0x0036;
        /// PortRcvDataSL.
        PORT_RCV_DATA_SL = 0x0037;
    }
}

code_space! {
    /// Generic trap numbers (IBA vol1 §14.2.5.1, Table 146 and §13.4.8.2).
    TrapNum(u16) {
        /// GID in service.
        GID_IN_SERVICE = 64;
        /// GID out of service.
        GID_OUT_OF_SERVICE = 65;
        /// Multicast group created.
        MCG_CREATED = 66;
        /// Multicast group deleted.
        MCG_DELETED = 67;
        /// Link state change on a switch port.
        LINK_STATE_CHANGE = 128;
        /// Local link integrity threshold reached.
        LOCAL_LINK_INTEGRITY = 129;
        /// Excessive buffer overrun threshold reached.
        EXCESSIVE_BUFFER_OVERRUN = 130;
        /// Flow-control update watchdog timer expired.
        FLOW_CONTROL_WATCHDOG = 131;
        /// CapabilityMask, NodeDescription or other local change.
        LOCAL_CHANGES = 144;
        /// SystemImageGUID change.
        SYS_IMAGE_GUID_CHANGE = 145;
        /// Bad M_Key.
        BAD_M_KEY = 256;
        /// Bad P_Key.
        BAD_P_KEY = 257;
        /// Bad Q_Key.
        BAD_Q_KEY = 258;
        /// Bad P_Key at a switch external port.
        BAD_P_KEY_SWITCH_EXTERNAL = 259;
    }
}

code_space! {
    /// NodeInfo.NodeType (IBA vol1 §14.2.5.3).
    NodeType(u8) {
        /// Channel adapter.
        CA = 1;
        /// Switch.
        SWITCH = 2;
        /// Router.
        ROUTER = 3;
    }
}

code_space! {
    /// PortInfo.PortState, the logical link state (IBA vol1 §7.2, §14.2.5.6).
    PortState(u8) {
        /// In a Set: leave the state alone.
        NO_CHANGE = 0;
        /// Down.
        DOWN = 1;
        /// Initialize.
        INIT = 2;
        /// Armed.
        ARMED = 3;
        /// Active.
        ACTIVE = 4;
    }
}

code_space! {
    /// PortInfo.PortPhysicalState (IBA vol1 §5.6.2, §14.2.5.6).
    PhysState(u8) {
        /// In a Set: leave the state alone.
        NO_CHANGE = 0;
        /// Sleep.
        SLEEP = 1;
        /// Polling.
        POLLING = 2;
        /// Disabled.
        DISABLED = 3;
        /// PortConfigurationTraining.
        TRAINING = 4;
        /// LinkUp.
        LINK_UP = 5;
        /// LinkErrorRecovery.
        LINK_ERROR_RECOVERY = 6;
        /// PhyTest.
        PHY_TEST = 7;
    }
}

code_space! {
    /// SMInfo.SMState (IBA vol1 §14.4.1).
    SmState(u8) {
        /// Not active.
        NOT_ACTIVE = 0;
        /// Discovering.
        DISCOVERING = 1;
        /// Standby.
        STANDBY = 2;
        /// Master.
        MASTER = 3;
    }
}

/// Display names in the IBA's own spelling, used by the tcpdump-like printers ([`crate::pretty`]).
macro_rules! spec_names {
    ($name:ident { $( $konst:ident => $text:literal, )* } fallback $fb:literal) => {
        impl $name {
            /// The name the IBA uses for this value (e.g. `NodeInfo`), if it has one.
            #[must_use]
            pub fn spec_name(self) -> Option<&'static str> {
                $( if self == Self::$konst { return Some($text); } )*
                None
            }
        }
        /// The IBA name, or the raw value in hex.
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.spec_name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, $fb, self.0),
                }
            }
        }
    };
}

spec_names!(SmpAttrId {
    CLASS_PORT_INFO => "ClassPortInfo",
    NOTICE => "Notice",
    NODE_DESC => "NodeDescription",
    NODE_INFO => "NodeInfo",
    SWITCH_INFO => "SwitchInfo",
    GUID_INFO => "GUIDInfo",
    PORT_INFO => "PortInfo",
    P_KEY_TABLE => "P_KeyTable",
    SL_TO_VL_TABLE => "SLtoVLMappingTable",
    VL_ARB_TABLE => "VLArbitrationTable",
    LINEAR_FT => "LinearForwardingTable",
    RANDOM_FT => "RandomForwardingTable",
    MULTICAST_FT => "MulticastForwardingTable",
    LINK_SPEED_WIDTH_PAIRS => "LinkSpeedWidthPairsTable",
    VENDOR_MADS_TABLE => "VendorMADsTable",
    HIERARCHY_INFO => "HierarchyInfo",
    SM_INFO => "SMInfo",
    VENDOR_DIAG => "VendorDiag",
    LED_INFO => "LedInfo",
    CABLE_INFO => "CableInfo",
    PORT_INFO_EXT => "PortInfoExtended",
} fallback "{:#06x}");

spec_names!(Method {
    GET => "Get",
    SET => "Set",
    SEND => "Send",
    TRAP => "Trap",
    REPORT => "Report",
    TRAP_REPRESS => "TrapRepress",
    GET_TABLE => "GetTable",
    GET_TRACE_TABLE => "GetTraceTable",
    GET_MULTI => "GetMulti",
    DELETE => "Delete",
    GET_RESP => "GetResp",
    REPORT_RESP => "ReportResp",
    GET_TABLE_RESP => "GetTableResp",
    GET_TRACE_TABLE_RESP => "GetTraceTableResp",
    GET_MULTI_RESP => "GetMultiResp",
    DELETE_RESP => "DeleteResp",
} fallback "Method({:#04x})");

spec_names!(SaAttrId {
    CLASS_PORT_INFO => "ClassPortInfo",
    NOTICE => "Notice",
    INFORM_INFO => "InformInfo",
    NODE_RECORD => "NodeRecord",
    PORT_INFO_RECORD => "PortInfoRecord",
    SL_TO_VL_RECORD => "SLtoVLMappingTableRecord",
    SWITCH_INFO_RECORD => "SwitchInfoRecord",
    LFT_RECORD => "LinearForwardingTableRecord",
    RFT_RECORD => "RandomForwardingTableRecord",
    MFT_RECORD => "MulticastForwardingTableRecord",
    SM_INFO_RECORD => "SMInfoRecord",
    LINK_SPEED_WIDTH_PAIRS_RECORD => "LinkSpeedWidthPairsTableRecord",
    LINK_RECORD => "LinkRecord",
    GUID_INFO_RECORD => "GuidInfoRecord",
    SERVICE_RECORD => "ServiceRecord",
    P_KEY_TABLE_RECORD => "P_KeyTableRecord",
    PATH_RECORD => "PathRecord",
    VL_ARB_RECORD => "VLArbitrationTableRecord",
    MC_MEMBER_RECORD => "MCMemberRecord",
    TRACE_RECORD => "TraceRecord",
    MULTI_PATH_RECORD => "MultiPathRecord",
    SERVICE_ASSOCIATION_RECORD => "ServiceAssociationRecord",
    INFORM_INFO_RECORD => "InformInfoRecord",
} fallback "{:#06x}");

spec_names!(PmaAttrId {
    CLASS_PORT_INFO => "ClassPortInfo",
    PORT_SAMPLES_CONTROL => "PortSamplesControl",
    PORT_SAMPLES_RESULT => "PortSamplesResult",
    PORT_COUNTERS => "PortCounters",
    PORT_RCV_ERROR_DETAILS => "PortRcvErrorDetails",
    PORT_XMIT_DISCARD_DETAILS => "PortXmitDiscardDetails",
    PORT_OP_RCV_COUNTERS => "PortOpRcvCounters",
    PORT_FLOW_CTL_COUNTERS => "PortFlowCtlCounters",
    PORT_VL_OP_PACKETS => "PortVLOpPackets",
    PORT_VL_OP_DATA => "PortVLOpData",
    PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS => "PortVLXmitFlowCtlUpdateErrors",
    PORT_VL_XMIT_WAIT_COUNTERS => "PortVLXmitWaitCounters",
    PORT_COUNTERS_EXT => "PortCountersExtended",
    PORT_SAMPLES_RESULT_EXT => "PortSamplesResultExtended",
    PORT_EXT_SPEEDS_COUNTERS => "PortExtendedSpeedsCounters",
    PORT_XMIT_DATA_SL => "PortXmitDataSL",
    PORT_RCV_DATA_SL => "PortRcvDataSL",
} fallback "{:#06x}");

spec_names!(Status {
    OK => "OK",
    BUSY => "Busy",
    REDIRECT => "Redirect",
    BAD_VERSION => "BadVersion",
    METHOD_NOT_SUPPORTED => "MethodNotSupported",
    METHOD_ATTR_NOT_SUPPORTED => "MethodAttrNotSupported",
    INVALID_FIELD => "InvalidField",
} fallback "{:#06x}");

spec_names!(NodeType {
    CA => "Channel Adapter",
    SWITCH => "Switch",
    ROUTER => "Router",
} fallback "NodeType({})");

/// One port state's names in each spelling the stack prints. Row `i` of a table names value
/// `i`; `None` where that spelling has no name for the value.
struct StateNames {
    /// The IBA's name (PortInfo, IBA vol1 §14.2.5.6; libibmad's `mad_dump_portstate` and
    /// `mad_dump_physportstate` print the same): `Display`, `smpquery`.
    iba: Option<&'static str>,
    /// The Linux kernel's name in sysfs `ports/N/state` and `ports/N/phys_state`.
    kernel: Option<&'static str>,
    /// ibstat's name.
    ibstat: Option<&'static str>,
}

/// What the kernel's sysfs prints for a state it has no name for.
const KERNEL_UNKNOWN: &str = "<unknown>";
/// What ibstat prints for a state it has no name for.
const IBSTAT_UNKNOWN: &str = "Unknown";

/// PortState names. The kernel also names 5 (`IB_PORT_ACTIVE_DEFER`), which the IBA does not
/// define; ibstat says "Initializing" where the IBA says "Initialize".
const PORT_STATE_NAMES: [StateNames; 6] = [
    StateNames {
        iba: Some("NoChange"),
        kernel: Some("NOP"),
        ibstat: None,
    },
    StateNames {
        iba: Some("Down"),
        kernel: Some("DOWN"),
        ibstat: Some("Down"),
    },
    StateNames {
        iba: Some("Initialize"),
        kernel: Some("INIT"),
        ibstat: Some("Initializing"),
    },
    StateNames {
        iba: Some("Armed"),
        kernel: Some("ARMED"),
        ibstat: Some("Armed"),
    },
    StateNames {
        iba: Some("Active"),
        kernel: Some("ACTIVE"),
        ibstat: Some("Active"),
    },
    StateNames {
        iba: None,
        kernel: Some("ACTIVE_DEFER"),
        ibstat: None,
    },
];

/// PortPhysicalState names. The kernel and ibstat say "Phy Test" where the IBA says "PhyTest",
/// and have no name for 0 (NoChange, meaningful only in a Set).
const PHYS_STATE_NAMES: [StateNames; 8] = [
    StateNames {
        iba: Some("NoChange"),
        kernel: None,
        ibstat: None,
    },
    StateNames {
        iba: Some("Sleep"),
        kernel: Some("Sleep"),
        ibstat: Some("Sleep"),
    },
    StateNames {
        iba: Some("Polling"),
        kernel: Some("Polling"),
        ibstat: Some("Polling"),
    },
    StateNames {
        iba: Some("Disabled"),
        kernel: Some("Disabled"),
        ibstat: Some("Disabled"),
    },
    StateNames {
        iba: Some("PortConfigurationTraining"),
        kernel: Some("PortConfigurationTraining"),
        ibstat: Some("PortConfigurationTraining"),
    },
    StateNames {
        iba: Some("LinkUp"),
        kernel: Some("LinkUp"),
        ibstat: Some("LinkUp"),
    },
    StateNames {
        iba: Some("LinkErrorRecovery"),
        kernel: Some("LinkErrorRecovery"),
        ibstat: Some("LinkErrorRecovery"),
    },
    StateNames {
        iba: Some("PhyTest"),
        kernel: Some("Phy Test"),
        ibstat: Some("Phy Test"),
    },
];

/// `spec_name`, `kernel_name`, `ibstat_name` and `Display` of a state type from its name table.
macro_rules! state_names {
    ($name:ident, $table:ident, $fb:literal) => {
        impl $name {
            fn names(self) -> Option<&'static StateNames> {
                $table.get(usize::from(self.0))
            }
            /// The name the IBA uses for this value (e.g. `Initialize`), if it has one.
            #[must_use]
            pub fn spec_name(self) -> Option<&'static str> {
                self.names().and_then(|n| n.iba)
            }
            /// The Linux kernel's name, as its sysfs `state` / `phys_state` file prints it
            /// after the number (e.g. `INIT`, `Phy Test`); `<unknown>` if it has none.
            #[must_use]
            pub fn kernel_name(self) -> &'static str {
                self.names()
                    .and_then(|n| n.kernel)
                    .unwrap_or(KERNEL_UNKNOWN)
            }
            /// ibstat's name (e.g. `Initializing`, `Phy Test`); `Unknown` if it has none.
            #[must_use]
            pub fn ibstat_name(self) -> &'static str {
                self.names()
                    .and_then(|n| n.ibstat)
                    .unwrap_or(IBSTAT_UNKNOWN)
            }
        }
        /// The IBA name, or the raw value.
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.spec_name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, $fb, self.0),
                }
            }
        }
    };
}

state_names!(PortState, PORT_STATE_NAMES, "PortState({})");
state_names!(PhysState, PHYS_STATE_NAMES, "PhysState({})");

spec_names!(SmState {
    NOT_ACTIVE => "NotActive",
    DISCOVERING => "Discovering",
    STANDBY => "Standby",
    MASTER => "Master",
} fallback "SmState({})");

spec_names!(TrapNum {
    GID_IN_SERVICE => "GIDInService",
    GID_OUT_OF_SERVICE => "GIDOutOfService",
    MCG_CREATED => "MCGroupCreated",
    MCG_DELETED => "MCGroupDeleted",
    LINK_STATE_CHANGE => "LinkStateChange",
    LOCAL_LINK_INTEGRITY => "LocalLinkIntegrity",
    EXCESSIVE_BUFFER_OVERRUN => "ExcessiveBufferOverrun",
    FLOW_CONTROL_WATCHDOG => "FlowControlWatchdog",
    LOCAL_CHANGES => "LocalChanges",
    SYS_IMAGE_GUID_CHANGE => "SystemImageGUIDChange",
    BAD_M_KEY => "BadM_Key",
    BAD_P_KEY => "BadP_Key",
    BAD_Q_KEY => "BadQ_Key",
    BAD_P_KEY_SWITCH_EXTERNAL => "BadP_KeySwitchExternalPort",
} fallback "Trap({})");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_names_and_fallback() {
        assert_eq!(format!("{:?}", SmpAttrId::PORT_INFO), "PORT_INFO");
        assert_eq!(format!("{:?}", SmpAttrId(0x1234)), "SmpAttrId(0x1234)");
        assert!(Method::GET_RESP.is_response() && !Method::SET.is_response());
        assert!(MgmtClass::SUBN_DIRECTED_ROUTE.is_smp() && !MgmtClass::SUBN_ADM.is_smp());
    }

    #[test]
    fn response_methods() {
        assert_eq!(Method::GET.response(), Some(Method::GET_RESP));
        assert_eq!(Method::SET.response(), Some(Method::GET_RESP));
        assert_eq!(Method::GET_TABLE.response(), Some(Method::GET_TABLE_RESP));
        assert_eq!(
            Method::GET_TRACE_TABLE.response(),
            Some(Method::GET_TRACE_TABLE_RESP)
        );
        assert_eq!(Method::GET_MULTI.response(), Some(Method::GET_MULTI_RESP));
        assert_eq!(Method::DELETE.response(), Some(Method::DELETE_RESP));
        assert_eq!(Method::REPORT.response(), Some(Method::REPORT_RESP));
        for m in [
            Method::SEND,
            Method::TRAP,
            Method::TRAP_REPRESS,
            Method::GET_RESP,
            Method(0x7F),
        ] {
            assert_eq!(m.response(), None, "{m}");
        }
        for m in [
            Method::GET_TABLE,
            Method::GET_MULTI,
            Method::DELETE,
            Method::GET_TRACE_TABLE,
        ] {
            let r = m.response().unwrap();
            assert!(r.is_response() && r.0 == m.0 | Method::RESP_BIT);
        }
    }

    #[test]
    fn display_spec_names_and_fallback() {
        assert_eq!(SmpAttrId::NODE_INFO.to_string(), "NodeInfo");
        assert_eq!(SmpAttrId(0xff90).to_string(), "0xff90");
        assert_eq!(Method::GET_RESP.to_string(), "GetResp");
        assert_eq!(Method(0x33).to_string(), "Method(0x33)");
        assert_eq!(Method::GET_TABLE_RESP.to_string(), "GetTableResp");
        assert_eq!(SaAttrId::PATH_RECORD.to_string(), "PathRecord");
        assert_eq!(
            PmaAttrId::PORT_COUNTERS_EXT.to_string(),
            "PortCountersExtended"
        );
        assert_eq!(format!("{:?}", PmaAttrId(0x99)), "PmaAttrId(0x99)");
        assert_eq!(Status(0x1C).to_string(), "InvalidField");
        assert_eq!(NodeType(2).to_string(), "Switch");
        assert_eq!(PortState(9).to_string(), "PortState(9)");
    }

    #[test]
    fn port_state_names_in_each_spelling() {
        let port = |v: u8| {
            let s = PortState(v);
            (s.to_string(), s.kernel_name(), s.ibstat_name())
        };
        let row = |a: &str, b: &'static str, c: &'static str| (a.to_string(), b, c);
        assert_eq!(port(0), row("NoChange", "NOP", "Unknown"));
        assert_eq!(port(1), row("Down", "DOWN", "Down"));
        assert_eq!(port(2), row("Initialize", "INIT", "Initializing"));
        assert_eq!(port(3), row("Armed", "ARMED", "Armed"));
        assert_eq!(port(4), row("Active", "ACTIVE", "Active"));
        assert_eq!(port(5), row("PortState(5)", "ACTIVE_DEFER", "Unknown"));
        assert_eq!(port(6), row("PortState(6)", "<unknown>", "Unknown"));
        assert_eq!(port(255), row("PortState(255)", "<unknown>", "Unknown"));
        let phys = |v: u8| {
            let s = PhysState(v);
            (s.to_string(), s.kernel_name(), s.ibstat_name())
        };
        assert_eq!(phys(0), row("NoChange", "<unknown>", "Unknown"));
        assert_eq!(phys(1), row("Sleep", "Sleep", "Sleep"));
        assert_eq!(
            phys(4),
            row(
                "PortConfigurationTraining",
                "PortConfigurationTraining",
                "PortConfigurationTraining"
            )
        );
        assert_eq!(phys(5), row("LinkUp", "LinkUp", "LinkUp"));
        assert_eq!(phys(7), row("PhyTest", "Phy Test", "Phy Test"));
        assert_eq!(phys(8), row("PhysState(8)", "<unknown>", "Unknown"));
        assert_eq!(
            PhysState::LINK_ERROR_RECOVERY.spec_name(),
            Some("LinkErrorRecovery")
        );
        assert_eq!(PortState::INIT.spec_name(), Some("Initialize"));
    }
}

//! Attribute field listings in libibmad's text format (`Name:....value`, the dots pad the name
//! to 32 columns) and the same fields as JSON.
//!
//! Field names and value renderings follow infiniband-diags 44 (`smpquery`, `ibportstate`,
//! `perfquery`) so scripts that parse the stock tools parse ours. Values are read through
//! ibmad's attribute views; nothing here decodes bytes by hand.

use std::fmt::Write as _;

use ibmad::attr::{NodeInfo, PortInfo, SwitchInfo};
use ibmad::{PhysState, PortState};
use serde_json::{Map, Value};

/// One field's value, as libibmad renders it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    /// Unsigned decimal (`mad_dump_uint`).
    U(u64),
    /// Hex zero-padded to `bytes` bytes (`mad_dump_hex`).
    Hex(u64, u8),
    /// Text (enumerations, widths, speeds).
    S(String),
    /// A capability mask: `0x…` then one tab-indented line per named bit.
    Caps(u32, Vec<&'static str>),
}

impl Val {
    fn text(&self) -> String {
        match self {
            Val::U(v) => v.to_string(),
            Val::Hex(v, b) => format!("0x{v:0w$x}", w = usize::from(*b) * 2),
            Val::S(s) => s.clone(),
            Val::Caps(m, names) => {
                let mut s = format!("0x{m:x}");
                for n in names {
                    let _ = write!(s, "\n\t\t\t\t{n}");
                }
                s
            }
        }
    }

    fn json(&self) -> Value {
        match self {
            Val::U(v) => Value::from(*v),
            Val::Caps(m, names) => {
                let mut o = Map::new();
                o.insert("value".into(), Value::from(*m));
                o.insert(
                    "names".into(),
                    Value::from(names.iter().map(|n| Value::from(*n)).collect::<Vec<_>>()),
                );
                Value::Object(o)
            }
            other => Value::from(other.text()),
        }
    }
}

/// An ordered field listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields(pub Vec<(&'static str, Val)>);

impl Fields {
    /// Appends a field.
    pub fn push(&mut self, name: &'static str, v: Val) {
        self.0.push((name, v));
    }

    /// The value of `name`, if listed.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Val> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// libibmad's text: one `Name:....value` line per field.
    #[must_use]
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (n, v) in &self.0 {
            out.push_str(&line(n, &v.text()));
            out.push('\n');
        }
        out
    }

    /// The fields as a JSON object (decimal fields as numbers, the rest as the text shown).
    #[must_use]
    pub fn json(&self) -> Value {
        let mut o = Map::new();
        for (n, v) in &self.0 {
            o.insert((*n).to_string(), v.json());
        }
        Value::Object(o)
    }

    /// Only the fields named, in the order given (ibportstate's subset of PortInfo).
    #[must_use]
    pub fn select(&self, names: &[&'static str]) -> Fields {
        Fields(
            names
                .iter()
                .filter_map(|n| self.get(n).map(|v| (*n, v.clone())))
                .collect(),
        )
    }
}

/// `Name:` padded with dots to 33 columns, then the value (`_mad_dump_field`).
#[must_use]
pub fn line(name: &str, value: &str) -> String {
    let dots = 32usize.saturating_sub(name.len());
    format!("{name}:{}{value}", ".".repeat(dots))
}

/// NodeType text (`mad_dump_node_type`).
#[must_use]
pub fn node_type(t: u8) -> String {
    match t {
        1 => "Channel Adapter".into(),
        2 => "Switch".into(),
        3 => "Router".into(),
        other => format!("?({other})?"),
    }
}

/// NodeInfo (`mad_dump_nodeinfo`).
#[must_use]
pub fn node_info(ni: &NodeInfo) -> Fields {
    let vendor = u32::from_be_bytes([0, ni.vendor_id[0], ni.vendor_id[1], ni.vendor_id[2]]);
    Fields(vec![
        ("BaseVers", Val::U(ni.base_version.into())),
        ("ClassVers", Val::U(ni.class_version.into())),
        ("NodeType", Val::S(node_type(ni.node_type))),
        ("NumPorts", Val::U(ni.num_ports.into())),
        ("SystemGuid", Val::Hex(ni.system_image_guid.get(), 8)),
        ("Guid", Val::Hex(ni.node_guid.get(), 8)),
        ("PortGuid", Val::Hex(ni.port_guid.get(), 8)),
        ("PartCap", Val::U(ni.partition_cap.get().into())),
        ("DevId", Val::Hex(ni.device_id.get().into(), 2)),
        ("Revision", Val::Hex(ni.revision.get().into(), 4)),
        ("LocalPort", Val::U(ni.local_port_num.into())),
        ("VendorId", Val::Hex(vendor.into(), 3)),
    ])
}

/// SwitchInfo (`mad_dump_switchinfo`).
#[must_use]
pub fn switch_info(si: &SwitchInfo) -> Fields {
    Fields(vec![
        ("LinearFdbCap", Val::U(si.linear_fdb_cap.get().into())),
        ("RandomFdbCap", Val::U(si.random_fdb_cap.get().into())),
        ("McastFdbCap", Val::U(si.multicast_fdb_cap.get().into())),
        ("LinearFdbTop", Val::U(si.linear_fdb_top.get().into())),
        ("DefPort", Val::U(si.default_port.into())),
        (
            "DefMcastPrimPort",
            Val::U(si.default_mcast_primary_port.into()),
        ),
        (
            "DefMcastNotPrimPort",
            Val::U(si.default_mcast_not_primary_port.into()),
        ),
        ("LifeTime", Val::U(si.life_time_value().into())),
        ("StateChange", Val::U(si.port_state_change().into())),
        ("OptSLtoVLMapping", Val::U(si.optimized_sl2vl().into())),
        ("LidsPerPort", Val::U(si.lids_per_port.get().into())),
        (
            "PartEnforceCap",
            Val::U(si.partition_enforcement_cap.get().into()),
        ),
        (
            "InboundPartEnf",
            Val::U(si.inbound_enforcement_cap().into()),
        ),
        (
            "OutboundPartEnf",
            Val::U(si.outbound_enforcement_cap().into()),
        ),
        (
            "FilterRawInbound",
            Val::U(si.filter_raw_inbound_cap().into()),
        ),
        (
            "FilterRawOutbound",
            Val::U(si.filter_raw_outbound_cap().into()),
        ),
        ("EnhancedPort0", Val::U(si.enhanced_port0().into())),
        (
            "MulticastFDBTop",
            Val::Hex(si.multicast_fdb_top.get().into(), 2),
        ),
    ])
}

const CAP_NAMES: [(u32, &str); 30] = [
    (1, "IsSM"),
    (2, "IsNoticeSupported"),
    (3, "IsTrapSupported"),
    (4, "IsOptionalIPDSupported"),
    (5, "IsAutomaticMigrationSupported"),
    (6, "IsSLMappingSupported"),
    (7, "IsMKeyNVRAM"),
    (8, "IsPKeyNVRAM"),
    (9, "IsLedInfoSupported"),
    (10, "IsSMdisabled"),
    (11, "IsSystemImageGUIDsupported"),
    (12, "IsPkeySwitchExternalPortTrapSupported"),
    (14, "IsExtendedSpeedsSupported"),
    (15, "IsCapabilityMask2Supported"),
    (16, "IsCommunicatonManagementSupported"),
    (17, "IsSNMPTunnelingSupported"),
    (18, "IsReinitSupported"),
    (19, "IsDeviceManagementSupported"),
    (20, "IsVendorClassSupported"),
    (21, "IsDRNoticeSupported"),
    (22, "IsCapabilityMaskNoticeSupported"),
    (23, "IsBootManagementSupported"),
    (24, "IsLinkRoundTripLatencySupported"),
    (25, "IsClientRegistrationSupported"),
    (26, "IsOtherLocalChangesNoticeSupported"),
    (27, "IsLinkSpeedWidthPairsTableSupported"),
    (28, "IsVendorSpecificMadsTableSupported"),
    (29, "IsMcastPkeyTrapSuppressionSupported"),
    (30, "IsMulticastFDBTopSupported"),
    (31, "IsHierarchyInfoSupported"),
];

const CAP2_NAMES: [(u32, &str); 11] = [
    (0, "IsSetNodeDescriptionSupported"),
    (1, "IsPortInfoExtendedSupported"),
    (2, "IsVirtualizationSupported"),
    (3, "IsSwitchPortStateTableSupported"),
    (4, "IsLinkWidth2xSupported"),
    (5, "IsLinkSpeedHDRSupported"),
    (6, "IsMKeyProtectBitsExtSupported"),
    (7, "IsEnhancedTrap128Supported"),
    (8, "IsPartitionTopSupported"),
    (9, "IsEnhancedQoSArbiterSupported"),
    (10, "IsLinkSpeedNDRSupported"),
];

fn caps(mask: u32, names: &[(u32, &'static str)]) -> Val {
    Val::Caps(
        mask,
        names
            .iter()
            .filter(|(b, _)| mask & (1 << b) != 0)
            .map(|(_, n)| *n)
            .collect(),
    )
}

/// LinkWidthActive text (`mad_dump_linkwidth`).
#[must_use]
pub fn link_width(w: u8) -> String {
    match w {
        1 => "1X".into(),
        2 => "4X".into(),
        4 => "8X".into(),
        8 => "12X".into(),
        16 => "2X".into(),
        other => format!("undefined ({other})"),
    }
}

/// A width set: `1X or 4X` (`dump_linkwidth`).
#[must_use]
pub fn link_widths(w: u8) -> String {
    let names: Vec<&str> = [(1, "1X"), (2, "4X"), (4, "8X"), (8, "12X"), (16, "2X")]
        .iter()
        .filter(|(b, _)| w & b != 0)
        .map(|(_, n)| *n)
        .collect();
    let mut s = names.join(" or ");
    if w == 0 || w >> 5 != 0 {
        if !s.is_empty() {
            s.push_str(" or ");
        }
        let _ = write!(s, "undefined ({w})");
    }
    s
}

fn link_widths_sup(w: u8) -> String {
    let mut s = link_widths(w);
    if ![1, 3, 7, 11, 15, 17, 19, 23, 27, 31].contains(&w) && w >> 5 == 0 {
        s.push_str(" (IBA extension)");
    }
    s
}

/// LinkSpeedActive text (`mad_dump_linkspeed`).
#[must_use]
pub fn link_speed(s: u8) -> String {
    match s {
        0 => "Extended speed".into(),
        1 => "2.5 Gbps".into(),
        2 => "5.0 Gbps".into(),
        4 => "10.0 Gbps".into(),
        other => format!("undefined ({other})"),
    }
}

/// A speed set: `2.5 Gbps or 5.0 Gbps` (`dump_linkspeed`).
#[must_use]
pub fn link_speeds(sp: u8) -> String {
    let names: Vec<&str> = [(1, "2.5 Gbps"), (2, "5.0 Gbps"), (4, "10.0 Gbps")]
        .iter()
        .filter(|(b, _)| sp & b != 0)
        .map(|(_, n)| *n)
        .collect();
    let mut s = names.join(" or ");
    if sp == 0 || sp >> 3 != 0 {
        if !s.is_empty() {
            s.push_str(" or ");
        }
        let _ = write!(s, "undefined ({sp})");
    }
    if ![1, 3, 5, 7].contains(&sp) && sp >> 3 == 0 {
        s.push_str(" (IBA extension)");
    }
    s
}

/// LinkSpeedExtActive text (`mad_dump_linkspeedext`).
#[must_use]
pub fn link_speed_ext(s: u8) -> String {
    match s {
        0 => "No Extended Speed".into(),
        1 => "14.0625 Gbps".into(),
        2 => "25.78125 Gbps".into(),
        4 => "53.125 Gbps".into(),
        8 => "106.25 Gbps".into(),
        other => format!("undefined ({other})"),
    }
}

fn link_speeds_ext(sp: u8) -> String {
    if sp == 0 {
        return "0".into();
    }
    let names: Vec<&str> = [
        (1, "14.0625 Gbps"),
        (2, "25.78125 Gbps"),
        (4, "53.125 Gbps"),
        (8, "106.25 Gbps"),
    ]
    .iter()
    .filter(|(b, _)| sp & b != 0)
    .map(|(_, n)| *n)
    .collect();
    let mut s = names.join(" or ");
    if sp >> 4 != 0 {
        if !s.is_empty() {
            s.push_str(" or ");
        }
        let _ = write!(s, "undefined ({sp})");
    }
    s
}

/// PortState text (`mad_dump_portstate`: the IBA names, [`PortState::spec_name`]).
#[must_use]
pub fn port_state(s: u8) -> String {
    match PortState(s).spec_name() {
        Some(n) => n.into(),
        None => format!("?({s})"),
    }
}

/// PortPhysicalState text (`mad_dump_physportstate`: the IBA names, [`PhysState::spec_name`]).
#[must_use]
pub fn phys_state(s: u8) -> String {
    match PhysState(s).spec_name() {
        Some(n) => n.into(),
        None => format!("?({s})"),
    }
}

fn link_down_def(s: u8) -> String {
    match s {
        0 => "NoChange".into(),
        1 => "Sleep".into(),
        2 => "Polling".into(),
        other => format!("?({other})"),
    }
}

fn mtu(m: u8) -> String {
    match ibmad::attr::port_info::mtu_bytes(m) {
        Some(b) => b.to_string(),
        None => format!("?({m})"),
    }
}

fn vls(v: u8, zero: &str) -> String {
    match v {
        0 if !zero.is_empty() => zero.into(),
        1 => "VL0".into(),
        2 => "VL0-1".into(),
        3 => "VL0-3".into(),
        4 => "VL0-7".into(),
        5 => "VL0-14".into(),
        other => format!("?({other})"),
    }
}

/// `<not displayed>`, as the diags print a key without `-K`.
pub const NOT_DISPLAYED: &str = "<not displayed>";

/// PortInfo (`dump_portinfo`): the PortInfo fields, then CapabilityMask2 and the extended
/// speeds. The M_Key shows only with `show_keys` (`-K`).
#[must_use]
pub fn port_info(pi: &PortInfo, show_keys: bool) -> Fields {
    let mkey = if show_keys {
        Val::Hex(pi.m_key.get(), 8)
    } else {
        Val::S(NOT_DISPLAYED.into())
    };
    Fields(vec![
        ("Mkey", mkey),
        ("GidPrefix", Val::Hex(pi.gid_prefix.get(), 8)),
        ("Lid", Val::U(pi.lid.get().into())),
        ("SMLid", Val::U(pi.master_sm_lid.get().into())),
        ("CapMask", caps(pi.capability_mask.get(), &CAP_NAMES)),
        ("DiagCode", Val::Hex(pi.diag_code.get().into(), 2)),
        (
            "MkeyLeasePeriod",
            Val::U(pi.m_key_lease_period.get().into()),
        ),
        ("LocalPort", Val::U(pi.local_port_num.into())),
        (
            "LinkWidthEnabled",
            Val::S(link_widths(pi.link_width_enabled)),
        ),
        (
            "LinkWidthSupported",
            Val::S(link_widths_sup(pi.link_width_supported)),
        ),
        ("LinkWidthActive", Val::S(link_width(pi.link_width_active))),
        (
            "LinkSpeedSupported",
            Val::S(link_speeds(pi.link_speed_supported())),
        ),
        ("LinkState", Val::S(port_state(pi.port_state_raw()))),
        ("PhysLinkState", Val::S(phys_state(pi.phys_state_raw()))),
        (
            "LinkDownDefState",
            Val::S(link_down_def(pi.link_down_default_state())),
        ),
        ("ProtectBits", Val::U(pi.m_key_protect_bits().into())),
        ("LMC", Val::U(pi.lmc().into())),
        (
            "LinkSpeedActive",
            Val::S(link_speed(pi.link_speed_active())),
        ),
        (
            "LinkSpeedEnabled",
            Val::S(link_speeds(pi.link_speed_enabled())),
        ),
        ("NeighborMTU", Val::S(mtu(pi.neighbor_mtu()))),
        ("SMSL", Val::U(pi.master_sm_sl().into())),
        ("VLCap", Val::S(vls(pi.vl_cap(), ""))),
        ("InitType", Val::Hex(pi.init_type().into(), 1)),
        ("VLHighLimit", Val::U(pi.vl_high_limit.into())),
        ("VLArbHighCap", Val::U(pi.vl_arb_high_cap.into())),
        ("VLArbLowCap", Val::U(pi.vl_arb_low_cap.into())),
        ("InitReply", Val::Hex(pi.init_type_reply().into(), 1)),
        ("MtuCap", Val::S(mtu(pi.mtu_cap()))),
        ("VLStallCount", Val::U(pi.vl_stall_count().into())),
        ("HoqLife", Val::U(pi.hoq_life().into())),
        ("OperVLs", Val::S(vls(pi.operational_vls(), "No change"))),
        (
            "PartEnforceInb",
            Val::U(pi.partition_enforcement_inbound().into()),
        ),
        (
            "PartEnforceOutb",
            Val::U(pi.partition_enforcement_outbound().into()),
        ),
        ("FilterRawInb", Val::U(pi.filter_raw_inbound().into())),
        ("FilterRawOutb", Val::U(pi.filter_raw_outbound().into())),
        ("MkeyViolations", Val::U(pi.m_key_violations.get().into())),
        ("PkeyViolations", Val::U(pi.p_key_violations.get().into())),
        ("QkeyViolations", Val::U(pi.q_key_violations.get().into())),
        ("GuidCap", Val::U(pi.guid_cap.into())),
        ("ClientReregister", Val::U(pi.client_reregister().into())),
        (
            "McastPkeyTrapSuppressionEnabled",
            Val::U(pi.mcast_pkey_trap_suppression().into()),
        ),
        ("SubnetTimeout", Val::U(pi.subnet_timeout().into())),
        ("RespTimeVal", Val::U(pi.resp_time_value().into())),
        ("LocalPhysErr", Val::U(pi.local_phy_errors().into())),
        ("OverrunErr", Val::U(pi.overrun_errors().into())),
        ("MaxCreditHint", Val::U(pi.max_credit_hint.get().into())),
        ("RoundTrip", Val::U(pi.link_round_trip_latency().into())),
        (
            "CapabilityMask2",
            caps(pi.capability_mask2.get().into(), &CAP2_NAMES),
        ),
        (
            "LinkSpeedExtActive",
            Val::S(link_speed_ext(pi.link_speed_ext_active())),
        ),
        (
            "LinkSpeedExtSupported",
            Val::S(link_speeds_ext(pi.link_speed_ext_supported())),
        ),
        (
            "LinkSpeedExtEnabled",
            Val::S(if pi.link_speed_ext_enabled() == 30 {
                "Extended link speeds disabled".into()
            } else {
                link_speeds_ext(pi.link_speed_ext_enabled())
            }),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_pad_to_33_columns() {
        assert_eq!(line("Mkey", "x"), "Mkey:............................x");
        assert_eq!(
            line("McastPkeyTrapSuppressionEnabled", "0"),
            "McastPkeyTrapSuppressionEnabled:.0"
        );
    }

    #[test]
    fn width_and_speed_sets_read_as_libibmad() {
        assert_eq!(link_widths_sup(0x1f), "1X or 4X or 8X or 12X or 2X");
        assert_eq!(link_widths(2), "4X");
        assert_eq!(link_speeds(7), "2.5 Gbps or 5.0 Gbps or 10.0 Gbps");
        assert_eq!(link_speeds(1), "2.5 Gbps");
        assert_eq!(link_speeds(2), "5.0 Gbps (IBA extension)");
        assert_eq!(link_speeds_ext(0), "0");
        assert_eq!(link_speeds_ext(3), "14.0625 Gbps or 25.78125 Gbps");
    }

    #[test]
    fn capability_mask_lists_bits() {
        let v = caps(0x50c048, &CAP_NAMES);
        assert_eq!(
            v.text(),
            "0x50c048\n\t\t\t\tIsTrapSupported\n\t\t\t\tIsSLMappingSupported\n\t\t\t\t\
             IsExtendedSpeedsSupported\n\t\t\t\tIsCapabilityMask2Supported\n\t\t\t\t\
             IsVendorClassSupported\n\t\t\t\tIsCapabilityMaskNoticeSupported"
        );
        assert_eq!(caps(0, &CAP_NAMES).text(), "0x0");
    }
}

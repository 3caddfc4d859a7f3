//! The key table: every `opensm.conf` key ibsm implements, with its documentation comment,
//! how to print its value and how to parse one. The file reader, the file writer and the
//! command line all go through this one table, so they cannot disagree.

use std::path::PathBuf;

use ibmad::{Guid, MKey};

use super::options::{Options, RoutingEngines, Transport};

/// A group of keys, written under an OpenSM-style section banner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Section {
    Device,
    Sweep,
    Routing,
    Handover,
    Timing,
    Misc,
    PerfMgr,
    Snm,
    Qos,
    Debug,
    Ibsm,
}

impl Section {
    pub(crate) fn title(self) -> &'static str {
        match self {
            Section::Device => "DEVICE ATTRIBUTES OPTIONS",
            Section::Sweep => "SWEEP OPTIONS",
            Section::Routing => "ROUTING OPTIONS",
            Section::Handover => "HANDOVER - MULTIPLE SMs OPTIONS",
            Section::Timing => "TIMING AND THREADING OPTIONS",
            Section::Misc => "MISC OPTIONS",
            Section::PerfMgr => "Performance Manager Options",
            Section::Snm => "IPv6 Solicited Node Multicast (SNM) Options",
            Section::Qos => "QoS OPTIONS",
            Section::Debug => "DEBUG FEATURES",
            Section::Ibsm => "IBSM OPTIONS (not in OpenSM)",
        }
    }
}

/// One config key.
pub(crate) struct KeySpec {
    pub(crate) key: &'static str,
    pub(crate) section: Section,
    /// Comment lines written above the key (without `# `).
    pub(crate) doc: &'static [&'static str],
    /// The value in opensm.conf syntax.
    pub(crate) get: fn(&Options) -> String,
    /// Parses a value into the options; the error says what is accepted.
    pub(crate) set: fn(&mut Options, &str) -> Result<(), String>,
}

/// Parses an unsigned integer the way C's `strtoull(s, &end, 0)` does, which is what OpenSM
/// uses: `0x`/`0X` prefix = hex, a leading `0` = octal, otherwise decimal; the whole string
/// must be consumed. Signs and whitespace are rejected (OpenSM would wrap `-1` around).
pub(crate) fn parse_c_uint(s: &str) -> Option<u64> {
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Parses a hex number with an optional `0x`, as OpenSM's `-g`, `-k` and `--subnet_prefix`
/// do (`strtoull(s, NULL, 16)`).
pub(crate) fn parse_hex(s: &str) -> Option<u64> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

fn uint_in(v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match parse_c_uint(v) {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!(
            "an integer in {lo}..={hi} (decimal, 0x hex or 0 octal)"
        )),
    }
}

fn u8_in(v: &str, lo: u8, hi: u8) -> Result<u8, String> {
    uint_in(v, lo.into(), hi.into()).and_then(|n| u8::try_from(n).map_err(|e| e.to_string()))
}

fn u16_in(v: &str, lo: u16, hi: u16) -> Result<u16, String> {
    uint_in(v, lo.into(), hi.into()).and_then(|n| u16::try_from(n).map_err(|e| e.to_string()))
}

fn u32_in(v: &str, lo: u32, hi: u32) -> Result<u32, String> {
    uint_in(v, lo.into(), hi.into()).and_then(|n| u32::try_from(n).map_err(|e| e.to_string()))
}

fn u64_any(v: &str) -> Result<u64, String> {
    parse_c_uint(v).ok_or_else(|| "a 64-bit integer, e.g. 0x0002c90300a1b2c3".to_string())
}

fn boolean(v: &str) -> Result<bool, String> {
    if v.eq_ignore_ascii_case("TRUE") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("FALSE") {
        Ok(false)
    } else {
        Err("TRUE or FALSE".to_string())
    }
}

/// A file name or `(null)`. `#` would start a comment in the file, and a value still
/// quoted after the outer quotes were removed would lose its quotes when written and re-read,
/// so both are refused.
fn opt_path(v: &str) -> Result<Option<PathBuf>, String> {
    let quoted = v.len() >= 2
        && ['"', '\'']
            .iter()
            .any(|q| v.starts_with(*q) && v.ends_with(*q));
    if v.contains('#') || quoted {
        Err(
            "a name without # (it starts a comment in opensm.conf) and not quoted twice, \
             or (null)"
                .to_string(),
        )
    } else if v.is_empty() || v == "(null)" {
        Ok(None)
    } else {
        Ok(Some(PathBuf::from(v)))
    }
}

fn path(v: &str) -> Result<PathBuf, String> {
    opt_path(v)?.ok_or_else(|| "a path (not empty, not (null))".to_string())
}

fn fmt_bool(b: bool) -> String {
    if b { "TRUE" } else { "FALSE" }.to_string()
}

fn fmt_opt_path(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map_or_else(|| "(null)".to_string(), |p| p.display().to_string())
}

fn fmt_hex64(v: u64) -> String {
    format!("0x{v:016x}")
}

/// The table, in the order the keys are written. Section order follows OpenSM's `-c` output.
pub(crate) static KEYS: &[KeySpec] = &[
    // ---------------- DEVICE ATTRIBUTES ----------------
    KeySpec {
        key: "guid",
        section: Section::Device,
        doc: &[
            "The port GUID on which the SM is running",
            "(0: use ca_name/ca_port, or the first active port)",
        ],
        get: |o| fmt_hex64(o.guid.0),
        set: |o, v| {
            o.guid = Guid(u64_any(v)?);
            Ok(())
        },
    },
    KeySpec {
        key: "m_key",
        section: Section::Device,
        doc: &["M_Key value sent to all ports qualifying all Set(PortInfo)"],
        get: |o| fmt_hex64(o.m_key.0),
        set: |o, v| {
            o.m_key = MKey(u64_any(v)?);
            Ok(())
        },
    },
    KeySpec {
        key: "m_key_lease_period",
        section: Section::Device,
        doc: &["The lease period used for the M_Key on this subnet in [sec]"],
        get: |o| o.m_key_lease_period.to_string(),
        set: |o, v| {
            o.m_key_lease_period = u16_in(v, 0, u16::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "m_key_protection_level",
        section: Section::Device,
        doc: &["The protection level used for the M_Key on this subnet (0..3)"],
        get: |o| o.m_key_protection_level.to_string(),
        set: |o, v| {
            o.m_key_protection_level = u8_in(v, 0, 3)?;
            Ok(())
        },
    },
    KeySpec {
        key: "sm_key",
        section: Section::Device,
        doc: &["SM_Key value of the SM used for SM authentication"],
        get: |o| fmt_hex64(o.sm_key),
        set: |o, v| {
            o.sm_key = u64_any(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "sa_key",
        section: Section::Device,
        doc: &["SM_Key value to qualify rcv SA queries as 'trusted'"],
        get: |o| fmt_hex64(o.sa_key),
        set: |o, v| {
            o.sa_key = u64_any(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "subnet_prefix",
        section: Section::Device,
        doc: &["Subnet prefix used on this subnet"],
        get: |o| fmt_hex64(o.subnet_prefix),
        set: |o, v| {
            o.subnet_prefix = u64_any(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "lmc",
        section: Section::Device,
        doc: &["The LMC value used on this subnet (0..7; each port gets 2^lmc LIDs)"],
        get: |o| o.lmc.to_string(),
        set: |o, v| {
            o.lmc = u8_in(v, 0, 7)?;
            Ok(())
        },
    },
    KeySpec {
        key: "lmc_esp0",
        section: Section::Device,
        doc: &[
            "lmc_esp0 determines whether LMC value used on subnet is used for",
            "enhanced switch port 0. If TRUE, LMC value for subnet is used for",
            "ESP0. Otherwise, LMC value for ESP0s is 0.",
        ],
        get: |o| fmt_bool(o.lmc_esp0),
        set: |o, v| {
            o.lmc_esp0 = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "sm_sl",
        section: Section::Device,
        doc: &["sm_sl determines SMSL used for SM/SA communication"],
        get: |o| o.sm_sl.to_string(),
        set: |o, v| {
            o.sm_sl = u8_in(v, 0, 15)?;
            Ok(())
        },
    },
    KeySpec {
        key: "packet_life_time",
        section: Section::Device,
        doc: &[
            "The code of maximal time a packet can live in a switch",
            "The actual time is 4.096usec * 2^<packet_life_time>",
            "The value 0x14 disables this mechanism",
        ],
        get: |o| format!("0x{:02x}", o.packet_life_time),
        set: |o, v| {
            o.packet_life_time = u8_in(v, 0, 31)?;
            Ok(())
        },
    },
    KeySpec {
        key: "vl_stall_count",
        section: Section::Device,
        doc: &[
            "The number of sequential packets dropped that cause the port",
            "to enter the VLStalled state. The result of setting this value to",
            "zero is undefined.",
        ],
        get: |o| format!("0x{:02x}", o.vl_stall_count),
        set: |o, v| {
            o.vl_stall_count = u8_in(v, 0, 7)?;
            Ok(())
        },
    },
    KeySpec {
        key: "leaf_vl_stall_count",
        section: Section::Device,
        doc: &[
            "The number of sequential packets dropped that cause the port",
            "to enter the VLStalled state. This value is for switch ports",
            "driving a CA or router port. The result of setting this value",
            "to zero is undefined.",
        ],
        get: |o| format!("0x{:02x}", o.leaf_vl_stall_count),
        set: |o, v| {
            o.leaf_vl_stall_count = u8_in(v, 0, 7)?;
            Ok(())
        },
    },
    KeySpec {
        key: "head_of_queue_lifetime",
        section: Section::Device,
        doc: &[
            "The code of maximal time a packet can wait at the head of",
            "transmission queue.",
            "The actual time is 4.096usec * 2^<head_of_queue_lifetime>",
            "The value 0x14 disables this mechanism",
        ],
        get: |o| format!("0x{:02x}", o.head_of_queue_lifetime),
        set: |o, v| {
            o.head_of_queue_lifetime = u8_in(v, 0, 31)?;
            Ok(())
        },
    },
    KeySpec {
        key: "leaf_head_of_queue_lifetime",
        section: Section::Device,
        doc: &[
            "The maximal time a packet can wait at the head of queue on",
            "switch port connected to a CA or router port",
        ],
        get: |o| format!("0x{:02x}", o.leaf_head_of_queue_lifetime),
        set: |o, v| {
            o.leaf_head_of_queue_lifetime = u8_in(v, 0, 31)?;
            Ok(())
        },
    },
    KeySpec {
        key: "max_op_vls",
        section: Section::Device,
        doc: &[
            "Limit the maximal operational VLs",
            "(1: VL0, 2: VL0-1, 3: VL0-3, 4: VL0-7, 5: VL0-14; 0 acts as 1)",
        ],
        get: |o| o.max_op_vls.to_string(),
        set: |o, v| {
            o.max_op_vls = u8_in(v, 0, 5)?;
            Ok(())
        },
    },
    KeySpec {
        key: "force_link_speed",
        section: Section::Device,
        doc: &[
            "Force PortInfo:LinkSpeedEnabled on switch ports",
            "If 0, don't modify PortInfo:LinkSpeedEnabled on switch port",
            "Otherwise, use value for PortInfo:LinkSpeedEnabled on switch port",
            "Values are (IB Spec 1.2.1, 14.2.5.6 Table 146 \"PortInfo\")",
            "   1: 2.5 Gbps",
            "   3: 2.5 or 5.0 Gbps",
            "   5: 2.5 or 10.0 Gbps",
            "   7: 2.5 or 5.0 or 10.0 Gbps",
            "   2,4,6,8-14 Reserved",
            "   15: set to PortInfo:LinkSpeedSupported",
        ],
        get: |o| o.force_link_speed.to_string(),
        set: |o, v| match parse_c_uint(v) {
            Some(n @ (0..=7 | 15)) => {
                o.force_link_speed = u8::try_from(n).map_err(|e| e.to_string())?;
                Ok(())
            }
            _ => Err("an integer in 0..=7, or 15".to_string()),
        },
    },
    KeySpec {
        key: "force_link_speed_ext",
        section: Section::Device,
        doc: &[
            "Force PortInfo:LinkSpeedExtEnabled on ports",
            "If 0, don't modify PortInfo:LinkSpeedExtEnabled on port",
            "Otherwise, use value for PortInfo:LinkSpeedExtEnabled on port",
            "Values are (MgtWG RefIDs #4722 and #9366)",
            "   1: 14.0625 Gbps",
            "   2: 25.78125 Gbps",
            "   3: 14.0625 Gbps or 25.78125 Gbps",
            "   4: 53.125 Gbps",
            "   5: 14.0625 Gbps or 53.125 Gbps",
            "   6: 25.78125 Gbps or 53.125 Gbps",
            "   7: 14.0625 Gbps, 25.78125 Gbps or 53.125 Gbps",
            "   8: 106.25 Gbps",
            "   9: 14.0625 Gbps or 106.25 Gbps",
            "   10: 25.78125 Gbps or 106.25 Gbps",
            "   11: 14.0625 Gbps or 25.78125 Gbps or 106.25 Gbps",
            "   12: 53.125 Gbps or 106.25 Gbps",
            "   13: 14.0625 Gbps or 53.125 Gbps or 106.25 Gbps",
            "   14: 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps",
            "   15: 14.0625 Gbps, 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps",
            "   30: Disable extended link speeds",
            "   31: set to PortInfo:LinkSpeedExtSupported",
        ],
        get: |o| o.force_link_speed_ext.to_string(),
        set: |o, v| match parse_c_uint(v) {
            Some(n @ (0..=15 | 30 | 31)) => {
                o.force_link_speed_ext = u8::try_from(n).map_err(|e| e.to_string())?;
                Ok(())
            }
            _ => Err("an integer in 0..=15, 30 or 31".to_string()),
        },
    },
    KeySpec {
        key: "force_link_width",
        section: Section::Device,
        doc: &[
            "Force PortInfo:LinkWidthEnabled on switch ports",
            "If 0, don't modify PortInfo:LinkWidthEnabled on switch port",
            "Otherwise, use value for PortInfo:LinkWidthEnabled on switch port",
            "(bit mask: 1: 1x, 2: 4x, 4: 8x, 8: 12x, 16: 2x; 1..31)",
            "   255: set to PortInfo:LinkWidthSupported",
        ],
        get: |o| o.force_link_width.to_string(),
        set: |o, v| match parse_c_uint(v) {
            Some(n @ (0..=31 | 255)) => {
                o.force_link_width = u8::try_from(n).map_err(|e| e.to_string())?;
                Ok(())
            }
            _ => Err("an integer in 0..=31, or 255".to_string()),
        },
    },
    KeySpec {
        key: "subnet_timeout",
        section: Section::Device,
        doc: &[
            "The subnet_timeout code that will be set for all the ports",
            "The actual timeout is 4.096usec * 2^<subnet_timeout>",
        ],
        get: |o| o.subnet_timeout.to_string(),
        set: |o, v| {
            o.subnet_timeout = u8_in(v, 0, 31)?;
            Ok(())
        },
    },
    KeySpec {
        key: "local_phy_errors_threshold",
        section: Section::Device,
        doc: &["Threshold of local phy errors for sending Trap 129"],
        get: |o| format!("0x{:02x}", o.local_phy_errors_threshold),
        set: |o, v| {
            o.local_phy_errors_threshold = u8_in(v, 0, 15)?;
            Ok(())
        },
    },
    KeySpec {
        key: "overrun_errors_threshold",
        section: Section::Device,
        doc: &["Threshold of credit overrun errors for sending Trap 130"],
        get: |o| format!("0x{:02x}", o.overrun_errors_threshold),
        set: |o, v| {
            o.overrun_errors_threshold = u8_in(v, 0, 15)?;
            Ok(())
        },
    },
    KeySpec {
        key: "partition_config_file",
        section: Section::Device,
        doc: &["Partition configuration file to be used"],
        get: |o| o.partition_config_file.display().to_string(),
        set: |o, v| {
            o.partition_config_file = path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "no_partition_enforcement",
        section: Section::Device,
        doc: &["Disable partition enforcement by switches (DEPRECATED)", "This option is equivalent to 'part_enforce off'"],
        get: |o| fmt_bool(o.no_partition_enforcement),
        set: |o, v| {
            o.no_partition_enforcement = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "part_enforce",
        section: Section::Device,
        doc: &[
            "Partition enforcement type (for switches)",
            "Values are both, out, in and off",
            "Default is both (outbound and inbound enforcement)",
        ],
        get: |o| o.part_enforce.name().to_string(),
        set: |o, v| {
            o.part_enforce = sm::partition::PartEnforce::parse(v)
                .ok_or_else(|| "both, in, out or off".to_string())?;
            Ok(())
        },
    },
    KeySpec {
        key: "allow_both_pkeys",
        section: Section::Device,
        doc: &["Allow both full and limited membership on the same partition"],
        get: |o| fmt_bool(o.allow_both_pkeys),
        set: |o, v| {
            o.allow_both_pkeys = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "keep_pkey_indexes",
        section: Section::Device,
        doc: &[
            "Keep current and take into account old pkey indexes",
            "during calculation of physical ports pkey tables",
        ],
        get: |o| fmt_bool(o.keep_pkey_indexes),
        set: |o, v| {
            o.keep_pkey_indexes = boolean(v)?;
            Ok(())
        },
    },
    // ---------------- SWEEP ----------------
    KeySpec {
        key: "sweep_interval",
        section: Section::Sweep,
        doc: &["The number of seconds between subnet sweeps (0 disables it)"],
        get: |o| o.sweep_interval.to_string(),
        set: |o, v| {
            o.sweep_interval = u32_in(v, 0, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "reassign_lids",
        section: Section::Sweep,
        doc: &["If TRUE cause all lids to be reassigned"],
        get: |o| fmt_bool(o.reassign_lids),
        set: |o, v| {
            o.reassign_lids = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "force_heavy_sweep",
        section: Section::Sweep,
        doc: &["If TRUE forces every sweep to be a heavy sweep"],
        get: |o| fmt_bool(o.force_heavy_sweep),
        set: |o, v| {
            o.force_heavy_sweep = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "sweep_on_trap",
        section: Section::Sweep,
        doc: &[
            "If TRUE every trap 128 and 144 will cause a heavy sweep.",
            "NOTE: successive identical traps (>10) are suppressed",
        ],
        get: |o| fmt_bool(o.sweep_on_trap),
        set: |o, v| {
            o.sweep_on_trap = boolean(v)?;
            Ok(())
        },
    },
    // ---------------- ROUTING ----------------
    KeySpec {
        key: "routing_engine",
        section: Section::Routing,
        doc: &[
            "Routing engine",
            "Multiple routing engines can be specified separated by",
            "commas so that specific ordering of routing algorithms will",
            "be tried if earlier routing engines fail.",
            "If all of them fail, Min Hop is tried unless no_fallback is listed.",
            "Names: minhop, updn, dnup, file, ftree, lash, dor, torus-2QoS,",
            "   nue, dfsssp, sssp, dfp, dfp2 (and the token no_fallback)",
        ],
        get: |o| o.routing_engine.to_string(),
        set: |o, v| {
            o.routing_engine = RoutingEngines::parse(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "connect_roots",
        section: Section::Routing,
        doc: &["Connect roots (use FALSE if unsure)"],
        get: |o| fmt_bool(o.connect_roots),
        set: |o, v| {
            o.connect_roots = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "use_ucast_cache",
        section: Section::Routing,
        doc: &["Use unicast routing cache (use FALSE if unsure)"],
        get: |o| fmt_bool(o.use_ucast_cache),
        set: |o, v| {
            o.use_ucast_cache = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "root_guid_file",
        section: Section::Routing,
        doc: &[
            "The file holding the root node guids (for fat-tree or Up/Down)",
            "One guid in each line",
        ],
        get: |o| fmt_opt_path(&o.root_guid_file),
        set: |o, v| {
            o.root_guid_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "cn_guid_file",
        section: Section::Routing,
        doc: &[
            "The file holding the fat-tree compute node guids",
            "One guid in each line",
        ],
        get: |o| fmt_opt_path(&o.cn_guid_file),
        set: |o, v| {
            o.cn_guid_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "io_guid_file",
        section: Section::Routing,
        doc: &[
            "The file holding the fat-tree I/O node guids",
            "One guid in each line.",
            "If only io_guid file is provided, the rest of nodes",
            "are considered as compute nodes.",
        ],
        get: |o| fmt_opt_path(&o.io_guid_file),
        set: |o, v| {
            o.io_guid_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "max_reverse_hops",
        section: Section::Routing,
        doc: &[
            "Number of reverse hops allowed for I/O nodes",
            "Used for connectivity between I/O nodes connected to Top Switches",
        ],
        get: |o| o.max_reverse_hops.to_string(),
        set: |o, v| {
            o.max_reverse_hops = u16_in(v, 0, u16::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "ids_guid_file",
        section: Section::Routing,
        doc: &[
            "The file holding the node ids which will be used by Up/Down algorithm instead",
            "of GUIDs (one guid and id in each line)",
        ],
        get: |o| fmt_opt_path(&o.ids_guid_file),
        set: |o, v| {
            o.ids_guid_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "guid_routing_order_file",
        section: Section::Routing,
        doc: &["The file holding guid routing order guids (for MinHop and Up/Down)"],
        get: |o| fmt_opt_path(&o.guid_routing_order_file),
        set: |o, v| {
            o.guid_routing_order_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "do_mesh_analysis",
        section: Section::Routing,
        doc: &["Do mesh topology analysis (for LASH algorithm)"],
        get: |o| fmt_bool(o.do_mesh_analysis),
        set: |o, v| {
            o.do_mesh_analysis = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "lash_start_vl",
        section: Section::Routing,
        doc: &["Starting VL for LASH algorithm"],
        get: |o| o.lash_start_vl.to_string(),
        set: |o, v| {
            o.lash_start_vl = u8_in(v, 0, 15)?;
            Ok(())
        },
    },
    KeySpec {
        key: "nue_max_num_vls",
        section: Section::Routing,
        doc: &[
            "Maximum number of VLs for Nue routing algorithm (default: 1; to enforce",
            "deadlock-freedom even if QoS is not enabled). Set to 0 if Nue should",
            "automatically determine and choose maximum supported by the fabric, or",
            "any integer >= 1 (then Nue uses min(max_supported,nue_max_num_vls)",
        ],
        get: |o| o.nue_max_num_vls.to_string(),
        set: |o, v| {
            o.nue_max_num_vls = u8_in(v, 0, 15)?;
            Ok(())
        },
    },
    KeySpec {
        key: "nue_include_switches",
        section: Section::Routing,
        doc: &[
            "If TRUE, then Nue assumes that switches will send/receive",
            "data traffic, too, and hence their paths are included in",
            "the deadlock-avoidance calculation (use FALSE if unsure)",
        ],
        get: |o| fmt_bool(o.nue_include_switches),
        set: |o, v| {
            o.nue_include_switches = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "lfts_file",
        section: Section::Routing,
        doc: &["LFTs file name (for the file routing engine)"],
        get: |o| fmt_opt_path(&o.lfts_file),
        set: |o, v| {
            o.lfts_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "port_profile_switch_nodes",
        section: Section::Routing,
        doc: &["If TRUE count switches as link subscriptions"],
        get: |o| fmt_bool(o.port_profile_switch_nodes),
        set: |o, v| {
            o.port_profile_switch_nodes = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "port_prof_ignore_file",
        section: Section::Routing,
        doc: &["Name of file with port guids to be ignored by port profiling"],
        get: |o| fmt_opt_path(&o.port_prof_ignore_file),
        set: |o, v| {
            o.port_prof_ignore_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "hop_weights_file",
        section: Section::Routing,
        doc: &["The file holding routing weighting factors per output port"],
        get: |o| fmt_opt_path(&o.hop_weights_file),
        set: |o, v| {
            o.hop_weights_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "port_search_ordering_file",
        section: Section::Routing,
        doc: &["The file holding non-default port order per switch for routing"],
        get: |o| fmt_opt_path(&o.port_search_ordering_file),
        set: |o, v| {
            o.port_search_ordering_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "port_shifting",
        section: Section::Routing,
        doc: &["Port Shifting (use FALSE if unsure)"],
        get: |o| fmt_bool(o.port_shifting),
        set: |o, v| {
            o.port_shifting = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "avoid_throttled_links",
        section: Section::Routing,
        doc: &[
            "Routing engines will avoid throttled switch-to-switch links",
            "(supported by: nue, dfsssp, sssp; use FALSE if unsure)",
        ],
        get: |o| fmt_bool(o.avoid_throttled_links),
        set: |o, v| {
            o.avoid_throttled_links = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "scatter_ports",
        section: Section::Routing,
        doc: &[
            "Assign ports in a random order instead of round-robin",
            "If zero disable (default), otherwise use the value as a random seed",
        ],
        get: |o| o.scatter_ports.to_string(),
        set: |o, v| {
            o.scatter_ports = u32_in(v, 0, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "guid_routing_order_no_scatter",
        section: Section::Routing,
        doc: &[
            "Don't use scatter for ports defined in",
            "guid_routing_order file",
        ],
        get: |o| fmt_bool(o.guid_routing_order_no_scatter),
        set: |o, v| {
            o.guid_routing_order_no_scatter = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "node_name_map_name",
        section: Section::Misc,
        doc: &["Node name map for mapping node's to more descriptive node descriptions"],
        get: |o| fmt_opt_path(&o.node_name_map_name),
        set: |o, v| {
            o.node_name_map_name = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "sa_db_file",
        section: Section::Routing,
        doc: &["SA database file name"],
        get: |o| fmt_opt_path(&o.sa_db_file),
        set: |o, v| {
            o.sa_db_file = opt_path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "sa_db_dump",
        section: Section::Routing,
        doc: &[
            "If TRUE causes OpenSM to dump SA database at the end of",
            "every light sweep, regardless of the verbosity level",
        ],
        get: |o| fmt_bool(o.sa_db_dump),
        set: |o, v| {
            o.sa_db_dump = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "torus_config",
        section: Section::Routing,
        doc: &["Torus-2QoS configuration file name"],
        get: |o| o.torus_config.display().to_string(),
        set: |o, v| {
            o.torus_config =
                opt_path(v)?.ok_or_else(|| "a file name (torus-2QoS needs one)".to_string())?;
            Ok(())
        },
    },
    // ---------------- HANDOVER ----------------
    KeySpec {
        key: "sm_priority",
        section: Section::Handover,
        doc: &[
            "SM priority used for deciding who is the master",
            "Range goes from 0 (lowest priority) to 15 (highest).",
        ],
        get: |o| o.sm_priority.to_string(),
        set: |o, v| {
            o.sm_priority = u8_in(v, 0, 15)?;
            Ok(())
        },
    },
    KeySpec {
        key: "master_sm_priority",
        section: Section::Handover,
        doc: &[
            "SM priority advertised while this SM is master (0..15; ibsm and MLNX",
            "OpenSM, not upstream OpenSM). 0 means the same as sm_priority.",
            "15 stops a recovered SM from taking mastership back (no second heavy sweep)",
        ],
        get: |o| o.master_sm_priority.to_string(),
        set: |o, v| {
            o.master_sm_priority = u8_in(v, 0, 15)?;
            Ok(())
        },
    },
    KeySpec {
        key: "ignore_other_sm",
        section: Section::Handover,
        doc: &["If TRUE other SMs on the subnet should be ignored"],
        get: |o| fmt_bool(o.ignore_other_sm),
        set: |o, v| {
            o.ignore_other_sm = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "sminfo_polling_timeout",
        section: Section::Handover,
        doc: &["Timeout in [msec] between two polls of active master SM"],
        get: |o| o.sminfo_polling_timeout.to_string(),
        set: |o, v| {
            o.sminfo_polling_timeout = u32_in(v, 1, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "polling_retry_number",
        section: Section::Handover,
        doc: &["Number of failing polls of remote SM that declares it dead"],
        get: |o| o.polling_retry_number.to_string(),
        set: |o, v| {
            o.polling_retry_number = u32_in(v, 0, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "honor_guid2lid_file",
        section: Section::Handover,
        doc: &[
            "If TRUE honor the guid2lid file when coming out of standby",
            "state, if such file exists and is valid",
        ],
        get: |o| fmt_bool(o.honor_guid2lid_file),
        set: |o, v| {
            o.honor_guid2lid_file = boolean(v)?;
            Ok(())
        },
    },
    // ---------------- TIMING ----------------
    KeySpec {
        key: "max_wire_smps",
        section: Section::Timing,
        doc: &["Maximum number of SMPs sent in parallel (0: unlimited)"],
        get: |o| o.max_wire_smps.to_string(),
        set: |o, v| {
            o.max_wire_smps = u32_in(v, 0, 0x7fff_ffff)?;
            Ok(())
        },
    },
    KeySpec {
        key: "max_smps_per_node",
        section: Section::Timing,
        doc: &[
            "Maximum number of SMPs outstanding to one node at once (ibsm;",
            "protects slow agents within the max_wire_smps window)",
        ],
        get: |o| o.max_smps_per_node.to_string(),
        set: |o, v| {
            o.max_smps_per_node = u32_in(v, 1, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "retry_rounds",
        section: Section::Timing,
        doc: &[
            "Rounds of 1 + transaction_retries attempts before a request is given up",
            "(ibsm; 1 is OpenSM's behaviour). Each further round is queued behind",
            "the pending work, so a transient loss burst has passed.",
        ],
        get: |o| o.retry_rounds.to_string(),
        set: |o, v| {
            o.retry_rounds = u32_in(v, 1, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "fold_config_into_arm",
        section: Section::Timing,
        doc: &[
            "If TRUE each port's PortInfo configuration (LID, MTU, VLs...) travels in",
            "its Init->Armed Set instead of a separate Set before it (ibsm; fewer SMPs,",
            "but some ports are armed before others' configuration is acknowledged)",
        ],
        get: |o| fmt_bool(o.fold_config_into_arm),
        set: |o, v| {
            o.fold_config_into_arm = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "lid_routed",
        section: Section::Timing,
        doc: &[
            "If TRUE, once LIDs and LFTs are acknowledged the Armed/Active passes and",
            "light sweeps use LID-routed SMPs (forwarded in switch hardware, and a check",
            "of the LFTs) instead of directed route (ibsm)",
        ],
        get: |o| fmt_bool(o.lid_routed),
        set: |o, v| {
            o.lid_routed = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "transaction_timeout",
        section: Section::Timing,
        doc: &["The maximum time in [msec] allowed for a transaction to complete"],
        get: |o| o.transaction_timeout.to_string(),
        set: |o, v| {
            o.transaction_timeout = u32_in(v, 1, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "transaction_retries",
        section: Section::Timing,
        doc: &["The maximum number of retries allowed for a transaction to complete"],
        get: |o| o.transaction_retries.to_string(),
        set: |o, v| {
            o.transaction_retries = u32_in(v, 0, u32::MAX)?;
            Ok(())
        },
    },
    // ---------------- MISC ----------------
    KeySpec {
        key: "daemon",
        section: Section::Misc,
        doc: &["Daemon mode"],
        get: |o| fmt_bool(o.daemon),
        set: |o, v| {
            o.daemon = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "sm_inactive",
        section: Section::Misc,
        doc: &["SM Inactive"],
        get: |o| fmt_bool(o.sm_inactive),
        set: |o, v| {
            o.sm_inactive = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "babbling_port_policy",
        section: Section::Misc,
        doc: &["Babbling Port Policy"],
        get: |o| fmt_bool(o.babbling_port_policy),
        set: |o, v| {
            o.babbling_port_policy = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "ipoib_mcgroup_creation_validation",
        section: Section::Misc,
        doc: &[
            "Validate IPoIB non-broadcast group creation parameters against",
            "broadcast group parameters per IETF RFC 4391 (default TRUE)",
        ],
        get: |o| fmt_bool(o.ipoib_mcgroup_creation_validation),
        set: |o, v| {
            o.ipoib_mcgroup_creation_validation = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "mcgroup_join_validation",
        section: Section::Misc,
        doc: &[
            "Validate multicast join parameters against multicast group",
            "parameters when MC group already exists",
        ],
        get: |o| fmt_bool(o.mcgroup_join_validation),
        set: |o, v| {
            o.mcgroup_join_validation = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "drop_event_subscriptions",
        section: Section::Misc,
        doc: &[
            "Drop event subscriptions (InformInfo and ServiceRecord) on port removal and SM coming out of STANDBY",
        ],
        get: |o| fmt_bool(o.drop_event_subscriptions),
        set: |o, v| {
            o.drop_event_subscriptions = boolean(v)?;
            Ok(())
        },
    },
    // ---------------- PERFMGR ----------------
    KeySpec {
        key: "perfmgr",
        section: Section::PerfMgr,
        doc: &["PerfMgr is enabled if TRUE and disabled if FALSE (default FALSE)"],
        get: |o| fmt_bool(o.perfmgr),
        set: |o, v| {
            o.perfmgr = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "perfmgr_sweep_time_s",
        section: Section::PerfMgr,
        doc: &["sweep time in seconds (default 180 seconds)"],
        get: |o| o.perfmgr_sweep_time_s.to_string(),
        set: |o, v| {
            o.perfmgr_sweep_time_s = u32_in(v, 0, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "perfmgr_max_outstanding_queries",
        section: Section::PerfMgr,
        doc: &["Max outstanding queries (default 500)"],
        get: |o| o.perfmgr_max_outstanding_queries.to_string(),
        set: |o, v| {
            o.perfmgr_max_outstanding_queries = u32_in(v, 1, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "perfmgr_ignore_cas",
        section: Section::PerfMgr,
        doc: &["Ignore CAs on sweep (default FALSE)"],
        get: |o| fmt_bool(o.perfmgr_ignore_cas),
        set: |o, v| {
            o.perfmgr_ignore_cas = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "perfmgr_rm_nodes",
        section: Section::PerfMgr,
        doc: &["Remove missing nodes from DB (default TRUE)"],
        get: |o| fmt_bool(o.perfmgr_rm_nodes),
        set: |o, v| {
            o.perfmgr_rm_nodes = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "perfmgr_log_errors",
        section: Section::PerfMgr,
        doc: &["Log error counters to the log (default TRUE)"],
        get: |o| fmt_bool(o.perfmgr_log_errors),
        set: |o, v| {
            o.perfmgr_log_errors = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "perfmgr_query_cpi",
        section: Section::PerfMgr,
        doc: &["Query PerfMgt Get(ClassPortInfo) for extended capabilities (64 bit counters) (default TRUE)"],
        get: |o| fmt_bool(o.perfmgr_query_cpi),
        set: |o, v| {
            o.perfmgr_query_cpi = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "perfmgr_xmit_wait_log",
        section: Section::PerfMgr,
        doc: &["Log xmit_wait errors (default FALSE)"],
        get: |o| fmt_bool(o.perfmgr_xmit_wait_log),
        set: |o, v| {
            o.perfmgr_xmit_wait_log = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "perfmgr_xmit_wait_threshold",
        section: Section::PerfMgr,
        doc: &["If logging xmit_wait's; set threshold (default 65535)"],
        get: |o| o.perfmgr_xmit_wait_threshold.to_string(),
        set: |o, v| {
            o.perfmgr_xmit_wait_threshold = u32_in(v, 0, u32::MAX)?;
            Ok(())
        },
    },
    // ---------------- IPv6 SNM ----------------
    KeySpec {
        key: "consolidate_ipv6_snm_req",
        section: Section::Snm,
        doc: &[
            "IPv6 solicited-node multicast groups of one scope and P_Key",
            "share one MLID (saves an MLID per IPv6 port)",
        ],
        get: |o| fmt_bool(o.consolidate_ipv6_snm_req),
        set: |o, v| {
            o.consolidate_ipv6_snm_req = boolean(v)?;
            Ok(())
        },
    },
    // ---------------- DEBUG ----------------
    KeySpec {
        key: "log_flags",
        section: Section::Debug,
        doc: &[
            "The log flags used",
            "(0x01 ERROR, 0x02 INFO, 0x04 VERBOSE, 0x08 DEBUG, 0x10 FUNCS,",
            " 0x20 FRAMES, 0x40 ROUTING)",
        ],
        get: |o| format!("0x{:02x}", o.log_flags),
        set: |o, v| {
            o.log_flags = u8_in(v, 0, u8::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "force_log_flush",
        section: Section::Debug,
        doc: &["Force flush of the log file after each log message"],
        get: |o| fmt_bool(o.force_log_flush),
        set: |o, v| {
            o.force_log_flush = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "log_file",
        section: Section::Debug,
        doc: &["Log file to be used (stdout: standard output)"],
        get: |o| o.log_file.display().to_string(),
        set: |o, v| {
            o.log_file = path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "log_max_size",
        section: Section::Debug,
        doc: &["Limit the size of the log file in MB. If overrun, log is restarted"],
        get: |o| o.log_max_size.to_string(),
        set: |o, v| {
            o.log_max_size = u32_in(v, 0, u32::MAX)?;
            Ok(())
        },
    },
    KeySpec {
        key: "accum_log_file",
        section: Section::Debug,
        doc: &["If TRUE will accumulate the log over multiple OpenSM sessions"],
        get: |o| fmt_bool(o.accum_log_file),
        set: |o, v| {
            o.accum_log_file = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "dump_files_dir",
        section: Section::Debug,
        doc: &["The directory to hold the file OpenSM dumps"],
        get: |o| o.dump_files_dir.display().to_string(),
        set: |o, v| {
            o.dump_files_dir = path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "no_clients_rereg",
        section: Section::Debug,
        doc: &["If TRUE disables client reregistration"],
        get: |o| fmt_bool(o.no_clients_rereg),
        set: |o, v| {
            o.no_clients_rereg = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "suppress_sl2vl_mad_status_errors",
        section: Section::Qos,
        doc: &[
            "Suppress QoS MAD status errors",
        ],
        get: |o| fmt_bool(o.suppress_sl2vl_mad_status_errors),
        set: |o, v| {
            o.suppress_sl2vl_mad_status_errors = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "disable_multicast",
        section: Section::Debug,
        doc: &[
            "If TRUE OpenSM should disable multicast support and",
            "no multicast routing is performed if TRUE",
        ],
        get: |o| fmt_bool(o.disable_multicast),
        set: |o, v| {
            o.disable_multicast = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "exit_on_fatal",
        section: Section::Debug,
        doc: &["If TRUE opensm will exit on fatal initialization issues"],
        get: |o| fmt_bool(o.exit_on_fatal),
        set: |o, v| {
            o.exit_on_fatal = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "use_optimized_slvl",
        section: Section::Misc,
        doc: &[
            "Use Optimized SLtoVLMapping programming if supported by device",
            "(ibsm's default is TRUE: one SL-to-VL Set per switch instead of one per port pair)",
        ],
        get: |o| fmt_bool(o.use_optimized_slvl),
        set: |o, v| {
            o.use_optimized_slvl = boolean(v)?;
            Ok(())
        },
    },
    // ---------------- QoS ----------------
    KeySpec {
        key: "qos",
        section: Section::Qos,
        doc: &["Enable QoS setup"],
        get: |o| fmt_bool(o.qos),
        set: |o, v| {
            o.qos = boolean(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "qos_policy_file",
        section: Section::Qos,
        doc: &["QoS policy file to be used"],
        get: |o| o.qos_policy_file.display().to_string(),
        set: |o, v| {
            o.qos_policy_file = path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "read_qos_tables",
        section: Section::Qos,
        doc: &[
            "If TRUE, after SUBNET UP read the SL2VL and VLArbitration tables the SM does not",
            "program, so the SA serves what the ports hold (ibsm; OpenSM never reads them and",
            "serves zeros with qos off). A switch costs (NumPorts + 1)^2 SL2VL Gets once",
        ],
        get: |o| fmt_bool(o.read_qos_tables),
        set: |o, v| {
            o.read_qos_tables = boolean(v)?;
            Ok(())
        },
    },
    // ---------------- IBSM ----------------
    KeySpec {
        key: "cache_dir",
        section: Section::Ibsm,
        doc: &[
            "The directory holding guid2lid and other persistent state",
            "(OpenSM takes it from $OSM_CACHE_DIR only; ibsm also uses that as default)",
        ],
        get: |o| o.cache_dir.display().to_string(),
        set: |o, v| {
            o.cache_dir = path(v)?;
            Ok(())
        },
    },
    KeySpec {
        key: "transport",
        section: Section::Ibsm,
        doc: &["How to reach the fabric: umad (kernel umad device) or sim (simulator)"],
        get: |o| o.transport.name().to_string(),
        set: |o, v| {
            o.transport = match v {
                "umad" => Transport::Umad,
                "sim" => Transport::Sim,
                _ => return Err("umad or sim".to_string()),
            };
            Ok(())
        },
    },
    KeySpec {
        key: "ca_name",
        section: Section::Ibsm,
        doc: &["The HCA to bind, e.g. mlx5_0 ((null): the first one)"],
        get: |o| o.ca_name.clone().unwrap_or_else(|| "(null)".to_string()),
        set: |o, v| {
            o.ca_name = opt_path(v)?.map(|p| p.display().to_string());
            Ok(())
        },
    },
    KeySpec {
        key: "ca_port",
        section: Section::Ibsm,
        doc: &["The HCA port to bind (0: the first active port)"],
        get: |o| o.ca_port.to_string(),
        set: |o, v| {
            o.ca_port = u8_in(v, 0, 254)?;
            Ok(())
        },
    },
];

/// `qos_*_max_vls`: 1..=15, or 0 = not given.
fn qos_max_vls(v: &str) -> Result<Option<u8>, String> {
    u8_in(v, 0, 15)
        .map(|n| (n != 0).then_some(n))
        .map_err(|_| "0 (not given) or a VL count 1..=15".to_string())
}

/// `qos_*_high_limit`: 0..=255, or -1 = not given.
fn qos_high_limit(v: &str) -> Result<Option<u8>, String> {
    if v == "-1" {
        return Ok(None);
    }
    u8_in(v, 0, 255)
        .map(Some)
        .map_err(|_| "-1 (not given) or 0..=255".to_string())
}

/// A `qos_*` table value: `(null)` = not given, else it must parse with `check`.
fn qos_table<E: std::fmt::Display>(
    v: &str,
    check: fn(&str) -> Result<E, sm::qos::QosValueError>,
    what: &str,
) -> Result<Option<String>, String> {
    if v.is_empty() || v == "(null)" {
        return Ok(None);
    }
    check(v).map_err(|e| format!("{what}: {e}"))?;
    Ok(Some(v.to_string()))
}

fn vlarb_check(v: &str) -> Result<String, sm::qos::QosValueError> {
    sm::qos::parse_vlarb(v).map(|_| String::new())
}

fn sl2vl_check(v: &str) -> Result<String, sm::qos::QosValueError> {
    sm::qos::parse_sl2vl(v).map(|_| String::new())
}

fn fmt_qos_u8(v: Option<u8>, unset: &str) -> String {
    v.map_or_else(|| unset.to_string(), |n| n.to_string())
}

fn fmt_qos_text(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(null)".to_string())
}

/// The five `qos_<prefix>{max_vls,high_limit,vlarb_high,vlarb_low,sl2vl}` keys of set `$i`
/// of [`Options::qos_sets`].
macro_rules! qos_set_keys {
    ($i:literal, $doc:literal, $max_vls:literal, $high_limit:literal, $vlarb_high:literal,
     $vlarb_low:literal, $sl2vl:literal) => {
        [
            KeySpec {
                key: $max_vls,
                section: Section::Qos,
                doc: &[$doc, "Maximal VLs (0: not given)"],
                get: |o| fmt_qos_u8(o.qos_sets[$i].max_vls, "0"),
                set: |o, v| {
                    o.qos_sets[$i].max_vls = qos_max_vls(v)?;
                    Ok(())
                },
            },
            KeySpec {
                key: $high_limit,
                section: Section::Qos,
                doc: &["PortInfo:VLHighLimit (-1: not given)"],
                get: |o| fmt_qos_u8(o.qos_sets[$i].high_limit, "-1"),
                set: |o, v| {
                    o.qos_sets[$i].high_limit = qos_high_limit(v)?;
                    Ok(())
                },
            },
            KeySpec {
                key: $vlarb_high,
                section: Section::Qos,
                doc: &["High-priority VL arbitration table, VL:weight,... ((null): not given)"],
                get: |o| fmt_qos_text(&o.qos_sets[$i].vlarb_high),
                set: |o, v| {
                    o.qos_sets[$i].vlarb_high =
                        qos_table(v, vlarb_check, "up to 64 VL:weight entries")?;
                    Ok(())
                },
            },
            KeySpec {
                key: $vlarb_low,
                section: Section::Qos,
                doc: &["Low-priority VL arbitration table, VL:weight,... ((null): not given)"],
                get: |o| fmt_qos_text(&o.qos_sets[$i].vlarb_low),
                set: |o, v| {
                    o.qos_sets[$i].vlarb_low =
                        qos_table(v, vlarb_check, "up to 64 VL:weight entries")?;
                    Ok(())
                },
            },
            KeySpec {
                key: $sl2vl,
                section: Section::Qos,
                doc: &["SL-to-VL mapping, 16 VLs for SL0..15 ((null): not given)"],
                get: |o| fmt_qos_text(&o.qos_sets[$i].sl2vl),
                set: |o, v| {
                    o.qos_sets[$i].sl2vl = qos_table(v, sl2vl_check, "16 VLs, one per SL")?;
                    Ok(())
                },
            },
        ]
    };
}

/// The QoS keys (OpenSM's `QoS OPTIONS` section, in its order).
static QOS_KEYS: [[KeySpec; 5]; 5] = [
    qos_set_keys!(
        0,
        "QoS default options",
        "qos_max_vls",
        "qos_high_limit",
        "qos_vlarb_high",
        "qos_vlarb_low",
        "qos_sl2vl"
    ),
    qos_set_keys!(
        1,
        "QoS CA options",
        "qos_ca_max_vls",
        "qos_ca_high_limit",
        "qos_ca_vlarb_high",
        "qos_ca_vlarb_low",
        "qos_ca_sl2vl"
    ),
    qos_set_keys!(
        3,
        "QoS Switch Port 0 options",
        "qos_sw0_max_vls",
        "qos_sw0_high_limit",
        "qos_sw0_vlarb_high",
        "qos_sw0_vlarb_low",
        "qos_sw0_sl2vl"
    ),
    qos_set_keys!(
        4,
        "QoS Switch external ports options",
        "qos_swe_max_vls",
        "qos_swe_high_limit",
        "qos_swe_vlarb_high",
        "qos_swe_vlarb_low",
        "qos_swe_sl2vl"
    ),
    qos_set_keys!(
        2,
        "QoS Router ports options",
        "qos_rtr_max_vls",
        "qos_rtr_high_limit",
        "qos_rtr_vlarb_high",
        "qos_rtr_vlarb_low",
        "qos_rtr_sl2vl"
    ),
];

/// Every key ibsm implements, in `-c` order: [`KEYS`] with the QoS keys after `qos` and
/// `qos_policy_file`.
pub(crate) fn all_keys() -> impl Iterator<Item = &'static KeySpec> {
    let qos_at = KEYS
        .iter()
        .position(|k| k.key == "qos_policy_file")
        .map_or(KEYS.len(), |i| i + 1);
    KEYS[..qos_at]
        .iter()
        .chain(QOS_KEYS.iter().flatten())
        .chain(KEYS[qos_at..].iter())
}

/// Finds a key's entry.
pub(crate) fn spec(key: &str) -> Option<&'static KeySpec> {
    // OpenSM parses its old name into the same option (and writes only the new one).
    let key = if key == "dimn_ports_file" {
        "port_search_ordering_file"
    } else {
        key
    };
    all_keys().find(|k| k.key == key)
}

/// Keys of [`KEYS`] that ibsm reads and writes but does not act on yet: a value other than
/// the default draws a warning ([`Options::not_implemented_warnings`]) and `-c` marks them.
///
/// [`Options::not_implemented_warnings`]: super::Options::not_implemented_warnings
pub(crate) static NOT_IMPLEMENTED: &[&str] = &["max_reverse_hops"];

/// Every key OpenSM 3.3.23 accepts in its config file (the keys of `opensm -c`, plus
/// `max_rate_enum` and `dimn_ports_file`, which it parses but does not write). Keys not in
/// [`KEYS`] are reported as "not implemented" rather than "unknown".
pub(crate) static OPENSM_KEYS: &[&str] = &[
    "guid",
    "m_key",
    "m_key_lease_period",
    "m_key_protection_level",
    "m_key_lookup",
    "sm_key",
    "sa_key",
    "subnet_prefix",
    "lmc",
    "lmc_esp0",
    "sm_sl",
    "packet_life_time",
    "vl_stall_count",
    "leaf_vl_stall_count",
    "head_of_queue_lifetime",
    "leaf_head_of_queue_lifetime",
    "max_op_vls",
    "force_link_speed",
    "force_link_speed_ext",
    "force_link_width",
    "fdr10",
    "subnet_timeout",
    "local_phy_errors_threshold",
    "overrun_errors_threshold",
    "use_mfttop",
    "partition_config_file",
    "no_partition_enforcement",
    "part_enforce",
    "allow_both_pkeys",
    "keep_pkey_indexes",
    "sm_assigned_guid",
    "sweep_interval",
    "reassign_lids",
    "force_heavy_sweep",
    "sweep_on_trap",
    "port_profile_switch_nodes",
    "port_prof_ignore_file",
    "hop_weights_file",
    "port_search_ordering_file",
    "routing_engine",
    "avoid_throttled_links",
    "connect_roots",
    "use_ucast_cache",
    "lid_matrix_dump_file",
    "lfts_file",
    "root_guid_file",
    "cn_guid_file",
    "io_guid_file",
    "quasi_ftree_indexing",
    "max_reverse_hops",
    "ids_guid_file",
    "guid_routing_order_file",
    "do_mesh_analysis",
    "lash_start_vl",
    "nue_max_num_vls",
    "nue_include_switches",
    "port_shifting",
    "scatter_ports",
    "guid_routing_order_no_scatter",
    "sa_db_file",
    "sa_db_dump",
    "torus_config",
    "sm_priority",
    "ignore_other_sm",
    "sminfo_polling_timeout",
    "polling_retry_number",
    "honor_guid2lid_file",
    "max_wire_smps",
    "max_wire_smps2",
    "max_smps_timeout",
    "transaction_timeout",
    "transaction_retries",
    "long_transaction_timeout",
    "max_msg_fifo_timeout",
    "single_thread",
    "daemon",
    "sm_inactive",
    "babbling_port_policy",
    "drop_event_subscriptions",
    "ipoib_mcgroup_creation_validation",
    "mcgroup_join_validation",
    "use_original_extended_sa_rates_only",
    "use_optimized_slvl",
    "fsync_high_avail_files",
    "perfmgr",
    "perfmgr_redir",
    "perfmgr_sweep_time_s",
    "perfmgr_max_outstanding_queries",
    "perfmgr_ignore_cas",
    "perfmgr_rm_nodes",
    "perfmgr_log_errors",
    "perfmgr_query_cpi",
    "perfmgr_xmit_wait_log",
    "perfmgr_xmit_wait_threshold",
    "event_db_dump_file",
    "event_plugin_name",
    "event_plugin_options",
    "node_name_map_name",
    "log_flags",
    "force_log_flush",
    "log_file",
    "log_max_size",
    "accum_log_file",
    "per_module_logging_file",
    "dump_files_dir",
    "enable_quirks",
    "no_clients_rereg",
    "disable_multicast",
    "exit_on_fatal",
    "console",
    "console_port",
    "qos",
    "qos_policy_file",
    "suppress_sl2vl_mad_status_errors",
    "qos_max_vls",
    "qos_high_limit",
    "qos_vlarb_high",
    "qos_vlarb_low",
    "qos_sl2vl",
    "qos_ca_max_vls",
    "qos_ca_high_limit",
    "qos_ca_vlarb_high",
    "qos_ca_vlarb_low",
    "qos_ca_sl2vl",
    "qos_sw0_max_vls",
    "qos_sw0_high_limit",
    "qos_sw0_vlarb_high",
    "qos_sw0_vlarb_low",
    "qos_sw0_sl2vl",
    "qos_swe_max_vls",
    "qos_swe_high_limit",
    "qos_swe_vlarb_high",
    "qos_swe_vlarb_low",
    "qos_swe_sl2vl",
    "qos_rtr_max_vls",
    "qos_rtr_high_limit",
    "qos_rtr_vlarb_high",
    "qos_rtr_vlarb_low",
    "qos_rtr_sl2vl",
    "congestion_control",
    "cc_key",
    "cc_max_outstanding_mads",
    "cc_sw_cong_setting_control_map",
    "cc_sw_cong_setting_victim_mask",
    "cc_sw_cong_setting_credit_mask",
    "cc_sw_cong_setting_threshold",
    "cc_sw_cong_setting_packet_size",
    "cc_sw_cong_setting_credit_starvation_threshold",
    "cc_sw_cong_setting_credit_starvation_return_delay",
    "cc_sw_cong_setting_marking_rate",
    "cc_ca_cong_setting_port_control",
    "cc_ca_cong_setting_control_map",
    "cc_ca_cong_setting_ccti_timer",
    "cc_ca_cong_setting_ccti_increase",
    "cc_ca_cong_setting_trigger_threshold",
    "cc_ca_cong_setting_ccti_min",
    "cc_cct",
    "prefix_routes_file",
    "consolidate_ipv6_snm_req",
    "log_prefix",
    "max_rate_enum",
    "dimn_ports_file",
];

/// `opensm -c` output of stock OpenSM 3.3.23 (the same file the tests compare against).
static OPENSM_DEFAULT_CONF: &str = include_str!("../../testdata/opensm-default.conf");

/// OpenSM's default value for `key`, as written by `opensm -c`.
pub(crate) fn opensm_default(key: &str) -> Option<&'static str> {
    OPENSM_DEFAULT_CONF
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then_some(v.trim())
        })
}

/// Levenshtein distance, for "did you mean" hints.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            let del = prev[j + 1] + 1;
            let ins = cur[j] + 1;
            cur.push(sub.min(del).min(ins));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest candidate within a small distance (a third of the word's length, at least 1).
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

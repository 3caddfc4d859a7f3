//! Quality of service: the port-level QoS configuration (opensm.conf `qos`, `qos_*`), the
//! SL-to-VL / VLArbitration / VLHighLimit programming it and the routing engine ask for
//! ([`program`]), and the QoS policy file (`qos-policy.conf`, [`policy`]) the SA consults for
//! PathRecord SL, MTU, rate and packet lifetime.
//!
//! # Port classes (OpenSM `osm_qos.c`)
//!
//! Each port takes its parameters from one of four classes, each of which falls back per
//! field to the default set (`qos_max_vls`, `qos_high_limit`, `qos_vlarb_high`,
//! `qos_vlarb_low`, `qos_sl2vl`) and then to OpenSM's built-in values:
//! - `qos_ca_*`: CA ports;
//! - `qos_rtr_*`: router ports;
//! - `qos_swe_*`: switch external ports (1..=NumPorts), whose SL-to-VL tables are per
//!   (input, output) pair;
//! - `qos_sw0_*`: switch port 0, only on switches with an enhanced port 0 (a base port 0 has
//!   no VLs).
//!
//! Built-in values (`osm_base.h`): `max_vls 15`, `high_limit 0`,
//! `vlarb_high 0:4,1:0,2:0,…,14:0`, `vlarb_low 0:0,1:4,2:4,…,14:4`,
//! `sl2vl 0,1,2,…,14,7`.

pub mod policy;
pub mod program;

use core::fmt;

use ibmad::attr::{SlToVl, VlArbEntryRepr};
use thiserror::Error;

use crate::routing::vl::{sl2vl_from, NUM_SLS, VLARB_ENTRIES};

/// OpenSM's `OSM_DEFAULT_QOS_MAX_VLS`.
pub const DEFAULT_MAX_VLS: u8 = 15;
/// OpenSM's `OSM_DEFAULT_QOS_HIGH_LIMIT`.
pub const DEFAULT_HIGH_LIMIT: u8 = 0;
/// OpenSM's `OSM_DEFAULT_QOS_VLARB_HIGH`.
pub const DEFAULT_VLARB_HIGH: &str =
    "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0";
/// OpenSM's `OSM_DEFAULT_QOS_VLARB_LOW`.
pub const DEFAULT_VLARB_LOW: &str =
    "0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4";
/// OpenSM's `OSM_DEFAULT_QOS_SL2VL`.
pub const DEFAULT_SL2VL: &str = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7";

/// A `qos_*` value that does not parse.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum QosValueError {
    /// An entry is not `VL:weight`.
    #[error("entry {index} '{entry}' is not VL:weight")]
    NotPair {
        /// 1-based entry number.
        index: usize,
        /// The text.
        entry: String,
    },
    /// A number does not parse.
    #[error("entry {index}: '{text}' is not a number")]
    NotNumber {
        /// 1-based entry number.
        index: usize,
        /// The text.
        text: String,
    },
    /// A number outside its range.
    #[error("entry {index}: {what} {value} is outside {range}")]
    OutOfRange {
        /// 1-based entry number.
        index: usize,
        /// `VL` or `weight`.
        what: &'static str,
        /// The value.
        value: u64,
        /// The legal range.
        range: &'static str,
    },
    /// The wrong number of entries.
    #[error("{got} entries; {want}")]
    Count {
        /// Entries given.
        got: usize,
        /// What is expected.
        want: &'static str,
    },
}

fn number(index: usize, t: &str) -> Result<u64, QosValueError> {
    let t = t.trim();
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8)
    } else {
        t.parse()
    };
    r.map_err(|_| QosValueError::NotNumber {
        index,
        text: t.to_string(),
    })
}

fn entries(s: &str) -> impl Iterator<Item = (usize, &str)> {
    s.split([',', '\n'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .enumerate()
        .map(|(i, t)| (i + 1, t))
}

/// A VLArbitration table of one priority: up to 64 `VL:weight` entries (VL 0..=14, weight
/// 0..=255, numbers decimal, `0x` hex or `0` octal as OpenSM's `strtol`); entries not given
/// are `0:0`. Stricter than OpenSM, which only warns: a malformed or out-of-range entry or more
/// than 64 entries is an error.
///
/// # Errors
/// The first bad entry.
pub fn parse_vlarb(s: &str) -> Result<[VlArbEntryRepr; VLARB_ENTRIES], QosValueError> {
    let mut out = [VlArbEntryRepr::default(); VLARB_ENTRIES];
    let got = entries(s).count();
    if got > VLARB_ENTRIES {
        return Err(QosValueError::Count {
            got,
            want: "at most 64 VL:weight pairs",
        });
    }
    for (index, tok) in entries(s) {
        let Some((vl, w)) = tok.split_once(':') else {
            return Err(QosValueError::NotPair {
                index,
                entry: tok.to_string(),
            });
        };
        let vl = number(index, vl)?;
        if vl > 14 {
            return Err(QosValueError::OutOfRange {
                index,
                what: "VL",
                value: vl,
                range: "0..=14",
            });
        }
        let w = number(index, w)?;
        if w > 255 {
            return Err(QosValueError::OutOfRange {
                index,
                what: "weight",
                value: w,
                range: "0..=255",
            });
        }
        out[index - 1] = VlArbEntryRepr {
            vl: vl as u8,
            weight: w as u8,
        };
    }
    Ok(out)
}

/// An SL-to-VL table: exactly 16 VLs (0..=15; 15 means "drop this SL"), SL 0 first.
///
/// # Errors
/// A malformed or out-of-range VL, or not 16 of them (OpenSM warns and pads with VL 0).
pub fn parse_sl2vl(s: &str) -> Result<SlToVl, QosValueError> {
    let mut v = [0u8; NUM_SLS];
    let got = entries(s).count();
    if got != NUM_SLS {
        return Err(QosValueError::Count {
            got,
            want: "exactly 16 VLs, SL 0 first",
        });
    }
    for (index, tok) in entries(s) {
        let vl = number(index, tok)?;
        if vl > 15 {
            return Err(QosValueError::OutOfRange {
                index,
                what: "VL",
                value: vl,
                range: "0..=15",
            });
        }
        v[index - 1] = vl as u8;
    }
    Ok(sl2vl_from(v))
}

/// One option set as configured (`qos_<prefix>_*`); `None` = not given (OpenSM prints
/// `max_vls 0`, `high_limit -1` and `(null)` for those).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QosOptions {
    /// `max_vls`, 1..=15.
    pub max_vls: Option<u8>,
    /// `high_limit`, 0..=255 (PortInfo.VLHighLimit, in 4 KiB units; 255 = unlimited).
    pub high_limit: Option<u8>,
    /// `vlarb_high`.
    pub vlarb_high: Option<[VlArbEntryRepr; VLARB_ENTRIES]>,
    /// `vlarb_low`.
    pub vlarb_low: Option<[VlArbEntryRepr; VLARB_ENTRIES]>,
    /// `sl2vl`.
    pub sl2vl: Option<SlToVl>,
}

/// The parameters a port of one class gets (OpenSM `struct qos_config`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QosClass {
    /// `max_vls` (parsed and kept as OpenSM does; OpenSM's programming does not use it).
    pub max_vls: u8,
    /// PortInfo.VLHighLimit.
    pub high_limit: u8,
    /// High-priority VLArbitration entries.
    pub vlarb_high: [VlArbEntryRepr; VLARB_ENTRIES],
    /// Low-priority VLArbitration entries.
    pub vlarb_low: [VlArbEntryRepr; VLARB_ENTRIES],
    /// SL-to-VL table.
    pub sl2vl: SlToVl,
}

/// Built-in defaults, parsed once.
fn builtin() -> QosClass {
    QosClass {
        max_vls: DEFAULT_MAX_VLS,
        high_limit: DEFAULT_HIGH_LIMIT,
        vlarb_high: parse_vlarb(DEFAULT_VLARB_HIGH).unwrap_or([VlArbEntryRepr::default(); 64]),
        vlarb_low: parse_vlarb(DEFAULT_VLARB_LOW).unwrap_or([VlArbEntryRepr::default(); 64]),
        sl2vl: parse_sl2vl(DEFAULT_SL2VL).unwrap_or_default(),
    }
}

impl QosClass {
    /// `opt`, falling back per field to `dflt`, then to the built-in values
    /// (`qos_build_config`).
    #[must_use]
    pub fn build(opt: &QosOptions, dflt: &QosOptions) -> QosClass {
        let b = builtin();
        QosClass {
            max_vls: opt.max_vls.or(dflt.max_vls).unwrap_or(b.max_vls),
            high_limit: opt.high_limit.or(dflt.high_limit).unwrap_or(b.high_limit),
            vlarb_high: opt.vlarb_high.or(dflt.vlarb_high).unwrap_or(b.vlarb_high),
            vlarb_low: opt.vlarb_low.or(dflt.vlarb_low).unwrap_or(b.vlarb_low),
            sl2vl: opt.sl2vl.or(dflt.sl2vl).unwrap_or(b.sl2vl),
        }
    }
}

/// Which class a port belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortClass {
    /// A CA port.
    Ca,
    /// A router port.
    Router,
    /// Switch port 0 (enhanced).
    SwitchPort0,
    /// A switch external port.
    SwitchExternal,
}

impl fmt::Display for PortClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortClass::Ca => "qos_ca",
            PortClass::Router => "qos_rtr",
            PortClass::SwitchPort0 => "qos_sw0",
            PortClass::SwitchExternal => "qos_swe",
        })
    }
}

/// The QoS configuration of the SM. `Default` is OpenSM's: QoS off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QosConfig {
    /// `qos` / `-Q`: program SL-to-VL, VLArbitration and VLHighLimit from the classes below
    /// (default false). Tables a routing engine decides are programmed either way
    /// ([`crate::routing::vl`]).
    pub enabled: bool,
    /// `qos_*`: the default set.
    pub default: QosOptions,
    /// `qos_ca_*`.
    pub ca: QosOptions,
    /// `qos_rtr_*`.
    pub rtr: QosOptions,
    /// `qos_sw0_*`.
    pub sw0: QosOptions,
    /// `qos_swe_*`.
    pub swe: QosOptions,
    /// `use_optimized_slvl`: where a switch reports SwitchInfo.OptimizedSLtoVLMappingProgramming,
    /// write its SL-to-VL tables with the all-inputs / all-outputs AttributeModifier forms (one
    /// SMP for the whole switch plus one per output port whose OperationalVLs differ) instead
    /// of one SMP per (input, output) pair. **Default true**, unlike OpenSM (FALSE): the form is
    /// the IBA's, the switch advertises it, and at k36 it is 1 SMP instead of 1,332 per switch.
    /// Set it FALSE for OpenSM's per-pair form.
    pub use_optimized_slvl: bool,
    /// The parsed QoS policy file (`qos_policy_file`, `-Y`), if one was read.
    pub policy: Option<policy::QosPolicy>,
    /// `read_qos_tables` (*ibsm*): after a heavy sweep brought the subnet up, read every
    /// SL-to-VL and VLArbitration table the SM does not program and does not know yet, so
    /// that the SA serves what the ports hold (`osmtest -f q`, `saquery SL2VL`/`VLAR`). Default
    /// true. OpenSM never reads them: its SA serves the tables it last wrote, all zero with
    /// `qos` off. The reads follow SUBNET UP (they do not delay it) and are not repeated for
    /// tables already known; on a switch they are one Get per (input, output) port pair,
    /// (NumPorts + 1)² per switch — see docs/benchmarks.md for the cost.
    pub read_tables: bool,
}

impl Default for QosConfig {
    fn default() -> QosConfig {
        QosConfig {
            enabled: false,
            default: QosOptions::default(),
            ca: QosOptions::default(),
            rtr: QosOptions::default(),
            sw0: QosOptions::default(),
            swe: QosOptions::default(),
            use_optimized_slvl: true,
            policy: None,
            read_tables: true,
        }
    }
}

impl QosConfig {
    /// The options of one class.
    #[must_use]
    pub fn options(&self, c: PortClass) -> &QosOptions {
        match c {
            PortClass::Ca => &self.ca,
            PortClass::Router => &self.rtr,
            PortClass::SwitchPort0 => &self.sw0,
            PortClass::SwitchExternal => &self.swe,
        }
    }

    /// The resolved parameters of one class.
    #[must_use]
    pub fn class(&self, c: PortClass) -> QosClass {
        QosClass::build(self.options(c), &self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_defaults_are_opensms() {
        let b = builtin();
        assert_eq!(b.max_vls, 15);
        assert_eq!(b.high_limit, 0);
        assert_eq!(b.vlarb_high[0], VlArbEntryRepr { vl: 0, weight: 4 });
        assert_eq!(b.vlarb_high[1], VlArbEntryRepr { vl: 1, weight: 0 });
        assert_eq!(b.vlarb_low[0], VlArbEntryRepr { vl: 0, weight: 0 });
        assert_eq!(b.vlarb_low[14], VlArbEntryRepr { vl: 14, weight: 4 });
        assert_eq!(
            b.vlarb_low[15],
            VlArbEntryRepr::default(),
            "past the list: 0:0"
        );
        assert_eq!(b.sl2vl.vl(14), Some(14));
        assert_eq!(b.sl2vl.vl(15), Some(7));
    }

    #[test]
    fn class_falls_back_per_field() {
        let cfg = QosConfig {
            default: QosOptions {
                high_limit: Some(9),
                sl2vl: Some(parse_sl2vl("1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1").unwrap()),
                ..QosOptions::default()
            },
            ca: QosOptions {
                high_limit: Some(255),
                ..QosOptions::default()
            },
            ..QosConfig::default()
        };
        let ca = cfg.class(PortClass::Ca);
        assert_eq!(ca.high_limit, 255, "the class's own value");
        assert_eq!(ca.sl2vl.vl(0), Some(1), "the default set's");
        assert_eq!(ca.max_vls, 15, "built in");
        assert_eq!(cfg.class(PortClass::SwitchExternal).high_limit, 9);
    }

    #[test]
    fn vlarb_parsing() {
        let t = parse_vlarb("0:64, 1:0x10,2:010\n3:255").unwrap();
        assert_eq!(t[0].weight, 64);
        assert_eq!(t[1].weight, 16, "hex");
        assert_eq!(t[2].weight, 8, "octal, as strtol base 0");
        assert_eq!(t[3], VlArbEntryRepr { vl: 3, weight: 255 });
        assert_eq!(
            parse_vlarb("0:4,15:1").unwrap_err(),
            QosValueError::OutOfRange {
                index: 2,
                what: "VL",
                value: 15,
                range: "0..=14"
            }
        );
        assert!(matches!(
            parse_vlarb("0:4,1-2"),
            Err(QosValueError::NotPair { index: 2, .. })
        ));
        assert!(matches!(
            parse_vlarb("0:256"),
            Err(QosValueError::OutOfRange { what: "weight", .. })
        ));
        assert!(matches!(
            parse_vlarb("x:1"),
            Err(QosValueError::NotNumber { index: 1, .. })
        ));
        let many: Vec<String> = (0..65).map(|i| format!("{}:1", i % 15)).collect();
        assert!(matches!(
            parse_vlarb(&many.join(",")),
            Err(QosValueError::Count { got: 65, .. })
        ));
    }

    #[test]
    fn sl2vl_parsing() {
        let t = parse_sl2vl("0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,15").unwrap();
        assert_eq!(t.vl(15), Some(15), "VL 15 = drop is allowed");
        assert!(matches!(
            parse_sl2vl("0,1,2"),
            Err(QosValueError::Count { got: 3, .. })
        ));
        assert!(matches!(
            parse_sl2vl("0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,16"),
            Err(QosValueError::OutOfRange { index: 16, .. })
        ));
        let e = parse_sl2vl("0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,z").unwrap_err();
        assert_eq!(e.to_string(), "entry 16: 'z' is not a number");
    }
}

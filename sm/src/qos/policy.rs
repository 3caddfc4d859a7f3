//! The QoS policy file (`qos-policy.conf`, opensm `-Y` / `qos_policy_file`) in OpenSM's syntax
//! (OpenSM `doc/QoS_management_in_OpenSM.txt`), and the sans-IO model the SA asks "which SL,
//! MTU, rate and packet lifetime for this path" ([`QosPolicy::level_for`]).
//!
//! # File
//!
//! Sections, each optional, in any order:
//! - `port-groups` … `end-port-groups`: `port-group` blocks with `name:`, `use:`,
//!   `port-guid:` (GUIDs and `a-b` ranges), `port-name:` (`NodeDescription/Pnum`), `pkey:`
//!   (ranges), `partition:` (names) and `node-type:` (`CA`, `SWITCH`, `ROUTER`, `ALL`,
//!   `SELF`);
//! - `qos-setup` … `end-qos-setup`: parsed and ignored, as OpenSM does (SL-to-VL and VLArb
//!   come from the `qos_*` options);
//! - `qos-levels`: `qos-level` blocks with `name:`, `use:`, `sl:` (mandatory), `mtu-limit:`
//!   (1..=5), `rate-limit:` (2..=24), `packet-life:`, `path-bits:`, `pkey:`; a level named
//!   `DEFAULT` is mandatory unless `qos-ulps` gives `default : SL`;
//! - `qos-match-rules`: `qos-match-rule` blocks with `use:`, `source:`, `destination:` (port
//!   group names), `qos-class:`, `service-id:`, `pkey:` (ranges) and `qos-level-name:`;
//! - `qos-ulps`: one rule a line, `<ulp>[, <criterion> <values>] : <SL>` with `default`,
//!   `sdp[, port-num …]`, `rds[, port-num …]`, `iser[, port-num …]`, `srp, target-port-guid …`,
//!   `ipoib[, pkey …]`, `any, service-id | pkey | target-port-guid | source-port-guid |
//!   source-target-port-guid …`.
//!
//! `#` starts a comment; blank lines and indentation do not matter; numbers are decimal or
//! `0x` hex. Every error names `file:line` ([`PolicyError`]).
//!
//! # Matching ([`QosPolicy::level_for`])
//!
//! The rules of `qos-match-rules` in file order, then the `qos-ulps` rules in file order; the
//! first rule whose every criterion matches gives the level; none matching gives `DEFAULT`
//! (or the `qos-ulps` default SL). A rule with `qos-class`, `service-id` or `pkey` matches only
//! a query that carries that field (the PathRecord component mask) with a value in range;
//! P_Keys are compared without the membership bit. A rule with source groups needs the source
//! port in one of them, with destination groups the destination port.
//!
//! Differences from OpenSM 3.3.23, deliberate: `any, source-target-port-guid` matches when the
//! source **or** the destination is listed, as the documentation says (OpenSM's parser puts the
//! group in both lists, which requires both); port groups by P_Key or partition name are
//! resolved at query time through [`PartitionView`] instead of at parse time.

use core::fmt;

use ibmad::sa_rec::path::rate_order;
use ibmad::{Guid, NodeType};

/// A `qos-policy.conf` error, with the place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    /// The file name as given to [`QosPolicy::parse`].
    pub file: String,
    /// 1-based line (0: the whole file).
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.msg)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.msg)
        }
    }
}

impl std::error::Error for PolicyError {}

/// Inclusive ranges of numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges(pub Vec<(u64, u64)>);

impl Ranges {
    /// True if `v` is in one of the ranges.
    #[must_use]
    pub fn contains(&self, v: u64) -> bool {
        self.0.iter().any(|&(a, b)| a <= v && v <= b)
    }
    /// True if there are no ranges.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Node types a port group selects (`node-type:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeTypes {
    /// `CA`.
    pub ca: bool,
    /// `SWITCH`.
    pub switch: bool,
    /// `ROUTER`.
    pub router: bool,
    /// `SELF`: the SM's own port.
    pub self_port: bool,
}

/// A `port-group`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortGroup {
    /// `name:`.
    pub name: String,
    /// `use:`.
    pub use_: Option<String>,
    /// `port-guid:` ranges.
    pub guids: Ranges,
    /// `port-name:` entries, (NodeDescription, port number).
    pub port_names: Vec<(String, u8)>,
    /// `pkey:` ranges (membership bit dropped).
    pub pkeys: Ranges,
    /// `partition:` names.
    pub partitions: Vec<String>,
    /// `node-type:`.
    pub node_types: NodeTypes,
    /// Line of `port-group`.
    pub line: usize,
}

/// A `qos-level`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QosLevel {
    /// `name:`.
    pub name: String,
    /// `use:`.
    pub use_: Option<String>,
    /// `sl:`.
    pub sl: u8,
    /// `mtu-limit:` (IBA MTU code 1..=5: 256..4096 bytes).
    pub mtu_limit: Option<u8>,
    /// `rate-limit:` (IBA rate code 2..=24).
    pub rate_limit: Option<u8>,
    /// `packet-life:` (PathRecord PacketLifeTime code).
    pub packet_life: Option<u8>,
    /// `path-bits:` ranges.
    pub path_bits: Ranges,
    /// `pkey:` ranges.
    pub pkeys: Ranges,
}

/// One match rule (from `qos-match-rules` or generated from a `qos-ulps` line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchRule {
    /// `use:` (for qos-ulps rules, the line's text).
    pub use_: Option<String>,
    /// Source port groups (indices into [`QosPolicy::port_groups`]).
    pub source: Vec<usize>,
    /// Destination port groups.
    pub destination: Vec<usize>,
    /// Groups of which either the source or the destination must be a member
    /// (`source-target-port-guid`).
    pub either: Vec<usize>,
    /// `qos-class:` ranges.
    pub qos_class: Ranges,
    /// `service-id:` ranges.
    pub service_id: Ranges,
    /// `pkey:` ranges (membership bit dropped).
    pub pkey: Ranges,
    /// The level (index into [`QosPolicy::levels`]).
    pub level: usize,
    /// Line of the rule.
    pub line: usize,
}

/// A port as the policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyPort<'a> {
    /// PortGUID.
    pub guid: Guid,
    /// The node's NodeDescription.
    pub node_desc: &'a str,
    /// Port number.
    pub port_num: u8,
    /// Node type.
    pub node_type: NodeType,
    /// This is the SM's own port.
    pub is_sm: bool,
}

/// What the policy needs to know about partitions (the partition manager, issue 13, answers;
/// [`NoPartitions`] knows none).
pub trait PartitionView {
    /// True if the port with `guid` is a member of the partition whose P_Key (without the
    /// membership bit) is `pkey`.
    fn is_member(&self, guid: Guid, pkey: u16) -> bool;
    /// The P_Key (without the membership bit) of the partition called `name`.
    fn pkey_of(&self, name: &str) -> Option<u16>;
}

/// No partitions configured: port groups by P_Key or partition name are empty.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPartitions;

impl PartitionView for NoPartitions {
    fn is_member(&self, _: Guid, _: u16) -> bool {
        false
    }
    fn pkey_of(&self, _: &str) -> Option<u16> {
        None
    }
}

/// The fields of a PathRecord / MultiPathRecord query the rules look at; `None` = the query's
/// component mask does not carry the field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathQuery {
    /// ServiceID.
    pub service_id: Option<u64>,
    /// QoSClass.
    pub qos_class: Option<u16>,
    /// P_Key.
    pub pkey: Option<u16>,
}

/// The parsed policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QosPolicy {
    /// Port groups, in file order (then those `qos-ulps` generated).
    pub port_groups: Vec<PortGroup>,
    /// QoS levels, in file order (then those `qos-ulps` generated).
    pub levels: Vec<QosLevel>,
    /// Match rules: `qos-match-rules` in order, then `qos-ulps` in order.
    pub rules: Vec<MatchRule>,
    /// The level applied when no rule matches (index into [`QosPolicy::levels`]).
    pub default_index: usize,
}

/// OpenSM's Service ID bases for the `qos-ulps` shortcuts.
pub mod service_ids {
    /// SDP: `0x000000000001PPPP`.
    pub const SDP: u64 = 0x0000_0000_0001_0000;
    /// RDS and iSER: `0x000000000106PPPP`.
    pub const RDS_ISER: u64 = 0x0000_0000_0106_0000;
    /// RDS's default port.
    pub const RDS_PORT: u64 = 0x48CA;
    /// iSER's default port.
    pub const ISER_PORT: u64 = 0x0CBC;
    /// IPoIB's default partition P_Key.
    pub const IPOIB_PKEY: u64 = 0x7FFF;
}

struct Parser<'a> {
    file: &'a str,
    policy: QosPolicy,
    /// Rules from qos-match-rules with their level and group names unresolved.
    rules: Vec<(MatchRule, String, Vec<String>, Vec<String>)>,
    ulp_rules: Vec<MatchRule>,
    ulp_default: Option<u8>,
}

fn strip_comment(l: &str) -> &str {
    l.split_once('#').map_or(l, |(a, _)| a).trim()
}

impl Parser<'_> {
    fn err(&self, line: usize, msg: impl Into<String>) -> PolicyError {
        PolicyError {
            file: self.file.to_string(),
            line,
            msg: msg.into(),
        }
    }

    fn number(&self, line: usize, t: &str) -> Result<u64, PolicyError> {
        let t = t.trim();
        let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16),
            None => t.parse(),
        };
        r.map_err(|_| self.err(line, format!("'{t}' is not a number")))
    }

    fn ranges(&self, line: usize, v: &str) -> Result<Ranges, PolicyError> {
        let mut out = Vec::new();
        for item in v.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(self.err(line, "empty entry in a list of numbers"));
            }
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (self.number(line, a)?, self.number(line, b)?),
                None => {
                    let n = self.number(line, item)?;
                    (n, n)
                }
            };
            if a > b {
                return Err(self.err(line, format!("range '{item}' runs backwards")));
            }
            out.push((a, b));
        }
        Ok(Ranges(out))
    }

    fn pkey_ranges(&self, line: usize, v: &str) -> Result<Ranges, PolicyError> {
        let r = self.ranges(line, v)?;
        for &(a, b) in &r.0 {
            if b > 0xFFFF || a > 0xFFFF {
                return Err(self.err(line, format!("P_Key 0x{b:x} is beyond 16 bits")));
            }
        }
        // The membership bit does not take part in matching.
        Ok(Ranges(
            r.0.into_iter()
                .map(|(a, b)| {
                    if a >> 15 != b >> 15 {
                        (0, 0x7FFF)
                    } else {
                        (a & 0x7FFF, b & 0x7FFF)
                    }
                })
                .collect(),
        ))
    }

    fn small(&self, line: usize, what: &str, v: &str, lo: u64, hi: u64) -> Result<u8, PolicyError> {
        let n = self.number(line, v)?;
        if n < lo || n > hi {
            return Err(self.err(line, format!("{what} {n} is out of range ({lo}..={hi})")));
        }
        Ok(n as u8)
    }

    fn parse(&mut self, text: &str) -> Result<(), PolicyError> {
        #[derive(PartialEq, Clone, Copy)]
        enum Sec {
            Top,
            Groups,
            Group,
            Setup,
            Levels,
            Level,
            Rules,
            Rule,
            Ulps,
        }
        let mut sec = Sec::Top;
        let mut sec_line = 0;
        let mut group = PortGroup::default();
        let mut level = QosLevel::default();
        let mut level_sl: Option<u8> = None;
        let mut rule = MatchRule::default();
        let mut rule_level: Option<String> = None;
        let mut rule_src: Vec<String> = Vec::new();
        let mut rule_dst: Vec<String> = Vec::new();
        let mut setup_depth = 0usize;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let l = strip_comment(raw);
            if l.is_empty() {
                continue;
            }
            let (key, val) = match l.split_once(':') {
                Some((k, v)) if sec != Sec::Ulps => (k.trim(), Some(v.trim())),
                _ => (l, None),
            };
            let once = |set: bool, what: &str| -> Result<(), PolicyError> {
                if set {
                    Err(self.err(line, format!("more than one '{what}'")))
                } else {
                    Ok(())
                }
            };
            match (sec, key, val) {
                (Sec::Setup, k, _) => {
                    // Parsed and ignored (OpenSM does the same); nested blocks must balance.
                    if k == "end-qos-setup" && setup_depth == 0 {
                        sec = Sec::Top;
                    } else if k.starts_with("end-") {
                        setup_depth = setup_depth.saturating_sub(1);
                    } else if val.is_none()
                        && matches!(k, "vlarb-tables" | "vlarb-scope" | "sl2vl-tables" | "sl2vl-scope")
                    {
                        setup_depth += 1;
                    }
                }
                (Sec::Top, "port-groups", None) => sec = Sec::Groups,
                (Sec::Top, "qos-setup", None) => {
                    sec = Sec::Setup;
                    setup_depth = 0;
                }
                (Sec::Top, "qos-levels", None) => sec = Sec::Levels,
                (Sec::Top, "qos-match-rules", None) => sec = Sec::Rules,
                (Sec::Top, "qos-ulps", None) => sec = Sec::Ulps,
                (Sec::Groups, "end-port-groups", None) => sec = Sec::Top,
                (Sec::Groups, "port-group", None) => {
                    sec = Sec::Group;
                    sec_line = line;
                    group = PortGroup {
                        line,
                        ..PortGroup::default()
                    };
                }
                (Sec::Group, "end-port-group", None) => {
                    if group.name.is_empty() {
                        return Err(self.err(sec_line, "port-group has no 'name'"));
                    }
                    if self.policy.port_groups.iter().any(|g| g.name == group.name) {
                        return Err(self.err(
                            sec_line,
                            format!("port-group '{}' is defined twice", group.name),
                        ));
                    }
                    self.policy.port_groups.push(std::mem::take(&mut group));
                    sec = Sec::Groups;
                }
                (Sec::Group, "name", Some(v)) => {
                    once(!group.name.is_empty(), "name")?;
                    group.name = unquote(v).to_string();
                }
                (Sec::Group, "use", Some(v)) => {
                    once(group.use_.is_some(), "use")?;
                    group.use_ = Some(v.to_string());
                }
                (Sec::Group, "port-guid", Some(v)) => {
                    let r = self.ranges(line, v)?;
                    group.guids.0.extend(r.0);
                }
                (Sec::Group, "port-name", Some(v)) => {
                    for item in v.split(',').map(|s| unquote(s.trim())) {
                        let Some((desc, p)) = item.rsplit_once('/') else {
                            return Err(self.err(line, format!("'{item}' - illegal port name (want NodeDescription/Pnum)")));
                        };
                        let num = p
                            .strip_prefix(['p', 'P'])
                            .and_then(|n| self.number(line, n).ok())
                            .filter(|&n| (1..=254).contains(&n));
                        let Some(num) = num else {
                            return Err(self.err(line, format!("'{item}' - illegal port number in port name")));
                        };
                        group.port_names.push((desc.to_string(), num as u8));
                    }
                }
                (Sec::Group, "pkey", Some(v)) => {
                    let r = self.pkey_ranges(line, v)?;
                    group.pkeys.0.extend(r.0);
                }
                (Sec::Group, "partition", Some(v)) => {
                    group
                        .partitions
                        .extend(v.split(',').map(|s| unquote(s.trim()).to_string()));
                }
                (Sec::Group, "node-type", Some(v)) => {
                    for t in v.split(',').map(str::trim) {
                        match t.to_ascii_uppercase().as_str() {
                            "CA" => group.node_types.ca = true,
                            "SWITCH" => group.node_types.switch = true,
                            "ROUTER" => group.node_types.router = true,
                            "SELF" => group.node_types.self_port = true,
                            "ALL" => {
                                group.node_types.ca = true;
                                group.node_types.switch = true;
                                group.node_types.router = true;
                            }
                            _ => {
                                return Err(self.err(
                                    line,
                                    format!("'{t}' is no node type (CA, SWITCH, ROUTER, ALL, SELF)"),
                                ))
                            }
                        }
                    }
                }
                (Sec::Levels, "end-qos-levels", None) => sec = Sec::Top,
                (Sec::Levels, "qos-level", None) => {
                    sec = Sec::Level;
                    sec_line = line;
                    level = QosLevel::default();
                    level_sl = None;
                }
                (Sec::Level, "end-qos-level", None) => {
                    if level.name.is_empty() {
                        return Err(self.err(sec_line, "qos-level has no 'name'"));
                    }
                    let Some(sl) = level_sl else {
                        return Err(self.err(sec_line, format!("qos-level '{}' has no 'sl'", level.name)));
                    };
                    if self.policy.levels.iter().any(|x| x.name == level.name) {
                        return Err(self.err(
                            sec_line,
                            format!("qos-level '{}' is defined twice", level.name),
                        ));
                    }
                    level.sl = sl;
                    self.policy.levels.push(std::mem::take(&mut level));
                    sec = Sec::Levels;
                }
                (Sec::Level, "name", Some(v)) => {
                    once(!level.name.is_empty(), "name")?;
                    level.name = unquote(v).to_string();
                }
                (Sec::Level, "use", Some(v)) => {
                    once(level.use_.is_some(), "use")?;
                    level.use_ = Some(v.to_string());
                }
                (Sec::Level, "sl", Some(v)) => {
                    once(level_sl.is_some(), "sl")?;
                    level_sl = Some(self.small(line, "SL", v, 0, 15)?);
                }
                (Sec::Level, "mtu-limit", Some(v)) => {
                    once(level.mtu_limit.is_some(), "mtu-limit")?;
                    level.mtu_limit = Some(self.small(line, "mtu limit", v, 1, 5)?);
                }
                (Sec::Level, "rate-limit", Some(v)) => {
                    once(level.rate_limit.is_some(), "rate-limit")?;
                    level.rate_limit = Some(self.small(line, "rate limit", v, 2, 24)?);
                }
                (Sec::Level, "packet-life", Some(v)) => {
                    once(level.packet_life.is_some(), "packet-life")?;
                    level.packet_life = Some(self.small(line, "packet life", v, 0, 63)?);
                }
                (Sec::Level, "path-bits", Some(v)) => {
                    let r = self.ranges(line, v)?;
                    level.path_bits.0.extend(r.0);
                }
                (Sec::Level, "pkey", Some(v)) => {
                    let r = self.pkey_ranges(line, v)?;
                    level.pkeys.0.extend(r.0);
                }
                (Sec::Rules, "end-qos-match-rules", None) => sec = Sec::Top,
                (Sec::Rules, "qos-match-rule", None) => {
                    sec = Sec::Rule;
                    sec_line = line;
                    rule = MatchRule {
                        line,
                        ..MatchRule::default()
                    };
                    rule_level = None;
                    rule_src.clear();
                    rule_dst.clear();
                }
                (Sec::Rule, "end-qos-match-rule", None) => {
                    let Some(name) = rule_level.take() else {
                        return Err(self.err(sec_line, "qos-match-rule has no 'qos-level-name'"));
                    };
                    self.rules.push((
                        std::mem::take(&mut rule),
                        name,
                        std::mem::take(&mut rule_src),
                        std::mem::take(&mut rule_dst),
                    ));
                    sec = Sec::Rules;
                }
                (Sec::Rule, "use", Some(v)) => {
                    once(rule.use_.is_some(), "use")?;
                    rule.use_ = Some(v.to_string());
                }
                (Sec::Rule, "source", Some(v)) => {
                    rule_src.extend(v.split(',').map(|s| unquote(s.trim()).to_string()));
                }
                (Sec::Rule, "destination", Some(v)) => {
                    rule_dst.extend(v.split(',').map(|s| unquote(s.trim()).to_string()));
                }
                (Sec::Rule, "qos-class", Some(v)) => {
                    let r = self.ranges(line, v)?;
                    rule.qos_class.0.extend(r.0);
                }
                (Sec::Rule, "service-id", Some(v)) => {
                    let r = self.ranges(line, v)?;
                    rule.service_id.0.extend(r.0);
                }
                (Sec::Rule, "pkey", Some(v)) => {
                    let r = self.pkey_ranges(line, v)?;
                    rule.pkey.0.extend(r.0);
                }
                (Sec::Rule, "qos-level-name", Some(v)) => {
                    once(rule_level.is_some(), "qos-level-name")?;
                    rule_level = Some(unquote(v).to_string());
                }
                (Sec::Ulps, "end-qos-ulps", None) => sec = Sec::Top,
                (Sec::Ulps, _, _) => self.ulp_line(line, l)?,
                (Sec::Top, k, _) => {
                    return Err(self.err(
                        line,
                        format!("'{k}' outside a section (port-groups, qos-setup, qos-levels, qos-match-rules, qos-ulps)"),
                    ))
                }
                (_, k, None) => {
                    return Err(self.err(line, format!("unexpected '{k}' here")));
                }
                (_, k, Some(_)) => {
                    return Err(self.err(line, format!("unknown keyword '{k}' here")));
                }
            }
        }
        if sec != Sec::Top {
            return Err(self.err(0, "file ends inside a section (missing end-...)"));
        }
        Ok(())
    }

    /// One `qos-ulps` line.
    fn ulp_line(&mut self, line: usize, l: &str) -> Result<(), PolicyError> {
        let Some((lhs, sl)) = l.rsplit_once(':') else {
            return Err(self.err(
                line,
                format!("'{l}' - a qos-ulps rule is '<ulp>[, <criterion> <values>] : <SL>'"),
            ));
        };
        let sl = self.small(line, "SL", sl, 0, 15)?;
        let (ulp, crit) = match lhs.split_once(',') {
            Some((u, c)) => (u.trim().to_ascii_lowercase(), Some(c.trim())),
            None => (lhs.trim().to_ascii_lowercase(), None),
        };
        let (ckey, cval) = match crit {
            Some(c) => match c.split_once([' ', '\t']) {
                Some((k, v)) => (Some(k.trim()), Some(v.trim())),
                None => (Some(c), None),
            },
            None => (None, None),
        };
        if ulp == "default" && crit.is_none() {
            if self.ulp_default.is_some() {
                return Err(self.err(line, "more than one 'default' rule"));
            }
            self.ulp_default = Some(sl);
            return Ok(());
        }
        let need = |what: &str| -> Result<&str, PolicyError> {
            cval.filter(|v| !v.is_empty())
                .ok_or_else(|| self.err(line, format!("'{l}' - {what} has no values")))
        };
        let mut rule = MatchRule {
            use_: Some(l.to_string()),
            line,
            ..MatchRule::default()
        };
        let guid_group = |p: &mut Self, name: &str, v: &str| -> Result<usize, PolicyError> {
            let guids = p.ranges(line, v)?;
            p.policy.port_groups.push(PortGroup {
                name: name.to_string(),
                use_: Some("Generated from ULP rules".to_string()),
                guids,
                line,
                ..PortGroup::default()
            });
            Ok(p.policy.port_groups.len() - 1)
        };
        let ports = |p: &Self, base: u64, v: &str| -> Result<Ranges, PolicyError> {
            let r = p.ranges(line, v)?;
            if r.0.iter().any(|&(_, b)| b > 0xFFFF) {
                return Err(p.err(line, "TCP/IP port number out of range (0..=65535)"));
            }
            Ok(Ranges(
                r.0.into_iter().map(|(a, b)| (base + a, base + b)).collect(),
            ))
        };
        use service_ids::*;
        match (ulp.as_str(), ckey) {
            ("sdp", None) => rule.service_id = Ranges(vec![(SDP, SDP + 0xFFFF)]),
            ("sdp", Some("port-num")) => rule.service_id = ports(self, SDP, need("port-num")?)?,
            ("rds", None) => {
                rule.service_id = Ranges(vec![(RDS_ISER + RDS_PORT, RDS_ISER + RDS_PORT)])
            }
            ("rds", Some("port-num")) => {
                rule.service_id = ports(self, RDS_ISER, need("port-num")?)?;
            }
            ("iser", None) => {
                rule.service_id = Ranges(vec![(RDS_ISER + ISER_PORT, RDS_ISER + ISER_PORT)]);
            }
            ("iser", Some("port-num")) => {
                rule.service_id = ports(self, RDS_ISER, need("port-num")?)?;
            }
            ("srp", Some("target-port-guid")) => {
                let v = need("target-port-guid")?;
                rule.destination = vec![guid_group(self, "_SRP_Targets_", v)?];
            }
            ("ipoib", None) => rule.pkey = Ranges(vec![(IPOIB_PKEY, IPOIB_PKEY)]),
            ("ipoib", Some("pkey")) => rule.pkey = self.pkey_ranges(line, need("pkey")?)?,
            ("any", Some("service-id")) => {
                rule.service_id = self.ranges(line, need("service-id")?)?;
            }
            ("any", Some("pkey")) => rule.pkey = self.pkey_ranges(line, need("pkey")?)?,
            ("any", Some("target-port-guid")) => {
                let v = need("target-port-guid")?;
                rule.destination = vec![guid_group(self, "_ULP_Targets_", v)?];
            }
            ("any", Some("source-port-guid")) => {
                let v = need("source-port-guid")?;
                rule.source = vec![guid_group(self, "_ULP_Sources_", v)?];
            }
            ("any", Some("source-target-port-guid")) => {
                let v = need("source-target-port-guid")?;
                rule.either = vec![guid_group(self, "_ULP_Sources_Targets_", v)?];
            }
            _ => {
                return Err(self.err(
                    line,
                    format!(
                        "'{}' - unknown qos-ulps rule (default, sdp, rds, iser, srp, ipoib, any)",
                        lhs.trim()
                    ),
                ))
            }
        }
        // One generated level per SL, shared by the ULP rules.
        let name = format!("_ULP_SL_{sl}_");
        let level = match self.policy.levels.iter().position(|x| x.name == name) {
            Some(i) => i,
            None => {
                self.policy.levels.push(QosLevel {
                    name,
                    use_: Some("Generated from ULP rules".to_string()),
                    sl,
                    ..QosLevel::default()
                });
                self.policy.levels.len() - 1
            }
        };
        rule.level = level;
        self.ulp_rules.push(rule);
        Ok(())
    }

    fn finish(mut self) -> Result<QosPolicy, PolicyError> {
        let group = |p: &Self, names: &[String], what: &str, line: usize| {
            names
                .iter()
                .map(|n| {
                    p.policy
                        .port_groups
                        .iter()
                        .position(|g| &g.name == n)
                        .ok_or_else(|| p.err(line, format!("{what} port-group '{n}' not found")))
                })
                .collect::<Result<Vec<usize>, PolicyError>>()
        };
        let mut rules = Vec::new();
        for (mut r, level, src, dst) in std::mem::take(&mut self.rules) {
            r.level = self
                .policy
                .levels
                .iter()
                .position(|x| x.name == level)
                .ok_or_else(|| self.err(r.line, format!("qos-level '{level}' not found")))?;
            r.source = group(&self, &src, "source", r.line)?;
            r.destination = group(&self, &dst, "destination", r.line)?;
            rules.push(r);
        }
        rules.append(&mut self.ulp_rules);
        self.policy.rules = rules;
        self.policy.default_index = match self.policy.levels.iter().position(|x| x.name == "DEFAULT") {
            Some(i) => i,
            None => match self.ulp_default {
                Some(sl) => {
                    self.policy.levels.push(QosLevel {
                        name: "_ULP_DEFAULT_".to_string(),
                        use_: Some("default from qos-ulps".to_string()),
                        sl,
                        ..QosLevel::default()
                    });
                    self.policy.levels.len() - 1
                }
                None => {
                    return Err(self.err(
                        0,
                        "no qos-level named DEFAULT and no 'default : <SL>' in qos-ulps (OpenSM ERR AC10)",
                    ))
                }
            },
        };
        Ok(self.policy)
    }
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(s)
}

impl QosPolicy {
    /// Parses a policy file; `file` names it in errors.
    ///
    /// # Errors
    /// The first problem, with `file:line`.
    pub fn parse(text: &str, file: &str) -> Result<QosPolicy, PolicyError> {
        let mut p = Parser {
            file,
            policy: <QosPolicy as Default>::default(),
            rules: Vec::new(),
            ulp_rules: Vec::new(),
            ulp_default: None,
        };
        p.parse(text)?;
        p.finish()
    }

    /// True if `port` belongs to port group `g`.
    #[must_use]
    pub fn in_group(&self, g: usize, port: &PolicyPort<'_>, parts: &dyn PartitionView) -> bool {
        let Some(g) = self.port_groups.get(g) else {
            return false;
        };
        let t = g.node_types;
        let by_type = match port.node_type {
            NodeType::CA => t.ca,
            NodeType::SWITCH => t.switch,
            NodeType::ROUTER => t.router,
            _ => false,
        };
        by_type
            || (t.self_port && port.is_sm)
            || g.guids.contains(port.guid.0)
            || g.port_names
                .iter()
                .any(|(d, p)| *p == port.port_num && d == port.node_desc)
            || g.pkeys
                .0
                .iter()
                .any(|&(a, b)| (a..=b).any(|k| parts.is_member(port.guid, k as u16)))
            || g.partitions.iter().any(|name| {
                parts
                    .pkey_of(name)
                    .is_some_and(|k| parts.is_member(port.guid, k & 0x7FFF))
            })
    }

    fn in_any(
        &self,
        gs: &[usize],
        port: Option<&PolicyPort<'_>>,
        parts: &dyn PartitionView,
    ) -> bool {
        port.is_some_and(|p| gs.iter().any(|&g| self.in_group(g, p, parts)))
    }

    /// The first rule (index into [`QosPolicy::rules`]) a query matches, `None` if none.
    /// `src` / `dst` are `None` where the query has no such port (a multicast group).
    #[must_use]
    pub fn matching_rule(
        &self,
        src: Option<&PolicyPort<'_>>,
        dst: Option<&PolicyPort<'_>>,
        q: &PathQuery,
        parts: &dyn PartitionView,
    ) -> Option<usize> {
        self.rules.iter().position(|r| {
            (r.source.is_empty() || self.in_any(&r.source, src, parts))
                && (r.destination.is_empty() || self.in_any(&r.destination, dst, parts))
                && (r.either.is_empty()
                    || self.in_any(&r.either, src, parts)
                    || self.in_any(&r.either, dst, parts))
                && (r.qos_class.is_empty()
                    || q.qos_class
                        .is_some_and(|c| r.qos_class.contains(u64::from(c))))
                && (r.service_id.is_empty()
                    || q.service_id.is_some_and(|s| r.service_id.contains(s)))
                && (r.pkey.is_empty()
                    || q.pkey
                        .is_some_and(|k| r.pkey.contains(u64::from(k & 0x7FFF))))
        })
    }

    /// The QoS level for a path query: the first matching rule's, else the default level
    /// (see the module docs). This is what the SA applies to a PathRecord or MultiPathRecord:
    /// the level's SL, and its MTU, rate and packet-lifetime limits ([`QosLevel::limit`]).
    #[must_use]
    pub fn level_for(
        &self,
        src: &PolicyPort<'_>,
        dst: &PolicyPort<'_>,
        q: &PathQuery,
        parts: &dyn PartitionView,
    ) -> &QosLevel {
        self.matching_rule(Some(src), Some(dst), q, parts)
            .and_then(|r| self.levels.get(self.rules[r].level))
            .unwrap_or_else(|| self.default_level())
    }

    /// The QoS level of the IPoIB multicast group of partition `pkey`: the query carries only
    /// the P_Key, so only rules without port groups can match.
    #[must_use]
    pub fn level_for_group(&self, pkey: u16, parts: &dyn PartitionView) -> &QosLevel {
        let q = PathQuery {
            pkey: Some(pkey),
            ..PathQuery::default()
        };
        self.matching_rule(None, None, &q, parts)
            .and_then(|r| self.levels.get(self.rules[r].level))
            .unwrap_or_else(|| self.default_level())
    }

    /// The level applied when no rule matches.
    #[must_use]
    pub fn default_level(&self) -> &QosLevel {
        static NONE: QosLevel = QosLevel {
            name: String::new(),
            use_: None,
            sl: 0,
            mtu_limit: None,
            rate_limit: None,
            packet_life: None,
            path_bits: Ranges(Vec::new()),
            pkeys: Ranges(Vec::new()),
        };
        self.levels.get(self.default_index).unwrap_or(&NONE)
    }
}

/// What a path may offer, as the SA computed it before the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathParams {
    /// SL.
    pub sl: u8,
    /// MTU code.
    pub mtu: u8,
    /// Rate code.
    pub rate: u8,
    /// PacketLifeTime code.
    pub packet_life: u8,
}

impl QosLevel {
    /// `p` constrained by this level (OpenSM `osm_sa_path_record.c`): the level's SL, MTU and
    /// rate capped at its limits, its packet lifetime if it sets one.
    #[must_use]
    pub fn limit(&self, p: PathParams) -> PathParams {
        let mut out = p;
        out.sl = self.sl;
        if let Some(m) = self.mtu_limit {
            out.mtu = out.mtu.min(m);
        }
        // OpenSM `ib_path_compare_rates`: rates compare by their rank, not by their nominal
        // Gb/s (30 Gb/s ranks below 25, 60 below 50, 120 below 100).
        if let Some(r) = self.rate_limit {
            if rate_order(p.rate).unwrap_or(0) > rate_order(r).unwrap_or(0) {
                out.rate = r;
            }
        }
        if let Some(l) = self.packet_life {
            out.packet_life = l;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The full example of OpenSM's doc/QoS_management_in_OpenSM.txt §2 (the example text
    /// below follows it), plus a qos-ulps section.
    const FULL: &str = "
# comment
port-groups
    port-group # using port GUIDs
        name: Storage
        use: SRP Targets
        port-guid: 0x10000000000001, 0x10000000000005-0x1000000000FFFA
        port-guid: 0x1000000000FFFF
    end-port-group
    port-group
        name: Virtual Servers
        port-name: vs1 HCA-1/P1, vs2 HCA-1/P1
    end-port-group
    port-group
        name: Partitions
        partition: Part1
        pkey: 0x1234
    end-port-group
    port-group
        name: CAs and SM
        node-type: CA, SELF
    end-port-group
end-port-groups

qos-setup
    vlarb-tables
        vlarb-scope
            group: Storage
            vlarb-high: 0:255,1:127
        end-vlarb-scope
    end-vlarb-tables
end-qos-setup

qos-levels
    qos-level
        name: DEFAULT
        use: default QoS Level
        sl: 0
    end-qos-level
    qos-level
        name: WholeSet
        sl: 1
        mtu-limit: 4
        rate-limit: 5
        pkey: 0x1234
        packet-life: 8
    end-qos-level
end-qos-levels

qos-match-rules
    qos-match-rule
        use: by QoS class
        qos-class: 7-9,11
        qos-level-name: WholeSet
    end-qos-match-rule
    qos-match-rule
        use: Storage targets
        destination: Storage
        service-id: 0x10000000000001, 0x10000000000008-0x10000000000FFF
        qos-level-name: WholeSet
    end-qos-match-rule
end-qos-match-rules

qos-ulps
    default                       : 3
    sdp, port-num 30000           : 4
    sdp                           : 5
    rds                           : 6
    iser                          : 7
    ipoib, pkey 0x8001            : 8
    ipoib                         : 9
    srp, target-port-guid 0x1234  : 10
    any, source-target-port-guid 0x9abcd : 11
end-qos-ulps
";

    fn port(guid: u64, desc: &str) -> PolicyPort<'_> {
        PolicyPort {
            guid: Guid(guid),
            node_desc: desc,
            port_num: 1,
            node_type: NodeType::CA,
            is_sm: false,
        }
    }

    #[test]
    fn the_documented_example_parses_and_matches() {
        let p = QosPolicy::parse(FULL, "qos-policy.conf").unwrap();
        assert_eq!(p.port_groups[1].port_names[0], ("vs1 HCA-1".to_string(), 1));
        let np = NoPartitions;
        let a = port(0x1, "a");
        let storage = port(0x10000000000006, "s");
        let sl = |src: &PolicyPort<'_>, dst: &PolicyPort<'_>, q: PathQuery| {
            p.level_for(src, dst, &q, &np).sl
        };
        // No criterion matches: DEFAULT (the full level wins over the qos-ulps default).
        assert_eq!(sl(&a, &a, PathQuery::default()), 0);
        // QoS class 8 is in 7-9.
        let q = PathQuery {
            qos_class: Some(8),
            ..PathQuery::default()
        };
        assert_eq!(sl(&a, &a, q), 1);
        // A rule with a criterion does not match a query without the field.
        let sid = |s| PathQuery {
            service_id: Some(s),
            ..PathQuery::default()
        };
        assert_eq!(
            sl(&a, &storage, sid(0x10000000000009)),
            1,
            "destination in Storage"
        );
        assert_eq!(sl(&storage, &a, sid(0x10000000000009)), 0, "source is not");
        // qos-ulps rules come after the full rules, in file order.
        assert_eq!(sl(&a, &a, sid(0x10000 + 30000)), 4);
        assert_eq!(sl(&a, &a, sid(0x10000 + 5)), 5);
        assert_eq!(sl(&a, &a, sid(0x10648CA)), 6, "RDS default service id");
        assert_eq!(sl(&a, &a, sid(0x1060CBC)), 7, "iSER default service id");
        let pk = |k| PathQuery {
            pkey: Some(k),
            ..PathQuery::default()
        };
        assert_eq!(sl(&a, &a, pk(0x0001)), 8, "membership bit ignored");
        assert_eq!(sl(&a, &a, pk(0xFFFF)), 9, "IPoIB default partition");
        assert_eq!(p.level_for_group(0x7FFF, &np).sl, 9);
        let srp = port(0x1234, "t");
        assert_eq!(sl(&a, &srp, PathQuery::default()), 10);
        let either = port(0x9abcd, "e");
        assert_eq!(
            sl(&either, &a, PathQuery::default()),
            11,
            "source or target"
        );
        assert_eq!(sl(&a, &either, PathQuery::default()), 11);
        let lvl = &p.levels[1];
        let lim = lvl.limit(PathParams {
            sl: 0,
            mtu: 5,
            rate: 7,
            packet_life: 18,
        });
        assert_eq!((lim.sl, lim.mtu, lim.rate, lim.packet_life), (1, 4, 5, 8));
        let slow = lvl.limit(PathParams {
            sl: 0,
            mtu: 2,
            rate: 2,
            packet_life: 18,
        });
        assert_eq!((slow.mtu, slow.rate), (2, 2), "limits only cap");
    }

    #[test]
    fn groups_by_name_type_self_and_partition() {
        let p = QosPolicy::parse(FULL, "f").unwrap();
        struct Parts;
        impl PartitionView for Parts {
            fn is_member(&self, g: Guid, k: u16) -> bool {
                g.0 == 7 && k == 0x1234
            }
            fn pkey_of(&self, _: &str) -> Option<u16> {
                None
            }
        }
        let vs = PolicyPort {
            node_desc: "vs2 HCA-1",
            ..port(5, "")
        };
        assert!(p.in_group(1, &vs, &NoPartitions));
        assert!(!p.in_group(1, &PolicyPort { port_num: 2, ..vs }, &NoPartitions));
        assert!(p.in_group(2, &port(7, ""), &Parts), "by P_Key");
        assert!(!p.in_group(2, &port(8, ""), &Parts));
        let sw = PolicyPort {
            node_type: NodeType::SWITCH,
            ..port(9, "")
        };
        assert!(!p.in_group(3, &sw, &NoPartitions));
        assert!(
            p.in_group(3, &PolicyPort { is_sm: true, ..sw }, &NoPartitions),
            "SELF"
        );
    }

    #[test]
    fn shortest_files() {
        let a = QosPolicy::parse(
            "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 2\n end-qos-level\nend-qos-levels\n",
            "f",
        )
        .unwrap();
        assert_eq!(a.default_level().sl, 2);
        let b = QosPolicy::parse("qos-ulps\n default : 5 # SL\nend-qos-ulps\n", "f").unwrap();
        assert_eq!(b.default_level().sl, 5);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = |t: &str| {
            QosPolicy::parse(t, "qos-policy.conf")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("qos-ulps\n default : 0\n sdp : 16\nend-qos-ulps\n"),
            "qos-policy.conf:3: SL 16 is out of range (0..=15)"
        );
        assert_eq!(
            e("qos-levels\n qos-level\n  name: X\n  sl: 1\n end-qos-level\nend-qos-levels\n"),
            "qos-policy.conf: no qos-level named DEFAULT and no 'default : <SL>' in qos-ulps (OpenSM ERR AC10)"
        );
        assert_eq!(
            e("qos-levels\n qos-level\n  name: DEFAULT\n  sl: 1\n end-qos-level\nend-qos-levels\nqos-match-rules\n qos-match-rule\n  destination: Nope\n  qos-level-name: DEFAULT\n end-qos-match-rule\nend-qos-match-rules\n"),
            "qos-policy.conf:8: destination port-group 'Nope' not found"
        );
        assert_eq!(
            e("qos-levels\n qos-level\n  name: DEFAULT\n  sl: 1\n  mtu-limit: 6\n"),
            "qos-policy.conf:5: mtu limit 6 is out of range (1..=5)"
        );
        assert_eq!(
            e("port-groups\n port-group\n  name: A\n  colour: red\n"),
            "qos-policy.conf:4: unknown keyword 'colour' here"
        );
        assert_eq!(
            e("port-groups\n port-group\n  name: A\n  port-name: hca/1\n"),
            "qos-policy.conf:4: 'hca/1' - illegal port number in port name"
        );
        assert_eq!(
            e("qos-ulps\n default : 0\n nfs : 1\nend-qos-ulps\n"),
            "qos-policy.conf:3: 'nfs' - unknown qos-ulps rule (default, sdp, rds, iser, srp, ipoib, any)"
        );
        assert_eq!(
            e("qos-levels\n qos-level\n  name: DEFAULT\n end-qos-level\nend-qos-levels\n"),
            "qos-policy.conf:2: qos-level 'DEFAULT' has no 'sl'"
        );
        assert_eq!(
            e("qos-levels\n"),
            "qos-policy.conf: file ends inside a section (missing end-...)"
        );
        assert_eq!(
            e("sl: 1\n"),
            "qos-policy.conf:1: 'sl' outside a section (port-groups, qos-setup, qos-levels, qos-match-rules, qos-ulps)"
        );
        assert_eq!(
            e("qos-ulps\n default : 0\n any, pkey 0x10-0x2 : 1\nend-qos-ulps\n"),
            "qos-policy.conf:3: range '0x10-0x2' runs backwards"
        );
    }

    /// A rate-limit caps the rate as OpenSM's `ib_path_compare_rates` orders rates: 40 Gb/s
    /// (code 7) is capped at 10 Gb/s (3), 5 Gb/s (5) stays; 30 Gb/s (4) ranks below 25 Gb/s
    /// (15), so a 25 Gb/s limit leaves it.
    #[test]
    fn rate_limit_caps_by_opensm_rate_rank() {
        let level = QosLevel {
            rate_limit: Some(3),
            ..QosLevel::default()
        };
        let p = PathParams {
            sl: 0,
            mtu: 4,
            rate: 7,
            packet_life: 0,
        };
        assert_eq!(level.limit(p).rate, 3, "40 Gb/s capped at 10 Gb/s");
        assert_eq!(
            level.limit(PathParams { rate: 5, ..p }).rate,
            5,
            "5 Gb/s kept under 10"
        );
        let level = QosLevel {
            rate_limit: Some(15),
            ..QosLevel::default()
        };
        assert_eq!(
            level.limit(PathParams { rate: 4, ..p }).rate,
            4,
            "30 Gb/s ranks below 25"
        );
        assert_eq!(
            level.limit(PathParams { rate: 16, ..p }).rate,
            15,
            "100 Gb/s capped at 25"
        );
    }
}

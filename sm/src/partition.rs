//! Partitions (IBA vol1 §10.9): `partitions.conf` in OpenSM's syntax, the P_Key table every
//! port should hold, and the P_KeyTable Sets (§14.2.5.7) that turn what a port holds into it.
//!
//! # The configuration ([`PartitionConfig`])
//! - **No file** (OpenSM: none given, or not accessible): `Default=0x7fff, ipoib : ALL=full ;`
//!   — every end port a full member of the default partition, whose IPoIB broadcast group is
//!   pre-created ([`PartitionConfig::default`]).
//! - **A file** ([`PartitionConfig::parse`]): the default partition is still created, as
//!   `Default=0x7fff : ALL=limited, SELF=full ;`, and the file's definitions follow (a
//!   definition naming P_Key 0x7fff merges into it, so `Default=0x7fff : ALL=full ;` makes
//!   everyone full again). Grammar as OpenSM's `doc/partition-config.txt`:
//!   `[Name][=PKey][,ipoib][,mtu=][,rate=][,sl=][,scope=][,Q_Key=][,TClass=][,FlowLabel=]`
//!   `[,indx0][,defmember=full|limited|both] : <members and mgid= lines> ;`, members being
//!   `ALL`, `ALL_CAS`, `ALL_SWITCHES`, `ALL_ROUTERS`, `SELF`, `NONE` or a port GUID, each
//!   optionally `=full|limited|both` (abbreviations such as `limi` accepted, as OpenSM).
//!   Definitions with the same P_Key merge (the first name stays); a definition without a
//!   P_Key gets the next free one from 1 (or the P_Key of an earlier one with its name).
//! - **`sl=` and QoS.** As OpenSM's (`osm_prtn_config.c`), a partition's `sl=` is overridden to
//!   0 unless `qos` is on ([`PartitionConfig::parse_with_qos`]): the SL of the PathRecords of
//!   its P_Key ([`Partition::sl`]), of its broadcast group and of the `mgid=` groups that
//!   inherit it; an `mgid=` line's own `sl=` stays.
//! - **Errors.** OpenSM logs most mistakes and skips them (an unknown flag, a bad value, an
//!   unknown membership) and falls back to the default configuration on the rest; we reject
//!   every one with `file:line: what` ([`PartitionError`]), so a typo never silently changes
//!   who may talk to whom.
//!
//! # What each port holds ([`PkeyPlan`])
//! Members are resolved against the discovered subnet once per heavy sweep
//! ([`PkeyPlan::resolve`]): end ports (CA and router ports, switch port 0) get the P_Keys of
//! their partitions, with the membership bit (0x8000) for full members. Without
//! `allow_both_pkeys` the last membership given to a port in one partition wins (`both` means
//! full); with it a port may hold the full and the limited P_Key of one partition.
//! Layout in the table ([`layout`]): the default P_Key (or that of an `indx0` partition) at
//! index 0; every other P_Key keeps the index it already has in the port's table, new ones go
//! to the first free index; entries beyond PartitionCap are dropped (and reported).
//!
//! With partition enforcement (`part_enforce`, default `both`; `no_partition_enforcement`)
//! the switch port facing a CA or router port gets that port's P_Keys (a limited P_Key is
//! dropped where the full one is present) and PortInfo.PartitionEnforcementInbound/Outbound
//! ([`PkeyPlan::enforcement`]); when the switch's PartitionEnforcementCap is 0 or too small,
//! enforcement stays off on that port. Inter-switch ports have enforcement turned off.
//!
//! # Programming (STYLE P7)
//! [`KnownPkeys`] keeps, per (NodeGUID, port), the blocks the port was read or acknowledged
//! to hold, across sweeps; a port found in state Init or Down at a heavy sweep is forgotten (it
//! was reset or is new). Blocks not known are read first ([`PkeyPlan::reads`]); then only the
//! blocks that differ are set ([`PkeyPlan::sets`]).

use crate::FastMap as HashMap;
use core::fmt;
use std::net::Ipv6Addr;

use ibmad::{Guid, NodeType, PortNum, PortState};

use crate::subnet::{NodeId, Subnet};

/// The default partition's P_Key (its full form is 0xFFFF).
pub const DEFAULT_PKEY: u16 = 0x7FFF;
/// The membership bit of a P_Key: set = full member.
pub const FULL_MEMBER: u16 = 0x8000;
/// P_Keys in one P_KeyTable block.
pub const BLOCK: usize = 32;
/// The IPoIB broadcast group's Q_Key (`OSM_IPOIB_BROADCAST_MGRP_QKEY`).
pub const IPOIB_QKEY: u32 = 0x0B1B;
/// Multicast group MTU when none is given (code 4 = 2048, `OSM_DEFAULT_MGRP_MTU`).
pub const DEFAULT_MTU: u8 = 4;
/// Multicast group rate when none is given (code 3 = 10 Gb/s, `OSM_DEFAULT_MGRP_RATE`).
pub const DEFAULT_RATE: u8 = 3;
/// Multicast scope when none is given (2 = link-local, `OSM_DEFAULT_MGRP_SCOPE`).
pub const DEFAULT_SCOPE: u8 = 2;
/// OpenSM's default partitions.conf (Debian's `OPENSM_CONFIG_DIR`).
pub const DEFAULT_PARTITION_FILE: &str = "/etc/opensm/partitions.conf";

/// How a member belongs to a partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Membership {
    /// Limited member (P_Key without the membership bit). The default.
    #[default]
    Limited,
    /// Full member (P_Key | 0x8000).
    Full,
    /// Both entries with `allow_both_pkeys`; full otherwise.
    Both,
}

/// Which ports a member line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortSel {
    /// `ALL`: every end port.
    All,
    /// `ALL_CAS`: every CA port.
    AllCas,
    /// `ALL_SWITCHES`: every switch's port 0.
    AllSwitches,
    /// `ALL_ROUTERS`: every router port.
    AllRouters,
    /// `SELF`: the SM's port.
    SelfPort,
    /// One end port by PortGUID.
    Guid(Guid),
}

/// One member specifier of a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// The ports.
    pub ports: PortSel,
    /// Their membership.
    pub membership: Membership,
    /// The definition said `indx0`: this partition's P_Key goes to index 0 of these ports.
    pub indx0: bool,
    /// Line of the file (0: built in).
    pub line: usize,
}

/// Multicast group parameters of a partition or `mgid=` line (OpenSM's `mgroup_flag`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupFlags {
    /// `mtu=` (IBA MTU code, default 4 = 2048).
    pub mtu: u8,
    /// `rate=` (IBA rate code, default 3 = 10 Gb/s).
    pub rate: u8,
    /// `sl=` (default 0; OpenSM uses 0 unless `qos` is on).
    pub sl: u8,
    /// `scope=` values given, bit per scope (none: link-local).
    pub scope_mask: u16,
    /// `Q_Key=` (0: 0x0B1B for IP groups).
    pub q_key: u32,
    /// `TClass=`.
    pub tclass: u8,
    /// `FlowLabel=` (20 bits).
    pub flow_label: u32,
}

impl Default for GroupFlags {
    fn default() -> Self {
        GroupFlags {
            mtu: DEFAULT_MTU,
            rate: DEFAULT_RATE,
            sl: 0,
            scope_mask: 0,
            q_key: 0,
            tclass: 0,
            flow_label: 0,
        }
    }
}

/// A multicast group the SM pre-creates for a partition (the IPoIB broadcast group of an
/// `ipoib` partition, and its `mgid=` lines), with every value resolved as OpenSM's
/// `osm_prtn_add_mcgroup` does: the scope nibble written into the MGID, the partition's P_Key
/// (full) into the P_Key bytes of IP groups, hop limit 0 for link-local scope else 0xFF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McGroupDef {
    /// The MGID.
    pub mgid: [u8; 16],
    /// The group's P_Key, membership bit set.
    pub pkey: u16,
    /// Q_Key.
    pub q_key: u32,
    /// MTU code (selector "exactly").
    pub mtu: u8,
    /// Rate code (selector "exactly").
    pub rate: u8,
    /// SL.
    pub sl: u8,
    /// Scope (the MGID's low nibble of byte 1).
    pub scope: u8,
    /// TClass.
    pub tclass: u8,
    /// FlowLabel.
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// The IPoIB IPv4 broadcast group `ff1S:401b:PKEY::ffff:ffff`.
    pub broadcast: bool,
}

/// One partition (all definitions of its P_Key merged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Name of its first definition (may be empty).
    pub name: String,
    /// P_Key, 15 bits (no membership bit).
    pub pkey: u16,
    /// Some definition said `ipoib`.
    pub ipoib: bool,
    /// The group flags of its first `ipoib` definition (of its first definition otherwise).
    pub flags: GroupFlags,
    /// Member specifiers in file order.
    pub members: Vec<Member>,
    /// Groups to pre-create: the broadcast group first when `ipoib`, then the `mgid=` lines.
    pub groups: Vec<McGroupDef>,
    /// Line of its first definition (0: built in).
    pub line: usize,
    /// The SL of PathRecords with this P_Key when neither the request nor a QoS level gives
    /// one: the `sl=` of its last definition, 0 without `qos` (OpenSM's `p_prtn->sl`).
    pub sl: u8,
}

/// `part_enforce`: where switch ports facing end ports check P_Keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PartEnforce {
    /// Inbound and outbound (OpenSM's default).
    #[default]
    Both,
    /// Inbound only.
    In,
    /// Outbound only.
    Out,
    /// No switch enforcement (`off`, or `no_partition_enforcement TRUE`).
    Off,
}

impl PartEnforce {
    /// Parses `both`, `in`, `out` or `off`.
    #[must_use]
    pub fn parse(s: &str) -> Option<PartEnforce> {
        Some(match s {
            "both" => PartEnforce::Both,
            "in" => PartEnforce::In,
            "out" => PartEnforce::Out,
            "off" => PartEnforce::Off,
            _ => return None,
        })
    }

    /// The option value.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PartEnforce::Both => "both",
            PartEnforce::In => "in",
            PartEnforce::Out => "out",
            PartEnforce::Off => "off",
        }
    }

    /// (inbound, outbound) enforcement bits.
    #[must_use]
    pub fn bits(self) -> (bool, bool) {
        match self {
            PartEnforce::Both => (true, true),
            PartEnforce::In => (true, false),
            PartEnforce::Out => (false, true),
            PartEnforce::Off => (false, false),
        }
    }
}

/// The partition configuration of the subnet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionConfig {
    /// The file it came from (`None`: no file, the built-in default).
    pub file: Option<String>,
    /// Partitions, the default one first.
    pub partitions: Vec<Partition>,
    /// `part_enforce`.
    pub enforce: PartEnforce,
    /// `allow_both_pkeys`: a port may hold the full and the limited P_Key of a partition.
    pub allow_both_pkeys: bool,
    /// `keep_pkey_indexes` (OpenSM's default TRUE): a P_Key a port holds keeps its index in
    /// the table, so a partition added or removed moves no other P_Key (an IPoIB child
    /// interface bound to an index keeps working). FALSE: every table is laid out afresh
    /// in partition order at every sweep, as OpenSM's `osm_pkey_mgr_process` then does.
    pub keep_indexes: bool,
}

impl Default for PartitionConfig {
    /// No partitions.conf: `Default=0x7fff, ipoib : ALL=full ;`.
    fn default() -> Self {
        let mut p = default_partition(true);
        p.ipoib = true;
        p.groups
            .push(broadcast_group(DEFAULT_PKEY, &p.flags, DEFAULT_SCOPE));
        PartitionConfig {
            file: None,
            partitions: vec![p],
            enforce: PartEnforce::Both,
            allow_both_pkeys: false,
            keep_indexes: true,
        }
    }
}

fn default_partition(no_file: bool) -> Partition {
    let m = |ports, membership| Member {
        ports,
        membership,
        indx0: false,
        line: 0,
    };
    let members = if no_file {
        vec![m(PortSel::All, Membership::Full)]
    } else {
        vec![
            m(PortSel::All, Membership::Limited),
            m(PortSel::SelfPort, Membership::Full),
        ]
    };
    Partition {
        name: "Default".into(),
        pkey: DEFAULT_PKEY,
        ipoib: false,
        flags: GroupFlags::default(),
        members,
        groups: Vec::new(),
        line: 0,
        sl: 0,
    }
}

fn broadcast_group(pkey: u16, f: &GroupFlags, scope: u8) -> McGroupDef {
    let full = pkey | FULL_MEMBER;
    let mut mgid = [0u8; 16];
    mgid[0] = 0xFF;
    mgid[1] = 0x10 | scope;
    mgid[2] = 0x40;
    mgid[3] = 0x1B;
    mgid[4..6].copy_from_slice(&full.to_be_bytes());
    mgid[12..16].copy_from_slice(&[0xFF; 4]);
    McGroupDef {
        mgid,
        pkey: full,
        q_key: if f.q_key == 0 { IPOIB_QKEY } else { f.q_key },
        mtu: f.mtu,
        rate: f.rate,
        sl: f.sl,
        scope,
        tclass: f.tclass,
        flow_label: f.flow_label,
        hop_limit: hop_limit(scope),
        broadcast: true,
    }
}

fn hop_limit(scope: u8) -> u8 {
    if scope == DEFAULT_SCOPE {
        0
    } else {
        0xFF
    }
}

fn scopes(mask: u16) -> Vec<u8> {
    if mask == 0 {
        return vec![DEFAULT_SCOPE];
    }
    (0..16u8).filter(|s| mask & (1 << s) != 0).collect()
}

/// A partitions.conf error: `file:line: what`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionError {
    /// The file name as given to [`PartitionConfig::parse`].
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.msg)
    }
}

impl std::error::Error for PartitionError {}

/// A number as C's `strtoul(s, &end, 0)` reads it, whole string consumed.
fn c_uint(s: &str) -> Option<u64> {
    let (d, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if d.is_empty() || !d.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(d, radix).ok()
}

/// True if `word` is a non-empty abbreviation of `full` (OpenSM's `strncmp(word, full, len)`).
fn abbrev(word: &str, full: &str) -> bool {
    !word.is_empty() && full.starts_with(word)
}

/// Splits `name = value` (either side trimmed; no `=`: value `None`).
fn name_val(s: &str) -> (&str, Option<&str>) {
    match s.split_once('=') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (s.trim(), None),
    }
}

/// One definition being parsed.
struct Def {
    name: String,
    pkey: Option<u16>,
    ipoib: bool,
    indx0: bool,
    defmember: Membership,
    flags: GroupFlags,
    members: Vec<Member>,
    groups: Vec<(usize, [u8; 16], GroupFlags)>,
    line: usize,
}

struct Parser<'a> {
    file: &'a str,
    line: usize,
    /// `qos` is on: a partition's `sl=` counts (else it is overridden to 0).
    qos: bool,
}

impl Parser<'_> {
    fn err(&self, msg: impl Into<String>) -> PartitionError {
        PartitionError {
            file: self.file.to_string(),
            line: self.line,
            msg: msg.into(),
        }
    }

    fn num(&self, flag: &str, v: Option<&str>, max: u64) -> Result<u64, PartitionError> {
        let v = v.ok_or_else(|| self.err(format!("flag '{flag}' requires a value")))?;
        match c_uint(v) {
            Some(n) if n <= max => Ok(n),
            _ => Err(self.err(format!(
                "flag '{flag}': '{v}' is not a number in 0..={max:#x}"
            ))),
        }
    }

    /// A multicast-group flag into `f`; `Ok(false)` if `flag` is not one.
    fn group_flag(
        &self,
        f: &mut GroupFlags,
        flag: &str,
        v: Option<&str>,
    ) -> Result<bool, PartitionError> {
        match flag {
            "mtu" => {
                let n = self.num(flag, v, 5)?;
                if n == 0 {
                    return Err(self.err("flag 'mtu': MTU codes are 1..=5"));
                }
                f.mtu = n as u8;
            }
            "rate" => {
                let n = self.num(flag, v, 22)?;
                if n < 2 {
                    return Err(self.err("flag 'rate': rate codes are 2..=22"));
                }
                f.rate = n as u8;
            }
            "sl" => f.sl = self.num(flag, v, 15)? as u8,
            "scope" => {
                let n = self.num(flag, v, 15)?;
                if n == 0 {
                    return Err(self.err("flag 'scope': scopes are 1..=15"));
                }
                f.scope_mask |= 1 << n;
            }
            "Q_Key" => f.q_key = self.num(flag, v, u64::from(u32::MAX))? as u32,
            "TClass" => f.tclass = self.num(flag, v, 0xFF)? as u8,
            "FlowLabel" => f.flow_label = self.num(flag, v, 0xF_FFFF)? as u32,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn membership(&self, v: &str) -> Result<Membership, PartitionError> {
        if abbrev(v, "full") {
            Ok(Membership::Full)
        } else if abbrev(v, "limited") {
            Ok(Membership::Limited)
        } else if abbrev(v, "both") {
            Ok(Membership::Both)
        } else {
            Err(self.err(format!("membership '{v}' is not full, limited or both")))
        }
    }

    /// `Name[=PKey][,flag[=value]]*` (the text before `:`).
    fn header(&self, text: &str) -> Result<Def, PartitionError> {
        let mut parts = text.split(',');
        let (mut name, mut id) = name_val(parts.next().unwrap_or(""));
        if id.is_none() && name.starts_with(|c: char| c.is_ascii_digit()) {
            id = Some(name);
            name = "";
        }
        let pkey = match id {
            None => None,
            Some(v) => match c_uint(v) {
                Some(n) if n <= 0xFFFF => Some(n as u16 & !FULL_MEMBER),
                _ => return Err(self.err(format!("bad P_Key '{v}' (a 16-bit number)"))),
            },
        };
        let mut d = Def {
            name: name.to_string(),
            pkey: pkey.filter(|&p| p != 0),
            ipoib: false,
            indx0: false,
            defmember: Membership::Limited,
            flags: GroupFlags::default(),
            members: Vec::new(),
            groups: Vec::new(),
            line: self.line,
        };
        for part in parts {
            let (flag, v) = name_val(part);
            if flag.is_empty() {
                return Err(self.err("bad partition flags: empty flag"));
            }
            if self.group_flag(&mut d.flags, flag, v)? {
                continue;
            }
            match flag {
                "ipoib" => d.ipoib = true,
                "indx0" => d.indx0 = true,
                "defmember" => {
                    let v = v.ok_or_else(|| self.err("flag 'defmember' requires a value"))?;
                    d.defmember = self.membership(v)?;
                }
                other => {
                    return Err(self.err(format!(
                        "unknown partition flag '{other}' (ipoib, indx0, defmember, mtu, rate, \
                         sl, scope, Q_Key, TClass, FlowLabel)"
                    )))
                }
            }
        }
        if !self.qos {
            // OpenSM: "Overriding SL %d to default SL %d on partition %s as QoS is not
            // enabled" — before the broadcast group and the mgid= lines inherit it.
            d.flags.sl = 0;
        }
        Ok(d)
    }

    /// One member specifier (`ALL=full`, `0x1234`, …) or `NONE`/empty.
    fn member(&self, d: &mut Def, item: &str) -> Result<(), PartitionError> {
        let (name, flag) = name_val(item);
        if name.is_empty() || name == "NONE" {
            return Ok(());
        }
        let membership = match flag {
            Some(f) => self.membership(f)?,
            None => d.defmember,
        };
        let ports = match name {
            "ALL" => PortSel::All,
            "ALL_CAS" => PortSel::AllCas,
            "ALL_SWITCHES" => PortSel::AllSwitches,
            "ALL_ROUTERS" => PortSel::AllRouters,
            "SELF" => PortSel::SelfPort,
            g => match c_uint(g) {
                Some(n) if n != 0 => PortSel::Guid(Guid(n)),
                _ => {
                    return Err(self.err(format!(
                        "bad PortGUID '{g}' (a non-zero number, or ALL, ALL_CAS, \
                         ALL_SWITCHES, ALL_ROUTERS, SELF, NONE)"
                    )))
                }
            },
        };
        d.members.push(Member {
            ports,
            membership,
            indx0: d.indx0,
            line: self.line,
        });
        Ok(())
    }

    /// `mgid=GID[,flag=value]*` (the items of one line from `mgid=` on).
    fn mgroup(&self, d: &mut Def, gid: Option<&str>, flags: &[&str]) -> Result<(), PartitionError> {
        let gid = gid.ok_or_else(|| self.err("mgid requires a GID"))?;
        let mgid = match gid.parse::<Ipv6Addr>() {
            Ok(a) if a.octets()[0] == 0xFF => a.octets(),
            _ => return Err(self.err(format!("mgid '{gid}' is not a multicast GID"))),
        };
        let mut f = d.flags;
        f.scope_mask = d.flags.scope_mask;
        for item in flags {
            let (flag, v) = name_val(item);
            if flag.is_empty() {
                continue;
            }
            if !self.group_flag(&mut f, flag, v)? {
                return Err(self.err(format!(
                    "unknown mgroup flag '{flag}' (mtu, rate, sl, scope, Q_Key, TClass, FlowLabel)"
                )));
            }
        }
        d.groups.push((self.line, mgid, f));
        Ok(())
    }

    /// The member part of a statement on one line: comma-separated items; an `mgid=` item
    /// takes the rest of the line's items as its flags.
    fn members(&self, d: &mut Def, text: &str) -> Result<(), PartitionError> {
        let items: Vec<&str> = text.split(',').collect();
        for (i, item) in items.iter().enumerate() {
            let (name, v) = name_val(item);
            if name == "mgid" {
                return self.mgroup(d, v, &items[i + 1..]);
            }
            self.member(d, item)?;
        }
        Ok(())
    }
}

impl PartitionConfig {
    /// Parses a partitions.conf (`file` names it in errors). The default partition is created
    /// first as `Default=0x7fff : ALL=limited, SELF=full ;`; see the module documentation.
    ///
    /// # Errors
    /// The first bad line: a statement without `:`, a bad P_Key, an unknown or malformed
    /// flag, an unknown membership, a bad PortGUID, an mgid that is not multicast, an IP group
    /// whose P_Key, MTU or rate disagree with its partition.
    pub fn parse(text: &str, file: &str) -> Result<PartitionConfig, PartitionError> {
        PartitionConfig::parse_with_qos(text, file, false)
    }

    /// [`PartitionConfig::parse`] with OpenSM's `qos` option: off, every partition's `sl=`
    /// is overridden to 0 (an `mgid=` line's own `sl=` is not), as OpenSM does.
    ///
    /// # Errors
    /// As [`PartitionConfig::parse`].
    pub fn parse_with_qos(
        text: &str,
        file: &str,
        qos: bool,
    ) -> Result<PartitionConfig, PartitionError> {
        let mut p = Parser { file, line: 0, qos };
        let mut defs: Vec<Def> = Vec::new();
        let mut cur: Option<Def> = None;
        for (i, raw) in text.lines().enumerate() {
            p.line = i + 1;
            let mut rest = raw.split('#').next().unwrap_or("");
            while !rest.trim().is_empty() {
                let (stmt, ended, after) = match rest.find(';') {
                    Some(k) => (&rest[..k], true, &rest[k + 1..]),
                    None => (rest, false, ""),
                };
                let body = match cur.take() {
                    Some(d) => {
                        cur = Some(d);
                        stmt
                    }
                    None => {
                        let Some((head, body)) = stmt.split_once(':') else {
                            return Err(p.err(
                                "no partition definition found (expected 'Name=PKey : members ;')",
                            ));
                        };
                        cur = Some(p.header(head)?);
                        body
                    }
                };
                if let Some(d) = cur.as_mut() {
                    p.members(d, body)?;
                }
                if ended {
                    defs.extend(cur.take());
                }
                rest = after;
            }
        }
        defs.extend(cur.take());
        let mut cfg = PartitionConfig {
            file: Some(file.to_string()),
            partitions: vec![default_partition(false)],
            ..PartitionConfig::default()
        };
        let mut next_pkey: u16 = 0;
        for d in defs {
            p.line = d.line;
            cfg.merge(&mut p, d, &mut next_pkey)?;
        }
        Ok(cfg)
    }

    fn merge(&mut self, p: &mut Parser<'_>, d: Def, next: &mut u16) -> Result<(), PartitionError> {
        let pkey = match d.pkey {
            Some(k) => k,
            None => match self
                .partitions
                .iter()
                .find(|x| !d.name.is_empty() && x.name == d.name)
            {
                Some(x) => x.pkey,
                None => loop {
                    *next += 1;
                    if *next >= DEFAULT_PKEY {
                        return Err(p.err("no free P_Key left to generate"));
                    }
                    if self.partitions.iter().all(|x| x.pkey != *next) {
                        break *next;
                    }
                },
            },
        };
        let idx = match self.partitions.iter().position(|x| x.pkey == pkey) {
            Some(i) => i,
            None => {
                self.partitions.push(Partition {
                    name: d.name.clone(),
                    pkey,
                    ipoib: false,
                    flags: d.flags,
                    members: Vec::new(),
                    groups: Vec::new(),
                    line: d.line,
                    sl: 0,
                });
                self.partitions.len() - 1
            }
        };
        let part = &mut self.partitions[idx];
        part.members.extend(d.members);
        // OpenSM sets p_prtn->sl at every definition: the last one's counts.
        part.sl = d.flags.sl;
        if d.ipoib && !part.ipoib {
            part.ipoib = true;
            part.flags = d.flags;
            // One broadcast group, link-local, whatever `scope=` says: OpenSM's
            // partition_create builds it with its own flags' scope mask left 0 (its
            // doc/partition-config.txt promises a group per scope; 3.3.23 creates only
            // ff12:401b:…, as measured with saquery -g). The partition's `scope=` still
            // applies to its `mgid=` lines.
            let g = broadcast_group(pkey, &d.flags, DEFAULT_SCOPE);
            if part.groups.iter().all(|x| x.mgid != g.mgid) {
                part.groups.insert(0, g);
            }
        }
        for (line, mut mgid, f) in d.groups {
            p.line = line;
            let ip = mgid[2..4] == [0x40, 0x1B] || mgid[2..4] == [0x60, 0x1B];
            let full = pkey | FULL_MEMBER;
            let mut q_key = f.q_key;
            let bcast = mgid[2..4] == [0x40, 0x1B]
                && mgid[4..6] == [0xFF, 0xFF]
                && mgid[6..12] == [0; 6]
                && mgid[12..16] == [0xFF; 4];
            if ip {
                let mp = u16::from_be_bytes([mgid[4], mgid[5]]);
                if !bcast && mp != 0 && mp != full {
                    return Err(p.err(format!(
                        "IP multicast group P_Key {mp:#06x} is not the partition's ({full:#06x})"
                    )));
                }
                if f.rate != d.flags.rate || f.mtu != d.flags.mtu {
                    return Err(p.err(format!(
                        "IP multicast group rate {} / mtu {} differ from the partition's broadcast group ({} / {})",
                        f.rate, f.mtu, d.flags.rate, d.flags.mtu
                    )));
                }
                mgid[4..6].copy_from_slice(&full.to_be_bytes());
                if q_key == 0 {
                    q_key = IPOIB_QKEY;
                }
            }
            for s in scopes(f.scope_mask) {
                let mut m = mgid;
                m[1] = (m[1] & 0xF0) | s;
                if self
                    .partitions
                    .iter()
                    .any(|x| x.groups.iter().any(|g| g.mgid == m))
                {
                    continue; // OpenSM: "don't create multiple copies of the group"
                }
                self.partitions[idx].groups.push(McGroupDef {
                    mgid: m,
                    pkey: full,
                    q_key,
                    mtu: f.mtu,
                    rate: f.rate,
                    sl: f.sl,
                    scope: s,
                    tclass: f.tclass,
                    flow_label: f.flow_label,
                    hop_limit: hop_limit(s),
                    broadcast: bcast,
                });
            }
        }
        Ok(())
    }

    /// The partition with this P_Key (15 bits; the membership bit is ignored).
    #[must_use]
    pub fn partition(&self, pkey: u16) -> Option<&Partition> {
        self.partitions
            .iter()
            .find(|p| p.pkey == pkey & !FULL_MEMBER)
    }
}

// ---------------------------------------------------------------------------------------------
// What each port holds

/// The P_Key table capacity of a port as the SM programs it: NodeInfo.PartitionCap for end
/// ports, SwitchInfo.PartitionEnforcementCap for switch external ports.
fn capacity(subnet: &Subnet, id: NodeId, p: PortNum) -> usize {
    let n = subnet.node(id);
    if n.is_switch() && p.0 != 0 {
        usize::from(
            n.switch_info
                .map_or(0, |si| si.partition_enforcement_cap.get()),
        )
    } else {
        usize::from(n.partition_cap)
    }
}

/// Blocks of a table of `cap` entries.
#[must_use]
pub fn blocks(cap: usize) -> usize {
    cap.div_ceil(BLOCK)
}

/// Lays out `entries` (P_Keys with membership bit, in partition order) in a table of `cap`
/// entries: `first` (the default or `indx0` P_Key, if the port has it) at index 0, every other
/// entry at the index it holds in `current` if free there, the rest in the first free
/// indices. Returns the table (`blocks(cap) * 32` entries, 0 = empty) and the entries that did
/// not fit.
#[must_use]
pub fn layout(
    entries: &[u16],
    first: Option<u16>,
    cap: usize,
    current: &[u16],
) -> (Vec<u16>, Vec<u16>) {
    let mut t = vec![0u16; blocks(cap) * BLOCK];
    let mut dropped = Vec::new();
    let mut rest: Vec<u16> = Vec::with_capacity(entries.len());
    if let Some(f) = first.filter(|f| entries.contains(f)) {
        if cap > 0 {
            t[0] = f;
        } else {
            dropped.push(f);
        }
    }
    for &e in entries {
        if t.first() == Some(&e) && Some(e) == first {
            continue;
        }
        let held = current
            .iter()
            .enumerate()
            .take(cap)
            .skip(1)
            .find(|&(i, &c)| c == e && t[i] == 0)
            .map(|(i, _)| i);
        match held {
            Some(i) => t[i] = e,
            None => rest.push(e),
        }
    }
    let mut free = (0..cap)
        .filter(|&i| t[i] == 0)
        .collect::<Vec<_>>()
        .into_iter();
    for e in rest {
        if t[..cap].contains(&e) {
            continue;
        }
        match free.next() {
            Some(i) => t[i] = e,
            None => dropped.push(e),
        }
    }
    (t, dropped)
}

/// One port's table as the plan wants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortTable {
    /// The node.
    pub node: NodeId,
    /// The port (0 for a switch's port 0).
    pub port: PortNum,
    /// Entries (P_Key | membership bit), `blocks * 32` long, 0 = empty.
    pub table: Vec<u16>,
}

/// P_Keys that did not fit a port's table (reported as an event by the sweep).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overflow {
    /// The node's GUID.
    pub node_guid: Guid,
    /// The port.
    pub port: PortNum,
    /// The port's capacity.
    pub cap: usize,
    /// The P_Keys dropped.
    pub dropped: Vec<u16>,
}

/// The partitions resolved against one sweep's subnet: each end port's P_Keys, and (once laid
/// out against what the ports hold, [`PkeyPlan::layout_all`]) the tables of end ports and of
/// the switch ports facing them.
#[derive(Clone, Debug, Default)]
pub struct PkeyPlan {
    /// End port → its P_Keys in partition order, plus the P_Key for index 0.
    entries: HashMap<(NodeId, PortNum), (Vec<u16>, Option<u16>)>,
    /// P_Keys (15 bits) of partitions with at least one member port.
    present: Vec<u16>,
    /// Laid-out tables by port.
    tables: HashMap<(NodeId, PortNum), Vec<u16>>,
    /// Switch external ports: desired (inbound, outbound) enforcement.
    enforce: HashMap<(NodeId, PortNum), (bool, bool)>,
    /// Overflows found by the last layout.
    overflows: Vec<Overflow>,
}

fn selected(
    subnet: &Subnet,
    sel: PortSel,
    sm: Option<(NodeId, PortNum)>,
    id: NodeId,
    p: PortNum,
) -> bool {
    let n = subnet.node(id);
    match sel {
        PortSel::All => true,
        PortSel::AllCas => n.node_type == NodeType::CA,
        PortSel::AllSwitches => n.is_switch(),
        PortSel::AllRouters => n.node_type == NodeType::ROUTER,
        PortSel::SelfPort => sm == Some((id, p)),
        PortSel::Guid(g) => subnet.port(id, p).is_some_and(|x| x.guid == g),
    }
}

impl PkeyPlan {
    /// Resolves `cfg` against `subnet` (the SM's port is [`Subnet::sm_port`]).
    #[must_use]
    pub fn resolve(cfg: &PartitionConfig, subnet: &Subnet) -> PkeyPlan {
        let sm = subnet.sm_port();
        let ends: Vec<(NodeId, PortNum)> = subnet.end_ports().collect();
        let by_guid: HashMap<Guid, (NodeId, PortNum)> = ends
            .iter()
            .filter_map(|&(id, p)| Some((subnet.port(id, p)?.guid, (id, p))))
            .collect();
        let mut plan = PkeyPlan::default();
        for part in &cfg.partitions {
            // Per end port: (full, limited, indx0).
            let mut state: HashMap<(NodeId, PortNum), (bool, bool, bool)> = HashMap::default();
            for m in &part.members {
                let (full, limited) = match m.membership {
                    Membership::Full => (true, false),
                    Membership::Limited => (false, true),
                    Membership::Both => (true, cfg.allow_both_pkeys),
                };
                let mut apply = |k: (NodeId, PortNum)| {
                    state.insert(k, (full, limited, m.indx0));
                };
                match m.ports {
                    PortSel::Guid(g) => {
                        if let Some(&k) = by_guid.get(&g) {
                            apply(k);
                        }
                    }
                    PortSel::SelfPort => {
                        if let Some(k) = sm {
                            apply(k);
                        }
                    }
                    sel => {
                        for &(id, p) in &ends {
                            if selected(subnet, sel, sm, id, p) {
                                apply((id, p));
                            }
                        }
                    }
                }
            }
            if state.is_empty() {
                continue;
            }
            plan.present.push(part.pkey);
            for (k, (full, limited, indx0)) in state {
                let e = plan.entries.entry(k).or_default();
                let fk = part.pkey | FULL_MEMBER;
                if full {
                    e.0.push(fk);
                }
                if limited {
                    e.0.push(part.pkey);
                }
                let first = if full { fk } else { part.pkey };
                if indx0 || (part.pkey == DEFAULT_PKEY && e.1.is_none()) {
                    e.1 = Some(first);
                }
            }
        }
        plan
    }

    /// The P_Keys (with membership bit) of end port (`id`, `p`), in partition order.
    #[must_use]
    pub fn port_pkeys(&self, id: NodeId, p: PortNum) -> &[u16] {
        self.entries.get(&(id, p)).map_or(&[], |e| &e.0)
    }

    /// P_Keys (15 bits) of the partitions that have member ports in this subnet.
    #[must_use]
    pub fn present(&self) -> &[u16] {
        &self.present
    }

    /// A P_Key two end ports share with at least one of them a full member (IBA vol1 §10.9.3:
    /// two limited members cannot talk), preferring the default partition, else the first in
    /// partition order of `a`. Returned with the membership bit as `a` holds it.
    #[must_use]
    pub fn shared_pkey(&self, a: (NodeId, PortNum), b: (NodeId, PortNum)) -> Option<u16> {
        let pa = self.port_pkeys(a.0, a.1);
        let pb = self.port_pkeys(b.0, b.1);
        let ok = |ka: u16| {
            pb.iter()
                .any(|&kb| kb & !FULL_MEMBER == ka & !FULL_MEMBER && (ka | kb) & FULL_MEMBER != 0)
        };
        let mut best: Option<u16> = None;
        for &ka in pa {
            if ok(ka) {
                if ka & !FULL_MEMBER == DEFAULT_PKEY {
                    return Some(ka);
                }
                best = best.or(Some(ka));
            }
        }
        best
    }

    /// Lays out every table against what the ports are known to hold (`known(id, p)`, the
    /// whole table or as much as is known; empty if nothing), or with `!keep_indexes`
    /// ([`PartitionConfig::keep_indexes`]) afresh, and decides switch enforcement with
    /// `enforce`.
    pub fn layout_all(
        &mut self,
        subnet: &Subnet,
        enforce: PartEnforce,
        keep_indexes: bool,
        known: impl Fn(NodeId, PortNum) -> Vec<u16>,
    ) {
        self.tables.clear();
        self.enforce.clear();
        self.overflows.clear();
        let mut keys: Vec<(NodeId, PortNum)> = self.entries.keys().copied().collect();
        keys.sort();
        for (id, p) in keys {
            let (entries, first) = &self.entries[&(id, p)];
            let cap = capacity(subnet, id, p);
            let current = if keep_indexes {
                known(id, p)
            } else {
                Vec::new()
            };
            let (t, dropped) = layout(entries, *first, cap, &current);
            if !dropped.is_empty() {
                self.overflows.push(Overflow {
                    node_guid: subnet.node(id).guid,
                    port: p,
                    cap,
                    dropped,
                });
            }
            self.tables.insert((id, p), t);
        }
        // Switch external ports.
        for sw in subnet.switches() {
            let n = subnet.node(sw);
            for q in 1..=n.num_ports {
                let q = PortNum(q);
                let Some(port) = subnet.port(sw, q) else {
                    continue;
                };
                if port.info.is_none() {
                    continue;
                }
                let Some((rn, rp)) = port.remote else {
                    continue;
                };
                if subnet.node(rn).is_switch() || enforce == PartEnforce::Off {
                    self.enforce.insert((sw, q), (false, false));
                    continue;
                }
                let Some(peer) = self.tables.get(&(rn, rp)) else {
                    self.enforce.insert((sw, q), (false, false));
                    continue;
                };
                let want: Vec<u16> = peer
                    .iter()
                    .copied()
                    .filter(|&k| k != 0)
                    .filter(|&k| k & FULL_MEMBER != 0 || !peer.contains(&(k | FULL_MEMBER)))
                    .collect();
                let cap = capacity(subnet, sw, q);
                if cap == 0 || want.len() > cap {
                    if cap != 0 {
                        self.overflows.push(Overflow {
                            node_guid: n.guid,
                            port: q,
                            cap,
                            dropped: want[cap..].to_vec(),
                        });
                    }
                    self.enforce.insert((sw, q), (false, false));
                    continue;
                }
                let mut t = vec![0u16; blocks(cap) * BLOCK];
                t[..want.len()].copy_from_slice(&want);
                self.tables.insert((sw, q), t);
                self.enforce.insert((sw, q), enforce.bits());
            }
        }
    }

    /// The laid-out table of a port (end port, or switch port facing one).
    #[must_use]
    pub fn table(&self, id: NodeId, p: PortNum) -> Option<&[u16]> {
        self.tables.get(&(id, p)).map(Vec::as_slice)
    }

    /// Every laid-out table, ordered by (node, port).
    #[must_use]
    pub fn tables(&self) -> Vec<PortTable> {
        let mut v: Vec<PortTable> = self
            .tables
            .iter()
            .map(|(&(node, port), t)| PortTable {
                node,
                port,
                table: t.clone(),
            })
            .collect();
        v.sort_by_key(|t| (t.node, t.port));
        v
    }

    /// The (inbound, outbound) enforcement bits switch external port `p` of `id` should
    /// hold, or `None` if the SM leaves them (unlinked ports, not a switch).
    #[must_use]
    pub fn enforcement(&self, id: NodeId, p: PortNum) -> Option<(bool, bool)> {
        self.enforce.get(&(id, p)).copied()
    }

    /// Ports whose P_Keys did not all fit, from the last layout.
    #[must_use]
    pub fn overflows(&self) -> &[Overflow] {
        &self.overflows
    }

    /// The P_KeyTable block Gets needed before the Sets: (node, port, block) for every block
    /// of every table to program that `known` does not know.
    #[must_use]
    pub fn reads(
        &self,
        subnet: &Subnet,
        enforce: PartEnforce,
        known: &KnownPkeys,
    ) -> Vec<(NodeId, PortNum, u16)> {
        let mut ports: Vec<(NodeId, PortNum)> = self.entries.keys().copied().collect();
        if enforce != PartEnforce::Off {
            for sw in subnet.switches() {
                let n = subnet.node(sw);
                for q in 1..=n.num_ports {
                    let Some(port) = subnet.port(sw, PortNum(q)) else {
                        continue;
                    };
                    if port.info.is_some()
                        && port.remote.is_some_and(|r| {
                            self.entries.contains_key(&r) && !subnet.node(r.0).is_switch()
                        })
                        && capacity(subnet, sw, PortNum(q)) > 0
                    {
                        ports.push((sw, PortNum(q)));
                    }
                }
            }
        }
        ports.sort();
        let mut out = Vec::new();
        for (id, p) in ports {
            let guid = subnet.node(id).guid;
            for b in 0..blocks(capacity(subnet, id, p)) {
                let b = b as u16;
                if known.block(guid, p, b).is_none() {
                    out.push((id, p, b));
                }
            }
        }
        out
    }

    /// The P_KeyTable Sets: (node, port, block, the 32 entries) for every block of a laid-out
    /// table that differs from what the port is known to hold (or is unknown).
    #[must_use]
    pub fn sets(
        &self,
        subnet: &Subnet,
        known: &KnownPkeys,
    ) -> Vec<(NodeId, PortNum, u16, [u16; BLOCK])> {
        let mut out = Vec::new();
        let mut ports: Vec<(&(NodeId, PortNum), &Vec<u16>)> = self.tables.iter().collect();
        ports.sort_unstable_by_key(|(k, _)| **k);
        for (&(node, port), table) in ports {
            let guid = subnet.node(node).guid;
            for (b, chunk) in table.chunks(BLOCK).enumerate() {
                let mut blk = [0u16; BLOCK];
                blk.copy_from_slice(chunk);
                let b = b as u16;
                if known.block(guid, port, b) != Some(blk) {
                    out.push((node, port, b, blk));
                }
            }
        }
        out
    }
}

/// What the SM knows ports to hold: P_KeyTable blocks read (GetResp) or acknowledged (SetResp),
/// by (NodeGUID, port), across sweeps.
#[derive(Clone, Debug, Default)]
pub struct KnownPkeys {
    blocks: HashMap<(Guid, u8), Vec<Option<[u16; BLOCK]>>>,
}

impl KnownPkeys {
    /// Block `b` of (`node_guid`, `port`), if known.
    #[must_use]
    pub fn block(&self, node_guid: Guid, port: PortNum, b: u16) -> Option<[u16; BLOCK]> {
        self.blocks
            .get(&(node_guid, port.0))?
            .get(usize::from(b))
            .copied()
            .flatten()
    }

    /// The port's table as far as it is known (unknown blocks read as empty).
    #[must_use]
    pub fn table(&self, node_guid: Guid, port: PortNum) -> Vec<u16> {
        self.blocks
            .get(&(node_guid, port.0))
            .map(|v| v.iter().flat_map(|b| b.unwrap_or([0; BLOCK])).collect())
            .unwrap_or_default()
    }

    /// A GetResp or SetResp (status 0) carrying block `b` of the port.
    pub fn on_block(&mut self, node_guid: Guid, port: PortNum, b: u16, data: &[u8; 64]) {
        let mut blk = [0u16; BLOCK];
        for (i, e) in blk.iter_mut().enumerate() {
            *e = u16::from_be_bytes([data[2 * i], data[2 * i + 1]]);
        }
        let v = self.blocks.entry((node_guid, port.0)).or_default();
        let i = usize::from(b);
        if v.len() <= i {
            v.resize(i + 1, None);
        }
        v[i] = Some(blk);
    }

    /// Forgets the tables of every port of `subnet` found in state Init or Down: new, or
    /// reset since it was last programmed. (Ports of nodes no longer in the subnet are kept:
    /// they may come back holding their tables.)
    pub fn forget_reset_ports(&mut self, subnet: &Subnet) {
        for id in subnet.node_ids() {
            let n = subnet.node(id);
            for p in 0..=n.num_ports {
                let Some(port) = subnet.port(id, PortNum(p)) else {
                    continue;
                };
                let fresh = port
                    .info
                    .is_none_or(|i| matches!(i.port_state(), PortState::INIT | PortState::DOWN));
                if fresh {
                    self.blocks.remove(&(n.guid, p));
                }
            }
        }
    }
}

/// The 64-byte SMP data of a block.
#[must_use]
pub fn block_data(blk: &[u16; BLOCK]) -> [u8; 64] {
    let mut d = [0u8; 64];
    for (i, e) in blk.iter().enumerate() {
        d[2 * i..2 * i + 2].copy_from_slice(&e.to_be_bytes());
    }
    d
}

#[cfg(test)]
mod tests;

//! MCMemberRecord (IBA vol1 §15.2.5.17): the SA's multicast group database — create, join
//! and leave with JoinState, queries, MLID allocation, and the IPoIB broadcast groups the SA
//! creates itself.
//!
//! [`McastDb`] is sans-IO state inside the SA; its handlers take the request's record and
//! ComponentMask, the requester, and a [`McastPorts`] view of the subnet (the port facts the
//! rules need), and return the answer record or the SA status:
//!
//! - **join / create** ([`McastDb::join`], SubnAdmSet): MGID|PortGID|JoinState required
//!   (else ERR_REQ_INSUFFICIENT_COMPONENTS); the port must be known and, when the requester
//!   is another port (a proxy join), share a partition with it. A group that does not exist
//!   is created when JoinState has FullMember or SendOnlyFullMember (o15-0.1.9, else
//!   ERR_REQ_INVALID) and the mask also has Q_Key|TClass|P_Key|FlowLabel|SL (else
//!   ERR_REQ_INSUFFICIENT_COMPONENTS); MGID 0 gets an SA-built MGID
//!   (`ff1<scope>:a01b:<subnet prefix>:<n>`, link-local unless Scope is given); a requested
//!   MGID must start 0xFF, use no reserved flag and not combine the SA signature 0xA01B with
//!   link-local scope (o15-0.1.5) — IPoIB-signed MGIDs (0x401B, 0x601B) are not checked;
//!   MTU and rate selectors must be realisable on the joiner's port (o15-0.2.3: the SA picks
//!   the port's values when none are given); a requested MLID is honoured if free, else
//!   (with [`McastDb::set_consolidate_ipv6_snm`], for an IPv6 solicited-node group) the MLID
//!   of an existing solicited-node group of its scope and P_Key, else the lowest free MLID
//!   from 0xC000 (ERR_NO_RESOURCES when none is left). Joining an existing
//!   group checks the MTU/rate selectors against the group, the group's MTU and rate against
//!   the port's capabilities, the port's membership of the group's partition, and — for a
//!   member that exists already — that the requester is the port itself or, for a
//!   proxy-joined member, in the group's partition (o15-0.2.1). JoinState bits are OR-ed.
//! - **leave** ([`McastDb::leave`], SubnAdmDelete, o15-0.1.14): the member must exist, the
//!   request's JoinState must share a bit with the stored one and add none, and the requester
//!   pass o15-0.2.1; the bits are removed, the member when none remain, and the group when no
//!   FullMember or SendOnlyFullMember is left — unless it is well known (an IPoIB broadcast
//!   group) — freeing its MLID. Membership is held as one JoinState per port, so every MLID
//!   is freed exactly when its group goes (no leak on partial leave, cf. OpenSM PR #43).
//! - **query** ([`McastDb::query`], SubnAdmGet/GetTable): every group matching the mask
//!   (MGID, MLID, Q_Key, P_Key, TClass, SL, FlowLabel, HopLimit, ProxyJoin, MTU/rate
//!   selectors, Scope/JoinState) in a partition of the requester; with PortGID, that member's
//!   record; a trusted requester without PortGID gets one record per member; an untrusted one
//!   sees PortGID, JoinState and ProxyJoin zeroed (IBA p. 923, as OpenSM).
//!
//! The SA's MCMemberRecord arm is [`handle`] (the database in [`super::SaState`], the
//! snapshot as the [`McastPorts`] view: P_Keys from the tables the SM programmed); at every
//! snapshot [`McastDb::on_snapshot`] pre-creates the partitions' groups.
//!
//! Every answer record carries the group's parameters with the selectors set to "exactly".
//! Outputs that are not answers: [`McastDb::poll_notice`] (traps 66/67: group created /
//! deleted, for Reports) and [`McastDb::take_changed`] (the groups changed: the SM re-routes
//! multicast, [`McastDb::routing_groups`]).

use std::collections::{BTreeMap, HashMap, VecDeque};

use ibmad::sa::status;
use ibmad::sa_rec::mcmember::{comp, join, scope, selector, Repr as McMemberRepr, RECORD_LEN};
use ibmad::sa_rec::padded_len;
use ibmad::sa_rec::path::{port_rate, rate_of_order, rate_order, CAP_HAS_EXT_SPEEDS};
use ibmad::{Gid, Guid, Lid, Method, PKey, PortNum, QKey, Status};

use super::{Answer, SaQuery, SaSnapshot};
use crate::mcast::{McastGroup, McastMember};
use crate::partition::McGroupDef;
use crate::subnet::{NodeId, Subnet};

/// Components a join (and a leave) must give.
pub const JOIN_COMP_MASK: u64 = comp::MGID | comp::PORT_GID | comp::JOIN_STATE;
/// Components a create must give besides those of a join.
pub const CREATE_COMP_MASK: u64 =
    JOIN_COMP_MASK | comp::QKEY | comp::TCLASS | comp::PKEY | comp::FLOW | comp::SL;

/// The IPoIB broadcast group's Q_Key (RFC 4391; OpenSM `OSM_IPOIB_BROADCAST_MGRP_QKEY`).
pub const IPOIB_QKEY: QKey = QKey(0x0B1B);

/// The signatures of IPoIB MGIDs (bytes 2–3; RFC 4391 §4): IPv4 and IPv6.
const IPOIB_V4_SIGNATURE: u16 = 0x401B;
const IPOIB_V6_SIGNATURE: u16 = 0x601B;

/// The first multicast LID and the last one an MLID may be.
const MLID_FIRST: u16 = 0xC000;
const MLID_LAST: u16 = 0xFFFE;

/// What the rules need to know of an end port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortFacts {
    /// PortGUID.
    pub guid: Guid,
    /// PortInfo.MTUCap (code).
    pub mtu_cap: u8,
    /// The link's rate (code, IBA vol1 Table "Rate").
    pub rate: u8,
}

/// The subnet as the multicast rules see it.
pub trait McastPorts {
    /// The end port with this PortGUID.
    fn by_guid(&self, guid: Guid) -> Option<PortFacts>;
    /// The end port owning this LID (a requester's SLID).
    fn by_lid(&self, lid: Lid) -> Option<PortFacts>;
    /// True if port `guid` holds `pkey` (its base, any membership) in its P_Key table.
    fn has_pkey(&self, guid: Guid, pkey: PKey) -> bool;
    /// True if ports `a` and `b` share a partition.
    fn share_pkey(&self, a: Guid, b: Guid) -> bool;
}

/// A trap the SA reports about a group (IBA vol1 §14.2.5.1, Table "Notice"): 66 = MCG
/// created, 67 = MCG deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McNotice {
    /// 66 or 67.
    pub trap: u16,
    /// The group's MGID.
    pub mgid: Gid,
    /// The group's P_Key (subscribers must share it to be told).
    pub p_key: PKey,
}

/// One member port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// JoinState bits.
    pub join_state: u8,
    /// Joined by another port (ProxyJoin).
    pub proxy: bool,
}

/// A multicast group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The group's parameters as an MCMemberRecord (PortGID zero, JoinState of the creator,
    /// selectors "exactly").
    pub rec: McMemberRepr,
    /// Created by the SA and kept while its partition exists (an IPoIB broadcast group).
    pub well_known: bool,
    /// Members by PortGID.
    pub members: BTreeMap<Gid, Member>,
}

impl Group {
    fn has_full_member(&self) -> bool {
        self.members
            .values()
            .any(|m| m.join_state & (join::FULL | join::SEND_ONLY_FULL) != 0)
    }

    fn record_for(&self, port_gid: Gid, m: &Member) -> McMemberRepr {
        McMemberRepr {
            port_gid,
            join_state: m.join_state,
            proxy_join: m.proxy,
            ..self.rec
        }
    }
}

/// Parameters of an IPoIB broadcast group (OpenSM's defaults; partitions.conf flags override).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpoibParams {
    /// MTU code (default 4 = 2048).
    pub mtu: u8,
    /// Rate code (default 3 = 10 Gb/s).
    pub rate: u8,
    /// SL.
    pub sl: u8,
    /// Scope (default link-local).
    pub scope: u8,
    /// Q_Key.
    pub q_key: QKey,
    /// TClass.
    pub t_class: u8,
    /// FlowLabel.
    pub flow_label: u32,
    /// PacketLifeTime (OpenSM: subnet_timeout, default 18).
    pub packet_life: u8,
}

impl Default for IpoibParams {
    fn default() -> IpoibParams {
        IpoibParams {
            mtu: 4,
            rate: 3,
            sl: 0,
            scope: scope::LINK_LOCAL,
            q_key: IPOIB_QKEY,
            t_class: 0,
            flow_label: 0,
            packet_life: 18,
        }
    }
}

/// The IPv4 broadcast MGID of partition `pkey` in `scope`: `ff1<scope>:401b:<pkey|0x8000>::ffff:ffff`.
#[must_use]
pub fn ipoib_broadcast_mgid(pkey: PKey, scope: u8) -> Gid {
    let p = (pkey.0 | 0x8000).to_be_bytes();
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = 0x10 | (scope & 0xF);
    g[2] = 0x40;
    g[3] = 0x1b;
    g[4] = p[0];
    g[5] = p[1];
    g[12..].fill(0xff);
    Gid(g)
}

/// The rank of rate `code` by value (0 for a code that is no rate): rates compare by value,
/// never by code ([`ibmad::sa_rec::path::rate_order`]).
fn rate_value(code: u8) -> u8 {
    rate_order(code).unwrap_or(0)
}

/// The rate codes ordered by value (for "greater than" / "less than" selectors).
fn rates_by_value() -> Vec<u8> {
    (1..=23).filter_map(rate_of_order).collect()
}

/// The SA's multicast groups; see the module docs.
#[derive(Clone, Debug)]
pub struct McastDb {
    groups: BTreeMap<Gid, Group>,
    /// The groups using each MLID, in MGID order: one, or with
    /// [`McastDb::set_consolidate_ipv6_snm`] several IPv6 solicited-node groups.
    by_mlid: HashMap<Lid, Vec<Gid>>,
    notices: VecDeque<McNotice>,
    changed: bool,
    /// The counter in SA-built MGIDs.
    next_mgid: u32,
    /// The highest MLID this SA hands out (OpenSM `max_mcast_lid`).
    mlid_last: u16,
    /// New IPv6 solicited-node groups share the MLID of one that exists
    /// ([`McastDb::set_consolidate_ipv6_snm`]).
    consolidate_snm: bool,
    /// Joins to an existing group must match its components ([`McastDb::set_validations`]).
    join_validation: bool,
    /// Creates of IPoIB groups must match their partition's broadcast group
    /// ([`McastDb::set_validations`]).
    ipoib_validation: bool,
}

impl Default for McastDb {
    /// An empty database handing out MLIDs 0xC000..=0xFFFE.
    fn default() -> McastDb {
        McastDb {
            groups: BTreeMap::new(),
            by_mlid: HashMap::new(),
            notices: VecDeque::new(),
            changed: false,
            next_mgid: 0,
            mlid_last: MLID_LAST,
            consolidate_snm: false,
            join_validation: true,
            ipoib_validation: true,
        }
    }
}

/// A request to the database: the record, its ComponentMask and the requester.
#[derive(Clone, Copy, Debug)]
pub struct McRequest<'a> {
    /// The request's MCMemberRecord.
    pub rec: &'a McMemberRepr,
    /// ComponentMask.
    pub comp_mask: u64,
    /// The requester's LID (SLID).
    pub requester: Lid,
    /// The request carried the SA's (non-zero) SM_Key.
    pub trusted: bool,
    /// The subnet prefix (for SA-built MGIDs).
    pub subnet_prefix: u64,
}

impl McastDb {
    /// An empty database handing out MLIDs 0xC000..=0xFFFE.
    #[must_use]
    pub fn new() -> McastDb {
        McastDb::default()
    }

    /// Limits MLIDs to `0xC000 .. 0xC000 + count` (the smallest MulticastFDBCap).
    pub fn set_mlid_count(&mut self, count: u16) {
        self.mlid_last = MLID_FIRST.saturating_add(count.max(1) - 1).min(MLID_LAST);
    }

    /// OpenSM's `consolidate_ipv6_snm_req`: a new IPv6 solicited-node multicast group
    /// ([`is_ipv6_snm`]) takes the MLID of an existing one of the same scope and P_Key,
    /// instead of one of its own. Every IPv6 port of a fabric joins a solicited-node group of
    /// its own (the last 24 bits of its address), so a large fabric would otherwise spend an
    /// MLID per port — more than the switches' MulticastFDBCap holds. The groups stay apart
    /// for the SA; their MLID's tree reaches every member of any of them (each port gets the
    /// neighbour solicitations of its share, and filters them, as on Ethernet). Default off.
    pub fn set_consolidate_ipv6_snm(&mut self, on: bool) {
        self.consolidate_snm = on;
    }

    /// OpenSM's `mcgroup_join_validation` (`join`) and `ipoib_mcgroup_creation_validation`
    /// (`ipoib`), both TRUE by default:
    /// - a join to an existing group whose Q_Key, P_Key (same base, one of the two a full
    ///   member), TClass, SL, FlowLabel or HopLimit — those the ComponentMask gives — differ
    ///   from the group's is refused (ERR_REQ_INVALID, OpenSM's ERR 1B1A);
    /// - a create of an IPoIB group (MGID signature 0x401B or 0x601B) other than an IPv4
    ///   broadcast group needs the broadcast group of its scope and P_Key
    ///   (`ff1S:401b:PKEY::ffff:ffff`, RFC 4391) to exist and must match it in the same way
    ///   (OpenSM's ERR 1B1B, 1B1C).
    pub fn set_validations(&mut self, join: bool, ipoib: bool) {
        self.join_validation = join;
        self.ipoib_validation = ipoib;
    }

    /// The groups by MGID.
    pub fn groups(&self) -> impl Iterator<Item = &Group> {
        self.groups.values()
    }

    /// The group with this MGID — for PathRecords to a multicast DGID (its MLID, MTU, rate,
    /// SL, P_Key, …).
    #[must_use]
    pub fn lookup(&self, mgid: Gid) -> Option<&McMemberRepr> {
        self.groups.get(&mgid).map(|g| &g.rec)
    }

    /// The group using this MLID (of several, the first by MGID).
    #[must_use]
    pub fn by_mlid(&self, mlid: Lid) -> Option<&Group> {
        self.groups.get(self.by_mlid.get(&mlid)?.first()?)
    }

    /// The next trap 66/67 to report.
    #[must_use]
    pub fn poll_notice(&mut self) -> Option<McNotice> {
        self.notices.pop_front()
    }

    /// True once after any change of groups or members: the SM must re-route multicast.
    #[must_use]
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// The groups as the SM routes them ([`crate::Command::McastGroups`]): one per MLID, in
    /// MLID order; groups sharing an MLID give it every member of any of them (a port that
    /// receives in one of them receives).
    #[must_use]
    pub fn routing_groups(&self) -> Vec<McastGroup> {
        let mut by_mlid: BTreeMap<Lid, BTreeMap<Guid, bool>> = BTreeMap::new();
        for g in self.groups.values() {
            let members = by_mlid.entry(g.rec.mlid).or_default();
            for (gid, m) in &g.members {
                let receives = m.join_state & (join::FULL | join::NON_MEMBER) != 0;
                *members.entry(gid.guid()).or_default() |= receives;
            }
        }
        by_mlid
            .into_iter()
            .map(|(mlid, members)| McastGroup {
                mlid,
                members: members
                    .into_iter()
                    .map(|(port_guid, receives)| McastMember {
                        port_guid,
                        receives,
                    })
                    .collect(),
            })
            .collect()
    }

    /// With [`McastDb::set_consolidate_ipv6_snm`], the MLID of the first group (by MGID) that
    /// differs from `mgid`, an IPv6 solicited-node MGID, only in its last 24 bits (OpenSM
    /// `find_ipv6_snm_mlid`).
    fn snm_mlid(&self, mgid: Gid) -> Option<Lid> {
        if !self.consolidate_snm || !is_ipv6_snm(mgid) {
            return None;
        }
        let (mut lo, mut hi) = (mgid.0, mgid.0);
        lo[13..].fill(0);
        hi[13..].fill(0xFF);
        let (_, g) = self.groups.range(Gid(lo)..=Gid(hi)).next()?;
        Some(g.rec.mlid)
    }

    fn free_mlid(&self, wanted: Option<Lid>) -> Option<Lid> {
        if let Some(l) = wanted {
            if (MLID_FIRST..=self.mlid_last).contains(&l.0) && !self.by_mlid.contains_key(&l) {
                return Some(l);
            }
        }
        (MLID_FIRST..=self.mlid_last)
            .map(Lid)
            .find(|l| !self.by_mlid.contains_key(l))
    }

    /// A group read back from an SA database file ([`super::db`]), as OpenSM's loader:
    /// `Ok(Some(members))` restored (its members joined to a group already there with the
    /// same MLID); `Ok(None)` dropped for having no full member and not being well known;
    /// `Err(why)` skipped — the MLID is no multicast LID this SA hands out, the MGID is there
    /// with another MLID, or another group holds the MLID (unless both are IPv6
    /// solicited-node groups that [`McastDb::set_consolidate_ipv6_snm`] lets share it). No
    /// trap 66 is reported: the group is not new to the subnet's clients.
    pub fn restore_group(&mut self, g: &super::db::DbGroup) -> Result<Option<usize>, String> {
        let (mgid, mlid) = (g.rec.mgid, g.rec.mlid);
        if !(MLID_FIRST..=self.mlid_last).contains(&mlid.0) {
            return Err(format!(
                "group {mgid}: MLID {:#06x} is not one this SA hands out",
                mlid.0
            ));
        }
        match self.groups.get(&mgid) {
            Some(have) if have.rec.mlid != mlid => {
                return Err(format!(
                    "group {mgid}: already here with MLID {:#06x}, not {:#06x}",
                    have.rec.mlid.0, mlid.0
                ));
            }
            Some(_) => {}
            None => {
                let shares = self.by_mlid.get(&mlid).is_none_or(|holders| {
                    holders.iter().all(|&h| {
                        self.consolidate_snm
                            && is_ipv6_snm(mgid)
                            && is_ipv6_snm(h)
                            && h.0[..13] == mgid.0[..13]
                    })
                });
                if !shares {
                    return Err(format!(
                        "group {mgid}: MLID {:#06x} is another group's",
                        mlid.0
                    ));
                }
            }
        }
        let members: BTreeMap<Gid, Member> = g
            .members
            .iter()
            .filter(|&&(_, js, _)| js & 0xF != 0)
            .map(|&(gid, join_state, proxy)| (gid, Member { join_state, proxy }))
            .collect();
        let full = members
            .values()
            .any(|m| m.join_state & (join::FULL | join::SEND_ONLY_FULL) != 0);
        if !full && !g.well_known && !self.groups.contains_key(&mgid) {
            return Ok(None);
        }
        let n = members.len();
        if let Some(have) = self.groups.get_mut(&mgid) {
            for (gid, m) in members {
                let e = have.members.entry(gid).or_insert(Member {
                    join_state: 0,
                    proxy: m.proxy,
                });
                e.join_state |= m.join_state;
            }
        } else {
            self.index_mlid(mlid, mgid);
            self.groups.insert(
                mgid,
                Group {
                    rec: McMemberRepr {
                        port_gid: Gid::default(),
                        proxy_join: false,
                        ..g.rec
                    },
                    well_known: g.well_known,
                    members,
                },
            );
        }
        self.changed = true;
        Ok(Some(n))
    }

    fn index_mlid(&mut self, mlid: Lid, mgid: Gid) {
        let sharing = self.by_mlid.entry(mlid).or_default();
        if let Err(i) = sharing.binary_search(&mgid) {
            sharing.insert(i, mgid);
        }
    }

    fn insert(&mut self, g: Group) {
        self.index_mlid(g.rec.mlid, g.rec.mgid);
        self.notices.push_back(McNotice {
            trap: 66,
            mgid: g.rec.mgid,
            p_key: g.rec.p_key,
        });
        self.groups.insert(g.rec.mgid, g);
        self.changed = true;
    }

    fn remove(&mut self, mgid: Gid) {
        if let Some(g) = self.groups.remove(&mgid) {
            if let Some(sharing) = self.by_mlid.get_mut(&g.rec.mlid) {
                sharing.retain(|m| *m != mgid);
                if sharing.is_empty() {
                    self.by_mlid.remove(&g.rec.mlid);
                }
            }
            self.notices.push_back(McNotice {
                trap: 67,
                mgid,
                p_key: g.rec.p_key,
            });
            self.changed = true;
        }
    }

    /// Creates (or updates the parameters of) the well-known IPoIB IPv4 broadcast group of
    /// partition `pkey` (OpenSM `osm_prtn_add_mcgroup`); its members are kept. Returns its
    /// MLID, or `None` when no MLID is free.
    pub fn ensure_ipoib_broadcast(&mut self, pkey: PKey, p: &IpoibParams) -> Option<Lid> {
        self.ensure_well_known(McMemberRepr {
            mgid: ipoib_broadcast_mgid(pkey, p.scope),
            q_key: p.q_key,
            t_class: p.t_class,
            p_key: PKey(pkey.0 | 0x8000),
            mtu: p.mtu,
            rate: p.rate,
            packet_life: p.packet_life,
            sl: p.sl,
            flow_label: p.flow_label,
            scope: p.scope,
            ..McMemberRepr::default()
        })
    }

    /// Creates (or updates the parameters of) the well-known group `want` (its MGID, Q_Key,
    /// P_Key, MTU, rate, PacketLifeTime, SL, FlowLabel, TClass, HopLimit, Scope; the selectors
    /// become "exactly", the MLID is the group's or the lowest free one); its members are
    /// kept. Returns its MLID, or `None` when no MLID is free.
    pub fn ensure_well_known(&mut self, want: McMemberRepr) -> Option<Lid> {
        let rec = |mlid: Lid| McMemberRepr {
            mlid,
            mtu_selector: selector::EXACT,
            rate_selector: selector::EXACT,
            packet_life_selector: selector::EXACT,
            port_gid: Gid::default(),
            join_state: 0,
            proxy_join: false,
            ..want
        };
        if let Some(g) = self.groups.get_mut(&want.mgid) {
            let want = rec(g.rec.mlid);
            if g.rec != want || !g.well_known {
                g.rec = want;
                g.well_known = true;
                self.changed = true;
            }
            return Some(g.rec.mlid);
        }
        let mlid = self.free_mlid(None)?;
        self.insert(Group {
            rec: rec(mlid),
            well_known: true,
            members: BTreeMap::new(),
        });
        Some(mlid)
    }

    /// A new snapshot of the subnet: MLIDs limited to the smallest MulticastFDBCap of the
    /// switches; the groups the partitions pre-create ([`SaSnapshot::mcast_groups`], their
    /// PacketLifeTime the subnet_timeout, as OpenSM's) created or updated in configuration
    /// order — so the default partition's broadcast group gets MLID 0xC000, as OpenSM's — and
    /// the well-known groups of partitions no longer configured retired.
    pub fn on_snapshot(&mut self, snap: &SaSnapshot) {
        let s = &snap.subnet;
        if let Some(cap) = s
            .switches()
            .filter_map(|id| s.node(id).switch_info.map(|si| si.multicast_fdb_cap.get()))
            .filter(|&c| c > 0)
            .min()
        {
            self.set_mlid_count(cap);
        }
        let mut keep = Vec::with_capacity(snap.mcast_groups.len());
        for d in &snap.mcast_groups {
            let rec = def_record(d, snap.facts.subnet_timeout);
            keep.push(rec.mgid);
            let _ = self.ensure_well_known(rec);
        }
        self.retire_ipoib_except(&keep);
    }

    /// Forgets every membership, as OpenSM's SA does when its SM comes out of standby
    /// (`state_mgr_sa_clean`: each port's memberships deleted): groups the SA did not create
    /// go with their members (trap 67 each); the well-known (IPoIB broadcast) groups stay,
    /// empty. The members join again when the new master asks them to re-register
    /// (PortInfo.ClientReregister).
    pub fn drop_members(&mut self) {
        let gone: Vec<Gid> = self
            .groups
            .values()
            .filter(|g| !g.well_known)
            .map(|g| g.rec.mgid)
            .collect();
        for g in self.groups.values_mut().filter(|g| !g.members.is_empty()) {
            g.members.clear();
            self.changed = true;
        }
        for mgid in gone {
            self.remove(mgid);
        }
    }

    /// Drops the well-known flag of every broadcast group whose partition is not in `keep`
    /// (a partition that went away); such a group is deleted once it has no full member.
    pub fn retire_ipoib_except(&mut self, keep: &[Gid]) {
        let gone: Vec<Gid> = self
            .groups
            .values()
            .filter(|g| g.well_known && !keep.contains(&g.rec.mgid))
            .map(|g| g.rec.mgid)
            .collect();
        for mgid in gone {
            if let Some(g) = self.groups.get_mut(&mgid) {
                g.well_known = false;
                if !g.has_full_member() {
                    self.remove(mgid);
                }
            }
        }
    }

    /// SubnAdmSet(MCMemberRecord): join, creating the group if needed (see the module docs).
    pub fn join(
        &mut self,
        ports: &impl McastPorts,
        req: &McRequest<'_>,
    ) -> Result<McMemberRepr, Status> {
        let r = req.rec;
        let mask = req.comp_mask;
        if mask & JOIN_COMP_MASK != JOIN_COMP_MASK {
            return Err(status::REQ_INSUFFICIENT_COMPONENTS);
        }
        let port = ports
            .by_guid(r.port_gid.guid())
            .ok_or(status::REQ_INVALID)?;
        let requester = ports.by_lid(req.requester).ok_or(status::REQ_INVALID)?;
        let proxy = requester.guid != port.guid;
        if proxy && !ports.share_pkey(port.guid, requester.guid) {
            return Err(status::REQ_INVALID);
        }
        if r.join_state & 0xF == 0 {
            return Err(status::REQ_INVALID);
        }
        let created = if self.groups.contains_key(&r.mgid) {
            None
        } else {
            Some(self.create(ports, req, &port)?)
        };
        let mgid = created.as_ref().map_or(r.mgid, |g| g.rec.mgid);
        let Some(group) = created.as_ref().or_else(|| self.groups.get(&mgid)) else {
            return Err(status::REQ_INVALID);
        };
        // o15-0.2.4: the components given must match the group (MTU and rate selectors, as
        // OpenSM; the others too with `mcgroup_join_validation`), the group must be realisable
        // on the port, and the port in its partition.
        let others_differ =
            created.is_none() && self.join_validation && !other_fields_match(r, mask, &group.rec);
        if others_differ
            || !selectors_match(&group.rec, r, mask)
            || port.mtu_cap < group.rec.mtu
            || rate_value(port.rate) < rate_value(group.rec.rate)
            || !ports.has_pkey(port.guid, group.rec.p_key)
        {
            return Err(status::REQ_INVALID);
        }
        // o15-0.2.1: only the port itself or, for a proxy-joined member, a port of the
        // group's partition may modify a membership.
        if let Some(m) = group.members.get(&r.port_gid) {
            if !may_modify(ports, group, m, r.port_gid, &requester) {
                return Err(status::REQ_INVALID);
            }
        }
        if let Some(g) = created {
            self.insert(g);
        }
        let Some(group) = self.groups.get_mut(&mgid) else {
            return Err(status::NO_RESOURCES);
        };
        let m = group.members.entry(r.port_gid).or_insert(Member {
            join_state: 0,
            proxy,
        });
        let before = m.join_state;
        m.join_state |= r.join_state & 0xF;
        let m = *m;
        if m.join_state != before {
            self.changed = true;
        }
        Ok(group.record_for(r.port_gid, &m))
    }

    /// Builds a new group for a join to an MGID no group has (checks of a create).
    fn create(
        &mut self,
        ports: &impl McastPorts,
        req: &McRequest<'_>,
        port: &PortFacts,
    ) -> Result<Group, Status> {
        let r = req.rec;
        let mask = req.comp_mask;
        // o15-0.1.9: a create needs a full member.
        if r.join_state & (join::FULL | join::SEND_ONLY_FULL) == 0 {
            return Err(status::REQ_INVALID);
        }
        if mask & CREATE_COMP_MASK != CREATE_COMP_MASK {
            return Err(status::REQ_INSUFFICIENT_COMPONENTS);
        }
        let mut rec = McMemberRepr {
            port_gid: Gid::default(),
            proxy_join: false,
            ..*r
        };
        if r.mgid == Gid::default() {
            let s = if mask & comp::SCOPE != 0 {
                r.scope
            } else {
                scope::LINK_LOCAL
            };
            rec.mgid = self
                .build_mgid(s, req.subnet_prefix)
                .ok_or(status::NO_RESOURCES)?;
        } else if !mgid_is_valid(r.mgid)
            || self.ipoib_validation && !self.ipoib_create_matches(r, mask)
        {
            return Err(status::REQ_INVALID);
        }
        rec.scope = rec.mgid.0[1] & 0xF;
        rec.mtu = realise(
            mask & comp::MTU_SEL != 0 && mask & comp::MTU != 0,
            r.mtu_selector,
            r.mtu,
            port.mtu_cap,
            &[1, 2, 3, 4, 5],
        )
        .ok_or(status::REQ_INVALID)?;
        rec.rate = realise(
            mask & comp::RATE_SEL != 0 && mask & comp::RATE != 0,
            r.rate_selector,
            r.rate,
            port.rate,
            &rates_by_value(),
        )
        .ok_or(status::REQ_INVALID)?;
        if !ports.has_pkey(port.guid, r.p_key) {
            return Err(status::REQ_INVALID);
        }
        rec.mtu_selector = selector::EXACT;
        rec.rate_selector = selector::EXACT;
        rec.packet_life_selector = selector::EXACT;
        // A requested MLID if it is free, else (an IPv6 solicited-node group, consolidated)
        // its fellows' MLID, else the lowest free one: OpenSM `get_new_mlid`'s order.
        let wanted = (mask & comp::MLID != 0 && r.mlid.0 != 0)
            .then_some(r.mlid)
            .filter(|&l| self.free_mlid(Some(l)) == Some(l));
        rec.mlid = wanted
            .or_else(|| self.snm_mlid(rec.mgid))
            .or_else(|| self.free_mlid(None))
            .ok_or(status::NO_RESOURCES)?;
        Ok(Group {
            rec,
            well_known: false,
            members: BTreeMap::new(),
        })
    }

    /// `ipoib_mcgroup_creation_validation` for a create of MGID `r.mgid` (see
    /// [`McastDb::set_validations`]): true unless it is an IPoIB group other than an IPv4
    /// broadcast group whose broadcast group is missing or differs in a component given.
    fn ipoib_create_matches(&self, r: &McMemberRepr, mask: u64) -> bool {
        let g = r.mgid.0;
        let sig = u16::from_be_bytes([g[2], g[3]]);
        if sig != IPOIB_V4_SIGNATURE && sig != IPOIB_V6_SIGNATURE {
            return true;
        }
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&[0xff, 0x10 | (g[1] & 0xF), 0x40, 0x1b]);
        b[4..6].copy_from_slice(&g[4..6]);
        b[12..].fill(0xff);
        if sig == IPOIB_V4_SIGNATURE && b == g {
            return true;
        }
        self.groups
            .get(&Gid(b))
            .is_some_and(|bcast| other_fields_match(r, mask, &bcast.rec))
    }

    /// An SA-assigned MGID `ff1<scope>:a01b:<prefix>:<n>` no group uses (OpenSM
    /// `build_new_mgid`).
    fn build_mgid(&mut self, s: u8, prefix: u64) -> Option<Gid> {
        for _ in 0..1000 {
            let mut g = [0u8; 16];
            g[0] = 0xff;
            g[1] = 0x10 | (s & 0xF);
            g[2] = 0xa0;
            g[3] = 0x1b;
            g[4..12].copy_from_slice(&prefix.to_be_bytes());
            g[12..].copy_from_slice(&self.next_mgid.to_be_bytes());
            self.next_mgid = self.next_mgid.wrapping_add(1);
            if !self.groups.contains_key(&Gid(g)) {
                return Some(Gid(g));
            }
        }
        None
    }

    /// SubnAdmDelete(MCMemberRecord): leave (see the module docs). Returns the member's
    /// record with the JoinState it keeps.
    pub fn leave(
        &mut self,
        ports: &impl McastPorts,
        req: &McRequest<'_>,
    ) -> Result<McMemberRepr, Status> {
        let r = req.rec;
        if req.comp_mask & JOIN_COMP_MASK != JOIN_COMP_MASK {
            return Err(status::REQ_INSUFFICIENT_COMPONENTS);
        }
        let group = self.groups.get(&r.mgid).ok_or(status::REQ_INVALID)?;
        let m = *group.members.get(&r.port_gid).ok_or(status::REQ_INVALID)?;
        let bits = r.join_state & 0xF;
        // o15-0.1.14: some stored bit, and no bit that is not stored.
        if bits & m.join_state == 0 || bits & !m.join_state != 0 {
            return Err(status::REQ_INVALID);
        }
        let requester = ports.by_lid(req.requester).ok_or(status::REQ_INVALID)?;
        if !may_modify(ports, group, &m, r.port_gid, &requester) {
            return Err(status::REQ_INVALID);
        }
        let Some(group) = self.groups.get_mut(&r.mgid) else {
            return Err(status::REQ_INVALID);
        };
        let left = Member {
            join_state: m.join_state & !bits,
            ..m
        };
        let answer = group.record_for(r.port_gid, &left);
        if left.join_state == 0 {
            group.members.remove(&r.port_gid);
        } else {
            group.members.insert(r.port_gid, left);
        }
        self.changed = true;
        if !group.well_known && !group.has_full_member() {
            self.remove(r.mgid);
        }
        Ok(answer)
    }

    /// SubnAdmGet/GetTable(MCMemberRecord): the matching records (see the module docs).
    #[must_use]
    pub fn query(&self, ports: &impl McastPorts, req: &McRequest<'_>) -> Vec<McMemberRepr> {
        let r = req.rec;
        let mask = req.comp_mask;
        let Some(requester) = ports.by_lid(req.requester) else {
            return Vec::new();
        };
        let mut state_mask = 0u8;
        if mask & comp::SCOPE != 0 {
            state_mask |= 0xF0;
        }
        if mask & comp::JOIN_STATE != 0 {
            state_mask |= 0x0F;
        }
        let want_state = (r.scope << 4) | r.join_state;
        let mut out = Vec::new();
        for g in self.groups.values() {
            let gr = &g.rec;
            let field = |bit: u64, eq: bool| mask & bit == 0 || eq;
            if !(field(comp::MGID, r.mgid == gr.mgid)
                && field(comp::MLID, r.mlid == gr.mlid)
                && ports.has_pkey(requester.guid, gr.p_key)
                && field(comp::QKEY, r.q_key == gr.q_key)
                && field(comp::PKEY, r.p_key == gr.p_key)
                && field(comp::TCLASS, r.t_class == gr.t_class)
                && field(comp::SL, r.sl == gr.sl)
                && field(comp::FLOW, r.flow_label == gr.flow_label)
                && field(comp::HOP, r.hop_limit == gr.hop_limit)
                && field(comp::PROXY, r.proxy_join == gr.proxy_join)
                && selectors_match(gr, r, mask))
            {
                continue;
            }
            let state = |rec: &McMemberRepr| (rec.scope << 4) | rec.join_state;
            if mask & comp::PORT_GID != 0 {
                if let Some(m) = g.members.get(&r.port_gid) {
                    let rec = g.record_for(r.port_gid, m);
                    if state(&rec) & state_mask == want_state & state_mask {
                        out.push(rec);
                    }
                }
            } else if req.trusted {
                for (gid, m) in &g.members {
                    let rec = g.record_for(*gid, m);
                    if state(&rec) & state_mask == want_state & state_mask {
                        out.push(rec);
                    }
                }
            } else if state(gr) & state_mask == want_state & state_mask {
                out.push(*gr);
            }
        }
        if !req.trusted {
            for rec in &mut out {
                rec.port_gid = Gid::default();
                rec.join_state = 0;
                rec.proxy_join = false;
            }
        }
        out
    }
}

/// PathRecords to a multicast DGID ([`super::path`]) answer from the group.
impl super::path::McGroupView for McastDb {
    fn group(&self, mgid: &Gid) -> Option<super::path::McPathGroup> {
        let r = self.groups.get(mgid)?.rec;
        Some(super::path::McPathGroup {
            mgid: r.mgid,
            mlid: r.mlid,
            pkey: r.p_key,
            sl: r.sl,
            flow_label: r.flow_label,
            hop_limit: r.hop_limit,
            tclass: r.t_class,
            mtu: r.mtu,
            rate: r.rate,
            packet_life: r.packet_life,
        })
    }
    fn is_member(&self, mgid: &Gid, port_guid: Guid) -> bool {
        self.groups
            .get(mgid)
            .is_some_and(|g| g.members.keys().any(|gid| gid.guid() == port_guid))
    }
}

/// The group record of a partition's pre-created group `d` (PacketLifeTime `packet_life`).
fn def_record(d: &McGroupDef, packet_life: u8) -> McMemberRepr {
    McMemberRepr {
        mgid: Gid(d.mgid),
        q_key: QKey(d.q_key),
        t_class: d.tclass,
        p_key: PKey(d.pkey),
        mtu: d.mtu,
        rate: d.rate,
        packet_life,
        sl: d.sl,
        flow_label: d.flow_label,
        hop_limit: d.hop_limit,
        scope: d.scope,
        ..McMemberRepr::default()
    }
}

/// The facts of end port `guid` of node `id` with PortInfo `pi`: a CA or router port's
/// MTUCap and link rate; a switch's port 0 has no link of its own and joins at the highest
/// MTU and rate.
fn port_facts(s: &Subnet, id: NodeId, pi: &ibmad::attr::PortInfo, guid: Guid) -> PortFacts {
    let (mtu_cap, rate) = if s.node(id).is_switch() {
        (5, rate_of_order(23).unwrap_or(2))
    } else {
        let ext = pi.capability_mask.get() & CAP_HAS_EXT_SPEEDS != 0;
        (pi.mtu_cap(), port_rate(pi, ext))
    };
    PortFacts {
        guid,
        mtu_cap,
        rate,
    }
}

/// The facts of end port (`id`, `p`) in `snap`.
fn snapshot_facts(snap: &SaSnapshot, id: NodeId, p: PortNum) -> Option<PortFacts> {
    let port = snap.subnet.port(id, p)?;
    let pi = port.info?;
    Some(port_facts(&snap.subnet, id, &pi, port.guid))
}

/// The P_Key table the SM programmed on end port `guid`; `None` when it programmed none (the
/// port then counts as a full member of the default partition).
fn snapshot_pkeys(snap: &SaSnapshot, guid: Guid) -> Option<&[PKey]> {
    let at = snap.by_port_guid(guid)?;
    snap.pkeys.get(&at).map(Vec::as_slice)
}

/// The table of a port the SM programmed no P_Keys on.
const DEFAULT_FULL: [PKey; 1] = [PKey(0xFFFF)];

/// OpenSM `osm_physp_has_pkey`: a P_Key with base 0 is no check; else the table holds its
/// base, in any membership.
fn table_has(table: &[PKey], pkey: PKey) -> bool {
    pkey.0 & 0x7FFF == 0 || table.iter().any(|k| k.0 & 0x7FFF == pkey.0 & 0x7FFF)
}

/// The SA's snapshot as the multicast rules see the subnet: ports by GUID and LID, P_Keys
/// from the tables the SM programmed; two ports share a partition when they hold the same
/// base P_Key and one of them as a full member (OpenSM `match_pkey`).
impl McastPorts for SaSnapshot {
    fn by_guid(&self, guid: Guid) -> Option<PortFacts> {
        let (id, p) = self.by_port_guid(guid)?;
        snapshot_facts(self, id, p)
    }
    fn by_lid(&self, lid: Lid) -> Option<PortFacts> {
        let (id, p) = SaSnapshot::by_lid(self, lid)?;
        snapshot_facts(self, id, p)
    }
    fn has_pkey(&self, guid: Guid, pkey: PKey) -> bool {
        table_has(snapshot_pkeys(self, guid).unwrap_or(&DEFAULT_FULL), pkey)
    }
    fn share_pkey(&self, a: Guid, b: Guid) -> bool {
        let ta = snapshot_pkeys(self, a).unwrap_or(&DEFAULT_FULL);
        let tb = snapshot_pkeys(self, b).unwrap_or(&DEFAULT_FULL);
        ta.iter().any(|x| {
            x.0 & 0x7FFF != 0
                && tb
                    .iter()
                    .any(|y| x.0 & 0x7FFF == y.0 & 0x7FFF && (x.0 | y.0) & 0x8000 != 0)
        })
    }
}

/// The MCMemberRecord arm of the SA: SubnAdmSet joins (creating the group if needed),
/// SubnAdmDelete leaves, Get/GetTable query (see the module docs); other methods are not
/// supported.
pub fn handle(snap: &SaSnapshot, db: &mut McastDb, q: &SaQuery<'_>) -> Answer {
    let Ok(rec) = McMemberRepr::parse(q.record) else {
        return Answer::Status(status::REQ_INVALID);
    };
    let req = McRequest {
        rec: &rec,
        comp_mask: q.comp_mask,
        requester: q.meta.slid,
        trusted: q.trusted,
        subnet_prefix: snap.facts.subnet_prefix,
    };
    let one = |r: Result<McMemberRepr, Status>| match r {
        Ok(r) => records(&[r]),
        Err(s) => Answer::Status(s),
    };
    match q.method {
        Method::SET => one(db.join(snap, &req)),
        Method::DELETE => one(db.leave(snap, &req)),
        Method::GET | Method::GET_TABLE => records(&db.query(snap, &req)),
        _ => Answer::unsupported(),
    }
}

/// Records as an [`Answer`] (each padded to 8 bytes).
fn records(rs: &[McMemberRepr]) -> Answer {
    let size = padded_len(RECORD_LEN);
    let mut data = vec![0u8; size * rs.len()];
    for (r, chunk) in rs.iter().zip(data.chunks_mut(size)) {
        // Every chunk holds a whole record: emit cannot fail.
        let _ = r.emit(chunk);
    }
    Answer::Records { size, data }
}

/// o15-0.2.1: the requester may modify member `m` of `g`.
fn may_modify(
    ports: &impl McastPorts,
    g: &Group,
    m: &Member,
    port_gid: Gid,
    requester: &PortFacts,
) -> bool {
    if m.proxy {
        ports.has_pkey(requester.guid, g.rec.p_key)
    } else {
        requester.guid == port_gid.guid()
    }
}

/// The MTU and rate selectors of request `r` (those in `mask`) accept group `g`.
/// The components of request `r` other than MTU and rate that `mask` gives agree with group
/// `g` (OpenSM `validate_other_comp_fields`): Q_Key, P_Key (the same base, and one of the two
/// a full member), TClass, SL, FlowLabel, HopLimit.
fn other_fields_match(r: &McMemberRepr, mask: u64, g: &McMemberRepr) -> bool {
    let given = |bit: u64| mask & bit != 0;
    let pkey_ok =
        (r.p_key.is_full_member() || g.p_key.is_full_member()) && r.p_key.base() == g.p_key.base();
    !(given(comp::QKEY) && r.q_key != g.q_key
        || given(comp::PKEY) && !pkey_ok
        || given(comp::TCLASS) && r.t_class != g.t_class
        || given(comp::SL) && r.sl != g.sl
        || given(comp::FLOW) && r.flow_label != g.flow_label
        || given(comp::HOP) && r.hop_limit != g.hop_limit)
}

fn selectors_match(g: &McMemberRepr, r: &McMemberRepr, mask: u64) -> bool {
    let check = |sel: u8, want: u8, have: u8| match sel {
        selector::GREATER => have > want,
        selector::LESS => have < want,
        selector::EXACT => have == want,
        _ => true,
    };
    (mask & comp::MTU_SEL == 0 || check(r.mtu_selector, r.mtu, g.mtu))
        && (mask & comp::RATE_SEL == 0
            || check(r.rate_selector, rate_value(r.rate), rate_value(g.rate)))
}

/// The group value of a create for an MTU or rate request: the port's own value when none is
/// given (or "largest"), else the value the selector asks for, realisable on the port
/// (`port` = its capability; `order` = the valid codes, ascending).
fn realise(given: bool, sel: u8, want: u8, port: u8, order: &[u8]) -> Option<u8> {
    let pos = |c: u8| order.iter().position(|&x| x == c);
    let port_pos = pos(port);
    if !given || sel == selector::LARGEST {
        return port_pos.map(|_| port).or_else(|| order.first().copied());
    }
    let w = pos(want)?;
    match sel {
        selector::GREATER => {
            let p = port_pos?;
            (p > w).then_some(port)
        }
        selector::LESS => {
            let below = w.checked_sub(1)?;
            let p = port_pos.unwrap_or(below);
            order.get(p.min(below)).copied()
        }
        _ => match port_pos {
            Some(p) if w > p => None,
            _ => Some(want),
        },
    }
}

/// An IPv6 solicited-node multicast MGID of IPoIB (RFC 4391: `ff1<scope>:601b:<P_Key>::1:ffXX:XXXX`,
/// the last 24 bits those of the IPv6 address), with the masks of OpenSM's
/// `match_ipv6_snm_mgid`: the transient flag, the IPv6 signature, zero bytes 6–7 and 8–10,
/// byte 11 with bit 0 set and bits 4–7 clear (bits 1–3 are not looked at), byte 12 0xFF.
#[must_use]
pub fn is_ipv6_snm(mgid: Gid) -> bool {
    let mut prefix = [0u8; 8];
    let mut id = [0u8; 8];
    prefix.copy_from_slice(&mgid.0[..8]);
    id.copy_from_slice(&mgid.0[8..]);
    u64::from_be_bytes(prefix) & 0xFF10_FFFF_0000_FFFF == 0xFF10_601B_0000_0000
        && u64::from_be_bytes(id) & 0xFFFF_FFF1_FF00_0000 == 0x0000_0001_FF00_0000
}

/// o15-0.1.5: a requested MGID is valid (IPoIB-signed MGIDs are not checked further, as
/// OpenSM).
#[must_use]
pub fn mgid_is_valid(mgid: Gid) -> bool {
    let g = mgid.0;
    if g[0] != 0xff {
        return false;
    }
    let sig = u16::from_be_bytes([g[2], g[3]]);
    if sig == IPOIB_V4_SIGNATURE || sig == IPOIB_V6_SIGNATURE {
        return true;
    }
    if g[1] & 0xE0 != 0 {
        return false;
    }
    !(sig == 0xa01b && g[1] & 0x0F == scope::LINK_LOCAL)
}

/// [`McastPorts`] over the SM's subnet model: end ports by PortGUID and by LID, every port a
/// member of the default partition (until partitions are configured, every P_Key is the
/// default one and all ports share it).
#[derive(Debug, Default)]
pub struct SubnetPorts {
    by_guid: HashMap<Guid, PortFacts>,
    by_lid: HashMap<Lid, Guid>,
}

impl SubnetPorts {
    /// Indexes the end ports of `s` that have a LID.
    #[must_use]
    pub fn new(s: &crate::Subnet) -> SubnetPorts {
        let mut out = SubnetPorts::default();
        for (id, p) in s.end_ports() {
            let Some(port) = s.port(id, p) else { continue };
            let Some(pi) = port.info else { continue };
            out.by_guid
                .insert(port.guid, port_facts(s, id, &pi, port.guid));
            if port.lid != Lid::UNASSIGNED {
                for l in 0..(1u16 << port.lmc.min(7)) {
                    out.by_lid
                        .insert(Lid(port.lid.0.wrapping_add(l)), port.guid);
                }
            }
        }
        out
    }
}

impl McastPorts for SubnetPorts {
    fn by_guid(&self, guid: Guid) -> Option<PortFacts> {
        self.by_guid.get(&guid).copied()
    }
    fn by_lid(&self, lid: Lid) -> Option<PortFacts> {
        self.by_guid.get(self.by_lid.get(&lid)?).copied()
    }
    fn has_pkey(&self, _guid: Guid, pkey: PKey) -> bool {
        pkey.0 & 0x7FFF == 0x7FFF
    }
    fn share_pkey(&self, _a: Guid, _b: Guid) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ports 1..=4 (GUID n, LID n), MTUCap 4096, 4x SDR; port 4 lacks the default P_Key.
    struct Fake;
    impl McastPorts for Fake {
        fn by_guid(&self, guid: Guid) -> Option<PortFacts> {
            (1..=4).contains(&guid.0).then_some(PortFacts {
                guid,
                mtu_cap: 5,
                rate: 3,
            })
        }
        fn by_lid(&self, lid: Lid) -> Option<PortFacts> {
            self.by_guid(Guid(u64::from(lid.0)))
        }
        fn has_pkey(&self, guid: Guid, pkey: PKey) -> bool {
            guid.0 != 4 && pkey.0 & 0x7FFF == 0x7FFF
        }
        fn share_pkey(&self, a: Guid, b: Guid) -> bool {
            a.0 != 4 && b.0 != 4
        }
    }

    const PREFIX: u64 = 0xfe80_0000_0000_0000;

    fn gid(n: u64) -> Gid {
        Gid::new(PREFIX, Guid(n))
    }

    fn mgid(last: u8) -> Gid {
        let mut g = [0u8; 16];
        g[0] = 0xff;
        g[1] = 0x15;
        g[2] = 0x12;
        g[3] = 0x34;
        g[15] = last;
        Gid(g)
    }

    fn create_rec(mgid: Gid, port: u64, state: u8) -> McMemberRepr {
        McMemberRepr {
            mgid,
            port_gid: gid(port),
            q_key: QKey(0x1234),
            p_key: PKey(0xffff),
            join_state: state,
            ..McMemberRepr::default()
        }
    }

    fn req(rec: &McMemberRepr, mask: u64, from: u16) -> McRequest<'_> {
        McRequest {
            rec,
            comp_mask: mask,
            requester: Lid(from),
            trusted: false,
            subnet_prefix: PREFIX,
        }
    }

    #[test]
    fn create_join_leave_and_delete_when_empty() {
        let mut db = McastDb::new();
        let r = create_rec(mgid(1), 1, join::FULL);
        let a = db.join(&Fake, &req(&r, CREATE_COMP_MASK, 1)).unwrap();
        assert_eq!(a.mlid, Lid(0xC000));
        assert_eq!((a.mtu_selector, a.mtu, a.rate), (selector::EXACT, 5, 3));
        assert_eq!(a.join_state, join::FULL);
        assert_eq!(db.poll_notice().map(|n| n.trap), Some(66));
        assert!(db.take_changed());
        // A join needs only MGID|PortGID|JoinState and gets the group's parameters.
        let j = McMemberRepr {
            mgid: mgid(1),
            port_gid: gid(2),
            join_state: join::NON_MEMBER,
            ..McMemberRepr::default()
        };
        let b = db.join(&Fake, &req(&j, JOIN_COMP_MASK, 2)).unwrap();
        assert_eq!((b.mlid, b.q_key), (Lid(0xC000), QKey(0x1234)));
        let routed = db.routing_groups();
        assert_eq!(routed[0].members.len(), 2);
        // The creator leaves: only a non-member is left, the group goes and its MLID is free.
        let l = db.leave(&Fake, &req(&r, JOIN_COMP_MASK, 1)).unwrap();
        assert_eq!(l.join_state, 0);
        assert!(db.lookup(mgid(1)).is_none());
        assert_eq!(db.poll_notice().map(|n| n.trap), Some(67));
        let again = db.join(&Fake, &req(&create_rec(mgid(2), 1, 1), CREATE_COMP_MASK, 1));
        assert_eq!(again.unwrap().mlid, Lid(0xC000));
    }

    #[test]
    fn c15_insufficient_components_and_invalid_creates() {
        let mut db = McastDb::new();
        let r = create_rec(mgid(1), 1, join::FULL);
        let st = |db: &mut McastDb, r: &McMemberRepr, mask: u64, from: u16| {
            db.join(&Fake, &req(r, mask, from)).unwrap_err()
        };
        assert_eq!(
            st(&mut db, &r, comp::MGID | comp::PORT_GID, 1),
            status::REQ_INSUFFICIENT_COMPONENTS
        );
        for missing in [comp::QKEY, comp::PKEY, comp::SL, comp::FLOW, comp::TCLASS] {
            assert_eq!(
                st(&mut db, &r, CREATE_COMP_MASK & !missing, 1),
                status::REQ_INSUFFICIENT_COMPONENTS
            );
        }
        // o15-0.1.9: a non-member can not create.
        let nm = create_rec(mgid(1), 1, join::NON_MEMBER);
        assert_eq!(st(&mut db, &nm, CREATE_COMP_MASK, 1), status::REQ_INVALID);
        // o15-0.1.5: bad MGIDs.
        let mut bad = r;
        bad.mgid.0[0] = 0xfa;
        assert_eq!(st(&mut db, &bad, CREATE_COMP_MASK, 1), status::REQ_INVALID);
        let mut sa_ll = r;
        sa_ll.mgid.0[1] = 0x12;
        sa_ll.mgid.0[2] = 0xa0;
        sa_ll.mgid.0[3] = 0x1b;
        assert_eq!(
            st(&mut db, &sa_ll, CREATE_COMP_MASK, 1),
            status::REQ_INVALID
        );
        let mut flags = r;
        flags.mgid.0[1] = 0x35;
        assert_eq!(
            st(&mut db, &flags, CREATE_COMP_MASK, 1),
            status::REQ_INVALID
        );
        // Unknown port, a proxy from outside the partition, JoinState 0.
        assert_eq!(
            st(&mut db, &create_rec(mgid(1), 9, 1), CREATE_COMP_MASK, 1),
            status::REQ_INVALID
        );
        assert_eq!(st(&mut db, &r, CREATE_COMP_MASK, 4), status::REQ_INVALID);
        assert_eq!(
            st(&mut db, &create_rec(mgid(1), 1, 0), CREATE_COMP_MASK, 1),
            status::REQ_INVALID
        );
        // Unrealisable MTU/rate (o15-0.1.8): > 4096, < 256, > the port's 10 Gb/s, < 2.5 Gb/s.
        let m = CREATE_COMP_MASK | comp::MTU_SEL | comp::MTU;
        let with = |f: &dyn Fn(&mut McMemberRepr)| {
            let mut x = r;
            f(&mut x);
            x
        };
        for x in [
            with(&|x| (x.mtu_selector, x.mtu) = (selector::GREATER, 5)),
            with(&|x| (x.mtu_selector, x.mtu) = (selector::LESS, 1)),
            with(&|x| (x.mtu_selector, x.mtu) = (selector::EXACT, 6)),
        ] {
            assert_eq!(st(&mut db, &x, m, 1), status::REQ_INVALID, "{x:?}");
        }
        let m = CREATE_COMP_MASK | comp::RATE_SEL | comp::RATE;
        for x in [
            with(&|x| (x.rate_selector, x.rate) = (selector::GREATER, 3)),
            with(&|x| (x.rate_selector, x.rate) = (selector::EXACT, 18)),
            with(&|x| (x.rate_selector, x.rate) = (selector::LESS, 2)),
        ] {
            assert_eq!(st(&mut db, &x, m, 1), status::REQ_INVALID, "{x:?}");
        }
        assert!(
            db.groups().next().is_none(),
            "no failed create left a group"
        );
        // Exact and "less than" values are honoured.
        let x = with(&|x| (x.mtu_selector, x.mtu) = (selector::LESS, 4));
        let a = db
            .join(
                &Fake,
                &req(&x, CREATE_COMP_MASK | comp::MTU_SEL | comp::MTU, 1),
            )
            .unwrap();
        assert_eq!(a.mtu, 3);
    }

    #[test]
    fn mgid_zero_gets_an_sa_mgid_and_requested_mlids_are_honoured() {
        let mut db = McastDb::new();
        let mut r = create_rec(Gid::default(), 1, join::FULL);
        r.mlid = Lid(0xC123);
        let a = db
            .join(&Fake, &req(&r, CREATE_COMP_MASK | comp::MLID, 1))
            .unwrap();
        assert_eq!(&a.mgid.0[..4], &[0xff, 0x12, 0xa0, 0x1b]);
        assert_eq!(&a.mgid.0[4..12], &PREFIX.to_be_bytes());
        assert_eq!(a.mlid, Lid(0xC123));
        r.scope = scope::SITE_LOCAL;
        let b = db
            .join(
                &Fake,
                &req(&r, CREATE_COMP_MASK | comp::MLID | comp::SCOPE, 1),
            )
            .unwrap();
        assert_eq!(b.mgid.0[1], 0x15);
        assert_ne!(b.mgid, a.mgid);
        assert_eq!(b.mlid, Lid(0xC000), "0xC123 is taken");
    }

    #[test]
    fn partial_leave_frees_the_mlid_exactly_when_the_group_goes() {
        // OpenSM PR #43: JoinState 0x9 then a partial leave 0x1 leaked the MLID; ~1018 cycles
        // exhausted the MLID space.
        let mut db = McastDb::new();
        db.set_mlid_count(16);
        for i in 0..2000u32 {
            let r = create_rec(mgid((i % 200) as u8), 1, join::FULL | join::SEND_ONLY_FULL);
            let a = db.join(&Fake, &req(&r, CREATE_COMP_MASK, 1)).unwrap();
            assert_eq!(a.mlid, Lid(0xC000), "cycle {i}");
            let mut l = r;
            l.join_state = join::FULL;
            let kept = db.leave(&Fake, &req(&l, JOIN_COMP_MASK, 1)).unwrap();
            assert_eq!(kept.join_state, join::SEND_ONLY_FULL);
            assert!(
                db.lookup(r.mgid).is_some(),
                "a send-only full member keeps it"
            );
            l.join_state = join::SEND_ONLY_FULL;
            db.leave(&Fake, &req(&l, JOIN_COMP_MASK, 1)).unwrap();
            assert!(db.lookup(r.mgid).is_none());
        }
        // And MLIDs run out cleanly.
        for i in 0..16u8 {
            db.join(&Fake, &req(&create_rec(mgid(i), 1, 1), CREATE_COMP_MASK, 1))
                .unwrap();
        }
        let full = db.join(
            &Fake,
            &req(&create_rec(mgid(99), 1, 1), CREATE_COMP_MASK, 1),
        );
        assert_eq!(full.unwrap_err(), status::NO_RESOURCES);
    }

    #[test]
    fn o15_0_1_14_bad_deletes_and_o15_0_2_1_modifications() {
        let mut db = McastDb::new();
        let r = create_rec(mgid(1), 1, join::FULL);
        db.join(&Fake, &req(&r, CREATE_COMP_MASK, 1)).unwrap();
        // Not a member, a bit not held, no bit at all.
        let mut x = r;
        x.port_gid = gid(2);
        assert_eq!(
            db.leave(&Fake, &req(&x, JOIN_COMP_MASK, 2)).unwrap_err(),
            status::REQ_INVALID
        );
        let mut y = r;
        y.join_state = join::FULL | join::NON_MEMBER;
        assert_eq!(
            db.leave(&Fake, &req(&y, JOIN_COMP_MASK, 1)).unwrap_err(),
            status::REQ_INVALID
        );
        // Another port may not modify a membership the port made itself...
        assert_eq!(
            db.leave(&Fake, &req(&r, JOIN_COMP_MASK, 3)).unwrap_err(),
            status::REQ_INVALID
        );
        let mut z = r;
        z.join_state = join::NON_MEMBER;
        assert_eq!(
            db.join(&Fake, &req(&z, JOIN_COMP_MASK, 3)).unwrap_err(),
            status::REQ_INVALID
        );
        // ...but a proxy-joined member may be modified by any port of the partition.
        let p = McMemberRepr {
            mgid: mgid(1),
            port_gid: gid(2),
            join_state: join::FULL,
            ..McMemberRepr::default()
        };
        let pj = db.join(&Fake, &req(&p, JOIN_COMP_MASK, 3)).unwrap();
        assert!(pj.proxy_join);
        db.leave(&Fake, &req(&p, JOIN_COMP_MASK, 1)).unwrap();
        // Rejoining adds bits.
        let mut more = r;
        more.join_state = join::NON_MEMBER;
        let a = db.join(&Fake, &req(&more, JOIN_COMP_MASK, 1)).unwrap();
        assert_eq!(a.join_state, join::FULL | join::NON_MEMBER);
        // Joining with a selector the group does not meet.
        let mut sel = more;
        (sel.mtu_selector, sel.mtu) = (selector::GREATER, 5);
        let e = db.join(&Fake, &req(&sel, JOIN_COMP_MASK | comp::MTU_SEL, 1));
        assert_eq!(e.unwrap_err(), status::REQ_INVALID);
        // A port outside the group's partition can not join.
        let mut out = more;
        out.port_gid = gid(4);
        assert_eq!(
            db.join(&Fake, &req(&out, JOIN_COMP_MASK, 4)).unwrap_err(),
            status::REQ_INVALID
        );
        assert_eq!(
            db.leave(&Fake, &req(&create_rec(mgid(7), 1, 1), JOIN_COMP_MASK, 1))
                .unwrap_err(),
            status::REQ_INVALID
        );
    }

    #[test]
    fn queries_match_the_mask_and_hide_members_from_untrusted_requesters() {
        let mut db = McastDb::new();
        db.ensure_ipoib_broadcast(PKey(0x7fff), &IpoibParams::default());
        let bcast = ipoib_broadcast_mgid(PKey(0x7fff), scope::LINK_LOCAL);
        assert_eq!(bcast.to_string(), "ff12:401b:ffff:0000:0000:0000:ffff:ffff");
        for p in 1..=3 {
            let j = McMemberRepr {
                mgid: bcast,
                port_gid: gid(p),
                join_state: join::FULL,
                ..McMemberRepr::default()
            };
            db.join(&Fake, &req(&j, JOIN_COMP_MASK, p as u16)).unwrap();
        }
        db.join(&Fake, &req(&create_rec(mgid(1), 1, 1), CREATE_COMP_MASK, 1))
            .unwrap();
        let any = McMemberRepr::default();
        let all = db.query(&Fake, &req(&any, 0, 2));
        assert_eq!(all.len(), 2);
        assert!(all
            .iter()
            .all(|r| r.port_gid == Gid::default() && r.join_state == 0));
        let b = &all.iter().find(|r| r.mgid == bcast).unwrap();
        assert_eq!(
            (b.mlid, b.q_key, b.mtu, b.rate, b.p_key),
            (Lid(0xC000), IPOIB_QKEY, 4, 3, PKey(0xffff))
        );
        assert_eq!(
            (b.mtu_selector, b.rate_selector),
            (selector::EXACT, selector::EXACT)
        );
        let trusted = McRequest {
            trusted: true,
            ..req(&any, 0, 2)
        };
        assert_eq!(db.query(&Fake, &trusted).len(), 4, "one per member");
        let by_port = McMemberRepr {
            port_gid: gid(3),
            ..McMemberRepr::default()
        };
        let t = McRequest {
            trusted: true,
            ..req(&by_port, comp::PORT_GID, 2)
        };
        let mine = db.query(&Fake, &t);
        assert_eq!(mine.len(), 1);
        assert_eq!((mine[0].port_gid, mine[0].join_state), (gid(3), join::FULL));
        let by_mlid = McMemberRepr {
            mlid: Lid(0xC001),
            ..McMemberRepr::default()
        };
        assert_eq!(
            db.query(&Fake, &req(&by_mlid, comp::MLID, 2))[0].mgid,
            mgid(1)
        );
        // The partition filter: port 4 sees nothing.
        assert!(db.query(&Fake, &req(&any, 0, 4)).is_empty());
        // Well known: the broadcast group stays when its last member leaves.
        for p in 1..=3 {
            let j = McMemberRepr {
                mgid: bcast,
                port_gid: gid(p),
                join_state: join::FULL,
                ..McMemberRepr::default()
            };
            db.leave(&Fake, &req(&j, JOIN_COMP_MASK, p as u16)).unwrap();
        }
        assert!(db.lookup(bcast).is_some());
        use crate::sa::path::McGroupView;
        db.join(
            &Fake,
            &req(
                &McMemberRepr {
                    mgid: bcast,
                    port_gid: gid(2),
                    join_state: 1,
                    ..McMemberRepr::default()
                },
                JOIN_COMP_MASK,
                2,
            ),
        )
        .unwrap();
        let pg = McGroupView::group(&db, &bcast).unwrap();
        assert_eq!(
            (pg.mlid, pg.mtu, pg.rate, pg.pkey),
            (Lid(0xC000), 4, 3, PKey(0xffff))
        );
        assert!(db.is_member(&bcast, Guid(2)) && !db.is_member(&bcast, Guid(3)));
        db.retire_ipoib_except(&[]);
        assert!(db.lookup(bcast).is_some(), "a full member keeps it");
        db.leave(
            &Fake,
            &req(
                &McMemberRepr {
                    mgid: bcast,
                    port_gid: gid(2),
                    join_state: 1,
                    ..McMemberRepr::default()
                },
                JOIN_COMP_MASK,
                2,
            ),
        )
        .unwrap();
        assert!(db.lookup(bcast).is_none());
    }

    #[test]
    fn dropping_members_keeps_the_broadcast_group_empty_and_deletes_the_rest() {
        let mut db = McastDb::new();
        db.ensure_ipoib_broadcast(PKey(0x7fff), &IpoibParams::default());
        let bcast = ipoib_broadcast_mgid(PKey(0x7fff), scope::LINK_LOCAL);
        let j = McMemberRepr {
            mgid: bcast,
            port_gid: gid(2),
            join_state: join::FULL,
            ..McMemberRepr::default()
        };
        db.join(&Fake, &req(&j, JOIN_COMP_MASK, 2)).unwrap();
        let made = db
            .join(&Fake, &req(&create_rec(mgid(1), 1, 1), CREATE_COMP_MASK, 1))
            .unwrap();
        while db.poll_notice().is_some() {}
        let _ = db.take_changed();
        db.drop_members();
        assert!(db.lookup(mgid(1)).is_none());
        assert_eq!(
            db.poll_notice().map(|n| (n.trap, n.mgid)),
            Some((67, mgid(1)))
        );
        let b = db.groups().find(|g| g.rec.mgid == bcast).unwrap();
        assert!(b.well_known && b.members.is_empty());
        assert!(db.take_changed(), "the SM re-routes multicast");
        assert!(db.routing_groups().iter().all(|g| g.members.is_empty()));
        // The deleted group's MLID is free again.
        let again = db
            .join(&Fake, &req(&create_rec(mgid(2), 1, 1), CREATE_COMP_MASK, 1))
            .unwrap();
        assert_eq!(again.mlid, made.mlid);
    }

    /// An IPv6 solicited-node MGID `ff1<scope>:601b:<pkey>::1:ff<low>` (low: 24 bits).
    fn snm(scope: u8, pkey: u16, low: u32) -> Gid {
        let mut g = [0u8; 16];
        g[0] = 0xff;
        g[1] = 0x10 | scope;
        g[2] = 0x60;
        g[3] = 0x1b;
        g[4..6].copy_from_slice(&pkey.to_be_bytes());
        g[11] = 1;
        g[12] = 0xff;
        g[13..].copy_from_slice(&low.to_be_bytes()[1..]);
        Gid(g)
    }

    #[test]
    fn ipv6_solicited_node_mgids_are_recognised_by_openssms_masks() {
        assert!(is_ipv6_snm(snm(2, 0xffff, 0x12_3456)));
        assert!(is_ipv6_snm(snm(5, 0x8001, 0)));
        let cases: [(usize, u8); 6] = [
            (1, 0x02),  // not transient
            (2, 0x40),  // the IPv4 signature 401b
            (7, 0x01),  // bytes 6-7 not zero
            (10, 0x01), // bytes 8-10 not zero
            (11, 0x11), // byte 11: bit 4 set
            (12, 0xfe), // byte 12 not 0xff
        ];
        for (at, byte) in cases {
            let mut g = snm(2, 0xffff, 1);
            g.0[at] = byte;
            assert!(!is_ipv6_snm(g), "byte {at} = {byte:#x}");
        }
        // Byte 11 with the bits the mask ignores (1-3) set still matches, as OpenSM's.
        let mut g = snm(2, 0xffff, 1);
        g.0[11] = 0x0f;
        assert!(is_ipv6_snm(g));
        assert!(!is_ipv6_snm(mgid(1)));
    }

    /// `consolidate_ipv6_snm_req`: solicited-node groups of one scope and P_Key share the
    /// first one's MLID and are routed as one group; other groups, other scopes and P_Keys
    /// get MLIDs of their own; the shared MLID is freed only with the last of its groups.
    /// Without the option every group has its own.
    #[test]
    fn consolidated_ipv6_snm_groups_share_an_mlid_until_the_last_goes() {
        let create = |db: &mut McastDb, g: Gid, port: u64| {
            db.join(
                &Fake,
                &req(
                    &create_rec(g, port, join::FULL),
                    CREATE_COMP_MASK,
                    port as u16,
                ),
            )
            .unwrap()
            .mlid
        };
        // No broadcast groups here: their IPoIB creation checks are tested on their own.
        let mut off = McastDb::new();
        off.set_validations(true, false);
        assert_eq!(create(&mut off, snm(2, 0xffff, 1), 1), Lid(0xC000));
        assert_eq!(create(&mut off, snm(2, 0xffff, 2), 2), Lid(0xC001));

        let mut db = McastDb::new();
        db.set_validations(true, false);
        db.set_consolidate_ipv6_snm(true);
        let shared = create(&mut db, snm(2, 0xffff, 1), 1);
        assert_eq!(shared, Lid(0xC000));
        assert_eq!(create(&mut db, snm(2, 0xffff, 2), 2), shared);
        assert_eq!(create(&mut db, snm(2, 0xffff, 0xab_cdef), 3), shared);
        assert_eq!(create(&mut db, snm(5, 0xffff, 1), 1), Lid(0xC001));
        assert_eq!(create(&mut db, snm(2, 0x8001, 1), 1), Lid(0xC002));
        assert_eq!(create(&mut db, mgid(7), 1), Lid(0xC003));
        // A requested MLID that is free is still honoured (OpenSM's order).
        let mut want = create_rec(snm(2, 0xffff, 4), 1, join::FULL);
        want.mlid = Lid(0xC010);
        let got = db.join(&Fake, &req(&want, CREATE_COMP_MASK | comp::MLID, 1));
        assert_eq!(got.unwrap().mlid, Lid(0xC010));
        // Four groups, each its own record and notice, one routed group on the shared MLID
        // with every member of the three.
        assert_eq!(db.groups().filter(|g| g.rec.mlid == shared).count(), 3);
        let routed = db.routing_groups();
        assert_eq!(routed.len(), 5, "{routed:?}");
        let on_shared = routed.iter().find(|g| g.mlid == shared).unwrap();
        let ports: Vec<u64> = on_shared.members.iter().map(|m| m.port_guid.0).collect();
        assert_eq!(ports, [1, 2, 3]);
        assert!(on_shared.members.iter().all(|m| m.receives));
        assert_eq!(
            db.by_mlid(shared).map(|g| g.rec.mgid),
            Some(snm(2, 0xffff, 1))
        );
        // The groups leave one by one; the MLID stays taken while any of them is left.
        while db.poll_notice().is_some() {}
        for (i, (low, port)) in [(1, 1), (2, 2), (0xab_cdef, 3)].into_iter().enumerate() {
            let r = create_rec(snm(2, 0xffff, low), port, join::FULL);
            db.leave(&Fake, &req(&r, JOIN_COMP_MASK, port as u16))
                .unwrap();
            assert_eq!(db.poll_notice().map(|n| n.trap), Some(67));
            let probe = create(&mut db, mgid(20 + i as u8), 1);
            while db.poll_notice().is_some() {}
            if i < 2 {
                assert_ne!(probe, shared, "MLID reused while a group holds it");
                assert!(db.by_mlid(shared).is_some());
            } else {
                assert_eq!(probe, shared, "MLID not freed with the last group");
            }
        }
    }

    /// `mcgroup_join_validation` (default on): a join to an existing group whose given Q_Key,
    /// P_Key, TClass, SL, FlowLabel or HopLimit differ is refused; P_Keys match by base when
    /// one of the two is a full member. Off, such joins are taken.
    #[test]
    fn joins_must_match_the_groups_other_components() {
        for validate in [true, false] {
            let mut db = McastDb::new();
            db.set_validations(validate, true);
            let r = create_rec(mgid(1), 1, join::FULL);
            db.join(&Fake, &req(&r, CREATE_COMP_MASK, 1)).unwrap();
            let base = McMemberRepr {
                mgid: mgid(1),
                port_gid: gid(2),
                join_state: join::FULL,
                ..McMemberRepr::default()
            };
            let tries: [(u64, McMemberRepr, bool); 6] = [
                (
                    comp::QKEY,
                    McMemberRepr {
                        q_key: QKey(0x1234),
                        ..base
                    },
                    true,
                ),
                (
                    comp::QKEY,
                    McMemberRepr {
                        q_key: QKey(0x9999),
                        ..base
                    },
                    false,
                ),
                (
                    comp::PKEY,
                    McMemberRepr {
                        p_key: PKey(0x7fff),
                        ..base
                    },
                    true,
                ),
                (
                    comp::PKEY,
                    McMemberRepr {
                        p_key: PKey(0x8001),
                        ..base
                    },
                    false,
                ),
                (comp::SL, McMemberRepr { sl: 3, ..base }, false),
                (
                    comp::HOP,
                    McMemberRepr {
                        hop_limit: 9,
                        ..base
                    },
                    false,
                ),
            ];
            for (bit, j, ok) in tries {
                let got = db.join(&Fake, &req(&j, JOIN_COMP_MASK | bit, 2));
                assert_eq!(
                    got.is_ok(),
                    ok || !validate,
                    "validate {validate}, {j:?}: {got:?}"
                );
                if !validate || !ok {
                    continue;
                }
                assert_eq!(got.unwrap().q_key, QKey(0x1234), "the group's parameters");
            }
        }
    }

    /// `ipoib_mcgroup_creation_validation` (default on): creating an IPoIB group other than an
    /// IPv4 broadcast group needs its partition's broadcast group, and the given components
    /// must match it; the broadcast group itself may be created; off, anything goes.
    #[test]
    fn ipoib_groups_are_created_only_beside_a_matching_broadcast_group() {
        let ipoib = |sig: u16, last: u8| {
            let mut g = [0u8; 16];
            g[..2].copy_from_slice(&[0xff, 0x12]);
            g[2..4].copy_from_slice(&sig.to_be_bytes());
            g[4..6].copy_from_slice(&[0xff, 0xff]);
            g[15] = last;
            Gid(g)
        };
        let make = |db: &mut McastDb, mgid: Gid, q_key: u32| {
            let r = McMemberRepr {
                q_key: QKey(q_key),
                ..create_rec(mgid, 1, join::FULL)
            };
            db.join(&Fake, &req(&r, CREATE_COMP_MASK, 1))
                .map(|a| a.mlid)
        };
        let mut db = McastDb::new();
        // No broadcast group of P_Key 0xffff yet: an IPv6 or IPv4 group is refused.
        assert_eq!(
            make(&mut db, ipoib(0x601b, 7), 0x0b1b),
            Err(status::REQ_INVALID)
        );
        assert_eq!(
            make(&mut db, ipoib(0x401b, 7), 0x0b1b),
            Err(status::REQ_INVALID)
        );
        // Other signatures are not IPoIB's business.
        assert!(make(&mut db, mgid(9), 0x1234).is_ok());
        // The broadcast group itself may be created by a client.
        let bcast = ipoib_broadcast_mgid(PKey(0xffff), scope::LINK_LOCAL);
        assert!(make(&mut db, bcast, 0x0b1b).is_ok());
        // Now groups of its partition that match it are, others not.
        assert!(make(&mut db, ipoib(0x601b, 7), 0x0b1b).is_ok());
        assert_eq!(
            make(&mut db, ipoib(0x601b, 8), 0x1111),
            Err(status::REQ_INVALID)
        );
        let mut off = McastDb::new();
        off.set_validations(true, false);
        assert!(make(&mut off, ipoib(0x601b, 7), 0x1111).is_ok());
    }
}

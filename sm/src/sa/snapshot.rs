//! [`SaSnapshot`]: the immutable picture of the subnet the SA answers Get/GetTable from.
//!
//! The SM builds one at the end of every heavy sweep that brought the subnet up
//! ([`crate::Sm::sa_snapshot`]) and the owner hands it to the SA as an `Arc`
//! ([`super::Sa::set_snapshot`]); a query never waits for a sweep and never sees half of one:
//! until the next snapshot replaces it, every answer comes from the same sweep. Nothing in it
//! is rebuilt per query; the indexes are made once here.
//!
//! # What is in it, for every record owner
//!
//! | field | what | used by |
//! |---|---|---|
//! | [`SaSnapshot::subnet`] | nodes, ports (PortInfo as last read or acknowledged, LID, LMC), links | every record |
//! | [`SaSnapshot::routes`] | the routing run's [`Routes`]: unicast LFTs, `path_sl` (PathRecord SL), the engine's SL-to-VL / VLArb | LFTRecord, PathRecord (B) |
//! | [`SaSnapshot::qos`] | per node, the SL-to-VL and VLArbitration tables the SM programmed and the node acknowledged ([`KnownQos`]) | SL2VL / VLArb records |
//! | [`SaSnapshot::pkeys`] | per end port, the P_Key table the SM programmed (empty until partitions, engineer D, fill it) | P_KeyTableRecord, PathRecord P_Key checks, MCMemberRecord |
//! | [`SaSnapshot::mcast_groups`] | the multicast groups the partitions pre-create (IPoIB broadcast groups, `mgid=` lines), as [`crate::partition`] resolved them | MCMemberRecord ([`super::mcmember::McastDb::on_snapshot`]) |
//! | [`SaSnapshot::sms`] | this SM and the other SMs the sweep found | SMInfoRecord |
//! | [`SaSnapshot::facts`] | configuration facts: subnet prefix, subnet_timeout, LMC, packet life time, SM_Key, SM LID, … | ClassPortInfo, PathRecord, PortInfoRecord |
//! | [`SaSnapshot::path`] | the PathRecord index: end ports, and per (switch, destination LID) the MTU, rate and hops of the routed path ([`PathIndex`]) | PathRecord, MultiPathRecord (B) |
//! | [`SaSnapshot::qos_policy`] | the QoS policy (`qos_policy_file`) as parsed, applied with `qos` | PathRecord (B) |
//!
//! The multicast forwarding tables (MFTRecord) are not in the snapshot: a multicast pass
//! changes them between sweeps (after every join), so the SA holds them apart
//! ([`super::Sa::set_mfts`], from [`crate::Sm::mfts`]).
//!
//! Indexes: [`SaSnapshot::by_lid`] maps every LID of an end port's LMC range to (node, port);
//! [`SaSnapshot::by_port_guid`] a port GUID to (node, port) — a switch's GUID to its port 0.
//!
//! To add a part: give it a field with a neutral default (empty) so that the SM can build a
//! snapshot without it, fill it in [`SaSnapshot::build`] from [`SnapshotInput`], and write the
//! row above.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use ibmad::{Guid, Lid, PKey, PortNum, SmState};

use crate::qos::policy::QosPolicy;
use crate::qos::program::KnownQos;
use crate::role::RemoteSm;
use crate::routing::Routes;
use crate::sa::path::PathIndex;
use crate::subnet::{NodeId, Subnet};

/// Configuration facts the SA reports or computes with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConfigFacts {
    /// `subnet_prefix`: the GID prefix of every port.
    pub subnet_prefix: u64,
    /// `subnet_timeout` (4.096 µs × 2^n).
    pub subnet_timeout: u8,
    /// `lmc`.
    pub lmc: u8,
    /// `packet_life_time`.
    pub packet_life_time: u8,
    /// `sm_key` (SMInfo; not the SA's key).
    pub sm_key: u64,
    /// This SM's LID.
    pub sm_lid: Lid,
    /// `max_op_vls`.
    pub max_op_vls: u8,
    /// `qos`.
    pub qos: bool,
}

/// One SM of the subnet, for SMInfoRecord.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmEntry {
    /// Its port GUID.
    pub guid: Guid,
    /// Its LID (0 if not known).
    pub lid: Lid,
    /// SMInfo.SM_Key as the SM reports it (this SM's own; 0 for others, whose key a
    /// GetResp does not reveal to a non-master).
    pub sm_key: u64,
    /// SMInfo.ActCount.
    pub act_count: u32,
    /// SMInfo.Priority.
    pub priority: u8,
    /// SMInfo.SMState.
    pub state: SmState,
}

/// P_Key tables per end port: `(node, port)` → the table's entries in index order. A port
/// absent from the map has no table the SM knows of.
pub type PKeyTables = BTreeMap<(NodeId, PortNum), Vec<PKey>>;

/// Multicast forwarding tables per switch, as the last multicast pass computed them
/// ([`crate::mcast::Mfts`]); an MLID absent from a switch's table forwards nowhere.
pub type Mfts = crate::mcast::Mfts;

/// What [`SaSnapshot::build`] takes (borrowed from the SM).
#[derive(Clone, Copy)]
pub struct SnapshotInput<'a> {
    /// Heavy sweeps so far (the snapshot's generation).
    pub generation: u64,
    /// The subnet the sweep brought up.
    pub subnet: &'a Subnet,
    /// Its routes (shared, not copied).
    pub routes: Option<&'a Arc<Routes>>,
    /// The QoS tables node `id` is known to hold.
    pub known_qos: &'a dyn Fn(NodeId) -> Option<&'a KnownQos>,
    /// This SM.
    pub own: SmEntry,
    /// The other SMs found.
    pub others: &'a [RemoteSm],
    /// Configuration facts.
    pub facts: ConfigFacts,
    /// The QoS policy, if one is configured.
    pub qos_policy: Option<&'a QosPolicy>,
}

/// The SA's picture of the subnet; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct SaSnapshot {
    /// Heavy sweeps the SM had run when it built this snapshot.
    pub generation: u64,
    /// The subnet model.
    pub subnet: Subnet,
    /// The routes (`None` if routing produced none), shared with the SM.
    pub routes: Option<Arc<Routes>>,
    /// Per node (index = [`NodeId`]): the SL-to-VL / VLArb tables it is known to hold.
    pub qos: Vec<Option<KnownQos>>,
    /// P_Key tables (filled by partition programming).
    pub pkeys: PKeyTables,
    /// The multicast groups the partitions pre-create (filled by the SM from its partition
    /// configuration).
    pub mcast_groups: Vec<crate::partition::McGroupDef>,
    /// Each partition's P_Key (15 bits) and PathRecord SL ([`crate::partition::Partition::sl`],
    /// filled by the SM from its partition configuration).
    pub partition_sls: Vec<(u16, u8)>,
    /// The SMs: this one first.
    pub sms: Vec<SmEntry>,
    /// Configuration facts.
    pub facts: ConfigFacts,
    /// The PathRecord index (empty without routes), built at its first use ([`SaSnapshot::path`]).
    path: OnceLock<PathIndex>,
    /// The QoS policy, if one is configured.
    pub qos_policy: Option<QosPolicy>,
    by_lid: Vec<Option<(NodeId, PortNum)>>,
    by_port_guid: HashMap<Guid, (NodeId, PortNum)>,
}

impl SaSnapshot {
    /// Builds a snapshot (copies what it needs from `inp`) and its indexes.
    #[must_use]
    pub fn build(inp: &SnapshotInput<'_>) -> SaSnapshot {
        let subnet = inp.subnet.clone();
        let mut by_lid: Vec<Option<(NodeId, PortNum)>> = Vec::new();
        let mut by_port_guid = HashMap::new();
        for (id, p) in subnet.end_ports() {
            let Some(port) = subnet.port(id, p) else {
                continue;
            };
            by_port_guid.insert(port.guid, (id, p));
            if port.lid == Lid::UNASSIGNED || port.lid.0 >= 0xC000 {
                continue;
            }
            let base = usize::from(port.lid.0);
            let n = 1usize << port.lmc.min(7);
            let top = (base + n).min(0xC000);
            if by_lid.len() < top {
                by_lid.resize(top, None);
            }
            for slot in by_lid.iter_mut().take(top).skip(base) {
                *slot = Some((id, p));
            }
        }
        let qos: Vec<Option<KnownQos>> = subnet
            .node_ids()
            .map(|id| (inp.known_qos)(id).cloned())
            .collect();
        let mut sms = vec![inp.own];
        sms.extend(inp.others.iter().map(|r| {
            SmEntry {
                guid: r.guid,
                lid: by_port_guid
                    .get(&r.guid)
                    .map_or(Lid::UNASSIGNED, |&(n, p)| subnet.lid_of(n, p)),
                sm_key: 0,
                act_count: r.act_count,
                priority: r.priority,
                state: r.state,
            }
        }));
        SaSnapshot {
            generation: inp.generation,
            routes: inp.routes.cloned(),
            qos,
            pkeys: PKeyTables::new(),
            mcast_groups: Vec::new(),
            partition_sls: Vec::new(),
            sms,
            facts: inp.facts,
            path: OnceLock::new(),
            qos_policy: inp.qos_policy.cloned(),
            by_lid,
            by_port_guid,
            subnet,
        }
    }

    /// The PathRecord index of this snapshot's subnet and LFTs (empty without routes). Built at
    /// the first call (every later call, from any thread, shares it), so a sweep reaches SUBNET
    /// UP without waiting for it; [`SaSnapshot::warm`] builds it ahead of the first query.
    pub fn path(&self) -> &PathIndex {
        self.path.get_or_init(|| {
            self.routes.as_ref().map_or_else(PathIndex::default, |r| {
                let sl2vl = |n: NodeId, i: PortNum, o: PortNum| {
                    self.qos.get(n.idx())?.as_ref()?.sl2vl(i, o)
                };
                PathIndex::build(&self.subnet, &r.lfts, Some(&sl2vl))
            })
        })
    }

    /// Builds the indexes built at first use ([`SaSnapshot::path`]) now.
    pub fn warm(&self) {
        let _ = self.path();
    }

    /// True once the indexes built at first use are built ([`SaSnapshot::warm`]).
    #[must_use]
    pub fn is_warm(&self) -> bool {
        self.path.get().is_some()
    }

    /// The end port that owns `lid` (any LID of its LMC range).
    #[must_use]
    pub fn by_lid(&self, lid: Lid) -> Option<(NodeId, PortNum)> {
        self.by_lid.get(usize::from(lid.0)).copied().flatten()
    }

    /// The end port with this port GUID (a switch's: its port 0).
    #[must_use]
    pub fn by_port_guid(&self, guid: Guid) -> Option<(NodeId, PortNum)> {
        self.by_port_guid.get(&guid).copied()
    }

    /// Every end port's GUID (a switch's: its port 0), in GUID order.
    #[must_use]
    pub fn port_guids(&self) -> Vec<Guid> {
        let mut v: Vec<Guid> = self.by_port_guid.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Every end port with a LID, in LID order: (base LID, node, port).
    pub fn lid_ports(&self) -> impl Iterator<Item = (Lid, NodeId, PortNum)> + '_ {
        self.by_lid.iter().enumerate().filter_map(move |(l, e)| {
            let (n, p) = (*e)?;
            let lid = Lid(u16::try_from(l).ok()?);
            (self.subnet.port(n, p)?.lid == lid).then_some((lid, n, p))
        })
    }

    /// The QoS tables node `id` is known to hold.
    #[must_use]
    pub fn known_qos(&self, id: NodeId) -> Option<&KnownQos> {
        self.qos.get(id.idx()).and_then(Option::as_ref)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lid::{assign_lids, Guid2Lid, LidConfig};
    use crate::subnet::Node;
    use ibmad::NodeType;

    /// A switch with two CAs, LIDs assigned (LMC `lmc`).
    pub(crate) fn small(lmc: u8) -> Subnet {
        let mut s = Subnet::new();
        let sw = s.add_active_node(Node {
            dr_path: ibmad::DrPath::local(),
            ..Node::new(Guid(0x100), NodeType::SWITCH, 4, "sw")
        });
        for i in 1..=2u8 {
            let ca = s.add_active_node(Node::new(
                Guid(0x200 * u64::from(i)),
                NodeType::CA,
                1,
                &format!("ca{i}"),
            ));
            s.connect_active((sw, PortNum(i)), (ca, PortNum(1)));
        }
        assign_lids(
            &mut s,
            &LidConfig {
                lmc,
                ..LidConfig::default()
            },
            &Guid2Lid::default(),
        )
        .unwrap();
        s
    }

    /// A snapshot of `s` with this SM (GUID 0x100, LID 1) as master.
    pub(crate) fn snap(s: &Subnet) -> SaSnapshot {
        let none = |_| None;
        SaSnapshot::build(&SnapshotInput {
            generation: 1,
            subnet: s,
            routes: None,
            known_qos: &none,
            own: SmEntry {
                guid: Guid(0x100),
                lid: Lid(1),
                sm_key: 1,
                act_count: 0,
                priority: 0,
                state: SmState::MASTER,
            },
            others: &[],
            facts: ConfigFacts::default(),
            qos_policy: None,
        })
    }

    #[test]
    fn indexes_cover_lmc_ranges_and_guids() {
        let s = small(1);
        let sn = snap(&s);
        let ports: Vec<_> = sn.lid_ports().collect();
        assert_eq!(ports.len(), 3);
        for (lid, n, p) in ports {
            assert_eq!(sn.by_lid(lid), Some((n, p)));
            if !s.node(n).is_switch() {
                assert_eq!(sn.by_lid(Lid(lid.0 + 1)), Some((n, p)), "LMC 1: two LIDs");
            }
            let g = s.port(n, p).unwrap().guid;
            assert_eq!(sn.by_port_guid(g), Some((n, p)));
        }
        assert_eq!(sn.by_lid(Lid(0)), None);
        assert_eq!(sn.by_lid(Lid(0xBFFF)), None);
        assert_eq!(sn.by_port_guid(Guid(0x999)), None);
        assert_eq!(sn.sms.len(), 1);
        assert!(sn.known_qos(NodeId(0)).is_none());
    }
}

//! Incremental heavy sweeps: the discovery walk of a heavy sweep replayed over the model the
//! last good sweep built, re-reading only what the change can have touched.
//!
//! A heavy sweep that follows a good one does not read the whole fabric again. It runs the
//! same directed-route walk as a cold discovery ([`crate::discovery::Discovery`]), so the new
//! model is built by the same code, but each request of the walk is first offered to a
//! [`Replay`] of the previous model: a request about a node that is **clean** is answered at
//! once from that model (no SMP); one about a **dirty** node, or about anything the previous
//! model does not hold, goes to the wire. Dirty are:
//! - the switches whose SwitchInfo.PortStateChange was set at the light sweep that preceded
//!   the heavy sweep (a port of theirs changed state: IBA vol1 §14.2.5.4), whose light-sweep
//!   PortInfo of a port up on one side changed, or that issued a trap (128, 144);
//! - every CA or router first reached by a real probe (the far end of a port of a dirty
//!   switch: a CA sets no PortStateChange, so its PortInfo is read again);
//! - everything the previous model does not hold (a new or returning node, and so everything
//!   behind a port that came up).
//!
//! A clean switch's ports are as they were (a change would have set PortStateChange), so the
//! probe through a clean port is answered with the node the model had there, and a clean
//! port that was up with nothing answering behind it is not probed again. Nodes no longer
//! reached by the walk (behind ports now Down) are not in the new model: vanished nodes are
//! removed, new ones added, and LIDs are kept by LID assignment (guid2lid, then the LIDs the
//! ports hold, which the replay carries over).
//!
//! The replay checks what it assumed. After the walk, a link whose two ends disagree (one
//! Down, one up) or a cached answer that contradicts a real one (a port claimed by two
//! links) names the clean node whose data is stale ([`Replay::suspects`]): the sweep walks
//! again with those nodes dirty (at most [`MAX_RESTARTS`] times). Anything else the replay
//! cannot explain — an SMP given up, a duplicate GUID — makes the sweep fall back to a full
//! discovery ([`crate::sweep`] logs why).

use std::collections::{HashMap, HashSet};

use ibmad::attr::{NodeInfo, PortInfo, SwitchInfo};
use ibmad::{Guid, NodeType, PortNum, PortState};

use crate::discovery::Discovery;
use crate::subnet::Subnet;
use crate::txn::{Purpose, Request};

/// Walks again with more dirty nodes at most this many times before a full discovery.
pub(crate) const MAX_RESTARTS: u32 = 2;

/// An answer the previous model gives in place of an SMP.
#[derive(Debug)]
pub(crate) enum Cached {
    /// NodeInfo of the node behind a clean port.
    NodeInfo(NodeInfo),
    /// A clean port that was up with no node answering behind it: not probed again.
    Skip,
    /// NodeDescription.
    Desc(String),
    /// SwitchInfo of a clean switch.
    SwitchInfo(SwitchInfo),
    /// PortInfo of a clean node's port.
    PortInfo(PortInfo),
}

/// The previous model and what is dirty in it, for one heavy sweep.
#[derive(Debug)]
pub(crate) struct Replay {
    /// The model the last good heavy sweep built.
    pub old: Subnet,
    /// Nodes (by NodeGUID) whose attributes are read from the fabric.
    pub dirty: HashSet<Guid>,
    /// Clean nodes whose cached data contradicted the fabric (see the module documentation).
    pub suspects: HashSet<Guid>,
    /// Requests answered from the model this walk.
    pub cached: usize,
    /// Walks restarted with more dirty nodes.
    pub restarts: u32,
    /// Switches the light sweep could not read (their directed route crossed what failed):
    /// their PortStateChange is read along the new walk's route before the walk is accepted.
    pub unverified: HashSet<Guid>,
    /// The reads of [`Replay::unverified`] switches are out.
    pub verifying: bool,
}

impl Replay {
    /// A replay of `old` with `dirty` nodes.
    pub fn new(old: Subnet, dirty: HashSet<Guid>) -> Replay {
        Replay {
            old,
            dirty,
            suspects: HashSet::new(),
            cached: 0,
            restarts: 0,
            unverified: HashSet::new(),
            verifying: false,
        }
    }

    /// A SwitchInfo of an unverified switch read along the new route: PortStateChange set
    /// makes it a suspect (its ports are read at the next walk).
    pub fn on_verified(&mut self, guid: Guid, port_state_change: bool) {
        self.unverified.remove(&guid);
        if port_state_change {
            self.suspects.insert(guid);
        }
    }

    /// An unverified switch did not answer along the new route either: it is gone, and the
    /// ports facing it (of its neighbours in the walk's model, answered from the previous
    /// one) are stale. They become suspects.
    pub fn on_silent(&mut self, s: &Subnet, id: crate::subnet::NodeId) {
        let Some(n) = s.nodes.get(id.idx()) else {
            return;
        };
        self.unverified.remove(&n.guid);
        for p in 1..=n.num_ports {
            if let Some((rn, _)) = s.port(id, PortNum(p)).and_then(|x| x.remote) {
                let g = s.node(rn).guid;
                if !self.dirty.contains(&g) {
                    self.suspects.insert(g);
                }
            }
        }
    }

    fn clean_old(
        &self,
        disc: &Discovery,
        id: crate::subnet::NodeId,
    ) -> Option<crate::subnet::NodeId> {
        let guid = disc.subnet.nodes.get(id.idx())?.guid;
        if self.dirty.contains(&guid) {
            return None;
        }
        self.old.node_by_guid(guid)
    }

    /// The answer the previous model gives to `req` of the walk, or `None`: send it.
    /// `node_info` holds the NodeInfo each node last answered.
    pub fn answer(
        &self,
        disc: &Discovery,
        node_info: &crate::FastMap<Guid, NodeInfo>,
        req: &Request,
    ) -> Option<Cached> {
        match req.purpose {
            Purpose::Probe {
                from: Some((id, p)),
            } => {
                let oid = self.clean_old(disc, id)?;
                let port = self.old.port(oid, p)?;
                let Some((rn, rp)) = port.remote else {
                    // Up (the walk probes only up ports) with nothing found behind it when
                    // last read, and unchanged since.
                    return (port.state() != PortState::DOWN).then_some(Cached::Skip);
                };
                let far = self.old.node(rn);
                let mut ni = *node_info.get(&far.guid)?;
                ni.local_port_num = rp.0;
                if far.node_type != NodeType::SWITCH {
                    ni.port_guid.set(self.old.port(rn, rp)?.guid.0);
                }
                Some(Cached::NodeInfo(ni))
            }
            Purpose::NodeDesc(id) => {
                let guid = disc.subnet.nodes.get(id.idx())?.guid;
                let oid = self.old.node_by_guid(guid)?;
                Some(Cached::Desc(self.old.node(oid).desc.clone()))
            }
            Purpose::SwitchInfo(id) => {
                let oid = self.clean_old(disc, id)?;
                self.old.node(oid).switch_info.map(Cached::SwitchInfo)
            }
            Purpose::PortInfo(id, p) => {
                let oid = self.clean_old(disc, id)?;
                self.old.port(oid, p)?.info.map(Cached::PortInfo)
            }
            _ => None,
        }
    }

    /// After the walk: the clean nodes at a link whose ends disagree (one end Down, the
    /// other not), added to [`Replay::suspects`]. Returns true if a link had two dirty ends
    /// that disagree (the fabric changed during the walk).
    pub fn check_links(&mut self, s: &Subnet) -> bool {
        let mut racing = false;
        for id in s.node_ids() {
            for p in 0..=s.node(id).num_ports {
                let Some(port) = s.port(id, PortNum(p)) else {
                    continue;
                };
                let Some((rn, rp)) = port.remote else {
                    continue;
                };
                let Some(far) = s.port(rn, rp) else {
                    continue;
                };
                let down = |x: &crate::subnet::Port| x.state() == PortState::DOWN;
                if down(port) == down(far) {
                    continue;
                }
                let (a, b) = (s.node(id).guid, s.node(rn).guid);
                let mut named = false;
                for g in [a, b] {
                    if !self.dirty.contains(&g) {
                        self.suspects.insert(g);
                        named = true;
                    }
                }
                racing |= !named;
            }
        }
        racing
    }
}

/// Directed routes from the SM's node to the nodes of `s` that never pass *through* a node
/// of `avoid` (those may only be a route's end), over links up at both ends in the model.
///
/// The light sweep run before an incremental heavy sweep reads every switch's
/// PortStateChange along these routes, around the switches that sent the traps: a failed
/// link has a trap issuer at one end at least, so a route that neither crosses nor ends at
/// that issuer cannot cross the failed link, and the Gets are answered instead of timing out
/// one by one along routes the change broke. The route back is the same (a DR SMP's response
/// retraces its path, IBA vol1 §14.2.2), where a LID-routed Get would come back along the
/// switches' old forwarding tables. Nodes reached only through an avoided node are absent.
/// Links with an end in `dead` (ports read Down since the model was built) are not used.
pub(crate) fn routes_around(
    s: &Subnet,
    avoid: &HashSet<Guid>,
    dead: &HashSet<(crate::subnet::NodeId, PortNum)>,
) -> HashMap<crate::subnet::NodeId, ibmad::DrPath> {
    let mut out = HashMap::new();
    let Some((root, sm_port)) = s.sm_port() else {
        return out;
    };
    out.insert(root, ibmad::DrPath::local());
    let mut queue = std::collections::VecDeque::from([root]);
    while let Some(id) = queue.pop_front() {
        let n = s.node(id);
        if id != root && (!n.is_switch() || avoid.contains(&n.guid)) {
            continue;
        }
        let Some(&path) = out.get(&id) else {
            continue;
        };
        // A CA sends on the SM's port only; a switch forwards through any of its ports.
        let ports: Vec<u8> = if n.is_switch() {
            (1..=n.num_ports).collect()
        } else {
            vec![sm_port.0]
        };
        for p in ports {
            let Some((rn, rp)) = s.port(id, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            if out.contains_key(&rn)
                || !s.is_link_up(id, PortNum(p))
                || !s.is_link_up(rn, rp)
                || dead.contains(&(id, PortNum(p)))
                || dead.contains(&(rn, rp))
            {
                continue;
            }
            let Ok(next) = path.push(p) else {
                continue;
            };
            out.insert(rn, next);
            queue.push_back(rn);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::{Node, NodeId};
    use ibmad::DrPath;
    use zerocopy::FromZeros;

    fn model() -> Subnet {
        // Switch 1 (ports 1, 2) — CA 2 on port 1; port 2 up with nothing behind it.
        let mut s = Subnet::new();
        let sw = s.add_active_node(Node::new(Guid(1), NodeType::SWITCH, 2, "sw"));
        let ca = s.add_active_node(Node::new(Guid(2), NodeType::CA, 1, "ca"));
        s.connect_active((sw, PortNum(1)), (ca, PortNum(1)));
        if let Some(p) = s.port_mut(sw, PortNum(2)) {
            p.info = Some(crate::subnet::active_port_info());
        }
        s
    }

    fn ni(guid: u64, t: NodeType, ports: u8) -> NodeInfo {
        let mut n = NodeInfo::new_zeroed();
        n.node_type = t.0;
        n.num_ports = ports;
        n.node_guid.set(guid);
        n.port_guid.set(guid);
        n
    }

    #[test]
    fn clean_nodes_are_answered_from_the_model_dirty_ones_are_not() {
        let old = model();
        let infos: crate::FastMap<Guid, NodeInfo> = [
            (Guid(1), ni(1, NodeType::SWITCH, 2)),
            (Guid(2), ni(2, NodeType::CA, 1)),
        ]
        .into_iter()
        .collect();
        let mut r = Replay::new(old, HashSet::new());
        let (mut d, _) = Discovery::start(PortNum(1));
        let (mut out, mut ev) = (Vec::new(), Vec::new());
        d.on_node_info(DrPath::local(), None, &infos[&Guid(1)], &mut out, &mut ev);
        let sw = NodeId(0);
        let probe = |p: u8| {
            Request::get(
                DrPath::parse(&format!("0,{p}")).unwrap(),
                ibmad::SmpAttrId::NODE_INFO,
                0,
                Purpose::Probe {
                    from: Some((sw, PortNum(p))),
                },
            )
        };
        match r.answer(&d, &infos, &probe(1)) {
            Some(Cached::NodeInfo(n)) => {
                assert_eq!(n.node_guid(), Guid(2));
                assert_eq!(n.local_port_num, 1);
                assert_eq!(n.port_guid.get(), 3, "the CA port's own GUID");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            r.answer(&d, &infos, &probe(2)),
            Some(Cached::Skip)
        ));
        let pi = Request::get(
            DrPath::local(),
            ibmad::SmpAttrId::PORT_INFO,
            1,
            Purpose::PortInfo(sw, PortNum(1)),
        );
        assert!(matches!(
            r.answer(&d, &infos, &pi),
            Some(Cached::PortInfo(_))
        ));
        r.dirty.insert(Guid(1));
        assert!(r.answer(&d, &infos, &probe(1)).is_none(), "dirty: sent");
        assert!(r.answer(&d, &infos, &pi).is_none());
    }

    #[test]
    fn a_link_whose_ends_disagree_names_the_clean_end() {
        let mut s = model();
        let mut down = PortInfo::new_zeroed();
        down.set_port_state(PortState::DOWN);
        s.port_mut(NodeId(1), PortNum(1)).unwrap().info = Some(down);
        let mut r = Replay::new(Subnet::new(), [Guid(2)].into());
        assert!(!r.check_links(&s));
        assert_eq!(r.suspects, [Guid(1)].into());
        let mut r = Replay::new(Subnet::new(), [Guid(1), Guid(2)].into());
        assert!(
            r.check_links(&s),
            "both ends read: the fabric changed meanwhile"
        );
    }
    #[test]
    fn routes_around_pass_through_no_avoided_node_and_may_end_at_one() {
        // The SM's CA 10 on switch 1; switch 1 ports 2, 3 to switches 2, 3; both to switch 4
        // (ports 1, 2); switch 4 port 3 to switch 5, reachable only through switch 4.
        let mut s = Subnet::new();
        let ca = s.add_active_node(Node {
            dr_path: DrPath::local(),
            ..Node::new(Guid(10), NodeType::CA, 1, "sm")
        });
        let sw: Vec<NodeId> = (1..=5)
            .map(|g| s.add_active_node(Node::new(Guid(g), NodeType::SWITCH, 4, "sw")))
            .collect();
        s.connect_active((ca, PortNum(1)), (sw[0], PortNum(1)));
        s.connect_active((sw[0], PortNum(2)), (sw[1], PortNum(1)));
        s.connect_active((sw[0], PortNum(3)), (sw[2], PortNum(1)));
        s.connect_active((sw[1], PortNum(2)), (sw[3], PortNum(1)));
        s.connect_active((sw[2], PortNum(2)), (sw[3], PortNum(2)));
        s.connect_active((sw[3], PortNum(3)), (sw[4], PortNum(1)));
        let path = |m: &HashMap<NodeId, DrPath>, n: NodeId| m.get(&n).map(|p| p.ports().to_vec());
        let none = HashSet::new();
        let free = routes_around(&s, &HashSet::new(), &none);
        assert_eq!(
            path(&free, sw[3]),
            Some(vec![1, 2, 2]),
            "shortest, first port"
        );
        let m = routes_around(&s, &[Guid(2)].into(), &none);
        assert_eq!(
            path(&m, sw[1]),
            Some(vec![1, 2]),
            "an avoided node may be the end"
        );
        assert_eq!(path(&m, sw[3]), Some(vec![1, 3, 2]), "around switch 2");
        assert_eq!(path(&m, sw[4]), Some(vec![1, 3, 2, 3]));
        let m = routes_around(&s, &[Guid(4)].into(), &none);
        assert_eq!(path(&m, sw[3]), Some(vec![1, 2, 2]));
        assert_eq!(path(&m, sw[4]), None, "only through switch 4");
        // A port read Down is not crossed, from either end.
        let m = routes_around(&s, &HashSet::new(), &[(sw[1], PortNum(2))].into());
        assert_eq!(path(&m, sw[3]), Some(vec![1, 3, 2]));
        let m = routes_around(&s, &HashSet::new(), &[(sw[3], PortNum(1))].into());
        assert_eq!(path(&m, sw[3]), Some(vec![1, 3, 2]));
        // A link Down at one end in the model is not used.
        let mut down = s.port(sw[1], PortNum(2)).unwrap().info.unwrap();
        down.set_port_state(PortState::DOWN);
        s.port_mut(sw[1], PortNum(2)).unwrap().info = Some(down);
        let m = routes_around(&s, &HashSet::new(), &none);
        assert_eq!(path(&m, sw[3]), Some(vec![1, 3, 2]));
    }
}

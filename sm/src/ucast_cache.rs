//! `use_ucast_cache` (OpenSM `-A`/`--ucast_cache`, `osm_ucast_cache.c`): keep the switches'
//! tables when the topology changed only in ways that need no new routes.
//!
//! When routing is computed, the topology it was computed for is kept as a [`RoutedBase`]:
//! its links (by GUID and port), the LIDs of its end ports, which switches are leaves (have a
//! CA or router attached, as OpenSM's cache marks them) and the tables. At the next heavy
//! sweep the base applies — the tables are reused unchanged, so no LFT Set is sent anywhere —
//! when, compared with the base:
//! - no link is new (a node coming back on the links it had is not new);
//! - every missing link touches a CA or router port, or joins a switch to a **leaf** switch
//!   that is gone as a whole, and is not between two leaf switches (a leaf-to-leaf link may
//!   carry switch-to-switch routes, OpenSM's "missing leaf-2-leaf link");
//! - every end port holds the LID (and LMC) it had;
//! - the routes consist of LFTs only (an engine's path SLs and VL tables are not carried over).
//!
//! A lost CA's or leaf's LIDs keep their entries as they were: traffic to them is dropped at
//! the last switch, as before the change, and a returning node finds its routes in place.
//! Anything else — a spine or any non-leaf switch gone, a link between two present switches
//! lost, a new node or link, a LID moved — recomputes and takes a new base.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ibmad::{Guid, Lid, PortNum};

use crate::routing::{Lfts, Routes};
use crate::subnet::{NodeId, Subnet};

/// A link end: (NodeGUID, port).
type End = (Guid, u8);

/// The topology routing was last computed for, and its routes.
#[derive(Debug)]
pub(crate) struct RoutedBase {
    /// Links between up ports, each once (lower end first).
    links: HashSet<(End, End)>,
    /// End port GUID → (base LID, LMC).
    lids: HashMap<Guid, (Lid, u8)>,
    /// Nodes that are CAs or routers.
    cas: HashSet<Guid>,
    /// Switches with a CA or router attached.
    leaves: HashSet<Guid>,
    /// The switch of each table row, by NodeGUID.
    rows: HashMap<Guid, NodeId>,
    routes: Arc<Routes>,
}

fn links_of(s: &Subnet) -> HashSet<(End, End)> {
    let mut out = HashSet::new();
    for id in s.node_ids() {
        for p in 1..=s.node(id).num_ports {
            if !s.is_link_up(id, PortNum(p)) {
                continue;
            }
            let Some((rn, rp)) = s.port(id, PortNum(p)).and_then(|x| x.remote) else {
                continue;
            };
            if !s.is_link_up(rn, rp) {
                continue;
            }
            let a = (s.node(id).guid, p);
            let b = (s.node(rn).guid, rp.0);
            out.insert(if a <= b { (a, b) } else { (b, a) });
        }
    }
    out
}

fn lids_of(s: &Subnet) -> HashMap<Guid, (Lid, u8)> {
    s.end_ports()
        .filter_map(|(id, p)| {
            let port = s.port(id, p)?;
            Some((port.guid, (port.lid, port.lmc)))
        })
        .collect()
}

impl RoutedBase {
    /// The base for `routes`, computed for `s`.
    pub fn new(s: &Subnet, routes: Arc<Routes>) -> RoutedBase {
        let links = links_of(s);
        let cas: HashSet<Guid> = s
            .node_ids()
            .filter(|&id| !s.node(id).is_switch())
            .map(|id| s.node(id).guid)
            .collect();
        let mut leaves = HashSet::new();
        for &(a, b) in &links {
            if cas.contains(&a.0) && !cas.contains(&b.0) {
                leaves.insert(b.0);
            }
            if cas.contains(&b.0) && !cas.contains(&a.0) {
                leaves.insert(a.0);
            }
        }
        let rows = routes
            .lfts
            .switches()
            .iter()
            .filter(|id| id.idx() < s.nodes.len())
            .map(|&id| (s.node(id).guid, id))
            .collect();
        RoutedBase {
            links,
            lids: lids_of(s),
            cas,
            leaves,
            rows,
            routes,
        }
    }

    /// Why the base does not apply to `s`, or `Ok(lost)` with the number of links lost
    /// since the base that the cache tolerates.
    pub fn check(&self, s: &Subnet) -> Result<usize, String> {
        let r = &self.routes;
        if r.path_sl.is_some() || r.sl2vl.is_some() || r.vlarb.is_some() || r.ar.is_some() {
            return Err("the routes carry path SLs or VL tables".into());
        }
        let now = links_of(s);
        if let Some(&(a, b)) = now.difference(&self.links).next() {
            return Err(format!(
                "new link {} port {} – {} port {}",
                a.0, a.1, b.0, b.1
            ));
        }
        let present = |g: Guid| s.node_by_guid(g).is_some();
        let mut lost = 0;
        for &(a, b) in self.links.difference(&now) {
            lost += 1;
            if self.cas.contains(&a.0) || self.cas.contains(&b.0) {
                continue;
            }
            let (la, lb) = (self.leaves.contains(&a.0), self.leaves.contains(&b.0));
            if la && lb {
                return Err(format!("missing leaf-to-leaf link {} – {}", a.0, b.0));
            }
            let gone_leaf = (la && !present(a.0)) || (lb && !present(b.0));
            if !gone_leaf {
                let which = if !present(a.0) || !present(b.0) {
                    "a non-leaf switch is gone"
                } else {
                    "a link between two present switches is gone"
                };
                return Err(format!(
                    "{which} ({} port {} – {} port {})",
                    a.0, a.1, b.0, b.1
                ));
            }
        }
        for (g, l) in lids_of(s) {
            if self.lids.get(&g) != Some(&l) {
                return Err(format!("end port {g} is new or holds another LID"));
            }
        }
        if let Some(id) = s
            .switches()
            .find(|&id| !self.rows.contains_key(&s.node(id).guid))
        {
            return Err(format!("switch {} has no cached table", s.node(id).guid));
        }
        Ok(lost)
    }

    /// The cached tables, one row per switch of `s` (which [`RoutedBase::check`] accepted).
    pub fn tables_for(&self, s: &Subnet) -> Routes {
        let old = &self.routes.lfts;
        let mut lfts = Lfts::new(s, old.top());
        for id in s.switches() {
            let Some(&oid) = self.rows.get(&s.node(id).guid) else {
                continue;
            };
            if let (Some(src), Some(dst)) = (old.table(oid), lfts.table_mut(id)) {
                let n = src.len().min(dst.len());
                dst[..n].copy_from_slice(&src[..n]);
            }
        }
        Routes::new(lfts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subnet::Node;
    use ibmad::NodeType;

    /// spine S (2 ports) — leaves L1, L2 (3 ports); CA a on L1, CA b on L2.
    fn fabric(with_b: bool, with_l2: bool) -> Subnet {
        let mut s = Subnet::new();
        let sp = s.add_active_node(Node::new(Guid(1), NodeType::SWITCH, 2, "S"));
        let l1 = s.add_active_node(Node::new(Guid(2), NodeType::SWITCH, 3, "L1"));
        let a = s.add_active_node(Node::new(Guid(10), NodeType::CA, 1, "a"));
        s.connect_active((sp, PortNum(1)), (l1, PortNum(1)));
        s.connect_active((l1, PortNum(2)), (a, PortNum(1)));
        if with_l2 {
            let l2 = s.add_active_node(Node::new(Guid(3), NodeType::SWITCH, 3, "L2"));
            s.connect_active((sp, PortNum(2)), (l2, PortNum(1)));
            if with_b {
                let b = s.add_active_node(Node::new(Guid(20), NodeType::CA, 1, "b"));
                s.connect_active((l2, PortNum(2)), (b, PortNum(1)));
            }
        }
        crate::lid::assign_lids(
            &mut s,
            &crate::lid::LidConfig::default(),
            &crate::lid::Guid2Lid::new(),
        )
        .unwrap();
        s
    }

    /// Gives the end ports of `to` the LIDs they hold in `from`.
    fn same_lids(from: &Subnet, to: &mut Subnet) {
        let lids = lids_of(from);
        let ends: Vec<_> = to.end_ports().collect();
        for (id, p) in ends {
            let port = to.port_mut(id, p).unwrap();
            port.lid = lids[&port.guid].0;
        }
    }

    fn base(s: &Subnet) -> RoutedBase {
        let lfts = Lfts::new(s, Lid(8));
        RoutedBase::new(s, Arc::new(Routes::new(lfts)))
    }

    #[test]
    fn a_lost_ca_or_leaf_keeps_the_tables_a_spine_or_new_node_does_not() {
        let full = fabric(true, true);
        let b = base(&full);
        assert_eq!(b.check(&full), Ok(0));
        // The LIDs a full fabric gave are kept for what remains (assigned the same way).
        let mut no_ca = fabric(false, true);
        same_lids(&full, &mut no_ca);
        assert_eq!(b.check(&no_ca), Ok(1), "CA b gone");
        let mut no_leaf = fabric(false, false);
        same_lids(&full, &mut no_leaf);
        assert_eq!(b.check(&no_leaf), Ok(2), "leaf L2 and its CA gone");
        // The other way round, everything is new.
        let small = base(&no_leaf);
        assert!(small.check(&full).unwrap_err().starts_with("new link"));
        // A leaf that lost its spine link but is still there: recompute.
        let mut cut = full.clone();
        let l2 = cut.node_by_guid(Guid(3)).unwrap();
        let mut down = crate::subnet::active_port_info();
        down.set_port_state(ibmad::PortState::DOWN);
        cut.port_mut(l2, PortNum(1)).unwrap().info = Some(down);
        assert!(b.check(&cut).unwrap_err().contains("two present switches"));
    }

    #[test]
    fn a_gone_spine_is_not_a_leaf() {
        // A spine S2 between L1 and L2 besides S: losing it recomputes.
        let mut s = fabric(true, true);
        let s2 = s.add_active_node(Node::new(Guid(4), NodeType::SWITCH, 2, "S2"));
        let (l1, l2) = (
            s.node_by_guid(Guid(2)).unwrap(),
            s.node_by_guid(Guid(3)).unwrap(),
        );
        s.connect_active((s2, PortNum(1)), (l1, PortNum(3)));
        s.connect_active((s2, PortNum(2)), (l2, PortNum(3)));
        let b = base(&s);
        let mut gone = s.clone();
        let mut down = crate::subnet::active_port_info();
        down.set_port_state(ibmad::PortState::DOWN);
        gone.port_mut(l1, PortNum(3)).unwrap().info = Some(down);
        gone.port_mut(l2, PortNum(3)).unwrap().info = Some(down);
        gone.port_mut(s2, PortNum(1)).unwrap().info = Some(down);
        gone.port_mut(s2, PortNum(2)).unwrap().info = Some(down);
        assert!(b.check(&gone).is_err());
    }
}

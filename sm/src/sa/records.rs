//! The simple records: read-only views of the [`SaSnapshot`], answered to Get and GetTable
//! (anything else: method/attribute not supported). Each handler walks the candidates (using
//! an index when the component mask selects the key) and offers them to a [`Collector`],
//! which applies the component mask.

use ibmad::attr::{AttrRepr, NodeInfoRepr};
use ibmad::sa_rec::node::comp as nr_comp;
use ibmad::sa_rec::{selected, NodeRecord, SaRecord};
use ibmad::zerocopy::{FromZeros, IntoBytes};
use ibmad::{Lid, PortNum};

use super::{Answer, Collector, SaQuery, SaSnapshot};
use crate::subnet::NodeId;

/// NodeRecord (0x0011): one per end port with a LID (a switch: port 0; a CA or router: each
/// port with a LID), keyed by the base LID, with that port's PortGUID and LocalPortNum.
pub fn node_records(snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
    if !q.is_read() {
        return Answer::unsupported();
    }
    let mut c = Collector::new::<NodeRecord>(q);
    let one = |c: &mut Collector<'_>, lid: Lid, id: NodeId, p: PortNum| {
        if let Some(r) = node_record(snap, lid, id, p) {
            c.offer(r.as_bytes());
        }
    };
    if let Some(lid) = selected::<NodeRecord>(q.comp_mask, 0, q.record) {
        let lid = Lid(u16::try_from(lid).unwrap_or(0));
        if let Some((id, p)) = snap.by_lid(lid) {
            // Keyed by the base LID: another LID of the LMC range matches nothing.
            if snap.subnet.lid_of(id, p) == lid {
                one(&mut c, lid, id, p);
            }
        }
        return c.finish();
    }
    if q.comp_mask & nr_comp::PORT_GUID != 0 {
        if let Some(g) = selected::<NodeRecord>(q.comp_mask, 8, q.record) {
            if let Some((id, p)) = snap.by_port_guid(ibmad::Guid(g)) {
                one(&mut c, snap.subnet.lid_of(id, p), id, p);
            }
        }
        return c.finish();
    }
    for (lid, id, p) in snap.lid_ports() {
        one(&mut c, lid, id, p);
        if c.is_full() {
            break;
        }
    }
    c.finish()
}

/// The NodeRecord of port `p` of node `id`, under `lid`.
fn node_record(snap: &SaSnapshot, lid: Lid, id: NodeId, p: PortNum) -> Option<NodeRecord> {
    let n = snap.subnet.nodes.get(id.idx())?;
    let port = snap.subnet.port(id, p)?;
    let mut r = NodeRecord::new_zeroed();
    r.lid.set(lid.0);
    r.node_info = NodeInfoRepr {
        base_version: 1,
        class_version: 1,
        node_type: n.node_type,
        num_ports: n.num_ports,
        system_image_guid: n.sys_guid,
        node_guid: n.guid,
        port_guid: port.guid,
        partition_cap: n.partition_cap,
        device_id: n.device_id,
        revision: n.revision,
        // The port the record is about (a switch: its port 0).
        local_port_num: if n.is_switch() { PortNum(0) } else { p },
        vendor_id: n.vendor_id,
    }
    .to_raw();
    r.node_desc = ibmad::attr::NodeDesc::from_str_lossy(&n.desc);
    debug_assert_eq!(r.as_bytes().len(), NodeRecord::LEN);
    Some(r)
}

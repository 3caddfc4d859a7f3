//! NodeDescription (0x0010, IBA vol1 §14.2.5.2) and NodeInfo (0x0011, §14.2.5.3): Get only.

use ibmad::attr::NodeInfo;
use ibmad::zerocopy::{FromZeros, IntoBytes};

use super::Req;
use crate::agent::{Agent, PARTITION_CAP};
use crate::error::SmaError;
use crate::hw::Hardware;

impl<H: Hardware> Agent<H> {
    pub(crate) fn get_node_desc(&self, data: &mut [u8; 64]) -> Result<(), SmaError> {
        data.copy_from_slice(self.desc.as_bytes());
        Ok(())
    }

    /// NodeInfo: LocalPortNum = the ingress port; PortGUID = the ingress port's GUID on a CA,
    /// port 0's on a switch.
    pub(crate) fn get_node_info(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let mut ni = NodeInfo::new_zeroed();
        ni.base_version = 1;
        ni.class_version = 1;
        ni.node_type = self.node_type.0;
        ni.num_ports = self.num_ports;
        ni.system_image_guid.set(self.sys_image_guid.0);
        ni.node_guid.set(self.node_guid.0);
        let gp = self.mgmt_port(req.in_port);
        ni.port_guid
            .set(self.ports.get(usize::from(gp.0)).map_or(0, |p| p.guid.0));
        ni.partition_cap.set(PARTITION_CAP);
        ni.device_id.set(self.device_id);
        ni.revision.set(self.revision);
        ni.local_port_num = req.in_port.0;
        ni.set_vendor_id(self.vendor_id);
        data.fill(0);
        data[..40].copy_from_slice(ni.as_bytes());
        Ok(())
    }
}

//! NodeInfo (attribute 0x0011), 40 bytes — IBA vol1 §14.2.5.3.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::NodeType;
use crate::types::{Guid, PortNum};

/// NodeInfo, 40 bytes of the SMP data field.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct NodeInfo {
    /// BaseVersion — byte 0.
    pub base_version: u8,
    /// ClassVersion — byte 1.
    pub class_version: u8,
    /// NodeType — byte 2 (1 CA, 2 switch, 3 router).
    pub node_type: u8,
    /// NumPorts — byte 3 (physical ports; a switch's port 0 is not counted).
    pub num_ports: u8,
    /// SystemImageGUID — bytes 4..11.
    pub system_image_guid: U64,
    /// NodeGUID — bytes 12..19.
    pub node_guid: U64,
    /// PortGUID — bytes 20..27 (the port the SMP arrived on; a switch's port 0).
    pub port_guid: U64,
    /// PartitionCap — bytes 28..29.
    pub partition_cap: U16,
    /// DeviceID — bytes 30..31.
    pub device_id: U16,
    /// Revision — bytes 32..35.
    pub revision: U32,
    /// LocalPortNum — byte 36: the port the SMP arrived on.
    pub local_port_num: u8,
    /// VendorID — bytes 37..39 (24-bit OUI).
    pub vendor_id: [u8; 3],
}
const _: () = assert!(size_of::<NodeInfo>() == 40);
const _: () = assert!(core::mem::offset_of!(NodeInfo, node_guid) == 12);
const _: () = assert!(core::mem::offset_of!(NodeInfo, local_port_num) == 36);

impl NodeInfo {
    /// NodeType.
    #[must_use]
    pub fn node_type(&self) -> NodeType {
        NodeType(self.node_type)
    }
    /// NodeGUID.
    #[must_use]
    pub fn node_guid(&self) -> Guid {
        Guid(self.node_guid.get())
    }
    /// PortGUID.
    #[must_use]
    pub fn port_guid(&self) -> Guid {
        Guid(self.port_guid.get())
    }
    /// SystemImageGUID.
    #[must_use]
    pub fn system_image_guid(&self) -> Guid {
        Guid(self.system_image_guid.get())
    }
    /// LocalPortNum.
    #[must_use]
    pub fn local_port(&self) -> PortNum {
        PortNum(self.local_port_num)
    }
    /// VendorID as a 24-bit number.
    #[must_use]
    pub fn vendor_id(&self) -> u32 {
        u32::from_be_bytes([0, self.vendor_id[0], self.vendor_id[1], self.vendor_id[2]])
    }
    /// Sets VendorID from the low 24 bits of `v`.
    pub fn set_vendor_id(&mut self, v: u32) {
        let b = v.to_be_bytes();
        self.vendor_id = [b[1], b[2], b[3]];
    }
}

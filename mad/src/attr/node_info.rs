//! NodeInfo (attribute 0x0011), 40 bytes — IBA vol1 §14.2.5.3.
//!
//! View: [`NodeInfo`] (`NodeInfo::ref_from_prefix(&smp.data)`); validated value:
//! [`NodeInfoRepr`] (see [`crate::attr`] for the guarantees both give).

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use core::fmt;

use zerocopy::FromZeros;

use crate::attr::AttrRepr;
use crate::codes::{NodeType, SmpAttrId};
use crate::error::ParseError;
use crate::pretty::field;
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

/// Field listing in the layout of `smpquery nodeinfo`, with IBA field names.
impl fmt::Display for NodeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "BaseVersion", self.base_version)?;
        field(f, "ClassVersion", self.class_version)?;
        field(f, "NodeType", self.node_type())?;
        field(f, "NumPorts", self.num_ports)?;
        field(f, "SystemImageGUID", self.system_image_guid())?;
        field(f, "NodeGUID", self.node_guid())?;
        field(f, "PortGUID", self.port_guid())?;
        field(f, "PartitionCap", self.partition_cap.get())?;
        field(f, "DeviceID", format_args!("{:#06x}", self.device_id.get()))?;
        field(f, "Revision", format_args!("{:#010x}", self.revision.get()))?;
        field(f, "LocalPortNum", self.local_port_num)?;
        field(f, "VendorID", format_args!("{:#08x}", self.vendor_id()))
    }
}

/// NodeInfo, validated.
///
/// `parse` rejects ([`ParseError::InvalidValue`]) a NodeType other than 1 (CA), 2 (switch) or
/// 3 (router), NumPorts = 0, and a LocalPortNum above NumPorts. NodeInfo has no reserved
/// bits. `emit` keeps only the low 24 bits of `vendor_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeInfoRepr {
    /// BaseVersion: the MAD base version the node supports.
    pub base_version: u8,
    /// ClassVersion: the SMP class version the node supports.
    pub class_version: u8,
    /// NodeType.
    pub node_type: NodeType,
    /// NumPorts.
    pub num_ports: u8,
    /// SystemImageGUID.
    pub system_image_guid: Guid,
    /// NodeGUID.
    pub node_guid: Guid,
    /// PortGUID.
    pub port_guid: Guid,
    /// PartitionCap.
    pub partition_cap: u16,
    /// DeviceID.
    pub device_id: u16,
    /// Revision.
    pub revision: u32,
    /// LocalPortNum.
    pub local_port_num: PortNum,
    /// VendorID (24 bits).
    pub vendor_id: u32,
}

impl AttrRepr for NodeInfoRepr {
    type Raw = NodeInfo;
    const ATTR_ID: SmpAttrId = SmpAttrId::NODE_INFO;

    fn from_raw(r: &NodeInfo) -> Result<Self, ParseError> {
        let invalid = |field: &'static str, value: u64| ParseError::InvalidValue {
            attr: Self::ATTR_ID,
            field,
            value,
        };
        if !matches!(
            r.node_type(),
            NodeType::CA | NodeType::SWITCH | NodeType::ROUTER
        ) {
            return Err(invalid("NodeType", r.node_type.into()));
        }
        if r.num_ports == 0 {
            return Err(invalid("NumPorts", 0));
        }
        if r.local_port_num > r.num_ports {
            return Err(invalid("LocalPortNum", r.local_port_num.into()));
        }
        Ok(NodeInfoRepr {
            base_version: r.base_version,
            class_version: r.class_version,
            node_type: r.node_type(),
            num_ports: r.num_ports,
            system_image_guid: r.system_image_guid(),
            node_guid: r.node_guid(),
            port_guid: r.port_guid(),
            partition_cap: r.partition_cap.get(),
            device_id: r.device_id.get(),
            revision: r.revision.get(),
            local_port_num: r.local_port(),
            vendor_id: r.vendor_id(),
        })
    }

    fn to_raw(&self) -> NodeInfo {
        let mut r = NodeInfo::new_zeroed();
        r.base_version = self.base_version;
        r.class_version = self.class_version;
        r.node_type = self.node_type.0;
        r.num_ports = self.num_ports;
        r.system_image_guid.set(self.system_image_guid.0);
        r.node_guid.set(self.node_guid.0);
        r.port_guid.set(self.port_guid.0);
        r.partition_cap.set(self.partition_cap);
        r.device_id.set(self.device_id);
        r.revision.set(self.revision);
        r.local_port_num = self.local_port_num.0;
        r.set_vendor_id(self.vendor_id);
        r
    }
}

crate::attr::display_via_raw!(NodeInfoRepr);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::{data, num, rcv, smpquery_fields, smpquery_value};
    use zerocopy::IntoBytes;

    /// NodeInfo of ibsim's Switch1 (net.2sw2path), SMP data bytes 0..39 of the GetResp to
    /// `smpquery -K -D nodeinfo 0` (mad/testdata/ni_sw1_dr0.*, made by mad/testdata/capture.sh).
    static BYTES: [u8; 40] = [
        0x01, 0x01, 0x02, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x08,
        0x00, 0x00, 0x00, 0x00, 0x00, 0xa1, 0x00, 0x00, 0x00, 0x00,
    ];

    fn repr() -> NodeInfoRepr {
        NodeInfoRepr {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::SWITCH,
            num_ports: 8,
            system_image_guid: Guid(0x20_0000),
            node_guid: Guid(0x20_0000),
            port_guid: Guid(0x20_0000),
            partition_cap: 8,
            device_id: 0,
            revision: 0xa1,
            local_port_num: PortNum(0),
            vendor_id: 0,
        }
    }

    #[test]
    fn bytes_are_the_capture() {
        let mad = rcv(include_str!("../../testdata/ni_sw1_dr0.mads"), 0x11, None);
        assert_eq!(&data(&mad)[..40], &BYTES[..]);
    }

    #[test]
    fn deconstruct() {
        let (ni, _) = NodeInfo::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(ni.node_type(), NodeType::SWITCH);
        assert_eq!(ni.num_ports, 8);
        assert_eq!(ni.node_guid(), Guid(0x20_0000));
        assert_eq!(ni.partition_cap.get(), 8);
        assert_eq!(ni.revision.get(), 0xa1);
        assert_eq!(ni.local_port(), PortNum(0));
    }

    #[test]
    fn construct() {
        let mut ni = NodeInfo::new_zeroed();
        ni.base_version = 1;
        ni.class_version = 1;
        ni.node_type = 2;
        ni.num_ports = 8;
        ni.system_image_guid.set(0x20_0000);
        ni.node_guid.set(0x20_0000);
        ni.port_guid.set(0x20_0000);
        ni.partition_cap.set(8);
        ni.revision.set(0xa1);
        assert_eq!(ni.as_bytes(), &BYTES[..]);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(NodeInfoRepr::parse(&BYTES).unwrap(), repr());
        let mut buf = [0xAAu8; 64];
        repr().emit(&mut buf).unwrap();
        assert_eq!(&buf[..40], &BYTES[..]);
        assert_eq!(
            &buf[40..],
            &[0xAA; 24][..],
            "emit writes only buffer_len bytes"
        );
        assert_eq!(repr().buffer_len(), 40);
    }

    #[test]
    fn impossible_len() {
        assert!(matches!(
            NodeInfoRepr::parse(&BYTES[..39]),
            Err(ParseError::Len(e)) if e.required == 40 && e.got == 39
        ));
        assert!(repr().emit(&mut [0u8; 39]).is_err());
    }

    #[test]
    fn rejects_reserved_values() {
        let mut b = BYTES;
        b[2] = 4;
        assert!(matches!(
            NodeInfoRepr::parse(&b),
            Err(ParseError::InvalidValue {
                field: "NodeType",
                ..
            })
        ));
        let mut b = BYTES;
        b[36] = 9;
        assert!(NodeInfoRepr::parse(&b).is_err());
        let mut b = BYTES;
        b[3] = 0;
        assert!(NodeInfoRepr::parse(&b).is_err());
    }

    #[test]
    fn setters_preserve_neighbours() {
        let mut ni = *NodeInfo::ref_from_prefix(&BYTES[..]).unwrap().0;
        ni.local_port_num = 3;
        ni.set_vendor_id(0x1234_5678);
        assert_eq!(ni.vendor_id(), 0x34_5678);
        assert_eq!(ni.local_port_num, 3);
    }

    /// The decode of each capture equals what smpquery printed for the same query.
    #[test]
    fn matches_smpquery() {
        for (mads, txt) in [
            (
                include_str!("../../testdata/ni_sw1_dr0.mads"),
                include_str!("../../testdata/ni_sw1_dr0.txt"),
            ),
            (
                include_str!("../../testdata/ni_hca1_dr1.mads"),
                include_str!("../../testdata/ni_hca1_dr1.txt"),
            ),
            (
                include_str!("../../testdata/ni_hca2_dr3.mads"),
                include_str!("../../testdata/ni_hca2_dr3.txt"),
            ),
            (
                include_str!("../../testdata/ni_sw2_lid3.mads"),
                include_str!("../../testdata/ni_sw2_lid3.txt"),
            ),
        ] {
            let r = NodeInfoRepr::parse(&data(&rcv(mads, 0x11, None))).unwrap();
            let q = smpquery_fields(txt);
            let v = |k: &str| num(&smpquery_value(&q, k));
            assert_eq!(v("BaseVers"), u64::from(r.base_version));
            assert_eq!(v("ClassVers"), u64::from(r.class_version));
            assert_eq!(smpquery_value(&q, "NodeType"), r.node_type.to_string());
            assert_eq!(v("NumPorts"), u64::from(r.num_ports));
            assert_eq!(v("SystemGuid"), r.system_image_guid.0);
            assert_eq!(v("Guid"), r.node_guid.0);
            assert_eq!(v("PortGuid"), r.port_guid.0);
            assert_eq!(v("PartCap"), u64::from(r.partition_cap));
            assert_eq!(v("DevId"), u64::from(r.device_id));
            assert_eq!(v("Revision"), u64::from(r.revision));
            assert_eq!(v("LocalPort"), u64::from(r.local_port_num.0));
            assert_eq!(v("VendorId"), u64::from(r.vendor_id));
        }
    }

    #[test]
    fn display_lists_fields() {
        let text = repr().to_string();
        assert!(text.starts_with("BaseVersion:.....................1\n"));
        assert!(text.contains("NodeType:........................Switch\n"));
        assert!(text.contains("NodeGUID:........................0x0000000000200000\n"));
    }
}

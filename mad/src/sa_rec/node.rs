//! NodeRecord (SubnAdm attribute 0x0011, IBA vol1 §15.2.5, "NodeRecord"): the NodeInfo and
//! NodeDescription of the node an end-port LID leads to, keyed by that LID.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..1 | LID (0) |
//! | 2..3 | Reserved (1) |
//! | 4..43 | NodeInfo: BaseVersion (2), ClassVersion (3), NodeType (4), NumPorts (5), SystemImageGUID (6), NodeGUID (7), PortGUID (8), PartitionCap (9), DeviceID (10), Revision (11), LocalPortNum (12), VendorID (13) |
//! | 44..107 | NodeDescription (14) |
//!
//! 108 bytes; 112 in a MAD ([`super::padded_len`]).

use core::fmt;

use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{Component, SaRecord};
use crate::attr::{AttrRepr, NodeDesc, NodeDescRepr, NodeInfo, NodeInfoRepr};
use crate::codes::SaAttrId;
use crate::error::{check_len, LenError, ParseError};
use crate::types::Lid;

/// NodeRecord, 108 bytes.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct NodeRecord {
    /// LID — bytes 0..1 (RID).
    pub lid: U16,
    /// Reserved — bytes 2..3.
    pub resv: U16,
    /// NodeInfo — bytes 4..43.
    pub node_info: NodeInfo,
    /// NodeDescription — bytes 44..107.
    pub node_desc: NodeDesc,
}
const _: () = assert!(size_of::<NodeRecord>() == 108);
const _: () = assert!(core::mem::offset_of!(NodeRecord, node_info) == 4);
const _: () = assert!(core::mem::offset_of!(NodeRecord, node_desc) == 44);
const _: () = assert!(super::components_fit(NodeRecord::COMPONENTS, 108));

/// ComponentMask bits of NodeRecord.
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 1;
    /// NodeInfo.BaseVersion.
    pub const BASE_VERSION: u64 = 1 << 2;
    /// NodeInfo.ClassVersion.
    pub const CLASS_VERSION: u64 = 1 << 3;
    /// NodeInfo.NodeType.
    pub const NODE_TYPE: u64 = 1 << 4;
    /// NodeInfo.NumPorts.
    pub const NUM_PORTS: u64 = 1 << 5;
    /// NodeInfo.SystemImageGUID.
    pub const SYSTEM_IMAGE_GUID: u64 = 1 << 6;
    /// NodeInfo.NodeGUID.
    pub const NODE_GUID: u64 = 1 << 7;
    /// NodeInfo.PortGUID.
    pub const PORT_GUID: u64 = 1 << 8;
    /// NodeInfo.PartitionCap.
    pub const PARTITION_CAP: u64 = 1 << 9;
    /// NodeInfo.DeviceID.
    pub const DEVICE_ID: u64 = 1 << 10;
    /// NodeInfo.Revision.
    pub const REVISION: u64 = 1 << 11;
    /// NodeInfo.LocalPortNum.
    pub const LOCAL_PORT_NUM: u64 = 1 << 12;
    /// NodeInfo.VendorID.
    pub const VENDOR_ID: u64 = 1 << 13;
    /// NodeDescription.
    pub const NODE_DESC: u64 = 1 << 14;
}

impl SaRecord for NodeRecord {
    const ATTR: SaAttrId = SaAttrId::NODE_RECORD;
    const LEN: usize = 108;
    const COMPONENTS: &'static [Component] = &[
        Component::bytes(0, 2),
        Component::reserved(16, 16),
        Component::bytes(4, 1),
        Component::bytes(5, 1),
        Component::bytes(6, 1),
        Component::bytes(7, 1),
        Component::bytes(8, 8),
        Component::bytes(16, 8),
        Component::bytes(24, 8),
        Component::bytes(32, 2),
        Component::bytes(34, 2),
        Component::bytes(36, 4),
        Component::bytes(40, 1),
        Component::bytes(41, 3),
        Component::bytes(44, 64),
    ];
}

/// NodeRecord, validated: [`NodeInfoRepr::parse`]'s rules for the NodeInfo; the reserved
/// bytes are ignored and emitted as zero.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeRecordRepr {
    /// LID: the end port's (base) LID.
    pub lid: Lid,
    /// NodeInfo as the node reports it through that port (PortGUID, LocalPortNum: that port).
    pub node_info: NodeInfoRepr,
    /// NodeDescription.
    pub node_desc: NodeDescRepr,
}

impl NodeRecordRepr {
    /// Size of the record.
    pub const LEN: usize = 108;

    /// Validates a record at the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<NodeRecordRepr, ParseError> {
        let r = super::view::<NodeRecord>(buf)?;
        Ok(NodeRecordRepr {
            lid: Lid(r.lid.get()),
            node_info: NodeInfoRepr::from_raw(&r.node_info)?,
            node_desc: NodeDescRepr::from_raw(&r.node_desc)?,
        })
    }

    /// The wire struct.
    #[must_use]
    pub fn to_raw(&self) -> NodeRecord {
        let mut r = NodeRecord::new_zeroed();
        r.lid.set(self.lid.0);
        r.node_info = self.node_info.to_raw();
        r.node_desc = self.node_desc.to_raw();
        r
    }

    /// Writes the record into the front of `buf` (at least [`Self::LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), LenError> {
        check_len(buf, Self::LEN, super::layer(SaAttrId::NODE_RECORD), 0)?;
        if let Some(dst) = buf.get_mut(..Self::LEN) {
            dst.copy_from_slice(self.to_raw().as_bytes());
        }
        Ok(())
    }
}

/// `saquery`-like one line: `NodeRecord lid 2 guid 0x… type 1 ports 2 "Hca1"`.
impl fmt::Display for NodeRecordRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NodeRecord lid {} node_guid {} port_guid {} type {} ports {} port {} \"{}\"",
            self.lid.0,
            self.node_info.node_guid,
            self.node_info.port_guid,
            self.node_info.node_type.0,
            self.node_info.num_ports,
            self.node_info.local_port_num.0,
            self.node_desc.text
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::mads;
    use crate::sa::SA_DATA_OFFSET;
    use crate::sa_rec::{matches, padded_len, selected};
    use crate::types::{Guid, PortNum};
    use crate::NodeType;

    /// `saquery -ddd NR` against OpenSM on ibsim (net.2sw2path): the first segment of the
    /// GetTableResp holds the NodeRecord of LID 2 (Hca1) at byte 56.
    const NR: &str = include_str!("../../testdata/sa_nr_gettable.mads");

    fn captured() -> [u8; 108] {
        let resp = mads(NR, "rcv")[0];
        resp[SA_DATA_OFFSET..SA_DATA_OFFSET + 108]
            .try_into()
            .unwrap()
    }

    #[test]
    fn deconstruct() {
        let b = captured();
        let (r, _) = NodeRecord::ref_from_prefix(&b[..]).unwrap();
        assert_eq!(r.lid.get(), 2);
        let p = NodeRecordRepr::parse(&b).unwrap();
        assert_eq!(p.lid, Lid(2));
        assert_eq!(p.node_info.node_type, NodeType::CA);
        assert_eq!(p.node_info.num_ports, 2);
        assert_eq!(p.node_info.local_port_num, PortNum(1));
        assert_eq!(p.node_info.port_guid.0, p.node_info.node_guid.0 + 1);
        assert_eq!(p.node_desc.text, "Hca1");
    }

    #[test]
    fn construct_and_round_trip() {
        let b = captured();
        let p = NodeRecordRepr::parse(&b).unwrap();
        let mut out = [0xEEu8; 112];
        p.emit(&mut out).unwrap();
        assert_eq!(&out[..108], &b[..]);
        assert_eq!(&out[108..], &[0xEE; 4]); // padding untouched
        assert!(p.emit(&mut [0u8; 107]).is_err());
        assert!(NodeRecordRepr::parse(&b[..100]).is_err());
        assert_eq!(padded_len(NodeRecord::LEN), 112);
    }

    #[test]
    fn reserved_ignored_and_emitted_zero() {
        let mut b = captured();
        b[2] = 0x55;
        let p = NodeRecordRepr::parse(&b).unwrap();
        assert_eq!(p.to_raw().resv.get(), 0);
        // A query that differs only in the reserved bytes still matches with every bit set.
        assert!(matches(NodeRecord::COMPONENTS, u64::MAX, &b, &captured()));
    }

    #[test]
    fn components_select_fields() {
        let rec = captured();
        let mut q = [0u8; 108];
        q[0..2].copy_from_slice(&[0, 2]);
        assert!(matches(NodeRecord::COMPONENTS, comp::LID, &q, &rec));
        assert!(!matches(
            NodeRecord::COMPONENTS,
            comp::LID | comp::NODE_TYPE,
            &q,
            &rec
        ));
        q[6] = 1;
        assert!(matches(
            NodeRecord::COMPONENTS,
            comp::LID | comp::NODE_TYPE,
            &q,
            &rec
        ));
        let guid = NodeRecordRepr::parse(&rec).unwrap().node_info.node_guid;
        q[16..24].copy_from_slice(&guid.0.to_be_bytes());
        assert_eq!(selected::<NodeRecord>(comp::NODE_GUID, 7, &q), Some(guid.0));
        assert_eq!(selected::<NodeRecord>(comp::LID, 7, &q), None);
        assert_ne!(guid, Guid(0));
        q[44..48].copy_from_slice(b"Hca1");
        assert!(matches(NodeRecord::COMPONENTS, comp::NODE_DESC, &q, &rec));
    }

    #[test]
    fn display() {
        let p = NodeRecordRepr::parse(&captured()).unwrap();
        let s = p.to_string();
        assert!(s.starts_with("NodeRecord lid 2 "), "{s}");
        assert!(s.ends_with("\"Hca1\""), "{s}");
    }
}

//! The two datagram layouts of ibsim's client protocol (`include/ibsim.h` of ibsim 0.10–0.12):
//! the 80-byte control message [`SimCtl`] (host byte order) and the 288-byte data frame
//! [`SimRequest`] (network byte order, except that each LID is a big-endian `u16` in the
//! low-address half of a `u32`).
//!
//! Not an IBA layout, but the transport every simulated fabric here speaks: the server side is
//! `fabric_sim::ibsim_server` (re-exported there as `wire`), the client side the `umad-shim`
//! LD_PRELOAD library. Both use these types, so the layout is pinned in one place.

use zerocopy::byteorder::{BigEndian, NativeEndian, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// `SIM_MAGIC`: first word of every control message.
pub const SIM_MAGIC: u32 = 0xDEAD_BEEF;
/// `IBSIM_MAX_CLIENTS`: data sockets `NAME:out0` … `NAME:out9`.
pub const MAX_CLIENTS: usize = 10;
/// Size of a [`SimCtl`].
pub const CTL_LEN: usize = 80;
/// Size of a [`SimRequest`]; datagrams of any other size are rejected.
pub const REQUEST_LEN: usize = 288;
/// `status` of a request sent back undelivered (ETIMEDOUT): dropped, no route or no receiver.
pub const STATUS_TIMEOUT: u32 = 110;

/// Control message types (`SIM_CTL_*`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CtlType(pub u32);

macro_rules! ctl_types {
    ($($(#[$m:meta])* $name:ident = $v:expr;)*) => {
        impl CtlType {
            $($(#[$m])* pub const $name: CtlType = CtlType($v);)*
        }
        impl core::fmt::Debug for CtlType {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match *self {
                    $(CtlType::$name => f.write_str(stringify!($name)),)*
                    CtlType(v) => write!(f, "CtlType({v})"),
                }
            }
        }
    };
}

ctl_types! {
    /// Reply type of a refused request.
    ERROR = 0;
    /// Attach a client: [`ClientInfo`] in, slot and node id out.
    CONNECT = 1;
    /// Detach.
    DISCONNECT = 2;
    /// `{u16 lid; u8 state}` of the attached port (host order).
    GET_PORT = 3;
    /// [`SimVendor`].
    GET_VENDOR = 4;
    /// GID prefix + NodeGUID (16 bytes, wire order).
    GET_GID = 5;
    /// NodeGUID (8 bytes, host order).
    GET_GUID = 6;
    /// Raw 64-byte NodeInfo.
    GET_NODEINFO = 7;
    /// Raw 64-byte PortInfo of port `data[0]` (0 = the attached port).
    GET_PORTINFO = 8;
    /// `int issm`: the client is (or stops being) the SM of its node.
    SET_ISSM = 9;
    /// Up to 32 P_Keys (network order).
    GET_PKEYS = 10;
}

/// `struct sim_ctl`: 80 bytes, host byte order.
#[derive(Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SimCtl {
    /// [`SIM_MAGIC`].
    pub magic: U32<NativeEndian>,
    /// The client's slot (0 before CONNECT).
    pub clientid: U32<NativeEndian>,
    /// [`CtlType`].
    pub ctl_type: U32<NativeEndian>,
    /// Payload bytes used.
    pub len: U32<NativeEndian>,
    /// Payload.
    pub data: [u8; 64],
}
const _: () = assert!(core::mem::size_of::<SimCtl>() == CTL_LEN);
const _: () = assert!(core::mem::offset_of!(SimCtl, ctl_type) == 8);
const _: () = assert!(core::mem::offset_of!(SimCtl, data) == 16);

impl SimCtl {
    /// The message type.
    #[must_use]
    pub fn kind(&self) -> CtlType {
        CtlType(self.ctl_type.get())
    }
}

/// `struct sim_client_info`: the CONNECT payload (44 bytes, host order).
#[derive(Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ClientInfo {
    /// In: the `<ID>` of the client's `NAME:in<ID>` socket (umad2sim: its pid). Out: the slot.
    pub id: U32<NativeEndian>,
    /// A QP number other than 0/1 the client receives on (umad2sim: 0).
    pub qp: U32<NativeEndian>,
    /// 1 = the client is an SM (refused if the node already has one).
    pub issm: U32<NativeEndian>,
    /// In: node id or NodeDescription to attach to (empty = the default node). Out: the
    /// attached node's id. NUL-terminated.
    pub nodeid: [u8; 32],
}
const _: () = assert!(core::mem::size_of::<ClientInfo>() == 44);

impl ClientInfo {
    /// `nodeid` up to its first NUL (lossy UTF-8).
    #[must_use]
    pub fn node_id(&self) -> String {
        let end = self
            .nodeid
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.nodeid.len());
        String::from_utf8_lossy(&self.nodeid[..end]).into_owned()
    }

    /// Stores `s` as a NUL-terminated node id (cut to 31 bytes).
    pub fn set_node_id(&mut self, s: &str) {
        self.nodeid = [0; 32];
        let b = s.as_bytes();
        let n = b.len().min(31);
        self.nodeid[..n].copy_from_slice(&b[..n]);
    }
}

/// `struct sim_vendor`: the GET_VENDOR reply (24 bytes, host order).
#[derive(Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SimVendor {
    /// NodeInfo.VendorID.
    pub vendor_id: U32<NativeEndian>,
    /// NodeInfo.DeviceID.
    pub vendor_part_id: U32<NativeEndian>,
    /// NodeInfo.Revision.
    pub hw_ver: U32<NativeEndian>,
    /// Alignment padding of the C struct.
    pub pad: [u8; 4],
    /// Firmware version (ibsim: 1).
    pub fw_ver: U64<NativeEndian>,
}
const _: () = assert!(core::mem::size_of::<SimVendor>() == 24);
const _: () = assert!(core::mem::offset_of!(SimVendor, fw_ver) == 16);

/// `struct sim_port`: the GET_PORT reply (`u16 lid; u8 state`, host order).
#[derive(Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SimPortReply {
    /// The port's LID.
    pub lid: U16<NativeEndian>,
    /// The port's PortState.
    pub state: u8,
}
const _: () = assert!(core::mem::size_of::<SimPortReply>() == 3);

/// `struct sim_request`: one MAD with its addressing, 288 bytes.
#[derive(Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SimRequest {
    /// Destination LID (big-endian `u16` in the low-address half of the C `u32`); 0xFFFF =
    /// directed route.
    pub dlid: U16<BigEndian>,
    /// Upper half of the C `u32` (zero).
    pub dlid_pad: [u8; 2],
    /// Source LID, same encoding; 0 = "the sender's port LID".
    pub slid: U16<BigEndian>,
    /// Upper half of the C `u32`.
    pub slid_pad: [u8; 2],
    /// Destination QP.
    pub dqp: U32<BigEndian>,
    /// Source QP.
    pub sqp: U32<BigEndian>,
    /// 0, or [`STATUS_TIMEOUT`] for a request sent back undelivered.
    pub status: U32<BigEndian>,
    /// C alignment padding.
    pub pad: [u8; 4],
    /// MAD length (256).
    pub length: U64<BigEndian>,
    /// The MAD, IB wire format.
    pub mad: [u8; 256],
}
const _: () = assert!(core::mem::size_of::<SimRequest>() == REQUEST_LEN);
const _: () = assert!(core::mem::offset_of!(SimRequest, dqp) == 8);
const _: () = assert!(core::mem::offset_of!(SimRequest, status) == 16);
const _: () = assert!(core::mem::offset_of!(SimRequest, length) == 24);
const _: () = assert!(core::mem::offset_of!(SimRequest, mad) == 32);

impl core::fmt::Debug for SimRequest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimRequest")
            .field("dlid", &self.dlid.get())
            .field("slid", &self.slid.get())
            .field("dqp", &self.dqp.get())
            .field("sqp", &self.sqp.get())
            .field("status", &self.status.get())
            .field("class", &format_args!("{:#04x}", self.mgmt_class()))
            .field("method", &format_args!("{:#04x}", self.method()))
            .field("tid", &format_args!("{:#018x}", self.tid()))
            .finish_non_exhaustive()
    }
}

impl SimRequest {
    /// A frame carrying `mad` with these LIDs and QPs, status 0, length 256.
    #[must_use]
    pub fn new(dlid: u16, slid: u16, dqp: u32, sqp: u32, mad: &[u8; 256]) -> SimRequest {
        SimRequest {
            dlid: U16::new(dlid),
            dlid_pad: [0; 2],
            slid: U16::new(slid),
            slid_pad: [0; 2],
            dqp: U32::new(dqp),
            sqp: U32::new(sqp),
            status: U32::new(0),
            pad: [0; 4],
            length: U64::new(256),
            mad: *mad,
        }
    }

    /// The MAD's TransactionID (bytes 8..16).
    #[must_use]
    pub fn tid(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.mad[8..16]);
        u64::from_be_bytes(b)
    }

    /// Sets the MAD's TransactionID.
    pub fn set_tid(&mut self, tid: u64) {
        self.mad[8..16].copy_from_slice(&tid.to_be_bytes());
    }

    /// MgmtClass (byte 1).
    #[must_use]
    pub fn mgmt_class(&self) -> u8 {
        self.mad[1]
    }

    /// Method (byte 3), R bit included.
    #[must_use]
    pub fn method(&self) -> u8 {
        self.mad[3]
    }

    /// True if the R bit (method bit 7) is set.
    #[must_use]
    pub fn is_response(&self) -> bool {
        self.mad[3] & 0x80 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    #[test]
    fn request_lid_encoding_is_htons_in_the_low_half() {
        // umad2sim stores htons(lid) into a u32: on little-endian x86-64 the LID's bytes are
        // the first two, big-endian.
        let mut bytes = [0u8; REQUEST_LEN];
        bytes[0..4].copy_from_slice(&u32::from(0x1234u16.to_be()).to_ne_bytes());
        bytes[16..20].copy_from_slice(&110u32.to_be_bytes());
        let r = SimRequest::read_from_bytes(&bytes[..]).unwrap();
        if cfg!(target_endian = "little") {
            assert_eq!(r.dlid.get(), 0x1234);
        }
        assert_eq!(r.status.get(), STATUS_TIMEOUT);
    }

    #[test]
    fn tid_round_trips_through_the_mad_header() {
        let mut r = SimRequest::new(0xFFFF, 0xFFFF, 0, 0, &[0; 256]);
        r.set_tid(0x0003_0000_dead_beef);
        assert_eq!(r.tid(), 0x0003_0000_dead_beef);
        assert_eq!(&r.mad[8..10], &[0, 3]);
        assert_eq!(r.length.get(), 256);
    }

    #[test]
    fn client_info_node_id_is_nul_terminated_and_cut() {
        let mut ci = ClientInfo::new_zeroed();
        ci.set_node_id(&"x".repeat(40));
        assert_eq!(ci.node_id().len(), 31);
        assert_eq!(ci.nodeid[31], 0);
        ci.set_node_id("H1");
        assert_eq!(ci.node_id(), "H1");
    }

    #[test]
    fn ctl_type_debug_names() {
        assert_eq!(format!("{:?}", CtlType::GET_PKEYS), "GET_PKEYS");
        assert_eq!(format!("{:?}", CtlType(77)), "CtlType(77)");
    }
}

//! The Linux user_mad ABI (`include/uapi/rdma/ib_user_mad.h`): the per-MAD header that precedes
//! every MAD read from or written to `/dev/infiniband/umadN`, the agent-registration request
//! structs, and the ioctl numbers built from (magic, nr, size) exactly as the kernel's `_IOWR`
//! macros do.
//!
//! The header exists in two framings. The **old 56-byte** one (`struct ib_user_mad_hdr_old`) is
//! used on an fd where neither `IB_USER_MAD_ENABLE_PKEY` nor `IB_USER_MAD_REGISTER_AGENT2` has been
//! issued; the **64-byte** one adds `pkey_index` and 6 reserved bytes. ibsim's `libumad2sim.so`
//! only speaks the 56-byte framing. [`UmadHdr`] is the decoded value; [`UmadHdr::encode`] and
//! [`UmadHdr::decode`] convert for either framing and never panic.
//!
//! The first five words (`id`, `status`, `timeout_ms`, `retries`, `length`) are in host byte
//! order; the address part (`qpn`, `qkey`, `lid`, `flow_label`) is big-endian, as in the uapi
//! header's `__be32`/`__be16` types.

/// `RDMA_IOCTL_MAGIC` (`rdma/rdma_user_ioctl.h`).
pub const RDMA_IOCTL_MAGIC: u32 = 0x1b;

/// Size of the old (`ib_user_mad_hdr_old`) header.
pub const HDR_LEN_OLD: usize = 56;
/// Size of the current (`ib_user_mad_hdr`) header.
pub const HDR_LEN_NEW: usize = 64;
/// MAD size carried after the header (no RMPP).
pub const MAD_LEN: usize = 256;

/// `struct ib_user_mad_reg_req` (28 bytes), the argument of `IB_USER_MAD_REGISTER_AGENT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegReq {
    /// Out: the agent id assigned by the kernel.
    pub id: u32,
    /// Methods to receive unsolicited (bit n = method n), as 4-byte-aligned longs.
    pub method_mask: [u32; 4],
    /// 0 = SMI (QP0), 1 = GSI (QP1).
    pub qpn: u8,
    /// Management class.
    pub mgmt_class: u8,
    /// Management class version.
    pub mgmt_class_version: u8,
    /// Vendor OUI (vendor classes only).
    pub oui: [u8; 3],
    /// RMPP version (0 = none).
    pub rmpp_version: u8,
}
const _: () = assert!(size_of::<RegReq>() == 28);
const _: () = assert!(core::mem::offset_of!(RegReq, method_mask) == 4);
const _: () = assert!(core::mem::offset_of!(RegReq, qpn) == 20);
const _: () = assert!(core::mem::offset_of!(RegReq, mgmt_class) == 21);
const _: () = assert!(core::mem::offset_of!(RegReq, oui) == 23);
const _: () = assert!(core::mem::offset_of!(RegReq, rmpp_version) == 26);

/// `struct ib_user_mad_reg_req2` (40 bytes), the argument of `IB_USER_MAD_REGISTER_AGENT2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegReq2 {
    /// Out: the agent id assigned by the kernel.
    pub id: u32,
    /// 0 = SMI (QP0), 1 = GSI (QP1).
    pub qpn: u32,
    /// Management class.
    pub mgmt_class: u8,
    /// Management class version.
    pub mgmt_class_version: u8,
    /// Reserved.
    pub res: u16,
    /// `IB_USER_MAD_USER_RMPP` etc.
    pub flags: u32,
    /// Methods to receive unsolicited (bit n = method n).
    pub method_mask: [u64; 2],
    /// Vendor OUI (low 24 bits).
    pub oui: u32,
    /// RMPP version (0 = none).
    pub rmpp_version: u8,
    /// Reserved.
    pub reserved: [u8; 3],
}
const _: () = assert!(size_of::<RegReq2>() == 40);
const _: () = assert!(core::mem::offset_of!(RegReq2, flags) == 12);
const _: () = assert!(core::mem::offset_of!(RegReq2, method_mask) == 16);
const _: () = assert!(core::mem::offset_of!(RegReq2, oui) == 32);
const _: () = assert!(core::mem::offset_of!(RegReq2, rmpp_version) == 36);

/// `IB_USER_MAD_REGISTER_AGENT` = `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)`.
pub const IB_USER_MAD_REGISTER_AGENT: libc::Ioctl = libc::_IOWR::<RegReq>(RDMA_IOCTL_MAGIC, 1);
/// `IB_USER_MAD_UNREGISTER_AGENT` = `_IOW(0x1b, 2, __u32)`.
pub const IB_USER_MAD_UNREGISTER_AGENT: libc::Ioctl = libc::_IOW::<u32>(RDMA_IOCTL_MAGIC, 2);
/// `IB_USER_MAD_ENABLE_PKEY` = `_IO(0x1b, 3)`.
pub const IB_USER_MAD_ENABLE_PKEY: libc::Ioctl = libc::_IO(RDMA_IOCTL_MAGIC, 3);
/// `IB_USER_MAD_REGISTER_AGENT2` = `_IOWR(0x1b, 4, struct ib_user_mad_reg_req2)`.
pub const IB_USER_MAD_REGISTER_AGENT2: libc::Ioctl = libc::_IOWR::<RegReq2>(RDMA_IOCTL_MAGIC, 4);

/// Which methods an agent receives unsolicited (requests); responses to its own requests are
/// always delivered by TID. Bit n = method n (0..=127; the R bit is not part of the index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodMask(pub u128);

impl MethodMask {
    /// Every method.
    pub const ALL: MethodMask = MethodMask(u128::MAX);
    /// What OpenSM registers on QP0 as responder and trap processor: Get (0x01), Set (0x02),
    /// Trap (0x05), TrapRepress (0x07).
    pub const SM: MethodMask = MethodMask((1 << 0x01) | (1 << 0x02) | (1 << 0x05) | (1 << 0x07));
    /// No unsolicited methods: only responses to our own requests.
    pub const NONE: MethodMask = MethodMask(0);
    /// What an SA receives unsolicited (IBA vol1 §15.2.2): Get (0x01), Set (0x02), GetTable
    /// (0x12), GetTraceTable (0x13), GetMulti (0x14), Delete (0x15).
    pub const SA: MethodMask = MethodMask(
        (1 << 0x01) | (1 << 0x02) | (1 << 0x12) | (1 << 0x13) | (1 << 0x14) | (1 << 0x15),
    );
    /// What a PMA receives unsolicited: Get (0x01), Set (0x02).
    pub const PMA: MethodMask = MethodMask((1 << 0x01) | (1 << 0x02));

    /// The mask as the kernel's array of 32-bit longs (little-endian bit order per word).
    #[must_use]
    pub fn as_u32s(self) -> [u32; 4] {
        let v = self.0;
        [
            v as u32,
            (v >> 32) as u32,
            (v >> 64) as u32,
            (v >> 96) as u32,
        ]
    }
    /// The mask as the kernel's array of 64-bit words.
    #[must_use]
    pub fn as_u64s(self) -> [u64; 2] {
        [self.0 as u64, (self.0 >> 64) as u64]
    }
}

/// A decoded `ib_user_mad_hdr` (either framing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UmadHdr {
    /// Agent id (from registration).
    pub id: u32,
    /// 0, or an errno (ETIMEDOUT = the send timed out / was dropped).
    pub status: u32,
    /// Response timeout for a send (0 = no response expected / caller times out).
    pub timeout_ms: u32,
    /// Retries for a send.
    pub retries: u32,
    /// Header + MAD length.
    pub length: u32,
    /// Remote QP number.
    pub qpn: u32,
    /// Remote Q_Key.
    pub qkey: u32,
    /// Remote LID (DLID on send, SLID on receive); 0xFFFF for directed route.
    pub lid: u16,
    /// Service level.
    pub sl: u8,
    /// Source path bits.
    pub path_bits: u8,
    /// A GRH follows (`gid`, `flow_label`, … valid).
    pub grh_present: bool,
    /// GID index.
    pub gid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Remote GID.
    pub gid: [u8; 16],
    /// Flow label.
    pub flow_label: u32,
    /// P_Key index (64-byte framing only; 0 in the old one).
    pub pkey_index: u16,
}

/// The header framing in use on an fd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HdrFraming {
    /// 56-byte `ib_user_mad_hdr_old` (REGISTER_AGENT, or umad2sim).
    Old,
    /// 64-byte `ib_user_mad_hdr` (after REGISTER_AGENT2 / ENABLE_PKEY).
    New,
}

impl HdrFraming {
    /// The header length in bytes.
    #[must_use]
    pub const fn hdr_len(self) -> usize {
        match self {
            HdrFraming::Old => HDR_LEN_OLD,
            HdrFraming::New => HDR_LEN_NEW,
        }
    }
}

/// A header could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("user_mad header needs {required} bytes, got {got}")]
pub struct HdrLenError {
    /// Bytes needed.
    pub required: usize,
    /// Bytes given.
    pub got: usize,
}

fn ne32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_ne_bytes(a)
}
fn be32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_be_bytes(a)
}

impl UmadHdr {
    /// Writes the header into the first `framing.hdr_len()` bytes of `out`.
    ///
    /// # Errors
    /// [`HdrLenError`] if `out` is shorter than the framing.
    pub fn encode(&self, framing: HdrFraming, out: &mut [u8]) -> Result<(), HdrLenError> {
        let n = framing.hdr_len();
        let Some(b) = out.get_mut(..n) else {
            return Err(HdrLenError {
                required: n,
                got: out.len(),
            });
        };
        b.fill(0);
        b[0..4].copy_from_slice(&self.id.to_ne_bytes());
        b[4..8].copy_from_slice(&self.status.to_ne_bytes());
        b[8..12].copy_from_slice(&self.timeout_ms.to_ne_bytes());
        b[12..16].copy_from_slice(&self.retries.to_ne_bytes());
        b[16..20].copy_from_slice(&self.length.to_ne_bytes());
        b[20..24].copy_from_slice(&self.qpn.to_be_bytes());
        b[24..28].copy_from_slice(&self.qkey.to_be_bytes());
        b[28..30].copy_from_slice(&self.lid.to_be_bytes());
        b[30] = self.sl;
        b[31] = self.path_bits;
        b[32] = u8::from(self.grh_present);
        b[33] = self.gid_index;
        b[34] = self.hop_limit;
        b[35] = self.traffic_class;
        b[36..52].copy_from_slice(&self.gid);
        b[52..56].copy_from_slice(&self.flow_label.to_be_bytes());
        if framing == HdrFraming::New {
            b[56..58].copy_from_slice(&self.pkey_index.to_ne_bytes());
        }
        Ok(())
    }

    /// Reads a header from the first `framing.hdr_len()` bytes of `buf`.
    ///
    /// # Errors
    /// [`HdrLenError`] if `buf` is shorter than the framing.
    pub fn decode(framing: HdrFraming, buf: &[u8]) -> Result<UmadHdr, HdrLenError> {
        let n = framing.hdr_len();
        let Some(b) = buf.get(..n) else {
            return Err(HdrLenError {
                required: n,
                got: buf.len(),
            });
        };
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[36..52]);
        Ok(UmadHdr {
            id: ne32(b, 0),
            status: ne32(b, 4),
            timeout_ms: ne32(b, 8),
            retries: ne32(b, 12),
            length: ne32(b, 16),
            qpn: be32(b, 20),
            qkey: be32(b, 24),
            lid: u16::from_be_bytes([b[28], b[29]]),
            sl: b[30],
            path_bits: b[31],
            grh_present: b[32] != 0,
            gid_index: b[33],
            hop_limit: b[34],
            traffic_class: b[35],
            gid,
            flow_label: be32(b, 52),
            pkey_index: if framing == HdrFraming::New {
                u16::from_ne_bytes([b[56], b[57]])
            } else {
                0
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values printed by a C program built against Debian's uapi headers
    /// (mad-layouts.md §17).
    #[test]
    #[allow(clippy::unnecessary_cast)] // `Ioctl` is c_ulong on glibc, c_int on musl
    fn ioctl_numbers_match_the_uapi_header() {
        assert_eq!(IB_USER_MAD_REGISTER_AGENT as u64, 0xC01C_1B01);
        assert_eq!(IB_USER_MAD_UNREGISTER_AGENT as u64, 0x4004_1B02);
        assert_eq!(IB_USER_MAD_ENABLE_PKEY as u64, 0x1B03);
        assert_eq!(IB_USER_MAD_REGISTER_AGENT2 as u64, 0xC028_1B04);
    }

    fn sample() -> UmadHdr {
        UmadHdr {
            id: 3,
            status: 110,
            timeout_ms: 100,
            retries: 2,
            length: 312,
            qpn: 1,
            qkey: 0x8001_0000,
            lid: 0x1234,
            sl: 5,
            path_bits: 1,
            grh_present: true,
            gid_index: 2,
            hop_limit: 64,
            traffic_class: 7,
            gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0, 0x10, 1],
            flow_label: 0x000a_bcde,
            pkey_index: 9,
        }
    }

    #[test]
    fn encode_places_fields_at_uapi_offsets() {
        let mut b = [0xAAu8; 64];
        sample().encode(HdrFraming::New, &mut b).unwrap();
        assert_eq!(&b[0..4], &3u32.to_ne_bytes());
        assert_eq!(&b[4..8], &110u32.to_ne_bytes());
        assert_eq!(&b[16..20], &312u32.to_ne_bytes());
        assert_eq!(&b[20..24], &[0, 0, 0, 1]); // qpn big-endian
        assert_eq!(&b[24..28], &[0x80, 0x01, 0, 0]);
        assert_eq!(&b[28..30], &[0x12, 0x34]); // lid big-endian
        assert_eq!(b[30], 5);
        assert_eq!(b[32], 1);
        assert_eq!(b[36], 0xfe);
        assert_eq!(&b[52..56], &[0, 0x0a, 0xbc, 0xde]);
        assert_eq!(&b[56..58], &9u16.to_ne_bytes());
        assert_eq!(&b[58..64], &[0; 6]); // reserved zeroed
    }

    #[test]
    fn round_trip_both_framings() {
        let h = sample();
        let mut b = [0u8; 64];
        h.encode(HdrFraming::New, &mut b).unwrap();
        assert_eq!(UmadHdr::decode(HdrFraming::New, &b).unwrap(), h);
        let mut o = [0u8; 56];
        h.encode(HdrFraming::Old, &mut o).unwrap();
        let d = UmadHdr::decode(HdrFraming::Old, &o).unwrap();
        assert_eq!(d, UmadHdr { pkey_index: 0, ..h });
    }

    #[test]
    fn short_buffers_are_errors_not_panics() {
        let mut b = [0u8; 60];
        assert_eq!(
            sample().encode(HdrFraming::New, &mut b),
            Err(HdrLenError {
                required: 64,
                got: 60
            })
        );
        assert!(sample().encode(HdrFraming::Old, &mut b).is_ok());
        assert_eq!(
            UmadHdr::decode(HdrFraming::Old, &b[..10]),
            Err(HdrLenError {
                required: 56,
                got: 10
            })
        );
    }

    #[test]
    fn method_masks() {
        let m = MethodMask::SM.as_u32s();
        assert_eq!(m[0], 0b1010_0110);
        assert_eq!(&m[1..], &[0, 0, 0]);
        assert_eq!(MethodMask::ALL.as_u64s(), [u64::MAX; 2]);
        let hi = MethodMask(1 << 127);
        assert_eq!(hi.as_u32s()[3], 0x8000_0000);
    }
}

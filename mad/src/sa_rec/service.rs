//! ServiceRecord (SubnAdm attribute 0x0031, IBA vol1 §15.2.5.14): a service registered with the
//! SA by (ServiceID, ServiceGID, ServiceP_Key) — its RID — with a lease, a key and data.
//!
//! | bytes | component (mask bit) |
//! |---|---|
//! | 0..7 | ServiceID (0) |
//! | 8..23 | ServiceGID (1) |
//! | 24..25 | ServiceP_Key (2) |
//! | 26..27 | Reserved (3) |
//! | 28..31 | ServiceLease (4): seconds, 0xFFFFFFFF = infinite |
//! | 32..47 | ServiceKey (5) |
//! | 48..111 | ServiceName (6), UTF-8, NUL-padded |
//! | 112..127 | ServiceData8\[0..15\] (7..=22) |
//! | 128..143 | ServiceData16\[0..7\] (23..=30) |
//! | 144..159 | ServiceData32\[0..3\] (31..=34) |
//! | 160..175 | ServiceData64\[0..1\] (35, 36) |
//!
//! 176 bytes (a multiple of 8: no padding in a MAD).

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{Component, SaRecord};
use crate::codes::SaAttrId;

/// ServiceRecord, 176 bytes.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq, Debug,
)]
#[repr(C)]
pub struct ServiceRecord {
    /// ServiceID — bytes 0..7 (RID).
    pub service_id: U64,
    /// ServiceGID — bytes 8..23 (RID).
    pub service_gid: [u8; 16],
    /// ServiceP_Key — bytes 24..25 (RID).
    pub service_pkey: U16,
    /// Reserved — bytes 26..27.
    pub resv: U16,
    /// ServiceLease — bytes 28..31, seconds (0xFFFFFFFF: infinite).
    pub service_lease: U32,
    /// ServiceKey — bytes 32..47.
    pub service_key: [u8; 16],
    /// ServiceName — bytes 48..111.
    pub service_name: [u8; 64],
    /// ServiceData8 — bytes 112..127.
    pub service_data8: [u8; 16],
    /// ServiceData16 — bytes 128..143.
    pub service_data16: [U16; 8],
    /// ServiceData32 — bytes 144..159.
    pub service_data32: [U32; 4],
    /// ServiceData64 — bytes 160..175.
    pub service_data64: [U64; 2],
}
const _: () = assert!(size_of::<ServiceRecord>() == 176);
const _: () = assert!(core::mem::offset_of!(ServiceRecord, service_pkey) == 24);
const _: () = assert!(core::mem::offset_of!(ServiceRecord, service_lease) == 28);
const _: () = assert!(core::mem::offset_of!(ServiceRecord, service_key) == 32);
const _: () = assert!(core::mem::offset_of!(ServiceRecord, service_name) == 48);
const _: () = assert!(core::mem::offset_of!(ServiceRecord, service_data8) == 112);
const _: () = assert!(core::mem::offset_of!(ServiceRecord, service_data16) == 128);
const _: () = assert!(core::mem::offset_of!(ServiceRecord, service_data32) == 144);
const _: () = assert!(core::mem::offset_of!(ServiceRecord, service_data64) == 160);
const _: () = assert!(super::components_fit(ServiceRecord::COMPONENTS, 176));

/// The infinite ServiceLease.
pub const LEASE_INFINITE: u32 = 0xFFFF_FFFF;

/// ComponentMask bits of ServiceRecord.
pub mod comp {
    /// ServiceID.
    pub const SERVICE_ID: u64 = 1 << 0;
    /// ServiceGID.
    pub const SERVICE_GID: u64 = 1 << 1;
    /// ServiceP_Key.
    pub const SERVICE_PKEY: u64 = 1 << 2;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 3;
    /// ServiceLease.
    pub const SERVICE_LEASE: u64 = 1 << 4;
    /// ServiceKey.
    pub const SERVICE_KEY: u64 = 1 << 5;
    /// ServiceName.
    pub const SERVICE_NAME: u64 = 1 << 6;
    /// ServiceData8\[i\] is bit `7 + i`.
    pub const fn service_data8(i: u32) -> u64 {
        1 << (7 + i)
    }
    /// ServiceData16\[i\] is bit `23 + i`.
    pub const fn service_data16(i: u32) -> u64 {
        1 << (23 + i)
    }
    /// ServiceData32\[i\] is bit `31 + i`.
    pub const fn service_data32(i: u32) -> u64 {
        1 << (31 + i)
    }
    /// ServiceData64\[i\] is bit `35 + i`.
    pub const fn service_data64(i: u32) -> u64 {
        1 << (35 + i)
    }
    /// The RID: ServiceID, ServiceGID, ServiceP_Key.
    pub const RID: u64 = SERVICE_ID | SERVICE_GID | SERVICE_PKEY;
}

const fn components() -> [Component; 37] {
    let mut c = [Component::new(0, 1); 37];
    c[0] = Component::bytes(0, 8);
    c[1] = Component::bytes(8, 16);
    c[2] = Component::bytes(24, 2);
    c[3] = Component::reserved(26 * 8, 16);
    c[4] = Component::bytes(28, 4);
    c[5] = Component::bytes(32, 16);
    c[6] = Component::bytes(48, 64);
    let mut i = 0;
    while i < 16 {
        c[7 + i] = Component::bytes(112 + i as u32, 1);
        i += 1;
    }
    let mut i = 0;
    while i < 8 {
        c[23 + i] = Component::bytes(128 + 2 * i as u32, 2);
        i += 1;
    }
    let mut i = 0;
    while i < 4 {
        c[31 + i] = Component::bytes(144 + 4 * i as u32, 4);
        i += 1;
    }
    c[35] = Component::bytes(160, 8);
    c[36] = Component::bytes(168, 8);
    c
}

static COMPONENTS: [Component; 37] = components();

impl SaRecord for ServiceRecord {
    const ATTR: SaAttrId = SaAttrId::SERVICE_RECORD;
    const LEN: usize = 176;
    const COMPONENTS: &'static [Component] = &COMPONENTS;
}

impl ServiceRecord {
    /// An all-zero record.
    #[must_use]
    pub fn zeroed() -> ServiceRecord {
        ServiceRecord::new_zeroed()
    }

    /// The record at the front of `buf`, bytes past its end read as zero (as the SA reads a
    /// request's record).
    #[must_use]
    pub fn read_padded(buf: &[u8]) -> ServiceRecord {
        let mut b = [0u8; 176];
        let n = buf.len().min(176);
        b[..n].copy_from_slice(&buf[..n]);
        ServiceRecord::read_from_bytes(&b[..]).unwrap_or_else(|_| ServiceRecord::new_zeroed())
    }

    /// The RID (ServiceID, ServiceGID, ServiceP_Key).
    #[must_use]
    pub fn rid(&self) -> (u64, [u8; 16], u16) {
        (
            self.service_id.get(),
            self.service_gid,
            self.service_pkey.get(),
        )
    }

    /// ServiceName up to its first NUL, lossily as UTF-8.
    #[must_use]
    pub fn name(&self) -> String {
        let end = self.service_name.iter().position(|&b| b == 0).unwrap_or(64);
        String::from_utf8_lossy(&self.service_name[..end]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_components() {
        let mut r = ServiceRecord::zeroed();
        r.service_id.set(0x1122_3344_5566_7788);
        r.service_pkey.set(0xFFFF);
        r.service_lease.set(LEASE_INFINITE);
        r.service_name[..4].copy_from_slice(b"srp0");
        r.service_data8[15] = 7;
        r.service_data64[1].set(9);
        let b = r.as_bytes();
        assert_eq!(&b[0..8], &0x1122_3344_5566_7788u64.to_be_bytes());
        assert_eq!(&b[24..26], &[0xFF, 0xFF]);
        assert_eq!(&b[28..32], &[0xFF; 4]);
        assert_eq!(&b[48..52], b"srp0");
        assert_eq!(b[127], 7);
        assert_eq!(b[175], 9);
        assert_eq!(r.name(), "srp0");
        assert_eq!(ServiceRecord::read_padded(&b[..100]).service_data8[15], 0);
        // Each data component is its own mask bit.
        let mut q = r;
        q.service_data8[15] = 8;
        let m = comp::service_data8(15);
        assert!(!super::super::matches(
            ServiceRecord::COMPONENTS,
            m,
            q.as_bytes(),
            b
        ));
        assert!(super::super::matches(
            ServiceRecord::COMPONENTS,
            comp::RID | comp::service_data64(1),
            q.as_bytes(),
            b
        ));
        assert_eq!(ServiceRecord::COMPONENTS.len(), 37);
    }
}

//! The performance-management MAD (IBA vol1 §16.1.1) and the PerfMgt attributes this crate
//! decodes: ClassPortInfo ([`crate::class_port_info`]), PortCounters ([`port_counters`]),
//! PortCountersExtended ([`port_counters_ext`]).
//!
//! | bytes | field |
//! |---|---|
//! | 0..23 | common MAD header (class 0x04, ClassVersion 1) |
//! | 24..63 | Reserved |
//! | 64..255 | PerfMgt data: the attribute |
//!
//! [`PerfMad`] is the zerocopy struct (the view; cast it with `PerfMad::ref_from_bytes`),
//! [`Repr`] (`PerfRepr`) the validated MAD, [`PerfAttr`] the attributes by id, [`cap`] the
//! PerfMgt ClassPortInfo capability bits.

pub mod port_counters;
pub mod port_counters_ext;

use core::fmt;

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

pub use port_counters::{CounterSelect, PortCounters, PortCountersRepr};
pub use port_counters_ext::{CounterSelectExt, PortCountersExt, PortCountersExtRepr};

use crate::class_port_info::ClassPortInfoRepr;
use crate::codes::{Method, MgmtClass, PmaAttrId};
use crate::error::{LenError, ParseError};
use crate::gmp::{self, GmpAttrRepr, MadHeader, MAD_LEN};

/// Offset of the PerfMgt data field.
pub const PERF_DATA_OFFSET: usize = 64;
/// Size of the PerfMgt data field.
pub const PERF_DATA_LEN: usize = MAD_LEN - PERF_DATA_OFFSET;
/// PortSelect value 0xFF: every port of the node, when ClassPortInfo advertises
/// [`cap::ALL_PORT_SELECT`] (IBA vol1 §16.1.3.5).
pub const ALL_PORTS: u8 = 0xFF;

/// PerfMgt ClassPortInfo CapabilityMask bits 8..15 and CapabilityMask2 bits (IBA vol1 §16.1.2;
/// the names follow OpenSM's `IB_PM_*`).
pub mod cap {
    /// IsAllPortSelectSupported: PortSelect 0xFF sums (Get) or clears (Set) every port.
    pub const ALL_PORT_SELECT: u16 = 1 << 8;
    /// IsExtendedWidthSupported: PortCountersExtended with all eight 64-bit counters.
    pub const EXT_WIDTH: u16 = 1 << 9;
    /// IsExtendedWidthSupportedNoIETF: PortCountersExtended without the unicast/multicast
    /// packet counters.
    pub const EXT_WIDTH_NO_IETF: u16 = 1 << 10;
    /// IsSamplesOnlySupported.
    pub const SAMPLES_ONLY: u16 = 1 << 11;
    /// IsPortXmitWaitSupported: PortCounters.PortXmitWait is counted.
    pub const PORT_XMIT_WAIT: u16 = 1 << 12;
    /// IsInheritLimitedPKeyMulticastConstraintErrors.
    pub const INHERIT_LIMITED_PKEY_MC_CONSTRAINT: u16 = 1 << 13;
    /// IsRSFECCountersSupported.
    pub const RS_FEC_COUNTERS: u16 = 1 << 14;
    /// IsQP1DroppedSupported: PortCounters.QP1Dropped is counted.
    pub const QP1_DROPPED: u16 = 1 << 15;
    /// CapabilityMask2 IsPMKeySupported.
    pub const CM2_PM_KEY: u32 = 1 << 0;
    /// CapabilityMask2 IsAdditionalPortCountersExtendedSupported: PortCountersExtended carries
    /// the 64-bit error counters (bytes 72..183) and CounterSelect2.
    pub const CM2_ADDITIONAL_PORT_COUNTERS_EXT: u32 = 1 << 1;
}

/// A PerfMgt MAD, 256 bytes.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
pub struct PerfMad {
    /// Common MAD header — bytes 0..23.
    pub hdr: MadHeader,
    /// Reserved — bytes 24..63.
    pub reserved: [u8; 40],
    /// PerfMgt data — bytes 64..255.
    pub data: [u8; PERF_DATA_LEN],
}
const _: () = assert!(size_of::<PerfMad>() == MAD_LEN);
const _: () = assert!(core::mem::offset_of!(PerfMad, data) == PERF_DATA_OFFSET);

impl PerfMad {
    /// A zeroed PerfMgt request: version 1, class 0x04, class version 1.
    #[must_use]
    pub fn request(method: Method, attr: PmaAttrId, attr_mod: u32, tid: u64) -> PerfMad {
        let mut m = PerfMad::new_zeroed();
        m.hdr = gmp::Repr::request(MgmtClass::PERF_MGMT, method, attr.0, attr_mod, tid).to_header();
        m
    }
    /// The attribute id.
    #[must_use]
    pub fn attr(&self) -> PmaAttrId {
        PmaAttrId(self.hdr.attr_id.get())
    }
}

/// A validated PerfMgt MAD (re-exported as `PerfRepr`): its common header and data field.
///
/// `parse` applies [`gmp::Repr::parse`] (BaseVersion 1, ClassVersion 1, Get/Set/GetResp) and
/// rejects another class with [`ParseError::WrongClass`]. Bytes 24..63 are reserved: ignored,
/// emitted as zero. The data field is kept as bytes; decode it with [`Repr::attr`] or
/// [`PerfAttr::parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The common header.
    pub header: gmp::Repr,
    /// The PerfMgt data field.
    pub data: [u8; PERF_DATA_LEN],
}

impl Repr {
    /// Checks the length (at least 256 bytes), then validates.
    pub fn parse_bytes(buf: &[u8]) -> Result<Repr, ParseError> {
        let pkt = gmp::Packet::new_checked(buf)?;
        let header = gmp::Repr::parse(&pkt)?;
        if header.class != MgmtClass::PERF_MGMT {
            return Err(ParseError::WrongClass {
                expected: MgmtClass::PERF_MGMT,
                got: header.class,
            });
        }
        let mut data = [0u8; PERF_DATA_LEN];
        if let Some(src) = buf.get(PERF_DATA_OFFSET..MAD_LEN) {
            data.copy_from_slice(src);
        }
        Ok(Repr { header, data })
    }

    /// The attribute id.
    #[must_use]
    pub fn attr_id(&self) -> PmaAttrId {
        self.header.pma_attr()
    }

    /// Bytes [`Repr::emit_bytes`] writes: [`MAD_LEN`].
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// The MAD as the zerocopy struct, reserved bytes zero.
    #[must_use]
    pub fn to_mad(&self) -> PerfMad {
        let mut m = PerfMad::new_zeroed();
        m.hdr = self.header.to_header();
        m.data = self.data;
        m
    }

    /// Writes the MAD into the first [`MAD_LEN`] bytes of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) -> Result<(), LenError> {
        let got = buf.len();
        match buf.get_mut(..MAD_LEN) {
            Some(dst) => {
                dst.copy_from_slice(self.to_mad().as_bytes());
                Ok(())
            }
            None => Err(LenError {
                required: MAD_LEN,
                got,
                layer: crate::error::Layer::Gmp,
                offset: 0,
            }),
        }
    }

    /// Decodes the data field as attribute `A`, checking the attribute id first.
    pub fn attr<A: GmpAttrRepr>(&self) -> Result<A, ParseError> {
        if self.header.attr_id != A::ATTR_ID {
            return Err(ParseError::UnknownGmpAttr {
                class: MgmtClass::PERF_MGMT,
                attr: self.header.attr_id,
            });
        }
        A::parse(&self.data)
    }

    /// Puts attribute `a` into the data field (zeroing the rest) and sets the attribute id.
    pub fn set_attr<A: GmpAttrRepr>(&mut self, a: &A) -> Result<(), LenError> {
        let mut data = [0u8; PERF_DATA_LEN];
        a.emit(&mut data)?;
        self.data = data;
        self.header.attr_id = A::ATTR_ID;
        Ok(())
    }
}

/// The same one-line summary as [`gmp::Packet`]'s `Display`; `{:#}` adds the attribute's
/// field listing when the method carries one.
impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.header, f)?;
        if f.alternate() {
            writeln!(f)?;
            match PerfAttr::parse(self.attr_id(), &self.data) {
                Ok(a) => write!(f, "{a}")?,
                Err(e) => writeln!(f, "  attribute not decoded: {e}")?,
            }
        }
        Ok(())
    }
}

/// Every PerfMgt attribute this crate has a `Repr` for, chosen by attribute id.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PerfAttr {
    /// ClassPortInfo (0x0001).
    ClassPortInfo(ClassPortInfoRepr),
    /// PortCounters (0x0012).
    PortCounters(PortCountersRepr),
    /// PortCountersExtended (0x001D).
    PortCountersExt(PortCountersExtRepr),
}

impl PerfAttr {
    /// Parses `data` as attribute `id`; [`ParseError::UnknownGmpAttr`] for an id without a
    /// `Repr` here.
    pub fn parse(id: PmaAttrId, data: &[u8]) -> Result<PerfAttr, ParseError> {
        match id.0 {
            ClassPortInfoRepr::ATTR_ID => {
                ClassPortInfoRepr::parse(data).map(PerfAttr::ClassPortInfo)
            }
            PortCountersRepr::ATTR_ID => PortCountersRepr::parse(data).map(PerfAttr::PortCounters),
            PortCountersExtRepr::ATTR_ID => {
                PortCountersExtRepr::parse(data).map(PerfAttr::PortCountersExt)
            }
            _ => Err(ParseError::UnknownGmpAttr {
                class: MgmtClass::PERF_MGMT,
                attr: id.0,
            }),
        }
    }
    /// The attribute id.
    #[must_use]
    pub fn attr_id(&self) -> PmaAttrId {
        PmaAttrId(match self {
            PerfAttr::ClassPortInfo(_) => ClassPortInfoRepr::ATTR_ID,
            PerfAttr::PortCounters(_) => PortCountersRepr::ATTR_ID,
            PerfAttr::PortCountersExt(_) => PortCountersExtRepr::ATTR_ID,
        })
    }
    /// Writes the attribute into the front of `data`.
    pub fn emit(&self, data: &mut [u8]) -> Result<(), LenError> {
        match self {
            PerfAttr::ClassPortInfo(r) => r.emit(data),
            PerfAttr::PortCounters(r) => r.emit(data),
            PerfAttr::PortCountersExt(r) => r.emit(data),
        }
    }
}

impl fmt::Display for PerfAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerfAttr::ClassPortInfo(r) => fmt::Display::fmt(r, f),
            PerfAttr::PortCounters(r) => fmt::Display::fmt(r, f),
            PerfAttr::PortCountersExt(r) => fmt::Display::fmt(r, f),
        }
    }
}

/// Helpers shared by the PerfMgt attribute tests.
#[cfg(test)]
pub(crate) mod testdata {
    use crate::attr::testdata::mads;

    /// The first MAD with direction `dir` carrying PerfMgt attribute `attr` in a capture.
    pub fn perf_mad(text: &str, dir: &str, attr: u16) -> [u8; 256] {
        mads(text, dir)
            .into_iter()
            .find(|m| u16::from_be_bytes([m[16], m[17]]) == attr)
            .expect("no such MAD in the capture")
    }

    /// perfquery's field listing (every `Name:....value` line after the `#` header line).
    pub fn perfquery_listing(text: &str) -> String {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('$'))
            .map(|l| format!("{l}\n"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testdata::perf_mad;
    use super::*;
    use crate::codes::Status;

    const PC: &str = include_str!("../../testdata/pma_pc_hca1_p1.mads");

    #[test]
    fn parse_emit_round_trip() {
        for dir in ["snd", "rcv"] {
            for attr in [0x01, 0x12] {
                let m = perf_mad(PC, dir, attr);
                let r = Repr::parse_bytes(&m).unwrap();
                let mut out = [0xEEu8; 256];
                r.emit_bytes(&mut out).unwrap();
                let mut canonical = m;
                canonical[18..20].fill(0);
                canonical[24..64].fill(0);
                assert_eq!(out, canonical);
                assert_eq!(r.buffer_len(), MAD_LEN);
            }
        }
    }

    #[test]
    fn attr_by_id_and_set_attr() {
        let resp = Repr::parse_bytes(&perf_mad(PC, "rcv", 0x12)).unwrap();
        let pc: PortCountersRepr = resp.attr().unwrap();
        assert_eq!(pc.port_xmit_pkts, 10);
        assert!(matches!(
            resp.attr::<ClassPortInfoRepr>(),
            Err(ParseError::UnknownGmpAttr { attr: 0x12, .. })
        ));
        let mut r = resp;
        r.data = [0xFF; PERF_DATA_LEN];
        r.set_attr(&pc).unwrap();
        assert_eq!(r.header, resp.header);
        assert_eq!(&r.data[..44], &resp.data[..44]);
        assert!(
            r.data[44..].iter().all(|b| *b == 0),
            "set_attr zeroes the rest"
        );
        assert_eq!(
            PerfAttr::parse(PmaAttrId::PORT_COUNTERS, &resp.data).unwrap(),
            PerfAttr::PortCounters(pc)
        );
        assert!(matches!(
            PerfAttr::parse(PmaAttrId::PORT_SAMPLES_CONTROL, &resp.data),
            Err(ParseError::UnknownGmpAttr { attr: 0x10, .. })
        ));
    }

    #[test]
    fn request_matches_perfquery() {
        let sent = perf_mad(PC, "snd", 0x12);
        let tid = u64::from_be_bytes(sent[8..16].try_into().unwrap());
        let mut m = PerfMad::request(Method::GET, PmaAttrId::PORT_COUNTERS, 0, tid);
        m.data[1] = 1; // PortSelect
        assert_eq!(m.as_bytes(), &sent[..]);
        assert_eq!(m.attr(), PmaAttrId::PORT_COUNTERS);
    }

    #[test]
    fn rejects_other_classes_and_bad_status_passes() {
        let mut sa = perf_mad(PC, "snd", 0x12);
        sa[1] = 0x03;
        sa[2] = 2;
        assert!(matches!(
            Repr::parse_bytes(&sa),
            Err(ParseError::WrongClass { .. })
        ));
        let bad = perf_mad(
            include_str!("../../testdata/pma_pc_hca1_p9.mads"),
            "rcv",
            0x12,
        );
        let r = Repr::parse_bytes(&bad).unwrap();
        assert_eq!(r.header.status, Status::INVALID_FIELD, "ibsim: no port 9");
        assert!(Repr::parse_bytes(&bad[..255]).is_err());
        assert!(r.emit_bytes(&mut [0u8; 255]).is_err());
    }

    #[test]
    fn display() {
        let r = Repr::parse_bytes(&perf_mad(PC, "rcv", 0x12)).unwrap();
        assert_eq!(
            r.to_string(),
            format!("PerfGetResp(PortCounters) tid {:#x}", r.header.tid)
        );
        assert!(format!("{r:#}").contains("\nPortXmitPkts:....................10\n"));
    }
}

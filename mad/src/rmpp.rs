//! The RMPP header (IBA vol1 §13.6.2.1): bytes 24..35 of every MAD of a class that uses the
//! reliable multi-packet protocol (SubnAdm here), whether or not RMPP is active in that MAD.
//!
//! | byte | field |
//! |---|---|
//! | 24 | RMPPVersion (1) |
//! | 25 | RMPPType: 1 DATA, 2 ACK, 3 STOP, 4 ABORT |
//! | 26 | RRespTime (bits 7..3) / RMPPFlags (bits 2..0: Active, First, Last) |
//! | 27 | RMPPStatus |
//! | 28..31 | Data1: SegmentNumber (DATA, ACK) |
//! | 32..35 | Data2: PayloadLength (DATA), NewWindowLast (ACK) |
//!
//! [`RmppHeader`] is the view (zerocopy, cast with `RmppHeader::ref_from_prefix(&mad[24..])`;
//! [`crate::sa::Packet::rmpp`] does it for an SA MAD); [`Repr`] (re-exported as `RmppRepr`)
//! is the validated value, one variant per RMPPType, so that a DATA segment can not carry a
//! NewWindowLast and an ACK can not carry a PayloadLength.
//!
//! When RMPPFlags.Active is 0 the MAD is not part of an RMPP transfer and the other RMPP fields
//! have no meaning: [`Repr::parse`] returns [`Repr::Inactive`] without looking at them, and
//! [`Repr::emit`] writes twelve zero bytes for it.

pub mod transfer;

use core::fmt;

use zerocopy::byteorder::big_endian::U32;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{Layer, LenError, ParseError};
use crate::pretty::field;

/// Size of the RMPP header.
pub const RMPP_HEADER_LEN: usize = 12;
/// Offset of the RMPP header in a MAD.
pub const RMPP_HEADER_OFFSET: usize = 24;
/// The RMPPVersion this crate (and the kernel's `ib_mad`) speaks.
pub const RMPP_VERSION: u8 = 1;
/// RRespTime value meaning "no time given" (IBA vol1 §13.6.2.1).
pub const NO_RESP_TIME: u8 = 0x1F;

/// RMPP header, 12 bytes (IBA vol1 §13.6.2.1).
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct RmppHeader {
    /// RMPPVersion — byte 24 of the MAD (0 here).
    pub rmpp_version: u8,
    /// RMPPType — byte 25 (1 here).
    pub rmpp_type: u8,
    /// RRespTime (7..3) / RMPPFlags (2..0) — byte 26 (2 here).
    pub b2: u8,
    /// RMPPStatus — byte 27 (3 here).
    pub rmpp_status: u8,
    /// Data1: SegmentNumber for DATA and ACK — bytes 28..31 (4..7 here).
    pub data1: U32,
    /// Data2: PayloadLength for DATA, NewWindowLast for ACK — bytes 32..35 (8..11 here).
    pub data2: U32,
}
const _: () = assert!(size_of::<RmppHeader>() == RMPP_HEADER_LEN);
const _: () = assert!(core::mem::offset_of!(RmppHeader, b2) == 2);
const _: () = assert!(core::mem::offset_of!(RmppHeader, data1) == 4);
const _: () = assert!(core::mem::offset_of!(RmppHeader, data2) == 8);

crate::sub_byte_fields!(RmppHeader {
    /// RRespTime — byte 26, bits 7..3: the sender's response time, 4.096 µs × 2^value
    /// (0x1F = none given).
    resp_time, set_resp_time: b2[7..3];
    /// RMPPFlags — byte 26, bits 2..0 (raw; see [`RmppFlags`]).
    flags_raw, set_flags_raw: b2[2..0];
});

impl RmppHeader {
    /// RMPPFlags.
    #[must_use]
    pub fn flags(&self) -> RmppFlags {
        RmppFlags(self.flags_raw())
    }
    /// True if RMPPFlags.Active is set.
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.flags().active()
    }
    /// RMPPType.
    #[must_use]
    pub fn kind(&self) -> RmppType {
        RmppType(self.rmpp_type)
    }
    /// RMPPStatus.
    #[must_use]
    pub fn status(&self) -> RmppStatus {
        RmppStatus(self.rmpp_status)
    }
}

/// RMPPFlags (byte 26, bits 2..0).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct RmppFlags(pub u8);

impl RmppFlags {
    /// Active: this MAD is part of an RMPP transfer.
    pub const ACTIVE: u8 = 0x1;
    /// First: the first DATA segment.
    pub const FIRST: u8 = 0x2;
    /// Last: the last DATA segment.
    pub const LAST: u8 = 0x4;
    /// Active set.
    #[must_use]
    pub const fn active(self) -> bool {
        self.0 & Self::ACTIVE != 0
    }
    /// First set.
    #[must_use]
    pub const fn first(self) -> bool {
        self.0 & Self::FIRST != 0
    }
    /// Last set.
    #[must_use]
    pub const fn last(self) -> bool {
        self.0 & Self::LAST != 0
    }
}

macro_rules! rmpp_codes {
    ($(#[$m:meta])* $name:ident { $( $(#[$cm:meta])* $konst:ident = $val:expr, $text:literal; )* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
        pub struct $name(pub u8);
        impl $name {
            $( $(#[$cm])* pub const $konst: Self = Self($val); )*
            /// The IBA's name for the value, if it has one.
            #[must_use]
            pub fn spec_name(self) -> Option<&'static str> {
                match self.0 { $( $val => Some($text), )* _ => None }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.spec_name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}", self.0),
                }
            }
        }
    };
}

rmpp_codes! {
    /// RMPPType (byte 25).
    RmppType {
        /// Not an RMPP packet (RMPP inactive).
        NONE = 0, "None";
        /// DATA: a segment of the message.
        DATA = 1, "DATA";
        /// ACK: acknowledges segments and opens the window.
        ACK = 2, "ACK";
        /// STOP: the receiver stops the transfer (resources exhausted).
        STOP = 3, "STOP";
        /// ABORT: the transfer is abandoned; RMPPStatus says why.
        ABORT = 4, "ABORT";
    }
}

rmpp_codes! {
    /// RMPPStatus (byte 27; IBA vol1 §13.6.2.1, the codes the kernel's `ib_mad` names too).
    RmppStatus {
        /// Normal.
        NORMAL = 0, "Normal";
        /// Resources exhausted (in a STOP).
        RESOURCES_EXHAUSTED = 1, "ResourcesExhausted";
        /// Total transfer time too long (ABORT, "T2L").
        TOTAL_TIME_TOO_LONG = 118, "TotalTimeTooLong";
        /// Inconsistent Last and PayloadLength ("ILPL").
        INCONSISTENT_LAST = 119, "InconsistentLastAndPayloadLength";
        /// Inconsistent First and SegmentNumber ("IFSN").
        INCONSISTENT_FIRST = 120, "InconsistentFirstAndSegmentNumber";
        /// Bad RMPPType ("BadT").
        BAD_TYPE = 121, "BadRMPPType";
        /// NewWindowLast too small ("W2S").
        WINDOW_TOO_SMALL = 122, "NewWindowLastTooSmall";
        /// SegmentNumber too big ("S2B").
        SEGMENT_TOO_BIG = 123, "SegmentNumberTooBig";
        /// Illegal status ("IS").
        ILLEGAL_STATUS = 124, "IllegalStatus";
        /// Unsupported version ("UNV").
        UNSUPPORTED_VERSION = 125, "UnsupportedVersion";
        /// Too many retries ("TMR").
        TOO_MANY_RETRIES = 126, "TooManyRetries";
        /// Unspecified ("U").
        UNSPECIFIED = 127, "Unspecified";
    }
}

/// The RMPP header, validated (re-exported as `RmppRepr`); see the module docs.
///
/// `parse` of an active header rejects RMPPVersion ≠ 1 ([`ParseError::BadRmppVersion`]; the
/// receiver answers such a segment with ABORT / [`RmppStatus::UNSUPPORTED_VERSION`]) and an
/// RMPPType other than DATA/ACK/STOP/ABORT ([`ParseError::BadRmppType`]; ABORT /
/// [`RmppStatus::BAD_TYPE`]). Fields a type does not use (Data1/Data2 of STOP and ABORT, the
/// First/Last flags of ACK, STOP and ABORT) are reserved: ignored, emitted as zero. `emit`
/// keeps the low 5 bits of `resp_time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Repr {
    /// RMPPFlags.Active is 0: not part of an RMPP transfer.
    Inactive,
    /// A DATA segment.
    Data {
        /// RRespTime.
        resp_time: u8,
        /// RMPPFlags.First.
        first: bool,
        /// RMPPFlags.Last.
        last: bool,
        /// SegmentNumber (1 for the first segment).
        segment: u32,
        /// PayloadLength: in the first segment the total payload of the message, in the last
        /// the payload bytes of that segment, otherwise 0 (IBA vol1 §13.6.2.1).
        payload_len: u32,
    },
    /// An ACK.
    Ack {
        /// RRespTime.
        resp_time: u8,
        /// SegmentNumber: the last segment received in order.
        segment: u32,
        /// NewWindowLast: the last segment the sender may send.
        new_window_last: u32,
    },
    /// A STOP.
    Stop {
        /// RRespTime.
        resp_time: u8,
        /// RMPPStatus.
        status: RmppStatus,
    },
    /// An ABORT.
    Abort {
        /// RRespTime.
        resp_time: u8,
        /// RMPPStatus.
        status: RmppStatus,
    },
}

impl Repr {
    /// A single DATA segment carrying the whole message: First and Last, segment 1,
    /// PayloadLength `payload_len`, no response time given.
    #[must_use]
    pub const fn single(payload_len: u32) -> Repr {
        Repr::Data {
            resp_time: NO_RESP_TIME,
            first: true,
            last: true,
            segment: 1,
            payload_len,
        }
    }

    /// Validates a view.
    pub fn from_raw(h: &RmppHeader) -> Result<Repr, ParseError> {
        if !h.is_active() {
            return Ok(Repr::Inactive);
        }
        if h.rmpp_version != RMPP_VERSION {
            return Err(ParseError::BadRmppVersion {
                got: h.rmpp_version,
            });
        }
        let resp_time = h.resp_time();
        let f = h.flags();
        Ok(match h.kind() {
            RmppType::DATA => Repr::Data {
                resp_time,
                first: f.first(),
                last: f.last(),
                segment: h.data1.get(),
                payload_len: h.data2.get(),
            },
            RmppType::ACK => Repr::Ack {
                resp_time,
                segment: h.data1.get(),
                new_window_last: h.data2.get(),
            },
            RmppType::STOP => Repr::Stop {
                resp_time,
                status: h.status(),
            },
            RmppType::ABORT => Repr::Abort {
                resp_time,
                status: h.status(),
            },
            t => return Err(ParseError::BadRmppType { got: t.0 }),
        })
    }

    /// Parses the 12 bytes at the front of `buf` (the bytes from offset 24 of a MAD).
    pub fn parse(buf: &[u8]) -> Result<Repr, ParseError> {
        let h = RmppHeader::ref_from_prefix(buf)
            .map(|(h, _)| h)
            .map_err(|_| LenError {
                required: RMPP_HEADER_LEN,
                got: buf.len(),
                layer: Layer::Rmpp,
                offset: RMPP_HEADER_OFFSET,
            })?;
        Repr::from_raw(h)
    }

    /// The header as the zerocopy struct, reserved fields zero.
    #[must_use]
    pub fn to_raw(&self) -> RmppHeader {
        let mut h = RmppHeader::new_zeroed();
        let (t, rt, flags, status, d1, d2) = match *self {
            Repr::Inactive => return h,
            Repr::Data {
                resp_time,
                first,
                last,
                segment,
                payload_len,
            } => {
                let mut fl = RmppFlags::ACTIVE;
                if first {
                    fl |= RmppFlags::FIRST;
                }
                if last {
                    fl |= RmppFlags::LAST;
                }
                (
                    RmppType::DATA,
                    resp_time,
                    fl,
                    RmppStatus::NORMAL,
                    segment,
                    payload_len,
                )
            }
            Repr::Ack {
                resp_time,
                segment,
                new_window_last,
            } => (
                RmppType::ACK,
                resp_time,
                RmppFlags::ACTIVE,
                RmppStatus::NORMAL,
                segment,
                new_window_last,
            ),
            Repr::Stop { resp_time, status } => {
                (RmppType::STOP, resp_time, RmppFlags::ACTIVE, status, 0, 0)
            }
            Repr::Abort { resp_time, status } => {
                (RmppType::ABORT, resp_time, RmppFlags::ACTIVE, status, 0, 0)
            }
        };
        h.rmpp_version = RMPP_VERSION;
        h.rmpp_type = t.0;
        h.set_resp_time(rt);
        h.set_flags_raw(flags);
        h.rmpp_status = status.0;
        h.data1.set(d1);
        h.data2.set(d2);
        h
    }

    /// Bytes [`Repr::emit`] writes: [`RMPP_HEADER_LEN`].
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        RMPP_HEADER_LEN
    }

    /// Writes the header into the front of `buf` (the bytes from offset 24 of a MAD).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), LenError> {
        let got = buf.len();
        match buf.get_mut(..RMPP_HEADER_LEN) {
            Some(dst) => {
                dst.copy_from_slice(self.to_raw().as_bytes());
                Ok(())
            }
            None => Err(LenError {
                required: RMPP_HEADER_LEN,
                got,
                layer: Layer::Rmpp,
                offset: RMPP_HEADER_OFFSET,
            }),
        }
    }

    /// True unless [`Repr::Inactive`].
    #[must_use]
    pub const fn is_active(&self) -> bool {
        !matches!(self, Repr::Inactive)
    }
}

/// Field listing with IBA field names.
impl fmt::Display for RmppHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "RMPPVersion", self.rmpp_version)?;
        field(f, "RMPPType", self.kind())?;
        field(f, "RRespTime", self.resp_time())?;
        field(f, "RMPPFlags", format_args!("{:#x}", self.flags_raw()))?;
        field(f, "RMPPStatus", self.status())?;
        match self.kind() {
            RmppType::DATA => {
                field(f, "SegmentNumber", self.data1.get())?;
                field(f, "PayloadLength", self.data2.get())
            }
            RmppType::ACK => {
                field(f, "SegmentNumber", self.data1.get())?;
                field(f, "NewWindowLast", self.data2.get())
            }
            _ => {
                field(f, "Data1", format_args!("{:#x}", self.data1.get()))?;
                field(f, "Data2", format_args!("{:#x}", self.data2.get()))
            }
        }
    }
}

/// One short clause: `RMPP DATA F/L seg 1 len 112`, `RMPP inactive`.
impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Repr::Inactive => f.write_str("RMPP inactive"),
            Repr::Data {
                first,
                last,
                segment,
                payload_len,
                ..
            } => {
                f.write_str("RMPP DATA")?;
                match (first, last) {
                    (true, true) => f.write_str(" F/L")?,
                    (true, false) => f.write_str(" F")?,
                    (false, true) => f.write_str(" L")?,
                    (false, false) => {}
                }
                write!(f, " seg {segment} len {payload_len}")
            }
            Repr::Ack {
                segment,
                new_window_last,
                ..
            } => write!(f, "RMPP ACK seg {segment} nwl {new_window_last}"),
            Repr::Stop { status, .. } => write!(f, "RMPP STOP {status}"),
            Repr::Abort { status, .. } => write!(f, "RMPP ABORT {status}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first DATA segment of a multi-segment message: version 1, DATA, RRespTime 0x1F,
    /// Active|First, segment 1, PayloadLength 532. Synthetic: no tool here prints the RMPP
    /// headers the kernel's RMPP sender writes (ibsim's shim does no RMPP).
    static BYTES: [u8; 12] = [1, 1, 0xFB, 0, 0, 0, 0, 1, 0, 0, 0x02, 0x14];

    /// Bytes 24..35 of OpenSM's GetTableResp(NodeRecord) under ibsim's shim
    /// (mad/testdata/sa_nr_gettable.mads): OpenSM sets only Active and leaves version, type and
    /// segment to the kernel's RMPP sender, which the shim does not have.
    static OPENSM_UNDER_SHIM: [u8; 12] = [0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0];

    #[test]
    fn deconstruct() {
        let (h, _) = RmppHeader::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(h.rmpp_version, 1);
        assert_eq!(h.kind(), RmppType::DATA);
        assert_eq!(h.resp_time(), NO_RESP_TIME);
        assert!(h.flags().active() && h.flags().first() && !h.flags().last());
        assert_eq!(h.status(), RmppStatus::NORMAL);
        assert_eq!((h.data1.get(), h.data2.get()), (1, 532));
    }

    #[test]
    fn construct() {
        let mut h = RmppHeader::new_zeroed();
        h.rmpp_version = 1;
        h.rmpp_type = RmppType::DATA.0;
        h.set_resp_time(0x1F);
        h.set_flags_raw(RmppFlags::ACTIVE | RmppFlags::FIRST);
        h.data1.set(1);
        h.data2.set(532);
        assert_eq!(h.as_bytes(), &BYTES[..]);
        h.set_flags_raw(0);
        assert_eq!(h.resp_time(), 0x1F, "flags keep the response time");
    }

    #[test]
    fn parse_and_emit() {
        let r = Repr::parse(&BYTES).unwrap();
        assert_eq!(
            r,
            Repr::Data {
                resp_time: 0x1F,
                first: true,
                last: false,
                segment: 1,
                payload_len: 532
            }
        );
        let mut out = [0xAAu8; 12];
        r.emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
        for r in [
            Repr::Inactive,
            Repr::single(200),
            Repr::Ack {
                resp_time: 3,
                segment: 4,
                new_window_last: 36,
            },
            Repr::Stop {
                resp_time: 0,
                status: RmppStatus::RESOURCES_EXHAUSTED,
            },
            Repr::Abort {
                resp_time: 0x1F,
                status: RmppStatus::TOO_MANY_RETRIES,
            },
        ] {
            let mut b = [0u8; 12];
            r.emit(&mut b).unwrap();
            assert_eq!(Repr::parse(&b).unwrap(), r);
            assert_eq!(r.buffer_len(), 12);
        }
    }

    #[test]
    fn inactive_ignores_the_rest() {
        let mut b = BYTES;
        b[2] = 0xF8; // response time kept, Active clear
        assert_eq!(Repr::parse(&b).unwrap(), Repr::Inactive);
        let mut out = [0xFFu8; 12];
        Repr::Inactive.emit(&mut out).unwrap();
        assert_eq!(out, [0u8; 12]);
    }

    #[test]
    fn reserved_fields_are_dropped() {
        // An ABORT with Data1/Data2 and First set: those are reserved in an ABORT.
        let b = [1, 4, 0x03 | (5 << 3), 125, 0, 0, 0, 9, 0, 0, 0, 9];
        let r = Repr::parse(&b).unwrap();
        assert_eq!(
            r,
            Repr::Abort {
                resp_time: 5,
                status: RmppStatus::UNSUPPORTED_VERSION
            }
        );
        let mut out = [0u8; 12];
        r.emit(&mut out).unwrap();
        assert_eq!(out, [1, 4, 0x01 | (5 << 3), 125, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn rejects_bad_version_and_type() {
        assert_eq!(
            Repr::parse(&OPENSM_UNDER_SHIM),
            Err(ParseError::BadRmppVersion { got: 0 })
        );
        let mut b = BYTES;
        b[1] = 5;
        assert_eq!(Repr::parse(&b), Err(ParseError::BadRmppType { got: 5 }));
        b[1] = 0;
        assert_eq!(Repr::parse(&b), Err(ParseError::BadRmppType { got: 0 }));
    }

    #[test]
    fn impossible_len() {
        assert!(matches!(
            Repr::parse(&BYTES[..11]),
            Err(ParseError::Len(LenError {
                required: 12,
                got: 11,
                layer: Layer::Rmpp,
                offset: 24
            }))
        ));
        assert!(Repr::single(1).emit(&mut [0u8; 5]).is_err());
    }

    #[test]
    fn display() {
        assert_eq!(
            Repr::parse(&BYTES).unwrap().to_string(),
            "RMPP DATA F seg 1 len 532"
        );
        assert_eq!(Repr::single(20).to_string(), "RMPP DATA F/L seg 1 len 20");
        let (h, _) = RmppHeader::ref_from_prefix(&BYTES[..]).unwrap();
        let s = h.to_string();
        assert!(s.contains("RMPPType:........................DATA\n"), "{s}");
        assert!(s.contains("PayloadLength:...................532\n"), "{s}");
        assert_eq!(RmppStatus(200).to_string(), "200");
    }
}

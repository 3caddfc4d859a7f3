//! General-service MADs (GMPs): the common MAD header (IBA vol1 §13.4.3) as every class other
//! than subnet management uses it, the methods each class defines (§13.4.5, §15.2.2, §16.1.1)
//! and the class versions this crate speaks.
//!
//! A GMP is the 24-byte [`MadHeader`] followed by a class-specific layout: the SubnAdm MAD
//! ([`crate::sa`]: RMPP header, SA header, 200 bytes of records) and the PerfMgt MAD
//! ([`crate::perf`]: 40 reserved bytes, 192 bytes of attribute). On the wire a GMP is
//! [`MAD_LEN`] bytes; a transport that reassembles RMPP hands over longer ones (see
//! [`crate::port::PortCaps`]).
//!
//! # View and Repr (STYLE P1)
//!
//! - [`Packet`] (re-exported as `GmpPacket`) checks once that the buffer holds at least
//!   [`MAD_LEN`] bytes; then every header accessor is infallible and shows the bytes as they
//!   are. Setters need `AsMut<[u8]>` and change only their own field.
//! - [`Repr`] (re-exported as `GmpRepr`) is the validated common header: BaseVersion 1, a GMP
//!   class this crate decodes, that class's ClassVersion, a method the class defines.
//!   [`Repr::emit`] writes the 24 header bytes and nothing else.
//! - Both print one tcpdump-like line: `PerfGet(PortCounters) tid 0x1234`,
//!   `SubnAdmGetTableResp(NodeRecord) tid 0x99 status 0x000c`.

use core::fmt;

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros};

use crate::codes::{Method, MgmtClass, PmaAttrId, SaAttrId, SmpAttrId, Status};
use crate::error::{check_len, Layer, LenError, ParseError};
pub use crate::port::MAD_LEN;
pub use crate::smp::MadHeader;

/// Size of the common MAD header.
pub const MAD_HEADER_LEN: usize = 24;

/// The ClassVersion this crate speaks for `class`, or `None` for a class it does not decode:
/// 1 for the subnet-management classes (IBA vol1 §14.2.1) and PerfMgt (§16.1.1), 2 for
/// SubnAdm (§15.2.1; IBA 1.2 and later).
#[must_use]
pub const fn class_version(class: MgmtClass) -> Option<u8> {
    match class {
        MgmtClass::SUBN_LID_ROUTED | MgmtClass::SUBN_DIRECTED_ROUTE => Some(1),
        MgmtClass::SUBN_ADM => Some(2),
        MgmtClass::PERF_MGMT => Some(1),
        _ => None,
    }
}

/// True if `class` defines `method` (requests and responses alike), for the classes this
/// crate decodes:
/// - subnet management (§14.2.2): Get, Set, GetResp, Trap, TrapRepress;
/// - SubnAdm (§15.2.2): Get, Set, GetResp, Report, ReportResp, GetTable, GetTableResp,
///   GetTraceTable, GetTraceTableResp, GetMulti, GetMultiResp, Delete, DeleteResp;
/// - PerfMgt (§16.1.1): Get, Set, GetResp.
///
/// False for every method of any other class.
#[must_use]
pub fn method_defined(class: MgmtClass, method: Method) -> bool {
    const SMP: &[Method] = &[
        Method::GET,
        Method::SET,
        Method::GET_RESP,
        Method::TRAP,
        Method::TRAP_REPRESS,
    ];
    const SA: &[Method] = &[
        Method::GET,
        Method::SET,
        Method::GET_RESP,
        Method::REPORT,
        Method::REPORT_RESP,
        Method::GET_TABLE,
        Method::GET_TABLE_RESP,
        Method::GET_TRACE_TABLE,
        Method::GET_TRACE_TABLE_RESP,
        Method::GET_MULTI,
        Method::GET_MULTI_RESP,
        Method::DELETE,
        Method::DELETE_RESP,
    ];
    const PERF: &[Method] = &[Method::GET, Method::SET, Method::GET_RESP];
    let set: &[Method] = match class {
        MgmtClass::SUBN_LID_ROUTED | MgmtClass::SUBN_DIRECTED_ROUTE => SMP,
        MgmtClass::SUBN_ADM => SA,
        MgmtClass::PERF_MGMT => PERF,
        _ => &[],
    };
    set.contains(&method)
}

/// True for classes that use RMPP (IBA vol1 §13.6; SubnAdm is the one this crate decodes).
/// A kernel user_mad agent for such a class is registered with an RMPP version.
#[must_use]
pub const fn class_uses_rmpp(class: MgmtClass) -> bool {
    matches!(class, MgmtClass::SUBN_ADM)
}

/// An all-zero header, returned by [`Packet::header`] if the buffer shrank after
/// [`Packet::new_checked`] (only possible with a pathological `AsRef`), so no accessor panics.
static ZERO_HEADER: MadHeader = MadHeader {
    base_version: 0,
    mgmt_class: 0,
    class_version: 0,
    method: 0,
    status: U16::ZERO,
    class_specific: U16::ZERO,
    tid: U64::ZERO,
    attr_id: U16::ZERO,
    resv: U16::ZERO,
    attr_mod: U32::ZERO,
};

/// A view of any MAD's common header in a byte buffer of at least [`MAD_LEN`] bytes
/// (re-exported as `GmpPacket`). See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` after checking it holds at least [`MAD_LEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, LenError> {
        check_len(buffer.as_ref(), MAD_LEN, Layer::Gmp, 0)?;
        Ok(Packet { buffer })
    }
    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The whole buffer (header and payload).
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// Length of the MAD: [`MAD_LEN`], or more for a reassembled RMPP message.
    #[must_use]
    pub fn len(&self) -> usize {
        self.buffer.as_ref().len()
    }
    /// Never true: a checked view holds at least [`MAD_LEN`] bytes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.buffer.as_ref().is_empty()
    }
    /// The 24-byte common header as the zerocopy struct.
    #[must_use]
    pub fn header(&self) -> &MadHeader {
        match MadHeader::ref_from_prefix(self.buffer.as_ref()) {
            Ok((h, _)) => h,
            Err(_) => &ZERO_HEADER,
        }
    }
    /// BaseVersion (byte 0).
    #[must_use]
    pub fn base_version(&self) -> u8 {
        self.header().base_version
    }
    /// MgmtClass (byte 1).
    #[must_use]
    pub fn mgmt_class(&self) -> MgmtClass {
        MgmtClass(self.header().mgmt_class)
    }
    /// ClassVersion (byte 2).
    #[must_use]
    pub fn class_version(&self) -> u8 {
        self.header().class_version
    }
    /// Method (byte 3, bit 7 = R).
    #[must_use]
    pub fn method(&self) -> Method {
        Method(self.header().method)
    }
    /// Status (bytes 4..5; GMPs have no direction bit).
    #[must_use]
    pub fn status(&self) -> Status {
        Status(self.header().status.get())
    }
    /// ClassSpecific (bytes 6..7).
    #[must_use]
    pub fn class_specific(&self) -> u16 {
        self.header().class_specific.get()
    }
    /// TransactionID (bytes 8..15).
    #[must_use]
    pub fn tid(&self) -> u64 {
        self.header().tid.get()
    }
    /// AttributeID (bytes 16..17), raw: its meaning depends on the class.
    #[must_use]
    pub fn attr_id(&self) -> u16 {
        self.header().attr_id.get()
    }
    /// AttributeModifier (bytes 20..23).
    #[must_use]
    pub fn attr_mod(&self) -> u32 {
        self.header().attr_mod.get()
    }
    /// Everything after the common header (bytes 24..).
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(MAD_HEADER_LEN..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// The common header, writable; `None` only if the buffer shrank after `new_checked`.
    pub fn header_mut(&mut self) -> Option<&mut MadHeader> {
        MadHeader::mut_from_prefix(self.buffer.as_mut())
            .ok()
            .map(|(h, _)| h)
    }
    fn with_mut(&mut self, f: impl FnOnce(&mut MadHeader)) {
        if let Some(h) = self.header_mut() {
            f(h);
        }
    }
    /// Sets BaseVersion.
    pub fn set_base_version(&mut self, v: u8) {
        self.with_mut(|h| h.base_version = v);
    }
    /// Sets MgmtClass.
    pub fn set_mgmt_class(&mut self, v: MgmtClass) {
        self.with_mut(|h| h.mgmt_class = v.0);
    }
    /// Sets ClassVersion.
    pub fn set_class_version(&mut self, v: u8) {
        self.with_mut(|h| h.class_version = v);
    }
    /// Sets Method.
    pub fn set_method(&mut self, v: Method) {
        self.with_mut(|h| h.method = v.0);
    }
    /// Sets Status.
    pub fn set_status(&mut self, v: Status) {
        self.with_mut(|h| h.status.set(v.0));
    }
    /// Sets ClassSpecific.
    pub fn set_class_specific(&mut self, v: u16) {
        self.with_mut(|h| h.class_specific.set(v));
    }
    /// Sets TransactionID.
    pub fn set_tid(&mut self, v: u64) {
        self.with_mut(|h| h.tid.set(v));
    }
    /// Sets AttributeID.
    pub fn set_attr_id(&mut self, v: u16) {
        self.with_mut(|h| h.attr_id.set(v));
    }
    /// Sets AttributeModifier.
    pub fn set_attr_mod(&mut self, v: u32) {
        self.with_mut(|h| h.attr_mod.set(v));
    }
    /// Everything after the common header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(MAD_HEADER_LEN..)
            .unwrap_or(&mut [])
    }
}

/// The validated common header of a GMP (re-exported as `GmpRepr`); see the module docs.
///
/// `parse` rejects: BaseVersion ≠ 1 ([`ParseError::BadBaseVersion`]); a subnet-management
/// class or a class this crate does not decode ([`ParseError::NotGmp`]); a ClassVersion other
/// than [`class_version`] ([`ParseError::BadClassVersion`]); a method the class does not
/// define ([`ParseError::UnknownMethod`]). Bytes 18..19 are reserved: ignored, emitted as zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// MgmtClass.
    pub class: MgmtClass,
    /// ClassVersion.
    pub class_version: u8,
    /// Method.
    pub method: Method,
    /// Status.
    pub status: Status,
    /// ClassSpecific.
    pub class_specific: u16,
    /// TransactionID.
    pub tid: u64,
    /// AttributeID, raw (see [`Repr::sa_attr`], [`Repr::pma_attr`]).
    pub attr_id: u16,
    /// AttributeModifier.
    pub attr_mod: u32,
}

impl Repr {
    /// A request of `class` with that class's version, status 0.
    #[must_use]
    pub fn request(
        class: MgmtClass,
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        tid: u64,
    ) -> Repr {
        Repr {
            class,
            class_version: class_version(class).unwrap_or(1),
            method,
            status: Status::OK,
            class_specific: 0,
            tid,
            attr_id,
            attr_mod,
        }
    }

    /// Validates a view's header.
    pub fn parse<T: AsRef<[u8]>>(pkt: &Packet<T>) -> Result<Repr, ParseError> {
        Self::from_header(pkt.header())
    }

    /// Checks the length, then validates: `Repr::parse(&Packet::new_checked(buf)?)`.
    pub fn parse_bytes(buf: &[u8]) -> Result<Repr, ParseError> {
        Repr::parse(&Packet::new_checked(buf)?)
    }

    /// Validates a common header.
    pub fn from_header(h: &MadHeader) -> Result<Repr, ParseError> {
        if h.base_version != 1 {
            return Err(ParseError::BadBaseVersion {
                got: h.base_version,
            });
        }
        let class = MgmtClass(h.mgmt_class);
        let expected = match class_version(class) {
            Some(v) if !class.is_smp() => v,
            _ => return Err(ParseError::NotGmp { got: class }),
        };
        if h.class_version != expected {
            return Err(ParseError::BadClassVersion {
                class,
                got: h.class_version,
                expected,
            });
        }
        let method = Method(h.method);
        if !method_defined(class, method) {
            return Err(ParseError::UnknownMethod { class, method });
        }
        Ok(Repr {
            class,
            class_version: h.class_version,
            method,
            status: Status(h.status.get()),
            class_specific: h.class_specific.get(),
            tid: h.tid.get(),
            attr_id: h.attr_id.get(),
            attr_mod: h.attr_mod.get(),
        })
    }

    /// The header as the zerocopy struct, reserved bytes zero.
    #[must_use]
    pub fn to_header(&self) -> MadHeader {
        let mut h = MadHeader::new_zeroed();
        h.base_version = 1;
        h.mgmt_class = self.class.0;
        h.class_version = self.class_version;
        h.method = self.method.0;
        h.status.set(self.status.0);
        h.class_specific.set(self.class_specific);
        h.tid.set(self.tid);
        h.attr_id.set(self.attr_id);
        h.attr_mod.set(self.attr_mod);
        h
    }

    /// Bytes [`Repr::emit_bytes`] writes: [`MAD_HEADER_LEN`].
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        MAD_HEADER_LEN
    }

    /// Writes the header into a checked view (the payload is left alone).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, pkt: &mut Packet<T>) {
        let h = self.to_header();
        if let Some(dst) = pkt.header_mut() {
            *dst = h;
        }
    }

    /// Writes the header into the first [`MAD_HEADER_LEN`] bytes of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) -> Result<(), LenError> {
        check_len(buf, MAD_HEADER_LEN, Layer::MadHeader, 0)?;
        match MadHeader::mut_from_prefix(buf) {
            Ok((dst, _)) => {
                *dst = self.to_header();
                Ok(())
            }
            Err(_) => Err(LenError {
                required: MAD_HEADER_LEN,
                got: 0,
                layer: Layer::MadHeader,
                offset: 0,
            }),
        }
    }

    /// The header of the answer to this request with `status`: the response method
    /// ([`Method::response`]), the same TID, attribute and modifier. `None` if this is a
    /// response or a method that gets none.
    #[must_use]
    pub fn response(&self, status: Status) -> Option<Repr> {
        let method = self.method.response()?;
        Some(Repr {
            method,
            status,
            ..*self
        })
    }

    /// The attribute id as a SubnAdm attribute.
    #[must_use]
    pub fn sa_attr(&self) -> SaAttrId {
        SaAttrId(self.attr_id)
    }

    /// The attribute id as a PerfMgt attribute.
    #[must_use]
    pub fn pma_attr(&self) -> PmaAttrId {
        PmaAttrId(self.attr_id)
    }
}

/// Rewrites the Get or Set request in `mad` into the GetResp a MAD layer owes a request no
/// agent serves: status MethodAttrNotSupported (0x000C, IBA vol1 §13.4.7 Table 110), TID,
/// attribute and data kept. Returns false, leaving `mad` alone, for anything shorter than a MAD
/// header or another method (responses, Traps, Sends get no answer).
pub fn answer_unserved(mad: &mut [u8]) -> bool {
    let Ok((h, _)) = MadHeader::mut_from_prefix(mad) else {
        return false;
    };
    if !matches!(Method(h.method), Method::GET | Method::SET) {
        return false;
    }
    h.method = Method::GET_RESP.0;
    h.status.set(Status::METHOD_ATTR_NOT_SUPPORTED.0);
    true
}

/// A validated attribute value of a GMP class: the `Repr` half of STYLE P1 for attributes
/// that travel in GMPs (the GMP twin of [`crate::AttrRepr`]).
///
/// `parse` reads the wire struct from the front of `data` (the class's data field: bytes 64..
/// of a PerfMgt MAD, 56.. of a SubnAdm MAD), checking its length once; `emit` writes exactly
/// [`GmpAttrRepr::buffer_len`] bytes, reserved bits as zero, and fails (never panics) on a
/// short buffer.
pub trait GmpAttrRepr: Sized {
    /// The zerocopy wire struct (the view).
    type Raw: FromBytes + zerocopy::IntoBytes + zerocopy::KnownLayout + zerocopy::Immutable;
    /// The class whose attribute-id space [`GmpAttrRepr::ATTR_ID`] is in. ClassPortInfo has
    /// the same id in every class; it names PerfMgt here, which only error messages show.
    const CLASS: MgmtClass;
    /// The attribute id.
    const ATTR_ID: u16;

    /// Validates a view.
    fn from_raw(raw: &Self::Raw) -> Result<Self, ParseError>;
    /// The wire struct for this value, reserved bits zero.
    fn to_raw(&self) -> Self::Raw;

    /// The layer errors about this attribute name.
    fn layer() -> Layer {
        Layer::GmpAttr {
            class: Self::CLASS,
            attr: Self::ATTR_ID,
        }
    }
    /// Parses the attribute from the front of `data`.
    fn parse(data: &[u8]) -> Result<Self, ParseError> {
        let raw = crate::attr::view_at::<Self::Raw>(data, Self::layer())?;
        Self::from_raw(raw)
    }
    /// Writes the attribute into the front of `data` (at least [`GmpAttrRepr::buffer_len`]
    /// bytes).
    fn emit(&self, data: &mut [u8]) -> Result<(), LenError> {
        crate::attr::write_at(&self.to_raw(), data, Self::layer())
    }
    /// Bytes [`GmpAttrRepr::emit`] writes: the size of the wire struct.
    fn buffer_len(&self) -> usize {
        size_of::<Self::Raw>()
    }
}

/// The class prefix the IBA uses in method names: `Subn` (SubnGet), `SubnAdm` (SubnAdmGet),
/// `Perf` (PerfGet).
fn class_prefix(class: MgmtClass) -> Option<&'static str> {
    match class {
        MgmtClass::SUBN_LID_ROUTED | MgmtClass::SUBN_DIRECTED_ROUTE => Some("Subn"),
        MgmtClass::SUBN_ADM => Some("SubnAdm"),
        MgmtClass::PERF_MGMT => Some("Perf"),
        _ => None,
    }
}

/// The attribute name for the class, or its number.
struct AttrName(MgmtClass, u16);

impl fmt::Display for AttrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            MgmtClass::SUBN_ADM => write!(f, "{}", SaAttrId(self.1)),
            MgmtClass::PERF_MGMT => write!(f, "{}", PmaAttrId(self.1)),
            c if c.is_smp() => write!(f, "{}", SmpAttrId(self.1)),
            _ => write!(f, "{:#06x}", self.1),
        }
    }
}

/// Writes the one-line summary shared by [`Packet`] and [`Repr`].
pub(crate) fn write_summary(f: &mut fmt::Formatter<'_>, h: &MadHeader) -> fmt::Result {
    let class = MgmtClass(h.mgmt_class);
    match class_prefix(class) {
        Some(p) => f.write_str(p)?,
        None => write!(f, "class {:#04x} ", class.0)?,
    }
    write!(
        f,
        "{}({})",
        Method(h.method),
        AttrName(class, h.attr_id.get())
    )?;
    let attr_mod = h.attr_mod.get();
    if attr_mod != 0 {
        write!(f, " mod {attr_mod:#x}")?;
    }
    write!(f, " tid {:#x}", h.tid.get())?;
    let status = Status(h.status.get());
    if status != Status::OK {
        write!(f, " status {status}")?;
    }
    Ok(())
}

/// One line, tcpdump style: `PerfGet(PortCounters) tid 0x1234`. Prints any bytes as they are.
impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_summary(f, self.header())
    }
}

/// The same one-line summary as [`Packet`]'s `Display`.
impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_summary(f, &self.to_header())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::mads;
    use zerocopy::IntoBytes;

    /// perfquery's Get(PortCounters) to LID 2 port 1 on ibsim (mad/testdata/pma_pc_hca1_p1.mads,
    /// made by mad/testdata/capture.sh).
    const PC: &str = include_str!("../testdata/pma_pc_hca1_p1.mads");

    fn sent_pc() -> [u8; 256] {
        mads(PC, "snd").into_iter().find(|m| m[17] == 0x12).unwrap()
    }

    #[test]
    fn deconstruct() {
        let m = sent_pc();
        let p = Packet::new_checked(&m[..]).unwrap();
        assert_eq!(p.base_version(), 1);
        assert_eq!(p.mgmt_class(), MgmtClass::PERF_MGMT);
        assert_eq!(p.class_version(), 1);
        assert_eq!(p.method(), Method::GET);
        assert_eq!(p.status(), Status::OK);
        assert_eq!(p.class_specific(), 0);
        assert_eq!(p.attr_id(), PmaAttrId::PORT_COUNTERS.0);
        assert_eq!(p.attr_mod(), 0);
        assert_eq!(p.payload().len(), 232);
        assert_eq!(p.len(), MAD_LEN);
        assert!(!p.is_empty());
    }

    #[test]
    fn construct_and_round_trip() {
        let m = sent_pc();
        let r = Repr::parse_bytes(&m).unwrap();
        assert_eq!(r.pma_attr(), PmaAttrId::PORT_COUNTERS);
        let mut out = m;
        out[..24].fill(0xEE);
        let mut p = Packet::new_checked(&mut out[..]).unwrap();
        r.emit(&mut p);
        assert_eq!(out, m);
        let built = Repr::request(MgmtClass::PERF_MGMT, Method::GET, 0x12, 0, r.tid);
        assert_eq!(built, r);
        let mut raw = [0u8; MAD_LEN];
        let mut p = Packet::new_checked(&mut raw[..]).unwrap();
        p.set_base_version(1);
        p.set_mgmt_class(MgmtClass::PERF_MGMT);
        p.set_class_version(1);
        p.set_method(Method::GET);
        p.set_tid(r.tid);
        p.set_attr_id(0x12);
        assert_eq!(p.header().as_bytes(), &m[..24]);
        p.payload_mut()[40] = 9;
        assert_eq!(raw[64], 9);
    }

    #[test]
    fn parse_rejects() {
        let good = sent_pc();
        let with = |i: usize, v: u8| {
            let mut b = good;
            b[i] = v;
            Repr::parse_bytes(&b)
        };
        assert_eq!(with(0, 2), Err(ParseError::BadBaseVersion { got: 2 }));
        assert_eq!(
            with(1, 0x81),
            Err(ParseError::NotGmp {
                got: MgmtClass::SUBN_DIRECTED_ROUTE
            })
        );
        assert_eq!(
            with(1, 0x07),
            Err(ParseError::NotGmp {
                got: MgmtClass::COMM_MGMT
            })
        );
        assert_eq!(
            with(2, 2),
            Err(ParseError::BadClassVersion {
                class: MgmtClass::PERF_MGMT,
                got: 2,
                expected: 1
            })
        );
        assert!(matches!(
            with(3, Method::GET_TABLE.0),
            Err(ParseError::UnknownMethod { .. })
        ));
        assert!(matches!(
            Repr::parse_bytes(&good[..255]),
            Err(ParseError::Len(LenError { required: 256, .. }))
        ));
        // SubnAdm speaks class version 2 and defines GetTable.
        let mut sa = good;
        sa[1] = 0x03;
        sa[2] = 2;
        sa[3] = Method::GET_TABLE.0;
        assert_eq!(Repr::parse_bytes(&sa).unwrap().method, Method::GET_TABLE);
        sa[2] = 1;
        assert!(matches!(
            Repr::parse_bytes(&sa),
            Err(ParseError::BadClassVersion { expected: 2, .. })
        ));
    }

    #[test]
    fn reserved_bytes_are_dropped() {
        let mut m = sent_pc();
        m[18] = 0xAB;
        let r = Repr::parse_bytes(&m).unwrap();
        let mut out = [0u8; MAD_HEADER_LEN];
        r.emit_bytes(&mut out).unwrap();
        assert_eq!(out[18], 0);
        assert!(r.emit_bytes(&mut [0u8; 23]).is_err());
    }

    #[test]
    fn response_header() {
        let r = Repr::parse_bytes(&sent_pc()).unwrap();
        let resp = r.response(Status::METHOD_ATTR_NOT_SUPPORTED).unwrap();
        assert_eq!(resp.method, Method::GET_RESP);
        assert_eq!((resp.tid, resp.attr_id), (r.tid, r.attr_id));
        assert_eq!(resp.response(Status::OK), None, "no answer to an answer");
    }

    #[test]
    fn methods_per_class() {
        assert!(method_defined(MgmtClass::SUBN_ADM, Method::DELETE_RESP));
        assert!(!method_defined(MgmtClass::PERF_MGMT, Method::GET_TABLE));
        assert!(!method_defined(MgmtClass::SUBN_ADM, Method::TRAP));
        assert!(method_defined(
            MgmtClass::SUBN_DIRECTED_ROUTE,
            Method::TRAP_REPRESS
        ));
        assert!(!method_defined(MgmtClass::BM, Method::GET));
        assert!(class_uses_rmpp(MgmtClass::SUBN_ADM) && !class_uses_rmpp(MgmtClass::PERF_MGMT));
        assert_eq!(class_version(MgmtClass::COMM_MGMT), None);
    }

    #[test]
    fn display_one_line() {
        let m = sent_pc();
        let p = Packet::new_checked(&m[..]).unwrap();
        assert_eq!(
            p.to_string(),
            format!("PerfGet(PortCounters) tid {:#x}", p.tid())
        );
        let mut r = Repr::parse(&p).unwrap();
        r.class = MgmtClass::SUBN_ADM;
        r.class_version = 2;
        r.method = Method::GET_TABLE_RESP;
        r.attr_id = SaAttrId::NODE_RECORD.0;
        r.status = Status::METHOD_ATTR_NOT_SUPPORTED;
        r.attr_mod = 3;
        assert_eq!(
            r.to_string(),
            format!(
                "SubnAdmGetTableResp(NodeRecord) mod 0x3 tid {:#x} status MethodAttrNotSupported",
                r.tid
            )
        );
        r.class = MgmtClass(0x30);
        assert!(r.to_string().starts_with("class 0x30 GetTableResp(0x0011)"));
    }
}

//! The common MAD header (IBA vol1 §13.4.3) and the 256-byte SMP in its LID-routed
//! (§14.2.1.1) and directed-route (§14.2.1.2) forms.
//!
//! [`Smp`] is one zerocopy struct for both forms: in a LID-routed SMP (class 0x01) the
//! directed-route fields (hop pointer/count, DrSLID/DrDLID, the two paths) are reserved and must
//! be left zero. Cast it straight out of a transport buffer with
//! `Smp::ref_from_bytes(&buf[..256])` / `mut_from_bytes`; every field is alignment-1 big-endian
//! so no cast can fail on alignment, only on length.
//!
//! # View and Repr (STYLE P1)
//!
//! - [`Packet`] (re-exported as `SmpPacket`) wraps any `AsRef<[u8]>`. [`Packet::new_checked`]
//!   checks the length **once** (at least [`SMP_LEN`] bytes, else a [`LenError`]); after that no
//!   accessor can fail or panic, and no field is validated, so a view shows whatever bytes it is
//!   given. Setters need `AsMut<[u8]>` and touch only their own field.
//! - [`Repr`] (re-exported as `SmpRepr`) is the validated value. [`Repr::parse`] rejects what the
//!   IBA forbids in an SMP header with a typed [`ParseError`]; [`Repr::emit`] /
//!   [`Repr::emit_bytes`] never panic and write canonical bytes: reserved fields zero, DR paths
//!   only up to HopCount. `emit(parse(x))` is `x` canonicalised.
//! - Both print as one tcpdump-like line: `SubnGet(NodeInfo) DR 0,1,4 hop 0/2 tid 0x1234`.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::{Method, MgmtClass, SmpAttrId, Status};
use crate::types::{DrPath, Lid, MKey};

/// Size of every SMP on the wire.
pub const SMP_LEN: usize = 256;
/// Size of the SMP data field.
pub const SMP_DATA_LEN: usize = 64;
/// The directed-route direction bit in the status word (D, IBA vol1 §14.2.1.2).
pub const DR_DIRECTION_BIT: u16 = 0x8000;

/// Common MAD header, 24 bytes (IBA vol1 §13.4.3, Table 113 "MAD Common Fields").
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug)]
#[repr(C)]
pub struct MadHeader {
    /// BaseVersion — byte 0.
    pub base_version: u8,
    /// MgmtClass — byte 1.
    pub mgmt_class: u8,
    /// ClassVersion — byte 2.
    pub class_version: u8,
    /// Method (bit 7 = R) — byte 3.
    pub method: u8,
    /// Status — bytes 4..5.
    pub status: U16,
    /// ClassSpecific — bytes 6..7 (HopPointer/HopCount in DR SMPs).
    pub class_specific: U16,
    /// TransactionID — bytes 8..15.
    pub tid: U64,
    /// AttributeID — bytes 16..17.
    pub attr_id: U16,
    /// Reserved — bytes 18..19.
    pub resv: U16,
    /// AttributeModifier — bytes 20..23.
    pub attr_mod: U32,
}
const _: () = assert!(size_of::<MadHeader>() == 24);
const _: () = assert!(core::mem::offset_of!(MadHeader, tid) == 8);
const _: () = assert!(core::mem::offset_of!(MadHeader, attr_mod) == 20);

/// Subnet management packet, 256 bytes (IBA vol1 §14.2.1.1 LID-routed, §14.2.1.2 directed route).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
pub struct Smp {
    /// BaseVersion — byte 0 (1).
    pub base_version: u8,
    /// MgmtClass — byte 1 (0x01 or 0x81).
    pub mgmt_class: u8,
    /// ClassVersion — byte 2 (1).
    pub class_version: u8,
    /// Method — byte 3.
    pub method: u8,
    /// Status — bytes 4..5; in DR SMPs bit 15 is D.
    pub status: U16,
    /// HopPointer — byte 6 (DR only).
    pub hop_ptr: u8,
    /// HopCount — byte 7 (DR only).
    pub hop_cnt: u8,
    /// TransactionID — bytes 8..15.
    pub tid: U64,
    /// AttributeID — bytes 16..17.
    pub attr_id: U16,
    /// Reserved — bytes 18..19.
    pub resv: U16,
    /// AttributeModifier — bytes 20..23.
    pub attr_mod: U32,
    /// M_Key — bytes 24..31.
    pub m_key: U64,
    /// DrSLID — bytes 32..33 (DR only).
    pub dr_slid: U16,
    /// DrDLID — bytes 34..35 (DR only).
    pub dr_dlid: U16,
    /// Reserved — bytes 36..63.
    pub reserved: [u8; 28],
    /// SMP Data — bytes 64..127.
    pub data: [u8; 64],
    /// InitialPath — bytes 128..191 (DR only; index 0 unused).
    pub initial_path: [u8; 64],
    /// ReturnPath — bytes 192..255 (DR only; index 0 unused).
    pub return_path: [u8; 64],
}
const _: () = assert!(size_of::<Smp>() == SMP_LEN);
const _: () = assert!(core::mem::offset_of!(Smp, tid) == 8);
const _: () = assert!(core::mem::offset_of!(Smp, m_key) == 24);
const _: () = assert!(core::mem::offset_of!(Smp, dr_slid) == 32);
const _: () = assert!(core::mem::offset_of!(Smp, data) == 64);
const _: () = assert!(core::mem::offset_of!(Smp, initial_path) == 128);
const _: () = assert!(core::mem::offset_of!(Smp, return_path) == 192);

impl Smp {
    /// The management class.
    #[must_use]
    pub fn class(&self) -> MgmtClass {
        MgmtClass(self.mgmt_class)
    }
    /// True for a directed-route SMP (class 0x81).
    #[must_use]
    pub fn is_dr(&self) -> bool {
        self.mgmt_class == MgmtClass::SUBN_DIRECTED_ROUTE.0
    }
    /// The method.
    #[must_use]
    pub fn method(&self) -> Method {
        Method(self.method)
    }
    /// The attribute id.
    #[must_use]
    pub fn attr(&self) -> SmpAttrId {
        SmpAttrId(self.attr_id.get())
    }
    /// The status without the D bit.
    #[must_use]
    pub fn status(&self) -> Status {
        let raw = self.status.get();
        if self.is_dr() {
            Status(raw & Status::SMP_MASK)
        } else {
            Status(raw)
        }
    }
    /// Sets the status, keeping the D bit of a DR SMP.
    pub fn set_status(&mut self, s: Status) {
        let d = if self.is_dr() {
            self.status.get() & DR_DIRECTION_BIT
        } else {
            0
        };
        self.status.set(d | (s.0 & Status::SMP_MASK));
    }
    /// The D (direction) bit of a DR SMP: false outbound, true returning.
    #[must_use]
    pub fn direction(&self) -> bool {
        self.is_dr() && self.status.get() & DR_DIRECTION_BIT != 0
    }
    /// Sets or clears the D bit.
    pub fn set_direction(&mut self, returning: bool) {
        let s = self.status.get() & !DR_DIRECTION_BIT;
        self.status
            .set(if returning { s | DR_DIRECTION_BIT } else { s });
    }
    /// The M_Key.
    #[must_use]
    pub fn m_key(&self) -> MKey {
        MKey(self.m_key.get())
    }
    /// DrSLID.
    #[must_use]
    pub fn dr_slid(&self) -> Lid {
        Lid(self.dr_slid.get())
    }
    /// DrDLID.
    #[must_use]
    pub fn dr_dlid(&self) -> Lid {
        Lid(self.dr_dlid.get())
    }

    /// A zeroed request: version 1, the given class/method/attribute, TID and modifier.
    #[must_use]
    pub fn request(
        class: MgmtClass,
        method: Method,
        attr: SmpAttrId,
        attr_mod: u32,
        tid: u64,
    ) -> Smp {
        let mut s = Smp::new_zeroed();
        s.base_version = 1;
        s.mgmt_class = class.0;
        s.class_version = 1;
        s.method = method.0;
        s.tid.set(tid);
        s.attr_id.set(attr.0);
        s.attr_mod.set(attr_mod);
        s
    }

    /// A directed-route request along `path` with DrSLID = DrDLID = permissive, hop pointer 0.
    #[must_use]
    pub fn dr_request(
        method: Method,
        attr: SmpAttrId,
        attr_mod: u32,
        tid: u64,
        path: &DrPath,
    ) -> Smp {
        let mut s = Smp::request(MgmtClass::SUBN_DIRECTED_ROUTE, method, attr, attr_mod, tid);
        s.hop_cnt = path.len() as u8;
        s.hop_ptr = 0;
        s.dr_slid.set(Lid::PERMISSIVE.0);
        s.dr_dlid.set(Lid::PERMISSIVE.0);
        for (i, p) in path.ports().iter().enumerate() {
            s.initial_path[i + 1] = *p;
        }
        s
    }

    /// A LID-routed request (class 0x01).
    #[must_use]
    pub fn lid_request(method: Method, attr: SmpAttrId, attr_mod: u32, tid: u64) -> Smp {
        Smp::request(MgmtClass::SUBN_LID_ROUTED, method, attr, attr_mod, tid)
    }

    /// The InitialPath as a [`DrPath`] (entries 1..=hop_cnt), or `None` if hop_cnt > 63.
    #[must_use]
    pub fn initial_dr_path(&self) -> Option<DrPath> {
        let n = self.hop_cnt as usize;
        if n > DrPath::MAX_HOPS {
            return None;
        }
        DrPath::new(&self.initial_path[1..=n]).ok()
    }

    /// The ReturnPath entries 1..=hop_cnt, or `None` if hop_cnt > 63.
    #[must_use]
    pub fn return_dr_path(&self) -> Option<DrPath> {
        let n = self.hop_cnt as usize;
        if n > DrPath::MAX_HOPS {
            return None;
        }
        DrPath::new(&self.return_path[1..=n]).ok()
    }
}

impl core::fmt::Debug for Smp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Smp")
            .field("class", &self.class())
            .field("method", &self.method())
            .field("attr", &self.attr())
            .field("attr_mod", &self.attr_mod.get())
            .field("status", &self.status())
            .field("d", &self.direction())
            .field("hop_ptr", &self.hop_ptr)
            .field("hop_cnt", &self.hop_cnt)
            .field("tid", &self.tid.get())
            .finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------------------------
// Checked view and validated Repr (STYLE P1).
// ---------------------------------------------------------------------------------------------

use core::fmt;

use crate::error::{check_len, Layer, LenError, ParseError};

/// An all-zero SMP, returned by [`Packet::smp`] if the buffer shrank below 256 bytes after
/// [`Packet::new_checked`] (only possible with a pathological `AsRef`), so no accessor panics.
static ZERO_SMP: Smp = Smp {
    base_version: 0,
    mgmt_class: 0,
    class_version: 0,
    method: 0,
    status: U16::ZERO,
    hop_ptr: 0,
    hop_cnt: 0,
    tid: U64::ZERO,
    attr_id: U16::ZERO,
    resv: U16::ZERO,
    attr_mod: U32::ZERO,
    m_key: U64::ZERO,
    dr_slid: U16::ZERO,
    dr_dlid: U16::ZERO,
    reserved: [0; 28],
    data: [0; 64],
    initial_path: [0; 64],
    return_path: [0; 64],
};

/// A view of an SMP in any byte buffer (re-exported as `SmpPacket`).
///
/// [`Packet::new_checked`] checks once that the buffer holds at least [`SMP_LEN`] bytes; after
/// that every accessor is infallible and reads the first 256 bytes as they are — no field is
/// validated here (use [`Repr::parse`] for that), so a view can show any bytes, which is what a
/// tracer needs. Setters live in a separate `impl` that requires `AsMut<[u8]>` and change only
/// the bits of their own field (reserved bits and the D bit are preserved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` after checking it holds at least [`SMP_LEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, LenError> {
        check_len(buffer.as_ref(), SMP_LEN, Layer::Smp, 0)?;
        Ok(Packet { buffer })
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The 256 bytes as the zerocopy [`Smp`] struct.
    #[must_use]
    pub fn smp(&self) -> &Smp {
        match Smp::ref_from_prefix(self.buffer.as_ref()) {
            Ok((s, _)) => s,
            Err(_) => &ZERO_SMP,
        }
    }

    /// BaseVersion (byte 0).
    #[must_use]
    pub fn base_version(&self) -> u8 {
        self.smp().base_version
    }
    /// MgmtClass (byte 1).
    #[must_use]
    pub fn mgmt_class(&self) -> MgmtClass {
        self.smp().class()
    }
    /// ClassVersion (byte 2).
    #[must_use]
    pub fn class_version(&self) -> u8 {
        self.smp().class_version
    }
    /// Method (byte 3).
    #[must_use]
    pub fn method(&self) -> Method {
        self.smp().method()
    }
    /// Status without the D bit in a DR SMP (bytes 4..5).
    #[must_use]
    pub fn status(&self) -> Status {
        self.smp().status()
    }
    /// The D bit of a DR SMP (byte 4, bit 7); false for LID-routed SMPs.
    #[must_use]
    pub fn direction(&self) -> bool {
        self.smp().direction()
    }
    /// True for a directed-route SMP (class 0x81).
    #[must_use]
    pub fn is_dr(&self) -> bool {
        self.smp().is_dr()
    }
    /// HopPointer (byte 6; DR only).
    #[must_use]
    pub fn hop_ptr(&self) -> u8 {
        self.smp().hop_ptr
    }
    /// HopCount (byte 7; DR only).
    #[must_use]
    pub fn hop_cnt(&self) -> u8 {
        self.smp().hop_cnt
    }
    /// TransactionID (bytes 8..15).
    #[must_use]
    pub fn tid(&self) -> u64 {
        self.smp().tid.get()
    }
    /// AttributeID (bytes 16..17).
    #[must_use]
    pub fn attr_id(&self) -> SmpAttrId {
        self.smp().attr()
    }
    /// AttributeModifier (bytes 20..23).
    #[must_use]
    pub fn attr_mod(&self) -> u32 {
        self.smp().attr_mod.get()
    }
    /// M_Key (bytes 24..31).
    #[must_use]
    pub fn m_key(&self) -> MKey {
        self.smp().m_key()
    }
    /// DrSLID (bytes 32..33; DR only).
    #[must_use]
    pub fn dr_slid(&self) -> Lid {
        self.smp().dr_slid()
    }
    /// DrDLID (bytes 34..35; DR only).
    #[must_use]
    pub fn dr_dlid(&self) -> Lid {
        self.smp().dr_dlid()
    }
    /// SMP Data (bytes 64..127).
    #[must_use]
    pub fn data(&self) -> &[u8; SMP_DATA_LEN] {
        &self.smp().data
    }
    /// InitialPath (bytes 128..191; DR only, entry 0 unused).
    #[must_use]
    pub fn initial_path(&self) -> &[u8; 64] {
        &self.smp().initial_path
    }
    /// ReturnPath (bytes 192..255; DR only, entry 0 unused).
    #[must_use]
    pub fn return_path(&self) -> &[u8; 64] {
        &self.smp().return_path
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Applies `f` to the SMP; a no-op only if the buffer shrank after `new_checked`.
    fn with_mut(&mut self, f: impl FnOnce(&mut Smp)) {
        if let Ok((s, _)) = Smp::mut_from_prefix(self.buffer.as_mut()) {
            f(s);
        }
    }
    /// The 256 bytes as a mutable [`Smp`]; `None` only if the buffer shrank after
    /// `new_checked`.
    pub fn smp_mut(&mut self) -> Option<&mut Smp> {
        Smp::mut_from_prefix(self.buffer.as_mut())
            .ok()
            .map(|(s, _)| s)
    }
    /// Sets BaseVersion.
    pub fn set_base_version(&mut self, v: u8) {
        self.with_mut(|s| s.base_version = v);
    }
    /// Sets MgmtClass.
    pub fn set_mgmt_class(&mut self, v: MgmtClass) {
        self.with_mut(|s| s.mgmt_class = v.0);
    }
    /// Sets ClassVersion.
    pub fn set_class_version(&mut self, v: u8) {
        self.with_mut(|s| s.class_version = v);
    }
    /// Sets Method.
    pub fn set_method(&mut self, v: Method) {
        self.with_mut(|s| s.method = v.0);
    }
    /// Sets the status, keeping the D bit of a DR SMP.
    pub fn set_status(&mut self, v: Status) {
        self.with_mut(|s| s.set_status(v));
    }
    /// Sets or clears the D bit.
    pub fn set_direction(&mut self, returning: bool) {
        self.with_mut(|s| s.set_direction(returning));
    }
    /// Sets HopPointer.
    pub fn set_hop_ptr(&mut self, v: u8) {
        self.with_mut(|s| s.hop_ptr = v);
    }
    /// Sets HopCount.
    pub fn set_hop_cnt(&mut self, v: u8) {
        self.with_mut(|s| s.hop_cnt = v);
    }
    /// Sets TransactionID.
    pub fn set_tid(&mut self, v: u64) {
        self.with_mut(|s| s.tid.set(v));
    }
    /// Sets AttributeID.
    pub fn set_attr_id(&mut self, v: SmpAttrId) {
        self.with_mut(|s| s.attr_id.set(v.0));
    }
    /// Sets AttributeModifier.
    pub fn set_attr_mod(&mut self, v: u32) {
        self.with_mut(|s| s.attr_mod.set(v));
    }
    /// Sets M_Key.
    pub fn set_m_key(&mut self, v: MKey) {
        self.with_mut(|s| s.m_key.set(v.0));
    }
    /// Sets DrSLID.
    pub fn set_dr_slid(&mut self, v: Lid) {
        self.with_mut(|s| s.dr_slid.set(v.0));
    }
    /// Sets DrDLID.
    pub fn set_dr_dlid(&mut self, v: Lid) {
        self.with_mut(|s| s.dr_dlid.set(v.0));
    }
    /// The data field, writable.
    pub fn data_mut(&mut self) -> Option<&mut [u8; SMP_DATA_LEN]> {
        self.smp_mut().map(|s| &mut s.data)
    }
}

/// The DR path of a view's InitialPath, entries 1..=min(hop_cnt, 63); never fails.
fn path_of(entries: &[u8; 64], hop_cnt: u8) -> DrPath {
    let n = usize::from(hop_cnt).min(DrPath::MAX_HOPS);
    entries
        .get(1..=n)
        .and_then(|p| DrPath::new(p).ok())
        .unwrap_or_default()
}

/// The SMP method in the IBA's `Subn*` spelling (SubnGet, SubnGetResp, …).
struct SubnMethod(Method);

impl fmt::Display for SubnMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Subn{}", self.0)
    }
}

/// Writes the one-line summary shared by [`Packet`] and [`Repr`].
#[allow(clippy::too_many_arguments)]
fn write_summary(
    f: &mut fmt::Formatter<'_>,
    class: MgmtClass,
    method: Method,
    attr: SmpAttrId,
    attr_mod: u32,
    status: Status,
    tid: u64,
    m_key: MKey,
    dr: Option<(&DrPath, u8, u8, bool, Lid, Lid)>,
) -> fmt::Result {
    if !class.is_smp() {
        write!(f, "class {:#04x} ", class.0)?;
    }
    write!(f, "{}({attr})", SubnMethod(method))?;
    if attr_mod != 0 {
        write!(f, " mod {attr_mod:#x}")?;
    }
    match dr {
        Some((path, hop_ptr, hop_cnt, d, slid, dlid)) => {
            write!(f, " DR {path} hop {hop_ptr}/{hop_cnt}")?;
            if d {
                f.write_str(" D=1")?;
            }
            if !slid.is_permissive() {
                write!(f, " slid {slid}")?;
            }
            if !dlid.is_permissive() {
                write!(f, " dlid {dlid}")?;
            }
        }
        None if class == MgmtClass::SUBN_LID_ROUTED => f.write_str(" LID")?,
        None => {}
    }
    write!(f, " tid {tid:#x}")?;
    if status != Status::OK {
        write!(f, " status {status}")?;
    }
    if m_key.0 != 0 {
        write!(f, " mkey {:#018x}", m_key.0)?;
    }
    Ok(())
}

/// One line, tcpdump style: `SubnGet(NodeInfo) DR 0,1,4 hop 0/2 tid 0x1234`. Prints any bytes
/// as they are (an out-of-range hop count shows the first 63 path entries); `{:#}` adds the
/// attribute listing as [`crate::pretty::pretty_smp`] does.
impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return write!(f, "{}", crate::pretty::pretty_smp(self.buffer.as_ref()));
        }
        let s = self.smp();
        let path = path_of(&s.initial_path, s.hop_cnt);
        let dr = s.is_dr().then_some((
            &path,
            s.hop_ptr,
            s.hop_cnt,
            s.direction(),
            s.dr_slid(),
            s.dr_dlid(),
        ));
        write_summary(
            f,
            s.class(),
            s.method(),
            s.attr(),
            s.attr_mod.get(),
            s.status(),
            s.tid.get(),
            s.m_key(),
            dr,
        )
    }
}

/// Directed-route fields of an SMP (IBA vol1 §14.2.1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrRoute {
    /// The D bit: false on the outbound path, true on the return path.
    pub returning: bool,
    /// HopPointer (0..=hop count + 1).
    pub hop_ptr: u8,
    /// DrSLID.
    pub dr_slid: Lid,
    /// DrDLID.
    pub dr_dlid: Lid,
    /// InitialPath\[1..=HopCount\]; its length is the HopCount.
    pub initial_path: DrPath,
    /// ReturnPath\[1..=HopCount\]. `emit` writes at most HopCount entries of it.
    pub return_path: DrPath,
}

impl DrRoute {
    /// HopCount: the length of the initial path.
    #[must_use]
    pub fn hop_cnt(&self) -> u8 {
        // A DrPath holds at most 63 hops, so this never truncates.
        u8::try_from(self.initial_path.len()).unwrap_or(u8::MAX)
    }
}

/// How an SMP is routed: by LID (class 0x01) or directed (class 0x81).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Route {
    /// LID-routed (IBA vol1 §14.2.1.1): the DR fields are reserved.
    Lid,
    /// Directed route, with its fields.
    Directed(DrRoute),
}

/// The validated semantic value of an SMP (re-exported as `SmpRepr`).
///
/// [`Repr::parse`] accepts exactly: BaseVersion 1; MgmtClass 0x01 or 0x81; ClassVersion 1; a
/// subnet-management method (Get, Set, GetResp, Trap, TrapRepress; IBA vol1 §14.2.2); and for DR
/// SMPs a HopCount of at most 63 (C14-6) and a HopPointer of at most HopCount + 1. The attribute
/// id is not checked here (the data field stays raw); decode it with [`Repr::attr`] or
/// [`crate::attr::SmpAttr::parse`].
///
/// Reserved fields — bytes 18..19, 36..63 of a DR SMP, bytes 6..7 and 32..63 and 128..255 of a
/// LID-routed SMP, path entries 0 and beyond HopCount — are ignored and not stored, so
/// [`Repr::emit`] writes them as zero. For a DR SMP the D bit is [`DrRoute::returning`] and
/// `status` holds the other 15 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Method.
    pub method: Method,
    /// Status (without the D bit for DR SMPs).
    pub status: Status,
    /// TransactionID.
    pub tid: u64,
    /// AttributeID.
    pub attr_id: SmpAttrId,
    /// AttributeModifier.
    pub attr_mod: u32,
    /// M_Key.
    pub m_key: MKey,
    /// LID-routed or directed route.
    pub route: Route,
    /// The SMP data field, undecoded.
    pub data: [u8; SMP_DATA_LEN],
}

impl Repr {
    /// Validates a checked view; see the type docs for what is rejected.
    pub fn parse<T: AsRef<[u8]>>(pkt: &Packet<T>) -> Result<Repr, ParseError> {
        let s = pkt.smp();
        if s.base_version != 1 {
            return Err(ParseError::BadBaseVersion {
                got: s.base_version,
            });
        }
        let class = s.class();
        if !class.is_smp() {
            return Err(ParseError::NotSmp { got: class });
        }
        if s.class_version != 1 {
            return Err(ParseError::BadClassVersion {
                class,
                got: s.class_version,
                expected: 1,
            });
        }
        let method = s.method();
        if !matches!(
            method,
            Method::GET | Method::SET | Method::GET_RESP | Method::TRAP | Method::TRAP_REPRESS
        ) {
            return Err(ParseError::UnknownMethod { class, method });
        }
        let route = if s.is_dr() {
            // C14-6: HopCount is 0..=63.
            if usize::from(s.hop_cnt) > DrPath::MAX_HOPS {
                return Err(ParseError::BadHopCount { hop_cnt: s.hop_cnt });
            }
            if u16::from(s.hop_ptr) > u16::from(s.hop_cnt) + 1 {
                return Err(ParseError::BadHopPointer {
                    hop_ptr: s.hop_ptr,
                    hop_cnt: s.hop_cnt,
                });
            }
            Route::Directed(DrRoute {
                returning: s.direction(),
                hop_ptr: s.hop_ptr,
                dr_slid: s.dr_slid(),
                dr_dlid: s.dr_dlid(),
                initial_path: path_of(&s.initial_path, s.hop_cnt),
                return_path: path_of(&s.return_path, s.hop_cnt),
            })
        } else {
            Route::Lid
        };
        Ok(Repr {
            method,
            status: s.status(),
            tid: s.tid.get(),
            attr_id: s.attr(),
            attr_mod: s.attr_mod.get(),
            m_key: s.m_key(),
            route,
            data: s.data,
        })
    }

    /// Checks the length, then validates: `Repr::parse(&Packet::new_checked(buf)?)`.
    pub fn parse_bytes(buf: &[u8]) -> Result<Repr, ParseError> {
        Repr::parse(&Packet::new_checked(buf)?)
    }

    /// Bytes [`Repr::emit`] writes: always [`SMP_LEN`].
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        SMP_LEN
    }

    /// The SMP as the zerocopy struct, reserved fields zero.
    #[must_use]
    pub fn to_smp(&self) -> Smp {
        let mut s = Smp::new_zeroed();
        s.base_version = 1;
        s.class_version = 1;
        s.method = self.method.0;
        s.tid.set(self.tid);
        s.attr_id.set(self.attr_id.0);
        s.attr_mod.set(self.attr_mod);
        s.m_key.set(self.m_key.0);
        s.data = self.data;
        match &self.route {
            Route::Lid => {
                s.mgmt_class = MgmtClass::SUBN_LID_ROUTED.0;
                s.status.set(self.status.0);
            }
            Route::Directed(dr) => {
                s.mgmt_class = MgmtClass::SUBN_DIRECTED_ROUTE.0;
                let d = if dr.returning { DR_DIRECTION_BIT } else { 0 };
                s.status.set(d | (self.status.0 & Status::SMP_MASK));
                s.hop_ptr = dr.hop_ptr;
                s.hop_cnt = dr.hop_cnt();
                s.dr_slid.set(dr.dr_slid.0);
                s.dr_dlid.set(dr.dr_dlid.0);
                let n = dr.initial_path.len();
                for (dst, src) in s
                    .initial_path
                    .iter_mut()
                    .skip(1)
                    .zip(dr.initial_path.ports())
                {
                    *dst = *src;
                }
                for (dst, src) in s
                    .return_path
                    .iter_mut()
                    .skip(1)
                    .zip(dr.return_path.ports())
                    .take(n)
                {
                    *dst = *src;
                }
            }
        }
        s
    }

    /// Writes the SMP into a checked view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, pkt: &mut Packet<T>) {
        let smp = self.to_smp();
        if let Some(dst) = pkt.smp_mut() {
            *dst = smp;
        }
    }

    /// Writes the SMP into the first [`SMP_LEN`] bytes of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) -> Result<(), LenError> {
        let mut pkt = Packet::new_checked(buf)?;
        self.emit(&mut pkt);
        Ok(())
    }

    /// Decodes the data field as attribute `A`, checking the attribute id first.
    pub fn attr<A: crate::attr::AttrRepr>(&self) -> Result<A, ParseError> {
        if self.attr_id != A::ATTR_ID {
            return Err(ParseError::WrongAttr {
                expected: A::ATTR_ID,
                got: self.attr_id,
            });
        }
        A::parse(&self.data)
    }

    /// Puts attribute `a` into the data field (zeroing the rest of it) and sets the attribute id.
    pub fn set_attr<A: crate::attr::AttrRepr>(&mut self, a: &A) -> Result<(), LenError> {
        let mut data = [0u8; SMP_DATA_LEN];
        a.emit(&mut data)?;
        self.data = data;
        self.attr_id = A::ATTR_ID;
        Ok(())
    }
}

/// The same one-line summary as [`Packet`]'s `Display`.
impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (class, dr) = match &self.route {
            Route::Lid => (MgmtClass::SUBN_LID_ROUTED, None),
            Route::Directed(d) => (
                MgmtClass::SUBN_DIRECTED_ROUTE,
                Some((
                    &d.initial_path,
                    d.hop_ptr,
                    d.hop_cnt(),
                    d.returning,
                    d.dr_slid,
                    d.dr_dlid,
                )),
            ),
        };
        write_summary(
            f,
            class,
            self.method,
            self.attr_id,
            self.attr_mod,
            self.status,
            self.tid,
            self.m_key,
            dr,
        )
    }
}

#[cfg(test)]
mod packet_tests {
    use super::*;
    use crate::attr::testdata::{mads, rcv};
    use crate::attr::NodeInfoRepr;

    /// GetResp to `smpquery -K -D nodeinfo 0,3,1` on ibsim (mad/testdata/ni_hca2_dr3.mads,
    /// made by mad/testdata/capture.sh): a 2-hop DR SMP on its way back (D=1, hop_ptr 0).
    /// Its ReturnPath holds stale bytes beyond HopCount, as real buffers do.
    const DR2: &str = include_str!("../testdata/ni_hca2_dr3.mads");
    /// GetResp to the LID-routed `smpquery -K nodeinfo 3` (mad/testdata/ni_sw2_lid3.mads).
    const LID: &str = include_str!("../testdata/ni_sw2_lid3.mads");

    #[test]
    fn deconstruct_dr() {
        let buf = rcv(DR2, 0x11, None);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.base_version(), 1);
        assert_eq!(p.mgmt_class(), MgmtClass::SUBN_DIRECTED_ROUTE);
        assert_eq!(p.class_version(), 1);
        assert_eq!(p.method(), Method::GET_RESP);
        assert_eq!(p.status(), Status::OK);
        assert!(p.direction() && p.is_dr());
        assert_eq!((p.hop_ptr(), p.hop_cnt()), (0, 2));
        assert_eq!(p.tid() & 0xFFFF_FFFF, 0x5a94_6723);
        assert_eq!(p.attr_id(), SmpAttrId::NODE_INFO);
        assert_eq!(p.attr_mod(), 0);
        assert_eq!(p.m_key(), MKey(0));
        assert_eq!(
            (p.dr_slid(), p.dr_dlid()),
            (Lid::PERMISSIVE, Lid::PERMISSIVE)
        );
        assert_eq!(&p.initial_path()[..4], &[0, 3, 1, 0]);
        assert_eq!(&p.return_path()[..4], &[0, 3, 1, 0]);
    }

    #[test]
    fn deconstruct_lid() {
        let buf = rcv(LID, 0x11, None);
        let p = Packet::new_checked(buf).unwrap();
        assert_eq!(p.mgmt_class(), MgmtClass::SUBN_LID_ROUTED);
        assert!(!p.direction() && !p.is_dr());
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.route, Route::Lid);
        assert_eq!(r.attr::<NodeInfoRepr>().unwrap().num_ports, 8);
    }

    #[test]
    fn construct_request_matches_smpquery() {
        // The request smpquery sent, rebuilt with the setters on a zeroed buffer.
        let sent = mads(DR2, "snd")[0];
        let mut buf = [0u8; SMP_LEN];
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        p.set_base_version(1);
        p.set_mgmt_class(MgmtClass::SUBN_DIRECTED_ROUTE);
        p.set_class_version(1);
        p.set_method(Method::GET);
        p.set_hop_cnt(2);
        p.set_tid(u64::from_be_bytes(sent[8..16].try_into().unwrap()));
        p.set_attr_id(SmpAttrId::NODE_INFO);
        p.set_dr_slid(Lid::PERMISSIVE);
        p.set_dr_dlid(Lid::PERMISSIVE);
        let s = p.smp_mut().unwrap();
        s.initial_path[1] = 3;
        s.initial_path[2] = 1;
        assert_eq!(buf, sent);
        // The same through the Repr and through Smp::dr_request.
        let r = Repr::parse_bytes(&sent).unwrap();
        let mut out = [0xFFu8; SMP_LEN];
        r.emit_bytes(&mut out).unwrap();
        assert_eq!(out, sent);
        let path = DrPath::new(&[3, 1]).unwrap();
        let d = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, r.tid, &path);
        assert_eq!(d.as_bytes(), &sent[..]);
    }

    #[test]
    fn setters_keep_d_bit_and_neighbours() {
        let mut buf = rcv(DR2, 0x11, None);
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        p.set_status(Status::INVALID_FIELD);
        assert!(p.direction());
        assert_eq!(p.status(), Status::INVALID_FIELD);
        p.set_direction(false);
        assert_eq!(p.status(), Status::INVALID_FIELD);
        p.set_attr_mod(7);
        assert_eq!(p.attr_id(), SmpAttrId::NODE_INFO);
        if let Some(d) = p.data_mut() {
            d[0] = 9;
        }
        assert_eq!(p.data()[0], 9);
        assert_eq!(p.into_inner()[64], 9);
    }

    #[test]
    fn parse_and_emit_dr_canonicalises_reserved() {
        let buf = rcv(DR2, 0x11, None);
        let r = Repr::parse_bytes(&buf).unwrap();
        let Route::Directed(dr) = r.route else {
            panic!("not DR")
        };
        assert!(dr.returning);
        assert_eq!((dr.hop_ptr, dr.hop_cnt()), (0, 2));
        assert_eq!(dr.initial_path.ports(), &[3, 1]);
        assert_eq!(dr.return_path.ports(), &[3, 1]);
        let ni = r.attr::<NodeInfoRepr>().unwrap();
        assert_eq!(ni.port_guid.0, 0x10_0004);
        let mut out = [0u8; SMP_LEN];
        r.emit_bytes(&mut out).unwrap();
        let mut canonical = buf;
        canonical[195..].fill(0); // ReturnPath beyond HopCount: stale bytes dropped
        assert_eq!(out, canonical);
        assert_ne!(buf, canonical, "the capture does carry stale bytes");
        assert_eq!(r.buffer_len(), SMP_LEN);
    }

    #[test]
    fn every_captured_mad_round_trips() {
        let files = [
            include_str!("../testdata/ni_sw1_dr0.mads"),
            include_str!("../testdata/pi_sw1_p3_dr0.mads"),
            include_str!("../testdata/lft_sw2_dr3.mads"),
            include_str!("../testdata/sminfo_lid1.mads"),
            include_str!("../testdata/vlarb_hca1_dr1.mads"),
        ];
        for text in files {
            for dir in ["snd", "rcv"] {
                for m in mads(text, dir) {
                    let r = Repr::parse_bytes(&m).unwrap();
                    let mut out = [0u8; SMP_LEN];
                    r.emit_bytes(&mut out).unwrap();
                    assert_eq!(Repr::parse_bytes(&out).unwrap(), r);
                    assert_eq!(&out[..128], &canonical_head(&m)[..]);
                }
            }
        }
    }

    /// Bytes 0..127 with the reserved fields cleared.
    fn canonical_head(m: &[u8; 256]) -> [u8; 128] {
        let mut h: [u8; 128] = m[..128].try_into().unwrap();
        h[18..20].fill(0);
        if m[1] == 0x81 {
            h[36..64].fill(0);
        } else {
            h[6..8].fill(0);
            h[32..64].fill(0);
        }
        h
    }

    #[test]
    fn impossible_len() {
        let buf = rcv(DR2, 0x11, None);
        assert_eq!(
            Packet::new_checked(&buf[..255]),
            Err(LenError {
                required: 256,
                got: 255,
                layer: Layer::Smp,
                offset: 0
            })
        );
        assert!(matches!(Repr::parse_bytes(&[]), Err(ParseError::Len(_))));
        let r = Repr::parse_bytes(&buf).unwrap();
        assert!(r.emit_bytes(&mut [0u8; 100]).is_err());
    }

    #[test]
    fn parse_rejects_invalid_headers() {
        let good = rcv(DR2, 0x11, None);
        let with = |i: usize, v: u8| {
            let mut b = good;
            b[i] = v;
            Repr::parse_bytes(&b)
        };
        assert_eq!(with(0, 2), Err(ParseError::BadBaseVersion { got: 2 }));
        assert_eq!(
            with(1, 0x03),
            Err(ParseError::NotSmp {
                got: MgmtClass::SUBN_ADM
            })
        );
        assert!(matches!(
            with(2, 2),
            Err(ParseError::BadClassVersion { got: 2, .. })
        ));
        assert!(matches!(
            with(3, 0x06),
            Err(ParseError::UnknownMethod {
                method: Method::REPORT,
                ..
            })
        ));
        assert_eq!(with(7, 64), Err(ParseError::BadHopCount { hop_cnt: 64 }));
        assert_eq!(
            with(6, 4),
            Err(ParseError::BadHopPointer {
                hop_ptr: 4,
                hop_cnt: 2
            })
        );
        assert!(with(6, 3).is_ok(), "hop_ptr = hop_cnt + 1 is legal");
        // A LID-routed SMP may carry anything in the DR-only bytes.
        let mut lid = rcv(LID, 0x11, None);
        lid[7] = 200;
        assert!(Repr::parse_bytes(&lid).is_ok());
    }

    #[test]
    fn wrong_attr() {
        let r = Repr::parse_bytes(&rcv(DR2, 0x11, None)).unwrap();
        assert_eq!(
            r.attr::<crate::attr::PortInfoRepr>(),
            Err(ParseError::WrongAttr {
                expected: SmpAttrId::PORT_INFO,
                got: SmpAttrId::NODE_INFO
            })
        );
        let mut r2 = r;
        let ni = r.attr::<NodeInfoRepr>().unwrap();
        r2.data = [0xAA; 64];
        r2.set_attr(&ni).unwrap();
        assert_eq!(&r2.data[..40], &r.data[..40]);
        assert_eq!(&r2.data[40..], &[0u8; 24][..]);
    }

    #[test]
    fn display_one_line() {
        let sent = mads(DR2, "snd")[0];
        let p = Packet::new_checked(&sent[..]).unwrap();
        let tid = p.tid();
        assert_eq!(
            p.to_string(),
            format!("SubnGet(NodeInfo) DR 0,3,1 hop 0/2 tid {tid:#x}")
        );
        let resp = rcv(DR2, 0x11, None);
        let r = Repr::parse_bytes(&resp).unwrap();
        assert_eq!(
            r.to_string(),
            format!(
                "SubnGetResp(NodeInfo) DR 0,3,1 hop 0/2 D=1 tid {:#x}",
                r.tid
            )
        );
        assert_eq!(
            r.to_string(),
            Packet::new_checked(&resp[..]).unwrap().to_string()
        );
        let pi = rcv(include_str!("../testdata/pi_hca1_p1_lid2.mads"), 0x15, None);
        let p = Packet::new_checked(&pi[..]).unwrap();
        assert_eq!(
            p.to_string(),
            format!("SubnGetResp(PortInfo) mod 0x1 LID tid {:#x}", p.tid())
        );
        let full = format!("{p:#}");
        assert!(
            full.contains("\nLID:.............................2\n"),
            "{full}"
        );
    }

    #[test]
    fn display_odd_values() {
        let mut b = [0u8; SMP_LEN];
        b[0] = 1;
        b[1] = 0x81;
        b[3] = 0x7F;
        b[4] = 0x80;
        b[5] = 0x1C;
        b[7] = 0xFF;
        b[17] = 0x99;
        b[24] = 1;
        b[33] = 5;
        b[34] = 0xFF;
        b[35] = 0xFF;
        let p = Packet::new_checked(&b[..]).unwrap();
        let line = p.to_string();
        assert!(
            line.starts_with("SubnMethod(0x7f)(0x0099) DR 0,0,0,"),
            "{line}"
        );
        assert!(
            line.ends_with(
                "hop 0/255 D=1 slid 5 tid 0x0 status InvalidField mkey 0x0100000000000000"
            ),
            "{line}"
        );
    }
}

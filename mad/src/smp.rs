//! The common MAD header (IBA vol1 §13.4.3) and the 256-byte SMP in its LID-routed
//! (§14.2.1.1) and directed-route (§14.2.1.2) forms.
//!
//! [`Smp`] is one zerocopy struct for both forms: in a LID-routed SMP (class 0x01) the
//! directed-route fields (hop pointer/count, DrSLID/DrDLID, the two paths) are reserved and must
//! be left zero. Cast it straight out of a transport buffer with
//! `Smp::ref_from_bytes(&buf[..256])` / `mut_from_bytes`; every field is alignment-1 big-endian
//! so no cast can fail on alignment, only on length.

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

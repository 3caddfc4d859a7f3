//! Subnet-administration records (IBA vol1 §15.2.5): the attributes an SA answers with, one
//! module per record group.
//!
//! Every record has
//! - a zerocopy wire struct (`#[repr(C)]`, alignment 1, big-endian fields) whose size and
//!   field offsets are pinned by `const` assertions against the IBA layout table;
//! - a validated `Repr` with `parse`/`emit` (STYLE P1);
//! - its **components**: [`SaRecord::COMPONENTS`], the record's fields in the order of its
//!   IBA table, so ComponentMask bit *i* selects `COMPONENTS[i]` (§15.2.1.1: "the bits of
//!   ComponentMask correspond, in order, to the components of the record"), and `comp`
//!   constants naming each bit.
//!
//! [`matches`] is the one place a query is matched against a record: every component selected
//! by the mask must have the same bits in the query's record as in the candidate. A reserved
//! component never decides a match. Mask bits beyond the record's last component are ignored
//! (OpenSM does the same).
//!
//! In an SA MAD a record travels padded to a multiple of 8 bytes ([`padded_len`]; the
//! AttributeOffset of a GetTableResp counts 8-byte words).

use zerocopy::{FromBytes, Immutable, KnownLayout};

use crate::codes::{MgmtClass, SaAttrId};
use crate::error::{Layer, LenError};

pub mod guid;
pub mod inform;
pub mod lft;
pub mod link;
pub mod mcmember;
pub mod mft;
pub mod multipath;
pub mod node;
pub mod path;
pub mod pkey;
pub mod port;
pub mod service;
pub mod slvl;
pub mod sminfo;
pub mod switch;
pub mod vlarb;

pub use guid::GuidInfoRecord;
pub use lft::LftRecord;
pub use link::LinkRecord;
pub use mft::MftRecord;
pub use node::{NodeRecord, NodeRecordRepr};
pub use pkey::PKeyTableRecord;
pub use port::PortInfoRecord;
pub use slvl::Sl2VlRecord;
pub use sminfo::SmInfoRecord;
pub use switch::SwitchInfoRecord;
pub use vlarb::VlArbRecord;

/// Declares a record whose value needs no validation beyond its reserved bits: the
/// [`SaRecord`] impl, build-time size/layout checks, `parse` (a copy with every reserved
/// component zeroed — the record's `Repr` is the canonical wire struct) and `emit`, and the
/// `comp` module of ComponentMask bits.
macro_rules! sa_record {
    (
        $name:ident, $attr:ident, $len:expr;
        $( $(#[$cm:meta])* $c:ident = $bit:literal => $comp:expr; )*
    ) => {
        impl $crate::sa_rec::SaRecord for $name {
            const ATTR: $crate::codes::SaAttrId = $crate::codes::SaAttrId::$attr;
            const LEN: usize = $len;
            const COMPONENTS: &'static [$crate::sa_rec::Component] = &[$($comp),*];
        }
        const _: () = assert!(size_of::<$name>() == $len);
        const _: () = assert!($crate::sa_rec::components_fit(
            <$name as $crate::sa_rec::SaRecord>::COMPONENTS,
            $len
        ));
        const _: () = {
            let bits = [$($bit),*];
            let mut i = 0;
            while i < bits.len() {
                assert!(bits[i] == i);
                i += 1;
            }
        };
        impl $name {
            /// The record at the front of `buf`, reserved components zeroed.
            pub fn parse(buf: &[u8]) -> Result<$name, $crate::error::LenError> {
                let mut r = *$crate::sa_rec::view::<$name>(buf)?;
                $crate::sa_rec::zero_reserved(
                    <$name as $crate::sa_rec::SaRecord>::COMPONENTS,
                    zerocopy::IntoBytes::as_mut_bytes(&mut r),
                );
                Ok(r)
            }
            /// Writes the record into the front of `buf` (at least its size).
            pub fn emit(&self, buf: &mut [u8]) -> Result<(), $crate::error::LenError> {
                $crate::sa_rec::write(zerocopy::IntoBytes::as_bytes(self), <$name as $crate::sa_rec::SaRecord>::ATTR, buf)
            }
        }
        /// ComponentMask bits, in the record's component order.
        pub mod comp {
            $( $(#[$cm])* pub const $c: u64 = 1 << $bit; )*
        }
    };
}
pub(crate) use sa_record;

/// Zeroes the reserved components of `rec`.
pub fn zero_reserved(components: &[Component], rec: &mut [u8]) {
    for c in components.iter().filter(|c| c.reserved) {
        for i in c.offset..c.end() {
            if let Some(b) = rec.get_mut((i / 8) as usize) {
                *b &= !(0x80u8 >> (i % 8));
            }
        }
    }
}

/// Copies `rec` (a record of `attr`) into the front of `buf`.
pub fn write(rec: &[u8], attr: SaAttrId, buf: &mut [u8]) -> Result<(), LenError> {
    match buf.get_mut(..rec.len()) {
        Some(dst) => {
            dst.copy_from_slice(rec);
            Ok(())
        }
        None => Err(LenError {
            required: rec.len(),
            got: buf.len(),
            layer: layer(attr),
            offset: 0,
        }),
    }
}

/// One component of a record: `bits` bits starting `offset` bits from the record's first bit
/// (most significant bit of byte 0 first) — the (Length, Offset) columns of the IBA record
/// tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Component {
    /// Offset from the start of the record, in bits.
    pub offset: u32,
    /// Width in bits.
    pub bits: u32,
    /// A reserved component: never compared, zeroed by `parse`.
    pub reserved: bool,
    /// A request option echoed in the answer (PortInfoRecord.Options): never compared.
    pub echo: bool,
}

impl Component {
    /// A field of `bits` bits at bit `offset`.
    #[must_use]
    pub const fn new(offset: u32, bits: u32) -> Component {
        Component {
            offset,
            bits,
            reserved: false,
            echo: false,
        }
    }
    /// A field of `len` whole bytes at byte `byte`.
    #[must_use]
    pub const fn bytes(byte: u32, len: u32) -> Component {
        Component::new(byte * 8, len * 8)
    }
    /// An option of the request, echoed and never compared.
    #[must_use]
    pub const fn echo(offset: u32, bits: u32) -> Component {
        Component {
            offset,
            bits,
            reserved: false,
            echo: true,
        }
    }
    /// A field in Byte[Bit] notation: `width` bits whose most significant bit is bit `hi`
    /// (7..0) of byte `byte`.
    #[must_use]
    pub const fn at(byte: u32, hi: u32, width: u32) -> Component {
        Component::new(byte * 8 + (7 - hi), width)
    }
    /// A reserved field in Byte[Bit] notation (see [`Component::at`]).
    #[must_use]
    pub const fn reserved_at(byte: u32, hi: u32, width: u32) -> Component {
        Component::reserved(byte * 8 + (7 - hi), width)
    }
    /// A reserved component of `bits` bits at bit `offset`.
    #[must_use]
    pub const fn reserved(offset: u32, bits: u32) -> Component {
        Component {
            offset,
            bits,
            reserved: true,
            echo: false,
        }
    }
    /// The first bit past this component.
    #[must_use]
    pub const fn end(&self) -> u32 {
        self.offset + self.bits
    }
}

/// What every SA record type declares.
pub trait SaRecord {
    /// The SubnAdm attribute id.
    const ATTR: SaAttrId;
    /// Size of the record in bytes, without padding.
    const LEN: usize;
    /// The components, in ComponentMask bit order.
    const COMPONENTS: &'static [Component];
}

/// The error layer of a record.
#[must_use]
pub fn layer(attr: SaAttrId) -> Layer {
    Layer::GmpAttr {
        class: MgmtClass::SUBN_ADM,
        attr: attr.0,
    }
}

/// The record `R` at the front of `buf`, or how short `buf` is.
pub fn view<R: SaRecord + FromBytes + KnownLayout + Immutable>(buf: &[u8]) -> Result<&R, LenError> {
    let err = LenError {
        required: R::LEN,
        got: buf.len(),
        layer: layer(R::ATTR),
        offset: 0,
    };
    match buf.get(..R::LEN) {
        Some(b) => R::ref_from_bytes(b).map_err(|_| err),
        None => Err(err),
    }
}

/// The size a record of `len` bytes takes in an SA MAD: rounded up to 8 bytes.
#[must_use]
pub const fn padded_len(len: usize) -> usize {
    len.div_ceil(8) * 8
}

/// Bits `[offset, offset + bits)` of `buf` as a number (`bits` ≤ 64); bits past the end of
/// `buf` read as zero.
fn bits_at(buf: &[u8], offset: u32, bits: u32) -> u64 {
    let mut v = 0u64;
    for i in offset..offset + bits {
        let byte = buf.get((i / 8) as usize).copied().unwrap_or(0);
        let bit = (byte >> (7 - (i % 8))) & 1;
        v = (v << 1) | u64::from(bit);
    }
    v
}

/// True if the component has the same bits in `a` and `b` (bytes past the end of either read
/// as zero).
#[must_use]
pub fn component_eq(c: &Component, a: &[u8], b: &[u8]) -> bool {
    if c.offset.is_multiple_of(8) && c.bits.is_multiple_of(8) {
        let (s, e) = ((c.offset / 8) as usize, (c.end() / 8) as usize);
        return match (a.get(s..e), b.get(s..e)) {
            (Some(x), Some(y)) => x == y,
            _ => (s..e).all(|i| a.get(i).copied().unwrap_or(0) == b.get(i).copied().unwrap_or(0)),
        };
    }
    let mut off = c.offset;
    while off < c.end() {
        let n = (c.end() - off).min(64);
        if bits_at(a, off, n) != bits_at(b, off, n) {
            return false;
        }
        off += n;
    }
    true
}

/// True if `record` matches `query` on every component `mask` selects (see the module docs).
#[must_use]
pub fn matches(components: &[Component], mask: u64, query: &[u8], record: &[u8]) -> bool {
    components
        .iter()
        .enumerate()
        .take(64)
        .filter(|(i, c)| mask & (1u64 << i) != 0 && !c.reserved && !c.echo)
        .all(|(_, c)| component_eq(c, query, record))
}

/// [`matches`] for a record type.
#[must_use]
pub fn record_matches<R: SaRecord>(mask: u64, query: &[u8], record: &[u8]) -> bool {
    matches(R::COMPONENTS, mask, query, record)
}

/// The value of component `i` of `R` in `query`, if `mask` selects it (for index look-ups:
/// a LID, a GUID, a port number); `None` if not selected, reserved, or wider than 64 bits.
#[must_use]
pub fn selected<R: SaRecord>(mask: u64, i: usize, query: &[u8]) -> Option<u64> {
    let c = R::COMPONENTS.get(i)?;
    (i < 64 && mask & (1u64 << i) != 0 && !c.reserved && !c.echo && c.bits <= 64)
        .then(|| bits_at(query, c.offset, c.bits))
}

/// Checks at build time that `components` are in offset order, do not overlap and end within
/// `len` bytes (use in a `const _: () = assert!(…)`).
#[must_use]
pub const fn components_fit(components: &[Component], len: usize) -> bool {
    let mut i = 0;
    let mut end = 0;
    while i < components.len() {
        if components[i].offset < end || components[i].bits == 0 {
            return false;
        }
        end = components[i].end();
        i += 1;
    }
    end as usize <= len * 8
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &[Component] = &[
        Component::bytes(0, 2),
        Component::reserved(16, 16),
        Component::new(32, 4),
        Component::new(36, 4),
        Component::bytes(5, 8),
    ];

    #[test]
    fn layout_check() {
        assert!(components_fit(C, 13));
        assert!(!components_fit(C, 12));
        assert!(!components_fit(
            &[Component::bytes(1, 1), Component::bytes(0, 1)],
            2
        ));
    }

    #[test]
    fn mask_selects_components_in_order() {
        let q = [0, 5, 0xAA, 0xAA, 0x12, 1, 2, 3, 4, 5, 6, 7, 8];
        let mut r = q;
        assert!(matches(C, u64::MAX, &q, &r));
        r[2] = 0; // reserved: never compared
        assert!(matches(C, 0x2, &q, &r));
        r[4] = 0x13; // low nibble: component 3
        assert!(matches(C, 0x1 | 0x4 | 0x10, &q, &r));
        assert!(!matches(C, 0x8, &q, &r));
        r[12] = 9;
        assert!(!matches(C, 0x10, &q, &r));
        assert!(matches(C, 0, &q, &r));
        // Short buffers read as zero past their end.
        assert!(matches(C, 0x10, &[0; 5], &[0; 13]));
        assert!(!matches(C, 0x1, &[0, 1], &[]));
        assert_eq!(bits_at(&q, 32, 4), 1);
        assert_eq!(bits_at(&q, 36, 4), 2);
    }

    #[test]
    fn padding() {
        assert_eq!(padded_len(108), 112);
        assert_eq!(padded_len(64), 64);
        assert_eq!(padded_len(0), 0);
    }
}

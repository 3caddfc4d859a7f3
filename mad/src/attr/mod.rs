//! SMP attribute payloads, one module per attribute (STYLE P3). Each is a 64-byte (or shorter)
//! zerocopy struct read from / written into [`crate::smp::Smp::data`] with `ref_from_prefix`.
//!
//! # Two levels, as for the SMP itself (STYLE P1)
//!
//! - **The view** is the zerocopy struct (`NodeInfo`, `PortInfo`, …): `T::ref_from_prefix(data)`
//!   checks the length once, after which every accessor is infallible and every bit pattern is
//!   readable. Setters (`set_*`) change only their own bits: reserved bits and neighbouring
//!   fields in a packed byte are preserved.
//! - **The `Repr`** (`NodeInfoRepr`, `PortInfoRepr`, …) is the validated semantic value, built
//!   with [`AttrRepr::parse`] and written back with [`AttrRepr::emit`]. `parse` rejects values
//!   the IBA reserves (each `Repr` documents which) with [`ParseError::InvalidValue`].
//!
//! # Reserved fields
//!
//! The IBA's convention is that senders set reserved fields to zero and receivers ignore them.
//! `parse` therefore **ignores** reserved bits instead of rejecting
//! them, and a `Repr` does not store them: `emit` always writes them as zero. So
//! `emit(parse(x))` equals `x` with its reserved bits cleared — the canonical form the property
//! tests check. Use the view when reserved bits must be carried through untouched.
//!
//! # Printing
//!
//! Every view and every `Repr` implements `Display` as a field listing in the layout of
//! `smpquery` (`Name:.....value`, one field per line, IBA field names), and
//! [`SmpAttr`] dispatches on the attribute id. None of it can panic on any bytes.

pub mod modifier;
pub mod node_desc;
pub mod node_info;
pub mod notice;
pub mod port_info;
pub mod sm_info;
pub mod switch_info;
pub mod tables;

pub use node_desc::NodeDesc;
pub use node_info::NodeInfo;
pub use notice::Notice;
pub use port_info::PortInfo;
pub use sm_info::SmInfo;
pub use switch_info::SwitchInfo;
pub use tables::{GuidInfo, LftBlock, MftBlock, PKeyTable, SlToVl, VlArbEntry, VlArbTable};

use core::fmt;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::codes::SmpAttrId;
use crate::error::{Layer, LenError, ParseError};

pub use node_desc::NodeDescRepr;
pub use node_info::NodeInfoRepr;
pub use notice::{NoticeKind, NoticeRepr};
pub use port_info::PortInfoRepr;
pub use sm_info::SmInfoRepr;
pub use switch_info::SwitchInfoRepr;
pub use tables::{
    GuidInfoRepr, LftBlockRepr, MftBlockRepr, PKeyTableRepr, SlToVlRepr, VlArbEntryRepr,
    VlArbTableRepr,
};

/// A validated attribute value: the `Repr` half of STYLE P1.
///
/// `parse` reads the wire struct from the front of `data` (normally the 64-byte SMP data field),
/// checking its length once and rejecting reserved values; `emit` writes exactly
/// [`AttrRepr::buffer_len`] bytes, reserved bits as zero, and fails (never panics) on a short
/// buffer.
pub trait AttrRepr: Sized {
    /// The zerocopy wire struct (the view).
    type Raw: FromBytes + IntoBytes + KnownLayout + Immutable;
    /// The attribute id this value travels under.
    const ATTR_ID: SmpAttrId;

    /// Validates a view.
    fn from_raw(raw: &Self::Raw) -> Result<Self, ParseError>;
    /// The wire struct for this value, reserved bits zero.
    fn to_raw(&self) -> Self::Raw;

    /// Parses the attribute from the front of `data`.
    fn parse(data: &[u8]) -> Result<Self, ParseError> {
        let raw = view::<Self::Raw>(data, Self::ATTR_ID)?;
        Self::from_raw(raw)
    }
    /// Writes the attribute into the front of `data` (at least [`AttrRepr::buffer_len`] bytes).
    fn emit(&self, data: &mut [u8]) -> Result<(), LenError> {
        write(&self.to_raw(), data, Self::ATTR_ID)
    }
    /// Bytes [`AttrRepr::emit`] writes: the size of the wire struct.
    fn buffer_len(&self) -> usize {
        size_of::<Self::Raw>()
    }
}

/// Casts the front of `data` to a view, or says how short it was.
pub(crate) fn view<T: FromBytes + KnownLayout + Immutable>(
    data: &[u8],
    id: SmpAttrId,
) -> Result<&T, LenError> {
    view_at(data, Layer::Attr(id))
}

/// Casts the front of `data` to a view of `layer`, or says how short it was.
pub(crate) fn view_at<T: FromBytes + KnownLayout + Immutable>(
    data: &[u8],
    layer: Layer,
) -> Result<&T, LenError> {
    T::ref_from_prefix(data)
        .map(|(t, _)| t)
        .map_err(|_| LenError {
            required: size_of::<T>(),
            got: data.len(),
            layer,
            offset: 0,
        })
}

/// Copies a wire struct into the front of `data`.
pub(crate) fn write<T: IntoBytes + Immutable>(
    v: &T,
    data: &mut [u8],
    id: SmpAttrId,
) -> Result<(), LenError> {
    write_at(v, data, Layer::Attr(id))
}

/// Copies a wire struct of `layer` into the front of `data`.
pub(crate) fn write_at<T: IntoBytes + Immutable>(
    v: &T,
    data: &mut [u8],
    layer: Layer,
) -> Result<(), LenError> {
    let bytes = v.as_bytes();
    let got = data.len();
    match data.get_mut(..bytes.len()) {
        Some(dst) => {
            dst.copy_from_slice(bytes);
            Ok(())
        }
        None => Err(LenError {
            required: bytes.len(),
            got,
            layer,
            offset: 0,
        }),
    }
}

/// `Display` of a `Repr`: print its wire struct.
macro_rules! display_via_raw {
    ($($t:ty),*) => {$(
        impl core::fmt::Display for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&$crate::attr::AttrRepr::to_raw(self), f)
            }
        }
    )*};
}
pub(crate) use display_via_raw;

/// Every attribute this crate has a `Repr` for, chosen by attribute id.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SmpAttr {
    /// Notice (0x0002).
    Notice(NoticeRepr),
    /// NodeDescription (0x0010).
    NodeDesc(NodeDescRepr),
    /// NodeInfo (0x0011).
    NodeInfo(NodeInfoRepr),
    /// SwitchInfo (0x0012).
    SwitchInfo(SwitchInfoRepr),
    /// GUIDInfo (0x0014).
    GuidInfo(GuidInfoRepr),
    /// PortInfo (0x0015).
    PortInfo(PortInfoRepr),
    /// P_KeyTable (0x0016).
    PKeyTable(PKeyTableRepr),
    /// SLtoVLMappingTable (0x0017).
    SlToVl(SlToVlRepr),
    /// VLArbitrationTable (0x0018).
    VlArbTable(VlArbTableRepr),
    /// LinearForwardingTable (0x0019).
    Lft(LftBlockRepr),
    /// MulticastForwardingTable (0x001B).
    Mft(MftBlockRepr),
    /// SMInfo (0x0020).
    SmInfo(SmInfoRepr),
}

macro_rules! smp_attr_dispatch {
    ($($var:ident => $repr:ty),* $(,)?) => {
        impl SmpAttr {
            /// Parses `data` as attribute `id`; [`ParseError::UnknownAttr`] for an id without
            /// a `Repr` here.
            pub fn parse(id: SmpAttrId, data: &[u8]) -> Result<SmpAttr, ParseError> {
                $( if id == <$repr as AttrRepr>::ATTR_ID {
                    return <$repr as AttrRepr>::parse(data).map(SmpAttr::$var);
                } )*
                Err(ParseError::UnknownAttr(id))
            }
            /// The attribute id.
            #[must_use]
            pub fn attr_id(&self) -> SmpAttrId {
                match self { $( SmpAttr::$var(_) => <$repr as AttrRepr>::ATTR_ID, )* }
            }
            /// Writes the attribute into the front of `data`.
            pub fn emit(&self, data: &mut [u8]) -> Result<(), LenError> {
                match self { $( SmpAttr::$var(r) => r.emit(data), )* }
            }
            /// Bytes [`SmpAttr::emit`] writes.
            #[must_use]
            pub fn buffer_len(&self) -> usize {
                match self { $( SmpAttr::$var(r) => r.buffer_len(), )* }
            }
        }
        impl fmt::Display for SmpAttr {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self { $( SmpAttr::$var(r) => fmt::Display::fmt(r, f), )* }
            }
        }
    };
}

smp_attr_dispatch! {
    Notice => NoticeRepr,
    NodeDesc => NodeDescRepr,
    NodeInfo => NodeInfoRepr,
    SwitchInfo => SwitchInfoRepr,
    GuidInfo => GuidInfoRepr,
    PortInfo => PortInfoRepr,
    PKeyTable => PKeyTableRepr,
    SlToVl => SlToVlRepr,
    VlArbTable => VlArbTableRepr,
    Lft => LftBlockRepr,
    Mft => MftBlockRepr,
    SmInfo => SmInfoRepr,
}

/// Helpers shared by the attribute tests: the captured vectors in `mad/testdata/`.
#[cfg(test)]
pub(crate) mod testdata {
    /// The 256-byte MADs of a `.mads` capture file with the given direction (`"rcv"`/`"snd"`).
    pub fn mads(text: &str, dir: &str) -> Vec<[u8; 256]> {
        text.lines()
            .filter_map(|l| l.strip_prefix(dir)?.strip_prefix(' '))
            .map(|hex| {
                let v: Vec<u8> = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                v.try_into().unwrap()
            })
            .collect()
    }

    /// The first received MAD carrying attribute `attr` (and modifier `attr_mod`, if given).
    pub fn rcv(text: &str, attr: u16, attr_mod: Option<u32>) -> [u8; 256] {
        mads(text, "rcv")
            .into_iter()
            .find(|m| {
                u16::from_be_bytes([m[16], m[17]]) == attr
                    && attr_mod
                        .is_none_or(|am| u32::from_be_bytes([m[20], m[21], m[22], m[23]]) == am)
            })
            .expect("no such MAD in the capture")
    }

    /// The SMP data field (bytes 64..128) of a MAD.
    pub fn data(mad: &[u8; 256]) -> [u8; 64] {
        mad[64..128].try_into().unwrap()
    }

    /// `Field:....value` lines of smpquery output, in order, as (field, value).
    pub fn smpquery_fields(text: &str) -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                if k.starts_with('#') || k.starts_with('$') || !v.starts_with('.') {
                    return None;
                }
                Some((k.to_string(), v.trim_start_matches('.').to_string()))
            })
            .collect()
    }

    /// The value smpquery printed for `field`.
    pub fn smpquery_value(fields: &[(String, String)], field: &str) -> String {
        fields
            .iter()
            .find(|(k, _)| k == field)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("smpquery printed no {field}"))
    }

    /// Parses smpquery's decimal or 0x-hex number.
    pub fn num(v: &str) -> u64 {
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => v.parse().unwrap(),
        }
    }
}

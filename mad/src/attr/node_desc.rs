//! NodeDescription (attribute 0x0010), 64 bytes — IBA vol1 §14.2.5.2.
//!
//! View: [`NodeDesc`]; validated value: [`NodeDescRepr`] (see [`crate::attr`]).

use core::fmt;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::attr::AttrRepr;
use crate::codes::SmpAttrId;
use crate::error::ParseError;
use crate::pretty::field;

/// NodeDescription: 64 bytes of UTF-8, NUL-padded, not necessarily NUL-terminated.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct NodeDesc {
    /// NodeString — bytes 0..63.
    pub text: [u8; 64],
}
const _: () = assert!(size_of::<NodeDesc>() == 64);

impl NodeDesc {
    /// A description from a string, truncated to 64 bytes at a character boundary.
    #[must_use]
    pub fn from_str_lossy(s: &str) -> NodeDesc {
        let mut text = [0u8; 64];
        let mut end = s.len().min(64);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        text[..end].copy_from_slice(&s.as_bytes()[..end]);
        NodeDesc { text }
    }
    /// The text up to the first NUL; invalid UTF-8 is replaced.
    #[must_use]
    pub fn as_string(&self) -> String {
        let end = self.text.iter().position(|&b| b == 0).unwrap_or(64);
        String::from_utf8_lossy(&self.text[..end]).into_owned()
    }
}

impl core::fmt::Debug for NodeDesc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "NodeDesc({:?})", self.as_string())
    }
}

/// One line in the layout of `smpquery nodedesc`; invalid UTF-8 is shown replaced.
impl fmt::Display for NodeDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "NodeString", self.as_string())
    }
}

/// NodeDescription, validated: the NodeString up to its first NUL.
///
/// `parse` rejects a NodeString that is not UTF-8 ([`ParseError::InvalidValue`], field
/// `NodeString`, value = offset of the first bad byte). Bytes after the first NUL are padding:
/// ignored by `parse`, emitted as zero. `emit` truncates text longer than 64 bytes at a
/// character boundary.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NodeDescRepr {
    /// The description text (no NULs).
    pub text: String,
}

impl AttrRepr for NodeDescRepr {
    type Raw = NodeDesc;
    const ATTR_ID: SmpAttrId = SmpAttrId::NODE_DESC;

    fn from_raw(r: &NodeDesc) -> Result<Self, ParseError> {
        let end = r.text.iter().position(|&b| b == 0).unwrap_or(r.text.len());
        let bytes = r.text.get(..end).unwrap_or_default();
        match core::str::from_utf8(bytes) {
            Ok(t) => Ok(NodeDescRepr {
                text: t.to_string(),
            }),
            Err(e) => Err(ParseError::InvalidValue {
                attr: Self::ATTR_ID,
                field: "NodeString",
                value: e.valid_up_to() as u64,
            }),
        }
    }

    fn to_raw(&self) -> NodeDesc {
        let text = self.text.split('\0').next().unwrap_or_default();
        NodeDesc::from_str_lossy(text)
    }
}

crate::attr::display_via_raw!(NodeDescRepr);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testdata::{data, rcv};

    /// NodeDescription of ibsim's Hca2 (net.2sw2path): SMP data of the GetResp to
    /// `smpquery -K -D nodedesc 0,3,1` (mad/testdata/nd_hca2_dr3.*, made by
    /// mad/testdata/capture.sh): "Hca2", NUL padded.
    static BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = b'H';
        b[1] = b'c';
        b[2] = b'a';
        b[3] = b'2';
        b
    };

    #[test]
    fn bytes_are_the_capture() {
        let mad = rcv(include_str!("../../testdata/nd_hca2_dr3.mads"), 0x10, None);
        assert_eq!(data(&mad), BYTES);
    }

    #[test]
    fn deconstruct() {
        let (nd, _) = NodeDesc::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(nd.as_string(), "Hca2");
    }

    #[test]
    fn construct() {
        assert_eq!(NodeDesc::from_str_lossy("Hca2").as_bytes(), &BYTES[..]);
    }

    #[test]
    fn parse_and_emit() {
        let r = NodeDescRepr::parse(&BYTES).unwrap();
        assert_eq!(r.text, "Hca2");
        let mut out = [0xEEu8; 64];
        r.emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
    }

    #[test]
    fn impossible_len() {
        assert!(NodeDescRepr::parse(&BYTES[..63]).is_err());
    }

    #[test]
    fn padding_after_nul_is_ignored_and_emitted_zero() {
        let mut b = BYTES;
        b[10] = b'x';
        let r = NodeDescRepr::parse(&b).unwrap();
        assert_eq!(r.text, "Hca2");
        let mut out = [0u8; 64];
        r.emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
    }

    #[test]
    fn rejects_bad_utf8() {
        let mut b = BYTES;
        b[2] = 0xFF;
        assert_eq!(
            NodeDescRepr::parse(&b),
            Err(ParseError::InvalidValue {
                attr: SmpAttrId::NODE_DESC,
                field: "NodeString",
                value: 2
            })
        );
        // The view still prints it.
        let (nd, _) = NodeDesc::ref_from_prefix(&b[..]).unwrap();
        assert!(nd.to_string().starts_with("NodeString:"));
    }

    #[test]
    fn long_text_truncated_at_char_boundary() {
        let r = NodeDescRepr {
            text: "é".repeat(40),
        };
        let mut out = [0u8; 64];
        r.emit(&mut out).unwrap();
        assert_eq!(NodeDescRepr::parse(&out).unwrap().text, "é".repeat(32));
    }

    /// smpquery prints the description as `Node Description:....<text>`.
    #[test]
    fn matches_smpquery() {
        for (mads, txt) in [
            (
                include_str!("../../testdata/nd_hca2_dr3.mads"),
                include_str!("../../testdata/nd_hca2_dr3.txt"),
            ),
            (
                include_str!("../../testdata/nd_sw1_dr0.mads"),
                include_str!("../../testdata/nd_sw1_dr0.txt"),
            ),
        ] {
            let r = NodeDescRepr::parse(&data(&rcv(mads, 0x10, None))).unwrap();
            let fields = crate::attr::testdata::smpquery_fields(txt);
            let v = crate::attr::testdata::smpquery_value(&fields, "Node Description");
            assert_eq!(v, r.text);
        }
    }
}

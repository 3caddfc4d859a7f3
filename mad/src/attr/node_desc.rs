//! NodeDescription (attribute 0x0010), 64 bytes — IBA vol1 §14.2.5.2.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

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

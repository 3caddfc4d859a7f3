//! Scalar newtypes: LIDs, GUIDs, port numbers, keys and directed-route paths.
//!
//! Every wire scalar that has a meaning beyond "a number" gets a type here so that a LID can not
//! be passed where a port number is expected. Constructors that can fail return `Option`/`Result`;
//! nothing here panics.

use core::fmt;

/// A Local Identifier (IBA vol1 §4.1.3): 16 bits, with unicast, multicast and permissive ranges.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lid(pub u16);

impl Lid {
    /// LID 0: reserved, "not yet assigned".
    pub const UNASSIGNED: Lid = Lid(0);
    /// The lowest unicast LID.
    pub const UNICAST_MIN: Lid = Lid(0x0001);
    /// The highest unicast LID.
    pub const UNICAST_MAX: Lid = Lid(0xBFFF);
    /// The lowest multicast LID.
    pub const MULTICAST_MIN: Lid = Lid(0xC000);
    /// The highest multicast LID.
    pub const MULTICAST_MAX: Lid = Lid(0xFFFE);
    /// The permissive LID (also the DR default for DrSLID/DrDLID).
    pub const PERMISSIVE: Lid = Lid(0xFFFF);

    /// The raw 16-bit value.
    #[must_use]
    pub const fn get(self) -> u16 {
        self.0
    }
    /// True for 0x0001..=0xBFFF.
    #[must_use]
    pub const fn is_unicast(self) -> bool {
        self.0 >= Self::UNICAST_MIN.0 && self.0 <= Self::UNICAST_MAX.0
    }
    /// True for 0xC000..=0xFFFE.
    #[must_use]
    pub const fn is_multicast(self) -> bool {
        self.0 >= Self::MULTICAST_MIN.0 && self.0 <= Self::MULTICAST_MAX.0
    }
    /// True for 0xFFFF.
    #[must_use]
    pub const fn is_permissive(self) -> bool {
        self.0 == Self::PERMISSIVE.0
    }
    /// A unicast LID, or `None` if `v` is outside 0x0001..=0xBFFF.
    #[must_use]
    pub const fn unicast(v: u16) -> Option<Lid> {
        let l = Lid(v);
        if l.is_unicast() {
            Some(l)
        } else {
            None
        }
    }
}

impl fmt::Debug for Lid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lid({})", self.0)
    }
}
impl fmt::Display for Lid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A 64-bit EUI-64 GUID (node, port or system image).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Guid(pub u64);

impl Guid {
    /// The raw value.
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}
impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({:#018x})", self.0)
    }
}
/// Formats as infiniband-diags do: `0x` and 16 hex digits.
impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// A physical port number: 0 is a switch's management port, 1..=254 external ports.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PortNum(pub u8);

impl PortNum {
    /// Switch management port 0.
    pub const MGMT: PortNum = PortNum(0);
    /// The largest port number a node may have (OpenSM `IB_NODE_NUM_PORTS_MAX`).
    pub const MAX: PortNum = PortNum(254);
    /// The raw value.
    #[must_use]
    pub const fn get(self) -> u8 {
        self.0
    }
}
impl fmt::Debug for PortNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PortNum({})", self.0)
    }
}
impl fmt::Display for PortNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A partition key: bit 15 = full membership, bits 14..0 = the key.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PKey(pub u16);

impl PKey {
    /// The default partition, full member (0xFFFF).
    pub const DEFAULT_FULL: PKey = PKey(0xFFFF);
    /// The default partition, limited member (0x7FFF).
    pub const DEFAULT_LIMITED: PKey = PKey(0x7FFF);
    /// The invalid P_Key 0 (an empty table entry).
    pub const INVALID: PKey = PKey(0);
    /// The raw value.
    #[must_use]
    pub const fn get(self) -> u16 {
        self.0
    }
    /// Bits 14..0.
    #[must_use]
    pub const fn base(self) -> u16 {
        self.0 & 0x7FFF
    }
    /// Bit 15.
    #[must_use]
    pub const fn is_full_member(self) -> bool {
        self.0 & 0x8000 != 0
    }
}
impl fmt::Debug for PKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PKey({:#06x})", self.0)
    }
}

/// A management key (IBA vol1 §14.2.4).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MKey(pub u64);

impl MKey {
    /// The raw value.
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}
impl fmt::Debug for MKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MKey({:#018x})", self.0)
    }
}

/// A queue key (IBA vol1 §10.2.4): a datagram's Q_Key must match the receiving QP's.
///
/// QP0 ignores Q_Keys; QP1 (the GSI) uses the well-known [`QKey::GSI`] (IBA vol1 §13.5.3.1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct QKey(pub u32);

impl QKey {
    /// The well-known Q_Key of QP1, 0x8001_0000 (IBA vol1 §13.5.3.1).
    pub const GSI: QKey = QKey(0x8001_0000);
    /// The raw value.
    #[must_use]
    pub const fn get(self) -> u32 {
        self.0
    }
}
impl fmt::Debug for QKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QKey({:#010x})", self.0)
    }
}

/// A 128-bit global identifier (IBA vol1 §4.1.1): a 64-bit subnet prefix and a 64-bit
/// interface id (the port GUID for the default GID), in wire (big-endian) byte order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The GID made of `prefix` and `guid`.
    #[must_use]
    pub fn new(prefix: u64, guid: Guid) -> Gid {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&prefix.to_be_bytes());
        g[8..].copy_from_slice(&guid.0.to_be_bytes());
        Gid(g)
    }
    /// The subnet prefix (bytes 0..7).
    #[must_use]
    pub fn prefix(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[..8]);
        u64::from_be_bytes(b)
    }
    /// The interface id (bytes 8..15).
    #[must_use]
    pub fn guid(&self) -> Guid {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[8..]);
        Guid(u64::from_be_bytes(b))
    }
}
/// Formats as eight colon-separated 16-bit groups, as `saquery` prints GIDs.
impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, pair) in self.0.chunks(2).enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{:04x}", u16::from_be_bytes([pair[0], pair[1]]))?;
        }
        Ok(())
    }
}
impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

/// Error building a [`DrPath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrPathError {
    /// More than 63 hops (C14-6: HopCount is 0..=63).
    #[error("directed route has {hops} hops; at most 63 are allowed")]
    TooLong {
        /// The hop count asked for.
        hops: usize,
    },
    /// A textual path did not parse.
    #[error("bad directed route {text:?}: {reason}")]
    Syntax {
        /// The input text.
        text: String,
        /// What was wrong.
        reason: &'static str,
    },
}

/// A directed route: the egress port at each hop, at most 63 hops (IBA vol1 §14.2.1.2).
///
/// `ports()[0]` is the port the SM sends on (InitialPath[1]); hop count = `len()`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrPath {
    len: u8,
    hops: [u8; 63],
}

impl DrPath {
    /// The maximum hop count (C14-6).
    pub const MAX_HOPS: usize = 63;

    /// The empty path: hop count 0, the SM's own port.
    #[must_use]
    pub const fn local() -> DrPath {
        DrPath {
            len: 0,
            hops: [0; 63],
        }
    }

    /// A path from egress ports, first hop first.
    pub fn new(ports: &[u8]) -> Result<DrPath, DrPathError> {
        if ports.len() > Self::MAX_HOPS {
            return Err(DrPathError::TooLong { hops: ports.len() });
        }
        let mut p = DrPath::local();
        p.hops[..ports.len()].copy_from_slice(ports);
        p.len = ports.len() as u8;
        Ok(p)
    }

    /// This path extended by one more hop out of `port`.
    pub fn push(&self, port: u8) -> Result<DrPath, DrPathError> {
        let n = self.len as usize;
        if n >= Self::MAX_HOPS {
            return Err(DrPathError::TooLong { hops: n + 1 });
        }
        let mut p = *self;
        p.hops[n] = port;
        p.len += 1;
        Ok(p)
    }

    /// The hop count.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// True for the 0-hop path.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Egress ports, first hop first.
    #[must_use]
    pub fn ports(&self) -> &[u8] {
        &self.hops[..self.len as usize]
    }

    /// Parses libibmad's notation: `"0,1,4,2"` (leading 0 = the local port) or `"1,4,2"`.
    pub fn parse(text: &str) -> Result<DrPath, DrPathError> {
        let t = text.trim();
        let mut parts: Vec<&str> = t.split(',').map(str::trim).collect();
        if parts.first() == Some(&"0") {
            parts.remove(0);
        }
        if parts.len() == 1 && parts[0].is_empty() {
            return Ok(DrPath::local());
        }
        let mut ports = Vec::with_capacity(parts.len());
        for p in parts {
            let v: u8 = p.parse().map_err(|_| DrPathError::Syntax {
                text: text.to_string(),
                reason: "each hop must be a port number 0..=255",
            })?;
            ports.push(v);
        }
        DrPath::new(&ports)
    }
}

impl Default for DrPath {
    fn default() -> Self {
        DrPath::local()
    }
}

/// libibmad notation: `0,1,4,2`.
impl fmt::Display for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0")?;
        for p in self.ports() {
            write!(f, ",{p}")?;
        }
        Ok(())
    }
}
impl fmt::Debug for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DrPath({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lid_ranges() {
        assert!(!Lid(0).is_unicast());
        assert!(Lid(1).is_unicast() && Lid(0xBFFF).is_unicast());
        assert!(Lid(0xC000).is_multicast() && !Lid(0xC000).is_unicast());
        assert!(Lid(0xFFFF).is_permissive() && !Lid(0xFFFF).is_multicast());
        assert_eq!(Lid::unicast(0xC000), None);
    }

    #[test]
    fn gid_parts_and_display() {
        let g = Gid::new(0xfe80_0000_0000_0000, Guid(0x0002_c903_0000_1234));
        assert_eq!(g.prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(g.guid(), Guid(0x0002_c903_0000_1234));
        assert_eq!(g.to_string(), "fe80:0000:0000:0000:0002:c903:0000:1234");
        assert_eq!(format!("{:?}", QKey::GSI), "QKey(0x80010000)");
    }

    #[test]
    fn dr_path_parse_and_display() {
        let p = DrPath::parse("0,1,4,2,3").unwrap();
        assert_eq!(p.ports(), &[1, 4, 2, 3]);
        assert_eq!(p.to_string(), "0,1,4,2,3");
        assert_eq!(DrPath::parse("0").unwrap(), DrPath::local());
        assert!(DrPath::parse("0,x").is_err());
        assert!(DrPath::new(&[1; 64]).is_err());
        assert!(DrPath::new(&[1; 63]).unwrap().push(1).is_err());
    }
}

//! tcpdump-like printing of MADs for logs and tracers (STYLE P14).
//!
//! - Every view and `Repr` implements `Display`. An SMP prints as one line,
//!   `SubnGet(NodeInfo) DR 0,1,4 hop 0/3 tid 0x1234`; an attribute prints as a field listing in
//!   the layout of `smpquery` (`NodeType:........................Switch`), using IBA field names.
//! - [`pretty_smp`] takes *any* bytes: a short buffer prints as `truncated`, a MAD that is not a
//!   valid SMP prints its header and the reason, an attribute that does not parse prints the
//!   error and a hex dump. It never panics, which makes it the fuzzing oracle
//!   (`mad/fuzz/fuzz_targets/parse_mad.rs`).
//! - [`pretty_mad`] does the same for a MAD of any class: SMPs as [`pretty_smp`], SubnAdm MADs
//!   with their RMPP and SA headers and a hex dump of the first record, PerfMgt MADs with the
//!   attribute's `perfquery`-style listing, other classes by their common header.
//!
//! ```
//! use ibmad::pretty::{pretty_mad, pretty_smp};
//! use ibmad::{DrPath, Method, Smp, SmpAttrId};
//! use ibmad::zerocopy::IntoBytes;
//!
//! let path = DrPath::parse("0,1,4").unwrap();
//! let smp = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 0x1234, &path);
//! assert_eq!(
//!     pretty_smp(smp.as_bytes()).to_string(),
//!     "SubnGet(NodeInfo) DR 0,1,4 hop 0/2 tid 0x1234\n"
//! );
//! let perf = ibmad::PerfMad::request(ibmad::Method::GET, ibmad::PmaAttrId::PORT_COUNTERS, 0, 7);
//! assert_eq!(pretty_mad(perf.as_bytes()).to_string(), "PerfGet(PortCounters) tid 0x7\n");
//! ```

use core::fmt;

use crate::attr::SmpAttr;
use crate::class_port_info::ClassPortInfoRepr;
use crate::codes::{Method, MgmtClass};
use crate::gmp::GmpAttrRepr;
use crate::smp::{Packet, SMP_LEN};

/// Column at which `smpquery` starts a value; names are padded with dots up to it.
const VALUE_COLUMN: usize = 33;

/// Writes one `Name:.....value` line.
pub(crate) fn field(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    value: impl fmt::Display,
) -> fmt::Result {
    f.write_str(name)?;
    f.write_str(":")?;
    let dots = VALUE_COLUMN.saturating_sub(name.len() + 1).max(1);
    for _ in 0..dots {
        f.write_str(".")?;
    }
    writeln!(f, "{value}")
}

/// Writes `bytes` as hex, 16 bytes a line, each line indented and prefixed by its offset.
pub(crate) fn hexdump(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for (i, chunk) in bytes.chunks(16).enumerate() {
        write!(f, "  {:04x}:", i * 16)?;
        for b in chunk {
            write!(f, " {b:02x}")?;
        }
        writeln!(f)?;
    }
    Ok(())
}

/// True if a MAD with this method carries an attribute value in its data field (a Get carries
/// none; TrapRepress echoes the Notice).
#[must_use]
pub fn method_carries_data(m: Method) -> bool {
    matches!(
        m,
        Method::SET | Method::GET_RESP | Method::TRAP | Method::TRAP_REPRESS
    )
}

/// Printer for any bytes claiming to be an SMP; see the module docs.
#[derive(Clone, Copy, Debug)]
pub struct PrettySmp<'a>(pub &'a [u8]);

/// Pretty-prints any bytes as an SMP: one header line, then, for methods that carry data, the
/// attribute's field listing. Never panics.
#[must_use]
pub fn pretty_smp(buf: &[u8]) -> PrettySmp<'_> {
    PrettySmp(buf)
}

impl fmt::Display for PrettySmp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pkt = match Packet::new_checked(self.0) {
            Ok(p) => p,
            Err(e) => {
                writeln!(f, "truncated SMP: {e}")?;
                return hexdump(f, self.0.get(..SMP_LEN).unwrap_or(self.0));
            }
        };
        writeln!(f, "{pkt}")?;
        if let Err(e) = crate::smp::Repr::parse(&pkt) {
            return writeln!(f, "  invalid SMP: {e}");
        }
        if !method_carries_data(pkt.method()) {
            return Ok(());
        }
        match SmpAttr::parse(pkt.attr_id(), pkt.data()) {
            Ok(a) => write!(f, "{a}"),
            Err(e) => {
                writeln!(f, "  attribute not decoded: {e}")?;
                hexdump(f, pkt.data())
            }
        }
    }
}

/// Printer for any bytes claiming to be a MAD of any class; see the module docs.
#[derive(Clone, Copy, Debug)]
pub struct PrettyMad<'a>(pub &'a [u8]);

/// Pretty-prints any bytes as a MAD of whatever class byte 1 names. Never panics.
#[must_use]
pub fn pretty_mad(buf: &[u8]) -> PrettyMad<'_> {
    PrettyMad(buf)
}

impl fmt::Display for PrettyMad<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let class = MgmtClass(self.0.get(1).copied().unwrap_or(0));
        if class.is_smp() {
            return write!(f, "{}", pretty_smp(self.0));
        }
        let pkt = match crate::gmp::Packet::new_checked(self.0) {
            Ok(p) => p,
            Err(e) => {
                writeln!(f, "truncated MAD: {e}")?;
                return hexdump(f, self.0.get(..SMP_LEN).unwrap_or(self.0));
            }
        };
        match class {
            MgmtClass::SUBN_ADM => {
                let sa = crate::sa::Packet::new_checked(self.0);
                let Ok(sa) = sa else { return Ok(()) };
                writeln!(f, "{sa:#}")?;
                match crate::sa::Repr::parse(&sa) {
                    Err(e) => writeln!(f, "  invalid SubnAdm MAD: {e}"),
                    Ok(r)
                        if r.header.attr_id == ClassPortInfoRepr::ATTR_ID
                            && r.header.method.is_response() =>
                    {
                        match ClassPortInfoRepr::parse(sa.data()) {
                            Ok(c) => write!(f, "{c}"),
                            Err(e) => writeln!(f, "  attribute not decoded: {e}"),
                        }
                    }
                    Ok(r) => {
                        let n = match r.record_len() {
                            0 => crate::sa::SA_DATA_LEN,
                            n => n.min(sa.data().len()),
                        };
                        hexdump(f, sa.data().get(..n).unwrap_or(&[]))
                    }
                }
            }
            MgmtClass::PERF_MGMT => match crate::perf::Repr::parse_bytes(self.0) {
                Ok(r) if method_carries_data(r.header.method) => write!(f, "{r:#}"),
                Ok(r) => writeln!(f, "{r}"),
                Err(e) => {
                    writeln!(f, "{pkt}")?;
                    writeln!(f, "  invalid PerfMgt MAD: {e}")
                }
            },
            _ => writeln!(f, "{pkt}"),
        }
    }
}

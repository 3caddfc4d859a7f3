//! tcpdump-like printing of MADs for logs and tracers (STYLE P14).
//!
//! - Every view and `Repr` implements `Display`. An SMP prints as one line,
//!   `SubnGet(NodeInfo) DR 0,1,4 hop 0/3 tid 0x1234`; an attribute prints as a field listing in
//!   the layout of `smpquery` (`NodeType:........................Switch`), using IBA field names.
//! - [`pretty_smp`] takes *any* bytes: a short buffer prints as `truncated`, a MAD that is not a
//!   valid SMP prints its header and the reason, an attribute that does not parse prints the
//!   error and a hex dump. It never panics, which makes it the fuzzing oracle
//!   (`mad/fuzz/fuzz_targets/parse_mad.rs`).
//!
//! ```
//! use ibmad::pretty::pretty_smp;
//! use ibmad::{DrPath, Method, Smp, SmpAttrId};
//! use ibmad::zerocopy::IntoBytes;
//!
//! let path = DrPath::parse("0,1,4").unwrap();
//! let smp = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 0x1234, &path);
//! assert_eq!(
//!     pretty_smp(smp.as_bytes()).to_string(),
//!     "SubnGet(NodeInfo) DR 0,1,4 hop 0/2 tid 0x1234\n"
//! );
//! ```

use core::fmt;

use crate::attr::SmpAttr;
use crate::codes::Method;
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

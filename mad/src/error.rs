//! Parse errors as typed values (STYLE P11, in the manner of etherparse's `err` module).
//!
//! Every `new_checked` and `Repr::parse` in this crate returns a [`ParseError`]; each variant
//! carries enough context (which layer, which offset, which value) to be logged without the
//! original buffer. Nothing in this module allocates or panics.
//!
//! Mapping onto the MAD status an agent would answer with (IBA vol1 §13.4.7) is given by
//! [`ParseError::status`]; an SMA may use it as a default and refine it.

use core::fmt;

use crate::codes::{Method, MgmtClass, PmaAttrId, SaAttrId, SmpAttrId, Status};

/// Which wire layer a length or offset refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layer {
    /// The 24-byte common MAD header (IBA vol1 §13.4.3).
    MadHeader,
    /// The 256-byte SMP (IBA vol1 §14.2.1).
    Smp,
    /// An attribute payload inside the 64-byte SMP data field.
    Attr(SmpAttrId),
    /// A general-service MAD (GMP), 256 bytes or an RMPP-reassembled longer one.
    Gmp,
    /// The 12-byte RMPP header (IBA vol1 §13.6.2.1).
    Rmpp,
    /// The 20-byte SA header (IBA vol1 §15.2.1.1).
    SaHeader,
    /// An attribute payload of a GMP class (`attr` is that class's attribute id).
    GmpAttr {
        /// The management class.
        class: MgmtClass,
        /// The attribute id in that class.
        attr: u16,
    },
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layer::MadHeader => f.write_str("MAD header"),
            Layer::Smp => f.write_str("SMP"),
            Layer::Attr(a) => write!(f, "{a} attribute"),
            Layer::Gmp => f.write_str("GMP"),
            Layer::Rmpp => f.write_str("RMPP header"),
            Layer::SaHeader => f.write_str("SA header"),
            Layer::GmpAttr { class, attr } => match *class {
                MgmtClass::PERF_MGMT => write!(f, "PerfMgt {} attribute", PmaAttrId(*attr)),
                MgmtClass::SUBN_ADM => write!(f, "SubnAdm {} attribute", SaAttrId(*attr)),
                c => write!(f, "class {:#04x} attribute {attr:#06x}", c.0),
            },
        }
    }
}

/// A buffer was shorter than the layout it should hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LenError {
    /// Bytes the layout needs.
    pub required: usize,
    /// Bytes that were there.
    pub got: usize,
    /// The layout that was being read or written.
    pub layer: Layer,
    /// Offset of that layout from the start of the MAD (64 for an attribute in the SMP data field,
    /// 0 when the buffer is the attribute alone).
    pub offset: usize,
}

impl fmt::Display for LenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} needs {} bytes at offset {}, got {}",
            self.layer, self.required, self.offset, self.got
        )
    }
}

impl std::error::Error for LenError {}

/// Why bytes could not be turned into a view or a validated `Repr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The buffer is too short.
    #[error("{0}")]
    Len(LenError),
    /// BaseVersion is not 1 (IBA vol1 §13.4.3).
    #[error("bad MAD base version {got} (expected 1)")]
    BadBaseVersion {
        /// The BaseVersion found.
        got: u8,
    },
    /// The management class is not one of the two SMP classes (0x01 LID-routed, 0x81 DR).
    #[error("management class {got:?} is not a subnet-management class")]
    NotSmp {
        /// The class found.
        got: MgmtClass,
    },
    /// ClassVersion is not the one this crate implements for the class (1 for SMPs).
    #[error("bad class version {got} for {class:?} (expected {expected})")]
    BadClassVersion {
        /// The class.
        class: MgmtClass,
        /// The ClassVersion found.
        got: u8,
        /// The version this crate speaks.
        expected: u8,
    },
    /// The method is not defined for the class (SMPs: Get, Set, GetResp, Trap, TrapRepress;
    /// IBA vol1 §14.2.2).
    #[error("method {method:?} is not defined for {class:?}")]
    UnknownMethod {
        /// The class.
        class: MgmtClass,
        /// The method found.
        method: Method,
    },
    /// The attribute id has no `Repr` in this crate.
    #[error("unknown or unsupported SMP attribute {0:?}")]
    UnknownAttr(SmpAttrId),
    /// The MAD carries a different attribute than the `Repr` asked for.
    #[error("expected attribute {expected:?}, MAD carries {got:?}")]
    WrongAttr {
        /// The attribute the caller parsed for.
        expected: SmpAttrId,
        /// The attribute id in the MAD.
        got: SmpAttrId,
    },
    /// A directed-route HopCount above 63 (C14-6).
    #[error("DR hop count {hop_cnt} exceeds 63")]
    BadHopCount {
        /// The HopCount found.
        hop_cnt: u8,
    },
    /// A directed-route HopPointer beyond HopCount + 1, which no DR rule can produce
    /// (IBA vol1 §14.2.2).
    #[error("DR hop pointer {hop_ptr} beyond hop count {hop_cnt} + 1")]
    BadHopPointer {
        /// The HopPointer found.
        hop_ptr: u8,
        /// The HopCount found.
        hop_cnt: u8,
    },
    /// An attribute field holds a value the IBA reserves.
    #[error("{attr:?}.{field} = {value:#x} is a reserved value")]
    InvalidValue {
        /// The attribute.
        attr: SmpAttrId,
        /// The spec name of the field.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// The management class is not a general-service class this crate decodes (SubnAdm,
    /// PerfMgt), or is a subnet-management class.
    #[error("management class {got:?} is not a GMP class this crate decodes")]
    NotGmp {
        /// The class found.
        got: MgmtClass,
    },
    /// The MAD is of another class than the layout asked for.
    #[error("expected a {expected:?} MAD, got class {got:?}")]
    WrongClass {
        /// The class the caller parsed for.
        expected: MgmtClass,
        /// The class in the MAD.
        got: MgmtClass,
    },
    /// RMPPFlags.Active is set but RMPPVersion is not 1 (IBA vol1 §13.6.2.1).
    #[error("RMPP version {got} (expected 1)")]
    BadRmppVersion {
        /// The RMPPVersion found.
        got: u8,
    },
    /// RMPPFlags.Active is set but RMPPType is not DATA, ACK, STOP or ABORT (IBA vol1
    /// §13.6.2.1).
    #[error("RMPP type {got} is not DATA, ACK, STOP or ABORT")]
    BadRmppType {
        /// The RMPPType found.
        got: u8,
    },
    /// The attribute id has no `Repr` in this crate for that class.
    #[error("unknown or unsupported {class:?} attribute {attr:#06x}")]
    UnknownGmpAttr {
        /// The class.
        class: MgmtClass,
        /// The attribute id.
        attr: u16,
    },
    /// A GMP header or attribute field holds a value the IBA reserves or forbids.
    #[error("{layer}: {field} = {value:#x} is not allowed")]
    InvalidGmpField {
        /// Where the field is.
        layer: Layer,
        /// The spec name of the field.
        field: &'static str,
        /// The value found.
        value: u64,
    },
}

impl From<LenError> for ParseError {
    fn from(e: LenError) -> Self {
        ParseError::Len(e)
    }
}

impl ParseError {
    /// The MAD status an agent would answer a request that failed this way with
    /// (IBA vol1 §13.4.7; invalid-field codes in bits 4..2).
    #[must_use]
    pub fn status(&self) -> Status {
        match self {
            ParseError::BadBaseVersion { .. } | ParseError::BadClassVersion { .. } => {
                Status::BAD_VERSION
            }
            ParseError::UnknownMethod { .. } => Status::METHOD_NOT_SUPPORTED,
            ParseError::UnknownAttr(_)
            | ParseError::WrongAttr { .. }
            | ParseError::UnknownGmpAttr { .. } => Status::METHOD_ATTR_NOT_SUPPORTED,
            ParseError::Len(_)
            | ParseError::NotSmp { .. }
            | ParseError::BadHopCount { .. }
            | ParseError::BadHopPointer { .. }
            | ParseError::InvalidValue { .. }
            | ParseError::NotGmp { .. }
            | ParseError::WrongClass { .. }
            | ParseError::BadRmppVersion { .. }
            | ParseError::BadRmppType { .. }
            | ParseError::InvalidGmpField { .. } => Status::INVALID_FIELD,
        }
    }
}

/// Checks that `buf` holds at least `required` bytes.
pub(crate) fn check_len(
    buf: &[u8],
    required: usize,
    layer: Layer,
    offset: usize,
) -> Result<(), LenError> {
    if buf.len() < required {
        Err(LenError {
            required,
            got: buf.len(),
            layer,
            offset,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len_error_display_names_layer_and_offset() {
        let e = ParseError::from(LenError {
            required: 40,
            got: 12,
            layer: Layer::Attr(SmpAttrId::NODE_INFO),
            offset: 64,
        });
        assert_eq!(
            e.to_string(),
            "NodeInfo attribute needs 40 bytes at offset 64, got 12"
        );
        assert_eq!(e.status(), Status::INVALID_FIELD);
    }

    #[test]
    fn status_mapping() {
        assert_eq!(
            ParseError::BadBaseVersion { got: 2 }.status(),
            Status::BAD_VERSION
        );
        assert_eq!(
            ParseError::UnknownAttr(SmpAttrId(0x99)).status(),
            Status::METHOD_ATTR_NOT_SUPPORTED
        );
        assert_eq!(
            ParseError::UnknownGmpAttr {
                class: MgmtClass::PERF_MGMT,
                attr: 0x99
            }
            .status(),
            Status::METHOD_ATTR_NOT_SUPPORTED
        );
        assert_eq!(
            ParseError::BadRmppVersion { got: 0 }.status(),
            Status::INVALID_FIELD
        );
    }

    #[test]
    fn gmp_layers_display() {
        let pc = Layer::GmpAttr {
            class: MgmtClass::PERF_MGMT,
            attr: PmaAttrId::PORT_COUNTERS.0,
        };
        assert_eq!(pc.to_string(), "PerfMgt PortCounters attribute");
        let nr = Layer::GmpAttr {
            class: MgmtClass::SUBN_ADM,
            attr: SaAttrId::NODE_RECORD.0,
        };
        assert_eq!(nr.to_string(), "SubnAdm NodeRecord attribute");
        let other = Layer::GmpAttr {
            class: MgmtClass::COMM_MGMT,
            attr: 0x10,
        };
        assert_eq!(other.to_string(), "class 0x07 attribute 0x0010");
        assert_eq!(Layer::Rmpp.to_string(), "RMPP header");
    }
}

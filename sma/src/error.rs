//! [`SmaError`]: why an SMP request was refused, one variant per MAD status code
//! (IBA vol1 §13.4.7, Table 119; STYLE P11).

use ibmad::{Method, SmpAttrId, Status};

/// A refused request. Converts one-to-one into the MAD status the GetResp carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SmaError {
    /// BaseVersion or ClassVersion is not 1 (status 0x0004).
    #[error("unsupported base/class version {base}/{class}")]
    BadVersion {
        /// BaseVersion received.
        base: u8,
        /// ClassVersion received.
        class: u8,
    },
    /// The method is not one the SMA implements (status 0x0008).
    #[error("method {0} not supported")]
    MethodNotSupported(Method),
    /// The method is not supported for this attribute (status 0x000C), e.g. Set(NodeInfo) or
    /// Get(SwitchInfo) on a CA.
    #[error("{method} of {attr} not supported")]
    MethodAttrNotSupported {
        /// The method.
        method: Method,
        /// The attribute.
        attr: SmpAttrId,
    },
    /// The attribute modifier is out of range (status 0x001C).
    #[error("{attr}: attribute modifier {attr_mod:#x} invalid ({why})")]
    InvalidModifier {
        /// The attribute.
        attr: SmpAttrId,
        /// The modifier received.
        attr_mod: u32,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A field of a Set carries an invalid value (status 0x001C); nothing was changed.
    #[error("{attr}.{field}: invalid value ({why})")]
    InvalidField {
        /// The attribute.
        attr: SmpAttrId,
        /// The field, in the IBA's spelling.
        field: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
}

impl From<SmaError> for Status {
    fn from(e: SmaError) -> Status {
        match e {
            SmaError::BadVersion { .. } => Status::BAD_VERSION,
            SmaError::MethodNotSupported(_) => Status::METHOD_NOT_SUPPORTED,
            SmaError::MethodAttrNotSupported { .. } => Status::METHOD_ATTR_NOT_SUPPORTED,
            SmaError::InvalidModifier { .. } | SmaError::InvalidField { .. } => {
                Status::INVALID_FIELD
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_maps_to_its_status_code() {
        let a = SmpAttrId::PORT_INFO;
        let cases = [
            (SmaError::BadVersion { base: 1, class: 2 }, 0x0004),
            (SmaError::MethodNotSupported(Method::SEND), 0x0008),
            (
                SmaError::MethodAttrNotSupported {
                    method: Method::SET,
                    attr: SmpAttrId::NODE_INFO,
                },
                0x000C,
            ),
            (
                SmaError::InvalidModifier {
                    attr: a,
                    attr_mod: 9,
                    why: "x",
                },
                0x001C,
            ),
            (
                SmaError::InvalidField {
                    attr: a,
                    field: "LID",
                    why: "x",
                },
                0x001C,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(Status::from(e).0, code, "{e}");
        }
    }

    #[test]
    fn messages_name_the_problem() {
        let e = SmaError::InvalidField {
            attr: SmpAttrId::PORT_INFO,
            field: "NeighborMTU",
            why: "above MTUCap",
        };
        assert_eq!(
            e.to_string(),
            "PortInfo.NeighborMTU: invalid value (above MTUCap)"
        );
    }
}

//! The subnet administrator's front door (IBA vol1 §15), sans-IO.
//!
//! A master SM is the SA's host: every SubnAdm (class 0x03) request to the master's port comes
//! here. The SA proper (records, queries, subscriptions) is not written yet (issue 13); until
//! it is, [`Sa::handle_mad`] answers every request with the IBA status for what it cannot serve
//! — "method/attribute combination not supported" (0x000C) — so that a client gets a clear
//! error instead of a timeout, and no input can do more than that:
//!
//! - a request (Get, Set, GetTable, GetTraceTable, GetMulti, Delete) of ClassVersion 2 is
//!   answered by [`ibmad::SaRepr::error_response`] with status 0x000C (a Set by a GetResp,
//!   SM_Key 0, AttributeOffset 0, RMPP inactive);
//! - another ClassVersion: status 0x0004 (bad version), same response method;
//! - a method SubnAdm does not define but that has the response bit clear: status 0x0008,
//!   answered with the method's response bit set;
//! - dropped, counted in [`SaStats::dropped`]: MADs shorter than 256 bytes, BaseVersion ≠ 1,
//!   another class, and responses (ReportResp, any method with the R bit): never answer an
//!   answer. The RMPP header of a request is not looked at (the answer is one plain MAD).
//!
//! The answer goes back to the requester ([`MadMeta::reply`]: its LID, its QP, the GSI Q_Key).

use ibmad::gmp::{self, MadHeader};
use ibmad::zerocopy::FromBytes;
use ibmad::{MadMeta, Method, MgmtClass, SaRepr, Status, MAD_LEN};

/// Counters of an [`Sa`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaStats {
    /// MADs given to [`Sa::handle_mad`].
    pub received: u64,
    /// Requests answered (all with an error status for now).
    pub answered: u64,
    /// MADs dropped without an answer.
    pub dropped: u64,
}

/// An answer to send: `mad` with `meta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaReply {
    /// Addressing: the request's [`MadMeta::reply`].
    pub meta: MadMeta,
    /// The response MAD.
    pub mad: [u8; MAD_LEN],
}

/// The SA of a master SM; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Sa {
    stats: SaStats,
}

impl Sa {
    /// A new SA.
    #[must_use]
    pub fn new() -> Sa {
        Sa::default()
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> SaStats {
        self.stats
    }

    /// Handles one MAD received from `meta`; returns the answer, if the MAD gets one. Never
    /// panics, whatever the bytes.
    pub fn handle_mad(&mut self, meta: &MadMeta, mad: &[u8]) -> Option<SaReply> {
        self.stats.received += 1;
        let answer = Self::answer(mad);
        match answer {
            Some(mad) => {
                self.stats.answered += 1;
                Some(SaReply {
                    meta: meta.reply(),
                    mad,
                })
            }
            None => {
                self.stats.dropped += 1;
                None
            }
        }
    }

    fn answer(mad: &[u8]) -> Option<[u8; MAD_LEN]> {
        let bytes = mad.get(..MAD_LEN)?;
        let (h, _) = MadHeader::ref_from_prefix(bytes).ok()?;
        let method = Method(h.method);
        if h.base_version != 1 || h.mgmt_class != MgmtClass::SUBN_ADM.0 || method.is_response() {
            return None;
        }
        let expected = gmp::class_version(MgmtClass::SUBN_ADM).unwrap_or(2);
        let status = if h.class_version != expected {
            Status::BAD_VERSION
        } else if gmp::method_defined(MgmtClass::SUBN_ADM, method) {
            Status::METHOD_ATTR_NOT_SUPPORTED
        } else {
            Status::METHOD_NOT_SUPPORTED
        };
        // The headers as sent, RMPP not looked at: parse with the RMPP bytes cleared.
        let mut req = [0u8; MAD_LEN];
        req.copy_from_slice(bytes);
        req[24..36].fill(0);
        req[2] = expected; // parse the rest even when the version is wrong
        if status == Status::METHOD_NOT_SUPPORTED {
            req[3] = Method::GET.0; // a defined method, for the parser
        }
        let repr = SaRepr::parse_bytes(&req).ok()?;
        let mut resp = repr.error_response(status)?;
        resp.header.class_version = h.class_version;
        if status == Status::METHOD_NOT_SUPPORTED {
            resp.header.method = Method(method.0 | Method::RESP_BIT);
        }
        // Records of an error answer are empty: the headers are all there is.
        Some(resp.to_mad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::{gmp::Repr as GmpRepr, Lid, PortNum, QKey, SaAttrId};

    fn req(method: Method, attr: SaAttrId) -> [u8; MAD_LEN] {
        let r = SaRepr {
            header: GmpRepr::request(MgmtClass::SUBN_ADM, method, attr.0, 0, 0x55),
            rmpp: ibmad::RmppRepr::Inactive,
            sm_key: 7,
            attr_offset: 0,
            comp_mask: 0x3,
        };
        r.to_mad()
    }

    fn meta() -> MadMeta {
        MadMeta {
            qp: 1,
            qkey: QKey::GSI,
            ..MadMeta::gmp(PortNum(1), Lid(4), Lid(1))
        }
    }

    #[test]
    fn every_request_gets_method_attr_not_supported() {
        let mut sa = Sa::new();
        for (m, resp) in [
            (Method::GET, Method::GET_RESP),
            (Method::SET, Method::GET_RESP),
            (Method::GET_TABLE, Method::GET_TABLE_RESP),
            (Method::GET_TRACE_TABLE, Method::GET_TRACE_TABLE_RESP),
            (Method::GET_MULTI, Method::GET_MULTI_RESP),
            (Method::DELETE, Method::DELETE_RESP),
        ] {
            let r = sa
                .handle_mad(&meta(), &req(m, SaAttrId::NODE_RECORD))
                .unwrap();
            let a = SaRepr::parse_bytes(&r.mad).unwrap();
            assert_eq!(a.header.method, resp, "{m}");
            assert_eq!(a.header.status, Status::METHOD_ATTR_NOT_SUPPORTED);
            assert_eq!(a.header.tid, 0x55);
            assert_eq!((a.sm_key, a.attr_offset, a.comp_mask), (0, 0, 0x3));
            // Back to the requester (LID 4) from the SA's LID (1), to its QP.
            assert_eq!((r.meta.dlid, r.meta.slid, r.meta.qp), (Lid(4), Lid(1), 1));
        }
        assert_eq!(sa.stats().answered, 6);
    }

    #[test]
    fn bad_version_and_unknown_methods() {
        let mut sa = Sa::new();
        let mut v1 = req(Method::GET_TABLE, SaAttrId::PATH_RECORD);
        v1[2] = 1;
        let r = sa.handle_mad(&meta(), &v1).unwrap();
        assert_eq!(&r.mad[2..6], &[1, 0x92, 0x00, 0x04]);
        let mut odd = req(Method::GET, SaAttrId::NODE_RECORD);
        odd[3] = 0x33;
        let r = sa.handle_mad(&meta(), &odd).unwrap();
        assert_eq!(&r.mad[3..6], &[0xB3, 0x00, 0x08]);
    }

    #[test]
    fn answers_are_never_answered_and_garbage_is_dropped() {
        let mut sa = Sa::new();
        for m in [
            Method::GET_RESP,
            Method::REPORT_RESP,
            Method::GET_TABLE_RESP,
        ] {
            assert!(sa
                .handle_mad(&meta(), &req(m, SaAttrId::NODE_RECORD))
                .is_none());
        }
        let mut perf = req(Method::GET, SaAttrId::NODE_RECORD);
        perf[1] = 0x04;
        assert!(sa.handle_mad(&meta(), &perf).is_none());
        let mut b2 = req(Method::GET, SaAttrId::NODE_RECORD);
        b2[0] = 2;
        assert!(sa.handle_mad(&meta(), &b2).is_none());
        assert!(sa.handle_mad(&meta(), &[1, 3, 2, 1]).is_none());
        // An RMPP-active request with a broken RMPP header still gets its error answer.
        let mut rmpp = req(Method::GET_MULTI, SaAttrId::MULTI_PATH_RECORD);
        rmpp[26] = 0x01;
        let r = sa.handle_mad(&meta(), &rmpp).unwrap();
        let a = SaRepr::parse_bytes(&r.mad).unwrap();
        assert_eq!(a.attr(), SaAttrId::PATH_RECORD);
        assert_eq!(
            sa.stats(),
            SaStats {
                received: 7,
                answered: 1,
                dropped: 6
            }
        );
    }
}

//! SMInfo responder (IBA vol1 §14.4.1 "Subnet Manager Information", the SMInfo attribute of
//! §14.2.5.13): answering another SM's SMInfo Get or Set, so that SMs in one subnet see each
//! other's GUID, priority and state — the input of the master election (§14.4.1.1) — and can
//! hand the subnet over. What a Set does is the role machine's ([`crate::role`]); here is only
//! the answer.
//!
//! Pure functions: [`respond`] turns a Get or Set into its GetResp, [`answer`] a Get.

use ibmad::attr::SmInfo;
use ibmad::zerocopy::FromBytes;
use ibmad::{smi, Guid, Lid, MadMeta, Method, PortNum, SmState, Smp, SmpAttrId};

use crate::subnet::Subnet;

/// What an SM reports about itself in SMInfo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    /// GUID: the SM's port GUID (0 while unknown, before the first discovery).
    pub guid: Guid,
    /// The SM's SM_Key.
    pub sm_key: u64,
    /// The M_Key the SM protects its port with (0 = none).
    pub m_key: u64,
    /// ActCount: increases while the SM is active.
    pub act_count: u32,
    /// Priority, 0..=15.
    pub priority: u8,
    /// SMState.
    pub state: SmState,
}

/// Writes `facts` into an SMInfo: SM_Key only if `disclose_key`, else 0.
pub fn fill(info: &mut SmInfo, facts: &Facts, disclose_key: bool) {
    info.guid.set(facts.guid.0);
    info.sm_key.set(if disclose_key { facts.sm_key } else { 0 });
    info.act_count.set(facts.act_count);
    info.set_priority(facts.priority.min(15));
    info.set_sm_state_raw(facts.state.0);
}

/// The directed route back to the sender of a directed-route request that reached us: its
/// ReturnPath read backwards (the port it arrived on at each hop, last hop first). `None` for a
/// LID-routed request or a bad hop count.
#[must_use]
pub fn route_back(req: &Smp) -> Option<ibmad::DrPath> {
    if !req.is_dr() {
        return None;
    }
    let n = usize::from(req.hop_cnt);
    if n > ibmad::DrPath::MAX_HOPS {
        return None;
    }
    let ports: Vec<u8> = (1..=n).rev().map(|i| req.return_path[i]).collect();
    ibmad::DrPath::new(&ports).ok()
}

/// The SM's own port GUID, from the subnet it discovered (the node reached by the empty
/// directed route); `Guid(0)` before discovery.
#[must_use]
pub fn own_guid(subnet: &Subnet) -> Guid {
    subnet
        .sm_port()
        .and_then(|(n, p)| subnet.port(n, p))
        .map_or(Guid(0), |p| p.guid)
}

/// The GetResp to an SMInfo Get, with where to send it: a directed-route request is answered
/// along its return path (the transport applies `ibmad::smi::advance`), a LID-routed one to
/// the requester's LID from `own_lid`. `None` if `req` is not an SMInfo Get.
///
/// SM_Key is withheld (reads 0) from a requester that fails the M_Key check: when our port is
/// protected (`m_key` ≠ 0) and the request's M_Key differs (IBA §14.4.1 with §14.2.4's
/// protection level 1; OpenSM `smi_rcv_process_get_request`). Otherwise it is disclosed.
#[must_use]
pub fn answer(
    meta: &MadMeta,
    req: &Smp,
    facts: &Facts,
    port: PortNum,
    own_lid: Lid,
) -> Option<(MadMeta, Smp)> {
    if req.method() != Method::GET {
        return None;
    }
    respond(meta, req, facts, port, own_lid, ibmad::Status::OK)
}

/// The GetResp to an SMInfo Get or Set, with `status` (a refused Set: 7, InvalidField) and
/// where to send it, as [`answer`]. `None` if `req` is neither.
#[must_use]
pub fn respond(
    meta: &MadMeta,
    req: &Smp,
    facts: &Facts,
    port: PortNum,
    own_lid: Lid,
    status: ibmad::Status,
) -> Option<(MadMeta, Smp)> {
    if !matches!(req.method(), Method::GET | Method::SET) || req.attr() != SmpAttrId::SM_INFO {
        return None;
    }
    let authenticated = facts.m_key == 0 || req.m_key.get() == facts.m_key;
    let mut resp = *req;
    smi::make_response(&mut resp);
    resp.set_status(status);
    resp.data = [0; 64];
    let (info, _) = SmInfo::mut_from_prefix(&mut resp.data).ok()?;
    fill(info, facts, authenticated);
    let out = if resp.is_dr() {
        MadMeta {
            port,
            slid: Lid::PERMISSIVE,
            dlid: Lid::PERMISSIVE,
            qp: 0,
            sl: 0,
            ..Default::default()
        }
    } else {
        MadMeta {
            port,
            slid: own_lid,
            dlid: meta.slid,
            qp: 0,
            sl: meta.sl,
            ..Default::default()
        }
    };
    Some((out, resp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::zerocopy::IntoBytes;
    use ibmad::DrPath;

    fn facts() -> Facts {
        Facts {
            guid: Guid(0x0011_2233_4455_6677),
            sm_key: 0xABCD,
            m_key: 0,
            act_count: 42,
            priority: 15,
            state: SmState::MASTER,
        }
    }

    fn dr_get(key: u64) -> Smp {
        let mut s = Smp::dr_request(
            Method::GET,
            SmpAttrId::SM_INFO,
            0,
            0x77,
            &DrPath::parse("0,1,3").unwrap(),
        );
        let (i, _) = SmInfo::mut_from_prefix(&mut s.data).unwrap();
        i.sm_key.set(key);
        // As the SMA hands it over: the hop pointer past the path (C14-9:4).
        s.hop_ptr = s.hop_cnt + 1;
        s
    }

    fn meta() -> MadMeta {
        MadMeta {
            port: PortNum(1),
            slid: Lid(9),
            dlid: Lid(4),
            qp: 0,
            sl: 2,
            ..Default::default()
        }
    }

    #[test]
    fn dr_get_is_answered_along_the_return_path_with_our_facts() {
        let req = dr_get(0xABCD);
        let (m, resp) = answer(&meta(), &req, &facts(), PortNum(1), Lid(4)).unwrap();
        assert_eq!(resp.method(), Method::GET_RESP);
        assert!(resp.direction());
        assert_eq!(resp.tid.get(), 0x77);
        assert_eq!((m.slid, m.dlid), (Lid::PERMISSIVE, Lid::PERMISSIVE));
        let (i, _) = SmInfo::ref_from_prefix(&resp.data).unwrap();
        assert_eq!(i.guid(), facts().guid);
        assert_eq!(i.sm_key.get(), 0xABCD);
        assert_eq!(i.act_count.get(), 42);
        assert_eq!(i.priority(), 15);
        assert_eq!(i.sm_state(), SmState::MASTER);
        // The way back starts at the responder (C14-13:1).
        let mut back = resp;
        assert_eq!(
            smi::advance(&mut back, false),
            smi::Forward::Out(PortNum(req.return_path[2]))
        );
    }

    #[test]
    fn sm_key_is_withheld_from_a_requester_failing_the_m_key_check() {
        let protected = Facts {
            m_key: 0x77,
            ..facts()
        };
        let mut req = dr_get(0);
        let (_, resp) = answer(&meta(), &req, &protected, PortNum(1), Lid(4)).unwrap();
        let (i, _) = SmInfo::ref_from_prefix(&resp.data).unwrap();
        assert_eq!(i.sm_key.get(), 0);
        assert_eq!(i.priority(), 15);
        req.m_key.set(0x77);
        let (_, resp) = answer(&meta(), &req, &protected, PortNum(1), Lid(4)).unwrap();
        let (i, _) = SmInfo::ref_from_prefix(&resp.data).unwrap();
        assert_eq!(i.sm_key.get(), 0xABCD);
    }

    #[test]
    fn lid_routed_get_goes_back_to_the_requester_lid() {
        let req = Smp::lid_request(Method::GET, SmpAttrId::SM_INFO, 0, 5);
        let (m, resp) = answer(&meta(), &req, &facts(), PortNum(1), Lid(4)).unwrap();
        assert_eq!((m.slid, m.dlid, m.sl), (Lid(4), Lid(9), 2));
        assert_eq!(resp.method(), Method::GET_RESP);
        assert_eq!(resp.as_bytes().len(), 256);
    }

    #[test]
    fn other_requests_are_not_answered() {
        let set = Smp::lid_request(Method::SET, SmpAttrId::SM_INFO, 0, 5);
        assert!(answer(&meta(), &set, &facts(), PortNum(1), Lid(4)).is_none());
        let ni = Smp::lid_request(Method::GET, SmpAttrId::NODE_INFO, 0, 5);
        assert!(answer(&meta(), &ni, &facts(), PortNum(1), Lid(4)).is_none());
    }

    #[test]
    fn a_set_is_answered_with_its_status_and_the_way_back_is_the_return_path_reversed() {
        let mut req = dr_get(0xABCD);
        req.method = Method::SET.0;
        req.return_path[1] = 7;
        req.return_path[2] = 9;
        let (_, resp) = respond(
            &meta(),
            &req,
            &facts(),
            PortNum(1),
            Lid(4),
            ibmad::Status::INVALID_FIELD,
        )
        .unwrap();
        assert_eq!(resp.method(), Method::GET_RESP);
        assert_eq!(resp.status(), ibmad::Status::INVALID_FIELD);
        assert_eq!(route_back(&req).unwrap().ports(), &[9, 7]);
        assert!(answer(&meta(), &req, &facts(), PortNum(1), Lid(4)).is_none());
        let lr = Smp::lid_request(Method::SET, SmpAttrId::SM_INFO, 0, 5);
        assert!(route_back(&lr).is_none());
    }

    #[test]
    fn own_guid_is_zero_before_discovery() {
        assert_eq!(own_guid(&Subnet::new()), Guid(0));
    }
}

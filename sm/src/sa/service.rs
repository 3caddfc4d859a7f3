//! ServiceRecord (IBA vol1 §15.2.5.14; OpenSM `osm_sa_service_record.c`): services registered
//! by SubnAdmSet, removed by SubnAdmDelete or when their lease runs out, found by
//! SubnAdmGet/GetTable with any component mask.
//!
//! - **Set** needs ServiceID and ServiceGID in the component mask (else ERR_REQ_INVALID); the
//!   record with the same RID (ServiceID, ServiceGID, ServiceP_Key) is replaced, else a new one
//!   is added. Without ServiceLease in the mask the lease is infinite (0xFFFFFFFF); a finite
//!   lease of N seconds expires N seconds after the Set ([`Services::expire`], driven by
//!   [`super::Sa::handle_timeout`]). With ServiceP_Key in the mask the requester — and, for a
//!   unicast ServiceGID, the port that GID names — must hold that P_Key (ERR_REQ_INVALID
//!   otherwise). The answer echoes the record, ServiceP_Key 0xFFFF if the mask had none.
//! - **Delete** removes the record with the request's RID (ERR_NO_RECORDS if none), with the
//!   same P_Key check, and echoes it.
//! - **Get/GetTable**: every record matching the mask whose ServiceP_Key the requester holds
//!   (an invalid P_Key 0 matches everyone, as OpenSM).
//! - **ServiceKey** is returned as 0 unless the request is trusted (IBA p. 923: SM_Key = the SA
//!   key); it is still compared when the mask selects it.

use ibmad::sa::status as sa_status;
use ibmad::sa_rec::service::{comp, ServiceRecord, LEASE_INFINITE};
use ibmad::sa_rec::{record_matches, SaRecord};
use ibmad::zerocopy::IntoBytes;
use ibmad::{Guid, Method, Time};

use super::{Answer, SaQuery, SaSnapshot};
use crate::partition::FULL_MEMBER;

/// One registered service.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    rec: ServiceRecord,
    /// When the lease runs out (`None`: infinite).
    expires: Option<Time>,
}

/// The registered services (part of [`super::SaState`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Services {
    list: Vec<Entry>,
}

impl Services {
    /// Number of services registered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// True if none is.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// A service read back from an SA database file ([`super::db`]), its lease running out
    /// at `expires`; false if a service with its RID is there already (OpenSM's loader skips
    /// it).
    pub fn restore(&mut self, rec: ServiceRecord, expires: Option<Time>) -> bool {
        if self.list.iter().any(|e| e.rec.rid() == rec.rid()) {
            return false;
        }
        self.list.push(Entry { rec, expires });
        true
    }

    /// Drops every registered service.
    pub fn clear(&mut self) {
        self.list.clear();
    }
    /// Removes every service whose lease ran out by `now`; returns how many.
    pub fn expire(&mut self, now: Time) -> usize {
        let before = self.list.len();
        self.list.retain(|e| e.expires.is_none_or(|t| t > now));
        before - self.list.len()
    }
    /// The earliest lease expiry, for [`super::Sa::poll_timeout`].
    #[must_use]
    pub fn next_expiry(&self) -> Option<Time> {
        self.list.iter().filter_map(|e| e.expires).min()
    }
    /// The registered records (ServiceKey included), in registration order.
    pub fn records(&self) -> impl Iterator<Item = &ServiceRecord> {
        self.list.iter().map(|e| &e.rec)
    }
}

/// True if the end port with `lid`'s P_Key table holds `pkey` (either membership); P_Key 0
/// (invalid) is allowed to everyone, as OpenSM's `osm_physp_has_pkey`.
fn port_has_pkey(
    snap: &SaSnapshot,
    port: Option<(crate::NodeId, ibmad::PortNum)>,
    pkey: u16,
) -> bool {
    if pkey & !FULL_MEMBER == 0 {
        return true;
    }
    let Some(k) = port else {
        return false;
    };
    snap.pkeys
        .get(&k)
        .is_some_and(|t| t.iter().any(|e| e.0 & !FULL_MEMBER == pkey & !FULL_MEMBER))
}

/// OpenSM's `validate_sr` for Set and Delete.
fn valid_for_update(snap: &SaSnapshot, q: &SaQuery<'_>, rec: &ServiceRecord) -> bool {
    if q.comp_mask & comp::SERVICE_PKEY == 0 {
        return true;
    }
    let pkey = rec.service_pkey.get();
    if !port_has_pkey(snap, snap.by_lid(q.meta.slid), pkey) {
        return false;
    }
    if q.comp_mask & comp::SERVICE_GID != 0 && rec.service_gid[0] != 0xFF {
        let mut g = [0u8; 8];
        g.copy_from_slice(&rec.service_gid[8..16]);
        let port = snap.by_port_guid(Guid(u64::from_be_bytes(g)));
        if port.is_none() || !port_has_pkey(snap, port, pkey) {
            return false;
        }
    }
    true
}

fn one(rec: &ServiceRecord, trusted: bool) -> Answer {
    let mut r = *rec;
    if !trusted {
        r.service_key = [0; 16];
    }
    Answer::Records {
        size: ServiceRecord::LEN,
        data: r.as_bytes().to_vec(),
    }
}

/// The ServiceRecord arm of [`super::Sa::dispatch`].
pub fn service_records(snap: &SaSnapshot, s: &mut Services, q: &SaQuery<'_>) -> Answer {
    let req = ServiceRecord::read_padded(q.record);
    s.expire(q.now);
    match q.method {
        Method::GET | Method::GET_TABLE => {
            let requester = snap.by_lid(q.meta.slid);
            let limit = if q.method == Method::GET {
                2
            } else {
                usize::MAX
            };
            let mut data = Vec::new();
            let mut n = 0;
            for e in &s.list {
                if n >= limit {
                    break;
                }
                let pk = e.rec.service_pkey.get();
                if !port_has_pkey(snap, requester, pk)
                    || !record_matches::<ServiceRecord>(
                        q.comp_mask,
                        req.as_bytes(),
                        e.rec.as_bytes(),
                    )
                {
                    continue;
                }
                let mut r = e.rec;
                if !q.trusted {
                    r.service_key = [0; 16];
                }
                data.extend_from_slice(r.as_bytes());
                n += 1;
            }
            Answer::Records {
                size: ServiceRecord::LEN,
                data,
            }
        }
        Method::SET => {
            if !valid_for_update(snap, q, &req)
                || q.comp_mask & (comp::SERVICE_ID | comp::SERVICE_GID)
                    != comp::SERVICE_ID | comp::SERVICE_GID
            {
                return Answer::Status(sa_status::REQ_INVALID);
            }
            let mut rec = req;
            if q.comp_mask & comp::SERVICE_LEASE == 0 {
                rec.service_lease.set(LEASE_INFINITE);
            }
            let lease = rec.service_lease.get();
            let expires = (lease != LEASE_INFINITE)
                .then(|| q.now + core::time::Duration::from_secs(u64::from(lease)));
            let entry = Entry { rec, expires };
            match s.list.iter_mut().find(|e| e.rec.rid() == rec.rid()) {
                Some(e) => *e = entry,
                None => s.list.push(entry),
            }
            if q.comp_mask & comp::SERVICE_PKEY == 0 {
                rec.service_pkey.set(0xFFFF);
            }
            one(&rec, q.trusted)
        }
        Method::DELETE => {
            if !valid_for_update(snap, q, &req) {
                return Answer::Status(sa_status::REQ_INVALID);
            }
            match s.list.iter().position(|e| e.rec.rid() == req.rid()) {
                Some(i) => {
                    let e = s.list.remove(i);
                    one(&e.rec, q.trusted)
                }
                None => Answer::Status(sa_status::NO_RECORDS),
            }
        }
        _ => Answer::unsupported(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::{Lid, MadMeta, PKey, SaAttrId};

    /// The snapshot fixture's switch with two CAs (port GUIDs 0x201, 0x401); 0x201 holds
    /// 0xFFFF and 0x8010, 0x401 only 0xFFFF.
    fn snap() -> SaSnapshot {
        let s = crate::sa::snapshot::tests::small(0);
        let mut snap = crate::sa::snapshot::tests::snap(&s);
        for (id, p) in s.end_ports() {
            let guid = s.port(id, p).unwrap().guid.0;
            let mut t = vec![PKey(0xFFFF)];
            if guid == 0x201 {
                t.push(PKey(0x8010));
            }
            snap.pkeys.insert((id, p), t);
        }
        snap
    }

    fn lid_of(snap: &SaSnapshot, guid: u64) -> Lid {
        let (n, p) = snap.by_port_guid(Guid(guid)).unwrap();
        snap.subnet.port(n, p).unwrap().lid
    }

    fn rec(id: u64, guid: u64, name: &str) -> ServiceRecord {
        let mut r = ServiceRecord::zeroed();
        r.service_id.set(id);
        r.service_gid[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        r.service_gid[8..].copy_from_slice(&guid.to_be_bytes());
        r.service_name[..name.len()].copy_from_slice(name.as_bytes());
        r.service_key = [0xAB; 16];
        r
    }

    struct Ctx {
        snap: SaSnapshot,
        svc: Services,
    }

    impl Ctx {
        fn ask(
            &mut self,
            from: u64,
            method: Method,
            mask: u64,
            r: &ServiceRecord,
            trusted: bool,
            now: Time,
        ) -> Answer {
            let meta = MadMeta {
                slid: lid_of(&self.snap, from),
                ..MadMeta::default()
            };
            let mut bytes = [0u8; 200];
            bytes[..176].copy_from_slice(r.as_bytes());
            let q = SaQuery {
                meta: &meta,
                method,
                attr: SaAttrId::SERVICE_RECORD,
                attr_mod: 0,
                comp_mask: mask,
                trusted,
                record: &bytes,
                now,
            };
            service_records(&self.snap, &mut self.svc, &q)
        }
    }

    fn recs(a: &Answer) -> Vec<ServiceRecord> {
        match a {
            Answer::Records { size, data } => {
                data.chunks(*size).map(ServiceRecord::read_padded).collect()
            }
            Answer::Status(s) => panic!("status {s:?}"),
        }
    }

    #[test]
    fn register_query_update_delete() {
        let mut c = Ctx {
            snap: snap(),
            svc: Services::default(),
        };
        let t0 = Time::ZERO;
        let a = rec(1, 0x201, "alpha");
        let got = recs(&c.ask(
            0x201,
            Method::SET,
            comp::RID & !comp::SERVICE_PKEY | comp::SERVICE_NAME,
            &a,
            false,
            t0,
        ));
        assert_eq!(
            got[0].service_pkey.get(),
            0xFFFF,
            "default P_Key in the answer"
        );
        assert_eq!(got[0].service_lease.get(), LEASE_INFINITE);
        assert_eq!(
            got[0].service_key, [0; 16],
            "key hidden from an untrusted requester"
        );
        // Set without ServiceGID: refused.
        assert_eq!(
            c.ask(0x201, Method::SET, comp::SERVICE_ID, &a, false, t0),
            Answer::Status(sa_status::REQ_INVALID)
        );
        // Query by name: untrusted gets key 0, trusted the key.
        let q = rec(0, 0, "alpha");
        let r = recs(&c.ask(0x401, Method::GET, comp::SERVICE_NAME, &q, false, t0));
        assert_eq!((r.len(), r[0].service_key), (1, [0; 16]));
        let r = recs(&c.ask(0x401, Method::GET, comp::SERVICE_NAME, &q, true, t0));
        assert_eq!(r[0].service_key, [0xAB; 16]);
        // The key is compared even when it is hidden.
        let mut wrong = q;
        wrong.service_key = [1; 16];
        assert_eq!(
            recs(&c.ask(
                0x401,
                Method::GET_TABLE,
                comp::SERVICE_NAME | comp::SERVICE_KEY,
                &wrong,
                false,
                t0
            ))
            .len(),
            0
        );
        // Same RID again: replaced, not added.
        let mut a2 = a;
        a2.service_data8[3] = 9;
        c.ask(
            0x201,
            Method::SET,
            comp::RID & !comp::SERVICE_PKEY,
            &a2,
            false,
            t0,
        );
        assert_eq!(c.svc.len(), 1);
        let r = recs(&c.ask(
            0x401,
            Method::GET_TABLE,
            comp::service_data8(3),
            &a2,
            false,
            t0,
        ));
        assert_eq!(r.len(), 1);
        // Delete by RID.
        let d = recs(&c.ask(0x201, Method::DELETE, comp::RID, &a2, false, t0));
        assert_eq!(d[0].service_data8[3], 9);
        assert!(c.svc.is_empty());
        assert_eq!(
            c.ask(0x201, Method::DELETE, comp::RID, &a2, false, t0),
            Answer::Status(sa_status::NO_RECORDS)
        );
    }

    #[test]
    fn leases_expire_and_pkeys_hide_services() {
        let mut c = Ctx {
            snap: snap(),
            svc: Services::default(),
        };
        let t0 = Time::from_millis(1_000);
        let mut a = rec(2, 0x201, "leased");
        a.service_lease.set(4);
        c.ask(
            0x201,
            Method::SET,
            comp::RID & !comp::SERVICE_PKEY | comp::SERVICE_LEASE,
            &a,
            false,
            t0,
        );
        assert_eq!(
            c.svc.next_expiry(),
            Some(t0 + core::time::Duration::from_secs(4))
        );
        let q = rec(2, 0, "");
        let at = |ms| t0 + core::time::Duration::from_millis(ms);
        for (ms, n) in [(3_999, 1), (4_000, 0)] {
            let got = c.ask(
                0x401,
                Method::GET_TABLE,
                comp::SERVICE_ID,
                &q,
                false,
                at(ms),
            );
            assert_eq!(recs(&got).len(), n, "at {ms} ms");
        }
        // A service in partition 0x10: registered by a member, invisible to a non-member.
        let mut p = rec(3, 0x201, "red");
        p.service_pkey.set(0x8010);
        let r = c.ask(0x201, Method::SET, comp::RID, &p, false, t0);
        assert_eq!(recs(&r).len(), 1);
        let q = rec(3, 0, "");
        assert_eq!(
            recs(&c.ask(0x401, Method::GET_TABLE, comp::SERVICE_ID, &q, false, t0)).len(),
            0
        );
        assert_eq!(
            recs(&c.ask(0x201, Method::GET_TABLE, comp::SERVICE_ID, &q, false, t0)).len(),
            1
        );
        // A non-member may not register in it, nor name a GID whose port is not a member.
        assert_eq!(
            c.ask(0x401, Method::SET, comp::RID, &p, false, t0),
            Answer::Status(sa_status::REQ_INVALID)
        );
        let mut other = p;
        other.service_gid[8..].copy_from_slice(&0x401u64.to_be_bytes());
        assert_eq!(
            c.ask(0x201, Method::SET, comp::RID, &other, false, t0),
            Answer::Status(sa_status::REQ_INVALID)
        );
    }
}

//! Event subscriptions and forwarding (IBA vol1 §13.4.8.3, §15.2.5.12–13; OpenSM
//! `osm_sa_informinfo.c`, `osm_inform.c`): SubnAdmSet(InformInfo) subscribes or unsubscribes,
//! Get/GetTable(InformInfoRecord) lists subscriptions, and every notice the SA learns of goes
//! as SubnAdmReport(Notice) to each subscriber whose subscription matches it, until the
//! subscriber answers ReportResp.
//!
//! - **Set(InformInfo)**: the subscriber is the requester (its port GID from the request's
//!   SLID; ERR_REQ_INVALID if the SA does not know it); Subscribe > 1 is ERR_REQ_INVALID, so
//!   is a subscription to the security traps 256–259 from an untrusted requester (C15-0.2-1.16).
//!   A subscription is identified by the report address (the request's source: LID, QP, P_Key
//!   index, SL), its GID (or, with GID 0, its LID range), IsGeneric, Type, TrapNumber/DeviceID,
//!   QPN/RespTimeValue and ProducerType/VendorID. Subscribe = 1 stores the InformInfo with QPN
//!   set to the requester's QP (a repeated subscription replaces the stored one) after checking
//!   that the requester shares a partition with the port the GID names or every port of the LID
//!   range (o13-14.1.1; LIDRangeBegin 0xFFFF is not checked); Subscribe = 0 removes the
//!   matching one (ERR_REQ_INVALID if none). The answer echoes the request's InformInfo
//!   (o13-12.1.1).
//! - **Get/GetTable(InformInfoRecord)**: the subscriptions matching the component mask whose
//!   subscriber shares a partition with the requester; QPN 0 unless the request is trusted.
//! - **Reports**: a notice matches a subscription (OpenSM's rules) when the subscription's GID,
//!   if not 0, equals the notice's IssuerGID, else its LID range (unless LIDRangeBegin is
//!   0xFFFF) holds IssuerLID; IsGeneric equal; Type, TrapNumber/DeviceID and
//!   ProducerType/VendorID equal or "all". Access (o13-17.1.1): for traps 64–67 the source is
//!   the GID in DataDetails (66/67: the subscriber must hold the group's P_Key), else the
//!   IssuerGID's port, which must share a partition with the subscriber — a subscription with
//!   a real LID range that fails this is removed (o13-17.1.2).
//! - **Delivery**: each Report has its own TID (0x6000_0000 + n); it is resent after the
//!   subscriber's response time (4.096 µs × 2^RespTimeValue) plus the SA's own
//!   ([`super::SaConfig::resp_time`]) without a ReportResp, up to
//!   [`super::SaConfig::report_retries`] times; then the subscription is dropped (a subscriber
//!   that never answers would otherwise cost a Report per event forever — OpenSM only logs
//!   ERR 1A06 and keeps it).

use core::time::Duration;

use ibmad::attr::notice::{notice_type, producer, Notice};
use ibmad::gmp;
use ibmad::sa::{status as sa_status, SA_DATA_OFFSET};
use ibmad::sa_rec::inform::{InformInfo, InformInfoRecord, SaNotice, ALL_16, ALL_24};
use ibmad::sa_rec::{padded_len, record_matches, SaRecord};
use ibmad::zerocopy::{FromZeros, IntoBytes};
use ibmad::{Gid, Guid, Lid, MadMeta, Method, MgmtClass, PKey, RmppRepr, SaRepr, Time, MAD_LEN};

use super::{Answer, SaQuery, SaReply, SaSnapshot};
use crate::subnet::NodeId;

/// First TID of the SA's own requests (Reports).
pub const REPORT_TID_BASE: u32 = 0x6000_0000;
/// Reports waiting for a ReportResp at most; a notice beyond that is not reported.
pub const MAX_OUTSTANDING: usize = 4096;

/// Traps 129–131 (port error thresholds): handled by the SM, not forwarded (OpenSM
/// `osm_trap_rcv.c`).
pub(super) const NOT_FORWARDED: [u16; 3] = [129, 130, 131];
/// Security traps 256–259: subscriptions only from trusted requesters.
const SECURITY_TRAPS: core::ops::RangeInclusive<u16> = 256..=259;

/// One subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Subscription {
    /// SubscriberGID, Enum 0, the InformInfo as stored (QPN = the requester's QP).
    rec: InformInfoRecord,
    /// Where Reports go: the Set's source.
    addr: MadMeta,
}

/// A Report sent or to send.
#[derive(Clone, Debug)]
struct Outstanding {
    tid: u32,
    addr: MadMeta,
    mad: [u8; MAD_LEN],
    /// When to give up waiting for the ReportResp (`None`: to send now).
    deadline: Option<Time>,
    sends: u32,
    timeout: Duration,
    /// The subscription it was sent for (dropped when retries run out).
    sub: Subscription,
}

/// Counters of event forwarding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportStats {
    /// Notices the SA was given.
    pub notices: u64,
    /// Report MADs sent (resends included).
    pub sent: u64,
    /// Reports retired by a ReportResp.
    pub acked: u64,
    /// Reports given up after their retries (their subscription dropped).
    pub timed_out: u64,
    /// Reports not queued because [`MAX_OUTSTANDING`] were waiting.
    pub overflow: u64,
}

/// Subscriptions and the Reports in flight (part of [`super::SaState`]).
#[derive(Clone, Debug, Default)]
pub struct Subscriptions {
    list: Vec<Subscription>,
    reports: Vec<Outstanding>,
    next_tid: u32,
    stats: ReportStats,
}

fn same_addr(a: &MadMeta, b: &MadMeta) -> bool {
    (a.dlid, a.qp, a.pkey_index, a.sl, a.port) == (b.dlid, b.qp, b.pkey_index, b.sl, b.port)
}

/// OpenSM's `match_inf_rec`: the same subscription.
fn same_subscription(a: &Subscription, b: &Subscription) -> bool {
    let (x, y) = (&a.rec.inform_info, &b.rec.inform_info);
    let place = if y.gid != [0; 16] {
        x.gid == y.gid
    } else {
        (x.lid_range_begin, x.lid_range_end) == (y.lid_range_begin, y.lid_range_end)
    };
    same_addr(&a.addr, &b.addr)
        && place
        && x.trap_type == y.trap_type
        && x.is_generic == y.is_generic
        && x.trap_num == y.trap_num
        && x.qpn_resp_time == y.qpn_resp_time
        && x.producer_type == y.producer_type
}

fn guid_of_gid(g: &[u8; 16]) -> Guid {
    let mut b = [0u8; 8];
    b.copy_from_slice(&g[8..16]);
    Guid(u64::from_be_bytes(b))
}

const DEFAULT_PKEYS: [PKey; 1] = [PKey::DEFAULT_FULL];

fn pkeys(snap: &SaSnapshot, port: (NodeId, ibmad::PortNum)) -> &[PKey] {
    snap.pkeys
        .get(&port)
        .map_or(&DEFAULT_PKEYS[..], Vec::as_slice)
}

/// True if port `a` of snapshot `sa` and port `b` of snapshot `sb` share a partition (one of
/// them a full member).
fn share_across(
    sa: &SaSnapshot,
    a: (NodeId, ibmad::PortNum),
    sb: &SaSnapshot,
    b: (NodeId, ibmad::PortNum),
) -> bool {
    pkeys(sa, a).iter().any(|x| {
        x.base() != 0
            && pkeys(sb, b)
                .iter()
                .any(|y| x.base() == y.base() && (x.is_full_member() || y.is_full_member()))
    })
}

/// True if the two end ports share a partition, or are one port.
fn share_pkey(snap: &SaSnapshot, a: (NodeId, ibmad::PortNum), b: (NodeId, ibmad::PortNum)) -> bool {
    a == b || share_across(snap, a, snap, b)
}

fn has_pkey(snap: &SaSnapshot, port: (NodeId, ibmad::PortNum), pkey: PKey) -> bool {
    pkey.base() == 0 || pkeys(snap, port).iter().any(|k| k.base() == pkey.base())
}

/// o13-14.1.1: the requester and the ports the subscription names can reach each other.
fn access_ok(snap: &SaSnapshot, requester: (NodeId, ibmad::PortNum), ii: &InformInfo) -> bool {
    if ii.gid != [0; 16] {
        return snap
            .by_port_guid(guid_of_gid(&ii.gid))
            .is_some_and(|p| share_pkey(snap, p, requester));
    }
    let begin = ii.lid_range_begin.get();
    if begin == ALL_16 {
        return true;
    }
    let end = match ii.lid_range_end.get() {
        0 => begin,
        e => e.min(0xBFFF),
    };
    if begin >= 0xC000 {
        return false;
    }
    (begin..=end)
        .filter_map(|l| snap.by_lid(Lid(l)))
        .all(|p| share_pkey(snap, p, requester))
}

/// The InformInfo arm of [`super::Sa::dispatch`]: Set subscribes or unsubscribes.
pub fn inform_info(snap: &SaSnapshot, s: &mut Subscriptions, q: &SaQuery<'_>) -> Answer {
    if q.method != Method::SET {
        return Answer::unsupported();
    }
    let req = InformInfo::read_padded(q.record);
    let Some(requester) = snap.by_lid(q.meta.slid) else {
        return Answer::Status(sa_status::REQ_INVALID);
    };
    let Some(port) = snap.subnet.port(requester.0, requester.1) else {
        return Answer::Status(sa_status::REQ_INVALID);
    };
    if req.subscribe > 1
        || (!q.trusted && req.is_generic != 0 && SECURITY_TRAPS.contains(&req.trap_num.get()))
    {
        return Answer::Status(sa_status::REQ_INVALID);
    }
    let mut rec = InformInfoRecord::new_zeroed();
    rec.subscriber_gid = Gid::new(snap.facts.subnet_prefix, port.guid).0;
    rec.inform_info = req;
    if req.subscribe == 1 {
        rec.inform_info.set_qpn(q.meta.qp);
    }
    let sub = Subscription {
        rec,
        addr: q.meta.reply(),
    };
    let found = s.list.iter().position(|e| same_subscription(e, &sub));
    if req.subscribe == 1 {
        if !access_ok(snap, requester, &req) {
            return Answer::Status(sa_status::REQ_INVALID);
        }
        match found {
            Some(i) => s.list[i] = sub,
            // OpenSM inserts at the head: InformInfoRecords list the newest first.
            None => s.list.insert(0, sub),
        }
    } else {
        match found {
            Some(i) => {
                s.list.remove(i);
            }
            None => return Answer::Status(sa_status::REQ_INVALID),
        }
    }
    let mut data = req.as_bytes().to_vec();
    data.resize(padded_len(InformInfo::LEN), 0);
    Answer::Records {
        size: padded_len(InformInfo::LEN),
        data,
    }
}

/// The InformInfoRecord arm of [`super::Sa::dispatch`]: Get and GetTable.
pub fn inform_info_records(snap: &SaSnapshot, s: &Subscriptions, q: &SaQuery<'_>) -> Answer {
    if !q.is_read() {
        return Answer::unsupported();
    }
    let Some(requester) = snap.by_lid(q.meta.slid) else {
        return Answer::Status(sa_status::REQ_INVALID);
    };
    let size = padded_len(InformInfoRecord::LEN);
    let mut data = Vec::new();
    for e in &s.list {
        if !record_matches::<InformInfoRecord>(q.comp_mask, q.record, e.rec.as_bytes()) {
            continue;
        }
        let Some(sub) = snap.by_port_guid(guid_of_gid(&e.rec.subscriber_gid)) else {
            continue;
        };
        if !share_pkey(snap, requester, sub) {
            continue;
        }
        let mut r = e.rec;
        if !q.trusted {
            r.inform_info.set_qpn(0);
        }
        data.extend_from_slice(r.as_bytes());
        data.resize(data.len() + size - InformInfoRecord::LEN, 0);
        if q.method == Method::GET && data.len() >= 2 * size {
            break;
        }
    }
    Answer::Records { size, data }
}

/// OpenSM's `match_notice_to_inf_rec` without the access check.
fn notice_matches(ii: &InformInfo, n: &SaNotice) -> bool {
    let place = if ii.gid != [0; 16] {
        ii.gid == n.issuer_gid
    } else {
        let b = ii.lid_range_begin.get();
        let l = n.notice.issuer_lid.get();
        b == ALL_16 || (b <= l && l <= ii.lid_range_end.get())
    };
    let generic = n.notice.is_generic() != 0;
    let t = ii.trap_type.get();
    let num = ii.trap_num.get();
    let prod = ii.producer_type();
    place
        && (ii.is_generic != 0) == generic
        && (t == ALL_16 || t == u16::from(n.notice.notice_type()))
        && (num == ALL_16 || num == n.notice.trap_num.get())
        && (prod == ALL_24 || prod == n.notice.producer_type())
}

/// What a notice's access check needs: the snapshot the source port is looked up in and,
/// for traps 66/67, the group's P_Key.
#[derive(Clone, Copy, Debug)]
pub struct NoticeSource<'a> {
    /// Where the source port is looked up (for trap 65 the sweep before the port left).
    pub snap: &'a SaSnapshot,
    /// Traps 66/67: the group's P_Key.
    pub group_pkey: Option<PKey>,
}

impl Subscriptions {
    /// Number of subscriptions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// True if there is none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// Counters.
    #[must_use]
    pub fn stats(&self) -> ReportStats {
        self.stats
    }
    /// Reports waiting for a ReportResp (or to be sent).
    #[must_use]
    pub fn outstanding(&self) -> usize {
        self.reports.len()
    }

    /// Drops the subscriptions of the port with GUID `port` (its SubscriberGID's) and the
    /// Reports in flight for them (OpenSM `osm_infr_remove_subscriptions`); returns how many
    /// subscriptions went.
    pub fn remove_subscriber(&mut self, port: Guid) -> usize {
        let of = |s: &Subscription| Gid(s.rec.subscriber_gid).guid() == port;
        let before = self.list.len();
        self.list.retain(|s| !of(s));
        self.reports.retain(|r| !of(&r.sub));
        before - self.list.len()
    }

    /// The subscriptions, newest first, with where their Reports go.
    pub fn entries(&self) -> impl Iterator<Item = (&InformInfoRecord, &MadMeta)> {
        self.list.iter().map(|s| (&s.rec, &s.addr))
    }

    /// A subscription read back from an SA database file ([`super::db`]), Reports to
    /// `addr`; false if the same subscription is there already (OpenSM's loader skips it).
    pub fn restore(&mut self, rec: InformInfoRecord, addr: MadMeta) -> bool {
        let sub = Subscription { rec, addr };
        if self.list.iter().any(|e| same_subscription(e, &sub)) {
            return false;
        }
        self.list.push(sub);
        true
    }

    /// Drops every subscription and the Reports in flight.
    pub fn clear(&mut self) {
        self.list.clear();
        self.reports.clear();
    }

    /// Forgets the Reports in flight (the SA stopped serving: a standby SM reports nothing);
    /// the subscriptions stay.
    pub fn drop_reports(&mut self) {
        self.reports.clear();
    }

    /// Queues a Report of `n` to every subscriber it matches and may reach (see the module
    /// docs); subscribers are looked up in `snap` (the current snapshot).
    pub fn report(
        &mut self,
        snap: &SaSnapshot,
        src: NoticeSource<'_>,
        n: &SaNotice,
        cfg: &super::SaConfig,
    ) {
        self.stats.notices += 1;
        let trap = n.notice.trap_num.get();
        let generic = n.notice.is_generic() != 0;
        let sm_trap = generic && (64..=67).contains(&trap);
        let source = if sm_trap && !(66..=67).contains(&trap) {
            src.snap.by_port_guid(guid_of_gid(&n.details_gid()))
        } else {
            src.snap.by_port_guid(guid_of_gid(&n.issuer_gid))
        };
        let mut remove = Vec::new();
        let mut send = Vec::new();
        for (i, sub) in self.list.iter().enumerate() {
            let ii = &sub.rec.inform_info;
            if !notice_matches(ii, n) {
                continue;
            }
            let Some(dest) = snap.by_lid(sub.addr.dlid) else {
                continue;
            };
            let ok = if sm_trap && (66..=67).contains(&trap) {
                src.group_pkey.is_some_and(|k| has_pkey(snap, dest, k))
            } else {
                // The source from `src.snap`, the subscriber from `snap`.
                source.is_some_and(|s| share_across(src.snap, s, snap, dest))
            };
            if !ok {
                if !sm_trap && source.is_some() && ii.lid_range_begin.get() != ALL_16 {
                    remove.push(i);
                }
                continue;
            }
            send.push(sub.clone());
        }
        for i in remove.into_iter().rev() {
            self.list.remove(i);
        }
        for sub in send {
            if self.reports.len() >= MAX_OUTSTANDING {
                self.stats.overflow += 1;
                continue;
            }
            let tid = REPORT_TID_BASE | (self.next_tid & 0x0FFF_FFFF);
            self.next_tid = self.next_tid.wrapping_add(1);
            let rtv = u32::from(sub.rec.inform_info.resp_time_value().min(24));
            let timeout = Duration::from_nanos(4096 << rtv) + cfg.resp_time;
            self.reports.push(Outstanding {
                tid,
                addr: sub.addr,
                mad: report_mad(tid, n),
                deadline: None,
                sends: 0,
                timeout,
                sub,
            });
        }
    }

    /// A ReportResp with `tid` arrived: the Report is retired. False if none waited for it.
    pub fn report_resp(&mut self, tid: u64) -> bool {
        let Some(i) = self.reports.iter().position(|r| u64::from(r.tid) == tid) else {
            return false;
        };
        self.reports.remove(i);
        self.stats.acked += 1;
        true
    }

    /// The next Report to send now, if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<SaReply> {
        let r = self.reports.iter_mut().find(|r| r.deadline.is_none())?;
        r.deadline = Some(now + r.timeout);
        r.sends += 1;
        self.stats.sent += 1;
        Some(SaReply {
            meta: r.addr,
            mad: r.mad.to_vec(),
        })
    }

    /// When a Report in flight times out (or `now`-ish: a Report is waiting to be sent).
    #[must_use]
    pub fn next_deadline(&self) -> Option<Time> {
        self.reports
            .iter()
            .map(|r| r.deadline.unwrap_or(Time::ZERO))
            .min()
    }

    /// Reports whose time is up by `now` are resent, or after `retries` resends given up and
    /// their subscription dropped.
    pub fn handle_timeout(&mut self, now: Time, retries: u32) {
        let mut dropped = Vec::new();
        self.reports.retain_mut(|r| match r.deadline {
            Some(d) if d <= now => {
                if r.sends > retries {
                    dropped.push(r.sub.clone());
                    false
                } else {
                    r.deadline = None;
                    true
                }
            }
            _ => true,
        });
        for sub in dropped {
            self.stats.timed_out += 1;
            self.list.retain(|e| !same_subscription(e, &sub));
        }
    }
}

/// A SubnAdmReport(Notice) with TID `tid`.
fn report_mad(tid: u32, n: &SaNotice) -> [u8; MAD_LEN] {
    let repr = SaRepr {
        header: gmp::Repr::request(
            MgmtClass::SUBN_ADM,
            Method::REPORT,
            ibmad::SaAttrId::NOTICE.0,
            0,
            u64::from(tid),
        ),
        rmpp: RmppRepr::Inactive,
        sm_key: 0,
        attr_offset: 0,
        comp_mask: 0,
    };
    let mut mad = repr.to_mad();
    mad[SA_DATA_OFFSET..SA_DATA_OFFSET + 80].copy_from_slice(n.as_bytes());
    mad
}

/// A notice the SM itself issues (traps 64–67): generic, subnet-management type, producer
/// class manager, issued by the SM's port; `gid` goes into DataDetails.
#[must_use]
pub fn sm_notice(snap: &SaSnapshot, trap: u16, gid: [u8; 16]) -> SaNotice {
    let mut n = Notice::new_zeroed();
    n.set_is_generic(1);
    n.set_notice_type(notice_type::SUBNET_MGMT);
    n.set_producer_type(producer::CLASS_MANAGER);
    n.trap_num.set(trap);
    n.issuer_lid.set(snap.facts.sm_lid.0);
    let own = snap.sms.first().map_or(Guid(0), |e| e.guid);
    let mut s = SaNotice {
        notice: n,
        issuer_gid: Gid::new(snap.facts.subnet_prefix, own).0,
    };
    s.set_details_gid(gid);
    s
}

#[cfg(test)]
mod tests;

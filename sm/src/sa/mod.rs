//! The subnet administrator (IBA vol1 §15), sans-IO.
//!
//! A master SM hosts the SA: every SubnAdm (class 0x03) MAD to the master's port goes to
//! [`Sa::handle_mad`]; answers come out of [`Sa::poll_transmit`]. Get and GetTable are answered
//! from an immutable [`SaSnapshot`] that the SM builds after every heavy sweep that brought the
//! subnet up ([`crate::Sm::sa_snapshot`]) and the owner swaps in with [`Sa::set_snapshot`], so
//! a query never waits for a sweep or routing, and sees one sweep's subnet whole. Stateful data
//! (multicast groups, services, event subscriptions) lives in [`SaState`] and changes only by
//! Set/Delete and lease expiry.
//!
//! # Call protocol
//!
//! 1. [`Sa::set_snapshot`] whenever [`crate::Sm::sa_snapshot`] returns a new `Arc`,
//!    [`Sa::set_mfts`] whenever [`crate::Sm::mfts`] does, [`Sa::set_serving`] with the SM's
//!    role and "subnet up" before handing it MADs, and the groups of
//!    [`Sa::poll_mcast_groups`] to the SM as [`crate::Command::McastGroups`] —
//!    [`Sa::follow`] does all four, once per turn of the owner's loop and after every batch
//!    of SubnAdm MADs;
//! 2. every received SubnAdm MAD to [`Sa::handle_mad`] (`now` monotonic);
//! 3. drain [`Sa::poll_transmit`] and send each [`SaReply`] as it is (a long one, with
//!    RMPPFlags.Active, only to a transport that does RMPP: [`SaConfig::transport_rmpp`];
//!    without it the SA segments a long GetTableResp itself, [`rmpp`], and every reply is
//!    one 256-byte MAD).
//! 4. every trap the SM received and did not ignore to [`Sa::forward_trap`]
//!    ([`crate::Event::TrapReceived`]); call [`Sa::handle_timeout`] when [`Sa::poll_timeout`]
//!    is due (ServiceRecord leases, Report retries, RMPP ACK timeouts) and drain [`Sa::poll_transmit`] after it
//!    and after [`Sa::set_snapshot`] — Reports (event forwarding, [`inform`]) come out there
//!    too, addressed to the subscriber, among them traps 66/67 (multicast group created /
//!    deleted) of joins, leaves and the groups a snapshot pre-creates.
//!
//! # The front door, in order
//!
//! - **dropped** (counted in [`SaStats::dropped`]): MADs shorter than 256 bytes, BaseVersion ≠
//!   1, another class, and responses (never answer an answer);
//! - ClassVersion ≠ 2: status 0x0004 (bad version); a method SubnAdm does not define (with the
//!   response bit clear): status 0x0008, the method's response bit set;
//! - **SM_Key** (C15-0.1.5): a request whose SM_Key is neither 0 nor the SA's key
//!   ([`SaConfig::sa_key`]) is discarded without an answer (OpenSM does the same, and
//!   `osmtest -f a` expects the timeout); SM_Key = the non-zero SA key makes the requester
//!   *trusted* ([`SaQuery::trusted`]) for the records IBA reserves to trusted requesters;
//!   answers always carry SM_Key 0;
//! - **not serving**: while this SM is not MASTER the request is dropped (as OpenSM does: the
//!   client times out and looks for the new SM); while it is MASTER but no subnet is up yet
//!   (no snapshot) the answer is status 0x0001 (busy: retry later);
//! - dispatch by attribute, one arm per attribute ([`Sa::dispatch`]): each handler returns an
//!   [`Answer`] — the matching records, or a status; an attribute the SA does not serve gets
//!   0x000C (method/attribute not supported) instead of OpenSM's silent drop;
//! - assembly ([`assemble`]), one place for every attribute: Get → exactly one record, else
//!   ERR_NO_RECORDS (0x0300) / ERR_TOO_MANY_RECORDS (0x0400) (C15-0.1.30); GetTable → every
//!   record (0 records: an empty table, AttributeOffset 0); Set/Delete → the one record the
//!   handler returns. Get/Set/Delete answers are one plain MAD; a GetTableResp is RMPP
//!   (AttributeOffset = record size in 8-byte words).
//!
//! # For the record owners
//!
//! An arm calls `handler(&snapshot, [&mut part of SaState,] &query) -> Answer`: the records of
//! [`records`], PathRecord/MultiPathRecord ([`path`]), MCMemberRecord ([`mcmember`]),
//! ServiceRecord ([`service`]) and InformInfo/InformInfoRecord ([`inform`]). The
//! snapshot's contents (and how to add a part) are in [`snapshot`]'s module docs. Records are
//! built into [`Collector`], which applies the component mask ([`ibmad::sa_rec::matches`]) and
//! stops early for a Get.

pub mod db;
pub mod inform;
pub mod mcmember;
pub mod path;
pub mod records;
pub mod rmpp;
pub mod service;
pub mod snapshot;

use std::collections::VecDeque;
use std::sync::Arc;

use ibmad::gmp::{self, MadHeader};
use ibmad::sa::{status as sa_status, SA_DATA_OFFSET};
use ibmad::sa_rec::{padded_len, SaRecord};
use ibmad::zerocopy::FromBytes;
use ibmad::{Lid, MadMeta, Method, MgmtClass, RmppRepr, SaAttrId, SaRepr, Status, Time, MAD_LEN};

pub use snapshot::SaSnapshot;

/// How the SA is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaConfig {
    /// `sa_key`: the SM_Key that makes a requester trusted (OpenSM's default 1). 0: no
    /// requester is trusted.
    pub sa_key: u64,
    /// The transport does RMPP itself (kernel user_mad, `libibsm_umad.so` for an agent
    /// registered with an RMPP version): a GetTableResp is handed out as one long MAD with
    /// RMPPFlags.Active. False: see [`SaConfig::segment`].
    pub transport_rmpp: bool,
    /// The longest MAD the transport takes (a longer table is cut to what fits).
    pub max_mad_len: usize,
    /// Where the transport does no RMPP: true (the simulator, VFIO, whose peers reassemble) —
    /// the SA segments a long GetTableResp itself ([`rmpp`]); false — it cuts the table to
    /// one MAD (ibsim's `libumad2sim.so`, whose clients do no RMPP either).
    pub segment: bool,
    /// The SA's response time, for ClassPortInfo.RespTimeValue (OpenSM: the transaction
    /// timeout); a Report waits this long plus the subscriber's RespTimeValue for its
    /// ReportResp.
    pub resp_time: core::time::Duration,
    /// Resends of a Report without a ReportResp before the subscription is dropped (OpenSM's
    /// `transaction_retries`, 3).
    pub report_retries: u32,
    /// Requests waiting to be answered at most: one more is answered BUSY (status 0x0001) at
    /// once, where OpenSM drops what waited 10 s without a word.
    pub max_pending: usize,
    /// A new snapshot replaces the one queries are answered from only once its PathRecord
    /// index is built ([`SaSnapshot::is_warm`]; the owner builds it off its loop with
    /// [`SaSnapshot::warm`]): until then the previous sweep's snapshot answers, so a re-sweep
    /// never makes PathRecord queries wait for an index. The first snapshot is taken at once.
    /// False (the default): every new snapshot at once (an owner that warms nothing).
    pub swap_when_warm: bool,
    /// ClassPortInfo announces IsUDMulticastSupported (OpenSM: unless `disable_multicast`).
    /// Default true.
    pub multicast: bool,
    /// OpenSM's `consolidate_ipv6_snm_req`: IPv6 solicited-node multicast groups of one scope
    /// and P_Key share an MLID ([`mcmember::McastDb::set_consolidate_ipv6_snm`]). Default
    /// false.
    pub consolidate_ipv6_snm: bool,
    /// OpenSM's `drop_event_subscriptions`: an end port that leaves the subnet loses its
    /// event subscriptions (InformInfo), and every subscription and ServiceRecord is dropped
    /// when the SM comes out of standby (OpenSM `osm_drop_mgr.c`, `state_mgr_sa_clean`).
    /// Default false: both are kept.
    pub drop_event_subscriptions: bool,
    /// OpenSM's `mcgroup_join_validation` and `ipoib_mcgroup_creation_validation`
    /// ([`mcmember::McastDb::set_validations`]). Default true, both.
    pub mcgroup_join_validation: bool,
    /// See [`SaConfig::mcgroup_join_validation`].
    pub ipoib_mcgroup_creation_validation: bool,
}

impl Default for SaConfig {
    fn default() -> Self {
        SaConfig {
            sa_key: 1,
            transport_rmpp: false,
            max_mad_len: MAD_LEN,
            segment: true,
            resp_time: core::time::Duration::from_millis(200),
            report_retries: 3,
            max_pending: 1024,
            swap_when_warm: false,
            multicast: true,
            consolidate_ipv6_snm: false,
            drop_event_subscriptions: false,
            mcgroup_join_validation: true,
            ipoib_mcgroup_creation_validation: true,
        }
    }
}

/// Counters of an [`Sa`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaStats {
    /// MADs given to [`Sa::handle_mad`].
    pub received: u64,
    /// Requests answered (any status).
    pub answered: u64,
    /// MADs dropped without an answer (malformed, responses, wrong SM_Key, not master).
    pub dropped: u64,
    /// Of those, requests dropped for a wrong non-zero SM_Key (C15-0.1.5).
    pub bad_key: u64,
    /// Requests answered busy (no subnet up yet).
    pub busy: u64,
    /// Requests answered busy because [`SaConfig::max_pending`] requests were waiting.
    pub queue_full: u64,
}

/// One MAD to send: `mad` with `meta`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaReply {
    /// Addressing: the request's [`MadMeta::reply`].
    pub meta: MadMeta,
    /// The response MAD: 256 bytes, or longer with RMPPFlags.Active (an RMPP transport only).
    pub mad: Vec<u8>,
}

/// A parsed request, as the handlers get it.
#[derive(Clone, Copy, Debug)]
pub struct SaQuery<'a> {
    /// The requester (SLID, QP, P_Key index …).
    pub meta: &'a MadMeta,
    /// GET, GET_TABLE, SET, DELETE, GET_MULTI, GET_TRACE_TABLE.
    pub method: Method,
    /// The attribute.
    pub attr: SaAttrId,
    /// AttributeModifier.
    pub attr_mod: u32,
    /// ComponentMask.
    pub comp_mask: u64,
    /// SM_Key equals the configured non-zero SA key.
    pub trusted: bool,
    /// The request's record: the bytes from offset 56 (at least 200; components past the end
    /// read as zero).
    pub record: &'a [u8],
    /// The time of the request.
    pub now: Time,
}

impl SaQuery<'_> {
    /// True for Get and GetTable.
    #[must_use]
    pub fn is_read(&self) -> bool {
        matches!(self.method, Method::GET | Method::GET_TABLE)
    }
}

/// What a handler answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Records of `size` bytes each (the record size including its padding to 8 bytes),
    /// concatenated in `data`.
    Records {
        /// Bytes per record (a multiple of 8).
        size: usize,
        /// The records.
        data: Vec<u8>,
    },
    /// No records: this status.
    Status(Status),
}

impl Answer {
    /// Method/attribute combination not supported (0x000C).
    #[must_use]
    pub fn unsupported() -> Answer {
        Answer::Status(Status::METHOD_ATTR_NOT_SUPPORTED)
    }
    /// Number of records.
    #[must_use]
    pub fn count(&self) -> usize {
        match self {
            Answer::Records { size, data } if *size > 0 => data.len() / size,
            _ => 0,
        }
    }
}

/// Gathers the records of `R` that match a query (component mask applied), stopping after 2
/// for a Get (enough to say "too many").
#[derive(Debug)]
pub struct Collector<'q> {
    query: &'q [u8],
    mask: u64,
    size: usize,
    limit: usize,
    data: Vec<u8>,
    count: usize,
    components: &'static [ibmad::sa_rec::Component],
}

impl<'q> Collector<'q> {
    /// A collector of records `R` for query `q`.
    #[must_use]
    pub fn new<R: SaRecord>(q: &SaQuery<'q>) -> Collector<'q> {
        Collector::with_query::<R>(q, q.record, q.comp_mask)
    }
    /// A collector of records `R` for query `q`, matching against `query` (the request's
    /// record with its keys rewritten, e.g. a LID of an LMC range to the base LID) on the
    /// components of `mask`.
    #[must_use]
    pub fn with_query<R: SaRecord>(q: &SaQuery<'_>, query: &'q [u8], mask: u64) -> Collector<'q> {
        Collector {
            query,
            mask,
            size: padded_len(R::LEN),
            limit: if q.method == Method::GET {
                2
            } else {
                usize::MAX
            },
            data: Vec::new(),
            count: 0,
            components: R::COMPONENTS,
        }
    }
    /// Offers one record (its unpadded bytes); keeps it if it matches.
    pub fn offer(&mut self, rec: &[u8]) {
        if self.is_full() || !ibmad::sa_rec::matches(self.components, self.mask, self.query, rec) {
            return;
        }
        let start = self.data.len();
        self.data
            .extend_from_slice(rec.get(..self.size).unwrap_or(rec));
        self.data.resize(start + self.size, 0);
        self.count += 1;
    }
    /// True once no further record changes the answer.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.count >= self.limit
    }
    /// The answer.
    #[must_use]
    pub fn finish(self) -> Answer {
        Answer::Records {
            size: self.size,
            data: self.data,
        }
    }
}

/// Whether the SA may answer: the SM's role and subnet state, given by the owner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Serving {
    /// This SM is MASTER.
    pub master: bool,
    /// The subnet is up.
    pub up: bool,
}

/// Stateful SA data, changed only by Set/Delete and lease expiry: multicast groups (engineer
/// C), service records and event subscriptions (engineer D) get their parts here.
#[derive(Clone, Debug, Default)]
pub struct SaState {
    /// Registered services (ServiceRecord, [`service`]).
    pub services: service::Services,
    /// Event subscriptions and the Reports in flight (InformInfo, [`inform`]).
    pub informs: inform::Subscriptions,
    /// Multicast groups (MCMemberRecord, [`mcmember`]); kept across snapshots, so re-sweeps
    /// keep every group and its MLID.
    pub mcast: mcmember::McastDb,
    /// GetTableResps the SA segments itself ([`rmpp`]; a transport without RMPP).
    pub transfers: rmpp::Transfers,
}

/// The SA of a master SM; see the module docs.
#[derive(Debug, Default)]
pub struct Sa {
    cfg: SaConfig,
    stats: SaStats,
    snapshot: Option<Arc<SaSnapshot>>,
    mfts: Arc<snapshot::Mfts>,
    serving: Serving,
    state: SaState,
    out: VecDeque<SaReply>,
    /// Requests received and not yet answered, with their arrival time.
    pending: VecDeque<(Time, MadMeta, Vec<u8>)>,
    /// The SM stopped being master since the SA last served: its stateful data is stale
    /// when it is master again ([`Sa::set_serving`]).
    stood_by: bool,
}

impl Sa {
    /// A new SA with the default configuration (a test's; the daemon uses [`Sa::with_config`]).
    #[must_use]
    pub fn new() -> Sa {
        Sa::default()
    }

    /// A new SA.
    #[must_use]
    pub fn with_config(cfg: SaConfig) -> Sa {
        let mut sa = Sa {
            cfg,
            ..Sa::default()
        };
        sa.state
            .mcast
            .set_consolidate_ipv6_snm(sa.cfg.consolidate_ipv6_snm);
        sa.state.mcast.set_validations(
            sa.cfg.mcgroup_join_validation,
            sa.cfg.ipoib_mcgroup_creation_validation,
        );
        sa
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> SaStats {
        self.stats
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SaConfig {
        &self.cfg
    }

    /// The snapshot queries are answered from.
    #[must_use]
    pub fn snapshot(&self) -> Option<&Arc<SaSnapshot>> {
        self.snapshot.as_ref()
    }

    /// The stateful part.
    #[must_use]
    pub fn state(&self) -> &SaState {
        &self.state
    }

    /// Replaces the snapshot (every later query sees the new one). Returns true if it was
    /// another `Arc` than the current one.
    pub fn set_snapshot(&mut self, snap: Arc<SaSnapshot>) -> bool {
        if self
            .snapshot
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &snap))
        {
            return false;
        }
        let old = self.snapshot.replace(snap.clone());
        if let Some(old) = old.filter(|_| !self.state.informs.is_empty()) {
            self.report_port_changes(&old, &snap);
            if self.cfg.drop_event_subscriptions {
                // After the traps 65 about them, as OpenSM's drop manager.
                let is = snap.port_guids();
                for g in old.port_guids() {
                    if is.binary_search(&g).is_err() {
                        self.state.informs.remove_subscriber(g);
                    }
                }
            }
        }
        self.state.mcast.on_snapshot(&snap);
        self.report_mc_notices();
        true
    }

    /// [`Sa::set_snapshot`] when `snap` may answer now: always, unless
    /// [`SaConfig::swap_when_warm`] and a snapshot answers already while `snap`'s PathRecord
    /// index is not built yet. True if the SA took it (another `Arc` than the current one).
    pub fn offer_snapshot(&mut self, snap: &Arc<SaSnapshot>) -> bool {
        let ready = !self.cfg.swap_when_warm || self.snapshot.is_none() || snap.is_warm();
        ready && self.set_snapshot(snap.clone())
    }

    /// Traps 64 (GID in service) for end ports `new` has and `old` had not, 65 (GID out of
    /// service) for those that left (OpenSM sends them from its state and drop managers at
    /// a sweep; here the sweep's snapshot is what tells).
    fn report_port_changes(&mut self, old: &SaSnapshot, new: &SaSnapshot) {
        let (was, is) = (old.port_guids(), new.port_guids());
        let prefix = new.facts.subnet_prefix;
        for g in is.iter().filter(|g| was.binary_search(g).is_err()) {
            let n = inform::sm_notice(new, 64, ibmad::Gid::new(prefix, *g).0);
            let src = inform::NoticeSource {
                snap: new,
                group_pkey: None,
            };
            self.state.informs.report(new, src, &n, &self.cfg);
        }
        for g in was.iter().filter(|g| is.binary_search(g).is_err()) {
            let n = inform::sm_notice(new, 65, ibmad::Gid::new(prefix, *g).0);
            let src = inform::NoticeSource {
                snap: old,
                group_pkey: None,
            };
            self.state.informs.report(new, src, &n, &self.cfg);
        }
    }

    /// A trap the SM received from `source` (the trap's SLID) goes to the subscribers it
    /// matches, with IssuerGID the source port's GID, as OpenSM's trap receiver forwards
    /// (except traps 129–131, which the SM handles itself, and traps the SM ignored as a
    /// flood: the caller does not pass those). Nothing happens while the SA is not serving.
    pub fn forward_trap(&mut self, source: Lid, notice: &ibmad::attr::notice::Notice) {
        let Some(snap) = self.serving_snapshot() else {
            return;
        };
        if notice.is_generic() != 0 && inform::NOT_FORWARDED.contains(&notice.trap_num.get()) {
            return;
        }
        let Some(guid) = snap
            .by_lid(source)
            .and_then(|(n, p)| snap.subnet.port(n, p))
            .map(|p| p.guid)
        else {
            return;
        };
        let n = ibmad::sa_rec::inform::SaNotice {
            notice: *notice,
            issuer_gid: ibmad::Gid::new(snap.facts.subnet_prefix, guid).0,
        };
        let src = inform::NoticeSource {
            snap: &snap,
            group_pkey: None,
        };
        self.state.informs.report(&snap, src, &n, &self.cfg);
    }

    /// Trap 66 (multicast group created) or 67 (deleted) from the multicast database
    /// ([`mcmember::McastDb::poll_notice`]) goes to the subscribers that hold the group's
    /// P_Key.
    pub fn report_mc_notice(&mut self, mc: &mcmember::McNotice) {
        let Some(snap) = self.serving_snapshot() else {
            return;
        };
        let n = inform::sm_notice(&snap, mc.trap, mc.mgid.0);
        let src = inform::NoticeSource {
            snap: &snap,
            group_pkey: Some(mc.p_key),
        };
        self.state.informs.report(&snap, src, &n, &self.cfg);
    }

    fn serving_snapshot(&self) -> Option<Arc<SaSnapshot>> {
        self.snapshot
            .clone()
            .filter(|_| self.serving.master && self.serving.up)
    }

    /// When [`Sa::handle_timeout`] is due: the earliest ServiceRecord lease expiry, Report
    /// timeout or RMPP ACK timeout (a Report or segment still to send makes it due at once).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        [
            self.state.services.next_expiry(),
            self.state.informs.next_deadline(),
            self.state.transfers.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Expires leases and handles Report and RMPP ACK timeouts due by `now`; resends come out
    /// of [`Sa::poll_transmit`].
    pub fn handle_timeout(&mut self, now: Time) {
        self.state.services.expire(now);
        self.state
            .informs
            .handle_timeout(now, self.cfg.report_retries);
        self.state.transfers.handle_timeout(now);
    }

    /// Replaces the multicast forwarding tables MFTRecords answer from (those of the SM's
    /// last multicast pass, [`crate::Sm::mfts`]).
    pub fn set_mfts(&mut self, mfts: Arc<snapshot::Mfts>) {
        self.mfts = mfts;
    }

    /// Keeps the SA in step with the SM it serves (see the call protocol): the SM's new
    /// snapshot and MFTs, whether it is master with the subnet up, and — when the groups
    /// changed (a join, a leave, a partition's group created) — the groups to the SM, which
    /// re-routes multicast. Returns true if the SA took a new snapshot.
    pub fn follow(&mut self, now: Time, sm: &mut crate::Sm) -> bool {
        // Serving first: the traps 66 of groups a new snapshot creates go to subscribers.
        self.set_serving(Serving {
            master: sm.role() == crate::Role::Master,
            up: sm.is_up(),
        });
        let new = sm
            .sa_snapshot()
            .is_some_and(|snap| self.offer_snapshot(snap));
        if let Some(m) = sm.mfts().filter(|m| !Arc::ptr_eq(m, &self.mfts)) {
            self.mfts = m.clone();
        }
        if let Some(groups) = self.poll_mcast_groups() {
            sm.handle_command(now, crate::Command::McastGroups(groups));
        }
        new
    }

    /// The multicast groups, once after every change of them or of their members: the owner
    /// hands them to the SM ([`crate::Command::McastGroups`]; [`Sa::follow`] does).
    #[must_use]
    pub fn poll_mcast_groups(&mut self) -> Option<Vec<crate::mcast::McastGroup>> {
        self.state
            .mcast
            .take_changed()
            .then(|| self.state.mcast.routing_groups())
    }

    /// Traps 66 (multicast group created) and 67 (deleted) of the multicast database go to
    /// the subscribers ([`Sa::report_mc_notice`]; dropped while not serving: nobody to tell).
    fn report_mc_notices(&mut self) {
        while let Some(n) = self.state.mcast.poll_notice() {
            self.report_mc_notice(&n);
        }
    }

    /// Tells the SA whether the SM is master and the subnet up.
    ///
    /// Leaving MASTER (a handover, a higher SM found): the SA stops at once — requests not
    /// yet answered are dropped (C15-0.1.3: an SM that is not master answers nothing; the
    /// clients time out and find the new master), and so are the RMPP transfers and Reports
    /// in flight; the stateful data stays (OpenSM keeps it while standby). Becoming MASTER
    /// again: the multicast memberships are dropped, as OpenSM's `state_mgr_sa_clean` does
    /// when its SM comes out of standby — the groups the SA created stay, empty — because the
    /// ports joined another master meanwhile; the new master's sweep sets
    /// PortInfo.ClientReregister on them (their MasterSMLID changes), and they join again.
    /// ServiceRecords and event subscriptions stay, unless
    /// [`SaConfig::drop_event_subscriptions`] (OpenSM's, default FALSE) drops them too.
    pub fn set_serving(&mut self, serving: Serving) {
        let was = self.serving.master;
        self.serving = serving;
        if was && !serving.master {
            self.stats.dropped += self.pending.len() as u64;
            self.pending.clear();
            self.out.clear();
            self.state.transfers.clear();
            self.state.informs.drop_reports();
            self.stood_by = true;
        } else if !was && serving.master && self.stood_by {
            self.stood_by = false;
            if self.cfg.drop_event_subscriptions {
                self.state.informs.clear();
                self.state.services.clear();
            }
            self.state.mcast.drop_members();
            self.report_mc_notices();
        }
    }

    /// The next MAD to send, if any: an answer (requests are answered here, in arrival
    /// order, one per call), then Reports (whose ReportResp timers start now).
    #[must_use]
    pub fn poll_transmit(&mut self, now: Time) -> Option<SaReply> {
        loop {
            if let Some(r) = self.out.pop_front() {
                return Some(r);
            }
            let Some((t, meta, mad)) = self.pending.pop_front() else {
                break;
            };
            self.process(t, &meta, &mad);
        }
        self.state
            .transfers
            .poll_transmit(now, self.cfg.resp_time)
            .or_else(|| self.state.informs.poll_transmit(now))
    }

    /// Requests waiting to be answered.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Takes one MAD received from `meta` at `now`; its answer, if any, comes out of
    /// [`Sa::poll_transmit`] (hand over everything received first, then drain: a request
    /// beyond [`SaConfig::max_pending`] waiting ones is answered BUSY at once). Never panics,
    /// whatever the bytes.
    pub fn handle_mad(&mut self, now: Time, meta: &MadMeta, mad: &[u8]) {
        self.stats.received += 1;
        // A ReportResp retires the Report with its TID (OpenSM: "just retire the
        // transaction").
        if let Some((h, _)) = mad
            .get(..MAD_LEN)
            .and_then(|b| MadHeader::ref_from_prefix(b).ok())
        {
            if h.mgmt_class == MgmtClass::SUBN_ADM.0 && Method(h.method) == Method::REPORT_RESP {
                if !self.state.informs.report_resp(h.tid.get()) {
                    self.stats.dropped += 1;
                }
                return;
            }
            // An RMPP ACK/STOP/ABORT about a GetTableResp the SA segments (an ACK carries the
            // request's method: the R bit flipped, IBA §13.6.2.3).
            if h.mgmt_class == MgmtClass::SUBN_ADM.0
                && rmpp_header(mad).is_some_and(|r| {
                    r.is_active()
                        && matches!(
                            r.kind(),
                            ibmad::rmpp::RmppType::ACK
                                | ibmad::rmpp::RmppType::STOP
                                | ibmad::rmpp::RmppType::ABORT
                        )
                })
            {
                if !self.state.transfers.handle_control(meta, mad) {
                    self.stats.dropped += 1;
                }
                return;
            }
        }
        if self.pending.len() >= self.cfg.max_pending {
            match self.busy_answer(mad) {
                Some(m) => {
                    self.stats.queue_full += 1;
                    self.stats.answered += 1;
                    self.out.push_back(SaReply {
                        meta: meta.reply(),
                        mad: m,
                    });
                }
                None => self.stats.dropped += 1,
            }
            return;
        }
        self.pending.push_back((now, *meta, mad.to_vec()));
    }

    /// BUSY for a well-formed request (not a response, not one with a wrong SM_Key, which
    /// is discarded unanswered whatever the load).
    fn busy_answer(&mut self, mad: &[u8]) -> Option<Vec<u8>> {
        let bytes = mad.get(..MAD_LEN)?;
        let (h, _) = MadHeader::ref_from_prefix(bytes).ok()?;
        if h.base_version != 1
            || h.mgmt_class != MgmtClass::SUBN_ADM.0
            || Method(h.method).is_response()
        {
            return None;
        }
        let key = ibmad::SaPacket::new_checked(mad).ok()?.sm_key();
        if key != 0 && key != self.cfg.sa_key {
            self.stats.bad_key += 1;
            return None;
        }
        error_answer(bytes, Status::BUSY)
    }

    /// Answers one request (or drops it).
    fn process(&mut self, now: Time, meta: &MadMeta, mad: &[u8]) {
        match self.answer(now, meta, mad) {
            // Longer than a MAD on a transport that does not segment: the SA does RMPP.
            Some(long) if long.len() > MAD_LEN && !self.cfg.transport_rmpp => {
                self.stats.answered += 1;
                let started = self.state.transfers.has_room()
                    && self
                        .state
                        .transfers
                        .start(meta.reply(), &long, self.cfg.report_retries);
                if !started {
                    self.stats.queue_full += 1;
                    if let Some(busy) = mad
                        .get(..MAD_LEN)
                        .and_then(|b| error_answer(b, Status::BUSY))
                    {
                        self.out.push_back(SaReply {
                            meta: meta.reply(),
                            mad: busy,
                        });
                    }
                }
            }
            Some(mad) => {
                self.stats.answered += 1;
                self.out.push_back(SaReply {
                    meta: meta.reply(),
                    mad,
                });
            }
            None => self.stats.dropped += 1,
        }
    }

    fn answer(&mut self, now: Time, meta: &MadMeta, mad: &[u8]) -> Option<Vec<u8>> {
        let bytes = mad.get(..MAD_LEN)?;
        let (h, _) = MadHeader::ref_from_prefix(bytes).ok()?;
        let method = Method(h.method);
        if h.base_version != 1 || h.mgmt_class != MgmtClass::SUBN_ADM.0 || method.is_response() {
            return None;
        }
        let expected = gmp::class_version(MgmtClass::SUBN_ADM).unwrap_or(2);
        if h.class_version != expected {
            return error_answer(bytes, Status::BAD_VERSION);
        }
        if !gmp::method_defined(MgmtClass::SUBN_ADM, method) {
            return error_answer(bytes, Status::METHOD_NOT_SUPPORTED);
        }
        let pkt = ibmad::SaPacket::new_checked(mad).ok()?;
        let sm_key = pkt.sm_key();
        // C15-0.1.5: a non-zero SM_Key other than the SA's: discard, no answer.
        if sm_key != 0 && sm_key != self.cfg.sa_key {
            self.stats.bad_key += 1;
            return None;
        }
        if !self.serving.master {
            return None;
        }
        let Some(snap) = self.snapshot.clone().filter(|_| self.serving.up) else {
            self.stats.busy += 1;
            return error_answer(bytes, Status::BUSY);
        };
        // The RMPP header of a single-MAD request is not looked at; a reassembled one (an
        // RMPP transport) carries its whole record from byte 56 on.
        let q = SaQuery {
            meta,
            method,
            attr: pkt.attr_id(),
            attr_mod: pkt.gmp().attr_mod(),
            comp_mask: pkt.comp_mask(),
            trusted: sm_key != 0 && sm_key == self.cfg.sa_key,
            record: pkt.data(),
            now,
        };
        let answer = self.dispatch(&snap, &q);
        assemble(&self.cfg, bytes, &q, answer)
    }

    /// One arm per attribute.
    fn dispatch(&mut self, snap: &SaSnapshot, q: &SaQuery<'_>) -> Answer {
        match q.attr {
            SaAttrId::CLASS_PORT_INFO => {
                let mcast = if self.cfg.multicast {
                    records::cap::UD_MCAST
                } else {
                    0
                };
                records::class_port_info(q, self.cfg.resp_time, mcast, 0)
            }
            SaAttrId::NODE_RECORD => records::node_records(snap, q),
            SaAttrId::PORT_INFO_RECORD => records::port_info_records(snap, q),
            SaAttrId::SL_TO_VL_RECORD => records::sl2vl_records(snap, q),
            SaAttrId::SWITCH_INFO_RECORD => records::switch_info_records(snap, q),
            SaAttrId::LFT_RECORD => records::lft_records(snap, q),
            SaAttrId::MFT_RECORD => records::mft_records(snap, &self.mfts, q),
            SaAttrId::SM_INFO_RECORD => records::sm_info_records(snap, q),
            SaAttrId::LINK_RECORD => records::link_records(snap, q),
            SaAttrId::GUID_INFO_RECORD => records::guid_info_records(snap, q),
            SaAttrId::P_KEY_TABLE_RECORD => records::pkey_table_records(snap, q),
            SaAttrId::VL_ARB_RECORD => records::vlarb_records(snap, q),
            SaAttrId::PATH_RECORD => path::handle(snap, q),
            SaAttrId::MULTI_PATH_RECORD => path::handle_multi(snap, q),
            SaAttrId::MC_MEMBER_RECORD => {
                let a = mcmember::handle(snap, &mut self.state.mcast, q);
                self.report_mc_notices();
                a
            }
            SaAttrId::SERVICE_RECORD => service::service_records(snap, &mut self.state.services, q),
            SaAttrId::INFORM_INFO => inform::inform_info(snap, &mut self.state.informs, q),
            SaAttrId::INFORM_INFO_RECORD => {
                inform::inform_info_records(snap, &self.state.informs, q)
            }
            _ => Answer::unsupported(),
        }
    }
}

/// The longest GetTableResp the SA segments itself (a larger table is cut to what fits).
pub const MAX_SA_RMPP_LEN: usize = 16 << 20;

/// The RMPP header of a MAD (bytes 24..36).
fn rmpp_header(mad: &[u8]) -> Option<&ibmad::rmpp::RmppHeader> {
    ibmad::rmpp::transfer::header(mad)
}

/// The error answer to the request in `bytes` (its headers, RMPP not looked at).
fn error_answer(bytes: &[u8], status: Status) -> Option<Vec<u8>> {
    let mut req = [0u8; MAD_LEN];
    req.copy_from_slice(bytes.get(..MAD_LEN)?);
    let version = req[2];
    let method = req[3];
    req[24..36].fill(0);
    req[2] = gmp::class_version(MgmtClass::SUBN_ADM).unwrap_or(2);
    if status == Status::METHOD_NOT_SUPPORTED {
        req[3] = Method::GET.0; // a defined method, for the parser
    }
    let repr = SaRepr::parse_bytes(&req).ok()?;
    let mut resp = repr.error_response(status)?;
    resp.header.class_version = version;
    if status == Status::METHOD_NOT_SUPPORTED {
        resp.header.method = Method(method | Method::RESP_BIT);
    }
    Some(resp.to_mad().to_vec())
}

/// Turns a handler's [`Answer`] into the response MAD (see the module docs).
fn assemble(cfg: &SaConfig, bytes: &[u8], q: &SaQuery<'_>, answer: Answer) -> Option<Vec<u8>> {
    let (size, data) = match answer {
        Answer::Status(s) => return error_answer(bytes, s),
        Answer::Records { size, data } => (size, data),
    };
    let n = data.len().checked_div(size).unwrap_or(0);
    let table = matches!(q.method, Method::GET_TABLE | Method::GET_MULTI);
    if !table {
        // Get (and the Set/Delete echo): exactly one record (C15-0.1.30).
        match n {
            0 => return error_answer(bytes, sa_status::NO_RECORDS),
            1 => {}
            _ => return error_answer(bytes, sa_status::TOO_MANY_RECORDS),
        }
    }
    let req = SaRepr::parse_bytes(&{
        let mut b = [0u8; MAD_LEN];
        b.copy_from_slice(bytes.get(..MAD_LEN)?);
        b[24..36].fill(0);
        b
    })
    .ok()?;
    let mut resp = req.error_response(Status::OK)?;
    resp.attr_offset = if n == 0 {
        0
    } else {
        u16::try_from(size / 8).unwrap_or(0)
    };
    // What fits: everything on an RMPP transport (up to its limit) or, where the SA
    // segments itself, up to MAX_SA_RMPP_LEN; a Get's record in one MAD.
    let room = match (table, cfg.transport_rmpp, cfg.segment) {
        (true, true, _) => cfg.max_mad_len.saturating_sub(SA_DATA_OFFSET),
        (true, false, true) => MAX_SA_RMPP_LEN - SA_DATA_OFFSET,
        _ => MAD_LEN - SA_DATA_OFFSET,
    };
    let fit = room.checked_div(size).unwrap_or(0);
    if table && n > fit && (cfg.transport_rmpp || cfg.segment) {
        // A table longer than a long message may be is not cut short without a word: the
        // requester gets ERR_NO_RESOURCES (IBA vol1 §15.2.1.1, SA MAD status 1) and can narrow
        // its query. (Without RMPP one MAD is
        // all a reply can be, and the first MAD's worth is what the IBA's single-MAD table
        // reply holds, as under ibsim's shim.)
        return error_answer(bytes, sa_status::NO_RESOURCES);
    }
    let keep = n.min(fit);
    let payload = data.get(..keep * size).unwrap_or_default();
    if table {
        // PayloadLength: the SA header and the records (the transport recomputes it per
        // segment when it segments).
        let paylen = u32::try_from(20 + payload.len()).unwrap_or(u32::MAX);
        resp.rmpp = RmppRepr::single(paylen);
    }
    // A long (RMPP) message is exactly headers + records: the receiver counts records by its
    // length. A single MAD is 256 bytes.
    let len = if table && (cfg.transport_rmpp || SA_DATA_OFFSET + payload.len() > MAD_LEN) {
        SA_DATA_OFFSET + payload.len()
    } else {
        (SA_DATA_OFFSET + payload.len()).max(MAD_LEN)
    };
    let mut out = vec![0u8; len];
    resp.emit(&mut out).ok()?;
    if let Some(dst) = out.get_mut(SA_DATA_OFFSET..SA_DATA_OFFSET + payload.len()) {
        dst.copy_from_slice(payload);
    }
    Some(out)
}

#[cfg(test)]
mod tests;

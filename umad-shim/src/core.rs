//! The sans-IO model of Linux's `ib_umad` + `ib_mad` for one simulated port: what the kernel
//! does between a process's `write`/`read`/`ioctl` on `/dev/infiniband/umadN` and the wire.
//!
//! [`Core`] owns the open files, their registered agents, the outstanding sends with their
//! response timeouts and retries, the RMPP transfers of both directions ([`crate::rmpp`]) and
//! the receive queues. It reads no clock and does no I/O:
//!
//! * inputs — [`Core::open_file`], [`Core::register`], [`Core::handle_write`] (one `write(2)`),
//!   [`Core::handle_frame`] (one 288-byte frame from the simulator), [`Core::handle_timeout`];
//! * outputs — [`Core::poll_transmit`] (frames for the simulator), [`Core::poll_event`] (a file
//!   became readable: one event per queued packet), [`Core::poll_timeout`] (when to call
//!   `handle_timeout` next), [`Core::read`] (one `read(2)`).
//!
//! `now` must never decrease between calls. The kernel behaviours reproduced, each with its
//! source in `drivers/infiniband/core/{user_mad,mad,mad_rmpp}.c` (read, not copied):
//!
//! * write: header 56 bytes, or 64 once `ENABLE_PKEY`/`REGISTER_AGENT2` switched the file to
//!   P_Key indexes; at least header + 36 bytes; the agent must be registered on this file; a
//!   request gets the agent's `hi_tid` in TID bits 32..63; a second outstanding request with
//!   the same TID and class is `EINVAL`; anything longer than 256 bytes needs an active RMPP
//!   header on a kernel-RMPP agent.
//! * a send with `timeout_ms > 0` waits for a response with the same TID and class; each
//!   timeout resends it while `retries` last, then the reader gets the send back with status
//!   `ETIMEDOUT` (header + the 24-byte MAD header): `timeout_ms × (retries + 1)` in all. A
//!   response nobody waits for — late, or to a send with `timeout_ms = 0` — is dropped.
//! * responses reach the agent whose `hi_tid` is in the TID; requests the agent registered for
//!   their class, version and method (and OUI for vendor range 2). A Get or Set of a GSI class
//!   nobody registered for is answered "unsupported method/attribute" (`generate_unmatched_resp`).
//! * RMPP for agents with `rmpp_version = 1` (and not `IB_USER_MAD_USER_RMPP`): a long write
//!   goes out as DATA segments within the receiver's window, with an ACK timeout of
//!   `timeout_ms` capped at 2 s (2 s when 0) and `retries` retransmissions from the first
//!   unacknowledged segment; incoming transfers are acknowledged every 64 segments and at the
//!   end, and read as one buffer; a reader's buffer too small for it gets the header and first
//!   segment with `ENOSPC` and the packet stays queued. A receive that does not complete in 40 s
//!   is aborted (T2L); a finished one is remembered 10 s to re-acknowledge duplicates.
//!
//! Deliberate differences, because a simulator is not a wire: a frame the simulator returns
//! undelivered (status 110) is treated as lost (the request times out as on hardware, it does
//! not fail at once); when RMPP retries run out the sender also sends ABORT (status TMR, as IBA
//! §13.6 asks; the kernel only stops); a transfer the peer ends with ABORT or STOP is reported to
//! the writer's reader with status `ECONNABORTED` (ib_umad drops that completion silently, which
//! leaves a waiting reader hanging).
//!
//! The kernel's `hi_tid` counter is one for the whole host, so two processes never send the same
//! TID; every shim process has its own counter, which starts at a value derived from the process
//! ID ([`Config::first_hi_tid`]): otherwise two clients run one after the other on a node send
//! the same TIDs, and a receiver that remembers a finished RMPP transfer for 10 s takes the
//! second client's request for a duplicate of the first's (re-acknowledged, never delivered).
//!
//! Addressing on the simulator: frames leave with `sqp` = this client's own QP number (unique
//! per process, registered with the simulator at CONNECT), so a peer's RMPP ACK — a request when
//! it answers a response transfer — reaches exactly this process even when several clients share
//! a node. Readers see QP 0/1 as on hardware. ibsim overwrites TID bits 48..63 of every request
//! with the sender's client slot; they are cleared from responses before matching, so the TIDs a
//! reader sees are the kernel's (`hi_tid << 32 | low 32 bits`).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use ibmad::ibsim::SimRequest;
use ibmad::Time;
use umad::abi::{HdrFraming, UmadHdr};

use crate::rmpp::{
    self, abort_for, ack_for, data_offset, is_rmpp_class, AckOutcome, Receiver, RecvOutcome,
    RmppHeader, RmppStatus, RmppType, Sender, TimeoutOutcome, MAD_LEN,
};
use crate::timers::TimerTable;

/// Agents per open file (`IB_UMAD_MAX_AGENTS`).
pub const MAX_AGENTS: usize = 32;
/// `IB_USER_MAD_USER_RMPP`: the process does RMPP itself; the only registration flag.
pub const USER_RMPP: u32 = 1;
/// The 24-byte common MAD header that a timed-out send reports back.
pub const MAD_HDR_LEN: usize = 24;
/// Status of a send that got no response (`ETIMEDOUT`).
pub const STATUS_TIMEOUT: u32 = libc::ETIMEDOUT as u32;
/// Status of a send whose RMPP transfer the peer aborted (`ECONNABORTED`).
pub const STATUS_ABORTED: u32 = libc::ECONNABORTED as u32;
/// MAD status "unsupported method/attribute combination".
const UNSUPPORTED_METHOD_ATTR: u16 = 0x000C;
/// Highest TID bits the simulator rewrites (its client slot).
const SLOT_BITS: u64 = 0xFFFF_0000_0000_0000;

/// Fault injection for tests of the RMPP machines against a real peer (`IBSM_UMAD_FAULTS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Drop the first transmission of this DATA segment number of every RMPP transfer sent.
    pub drop_data_segment: Option<u32>,
    /// Send at most this many ACKs per received transfer (0 = never acknowledge).
    pub max_acks: Option<u32>,
}

/// Tunables; the defaults are the kernel's.
#[derive(Clone, Debug)]
pub struct Config {
    /// The QP number this client registered with the simulator (the `sqp` of its frames).
    pub own_qp: u32,
    /// Segments each RMPP ACK opens (kernel: receive queue depth / 8 = 64).
    pub rmpp_window: u32,
    /// Longest wait for an RMPP ACK (kernel: 2 s).
    pub rmpp_ack_timeout_max: Duration,
    /// Total time an incoming RMPP transfer may take (kernel: 40 s).
    pub rmpp_recv_timeout: Duration,
    /// How long a completed incoming transfer is remembered for duplicates (kernel: 10 s).
    pub rmpp_linger: Duration,
    /// Most packets queued for one file before new ones are dropped.
    pub max_queue: usize,
    /// Fault injection.
    pub faults: Faults,
    /// Record a line per protocol event ([`Core::poll_trace`]).
    pub trace: bool,
    /// The first agent's `hi_tid` (1..=0xFFFF; the runtime derives it from the process ID).
    pub first_hi_tid: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            own_qp: 1,
            rmpp_window: 64,
            rmpp_ack_timeout_max: Duration::from_secs(2),
            rmpp_recv_timeout: Duration::from_secs(40),
            rmpp_linger: Duration::from_secs(10),
            max_queue: 1 << 16,
            faults: Faults::default(),
            trace: false,
            first_hi_tid: 1,
        }
    }
}

/// An open `umadN` file.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct FileId(pub u32);

/// Output: a file has one more packet to read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Readable {
    /// The file.
    pub file: FileId,
    /// The token the file was opened with (the glue's eventfd).
    pub token: i32,
}

/// A registration request (`IB_USER_MAD_REGISTER_AGENT` or `_AGENT2`), decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegRequest {
    /// 0 (SMI) or 1 (GSI).
    pub qpn: u32,
    /// Management class; 0 = no class (the agent only sends and gets responses).
    pub class: u8,
    /// Class version.
    pub class_version: u8,
    /// Methods to receive requests for (bit n = method n).
    pub methods: u128,
    /// OUI (vendor range 2 classes).
    pub oui: [u8; 3],
    /// 0 or 1.
    pub rmpp_version: u8,
    /// `REGISTER_AGENT2` flags.
    pub flags: u32,
    /// True for `REGISTER_AGENT2` (switches the file to 64-byte headers).
    pub v2: bool,
}

/// Why a registration failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegError {
    /// errno.
    Errno(i32),
    /// `REGISTER_AGENT2` with unknown flags: `EINVAL`, and the supported flags are written back.
    BadFlags {
        /// The supported flags.
        supported: u32,
    },
}

/// The result of [`Core::read`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadResult {
    /// A whole packet: header and MAD bytes.
    Data(Vec<u8>),
    /// The buffer holds only the header and the first segment of a longer RMPP message:
    /// `ENOSPC`, with these bytes copied; the packet stays queued (re-signal the file).
    NoSpace(Vec<u8>),
    /// An errno (`EINVAL` for a buffer too small — the packet stays queued, re-signal —
    /// or `EBADF`).
    Errno {
        /// The errno.
        errno: i32,
        /// True if a packet was put back (the glue re-signals the file).
        requeued: bool,
    },
    /// Nothing queued.
    Empty,
}

#[derive(Clone, Debug)]
struct Registration {
    class: u8,
    version: u8,
    methods: u128,
    oui: [u8; 3],
}

#[derive(Clone, Debug)]
struct Agent {
    file: FileId,
    slot: u32,
    hi_tid: u32,
    reg: Option<Registration>,
    /// The kernel does RMPP for this agent.
    rmpp: bool,
}

#[derive(Clone, Debug)]
enum PacketKind {
    /// A received MAD (possibly a reassembled RMPP message).
    Recv,
    /// A send reported back (timed out or aborted).
    SendReport,
}

#[derive(Clone, Debug)]
struct Packet {
    kind: PacketKind,
    hdr: UmadHdr,
    data: Vec<u8>,
}

#[derive(Debug)]
struct File {
    token: i32,
    use_pkey_index: bool,
    already_used: bool,
    agents: [Option<u32>; MAX_AGENTS],
    recv: VecDeque<Packet>,
}

impl File {
    fn framing(&self) -> HdrFraming {
        if self.use_pkey_index {
            HdrFraming::New
        } else {
            HdrFraming::Old
        }
    }
}

#[derive(Debug)]
enum Phase {
    /// A single MAD waiting for its response.
    WaitResponse,
    /// An RMPP transfer waiting for ACKs.
    Rmpp(Box<Sender>),
    /// Every segment acknowledged; waiting for the response (no more retries: the kernel's
    /// `ib_retry_rmpp` refuses once the transfer is done).
    RmppDone,
}

#[derive(Debug)]
struct Send {
    agent: u32,
    tid: u64,
    class: u8,
    response: bool,
    dest_lid: u16,
    user_hdr: UmadHdr,
    head: [u8; MAD_HDR_LEN],
    timeout: Duration,
    retries_left: u32,
    /// The frame (single MAD) or a template of the addressing (RMPP).
    frame: SimRequest,
    hdr_len: usize,
    phase: Phase,
    /// Fault injection: the dropped segment was already dropped once.
    dropped_once: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct RecvKey {
    tid: u64,
    src_qp: u32,
    slid: u16,
    class: u8,
    version: u8,
    method: u8,
}

#[derive(Debug)]
struct RmppRecv {
    key: RecvKey,
    agent: u32,
    rx: Receiver,
    hdr_len: usize,
    acks_sent: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum TimerKey {
    Send(u64),
    RecvTotal(u64),
    RecvLinger(u64),
}

/// Counters (for traces and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames taken from the simulator.
    pub frames_in: u64,
    /// Frames handed to the simulator.
    pub frames_out: u64,
    /// Frames the simulator returned undelivered (status ≠ 0), treated as lost.
    pub bounced: u64,
    /// Responses nobody waited for (late or unsolicited), dropped.
    pub unmatched_responses: u64,
    /// Requests no agent registered for, dropped or answered "unsupported".
    pub unclaimed_requests: u64,
    /// Single-MAD resends after a response timeout.
    pub resends: u64,
    /// RMPP retransmission rounds after an ACK timeout.
    pub rmpp_retransmits: u64,
    /// Sends reported back with `ETIMEDOUT`.
    pub timeouts: u64,
    /// RMPP transfers ended by ABORT/STOP (either side).
    pub rmpp_aborts: u64,
    /// Incoming RMPP transfers completed.
    pub rmpp_received: u64,
    /// Packets dropped because a file's queue was full.
    pub queue_overflows: u64,
}

/// The model. See the module documentation for the call order.
#[derive(Debug)]
pub struct Core {
    cfg: Config,
    files: HashMap<FileId, File>,
    next_file: u32,
    agents: HashMap<u32, Agent>,
    next_agent: u32,
    next_hi_tid: u32,
    sends: HashMap<u64, Send>,
    next_send: u64,
    recvs: HashMap<u64, RmppRecv>,
    recv_index: HashMap<RecvKey, u64>,
    next_recv: u64,
    timers: TimerTable<TimerKey>,
    transmit: VecDeque<SimRequest>,
    events: VecDeque<Readable>,
    trace: VecDeque<String>,
    stats: Stats,
}

/// Records a trace line when tracing is on; a macro so it borrows only `self.trace`.
macro_rules! trace {
    ($core:expr, $($arg:tt)*) => {
        if $core.cfg.trace {
            $core.trace.push_back(format!($($arg)*));
        }
    };
}

fn tid_of(mad: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&mad[8..16]);
    u64::from_be_bytes(b)
}

fn set_tid(mad: &mut [u8], tid: u64) {
    mad[8..16].copy_from_slice(&tid.to_be_bytes());
}

/// Linux's `ib_response_mad`: the R bit, TrapRepress, or a BM response (AttributeModifier bit
/// 24 of the BM class).
#[must_use]
pub fn is_response(mad: &[u8]) -> bool {
    let method = mad[3];
    let bm_resp = mad[1] == 0x05 && mad[20] & 0x01 != 0;
    method & 0x80 != 0 || method == 0x07 || bm_resp
}

fn is_smi(class: u8) -> bool {
    class == 0x01 || class == 0x81
}

impl Core {
    /// A port with no files open.
    #[must_use]
    pub fn new(cfg: Config) -> Core {
        let first_hi_tid = cfg.first_hi_tid.clamp(1, 0xFFFF);
        Core {
            cfg,
            files: HashMap::new(),
            next_file: 1,
            agents: HashMap::new(),
            next_agent: 1,
            next_hi_tid: first_hi_tid,
            sends: HashMap::new(),
            next_send: 1,
            recvs: HashMap::new(),
            recv_index: HashMap::new(),
            next_recv: 1,
            timers: TimerTable::default(),
            transmit: VecDeque::new(),
            events: VecDeque::new(),
            trace: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Opens a file; `token` comes back in its [`Readable`] events.
    pub fn open_file(&mut self, token: i32) -> FileId {
        let id = FileId(self.next_file);
        self.next_file = self.next_file.wrapping_add(1).max(1);
        self.files.insert(
            id,
            File {
                token,
                use_pkey_index: false,
                already_used: false,
                agents: [None; MAX_AGENTS],
                recv: VecDeque::new(),
            },
        );
        id
    }

    /// Closes a file: its agents are unregistered (their sends and transfers vanish silently,
    /// as the kernel flushes them), its queue dropped.
    pub fn close_file(&mut self, file: FileId) {
        if let Some(f) = self.files.remove(&file) {
            for a in f.agents.iter().flatten() {
                self.drop_agent(*a);
            }
        }
    }

    /// Header length of `file` (56 or 64), or `None` if it is not open.
    #[must_use]
    pub fn hdr_len(&self, file: FileId) -> Option<usize> {
        self.files.get(&file).map(|f| f.framing().hdr_len())
    }

    /// `IB_USER_MAD_ENABLE_PKEY`.
    ///
    /// # Errors
    /// `EINVAL` once an agent was registered on the file; `EBADF` for an unknown file.
    pub fn enable_pkey(&mut self, file: FileId) -> Result<(), i32> {
        let f = self.files.get_mut(&file).ok_or(libc::EBADF)?;
        if f.already_used {
            return Err(libc::EINVAL);
        }
        f.use_pkey_index = true;
        Ok(())
    }

    /// `IB_USER_MAD_REGISTER_AGENT(2)`: returns the agent id (its slot in the file).
    ///
    /// # Errors
    /// `EINVAL` for an invalid request (QPN, class/QP mismatch, version, RMPP on a class that
    /// has none, methods another agent holds), [`RegError::BadFlags`], `ENOMEM` when the file
    /// has 32 agents.
    pub fn register(&mut self, file: FileId, req: &RegRequest) -> Result<u32, RegError> {
        let e = RegError::Errno;
        if !self.files.contains_key(&file) {
            return Err(e(libc::EBADF));
        }
        if req.qpn > 1 {
            return Err(e(libc::EINVAL));
        }
        if req.v2 && req.flags & !USER_RMPP != 0 {
            return Err(RegError::BadFlags {
                supported: USER_RMPP,
            });
        }
        let reg = if req.class == 0 {
            None
        } else {
            self.check_registration(req).map_err(e)?;
            Some(Registration {
                class: req.class,
                version: req.class_version,
                methods: req.methods,
                oui: req.oui,
            })
        };
        let f = self.files.get_mut(&file).ok_or(e(libc::EBADF))?;
        let slot = f
            .agents
            .iter()
            .position(Option::is_none)
            .ok_or(e(libc::ENOMEM))?;
        let hi_tid = self.alloc_hi_tid();
        let key = self.next_agent;
        self.next_agent = self.next_agent.wrapping_add(1).max(1);
        let Some(f) = self.files.get_mut(&file) else {
            return Err(e(libc::EBADF));
        };
        f.agents[slot] = Some(key);
        if !f.already_used {
            f.already_used = true;
            if req.v2 {
                f.use_pkey_index = true;
            }
        }
        let slot = slot as u32;
        self.agents.insert(
            key,
            Agent {
                file,
                slot,
                hi_tid,
                reg,
                rmpp: req.rmpp_version == rmpp::RMPP_VERSION && req.flags & USER_RMPP == 0,
            },
        );
        trace!(
            self,
            "register agent {slot} qp {} class {:#04x} v{} rmpp {} hi_tid {hi_tid:#x}",
            req.qpn,
            req.class,
            req.class_version,
            req.rmpp_version
        );
        Ok(slot)
    }

    fn check_registration(&self, req: &RegRequest) -> Result<(), i32> {
        let inval = Err(libc::EINVAL);
        if req.class_version >= 8 || req.rmpp_version > 1 {
            return inval;
        }
        if is_smi(req.class) != (req.qpn == 0) {
            return inval;
        }
        if !is_rmpp_class(req.class) && req.rmpp_version != 0 {
            return inval;
        }
        if (0x50..0x81).contains(&req.class) || req.class > 0x81 {
            return inval;
        }
        let vendor = (0x30..=0x4F).contains(&req.class);
        if vendor && req.oui == [0; 3] {
            return inval;
        }
        let clash = self
            .agents
            .values()
            .filter_map(|a| a.reg.as_ref())
            .any(|r| {
                r.class == req.class
                    && r.version == req.class_version
                    && (!vendor || r.oui == req.oui)
                    && r.methods & req.methods != 0
            });
        if clash {
            return inval;
        }
        Ok(())
    }

    fn alloc_hi_tid(&mut self) -> u32 {
        loop {
            let h = self.next_hi_tid;
            self.next_hi_tid = if h >= 0xFFFF { 1 } else { h + 1 };
            if !self.agents.values().any(|a| a.hi_tid == h) {
                return h;
            }
        }
    }

    /// `IB_USER_MAD_UNREGISTER_AGENT`.
    ///
    /// # Errors
    /// `EINVAL` for an id that is not registered on the file.
    pub fn unregister(&mut self, file: FileId, id: u32) -> Result<(), i32> {
        let f = self.files.get_mut(&file).ok_or(libc::EBADF)?;
        let slot = f.agents.get_mut(id as usize).ok_or(libc::EINVAL)?;
        let key = slot.take().ok_or(libc::EINVAL)?;
        self.drop_agent(key);
        Ok(())
    }

    fn drop_agent(&mut self, key: u32) {
        self.agents.remove(&key);
        let sends: Vec<u64> = self
            .sends
            .iter()
            .filter(|(_, s)| s.agent == key)
            .map(|(&id, _)| id)
            .collect();
        for id in sends {
            self.sends.remove(&id);
            self.timers.cancel(TimerKey::Send(id));
        }
        let recvs: Vec<u64> = self
            .recvs
            .iter()
            .filter(|(_, r)| r.agent == key)
            .map(|(&id, _)| id)
            .collect();
        for id in recvs {
            self.remove_recv(id);
        }
    }

    fn remove_recv(&mut self, id: u64) {
        if let Some(r) = self.recvs.remove(&id) {
            self.recv_index.remove(&r.key);
        }
        self.timers.cancel(TimerKey::RecvTotal(id));
        self.timers.cancel(TimerKey::RecvLinger(id));
    }

    /// One `write(2)` of `buf` (header + MAD) on `file`: returns the bytes taken (all).
    ///
    /// # Errors
    /// `EINVAL` (too short, unknown agent, too long without RMPP, duplicate TID, malformed
    /// RMPP message), `EBADF`.
    pub fn handle_write(&mut self, now: Time, file: FileId, buf: &[u8]) -> Result<usize, i32> {
        let f = self.files.get(&file).ok_or(libc::EBADF)?;
        let framing = f.framing();
        let hl = framing.hdr_len();
        if buf.len() < hl + rmpp::RMPP_HDR_END {
            return Err(libc::EINVAL);
        }
        let hdr = UmadHdr::decode(framing, buf).map_err(|_| libc::EINVAL)?;
        let agent_key = f
            .agents
            .get(hdr.id as usize)
            .copied()
            .flatten()
            .ok_or(libc::EINVAL)?;
        let agent = self.agents.get(&agent_key).ok_or(libc::EINVAL)?.clone();
        let mad = &buf[hl..];
        let class = mad[1];
        let hdr_len = data_offset(class);
        let kernel_rmpp = agent.rmpp && is_rmpp_class(class);
        let rmpp_active = kernel_rmpp && rmpp::header(mad).is_some_and(RmppHeader::is_active);
        if mad.len() < hdr_len || (!rmpp_active && mad.len() > MAD_LEN) {
            return Err(libc::EINVAL);
        }
        let mut msg = mad.to_vec();
        let response = is_response(&msg);
        if !response {
            let tid = (u64::from(agent.hi_tid) << 32) | (tid_of(&msg) & 0xFFFF_FFFF);
            set_tid(&mut msg, tid);
        }
        let tid = tid_of(&msg);
        let user_rmpp_active = !kernel_rmpp
            && is_rmpp_class(class)
            && rmpp::header(&msg).is_some_and(RmppHeader::is_active);
        if !user_rmpp_active && self.is_duplicate(file, tid, class, response, hdr.lid) {
            return Err(libc::EINVAL);
        }
        let mut head = [0u8; MAD_HDR_LEN];
        head.copy_from_slice(&msg[..MAD_HDR_LEN]);
        let template = SimRequest::new(
            hdr.lid,
            if hdr.lid == 0xFFFF { 0xFFFF } else { 0 },
            hdr.qpn,
            self.cfg.own_qp,
            &[0; MAD_LEN],
        );
        let timeout = Duration::from_millis(u64::from(hdr.timeout_ms));
        let send = |frame, phase| Send {
            agent: agent_key,
            tid,
            class,
            response,
            dest_lid: hdr.lid,
            user_hdr: hdr,
            head,
            timeout,
            retries_left: hdr.retries,
            frame,
            hdr_len,
            phase,
            dropped_once: false,
        };
        if rmpp_active {
            let sender = Sender::new(&msg, hdr_len, hdr.retries, 1).map_err(|_| libc::EINVAL)?;
            let id = self.alloc_send();
            trace!(
                self,
                "rmpp send tid {tid:#x} to lid {} ({} bytes, {} segments)",
                hdr.lid,
                msg.len(),
                sender.seg_count()
            );
            self.sends
                .insert(id, send(template, Phase::Rmpp(Box::new(sender))));
            self.pump_rmpp(now, id);
            return Ok(buf.len());
        }
        msg.resize(MAD_LEN, 0);
        let mut frame = template;
        frame.mad.copy_from_slice(&msg);
        self.emit(frame);
        if hdr.timeout_ms > 0 {
            let id = self.alloc_send();
            self.sends.insert(id, send(frame, Phase::WaitResponse));
            self.timers.set(TimerKey::Send(id), now + timeout);
        }
        Ok(buf.len())
    }

    fn alloc_send(&mut self) -> u64 {
        let id = self.next_send;
        self.next_send += 1;
        id
    }

    fn is_duplicate(&self, file: FileId, tid: u64, class: u8, response: bool, lid: u16) -> bool {
        self.sends.values().any(|s| {
            let same_file = self.agents.get(&s.agent).is_some_and(|a| a.file == file);
            same_file
                && s.tid == tid
                && s.class == class
                && if response {
                    s.response && s.dest_lid == lid
                } else {
                    !s.response
                }
        })
    }

    fn emit(&mut self, frame: SimRequest) {
        self.stats.frames_out += 1;
        self.transmit.push_back(frame);
    }

    fn ack_timeout(&self, s: &Send) -> Duration {
        let max = self.cfg.rmpp_ack_timeout_max;
        if s.timeout.is_zero() || s.timeout > max {
            max
        } else {
            s.timeout
        }
    }

    /// Sends what the window of RMPP send `id` allows and arms its ACK timer if anything went.
    fn pump_rmpp(&mut self, now: Time, id: u64) {
        let drop_seg = self.cfg.faults.drop_data_segment;
        let Some(s) = self.sends.get_mut(&id) else {
            return;
        };
        let Phase::Rmpp(sender) = &mut s.phase else {
            return;
        };
        let mut out = Vec::new();
        let mut seg = [0u8; MAD_LEN];
        let mut dropped = None;
        while let Some(n) = sender.next_segment(&mut seg) {
            if drop_seg == Some(n) && !s.dropped_once {
                s.dropped_once = true;
                dropped = Some(n);
                continue;
            }
            let mut f = s.frame;
            f.mad = seg;
            out.push(f);
        }
        let any = !out.is_empty() || dropped.is_some();
        let timeout = self.ack_timeout(&self.sends[&id]);
        for f in out {
            self.emit(f);
        }
        if let Some(n) = dropped {
            trace!(self, "fault: dropped DATA segment {n}");
        }
        if any {
            self.timers.set(TimerKey::Send(id), now + timeout);
        }
    }

    /// Reports send `id` back to its agent's reader with `status` and forgets it.
    fn fail_send(&mut self, id: u64, status: u32) {
        self.timers.cancel(TimerKey::Send(id));
        let Some(s) = self.sends.remove(&id) else {
            return;
        };
        if status == STATUS_TIMEOUT {
            self.stats.timeouts += 1;
        }
        let Some((slot, file)) = self.agents.get(&s.agent).map(|a| (a.slot, a.file)) else {
            return;
        };
        let mut hdr = s.user_hdr;
        hdr.status = status;
        hdr.id = slot;
        trace!(self, "send tid {:#x} reported with status {status}", s.tid);
        self.queue(
            file,
            Packet {
                kind: PacketKind::SendReport,
                hdr,
                data: s.head.to_vec(),
            },
        );
    }

    fn queue(&mut self, file: FileId, p: Packet) {
        let max = self.cfg.max_queue;
        let Some(f) = self.files.get_mut(&file) else {
            return;
        };
        if f.recv.len() >= max {
            self.stats.queue_overflows += 1;
            return;
        }
        f.recv.push_back(p);
        let token = f.token;
        self.events.push_back(Readable { file, token });
    }

    /// Expires timers due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        for key in self.timers.expired(now) {
            match key {
                TimerKey::Send(id) => self.send_timeout(now, id),
                TimerKey::RecvTotal(id) => {
                    if let Some(r) = self.recvs.get(&id) {
                        let abort = abort_for(
                            &r.rx.first_segment(),
                            r.hdr_len,
                            RmppStatus::TOTAL_TIME_TOO_LONG,
                            true,
                        );
                        let (slid, qp, tid) = (r.key.slid, r.key.src_qp, r.key.tid);
                        trace!(
                            self,
                            "rmpp receive tid {tid:#x}: total time too long, ABORT"
                        );
                        self.stats.rmpp_aborts += 1;
                        self.reply_frame(slid, qp, abort);
                    }
                    self.remove_recv(id);
                }
                TimerKey::RecvLinger(id) => self.remove_recv(id),
            }
        }
    }

    fn send_timeout(&mut self, now: Time, id: u64) {
        enum Act {
            Resend(SimRequest, Duration),
            Fail,
            Retransmit(u32),
            GiveUp(SimRequest),
        }
        let Some(s) = self.sends.get_mut(&id) else {
            return;
        };
        let act = match &mut s.phase {
            Phase::WaitResponse if s.retries_left > 0 => {
                s.retries_left -= 1;
                Act::Resend(s.frame, s.timeout)
            }
            Phase::WaitResponse | Phase::RmppDone => Act::Fail,
            Phase::Rmpp(sender) => match sender.handle_timeout() {
                TimeoutOutcome::Retransmit => Act::Retransmit(sender.last_ack()),
                TimeoutOutcome::Exhausted => {
                    let mut first = [0u8; MAD_LEN];
                    first[..s.hdr_len].copy_from_slice(sender.header());
                    let mut f = s.frame;
                    f.mad = abort_for(&first, s.hdr_len, RmppStatus::TOO_MANY_RETRIES, false);
                    Act::GiveUp(f)
                }
            },
        };
        match act {
            Act::Resend(frame, t) => {
                self.stats.resends += 1;
                self.emit(frame);
                self.timers.set(TimerKey::Send(id), now + t);
            }
            Act::Fail => self.fail_send(id, STATUS_TIMEOUT),
            Act::Retransmit(last) => {
                self.stats.rmpp_retransmits += 1;
                trace!(
                    self,
                    "rmpp send: ACK timeout, retransmit after segment {last}"
                );
                self.pump_rmpp(now, id);
            }
            Act::GiveUp(abort) => {
                trace!(self, "rmpp send: no ACK after the retries, ABORT (TMR)");
                self.stats.rmpp_aborts += 1;
                self.emit(abort);
                self.fail_send(id, STATUS_TIMEOUT);
            }
        }
    }

    /// A frame to `lid`/`qp` carrying `mad` (ACKs, ABORTs, unsupported-method answers).
    fn reply_frame(&mut self, lid: u16, qp: u32, mad: [u8; MAD_LEN]) {
        let f = SimRequest::new(lid, 0, qp, self.cfg.own_qp, &mad);
        self.emit(f);
    }

    /// One frame from the simulator.
    pub fn handle_frame(&mut self, now: Time, frame: &SimRequest) {
        self.stats.frames_in += 1;
        if frame.status.get() != 0 {
            self.stats.bounced += 1;
            trace!(
                self,
                "undeliverable (status {}) tid {:#x}: lost",
                frame.status.get(),
                frame.tid()
            );
            return;
        }
        let raw = frame.mad;
        if raw[0] != 1 {
            return;
        }
        let mut m = raw;
        let response = is_response(&m);
        if response {
            let tid = tid_of(&m) & !SLOT_BITS;
            set_tid(&mut m, tid);
        }
        let class = m[1];
        let agent = if response {
            let hi = ((tid_of(&m) >> 32) & 0xFFFF) as u32;
            self.agents
                .iter()
                .find(|(_, a)| a.hi_tid == hi)
                .map(|(&k, _)| k)
        } else {
            self.find_agent(&m)
        };
        let rmpp = if is_rmpp_class(class) {
            rmpp::header(&m).copied().filter(RmppHeader::is_active)
        } else {
            None
        };
        if let Some(h) = rmpp {
            // The kernel does RMPP for the agent the MAD is for; a control message nobody is
            // registered for may still belong to one of our transfers.
            let kernel = agent.is_none_or(|a| self.agents.get(&a).is_some_and(|x| x.rmpp));
            if kernel {
                match (h.kind(), agent) {
                    (RmppType::DATA, Some(a)) => self.rmpp_data(now, a, &m, &raw, frame),
                    (RmppType::DATA, None) => self.unclaimed(frame, &m, response),
                    _ => self.rmpp_control(now, &h, &m, &raw, frame),
                }
                return;
            }
        }
        let Some(agent) = agent else {
            self.unclaimed(frame, &m, response);
            return;
        };
        self.complete_or_deliver(agent, m.to_vec(), frame);
    }

    fn unclaimed(&mut self, frame: &SimRequest, m: &[u8; MAD_LEN], response: bool) {
        if response {
            self.stats.unmatched_responses += 1;
            return;
        }
        self.stats.unclaimed_requests += 1;
        let method = m[3];
        if is_smi(m[1]) || !(method == 0x01 || method == 0x02) {
            return;
        }
        let mut r = *m;
        r[3] = 0x81;
        r[4..6].copy_from_slice(&UNSUPPORTED_METHOD_ATTR.to_be_bytes());
        trace!(
            self,
            "no agent for class {:#04x} method {method:#04x}: unsupported",
            m[1]
        );
        self.reply_frame(frame.slid.get(), frame.sqp.get(), r);
    }

    fn find_agent(&self, m: &[u8; MAD_LEN]) -> Option<u32> {
        let (class, version, method) = (m[1], m[2], m[3] & 0x7F);
        if version >= 8 {
            return None;
        }
        let vendor = (0x30..=0x4F).contains(&class);
        let oui = [m[37], m[38], m[39]];
        self.agents
            .iter()
            .find(|(_, a)| {
                a.reg.as_ref().is_some_and(|r| {
                    r.class == class
                        && r.version == version
                        && (!vendor || r.oui == oui)
                        && r.methods & (1u128 << method) != 0
                })
            })
            .map(|(&k, _)| k)
    }

    /// A complete message for `agent`: a response completes the send waiting for it (or is
    /// dropped), a request is queued.
    fn complete_or_deliver(&mut self, agent: u32, msg: Vec<u8>, frame: &SimRequest) {
        if is_response(&msg) {
            let (tid, class) = (tid_of(&msg), msg[1]);
            let waiting = self
                .sends
                .iter()
                .find(|(_, s)| {
                    s.agent == agent && s.tid == tid && s.class == class && !s.timeout.is_zero()
                })
                .map(|(&id, _)| id);
            let Some(id) = waiting else {
                let user_rmpp = self.agents.get(&agent).is_some_and(|a| !a.rmpp)
                    && is_rmpp_class(class)
                    && rmpp::header(&msg).is_some_and(RmppHeader::is_active);
                if !user_rmpp {
                    self.stats.unmatched_responses += 1;
                    trace!(self, "response tid {tid:#x} nobody waits for: dropped");
                    return;
                }
                self.deliver(agent, msg, frame);
                return;
            };
            self.sends.remove(&id);
            self.timers.cancel(TimerKey::Send(id));
        }
        self.deliver(agent, msg, frame);
    }

    fn deliver(&mut self, agent: u32, data: Vec<u8>, frame: &SimRequest) {
        let Some(a) = self.agents.get(&agent) else {
            return;
        };
        let class = data[1];
        let sqp = frame.sqp.get();
        let hdr = UmadHdr {
            id: a.slot,
            qpn: if sqp <= 1 {
                sqp
            } else {
                u32::from(!is_smi(class))
            },
            lid: frame.slid.get(),
            ..UmadHdr::default()
        };
        let file = a.file;
        self.queue(
            file,
            Packet {
                kind: PacketKind::Recv,
                hdr,
                data,
            },
        );
    }

    fn rmpp_data(
        &mut self,
        now: Time,
        agent: u32,
        m: &[u8; MAD_LEN],
        raw: &[u8; MAD_LEN],
        frame: &SimRequest,
    ) {
        let key = RecvKey {
            tid: tid_of(m),
            src_qp: frame.sqp.get(),
            slid: frame.slid.get(),
            class: m[1],
            version: m[2],
            method: m[3],
        };
        let hdr_len = data_offset(m[1]);
        let result = match self.recv_index.get(&key).copied() {
            Some(id) => match self.recvs.get_mut(&id) {
                Some(r) => r.rx.handle_data(m).map(|o| (id, o)),
                None => return,
            },
            None => {
                let Some(h) = rmpp::header(m) else { return };
                if h.data1.get() != 1 && !h.flags().first() {
                    return; // a later segment of a transfer we do not know: dropped
                }
                match Receiver::start(m, hdr_len, self.cfg.rmpp_window) {
                    Ok((rx, out)) => {
                        let id = self.next_recv;
                        self.next_recv += 1;
                        self.recvs.insert(
                            id,
                            RmppRecv {
                                key,
                                agent,
                                rx,
                                hdr_len,
                                acks_sent: 0,
                            },
                        );
                        self.recv_index.insert(key, id);
                        self.timers
                            .set(TimerKey::RecvTotal(id), now + self.cfg.rmpp_recv_timeout);
                        trace!(
                            self,
                            "rmpp receive tid {:#x} from lid {} started",
                            key.tid,
                            key.slid
                        );
                        Ok((id, out))
                    }
                    Err(st) => Err(st),
                }
            }
        };
        match result {
            Err(status) => {
                trace!(
                    self,
                    "rmpp receive: bad DATA segment, ABORT status {}",
                    status.0
                );
                self.stats.rmpp_aborts += 1;
                self.reply_frame(key.slid, key.src_qp, abort_for(raw, hdr_len, status, true));
            }
            Ok((_, RecvOutcome::Quiet)) => {}
            Ok((id, RecvOutcome::Ack { seg, newwin })) => self.send_ack(id, raw, seg, newwin),
            Ok((
                id,
                RecvOutcome::Complete {
                    seg,
                    newwin,
                    message,
                },
            )) => {
                self.send_ack(id, raw, seg, newwin);
                self.stats.rmpp_received += 1;
                self.timers.cancel(TimerKey::RecvTotal(id));
                self.timers
                    .set(TimerKey::RecvLinger(id), now + self.cfg.rmpp_linger);
                let len = message.len();
                trace!(
                    self,
                    "rmpp receive tid {:#x} complete: {len} bytes",
                    key.tid
                );
                let mut message = message;
                // The reader sees the TID as on the first segment (slot bits cleared for
                // responses, as for single MADs).
                message[8..16].copy_from_slice(&m[8..16]);
                self.complete_or_deliver(agent, message, frame);
            }
        }
    }

    fn send_ack(&mut self, id: u64, raw: &[u8; MAD_LEN], seg: u32, newwin: u32) {
        let limit = self.cfg.faults.max_acks;
        let Some(r) = self.recvs.get_mut(&id) else {
            return;
        };
        if limit.is_some_and(|n| r.acks_sent >= n) {
            let tid = r.key.tid;
            trace!(self, "fault: ACK {seg} of tid {tid:#x} not sent");
            return;
        }
        r.acks_sent += 1;
        let (slid, qp, hdr_len) = (r.key.slid, r.key.src_qp, r.hdr_len);
        self.reply_frame(slid, qp, ack_for(raw, hdr_len, seg, newwin));
    }

    /// ACK, STOP or ABORT, or an unknown RMPP type.
    fn rmpp_control(
        &mut self,
        now: Time,
        h: &RmppHeader,
        m: &[u8; MAD_LEN],
        raw: &[u8; MAD_LEN],
        frame: &SimRequest,
    ) {
        let hdr_len = data_offset(m[1]);
        let (lid, qp) = (frame.slid.get(), frame.sqp.get());
        let send = self.find_rmpp_send(tid_of(m), m[1], lid);
        let abort = |st: RmppStatus| abort_for(raw, hdr_len, st, true);
        let mut reply = None;
        if h.rmpp_version != rmpp::RMPP_VERSION {
            if let Some(id) = send {
                self.fail_send(id, STATUS_ABORTED);
            }
            reply = Some(abort(RmppStatus::UNSUPPORTED_VERSION));
        } else {
            match h.kind() {
                RmppType::ACK if h.rmpp_status != 0 => {
                    if let Some(id) = send {
                        self.fail_send(id, STATUS_ABORTED);
                    }
                    reply = Some(abort(RmppStatus::ILLEGAL_STATUS));
                }
                RmppType::ACK => {
                    // None: stale, or the DS ACK of a double-sided transfer.
                    if let Some(id) = send {
                        self.rmpp_ack(now, id, h.data1.get(), h.data2.get(), (lid, qp, *raw));
                    }
                }
                RmppType::STOP | RmppType::ABORT => {
                    let valid = if h.kind() == RmppType::STOP {
                        h.rmpp_status == RmppStatus::RESOURCES_EXHAUSTED.0
                    } else {
                        rmpp::ABORT_STATUSES.contains(&h.rmpp_status)
                    };
                    self.stats.rmpp_aborts += 1;
                    if let Some(id) = send {
                        trace!(
                            self,
                            "rmpp send tid {:#x}: peer sent {:?} status {}",
                            tid_of(m),
                            h.kind(),
                            h.rmpp_status
                        );
                        self.fail_send(id, STATUS_ABORTED);
                    }
                    // A sender aborting a transfer we are receiving.
                    let key = RecvKey {
                        tid: tid_of(m),
                        src_qp: qp,
                        slid: lid,
                        class: m[1],
                        version: m[2],
                        method: m[3],
                    };
                    if let Some(&id) = self.recv_index.get(&key) {
                        trace!(
                            self,
                            "rmpp receive tid {:#x}: peer aborted (status {})",
                            key.tid,
                            h.rmpp_status
                        );
                        self.remove_recv(id);
                    }
                    if !valid {
                        reply = Some(abort(RmppStatus::ILLEGAL_STATUS));
                    }
                }
                _ => {
                    if let Some(id) = send {
                        self.fail_send(id, STATUS_ABORTED);
                    }
                    reply = Some(abort(RmppStatus::BAD_TYPE));
                }
            }
        }
        if let Some(mad) = reply {
            self.stats.rmpp_aborts += 1;
            self.reply_frame(lid, qp, mad);
        }
    }

    fn rmpp_ack(
        &mut self,
        now: Time,
        id: u64,
        seg: u32,
        newwin: u32,
        abort_to: (u16, u32, [u8; MAD_LEN]),
    ) {
        let Some(s) = self.sends.get_mut(&id) else {
            return;
        };
        let Phase::Rmpp(sender) = &mut s.phase else {
            return; // repeated ACK after completion
        };
        match sender.handle_ack(seg, newwin) {
            AckOutcome::Ignored => {}
            AckOutcome::Abort(st) => {
                trace!(
                    self,
                    "rmpp send: invalid ACK ({seg}, {newwin}), ABORT {}",
                    st.0
                );
                self.stats.rmpp_aborts += 1;
                let (lid, qp, mad) = abort_to;
                let hdr_len = data_offset(mad[1]);
                self.reply_frame(lid, qp, abort_for(&mad, hdr_len, st, true));
                self.fail_send(id, STATUS_ABORTED);
            }
            AckOutcome::Progress => self.pump_rmpp(now, id),
            AckOutcome::Complete => {
                let tid = s.tid;
                if s.timeout.is_zero() {
                    trace!(self, "rmpp send tid {tid:#x} acknowledged");
                    self.sends.remove(&id);
                    self.timers.cancel(TimerKey::Send(id));
                } else {
                    s.phase = Phase::RmppDone;
                    let t = s.timeout;
                    self.timers.set(TimerKey::Send(id), now + t);
                }
            }
        }
    }

    fn find_rmpp_send(&self, tid: u64, class: u8, peer_lid: u16) -> Option<u64> {
        self.sends
            .iter()
            .find(|(_, s)| {
                s.tid == tid
                    && s.class == class
                    && s.dest_lid == peer_lid
                    && matches!(s.phase, Phase::Rmpp(_) | Phase::RmppDone)
            })
            .map(|(&id, _)| id)
    }

    /// One `read(2)` of up to `cap` bytes on `file`.
    pub fn read(&mut self, file: FileId, cap: usize) -> ReadResult {
        let Some(f) = self.files.get_mut(&file) else {
            return ReadResult::Errno {
                errno: libc::EBADF,
                requeued: false,
            };
        };
        let framing = f.framing();
        let hl = framing.hdr_len();
        if cap < hl {
            return ReadResult::Errno {
                errno: libc::EINVAL,
                requeued: false,
            };
        }
        let Some(p) = f.recv.pop_front() else {
            return ReadResult::Empty;
        };
        let mut out = vec![0u8; hl];
        let mut hdr = p.hdr;
        match p.kind {
            PacketKind::Recv => {
                let len = p.data.len();
                if cap < hl + len.min(MAD_LEN) {
                    f.recv.push_front(p);
                    return ReadResult::Errno {
                        errno: libc::EINVAL,
                        requeued: true,
                    };
                }
                hdr.length = u32::try_from(hl + len).unwrap_or(u32::MAX);
                let _ = hdr.encode(framing, &mut out);
                if len > MAD_LEN && cap < hl + len {
                    out.extend_from_slice(&p.data[..MAD_LEN]);
                    f.recv.push_front(p);
                    return ReadResult::NoSpace(out);
                }
                out.extend_from_slice(&p.data);
            }
            PacketKind::SendReport => {
                if cap < hl + MAD_HDR_LEN {
                    f.recv.push_front(p);
                    return ReadResult::Errno {
                        errno: libc::EINVAL,
                        requeued: true,
                    };
                }
                let _ = hdr.encode(framing, &mut out);
                out.extend_from_slice(&p.data[..MAD_HDR_LEN]);
            }
        }
        ReadResult::Data(out)
    }

    /// The next frame for the simulator.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<SimRequest> {
        self.transmit.pop_front()
    }

    /// The next "file readable" notification.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Readable> {
        self.events.pop_front()
    }

    /// The next trace line (only with [`Config::trace`]).
    #[must_use]
    pub fn poll_trace(&mut self) -> Option<String> {
        self.trace.pop_front()
    }

    /// When [`Core::handle_timeout`] is due next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        self.timers.next()
    }
}

#[cfg(test)]
mod tests;

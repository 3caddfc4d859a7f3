//! [`UmadPort`]: an [`ibmad::MadPort`] over `/dev/infiniband/umadN`.
//!
//! Opening a port: discover the device ([`crate::sysfs::find_device`]), open it non-blocking,
//! register one QP0 agent per class (0x81 directed-route and 0x01 LID-routed SMPs by default)
//! with `IB_USER_MAD_REGISTER_AGENT2` (64-byte header framing), falling back to
//! `IB_USER_MAD_REGISTER_AGENT` (56-byte framing) where the kernel — or ibsim's umad2sim shim —
//! refuses the new call.
//!
//! Two I/O modes ([`IoMode`]):
//! * **syscall**: a receive thread loops `poll`/`read` and fills a bounded channel; `send` is one
//!   `write` per MAD. Works everywhere, including under umad2sim (whose fds are fake numbers
//!   that only its interposed libc calls understand).
//! * **io_uring**: no thread; sends are queued as WRITE SQEs and submitted together with batches
//!   of READs by the next [`UmadPort::recv`]/[`UmadPort::recv_timeout`]/[`UmadPort::flush`]: many
//!   MADs per `io_uring_enter`. Used only on a real kernel char device.
//!
//! [`IoMode::Auto`] takes io_uring when the fd is a kernel character device and a ring can be set
//! up, else the syscall mode.
//!
//! Requests are sent with `timeout_ms` = [`UmadConfig::response_timeout`] and `retries = 0`,
//! responses with `timeout_ms = 0`. The kernel's ib_mad delivers a response only to a request
//! still waiting for it (`timeout_ms > 0`) and drops every other one, so a request sent with
//! `timeout_ms = 0` never sees its answer on a real kernel (ibsim's `libumad2sim.so` does not
//! care; `libibsm_umad.so` does, as the kernel). The SM core runs its own timers and resends
//! with the same TID, which the kernel refuses (`EINVAL`) while the first send still waits, so
//! the response timeout must be shorter than the core's: the kernel then reports the send
//! failed (status `ETIMEDOUT`) before the core resends. The kernel (and the shims) overwrite
//! the upper 32 bits of the TID with the agent id, so match responses on the low 32 bits. Received MADs whose header status is nonzero (a send the kernel or ibsim reports
//! as timed out / undeliverable, status 110) are not returned by [`MadPort::recv`]; they are
//! counted in [`PortStats::send_failures`] and visible through [`UmadPort::recv_timeout`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ibmad::{
    Gid, Grh, Lid, MadMeta, MadPort, Method, MgmtClass, PortCaps, PortError, PortNum, QKey,
};

use crate::abi::{HdrFraming, MethodMask, RegReq, RegReq2, UmadHdr, HDR_LEN_NEW, MAD_LEN};
use crate::error::{SysError, UmadError};
use crate::sys::uring::{UringEngine, UringStats};
use crate::sys::{self, Fd, FdKind};
use crate::sysfs::{find_device_by_guid_in, find_device_in, SysPaths, UmadDevice};
use ibmad::sa::SA_DATA_OFFSET;

/// How MADs are moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IoMode {
    /// io_uring if the fd is a kernel char device and a ring can be set up, else a receive
    /// thread there; [`IoMode::Inline`] under an LD_PRELOAD shim.
    #[default]
    Auto,
    /// A receive thread with `poll`/`read`; one `write` per send.
    Syscall,
    /// io_uring batches; fails to open if unavailable.
    Uring,
    /// No receive thread: `recv` reads on the caller's thread (`poll` + `read`), one `write`
    /// per send. What `Auto` picks under ibsim's `libumad2sim.so` and `libibsm_umad.so`, whose
    /// own relay thread already queues MADs: a second thread there only adds wake-ups (≈ 7
    /// futex calls per MAD).
    Inline,
}

/// What to open and how.
#[derive(Clone, Debug)]
pub struct UmadConfig {
    /// CA name; `None` = the first CA with a usable port.
    pub ca: Option<String>,
    /// Port number; `None` = the first ACTIVE (else LinkUp, else first) port.
    pub port: Option<u8>,
    /// The port with this port GUID (OpenSM's `-g`), whatever `ca` and `port` say; `None` =
    /// chosen by them.
    pub port_guid: Option<ibmad::Guid>,
    /// I/O mode.
    pub mode: IoMode,
    /// The agents to register: class, version, QP, unsolicited methods, RMPP.
    pub agents: Vec<AgentSpec>,
    /// The longest RMPP-reassembled MAD to accept from the kernel (agents with an RMPP
    /// version only; longer ones are read and dropped, counted in [`PortStats::oversize`]):
    /// the size of the receive buffers. Requests are short; see [`UmadConfig::max_send_len`]
    /// for what may be sent.
    pub max_mad_len: usize,
    /// The longest MAD to hand to the kernel's RMPP for sending (agents with an RMPP version
    /// only): an SA's GetTableResp. Sends are not buffered by this crate, so the limit costs
    /// nothing until a table that long is answered. At least [`UmadConfig::max_mad_len`] is
    /// used.
    pub max_send_len: usize,
    /// Try `REGISTER_AGENT2` (64-byte header) first.
    pub try_agent2: bool,
    /// Receive queue depth (channel capacity, or io_uring read slots).
    pub rx_depth: usize,
    /// io_uring send slots.
    pub tx_depth: usize,
    /// Where to discover devices (the real sysfs by default).
    pub paths: SysPaths,
    /// How long the kernel waits for the response to a request (its `timeout_ms`); keep it
    /// below the caller's own retry timer (see the module doc).
    pub response_timeout: Duration,
}

impl Default for UmadConfig {
    fn default() -> Self {
        UmadConfig {
            ca: None,
            port: None,
            port_guid: None,
            mode: IoMode::Auto,
            agents: vec![
                AgentSpec::smp(MgmtClass::SUBN_DIRECTED_ROUTE, MethodMask::SM),
                AgentSpec::smp(MgmtClass::SUBN_LID_ROUTED, MethodMask::SM),
            ],
            max_mad_len: DEFAULT_MAX_MAD_LEN,
            max_send_len: DEFAULT_MAX_SEND_LEN,
            try_agent2: true,
            rx_depth: 1024,
            tx_depth: 256,
            paths: SysPaths::default(),
            response_timeout: Duration::from_millis(100),
        }
    }
}

/// [`UmadConfig::max_mad_len`] by default: 16 MiB, an SA table of ~150 000 NodeRecords.
pub const DEFAULT_MAX_MAD_LEN: usize = 16 << 20;

/// [`UmadConfig::max_send_len`] by default: 256 MiB, an SA table of ~4 million PathRecords
/// (every ordered pair of ~2,000 end ports; a k16 fat tree's 1,024 CAs need 110 MiB).
pub const DEFAULT_MAX_SEND_LEN: usize = 256 << 20;

/// One agent to register with the kernel (`ib_user_mad_reg_req`): a management class and
/// version on QP0 or QP1, the request methods it receives unsolicited (responses to its own
/// requests always come back to it by TID) and its RMPP version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentSpec {
    /// Management class.
    pub class: MgmtClass,
    /// Class version.
    pub class_version: u8,
    /// 0 = QP0 (SMI, subnet-management classes), 1 = QP1 (GSI, every other class).
    pub qpn: u8,
    /// Request methods received unsolicited.
    pub method_mask: MethodMask,
    /// RMPP version: 1 lets the kernel segment and reassemble RMPP transfers of this agent
    /// (IBA vol1 §13.6); 0 for classes without RMPP.
    pub rmpp_version: u8,
}

impl AgentSpec {
    /// A QP0 agent for a subnet-management class (version 1, no RMPP).
    #[must_use]
    pub const fn smp(class: MgmtClass, method_mask: MethodMask) -> AgentSpec {
        AgentSpec {
            class,
            class_version: 1,
            qpn: 0,
            method_mask,
            rmpp_version: 0,
        }
    }
    /// A QP1 agent for a GMP class at `class_version`, with RMPP version 1 where the class
    /// uses RMPP ([`ibmad::gmp::class_uses_rmpp`]: SubnAdm).
    #[must_use]
    pub const fn gsi(class: MgmtClass, class_version: u8, method_mask: MethodMask) -> AgentSpec {
        AgentSpec {
            class,
            class_version,
            qpn: 1,
            method_mask,
            rmpp_version: if ibmad::gmp::class_uses_rmpp(class) {
                1
            } else {
                0
            },
        }
    }
    /// The SA class agent of a master SM: SubnAdm version 2 on QP1 with RMPP, receiving the
    /// requests an SA serves ([`MethodMask::SA`]).
    #[must_use]
    pub const fn sa() -> AgentSpec {
        AgentSpec::gsi(MgmtClass::SUBN_ADM, 2, MethodMask::SA)
    }
}

/// Counters shared with the receive thread.
#[derive(Debug, Default)]
pub struct PortStats {
    /// MADs written.
    pub sent: AtomicU64,
    /// MADs received with status 0.
    pub received: AtomicU64,
    /// Received headers with a nonzero status (timed-out / undeliverable sends).
    pub send_failures: AtomicU64,
    /// Reads too short to hold a header.
    pub runts: AtomicU64,
    /// RMPP-reassembled MADs longer than [`UmadConfig::max_mad_len`], read and dropped.
    pub oversize: AtomicU64,
}

/// One received MAD with its full user_mad header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Addressing metadata.
    pub meta: MadMeta,
    /// MAD bytes copied into the caller's buffer.
    pub len: usize,
    /// The header status (0, or an errno such as 110 ETIMEDOUT for a failed send).
    pub status: u32,
    /// The agent id the MAD was delivered to.
    pub agent: u32,
}

/// A registered agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agent {
    /// Management class.
    pub class: MgmtClass,
    /// Kernel agent id.
    pub id: u32,
    /// 0 = QP0, 1 = QP1.
    pub qpn: u8,
    /// RMPP version it was registered with (0 = none).
    pub rmpp_version: u8,
}

impl Agent {
    /// The agent registered for `spec` under kernel id `id`.
    #[must_use]
    pub fn registered(spec: &AgentSpec, id: u32) -> Agent {
        Agent {
            class: spec.class,
            id,
            qpn: spec.qpn,
            rmpp_version: spec.rmpp_version,
        }
    }
}

struct RxMad {
    hdr: UmadHdr,
    len: usize,
    mad: [u8; MAD_LEN],
    /// The whole MAD when it is longer than 256 bytes (RMPP reassembled by the kernel).
    long: Option<Vec<u8>>,
}

impl RxMad {
    fn bytes(&self) -> &[u8] {
        match &self.long {
            Some(v) => v,
            None => &self.mad[..self.len.min(MAD_LEN)],
        }
    }
}

enum RxMsg {
    Mad(Box<RxMad>),
    Failed(SysError),
}

struct RxThread {
    rx: Receiver<RxMsg>,
    stop: Arc<AtomicBool>,
    /// Write end of the pipe the thread polls beside the device: a byte ends its wait at once.
    wake: Fd,
    handle: Option<JoinHandle<()>>,
}

enum Backend {
    Thread(RxThread),
    Uring(Box<UringEngine>),
    Inline,
}

/// An open user_mad port with its agents. Dropping it stops the receive thread, unregisters
/// the agents, clears IsSM (if set) and closes the device.
pub struct UmadPort {
    dev: UmadDevice,
    framing: HdrFraming,
    agents: Vec<Agent>,
    max_mad_len: usize,
    /// The longest MAD `send` hands to the kernel's RMPP.
    max_send_len: usize,
    /// A received MAD the caller's buffer was too short for, returned by the next receive.
    pending: Option<Box<RxMad>>,
    /// Growable buffer for RMPP-reassembled MADs read on this thread.
    big: Vec<u8>,
    backend: Backend,
    stats: Arc<PortStats>,
    tx: Vec<u8>,
    rx: Vec<u8>,
    issm: Option<Fd>,
    fd: Arc<Fd>,
    /// What the descriptor is (fstat once at open: `send` asks on every MAD).
    kind: Option<FdKind>,
    response_timeout_ms: u32,
}

fn os_to_port(e: &SysError) -> PortError {
    match e.errno() {
        Some(libc::ENODEV | libc::EBADF | libc::EPIPE | libc::ECONNRESET) => PortError::Closed,
        _ => PortError::Other(format!("{e}: {}", e.source)),
    }
}

/// The [`MadMeta`] of a received MAD: the header's remote LID is the SLID, its QP the source
/// QP, its path bits the DLID path bits it arrived on, its GID the source GID.
fn meta_of(port: PortNum, hdr: &UmadHdr, mad: &[u8]) -> MadMeta {
    let dr = mad.get(1) == Some(&MgmtClass::SUBN_DIRECTED_ROUTE.0);
    MadMeta {
        port,
        slid: Lid(hdr.lid),
        dlid: if dr { Lid::PERMISSIVE } else { Lid::UNASSIGNED },
        qp: hdr.qpn,
        qkey: QKey(hdr.qkey),
        pkey_index: hdr.pkey_index,
        sl: hdr.sl,
        path_bits: hdr.path_bits,
        grh: hdr.grh_present.then_some(Grh {
            gid: Gid(hdr.gid),
            gid_index: hdr.gid_index,
            hop_limit: hdr.hop_limit,
            traffic_class: hdr.traffic_class,
            flow_label: hdr.flow_label,
        }),
    }
}

/// The address part of the user_mad header for sending with `meta` to `lid`: remote QP and
/// Q_Key (the GSI key on a QP other than 0 when `meta` names none), SL, source path bits,
/// P_Key index (64-byte framing only) and the GRH.
fn addr_of(meta: &MadMeta, lid: u16) -> UmadHdr {
    let qkey = match (meta.qp, meta.qkey) {
        (0, _) => 0,
        (_, QKey(0)) => QKey::GSI.0,
        (_, k) => k.0,
    };
    let grh = meta.grh.unwrap_or_default();
    UmadHdr {
        qpn: meta.qp,
        qkey,
        lid,
        sl: meta.sl,
        path_bits: meta.path_bits,
        grh_present: meta.grh.is_some(),
        gid_index: grh.gid_index,
        hop_limit: grh.hop_limit,
        traffic_class: grh.traffic_class,
        gid: grh.gid.0,
        flow_label: grh.flow_label,
        pkey_index: meta.pkey_index,
        ..UmadHdr::default()
    }
}

impl UmadPort {
    /// Discovers and opens the port described by `cfg`.
    ///
    /// # Errors
    /// Discovery errors ([`UmadError::NoIbDevice`], [`UmadError::CaNotFound`],
    /// [`UmadError::PortNotFound`], [`UmadError::PortGuidNotFound`]), [`UmadError::PermissionDenied`],
    /// [`UmadError::RegistrationRefused`], [`UmadError::UringUnavailable`] (explicit io_uring).
    pub fn open(cfg: &UmadConfig) -> Result<UmadPort, UmadError> {
        let dev = match cfg.port_guid {
            Some(g) => find_device_by_guid_in(&cfg.paths, g)?,
            None => find_device_in(&cfg.paths, cfg.ca.as_deref(), cfg.port)?,
        };
        Self::open_device(dev, cfg)
    }

    /// Opens an already discovered device.
    ///
    /// # Errors
    /// As [`UmadPort::open`], minus discovery.
    pub fn open_device(dev: UmadDevice, cfg: &UmadConfig) -> Result<UmadPort, UmadError> {
        let fd = sys::open(&dev.umad_path, libc::O_RDWR | libc::O_NONBLOCK).map_err(|e| match e
            .errno()
        {
            Some(libc::EACCES | libc::EPERM) => UmadError::PermissionDenied {
                path: dev.umad_path.clone(),
                source: e,
            },
            _ => UmadError::Sys(e),
        })?;
        let (framing, agents) = register(&fd, cfg)?;
        Self::with_registered(dev, fd, framing, agents, cfg)
    }

    fn with_registered(
        dev: UmadDevice,
        fd: Fd,
        framing: HdrFraming,
        agents: Vec<Agent>,
        cfg: &UmadConfig,
    ) -> Result<UmadPort, UmadError> {
        let fd = Arc::new(fd);
        let stats = Arc::new(PortStats::default());
        let rec = framing.hdr_len() + MAD_LEN;
        let kind = sys::kernel_fd_kind(fd.raw());
        let want_uring = match cfg.mode {
            IoMode::Syscall | IoMode::Inline => false,
            // A socket will do when asked explicitly (tests use socketpairs); not an
            // LD_PRELOAD shim's descriptor, whose reads io_uring would bypass.
            IoMode::Uring => matches!(kind, Some(FdKind::CharDev | FdKind::Socket)),
            IoMode::Auto => kind == Some(FdKind::CharDev),
        };
        // Auto reads on the caller's thread where the descriptor is not the kernel's device:
        // umad2sim's fake descriptors (fstat fails) and libibsm_umad.so's eventfds, whose own
        // engine thread already queues the MADs — a receive thread there only adds a thread
        // hop (a wake-up, a channel and ≈ 3 futex calls) to every MAD.
        let auto_inline = matches!(kind, None | Some(FdKind::Other));
        let backend = if want_uring {
            match UringEngine::new(
                fd.raw(),
                rec,
                cfg.rx_depth.min(4096),
                cfg.tx_depth.min(4096),
            ) {
                Ok(e) => Backend::Uring(Box::new(e)),
                Err(e) if cfg.mode == IoMode::Uring => {
                    return Err(UmadError::UringUnavailable {
                        reason: format!("{e}: {}", e.source),
                    })
                }
                Err(_) => spawn_rx(&fd, dev.port, framing, cfg, &stats)?,
            }
        } else if cfg.mode == IoMode::Uring {
            let what = if kind.is_none() {
                "is not a kernel file descriptor (ibsim's umad2sim fake fd?)"
            } else {
                "is not the kernel's character device (an LD_PRELOAD shim such as libibsm_umad.so, whose read/write io_uring would bypass?)"
            };
            return Err(UmadError::UringUnavailable {
                reason: format!("{} {what}", fd.what()),
            });
        } else if cfg.mode == IoMode::Inline || (cfg.mode == IoMode::Auto && auto_inline) {
            Backend::Inline
        } else {
            spawn_rx(&fd, dev.port, framing, cfg, &stats)?
        };
        Ok(UmadPort {
            dev,
            framing,
            agents,
            max_mad_len: cfg.max_mad_len.max(MAD_LEN),
            max_send_len: cfg.max_send_len.max(cfg.max_mad_len).max(MAD_LEN),
            pending: None,
            big: Vec::new(),
            backend,
            stats,
            tx: vec![0; rec],
            rx: vec![0; rec],
            issm: None,
            fd,
            kind,
            response_timeout_ms: u32::try_from(cfg.response_timeout.as_millis())
                .unwrap_or(u32::MAX)
                .max(1),
        })
    }

    /// The device this port was opened on.
    #[must_use]
    pub fn device(&self) -> &UmadDevice {
        &self.dev
    }
    /// The header framing negotiated with the kernel (56 or 64 bytes).
    #[must_use]
    pub fn framing(&self) -> HdrFraming {
        self.framing
    }
    /// The registered agents.
    #[must_use]
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }
    /// True when the device is a real kernel character device; false under an LD_PRELOAD shim
    /// (ibsim's `libumad2sim.so`, whose descriptors are fake, or `libibsm_umad.so`, whose are
    /// eventfds) and for test sockets.
    #[must_use]
    pub fn is_kernel_device(&self) -> bool {
        self.kind == Some(FdKind::CharDev)
    }
    /// The longest MAD `recv` returns: the receive buffer a caller needs
    /// ([`UmadConfig::max_mad_len`] where the port does RMPP, else 256 bytes). The port's
    /// [`PortCaps::max_mad_len`] is the longest MAD it sends, which may be more.
    #[must_use]
    pub fn max_recv_len(&self) -> usize {
        if self.caps().rmpp {
            self.max_mad_len
        } else {
            MAD_LEN
        }
    }
    /// Which I/O mode is in use (never [`IoMode::Auto`]).
    #[must_use]
    pub fn mode(&self) -> IoMode {
        match self.backend {
            Backend::Thread(_) => IoMode::Syscall,
            Backend::Uring(_) => IoMode::Uring,
            Backend::Inline => IoMode::Inline,
        }
    }
    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &PortStats {
        &self.stats
    }
    /// io_uring counters (`None` in syscall mode).
    #[must_use]
    pub fn uring_stats(&self) -> Option<UringStats> {
        match &self.backend {
            Backend::Uring(e) => Some(e.stats()),
            Backend::Thread(_) | Backend::Inline => None,
        }
    }

    /// Sets (opens `/dev/infiniband/issmN`) or clears (closes it) the port's IsSM capability bit.
    ///
    /// # Errors
    /// [`UmadError::PermissionDenied`] or the failed `open`.
    pub fn set_issm(&mut self, on: bool) -> Result<(), UmadError> {
        if !on {
            self.issm = None;
            return Ok(());
        }
        if self.issm.is_none() {
            let fd = sys::open(&self.dev.issm_path, libc::O_RDWR).map_err(|e| match e.errno() {
                Some(libc::EACCES | libc::EPERM) => UmadError::PermissionDenied {
                    path: self.dev.issm_path.clone(),
                    source: e,
                },
                _ => UmadError::Sys(e),
            })?;
            self.issm = Some(fd);
        }
        Ok(())
    }
    /// True while IsSM is held.
    #[must_use]
    pub fn is_sm(&self) -> bool {
        self.issm.is_some()
    }

    /// Submits queued io_uring sends now (no-op in syscall mode).
    ///
    /// # Errors
    /// The failed `io_uring_enter`.
    pub fn flush(&mut self) -> Result<(), PortError> {
        if let Backend::Uring(e) = &mut self.backend {
            e.pump(None).map_err(|e| os_to_port(&e))?;
        }
        Ok(())
    }

    /// Receives one MAD with its header status, waiting up to `timeout` (`None` = don't wait).
    /// Unlike [`MadPort::recv`] this also returns failed-send reports (`status != 0`).
    ///
    /// A MAD longer than 256 bytes (RMPP reassembled by the kernel) that does not fit `buf` is
    /// kept and [`PortError::BadLength`] names the length needed; the next call returns it.
    ///
    /// # Errors
    /// [`PortError::Closed`] when the receive side has stopped; OS errors.
    pub fn recv_timeout(
        &mut self,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> Result<Option<Received>, PortError> {
        let port = self.dev.port;
        if let Some(m) = self.pending.take() {
            return hand_over(port, &m.hdr, m.bytes(), buf, &mut self.pending).map(Some);
        }
        let hl = self.framing.hdr_len();
        let framing = self.framing;
        let max = self.max_mad_len;
        let fd = self.fd.raw();
        match &mut self.backend {
            Backend::Thread(t) => {
                let msg = match timeout {
                    None => match t.rx.try_recv() {
                        Ok(m) => m,
                        Err(TryRecvError::Empty) => return Ok(None),
                        Err(TryRecvError::Disconnected) => return Err(PortError::Closed),
                    },
                    Some(d) => match t.rx.recv_timeout(d) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => return Ok(None),
                        Err(RecvTimeoutError::Disconnected) => return Err(PortError::Closed),
                    },
                };
                match msg {
                    RxMsg::Failed(e) => Err(os_to_port(&e)),
                    RxMsg::Mad(m) => {
                        hand_over(port, &m.hdr, m.bytes(), buf, &mut self.pending).map(Some)
                    }
                }
            }
            Backend::Inline => {
                let deadline = timeout.map(|d| std::time::Instant::now() + d);
                loop {
                    let got = read_record(
                        &mut |b| sys::read(fd, b),
                        framing,
                        &mut self.rx,
                        &mut self.big,
                    )
                    .map_err(|e| os_to_port(&e))?;
                    let Some(rec) = got else {
                        let Some(dl) = deadline else {
                            return Ok(None);
                        };
                        let left = dl.saturating_duration_since(std::time::Instant::now());
                        if left.is_zero() {
                            return Ok(None);
                        }
                        let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
                        // Readable or not, the loop reads again; the deadline bounds it.
                        let _ = sys::poll_in(fd, ms).map_err(|e| os_to_port(&e))?;
                        continue;
                    };
                    let Some((hdr, mad)) =
                        record_mad(rec, framing, &self.rx, &self.big, max, &self.stats)
                    else {
                        continue;
                    };
                    count_rx(&self.stats, hdr.status);
                    return hand_over(port, &hdr, mad, buf, &mut self.pending).map(Some);
                }
            }
            Backend::Uring(e) => {
                if let Some(err) = e.take_error() {
                    return Err(os_to_port(&err));
                }
                let deadline = timeout.map(|d| std::time::Instant::now() + d);
                loop {
                    if e.take_oversize() {
                        // An RMPP-reassembled MAD too long for the ring's slots is waiting in
                        // the kernel's queue: read it here with a buffer of its length.
                        if let Some(rec) = read_record(
                            &mut |b| sys::read(fd, b),
                            framing,
                            &mut self.rx,
                            &mut self.big,
                        )
                        .map_err(|e| os_to_port(&e))?
                        {
                            if let Some((hdr, mad)) =
                                record_mad(rec, framing, &self.rx, &self.big, max, &self.stats)
                            {
                                count_rx(&self.stats, hdr.status);
                                return hand_over(port, &hdr, mad, buf, &mut self.pending)
                                    .map(Some);
                            }
                        }
                    }
                    if !e.has_ready() {
                        // A pump may only re-arm the poll or queue reads: keep waiting until a
                        // record is ready or the deadline passes (bounded by the deadline).
                        match deadline {
                            None => e.pump(None).map_err(|e| os_to_port(&e))?,
                            Some(dl) => loop {
                                let left = dl.saturating_duration_since(std::time::Instant::now());
                                e.pump(Some(left)).map_err(|e| os_to_port(&e))?;
                                if e.has_ready() || e.oversize_waiting() || left.is_zero() {
                                    break;
                                }
                            },
                        }
                        if e.oversize_waiting() {
                            continue;
                        }
                    }
                    let Some(n) = e.take(&mut self.rx).map_err(|e| os_to_port(&e))? else {
                        return Ok(None);
                    };
                    if n < hl {
                        self.stats.runts.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let Ok(hdr) = UmadHdr::decode(self.framing, &self.rx) else {
                        continue;
                    };
                    let mad = &self.rx[hl..n.min(self.rx.len())];
                    count_rx(&self.stats, hdr.status);
                    return hand_over(port, &hdr, mad, buf, &mut self.pending).map(Some);
                }
            }
        }
    }

    /// Like [`MadPort::recv`] but waits up to `timeout` for a MAD (skipping failed-send reports).
    ///
    /// # Errors
    /// As [`UmadPort::recv_timeout`].
    pub fn recv_wait(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Option<(MadMeta, usize)>, PortError> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.recv_timeout(buf, Some(left))? {
                Some(r) if r.status == 0 => return Ok(Some((r.meta, r.len))),
                Some(_) if !left.is_zero() => continue,
                _ => return Ok(None),
            }
        }
    }
}

/// Copies a received MAD into the caller's buffer. A 256-byte MAD is truncated to a shorter
/// buffer (as before RMPP); a longer one that does not fit is kept in `pending` for the next
/// receive and reported as [`PortError::BadLength`].
fn hand_over(
    port: PortNum,
    hdr: &UmadHdr,
    mad: &[u8],
    buf: &mut [u8],
    pending: &mut Option<Box<RxMad>>,
) -> Result<Received, PortError> {
    if mad.len() > MAD_LEN && mad.len() > buf.len() {
        *pending = Some(Box::new(RxMad {
            hdr: *hdr,
            len: mad.len(),
            mad: [0; MAD_LEN],
            long: Some(mad.to_vec()),
        }));
        return Err(PortError::BadLength {
            len: buf.len(),
            expected: mad.len(),
        });
    }
    let n = mad.len().min(buf.len());
    buf[..n].copy_from_slice(&mad[..n]);
    Ok(Received {
        meta: meta_of(port, hdr, mad),
        len: n,
        status: hdr.status,
        agent: hdr.id,
    })
}

/// Where [`read_record`] put a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    /// `n` bytes in the regular (header + 256) buffer.
    Small(usize),
    /// `n` bytes in the growable buffer: an RMPP-reassembled MAD.
    Big(usize),
}

/// Reads one record (header + MAD) with `read`: into `small` normally; when the kernel answers
/// ENOSPC — an RMPP-reassembled MAD longer than `small`, which it leaves queued after copying
/// its header (with the full length) into `small` — grows `big` to that length and reads
/// again. Bounded: a few retries if another record got in between.
fn read_record(
    read: &mut impl FnMut(&mut [u8]) -> Result<Option<usize>, SysError>,
    framing: HdrFraming,
    small: &mut [u8],
    big: &mut Vec<u8>,
) -> Result<Option<Record>, SysError> {
    let e = match read(small) {
        Ok(Some(n)) => return Ok(Some(Record::Small(n))),
        Ok(None) => return Ok(None),
        Err(e) if e.errno() == Some(libc::ENOSPC) => e,
        Err(e) => return Err(e),
    };
    let mut last = e;
    for _ in 0..4 {
        let need = match UmadHdr::decode(framing, small) {
            Ok(h) => usize::try_from(h.length).unwrap_or(usize::MAX),
            Err(_) => return Err(last),
        };
        let need = need.max(framing.hdr_len() + MAD_LEN).max(big.len());
        big.resize(need, 0);
        match read(big) {
            Ok(Some(n)) => return Ok(Some(Record::Big(n))),
            Ok(None) => return Ok(None),
            Err(e) if e.errno() == Some(libc::ENOSPC) => {
                // Still too short: the header the kernel copied is in `big` now.
                let hl = framing.hdr_len();
                small[..hl].copy_from_slice(&big[..hl]);
                last = e;
            }
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The header and MAD bytes of a record, or `None` for a runt, an undecodable header or an
/// oversize MAD (counted).
fn record_mad<'a>(
    rec: Record,
    framing: HdrFraming,
    small: &'a [u8],
    big: &'a [u8],
    max: usize,
    stats: &PortStats,
) -> Option<(UmadHdr, &'a [u8])> {
    let (b, n) = match rec {
        Record::Small(n) => (small, n),
        Record::Big(n) => (big, n),
    };
    let hl = framing.hdr_len();
    if n < hl {
        stats.runts.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let hdr = UmadHdr::decode(framing, b).ok()?;
    let mad = b.get(hl..n.min(b.len()))?;
    if mad.len() > max {
        stats.oversize.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    Some((hdr, mad))
}

fn count_rx(stats: &PortStats, status: u32) {
    if status == 0 {
        stats.received.fetch_add(1, Ordering::Relaxed);
    } else {
        stats.send_failures.fetch_add(1, Ordering::Relaxed);
    }
}

impl MadPort for UmadPort {
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        let class = mad.get(1).copied().unwrap_or(0);
        let agent = self.agents.iter().find(|a| a.class.0 == class).copied();
        let kernel_rmpp = agent.is_some_and(|a| a.rmpp_version != 0) && self.caps().rmpp;
        // A message with RMPPFlags.Active through an RMPP agent is as long as its data (the
        // kernel pads the last segment; the receiver learns the length from PayloadLength):
        // at least the SA header. Any other MAD shorter than 256 bytes is refused for its
        // length before anything else.
        let rmpp_message = kernel_rmpp
            && mad.len() >= SA_DATA_OFFSET
            && mad.get(26).is_some_and(|f| f & 0x01 != 0);
        if mad.len() < MAD_LEN && !rmpp_message {
            return Err(PortError::BadLength {
                len: mad.len(),
                expected: MAD_LEN,
            });
        }
        let Some(agent) = agent else {
            return Err(PortError::Other(format!(
                "no agent registered for management class {class:#04x}"
            )));
        };
        // 256 bytes, or longer for an RMPP agent on a kernel that does the segmentation.
        let max = if kernel_rmpp {
            self.max_send_len
        } else {
            MAD_LEN
        };
        if mad.len() > max {
            return Err(PortError::BadLength {
                len: mad.len(),
                expected: max,
            });
        }
        let id = agent.id;
        let lid = if class == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            // Pure directed route: permissive DLID; a unicast DLID selects a LID-routed first
            // segment (DrSLID/DrDLID then describe the directed part).
            if meta.dlid.is_unicast() {
                meta.dlid.0
            } else {
                Lid::PERMISSIVE.0
            }
        } else if meta.dlid.is_unicast() || meta.dlid.is_permissive() {
            meta.dlid.0
        } else {
            return Err(PortError::Other(format!(
                "a LID-routed MAD needs a unicast or permissive DLID, got {:#06x}",
                meta.dlid.0
            )));
        };
        let hl = self.framing.hdr_len();
        let total = hl + mad.len();
        // A request (not a response, not TrapRepress) waits for its answer in the kernel.
        let request = mad[3] & Method::RESP_BIT == 0 && mad[3] != Method::TRAP_REPRESS.0;
        let hdr = UmadHdr {
            id,
            timeout_ms: if request { self.response_timeout_ms } else { 0 },
            length: u32::try_from(total).unwrap_or(u32::MAX),
            ..addr_of(meta, lid)
        };
        if self.tx.len() < total {
            self.tx.resize(total, 0);
        }
        hdr.encode(self.framing, &mut self.tx)
            .map_err(|e| PortError::Other(e.to_string()))?;
        self.tx[hl..total].copy_from_slice(mad);
        let long = total != hl + MAD_LEN;
        match &mut self.backend {
            Backend::Uring(e) if !long => match e.queue_send(&self.tx[..total]) {
                Ok(true) => {}
                Ok(false) => return Err(PortError::WouldBlock),
                Err(e) => return Err(os_to_port(&e)),
            },
            // The ring's send slots hold 256-byte MADs; a long (RMPP) send is one write.
            Backend::Thread(_) | Backend::Inline | Backend::Uring(_) => {
                match sys::write(self.fd.raw(), &self.tx[..total]) {
                    Ok(Some(_)) => {}
                    Ok(None) => return Err(PortError::WouldBlock),
                    Err(e) => return Err(os_to_port(&e)),
                }
            }
        }
        self.stats.sent.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// QP1 if a GSI agent is registered; RMPP (MADs up to [`UmadConfig::max_mad_len`]) if an
    /// agent has an RMPP version and the device does RMPP: the kernel's character device, or
    /// `libibsm_umad.so`, whose descriptors are eventfds (`FdKind::Other`). ibsim's shim
    /// (descriptors the kernel does not know) does no RMPP, nor do the tests' sockets.
    fn caps(&self) -> PortCaps {
        let does_rmpp = matches!(self.kind, Some(FdKind::CharDev | FdKind::Other));
        let rmpp = does_rmpp && self.agents.iter().any(|a| a.rmpp_version != 0);
        PortCaps {
            // What `send` takes; `recv` returns at most `max_mad_len` ≤ that
            // ([`UmadPort::max_recv_len`]).
            max_mad_len: if rmpp { self.max_send_len } else { MAD_LEN },
            rmpp,
            gmp: self.agents.iter().any(|a| a.qpn == 1),
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(MadMeta, usize)>, PortError> {
        // Bounded: at most the queued reports are skipped per call.
        for _ in 0..4096 {
            match self.recv_timeout(buf, None)? {
                Some(r) if r.status == 0 => return Ok(Some((r.meta, r.len))),
                Some(_) => continue,
                None => return Ok(None),
            }
        }
        Ok(None)
    }
}

impl Drop for UmadPort {
    fn drop(&mut self) {
        if let Backend::Thread(t) = &mut self.backend {
            t.stop.store(true, Ordering::Relaxed);
            // Wake the thread from its poll (a full pipe is already readable: ignore EAGAIN).
            let _ = sys::write(t.wake.raw(), &[1]);
            // Drop our end of the channel first: a thread blocked in `send` on a full channel
            // then fails instead of waiting forever for a consumer that is gone.
            drop(std::mem::replace(&mut t.rx, mpsc::sync_channel(1).1));
            if let Some(h) = t.handle.take() {
                let _ = h.join();
            }
        }
        // The io_uring engine (if any) is dropped with `backend`, after which the fd closes.
        for a in &self.agents {
            let _ = sys::unregister_agent(self.fd.raw(), a.id);
        }
        self.issm = None;
    }
}

/// Registers the agents of `cfg`: REGISTER_AGENT2 first (if enabled), else REGISTER_AGENT.
fn register(fd: &Fd, cfg: &UmadConfig) -> Result<(HdrFraming, Vec<Agent>), UmadError> {
    let mut framing = HdrFraming::Old;
    let mut agents = Vec::new();
    let mut use2 = cfg.try_agent2;
    for spec in &cfg.agents {
        let refused = |source| UmadError::RegistrationRefused {
            class: spec.class.0,
            qpn: spec.qpn,
            source,
        };
        if use2 {
            let mut r2 = RegReq2 {
                qpn: spec.qpn.into(),
                mgmt_class: spec.class.0,
                mgmt_class_version: spec.class_version,
                method_mask: spec.method_mask.as_u64s(),
                rmpp_version: spec.rmpp_version,
                ..RegReq2::default()
            };
            match sys::register_agent2(fd.raw(), &mut r2) {
                Ok(()) => {
                    framing = HdrFraming::New;
                    agents.push(Agent::registered(spec, r2.id));
                    continue;
                }
                // Not supported (old kernel: ENOTTY; umad2sim: EINVAL): use v1 from now on.
                Err(e)
                    if agents.is_empty()
                        && matches!(e.errno(), Some(libc::EINVAL | libc::ENOTTY)) =>
                {
                    use2 = false;
                }
                Err(e) => return Err(refused(e)),
            }
        }
        let mut r = RegReq {
            method_mask: spec.method_mask.as_u32s(),
            qpn: spec.qpn,
            mgmt_class: spec.class.0,
            mgmt_class_version: spec.class_version,
            rmpp_version: spec.rmpp_version,
            ..RegReq::default()
        };
        sys::register_agent(fd.raw(), &mut r).map_err(refused)?;
        agents.push(Agent::registered(spec, r.id));
    }
    debug_assert!(framing.hdr_len() <= HDR_LEN_NEW);
    Ok((framing, agents))
}

fn spawn_rx(
    fd: &Arc<Fd>,
    port: PortNum,
    framing: HdrFraming,
    cfg: &UmadConfig,
    stats: &Arc<PortStats>,
) -> Result<Backend, UmadError> {
    let (tx, rx) = mpsc::sync_channel(cfg.rx_depth.max(1));
    let max = cfg.max_mad_len.max(MAD_LEN);
    let stop = Arc::new(AtomicBool::new(false));
    let fd2 = Arc::clone(fd);
    let stop2 = Arc::clone(&stop);
    let stats2 = Arc::clone(stats);
    let (wake_rx, wake) = sys::pipe()?;
    let handle = std::thread::Builder::new()
        .name(format!("umad-rx-p{}", port.0))
        .spawn(move || rx_loop(&fd2, &wake_rx, framing, max, &tx, &stop2, &stats2))
        .map_err(UmadError::Thread)?;
    Ok(Backend::Thread(RxThread {
        rx,
        stop,
        wake,
        handle: Some(handle),
    }))
}

/// The receive thread: `poll` the device and the wake pipe (in 100 ms slices, a fallback: the
/// port's drop writes the pipe, so a stop is seen at once and closing a port costs no poll
/// slice) then drain with non-blocking `read`s into the channel. Exits on stop, on a closed
/// channel, or after reporting a read error.
fn rx_loop(
    fd: &Fd,
    wake: &Fd,
    framing: HdrFraming,
    max: usize,
    tx: &SyncSender<RxMsg>,
    stop: &AtomicBool,
    stats: &PortStats,
) {
    let hl = framing.hdr_len();
    let mut buf = vec![0u8; hl + MAD_LEN];
    let mut big = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match sys::poll_in_or_wake(fd.raw(), wake.raw(), 100) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(e) => {
                let _ = tx.send(RxMsg::Failed(e));
                return;
            }
        }
        loop {
            let rec =
                match read_record(&mut |b| sys::read(fd.raw(), b), framing, &mut buf, &mut big) {
                    Ok(Some(r)) => r,
                    Ok(None) => break,
                    Err(e) => {
                        let _ = tx.send(RxMsg::Failed(e));
                        return;
                    }
                };
            let Some((hdr, mad)) = record_mad(rec, framing, &buf, &big, max, stats) else {
                continue;
            };
            let len = mad.len();
            let mut m = Box::new(RxMad {
                hdr,
                len,
                mad: [0; MAD_LEN],
                long: (len > MAD_LEN).then(|| mad.to_vec()),
            });
            if len <= MAD_LEN {
                m.mad[..len].copy_from_slice(mad);
            }
            count_rx(stats, hdr.status);
            // Blocks when the consumer is behind: back-pressure instead of dropping.
            if tx.send(RxMsg::Mad(m)).is_err() {
                return;
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::socketpair_seqpacket;
    use ibmad::zerocopy::IntoBytes;
    use ibmad::{DrPath, Method, Smp, SmpAttrId};

    /// A GMP's addressing survives MadMeta → header → MadMeta (what a responder sees is what
    /// the requester's header said, with the remote fields in the same places).
    #[test]
    fn gmp_meta_maps_to_and_from_the_header() {
        let meta = MadMeta {
            port: PortNum(1),
            slid: Lid(1),
            dlid: Lid(9),
            qp: 1,
            qkey: QKey::GSI,
            pkey_index: 3,
            sl: 2,
            path_bits: 1,
            grh: Some(Grh {
                gid: Gid([0xfe; 16]),
                gid_index: 1,
                hop_limit: 64,
                traffic_class: 5,
                flow_label: 0x1234,
            }),
        };
        let h = addr_of(&meta, meta.dlid.0);
        assert_eq!(
            (h.qpn, h.qkey, h.lid, h.sl, h.path_bits),
            (1, 0x8001_0000, 9, 2, 1)
        );
        assert_eq!((h.pkey_index, h.grh_present, h.hop_limit), (3, true, 64));
        let mut b = [0u8; 64];
        h.encode(HdrFraming::New, &mut b).unwrap();
        let back = meta_of(
            PortNum(1),
            &UmadHdr::decode(HdrFraming::New, &b).unwrap(),
            &[1, 4],
        );
        assert_eq!(
            back,
            MadMeta {
                slid: Lid(9),
                dlid: Lid(0),
                ..meta
            }
        );
        // QP1 without a Q_Key gets the GSI key; QP0 never carries one.
        let bare = MadMeta::gmp(PortNum(1), Lid(1), Lid(2));
        assert_eq!(
            addr_of(
                &MadMeta {
                    qkey: QKey(0),
                    ..bare
                },
                2
            )
            .qkey,
            QKey::GSI.0
        );
        assert_eq!(addr_of(&MadMeta::smp_dr(PortNum(1)), 0xFFFF).qkey, 0);
        assert!(!addr_of(&bare, 2).grh_present);
    }

    /// The kernel answers a read too short for an RMPP-reassembled MAD with ENOSPC, leaving the
    /// MAD queued and its header (with the full length) in the buffer: umad re-reads it whole,
    /// drops one longer than `max_mad_len`, and keeps one the caller's buffer cannot hold.
    #[test]
    fn rmpp_reassembled_mads_are_read_whole() {
        let framing = HdrFraming::New;
        let hl = framing.hdr_len();
        let mut rec = vec![0u8; hl + 600];
        UmadHdr {
            id: 5,
            length: (hl + 600) as u32,
            qpn: 1,
            lid: 3,
            ..UmadHdr::default()
        }
        .encode(framing, &mut rec)
        .unwrap();
        for (i, b) in rec[hl..].iter_mut().enumerate() {
            *b = i as u8;
        }
        rec[hl + 1] = MgmtClass::SUBN_ADM.0;
        let mut queued = Some(rec.clone());
        let reads = std::cell::Cell::new(0);
        let mut read = |b: &mut [u8]| -> Result<Option<usize>, SysError> {
            reads.set(reads.get() + 1);
            let Some(r) = &queued else { return Ok(None) };
            if b.len() < r.len() {
                b[..hl].copy_from_slice(&r[..hl]);
                return Err(SysError {
                    op: "read",
                    target: "fake kernel".into(),
                    source: std::io::Error::from_raw_os_error(libc::ENOSPC),
                });
            }
            let n = r.len();
            b[..n].copy_from_slice(r);
            queued = None;
            Ok(Some(n))
        };
        let mut small = vec![0u8; hl + MAD_LEN];
        let mut big = Vec::new();
        let got = read_record(&mut read, framing, &mut small, &mut big)
            .unwrap()
            .unwrap();
        assert_eq!(got, Record::Big(hl + 600));
        assert_eq!(reads.get(), 2, "one short read, one whole");
        let stats = PortStats::default();
        let (hdr, mad) = record_mad(got, framing, &small, &big, 1 << 20, &stats).unwrap();
        assert_eq!((hdr.id, mad.len()), (5, 600));
        assert_eq!(mad, &rec[hl..]);
        assert!(record_mad(got, framing, &small, &big, 512, &stats).is_none());
        assert_eq!(stats.oversize.load(Ordering::Relaxed), 1);
        // A buffer too short for it: kept, and the length needed is named.
        let mut pending = None;
        let mut buf = [0u8; MAD_LEN];
        let e = hand_over(PortNum(1), &hdr, mad, &mut buf, &mut pending).unwrap_err();
        assert_eq!(
            e,
            PortError::BadLength {
                len: 256,
                expected: 600
            }
        );
        let m = pending.take().unwrap();
        let mut whole = vec![0u8; 1024];
        let r = hand_over(PortNum(1), &m.hdr, m.bytes(), &mut whole, &mut pending).unwrap();
        assert_eq!((r.len, r.meta.slid, r.meta.qp), (600, Lid(3), 1));
        assert_eq!(&whole[..600], &rec[hl..]);
        assert!(pending.is_none());
        // Nothing queued: nothing read.
        assert_eq!(
            read_record(&mut read, framing, &mut small, &mut big).unwrap(),
            None
        );
    }

    fn fake_dev() -> UmadDevice {
        UmadDevice {
            ca: "fake0".into(),
            port: PortNum(1),
            index: 0,
            umad_path: "socketpair".into(),
            issm_path: "/nonexistent/issm".into(),
        }
    }

    /// A "kernel" on the other end of a seqpacket pair: checks each written header and answers
    /// with a GetResp carrying the same TID, `lid` = 7.
    fn echo_kernel(peer: &Fd, framing: HdrFraming, n: usize) -> Vec<UmadHdr> {
        let hl = framing.hdr_len();
        let mut seen = Vec::new();
        let mut buf = vec![0u8; hl + MAD_LEN];
        let t0 = std::time::Instant::now();
        while seen.len() < n && t0.elapsed() < Duration::from_secs(5) {
            if !sys::poll_in(peer.raw(), 50).unwrap() {
                continue;
            }
            while let Some(got) = sys::read(peer.raw(), &mut buf).unwrap() {
                assert_eq!(got, hl + MAD_LEN);
                let h = UmadHdr::decode(framing, &buf).unwrap();
                seen.push(h);
                let mut reply = buf.clone();
                UmadHdr {
                    id: h.id,
                    lid: 7,
                    length: (hl + MAD_LEN) as u32,
                    ..UmadHdr::default()
                }
                .encode(framing, &mut reply)
                .unwrap();
                reply[hl + 3] = 0x81; // GetResp
                assert_eq!(sys::write(peer.raw(), &reply).unwrap(), Some(reply.len()));
            }
        }
        seen
    }

    fn roundtrip(mode: IoMode, framing: HdrFraming) {
        let (a, b) = socketpair_seqpacket().unwrap();
        let cfg = UmadConfig {
            mode,
            ..UmadConfig::default()
        };
        let agents = vec![
            Agent {
                class: MgmtClass::SUBN_DIRECTED_ROUTE,
                id: 4,
                qpn: 0,
                rmpp_version: 0,
            },
            Agent {
                class: MgmtClass::SUBN_LID_ROUTED,
                id: 5,
                qpn: 0,
                rmpp_version: 0,
            },
        ];
        let mut p = match UmadPort::with_registered(fake_dev(), a, framing, agents, &cfg) {
            Ok(p) => p,
            Err(UmadError::UringUnavailable { reason }) => {
                crate::testutil::report_skip("uring roundtrip", &reason);
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(p.mode(), mode);
        let path = DrPath::new(&[1, 3]).unwrap();
        let smp = Smp::dr_request(Method::GET, SmpAttrId::NODE_INFO, 0, 0x1234, &path);
        p.send(&MadMeta::default(), smp.as_bytes()).unwrap();
        let lr = Smp::lid_request(Method::GET, SmpAttrId::PORT_INFO, 1, 0x99);
        let meta = MadMeta {
            dlid: Lid(0x42),
            ..MadMeta::default()
        };
        p.send(&meta, lr.as_bytes()).unwrap();
        p.flush().unwrap();
        let seen = echo_kernel(&b, framing, 2);
        assert_eq!(seen.len(), 2);
        let dr = seen.iter().find(|h| h.id == 4).unwrap();
        assert_eq!(dr.lid, 0xFFFF);
        assert_eq!(
            (dr.qpn, dr.timeout_ms, dr.retries),
            (0, 100, 0),
            "requests wait 100 ms"
        );
        let lr_h = seen.iter().find(|h| h.id == 5).unwrap();
        assert_eq!(lr_h.lid, 0x42);
        let mut out = [0u8; 256];
        let mut tids = Vec::new();
        for _ in 0..2 {
            let (m, n) = p
                .recv_wait(&mut out, Duration::from_secs(5))
                .unwrap()
                .unwrap();
            assert_eq!(n, 256);
            assert_eq!(m.slid, Lid(7));
            assert_eq!(m.port, PortNum(1));
            assert_eq!(out[3], 0x81);
            tids.push(u64::from_be_bytes(out[8..16].try_into().unwrap()));
        }
        tids.sort_unstable();
        assert_eq!(tids, vec![0x99, 0x1234]);
        assert_eq!(p.stats().sent.load(Ordering::Relaxed), 2);
        assert_eq!(p.stats().received.load(Ordering::Relaxed), 2);
        assert!(p.recv(&mut out).unwrap().is_none());
    }

    #[test]
    fn syscall_mode_roundtrip_old_header() {
        roundtrip(IoMode::Syscall, HdrFraming::Old);
    }
    #[test]
    fn syscall_mode_roundtrip_new_header() {
        roundtrip(IoMode::Syscall, HdrFraming::New);
    }
    #[test]
    fn inline_mode_roundtrip_old_header() {
        roundtrip(IoMode::Inline, HdrFraming::Old);
    }
    #[test]
    fn inline_mode_roundtrip_new_header() {
        roundtrip(IoMode::Inline, HdrFraming::New);
    }
    #[test]
    fn uring_mode_roundtrip_new_header() {
        roundtrip(IoMode::Uring, HdrFraming::New);
    }
    #[test]
    fn uring_mode_roundtrip_old_header() {
        roundtrip(IoMode::Uring, HdrFraming::Old);
    }

    #[test]
    fn failed_send_reports_are_skipped_by_recv_but_counted() {
        let (a, b) = socketpair_seqpacket().unwrap();
        let agents = vec![Agent {
            class: MgmtClass::SUBN_DIRECTED_ROUTE,
            id: 0,
            qpn: 0,
            rmpp_version: 0,
        }];
        let cfg = UmadConfig {
            mode: IoMode::Syscall,
            ..UmadConfig::default()
        };
        let mut p =
            UmadPort::with_registered(fake_dev(), a, HdrFraming::Old, agents, &cfg).unwrap();
        let mut rec = vec![0u8; 56 + 256];
        UmadHdr {
            status: 110,
            ..UmadHdr::default()
        }
        .encode(HdrFraming::Old, &mut rec)
        .unwrap();
        rec[57] = 0x81;
        sys::write(b.raw(), &rec).unwrap();
        let mut out = [0u8; 256];
        let r = p
            .recv_timeout(&mut out, Some(Duration::from_secs(5)))
            .unwrap()
            .unwrap();
        assert_eq!(r.status, 110);
        assert_eq!(p.stats().send_failures.load(Ordering::Relaxed), 1);
        sys::write(b.raw(), &rec).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(p.recv(&mut out).unwrap().is_none());
        assert_eq!(p.stats().send_failures.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn send_rejects_bad_length_and_unregistered_class() {
        let (a, _b) = socketpair_seqpacket().unwrap();
        let agents = vec![Agent {
            class: MgmtClass::SUBN_DIRECTED_ROUTE,
            id: 0,
            qpn: 0,
            rmpp_version: 0,
        }];
        let cfg = UmadConfig {
            mode: IoMode::Syscall,
            ..UmadConfig::default()
        };
        let mut p =
            UmadPort::with_registered(fake_dev(), a, HdrFraming::Old, agents, &cfg).unwrap();
        assert_eq!(
            p.send(&MadMeta::default(), &[0; 100]),
            Err(PortError::BadLength {
                len: 100,
                expected: 256
            })
        );
        let lr = Smp::lid_request(Method::GET, SmpAttrId::PORT_INFO, 1, 0x99);
        let e = p.send(&MadMeta::default(), lr.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("0x01"), "{e}");
    }

    #[test]
    fn drop_does_not_hang_when_the_rx_channel_is_full() {
        let (a, b) = socketpair_seqpacket().unwrap();
        let cfg = UmadConfig {
            mode: IoMode::Syscall,
            rx_depth: 1,
            ..UmadConfig::default()
        };
        let p = UmadPort::with_registered(fake_dev(), a, HdrFraming::Old, vec![], &cfg).unwrap();
        let rec = vec![0u8; 56 + 256];
        for _ in 0..5 {
            sys::write(b.raw(), &rec).unwrap();
        }
        // Let the thread fill the 1-slot channel and block on the second send.
        let t0 = std::time::Instant::now();
        while p.stats().received.load(Ordering::Relaxed) < 2 && t0.elapsed().as_secs() < 5 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(p.stats().received.load(Ordering::Relaxed) >= 2);
        let t1 = std::time::Instant::now();
        drop(p);
        assert!(t1.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn registration_refused_names_class_and_keeps_errno() {
        // /dev/null rejects every umad ioctl with ENOTTY: REGISTER_AGENT2 first (falls back),
        // then REGISTER_AGENT, whose failure is reported.
        let null = sys::open("/dev/null", libc::O_RDWR).unwrap();
        let e = register(&null, &UmadConfig::default()).unwrap_err();
        match &e {
            UmadError::RegistrationRefused { class, qpn, source } => {
                assert_eq!((*class, *qpn), (0x81, 0));
                assert_eq!(source.op, "ioctl(IB_USER_MAD_REGISTER_AGENT)");
                assert_eq!(source.errno(), Some(libc::ENOTTY));
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("0x81"), "{e}");
        let cfg = UmadConfig {
            try_agent2: false,
            agents: vec![AgentSpec::smp(MgmtClass::SUBN_LID_ROUTED, MethodMask::SM)],
            ..UmadConfig::default()
        };
        let e = register(&null, &cfg).unwrap_err();
        assert!(matches!(
            e,
            UmadError::RegistrationRefused { class: 0x01, .. }
        ));
        // A GSI agent's failure names its class and QP 1.
        let cfg = UmadConfig {
            try_agent2: false,
            agents: vec![AgentSpec::sa()],
            ..UmadConfig::default()
        };
        let e = register(&null, &cfg).unwrap_err();
        assert!(matches!(
            e,
            UmadError::RegistrationRefused {
                class: 0x03,
                qpn: 1,
                ..
            }
        ));
        assert_eq!(
            (AgentSpec::sa().class_version, AgentSpec::sa().rmpp_version),
            (2, 1),
            "SubnAdm: version 2 with RMPP"
        );
        let pma = AgentSpec::gsi(MgmtClass::PERF_MGMT, 1, MethodMask::PMA);
        assert_eq!((pma.qpn, pma.rmpp_version), (1, 0), "PerfMgt: no RMPP");
    }

    #[test]
    fn lid_routed_send_needs_a_usable_dlid() {
        let (a, _b) = socketpair_seqpacket().unwrap();
        let agents = vec![Agent {
            class: MgmtClass::SUBN_LID_ROUTED,
            id: 0,
            qpn: 0,
            rmpp_version: 0,
        }];
        let cfg = UmadConfig {
            mode: IoMode::Syscall,
            ..UmadConfig::default()
        };
        let mut p =
            UmadPort::with_registered(fake_dev(), a, HdrFraming::Old, agents, &cfg).unwrap();
        let lr = Smp::lid_request(Method::GET, SmpAttrId::PORT_INFO, 1, 0x99);
        let e = p.send(&MadMeta::default(), lr.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("DLID"), "{e}");
        let meta = MadMeta {
            dlid: Lid(0xC001),
            ..MadMeta::default()
        };
        assert!(p.send(&meta, lr.as_bytes()).is_err());
        let meta = MadMeta {
            dlid: Lid::PERMISSIVE,
            ..MadMeta::default()
        };
        p.send(&meta, lr.as_bytes()).unwrap();
    }

    #[test]
    fn port_can_move_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<UmadPort>();
    }

    #[test]
    fn auto_mode_takes_syscalls_on_a_non_char_device() {
        let (a, _b) = socketpair_seqpacket().unwrap();
        let cfg = UmadConfig {
            mode: IoMode::Auto,
            ..UmadConfig::default()
        };
        let p = UmadPort::with_registered(fake_dev(), a, HdrFraming::Old, vec![], &cfg).unwrap();
        assert_eq!(p.mode(), IoMode::Syscall);
    }
}

//! The client side of ibsim's socket protocol (AF_UNIX abstract datagram sockets
//! `NAME:ctl<id>` and `NAME:in<id>`, see [`ibmad::ibsim`]): attach with a bounded retry, and
//! explain a refusal.
//!
//! [`SimClient::connect`] binds both sockets, waits (at most [`ClientConfig::connect_timeout`])
//! for the simulator's `NAME:ctl`, sends CONNECT and connects the data socket to `NAME:out<slot>`.
//! A CONNECT the simulator refuses is diagnosed with a second, throw-away CONNECT: if one
//! without a node name succeeds, the slots are not full and `SIM_HOST` names no node (or, for an
//! SM client, the node already has one); otherwise all client slots are taken. Every control
//! request has a reply timeout: nothing here can hang.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ibmad::ibsim::{ClientInfo, CtlType, SimCtl, CTL_LEN, MAX_CLIENTS, SIM_MAGIC};
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};

/// Where and how to attach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// `IBSIM_SOCKNAME` (default `sim`).
    pub sockname: String,
    /// `SIM_HOST`: node id or NodeDescription to attach to (`None` = the simulator's default).
    pub node: Option<String>,
    /// `SIM_SET_ISSM`: ask to be the node's SM at CONNECT.
    pub issm: bool,
    /// The `<id>` of our socket names (the pid).
    pub id: u32,
    /// The QP number registered at CONNECT (requests to it reach this client).
    pub qp: u32,
    /// How long to wait for the simulator to appear.
    pub connect_timeout: Duration,
    /// How long to wait for each control reply.
    pub ctl_timeout: Duration,
}

impl ClientConfig {
    /// From the environment ibsim's `libumad2sim.so` reads (`IBSIM_SOCKNAME`, `SIM_HOST`,
    /// `SIM_SET_ISSM`), plus `IBSM_UMAD_CONNECT_TIMEOUT` (seconds, default 10).
    ///
    /// # Errors
    /// [`ConnectError::RemoteMode`] when `IBSIM_SERVER_NAME` asks for ibsim's UDP mode;
    /// [`ConnectError::BadEnv`] for an unparsable timeout.
    pub fn from_env() -> Result<ClientConfig, ConnectError> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if let Some(host) = var("IBSIM_SERVER_NAME") {
            return Err(ConnectError::RemoteMode(host));
        }
        let connect_timeout = match var("IBSM_UMAD_CONNECT_TIMEOUT") {
            None => Duration::from_secs(10),
            Some(v) => match v.parse::<f64>() {
                Ok(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s),
                _ => {
                    return Err(ConnectError::BadEnv {
                        var: "IBSM_UMAD_CONNECT_TIMEOUT",
                        value: v,
                    })
                }
            },
        };
        let id = std::process::id();
        Ok(ClientConfig {
            sockname: var("IBSIM_SOCKNAME").unwrap_or_else(|| "sim".into()),
            node: var("SIM_HOST"),
            issm: std::env::var_os("SIM_SET_ISSM").is_some(),
            id,
            qp: own_qp(id),
            connect_timeout,
            ctl_timeout: Duration::from_secs(5),
        })
    }
}

/// The QP number a client with socket id `id` registers: nonzero, not 0/1, 24 bits, distinct
/// for distinct pids (pid_max is at most 2^22).
#[must_use]
pub fn own_qp(id: u32) -> u32 {
    0x80_0000 | (id & 0x7F_FFFF)
}

/// Why attaching failed. The `Display` text is what the shim prints on stderr.
#[derive(Debug)]
pub enum ConnectError {
    /// `IBSIM_SERVER_NAME` is set: ibsim's remote (UDP) mode is not supported.
    RemoteMode(String),
    /// An environment variable has a bad value.
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// Nothing listens on `NAME:ctl`.
    NoSimulator {
        /// `IBSIM_SOCKNAME`.
        sockname: String,
        /// How long we retried.
        waited: Duration,
    },
    /// `SIM_HOST` names no node of the fabric.
    UnknownNode {
        /// `IBSIM_SOCKNAME`.
        sockname: String,
        /// `SIM_HOST`.
        node: String,
    },
    /// All client slots are taken.
    SlotsFull {
        /// `IBSIM_SOCKNAME`.
        sockname: String,
    },
    /// `SIM_SET_ISSM` is set but the node already has an SM client.
    SmExists {
        /// The node (or "the default node").
        node: String,
    },
    /// A socket operation failed.
    Socket {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// The simulator did not answer a control request in time.
    NoReply {
        /// The request.
        what: String,
    },
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::RemoteMode(h) => write!(
                f,
                "IBSIM_SERVER_NAME={h}: ibsim's remote (UDP) mode is not supported; unset it and run on the simulator's host"
            ),
            ConnectError::BadEnv { var, value } => write!(f, "{var}={value:?}: expected a number of seconds"),
            ConnectError::NoSimulator { sockname, waited } => write!(
                f,
                "no simulator at IBSIM_SOCKNAME={sockname} (nothing listens on @{sockname}:ctl after {:.1} s): start ibsim or `ibsm sim serve` with the same IBSIM_SOCKNAME",
                waited.as_secs_f64()
            ),
            ConnectError::UnknownNode { sockname, node } => write!(
                f,
                "SIM_HOST={node} names no node of the fabric served at IBSIM_SOCKNAME={sockname} (use a node name or NodeDescription from its topology)"
            ),
            ConnectError::SlotsFull { sockname } => write!(
                f,
                "the simulator at IBSIM_SOCKNAME={sockname} refused the client: all {MAX_CLIENTS} client slots are taken"
            ),
            ConnectError::SmExists { node } => write!(
                f,
                "SIM_SET_ISSM is set but {node} already has an SM client"
            ),
            ConnectError::Socket { what, source } => write!(f, "{what}: {source}"),
            ConnectError::NoReply { what } => write!(f, "the simulator did not answer {what}"),
        }
    }
}

impl std::error::Error for ConnectError {}

/// Why a control request failed.
#[derive(Debug)]
pub enum CtlError {
    /// The simulator answered SIM_CTL_ERROR.
    Refused,
    /// No reply in time.
    Timeout,
    /// The socket failed.
    Io(io::Error),
}

impl std::fmt::Display for CtlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CtlError::Refused => f.write_str("refused"),
            CtlError::Timeout => f.write_str("no reply"),
            CtlError::Io(e) => write!(f, "{e}"),
        }
    }
}

fn name(sockname: &str, suffix: &str) -> io::Result<SocketAddr> {
    let mut b = format!("{sockname}:{suffix}").into_bytes();
    b.push(0);
    SocketAddr::from_abstract_name(b)
}

fn sock_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> ConnectError {
    let what = what.into();
    move |source| ConnectError::Socket { what, source }
}

/// One attached client: the control socket (requests are serialized) and the data socket.
#[derive(Debug)]
pub struct SimClient {
    ctl: Mutex<UnixDatagram>,
    data: UnixDatagram,
    slot: u32,
    node_id: String,
    ctl_timeout: Duration,
}

/// The two bound sockets of one client id.
struct Sockets {
    ctl: UnixDatagram,
    data: UnixDatagram,
    id: u32,
}

fn bind_pair(sockname: &str, mut id: u32) -> Result<Sockets, ConnectError> {
    for _ in 0..8 {
        let ctl_name = name(sockname, &format!("ctl{id}")).map_err(sock_err("socket name"))?;
        let ctl = match UnixDatagram::bind_addr(&ctl_name) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                id = id.wrapping_add(1 << 23);
                continue;
            }
            Err(e) => return Err(sock_err(format!("bind @{sockname}:ctl{id}"))(e)),
        };
        let data_name = name(sockname, &format!("in{id}")).map_err(sock_err("socket name"))?;
        let data = UnixDatagram::bind_addr(&data_name)
            .map_err(sock_err(format!("bind @{sockname}:in{id}")))?;
        return Ok(Sockets { ctl, data, id });
    }
    Err(ConnectError::Socket {
        what: format!("bind @{sockname}:ctl<id>"),
        source: io::Error::from(io::ErrorKind::AddrInUse),
    })
}

/// Sends one control request on `sock` and waits for its reply.
fn ctl_on(
    sock: &UnixDatagram,
    slot: u32,
    kind: CtlType,
    data: &[u8],
    timeout: Duration,
) -> Result<[u8; 64], CtlError> {
    let mut req = SimCtl::new_zeroed();
    req.magic.set(SIM_MAGIC);
    req.clientid.set(slot);
    req.ctl_type.set(kind.0);
    let n = data.len().min(64);
    req.len.set(n as u32);
    req.data[..n].copy_from_slice(&data[..n]);
    // Drop stale replies of an earlier request that timed out.
    let _ = sock.set_nonblocking(true);
    let mut junk = [0u8; 128];
    while sock.recv(&mut junk).is_ok() {}
    let _ = sock.set_nonblocking(false);
    sock.send(req.as_bytes()).map_err(CtlError::Io)?;
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 128];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(CtlError::Timeout);
        }
        sock.set_read_timeout(Some(left)).map_err(CtlError::Io)?;
        match sock.recv(&mut buf) {
            Ok(CTL_LEN) => {
                let Ok(rep) = SimCtl::read_from_bytes(&buf[..CTL_LEN]) else {
                    continue;
                };
                if rep.magic.get() != SIM_MAGIC {
                    continue;
                }
                if rep.kind() == CtlType::ERROR {
                    return Err(CtlError::Refused);
                }
                if rep.kind() == kind {
                    return Ok(rep.data);
                }
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(CtlError::Timeout)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(CtlError::Io(e)),
        }
    }
}

/// CONNECT on an already connected control socket: `Ok((slot, node id))`.
fn connect_ctl(
    s: &Sockets,
    node: Option<&str>,
    issm: bool,
    qp: u32,
    timeout: Duration,
) -> Result<(u32, String), CtlError> {
    let mut info = ClientInfo::new_zeroed();
    info.id.set(s.id);
    info.qp.set(qp);
    info.issm.set(u32::from(issm));
    info.set_node_id(node.unwrap_or(""));
    let rep = ctl_on(&s.ctl, 0, CtlType::CONNECT, info.as_bytes(), timeout)?;
    let Ok((back, _)) = ClientInfo::read_from_prefix(&rep[..]) else {
        return Err(CtlError::Refused);
    };
    Ok((back.id.get(), back.node_id()))
}

impl SimClient {
    /// Attaches to the simulator.
    ///
    /// # Errors
    /// [`ConnectError`] — each variant's message says what to do.
    pub fn connect(cfg: &ClientConfig) -> Result<SimClient, ConnectError> {
        let s = bind_pair(&cfg.sockname, cfg.id)?;
        let server = name(&cfg.sockname, "ctl").map_err(sock_err("socket name"))?;
        let start = Instant::now();
        loop {
            match s.ctl.connect_addr(&server) {
                Ok(()) => break,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ECONNREFUSED | libc::ENOENT | libc::EAGAIN)
                    ) =>
                {
                    if start.elapsed() >= cfg.connect_timeout {
                        return Err(ConnectError::NoSimulator {
                            sockname: cfg.sockname.clone(),
                            waited: start.elapsed(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(sock_err(format!("connect @{}:ctl", cfg.sockname))(e)),
            }
        }
        let (slot, node_id) =
            match connect_ctl(&s, cfg.node.as_deref(), cfg.issm, cfg.qp, cfg.ctl_timeout) {
                Ok(r) => r,
                Err(CtlError::Refused) => return Err(diagnose(cfg, &server)),
                Err(CtlError::Timeout) => {
                    return Err(ConnectError::NoReply {
                        what: "CONNECT".into(),
                    })
                }
                Err(CtlError::Io(e)) => return Err(sock_err("CONNECT")(e)),
            };
        let out = name(&cfg.sockname, &format!("out{slot}")).map_err(sock_err("socket name"))?;
        let mut tries = 0;
        loop {
            match s.data.connect_addr(&out) {
                Ok(()) => break,
                Err(e) if tries < 20 && e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(sock_err(format!("connect @{}:out{slot}", cfg.sockname))(e)),
            }
        }
        Ok(SimClient {
            ctl: Mutex::new(s.ctl),
            data: s.data,
            slot,
            node_id,
            ctl_timeout: cfg.ctl_timeout,
        })
    }

    /// The client slot the simulator gave us.
    #[must_use]
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The node id we are attached to.
    #[must_use]
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The data socket (288-byte frames).
    #[must_use]
    pub fn data(&self) -> &UnixDatagram {
        &self.data
    }

    /// One control request; returns the 64-byte reply payload.
    ///
    /// # Errors
    /// [`CtlError`].
    pub fn ctl(&self, kind: CtlType, data: &[u8]) -> Result<[u8; 64], CtlError> {
        let sock = self
            .ctl
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ctl_on(&sock, self.slot, kind, data, self.ctl_timeout)
    }

    /// Detaches (best effort, short timeout: used at exit).
    pub fn disconnect(&self) {
        if let Ok(sock) = self.ctl.try_lock() {
            let _ = ctl_on(
                &sock,
                self.slot,
                CtlType::DISCONNECT,
                &[],
                Duration::from_millis(500),
            );
        }
    }
}

/// Tells why CONNECT was refused, with throw-away probes that are detached again.
fn diagnose(cfg: &ClientConfig, server: &SocketAddr) -> ConnectError {
    let probe = |node: Option<&str>| -> Option<bool> {
        let s = bind_pair(&cfg.sockname, cfg.id | 0x4000_0000).ok()?;
        s.ctl.connect_addr(server).ok()?;
        match connect_ctl(&s, node, false, 0, cfg.ctl_timeout) {
            Ok((slot, _)) => {
                let _ = ctl_on(&s.ctl, slot, CtlType::DISCONNECT, &[], cfg.ctl_timeout);
                Some(true)
            }
            Err(CtlError::Refused) => Some(false),
            Err(_) => None,
        }
    };
    let sockname = cfg.sockname.clone();
    match probe(None) {
        Some(false) => ConnectError::SlotsFull { sockname },
        None => ConnectError::NoReply {
            what: "CONNECT".into(),
        },
        Some(true) => match &cfg.node {
            None => ConnectError::SmExists {
                node: "the default node".into(),
            },
            Some(node) => match probe(Some(node)) {
                Some(true) if cfg.issm => ConnectError::SmExists { node: node.clone() },
                Some(false) => ConnectError::UnknownNode {
                    sockname,
                    node: node.clone(),
                },
                _ => ConnectError::NoReply {
                    what: "CONNECT".into(),
                },
            },
        },
    }
}

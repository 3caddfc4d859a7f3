//! # An ibsim-compatible server in front of a [`Fabric`]
//!
//! [`IbsimServer`] speaks the server side of ibsim's client protocol (ibsim 0.10–0.12; the
//! wire format is in [`wire`] and `shared/reference/ibsim-protocol.md`), so that stock programs
//! run under `LD_PRELOAD=libumad2sim.so` — OpenSM, `ibnetdiscover`, `smpquery`, `ibroute`,
//! `dump_fts`, … — manage and query a simulated fabric whose every node runs our
//! [`sma::Agent`].
//!
//! This module is the simulator's I/O shell: it owns sockets, threads and the wall clock; the
//! fabric and its agents stay deterministic and sans-IO.
//!
//! ## Sockets
//! Datagram `AF_UNIX` sockets in the abstract namespace, named exactly as ibsim names them
//! (`"\0NAME:ctl\0"`, `"\0NAME:out0\0"` … `"\0NAME:out9\0"`, the trailing NUL included). One
//! thread per socket blocks in `recv` and hands datagrams to the caller's thread through a
//! channel; everything else — control replies, fabric work, sends — happens on the thread that
//! calls [`IbsimServer::poll`] or [`IbsimServer::run`].
//!
//! ## Clients and attachments
//! `CONNECT` gives a client one of the 10 slots and attaches it to a node: the `nodeid` names
//! it by topology name, NodeDescription or `0x`NodeGUID; empty = the first node of the
//! topology. A client runs on the node's port 0 if it is a switch, else on its first cabled
//! port (ibsim: "the first port"). All clients on one node/port share **one**
//! [`Fabric::attach_sm`] attachment, created at the first `CONNECT` there and kept for the
//! server's life; as in ibsim, responses are told apart by the TID's top 16 bits, which the
//! server overwrites with the sender's slot in every request. As in ibsim, the attached port
//! shows CapabilityMask.IsSM only while one of its clients is an SM (`issm` in `CONNECT`, or
//! `SET_ISSM`), so stock OpenSM does not poll diagnostic tools' ports for SMInfo.
//!
//! ## MAD flow
//! * **SMPs** (classes 0x01 and 0x81) from a client enter the fabric at its attachment
//!   ([`Fabric::sm_send`]) and are carried hop by hop through the agents: directed-route
//!   processing, LID routing through the LFTs the SM programmed, port-state rules. Whatever the
//!   agents hand to an attachment (responses, traps, SMInfo requests) is passed on: a response
//!   to the slot in its TID's top 16 bits, a request or trap to the attachment's SM client
//!   (`SET_ISSM`). Directed-route conventions are translated at the edge: ibsim clients send and
//!   expect every DR SMP with hop pointer 0 (a client's DR *response* is given the responder's
//!   hop pointer, HopCount + 1, before it enters the fabric; a DR request handed to a client gets
//!   hop pointer 0).
//!   One deliberate difference from ibsim: a client's TrapRepress (method 0x07) SMP is carried
//!   to the trap's issuer like any SMP (ibsim drops it), so our agents stop repeating the trap
//!   as they would on hardware. A DR SMP from a client whose hop pointer is not 0, or whose D
//!   bit differs from its R bit, is ignored, as ibsim does.
//! * **GMPs** (every other class: SA 0x03, PerfMgt 0x04, vendor …) from a client are
//!   LID-routed through the fabric like data packets (the LFTs, Active ports only; counted in
//!   every port's counters on the way) to QP1 of the port owning the destination LID. There,
//!   as in ibsim: PerfMgt is answered by the node's own PMA — also on a port where a client
//!   (say OpenSM) runs, so `perfquery` never reaches a client that registered no PerfMgt
//!   agent; any other class goes to a client attached at that port (response → the slot in
//!   the TID, QP > 1 → the client connected with that QP, a QP1 request → the SM client).
//!   A Get or Set of a class no client of the port takes, on a port without clients, is
//!   answered "method/attribute not supported" by the node (ibsim times it out instead).
//! * **Status 110.** A request that cannot be delivered is sent back to its sender with
//!   `status = 110`, at once, as ibsim does: a non-SMP with no receiver, or an SMP the fabric
//!   dropped (no route, link down, no SM at the far end, …) or that reached an attachment with
//!   no SM client. Drops are detected exactly because the fabric is run to idle after every
//!   inbound datagram (below): a Get/Set that got neither a response nor a hand-off to an SM
//!   while the fabric's drop counters moved was dropped.
//!
//! ## Time
//! The fabric's clock is virtual. The server keeps it in step with wall time: before each
//! batch of work it runs the fabric up to `start + elapsed wall time` (agent timers — trap
//! retransmission, link retraining — fire on the wall-clock schedule), and **after every
//! inbound datagram it runs the fabric until no MAD is on the wire** (each hop costs the
//! configured virtual latency, but no wall time). So the answer to a request is sent before the
//! next datagram is read, like ibsim's synchronous replies, and the virtual clock may run a
//! little ahead of wall time (by the hop latencies), never behind.
//!
//! ## Use
//! ```no_run
//! use fabric_sim::ibsim_server::IbsimServer;
//! use fabric_sim::sim::{Fabric, SimConfig};
//! use fabric_sim::topo::Topology;
//!
//! let topo = Topology::generate("fat-tree:2,4").unwrap();
//! let fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
//! let mut server = IbsimServer::bind(fabric, "mysim").unwrap();
//! println!("ready");
//! let stop = std::sync::atomic::AtomicBool::new(false);
//! server.run(&stop).unwrap();
//! ```
//! An SM driven in the same process attaches with `server.fabric_mut().attach_sm(..)`, sends
//! and receives on its own handle, and calls [`IbsimServer::service`] after sending so the
//! fabric carries its MADs (and forwards what reaches the clients).

/// The protocol's datagram layouts; they live in [`ibmad::ibsim`] so the client side (the
/// `umad-shim` LD_PRELOAD library) shares them without depending on the simulator.
pub use ibmad::ibsim as wire;

use std::collections::VecDeque;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{
    DrPath, Guid, Lid, MadMeta, Method, MgmtClass, NodeType, PortNum, Smp, SmpAttrId, Time,
};

use crate::sim::{node_config, DropReason, Fabric, SimError, SmHandle};
use crate::topo::NodeId;
use wire::{
    ClientInfo, CtlType, SimCtl, SimPortReply, SimRequest, SimVendor, MAX_CLIENTS, SIM_MAGIC,
    STATUS_TIMEOUT,
};

/// The PerfMgt class, answered by every node's own PMA.
const PERF_MGMT: MgmtClass = MgmtClass(0x04);
/// TID tag (top 16 bits) of the server's own 0-hop queries that answer the control requests.
const LOCAL_TAG: u64 = 0xFFFF;
/// Bound of one run-to-idle (events), so a pathological fabric can not stall the server.
const MAX_DRAIN_STEPS: usize = 1_000_000;
/// Longest sleep between two looks at the fabric's timers.
const MAX_WAIT: Duration = Duration::from_millis(50);
/// Events kept for [`IbsimServer::poll_event`]; beyond it the oldest are dropped.
const MAX_EVENTS: usize = 1024;
/// Receive-thread wake-up period (to notice shutdown).
const RECV_TICK: Duration = Duration::from_millis(100);
/// A client that does not drain its socket for this long is treated as gone.
const SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// Errors of the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A socket could not be created, bound or set up.
    #[error("cannot bind the abstract unix socket {name:?} (another ibsim or server using this IBSIM_SOCKNAME?)")]
    Bind {
        /// The socket name (without the NULs).
        name: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Another socket operation failed.
    #[error("{op} failed")]
    Io {
        /// The operation.
        op: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The socket name is empty or too long for `sun_path`.
    #[error("bad socket name {0:?}: 1..=80 bytes without NUL")]
    BadName(String),
    /// Every receive thread is gone.
    #[error("the receive threads stopped")]
    Stopped,
}

/// Something that happened to the server's clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// A client connected.
    Connected {
        /// Its slot.
        slot: usize,
        /// Its id (umad2sim: the pid).
        id: u32,
        /// The node it runs on (topology name).
        node: String,
        /// The port it runs on.
        port: PortNum,
        /// It asked to be the SM.
        issm: bool,
    },
    /// A CONNECT was refused.
    Refused {
        /// The client's id.
        id: u32,
        /// Why.
        reason: String,
    },
    /// A client disconnected (or stopped reading and was dropped).
    Disconnected {
        /// Its slot.
        slot: usize,
    },
    /// A request was sent back to its sender with status 110.
    TimedOut {
        /// The sender's slot.
        slot: usize,
        /// MgmtClass, Method and AttributeID of the request.
        class: u8,
        /// Method.
        method: u8,
        /// AttributeID.
        attr: u16,
        /// Why: the fabric's drop reasons counted meanwhile, or "no receiver".
        reason: String,
    },
    /// A client set or cleared its SM flag.
    IsSm {
        /// Its slot.
        slot: usize,
        /// The new flag.
        issm: bool,
    },
}

/// Counters of the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Control messages handled.
    pub ctl: u64,
    /// Data frames received from clients.
    pub frames_in: u64,
    /// Data frames sent to clients.
    pub frames_out: u64,
    /// Frames of a size other than 288 bytes, or with a bad MAD header, ignored.
    pub rejected: u64,
    /// Requests sent back with status 110.
    pub timeouts: u64,
    /// MADs for an attachment that no client could take (responses for a gone slot, traps
    /// with no SM client).
    pub undeliverable: u64,
    /// GMPs handed to clients (from other clients, or answers of the nodes' agents).
    pub forwarded_other: u64,
}

#[derive(Clone, Copy, Debug)]
struct Client {
    id: u32,
    qp: u32,
    issm: bool,
    node: NodeId,
    port: PortNum,
    handle: SmHandle,
}

enum Inbound {
    Ctl(Vec<u8>, SocketAddr),
    Data(usize, Vec<u8>),
}

/// The request whose fate the current run-to-idle decides.
#[derive(Clone, Copy)]
struct Watch {
    tid: u64,
    resolved: bool,
    failed: bool,
}

/// A [`Fabric`] served over ibsim's client protocol. See the [module documentation](self).
pub struct IbsimServer {
    fabric: Fabric,
    name: String,
    ctl: UnixDatagram,
    outs: Vec<UnixDatagram>,
    rx: Receiver<Inbound>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    clients: [Option<Client>; MAX_CLIENTS],
    attachments: Vec<(NodeId, PortNum, SmHandle)>,
    epoch: Instant,
    vt_base: Time,
    stats: ServerStats,
    events: VecDeque<ServerEvent>,
    local_seq: u32,
    local_answer: Option<(u64, [u8; 256])>,
    watch: Option<Watch>,
}

fn abstract_addr(name: &str) -> Result<SocketAddr, ServeError> {
    let mut b = name.as_bytes().to_vec();
    b.push(0);
    SocketAddr::from_abstract_name(&b).map_err(|source| ServeError::Bind {
        name: name.to_string(),
        source,
    })
}

fn bind(name: &str) -> Result<UnixDatagram, ServeError> {
    let addr = abstract_addr(name)?;
    UnixDatagram::bind_addr(&addr).map_err(|source| ServeError::Bind {
        name: name.to_string(),
        source,
    })
}

fn spawn_reader(
    sock: &UnixDatagram,
    slot: Option<usize>,
    tx: Sender<Inbound>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, ServeError> {
    let io = |op| move |source| ServeError::Io { op, source };
    let sock = sock.try_clone().map_err(io("socket clone"))?;
    sock.set_read_timeout(Some(RECV_TICK))
        .map_err(io("set_read_timeout"))?;
    std::thread::Builder::new()
        .name(match slot {
            Some(i) => format!("ibsim-out{i}"),
            None => "ibsim-ctl".into(),
        })
        .spawn(move || {
            let mut buf = [0u8; 512];
            while !stop.load(Ordering::Relaxed) {
                let msg = match slot {
                    None => match sock.recv_from(&mut buf) {
                        Ok((n, from)) => Inbound::Ctl(buf[..n].to_vec(), from),
                        Err(_) => continue,
                    },
                    Some(i) => match sock.recv(&mut buf) {
                        Ok(n) => Inbound::Data(i, buf[..n].to_vec()),
                        Err(_) => continue,
                    },
                };
                if tx.send(msg).is_err() {
                    break;
                }
            }
        })
        .map_err(io("thread spawn"))
}

impl IbsimServer {
    /// Binds `NAME:ctl` and `NAME:out0..9` and starts the receive threads. Clients can connect
    /// as soon as this returns (print "ready" then); nothing is answered until
    /// [`IbsimServer::poll`] or [`IbsimServer::run`] is called.
    pub fn bind(fabric: Fabric, name: &str) -> Result<IbsimServer, ServeError> {
        if name.is_empty() || name.len() > 80 || name.contains('\0') {
            return Err(ServeError::BadName(name.to_string()));
        }
        let ctl = bind(&format!("{name}:ctl"))?;
        let mut outs = Vec::with_capacity(MAX_CLIENTS);
        for i in 0..MAX_CLIENTS {
            let s = bind(&format!("{name}:out{i}"))?;
            s.set_write_timeout(Some(SEND_TIMEOUT))
                .map_err(|source| ServeError::Io {
                    op: "set_write_timeout",
                    source,
                })?;
            outs.push(s);
        }
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::with_capacity(MAX_CLIENTS + 1);
        threads.push(spawn_reader(&ctl, None, tx.clone(), stop.clone())?);
        for (i, s) in outs.iter().enumerate() {
            threads.push(spawn_reader(s, Some(i), tx.clone(), stop.clone())?);
        }
        let vt_base = fabric.now();
        Ok(IbsimServer {
            fabric,
            name: name.to_string(),
            ctl,
            outs,
            rx,
            stop,
            threads,
            clients: [None; MAX_CLIENTS],
            attachments: Vec::new(),
            epoch: Instant::now(),
            vt_base,
            stats: ServerStats::default(),
            events: VecDeque::new(),
            local_seq: 0,
            local_answer: None,
            watch: None,
        })
    }

    /// The socket name prefix (`IBSIM_SOCKNAME`).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fabric.
    #[must_use]
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// The fabric, e.g. to attach an in-process SM or inject faults. After sending on an
    /// in-process SM's handle, call [`IbsimServer::service`].
    pub fn fabric_mut(&mut self) -> &mut Fabric {
        &mut self.fabric
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    fn push_event(&mut self, ev: ServerEvent) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(ev);
    }

    /// The next client event, if any (the latest 1024 are kept).
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// Connected clients: `(slot, id, node, port, issm)`.
    pub fn clients(&self) -> impl Iterator<Item = (usize, u32, NodeId, PortNum, bool)> + '_ {
        self.clients
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.map(|c| (i, c.id, c.node, c.port, c.issm)))
    }

    /// Serves until `stop` is set (checked at least every 50 ms).
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), ServeError> {
        while !stop.load(Ordering::Relaxed) {
            self.poll(Duration::from_millis(100))?;
        }
        Ok(())
    }

    /// Serves for up to `timeout`: handles every datagram that arrives, keeps the fabric's
    /// clock in step with wall time and fires its timers. Returns the number of datagrams
    /// handled (it returns early only on an error).
    pub fn poll(&mut self, timeout: Duration) -> Result<usize, ServeError> {
        let deadline = Instant::now() + timeout;
        let mut handled = 0;
        loop {
            self.tick();
            while let Ok(msg) = self.rx.try_recv() {
                self.handle(msg);
                handled += 1;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(handled);
            }
            let mut wait = (deadline - now).min(MAX_WAIT);
            if let Some(t) = self.fabric.next_event_time() {
                let ahead = t.0.saturating_sub(self.wall_time().0);
                wait = wait.min(Duration::from_nanos(ahead));
            }
            match self.rx.recv_timeout(wait) {
                Ok(msg) => {
                    self.handle(msg);
                    handled += 1;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(ServeError::Stopped),
            }
        }
    }

    /// Runs the fabric until no MAD is on the wire and passes on whatever reached the
    /// clients' attachments. Call it after sending on an in-process SM's handle.
    pub fn service(&mut self) {
        self.drain();
        self.dispatch();
    }

    fn wall_time(&self) -> Time {
        let ns = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Time(self.vt_base.0.saturating_add(ns))
    }

    /// Fabric time catches up with wall time; timers fire; outputs are passed on.
    fn tick(&mut self) {
        let t = self.wall_time();
        if t > self.fabric.now() {
            self.fabric.run_until(t);
        }
        self.service();
    }

    fn drain(&mut self) {
        let mut steps = 0;
        while self.fabric.mads_on_the_wire() > 0 && steps < MAX_DRAIN_STEPS {
            if self.fabric.step().is_none() {
                break;
            }
            steps += 1;
        }
    }

    fn handle(&mut self, msg: Inbound) {
        match msg {
            Inbound::Ctl(bytes, from) => self.handle_ctl(&bytes, &from),
            Inbound::Data(slot, bytes) => self.handle_data(slot, &bytes),
        }
    }

    // ----- control channel --------------------------------------------------------------

    fn handle_ctl(&mut self, bytes: &[u8], from: &SocketAddr) {
        let Ok(mut ctl) = SimCtl::read_from_bytes(bytes) else {
            self.stats.rejected += 1;
            return;
        };
        if ctl.magic.get() != SIM_MAGIC {
            self.stats.rejected += 1;
            return;
        }
        self.stats.ctl += 1;
        let ok = self.ctl_request(&mut ctl);
        if !ok {
            ctl.ctl_type.set(CtlType::ERROR.0);
        }
        // The client waits for exactly one 80-byte reply; if it is gone there is no one to tell.
        let _ = self.ctl.send_to_addr(ctl.as_bytes(), from);
    }

    /// Fills the reply in place; false = answer SIM_CTL_ERROR.
    fn ctl_request(&mut self, ctl: &mut SimCtl) -> bool {
        let kind = ctl.kind();
        if kind == CtlType::CONNECT {
            return self.connect(ctl);
        }
        let slot = ctl.clientid.get() as usize;
        let Some(client) = self.clients.get(slot).copied().flatten() else {
            return kind == CtlType::DISCONNECT;
        };
        match kind {
            CtlType::DISCONNECT => {
                self.clients[slot] = None;
                self.push_event(ServerEvent::Disconnected { slot });
                self.sync_is_sm(client.handle);
                true
            }
            CtlType::GET_PORT => {
                let Some(pi) = self
                    .fabric
                    .agent(client.node)
                    .and_then(|a| a.port_info(client.port))
                else {
                    return false;
                };
                let r = SimPortReply {
                    lid: pi.lid().0.into(),
                    state: pi.port_state().0,
                };
                ctl.data = [0; 64];
                ctl.data[..3].copy_from_slice(r.as_bytes());
                true
            }
            CtlType::GET_VENDOR => {
                let Some(nc) = node_config(self.fabric.topology(), client.node) else {
                    return false;
                };
                let v = SimVendor {
                    vendor_id: nc.vendor_id.into(),
                    vendor_part_id: u32::from(nc.device_id).into(),
                    hw_ver: nc.revision.into(),
                    pad: [0; 4],
                    fw_ver: 1u64.into(),
                };
                ctl.data = [0; 64];
                ctl.data[..24].copy_from_slice(v.as_bytes());
                true
            }
            CtlType::GET_GID | CtlType::GET_GUID => {
                let guid = self
                    .fabric
                    .agent(client.node)
                    .map_or(Guid(0), |a| a.node_guid());
                ctl.data = [0; 64];
                // ibsim copies its host-order NodeGUID; the prefix comes from PortInfo (wire order).
                if kind == CtlType::GET_GUID {
                    ctl.data[..8].copy_from_slice(&guid.0.to_ne_bytes());
                } else {
                    let prefix = self
                        .fabric
                        .agent(client.node)
                        .and_then(|a| a.port_info(client.port))
                        .map_or(0, |pi| pi.gid_prefix.get());
                    ctl.data[..8].copy_from_slice(&prefix.to_be_bytes());
                    ctl.data[8..16].copy_from_slice(&guid.0.to_ne_bytes());
                }
                true
            }
            CtlType::GET_NODEINFO => self.ctl_query(ctl, client, SmpAttrId::NODE_INFO, 0),
            CtlType::GET_PORTINFO => {
                let np = self.fabric.agent(client.node).map_or(0, |a| a.num_ports());
                let asked = ctl.data[0];
                let port = if asked == 0 || asked > np {
                    client.port.0
                } else {
                    asked
                };
                self.ctl_query(ctl, client, SmpAttrId::PORT_INFO, u32::from(port))
            }
            CtlType::GET_PKEYS => {
                // Block 0 of the port the query arrives on.
                let m = ibmad::attr::modifier::pkey(PortNum(0), 0);
                self.ctl_query(ctl, client, SmpAttrId::P_KEY_TABLE, m)
            }
            CtlType::SET_ISSM => {
                let issm =
                    i32::from_ne_bytes([ctl.data[0], ctl.data[1], ctl.data[2], ctl.data[3]]) != 0;
                if issm
                    && self.clients.iter().enumerate().any(|(i, c)| {
                        i != slot && c.is_some_and(|c| c.issm && c.node == client.node)
                    })
                {
                    return false;
                }
                if let Some(c) = self.clients[slot].as_mut() {
                    c.issm = issm;
                }
                self.push_event(ServerEvent::IsSm { slot, issm });
                self.sync_is_sm(client.handle);
                true
            }
            _ => false,
        }
    }

    fn ctl_query(&mut self, ctl: &mut SimCtl, c: Client, attr: SmpAttrId, attr_mod: u32) -> bool {
        match self.local_query(c, attr, attr_mod) {
            Some(data) => {
                ctl.data = data;
                ctl.len.set(64);
                true
            }
            None => false,
        }
    }

    /// Asks the client's own SMA (a 0-hop directed-route Get through the fabric), so the
    /// control replies are exactly what an SMP would return (LocalPortNum = the client's port).
    fn local_query(&mut self, c: Client, attr: SmpAttrId, attr_mod: u32) -> Option<[u8; 64]> {
        self.local_seq = self.local_seq.wrapping_add(1);
        let tid = (LOCAL_TAG << 48) | u64::from(self.local_seq);
        let smp = Smp::dr_request(Method::GET, attr, attr_mod, tid, &DrPath::local());
        let meta = MadMeta {
            port: c.port,
            slid: Lid::PERMISSIVE,
            dlid: Lid::PERMISSIVE,
            qp: 0,
            sl: 0,
            ..Default::default()
        };
        self.local_answer = None;
        self.fabric.sm_send(c.handle, &meta, smp.as_bytes()).ok()?;
        self.service();
        let (t, mad) = self.local_answer.take()?;
        let resp = Smp::ref_from_bytes(&mad[..]).ok()?;
        if t != tid || resp.status().0 & 0x7FFF != 0 {
            return None;
        }
        Some(resp.data)
    }

    fn find_node(&self, id: &str) -> Option<NodeId> {
        let topo = self.fabric.topology();
        if id.is_empty() {
            return topo.nodes().next().map(|(n, _)| n);
        }
        if let Some(n) = topo.node_by_name(id).or_else(|| topo.node_by_desc(id)) {
            return Some(n);
        }
        let hex = id.strip_prefix("0x").or_else(|| id.strip_prefix("0X"))?;
        let g = u64::from_str_radix(hex, 16).ok()?;
        topo.node_by_guid(Guid(g))
    }

    /// The port a client on `node` runs on: 0 on a switch, else the first cabled port.
    fn client_port(&self, node: NodeId) -> PortNum {
        let topo = self.fabric.topology();
        match topo.node(node) {
            Some(n) if n.node_type() == NodeType::SWITCH => PortNum(0),
            Some(n) => n
                .port_numbers()
                .find(|&p| self.fabric.peer(node, p).is_some())
                .unwrap_or(PortNum(1)),
            None => PortNum(1),
        }
    }

    fn attachment(&mut self, node: NodeId, port: PortNum) -> Result<SmHandle, SimError> {
        if let Some(&(_, _, h)) = self
            .attachments
            .iter()
            .find(|(n, p, _)| *n == node && *p == port)
        {
            return Ok(h);
        }
        let a = self.fabric.attach_client(node, port)?;
        // As ibsim: the node's own PMA answers PerfMgt; every other GMP class goes on to the
        // clients of the port (SMP classes can not be registered; they come through the SMA).
        for c in 0..=u8::MAX {
            if c != PERF_MGMT.0 {
                self.fabric.register_class(a.handle, MgmtClass(c));
            }
        }
        self.attachments.push((node, port, a.handle));
        Ok(a.handle)
    }

    /// IsSM on an attachment's port follows its clients: set while one of them is an SM.
    fn sync_is_sm(&mut self, h: SmHandle) {
        let on = self
            .clients
            .iter()
            .flatten()
            .any(|c| c.handle == h && c.issm);
        // A change queues trap 144; the next tick carries it.
        self.fabric.set_sm_capability(h, on);
    }

    fn connect(&mut self, ctl: &mut SimCtl) -> bool {
        let Ok((mut info, _)) = ClientInfo::read_from_prefix(&ctl.data[..]) else {
            return false;
        };
        let id = info.id.get();
        let refuse = |s: &mut Self, reason: String| {
            s.push_event(ServerEvent::Refused { id, reason });
            false
        };
        let Some(slot) = self.clients.iter().position(Option::is_none) else {
            return refuse(self, "all 10 client slots are in use".into());
        };
        let node_id = info.node_id();
        let Some(node) = self.find_node(&node_id) else {
            return refuse(self, format!("no node {node_id:?}"));
        };
        let issm = info.issm.get() != 0;
        if issm
            && self
                .clients
                .iter()
                .flatten()
                .any(|c| c.issm && c.node == node)
        {
            return refuse(self, format!("an SM already runs on {node_id:?}"));
        }
        let port = self.client_port(node);
        let handle = match self.attachment(node, port) {
            Ok(h) => h,
            Err(e) => return refuse(self, e.to_string()),
        };
        let connected = abstract_addr(&format!("{}:in{id}", self.name))
            .ok()
            .is_some_and(|addr| self.outs[slot].connect_addr(&addr).is_ok());
        if !connected {
            return refuse(self, format!("cannot connect to {}:in{id}", self.name));
        }
        self.clients[slot] = Some(Client {
            id,
            qp: info.qp.get(),
            issm,
            node,
            port,
            handle,
        });
        let name = self
            .fabric
            .topology()
            .node(node)
            .map_or_else(String::new, |n| n.name().to_string());
        info.id.set(slot as u32);
        info.set_node_id(&name);
        ctl.data[..44].copy_from_slice(info.as_bytes());
        self.push_event(ServerEvent::Connected {
            slot,
            id,
            node: name,
            port,
            issm,
        });
        if issm {
            self.sync_is_sm(handle);
        }
        true
    }

    // ----- data channel -----------------------------------------------------------------

    fn send_to(&mut self, slot: usize, frame: &SimRequest) -> bool {
        if self.clients.get(slot).copied().flatten().is_none() {
            return false;
        }
        match self.outs[slot].send(frame.as_bytes()) {
            Ok(_) => {
                self.stats.frames_out += 1;
                true
            }
            Err(_) => {
                // ECONNREFUSED / ENOTCONN / timed out: the client is gone (ibsim frees the slot
                // the same way).
                let gone = self.clients[slot].take();
                self.push_event(ServerEvent::Disconnected { slot });
                if let Some(c) = gone.filter(|c| c.issm) {
                    self.sync_is_sm(c.handle);
                }
                false
            }
        }
    }

    fn bounce(&mut self, slot: usize, mut frame: SimRequest, reason: String) {
        self.push_event(ServerEvent::TimedOut {
            slot,
            class: frame.mgmt_class(),
            method: frame.method(),
            attr: u16::from_be_bytes([frame.mad[16], frame.mad[17]]),
            reason,
        });
        frame.status.set(STATUS_TIMEOUT);
        self.stats.timeouts += 1;
        self.send_to(slot, &frame);
    }

    fn handle_data(&mut self, slot: usize, bytes: &[u8]) {
        let Some(client) = self.clients.get(slot).copied().flatten() else {
            self.stats.rejected += 1;
            return;
        };
        let Ok(mut frame) = SimRequest::read_from_bytes(bytes) else {
            // ibsim: "bad packet size" — nothing is sent back.
            self.stats.rejected += 1;
            return;
        };
        self.stats.frames_in += 1;
        let (base, class_version) = (frame.mad[0], frame.mad[2]);
        if base != 1 || class_version > 2 {
            self.stats.rejected += 1;
            return;
        }
        let response = frame.is_response();
        if !response {
            frame.set_tid((frame.tid() & 0x0000_FFFF_FFFF_FFFF) | ((slot as u64) << 48));
        }
        let class = MgmtClass(frame.mgmt_class());
        if class.is_smp() {
            self.smp_from_client(slot, client, frame);
        } else {
            self.other_from_client(slot, client, frame);
        }
    }

    fn smp_from_client(&mut self, slot: usize, client: Client, frame: SimRequest) {
        let mut mad = frame.mad;
        let response = frame.is_response();
        if mad[1] == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            let (hop_ptr, hop_cnt) = (mad[6], mad[7]);
            let d_bit = mad[4] & 0x80 != 0;
            if hop_ptr != 0 || d_bit != response {
                // ibsim: "bad direct smp headers" — dropped without an answer.
                self.stats.rejected += 1;
                return;
            }
            if response {
                // The responder's position (IBA C14-13:1): the fabric's advance starts the way back.
                mad[6] = hop_cnt.saturating_add(1);
            }
        }
        let method = Method(frame.method());
        let expects_answer = matches!(method, Method::GET | Method::SET);
        let meta = MadMeta {
            port: client.port,
            slid: Lid(frame.slid.get()),
            dlid: Lid(frame.dlid.get()),
            ..MadMeta::default()
        };
        self.send_watched(slot, client, frame, &meta, &mad, expects_answer);
    }

    /// Sends `mad` from the client's attachment into the fabric and runs it to idle. If
    /// `watch`, a request that neither got an answer nor reached a client meanwhile, while the
    /// fabric dropped something, is sent back to the client with status 110.
    fn send_watched(
        &mut self,
        slot: usize,
        client: Client,
        frame: SimRequest,
        meta: &MadMeta,
        mad: &[u8; 256],
        expects_answer: bool,
    ) {
        let drops_before = self.fabric.stats().dropped;
        if let Err(e) = self.fabric.sm_send(client.handle, meta, mad) {
            if expects_answer {
                self.bounce(slot, frame, e.to_string());
            }
            return;
        }
        self.watch = expects_answer.then_some(Watch {
            tid: frame.tid(),
            resolved: false,
            failed: false,
        });
        self.service();
        let watch = self.watch.take();
        if let Some(w) = watch {
            let after = self.fabric.stats().dropped;
            let dropped: Vec<&str> = DropReason::ALL
                .iter()
                .filter(|&&r| after.get(r) > drops_before.get(r))
                .map(|r| r.name())
                .collect();
            if !w.resolved && (!dropped.is_empty() || w.failed) {
                let reason = if w.failed {
                    "no client at the destination to take it".to_string()
                } else {
                    format!("dropped by the fabric: {}", dropped.join(","))
                };
                self.bounce(slot, frame, reason);
            }
        }
    }

    /// ibsim's `find_client`: a response to the slot in its TID, a MAD for QP > 1 to the client
    /// registered on that QP, a QP0/QP1 request to the SM client.
    fn find_client(
        &self,
        node: NodeId,
        port: PortNum,
        response: bool,
        qp: u32,
        tid: u64,
    ) -> Option<usize> {
        let here = |c: &Client| c.node == node && c.port == port;
        if response {
            let s = (tid >> 48) as usize;
            if self
                .clients
                .get(s)
                .copied()
                .flatten()
                .is_some_and(|c| here(&c))
            {
                return Some(s);
            }
        }
        self.clients.iter().position(|c| {
            c.is_some_and(|c| {
                here(&c)
                    && if qp > 1 {
                        qp == c.qp
                    } else {
                        !response && c.issm
                    }
            })
        })
    }

    /// A GMP (any class but the SMP ones) from a client: LID-routed through the fabric from
    /// the client's port, as ibsim routes it (its LFTs, Active links). At the destination port
    /// it reaches the attachment there if a client runs on that port (every class but PerfMgt
    /// is registered for the attachments, so SA, CM and vendor MADs go on to the clients as in
    /// ibsim), else the node answers: the PMA for PerfMgt. A request that goes nowhere comes
    /// back with status 110; a TrapRepress is dropped, as ibsim does.
    fn other_from_client(&mut self, slot: usize, client: Client, frame: SimRequest) {
        if frame.method() == Method::TRAP_REPRESS.0 {
            return;
        }
        let meta = MadMeta {
            port: client.port,
            slid: Lid(frame.slid.get()),
            dlid: Lid(frame.dlid.get()),
            // umad2sim writes the QP the user gave (1 for a GSI); 0 would mean QP0.
            qp: frame.dqp.get().max(1),
            ..MadMeta::default()
        };
        let request = !frame.is_response();
        let mad = frame.mad;
        self.send_watched(slot, client, frame, &meta, &mad, request);
    }

    /// Passes on everything queued at the server's attachments.
    fn dispatch(&mut self) {
        let mut buf = [0u8; 256];
        for i in 0..self.attachments.len() {
            let (node, port, h) = self.attachments[i];
            while let Ok(Some((meta, qp, _))) = self.fabric.sm_recv_qp(h, &mut buf) {
                self.forward_from_fabric(node, port, &meta, qp, &buf);
            }
        }
    }

    fn forward_from_fabric(
        &mut self,
        node: NodeId,
        port: PortNum,
        meta: &MadMeta,
        qp: u32,
        mad: &[u8; 256],
    ) {
        // Destination QP: the local QP it arrived on; source QP: the sender's.
        let mut frame = SimRequest::new(meta.dlid.0, meta.slid.0, qp, meta.qp, mad);
        let tid = frame.tid();
        let response = frame.is_response();
        if response && tid >> 48 == LOCAL_TAG {
            self.local_answer = Some((tid, *mad));
            return;
        }
        let watched = self.watch.as_ref().is_some_and(|w| w.tid == tid);
        let dst = self.find_client(node, port, response, qp, tid);
        let Some(dst) = dst else {
            self.stats.undeliverable += 1;
            if watched && !response {
                if let Some(w) = self.watch.as_mut() {
                    w.failed = true;
                }
            }
            return;
        };
        if !response && frame.mgmt_class() == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            // ibsim hands DR requests to clients with hop pointer 0.
            frame.mad[6] = 0;
        }
        if !MgmtClass(frame.mgmt_class()).is_smp() {
            self.stats.forwarded_other += 1;
        }
        if self.send_to(dst, &frame) && watched {
            if let Some(w) = self.watch.as_mut() {
                w.resolved = true;
            }
        }
    }
}

impl Drop for IbsimServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

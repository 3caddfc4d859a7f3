//! The glue: one process-wide [`Runtime`] that owns the simulator connection, the [`Core`],
//! the emulated sysfs tree on disk and the engine thread, and the safe functions the
//! interposed libc entry points ([`crate::sys`]) call.
//!
//! Start-up is lazy: the first access to an emulated path connects to the simulator
//! ([`crate::client`], bounded retry), reads the node and port (GET_VENDOR, GET_NODEINFO,
//! GET_PORTINFO, GET_PKEYS, and NodeInfo/NodeDescription SMPs to the own port, whose
//! PortGUID the control messages do not carry correctly), writes the tree into a private
//! directory under `$TMPDIR` and starts the engine thread. A failure is printed once on stderr
//! and the emulated paths then fail with `ENODEV`; the process is never stopped.
//!
//! Descriptors: `/dev/infiniband/umad0` is an eventfd in semaphore mode whose counter is the
//! number of packets queued for the file, so `poll`/`select`/`epoll` see readability and
//! `O_NONBLOCK` works without interposing them. A reader first takes one count from the
//! eventfd (blocking or not, as the descriptor is), then the packet from the core. Readers are
//! signalled after the core's lock is released (a reader woken under it would only block on
//! it: a futex wait and one more wake-up per MAD), under a lock of their own that `close` also
//! takes; if a descriptor was closed since the readers were collected, the signals go out
//! under the core's lock instead, to the files still open — a descriptor number is never
//! signalled after its reuse.
//!
//! The engine thread waits on the data socket, a wake-up eventfd and the core's next timer;
//! it feeds frames and timeouts to the core and sends what it produces. Writers send their
//! frames themselves (non-blocking); what the socket does not take waits in an outbox the
//! engine flushes, so neither side can block the other (ibsim spins on a full socket).

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ibmad::attr::NodeInfo;
use ibmad::ibsim::{CtlType, SimRequest, REQUEST_LEN};
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, Method, Smp, SmpAttrId, Time};
use umad::abi::{RegReq, RegReq2};

use crate::client::{ClientConfig, SimClient};
use crate::core::{Config, Core, Faults, FileId, ReadResult, Readable, RegError, RegRequest};
use crate::sys;
use crate::sysfs::{self, attr_of, Attr, NodeAttrs, PortAttr, PortAttrs, Target};

/// What the interposer should do with a path.
#[derive(Debug)]
pub enum PathAction {
    /// Not ours: the app's path, unchanged.
    Real,
    /// Use this path instead (inside the emulated tree).
    Mapped(CString),
    /// Fail with this errno.
    Fail(i32),
}

/// What the interposer should do with an `open`/`fopen`.
#[derive(Debug)]
pub enum OpenAction {
    /// Not ours.
    Real,
    /// Open this path instead.
    Mapped(CString),
    /// Here is the descriptor (a umad/issm eventfd or a memfd with fresh contents).
    Fd(RawFd),
    /// Fail with this errno.
    Fail(i32),
}

/// What [`Runtime::drain`] collected under the core's lock.
struct Drained {
    /// Frames to send.
    tx: Vec<SimRequest>,
    /// Files that became readable.
    ready: Vec<Readable>,
    /// [`Runtime::closes`] when they were collected.
    closes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FdEntry {
    Umad(FileId),
    Issm,
}

struct State {
    core: Core,
    fds: HashMap<RawFd, FdEntry>,
    issm_held: bool,
    /// The deadline the timerfd is armed for.
    armed: Option<Time>,
}

/// The process-wide shim.
pub struct Runtime {
    client: SimClient,
    state: Mutex<State>,
    issm_free: Condvar,
    epoch: Instant,
    root: PathBuf,
    node: NodeAttrs,
    port_guid: u64,
    pkey_count: usize,
    port: Mutex<PortAttrs>,
    marks: Vec<AtomicBool>,
    high_fds: Mutex<HashSet<RawFd>>,
    kick: RawFd,
    /// Armed for the core's next timer (under the state lock), so writers never wake the
    /// engine just to shorten its sleep.
    timer: RawFd,
    outbox: Mutex<VecDeque<SimRequest>>,
    /// Held while readers' eventfds are signalled outside the core's lock, and by `close`
    /// around closing one.
    signal_lock: Mutex<()>,
    /// Umad descriptors closed so far (changed under both locks).
    closes: AtomicU64,
    lost_sim: AtomicBool,
    trace: bool,
}

static RUNTIME: OnceLock<&'static Runtime> = OnceLock::new();
static INIT: Mutex<Option<i32>> = Mutex::new(None);

fn say(msg: &str) {
    use std::io::Write;
    let _ = writeln!(io::stderr(), "ibsm-umad[{}]: {msg}", std::process::id());
}

/// The runtime if it is already up (never starts it).
fn running() -> Option<&'static Runtime> {
    RUNTIME.get().copied()
}

/// The runtime, starting it on first use. `Err(ENODEV)` if it could not start.
fn ensure() -> Result<&'static Runtime, i32> {
    if let Some(rt) = running() {
        return Ok(rt);
    }
    let mut failed = INIT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(rt) = running() {
        return Ok(rt);
    }
    if let Some(e) = *failed {
        return Err(e);
    }
    match Runtime::start() {
        Ok(rt) => {
            let rt: &'static Runtime = Box::leak(Box::new(rt));
            let _ = RUNTIME.set(rt);
            if let Err(e) = rt.spawn_engine() {
                say(&format!("cannot start the engine thread: {e}"));
            }
            sys::at_exit(at_exit);
            Ok(rt)
        }
        Err(msg) => {
            say(&msg);
            *failed = Some(libc::ENODEV);
            Err(libc::ENODEV)
        }
    }
}

extern "C" fn at_exit() {
    if let Some(rt) = running() {
        rt.client.disconnect();
        let _ = std::fs::remove_dir_all(&rt.root);
    }
}

fn env_flag(k: &str) -> bool {
    std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Parses `IBSM_UMAD_FAULTS` (`drop-data-seg=N`, `max-acks=N`, comma-separated).
///
/// # Errors
/// A message naming the bad item.
pub fn parse_faults(spec: &str) -> Result<Faults, String> {
    let mut f = Faults::default();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("IBSM_UMAD_FAULTS: {item:?}: expected NAME=N"))?;
        let n: u32 = v
            .parse()
            .map_err(|_| format!("IBSM_UMAD_FAULTS: {item:?}: {v:?} is not a number"))?;
        match k {
            "drop-data-seg" => f.drop_data_segment = Some(n),
            "max-acks" => f.max_acks = Some(n),
            _ => {
                return Err(format!(
                    "IBSM_UMAD_FAULTS: unknown fault {k:?} (known: drop-data-seg, max-acks)"
                ))
            }
        }
    }
    Ok(f)
}

/// Removes trees left behind by processes that died without running their exit handlers.
fn sweep_stale_trees(tmp: &Path) {
    let Ok(dir) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("ibsm-umad-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn ctl_err(what: &str) -> impl Fn(crate::client::CtlError) -> String + '_ {
    move |e| format!("simulator control request {what}: {e}")
}

/// Sends a 0-hop directed-route Get of `attr` on the (still blocking) data socket and returns
/// the attribute data of the answer.
fn local_smp(client: &SimClient, attr: SmpAttrId, tid: u64, qp: u32) -> Option<[u8; 64]> {
    let smp = Smp::dr_request(Method::GET, attr, 0, tid, &DrPath::local());
    let mut mad = [0u8; 256];
    mad.copy_from_slice(smp.as_bytes());
    let f = SimRequest::new(0xFFFF, 0xFFFF, 0, qp, &mad);
    let sock = client.data();
    sock.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    sock.send(f.as_bytes()).ok()?;
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut buf = [0u8; 512];
    while Instant::now() < deadline {
        let n = sock.recv(&mut buf).ok()?;
        if n != REQUEST_LEN {
            continue;
        }
        let r = SimRequest::read_from_bytes(&buf[..REQUEST_LEN]).ok()?;
        if r.tid() & 0xFFFF_FFFF != tid & 0xFFFF_FFFF || !r.is_response() {
            continue;
        }
        if r.status.get() != 0 {
            return None;
        }
        let resp = Smp::read_from_bytes(&r.mad[..]).ok()?;
        return Some(resp.data);
    }
    None
}

impl Runtime {
    fn start() -> Result<Runtime, String> {
        let cfg = ClientConfig::from_env().map_err(|e| e.to_string())?;
        let faults = match std::env::var("IBSM_UMAD_FAULTS") {
            Ok(s) => parse_faults(&s)?,
            Err(_) => Faults::default(),
        };
        let trace = env_flag("IBSM_UMAD_DEBUG");
        let client = SimClient::connect(&cfg).map_err(|e| e.to_string())?;
        let vendor = client
            .ctl(CtlType::GET_VENDOR, &[])
            .map_err(ctl_err("GET_VENDOR"))?;
        let ni = client
            .ctl(CtlType::GET_NODEINFO, &[])
            .map_err(ctl_err("GET_NODEINFO"))?;
        let info = NodeInfo::read_from_prefix(&ni[..])
            .map(|(n, _)| n)
            .map_err(|_| "GET_NODEINFO: short reply".to_string())?;
        let pi = client
            .ctl(CtlType::GET_PORTINFO, &[0])
            .map_err(ctl_err("GET_PORTINFO"))?;
        let pk = client
            .ctl(CtlType::GET_PKEYS, &[])
            .map_err(ctl_err("GET_PKEYS"))?;
        if cfg.issm {
            let _ = client.ctl(CtlType::SET_ISSM, &1i32.to_ne_bytes());
        }
        // The port GUID and NodeDescription as the port's own SMA reports them.
        let port_guid = local_smp(&client, SmpAttrId::NODE_INFO, 0xFFFF_FF01, cfg.qp)
            .and_then(|d| {
                NodeInfo::read_from_prefix(&d[..])
                    .ok()
                    .map(|(n, _)| n.port_guid().0)
            })
            .unwrap_or(info.port_guid().0);
        let node_desc = local_smp(&client, SmpAttrId::NODE_DESC, 0xFFFF_FF02, cfg.qp)
            .map(|d| {
                let end = d.iter().position(|&b| b == 0).unwrap_or(d.len());
                String::from_utf8_lossy(&d[..end]).into_owned()
            })
            .unwrap_or_else(|| client.node_id().to_string());
        client
            .data()
            .set_nonblocking(true)
            .map_err(|e| format!("data socket: {e}"))?;
        let mut fw = [0u8; 8];
        fw.copy_from_slice(&vendor[16..24]);
        let mut hw = [0u8; 4];
        hw.copy_from_slice(&vendor[8..12]);
        let node = NodeAttrs {
            node_type: info.node_type,
            node_guid: info.node_guid().0,
            sys_image_guid: info.system_image_guid().0,
            fw_ver: u64::from_ne_bytes(fw),
            hw_rev: u32::from_ne_bytes(hw),
            node_desc,
        };
        let pkey_count = usize::from(info.partition_cap.get()).clamp(1, 32);
        let port = PortAttrs::from_port_info(&pi, port_guid, pkeys_of(&pk, pkey_count));
        let tmp = std::env::temp_dir();
        sweep_stale_trees(&tmp);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let root = tmp.join(format!("ibsm-umad-{}-{nanos}", std::process::id()));
        write_tree(&root, &node, &port).map_err(|e| format!("{}: {e}", root.display()))?;
        let kick = sys::eventfd(libc::EFD_NONBLOCK | libc::EFD_CLOEXEC)
            .map_err(|e| format!("eventfd: {}", io::Error::from_raw_os_error(e)))?;
        let timer =
            sys::timerfd().map_err(|e| format!("timerfd: {}", io::Error::from_raw_os_error(e)))?;
        let core = Core::new(Config {
            own_qp: cfg.qp,
            faults,
            trace,
            first_hi_tid: 1 + std::process::id() % 0xFFFF,
            ..Config::default()
        });
        if trace {
            say(&format!(
                "attached to {} as client {} (node {:?}, port {}, LID {}, QP {:#x}); tree at {}",
                cfg.sockname,
                client.slot(),
                client.node_id(),
                port.port,
                port.lid,
                cfg.qp,
                root.display()
            ));
        }
        Ok(Runtime {
            client,
            state: Mutex::new(State {
                core,
                fds: HashMap::new(),
                issm_held: false,
                armed: None,
            }),
            issm_free: Condvar::new(),
            epoch: Instant::now(),
            root,
            node,
            port_guid,
            pkey_count,
            port: Mutex::new(port),
            marks: (0..65536).map(|_| AtomicBool::new(false)).collect(),
            high_fds: Mutex::new(HashSet::new()),
            kick,
            timer,
            outbox: Mutex::new(VecDeque::new()),
            signal_lock: Mutex::new(()),
            closes: AtomicU64::new(0),
            lost_sim: AtomicBool::new(false),
            trace,
        })
    }

    fn spawn_engine(&'static self) -> io::Result<()> {
        std::thread::Builder::new()
            .name("ibsm-umad".into())
            .spawn(move || self.engine())
            .map(|_| ())
    }

    fn now(&self) -> Time {
        Time(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn mark(&self, fd: RawFd, on: bool) {
        match usize::try_from(fd).ok().and_then(|i| self.marks.get(i)) {
            Some(m) => m.store(on, Ordering::SeqCst),
            None => {
                let mut h = self
                    .high_fds
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if on {
                    h.insert(fd);
                } else {
                    h.remove(&fd);
                }
            }
        }
    }

    fn marked(&self, fd: RawFd) -> bool {
        match usize::try_from(fd).ok().and_then(|i| self.marks.get(i)) {
            Some(m) => m.load(Ordering::SeqCst),
            None => {
                fd >= 0
                    && self
                        .high_fds
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .contains(&fd)
            }
        }
    }

    /// Re-arms the timer, prints traces and returns the frames to send and the files that
    /// became readable ([`Runtime::signal`] them once the lock is released).
    fn drain(&self, st: &mut State) -> Drained {
        let next = st.core.poll_timeout();
        if next != st.armed {
            let after = next.map(|t| t.saturating_since(self.now()));
            if sys::timerfd_arm(self.timer, after).is_ok() {
                st.armed = next;
            }
        }
        if self.trace {
            while let Some(line) = st.core.poll_trace() {
                say(&line);
            }
        }
        let mut tx = Vec::new();
        while let Some(f) = st.core.poll_transmit() {
            tx.push(f);
        }
        let mut ready = Vec::new();
        while let Some(ev) = st.core.poll_event() {
            ready.push(ev);
        }
        Drained {
            tx,
            ready,
            closes: self.closes.load(Ordering::SeqCst),
        }
    }

    /// Signals the readers of [`Drained::ready`]; called without the core's lock.
    fn signal(&self, ready: &[Readable], closes: u64) {
        if ready.is_empty() {
            return;
        }
        {
            let _g = self
                .signal_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if self.closes.load(Ordering::SeqCst) == closes {
                // No descriptor closed since `ready` was collected, and none can close
                // while the signal lock is held: every token is still its file's eventfd.
                for ev in ready {
                    let _ = sys::write_all(ev.token, &1u64.to_ne_bytes());
                }
                return;
            }
        }
        // A close raced: signal under the core's lock the files that are still open.
        let st = self.lock();
        for ev in ready {
            if st.fds.get(&ev.token) == Some(&FdEntry::Umad(ev.file)) {
                let _ = sys::write_all(ev.token, &1u64.to_ne_bytes());
            }
        }
    }

    /// Signals `d`'s readers and sends its frames (the core's lock released).
    fn finish(&self, d: Drained) {
        self.signal(&d.ready, d.closes);
        self.send_frames(d.tx);
    }

    fn wake_engine(&self) {
        let _ = sys::write_all(self.kick, &1u64.to_ne_bytes());
    }

    fn send_frames(&self, frames: Vec<SimRequest>) {
        if frames.is_empty() {
            return;
        }
        let mut ob = self
            .outbox
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !ob.is_empty() {
            ob.extend(frames);
            drop(ob);
            self.wake_engine();
            return;
        }
        let sock = self.client.data();
        for (i, f) in frames.iter().enumerate() {
            match sock.send(f.as_bytes()) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    ob.extend(frames[i..].iter().copied());
                    drop(ob);
                    self.wake_engine();
                    return;
                }
                Err(e) => self.simulator_lost(&e),
            }
        }
    }

    fn flush_outbox(&self) {
        let mut ob = self
            .outbox
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let sock = self.client.data();
        while let Some(f) = ob.front() {
            match sock.send(f.as_bytes()) {
                Ok(_) => {
                    ob.pop_front();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    ob.pop_front();
                    self.simulator_lost(&e);
                }
            }
        }
    }

    fn simulator_lost(&self, e: &io::Error) {
        if !self.lost_sim.swap(true, Ordering::Relaxed) {
            say(&format!(
                "lost the simulator ({e}); MADs are dropped from now on"
            ));
        }
    }

    fn engine(&self) {
        let sock = self.client.data();
        let sfd = sock.as_raw_fd();
        let mut buf = [0u8; 1024];
        loop {
            let want_out = !self
                .outbox
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_empty();
            let pfd = |fd, events| libc::pollfd {
                fd,
                events,
                revents: 0,
            };
            let mut fds = [
                pfd(sfd, libc::POLLIN | if want_out { libc::POLLOUT } else { 0 }),
                pfd(self.kick, libc::POLLIN),
                pfd(self.timer, libc::POLLIN),
            ];
            match sys::poll_all(&mut fds, -1) {
                Ok(_) | Err(libc::EINTR) => {}
                Err(e) => {
                    say(&format!("poll: {}", io::Error::from_raw_os_error(e)));
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            for i in [1, 2] {
                if fds[i].revents & libc::POLLIN != 0 {
                    let mut b = [0u8; 8];
                    let _ = sys::read_into(fds[i].fd, &mut b);
                }
            }
            let timer_fired = fds[2].revents & libc::POLLIN != 0;
            let mut frames = Vec::new();
            if fds[0].revents & (libc::POLLIN | libc::POLLERR) != 0 {
                for _ in 0..512 {
                    match sock.recv(&mut buf) {
                        Ok(REQUEST_LEN) => {
                            if let Ok(f) = SimRequest::read_from_bytes(&buf[..REQUEST_LEN]) {
                                frames.push(f);
                            }
                        }
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            self.simulator_lost(&e);
                            std::thread::sleep(Duration::from_millis(10));
                            break;
                        }
                    }
                }
            }
            let now = self.now();
            let d = {
                let mut st = self.lock();
                for f in &frames {
                    st.core.handle_frame(now, f);
                }
                st.core.handle_timeout(now);
                if timer_fired {
                    // Re-arm even if the deadline is unchanged: the timerfd has just expired.
                    // (Not on every wake: that was a timerfd_settime per received MAD.)
                    st.armed = None;
                }
                self.drain(&mut st)
            };
            self.finish(d);
            self.flush_outbox();
        }
    }

    fn register(&self, file: FileId, req: &RegRequest) -> Result<u32, RegError> {
        let (res, d) = {
            let mut st = self.lock();
            let res = st.core.register(file, req);
            (res, self.drain(&mut st))
        };
        self.signal(&d.ready, d.closes);
        res
    }

    fn entry(&self, fd: RawFd) -> Option<FdEntry> {
        self.lock().fds.get(&fd).copied()
    }

    fn open_device(&self, t: &Target, flags: i32) -> OpenAction {
        let nonblock = flags & libc::O_NONBLOCK != 0;
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let mut efd_flags = libc::EFD_SEMAPHORE;
        if nonblock {
            efd_flags |= libc::EFD_NONBLOCK;
        }
        if cloexec {
            efd_flags |= libc::EFD_CLOEXEC;
        }
        match t {
            Target::Umad(0) => {
                let fd = match sys::eventfd(efd_flags) {
                    Ok(fd) => fd,
                    Err(e) => return OpenAction::Fail(e),
                };
                let mut st = self.lock();
                let file = st.core.open_file(fd);
                st.fds.insert(fd, FdEntry::Umad(file));
                self.mark(fd, true);
                OpenAction::Fd(fd)
            }
            Target::Issm(0) => {
                {
                    let mut st = self.lock();
                    while st.issm_held {
                        if nonblock {
                            return OpenAction::Fail(libc::EAGAIN);
                        }
                        st = self
                            .issm_free
                            .wait(st)
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                    }
                    st.issm_held = true;
                }
                if let Err(e) = self.client.ctl(CtlType::SET_ISSM, &1i32.to_ne_bytes()) {
                    say(&format!("SET_ISSM: {e}"));
                }
                let fd = match sys::eventfd(efd_flags) {
                    Ok(fd) => fd,
                    Err(e) => {
                        self.lock().issm_held = false;
                        self.issm_free.notify_one();
                        return OpenAction::Fail(e);
                    }
                };
                self.lock().fds.insert(fd, FdEntry::Issm);
                self.mark(fd, true);
                OpenAction::Fd(fd)
            }
            _ => OpenAction::Fail(libc::ENOENT),
        }
    }

    fn mapped(&self, rel: &str) -> PathAction {
        match CString::new(self.root.join(rel).into_os_string().into_encoded_bytes()) {
            Ok(c) => PathAction::Mapped(c),
            Err(_) => PathAction::Fail(libc::EINVAL),
        }
    }

    /// The port's current attributes, re-read from the simulator (GET_PORTINFO for most
    /// files, GET_PKEYS for the P_Key files); the last snapshot if the simulator is gone.
    fn fresh_port(&self, what: PortAttr) -> PortAttrs {
        let mut cur = self
            .port
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let PortAttr::Pkey(_) = what {
            if let Ok(pk) = self.client.ctl(CtlType::GET_PKEYS, &[]) {
                cur.pkeys = pkeys_of(&pk, self.pkey_count);
            }
        } else if let Ok(pi) = self.client.ctl(CtlType::GET_PORTINFO, &[0]) {
            let pkeys = std::mem::take(&mut cur.pkeys);
            *cur = PortAttrs::from_port_info(&pi, self.port_guid, pkeys);
        }
        cur.clone()
    }

    /// A live attribute file: a memfd with freshly rendered contents.
    fn live_file(&self, a: Attr, cloexec: bool) -> OpenAction {
        let port = match a {
            Attr::Port(p) => self.fresh_port(p),
            _ => self
                .port
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        };
        let text = sysfs::render(a, &self.node, &port);
        match sys::memfd_with(text.as_bytes(), cloexec) {
            Ok(fd) => OpenAction::Fd(fd),
            Err(e) => OpenAction::Fail(e),
        }
    }
}

fn pkeys_of(raw: &[u8; 64], n: usize) -> Vec<u16> {
    raw.chunks_exact(2)
        .take(n)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect()
}

fn write_tree(root: &Path, node: &NodeAttrs, port: &PortAttrs) -> io::Result<()> {
    std::fs::create_dir_all(root)?;
    for e in sysfs::tree(node, port) {
        let p = root.join(&e.path);
        match e.content {
            None => std::fs::create_dir_all(&p)?,
            Some(text) => std::fs::write(&p, text)?,
        }
    }
    Ok(())
}

// ---- the API of the interposers ----

/// The emulated target of `path` with the runtime (started on first use); `Ok(None)` if the
/// path is not ours.
fn ours(path: &[u8]) -> Result<Option<(Target, &'static Runtime)>, i32> {
    match sysfs::classify(path) {
        None => Ok(None),
        Some(t) => ensure().map(|rt| Some((t, rt))),
    }
}

/// Maps a path for `stat`/`opendir`/`scandir`/`access`/…: emulated paths go to the tree.
pub fn map_path(path: &[u8]) -> PathAction {
    match ours(path) {
        Ok(None) => PathAction::Real,
        Ok(Some((t, rt))) => rt.mapped(&t.rel()),
        Err(e) => PathAction::Fail(e),
    }
}

/// `open` of `path`: devices, live attribute files (read-only opens), or the mapped tree.
pub fn open_path(path: &[u8], flags: i32) -> OpenAction {
    let (t, rt) = match ours(path) {
        Ok(Some(x)) => x,
        Ok(None) => return OpenAction::Real,
        Err(e) => return OpenAction::Fail(e),
    };
    match t {
        Target::Umad(_) | Target::Issm(_) => rt.open_device(&t, flags),
        Target::Tree(rel) => {
            let read_only = flags & libc::O_ACCMODE == libc::O_RDONLY && flags & libc::O_CREAT == 0;
            match attr_of(&rel) {
                Some(a) if read_only && rt.root.join(&rel).is_file() => {
                    rt.live_file(a, flags & libc::O_CLOEXEC != 0)
                }
                _ => match rt.mapped(&rel) {
                    PathAction::Mapped(c) => OpenAction::Mapped(c),
                    PathAction::Fail(e) => OpenAction::Fail(e),
                    PathAction::Real => OpenAction::Real,
                },
            }
        }
    }
}

/// `fopen` of `path` (read-only opens of attribute files get fresh contents).
pub fn fopen_path(path: &[u8]) -> OpenAction {
    match sysfs::classify(path) {
        Some(Target::Tree(_)) => open_path(path, libc::O_RDONLY | libc::O_CLOEXEC),
        Some(_) => OpenAction::Fail(libc::EINVAL),
        None => OpenAction::Real,
    }
}

/// `realpath` of an emulated path: the normalized path itself if it exists.
pub fn realpath(path: &[u8]) -> Option<Result<Vec<u8>, i32>> {
    match ours(path) {
        Ok(None) => None,
        Err(e) => Some(Err(e)),
        Ok(Some((t, rt))) => {
            let rel = t.rel();
            Some(if rt.root.join(&rel).exists() {
                Ok(format!("/{rel}").into_bytes())
            } else {
                Err(libc::ENOENT)
            })
        }
    }
}

/// True if `fd` is one of our descriptors (cheap; never starts the runtime).
pub fn is_ours(fd: RawFd) -> bool {
    running().is_some_and(|rt| rt.marked(fd))
}

/// `close` of one of our descriptors; `None` if it is not ours after all.
pub fn close(fd: RawFd) -> Option<Result<(), i32>> {
    let rt = running()?;
    let mut st = rt.lock();
    let entry = st.fds.remove(&fd)?;
    rt.mark(fd, false);
    match entry {
        FdEntry::Umad(file) => {
            st.core.close_file(file);
            let d = rt.drain(&mut st);
            {
                // Under both locks: a signal collected before this close is checked again
                // ([`Runtime::signal`]), so this number is never signalled after its reuse.
                let _g = rt
                    .signal_lock
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                rt.closes.fetch_add(1, Ordering::SeqCst);
                sys::close_fd(fd);
            }
            drop(st);
            rt.finish(d);
        }
        FdEntry::Issm => {
            st.issm_held = false;
            drop(st);
            sys::close_fd(fd);
            if let Err(e) = rt.client.ctl(CtlType::SET_ISSM, &0i32.to_ne_bytes()) {
                say(&format!("SET_ISSM(0): {e}"));
            }
            rt.issm_free.notify_one();
        }
    }
    Some(Ok(()))
}

/// `read` on one of our descriptors.
pub fn read(fd: RawFd, buf: &mut [u8]) -> Option<Result<usize, i32>> {
    let rt = running()?;
    let (file, hl) = {
        let st = rt.lock();
        let file = match st.fds.get(&fd).copied()? {
            FdEntry::Issm => return Some(Err(libc::EINVAL)),
            FdEntry::Umad(f) => f,
        };
        (file, st.core.hdr_len(file).unwrap_or(56))
    };
    if buf.len() < hl {
        return Some(Err(libc::EINVAL));
    }
    // One count per queued packet: blocks (or EAGAIN) as the descriptor is set up.
    let mut count = [0u8; 8];
    if let Err(e) = sys::read_into(fd, &mut count) {
        return Some(Err(e));
    }
    let mut st = rt.lock();
    let resignal = |st: &MutexGuard<'_, State>| {
        if st.fds.contains_key(&fd) {
            let _ = sys::write_all(fd, &1u64.to_ne_bytes());
        }
    };
    Some(match st.core.read(file, buf.len()) {
        ReadResult::Data(b) => {
            buf[..b.len()].copy_from_slice(&b);
            Ok(b.len())
        }
        ReadResult::NoSpace(b) => {
            buf[..b.len()].copy_from_slice(&b);
            resignal(&st);
            Err(libc::ENOSPC)
        }
        ReadResult::Errno { errno, requeued } => {
            if requeued {
                resignal(&st);
            }
            Err(errno)
        }
        ReadResult::Empty => Err(libc::EAGAIN),
    })
}

/// `write` on one of our descriptors.
pub fn write(fd: RawFd, buf: &[u8]) -> Option<Result<usize, i32>> {
    let rt = running()?;
    let mut st = rt.lock();
    let file = match st.fds.get(&fd).copied()? {
        FdEntry::Issm => return Some(Err(libc::EINVAL)),
        FdEntry::Umad(f) => f,
    };
    let now = rt.now();
    let r = st.core.handle_write(now, file, buf);
    let d = rt.drain(&mut st);
    drop(st);
    rt.finish(d);
    Some(r)
}

fn file_of(fd: RawFd) -> Result<(&'static Runtime, FileId), i32> {
    let rt = running().ok_or(libc::EBADF)?;
    match rt.entry(fd) {
        Some(FdEntry::Umad(f)) => Ok((rt, f)),
        Some(FdEntry::Issm) => Err(libc::ENOTTY),
        None => Err(libc::EBADF),
    }
}

/// `IB_USER_MAD_ENABLE_PKEY`.
///
/// # Errors
/// errno.
pub fn enable_pkey(fd: RawFd) -> Result<i32, i32> {
    let (rt, f) = file_of(fd)?;
    rt.lock().core.enable_pkey(f).map(|()| 0)
}

fn methods_of(words: impl IntoIterator<Item = (u32, u128)>) -> u128 {
    words
        .into_iter()
        .fold(0, |acc, (shift, w)| acc | (w << shift))
}

/// `IB_USER_MAD_REGISTER_AGENT`.
///
/// # Errors
/// errno.
pub fn register_v1(fd: RawFd, r: &RegReq) -> Result<u32, i32> {
    let (rt, f) = file_of(fd)?;
    let req = RegRequest {
        qpn: u32::from(r.qpn),
        class: r.mgmt_class,
        class_version: r.mgmt_class_version,
        methods: methods_of(
            r.method_mask
                .iter()
                .enumerate()
                .map(|(i, &w)| (32 * i as u32, u128::from(w))),
        ),
        oui: r.oui,
        rmpp_version: r.rmpp_version,
        flags: 0,
        v2: false,
    };
    rt.register(f, &req).map_err(|e| match e {
        RegError::Errno(e) => e,
        RegError::BadFlags { .. } => libc::EINVAL,
    })
}

/// `IB_USER_MAD_REGISTER_AGENT2`: on `EINVAL` for unknown flags, also the supported flags.
///
/// # Errors
/// errno and, for bad flags, the flags to write back.
pub fn register_v2(fd: RawFd, r: &RegReq2) -> Result<u32, (i32, Option<u32>)> {
    let (rt, f) = file_of(fd).map_err(|e| (e, None))?;
    let oui = r.oui.to_be_bytes();
    if r.oui & 0xFF00_0000 != 0 {
        return Err((libc::EINVAL, None));
    }
    let req = RegRequest {
        qpn: r.qpn,
        class: r.mgmt_class,
        class_version: r.mgmt_class_version,
        methods: methods_of(
            r.method_mask
                .iter()
                .enumerate()
                .map(|(i, &w)| (64 * i as u32, u128::from(w))),
        ),
        oui: [oui[1], oui[2], oui[3]],
        rmpp_version: r.rmpp_version,
        flags: r.flags,
        v2: true,
    };
    rt.register(f, &req).map_err(|e| match e {
        RegError::Errno(e) => (e, None),
        RegError::BadFlags { supported } => (libc::EINVAL, Some(supported)),
    })
}

/// `IB_USER_MAD_UNREGISTER_AGENT`.
///
/// # Errors
/// errno.
pub fn unregister(fd: RawFd, id: u32) -> Result<(), i32> {
    let (rt, f) = file_of(fd)?;
    let (r, d) = {
        let mut st = rt.lock();
        let r = st.core.unregister(f, id);
        (r, rt.drain(&mut st))
    };
    rt.signal(&d.ready, d.closes);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_specs_parse_and_bad_ones_are_named() {
        let f = parse_faults("drop-data-seg=3, max-acks=0").unwrap();
        assert_eq!(f.drop_data_segment, Some(3));
        assert_eq!(f.max_acks, Some(0));
        assert_eq!(parse_faults("").unwrap(), Faults::default());
        assert!(parse_faults("drop=1")
            .unwrap_err()
            .contains("unknown fault \"drop\""));
        assert!(parse_faults("max-acks").unwrap_err().contains("NAME=N"));
        assert!(parse_faults("max-acks=x")
            .unwrap_err()
            .contains("not a number"));
    }

    #[test]
    fn pkeys_are_big_endian_and_cut_to_the_partition_cap() {
        let mut raw = [0u8; 64];
        raw[0..4].copy_from_slice(&[0xff, 0xff, 0x80, 0x01]);
        assert_eq!(pkeys_of(&raw, 2), vec![0xffff, 0x8001]);
        assert_eq!(pkeys_of(&raw, 40).len(), 32);
    }

    #[test]
    fn method_masks_combine_words_little_endian() {
        let m = methods_of([(0, 1u128 << 1), (32, 1u128), (96, 1u128 << 31)]);
        assert_eq!(m, (1 << 1) | (1 << 32) | (1 << 127));
    }
}

//! A blocking SMP requester for the diagnostics: TIDs, a window of requests in flight,
//! timeouts with retries, and answers handed back **in issue order**.
//!
//! Handing answers back in the order the requests were issued (holding early ones until the
//! head of the window is done) makes a pipelined scan give the same result as libibnetdisc's
//! one-at-a-time callbacks on an in-order fabric — the node order ibnetdiscover, iblinkinfo and
//! dump_fts print — while keeping `window` SMPs on the wire. MAD encoding is ibmad's
//! ([`Smp::dr_request`], [`Smp::lid_request`]); this module only moves them.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, Lid, MadMeta, Method, PortError, Smp, SmpAttrId, Status, Time, SMP_LEN};

use super::port::DiagPort;

/// How a request is addressed: directed route from the local port, or LID-routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    /// Directed route (class 0x81) along the path.
    Dr(DrPath),
    /// LID-routed (class 0x01) to the LID.
    Lid(Lid),
}

impl Addr {
    /// libibmad's `portid2str` text: `Lid 3`, or `DR path slid 65535; dlid 65535; 0,1`.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Addr::Lid(l) => format!("Lid {}", l.0),
            Addr::Dr(p) => format!("DR path slid 65535; dlid 65535; {p}"),
        }
    }
}

/// One SMP request.
#[derive(Clone, Debug)]
pub struct Req {
    /// Where it goes.
    pub addr: Addr,
    /// Get or Set.
    pub method: Method,
    /// Attribute.
    pub attr: SmpAttrId,
    /// Attribute modifier.
    pub attr_mod: u32,
    /// The SMP data (a Set's value; zero for a Get).
    pub data: [u8; 64],
}

impl Req {
    /// A Get.
    #[must_use]
    pub fn get(addr: Addr, attr: SmpAttrId, attr_mod: u32) -> Req {
        Req {
            addr,
            method: Method::GET,
            attr,
            attr_mod,
            data: [0; 64],
        }
    }
    /// A Set of `data`.
    #[must_use]
    pub fn set(addr: Addr, attr: SmpAttrId, attr_mod: u32, data: [u8; 64]) -> Req {
        Req {
            method: Method::SET,
            data,
            ..Req::get(addr, attr, attr_mod)
        }
    }
}

/// Why a request got no usable answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SmpError {
    /// No response after every attempt.
    Timeout {
        /// Times sent.
        attempts: u32,
    },
    /// The response carried a non-zero MAD status.
    Status(Status),
    /// The transport failed.
    Port(PortError),
}

impl fmt::Display for SmpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmpError::Timeout { attempts } => {
                write!(f, "no response after {attempts} attempts (timed out)")
            }
            SmpError::Status(s) => write!(f, "MAD status {:#06x}", s.0),
            SmpError::Port(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SmpError {}

/// What the requester did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// SMPs sent, resends included.
    pub sent: u64,
    /// Resends after a timeout.
    pub retried: u64,
    /// Requests given up.
    pub timed_out: u64,
    /// Responses matched.
    pub answered: u64,
}

/// Timing and window options (the diags' `-t` timeout; libibnetdisc's outstanding SMPs).
#[derive(Clone, Copy, Debug)]
pub struct ClientConfig {
    /// Time to wait for one response.
    pub timeout: Duration,
    /// Resends after the first attempt.
    pub retries: u32,
    /// Requests in flight at once.
    pub window: usize,
    /// M_Key carried in every request.
    pub m_key: u64,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            timeout: Duration::from_millis(200),
            retries: 3,
            window: 32,
            m_key: 0,
        }
    }
}

struct Slot<T> {
    tid: u32,
    req: Req,
    tag: T,
    attempts: u32,
    deadline: Time,
    result: Option<Result<[u8; 64], SmpError>>,
}

/// The requester over a [`DiagPort`].
pub struct Client<'p> {
    port: &'p mut dyn DiagPort,
    cfg: ClientConfig,
    next_tid: u32,
    /// The local port's LID (the SLID of LID-routed requests), once known.
    pub local_lid: Lid,
    stats: ClientStats,
}

impl<'p> Client<'p> {
    /// A requester on `port`.
    pub fn new(port: &'p mut dyn DiagPort, cfg: ClientConfig) -> Client<'p> {
        let seed = port.now().as_nanos() as u32;
        Client {
            port,
            cfg,
            next_tid: seed.wrapping_mul(2_654_435_761) | 1,
            local_lid: Lid::UNASSIGNED,
            stats: ClientStats::default(),
        }
    }

    /// What it did so far.
    #[must_use]
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// The transport.
    pub fn port(&mut self) -> &mut dyn DiagPort {
        self.port
    }

    /// One request, waited for.
    ///
    /// # Errors
    /// [`SmpError`].
    pub fn request(&mut self, req: Req) -> Result<[u8; 64], SmpError> {
        let mut out = None;
        self.run(vec![(req, ())], |(), _, r, _| out = Some(r))?;
        out.unwrap_or(Err(SmpError::Timeout { attempts: 0 }))
    }

    /// A Get, waited for.
    ///
    /// # Errors
    /// [`SmpError`].
    pub fn get(
        &mut self,
        addr: Addr,
        attr: SmpAttrId,
        attr_mod: u32,
    ) -> Result<[u8; 64], SmpError> {
        self.request(Req::get(addr, attr, attr_mod))
    }

    /// Runs `initial` and whatever `done` queues, `window` at a time; `done` sees every
    /// answer in issue order and may queue more requests.
    ///
    /// # Errors
    /// Only a transport failure ends the run early; per-request failures go to `done`.
    pub fn run<T>(
        &mut self,
        initial: Vec<(Req, T)>,
        mut done: impl FnMut(T, &Req, Result<[u8; 64], SmpError>, &mut VecDeque<(Req, T)>),
    ) -> Result<(), SmpError> {
        let mut queue: VecDeque<(Req, T)> = initial.into();
        let mut flight: VecDeque<Slot<T>> = VecDeque::new();
        let mut buf = [0u8; 256];
        loop {
            while flight.len() < self.cfg.window.max(1) {
                let Some((req, tag)) = queue.pop_front() else {
                    break;
                };
                let tid = self.next_tid;
                self.next_tid = self.next_tid.wrapping_add(1);
                let mut slot = Slot {
                    tid,
                    req,
                    tag,
                    attempts: 0,
                    deadline: Time::ZERO,
                    result: None,
                };
                self.transmit(&mut slot)?;
                flight.push_back(slot);
            }
            while flight.front().is_some_and(|s| s.result.is_some()) {
                let Some(s) = flight.pop_front() else { break };
                let r = s.result.unwrap_or(Err(SmpError::Timeout { attempts: 0 }));
                done(s.tag, &s.req, r, &mut queue);
            }
            if flight.is_empty() {
                if queue.is_empty() {
                    return Ok(());
                }
                continue;
            }
            let now = self.port.now();
            let next = flight
                .iter()
                .filter(|s| s.result.is_none())
                .map(|s| s.deadline)
                .min()
                .unwrap_or(now);
            let wait = next.saturating_since(now);
            if let Some((_, len)) = self
                .port
                .recv_wait(&mut buf, wait)
                .map_err(SmpError::Port)?
            {
                self.match_response(&buf[..len.min(SMP_LEN)], &mut flight);
            }
            let now = self.port.now();
            for slot in flight.iter_mut() {
                if slot.result.is_some() || slot.deadline > now {
                    continue;
                }
                if slot.attempts > self.cfg.retries {
                    self.stats.timed_out += 1;
                    let attempts = slot.attempts;
                    slot.result = Some(Err(SmpError::Timeout { attempts }));
                } else {
                    self.stats.retried += 1;
                    self.transmit(slot)?;
                }
            }
        }
    }

    fn transmit<T>(&mut self, slot: &mut Slot<T>) -> Result<(), SmpError> {
        let r = &slot.req;
        let tid = u64::from(slot.tid);
        let (mut smp, meta) = match r.addr {
            Addr::Dr(path) => (
                Smp::dr_request(r.method, r.attr, r.attr_mod, tid, &path),
                MadMeta {
                    port: self.port.local_port(),
                    slid: Lid::PERMISSIVE,
                    dlid: Lid::PERMISSIVE,
                    ..MadMeta::default()
                },
            ),
            Addr::Lid(lid) => (
                Smp::lid_request(r.method, r.attr, r.attr_mod, tid),
                MadMeta {
                    port: self.port.local_port(),
                    slid: self.local_lid,
                    dlid: lid,
                    ..MadMeta::default()
                },
            ),
        };
        smp.m_key.set(self.cfg.m_key);
        smp.data = r.data;
        slot.attempts += 1;
        slot.deadline = self.port.now() + self.cfg.timeout;
        match self.port.send(&meta, smp.as_bytes()) {
            Ok(()) => {
                self.stats.sent += 1;
                Ok(())
            }
            // A full queue is a lost send: the timeout resends it.
            Err(PortError::WouldBlock) => Ok(()),
            Err(e) => Err(SmpError::Port(e)),
        }
    }

    fn match_response<T>(&mut self, mad: &[u8], flight: &mut VecDeque<Slot<T>>) {
        let Ok(smp) = Smp::ref_from_bytes(mad) else {
            return;
        };
        if smp.method != Method::GET_RESP.0 {
            return;
        }
        let tid = smp.tid.get() as u32;
        let Some(slot) = flight
            .iter_mut()
            .find(|s| s.tid == tid && s.result.is_none())
        else {
            return;
        };
        if smp.attr_id.get() != slot.req.attr.0 {
            return;
        }
        self.stats.answered += 1;
        // `status()` leaves out a DR SMP's direction bit.
        let status = smp.status();
        slot.result = Some(if status != Status(0) {
            Err(SmpError::Status(status))
        } else {
            Ok(smp.data)
        });
    }
}

//! Test harness: several [`Core`]s on a virtual clock behind an in-memory stand-in for ibsim's
//! forwarding (`process_packet`/`find_client`): LID routing, the sender's slot written into TID
//! bits 48..63 of requests, responses to the slot in the TID, requests to the client whose QP is
//! the destination QP (or, for QP 0/1, the node's SM client), undeliverable frames returned with
//! status 110. A per-frame drop hook injects loss.

use ibmad::ibsim::SimRequest;
use ibmad::Time;
use umad::abi::{HdrFraming, UmadHdr};

use crate::core::{Config, Core, FileId, ReadResult, RegRequest};

/// One client process: its core, one open file, and where it sits.
pub struct Peer {
    pub core: Core,
    pub lid: u16,
    pub slot: u16,
    pub qp: u32,
    pub issm: bool,
    pub file: FileId,
    pub readable: usize,
}

/// Sees every frame before routing: may alter it; `true` drops it.
type DropHook = Box<dyn FnMut(usize, &mut SimRequest) -> bool>;

/// The fabric.
pub struct Net {
    pub peers: Vec<Peer>,
    pub now: Time,
    /// Every frame routed: (sender index, frame as delivered or bounced).
    pub log: Vec<(usize, SimRequest)>,
    pub drop: DropHook,
}

impl Net {
    pub fn new() -> Net {
        Net {
            peers: Vec::new(),
            now: Time::ZERO,
            log: Vec::new(),
            drop: Box::new(|_, _| false),
        }
    }

    /// Adds a client at `lid` with a config `tune` may adjust; returns its index.
    pub fn add(&mut self, lid: u16, issm: bool, tune: impl FnOnce(&mut Config)) -> usize {
        let slot = self.peers.len() as u16;
        let qp = 0x80_0000 | (u32::from(slot) + 100);
        let mut cfg = Config {
            own_qp: qp,
            trace: true,
            ..Config::default()
        };
        tune(&mut cfg);
        let mut core = Core::new(cfg);
        let file = core.open_file(i32::from(slot));
        self.peers.push(Peer {
            core,
            lid,
            slot,
            qp,
            issm,
            file,
            readable: 0,
        });
        self.peers.len() - 1
    }

    fn route(&mut self, from: usize, mut f: SimRequest) {
        if (self.drop)(from, &mut f) {
            return;
        }
        let response = f.is_response();
        if !response {
            let tid = (f.tid() & 0x0000_FFFF_FFFF_FFFF) | (u64::from(self.peers[from].slot) << 48);
            f.set_tid(tid);
        }
        if f.slid.get() == 0 {
            f.slid.set(self.peers[from].lid);
        }
        let dlid = f.dlid.get();
        let slot = (f.tid() >> 48) as usize;
        let dqp = f.dqp.get();
        let dest = if response && self.peers.get(slot).is_some_and(|p| p.lid == dlid) {
            Some(slot)
        } else {
            self.peers.iter().position(|p| {
                p.lid == dlid
                    && if dqp > 1 {
                        dqp == p.qp
                    } else {
                        !response && p.issm
                    }
            })
        };
        let to = match dest {
            Some(d) => d,
            None => {
                f.status.set(110);
                from
            }
        };
        self.log.push((from, f));
        let now = self.now;
        self.peers[to].core.handle_frame(now, &f);
    }

    /// Moves frames until every core is quiet.
    pub fn pump(&mut self) {
        loop {
            let mut moved = Vec::new();
            for (i, p) in self.peers.iter_mut().enumerate() {
                while let Some(f) = p.core.poll_transmit() {
                    moved.push((i, f));
                }
                while p.core.poll_event().is_some() {
                    p.readable += 1;
                }
                while p.core.poll_trace().is_some() {}
            }
            if moved.is_empty() {
                return;
            }
            for (i, f) in moved {
                self.route(i, f);
            }
        }
    }

    /// Runs timers and traffic until virtual time `to`.
    pub fn advance_to(&mut self, to: Time) {
        loop {
            self.pump();
            let next = self
                .peers
                .iter()
                .filter_map(|p| p.core.poll_timeout())
                .min();
            match next {
                Some(t) if t <= to => {
                    if t > self.now {
                        self.now = t;
                    }
                    let now = self.now;
                    for p in &mut self.peers {
                        p.core.handle_timeout(now);
                    }
                }
                _ => break,
            }
        }
        if to > self.now {
            self.now = to;
        }
        self.pump();
    }

    /// Advances by `ms` milliseconds.
    pub fn advance_ms(&mut self, ms: u64) {
        let to = Time(self.now.0 + ms * 1_000_000);
        self.advance_to(to);
    }
}

/// The 56-byte framing unless the file switched.
pub fn framing(p: &Peer) -> HdrFraming {
    if p.core.hdr_len(p.file) == Some(64) {
        HdrFraming::New
    } else {
        HdrFraming::Old
    }
}

impl Peer {
    /// Registers an agent for `class` (GSI unless SMI), all methods in `methods`.
    pub fn register(&mut self, class: u8, version: u8, rmpp: u8, methods: u128) -> u32 {
        let req = RegRequest {
            qpn: u32::from(!(class == 0x01 || class == 0x81)),
            class,
            class_version: version,
            methods,
            rmpp_version: rmpp,
            ..RegRequest::default()
        };
        self.core.register(self.file, &req).unwrap()
    }

    /// Writes `mad` with a header to `lid`/`qpn`.
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        now: Time,
        agent: u32,
        lid: u16,
        qpn: u32,
        timeout_ms: u32,
        retries: u32,
        mad: &[u8],
    ) -> Result<usize, i32> {
        let hdr = UmadHdr {
            id: agent,
            timeout_ms,
            retries,
            lid,
            qpn,
            qkey: 0x8001_0000,
            ..UmadHdr::default()
        };
        let fr = framing(self);
        let mut buf = vec![0u8; fr.hdr_len()];
        hdr.encode(fr, &mut buf).unwrap();
        buf.extend_from_slice(mad);
        self.core.handle_write(now, self.file, &buf)
    }

    /// Reads one packet with a buffer of `cap` bytes.
    pub fn read(&mut self, cap: usize) -> ReadResult {
        self.core.read(self.file, cap)
    }

    /// Reads every queued packet (big buffer): (header, MAD bytes).
    pub fn read_all(&mut self) -> Vec<(UmadHdr, Vec<u8>)> {
        let fr = framing(self);
        let mut v = Vec::new();
        while let ReadResult::Data(b) = self.core.read(self.file, 1 << 24) {
            let h = UmadHdr::decode(fr, &b).unwrap();
            v.push((h, b[fr.hdr_len()..].to_vec()));
        }
        v
    }
}

/// A MAD: base version 1, `class`/`version`/`method`, TID, attribute id.
pub fn mad(class: u8, version: u8, method: u8, tid: u64, attr: u16, len: usize) -> Vec<u8> {
    let mut m = vec![0u8; len];
    m[0] = 1;
    m[1] = class;
    m[2] = version;
    m[3] = method;
    m[8..16].copy_from_slice(&tid.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m
}

//! RMPP sending by the SA itself (IBA vol1 §13.6), for transports that do not segment:
//! the simulator's in-process driver, VFIO, and `libibsm_umad.so` or the kernel when the
//! agent is registered without an RMPP version ([`super::SaConfig::transport_rmpp`] false).
//!
//! A GetTableResp longer than one MAD becomes a transfer: the message is cut into DATA
//! segments ([`ibmad::rmpp::transfer::Sender`]: First/Last, PayloadLength, SegmentNumber),
//! sent up to the receiver's window (1 until its first ACK); each ACK from the requester
//! (same TID, RMPPType ACK) moves the window; without an ACK for
//! [`super::SaConfig::resp_time`] the segments after the last acknowledged one go again, up to
//! [`super::SaConfig::report_retries`] times, then the SA sends ABORT (TooManyRetries) and
//! forgets the transfer. A STOP or ABORT from the requester ends it at once; an invalid ACK
//! is answered with ABORT. At most [`MAX_TRANSFERS`] run at once: beyond, the request is
//! answered BUSY.

use core::time::Duration;

use ibmad::rmpp::transfer::{abort_for, AckOutcome, Sender, TimeoutOutcome, MAD_LEN};
use ibmad::rmpp::{RmppHeader, RmppStatus, RmppType, RMPP_HEADER_OFFSET};
use ibmad::sa::SA_DATA_OFFSET;
use ibmad::zerocopy::FromBytes;
use ibmad::{Lid, MadMeta, Time};

use super::SaReply;

/// Transfers in progress at most.
pub const MAX_TRANSFERS: usize = 256;

#[derive(Clone, Debug)]
struct Transfer {
    /// The requester's LID and QP, and the TID: what an ACK names.
    to: (Lid, u32),
    tid: u64,
    meta: MadMeta,
    sender: Sender,
    /// When to stop waiting for an ACK (`None`: segments may go now).
    deadline: Option<Time>,
}

/// Counters of SA-side RMPP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RmppStats {
    /// Transfers started.
    pub started: u64,
    /// Transfers every segment of which was acknowledged.
    pub completed: u64,
    /// DATA segments sent (retransmissions included).
    pub segments: u64,
    /// Transfers aborted (retries spent, invalid ACK, STOP/ABORT from the requester).
    pub aborted: u64,
}

/// The SA's RMPP transfers.
#[derive(Clone, Debug, Default)]
pub struct Transfers {
    list: Vec<Transfer>,
    /// ABORTs to send.
    control: Vec<SaReply>,
    stats: RmppStats,
}

fn tid_of(mad: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = mad.get(8..16) {
        b.copy_from_slice(s);
    }
    u64::from_be_bytes(b)
}

impl Transfers {
    /// Counters.
    #[must_use]
    pub fn stats(&self) -> RmppStats {
        self.stats
    }
    /// True if no transfer is in progress.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// Ends every transfer at once, sending nothing more (the SA stopped serving).
    pub fn clear(&mut self) {
        self.list.clear();
        self.control.clear();
    }
    /// True if another transfer may start.
    #[must_use]
    pub fn has_room(&self) -> bool {
        self.list.len() < MAX_TRANSFERS
    }

    /// Starts sending `message` (a whole GetTableResp: headers, then every record) to `meta`
    /// (the request's reply address). A transfer with the same requester and TID (a
    /// retried request) is replaced. False if the message can not be segmented.
    pub fn start(&mut self, meta: MadMeta, message: &[u8], retries: u32) -> bool {
        let Ok(sender) = Sender::new(message, SA_DATA_OFFSET, retries, 1) else {
            return false;
        };
        let to = (meta.dlid, meta.qp);
        let tid = tid_of(message);
        self.list.retain(|t| !(t.to == to && t.tid == tid));
        self.list.push(Transfer {
            to,
            tid,
            meta,
            sender,
            deadline: None,
        });
        self.stats.started += 1;
        true
    }

    /// An RMPP ACK, STOP or ABORT from `from` (a MAD whose RMPP header is active and not
    /// DATA). Returns false if it belongs to no transfer.
    pub fn handle_control(&mut self, from: &MadMeta, mad: &[u8]) -> bool {
        let Some(h) = mad
            .get(RMPP_HEADER_OFFSET..RMPP_HEADER_OFFSET + 12)
            .and_then(|b| RmppHeader::ref_from_bytes(b).ok())
        else {
            return false;
        };
        let key = ((from.slid, from.qp), tid_of(mad));
        let Some(i) = self.list.iter().position(|t| (t.to, t.tid) == key) else {
            return false;
        };
        match h.kind() {
            RmppType::ACK => {
                let t = &mut self.list[i];
                match t.sender.handle_ack(h.data1.get(), h.data2.get()) {
                    AckOutcome::Ignored => {}
                    AckOutcome::Progress => t.deadline = None,
                    AckOutcome::Complete => {
                        self.list.remove(i);
                        self.stats.completed += 1;
                    }
                    AckOutcome::Abort(st) => self.abort(i, st),
                }
            }
            _ => {
                // STOP or ABORT from the requester: the transfer is over.
                self.list.remove(i);
                self.stats.aborted += 1;
            }
        }
        true
    }

    fn abort(&mut self, i: usize, status: RmppStatus) {
        let t = self.list.remove(i);
        let mut first = [0u8; MAD_LEN];
        first[..SA_DATA_OFFSET].copy_from_slice(t.sender.header());
        self.control.push(SaReply {
            meta: t.meta,
            mad: abort_for(&first, SA_DATA_OFFSET, status, false).to_vec(),
        });
        self.stats.aborted += 1;
    }

    /// The next segment (or ABORT) to send now; a transfer whose window is sent waits for its
    /// ACK from `now` for `ack_timeout`.
    pub fn poll_transmit(&mut self, now: Time, ack_timeout: Duration) -> Option<SaReply> {
        if let Some(c) = self.control.pop() {
            return Some(c);
        }
        let mut seg = [0u8; MAD_LEN];
        for t in self.list.iter_mut().filter(|t| t.deadline.is_none()) {
            if t.sender.next_segment(&mut seg).is_some() {
                self.stats.segments += 1;
                return Some(SaReply {
                    meta: t.meta,
                    mad: seg.to_vec(),
                });
            }
            t.deadline = Some(now + ack_timeout);
        }
        None
    }

    /// The earliest ACK deadline (`Time::ZERO` while segments wait to be sent).
    #[must_use]
    pub fn next_deadline(&self) -> Option<Time> {
        let waiting = (!self.control.is_empty()).then_some(Time::ZERO);
        self.list
            .iter()
            .map(|t| t.deadline.unwrap_or(Time::ZERO))
            .chain(waiting)
            .min()
    }

    /// ACK timeouts due by `now`: retransmit, or ABORT once the retries are spent.
    pub fn handle_timeout(&mut self, now: Time) {
        let mut i = 0;
        while i < self.list.len() {
            let t = &mut self.list[i];
            if t.deadline.is_some_and(|d| d <= now) {
                match t.sender.handle_timeout() {
                    TimeoutOutcome::Retransmit => t.deadline = None,
                    TimeoutOutcome::Exhausted => {
                        self.abort(i, RmppStatus::TOO_MANY_RETRIES);
                        continue;
                    }
                }
            }
            i += 1;
        }
    }
}

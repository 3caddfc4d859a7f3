//! The io_uring batched engine: many MAD writes and reads per `io_uring_enter` call.
//!
//! Ownership model (the only memory-safety question io_uring raises): every buffer handed to the
//! kernel is a heap slot (`Box<[u8]>`) owned by the engine, never moved or freed while an
//! operation that references it is in flight. A slot is in exactly one state — free, in flight,
//! or holding a received record waiting for [`UringEngine::take`] — tracked by the `*_free`
//! lists and the `ready` queue. On drop every in-flight operation is cancelled and its completion
//! awaited (bounded); if the kernel does not hand them all back in time the buffers are leaked
//! rather than freed, so a late kernel write can never land in freed memory.
//!
//! Receive path: one `POLL_ADD(POLLIN)` is armed on the device; when it fires, a batch of
//! non-blocking `READ`s (one per free slot, up to `rx_batch`) is queued; reads that find the
//! queue empty complete with `-EAGAIN` and return their slot. When no read is in flight the poll
//! is re-armed. Send path: each MAD is copied into a free tx slot and a `WRITE` is queued;
//! queued entries are submitted together by the next [`UringEngine::pump`], or as soon as
//! `BATCH` (32) are queued. The device fd must be non-blocking (`O_NONBLOCK`).

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring, Probe};

use crate::error::SysError;

const TAG_SHIFT: u32 = 32;
const TAG_RX: u64 = 1;
const TAG_TX: u64 = 2;
const TAG_POLL: u64 = 3;
const TAG_CANCEL: u64 = 4;
/// Reads queued per readiness event, and queued SQEs that trigger a submit on their own: large
/// enough to amortise `io_uring_enter`, small enough not to flood io-wq with reads that will
/// mostly find the queue empty.
const BATCH: usize = 32;

fn ud(tag: u64, slot: usize) -> u64 {
    (tag << TAG_SHIFT) | slot as u64
}

fn uerr(op: &'static str, source: io::Error) -> SysError {
    SysError {
        op,
        target: "io_uring".into(),
        source,
    }
}

/// Counters of the io_uring engine (see [`crate::UmadPort::uring_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UringStats {
    /// `io_uring_enter` calls made.
    pub enters: u64,
    /// Write SQEs completed.
    pub writes: u64,
    /// Read SQEs completed with data.
    pub reads: u64,
    /// Read SQEs that found nothing (-EAGAIN).
    pub empty_reads: u64,
    /// Read SQEs refused with -ENOSPC: an RMPP-reassembled MAD longer than a ring slot, left
    /// queued by the kernel for a read with a larger buffer.
    pub oversize_reads: u64,
}

/// A batched user_mad engine over one non-blocking device fd.
pub(crate) struct UringEngine {
    ring: IoUring,
    fd: RawFd,
    rec_len: usize,
    rx_bufs: Vec<Box<[u8]>>,
    rx_free: Vec<usize>,
    rx_inflight: usize,
    rx_batch: usize,
    ready: VecDeque<(usize, usize)>,
    tx_bufs: Vec<Box<[u8]>>,
    tx_lens: Vec<usize>,
    tx_free: Vec<usize>,
    tx_inflight: usize,
    poll_armed: bool,
    closing: bool,
    queued: usize,
    errors: VecDeque<SysError>,
    /// A read saw -ENOSPC: a record longer than a slot waits in the kernel's queue.
    oversize: bool,
    stats: UringStats,
}

impl UringEngine {
    /// Sets up a ring for `fd` with `rx_slots` receive and `tx_slots` send buffers of
    /// `rec_len` bytes each. Fails if io_uring is unavailable (old kernel, seccomp,
    /// `kernel.io_uring_disabled`) or lacks READ/WRITE/POLL_ADD or `IORING_FEAT_EXT_ARG`.
    pub(crate) fn new(
        fd: RawFd,
        rec_len: usize,
        rx_slots: usize,
        tx_slots: usize,
    ) -> Result<UringEngine, SysError> {
        let rx_slots = rx_slots.max(1);
        let tx_slots = tx_slots.max(1);
        let entries = (rx_slots + tx_slots + 4).next_power_of_two() as u32;
        let ring = IoUring::new(entries).map_err(|e| uerr("io_uring_setup", e))?;
        if !ring.params().is_feature_ext_arg() {
            return Err(uerr(
                "io_uring_setup",
                io::Error::new(io::ErrorKind::Unsupported, "IORING_FEAT_EXT_ARG missing"),
            ));
        }
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|e| uerr("io_uring_register(PROBE)", e))?;
        for (code, name) in [
            (opcode::Read::CODE, "READ"),
            (opcode::Write::CODE, "WRITE"),
            (opcode::PollAdd::CODE, "POLL_ADD"),
        ] {
            if !probe.is_supported(code) {
                return Err(uerr(
                    "io_uring_register(PROBE)",
                    io::Error::new(
                        io::ErrorKind::Unsupported,
                        format!("opcode {name} unsupported"),
                    ),
                ));
            }
        }
        let mut e = UringEngine {
            ring,
            fd,
            rec_len,
            rx_bufs: (0..rx_slots)
                .map(|_| vec![0u8; rec_len].into_boxed_slice())
                .collect(),
            rx_free: (0..rx_slots).rev().collect(),
            rx_inflight: 0,
            rx_batch: rx_slots.min(BATCH),
            ready: VecDeque::new(),
            tx_bufs: (0..tx_slots)
                .map(|_| vec![0u8; rec_len].into_boxed_slice())
                .collect(),
            tx_lens: vec![0; tx_slots],
            tx_free: (0..tx_slots).rev().collect(),
            tx_inflight: 0,
            poll_armed: false,
            closing: false,
            queued: 0,
            errors: VecDeque::new(),
            oversize: false,
            stats: UringStats::default(),
        };
        e.arm_poll()?;
        e.submit()?;
        Ok(e)
    }

    /// Counters so far.
    pub(crate) fn stats(&self) -> UringStats {
        self.stats
    }

    /// Pushes one SQE, submitting first if the ring is full.
    ///
    /// # Safety
    /// Every buffer `entry` points to must stay valid and unaliased by Rust references until the
    /// completion carrying the entry's user_data has been reaped.
    unsafe fn push(&mut self, entry: &io_uring::squeue::Entry) -> Result<(), SysError> {
        for _ in 0..2 {
            // SAFETY: forwarded from this function's contract: the caller guarantees the buffers
            // of `entry` outlive its completion.
            let pushed = unsafe { self.ring.submission().push(entry) };
            if pushed.is_ok() {
                self.queued += 1;
                return Ok(());
            }
            self.submit()?;
        }
        Err(uerr(
            "io_uring push",
            io::Error::other("submission queue stays full"),
        ))
    }

    fn submit(&mut self) -> Result<(), SysError> {
        if self.queued == 0 {
            return Ok(());
        }
        self.stats.enters += 1;
        match self.ring.submit() {
            Ok(_) => {
                self.queued = 0;
                Ok(())
            }
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(()),
            Err(e) => Err(uerr("io_uring_enter(submit)", e)),
        }
    }

    fn arm_poll(&mut self) -> Result<(), SysError> {
        if self.poll_armed || self.closing {
            return Ok(());
        }
        let e = opcode::PollAdd::new(types::Fd(self.fd), libc::POLLIN as u32)
            .build()
            .user_data(ud(TAG_POLL, 0));
        // SAFETY: POLL_ADD references no user memory.
        unsafe { self.push(&e) }?;
        self.poll_armed = true;
        Ok(())
    }

    fn queue_reads(&mut self) -> Result<(), SysError> {
        let mut n = 0;
        while n < self.rx_batch {
            let Some(slot) = self.rx_free.pop() else {
                break;
            };
            let buf = &mut self.rx_bufs[slot];
            let e = opcode::Read::new(types::Fd(self.fd), buf.as_mut_ptr(), buf.len() as u32)
                .offset(u64::MAX)
                .build()
                .user_data(ud(TAG_RX, slot));
            // SAFETY: `slot` was just taken off the free list, so no Rust reference to
            // `rx_bufs[slot]` is handed out until its completion is reaped in `reap`, which puts
            // it on `ready`/`rx_free`; the boxed slice is never moved or freed while in flight
            // (see the module doc and `Drop`).
            unsafe { self.push(&e) }?;
            self.rx_inflight += 1;
            n += 1;
        }
        Ok(())
    }

    /// Queues one record for sending. `Ok(false)` when every tx slot is in flight.
    pub(crate) fn queue_send(&mut self, rec: &[u8]) -> Result<bool, SysError> {
        if rec.len() > self.rec_len {
            return Err(uerr(
                "io_uring write",
                io::Error::new(io::ErrorKind::InvalidInput, "record longer than a slot"),
            ));
        }
        if self.tx_free.is_empty() {
            self.reap()?;
        }
        if self.tx_free.is_empty() {
            self.pump(None)?;
        }
        let Some(slot) = self.tx_free.pop() else {
            return Ok(false);
        };
        self.tx_bufs[slot][..rec.len()].copy_from_slice(rec);
        self.tx_lens[slot] = rec.len();
        let buf = &self.tx_bufs[slot];
        let e = opcode::Write::new(types::Fd(self.fd), buf.as_ptr(), rec.len() as u32)
            .offset(u64::MAX)
            .build()
            .user_data(ud(TAG_TX, slot));
        // SAFETY: `slot` was taken off the free list; `tx_bufs[slot]` is not touched again until
        // its completion is reaped and the slot is returned to `tx_free`; the box is never moved
        // or freed while in flight (see `Drop`).
        unsafe { self.push(&e) }?;
        self.tx_inflight += 1;
        if self.queued >= BATCH {
            self.submit()?;
        }
        Ok(true)
    }

    /// Submits everything queued in one `io_uring_enter`, optionally waiting up to `wait` for at
    /// least one completion, then reaps all completions.
    pub(crate) fn pump(&mut self, wait: Option<Duration>) -> Result<(), SysError> {
        match wait {
            Some(d) if self.ready.is_empty() && self.in_flight() > 0 => {
                let ts = types::Timespec::from(d);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.stats.enters += 1;
                match self.ring.submitter().submit_with_args(1, &args) {
                    Ok(_) => self.queued = 0,
                    Err(e)
                        if matches!(
                            e.raw_os_error(),
                            Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                        ) =>
                    {
                        // ETIME: the wait timed out; the SQEs were still submitted.
                        if e.raw_os_error() == Some(libc::ETIME) {
                            self.queued = 0;
                        }
                    }
                    Err(e) => return Err(uerr("io_uring_enter(wait)", e)),
                }
            }
            _ => self.submit()?,
        }
        self.reap()
    }

    fn in_flight(&self) -> usize {
        self.rx_inflight + self.tx_inflight + usize::from(self.poll_armed)
    }

    fn reap(&mut self) -> Result<(), SysError> {
        let mut fired = false;
        let done: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (data, res) in done {
            let slot = (data & 0xFFFF_FFFF) as usize;
            match data >> TAG_SHIFT {
                TAG_RX => {
                    self.rx_inflight = self.rx_inflight.saturating_sub(1);
                    if res > 0 {
                        self.stats.reads += 1;
                        self.ready.push_back((slot, res as usize));
                    } else {
                        self.rx_free.push(slot);
                        if res == -libc::EAGAIN || res == -libc::EINTR || res == 0 {
                            self.stats.empty_reads += 1;
                        } else if res == -libc::ENOSPC {
                            self.stats.oversize_reads += 1;
                            self.oversize = true;
                        } else if res != -libc::ECANCELED {
                            self.errors.push_back(SysError {
                                op: "io_uring read",
                                target: format!("fd {}", self.fd),
                                source: io::Error::from_raw_os_error(-res),
                            });
                        }
                    }
                }
                TAG_TX => {
                    self.tx_inflight = self.tx_inflight.saturating_sub(1);
                    self.stats.writes += 1;
                    let want = self.tx_lens.get(slot).copied().unwrap_or(0);
                    self.tx_free.push(slot);
                    if res < 0 && res != -libc::ECANCELED {
                        self.errors.push_back(SysError {
                            op: "io_uring write",
                            target: format!("fd {}", self.fd),
                            source: io::Error::from_raw_os_error(-res),
                        });
                    } else if res >= 0 && (res as usize) < want {
                        self.errors.push_back(SysError {
                            op: "io_uring write",
                            target: format!("fd {}", self.fd),
                            source: io::Error::new(
                                io::ErrorKind::WriteZero,
                                format!("short write {res} of {want}"),
                            ),
                        });
                    }
                }
                TAG_POLL => {
                    self.poll_armed = false;
                    if res > 0 {
                        fired = true;
                    } else if res < 0 && res != -libc::ECANCELED {
                        self.errors.push_back(SysError {
                            op: "io_uring poll",
                            target: format!("fd {}", self.fd),
                            source: io::Error::from_raw_os_error(-res),
                        });
                    }
                }
                _ => {}
            }
        }
        if fired && !self.closing {
            self.queue_reads()?;
        }
        if self.rx_inflight == 0 && !self.rx_free.is_empty() {
            self.arm_poll()?;
        }
        Ok(())
    }

    /// Copies the oldest received record into `out` (truncated to its length) and returns the
    /// record length, or `None` if nothing has been received.
    pub(crate) fn take(&mut self, out: &mut [u8]) -> Result<Option<usize>, SysError> {
        let Some((slot, len)) = self.ready.pop_front() else {
            return Ok(None);
        };
        let n = len.min(out.len()).min(self.rec_len);
        out[..n].copy_from_slice(&self.rx_bufs[slot][..n]);
        self.rx_free.push(slot);
        if self.rx_inflight == 0 {
            self.arm_poll()?;
        }
        Ok(Some(len))
    }

    /// An error reported by an asynchronous completion, oldest first.
    pub(crate) fn take_error(&mut self) -> Option<SysError> {
        self.errors.pop_front()
    }

    /// True if a received record is waiting.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// True if a record too long for the ring waits in the kernel (see [`UringStats`]).
    pub(crate) fn oversize_waiting(&self) -> bool {
        self.oversize
    }

    /// Returns and clears [`UringEngine::oversize_waiting`]; the caller then reads the record
    /// itself with a buffer of its length.
    pub(crate) fn take_oversize(&mut self) -> bool {
        std::mem::take(&mut self.oversize)
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        self.closing = true;
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(ud(TAG_CANCEL, 0));
        // SAFETY: ASYNC_CANCEL references no user memory.
        let _ = unsafe { self.push(&cancel) };
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.in_flight() > 0 && Instant::now() < deadline {
            if self.pump(Some(Duration::from_millis(50))).is_err() {
                break;
            }
        }
        if self.in_flight() > 0 {
            // The kernel still owns some buffers: leak them instead of freeing memory it may
            // write to later.
            std::mem::forget(std::mem::take(&mut self.rx_bufs));
            std::mem::forget(std::mem::take(&mut self.tx_bufs));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{read, socketpair_seqpacket, write};

    fn engine_or_skip(fd: RawFd, rec: usize, rx: usize, tx: usize) -> Option<UringEngine> {
        match UringEngine::new(fd, rec, rx, tx) {
            Ok(e) => Some(e),
            Err(e) => {
                crate::testutil::report_skip("io_uring engine test", &format!("{e}: {}", e.source));
                None
            }
        }
    }

    #[test]
    fn batched_sends_arrive_in_few_enters() {
        let (a, b) = socketpair_seqpacket().unwrap();
        let Some(mut eng) = engine_or_skip(a.raw(), 64, 8, 32) else {
            return;
        };
        let before = eng.stats().enters;
        for i in 0..32u8 {
            assert!(eng.queue_send(&[i; 64]).unwrap());
        }
        eng.pump(None).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 128];
        let t0 = Instant::now();
        while got.len() < 32 && t0.elapsed() < Duration::from_secs(5) {
            eng.pump(Some(Duration::from_millis(10))).unwrap();
            while let Some(n) = read(b.raw(), &mut buf).unwrap() {
                assert_eq!(n, 64);
                got.push(buf[0]);
            }
        }
        got.sort_unstable();
        assert_eq!(got, (0..32u8).collect::<Vec<_>>());
        assert!(eng.take_error().is_none());
        // 32 writes went out in far fewer than 32 io_uring_enter calls.
        assert!(eng.stats().enters - before < 8, "{:?}", eng.stats());
    }

    #[test]
    fn receives_records_written_by_the_peer() {
        let (a, b) = socketpair_seqpacket().unwrap();
        let Some(mut eng) = engine_or_skip(a.raw(), 64, 4, 4) else {
            return;
        };
        for i in 0..10u8 {
            assert_eq!(write(b.raw(), &[i; 40]).unwrap(), Some(40));
        }
        let mut got = Vec::new();
        let mut out = [0u8; 64];
        let t0 = Instant::now();
        while got.len() < 10 && t0.elapsed() < Duration::from_secs(5) {
            eng.pump(Some(Duration::from_millis(20))).unwrap();
            while let Some(n) = eng.take(&mut out).unwrap() {
                assert_eq!(n, 40);
                got.push(out[0]);
            }
        }
        got.sort_unstable();
        assert_eq!(got, (0..10u8).collect::<Vec<_>>());
        // Nothing more: a timed wait returns without data.
        eng.pump(Some(Duration::from_millis(20))).unwrap();
        assert!(!eng.has_ready());
    }

    #[test]
    fn oversize_record_is_rejected() {
        let (a, _b) = socketpair_seqpacket().unwrap();
        let Some(mut eng) = engine_or_skip(a.raw(), 16, 1, 1) else {
            return;
        };
        assert!(eng.queue_send(&[0; 17]).is_err());
    }

    #[test]
    fn tx_slots_exhausted_reports_false_then_recovers() {
        let (a, b) = socketpair_seqpacket().unwrap();
        let Some(mut eng) = engine_or_skip(a.raw(), 8, 1, 2) else {
            return;
        };
        let mut accepted = 0;
        for _ in 0..4 {
            if eng.queue_send(&[1; 8]).unwrap() {
                accepted += 1;
            }
        }
        assert!(accepted >= 2);
        let mut buf = [0u8; 8];
        let t0 = Instant::now();
        let mut drained = 0;
        while drained < accepted && t0.elapsed() < Duration::from_secs(5) {
            eng.pump(Some(Duration::from_millis(10))).unwrap();
            while read(b.raw(), &mut buf).unwrap().is_some() {
                drained += 1;
            }
        }
        assert_eq!(drained, accepted);
        assert!(eng.queue_send(&[2; 8]).unwrap());
    }
}

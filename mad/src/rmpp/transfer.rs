//! RMPP — the Reliable Multi-Packet Transaction Protocol (IBA vol1 §13.6): how a MAD longer than
//! 256 bytes travels as numbered DATA segments, acknowledged by window, retransmitted on timeout
//! and ended by ABORT or STOP on errors.
//!
//! Two sans-IO machines, one per direction of a transfer, as the kernel's ib_mad runs them for an
//! agent registered with `rmpp_version = 1` (`drivers/infiniband/core/mad_rmpp.c`, read for its
//! behaviour, not copied):
//!
//! * [`Sender`] splits one message into segments and says which may go out now
//!   ([`Sender::next_segment`]: at most up to the receiver's window, `NewWindowLast`); ACKs move
//!   the window ([`Sender::handle_ack`]); an ACK timeout goes back to the first unacknowledged
//!   segment ([`Sender::handle_timeout`]) until the retries are spent.
//! * [`Receiver`] takes DATA segments in any order, acknowledges every time the contiguous
//!   prefix reaches the window it offered (and on the last segment), answers duplicates with the
//!   current ACK and reassembles the message the way ib_umad hands it to a reader: the first
//!   segment whole, then the payload of every further segment, cut to the length the last
//!   segment's PayloadLength implies.
//!
//! Neither machine reads a clock or does I/O: the owner (the user_mad shim's `core`, the SA's
//! `sm::sa::rmpp` transfers) keeps their deadlines and moves the 256-byte segments. Double-sided transfers (a multi-segment request
//! answered by a multi-segment response, SA GetMulti) are two transfers keyed by the same TID in
//! opposite directions; the owner starts the response timer when the request's last segment is
//! acknowledged ([`AckOutcome::Complete`]), so the machines need nothing more for it. (The
//! kernel's extra "DS ACK" that offers the responder a first window larger than 1 is not sent;
//! a window of 1 is always valid.)
//!
//! The RMPP header and its codes are in [`super`]; this module only adds [`header`]/[`header_mut`]
//! to reach it inside a MAD.

use super::RMPP_HEADER_OFFSET;
pub use super::{RmppFlags, RmppHeader, RmppStatus, RmppType, RMPP_VERSION};
use zerocopy::FromBytes;

/// Size of one MAD / one segment on the wire.
pub const MAD_LEN: usize = 256;
/// Common MAD header + RMPP header: the bytes before PayloadLength counts.
pub const RMPP_HDR_END: usize = 36;
/// Payload bytes per segment as PayloadLength counts them (everything after the RMPP header).
pub const SEG_RMPP_SIZE: u32 = (MAD_LEN - RMPP_HDR_END) as u32;

/// The header of `mad` (bytes 24..36; `None` if it is shorter than 36 bytes).
#[must_use]
pub fn header(mad: &[u8]) -> Option<&RmppHeader> {
    RmppHeader::ref_from_bytes(mad.get(RMPP_HEADER_OFFSET..RMPP_HDR_END)?).ok()
}

/// Mutable header of `mad`.
pub fn header_mut(mad: &mut [u8]) -> Option<&mut RmppHeader> {
    RmppHeader::mut_from_bytes(mad.get_mut(RMPP_HEADER_OFFSET..RMPP_HDR_END)?).ok()
}

/// The RMPPStatus values an ABORT may carry (IBA vol1 §13.6.2.1: 118..127).
pub const ABORT_STATUSES: core::ops::RangeInclusive<u8> =
    RmppStatus::TOTAL_TIME_TOO_LONG.0..=RmppStatus::UNSPECIFIED.0;

/// True for the management classes that may use RMPP: SA, device management, device
/// administration, BIS and the vendor range 2 (0x30..0x4F) — the set Linux's
/// `ib_is_mad_class_rmpp` accepts.
#[must_use]
pub fn is_rmpp_class(class: u8) -> bool {
    matches!(class, 0x03 | 0x06 | 0x10 | 0x12 | 0x30..=0x4F)
}

/// Bytes before the class data (the part copied into every segment): 56 for SA (MAD + RMPP +
/// SA header), 64 for device management/administration and BIS, 40 for vendor range 2 (MAD +
/// RMPP + reserved + OUI), 24 otherwise (Linux's `ib_get_mad_data_offset`).
#[must_use]
pub fn data_offset(class: u8) -> usize {
    match class {
        0x03 => 56,
        0x06 | 0x10 | 0x12 => 64,
        0x30..=0x4F => 40,
        _ => 24,
    }
}

/// Why a message cannot be sent as an RMPP transfer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RmppError {
    /// The message is shorter than its class header.
    TooShort {
        /// Bytes needed (the class header length).
        need: usize,
        /// Bytes given.
        got: usize,
    },
    /// The class header leaves no room for data in a 256-byte segment.
    BadHeaderLength(usize),
}

impl core::fmt::Display for RmppError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RmppError::TooShort { need, got } => {
                write!(
                    f,
                    "RMPP message of {got} bytes is shorter than its {need}-byte header"
                )
            }
            RmppError::BadHeaderLength(n) => write!(f, "RMPP class header of {n} bytes"),
        }
    }
}

/// What an ACK did to a [`Sender`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AckOutcome {
    /// Old or duplicate: nothing changed.
    Ignored,
    /// The window moved; [`Sender::next_segment`] may have more to send.
    Progress,
    /// Every segment is acknowledged.
    Complete,
    /// The ACK is invalid: abort the transfer with this status (and tell the peer).
    Abort(RmppStatus),
}

/// What an ACK timeout did to a [`Sender`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimeoutOutcome {
    /// Retransmit: [`Sender::next_segment`] starts again after the last acknowledged segment.
    Retransmit,
    /// No retries left: the transfer failed (send ABORT with [`RmppStatus::TOO_MANY_RETRIES`]).
    Exhausted,
}

/// The sending side of one transfer. Call order: [`Sender::next_segment`] until `None` and arm
/// the ACK timer; then for each ACK [`Sender::handle_ack`] (and `next_segment` again on
/// [`AckOutcome::Progress`]); on the ACK timer [`Sender::handle_timeout`].
#[derive(Clone, Debug)]
pub struct Sender {
    /// The class header copied into every segment (MAD header, RMPP header, class header).
    header: Vec<u8>,
    data: Vec<u8>,
    hdr_len: usize,
    seg_count: u32,
    pad: u32,
    /// Last segment handed out.
    seg_num: u32,
    last_ack: u32,
    newwin: u32,
    retries_left: u32,
    max_retries: u32,
}

impl Sender {
    /// Splits `message` (class header of `hdr_len` bytes, then data) into segments.
    /// `first_window` is the receiver's initial window (1 unless a double-sided transfer
    /// offered more); `retries` is how many ACK timeouts are retransmitted before giving up.
    ///
    /// # Errors
    /// [`RmppError::TooShort`] when `message` is shorter than `hdr_len`;
    /// [`RmppError::BadHeaderLength`] when `hdr_len` is not in 36..256.
    pub fn new(
        message: &[u8],
        hdr_len: usize,
        retries: u32,
        first_window: u32,
    ) -> Result<Sender, RmppError> {
        if !(RMPP_HDR_END..MAD_LEN).contains(&hdr_len) {
            return Err(RmppError::BadHeaderLength(hdr_len));
        }
        let Some((header, data)) = message.split_at_checked(hdr_len) else {
            return Err(RmppError::TooShort {
                need: hdr_len,
                got: message.len(),
            });
        };
        let seg_size = MAD_LEN - hdr_len;
        let segs = data.len().div_ceil(seg_size).max(1);
        let seg_count = u32::try_from(segs).unwrap_or(u32::MAX);
        let pad = u32::try_from(segs * seg_size - data.len()).unwrap_or(0);
        Ok(Sender {
            header: header.to_vec(),
            data: data.to_vec(),
            hdr_len,
            seg_count,
            pad,
            seg_num: 0,
            last_ack: 0,
            newwin: first_window.max(1),
            retries_left: retries,
            max_retries: retries,
        })
    }

    /// Number of segments.
    #[must_use]
    pub fn seg_count(&self) -> u32 {
        self.seg_count
    }
    /// Highest segment acknowledged so far.
    #[must_use]
    pub fn last_ack(&self) -> u32 {
        self.last_ack
    }
    /// True once every segment is acknowledged.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.last_ack >= self.seg_count
    }
    /// The message's class header (the first segment's first `hdr_len` bytes before the RMPP
    /// fields are filled in).
    #[must_use]
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// If the window allows another segment, writes it into `out` and returns its number.
    pub fn next_segment(&mut self, out: &mut [u8; MAD_LEN]) -> Option<u32> {
        if self.seg_num >= self.newwin.min(self.seg_count) {
            return None;
        }
        self.seg_num += 1;
        self.build(self.seg_num, out);
        Some(self.seg_num)
    }

    /// Writes segment `n` (1-based) into `out`: the class header, the RMPP DATA header with
    /// First/Last and PayloadLength as IBA §13.6 defines them (the whole message's length in
    /// the first segment, the last segment's own in the last), then the data.
    fn build(&self, n: u32, out: &mut [u8; MAD_LEN]) {
        out.fill(0);
        out[..self.hdr_len].copy_from_slice(&self.header);
        let mut f = RmppFlags::ACTIVE;
        let mut paylen = 0;
        if n == 1 {
            f |= RmppFlags::FIRST;
            paylen = (self.seg_count * SEG_RMPP_SIZE).saturating_sub(self.pad);
        }
        if n == self.seg_count {
            f |= RmppFlags::LAST;
            paylen = SEG_RMPP_SIZE.saturating_sub(self.pad);
        }
        if let Some(h) = header_mut(out) {
            h.rmpp_version = RMPP_VERSION;
            h.rmpp_type = RmppType::DATA.0;
            h.b2 = f;
            h.rmpp_status = 0;
            h.data1.set(n);
            h.data2.set(paylen);
        }
        let seg_size = MAD_LEN - self.hdr_len;
        let start = (n as usize - 1) * seg_size;
        if let Some(chunk) = self.data.get(start..) {
            let take = chunk.len().min(seg_size);
            out[self.hdr_len..self.hdr_len + take].copy_from_slice(&chunk[..take]);
        }
    }

    /// Applies an ACK of segments `1..=seg` that opens the window to `newwin`.
    pub fn handle_ack(&mut self, seg: u32, newwin: u32) -> AckOutcome {
        if self.is_complete() {
            return AckOutcome::Ignored;
        }
        if newwin < seg {
            return AckOutcome::Abort(RmppStatus::WINDOW_TOO_SMALL);
        }
        if seg > self.seg_count || seg > self.newwin {
            return AckOutcome::Abort(RmppStatus::SEGMENT_TOO_BIG);
        }
        if newwin < self.newwin || seg < self.last_ack {
            return AckOutcome::Ignored;
        }
        if seg > self.last_ack {
            self.last_ack = seg;
            self.retries_left = self.max_retries;
        }
        self.newwin = newwin;
        if self.is_complete() {
            AckOutcome::Complete
        } else {
            AckOutcome::Progress
        }
    }

    /// The ACK timer expired: retransmit from the first unacknowledged segment, or give up.
    pub fn handle_timeout(&mut self) -> TimeoutOutcome {
        if self.retries_left == 0 {
            return TimeoutOutcome::Exhausted;
        }
        self.retries_left -= 1;
        self.seg_num = self.last_ack;
        TimeoutOutcome::Retransmit
    }
}

/// What a DATA segment did to a [`Receiver`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum RecvOutcome {
    /// Nothing to send (out of order, beyond the window, or a duplicate not yet acknowledged).
    Quiet,
    /// Send an ACK of `seg` with window `newwin`.
    Ack {
        /// SegmentNumber.
        seg: u32,
        /// NewWindowLast.
        newwin: u32,
    },
    /// The message is complete: send the ACK, then deliver `message`.
    Complete {
        /// SegmentNumber of the final ACK.
        seg: u32,
        /// NewWindowLast of the final ACK.
        newwin: u32,
        /// The reassembled message (first segment whole, then each further segment's data).
        message: Vec<u8>,
    },
}

/// The receiving side of one transfer, created by its first segment.
#[derive(Clone, Debug)]
pub struct Receiver {
    hdr_len: usize,
    window: u32,
    first: Vec<u8>,
    /// Segments 2.. that arrived (contiguous or not), by number.
    segs: std::collections::BTreeMap<u32, Segment>,
    /// Highest segment of the contiguous prefix.
    seg_num: u32,
    last_ack: u32,
    newwin: u32,
    /// PayloadLength of the Last segment once the prefix reached it.
    complete_len: Option<usize>,
}

/// A stored segment: its data part and, for the Last one, its PayloadLength.
#[derive(Clone, Debug)]
struct Segment {
    data: Vec<u8>,
    last_paylen: Option<u32>,
}

/// Why a DATA segment cannot start or join a transfer (answer with ABORT of this status).
pub type DataError = RmppStatus;

impl Receiver {
    /// Starts a transfer from a DATA segment with SegmentNumber 1 (IBA requires First on it).
    /// `window` is how many segments each ACK opens (the kernel's default is 64).
    ///
    /// # Errors
    /// The status to ABORT with: [`RmppStatus::ILLEGAL_STATUS`] for a nonzero RMPPStatus,
    /// [`RmppStatus::INCONSISTENT_FIRST`] for segment 1 without First, [`RmppStatus::UNSUPPORTED_VERSION`] for another
    /// version.
    pub fn start(
        seg: &[u8; MAD_LEN],
        hdr_len: usize,
        window: u32,
    ) -> Result<(Receiver, RecvOutcome), DataError> {
        let h = header(seg).ok_or(RmppStatus::UNSPECIFIED)?;
        check_data(h)?;
        if h.data1.get() != 1 || !h.flags().first() {
            return Err(RmppStatus::INCONSISTENT_FIRST);
        }
        let mut r = Receiver {
            hdr_len: hdr_len.clamp(RMPP_HDR_END, MAD_LEN - 1),
            window: window.max(1),
            first: seg.to_vec(),
            segs: std::collections::BTreeMap::new(),
            seg_num: 1,
            last_ack: 0,
            newwin: 1,
            complete_len: None,
        };
        if h.flags().last() {
            let len = r.mad_len(h.data2.get());
            r.complete_len = Some(len);
            r.last_ack = 1;
            let message = r.assemble(len);
            return Ok((
                r,
                RecvOutcome::Complete {
                    seg: 1,
                    newwin: 1,
                    message,
                },
            ));
        }
        r.newwin += r.window;
        r.last_ack = 1;
        let out = RecvOutcome::Ack {
            seg: 1,
            newwin: r.newwin,
        };
        Ok((r, out))
    }

    /// True once the message was delivered (duplicates are then only re-acknowledged).
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.complete_len.is_some()
    }

    /// The first segment as received (its header builds ACKs and ABORTs).
    #[must_use]
    pub fn first_segment(&self) -> [u8; MAD_LEN] {
        let mut m = [0u8; MAD_LEN];
        let n = self.first.len().min(MAD_LEN);
        m[..n].copy_from_slice(&self.first[..n]);
        m
    }

    /// The ACK to repeat for a duplicate.
    #[must_use]
    pub fn current_ack(&self) -> (u32, u32) {
        (self.seg_num, self.newwin)
    }

    /// Takes a further DATA segment.
    ///
    /// # Errors
    /// The status to ABORT with, as [`Receiver::start`] (a First flag on a later segment is
    /// [`RmppStatus::INCONSISTENT_FIRST`]).
    pub fn handle_data(&mut self, seg: &[u8; MAD_LEN]) -> Result<RecvOutcome, DataError> {
        let h = header(seg).ok_or(RmppStatus::UNSPECIFIED)?;
        check_data(h)?;
        let n = h.data1.get();
        if n == 1 {
            // A repeated first segment: the sender did not see our ACK.
            if !h.flags().first() {
                return Err(RmppStatus::INCONSISTENT_FIRST);
            }
        } else if h.flags().first() {
            return Err(RmppStatus::INCONSISTENT_FIRST);
        }
        if n > self.newwin {
            return Ok(RecvOutcome::Quiet);
        }
        if n <= self.last_ack || self.is_complete() {
            let (seg, newwin) = self.current_ack();
            return Ok(RecvOutcome::Ack { seg, newwin });
        }
        if n <= self.seg_num || self.segs.contains_key(&n) {
            return Ok(RecvOutcome::Quiet);
        }
        let last = (h.flags().last()).then(|| h.data2.get());
        self.segs.insert(
            n,
            Segment {
                data: seg[self.hdr_len..].to_vec(),
                last_paylen: last,
            },
        );
        if n != self.seg_num + 1 {
            return Ok(RecvOutcome::Quiet);
        }
        // Advance over the contiguous run this segment completed.
        let mut last_paylen = None;
        while let Some(s) = self.segs.get(&(self.seg_num + 1)) {
            self.seg_num += 1;
            if let Some(pl) = s.last_paylen {
                last_paylen = Some(pl);
                break;
            }
        }
        if let Some(pl) = last_paylen {
            let len = self.mad_len(pl);
            self.complete_len = Some(len);
            self.last_ack = self.seg_num;
            let message = self.assemble(len);
            return Ok(RecvOutcome::Complete {
                seg: self.seg_num,
                newwin: self.newwin,
                message,
            });
        }
        if self.seg_num == self.newwin {
            self.newwin += self.window;
            self.last_ack = self.seg_num;
            return Ok(RecvOutcome::Ack {
                seg: self.seg_num,
                newwin: self.newwin,
            });
        }
        Ok(RecvOutcome::Quiet)
    }

    /// Message length: class header + every segment's data − the padding the Last segment's
    /// PayloadLength reveals (IBA §13.6; Linux's `get_mad_len`).
    fn mad_len(&self, last_paylen: u32) -> usize {
        let data_size = MAD_LEN - self.hdr_len;
        let pad = SEG_RMPP_SIZE
            .checked_sub(last_paylen)
            .filter(|&p| p <= SEG_RMPP_SIZE)
            .unwrap_or(0) as usize;
        (self.hdr_len + self.seg_num as usize * data_size).saturating_sub(pad)
    }

    /// The message, once: the segments are released (a completed transfer only answers
    /// duplicates, from its counters).
    fn assemble(&mut self, len: usize) -> Vec<u8> {
        let mut m = Vec::with_capacity(len.max(MAD_LEN));
        m.extend_from_slice(&self.first);
        for s in self.segs.range(2..=self.seg_num).map(|(_, s)| s) {
            m.extend_from_slice(&s.data);
        }
        m.truncate(len);
        self.segs.clear();
        m
    }

    /// Segments held (besides the first).
    #[must_use]
    pub fn held_segments(&self) -> usize {
        self.segs.len()
    }
}

fn check_data(h: &RmppHeader) -> Result<(), DataError> {
    if h.rmpp_version != RMPP_VERSION {
        return Err(RmppStatus::UNSUPPORTED_VERSION);
    }
    if h.rmpp_status != 0 {
        return Err(RmppStatus::ILLEGAL_STATUS);
    }
    Ok(())
}

/// Builds an ACK answering DATA segment `data`: its class header with the method's R bit
/// flipped, RMPPType ACK, flags Active, SegmentNumber `seg`, NewWindowLast `newwin`.
#[must_use]
pub fn ack_for(data: &[u8; MAD_LEN], hdr_len: usize, seg: u32, newwin: u32) -> [u8; MAD_LEN] {
    let mut m = control_for(data, hdr_len);
    m[3] ^= 0x80;
    if let Some(h) = header_mut(&mut m) {
        h.rmpp_type = RmppType::ACK.0;
        h.set_flags_raw(RmppFlags::ACTIVE);
        h.data1.set(seg);
        h.data2.set(newwin);
    }
    m
}

/// Builds an ABORT with `status` about the transfer `mad` belongs to. `reply` flips the
/// method's R bit (an ABORT from the receiver travels against the DATA; one from the sender
/// travels with it).
#[must_use]
pub fn abort_for(
    mad: &[u8; MAD_LEN],
    hdr_len: usize,
    status: RmppStatus,
    reply: bool,
) -> [u8; MAD_LEN] {
    let mut m = control_for(mad, hdr_len);
    if reply {
        m[3] ^= 0x80;
    }
    if let Some(h) = header_mut(&mut m) {
        h.rmpp_version = RMPP_VERSION;
        h.rmpp_type = RmppType::ABORT.0;
        h.set_flags_raw(RmppFlags::ACTIVE);
        h.rmpp_status = status.0;
        h.data1.set(0);
        h.data2.set(0);
    }
    m
}

fn control_for(mad: &[u8; MAD_LEN], hdr_len: usize) -> [u8; MAD_LEN] {
    let n = hdr_len.clamp(RMPP_HDR_END, MAD_LEN);
    let mut m = [0u8; MAD_LEN];
    m[..n].copy_from_slice(&mad[..n]);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An SA-like message: 56-byte class header (method GetTableResp, TID 0x42), then `n` data
    /// bytes counting up.
    fn sa_message(n: usize) -> Vec<u8> {
        let mut m = vec![0u8; 56 + n];
        m[0] = 1;
        m[1] = 0x03;
        m[2] = 2;
        m[3] = 0x92;
        m[15] = 0x42;
        m[36] = 0xAB; // first byte of the SA header (SM_Key), must be repeated in every segment
        for (i, b) in m[56..].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        m
    }

    fn drain(s: &mut Sender) -> Vec<[u8; MAD_LEN]> {
        let mut v = Vec::new();
        let mut seg = [0u8; MAD_LEN];
        while s.next_segment(&mut seg).is_some() {
            v.push(seg);
        }
        v
    }

    #[test]
    fn header_view_sits_at_bytes_24_to_36() {
        let mut mad = [0u8; MAD_LEN];
        mad[24] = 1;
        mad[25] = 2;
        mad[26] = (14 << 3) | RmppFlags::ACTIVE | RmppFlags::LAST;
        mad[28..32].copy_from_slice(&7u32.to_be_bytes());
        mad[32..36].copy_from_slice(&65u32.to_be_bytes());
        let h = header(&mad).unwrap();
        assert_eq!(h.kind(), RmppType::ACK);
        assert!(h.is_active());
        assert_eq!(h.flags(), RmppFlags(RmppFlags::ACTIVE | RmppFlags::LAST));
        assert_eq!((h.data1.get(), h.data2.get()), (7, 65));
        let h = header_mut(&mut mad).unwrap();
        h.set_flags_raw(RmppFlags::ACTIVE);
        assert_eq!(mad[26], (14 << 3) | RmppFlags::ACTIVE, "RRespTime kept");
        assert!(header(&mad[..35]).is_none());
    }

    #[test]
    fn class_tables_follow_the_kernel() {
        assert!(is_rmpp_class(0x03) && is_rmpp_class(0x30) && is_rmpp_class(0x4F));
        assert!(!is_rmpp_class(0x81) && !is_rmpp_class(0x04) && !is_rmpp_class(0x09));
        assert_eq!(data_offset(0x03), 56);
        assert_eq!(data_offset(0x06), 64);
        assert_eq!(data_offset(0x31), 40);
        assert_eq!(data_offset(0x04), 24);
    }

    #[test]
    fn segments_carry_header_flags_and_payload_length() {
        let msg = sa_message(500); // 200-byte segments: 200 + 200 + 100, pad 100
        let mut s = Sender::new(&msg, 56, 3, 10).unwrap();
        assert_eq!(s.seg_count(), 3);
        let segs = drain(&mut s);
        assert_eq!(segs.len(), 3);
        for (i, seg) in segs.iter().enumerate() {
            assert_eq!(&seg[..24], &msg[..24], "MAD header in segment {}", i + 1);
            assert_eq!(&seg[36..56], &msg[36..56], "SA header repeated");
            let h = header(seg).unwrap();
            assert_eq!(
                (h.rmpp_version, h.kind(), h.rmpp_status),
                (1, RmppType::DATA, 0)
            );
            assert_eq!(h.data1.get(), i as u32 + 1);
        }
        let h = |i: usize| *header(&segs[i]).unwrap();
        assert_eq!(
            h(0).flags(),
            RmppFlags(RmppFlags::ACTIVE | RmppFlags::FIRST)
        );
        assert_eq!(
            h(0).data2.get(),
            3 * 220 - 100,
            "= data + one SA header per segment"
        );
        assert_eq!(h(1).flags(), RmppFlags(RmppFlags::ACTIVE));
        assert_eq!(h(1).data2.get(), 0);
        assert_eq!(h(2).flags(), RmppFlags(RmppFlags::ACTIVE | RmppFlags::LAST));
        assert_eq!(h(2).data2.get(), 120);
        assert_eq!(&segs[1][56..], &msg[256..456]);
        assert_eq!(&segs[2][56..156], &msg[456..556]);
        assert!(segs[2][156..].iter().all(|&b| b == 0), "padding is zero");
    }

    #[test]
    fn one_segment_messages_are_first_and_last() {
        let msg = sa_message(72);
        let mut s = Sender::new(&msg, 56, 0, 1).unwrap();
        let segs = drain(&mut s);
        assert_eq!(segs.len(), 1);
        let h = header(&segs[0]).unwrap();
        assert_eq!(
            h.flags(),
            RmppFlags(RmppFlags::ACTIVE | RmppFlags::FIRST | RmppFlags::LAST)
        );
        assert_eq!(h.data2.get(), 220 - 128);
        let empty = Sender::new(&msg[..56], 56, 0, 1).unwrap();
        assert_eq!(empty.seg_count(), 1);
        assert!(matches!(
            Sender::new(&msg[..40], 56, 0, 1),
            Err(RmppError::TooShort { need: 56, got: 40 })
        ));
        assert_eq!(
            Sender::new(&msg, 24, 0, 1).unwrap_err(),
            RmppError::BadHeaderLength(24)
        );
    }

    #[test]
    fn the_window_limits_what_may_be_sent() {
        let msg = sa_message(200 * 10);
        let mut s = Sender::new(&msg, 56, 2, 1).unwrap();
        assert_eq!(drain(&mut s).len(), 1, "first window is 1");
        assert_eq!(s.handle_ack(1, 4), AckOutcome::Progress);
        let segs = drain(&mut s);
        assert_eq!(segs.len(), 3);
        assert_eq!(header(&segs[0]).unwrap().data1.get(), 2);
        assert_eq!(s.handle_ack(4, 10), AckOutcome::Progress);
        assert_eq!(drain(&mut s).len(), 6);
        assert_eq!(s.handle_ack(10, 10), AckOutcome::Complete);
        assert!(s.is_complete());
        assert_eq!(s.handle_ack(10, 10), AckOutcome::Ignored);
    }

    #[test]
    fn invalid_and_stale_acks() {
        let msg = sa_message(200 * 5);
        let mut s = Sender::new(&msg, 56, 2, 3).unwrap();
        drain(&mut s);
        assert_eq!(
            s.handle_ack(3, 2),
            AckOutcome::Abort(RmppStatus::WINDOW_TOO_SMALL)
        );
        assert_eq!(
            s.handle_ack(4, 5),
            AckOutcome::Abort(RmppStatus::SEGMENT_TOO_BIG),
            "beyond window"
        );
        assert_eq!(s.handle_ack(2, 4), AckOutcome::Progress);
        assert_eq!(s.handle_ack(1, 4), AckOutcome::Ignored, "older segment");
        assert_eq!(s.handle_ack(2, 3), AckOutcome::Ignored, "smaller window");
        assert_eq!(
            s.handle_ack(6, 9),
            AckOutcome::Abort(RmppStatus::SEGMENT_TOO_BIG),
            "beyond count"
        );
    }

    #[test]
    fn timeouts_go_back_to_the_first_unacked_segment_until_retries_run_out() {
        let msg = sa_message(200 * 4);
        let mut s = Sender::new(&msg, 56, 2, 4).unwrap();
        assert_eq!(drain(&mut s).len(), 4);
        assert_eq!(s.handle_ack(2, 4), AckOutcome::Progress);
        assert_eq!(s.handle_timeout(), TimeoutOutcome::Retransmit);
        let again = drain(&mut s);
        let nums: Vec<u32> = again
            .iter()
            .map(|m| header(m).unwrap().data1.get())
            .collect();
        assert_eq!(nums, vec![3, 4]);
        assert_eq!(s.handle_timeout(), TimeoutOutcome::Retransmit);
        drain(&mut s);
        assert_eq!(s.handle_timeout(), TimeoutOutcome::Exhausted);
        // Progress resets the retry budget.
        assert_eq!(s.handle_ack(3, 4), AckOutcome::Progress);
        assert_eq!(s.handle_timeout(), TimeoutOutcome::Retransmit);
    }

    fn recv_all(msg: &[u8], window: u32) -> Vec<u8> {
        let mut s = Sender::new(msg, 56, 0, 1).unwrap();
        let mut seg = [0u8; MAD_LEN];
        s.next_segment(&mut seg).unwrap();
        let (mut r, mut out) = Receiver::start(&seg, 56, window).unwrap();
        loop {
            match out {
                RecvOutcome::Complete { message, .. } => return message,
                RecvOutcome::Ack { seg, newwin } => {
                    assert_eq!(s.handle_ack(seg, newwin), AckOutcome::Progress);
                }
                RecvOutcome::Quiet => {}
            }
            let mut last = RecvOutcome::Quiet;
            let mut buf = [0u8; MAD_LEN];
            while s.next_segment(&mut buf).is_some() {
                last = r.handle_data(&buf).unwrap();
                if !matches!(last, RecvOutcome::Quiet) {
                    break;
                }
            }
            out = last;
        }
    }

    #[test]
    fn reassembly_returns_the_message_exactly() {
        for n in [0, 1, 199, 200, 201, 4321, 200 * 130] {
            let msg = sa_message(n);
            let got = recv_all(&msg, 64);
            let mut want = msg.clone();
            // The reader sees the first segment's RMPP header, not the sender's template.
            want[24..36].copy_from_slice(&got[24..36]);
            assert_eq!(got.len(), msg.len(), "length for {n} data bytes");
            assert_eq!(got, want, "content for {n} data bytes");
        }
    }

    #[test]
    fn receiver_acks_at_window_edges_and_repeats_for_duplicates() {
        let msg = sa_message(200 * 6);
        let mut s = Sender::new(&msg, 56, 0, 100).unwrap();
        let segs = drain(&mut s);
        let (mut r, out) = Receiver::start(&segs[0], 56, 2).unwrap();
        assert_eq!(out, RecvOutcome::Ack { seg: 1, newwin: 3 });
        assert_eq!(r.handle_data(&segs[1]).unwrap(), RecvOutcome::Quiet);
        assert_eq!(
            r.handle_data(&segs[2]).unwrap(),
            RecvOutcome::Ack { seg: 3, newwin: 5 }
        );
        assert_eq!(
            r.handle_data(&segs[5]).unwrap(),
            RecvOutcome::Quiet,
            "beyond the window"
        );
        assert_eq!(
            r.handle_data(&segs[4]).unwrap(),
            RecvOutcome::Quiet,
            "out of order, kept"
        );
        assert_eq!(
            r.handle_data(&segs[1]).unwrap(),
            RecvOutcome::Ack { seg: 3, newwin: 5 },
            "dup"
        );
        assert_eq!(
            r.handle_data(&segs[3]).unwrap(),
            RecvOutcome::Ack { seg: 5, newwin: 7 },
            "gap filled"
        );
        match r.handle_data(&segs[5]).unwrap() {
            RecvOutcome::Complete {
                seg: 6, message, ..
            } => assert_eq!(message.len(), msg.len()),
            other => panic!("{other:?}"),
        }
        assert!(r.is_complete());
        assert_eq!(
            r.handle_data(&segs[5]).unwrap(),
            RecvOutcome::Ack { seg: 6, newwin: 7 }
        );
    }

    #[test]
    fn bad_data_segments_are_refused_with_their_status() {
        let msg = sa_message(600);
        let mut s = Sender::new(&msg, 56, 0, 5).unwrap();
        let segs = drain(&mut s);
        let mut no_first = segs[0];
        header_mut(&mut no_first)
            .unwrap()
            .set_flags_raw(RmppFlags::ACTIVE);
        assert_eq!(
            Receiver::start(&no_first, 56, 8).unwrap_err(),
            RmppStatus::INCONSISTENT_FIRST
        );
        let mut v2 = segs[0];
        v2[24] = 2;
        assert_eq!(
            Receiver::start(&v2, 56, 8).unwrap_err(),
            RmppStatus::UNSUPPORTED_VERSION
        );
        let mut st = segs[0];
        st[27] = 5;
        assert_eq!(
            Receiver::start(&st, 56, 8).unwrap_err(),
            RmppStatus::ILLEGAL_STATUS
        );
        let (mut r, _) = Receiver::start(&segs[0], 56, 8).unwrap();
        let mut first_again = segs[1];
        header_mut(&mut first_again)
            .unwrap()
            .set_flags_raw(RmppFlags::ACTIVE | RmppFlags::FIRST);
        assert_eq!(
            r.handle_data(&first_again).unwrap_err(),
            RmppStatus::INCONSISTENT_FIRST
        );
    }

    #[test]
    fn a_lossy_channel_still_delivers_the_message() {
        // Deterministic loss pattern: every 7th transmission is dropped, ACKs included.
        let msg = sa_message(200 * 37 + 13);
        let mut s = Sender::new(&msg, 56, 20, 1).unwrap();
        let mut r: Option<Receiver> = None;
        let mut sent = 0u32;
        let lose = |sent: &mut u32| {
            *sent += 1;
            if *sent == 7 {
                *sent = 0;
            }
            *sent == 0
        };
        for _round in 0..200 {
            let mut acks = Vec::new();
            let mut buf = [0u8; MAD_LEN];
            while s.next_segment(&mut buf).is_some() {
                if lose(&mut sent) {
                    continue;
                }
                let out = match r.as_mut() {
                    None => match Receiver::start(&buf, 56, 4) {
                        Ok((rx, out)) => {
                            r = Some(rx);
                            out
                        }
                        Err(e) => panic!("{e:?}"),
                    },
                    Some(rx) => rx.handle_data(&buf).unwrap(),
                };
                match out {
                    RecvOutcome::Complete { message, .. } => {
                        assert_eq!(message.len(), msg.len());
                        assert_eq!(&message[56..], &msg[56..]);
                        return;
                    }
                    RecvOutcome::Ack { seg, newwin } => acks.push((seg, newwin)),
                    RecvOutcome::Quiet => {}
                }
            }
            let mut moved = false;
            for (seg, newwin) in acks {
                if lose(&mut sent) {
                    continue;
                }
                moved |= s.handle_ack(seg, newwin) == AckOutcome::Progress;
            }
            if !moved {
                assert_eq!(s.handle_timeout(), TimeoutOutcome::Retransmit);
            }
        }
        panic!("transfer did not complete");
    }

    #[test]
    fn control_messages_copy_the_class_header() {
        let msg = sa_message(300);
        let mut s = Sender::new(&msg, 56, 0, 1).unwrap();
        let mut seg = [0u8; MAD_LEN];
        s.next_segment(&mut seg).unwrap();
        let ack = ack_for(&seg, 56, 1, 65);
        assert_eq!(ack[3], 0x12, "GetTableResp acked with GetTable");
        assert_eq!(&ack[8..16], &seg[8..16]);
        assert_eq!(&ack[36..56], &seg[36..56]);
        let h = header(&ack).unwrap();
        assert_eq!(
            (h.kind(), h.flags(), h.data1.get(), h.data2.get()),
            (RmppType::ACK, RmppFlags(RmppFlags::ACTIVE), 1, 65)
        );
        assert!(ack[56..].iter().all(|&b| b == 0));
        let ab = abort_for(&seg, 56, RmppStatus::TOO_MANY_RETRIES, false);
        assert_eq!(ab[3], 0x92, "sender's ABORT keeps the DATA method");
        let h = header(&ab).unwrap();
        assert_eq!(
            (h.kind(), h.rmpp_status, h.data1.get()),
            (RmppType::ABORT, 126, 0)
        );
        assert_eq!(
            abort_for(&seg, 56, RmppStatus::TOTAL_TIME_TOO_LONG, true)[3],
            0x12
        );
    }
}

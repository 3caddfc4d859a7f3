//! PortCounters (PerfMgt attribute 0x0012), 44 bytes — IBA vol1 §16.1.3.5.
//!
//! The basic per-port counters, each of its own width (16, 8 or 4 error-counter bits, 32 data
//! bits). IBA counters **saturate**: they stop at their maximum instead of wrapping. A Get
//! reads the port PortSelect names; a Set clears the counters whose CounterSelect /
//! CounterSelect2 bit is 1 and answers with the values after the clear. View: [`PortCounters`];
//! validated value: [`PortCountersRepr`].
//!
//! | bytes | field |
//! |---|---|
//! | 0 | Reserved |
//! | 1 | PortSelect (0xFF = all ports, if AllPortSelect is supported) |
//! | 2..3 | CounterSelect |
//! | 4..5 | SymbolErrorCounter |
//! | 6 | LinkErrorRecoveryCounter |
//! | 7 | LinkDownedCounter |
//! | 8..9 | PortRcvErrors |
//! | 10..11 | PortRcvRemotePhysicalErrors |
//! | 12..13 | PortRcvSwitchRelayErrors |
//! | 14..15 | PortXmitDiscards |
//! | 16 | PortXmitConstraintErrors |
//! | 17 | PortRcvConstraintErrors |
//! | 18 | CounterSelect2 |
//! | 19 | LocalLinkIntegrityErrors (7..4) / ExcessiveBufferOverrunErrors (3..0) |
//! | 20..21 | QP1Dropped |
//! | 22..23 | VL15Dropped |
//! | 24..27 | PortXmitData (32-bit words) |
//! | 28..31 | PortRcvData (32-bit words) |
//! | 32..35 | PortXmitPkts |
//! | 36..39 | PortRcvPkts |
//! | 40..43 | PortXmitWait |
//!
//! The field names are the IBA's, as `perfquery` prints them; [`PortCounters`]'s `Display`
//! prints `perfquery`'s listing byte for byte.

use core::fmt;

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::{MgmtClass, PmaAttrId};
use crate::error::ParseError;
use crate::gmp::GmpAttrRepr;
use crate::pretty::field;

/// PortCounters.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct PortCounters {
    /// Reserved — byte 0.
    pub reserved0: u8,
    /// PortSelect — byte 1.
    pub port_select: u8,
    /// CounterSelect — bytes 2..3.
    pub counter_select: U16,
    /// SymbolErrorCounter — bytes 4..5.
    pub symbol_error_counter: U16,
    /// LinkErrorRecoveryCounter — byte 6.
    pub link_error_recovery_counter: u8,
    /// LinkDownedCounter — byte 7.
    pub link_downed_counter: u8,
    /// PortRcvErrors — bytes 8..9.
    pub port_rcv_errors: U16,
    /// PortRcvRemotePhysicalErrors — bytes 10..11.
    pub port_rcv_remote_physical_errors: U16,
    /// PortRcvSwitchRelayErrors — bytes 12..13.
    pub port_rcv_switch_relay_errors: U16,
    /// PortXmitDiscards — bytes 14..15.
    pub port_xmit_discards: U16,
    /// PortXmitConstraintErrors — byte 16.
    pub port_xmit_constraint_errors: u8,
    /// PortRcvConstraintErrors — byte 17.
    pub port_rcv_constraint_errors: u8,
    /// CounterSelect2 — byte 18.
    pub counter_select2: u8,
    /// LocalLinkIntegrityErrors (7..4) / ExcessiveBufferOverrunErrors (3..0) — byte 19.
    pub b19: u8,
    /// QP1Dropped — bytes 20..21.
    pub qp1_dropped: U16,
    /// VL15Dropped — bytes 22..23.
    pub vl15_dropped: U16,
    /// PortXmitData — bytes 24..27, in 32-bit words.
    pub port_xmit_data: U32,
    /// PortRcvData — bytes 28..31, in 32-bit words.
    pub port_rcv_data: U32,
    /// PortXmitPkts — bytes 32..35.
    pub port_xmit_pkts: U32,
    /// PortRcvPkts — bytes 36..39.
    pub port_rcv_pkts: U32,
    /// PortXmitWait — bytes 40..43.
    pub port_xmit_wait: U32,
}
const _: () = assert!(size_of::<PortCounters>() == 44);
const _: () = assert!(core::mem::offset_of!(PortCounters, symbol_error_counter) == 4);
const _: () = assert!(core::mem::offset_of!(PortCounters, port_rcv_errors) == 8);
const _: () = assert!(core::mem::offset_of!(PortCounters, port_xmit_constraint_errors) == 16);
const _: () = assert!(core::mem::offset_of!(PortCounters, b19) == 19);
const _: () = assert!(core::mem::offset_of!(PortCounters, qp1_dropped) == 20);
const _: () = assert!(core::mem::offset_of!(PortCounters, port_xmit_data) == 24);
const _: () = assert!(core::mem::offset_of!(PortCounters, port_xmit_wait) == 40);

crate::sub_byte_fields!(PortCounters {
    /// LocalLinkIntegrityErrors — byte 19, bits 7..4.
    local_link_integrity_errors, set_local_link_integrity_errors: b19[7..4];
    /// ExcessiveBufferOverrunErrors — byte 19, bits 3..0.
    excessive_buffer_overrun_errors, set_excessive_buffer_overrun_errors: b19[3..0];
});

/// PortCounters.CounterSelect (bits of bytes 2..3) and CounterSelect2 (byte 18, shifted up by
/// 16 here): which counters a Set clears. Bit positions as the IBA numbers them (and as
/// `perfquery -R`'s reset mask uses them).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct CounterSelect(pub u32);

impl CounterSelect {
    /// SymbolErrorCounter.
    pub const SYMBOL_ERRORS: u32 = 1 << 0;
    /// LinkErrorRecoveryCounter.
    pub const LINK_ERROR_RECOVERY: u32 = 1 << 1;
    /// LinkDownedCounter.
    pub const LINK_DOWNED: u32 = 1 << 2;
    /// PortRcvErrors.
    pub const RCV_ERRORS: u32 = 1 << 3;
    /// PortRcvRemotePhysicalErrors.
    pub const RCV_REMOTE_PHYSICAL_ERRORS: u32 = 1 << 4;
    /// PortRcvSwitchRelayErrors.
    pub const RCV_SWITCH_RELAY_ERRORS: u32 = 1 << 5;
    /// PortXmitDiscards.
    pub const XMIT_DISCARDS: u32 = 1 << 6;
    /// PortXmitConstraintErrors.
    pub const XMIT_CONSTRAINT_ERRORS: u32 = 1 << 7;
    /// PortRcvConstraintErrors.
    pub const RCV_CONSTRAINT_ERRORS: u32 = 1 << 8;
    /// LocalLinkIntegrityErrors.
    pub const LOCAL_LINK_INTEGRITY_ERRORS: u32 = 1 << 9;
    /// ExcessiveBufferOverrunErrors.
    pub const EXCESSIVE_BUFFER_OVERRUN_ERRORS: u32 = 1 << 10;
    /// VL15Dropped.
    pub const VL15_DROPPED: u32 = 1 << 11;
    /// PortXmitData.
    pub const XMIT_DATA: u32 = 1 << 12;
    /// PortRcvData.
    pub const RCV_DATA: u32 = 1 << 13;
    /// PortXmitPkts.
    pub const XMIT_PKTS: u32 = 1 << 14;
    /// PortRcvPkts.
    pub const RCV_PKTS: u32 = 1 << 15;
    /// PortXmitWait (CounterSelect2 bit 0).
    pub const XMIT_WAIT: u32 = 1 << 16;
    /// QP1Dropped (CounterSelect2 bit 1).
    pub const QP1_DROPPED: u32 = 1 << 17;

    /// The select of a PortCounters attribute: CounterSelect | CounterSelect2 << 16.
    #[must_use]
    pub fn of(pc: &PortCounters) -> CounterSelect {
        CounterSelect(u32::from(pc.counter_select.get()) | u32::from(pc.counter_select2) << 16)
    }
    /// True if `bit` (one of the constants) is selected.
    #[must_use]
    pub const fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }
}

/// The IBA's name and the accessor for each field, in `perfquery`'s order.
impl fmt::Display for PortCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        field(f, "PortSelect", self.port_select)?;
        field(
            f,
            "CounterSelect",
            format_args!("{:#06x}", self.counter_select.get()),
        )?;
        field(f, "SymbolErrorCounter", self.symbol_error_counter.get())?;
        field(
            f,
            "LinkErrorRecoveryCounter",
            self.link_error_recovery_counter,
        )?;
        field(f, "LinkDownedCounter", self.link_downed_counter)?;
        field(f, "PortRcvErrors", self.port_rcv_errors.get())?;
        field(
            f,
            "PortRcvRemotePhysicalErrors",
            self.port_rcv_remote_physical_errors.get(),
        )?;
        field(
            f,
            "PortRcvSwitchRelayErrors",
            self.port_rcv_switch_relay_errors.get(),
        )?;
        field(f, "PortXmitDiscards", self.port_xmit_discards.get())?;
        field(
            f,
            "PortXmitConstraintErrors",
            self.port_xmit_constraint_errors,
        )?;
        field(
            f,
            "PortRcvConstraintErrors",
            self.port_rcv_constraint_errors,
        )?;
        field(
            f,
            "CounterSelect2",
            format_args!("{:#04x}", self.counter_select2),
        )?;
        field(
            f,
            "LocalLinkIntegrityErrors",
            self.local_link_integrity_errors(),
        )?;
        field(
            f,
            "ExcessiveBufferOverrunErrors",
            self.excessive_buffer_overrun_errors(),
        )?;
        field(f, "QP1Dropped", self.qp1_dropped.get())?;
        field(f, "VL15Dropped", self.vl15_dropped.get())?;
        field(f, "PortXmitData", self.port_xmit_data.get())?;
        field(f, "PortRcvData", self.port_rcv_data.get())?;
        field(f, "PortXmitPkts", self.port_xmit_pkts.get())?;
        field(f, "PortRcvPkts", self.port_rcv_pkts.get())?;
        field(f, "PortXmitWait", self.port_xmit_wait.get())
    }
}

/// PortCounters, validated.
///
/// No PortCounters value is reserved, so `parse` fails only on length. Byte 0 is reserved:
/// ignored, emitted as zero. `emit` keeps the low 4 bits of the two 4-bit counters. Saturating
/// a wider count into these widths is [`PortCountersRepr::saturating`]'s job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PortCountersRepr {
    /// PortSelect.
    pub port_select: u8,
    /// CounterSelect | CounterSelect2 << 16.
    pub counter_select: CounterSelect,
    /// SymbolErrorCounter.
    pub symbol_error_counter: u16,
    /// LinkErrorRecoveryCounter.
    pub link_error_recovery_counter: u8,
    /// LinkDownedCounter.
    pub link_downed_counter: u8,
    /// PortRcvErrors.
    pub port_rcv_errors: u16,
    /// PortRcvRemotePhysicalErrors.
    pub port_rcv_remote_physical_errors: u16,
    /// PortRcvSwitchRelayErrors.
    pub port_rcv_switch_relay_errors: u16,
    /// PortXmitDiscards.
    pub port_xmit_discards: u16,
    /// PortXmitConstraintErrors.
    pub port_xmit_constraint_errors: u8,
    /// PortRcvConstraintErrors.
    pub port_rcv_constraint_errors: u8,
    /// LocalLinkIntegrityErrors (4 bits).
    pub local_link_integrity_errors: u8,
    /// ExcessiveBufferOverrunErrors (4 bits).
    pub excessive_buffer_overrun_errors: u8,
    /// QP1Dropped.
    pub qp1_dropped: u16,
    /// VL15Dropped.
    pub vl15_dropped: u16,
    /// PortXmitData, in 32-bit words.
    pub port_xmit_data: u32,
    /// PortRcvData, in 32-bit words.
    pub port_rcv_data: u32,
    /// PortXmitPkts.
    pub port_xmit_pkts: u32,
    /// PortRcvPkts.
    pub port_rcv_pkts: u32,
    /// PortXmitWait.
    pub port_xmit_wait: u32,
}

/// `v` clamped to `max`: the IBA's saturating counter rule.
fn sat(v: u64, max: u64) -> u64 {
    v.min(max)
}

impl PortCountersRepr {
    /// PortCounters' widths applied to 64-bit counts (as [`super::PortCountersExtRepr`] holds
    /// them, error counters included): every value above a field's maximum becomes that
    /// maximum (IBA vol1 §16.1.3.5: counters saturate, they do not wrap). CounterSelect is 0.
    #[must_use]
    pub fn saturating(c: &super::PortCountersExtRepr) -> PortCountersRepr {
        let u16s = |v| sat(v, u16::MAX.into()) as u16;
        let u8s = |v| sat(v, u8::MAX.into()) as u8;
        let u4s = |v| sat(v, 0xF) as u8;
        let u32s = |v| sat(v, u32::MAX.into()) as u32;
        PortCountersRepr {
            port_select: c.port_select,
            counter_select: CounterSelect(0),
            symbol_error_counter: u16s(c.symbol_error_counter),
            link_error_recovery_counter: u8s(c.link_error_recovery_counter),
            link_downed_counter: u8s(c.link_downed_counter),
            port_rcv_errors: u16s(c.port_rcv_errors),
            port_rcv_remote_physical_errors: u16s(c.port_rcv_remote_physical_errors),
            port_rcv_switch_relay_errors: u16s(c.port_rcv_switch_relay_errors),
            port_xmit_discards: u16s(c.port_xmit_discards),
            port_xmit_constraint_errors: u8s(c.port_xmit_constraint_errors),
            port_rcv_constraint_errors: u8s(c.port_rcv_constraint_errors),
            local_link_integrity_errors: u4s(c.local_link_integrity_errors),
            excessive_buffer_overrun_errors: u4s(c.excessive_buffer_overrun_errors),
            qp1_dropped: u16s(c.qp1_dropped),
            vl15_dropped: u16s(c.vl15_dropped),
            port_xmit_data: u32s(c.port_xmit_data),
            port_rcv_data: u32s(c.port_rcv_data),
            port_xmit_pkts: u32s(c.port_xmit_pkts),
            port_rcv_pkts: u32s(c.port_rcv_pkts),
            port_xmit_wait: u32s(c.port_xmit_wait),
        }
    }
}

impl GmpAttrRepr for PortCountersRepr {
    type Raw = PortCounters;
    const CLASS: MgmtClass = MgmtClass::PERF_MGMT;
    const ATTR_ID: u16 = PmaAttrId::PORT_COUNTERS.0;

    fn from_raw(r: &PortCounters) -> Result<Self, ParseError> {
        Ok(PortCountersRepr {
            port_select: r.port_select,
            counter_select: CounterSelect::of(r),
            symbol_error_counter: r.symbol_error_counter.get(),
            link_error_recovery_counter: r.link_error_recovery_counter,
            link_downed_counter: r.link_downed_counter,
            port_rcv_errors: r.port_rcv_errors.get(),
            port_rcv_remote_physical_errors: r.port_rcv_remote_physical_errors.get(),
            port_rcv_switch_relay_errors: r.port_rcv_switch_relay_errors.get(),
            port_xmit_discards: r.port_xmit_discards.get(),
            port_xmit_constraint_errors: r.port_xmit_constraint_errors,
            port_rcv_constraint_errors: r.port_rcv_constraint_errors,
            local_link_integrity_errors: r.local_link_integrity_errors(),
            excessive_buffer_overrun_errors: r.excessive_buffer_overrun_errors(),
            qp1_dropped: r.qp1_dropped.get(),
            vl15_dropped: r.vl15_dropped.get(),
            port_xmit_data: r.port_xmit_data.get(),
            port_rcv_data: r.port_rcv_data.get(),
            port_xmit_pkts: r.port_xmit_pkts.get(),
            port_rcv_pkts: r.port_rcv_pkts.get(),
            port_xmit_wait: r.port_xmit_wait.get(),
        })
    }

    fn to_raw(&self) -> PortCounters {
        let mut r = PortCounters::new_zeroed();
        r.port_select = self.port_select;
        r.counter_select.set(self.counter_select.0 as u16);
        r.counter_select2 = (self.counter_select.0 >> 16) as u8;
        r.symbol_error_counter.set(self.symbol_error_counter);
        r.link_error_recovery_counter = self.link_error_recovery_counter;
        r.link_downed_counter = self.link_downed_counter;
        r.port_rcv_errors.set(self.port_rcv_errors);
        r.port_rcv_remote_physical_errors
            .set(self.port_rcv_remote_physical_errors);
        r.port_rcv_switch_relay_errors
            .set(self.port_rcv_switch_relay_errors);
        r.port_xmit_discards.set(self.port_xmit_discards);
        r.port_xmit_constraint_errors = self.port_xmit_constraint_errors;
        r.port_rcv_constraint_errors = self.port_rcv_constraint_errors;
        r.set_local_link_integrity_errors(self.local_link_integrity_errors);
        r.set_excessive_buffer_overrun_errors(self.excessive_buffer_overrun_errors);
        r.qp1_dropped.set(self.qp1_dropped);
        r.vl15_dropped.set(self.vl15_dropped);
        r.port_xmit_data.set(self.port_xmit_data);
        r.port_rcv_data.set(self.port_rcv_data);
        r.port_xmit_pkts.set(self.port_xmit_pkts);
        r.port_rcv_pkts.set(self.port_rcv_pkts);
        r.port_xmit_wait.set(self.port_xmit_wait);
        r
    }
}

impl fmt::Display for PortCountersRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_raw(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::testdata::{perf_mad, perfquery_listing};
    use crate::perf::{PortCountersExtRepr, PERF_DATA_OFFSET};

    /// ibsim's answer to `perfquery 2 1` (Hca1 port 1 after one OpenSM sweep;
    /// mad/testdata/pma_pc_hca1_p1.*): PortSelect 1, PortXmitData 720, PortRcvData 792,
    /// PortXmitPkts 10, PortRcvPkts 11, every error counter 0.
    static BYTES: [u8; 44] = {
        let mut b = [0u8; 44];
        b[1] = 1;
        b[26] = 0x02;
        b[27] = 0xd0;
        b[30] = 0x03;
        b[31] = 0x18;
        b[35] = 10;
        b[39] = 11;
        b
    };

    fn repr() -> PortCountersRepr {
        PortCountersRepr {
            port_select: 1,
            port_xmit_data: 720,
            port_rcv_data: 792,
            port_xmit_pkts: 10,
            port_rcv_pkts: 11,
            ..PortCountersRepr::default()
        }
    }

    fn captured() -> [u8; 256] {
        perf_mad(
            include_str!("../../testdata/pma_pc_hca1_p1.mads"),
            "rcv",
            0x12,
        )
    }

    #[test]
    fn bytes_are_the_capture() {
        assert_eq!(&captured()[PERF_DATA_OFFSET..][..44], &BYTES[..]);
    }

    #[test]
    fn deconstruct() {
        let (p, _) = PortCounters::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(p.port_select, 1);
        assert_eq!(p.port_xmit_data.get(), 720);
        assert_eq!(p.port_rcv_data.get(), 792);
        assert_eq!((p.port_xmit_pkts.get(), p.port_rcv_pkts.get()), (10, 11));
        assert_eq!(p.symbol_error_counter.get(), 0);
    }

    #[test]
    fn construct() {
        let mut p = PortCounters::new_zeroed();
        p.port_select = 1;
        p.port_xmit_data.set(720);
        p.port_rcv_data.set(792);
        p.port_xmit_pkts.set(10);
        p.port_rcv_pkts.set(11);
        assert_eq!(p.as_bytes(), &BYTES[..]);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(PortCountersRepr::parse(&BYTES).unwrap(), repr());
        let mut out = [0xAAu8; 44];
        repr().emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
    }

    #[test]
    fn impossible_len() {
        assert!(matches!(
            PortCountersRepr::parse(&BYTES[..43]),
            Err(ParseError::Len(_))
        ));
    }

    #[test]
    fn reserved_bits_and_nibbles() {
        let mut b = BYTES;
        b[0] = 0x77;
        let r = PortCountersRepr::parse(&b).unwrap();
        let mut out = [0u8; 44];
        r.emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
        let (p, _) = PortCounters::mut_from_prefix(&mut b[..]).unwrap();
        p.set_local_link_integrity_errors(0xA);
        p.set_excessive_buffer_overrun_errors(0x5);
        assert_eq!(p.b19, 0xA5);
        p.set_local_link_integrity_errors(0x1F);
        assert_eq!(p.b19, 0xF5, "excess bits dropped, neighbour kept");
    }

    /// The reset perfquery -R sends: CounterSelect 0xFFFF, CounterSelect2 1 (PortXmitWait,
    /// since ibsim advertises IsPortXmitWaitSupported) — mad/testdata/pma_reset_hca1_p1.mads.
    #[test]
    fn counter_select_of_perfquery_reset() {
        let sent = perf_mad(
            include_str!("../../testdata/pma_reset_hca1_p1.mads"),
            "snd",
            0x12,
        );
        assert_eq!(sent[3], 0x02, "a Set");
        let r = PortCountersRepr::parse(&sent[PERF_DATA_OFFSET..]).unwrap();
        assert_eq!(r.counter_select, CounterSelect(0x1_FFFF));
        assert!(r.counter_select.has(CounterSelect::XMIT_WAIT));
        assert!(!r.counter_select.has(CounterSelect::QP1_DROPPED));
        assert!(r.counter_select.has(CounterSelect::SYMBOL_ERRORS));
    }

    #[test]
    fn saturating_widths() {
        let big = PortCountersExtRepr {
            port_select: 3,
            symbol_error_counter: 70_000,
            link_error_recovery_counter: 300,
            link_downed_counter: 255,
            port_rcv_errors: 65_535,
            local_link_integrity_errors: 16,
            excessive_buffer_overrun_errors: 15,
            port_xmit_data: 1 << 40,
            port_rcv_pkts: 12,
            ..PortCountersExtRepr::default()
        };
        let pc = PortCountersRepr::saturating(&big);
        assert_eq!(pc.port_select, 3);
        assert_eq!(pc.symbol_error_counter, u16::MAX);
        assert_eq!(pc.link_error_recovery_counter, u8::MAX);
        assert_eq!(pc.link_downed_counter, 255);
        assert_eq!(pc.port_rcv_errors, 65_535);
        assert_eq!(pc.local_link_integrity_errors, 0xF);
        assert_eq!(pc.excessive_buffer_overrun_errors, 0xF);
        assert_eq!(pc.port_xmit_data, u32::MAX);
        assert_eq!(pc.port_rcv_pkts, 12);
    }

    /// Our listing of the captured answer is perfquery's, line for line.
    #[test]
    fn matches_perfquery() {
        let r = PortCountersRepr::parse(&captured()[PERF_DATA_OFFSET..]).unwrap();
        let txt = include_str!("../../testdata/pma_pc_hca1_p1.txt");
        assert_eq!(r.to_string(), perfquery_listing(txt));
        let all = perf_mad(
            include_str!("../../testdata/pma_pc_sw1_all.mads"),
            "rcv",
            0x12,
        );
        let r = PortCountersRepr::parse(&all[PERF_DATA_OFFSET..]).unwrap();
        assert_eq!(r.port_select, 0xFF);
        assert_eq!(
            r.to_string(),
            perfquery_listing(include_str!("../../testdata/pma_pc_sw1_all.txt"))
        );
    }
}

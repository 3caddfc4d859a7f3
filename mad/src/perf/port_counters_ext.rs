//! PortCountersExtended (PerfMgt attribute 0x001D), 184 bytes — IBA vol1 §16.1.4.11, with the
//! additional 64-bit error counters of later IBA releases.
//!
//! 64-bit versions of PortCounters' data and packet counters, plus unicast/multicast packet
//! counts; when ClassPortInfo.CapabilityMask2 has IsAdditionalPortCountersExtendedSupported
//! ([`super::cap::CM2_ADDITIONAL_PORT_COUNTERS_EXT`]) also CounterSelect2 and 64-bit
//! versions of every PortCounters error counter. Without that bit bytes 4..7 and 72..183 are
//! reserved (zero). View: [`PortCountersExt`]; validated value: [`PortCountersExtRepr`].
//!
//! | bytes | field |
//! |---|---|
//! | 0 | Reserved |
//! | 1 | PortSelect |
//! | 2..3 | CounterSelect |
//! | 4..7 | CounterSelect2 |
//! | 8, 16, 24, 32 | PortXmitData, PortRcvData (32-bit words), PortXmitPkts, PortRcvPkts |
//! | 40, 48, 56, 64 | PortUnicastXmitPkts, PortUnicastRcvPkts, PortMulticastXmitPkts, PortMulticastRcvPkts |
//! | 72 .. 176 | SymbolErrorCounter, LinkErrorRecoveryCounter, LinkDownedCounter, PortRcvErrors, PortRcvRemotePhysicalErrors, PortRcvSwitchRelayErrors, PortXmitDiscards, PortXmitConstraintErrors, PortRcvConstraintErrors, LocalLinkIntegrityErrors, ExcessiveBufferOverrunErrors, VL15Dropped, PortXmitWait, QP1Dropped (8 bytes each) |

use core::fmt;

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::{MgmtClass, PmaAttrId};
use crate::error::ParseError;
use crate::gmp::GmpAttrRepr;
use crate::pretty::field;

/// PortCountersExtended.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct PortCountersExt {
    /// Reserved — byte 0.
    pub reserved0: u8,
    /// PortSelect — byte 1.
    pub port_select: u8,
    /// CounterSelect — bytes 2..3.
    pub counter_select: U16,
    /// CounterSelect2 — bytes 4..7.
    pub counter_select2: U32,
    /// PortXmitData — bytes 8..15, in 32-bit words.
    pub port_xmit_data: U64,
    /// PortRcvData — bytes 16..23, in 32-bit words.
    pub port_rcv_data: U64,
    /// PortXmitPkts — bytes 24..31.
    pub port_xmit_pkts: U64,
    /// PortRcvPkts — bytes 32..39.
    pub port_rcv_pkts: U64,
    /// PortUnicastXmitPkts — bytes 40..47.
    pub port_unicast_xmit_pkts: U64,
    /// PortUnicastRcvPkts — bytes 48..55.
    pub port_unicast_rcv_pkts: U64,
    /// PortMulticastXmitPkts — bytes 56..63.
    pub port_multicast_xmit_pkts: U64,
    /// PortMulticastRcvPkts — bytes 64..71.
    pub port_multicast_rcv_pkts: U64,
    /// SymbolErrorCounter — bytes 72..79.
    pub symbol_error_counter: U64,
    /// LinkErrorRecoveryCounter — bytes 80..87.
    pub link_error_recovery_counter: U64,
    /// LinkDownedCounter — bytes 88..95.
    pub link_downed_counter: U64,
    /// PortRcvErrors — bytes 96..103.
    pub port_rcv_errors: U64,
    /// PortRcvRemotePhysicalErrors — bytes 104..111.
    pub port_rcv_remote_physical_errors: U64,
    /// PortRcvSwitchRelayErrors — bytes 112..119.
    pub port_rcv_switch_relay_errors: U64,
    /// PortXmitDiscards — bytes 120..127.
    pub port_xmit_discards: U64,
    /// PortXmitConstraintErrors — bytes 128..135.
    pub port_xmit_constraint_errors: U64,
    /// PortRcvConstraintErrors — bytes 136..143.
    pub port_rcv_constraint_errors: U64,
    /// LocalLinkIntegrityErrors — bytes 144..151.
    pub local_link_integrity_errors: U64,
    /// ExcessiveBufferOverrunErrors — bytes 152..159.
    pub excessive_buffer_overrun_errors: U64,
    /// VL15Dropped — bytes 160..167.
    pub vl15_dropped: U64,
    /// PortXmitWait — bytes 168..175.
    pub port_xmit_wait: U64,
    /// QP1Dropped — bytes 176..183.
    pub qp1_dropped: U64,
}
const _: () = assert!(size_of::<PortCountersExt>() == 184);
const _: () = assert!(core::mem::offset_of!(PortCountersExt, counter_select2) == 4);
const _: () = assert!(core::mem::offset_of!(PortCountersExt, port_xmit_data) == 8);
const _: () = assert!(core::mem::offset_of!(PortCountersExt, port_multicast_rcv_pkts) == 64);
const _: () = assert!(core::mem::offset_of!(PortCountersExt, symbol_error_counter) == 72);
const _: () = assert!(core::mem::offset_of!(PortCountersExt, vl15_dropped) == 160);
const _: () = assert!(core::mem::offset_of!(PortCountersExt, qp1_dropped) == 176);

/// PortCountersExtended.CounterSelect (bytes 2..3) | CounterSelect2 (bytes 4..7) << 16: which
/// counters a Set clears. Bits as the IBA numbers them (and as `perfquery -x -R`'s mask uses
/// them).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct CounterSelectExt(pub u64);

impl CounterSelectExt {
    /// PortXmitData.
    pub const XMIT_DATA: u64 = 1 << 0;
    /// PortRcvData.
    pub const RCV_DATA: u64 = 1 << 1;
    /// PortXmitPkts.
    pub const XMIT_PKTS: u64 = 1 << 2;
    /// PortRcvPkts.
    pub const RCV_PKTS: u64 = 1 << 3;
    /// PortUnicastXmitPkts.
    pub const UNICAST_XMIT_PKTS: u64 = 1 << 4;
    /// PortUnicastRcvPkts.
    pub const UNICAST_RCV_PKTS: u64 = 1 << 5;
    /// PortMulticastXmitPkts.
    pub const MULTICAST_XMIT_PKTS: u64 = 1 << 6;
    /// PortMulticastRcvPkts.
    pub const MULTICAST_RCV_PKTS: u64 = 1 << 7;
    /// SymbolErrorCounter (CounterSelect2 bit 0).
    pub const SYMBOL_ERRORS: u64 = 1 << 16;
    /// LinkErrorRecoveryCounter (CounterSelect2 bit 1).
    pub const LINK_ERROR_RECOVERY: u64 = 1 << 17;
    /// LinkDownedCounter (CounterSelect2 bit 2).
    pub const LINK_DOWNED: u64 = 1 << 18;
    /// PortRcvErrors (CounterSelect2 bit 3).
    pub const RCV_ERRORS: u64 = 1 << 19;
    /// PortRcvRemotePhysicalErrors (CounterSelect2 bit 4).
    pub const RCV_REMOTE_PHYSICAL_ERRORS: u64 = 1 << 20;
    /// PortRcvSwitchRelayErrors (CounterSelect2 bit 5).
    pub const RCV_SWITCH_RELAY_ERRORS: u64 = 1 << 21;
    /// PortXmitDiscards (CounterSelect2 bit 6).
    pub const XMIT_DISCARDS: u64 = 1 << 22;
    /// PortXmitConstraintErrors (CounterSelect2 bit 7).
    pub const XMIT_CONSTRAINT_ERRORS: u64 = 1 << 23;
    /// PortRcvConstraintErrors (CounterSelect2 bit 8).
    pub const RCV_CONSTRAINT_ERRORS: u64 = 1 << 24;
    /// LocalLinkIntegrityErrors (CounterSelect2 bit 9).
    pub const LOCAL_LINK_INTEGRITY_ERRORS: u64 = 1 << 25;
    /// ExcessiveBufferOverrunErrors (CounterSelect2 bit 10).
    pub const EXCESSIVE_BUFFER_OVERRUN_ERRORS: u64 = 1 << 26;
    /// VL15Dropped (CounterSelect2 bit 11).
    pub const VL15_DROPPED: u64 = 1 << 27;
    /// PortXmitWait (CounterSelect2 bit 12).
    pub const XMIT_WAIT: u64 = 1 << 28;
    /// QP1Dropped (CounterSelect2 bit 13).
    pub const QP1_DROPPED: u64 = 1 << 29;

    /// The select of a PortCountersExtended attribute.
    #[must_use]
    pub fn of(p: &PortCountersExt) -> CounterSelectExt {
        CounterSelectExt(
            u64::from(p.counter_select.get()) | u64::from(p.counter_select2.get()) << 16,
        )
    }
    /// True if `bit` (one of the constants) is selected.
    #[must_use]
    pub const fn has(self, bit: u64) -> bool {
        self.0 & bit != 0
    }
}

impl PortCountersExt {
    /// Writes the fields `perfquery -x` prints: the first eight counters, the unicast and
    /// multicast packet counters when `ext_width` (CapabilityMask IsExtendedWidthSupported),
    /// and CounterSelect2 with the error counters when `additional`
    /// (CapabilityMask2 IsAdditionalPortCountersExtendedSupported).
    pub fn fmt_as(
        &self,
        f: &mut fmt::Formatter<'_>,
        ext_width: bool,
        additional: bool,
    ) -> fmt::Result {
        field(f, "PortSelect", self.port_select)?;
        field(
            f,
            "CounterSelect",
            format_args!("{:#06x}", self.counter_select.get()),
        )?;
        field(f, "PortXmitData", self.port_xmit_data.get())?;
        field(f, "PortRcvData", self.port_rcv_data.get())?;
        field(f, "PortXmitPkts", self.port_xmit_pkts.get())?;
        field(f, "PortRcvPkts", self.port_rcv_pkts.get())?;
        if ext_width {
            field(f, "PortUnicastXmitPkts", self.port_unicast_xmit_pkts.get())?;
            field(f, "PortUnicastRcvPkts", self.port_unicast_rcv_pkts.get())?;
            field(
                f,
                "PortMulticastXmitPkts",
                self.port_multicast_xmit_pkts.get(),
            )?;
            field(
                f,
                "PortMulticastRcvPkts",
                self.port_multicast_rcv_pkts.get(),
            )?;
        }
        if additional {
            field(
                f,
                "CounterSelect2",
                format_args!("{:#010x}", self.counter_select2.get()),
            )?;
            let rows: [(&str, &U64); 14] = [
                ("SymbolErrorCounter", &self.symbol_error_counter),
                (
                    "LinkErrorRecoveryCounter",
                    &self.link_error_recovery_counter,
                ),
                ("LinkDownedCounter", &self.link_downed_counter),
                ("PortRcvErrors", &self.port_rcv_errors),
                (
                    "PortRcvRemotePhysicalErrors",
                    &self.port_rcv_remote_physical_errors,
                ),
                (
                    "PortRcvSwitchRelayErrors",
                    &self.port_rcv_switch_relay_errors,
                ),
                ("PortXmitDiscards", &self.port_xmit_discards),
                (
                    "PortXmitConstraintErrors",
                    &self.port_xmit_constraint_errors,
                ),
                ("PortRcvConstraintErrors", &self.port_rcv_constraint_errors),
                (
                    "LocalLinkIntegrityErrors",
                    &self.local_link_integrity_errors,
                ),
                (
                    "ExcessiveBufferOverrunErrors",
                    &self.excessive_buffer_overrun_errors,
                ),
                ("VL15Dropped", &self.vl15_dropped),
                ("PortXmitWait", &self.port_xmit_wait),
                ("QP1Dropped", &self.qp1_dropped),
            ];
            for (name, v) in rows {
                field(f, name, v.get())?;
            }
        }
        Ok(())
    }
}

/// Every field, IBA names (as `perfquery -x` prints them against a port with both
/// capability bits).
impl fmt::Display for PortCountersExt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_as(f, true, true)
    }
}

/// PortCountersExtended, validated.
///
/// Nothing is reserved-valued, so `parse` fails only on length. Byte 0 is reserved: ignored,
/// emitted as zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PortCountersExtRepr {
    /// PortSelect.
    pub port_select: u8,
    /// CounterSelect | CounterSelect2 << 16.
    pub counter_select: CounterSelectExt,
    /// PortXmitData, in 32-bit words.
    pub port_xmit_data: u64,
    /// PortRcvData, in 32-bit words.
    pub port_rcv_data: u64,
    /// PortXmitPkts.
    pub port_xmit_pkts: u64,
    /// PortRcvPkts.
    pub port_rcv_pkts: u64,
    /// PortUnicastXmitPkts.
    pub port_unicast_xmit_pkts: u64,
    /// PortUnicastRcvPkts.
    pub port_unicast_rcv_pkts: u64,
    /// PortMulticastXmitPkts.
    pub port_multicast_xmit_pkts: u64,
    /// PortMulticastRcvPkts.
    pub port_multicast_rcv_pkts: u64,
    /// SymbolErrorCounter.
    pub symbol_error_counter: u64,
    /// LinkErrorRecoveryCounter.
    pub link_error_recovery_counter: u64,
    /// LinkDownedCounter.
    pub link_downed_counter: u64,
    /// PortRcvErrors.
    pub port_rcv_errors: u64,
    /// PortRcvRemotePhysicalErrors.
    pub port_rcv_remote_physical_errors: u64,
    /// PortRcvSwitchRelayErrors.
    pub port_rcv_switch_relay_errors: u64,
    /// PortXmitDiscards.
    pub port_xmit_discards: u64,
    /// PortXmitConstraintErrors.
    pub port_xmit_constraint_errors: u64,
    /// PortRcvConstraintErrors.
    pub port_rcv_constraint_errors: u64,
    /// LocalLinkIntegrityErrors.
    pub local_link_integrity_errors: u64,
    /// ExcessiveBufferOverrunErrors.
    pub excessive_buffer_overrun_errors: u64,
    /// VL15Dropped.
    pub vl15_dropped: u64,
    /// PortXmitWait.
    pub port_xmit_wait: u64,
    /// QP1Dropped.
    pub qp1_dropped: u64,
}

impl GmpAttrRepr for PortCountersExtRepr {
    type Raw = PortCountersExt;
    const CLASS: MgmtClass = MgmtClass::PERF_MGMT;
    const ATTR_ID: u16 = PmaAttrId::PORT_COUNTERS_EXT.0;

    fn from_raw(r: &PortCountersExt) -> Result<Self, ParseError> {
        Ok(PortCountersExtRepr {
            port_select: r.port_select,
            counter_select: CounterSelectExt::of(r),
            port_xmit_data: r.port_xmit_data.get(),
            port_rcv_data: r.port_rcv_data.get(),
            port_xmit_pkts: r.port_xmit_pkts.get(),
            port_rcv_pkts: r.port_rcv_pkts.get(),
            port_unicast_xmit_pkts: r.port_unicast_xmit_pkts.get(),
            port_unicast_rcv_pkts: r.port_unicast_rcv_pkts.get(),
            port_multicast_xmit_pkts: r.port_multicast_xmit_pkts.get(),
            port_multicast_rcv_pkts: r.port_multicast_rcv_pkts.get(),
            symbol_error_counter: r.symbol_error_counter.get(),
            link_error_recovery_counter: r.link_error_recovery_counter.get(),
            link_downed_counter: r.link_downed_counter.get(),
            port_rcv_errors: r.port_rcv_errors.get(),
            port_rcv_remote_physical_errors: r.port_rcv_remote_physical_errors.get(),
            port_rcv_switch_relay_errors: r.port_rcv_switch_relay_errors.get(),
            port_xmit_discards: r.port_xmit_discards.get(),
            port_xmit_constraint_errors: r.port_xmit_constraint_errors.get(),
            port_rcv_constraint_errors: r.port_rcv_constraint_errors.get(),
            local_link_integrity_errors: r.local_link_integrity_errors.get(),
            excessive_buffer_overrun_errors: r.excessive_buffer_overrun_errors.get(),
            vl15_dropped: r.vl15_dropped.get(),
            port_xmit_wait: r.port_xmit_wait.get(),
            qp1_dropped: r.qp1_dropped.get(),
        })
    }

    fn to_raw(&self) -> PortCountersExt {
        let mut r = PortCountersExt::new_zeroed();
        r.port_select = self.port_select;
        r.counter_select.set(self.counter_select.0 as u16);
        r.counter_select2.set((self.counter_select.0 >> 16) as u32);
        r.port_xmit_data.set(self.port_xmit_data);
        r.port_rcv_data.set(self.port_rcv_data);
        r.port_xmit_pkts.set(self.port_xmit_pkts);
        r.port_rcv_pkts.set(self.port_rcv_pkts);
        r.port_unicast_xmit_pkts.set(self.port_unicast_xmit_pkts);
        r.port_unicast_rcv_pkts.set(self.port_unicast_rcv_pkts);
        r.port_multicast_xmit_pkts
            .set(self.port_multicast_xmit_pkts);
        r.port_multicast_rcv_pkts.set(self.port_multicast_rcv_pkts);
        r.symbol_error_counter.set(self.symbol_error_counter);
        r.link_error_recovery_counter
            .set(self.link_error_recovery_counter);
        r.link_downed_counter.set(self.link_downed_counter);
        r.port_rcv_errors.set(self.port_rcv_errors);
        r.port_rcv_remote_physical_errors
            .set(self.port_rcv_remote_physical_errors);
        r.port_rcv_switch_relay_errors
            .set(self.port_rcv_switch_relay_errors);
        r.port_xmit_discards.set(self.port_xmit_discards);
        r.port_xmit_constraint_errors
            .set(self.port_xmit_constraint_errors);
        r.port_rcv_constraint_errors
            .set(self.port_rcv_constraint_errors);
        r.local_link_integrity_errors
            .set(self.local_link_integrity_errors);
        r.excessive_buffer_overrun_errors
            .set(self.excessive_buffer_overrun_errors);
        r.vl15_dropped.set(self.vl15_dropped);
        r.port_xmit_wait.set(self.port_xmit_wait);
        r.qp1_dropped.set(self.qp1_dropped);
        r
    }
}

impl fmt::Display for PortCountersExtRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_raw(), f)
    }
}

/// `Display` of a [`PortCountersExt`] with the fields a port's capabilities allow, as
/// `perfquery -x` prints them (see [`PortCountersExt::fmt_as`]).
#[derive(Clone, Copy, Debug)]
pub struct PerfqueryExt<'a> {
    /// The attribute.
    pub pc: &'a PortCountersExt,
    /// CapabilityMask IsExtendedWidthSupported.
    pub ext_width: bool,
    /// CapabilityMask2 IsAdditionalPortCountersExtendedSupported.
    pub additional: bool,
}

impl fmt::Display for PerfqueryExt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pc.fmt_as(f, self.ext_width, self.additional)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::testdata::{perf_mad, perfquery_listing};
    use crate::perf::PERF_DATA_OFFSET;

    /// ibsim's answer to `perfquery -x 2 1` (mad/testdata/pma_pcx_hca1_p1.*): PortSelect 1,
    /// PortXmitData 864, PortRcvData 936, PortXmitPkts 12, PortRcvPkts 13, the rest 0. ibsim
    /// writes only the first 72 bytes (it does not advertise the additional counters); the
    /// captured buffer holds stale receive-buffer bytes beyond them, as real buffers do.
    static BYTES: [u8; 184] = {
        let mut b = [0u8; 184];
        b[1] = 1;
        b[14] = 0x03;
        b[15] = 0x60;
        b[22] = 0x03;
        b[23] = 0xa8;
        b[31] = 12;
        b[39] = 13;
        b
    };

    fn repr() -> PortCountersExtRepr {
        PortCountersExtRepr {
            port_select: 1,
            port_xmit_data: 864,
            port_rcv_data: 936,
            port_xmit_pkts: 12,
            port_rcv_pkts: 13,
            ..PortCountersExtRepr::default()
        }
    }

    fn captured() -> [u8; 256] {
        perf_mad(
            include_str!("../../testdata/pma_pcx_hca1_p1.mads"),
            "rcv",
            0x1D,
        )
    }

    #[test]
    fn bytes_are_the_capture() {
        let mad = captured();
        assert_eq!(&mad[PERF_DATA_OFFSET..][..72], &BYTES[..72]);
        assert_ne!(
            &mad[PERF_DATA_OFFSET..][72..184],
            &BYTES[72..],
            "stale tail"
        );
    }

    #[test]
    fn deconstruct() {
        let (p, _) = PortCountersExt::ref_from_prefix(&BYTES[..]).unwrap();
        assert_eq!(p.port_select, 1);
        assert_eq!((p.port_xmit_data.get(), p.port_rcv_data.get()), (864, 936));
        assert_eq!((p.port_xmit_pkts.get(), p.port_rcv_pkts.get()), (12, 13));
        assert_eq!(p.qp1_dropped.get(), 0);
    }

    #[test]
    fn construct() {
        let mut p = PortCountersExt::new_zeroed();
        p.port_select = 1;
        p.port_xmit_data.set(864);
        p.port_rcv_data.set(936);
        p.port_xmit_pkts.set(12);
        p.port_rcv_pkts.set(13);
        assert_eq!(p.as_bytes(), &BYTES[..]);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(PortCountersExtRepr::parse(&BYTES).unwrap(), repr());
        let mut out = [0xAAu8; 184];
        repr().emit(&mut out).unwrap();
        assert_eq!(out, BYTES);
        let full = PortCountersExtRepr {
            counter_select: CounterSelectExt(0x3FFF_FFFF),
            qp1_dropped: u64::MAX,
            symbol_error_counter: 1,
            ..repr()
        };
        let mut b = [0u8; 184];
        full.emit(&mut b).unwrap();
        assert_eq!(&b[2..8], &[0xFF, 0xFF, 0x00, 0x00, 0x3F, 0xFF]);
        assert_eq!(&b[176..], &[0xFF; 8]);
        assert_eq!(b[79], 1);
        assert_eq!(PortCountersExtRepr::parse(&b).unwrap(), full);
    }

    #[test]
    fn impossible_len() {
        assert!(matches!(
            PortCountersExtRepr::parse(&BYTES[..183]),
            Err(ParseError::Len(_))
        ));
    }

    #[test]
    fn reserved_byte() {
        let mut b = BYTES;
        b[0] = 0x99;
        let mut out = [0u8; 184];
        PortCountersExtRepr::parse(&b)
            .unwrap()
            .emit(&mut out)
            .unwrap();
        assert_eq!(out, BYTES);
    }

    /// The reset perfquery -x -R would send: CounterSelect 0xFFFF, CounterSelect2 0xFFF | XmitWait.
    #[test]
    fn counter_select_bits() {
        let s = CounterSelectExt(0xFFFF | (0x1FFF << 16));
        assert!(s.has(CounterSelectExt::XMIT_DATA) && s.has(CounterSelectExt::VL15_DROPPED));
        assert!(s.has(CounterSelectExt::XMIT_WAIT) && !s.has(CounterSelectExt::QP1_DROPPED));
    }

    /// ibsim advertises IsExtendedWidthSupported, not the additional counters: perfquery -x
    /// prints the eight 64-bit counters, and so do we.
    #[test]
    fn matches_perfquery() {
        let mad = captured();
        let (p, _) = PortCountersExt::ref_from_prefix(&mad[PERF_DATA_OFFSET..]).unwrap();
        let ours = PerfqueryExt {
            pc: p,
            ext_width: true,
            additional: false,
        }
        .to_string();
        let txt = include_str!("../../testdata/pma_pcx_hca1_p1.txt");
        assert_eq!(ours, perfquery_listing(txt));
        assert!(p
            .to_string()
            .contains("QP1Dropped:......................0\n"));
    }
}

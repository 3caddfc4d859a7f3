//! MCMemberRecord (SubnAdm attribute 0x0038, IBA vol1 §15.2.5.17): a port's membership of a
//! multicast group, and the group's parameters.
//!
//! | bytes | field |
//! |---|---|
//! | 0..15 | MGID |
//! | 16..31 | PortGID |
//! | 32..35 | Q_Key |
//! | 36..37 | MLID |
//! | 38 | MTUSelector (bits 7..6), MTU (5..0) |
//! | 39 | TClass |
//! | 40..41 | P_Key |
//! | 42 | RateSelector (7..6), Rate (5..0) |
//! | 43 | PacketLifeTimeSelector (7..6), PacketLifeTime (5..0) |
//! | 44..47 | SL (bits 31..28), FlowLabel (27..8), HopLimit (7..0) |
//! | 48 | Scope (7..4), JoinState (3..0) |
//! | 49 | ProxyJoin (bit 7), reserved |
//! | 50..51 | reserved |
//!
//! The record is 52 bytes; in a table it takes 56 (AttributeOffset 7 words,
//! [`super::padded_len`]).
//!
//! [`McMemberRecord`] is the view (accessors never fail once the 52 bytes are there);
//! [`Repr`] (`McMemberRepr`) the value, whose [`Repr::parse`] accepts any bytes (every field
//! combination is representable; the SA judges them) and whose [`Repr::emit`] writes reserved
//! bits as zero. [`McMemberRecord`] is an [`SaRecord`]: its components in ComponentMask order
//! are those of [`comp`].

use core::fmt;

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{Component, SaRecord};
use crate::codes::{MgmtClass, SaAttrId};
use crate::error::{check_len, Layer, ParseError};
use crate::types::{Gid, Lid, PKey, QKey};

/// The parse-error layer of this record.
const LAYER: Layer = Layer::GmpAttr {
    class: MgmtClass::SUBN_ADM,
    attr: SaAttrId::MC_MEMBER_RECORD.0,
};

/// Bytes of one record (a table entry takes [`super::padded_len`] of it, 56).
pub const RECORD_LEN: usize = 52;

/// MCMemberRecord, 52 bytes (IBA vol1 §15.2.5.17).
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct McMemberRecord {
    /// MGID — bytes 0..15.
    pub mgid: [u8; 16],
    /// PortGID — bytes 16..31.
    pub port_gid: [u8; 16],
    /// Q_Key — bytes 32..35.
    pub q_key: U32,
    /// MLID — bytes 36..37.
    pub mlid: U16,
    /// MTUSelector, MTU — byte 38.
    pub mtu_b: u8,
    /// TClass — byte 39.
    pub t_class: u8,
    /// P_Key — bytes 40..41.
    pub p_key: U16,
    /// RateSelector, Rate — byte 42.
    pub rate_b: u8,
    /// PacketLifeTimeSelector, PacketLifeTime — byte 43.
    pub life_b: u8,
    /// SL (31..28), FlowLabel (27..8), HopLimit (7..0) — bytes 44..47.
    pub sl_flow_hop: U32,
    /// Scope, JoinState — byte 48.
    pub scope_state: u8,
    /// ProxyJoin (bit 7), reserved — byte 49.
    pub proxy_b: u8,
    /// Reserved — bytes 50..51.
    pub resv: [u8; 2],
}
const _: () = assert!(size_of::<McMemberRecord>() == RECORD_LEN);
const _: () = assert!(core::mem::offset_of!(McMemberRecord, q_key) == 32);
const _: () = assert!(core::mem::offset_of!(McMemberRecord, mlid) == 36);
const _: () = assert!(core::mem::offset_of!(McMemberRecord, p_key) == 40);
const _: () = assert!(core::mem::offset_of!(McMemberRecord, sl_flow_hop) == 44);
const _: () = assert!(core::mem::offset_of!(McMemberRecord, scope_state) == 48);
const _: () = assert!(core::mem::offset_of!(McMemberRecord, proxy_b) == 49);

impl SaRecord for McMemberRecord {
    const ATTR: SaAttrId = SaAttrId::MC_MEMBER_RECORD;
    const LEN: usize = RECORD_LEN;
    const COMPONENTS: &'static [Component] = &[
        Component::bytes(0, 16),  // MGID
        Component::bytes(16, 16), // PortGID
        Component::bytes(32, 4),  // Q_Key
        Component::bytes(36, 2),  // MLID
        Component::new(304, 2),   // MTUSelector
        Component::new(306, 6),   // MTU
        Component::bytes(39, 1),  // TClass
        Component::bytes(40, 2),  // P_Key
        Component::new(336, 2),   // RateSelector
        Component::new(338, 6),   // Rate
        Component::new(344, 2),   // PacketLifeTimeSelector
        Component::new(346, 6),   // PacketLifeTime
        Component::new(352, 4),   // SL
        Component::new(356, 20),  // FlowLabel
        Component::new(376, 8),   // HopLimit
        Component::new(384, 4),   // Scope
        Component::new(388, 4),   // JoinState
        Component::new(392, 1),   // ProxyJoin
        Component::reserved(393, 23),
    ];
}
const _: () = assert!(super::components_fit(
    McMemberRecord::COMPONENTS,
    RECORD_LEN
));

crate::sub_byte_fields!(McMemberRecord {
    /// MTUSelector — byte 38, bits 7..6.
    mtu_selector, set_mtu_selector: mtu_b[7..6];
    /// MTU — byte 38, bits 5..0.
    mtu, set_mtu: mtu_b[5..0];
    /// RateSelector — byte 42, bits 7..6.
    rate_selector, set_rate_selector: rate_b[7..6];
    /// Rate — byte 42, bits 5..0.
    rate, set_rate: rate_b[5..0];
    /// PacketLifeTimeSelector — byte 43, bits 7..6.
    packet_life_selector, set_packet_life_selector: life_b[7..6];
    /// PacketLifeTime — byte 43, bits 5..0.
    packet_life, set_packet_life: life_b[5..0];
    /// Scope — byte 48, bits 7..4.
    scope, set_scope: scope_state[7..4];
    /// JoinState — byte 48, bits 3..0.
    join_state, set_join_state: scope_state[3..0];
    /// ProxyJoin — byte 49, bit 7.
    proxy_join, set_proxy_join: proxy_b[7..7];
});

/// ComponentMask bits of the MCMemberRecord, in IBA order (OpenSM `IB_MCR_COMPMASK_*`).
pub mod comp {
    /// MGID.
    pub const MGID: u64 = 1 << 0;
    /// PortGID.
    pub const PORT_GID: u64 = 1 << 1;
    /// Q_Key.
    pub const QKEY: u64 = 1 << 2;
    /// MLID.
    pub const MLID: u64 = 1 << 3;
    /// MTUSelector.
    pub const MTU_SEL: u64 = 1 << 4;
    /// MTU.
    pub const MTU: u64 = 1 << 5;
    /// TClass.
    pub const TCLASS: u64 = 1 << 6;
    /// P_Key.
    pub const PKEY: u64 = 1 << 7;
    /// RateSelector.
    pub const RATE_SEL: u64 = 1 << 8;
    /// Rate.
    pub const RATE: u64 = 1 << 9;
    /// PacketLifeTimeSelector.
    pub const LIFE_SEL: u64 = 1 << 10;
    /// PacketLifeTime.
    pub const LIFE: u64 = 1 << 11;
    /// SL.
    pub const SL: u64 = 1 << 12;
    /// FlowLabel.
    pub const FLOW: u64 = 1 << 13;
    /// HopLimit.
    pub const HOP: u64 = 1 << 14;
    /// Scope.
    pub const SCOPE: u64 = 1 << 15;
    /// JoinState.
    pub const JOIN_STATE: u64 = 1 << 16;
    /// ProxyJoin.
    pub const PROXY: u64 = 1 << 17;
}

/// JoinState bits (IBA vol1 §15.2.5.17, Table "MCMemberRecord" JoinState).
pub mod join {
    /// FullMember: sends and receives.
    pub const FULL: u8 = 1 << 0;
    /// NonMember: receives, does not count for the group's existence.
    pub const NON_MEMBER: u8 = 1 << 1;
    /// SendOnlyNonMember: sends only.
    pub const SEND_ONLY_NON_MEMBER: u8 = 1 << 2;
    /// SendOnlyFullMember (IBA 1.3): sends only, counts like a full member.
    pub const SEND_ONLY_FULL: u8 = 1 << 3;
}

/// MTU, rate and packet-lifetime selectors (IBA vol1 §15.2.5.16).
pub mod selector {
    /// Greater than the value.
    pub const GREATER: u8 = 0;
    /// Less than the value.
    pub const LESS: u8 = 1;
    /// Exactly the value.
    pub const EXACT: u8 = 2;
    /// The largest available (the value is ignored).
    pub const LARGEST: u8 = 3;
}

/// The multicast address scope (IBA vol1 §4.1.1, the MGID's bits 115..112).
pub mod scope {
    /// Link-local.
    pub const LINK_LOCAL: u8 = 0x2;
    /// Site-local.
    pub const SITE_LOCAL: u8 = 0x5;
    /// Organization-local.
    pub const ORG_LOCAL: u8 = 0x8;
    /// Global.
    pub const GLOBAL: u8 = 0xE;
}

/// An MCMemberRecord, validated (re-exported as `McMemberRepr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Repr {
    /// MGID.
    pub mgid: Gid,
    /// PortGID.
    pub port_gid: Gid,
    /// Q_Key.
    pub q_key: QKey,
    /// MLID.
    pub mlid: Lid,
    /// MTUSelector (2 bits).
    pub mtu_selector: u8,
    /// MTU code (6 bits; 1 = 256 … 5 = 4096).
    pub mtu: u8,
    /// TClass.
    pub t_class: u8,
    /// P_Key.
    pub p_key: PKey,
    /// RateSelector (2 bits).
    pub rate_selector: u8,
    /// Rate code (6 bits; 2 = 2.5 Gb/s, 3 = 10 Gb/s, …).
    pub rate: u8,
    /// PacketLifeTimeSelector (2 bits).
    pub packet_life_selector: u8,
    /// PacketLifeTime (6 bits).
    pub packet_life: u8,
    /// SL (4 bits).
    pub sl: u8,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// Scope (4 bits).
    pub scope: u8,
    /// JoinState (4 bits, [`join`]).
    pub join_state: u8,
    /// ProxyJoin.
    pub proxy_join: bool,
}

impl Repr {
    /// Reads a record from the first [`RECORD_LEN`] bytes of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Repr, ParseError> {
        check_len(bytes, RECORD_LEN, LAYER, 0).map_err(ParseError::Len)?;
        let (r, _) = McMemberRecord::ref_from_prefix(bytes).map_err(|_| {
            ParseError::Len(crate::error::LenError {
                required: RECORD_LEN,
                got: bytes.len(),
                layer: LAYER,
                offset: 0,
            })
        })?;
        Ok(Repr::from_raw(r))
    }

    /// The value of a view.
    #[must_use]
    pub fn from_raw(r: &McMemberRecord) -> Repr {
        let sfh = r.sl_flow_hop.get();
        Repr {
            mgid: Gid(r.mgid),
            port_gid: Gid(r.port_gid),
            q_key: QKey(r.q_key.get()),
            mlid: Lid(r.mlid.get()),
            mtu_selector: r.mtu_selector(),
            mtu: r.mtu(),
            t_class: r.t_class,
            p_key: PKey(r.p_key.get()),
            rate_selector: r.rate_selector(),
            rate: r.rate(),
            packet_life_selector: r.packet_life_selector(),
            packet_life: r.packet_life(),
            sl: (sfh >> 28) as u8,
            flow_label: (sfh >> 8) & 0xF_FFFF,
            hop_limit: (sfh & 0xFF) as u8,
            scope: r.scope(),
            join_state: r.join_state(),
            proxy_join: r.proxy_join() != 0,
        }
    }

    /// The wire struct (reserved bits zero; over-wide values truncated to their field).
    #[must_use]
    pub fn to_raw(&self) -> McMemberRecord {
        let mut r = McMemberRecord::new_zeroed();
        r.mgid = self.mgid.0;
        r.port_gid = self.port_gid.0;
        r.q_key.set(self.q_key.0);
        r.mlid.set(self.mlid.0);
        r.set_mtu_selector(self.mtu_selector);
        r.set_mtu(self.mtu);
        r.t_class = self.t_class;
        r.p_key.set(self.p_key.0);
        r.set_rate_selector(self.rate_selector);
        r.set_rate(self.rate);
        r.set_packet_life_selector(self.packet_life_selector);
        r.set_packet_life(self.packet_life);
        r.sl_flow_hop.set(
            (u32::from(self.sl & 0xF) << 28)
                | ((self.flow_label & 0xF_FFFF) << 8)
                | u32::from(self.hop_limit),
        );
        r.set_scope(self.scope);
        r.set_join_state(self.join_state);
        r.set_proxy_join(u8::from(self.proxy_join));
        r
    }

    /// Bytes [`Repr::emit`] writes.
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        RECORD_LEN
    }

    /// Writes the record into the first [`RECORD_LEN`] bytes of `out`; returns false (and
    /// writes nothing) if `out` is shorter.
    pub fn emit(&self, out: &mut [u8]) -> bool {
        match out.get_mut(..RECORD_LEN) {
            Some(dst) => {
                dst.copy_from_slice(self.to_raw().as_bytes());
                true
            }
            None => false,
        }
    }
}

/// Decodes an MTU code (1..=5) to bytes.
#[must_use]
pub fn mtu_bytes(code: u8) -> Option<u32> {
    (1..=5).contains(&code).then(|| 128u32 << code)
}

impl fmt::Display for Repr {
    /// `saquery -m`-like: the group's parameters, then the member.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MCMemberRecord MGID {} PortGid {} MLID {:#06x} Mtu {:#x} Rate {:#x} P_Key {:#06x} Q_Key {:#010x} SL {} JoinState {:#x}{}",
            self.mgid,
            self.port_gid,
            self.mlid.0,
            (self.mtu_selector << 6) | self.mtu,
            (self.rate_selector << 6) | self.rate,
            self.p_key.0,
            self.q_key.0,
            self.sl,
            self.join_state,
            if self.proxy_join { " proxy" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Guid;

    /// The IPoIB broadcast-group join of a Linux host (ipoib_multicast.c: MGID, PortGID,
    /// P_Key, JoinState Full, and the parameters OpenSM answers with): written out by hand
    /// from IBA vol1 §15.2.5.17 and OpenSM's `saquery -m` output of `ff12:401b:ffff::ffff:ffff`
    /// (Mtu 0x84, Rate 0x83, Q_Key 0x0b1b, MLID 0xc000).
    static BYTES: [u8; RECORD_LEN] = [
        0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, // MGID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0x12, 0x34, // PortGID
        0x00, 0x00, 0x0b, 0x1b, // Q_Key
        0xc0, 0x00, // MLID
        0x84, 0x00, // MTU exactly 2048, TClass 0
        0xff, 0xff, // P_Key
        0x83, 0x92, // rate exactly 10 Gb/s, packet lifetime exactly 18
        0x30, 0x12, 0x34, 0x40, // SL 3, FlowLabel 0x01234, HopLimit 0x40
        0x21, 0x80, 0, 0, // scope 2, JoinState full, ProxyJoin
    ];

    fn value() -> Repr {
        Repr {
            mgid: Gid([
                0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
            ]),
            port_gid: Gid::new(0xfe80_0000_0000_0000, Guid(0x0002_c903_0000_1234)),
            q_key: QKey(0x0b1b),
            mlid: Lid(0xc000),
            mtu_selector: selector::EXACT,
            mtu: 4,
            t_class: 0,
            p_key: PKey(0xffff),
            rate_selector: selector::EXACT,
            rate: 3,
            packet_life_selector: selector::EXACT,
            packet_life: 18,
            sl: 3,
            flow_label: 0x01234,
            hop_limit: 0x40,
            scope: scope::LINK_LOCAL,
            join_state: join::FULL,
            proxy_join: true,
        }
    }

    #[test]
    fn deconstruct() {
        let r = McMemberRecord::ref_from_bytes(&BYTES[..]).unwrap();
        assert_eq!(r.mtu_selector(), 2);
        assert_eq!(r.mtu(), 4);
        assert_eq!(r.rate(), 3);
        assert_eq!(r.packet_life(), 18);
        assert_eq!(r.scope(), 2);
        assert_eq!(r.join_state(), 1);
        assert_eq!(r.proxy_join(), 1);
        assert_eq!(Repr::parse(&BYTES).unwrap(), value());
    }

    #[test]
    fn construct_and_round_trip() {
        let mut out = [0xAAu8; RECORD_LEN];
        assert!(value().emit(&mut out));
        assert_eq!(out, BYTES);
        assert_eq!(Repr::parse(&out).unwrap(), value());
        assert!(!value().emit(&mut [0u8; 51]));
    }

    #[test]
    fn reserved_bits_are_not_kept() {
        let mut b = BYTES;
        b[49] |= 0x7F;
        b[50] = 0xFF;
        let r = Repr::parse(&b).unwrap();
        assert_eq!(r, value());
        let mut out = [0u8; RECORD_LEN];
        assert!(r.emit(&mut out));
        assert_eq!(out, BYTES);
    }

    #[test]
    fn impossible_len() {
        assert!(Repr::parse(&BYTES[..51]).is_err());
        // A padded table entry parses too.
        let mut padded = [0u8; 56];
        padded[..52].copy_from_slice(&BYTES);
        assert_eq!(Repr::parse(&padded).unwrap(), value());
    }

    #[test]
    fn component_bits_match_opensm_masks() {
        // OpenSM's "insufficient components for implicit create (comp_mask 0x13343)".
        let m = comp::MGID
            | comp::PORT_GID
            | comp::TCLASS
            | comp::RATE_SEL
            | comp::RATE
            | comp::SL
            | comp::FLOW
            | comp::JOIN_STATE;
        assert_eq!(m, 0x13343);
        assert_eq!(comp::PROXY, 0x20000);
        assert_eq!(mtu_bytes(4), Some(2048));
        assert_eq!(mtu_bytes(0), None);
        // The generic matcher agrees with the comp bits.
        let mut other = BYTES;
        other[39] = 7; // TClass
        assert!(super::super::record_matches::<McMemberRecord>(
            !comp::TCLASS,
            &BYTES,
            &other
        ));
        assert!(!super::super::record_matches::<McMemberRecord>(
            comp::TCLASS,
            &BYTES,
            &other
        ));
        other[48] = 0x22; // JoinState
        assert!(!super::super::record_matches::<McMemberRecord>(
            comp::JOIN_STATE,
            &BYTES,
            &other
        ));
        assert!(super::super::record_matches::<McMemberRecord>(
            comp::SCOPE,
            &BYTES,
            &other
        ));
    }
}

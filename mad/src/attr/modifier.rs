//! AttributeModifier layouts of the per-port table attributes: P_KeyTable (IBA vol1
//! §14.2.5.7), SLtoVLMappingTable (§14.2.5.8) and VLArbitrationTable (§14.2.5.9).
//!
//! One definition for the SM that builds these modifiers, the SMA that decodes them and the
//! diagnostics that query them: constructors ([`pkey`], [`sl2vl`], [`sl2vl_all_inputs`],
//! [`SL2VL_ALL_PORTS`], [`vlarb`]) return the 32-bit modifier, and the decoders
//! ([`PKeyMod`], [`Sl2VlMod`], [`VlArbMod`]) give its fields back. On a CA or router the port
//! fields are 0, "the port the SMP arrives on" (a CA SMA also accepts the port's own number).
//!
//! | attribute | bits 31..16 | bits 15..8 | bits 7..0 |
//! |---|---|---|---|
//! | P_KeyTable | port (switch) | block (15..0) | |
//! | SLtoVLMappingTable | 17 all inputs, 16 all outputs, 31..18 reserved | input port | output port |
//! | VLArbitrationTable | block 1..=4 | port (15..0) | |

use crate::types::PortNum;

/// SLtoVLMappingTable modifier bit 17: the Set writes the table of every input port
/// (optimized programming, where SwitchInfo.OptimizedSLtoVLMappingProgramming is set).
pub const SL2VL_ALL_INPUTS: u32 = 1 << 17;
/// SLtoVLMappingTable modifier bit 16: the Set writes the table of every output port
/// (optimized programming).
pub const SL2VL_ALL_OUTPUTS: u32 = 1 << 16;
/// SLtoVLMappingTable modifier of a Set that writes every (input, output) pair of a switch:
/// bits 17 and 16 (0x3_0000, as OpenSM's `osm_qos.c` sends it).
pub const SL2VL_ALL_PORTS: u32 = SL2VL_ALL_INPUTS | SL2VL_ALL_OUTPUTS;
/// SLtoVLMappingTable modifier bits 31..18, reserved.
const SL2VL_RESERVED: u32 = !(SL2VL_ALL_PORTS | 0xFFFF);

/// P_KeyTable modifier (§14.2.5.7): bits 31..16 = `port` (switches; 0 on a CA or router),
/// bits 15..0 = `block` (32 P_Keys a block).
#[must_use]
pub const fn pkey(port: PortNum, block: u16) -> u32 {
    PKeyMod {
        port: port.0 as u16,
        block,
    }
    .to_raw()
}

/// SLtoVLMappingTable modifier (§14.2.5.8) of one table: on a switch the table of input port
/// `in_port` (bits 15..8) to output port `out_port` (bits 7..0); on a CA or router
/// `sl2vl(PortNum(0), port)`, where port 0 is the receiving port.
#[must_use]
pub const fn sl2vl(in_port: PortNum, out_port: PortNum) -> u32 {
    Sl2VlMod::pair(in_port.0, out_port.0).to_raw()
}

/// SLtoVLMappingTable modifier (§14.2.5.8) of a Set that writes the table of every input port
/// to `out_port`: bit 17 | `out_port` (optimized programming, [`SL2VL_ALL_INPUTS`]).
#[must_use]
pub const fn sl2vl_all_inputs(out_port: PortNum) -> u32 {
    SL2VL_ALL_INPUTS | out_port.0 as u32
}

/// VLArbitrationTable modifier (§14.2.5.9): bits 31..16 = `block` (1, 2: low-priority entries
/// 0–31, 32–63; 3, 4: high-priority), bits 15..0 = `port` (0 on a CA or router).
#[must_use]
pub const fn vlarb(port: PortNum, block: u8) -> u32 {
    VlArbMod {
        block: block as u16,
        port: port.0 as u16,
    }
    .to_raw()
}

/// A modifier of two 16-bit fields: `hi` in bits 31..16, `lo` in bits 15..0.
const fn halves(hi: u16, lo: u16) -> u32 {
    (hi as u32) << 16 | lo as u32
}

/// The two 16-bit fields of modifier `m`: (bits 31..16, bits 15..0).
const fn split(m: u32) -> (u16, u16) {
    ((m >> 16) as u16, m as u16)
}

/// The fields of a P_KeyTable modifier (§14.2.5.7). Every bit is a field, so
/// `from_raw`/`to_raw` round-trip every value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PKeyMod {
    /// Bits 31..16: the port on a switch (ignored by a CA or router).
    pub port: u16,
    /// Bits 15..0: the block of 32 P_Keys.
    pub block: u16,
}

impl PKeyMod {
    /// The fields of modifier `m`.
    #[must_use]
    pub const fn from_raw(m: u32) -> PKeyMod {
        let (port, block) = split(m);
        PKeyMod { port, block }
    }
    /// The modifier.
    #[must_use]
    pub const fn to_raw(self) -> u32 {
        halves(self.port, self.block)
    }
}

/// The fields of a VLArbitrationTable modifier (§14.2.5.9). Every bit is a field, so
/// `from_raw`/`to_raw` round-trip every value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VlArbMod {
    /// Bits 31..16: the block, 1..=4 (1, 2 low priority; 3, 4 high priority).
    pub block: u16,
    /// Bits 15..0: the port (0 on a CA or router: the receiving port).
    pub port: u16,
}

impl VlArbMod {
    /// The fields of modifier `m`.
    #[must_use]
    pub const fn from_raw(m: u32) -> VlArbMod {
        let (block, port) = split(m);
        VlArbMod { block, port }
    }
    /// The modifier.
    #[must_use]
    pub const fn to_raw(self) -> u32 {
        halves(self.block, self.port)
    }
}

/// The fields of an SLtoVLMappingTable modifier (§14.2.5.8). Bits 31..18 are reserved:
/// [`Sl2VlMod::from_raw`] drops them, [`Sl2VlMod::parse`] refuses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sl2VlMod {
    /// Bits 15..8: the input port (switches; 0 on a CA or router).
    pub in_port: u8,
    /// Bits 7..0: the output port (on a CA or router the port, 0 = the receiving port).
    pub out_port: u8,
    /// Bit 17: every input port ([`SL2VL_ALL_INPUTS`]; Sets only).
    pub all_inputs: bool,
    /// Bit 16: every output port ([`SL2VL_ALL_OUTPUTS`]; Sets only).
    pub all_outputs: bool,
}

impl Sl2VlMod {
    /// The table of one (input, output) pair, neither "all" bit set.
    #[must_use]
    pub const fn pair(in_port: u8, out_port: u8) -> Sl2VlMod {
        Sl2VlMod {
            in_port,
            out_port,
            all_inputs: false,
            all_outputs: false,
        }
    }
    /// The fields of modifier `m`; its reserved bits 31..18 are ignored.
    #[must_use]
    pub const fn from_raw(m: u32) -> Sl2VlMod {
        Sl2VlMod {
            in_port: (m >> 8) as u8,
            out_port: m as u8,
            all_inputs: m & SL2VL_ALL_INPUTS != 0,
            all_outputs: m & SL2VL_ALL_OUTPUTS != 0,
        }
    }
    /// The fields of modifier `m`, or `None` if any reserved bit (31..18) is set.
    #[must_use]
    pub const fn parse(m: u32) -> Option<Sl2VlMod> {
        if m & SL2VL_RESERVED != 0 {
            None
        } else {
            Some(Sl2VlMod::from_raw(m))
        }
    }
    /// The modifier (reserved bits zero).
    #[must_use]
    pub const fn to_raw(self) -> u32 {
        let mut m = (self.in_port as u32) << 8 | self.out_port as u32;
        if self.all_inputs {
            m |= SL2VL_ALL_INPUTS;
        }
        if self.all_outputs {
            m |= SL2VL_ALL_OUTPUTS;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_encodings() {
        // P_KeyTable: port in the upper half, block in the lower.
        assert_eq!(pkey(PortNum(3), 0), 0x0003_0000);
        assert_eq!(pkey(PortNum(2), 1), 0x0002_0001);
        assert_eq!(pkey(PortNum(0), 7), 0x0000_0007);
        assert_eq!(pkey(PortNum(254), 0x0800), 0x00FE_0800);
        // SLtoVLMappingTable: input port in bits 15..8, output in 7..0, bits 17 / 16 "all".
        assert_eq!(sl2vl(PortNum(1), PortNum(3)), 0x0103);
        assert_eq!(sl2vl(PortNum(0), PortNum(2)), 0x0002);
        assert_eq!(sl2vl(PortNum(36), PortNum(0)), 0x2400);
        assert_eq!(sl2vl_all_inputs(PortNum(3)), 0x2_0003);
        assert_eq!(SL2VL_ALL_PORTS, 0x3_0000);
        assert_eq!(SL2VL_ALL_INPUTS, 0x2_0000);
        assert_eq!(SL2VL_ALL_OUTPUTS, 0x1_0000);
        // VLArbitrationTable: block in the upper half, port in the lower.
        assert_eq!(vlarb(PortNum(1), 1), 0x0001_0001);
        assert_eq!(vlarb(PortNum(9), 1), 0x0001_0009);
        assert_eq!(vlarb(PortNum(0), 3), 0x0003_0000);
        assert_eq!(vlarb(PortNum(4), 4), 0x0004_0004);
    }

    #[test]
    fn decoders_give_the_fields() {
        assert_eq!(
            PKeyMod::from_raw(0x0005_0001),
            PKeyMod { port: 5, block: 1 }
        );
        assert_eq!(
            VlArbMod::from_raw(0x0002_0109),
            VlArbMod {
                block: 2,
                port: 0x109
            }
        );
        assert_eq!(
            Sl2VlMod::from_raw(0x2_0304),
            Sl2VlMod {
                in_port: 3,
                out_port: 4,
                all_inputs: true,
                all_outputs: false
            }
        );
        assert_eq!(
            Sl2VlMod::from_raw(0x1_0000),
            Sl2VlMod {
                in_port: 0,
                out_port: 0,
                all_inputs: false,
                all_outputs: true
            }
        );
        // Reserved bits 31..18: dropped by from_raw, refused by parse.
        assert_eq!(Sl2VlMod::from_raw(0x8004_0102), Sl2VlMod::pair(1, 2));
        assert_eq!(Sl2VlMod::parse(0x4_0000), None);
        assert_eq!(Sl2VlMod::parse(0x8000_0000), None);
        assert_eq!(
            Sl2VlMod::parse(0x3_FFFF).map(Sl2VlMod::to_raw),
            Some(0x3_FFFF)
        );
    }

    #[test]
    fn round_trips() {
        for m in [
            0u32,
            1,
            0xFFFF,
            0x1_0000,
            0x0004_0001,
            0xFFFF_FFFF,
            0x1234_5678,
        ] {
            assert_eq!(PKeyMod::from_raw(m).to_raw(), m);
            assert_eq!(VlArbMod::from_raw(m).to_raw(), m);
            assert_eq!(Sl2VlMod::from_raw(m).to_raw(), m & 0x3_FFFF);
        }
        for p in [0u8, 1, 17, 254, 255] {
            for b in [0u16, 1, 2, 0x7FF, 0xFFFF] {
                let m = PKeyMod::from_raw(pkey(PortNum(p), b));
                assert_eq!((m.port, m.block), (u16::from(p), b));
            }
            for b in 1u8..=4 {
                let m = VlArbMod::from_raw(vlarb(PortNum(p), b));
                assert_eq!((m.block, m.port), (u16::from(b), u16::from(p)));
            }
            for q in [0u8, 3, 255] {
                assert_eq!(
                    Sl2VlMod::parse(sl2vl(PortNum(p), PortNum(q))),
                    Some(Sl2VlMod::pair(p, q))
                );
            }
            let all = Sl2VlMod::from_raw(sl2vl_all_inputs(PortNum(p)));
            assert!(all.all_inputs && !all.all_outputs && all.out_port == p && all.in_port == 0);
        }
        let all = Sl2VlMod::from_raw(SL2VL_ALL_PORTS);
        assert!(all.all_inputs && all.all_outputs);
    }
}

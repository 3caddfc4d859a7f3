//! RA-1 register map (docs/reference-asic.md §4–§8): offsets, bit fields and ring layouts,
//! shared by the driver and the device model so that both are written from one table.

/// `ID` magic: ASCII "ARA1".
pub const ID_MAGIC: u32 = 0x4152_4131;
/// Interface major version implemented here.
pub const VERSION_MAJOR: u32 = 1;
/// Interface minor version implemented here (1.1: GMPs on QP1, §7.7).
pub const VERSION_MINOR: u32 = 1;

/// PCI vendor id of the reference model (experimental, §2).
pub const PCI_VENDOR: u16 = 0x1DED;
/// PCI device id of the switch.
pub const PCI_DEVICE_SWITCH: u16 = 0xA501;

/// BAR0 size.
pub const BAR0_SIZE: u64 = 0x2_0000;
/// MSI-X vectors.
pub const MSIX_VECTORS: u32 = 4;

/// `ID` (RO).
pub const ID: u64 = 0x000;
/// `VERSION` (RO).
pub const VERSION: u64 = 0x004;
/// `CAPS` (RO).
pub const CAPS: u64 = 0x008;
/// `FDB_CAP` (RO).
pub const FDB_CAP: u64 = 0x00C;
/// `NODE_GUID_LO` (RO).
pub const NODE_GUID_LO: u64 = 0x010;
/// `NODE_GUID_HI` (RO).
pub const NODE_GUID_HI: u64 = 0x014;
/// `SCRATCH` (RW).
pub const SCRATCH: u64 = 0x018;
/// `TIMEOUTS` (RO).
pub const TIMEOUTS: u64 = 0x01C;
/// `CTRL` (RW).
pub const CTRL: u64 = 0x020;
/// `STATUS` (RO).
pub const STATUS: u64 = 0x024;
/// `ERR_CAUSE` (W1C).
pub const ERR_CAUSE: u64 = 0x028;
/// `ERR_ADDR_LO` (RO).
pub const ERR_ADDR_LO: u64 = 0x02C;
/// `ERR_ADDR_HI` (RO).
pub const ERR_ADDR_HI: u64 = 0x030;
/// `INT_CAUSE` (W1C).
pub const INT_CAUSE: u64 = 0x034;
/// `INT_MASK` (RW).
pub const INT_MASK: u64 = 0x038;
/// `SW_LID` (RW).
pub const SW_LID: u64 = 0x03C;
/// `LFT_TOP` (RW).
pub const LFT_TOP: u64 = 0x040;
/// `PORT_CHANGE[0]` (W1C); eight words.
pub const PORT_CHANGE: u64 = 0x100;

/// `CAPS.SWITCH`.
pub const CAPS_SWITCH: u32 = 1 << 0;
/// `CAPS.HCA`.
pub const CAPS_HCA: u32 = 1 << 1;
/// `CAPS.QP1` (v1.1): the device hands GMPs to the host's QP1 and sends them (§7.7).
pub const CAPS_QP1: u32 = 1 << 2;

/// `CTRL.RESET`.
pub const CTRL_RESET: u32 = 1 << 0;
/// `CTRL.INIT`.
pub const CTRL_INIT: u32 = 1 << 1;
/// `CTRL.QP0_EN`.
pub const CTRL_QP0_EN: u32 = 1 << 2;
/// `CTRL.INT_EN`.
pub const CTRL_INT_EN: u32 = 1 << 3;
/// `CTRL.QP1_EN` (v1.1): GMPs to the device's LIDs go to the host (§7.7).
pub const CTRL_QP1_EN: u32 = 1 << 4;

/// `STATUS.READY`.
pub const STATUS_READY: u32 = 1 << 0;
/// `STATUS.INIT_ERR`.
pub const STATUS_INIT_ERR: u32 = 1 << 1;
/// `STATUS.FATAL`.
pub const STATUS_FATAL: u32 = 1 << 2;
/// `STATUS.QP0_RUN`.
pub const STATUS_QP0_RUN: u32 = 1 << 3;

/// `ERR_CAUSE.RING_CFG`.
pub const ERR_RING_CFG: u32 = 1 << 0;
/// `ERR_CAUSE.DESC_FETCH`.
pub const ERR_DESC_FETCH: u32 = 1 << 1;
/// `ERR_CAUSE.BUF_DMA`.
pub const ERR_BUF_DMA: u32 = 1 << 2;
/// `ERR_CAUSE.CQE_WRITE`.
pub const ERR_CQE_WRITE: u32 = 1 << 3;
/// `ERR_CAUSE.BAD_DESC`.
pub const ERR_BAD_DESC: u32 = 1 << 4;
/// `ERR_CAUSE.REG_ACCESS`.
pub const ERR_REG_ACCESS: u32 = 1 << 5;
/// `ERR_CAUSE.DOORBELL`.
pub const ERR_DOORBELL: u32 = 1 << 6;
/// `ERR_CAUSE.INTERNAL`.
pub const ERR_INTERNAL: u32 = 1 << 7;
/// Causes that also set `STATUS.FATAL`.
pub const ERR_FATAL_MASK: u32 =
    ERR_DESC_FETCH | ERR_BUF_DMA | ERR_CQE_WRITE | ERR_BAD_DESC | ERR_INTERNAL;

/// `INT_CAUSE.RX` (MSI-X vector 0).
pub const INT_RX: u32 = 1 << 0;
/// `INT_CAUSE.TX` (vector 1).
pub const INT_TX: u32 = 1 << 1;
/// `INT_CAUSE.PORT` (vector 2).
pub const INT_PORT: u32 = 1 << 2;
/// `INT_CAUSE.ERR` (vector 3).
pub const INT_ERR: u32 = 1 << 3;
/// All interrupt causes.
pub const INT_ALL: u32 = 0xF;

/// MSI-X vector of a cause bit index (0 RX, 1 TX, 2 PORT, 3 ERR).
pub const VEC_RX: u32 = 0;
/// MSI-X vector for TX completions.
pub const VEC_TX: u32 = 1;
/// MSI-X vector for port changes.
pub const VEC_PORT: u32 = 2;
/// MSI-X vector for errors.
pub const VEC_ERR: u32 = 3;

/// `RXQ_BASE_LO`.
pub const RXQ_BASE_LO: u64 = 0x1000;
/// `RXQ_BASE_HI`.
pub const RXQ_BASE_HI: u64 = 0x1004;
/// `RXQ_SIZE` (log2 entries).
pub const RXQ_SIZE: u64 = 0x1008;
/// `RXQ_PROD` (doorbell).
pub const RXQ_PROD: u64 = 0x100C;
/// `RXQ_CONS` (RO).
pub const RXQ_CONS: u64 = 0x1010;
/// `TXQ_BASE_LO`.
pub const TXQ_BASE_LO: u64 = 0x1020;
/// `TXQ_BASE_HI`.
pub const TXQ_BASE_HI: u64 = 0x1024;
/// `TXQ_SIZE`.
pub const TXQ_SIZE: u64 = 0x1028;
/// `TXQ_PROD` (doorbell).
pub const TXQ_PROD: u64 = 0x102C;
/// `TXQ_CONS` (RO).
pub const TXQ_CONS: u64 = 0x1030;
/// `CQ_BASE_LO`.
pub const CQ_BASE_LO: u64 = 0x1040;
/// `CQ_BASE_HI`.
pub const CQ_BASE_HI: u64 = 0x1044;
/// `CQ_SIZE`.
pub const CQ_SIZE: u64 = 0x1048;
/// `CQ_PROD` (RO).
pub const CQ_PROD: u64 = 0x104C;
/// `CQ_CONS` (doorbell).
pub const CQ_CONS: u64 = 0x1050;

/// `RX_SMPS` counter.
pub const RX_SMPS: u64 = 0x1100;
/// `TX_SMPS` counter.
pub const TX_SMPS: u64 = 0x1104;
/// `RX_DROP_NO_DESC` counter.
pub const RX_DROP_NO_DESC: u64 = 0x1108;
/// `RX_DROP_NOT_READY` counter.
pub const RX_DROP_NOT_READY: u64 = 0x110C;
/// `RX_DROP_MALFORMED` counter.
pub const RX_DROP_MALFORMED: u64 = 0x1110;
/// `TX_ERRORS` counter.
pub const TX_ERRORS: u64 = 0x1114;
/// `RX_GMPS` counter (v1.1): GMPs delivered to the host's QP1.
pub const RX_GMPS: u64 = 0x1118;
/// `TX_GMPS` counter (v1.1): GMPs sent from the host's QP1.
pub const TX_GMPS: u64 = 0x111C;

/// `LFT_BLOCK`.
pub const LFT_BLOCK: u64 = 0x2000;
/// `LFT_WIN[0]`; sixteen words.
pub const LFT_WIN: u64 = 0x2040;
/// `MFT_SEL`.
pub const MFT_SEL: u64 = 0x2100;
/// `MFT_WIN[0]`; sixteen words.
pub const MFT_WIN: u64 = 0x2140;

/// Base of port `p`'s register block.
pub const fn port_base(p: u8) -> u64 {
    0x1_0000 + (p as u64) * 0x100
}
/// `PORT_STATE` (offset in a port block).
pub const P_STATE: u64 = 0x00;
/// `LINK_WIDTH`.
pub const P_LINK_WIDTH: u64 = 0x04;
/// `LINK_SPEED`.
pub const P_LINK_SPEED: u64 = 0x08;
/// `LINK_SPEED_EXT`.
pub const P_LINK_SPEED_EXT: u64 = 0x0C;
/// `MTU`.
pub const P_MTU: u64 = 0x10;
/// `VL`.
pub const P_VL: u64 = 0x14;
/// `LINK_DOWN`.
pub const P_LINK_DOWN: u64 = 0x18;
/// `PORT_CTRL`.
pub const P_CTRL: u64 = 0x1C;
/// `SYMBOL_ERR`.
pub const P_SYMBOL_ERR: u64 = 0x40;
/// `LINK_ERR_RECOVERY`.
pub const P_LINK_ERR_RECOVERY: u64 = 0x44;
/// `LINK_DOWNED`.
pub const P_LINK_DOWNED: u64 = 0x48;
/// `RCV_ERRORS`.
pub const P_RCV_ERRORS: u64 = 0x4C;
/// `RCV_SW_RELAY_ERR`.
pub const P_RCV_SW_RELAY_ERR: u64 = 0x50;
/// `XMIT_DISCARDS`.
pub const P_XMIT_DISCARDS: u64 = 0x54;
/// `XMIT_DATA` (4-byte words).
pub const P_XMIT_DATA: u64 = 0x58;
/// `RCV_DATA` (4-byte words).
pub const P_RCV_DATA: u64 = 0x5C;
/// `XMIT_PKTS`.
pub const P_XMIT_PKTS: u64 = 0x60;
/// `RCV_PKTS`.
pub const P_RCV_PKTS: u64 = 0x64;
/// `VL15_DROPPED`.
pub const P_VL15_DROPPED: u64 = 0x68;

/// Descriptor and CQE size.
pub const DESC_SIZE: u64 = 32;
/// Descriptor `FLAGS.OWN`.
pub const DESC_OWN: u8 = 0x80;
/// TX `PORT` value "route by LFT".
pub const PORT_BY_LFT: u8 = 0xFF;
/// MAD length carried by QP0.
pub const MAD_LEN: usize = 256;

/// Descriptor field offsets.
pub mod desc {
    /// `ADDR` (u64).
    pub const ADDR: u64 = 0;
    /// `LEN` (u16) | `PORT` (u8) << 16 | `FLAGS` (u8) << 24, as one 32-bit word at 8.
    pub const LEN_PORT_FLAGS: u64 = 8;
    /// `DLID` (u16) | `SLID` (u16) << 16.
    pub const LIDS: u64 = 12;
    /// `SL` (u8) | `QP` (u8, v1.1: 0 = QP0 SMP, 1 = QP1 GMP) << 8, rest reserved.
    pub const SL: u64 = 16;
    /// v1.1 TX: `DQP` (destination QP, bits 23..0) of a QP1 send; RX and QP0: 0.
    pub const DQP: u64 = 20;
    /// `COOKIE` (u64).
    pub const COOKIE: u64 = 24;
}

/// CQE field offsets.
pub mod cqe {
    /// `COOKIE` (u64).
    pub const COOKIE: u64 = 0;
    /// `BYTE_COUNT` (u16) | `PORT` << 16 | `STATUS` << 24.
    pub const COUNT_PORT_STATUS: u64 = 8;
    /// `SLID` | `DLID` << 16.
    pub const LIDS: u64 = 12;
    /// `SL` | `RING` << 8 | `INDEX` << 16.
    pub const SL_RING_INDEX: u64 = 16;
    /// v1.1: `QP` (u8: the QP the packet arrived at / was sent from, 0 or 1) | `SRC_QP`
    /// (RX of a GMP: the sender's QP, 24 bits) << 8. Bytes 24..28 reserved.
    pub const QP_SRC: u64 = 20;
    /// `FLAGS` (bit 0 PHASE), written last.
    pub const FLAGS: u64 = 28;
}

/// CQE status codes.
pub mod status {
    /// OK.
    pub const OK: u8 = 0;
    /// v1.1: TX descriptor `QP` other than 0 or 1, or 1 while `QP1_EN` is 0.
    pub const BAD_QP: u8 = 7;
    /// Invalid egress port.
    pub const BAD_PORT: u8 = 1;
    /// Egress not LinkUp.
    pub const PORT_DOWN: u8 = 2;
    /// Bad length.
    pub const LEN_ERR: u8 = 3;
    /// DMA error.
    pub const DMA_ERR: u8 = 4;
    /// LFT miss.
    pub const LFT_MISS: u8 = 5;
}

/// Ring sizes accepted by `RXQ_SIZE`/`TXQ_SIZE` (log2).
pub const RING_LOG2_MIN: u32 = 4;
/// Largest RX/TX ring (log2).
pub const RING_LOG2_MAX: u32 = 12;
/// Largest CQ (log2).
pub const CQ_LOG2_MAX: u32 = 13;

/// IBA PortState codes in `PORT_STATE.LOGICAL`.
pub mod logical {
    /// Down.
    pub const DOWN: u32 = 1;
    /// Init.
    pub const INIT: u32 = 2;
    /// Armed.
    pub const ARMED: u32 = 3;
    /// Active.
    pub const ACTIVE: u32 = 4;
}

/// IBA PortPhysicalState codes in `PORT_STATE.PHYS`.
pub mod phys {
    /// Sleep.
    pub const SLEEP: u32 = 1;
    /// Polling.
    pub const POLLING: u32 = 2;
    /// Disabled.
    pub const DISABLED: u32 = 3;
    /// LinkUp.
    pub const LINK_UP: u32 = 5;
}

/// Register name for error messages.
pub fn reg_name(off: u64) -> &'static str {
    match off {
        ID => "ID",
        VERSION => "VERSION",
        CTRL => "CTRL",
        STATUS => "STATUS",
        SCRATCH => "SCRATCH",
        _ => "register",
    }
}

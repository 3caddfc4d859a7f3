//! The Intel 82574 GbE controller (PCI 8086:10d3; QEMU's `e1000e` emulates it): the few BAR0
//! registers the MSI-X test uses, named as in the 82574 datasheet's register summary
//! ("Interrupt Cause Read/Set", "Interrupt Mask Set/Read", "Interrupt Mask Clear", "Extended
//! Interrupt Auto Clear", "Interrupt Vector Allocation").

/// PCI vendor ID.
pub const VENDOR: u16 = 0x8086;
/// PCI device ID of the 82574L.
pub const DEVICE: u16 = 0x10D3;

/// BAR0 register offsets and bits.
#[rustfmt::skip]
pub mod regs {
    /// Device Status.
    pub const STATUS: u64 = 0x0_0008;
    /// Interrupt Cause Read (write 1 to clear).
    pub const ICR: u64    = 0x0_00C0;
    /// Interrupt Cause Set: writing a bit raises that cause.
    pub const ICS: u64    = 0x0_00C8;
    /// Interrupt Mask Set/Read.
    pub const IMS: u64    = 0x0_00D0;
    /// Interrupt Mask Clear.
    pub const IMC: u64    = 0x0_00D8;
    /// Extended Interrupt Auto Clear.
    pub const EIAC: u64   = 0x0_00DC;
    /// Interrupt Vector Allocation: five 4-bit fields (RxQ0, RxQ1, TxQ0, TxQ1, Other), each
    /// `valid << 3 | vector`.
    pub const IVAR: u64   = 0x0_00E4;

    /// ICR/ICS/IMS bit 20: receive queue 0.
    pub const CAUSE_RXQ0: u32  = 1 << 20;
    /// Bit 21: receive queue 1.
    pub const CAUSE_RXQ1: u32  = 1 << 21;
    /// Bit 22: transmit queue 0.
    pub const CAUSE_TXQ0: u32  = 1 << 22;
    /// Bit 23: transmit queue 1.
    pub const CAUSE_TXQ1: u32  = 1 << 23;
    /// Bit 24: other causes (link status change, …).
    pub const CAUSE_OTHER: u32 = 1 << 24;
    /// IVAR field bit 3: the allocation is valid.
    pub const IVAR_VALID: u32  = 1 << 3;

    /// I/O BAR: IOADDR selects a register (offset 0) …
    pub const IOADDR: u64 = 0x0;
    /// … and IODATA reads or writes it (offset 4).
    pub const IODATA: u64 = 0x4;
}

/// The five MSI-X causes in IVAR field order, each with the vector the test gives it.
pub const CAUSES: [(&str, u32, u32); 5] = [
    ("RxQ0", regs::CAUSE_RXQ0, 0),
    ("RxQ1", regs::CAUSE_RXQ1, 1),
    ("TxQ0", regs::CAUSE_TXQ0, 2),
    ("TxQ1", regs::CAUSE_TXQ1, 3),
    ("Other", regs::CAUSE_OTHER, 4),
];

/// IVAR value mapping field `i` of [`CAUSES`] to its vector.
pub fn ivar() -> u32 {
    CAUSES
        .iter()
        .enumerate()
        .map(|(i, &(_, _, vec))| (regs::IVAR_VALID | vec) << (4 * i))
        .fold(0, |a, f| a | f)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ivar_is_valid_vector_per_nibble() {
        assert_eq!(super::ivar(), 0x000C_BA98);
    }
}

//! Sub-byte fields in the IBA's Byte[Bit] notation (STYLE P3).
//!
//! The IBA tables give a field as "byte N, bits hi..lo" with bit 7 the most significant bit.
//! [`bits`]/[`with_bits`] implement exactly that, and [`sub_byte_fields!`] declares typed
//! accessors from a table row, so no hand-written masks appear in attribute code.

/// Bits `hi..=lo` of `byte` (7 = MSB), shifted down.
#[must_use]
pub const fn bits(byte: u8, hi: u32, lo: u32) -> u8 {
    let width = hi - lo + 1;
    let mask = if width >= 8 { 0xFF } else { (1u8 << width) - 1 };
    (byte >> lo) & mask
}

/// `byte` with bits `hi..=lo` replaced by the low bits of `v` (excess bits of `v` are dropped).
#[must_use]
pub const fn with_bits(byte: u8, hi: u32, lo: u32, v: u8) -> u8 {
    let width = hi - lo + 1;
    let mask = if width >= 8 { 0xFF } else { (1u8 << width) - 1 };
    (byte & !(mask << lo)) | ((v & mask) << lo)
}

/// Declares getter/setter pairs for sub-byte fields of a zerocopy struct whose packed bytes
/// are `u8` members. Each row: `/// doc` `getter, setter: member[hi..lo];`
#[macro_export]
macro_rules! sub_byte_fields {
    ($ty:ty { $( $(#[$m:meta])* $get:ident, $set:ident : $field:ident [$hi:literal .. $lo:literal]; )* }) => {
        impl $ty {
            $(
                $(#[$m])*
                #[must_use]
                pub const fn $get(&self) -> u8 {
                    $crate::field::bits(self.$field, $hi, $lo)
                }
                $(#[$m])*
                pub fn $set(&mut self, v: u8) {
                    self.$field = $crate::field::with_bits(self.$field, $hi, $lo, v);
                }
            )*
        }
    };
}

/// A 24-bit big-endian field (ProducerType, VendorID) as a number.
#[must_use]
pub fn be24(b: &[u8; 3]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

/// Writes the low 24 bits of `v` into a 24-bit big-endian field.
pub fn set_be24(b: &mut [u8; 3], v: u32) {
    let x = v.to_be_bytes();
    *b = [x[1], x[2], x[3]];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_bit_notation() {
        assert_eq!(bits(0xA5, 7, 4), 0xA);
        assert_eq!(bits(0xA5, 3, 0), 0x5);
        assert_eq!(bits(0x90, 7, 3), 18);
        assert_eq!(bits(0x04, 2, 2), 1);
        assert_eq!(with_bits(0xA5, 3, 0, 0x3), 0xA3);
        assert_eq!(with_bits(0xA5, 7, 4, 0x1F), 0xF5);
        assert_eq!(with_bits(0x00, 7, 0, 0xFF), 0xFF);
    }
}

//! PCI config-space facts the tests check the kernel's answers against, read through
//! [`vfio::VfioDevice::read_config`] (PCI Local Bus Specification 3.0 §6.7 capability list;
//! PCI Express Base Specification, MSI-X capability).

use vfio::VfioDevice;

/// Capabilities Pointer (offset 0x34; valid when Status bit 4 is set).
const CAP_PTR: u64 = 0x34;
/// Status register.
const STATUS: u64 = 0x06;
/// Status: Capabilities List.
const STATUS_CAP_LIST: u16 = 1 << 4;
/// Capability ID of MSI.
pub const CAP_ID_MSI: u8 = 0x05;
/// Capability ID of MSI-X.
pub const CAP_ID_MSIX: u8 = 0x11;

/// Where the MSI-X table and PBA live (from the MSI-X capability).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsixLayout {
    /// Number of table entries (Message Control bits 10:0, plus one).
    pub entries: u32,
    /// BAR holding the table (Table BIR).
    pub table_bar: u32,
    /// Offset of the table in that BAR.
    pub table_offset: u64,
    /// BAR holding the Pending Bit Array.
    pub pba_bar: u32,
    /// Offset of the PBA in that BAR.
    pub pba_offset: u64,
}

fn read8(dev: &dyn VfioDevice, off: u64) -> vfio::Result<u8> {
    let mut b = [0u8; 1];
    dev.read_config(off, &mut b)?;
    Ok(b[0])
}

fn read32(dev: &dyn VfioDevice, off: u64) -> vfio::Result<u32> {
    let mut b = [0u8; 4];
    dev.read_config(off, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// Offset of capability `id` in config space, walking the list (at most 48 entries: the
/// 192 bytes after the header hold no more, so a longer walk is a loop).
pub fn find_cap(dev: &dyn VfioDevice, id: u8) -> vfio::Result<Option<u64>> {
    if dev.config_read16(STATUS)? & STATUS_CAP_LIST == 0 {
        return Ok(None);
    }
    let mut ptr = read8(dev, CAP_PTR)? & 0xFC;
    for _ in 0..48 {
        if ptr < 0x40 {
            return Ok(None);
        }
        let off = u64::from(ptr);
        if read8(dev, off)? == id {
            return Ok(Some(off));
        }
        ptr = read8(dev, off + 1)? & 0xFC;
    }
    Ok(None)
}

/// The MSI-X table/PBA layout, if the device has an MSI-X capability.
pub fn msix_layout(dev: &dyn VfioDevice) -> vfio::Result<Option<MsixLayout>> {
    let Some(cap) = find_cap(dev, CAP_ID_MSIX)? else {
        return Ok(None);
    };
    let ctrl = dev.config_read16(cap + 2)?;
    let table = read32(dev, cap + 4)?;
    let pba = read32(dev, cap + 8)?;
    Ok(Some(MsixLayout {
        entries: u32::from(ctrl & 0x7FF) + 1,
        table_bar: table & 7,
        table_offset: u64::from(table & !7),
        pba_bar: pba & 7,
        pba_offset: u64::from(pba & !7),
    }))
}

//! The crate's error type: every failure names the operation that failed.

use nix::errno::Errno;

/// Everything that can go wrong in this crate.
///
/// OS failures ([`VfioError::Sys`]) keep the errno as their `#[source]`; the other variants are
/// checks this crate makes itself and carry the values that failed them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VfioError {
    /// A system call failed.
    #[error("{op} on {target} failed")]
    Sys {
        /// The operation (`"VFIO_GROUP_GET_STATUS"`, `"mmap"`, …).
        op: &'static str,
        /// What it was applied to (a path, fd, region, IOVA range).
        target: String,
        /// The errno the kernel returned.
        #[source]
        source: Errno,
    },
    /// `VFIO_GET_API_VERSION` returned something other than `VFIO_API_VERSION`.
    #[error("VFIO API version {got}, this crate speaks {expected}")]
    ApiVersion {
        /// What the kernel reported.
        got: i32,
        /// What we speak.
        expected: i32,
    },
    /// The container does not support the IOMMU model we need.
    #[error("VFIO container does not support IOMMU type {iommu_type} ({name})")]
    IommuUnsupported {
        /// `VFIO_TYPE1v2_IOMMU` or `VFIO_NOIOMMU_IOMMU`.
        iommu_type: u32,
        /// Its name.
        name: &'static str,
    },
    /// The IOMMU group is not viable: some device in it is not bound to a VFIO driver.
    #[error("IOMMU group {group} is not viable: bind every device in it to vfio-pci")]
    GroupNotViable {
        /// The group's device node.
        group: String,
    },
    /// A device address could not be resolved (not a PCI address, no IOMMU group, no cdev).
    #[error("cannot find device {device}: {reason}")]
    DeviceNotFound {
        /// The address as given.
        device: String,
        /// What was missing.
        reason: String,
    },
    /// A region index beyond what the device reported.
    #[error("region {index} does not exist (device has {count} regions)")]
    NoSuchRegion {
        /// The index asked for.
        index: u32,
        /// `num_regions` of the device.
        count: u32,
    },
    /// The capability chain of a region-info reply is malformed.
    #[error("region {index}: bad capability chain at offset {offset}: {reason}")]
    BadCapChain {
        /// The region.
        index: u32,
        /// Byte offset in the reply where parsing stopped.
        offset: u32,
        /// What was wrong.
        reason: &'static str,
    },
    /// A register/memory access outside its region or misaligned.
    #[error("{width}-byte access at offset {offset:#x} is outside or misaligned in a region of {len:#x} bytes")]
    OutOfBounds {
        /// Byte offset of the access.
        offset: u64,
        /// Access width in bytes.
        width: usize,
        /// Region length in bytes.
        len: u64,
    },
    /// The IOVA allocator has no free range large enough.
    #[error("IOVA space exhausted: need {len:#x} bytes aligned to {align:#x}, largest free range is {largest_free:#x}")]
    IovaExhausted {
        /// Requested length.
        len: u64,
        /// Requested alignment.
        align: u64,
        /// The largest free range left.
        largest_free: u64,
    },
    /// A free/unmap of a range that was not allocated/mapped exactly like that.
    #[error("IOVA range {iova:#x}+{len:#x} is not an allocated/mapped range")]
    NotAllocated {
        /// Start of the range.
        iova: u64,
        /// Length of the range.
        len: u64,
    },
    /// A request this crate refuses (zero length, non-power-of-two alignment, too many vectors…).
    #[error("invalid argument to {op}: {reason}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// Why.
        reason: String,
    },
    /// No-IOMMU mode needs each DMA buffer to be physically contiguous; this one is not.
    #[error(
        "no-IOMMU DMA buffer at {vaddr:#x} is not physically contiguous (page {page} breaks it)"
    )]
    NotContiguous {
        /// Virtual address of the buffer.
        vaddr: u64,
        /// Index of the first page that does not follow its predecessor.
        page: usize,
    },
    /// A vfio-user peer sent something that does not follow the protocol.
    #[error("vfio-user {op}: protocol error: {reason}")]
    Protocol {
        /// The command being processed.
        op: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// A vfio-user server answered a command with an error.
    #[error("vfio-user {op}: server returned an error")]
    Remote {
        /// The command.
        op: &'static str,
        /// The errno from the reply header.
        #[source]
        source: Errno,
    },
}

impl VfioError {
    /// The errno inside, when this is an OS or remote failure.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            VfioError::Sys { source, .. } | VfioError::Remote { source, .. } => Some(*source),
            _ => None,
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = VfioError> = std::result::Result<T, E>;

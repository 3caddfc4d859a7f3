//! # hwtest — the kernel VFIO path on real devices
//!
//! Two kinds of tests live in this crate (docs/hwtest.md):
//! * `tests/ra1_device.rs` — the RA-1 driver against a real RA-1 device (`IBSM_HWTEST_BDF`);
//! * the **VFIO kernel tests** ([`cases`], run by the `vfio-kernel-tests` binary): the unchanged
//!   `vfio` crate (and `hca-driver`'s device-independent parts: [`hca_driver::KernelBackend`],
//!   [`hca_driver::Regs`], [`hca_driver::MadPool`]) driving devices through a real `/dev/vfio`:
//!   QEMU's `edu` device (BAR access, bus mastering, DMA through the IOMMU, MSI), an Intel
//!   82574 (`e1000e`: regions, MSI-X), and the kernel's errors (group not viable, group busy,
//!   overlapping DMA map).
//!
//! CI runs the VFIO kernel tests inside a QEMU TCG guest with an emulated Intel IOMMU
//! (`hwtest/guest/run.sh`, started by `tests/qemu_guest.rs`): Debian's kernel, its vfio
//! modules, a busybox initramfs with the test binary, and the devices `edu`, `e1000e` and a
//! non-viable group. On a machine with real devices the same binary runs directly.
//!
//! The binary reports one line per case on stdout — `PASS name (ms): detail`,
//! `FAIL name (ms): error`, `SKIP name: reason` — after a `IBSM-GUEST-PLAN` line naming every
//! case, so that a runner can tell a missing line from a skipped case.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cases;
pub mod e1000e;
pub mod edu;
pub mod harness;
pub mod pci;

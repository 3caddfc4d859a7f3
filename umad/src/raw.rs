//! [`RawUmad`]: one open `umadN` file with the user_mad calls exactly as the kernel ABI has
//! them — any class and QP (SA on QP1 with `rmpp_version` 1, say), messages of any length,
//! the errno of every failure. [`crate::UmadPort`] is the SM's 256-byte QP0 transport built on
//! the same calls; this is for GMP clients and agents that frame their own headers, and for
//! tests of what sits behind the device (the kernel, or an LD_PRELOAD shim).
//!
//! All calls go through the libc symbols ([`crate::sys`]), so an LD_PRELOAD library sees them.

use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::time::Duration;

use crate::abi::{RegReq, RegReq2};
use crate::error::SysError;
use crate::sys::{self, Fd};

/// An open user_mad device file, closed on drop.
#[derive(Debug)]
pub struct RawUmad {
    fd: Fd,
}

impl RawUmad {
    /// `open(path, O_RDWR [| O_NONBLOCK])`.
    ///
    /// # Errors
    /// The failed `open`, with its errno.
    pub fn open(path: &str, nonblocking: bool) -> Result<RawUmad, SysError> {
        let flags = libc::O_RDWR | if nonblocking { libc::O_NONBLOCK } else { 0 };
        Ok(RawUmad {
            fd: sys::open(path, flags)?,
        })
    }

    /// The descriptor (for `poll`/`select`/`epoll` by the caller).
    #[must_use]
    pub fn raw_fd(&self) -> RawFd {
        self.fd.raw()
    }

    /// `IB_USER_MAD_ENABLE_PKEY`: 64-byte headers from now on (before the first registration).
    ///
    /// # Errors
    /// The failed ioctl (`EINVAL` once an agent is registered).
    pub fn enable_pkey(&self) -> Result<(), SysError> {
        sys::enable_pkey(self.fd.raw())
    }

    /// `IB_USER_MAD_REGISTER_AGENT`: returns the agent id (also written into `req.id`).
    ///
    /// # Errors
    /// The failed ioctl.
    pub fn register(&self, req: &mut RegReq) -> Result<u32, SysError> {
        sys::register_agent(self.fd.raw(), req)?;
        Ok(req.id)
    }

    /// `IB_USER_MAD_REGISTER_AGENT2`: returns the agent id; on `EINVAL` for unknown flags the
    /// kernel has written the supported ones into `req.flags`.
    ///
    /// # Errors
    /// The failed ioctl.
    pub fn register2(&self, req: &mut RegReq2) -> Result<u32, SysError> {
        sys::register_agent2(self.fd.raw(), req)?;
        Ok(req.id)
    }

    /// `IB_USER_MAD_UNREGISTER_AGENT`.
    ///
    /// # Errors
    /// The failed ioctl.
    pub fn unregister(&self, id: u32) -> Result<(), SysError> {
        sys::unregister_agent(self.fd.raw(), id)
    }

    /// One `write(2)` of header + MAD; `Ok(None)` on `EAGAIN`/`EINTR`.
    ///
    /// # Errors
    /// Any other errno.
    pub fn write(&self, buf: &[u8]) -> Result<Option<usize>, SysError> {
        sys::write(self.fd.raw(), buf)
    }

    /// One `read(2)`; `Ok(None)` on `EAGAIN`/`EINTR`.
    ///
    /// # Errors
    /// Any other errno (`ENOSPC`: the buffer holds only the header and first segment).
    pub fn read(&self, buf: &mut [u8]) -> Result<Option<usize>, SysError> {
        sys::read(self.fd.raw(), buf)
    }

    /// `poll(2)` for `POLLIN` up to `timeout` (`None` = forever): true if readable.
    ///
    /// # Errors
    /// The failed poll.
    pub fn poll_readable(&self, timeout: Option<Duration>) -> Result<bool, SysError> {
        let ms = timeout.map_or(-1, |d| i32::try_from(d.as_millis()).unwrap_or(i32::MAX));
        sys::poll_in(self.fd.raw(), ms)
    }
}

impl AsFd for RawUmad {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

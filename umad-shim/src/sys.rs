//! The only module with `unsafe`: the libc entry points this library interposes, the real
//! functions behind them (`dlsym(RTLD_NEXT, …)`), and the few raw syscalls the runtime needs
//! (eventfd, memfd, poll, errno, atexit). Everything here is a thin translation between C
//! pointers and the safe [`crate::runtime`] API; no decision is taken here.
//!
//! # Which entry points, and why
//! libibumad (rdma-core 44) calls `open`, `close`, `read`, `write`, `ioctl`, `poll`, `opendir`,
//! `readdir`, `closedir` and `scandir` (checked with `nm -D` on Debian's libibumad.so.3);
//! OpenSM's vendor layer `open`/`close`; infiniband-diags and OpenSM also `stat`, `lstat` and
//! `fopen`. Rust programs open with `open64`, and glibc's fortified builds call `__open_2` and
//! `__read_chk`. All of those that take a path are interposed so that
//! `/sys/class/infiniband*` and `/dev/infiniband` resolve to the emulated tree, plus
//! `openat`, `fstatat`, `statx`, `access`, `faccessat` and `realpath`. The umad descriptors are
//! real eventfds, so `poll`, `select`, `epoll`, `fcntl(O_NONBLOCK)` and `dup`-free descriptor
//! passing work natively and are **not** interposed; `readdir`/`closedir` act on real
//! directory streams of the emulated tree. Not covered: `readv`/`writev`/io_uring on umad
//! descriptors, `dup`ed umad descriptors, and processes that fork after first use.
//!
//! # ABI assumptions
//! `open`, `openat` and `ioctl` are variadic in C. They are defined here with their optional
//! argument as a fixed parameter, which the x86-64 System V and AArch64 Linux procedure-call
//! standards pass in the same register either way (a missing argument is an unread
//! register); the real functions are called through variadic pointer types. Other targets
//! do not build.

#![allow(unsafe_code)]

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
compile_error!("libibsm_umad interposes glibc on x86-64 and AArch64 Linux only");

use std::ffi::{c_int, c_void, CStr};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Looks up (once) the next definition of `name` after this library.
fn lookup(cache: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let p = cache.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    // SAFETY: `name` is a NUL-terminated C string (a `&CStr`); RTLD_NEXT is a pseudo-handle
    // dlsym(3) documents for "the next object after the current one in the search order".
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    cache.store(p, Ordering::Release);
    p
}

/// `real!(name, type)`: the real libc function `name` as a function pointer of `type`, or
/// `None` if the C library has no such symbol.
macro_rules! real {
    ($name:literal, $ty:ty) => {{
        static CACHE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
        let p = lookup(&CACHE, $name);
        if p.is_null() {
            None
        } else {
            // SAFETY: `p` is the address dlsym returned for the glibc function named by the
            // literal, whose C prototype `$ty` transcribes (glibc's <fcntl.h>, <unistd.h>,
            // <sys/stat.h>, <dirent.h>, <stdio.h>, <stdlib.h>); a function address converts to
            // a function pointer of its own type.
            Some(unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
        }
    }};
}

type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, usize) -> isize;

/// Sets `errno`.
pub fn set_errno(e: i32) {
    // SAFETY: __errno_location(3) returns a valid pointer to the calling thread's errno.
    let p = unsafe { libc::__errno_location() };
    // SAFETY: `p` is that thread-local, aligned, writable int.
    unsafe { p.write(e) };
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn fail<T>(e: i32, v: T) -> T {
    set_errno(e);
    v
}

#[cfg(not(test))]
mod interpose;

// ---- raw helpers for the runtime (real calls, never through the interposers) ----

/// The real `close`.
pub fn close_fd(fd: RawFd) -> c_int {
    let Some(f) = real!(c"close", CloseFn) else {
        return fail(libc::ENOSYS, -1);
    };
    // SAFETY: close(2) takes only a number; the callers own `fd`.
    unsafe { f(fd) }
}

fn write_fd(fd: RawFd, buf: *const c_void, count: usize) -> isize {
    let Some(f) = real!(c"write", WriteFn) else {
        return fail(libc::ENOSYS, -1);
    };
    // SAFETY: `buf` is readable for `count` bytes (the callers pass a live buffer).
    unsafe { f(fd, buf, count) }
}

/// The real `write` of a whole buffer (one call).
///
/// # Errors
/// errno.
pub fn write_all(fd: RawFd, data: &[u8]) -> Result<usize, i32> {
    let n = write_fd(fd, data.as_ptr().cast(), data.len());
    if n < 0 {
        Err(errno())
    } else {
        Ok(n as usize)
    }
}

/// The real `read` into `buf`.
///
/// # Errors
/// errno.
pub fn read_into(fd: RawFd, buf: &mut [u8]) -> Result<usize, i32> {
    let Some(f) = real!(c"read", ReadFn) else {
        return Err(libc::ENOSYS);
    };
    // SAFETY: `buf` is an exclusively borrowed slice of exactly `buf.len()` writable bytes.
    let n = unsafe { f(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n as usize)
    }
}

/// A new eventfd (`EFD_*` flags).
///
/// # Errors
/// errno.
pub fn eventfd(flags: c_int) -> Result<RawFd, i32> {
    // SAFETY: eventfd(2) takes two integers.
    let fd = unsafe { libc::eventfd(0, flags) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

/// A memfd holding `content`, positioned at its start.
///
/// # Errors
/// errno.
pub fn memfd_with(content: &[u8], cloexec: bool) -> Result<RawFd, i32> {
    let flags = if cloexec { libc::MFD_CLOEXEC } else { 0 };
    // SAFETY: the name is a NUL-terminated literal; flags are integers.
    let fd = unsafe { libc::memfd_create(c"ibsm-umad-sysfs".as_ptr(), flags) };
    if fd < 0 {
        return Err(errno());
    }
    let mut off = 0;
    while off < content.len() {
        match write_all(fd, &content[off..]) {
            Ok(0) | Err(_) => {
                let e = errno();
                close_fd(fd);
                return Err(e);
            }
            Ok(n) => off += n,
        }
    }
    // SAFETY: lseek(2) on the descriptor we just created.
    if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } < 0 {
        let e = errno();
        close_fd(fd);
        return Err(e);
    }
    Ok(fd)
}

/// A non-blocking CLOCK_MONOTONIC timerfd.
///
/// # Errors
/// errno.
pub fn timerfd() -> Result<RawFd, i32> {
    // SAFETY: timerfd_create(2) takes two integers.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

/// Arms timerfd `fd` to expire once after `after` (at least 1 ns), or disarms it (`None`).
///
/// # Errors
/// errno.
pub fn timerfd_arm(fd: RawFd, after: Option<std::time::Duration>) -> Result<(), i32> {
    let value = match after {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        Some(d) => libc::timespec {
            tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: libc::c_long::from(d.subsec_nanos().max(u32::from(d.as_secs() == 0))),
        },
    };
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: value,
    };
    // SAFETY: `spec` is a live, readable itimerspec; the old-value pointer is null, which
    // timerfd_settime(2) allows.
    let r = unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// poll(2) on `fds`: returns how many have events (see their `revents`).
///
/// # Errors
/// errno (EINTR included).
pub fn poll_all(fds: &mut [libc::pollfd], timeout_ms: i32) -> Result<usize, i32> {
    // SAFETY: `fds` is an exclusively borrowed, writable slice of `fds.len()` pollfd.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r as usize)
    }
}

/// Registers `f` to run at `exit(3)`.
pub fn at_exit(f: extern "C" fn()) {
    // SAFETY: atexit(3) stores a plain function pointer with no captured state.
    let _ = unsafe { libc::atexit(f) };
}

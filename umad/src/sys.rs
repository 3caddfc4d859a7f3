//! The OS boundary: every system call of this crate, one wrapper per call.
//!
//! This is the only module of the crate allowed to contain `unsafe` (the workspace denies
//! `unsafe_code`). Each wrapper calls exactly one libc function, checks its return value and
//! turns a failure into a [`SysError`] that names the operation and its target and keeps errno.
//!
//! **Why libc and never `std::fs`:** ibsim's `libumad2sim.so` LD_PRELOAD shim interposes the libc
//! symbols `open`, `close`, `read`, `write`, `ioctl`, `poll`, `opendir` and `scandir` only. Rust's
//! `std::fs::File::open` calls `open64`, which bypasses the shim, so under ibsim the fake device
//! nodes and the fake sysfs tree would not be found. Every path here therefore goes through
//! `libc::open`/`libc::opendir` explicitly.
//!
//! The shim's fake descriptors are numbers in 1024..2047 (umad) and 2048.. (issm) that the kernel
//! does not know; [`kernel_fd_kind`] tells them apart from real ones, and the io_uring
//! engine in [`uring`] is only ever used on real ones.
#![allow(unsafe_code)]

pub(crate) mod uring;

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::RawFd;

use crate::abi::{
    RegReq, RegReq2, IB_USER_MAD_ENABLE_PKEY, IB_USER_MAD_REGISTER_AGENT,
    IB_USER_MAD_REGISTER_AGENT2, IB_USER_MAD_UNREGISTER_AGENT,
};
use crate::error::SysError;

fn err(op: &'static str, target: impl Into<String>, source: io::Error) -> SysError {
    SysError {
        op,
        target: target.into(),
        source,
    }
}

fn last(op: &'static str, target: impl Into<String>) -> SysError {
    err(op, target, io::Error::last_os_error())
}

fn fd_name(fd: RawFd) -> String {
    format!("fd {fd}")
}

fn cpath(op: &'static str, path: &str) -> Result<CString, SysError> {
    CString::new(path).map_err(|_| {
        err(
            op,
            path,
            io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"),
        )
    })
}

/// An owned descriptor returned by [`open`] (a kernel fd or one of umad2sim's fake ones);
/// closed with `libc::close` on drop so that the shim sees the close too.
#[derive(Debug)]
pub(crate) struct Fd {
    raw: RawFd,
    what: String,
}

impl Fd {
    /// The raw descriptor number.
    pub(crate) fn raw(&self) -> RawFd {
        self.raw
    }
    /// What was opened (for error messages).
    pub(crate) fn what(&self) -> &str {
        &self.what
    }
}

impl std::os::fd::AsFd for Fd {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        // SAFETY: `BorrowedFd::borrow_raw` requires the descriptor to stay open for the borrow's
        // lifetime; `self` owns `raw` and closes it only in `Drop`, which cannot run while
        // `self` is borrowed.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(self.raw) }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // Errors from close cannot be acted upon here (the fd is gone either way).
        let _ = close(self.raw);
    }
}

/// `open(2)` through the libc symbol (interposed by umad2sim).
pub(crate) fn open(path: &str, flags: libc::c_int) -> Result<Fd, SysError> {
    let c = cpath("open", path)?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call; open(2) reads it
    // only during the call and takes no other pointers.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last("open", path));
    }
    Ok(Fd {
        raw: fd,
        what: path.to_owned(),
    })
}

/// `close(2)`. Private: only [`Fd::drop`] closes descriptors, so no fd is closed twice.
fn close(fd: RawFd) -> Result<(), SysError> {
    // SAFETY: close(2) takes no pointers; callers pass an fd they own and never use it again
    // (only `Fd::drop` calls this).
    let r = unsafe { libc::close(fd) };
    if r < 0 {
        return Err(last("close", fd_name(fd)));
    }
    Ok(())
}

/// `read(2)`: `Ok(None)` when nothing is waiting (EAGAIN/EWOULDBLOCK/EINTR).
///
/// umad2sim's `read` *returns* `-EWOULDBLOCK` (-11) on an empty queue instead of returning -1 and
/// setting errno; any return below -1 is therefore taken as a negated errno.
pub(crate) fn read(fd: RawFd, buf: &mut [u8]) -> Result<Option<usize>, SysError> {
    // SAFETY: `buf` is a live, exclusively borrowed slice of `buf.len()` writable bytes for the
    // whole call; read(2) writes at most that many bytes into it.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    let e = match n {
        n if n >= 0 => return Ok(Some(n as usize)),
        -1 => io::Error::last_os_error(),
        n => io::Error::from_raw_os_error((-n) as i32),
    };
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EINTR) => Ok(None),
        _ => Err(err("read", fd_name(fd), e)),
    }
}

/// `write(2)`: `Ok(None)` when the queue is full (EAGAIN) or the call was interrupted.
pub(crate) fn write(fd: RawFd, buf: &[u8]) -> Result<Option<usize>, SysError> {
    // SAFETY: `buf` is a live slice of `buf.len()` readable bytes for the whole call; write(2)
    // only reads from it.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    let e = match n {
        n if n >= 0 => return Ok(Some(n as usize)),
        -1 => io::Error::last_os_error(),
        n => io::Error::from_raw_os_error((-n) as i32),
    };
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EINTR) => Ok(None),
        _ => Err(err("write", fd_name(fd), e)),
    }
}

/// `poll(2)` on one fd for `POLLIN`: true if readable within `timeout_ms` (negative = forever).
///
/// Only one fd is ever polled: umad2sim's `poll` waits on the first umad fd of the set and ignores
/// every other one.
pub(crate) fn poll_in(fd: RawFd, timeout_ms: i32) -> Result<bool, SysError> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one valid, exclusively borrowed `pollfd` on the stack and nfds is 1, so
    // poll(2) reads and writes exactly that struct during the call.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(false);
        }
        return Err(err("poll", fd_name(fd), e));
    }
    Ok(r > 0 && p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0)
}

/// `poll(2)` for `POLLIN` on `fd` and on `wake` (the read end of a [`pipe`]) up to
/// `timeout_ms`: returns whether `fd` is readable (error/hang-up count as readable so the
/// caller's read reports them); a readable `wake` just ends the wait early. For the receive
/// thread, whose descriptors are the kernel's (or an LD_PRELOAD shim's real eventfds), never
/// umad2sim's fake ones (see [`poll_in`]).
pub(crate) fn poll_in_or_wake(fd: RawFd, wake: RawFd, timeout_ms: i32) -> Result<bool, SysError> {
    let mut p = [
        libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: `p` is a valid, exclusively borrowed array of two `pollfd`s on the stack and nfds
    // is 2, so poll(2) reads and writes exactly those two structs during the call.
    let r = unsafe { libc::poll(p.as_mut_ptr(), 2, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(false);
        }
        return Err(err("poll", fd_name(fd), e));
    }
    Ok(r > 0 && p[0].revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0)
}

/// `pipe2(O_CLOEXEC | O_NONBLOCK)`: (read end, write end), e.g. to wake a thread blocked in
/// [`poll_in_or_wake`].
pub(crate) fn pipe() -> Result<(Fd, Fd), SysError> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a writable array of two c_ints, exactly what pipe2(2) fills in.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if r < 0 {
        return Err(last("pipe2", "wake pipe"));
    }
    Ok((
        Fd {
            raw: fds[0],
            what: "wake pipe (read end)".into(),
        },
        Fd {
            raw: fds[1],
            what: "wake pipe (write end)".into(),
        },
    ))
}

/// `ioctl(fd, IB_USER_MAD_REGISTER_AGENT, req)`; the kernel writes the agent id into `req.id`.
pub(crate) fn register_agent(fd: RawFd, req: &mut RegReq) -> Result<(), SysError> {
    let p: *mut RegReq = req;
    // SAFETY: the request number encodes size_of::<RegReq>() = 28 bytes, the exact size of the
    // `#[repr(C)]` struct `p` points to (layout pinned by const asserts in abi.rs); the struct is
    // exclusively borrowed for the call and the kernel reads/writes only those 28 bytes.
    let r = unsafe { libc::ioctl(fd, IB_USER_MAD_REGISTER_AGENT, p) };
    if r < 0 {
        return Err(last("ioctl(IB_USER_MAD_REGISTER_AGENT)", fd_name(fd)));
    }
    Ok(())
}

/// `ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, req)`; switches the fd to the 64-byte header.
pub(crate) fn register_agent2(fd: RawFd, req: &mut RegReq2) -> Result<(), SysError> {
    let p: *mut RegReq2 = req;
    // SAFETY: the request number encodes size_of::<RegReq2>() = 40 bytes, the exact size of the
    // `#[repr(C)]` struct `p` points to (layout pinned by const asserts in abi.rs); the struct is
    // exclusively borrowed for the call and the kernel reads/writes only those 40 bytes.
    let r = unsafe { libc::ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, p) };
    if r < 0 {
        return Err(last("ioctl(IB_USER_MAD_REGISTER_AGENT2)", fd_name(fd)));
    }
    Ok(())
}

/// `ioctl(fd, IB_USER_MAD_ENABLE_PKEY)`: switches the fd to the 64-byte header.
pub(crate) fn enable_pkey(fd: RawFd) -> Result<(), SysError> {
    // SAFETY: IB_USER_MAD_ENABLE_PKEY is an `_IO` request: it takes no argument, so no memory
    // is passed to the kernel.
    let r = unsafe { libc::ioctl(fd, IB_USER_MAD_ENABLE_PKEY) };
    if r < 0 {
        return Err(last("ioctl(IB_USER_MAD_ENABLE_PKEY)", fd_name(fd)));
    }
    Ok(())
}

/// `ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id)`.
pub(crate) fn unregister_agent(fd: RawFd, id: u32) -> Result<(), SysError> {
    let mut v = id;
    let p: *mut u32 = &mut v;
    // SAFETY: the request number encodes a 4-byte `__u32` argument and `p` points to a live
    // local u32 for the duration of the call; the kernel only reads it.
    let r = unsafe { libc::ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, p) };
    if r < 0 {
        return Err(last("ioctl(IB_USER_MAD_UNREGISTER_AGENT)", fd_name(fd)));
    }
    Ok(())
}

/// What kind of kernel object a descriptor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FdKind {
    /// A character device (the real `ib_umad`).
    CharDev,
    /// A socket (the tests' socketpairs).
    Socket,
    /// Anything else (an LD_PRELOAD shim's eventfd, say).
    Other,
}

/// `fstat(2)`: `None` if the kernel does not know `fd` (umad2sim's fake descriptors give EBADF),
/// else what it is.
pub(crate) fn kernel_fd_kind(fd: RawFd) -> Option<FdKind> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `st` is a properly sized, writable `struct stat` on the stack; fstat(2) writes it
    // and reads nothing else.
    let r = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if r < 0 {
        return None;
    }
    // SAFETY: fstat returned 0, so it fully initialised `st` (and it was zeroed before anyway,
    // which is a valid bit pattern for this plain-integer C struct).
    let st = unsafe { st.assume_init() };
    Some(match st.st_mode & libc::S_IFMT {
        libc::S_IFCHR => FdKind::CharDev,
        libc::S_IFSOCK => FdKind::Socket,
        _ => FdKind::Other,
    })
}

/// A directory stream from `opendir(3)`, closed on drop.
struct Dir(*mut libc::DIR);

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: `self.0` is the non-null stream returned by opendir and is closed exactly once,
        // here; no `dirent` pointer from it outlives `read_dir` below.
        unsafe { libc::closedir(self.0) };
    }
}

/// The entry names of a directory (without `.` and `..`), via `opendir(3)`/`readdir(3)` — the
/// libc symbols, so umad2sim redirects `/sys/class/infiniband*` to its fake tree.
pub(crate) fn read_dir(path: &str) -> Result<Vec<String>, SysError> {
    let c = cpath("opendir", path)?;
    // SAFETY: `c` is a valid NUL-terminated string alive for the call; opendir only reads it.
    let d = unsafe { libc::opendir(c.as_ptr()) };
    if d.is_null() {
        return Err(last("opendir", path));
    }
    let dir = Dir(d);
    let mut names = Vec::new();
    loop {
        // SAFETY: `dir.0` is a valid open stream owned by `dir` and used by this thread only.
        let ent = unsafe { libc::readdir(dir.0) };
        if ent.is_null() {
            break;
        }
        // SAFETY: readdir returned a non-null, aligned pointer to a dirent that stays valid until
        // the next readdir/closedir on this stream (readdir(3)); only a shared borrow is taken.
        let d_name = unsafe { &(*ent).d_name };
        // SAFETY: `d_name` is NUL-terminated within the array (readdir(3)); the borrowed name is
        // copied into an owned String before the next readdir call.
        let name = unsafe { CStr::from_ptr(d_name.as_ptr()) };
        let name = name.to_string_lossy().into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    Ok(names)
}

/// Reads a whole (small) file with `open`/`read`/`close` — never `std::fs`, see the module doc.
pub(crate) fn read_file(path: &str) -> Result<Vec<u8>, SysError> {
    let fd = open(path, libc::O_RDONLY)?;
    let mut out = Vec::new();
    let mut chunk = [0u8; 512];
    // sysfs files are at most a page; bound the loop anyway.
    for _ in 0..64 {
        match read(fd.raw(), &mut chunk)? {
            Some(0) => break,
            Some(n) => out.extend_from_slice(&chunk[..n]),
            None => continue,
        }
    }
    Ok(out)
}

/// `socketpair(AF_UNIX, SOCK_SEQPACKET)`: a record-preserving fd pair that stands in for a
/// umad device in tests of the io_uring engine and the port logic.
#[cfg(test)]
pub(crate) fn socketpair_seqpacket() -> Result<(Fd, Fd), SysError> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a writable array of two c_ints, exactly what socketpair(2) fills in.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(last("socketpair", "AF_UNIX/SOCK_SEQPACKET"));
    }
    Ok((
        Fd {
            raw: fds[0],
            what: "socketpair[0]".into(),
        },
        Fd {
            raw: fds[1],
            what: "socketpair[1]".into(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_path_names_op_and_keeps_errno() {
        let e = open("/nonexistent/umad-test", libc::O_RDONLY).unwrap_err();
        assert_eq!(e.op, "open");
        assert_eq!(e.errno(), Some(libc::ENOENT));
        assert!(e.to_string().contains("/nonexistent/umad-test"));
        let e = read_dir("/nonexistent/dir").unwrap_err();
        assert_eq!(e.op, "opendir");
        assert_eq!(e.errno(), Some(libc::ENOENT));
    }

    #[test]
    fn read_file_and_dir_through_libc() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lid");
        std::fs::write(&p, b"0x1a\n").unwrap();
        std::fs::write(d.path().join("port"), b"1\n").unwrap();
        let got = read_file(p.to_str().unwrap()).unwrap();
        assert_eq!(got, b"0x1a\n");
        let mut names = read_dir(d.path().to_str().unwrap()).unwrap();
        names.sort();
        assert_eq!(names, vec!["lid".to_string(), "port".to_string()]);
    }

    #[test]
    fn seqpacket_pair_moves_records_and_poll_sees_them() {
        let (a, b) = socketpair_seqpacket().unwrap();
        assert!(!poll_in(b.raw(), 0).unwrap());
        assert_eq!(read(b.raw(), &mut [0u8; 8]).unwrap(), None);
        assert_eq!(write(a.raw(), b"hello").unwrap(), Some(5));
        assert!(poll_in(b.raw(), 1000).unwrap());
        let mut buf = [0u8; 16];
        assert_eq!(read(b.raw(), &mut buf).unwrap(), Some(5));
        assert_eq!(&buf[..5], b"hello");
        assert_eq!(kernel_fd_kind(a.raw()), Some(FdKind::Socket));
        let null = open("/dev/null", libc::O_RDWR).unwrap();
        assert_eq!(kernel_fd_kind(null.raw()), Some(FdKind::CharDev));
        let dir = open("/", libc::O_RDONLY).unwrap();
        assert_eq!(kernel_fd_kind(dir.raw()), Some(FdKind::Other));
        assert_eq!(kernel_fd_kind(1500), None);
    }

    #[test]
    fn ioctl_on_a_non_umad_fd_is_an_error_with_errno() {
        let null = open("/dev/null", libc::O_RDWR).unwrap();
        let e = register_agent(null.raw(), &mut RegReq::default()).unwrap_err();
        assert_eq!(e.op, "ioctl(IB_USER_MAD_REGISTER_AGENT)");
        assert_eq!(e.errno(), Some(libc::ENOTTY));
    }
}

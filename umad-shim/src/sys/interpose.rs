//! The interposed libc entry points (compiled into the shared library, not into unit tests,
//! which must not replace their own process's libc calls). See the parent module for the list
//! and the ABI assumptions.

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr, CString};
use std::ptr::null_mut;
use std::sync::atomic::AtomicPtr;

use super::{close_fd, errno, fail, lookup, write_fd, ReadFn};

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
type Open2Fn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
type Openat2Fn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
type FopenFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut libc::FILE;
type ReadChkFn = unsafe extern "C" fn(c_int, *mut c_void, usize, usize) -> isize;
type IoctlFn = unsafe extern "C" fn(c_int, c_ulong, ...) -> c_int;
type OpendirFn = unsafe extern "C" fn(*const c_char) -> *mut libc::DIR;
type ScandirFn =
    unsafe extern "C" fn(*const c_char, *mut c_void, *mut c_void, *mut c_void) -> c_int;
type StatFn = unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int;
type XstatFn = unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int;
type FstatatFn = unsafe extern "C" fn(c_int, *const c_char, *mut c_void, c_int) -> c_int;
type FxstatatFn = unsafe extern "C" fn(c_int, c_int, *const c_char, *mut c_void, c_int) -> c_int;
type StatxFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint, *mut c_void) -> c_int;
type AccessFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type FaccessatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_int) -> c_int;
type RealpathFn = unsafe extern "C" fn(*const c_char, *mut c_char) -> *mut c_char;

/// The bytes of a C path, `None` for a null pointer.
///
/// # Safety
/// `path` is null or points to a NUL-terminated string valid for the call.
unsafe fn path_bytes<'a>(path: *const c_char) -> Option<&'a [u8]> {
    if path.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract (the libc function's).
    Some(unsafe { CStr::from_ptr(path) }.to_bytes())
}

/// What to hand the real function for `path`: the app's pointer, our mapped path, or fail.
enum Arg {
    Same,
    Mapped(CString),
    Fail(i32),
}

/// # Safety
/// As [`path_bytes`].
unsafe fn map(path: *const c_char) -> Arg {
    // SAFETY: forwarded from this function's contract.
    let Some(p) = (unsafe { path_bytes(path) }) else {
        return Arg::Same;
    };
    match crate::runtime::map_path(p) {
        crate::runtime::PathAction::Real => Arg::Same,
        crate::runtime::PathAction::Mapped(c) => Arg::Mapped(c),
        crate::runtime::PathAction::Fail(e) => Arg::Fail(e),
    }
}

impl Arg {
    fn ptr(&self, orig: *const c_char) -> *const c_char {
        match self {
            Arg::Mapped(c) => c.as_ptr(),
            _ => orig,
        }
    }
}

/// Shared body of the `open` family: our device or memfd, a mapped path, or the app's.
///
/// # Safety
/// `path` as [`path_bytes`]; `real` opens a (possibly different) path with `flags`/`mode`.
unsafe fn open_common(
    path: *const c_char,
    flags: c_int,
    real: impl FnOnce(*const c_char) -> c_int,
) -> c_int {
    // SAFETY: forwarded from this function's contract.
    let Some(p) = (unsafe { path_bytes(path) }) else {
        return real(path);
    };
    match crate::runtime::open_path(p, flags) {
        crate::runtime::OpenAction::Real => real(path),
        crate::runtime::OpenAction::Mapped(c) => real(c.as_ptr()),
        crate::runtime::OpenAction::Fd(fd) => fd,
        crate::runtime::OpenAction::Fail(e) => fail(e, -1),
    }
}

/// Interposed `open(2)`.
///
/// # Safety
/// The contract of glibc's `open`: `path` is a NUL-terminated string; `mode` is read only with
/// `O_CREAT`/`O_TMPFILE`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let Some(f) = real!(c"open", OpenFn) else {
        return fail(libc::ENOSYS, -1);
    };
    let real = |p: *const c_char| {
        // SAFETY: `f` is glibc's function of this name, called with the caller's flags
        // and mode and either the caller's path or our own NUL-terminated one.
        unsafe { f(p, flags, mode) }
    };
    // SAFETY: `path` comes from our caller under open's contract; `f` is glibc's open, called
    // with the same arguments (or our own NUL-terminated path).
    unsafe { open_common(path, flags, real) }
}

/// Interposed `open64` (what Rust's `std::fs` and LFS programs call).
///
/// # Safety
/// As [`open`].
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let Some(f) = real!(c"open64", OpenFn) else {
        return fail(libc::ENOSYS, -1);
    };
    let real = |p: *const c_char| {
        // SAFETY: `f` is glibc's function of this name, called with the caller's flags
        // and mode and either the caller's path or our own NUL-terminated one.
        unsafe { f(p, flags, mode) }
    };
    // SAFETY: as in `open`.
    unsafe { open_common(path, flags, real) }
}

/// Interposed `__open_2` (glibc's fortified `open` without a mode).
///
/// # Safety
/// As [`open`].
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    let Some(f) = real!(c"__open_2", Open2Fn) else {
        return fail(libc::ENOSYS, -1);
    };
    let real = |p: *const c_char| {
        // SAFETY: `f` is glibc's function of this name, called with the caller's flags
        // and mode and either the caller's path or our own NUL-terminated one.
        unsafe { f(p, flags) }
    };
    // SAFETY: as in `open`.
    unsafe { open_common(path, flags, real) }
}

/// Interposed `__open64_2`.
///
/// # Safety
/// As [`open`].
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    let Some(f) = real!(c"__open64_2", Open2Fn) else {
        return fail(libc::ENOSYS, -1);
    };
    let real = |p: *const c_char| {
        // SAFETY: `f` is glibc's function of this name, called with the caller's flags
        // and mode and either the caller's path or our own NUL-terminated one.
        unsafe { f(p, flags) }
    };
    // SAFETY: as in `open`.
    unsafe { open_common(path, flags, real) }
}

/// Interposed `openat(2)`: absolute paths are mapped, relative ones go to the real call.
///
/// # Safety
/// As [`open`]; `dirfd` as openat(2) requires.
#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    let Some(f) = real!(c"openat", OpenatFn) else {
        return fail(libc::ENOSYS, -1);
    };
    let real = |p: *const c_char| {
        // SAFETY: `f` is glibc's function of this name, called with the caller's flags
        // and mode and either the caller's path or our own NUL-terminated one.
        unsafe { f(dirfd, p, flags, mode) }
    };
    // SAFETY: as in `open`.
    unsafe { open_common(path, flags, real) }
}

/// Interposed `openat64`.
///
/// # Safety
/// As [`openat`].
#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    let Some(f) = real!(c"openat64", OpenatFn) else {
        return fail(libc::ENOSYS, -1);
    };
    let real = |p: *const c_char| {
        // SAFETY: `f` is glibc's function of this name, called with the caller's flags
        // and mode and either the caller's path or our own NUL-terminated one.
        unsafe { f(dirfd, p, flags, mode) }
    };
    // SAFETY: as in `open`.
    unsafe { open_common(path, flags, real) }
}

/// Interposed `__openat_2`.
///
/// # Safety
/// As [`openat`].
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let Some(f) = real!(c"__openat_2", Openat2Fn) else {
        return fail(libc::ENOSYS, -1);
    };
    let real = |p: *const c_char| {
        // SAFETY: `f` is glibc's function of this name, called with the caller's flags
        // and mode and either the caller's path or our own NUL-terminated one.
        unsafe { f(dirfd, p, flags) }
    };
    // SAFETY: as in `open`.
    unsafe { open_common(path, flags, real) }
}

/// Interposed `__openat64_2`.
///
/// # Safety
/// As [`openat`].
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let Some(f) = real!(c"__openat64_2", Openat2Fn) else {
        return fail(libc::ENOSYS, -1);
    };
    let real = |p: *const c_char| {
        // SAFETY: `f` is glibc's function of this name, called with the caller's flags
        // and mode and either the caller's path or our own NUL-terminated one.
        unsafe { f(dirfd, p, flags) }
    };
    // SAFETY: as in `open`.
    unsafe { open_common(path, flags, real) }
}

/// Shared body of `fopen`/`fopen64`.
///
/// # Safety
/// `path` and `mode` are NUL-terminated strings (fopen(3)).
unsafe fn fopen_common(path: *const c_char, mode: *const c_char, real: FopenFn) -> *mut libc::FILE {
    // SAFETY: forwarded from this function's contract.
    let Some(p) = (unsafe { path_bytes(path) }) else {
        // SAFETY: the app's own arguments, unchanged, to the real fopen.
        return unsafe { real(path, mode) };
    };
    match crate::runtime::fopen_path(p) {
        crate::runtime::OpenAction::Real => {
            // SAFETY: as above.
            unsafe { real(path, mode) }
        }
        crate::runtime::OpenAction::Mapped(c) => {
            // SAFETY: our NUL-terminated path and the app's mode string.
            unsafe { real(c.as_ptr(), mode) }
        }
        crate::runtime::OpenAction::Fd(fd) => {
            // SAFETY: `fd` is a memfd we just created and own; `mode` is the app's mode string
            // (fdopen(3)). On success the FILE owns the descriptor.
            let f = unsafe { libc::fdopen(fd, mode) };
            if f.is_null() {
                let e = errno();
                close_fd(fd);
                return fail(e, null_mut());
            }
            f
        }
        crate::runtime::OpenAction::Fail(e) => fail(e, null_mut()),
    }
}

/// Interposed `fopen(3)`.
///
/// # Safety
/// The contract of fopen(3).
#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    let Some(f) = real!(c"fopen", FopenFn) else {
        return fail(libc::ENOSYS, null_mut());
    };
    // SAFETY: forwarded from fopen's contract.
    unsafe { fopen_common(path, mode, f) }
}

/// Interposed `fopen64`.
///
/// # Safety
/// As [`fopen`].
#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    let Some(f) = real!(c"fopen64", FopenFn) else {
        return fail(libc::ENOSYS, null_mut());
    };
    // SAFETY: forwarded from fopen's contract.
    unsafe { fopen_common(path, mode, f) }
}

/// Interposed `close(2)`.
///
/// # Safety
/// The contract of close(2) (none beyond a descriptor number).
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if crate::runtime::is_ours(fd) {
        if let Some(r) = crate::runtime::close(fd) {
            return match r {
                Ok(()) => 0,
                Err(e) => fail(e, -1),
            };
        }
    }
    close_fd(fd)
}

/// Interposed `read(2)`.
///
/// # Safety
/// The contract of read(2): `buf` is writable for `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize {
    if crate::runtime::is_ours(fd) && !buf.is_null() {
        // SAFETY: read(2)'s contract: `buf` points to `count` writable bytes for this call,
        // not aliased by anything else we touch.
        let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), count) };
        if let Some(r) = crate::runtime::read(fd, out) {
            return match r {
                Ok(n) => n as isize,
                Err(e) => fail(e, -1),
            };
        }
    }
    let Some(f) = real!(c"read", ReadFn) else {
        return fail(libc::ENOSYS, -1);
    };
    // SAFETY: the app's own arguments, unchanged, to the real read.
    unsafe { f(fd, buf, count) }
}

/// Interposed `__read_chk` (fortified read).
///
/// # Safety
/// As [`read`]; `buflen` is the buffer's real size.
#[no_mangle]
pub unsafe extern "C" fn __read_chk(
    fd: c_int,
    buf: *mut c_void,
    count: usize,
    buflen: usize,
) -> isize {
    if crate::runtime::is_ours(fd) && !buf.is_null() {
        // SAFETY: as in `read`, bounded by the smaller of the two sizes.
        let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), count.min(buflen)) };
        if let Some(r) = crate::runtime::read(fd, out) {
            return match r {
                Ok(n) => n as isize,
                Err(e) => fail(e, -1),
            };
        }
    }
    let Some(f) = real!(c"__read_chk", ReadChkFn) else {
        return fail(libc::ENOSYS, -1);
    };
    // SAFETY: the app's own arguments, unchanged.
    unsafe { f(fd, buf, count, buflen) }
}

/// Interposed `write(2)`.
///
/// # Safety
/// The contract of write(2): `buf` is readable for `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: usize) -> isize {
    if crate::runtime::is_ours(fd) && !buf.is_null() {
        // SAFETY: write(2)'s contract: `buf` points to `count` readable bytes for this call.
        let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), count) };
        if let Some(r) = crate::runtime::write(fd, data) {
            return match r {
                Ok(n) => n as isize,
                Err(e) => fail(e, -1),
            };
        }
    }
    write_fd(fd, buf, count)
}

/// Interposed `ioctl(2)`: the user_mad requests on our descriptors.
///
/// # Safety
/// The contract of ioctl(2) for `request`: `arg` points to the request's argument (a
/// `struct ib_user_mad_reg_req`, `_reg_req2` or `__u32`) where it has one.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if crate::runtime::is_ours(fd) {
        // SAFETY: forwarded from ioctl's contract.
        return unsafe { umad_ioctl(fd, request, arg) };
    }
    let Some(f) = real!(c"ioctl", IoctlFn) else {
        return fail(libc::ENOSYS, -1);
    };
    // SAFETY: the app's own arguments, unchanged, to the real ioctl.
    unsafe { f(fd, request, arg) }
}

/// # Safety
/// As [`ioctl`].
unsafe fn umad_ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    use umad::abi::{
        RegReq, RegReq2, IB_USER_MAD_ENABLE_PKEY, IB_USER_MAD_REGISTER_AGENT,
        IB_USER_MAD_REGISTER_AGENT2, IB_USER_MAD_UNREGISTER_AGENT,
    };
    let r = if request == IB_USER_MAD_ENABLE_PKEY as c_ulong {
        crate::runtime::enable_pkey(fd)
    } else if arg.is_null() {
        Err(libc::EFAULT)
    } else if request == IB_USER_MAD_REGISTER_AGENT as c_ulong {
        let p = arg.cast::<RegReq>();
        // SAFETY: the request number encodes size_of::<RegReq>() = 28 (the uapi struct, pinned
        // by umad::abi's asserts), so `arg` points to one; read unaligned, as C gives no
        // alignment guarantee we rely on.
        let req = unsafe { p.read_unaligned() };
        crate::runtime::register_v1(fd, &req).map(|id| {
            // SAFETY: same pointer; `id` is the struct's first field (offset 0), written back
            // as the kernel does.
            unsafe { arg.cast::<u32>().write_unaligned(id) };
            0
        })
    } else if request == IB_USER_MAD_REGISTER_AGENT2 as c_ulong {
        let p = arg.cast::<RegReq2>();
        // SAFETY: the number encodes size_of::<RegReq2>() = 40, so `arg` points to one.
        let req = unsafe { p.read_unaligned() };
        match crate::runtime::register_v2(fd, &req) {
            Ok(id) => {
                // SAFETY: `id` is at offset 0 of the struct `arg` points to.
                unsafe { arg.cast::<u32>().write_unaligned(id) };
                Ok(0)
            }
            Err((e, Some(flags))) => {
                // SAFETY: `flags` is at offset 12 (pinned in umad::abi) of the 40-byte struct;
                // the kernel writes the supported flags back there on EINVAL.
                unsafe {
                    arg.cast::<u8>()
                        .wrapping_add(12)
                        .cast::<u32>()
                        .write_unaligned(flags)
                };
                Err(e)
            }
            Err((e, None)) => Err(e),
        }
    } else if request == IB_USER_MAD_UNREGISTER_AGENT as c_ulong {
        // SAFETY: the number encodes a 4-byte `__u32` argument at `arg`.
        let id = unsafe { arg.cast::<u32>().read_unaligned() };
        crate::runtime::unregister(fd, id).map(|()| 0)
    } else {
        Err(libc::ENOTTY)
    };
    match r {
        Ok(v) => v,
        Err(e) => fail(e, -1),
    }
}

macro_rules! path_call {
    ($(#[$doc:meta])* $name:ident, $sym:literal, $ty:ty, ($($a:ident: $t:ty),*) -> $ret:ty, path = $path:ident, err = $err:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The contract of the libc function of the same name: the path is a NUL-terminated
        /// string and the other pointers are valid as that function requires.
                #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $ret {
            let Some(f) = real!($sym, $ty) else {
                return fail(libc::ENOSYS, $err);
            };
            // SAFETY: the path argument under this function's contract.
            let m = unsafe { map($path) };
            if let Arg::Fail(e) = m {
                return fail(e, $err);
            }
            let $path = m.ptr($path);
            // SAFETY: the app's arguments, with the path possibly replaced by our own
            // NUL-terminated string that outlives the call.
            unsafe { f($($a),*) }
        }
    };
}

path_call!(
    /// Interposed `opendir(3)`.
    opendir, c"opendir", OpendirFn, (path: *const c_char) -> *mut libc::DIR, path = path, err = null_mut()
);
path_call!(
    /// Interposed `scandir(3)`.
    scandir, c"scandir", ScandirFn, (path: *const c_char, list: *mut c_void, filter: *mut c_void, compar: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `scandir64`.
    scandir64, c"scandir64", ScandirFn, (path: *const c_char, list: *mut c_void, filter: *mut c_void, compar: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `stat(2)`.
    stat, c"stat", StatFn, (path: *const c_char, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `stat64`.
    stat64, c"stat64", StatFn, (path: *const c_char, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `lstat(2)`.
    lstat, c"lstat", StatFn, (path: *const c_char, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `lstat64`.
    lstat64, c"lstat64", StatFn, (path: *const c_char, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `__xstat` (glibc < 2.33 binaries).
    __xstat, c"__xstat", XstatFn, (ver: c_int, path: *const c_char, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `__xstat64`.
    __xstat64, c"__xstat64", XstatFn, (ver: c_int, path: *const c_char, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `__lxstat`.
    __lxstat, c"__lxstat", XstatFn, (ver: c_int, path: *const c_char, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `__lxstat64`.
    __lxstat64, c"__lxstat64", XstatFn, (ver: c_int, path: *const c_char, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `fstatat(2)` (absolute paths only are mapped).
    fstatat, c"fstatat", FstatatFn, (dirfd: c_int, path: *const c_char, buf: *mut c_void, flags: c_int) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `fstatat64`.
    fstatat64, c"fstatat64", FstatatFn, (dirfd: c_int, path: *const c_char, buf: *mut c_void, flags: c_int) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `__fxstatat`.
    __fxstatat, c"__fxstatat", FxstatatFn, (ver: c_int, dirfd: c_int, path: *const c_char, buf: *mut c_void, flags: c_int) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `__fxstatat64`.
    __fxstatat64, c"__fxstatat64", FxstatatFn, (ver: c_int, dirfd: c_int, path: *const c_char, buf: *mut c_void, flags: c_int) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `statx(2)`.
    statx, c"statx", StatxFn, (dirfd: c_int, path: *const c_char, flags: c_int, mask: c_uint, buf: *mut c_void) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `access(2)`.
    access, c"access", AccessFn, (path: *const c_char, mode: c_int) -> c_int, path = path, err = -1
);
path_call!(
    /// Interposed `faccessat(2)`.
    faccessat, c"faccessat", FaccessatFn, (dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int, path = path, err = -1
);

/// Interposed `realpath(3)`: an emulated path resolves to itself (normalized), never to the
/// private directory behind it.
///
/// # Safety
/// The contract of realpath(3): `path` is NUL-terminated; `resolved` is null or has room for
/// `PATH_MAX` bytes.
#[no_mangle]
pub unsafe extern "C" fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char {
    let Some(f) = real!(c"realpath", RealpathFn) else {
        return fail(libc::ENOSYS, null_mut());
    };
    // SAFETY: forwarded from realpath's contract.
    let Some(p) = (unsafe { path_bytes(path) }) else {
        // SAFETY: the app's own arguments.
        return unsafe { f(path, resolved) };
    };
    match crate::runtime::realpath(p) {
        None => {
            // SAFETY: the app's own arguments.
            unsafe { f(path, resolved) }
        }
        Some(Err(e)) => fail(e, null_mut()),
        Some(Ok(name)) => {
            let n = name.len();
            if n >= libc::PATH_MAX as usize {
                return fail(libc::ENAMETOOLONG, null_mut());
            }
            let out = if resolved.is_null() {
                // SAFETY: malloc(3) of n + 1 bytes; realpath's caller frees it with free(3).
                let m = unsafe { libc::malloc(n + 1) }.cast::<c_char>();
                if m.is_null() {
                    return fail(libc::ENOMEM, null_mut());
                }
                m
            } else {
                resolved
            };
            // SAFETY: `out` has room for n + 1 bytes (PATH_MAX by contract, or our malloc) and
            // does not overlap `name`, a Rust allocation.
            unsafe { std::ptr::copy_nonoverlapping(name.as_ptr().cast::<c_char>(), out, n) };
            // SAFETY: index n is within those n + 1 bytes.
            unsafe { out.wrapping_add(n).write(0) };
            out
        }
    }
}

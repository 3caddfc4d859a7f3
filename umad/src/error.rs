//! Typed errors of the umad transport: every OS failure names the operation and keeps errno.

use std::io;

/// One failed system call: which operation, on what, and the errno it returned.
#[derive(Debug, thiserror::Error)]
#[error("{op} {target} failed")]
pub struct SysError {
    /// The operation, e.g. `"open"` or `"ioctl(IB_USER_MAD_REGISTER_AGENT)"`.
    pub op: &'static str,
    /// What it was applied to (a path or `fd N`).
    pub target: String,
    /// The OS error (errno).
    #[source]
    pub source: io::Error,
}

impl SysError {
    /// The raw errno, if the error carries one.
    #[must_use]
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

/// Everything that can go wrong opening or using a user_mad port.
#[derive(Debug, thiserror::Error)]
pub enum UmadError {
    /// `/sys/class/infiniband` does not exist: no RDMA device (or no `ib_umad`/`ib_core` module).
    #[error("no InfiniBand device: {path} does not exist (is ib_core/ib_umad loaded, or LD_PRELOAD=libumad2sim.so set for ibsim?)")]
    NoIbDevice {
        /// The directory that was missing.
        path: String,
    },
    /// No user_mad device node was found for any CA.
    #[error("no user_mad device under {path} (is the ib_umad module loaded?)")]
    NoUmadDevice {
        /// The directory that was scanned.
        path: String,
    },
    /// The requested CA name does not exist.
    #[error("CA {name:?} not found (available: {available:?})")]
    CaNotFound {
        /// The name asked for.
        name: String,
        /// The CAs that do exist.
        available: Vec<String>,
    },
    /// The requested port does not exist on the CA (or has no umad device).
    #[error("port {port} not found on CA {ca:?} (ports with a umad device: {available:?})")]
    PortNotFound {
        /// The CA.
        ca: String,
        /// The port asked for.
        port: u8,
        /// The ports that do have a umad device.
        available: Vec<u8>,
    },
    /// No port has the requested port GUID.
    #[error("no port has port GUID 0x{:016x} (ports: {})", guid.0, available.join("; "))]
    PortGuidNotFound {
        /// The GUID asked for.
        guid: ibmad::Guid,
        /// Each port with a umad device and its GUID (or why it could not be read).
        available: Vec<String>,
    },
    /// Opening a device node was refused (needs root or membership of the `rdma` group).
    #[error("permission denied opening {path} (run as root or grant access to the device node)")]
    PermissionDenied {
        /// The device node.
        path: String,
        /// The underlying error.
        #[source]
        source: SysError,
    },
    /// The kernel refused to register the MAD agent.
    #[error("registration of a QP{qpn} agent for class {class:#04x} refused")]
    RegistrationRefused {
        /// Management class.
        class: u8,
        /// QP number (0 = SMI).
        qpn: u8,
        /// The failed ioctl.
        #[source]
        source: SysError,
    },
    /// A sysfs file held something that could not be parsed.
    #[error("cannot parse {path}: {text:?}")]
    BadSysfs {
        /// The file.
        path: String,
        /// Its contents.
        text: String,
    },
    /// A path contained a NUL byte.
    #[error("path {0:?} contains a NUL byte")]
    BadPath(String),
    /// The io_uring batched mode was requested explicitly but cannot be used on this fd.
    #[error("io_uring mode unavailable: {reason}")]
    UringUnavailable {
        /// Why.
        reason: String,
    },
    /// The receive thread could not be started.
    #[error("cannot spawn the receive thread")]
    Thread(#[source] io::Error),
    /// Any other failed system call.
    #[error(transparent)]
    Sys(#[from] SysError),
}

//! vfio-user: a PCI device served by another process over a UNIX stream socket (QEMU's
//! docs/devel/vfio-user.rst, protocol version 0.1), with the same [`VfioDevice`] interface as a
//! kernel VFIO device.
//!
//! Why our own implementation rather than the `vfio-user` crate: that crate performs its socket
//! and mmap system calls itself (through vmm-sys-util), outside this crate's single syscall seam
//! (STYLE P8), and pulls in serde for the one JSON object of the version handshake. The subset we
//! need is small: `VERSION`, `DMA_MAP`/`DMA_UNMAP` (memfd passed with SCM_RIGHTS),
//! `DEVICE_GET_INFO`, `DEVICE_GET_REGION_INFO` (optionally with an fd for mmap),
//! `DEVICE_GET_IRQ_INFO`, `DEVICE_SET_IRQS` (eventfds passed with SCM_RIGHTS),
//! `REGION_READ`/`REGION_WRITE`, `DEVICE_RESET`.
//!
//! * [`proto`] — message header and payload layouts (zerocopy structs, sizes pinned).
//! * [`UserDevice`] — the client.
//! * [`server`] — a minimal server loop around a [`server::Backend`]; the device model
//!   (`ibsm asic-model`) and this crate's tests use it.
//!
//! Every wait is bounded: replies must arrive within [`UserDevice::set_timeout`] (5 s default).

pub mod server;

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::errno::Errno;
use zerocopy::{FromBytes, IntoBytes};

use crate::device::{DeviceFlags, DeviceInfo, IrqInfo, VfioDevice};
use crate::dma::DmaMemory;
use crate::error::{Result, VfioError};
use crate::region::{MmioRegion, RegionFlags, RegionInfo, RegisterIo};
use crate::sys::{sock_recv, sock_send, Fd, RealSys, Sys};

/// Message layouts. All fields are in host byte order (little-endian on every platform we run).
pub mod proto {
    use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

    /// Protocol major version we speak.
    pub const VERSION_MAJOR: u16 = 0;
    /// Protocol minor version we speak.
    pub const VERSION_MINOR: u16 = 1;

    /// `VFIO_USER_VERSION`.
    pub const CMD_VERSION: u16 = 1;
    /// `VFIO_USER_DMA_MAP`.
    pub const CMD_DMA_MAP: u16 = 2;
    /// `VFIO_USER_DMA_UNMAP`.
    pub const CMD_DMA_UNMAP: u16 = 3;
    /// `VFIO_USER_DEVICE_GET_INFO`.
    pub const CMD_DEVICE_GET_INFO: u16 = 4;
    /// `VFIO_USER_DEVICE_GET_REGION_INFO`.
    pub const CMD_DEVICE_GET_REGION_INFO: u16 = 5;
    /// `VFIO_USER_DEVICE_GET_IRQ_INFO`.
    pub const CMD_DEVICE_GET_IRQ_INFO: u16 = 7;
    /// `VFIO_USER_DEVICE_SET_IRQS`.
    pub const CMD_DEVICE_SET_IRQS: u16 = 8;
    /// `VFIO_USER_REGION_READ`.
    pub const CMD_REGION_READ: u16 = 9;
    /// `VFIO_USER_REGION_WRITE`.
    pub const CMD_REGION_WRITE: u16 = 10;
    /// `VFIO_USER_DEVICE_RESET`.
    pub const CMD_DEVICE_RESET: u16 = 13;

    /// Header flags: message type "command".
    pub const FLAG_COMMAND: u32 = 0;
    /// Header flags: message type "reply".
    pub const FLAG_REPLY: u32 = 1;
    /// Header flags: mask of the type field.
    pub const FLAG_TYPE_MASK: u32 = 0xF;
    /// Header flags: the sender wants no reply.
    pub const FLAG_NO_REPLY: u32 = 1 << 4;
    /// Header flags: the reply is an error; `error` holds the errno.
    pub const FLAG_ERROR: u32 = 1 << 5;

    /// DMA_MAP flags: device may read.
    pub const DMA_READ: u32 = 1;
    /// DMA_MAP flags: device may write.
    pub const DMA_WRITE: u32 = 2;

    /// Largest message we accept (header included).
    pub const MAX_MSG: usize = (1 << 20) + 4096;

    /// Every message starts with this 16-byte header.
    #[repr(C)]
    #[derive(
        Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
    )]
    pub struct Header {
        /// Matches a reply to its command.
        pub msg_id: u16,
        /// `CMD_*`.
        pub command: u16,
        /// Whole message size including this header.
        pub msg_size: u32,
        /// `FLAG_*`.
        pub flags: u32,
        /// errno of an error reply.
        pub error: u32,
    }

    /// `VERSION` payload head (followed by a NUL-terminated JSON object).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
    pub struct Version {
        /// Major.
        pub major: u16,
        /// Minor.
        pub minor: u16,
    }

    /// `DMA_MAP` payload (the memory's fd rides along in SCM_RIGHTS).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
    pub struct DmaMap {
        /// Size of this struct.
        pub argsz: u32,
        /// `DMA_READ | DMA_WRITE`.
        pub flags: u32,
        /// Offset of the memory in the fd.
        pub offset: u64,
        /// IOVA (device address).
        pub address: u64,
        /// Length.
        pub size: u64,
    }

    /// `DMA_UNMAP` payload.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
    pub struct DmaUnmap {
        /// Size of this struct.
        pub argsz: u32,
        /// 0.
        pub flags: u32,
        /// IOVA.
        pub address: u64,
        /// Length.
        pub size: u64,
    }

    /// `DEVICE_GET_INFO` payload (request and reply).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
    pub struct DeviceInfo {
        /// Size of this struct.
        pub argsz: u32,
        /// `VFIO_DEVICE_FLAGS_*`.
        pub flags: u32,
        /// Regions.
        pub num_regions: u32,
        /// IRQ indexes.
        pub num_irqs: u32,
    }

    /// `DEVICE_GET_REGION_INFO` payload (`struct vfio_region_info`; the reply may append a
    /// capability chain and pass an fd for mmap).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
    pub struct RegionInfo {
        /// Request: room the client has; reply: room needed.
        pub argsz: u32,
        /// `VFIO_REGION_INFO_FLAG_*`.
        pub flags: u32,
        /// Region index.
        pub index: u32,
        /// Offset of the first capability (0: none).
        pub cap_offset: u32,
        /// Region size.
        pub size: u64,
        /// Offset of the region in the passed fd (for mmap).
        pub offset: u64,
    }

    /// `DEVICE_GET_IRQ_INFO` payload.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
    pub struct IrqInfo {
        /// Size of this struct.
        pub argsz: u32,
        /// `VFIO_IRQ_INFO_*`.
        pub flags: u32,
        /// IRQ index.
        pub index: u32,
        /// Vectors.
        pub count: u32,
    }

    /// `DEVICE_SET_IRQS` payload (`struct vfio_irq_set` without data; eventfds ride along).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
    pub struct IrqSet {
        /// Size of this struct.
        pub argsz: u32,
        /// `VFIO_IRQ_SET_*`.
        pub flags: u32,
        /// IRQ index.
        pub index: u32,
        /// First vector.
        pub start: u32,
        /// Number of vectors.
        pub count: u32,
    }

    /// `REGION_READ`/`REGION_WRITE` payload head (write: data follows; read reply: data follows).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
    pub struct RegionAccess {
        /// Offset in the region.
        pub offset: u64,
        /// Region index.
        pub region: u32,
        /// Bytes.
        pub count: u32,
    }

    const _: () = assert!(size_of::<Header>() == 16);
    const _: () = assert!(size_of::<Version>() == 4);
    const _: () = assert!(size_of::<DmaMap>() == 32);
    const _: () = assert!(size_of::<DmaUnmap>() == 24);
    const _: () = assert!(size_of::<DeviceInfo>() == 16);
    const _: () = assert!(size_of::<RegionInfo>() == 32);
    const _: () = assert!(size_of::<IrqInfo>() == 16);
    const _: () = assert!(size_of::<IrqSet>() == 20);
    const _: () = assert!(size_of::<RegionAccess>() == 16);

    use std::mem::size_of;

    /// Human name of a command (for errors and logs).
    pub fn command_name(cmd: u16) -> &'static str {
        match cmd {
            CMD_VERSION => "VERSION",
            CMD_DMA_MAP => "DMA_MAP",
            CMD_DMA_UNMAP => "DMA_UNMAP",
            CMD_DEVICE_GET_INFO => "DEVICE_GET_INFO",
            CMD_DEVICE_GET_REGION_INFO => "DEVICE_GET_REGION_INFO",
            CMD_DEVICE_GET_IRQ_INFO => "DEVICE_GET_IRQ_INFO",
            CMD_DEVICE_SET_IRQS => "DEVICE_SET_IRQS",
            CMD_REGION_READ => "REGION_READ",
            CMD_REGION_WRITE => "REGION_WRITE",
            CMD_DEVICE_RESET => "DEVICE_RESET",
            _ => "unknown command",
        }
    }
}

/// Read one message: header, payload, and any descriptors passed with it.
pub fn recv_message(sys: &Arc<dyn Sys>, sock: RawFd) -> Result<(proto::Header, Vec<u8>, Vec<Fd>)> {
    let mut h = [0u8; 16];
    let mut fds = sock_recv(sys, sock, &mut h)?;
    let hdr = proto::Header::read_from_bytes(&h).map_err(|_| VfioError::Protocol {
        op: "recv",
        reason: "header".into(),
    })?;
    let size = hdr.msg_size as usize;
    if !(16..=proto::MAX_MSG).contains(&size) {
        return Err(VfioError::Protocol {
            op: proto::command_name(hdr.command),
            reason: format!("message size {size} outside 16..={}", proto::MAX_MSG),
        });
    }
    let mut payload = vec![0u8; size - 16];
    if !payload.is_empty() {
        fds.extend(sock_recv(sys, sock, &mut payload)?);
    }
    Ok((hdr, payload, fds))
}

/// Write one message (header + payload, descriptors attached).
pub fn send_message(sock: RawFd, hdr: proto::Header, payload: &[u8], fds: &[RawFd]) -> Result<()> {
    let mut msg = Vec::with_capacity(16 + payload.len());
    msg.extend_from_slice(hdr.as_bytes());
    msg.extend_from_slice(payload);
    sock_send(sock, &msg, fds)
}

fn proto_err(op: &'static str, reason: impl Into<String>) -> VfioError {
    VfioError::Protocol {
        op,
        reason: reason.into(),
    }
}

/// Pull an integer field out of the version JSON (`"key": 123`); we need no JSON library for two
/// numbers.
fn json_number(json: &str, key: &str) -> Option<u64> {
    let at = json.find(&format!("\"{key}\""))?;
    let rest = &json[at + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[derive(Debug)]
struct Conn {
    sock: UnixStream,
    next_id: u16,
}

#[derive(Debug)]
struct Inner {
    conn: Mutex<Conn>,
    sys: Arc<dyn Sys>,
    max_xfer: usize,
    max_fds: usize,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Conn> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Send a command and wait (bounded by the socket timeout) for its reply.
    fn request(&self, cmd: u16, payload: &[u8], fds: &[RawFd]) -> Result<(Vec<u8>, Vec<Fd>)> {
        let op = proto::command_name(cmd);
        let mut c = self.lock();
        let id = c.next_id;
        c.next_id = c.next_id.wrapping_add(1);
        let size =
            u32::try_from(16 + payload.len()).map_err(|_| proto_err(op, "payload too large"))?;
        let hdr = proto::Header {
            msg_id: id,
            command: cmd,
            msg_size: size,
            flags: proto::FLAG_COMMAND,
            error: 0,
        };
        let sock = c.sock.as_raw_fd();
        send_message(sock, hdr, payload, fds)?;
        let (r, body, rfds) = recv_message(&self.sys, sock).map_err(|e| match e {
            VfioError::Sys {
                source: Errno::EAGAIN,
                ..
            } => proto_err(op, "no reply within the timeout"),
            e => e,
        })?;
        if r.flags & proto::FLAG_TYPE_MASK != proto::FLAG_REPLY
            || r.msg_id != id
            || r.command != cmd
        {
            return Err(proto_err(
                op,
                format!(
                    "expected reply to id {id} command {cmd}, got id {} command {} flags {:#x}",
                    r.msg_id, r.command, r.flags
                ),
            ));
        }
        if r.flags & proto::FLAG_ERROR != 0 {
            let errno = i32::try_from(r.error).map_or(Errno::EIO, Errno::from_raw);
            return Err(VfioError::Remote { op, source: errno });
        }
        Ok((body, rfds))
    }

    fn region_read(&self, index: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        for (i, chunk) in buf.chunks_mut(self.max_xfer).enumerate() {
            let off = offset + (i * self.max_xfer) as u64;
            let count = chunk.len() as u32;
            let req = proto::RegionAccess {
                offset: off,
                region: index,
                count,
            };
            let (body, _) = self.request(proto::CMD_REGION_READ, req.as_bytes(), &[])?;
            let data = body.get(16..16 + chunk.len()).ok_or_else(|| {
                proto_err(
                    "REGION_READ",
                    format!("reply of {} bytes for {count}", body.len()),
                )
            })?;
            chunk.copy_from_slice(data);
        }
        Ok(())
    }

    fn region_write(&self, index: u32, offset: u64, data: &[u8]) -> Result<()> {
        for (i, chunk) in data.chunks(self.max_xfer).enumerate() {
            let req = proto::RegionAccess {
                offset: offset + (i * self.max_xfer) as u64,
                region: index,
                count: chunk.len() as u32,
            };
            let mut p = req.as_bytes().to_vec();
            p.extend_from_slice(chunk);
            self.request(proto::CMD_REGION_WRITE, &p, &[])?;
        }
        Ok(())
    }
}

/// A region as the server described it, plus the fd it passed for mmap (if any).
#[derive(Debug)]
struct UserRegion {
    info: RegionInfo,
    fd: Option<Fd>,
}

/// A vfio-user device (client side).
#[derive(Debug)]
pub struct UserDevice {
    inner: Arc<Inner>,
    info: DeviceInfo,
    regions: Vec<UserRegion>,
    version: (u16, u16),
}

/// Default reply timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

impl UserDevice {
    /// Connect to the server socket at `path` and negotiate.
    pub fn connect(path: impl AsRef<Path>) -> Result<Self> {
        let p = path.as_ref();
        let sock = UnixStream::connect(p).map_err(|e| VfioError::Sys {
            op: "connect",
            target: p.display().to_string(),
            source: crate::sys::io_errno(&e),
        })?;
        Self::from_stream(sock, RealSys::shared())
    }

    /// Use an already connected stream (e.g. one end of `UnixStream::pair`). `sys` is used for
    /// received descriptors and mappings.
    pub fn from_stream(sock: UnixStream, sys: Arc<dyn Sys>) -> Result<Self> {
        Self::from_stream_timeout(sock, sys, DEFAULT_TIMEOUT)
    }

    /// As [`from_stream`](Self::from_stream), waiting at most `timeout` for each reply (the
    /// handshake included).
    pub fn from_stream_timeout(
        sock: UnixStream,
        sys: Arc<dyn Sys>,
        timeout: Duration,
    ) -> Result<Self> {
        sock.set_read_timeout(Some(timeout))
            .map_err(|e| VfioError::Sys {
                op: "setsockopt(SO_RCVTIMEO)",
                target: "vfio-user socket".into(),
                source: crate::sys::io_errno(&e),
            })?;
        let mut inner = Inner {
            conn: Mutex::new(Conn { sock, next_id: 0 }),
            sys,
            max_xfer: 1 << 20,
            max_fds: 8,
        };
        // VERSION.
        let caps = format!(
            "{{\"capabilities\":{{\"max_msg_fds\":{},\"max_data_xfer_size\":{}}}}}\0",
            16,
            1 << 20
        );
        let mut p = proto::Version {
            major: proto::VERSION_MAJOR,
            minor: proto::VERSION_MINOR,
        }
        .as_bytes()
        .to_vec();
        p.extend_from_slice(caps.as_bytes());
        let (body, _) = inner.request(proto::CMD_VERSION, &p, &[])?;
        let (v, json) = proto::Version::read_from_prefix(&body)
            .map_err(|_| proto_err("VERSION", "short reply"))?;
        if v.major != proto::VERSION_MAJOR || v.minor > proto::VERSION_MINOR {
            return Err(proto_err(
                "VERSION",
                format!(
                    "server speaks {}.{}, we speak {}.{}",
                    v.major,
                    v.minor,
                    proto::VERSION_MAJOR,
                    proto::VERSION_MINOR
                ),
            ));
        }
        let json = String::from_utf8_lossy(json);
        if let Some(n) = json_number(&json, "max_data_xfer_size") {
            inner.max_xfer = usize::try_from(n).unwrap_or(usize::MAX).clamp(4, 1 << 20);
        }
        if let Some(n) = json_number(&json, "max_msg_fds") {
            inner.max_fds = usize::try_from(n).unwrap_or(usize::MAX).min(16);
        }
        let inner = Arc::new(inner);
        // DEVICE_GET_INFO.
        let req = proto::DeviceInfo {
            argsz: 16,
            ..Default::default()
        };
        let (body, _) = inner.request(proto::CMD_DEVICE_GET_INFO, req.as_bytes(), &[])?;
        let (di, _) = proto::DeviceInfo::read_from_prefix(&body)
            .map_err(|_| proto_err("DEVICE_GET_INFO", "short reply"))?;
        if di.num_regions > 64 || di.num_irqs > 64 {
            return Err(proto_err(
                "DEVICE_GET_INFO",
                format!("{} regions / {} irqs", di.num_regions, di.num_irqs),
            ));
        }
        let info = DeviceInfo {
            flags: DeviceFlags::from_bits_retain(di.flags),
            num_regions: di.num_regions,
            num_irqs: di.num_irqs,
        };
        let mut regions = Vec::new();
        for index in 0..di.num_regions {
            regions.push(Self::query_region(&inner, index)?);
        }
        Ok(UserDevice {
            inner,
            info,
            regions,
            version: (v.major, v.minor),
        })
    }

    fn query_region(inner: &Inner, index: u32) -> Result<UserRegion> {
        let mut argsz = 256u32;
        for _ in 0..2 {
            let req = proto::RegionInfo {
                argsz,
                index,
                ..Default::default()
            };
            let (body, mut fds) =
                inner.request(proto::CMD_DEVICE_GET_REGION_INFO, req.as_bytes(), &[])?;
            let (ri, _) = proto::RegionInfo::read_from_prefix(&body)
                .map_err(|_| proto_err("DEVICE_GET_REGION_INFO", "short reply"))?;
            if ri.index != index {
                return Err(proto_err(
                    "DEVICE_GET_REGION_INFO",
                    format!("asked for region {index}, got {}", ri.index),
                ));
            }
            if ri.argsz > argsz && ri.cap_offset == 0 && ri.argsz <= 1 << 16 {
                argsz = ri.argsz;
                continue;
            }
            let info = RegionInfo::parse(index, &body)?;
            return Ok(UserRegion {
                info,
                fd: if fds.is_empty() {
                    None
                } else {
                    Some(fds.remove(0))
                },
            });
        }
        Err(proto_err(
            "DEVICE_GET_REGION_INFO",
            "region info kept growing",
        ))
    }

    /// Negotiated protocol version.
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// Change the reply timeout (every request waits at most this long).
    pub fn set_timeout(&self, t: Duration) -> Result<()> {
        self.inner
            .lock()
            .sock
            .set_read_timeout(Some(t))
            .map_err(|e| VfioError::Sys {
                op: "setsockopt(SO_RCVTIMEO)",
                target: "vfio-user socket".into(),
                source: crate::sys::io_errno(&e),
            })
    }

    fn region(&self, index: u32) -> Result<&UserRegion> {
        self.regions
            .get(index as usize)
            .ok_or(VfioError::NoSuchRegion {
                index,
                count: self.info.num_regions,
            })
    }

    fn check(&self, index: u32, offset: u64, len: usize) -> Result<()> {
        let r = self.region(index)?;
        if crate::region::exceeds(offset.checked_add(len as u64), r.info.size) {
            return Err(VfioError::OutOfBounds {
                offset,
                width: len,
                len: r.info.size,
            });
        }
        Ok(())
    }
}

impl VfioDevice for UserDevice {
    fn sys(&self) -> &Arc<dyn Sys> {
        &self.inner.sys
    }

    fn info(&self) -> DeviceInfo {
        self.info
    }

    fn region_info(&self, index: u32) -> Result<RegionInfo> {
        Ok(self.region(index)?.info.clone())
    }

    fn region_read(&self, index: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.check(index, offset, buf.len())?;
        self.inner.region_read(index, offset, buf)
    }

    fn region_write(&self, index: u32, offset: u64, data: &[u8]) -> Result<()> {
        self.check(index, offset, data.len())?;
        self.inner.region_write(index, offset, data)
    }

    fn bar(&self, index: u32) -> Result<Arc<dyn RegisterIo>> {
        let r = self.region(index)?;
        let mut windows = Vec::new();
        if let Some(fd) = &r.fd {
            for area in r.info.mmap_areas() {
                let len =
                    usize::try_from(area.size).map_err(|_| proto_err("mmap", "area too large"))?;
                let map = self
                    .inner
                    .sys
                    .mmap(fd.raw(), r.info.offset + area.offset, len)?;
                windows.push(MmioRegion::new(Arc::new(map), area.offset)?);
            }
        }
        Ok(Arc::new(UserRegionIo {
            inner: self.inner.clone(),
            index,
            len: r.info.size,
            readable: r.info.flags.contains(RegionFlags::READ),
            windows,
        }))
    }

    fn irq_info(&self, index: u32) -> Result<IrqInfo> {
        let req = proto::IrqInfo {
            argsz: 16,
            index,
            ..Default::default()
        };
        let (body, _) = self
            .inner
            .request(proto::CMD_DEVICE_GET_IRQ_INFO, req.as_bytes(), &[])?;
        let (ii, _) = proto::IrqInfo::read_from_prefix(&body)
            .map_err(|_| proto_err("DEVICE_GET_IRQ_INFO", "short reply"))?;
        Ok(IrqInfo {
            index: ii.index,
            flags: ii.flags,
            count: ii.count,
        })
    }

    fn set_irq_eventfds(&self, index: u32, start: u32, fds: &[RawFd]) -> Result<()> {
        use vfio_bindings::bindings::vfio::{
            VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD,
        };
        if fds.len() > self.inner.max_fds {
            return Err(VfioError::InvalidArgument {
                op: "DEVICE_SET_IRQS",
                reason: format!(
                    "{} eventfds, server accepts {} per message",
                    fds.len(),
                    self.inner.max_fds
                ),
            });
        }
        if fds.iter().any(|&fd| fd < 0) {
            return Err(VfioError::InvalidArgument {
                op: "DEVICE_SET_IRQS",
                reason: "vfio-user cannot pass -1 (unconnected) eventfds".into(),
            });
        }
        let req = proto::IrqSet {
            argsz: 20,
            flags: VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
            index,
            start,
            count: fds.len() as u32,
        };
        self.inner
            .request(proto::CMD_DEVICE_SET_IRQS, req.as_bytes(), fds)
            .map(drop)
    }

    fn disable_irqs(&self, index: u32) -> Result<()> {
        use vfio_bindings::bindings::vfio::{VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_NONE};
        let req = proto::IrqSet {
            argsz: 20,
            flags: VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
            index,
            start: 0,
            count: 0,
        };
        self.inner
            .request(proto::CMD_DEVICE_SET_IRQS, req.as_bytes(), &[])
            .map(drop)
    }

    fn reset(&self) -> Result<()> {
        self.inner
            .request(proto::CMD_DEVICE_RESET, &[], &[])
            .map(drop)
    }

    fn dma_map(&self, mem: &DmaMemory, offset: u64, len: u64, iova: u64) -> Result<u64> {
        if crate::region::exceeds(offset.checked_add(len), mem.len() as u64) || len == 0 {
            return Err(VfioError::OutOfBounds {
                offset,
                width: usize::try_from(len).unwrap_or(usize::MAX),
                len: mem.len() as u64,
            });
        }
        let req = proto::DmaMap {
            argsz: 32,
            flags: proto::DMA_READ | proto::DMA_WRITE,
            offset,
            address: iova,
            size: len,
        };
        self.inner
            .request(proto::CMD_DMA_MAP, req.as_bytes(), &[mem.fd()])
            .map(|_| iova)
    }

    fn dma_unmap(&self, addr: u64, len: u64) -> Result<()> {
        let req = proto::DmaUnmap {
            argsz: 24,
            flags: 0,
            address: addr,
            size: len,
        };
        self.inner
            .request(proto::CMD_DMA_UNMAP, req.as_bytes(), &[])
            .map(drop)
    }
}

/// Register access over vfio-user: mmapped windows when the server passed an fd, else
/// `REGION_READ`/`REGION_WRITE` messages (one round trip per register access).
#[derive(Debug)]
struct UserRegionIo {
    inner: Arc<Inner>,
    index: u32,
    len: u64,
    readable: bool,
    windows: Vec<MmioRegion>,
}

impl UserRegionIo {
    fn check(&self, offset: u64) -> Result<()> {
        if !offset.is_multiple_of(4) || crate::region::exceeds(offset.checked_add(4), self.len) {
            return Err(VfioError::OutOfBounds {
                offset,
                width: 4,
                len: self.len,
            });
        }
        Ok(())
    }
    fn window(&self, offset: u64) -> Option<&MmioRegion> {
        self.windows
            .iter()
            .find(|w| offset >= w.base() && offset + 4 <= w.base() + w.len() as u64)
    }
}

impl RegisterIo for UserRegionIo {
    fn len(&self) -> u64 {
        self.len
    }
    fn read32(&self, offset: u64) -> Result<u32> {
        self.check(offset)?;
        if let Some(w) = self.window(offset) {
            return w.read32(offset - w.base());
        }
        if !self.readable {
            return Err(proto_err(
                "REGION_READ",
                format!("region {} is not readable", self.index),
            ));
        }
        let mut b = [0u8; 4];
        self.inner.region_read(self.index, offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn write32(&self, offset: u64, value: u32) -> Result<()> {
        self.check(offset)?;
        if let Some(w) = self.window(offset) {
            return w.write32(offset - w.base(), value);
        }
        self.inner
            .region_write(self.index, offset, &value.to_le_bytes())
    }
}

#[cfg(test)]
mod tests;

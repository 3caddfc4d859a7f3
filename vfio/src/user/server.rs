//! A minimal vfio-user server: the protocol loop around a device [`Backend`].
//!
//! The server answers `VERSION`, `DEVICE_GET_INFO`, `DEVICE_GET_REGION_INFO`,
//! `DEVICE_GET_IRQ_INFO`, `DEVICE_SET_IRQS`, `REGION_READ`/`WRITE`, `DMA_MAP`/`UNMAP` and
//! `DEVICE_RESET`; everything device-specific is the backend's. It maps the client's DMA memory
//! (the memfds passed with `DMA_MAP`) so the device can read and write host memory by IOVA
//! ([`ServerCtx::dma_read`], …), and keeps the client's eventfds so the device can raise
//! interrupts ([`ServerCtx::trigger`]). Malformed requests get error replies (`EINVAL`,
//! `ENOENT`, …), never a panic.
//!
//! A device model with its own timing (packets arriving from a simulated fabric) polls
//! [`Server::socket`] together with its other inputs and calls [`Server::serve_one`] when the
//! socket is readable; between requests it can use [`Server::parts`] to act on its own.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use nix::errno::Errno;
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_REGION_INFO_FLAG_CAPS, VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
use zerocopy::{FromBytes, IntoBytes};

use super::proto;
use super::{recv_message, send_message};
use crate::device::EventFd;
use crate::error::{Result, VfioError};
use crate::region::VolatileSpan;
use crate::sys::{Fd, Mapping, Sys};

/// How the server describes one region.
#[derive(Debug, Clone, Default)]
pub struct ServerRegion {
    /// `VFIO_REGION_INFO_FLAG_*` (`CAPS` is added when `caps` is non-empty).
    pub flags: u32,
    /// Size (0 = absent).
    pub size: u64,
    /// Raw capability chain placed after the 32-byte info (`next` offsets from its start).
    pub caps: Vec<u8>,
    /// A descriptor the client may mmap (with `MMAP` in `flags`) and the region's offset in it.
    pub mmap_fd: Option<(RawFd, u64)>,
}

/// The device behind the server.
pub trait Backend {
    /// `(VFIO_DEVICE_FLAGS_*, number of regions, number of IRQ indexes)`.
    fn device_info(&self) -> (u32, u32, u32);
    /// Region `index` (None: beyond `num_regions`).
    fn region(&self, index: u32) -> Option<ServerRegion>;
    /// Vectors of IRQ index `index`.
    fn irq_count(&self, index: u32) -> u32;
    /// Handle a read of `buf.len()` bytes (bounds already checked against the region size).
    fn region_read(
        &mut self,
        ctx: &mut ServerCtx,
        index: u32,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), Errno>;
    /// Handle a write (bounds already checked).
    fn region_write(
        &mut self,
        ctx: &mut ServerCtx,
        index: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), Errno>;
    /// `DEVICE_RESET`.
    fn reset(&mut self, _ctx: &mut ServerCtx) -> Result<(), Errno> {
        Ok(())
    }
}

#[derive(Debug)]
struct DmaRegion {
    len: u64,
    map: Arc<Mapping>,
    _fd: Fd,
}

/// What the device can reach: the client's DMA memory and its interrupt eventfds.
#[derive(Debug)]
pub struct ServerCtx {
    sys: Arc<dyn Sys>,
    dma: BTreeMap<u64, DmaRegion>,
    irqs: BTreeMap<u32, Vec<Option<EventFd>>>,
}

impl ServerCtx {
    fn span(&self, iova: u64, len: usize) -> Result<VolatileSpan, Errno> {
        let (&base, r) = self.dma.range(..=iova).next_back().ok_or(Errno::EFAULT)?;
        let off = iova - base;
        if crate::region::exceeds(off.checked_add(len as u64), r.len) {
            return Err(Errno::EFAULT);
        }
        let off = usize::try_from(off).map_err(|_| Errno::EFAULT)?;
        VolatileSpan::of(&r.map, off, len).map_err(|_| Errno::EFAULT)
    }

    /// Device reads host memory (DMA) at `iova`; `EFAULT` if it is not mapped.
    pub fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let s = self.span(iova, buf.len())?;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = s.read8(i as u64).map_err(|_| Errno::EFAULT)?;
        }
        Ok(())
    }

    /// Device writes host memory (DMA) at `iova`; `EFAULT` if it is not mapped.
    pub fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), Errno> {
        let s = self.span(iova, data.len())?;
        for (i, b) in data.iter().enumerate() {
            s.write8(i as u64, *b).map_err(|_| Errno::EFAULT)?;
        }
        Ok(())
    }

    /// Volatile little-endian 32-bit DMA read (aligned `iova`).
    pub fn dma_read32(&self, iova: u64) -> Result<u32, Errno> {
        self.span(iova, 4)?.read32(0).map_err(|_| Errno::EFAULT)
    }

    /// Volatile little-endian 32-bit DMA write (aligned `iova`): lets a model write a CQE's
    /// phase word last, as one store.
    pub fn dma_write32(&self, iova: u64, v: u32) -> Result<(), Errno> {
        self.span(iova, 4)?.write32(0, v).map_err(|_| Errno::EFAULT)
    }

    /// Mapped DMA ranges as (IOVA, length).
    pub fn dma_ranges(&self) -> Vec<(u64, u64)> {
        self.dma.iter().map(|(&a, r)| (a, r.len)).collect()
    }

    /// Signal vector `vector` of IRQ `index`. Returns false when no eventfd is connected.
    pub fn trigger(&self, index: u32, vector: u32) -> Result<bool> {
        match self.irqs.get(&index).and_then(|v| v.get(vector as usize)) {
            Some(Some(e)) => e.signal().map(|()| true),
            _ => Ok(false),
        }
    }
}

/// One client connection.
#[derive(Debug)]
pub struct Server<B> {
    sock: UnixStream,
    backend: B,
    ctx: ServerCtx,
    max_xfer: usize,
}

/// Largest REGION_READ/WRITE the server accepts.
pub const SERVER_MAX_XFER: usize = 1 << 20;

impl<B: Backend> Server<B> {
    /// Serve `backend` on a connected socket; `sys` maps DMA memory and owns received fds.
    pub fn new(sock: UnixStream, sys: Arc<dyn Sys>, backend: B) -> Self {
        Server {
            sock,
            backend,
            ctx: ServerCtx {
                sys,
                dma: BTreeMap::new(),
                irqs: BTreeMap::new(),
            },
            max_xfer: SERVER_MAX_XFER,
        }
    }

    /// The socket (to poll for readability).
    pub fn socket(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// The backend and the context, for device activity between requests.
    pub fn parts(&mut self) -> (&mut B, &mut ServerCtx) {
        (&mut self.backend, &mut self.ctx)
    }

    /// Serve requests until the client disconnects (Ok) or the socket fails (Err).
    pub fn run(&mut self) -> Result<()> {
        loop {
            match self.serve_one() {
                Ok(()) => {}
                Err(VfioError::Sys {
                    source: Errno::ECONNRESET,
                    ..
                }) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Read one request and answer it (blocks until a request arrives or the socket's read
    /// timeout expires).
    pub fn serve_one(&mut self) -> Result<()> {
        let sock = self.sock.as_raw_fd();
        let (hdr, payload, fds) = recv_message(&self.ctx.sys, sock)?;
        if hdr.flags & proto::FLAG_TYPE_MASK != proto::FLAG_COMMAND {
            return Err(VfioError::Protocol {
                op: proto::command_name(hdr.command),
                reason: "server received a reply".into(),
            });
        }
        let mut reply_fds: Vec<RawFd> = Vec::new();
        let result = self.handle(hdr.command, &payload, fds, &mut reply_fds);
        if hdr.flags & proto::FLAG_NO_REPLY != 0 {
            return Ok(());
        }
        let (body, flags, error) = match result {
            Ok(body) => (body, proto::FLAG_REPLY, 0),
            Err(e) => {
                tracing::debug!("vfio-user {}: error {e}", proto::command_name(hdr.command));
                reply_fds.clear();
                (Vec::new(), proto::FLAG_REPLY | proto::FLAG_ERROR, e as u32)
            }
        };
        let r = proto::Header {
            msg_id: hdr.msg_id,
            command: hdr.command,
            msg_size: u32::try_from(16 + body.len()).unwrap_or(u32::MAX),
            flags,
            error,
        };
        send_message(sock, r, &body, &reply_fds)
    }

    fn handle(
        &mut self,
        cmd: u16,
        p: &[u8],
        mut fds: Vec<Fd>,
        reply_fds: &mut Vec<RawFd>,
    ) -> Result<Vec<u8>, Errno> {
        match cmd {
            proto::CMD_VERSION => {
                let (v, _) = proto::Version::read_from_prefix(p).map_err(|_| Errno::EINVAL)?;
                if v.major != proto::VERSION_MAJOR {
                    return Err(Errno::ENOTSUP);
                }
                let mut out = proto::Version {
                    major: proto::VERSION_MAJOR,
                    minor: v.minor.min(proto::VERSION_MINOR),
                }
                .as_bytes()
                .to_vec();
                out.extend_from_slice(
                    format!(
                        "{{\"capabilities\":{{\"max_msg_fds\":16,\"max_data_xfer_size\":{}}}}}\0",
                        self.max_xfer
                    )
                    .as_bytes(),
                );
                Ok(out)
            }
            proto::CMD_DEVICE_GET_INFO => {
                let (flags, num_regions, num_irqs) = self.backend.device_info();
                Ok(proto::DeviceInfo {
                    argsz: 16,
                    flags,
                    num_regions,
                    num_irqs,
                }
                .as_bytes()
                .to_vec())
            }
            proto::CMD_DEVICE_GET_REGION_INFO => {
                let (req, _) = proto::RegionInfo::read_from_prefix(p).map_err(|_| Errno::EINVAL)?;
                let r = self.backend.region(req.index).ok_or(Errno::EINVAL)?;
                let need = 32 + r.caps.len() as u32;
                let fits = !r.caps.is_empty() && req.argsz >= need;
                let mut flags = r.flags;
                if !r.caps.is_empty() {
                    flags |= VFIO_REGION_INFO_FLAG_CAPS;
                }
                let mut out = proto::RegionInfo {
                    argsz: need,
                    flags,
                    index: req.index,
                    cap_offset: if fits { 32 } else { 0 },
                    size: r.size,
                    offset: r.mmap_fd.map_or(0, |(_, o)| o),
                }
                .as_bytes()
                .to_vec();
                if fits {
                    out.extend_from_slice(&r.caps);
                }
                if let Some((fd, _)) = r.mmap_fd {
                    reply_fds.push(fd);
                }
                Ok(out)
            }
            proto::CMD_DEVICE_GET_IRQ_INFO => {
                let (req, _) = proto::IrqInfo::read_from_prefix(p).map_err(|_| Errno::EINVAL)?;
                let (_, _, n) = self.backend.device_info();
                if req.index >= n {
                    return Err(Errno::EINVAL);
                }
                Ok(proto::IrqInfo {
                    argsz: 16,
                    flags: vfio_bindings::bindings::vfio::VFIO_IRQ_INFO_EVENTFD,
                    index: req.index,
                    count: self.backend.irq_count(req.index),
                }
                .as_bytes()
                .to_vec())
            }
            proto::CMD_DEVICE_SET_IRQS => {
                let (req, _) = proto::IrqSet::read_from_prefix(p).map_err(|_| Errno::EINVAL)?;
                if req.flags & VFIO_IRQ_SET_ACTION_TRIGGER == 0 {
                    return Err(Errno::ENOTSUP);
                }
                if req.flags & VFIO_IRQ_SET_DATA_NONE != 0 && req.count == 0 {
                    self.ctx.irqs.remove(&req.index);
                    return Ok(Vec::new());
                }
                if req.flags & VFIO_IRQ_SET_DATA_EVENTFD == 0 || fds.len() != req.count as usize {
                    return Err(Errno::EINVAL);
                }
                let end = req.start.checked_add(req.count).ok_or(Errno::EINVAL)?;
                if end > self.backend.irq_count(req.index) {
                    return Err(Errno::EINVAL);
                }
                let v = self.ctx.irqs.entry(req.index).or_default();
                if v.len() < end as usize {
                    v.resize_with(end as usize, || None);
                }
                for (slot, fd) in v[req.start as usize..end as usize]
                    .iter_mut()
                    .zip(fds.drain(..))
                {
                    *slot = Some(EventFd::from_fd(fd));
                }
                Ok(Vec::new())
            }
            proto::CMD_REGION_READ | proto::CMD_REGION_WRITE => {
                let (req, data) =
                    proto::RegionAccess::read_from_prefix(p).map_err(|_| Errno::EINVAL)?;
                let r = self.backend.region(req.region).ok_or(Errno::EINVAL)?;
                let count = req.count as usize;
                if count > self.max_xfer
                    || crate::region::exceeds(req.offset.checked_add(count as u64), r.size)
                {
                    return Err(Errno::EINVAL);
                }
                if cmd == proto::CMD_REGION_READ {
                    if r.flags & VFIO_REGION_INFO_FLAG_READ == 0 {
                        return Err(Errno::EACCES);
                    }
                    let mut out = req.as_bytes().to_vec();
                    out.resize(16 + count, 0);
                    self.backend.region_read(
                        &mut self.ctx,
                        req.region,
                        req.offset,
                        &mut out[16..],
                    )?;
                    Ok(out)
                } else {
                    if r.flags & VFIO_REGION_INFO_FLAG_WRITE == 0 {
                        return Err(Errno::EACCES);
                    }
                    let data = data.get(..count).ok_or(Errno::EINVAL)?;
                    self.backend
                        .region_write(&mut self.ctx, req.region, req.offset, data)?;
                    Ok(req.as_bytes().to_vec())
                }
            }
            proto::CMD_DMA_MAP => {
                let (req, _) = proto::DmaMap::read_from_prefix(p).map_err(|_| Errno::EINVAL)?;
                let fd = fds.pop().ok_or(Errno::EBADF)?;
                let end = req.address.checked_add(req.size).ok_or(Errno::EINVAL)?;
                if req.size == 0 {
                    return Err(Errno::EINVAL);
                }
                if self
                    .ctx
                    .dma
                    .iter()
                    .any(|(&a, r)| a < end && req.address < a + r.len)
                {
                    return Err(Errno::EEXIST);
                }
                let len = usize::try_from(req.size).map_err(|_| Errno::EINVAL)?;
                let map = self
                    .ctx
                    .sys
                    .mmap(fd.raw(), req.offset, len)
                    .map_err(|e| e.errno().unwrap_or(Errno::EINVAL))?;
                self.ctx.dma.insert(
                    req.address,
                    DmaRegion {
                        len: req.size,
                        map: Arc::new(map),
                        _fd: fd,
                    },
                );
                Ok(Vec::new())
            }
            proto::CMD_DMA_UNMAP => {
                let (req, _) = proto::DmaUnmap::read_from_prefix(p).map_err(|_| Errno::EINVAL)?;
                match self.ctx.dma.get(&req.address) {
                    Some(r) if r.len == req.size => {
                        self.ctx.dma.remove(&req.address);
                        Ok(req.as_bytes().to_vec())
                    }
                    _ => Err(Errno::ENOENT),
                }
            }
            proto::CMD_DEVICE_RESET => self.backend.reset(&mut self.ctx).map(|()| Vec::new()),
            _ => Err(Errno::ENOSYS),
        }
    }
}

//! The client against the server over real UNIX sockets, with a small fake device behind it.

use std::os::unix::net::{UnixListener, UnixStream};
use std::thread::JoinHandle;

use super::server::{Backend, Server, ServerCtx, ServerRegion};
use super::*;
use crate::device::{PciCommand, MSIX_IRQ_INDEX, PCI_COMMAND};
use crate::dma::{Dma, HugePages};
use crate::region::RegionCap;
use crate::sys::fake::sparse_mmap_cap;
use vfio_bindings::bindings::vfio::{
    VFIO_DEVICE_FLAGS_PCI, VFIO_REGION_INFO_FLAG_MMAP, VFIO_REGION_INFO_FLAG_READ,
    VFIO_REGION_INFO_FLAG_WRITE,
};

const RW: u32 = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
/// Doorbell: DMA-read `LEN` bytes at `ADDR`, write them reversed right after, raise MSI-X 1.
const DOORBELL: u64 = 0x100;
const ADDR_LO: u64 = 0x108;
const ADDR_HI: u64 = 0x10C;
const LEN: u64 = 0x110;
const FAILING: u64 = 0xFFC;

struct TestDev {
    bar0: Vec<u8>,
    cfg: Vec<u8>,
    bar2: DmaMemory,
    resets: u32,
}

impl TestDev {
    fn new() -> Self {
        let mut cfg = vec![0u8; 256];
        cfg[..4].copy_from_slice(&[0xED, 0x1D, 0x01, 0xA5]);
        TestDev {
            bar0: vec![0; 4096],
            cfg,
            bar2: DmaMemory::new(&RealSys::shared(), 4096, HugePages::Never).unwrap(),
            resets: 0,
        }
    }
    fn reg(&self, off: u64) -> u32 {
        let o = off as usize;
        u32::from_le_bytes(self.bar0[o..o + 4].try_into().unwrap())
    }
}

impl Backend for TestDev {
    fn device_info(&self) -> (u32, u32, u32) {
        (VFIO_DEVICE_FLAGS_PCI, 9, 5)
    }
    fn region(&self, index: u32) -> Option<ServerRegion> {
        match index {
            0 => Some(ServerRegion {
                flags: RW,
                size: 4096,
                ..Default::default()
            }),
            2 => Some(ServerRegion {
                flags: RW | VFIO_REGION_INFO_FLAG_MMAP,
                size: 4096,
                caps: sparse_mmap_cap(&[(0, 4096)], 0),
                mmap_fd: Some((self.bar2.fd(), 0)),
            }),
            7 => Some(ServerRegion {
                flags: RW,
                size: 256,
                ..Default::default()
            }),
            1 | 3..=6 | 8 => Some(ServerRegion::default()),
            _ => None,
        }
    }
    fn irq_count(&self, index: u32) -> u32 {
        if index == MSIX_IRQ_INDEX {
            4
        } else {
            1
        }
    }
    fn region_read(
        &mut self,
        _ctx: &mut ServerCtx,
        index: u32,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), Errno> {
        let o = offset as usize;
        match index {
            0 if offset == FAILING => Err(Errno::EIO),
            0 => {
                buf.copy_from_slice(&self.bar0[o..o + buf.len()]);
                Ok(())
            }
            2 => {
                let s = self.bar2.span(0, 4096).map_err(|_| Errno::EFAULT)?;
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = s.read8(offset + i as u64).map_err(|_| Errno::EFAULT)?;
                }
                Ok(())
            }
            7 => {
                buf.copy_from_slice(&self.cfg[o..o + buf.len()]);
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }
    fn region_write(
        &mut self,
        ctx: &mut ServerCtx,
        index: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), Errno> {
        let o = offset as usize;
        match index {
            0 => {
                self.bar0[o..o + data.len()].copy_from_slice(data);
                if offset == DOORBELL {
                    let iova = u64::from(self.reg(ADDR_LO)) | (u64::from(self.reg(ADDR_HI)) << 32);
                    let mut b = vec![0u8; self.reg(LEN) as usize];
                    ctx.dma_read(iova, &mut b)?;
                    b.reverse();
                    ctx.dma_write(iova + b.len() as u64, &b)?;
                    ctx.trigger(MSIX_IRQ_INDEX, 1).map_err(|_| Errno::EIO)?;
                }
                Ok(())
            }
            7 => {
                self.cfg[o..o + data.len()].copy_from_slice(data);
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }
    fn reset(&mut self, _ctx: &mut ServerCtx) -> Result<(), Errno> {
        self.resets += 1;
        self.bar0.fill(0);
        Ok(())
    }
}

/// What the server thread reports when the client hangs up: resets seen, DMA still mapped.
type ServerEnd = JoinHandle<(u32, Vec<(u64, u64)>)>;

fn start() -> (UserDevice, ServerEnd) {
    let (a, b) = UnixStream::pair().unwrap();
    let h = std::thread::spawn(move || {
        let mut s = Server::new(b, RealSys::shared(), TestDev::new());
        s.run().unwrap();
        let (dev, ctx) = s.parts();
        (dev.resets, ctx.dma_ranges())
    });
    let dev = UserDevice::from_stream(a, RealSys::shared()).unwrap();
    (dev, h)
}

#[test]
fn handshake_and_discovery() {
    let (dev, h) = start();
    assert_eq!(dev.version(), (0, 1));
    assert_eq!(dev.info().num_regions, 9);
    assert_eq!(dev.info().num_irqs, 5);
    assert!(dev.info().flags.contains(DeviceFlags::PCI));
    let r0 = dev.region_info(0).unwrap();
    assert_eq!(
        (r0.size, r0.flags),
        (4096, RegionFlags::READ | RegionFlags::WRITE)
    );
    let r2 = dev.region_info(2).unwrap();
    assert!(r2.flags.contains(RegionFlags::MMAP | RegionFlags::CAPS));
    assert_eq!(
        r2.caps,
        vec![RegionCap::SparseMmap(vec![crate::SparseArea {
            offset: 0,
            size: 4096
        }])]
    );
    assert_eq!(dev.region_info(1).unwrap().size, 0);
    assert!(matches!(
        dev.region_info(9),
        Err(VfioError::NoSuchRegion { .. })
    ));
    assert_eq!(dev.config_read16(0).unwrap(), 0x1DED);
    assert_eq!(dev.config_read16(2).unwrap(), 0xA501);
    assert_eq!(dev.irq_info(MSIX_IRQ_INDEX).unwrap().count, 4);
    drop(dev);
    h.join().unwrap();
}

#[test]
fn registers_over_messages_and_errors() {
    let (dev, h) = start();
    let bar = dev.bar(0).unwrap();
    bar.write32(0x40, 0xDEAD_BEEF).unwrap();
    assert_eq!(bar.read32(0x40).unwrap(), 0xDEAD_BEEF);
    let mut b = [0u8; 4];
    dev.region_read(0, 0x40, &mut b).unwrap();
    assert_eq!(b, 0xDEAD_BEEFu32.to_le_bytes());
    // Client-side checks: nothing is sent for these.
    assert!(matches!(
        bar.read32(4096),
        Err(VfioError::OutOfBounds { .. })
    ));
    assert!(matches!(bar.read32(2), Err(VfioError::OutOfBounds { .. })));
    assert!(matches!(
        dev.region_write(0, 4094, &[0; 4]),
        Err(VfioError::OutOfBounds { .. })
    ));
    // A backend error comes back as the server's errno, naming the command.
    let e = bar.read32(FAILING).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                op: "REGION_READ",
                source: Errno::EIO
            }
        ),
        "{e}"
    );
    // Server-side validation: unknown commands and malformed requests are error replies.
    let e = dev.inner.request(99, &[], &[]).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                source: Errno::ENOSYS,
                ..
            }
        ),
        "{e}"
    );
    let bad = proto::RegionAccess {
        offset: 4000,
        region: 0,
        count: 200,
    };
    let e = dev
        .inner
        .request(proto::CMD_REGION_READ, bad.as_bytes(), &[])
        .unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                source: Errno::EINVAL,
                ..
            }
        ),
        "{e}"
    );
    let e = dev
        .inner
        .request(proto::CMD_DMA_MAP, &[0u8; 4], &[])
        .unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                source: Errno::EINVAL,
                ..
            }
        ),
        "{e}"
    );
    // The connection is still in sync after the errors.
    assert_eq!(bar.read32(0x40).unwrap(), 0xDEAD_BEEF);
    // Large transfers are split at max_data_xfer_size and reassembled.
    let big: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    dev.region_write(0, 0, &big).unwrap();
    let mut back = vec![0u8; 4092];
    dev.region_read(0, 0, &mut back).unwrap();
    assert_eq!(back[..], big[..4092]);
    drop((bar, dev));
    h.join().unwrap();
}

#[test]
fn mmapped_region_from_a_passed_fd() {
    let (dev, h) = start();
    let bar2 = dev.bar(2).unwrap();
    bar2.write32(0x80, 0x0102_0304).unwrap(); // through the shared mapping
    let mut b = [0u8; 4];
    dev.region_read(2, 0x80, &mut b).unwrap(); // the server reads its memfd
    assert_eq!(u32::from_le_bytes(b), 0x0102_0304);
    assert_eq!(bar2.read32(0x80).unwrap(), 0x0102_0304);
    drop((bar2, dev));
    h.join().unwrap();
}

#[test]
fn dma_and_interrupts_end_to_end() {
    let (dev, h) = start();
    let dev: Arc<dyn VfioDevice> = Arc::new(dev);
    assert_eq!(
        dev.enable_bus_master().unwrap(),
        PciCommand::MEMORY | PciCommand::BUS_MASTER
    );
    assert_eq!(dev.config_read16(PCI_COMMAND).unwrap(), 0b110);
    let irqs = dev.enable_msix(4).unwrap();
    let dma = Dma::new(
        dev.clone(),
        (0x1_0000_0000, 0x1_0010_0000),
        HugePages::Never,
    )
    .unwrap();
    let buf = dma.alloc(4096).unwrap();
    let other = dma.alloc(8192).unwrap();
    assert_ne!(buf.iova(), other.iova());
    let data: Vec<u8> = (1..=16).collect();
    buf.write_bytes(0, &data).unwrap();
    let bar = dev.bar(0).unwrap();
    bar.write32(ADDR_LO, buf.iova() as u32).unwrap();
    bar.write32(ADDR_HI, (buf.iova() >> 32) as u32).unwrap();
    bar.write32(LEN, 16).unwrap();
    bar.write32(DOORBELL, 1).unwrap();
    // The server DMA-wrote the reversed bytes into our memory and signalled vector 1.
    assert_eq!(irqs[1].wait(Duration::from_secs(5)).unwrap(), Some(1));
    assert_eq!(irqs[0].take().unwrap(), None);
    crate::dma::dma_rmb();
    let mut out = [0u8; 16];
    buf.read_bytes(16, &mut out).unwrap();
    let mut want = data.clone();
    want.reverse();
    assert_eq!(out[..], want[..]);
    // After unmapping, the device can no longer reach the buffer: the doorbell fails with
    // EFAULT from the server's DMA translation.
    dma.free(&buf).unwrap();
    let e = bar.write32(DOORBELL, 1).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                source: Errno::EFAULT,
                ..
            }
        ),
        "{e}"
    );
    assert!(matches!(
        dma.free(&buf),
        Err(VfioError::NotAllocated { .. })
    ));
    // Unmapping something the server does not have mapped is refused by the server.
    let e = dev.dma_unmap(0x42_0000, 4096).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                op: "DMA_UNMAP",
                source: Errno::ENOENT
            }
        ),
        "{e}"
    );
    // Overlapping maps are refused.
    let e = dev
        .dma_map(buf.memory(), 0, 4096, other.iova())
        .unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                op: "DMA_MAP",
                source: Errno::EEXIST
            }
        ),
        "{e}"
    );
    // IRQ errors.
    assert!(matches!(
        dev.enable_msix(5),
        Err(VfioError::InvalidArgument { .. })
    ));
    let e = dev
        .set_irq_eventfds(MSIX_IRQ_INDEX, 3, &[irqs[0].raw(), irqs[1].raw()])
        .unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                source: Errno::EINVAL,
                ..
            }
        ),
        "{e}"
    );
    dev.disable_irqs(MSIX_IRQ_INDEX).unwrap();
    dev.reset().unwrap();
    let other_iova = other.iova();
    drop((dma, bar, dev));
    let (resets, left) = h.join().unwrap();
    assert_eq!(resets, 1);
    assert!(
        left.is_empty(),
        "Dma::drop unmapped {other_iova:#x} too: {left:?}"
    );
}

#[test]
fn connect_by_path() {
    let dir = std::env::temp_dir().join(format!("vfio-user-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dev.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let h = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        Server::new(s, RealSys::shared(), TestDev::new())
            .run()
            .unwrap();
    });
    let dev = UserDevice::connect(&path).unwrap();
    assert_eq!(dev.info().num_regions, 9);
    drop(dev);
    h.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let e = UserDevice::connect(dir.join("nothing.sock")).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Sys {
                op: "connect",
                source: Errno::ENOENT,
                ..
            }
        ),
        "{e}"
    );
}

/// A misbehaving peer: reads one request and answers with `reply` (or not at all).
fn rogue(reply: Option<(proto::Header, Vec<u8>)>) -> (UnixStream, JoinHandle<()>) {
    let (a, b) = UnixStream::pair().unwrap();
    let h = std::thread::spawn(move || {
        let sys = RealSys::shared();
        let Ok((hdr, _, _)) = recv_message(&sys, b.as_raw_fd()) else {
            return;
        };
        if let Some((mut r, body)) = reply {
            if r.msg_id == u16::MAX {
                r.msg_id = hdr.msg_id;
            }
            r.msg_size = 16 + body.len() as u32;
            send_message(b.as_raw_fd(), r, &body, &[]).unwrap();
        }
        // Keep the socket open until the client gives up.
        let mut sink = [0u8; 1];
        let _ = std::io::Read::read(&mut &b, &mut sink);
    });
    (a, h)
}

#[test]
fn bounded_wait_for_a_silent_server() {
    let (a, h) = rogue(None);
    let t = std::time::Instant::now();
    let e = UserDevice::from_stream_timeout(a, RealSys::shared(), Duration::from_millis(100))
        .unwrap_err();
    assert!(
        matches!(&e, VfioError::Protocol { op: "VERSION", reason } if reason.contains("timeout")),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(4));
    h.join().unwrap();
}

#[test]
fn bad_replies_are_protocol_errors() {
    let reply = |msg_id: u16, flags: u32, error: u32| proto::Header {
        msg_id,
        command: proto::CMD_VERSION,
        msg_size: 0,
        flags,
        error,
    };
    // Wrong version.
    let body = proto::Version { major: 1, minor: 0 }.as_bytes().to_vec();
    let (a, h) = rogue(Some((reply(u16::MAX, proto::FLAG_REPLY, 0), body.clone())));
    let e = UserDevice::from_stream(a, RealSys::shared()).unwrap_err();
    assert!(e.to_string().contains("server speaks 1.0"), "{e}");
    h.join().unwrap();
    // Reply to another message id.
    let body = proto::Version { major: 0, minor: 1 }.as_bytes().to_vec();
    let (a, h) = rogue(Some((reply(77, proto::FLAG_REPLY, 0), body)));
    let e = UserDevice::from_stream(a, RealSys::shared()).unwrap_err();
    assert!(
        matches!(&e, VfioError::Protocol { reason, .. } if reason.contains("got id 77")),
        "{e}"
    );
    h.join().unwrap();
    // Error reply keeps the errno.
    let (a, h) = rogue(Some((
        reply(
            u16::MAX,
            proto::FLAG_REPLY | proto::FLAG_ERROR,
            Errno::ENOTSUP as u32,
        ),
        Vec::new(),
    )));
    let e = UserDevice::from_stream(a, RealSys::shared()).unwrap_err();
    assert!(
        matches!(
            e,
            VfioError::Remote {
                op: "VERSION",
                source: Errno::ENOTSUP
            }
        ),
        "{e}"
    );
    h.join().unwrap();
    // Truncated version payload.
    let (a, h) = rogue(Some((reply(u16::MAX, proto::FLAG_REPLY, 0), vec![0])));
    let e = UserDevice::from_stream(a, RealSys::shared()).unwrap_err();
    assert!(
        matches!(e, VfioError::Protocol { op: "VERSION", .. }),
        "{e}"
    );
    h.join().unwrap();
}

#[test]
fn peer_closing_mid_message_is_an_error_not_a_hang() {
    let (a, b) = UnixStream::pair().unwrap();
    // A header promising 100 bytes, then EOF.
    let hdr = proto::Header {
        msg_id: 0,
        command: 1,
        msg_size: 116,
        flags: 1,
        error: 0,
    };
    send_message(b.as_raw_fd(), hdr, &[], &[]).unwrap();
    drop(b);
    let e = recv_message(&RealSys::shared(), a.as_raw_fd()).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::ECONNRESET));
    // Oversized messages are refused before allocating.
    let (a, b) = UnixStream::pair().unwrap();
    let hdr = proto::Header {
        msg_id: 0,
        command: 1,
        msg_size: u32::MAX,
        flags: 1,
        error: 0,
    };
    send_message(b.as_raw_fd(), hdr, &[], &[]).unwrap();
    let e = recv_message(&RealSys::shared(), a.as_raw_fd()).unwrap_err();
    assert!(matches!(e, VfioError::Protocol { .. }), "{e}");
}

#[test]
fn json_capabilities() {
    let j = r#"{"capabilities":{"max_msg_fds": 8,"max_data_xfer_size":4096}}"#;
    assert_eq!(json_number(j, "max_msg_fds"), Some(8));
    assert_eq!(json_number(j, "max_data_xfer_size"), Some(4096));
    assert_eq!(json_number(j, "migration"), None);
    assert_eq!(json_number(r#"{"max_msg_fds":"x"}"#, "max_msg_fds"), None);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Arbitrary commands with arbitrary payloads: the server answers every one (success or
        /// an error reply with the same id) and stays in sync; it never panics or hangs.
        #[test]
        fn server_answers_arbitrary_requests(reqs in proptest::collection::vec((0u16..16, proptest::collection::vec(any::<u8>(), 0..64)), 1..20)) {
            let (a, b) = UnixStream::pair().unwrap();
            let h = std::thread::spawn(move || {
                let mut s = Server::new(b, RealSys::shared(), TestDev::new());
                s.run()
            });
            a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let sys = RealSys::shared();
            for (i, (cmd, payload)) in reqs.iter().enumerate() {
                // A doorbell write that slips through gets EFAULT (no DMA mapped): still a reply.
                let hdr = proto::Header { msg_id: i as u16, command: *cmd, msg_size: 16 + payload.len() as u32, flags: 0, error: 0 };
                send_message(a.as_raw_fd(), hdr, payload, &[]).unwrap();
                let (r, _, _) = recv_message(&sys, a.as_raw_fd()).unwrap();
                prop_assert_eq!(r.msg_id, i as u16);
                prop_assert_eq!(r.command, *cmd);
                prop_assert_eq!(r.flags & proto::FLAG_TYPE_MASK, proto::FLAG_REPLY);
            }
            drop(a);
            prop_assert!(h.join().unwrap().is_ok());
        }

        /// Region-info parsing never panics on arbitrary replies.
        #[test]
        fn region_info_parse_total(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = RegionInfo::parse(0, &bytes);
        }
    }
}

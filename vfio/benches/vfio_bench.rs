//! Costs of the vfio crate's access paths (run: `cargo bench -p vfio --bench vfio_bench`).
//!
//! * volatile 32-bit MMIO read/write through `MmioRegion` on a shared memfd mapping;
//! * copying a 256-byte MAD out of a `DmaBuffer` with volatile byte reads vs. the owner's
//!   zero-copy slice (`as_slice`);
//! * a register write over vfio-user as a `REGION_WRITE` message round trip, and through a
//!   server-passed mmap window;
//! * `Dma::alloc` + `free` over vfio-user (memfd + mmap + `DMA_MAP`/`DMA_UNMAP` messages).
#![allow(unsafe_code)]
#![allow(clippy::expect_used)] // a benchmark binary: a failed setup step may abort it

use std::hint::black_box;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use vfio::user::server::{Backend, Server, ServerCtx, ServerRegion};
use vfio::{Dma, DmaMemory, HugePages, RealSys, UserDevice, VfioDevice};

struct Dev {
    regs: Vec<u8>,
    shared: DmaMemory,
}

impl Backend for Dev {
    fn device_info(&self) -> (u32, u32, u32) {
        (2, 3, 3)
    }
    fn region(&self, index: u32) -> Option<ServerRegion> {
        match index {
            0 => Some(ServerRegion {
                flags: 3,
                size: 4096,
                ..Default::default()
            }),
            1 => Some(ServerRegion::default()),
            2 => Some(ServerRegion {
                flags: 7,
                size: 4096,
                caps: Vec::new(),
                mmap_fd: Some((self.shared.fd(), 0)),
            }),
            _ => None,
        }
    }
    fn irq_count(&self, _index: u32) -> u32 {
        4
    }
    fn region_read(
        &mut self,
        _: &mut ServerCtx,
        _: u32,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), Errno> {
        let o = offset as usize;
        buf.copy_from_slice(&self.regs[o..o + buf.len()]);
        Ok(())
    }
    fn region_write(
        &mut self,
        _: &mut ServerCtx,
        _: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), Errno> {
        let o = offset as usize;
        self.regs[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
}

fn per_op(what: &str, n: u64, f: impl FnMut(u64)) {
    let mut f = f;
    let t = Instant::now();
    for i in 0..n {
        f(i);
    }
    let el = t.elapsed();
    let ns = el.as_nanos() as f64 / n as f64;
    println!(
        "{what:<58} {n:>9} ops  {ns:>10.1} ns/op  {:>12.0} ops/s",
        1e9 / ns
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sys = RealSys::shared();
    let (a, b) = UnixStream::pair()?;
    let server = std::thread::spawn(move || {
        let dev = Dev {
            regs: vec![0; 4096],
            shared: DmaMemory::new(&RealSys::shared(), 4096, HugePages::Never).expect("memfd"),
        };
        let _ = Server::new(b, RealSys::shared(), dev).run();
    });
    let dev: Arc<dyn VfioDevice> = Arc::new(UserDevice::from_stream(a, sys.clone())?);

    // Local MMIO-style access on a shared mapping (what a mmapped BAR costs the CPU).
    let mem = DmaMemory::new(&sys, 4096, HugePages::Never)?;
    let dma = Dma::new(dev.clone(), (1 << 32, 1 << 34), HugePages::Never)?;
    let buf = dma.alloc(4096)?;
    per_op(
        "DmaBuffer::write32 (volatile, bounds-checked)",
        20_000_000,
        |i| {
            buf.write32((i % 1024) * 4, i as u32).expect("in bounds");
        },
    );
    per_op(
        "DmaBuffer::read32 (volatile, bounds-checked)",
        20_000_000,
        |i| {
            black_box(buf.read32((i % 1024) * 4).expect("in bounds"));
        },
    );
    let mut mad = [0u8; 256];
    per_op(
        "DmaBuffer::read_bytes 256 B (volatile 8-byte words)",
        1_000_000,
        |i| {
            buf.read_bytes((i % 8) * 256, &mut mad).expect("in bounds");
            black_box(&mad);
        },
    );
    per_op(
        "DmaBuffer::as_slice + copy 256 B (owner's zero-copy view)",
        10_000_000,
        |i| {
            // SAFETY: nothing else (no device in this benchmark) writes the buffer meanwhile.
            let s = unsafe { buf.as_slice() };
            let o = ((i % 8) * 256) as usize;
            mad.copy_from_slice(&s[o..o + 256]);
            black_box(&mad);
        },
    );
    drop(mem);

    let bar0 = dev.bar(0)?;
    per_op(
        "vfio-user REGION_WRITE 4 B (message round trip)",
        50_000,
        |i| {
            bar0.write32(0x10, i as u32).expect("write");
        },
    );
    per_op(
        "vfio-user REGION_READ 4 B (message round trip)",
        50_000,
        |_| {
            black_box(bar0.read32(0x10).expect("read"));
        },
    );
    let bar2 = dev.bar(2)?;
    per_op(
        "vfio-user BAR write32 through server-passed mmap",
        20_000_000,
        |i| {
            bar2.write32(0x10, i as u32).expect("write");
        },
    );
    per_op("Dma::alloc(4096) + free over vfio-user", 5_000, |_| {
        let b = dma.alloc(4096).expect("alloc");
        dma.free(&b).expect("free");
    });
    drop((bar0, bar2, buf, dma, dev));
    let _ = server.join();
    std::thread::sleep(Duration::from_millis(1));
    Ok(())
}

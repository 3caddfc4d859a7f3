//! The RA-1 model served over vfio-user ([`vfio::user::server`]): `ibsm asic-model` runs one
//! [`ServedAsic`] per switch; the host SMA (`ibsm sma --device vfio-user:SOCKET`) connects to it
//! with `vfio::UserDevice`, exactly as it would open a kernel VFIO device.
//!
//! BAR0 is exported as region 0 with `READ|WRITE` and no mmap, so every register access reaches
//! the model (RA-1 §2.1 allows both; the driver works with either). DMA goes through the
//! server's mappings of the client's memfds ([`ServerCtx::dma_read`] …); MSI-X vectors signal
//! the client's eventfds ([`ServerCtx::trigger`]).

use std::os::unix::net::UnixStream;
use std::sync::Arc;

use nix::errno::Errno;
use vfio::user::server::{Backend, Server, ServerCtx, ServerRegion};
use vfio::{DeviceFlags, PciCommand, RegionFlags, Sys, CONFIG_REGION, MSIX_IRQ_INDEX};

use super::{AsicModel, DeviceEnv, DmaFault, ModelConfig};
use crate::regs::{BAR0_SIZE, MSIX_VECTORS, PCI_DEVICE_SWITCH, PCI_VENDOR};

/// The model as a vfio-user [`Backend`].
#[derive(Debug)]
pub struct AsicServer {
    model: AsicModel,
    command: u16,
}

/// The server context as the model's [`DeviceEnv`].
struct CtxEnv<'a> {
    ctx: &'a ServerCtx,
    command: u16,
}

impl DeviceEnv for CtxEnv<'_> {
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        self.ctx.dma_read(iova, buf).map_err(|_| DmaFault { iova })
    }
    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), DmaFault> {
        self.ctx
            .dma_write(iova, data)
            .map_err(|_| DmaFault { iova })
    }
    fn dma_write32(&self, iova: u64, v: u32) -> Result<(), DmaFault> {
        self.ctx.dma_write32(iova, v).map_err(|_| DmaFault { iova })
    }
    fn bus_master(&self) -> bool {
        PciCommand::from_bits_retain(self.command).contains(PciCommand::BUS_MASTER)
    }
    fn raise_irq(&self, vector: u32) {
        if let Err(e) = self.ctx.trigger(MSIX_IRQ_INDEX, vector) {
            tracing::warn!("asic model: MSI-X vector {vector}: {e}");
        }
    }
}

impl AsicServer {
    /// A model in its power-on state.
    pub fn new(cfg: ModelConfig) -> AsicServer {
        AsicServer {
            model: AsicModel::new(cfg),
            command: 0,
        }
    }

    /// The model.
    pub fn model(&self) -> &AsicModel {
        &self.model
    }

    fn config_space(&self) -> [u8; 256] {
        let mut cfg = [0u8; 256];
        cfg[0..2].copy_from_slice(&PCI_VENDOR.to_le_bytes());
        cfg[2..4].copy_from_slice(&PCI_DEVICE_SWITCH.to_le_bytes());
        cfg[4..6].copy_from_slice(&self.command.to_le_bytes());
        cfg[8] = 0x10;
        cfg[9..12].copy_from_slice(&[0x00, 0x06, 0x0C]);
        cfg
    }
}

impl Backend for AsicServer {
    fn device_info(&self) -> (u32, u32, u32) {
        ((DeviceFlags::PCI | DeviceFlags::RESET).bits(), 9, 5)
    }

    fn region(&self, index: u32) -> Option<ServerRegion> {
        let rw = (RegionFlags::READ | RegionFlags::WRITE).bits();
        match index {
            0 => Some(ServerRegion {
                flags: rw,
                size: BAR0_SIZE,
                ..Default::default()
            }),
            CONFIG_REGION => Some(ServerRegion {
                flags: rw,
                size: 256,
                ..Default::default()
            }),
            1..=8 => Some(ServerRegion::default()),
            _ => None,
        }
    }

    fn irq_count(&self, index: u32) -> u32 {
        if index == MSIX_IRQ_INDEX {
            MSIX_VECTORS
        } else {
            0
        }
    }

    fn region_read(
        &mut self,
        _ctx: &mut ServerCtx,
        index: u32,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), Errno> {
        match index {
            0 => {
                // RA-1 conventions: only aligned 32-bit accesses; others read all-ones.
                let v = if buf.len() == 4 && offset.is_multiple_of(4) {
                    self.model.read(offset)
                } else {
                    u32::MAX
                };
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = v.to_le_bytes()[i % 4];
                }
                Ok(())
            }
            CONFIG_REGION => {
                let cfg = self.config_space();
                let o = usize::try_from(offset).map_err(|_| Errno::EINVAL)?;
                let s = o
                    .checked_add(buf.len())
                    .and_then(|e| cfg.get(o..e))
                    .ok_or(Errno::EINVAL)?;
                buf.copy_from_slice(s);
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
        match index {
            0 => {
                if data.len() == 4 && offset.is_multiple_of(4) {
                    let v = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
                    let env = CtxEnv {
                        ctx,
                        command: self.command,
                    };
                    self.model.write(offset, v, &env);
                }
                Ok(())
            }
            CONFIG_REGION => {
                if offset == vfio::PCI_COMMAND && data.len() == 2 {
                    self.command = u16::from_le_bytes([data[0], data[1]]);
                }
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn reset(&mut self, ctx: &mut ServerCtx) -> Result<(), Errno> {
        let env = CtxEnv {
            ctx,
            command: self.command,
        };
        self.model
            .write(crate::regs::CTRL, crate::regs::CTRL_RESET, &env);
        Ok(())
    }
}

/// One model served on one connected socket.
#[derive(Debug)]
pub struct ServedAsic {
    server: Server<AsicServer>,
}

impl ServedAsic {
    /// Serves a new model on `sock`.
    pub fn new(sock: UnixStream, sys: Arc<dyn Sys>, cfg: ModelConfig) -> ServedAsic {
        ServedAsic {
            server: Server::new(sock, sys, AsicServer::new(cfg)),
        }
    }

    /// The socket to poll for requests.
    pub fn socket(&self) -> std::os::fd::RawFd {
        self.server.socket()
    }

    /// Answers one request (call when [`ServedAsic::socket`] is readable).
    pub fn serve_one(&mut self) -> vfio::Result<()> {
        self.server.serve_one()
    }

    /// Runs `f` on the model with its environment (the wire side).
    pub fn with_model<R>(&mut self, f: impl FnOnce(&mut AsicModel, &dyn DeviceEnv) -> R) -> R {
        let (b, ctx) = self.server.parts();
        let env = CtxEnv {
            ctx,
            command: b.command,
        };
        f(&mut b.model, &env)
    }

    /// The model (read-only).
    pub fn model(&mut self) -> &AsicModel {
        &self.server.parts().0.model
    }
}

//! [`DeviceBackend`]: how the driver reaches an RA-1 device — kernel VFIO, vfio-user, or the
//! device model in this process. All three give the same [`VfioDevice`] interface; the driver
//! above is identical for each.

use std::sync::Arc;

use vfio::{IommuMode, KernelDevice, RealSys, Sys, UserDevice, VfioDevice, VfioError};

use crate::model::inproc::InProcessDevice;
use crate::model::ModelConfig;

/// A way to reach an RA-1 device.
pub trait DeviceBackend: std::fmt::Debug {
    /// The device.
    fn device(&self) -> Arc<dyn VfioDevice>;
    /// Human-readable description ("vfio-user:/run/asic0.sock").
    fn describe(&self) -> String;
}

/// Kernel VFIO (`/dev/vfio`, iommufd or no-IOMMU), by PCI address.
#[derive(Debug, Clone)]
pub struct KernelBackend {
    bdf: String,
    dev: Arc<KernelDevice>,
}

impl KernelBackend {
    /// Opens `bdf` (e.g. `0000:01:00.0`) bound to vfio-pci.
    pub fn open(bdf: &str, mode: IommuMode) -> Result<KernelBackend, VfioError> {
        let dev = KernelDevice::open(RealSys::shared(), bdf, mode)?;
        Ok(KernelBackend {
            bdf: bdf.to_string(),
            dev: Arc::new(dev),
        })
    }
}

impl DeviceBackend for KernelBackend {
    fn device(&self) -> Arc<dyn VfioDevice> {
        self.dev.clone()
    }
    fn describe(&self) -> String {
        format!("vfio:{}", self.bdf)
    }
}

/// A device model in another process, over a vfio-user socket.
#[derive(Debug, Clone)]
pub struct UserBackend {
    path: String,
    dev: Arc<UserDevice>,
}

impl UserBackend {
    /// Connects to the vfio-user server at `path`.
    pub fn connect(path: &str) -> Result<UserBackend, VfioError> {
        Ok(UserBackend {
            path: path.to_string(),
            dev: Arc::new(UserDevice::connect(path)?),
        })
    }
}

impl UserBackend {
    /// An already connected client (e.g. over `UnixStream::pair` in tests).
    pub fn from_device(name: &str, dev: UserDevice) -> UserBackend {
        UserBackend {
            path: name.to_string(),
            dev: Arc::new(dev),
        }
    }
}

impl DeviceBackend for UserBackend {
    fn device(&self) -> Arc<dyn VfioDevice> {
        self.dev.clone()
    }
    fn describe(&self) -> String {
        format!("vfio-user:{}", self.path)
    }
}

/// The RA-1 model in this process.
#[derive(Debug, Clone)]
pub struct InProcessBackend {
    dev: InProcessDevice,
}

impl InProcessBackend {
    /// A new model device.
    pub fn new(cfg: ModelConfig) -> InProcessBackend {
        InProcessBackend::with_sys(cfg, RealSys::shared())
    }
    /// A new model device using `sys` for memory mappings and eventfds.
    pub fn with_sys(cfg: ModelConfig, sys: Arc<dyn Sys>) -> InProcessBackend {
        InProcessBackend {
            dev: InProcessDevice::new(cfg, sys),
        }
    }
    /// The model device (wire side).
    pub fn model(&self) -> &InProcessDevice {
        &self.dev
    }
}

impl DeviceBackend for InProcessBackend {
    fn device(&self) -> Arc<dyn VfioDevice> {
        Arc::new(self.dev.clone())
    }
    fn describe(&self) -> String {
        "in-process model".to_string()
    }
}

/// Opens a backend from a command-line spec: `vfio-user:PATH` or a PCI address
/// (`0000:BB:DD.F`, kernel VFIO with IOMMU auto-detection).
pub fn open(spec: &str) -> Result<Box<dyn DeviceBackend>, VfioError> {
    if let Some(path) = spec.strip_prefix("vfio-user:") {
        return Ok(Box::new(UserBackend::connect(path)?));
    }
    Ok(Box::new(KernelBackend::open(spec, IommuMode::Auto)?))
}

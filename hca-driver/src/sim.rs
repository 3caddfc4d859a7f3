//! [`AsicNode`]: an RA-1 switch in a `fabric_sim` fabric — the in-process device model, our
//! driver and the host SMA, plugged into a fabric node as its [`ExternalAgent`].
//!
//! SMPs the fabric delivers to the node enter the model's wire side
//! ([`AsicModel::receive`](crate::AsicModel::receive)), go up the QP0 RX ring to the host SMA,
//! whose answers go down the TX ring and leave through the model's wire queue. The fabric
//! forwards LID-routed SMPs through this switch with the model's LFT registers and port states
//! — i.e. with exactly what the host SMA wrote.

use std::sync::{Arc, Mutex};

use ibmad::{Lid, MadMeta, MgmtClass, PortNum, PortState, Time, SMP_LEN};
use sma::{LinkEvent, LinkRequest, Transmit};

use fabric_sim::sim::ExternalAgent;

use crate::backend::InProcessBackend;
use crate::driver::{DriverConfig, Hca};
use crate::error::{DriverError, InitError};
use crate::host::{HostError, HostSma};
use crate::model::server::ServedAsic;
use crate::model::{AsicModel, DeviceEnv, ModelConfig, RxOutcome, WireTx};

/// Why an [`AsicNode`] could not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Driver bring-up failed.
    #[error("driver bring-up failed")]
    Init(#[from] InitError),
    /// The host SMA could not start.
    #[error("host SMA failed to start")]
    Host(#[from] HostError),
}

/// What the device put on the wire, as the fabric takes it from an external agent: the MAD
/// copied into `out` (one SMP), addressed as the device's wire descriptor says.
fn wire_transmit(w: &WireTx, out: &mut [u8]) -> Transmit {
    out.copy_from_slice(&w.mad[..]);
    Transmit {
        meta: MadMeta {
            port: PortNum(w.port),
            slid: Lid(w.slid),
            dlid: Lid(w.dlid),
            qp: w.dqp,
            sl: w.sl,
            ..Default::default()
        },
        len: SMP_LEN,
    }
}

/// Counters of the glue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// SMPs the model accepted from the wire for the host.
    pub rx_delivered: u64,
    /// SMPs the model dropped (malformed, not ready, no descriptor).
    pub rx_dropped: u64,
    /// Host-side errors (logged).
    pub host_errors: u64,
}

/// Model + driver + host SMA of one switch. See the [module docs](self).
#[derive(Debug)]
pub struct AsicNode {
    backend: InProcessBackend,
    host: HostSma,
    stats: NodeStats,
}

impl AsicNode {
    /// Brings up a model described by `model` with the driver and the host SMA.
    pub fn new(
        model: ModelConfig,
        driver: DriverConfig,
        desc: &str,
        now: Time,
    ) -> Result<AsicNode, NodeError> {
        let backend = InProcessBackend::new(model);
        let hca = Hca::open(&backend, driver)?;
        let host = HostSma::new(hca, desc, now)?;
        Ok(AsicNode {
            backend,
            host,
            stats: NodeStats::default(),
        })
    }

    /// The device model's in-process handle (registers, LFT, counters).
    pub fn backend(&self) -> &InProcessBackend {
        &self.backend
    }

    /// The host SMA.
    pub fn host(&self) -> &HostSma {
        &self.host
    }

    /// Counters.
    pub fn stats(&self) -> NodeStats {
        self.stats
    }

    fn run_host(&mut self, now: Time) {
        if let Err(e) = self.host.poll(now) {
            self.note(e);
        }
    }

    fn note(&mut self, e: DriverError) {
        self.stats.host_errors += 1;
        tracing::warn!("host SMA: {e}");
    }
}

impl ExternalAgent for AsicNode {
    fn deliver(&mut self, now: Time, meta: &MadMeta, mad: &[u8]) {
        let out = self
            .backend
            .model()
            .with_model(|m, env| receive(m, meta, mad, env));
        match out {
            Some(RxOutcome::Delivered) => self.stats.rx_delivered += 1,
            _ => self.stats.rx_dropped += 1,
        }
        self.run_host(now);
    }

    fn link(&mut self, now: Time, port: PortNum, ev: LinkEvent) {
        self.backend.model().with_model(|m, env| match ev {
            LinkEvent::Up {
                width_active,
                speed_active,
                speed_ext_active,
            } => m.link_up(port.0, width_active, speed_active, speed_ext_active, env),
            LinkEvent::Down => m.link_down(port.0, env),
        });
        if let Err(e) = self.host.handle_port_changes(now) {
            self.note(e);
        }
        self.run_host(now);
    }

    fn poll_transmit(&mut self, _now: Time, buf: &mut [u8]) -> Option<Transmit> {
        let out = buf.get_mut(..SMP_LEN)?;
        let w = self.backend.model().with_model(|m, _| m.poll_wire())??;
        Some(wire_transmit(&w, out))
    }

    fn poll_link_request(&mut self) -> Option<(PortNum, LinkRequest)> {
        let (p, r) = self
            .backend
            .model()
            .with_model(|m, _| m.poll_link_request())??;
        Some((PortNum(p), r))
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.host.next_timer()
    }

    fn handle_timeout(&mut self, now: Time) {
        self.run_host(now);
    }

    fn lft_port(&self, dlid: Lid) -> Option<PortNum> {
        let m = self.backend.model().lock()?;
        m.lft_port(dlid.0).map(PortNum)
    }

    fn lid_matches(&self, dlid: Lid) -> bool {
        self.backend
            .model()
            .lock()
            .is_some_and(|m| m.lid_matches(dlid.0))
    }

    fn handles_gmp(&self) -> bool {
        true
    }

    fn port_state(&self, port: PortNum) -> PortState {
        let l = self
            .backend
            .model()
            .lock()
            .map_or(1, |m| m.port_logical(port.0));
        PortState(l as u8)
    }
}

/// A switch whose model is served over vfio-user to a host SMA in another process
/// (`ibsm asic-model` + `ibsm sma --device vfio-user:SOCKET`). The fabric side and the server
/// loop share the [`ServedAsic`]; the host's answers arrive asynchronously, so the owner calls
/// `Fabric::poke` after serving requests to collect what the model put on the wire.
#[derive(Debug, Clone)]
pub struct RemoteAsicNode {
    served: Arc<Mutex<ServedAsic>>,
}

impl RemoteAsicNode {
    /// Wraps a served model.
    pub fn new(served: Arc<Mutex<ServedAsic>>) -> RemoteAsicNode {
        RemoteAsicNode { served }
    }

    fn with<R>(&self, f: impl FnOnce(&mut ServedAsic) -> R) -> Option<R> {
        let mut s = self.served.lock().ok()?;
        Some(f(&mut s))
    }
}

impl ExternalAgent for RemoteAsicNode {
    fn deliver(&mut self, _now: Time, meta: &MadMeta, mad: &[u8]) {
        self.with(|s| s.with_model(|m, env| receive(m, meta, mad, env)));
    }

    fn handles_gmp(&self) -> bool {
        true
    }

    fn link(&mut self, _now: Time, port: PortNum, ev: LinkEvent) {
        self.with(|s| {
            s.with_model(|m, env| match ev {
                LinkEvent::Up {
                    width_active,
                    speed_active,
                    speed_ext_active,
                } => m.link_up(port.0, width_active, speed_active, speed_ext_active, env),
                LinkEvent::Down => m.link_down(port.0, env),
            })
        });
    }

    fn poll_transmit(&mut self, _now: Time, buf: &mut [u8]) -> Option<Transmit> {
        let out = buf.get_mut(..SMP_LEN)?;
        let w = self.with(|s| s.with_model(|m, _| m.poll_wire()))??;
        Some(wire_transmit(&w, out))
    }

    fn poll_link_request(&mut self) -> Option<(PortNum, LinkRequest)> {
        let (p, r) = self.with(|s| s.with_model(|m, _| m.poll_link_request()))??;
        Some((PortNum(p), r))
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn handle_timeout(&mut self, _now: Time) {}

    fn lft_port(&self, dlid: Lid) -> Option<PortNum> {
        self.with(|s| s.model().lft_port(dlid.0))?.map(PortNum)
    }

    fn lid_matches(&self, dlid: Lid) -> bool {
        self.with(|s| s.model().lid_matches(dlid.0))
            .unwrap_or(false)
    }

    fn port_state(&self, port: PortNum) -> PortState {
        PortState(self.with(|s| s.model().port_logical(port.0)).unwrap_or(1) as u8)
    }
}

/// Hands what the fabric delivered to the model: an SMP to QP0 (with its ingress port), a GMP
/// to QP1 (the fabric names no ingress port for a GMP to a switch: it is addressed to port 0).
fn receive(m: &mut AsicModel, meta: &MadMeta, mad: &[u8], env: &dyn DeviceEnv) -> RxOutcome {
    let class = MgmtClass(mad.get(1).copied().unwrap_or(0));
    if class.is_smp() {
        m.receive(meta.port.0, meta.slid.0, meta.dlid.0, meta.sl, mad, env)
    } else {
        let ingress = (meta.port.0 != 0).then_some(meta.port.0);
        m.receive_gmp(
            ingress,
            meta.slid.0,
            meta.dlid.0,
            meta.sl,
            meta.qp,
            mad,
            env,
        )
    }
}

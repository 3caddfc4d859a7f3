//! Where a diagnostic's SMPs go: the `--transport` argument and the [`DiagPort`]s behind it.
//!
//! Every transport is the project's own [`MadPort`] (the kernel's user_mad device or ibsim's
//! shim through [`UmadPort`], the simulator's [`SimPort`](fabric_sim::sim::SimPort), the RA-1
//! driver over VFIO or vfio-user); a [`DiagPort`] only adds what a blocking requester needs:
//! a clock and a receive that waits. Directed-route requests leave with hop pointer 0 and the
//! transport applies the originator's `ibmad::smi::advance` (the kernel's SMI, the simulator,
//! or the host-SMA port below), exactly as for the SM.

use std::fmt;
use std::time::{Duration, Instant};

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::{NodeId as TopoNode, Topology};
use ibmad::{Lid, MadMeta, MadPort, MgmtClass, NodeType, PortError, PortNum, Time};
use umad::abi::MethodMask;
use umad::{AgentSpec, UmadConfig, UmadPort};

/// A `--transport` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportSpec {
    /// The kernel's user_mad device (or ibsim's shim): CA name and port, both optional.
    Umad {
        /// CA name (`mlx5_0`); `None` = the first CA with a usable port.
        ca: Option<String>,
        /// Port number; `None` = the first Active port.
        port: Option<u8>,
    },
    /// An RA-1 device bound to vfio-pci, by PCI address (`0000:BB:DD.F`).
    Vfio(String),
    /// An RA-1 device model served over vfio-user, by socket path.
    VfioUser(String),
    /// The built-in simulator on a topology file or generator spec, brought up by ibsm's SM.
    Sim(String),
}

impl TransportSpec {
    /// Parses `umad[:CA[:PORT]] | vfio:BDF | vfio-user:SOCKET | sim:TOPOLOGY`.
    ///
    /// # Errors
    /// A message naming what is wrong with the value.
    pub fn parse(text: &str) -> Result<TransportSpec, String> {
        let (kind, rest) = match text.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (text, None),
        };
        match kind {
            "umad" => {
                let Some(rest) = rest else {
                    return Ok(TransportSpec::Umad {
                        ca: None,
                        port: None,
                    });
                };
                let (ca, port) = match rest.split_once(':') {
                    Some((c, p)) => (c, Some(p)),
                    None => (rest, None),
                };
                let port = match port {
                    None => None,
                    Some(p) => Some(p.parse::<u8>().map_err(|_| {
                        format!("transport {text:?}: port {p:?} is not a number 1..=254")
                    })?),
                };
                Ok(TransportSpec::Umad {
                    ca: (!ca.is_empty()).then(|| ca.to_string()),
                    port,
                })
            }
            "vfio" => match rest {
                Some(bdf) if !bdf.is_empty() => Ok(TransportSpec::Vfio(bdf.to_string())),
                _ => Err(format!(
                    "transport {text:?}: vfio needs a PCI address (vfio:0000:BB:DD.F)"
                )),
            },
            "vfio-user" => match rest {
                Some(s) if !s.is_empty() => Ok(TransportSpec::VfioUser(s.to_string())),
                _ => Err(format!(
                    "transport {text:?}: vfio-user needs a socket path (vfio-user:SOCKET)"
                )),
            },
            "sim" => match rest {
                Some(t) if !t.is_empty() => Ok(TransportSpec::Sim(t.to_string())),
                _ => Err(format!(
                    "transport {text:?}: sim needs a topology (sim:fat-tree:2,8 or sim:FILE)"
                )),
            },
            _ => Err(format!(
                "unknown transport {text:?} (expected umad[:CA[:PORT]], vfio:BDF, \
                 vfio-user:SOCKET or sim:TOPOLOGY)"
            )),
        }
    }
}

impl fmt::Display for TransportSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportSpec::Umad { ca, port } => {
                write!(f, "umad")?;
                if let Some(c) = ca {
                    write!(f, ":{c}")?;
                }
                if let Some(p) = port {
                    write!(f, ":{p}")?;
                }
                Ok(())
            }
            TransportSpec::Vfio(b) => write!(f, "vfio:{b}"),
            TransportSpec::VfioUser(s) => write!(f, "vfio-user:{s}"),
            TransportSpec::Sim(t) => write!(f, "sim:{t}"),
        }
    }
}

/// A management port a diagnostic sends SMPs through and waits on.
pub trait DiagPort {
    /// Queues one MAD (as [`MadPort::send`]).
    ///
    /// # Errors
    /// The transport's.
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError>;
    /// Waits up to `timeout` (on [`DiagPort::now`]'s clock) for one MAD.
    ///
    /// # Errors
    /// The transport's.
    fn recv_wait(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Option<(MadMeta, usize)>, PortError>;
    /// The port's clock (wall time; virtual time for the simulator).
    fn now(&self) -> Time;
    /// The local port number SMPs leave from (`MadMeta::port`): 0 on a switch.
    fn local_port(&self) -> PortNum;
    /// The CA's name where the transport has one (umad: `mlx5_0`, `ibsim0`).
    fn ca_name(&self) -> Option<String> {
        None
    }
    /// Whether a GMP to the local port reaches the local node's agents while the port has no
    /// LID (the diagnostic is the host of a switch ASIC: its PMA answers in this process).
    fn own_agents_need_no_lid(&self) -> bool {
        false
    }
}

/// A [`UmadPort`] as a diagnostic port: no unsolicited methods, wall clock.
pub struct UmadDiag {
    port: UmadPort,
    epoch: Instant,
}

impl UmadDiag {
    /// Opens the CA/port as the diags do (first Active port by default).
    ///
    /// # Errors
    /// The umad layer's, as text.
    pub fn open(ca: Option<String>, port: Option<u8>) -> Result<UmadDiag, String> {
        let cfg = UmadConfig {
            ca,
            port,
            agents: vec![
                AgentSpec::smp(MgmtClass::SUBN_DIRECTED_ROUTE, MethodMask::NONE),
                AgentSpec::smp(MgmtClass::SUBN_LID_ROUTED, MethodMask::NONE),
                // `ibsm counters`: PerfMgt GMPs on QP1.
                AgentSpec::gsi(MgmtClass::PERF_MGMT, 1, MethodMask::NONE),
            ],
            ..UmadConfig::default()
        };
        let port = UmadPort::open(&cfg).map_err(|e| e.to_string())?;
        Ok(UmadDiag {
            port,
            epoch: Instant::now(),
        })
    }
}

impl DiagPort for UmadDiag {
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        self.port.send(meta, mad)
    }
    fn recv_wait(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Option<(MadMeta, usize)>, PortError> {
        self.port.recv_wait(buf, timeout)
    }
    fn now(&self) -> Time {
        wall(self.epoch)
    }
    fn local_port(&self) -> PortNum {
        self.port.device().port
    }
    fn ca_name(&self) -> Option<String> {
        Some(self.port.device().ca.clone())
    }
}

fn wall(epoch: Instant) -> Time {
    Time(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

/// The built-in simulator: ibsm's SM brings the fabric up at the attach point (the first
/// node of the topology, as ibsim's shim attaches its clients), steps back, and the diagnostic
/// attaches there as a plain management client. Time is virtual.
pub struct SimDiag {
    fabric: Fabric,
    h: SmHandle,
    port: PortNum,
}

/// Where ibsim's shim attaches a client without `SIM_HOST`: the first node of the topology,
/// port 0 of a switch or port 1 of a CA.
fn first_node(topo: &Topology) -> Result<(TopoNode, PortNum), String> {
    let (id, n) = topo
        .nodes()
        .next()
        .ok_or_else(|| "the topology has no nodes".to_string())?;
    let port = if n.node_type() == NodeType::SWITCH {
        PortNum(0)
    } else {
        PortNum(1)
    };
    Ok((id, port))
}

impl SimDiag {
    /// Loads `topology`, brings it up with ibsm's SM (default options) and attaches a client.
    ///
    /// # Errors
    /// A bad topology, or a subnet that did not come up within a minute of virtual time.
    pub fn open(topology: &str) -> Result<SimDiag, OpenError> {
        let topo = Topology::from_spec_or_file(topology)
            .map_err(|e| OpenError::BadInput(format!("{topology}: {e}")))?;
        Self::bring_up(&topo, topology).map_err(OpenError::Failed)
    }

    fn bring_up(topo: &Topology, topology: &str) -> Result<SimDiag, String> {
        let (node, port) = first_node(topo)?;
        let mut fabric = Fabric::new(topo, SimConfig::default()).map_err(|e| e.to_string())?;
        let att = fabric.attach_sm(node, port).map_err(|e| e.to_string())?;
        let cfg = sm::SmConfig {
            port,
            ..sm::SmConfig::default()
        };
        let mut sm = sm::Sm::new(cfg).map_err(|e| e.to_string())?;
        let limit = Time::ZERO + Duration::from_secs(60);
        let mut buf = [0u8; 256];
        let mut up = false;
        while !up {
            let now = fabric.now();
            if now >= limit {
                return Err(format!(
                    "{topology}: the simulated subnet did not come up in 60 s (virtual)"
                ));
            }
            while let Ok(Some((meta, len))) = fabric.sm_recv(att.handle, &mut buf) {
                sm.handle_mad(now, &meta, &buf[..len]);
            }
            if sm.poll_timeout().is_some_and(|t| t <= now) {
                sm.handle_timeout(now);
            }
            while let Some(tx) = sm.poll_transmit(now, &mut buf) {
                let _ = fabric.sm_send(att.handle, &tx.meta, &buf[..tx.len]);
            }
            while let Some(ev) = sm.poll_event() {
                up |= ev == sm::Event::SubnetUp;
            }
            let next = [fabric.next_event_time(), sm.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) if t > now => fabric.run_until(t),
                Some(_) => {
                    fabric.step();
                }
                None if !up => {
                    return Err(format!("{topology}: the simulated subnet did not come up"))
                }
                None => {}
            }
        }
        fabric.detach_sm(att.handle);
        let h = fabric
            .attach_client(node, port)
            .map_err(|e| e.to_string())?
            .handle;
        Ok(SimDiag { fabric, h, port })
    }

    /// The simulated fabric.
    pub fn fabric(&mut self) -> &mut Fabric {
        &mut self.fabric
    }
}

impl DiagPort for SimDiag {
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        self.fabric.sm_send(self.h, meta, mad)
    }
    fn recv_wait(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Option<(MadMeta, usize)>, PortError> {
        let deadline = self.fabric.now() + timeout;
        loop {
            if let Some(m) = self.fabric.sm_recv(self.h, buf)? {
                return Ok(Some(m));
            }
            match self.fabric.next_event_time() {
                Some(t) if t <= deadline => {
                    self.fabric.step();
                }
                _ => {
                    self.fabric.run_until(deadline);
                    return self.fabric.sm_recv(self.h, buf);
                }
            }
        }
    }
    fn now(&self) -> Time {
        self.fabric.now()
    }
    fn local_port(&self) -> PortNum {
        self.port
    }
}

/// Why a transport did not open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The argument names nothing usable (a topology that does not load).
    BadInput(String),
    /// The transport failed to open or come up.
    Failed(String),
}

/// Opens the transport a `--transport` value names.
///
/// # Errors
/// A message naming the transport and what failed.
pub fn open(spec: &TransportSpec) -> Result<Box<dyn DiagPort>, OpenError> {
    let failed = |e: String| OpenError::Failed(format!("{spec}: {e}"));
    match spec {
        TransportSpec::Umad { ca, port } => {
            Ok(Box::new(UmadDiag::open(ca.clone(), *port).map_err(failed)?))
        }
        TransportSpec::Sim(t) => Ok(Box::new(SimDiag::open(t)?)),
        TransportSpec::Vfio(dev) => Ok(Box::new(super::host::HostDiag::open(dev).map_err(failed)?)),
        TransportSpec::VfioUser(sock) => Ok(Box::new(
            super::host::HostDiag::open(&format!("vfio-user:{sock}")).map_err(failed)?,
        )),
    }
}

/// The LID-routed source LID to put in requests when none is known.
pub const NO_LID: Lid = Lid::UNASSIGNED;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_specs() {
        assert_eq!(
            TransportSpec::parse("umad").unwrap(),
            TransportSpec::Umad {
                ca: None,
                port: None
            }
        );
        assert_eq!(
            TransportSpec::parse("umad:mlx5_0:2").unwrap(),
            TransportSpec::Umad {
                ca: Some("mlx5_0".into()),
                port: Some(2)
            }
        );
        assert_eq!(
            TransportSpec::parse("sim:fat-tree:2,8").unwrap(),
            TransportSpec::Sim("fat-tree:2,8".into())
        );
        assert_eq!(
            TransportSpec::parse("vfio-user:/x/y.sock").unwrap(),
            TransportSpec::VfioUser("/x/y.sock".into())
        );
        assert!(TransportSpec::parse("umad:mlx5_0:x")
            .unwrap_err()
            .contains("port"));
        assert!(TransportSpec::parse("rdma")
            .unwrap_err()
            .contains("unknown"));
        assert!(TransportSpec::parse("sim:")
            .unwrap_err()
            .contains("topology"));
        for s in ["umad:mlx5_0:2", "sim:fat-tree:2,8", "vfio:0000:01:00.0"] {
            assert_eq!(TransportSpec::parse(s).unwrap().to_string(), s);
        }
    }
}

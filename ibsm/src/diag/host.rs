//! The diagnostics on an RA-1 switch ASIC reached through VFIO or vfio-user.
//!
//! Such a switch has no firmware agent: whoever holds the device must answer for it. The
//! diagnostic therefore runs the host SMA ([`HostSma`]) while it works, and sends its own
//! requests from the switch's management port 0, like an SM on a switch: a directed-route
//! request gets the originator's `ibmad::smi::advance` here and leaves on the port it names (or,
//! with an empty route, goes straight to the local agent); a LID-routed one leaves through the
//! device's LFT. Answers come back through the agent, which hands them to "the SM on the host"
//! ([`sma::Event::ForSm`]).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use hca_driver::{backend, DeviceBackend, DriverConfig, Hca, HostSma, IrqMode};
use ibmad::smi::{self, Forward};
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{Lid, MadMeta, MadPort, MgmtClass, PortError, PortNum, Smp, Time, SMP_LEN};

use super::port::DiagPort;
use crate::sma_cmd::chain;

/// NodeDescription the host SMA answers with while a diagnostic holds the device.
pub const HOST_DESC: &str = "ibsm host SMA";

/// `meta.port` value that makes the RA-1 driver route a send by the device's LFT.
const ROUTE_BY_LFT: u8 = 255;

/// A diagnostic port on a switch ASIC through its host SMA.
pub struct HostDiag {
    host: HostSma,
    _backend: Box<dyn DeviceBackend>,
    epoch: Instant,
    rx: VecDeque<(MadMeta, Box<[u8; SMP_LEN]>)>,
}

impl HostDiag {
    /// Opens the device (`0000:BB:DD.F` or `vfio-user:SOCKET`), brings it up and starts its
    /// host SMA.
    ///
    /// # Errors
    /// The device, bring-up or agent configuration failed.
    pub fn open(device: &str) -> Result<HostDiag, String> {
        let be = backend::open(device).map_err(|e| chain(&e))?;
        let cfg = DriverConfig {
            mode: IrqMode::BusyPoll,
            ..DriverConfig::default()
        };
        let hca = Hca::open(be.as_ref(), cfg)
            .map_err(|e| format!("{}: bring-up failed: {}", be.describe(), chain(&e)))?;
        let epoch = Instant::now();
        let host = HostSma::new(hca, HOST_DESC, Time::ZERO).map_err(|e| chain(&e))?;
        Ok(HostDiag {
            host,
            _backend: be,
            epoch,
            rx: VecDeque::new(),
        })
    }

    fn own_lid(&self) -> Lid {
        self.host
            .agent()
            .port_info(PortNum::MGMT)
            .map_or(Lid::UNASSIGNED, |pi| pi.lid())
    }

    fn collect(&mut self) {
        while let Some(ev) = self.host.poll_event() {
            if let sma::Event::ForSm { meta, mad } = ev {
                self.rx.push_back((meta, mad));
            }
        }
    }

    fn port_err(e: &dyn std::error::Error) -> PortError {
        PortError::Other(chain(e))
    }
}

impl DiagPort for HostDiag {
    fn send(&mut self, meta: &MadMeta, mad: &[u8]) -> Result<(), PortError> {
        let now = self.now();
        let mut smp = Smp::read_from_bytes(mad).map_err(|_| PortError::BadLength {
            len: mad.len(),
            expected: SMP_LEN,
        })?;
        let local = MadMeta {
            port: PortNum::MGMT,
            ..*meta
        };
        if smp.mgmt_class == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            match smi::advance(&mut smp, true) {
                Forward::Out(q) => {
                    let out = MadMeta {
                        port: q,
                        slid: Lid::PERMISSIVE,
                        dlid: Lid::PERMISSIVE,
                        ..*meta
                    };
                    self.host.hca_mut().send(&out, smp.as_bytes())
                }
                Forward::Local => self
                    .host
                    .inject(now, &local, smp.as_bytes())
                    .map_err(|e| Self::port_err(&e)),
                other => Err(PortError::Other(format!(
                    "directed route not sendable from switch port 0: {other:?}"
                ))),
            }
        } else if meta.dlid == self.own_lid() && smp.mgmt_class != MgmtClass::SUBN_LID_ROUTED.0 {
            // A GMP to this node (perfquery of the local port): its agents answer on the host,
            // with or without a LID.
            if let Some(answer) = self.host.answer_local_gmp(&local, mad) {
                let back = MadMeta {
                    slid: meta.dlid,
                    dlid: meta.slid,
                    ..local
                };
                self.rx.push_back((back, Box::new(answer)));
            }
            Ok(())
        } else if meta.dlid == self.own_lid() {
            self.host
                .inject(now, &local, mad)
                .map_err(|e| Self::port_err(&e))
        } else {
            let out = MadMeta {
                port: PortNum(ROUTE_BY_LFT),
                slid: self.own_lid(),
                ..*meta
            };
            self.host.hca_mut().send(&out, mad)
        }
    }

    fn recv_wait(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Option<(MadMeta, usize)>, PortError> {
        let deadline = Instant::now() + timeout;
        loop {
            self.collect();
            if let Some((meta, mad)) = self.rx.pop_front() {
                let len = buf.len();
                let out = buf.get_mut(..SMP_LEN).ok_or(PortError::BadLength {
                    len,
                    expected: SMP_LEN,
                })?;
                out.copy_from_slice(&mad[..]);
                return Ok(Some((meta, SMP_LEN)));
            }
            let now = self.now();
            self.host.poll(now).map_err(|e| Self::port_err(&e))?;
            self.collect();
            if !self.rx.is_empty() {
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.host
                .wait(left.min(Duration::from_millis(1)))
                .map_err(|e| Self::port_err(&e))?;
        }
    }

    fn now(&self) -> Time {
        Time(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn local_port(&self) -> PortNum {
        PortNum::MGMT
    }

    fn own_agents_need_no_lid(&self) -> bool {
        true
    }
}

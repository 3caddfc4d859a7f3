//! P_KeyTable (0x0016, IBA vol1 §14.2.5.7) and GUIDInfo (0x0014, §14.2.5.5).
//!
//! P_KeyTable modifier ([`ibmad::attr::modifier::PKeyMod`]): bits 15..0 = block; on a switch
//! bits 31..16 = port (0..=NumPorts), on a CA the receiving port (upper bits ignored). One block
//! of 32 entries per port (PartitionCap / PartitionEnforcementCap = 32); entry 0 defaults to
//! 0xFFFF.
//! GUIDInfo modifier = block: one block of 8 (GUIDCap 8) on each CA port and on switch port 0;
//! entry 0 is the port GUID and read-only.

use ibmad::attr::modifier::PKeyMod;
use ibmad::attr::{GuidInfo, PKeyTable};
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{Method, PortNum};

use super::Req;
use crate::agent::Agent;
use crate::error::SmaError;
use crate::hw::Hardware;

impl<H: Hardware> Agent<H> {
    fn pkey_target(&self, req: &Req) -> Result<PortNum, SmaError> {
        let PKeyMod { port, block } = PKeyMod::from_raw(req.attr_mod);
        if block != 0 {
            return Err(req.bad_mod("P_Key block beyond PartitionCap/32"));
        }
        if self.is_switch {
            self.modifier_port(req, u32::from(port))
        } else {
            Ok(req.in_port)
        }
    }

    pub(crate) fn get_pkeys(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let port = self.pkey_target(req)?;
        data.copy_from_slice(self.ports[usize::from(port.0)].pkeys.as_bytes());
        Ok(())
    }

    pub(crate) fn set_pkeys(&mut self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let port = self.pkey_target(req)?;
        let t = PKeyTable::read_from_bytes(&data[..]).map_err(|_| req.bad_field("*", "short"))?;
        self.ports[usize::from(port.0)].pkeys = t;
        self.hw.pkeys_written(port, 0, &t);
        Ok(())
    }

    fn guid_target(&self, req: &Req, method: Method) -> Result<PortNum, SmaError> {
        if req.attr_mod != 0 {
            return Err(req.bad_mod("GUIDInfo block beyond GUIDCap/8"));
        }
        let _ = method;
        Ok(self.mgmt_port(req.in_port))
    }

    pub(crate) fn get_guid_info(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let port = self.guid_target(req, Method::GET)?;
        data.copy_from_slice(self.ports[usize::from(port.0)].guids.as_bytes());
        Ok(())
    }

    pub(crate) fn set_guid_info(&mut self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let port = self.guid_target(req, Method::SET)?;
        let rq = GuidInfo::read_from_bytes(&data[..]).map_err(|_| req.bad_field("*", "short"))?;
        let p = &mut self.ports[usize::from(port.0)];
        // Entry 0 (the port GUID) is read-only.
        for i in 1..8 {
            p.guids.guids[i] = rq.guids[i];
        }
        let out = p.guids;
        self.hw.guid_info_written(port, 0, &out);
        data.copy_from_slice(out.as_bytes());
        Ok(())
    }
}

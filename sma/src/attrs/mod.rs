//! Get/Set handlers, one module per attribute group (STYLE "definition of done" item 4).
//! Each handler reads the request from the 64-byte SMP data field and writes the resulting
//! attribute back into it; a Set validates everything before changing anything, so an error
//! leaves the agent untouched.

mod forwarding;
mod keys;
mod node;
mod port_info;
mod qos;
mod switch_info;

use ibmad::{Method, PortNum, SmpAttrId, Time};

use crate::agent::Agent;
use crate::error::SmaError;
use crate::hw::Hardware;

/// A request as the handlers see it.
pub(crate) struct Req {
    pub(crate) now: Time,
    pub(crate) in_port: PortNum,
    pub(crate) attr: SmpAttrId,
    pub(crate) attr_mod: u32,
    /// M_Key protection level 1 with a wrong key: PortInfo.M_Key reads as 0.
    pub(crate) masked: bool,
}

impl Req {
    pub(crate) fn bad_mod(&self, why: &'static str) -> SmaError {
        SmaError::InvalidModifier {
            attr: self.attr,
            attr_mod: self.attr_mod,
            why,
        }
    }
    pub(crate) fn bad_field(&self, field: &'static str, why: &'static str) -> SmaError {
        SmaError::InvalidField {
            attr: self.attr,
            field,
            why,
        }
    }
    pub(crate) fn unsupported(&self, method: Method) -> SmaError {
        SmaError::MethodAttrNotSupported {
            method,
            attr: self.attr,
        }
    }
}

impl<H: Hardware> Agent<H> {
    pub(crate) fn get_attr(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        match req.attr {
            SmpAttrId::NODE_DESC => self.get_node_desc(data),
            SmpAttrId::NODE_INFO => self.get_node_info(req, data),
            SmpAttrId::PORT_INFO => self.get_port_info(req, data),
            SmpAttrId::SWITCH_INFO => self.get_switch_info(req, data),
            SmpAttrId::LINEAR_FT => self.get_lft(req, data),
            SmpAttrId::MULTICAST_FT => self.get_mft(req, data),
            SmpAttrId::SL_TO_VL_TABLE => self.get_sl2vl(req, data),
            SmpAttrId::VL_ARB_TABLE => self.get_vl_arb(req, data),
            SmpAttrId::P_KEY_TABLE => self.get_pkeys(req, data),
            SmpAttrId::GUID_INFO => self.get_guid_info(req, data),
            _ => Err(req.unsupported(Method::GET)),
        }
    }

    pub(crate) fn set_attr(&mut self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        match req.attr {
            SmpAttrId::PORT_INFO => self.set_port_info(req, data),
            SmpAttrId::SWITCH_INFO => self.set_switch_info(req, data),
            SmpAttrId::LINEAR_FT => self.set_lft(req, data),
            SmpAttrId::MULTICAST_FT => self.set_mft(req, data),
            SmpAttrId::SL_TO_VL_TABLE => self.set_sl2vl(req, data),
            SmpAttrId::VL_ARB_TABLE => self.set_vl_arb(req, data),
            SmpAttrId::P_KEY_TABLE => self.set_pkeys(req, data),
            SmpAttrId::GUID_INFO => self.set_guid_info(req, data),
            _ => Err(req.unsupported(Method::SET)),
        }
    }

    /// The port an attribute modifier names: 0..=NumPorts on a switch; on a CA 1..=NumPorts,
    /// with 0 meaning the port the SMP arrived on.
    pub(crate) fn modifier_port(&self, req: &Req, raw: u32) -> Result<PortNum, SmaError> {
        let Ok(p) = u8::try_from(raw) else {
            return Err(req.bad_mod("port number beyond NumPorts"));
        };
        if p > self.num_ports {
            return Err(req.bad_mod("port number beyond NumPorts"));
        }
        if !self.is_switch && p == 0 {
            return Ok(req.in_port);
        }
        Ok(PortNum(p))
    }
}

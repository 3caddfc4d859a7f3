//! SwitchInfo (0x0012, IBA vol1 §14.2.5.4): Get and Set (switches only).
//!
//! Writable: LinearFDBTop (< LinearFDBCap), DefaultPort, DefaultMulticast(Not)PrimaryPort
//! (≤ NumPorts), LifeTimeValue, PortStateChange (write 1 to clear), MulticastFDBTop (0, 0xBFFF
//! = empty, or below 0xC000 + MulticastFDBCap). Other fields are capabilities and ignored.

use ibmad::attr::SwitchInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::Method;

use super::Req;
use crate::agent::Agent;
use crate::error::SmaError;
use crate::hw::Hardware;

impl<H: Hardware> Agent<H> {
    pub(crate) fn get_switch_info(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let sw = self.sw.as_ref().ok_or(req.unsupported(Method::GET))?;
        if req.attr_mod != 0 {
            return Err(req.bad_mod("SwitchInfo takes modifier 0"));
        }
        data.copy_from_slice(sw.info.as_bytes());
        Ok(())
    }

    pub(crate) fn set_switch_info(
        &mut self,
        req: &Req,
        data: &mut [u8; 64],
    ) -> Result<(), SmaError> {
        if self.sw.is_none() {
            return Err(req.unsupported(Method::SET));
        }
        if req.attr_mod != 0 {
            return Err(req.bad_mod("SwitchInfo takes modifier 0"));
        }
        let rq = SwitchInfo::read_from_bytes(&data[..]).map_err(|_| req.bad_field("*", "short"))?;
        let top = rq.linear_fdb_top.get();
        if u32::from(top) >= u32::from(self.lft_cap) && top != 0 {
            return Err(req.bad_field("LinearFDBTop", "not below LinearFDBCap"));
        }
        for (field, p) in [
            ("DefaultPort", rq.default_port),
            ("DefaultMulticastPrimaryPort", rq.default_mcast_primary_port),
            (
                "DefaultMulticastNotPrimaryPort",
                rq.default_mcast_not_primary_port,
            ),
        ] {
            if p > self.num_ports && p != 0xFF {
                return Err(req.bad_field(field, "port beyond NumPorts"));
            }
        }
        let mtop = rq.multicast_fdb_top.get();
        let mtop_ok = mtop == 0
            || mtop == 0xBFFF
            || (0xC000..0xC000u32 + u32::from(self.mft_cap)).contains(&u32::from(mtop));
        if !mtop_ok {
            return Err(req.bad_field("MulticastFDBTop", "beyond MulticastFDBCap"));
        }
        let Some(sw) = self.sw.as_mut() else {
            return Err(req.unsupported(Method::SET));
        };
        let si = &mut sw.info;
        si.linear_fdb_top.set(top);
        si.default_port = rq.default_port;
        si.default_mcast_primary_port = rq.default_mcast_primary_port;
        si.default_mcast_not_primary_port = rq.default_mcast_not_primary_port;
        si.set_life_time_value(rq.life_time_value());
        if rq.port_state_change() == 1 {
            si.set_port_state_change(0);
        }
        si.multicast_fdb_top.set(mtop);
        let out = *si;
        // Keep the LFT storage sized to LinearFDBTop so lookups never grow it.
        let want = (usize::from(top) + 1).next_multiple_of(64);
        if sw.lft.len() < want {
            sw.lft.resize(want, 0xFF);
        }
        self.hw.switch_info_written(&out);
        data.copy_from_slice(out.as_bytes());
        Ok(())
    }
}

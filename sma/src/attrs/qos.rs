//! SLtoVLMappingTable (0x0017, IBA vol1 §14.2.5.8) and VLArbitrationTable (0x0018, §14.2.5.9).
//!
//! SLtoVL modifier: on a switch bits 15..8 = input port, 7..0 = output port, and in a Set bit
//! 17 = all input ports, bit 16 = all output ports (optimized programming); on a CA bits 7..0 =
//! the port (0 = the receiving port). VLArb modifier: bits 31..16 = block 1..=4 (1, 2 low
//! priority; 3, 4 high priority), bits 15..0 = port (CA: 0 = receiving port). Both are decoded by
//! [`ibmad::attr::modifier`].

use ibmad::attr::modifier::{Sl2VlMod, VlArbMod};
use ibmad::attr::{SlToVl, VlArbTable};
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
use ibmad::PortNum;

use super::Req;
use crate::agent::Agent;
use crate::error::SmaError;
use crate::hw::Hardware;

impl<H: Hardware> Agent<H> {
    /// (input ports, output ports) an SLtoVL modifier selects.
    fn sl2vl_ports(&self, req: &Req, set: bool) -> Result<(Vec<u8>, Vec<u8>), SmaError> {
        let m = Sl2VlMod::from_raw(req.attr_mod);
        if !self.is_switch {
            if req.attr_mod != Sl2VlMod::pair(0, m.out_port).to_raw() {
                return Err(req.bad_mod("a CA takes only a port number"));
            }
            let p = self.modifier_port(req, u32::from(m.out_port))?;
            return Ok((vec![p.0], vec![p.0]));
        }
        if Sl2VlMod::parse(req.attr_mod).is_none() {
            return Err(req.bad_mod("reserved modifier bits set"));
        }
        if (m.all_inputs || m.all_outputs) && !set {
            return Err(req.bad_mod("all-ports bits are valid in a Set only"));
        }
        let n = self.num_ports;
        let pick = |all: bool, p: u8| -> Result<Vec<u8>, SmaError> {
            if all {
                return Ok((0..=n).collect());
            }
            if p > n {
                return Err(req.bad_mod("port number beyond NumPorts"));
            }
            Ok(vec![p])
        };
        Ok((
            pick(m.all_inputs, m.in_port)?,
            pick(m.all_outputs, m.out_port)?,
        ))
    }

    fn sl2vl_index(&self, inp: u8, out: u8) -> usize {
        usize::from(inp) * (usize::from(self.num_ports) + 1) + usize::from(out)
    }

    pub(crate) fn get_sl2vl(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let (ins, outs) = self.sl2vl_ports(req, false)?;
        let (i, o) = (
            ins.first().copied().unwrap_or(0),
            outs.first().copied().unwrap_or(0),
        );
        let t = if let Some(sw) = self.sw.as_ref() {
            sw.sl2vl
                .get(self.sl2vl_index(i, o))
                .copied()
                .unwrap_or_default()
        } else {
            self.ports[usize::from(o)].sl2vl
        };
        data.fill(0);
        data[..8].copy_from_slice(t.as_bytes());
        Ok(())
    }

    pub(crate) fn set_sl2vl(&mut self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let (ins, outs) = self.sl2vl_ports(req, true)?;
        let (t, _) =
            SlToVl::read_from_prefix(&data[..]).map_err(|_| req.bad_field("*", "short"))?;
        let pairs = (usize::from(self.num_ports) + 1).pow(2);
        let idx: Vec<usize> = ins
            .iter()
            .flat_map(|&i| outs.iter().map(move |&o| (i, o)))
            .map(|(i, o)| self.sl2vl_index(i, o))
            .collect();
        if let Some(sw) = self.sw.as_mut() {
            if sw.sl2vl.len() < pairs {
                sw.sl2vl.resize(pairs, SlToVl::default());
            }
            for &k in &idx {
                sw.sl2vl[k] = t;
            }
        } else if let Some(&o) = outs.first() {
            self.ports[usize::from(o)].sl2vl = t;
        }
        for &i in &ins {
            for &o in &outs {
                self.hw.sl2vl_written(PortNum(i), PortNum(o), &t);
            }
        }
        data.fill(0);
        data[..8].copy_from_slice(t.as_bytes());
        Ok(())
    }

    fn vl_arb_target(&self, req: &Req) -> Result<(PortNum, usize), SmaError> {
        let VlArbMod { block, port } = VlArbMod::from_raw(req.attr_mod);
        if !(1..=4).contains(&block) {
            return Err(req.bad_mod("VLArbitration block must be 1..=4"));
        }
        let port = self.modifier_port(req, u32::from(port))?;
        // Blocks 1-2 hold the low-priority table, 3-4 the high one, 32 entries each: a block
        // past the port's VLArbitrationLowCap / HighCap does not exist (the table is
        // VLArbitration*Cap entries long, IBA vol1 §14.2.5.9).
        let pi = &self.ports[usize::from(port.0)].pi;
        let cap = if block <= 2 {
            pi.vl_arb_low_cap
        } else {
            pi.vl_arb_high_cap
        };
        let first_entry = if block.is_multiple_of(2) { 32 } else { 0 };
        if usize::from(cap) <= first_entry {
            return Err(req.bad_mod("VLArbitration block beyond the port's VLArbitration cap"));
        }
        Ok((port, usize::from(block - 1)))
    }

    pub(crate) fn get_vl_arb(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let (port, b) = self.vl_arb_target(req)?;
        match &self.ports[usize::from(port.0)].vl_arb {
            Some(t) => data.copy_from_slice(t[b].as_bytes()),
            None => data.fill(0),
        }
        Ok(())
    }

    pub(crate) fn set_vl_arb(&mut self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let (port, b) = self.vl_arb_target(req)?;
        let t = VlArbTable::read_from_bytes(&data[..]).map_err(|_| req.bad_field("*", "short"))?;
        let slot = self.ports[usize::from(port.0)]
            .vl_arb
            .get_or_insert_with(|| Box::new([VlArbTable::new_zeroed(); 4]));
        slot[b] = t;
        let block = u8::try_from(b + 1).unwrap_or(u8::MAX);
        self.hw.vl_arb_written(port, block, &t);
        Ok(())
    }

    /// The VL an SL maps to from `in_port` to `out_port` (switch) or on `out_port` (CA), for a
    /// data-plane model. `None` for an SL above 15 or a port that does not exist.
    #[must_use]
    pub fn sl_to_vl(&self, in_port: PortNum, out_port: PortNum, sl: u8) -> Option<u8> {
        if out_port.0 > self.num_ports || in_port.0 > self.num_ports {
            return None;
        }
        let t = match self.sw.as_ref() {
            Some(sw) => sw
                .sl2vl
                .get(self.sl2vl_index(in_port.0, out_port.0))
                .copied()
                .unwrap_or_default(),
            None => self.ports.get(usize::from(out_port.0))?.sl2vl,
        };
        t.vl(sl)
    }
}

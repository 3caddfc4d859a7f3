//! LinearForwardingTable (0x0019, IBA vol1 §14.2.5.10) and MulticastForwardingTable (0x001B,
//! §14.2.5.12): Get and Set (switches only).
//!
//! LFT: AttributeModifier = block (LIDs block*64 ..), valid below ceil(LinearFDBCap / 64). The
//! table grows lazily; unwritten entries read 0xFF.
//! MFT: AttributeModifier bits 31..28 = position (ports position*16 ..), bits 8..0 = block
//! (MLIDs 0xC000 + block*32 ..), valid below ceil(MulticastFDBCap / 32).

use ibmad::attr::tables::{LFT_BLOCK_SIZE, LFT_NO_PATH};
use ibmad::attr::MftBlock;
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
use ibmad::Method;

use super::Req;
use crate::agent::Agent;
use crate::error::SmaError;
use crate::event::Event;
use crate::hw::Hardware;

const MFT_BLOCK_SIZE: usize = 32;

impl<H: Hardware> Agent<H> {
    fn lft_block(&self, req: &Req, method: Method) -> Result<usize, SmaError> {
        if self.sw.is_none() {
            return Err(req.unsupported(method));
        }
        let blocks = usize::from(self.lft_cap).div_ceil(LFT_BLOCK_SIZE);
        let b = usize::try_from(req.attr_mod).unwrap_or(usize::MAX);
        if b >= blocks {
            return Err(req.bad_mod("LFT block beyond LinearFDBCap/64"));
        }
        Ok(b)
    }

    pub(crate) fn get_lft(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let b = self.lft_block(req, Method::GET)?;
        data.fill(LFT_NO_PATH);
        if let Some(sw) = self.sw.as_ref() {
            let start = b * LFT_BLOCK_SIZE;
            if let Some(src) = sw.lft.get(start..start + LFT_BLOCK_SIZE) {
                data.copy_from_slice(src);
            }
        }
        Ok(())
    }

    pub(crate) fn set_lft(&mut self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let b = self.lft_block(req, Method::SET)?;
        let Some(sw) = self.sw.as_mut() else {
            return Err(req.unsupported(Method::SET));
        };
        let start = b * LFT_BLOCK_SIZE;
        if sw.lft.len() < start + LFT_BLOCK_SIZE {
            sw.lft.resize(start + LFT_BLOCK_SIZE, LFT_NO_PATH);
        }
        sw.lft[start..start + LFT_BLOCK_SIZE].copy_from_slice(&data[..]);
        let block = u16::try_from(b).unwrap_or(u16::MAX);
        self.hw.lft_block_written(block, data);
        self.push_event(Event::LftChanged { block });
        Ok(())
    }

    fn mft_index(&self, req: &Req, method: Method) -> Result<(usize, usize), SmaError> {
        let Some(sw) = self.sw.as_ref() else {
            return Err(req.unsupported(method));
        };
        if req.attr_mod & 0x0FFF_FE00 != 0 {
            return Err(req.bad_mod("reserved modifier bits set"));
        }
        let position = usize::try_from(req.attr_mod >> 28).unwrap_or(usize::MAX);
        let block = usize::try_from(req.attr_mod & 0x1FF).unwrap_or(usize::MAX);
        if position >= sw.mft_positions {
            return Err(req.bad_mod("MFT position beyond NumPorts/16"));
        }
        if block >= usize::from(self.mft_cap).div_ceil(MFT_BLOCK_SIZE) {
            return Err(req.bad_mod("MFT block beyond MulticastFDBCap/32"));
        }
        Ok((block, position))
    }

    pub(crate) fn get_mft(&self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let (block, position) = self.mft_index(req, Method::GET)?;
        let mut out = MftBlock::new_zeroed();
        if let Some(sw) = self.sw.as_ref() {
            let np = sw.mft_positions;
            for (i, m) in out.masks.iter_mut().enumerate() {
                let idx = (block * MFT_BLOCK_SIZE + i) * np + position;
                m.set(sw.mft.get(idx).copied().unwrap_or(0));
            }
        }
        data.copy_from_slice(out.as_bytes());
        Ok(())
    }

    pub(crate) fn set_mft(&mut self, req: &Req, data: &mut [u8; 64]) -> Result<(), SmaError> {
        let (block, position) = self.mft_index(req, Method::SET)?;
        let rq = MftBlock::read_from_bytes(&data[..]).map_err(|_| req.bad_field("*", "short"))?;
        let Some(sw) = self.sw.as_mut() else {
            return Err(req.unsupported(Method::SET));
        };
        let np = sw.mft_positions;
        let need = (block + 1) * MFT_BLOCK_SIZE * np;
        if sw.mft.len() < need {
            sw.mft.resize(need, 0);
        }
        for (i, m) in rq.masks.iter().enumerate() {
            sw.mft[(block * MFT_BLOCK_SIZE + i) * np + position] = m.get();
        }
        let block = u16::try_from(block).unwrap_or(u16::MAX);
        let position = u8::try_from(position).unwrap_or(u8::MAX);
        self.hw.mft_block_written(block, position, &rq);
        self.push_event(Event::MftChanged { block, position });
        Ok(())
    }

    /// The MFT port mask bits for `mlid` (0xC000..), all positions ORed into a u64 per 64
    /// ports — for a data-plane model: `ports` receives (position, mask) pairs.
    #[must_use]
    pub fn mft_masks(&self, mlid: ibmad::Lid) -> Vec<(u8, u16)> {
        let Some(sw) = self.sw.as_ref() else {
            return Vec::new();
        };
        if !mlid.is_multicast() {
            return Vec::new();
        }
        let e = usize::from(mlid.0 - 0xC000);
        let np = sw.mft_positions;
        (0..np)
            .filter_map(|p| {
                let m = sw.mft.get(e * np + p).copied().unwrap_or(0);
                (m != 0).then(|| (u8::try_from(p).unwrap_or(u8::MAX), m))
            })
            .collect()
    }
}

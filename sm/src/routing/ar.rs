//! Adaptive-routing port groups (for `dfp`/`dfp2`): alongside its LFT entry, a switch may be
//! given, per destination LID, a *group* of egress ports among which it picks by egress-queue
//! load at run time, for packets that arrived on one of its *eligible* input ports. The LFT
//! entry is always one of the group's ports and is what a switch without adaptive routing
//! uses.
//!
//! IBA has no adaptive-routing attributes; programming these needs vendor-specific
//! attributes, which ibsm does not define yet: today the groups are computed and kept in
//! [`super::Routes::ar`] but not sent, and switches route statically on the LFT entry, which is
//! deadlock-free on its own ([`ArTables`] only ever adds choices the engine checked).
//!
//! Storage: per switch, a 16-bit group number per LID (0 = no group) and a list of distinct
//! groups as 256-bit port masks — groups repeat across LIDs (every CA behind a switch, every
//! switch of an island), so a switch holds a handful.

use std::collections::HashMap;

use ibmad::{Lid, PortNum};

use super::graph::SwitchSlots;
use crate::subnet::NodeId;

/// A set of ports 0..=255.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortMask(pub [u64; 4]);

impl PortMask {
    /// Adds `p`.
    #[inline]
    pub fn insert(&mut self, p: u8) {
        self.0[usize::from(p >> 6)] |= 1 << (p & 63);
    }

    /// Whether `p` is in the set.
    #[inline]
    #[must_use]
    pub fn contains(&self, p: u8) -> bool {
        self.0[usize::from(p >> 6)] & (1 << (p & 63)) != 0
    }

    /// The ports, ascending.
    pub fn ports(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&p| self.contains(p))
    }

    /// Number of ports.
    #[must_use]
    pub fn len(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// True if empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }

    /// The 32-byte wire form: byte `i` bit `b` = port `8i + b`.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, e) in out.iter_mut().enumerate() {
            *e = (self.0[i / 8] >> ((i % 8) * 8)) as u8;
        }
        out
    }

    /// From the 32-byte wire form.
    #[must_use]
    pub fn from_bytes(b: &[u8; 32]) -> PortMask {
        let mut m = PortMask::default();
        for (i, &v) in b.iter().enumerate() {
            m.0[i / 8] |= u64::from(v) << ((i % 8) * 8);
        }
        m
    }
}

/// One switch's adaptive routing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchAr {
    /// Input ports whose packets may be routed adaptively.
    pub eligible: PortMask,
    /// Groups, numbered from 1 (`groups[i]` is group `i + 1`).
    pub groups: Vec<PortMask>,
    /// Group number per LID `0..=top` (0 = none: the LFT entry only).
    pub lft: Vec<u16>,
    index: HashMap<PortMask, u16>,
}

impl SwitchAr {
    /// Group of `lid` (None = LFT only).
    #[must_use]
    pub fn group(&self, lid: Lid) -> Option<&PortMask> {
        let g = *self.lft.get(usize::from(lid.0))?;
        if g == 0 {
            return None;
        }
        self.groups.get(usize::from(g) - 1)
    }
}

/// Adaptive-routing groups an engine decided, per switch ([`SwitchSlots`] order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArTables {
    slots: SwitchSlots,
    top: Lid,
    switches: Vec<SwitchAr>,
}

impl ArTables {
    /// No groups, for the switches of `slots`, LIDs `0..=top`.
    #[must_use]
    pub fn new(slots: SwitchSlots, top: Lid) -> ArTables {
        let w = usize::from(top.0) + 1;
        let switches = (0..slots.len())
            .map(|_| SwitchAr {
                lft: vec![0; w],
                ..SwitchAr::default()
            })
            .collect();
        ArTables {
            slots,
            top,
            switches,
        }
    }

    /// The highest LID covered.
    #[must_use]
    pub fn top(&self) -> Lid {
        self.top
    }

    /// Switch `sw`'s tables.
    #[must_use]
    pub fn switch(&self, sw: NodeId) -> Option<&SwitchAr> {
        self.switches.get(self.slots.slot(sw)?)
    }

    /// Switches with tables, in slot order.
    #[must_use]
    pub fn switches(&self) -> &[NodeId] {
        self.slots.switches()
    }

    /// Sets the eligible input ports of `sw`.
    pub fn set_eligible(&mut self, sw: NodeId, m: PortMask) -> bool {
        match self.slots.slot(sw).and_then(|i| self.switches.get_mut(i)) {
            Some(s) => {
                s.eligible = m;
                true
            }
            None => false,
        }
    }

    /// Gives `lid` at `sw` the group `m` (an empty or one-port group clears it). Returns false
    /// for an unknown switch, a LID beyond top, or more than 65,535 distinct groups.
    pub fn set(&mut self, sw: NodeId, lid: Lid, m: PortMask) -> bool {
        let Some(s) = self.slots.slot(sw).and_then(|i| self.switches.get_mut(i)) else {
            return false;
        };
        let Some(e) = s.lft.get_mut(usize::from(lid.0)) else {
            return false;
        };
        if m.len() < 2 {
            *e = 0;
            return true;
        }
        let g = match s.index.get(&m) {
            Some(&g) => g,
            None => {
                if s.groups.len() >= usize::from(u16::MAX) {
                    return false;
                }
                s.groups.push(m);
                let g = s.groups.len() as u16;
                s.index.insert(m, g);
                g
            }
        };
        *e = g;
        true
    }

    /// The ports `sw` may send a packet for `lid` to, having received it on `in_port`: the
    /// group if `in_port` is eligible, else none (the LFT entry applies).
    #[must_use]
    pub fn choices(&self, sw: NodeId, in_port: PortNum, lid: Lid) -> Option<&PortMask> {
        let s = self.switch(sw)?;
        if !s.eligible.contains(in_port.0) {
            return None;
        }
        s.group(lid)
    }

    /// Total groups over all switches.
    #[must_use]
    pub fn group_count(&self) -> usize {
        self.switches.iter().map(|s| s.groups.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_groups() {
        let mut m = PortMask::default();
        for p in [1, 7, 64, 200] {
            m.insert(p);
        }
        assert_eq!(m.ports().collect::<Vec<_>>(), vec![1, 7, 64, 200]);
        assert_eq!(PortMask::from_bytes(&m.to_bytes()), m);
        assert_eq!(m.to_bytes()[0], 0b1000_0010);
        let slots = SwitchSlots::from_switches(2, [NodeId(1)]);
        let mut t = ArTables::new(slots, Lid(10));
        assert!(t.set(NodeId(1), Lid(3), m));
        assert!(t.set(NodeId(1), Lid(4), m));
        let mut one = PortMask::default();
        one.insert(2);
        assert!(t.set(NodeId(1), Lid(5), one), "one port: no group");
        assert_eq!(t.group_count(), 1, "groups are shared");
        assert!(!t.set(NodeId(1), Lid(11), m));
        assert!(
            t.choices(NodeId(1), PortNum(1), Lid(3)).is_none(),
            "not eligible"
        );
        let mut el = PortMask::default();
        el.insert(1);
        t.set_eligible(NodeId(1), el);
        assert_eq!(t.choices(NodeId(1), PortNum(1), Lid(3)), Some(&m));
        assert!(t.choices(NodeId(1), PortNum(1), Lid(5)).is_none());
    }
}

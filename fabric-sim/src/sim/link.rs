//! Link training: what width and speed a cable settles on (IBA vol1 §5.6 / §14.2.5.6).
//!
//! Both ends advertise bit masks (PortInfo LinkWidthEnabled/Supported, LinkSpeedEnabled/
//! Supported, LinkSpeedExtEnabled/Supported). Training picks the highest value common to both:
//! the widest width in the order 12x > 8x > 4x > 2x > 1x, the fastest base speed
//! (QDR > DDR > SDR) and, if both ends support extended speeds, the fastest common extended
//! speed (NDR > HDR > EDR > FDR). With no common width or base speed the link never reaches
//! LinkUp.

/// One end's advertised capabilities (PortInfo encodings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LinkCaps {
    /// LinkWidthSupported/Enabled mask: 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x.
    pub width: u8,
    /// LinkSpeedSupported/Enabled mask: 1 = SDR, 2 = DDR, 4 = QDR.
    pub speed: u8,
    /// LinkSpeedExtSupported/Enabled mask: 1 = FDR, 2 = EDR, 4 = HDR, 8 = NDR; 0 = none.
    pub speed_ext: u8,
}

/// The parameters a trained link runs at (single-bit PortInfo *Active* codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Trained {
    /// LinkWidthActive.
    pub width_active: u8,
    /// LinkSpeedActive.
    pub speed_active: u8,
    /// LinkSpeedExtActive (0 when no extended speed is common).
    pub speed_ext_active: u8,
}

/// The highest set bit of `mask` among the low `bits` bits.
fn highest_bit(mask: u8, bits: u32) -> u8 {
    (0..bits)
        .rev()
        .map(|b| 1u8 << b)
        .find(|m| mask & m != 0)
        .unwrap_or(0)
}

/// Trains a link between two ends; `None` if they have no common width or base speed.
#[must_use]
pub fn train(a: LinkCaps, b: LinkCaps) -> Option<Trained> {
    let w = a.width & b.width;
    let width_active = Some(ibmad::attr::port_info::LinkWidths(w).widest()).filter(|&x| x != 0)?;
    let speed_active = highest_bit(a.speed & b.speed & 0x7, 3);
    if speed_active == 0 {
        return None;
    }
    let speed_ext_active = highest_bit(a.speed_ext & b.speed_ext & 0xF, 4);
    Some(Trained {
        width_active,
        speed_active,
        speed_ext_active,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_common_values_win() {
        let qdr_4x = LinkCaps {
            width: 1 | 2,
            speed: 1 | 2 | 4,
            speed_ext: 0,
        };
        let ddr_12x = LinkCaps {
            width: 1 | 2 | 8,
            speed: 1 | 2,
            speed_ext: 0,
        };
        // The seed's example: a QDR card on a DDR switch trains at DDR.
        assert_eq!(
            train(qdr_4x, ddr_12x),
            Some(Trained {
                width_active: 2,
                speed_active: 2,
                speed_ext_active: 0
            })
        );
    }

    #[test]
    fn extended_speed_only_when_both_support_it() {
        let edr = LinkCaps {
            width: 2,
            speed: 7,
            speed_ext: 1 | 2,
        };
        let hdr = LinkCaps {
            width: 2 | 16,
            speed: 7,
            speed_ext: 1 | 2 | 4,
        };
        let old = LinkCaps {
            width: 2,
            speed: 7,
            speed_ext: 0,
        };
        assert_eq!(train(edr, hdr).unwrap().speed_ext_active, 2);
        assert_eq!(train(edr, old).unwrap().speed_ext_active, 0);
        assert_eq!(train(edr, old).unwrap().speed_active, 4);
    }

    #[test]
    fn two_x_ranks_below_four_x_and_above_one_x() {
        let a = LinkCaps {
            width: 1 | 16 | 2,
            speed: 1,
            speed_ext: 0,
        };
        let b = LinkCaps {
            width: 1 | 16,
            speed: 1,
            speed_ext: 0,
        };
        assert_eq!(train(a, a).unwrap().width_active, 2);
        assert_eq!(train(a, b).unwrap().width_active, 16);
    }

    #[test]
    fn nothing_in_common_means_no_link() {
        let a = LinkCaps {
            width: 1,
            speed: 1,
            speed_ext: 0,
        };
        let b = LinkCaps {
            width: 2,
            speed: 1,
            speed_ext: 0,
        };
        assert_eq!(train(a, b), None);
        let c = LinkCaps {
            width: 1,
            speed: 2,
            speed_ext: 0,
        };
        assert_eq!(train(a, c), None);
    }
}

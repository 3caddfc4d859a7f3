//! Parsers shared by the tests that read QoS tables back from ibsim: ibsm's and OpenSM's
//! `opensm-sl2vl.dump`, and stock `smpquery sl2vl` / `smpquery vlarb` output.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

/// `opensm-sl2vl.dump` rows: (base LID, input port, output port) → VL per SL.
pub fn sl2vl_dump_rows(text: &str) -> HashMap<(u16, u8, u8), Vec<u8>> {
    let mut rows = HashMap::new();
    let mut lid = None;
    for l in text.lines() {
        if l.starts_with('#') || l.trim().is_empty() {
            continue;
        }
        if let Some((_, rest)) = l.split_once("base LID ") {
            lid = rest
                .split(',')
                .next()
                .map(|v| v.trim().parse::<u16>().unwrap());
            continue;
        }
        let (ports, vls) = l.split_once(':').unwrap();
        let p: Vec<u8> = ports
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        let v: Vec<u8> = vls.split_whitespace().map(|v| v.parse().unwrap()).collect();
        assert_eq!((p.len(), v.len()), (2, 16), "dump row {l:?}");
        rows.insert((lid.unwrap(), p[0], p[1]), v);
    }
    rows
}

/// `smpquery sl2vl` rows: (input port, output port) → VL per SL.
pub fn smpquery_sl2vl_rows(text: &str) -> HashMap<(u8, u8), Vec<u8>> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("ports: in")?;
            let (i, rest) = rest.split_once(", out")?;
            let (o, vls) = rest.split_once(':')?;
            let v: Vec<u8> = vls
                .split('|')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| t.parse().unwrap())
                .collect();
            Some(((i.trim().parse().unwrap(), o.trim().parse().unwrap()), v))
        })
        .collect()
}

/// `smpquery vlarb`: the (VL, weight) rows of the low, then the high priority table.
pub fn smpquery_vlarb(text: &str) -> Vec<Vec<(u8, u8)>> {
    let nums = |l: &str| -> Vec<u8> {
        l.split('|')
            .skip(1)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| u8::try_from(hex(t)).unwrap())
            .collect()
    };
    let vl: Vec<Vec<u8>> = text
        .lines()
        .filter(|l| l.starts_with("VL "))
        .map(nums)
        .collect();
    let w: Vec<Vec<u8>> = text
        .lines()
        .filter(|l| l.starts_with("WEIGHT"))
        .map(nums)
        .collect();
    vl.iter()
        .zip(&w)
        .map(|(v, w)| v.iter().copied().zip(w.iter().copied()).collect())
        .collect()
}

/// The nodes an `opensm-sl2vl.dump` lists: (switch?, GUID, base LID), in file order.
pub fn sl2vl_dump_nodes(text: &str) -> Vec<(bool, u64, u16)> {
    text.lines()
        .filter_map(|l| {
            let (head, rest) = l.split_once(", base LID ")?;
            let (kind, guid) = head.rsplit_once(' ')?;
            let lid = rest.split(',').next()?.trim().parse().ok()?;
            Some((kind.trim() == "Switch", hex(guid), lid))
        })
        .collect()
}

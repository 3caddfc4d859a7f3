//! QoS SL-to-VL tables against stock OpenSM 3.3.23 with `-Q` and the default `qos_*` options on
//! ibsim's 2sw2path (`sm/testdata/opensm/2sw2path-qos/`, see the README there): the tables our
//! QoS planner wants on every port equal what OpenSM programmed, our `opensm-sl2vl.dump` of them
//! is OpenSM's file byte for byte, and our reader reads OpenSM's file back to the same tables.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::PathBuf;

use ibmad::attr::port_info::cap::IS_SL_MAP_SUP;
use ibmad::PortNum;
use sm::dump::{parse_sl2vl_dump, sl2vl_dump};
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::qos::program::desired_sl2vl;
use sm::qos::QosConfig;
use sm::{NodeId, Subnet};

mod fixtures;
use fixtures::from_ibnetdiscover;

fn read(f: &str) -> String {
    fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/opensm/2sw2path-qos")
            .join(f),
    )
    .unwrap()
}

/// The subnet as OpenSM saw it, with what ibsim's ports report for QoS: VLCap 4 (VL0-7) and
/// CapabilityMask.IsSLMappingSupported.
fn subnet() -> Subnet {
    let mut s = from_ibnetdiscover(&read("net.txt")).unwrap();
    for p in &mut s.ports {
        if let Some(i) = p.info.as_mut() {
            i.set_vl_cap(4);
            i.capability_mask
                .set(i.capability_mask.get() | IS_SL_MAP_SUP);
        }
    }
    let rep = assign_lids(&mut s, &LidConfig::default(), &Guid2Lid::new()).unwrap();
    assert_eq!(rep.guid2lid.to_text(), read("guid2lid"));
    s
}

#[test]
fn default_qos_sl2vl_is_opensms_and_the_dump_is_byte_exact() {
    let s = subnet();
    let cfg = QosConfig {
        enabled: true,
        ..QosConfig::default()
    };
    let want = |n: NodeId, i: PortNum, o: PortNum| desired_sl2vl(&cfg, 5, &s, None, n, i, o);
    let ours = sl2vl_dump(&s, &want);
    let theirs = read("opensm-sl2vl.dump");
    assert_eq!(ours, theirs);

    // OpenSM's file reads back to the same tables, every port known.
    let (t, unknown) = parse_sl2vl_dump(&s, &theirs).unwrap();
    assert_eq!(unknown, 0);
    let mut rows = 0;
    for id in s.node_ids() {
        let node = s.node(id);
        let outs: Vec<u8> = if node.is_switch() {
            (1..=node.num_ports)
                .filter(|&o| s.port(id, PortNum(o)).is_some_and(|p| p.remote.is_some()))
                .collect()
        } else {
            vec![1]
        };
        for o in outs {
            let ins = if node.is_switch() {
                0..=node.num_ports
            } else {
                0..=0
            };
            for i in ins {
                let (i, o) = (PortNum(i), PortNum(o));
                let got = if node.is_switch() {
                    t.get(id, i, o)
                } else {
                    t.get(id, PortNum(0), o)
                };
                let w = if node.is_switch() {
                    want(id, i, o)
                } else {
                    want(id, o, o)
                };
                assert!(w.is_some(), "{} {i:?} {o:?}: nothing desired", node.desc);
                assert_eq!(got, w, "{} {i:?} {o:?}", node.desc);
                // The default qos_sl2vl masked to VL0-7: SL n -> VL n mod 8, SL 15 -> VL 7.
                let w = w.unwrap();
                for sl in 0..16u8 {
                    assert_eq!(w.vl(sl), Some(if sl == 15 { 7 } else { sl % 8 }));
                }
                rows += 1;
            }
        }
    }
    // 2 switches x 3 linked outputs x 9 inputs + 2 CAs.
    assert_eq!(rows, 2 * 3 * 9 + 2);
}

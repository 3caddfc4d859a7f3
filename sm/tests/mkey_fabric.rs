//! The SM's M_Key (`m_key`) through the simulated fabric: the SMPs the SM sends, TrapRepress
//! included, carry the key the ports hold.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::Topology;
use ibmad::{NodeType, PortNum, Time};
use sm::{Sm, SmConfig};

const KEY: u64 = 0x0bad_cafe_f00d_0001;

fn drive(f: &mut Fabric, h: SmHandle, sm: &mut Sm, until: Time) {
    sm::drive(sm, &mut f.sm_port(h), until, |_| {}).unwrap();
}

/// With an M_Key on the ports, the SM's TrapRepress must carry it: the SMA sends its traps
/// with M_Key 0, and a TrapRepress with the wrong key fails the M_Key check at any protection
/// level. The SM copied the trap's M_Key, so every trap (here 128, a link going down) was
/// resent and each failed repress counted a violation and raised trap 256.
#[test]
fn traps_from_keyed_ports_are_repressed() {
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
    let cas: Vec<_> = topo.nodes_of_type(NodeType::CA).collect();
    let h = f.attach_sm(cas[0], PortNum(1)).unwrap().handle;
    let mut sm = Sm::new(SmConfig {
        port: PortNum(1),
        sweep_interval: std::time::Duration::ZERO,
        m_key: KEY,
        ..SmConfig::default()
    })
    .unwrap();
    drive(&mut f, h, &mut sm, Time::from_millis(60_000));
    assert!(sm.is_up());
    // A host's link goes down: its leaf sends trap 128.
    let leaf = f.peer(cas[2], PortNum(1)).unwrap();
    f.set_link(cas[2], PortNum(1), false).unwrap();
    let until = f.now() + std::time::Duration::from_secs(30);
    drive(&mut f, h, &mut sm, until);
    let a = f.agent(leaf.node).unwrap();
    assert!(a.stats().traps_sent >= 1, "no trap was sent");
    assert_eq!(
        a.stats().traps_sent,
        1,
        "the trap was resent: its TrapRepress failed"
    );
    let pi = a.port_info(PortNum(0)).unwrap();
    assert_eq!(pi.m_key.get(), KEY);
    assert_eq!(
        pi.m_key_violations.get(),
        0,
        "a TrapRepress with the wrong key"
    );
}

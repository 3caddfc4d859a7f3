//! M_Key protection set by the SM (`m_key`, `m_key_protection_level`, `m_key_lease_period`, as
//! OpenSM's `lid_mgr_set_physp_pi`), through the simulated fabric: every end port holds the
//! M_Key, protect bits and lease the SM was given; the SM's own SMPs carry the key, so its
//! sweeps cause no violation; another manager without the key cannot read a protected port's
//! PortInfo (level 2) and is counted as a violation, while with the key it can.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabric_sim::sim::{Fabric, SimConfig};
use fabric_sim::topo::Topology;
use ibmad::attr::PortInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, Lid, MadMeta, Method, NodeType, PortNum, Smp, SmpAttrId, Time};
use sm::{Command, Sm, SmConfig};

const KEY: u64 = 0x0bad_cafe_f00d_0001;

mod sim_util;
use sim_util::{drive, end_ports};

#[test]
fn the_sm_protects_every_end_port_with_its_m_key() {
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
    let cas: Vec<_> = topo.nodes_of_type(NodeType::CA).collect();
    let h = f.attach_sm(cas[0], PortNum(1)).unwrap().handle;
    let tool = f.attach_sm(cas[1], PortNum(1)).unwrap().handle;
    let leaf = f.peer(cas[1], PortNum(1)).unwrap();
    let mut sm = Sm::new(SmConfig {
        port: PortNum(1),
        sweep_interval: std::time::Duration::ZERO,
        m_key: KEY,
        m_key_protection_level: 2,
        m_key_lease_period: 30,
        ..SmConfig::default()
    })
    .unwrap();
    drive(&mut f, h, &mut sm, Time::from_millis(60_000));
    assert!(sm.is_up());
    let ends = end_ports(&f, &topo);
    assert!(ends.len() > topo.num_cas(), "{}", ends.len());
    for (name, pi) in &ends {
        assert_eq!(
            (
                pi.m_key.get(),
                pi.m_key_protect_bits(),
                pi.m_key_lease_period.get()
            ),
            (KEY, 2, 30),
            "{name}"
        );
        assert_eq!(
            pi.m_key_violations.get(),
            0,
            "{name}: the SM's SMPs carry the key"
        );
    }
    // A heavy sweep reads and checks every port again, with the key.
    let now = f.now();
    sm.handle_command(now, Command::HeavySweep);
    drive(&mut f, h, &mut sm, now + std::time::Duration::from_secs(30));
    assert!(sm.is_up());
    assert!(end_ports(&f, &topo)
        .iter()
        .all(|(_, pi)| pi.m_key_violations.get() == 0));

    // Another manager reads the leaf's port 0 PortInfo: without the key nothing comes back.
    let get = |key: u64, tid: u64| {
        let mut smp = Smp::dr_request(
            Method::GET,
            SmpAttrId::PORT_INFO,
            0,
            tid,
            &DrPath::new(&[1]).unwrap(),
        );
        smp.m_key.set(key);
        smp
    };
    let dr = MadMeta {
        port: PortNum(1),
        slid: Lid::PERMISSIVE,
        dlid: Lid::PERMISSIVE,
        ..Default::default()
    };
    let answer = |f: &mut Fabric, sm: &mut Sm, smp: Smp| -> Option<PortInfo> {
        f.sm_send(tool, &dr, smp.as_bytes()).unwrap();
        let until = f.now() + std::time::Duration::from_millis(50);
        drive(f, h, sm, until);
        let mut buf = [0u8; 256];
        let mut got = None;
        while let Some((_, len)) = f.sm_recv(tool, &mut buf).unwrap() {
            let r = Smp::ref_from_bytes(&buf[..len]).unwrap();
            if r.tid.get() == smp.tid.get() && r.attr() == SmpAttrId::PORT_INFO {
                got = Some(*PortInfo::ref_from_prefix(&r.data).unwrap().0);
            }
        }
        got
    };
    assert!(
        answer(&mut f, &mut sm, get(0, 0x7001)).is_none(),
        "read without the key"
    );
    let leaf_pi = |f: &Fabric| *f.agent(leaf.node).unwrap().port_info(PortNum(0)).unwrap();
    assert_eq!(leaf_pi(&f).m_key_violations.get(), 1);
    let pi = answer(&mut f, &mut sm, get(KEY, 0x7002)).expect("read with the key");
    assert_eq!(pi.m_key.get(), KEY);
}

/// With an M_Key on the ports, the SM's TrapRepress must carry it: the SMA sends its traps
/// with M_Key 0, and a TrapRepress with the wrong key fails the M_Key check at any protection
/// level. The SM copied the trap's M_Key, so every trap (here 128, a link going down) was
/// resent and each failed repress counted a violation and raised trap 256.
#[test]
fn traps_from_keyed_ports_are_repressed() {
    let (topo, mut f, h, mut sm) = sim_util::bring_up(
        "fat-tree:2,4",
        SmConfig {
            m_key: KEY,
            ..SmConfig::default()
        },
    );
    let cas: Vec<_> = topo.nodes_of_type(NodeType::CA).collect();
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

//! The SM answers another SM's SMInfo Get (IBA vol1 §14.4.1), through the simulated fabric:
//! the SMA at the SM's port hands the Get to the SM (IsSM set), the SM answers, and the answer
//! travels back directed-route or LID-routed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::Topology;
use ibmad::attr::SmInfo;
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, Guid, Lid, MadMeta, Method, NodeType, PortNum, SmState, Smp, SmpAttrId, Time};
use sm::{Sm, SmConfig};

fn drive(f: &mut Fabric, h: SmHandle, sm: &mut Sm, until: Time) {
    sm::drive(sm, &mut f.sm_port(h), until, |_| {}).unwrap();
}

#[test]
fn the_sm_answers_sminfo_get_directed_route_and_lid_routed() {
    let topo = Topology::generate("fat-tree:2,4").unwrap();
    let mut f = Fabric::new(
        &topo,
        SimConfig {
            trace: true,
            ..SimConfig::default()
        },
    )
    .unwrap();
    let cas: Vec<_> = topo.nodes_of_type(NodeType::CA).collect();
    let (a, b) = (cas[0], cas[1]);
    // Both hosts hang off the same leaf (ports 1 and 2 of leaf-0).
    let leaf = f.peer(a, PortNum(1)).unwrap();
    assert_eq!(f.peer(b, PortNum(1)).unwrap().node, leaf.node);
    let ha = f.attach_sm(a, PortNum(1)).unwrap().handle;
    let hb = f.attach_sm(b, PortNum(1)).unwrap().handle;
    let cfg = SmConfig {
        port: PortNum(1),
        sm_priority: 12,
        sm_key: 0x5eed,
        ..SmConfig::default()
    };
    let mut sm = Sm::new(cfg).unwrap();

    // Before its first sweep: Discovering, GUID still unknown.
    let mut early = Smp::dr_request(
        Method::GET,
        SmpAttrId::SM_INFO,
        0,
        0x1000,
        &DrPath::new(&[1, leaf.port.0]).unwrap(),
    );
    SmInfo::mut_from_prefix(&mut early.data)
        .unwrap()
        .0
        .sm_key
        .set(0x5eed);
    let dr = MadMeta {
        port: PortNum(1),
        slid: Lid::PERMISSIVE,
        dlid: Lid::PERMISSIVE,
        qp: 0,
        sl: 0,
        ..Default::default()
    };
    f.sm_send(hb, &dr, early.as_bytes()).unwrap();
    drive(&mut f, ha, &mut sm, Time::from_millis(5));
    let mut buf = [0u8; 256];
    let got = loop {
        let Some((_, len)) = f.sm_recv(hb, &mut buf).unwrap() else {
            for t in f.trace().iter().filter(|t| t.attr == 0x20) {
                eprintln!("{t}");
            }
            panic!("no answer to the early Get");
        };
        let r = Smp::ref_from_bytes(&buf[..len]).unwrap();
        if r.attr() == SmpAttrId::SM_INFO {
            break *SmInfo::ref_from_prefix(&r.data).unwrap().0;
        }
    };
    assert_eq!(got.sm_state(), SmState::DISCOVERING);
    assert_eq!(got.priority(), 12);

    drive(&mut f, ha, &mut sm, Time::from_millis(2000));
    assert!(sm.is_up());
    while f.sm_recv(hb, &mut buf).unwrap().is_some() {}
    let port_guid = topo
        .port(fabric_sim::topo::PortRef {
            node: a,
            port: PortNum(1),
        })
        .unwrap()
        .guid();

    // Directed route from the other host, with the right SM_Key.
    let mut req = early;
    req.tid.set(0x2000);
    f.sm_send(hb, &dr, req.as_bytes()).unwrap();
    let until = f.now() + std::time::Duration::from_millis(5);
    drive(&mut f, ha, &mut sm, until);
    let Some((_, len)) = f.sm_recv(hb, &mut buf).unwrap() else {
        for t in f.trace().iter().filter(|t| t.tid == 0x2000) {
            eprintln!("{t}");
        }
        panic!("no DR answer");
    };
    let r = Smp::ref_from_bytes(&buf[..len]).unwrap();
    let info = *SmInfo::ref_from_prefix(&r.data).unwrap().0;
    assert_eq!(r.tid.get(), 0x2000);
    assert_eq!(info.guid(), port_guid);
    assert_eq!(info.sm_state(), SmState::MASTER);
    assert_eq!(info.priority(), 12);
    assert_eq!(info.sm_key.get(), 0x5eed);
    assert!(info.act_count.get() >= 1);

    // LID-routed to the SM's LID; no M_Key protection, so the SM_Key is disclosed.
    let sm_lid = sm.sm_lid();
    let req = Smp::lid_request(Method::GET, SmpAttrId::SM_INFO, 0, 0x3000);
    let lr = MadMeta {
        port: PortNum(1),
        slid: Lid(0),
        dlid: sm_lid,
        qp: 0,
        sl: 0,
        ..Default::default()
    };
    f.sm_send(hb, &lr, req.as_bytes()).unwrap();
    let until = f.now() + std::time::Duration::from_millis(5);
    drive(&mut f, ha, &mut sm, until);
    let (_, len) = f.sm_recv(hb, &mut buf).unwrap().expect("LID-routed answer");
    let r = Smp::ref_from_bytes(&buf[..len]).unwrap();
    let info = *SmInfo::ref_from_prefix(&r.data).unwrap().0;
    assert_eq!(r.tid.get(), 0x3000);
    assert_eq!(info.guid(), port_guid);
    assert_eq!(info.sm_key.get(), 0x5eed);
    assert_ne!(info.guid(), Guid(0));
}

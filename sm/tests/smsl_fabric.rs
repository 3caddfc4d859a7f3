//! PortInfo.MasterSMSL through the simulated fabric: the SL ports reach the SM and SA on (the
//! kernel's `sm_sl`, which SA queries ride). Where the routing engine assigns path SLs it is
//! the engine's SL of the path from the port to the SM (OpenSM `link_mgr_get_smsl`), so SA
//! traffic keeps the engine's deadlock freedom; elsewhere it is `sm_sl`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::Topology;
use ibmad::{Lid, NodeType, PortNum, Time};
use sm::{Sm, SmConfig};

fn drive(f: &mut Fabric, h: SmHandle, sm: &mut Sm, until: Time) {
    sm::drive(sm, &mut f.sm_port(h), until, |_| {}).unwrap();
}

/// Brings `spec` up with `cfg`; returns every end port's (LID, MasterSMSL) and the SM.
fn bring_up(spec: &str, cfg: SmConfig) -> (Vec<(Lid, u8)>, Sm) {
    let topo = Topology::generate(spec).unwrap();
    let mut f = Fabric::new(&topo, SimConfig::default()).unwrap();
    let cas: Vec<_> = topo.nodes_of_type(NodeType::CA).collect();
    let h = f.attach_sm(cas[0], PortNum(1)).unwrap().handle;
    let mut sm = Sm::new(SmConfig {
        port: PortNum(1),
        sweep_interval: std::time::Duration::ZERO,
        ..cfg
    })
    .unwrap();
    drive(&mut f, h, &mut sm, Time::from_millis(60_000));
    assert!(sm.is_up(), "{spec}");
    let mut v = Vec::new();
    for (id, n) in topo.nodes() {
        let a = f.agent(id).unwrap();
        let ports: Vec<u8> = if n.is_switch() {
            vec![0]
        } else {
            (1..=n.num_ports()).collect()
        };
        for p in ports {
            let pi = a.port_info(PortNum(p)).unwrap();
            v.push((Lid(pi.lid.get()), pi.master_sm_sl()));
        }
    }
    (v, sm)
}

#[test]
fn master_sm_sl_is_the_engines_path_sl_to_the_sm() {
    let mut cfg = SmConfig {
        routing_engine: vec!["lash".into(), "no_fallback".into()],
        ..SmConfig::default()
    };
    cfg.qos.enabled = true;
    cfg.engine_options.qos = true;
    let (ports, sm) = bring_up("torus:5,5", cfg);
    let routes = sm.routes().expect("routed");
    assert!(routes.path_sl.is_some(), "lash assigns path SLs");
    let to_sm = sm.sm_lid();
    for &(lid, smsl) in &ports {
        assert_eq!(smsl, routes.sl(lid, to_sm), "port LID {}", lid.0);
    }
    let on: std::collections::BTreeSet<u8> = ports.iter().map(|p| p.1).collect();
    assert!(on.len() > 1, "every port on one SL: {on:?}");
}

#[test]
fn master_sm_sl_is_sm_sl_without_engine_sls() {
    let (ports, _) = bring_up(
        "fat-tree:2,4",
        SmConfig {
            sm_sl: 3,
            ..SmConfig::default()
        },
    );
    assert!(ports.len() > 8);
    assert!(ports.iter().all(|p| p.1 == 3), "{ports:?}");
}

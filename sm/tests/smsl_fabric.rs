//! PortInfo.MasterSMSL through the simulated fabric: the SL ports reach the SM and SA on (the
//! kernel's `sm_sl`, which SA queries ride). Where the routing engine assigns path SLs it is
//! the engine's SL of the path from the port to the SM (OpenSM `link_mgr_get_smsl`), so SA
//! traffic keeps the engine's deadlock freedom; elsewhere it is `sm_sl`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use ibmad::Lid;
use sm::{Sm, SmConfig};

/// Brings `spec` up with `cfg`; returns every end port's (LID, MasterSMSL) and the SM.
fn bring_up(spec: &str, cfg: SmConfig) -> (Vec<(Lid, u8)>, Sm) {
    let (topo, f, _, sm) = sim_util::bring_up(spec, cfg);
    let ports = sim_util::end_ports(&f, &topo)
        .into_iter()
        .map(|(_, pi)| (Lid(pi.lid.get()), pi.master_sm_sl()))
        .collect();
    (ports, sm)
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

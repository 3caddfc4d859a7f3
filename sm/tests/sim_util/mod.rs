//! The SM on the simulated fabric, for the tests that read back what it programmed into the
//! agents: bring-up and the end ports' PortInfo.
#![allow(dead_code, clippy::unwrap_used)]

use fabric_sim::sim::{Fabric, SimConfig, SmHandle};
use fabric_sim::topo::Topology;
use ibmad::attr::PortInfo;
use ibmad::{NodeType, PortNum, Time};
use sm::{Sm, SmConfig};

/// Runs `sm` on the fabric until `until`.
pub fn drive(f: &mut Fabric, h: SmHandle, sm: &mut Sm, until: Time) {
    sm::drive(sm, &mut f.sm_port(h), until, |_| {}).unwrap();
}

/// The generated fabric `spec` brought up by an SM on the first CA with `cfg` (its port and
/// sweeping set here); asserts SUBNET UP.
pub fn bring_up(spec: &str, cfg: SmConfig) -> (Topology, Fabric, SmHandle, Sm) {
    bring_up_topo(Topology::generate(spec).unwrap(), spec, cfg)
}

/// [`bring_up`] of `topo` (named `spec` in messages).
pub fn bring_up_topo(
    topo: Topology,
    spec: &str,
    cfg: SmConfig,
) -> (Topology, Fabric, SmHandle, Sm) {
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
    assert!(sm.is_up(), "{spec}: the subnet came up");
    (topo, f, h, sm)
}

/// Every end port (CA ports, switch ports 0) as its agent holds it: (name, PortInfo).
pub fn end_ports(f: &Fabric, topo: &Topology) -> Vec<(String, PortInfo)> {
    let mut v = Vec::new();
    for (id, n) in topo.nodes() {
        let a = f.agent(id).unwrap();
        let ports: Vec<u8> = if n.is_switch() {
            vec![0]
        } else {
            (1..=n.num_ports()).collect()
        };
        for p in ports {
            if let Some(pi) = a.port_info(PortNum(p)) {
                v.push((format!("{} port {p}", n.name()), *pi));
            }
        }
    }
    v
}

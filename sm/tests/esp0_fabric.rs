//! `lmc_esp0` through the simulated fabric (OpenSM `osm_switch_sp0_is_lmc_capable`): with LMC
//! 1, a switch whose SwitchInfo says EnhancedPort0 gets two LIDs and LMC 1 on its port 0 when
//! the option is on, one LID and LMC 0 (like every base port 0) when it is off; every CA
//! reaches every LID of it either way.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_util;

use fabric_sim::topo::Topology;
use ibmad::{Lid, NodeType, PortNum};
use sm::SmConfig;

#[test]
fn lmc_esp0_gives_an_enhanced_port_0_the_subnets_lmc() {
    for on in [false, true] {
        let mut topo = Topology::generate("fat-tree:2,4").unwrap();
        let esp0 = topo.nodes_of_type(NodeType::SWITCH).next().unwrap();
        let base = topo.nodes_of_type(NodeType::SWITCH).nth(1).unwrap();
        topo.set_enhanced_port0(esp0, true).unwrap();
        let cfg = SmConfig {
            lmc: 1,
            lmc_esp0: on,
            ..SmConfig::default()
        };
        let (topo, f, _, sm) = sim_util::bring_up_topo(topo, "fat-tree:2,4", cfg);
        let p0 = |n| *f.agent(n).unwrap().port_info(PortNum(0)).unwrap();
        let (e, b) = (p0(esp0), p0(base));
        assert_eq!(e.lmc(), u8::from(on), "lmc_esp0 {on}");
        assert_eq!(b.lmc(), 0, "a base port 0 has one LID");
        let lid = e.lid();
        if on {
            assert_eq!(lid.0 % 2, 0, "a range of two LIDs is aligned");
        }
        // Every switch routes every LID of the enhanced switch's range toward it.
        let lids: Vec<Lid> = (0..1u16 << e.lmc()).map(|o| Lid(lid.0 + o)).collect();
        for sw in topo.nodes_of_type(NodeType::SWITCH).filter(|&s| s != esp0) {
            for &l in &lids {
                assert!(
                    f.agent(sw).unwrap().lft_port(l).is_some(),
                    "lmc_esp0 {on}: no route to LID {} at {sw:?}",
                    l.0
                );
            }
        }
        assert!(sm.is_up());
    }
}

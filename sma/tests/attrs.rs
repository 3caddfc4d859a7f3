//! Get/Set round trips for every attribute and every status-code path (IBA vol1 §13.4.7
//! Table 119; §14.2.5 attributes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::attr::port_info::cap;
use ibmad::attr::{
    GuidInfo, MftBlock, NodeDesc, NodeInfo, PKeyTable, PortInfo, SlToVl, SwitchInfo, VlArbTable,
};
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
use ibmad::{Guid, Lid, Method, PortNum, Smp, SmpAttrId, Status, Time};
use sma::Event;

fn status(s: &Smp) -> Status {
    s.status()
}

// ----- NodeInfo / NodeDescription ------------------------------------------------------------

#[test]
fn node_info_on_a_ca_reports_the_ingress_port() {
    let mut a = ca(0x500, 2);
    a.handle_link(Time::ZERO, PortNum(2), UP);
    let r = get(&mut a, 2, SmpAttrId::NODE_INFO, 0);
    assert_eq!(status(&r), Status::OK);
    let ni = NodeInfo::read_from_prefix(&r.data).unwrap().0;
    assert_eq!(ni.base_version, 1);
    assert_eq!(ni.class_version, 1);
    assert_eq!(ni.node_type, 1);
    assert_eq!(ni.num_ports, 2);
    assert_eq!(ni.node_guid(), Guid(0x500));
    assert_eq!(
        ni.port_guid(),
        Guid(0x502),
        "PortGUID of the receiving port"
    );
    assert_eq!(ni.local_port_num, 2);
    assert_eq!(ni.vendor_id(), 0x0002c9);
    assert_eq!(ni.device_id.get(), 0x673c);
    assert_eq!(ni.partition_cap.get(), sma::PARTITION_CAP);
}

#[test]
fn node_info_on_a_switch_reports_port0_guid_and_ingress_port() {
    let mut cfg = switch_cfg(0x700, 4);
    cfg.port_guids[0] = Guid(0x7777);
    let mut a = sma::Agent::new(cfg, sma::NoHardware).unwrap();
    let r = get(&mut a, 0, SmpAttrId::NODE_INFO, 0);
    let ni = NodeInfo::read_from_prefix(&r.data).unwrap().0;
    assert_eq!(ni.node_type, 2);
    assert_eq!(ni.port_guid(), Guid(0x7777));
    assert_eq!(ni.local_port_num, 0);
    assert_eq!(ni.num_ports, 4);
}

#[test]
fn node_description_get_and_set_is_refused() {
    let mut a = ca(0x500, 1);
    let r = get(&mut a, 1, SmpAttrId::NODE_DESC, 0);
    let nd = NodeDesc::read_from_prefix(&r.data).unwrap().0;
    assert_eq!(nd.as_string(), "host 0x500");
    let r = set(&mut a, 1, SmpAttrId::NODE_DESC, 0, &[b'x'; 64]);
    assert_eq!(status(&r), Status::METHOD_ATTR_NOT_SUPPORTED);
    let r = set(&mut a, 1, SmpAttrId::NODE_INFO, 0, &[0; 40]);
    assert_eq!(status(&r), Status::METHOD_ATTR_NOT_SUPPORTED);
}

// ----- status code paths ---------------------------------------------------------------------

#[test]
fn status_bad_class_version() {
    let mut a = ca(0x500, 1);
    let mut req = dr(Method::GET, SmpAttrId::NODE_INFO, 0, &[]);
    req.class_version = 2;
    let r = local(&mut a, 1, req).unwrap();
    assert_eq!(status(&r), Status::BAD_VERSION);
    assert_eq!(r.method(), Method::GET_RESP);
}

#[test]
fn status_method_not_supported() {
    let mut a = ca(0x500, 1);
    for m in [Method::SEND, Method::REPORT, Method(0x10)] {
        let r = local(&mut a, 1, dr(m, SmpAttrId::NODE_INFO, 0, &[])).unwrap();
        assert_eq!(status(&r), Status::METHOD_NOT_SUPPORTED, "{m:?}");
    }
}

#[test]
fn status_method_attribute_not_supported() {
    let mut a = ca(0x500, 1);
    for attr in [
        SmpAttrId::SWITCH_INFO,
        SmpAttrId::LINEAR_FT,
        SmpAttrId::MULTICAST_FT,
        SmpAttrId::VENDOR_DIAG,
        SmpAttrId::SM_INFO,
        SmpAttrId(0x1234),
    ] {
        let r = get(&mut a, 1, attr, 0);
        assert_eq!(status(&r), Status::METHOD_ATTR_NOT_SUPPORTED, "{attr:?}");
    }
}

#[test]
fn status_invalid_modifier() {
    let mut a = switch(0x700, 4);
    for (attr, m) in [
        (SmpAttrId::PORT_INFO, 5u32),
        (SmpAttrId::LINEAR_FT, 768),   // 49152 / 64 = 768 blocks: 0..=767
        (SmpAttrId::MULTICAST_FT, 32), // 1024 / 32 = 32 blocks
        (SmpAttrId::MULTICAST_FT, 1 << 28), // 5 ports: only position 0
        (SmpAttrId::P_KEY_TABLE, 1),
        (SmpAttrId::P_KEY_TABLE, 5 << 16),
        (SmpAttrId::GUID_INFO, 1),
        (SmpAttrId::VL_ARB_TABLE, 5 << 16),
        (SmpAttrId::VL_ARB_TABLE, (1 << 16) | 9),
        (SmpAttrId::SL_TO_VL_TABLE, 0x0105),
        (SmpAttrId::SL_TO_VL_TABLE, 0x10000),
        (SmpAttrId::SWITCH_INFO, 1),
    ] {
        let r = get(&mut a, 0, attr, m);
        assert_eq!(status(&r), Status::INVALID_FIELD, "{attr:?} {m:#x}");
    }
    let r = get(&mut a, 0, SmpAttrId::LINEAR_FT, 767);
    assert_eq!(status(&r), Status::OK);
}

// ----- PortInfo ------------------------------------------------------------------------------

#[test]
fn port_info_get_modifier_zero_on_ca_is_the_receiving_port() {
    let mut a = ca(0x500, 2);
    a.handle_link(Time::ZERO, PortNum(2), UP);
    let r = get(&mut a, 2, SmpAttrId::PORT_INFO, 0);
    let pi = PortInfo::read_from_prefix(&r.data).unwrap().0;
    assert_eq!(pi.local_port_num, 2);
    assert_eq!(pi.port_state(), ibmad::PortState::INIT);
    assert_eq!(pi.phys_state(), ibmad::PhysState::LINK_UP);
    assert_eq!(pi.link_width_active, 2);
    assert_eq!(pi.link_speed_active(), 4);
    let r1 = get(&mut a, 2, SmpAttrId::PORT_INFO, 1);
    let p1 = PortInfo::read_from_prefix(&r1.data).unwrap().0;
    assert_eq!(p1.port_state(), ibmad::PortState::DOWN);
    assert_eq!(
        p1.local_port_num, 2,
        "LocalPortNum = ingress port, not the modifier"
    );
}

#[test]
fn port_info_set_round_trip() {
    let mut a = rec_ca(0x500, 1);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let mut pi = pi_template(&a, 1);
    pi.lid.set(0x10);
    pi.set_lmc(2);
    pi.master_sm_lid.set(1);
    pi.set_master_sm_sl(3);
    pi.set_subnet_timeout(18);
    pi.set_neighbor_mtu(4);
    pi.set_operational_vls(3);
    pi.link_width_enabled = 0xFF;
    pi.set_link_speed_enabled(0xF);
    pi.vl_high_limit = 7;
    pi.set_hoq_life(0x13);
    pi.m_key_lease_period.set(60);
    let r = set_pi(&mut a, 1, 1, &pi);
    assert_eq!(status(&r), Status::OK);
    let got = PortInfo::read_from_prefix(&r.data).unwrap().0;
    let stored = port_info(&a, 1);
    assert_eq!(got, stored, "Set answers with the resulting attribute");
    assert_eq!(stored.lid(), Lid(0x10));
    assert_eq!(stored.lmc(), 2);
    assert_eq!(stored.master_sm_lid(), Lid(1));
    assert_eq!(stored.master_sm_sl(), 3);
    assert_eq!(stored.subnet_timeout(), 18);
    assert_eq!(stored.neighbor_mtu(), 4);
    assert_eq!(stored.operational_vls(), 3);
    assert_eq!(stored.link_width_enabled, 0x03, "0xFF = set to supported");
    assert_eq!(stored.link_speed_enabled(), 0x07, "0xF = set to supported");
    assert_eq!(stored.vl_high_limit, 7);
    assert_eq!(stored.hoq_life(), 0x13);
    assert_eq!(stored.port_state(), ibmad::PortState::INIT, "NoStateChange");
    assert!(a.lid_matches(PortNum(1), Lid(0x13)));
    assert!(!a.lid_matches(PortNum(1), Lid(0x14)));
    assert!(!a.lid_matches(PortNum(1), Lid(0x0F)));
    assert_eq!(a.hardware().port_infos, vec![PortNum(1)]);
    let ev = events(&mut a);
    assert!(ev.contains(&Event::LidChanged {
        port: PortNum(1),
        lid: Lid(0x10),
        lmc: 2
    }));
}

#[test]
fn port_info_invalid_sets_change_nothing() {
    type Mutate = fn(&mut PortInfo);
    let cases: &[(&str, Mutate)] = &[
        ("NeighborMTU > MTUCap", |p| p.set_neighbor_mtu(6)),
        ("NeighborMTU 0", |p| p.set_neighbor_mtu(0)),
        ("OperationalVLs > VLCap", |p| p.set_operational_vls(5)),
        ("LID multicast", |p| p.lid.set(0xC000)),
        ("LID permissive", |p| p.lid.set(0xFFFF)),
        ("MasterSMLID multicast", |p| p.master_sm_lid.set(0xC001)),
        ("LinkWidthEnabled 12x unsupported", |p| {
            p.link_width_enabled = 0x08
        }),
        ("LinkSpeedEnabled FDR10 bit", |p| {
            p.set_link_speed_enabled(0x8)
        }),
        ("LinkSpeedExtEnabled unsupported", |p| {
            p.set_link_speed_ext_enabled(1)
        }),
        ("PortState Init->Active", |p| {
            p.set_port_state(ibmad::PortState::ACTIVE)
        }),
        ("PortState reserved", |p| {
            p.set_port_state(ibmad::PortState(7))
        }),
        ("PhysState LinkUp not writable", |p| {
            p.set_phys_state(ibmad::PhysState::LINK_UP)
        }),
        ("LinkDownDefaultState 3", |p| {
            p.set_link_down_default_state(3)
        }),
    ];
    for (what, mutate) in cases {
        let mut a = rec_ca(0x500, 1);
        a.handle_link(Time::ZERO, PortNum(1), UP);
        let before = port_info(&a, 1);
        let mut pi = pi_template(&a, 1);
        pi.lid.set(0x22); // a valid change that must not be applied either
        mutate(&mut pi);
        // AttributeModifier bit 31 (SMSupportsExtendedSpeeds): LinkSpeedExtEnabled is read.
        let r = set(&mut a, 1, SmpAttrId::PORT_INFO, 1 | 1 << 31, pi.as_bytes());
        assert_eq!(status(&r), Status::INVALID_FIELD, "{what}");
        assert_eq!(port_info(&a, 1), before, "{what}: nothing changed");
        assert!(
            a.hardware().port_infos.is_empty(),
            "{what}: hardware untouched"
        );
    }
}

#[test]
fn port_info_link_speed_ext_enabled_needs_sm_supports_extended_speeds() {
    let mut a = rec_ca(0x500, 1);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    let before = port_info(&a, 1);
    let mut pi = pi_template(&a, 1);
    pi.set_link_speed_ext_enabled(1); // unsupported: an error only with bit 31
    pi.lid.set(0x22);
    let r = set_pi(&mut a, 1, 1, &pi);
    assert_eq!(status(&r), Status::OK);
    let after = port_info(&a, 1);
    assert_eq!(after.lid.get(), 0x22, "the rest of the Set is applied");
    assert_eq!(
        after.link_speed_ext_enabled(),
        before.link_speed_ext_enabled(),
        "LinkSpeedExtEnabled is left alone without bit 31"
    );
    // A Get with bit 31 addresses the same port.
    let g = get(&mut a, 1, SmpAttrId::PORT_INFO, 1 | 1 << 31);
    assert_eq!(status(&g), Status::OK);
}

#[test]
fn port_info_set_port_beyond_num_ports() {
    let mut a = ca(0x500, 1);
    let pi = pi_template(&a, 1);
    let r = set_pi(&mut a, 1, 2, &pi);
    assert_eq!(status(&r), Status::INVALID_FIELD);
}

#[test]
fn switch_external_port_ignores_lid_fields_and_port0_holds_them() {
    let mut a = switch(0x700, 4);
    a.handle_link(Time::ZERO, PortNum(3), UP);
    let mut pi = pi_template(&a, 3);
    pi.lid.set(9);
    pi.master_sm_lid.set(2);
    pi.m_key.set(0x55);
    let r = set_pi(&mut a, 0, 3, &pi);
    assert_eq!(status(&r), Status::OK);
    let p3 = port_info(&a, 3);
    assert_eq!(p3.lid.get(), 0);
    assert_eq!(p3.master_sm_lid.get(), 0);
    assert_eq!(p3.m_key.get(), 0);
    let mut p0 = pi_template(&a, 0);
    p0.lid.set(9);
    p0.set_lmc(3);
    let r = set_pi(&mut a, 0, 0, &p0);
    assert_eq!(status(&r), Status::OK);
    assert_eq!(port_info(&a, 0).lid(), Lid(9));
    assert_eq!(port_info(&a, 0).lmc(), 0, "base switch port 0 has LMC 0");
    assert!(a.lid_matches(PortNum(0), Lid(9)));
    assert!(
        !a.lid_matches(PortNum(3), Lid(9)),
        "external ports own no LID"
    );
}

#[test]
fn enhanced_port0_keeps_its_lmc() {
    let mut cfg = switch_cfg(0x700, 4);
    cfg.enhanced_port0 = true;
    let mut a = sma::Agent::new(cfg, sma::NoHardware).unwrap();
    let mut p0 = pi_template(&a, 0);
    p0.lid.set(8);
    p0.set_lmc(2);
    assert_eq!(status(&set_pi(&mut a, 0, 0, &p0)), Status::OK);
    assert_eq!(port_info(&a, 0).lmc(), 2);
    assert!(a.lid_matches(PortNum(0), Lid(11)));
    let si = SwitchInfo::read_from_prefix(&get(&mut a, 0, SmpAttrId::SWITCH_INFO, 0).data)
        .unwrap()
        .0;
    assert_eq!(si.enhanced_port0(), 1);
}

#[test]
fn client_reregister_raises_an_event_and_reads_back_zero() {
    let mut a = ca(0x500, 1);
    let mut pi = pi_template(&a, 1);
    pi.set_client_reregister(1);
    let r = set_pi(&mut a, 1, 1, &pi);
    assert_eq!(status(&r), Status::OK);
    assert_eq!(port_info(&a, 1).client_reregister(), 0);
    assert!(events(&mut a).contains(&Event::ClientReregister { port: PortNum(1) }));
}

// ----- SwitchInfo ----------------------------------------------------------------------------

#[test]
fn switch_info_get_set_round_trip() {
    let mut a = rec_switch(0x700, 4);
    let r = get(&mut a, 0, SmpAttrId::SWITCH_INFO, 0);
    let mut si = SwitchInfo::read_from_prefix(&r.data).unwrap().0;
    assert_eq!(si.linear_fdb_cap.get(), 49152);
    assert_eq!(si.multicast_fdb_cap.get(), 1024);
    assert_eq!(si.linear_fdb_top.get(), 0);
    assert_eq!(si.life_time_value(), sma::DEFAULT_LIFE_TIME);
    si.linear_fdb_top.set(200);
    si.set_life_time_value(9);
    si.default_port = 2;
    si.multicast_fdb_top.set(0xC010);
    si.linear_fdb_cap.set(1); // read-only: ignored
    let r = set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    assert_eq!(status(&r), Status::OK);
    let got = SwitchInfo::read_from_prefix(&r.data).unwrap().0;
    assert_eq!(got, a.switch_info().unwrap());
    assert_eq!(got.linear_fdb_top.get(), 200);
    assert_eq!(got.life_time_value(), 9);
    assert_eq!(got.default_port, 2);
    assert_eq!(got.multicast_fdb_top.get(), 0xC010);
    assert_eq!(got.linear_fdb_cap.get(), 49152);
    assert_eq!(a.hardware().switch_infos, 1);
}

#[test]
fn switch_info_invalid_values() {
    let mut a = switch(0x700, 4);
    let base = a.switch_info().unwrap();
    let mut top = base;
    top.linear_fdb_top.set(49152);
    let mut dp = base;
    dp.default_port = 5;
    let mut mt = base;
    mt.multicast_fdb_top.set(0xC000 + 1024);
    for (what, si) in [
        ("LinearFDBTop", top),
        ("DefaultPort", dp),
        ("MulticastFDBTop", mt),
    ] {
        let r = set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
        assert_eq!(status(&r), Status::INVALID_FIELD, "{what}");
        assert_eq!(a.switch_info().unwrap(), base, "{what}: unchanged");
    }
}

#[test]
fn switch_info_port_state_change_is_write_one_to_clear() {
    let mut a = switch(0x700, 4);
    a.handle_link(Time::ZERO, PortNum(1), UP);
    assert_eq!(a.switch_info().unwrap().port_state_change(), 1);
    let mut si = a.switch_info().unwrap();
    si.set_port_state_change(0);
    set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    assert_eq!(
        a.switch_info().unwrap().port_state_change(),
        1,
        "writing 0 keeps it"
    );
    si.set_port_state_change(1);
    set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    assert_eq!(
        a.switch_info().unwrap().port_state_change(),
        0,
        "writing 1 clears it"
    );
}

// ----- LFT / MFT -----------------------------------------------------------------------------

#[test]
fn lft_round_trip_and_data_plane_lookup() {
    let mut a = rec_switch(0x700, 4);
    let r = get(&mut a, 0, SmpAttrId::LINEAR_FT, 3);
    assert_eq!(r.data, [0xFF; 64], "unwritten blocks read 0xFF");
    let mut blk = [0xFFu8; 64];
    blk[0] = 0;
    blk[1] = 1;
    blk[2] = 4;
    blk[3] = 9; // beyond NumPorts: no route
    let r = set(&mut a, 0, SmpAttrId::LINEAR_FT, 2, &blk);
    assert_eq!(status(&r), Status::OK);
    assert_eq!(r.data, blk);
    assert_eq!(get(&mut a, 0, SmpAttrId::LINEAR_FT, 2).data, blk);
    assert_eq!(a.lft_port(Lid(129)), None, "beyond LinearFDBTop (0)");
    let mut si = a.switch_info().unwrap();
    si.linear_fdb_top.set(130);
    set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    assert_eq!(a.lft_port(Lid(128)), Some(PortNum(0)));
    assert_eq!(a.lft_port(Lid(129)), Some(PortNum(1)));
    assert_eq!(a.lft_port(Lid(130)), Some(PortNum(4)));
    assert_eq!(a.lft_port(Lid(131)), None, "beyond top");
    assert_eq!(a.lft_port(Lid(127)), None, "0xFF");
    si.linear_fdb_top.set(200);
    set(&mut a, 0, SmpAttrId::SWITCH_INFO, 0, si.as_bytes());
    assert_eq!(a.lft_port(Lid(131)), None, "port 9 > NumPorts");
    assert_eq!(a.hardware().lft_blocks, vec![2]);
    assert!(events(&mut a).contains(&Event::LftChanged { block: 2 }));
    let r = set(&mut a, 0, SmpAttrId::LINEAR_FT, 768, &blk);
    assert_eq!(status(&r), Status::INVALID_FIELD);
}

#[test]
fn mft_round_trip() {
    let mut a = rec_switch(0x700, 20); // 21 ports: positions 0 and 1
    let mut m = MftBlock::new_zeroed();
    m.masks[0].set(0x0006);
    m.masks[31].set(0x8001);
    let modifier = (1u32 << 28) | 3;
    let r = set(&mut a, 0, SmpAttrId::MULTICAST_FT, modifier, m.as_bytes());
    assert_eq!(status(&r), Status::OK);
    let g = get(&mut a, 0, SmpAttrId::MULTICAST_FT, modifier);
    assert_eq!(MftBlock::read_from_prefix(&g.data).unwrap().0, m);
    let other = get(&mut a, 0, SmpAttrId::MULTICAST_FT, 3);
    assert_eq!(other.data, [0; 64], "position 0 untouched");
    assert_eq!(a.mft_masks(Lid(0xC000 + 96)), vec![(1, 0x0006)]);
    assert_eq!(a.hardware().mft_blocks, vec![(3, 1)]);
}

// ----- QoS tables ----------------------------------------------------------------------------

#[test]
fn sl2vl_round_trip_switch_pairs_and_all_outputs() {
    let mut a = rec_switch(0x700, 4);
    let mut t = SlToVl::default();
    for sl in 0..16 {
        t.set_vl(sl, sl % 8);
    }
    let r = set(&mut a, 0, SmpAttrId::SL_TO_VL_TABLE, 0x0103, t.as_bytes());
    assert_eq!(status(&r), Status::OK);
    let g = get(&mut a, 0, SmpAttrId::SL_TO_VL_TABLE, 0x0103);
    assert_eq!(&g.data[..8], t.as_bytes());
    assert_eq!(
        get(&mut a, 0, SmpAttrId::SL_TO_VL_TABLE, 0x0104).data[..8],
        [0; 8]
    );
    assert_eq!(a.sl_to_vl(PortNum(1), PortNum(3), 9), Some(1));
    // Bit 16: all output ports for input 2.
    let mut t2 = SlToVl::default();
    t2.set_vl(0, 5);
    let r = set(
        &mut a,
        0,
        SmpAttrId::SL_TO_VL_TABLE,
        0x1_0200,
        t2.as_bytes(),
    );
    assert_eq!(status(&r), Status::OK);
    for out in 0..=4 {
        assert_eq!(a.sl_to_vl(PortNum(2), PortNum(out), 0), Some(5));
    }
    assert_eq!(a.hardware().sl2vl.len(), 1 + 5);
}

#[test]
fn sl2vl_optimized_programming_all_inputs_and_all_outputs() {
    let mut a = rec_switch(0x700, 4);
    let si = SwitchInfo::read_from_prefix(&get(&mut a, 0, SmpAttrId::SWITCH_INFO, 0).data)
        .unwrap()
        .0;
    assert_eq!(
        si.optimized_sl2vl() & 1,
        1,
        "SwitchInfo advertises OptimizedSLtoVLMappingProgramming"
    );
    let mut t = SlToVl::default();
    t.set_vl(1, 3);
    // 0x30000: every (input, output) pair in one Set.
    let r = set(&mut a, 0, SmpAttrId::SL_TO_VL_TABLE, 0x3_0000, t.as_bytes());
    assert_eq!(status(&r), Status::OK);
    assert_eq!(&r.data[..8], t.as_bytes(), "the response carries the table");
    for i in 0..=4 {
        for o in 0..=4 {
            assert_eq!(a.sl_to_vl(PortNum(i), PortNum(o), 1), Some(3));
        }
    }
    // 0x20000 | out: every input to one output.
    let mut u = SlToVl::default();
    u.set_vl(1, 1);
    let r = set(&mut a, 0, SmpAttrId::SL_TO_VL_TABLE, 0x2_0003, u.as_bytes());
    assert_eq!(status(&r), Status::OK);
    for i in 0..=4 {
        assert_eq!(a.sl_to_vl(PortNum(i), PortNum(3), 1), Some(1));
        assert_eq!(a.sl_to_vl(PortNum(i), PortNum(2), 1), Some(3));
    }
    // The all-ports bits are for Sets: a Get names one pair.
    let g = get(&mut a, 0, SmpAttrId::SL_TO_VL_TABLE, 0x2_0003);
    assert_eq!(status(&g), Status::INVALID_FIELD);
    assert_eq!(
        &get(&mut a, 0, SmpAttrId::SL_TO_VL_TABLE, 0x0203).data[..8],
        u.as_bytes()
    );
}

#[test]
fn vl_arb_blocks_beyond_the_cap_do_not_exist() {
    let mut a = rec_switch(0x700, 4);
    let t = VlArbTable::new_zeroed();
    // VL_ARB_CAP is 8: one block of each priority (1 low, 3 high); blocks 2 and 4 are past it.
    for (block, ok) in [(1u32, true), (2, false), (3, true), (4, false)] {
        let r = set(
            &mut a,
            0,
            SmpAttrId::VL_ARB_TABLE,
            (block << 16) | 1,
            t.as_bytes(),
        );
        let want = if ok {
            Status::OK
        } else {
            Status::INVALID_FIELD
        };
        assert_eq!(status(&r), want, "block {block}");
        let g = get(&mut a, 0, SmpAttrId::VL_ARB_TABLE, (block << 16) | 1);
        assert_eq!(status(&g), want, "Get block {block}");
    }
}

#[test]
fn sl2vl_on_a_ca_is_per_port() {
    let mut a = ca(0x500, 2);
    let mut t = SlToVl::default();
    t.set_vl(3, 2);
    assert_eq!(
        status(&set(&mut a, 2, SmpAttrId::SL_TO_VL_TABLE, 0, t.as_bytes())),
        Status::OK
    );
    assert_eq!(a.sl_to_vl(PortNum(2), PortNum(2), 3), Some(2));
    assert_eq!(a.sl_to_vl(PortNum(1), PortNum(1), 3), Some(0));
}

#[test]
fn vl_arb_round_trip() {
    let mut a = rec_switch(0x700, 4);
    let mut t = VlArbTable::new_zeroed();
    t.entries[0].vl = 1;
    t.entries[0].weight = 64;
    t.entries[7].vl = 3;
    t.entries[7].weight = 255;
    let modifier = (3u32 << 16) | 2;
    assert_eq!(
        status(&set(
            &mut a,
            0,
            SmpAttrId::VL_ARB_TABLE,
            modifier,
            t.as_bytes()
        )),
        Status::OK
    );
    let g = get(&mut a, 0, SmpAttrId::VL_ARB_TABLE, modifier);
    assert_eq!(VlArbTable::read_from_prefix(&g.data).unwrap().0, t);
    assert_eq!(
        get(&mut a, 0, SmpAttrId::VL_ARB_TABLE, (1 << 16) | 2).data,
        [0; 64]
    );
    assert_eq!(a.hardware().vl_arb, vec![(PortNum(2), 3)]);
    let pi = port_info(&a, 2);
    assert_eq!(
        (pi.vl_arb_high_cap, pi.vl_arb_low_cap),
        (sma::VL_ARB_CAP, sma::VL_ARB_CAP)
    );
}

// ----- P_Key / GUIDInfo / SMInfo -------------------------------------------------------------

#[test]
fn pkey_table_default_round_trip_and_switch_port_modifier() {
    let mut a = rec_switch(0x700, 4);
    let d = PKeyTable::read_from_prefix(&get(&mut a, 0, SmpAttrId::P_KEY_TABLE, 3 << 16).data)
        .unwrap()
        .0;
    assert_eq!(d.pkeys[0].get(), 0xFFFF);
    assert_eq!(d.pkeys[1].get(), 0);
    let mut t = PKeyTable::new_zeroed();
    t.pkeys[0].set(0xFFFF);
    t.pkeys[1].set(0x8001);
    assert_eq!(
        status(&set(
            &mut a,
            0,
            SmpAttrId::P_KEY_TABLE,
            3 << 16,
            t.as_bytes()
        )),
        Status::OK
    );
    let g = get(&mut a, 0, SmpAttrId::P_KEY_TABLE, 3 << 16);
    assert_eq!(PKeyTable::read_from_prefix(&g.data).unwrap().0, t);
    let other = get(&mut a, 0, SmpAttrId::P_KEY_TABLE, 2 << 16);
    assert_eq!(
        PKeyTable::read_from_prefix(&other.data).unwrap().0.pkeys[1].get(),
        0
    );
    assert_eq!(a.hardware().pkeys, vec![PortNum(3)]);
}

#[test]
fn guid_info_entry_zero_is_read_only() {
    let mut a = rec_ca(0x500, 1);
    let g = GuidInfo::read_from_prefix(&get(&mut a, 1, SmpAttrId::GUID_INFO, 0).data)
        .unwrap()
        .0;
    assert_eq!(g.guids[0].get(), 0x501);
    let mut t = GuidInfo::new_zeroed();
    t.guids[0].set(0xdead);
    t.guids[1].set(0xbeef);
    let r = set(&mut a, 1, SmpAttrId::GUID_INFO, 0, t.as_bytes());
    assert_eq!(status(&r), Status::OK);
    let got = GuidInfo::read_from_prefix(&r.data).unwrap().0;
    assert_eq!(got.guids[0].get(), 0x501);
    assert_eq!(got.guids[1].get(), 0xbeef);
    assert_eq!(a.hardware().guid_infos, vec![PortNum(1)]);
}

#[test]
fn sm_info_goes_to_the_co_located_sm_only_with_is_sm() {
    let mut a = ca(0x500, 1);
    let r = get(&mut a, 1, SmpAttrId::SM_INFO, 0);
    assert_eq!(status(&r), Status::METHOD_ATTR_NOT_SUPPORTED);
    assert_eq!(r.method(), Method::GET_RESP);
    let mask = port_info(&a, 1).capability_mask.get() | cap::IS_SM;
    assert!(a.set_capability_mask(Time::ZERO, PortNum(1), mask));
    let req = dr(Method::GET, SmpAttrId::SM_INFO, 0, &[]);
    let fwd = local(&mut a, 1, req).unwrap();
    assert_eq!(
        fwd.method(),
        Method::GET,
        "the request itself, for the SM to answer"
    );
    assert_eq!(fwd.attr(), SmpAttrId::SM_INFO);
}

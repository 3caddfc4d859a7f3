use super::*;
use crate::subnet::Node;
use ibmad::{DrPath, Lid};

fn parse(text: &str) -> PartitionConfig {
    PartitionConfig::parse(text, "p.conf").unwrap()
}

fn err(text: &str) -> String {
    PartitionConfig::parse(text, "p.conf")
        .unwrap_err()
        .to_string()
}

#[test]
fn no_file_is_default_full_with_broadcast_group() {
    let c = PartitionConfig::default();
    assert_eq!(c.partitions.len(), 1);
    let d = &c.partitions[0];
    assert_eq!((d.pkey, d.ipoib), (0x7fff, true));
    assert_eq!(d.members[0].ports, PortSel::All);
    assert_eq!(d.members[0].membership, Membership::Full);
    let g = d.groups[0];
    assert_eq!(
        g.mgid,
        [0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]
    );
    assert_eq!(
        (g.q_key, g.mtu, g.rate, g.pkey, g.hop_limit),
        (0x0b1b, 4, 3, 0xffff, 0)
    );
    assert!(g.broadcast);
}

#[test]
fn file_default_partition_is_limited_with_sm_full() {
    let c = parse("# nothing but a comment\n");
    let d = &c.partitions[0];
    assert!(!d.ipoib && d.groups.is_empty());
    assert_eq!(d.members[0].membership, Membership::Limited);
    assert_eq!(d.members[1].ports, PortSel::SelfPort);
    assert_eq!(d.members[1].membership, Membership::Full);
}

#[test]
fn opensm_doc_examples_parse() {
    let c = parse(
        "Default=0x7fff : ALL, SELF=full ;\n\
         NewPartition , ipoib : 0x123456=full, 0x3456789034=limi, 0x2134af2306 ;\n\
         YetAnotherOne = 0x300 : SELF=full ;\n\
         YetAnotherOne = 0x300 : ALL=limited ;\n\
         ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;\n\
         ShareIO = 0x80 : 0x123453, 0x123454, 0x123455=full;\n\
         Default=0x7fff,ipoib:\n\
         \tmgid=ff12:401b::0707,sl=1 # random IPv4 group\n\
         \tmgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2 # random group\n\
         \tALL=full;\n",
    );
    let names: Vec<(&str, u16)> = c
        .partitions
        .iter()
        .map(|p| (p.name.as_str(), p.pkey))
        .collect();
    // NewPartition has no P_Key: the first free one from 1.
    assert_eq!(
        names,
        [
            ("Default", 0x7fff),
            ("NewPartition", 1),
            ("YetAnotherOne", 0x300),
            ("ShareIO", 0x80)
        ]
    );
    let np = &c.partitions[1];
    assert!(np.ipoib);
    assert_eq!(np.members[1].membership, Membership::Limited);
    assert_eq!(np.members[2].membership, Membership::Limited);
    assert_eq!(np.members[0].ports, PortSel::Guid(Guid(0x123456)));
    let share = &c.partitions[3];
    assert_eq!(share.members[0].membership, Membership::Full); // defmember=full
    assert_eq!(share.members[2].membership, Membership::Limited); // second definition
    assert_eq!(share.members[4].membership, Membership::Full);
    let def = &c.partitions[0];
    assert!(def.ipoib);
    // Broadcast group first, then the IP group with the P_Key filled in and Q_Key 0x0b1b,
    // then the non-IP group with its own Q_Key and MTU.
    assert!(def.groups[0].broadcast);
    assert_eq!(
        def.groups[1].mgid[..6],
        [0xff, 0x12, 0x40, 0x1b, 0xff, 0xff]
    );
    assert_eq!((def.groups[1].sl, def.groups[1].q_key), (1, 0x0b1b));
    assert_eq!((def.groups[2].q_key, def.groups[2].mtu), (0xdead_beef, 2));
    assert_eq!(def.members.last().unwrap().membership, Membership::Full);
}

#[test]
fn flags_and_scopes() {
    let c = parse(
        "storage=0x8001, ipoib, mtu=5, rate=7, scope=2, scope=5, Q_Key=0x1234 : ALL_CAS=full,\n\
         mgid=ff12:401b::0707 ;",
    );
    let p = &c.partitions[1];
    assert_eq!(p.pkey, 1, "the membership bit of 0x8001 is dropped");
    assert_eq!((p.flags.mtu, p.flags.rate), (5, 7));
    let g: Vec<(u8, u8, u8, bool)> = p
        .groups
        .iter()
        .map(|g| (g.mgid[1], g.scope, g.hop_limit, g.broadcast))
        .collect();
    // The broadcast group: link-local only, as OpenSM builds it; the mgid= line inherits
    // both scopes.
    assert_eq!(
        g,
        [
            (0x12, 2, 0, true),
            (0x12, 2, 0, false),
            (0x15, 5, 0xff, false)
        ]
    );
    assert!(p
        .groups
        .iter()
        .all(|g| g.q_key == 0x1234 && g.mgid[4..6] == [0x80, 0x01]));
}

#[test]
fn a_partitions_sl_counts_only_with_qos_and_the_last_definition_wins() {
    let text = "storage=0x8001, ipoib, sl=3 : ALL_CAS=full,\n\
                mgid=ff12::1\n\
                , mgid=ff12::2,sl=1 ;\n\
                storage=0x8001, sl=4 : ALL_SWITCHES=limited ;";
    let sls = |c: &PartitionConfig| {
        let p = &c.partitions[1];
        let g: Vec<u8> = p.groups.iter().map(|g| g.sl).collect();
        (p.sl, g)
    };
    // OpenSM overrides a partition's sl= to 0 without QoS; an mgid line's own sl= stays.
    let off = PartitionConfig::parse_with_qos(text, "p.conf", false).unwrap();
    assert_eq!(sls(&off), (0, vec![0, 0, 1]));
    assert_eq!(sls(&parse(text)), (0, vec![0, 0, 1]), "parse: QoS off");
    // With QoS: the broadcast group and the inheriting group take it, PathRecords the last
    // definition's.
    let on = PartitionConfig::parse_with_qos(text, "p.conf", true).unwrap();
    assert_eq!(sls(&on), (4, vec![3, 3, 1]));
}

#[test]
fn statements_span_lines_and_share_lines() {
    let c =
        parse("a=0x10:\n  ALL_CAS,\n  SELF=full\n;b=0x11: ALL_SWITCHES=both; c=0x12 : NONE ;\n");
    assert_eq!(c.partitions.len(), 4);
    assert_eq!(c.partitions[1].members.len(), 2);
    assert_eq!(c.partitions[1].members[1].line, 3);
    assert_eq!(c.partitions[2].members[0].membership, Membership::Both);
    assert!(c.partitions[3].members.is_empty());
}

#[test]
fn bad_lines_are_rejected_with_file_and_line() {
    assert_eq!(
        err("a=0x10 : ALL;\nthis has no colon;\n"),
        "p.conf:2: no partition definition found (expected 'Name=PKey : members ;')"
    );
    assert!(err("a=0x1zz : ALL;").starts_with("p.conf:1: bad P_Key '0x1zz'"));
    assert!(err("a=0x10, ipiob : ALL;").contains("unknown partition flag 'ipiob'"));
    assert!(err("\n\na=0x10 : ALL=fool;").starts_with("p.conf:3: membership 'fool'"));
    assert!(err("a=0x10 :\n ALL,\n 0xzz=full;").starts_with("p.conf:3: bad PortGUID '0xzz'"));
    assert!(err("a=0x10, mtu=9 : ALL;").contains("flag 'mtu'"));
    assert!(err("a=0x10, sl=16 : ALL;").contains("flag 'sl'"));
    assert!(err("a=0x10, mtu : ALL;").contains("requires a value"));
    assert!(err("a=0x10 : mgid=1234::1 ;").contains("not a multicast GID"));
    assert!(err("a=0x10 : mgid=ff12::1,colour=3 ;").contains("unknown mgroup flag 'colour'"));
    assert!(err("a=0x10 : mgid=ff12:401b:8011::1 ;").contains("is not the partition's"));
    assert!(err("a=0x10 : mgid=ff12:401b::1,mtu=5 ;").contains("differ from the partition"));
    assert!(err("a=0x10 : 0=full;").contains("bad PortGUID '0'"));
}

#[test]
fn enforce_names() {
    for e in [
        PartEnforce::Both,
        PartEnforce::In,
        PartEnforce::Out,
        PartEnforce::Off,
    ] {
        assert_eq!(PartEnforce::parse(e.name()), Some(e));
    }
    assert_eq!(PartEnforce::parse("yes"), None);
    assert_eq!(PartEnforce::In.bits(), (true, false));
}

#[test]
fn layout_keeps_indexes_and_puts_default_first() {
    // Default (limited) must go to index 0; 0x8010 keeps index 5; 0x0020 is new.
    let mut cur = vec![0u16; 32];
    cur[0] = 0x8010;
    cur[5] = 0x8010;
    let (t, dropped) = layout(&[0x7fff, 0x8010, 0x0020], Some(0x7fff), 32, &cur);
    assert!(dropped.is_empty());
    assert_eq!(t.len(), 32);
    assert_eq!((t[0], t[5], t[1]), (0x7fff, 0x8010, 0x0020));
    assert_eq!(t.iter().filter(|&&k| k != 0).count(), 3);
    // Capacity 2: the third does not fit.
    let (t, dropped) = layout(&[0xffff, 0x8010, 0x0020], Some(0xffff), 2, &[]);
    assert_eq!(&t[..3], &[0xffff, 0x8010, 0]);
    assert_eq!(dropped, [0x0020]);
    assert_eq!(blocks(33), 2);
}

/// A switch with CA 1 on port 1, CA 2 on port 2, switch 4 on port 3; the SM on CA 1.
fn subnet() -> Subnet {
    let mut s = Subnet::new();
    let mk = |guid, t, ports| Node {
        dr_path: if guid == 1 {
            DrPath::local()
        } else {
            DrPath::new(&[1]).unwrap()
        },
        partition_cap: 32,
        ..Node::new(Guid(guid), t, ports, "")
    };
    let ca1 = s.add_node(mk(1, NodeType::CA, 1));
    let sw = s.add_node(mk(3, NodeType::SWITCH, 4));
    let ca2 = s.add_node(mk(2, NodeType::CA, 1));
    let sw2 = s.add_node(mk(4, NodeType::SWITCH, 4));
    let mut si = <ibmad::attr::SwitchInfo as ibmad::zerocopy::FromZeros>::new_zeroed();
    si.partition_enforcement_cap.set(32);
    s.nodes[sw.idx()].switch_info = Some(si);
    s.nodes[sw2.idx()].switch_info = Some(si);
    let info = crate::subnet::active_port_info();
    for (id, p, guid) in [(ca1, 1, 0x11), (ca2, 1, 0x21), (sw, 0, 3), (sw2, 0, 4)] {
        let port = s.port_mut(id, PortNum(p)).unwrap();
        port.info = Some(info);
        port.guid = Guid(guid);
        port.lid = Lid(u16::try_from(guid).unwrap());
    }
    for p in 1..=3 {
        s.port_mut(sw, PortNum(p)).unwrap().info = Some(info);
    }
    s.port_mut(sw2, PortNum(1)).unwrap().info = Some(info);
    s.link((ca1, PortNum(1)), (sw, PortNum(1)));
    s.link((ca2, PortNum(1)), (sw, PortNum(2)));
    s.link((sw, PortNum(3)), (sw2, PortNum(1)));
    s
}

#[test]
fn two_partitions_resolve_to_tables_and_switch_ports() {
    let s = subnet();
    let (ca1, sw, ca2) = (NodeId(0), NodeId(1), NodeId(2));
    let cfg = parse("Default=0x7fff : ALL=full ;\nred=0x10 : 0x11=full ;\nblue=0x20 : 0x21=full, SELF=limited ;\n");
    let mut plan = PkeyPlan::resolve(&cfg, &s);
    assert_eq!(plan.port_pkeys(ca1, PortNum(1)), [0xffff, 0x8010, 0x0020]);
    assert_eq!(plan.port_pkeys(ca2, PortNum(1)), [0xffff, 0x8020]);
    assert_eq!(plan.port_pkeys(sw, PortNum(0)), [0xffff]);
    assert_eq!(plan.present(), [0x7fff, 0x10, 0x20]);
    // ca1 (limited in blue) and ca2 (full in blue) share blue and the default partition.
    assert_eq!(
        plan.shared_pkey((ca1, PortNum(1)), (ca2, PortNum(1))),
        Some(0xffff)
    );
    plan.layout_all(&s, PartEnforce::Both, true, |_, _| Vec::new());
    assert_eq!(
        &plan.table(ca1, PortNum(1)).unwrap()[..4],
        &[0xffff, 0x8010, 0x0020, 0]
    );
    // The switch port facing ca1 gets its P_Keys and enforcement; the ISL none.
    assert_eq!(
        &plan.table(sw, PortNum(1)).unwrap()[..4],
        &[0xffff, 0x8010, 0x0020, 0]
    );
    assert_eq!(plan.enforcement(sw, PortNum(1)), Some((true, true)));
    assert_eq!(plan.enforcement(sw, PortNum(3)), Some((false, false)));
    assert_eq!(plan.table(sw, PortNum(3)), None);
    assert_eq!(plan.enforcement(sw, PortNum(4)), None);
    // Everything unknown: every block of every table is read, then set.
    let known = KnownPkeys::default();
    let reads = plan.reads(&s, PartEnforce::Both, &known);
    assert_eq!(reads.len(), 6, "{reads:?}"); // 2 CA ports, 2 switch ports 0, 2 switch ports
    assert_eq!(plan.sets(&s, &known).len(), 6);
    // Once the ports hold them, nothing is sent.
    let mut known = KnownPkeys::default();
    for t in plan.tables() {
        let mut blk = [0u16; BLOCK];
        blk.copy_from_slice(&t.table[..32]);
        known.on_block(s.node(t.node).guid, t.port, 0, &block_data(&blk));
    }
    assert!(plan.sets(&s, &known).is_empty());
    assert!(plan.reads(&s, PartEnforce::Both, &known).is_empty());
}

#[test]
fn limited_members_do_not_share_and_both_needs_allow_both() {
    let s = subnet();
    let (ca1, ca2) = (NodeId(0), NodeId(2));
    let text = "Default=0x7fff : ALL=limited ;\nx=0x30 : ALL_CAS=both ;\n";
    let plan = PkeyPlan::resolve(&parse(text), &s);
    assert_eq!(plan.port_pkeys(ca2, PortNum(1)), [0x7fff, 0x8030]);
    assert_eq!(
        plan.shared_pkey((ca1, PortNum(1)), (ca2, PortNum(1))),
        Some(0x8030)
    );
    let mut cfg = parse(text);
    cfg.allow_both_pkeys = true;
    let plan = PkeyPlan::resolve(&cfg, &s);
    assert_eq!(plan.port_pkeys(ca2, PortNum(1)), [0x7fff, 0x8030, 0x0030]);
    // Only limited in common: no path.
    let plan = PkeyPlan::resolve(&parse("Default=0x7fff : ALL=limited ;\n"), &s);
    assert_eq!(plan.shared_pkey((ca1, PortNum(1)), (ca2, PortNum(1))), None);
    // But the SM is full in Default by the implicit SELF=full of a file... unless overridden.
    let plan = PkeyPlan::resolve(&parse(""), &s);
    assert_eq!(plan.port_pkeys(ca1, PortNum(1)), [0xffff]);
    assert_eq!(
        plan.shared_pkey((ca1, PortNum(1)), (ca2, PortNum(1))),
        Some(0xffff)
    );
}

#[test]
fn enforcement_off_or_too_small_leaves_switch_ports_alone() {
    let mut s = subnet();
    let sw = NodeId(1);
    let cfg = parse("Default=0x7fff : ALL=full ;\nred=0x10 : 0x11=full ;\n");
    let mut plan = PkeyPlan::resolve(&cfg, &s);
    plan.layout_all(&s, PartEnforce::Off, true, |_, _| Vec::new());
    assert_eq!(plan.enforcement(sw, PortNum(1)), Some((false, false)));
    assert_eq!(plan.table(sw, PortNum(1)), None);
    let mut si = s.node(sw).switch_info.unwrap();
    si.partition_enforcement_cap.set(1);
    s.nodes[sw.idx()].switch_info = Some(si);
    plan.layout_all(&s, PartEnforce::Both, true, |_, _| Vec::new());
    assert_eq!(plan.enforcement(sw, PortNum(1)), Some((false, false)));
    assert_eq!(plan.overflows().len(), 1);
    assert_eq!(
        plan.enforcement(sw, PortNum(2)),
        Some((true, true)),
        "one P_Key fits"
    );
}

#[test]
fn reset_ports_are_forgotten() {
    let mut s = subnet();
    let mut k = KnownPkeys::default();
    k.on_block(Guid(1), PortNum(1), 0, &[0xff; 64]);
    k.on_block(Guid(2), PortNum(1), 0, &[0xff; 64]);
    let mut init = crate::subnet::active_port_info();
    init.set_port_state(PortState::INIT);
    s.port_mut(NodeId(2), PortNum(1)).unwrap().info = Some(init);
    k.forget_reset_ports(&s);
    assert!(k.block(Guid(1), PortNum(1), 0).is_some());
    assert!(k.block(Guid(2), PortNum(1), 0).is_none());
    assert_eq!(k.table(Guid(1), PortNum(1))[0], 0xffff);
}

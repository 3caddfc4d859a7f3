//! The LFT dump parser (opensm-lfts.dump, dump_fts, ibroute) and the verifier's checks on
//! small fabrics whose answers are worked out by hand.
#![allow(clippy::unwrap_used)]

mod updn_util;

use std::path::Path;

use ibmad::{Guid, Lid, NodeType, PortNum};
use sm::routing::file::parse_lft_dump;
use sm::routing::{route_chain, route_chain_with, EngineOptions, OptionFile};
use sm::verify::verify;
use sm::{NodeId, Subnet};

mod fixtures;
use fixtures::{add, connect, from_ibnetdiscover, node};

fn testdata(p: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join(p),
    )
    .unwrap()
}

/// Two switches A (0xa) – B (0xb) on port 1, two CAs on each (ports 2, 3).
fn pair() -> (Subnet, NodeId, NodeId, Vec<NodeId>) {
    let mut s = Subnet::new();
    let a = add(&mut s, node(0xa, NodeType::SWITCH, 4, "A"));
    let b = add(&mut s, node(0xb, NodeType::SWITCH, 4, "B"));
    s.nodes[a.idx()].dr_path = ibmad::DrPath::local();
    connect(&mut s, (a, 1), (b, 1));
    let cas: Vec<NodeId> = (0..4u64)
        .map(|i| {
            let c = add(
                &mut s,
                node(0x100 + 16 * i, NodeType::CA, 1, &format!("c{i}")),
            );
            connect(
                &mut s,
                (if i < 2 { a } else { b }, 2 + (i % 2) as u8),
                (c, 1),
            );
            c
        })
        .collect();
    updn_util::lids(&mut s);
    (s, a, b, cas)
}

#[test]
fn balance_counts_routes_per_link_port_switch_and_level() {
    let (s, _, _, _) = pair();
    let l = route_chain(&["minhop".into()], false, &s, 0)
        .unwrap()
        .routes
        .lfts;
    let r = verify(&s, &l);
    assert!(r.is_ok(), "{}", r.summary(&s));
    assert_eq!(r.reach.pairs, 16);
    // A→B carries the 2 × 2 pairs from A's CAs to B's, and B→A the reverse.
    assert_eq!((r.balance.per_link.min, r.balance.per_link.max), (4, 4));
    assert_eq!(r.balance.per_link.count, 2);
    // Each CA port receives from the 3 other CAs.
    assert_eq!(
        (r.balance.per_ca_port.min, r.balance.per_ca_port.max),
        (3, 3)
    );
    assert_eq!(r.balance.per_ca_port.count, 4);
    // Switch A forwards 4 (to B) + 3 + 3 (to its CAs).
    assert_eq!(
        (r.balance.per_switch.min, r.balance.per_switch.max),
        (10, 10)
    );
    assert_eq!(r.balance.per_level.len(), 1);
    assert_eq!(r.balance.per_level[0].0, 0);
    assert_eq!(r.balance.per_link.stddev, 0.0);
    // 12 pairs (self excluded): per destination 1 on the same switch (0 hops) + 2 across (1).
    assert_eq!(r.hops.max, 1);
    assert!((r.hops.mean - 8.0 / 12.0).abs() < 1e-9, "{:?}", r.hops);
    assert_eq!(r.hops.max_extra, 0);
    assert_eq!(r.cdg_channels, 2);
    assert_eq!(r.cdg_dependencies, 0);
    let j = r.to_json(&s);
    assert!(j.starts_with("{\"ok\":true,\"pairs\":16,"), "{j}");
    assert!(j.contains("\"credit_loop\":null"), "{j}");
    assert!(
        j.contains("\"hops\":{\"max\":1,\"mean\":0.667,\"max_extra\":0}"),
        "{j}"
    );
}

#[test]
fn dead_ends_and_forwarding_loops_are_found() {
    let (s, a, b, cas) = pair();
    let mut l = route_chain(&["minhop".into()], false, &s, 0)
        .unwrap()
        .routes
        .lfts;
    let d = s.lid_of(cas[2], PortNum(1));
    // Dead end: A has no entry for c2 → both of A's CAs cannot reach it.
    l.set(a, d, None);
    let r = verify(&s, &l);
    assert_eq!(r.reach.unreachable_count, 2);
    assert!(!r.is_ok());
    // Loop: B sends c2's LID back to A, A to B.
    l.set(a, d, Some(PortNum(1)));
    l.set(b, d, Some(PortNum(1)));
    let r = verify(&s, &l);
    assert_eq!(r.reach.loops, 4, "{}", r.summary(&s));
    // The ping-pong A→B→A is also a cycle of the dependency graph.
    assert_eq!(r.credit_loop.as_ref().map(Vec::len), Some(2));
}

#[test]
fn our_dump_round_trips_and_matches_opensm_minhop_dump() {
    let mut s = from_ibnetdiscover(&testdata("opensm/fattree2l/net.txt")).unwrap();
    let osm = parse_lft_dump(&testdata("opensm/fattree2l/opensm-lfts.dump")).unwrap();
    assert!(osm.apply_lids(&mut s).unwrap() > 0);
    let theirs = osm.to_lfts(&s).unwrap();
    let ours = route_chain(&["minhop".into()], false, &s, 0)
        .unwrap()
        .routes
        .lfts;
    assert_eq!(theirs, ours);
    let back = parse_lft_dump(&sm::dump::lfts_dump(&s, &ours))
        .unwrap()
        .to_lfts(&s)
        .unwrap();
    assert_eq!(back, ours);
    assert!(verify(&s, &theirs).is_ok());
}

#[test]
fn dump_fts_from_opensm_is_parsed_with_owner_lids() {
    let d = parse_lft_dump(&testdata("opensm-updn/ft2-8/updn-fts.txt")).unwrap();
    assert_eq!(d.switches.len(), 12); // 8 leaves + 4 spines
    let sw = &d.switches[0];
    assert!(sw.guid.0 >> 48 == 2, "{:x}", sw.guid.0);
    assert!(!sw.desc.is_empty() && !sw.desc.contains('('));
    // Every entry names its owner, and the switch's own LID is routed to port 0.
    assert!(sw.entries.iter().all(|e| e.owner.is_some()));
    assert_eq!(
        sw.entries
            .iter()
            .filter(|e| e.port.0 == 0 && e.owner == Some(sw.guid))
            .count(),
        1
    );
}

#[test]
fn ibroute_output_and_explicit_no_path_entries() {
    let text = "\
Unicast lids [0x1-0x4] of switch Lid 1 guid 0x000000000000000a (A):
  Lid  Out   Destination
       Port     Info 
0x0001 000 : (Switch portguid 0x000000000000000a: 'A')
0x0002 001 : (Switch portguid 0x000000000000000b: 'B')
0x0003 255 : (no path)
4 valid lids dumped 
";
    let d = parse_lft_dump(text).unwrap();
    assert_eq!(d.switches[0].lid, Some(Lid(1)));
    assert_eq!(d.switches[0].guid, Guid(0xa));
    assert_eq!(d.switches[0].desc, "A");
    assert_eq!(d.switches[0].entries.len(), 2);
    assert_eq!(d.top(), Lid(2));
}

/// dump_fts and ibroute stop a block short where LinearFDBTop is a multiple of 64, so a
/// 128-LID fabric's dump ends at 0x7f under headers that say 0x80.
#[test]
fn a_top_lid_alone_in_its_block_is_noticed_when_no_table_lists_it() {
    let table = |guid: u8, top: &str, last: &[&str]| {
        let mut t = format!(
            "Unicast lids [0x0-{top}] of switch DR path slid 0; dlid 0; 0,1 guid 0x{guid:016x} (s{guid}):\n  Lid  Out   Destination\n       Port     Info \n0x0001 001 : (Channel Adapter portguid 0x0000000000000101: 'h1')\n"
        );
        for l in last {
            t.push_str(&format!(
                "{l} 002 : (Channel Adapter portguid 0x0000000000000102: 'h2')\n"
            ));
        }
        t
    };
    let d = parse_lft_dump(&(table(0xa, "0x80", &["0x007f"]) + &table(0xb, "0x80", &["0x007f"])))
        .unwrap();
    assert_eq!(d.switches[0].top, Some(Lid(128)));
    assert_eq!(d.unread_top_lids(), vec![Lid(128)]);
    // One table lists it: the block was read.
    let d = parse_lft_dump(
        &(table(0xa, "0x80", &["0x007f"]) + &table(0xb, "0x80", &["0x007f", "0x0080"])),
    )
    .unwrap();
    assert!(d.unread_top_lids().is_empty());
    // A top inside a block, and OpenSM's decimal header with the top listed.
    let d = parse_lft_dump(&table(0xa, "0x7f", &["0x007f"])).unwrap();
    assert!(d.unread_top_lids().is_empty());
    let d = parse_lft_dump(
        "Unicast lids [0-128] of switch Lid 3 guid 0x000000000000000a ('s'):\n0x0080 001 # Channel Adapter portguid 0x0000000000000101: 'h1'\n1 lids dumped\n",
    )
    .unwrap();
    assert_eq!(d.switches[0].top, Some(Lid(128)));
    assert!(d.unread_top_lids().is_empty());
}

#[test]
fn dump_errors_name_the_line() {
    let e = parse_lft_dump("0x0001 001 # x\n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.what.contains("before any"), "{e}");
    let hdr = "Unicast lids [0-3] of switch Lid 1 guid 0x000000000000000a ('A'):\n";
    let e = parse_lft_dump(&format!("{hdr}0x0001 1x1 # x\n")).unwrap_err();
    assert_eq!(e.line, 2);
    let e = parse_lft_dump(&format!("{hdr}\nhello\n")).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(parse_lft_dump("").is_err());
    let e = parse_lft_dump("Unicast lids [0-3] of switch Lid 1 (no guid):\n").unwrap_err();
    assert_eq!(e.line, 1);
    // Against a subnet: a port the switch does not have, an unknown switch, a missing switch.
    let (s, _, _, _) = pair();
    let d = parse_lft_dump(&format!("{hdr}0x0001 009 # x\n")).unwrap();
    let e = d.to_lfts(&s).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.what.contains("port 9"), "{e}");
    assert!(e.to_string().starts_with("line 2: port 9"), "{e}");
    let d = parse_lft_dump(&hdr.replace("0x000000000000000a", "0x00000000000000ff")).unwrap();
    assert_eq!(d.to_lfts(&s).unwrap_err().line, 1);
    let d = parse_lft_dump(hdr).unwrap();
    let e = d.to_lfts(&s).unwrap_err();
    assert!(e.what.contains("no table for switch"), "{e}");
    // Tied to no line: the message is the problem alone, not "line 0: …".
    assert_eq!(e.line, 0);
    assert!(e.to_string().starts_with("no table for switch"), "{e}");
}

#[test]
fn file_engine_loads_a_dump_and_falls_back_on_errors() {
    let (s, _, _, _) = pair();
    let ours = route_chain(&["minhop".into()], false, &s, 0)
        .unwrap()
        .routes
        .lfts;
    let text = sm::dump::lfts_dump(&s, &ours);
    let opts = EngineOptions {
        lfts_file: Some(OptionFile::from_text("lfts.dump", &text)),
        ..EngineOptions::default()
    };
    let out = route_chain_with(&["file".into()], false, &s, 0, &opts).unwrap();
    assert_eq!(out.engine, "file");
    assert_eq!(out.routes.lfts, ours);
    assert_eq!(
        out.log.last().unwrap(),
        "osm_ucast_mgr_process: file tables configured on all switches"
    );
    assert!(!out.log.iter().any(|l| l.contains("WRN")), "{:?}", out.log);
    let bad = EngineOptions {
        lfts_file: Some(OptionFile::from_text("lfts.dump", "garbage\n")),
        ..EngineOptions::default()
    };
    let out = route_chain_with(&["file".into()], false, &s, 0, &bad).unwrap();
    assert_eq!(out.engine, "minhop");
    assert!(
        out.log.iter().any(|l| l.contains("'lfts.dump': line 1")),
        "{:?}",
        out.log
    );
    assert!(route_chain_with(&["file".into()], true, &s, 0, &EngineOptions::default()).is_err());
    // Headers that claim a top of 64, which no table lists (as dump_fts leaves it out).
    let top64 = text
        .lines()
        .map(|l| match l.strip_prefix("Unicast lids [0-") {
            Some(r) => format!("Unicast lids [0-64{}", &r[r.find(']').unwrap()..]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let opts = EngineOptions {
        lfts_file: Some(OptionFile::from_text("fts.txt", &top64)),
        ..EngineOptions::default()
    };
    let out = route_chain_with(&["file".into()], false, &s, 0, &opts).unwrap();
    assert_eq!(out.engine, "file");
    assert!(
        out.log
            .iter()
            .any(|l| l
                .starts_with("do_ucast_file_load: WRN: no table in 'fts.txt' lists LID 64 (0x40)")),
        "{:?}",
        out.log
    );
}

//! Mutation fuzzing of the text parsers an operator feeds files to: each is given thousands of
//! damaged copies of a valid file (bytes cut, tokens inserted, lines repeated or swapped,
//! numbers replaced by extreme ones) and must answer with `Ok` or an error, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

/// Cases per test: `IBSM_FUZZ_CASES` as in ibsm's `input_fuzz`, else enough to stay well under
/// a second.
fn cases() -> u32 {
    std::env::var("IBSM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096)
}

/// Tokens the mutations insert: the parsers' keywords and separators, and numbers at and
/// beyond every width the files use.
const TOKENS: &[&str] = &[
    ":",
    ",",
    "-",
    "=",
    ";",
    "[",
    "]",
    "(",
    ")",
    "#",
    "\"",
    "\n",
    " ",
    "\t",
    "0x",
    "0",
    "1",
    "-1",
    "15",
    "16",
    "255",
    "256",
    "65535",
    "65536",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "0xffffffffffffffff",
    "0x1ffffffffffffffff",
    "0xg",
    "end",
    "end-",
    "port-group",
    "end-port-group",
    "qos-level",
    "end-qos-level",
    "qos-match-rule",
    "qos-ulps",
    "name:",
    "sl:",
    "port-guid:",
    "partition:",
    "node-type:",
    "qos-class:",
    "vlarb-scope",
    "ALL",
    "SELF",
    "full",
    "limited",
    "both",
    "Default",
    "ipoib",
    "mgid=",
    "sl=",
    "rate=",
    "mtu=",
    "torus",
    "mesh",
    "xp_link",
    "xm_link",
    "x_dateline",
    "port_order",
    "Switch",
    "Ca",
    "vlarb-high:",
    "sl2vl-table:",
    "1..4",
    "0x1234-0x12",
    "ff12::1",
    "é",
    "\u{0}",
];

/// One damage done to a file; positions are taken modulo its length.
#[derive(Clone, Debug)]
enum Op {
    /// Bytes cut out: (at, how many).
    Cut(usize, usize),
    /// A token of [`TOKENS`] inserted: (at, which).
    Insert(usize, usize),
    /// One byte overwritten.
    Byte(usize, u8),
    /// Everything from here on cut.
    Truncate(usize),
    /// The run of digits at or after `at` replaced by an extreme number: (at, which).
    Number(usize, usize),
    /// Line `i` repeated before line `j`.
    Repeat(usize, usize),
    /// Lines `i` and `j` swapped.
    Swap(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<usize>(), 1usize..=16).prop_map(|(a, n)| Op::Cut(a, n)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(a, t)| Op::Insert(a, t)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(a, t)| Op::Insert(a, t)),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Op::Byte(a, b)),
        any::<usize>().prop_map(Op::Truncate),
        (any::<usize>(), 0usize..6).prop_map(|(a, x)| Op::Number(a, x)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Op::Repeat(i, j)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Op::Swap(i, j)),
    ]
}

/// Up to four damages.
fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..=4)
}

/// `base` with `ops` done to it, in order.
fn damaged(base: &str, ops: &[Op]) -> String {
    let mut s: Vec<u8> = base.as_bytes().to_vec();
    for op in ops {
        let len = s.len();
        let at = |a: usize| a % (len + 1);
        match *op {
            Op::Cut(a, n) => {
                let a = at(a);
                s.drain(a..(a + n).min(len));
            }
            Op::Insert(a, t) => {
                let a = at(a);
                s.splice(a..a, TOKENS[t].bytes());
            }
            Op::Byte(a, b) if len > 0 => s[a % len] = b,
            Op::Byte(..) => {}
            Op::Truncate(a) => s.truncate(at(a)),
            Op::Number(a, x) => {
                if let Some(a) = (at(a)..len).find(|&i| s[i].is_ascii_digit()) {
                    let b = (a..len).find(|&i| !s[i].is_ascii_hexdigit()).unwrap_or(len);
                    let t = [
                        "0",
                        "99999999999999999999",
                        "4294967296",
                        "65536",
                        "256",
                        "-5",
                    ][x];
                    s.splice(a..b, t.bytes());
                }
            }
            Op::Repeat(i, j) | Op::Swap(i, j) => {
                let text = String::from_utf8_lossy(&s).into_owned();
                let mut lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let (i, j) = (i % lines.len(), j % lines.len());
                    if matches!(op, Op::Repeat(..)) {
                        lines.insert(j, lines[i]);
                    } else {
                        lines.swap(i, j);
                    }
                }
                s = lines.join("\n").into_bytes();
            }
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

const POLICY: &str = "
port-groups
    port-group
        name: Storage
        use: SRP Targets
        port-guid: 0x10000000000001, 0x10000000000005-0x1000000000FFFA
    end-port-group
    port-group
        name: Virtual Servers
        port-name: vs1 HCA-1/P1, vs2 HCA-1/P1
        partition: Part1
        pkey: 0x1234
        node-type: CA, SELF
    end-port-group
end-port-groups
qos-setup
    vlarb-tables
        vlarb-scope
            group: Storage
            across: Virtual Servers
            vl-high-limit: 10
            vlarb-high: 0:255,1:127
            vlarb-low: 0:1,1:8
        end-vlarb-scope
    end-vlarb-tables
    sl2vl-tables
        sl2vl-scope
            group: Storage
            from: *
            to: 1-4
            across-to: Storage
            sl2vl-table: 0,1,2,3,4,5,6,7,7,7,7,7,7,7,7,15
        end-sl2vl-scope
    end-sl2vl-tables
end-qos-setup
qos-levels
    qos-level
        name: WholeSet
        sl: 1
        mtu-limit: 4
        rate-limit: 5
        pkey: 0x1234
        packet-life: 8
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        qos-class: 7-9,11
        source: Storage
        destination: Virtual Servers
        service-id: 0x10000000000001, 0x10000000000008-0x10000000000FFF
        pkey: 0x1234-0x1240
        qos-level-name: WholeSet
    end-qos-match-rule
end-qos-match-rules
qos-ulps
    default                       : 3
    sdp, port-num 30000           : 4
    rds, port-num 100-200         : 6
    ipoib, pkey 0x8001            : 8
    srp, target-port-guid 0x1234-0x1300  : 10
    any, service-id 0x100-0x200 : 11
    any, pkey 0x1                 : 12
    any, source-port-guid 0x5     : 13
end-qos-ulps
";

const PARTITIONS: &str = "
Default=0x7fff, ipoib, mtu=4, rate=3, defmember=full : ALL, SELF=full ;
Storage=0x8001, indx0, sl=2 : 0x0002c90300001234=full, 0x0002c90300001235 ;
Compute=0x0002, scope=2 : ALL_CAS=limited, ALL_SWITCHES=full, ALL_ROUTERS ;
Compute=0x0002 : mgid=ff12:401b::0:0:0:1, mtu=4, rate=3, sl=1, Q_Key=0x0b1b, TClass=0, FlowLabel=0 ;
Other=0x0003 : NONE ;
";

const SAQUERY: &str = "PathRecord dump:
\t\tservice_id..............0x0000000000000000
\t\tdgid....................fe80::2:c903:0:1
\t\tsgid....................fe80::2:c903:0:2
\t\tdlid....................0x1
\t\tslid....................0x2
\t\thop_flow_raw............0x0
\t\ttclass..................0x0
\t\tnum_path_revers.........0x80
\t\tpkey....................0xFFFF
\t\tqos_class...............0x0
\t\tsl......................0x3
\t\tmtu.....................0x84
PathRecord dump:
\t\tdlid....................0x2
\t\tslid....................0x1
\t\tsl......................0x0
";

/// A torus-2QoS.conf as `ibsm topo --write-torus-conf` writes it.
fn torus_conf() -> String {
    let grid = fabric_sim::topo::gen::Grid::of_spec("torus:3,4,2")
        .unwrap()
        .unwrap();
    fabric_sim::topo::subnet::torus_conf(&grid)
}

const GUIDS: &str = "0x0002c90300001234\n0x0002c90300001235 # spine\n\n0x10\n";
const RANKED: &str = "0x0002c90300001234 0\n0x0002c90300001235 1\n0x10\n";
const PATH_SL: &str = "# SLID DLID SL\n1 2 0\n2 1 3\n0x3 0x1 15\n";
const SL2VL: &str = "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7";
const VLARB: &str = "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0";

/// The undamaged files parse, so the damage lands past their first line.
#[test]
fn the_bases_parse() {
    sm::qos::policy::QosPolicy::parse(POLICY, "qos-policy.conf").unwrap();
    sm::partition::PartitionConfig::parse_with_qos(PARTITIONS, "partitions.conf", true).unwrap();
    sm::routing::torus::TorusConfig::parse(&torus_conf()).unwrap();
    assert_eq!(sm::routing::ftree::parse_guid_list(GUIDS).unwrap().len(), 3);
    assert_eq!(sm::routing::updn::parse_guid_file(RANKED).unwrap().len(), 3);
    sm::dump::parse_path_sl_dump(PATH_SL).unwrap();
    sm::dump::parse_saquery_paths(SAQUERY).unwrap();
    sm::qos::parse_sl2vl(SL2VL).unwrap();
    sm::qos::parse_vlarb(VLARB).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn qos_policy_never_panics(ops in ops()) {
        let _ = sm::qos::policy::QosPolicy::parse(&damaged(POLICY, &ops), "qos-policy.conf");
    }

    #[test]
    fn partitions_conf_never_panics(ops in ops()) {
        let text = damaged(PARTITIONS, &ops);
        let _ = sm::partition::PartitionConfig::parse_with_qos(&text, "partitions.conf", true);
    }

    #[test]
    fn torus_conf_never_panics(ops in ops()) {
        let _ = sm::routing::torus::TorusConfig::parse(&damaged(&torus_conf(), &ops));
    }

    #[test]
    fn guid_files_never_panic(ranked: bool, ops in ops()) {
        let text = damaged(if ranked { RANKED } else { GUIDS }, &ops);
        let _ = sm::routing::ftree::parse_guid_list(&text);
        let _ = sm::routing::updn::parse_guid_file(&text);
        let _ = sm::lid::Guid2Lid::parse(&text);
    }

    #[test]
    fn path_sl_dumps_never_panic(saquery: bool, ops in ops()) {
        let text = damaged(if saquery { SAQUERY } else { PATH_SL }, &ops);
        let _ = sm::dump::parse_path_sl_dump(&text);
        let _ = sm::dump::parse_saquery_paths(&text);
    }

    #[test]
    fn qos_values_never_panic(vlarb: bool, ops in ops()) {
        let text = damaged(if vlarb { VLARB } else { SL2VL }, &ops);
        let _ = sm::qos::parse_sl2vl(&text);
        let _ = sm::qos::parse_vlarb(&text);
    }
}

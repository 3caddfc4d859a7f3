//! `ibsm sim` end to end: the binary brings a simulated fabric up, writes OpenSM's dump files,
//! honours its own guid2lid on a second run, and rejects bad input with clear errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use umad::testutil::TempDir;

fn ibsm(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh scratch directory, removed with everything in it when the test ends.
fn tmp(tag: &str) -> TempDir {
    TempDir::new(&format!("sim-cli-{tag}")).unwrap()
}

#[test]
fn fat_tree_comes_up_and_dumps_are_written() {
    let dir = tmp("ft");
    let (code, out, err) = ibsm(&[
        "sim",
        "fat-tree:2,8",
        "--dump-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("minhop tables configured on all switches"),
        "{out}"
    );
    assert!(out.contains("SUBNET UP"), "{out}");
    assert!(
        out.contains("every CA reaches every CA along a shortest path"),
        "{out}"
    );
    for f in [
        "guid2lid",
        "opensm-lfts.dump",
        "opensm-subnet.lst",
        "ibnetdiscover.topo",
    ] {
        let meta = std::fs::metadata(dir.path().join(f)).unwrap_or_else(|_| panic!("{f} missing"));
        assert!(meta.len() > 0, "{f} empty");
    }
    let lfts = std::fs::read_to_string(dir.path().join("opensm-lfts.dump")).unwrap();
    assert!(
        lfts.starts_with("Unicast lids [0-"),
        "{}",
        &lfts[..80.min(lfts.len())]
    );

    // A second run that honours the guid2lid of the first keeps every LID.
    let g2l = dir.path().join("guid2lid");
    let saved = std::fs::read_to_string(&g2l).unwrap();
    let dir2 = tmp("ft2");
    let (code, out, _) = ibsm(&[
        "sim",
        "fat-tree:2,8",
        "--guid2lid",
        g2l.to_str().unwrap(),
        "--dump-dir",
        dir2.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let lines = |t: &str| {
        let mut v: Vec<String> = t
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    let again = std::fs::read_to_string(dir2.path().join("guid2lid")).unwrap();
    assert!(!lines(&saved).is_empty());
    assert_eq!(
        lines(&again),
        lines(&saved),
        "the same GUIDs must keep the same LIDs"
    );
}

#[test]
fn bad_input_gets_a_clear_error() {
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,x"]);
    assert_eq!(code, 2);
    assert!(err.contains("fat-tree:2,x"), "{err}");
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,8", "--faults", "drop=2"]);
    assert_eq!(code, 2);
    assert!(err.contains("--faults"), "{err}");
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,8", "--no-such-option"]);
    assert_eq!(code, 2);
    assert!(err.contains("no-such-option"), "{err}");
    let (code, _, err) = ibsm(&["sim"]);
    assert_eq!(code, 2);
    assert!(err.contains("missing TOPOLOGY"), "{err}");
    let (code, _, err) = ibsm(&["frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown command"), "{err}");
}

/// `exit_on_fatal` (OpenSM's default TRUE): a `--guid2lid` file with a line that is not
/// `GUID BASE LAST` stops the run with status 2 (bad input, as for an unreadable file) and
/// OpenSM's FATAL line naming the file and
/// the line; `-y` (`--stay_on_fatal`) goes on, says why the file is discarded, and comes up.
/// Entries OpenSM drops one by one (an illegal range) are not fatal.
#[test]
fn a_corrupt_guid2lid_is_fatal_unless_stay_on_fatal() {
    let dir = tmp("fatal");
    let g2l = dir.path().join("guid2lid");
    std::fs::write(&g2l, "0x0000000000000001 0x0001 0x0001\n\nnot a line\n").unwrap();
    let g2l = g2l.to_str().unwrap();
    let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "--guid2lid", g2l]);
    assert_eq!(code, 2, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains("FATAL: Error restoring Guid-to-Lid persistent database")
            && err.contains(&format!("{g2l}: line 3")),
        "{err}"
    );
    assert!(!out.contains("SUBNET UP"), "{out}");
    let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "--guid2lid", g2l, "-y"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("discarding the whole file"), "{out}");
    assert!(out.contains("SUBNET UP"), "{out}");
    // An illegal range is dropped with a warning, not fatal.
    std::fs::write(
        dir.path().join("guid2lid"),
        "0x0000000000000001 0x0005 0x0001\n",
    )
    .unwrap();
    let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "--guid2lid", g2l]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("SUBNET UP"), "{out}");
}

/// `node_name_map_name`: the dump files print the names a node name map gives (the lfts
/// dump's switch header and destination comments, opensm-subnet.lst, ibnetdiscover.topo),
/// NodeDescriptions elsewhere; a map with a line that is no GUID is refused with OpenSM's
/// warning and changes nothing.
#[test]
fn node_name_map_names_the_nodes_in_the_dumps() {
    let dir = tmp("names");
    let plain = dir.path().join("plain");
    let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "--dump-dir", plain.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    let lfts = std::fs::read_to_string(plain.join("opensm-lfts.dump")).unwrap();
    // "Unicast lids [0-N] of switch Lid L guid 0x<guid> ('<desc>'):"
    let header = lfts.lines().next().unwrap();
    let guid = header
        .split(" guid ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let desc = header.split("('").nth(1).unwrap().trim_end_matches("'):");
    let map = dir.path().join("ib-node-name-map");
    std::fs::write(&map, format!("# test\n{guid} \"leaf-switch-one\"\n")).unwrap();
    let conf = dir.path().join("sm.conf");
    std::fs::write(&conf, format!("node_name_map_name {}\n", map.display())).unwrap();
    let named = dir.path().join("named");
    let (code, out, err) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "-F",
        conf.to_str().unwrap(),
        "--dump-dir",
        named.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let read = |f: &str| std::fs::read_to_string(named.join(f)).unwrap();
    let lfts = read("opensm-lfts.dump");
    assert!(
        lfts.lines()
            .next()
            .unwrap()
            .ends_with("('leaf-switch-one'):"),
        "{}",
        &lfts[..200]
    );
    assert!(lfts.contains("Switch portguid "), "{}", &lfts[..200]);
    assert!(lfts.contains(": 'leaf-switch-one'"), "destination comments");
    assert!(!lfts.contains(&format!("'{desc}'")), "{desc} still printed");
    assert!(read("opensm-subnet.lst").contains("{leaf-switch-one}"));
    assert!(read("ibnetdiscover.topo").contains("# \"leaf-switch-one\""));
    // A map with a line that is no GUID: OpenSM's warning, NodeDescriptions.
    std::fs::write(&map, format!("{guid} \"x\"\nleaf 0x1\n")).unwrap();
    let again = dir.path().join("again");
    let (code, out, err) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "-F",
        conf.to_str().unwrap(),
        "--dump-dir",
        again.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("WARNING failed to parse node name map") && err.contains("line 2"),
        "{err}"
    );
    let lfts = std::fs::read_to_string(again.join("opensm-lfts.dump")).unwrap();
    assert!(lfts.contains(&format!("('{desc}')")), "{}", &lfts[..200]);
}

/// `sa_db_dump` and `sa_db_file` (`-S`) in `ibsm sim`: the dump directory gets
/// `opensm-sa.dump` (the default partition's broadcast group, as OpenSM writes it); a file
/// with one more group and its member is restored at start and dumped again; a malformed file
/// is refused naming its line.
#[test]
fn sa_db_is_dumped_and_restored() {
    let dir = tmp("sadb");
    let conf = dir.path().join("sm.conf");
    std::fs::write(&conf, "sa_db_dump TRUE\n").unwrap();
    let first = dir.path().join("first");
    let run = |extra: &[&str], to: &std::path::Path| {
        let mut a = vec![
            "sim",
            "fat-tree:2,4",
            "-F",
            conf.to_str().unwrap(),
            "--dump-dir",
        ];
        a.push(to.to_str().unwrap());
        a.extend_from_slice(extra);
        ibsm(&a)
    };
    let (code, out, err) = run(&[], &first);
    assert_eq!(code, 0, "{out}\n{err}");
    let dump = std::fs::read_to_string(first.join("opensm-sa.dump")).unwrap();
    assert!(
        dump.starts_with("MC Group 0xc000  (well known): mgid=0xff12401bffff0000:0x00000000ffffffff port_gid=0x0000000000000000:0x0000000000000000 qkey=0x00000b1b mlid=0xc000"),
        "{dump}"
    );
    // A CA port of the fabric (from guid2lid) joins a group of its own in the file.
    let g2l = std::fs::read_to_string(first.join("guid2lid")).unwrap();
    let ca = g2l
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .find(|g| !dump.contains(g))
        .unwrap()
        .to_string();
    let group = format!(
        "MC Group 0xc001 : mgid=0xff12a01bfe800000:0x00000000000000aa port_gid=0x0000000000000000:0x0000000000000000 qkey=0x00001234 mlid=0xc001 mtu=0x84 tclass=0x00 pkey=0xffff rate=0x83 pkt_life=0x92 sl_flow_hop=0x00000000 scope_state=0x21 proxy_join=0x0\n\n\
         mcm_port: port_gid=0xfe80000000000000:{ca} scope_state=0x21 proxy_join=0x0\n\n"
    );
    let file = dir.path().join("opensm-sa.dump");
    std::fs::write(&file, format!("{dump}{group}")).unwrap();
    let second = dir.path().join("second");
    let (code, out, err) = run(&["-S", file.to_str().unwrap()], &second);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "SA database restored from {}: 2 multicast groups (1 members), 0 services, 0 event subscriptions",
            file.display()
        )),
        "{out}"
    );
    let again = std::fs::read_to_string(second.join("opensm-sa.dump")).unwrap();
    assert_eq!(again, format!("{dump}{group}"));
    // A malformed line: refused, naming it.
    std::fs::write(&file, group.replace("mlid=0xc001", "mlid=0xq")).unwrap();
    let (code, _, err) = run(&["-S", file.to_str().unwrap()], &dir.path().join("third"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 1") && err.contains("mlid=0xq"), "{err}");
}

#[test]
fn faults_do_not_change_the_outcome() {
    let (code, out, err) = ibsm(&[
        "sim",
        "fat-tree:2,8",
        "--faults",
        "drop=0.01,dup=0.001",
        "--seed",
        "7",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("SUBNET UP"));
}

/// The largest fat tree: k36 (1,620 switches, 11,664 CAs) comes up with every CA
/// reaching every CA on a shortest path and no credit loop (timing is in docs/benchmarks.md).
#[test]
fn k36_comes_up() {
    let (code, out, err) = ibsm(&["sim", "fat-tree:3,36"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("13284 nodes (1620 switches, 11664 CAs)"),
        "{out}"
    );
    assert!(out.contains("SUBNET UP"), "{out}");
    assert!(out.contains("(136048896 CA pairs"), "{out}");
    assert!(out.contains("credit loops     none"), "{out}");
}

/// `-Q` with a `qos_swe_sl2vl` of its own: the SM programs SL-to-VL on every port and
/// `opensm-sl2vl.dump` shows what the ports acknowledged — switch rows the `qos_swe` table,
/// CA rows OpenSM's default (SL 15 -> VL 7), both masked to the simulator's VL0-7. Without
/// `-Q` (and minhop, which sets no tables) there is no such dump. A bad table is refused.
#[test]
fn qos_programs_sl2vl_and_dumps_it() {
    let dir = tmp("qos");
    let conf_dir = tmp("qos-conf");
    let conf = conf_dir.path().join("opensm.conf");
    std::fs::write(&conf, "qos_swe_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15\n").unwrap();
    let (code, out, err) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "-Q",
        "-F",
        conf.to_str().unwrap(),
        "--dump-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let dump = std::fs::read_to_string(dir.path().join("opensm-sl2vl.dump")).unwrap();
    let (mut sw_rows, mut ca_rows) = (0, 0);
    let mut in_switch = false;
    for l in dump.lines() {
        if l.starts_with("Switch ") {
            in_switch = true;
        } else if l.starts_with("Channel Adapter ") {
            in_switch = false;
        } else if !l.starts_with('#') && l.contains(':') {
            let vls: Vec<&str> = l.split(':').nth(1).unwrap().split_whitespace().collect();
            if in_switch {
                assert_eq!(vls.join(","), "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15", "{l}");
                sw_rows += 1;
            } else {
                assert_eq!(vls.join(","), "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7", "{l}");
                ca_rows += 1;
            }
        }
    }
    // fat-tree:2,4: 2 spines, 4 leaves (4 ports each, all cabled), 8 CAs.
    assert_eq!((sw_rows, ca_rows), (6 * 4 * 5, 8), "{dump}");

    let dir = tmp("noqos");
    let (code, out, _) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "--dump-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(dir.path().join("opensm-lfts.dump").exists());
    assert!(!dir.path().join("opensm-sl2vl.dump").exists());

    std::fs::write(&conf, "qos_sl2vl 1,2\n").unwrap();
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,4", "-Q", "-F", conf.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("qos_sl2vl") && err.contains("entries"),
        "{err}"
    );
    // A policy file that does not parse is refused with its file and line.
    let d = tmp("qos-policy");
    let pol = d.path().join("qos-policy.conf");
    std::fs::write(
        &pol,
        "qos-levels\n  qos-level\n    sl: 99\n  end-qos-level\nend-qos-levels\n",
    )
    .unwrap();
    let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "-Q", "-Y", pol.to_str().unwrap()]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("qos-policy.conf:3"), "{err}");
}

/// `-P FILE`: a partitions.conf that parses brings the fabric up; one with a bad line is
/// refused with its file and line; a file that does not exist means no partitions.conf, as
/// OpenSM (`-P /nonexistent` is how OpenSM users ask for the built-in default).
#[test]
fn partition_config_file_is_read_and_bad_lines_are_refused() {
    let d = tmp("partitions");
    let good = d.path().join("good.conf");
    std::fs::write(
        &good,
        "Default=0x7fff : ALL=full ;\nred=0x10, ipoib : ALL_CAS=full ;\n",
    )
    .unwrap();
    let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "-P", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("SUBNET UP"), "{out}");
    let bad = d.path().join("bad.conf");
    std::fs::write(&bad, "red=0x10 : ALL=full;\nblue=0x20, bogus : ALL;\n").unwrap();
    let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "-P", bad.to_str().unwrap()]);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("bad.conf:2: unknown partition flag 'bogus'"),
        "{err}"
    );
    let missing = d.path().join("missing.conf");
    let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "-P", missing.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
}

/// `ibsm topo --write-torus-conf` writes the torus-2QoS.conf of a generated torus or mesh,
/// and torus-2QoS routes the same spec with it in `ibsm sim` (without it, OpenSM's ERR 4E11
/// and the fallback to minhop, whose tables have credit loops); other specs are refused.
#[test]
fn topo_writes_the_torus_conf_that_torus_2qos_routes_with() {
    let dir = tmp("torus-conf");
    for (spec, first) in [("torus:4,4,3", "torus 4 4 3"), ("mesh:3,5", "mesh 3 5 1")] {
        let conf = dir.path().join(format!("{}.conf", &spec[..4]));
        let conf = conf.to_str().unwrap();
        let (code, out, err) = ibsm(&["topo", spec, "--write-torus-conf", conf]);
        assert_eq!(code, 0, "{spec}: {out}{err}");
        assert!(out.contains(&format!("wrote {conf}")), "{spec}: {out}");
        let text = std::fs::read_to_string(conf).unwrap();
        assert_eq!(text.lines().next(), Some(first), "{spec}: {text}");
        let (code, out, err) = ibsm(&[
            "sim",
            spec,
            "-R",
            "torus-2QoS,no_fallback",
            "-Q",
            "--torus_config",
            conf,
        ]);
        assert_eq!(code, 0, "{spec}: {out}{err}");
        assert!(
            out.contains("torus-2QoS tables configured on all switches"),
            "{spec}: {out}"
        );
        assert!(out.contains("no credit loop"), "{spec}: {out}");
    }
    // Without a readable torus_config, a warning says how to write one.
    let missing = dir.path().join("missing.conf");
    let (code, out, err) = ibsm(&[
        "sim",
        "torus:4,4,3",
        "-R",
        "torus-2QoS",
        "-Q",
        "--torus_config",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("ERR 4E11"), "{out}");
    assert!(
        err.contains("`ibsm topo torus:4,4,3 --write-torus-conf FILE` writes one"),
        "{err}"
    );
    let bad = dir.path().join("bad.conf");
    let bad = bad.to_str().unwrap();
    for (spec, why) in [
        ("fat-tree:2,8", "is not a generated torus or mesh"),
        ("torus:0,4", "every dimension must be at least 1"),
        ("torus:4,4,4,4", "usage: torus:X,Y[,Z]"),
    ] {
        let (code, out, err) = ibsm(&["topo", spec, "--write-torus-conf", bad]);
        assert_eq!(code, 2, "{spec}: {out}{err}");
        assert!(err.contains(why), "{spec}: {err}");
        assert!(!std::path::Path::new(bad).exists(), "{spec}");
    }
    let (code, out, _) = ibsm(&["topo", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("--write-torus-conf"), "{out}");
}

/// `ibsm topo --fault` breaks the fabric before writing it (what OpenSM on ibsim is given for
/// the failed-link and failed-switch comparisons): the cable or the switch and its lone CA are
/// gone from the `.net`, and the file loads back as the smaller fabric. Bad faults are refused
/// with the reason, and nothing is written.
#[test]
fn topo_fault_writes_the_broken_fabric() {
    let dir = tmp("fault");
    let net = dir.path().join("broken.net");
    let net = net.to_str().unwrap();
    let (code, out, err) = ibsm(&[
        "topo",
        "torus:5,5",
        "--fault",
        "link:sw-2-1:1",
        "--fault",
        "switch:sw-0-0",
        "--write-net",
        net,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // 75 links less the cable, and sw-0-0's four links and its CA's.
    assert!(
        out.starts_with("torus:5,5: 24 switches, 24 CAs, 69 links"),
        "{out}"
    );
    let text = std::fs::read_to_string(net).unwrap();
    assert!(!text.contains("\"sw-0-0\""), "{text}");
    assert!(!text.contains("\"ca-0-0-0\""), "{text}");
    let (code, out, err) = ibsm(&["topo", net]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("24 switches, 24 CAs, 69 links"), "{out}");
    for (fault, why) in [
        ("cable:sw-1-1", "expected link:NAME:PORT or switch:NAME"),
        ("link:sw-9-9:1", "no node named \"sw-9-9\""),
        ("switch:ca-1-1-0", "\"ca-1-1-0\" is not a switch"),
        ("link:sw-1-1:7", "no port 7"),
    ] {
        let bad = dir.path().join("bad.net");
        let bad = bad.to_str().unwrap();
        let (code, out, err) = ibsm(&["topo", "torus:5,5", "--fault", fault, "--write-net", bad]);
        assert_eq!(code, 2, "{fault}: {out}{err}");
        assert!(err.contains(why), "{fault}: {err}");
        assert!(!std::path::Path::new(bad).exists(), "{fault}");
    }
}

/// `ibsm topo --write-root-guids` writes the top tier of a generated Dragonfly+ fabric (every
/// group's spines), and dfp2, which refuses without a root_guid_file, routes with it; without
/// one a warning says how to write it. Fabrics without a top tier are refused.
#[test]
fn topo_writes_the_root_guids_dfp2_routes_with() {
    let dir = tmp("roots");
    let spec = "dragonfly:4,3,2,2";
    let roots = dir.path().join("roots.txt");
    let roots = roots.to_str().unwrap();
    let (code, out, err) = ibsm(&["topo", spec, "--write-root-guids", roots]);
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(roots).unwrap();
    // 4 groups × 2 spines, created first: GUIDs SWITCH_GUID_BASE + 0..8.
    let want: String = (0..8u64)
        .map(|i| format!("0x{:016x}\n", 0x0002_0000_0000_0000 + i))
        .collect();
    assert_eq!(text, want);
    let (code, out, err) = ibsm(&[
        "sim",
        spec,
        "-R",
        "dfp2,no_fallback",
        "-Q",
        "--root_guid_file",
        roots,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("dfp2 tables configured"), "{out}");
    assert!(out.contains("no credit loop"), "{out}");
    let (code, out, err) = ibsm(&["sim", spec, "-R", "dfp2,no_fallback", "-Q"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("dfp2 needs a root_guid_file"), "{out}");
    assert!(
        err.contains(&format!("`ibsm topo {spec} --write-root-guids FILE`")),
        "{err}"
    );
    let bad = dir.path().join("bad.txt");
    let bad = bad.to_str().unwrap();
    let (code, _, err) = ibsm(&["topo", "torus:4,4", "--write-root-guids", bad]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not a generated fat-tree"), "{err}");
    assert!(!std::path::Path::new(bad).exists());
}

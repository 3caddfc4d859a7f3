//! Issue 11: verdicts a user can trust. Every case the issue saw on main is a test of the
//! binary's exit status and message: wrong success, wrong failure, limits, bad input, figures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn ibsm(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm"))
        .args(args)
        .output()
        .unwrap();
    let (code, stdout, stderr) = (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        !stderr.contains("panicked"),
        "ibsm {args:?} panicked:\n{stderr}"
    );
    (code, stdout, stderr)
}

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/verdicts")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ibsm-verdict-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The line of `out` that starts with `prefix`.
fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in\n{out}"))
}

// ---------------------------------------------------------------- wrong success

/// `--faults drop=1.0`, `drop=0.5` and a huge delay: no SUBNET UP, exit 1, and the summary is
/// the sweep that finished (the SM's own node was found), not the re-sweep that had started.
#[test]
fn lossy_fabric_is_not_subnet_up_and_the_finished_sweep_is_reported() {
    for faults in ["drop=1.0", "drop=0.5", "delay=1.0:10s"] {
        let (code, out, err) = ibsm(&["sim", "fat-tree:2,8", "--faults", faults]);
        assert_eq!(code, 1, "{faults}:\n{out}\n{err}");
        assert!(!out.contains("SUBNET UP"), "{faults}:\n{out}");
        assert!(
            out.contains("ERRORS DURING INITIALIZATION"),
            "{faults}:\n{out}"
        );
        assert!(out.contains("subnet did NOT come up"), "{faults}:\n{out}");
        let found = line(&out, "nodes found");
        assert!(
            !found.starts_with("nodes found      0 "),
            "{faults}: {found}"
        );
        assert!(
            line(&out, "topology").contains("FAILED"),
            "{faults}:\n{out}"
        );
        assert_eq!(line(&out, "verdict").trim_end(), "verdict          FAILED");
    }
}

/// `--faults corrupt=1.0`: corrupted MADs are dropped (by the receiving port, and by the SM
/// when the route does not match), so no phantom node, and the verdict is FAILED; a low
/// corruption rate is recovered by retries.
#[test]
fn corruption_makes_no_phantom_nodes() {
    let (code, out, _) = ibsm(&["sim", "fat-tree:2,4", "--faults", "corrupt=1.0"]);
    assert_eq!(code, 1, "{out}");
    let found = line(&out, "nodes found");
    let n: usize = found.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(n <= 14, "{found}");
    assert!(out.contains("subnet did NOT come up"), "{out}");
    let (code, out, err) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "--faults",
        "corrupt=0.02",
        "--seed",
        "3",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        line(&out, "nodes found").starts_with("nodes found      14 (6 switches, 8 CAs"),
        "{out}"
    );
}

/// Two halves with no cable between them: the part the SM cannot reach is named and fails
/// the run unless `--allow-partial`; `ibsm verify` finds the unreachable pairs.
#[test]
fn disconnected_halves_fail_unless_allowed() {
    let t = data("halves.net");
    let (code, out, _) = ibsm(&["sim", &t]);
    assert_eq!(code, 1, "{out}");
    assert!(
        line(&out, "topology")
            .contains("3 of 6 nodes are not connected to the SM's port: S2, H3, H4"),
        "{out}"
    );
    let (code, out, _) = ibsm(&["sim", &t, "--allow-partial"]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = ibsm(&["verify", "--topology", &t, "--routing", "minhop"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        line(&out, "verify:").contains("8 CA pairs unreachable"),
        "{out}"
    );
}

/// Two CAs cabled together: their pairs are checked (4, self included), not "0 pairs".
#[test]
fn back_to_back_cas_are_checked() {
    let t = data("back-to-back.net");
    let (code, out, _) = ibsm(&["sim", &t]);
    assert_eq!(code, 0, "{out}");
    assert!(line(&out, "check").contains("(4 CA pairs"), "{out}");
    let (code, out, _) = ibsm(&["verify", "--topology", &t, "--routing", "minhop"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("4 CA pairs"), "{out}");
}

/// A check of zero CA pairs is not success unless `--allow-no-pairs`.
#[test]
fn zero_pairs_fail_unless_allowed() {
    let t = data("switch-only.net");
    for cmd in [
        vec!["sim", t.as_str()],
        vec!["verify", "--topology", t.as_str(), "--routing", "minhop"],
    ] {
        let (code, out, _) = ibsm(&cmd);
        assert_eq!(code, 1, "{cmd:?}\n{out}");
        assert!(out.contains("nothing was checked: 0 CA pairs"), "{out}");
        let mut allowed = cmd.clone();
        allowed.push("--allow-no-pairs");
        let (code, out, _) = ibsm(&allowed);
        assert_eq!(code, 0, "{allowed:?}\n{out}");
    }
}

/// An empty topology is refused by sim, verify and serve (exit 2), blaming the topology and
/// not an option the user never gave.
#[test]
fn empty_topology_is_refused() {
    let t = data("empty.net");
    for cmd in [
        vec!["sim", t.as_str()],
        vec!["verify", "--topology", t.as_str(), "--routing", "minhop"],
        vec![
            "sim",
            "serve",
            t.as_str(),
            "--socket-name",
            "ibsm-verdict-empty",
        ],
    ] {
        let (code, out, err) = ibsm(&cmd);
        assert_eq!(code, 2, "{cmd:?}\n{out}\n{err}");
        assert!(err.contains("the topology has no nodes"), "{cmd:?}: {err}");
        assert!(!err.contains("--sm-at"), "{err}");
        assert!(!out.contains("ready"), "{out}");
    }
}

/// `verify --routing bogus` is refused like `sim -R bogus`.
#[test]
fn verify_refuses_an_unknown_engine() {
    let (code, _, err) = ibsm(&["verify", "--topology", "fat-tree:2,4", "--routing", "bogus"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("\"bogus\" is not an engine name"), "{err}");
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,4", "-R", "bogus"]);
    assert_eq!(code, 2, "{err}");
}

/// The verdict follows the engine's promise: up/down on a dragonfly is not shortest by design
/// and passes; min-hop is held to shortest paths.
#[test]
fn verdict_follows_the_engine_promise() {
    let (code, out, _) = ibsm(&["sim", "dragonfly:4,4,2,2", "-R", "updn"]);
    assert_eq!(code, 0, "{out}");
    assert!(line(&out, "check").contains("PASSED"), "{out}");
    let (code, out, _) = ibsm(&[
        "verify",
        "--topology",
        "dragonfly:4,4,2,2",
        "--routing",
        "updn",
    ]);
    assert_eq!(code, 0, "{out}");
    // A dump of up/down tables judged as if min-hop had made them: the broken promise is
    // named.
    let dir = tmp("promise");
    let (code, _, _) = ibsm(&[
        "sim",
        "dragonfly:4,4,2,2",
        "-R",
        "updn",
        "--dump-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let dump = dir.join("opensm-lfts.dump");
    let (code, out, _) = ibsm(&[
        "verify",
        "--topology",
        "dragonfly:4,4,2,2",
        "--lfts",
        dump.to_str().unwrap(),
        "--engine",
        "minhop",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        line(&out, "verify:")
            .contains("longer than the shortest path (minhop promises shortest paths)"),
        "{out}"
    );
    let (code, out, _) = ibsm(&[
        "verify",
        "--topology",
        "dragonfly:4,4,2,2",
        "--lfts",
        dump.to_str().unwrap(),
        "--engine",
        "updn",
    ]);
    assert_eq!(code, 0, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One verdict, one exit status: credit loops fail `ibsm sim` as they fail `ibsm verify`,
/// unless `--allow-credit-loops`.
#[test]
fn credit_loops_fail_sim_and_verify_alike() {
    for spec in ["torus:4,4", "mesh:3,3", "random:8,16,6,1"] {
        let (code, out, _) = ibsm(&["sim", spec]);
        assert_eq!(code, 1, "{spec}:\n{out}");
        assert!(line(&out, "check").contains("credit loop of"), "{out}");
        let (vcode, vout, _) = ibsm(&["verify", "--topology", spec, "--routing", "minhop"]);
        assert_eq!(vcode, code, "{spec}: sim and verify disagree\n{vout}");
        assert!(line(&vout, "verify:").contains("credit loop of"), "{vout}");
        let (code, out, _) = ibsm(&["sim", spec, "--allow-credit-loops"]);
        assert_eq!(code, 0, "{spec}:\n{out}");
        let (code, out, _) = ibsm(&[
            "verify",
            "--topology",
            spec,
            "--routing",
            "minhop",
            "--allow-credit-loops",
        ]);
        assert_eq!(code, 0, "{spec}:\n{out}");
    }
    let (code, out, _) = ibsm(&["sim", "torus:4,4", "-R", "updn"]);
    assert_eq!(code, 0, "{out}");
}

/// `ibsm verify` names the CA it skipped (here one whose LID the dump does not have) and
/// fails: no table routes to it.
#[test]
fn verify_names_the_ca_it_skipped() {
    let dir = tmp("skip");
    let (code, _, _) = ibsm(&["sim", "fat-tree:2,4", "--dump-dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0);
    // Drop h-0-1's line from every switch's table and from the LID list.
    let dump = std::fs::read_to_string(dir.join("opensm-lfts.dump")).unwrap();
    let kept: String = dump
        .lines()
        .filter(|l| !l.contains("'h-0-1'"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(kept.len() < dump.len());
    let p = dir.join("partial.dump");
    std::fs::write(&p, kept).unwrap();
    let (code, out, err) = ibsm(&[
        "verify",
        "--topology",
        "fat-tree:2,4",
        "--lfts",
        p.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("skipped 1 CA port(s):"), "{out}");
    assert!(out.contains("'h-0-1' (0x"), "{out}");
    assert!(out.contains("port 1: no LID"), "{out}");
    assert!(
        line(&out, "verify:").contains("1 cabled CA ports have no LID"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The printed figures agree: the linked-port counts of the SM's log line and of the report,
/// routing timed as its own phase, and balance figures that say which ports they cover.
#[test]
fn figures_agree() {
    let (code, out, _) = ibsm(&["sim", "fat-tree:2,36"]);
    assert_eq!(code, 0, "{out}");
    let log = out
        .lines()
        .find(|l| l.contains("switch ports 0 Active"))
        .unwrap();
    // "N linked ports and M switch ports 0 Active" vs the report's "N linked ports and M ...".
    // The numbers around " linked ports and ".
    let nums = |l: &str| -> (u64, u64) {
        let (before, after) = l.split_once(" linked ports and ").unwrap();
        let a = before.split_whitespace().last().unwrap().parse().unwrap();
        let b = after.split_whitespace().next().unwrap().parse().unwrap();
        (a, b)
    };
    let (a, b) = nums(log);
    let report = line(&out, "nodes found");
    let (c, d) = nums(report);
    assert_eq!((a, b), (c, d), "{log}\n{report}");
    assert_eq!((a, b), (2 * (648 + 648), 54), "{log}");
    // Routing is its own row of the phase table (phase, SMPs, retried, timed-out, virtual
    // ms, wall ms), no longer booked under discovery.
    let routing = out
        .lines()
        .find(|l| l.starts_with("routing ") && !l.starts_with("routing engine"))
        .unwrap();
    assert_eq!(routing.split_whitespace().count(), 8, "{routing}");
    assert!(
        line(&out, "routes per port").contains("CA-facing ports max"),
        "{out}"
    );
}

// ---------------------------------------------------------------- limits and hangs

/// `--time-limit 1e30` is refused without a panic.
#[test]
fn huge_time_limit_is_refused_without_a_panic() {
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,4", "--time-limit", "1e30"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--time-limit \"1e30\": at most"), "{err}");
    for bad in ["0", "-1", "nan", "inf", "x"] {
        let (code, _, err) = ibsm(&["sim", "fat-tree:2,4", "--time-limit", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
    }
}

/// A fabric that cannot fit the LID space (given LMC) is refused up front with the numbers.
#[test]
fn lid_space_is_checked_up_front() {
    let (code, out, err) = ibsm(&["sim", "fat-tree:3,74"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("needs 108151 unicast LIDs (101306 CA/router ports x 1 LIDs (LMC 0) + 6845 switches x 1)")
            && err.contains("holds 49151"),
        "{err}"
    );
    let (code, _, err) = ibsm(&["sim", "fat-tree:3,36", "-l", "3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("x 8 LIDs (LMC 3)"), "{err}");
}

/// Generators refuse sizes beyond their documented limit at once.
#[test]
fn generator_size_limit() {
    let (code, _, err) = ibsm(&["sim", "dragonfly:100,100,100,100"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("generator limit of 250000"), "{err}");
}

// ---------------------------------------------------------------- bad input

/// GUID 0 is refused; `w=` is ibsim's LinkWidthEnabled mask (w=7 = 1x|4x|8x, so 8x, exactly
/// as ibsim trains it), and a value outside it is refused saying what it means.
#[test]
fn guid_zero_and_width_masks() {
    let (code, _, err) = ibsm(&["sim", &data("guid0.net")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("GUID 0 is not a valid GUID"), "{err}");
    let (code, _, err) = ibsm(&["sim", &data("width0.net")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("LinkWidthEnabled mask"), "{err}");
    let dir = tmp("w7");
    let (code, out, _) = ibsm(&[
        "sim",
        &data("width7.net"),
        "--dump-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let topo = std::fs::read_to_string(dir.join("ibnetdiscover.topo")).unwrap();
    assert!(topo.contains("8xSDR"), "{topo}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A port number above 255 is reported as given, in a topology file and in `--sm-at`.
#[test]
fn port_numbers_are_reported_as_given() {
    let (code, _, err) = ibsm(&["sim", &data("port300.net")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("port 300 is outside 1..=4"), "{err}");
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,4", "--sm-at", "h-0-0:300"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("port 300 is not a port number"), "{err}");
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,4", "--sm-at", "h-0-0:7"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("port 7 is beyond \"h-0-0\"'s 1 ports"),
        "{err}"
    );
}

/// A missing root-GUID file (`-a`) is an error naming the file, and a one-shot run exits
/// non-zero; an unparsable or missing guid2lid is an error-level line naming the file.
#[test]
fn missing_option_files_are_errors_naming_the_file() {
    let (code, _, err) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "-R",
        "updn",
        "-a",
        "/nonexistent/roots",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ERR: root_guid_file (-a) /nonexistent/roots:"),
        "{err}"
    );
    let (code, out, err) = ibsm(&["run", "-o", "-a", "/nonexistent/roots"]);
    assert_ne!(code, 0, "{out}\n{err}");
    assert!(err.contains("/nonexistent/roots"), "{err}");
    let dir = tmp("g2l");
    let g = dir.join("guid2lid");
    std::fs::write(&g, "garbage\n").unwrap();
    // -y: go on past it (without, exit_on_fatal stops the run: sim_cli tests that).
    let (code, out, _) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "--guid2lid",
        g.to_str().unwrap(),
        "-y",
    ]);
    assert_eq!(code, 0, "{out}");
    let l = out.lines().find(|l| l.contains("ERR   guid2lid")).unwrap();
    assert!(l.contains(g.to_str().unwrap()), "{l}");
    let missing = dir.join("none");
    let (_, out, _) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "--guid2lid",
        missing.to_str().unwrap(),
    ]);
    let l = out.lines().find(|l| l.contains("ERR   guid2lid")).unwrap();
    assert!(l.contains("not found"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Options `ibsm sim` documents: honoured (`-c`, `-g`) or refused (`-f`, `-B`).
#[test]
fn sim_honours_or_refuses_its_documented_options() {
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,4", "-B"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-B/--daemon"), "{err}");
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,4", "-f", "/tmp/x.log"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-f/--log_file"), "{err}");
    // -g GUID attaches the SM at that port (h-0-1 of the generator).
    let (code, out, _) = ibsm(&["sim", "fat-tree:2,4", "-g", "0x0001000000000003"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.lines().next().unwrap().contains("SM on \"h-0-1\""),
        "{out}"
    );
    let dir = tmp("c");
    let conf = dir.join("ibsm.conf");
    let (code, out, _) = ibsm(&[
        "sim",
        "fat-tree:2,4",
        "-l",
        "2",
        "-c",
        conf.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.lines().any(|l| l == "lmc 2"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-R` with a name that is no engine (every OpenSM engine name is one ibsm has): a usage
/// error naming the engines, with or without `no_fallback`; help lists the engines.
#[test]
fn unimplemented_engines_are_errors_naming_ours() {
    let have = sm::routing::ENGINES;
    for r in ["up-down", "up-down,no_fallback"] {
        let (code, out, err) = ibsm(&["sim", "fat-tree:2,4", "-R", r]);
        assert_eq!(code, 2, "{out}\n{err}");
        assert!(err.contains("\"up-down\" is not an engine name"), "{err}");
        for e in have {
            assert!(err.contains(e), "{e}: {err}");
        }
    }
    let (_, help, _) = ibsm(&["help"]);
    assert!(help.contains(&have.join(", ")), "{help}");
}

/// `ibsm --version` and `-V` at the top level.
#[test]
fn version_at_the_top_level() {
    for a in ["--version", "-V"] {
        let (code, out, _) = ibsm(&[a]);
        assert_eq!(code, 0);
        assert_eq!(out.trim(), format!("ibsm {}", env!("CARGO_PKG_VERSION")));
    }
}

// ---------------------------------------------------------------- progress

/// Progress goes to a terminal only: with standard error captured (not a terminal) a long
/// run writes nothing but warnings there.
#[test]
fn progress_is_quiet_when_not_a_terminal() {
    let (code, _, err) = ibsm(&["sim", "fat-tree:2,16"]);
    assert_eq!(code, 0);
    assert!(err.is_empty(), "{err:?}");
}

/// Every opensm.conf key is implemented, or listed by `ibsm run -c` as not implemented and
/// warned about when set to anything but its default.
#[test]
fn not_implemented_keys_are_listed_and_warned_about() {
    let dir = tmp("conf");
    let out = dir.join("out.conf");
    let (code, _, err) = ibsm(&["run", "-c", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("# NOT IMPLEMENTED BY IBSM"), "{text}");
    // An OpenSM key ibsm lacks, with OpenSM's default, and a key ibsm reads but ignores.
    assert!(
        text.lines().any(|l| l == "# congestion_control FALSE"),
        "{text}"
    );
    let hops = text.find("\nmax_reverse_hops 0").unwrap();
    assert!(text[..=hops].ends_with(
        "# NOT IMPLEMENTED by ibsm yet: accepted, has no effect (warned if not the default)\n# Default: 0\n"
    ), "{text}");
    // Implemented keys are not marked.
    for key in [
        "m_key_lease_period 0",
        "connect_roots FALSE",
        "m_key_protection_level 0",
        "guid_routing_order_file ",
        "guid_routing_order_no_scatter FALSE",
        "sweep_on_trap TRUE",
        "qos_policy_file ",
        "sminfo_polling_timeout ",
    ] {
        let at = text.find(&format!("\n{key}")).unwrap();
        let doc = &text[..at];
        let doc = &doc[doc.rfind("\n\n").unwrap_or(0)..];
        assert!(!doc.contains("NOT IMPLEMENTED"), "{key}:{doc}");
    }
    // Every OpenSM key is either a key line or listed.
    let opensm = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/opensm-default.conf"),
    )
    .unwrap();
    for l in opensm
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let key = l.split_whitespace().next().unwrap();
        assert!(
            text.lines()
                .any(|t| t.split_whitespace().next() == Some(key)
                    || t.strip_prefix("# ")
                        .and_then(|r| r.split_whitespace().next())
                        == Some(key)),
            "{key} neither implemented nor listed"
        );
    }
    // Non-default values warn; defaults do not.
    let conf = dir.join("in.conf");
    let warnings_for = |text: &str| {
        std::fs::write(&conf, text).unwrap();
        let (code, _, err) = ibsm(&[
            "run",
            "-F",
            conf.to_str().unwrap(),
            "-c",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        err
    };
    let err = warnings_for("congestion_control TRUE\nmax_reverse_hops 2\n");
    assert!(
        err.contains("congestion_control TRUE is not implemented"),
        "{err}"
    );
    assert!(
        err.contains("max_reverse_hops 2: not implemented by ibsm yet"),
        "{err}"
    );
    // Implemented: no warning whatever its value.
    for implemented in [
        "use_ucast_cache TRUE\n",
        "sweep_on_trap FALSE\n",
        "qos TRUE\nqos_policy_file /dev/null\n",
        "sminfo_polling_timeout 500\npolling_retry_number 2\n",
        "master_sm_priority 14\nignore_other_sm TRUE\n",
        "force_heavy_sweep TRUE\nhonor_guid2lid_file TRUE\n",
        "m_key_protection_level 1\nm_key_lease_period 60\n",
        "guid_routing_order_file /dev/null\nguid_routing_order_no_scatter TRUE\n",
        "connect_roots TRUE\nsm_sl 2\n",
    ] {
        let err = warnings_for(implemented);
        assert!(!err.contains("not implemented"), "{implemented}: {err}");
    }
    let err = warnings_for("congestion_control FALSE\nmax_reverse_hops 0\n");
    assert!(!err.contains("max_reverse_hops"), "{err}");
    assert!(!err.contains("congestion_control"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/benchmarks.md: every command runs from the repository alone — no path of a particular
/// machine, and every script it names is in the repository.
#[test]
fn benchmark_commands_run_from_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let doc = std::fs::read_to_string(root.join("docs/benchmarks.md")).unwrap();
    for bad in [
        "/work/",
        "/tmp/",
        "/root/",
        "shared/tools",
        "shared/reference",
    ] {
        assert!(!doc.contains(bad), "docs/benchmarks.md names {bad:?}");
    }
    let mut scripts = 0;
    for (i, _) in doc.match_indices("bench/") {
        let name: String = doc[i..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '`')
            .collect();
        if name.ends_with(".sh") {
            assert!(
                root.join(&name).is_file(),
                "{name} is not in the repository"
            );
            scripts += 1;
        }
    }
    assert!(
        scripts >= 2,
        "the OpenSM rows name bench/opensm-on-ibsim.sh"
    );
}

/// `ibsm topo` writes a generator spec as an ibsim `.net` that loads back to the same size.
#[test]
fn topo_writes_a_net_file() {
    let dir = tmp("topo");
    let net = dir.join("ft.net");
    let (code, out, _) = ibsm(&["topo", "fat-tree:2,8", "--write-net", net.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("12 switches, 32 CAs, 64 links"), "{out}");
    let (code, out, _) = ibsm(&["topo", net.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("12 switches, 32 CAs, 64 links"), "{out}");
    let (code, _, err) = ibsm(&["topo", &data("empty.net")]);
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The OpenSM helper the benchmarks use runs from the repository: stock OpenSM brings up a
/// generator spec on ibsim, and its tables pass `ibsm verify` for min-hop's promise.
#[test]
fn bench_opensm_on_ibsim_runs_from_the_repository() {
    if !umad::testutil::peers_or_skip("bench_opensm_on_ibsim_runs_from_the_repository") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = tmp("bench");
    let out = Command::new(root.join("bench/opensm-on-ibsim.sh"))
        .args(["fat-tree:2,4", "minhop"])
        .arg(&dir)
        .env("IBSM", env!("CARGO_BIN_EXE_ibsm"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("minhop tables configured on all switches"),
        "{text}"
    );
    assert!(text.contains("SUBNET UP"), "{text}");
    let (code, v, _) = ibsm(&[
        "verify",
        "--topology",
        dir.join("topology.net").to_str().unwrap(),
        "--lfts",
        dir.join("fts.txt").to_str().unwrap(),
        "--engine",
        "minhop",
    ]);
    assert_eq!(code, 0, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// On a terminal (`script` gives the command one) the long work shows a spinner with what it
/// is doing, and the report still comes out whole.
#[test]
fn progress_shows_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED: progress_shows_on_a_terminal: no `script` (bsdutils)");
        return;
    }
    let cmd = format!("{} sim fat-tree:3,8", env!("CARGO_BIN_EXE_ibsm"));
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("loading fat-tree:3,8"), "{text}");
    assert!(text.contains("verdict          PASSED"), "{text}");
}

/// `ibsm run -o -I`: an inactive SM would never configure the subnet, so the one-shot run is
/// refused as bad usage (status 2) before any port is opened.
#[test]
fn once_with_inactive_is_refused() {
    let (code, _, err) = ibsm(&["run", "-o", "-I"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-o with -I"), "{err}");
}

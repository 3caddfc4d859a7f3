//! ibsm's command line follows OpenSM's option letters exactly.
//!
//! `testdata/opensm-help.txt` is stock OpenSM 3.3.23's `opensm --help` output (see
//! `testdata/README.md`). For every option listed there, either ibsm implements all of its
//! names (long and short) and they do the same thing, or ibsm implements none of them and
//! says so ("not implemented by ibsm") instead of "unknown".

mod config_common;

use ibsm::config::{parse_run_args_with, ConfigError, Environment, RunArgs};

const OPENSM_HELP: &str = include_str!("../testdata/opensm-help.txt");

struct HelpOpt {
    names: Vec<String>,
    valued: bool,
}

fn opensm_options() -> Vec<HelpOpt> {
    OPENSM_HELP
        .lines()
        .filter(|l| l.starts_with("--") && !l.starts_with("---"))
        .map(|l| {
            let head = l.split("  ").next().unwrap_or(l);
            let cut = head.find(['<', '[', '(']).unwrap_or(head.len());
            let names = head[..cut]
                .split(',')
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect();
            HelpOpt {
                names,
                valued: head.contains('<') || head.contains('['),
            }
        })
        .collect()
}

fn parse(name: &str, value: Option<&str>) -> Result<RunArgs, ConfigError> {
    let mut args = vec![name.to_string()];
    args.extend(value.map(str::to_string));
    parse_run_args_with(&args, &Environment::isolated())
}

#[test]
fn every_opensm_option_is_implemented_alike_or_reported_as_not_implemented() {
    let dir = config_common::scratch("opensm_cli");
    let empty_conf = config_common::write(&dir, "empty.conf", "");
    let candidates = [empty_conf.to_str().unwrap(), "2", "updn", "both"];
    let opts = opensm_options();
    assert!(opts.len() > 60, "{}", opts.len());
    let mut implemented = Vec::new();
    for o in &opts {
        let first = &o.names[0];
        // The value the first (long) name accepts, if any.
        let accepted = if o.valued {
            candidates
                .iter()
                .map(|v| (Some(*v), parse(first, Some(v))))
                .find(|(_, r)| r.is_ok())
        } else {
            Some((None, parse(first, None))).filter(|(_, r)| r.is_ok())
        };
        match accepted {
            Some((value, Ok(expected))) => {
                implemented.push(first.clone());
                for alias in &o.names[1..] {
                    let got = parse(alias, value).unwrap_or_else(|e| {
                        panic!("{first} is implemented but its alias {alias} fails: {e}")
                    });
                    assert_eq!(got, expected, "{alias} differs from {first}");
                }
            }
            _ => {
                for name in &o.names {
                    match parse(name, o.valued.then_some("2")) {
                        Err(ConfigError::UnknownOption { hint: Some(h), .. }) => {
                            assert!(h.contains("not implemented by ibsm"), "{name}: {h}")
                        }
                        other => panic!("{name}: expected 'not implemented', got {other:?}"),
                    }
                }
            }
        }
    }
    for required in [
        "--version",
        "--config",
        "--create-config",
        "--guid",
        "--lmc",
        "--priority",
        "--subnet_prefix",
        "--smkey",
        "--reassign_lids",
        "--routing_engine",
        "--connect_roots",
        "--ucast_cache",
        "--root_guid_file",
        "--cn_guid_file",
        "--io_guid_file",
        "--scatter-ports",
        "--max_reverse_hops",
        "--guid_routing_order_file",
        "--once",
        "--sweep",
        "--timeout",
        "--retries",
        "--maxsmps",
        "--honor_guid2lid",
        "--Pconfig",
        "--no_part_enforce",
        "--part_enforce",
        "--allow_both_pkeys",
        "--dump_files_dir",
        "--log_file",
        "--daemon",
        "--verbose",
        "--V",
        "--D",
        "--debug",
        "--help",
    ] {
        assert!(
            implemented.iter().any(|i| i == required),
            "{required} missing"
        );
    }
}

//! Command-line parsing: OpenSM's option names, precedence, errors and hints.

mod config_common;

use std::path::{Path, PathBuf};

use config_common::args;
use ibsm::config::{
    parse_options_args, parse_run_args_with, usage, Action, ConfigError, Environment, ExtraOpt,
    Options, Origin, RoutingEngineId, Transport,
};

fn run(a: &[&str]) -> Result<ibsm::config::RunArgs, ConfigError> {
    parse_run_args_with(&args(a), &Environment::isolated())
}

#[test]
fn no_arguments_gives_defaults() {
    let r = run(&[]).unwrap();
    assert_eq!(r.options, Options::default());
    assert_eq!(r.action, Action::Run);
    assert_eq!(r.config_file, None);
    assert!(r.warnings.is_empty());
}

#[test]
fn opensm_short_options() {
    let r = run(&[
        "-R",
        "updn,no_fallback",
        "-a",
        "/etc/opensm/root.conf",
        "-l",
        "2",
        "-r",
        "-o",
        "-s",
        "0",
        "-f",
        "stdout",
        "-p",
        "7",
        "-g",
        "0002c903000a0b0c",
        "-t",
        "500",
        "-n",
        "8",
        "-u",
        "/cn",
        "-G",
        "/io",
        "-X",
        "/order",
        "-H",
        "3",
        "-z",
        "-A",
        "-x",
        "-B",
        "-k",
        "0x42",
    ])
    .unwrap();
    let o = r.options;
    assert_eq!(o.routing_engine.engines, [RoutingEngineId::Updn]);
    assert!(o.routing_engine.no_fallback);
    assert_eq!(
        o.root_guid_file.as_deref(),
        Some(Path::new("/etc/opensm/root.conf"))
    );
    assert_eq!(o.lmc, 2);
    assert!(o.reassign_lids && o.once && o.connect_roots && o.use_ucast_cache);
    assert!(o.honor_guid2lid_file && o.daemon);
    assert_eq!(o.sweep_interval, 0);
    assert_eq!(o.log_file, Path::new("stdout"));
    assert_eq!(o.sm_priority, 7);
    // -g is hex without 0x, as OpenSM's strtoull(.., 16).
    assert_eq!(o.guid.0, 0x0002_c903_000a_0b0c);
    assert_eq!(o.transaction_timeout, 500);
    assert_eq!(o.max_wire_smps, 8);
    assert_eq!(o.cn_guid_file.as_deref(), Some(Path::new("/cn")));
    assert_eq!(o.io_guid_file.as_deref(), Some(Path::new("/io")));
    assert_eq!(
        o.guid_routing_order_file.as_deref(),
        Some(Path::new("/order"))
    );
    assert_eq!(o.max_reverse_hops, 3);
    assert_eq!(o.sm_key, 0x42);
}

#[test]
fn opensm_long_options_and_forms() {
    let r = run(&[
        "--routing_engine=ftree",
        "--lmc",
        "1",
        "--reassign_lids",
        "--once",
        "--sweep=20",
        "--log_file",
        "/tmp/l",
        "--priority",
        "3",
        "--guid",
        "0x10",
        "--timeout",
        "300",
        "--retries",
        "5",
        "--maxsmps",
        "0",
        "--scatter-ports",
        "11",
        "--dump_files_dir",
        "/d",
        "--subnet_prefix",
        "fec0000000000000",
        "--smkey",
        "ff",
        "-root_guid_file",
        "/r",
    ])
    .unwrap();
    let o = r.options;
    assert_eq!(o.routing_engine.engines, [RoutingEngineId::Ftree]);
    assert_eq!(o.lmc, 1);
    assert!(o.reassign_lids && o.once);
    assert_eq!(o.sweep_interval, 20);
    assert_eq!(o.log_file, Path::new("/tmp/l"));
    assert_eq!(o.sm_priority, 3);
    assert_eq!(o.guid.0, 0x10);
    assert_eq!(o.transaction_timeout, 300);
    assert_eq!(o.transaction_retries, 5);
    assert_eq!(o.max_wire_smps, 0);
    assert_eq!(o.scatter_ports, 11);
    assert_eq!(o.dump_files_dir, Path::new("/d"));
    assert_eq!(o.subnet_prefix, 0xfec0_0000_0000_0000);
    assert_eq!(o.sm_key, 0xff);
    // getopt_long_only: a long name with one dash.
    assert_eq!(o.root_guid_file.as_deref(), Some(Path::new("/r")));
}

#[test]
fn ibsm_own_options() {
    let o = run(&[
        "--transport",
        "sim",
        "--ca",
        "mlx5_0",
        "--port",
        "2",
        "--dump-dir",
        "/x",
        "--cache-dir",
        "/c",
        "--max_smps_per_node",
        "4",
        "--retry_rounds",
        "3",
        "--fold_config_into_arm",
        "--master_sm_priority",
        "15",
        "--routing",
        "dfp",
    ])
    .unwrap()
    .options;
    assert_eq!(o.transport, Transport::Sim);
    assert_eq!(o.ca_name.as_deref(), Some("mlx5_0"));
    assert_eq!(o.ca_port, 2);
    assert_eq!(o.dump_files_dir, Path::new("/x"));
    assert_eq!(o.cache_dir, Path::new("/c"));
    assert_eq!(o.master_sm_priority, 15);
    assert_eq!(o.max_smps_per_node, 4);
    assert_eq!(o.retry_rounds, 3);
    assert!(o.fold_config_into_arm);
    assert_eq!(o.routing_engine.engines, [RoutingEngineId::Dfp]);
}

#[test]
fn short_clusters_and_attached_values() {
    let o = run(&["-rol3", "-s5"]).unwrap().options;
    assert!(o.reassign_lids && o.once);
    assert_eq!(o.lmc, 3);
    assert_eq!(o.sweep_interval, 5);
}

#[test]
fn log_limit_and_erase_like_opensm() {
    let o = run(&[]).unwrap().options;
    assert_eq!((o.log_max_size, o.accum_log_file), (0, true));
    let o = run(&["-L", "5", "-e"]).unwrap().options;
    assert_eq!((o.log_max_size, o.accum_log_file), (5, false));
    let o = run(&["--log_limit", "7", "--erase_log_file"])
        .unwrap()
        .options;
    assert_eq!((o.log_max_size, o.accum_log_file), (7, false));
    assert!(run(&["-L", "big"]).is_err());
}

#[test]
fn verbosity_like_opensm() {
    // -v: log_flags = log_flags << 1 | 1, from the default 0x03.
    assert_eq!(run(&["-v"]).unwrap().options.log_flags, 0x07);
    assert_eq!(run(&["-vv"]).unwrap().options.log_flags, 0x0f);
    let o = run(&["-V"]).unwrap().options;
    assert_eq!(o.log_flags, 0xff);
    assert!(o.force_log_flush);
    assert_eq!(run(&["-D", "0x41"]).unwrap().options.log_flags, 0x41);
    assert_eq!(run(&["--D", "1", "-v"]).unwrap().options.log_flags, 0x03);
    assert!(run(&["-d", "0"]).unwrap().options.ignore_other_sm);
    assert!(run(&["-d", "3"]).unwrap().options.disable_multicast);
    assert_eq!(
        run(&["-S", "/tmp/sa.dump"]).unwrap().options.sa_db_file,
        Some(std::path::PathBuf::from("/tmp/sa.dump"))
    );
    assert_eq!(
        run(&["--sadb_file", "/tmp/sa.dump"])
            .unwrap()
            .options
            .sa_db_file,
        Some(std::path::PathBuf::from("/tmp/sa.dump"))
    );
    assert!(run(&[]).unwrap().options.exit_on_fatal);
    assert!(!run(&["-y"]).unwrap().options.exit_on_fatal);
    assert!(!run(&["--stay_on_fatal"]).unwrap().options.exit_on_fatal);
    assert!(
        run(&["--consolidate_ipv6_snm_req"])
            .unwrap()
            .options
            .consolidate_ipv6_snm_req
    );
    assert!(run(&["-d2"]).unwrap().options.force_log_flush);
    let e = run(&["-d", "1"]).unwrap_err();
    assert!(e.to_string().contains("-d"), "{e}");
}

#[test]
fn precedence_defaults_then_file_then_command_line() {
    let dir = config_common::scratch("precedence");
    let conf = config_common::write(
        &dir,
        "a.conf",
        "lmc 1\nsweep_interval 30\nsm_priority 5\nrouting_engine updn\nunknown_thing 1\n",
    );
    let conf_s = conf.to_str().unwrap();
    // The command line overrides the file, regardless of where -F is.
    let r = run(&["-l", "2", "-F", conf_s, "-R", "ftree"]).unwrap();
    assert_eq!(r.config_file.as_deref(), Some(conf.as_path()));
    let o = &r.options;
    assert_eq!(o.lmc, 2, "command line beats file");
    assert_eq!(o.routing_engine.engines, [RoutingEngineId::Ftree]);
    assert_eq!(o.sweep_interval, 30, "file beats default");
    assert_eq!(o.sm_priority, 5);
    assert_eq!(o.transaction_timeout, 200, "default when neither sets it");
    // The file's warnings are passed on, plus lmc>0 with ftree.
    assert!(r
        .warnings
        .iter()
        .any(|w| w.to_string().contains("a.conf:5")));
    assert!(r.warnings.iter().any(|w| w.to_string().contains("ftree")));
    // The last command-line occurrence wins.
    assert_eq!(run(&["-l", "1", "--lmc", "4"]).unwrap().options.lmc, 4);
}

#[test]
fn default_config_file_and_cache_dir_from_environment() {
    let dir = config_common::scratch("environment");
    let conf = config_common::write(&dir, "opensm.conf", "sm_priority 9\n");
    let env = Environment {
        default_config: Some(conf.clone()),
        cache_dir: Some(PathBuf::from("/env/cache")),
    };
    let r = parse_run_args_with(&[], &env).unwrap();
    assert_eq!(r.config_file.as_deref(), Some(conf.as_path()));
    assert_eq!(r.options.sm_priority, 9);
    assert_eq!(r.options.cache_dir, Path::new("/env/cache"));
    // The config file and the command line override the environment.
    let over = config_common::write(&dir, "b.conf", "cache_dir /file/cache\n");
    let r = parse_run_args_with(&args(&["-F", over.to_str().unwrap()]), &env).unwrap();
    assert_eq!(r.options.cache_dir, Path::new("/file/cache"));
    assert_eq!(r.options.sm_priority, 0, "-F replaces the default file");
    // A missing default file is skipped; a missing -F file is an error.
    let env = Environment {
        default_config: Some(dir.join("absent.conf")),
        cache_dir: None,
    };
    assert_eq!(parse_run_args_with(&[], &env).unwrap().config_file, None);
    let e = run(&["-F", dir.join("absent.conf").to_str().unwrap()]).unwrap_err();
    assert!(matches!(e, ConfigError::Io { .. }), "{e:?}");
}

#[test]
fn command_line_values_are_validated_like_the_file() {
    let e = run(&["-l", "8"]).unwrap_err();
    match &e {
        ConfigError::BadValue { origin, key, .. } => {
            assert_eq!(
                origin,
                &Origin::CommandLine {
                    option: "-l".into()
                }
            );
            assert_eq!(*key, "lmc");
        }
        e => panic!("{e:?}"),
    }
    assert!(e.to_string().contains("0..=7"), "{e}");
    let e = run(&["--priority=16"]).unwrap_err();
    assert!(
        e.to_string().contains("--priority") && e.to_string().contains("0..=15"),
        "{e}"
    );
    assert!(run(&["-t", "0"]).is_err());
    assert!(run(&["-g", "0xnothex"]).is_err());
    assert!(run(&["-R", "up-down"])
        .unwrap_err()
        .to_string()
        .contains("updn"));
    assert!(run(&["--transport", "tcp"]).is_err());
}

#[test]
fn unknown_options_are_errors_with_hints() {
    let hint = |a: &[&str]| match run(a).unwrap_err() {
        ConfigError::UnknownOption { option, hint } => (option, hint.unwrap_or_default()),
        e => panic!("{e:?}"),
    };
    let (opt, h) = hint(&["--routing_engin", "updn"]);
    assert_eq!(opt, "--routing_engin");
    assert_eq!(h, "did you mean --routing_engine?");
    let (opt, h) = hint(&["-M"]);
    assert_eq!(opt, "-M");
    assert!(
        h.contains("--lid_matrix_file") && h.contains("not implemented"),
        "{h}"
    );
    let (_, h) = hint(&["--sweep_interval", "5"]);
    assert!(h.contains("-s/--sweep"), "{h}");
    let (_, h) = hint(&["--sm_key", "5"]);
    assert!(h.contains("-k"), "{h}");
    let (_, h) = hint(&["--m_key", "5"]);
    assert!(h.contains("config-file key"), "{h}");
    let (opt, h) = hint(&["-r", "-j"]);
    assert_eq!(opt, "-j");
    assert!(h.contains("--help"), "{h}");
    let e = run(&["--zzz"]).unwrap_err().to_string();
    assert!(e.starts_with("unknown option --zzz"), "{e}");
}

#[test]
fn missing_unexpected_values_and_positionals() {
    assert!(matches!(
        run(&["-l"]),
        Err(ConfigError::MissingValue { ref option, .. }) if option == "-l"
    ));
    assert!(matches!(
        run(&["--routing_engine"]),
        Err(ConfigError::MissingValue { .. })
    ));
    assert!(matches!(
        run(&["--once=yes"]),
        Err(ConfigError::UnexpectedValue { .. })
    ));
    assert!(matches!(
        run(&["topology.net"]),
        Err(ConfigError::UnexpectedArgument { .. })
    ));
}

#[test]
fn actions() {
    let r = run(&["-c", "/tmp/new.conf", "-l", "1"]).unwrap();
    assert_eq!(
        r.action,
        Action::CreateConfig(PathBuf::from("/tmp/new.conf"))
    );
    assert_eq!(r.options.lmc, 1, "-c writes the options as given");
    assert_eq!(run(&["-h"]).unwrap().action, Action::Help);
    assert_eq!(run(&["--help"]).unwrap().action, Action::Help);
    assert_eq!(run(&["--version"]).unwrap().action, Action::Version);
    // --help does not read the config file, so a broken one cannot hide the help.
    assert_eq!(
        run(&["-F", "/nonexistent", "-h"]).unwrap().action,
        Action::Help
    );
}

const SIM_EXTRAS: &[ExtraOpt] = &[
    ExtraOpt {
        long: "seed",
        short: None,
        metavar: Some("N"),
        help: "simulator seed",
    },
    ExtraOpt {
        long: "faults",
        short: None,
        metavar: Some("SPEC"),
        help: "link faults",
    },
    ExtraOpt {
        long: "quiet",
        short: Some('q'),
        metavar: None,
        help: "less output",
    },
];

#[test]
fn shared_parser_for_sim_with_extras_and_positionals() {
    let p = parse_options_args(
        &args(&[
            "fat-tree:2,4",
            "--routing",
            "updn,no_fallback",
            "--lmc",
            "1",
            "--dump-dir",
            "out",
            "--seed",
            "42",
            "--faults=drop:0.01",
            "-q",
            "--",
            "-not-an-option",
        ]),
        SIM_EXTRAS,
        &Environment::isolated(),
    )
    .unwrap();
    assert_eq!(p.positionals, ["fat-tree:2,4", "-not-an-option"]);
    assert_eq!(
        p.extras,
        [
            ("seed", Some("42".to_string())),
            ("faults", Some("drop:0.01".to_string())),
            ("quiet", None)
        ]
    );
    let o = &p.run.options;
    assert_eq!(o.routing_engine.engines, [RoutingEngineId::Updn]);
    assert!(o.routing_engine.no_fallback);
    assert_eq!(o.lmc, 1);
    assert_eq!(o.dump_files_dir, Path::new("out"));
    // The same SM options, the same validation.
    let e =
        parse_options_args(&args(&["-l", "9"]), SIM_EXTRAS, &Environment::isolated()).unwrap_err();
    assert!(e.to_string().contains("0..=7"));
    // An unknown option's hint can name an extra.
    let e = parse_options_args(&args(&["--sed", "1"]), SIM_EXTRAS, &Environment::isolated())
        .unwrap_err();
    assert!(e.to_string().contains("--seed"), "{e}");
}

#[test]
fn usage_lists_every_option() {
    let u = usage(SIM_EXTRAS);
    for s in [
        "-F/--config FILE",
        "-c/--create-config FILE",
        "-R/--routing_engine/--routing ENGINES",
        "-a/--root_guid_file",
        "-l/--lmc",
        "-r/--reassign_lids",
        "-o/--once",
        "-s/--sweep",
        "-f/--log_file",
        "-p/--priority",
        "-g/--guid",
        "-t/--timeout",
        "--retries",
        "-v/--verbose",
        "-d/--debug",
        "-D/--D",
        "--dump_files_dir/--dump-dir",
        "--transport",
        "--ca",
        "--port",
        "--seed N",
        "-q/--quiet",
    ] {
        assert!(u.contains(s), "{s} missing from:\n{u}");
    }
}

//! The opensm.conf reader and writer: warnings, errors with line numbers, round trips.

mod config_common;

use std::path::Path;

use ibsm::config::{
    create_config_file, load_config_file, parse_config_str, write_default_config, ConfigError,
    ConfigWarning, Options, Origin, RoutingEngineId,
};

fn parse(text: &str) -> Result<ibsm::config::ConfigFile, ConfigError> {
    parse_config_str(text, Path::new("/etc/test.conf"), Options::default())
}

#[test]
fn comments_blank_lines_and_values() {
    let f = parse(
        "# a comment\n\
         \n\
         lmc 2   # trailing comment\n\
         \tsweep_interval\t  0x1e  \n\
         root_guid_file \"/etc/opensm/root guids.conf\"\n\
         log_file 'stdout'\n\
         reassign_lids TRUE\n\
         sweep_on_trap false\n\
         transaction_timeout 010\n",
    )
    .unwrap();
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    let o = f.options;
    assert_eq!(o.lmc, 2);
    assert_eq!(o.sweep_interval, 30);
    assert_eq!(
        o.root_guid_file.as_deref(),
        Some(Path::new("/etc/opensm/root guids.conf"))
    );
    assert_eq!(o.log_file, Path::new("stdout"));
    assert!(o.reassign_lids);
    assert!(!o.sweep_on_trap);
    // C strtoul base 0, like OpenSM: a leading 0 is octal.
    assert_eq!(o.transaction_timeout, 8);
    // Untouched keys keep their defaults.
    assert_eq!(o.sm_priority, Options::default().sm_priority);
}

#[test]
fn unknown_key_is_a_warning_with_file_and_line() {
    let f = parse("lmc 1\n\nrouting_engin updn\nfoo_bar 3\nm_key_lookup FALSE\n").unwrap();
    assert_eq!(f.options.lmc, 1);
    assert_eq!(f.options.routing_engine.engines, [RoutingEngineId::Minhop]);
    assert_eq!(f.warnings.len(), 3, "{:?}", f.warnings);
    match &f.warnings[0] {
        ConfigWarning::UnknownKey { origin, key, hint } => {
            assert_eq!(
                origin,
                &Origin::File {
                    file: "/etc/test.conf".into(),
                    line: 3
                }
            );
            assert_eq!(key, "routing_engin");
            assert_eq!(hint.as_deref(), Some("did you mean routing_engine?"));
        }
        w => panic!("{w:?}"),
    }
    let msg = f.warnings[1].to_string();
    assert!(
        msg.starts_with("/etc/test.conf:4: unknown key \"foo_bar\""),
        "{msg}"
    );
    // An OpenSM key ibsm does not implement is reported as such, not as unknown.
    assert!(f.warnings[2].is_unsupported());
    assert!(f.warnings[2].to_string().contains("/etc/test.conf:5"));
}

#[test]
fn lmc_8_is_an_error_naming_file_line_key_and_range() {
    let err = parse("# header\nsm_priority 3\nlmc 8\n").unwrap_err();
    match &err {
        ConfigError::BadValue {
            origin,
            key,
            value,
            expected,
        } => {
            assert_eq!(
                origin,
                &Origin::File {
                    file: "/etc/test.conf".into(),
                    line: 3
                }
            );
            assert_eq!(*key, "lmc");
            assert_eq!(value, "8");
            assert!(expected.contains("0..=7"), "{expected}");
        }
        e => panic!("{e:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.starts_with("/etc/test.conf:3: invalid value \"8\" for lmc"),
        "{msg}"
    );
    assert!(msg.contains("0..=7"), "{msg}");
}

#[test]
fn bad_values_of_every_kind_are_errors_with_their_line() {
    let cases: &[(&str, &str, &str)] = &[
        ("sm_priority 16", "sm_priority", "0..=15"),
        ("sm_priority -1", "sm_priority", "0..=15"),
        ("sweep_interval ten", "sweep_interval", "integer"),
        (
            "sweep_interval 4294967296",
            "sweep_interval",
            "0..=4294967295",
        ),
        ("transaction_timeout 0", "transaction_timeout", "1..="),
        (
            "m_key_protection_level 4",
            "m_key_protection_level",
            "0..=3",
        ),
        ("max_op_vls 6", "max_op_vls", "0..=5"),
        ("subnet_timeout 32", "subnet_timeout", "0..=31"),
        ("vl_stall_count 8", "vl_stall_count", "0..=7"),
        ("leaf_vl_stall_count 0x08", "leaf_vl_stall_count", "0..=7"),
        (
            "head_of_queue_lifetime 0x20",
            "head_of_queue_lifetime",
            "0..=31",
        ),
        (
            "leaf_head_of_queue_lifetime 32",
            "leaf_head_of_queue_lifetime",
            "0..=31",
        ),
        (
            "local_phy_errors_threshold 16",
            "local_phy_errors_threshold",
            "0..=15",
        ),
        (
            "overrun_errors_threshold 0x10",
            "overrun_errors_threshold",
            "0..=15",
        ),
        ("force_link_speed 8", "force_link_speed", "or 15"),
        ("force_link_width 32", "force_link_width", "or 255"),
        ("reassign_lids yes", "reassign_lids", "TRUE or FALSE"),
        ("guid 0xzz", "guid", "64-bit"),
        ("guid 0x10000000000000000", "guid", "64-bit"),
        (
            "routing_engine up-down",
            "routing_engine",
            "\"up-down\" is not an engine",
        ),
        ("routing_engine updn,Minhop", "routing_engine", "\"Minhop\""),
        ("transport rdma", "transport", "umad or sim"),
        ("ca_port 255", "ca_port", "0..=254"),
        ("lmc", "lmc", "0..=7"),
        ("log_file (null)", "log_file", "path"),
    ];
    for (line, key, expected_part) in cases {
        let text = format!("# comment\n\n{line}\n");
        match parse(&text) {
            Err(ConfigError::BadValue {
                origin: Origin::File { line: 3, .. },
                key: k,
                expected,
                ..
            }) => {
                assert_eq!(k, *key, "{line}");
                assert!(expected.contains(expected_part), "{line}: {expected}");
            }
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn duplicate_key_last_wins_with_a_warning() {
    let f = parse("lmc 1\nsweep_interval 5\nlmc 3\n").unwrap();
    assert_eq!(f.options.lmc, 3);
    assert_eq!(
        f.warnings,
        [ConfigWarning::DuplicateKey {
            origin: Origin::File {
                file: "/etc/test.conf".into(),
                line: 3
            },
            key: "lmc",
            previous_line: 1
        }]
    );
}

#[test]
fn routing_engine_chain_and_no_fallback() {
    let f = parse("routing_engine updn, ftree,no_fallback,updn\n").unwrap();
    let re = &f.options.routing_engine;
    assert_eq!(re.engines, [RoutingEngineId::Updn, RoutingEngineId::Ftree]);
    assert!(re.no_fallback);
    assert_eq!(re.to_string(), "updn,ftree,no_fallback");
    let f = parse("routing_engine torus-2QoS,no_fallback\n").unwrap();
    assert_eq!(
        f.options.routing_engine.engines,
        [RoutingEngineId::Torus2QoS]
    );
}

#[test]
fn round_trip_defaults() {
    let text = write_default_config(&Options::default());
    let f = parse(&text).unwrap();
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    assert_eq!(f.options, Options::default());
}

#[test]
fn round_trip_every_key_changed() {
    let o = config_common::perturbed();
    let text = write_default_config(&o);
    // Parse on top of the defaults: every key must come from the file.
    let f = parse(&text).unwrap();
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    assert_eq!(f.options, o);
}

#[test]
fn perturbed_changes_every_key() {
    let d = Options::default();
    let p = config_common::perturbed();
    for key in Options::keys() {
        assert_ne!(d.get_key(key), p.get_key(key), "{key}");
    }
}

#[test]
fn written_file_is_in_opensm_style() {
    let o = Options {
        lmc: 2,
        ..Options::default()
    };
    let text = write_default_config(&o);
    // Every key appears once as `key value`, preceded by comment lines, one of them its
    // default.
    let lines: Vec<&str> = text.lines().collect();
    for key in Options::keys() {
        let idx: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.split_whitespace().next() == Some(key))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(idx.len(), 1, "{key}");
        let i = idx[0];
        assert!(
            lines[i - 1].starts_with("# Default: "),
            "{key}: {}",
            lines[i - 1]
        );
        assert!(lines[i - 2].starts_with("# "), "{key}");
    }
    assert!(text.contains("# Default: 0\nlmc 2\n"), "{text}");
    assert!(text.contains("\n#\n# SWEEP OPTIONS\n#\n"));
    assert!(text.contains("# Default: minhop\nrouting_engine minhop\n"));
    assert!(text.contains("root_guid_file (null)\n"));
    assert!(text.contains("packet_life_time 0x12\n"));
    assert!(text.contains("guid 0x0000000000000000\n"));
}

#[test]
fn set_key_and_get_key() {
    let mut o = Options::default();
    o.set_key("lmc", "3").unwrap();
    assert_eq!(o.get_key("lmc").as_deref(), Some("3"));
    let e = o.set_key("lmc", "9").unwrap_err();
    assert!(e.to_string().contains("0..=7"), "{e}");
    assert!(matches!(
        o.set_key("lmcc", "1"),
        Err(ConfigError::UnknownOption { .. })
    ));
    assert_eq!(o.get_key("nope"), None);
}

#[test]
fn files_on_disk() {
    let dir = config_common::scratch("files_on_disk");
    let path = dir.join("ibsm.conf");
    let o = config_common::perturbed();
    create_config_file(&path, &o).unwrap();
    let f = load_config_file(&path, Options::default()).unwrap();
    assert_eq!(f.options, o);
    let missing = dir.join("missing.conf");
    let e = load_config_file(&missing, Options::default()).unwrap_err();
    assert!(matches!(e, ConfigError::Io { action: "read", .. }));
    assert!(e.to_string().contains("missing.conf"), "{e}");
}

#[test]
fn reconcile_applies_opensm_mkey_lease_rule_and_warns() {
    let mut o = Options {
        m_key_protection_level: 1,
        m_key_lease_period: 5,
        sweep_interval: 10,
        ..Options::default()
    };
    let w = o.reconcile();
    assert_eq!(o.m_key_lease_period, 11);
    assert_eq!(w.len(), 1, "{w:?}");
    let mut o = Options {
        m_key_protection_level: 2,
        m_key_lease_period: 60,
        sweep_interval: 0,
        ..Options::default()
    };
    let w = o.reconcile();
    assert_eq!(o.sweep_interval, 59);
    assert_eq!(w.len(), 1, "{w:?}");
    let mut o = Options {
        sm_priority: 15,
        master_sm_priority: 15,
        ..Options::default()
    };
    assert_eq!(o.reconcile().len(), 1);
    assert!(Options::default().reconcile().is_empty());
}

#[test]
fn unsupported_opensm_keys_at_default_are_harmless_and_summarized() {
    let f = parse("congestion_control FALSE\nmax_wire_smps2 0x04\nlid_matrix_dump_file (null)\ncongestion_control TRUE\nlmc 1\nbogus 1\n").unwrap();
    let w = &f.warnings;
    assert_eq!(w.len(), 5, "{w:?}");
    // `max_wire_smps2 0x04` equals OpenSM's `4`.
    assert!(w[0].is_harmless() && w[1].is_harmless() && w[2].is_harmless());
    assert!(w[3].is_unsupported() && !w[3].is_harmless());
    let msg = w[3].to_string();
    assert!(
        msg.contains("/etc/test.conf:4") && msg.contains("congestion_control TRUE"),
        "{msg}"
    );
    assert!(msg.contains("OpenSM's default: FALSE"), "{msg}");
    let lines = ibsm::config::summarize_warnings(w);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].contains("congestion_control TRUE"));
    assert!(lines[1].contains("bogus"));
    assert!(
        lines[2].starts_with("/etc/test.conf: 3 OpenSM option"),
        "{}",
        lines[2]
    );
}

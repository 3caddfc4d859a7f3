//! ibsm's defaults equal OpenSM's for every option both have.
//!
//! `testdata/opensm-default.conf` is stock OpenSM 3.3.23's `opensm -c` output (see
//! `testdata/README.md`). Parsing it on top of options where every key is *non*-default must
//! bring each shared key back to ibsm's default; keys OpenSM lacks must stay untouched.

mod config_common;

use std::path::Path;

use ibsm::config::{parse_config_str, ConfigWarning, Options};

const OPENSM_DEFAULT: &str = include_str!("../testdata/opensm-default.conf");

fn opensm_keys() -> Vec<&'static str> {
    OPENSM_DEFAULT
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

#[test]
fn defaults_match_opensm_for_every_shared_key() {
    let base = config_common::perturbed();
    let defaults = Options::default();
    let parsed = parse_config_str(
        OPENSM_DEFAULT,
        Path::new("opensm-default.conf"),
        base.clone(),
    )
    .unwrap()
    .options;
    let in_file = opensm_keys();
    let mut shared = Vec::new();
    for key in Options::keys() {
        let got = parsed.get_key(key).unwrap();
        if in_file.contains(&key) {
            shared.push(key);
            if key == "max_wire_smps" {
                // The one deliberate difference: OpenSM's window of 4 SMPs would make a large
                // bring-up slow; ibsm's default is 256 (and OpenSM's file says 4).
                assert_eq!(got, "4");
                assert_eq!(defaults.get_key(key).unwrap(), "256");
                continue;
            }
            if key == "use_optimized_slvl" {
                // The one-SMP-per-switch SL-to-VL form where the switch offers it (OpenSM:
                // FALSE, one SMP per port pair).
                assert_eq!(got, "FALSE");
                assert_eq!(defaults.get_key(key).unwrap(), "TRUE");
                continue;
            }
            assert_eq!(
                got,
                defaults.get_key(key).unwrap(),
                "{key}: OpenSM's default differs from ours"
            );
        } else {
            assert_eq!(
                got,
                base.get_key(key).unwrap(),
                "{key} is not in OpenSM's file"
            );
        }
    }
    // The options the brief and the requirement digests name must all be shared.
    for key in [
        "guid",
        "sm_priority",
        "lmc",
        "reassign_lids",
        "routing_engine",
        "root_guid_file",
        "cn_guid_file",
        "io_guid_file",
        "guid_routing_order_file",
        "scatter_ports",
        "sweep_interval",
        "transaction_timeout",
        "transaction_retries",
        "max_wire_smps",
        "subnet_timeout",
        "max_op_vls",
        "packet_life_time",
        "force_link_speed",
        "force_link_width",
        "m_key",
        "m_key_protection_level",
        "m_key_lease_period",
        "sm_key",
        "log_file",
        "log_flags",
        "dump_files_dir",
        "daemon",
        "sminfo_polling_timeout",
        "polling_retry_number",
        "honor_guid2lid_file",
        "use_ucast_cache",
        "sweep_on_trap",
    ] {
        assert!(shared.contains(&key), "{key} is not compared");
    }
    // Only ibsm's own keys are missing from OpenSM's file.
    let ours: Vec<_> = Options::keys().filter(|k| !in_file.contains(k)).collect();
    assert_eq!(
        ours,
        [
            "master_sm_priority",
            "max_smps_per_node",
            "retry_rounds",
            "fold_config_into_arm",
            "lid_routed",
            "read_qos_tables",
            "cache_dir",
            "transport",
            "ca_name",
            "ca_port"
        ]
    );
}

#[test]
fn opensm_file_gives_no_unknown_key_warnings() {
    let f = parse_config_str(
        OPENSM_DEFAULT,
        Path::new("opensm-default.conf"),
        Options::default(),
    )
    .unwrap();
    assert_eq!(
        f.options,
        Options {
            max_wire_smps: 4,
            use_optimized_slvl: false,
            ..Options::default()
        }
    );
    let in_file = opensm_keys();
    let ours: Vec<_> = Options::keys().collect();
    let mut unsupported = 0;
    for w in &f.warnings {
        match w {
            ConfigWarning::Unsupported { key, .. } => {
                assert!(!ours.contains(&key.as_str()), "{key} is implemented");
                unsupported += 1;
            }
            other => panic!("unexpected warning: {other}"),
        }
    }
    // `cc_ca_cong_setting_*` appear once each; every other key once: each key not ours warns.
    let not_ours = in_file.iter().filter(|k| !ours.contains(k)).count();
    assert_eq!(unsupported, not_ours);
    // The whole file was read (OpenSM 3.3.23 writes 160 keys), and some keys are still
    // not ibsm's (the count falls as keys are implemented).
    assert!(in_file.len() >= 160, "{}", in_file.len());
    assert!(unsupported > 0, "{unsupported}");
}

#[test]
fn opensm_routing_engine_null_means_minhop() {
    let f = parse_config_str(
        "routing_engine (null)\n",
        Path::new("x"),
        config_common::perturbed(),
    )
    .unwrap();
    assert_eq!(f.options.routing_engine.to_string(), "minhop");
    assert!(!f.options.routing_engine.no_fallback);
}

#[test]
fn a_stock_opensm_conf_summarizes_to_one_line() {
    let f = parse_config_str(OPENSM_DEFAULT, Path::new("opensm.conf"), Options::default()).unwrap();
    assert!(f.warnings.iter().all(ConfigWarning::is_harmless));
    let lines = ibsm::config::summarize_warnings(&f.warnings);
    assert_eq!(lines.len(), 1, "{lines:?}");
}

//! `Options::to_sm_config`: every option the SM core implements reaches it, in its units,
//! and the result passes the core's own validation.

mod config_common;

use std::time::Duration;

use ibsm::config::{parse_run_args_with, Environment, Options};
use sm::SmConfig;

#[test]
fn perturbed_options_map_field_by_field_and_validate() {
    let o = config_common::perturbed();
    let c = o.to_sm_config();
    c.validate().unwrap();
    assert_eq!(c.port.0, o.ca_port);
    assert_eq!(c.lmc, o.lmc);
    assert_eq!(c.routing_engine, ["updn", "torus-2QoS"]);
    assert_eq!(c.no_fallback, o.routing_engine.no_fallback);
    assert_eq!(c.reassign_lids, o.reassign_lids);
    assert_eq!(
        c.transaction_timeout,
        Duration::from_millis(o.transaction_timeout.into())
    );
    assert_eq!(c.transaction_retries, o.transaction_retries);
    assert_eq!(c.max_wire_smps, 0x7fff_ffff, "max_wire_smps 0 is unlimited");
    assert_eq!(c.max_smps_per_node as u64, u64::from(o.max_smps_per_node));
    assert_eq!(c.retry_rounds, o.retry_rounds);
    assert_eq!(c.fold_config_into_arm, o.fold_config_into_arm);
    assert_eq!(c.lid_routed, o.lid_routed);
    assert_eq!(c.subnet_timeout, o.subnet_timeout);
    assert_eq!(c.max_op_vls, o.max_op_vls);
    assert_eq!(c.packet_life_time, o.packet_life_time);
    assert_eq!(c.vl_stall_count, o.vl_stall_count);
    assert_eq!(c.leaf_vl_stall_count, o.leaf_vl_stall_count);
    assert_eq!(c.head_of_queue_lifetime, o.head_of_queue_lifetime);
    assert_eq!(c.leaf_head_of_queue_lifetime, o.leaf_head_of_queue_lifetime);
    assert_eq!(c.local_phy_errors_threshold, o.local_phy_errors_threshold);
    assert_eq!(c.overrun_errors_threshold, o.overrun_errors_threshold);
    assert_eq!(c.no_clients_rereg, o.no_clients_rereg);
    assert_eq!(c.disable_multicast, o.disable_multicast);
    assert_eq!(c.sm_inactive, o.sm_inactive);
    assert_eq!(c.lmc_esp0, o.lmc_esp0);
    assert_eq!(c.babbling_port_policy, o.babbling_port_policy);
    assert!(c.no_clients_rereg, "perturbed");
    assert_eq!(c.sm_priority, o.sm_priority);
    assert_eq!(c.master_sm_priority, o.master_sm_priority);
    assert_eq!(
        c.sminfo_polling_timeout,
        Duration::from_millis(o.sminfo_polling_timeout.into())
    );
    assert_eq!(c.polling_retry_number, o.polling_retry_number);
    assert_eq!(c.ignore_other_sm, o.ignore_other_sm);
    assert_eq!(c.sweep_on_trap, o.sweep_on_trap);
    assert_eq!(c.force_heavy_sweep, o.force_heavy_sweep);
    assert_eq!(c.use_ucast_cache, o.use_ucast_cache);
    assert_eq!(c.honor_guid2lid_file, o.honor_guid2lid_file);
    assert_eq!(c.sm_key, o.sm_key);
    assert_eq!(c.m_key, o.m_key.0);
    assert_eq!(
        c.sweep_interval,
        Duration::from_secs(o.sweep_interval.into())
    );
    assert_eq!(c.seed, u64::from(o.scatter_ports));
    assert_eq!(SmConfig::from(&o), c);
}

#[test]
fn defaults_agree_with_the_core_except_the_wire_window_and_port() {
    // Both sides use the same defaults (OpenSM's, except the 256-SMP wire window).
    // A new divergence fails here.
    let c = Options::default().to_sm_config();
    c.validate().unwrap();
    let core = SmConfig::default();
    assert_eq!(c.max_wire_smps, 256);
    assert_eq!(c, core);
}

#[test]
fn command_line_reaches_the_core() {
    let args: Vec<String> = [
        "-l",
        "2",
        "-R",
        "updn,no_fallback",
        "-s",
        "0",
        "-t",
        "50",
        "--port",
        "2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let c = parse_run_args_with(&args, &Environment::isolated())
        .unwrap()
        .options
        .to_sm_config();
    assert_eq!(c.lmc, 2);
    assert_eq!(c.routing_engine, ["updn"]);
    assert!(c.no_fallback);
    assert_eq!(c.sweep_interval, Duration::ZERO);
    assert_eq!(c.transaction_timeout, Duration::from_millis(50));
    assert_eq!(c.port.0, 2);
    c.validate().unwrap();
}

#[test]
fn zero_max_op_vls_becomes_one() {
    let o = Options {
        max_op_vls: 0,
        ..Options::default()
    };
    assert_eq!(o.to_sm_config().max_op_vls, 1);
    o.to_sm_config().validate().unwrap();
}

#[test]
fn engine_options_read_the_named_files() {
    let dir = config_common::scratch("engine_options");
    let roots = config_common::write(&dir, "roots.conf", "0x0002c90300000001\n");
    let o = Options {
        root_guid_file: Some(roots.clone()),
        lfts_file: Some(dir.join("missing.lfts")),
        cn_guid_file: Some(roots.clone()),
        io_guid_file: Some(dir.join("missing.io")),
        scatter_ports: 13,
        port_profile_switch_nodes: true,
        ..Options::default()
    };
    let e = o.engine_options();
    let root = e.root_guid_file.unwrap();
    assert_eq!(root.path, roots.display().to_string());
    assert_eq!(root.contents.as_deref(), Ok("0x0002c90300000001\n"));
    let lfts = e.lfts_file.unwrap();
    assert!(lfts.path.ends_with("missing.lfts"));
    assert!(lfts.contents.is_err(), "{:?}", lfts.contents);
    assert_eq!(
        e.cn_guid_file.unwrap().contents.as_deref(),
        Ok("0x0002c90300000001\n")
    );
    assert!(e.io_guid_file.unwrap().contents.is_err());
    assert_eq!(e.scatter_ports, 13);
    assert!(e.port_profile_switch_nodes);
    // No file named: nothing read.
    let e = Options::default().engine_options();
    assert!(e.root_guid_file.is_none() && e.lfts_file.is_none());
    assert!(e.cn_guid_file.is_none() && e.io_guid_file.is_none());
}

//! Helpers shared by the config tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use ibmad::{Guid, MKey};
use ibsm::config::{Options, QosTextSet, RoutingEngineId, RoutingEngines, Transport};

/// Options in which every config key differs from its default.
pub fn perturbed() -> Options {
    Options {
        guid: Guid(0x0002_c903_00a1_b2c3),
        m_key: MKey(0x1122_3344_5566_7788),
        m_key_lease_period: 60,
        m_key_protection_level: 1,
        sm_key: 0xdead_beef,
        sa_key: 0x5a5a,
        subnet_prefix: 0xfec0_0000_0000_0001,
        lmc: 2,
        sm_sl: 5,
        packet_life_time: 0x13,
        vl_stall_count: 5,
        no_clients_rereg: true,
        disable_multicast: true,
        consolidate_ipv6_snm_req: true,
        exit_on_fatal: false,
        drop_event_subscriptions: true,
        keep_pkey_indexes: false,
        sa_db_file: Some(PathBuf::from("/var/cache/opensm/opensm-sa.dump")),
        sa_db_dump: true,
        node_name_map_name: Some(PathBuf::from("/etc/opensm/names")),
        avoid_throttled_links: true,
        suppress_sl2vl_mad_status_errors: true,
        ipoib_mcgroup_creation_validation: false,
        mcgroup_join_validation: false,
        sm_inactive: true,
        lmc_esp0: true,
        babbling_port_policy: true,
        port_shifting: true,
        leaf_vl_stall_count: 6,
        head_of_queue_lifetime: 0x11,
        leaf_head_of_queue_lifetime: 0x0f,
        local_phy_errors_threshold: 9,
        overrun_errors_threshold: 10,
        max_op_vls: 3,
        force_link_speed: 7,
        force_link_speed_ext: 30,
        force_link_width: 3,
        subnet_timeout: 17,
        partition_config_file: PathBuf::from("/tmp/partitions.conf"),
        no_partition_enforcement: true,
        part_enforce: sm::partition::PartEnforce::In,
        allow_both_pkeys: true,
        qos: true,
        qos_policy_file: PathBuf::from("/tmp/qos-policy.conf"),
        qos_sets: std::array::from_fn(|i| QosTextSet {
            max_vls: Some(8 + i as u8),
            high_limit: Some(10 * i as u8),
            vlarb_high: Some(format!("0:{},1:2", 1 + i)),
            vlarb_low: Some(format!("2:{},3:4", 1 + i)),
            sl2vl: Some(format!("{i},1,2,3,4,5,6,7,0,1,2,3,4,5,6,7")),
        }),
        use_optimized_slvl: false,
        read_qos_tables: false,
        sweep_interval: 30,
        reassign_lids: true,
        force_heavy_sweep: true,
        sweep_on_trap: false,
        routing_engine: RoutingEngines {
            engines: vec![RoutingEngineId::Updn, RoutingEngineId::Torus2QoS],
            no_fallback: true,
        },
        use_ucast_cache: true,
        connect_roots: true,
        root_guid_file: Some(PathBuf::from("/etc/opensm/root_guid.conf")),
        cn_guid_file: Some(PathBuf::from("/tmp/cn guids")),
        io_guid_file: Some(PathBuf::from("/tmp/io")),
        ids_guid_file: Some(PathBuf::from("/tmp/ids")),
        max_reverse_hops: 2,
        guid_routing_order_file: Some(PathBuf::from("/tmp/order")),
        port_prof_ignore_file: Some(PathBuf::from("/tmp/ignore")),
        hop_weights_file: Some(PathBuf::from("/tmp/weights")),
        port_search_ordering_file: Some(PathBuf::from("/tmp/order-ports")),
        lfts_file: Some(PathBuf::from("/tmp/lfts")),
        port_profile_switch_nodes: true,
        scatter_ports: 7919,
        guid_routing_order_no_scatter: true,
        do_mesh_analysis: true,
        lash_start_vl: 3,
        nue_max_num_vls: 4,
        nue_include_switches: true,
        torus_config: PathBuf::from("/tmp/torus conf"),
        sm_priority: 14,
        master_sm_priority: 15,
        ignore_other_sm: true,
        sminfo_polling_timeout: 5000,
        polling_retry_number: 2,
        honor_guid2lid_file: true,
        max_wire_smps: 0,
        max_smps_per_node: 1,
        retry_rounds: 1,
        fold_config_into_arm: true,
        lid_routed: false,
        transaction_timeout: 1000,
        transaction_retries: 7,
        perfmgr: true,
        perfmgr_sweep_time_s: 5,
        perfmgr_max_outstanding_queries: 64,
        perfmgr_ignore_cas: true,
        perfmgr_rm_nodes: false,
        perfmgr_log_errors: false,
        perfmgr_query_cpi: false,
        perfmgr_xmit_wait_log: true,
        perfmgr_xmit_wait_threshold: 100,
        daemon: true,
        log_flags: 0xff,
        force_log_flush: true,
        log_file: PathBuf::from("stdout"),
        log_max_size: 16,
        accum_log_file: false,
        dump_files_dir: PathBuf::from("/tmp/dumps"),
        cache_dir: PathBuf::from("/tmp/cache"),
        transport: Transport::Sim,
        ca_name: Some("mlx5_1".to_string()),
        ca_port: 2,
        once: false,
    }
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("ibsm-config-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `&["-l", "2"]` → `vec!["-l".to_string(), "2".to_string()]`.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

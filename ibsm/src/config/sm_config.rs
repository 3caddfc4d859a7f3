//! Conversion of [`Options`] into the SM core's [`sm::SmConfig`].

use core::time::Duration;

use std::path::{Path, PathBuf};

use ibmad::PortNum;
use sm::partition::{PartEnforce, PartitionConfig};
use sm::routing::{EngineOptions, OptionFile};
use sm::SmConfig;

use super::options::{Options, QosTextSet, DEFAULT_QOS_POLICY_FILE};

/// Where OpenSM (Debian's build) looks for a node name map when `node_name_map_name` is not
/// set.
pub const DEFAULT_NODE_NAME_MAP: &str = "/etc/opensm/ib-node-name-map";
use sm::qos::policy::QosPolicy;
use sm::qos::{parse_sl2vl, parse_vlarb, QosConfig, QosOptions};

/// OpenSM's stand-in for "unlimited" SMPs on the wire (`max_wire_smps 0`).
const UNLIMITED_WIRE_SMPS: usize = 0x7fff_ffff;

impl Options {
    /// The SM core's configuration: every option the core implements, converted to its types
    /// and units. Fields the core has but ibsm's options do not (e.g. `vl_high_limit`) keep
    /// [`SmConfig::default`]'s values.
    ///
    /// * `port`: `ca_port`, or port 1 when `ca_port` is 0 ("first active"); a front end that
    ///   resolves the port itself (or binds by `guid`) should overwrite it.
    /// * `max_wire_smps 0` (unlimited, as in OpenSM) becomes 0x7fff_ffff, OpenSM's own value.
    /// * `max_op_vls 0` becomes 1, as OpenSM treats it.
    /// * `scatter_ports` becomes the routing seed.
    ///
    /// Options the core does not take (log, files, handover timers, M_Key lease…) are for the
    /// front end.
    #[must_use]
    pub fn to_sm_config(&self) -> SmConfig {
        SmConfig {
            port: PortNum(if self.ca_port == 0 { 1 } else { self.ca_port }),
            lmc: self.lmc,
            lmc_esp0: self.lmc_esp0,
            sm_sl: self.sm_sl,
            routing_engine: self
                .routing_engine
                .engines
                .iter()
                .map(|e| e.name().to_string())
                .collect(),
            no_fallback: self.routing_engine.no_fallback,
            reassign_lids: self.reassign_lids,
            transaction_timeout: Duration::from_millis(self.transaction_timeout.into()),
            transaction_retries: self.transaction_retries,
            max_wire_smps: match self.max_wire_smps {
                0 => UNLIMITED_WIRE_SMPS,
                n => usize::try_from(n).unwrap_or(UNLIMITED_WIRE_SMPS),
            },
            retry_rounds: self.retry_rounds,
            fold_config_into_arm: self.fold_config_into_arm,
            lid_routed: self.lid_routed,
            max_smps_per_node: usize::try_from(self.max_smps_per_node).unwrap_or(usize::MAX),
            subnet_timeout: self.subnet_timeout,
            max_op_vls: self.max_op_vls.max(1),
            force_link_width: self.force_link_width,
            force_link_speed: self.force_link_speed,
            force_link_speed_ext: self.force_link_speed_ext,
            packet_life_time: self.packet_life_time,
            vl_stall_count: self.vl_stall_count,
            leaf_vl_stall_count: self.leaf_vl_stall_count,
            head_of_queue_lifetime: self.head_of_queue_lifetime,
            leaf_head_of_queue_lifetime: self.leaf_head_of_queue_lifetime,
            local_phy_errors_threshold: self.local_phy_errors_threshold,
            overrun_errors_threshold: self.overrun_errors_threshold,
            sm_priority: self.sm_priority,
            master_sm_priority: self.master_sm_priority,
            sminfo_polling_timeout: Duration::from_millis(self.sminfo_polling_timeout.into()),
            polling_retry_number: self.polling_retry_number,
            ignore_other_sm: self.ignore_other_sm,
            sweep_on_trap: self.sweep_on_trap,
            force_heavy_sweep: self.force_heavy_sweep,
            no_clients_rereg: self.no_clients_rereg,
            suppress_sl2vl_mad_status_errors: self.suppress_sl2vl_mad_status_errors,
            disable_multicast: self.disable_multicast,
            sm_inactive: self.sm_inactive,
            babbling_port_policy: self.babbling_port_policy,
            use_ucast_cache: self.use_ucast_cache,
            honor_guid2lid_file: self.honor_guid2lid_file,
            sm_key: self.sm_key,
            m_key: self.m_key.0,
            m_key_protection_level: self.m_key_protection_level,
            m_key_lease_period: self.m_key_lease_period,
            subnet_prefix: self.subnet_prefix,
            sweep_interval: Duration::from_secs(self.sweep_interval.into()),
            seed: self.scatter_ports.into(),
            qos: self.qos_config(),
            partitions: self
                .partition_config()
                .unwrap_or_else(|_| self.partition_defaults()),
            ..SmConfig::default()
        }
    }
}

impl Options {
    /// The performance manager's configuration: the `perfmgr_*` options, and the SM's
    /// transaction timeout and retries for its queries. (`perfmgr` itself, on or off, is the
    /// daemon's.)
    #[must_use]
    pub fn perfmgr_config(&self) -> sm::perfmgr::PerfMgrConfig {
        sm::perfmgr::PerfMgrConfig {
            sweep_time: Duration::from_secs(self.perfmgr_sweep_time_s.into()),
            max_outstanding: usize::try_from(self.perfmgr_max_outstanding_queries)
                .unwrap_or(usize::MAX),
            ignore_cas: self.perfmgr_ignore_cas,
            rm_nodes: self.perfmgr_rm_nodes,
            log_errors: self.perfmgr_log_errors,
            query_cpi: self.perfmgr_query_cpi,
            xmit_wait_log: self.perfmgr_xmit_wait_log,
            xmit_wait_threshold: self.perfmgr_xmit_wait_threshold.into(),
            timeout: Duration::from_millis(self.transaction_timeout.into()),
            retries: self.transaction_retries,
        }
    }
}

/// Reads a file named by an option. Never fails: a read error is carried as text, and the
/// engine then behaves as OpenSM does when `fopen` fails (e.g. updn falls back to automatic
/// root detection).
fn option_file(path: Option<&PathBuf>) -> Option<OptionFile> {
    path.map(|p| OptionFile {
        path: p.display().to_string(),
        contents: std::fs::read_to_string(p).map_err(|e| e.to_string()),
    })
}

impl Options {
    /// The routing engines' options, with the files they name **read now** (engines do no
    /// I/O): `root_guid_file`, `lfts_file`, `cn_guid_file`, `io_guid_file`, `ids_guid_file`, `torus_config`,
    /// `guid_routing_order_file`, `port_prof_ignore_file`, `hop_weights_file`, `port_search_ordering_file`, plus `scatter_ports`, `port_shifting`, `guid_routing_order_no_scatter`,
    /// `port_profile_switch_nodes` and `max_op_vls` (0 becomes 1). Fields the engines have but ibsm's options do not keep
    /// [`EngineOptions::default`]'s values.
    #[must_use]
    // The struct update keeps future EngineOptions fields at their defaults.
    #[allow(clippy::needless_update)]
    pub fn engine_options(&self) -> EngineOptions {
        EngineOptions {
            port_profile_switch_nodes: self.port_profile_switch_nodes,
            scatter_ports: self.scatter_ports.into(),
            port_shifting: self.port_shifting,
            avoid_throttled_links: self.avoid_throttled_links,
            root_guid_file: option_file(self.root_guid_file.as_ref()),
            lfts_file: option_file(self.lfts_file.as_ref()),
            cn_guid_file: option_file(self.cn_guid_file.as_ref()),
            io_guid_file: option_file(self.io_guid_file.as_ref()),
            ids_guid_file: option_file(self.ids_guid_file.as_ref()),
            max_op_vls: self.max_op_vls.max(1),
            lash_start_vl: self.lash_start_vl,
            do_mesh_analysis: self.do_mesh_analysis,
            nue_max_num_vls: self.nue_max_num_vls,
            nue_include_switches: self.nue_include_switches,
            torus_config: option_file(Some(&self.torus_config)),
            guid_routing_order_file: option_file(self.guid_routing_order_file.as_ref()),
            port_prof_ignore_file: option_file(self.port_prof_ignore_file.as_ref()),
            hop_weights_file: option_file(self.hop_weights_file.as_ref()),
            port_search_ordering_file: option_file(self.port_search_ordering_file.as_ref()),
            guid_routing_order_no_scatter: self.guid_routing_order_no_scatter,
            connect_roots: self.connect_roots,
            qos: self.qos,
            ..EngineOptions::default()
        }
    }
}

impl Options {
    /// The files named by options (`root_guid_file`, `cn_guid_file`, `io_guid_file`, `ids_guid_file`,
    /// `lfts_file`, `guid_routing_order_file`, `port_prof_ignore_file`, `hop_weights_file`,
    /// `port_search_ordering_file`) that cannot be read, each as
    /// `KEY (-X) FILE: why`. A one-shot run refuses to start with any; a daemon logs the
    /// engine's error line and goes on as OpenSM does.
    #[must_use]
    pub fn unreadable_option_files(&self) -> Vec<String> {
        let files = [
            ("root_guid_file (-a)", &self.root_guid_file),
            ("cn_guid_file (-u)", &self.cn_guid_file),
            ("io_guid_file (-G)", &self.io_guid_file),
            ("ids_guid_file (-m)", &self.ids_guid_file),
            ("lfts_file (-U)", &self.lfts_file),
            (
                "guid_routing_order_file (-X)",
                &self.guid_routing_order_file,
            ),
            ("port_prof_ignore_file (-i)", &self.port_prof_ignore_file),
            ("hop_weights_file (-w)", &self.hop_weights_file),
            (
                "port_search_ordering_file (-O)",
                &self.port_search_ordering_file,
            ),
        ];
        let mut v: Vec<String> = files
            .iter()
            .filter_map(|(key, p)| {
                let p = p.as_ref()?;
                std::fs::read_to_string(p)
                    .err()
                    .map(|e| format!("{key} {}: {e}", p.display()))
            })
            .collect();
        v.extend(self.qos_policy().err());
        v.extend(self.partition_config().err());
        v
    }
}

impl Options {
    /// The QoS configuration: `qos`, the `qos_*` sets (checked when they were set, so they
    /// parse), `use_optimized_slvl` and, with `qos` on, the policy file if it reads and
    /// parses ([`Options::qos_policy_error`] says why not).
    #[must_use]
    pub fn qos_config(&self) -> QosConfig {
        let set = |t: &QosTextSet| QosOptions {
            max_vls: t.max_vls,
            high_limit: t.high_limit,
            vlarb_high: t.vlarb_high.as_deref().and_then(|v| parse_vlarb(v).ok()),
            vlarb_low: t.vlarb_low.as_deref().and_then(|v| parse_vlarb(v).ok()),
            sl2vl: t.sl2vl.as_deref().and_then(|v| parse_sl2vl(v).ok()),
        };
        let [default, ca, rtr, sw0, swe] = &self.qos_sets;
        QosConfig {
            enabled: self.qos,
            default: set(default),
            ca: set(ca),
            rtr: set(rtr),
            sw0: set(sw0),
            swe: set(swe),
            use_optimized_slvl: self.use_optimized_slvl,
            read_tables: self.read_qos_tables,
            policy: self.qos_policy().ok().flatten(),
        }
    }

    /// The node name map (`node_name_map_name`, else OpenSM's
    /// [`DEFAULT_NODE_NAME_MAP`] if it exists), and the warning OpenSM prints when the file
    /// cannot be read or parsed (its names are then not used: NodeDescriptions are printed).
    #[must_use]
    pub fn node_names(&self) -> (sm::names::NodeNames, Option<String>) {
        let default = Path::new(DEFAULT_NODE_NAME_MAP);
        let path = match &self.node_name_map_name {
            Some(p) => p.as_path(),
            None if default.exists() => default,
            None => return (sm::names::NodeNames::default(), None),
        };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                return (
                    sm::names::NodeNames::default(),
                    Some(format!(
                        "WARNING failed to open node name map \"{}\" ({e})",
                        path.display()
                    )),
                )
            }
        };
        match sm::names::NodeNames::parse(&text) {
            Ok(m) => (m, None),
            Err(e) => (
                sm::names::NodeNames::default(),
                Some(format!(
                    "WARNING failed to parse node name map \"{}\": {e}",
                    path.display()
                )),
            ),
        }
    }

    /// The QoS policy file, read and parsed, when `qos` is on: `Ok(None)` when `qos` is off or
    /// the file is absent at OpenSM's default path (OpenSM then runs without a policy).
    ///
    /// # Errors
    /// `qos_policy_file (-Y) FILE: why` — unreadable, or the parser's error with its line.
    pub fn qos_policy(&self) -> Result<Option<QosPolicy>, String> {
        if !self.qos {
            return Ok(None);
        }
        let p = &self.qos_policy_file;
        let text = match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && p.as_os_str() == DEFAULT_QOS_POLICY_FILE =>
            {
                return Ok(None);
            }
            Err(e) => return Err(format!("qos_policy_file (-Y) {}: {e}", p.display())),
        };
        QosPolicy::parse(&text, &p.display().to_string())
            .map(Some)
            .map_err(|e| format!("qos_policy_file (-Y) {e}"))
    }
}

impl Options {
    /// The built-in partition configuration (no partitions.conf) with the enforcement
    /// options.
    fn partition_defaults(&self) -> PartitionConfig {
        PartitionConfig {
            enforce: if self.no_partition_enforcement {
                PartEnforce::Off
            } else {
                self.part_enforce
            },
            allow_both_pkeys: self.allow_both_pkeys,
            keep_indexes: self.keep_pkey_indexes,
            ..PartitionConfig::default()
        }
    }

    /// The partition configuration: `partition_config_file` read and parsed, with
    /// `part_enforce` (`off` with `no_partition_enforcement`) and `allow_both_pkeys`. A file
    /// that does not exist means no partitions.conf, as OpenSM (`-P /dev/null`-style runs rely
    /// on it); a daemon whose file does not parse logs the error and runs with the defaults,
    /// as OpenSM.
    ///
    /// # Errors
    /// `partition_config_file (-P) FILE: why` — unreadable, or the parser's `file:line: what`.
    pub fn partition_config(&self) -> Result<PartitionConfig, String> {
        let base = self.partition_defaults();
        let p = &self.partition_config_file;
        let text = match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(base),
            Err(e) => return Err(format!("partition_config_file (-P) {}: {e}", p.display())),
        };
        let parsed = PartitionConfig::parse_with_qos(&text, &p.display().to_string(), self.qos)
            .map_err(|e| format!("partition_config_file (-P) {e}"))?;
        Ok(PartitionConfig {
            enforce: base.enforce,
            allow_both_pkeys: base.allow_both_pkeys,
            keep_indexes: base.keep_indexes,
            ..parsed
        })
    }
}

impl From<&Options> for SmConfig {
    fn from(o: &Options) -> Self {
        o.to_sm_config()
    }
}

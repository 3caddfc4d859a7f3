//! [`Options`]: every setting ibsm implements, with OpenSM's names and defaults.

use std::fmt;
use std::path::PathBuf;

use ibmad::{Guid, MKey};

/// The default config file, as in OpenSM: read when no `-F` is given, if it exists.
pub const DEFAULT_CONFIG_FILE: &str = "/etc/opensm/opensm.conf";

/// ibsm's own default config file (installed by the Debian package): read in preference to
/// [`DEFAULT_CONFIG_FILE`] when it exists.
pub const IBSM_CONFIG_FILE: &str = "/etc/ibsm/ibsm.conf";

/// OpenSM's default cache directory (guid2lid and friends), overridden by `OSM_CACHE_DIR`.
pub const DEFAULT_CACHE_DIR: &str = "/var/cache/opensm";

/// The environment variable OpenSM reads for the cache directory.
pub const CACHE_DIR_ENV: &str = "OSM_CACHE_DIR";

/// A routing engine name as OpenSM spells it in `routing_engine` / `-R`.
///
/// The SM core may implement only some of them; the configuration layer accepts every name
/// OpenSM (and the MLNX fork, for `dfp`/`dfp2`) accepts, so a misspelling such as `up-down` is
/// an error here, while an engine the core lacks fails over to the next one at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoutingEngineId {
    /// `minhop`: Min Hop, OpenSM's default and fallback engine.
    Minhop,
    /// `updn`: Up/Down.
    Updn,
    /// `dnup`: Down/Up.
    Dnup,
    /// `file`: LFTs loaded from a file.
    File,
    /// `ftree`: fat tree.
    Ftree,
    /// `lash`: LAyered SHortest path.
    Lash,
    /// `dor`: dimension-order routing.
    Dor,
    /// `torus-2QoS`.
    Torus2QoS,
    /// `nue`.
    Nue,
    /// `dfsssp`: deadlock-free SSSP.
    Dfsssp,
    /// `sssp`: single-source shortest path.
    Sssp,
    /// `dfp`: Dragonfly+ (MLNX fork).
    Dfp,
    /// `dfp2`: Dragonfly+ v2 (MLNX fork).
    Dfp2,
}

/// The `qos_*` key prefixes, in the order of [`Options::qos_sets`]: the default set, CA ports,
/// router ports, switch port 0, switch external ports.
pub const QOS_PREFIXES: [&str; 5] = ["qos_", "qos_ca_", "qos_rtr_", "qos_sw0_", "qos_swe_"];

/// OpenSM's default `qos_policy_file`.
pub const DEFAULT_QOS_POLICY_FILE: &str = "/etc/opensm/qos-policy.conf";

/// One `qos_<prefix>*` set as written in the configuration (`None`: not given, OpenSM's
/// `max_vls 0`, `high_limit -1`, `(null)`); the values were checked when set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QosTextSet {
    /// `max_vls`, 1..=15.
    pub max_vls: Option<u8>,
    /// `high_limit`, 0..=255.
    pub high_limit: Option<u8>,
    /// `vlarb_high`.
    pub vlarb_high: Option<String>,
    /// `vlarb_low`.
    pub vlarb_low: Option<String>,
    /// `sl2vl`.
    pub sl2vl: Option<String>,
}

impl RoutingEngineId {
    /// Every engine, in OpenSM's documentation order.
    pub const ALL: [RoutingEngineId; 13] = [
        Self::Minhop,
        Self::Updn,
        Self::Dnup,
        Self::File,
        Self::Ftree,
        Self::Lash,
        Self::Dor,
        Self::Torus2QoS,
        Self::Nue,
        Self::Dfsssp,
        Self::Sssp,
        Self::Dfp,
        Self::Dfp2,
    ];

    /// The exact spelling used in `routing_engine` and `-R`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Minhop => "minhop",
            Self::Updn => "updn",
            Self::Dnup => "dnup",
            Self::File => "file",
            Self::Ftree => "ftree",
            Self::Lash => "lash",
            Self::Dor => "dor",
            Self::Torus2QoS => "torus-2QoS",
            Self::Nue => "nue",
            Self::Dfsssp => "dfsssp",
            Self::Sssp => "sssp",
            Self::Dfp => "dfp",
            Self::Dfp2 => "dfp2",
        }
    }

    /// Looks a name up; exact, case-sensitive match as in OpenSM (`strcmp`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }
}

impl fmt::Display for RoutingEngineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `routing_engine` option: an ordered engine chain plus OpenSM's `no_fallback` token.
///
/// OpenSM tries the engines in order; if all fail it runs Min Hop unless `no_fallback` is in
/// the list. `routing_engine (null)` (OpenSM's default) means Min Hop alone, which is how this
/// type's default is written: `engines == [Minhop]`, `no_fallback == false`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutingEngines {
    /// The chain, tried in order; never empty, no duplicates.
    pub engines: Vec<RoutingEngineId>,
    /// `no_fallback` was listed: do not fall back to Min Hop when every engine fails.
    pub no_fallback: bool,
}

impl Default for RoutingEngines {
    fn default() -> Self {
        Self {
            engines: vec![RoutingEngineId::Minhop],
            no_fallback: false,
        }
    }
}

impl RoutingEngines {
    /// Parses OpenSM's syntax: names separated by commas, spaces or tabs; `no_fallback`
    /// anywhere in the list; `(null)` or an empty list means the default (Min Hop).
    /// A repeated engine is kept once, at its first position.
    ///
    /// # Errors
    /// The first unknown name, with the list of accepted names.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.is_empty() || s == "(null)" {
            return Ok(Self::default());
        }
        let mut engines = Vec::new();
        let mut no_fallback = false;
        for tok in s.split([',', ' ', '\t']).filter(|t| !t.is_empty()) {
            if tok == "no_fallback" {
                no_fallback = true;
            } else if let Some(e) = RoutingEngineId::from_name(tok) {
                if !engines.contains(&e) {
                    engines.push(e);
                }
            } else {
                return Err(format!(
                    "a comma-separated list of routing engines ({}) and optionally no_fallback; \
                     {tok:?} is not an engine name",
                    Self::accepted_names()
                ));
            }
        }
        if engines.is_empty() {
            // `no_fallback` alone: OpenSM sets up no engine and would then have nothing to
            // run; Min Hop is its implicit default engine.
            engines.push(RoutingEngineId::Minhop);
        }
        Ok(Self {
            engines,
            no_fallback,
        })
    }

    fn accepted_names() -> String {
        RoutingEngineId::ALL
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for RoutingEngines {
    /// OpenSM syntax, e.g. `updn,minhop,no_fallback`; parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for e in &self.engines {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            f.write_str(e.name())?;
        }
        if self.no_fallback {
            if !first {
                f.write_str(",")?;
            }
            f.write_str("no_fallback")?;
        }
        Ok(())
    }
}

/// How ibsm reaches the fabric (ibsm's own option; OpenSM always uses libibumad).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Transport {
    /// The kernel's `umad` interface (`/dev/infiniband/umadN`).
    #[default]
    Umad,
    /// The in-process deterministic fabric simulator.
    Sim,
}

impl Transport {
    /// The config/command-line spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Umad => "umad",
            Transport::Sim => "sim",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every option ibsm implements. Field names are OpenSM's `opensm.conf` keys; the defaults
/// ([`Options::default`]) are OpenSM 3.3.23's, except for the few options OpenSM lacks
/// (marked *ibsm*).
///
/// Precedence when building one: defaults < `OSM_CACHE_DIR` < config file < command line.
/// Units follow OpenSM: `sweep_interval` in seconds, timeouts in milliseconds, IBA "time codes"
/// (`subnet_timeout`, `packet_life_time`) as the raw 5-bit exponent (4.096 µs × 2^code).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    // ---- device attributes ----
    /// `guid` (`-g`): port GUID to bind to (`ibsm run`: the local port with that GUID, before
    /// `ca_name`/`ca_port`; `ibsm sim`: the port the SM attaches to); 0 (default) = the
    /// default port (see `ca_name`/`ca_port`).
    pub guid: Guid,
    /// `m_key`: M_Key written to every port by Set(PortInfo). Default 0.
    pub m_key: MKey,
    /// `m_key_lease_period`: M_Key lease period in seconds (0 = infinite). Default 0.
    pub m_key_lease_period: u16,
    /// `m_key_protection_level`: M_Key protect bits, 0..=3. Default 0.
    pub m_key_protection_level: u8,
    /// `sm_key`: the SM_Key used for SM authentication in SMInfo. Default 1.
    pub sm_key: u64,
    /// `sa_key`: the SM_Key that makes an SA requester trusted (C15-0.1.5: a request with
    /// another non-zero SM_Key is discarded). Default 1.
    pub sa_key: u64,
    /// `subnet_prefix`: GID prefix written to PortInfo. Default 0xfe80000000000000.
    pub subnet_prefix: u64,
    /// `lmc`: LID mask control, 0..=7; every port gets 2^lmc LIDs. Default 0.
    pub lmc: u8,
    /// `lmc_esp0`: switches with an enhanced port 0 get `2^lmc` LIDs too. Default FALSE.
    pub lmc_esp0: bool,
    /// `sm_sl`: the SL ports reach the SM and SA on (PortInfo.MasterSMSL), where the routing
    /// engine gives no path SL. Default 0.
    pub sm_sl: u8,
    /// `packet_life_time`: switch packet lifetime code, 0..=31 (≥ 0x14 = infinite). Default 0x12.
    pub packet_life_time: u8,
    /// `vl_stall_count`: PortInfo:VLStallCount of switch ports to switches, 0..=7. Default 7.
    pub vl_stall_count: u8,
    /// `leaf_vl_stall_count`: the same for switch ports to CAs and routers. Default 7.
    pub leaf_vl_stall_count: u8,
    /// `head_of_queue_lifetime`: PortInfo:HOQLife of switch ports to switches, 0..=31 (≥ 0x14
    /// = infinite). Default 0x12.
    pub head_of_queue_lifetime: u8,
    /// `leaf_head_of_queue_lifetime`: the same for switch ports to CAs and routers, and router
    /// ports. Default 0x10.
    pub leaf_head_of_queue_lifetime: u8,
    /// `local_phy_errors_threshold`: PortInfo:LocalPhyErrors (trap 129), 0..=15. Default 8.
    pub local_phy_errors_threshold: u8,
    /// `overrun_errors_threshold`: PortInfo:OverrunErrors (trap 130), 0..=15. Default 8.
    pub overrun_errors_threshold: u8,
    /// `max_op_vls`: cap on PortInfo:OperationalVLs, 0..=5 (1 = VL0 … 5 = VL0–14; 0 acts as 1).
    /// Default 5.
    pub max_op_vls: u8,
    /// `force_link_speed`: PortInfo:LinkSpeedEnabled of linked ports; 0 = leave alone,
    /// 1..=7 = speed set, 15 (default) = LinkSpeedSupported.
    pub force_link_speed: u8,
    /// `force_link_speed_ext`: PortInfo:LinkSpeedExtEnabled of linked ports whose both ends
    /// support extended speeds; 0 = leave alone, 1..=15 = speed set, 30 = disable extended
    /// speeds, 31 (default) = LinkSpeedExtSupported.
    pub force_link_speed_ext: u8,
    /// `force_link_width`: PortInfo:LinkWidthEnabled of linked ports; 0 = leave alone,
    /// 1..=31 = width set (2X only where the port supports it), 255 (default) =
    /// LinkWidthSupported.
    pub force_link_width: u8,
    /// `subnet_timeout`: PortInfo:SubnetTimeOut code, 0..=31. Default 18.
    pub subnet_timeout: u8,
    /// `partition_config_file` (`-P`): partitions.conf. Default
    /// `/etc/opensm/partitions.conf`; a file that does not exist means no partition
    /// configuration (`Default=0x7fff, ipoib : ALL=full ;`), as OpenSM.
    pub partition_config_file: PathBuf,
    /// `no_partition_enforcement` (`-N`): no P_Key enforcement on switch ports. Default FALSE.
    pub no_partition_enforcement: bool,
    /// `part_enforce` (`-Z`): `both` (default), `in`, `out` or `off`.
    pub part_enforce: sm::partition::PartEnforce,
    /// `allow_both_pkeys` (`-W`): a port may be a full and a limited member of one partition.
    /// Default FALSE.
    pub allow_both_pkeys: bool,
    /// `keep_pkey_indexes`: a P_Key keeps the index it has in a port's table
    /// (`sm::partition::PartitionConfig::keep_indexes`). Default TRUE.
    pub keep_pkey_indexes: bool,

    // ---- QoS ----
    /// `qos` (`-Q`): program SL-to-VL, VLArbitration and VLHighLimit from the `qos_*` sets.
    /// Default FALSE.
    pub qos: bool,
    /// `qos_policy_file` (`-Y`): the QoS policy file, read when `qos` is TRUE. Default
    /// `/etc/opensm/qos-policy.conf` (a missing file at the default path means no policy).
    pub qos_policy_file: PathBuf,
    /// The `qos_[ca_|rtr_|sw0_|swe_]*` sets, as given (text, validated when set), indexed
    /// by [`QOS_PREFIXES`].
    pub qos_sets: [QosTextSet; 5],
    /// `use_optimized_slvl`: one all-ports SL-to-VL Set per switch where the switch allows.
    /// Default TRUE (OpenSM: FALSE; see `sm::qos::QosConfig::use_optimized_slvl`).
    pub use_optimized_slvl: bool,
    /// `read_qos_tables` (*ibsm*): read the SL-to-VL and VLArbitration tables the SM does not
    /// program after SUBNET UP, for the SA. Default TRUE (see `sm::qos::QosConfig::read_tables`).
    pub read_qos_tables: bool,

    // ---- sweep ----
    /// `sweep_interval`: seconds between light sweeps; 0 disables sweeping. Default 10.
    pub sweep_interval: u32,
    /// `reassign_lids` (`-r`): reassign every LID on the first master sweep. Default FALSE.
    pub reassign_lids: bool,
    /// `force_heavy_sweep`: make every sweep a heavy sweep. Default FALSE.
    pub force_heavy_sweep: bool,
    /// `no_clients_rereg`: never set PortInfo:ClientReregister (end ports then keep their SA
    /// registrations across an SM change only if they do so on their own). Default FALSE.
    pub no_clients_rereg: bool,
    /// `suppress_sl2vl_mad_status_errors`: an SLtoVLMappingTable answer with an error status
    /// counts as the table the port holds (`sm::SmConfig`). Default FALSE.
    pub suppress_sl2vl_mad_status_errors: bool,
    /// `disable_multicast` (`-d 3`): no multicast routing (no MFTs programmed; the SA still
    /// answers MCMemberRecords and no longer announces IsUDMulticastSupported). Default FALSE.
    pub disable_multicast: bool,
    /// `consolidate_ipv6_snm_req`: IPv6 solicited-node multicast groups of one scope and
    /// P_Key share one MLID (`sm::sa::SaConfig::consolidate_ipv6_snm`). Default FALSE.
    pub consolidate_ipv6_snm_req: bool,
    /// `exit_on_fatal` (`-y`/`--stay_on_fatal` clears it): a guid2lid file that cannot be
    /// read back (a line that is not three numbers) stops the SM at start, as OpenSM's FATAL
    /// "Error restoring Guid-to-Lid persistent database"; cleared, the SM says so (OpenSM's
    /// ERR 0317) and assigns LIDs afresh. Default TRUE.
    pub exit_on_fatal: bool,
    /// `sweep_on_trap`: traps 128/144 force a heavy sweep. Default TRUE.
    pub sweep_on_trap: bool,

    // ---- routing ----
    /// `routing_engine` (`-R`): engine chain and `no_fallback`. Default Min Hop.
    pub routing_engine: RoutingEngines,
    /// `use_ucast_cache` (`-A`): skip routing recomputation when the change does not need it.
    /// Default FALSE.
    pub use_ucast_cache: bool,
    /// `connect_roots` (`-z`): up/down and fat-tree connect root switches to each other.
    /// Default FALSE.
    pub connect_roots: bool,
    /// `root_guid_file` (`-a`): root switch GUIDs for updn/ftree, one per line. Default none.
    pub root_guid_file: Option<PathBuf>,
    /// `cn_guid_file` (`-u`): compute-node port GUIDs for ftree. Default none.
    pub cn_guid_file: Option<PathBuf>,
    /// `io_guid_file` (`-G`): I/O-node port GUIDs for ftree. Default none.
    pub io_guid_file: Option<PathBuf>,
    /// `ids_guid_file` (`-m`): lines `SWITCH-GUID ID`, the ids updn orders switches of one
    /// rank by instead of their GUIDs. Default none.
    pub ids_guid_file: Option<PathBuf>,
    /// `max_reverse_hops` (`-H`): reverse hops allowed for I/O nodes (ftree). Default 0.
    pub max_reverse_hops: u16,
    /// `guid_routing_order_file` (`-X`): port GUIDs that minhop, updn, dnup, dor and dfp route
    /// first, in the file's order. Default none.
    pub guid_routing_order_file: Option<PathBuf>,
    /// `sa_db_file` (`-S`): an `opensm-sa.dump` whose multicast groups, services and event
    /// subscriptions the SA starts with (`sm::sa::db`). Default none.
    pub sa_db_file: Option<PathBuf>,
    /// `sa_db_dump`: the SA database is written to `opensm-sa.dump` in `dump_files_dir` at
    /// SUBNET UP, after every light sweep that changed it, and at exit as master. Default
    /// FALSE.
    pub sa_db_dump: bool,
    /// `node_name_map_name`: a node name map (`ib-node-name-map`) whose names the dump files
    /// print instead of NodeDescriptions (`sm::names`). Default none: OpenSM's
    /// `/etc/opensm/ib-node-name-map` if it exists.
    pub node_name_map_name: Option<PathBuf>,
    /// `lfts_file` (`-U`): the LFTs the `file` routing engine loads. Default none.
    pub lfts_file: Option<PathBuf>,
    /// `port_profile_switch_nodes`: count routes to switches in the per-port load balancing.
    /// Default FALSE.
    pub port_profile_switch_nodes: bool,
    /// `port_prof_ignore_file` (`-i`, `--ignore_guids`): lines `SWITCH-GUID PORT` whose routes
    /// the balancing of minhop, updn and dnup does not count. Default none.
    pub port_prof_ignore_file: Option<PathBuf>,
    /// `hop_weights_file` (`-w`): lines `SWITCH-GUID PORT WEIGHT` (1..=255): a hop out of
    /// that port counts WEIGHT hops when minhop chooses the shortest ports. Default none.
    pub hop_weights_file: Option<PathBuf>,
    /// `port_search_ordering_file` (`-O`; old name `dimn_ports_file`): lines `SWITCH-GUID PORT
    /// PORT …`, the order in which minhop, updn, dnup and dor scan that switch's ports (dor's
    /// dimensions). Default none.
    pub port_search_ordering_file: Option<PathBuf>,
    /// `do_mesh_analysis` (`--do_mesh_analysis`): lash treats parallel links as one and
    /// shares their routes round-robin. Default false.
    pub do_mesh_analysis: bool,
    /// `lash_start_vl` (`--lash_start_vl`): the first SL/VL lash uses, 0..=15. Default 0.
    pub lash_start_vl: u8,
    /// `nue_max_num_vls` (`--nue_max_num_vls`): VLs nue may use, 0 = all. Default 1.
    pub nue_max_num_vls: u8,
    /// `nue_include_switches`: nue routes switch LIDs deadlock-free too. Default false.
    pub nue_include_switches: bool,
    /// `torus_config` (`--torus_config`): torus-2QoS.conf. Default
    /// `/etc/opensm/torus-2QoS.conf`.
    pub torus_config: PathBuf,
    /// `port_shifting` (`--port-shifting`): minhop, updn and dnup start their scan of equally
    /// short ports at a place that moves with the routes on them. Default FALSE.
    pub port_shifting: bool,
    /// `avoid_throttled_links`: sssp, dfsssp and nue leave out switch links that run below
    /// what both ends enable (`sm::routing::graph::link_throttled`). Default FALSE.
    pub avoid_throttled_links: bool,
    /// `scatter_ports` (`--scatter-ports`): random seed for choosing among equal ports;
    /// 0 (default) = deterministic round robin.
    pub scatter_ports: u32,
    /// `guid_routing_order_no_scatter`: the ports of `guid_routing_order_file` are routed
    /// without `scatter_ports`. Default FALSE.
    pub guid_routing_order_no_scatter: bool,

    // ---- handover / multiple SMs ----
    /// `sm_priority` (`-p`): SMInfo priority, 0..=15. Default 0.
    pub sm_priority: u8,
    /// `master_sm_priority` (*ibsm*, from the MLNX fork): priority advertised while MASTER,
    /// 0..=15; 0 (default) = same as `sm_priority`. The SM advertises
    /// max(sm_priority, master_sm_priority) while master.
    pub master_sm_priority: u8,
    /// `ignore_other_sm` (`-d 0`): ignore other SMs on the subnet. Default FALSE.
    pub ignore_other_sm: bool,
    /// `sminfo_polling_timeout`: ms between a standby's polls of the master. Default 10000.
    pub sminfo_polling_timeout: u32,
    /// `polling_retry_number`: failed polls before the master is declared dead. Default 4.
    pub polling_retry_number: u32,
    /// `honor_guid2lid_file` (`-x`): restore guid2lid when coming out of standby.
    /// Default FALSE.
    pub honor_guid2lid_file: bool,

    // ---- timing ----
    /// `max_wire_smps` (`-n`): SMPs outstanding at once; 0 = unlimited. Default 256 — a
    /// deliberate difference from OpenSM's 4: the window is what makes a large cold bring-up
    /// fast, and the SM keeps a per-node limit (`max_smps_per_node`) for slow agents. It is
    /// the ceiling of an adaptive window that starts at 64 and follows the fabric's delivery
    /// rate (a shim or a slow QP0 does best well below 256).
    pub max_wire_smps: u32,
    /// `max_smps_per_node` (*ibsm*): SMPs outstanding at once to one node's agent, ≥ 1;
    /// protects slow SMAs within the `max_wire_smps` window. Default 16.
    pub max_smps_per_node: u32,
    /// `retry_rounds` (*ibsm*): rounds of `1 + transaction_retries` attempts before a request
    /// is given up, ≥ 1 (1 = OpenSM's behaviour); each further round is queued behind the
    /// pending work, so a loss burst has passed. Default 2, as the SM core.
    pub retry_rounds: u32,
    /// `fold_config_into_arm` (*ibsm*): carry each port's PortInfo configuration in its
    /// Init→Armed Set instead of a separate Set before it (fewer SMPs; see
    /// `sm::SmConfig::fold_config_into_arm`). Default FALSE.
    pub fold_config_into_arm: bool,
    /// `lid_routed` (*ibsm*): once a heavy sweep's LIDs and LFTs are acknowledged, send the
    /// Armed/Active passes and light sweeps LID-routed instead of directed-route (see
    /// `sm::SmConfig::lid_routed`). Default TRUE.
    pub lid_routed: bool,
    /// `transaction_timeout` (`-t`): ms before an SMP is retried; ≥ 1. Default 200.
    pub transaction_timeout: u32,
    /// `transaction_retries` (`--retries`): retries before an SMP fails. Default 3.
    pub transaction_retries: u32,

    // ---- performance manager (OpenSM's `perfmgr*`, osm_subnet.c defaults) ----
    /// `perfmgr`: run the performance manager. Default FALSE.
    pub perfmgr: bool,
    /// `perfmgr_sweep_time_s`: seconds between counter sweeps; 0 = only on request. Default 180.
    pub perfmgr_sweep_time_s: u32,
    /// `perfmgr_max_outstanding_queries`: PerfMgt queries in flight at once. Default 500.
    pub perfmgr_max_outstanding_queries: u32,
    /// `perfmgr_ignore_cas`: read switch ports only. Default FALSE.
    pub perfmgr_ignore_cas: bool,
    /// `perfmgr_rm_nodes`: forget nodes that left the subnet. Default TRUE.
    pub perfmgr_rm_nodes: bool,
    /// `perfmgr_log_errors`: log error-counter increases. Default TRUE.
    pub perfmgr_log_errors: bool,
    /// `perfmgr_query_cpi`: ask each PMA's ClassPortInfo. Default TRUE.
    pub perfmgr_query_cpi: bool,
    /// `perfmgr_xmit_wait_log`: log PortXmitWait increases. Default FALSE.
    pub perfmgr_xmit_wait_log: bool,
    /// `perfmgr_xmit_wait_threshold`: the PortXmitWait increase worth a log line. Default 65535.
    pub perfmgr_xmit_wait_threshold: u32,

    // ---- misc / logging ----
    /// `daemon` (`-B`): run in the background (`ibsm run`: detached from the terminal by
    /// daemon(3) once the options are read, standard streams on `/dev/null`, the working
    /// directory kept, as OpenSM's). Default FALSE.
    pub daemon: bool,
    /// `sm_inactive` (`-I`, `--inactive`): start NOTACTIVE: no sweep, SMInfo answered as
    /// NOTACTIVE, until another SM sets this one to STANDBY. Default FALSE.
    pub sm_inactive: bool,
    /// `babbling_port_policy`: a port that sends 250 identical link-integrity traps is
    /// disabled (without it, from the tenth it is marked unhealthy and routed around for
    /// 60 s). Default FALSE.
    pub babbling_port_policy: bool,
    /// `drop_event_subscriptions`: an end port that leaves loses its InformInfo
    /// subscriptions, and all of them and every ServiceRecord go when the SM comes out of
    /// standby (`sm::sa::SaConfig::drop_event_subscriptions`). Default FALSE.
    pub drop_event_subscriptions: bool,
    /// `ipoib_mcgroup_creation_validation` and `mcgroup_join_validation`
    /// (`sm::sa::SaConfig`). Default TRUE, both.
    pub ipoib_mcgroup_creation_validation: bool,
    /// See [`Options::ipoib_mcgroup_creation_validation`].
    pub mcgroup_join_validation: bool,
    /// `log_flags` (`-D`, `-v`, `-V`): OpenSM log-level bit mask (0x01 ERROR, 0x02 INFO,
    /// 0x04 VERBOSE, 0x08 DEBUG, 0x10 FUNCS, 0x20 FRAMES, 0x40 ROUTING). Default 0x03.
    pub log_flags: u8,
    /// `force_log_flush`: flush the log after every message. Default FALSE.
    pub force_log_flush: bool,
    /// `log_file` (`-f`): the log file; `stdout` logs to standard output.
    /// Default /var/log/opensm.log.
    pub log_file: PathBuf,
    /// `log_max_size` (`-L`): the log file's size limit in MB; past it the file is truncated and
    /// logging starts again at its beginning (OpenSM's behaviour). 0: no limit. Default 0.
    pub log_max_size: u32,
    /// `accum_log_file` (`-e` sets FALSE): keep what the log file holds when the daemon starts;
    /// FALSE empties it first. Default TRUE.
    pub accum_log_file: bool,
    /// `dump_files_dir` (`--dump_files_dir`, `--dump-dir`): where dump files are written.
    /// Default /var/log/.
    pub dump_files_dir: PathBuf,

    // ---- ibsm's own ----
    /// `cache_dir` (*ibsm*; OpenSM only reads `OSM_CACHE_DIR`): guid2lid and other persistent
    /// state. Default `$OSM_CACHE_DIR`, else /var/cache/opensm.
    pub cache_dir: PathBuf,
    /// `transport` (*ibsm*, `--transport`): `umad` (default) or `sim`.
    pub transport: Transport,
    /// `ca_name` (*ibsm*, `--ca`): the HCA to bind (e.g. `mlx5_0`); none (default) = the first.
    pub ca_name: Option<String>,
    /// `ca_port` (*ibsm*, `--port`): the HCA port to bind, 0..=254; 0 (default) = the first
    /// active port. Ignored when `guid` is nonzero.
    pub ca_port: u8,

    /// `-o`/`--once` (command line only, no config key, as in OpenSM): configure the subnet
    /// once, then exit.
    pub once: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            guid: Guid(0),
            m_key: MKey(0),
            m_key_lease_period: 0,
            m_key_protection_level: 0,
            sm_key: 1,
            sa_key: 1,
            subnet_prefix: 0xfe80_0000_0000_0000,
            lmc: 0,
            lmc_esp0: false,
            sm_sl: 0,
            packet_life_time: 0x12,
            no_clients_rereg: false,
            suppress_sl2vl_mad_status_errors: false,
            disable_multicast: false,
            consolidate_ipv6_snm_req: false,
            exit_on_fatal: true,
            sm_inactive: false,
            babbling_port_policy: false,
            drop_event_subscriptions: false,
            ipoib_mcgroup_creation_validation: true,
            mcgroup_join_validation: true,
            vl_stall_count: 7,
            leaf_vl_stall_count: 7,
            head_of_queue_lifetime: 0x12,
            leaf_head_of_queue_lifetime: 0x10,
            local_phy_errors_threshold: 8,
            overrun_errors_threshold: 8,
            max_op_vls: 5,
            qos: false,
            qos_policy_file: PathBuf::from(DEFAULT_QOS_POLICY_FILE),
            qos_sets: Default::default(),
            use_optimized_slvl: true,
            read_qos_tables: true,
            force_link_speed: 15,
            force_link_speed_ext: 31,
            force_link_width: 255,
            subnet_timeout: 18,
            partition_config_file: PathBuf::from(sm::partition::DEFAULT_PARTITION_FILE),
            no_partition_enforcement: false,
            part_enforce: sm::partition::PartEnforce::Both,
            allow_both_pkeys: false,
            keep_pkey_indexes: true,
            sweep_interval: 10,
            reassign_lids: false,
            force_heavy_sweep: false,
            sweep_on_trap: true,
            routing_engine: RoutingEngines::default(),
            use_ucast_cache: false,
            connect_roots: false,
            root_guid_file: None,
            cn_guid_file: None,
            io_guid_file: None,
            ids_guid_file: None,
            max_reverse_hops: 0,
            sa_db_file: None,
            node_name_map_name: None,
            sa_db_dump: false,
            guid_routing_order_file: None,
            port_prof_ignore_file: None,
            hop_weights_file: None,
            port_search_ordering_file: None,
            lfts_file: None,
            port_profile_switch_nodes: false,
            do_mesh_analysis: false,
            lash_start_vl: 0,
            nue_max_num_vls: 1,
            nue_include_switches: false,
            torus_config: PathBuf::from("/etc/opensm/torus-2QoS.conf"),
            port_shifting: false,
            avoid_throttled_links: false,
            scatter_ports: 0,
            guid_routing_order_no_scatter: false,
            sm_priority: 0,
            master_sm_priority: 0,
            ignore_other_sm: false,
            sminfo_polling_timeout: 10_000,
            polling_retry_number: 4,
            honor_guid2lid_file: false,
            max_wire_smps: 256,
            max_smps_per_node: 16,
            retry_rounds: 2,
            fold_config_into_arm: false,
            lid_routed: true,
            transaction_timeout: 200,
            transaction_retries: 3,
            perfmgr: false,
            perfmgr_sweep_time_s: 180,
            perfmgr_max_outstanding_queries: 500,
            perfmgr_ignore_cas: false,
            perfmgr_rm_nodes: true,
            perfmgr_log_errors: true,
            perfmgr_query_cpi: true,
            perfmgr_xmit_wait_log: false,
            perfmgr_xmit_wait_threshold: 0xFFFF,
            daemon: false,
            log_flags: 0x03,
            force_log_flush: false,
            log_file: PathBuf::from("/var/log/opensm.log"),
            log_max_size: 0,
            accum_log_file: true,
            dump_files_dir: PathBuf::from("/var/log/"),
            cache_dir: PathBuf::from(DEFAULT_CACHE_DIR),
            transport: Transport::Umad,
            ca_name: None,
            ca_port: 0,
            once: false,
        }
    }
}

impl Options {
    /// Cross-checks options that are each valid but combine badly, fixes what OpenSM fixes
    /// (the same way), and returns a warning for each finding. Called by the command-line
    /// parsers after all sources are applied; call it yourself after [`Options::set_key`].
    ///
    /// * M_Key protection with a lease (OpenSM `osm_subn_verify_config`): sweeping must run
    ///   more often than the lease expires; with `sweep_interval 0` sweeping is re-enabled at
    ///   lease − 1 s, and a sweep interval ≥ the lease raises the lease to sweep + 1 s.
    /// * `master_sm_priority` set but not above `sm_priority`: it has no effect.
    /// * `lmc > 0` with `ftree`: it refuses LMC > 0 (as OpenSM's), so the next engine in the
    ///   chain (or Min Hop) routes.
    pub fn reconcile(&mut self) -> Vec<super::ConfigWarning> {
        use super::ConfigWarning::Inconsistent;
        let mut w = Vec::new();
        if self.m_key_protection_level > 0 && self.m_key_lease_period > 0 {
            let lease = u32::from(self.m_key_lease_period);
            if self.sweep_interval == 0 {
                self.sweep_interval = lease.saturating_sub(1).max(1);
                w.push(Inconsistent {
                    message: format!(
                        "sweeping is disabled but protected M_Keys have a {lease} s lease; \
                         re-enabling sweeping every {} s",
                        self.sweep_interval
                    ),
                });
            }
            if self.sweep_interval >= u32::from(self.m_key_lease_period) {
                let new_lease =
                    u16::try_from(self.sweep_interval.saturating_add(1)).unwrap_or(u16::MAX);
                w.push(Inconsistent {
                    message: format!(
                        "sweep_interval {} s is not shorter than m_key_lease_period {lease} s; \
                         setting the lease period to {new_lease} s",
                        self.sweep_interval
                    ),
                });
                self.m_key_lease_period = new_lease;
                if self.sweep_interval >= u32::from(new_lease) {
                    self.sweep_interval = u32::from(new_lease) - 1;
                }
            }
        }
        if self.master_sm_priority != 0 && self.sm_priority >= self.master_sm_priority {
            w.push(Inconsistent {
                message: format!(
                    "sm_priority {} >= master_sm_priority {}: master_sm_priority has no effect",
                    self.sm_priority, self.master_sm_priority
                ),
            });
        }
        if self.lmc > 0
            && self
                .routing_engine
                .engines
                .contains(&RoutingEngineId::Ftree)
        {
            w.push(Inconsistent {
                message: format!(
                    "routing engine {} does not support lmc {} > 0; it will fail and the next \
                     engine in the chain routes",
                    RoutingEngineId::Ftree,
                    self.lmc
                ),
            });
        }
        w
    }
}

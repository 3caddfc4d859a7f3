//! [`SmConfig`]: the SM's options, named and defaulted as OpenSM's `opensm.conf` where OpenSM
//! has the option, validated once by [`SmConfig::validate`] (called by [`crate::Sm::new`]).

use core::time::Duration;

use ibmad::PortNum;

/// Subnet-manager options. `Default` gives OpenSM's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmConfig {
    /// The local port the SM sends on: a CA port (1-based), or 0 for an SM running on a switch
    /// (OpenSM `port_num`; OpenSM picks the first active port).
    pub port: PortNum,
    /// LID mask count, 0..=7 (`lmc`, default 0): 2^lmc LIDs per CA port.
    pub lmc: u8,
    /// Routing engines tried in order (`routing_engine`, default `["minhop"]`).
    pub routing_engine: Vec<String>,
    /// Do not fall back to minhop when every listed engine fails (`no_fallback`).
    pub no_fallback: bool,
    /// Ignore persisted and already-programmed LIDs and assign afresh (`reassign_lids`).
    pub reassign_lids: bool,
    /// Time to wait for one SMP response (`transaction_timeout`, default 200 ms).
    pub transaction_timeout: Duration,
    /// Resends after the first attempt before a node is declared unreachable
    /// (`transaction_retries`, default 3).
    pub transaction_retries: u32,
    /// Rounds of `1 + transaction_retries` attempts before a request is given up (default 2;
    /// 1 is OpenSM's behaviour). Each further round is queued behind the work pending at the
    /// time, so a transient loss burst has passed: with 1% loss per link traversal a k36 fat
    /// tree otherwise loses a dozen nodes per sweep to four unlucky attempts.
    pub retry_rounds: u32,
    /// The most SMPs in flight at once over the whole fabric (`max_wire_smps`; OpenSM's
    /// default is 4, ours 256 because the window is what makes a large cold bring-up fast).
    /// The ceiling of the adaptive window (see `sm/src/wire_window.rs`): it starts
    /// at 64 and follows the delivery rate the fabric answers with, never below 16 (or this
    /// value, if lower).
    pub max_wire_smps: usize,
    /// SMPs in flight at once to one node's SMA (protects slow agents; default 16).
    pub max_smps_per_node: usize,
    /// PortInfo.SubnetTimeOut written to end ports, 0..=31 (`subnet_timeout`, default 18).
    pub subnet_timeout: u8,
    /// Upper bound for PortInfo.OperationalVLs, 1..=5 (`max_op_vls`, default 5).
    pub max_op_vls: u8,
    /// PortInfo.LinkWidthEnabled written to linked ports (`force_link_width`, default 255 =
    /// "set to LinkWidthSupported"; 0 leaves the field alone; 1..=31 a width mask, where a
    /// mask with 2X (16 and above) is written only to ports whose CapabilityMask2 says
    /// IsLinkWidth2XSupported). The value is written as given (255 is resolved by the port's
    /// SMA), and 255 only where LinkWidthEnabled differs from LinkWidthSupported, as OpenSM
    /// `osm_link_mgr.c` does.
    pub force_link_width: u8,
    /// PortInfo.LinkSpeedEnabled written to linked ports (`force_link_speed`, default 15 =
    /// "set to LinkSpeedSupported"; 0 leaves the field alone; 1..=7 a speed mask). 15 only
    /// where LinkSpeedEnabled differs from LinkSpeedSupported.
    pub force_link_speed: u8,
    /// PortInfo.LinkSpeedExtEnabled written to linked ports whose both ends announce
    /// IsExtendedSpeedsSupported (`force_link_speed_ext`, default 31 = "set to
    /// LinkSpeedExtSupported"; 0 leaves the field alone; 1..=15 a mask; 30 disables extended
    /// speeds). 31 only where LinkSpeedExtEnabled differs from LinkSpeedExtSupported.
    pub force_link_speed_ext: u8,
    /// PortInfo.VLHighLimit written to linked ports (OpenSM `qos_high_limit`, default 0).
    pub vl_high_limit: u8,
    /// SwitchInfo.LifeTimeValue, 0..=31 (`packet_life_time`, default 0x12).
    pub packet_life_time: u8,
    /// PortInfo.VLStallCount of switch ports to switches, 0..=7 (`vl_stall_count`, default 7).
    pub vl_stall_count: u8,
    /// PortInfo.VLStallCount of switch ports to CAs and routers, 0..=7
    /// (`leaf_vl_stall_count`, default 7).
    pub leaf_vl_stall_count: u8,
    /// PortInfo.HOQLife of switch ports to switches, 0..=31 (≥ 0x14 = infinite;
    /// `head_of_queue_lifetime`, default 0x12).
    pub head_of_queue_lifetime: u8,
    /// PortInfo.HOQLife of switch ports to CAs and routers, and of router ports, 0..=31
    /// (`leaf_head_of_queue_lifetime`, default 0x10).
    pub leaf_head_of_queue_lifetime: u8,
    /// PortInfo.LocalPhyErrors (the threshold of trap 129) of every linked port, 0..=15
    /// (`local_phy_errors_threshold`, default 8).
    pub local_phy_errors_threshold: u8,
    /// PortInfo.OverrunErrors (the threshold of trap 130) of every linked port, 0..=15
    /// (`overrun_errors_threshold`, default 8).
    pub overrun_errors_threshold: u8,
    /// SM priority 0..=15 (`sm_priority`, default 0).
    pub sm_priority: u8,
    /// Priority advertised (and compared) while MASTER, 0..=15 (`master_sm_priority`, from
    /// the MLNX OpenSM fork; default 0 = the same as `sm_priority`). 15 keeps a recovered SM
    /// from taking mastership back (no double failover).
    pub master_sm_priority: u8,
    /// Time between a standby's SMInfo polls of its master (`sminfo_polling_timeout`, default
    /// 10 s; zero disables polling).
    pub sminfo_polling_timeout: Duration,
    /// Polls in a row without an answer after which the master counts as gone
    /// (`polling_retry_number`, default 4; at least 1 is used).
    pub polling_retry_number: u32,
    /// Take no part in elections: never stand by (`ignore_other_sm`, default false).
    pub ignore_other_sm: bool,
    /// Traps 128 and 144 start a heavy sweep at once, other traps a light sweep
    /// (`sweep_on_trap`, default true).
    pub sweep_on_trap: bool,
    /// Every sweep is a heavy sweep (`force_heavy_sweep`, default false).
    pub force_heavy_sweep: bool,
    /// Keep the switches' tables when the only change since routing was last computed is CAs
    /// or leaf switches going away or coming back (`use_ucast_cache`, OpenSM `-A`, default
    /// false as OpenSM): no recompute, no LFT Set (the `ucast_cache` module).
    pub use_ucast_cache: bool,
    /// On coming out of standby, use the persisted GUID→LID map before the LIDs the ports hold
    /// (`honor_guid2lid_file`, default false: the ports' LIDs first, as OpenSM).
    pub honor_guid2lid_file: bool,
    /// Never set PortInfo.ClientReregister (`no_clients_rereg`, default false: it is set for
    /// every CA port whose MasterSMLID changes, so SA clients re-join after a new master).
    pub no_clients_rereg: bool,
    /// An SLtoVLMappingTable answer with an error status is taken as the table the port holds
    /// all the same (OpenSM `suppress_sl2vl_mad_status_errors`, default false: it is a failed
    /// Set). For devices that apply the table but answer with a bad status.
    pub suppress_sl2vl_mad_status_errors: bool,
    /// No multicast routing: the SM computes and programs no MFTs (OpenSM
    /// `disable_multicast`, default false; the SA still answers MCMemberRecords).
    pub disable_multicast: bool,
    /// Start in NOTACTIVE (OpenSM `sm_inactive`, `-I`): the SM does not sweep, and answers
    /// SMInfo as NOTACTIVE, until another SM sets it to STANDBY. Default false.
    pub sm_inactive: bool,
    /// A switch with an enhanced port 0 gets `2^lmc` LIDs and LMC `lmc` on it (OpenSM
    /// `lmc_esp0`, default false: one LID, LMC 0).
    pub lmc_esp0: bool,
    /// A port that sends 250 identical link-integrity traps (129–131) is disabled (OpenSM
    /// `babbling_port_policy`, default false: it is only marked unhealthy and routed around).
    pub babbling_port_policy: bool,
    /// SM_Key (`sm_key`, default 1 as OpenSM).
    pub sm_key: u64,
    /// M_Key written into every port and carried in every SMP (`m_key`, default 0 = none).
    pub m_key: u64,
    /// PortInfo.MasterSMSL, the SL a port reaches the SM and SA on (`sm_sl`, default 0), where
    /// the routing engine gives no path SL; where it does, the port's path SL to the SM's LID,
    /// as OpenSM's `link_mgr_get_smsl`.
    pub sm_sl: u8,
    /// PortInfo.M_KeyProtectBits written with the M_Key (`m_key_protection_level`, 0..=3,
    /// default 0). An SMP with another M_Key can never Set; at 0 its Get reads the M_Key, at
    /// 1 the M_Key reads as 0, at 2 and 3 the Get fails too (IBA vol1 §14.2.4.1).
    pub m_key_protection_level: u8,
    /// PortInfo.M_KeyLeasePeriod written with the M_Key, in seconds (`m_key_lease_period`,
    /// default 0 = the protection never lapses): after this long without an SMP carrying the
    /// right M_Key a port drops its protection, so a new SM can take over the subnet.
    pub m_key_lease_period: u16,
    /// PortInfo.GidPrefix written into every end port (`subnet_prefix`, default
    /// 0xfe80000000000000, the link-local prefix OpenSM writes).
    pub subnet_prefix: u64,
    /// Time between light sweeps once the subnet is up (`sweep_interval`, default 10 s;
    /// zero disables periodic sweeping).
    pub sweep_interval: Duration,
    /// Seed for routing tie-breaks (`scatter_ports`; 0 = deterministic lowest-port ties).
    pub seed: u64,
    /// Carry each port's PortInfo configuration (LID, MTU, VLs, …) in its Init→Armed Set
    /// instead of a separate NoStateChange Set before it (not an OpenSM option; default false).
    ///
    /// Off: programming = SwitchInfo + LFT blocks + one configuration Set per port that needs
    /// one; then the Armed pass; then the Active pass (up to 3 PortInfo Sets per port). On:
    /// programming = SwitchInfo + LFT blocks only, and the Armed Set of each port also writes
    /// its configuration (2 PortInfo Sets per linked port). Still no port becomes Active before
    /// every port is configured and Armed: a Set is applied atomically while the port is in
    /// Init, and Armed passes no data. It does, however, arm some ports before other ports'
    /// configuration is acknowledged, which the strict reading of the activation requirement
    /// forbids — hence off by default.
    pub fold_config_into_arm: bool,
    /// Once the LFTs and LIDs of a heavy sweep are acknowledged, send the Armed and Active
    /// passes and light sweeps as LID-routed SMPs (class 0x01) to the target's LID instead of
    /// by directed route (default true). Switches forward LID-routed SMPs in hardware, DR SMPs
    /// through their management processor, and the passes double as a check of the LFTs just
    /// written. A LID-routed request that fails a whole round of retries falls back to DR.
    pub lid_routed: bool,
    /// Routing-engine options (`root_guid_file` / `lfts_file` text read by the front end,
    /// `port_profile_switch_nodes`, …); their `scatter_ports` is replaced by [`SmConfig::seed`].
    pub engine_options: crate::routing::EngineOptions,
    /// QoS programming (`qos`, `qos_*`, `use_optimized_slvl`, `qos_policy_file`): SL-to-VL and
    /// VLArbitration tables per port, sent as a diff after the LFT blocks
    /// ([`crate::qos::program`]). With `qos` on the routing engines see
    /// [`crate::routing::EngineOptions::qos`] on too. Tables a routing engine decides are
    /// programmed whether or not `qos` is on. Default: off, as OpenSM.
    pub qos: crate::qos::QosConfig,
    /// Partitions (`partition_config_file`, `part_enforce`, `no_partition_enforcement`,
    /// `allow_both_pkeys`): the P_Key tables programmed on end ports and, with enforcement,
    /// on the switch ports facing them ([`crate::partition`]). Default: no partitions.conf,
    /// `Default=0x7fff, ipoib : ALL=full ;`, enforcement `both`, as OpenSM.
    pub partitions: crate::partition::PartitionConfig,
}

impl Default for SmConfig {
    fn default() -> Self {
        SmConfig {
            port: PortNum(1),
            lmc: 0,
            routing_engine: vec!["minhop".to_string()],
            no_fallback: false,
            reassign_lids: false,
            transaction_timeout: Duration::from_millis(200),
            transaction_retries: 3,
            retry_rounds: 2,
            max_wire_smps: 256,
            max_smps_per_node: 16,
            subnet_timeout: 18,
            max_op_vls: 5,
            vl_high_limit: 0,
            force_link_width: 255,
            force_link_speed: 15,
            force_link_speed_ext: 31,
            packet_life_time: 0x12,
            vl_stall_count: 7,
            leaf_vl_stall_count: 7,
            head_of_queue_lifetime: 0x12,
            leaf_head_of_queue_lifetime: 0x10,
            local_phy_errors_threshold: 8,
            overrun_errors_threshold: 8,
            sm_priority: 0,
            master_sm_priority: 0,
            sminfo_polling_timeout: Duration::from_secs(10),
            polling_retry_number: 4,
            ignore_other_sm: false,
            sweep_on_trap: true,
            force_heavy_sweep: false,
            use_ucast_cache: false,
            honor_guid2lid_file: false,
            no_clients_rereg: false,
            suppress_sl2vl_mad_status_errors: false,
            disable_multicast: false,
            sm_inactive: false,
            lmc_esp0: false,
            babbling_port_policy: false,
            sm_key: 1,
            m_key: 0,
            sm_sl: 0,
            m_key_protection_level: 0,
            m_key_lease_period: 0,
            subnet_prefix: 0xfe80_0000_0000_0000,
            sweep_interval: Duration::from_secs(10),
            seed: 0,
            fold_config_into_arm: false,
            lid_routed: true,
            engine_options: crate::routing::EngineOptions::default(),
            qos: crate::qos::QosConfig::default(),
            partitions: crate::partition::PartitionConfig::default(),
        }
    }
}

/// A configuration value out of its legal range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A numeric option outside its range.
    #[error("option {name} = {value} is out of range ({range})")]
    OutOfRange {
        /// The OpenSM option name.
        name: &'static str,
        /// The value given.
        value: u64,
        /// The legal range, as text.
        range: &'static str,
    },
    /// The routing engine list is empty.
    #[error("routing_engine names no engine")]
    NoRoutingEngine,
    /// `no_fallback` with a list in which no engine is implemented: the SM could never
    /// route, so it refuses to start.
    #[error(
        "routing_engine {list:?}: no engine in it is implemented (ibsm has {}) and no_fallback forbids falling back to minhop",
        crate::routing::ENGINES.join(", ")
    )]
    NoUsableEngine {
        /// The list as given.
        list: String,
    },
}

impl SmConfig {
    /// The role machine's part of the configuration.
    #[must_use]
    pub fn role_config(&self) -> crate::role::RoleConfig {
        crate::role::RoleConfig {
            priority: self.sm_priority,
            master_priority: self.master_sm_priority,
            polling_timeout: self.sminfo_polling_timeout,
            polling_retries: self.polling_retry_number,
            sm_key: self.sm_key,
            ignore_other_sm: self.ignore_other_sm,
            start_inactive: self.sm_inactive,
        }
    }

    /// Valid combinations that defeat their purpose (checklist item 33 of the monitoring
    /// requirements): `sm_priority` 15 (any recovered SM of priority 15 takes mastership back),
    /// or `master_sm_priority` set but not above `sm_priority` (it then changes nothing).
    #[must_use]
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.sm_priority == 15 {
            w.push(
                "sm_priority 15: a recovered SM of priority 15 takes mastership back (double failover); use 14 or less and master_sm_priority 15".to_string(),
            );
        }
        if self.master_sm_priority != 0 && self.sm_priority >= self.master_sm_priority {
            w.push(format!(
                "sm_priority {} >= master_sm_priority {}: master_sm_priority has no effect",
                self.sm_priority, self.master_sm_priority
            ));
        }
        w
    }

    /// Checks every range; the first violation is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn check(
            name: &'static str,
            value: u64,
            ok: bool,
            range: &'static str,
        ) -> Result<(), ConfigError> {
            if ok {
                Ok(())
            } else {
                Err(ConfigError::OutOfRange { name, value, range })
            }
        }
        check("lmc", self.lmc.into(), self.lmc <= 7, "0..=7")?;
        check(
            "port_num",
            self.port.0.into(),
            self.port.0 <= 254,
            "0..=254",
        )?;
        check(
            "max_wire_smps",
            self.max_wire_smps as u64,
            self.max_wire_smps >= 1,
            ">= 1",
        )?;
        check(
            "retry_rounds",
            self.retry_rounds.into(),
            self.retry_rounds >= 1,
            ">= 1",
        )?;
        check(
            "max_smps_per_node",
            self.max_smps_per_node as u64,
            self.max_smps_per_node >= 1,
            ">= 1",
        )?;
        check(
            "subnet_timeout",
            self.subnet_timeout.into(),
            self.subnet_timeout <= 31,
            "0..=31",
        )?;
        check(
            "max_op_vls",
            self.max_op_vls.into(),
            (1..=5).contains(&self.max_op_vls),
            "1..=5",
        )?;
        check(
            "force_link_width",
            self.force_link_width.into(),
            self.force_link_width <= 31 || self.force_link_width == 255,
            "0..=31 or 255",
        )?;
        check(
            "force_link_speed",
            self.force_link_speed.into(),
            self.force_link_speed <= 7 || self.force_link_speed == 15,
            "0..=7 or 15",
        )?;
        check(
            "force_link_speed_ext",
            self.force_link_speed_ext.into(),
            self.force_link_speed_ext <= 15 || (30..=31).contains(&self.force_link_speed_ext),
            "0..=15, 30 or 31",
        )?;
        for (key, v, max, range) in [
            ("vl_stall_count", self.vl_stall_count, 7, "0..=7"),
            ("leaf_vl_stall_count", self.leaf_vl_stall_count, 7, "0..=7"),
            (
                "head_of_queue_lifetime",
                self.head_of_queue_lifetime,
                31,
                "0..=31",
            ),
            (
                "leaf_head_of_queue_lifetime",
                self.leaf_head_of_queue_lifetime,
                31,
                "0..=31",
            ),
            (
                "local_phy_errors_threshold",
                self.local_phy_errors_threshold,
                15,
                "0..=15",
            ),
            (
                "overrun_errors_threshold",
                self.overrun_errors_threshold,
                15,
                "0..=15",
            ),
        ] {
            check(key, v.into(), v <= max, range)?;
        }
        check(
            "packet_life_time",
            self.packet_life_time.into(),
            self.packet_life_time <= 31,
            "0..=31",
        )?;
        check(
            "sm_priority",
            self.sm_priority.into(),
            self.sm_priority <= 15,
            "0..=15",
        )?;
        check(
            "master_sm_priority",
            self.master_sm_priority.into(),
            self.master_sm_priority <= 15,
            "0..=15",
        )?;
        check(
            "transaction_timeout",
            self.transaction_timeout.as_millis() as u64,
            !self.transaction_timeout.is_zero(),
            "> 0 ms",
        )?;
        if self.routing_engine.iter().all(|e| e.trim().is_empty()) {
            return Err(ConfigError::NoRoutingEngine);
        }
        let names = || {
            self.routing_engine
                .iter()
                .flat_map(|e| e.split([',', ' ', '\t']))
                .filter(|n| !n.is_empty())
        };
        let no_fallback = self.no_fallback || names().any(|n| n == "no_fallback");
        let usable = names().any(|n| crate::routing::ENGINES.contains(&n) || n == "null");
        if no_fallback && !usable {
            return Err(ConfigError::NoUsableEngine {
                list: self.routing_engine.join(","),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// issue 11: `-R up-down,no_fallback` (no implemented engine, no fallback) refuses to start,
    /// naming the engines ibsm has; with a fallback, or one implemented engine, it starts.
    #[test]
    fn no_fallback_without_an_implemented_engine_is_refused() {
        let with = |engines: &[&str], nf: bool| SmConfig {
            routing_engine: engines.iter().map(ToString::to_string).collect(),
            no_fallback: nf,
            ..SmConfig::default()
        };
        let e = with(&["up-down,no_fallback"], false)
            .validate()
            .unwrap_err();
        assert!(
            e.to_string().contains(&crate::routing::ENGINES.join(", ")),
            "{e}"
        );
        assert!(matches!(
            with(&["up-down", "updn_v2"], true).validate(),
            Err(ConfigError::NoUsableEngine { .. })
        ));
        assert!(with(&["up-down"], false).validate().is_ok());
        assert!(with(&["up-down", "dfp"], true).validate().is_ok());
    }

    #[test]
    fn defaults_are_opensm_and_valid() {
        let c = SmConfig::default();
        assert_eq!(c.transaction_timeout, Duration::from_millis(200));
        assert_eq!(c.transaction_retries, 3);
        assert_eq!(c.subnet_timeout, 18);
        assert_eq!(c.routing_engine, vec!["minhop"]);
        c.validate().unwrap();
    }

    /// Monitoring checklist item 33.
    #[test]
    fn priority_15_and_a_useless_master_sm_priority_draw_warnings() {
        assert!(SmConfig::default().warnings().is_empty());
        let c = SmConfig {
            sm_priority: 15,
            ..SmConfig::default()
        };
        assert!(
            c.warnings()[0].contains("sm_priority 15"),
            "{:?}",
            c.warnings()
        );
        let c = SmConfig {
            sm_priority: 14,
            master_sm_priority: 14,
            ..SmConfig::default()
        };
        assert!(c.warnings()[0].contains("no effect"));
        let c = SmConfig {
            sm_priority: 14,
            master_sm_priority: 15,
            ..SmConfig::default()
        };
        assert!(c.warnings().is_empty());
    }

    #[test]
    fn lmc_8_is_rejected_by_name() {
        let c = SmConfig {
            lmc: 8,
            ..SmConfig::default()
        };
        let e = c.validate().unwrap_err();
        assert!(e.to_string().contains("lmc = 8"), "{e}");
    }

    #[test]
    fn other_ranges() {
        for c in [
            SmConfig {
                max_op_vls: 0,
                ..SmConfig::default()
            },
            SmConfig {
                max_wire_smps: 0,
                ..SmConfig::default()
            },
            SmConfig {
                subnet_timeout: 32,
                ..SmConfig::default()
            },
            SmConfig {
                port: PortNum(255),
                ..SmConfig::default()
            },
        ] {
            assert!(c.validate().is_err(), "{c:?}");
        }
        let c = SmConfig {
            routing_engine: vec![],
            ..SmConfig::default()
        };
        assert_eq!(c.validate(), Err(ConfigError::NoRoutingEngine));
    }
}

//! Static description of the node an [`crate::Agent`] impersonates: what NodeInfo, the
//! capability fields of PortInfo and SwitchInfo report, and the GUIDs.

use ibmad::{Guid, NodeType};

/// Per-port capabilities (the read-only capability fields of PortInfo, IBA vol1 §14.2.5.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortConfig {
    /// LinkWidthSupported bit mask (1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x).
    pub width_supported: u8,
    /// LinkSpeedSupported bit mask (1 = SDR, 2 = DDR, 4 = QDR).
    pub speed_supported: u8,
    /// LinkSpeedExtSupported bit mask (1 = FDR, 2 = EDR, 4 = HDR, 8 = NDR); 0 = none.
    pub speed_ext_supported: u8,
    /// MTUCap (1 = 256 … 5 = 4096).
    pub mtu_cap: u8,
    /// VLCap (1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14).
    pub vl_cap: u8,
}

impl PortConfig {
    /// A 4x port supporting SDR, DDR and QDR, MTU 4096 and VL0-7 — the shape ibsim reports.
    #[must_use]
    pub fn default_qdr_4x() -> PortConfig {
        PortConfig {
            width_supported: 0x03, // 1x | 4x: a 4x port can also train at 1x
            speed_supported: 0x07, // SDR | DDR | QDR
            speed_ext_supported: 0,
            mtu_cap: 5,
            vl_cap: 4,
        }
    }
}

/// Everything an [`crate::Agent`] needs to know about its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeConfig {
    /// CA or SWITCH (ROUTER is treated like a CA).
    pub node_type: NodeType,
    /// NodeGUID.
    pub node_guid: Guid,
    /// SystemImageGUID.
    pub sys_image_guid: Guid,
    /// NodeDescription text (truncated to 64 bytes).
    pub desc: String,
    /// NumPorts: physical ports; a switch's management port 0 is not counted.
    pub num_ports: u8,
    /// Port GUIDs, index = port number 0..=num_ports (CA: index 0 unused).
    pub port_guids: Vec<Guid>,
    /// Port capabilities, index = port number 0..=num_ports (switch port 0 = management port;
    /// CA: index 0 unused).
    pub ports: Vec<PortConfig>,
    /// VendorID (24-bit OUI).
    pub vendor_id: u32,
    /// DeviceID.
    pub device_id: u16,
    /// Revision.
    pub revision: u32,
    /// Switches: LinearFDBCap (e.g. 49152). CAs ignore it.
    pub lft_cap: u16,
    /// Switches: MulticastFDBCap. CAs ignore it.
    pub mft_cap: u16,
    /// Switches: SwitchInfo.EnhancedPort0 (port 0 may have an LMC and its own QoS tables).
    pub enhanced_port0: bool,
}

/// A [`NodeConfig`] that can not describe a real node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// NodeType is not CA (1), switch (2) or router (3).
    #[error("node type {0:?} is not CA, switch or router")]
    BadNodeType(NodeType),
    /// NumPorts is 0 or above 254.
    #[error("num_ports {0} is outside 1..=254")]
    BadNumPorts(u8),
    /// `port_guids` or `ports` does not have num_ports + 1 entries.
    #[error("{field} has {got} entries; expected num_ports + 1 = {expected}")]
    BadPortList {
        /// Which list.
        field: &'static str,
        /// Its length.
        got: usize,
        /// num_ports + 1.
        expected: usize,
    },
    /// LinearFDBCap above 49152 (the unicast LID space) on a switch.
    #[error("lft_cap {0} exceeds the 49152 unicast LIDs")]
    BadLftCap(u16),
    /// MulticastFDBCap above 16383 (the multicast LID space) on a switch.
    #[error("mft_cap {0} exceeds the 16383 multicast LIDs")]
    BadMftCap(u16),
    /// A port capability is out of range.
    #[error("port {port}: {field} = {value} is invalid ({why})")]
    BadPortCap {
        /// The port number.
        port: u8,
        /// The field.
        field: &'static str,
        /// Its value.
        value: u8,
        /// The valid range.
        why: &'static str,
    },
}

impl NodeConfig {
    /// Checks the configuration; [`crate::Agent::new`] calls this.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !matches!(
            self.node_type,
            NodeType::CA | NodeType::SWITCH | NodeType::ROUTER
        ) {
            return Err(ConfigError::BadNodeType(self.node_type));
        }
        if self.num_ports == 0 || self.num_ports > 254 {
            return Err(ConfigError::BadNumPorts(self.num_ports));
        }
        let expected = usize::from(self.num_ports) + 1;
        if self.port_guids.len() != expected {
            return Err(ConfigError::BadPortList {
                field: "port_guids",
                got: self.port_guids.len(),
                expected,
            });
        }
        if self.ports.len() != expected {
            return Err(ConfigError::BadPortList {
                field: "ports",
                got: self.ports.len(),
                expected,
            });
        }
        if self.node_type == NodeType::SWITCH {
            if self.lft_cap > 0xC000 {
                return Err(ConfigError::BadLftCap(self.lft_cap));
            }
            if self.mft_cap > 0x3FFF {
                return Err(ConfigError::BadMftCap(self.mft_cap));
            }
        }
        let first = if self.node_type == NodeType::SWITCH {
            0
        } else {
            1
        };
        for (i, p) in self.ports.iter().enumerate().skip(first) {
            let port = u8::try_from(i).unwrap_or(u8::MAX);
            let bad = |field, value, why| ConfigError::BadPortCap {
                port,
                field,
                value,
                why,
            };
            if !(1..=5).contains(&p.mtu_cap) {
                return Err(bad("mtu_cap", p.mtu_cap, "1..=5"));
            }
            if !(1..=5).contains(&p.vl_cap) {
                return Err(bad("vl_cap", p.vl_cap, "1..=5"));
            }
            if p.width_supported == 0 || p.width_supported & !0x1F != 0 {
                return Err(bad(
                    "width_supported",
                    p.width_supported,
                    "nonzero mask of 0x1F",
                ));
            }
            if p.speed_supported == 0 || p.speed_supported > 0x0F {
                return Err(bad(
                    "speed_supported",
                    p.speed_supported,
                    "nonzero mask of 0x0F",
                ));
            }
            if p.speed_ext_supported > 0x0F {
                return Err(bad(
                    "speed_ext_supported",
                    p.speed_ext_supported,
                    "mask of 0x0F",
                ));
            }
        }
        Ok(())
    }
}

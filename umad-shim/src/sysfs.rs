//! The sysfs tree and device nodes libibumad reads, as the kernel renders them
//! (`drivers/infiniband/core/sysfs.c` for `/sys/class/infiniband/<ca>/…`, `user_mad.c` for
//! `/sys/class/infiniband_mad/…`; formats read there, not copied):
//!
//! ```text
//! /sys/class/infiniband_mad/abi_version                      5
//! /sys/class/infiniband_mad/{umad0,issm0}/{ibdev,port}        ibsim0 / <port>
//! /sys/class/infiniband/ibsim0/{node_type,node_guid,sys_image_guid,fw_ver,hw_rev,hca_type,node_desc}
//! /sys/class/infiniband/ibsim0/ports/<port>/{lid,sm_lid,sm_sl,lid_mask_count,state,phys_state,
//!                                             rate,cap_mask,link_layer,gids/0,pkeys/<n>}
//! /dev/infiniband/{umad0,issm0}
//! ```
//!
//! Pure: [`classify`] maps an absolute path onto the emulated tree (or says it is not ours),
//! [`tree`] lists the directories and files with their contents for a snapshot of the port,
//! [`render`] produces one file's text. The runtime re-reads the port from the simulator and
//! re-renders the port's files each time one is opened, so `lid`, `sm_lid`, `state`, … are live.

use ibmad::attr::PortInfo;
use ibmad::zerocopy::FromBytes;
use ibmad::{PhysState, PortState};

/// The CA name presented (the same as ibsim's `libumad2sim.so`).
pub const DEVICE: &str = "ibsim0";
/// `IB_USER_MAD_ABI_VERSION`.
pub const ABI_VERSION: u32 = 5;

/// Where an absolute path falls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `/dev/infiniband/umadN`.
    Umad(u32),
    /// `/dev/infiniband/issmN`.
    Issm(u32),
    /// Anything else under `/sys/class/infiniband`, `/sys/class/infiniband_mad` or
    /// `/dev/infiniband`: the normalized path without the leading `/` (e.g.
    /// `sys/class/infiniband/ibsim0/ports/1/lid`).
    Tree(String),
}

impl Target {
    /// The path inside the emulated tree (relative, as [`Target::Tree`] carries it).
    #[must_use]
    pub fn rel(&self) -> String {
        match self {
            Target::Umad(n) => format!("dev/infiniband/umad{n}"),
            Target::Issm(n) => format!("dev/infiniband/issm{n}"),
            Target::Tree(rel) => rel.clone(),
        }
    }
}

/// Classifies `path`: `None` = not an emulated path (pass it to the real libc). Only absolute
/// paths without `.`/`..` components are ours; repeated and trailing slashes are ignored.
#[must_use]
pub fn classify(path: &[u8]) -> Option<Target> {
    if path.first() != Some(&b'/') {
        return None;
    }
    let s = std::str::from_utf8(path).ok()?;
    let parts: Vec<&str> = s.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return None;
    }
    let ours = matches!(
        parts.as_slice(),
        ["sys", "class", "infiniband" | "infiniband_mad", ..] | ["dev", "infiniband", ..]
    );
    if !ours {
        return None;
    }
    if let ["dev", "infiniband", name] = parts.as_slice() {
        if let Some(n) = name.strip_prefix("umad").and_then(|d| d.parse().ok()) {
            return Some(Target::Umad(n));
        }
        if let Some(n) = name.strip_prefix("issm").and_then(|d| d.parse().ok()) {
            return Some(Target::Issm(n));
        }
    }
    Some(Target::Tree(parts.join("/")))
}

/// What the simulator says about the node (read once at connect).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAttrs {
    /// NodeType (1 CA, 2 switch, 3 router).
    pub node_type: u8,
    /// NodeGUID.
    pub node_guid: u64,
    /// SystemImageGUID.
    pub sys_image_guid: u64,
    /// Firmware version from GET_VENDOR.
    pub fw_ver: u64,
    /// NodeInfo.Revision.
    pub hw_rev: u32,
    /// NodeDescription.
    pub node_desc: String,
}

/// The port's state (re-read on every access to a port file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortAttrs {
    /// PortInfo.LocalPortNum: the port's number (the `ports/<n>` directory).
    pub port: u8,
    /// LID.
    pub lid: u16,
    /// MasterSMLID.
    pub sm_lid: u16,
    /// MasterSMSL.
    pub sm_sl: u8,
    /// LMC.
    pub lmc: u8,
    /// PortState.
    pub state: u8,
    /// PortPhysicalState.
    pub phys_state: u8,
    /// LinkWidthActive (IBA encoding: 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X).
    pub width_active: u8,
    /// LinkSpeedActive (1 SDR, 2 DDR, 4 QDR).
    pub speed_active: u8,
    /// LinkSpeedExtActive (1 FDR, 2 EDR, 4 HDR, 8 NDR), used when CapabilityMask bit 14
    /// (IsExtendedSpeedsSupported) is set.
    pub speed_ext_active: u8,
    /// CapabilityMask.
    pub cap_mask: u32,
    /// GidPrefix.
    pub gid_prefix: u64,
    /// The port GUID (GID 0's interface id).
    pub port_guid: u64,
    /// P_Key table.
    pub pkeys: Vec<u16>,
}

impl PortAttrs {
    /// From a raw 64-byte PortInfo, the port GUID and the P_Key table.
    #[must_use]
    pub fn from_port_info(pi: &[u8; 64], port_guid: u64, pkeys: Vec<u16>) -> PortAttrs {
        let Ok(p) = PortInfo::ref_from_bytes(&pi[..]) else {
            return PortAttrs::default();
        };
        PortAttrs {
            port: p.local_port_num,
            lid: p.lid().0,
            sm_lid: p.master_sm_lid().0,
            sm_sl: p.master_sm_sl(),
            lmc: p.lmc(),
            state: p.port_state_raw(),
            phys_state: p.phys_state_raw(),
            width_active: p.link_width_active,
            speed_active: p.link_speed_active(),
            speed_ext_active: p.link_speed_ext_active(),
            cap_mask: p.capability_mask.get(),
            gid_prefix: p.gid_prefix.get(),
            port_guid,
            pkeys,
        }
    }
}

/// One attribute file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attr {
    /// `infiniband_mad/abi_version`.
    AbiVersion,
    /// `infiniband_mad/{umad,issm}N/ibdev`.
    MadIbdev,
    /// `infiniband_mad/{umad,issm}N/port`.
    MadPort,
    /// `node_type`.
    NodeType,
    /// `node_guid`.
    NodeGuid,
    /// `sys_image_guid`.
    SysImageGuid,
    /// `fw_ver`.
    FwVer,
    /// `hw_rev`.
    HwRev,
    /// `hca_type`.
    HcaType,
    /// `node_desc`.
    NodeDesc,
    /// A file of `ports/<n>/`.
    Port(PortAttr),
}

/// A file of `ports/<n>/` — all of them are live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortAttr {
    /// `lid`.
    Lid,
    /// `sm_lid`.
    SmLid,
    /// `sm_sl`.
    SmSl,
    /// `lid_mask_count`.
    LidMaskCount,
    /// `state`.
    State,
    /// `phys_state`.
    PhysState,
    /// `rate`.
    Rate,
    /// `cap_mask`.
    CapMask,
    /// `link_layer`.
    LinkLayer,
    /// `gids/<n>`.
    Gid(usize),
    /// `pkeys/<n>`.
    Pkey(usize),
}

/// The attribute file at tree path `rel` (as [`Target::Tree`] gives it), if it is one.
#[must_use]
pub fn attr_of(rel: &str) -> Option<Attr> {
    let parts: Vec<&str> = rel.split('/').collect();
    let num = |s: &str| s.parse::<usize>().ok();
    match parts.as_slice() {
        ["sys", "class", "infiniband_mad", "abi_version"] => Some(Attr::AbiVersion),
        ["sys", "class", "infiniband_mad", _, "ibdev"] => Some(Attr::MadIbdev),
        ["sys", "class", "infiniband_mad", _, "port"] => Some(Attr::MadPort),
        ["sys", "class", "infiniband", _, f] => Some(match *f {
            "node_type" => Attr::NodeType,
            "node_guid" => Attr::NodeGuid,
            "sys_image_guid" => Attr::SysImageGuid,
            "fw_ver" => Attr::FwVer,
            "hw_rev" => Attr::HwRev,
            "hca_type" => Attr::HcaType,
            "node_desc" => Attr::NodeDesc,
            _ => return None,
        }),
        ["sys", "class", "infiniband", _, "ports", _, "gids", n] => {
            Some(Attr::Port(PortAttr::Gid(num(n)?)))
        }
        ["sys", "class", "infiniband", _, "ports", _, "pkeys", n] => {
            Some(Attr::Port(PortAttr::Pkey(num(n)?)))
        }
        ["sys", "class", "infiniband", _, "ports", _, f] => Some(Attr::Port(match *f {
            "lid" => PortAttr::Lid,
            "sm_lid" => PortAttr::SmLid,
            "sm_sl" => PortAttr::SmSl,
            "lid_mask_count" => PortAttr::LidMaskCount,
            "state" => PortAttr::State,
            "phys_state" => PortAttr::PhysState,
            "rate" => PortAttr::Rate,
            "cap_mask" => PortAttr::CapMask,
            "link_layer" => PortAttr::LinkLayer,
            _ => return None,
        })),
        _ => None,
    }
}

fn guid_text(g: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (g >> 48) & 0xFFFF,
        (g >> 32) & 0xFFFF,
        (g >> 16) & 0xFFFF,
        g & 0xFFFF
    )
}

/// `%pI6`: eight groups of four hex digits.
fn gid_text(prefix: u64, guid: u64) -> String {
    format!("{}:{}", guid_text(prefix), guid_text(guid))
}

/// `rate`: `"%d%s Gb/sec (%dX%s)"` from the active speed (deci-Gb/s per lane) and width.
fn rate_text(p: &PortAttrs) -> String {
    let (name, per_lane) = if p.cap_mask & ibmad::attr::port_info::cap::IS_EXT_SPEEDS_SUP != 0
        && p.speed_ext_active != 0
    {
        match p.speed_ext_active {
            1 => (" FDR", 140),
            2 => (" EDR", 250),
            4 => (" HDR", 500),
            8 => (" NDR", 1000),
            _ => (" SDR", 25),
        }
    } else {
        match p.speed_active {
            2 => (" DDR", 50),
            4 => (" QDR", 100),
            _ => (" SDR", 25),
        }
    };
    let lanes = match p.width_active {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        _ => 0,
    };
    let rate = per_lane * lanes;
    let half = if rate % 10 != 0 { ".5" } else { "" };
    format!("{}{half} Gb/sec ({lanes}X{name})", rate / 10)
}

/// The text of `attr` (with its trailing newline).
#[must_use]
pub fn render(attr: Attr, node: &NodeAttrs, port: &PortAttrs) -> String {
    let body = match attr {
        Attr::AbiVersion => ABI_VERSION.to_string(),
        Attr::MadIbdev => DEVICE.to_string(),
        Attr::MadPort => port.port.to_string(),
        Attr::NodeType => {
            let name = match node.node_type {
                1 => "CA",
                2 => "switch",
                3 => "router",
                _ => "<unknown>",
            };
            format!("{}: {name}", node.node_type)
        }
        Attr::NodeGuid => guid_text(node.node_guid),
        Attr::SysImageGuid => guid_text(node.sys_image_guid),
        Attr::FwVer => format!("{:x}", node.fw_ver),
        Attr::HwRev => format!("{:x}", node.hw_rev),
        Attr::HcaType => "simulator".to_string(),
        Attr::NodeDesc => node.node_desc.chars().take(64).collect(),
        Attr::Port(p) => match p {
            PortAttr::Lid => format!("0x{:x}", port.lid),
            PortAttr::SmLid => format!("0x{:x}", port.sm_lid),
            PortAttr::SmSl => port.sm_sl.to_string(),
            PortAttr::LidMaskCount => port.lmc.to_string(),
            PortAttr::State => {
                let n = PortState(port.state).kernel_name();
                format!("{}: {n}", port.state)
            }
            PortAttr::PhysState => {
                let n = PhysState(port.phys_state).kernel_name();
                format!("{}: {n}", port.phys_state)
            }
            PortAttr::Rate => rate_text(port),
            PortAttr::CapMask => format!("0x{:08x}", port.cap_mask),
            PortAttr::LinkLayer => "InfiniBand".to_string(),
            PortAttr::Gid(0) => gid_text(port.gid_prefix, port.port_guid),
            PortAttr::Gid(_) => gid_text(0, 0),
            PortAttr::Pkey(i) => format!("0x{:04x}", port.pkeys.get(i).copied().unwrap_or(0)),
        },
    };
    body + "\n"
}

/// An entry of the tree: a directory (`content` `None`) or a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Path relative to the root (no leading `/`).
    pub path: String,
    /// File text, or `None` for a directory.
    pub content: Option<String>,
}

/// Every directory and file of the emulated tree, parents before children.
#[must_use]
pub fn tree(node: &NodeAttrs, port: &PortAttrs) -> Vec<Entry> {
    let mut v = Vec::new();
    let dir = |v: &mut Vec<Entry>, p: String| {
        v.push(Entry {
            path: p,
            content: None,
        })
    };
    let file = |v: &mut Vec<Entry>, p: String, a: Attr| {
        v.push(Entry {
            path: p,
            content: Some(render(a, node, port)),
        });
    };
    for d in [
        "sys",
        "sys/class",
        "sys/class/infiniband_mad",
        "sys/class/infiniband",
        "dev",
        "dev/infiniband",
    ] {
        dir(&mut v, d.to_string());
    }
    file(
        &mut v,
        "sys/class/infiniband_mad/abi_version".into(),
        Attr::AbiVersion,
    );
    for kind in ["umad0", "issm0"] {
        let d = format!("sys/class/infiniband_mad/{kind}");
        dir(&mut v, d.clone());
        file(&mut v, format!("{d}/ibdev"), Attr::MadIbdev);
        file(&mut v, format!("{d}/port"), Attr::MadPort);
        v.push(Entry {
            path: format!("dev/infiniband/{kind}"),
            content: Some(String::new()),
        });
    }
    let ca = format!("sys/class/infiniband/{DEVICE}");
    dir(&mut v, ca.clone());
    for (name, a) in [
        ("node_type", Attr::NodeType),
        ("node_guid", Attr::NodeGuid),
        ("sys_image_guid", Attr::SysImageGuid),
        ("fw_ver", Attr::FwVer),
        ("hw_rev", Attr::HwRev),
        ("hca_type", Attr::HcaType),
        ("node_desc", Attr::NodeDesc),
    ] {
        file(&mut v, format!("{ca}/{name}"), a);
    }
    dir(&mut v, format!("{ca}/ports"));
    let pd = format!("{ca}/ports/{}", port.port);
    dir(&mut v, pd.clone());
    for (name, a) in [
        ("lid", PortAttr::Lid),
        ("sm_lid", PortAttr::SmLid),
        ("sm_sl", PortAttr::SmSl),
        ("lid_mask_count", PortAttr::LidMaskCount),
        ("state", PortAttr::State),
        ("phys_state", PortAttr::PhysState),
        ("rate", PortAttr::Rate),
        ("cap_mask", PortAttr::CapMask),
        ("link_layer", PortAttr::LinkLayer),
    ] {
        file(&mut v, format!("{pd}/{name}"), Attr::Port(a));
    }
    dir(&mut v, format!("{pd}/gids"));
    file(&mut v, format!("{pd}/gids/0"), Attr::Port(PortAttr::Gid(0)));
    dir(&mut v, format!("{pd}/pkeys"));
    for i in 0..port.pkeys.len().max(1) {
        file(
            &mut v,
            format!("{pd}/pkeys/{i}"),
            Attr::Port(PortAttr::Pkey(i)),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port() -> PortAttrs {
        PortAttrs {
            port: 1,
            lid: 0x1a,
            sm_lid: 1,
            sm_sl: 0,
            lmc: 0,
            state: 4,
            phys_state: 5,
            width_active: 2,
            speed_active: 1,
            speed_ext_active: 0,
            cap_mask: 0x0251_0a68,
            gid_prefix: 0xfe80_0000_0000_0000,
            port_guid: 0x0002_c903_0000_1235,
            pkeys: vec![0xffff, 0x8001],
        }
    }

    #[test]
    fn only_emulated_absolute_paths_are_ours() {
        assert_eq!(classify(b"/dev/infiniband/umad0"), Some(Target::Umad(0)));
        assert_eq!(classify(b"//dev//infiniband/issm3/"), Some(Target::Issm(3)));
        assert_eq!(
            classify(b"/sys/class/infiniband_mad/umad0//ibdev"),
            Some(Target::Tree("sys/class/infiniband_mad/umad0/ibdev".into()))
        );
        assert_eq!(
            classify(b"/sys/class/infiniband"),
            Some(Target::Tree("sys/class/infiniband".into()))
        );
        assert_eq!(
            classify(b"/dev/infiniband/uverbs0"),
            Some(Target::Tree("dev/infiniband/uverbs0".into()))
        );
        for other in [
            &b"/sys/class/infiniband_verbs/abi_version"[..],
            b"/sys/class/net",
            b"sys/class/infiniband",
            b"/sys/class/infiniband/../x",
            b"/etc/passwd",
            b"",
        ] {
            assert_eq!(classify(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn attributes_are_recognised_by_path() {
        assert_eq!(
            attr_of("sys/class/infiniband_mad/abi_version"),
            Some(Attr::AbiVersion)
        );
        assert_eq!(
            attr_of("sys/class/infiniband_mad/issm0/port"),
            Some(Attr::MadPort)
        );
        assert_eq!(
            attr_of("sys/class/infiniband/ibsim0/node_guid"),
            Some(Attr::NodeGuid)
        );
        assert_eq!(
            attr_of("sys/class/infiniband/ibsim0/ports/1/pkeys/7"),
            Some(Attr::Port(PortAttr::Pkey(7)))
        );
        assert_eq!(
            attr_of("sys/class/infiniband/ibsim0/ports/1/sm_lid"),
            Some(Attr::Port(PortAttr::SmLid))
        );
        assert_eq!(attr_of("sys/class/infiniband/ibsim0/ports/1"), None);
        assert_eq!(attr_of("sys/class/infiniband/ibsim0/ports/1/pkeys/x"), None);
    }

    #[test]
    fn files_render_as_the_kernel_prints_them() {
        let n = NodeAttrs {
            node_type: 1,
            node_guid: 0x0002_c903_0000_1234,
            sys_image_guid: 0x0002_c903_0000_1234,
            fw_ver: 1,
            hw_rev: 0xa0,
            node_desc: "H1 HCA-1".into(),
        };
        let p = port();
        let r = |a| render(a, &n, &p);
        assert_eq!(r(Attr::AbiVersion), "5\n");
        assert_eq!(r(Attr::MadIbdev), "ibsim0\n");
        assert_eq!(r(Attr::MadPort), "1\n");
        assert_eq!(r(Attr::NodeType), "1: CA\n");
        assert_eq!(r(Attr::NodeGuid), "0002:c903:0000:1234\n");
        assert_eq!(r(Attr::Port(PortAttr::Lid)), "0x1a\n");
        assert_eq!(r(Attr::Port(PortAttr::SmLid)), "0x1\n");
        assert_eq!(r(Attr::Port(PortAttr::State)), "4: ACTIVE\n");
        assert_eq!(r(Attr::Port(PortAttr::PhysState)), "5: LinkUp\n");
        assert_eq!(r(Attr::Port(PortAttr::Rate)), "10 Gb/sec (4X SDR)\n");
        assert_eq!(r(Attr::Port(PortAttr::CapMask)), "0x02510a68\n");
        assert_eq!(
            r(Attr::Port(PortAttr::Gid(0))),
            "fe80:0000:0000:0000:0002:c903:0000:1235\n"
        );
        assert_eq!(r(Attr::Port(PortAttr::Pkey(1))), "0x8001\n");
        assert_eq!(r(Attr::Port(PortAttr::Pkey(9))), "0x0000\n");
        let one_x = PortAttrs {
            width_active: 1,
            ..p.clone()
        };
        assert_eq!(
            render(Attr::Port(PortAttr::Rate), &n, &one_x),
            "2.5 Gb/sec (1X SDR)\n"
        );
        let edr = PortAttrs {
            speed_ext_active: 2,
            cap_mask: 1 << 14,
            ..p.clone()
        };
        assert_eq!(
            render(Attr::Port(PortAttr::Rate), &n, &edr),
            "100 Gb/sec (4X EDR)\n"
        );
        let qdr = PortAttrs {
            speed_active: 4,
            width_active: 8,
            ..p
        };
        assert_eq!(
            render(Attr::Port(PortAttr::Rate), &n, &qdr),
            "120 Gb/sec (12X QDR)\n"
        );
    }

    #[test]
    fn port_attributes_come_from_port_info() {
        let mut pi = [0u8; 64];
        pi[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        pi[16..18].copy_from_slice(&7u16.to_be_bytes());
        pi[18..20].copy_from_slice(&1u16.to_be_bytes());
        pi[20..24].copy_from_slice(&0x0000_0200u32.to_be_bytes());
        pi[28] = 3; // LocalPortNum
        pi[32] = 0x14; // LinkSpeedSupported 1, PortState Active
        pi[33] = 0x52; // PortPhysicalState LinkUp
        let a = PortAttrs::from_port_info(&pi, 0x42, vec![0xffff]);
        assert_eq!(
            (a.lid, a.sm_lid, a.cap_mask, a.gid_prefix),
            (7, 1, 0x200, 0xfe80_0000_0000_0000)
        );
        assert_eq!(
            (a.port, a.state, a.phys_state, a.port_guid),
            (3, 4, 5, 0x42)
        );
    }

    #[test]
    fn the_tree_lists_parents_first_and_every_pkey() {
        let n = NodeAttrs::default();
        let t = tree(&n, &port());
        let paths: Vec<&str> = t.iter().map(|e| e.path.as_str()).collect();
        for (i, e) in t.iter().enumerate() {
            if let Some((parent, _)) = e.path.rsplit_once('/') {
                let at = paths.iter().position(|p| *p == parent).expect(parent);
                assert!(at < i, "{parent} before {}", e.path);
                assert!(t[at].content.is_none());
            }
        }
        assert!(paths.contains(&"sys/class/infiniband/ibsim0/ports/1/pkeys/1"));
        assert!(paths.contains(&"dev/infiniband/umad0"));
        let abi = t.iter().find(|e| e.path.ends_with("abi_version")).unwrap();
        assert_eq!(abi.content.as_deref(), Some("5\n"));
    }
}

//! CA and port discovery from sysfs, the way libibumad does it:
//!
//! * `/sys/class/infiniband/<ca>/` — one directory per RDMA device, with `node_guid`,
//!   `node_type` and `ports/<n>/{lid,sm_lid,lid_mask_count,state,phys_state,cap_mask}`;
//! * `/sys/class/infiniband_mad/umad<N>/{ibdev,port}` — which CA and port `/dev/infiniband/umad<N>`
//!   (and `issm<N>`) belong to.
//!
//! Every file is read with `libc::open` + `read` (the private `sys` module), so under ibsim's
//! `libumad2sim.so` the shim's fake tree (`./sys-<pid>/…`) is read instead.

use ibmad::{Guid, Lid, PortNum};

use crate::error::UmadError;
use crate::sys;

/// Where RDMA devices appear.
pub const SYS_INFINIBAND: &str = "/sys/class/infiniband";
/// Where user_mad devices appear.
pub const SYS_INFINIBAND_MAD: &str = "/sys/class/infiniband_mad";
/// Where the device nodes are.
pub const DEV_INFINIBAND: &str = "/dev/infiniband";

/// The three roots discovery looks under. [`SysPaths::default`] is the real system (and what
/// umad2sim redirects); tests point it at a fake tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysPaths {
    /// `/sys/class/infiniband`.
    pub infiniband: String,
    /// `/sys/class/infiniband_mad`.
    pub infiniband_mad: String,
    /// `/dev/infiniband`.
    pub dev: String,
}

impl Default for SysPaths {
    fn default() -> Self {
        SysPaths {
            infiniband: SYS_INFINIBAND.to_owned(),
            infiniband_mad: SYS_INFINIBAND_MAD.to_owned(),
            dev: DEV_INFINIBAND.to_owned(),
        }
    }
}

/// A user_mad device: one CA port, its `umadN` and `issmN` nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UmadDevice {
    /// CA name (`mlx5_0`, `ibsim0`, …).
    pub ca: String,
    /// Port number on the CA.
    pub port: PortNum,
    /// N in `umadN`.
    pub index: u32,
    /// `/dev/infiniband/umadN`.
    pub umad_path: String,
    /// `/dev/infiniband/issmN`.
    pub issm_path: String,
}

/// The attributes of one CA port as sysfs reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortAttrs {
    /// Port number.
    pub num: PortNum,
    /// Base LID.
    pub lid: Lid,
    /// The master SM's LID.
    pub sm_lid: Lid,
    /// LMC.
    pub lmc: u8,
    /// PortState (1 Down, 2 Init, 3 Armed, 4 Active).
    pub state: u8,
    /// PortPhysicalState (5 = LinkUp).
    pub phys_state: u8,
    /// CapabilityMask.
    pub cap_mask: u32,
}

/// One CA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaInfo {
    /// Name.
    pub name: String,
    /// NodeGUID.
    pub node_guid: Guid,
    /// NodeType (1 CA, 2 switch, 3 router).
    pub node_type: u8,
    /// Ports, by number.
    pub ports: Vec<PortAttrs>,
}

fn read_text(path: &str) -> Result<String, UmadError> {
    let b = sys::read_file(path)?;
    Ok(String::from_utf8_lossy(&b).trim().to_owned())
}

fn bad(path: &str, text: &str) -> UmadError {
    UmadError::BadSysfs {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// Parses `0x1a`, `26` or the leading number of `4: ACTIVE`.
fn parse_num(path: &str, text: &str) -> Result<u64, UmadError> {
    let t = text.split(':').next().unwrap_or("").trim();
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        t.parse::<u64>()
    };
    r.map_err(|_| bad(path, text))
}

/// Parses a sysfs GUID `0002:c903:0000:1000`.
fn parse_guid(path: &str, text: &str) -> Result<Guid, UmadError> {
    let hex: String = text.chars().filter(|c| *c != ':').collect();
    if hex.len() != 16 {
        return Err(bad(path, text));
    }
    u64::from_str_radix(&hex, 16)
        .map(Guid)
        .map_err(|_| bad(path, text))
}

fn read_num(path: &str) -> Result<u64, UmadError> {
    let t = read_text(path)?;
    parse_num(path, &t)
}

/// Sorts names like `umad10` after `umad2`.
fn natural_key(s: &str) -> (String, u64) {
    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = s.split_at(s.len() - digits);
    (head.to_owned(), tail.parse().unwrap_or(0))
}

fn list(path: &str) -> Result<Vec<String>, UmadError> {
    let mut v = sys::read_dir(path)?;
    v.sort_by_key(|a| natural_key(a));
    Ok(v)
}

/// The names of all RDMA devices.
///
/// # Errors
/// [`UmadError::NoIbDevice`] if `/sys/class/infiniband` does not exist.
pub fn ca_names() -> Result<Vec<String>, UmadError> {
    ca_names_in(&SysPaths::default())
}

/// [`ca_names`] under `p`.
///
/// # Errors
/// As [`ca_names`].
pub fn ca_names_in(p: &SysPaths) -> Result<Vec<String>, UmadError> {
    match list(&p.infiniband) {
        Err(UmadError::Sys(e)) if e.errno() == Some(libc::ENOENT) => Err(UmadError::NoIbDevice {
            path: p.infiniband.clone(),
        }),
        r => r,
    }
}

/// The sysfs attributes of `ca` port `port`.
///
/// # Errors
/// [`UmadError::PortNotFound`] if the port directory does not exist; sysfs read errors.
pub fn port_attrs(ca: &str, port: PortNum) -> Result<PortAttrs, UmadError> {
    port_attrs_in(&SysPaths::default(), ca, port)
}

/// [`port_attrs`] under `p`.
///
/// # Errors
/// As [`port_attrs`].
pub fn port_attrs_in(p: &SysPaths, ca: &str, port: PortNum) -> Result<PortAttrs, UmadError> {
    let dir = format!("{}/{ca}/ports/{}", p.infiniband, port.0);
    let lid = match read_num(&format!("{dir}/lid")) {
        Err(UmadError::Sys(e)) if e.errno() == Some(libc::ENOENT) => {
            return Err(UmadError::PortNotFound {
                ca: ca.to_owned(),
                port: port.0,
                available: ca_ports(p, ca).unwrap_or_default(),
            })
        }
        r => r?,
    };
    let opt = |name: &str| read_num(&format!("{dir}/{name}")).unwrap_or(0);
    Ok(PortAttrs {
        num: port,
        lid: Lid(lid as u16),
        sm_lid: Lid(opt("sm_lid") as u16),
        lmc: opt("lid_mask_count") as u8,
        state: opt("state") as u8,
        phys_state: opt("phys_state") as u8,
        cap_mask: opt("cap_mask") as u32,
    })
}

fn ca_ports(p: &SysPaths, ca: &str) -> Result<Vec<u8>, UmadError> {
    let mut v: Vec<u8> = list(&format!("{}/{ca}/ports", p.infiniband))?
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Everything sysfs says about every CA.
///
/// # Errors
/// [`UmadError::NoIbDevice`] without `/sys/class/infiniband`; sysfs read errors.
pub fn list_cas() -> Result<Vec<CaInfo>, UmadError> {
    list_cas_in(&SysPaths::default())
}

/// [`list_cas`] under `p`.
///
/// # Errors
/// As [`list_cas`].
pub fn list_cas_in(p: &SysPaths) -> Result<Vec<CaInfo>, UmadError> {
    let mut out = Vec::new();
    for name in ca_names_in(p)? {
        let base = format!("{}/{name}", p.infiniband);
        let gpath = format!("{base}/node_guid");
        let node_guid = parse_guid(&gpath, &read_text(&gpath)?)?;
        let node_type = read_num(&format!("{base}/node_type")).unwrap_or(0) as u8;
        let mut ports = Vec::new();
        for n in ca_ports(p, &name)? {
            ports.push(port_attrs_in(p, &name, PortNum(n))?);
        }
        out.push(CaInfo {
            name,
            node_guid,
            node_type,
            ports,
        });
    }
    Ok(out)
}

/// All user_mad devices, in `umadN` order.
///
/// # Errors
/// [`UmadError::NoIbDevice`] without `/sys/class/infiniband`, [`UmadError::NoUmadDevice`] without
/// `/sys/class/infiniband_mad`; sysfs read errors.
pub fn list_umad_devices() -> Result<Vec<UmadDevice>, UmadError> {
    list_umad_devices_in(&SysPaths::default())
}

/// [`list_umad_devices`] under `p`.
///
/// # Errors
/// As [`list_umad_devices`].
pub fn list_umad_devices_in(p: &SysPaths) -> Result<Vec<UmadDevice>, UmadError> {
    ca_names_in(p)?;
    let entries = match list(&p.infiniband_mad) {
        Err(UmadError::Sys(e)) if e.errno() == Some(libc::ENOENT) => {
            return Err(UmadError::NoUmadDevice {
                path: p.infiniband_mad.clone(),
            })
        }
        r => r?,
    };
    let mut out = Vec::new();
    for e in entries {
        let Some(idx) = e.strip_prefix("umad").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let dir = format!("{}/{e}", p.infiniband_mad);
        let ca = read_text(&format!("{dir}/ibdev"))?;
        let ppath = format!("{dir}/port");
        let port = read_num(&ppath)?;
        let port = u8::try_from(port).map_err(|_| bad(&ppath, &port.to_string()))?;
        out.push(UmadDevice {
            ca,
            port: PortNum(port),
            index: idx,
            umad_path: format!("{}/umad{idx}", p.dev),
            issm_path: format!("{}/issm{idx}", p.dev),
        });
    }
    Ok(out)
}

/// Picks the user_mad device for `ca`/`port`, like libibumad's `umad_get_port`: with no CA, the
/// CAs are tried in name order; with no port, the first ACTIVE port is taken, else the first
/// with a LinkUp physical state, else the first port.
///
/// # Errors
/// [`UmadError::NoIbDevice`], [`UmadError::NoUmadDevice`], [`UmadError::CaNotFound`],
/// [`UmadError::PortNotFound`].
pub fn find_device(ca: Option<&str>, port: Option<u8>) -> Result<UmadDevice, UmadError> {
    find_device_in(&SysPaths::default(), ca, port)
}

/// [`find_device`] under `p`.
///
/// The port GUID of `ca` port `port`: the low 64 bits of its GID 0 (`ports/N/gids/0`,
/// `fe80:0000:0000:0000:0002:c903:00ab:cd02`).
///
/// # Errors
/// Sysfs read errors; [`UmadError::BadSysfs`] if the GID is not eight groups of hex.
pub fn port_guid_in(p: &SysPaths, ca: &str, port: PortNum) -> Result<Guid, UmadError> {
    let path = format!("{}/{ca}/ports/{}/gids/0", p.infiniband, port.0);
    let text = read_text(&path)?;
    let groups: Vec<&str> = text.split(':').collect();
    if groups.len() != 8 {
        return Err(bad(&path, &text));
    }
    parse_guid(&path, &groups[4..].join(":"))
}

/// The user_mad device whose port has port GUID `guid` (OpenSM's `-g`/`guid`).
///
/// # Errors
/// [`UmadError::NoIbDevice`], [`UmadError::NoUmadDevice`]; [`UmadError::PortGuidNotFound`]
/// with the ports that exist and their GUIDs.
pub fn find_device_by_guid_in(p: &SysPaths, guid: Guid) -> Result<UmadDevice, UmadError> {
    let devs = list_umad_devices_in(p)?;
    let mut available = Vec::new();
    for d in devs {
        match port_guid_in(p, &d.ca, d.port) {
            Ok(g) if g == guid => return Ok(d),
            Ok(g) => available.push(format!("{} port {}: 0x{:016x}", d.ca, d.port.0, g.0)),
            Err(e) => available.push(format!("{} port {}: {e}", d.ca, d.port.0)),
        }
    }
    Err(UmadError::PortGuidNotFound { guid, available })
}

/// # Errors
/// As [`find_device`].
pub fn find_device_in(
    p: &SysPaths,
    ca: Option<&str>,
    port: Option<u8>,
) -> Result<UmadDevice, UmadError> {
    let devs = list_umad_devices_in(p)?;
    let cas = ca_names_in(p)?;
    let candidates: Vec<&UmadDevice> = match ca {
        Some(name) => {
            if !cas.iter().any(|c| c == name) {
                return Err(UmadError::CaNotFound {
                    name: name.to_owned(),
                    available: cas,
                });
            }
            devs.iter().filter(|d| d.ca == name).collect()
        }
        None => {
            let mut v: Vec<&UmadDevice> = devs.iter().collect();
            v.sort_by_key(|d| (natural_key(&d.ca), d.port.0));
            v
        }
    };
    if candidates.is_empty() {
        return Err(UmadError::NoUmadDevice {
            path: p.infiniband_mad.clone(),
        });
    }
    if let Some(want) = port {
        let ca_name = ca.map_or_else(|| candidates[0].ca.clone(), str::to_owned);
        return candidates
            .iter()
            .find(|d| d.port.0 == want && d.ca == ca_name)
            .map(|d| (*d).clone())
            .ok_or_else(|| UmadError::PortNotFound {
                ca: ca_name.clone(),
                port: want,
                available: candidates
                    .iter()
                    .filter(|d| d.ca == ca_name)
                    .map(|d| d.port.0)
                    .collect(),
            });
    }
    let attrs: Vec<Option<PortAttrs>> = candidates
        .iter()
        .map(|d| port_attrs_in(p, &d.ca, d.port).ok())
        .collect();
    let pick = attrs
        .iter()
        .position(|a| a.as_ref().is_some_and(|a| a.state == 4))
        .or_else(|| {
            attrs
                .iter()
                .position(|a| a.as_ref().is_some_and(|a| a.phys_state == 5))
        })
        .unwrap_or(0);
    Ok(candidates[pick].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_number_formats() {
        assert_eq!(parse_num("p", "0x1a").unwrap(), 26);
        assert_eq!(parse_num("p", "26").unwrap(), 26);
        assert_eq!(parse_num("p", "4: ACTIVE").unwrap(), 4);
        assert_eq!(parse_num("p", "5: LinkUp").unwrap(), 5);
        assert_eq!(parse_num("p", "0x02510868").unwrap(), 0x0251_0868);
        assert!(matches!(
            parse_num("/x/lid", "zz"),
            Err(UmadError::BadSysfs { path, .. }) if path == "/x/lid"
        ));
    }

    #[test]
    fn parses_guids() {
        assert_eq!(
            parse_guid("p", "0002:c903:0000:1000").unwrap(),
            Guid(0x0002_c903_0000_1000)
        );
        assert!(parse_guid("p", "0002:c903").is_err());
        assert!(parse_guid("p", "0002:c903:0000:10zz").is_err());
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["umad10", "umad2", "umad1", "mlx5_0"];
        v.sort_by_key(|a| natural_key(a));
        assert_eq!(v, vec!["mlx5_0", "umad1", "umad2", "umad10"]);
    }

    /// A fake sysfs: mlx5_0 (ports 1 INIT/LinkUp, 2 ACTIVE), mlx5_1 (port 1 DOWN), umad0..2.
    fn fake_tree() -> (tempfile::TempDir, SysPaths) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let w = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w("ib/mlx5_0/node_guid", "0002:c903:00ab:cd01\n");
        w("ib/mlx5_0/node_type", "1: CA\n");
        w("ib/mlx5_0/ports/1/lid", "0x0\n");
        w("ib/mlx5_0/ports/1/state", "2: INIT\n");
        w("ib/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
        w("ib/mlx5_0/ports/2/lid", "0x1a\n");
        w("ib/mlx5_0/ports/2/sm_lid", "0x1\n");
        w("ib/mlx5_0/ports/2/state", "4: ACTIVE\n");
        w("ib/mlx5_0/ports/2/phys_state", "5: LinkUp\n");
        w("ib/mlx5_0/ports/2/cap_mask", "0x02510868\n");
        w(
            "ib/mlx5_0/ports/1/gids/0",
            "fe80:0000:0000:0000:0002:c903:00ab:cd01\n",
        );
        w(
            "ib/mlx5_0/ports/2/gids/0",
            "fe80:0000:0000:0000:0002:c903:00ab:cd09\n",
        );
        w("ib/mlx5_1/node_guid", "0002:c903:00ab:cd02\n");
        w("ib/mlx5_1/node_type", "1: CA\n");
        w("ib/mlx5_1/ports/1/lid", "0x0\n");
        w("ib/mlx5_1/ports/1/state", "1: DOWN\n");
        w("ib/mlx5_1/ports/1/phys_state", "3: Disabled\n");
        w("mad/umad0/ibdev", "mlx5_0\n");
        w("mad/umad0/port", "1\n");
        w("mad/umad1/ibdev", "mlx5_0\n");
        w("mad/umad1/port", "2\n");
        w("mad/umad2/ibdev", "mlx5_1\n");
        w("mad/umad2/port", "1\n");
        w("mad/abi_version", "5\n");
        let s = |rel: &str| root.join(rel).to_str().unwrap().to_owned();
        let paths = SysPaths {
            infiniband: s("ib"),
            infiniband_mad: s("mad"),
            dev: "/dev/fake".into(),
        };
        (d, paths)
    }

    #[test]
    fn discovery_reads_cas_and_ports() {
        let (_d, p) = fake_tree();
        let cas = list_cas_in(&p).unwrap();
        assert_eq!(cas.len(), 2);
        assert_eq!(cas[0].name, "mlx5_0");
        assert_eq!(cas[0].node_guid, Guid(0x0002_c903_00ab_cd01));
        assert_eq!(cas[0].ports.len(), 2);
        let p2 = &cas[0].ports[1];
        assert_eq!(
            (p2.num, p2.lid, p2.sm_lid, p2.state, p2.cap_mask),
            (PortNum(2), Lid(0x1a), Lid(1), 4, 0x0251_0868)
        );
        let devs = list_umad_devices_in(&p).unwrap();
        assert_eq!(devs.len(), 3, "abi_version is not a device");
        assert_eq!(devs[1].umad_path, "/dev/fake/umad1");
        assert_eq!(devs[1].issm_path, "/dev/fake/issm1");
    }

    #[test]
    fn default_port_is_the_first_active_one() {
        let (_d, p) = fake_tree();
        let d = find_device_in(&p, None, None).unwrap();
        assert_eq!((d.ca.as_str(), d.port, d.index), ("mlx5_0", PortNum(2), 1));
        // mlx5_1's only port is down: still chosen when that CA is asked for.
        let d = find_device_in(&p, Some("mlx5_1"), None).unwrap();
        assert_eq!((d.port, d.index), (PortNum(1), 2));
        let d = find_device_in(&p, Some("mlx5_0"), Some(1)).unwrap();
        assert_eq!(d.index, 0);
    }

    #[test]
    fn a_port_is_found_by_its_guid() {
        let (_d, p) = fake_tree();
        let d = find_device_by_guid_in(&p, Guid(0x0002_c903_00ab_cd09)).unwrap();
        assert_eq!((d.ca.as_str(), d.port, d.index), ("mlx5_0", PortNum(2), 1));
        let d = find_device_by_guid_in(&p, Guid(0x0002_c903_00ab_cd01)).unwrap();
        assert_eq!((d.ca.as_str(), d.port, d.index), ("mlx5_0", PortNum(1), 0));
        // Not there: the error lists every port with its GUID (or why it has none).
        let e = find_device_by_guid_in(&p, Guid(0x1234)).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("0x0000000000001234"), "{m}");
        assert!(m.contains("mlx5_0 port 2: 0x0002c90300abcd09"), "{m}");
        assert!(m.contains("mlx5_1 port 1: "), "{m}");
        // A GID that is not eight groups is named.
        std::fs::write(
            format!("{}/mlx5_0/ports/1/gids/0", p.infiniband),
            "fe80::1\n",
        )
        .unwrap();
        let e = port_guid_in(&p, "mlx5_0", PortNum(1)).unwrap_err();
        assert!(matches!(e, UmadError::BadSysfs { .. }), "{e}");
    }

    #[test]
    fn unknown_ca_and_port_are_named_in_the_error() {
        let (_d, p) = fake_tree();
        let e = find_device_in(&p, Some("mlx4_0"), None).unwrap_err();
        match &e {
            UmadError::CaNotFound { name, available } => {
                assert_eq!(name, "mlx4_0");
                assert_eq!(available, &["mlx5_0".to_string(), "mlx5_1".to_string()]);
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("mlx4_0"));
        let e = find_device_in(&p, Some("mlx5_0"), Some(3)).unwrap_err();
        match e {
            UmadError::PortNotFound {
                ca,
                port,
                available,
            } => assert_eq!((ca.as_str(), port, available), ("mlx5_0", 3, vec![1, 2])),
            other => panic!("{other:?}"),
        }
        let e = port_attrs_in(&p, "mlx5_0", PortNum(7)).unwrap_err();
        assert!(
            matches!(e, UmadError::PortNotFound { port: 7, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn missing_roots_are_clear_errors() {
        let (d, mut p) = fake_tree();
        p.infiniband_mad = d.path().join("nope").to_str().unwrap().to_owned();
        assert!(matches!(
            find_device_in(&p, None, None),
            Err(UmadError::NoUmadDevice { .. })
        ));
        p.infiniband = d.path().join("nope2").to_str().unwrap().to_owned();
        assert!(matches!(list_cas_in(&p), Err(UmadError::NoIbDevice { .. })));
    }

    #[test]
    fn no_ib_device_is_a_clear_error_here() {
        // This machine (and CI) has no RDMA device and no shim loaded.
        if std::path::Path::new(SYS_INFINIBAND).exists() {
            crate::testutil::report_skip(
                "no_ib_device_is_a_clear_error_here",
                "this host has an RDMA device",
            );
            return;
        }
        let e = find_device(None, None).unwrap_err();
        assert!(matches!(e, UmadError::NoIbDevice { .. }), "{e:?}");
        assert!(e.to_string().contains("/sys/class/infiniband"));
    }
}

//! `ibsm stat`: ibstat — the local port's state, rate, LIDs and GUIDs, in ibstat's layout.
//!
//! ibstat reads sysfs; this asks the local node's SMA with directed-route SMPs of hop count 0
//! (NodeInfo, then PortInfo of the local port), so it works over every transport, including a
//! switch ASIC reached only through VFIO, where there is no sysfs. What only sysfs knows (CA
//! type, firmware and hardware version) is left out, and only the port the transport uses is
//! shown, as `ibstat CA PORT` shows one (docs/operator-guide.md).

use clap::Parser;
use ibmad::attr::port_info::cap;
use ibmad::attr::PortInfo;
use ibmad::sa_rec::path::{port_rate, rate_gbps_text};
use ibmad::{DrPath, NodeType, SmpAttrId};
use serde_json::json;

use super::client::Addr;
use super::cmds::{ni, pi, print, Common, DiagError, Session};

/// `ibsm stat`: ibstat.
#[derive(Parser, Debug)]
#[command(about = "The local port's state, rate, LIDs and GUIDs (ibstat's format; --json)")]
pub struct StatArgs {
    #[command(flatten)]
    common: Common,
    /// Print only the port GUID, as ibstat -p
    #[arg(long = "list_of_guids", short = 'p')]
    guids_only: bool,
}

/// The port's data rate in Gb/s as the kernel's `rate` file gives it (ibstat's "Rate"):
/// [`port_rate`] (lanes × the active speed, the extended one where the port supports it and
/// one is active) named by [`rate_gbps_text`]. "unknown" when the width or speed is not a
/// single known value.
fn rate_text(p: &PortInfo) -> String {
    let ext = p.capability_mask.get() & cap::IS_EXT_SPEEDS_SUP != 0;
    let width_ok = matches!(p.link_width_active, 1 | 2 | 4 | 8 | 16);
    let speed_ok = matches!(p.link_speed_active(), 1 | 2 | 4)
        || (ext && matches!(p.link_speed_ext_active(), 1 | 2 | 4 | 8));
    if !(width_ok && speed_ok) {
        return "unknown".into();
    }
    rate_gbps_text(port_rate(p, ext)).map_or_else(|| "unknown".into(), str::to_string)
}

/// Runs `ibsm stat`.
///
/// # Errors
/// The transport did not open, or the local SMA did not answer.
pub fn stat(a: &StatArgs) -> Result<(), DiagError> {
    let mut s = Session::open(&a.common, 4)?;
    let local = Addr::Dr(DrPath::local());
    let n = ni(&s.get(local, SmpAttrId::NODE_INFO, 0)?);
    let is_switch = n.node_type == NodeType::SWITCH.0;
    // A switch answers for its management port 0; a CA for the port the SMP came in on.
    let port = if is_switch { 0 } else { n.local_port_num };
    let p = pi(&s.get(local, SmpAttrId::PORT_INFO, u32::from(port))?);
    let port_guid = n.port_guid.get();
    if a.guids_only {
        print(
            &a.common,
            &format!("0x{port_guid:016x}\n"),
            json!([format!("0x{port_guid:016x}")]),
        );
        return Ok(());
    }
    let name = s
        .port_mut()
        .ca_name()
        .unwrap_or_else(|| a.common.transport.clone());
    let kind = if is_switch { "Switch" } else { "CA" };
    let rate = rate_text(&p);
    let text = format!(
        "{kind} '{name}'\n\
         \tNumber of ports: {ports}\n\
         \tNode GUID: 0x{node:016x}\n\
         \tSystem image GUID: 0x{sys:016x}\n\
         \tPort {port}:\n\
         \t\tState: {state}\n\
         \t\tPhysical state: {phys}\n\
         \t\tRate: {rate}\n\
         \t\tBase lid: {lid}\n\
         \t\tLMC: {lmc}\n\
         \t\tSM lid: {sm}\n\
         \t\tCapability mask: 0x{capm:08x}\n\
         \t\tPort GUID: 0x{port_guid:016x}\n\
         \t\tLink layer: InfiniBand\n",
        ports = n.num_ports,
        node = n.node_guid.get(),
        sys = n.system_image_guid.get(),
        state = p.port_state().ibstat_name(),
        phys = p.phys_state().ibstat_name(),
        rate = rate,
        lid = p.lid().0,
        lmc = p.lmc(),
        sm = p.master_sm_lid().0,
        capm = p.capability_mask.get(),
    );
    let js = json!({
        "name": name,
        "type": kind,
        "num_ports": n.num_ports,
        "node_guid": format!("0x{:016x}", n.node_guid.get()),
        "system_image_guid": format!("0x{:016x}", n.system_image_guid.get()),
        "port": {
            "num": port,
            "state": p.port_state().ibstat_name(),
            "physical_state": p.phys_state().ibstat_name(),
            "rate_gbps": rate.parse::<f64>().ok(),
            "base_lid": p.lid().0,
            "lmc": p.lmc(),
            "sm_lid": p.master_sm_lid().0,
            "capability_mask": format!("0x{:08x}", p.capability_mask.get()),
            "port_guid": format!("0x{port_guid:016x}"),
            "link_layer": "InfiniBand",
        },
    });
    print(&a.common, &text, js);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmad::zerocopy::FromZeros;
    use ibmad::{PhysState, PortState};

    fn port(width: u8, speed: u8, ext: u8, ext_cap: bool) -> PortInfo {
        let mut p = PortInfo::new_zeroed();
        p.link_width_active = width;
        p.set_link_speed_active(speed);
        p.set_link_speed_ext_active(ext);
        if ext_cap {
            p.capability_mask.set(cap::IS_EXT_SPEEDS_SUP);
        }
        p
    }

    #[test]
    fn rate_is_lanes_times_the_active_speed_as_the_kernel_prints_it() {
        assert_eq!(rate_text(&port(2, 1, 0, false)), "10"); // 4X SDR
        assert_eq!(rate_text(&port(1, 1, 0, false)), "2.5"); // 1X SDR
        assert_eq!(rate_text(&port(2, 4, 0, false)), "40"); // 4X QDR
        assert_eq!(rate_text(&port(2, 4, 1, true)), "56"); // 4X FDR
        assert_eq!(rate_text(&port(2, 4, 2, true)), "100"); // 4X EDR
        assert_eq!(rate_text(&port(8, 4, 4, true)), "600"); // 12X HDR

        // An extended speed without the capability bit is not believed.
        assert_eq!(rate_text(&port(2, 4, 2, false)), "40");
        assert_eq!(rate_text(&port(3, 1, 0, false)), "unknown");
        assert_eq!(rate_text(&port(2, 0, 0, false)), "unknown");
    }

    #[test]
    fn state_names_are_ibstats() {
        assert_eq!(PortState(2).ibstat_name(), "Initializing");
        assert_eq!(PortState(4).ibstat_name(), "Active");
        assert_eq!(PhysState(5).ibstat_name(), "LinkUp");
        assert_eq!(PhysState(3).ibstat_name(), "Disabled");
        assert_eq!(PhysState(7).ibstat_name(), "Phy Test");
        assert_eq!(PortState(9).ibstat_name(), "Unknown");
    }
}

//! Writers: ibsim `.net` and ibnetdiscover text.
//!
//! - [`Topology::write_net`] writes the ibsim dialect: node names are kept, GUID lines appear
//!   only where ibsim's own GUID counters would not produce the node's GUID, and link
//!   attributes that differ from the defaults become port options (`w=`, `s=`, `e=`, plus this
//!   crate's `mtu=`, `vl=`, `fdr10=`, which ibsim ignores). Reading it back with
//!   [`Topology::parse_net`] gives an equal topology (`==`), except for the attributes of
//!   unlinked ports and LIDs of switch ports other than 0, which the format cannot carry.
//! - [`Topology::write_ibnetdiscover`] writes what `ibnetdiscover` (infiniband-diags) prints,
//!   line for line: switches, then CAs, then routers, each with its `vendid`/`devid`/
//!   `sysimgguid`/`*guid` lines, nodes named `S-`/`H-`/`R-` + GUID, descriptions and LIDs in
//!   comments, and `4xQDR`-style rates. The only difference from a real capture is the
//!   "generated on" date line. Reading it back gives the same fabric as [`Topology::diff`]
//!   sees it (names change; MTU is not in the format; VLCap only with `full`).

use std::fmt::{self, Write};
use std::path::Path;

use ibmad::{Guid, NodeType, PortNum};

use super::attrs::{LinkAttrs, LinkSpeed, LinkWidth, Mtu, VlCap};
use super::model::{Node, NodeId, Port, PortRef, Topology};

/// ibsim's initial GUID counters (CA, switch, router), see [`super::parse`].
const GUID_BASE: [u64; 3] = [0x10_0000, 0x20_0000, 0];

fn type_index(t: NodeType) -> usize {
    match t {
        NodeType::SWITCH => 1,
        NodeType::ROUTER => 2,
        _ => 0,
    }
}

fn keyword(t: NodeType) -> (&'static str, &'static str) {
    match t {
        NodeType::SWITCH => ("Switch", "switchguid"),
        NodeType::ROUTER => ("Rt", "rtguid"),
        _ => ("Hca", "caguid"),
    }
}

impl Topology {
    /// The ibsim `.net` text of this fabric.
    #[must_use]
    pub fn to_net(&self) -> String {
        let mut s = String::with_capacity(self.num_nodes() * 64);
        // Writing into a String cannot fail.
        let _ = self.write_net(&mut s);
        s
    }

    /// The ibnetdiscover text of this fabric (as `ibnetdiscover` prints it; with `full`, as
    /// `ibnetdiscover -f` does, adding ` s=S w=W v=V` to each port line).
    #[must_use]
    pub fn to_ibnetdiscover(&self, full: bool) -> String {
        let mut s = String::with_capacity(self.num_nodes() * 128);
        let _ = self.write_ibnetdiscover(&mut s, full);
        s
    }

    /// Writes [`Topology::to_net`] to a file.
    pub fn save_net(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.to_net())
    }

    /// Writes [`Topology::to_ibnetdiscover`] to a file.
    pub fn save_ibnetdiscover(&self, path: impl AsRef<Path>, full: bool) -> std::io::Result<()> {
        std::fs::write(path, self.to_ibnetdiscover(full))
    }

    /// Writes ibsim `.net` text.
    pub fn write_net(&self, out: &mut impl Write) -> fmt::Result {
        writeln!(
            out,
            "# fabric-sim topology: {} switches, {} CAs, {} routers, {} links",
            self.num_switches(),
            self.num_cas(),
            self.num_routers(),
            self.num_links()
        )?;
        writeln!(out, "# Format: ibsim .net (see fabric_sim::topo::parse)")?;
        let mut next = GUID_BASE;
        let mut devid = 0u16;
        for (id, n) in self.nodes() {
            let t = n.node_type();
            let ti = type_index(t);
            let (kw, guidkw) = keyword(t);
            writeln!(out)?;
            let switch_pg = self
                .port(PortRef {
                    node: id,
                    port: PortNum(0),
                })
                .map(Port::guid)
                .filter(|g| n.is_switch() && *g != n.guid());
            if n.guid().0 != next[ti] || switch_pg.is_some() {
                write!(out, "{guidkw}={:#x}", n.guid().0)?;
                if let Some(pg) = switch_pg {
                    write!(out, "({:#x})", pg.0)?;
                }
                writeln!(out)?;
            }
            next[ti] = if n.is_switch() {
                n.guid().0.wrapping_add(1)
            } else {
                n.guid().0.wrapping_add(u64::from(n.num_ports()) + 1)
            };
            if n.vendor_id() != 0 {
                writeln!(out, "vendid={:#x}", n.vendor_id())?;
            }
            if n.device_id() != devid {
                writeln!(out, "devid={:#x}", n.device_id())?;
                devid = n.device_id();
            }
            if n.sys_image_guid() != n.guid() {
                writeln!(out, "sysimgguid={:#x}", n.sys_image_guid().0)?;
            }
            write!(out, "{kw}\t{} \"{}\"", n.num_ports(), n.name())?;
            let p0 = self.port(PortRef {
                node: id,
                port: PortNum(0),
            });
            let lid0 = p0.filter(|p| p.lid().0 != 0 || p.lmc() != 0);
            if n.has_explicit_desc() || n.enhanced_port0() || lid0.is_some() {
                write!(out, "\t# \"{}\"", n.desc())?;
                if n.is_switch() {
                    let kind = if n.enhanced_port0() {
                        "enhanced"
                    } else {
                        "base"
                    };
                    write!(out, " {kind} port 0")?;
                    if let Some(p) = lid0 {
                        write!(out, " lid {} lmc {}", p.lid(), p.lmc())?;
                    }
                }
            }
            writeln!(out)?;
            for (p, port) in self.ports(id) {
                let Some(peer) = port.peer() else { continue };
                let Some(pn) = self.node(peer.node) else {
                    continue;
                };
                write!(out, "[{p}]")?;
                if !n.is_switch() && port.guid().0 != n.guid().0.wrapping_add(u64::from(p.0)) {
                    write!(out, "({:x})", port.guid().0)?;
                }
                write!(out, "\t\"{}\"[{}]", pn.name(), peer.port)?;
                write_net_options(out, port.attrs())?;
                if !n.is_switch() && (port.lid().0 != 0 || port.lmc() != 0) {
                    write!(out, "\t# lid {} lmc {}", port.lid(), port.lmc())?;
                }
                writeln!(out)?;
            }
        }
        Ok(())
    }

    /// Writes ibnetdiscover text; see the module docs.
    pub fn write_ibnetdiscover(&self, out: &mut impl Write, full: bool) -> fmt::Result {
        writeln!(out, "#\n# Topology file: generated by fabric-sim\n#")?;
        let origin = match self.initiated_from() {
            Some((id, p)) => self.node(id).map(|n| (id, n, p)),
            None => self.nodes().next().map(|(id, n)| (id, n, None)),
        };
        if let Some((id, n, p)) = origin {
            let port_guid = p
                .and_then(|p| self.port(PortRef { node: id, port: p }))
                .map_or_else(|| self.nodeinfo_port_guid(id, n), |x| x.guid());
            writeln!(
                out,
                "# Initiated from node {:016x} port {:016x}",
                n.guid().0,
                port_guid.0
            )?;
        }
        for t in [NodeType::SWITCH, NodeType::CA, NodeType::ROUTER] {
            for id in self.nodes_of_type(t) {
                let Some(n) = self.node(id) else { continue };
                self.write_disc_node(out, id, n, full)?;
            }
        }
        Ok(())
    }

    /// NodeInfo.PortGUID as seen from the first port: port 0 of a switch, else the lowest port.
    fn nodeinfo_port_guid(&self, id: NodeId, n: &Node) -> Guid {
        self.ports(id).next().map_or(n.guid(), |(_, p)| p.guid())
    }

    fn write_disc_node(
        &self,
        out: &mut impl Write,
        id: NodeId,
        n: &Node,
        full: bool,
    ) -> fmt::Result {
        writeln!(out, "\nvendid={:#x}", n.vendor_id())?;
        writeln!(out, "devid={:#x}", n.device_id())?;
        if n.sys_image_guid().0 != 0 {
            writeln!(out, "sysimgguid={:#x}", n.sys_image_guid().0)?;
        }
        let name = disc_name(n);
        if n.is_switch() {
            let p0 = self.port(PortRef {
                node: id,
                port: PortNum(0),
            });
            writeln!(
                out,
                "switchguid={:#x}({:x})",
                n.guid().0,
                p0.map_or(n.guid(), Port::guid).0
            )?;
            writeln!(
                out,
                "Switch\t{} {name}\t\t# \"{}\" {} port 0 lid {} lmc {}",
                n.num_ports(),
                n.desc(),
                if n.enhanced_port0() {
                    "enhanced"
                } else {
                    "base"
                },
                p0.map_or(0, |p| p.lid().0),
                p0.map_or(0, Port::lmc)
            )?;
        } else {
            let (kw, guidkw) = if n.node_type() == NodeType::ROUTER {
                ("Rt", "rtguid")
            } else {
                ("Ca", "caguid")
            };
            writeln!(out, "{guidkw}={:#x}", n.guid().0)?;
            writeln!(out, "{kw}\t{} {name}\t\t# \"{}\"", n.num_ports(), n.desc())?;
        }
        for (p, port) in self.ports(id) {
            let Some(peer) = port.peer() else { continue };
            let Some(pn) = self.node(peer.node) else {
                continue;
            };
            let Some(pp) = self.port(peer) else { continue };
            let peer_lid = if pn.is_switch() {
                self.port(PortRef {
                    node: peer.node,
                    port: PortNum(0),
                })
                .map_or(0, |p| p.lid().0)
            } else {
                pp.lid().0
            };
            let a = port.attrs();
            let rate = format!("{}{}", a.width, a.speed);
            if n.is_switch() {
                write!(out, "[{p}]\t{}[{}]", disc_name(pn), peer.port)?;
                if !pn.is_switch() {
                    write!(out, "({:x}) ", pp.guid().0)?;
                }
                write!(out, "\t\t# \"{}\" lid {peer_lid} {rate}", pn.desc())?;
            } else {
                write!(
                    out,
                    "[{p}]({:x}) \t{}[{}]",
                    port.guid().0,
                    disc_name(pn),
                    peer.port
                )?;
                if !pn.is_switch() {
                    write!(out, " ({:x}) ", pp.guid().0)?;
                }
                write!(
                    out,
                    "\t\t# lid {} lmc {} \"{}\" lid {peer_lid} {rate}",
                    port.lid(),
                    port.lmc(),
                    pn.desc()
                )?;
            }
            if full {
                write!(
                    out,
                    " s={} w={} v={}",
                    a.speed.speed_code(),
                    a.width.code(),
                    a.vl_cap.code()
                )?;
            }
            writeln!(out)?;
        }
        Ok(())
    }
}

/// `"S-0002c90300000000"`: ibnetdiscover's quoted node id.
fn disc_name(n: &Node) -> String {
    let c = match n.node_type() {
        NodeType::SWITCH => 'S',
        NodeType::CA => 'H',
        NodeType::ROUTER => 'R',
        _ => '?',
    };
    format!("\"{c}-{:016x}\"", n.guid().0)
}

/// Port options for attributes that differ from the defaults.
fn write_net_options(out: &mut impl Write, a: LinkAttrs) -> fmt::Result {
    let mut sep = '\t';
    let mut opt = |out: &mut dyn Write, s: fmt::Arguments<'_>| -> fmt::Result {
        write!(out, "{sep}{s}")?;
        sep = ' ';
        Ok(())
    };
    if a.width != LinkWidth::default() {
        opt(out, format_args!("w={}", a.width.code()))?;
    }
    if a.speed != LinkSpeed::default() {
        opt(out, format_args!("s={}", a.speed.speed_code()))?;
        if a.speed.ext_code() != 0 {
            opt(out, format_args!("e={}", a.speed.ext_code()))?;
        }
        if a.speed == LinkSpeed::Fdr10 {
            opt(out, format_args!("fdr10=1"))?;
        }
    }
    if a.mtu != Mtu::default() {
        opt(out, format_args!("mtu={}", a.mtu.code()))?;
    }
    if a.vl_cap != VlCap::default() {
        opt(out, format_args!("vl={}", a.vl_cap.code()))?;
    }
    Ok(())
}

//! One function per diagnostic, with the stock tool's output and a `--json` twin.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser};
use ibmad::attr::modifier;
use ibmad::attr::{
    GuidInfo, LftBlock, NodeDesc, NodeInfo, PKeyTable, PortInfo, SlToVl, SmInfo, SwitchInfo,
    VlArbTable,
};
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{DrPath, Lid, NodeType, PortNum, SmpAttrId};
use serde_json::{json, Value};

use super::client::{Addr, Client, ClientConfig, Req, SmpError};
use super::fields::{self, Fields};
use super::port::{self, DiagPort, TransportSpec};
use super::scan::Scan;

/// Options every diagnostic takes (the diags' common options, plus `--transport`).
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Where SMPs go: umad[:CA[:PORT]] | vfio:BDF | vfio-user:SOCKET | sim:TOPOLOGY
    #[arg(long, short = 'T', default_value = "umad", value_name = "SPEC")]
    pub transport: String,
    /// CA name to use (umad; as the diags' -C)
    #[arg(long = "Ca", short = 'C')]
    pub ca: Option<String>,
    /// CA port number to use (umad; as the diags' -P)
    #[arg(long = "Port", short = 'P')]
    pub port: Option<u8>,
    /// Address destinations by directed route (`0,1,3`)
    #[arg(long = "Direct", short = 'D')]
    pub direct: bool,
    /// Address destinations by LID (the default)
    #[arg(long = "Lid", short = 'L')]
    pub lid: bool,
    /// Address destinations by port GUID
    #[arg(long = "Guid", short = 'G')]
    pub guid: bool,
    /// Time to wait for one response, in ms
    #[arg(long, short = 't', default_value_t = 200)]
    pub timeout: u64,
    /// M_Key to put in requests
    #[arg(long = "m_key", short = 'y', default_value = "0", value_parser = parse_u64)]
    pub m_key: u64,
    /// Show keys (M_Key) in the output
    #[arg(long = "show_keys", short = 'K')]
    pub show_keys: bool,
    /// Print JSON instead of the stock tool's text
    #[arg(long)]
    pub json: bool,
}

fn parse_num(s: &str) -> Result<u64, DiagError> {
    parse_u64(s).map_err(DiagError::bad)
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("{s:?} is not a number (decimal or 0x-hex)"))
}

/// A failure with the message the user sees and the exit status it gives: 1 when the fabric
/// did not answer as asked, 2 for bad usage or input (ibsm's convention).
#[derive(Debug)]
pub struct DiagError(pub String, pub u8);

impl DiagError {
    /// Bad usage or input (exit status 2).
    pub(crate) fn bad(msg: impl Into<String>) -> DiagError {
        DiagError(msg.into(), 2)
    }
}

impl From<SmpError> for DiagError {
    fn from(e: SmpError) -> Self {
        DiagError(e.to_string(), 1)
    }
}
impl From<String> for DiagError {
    fn from(e: String) -> Self {
        DiagError(e, 1)
    }
}
impl From<&str> for DiagError {
    fn from(e: &str) -> Self {
        DiagError(e.to_string(), 1)
    }
}
impl From<port::OpenError> for DiagError {
    fn from(e: port::OpenError) -> Self {
        match e {
            port::OpenError::BadInput(m) => DiagError(m, 2),
            port::OpenError::Failed(m) => DiagError(m, 1),
        }
    }
}

type R<T> = Result<T, DiagError>;

/// An open session: the transport and the requester options.
pub struct Session {
    port: Box<dyn DiagPort>,
    cfg: ClientConfig,
    common: Common,
    local_lid: Lid,
}

impl Session {
    /// Opens `common.transport` (with `-C`/`-P` folded into a umad spec).
    ///
    /// # Errors
    /// The transport did not open.
    pub fn open(common: &Common, window: usize) -> R<Session> {
        let mut spec = TransportSpec::parse(&common.transport).map_err(DiagError::bad)?;
        if let TransportSpec::Umad { ca, port } = &mut spec {
            if common.ca.is_some() {
                ca.clone_from(&common.ca);
            }
            if common.port.is_some() {
                *port = common.port;
            }
        }
        let port = port::open(&spec)?;
        let cfg = ClientConfig {
            timeout: Duration::from_millis(common.timeout.max(1)),
            window,
            m_key: common.m_key,
            ..ClientConfig::default()
        };
        let mut s = Session {
            port,
            cfg,
            common: common.clone(),
            local_lid: Lid::UNASSIGNED,
        };
        // The local port's LID is the SLID of LID-routed requests.
        let local = s
            .client()
            .get(Addr::Dr(DrPath::local()), SmpAttrId::PORT_INFO, 0);
        if let Ok(d) = local {
            s.local_lid = pi(&d).lid();
        }
        Ok(s)
    }

    /// A requester.
    pub fn client(&mut self) -> Client<'_> {
        let mut c = Client::new(self.port.as_mut(), self.cfg);
        c.local_lid = self.local_lid;
        c
    }

    /// Resolves a destination argument as the diags do (`-D` path, `-G` GUID, else LID).
    ///
    /// # Errors
    /// The text does not parse, or a GUID is not in the fabric.
    pub fn resolve(&mut self, text: &str) -> R<Addr> {
        if self.common.direct {
            return DrPath::parse(text)
                .map(Addr::Dr)
                .map_err(|e| DiagError::bad(e.to_string()));
        }
        if self.common.guid {
            let g = parse_num(text)?;
            let scan = Scan::run(&mut self.client(), 0)?;
            for n in &scan.nodes {
                let hit = n.ports.iter().any(|p| p.guid.0 == g) || n.guid().0 == g;
                if hit {
                    return Ok(Addr::Dr(n.path));
                }
            }
            return Err(DiagError::bad(format!(
                "GUID {text} not found in the fabric"
            )));
        }
        parse_lid(text).map(Addr::Lid)
    }

    /// The local port's LID (0 if it has none).
    pub(crate) fn local_lid(&self) -> Lid {
        self.local_lid
    }

    /// The response timeout (`-t`).
    pub(crate) fn timeout(&self) -> Duration {
        self.cfg.timeout
    }

    /// The transport.
    pub(crate) fn port_mut(&mut self) -> &mut dyn DiagPort {
        self.port.as_mut()
    }

    pub(crate) fn get(&mut self, addr: Addr, attr: SmpAttrId, am: u32) -> R<[u8; 64]> {
        self.client().get(addr, attr, am).map_err(|e| {
            DiagError(
                format!("{attr:?} query via {} failed: {e}", addr.describe()),
                1,
            )
        })
    }
}

pub(crate) fn ni(d: &[u8; 64]) -> NodeInfo {
    NodeInfo::read_from_bytes(&d[..size_of::<NodeInfo>()])
        .unwrap_or_else(|_| NodeInfo::new_zeroed())
}
pub(crate) fn pi(d: &[u8; 64]) -> PortInfo {
    PortInfo::read_from_bytes(&d[..]).unwrap_or_else(|_| PortInfo::new_zeroed())
}
fn si(d: &[u8; 64]) -> SwitchInfo {
    SwitchInfo::read_from_bytes(&d[..]).unwrap_or_else(|_| SwitchInfo::new_zeroed())
}
fn nd(d: &[u8; 64]) -> String {
    NodeDesc::read_from_bytes(&d[..]).map_or_else(|_| String::new(), |n| n.as_string())
}

use ibmad::zerocopy::FromZeros;

/// A unicast LID argument.
pub(crate) fn parse_lid(text: &str) -> R<Lid> {
    let v = parse_num(text)?;
    match u16::try_from(v) {
        Ok(l) if l != 0 && Lid(l).is_unicast() => Ok(Lid(l)),
        _ => Err(DiagError::bad(format!(
            "{text:?} is not a unicast LID (1..=0xbfff); use -D for a directed route"
        ))),
    }
}

pub(crate) fn print(common: &Common, text: &str, json: Value) {
    if common.json {
        let mut t = serde_json::to_string_pretty(&json).unwrap_or_else(|_| "null".into());
        t.push('\n');
        out(&t);
    } else {
        out(text);
    }
}

/// Writes `text` to stdout. A reader that went away (`ibsm discover | head`) ends the output
/// quietly, as the C diags end on SIGPIPE, instead of `print!`'s panic.
pub(crate) fn out(text: &str) {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("ibsm: stdout: {e}");
        }
    }
}

/// Entry point: `cmd` is the subcommand name, `args` what follows it.
pub fn main(cmd: &str, args: &[String]) -> ExitCode {
    let argv = std::iter::once(format!("ibsm {cmd}")).chain(args.iter().cloned());
    let r = match cmd {
        "discover" => parse::<DiscoverArgs>(argv).map(|a| discover(&a)),
        "query" => parse::<QueryArgs>(argv).map(|a| query(&a)),
        "route" => parse::<RouteArgs>(argv).map(|a| route(&a)),
        "dump-fts" => parse::<DumpFtsArgs>(argv).map(|a| dump_fts(&a)),
        "links" => parse::<LinksArgs>(argv).map(|a| links(&a)),
        "trace" => parse::<TraceArgs>(argv).map(|a| trace(&a)),
        "portstate" => parse::<PortStateArgs>(argv).map(|a| portstate(&a)),
        "counters" => {
            parse::<super::counters::CountersArgs>(argv).map(|a| super::counters::counters(&a))
        }
        "stat" => parse::<super::stat::StatArgs>(argv).map(|a| super::stat::stat(&a)),
        other => {
            eprintln!("ibsm: unknown diagnostic {other:?}");
            return ExitCode::from(2);
        }
    };
    match r {
        Err(code) => code,
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(DiagError(msg, code))) => {
            eprintln!("ibsm {cmd}: {msg}");
            ExitCode::from(code)
        }
    }
}

/// `argv` (the command's name first) parsed by clap; on `--help` or an error, clap's text is
/// printed and the exit status is 0 (help) or 2 (bad usage).
pub fn parse<T: Parser>(argv: impl Iterator<Item = String>) -> Result<T, ExitCode> {
    T::try_parse_from(argv).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        }
    })
}

// ----- discover ------------------------------------------------------------------------------

/// `ibsm discover`: the fabric in ibnetdiscover's topology format.
#[derive(Parser, Debug)]
#[command(about = "Discover the fabric (ibnetdiscover's format; --json, --dot)")]
pub struct DiscoverArgs {
    #[command(flatten)]
    common: Common,
    /// Graphviz instead: switches and CAs, links labelled with width and speed
    #[arg(long, conflicts_with = "json")]
    dot: bool,
    /// With --dot: label each switch link with the number of LIDs the switch forwards out of it
    #[arg(long, requires = "dot")]
    routes: bool,
    /// Stop this many hops from the local port (0 = the whole fabric)
    #[arg(long, default_value_t = 0)]
    hops: usize,
    /// SMPs in flight at once
    #[arg(long, short = 'o', default_value_t = 32)]
    outstanding_smps: usize,
}

/// ibnetdiscover's header date: ctime(3) layout, in UTC.
fn ctime_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = crate::daemon::civil(days as i64);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {y}",
        WD[(days % 7) as usize],
        MO[(m - 1) as usize],
        d,
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

fn type_name(t: u8) -> &'static str {
    match NodeType(t) {
        NodeType::SWITCH => "Switch",
        NodeType::CA => "CA",
        NodeType::ROUTER => "Router",
        _ => "??",
    }
}

fn scan_json(scan: &Scan) -> Value {
    let nodes: Vec<Value> = scan
        .print_order()
        .into_iter()
        .map(|i| {
            let n = &scan.nodes[i];
            let ports: Vec<Value> = (1..=n.info.num_ports)
                .filter_map(|p| {
                    let port = &n.ports[usize::from(p)];
                    let info = port.info?;
                    let remote = port.remote.map(|(rn, rp)| {
                        let r = &scan.nodes[rn];
                        json!({
                            "guid": format!("{:#018x}", r.guid().0),
                            "port": rp,
                            "port_guid": format!("{:#018x}", r.ports[usize::from(rp)].guid.0),
                            "lid": r.lid(rp).0,
                            "desc": r.desc,
                        })
                    });
                    Some(json!({
                        "port": p,
                        "guid": format!("{:#018x}", port.guid.0),
                        "lid": n.lid(p).0,
                        "lmc": n.lmc(p),
                        "state": fields::port_state(info.port_state_raw()),
                        "phys_state": fields::phys_state(info.phys_state_raw()),
                        "width": fields::link_width(info.link_width_active),
                        "speed": fields::link_speed(info.link_speed_active()),
                        "speed_ext": fields::link_speed_ext(info.link_speed_ext_active()),
                        "remote": remote,
                    }))
                })
                .collect();
            json!({
                "type": type_name(n.info.node_type),
                "guid": format!("{:#018x}", n.guid().0),
                "sysimgguid": format!("{:#018x}", n.info.system_image_guid().0),
                "vendid": format!("{:#x}", n.info.vendor_id()),
                "devid": format!("{:#x}", n.info.device_id.get()),
                "desc": n.desc,
                "num_ports": n.info.num_ports,
                "lid": n.lid(n.info.local_port_num).0,
                "dr_path": n.path.to_string(),
                "ports": ports,
            })
        })
        .collect();
    json!({ "nodes": nodes, "failures": scan.failures })
}

/// Reads every switch's LFT (up to LinearFDBTop) by directed route; node index → table.
fn read_lfts(c: &mut Client<'_>, scan: &Scan) -> HashMap<usize, Vec<u8>> {
    let mut reqs = Vec::new();
    for (i, n) in scan.nodes.iter().enumerate() {
        let Some(sw) = n.switch_info else { continue };
        let top = sw.linear_fdb_top.get();
        for b in 0..=u32::from(top) / 64 {
            reqs.push((Req::get(Addr::Dr(n.path), SmpAttrId::LINEAR_FT, b), (i, b)));
        }
    }
    let mut out: HashMap<usize, Vec<u8>> = HashMap::new();
    let _ = c.run(reqs, |(i, b), _, r, _| {
        let t = out.entry(i).or_default();
        let start = b as usize * 64;
        if t.len() < start + 64 {
            t.resize(start + 64, 0xff);
        }
        if let Ok(d) = r {
            t[start..start + 64].copy_from_slice(&d);
        }
    });
    out
}

fn dot(scan: &Scan, routes: Option<&HashMap<usize, Vec<u8>>>) -> String {
    let mut s = String::from("graph fabric {\n  graph [overlap=false, splines=true];\n");
    for (i, n) in scan.nodes.iter().enumerate() {
        let shape = if n.is_switch() { "box" } else { "ellipse" };
        let label = format!(
            "{}\\n{:#018x}\\nlid {}",
            n.desc.replace('"', "'"),
            n.guid().0,
            n.lid(n.info.local_port_num).0
        );
        let _ = writeln!(s, "  n{i} [shape={shape}, label=\"{label}\"];");
    }
    let count = |node: usize, port: u8| -> Option<usize> {
        let t = routes?.get(&node)?;
        Some(t.iter().skip(1).filter(|&&p| p == port).count())
    };
    for (i, n) in scan.nodes.iter().enumerate() {
        for (p, port) in n.ports.iter().enumerate().skip(1) {
            let Some((rn, rp)) = port.remote else {
                continue;
            };
            let p = p as u8;
            if (rn, rp) < (i, p) {
                continue;
            }
            let Some(info) = port.info else { continue };
            let speed = if info.link_speed_ext_active() != 0 {
                fields::link_speed_ext(info.link_speed_ext_active())
            } else {
                fields::link_speed(info.link_speed_active())
            };
            let mut label = format!("{} {speed}", fields::link_width(info.link_width_active));
            let here = count(i, p);
            let there = count(rn, rp);
            if routes.is_some() {
                let _ = write!(
                    label,
                    "\\nroutes {}/{}",
                    here.map_or("-".into(), |v| v.to_string()),
                    there.map_or("-".into(), |v| v.to_string())
                );
            }
            let _ = writeln!(
                s,
                "  n{i} -- n{rn} [taillabel=\"{p}\", headlabel=\"{rp}\", label=\"{label}\"];"
            );
        }
    }
    s.push_str("}\n");
    s
}

fn discover(a: &DiscoverArgs) -> R<()> {
    let mut s = Session::open(&a.common, a.outstanding_smps)?;
    let scan = Scan::run(&mut s.client(), a.hops)?;
    for f in &scan.failures {
        eprintln!("ibsm discover: warning: {f}");
    }
    if scan.nodes.is_empty() {
        return Err("discover failed: the local node did not answer".into());
    }
    if a.dot {
        let lfts = a.routes.then(|| read_lfts(&mut s.client(), &scan));
        out(&dot(&scan, lfts.as_ref()));
        return Ok(());
    }
    let text = sm::dump::ibnetdiscover_with_header(&scan.to_subnet(), Some(&ctime_now()));
    print(&a.common, &text, scan_json(&scan));
    Ok(())
}

// ----- query ---------------------------------------------------------------------------------

/// `ibsm query`: one attribute in smpquery's format.
#[derive(Parser, Debug)]
#[command(about = "Query an attribute (smpquery's format; sminfo as the sminfo tool)")]
pub struct QueryArgs {
    #[command(flatten)]
    common: Common,
    /// nodeinfo|nodedesc|portinfo|switchinfo|pkeys|guids|sl2vl|vlarb|sminfo (or NI, ND, PI, SI, GI)
    op: String,
    /// Destination: LID (default), DR path with -D, port GUID with -G; sminfo: default the SM
    dest: Option<String>,
    /// Port number (portinfo, pkeys, sl2vl, vlarb)
    #[arg(id = "portnum", value_name = "PORT")]
    port: Option<String>,
}

fn query(a: &QueryArgs) -> R<()> {
    let op = a.op.to_ascii_lowercase();
    let op = match op.as_str() {
        "ni" | "nodeinfo" => "nodeinfo",
        "nd" | "nodedesc" => "nodedesc",
        "pi" | "portinfo" => "portinfo",
        "si" | "switchinfo" => "switchinfo",
        "pkeys" | "pkeytable" => "pkeys",
        "gi" | "guids" | "guidinfo" => "guids",
        "sl2vl" | "sl2vltable" => "sl2vl",
        "vlarb" | "vlarbitration" => "vlarb",
        "sminfo" => "sminfo",
        other => {
            return Err(DiagError::bad(format!(
                "unknown query {other:?} (nodeinfo, nodedesc, portinfo, switchinfo, pkeys, \
                 guids, sl2vl, vlarb, sminfo)"
            )))
        }
    };
    let port: u32 = match &a.port {
        None => 0,
        Some(p) => u32::try_from(parse_num(p)?)
            .ok()
            .filter(|&v| v <= 255)
            .ok_or_else(|| DiagError::bad(format!("port {p:?} is not 0..=255")))?,
    };
    let mut s = Session::open(&a.common, 8)?;
    if op == "sminfo" {
        return sminfo(&mut s, a);
    }
    let Some(dest) = &a.dest else {
        return Err(DiagError::bad(format!("query {op}: missing destination")));
    };
    let addr = s.resolve(dest)?;
    let who = addr.describe();
    let (text, js) = match op {
        "nodeinfo" => {
            let f = fields::node_info(&ni(&s.get(addr, SmpAttrId::NODE_INFO, 0)?));
            (format!("# Node info: {who}\n{}", f.text()), f.json())
        }
        "nodedesc" => {
            s.get(addr, SmpAttrId::NODE_INFO, 0)?;
            let d = nd(&s.get(addr, SmpAttrId::NODE_DESC, 0)?);
            let dots = if d.len() < 32 { 32 - d.len() } else { 1 };
            (
                format!("Node Description:{}{d}\n", ".".repeat(dots)),
                json!({ "NodeDesc": d }),
            )
        }
        "portinfo" => {
            let f = fields::port_info(
                &pi(&s.get(addr, SmpAttrId::PORT_INFO, port)?),
                a.common.show_keys,
            );
            (
                format!("# Port info: {who} port {port}\n{}", f.text()),
                f.json(),
            )
        }
        "switchinfo" => {
            let f = fields::switch_info(&si(&s.get(addr, SmpAttrId::SWITCH_INFO, 0)?));
            (format!("# Switch info: {who}\n{}", f.text()), f.json())
        }
        "pkeys" => pkeys(&mut s, addr, port)?,
        "guids" => guids(&mut s, addr)?,
        "sl2vl" => sl2vl(&mut s, addr, port)?,
        _ => vlarb(&mut s, addr, port)?,
    };
    print(&a.common, &text, js);
    Ok(())
}

/// A port number the query checked to be 0..=255.
fn port_num(p: u32) -> PortNum {
    PortNum(u8::try_from(p).unwrap_or(u8::MAX))
}

fn pkeys(s: &mut Session, addr: Addr, port: u32) -> R<(String, Value)> {
    let n = ni(&s.get(addr, SmpAttrId::NODE_INFO, 0)?);
    if port > u32::from(n.num_ports) {
        return Err("invalid port number".into());
    }
    let cap = if n.node_type == NodeType::SWITCH.0 && port != 0 {
        si(&s.get(addr, SmpAttrId::SWITCH_INFO, 0)?)
            .partition_enforcement_cap
            .get()
    } else {
        n.partition_cap.get()
    };
    let cap = usize::from(cap);
    let blocks = cap.div_ceil(32);
    let mut text = String::new();
    let mut all = Vec::new();
    for b in 0..blocks {
        let m = modifier::pkey(port_num(port), b as u16);
        let d = s.get(addr, SmpAttrId::P_KEY_TABLE, m)?;
        let t = PKeyTable::read_from_bytes(&d[..]).map_err(|_| "short P_KeyTable")?;
        let k = if b + 1 == blocks {
            ((cap + 7 - b * 32) / 8) * 8
        } else {
            32
        };
        for j in (0..k.min(32)).step_by(8) {
            let _ = write!(text, "{:4}:", b * 32 + j);
            for i in 0..8 {
                let v = t.pkeys.get(j + i).map_or(0, |p| p.get());
                let _ = write!(text, " 0x{v:04x}");
                all.push(v);
            }
            text.push('\n');
        }
    }
    let _ = writeln!(text, "{cap} pkeys capacity for this port");
    Ok((text, json!({ "pkeys": all, "capacity": cap })))
}

fn guids(s: &mut Session, addr: Addr) -> R<(String, Value)> {
    let cap = usize::from(pi(&s.get(addr, SmpAttrId::PORT_INFO, 0)?).guid_cap);
    let blocks = cap.div_ceil(8);
    let mut text = String::new();
    let mut all = Vec::new();
    for b in 0..blocks {
        let d = s.get(addr, SmpAttrId::GUID_INFO, b as u32)?;
        let t = GuidInfo::read_from_bytes(&d[..]).map_err(|_| "short GUIDInfo")?;
        let k = if b + 1 == blocks {
            ((cap + 1 - b * 8) / 2) * 2
        } else {
            8
        };
        for j in (0..k.min(8)).step_by(2) {
            let g0 = t.guids[j].get();
            let g1 = t.guids.get(j + 1).map_or(0, |g| g.get());
            let _ = writeln!(text, "{:4}: 0x{g0:016x} 0x{g1:016x}", b * 8 + j);
            all.push(format!("{g0:#018x}"));
            all.push(format!("{g1:#018x}"));
        }
    }
    let _ = writeln!(text, "{cap} guids capacity for this port");
    Ok((text, json!({ "guids": all, "capacity": cap })))
}

fn sl2vl(s: &mut Session, addr: Addr, port: u32) -> R<(String, Value)> {
    let n = ni(&s.get(addr, SmpAttrId::NODE_INFO, 0)?);
    if port > u32::from(n.num_ports) {
        return Err("invalid port number".into());
    }
    let mut text = format!(
        "# SL2VL table: {}\n#                 SL: |",
        addr.describe()
    );
    for i in 0..16 {
        let _ = write!(text, "{i:2}|");
    }
    text.push('\n');
    let ins: Vec<u32> = if n.node_type == NodeType::SWITCH.0 {
        (0..=u32::from(n.num_ports)).collect()
    } else {
        vec![0]
    };
    let out = if n.node_type == NodeType::SWITCH.0 {
        port
    } else {
        0
    };
    let mut rows = Vec::new();
    for i in ins {
        let m = modifier::sl2vl(port_num(i), port_num(out));
        let d = s.get(addr, SmpAttrId::SL_TO_VL_TABLE, m)?;
        let t = SlToVl::read_from_bytes(&d[..8]).map_err(|_| "short SLtoVL")?;
        let _ = write!(text, "ports: in {i:2}, out {out:2}: |");
        let vls: Vec<u8> = (0..16).map(|sl| t.vl(sl).unwrap_or(0)).collect();
        for v in &vls {
            let _ = write!(text, "{v:2}|");
        }
        text.push('\n');
        rows.push(json!({ "in": i, "out": out, "vl": vls }));
    }
    Ok((text, json!({ "sl2vl": rows })))
}

fn vlarb(s: &mut Session, addr: Addr, port: u32) -> R<(String, Value)> {
    let who = addr.describe();
    if port == 0 {
        let n = ni(&s.get(addr, SmpAttrId::NODE_INFO, 0)?);
        if n.node_type == NodeType::SWITCH.0
            && !si(&s.get(addr, SmpAttrId::SWITCH_INFO, 0)?).enhanced_port0() != 0
        {
            return Ok((
                format!("# No VLArbitration tables (BSP0): {who} port 0\n"),
                json!({ "low": [], "high": [] }),
            ));
        }
    }
    let p = pi(&s.get(addr, SmpAttrId::PORT_INFO, port)?);
    let (low, high) = (
        usize::from(p.vl_arb_low_cap),
        usize::from(p.vl_arb_high_cap),
    );
    let mut text =
        format!("# VLArbitration tables: {who} port {port} LowCap {low} HighCap {high}\n");
    let mut js = serde_json::Map::new();
    for (name, key, block, cap) in [("Low", "low", 1u8, low), ("High", "high", 3u8, high)] {
        if cap == 0 {
            continue;
        }
        let _ = write!(text, "# {name} priority VL Arbitration Table:");
        let mut entries = Vec::new();
        for (k, n) in [(0u8, cap.min(32)), (1, cap.saturating_sub(32))] {
            if n == 0 {
                continue;
            }
            let m = modifier::vlarb(port_num(port), block + k);
            let d = s.get(addr, SmpAttrId::VL_ARB_TABLE, m)?;
            let t = VlArbTable::read_from_bytes(&d[..]).map_err(|_| "short VLArbitration")?;
            let e = &t.entries[..n.min(32)];
            text.push_str("\nVL    : |");
            for x in e {
                let _ = write!(text, "0x{:<2X}|", x.vl & 0x0f);
            }
            text.push_str("\nWEIGHT: |");
            for x in e {
                let _ = write!(text, "0x{:<2X}|", x.weight);
            }
            text.push('\n');
            entries.extend(
                e.iter()
                    .map(|x| json!({ "vl": x.vl & 0x0f, "weight": x.weight })),
            );
        }
        js.insert(key.into(), Value::from(entries));
    }
    Ok((text, Value::Object(js)))
}

fn sminfo(s: &mut Session, a: &QueryArgs) -> R<()> {
    let addr = match &a.dest {
        Some(d) => s.resolve(d)?,
        None => {
            let local = pi(&s.get(Addr::Dr(DrPath::local()), SmpAttrId::PORT_INFO, 0)?);
            let sm = local.master_sm_lid();
            if sm == Lid::UNASSIGNED {
                return Err("can't resolve sm port: the local port knows no SM LID".into());
            }
            Addr::Lid(sm)
        }
    };
    let d = s.get(addr, SmpAttrId::SM_INFO, 0)?;
    let sm = SmInfo::read_from_bytes(&d[..size_of::<SmInfo>()]).map_err(|_| "short SMInfo")?;
    let state = sm.sm_state_raw();
    const STATES: [&str; 4] = [
        "SMINFO_NOTACT",
        "SMINFO_DISCOVER",
        "SMINFO_STANDBY",
        "SMINFO_MASTER",
    ];
    let lid = match addr {
        Addr::Lid(l) => l.0,
        Addr::Dr(_) => 0,
    };
    let text = format!(
        "sminfo: sm lid {lid} sm guid 0x{:x}, activity count {} priority {} state {state} {}\n",
        sm.guid.get(),
        sm.act_count.get(),
        sm.priority(),
        STATES.get(usize::from(state)).unwrap_or(&"UNKNOWN")
    );
    let js = json!({
        "sm_lid": lid,
        "sm_guid": format!("{:#018x}", sm.guid.get()),
        "activity_count": sm.act_count.get(),
        "priority": sm.priority(),
        "state": state,
        "state_name": STATES.get(usize::from(state)).unwrap_or(&"UNKNOWN"),
    });
    print(&a.common, &text, js);
    Ok(())
}

// ----- route / dump-fts -----------------------------------------------------------------------

/// `ibsm route`: one switch's unicast LFT in ibroute's format.
#[derive(Parser, Debug)]
#[command(about = "Dump a switch's unicast forwarding table (ibroute's format)")]
pub struct RouteArgs {
    #[command(flatten)]
    common: Common,
    /// Show all LIDs, also those without a valid port
    #[arg(long, short = 'a')]
    all: bool,
    /// Brief: no destination information
    #[arg(long, short = 'n')]
    no_dests: bool,
    /// The switch: LID (default), DR path with -D, port GUID with -G
    dest: String,
    /// First LID (default 0)
    start: Option<String>,
    /// Last LID (default LinearFDBTop)
    end: Option<String>,
}

/// Destination text of one LFT entry (`dump_lid`): `: (Switch portguid 0x…: 'desc')`, with
/// LMC ranges as `(path #N out of M…)`.
struct LidNamer {
    base: u32,
    last: u32,
    guid: u64,
}

impl LidNamer {
    fn new() -> LidNamer {
        LidNamer {
            base: 0,
            last: 0,
            guid: 0,
        }
    }

    /// `info`: (node type, port guid, base lid, lmc, desc) of the port at `lid`, if known.
    fn name(
        &mut self,
        lid: u32,
        valid: bool,
        info: Option<(u8, u64, u32, u8, &str)>,
        unknown: &str,
    ) -> String {
        if lid <= self.last {
            if !valid {
                return format!(": (path #{} - illegal port)", lid - self.base);
            }
            if self.guid == 0 {
                return format!(
                    ": (path #{} out of {})",
                    lid - self.base + 1,
                    self.last - self.base + 1
                );
            }
            return format!(
                ": (path #{} out of {}: portguid 0x{:016x})",
                lid - self.base + 1,
                self.last - self.base + 1,
                self.guid
            );
        }
        if !valid {
            return ": (illegal port)".into();
        }
        self.guid = 0;
        let Some((t, guid, base, lmc, desc)) = info else {
            return unknown.into();
        };
        self.guid = guid;
        if lmc > 0 {
            self.base = base;
            self.last = base + (1 << lmc) - 1;
        }
        format!(
            ": ({} portguid 0x{guid:016x}: '{desc}')",
            fields::node_type(t)
        )
    }
}

fn lft_header(who: &str, start: u32, end: u32, guid: u64, desc: &str) -> String {
    format!(
        "Unicast lids [0x{start:x}-0x{end:x}] of switch {who} guid 0x{guid:016x} ({desc}):\n  Lid  Out   Destination\n       Port     Info \n"
    )
}

fn route(a: &RouteArgs) -> R<()> {
    let mut s = Session::open(&a.common, 32)?;
    let addr = s.resolve(&a.dest)?;
    let n = ni(&s.get(addr, SmpAttrId::NODE_INFO, 0)?);
    if n.node_type != NodeType::SWITCH.0 {
        return Err(format!("{} is not a switch", addr.describe()).into());
    }
    let desc = nd(&s.get(addr, SmpAttrId::NODE_DESC, 0)?);
    let sw = si(&s.get(addr, SmpAttrId::SWITCH_INFO, 0)?);
    let top = u32::from(sw.linear_fdb_top.get());
    let start = match &a.start {
        Some(v) => {
            u32::try_from(parse_num(v)?).map_err(|_| DiagError::bad("start LID out of range"))?
        }
        None => 0,
    };
    let mut end = match &a.end {
        Some(v) => {
            u32::try_from(parse_num(v)?).map_err(|_| DiagError::bad("end LID out of range"))?
        }
        None => 0,
    };
    if end == 0 || end > top {
        end = top;
    }
    end = end.min(0xbfff);
    let mut text = lft_header(&addr.describe(), start, end, n.node_guid().0, &desc);
    // The table: blocks 0 ..= top / 64 (IBA vol1 §14.2.5.10), since LinearFDBTop (§14.2.5.4)
    // is the highest valid LID. Where it is a multiple of 64 it is alone in the last block,
    // which infiniband-diags' ibroute and dump_fts do not read.
    let mut reqs = Vec::new();
    for b in start / 64..=end / 64 {
        reqs.push((Req::get(addr, SmpAttrId::LINEAR_FT, b), b));
    }
    let mut lft = vec![0xffu8; (end as usize / 64 + 1) * 64];
    let mut failed = None;
    s.client().run(reqs, |b, _, r, _| match r {
        Ok(d) => {
            let o = b as usize * 64;
            if let Some(t) = lft.get_mut(o..o + 64) {
                t.copy_from_slice(&d);
            }
        }
        Err(e) => {
            failed = failed
                .take()
                .or(Some(format!("SubnGet() failed; {e} AM 0x{b:x}")))
        }
    })?;
    if let Some(f) = failed {
        eprintln!("{f}");
    }
    let lids: Vec<u32> = (start..=end)
        .filter(|&l| a.all || lft[l as usize] <= n.num_ports)
        .collect();
    // The destinations: NodeDesc, PortInfo and NodeInfo of each LID (LID-routed).
    let mut info: HashMap<u32, (u8, u64, u32, u8, String)> = HashMap::new();
    if !a.no_dests {
        let mut got: HashMap<u32, [Option<[u8; 64]>; 3]> = HashMap::new();
        let mut reqs = Vec::new();
        for &l in lids
            .iter()
            .filter(|&&l| lft[l as usize] <= n.num_ports && l != 0)
        {
            let la = Addr::Lid(Lid(l as u16));
            reqs.push((Req::get(la, SmpAttrId::NODE_DESC, 0), (l, 0)));
            reqs.push((Req::get(la, SmpAttrId::PORT_INFO, 0), (l, 1)));
            reqs.push((Req::get(la, SmpAttrId::NODE_INFO, 0), (l, 2)));
        }
        s.client().run(reqs, |(l, k), _, r, _| {
            if let Ok(d) = r {
                got.entry(l).or_default()[k] = Some(d);
            }
        })?;
        for (l, [d, p, i]) in got {
            if let (Some(d), Some(p), Some(i)) = (d, p, i) {
                let (ni, pi) = (ni(&i), pi(&p));
                info.insert(
                    l,
                    (
                        ni.node_type,
                        ni.port_guid().0,
                        pi.lid().0.into(),
                        pi.lmc(),
                        nd(&d),
                    ),
                );
            }
        }
    }
    let mut namer = LidNamer::new();
    let mut entries = Vec::new();
    for &l in &lids {
        let out = lft[l as usize];
        let valid = out <= n.num_ports;
        let dest = if a.no_dests {
            String::new()
        } else {
            namer.name(
                l,
                valid,
                info.get(&l)
                    .map(|(t, g, b, m, d)| (*t, *g, *b, *m, d.as_str())),
                ": (unknown node and type)",
            )
        };
        let _ = writeln!(text, "0x{l:04x} {out:03} {dest}");
        entries.push(json!({ "lid": l, "port": out, "dest": dest.trim_start_matches(": ") }));
    }
    let _ = writeln!(
        text,
        "{} {}lids dumped ",
        lids.len(),
        if a.all { "" } else { "valid " }
    );
    let js = json!({
        "switch": { "guid": format!("{:#018x}", n.node_guid().0), "desc": desc, "addr": addr.describe() },
        "start": start, "end": end, "entries": entries,
    });
    print(&a.common, &text, js);
    Ok(())
}

/// `ibsm dump-fts`: every switch's LFT, found by a scan (dump_fts' format).
#[derive(Parser, Debug)]
#[command(about = "Dump every switch's unicast forwarding table (dump_fts' format)")]
pub struct DumpFtsArgs {
    #[command(flatten)]
    common: Common,
    /// Show all LIDs, also those without a valid port
    #[arg(long, short = 'a')]
    all: bool,
    /// Brief: no destination information
    #[arg(long, short = 'n')]
    no_dests: bool,
    /// SMPs in flight at once
    #[arg(long, short = 'o', default_value_t = 32)]
    outstanding_smps: usize,
    /// First LID (default 0)
    start: Option<String>,
    /// Last LID (default LinearFDBTop)
    end: Option<String>,
}

fn dump_fts(a: &DumpFtsArgs) -> R<()> {
    let mut s = Session::open(&a.common, a.outstanding_smps)?;
    let scan = Scan::run(&mut s.client(), 0)?;
    for f in &scan.failures {
        eprintln!("ibsm dump-fts: warning: {f}");
    }
    let lfts = read_lfts(&mut s.client(), &scan);
    let start = match &a.start {
        Some(v) => {
            u32::try_from(parse_num(v)?).map_err(|_| DiagError::bad("start LID out of range"))?
        }
        None => 0,
    };
    let end_arg = match &a.end {
        Some(v) => {
            u32::try_from(parse_num(v)?).map_err(|_| DiagError::bad("end LID out of range"))?
        }
        None => 0,
    };
    let mut text = String::new();
    let mut switches = Vec::new();
    for i in scan.print_order() {
        let n = &scan.nodes[i];
        let Some(sw) = n.switch_info else { continue };
        let top = u32::from(sw.linear_fdb_top.get());
        let end = if end_arg == 0 || end_arg > top {
            top
        } else {
            end_arg
        }
        .min(0xbfff);
        let who = format!("DR path slid 0; dlid 0; {}", n.path);
        text.push_str(&lft_header(&who, start, end, n.guid().0, &n.desc));
        let empty = Vec::new();
        let t = lfts.get(&i).unwrap_or(&empty);
        let mut namer = LidNamer::new();
        let mut count = 0;
        let mut entries = Vec::new();
        for l in start..=end {
            let out = t.get(l as usize).copied().unwrap_or(0xff);
            let valid = out <= n.info.num_ports;
            if !valid && !a.all {
                continue;
            }
            let dest = if a.no_dests {
                String::new()
            } else {
                let info = scan.port_by_lid(Lid(l as u16)).map(|(di, dp)| {
                    let d = &scan.nodes[di];
                    let pg = d.ports[usize::from(dp)].guid.0;
                    (
                        d.info.node_type,
                        pg,
                        u32::from(d.lid(dp).0),
                        d.lmc(dp),
                        d.desc.as_str(),
                    )
                });
                namer.name(l, valid, info, ": (node info not available fabric scan)")
            };
            let _ = writeln!(text, "0x{l:04x} {out:03} {dest}");
            entries.push(json!({ "lid": l, "port": out, "dest": dest.trim_start_matches(": ") }));
            count += 1;
        }
        let _ = writeln!(
            text,
            "{count} {}lids dumped ",
            if a.all { "" } else { "valid " }
        );
        switches.push(json!({
            "guid": format!("{:#018x}", n.guid().0), "desc": n.desc,
            "dr_path": n.path.to_string(), "entries": entries,
        }));
    }
    print(&a.common, &text, json!({ "switches": switches }));
    Ok(())
}

// ----- links --------------------------------------------------------------------------------

/// `ibsm links`: every port with its link and far end (iblinkinfo's format).
#[derive(Parser, Debug)]
#[command(about = "List every link (iblinkinfo's format)")]
pub struct LinksArgs {
    #[command(flatten)]
    common: Common,
    /// Only ports whose link is down
    #[arg(long, short = 'd')]
    down: bool,
    /// Only switches
    #[arg(long = "switches-only")]
    switches_only: bool,
    /// Only CAs
    #[arg(long = "cas-only")]
    cas_only: bool,
    /// SMPs in flight at once
    #[arg(long, short = 'o', default_value_t = 32)]
    outstanding_smps: usize,
}

fn max_width(mask: u8) -> u8 {
    if mask & 8 != 0 {
        8
    } else if mask & 4 != 0 {
        4
    } else if mask & 2 != 0 {
        2
    } else if mask & 0x10 != 0 {
        16
    } else {
        1
    }
}

fn top_bit(v: u8) -> u8 {
    if v == 0 {
        1
    } else {
        1 << (7 - v.leading_zeros())
    }
}

/// iblinkinfo's "(Could be …)" notes for a linked port.
fn could_be(scan: &Scan, i: usize, p: u8) -> (String, String) {
    let n = &scan.nodes[i];
    let Some((rn, rp)) = n.ports[usize::from(p)].remote else {
        return (String::new(), String::new());
    };
    let r = &scan.nodes[rn];
    let (Some(a), Some(b)) = (n.port_info(p), r.port_info(rp)) else {
        return (String::new(), String::new());
    };
    let mut wmsg = String::new();
    let mw = max_width(a.link_width_supported & b.link_width_supported);
    if mw & a.link_width_active == 0 {
        wmsg = format!("Could be {}", fields::link_width(mw));
    }
    let cap = |node: &super::scan::ScanNode, q: u8| {
        let q = if node.is_switch() { 0 } else { q };
        node.port_info(q).map_or(0, |x| x.capability_mask.get())
    };
    let ext = ibmad::attr::port_info::cap::IS_EXT_SPEEDS_SUP;
    let mut smsg = String::new();
    if cap(n, p) & ext != 0
        && cap(r, rp) & ext != 0
        && a.link_speed_ext_supported() != 0
        && b.link_speed_ext_supported() != 0
    {
        let ms = top_bit(a.link_speed_ext_supported() & b.link_speed_ext_supported());
        if ms & a.link_speed_ext_active() == 0 {
            smsg = format!("Could be {}", fields::link_speed_ext(ms));
        }
    } else {
        let ms = top_bit(a.link_speed_supported() & b.link_speed_supported());
        if ms & a.link_speed_active() == 0 {
            smsg = format!("Could be {}", fields::link_speed(ms));
        }
    }
    (wmsg, smsg)
}

fn links(a: &LinksArgs) -> R<()> {
    let mut s = Session::open(&a.common, a.outstanding_smps)?;
    let scan = Scan::run(&mut s.client(), 0)?;
    for f in &scan.failures {
        eprintln!("ibsm links: warning: {f}");
    }
    let mut text = String::new();
    let mut rows = Vec::new();
    for i in scan.print_order() {
        let n = &scan.nodes[i];
        if (a.switches_only && !n.is_switch()) || (a.cas_only && n.is_switch()) {
            continue;
        }
        let mut header = false;
        for p in 1..=n.info.num_ports {
            let port = &n.ports[usize::from(p)];
            let Some(info) = port.info else { continue };
            let state = info.port_state_raw();
            let down = state == 1;
            if a.down && !down {
                continue;
            }
            if !header {
                header = true;
                if n.is_switch() {
                    let g = n.ports[0].guid.0;
                    let g = if g == 0 { n.info.port_guid().0 } else { g };
                    let _ = writeln!(text, "Switch: 0x{g:016x} {}:", n.desc);
                } else {
                    let _ = writeln!(text, "{}: {}:", type_name(n.info.node_type), n.desc);
                }
            }
            let width = fields::link_width(info.link_width_active);
            let cap = {
                let q = if n.is_switch() { 0 } else { p };
                n.port_info(q).map_or(0, |x| x.capability_mask.get())
            };
            let espeed = if cap & ibmad::attr::port_info::cap::IS_EXT_SPEEDS_SUP != 0 {
                info.link_speed_ext_active()
            } else {
                0
            };
            let speed = if espeed != 0 {
                fields::link_speed_ext(espeed)
            } else {
                fields::link_speed(info.link_speed_active())
            };
            let st = fields::port_state(state);
            let ph = fields::phys_state(info.phys_state_raw());
            let link = if down {
                format!("(              {st:>6}/{ph:>8})")
            } else {
                format!("({width:>3} {speed:>18} {st:>6}/{ph:>8})")
            };
            let remote = match port.remote {
                Some((rn, rp)) => {
                    let r = &scan.nodes[rn];
                    let (wm, sm) = could_be(&scan, i, p);
                    format!("{:6} {:4}[  ] \"{}\" ({wm} {sm})", r.lid(rp).0, rp, r.desc)
                }
                None if down => "           [  ] \"\" ( )".to_string(),
                None => "    \"Port not available\"".to_string(),
            };
            if n.is_switch() {
                let _ = writeln!(
                    text,
                    "      {:6} {:4}[  ] =={link}==>  {remote}",
                    n.lid(0).0,
                    p
                );
            } else {
                let _ = writeln!(
                    text,
                    "      0x{:016x} {:6} {:4}[  ] =={link}==>  {remote}",
                    port.guid.0,
                    n.lid(p).0,
                    p
                );
            }
            rows.push(json!({
                "node_guid": format!("{:#018x}", n.guid().0),
                "node_type": type_name(n.info.node_type),
                "desc": n.desc,
                "lid": n.lid(p).0,
                "port": p,
                "port_guid": format!("{:#018x}", port.guid.0),
                "width": if down { Value::Null } else { Value::from(width) },
                "speed": if down { Value::Null } else { Value::from(speed) },
                "state": st,
                "phys_state": ph,
                "remote": port.remote.map(|(rn, rp)| {
                    let r = &scan.nodes[rn];
                    json!({ "guid": format!("{:#018x}", r.guid().0), "lid": r.lid(rp).0,
                            "port": rp, "desc": r.desc })
                }),
            }));
        }
    }
    print(&a.common, &text, json!({ "ports": rows }));
    Ok(())
}

// ----- trace ---------------------------------------------------------------------------------

/// `ibsm trace`: the unicast path between two ports, by their LFTs (ibtracert's format).
#[derive(Parser, Debug)]
#[command(about = "Trace the unicast route between two ports (ibtracert's format)")]
pub struct TraceArgs {
    #[command(flatten)]
    common: Common,
    /// Source: LID (default), DR path with -D, port GUID with -G
    src: String,
    /// Destination: same addressing
    dst: String,
}

#[derive(Clone, Debug, Default)]
struct TNode {
    guid: u64,
    node_type: u8,
    num_ports: u8,
    desc: String,
    port_guid: u64,
    port_num: u8,
    lid: u16,
    lmc: u8,
    state: u8,
}

fn tnode(s: &mut Session, addr: Addr) -> R<TNode> {
    let n = ni(&s.get(addr, SmpAttrId::NODE_INFO, 0)?);
    let d = nd(&s.get(addr, SmpAttrId::NODE_DESC, 0)?);
    let p = pi(&s.get(addr, SmpAttrId::PORT_INFO, 0)?);
    Ok(TNode {
        guid: n.node_guid().0,
        node_type: n.node_type,
        num_ports: n.num_ports,
        desc: d
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() || c == ' ' {
                    c
                } else {
                    ' '
                }
            })
            .collect(),
        port_guid: n.port_guid().0,
        port_num: n.local_port_num,
        lid: p.lid().0,
        lmc: p.lmc(),
        state: p.port_state_raw(),
    })
}

fn tname(t: u8) -> &'static str {
    match t {
        1 => "ca",
        2 => "switch",
        3 => "router",
        _ => "???",
    }
}

fn endnode(prompt: &str, n: &TNode) -> String {
    let port = if n.node_type == NodeType::SWITCH.0 {
        0
    } else {
        n.port_num
    };
    format!(
        "{prompt} {} {{0x{:016x}}} portnum {port} lid {}-{} \"{}\"\n",
        tname(n.node_type),
        n.guid,
        n.lid,
        u32::from(n.lid) + (1u32 << n.lmc) - 1,
        n.desc
    )
}

/// The LFT entry for `lid` in the switch at `path`, with its enhanced-port-0 flag.
fn switch_lookup(s: &mut Session, path: DrPath, lid: u16) -> R<(u8, bool)> {
    let sw = si(&s.get(Addr::Dr(path), SmpAttrId::SWITCH_INFO, 0)?);
    if lid >= sw.linear_fdb_cap.get() && lid > sw.linear_fdb_top.get() {
        return Err(format!("LID {lid} beyond the switch's LFT").into());
    }
    let b = s.get(Addr::Dr(path), SmpAttrId::LINEAR_FT, u32::from(lid / 64))?;
    let t = LftBlock::read_from_bytes(&b[..]).map_err(|_| "short LFT block")?;
    Ok((t.ports[usize::from(lid % 64)], sw.enhanced_port0() != 0))
}

struct Hop {
    out: u8,
    node: TNode,
}

/// ibtracert's `find_route`: from the node at `from` (a directed route) hop by hop through
/// the switches' LFTs towards `to_lid`; returns the start, the hops and the DR path reached.
fn find_route(s: &mut Session, mut from: DrPath, to: &TNode) -> R<(TNode, Vec<Hop>, DrPath)> {
    let start = tnode(s, Addr::Dr(from))?;
    let mut node = start.clone();
    let mut port_num = node.port_num;
    let mut hops = Vec::new();
    let is_switch = |n: &TNode| n.node_type == NodeType::SWITCH.0;
    let mut next_out = 255u8;
    let mut enh = false;
    if is_switch(&node) {
        let (o, e) = switch_lookup(s, from, to.lid)?;
        if o > node.num_ports {
            return Err(bad_table(&node, to.lid, o));
        }
        next_out = o;
        enh = e;
    }
    let same = |a: &TNode, b: &TNode| a.port_guid == b.port_guid;
    for _ in 0..64 {
        if node.state != 4 && (!is_switch(&node) || enh) {
            return Err(format!(
                "Bad port state found: node \"{}\" port {port_num} state {}",
                node.desc, node.state
            )
            .into());
        }
        if same(&node, to) {
            return Ok((start, hops, from));
        }
        let outport;
        let mut next;
        if is_switch(&node) {
            outport = next_out;
            from = from.push(outport).map_err(|_| "Direct path too long!")?;
            next = tnode(s, Addr::Dr(from))?;
            if outport == 0 {
                if !same(&next, to) {
                    return Err(bad_table(&node, to.lid, outport));
                }
                return Ok((start, hops, from));
            }
        } else {
            outport = port_num;
            if !same(&node, &start) {
                return Err(format!(
                    "can't continue: reached CA or router port {:x}, lid {}",
                    node.port_guid, node.lid
                )
                .into());
            }
            // Back one hop to (hopefully) a switch, or out of the CA's port if it is local.
            let mut back_port = None;
            if from.is_empty() {
                from = from.push(port_num).map_err(|_| "Direct path too long!")?;
            } else {
                let p = from.ports();
                back_port = p.last().copied();
                from = DrPath::new(&p[..p.len() - 1]).map_err(|e| e.to_string())?;
            }
            next = tnode(s, Addr::Dr(from))?;
            // The port as seen from the CA side.
            if let Some(p) = back_port {
                next.port_num = p;
            }
        }
        if is_switch(&next) {
            let (o, e) = switch_lookup(s, from, to.lid)?;
            if o > next.num_ports {
                return Err(bad_table(&next, to.lid, o));
            }
            next_out = o;
            enh = e;
        }
        if next.state != 4 && (!is_switch(&next) || enh) {
            return Err(format!(
                "Bad out port state found: node \"{}\" outport {outport} state {}",
                next.desc, next.state
            )
            .into());
        }
        port_num = next.port_num;
        hops.push(Hop {
            out: outport,
            node: next.clone(),
        });
        node = next;
    }
    Err("no route found after 64 hops".into())
}

fn bad_table(n: &TNode, lid: u16, out: u8) -> DiagError {
    DiagError(
        format!(
            "Bad forwarding table entry found at: node \"{}\" lid entry {lid} is {out}",
            n.desc
        ),
        1,
    )
}

fn trace(a: &TraceArgs) -> R<()> {
    let mut s = Session::open(&a.common, 4)?;
    let src = s.resolve(&a.src)?;
    let dst = s.resolve(&a.dst)?;
    let to = tnode(&mut s, dst)?;
    if to.lid == 0 {
        return Err("bad src/dest lid".into());
    }
    let from_path = match src {
        Addr::Dr(p) => p,
        Addr::Lid(_) => {
            let src_node = tnode(&mut s, src)?;
            find_route(&mut s, DrPath::local(), &src_node)
                .map_err(|e| DiagError(format!("can't find a route to the src port: {}", e.0), 1))?
                .2
        }
    };
    let (start, hops, _) = find_route(&mut s, from_path, &to)
        .map_err(|e| DiagError(format!("can't find a route from src to dest: {}", e.0), 1))?;
    let mut text = endnode("From", &start);
    let mut js_hops = Vec::new();
    for h in &hops {
        let n = &h.node;
        let _ = writeln!(
            text,
            "[{}] -> {} port {{0x{:016x}}}[{}] lid {}-{} \"{}\"",
            h.out,
            tname(n.node_type),
            n.port_guid,
            n.port_num,
            n.lid,
            u32::from(n.lid) + (1u32 << n.lmc) - 1,
            n.desc
        );
        js_hops.push(json!({
            "out_port": h.out, "type": tname(n.node_type),
            "port_guid": format!("{:#018x}", n.port_guid), "port": n.port_num,
            "lid": n.lid, "desc": n.desc,
        }));
    }
    let last = hops.last().map_or(&start, |h| &h.node);
    text.push_str(&endnode("To", last));
    let node_js = |n: &TNode| {
        json!({ "type": tname(n.node_type), "guid": format!("{:#018x}", n.guid),
                "port": n.port_num, "lid": n.lid, "desc": n.desc })
    };
    let js = json!({ "from": node_js(&start), "hops": js_hops, "to": node_js(last) });
    print(&a.common, &text, js);
    Ok(())
}

// ----- portstate -----------------------------------------------------------------------------

/// `ibsm portstate`: query or change one port (ibportstate's format).
#[derive(Parser, Debug)]
#[command(about = "Query or change a port's state, speed or width (ibportstate's format)")]
pub struct PortStateArgs {
    #[command(flatten)]
    common: Common,
    /// The node: LID (default), DR path with -D, port GUID with -G
    dest: String,
    /// The port number
    #[arg(id = "portnum", value_name = "PORT")]
    port: u8,
    /// query (default) | enable | disable | reset | speed N | width N | espeed N
    #[arg(num_args = 0..)]
    op: Vec<String>,
}

const PORTSTATE_FIELDS: [&str; 14] = [
    "LinkState",
    "PhysLinkState",
    "Lid",
    "SMLid",
    "LMC",
    "LinkWidthSupported",
    "LinkWidthEnabled",
    "LinkWidthActive",
    "LinkSpeedSupported",
    "LinkSpeedEnabled",
    "LinkSpeedActive",
    "LinkSpeedExtSupported",
    "LinkSpeedExtEnabled",
    "LinkSpeedExtActive",
];

fn show_port(
    who: &str,
    p: &PortInfo,
    port: u8,
    espeed: bool,
    is_switch: bool,
    keys: bool,
) -> (String, Fields) {
    let all = fields::port_info(p, keys);
    let names: Vec<&'static str> = PORTSTATE_FIELDS
        .iter()
        .copied()
        .filter(|n| espeed || !n.starts_with("LinkSpeedExt"))
        .collect();
    let mut f = all.select(&names);
    // ibportstate lists the extended speeds supported/enabled/active in that order.
    if espeed {
        f.0.sort_by_key(|(n, _)| names.iter().position(|x| x == n));
    }
    if !is_switch || port == 0 {
        for n in ["Mkey", "MkeyLeasePeriod", "ProtectBits"] {
            if let Some(v) = all.get(n) {
                f.push(n, v.clone());
            }
        }
    }
    (format!("# Port info: {who} port {port}\n{}", f.text()), f)
}

fn portstate(a: &PortStateArgs) -> R<()> {
    #[derive(PartialEq, Clone, Copy)]
    enum Op {
        Query,
        Enable,
        Disable,
    }
    let mut op = Op::Query;
    let (mut speed, mut espeed, mut width) = (None::<u8>, None::<u8>, None::<u8>);
    let mut it = a.op.iter();
    while let Some(w) = it.next() {
        let mut val = |name: &str, max: u64| -> R<u8> {
            let v = it.next().ok_or_else(|| {
                DiagError::bad(format!("{name} requires an additional parameter"))
            })?;
            let n = parse_num(v)?;
            if n > max && !(name == "width" && n == 255) {
                return Err(DiagError::bad(format!("invalid {name} value {n}")));
            }
            Ok(n as u8)
        };
        match w.as_str() {
            "query" => op = Op::Query,
            "enable" | "reset" | "on" => op = Op::Enable,
            "disable" | "off" => op = Op::Disable,
            "speed" => speed = Some(val("speed", 15)?),
            "espeed" => espeed = Some(val("espeed", 31)?),
            "width" => width = Some(val("width", 31)?),
            other => return Err(DiagError::bad(format!("invalid operation: {other}"))),
        }
    }
    let changing = op != Op::Query || speed.is_some() || espeed.is_some() || width.is_some();
    let mut s = Session::open(&a.common, 4)?;
    let addr = s.resolve(&a.dest)?;
    let n = ni(&s.get(addr, SmpAttrId::NODE_INFO, 0)?);
    let is_switch = n.node_type == NodeType::SWITCH.0;
    let kind = if is_switch { "Switch" } else { "CA/RT" };
    let mut text = if changing {
        format!("Initial {kind} PortInfo:\n")
    } else {
        format!("{kind} PortInfo:\n")
    };
    let port = a.port;
    let cap_of = |s: &mut Session, addr: Addr, port: u8, sw: bool| -> R<(PortInfo, bool)> {
        let cap = if sw {
            pi(&s.get(addr, SmpAttrId::PORT_INFO, 0)?)
                .capability_mask
                .get()
        } else {
            0
        };
        let p = pi(&s.get(addr, SmpAttrId::PORT_INFO, u32::from(port))?);
        let cap = if sw { cap } else { p.capability_mask.get() };
        Ok((p, cap & ibmad::attr::port_info::cap::IS_EXT_SPEEDS_SUP != 0))
    };
    let (p, ecap) = cap_of(&mut s, addr, port, is_switch)?;
    let who = addr.describe();
    let (t, f) = show_port(&who, &p, port, ecap, is_switch, a.common.show_keys);
    text.push_str(&t);
    let mut js = json!({ "portinfo": f.json() });
    if changing {
        let mut set = p;
        if set.lid.get() == 0 || set.lid.get() == 0xffff {
            set.lid.set(0x1234);
        }
        if set.master_sm_lid.get() == 0 || set.master_sm_lid.get() == 0xffff {
            set.master_sm_lid.set(0x1234);
        }
        set.set_port_state_raw(0);
        set.set_phys_state_raw(0);
        match op {
            Op::Enable => set.set_phys_state_raw(2),
            Op::Disable => {
                text.push_str("Disable may be irreversible\n");
                set.set_phys_state_raw(3);
            }
            Op::Query => {}
        }
        set.set_link_speed_enabled(speed.unwrap_or(0));
        set.set_link_speed_ext_enabled(espeed.unwrap_or(0));
        set.link_width_enabled = width.unwrap_or(0);
        let mut data = [0u8; 64];
        data.copy_from_slice(set.as_bytes());
        let am = u32::from(port) | if ecap { 1 << 31 } else { 0 };
        let back = s
            .client()
            .request(Req::set(addr, SmpAttrId::PORT_INFO, am, data))
            .map_err(|e| DiagError(format!("smp set portinfo failed: {e}"), 1))?;
        text.push_str("\nAfter PortInfo set:\n");
        let (t, f) = show_port(&who, &pi(&back), port, ecap, is_switch, a.common.show_keys);
        text.push_str(&t);
        js["after"] = f.json();
    } else if is_switch && port != 0 && p.port_state_raw() == 4 {
        // The peer, one hop further (by directed route; a LID-addressed switch is first
        // reached by tracing its LID through the LFTs).
        let base = match addr {
            Addr::Dr(path) => path,
            Addr::Lid(_) => {
                let target = tnode(&mut s, addr)?;
                find_route(&mut s, DrPath::local(), &target)?.2
            }
        };
        let peer = base.push(port).map_err(|_| "Too many hops")?;
        let pn = ni(&s.get(Addr::Dr(peer), SmpAttrId::NODE_INFO, 0)?);
        let psw = pn.node_type == NodeType::SWITCH.0;
        text.push_str("Peer PortInfo:\n");
        let (pp, pecap) = cap_of(&mut s, Addr::Dr(peer), pn.local_port_num, psw)?;
        let (t, f) = show_port(
            &Addr::Dr(peer).describe(),
            &pp,
            pn.local_port_num,
            pecap,
            psw,
            a.common.show_keys,
        );
        text.push_str(&t);
        js["peer"] = f.json();
    }
    print(&a.common, &text, js);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(crate::daemon::civil(0), (1970, 1, 1));
        assert_eq!(crate::daemon::civil(20_423), (2025, 12, 1));
    }

    #[test]
    fn lmc_ranges_name_paths() {
        let mut n = LidNamer::new();
        let a = n.name(4, true, Some((1, 0x10, 4, 1, "h")), "?");
        assert_eq!(a, ": (Channel Adapter portguid 0x0000000000000010: 'h')");
        let b = n.name(5, true, None, "?");
        assert_eq!(b, ": (path #2 out of 2: portguid 0x0000000000000010)");
        assert_eq!(n.name(6, false, None, "?"), ": (illegal port)");
    }

    #[test]
    fn every_command_line_is_well_formed() {
        use clap::CommandFactory;
        DiscoverArgs::command().debug_assert();
        QueryArgs::command().debug_assert();
        RouteArgs::command().debug_assert();
        DumpFtsArgs::command().debug_assert();
        LinksArgs::command().debug_assert();
        TraceArgs::command().debug_assert();
        PortStateArgs::command().debug_assert();
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        let e = QueryArgs::try_parse_from(["q", "--transport"]).unwrap_err();
        assert!(e.use_stderr());
        assert!(parse_u64("0x1f").is_ok_and(|v| v == 31));
        assert!(parse_u64("zz").is_err());
    }
}

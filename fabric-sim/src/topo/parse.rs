//! Reader for ibsim `.net` files and ibnetdiscover output (one grammar covers both).
//!
//! ## Grammar (what ibsim's `sim_net.c` accepts, as observed and re-implemented)
//!
//! A file is a sequence of lines. Blank lines and lines starting with `#` are ignored. At the
//! top level a line is one of:
//!
//! | line | effect |
//! |---|---|
//! | `Switch N "name" [# "desc" enhanced\|base port 0 lid L lmc M]` | starts a switch record |
//! | `Hca N "name" [# "desc"]`, `Ca N ...` | starts a CA record |
//! | `Rt N "name" [# "desc"]` | starts a router record |
//! | `switchguid=G[(P)]`, `caguid=G`, `hcaguids=G`, `rtguid=G` | next GUID for that node type; `(P)` is a switch port GUID for the next switch only; `switchguid+D` is relative to the last absolute base |
//! | `sysimgguid=G` | SystemImageGUID of the next node only |
//! | `vendid=V` | VendorID of the next node only |
//! | `devid=D` | DeviceID of this and every later node (ibsim keeps it) |
//! | `width=W`, `speed=S`, `extspeed=E` | default enable masks for later ports |
//! | `include "file"` | reads another file (relative to this one), at most 9 deep |
//! | `do ...`, `pdebug=...`, `Chassis ...`, `Hostname: ...` | ignored (ibsim console commands, ibnetdiscover `-g` grouping) |
//!
//! GUIDs follow ibsim: a per-type counter starting at 0x200000 (switches), 0x100000 (CAs)
//! and 0 (routers); a switch consumes 1 GUID, a CA or router with N ports consumes N + 1
//! (node GUID, then port *p* = node GUID + *p*).
//!
//! A record's port lines follow its header until the first line that is neither a port line
//! nor a comment:
//!
//! ```text
//! [1]            "peer"[2]                 w=8 s=4 e=2          (ibsim; [2] defaults to [1])
//! [1]            "H-0002c9..."[1](2c9...)   # "desc" lid 2 4xQDR  (ibnetdiscover, switch)
//! [1](2c9...)    "S-0002c9..."[3]           # lid 2 lmc 0 "desc" lid 1 4xQDR  (ibnetdiscover, CA)
//! ```
//!
//! - `(G)` after the local port sets that port's GUID; `(G)` after the peer port must equal the
//!   peer port's GUID.
//! - Options `w=` (LinkWidthEnabled mask 1..31), `s=` (LinkSpeedEnabled mask 1..7; 0 means
//!   QDR), `e=` (LinkSpeedExtEnabled mask 0..15) follow ibsim. This crate adds `mtu=` (MTU code
//!   1..5), `vl=`/`v=` (VLCap code 1..5) and `fdr10=1`, which ibsim ignores.
//! - A trailing `lid L WxSPEED` (ibnetdiscover) sets the width and speed as ibsim does.
//! - Each link must be listed from both ends, consistently. The active width and speed of a
//!   link are the widest/fastest values enabled on both ends (ibsim's rule); none in common is
//!   an error.
//!
//! Not supported (an error naming the line): `@alias` ports and `module=` name prefixes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ibmad::{Guid, Lid, NodeType, PortNum};

use super::attrs::{LinkAttrs, LinkSpeed, LinkWidth, Mtu, VlCap};
use super::error::{LoadError, ParseError, ParseErrorKind, TopoError};
use super::model::{NewNode, NodeId, PortRef, Topology};

const MAX_INCLUDE: usize = 9;

/// ibsim's initial GUID counters, indexed by [`type_index`].
const GUID_BASE: [u64; 3] = [0x10_0000, 0x20_0000, 0];

/// Default enable masks: width 4x, speed SDR, no extended speed (`sim.h` `DEFAULT_*`).
const DEFAULT_WIDTH_MASK: u8 = 2;
const DEFAULT_SPEED_MASK: u8 = 1;
const DEFAULT_EXT_MASK: u8 = 0;

fn type_index(t: NodeType) -> usize {
    match t {
        NodeType::SWITCH => 1,
        NodeType::ROUTER => 2,
        _ => 0,
    }
}

impl Topology {
    /// Parses ibsim `.net` or ibnetdiscover text. `include` lines are resolved against the
    /// current directory.
    pub fn parse_net(text: &str) -> Result<Topology, ParseError> {
        let mut r = Reader::new();
        r.feed(text, None, 0)?;
        r.finish()
    }

    /// Parses ibnetdiscover output. The same grammar as [`Topology::parse_net`]: ibsim's
    /// format is ibnetdiscover's plus a few extensions.
    pub fn parse_ibnetdiscover(text: &str) -> Result<Topology, ParseError> {
        Self::parse_net(text)
    }

    /// Reads a `.net` / ibnetdiscover file; errors name the file and line.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Topology, LoadError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut r = Reader::new();
        r.feed(&text, Some(path), 0)?;
        Ok(r.finish()?)
    }
}

/// One side of a link as a port line declared it.
struct Decl {
    node: NodeId,
    port: u8,
    peer: Box<str>,
    peer_port: u8,
    peer_guid: Option<u64>,
    width_mask: u8,
    speed_mask: u8,
    ext_mask: u8,
    fdr10: bool,
    mtu: Option<Mtu>,
    vl: Option<VlCap>,
    file: u16,
    line: usize,
}

struct Reader {
    topo: Topology,
    files: Vec<Option<PathBuf>>,
    abs_guid: [u64; 3],
    next_guid: [u64; 3],
    vendid: u32,
    devid: u16,
    sysimgguid: Option<u64>,
    switch_port_guid: Option<u64>,
    width_mask: u8,
    speed_mask: u8,
    ext_mask: u8,
    decls: Vec<Decl>,
    by_port: HashMap<(NodeId, u8), u32>,
    origin_seen: bool,
}

/// The node record whose port lines are being read.
struct Record {
    node: NodeId,
    node_type: NodeType,
    num_ports: u8,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            topo: Topology::new(),
            files: Vec::new(),
            abs_guid: GUID_BASE,
            next_guid: GUID_BASE,
            vendid: 0,
            devid: 0,
            sysimgguid: None,
            switch_port_guid: None,
            width_mask: DEFAULT_WIDTH_MASK,
            speed_mask: DEFAULT_SPEED_MASK,
            ext_mask: DEFAULT_EXT_MASK,
            decls: Vec::new(),
            by_port: HashMap::new(),
            origin_seen: false,
        }
    }

    fn err(&self, file: u16, line: usize, kind: ParseErrorKind) -> ParseError {
        ParseError {
            file: self.files.get(usize::from(file)).cloned().flatten(),
            line,
            kind,
        }
    }

    fn feed(&mut self, text: &str, path: Option<&Path>, depth: usize) -> Result<(), ParseError> {
        let file = u16::try_from(self.files.len()).unwrap_or(u16::MAX);
        self.files.push(path.map(Path::to_path_buf));
        let mut record: Option<Record> = None;
        for (i, raw) in text.lines().enumerate() {
            let lineno = i + 1;
            let line = raw.trim_end_matches('\r');
            let t = line.trim();
            if t.is_empty() {
                record = None;
                continue;
            }
            if let Some(c) = t.strip_prefix('#') {
                self.origin_comment(c);
                continue;
            }
            if t.starts_with('[') || t.starts_with('@') {
                let Some(rec) = &record else {
                    return Err(self.err(file, lineno, ParseErrorKind::PortOutsideNode));
                };
                let (node, nt, np) = (rec.node, rec.node_type, rec.num_ports);
                self.port_line(t, node, nt, np, file, lineno)
                    .map_err(|k| self.err(file, lineno, k))?;
                continue;
            }
            record = None;
            let word_end = t
                .find(|c: char| c.is_whitespace() || c == '=' || c == '+' || c == '"')
                .unwrap_or(t.len());
            let word = &t[..word_end];
            let rest = &t[word_end..];
            let res = match word {
                "Switch" => self
                    .header(NodeType::SWITCH, rest)
                    .map(|r| record = Some(r)),
                "Hca" | "Ca" => self.header(NodeType::CA, rest).map(|r| record = Some(r)),
                "Rt" => self
                    .header(NodeType::ROUTER, rest)
                    .map(|r| record = Some(r)),
                "switchguid" => self.guid_base(NodeType::SWITCH, word, rest),
                "caguid" | "hcaguids" => self.guid_base(NodeType::CA, word, rest),
                "rtguid" => self.guid_base(NodeType::ROUTER, word, rest),
                "vendid" => assignment(word, rest).and_then(|v| {
                    self.vendid = num_u32(word, v, 0x00ff_ffff)?;
                    Ok(())
                }),
                "devid" => assignment(word, rest).and_then(|v| {
                    self.devid = num_u32(word, v, 0xffff)? as u16;
                    Ok(())
                }),
                "sysimgguid" => assignment(word, rest).and_then(|v| {
                    self.sysimgguid = Some(num_u64(word, v)?);
                    Ok(())
                }),
                "width" => assignment(word, rest).and_then(|v| {
                    self.width_mask = mask(word, v, 1, 31)?;
                    Ok(())
                }),
                "speed" => assignment(word, rest).and_then(|v| {
                    self.speed_mask = mask(word, v, 1, 7)?;
                    Ok(())
                }),
                "extspeed" => assignment(word, rest).and_then(|v| {
                    self.ext_mask = mask(word, v, 0, 15)?;
                    Ok(())
                }),
                "include" => self.include(rest, path, depth),
                "module" => Err(ParseErrorKind::Unsupported(
                    "module= name prefixes are not supported",
                )),
                "do" | "pdebug" | "Chassis" | "Hostname:" => Ok(()),
                _ => Err(ParseErrorKind::UnrecognisedLine(t.to_string())),
            };
            res.map_err(|k| self.err(file, lineno, k))?;
        }
        Ok(())
    }

    /// ibnetdiscover's `# Initiated from node <GUID> port <GUID>`: the node (and port) the
    /// walk started from, where the SM sat. The first such line counts; a malformed one is an
    /// ordinary comment.
    fn origin_comment(&mut self, c: &str) {
        if self.origin_seen {
            return;
        }
        let mut w = c.split_whitespace();
        if [w.next(), w.next(), w.next()] != [Some("Initiated"), Some("from"), Some("node")] {
            return;
        }
        let node = w.next().and_then(|h| u64::from_str_radix(h, 16).ok());
        let port = match (w.next(), w.next()) {
            (Some("port"), Some(h)) => u64::from_str_radix(h, 16).ok(),
            _ => None,
        };
        if let Some(n) = node {
            self.origin_seen = true;
            self.topo.set_initiated_from(Guid(n), port.map(Guid));
        }
    }

    fn include(
        &mut self,
        rest: &str,
        path: Option<&Path>,
        depth: usize,
    ) -> Result<(), ParseErrorKind> {
        let mut cur = Cursor::new(rest);
        cur.ws();
        let name = cur
            .quoted()
            .ok_or_else(|| ParseErrorKind::BadValue {
                key: "include".into(),
                value: rest.trim().into(),
                reason: "expected a quoted file name",
            })?
            .to_string();
        let target = match path.and_then(Path::parent) {
            Some(dir) if Path::new(&name).is_relative() => dir.join(&name),
            _ => PathBuf::from(&name),
        };
        if depth + 1 >= MAX_INCLUDE {
            return Err(ParseErrorKind::Include {
                path: target,
                reason: format!("includes nest deeper than {MAX_INCLUDE}"),
            });
        }
        let text = std::fs::read_to_string(&target).map_err(|e| ParseErrorKind::Include {
            path: target.clone(),
            reason: e.to_string(),
        })?;
        // The included file's own error (with its name and line) becomes the reason, and
        // this line of the including file is where it is reported.
        match self.feed(&text, Some(&target), depth + 1) {
            Ok(()) => Ok(()),
            Err(e) => Err(ParseErrorKind::Include {
                path: target,
                reason: e.to_string(),
            }),
        }
    }

    fn guid_base(&mut self, t: NodeType, word: &str, rest: &str) -> Result<(), ParseErrorKind> {
        let r = rest.trim_start();
        let (relative, v) = if let Some(v) = r.strip_prefix('+') {
            (true, v)
        } else if let Some(v) = r.strip_prefix('=') {
            (false, v)
        } else {
            return Err(ParseErrorKind::BadValue {
                key: word.into(),
                value: r.into(),
                reason: "expected '=' or '+'",
            });
        };
        let mut cur = Cursor::new(v.trim_start());
        let g = cur.c_number().ok_or_else(|| ParseErrorKind::BadValue {
            key: word.into(),
            value: v.trim().into(),
            reason: "expected a number",
        })?;
        let ti = type_index(t);
        if relative {
            self.next_guid[ti] = self.abs_guid[ti].wrapping_add(g);
        } else {
            self.abs_guid[ti] = g;
            self.next_guid[ti] = g;
        }
        if cur.eat('(') {
            let p = cur.hex().ok_or_else(|| ParseErrorKind::BadValue {
                key: word.into(),
                value: v.trim().into(),
                reason: "expected a hex port GUID in parentheses",
            })?;
            if !cur.eat(')') {
                return Err(ParseErrorKind::BadValue {
                    key: word.into(),
                    value: v.trim().into(),
                    reason: "missing ')'",
                });
            }
            if t == NodeType::SWITCH {
                self.switch_port_guid = Some(p);
            }
        }
        cur.ws();
        if !(cur.is_empty() || cur.peek() == Some('#')) {
            return Err(ParseErrorKind::BadValue {
                key: word.into(),
                value: v.trim().into(),
                reason: "trailing text",
            });
        }
        Ok(())
    }

    fn header(&mut self, t: NodeType, rest: &str) -> Result<Record, ParseErrorKind> {
        let bad = |why: &str| ParseErrorKind::BadHeader(why.to_string());
        let mut cur = Cursor::new(rest);
        cur.ws();
        let n = cur
            .decimal()
            .ok_or_else(|| bad("expected the number of ports"))?;
        let num_ports = u8::try_from(n)
            .ok()
            .filter(|n| (1..=PortNum::MAX.0).contains(n))
            .ok_or_else(|| bad(&format!("{n} ports is outside 1..=254")))?;
        cur.ws();
        let name = cur
            .quoted()
            .ok_or_else(|| bad("expected a quoted node id"))?
            .to_string();
        cur.ws();
        let mut desc = None;
        let mut enhanced = false;
        let mut lid = None;
        if cur.eat('#') {
            let (d, tail) = split_desc(cur.rest());
            desc = d.map(str::to_string);
            enhanced = tail.contains("enhanced port 0");
            lid = lid_lmc(tail)?;
        } else if !cur.is_empty() {
            return Err(bad(&format!("unexpected text {:?}", cur.rest())));
        }
        let ti = type_index(t);
        let guid = self.next_guid[ti];
        let mut new = NewNode::new(t, num_ports, Guid(guid), name);
        new.desc = desc;
        new.vendor_id = self.vendid;
        new.device_id = self.devid;
        new.sys_image_guid = self.sysimgguid.map(Guid);
        let node = self.topo.add_node(new)?;
        self.next_guid[ti] = if t == NodeType::SWITCH {
            guid.wrapping_add(1)
        } else {
            guid.wrapping_add(u64::from(num_ports) + 1)
        };
        self.vendid = 0;
        self.sysimgguid = None;
        if t == NodeType::SWITCH {
            if let Some(pg) = self.switch_port_guid.take() {
                self.topo.set_port_guid(port_ref(node, 0), Guid(pg))?;
            }
            self.topo.set_enhanced_port0(node, enhanced)?;
            if let Some((l, m)) = lid {
                self.topo.set_lid(port_ref(node, 0), Lid(l), m)?;
            }
        }
        Ok(Record {
            node,
            node_type: t,
            num_ports,
        })
    }

    fn port_line(
        &mut self,
        line: &str,
        node: NodeId,
        nt: NodeType,
        num_ports: u8,
        file: u16,
        lineno: usize,
    ) -> Result<(), ParseErrorKind> {
        let bad = |why: String| ParseErrorKind::BadPort(why);
        if line.starts_with('@') {
            return Err(ParseErrorKind::Unsupported(
                "@alias port lines are not supported",
            ));
        }
        let mut cur = Cursor::new(line);
        cur.eat('[');
        let port = cur
            .decimal()
            .ok_or_else(|| bad("expected a port number after '['".into()))?;
        if !cur.eat(']') {
            return Err(bad("missing ']' after the port number".into()));
        }
        if port == 0 || port > u64::from(num_ports) {
            return Err(bad(format!("port {port} is outside 1..={num_ports}")));
        }
        let port =
            u8::try_from(port).map_err(|_| bad(format!("port {port} is outside 1..=254")))?;
        cur.ext_port();
        if self.by_port.contains_key(&(node, port)) {
            return Err(ParseErrorKind::DuplicatePort(port));
        }
        if cur.eat('(') {
            let g = cur
                .hex()
                .ok_or_else(|| bad("expected a hex port GUID in parentheses".into()))?;
            if !cur.eat(')') {
                return Err(bad("missing ')' after the port GUID".into()));
            }
            self.topo.set_port_guid(port_ref(node, port), Guid(g))?;
        }
        cur.ws();
        let peer = cur
            .quoted()
            .ok_or_else(|| bad("expected the quoted id of the peer node".into()))?;
        if peer.is_empty() {
            return Err(bad("empty peer id".into()));
        }
        let peer: Box<str> = peer.into();
        let mut peer_port = 1u64;
        if cur.eat('[') {
            peer_port = cur
                .decimal()
                .ok_or_else(|| bad("expected the peer port number".into()))?;
            if !cur.eat(']') {
                return Err(bad("missing ']' after the peer port number".into()));
            }
            if peer_port == 0 {
                return Err(bad("peer port 0 cannot be linked".into()));
            }
        }
        let peer_port = u8::try_from(peer_port)
            .map_err(|_| bad(format!("peer port {peer_port} is above 254")))?;
        cur.ext_port();
        cur.ws();
        let mut peer_guid = None;
        if cur.eat('(') {
            peer_guid = Some(
                cur.hex()
                    .ok_or_else(|| bad("expected a hex peer port GUID".into()))?,
            );
            if !cur.eat(')') {
                return Err(bad("missing ')' after the peer port GUID".into()));
            }
        }
        let mut d = Decl {
            node,
            port,
            peer,
            peer_port,
            peer_guid,
            width_mask: self.width_mask,
            speed_mask: self.speed_mask,
            ext_mask: self.ext_mask,
            fdr10: false,
            mtu: None,
            vl: None,
            file,
            line: lineno,
        };
        let rest = cur.rest();
        // Options: key=value tokens outside quotes, anywhere in the rest of the line.
        for tok in unquoted_tokens(rest) {
            let Some((k, v)) = tok.split_once('=') else {
                continue;
            };
            match k {
                "w" => d.width_mask = mask("w", v, 1, 31)?,
                "s" => {
                    let m = mask("s", v, 0, 7)?;
                    d.speed_mask = if m == 0 { 4 } else { m };
                }
                "e" => d.ext_mask = mask("e", v, 0, 15)?,
                "mtu" => {
                    d.mtu = Some(Mtu::from_code(mask("mtu", v, 1, 5)?).unwrap_or_default());
                }
                "vl" | "v" => {
                    d.vl = Some(VlCap::from_code(mask(k, v, 1, 5)?).unwrap_or_default());
                }
                "fdr10" => d.fdr10 = mask("fdr10", v, 0, 1)? == 1,
                _ => {}
            }
        }
        if let Some(comment) = unquoted_comment(rest) {
            // A CA/router line starts its comment with its own "lid L lmc M".
            if nt != NodeType::SWITCH {
                if let Some((l, m)) = leading_lid_lmc(comment) {
                    self.topo.set_lid(port_ref(node, port), Lid(l), m)?;
                }
            }
            // The remote "lid L WxSPEED" follows the last quote.
            let tail = comment.rsplit('"').next().unwrap_or(comment);
            if let Some((w, s)) = rate_trailer(tail)? {
                d.width_mask = width_trailer_mask(w);
                let (sm, em, f10) = speed_trailer_masks(s);
                d.speed_mask = sm;
                d.ext_mask = em;
                d.fdr10 = f10;
            }
        }
        let idx = u32::try_from(self.decls.len()).map_err(|_| TopoError::TooLarge {
            what: "more than 2^32 port lines",
        })?;
        self.by_port.insert((node, port), idx);
        self.decls.push(d);
        Ok(())
    }

    fn finish(mut self) -> Result<Topology, ParseError> {
        for i in 0..self.decls.len() {
            let d = &self.decls[i];
            let (file, line) = (d.file, d.line);
            self.link(i).map_err(|k| self.err(file, line, k))?;
        }
        Ok(self.topo)
    }

    fn link(&mut self, i: usize) -> Result<(), ParseErrorKind> {
        let d = &self.decls[i];
        let here = port_ref(d.node, d.port);
        let name =
            |t: &Topology, n: NodeId| t.node(n).map(|n| n.name().to_string()).unwrap_or_default();
        let peer_node =
            self.topo
                .node_by_name(&d.peer)
                .ok_or_else(|| ParseErrorKind::UnknownPeer {
                    port: d.port,
                    peer: d.peer.to_string(),
                })?;
        let there = port_ref(peer_node, d.peer_port);
        let peer_np = self.topo.node(peer_node).map_or(0, |n| n.num_ports());
        if d.peer_port > peer_np {
            return Err(TopoError::NoSuchPort {
                node: d.peer.to_string(),
                port: d.peer_port,
                num_ports: peer_np,
            }
            .into());
        }
        let asym = |detail: String| -> ParseErrorKind {
            TopoError::AsymmetricLink {
                node: name(&self.topo, d.node),
                port: d.port,
                peer: d.peer.to_string(),
                peer_port: d.peer_port,
                detail,
            }
            .into()
        };
        let Some(&j) = self.by_port.get(&(peer_node, d.peer_port)) else {
            return Err(asym(format!("{:?} lists no port {}", d.peer, d.peer_port)));
        };
        let e = &self.decls[j as usize];
        let back = self.topo.node_by_name(&e.peer);
        if back != Some(d.node) || e.peer_port != d.port {
            return Err(asym(format!(
                "{:?} port {} is listed as linked to {:?} port {} (line {})",
                d.peer, d.peer_port, e.peer, e.peer_port, e.line
            )));
        }
        if let Some(g) = d.peer_guid {
            let actual = self.topo.port(there).map_or(Guid(0), |p| p.guid());
            if actual != Guid(g) {
                return Err(ParseErrorKind::BadPort(format!(
                    "peer port GUID ({g:x}) does not match {:?} port {} GUID {actual}",
                    d.peer, d.peer_port
                )));
            }
        }
        if self.topo.peer(here).is_some() {
            return Ok(()); // linked when the other end was processed
        }
        let common_w = d.width_mask & e.width_mask;
        let width = LinkWidth::widest_in_mask(common_w).ok_or(ParseErrorKind::NoCommonRate {
            port: d.port,
            peer: d.peer.to_string(),
            peer_port: d.peer_port,
            what: "width",
            a: d.width_mask,
            b: e.width_mask,
        })?;
        // ibsim needs a common LinkSpeedEnabled bit even when an extended speed is common.
        let common_s = d.speed_mask & e.speed_mask;
        let common_e = d.ext_mask & e.ext_mask;
        let no_speed = || ParseErrorKind::NoCommonRate {
            port: d.port,
            peer: d.peer.to_string(),
            peer_port: d.peer_port,
            what: "speed",
            a: d.speed_mask,
            b: e.speed_mask,
        };
        if common_s == 0 {
            return Err(no_speed());
        }
        let mut speed = LinkSpeed::fastest_in_masks(common_s, common_e).ok_or_else(no_speed)?;
        if speed == LinkSpeed::Qdr && d.fdr10 && e.fdr10 {
            speed = LinkSpeed::Fdr10;
        }
        let pick = |a: Option<u8>, b: Option<u8>, dflt: u8| match (a, b) {
            (Some(x), Some(y)) => x.min(y),
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => dflt,
        };
        let mtu = Mtu::from_code(pick(
            d.mtu.map(Mtu::code),
            e.mtu.map(Mtu::code),
            Mtu::default().code(),
        ))
        .unwrap_or_default();
        let vl_cap = VlCap::from_code(pick(
            d.vl.map(VlCap::code),
            e.vl.map(VlCap::code),
            VlCap::default().code(),
        ))
        .unwrap_or_default();
        self.topo.connect_with(
            here,
            there,
            LinkAttrs {
                width,
                speed,
                mtu,
                vl_cap,
            },
        )?;
        Ok(())
    }
}

fn port_ref(node: NodeId, port: u8) -> PortRef {
    PortRef {
        node,
        port: PortNum(port),
    }
}

/// ibsim maps an ibnetdiscover width to an enable mask: 12x → 1x|4x|12x, 8x → 8x, 4x → 1x|4x,
/// 2x → 2x, 1x → 1x.
fn width_trailer_mask(w: LinkWidth) -> u8 {
    match w {
        LinkWidth::X12 => 1 | 2 | 8,
        LinkWidth::X8 => 4,
        LinkWidth::X4 => 1 | 2,
        LinkWidth::X2 => 16,
        LinkWidth::X1 => 1,
    }
}

/// ibsim maps an ibnetdiscover speed to (LinkSpeedEnabled, LinkSpeedExtEnabled, FDR10).
fn speed_trailer_masks(s: LinkSpeed) -> (u8, u8, bool) {
    match s {
        LinkSpeed::Sdr => (1, 0, false),
        LinkSpeed::Ddr => (3, 0, false),
        LinkSpeed::Qdr => (7, 0, false),
        LinkSpeed::Fdr10 => (7, 0, true),
        LinkSpeed::Fdr => (7, 1, true),
        LinkSpeed::Edr => (7, 3, true),
        LinkSpeed::Hdr => (7, 7, true),
        LinkSpeed::Ndr => (7, 15, true),
    }
}

/// `= value` after a keyword.
fn assignment<'a>(key: &str, rest: &'a str) -> Result<&'a str, ParseErrorKind> {
    rest.trim_start()
        .strip_prefix('=')
        .map(str::trim)
        .ok_or_else(|| ParseErrorKind::BadValue {
            key: key.into(),
            value: rest.trim().into(),
            reason: "missing '='",
        })
}

fn num_u64(key: &str, v: &str) -> Result<u64, ParseErrorKind> {
    let mut c = Cursor::new(v);
    let n = c.c_number();
    c.ws();
    match n {
        Some(n) if c.is_empty() || c.peek() == Some('#') => Ok(n),
        _ => Err(ParseErrorKind::BadValue {
            key: key.into(),
            value: v.into(),
            reason: "expected a number (decimal or 0x hex)",
        }),
    }
}

fn num_u32(key: &str, v: &str, max: u32) -> Result<u32, ParseErrorKind> {
    let n = num_u64(key, v)?;
    u32::try_from(n)
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| ParseErrorKind::BadValue {
            key: key.into(),
            value: v.into(),
            reason: "out of range",
        })
}

fn mask(key: &str, v: &str, lo: u8, hi: u8) -> Result<u8, ParseErrorKind> {
    let n = num_u64(key, v)?;
    u8::try_from(n)
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| ParseErrorKind::BadValue {
            key: key.into(),
            value: v.into(),
            reason: match (lo, hi) {
                (1, 31) => {
                    "w= is the LinkWidthEnabled mask, as ibsim reads it: 1..=31 (1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x; the widest enabled at both ends is used)"
                }
                (0, 7) | (1, 7) => "speed mask must be 1..=7 (0 = QDR)",
                (0, 15) => "extended speed mask must be 0..=15",
                (1, 5) => "code must be 1..=5",
                _ => "out of range",
            },
        })
}

/// Splits a header comment into its description and the tail (`enhanced port 0 lid 1 lmc 0`).
fn split_desc(comment: &str) -> (Option<&str>, &str) {
    let s = comment.trim_start();
    if let Some(q) = s.strip_prefix('"') {
        return match q.split_once('"') {
            Some((d, tail)) => (Some(d), tail),
            None => (Some(q), ""),
        };
    }
    let cut = [" enhanced port ", " base port ", " lid ", " lmc "]
        .iter()
        .filter_map(|m| s.find(m))
        .min();
    match cut {
        Some(i) => (Some(s[..i].trim_end()).filter(|d| !d.is_empty()), &s[i..]),
        None => (Some(s.trim_end()).filter(|d| !d.is_empty()), ""),
    }
}

/// `lid L lmc M` anywhere in a header tail.
fn lid_lmc(tail: &str) -> Result<Option<(u16, u8)>, ParseErrorKind> {
    let words: Vec<&str> = tail.split_whitespace().collect();
    let mut lid = None;
    let mut lmc = 0u8;
    for w in words.windows(2) {
        match w[0] {
            "lid" => {
                lid = Some(w[1].parse::<u16>().map_err(|_| ParseErrorKind::BadValue {
                    key: "lid".into(),
                    value: w[1].into(),
                    reason: "expected 0..=65535",
                })?);
            }
            "lmc" => {
                lmc = w[1].parse::<u8>().ok().filter(|m| *m <= 7).ok_or_else(|| {
                    ParseErrorKind::BadValue {
                        key: "lmc".into(),
                        value: w[1].into(),
                        reason: "expected 0..=7",
                    }
                })?;
            }
            _ => {}
        }
    }
    Ok(lid.map(|l| (l, lmc)))
}

/// A CA port comment that begins `lid L lmc M`.
fn leading_lid_lmc(comment: &str) -> Option<(u16, u8)> {
    let mut w = comment.split_whitespace();
    if w.next()? != "lid" {
        return None;
    }
    let lid = w.next()?.parse().ok()?;
    if w.next()? != "lmc" {
        return None;
    }
    let lmc = w.next()?.parse().ok().filter(|m: &u8| *m <= 7)?;
    Some((lid, lmc))
}

/// `lid L WxSPEED` (the text after the last quote of an ibnetdiscover port comment).
fn rate_trailer(tail: &str) -> Result<Option<(LinkWidth, LinkSpeed)>, ParseErrorKind> {
    let mut w = tail.split_whitespace();
    while let Some(tok) = w.next() {
        if tok != "lid" {
            continue;
        }
        let Some(_lid) = w.next() else {
            return Ok(None);
        };
        let Some(rate) = w.next() else {
            return Ok(None);
        };
        // "lid 2 lmc 0" (a CA's own LID) is not a rate; keep looking.
        if !rate.starts_with(|c: char| c.is_ascii_digit()) || !rate.contains('x') {
            continue;
        }
        let bad = |reason| ParseErrorKind::BadValue {
            key: "link rate".into(),
            value: rate.into(),
            reason,
        };
        let (lanes, speed) = rate.split_once('x').ok_or(bad("expected e.g. 4xQDR"))?;
        let width = lanes
            .parse::<u8>()
            .ok()
            .and_then(LinkWidth::from_lanes)
            .ok_or(bad("width must be 1x, 2x, 4x, 8x or 12x"))?;
        let speed = LinkSpeed::from_name(speed).ok_or(bad(
            "speed must be SDR, DDR, QDR, FDR10, FDR, EDR, HDR or NDR",
        ))?;
        return Ok(Some((width, speed)));
    }
    Ok(None)
}

/// The text after the first `#` that is not inside quotes.
fn unquoted_comment(s: &str) -> Option<&str> {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return Some(&s[i + 1..]),
            _ => {}
        }
    }
    None
}

/// Whitespace-separated tokens, skipping quoted strings.
fn unquoted_tokens(s: &str) -> impl Iterator<Item = &str> {
    s.split('"').step_by(2).flat_map(str::split_whitespace)
}

/// A tiny byte cursor over one line.
struct Cursor<'a> {
    s: &'a str,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor { s }
    }
    fn rest(&self) -> &'a str {
        self.s
    }
    fn is_empty(&self) -> bool {
        self.s.is_empty()
    }
    fn peek(&self) -> Option<char> {
        self.s.chars().next()
    }
    fn ws(&mut self) {
        self.s = self.s.trim_start();
    }
    fn eat(&mut self, c: char) -> bool {
        match self.s.strip_prefix(c) {
            Some(r) => {
                self.s = r;
                true
            }
            None => false,
        }
    }
    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let end = self.s.find(|c: char| !f(c)).unwrap_or(self.s.len());
        let (a, b) = self.s.split_at(end);
        self.s = b;
        a
    }
    fn decimal(&mut self) -> Option<u64> {
        let d = self.take_while(|c| c.is_ascii_digit());
        d.parse().ok()
    }
    fn hex(&mut self) -> Option<u64> {
        if self.s.starts_with("0x") || self.s.starts_with("0X") {
            self.s = &self.s[2..];
        }
        let d = self.take_while(|c| c.is_ascii_hexdigit());
        u64::from_str_radix(d, 16).ok()
    }
    /// C `strtoull(.., 0)` without octal: `0x` hex or decimal.
    fn c_number(&mut self) -> Option<u64> {
        if self.s.starts_with("0x") || self.s.starts_with("0X") {
            self.hex()
        } else {
            self.decimal()
        }
    }
    fn quoted(&mut self) -> Option<&'a str> {
        let r = self.s.strip_prefix('"')?;
        let (q, rest) = r.split_once('"')?;
        self.s = rest;
        Some(q)
    }
    /// Skips ibnetdiscover `-g`'s `[ext N]`.
    fn ext_port(&mut self) {
        if let Some(r) = self.s.strip_prefix("[ext ") {
            if let Some((_, rest)) = r.split_once(']') {
                self.s = rest;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_desc_variants() {
        assert_eq!(
            split_desc(" \"Switch1\" base port 0 lid 3 lmc 0"),
            (Some("Switch1"), " base port 0 lid 3 lmc 0")
        );
        assert_eq!(
            split_desc(" my switch enhanced port 0 lid 3"),
            (Some("my switch"), " enhanced port 0 lid 3")
        );
        assert_eq!(split_desc(""), (None, ""));
    }

    #[test]
    fn trailers() {
        assert_eq!(
            rate_trailer(" lid 1 4xSDR").unwrap(),
            Some((LinkWidth::X4, LinkSpeed::Sdr))
        );
        assert_eq!(
            rate_trailer(" lid 1 12xEDR s=4 w=8 v=4").unwrap(),
            Some((LinkWidth::X12, LinkSpeed::Edr))
        );
        assert!(rate_trailer(" lid 1 4xXDR").is_err());
        assert_eq!(rate_trailer(" no rate").unwrap(), None);
        assert_eq!(rate_trailer(" lid 2 lmc 0").unwrap(), None);
        assert_eq!(
            rate_trailer(" lid 2 lmc 0 lid 1 2xNDR").unwrap(),
            Some((LinkWidth::X2, LinkSpeed::Ndr))
        );
        assert_eq!(leading_lid_lmc(" lid 2 lmc 0 "), Some((2, 0)));
    }
}

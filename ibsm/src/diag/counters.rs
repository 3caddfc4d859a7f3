//! `ibsm counters`: perfquery — one port's PerfMgt counters (PortCounters, or
//! PortCountersExtended with `-x`), resets with `-r`/`-R`, every port at once with `-a`.
//!
//! PerfMgt GMPs are LID-routed to QP1 of the destination, so the destination is a LID (the
//! local port's by default, as perfquery). Like perfquery, ClassPortInfo is asked first: its
//! CapabilityMask is in the header line and says which extended fields exist.

use clap::Parser;
use ibmad::class_port_info::ClassPortInfoRepr;
use ibmad::perf::{
    cap, port_counters_ext::PerfqueryExt, CounterSelect, PerfMad, PortCountersExt,
    PortCountersExtRepr, PortCountersRepr, ALL_PORTS,
};
use ibmad::zerocopy::{FromBytes, IntoBytes};
use ibmad::{GmpAttrRepr, Lid, MadMeta, Method, PerfRepr, PmaAttrId};
use serde_json::{json, Map, Value};

use std::fmt::Write as _;

use super::cmds::{parse_lid, Common, DiagError, Session};
use super::scan::Scan;

type R<T> = Result<T, DiagError>;

/// `ibsm counters`: perfquery.
#[derive(Parser, Debug)]
#[command(about = "A port's performance counters (perfquery's format; --json)")]
pub struct CountersArgs {
    #[command(flatten)]
    common: Common,
    /// PortCountersExtended (64-bit data and packet counters), as perfquery -x
    #[arg(long = "extended", short = 'x')]
    extended: bool,
    /// Every port of the node at once (PortSelect 255), as perfquery -a
    #[arg(long = "all_ports", short = 'a')]
    all_ports: bool,
    /// Reset the counters after reading them
    #[arg(long = "reset_after_read", short = 'r')]
    reset_after_read: bool,
    /// Reset the counters only (print nothing)
    #[arg(long = "Reset_only", short = 'R')]
    reset_only: bool,
    /// ibqueryerrors: scan the fabric and list every port whose error counters are not 0
    /// (exit status 1 if there is one)
    #[arg(long = "errors", conflicts_with_all = ["extended", "all_ports", "reset_after_read", "reset_only", "dest", "port_num"])]
    errors: bool,
    /// The PMA's LID (default: the local port's)
    dest: Option<String>,
    /// The port (default: the local port)
    #[arg(value_name = "PORT")]
    port_num: Option<u8>,
}

/// One PerfMgt request, answered: sent LID-routed to QP1 of `dlid`, retried on timeout.
fn perf_request(s: &mut Session, dlid: Lid, mad: &PerfMad) -> R<PerfRepr> {
    let tid = mad.hdr.tid.get() as u32;
    let (timeout, retries) = (s.timeout(), 3u32);
    let slid = s.local_lid();
    let port = s.port_mut();
    let meta = MadMeta::gmp(port.local_port(), slid, dlid);
    let mut buf = [0u8; 256];
    for _ in 0..=retries {
        port.send(&meta, mad.as_bytes())
            .map_err(|e| DiagError(format!("send to LID {}: {e}", dlid.0), 1))?;
        let deadline = port.now() + timeout;
        loop {
            let left = deadline.saturating_since(port.now());
            if left.is_zero() {
                break;
            }
            let Some((_, len)) = port
                .recv_wait(&mut buf, left)
                .map_err(|e| DiagError(format!("receive: {e}"), 1))?
            else {
                continue;
            };
            let Ok(r) = PerfRepr::parse_bytes(&buf[..len]) else {
                continue;
            };
            if r.header.method != Method::GET_RESP || r.header.tid as u32 != tid {
                continue;
            }
            if r.header.status.0 != 0 {
                return Err(DiagError(
                    format!(
                        "{} of LID {} refused: status 0x{:04x}",
                        r.attr_id(),
                        dlid.0,
                        r.header.status.0
                    ),
                    1,
                ));
            }
            return Ok(r);
        }
    }
    Err(DiagError(
        format!(
            "{} to LID {}: no response after {} attempts (timed out)",
            mad.attr(),
            dlid.0,
            retries + 1
        ),
        1,
    ))
}

fn request<A: GmpAttrRepr>(method: Method, attr: PmaAttrId, tid: u64, a: Option<&A>) -> PerfMad {
    let mut m = PerfMad::request(method, attr, 0, tid);
    if let Some(a) = a {
        // The data field is 192 bytes, longer than any PerfMgt attribute here.
        let _ = a.emit(&mut m.data);
    }
    m
}

/// `Name:....value` lines to a JSON object (numbers where they parse).
fn listing_json(text: &str) -> Value {
    let mut m = Map::new();
    for l in text.lines() {
        if let Some((k, v)) = l.split_once(':') {
            let v = v.trim_start_matches('.');
            let val = v.parse::<u64>().map_or_else(|_| json!(v), |n| json!(n));
            m.insert(k.to_string(), val);
        }
    }
    Value::Object(m)
}

/// Runs `ibsm counters`.
///
/// # Errors
/// Bad arguments (exit 2), a PMA that does not answer or refuses (exit 1).
pub fn counters(a: &CountersArgs) -> R<()> {
    if a.errors {
        return errors(a);
    }
    if a.common.direct || a.common.guid {
        return Err(DiagError::bad(
            "PerfMgt queries are LID-routed: give the destination as a LID",
        ));
    }
    let mut s = Session::open(&a.common, 1)?;
    let lid = match &a.dest {
        Some(t) => parse_lid(t)?,
        None => s.local_lid(),
    };
    if lid.0 == 0 {
        if a.dest.is_some() {
            return Err(DiagError::bad("LID 0 is not a destination"));
        }
        // The host of a switch ASIC reads its own PMA without a LID.
        if !s.port_mut().own_agents_need_no_lid() {
            return Err(DiagError(
                "the local port has no LID yet (is an SM running?)".into(),
                1,
            ));
        }
    }
    let port = if a.all_ports {
        ALL_PORTS
    } else {
        a.port_num.unwrap_or(s.port_mut().local_port().0)
    };
    let mut tid = u64::from(s.port_mut().now().0 as u32 | 1);
    let mut next = || {
        tid = tid.wrapping_add(1);
        tid
    };
    let cpi = perf_request(
        &mut s,
        lid,
        &request::<ClassPortInfoRepr>(Method::GET, PmaAttrId::CLASS_PORT_INFO, next(), None),
    )?;
    let cpi: ClassPortInfoRepr = cpi
        .attr()
        .map_err(|e| DiagError(format!("ClassPortInfo of LID {}: {e}", lid.0), 1))?;
    let reset = |s: &mut Session, tid: u64| -> R<()> {
        let m = if a.extended {
            let sel = PortCountersExtRepr {
                port_select: port,
                counter_select: ibmad::perf::CounterSelectExt(0xFF),
                ..PortCountersExtRepr::default()
            };
            request(Method::SET, PmaAttrId::PORT_COUNTERS_EXT, tid, Some(&sel))
        } else {
            let sel = PortCountersRepr {
                port_select: port,
                counter_select: CounterSelect(0xFFFF),
                ..PortCountersRepr::default()
            };
            request(Method::SET, PmaAttrId::PORT_COUNTERS, tid, Some(&sel))
        };
        perf_request(s, lid, &m).map(|_| ())
    };
    if a.reset_only {
        return reset(&mut s, next());
    }
    let (header, body) = if a.extended {
        let sel = PortCountersExtRepr {
            port_select: port,
            ..PortCountersExtRepr::default()
        };
        let r = perf_request(
            &mut s,
            lid,
            &request(
                Method::GET,
                PmaAttrId::PORT_COUNTERS_EXT,
                next(),
                Some(&sel),
            ),
        )?;
        let raw = PortCountersExt::read_from_prefix(&r.data)
            .map(|(x, _)| x)
            .map_err(|_| DiagError("PortCountersExtended: short data".into(), 1))?;
        let body = PerfqueryExt {
            pc: &raw,
            ext_width: cpi.capability_mask & cap::EXT_WIDTH != 0,
            additional: cpi.capability_mask2 & cap::CM2_ADDITIONAL_PORT_COUNTERS_EXT != 0,
        }
        .to_string();
        (
            format!(
                "# Port extended counters: Lid {} port {port} (CapMask: 0x{:04X} CapMask2: 0x{:07X})\n",
                lid.0, cpi.capability_mask, cpi.capability_mask2
            ),
            body,
        )
    } else {
        // CounterSelect is for Set; a Get carries 0, as perfquery's.
        let sel = PortCountersRepr {
            port_select: port,
            ..PortCountersRepr::default()
        };
        let r = perf_request(
            &mut s,
            lid,
            &request(Method::GET, PmaAttrId::PORT_COUNTERS, next(), Some(&sel)),
        )?;
        let pc: PortCountersRepr = r
            .attr()
            .map_err(|e| DiagError(format!("PortCounters of LID {}: {e}", lid.0), 1))?;
        (
            format!(
                "# Port counters: Lid {} port {port} (CapMask: 0x{:04X})\n",
                lid.0, cpi.capability_mask
            ),
            pc.to_string(),
        )
    };
    let json = json!({
        "lid": lid.0,
        "port": port,
        "cap_mask": cpi.capability_mask,
        "cap_mask2": cpi.capability_mask2,
        "extended": a.extended,
        "counters": listing_json(&body),
    });
    super::cmds::print(&a.common, &format!("{header}{body}"), json);
    if a.reset_after_read {
        reset(&mut s, next())?;
    }
    Ok(())
}

/// The counters ibqueryerrors checks, in its order: the PortCounters error counters
/// SymbolErrorCounter through VL15Dropped (IBA vol1 §16.1.3.5, Table 247; QP1Dropped is not
/// among them), then PortXmitWait — with their values, from [`sm::perfmgr::Counters`].
fn error_fields(pc: &PortCountersRepr) -> impl Iterator<Item = (&'static str, u64)> {
    use sm::perfmgr::{Counter, Counters};
    let c = Counters::from_pc(pc);
    Counter::ALL
        .into_iter()
        .take_while(|&k| k as usize <= Counter::Vl15Dropped as usize)
        .chain([Counter::XmitWait])
        .map(move |k| (k.name(), c.get(k)))
}

/// What one node's check found.
#[derive(Default)]
struct ErrorSummary {
    nodes: u32,
    bad_nodes: u32,
    ports: u32,
    bad_ports: u32,
    failures: u32,
}

/// `ibsm counters --errors`: ibqueryerrors. Every node the scan finds, newest first as
/// libibnetdisc lists them; ClassPortInfo first, then (where the PMA has AllPortSelect) one
/// PortCounters Get for all ports, and only if that shows errors one per port. A counter is
/// reported when it is above its threshold — 0 for all, as ibqueryerrors without a
/// thresholds file. Differences: the SL is 0 (ibqueryerrors asks the SA for a PathRecord per
/// destination unless `--skip-sl`); PortCountersExtended's 64-bit error counters (PMAs with
/// AdditionalPortCountersExtended) are not read.
fn errors(a: &CountersArgs) -> R<()> {
    let mut s = Session::open(&a.common, 1)?;
    let scan = Scan::run(&mut s.client(), 0)?;
    for f in &scan.failures {
        eprintln!("ibsm counters: warning: {f}");
    }
    let mut tid = u64::from(s.port_mut().now().0 as u32 | 1);
    let mut sum = ErrorSummary::default();
    let mut text = String::new();
    let mut bad = Vec::new();
    for i in scan.print_order() {
        let n = &scan.nodes[i];
        let nports = n.info.num_ports;
        let sw = n.is_switch();
        let lid = if sw {
            n.lid(0)
        } else {
            match (1..=nports).find(|&p| n.port_info(p).is_some()) {
                Some(p) => n.lid(p),
                None => continue,
            }
        };
        let port_guid = |p: u8| -> u64 {
            let g = n.ports.get(usize::from(p)).map_or(0, |x| x.guid.0);
            if sw || g == 0 {
                n.info.port_guid().0
            } else {
                g
            }
        };
        tid = tid.wrapping_add(1);
        let cap = perf_request(
            &mut s,
            lid,
            &request::<ClassPortInfoRepr>(Method::GET, PmaAttrId::CLASS_PORT_INFO, tid, None),
        )
        .and_then(|r| {
            r.attr::<ClassPortInfoRepr>()
                .map_err(|e| DiagError(e.to_string(), 1))
        });
        let cap_mask = match cap {
            Ok(c) => c.capability_mask,
            Err(e) => {
                eprintln!(
                    "ibsm counters: ClassPortInfo of \"{}\" (LID {}): {e}",
                    n.desc,
                    lid.0,
                    e = e.0
                );
                sum.failures += 1;
                0
            }
        };
        let mut header = false;
        let mut node_bad = Vec::new();
        // The errors of one PortCounters Get, as ibqueryerrors prints them; None = none (or
        // the query failed, counted).
        let mut check =
            |s: &mut Session, lid: Lid, port: u8, sum: &mut ErrorSummary| -> Option<String> {
                tid = tid.wrapping_add(1);
                let sel = PortCountersRepr {
                    port_select: port,
                    ..PortCountersRepr::default()
                };
                let r = perf_request(
                    s,
                    lid,
                    &request(Method::GET, PmaAttrId::PORT_COUNTERS, tid, Some(&sel)),
                )
                .and_then(|r| {
                    r.attr::<PortCountersRepr>()
                        .map_err(|e| DiagError(e.to_string(), 1))
                });
                let mut pc = match r {
                    Ok(pc) => pc,
                    Err(e) => {
                        eprintln!(
                            "ibsm counters: PortCounters of \"{}\" (LID {}) port {port}: {}",
                            n.desc, lid.0, e.0
                        );
                        sum.failures += 1;
                        return None;
                    }
                };
                if cap_mask & cap::PORT_XMIT_WAIT == 0 {
                    pc.port_xmit_wait = 0;
                }
                let found: Vec<(&str, u64)> = error_fields(&pc).filter(|&(_, v)| v > 0).collect();
                if found.is_empty() {
                    return None;
                }
                Some(
                    found
                        .iter()
                        .map(|(k, v)| format!(" [{k} == {v}]"))
                        .collect(),
                )
            };
        let mut emit = |text: &mut String, sum: &mut ErrorSummary, line: String| {
            if !header {
                header = true;
                sum.bad_nodes += 1;
                if sw {
                    let _ = writeln!(text, "Errors for 0x{:x} \"{}\"", port_guid(0), n.desc);
                } else {
                    let _ = writeln!(text, "Errors for \"{}\"", n.desc);
                }
            }
            text.push_str(&line);
        };
        let all_first = cap_mask & cap::ALL_PORT_SELECT != 0;
        let per_port = if all_first {
            match check(&mut s, lid, ALL_PORTS, &mut sum) {
                None => {
                    sum.ports += u32::from(nports);
                    false
                }
                Some(found) => {
                    if sw {
                        emit(
                            &mut text,
                            &mut sum,
                            format!("   GUID 0x{:x} port ALL:{found}\n", port_guid(0)),
                        );
                    }
                    true
                }
            }
        } else {
            true
        };
        if per_port {
            let start = if sw && n.switch_info.is_some_and(|si| si.enhanced_port0() != 0) {
                0
            } else {
                1
            };
            for p in start..=nports {
                if n.port_info(p).is_none() {
                    continue;
                }
                sum.ports += 1;
                // A CA's ports are PMAs of their own, each at its LID.
                let dlid = if sw { lid } else { n.lid(p) };
                if let Some(found) = check(&mut s, dlid, p, &mut sum) {
                    sum.bad_ports += 1;
                    node_bad.push(json!({ "port": p, "errors": found.trim() }));
                    emit(
                        &mut text,
                        &mut sum,
                        format!("   GUID 0x{:x} port {p}:{found}\n", port_guid(p)),
                    );
                }
            }
        }
        sum.nodes += 1;
        if !node_bad.is_empty() {
            bad.push(json!({
                "guid": format!("0x{:016x}", n.guid().0),
                "desc": n.desc,
                "switch": sw,
                "ports": node_bad,
            }));
        }
    }
    let _ = writeln!(
        text,
        "\n## Summary: {} nodes checked, {} bad nodes found",
        sum.nodes, sum.bad_nodes
    );
    let _ = writeln!(
        text,
        "##          {} ports checked, {} ports have errors beyond threshold",
        sum.ports, sum.bad_ports
    );
    if sum.failures > 0 {
        let _ = writeln!(text, "##          {} PMA query failures", sum.failures);
    }
    text.push_str("## Thresholds: \n## Suppressed:\n");
    let json = json!({
        "nodes_checked": sum.nodes,
        "bad_nodes": sum.bad_nodes,
        "ports_checked": sum.ports,
        "bad_ports": sum.bad_ports,
        "pma_query_failures": sum.failures,
        "errors": bad,
    });
    super::cmds::print(&a.common, &text, json);
    if sum.bad_ports > 0 {
        return Err(DiagError(
            format!("{} port(s) with errors beyond threshold", sum.bad_ports),
            1,
        ));
    }
    Ok(())
}

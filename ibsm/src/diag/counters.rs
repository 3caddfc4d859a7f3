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

use super::cmds::{parse_lid, Common, DiagError, Session};

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
        return Err(DiagError(
            "the local port has no LID yet (is an SM running?)".into(),
            1,
        ));
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

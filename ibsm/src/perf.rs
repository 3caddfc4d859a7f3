//! The daemon's performance manager glue: `ibsm ctl perfmgr …` requests (what OpenSM's
//! console `perfmgr` command does) against the running [`PerfMgr`].

use std::fmt::Write as _;
use std::time::Duration;

use ibmad::Time;
use sm::perfmgr::{Counter, PerfMgr, PortRecord};

/// The `perfmgr` requests, for error messages.
pub const USAGE: &str = "perfmgr [status] | sweep | enable | disable | sweep_time SECONDS | \
     clear_counters | print_counters [NODEGUID|NODEDESC] | print_errors";

/// Carries out one `perfmgr` request (its words after `perfmgr`).
///
/// # Errors
/// An unknown request or a bad argument, naming it.
pub fn request(pm: &mut PerfMgr, now: Time, words: &[String]) -> Result<String, String> {
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    match w.as_slice() {
        [] | ["status"] => Ok(format!(
            "perfmgr: {}, sweep time {} s, max outstanding queries {}\n{}",
            if pm.is_enabled() {
                "enabled"
            } else {
                "disabled"
            },
            pm.config().sweep_time.as_secs(),
            pm.config().max_outstanding,
            pm.status()
        )),
        ["sweep"] => {
            pm.request_sweep();
            Ok("perfmgr sweep requested".into())
        }
        ["enable"] => {
            pm.set_enabled(true);
            Ok("perfmgr enabled".into())
        }
        ["disable"] => {
            pm.set_enabled(false);
            Ok("perfmgr disabled".into())
        }
        ["sweep_time", n] => {
            let s: u64 = n
                .parse()
                .map_err(|_| format!("perfmgr sweep_time {n:?}: expected seconds"))?;
            pm.set_sweep_time(now, Duration::from_secs(s));
            Ok(format!("perfmgr sweep time {s} s"))
        }
        ["clear_counters"] => {
            pm.clear_counters();
            Ok("perfmgr counters cleared".into())
        }
        ["print_counters"] => Ok(print(pm.ports(), false)),
        ["print_counters", who] => {
            let want = who.to_ascii_lowercase();
            let ports: Vec<&PortRecord> = pm
                .ports()
                .filter(|r| {
                    r.node_desc == *who
                        || format!("{}", r.node_guid) == want
                        || format!("{:#x}", r.node_guid.0) == want
                })
                .collect();
            if ports.is_empty() {
                return Err(format!("perfmgr print_counters: no node {who:?}"));
            }
            Ok(print(ports.into_iter(), false))
        }
        ["print_errors"] => Ok(print(pm.ports(), true)),
        _ => Err(format!(
            "unknown perfmgr request {:?}; {USAGE}",
            w.join(" ")
        )),
    }
}

/// Each port's running totals; `errors_only`: only ports with a nonzero error counter, and
/// only those counters.
fn print<'a>(ports: impl Iterator<Item = &'a PortRecord>, errors_only: bool) -> String {
    let mut out = String::new();
    for r in ports {
        let shown: Vec<Counter> = Counter::ALL
            .into_iter()
            .filter(|c| !errors_only || (c.is_error() && r.total.get(*c) > 0))
            .collect();
        if shown.is_empty() {
            continue;
        }
        // `write!` to a String cannot fail.
        let _ = writeln!(
            out,
            "\"{}\" {} port {} (LID {}): {} samples, {} clears",
            r.node_desc, r.node_guid, r.port.0, r.lid.0, r.samples, r.clears
        );
        for c in shown {
            let _ = writeln!(out, "    {:<30}: {}", c.name(), r.total.get(c));
        }
    }
    out
}

//! The daemon's Prometheus/OpenMetrics endpoint (`--metrics-listen ADDR`, off by default).
//!
//! [`Metrics`] keeps prometheus-client's registry: what the SM reports (`sm::Event::PhaseDone`
//! for sweeps and SMP counts) is added as it happens, and what is a state (SM state and
//! priority, ports by state, LIDs in use, nodes) is read from the SM when a scrape arrives.
//! The HTTP side is tiny_http, polled from the daemon loop without blocking, so the sans-IO SM
//! is only ever touched by the loop's thread.
//!
//! A scraper that asks for OpenMetrics (`Accept: application/openmetrics-text`, as Prometheus
//! does) gets prometheus-client's OpenMetrics text; any other client (curl, `promtool check
//! metrics`, older scrapers) gets the Prometheus text format 0.0.4, translated by
//! [`to_prometheus_text`]: the two differ only in counter family names (`x` with sample
//! `x_total` vs `x_total`), `# UNIT` and `# EOF`.

use std::collections::HashSet;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use sm::perfmgr::{Counter as PortCounter, PerfMgr, SweepStats};
use sm::sa::SaStats;
use sm::{Phase, PhaseStats, Sm};

/// The SA's counters ([`SaStats`]): metric name, help, and the field.
type SaField = fn(&SaStats) -> u64;
const SA_COUNTERS: [(&str, &str, SaField); 6] = [
    ("sa_mads_received", "MADs handed to the SA", |s| s.received),
    ("sa_answered", "SA requests answered (any status)", |s| {
        s.answered
    }),
    (
        "sa_dropped",
        "SA MADs dropped without an answer (malformed, responses, wrong SM_Key, not master)",
        |s| s.dropped,
    ),
    (
        "sa_bad_sm_key",
        "SA requests dropped for a wrong non-zero SM_Key",
        |s| s.bad_key,
    ),
    (
        "sa_busy",
        "SA requests answered busy (no subnet up yet)",
        |s| s.busy,
    ),
    (
        "sa_queue_full",
        "SA requests answered busy because the request queue was full",
        |s| s.queue_full,
    ),
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct State {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeType {
    r#type: String,
}

/// A port, as the performance manager's series are labelled: both the GUID (stable) and the
/// NodeDescription (readable), and the port number.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PortLabels {
    node_guid: String,
    node_desc: String,
    port: String,
}

/// The metric name (without `ibsm_` and `_total`) of a port counter, and the factor to its
/// unit (PortXmitData/PortRcvData count 32-bit words; the metric counts bytes).
fn port_metric(c: PortCounter) -> (&'static str, u64) {
    match c {
        PortCounter::SymbolErrors => ("port_symbol_errors", 1),
        PortCounter::LinkErrorRecovery => ("port_link_error_recovery", 1),
        PortCounter::LinkDowned => ("port_link_downed", 1),
        PortCounter::RcvErrors => ("port_rcv_errors", 1),
        PortCounter::RcvRemotePhysicalErrors => ("port_rcv_remote_physical_errors", 1),
        PortCounter::RcvSwitchRelayErrors => ("port_rcv_switch_relay_errors", 1),
        PortCounter::XmitDiscards => ("port_xmit_discards", 1),
        PortCounter::XmitConstraintErrors => ("port_xmit_constraint_errors", 1),
        PortCounter::RcvConstraintErrors => ("port_rcv_constraint_errors", 1),
        PortCounter::LocalLinkIntegrityErrors => ("port_local_link_integrity_errors", 1),
        PortCounter::ExcessiveBufferOverrunErrors => ("port_excessive_buffer_overrun_errors", 1),
        PortCounter::Vl15Dropped => ("port_vl15_dropped", 1),
        PortCounter::XmitData => ("port_xmit_data_bytes", 4),
        PortCounter::RcvData => ("port_rcv_data_bytes", 4),
        PortCounter::XmitPkts => ("port_xmit_packets", 1),
        PortCounter::RcvPkts => ("port_rcv_packets", 1),
        PortCounter::XmitWait => ("port_xmit_wait", 1),
        PortCounter::Qp1Dropped => ("port_qp1_dropped", 1),
        PortCounter::UnicastXmitPkts => ("port_unicast_xmit_packets", 1),
        PortCounter::UnicastRcvPkts => ("port_unicast_rcv_packets", 1),
        PortCounter::MulticastXmitPkts => ("port_multicast_xmit_packets", 1),
        PortCounter::MulticastRcvPkts => ("port_multicast_rcv_packets", 1),
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabel {
    phase: String,
}

/// The daemon's metrics.
pub struct Metrics {
    registry: Registry,
    sm_state: Family<State, Gauge>,
    seen_states: HashSet<String>,
    sm_priority: Gauge,
    subnet_up: Gauge,
    sm_lid: Gauge,
    sweeps: Family<Kind, Counter>,
    phase_seconds: Family<PhaseLabel, Histogram>,
    sweep_seconds: Family<Kind, Histogram>,
    /// Seconds of the heavy sweep under way, phase by phase, until its Activation finishes.
    heavy_elapsed: f64,
    smps_sent: Counter,
    smps_retried: Counter,
    smps_timed_out: Counter,
    mads_received: Counter,
    traps_received: Counter,
    ports: Family<State, Gauge>,
    lids: Gauge,
    nodes: Family<NodeType, Gauge>,
    port_counters: Vec<(PortCounter, u64, Family<PortLabels, Counter>)>,
    perfmgr_sweeps: Counter,
    perfmgr_sweep_seconds: Histogram,
    perfmgr_queries: Counter,
    perfmgr_timed_out: Counter,
    perfmgr_ports: Gauge,
    sa: Vec<Counter>,
    /// The SA's counters at the last scrape (the counters grow by the difference).
    sa_seen: SaStats,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Discovery => "discovery",
        Phase::LidAssignment => "lid_assignment",
        Phase::Routing => "routing",
        Phase::Programming => "programming",
        Phase::Arming => "arming",
        Phase::Activation => "activation",
        Phase::LightSweep => "light_sweep",
        Phase::QosRead => "qos_read",
    }
}

impl Metrics {
    /// The metric families, registered.
    #[must_use]
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("ibsm");
        let m = Metrics {
            sm_state: Family::default(),
            seen_states: HashSet::new(),
            sm_priority: Gauge::default(),
            subnet_up: Gauge::default(),
            sm_lid: Gauge::default(),
            sweeps: Family::default(),
            phase_seconds: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 4.0, 10))
            }),
            sweep_seconds: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 4.0, 10))
            }),
            heavy_elapsed: 0.0,
            smps_sent: Counter::default(),
            smps_retried: Counter::default(),
            smps_timed_out: Counter::default(),
            mads_received: Counter::default(),
            traps_received: Counter::default(),
            ports: Family::default(),
            lids: Gauge::default(),
            nodes: Family::default(),
            port_counters: PortCounter::ALL
                .into_iter()
                .map(|c| (c, port_metric(c).1, Family::default()))
                .collect(),
            perfmgr_sweeps: Counter::default(),
            perfmgr_sweep_seconds: Histogram::new(exponential_buckets(0.001, 4.0, 10)),
            perfmgr_queries: Counter::default(),
            perfmgr_timed_out: Counter::default(),
            perfmgr_ports: Gauge::default(),
            sa: SA_COUNTERS.iter().map(|_| Counter::default()).collect(),
            sa_seen: SaStats::default(),
            registry: Registry::default(),
        };
        registry.register(
            "sm_state",
            "The SM's state (1 for the current one)",
            m.sm_state.clone(),
        );
        registry.register(
            "sm_priority",
            "The SM's priority (sm_priority)",
            m.sm_priority.clone(),
        );
        registry.register(
            "subnet_up",
            "1 while the subnet is up (SUBNET UP reached, no sweep pending)",
            m.subnet_up.clone(),
        );
        registry.register("sm_lid", "The SM port's LID", m.sm_lid.clone());
        registry.register(
            "sweeps",
            "Sweeps run, by kind (a heavy sweep counts when its discovery finishes)",
            m.sweeps.clone(),
        );
        registry.register(
            "sweep_phase_seconds",
            "Duration of each sweep phase",
            m.phase_seconds.clone(),
        );
        registry.register(
            "sweep_seconds",
            "Duration of whole sweeps by kind (heavy: discovery through activation)",
            m.sweep_seconds.clone(),
        );
        registry.register(
            "smps_sent",
            "SMPs sent, resends included",
            m.smps_sent.clone(),
        );
        registry.register(
            "smps_retried",
            "SMPs resent after a timeout",
            m.smps_retried.clone(),
        );
        registry.register(
            "smps_timed_out",
            "SMP transactions given up after the last retry",
            m.smps_timed_out.clone(),
        );
        registry.register("mads_received", "MADs received", m.mads_received.clone());
        registry.register("traps_received", "Traps received", m.traps_received.clone());
        registry.register("ports", "Linked ports by logical state", m.ports.clone());
        registry.register("lids_in_use", "Unicast LIDs assigned", m.lids.clone());
        registry.register("nodes", "Nodes discovered, by type", m.nodes.clone());
        registry.register(
            "perfmgr_sweeps",
            "Performance-manager sweeps finished",
            m.perfmgr_sweeps.clone(),
        );
        registry.register(
            "perfmgr_sweep_seconds",
            "Duration of performance-manager sweeps",
            m.perfmgr_sweep_seconds.clone(),
        );
        registry.register(
            "perfmgr_queries",
            "PerfMgt queries sent, resends included",
            m.perfmgr_queries.clone(),
        );
        registry.register(
            "perfmgr_queries_timed_out",
            "PerfMgt queries given up after the last retry",
            m.perfmgr_timed_out.clone(),
        );
        registry.register(
            "perfmgr_ports",
            "Ports the performance manager reads",
            m.perfmgr_ports.clone(),
        );
        for (c, factor, fam) in &m.port_counters {
            let unit = if *factor == 4 {
                " (in bytes: 4 x the IBA's 32-bit words)"
            } else {
                ""
            };
            registry.register(
                port_metric(*c).0,
                format!(
                    "{} of the port{unit}, as the performance manager reads it",
                    c.name()
                ),
                fam.clone(),
            );
        }
        for ((name, help, _), c) in SA_COUNTERS.iter().zip(&m.sa) {
            registry.register(*name, *help, c.clone());
        }
        Metrics { registry, ..m }
    }

    /// Reads the SA's counters (at a scrape).
    pub fn observe_sa(&mut self, st: SaStats) {
        for ((_, _, field), c) in SA_COUNTERS.iter().zip(&self.sa) {
            c.inc_by(field(&st).saturating_sub(field(&self.sa_seen)));
        }
        self.sa_seen = st;
    }

    /// A sweep phase finished (`sm::Event::PhaseDone`).
    pub fn phase_done(&mut self, phase: Phase, stats: &PhaseStats) {
        let secs = stats.elapsed.as_secs_f64();
        let kind = |k: &str| Kind { kind: k.into() };
        match phase {
            Phase::Discovery => {
                self.sweeps.get_or_create(&kind("heavy")).inc();
                self.heavy_elapsed = secs;
            }
            Phase::Activation => {
                self.heavy_elapsed += secs;
                self.sweep_seconds
                    .get_or_create(&kind("heavy"))
                    .observe(self.heavy_elapsed);
                self.heavy_elapsed = 0.0;
            }
            Phase::LightSweep => {
                self.sweeps.get_or_create(&kind("light")).inc();
                self.sweep_seconds
                    .get_or_create(&kind("light"))
                    .observe(secs);
            }
            Phase::QosRead => {}
            _ => self.heavy_elapsed += secs,
        }
        self.phase_seconds
            .get_or_create(&PhaseLabel {
                phase: phase_name(phase).into(),
            })
            .observe(stats.elapsed.as_secs_f64());
        self.smps_sent.inc_by(stats.smps);
        self.smps_retried.inc_by(stats.retried);
        self.smps_timed_out.inc_by(stats.timed_out);
    }

    /// A performance-manager sweep finished.
    pub fn perfmgr_sweep(&self, s: &SweepStats) {
        self.perfmgr_sweeps.inc();
        self.perfmgr_sweep_seconds.observe(s.elapsed.as_secs_f64());
        self.perfmgr_queries.inc_by(s.queries);
        self.perfmgr_timed_out.inc_by(s.timed_out);
    }

    /// Reads the performance manager's running totals into the per-port series (rebuilt at
    /// every scrape, so ports it forgot disappear and `clear_counters` shows as a reset).
    pub fn observe_perfmgr(&mut self, pm: &PerfMgr) {
        for (_, _, fam) in &self.port_counters {
            fam.clear();
        }
        let mut ports = 0i64;
        for r in pm.ports() {
            if r.samples == 0 {
                continue;
            }
            ports += 1;
            let labels = PortLabels {
                node_guid: format!("{:#018x}", r.node_guid.0),
                node_desc: r.node_desc.clone(),
                port: r.port.0.to_string(),
            };
            for (c, factor, fam) in &self.port_counters {
                fam.get_or_create(&labels)
                    .inc_by(r.total.get(*c).saturating_mul(*factor));
            }
        }
        self.perfmgr_ports.set(ports);
    }

    /// A MAD arrived (`trap`: its method is Trap).
    pub fn mad_received(&self, trap: bool) {
        self.mads_received.inc();
        if trap {
            self.traps_received.inc();
        }
    }

    /// Reads the SM's state into the gauges.
    pub fn observe(&mut self, sm: &Sm, priority: u8) {
        let state = format!("{:?}", sm.role()).to_lowercase();
        self.seen_states.insert(state.clone());
        for s in &self.seen_states {
            let v = i64::from(*s == state);
            self.sm_state
                .get_or_create(&State { state: s.clone() })
                .set(v);
        }
        self.sm_priority.set(i64::from(priority));
        self.subnet_up.set(i64::from(sm.is_up()));
        self.sm_lid.set(i64::from(sm.sm_lid().0));
        let subnet = sm.subnet();
        let (mut down, mut init, mut armed, mut active) = (0, 0, 0, 0);
        let mut lids = 0i64;
        let (mut sw, mut ca) = (0, 0);
        for id in subnet.node_ids() {
            let n = subnet.node(id);
            if n.is_switch() {
                sw += 1;
            } else {
                ca += 1;
            }
            for p in 1..=n.num_ports {
                let Some(port) = subnet.port(id, ibmad::PortNum(p)) else {
                    continue;
                };
                if port.remote.is_none() {
                    continue;
                }
                match port.state() {
                    ibmad::PortState::INIT => init += 1,
                    ibmad::PortState::ARMED => armed += 1,
                    ibmad::PortState::ACTIVE => active += 1,
                    _ => down += 1,
                }
            }
        }
        for (id, p) in subnet.end_ports() {
            let port = subnet.port(id, p);
            if let Some(port) = port.filter(|x| x.lid.0 != 0) {
                lids += 1i64 << port.lmc;
            }
        }
        for (s, v) in [
            ("down", down),
            ("init", init),
            ("armed", armed),
            ("active", active),
        ] {
            self.ports.get_or_create(&State { state: s.into() }).set(v);
        }
        self.lids.set(lids);
        self.nodes
            .get_or_create(&NodeType {
                r#type: "switch".into(),
            })
            .set(sw);
        self.nodes
            .get_or_create(&NodeType {
                r#type: "ca".into(),
            })
            .set(ca);
    }

    /// The OpenMetrics text of every family.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// The Prometheus text format (0.0.4) of an OpenMetrics exposition: counter families are named
/// after their `_total` sample, `# UNIT` and `# EOF` lines are left out; samples are unchanged.
#[must_use]
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // `# HELP` precedes `# TYPE` in a family; hold it until the type names the family.
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            if let Some((name, text)) = help.take() {
                out.push_str(&format!("# HELP {name} {text}\n"));
            }
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name, text));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let family = if kind == "counter" && !name.ends_with("_total") {
                format!("{name}_total")
            } else {
                name.to_string()
            };
            if let Some((h, text)) = help.take() {
                let h = if h == name { family.as_str() } else { h };
                out.push_str(&format!("# HELP {h} {text}\n"));
            }
            out.push_str(&format!("# TYPE {family} {kind}\n"));
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if let Some((name, text)) = help {
        out.push_str(&format!("# HELP {name} {text}\n"));
    }
    out
}

/// The HTTP endpoint: `GET /metrics`, polled from the daemon loop.
pub struct MetricsServer {
    server: tiny_http::Server,
}

impl MetricsServer {
    /// Listens on `addr` (`127.0.0.1:9464`).
    ///
    /// # Errors
    /// The address does not parse or bind.
    pub fn bind(addr: &str) -> Result<MetricsServer, String> {
        let server =
            tiny_http::Server::http(addr).map_err(|e| format!("metrics listen {addr}: {e}"))?;
        Ok(MetricsServer { server })
    }

    /// Answers every request waiting now; `render` gives the OpenMetrics text of `/metrics`.
    pub fn poll(&self, mut render: impl FnMut() -> String) {
        while let Ok(Some(req)) = self.server.try_recv() {
            let path = req.url().split('?').next().unwrap_or_default().to_string();
            let resp = if path == "/metrics" {
                let openmetrics = req.headers().iter().any(|h| {
                    h.field.equiv("Accept")
                        && h.value.as_str().contains("application/openmetrics-text")
                });
                let (body, ct) = if openmetrics {
                    (
                        render(),
                        &b"application/openmetrics-text; version=1.0.0; charset=utf-8"[..],
                    )
                } else {
                    (
                        to_prometheus_text(&render()),
                        &b"text/plain; version=0.0.4; charset=utf-8"[..],
                    )
                };
                let r = tiny_http::Response::from_string(body);
                match tiny_http::Header::from_bytes(&b"Content-Type"[..], ct) {
                    Ok(h) => r.with_header(h),
                    Err(()) => r,
                }
            } else {
                tiny_http::Response::from_string("see /metrics\n").with_status_code(404)
            };
            let _ = req.respond(resp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_count_sweeps_and_smps() {
        let mut m = Metrics::new();
        let st = PhaseStats {
            smps: 10,
            retried: 2,
            timed_out: 1,
            skipped: 0,
            elapsed: std::time::Duration::from_millis(5),
            ..PhaseStats::default()
        };
        m.phase_done(Phase::Discovery, &st);
        m.phase_done(Phase::LightSweep, &st);
        m.mad_received(true);
        let text = m.render();
        assert!(
            text.contains("ibsm_sweeps_total{kind=\"heavy\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("ibsm_sweeps_total{kind=\"light\"} 1"),
            "{text}"
        );
        assert!(text.contains("ibsm_smps_sent_total 20"), "{text}");
        assert!(text.contains("ibsm_smps_timed_out_total 2"), "{text}");
        assert!(text.contains("ibsm_traps_received_total 1"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        let prom = to_prometheus_text(&text);
        assert!(
            prom.contains(
                "# HELP ibsm_sweeps_total Sweeps run, by kind (a heavy sweep counts when its discovery finishes).\n# TYPE ibsm_sweeps_total counter\n"
            ) && prom.contains("\nibsm_sweeps_total{kind=\"heavy\"} 1\n"),
            "{prom}"
        );
        assert!(prom.contains("# TYPE ibsm_sm_priority gauge\n"), "{prom}");
        assert!(!prom.contains("# EOF"), "{prom}");
    }

    #[test]
    fn sa_counters_grow_by_what_the_sa_counted() {
        let mut m = Metrics::new();
        let mut st = SaStats {
            received: 5,
            answered: 4,
            dropped: 1,
            bad_key: 1,
            busy: 2,
            queue_full: 6,
        };
        m.observe_sa(st);
        st.received += 3;
        st.answered += 3;
        m.observe_sa(st);
        let text = m.render();
        for line in [
            "ibsm_sa_mads_received_total 8\n",
            "ibsm_sa_answered_total 7\n",
            "ibsm_sa_dropped_total 1\n",
            "ibsm_sa_bad_sm_key_total 1\n",
            "ibsm_sa_busy_total 2\n",
            "ibsm_sa_queue_full_total 6\n",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
    }
}

//! `ibsm verify --topology FILE_OR_SPEC (--lfts DUMP | --routing ENGINES) [--json]`: judges
//! forwarding tables against a topology with [`sm::verify`] — every CA reaches every CA (no
//! dead end, no loop), hop counts against shortest paths, credit loops (cycles of the channel
//! dependency graph, printed as the links that form them) and route balance.
//!
//! `--lfts` takes a dump in `opensm-lfts.dump`, `dump_fts` or `ibroute` format, so OpenSM's
//! tables can be judged as well as ours; the LIDs are those the dump records for each port
//! (else the topology's, else fresh ones). `--routing` instead computes our own tables with the
//! engine chain (`--root-guid-file`, `--lfts-file`, `--torus-config` and `--scatter-ports` as
//! OpenSM's options; a topology file's ports are taken to be VL-capable and to map SLs to VLs,
//! as ibsim's and our agents' are). An engine chain that routes nothing is a failed verdict
//! with the engines' log.
//! The verdict is [`sm::verify::Report::verdict`], the same `ibsm sim` exits on: tables from
//! `--routing` are held to the promise of the engine that computed them, a dump to that of
//! `--engine NAME` if given (else only reachability); a credit loop fails unless
//! `--allow-credit-loops`, zero CA pairs fail unless `--allow-no-pairs`. CA ports left out of
//! the check are listed with the reason.
//! Exit status: 0 when the tables pass, 1 when they fail, 2 on bad usage or input.

use std::fmt::Write as _;
use std::process::ExitCode;

use fabric_sim::topo::{subnet, Topology};
use sm::lid::{assign_lids, Guid2Lid, LidConfig};
use sm::routing::file::parse_lft_dump;
use sm::routing::{route_chain_with, EngineOptions, OptionFile};
use sm::Subnet;

const USAGE: &str = "\
usage: ibsm verify --topology FILE_OR_SPEC (--lfts DUMP | --routing ENGINES) [options]

  --topology T          topology file (ibsim .net or ibnetdiscover) or generator spec
  --lfts DUMP           tables to judge: opensm-lfts.dump, dump_fts or ibroute output
  --routing ENGINES     compute our tables instead (as -R, e.g. updn,minhop; ibsm has
                        minhop, updn, dnup, ftree, file, sssp, dfsssp, lash, nue, dor, torus-2QoS,
                        dfp, dfp2)
  --engine NAME         judge a --lfts dump against what NAME promises (minhop, sssp:
                        shortest paths; dor, lash, dfsssp: shortest and no credit loop;
                        updn, dnup, ftree, nue, torus-2QoS, dfp, dfp2: no credit loop)
  --root-guid-file F    root GUIDs for updn (with --routing)
  --lfts-file F         tables for the file engine (with --routing file)
  --torus-config F      torus-2QoS.conf for torus-2QoS (with --routing; `ibsm topo SPEC
                        --write-torus-conf F` writes one for a generated torus or mesh)
  --scatter-ports N     scatter_ports seed (with --routing)
  --vl                  judge credit loops on (link, VL) channels: the VL of each hop from
                        the SL-to-VL tables, the SL from the path (automatic with --routing
                        when the engine sets VLs or with -Q)
  -Q, --qos             with --routing: QoS on, as ibsm run -Q (engines that need it run;
                        ports get OpenSM's default qos_* SL-to-VL tables)
  --vl-cap N            VLCap (1..=5, default 4 = VL0-7, as ibsim) of ports the topology
                        gives none; OperationalVLs follow it, and such ports map SLs to VLs
                        (CapabilityMask.IsSLMappingSupported, as ibsim's and ours report)
  --sl2vl DUMP          with --lfts --vl: the tables, as opensm-sl2vl.dump (OpenSM's or ours)
  --path-sl DUMP        with --lfts --vl: path SLs, as ibsm-path-sl.dump (default: SL 0)
  --saquery FILE        with --lfts --vl: path SLs from saquery -p output (PathRecords)
  --allow-credit-loops  a credit loop is reported but does not fail
  --allow-no-pairs      a check of zero CA pairs does not fail
  --json                print the report as JSON
exit status: 0 pass, 1 fail (dead end, loop, credit loop, a broken promise, nothing
checked; the first line says which), 2 bad usage or input
";

/// Parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyArgs {
    /// Topology file or spec.
    pub topology: String,
    /// Dump to judge.
    pub lfts: Option<String>,
    /// Engines to run instead.
    pub routing: Option<String>,
    /// root_guid_file.
    pub root_guid_file: Option<String>,
    /// lfts_file.
    pub lfts_file: Option<String>,
    /// torus_config.
    pub torus_config: Option<String>,
    /// scatter_ports.
    pub scatter_ports: u64,
    /// JSON output.
    pub json: bool,
    /// The engine whose promise a dump is judged against.
    pub engine: Option<String>,
    /// Accept a credit loop.
    pub allow_credit_loops: bool,
    /// Accept a check of zero pairs.
    pub allow_no_pairs: bool,
    /// The VL-aware credit-loop check.
    pub vl: bool,
    /// QoS on (with --routing).
    pub qos: bool,
    /// VLCap of ports without one (0 = the default, 4).
    pub vl_cap: u8,
    /// opensm-sl2vl.dump to read.
    pub sl2vl: Option<String>,
    /// ibsm-path-sl.dump to read.
    pub path_sl: Option<String>,
    /// saquery -p output to read.
    pub saquery: Option<String>,
}

/// Parses the arguments after `verify`; `Ok(None)` = help.
pub fn parse_args(args: &[String]) -> Result<Option<VerifyArgs>, String> {
    let mut a = VerifyArgs::default();
    let mut topo = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut val = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match key {
            "-h" | "--help" => return Ok(None),
            "--json" => a.json = true,
            "--allow-credit-loops" => a.allow_credit_loops = true,
            "--allow-no-pairs" => a.allow_no_pairs = true,
            "--vl" => a.vl = true,
            "-Q" | "--qos" => a.qos = true,
            "--vl-cap" => {
                let v = val(key)?;
                a.vl_cap = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=5).contains(n))
                    .ok_or_else(|| format!("--vl-cap {v:?}: expected 1..=5"))?;
            }
            "--sl2vl" => a.sl2vl = Some(val(key)?),
            "--path-sl" => a.path_sl = Some(val(key)?),
            "--saquery" => a.saquery = Some(val(key)?),
            "--engine" => {
                let v = val(key)?;
                let known = crate::config::RoutingEngineId::from_name(&v).is_some() || v == "file";
                if !known {
                    return Err(format!(
                        "--engine {v:?} is not an OpenSM routing engine name"
                    ));
                }
                a.engine = Some(v);
            }
            "--topology" => topo = Some(val(key)?),
            "--lfts" => a.lfts = Some(val(key)?),
            "--routing" | "-R" => {
                let v = val(key)?;
                crate::config::RoutingEngines::parse(&v)
                    .map_err(|e| format!("--routing {v:?}: expected {e}"))?;
                a.routing = Some(v);
            }
            "--root-guid-file" | "--root_guid_file" | "-a" => {
                a.root_guid_file = Some(val(key)?);
            }
            "--lfts-file" | "--lfts_file" => a.lfts_file = Some(val(key)?),
            "--torus-config" | "--torus_config" => a.torus_config = Some(val(key)?),
            "--scatter-ports" | "--scatter_ports" => {
                let v = val(key)?;
                a.scatter_ports = v
                    .parse()
                    .map_err(|_| format!("--scatter-ports {v:?} is not a number"))?;
            }
            s => return Err(format!("unknown argument {s:?}")),
        }
    }
    a.topology = topo.ok_or("--topology is required")?;
    match (&a.lfts, &a.routing) {
        (None, None) => return Err("give --lfts DUMP or --routing ENGINES".into()),
        (Some(_), Some(_)) => return Err("--lfts and --routing exclude each other".into()),
        _ => {}
    }
    let vl_files = a.sl2vl.is_some() || a.path_sl.is_some() || a.saquery.is_some();
    if vl_files && (a.routing.is_some() || !a.vl) {
        return Err("--sl2vl, --path-sl and --saquery are for --lfts with --vl".into());
    }
    if a.path_sl.is_some() && a.saquery.is_some() {
        return Err("--path-sl and --saquery exclude each other".into());
    }
    if a.qos && a.lfts.is_some() {
        return Err("-Q is for --routing (a dump's tables come with --sl2vl)".into());
    }
    if a.engine.is_some() && a.routing.is_some() {
        return Err(
            "--engine is for --lfts; with --routing the engine that routed is judged".into(),
        );
    }
    Ok(Some(a))
}

/// A fabric-sim topology as an SM subnet: every cabled port linked and Active, the topology's
/// LIDs kept where it has them ([`fabric_sim::topo::subnet`]).
#[must_use]
pub fn subnet_from_topology(t: &Topology) -> Subnet {
    let mut s = subnet::to_subnet(t);
    subnet::copy_lids(t, &mut s);
    s
}

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))
}

fn option_file(path: &Option<String>) -> Option<OptionFile> {
    path.as_ref().map(|p| OptionFile {
        path: p.clone(),
        contents: std::fs::read_to_string(p).map_err(|e| e.to_string()),
    })
}

/// The verdict when no engine of the chain routed: the failure, and the engines' log (which
/// says why each gave up).
fn no_tables(e: &sm::routing::RouteError, json: bool) -> String {
    let log: &[String] = match e {
        sm::routing::RouteError::AllEnginesFailed { log, .. } => log,
        _ => &[],
    };
    if json {
        let v = serde_json::json!({
            "passed": false,
            "engine": null,
            "failures": [e.to_string()],
            "notes": [],
            "log": log,
        });
        return format!("{v}\n");
    }
    let mut t = format!("verify: FAILED: {e}\n");
    push_log(&mut t, log);
    t
}

/// The engines' log lines, each with its level, as `ibsm verify` prints them.
fn push_log(t: &mut String, log: &[String]) {
    for l in log {
        let level = sm::routing::log_line_level(l);
        let _ = writeln!(t, "{level:<5} {l}");
    }
}

/// Runs the verification; returns the text to print and whether the tables passed.
pub fn run(a: &VerifyArgs) -> Result<(String, bool), String> {
    let progress = crate::progress::Progress::new(true);
    let t = crate::simrun::load_topology(&a.topology, &progress)
        .map_err(|e| format!("topology {:?}: {e}", a.topology))?;
    progress.message("reading the tables");
    let mut s = subnet_from_topology(&t);
    let vl_cap = if a.vl_cap == 0 { 4 } else { a.vl_cap };
    for p in &mut s.ports {
        if let Some(i) = p.info.as_mut() {
            if i.vl_cap() == 0 {
                // A topology file has no PortInfo capabilities: the port is taken to be as
                // ibsim's and our agents' are, VL-capable and mapping SLs to VLs (without
                // the bit the SM programs no SL-to-VL table, and every SL would ride VL 0).
                use ibmad::attr::port_info::cap::IS_SL_MAP_SUP;
                i.set_vl_cap(vl_cap);
                i.capability_mask
                    .set(i.capability_mask.get() | IS_SL_MAP_SUP);
            }
            if i.operational_vls() == 0 {
                i.set_operational_vls(i.vl_cap().min(5));
            }
        }
    }
    let mut log = Vec::new();
    let mut routes = None;
    let mut engine = a.engine.clone().unwrap_or_else(|| "dump".to_string());
    let mut unread_tops = Vec::new();
    let lfts = if let Some(path) = &a.lfts {
        let dump = parse_lft_dump(&read(path)?).map_err(|e| format!("{path}: {e}"))?;
        unread_tops = dump.unread_top_lids();
        let n = dump
            .apply_lids(&mut s)
            .map_err(|e| format!("{path}: {e}"))?;
        if n == 0 && s.end_ports().all(|(x, p)| s.lid_of(x, p).0 == 0) {
            fresh_lids(&mut s)?;
        }
        dump.to_lfts(&s).map_err(|e| format!("{path}: {e}"))?
    } else {
        if s.end_ports().any(|(x, p)| s.lid_of(x, p).0 == 0) {
            fresh_lids(&mut s)?;
        }
        let engines = vec![a.routing.clone().unwrap_or_default()];
        let opts = EngineOptions {
            scatter_ports: a.scatter_ports,
            root_guid_file: option_file(&a.root_guid_file),
            lfts_file: option_file(&a.lfts_file),
            torus_config: option_file(&a.torus_config),
            qos: a.qos,
            ..EngineOptions::default()
        };
        let cfg = sm::SmConfig {
            routing_engine: engines.clone(),
            ..sm::SmConfig::default()
        };
        cfg.validate().map_err(|e| e.to_string())?;
        progress.message("routing");
        let out = match route_chain_with(&engines, false, &s, a.scatter_ports, &opts) {
            Ok(out) => out,
            Err(e @ sm::routing::RouteError::AllEnginesFailed { .. }) => {
                progress.finish();
                return Ok((no_tables(&e, a.json), false));
            }
            Err(e) => return Err(e.to_string()),
        };
        log = out.log;
        engine = out.engine.to_string();
        let l = out.routes.lfts.clone();
        routes = Some(out.routes);
        l
    };
    progress.message("verifying the tables");
    let report = match &routes {
        Some(r) => {
            let qos = sm::qos::QosConfig {
                enabled: a.qos,
                ..sm::qos::QosConfig::default()
            };
            let rep = sm::verify::verify_routes(&s, r, &qos, 5);
            if a.vl && rep.vl.is_none() {
                dump_vl_check(&s, &lfts, a, &mut log)?
            } else {
                rep
            }
        }
        None if a.vl => dump_vl_check(&s, &lfts, a, &mut log)?,
        None => sm::verify::verify(&s, &lfts),
    };
    progress.finish();
    let verdict = report.verdict(
        &engine,
        &sm::verify::Policy {
            allow_credit_loops: a.allow_credit_loops,
            allow_no_pairs: a.allow_no_pairs,
        },
    );
    let notes: Vec<String> = unread_tops
        .iter()
        .map(|top| {
            format!(
                "no table lists LID {0} (0x{0:x}), the top of the tables: dump_fts and ibroute \
                 (infiniband-diags) do not read the LFT block of a top LID that is a multiple of \
                 64, so routes to it look missing; `ibsm dump-fts` reads it",
                top.0
            )
        })
        .collect();
    let text = if a.json {
        let esc = |t: &str| t.replace('\\', "\\\\").replace('"', "\\\"");
        let failures: Vec<String> = verdict
            .failures
            .iter()
            .map(|f| format!("\"{}\"", esc(&f.to_string())))
            .collect();
        let notes: Vec<String> = notes.iter().map(|n| format!("\"{}\"", esc(n))).collect();
        let body = report.to_json(&s);
        format!(
            "{{\"passed\":{},\"engine\":\"{}\",\"failures\":[{}],\"notes\":[{}],{}\n",
            verdict.passed(),
            esc(&engine),
            failures.join(","),
            notes.join(","),
            body.strip_prefix('{').unwrap_or(&body)
        )
    } else {
        let mut t = format!("verify: {verdict}\n");
        for n in &notes {
            let _ = writeln!(t, "note: {n}");
        }
        push_log(&mut t, &log);
        t.push_str(&report.summary(&s));
        t
    };
    Ok((text, verdict.passed()))
}

/// The VL-aware check of tables read from files: SL-to-VL from `--sl2vl` (every table VL 0
/// without it, what ports hold before an SM writes them), path SLs from `--path-sl` or
/// `--saquery` (SL 0 without).
fn dump_vl_check(
    s: &Subnet,
    lfts: &sm::routing::Lfts,
    a: &VerifyArgs,
    log: &mut Vec<String>,
) -> Result<sm::verify::Report, String> {
    use sm::verify::vl::{PathSlSource, UniformSl, VlInputs, VlLimit};
    let sl2vl = match &a.sl2vl {
        Some(path) => {
            let (t, unknown) =
                sm::dump::parse_sl2vl_dump(s, &read(path)?).map_err(|e| format!("{path}: {e}"))?;
            if unknown > 0 {
                log.push(format!(
                    "{path}: {unknown} port blocks name GUIDs the topology does not have (skipped)"
                ));
            }
            t
        }
        None => sm::routing::vl::Sl2VlTables::new(s),
    };
    let map = match (&a.path_sl, &a.saquery) {
        (Some(path), _) => {
            Some(sm::dump::parse_path_sl_dump(&read(path)?).map_err(|e| format!("{path}: {e}"))?)
        }
        (None, Some(path)) => {
            Some(sm::dump::parse_saquery_paths(&read(path)?).map_err(|e| format!("{path}: {e}"))?)
        }
        (None, None) => None,
    };
    let zero = UniformSl(0);
    let path_sl: &dyn PathSlSource = match &map {
        Some(m) => m,
        None => &zero,
    };
    Ok(sm::verify::verify_with_vls(
        s,
        lfts,
        &VlInputs {
            sl2vl: &sl2vl,
            path_sl,
            limit: VlLimit::OperVls,
        },
    ))
}

fn fresh_lids(s: &mut Subnet) -> Result<(), String> {
    assign_lids(
        s,
        &LidConfig {
            lmc: 0,
            reassign_lids: true,
            lmc_esp0: false,
        },
        &Guid2Lid::new(),
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// `ibsm verify` entry point.
#[must_use]
pub fn main(args: &[String]) -> ExitCode {
    let a = match parse_args(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ibsm verify: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok((text, ok)) => {
            print!("{text}");
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("ibsm verify: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_and_rejects() {
        let a = parse_args(&args("--topology torus:4,4 --routing updn --json"))
            .unwrap()
            .unwrap();
        assert_eq!(a.routing.as_deref(), Some("updn"));
        assert!(a.json);
        assert!(parse_args(&args("--routing updn")).is_err());
        assert!(parse_args(&args("--topology x")).is_err());
        assert!(parse_args(&args("--topology x --lfts a --routing b")).is_err());
        assert!(parse_args(&args("--help")).unwrap().is_none());
    }

    /// `--vl` on stock OpenSM's own output (`-Q`, minhop, 2sw2path; sm/testdata/opensm): its
    /// tables and SL-to-VL dump pass the VL-aware check; the same tables with every SL on
    /// VL 15 (dropped) fail it; minhop's torus tables fail it on one VL as they fail the
    /// one-VL check.
    #[test]
    fn vl_check_of_opensm_dumps() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../sm/testdata/opensm/2sw2path-qos"
        );
        let mk = |sl2vl: &str| VerifyArgs {
            topology: format!("{dir}/net.txt"),
            lfts: Some(format!("{dir}/opensm-lfts.dump")),
            vl: true,
            sl2vl: Some(sl2vl.to_string()),
            ..VerifyArgs::default()
        };
        let (text, ok) = run(&mk(&format!("{dir}/opensm-sl2vl.dump"))).unwrap();
        assert!(ok, "{text}");
        assert!(text.contains("VL-aware credit loops"), "{text}");
        assert!(text.contains("acyclic (deadlock-free)"), "{text}");
        let tmp = std::env::temp_dir().join(format!("ibsm-verify-vl-{}", std::process::id()));
        let orig = std::fs::read_to_string(format!("{dir}/opensm-sl2vl.dump")).unwrap();
        let bad: String = orig
            .lines()
            .map(|l| match l.split_once(':') {
                Some((ports, _)) if !l.starts_with('#') => {
                    format!("{ports}:{}\n", " 15".repeat(16))
                }
                _ => format!("{l}\n"),
            })
            .collect();
        std::fs::write(&tmp, bad).unwrap();
        let (text, ok) = run(&mk(tmp.to_str().unwrap())).unwrap();
        let _ = std::fs::remove_file(&tmp);
        assert!(!ok, "{text}");
        assert!(text.contains("map to VL 15 (dropped)"), "{text}");

        let a = VerifyArgs {
            topology: "torus:4,4".into(),
            routing: Some("minhop".into()),
            vl: true,
            ..VerifyArgs::default()
        };
        let (text, ok) = run(&a).unwrap();
        assert!(!ok, "{text}");
        assert!(text.contains("CYCLE FOUND"), "{text}");
        assert!(parse_args(&args("--topology t --routing minhop --sl2vl x --vl")).is_err());
        assert!(parse_args(&args("--topology t --lfts l --sl2vl x")).is_err());
        assert!(parse_args(&args("--topology t --lfts l -Q")).is_err());
    }

    #[test]
    fn minhop_on_a_torus_fails_updn_passes() {
        let mk = |r: &str| VerifyArgs {
            topology: "torus:4,4".into(),
            routing: Some(r.into()),
            ..VerifyArgs::default()
        };
        let (text, ok) = run(&mk("minhop")).unwrap();
        assert!(!ok, "{text}");
        assert!(text.contains("CYCLE FOUND"), "{text}");
        let (text, ok) = run(&mk("updn")).unwrap();
        assert!(ok, "{text}");
        assert!(text.contains("updn tables configured"), "{text}");
        let mut j = mk("updn");
        j.json = true;
        let (text, _) = run(&j).unwrap();
        assert!(
            text.starts_with(
                "{\"passed\":true,\"engine\":\"updn\",\"failures\":[],\"notes\":[],\"ok\":true,"
            ),
            "{text}"
        );
    }

    /// `verify --routing ENGINE -Q` models the topology's ports as ibsim's and ours are (they
    /// map SLs to VLs), so lash's and dfsssp's layers ride VLs of their own and pass the
    /// VL-aware check; without that every SL rode VL 0 and their correct tables "failed" with a
    /// credit loop. torus-2QoS takes `--torus-config`; an engine that cannot route is a FAILED
    /// verdict that says why.
    #[test]
    fn vl_engines_pass_verify_routing_with_their_vls() {
        let dir = std::env::temp_dir().join(format!("ibsm-verify-vl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("torus-2QoS.conf");
        std::fs::write(
            &conf,
            sm::routing::torus::TorusConfig::for_grid(
                [5, 5, 1],
                false,
                fabric_sim::topo::gen::SWITCH_GUID_BASE,
            ),
        )
        .unwrap();
        let mk = |r: &str| VerifyArgs {
            topology: "torus:5,5".into(),
            routing: Some(format!("{r},no_fallback")),
            qos: true,
            torus_config: (r == "torus-2QoS").then(|| conf.display().to_string()),
            ..VerifyArgs::default()
        };
        for (engine, vls) in [
            ("lash", "VLs 0,1,2 on"),
            ("dfsssp", "VLs 0,1,2,3,4,5,6,7 on"),
            ("torus-2QoS", "VLs 0,1 on"),
        ] {
            let (text, ok) = run(&mk(engine)).unwrap();
            assert!(ok, "{engine}: {text}");
            assert!(text.contains(vls), "{engine}: {text}");
            assert!(text.contains("acyclic (deadlock-free)"), "{engine}: {text}");
        }
        let mut a = mk("torus-2QoS");
        a.torus_config = None;
        let (text, ok) = run(&a).unwrap();
        assert!(!ok, "{text}");
        assert!(
            text.starts_with("verify: FAILED: no routing engine able"),
            "{text}"
        );
        assert!(text.contains("ERR 4E11: no torus-2QoS.conf"), "{text}");
        a.json = true;
        let (text, ok) = run(&a).unwrap();
        assert!(!ok);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["passed"], false);
        assert!(v["log"][0].as_str().unwrap().contains("ERR 4E11"), "{text}");
        assert!(
            parse_args(&args("--topology t --routing torus-2QoS --torus-config c"))
                .unwrap()
                .unwrap()
                .torus_config
                .is_some()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sim_reports_the_verifier_result_after_bring_up() {
        let sim = |engine: &str| {
            let args = crate::simrun::SimArgs::new(
                "torus:4,4",
                sm::SmConfig {
                    routing_engine: vec![engine.into()],
                    sweep_interval: std::time::Duration::ZERO,
                    ..sm::SmConfig::default()
                },
            );
            let mut out = Vec::new();
            let o = crate::simrun::run(&args, &mut out).unwrap();
            (o, String::from_utf8(out).unwrap())
        };
        let (o, text) = sim("minhop");
        assert!(o.up);
        assert!(o.verify.unwrap().credit_loop.is_some());
        assert!(text.contains("credit loops     CYCLE of"), "{text}");
        let (o, text) = sim("updn");
        assert!(o.verify.unwrap().credit_loop.is_none());
        assert!(text.contains("credit loops     none"), "{text}");
    }

    /// issue 14: the VL engines come up in `ibsm sim` with `-Q` on a 2-D torus, route with no
    /// fallback, program their SL-to-VL tables and pass the VL-aware check the verdict uses;
    /// min-hop's tables with `-Q` still fail it (one VL per path, a credit loop).
    #[test]
    fn vl_engines_come_up_in_sim_and_pass_the_vl_check() {
        use fabric_sim::topo::gen::SWITCH_GUID_BASE;
        use sm::routing::torus::TorusConfig;
        let sim = |engine: &str| {
            let mut cfg = sm::SmConfig {
                routing_engine: vec![engine.into()],
                sweep_interval: std::time::Duration::ZERO,
                ..sm::SmConfig::default()
            };
            cfg.qos.enabled = true;
            cfg.engine_options.qos = true;
            cfg.engine_options.torus_config = Some(OptionFile::from_text(
                "torus-2QoS.conf",
                &TorusConfig::for_grid([4, 4, 1], false, SWITCH_GUID_BASE),
            ));
            let args = crate::simrun::SimArgs::new("torus:4,4", cfg);
            let mut out = Vec::new();
            let o = crate::simrun::run(&args, &mut out).unwrap();
            (o, String::from_utf8(out).unwrap())
        };
        for engine in ["lash", "dfsssp", "nue", "torus-2QoS"] {
            let (o, text) = sim(engine);
            assert!(o.up, "{engine}: {text}");
            assert_eq!(o.engine, engine, "{text}");
            let rep = o.verify.as_ref().unwrap();
            let vl = rep.vl.as_ref().expect("judged with VLs");
            assert!(vl.routes > 0, "{engine}");
            assert!(vl.credit_loop.is_none(), "{engine}: {text}");
            assert!(o.verdict.as_ref().unwrap().passed(), "{engine}: {text}");
        }
        let (o, text) = sim("minhop");
        assert!(o.verify.as_ref().unwrap().vl.is_some(), "{text}");
        assert!(!o.verdict.as_ref().unwrap().passed(), "{text}");
    }

    #[test]
    fn judges_a_dump_written_by_our_own_dumper() {
        let t = Topology::generate("fat-tree:2,4").unwrap();
        let mut s = subnet_from_topology(&t);
        fresh_lids(&mut s).unwrap();
        let out = sm::routing::route_chain(&["minhop".into()], false, &s, 0).unwrap();
        let dir = std::env::temp_dir().join(format!("ibsm-verify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("opensm-lfts.dump");
        std::fs::write(&p, sm::dump::lfts_dump(&s, &out.routes.lfts)).unwrap();
        let a = VerifyArgs {
            topology: "fat-tree:2,4".into(),
            lfts: Some(p.to_string_lossy().into_owned()),
            ..VerifyArgs::default()
        };
        let (text, ok) = run(&a).unwrap();
        assert!(ok, "{text}");
        assert!(
            text.contains("0 unreachable, 0 looping, 0 longer"),
            "{text}"
        );
        std::fs::write(
            &p,
            "Unicast lids [0-3] of switch Lid 1 guid 0x1 ('x'):\nbogus\n",
        )
        .unwrap();
        let e = run(&a).unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A dump that lacks the top LID (128) of every table, as dump_fts writes it, fails with a
    /// note naming the cause; with the LID listed there is no note.
    #[test]
    fn notes_a_top_lid_left_out_of_every_table() {
        let t = Topology::generate("torus:4,4,4").unwrap();
        let mut s = subnet_from_topology(&t);
        fresh_lids(&mut s).unwrap();
        let out = sm::routing::route_chain(&["minhop".into()], false, &s, 0).unwrap();
        let dir = std::env::temp_dir().join(format!("ibsm-verify-top-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("opensm-lfts.dump");
        let full = sm::dump::lfts_dump(&s, &out.routes.lfts);
        let a = VerifyArgs {
            topology: "torus:4,4,4".into(),
            lfts: Some(p.to_string_lossy().into_owned()),
            allow_credit_loops: true,
            ..VerifyArgs::default()
        };
        std::fs::write(&p, &full).unwrap();
        let (text, ok) = run(&a).unwrap();
        assert!(ok && !text.contains("note:"), "{text}");
        let cut: String = full
            .lines()
            .filter(|l| !l.starts_with("0x0080 "))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&p, cut).unwrap();
        let (text, ok) = run(&a).unwrap();
        assert!(!ok, "{text}");
        assert!(
            text.lines()
                .nth(1)
                .is_some_and(|l| l.starts_with("note: no table lists LID 128 (0x80)")),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

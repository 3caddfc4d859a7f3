//! The `ibsm` command: dispatches to the library (`ibsm::…`).

use std::process::ExitCode;

use ibsm::config::{self, Action};
use ibsm::simrun;

const USAGE: &str = "\
usage: ibsm <command> [options]

commands:
  sim TOPOLOGY [options]   run the subnet manager against the built-in simulated fabric;
                           TOPOLOGY is a topology file (ibnetdiscover or ibsim .net format)
                           or a generator spec such as fat-tree:2,36, fat-tree:3,36,
                           torus:8,8,8, mesh:4,4, hypercube:4, dragonfly:..., random:...
  sim serve TOPOLOGY       serve the simulated fabric over ibsim's protocol (OpenSM, diags)
  run [options]            run the subnet manager on a real port (OpenSM's options)
  bench opensm TOPOLOGY    OpenSM vs `ibsm run -o` on ibsim: time to SUBNET UP, SMPs, CPU
  sma --device (vfio-user:SOCKET | 0000:BB:DD.F)
                           host SMA for an RA-1 switch ASIC (docs/reference-asic.md)
  asic-model TOPOLOGY --socket-dir DIR [--sm] [--exit-on-up]
                           simulated fabric whose switches are RA-1 models served over vfio-user
  verify --topology T (--lfts DUMP | --routing ENGINES) [--json]
                           check tables: reachability, hop counts, credit loops, balance
  topo TOPOLOGY [--fault F]... [--write-net FILE] [--write-torus-conf FILE] [--write-root-guids FILE]
                           load a topology (file or generator spec), print its size, and
                           write it as an ibsim .net file (for ibsim, OpenSM, the benchmarks),
                           the torus-2QoS.conf of a generated torus/mesh, or the root GUIDs
                           of a generated fat tree or dragonfly; --fault link:NAME:PORT or
                           switch:NAME breaks the fabric first
  ctl [--socket PATH] status | sweep [light|heavy] | reroute | loglevel N | perfmgr … | dump
                           steer a running `ibsm run` (its control socket)
  discover | query | route | dump-fts | links | trace | portstate | counters | stat [--transport T]
                           the diags (ibnetdiscover, smpquery/sminfo, ibroute, dump_fts,
                           iblinkinfo, ibtracert, ibportstate, perfquery, ibstat) over umad[:CA[:PORT]],
                           vfio:BDF, vfio-user:SOCKET or sim:TOPOLOGY; `--help` on each
  help                     this text; `ibsm sim --help` and `ibsm run --help` list options
  --version, -V            the version

routing engines (-R, comma-separated, tried in order, then minhop unless no_fallback):
  minhop, updn, dnup, ftree, file, sssp, dfsssp, lash, nue, dor, torus-2QoS, dfp, dfp2
  (lash, dfsssp, nue: -Q for more than one VL; torus-2QoS: -Q and --torus_config, which
  `ibsm topo SPEC --write-torus-conf FILE` writes for a generated torus or mesh)
exit status: 0 success, 1 the subnet or its tables failed (the message says what), 2 bad
usage or input
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    match cmd.as_str() {
        "--version" | "-V" | "version" => {
            println!("ibsm {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        "sim" => cmd_sim(rest),
        "run" => cmd_run(rest),
        "verify" => ibsm::verify_cmd::main(rest),
        "topo" => cmd_topo(rest),
        "bench" => ibsm::bench_cmd::main(rest),
        "sma" => ibsm::sma_cmd::main(rest),
        "asic-model" => ibsm::asic_cmd::main(rest),
        "ctl" => ibsm::ctl::client_main(rest),
        "discover" | "query" | "route" | "dump-fts" | "links" | "trace" | "portstate"
        | "counters" | "stat" => ibsm::diag::main(cmd, rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("ibsm: unknown command {other:?}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("ibsm: {msg}");
    ExitCode::from(2)
}

fn cmd_sim(args: &[String]) -> ExitCode {
    if let Some(("serve", rest)) = args.split_first().map(|(f, r)| (f.as_str(), r)) {
        return ibsm::serve_cmd::main(rest);
    }
    match simrun::parse_cli(args) {
        Err(e) => fail(e),
        Ok(simrun::SimCli::Help(text)) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Ok(simrun::SimCli::Version) => {
            println!("ibsm {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Ok(simrun::SimCli::CreateConfig(path, options)) => {
            match config::create_config_file(&path, &options) {
                Ok(()) => {
                    println!("ibsm: wrote {}", path.display());
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        Ok(simrun::SimCli::Run(args, warnings)) => {
            for w in warnings {
                eprintln!("ibsm: warning: {w}");
            }
            let mut out = std::io::stdout().lock();
            match simrun::run(&args, &mut out) {
                Ok(o) if o.ok() => ExitCode::SUCCESS,
                Ok(_) => ExitCode::from(1),
                Err(e) => fail(e),
            }
        }
    }
}

/// `ibsm topo`.
#[derive(clap::Parser, Debug)]
#[command(
    name = "ibsm topo",
    about = "Load a topology (file or generator spec), print its size, and write it out"
)]
struct TopoArgs {
    /// Topology file (ibnetdiscover or ibsim .net format) or generator spec (torus:8,8,8, ...)
    topology: String,
    /// Write the fabric as an ibsim .net file (for ibsim, OpenSM, the benchmarks)
    #[arg(long, value_name = "FILE")]
    write_net: Option<String>,
    /// Write the torus-2QoS.conf of a generated torus:/mesh: fabric (for --torus_config)
    #[arg(long, value_name = "FILE")]
    write_torus_conf: Option<String>,
    /// Write the root switch GUIDs of a generated fat-tree:, kary-ntree: or dragonfly: fabric
    /// (for --root_guid_file: updn, ftree, dfp, dfp2)
    #[arg(long, value_name = "FILE")]
    write_root_guids: Option<String>,
    /// Break the fabric before writing it: link:NAME:PORT pulls that cable, switch:NAME removes
    /// the switch and the CAs cabled only to it (repeatable; the torus-2QoS.conf and root GUIDs
    /// stay those of the whole fabric)
    #[arg(long, value_name = "FAULT")]
    fault: Vec<String>,
}

fn cmd_topo(args: &[String]) -> ExitCode {
    let argv = std::iter::once("ibsm topo".to_string()).chain(args.iter().cloned());
    let a: TopoArgs = match ibsm::diag::cmds::parse(argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let spec = &a.topology;
    // The files that need a generator spec first: cheap to refuse before anything is written.
    let mut texts = Vec::new();
    if let Some(file) = &a.write_torus_conf {
        match torus_conf_of(spec) {
            Ok(text) => texts.push((file, text)),
            Err(e) => return fail(format!("--write-torus-conf: {e}")),
        }
    }
    if let Some(file) = &a.write_root_guids {
        match root_guids_of(spec) {
            Ok(text) => texts.push((file, text)),
            Err(e) => return fail(format!("--write-root-guids: {e}")),
        }
    }
    let mut faults = Vec::new();
    for f in &a.fault {
        match f.parse::<fabric_sim::topo::Fault>() {
            Ok(f) => faults.push(f),
            Err(e) => return fail(format!("--fault: {e}")),
        }
    }
    let progress = ibsm::progress::Progress::new(true);
    let mut t = match simrun::load_topology(spec, &progress) {
        Ok(t) => t,
        Err(e) => return fail(format!("topology {spec:?}: {e}")),
    };
    for (text, f) in a.fault.iter().zip(&faults) {
        t = match t.with_fault(f) {
            Ok(t) => t,
            Err(e) => return fail(format!("--fault {text}: {e}")),
        };
    }
    let mut wrote = Vec::new();
    if let Some(file) = &a.write_net {
        progress.message(&format!("writing {file}"));
        if let Err(e) = t.save_net(file) {
            return fail(format!("{file}: {e}"));
        }
        wrote.push(file.as_str());
    }
    for (file, text) in &texts {
        if let Err(e) = std::fs::write(file, text) {
            return fail(format!("{file}: {e}"));
        }
        wrote.push(file.as_str());
    }
    progress.finish();
    println!(
        "{spec}: {} switches, {} CAs, {} links{}",
        t.num_switches(),
        t.num_cas(),
        t.num_links(),
        if wrote.is_empty() {
            String::new()
        } else {
            format!("; wrote {}", wrote.join(", "))
        }
    );
    ExitCode::SUCCESS
}

/// The torus-2QoS.conf of a generated `torus:`/`mesh:` spec.
fn torus_conf_of(spec: &str) -> Result<String, String> {
    use fabric_sim::topo::gen::Grid;
    match Grid::of_spec(spec) {
        Ok(Some(g)) => Ok(fabric_sim::topo::subnet::torus_conf(&g)),
        Ok(None) => Err(format!(
            "{spec:?} is not a generated torus or mesh (torus:X,Y[,Z] or mesh:X,Y[,Z]); write the torus-2QoS.conf of another fabric by hand"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// The root_guid_file of a generated tree or Dragonfly+ spec: one GUID a line.
fn root_guids_of(spec: &str) -> Result<String, String> {
    match fabric_sim::topo::gen::root_guids(spec) {
        Ok(Some(guids)) => Ok(guids.iter().map(|g| format!("0x{:016x}\n", g.0)).collect()),
        Ok(None) => Err(format!(
            "{spec:?} is not a generated fat-tree, kary-ntree or dragonfly (the generators with a top tier); write the root GUIDs of another fabric by hand"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// [`take_opt`], also as `SHORT VALUE` (OpenSM's `-J FILE`).
fn take_opt_or_short(
    args: Vec<String>,
    name: &str,
    short: &str,
) -> Result<(Vec<String>, Option<String>), String> {
    let (args, long) = take_opt(args, name)?;
    let mut rest = Vec::new();
    let mut value = long;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == short {
            value = Some(it.next().ok_or(format!("{short} needs a value"))?);
        } else {
            rest.push(a);
        }
    }
    Ok((rest, value))
}

/// Takes `--NAME VALUE` / `--NAME=VALUE` (an ibsm option OpenSM lacks) out of `args`.
fn take_opt(args: Vec<String>, name: &str) -> Result<(Vec<String>, Option<String>), String> {
    let flag = format!("--{name}");
    let eq = format!("--{name}=");
    let mut rest = Vec::new();
    let mut value = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == flag {
            value = Some(it.next().ok_or(format!("{flag} needs a value"))?);
        } else if let Some(v) = a.strip_prefix(&eq) {
            value = Some(v.to_string());
        } else {
            rest.push(a);
        }
    }
    Ok((rest, value))
}

fn cmd_run(args: &[String]) -> ExitCode {
    let taken = take_opt(args.to_vec(), "ctl-socket")
        .and_then(|(rest, ctl)| take_opt(rest, "metrics-listen").map(|(rest, m)| (rest, ctl, m)))
        .and_then(|(rest, ctl, m)| {
            take_opt_or_short(rest, "pidfile", "-J").map(|(rest, pid)| (rest, ctl, m, pid))
        });
    let (args, ctl_socket, metrics_listen, pidfile) = match taken {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let args = args.as_slice();
    let parsed = match config::parse_run_args(args) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    for w in config::summarize_warnings(&parsed.warnings) {
        eprintln!("ibsm: warning: {w}");
    }
    match parsed.action {
        Action::Help => {
            println!(
                "usage: ibsm run [options]\n\n{}\n  --ctl-socket PATH         control socket for `ibsm ctl` (default {}, not with -o)\n  --metrics-listen ADDR     serve Prometheus/OpenMetrics at http://ADDR/metrics (off by default)\n  --pidfile, -J FILE        write the SM's process ID to FILE (removed at exit)",
                config::usage(&[]),
                ibsm::ctl::DEFAULT_SOCKET
            );
            ExitCode::SUCCESS
        }
        Action::Version => {
            println!("ibsm {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Action::CreateConfig(path) => match config::create_config_file(&path, &parsed.options) {
            Ok(()) => {
                println!("ibsm: wrote {}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Action::Run => {
            let required = ctl_socket.is_some();
            let socket = match ctl_socket {
                Some(p) => Some(p.into()),
                None if parsed.options.once => None,
                None => Some(ibsm::ctl::DEFAULT_SOCKET.into()),
            };
            let control = ibsm::daemon::Control {
                args: args.to_vec(),
                socket,
                socket_required: required,
                metrics_listen,
            };
            if parsed.options.once && parsed.options.sm_inactive {
                return fail(
                    "-o with -I (sm_inactive): an inactive SM sweeps nothing, so it would never configure the subnet",
                );
            }
            if parsed.options.daemon {
                // As OpenSM's -B: detached once the options are read (their errors were
                // printed above); what goes wrong later is in the log file.
                if let Err(e) = nix::unistd::daemon(true, false) {
                    return fail(format!("daemon mode: {e}"));
                }
            }
            if let Some(p) = &pidfile {
                if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
                    ibsm::daemon::log_fatal(&parsed.options, &format!("pidfile {p}: {e}"));
                    return fail(format!("pidfile {p}: {e}"));
                }
            }
            let code = ibsm::daemon::run_controlled(&parsed.options, &control);
            if let Some(p) = &pidfile {
                let _ = std::fs::remove_file(p);
            }
            code
        }
    }
}

//! The `ibsm` command: dispatches to the library (`ibsm::…`).

use std::process::ExitCode;
use std::time::Duration;

use fabric_sim::sim::{FaultConfig, SimConfig};
use ibsm::config::{self, Action, Environment, ExtraOpt};
use ibsm::simrun::{self, SimArgs};

const USAGE: &str = "\
usage: ibsm <command> [options]

commands:
  sim TOPOLOGY [options]   run the subnet manager against the built-in simulated fabric;
                           TOPOLOGY is a topology file (ibnetdiscover or ibsim .net format)
                           or a generator spec such as fat-tree:2,36, fat-tree:3,36,
                           torus:8,8,8, mesh:4,4, dragonfly:..., random:...
  sim serve TOPOLOGY       serve the simulated fabric over ibsim's protocol (OpenSM, diags)
  run [options]            run the subnet manager on a real port (OpenSM's options)
  bench opensm TOPOLOGY    OpenSM vs `ibsm run -o` on ibsim: time to SUBNET UP, SMPs, CPU
  sma --device (vfio-user:SOCKET | 0000:BB:DD.F)
                           host SMA for an RA-1 switch ASIC (docs/reference-asic.md)
  asic-model TOPOLOGY --socket-dir DIR [--sm] [--exit-on-up]
                           simulated fabric whose switches are RA-1 models served over vfio-user
  verify --topology T (--lfts DUMP | --routing ENGINES) [--json]
                           check tables: reachability, hop counts, credit loops, balance
  topo TOPOLOGY [--write-net FILE]
                           load a topology (file or generator spec), print its size, and
                           write it as an ibsim .net file (for ibsim, OpenSM, the benchmarks)
  help                     this text; `ibsm sim --help` and `ibsm run --help` list options
  --version, -V            the version

routing engines (-R, comma-separated, tried in order, then minhop unless no_fallback):
  minhop, updn, dnup, ftree, file
exit status: 0 success, 1 the subnet or its tables failed (the message says what), 2 bad
usage or input
";

const SIM_EXTRAS: &[ExtraOpt] = &[
    ExtraOpt {
        long: "routing",
        short: None,
        metavar: Some("ENGINES"),
        help: "routing engines, as -R",
    },
    ExtraOpt {
        long: "seed",
        short: None,
        metavar: Some("N"),
        help: "simulator seed (faults)",
    },
    ExtraOpt {
        long: "faults",
        short: None,
        metavar: Some("SPEC"),
        help: "faults per link crossing: drop, dup, corrupt, garble, delay=P:D, symbol \
               (e.g. drop=0.01,corrupt=0.0001,delay=0.01:5ms; see `ibsm sim serve --help`)",
    },
    ExtraOpt {
        long: "sm-at",
        short: None,
        metavar: Some("NODE[:PORT]"),
        help: "where the SM attaches (name or 0xGUID)",
    },
    ExtraOpt {
        long: "guid2lid",
        short: None,
        metavar: Some("FILE"),
        help: "guid2lid file to honour at start",
    },
    ExtraOpt {
        long: "time-limit",
        short: None,
        metavar: Some("SECONDS"),
        help: "virtual-time limit (default 600)",
    },
    ExtraOpt {
        long: "verbose-log",
        short: None,
        metavar: None,
        help: "print verbose SM log lines (as -D 0x07)",
    },
    ExtraOpt {
        long: "allow-credit-loops",
        short: None,
        metavar: None,
        help: "a credit loop in the tables is reported but does not fail the run",
    },
    ExtraOpt {
        long: "allow-partial",
        short: None,
        metavar: None,
        help: "nodes of the topology not connected to the SM's port do not fail the run",
    },
    ExtraOpt {
        long: "allow-no-pairs",
        short: None,
        metavar: None,
        help: "a check of zero CA pairs does not fail the run",
    },
    ExtraOpt {
        long: "no-progress",
        short: None,
        metavar: None,
        help: "no progress display on a terminal",
    },
];

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

/// Options `ibsm sim` cannot honour (they concern a daemon on a real port), refused rather
/// than silently ignored: (is it set?, what to say).
fn sim_refused(o: &config::Options) -> Option<String> {
    let d = config::Options::default();
    let refused: [(bool, &str); 6] = [
        (
            o.daemon,
            "-B/--daemon: ibsm sim runs in the foreground and exits",
        ),
        (
            o.log_file != d.log_file,
            "-f/--log_file: ibsm sim prints its log on standard output",
        ),
        (
            o.transport != d.transport,
            "--transport: ibsm sim always uses the simulator",
        ),
        (
            o.ca_name != d.ca_name || o.ca_port != d.ca_port,
            "--ca/--port: ibsm sim attaches with --sm-at NODE[:PORT] or -g GUID",
        ),
        (
            o.cache_dir != d.cache_dir,
            "--cache-dir: ibsm sim keeps no state; use --guid2lid FILE and --dump-dir DIR",
        ),
        (
            o.honor_guid2lid_file,
            "-x/--honor_guid2lid: ibsm sim honours --guid2lid FILE",
        ),
    ];
    refused
        .iter()
        .find(|(set, _)| *set)
        .map(|(_, why)| format!("sim: {why}"))
}

fn cmd_sim(args: &[String]) -> ExitCode {
    if let Some(("serve", rest)) = args.split_first().map(|(f, r)| (f.as_str(), r)) {
        return ibsm::serve_cmd::main(rest);
    }
    let parsed = match config::parse_options_args(args, SIM_EXTRAS, &Environment::isolated()) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    match parsed.run.action {
        Action::Help => {
            println!(
                "usage: ibsm sim TOPOLOGY [options]\n\n{}",
                config::usage(SIM_EXTRAS)
            );
            return ExitCode::SUCCESS;
        }
        Action::Version => {
            println!("ibsm {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Action::CreateConfig(path) => {
            return match config::create_config_file(&path, &parsed.run.options) {
                Ok(()) => {
                    println!("ibsm: wrote {}", path.display());
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        Action::Run => {}
    }
    // `ibsm sim` honours `guid` (-g): it picks the SM's port.
    let warnings: Vec<config::ConfigWarning> = parsed
        .run
        .warnings
        .iter()
        .filter(|w| !matches!(w, config::ConfigWarning::Inconsistent { message } if message.starts_with("guid ")))
        .cloned()
        .collect();
    for w in config::summarize_warnings(&warnings) {
        eprintln!("ibsm: warning: {w}");
    }
    let topology = match parsed.positionals.as_slice() {
        [t] => t.clone(),
        [] => return fail("sim: missing TOPOLOGY (a file or a spec such as fat-tree:2,36)"),
        [_, extra, ..] => return fail(format!("sim: unexpected argument {extra:?}")),
    };
    let mut options = parsed.run.options;
    if let Some(why) = sim_refused(&options) {
        return fail(why);
    }
    // A one-shot run exits non-zero when a file an option names cannot be read (a daemon
    // logs it and goes on, as OpenSM does).
    if let Some(e) = options.unreadable_option_files().first() {
        return fail(format!("ERR: {e}"));
    }
    let mut sim = SimConfig::default();
    let mut attach = (options.guid.0 != 0).then(|| format!("0x{:x}", options.guid.0));
    let mut guid2lid = None;
    let mut limit = Duration::from_secs(600);
    let mut verbose = options.log_flags & 0x04 != 0;
    let (mut allow_credit_loops, mut allow_partial, mut allow_no_pairs) = (false, false, false);
    let mut progress = true;
    for (name, value) in parsed.extras {
        let v = value.unwrap_or_default();
        match name {
            "routing" => match config::RoutingEngines::parse(&v) {
                Ok(r) => options.routing_engine = r,
                Err(e) => return fail(format!("--routing {v:?}: {e}")),
            },
            "seed" => match v.parse() {
                Ok(s) => sim.seed = s,
                Err(_) => return fail(format!("--seed {v:?}: expected a non-negative integer")),
            },
            "faults" => match FaultConfig::parse(&v) {
                Ok(f) => sim.faults = f,
                Err(e) => return fail(format!("--faults {v:?}: {e}")),
            },
            "sm-at" => {
                if attach.is_some() && options.guid.0 != 0 {
                    return fail("sim: give either -g GUID or --sm-at, not both");
                }
                attach = Some(v);
            }
            "guid2lid" => guid2lid = Some(v.into()),
            "time-limit" => match v.parse::<f64>().ok().filter(|s| *s > 0.0) {
                Some(s) => match Duration::try_from_secs_f64(s) {
                    Ok(d) => limit = d,
                    Err(_) => {
                        return fail(format!("--time-limit {v:?}: at most {} seconds", u64::MAX))
                    }
                },
                None => {
                    return fail(format!(
                        "--time-limit {v:?}: expected a positive number of seconds"
                    ))
                }
            },
            "verbose-log" => verbose = true,
            "allow-credit-loops" => allow_credit_loops = true,
            "allow-partial" => allow_partial = true,
            "allow-no-pairs" => allow_no_pairs = true,
            "no-progress" => progress = false,
            _ => {}
        }
    }
    let dump_dir = (options.dump_files_dir != config::Options::default().dump_files_dir)
        .then(|| options.dump_files_dir.clone());
    let args = SimArgs {
        topology,
        sm: sm::SmConfig {
            engine_options: options.engine_options(),
            ..options.to_sm_config()
        },
        sim,
        dump_dir,
        guid2lid,
        attach,
        limit,
        verbose,
        allow_credit_loops,
        allow_partial,
        allow_no_pairs,
        progress,
    };
    let mut out = std::io::stdout().lock();
    match simrun::run(&args, &mut out) {
        Ok(o) if o.ok() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => fail(e),
    }
}

fn cmd_topo(args: &[String]) -> ExitCode {
    let (spec, net) = match args {
        [spec] => (spec, None),
        [spec, flag, file] if flag == "--write-net" => (spec, Some(file)),
        _ => return fail("usage: ibsm topo TOPOLOGY [--write-net FILE]"),
    };
    let progress = ibsm::progress::Progress::new(true);
    let t = match simrun::load_topology(spec, &progress) {
        Ok(t) => t,
        Err(e) => return fail(format!("topology {spec:?}: {e}")),
    };
    if let Some(file) = net {
        progress.message(&format!("writing {file}"));
        if let Err(e) = t.save_net(file) {
            return fail(format!("{file}: {e}"));
        }
    }
    progress.finish();
    println!(
        "{spec}: {} switches, {} CAs, {} links{}",
        t.num_switches(),
        t.num_cas(),
        t.num_links(),
        net.map_or(String::new(), |f| format!("; wrote {f}"))
    );
    ExitCode::SUCCESS
}

fn cmd_run(args: &[String]) -> ExitCode {
    let parsed = match config::parse_run_args(args) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    for w in config::summarize_warnings(&parsed.warnings) {
        eprintln!("ibsm: warning: {w}");
    }
    match parsed.action {
        Action::Help => {
            println!("usage: ibsm run [options]\n\n{}", config::usage(&[]));
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
        Action::Run => ibsm::daemon::run(&parsed.options),
    }
}

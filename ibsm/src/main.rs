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
  help                     this text; `ibsm sim --help` and `ibsm run --help` list options
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
        help: "print verbose SM log lines",
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    match cmd.as_str() {
        "sim" => cmd_sim(rest),
        "run" => cmd_run(rest),
        "verify" => ibsm::verify_cmd::main(rest),
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
        Action::CreateConfig(_) | Action::Run => {}
    }
    for w in config::summarize_warnings(&parsed.run.warnings) {
        eprintln!("ibsm: warning: {w}");
    }
    let topology = match parsed.positionals.as_slice() {
        [t] => t.clone(),
        [] => return fail("sim: missing TOPOLOGY (a file or a spec such as fat-tree:2,36)"),
        [_, extra, ..] => return fail(format!("sim: unexpected argument {extra:?}")),
    };
    let mut options = parsed.run.options;
    let mut sim = SimConfig::default();
    let mut attach = None;
    let mut guid2lid = None;
    let mut limit = Duration::from_secs(600);
    let mut verbose = false;
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
            "sm-at" => attach = Some(v),
            "guid2lid" => guid2lid = Some(v.into()),
            "time-limit" => match v.parse::<f64>() {
                Ok(s) if s > 0.0 && s.is_finite() => limit = Duration::from_secs_f64(s),
                _ => {
                    return fail(format!(
                        "--time-limit {v:?}: expected a positive number of seconds"
                    ))
                }
            },
            "verbose-log" => verbose = true,
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
    };
    let mut out = std::io::stdout().lock();
    match simrun::run(&args, &mut out) {
        Ok(o) if o.ok() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => fail(e),
    }
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

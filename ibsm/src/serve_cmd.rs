//! `ibsm sim serve TOPOLOGY [--socket-name NAME] [--faults SPEC] [--seed N] [--verbose]`: serves
//! a simulated fabric over
//! ibsim's client protocol, so stock OpenSM and infiniband-diags run against it under
//! `LD_PRELOAD=libumad2sim.so` (see [`fabric_sim::ibsim_server`]).
//!
//! The socket name defaults to `IBSIM_SOCKNAME`, else `sim`, as ibsim's. "ready" is printed on
//! stdout once the sockets are bound. The process serves until it is killed (SIGTERM/SIGINT
//! end it with the default disposition; the abstract sockets vanish with it).

use std::process::ExitCode;

use fabric_sim::ibsim_server::{IbsimServer, ServerEvent};
use fabric_sim::sim::{Fabric, FaultConfig, SimConfig};

const USAGE: &str = "\
usage: ibsm sim serve TOPOLOGY [--socket-name NAME] [--faults SPEC] [--seed N] [--verbose]

Serves the simulated fabric over ibsim's client protocol (AF_UNIX abstract sockets
NAME:ctl and NAME:out0..9). NAME defaults to $IBSIM_SOCKNAME, else \"sim\".
Run clients with LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so and
the same IBSIM_SOCKNAME; SIM_HOST picks the node a client runs on.

--faults SPEC injects faults on every link crossing, drawn from a stream seeded by
--seed (default 0): drop=P, dup=P, corrupt=P (the receiver's CRC check fails: the
packet is dropped and counted in its PortRcvErrors), garble=P, delay=P:DURATION,
symbol=P (SymbolErrorCounter). Example: --faults corrupt=0.001,symbol=0.01
";

/// Parsed arguments of `ibsm sim serve`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeArgs {
    /// Topology file or generator spec.
    pub topology: String,
    /// Socket name prefix.
    pub socket_name: String,
    /// Print client connects/disconnects on stderr.
    pub verbose: bool,
    /// Fault rates on every link crossing.
    pub faults: FaultConfig,
    /// Seed of the fault injector.
    pub seed: u64,
}

/// Parses the arguments after `serve`; `env_name` is `IBSIM_SOCKNAME` if set. `Ok(None)` =
/// help was asked for.
pub fn parse_args(args: &[String], env_name: Option<String>) -> Result<Option<ServeArgs>, String> {
    let mut topology = None;
    let mut socket_name = env_name.filter(|s| !s.is_empty());
    let mut verbose = false;
    let mut faults = FaultConfig::NONE;
    let mut seed = 0u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if key == "--faults" || key == "--seed" {
            let Some(v) = inline.or_else(|| it.next().cloned()) else {
                return Err(format!("{key} needs a value"));
            };
            if key == "--faults" {
                faults = FaultConfig::parse(&v).map_err(|e| format!("--faults {v:?}: {e}"))?;
            } else {
                seed = v
                    .parse()
                    .map_err(|_| format!("--seed {v:?}: not an unsigned integer"))?;
            }
            continue;
        }
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--verbose" | "-v" => verbose = true,
            "--socket-name" => match it.next() {
                Some(v) => socket_name = Some(v.clone()),
                None => return Err("--socket-name needs a value".into()),
            },
            s if s.starts_with("--socket-name=") => {
                socket_name = Some(s["--socket-name=".len()..].to_string());
            }
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option {s:?}")),
            s => {
                if topology.is_some() {
                    return Err(format!("unexpected argument {s:?}"));
                }
                topology = Some(s.to_string());
            }
        }
    }
    let topology =
        topology.ok_or("missing TOPOLOGY (a file or a spec such as fat-tree:2,4)".to_string())?;
    Ok(Some(ServeArgs {
        topology,
        socket_name: socket_name.unwrap_or_else(|| "sim".into()),
        verbose,
        faults,
        seed,
    }))
}

/// Why [`start`] failed.
#[derive(Debug)]
pub enum StartError {
    /// The topology is bad input (exit status 2).
    Topology(String),
    /// The fabric or the sockets could not be set up (exit status 1).
    Setup(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Topology(e) | StartError::Setup(e) => f.write_str(e),
        }
    }
}

/// Builds the fabric and binds the server.
///
/// # Errors
/// A topology that does not load or has no nodes; a fabric or socket that cannot be set up.
pub fn start(args: &ServeArgs) -> Result<IbsimServer, StartError> {
    let topo = crate::simrun::load_topology(&args.topology, &crate::progress::Progress::new(true))
        .map_err(|e| StartError::Topology(format!("{}: {e}", args.topology)))?;
    start_with(args, &topo).map_err(StartError::Setup)
}

fn start_with(args: &ServeArgs, topo: &fabric_sim::topo::Topology) -> Result<IbsimServer, String> {
    let cfg = SimConfig {
        seed: args.seed,
        faults: args.faults,
        ..SimConfig::default()
    };
    let fabric = Fabric::new(topo, cfg).map_err(|e| e.to_string())?;
    IbsimServer::bind(fabric, &args.socket_name).map_err(|e| {
        let mut msg = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(&format!(": {s}"));
            src = s.source();
        }
        msg
    })
}

/// `ibsm sim serve …`: runs until killed.
pub fn main(args: &[String]) -> ExitCode {
    let parsed = match parse_args(args, std::env::var("IBSIM_SOCKNAME").ok()) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ibsm: sim serve: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut server = match start(&parsed) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ibsm: sim serve: {e}");
            return ExitCode::from(match e {
                StartError::Topology(_) => 2,
                StartError::Setup(_) => 1,
            });
        }
    };
    let f = server.fabric();
    eprintln!(
        "ibsm: serving {} ({} nodes, {} links) on {}:ctl",
        parsed.topology,
        f.num_nodes(),
        f.topology().num_links(),
        parsed.socket_name
    );
    println!("ready");
    loop {
        if let Err(e) = server.poll(std::time::Duration::from_millis(200)) {
            eprintln!("ibsm: sim serve: {e}");
            return ExitCode::from(1);
        }
        while let Some(ev) = server.poll_event() {
            if parsed.verbose || matches!(ev, ServerEvent::Refused { .. }) {
                eprintln!("ibsm: {ev:?}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn socket_name_comes_from_the_option_then_env_then_sim() {
        let a = parse_args(&s(&["t.net"]), None).unwrap().unwrap();
        assert_eq!(a.socket_name, "sim");
        let a = parse_args(&s(&["t.net"]), Some("envname".into()))
            .unwrap()
            .unwrap();
        assert_eq!(a.socket_name, "envname");
        let a = parse_args(&s(&["--socket-name", "x1", "t.net"]), Some("e".into()))
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.socket_name.as_str(), a.topology.as_str()),
            ("x1", "t.net")
        );
        let a = parse_args(&s(&["--socket-name=x2", "fat-tree:2,4", "-v"]), None)
            .unwrap()
            .unwrap();
        assert_eq!(a.socket_name, "x2");
        assert!(a.verbose);
    }

    #[test]
    fn bad_arguments_are_named() {
        assert!(parse_args(&s(&[]), None).unwrap_err().contains("TOPOLOGY"));
        assert!(parse_args(&s(&["a", "b"]), None)
            .unwrap_err()
            .contains("\"b\""));
        assert!(parse_args(&s(&["--bogus", "a"]), None)
            .unwrap_err()
            .contains("--bogus"));
        assert!(parse_args(&s(&["a", "--socket-name"]), None).is_err());
        assert_eq!(parse_args(&s(&["--help"]), None).unwrap(), None);
        let e = parse_args(&s(&["a", "--faults", "lose=1"]), None).unwrap_err();
        assert!(e.contains("--faults") && e.contains("lose"), "{e}");
        let e = parse_args(&s(&["a", "--seed=x"]), None).unwrap_err();
        assert!(e.contains("--seed"), "{e}");
        assert!(parse_args(&s(&["a", "--faults"]), None).is_err());
    }

    #[test]
    fn faults_and_seed_reach_the_fabric() {
        let a = parse_args(&s(&["t.net", "--faults=symbol=0.5", "--seed", "7"]), None)
            .unwrap()
            .unwrap();
        assert_eq!((a.faults.symbol, a.seed), (0.5, 7));
        let a = parse_args(&s(&["t.net", "--faults", "corrupt=0.1,drop=0.2"]), None)
            .unwrap()
            .unwrap();
        assert_eq!((a.faults.corrupt, a.faults.drop, a.seed), (0.1, 0.2, 0));
    }

    #[test]
    fn a_missing_topology_is_an_error_not_a_panic() {
        let a = ServeArgs {
            topology: "/nonexistent/file.net".into(),
            socket_name: "ibsm-serve-test-missing".into(),
            verbose: false,
            faults: FaultConfig::NONE,
            seed: 0,
        };
        let e = start(&a).err().unwrap();
        assert!(e.to_string().contains("/nonexistent/file.net"), "{e}");
    }
}

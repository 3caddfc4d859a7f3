//! Command-line options, with OpenSM's short and long names, shared by `ibsm run` and
//! `ibsm sim`.
//!
//! Accepted forms, as with OpenSM's `getopt_long_only`: `-l 2`, `-l2`, clustered flags
//! (`-ro`), `--lmc 2`, `--lmc=2`, a long name with one dash (`-lmc 2`), and `--` to end the
//! options. Abbreviated long names are not accepted. Values are validated exactly like the
//! config file's. Precedence: defaults < `OSM_CACHE_DIR` < config file < command line, and
//! among command-line options the last one wins.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::error::{ConfigError, ConfigWarning, Origin};
use super::file::{clean_value, load_config_file};
use super::keys::{self, parse_c_uint, parse_hex};
use super::options::{Options, CACHE_DIR_ENV, DEFAULT_CONFIG_FILE, IBSM_CONFIG_FILE};

/// What a command-line option does.
#[derive(Clone, Copy)]
enum Act {
    /// Sets a config key from the value (config-file syntax, base-0 numbers).
    Key(&'static str),
    /// Sets a config key from a hex value with optional `0x` (OpenSM's `-g`, `-k`).
    KeyHex(&'static str),
    /// A flag that sets something.
    Flag(fn(&mut Options)),
    /// `-F FILE`.
    Config,
    /// `-c FILE`.
    CreateConfig,
    /// `-h`.
    Help,
    /// `--version`.
    Version,
    /// `-v`: `log_flags = (log_flags << 1) | 1`.
    Verbose,
    /// `-V`: `log_flags = 0xFF`, `force_log_flush`.
    MaxVerbose,
    /// `-d N`.
    Debug,
}

struct CliOpt {
    short: Option<char>,
    long: &'static [&'static str],
    metavar: Option<&'static str>,
    act: Act,
    help: &'static str,
}

/// Every option; the first long name is the canonical one.
static CLI: &[CliOpt] = &[
    CliOpt { short: Some('F'), long: &["config"], metavar: Some("FILE"), act: Act::Config,
        help: "config file to read (default /etc/opensm/opensm.conf, if it exists)" },
    CliOpt { short: Some('c'), long: &["create-config"], metavar: Some("FILE"), act: Act::CreateConfig,
        help: "write the configuration (defaults + file + options) to FILE and exit" },
    CliOpt { short: Some('g'), long: &["guid"], metavar: Some("GUID"), act: Act::KeyHex("guid"),
        help: "port GUID to bind to (hex)" },
    CliOpt { short: Some('l'), long: &["lmc"], metavar: Some("LMC"), act: Act::Key("lmc"),
        help: "LMC, 0..7 (2^LMC LIDs per port)" },
    CliOpt { short: Some('p'), long: &["priority"], metavar: Some("PRIORITY"), act: Act::Key("sm_priority"),
        help: "SM priority, 0..15" },
    CliOpt { short: None, long: &["master_sm_priority"], metavar: Some("PRIORITY"), act: Act::Key("master_sm_priority"),
        help: "priority advertised while master, 0..15 (0: same as -p)" },
    CliOpt { short: None, long: &["subnet_prefix"], metavar: Some("PREFIX"), act: Act::KeyHex("subnet_prefix"),
        help: "subnet prefix (hex)" },
    CliOpt { short: Some('k'), long: &["smkey"], metavar: Some("SM_KEY"), act: Act::KeyHex("sm_key"),
        help: "SM_Key (hex)" },
    CliOpt { short: Some('r'), long: &["reassign_lids"], metavar: None, act: Act::Flag(|o| o.reassign_lids = true),
        help: "reassign all LIDs" },
    CliOpt { short: Some('R'), long: &["routing_engine", "routing"], metavar: Some("ENGINES"), act: Act::Key("routing_engine"),
        help: "routing engines, comma-separated, tried in order; add no_fallback to not fall back to minhop" },
    CliOpt { short: Some('z'), long: &["connect_roots"], metavar: None, act: Act::Flag(|o| o.connect_roots = true),
        help: "updn/ftree connect the root switches" },
    CliOpt { short: None, long: &["consolidate_ipv6_snm_req"], metavar: None, act: Act::Flag(|o| o.consolidate_ipv6_snm_req = true),
        help: "IPv6 solicited-node multicast groups share one MLID" },
    CliOpt { short: Some('y'), long: &["stay_on_fatal"], metavar: None, act: Act::Flag(|o| o.exit_on_fatal = false),
        help: "go on after fatal initialization issues (a guid2lid file that cannot be read)" },
    CliOpt { short: Some('S'), long: &["sadb_file"], metavar: Some("FILE"), act: Act::Key("sa_db_file"),
        help: "SA database file (opensm-sa.dump) to restore groups, services and subscriptions from" },
    CliOpt { short: Some('A'), long: &["ucast_cache"], metavar: None, act: Act::Flag(|o| o.use_ucast_cache = true),
        help: "use the unicast routing cache" },
    CliOpt { short: Some('a'), long: &["root_guid_file"], metavar: Some("FILE"), act: Act::Key("root_guid_file"),
        help: "root switch GUIDs for updn/ftree" },
    CliOpt { short: Some('u'), long: &["cn_guid_file"], metavar: Some("FILE"), act: Act::Key("cn_guid_file"),
        help: "compute node GUIDs for ftree" },
    CliOpt { short: Some('G'), long: &["io_guid_file"], metavar: Some("FILE"), act: Act::Key("io_guid_file"),
        help: "I/O node GUIDs for ftree" },
    CliOpt { short: Some('H'), long: &["max_reverse_hops"], metavar: Some("N"), act: Act::Key("max_reverse_hops"),
        help: "reverse hops allowed for I/O nodes" },
    CliOpt { short: Some('i'), long: &["ignore_guids", "port_prof_ignore_file"], metavar: Some("FILE"), act: Act::Key("port_prof_ignore_file"),
        help: "switch ports (GUID PORT) the load balancing does not count" },
    CliOpt { short: Some('w'), long: &["hop_weights_file"], metavar: Some("FILE"), act: Act::Key("hop_weights_file"),
        help: "hop weight per switch port (GUID PORT WEIGHT) for minhop" },
    CliOpt { short: Some('O'), long: &["port_search_ordering_file", "dimn_ports_file"], metavar: Some("FILE"), act: Act::Key("port_search_ordering_file"),
        help: "port scan order per switch (GUID PORT PORT ...), dor's dimensions" },
    CliOpt { short: Some('m'), long: &["ids_guid_file"], metavar: Some("FILE"), act: Act::Key("ids_guid_file"),
        help: "switch ids (GUID ID) updn orders switches of one rank by" },
    CliOpt { short: Some('X'), long: &["guid_routing_order_file"], metavar: Some("FILE"), act: Act::Key("guid_routing_order_file"),
        help: "port GUIDs in routing order (minhop, updn)" },
    CliOpt { short: Some('U'), long: &["lfts_file"], metavar: Some("FILE"), act: Act::Key("lfts_file"),
        help: "LFTs for the file routing engine" },
    CliOpt { short: None, long: &["port-shifting", "port_shifting"], metavar: None, act: Act::Flag(|o| o.port_shifting = true),
        help: "shift the port scan of minhop, updn and dnup with the routes on the ports" },
    CliOpt { short: None, long: &["scatter-ports", "scatter_ports"], metavar: Some("SEED"), act: Act::Key("scatter_ports"),
        help: "random seed for choosing among equal ports (0: off)" },
    CliOpt { short: None, long: &["guid_routing_order_no_scatter"], metavar: None,
        act: Act::Flag(|o| o.guid_routing_order_no_scatter = true),
        help: "route the guid_routing_order_file's ports without scatter_ports" },
    CliOpt { short: None, long: &["sm_sl"], metavar: Some("SL"), act: Act::Key("sm_sl"),
        help: "SL of SM/SA traffic (PortInfo.MasterSMSL) where the engine gives none" },
    CliOpt { short: None, long: &["do_mesh_analysis"], metavar: None, act: Act::Flag(|o| o.do_mesh_analysis = true),
        help: "lash: treat parallel links as one, routes shared round-robin" },
    CliOpt { short: None, long: &["lash_start_vl"], metavar: Some("VL"), act: Act::Key("lash_start_vl"),
        help: "first SL/VL lash uses" },
    CliOpt { short: None, long: &["nue_max_num_vls"], metavar: Some("N"), act: Act::Key("nue_max_num_vls"),
        help: "VLs nue may use (0: all the fabric allows)" },
    CliOpt { short: None, long: &["torus_config"], metavar: Some("FILE"), act: Act::Key("torus_config"),
        help: "torus-2QoS configuration file" },
    CliOpt { short: Some('Q'), long: &["qos"], metavar: None, act: Act::Flag(|o| o.qos = true),
        help: "program QoS: SL-to-VL, VL arbitration and VLHighLimit from the qos_* options" },
    CliOpt { short: Some('Y'), long: &["qos_policy_file"], metavar: Some("FILE"), act: Act::Key("qos_policy_file"),
        help: "QoS policy file (read with -Q)" },
    CliOpt { short: Some('P'), long: &["Pconfig"], metavar: Some("FILE"), act: Act::Key("partition_config_file"),
        help: "partitions.conf (absent: Default=0x7fff, ipoib : ALL=full ;)" },
    CliOpt { short: Some('N'), long: &["no_part_enforce"], metavar: None, act: Act::Flag(|o| o.no_partition_enforcement = true),
        help: "no P_Key enforcement on switch ports (= --part_enforce off)" },
    CliOpt { short: Some('Z'), long: &["part_enforce"], metavar: Some("both|in|out|off"), act: Act::Key("part_enforce"),
        help: "P_Key enforcement on switch ports facing end ports" },
    CliOpt { short: Some('W'), long: &["allow_both_pkeys"], metavar: None, act: Act::Flag(|o| o.allow_both_pkeys = true),
        help: "allow full and limited membership of one partition on a port" },
    CliOpt { short: Some('o'), long: &["once"], metavar: None, act: Act::Flag(|o| o.once = true),
        help: "configure the subnet once, then exit" },
    CliOpt { short: Some('s'), long: &["sweep"], metavar: Some("SECONDS"), act: Act::Key("sweep_interval"),
        help: "seconds between sweeps (0: no sweeping)" },
    CliOpt { short: Some('t'), long: &["timeout"], metavar: Some("MS"), act: Act::Key("transaction_timeout"),
        help: "SMP transaction timeout in ms (> 0)" },
    CliOpt { short: None, long: &["retries"], metavar: Some("N"), act: Act::Key("transaction_retries"),
        help: "SMP transaction retries" },
    CliOpt { short: Some('n'), long: &["maxsmps"], metavar: Some("N"), act: Act::Key("max_wire_smps"),
        help: "SMPs outstanding at once (0: unlimited)" },
    CliOpt { short: None, long: &["max_smps_per_node"], metavar: Some("N"), act: Act::Key("max_smps_per_node"),
        help: "SMPs outstanding at once to one node (ibsm, >= 1)" },
    CliOpt { short: None, long: &["retry_rounds"], metavar: Some("N"), act: Act::Key("retry_rounds"),
        help: "rounds of 1 + retries attempts per request (ibsm, >= 1; 1 = OpenSM)" },
    CliOpt { short: None, long: &["fold_config_into_arm"], metavar: None, act: Act::Flag(|o| o.fold_config_into_arm = true),
        help: "configure ports in their Init->Armed Set (ibsm)" },
    CliOpt { short: Some('x'), long: &["honor_guid2lid"], metavar: None, act: Act::Flag(|o| o.honor_guid2lid_file = true),
        help: "honor the guid2lid file when coming out of standby" },
    CliOpt { short: None, long: &["perfmgr"], metavar: None, act: Act::Flag(|o| o.perfmgr = true),
        help: "run the performance manager" },
    CliOpt { short: None, long: &["perfmgr_sweep_time_s"], metavar: Some("SECONDS"), act: Act::Key("perfmgr_sweep_time_s"),
        help: "seconds between performance-manager sweeps" },
    CliOpt { short: Some('f'), long: &["log_file"], metavar: Some("FILE"), act: Act::Key("log_file"),
        help: "log file (stdout: standard output)" },
    CliOpt { short: Some('L'), long: &["log_limit"], metavar: Some("MB"), act: Act::Key("log_max_size"),
        help: "log file size limit in MB: past it the log restarts (0: none)" },
    CliOpt { short: Some('e'), long: &["erase_log_file"], metavar: None, act: Act::Flag(|o| o.accum_log_file = false),
        help: "empty the log file at start (default: accumulate)" },
    CliOpt { short: None, long: &["dump_files_dir", "dump-dir"], metavar: Some("DIR"), act: Act::Key("dump_files_dir"),
        help: "directory for dump files" },
    CliOpt { short: None, long: &["cache-dir", "cache_dir"], metavar: Some("DIR"), act: Act::Key("cache_dir"),
        help: "directory for guid2lid and other state (default $OSM_CACHE_DIR or /var/cache/opensm)" },
    CliOpt { short: Some('I'), long: &["inactive"], metavar: None, act: Act::Flag(|o| o.sm_inactive = true),
        help: "start the SM NOTACTIVE (no sweep until another SM sets it to STANDBY)" },
    CliOpt { short: Some('B'), long: &["daemon"], metavar: None, act: Act::Flag(|o| o.daemon = true),
        help: "run in the background" },
    CliOpt { short: Some('v'), long: &["verbose"], metavar: None, act: Act::Verbose,
        help: "more logging (repeatable): log_flags = log_flags << 1 | 1" },
    CliOpt { short: Some('V'), long: &["V"], metavar: None, act: Act::MaxVerbose,
        help: "all logging, flushed (= -D 0xFF -d 2)" },
    CliOpt { short: Some('D'), long: &["D"], metavar: Some("FLAGS"), act: Act::Key("log_flags"),
        help: "log flags: 0x01 ERROR 0x02 INFO 0x04 VERBOSE 0x08 DEBUG 0x10 FUNCS 0x20 FRAMES 0x40 ROUTING" },
    CliOpt { short: Some('d'), long: &["debug"], metavar: Some("N"), act: Act::Debug,
        help: "debug option: 0 ignore other SMs, 2 flush the log after every message, 3 no multicast" },
    CliOpt { short: None, long: &["transport"], metavar: Some("umad|sim"), act: Act::Key("transport"),
        help: "how to reach the fabric (ibsm)" },
    CliOpt { short: None, long: &["ca"], metavar: Some("NAME"), act: Act::Key("ca_name"),
        help: "HCA to bind, e.g. mlx5_0 (ibsm)" },
    CliOpt { short: None, long: &["port"], metavar: Some("N"), act: Act::Key("ca_port"),
        help: "HCA port to bind, 0: first active (ibsm)" },
    CliOpt { short: Some('h'), long: &["help"], metavar: None, act: Act::Help,
        help: "show this help and exit" },
    CliOpt { short: Some('?'), long: &[], metavar: None, act: Act::Help, help: "" },
    CliOpt { short: None, long: &["version"], metavar: None, act: Act::Version,
        help: "show the version and exit" },
];

/// OpenSM options ibsm does not implement, (short, long), for error hints.
static OPENSM_UNSUPPORTED: &[(Option<char>, &str)] = &[
    (None, "congestion_control"),
    (None, "cc_key"),
    (Some('q'), "console"),
    (Some('C'), "console-port"),
    (Some('M'), "lid_matrix_file"),
    (None, "prefix_routes_file"),
    (None, "log_prefix"),
];

/// An extra option a subcommand accepts besides the shared SM options (e.g. `ibsm sim`'s
/// `--seed N`). Its value is returned uninterpreted in [`OptionsArgs::extras`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtraOpt {
    /// Long name without dashes, e.g. `seed`.
    pub long: &'static str,
    /// Optional short letter.
    pub short: Option<char>,
    /// `Some("N")` if the option takes a value (shown in the help), `None` for a flag.
    pub metavar: Option<&'static str>,
    /// One-line help.
    pub help: &'static str,
}

/// Where defaults come from outside the command line: OpenSM's default config file and the
/// `OSM_CACHE_DIR` environment variable. Tests use [`Environment::isolated`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Environment {
    /// The config file to read when no `-F` is given; skipped silently if it does not exist.
    pub default_config: Option<PathBuf>,
    /// The value of `OSM_CACHE_DIR`, if set and not empty.
    pub cache_dir: Option<PathBuf>,
}

impl Environment {
    /// The real environment: [`IBSM_CONFIG_FILE`] if it exists, else [`DEFAULT_CONFIG_FILE`];
    /// and `$OSM_CACHE_DIR`.
    #[must_use]
    pub fn system() -> Self {
        let ours = PathBuf::from(IBSM_CONFIG_FILE);
        Self {
            default_config: Some(if ours.exists() {
                ours
            } else {
                PathBuf::from(DEFAULT_CONFIG_FILE)
            }),
            cache_dir: std::env::var_os(CACHE_DIR_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }

    /// No default config file, no environment variables: only the command line counts.
    #[must_use]
    pub fn isolated() -> Self {
        Self::default()
    }
}

/// What the command should do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run the SM with the options.
    Run,
    /// `-c FILE`: write the configuration to FILE (see
    /// [`create_config_file`](super::create_config_file)) and exit.
    CreateConfig(PathBuf),
    /// `-h`: print [`usage`] and exit.
    Help,
    /// `--version`: print the version and exit.
    Version,
}

/// The parsed `ibsm run` command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunArgs {
    /// The options: defaults < `OSM_CACHE_DIR` < config file < command line. Left at the
    /// defaults when the action is [`Action::Help`] or [`Action::Version`] (no file is read).
    pub options: Options,
    /// What to do.
    pub action: Action,
    /// The config file that was read, if any.
    pub config_file: Option<PathBuf>,
    /// Warnings to show: config-file problems and inconsistent option combinations.
    pub warnings: Vec<ConfigWarning>,
}

/// [`RunArgs`] plus what a subcommand with its own options gets back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionsArgs {
    /// The shared result.
    pub run: RunArgs,
    /// The subcommand's own options, in command-line order: (long name, value).
    pub extras: Vec<(&'static str, Option<String>)>,
    /// Arguments that are not options (and everything after `--`).
    pub positionals: Vec<String>,
}

/// Parses `ibsm run`'s arguments (those after `run`), reading OpenSM's default config file
/// and `OSM_CACHE_DIR` from the real environment.
///
/// # Errors
/// Unknown options (with a hint), missing or bad values, positional arguments, and config
/// file errors (see [`parse_config_str`](super::parse_config_str)).
pub fn parse_run_args(args: &[String]) -> Result<RunArgs, ConfigError> {
    parse_run_args_with(args, &Environment::system())
}

/// [`parse_run_args`] with an explicit [`Environment`].
///
/// # Errors
/// As [`parse_run_args`].
pub fn parse_run_args_with(args: &[String], env: &Environment) -> Result<RunArgs, ConfigError> {
    let parsed = parse_options_args(args, &[], env)?;
    if let Some(arg) = parsed.positionals.into_iter().next() {
        return Err(ConfigError::UnexpectedArgument { arg });
    }
    Ok(parsed.run)
}

/// The shared parser: every SM option of `ibsm run` plus a subcommand's `extras` (used by
/// `ibsm sim` for `--seed`, `--faults`, …). Positional arguments are returned, not rejected.
///
/// # Errors
/// As [`parse_run_args`], except positionals.
pub fn parse_options_args(
    args: &[String],
    extras: &[ExtraOpt],
    env: &Environment,
) -> Result<OptionsArgs, ConfigError> {
    let tokens = tokenize(args, extras)?;
    let mut extra_values = Vec::new();
    let mut positionals = Vec::new();
    let mut config: Option<PathBuf> = None;
    let mut action = Action::Run;
    let mut help = false;
    let mut version = false;
    for t in &tokens {
        match t {
            Token::Opt { opt, value, .. } => match (opt.act, value) {
                (Act::Config, Some(v)) => config = Some(PathBuf::from(v)),
                (Act::CreateConfig, Some(v)) => action = Action::CreateConfig(PathBuf::from(v)),
                (Act::Help, _) => help = true,
                (Act::Version, _) => version = true,
                _ => {}
            },
            Token::Extra { long, value } => extra_values.push((*long, value.clone())),
            Token::Positional(p) => positionals.push(p.clone()),
        }
    }
    let mut base = Options::default();
    if let Some(dir) = &env.cache_dir {
        base.cache_dir.clone_from(dir);
    }
    if help || version {
        let action = if help { Action::Help } else { Action::Version };
        return Ok(OptionsArgs {
            run: RunArgs {
                options: base,
                action,
                config_file: None,
                warnings: Vec::new(),
            },
            extras: extra_values,
            positionals,
        });
    }
    let config_file = match config {
        Some(path) => Some(path),
        None => env
            .default_config
            .as_ref()
            .filter(|p| Path::new(p).is_file())
            .cloned(),
    };
    let (mut options, mut warnings) = match &config_file {
        Some(path) => {
            let f = load_config_file(path, base)?;
            (f.options, f.warnings)
        }
        None => (base, Vec::new()),
    };
    for t in &tokens {
        if let Token::Opt { opt, typed, value } = t {
            apply(&mut options, opt, typed, value.as_deref())?;
        }
    }
    warnings.extend(options.reconcile());
    warnings.extend(options.not_implemented_warnings());
    Ok(OptionsArgs {
        run: RunArgs {
            options,
            action,
            config_file,
            warnings,
        },
        extras: extra_values,
        positionals,
    })
}

fn bad_value(typed: &str, key: &'static str, value: &str, expected: String) -> ConfigError {
    ConfigError::BadValue {
        origin: Origin::CommandLine {
            option: typed.to_string(),
        },
        key,
        value: value.to_string(),
        expected,
    }
}

fn apply(
    o: &mut Options,
    opt: &CliOpt,
    typed: &str,
    value: Option<&str>,
) -> Result<(), ConfigError> {
    // Cleaned like a config-file value, so that `-c` writes what was given.
    let v = clean_value(value.unwrap_or(""));
    match opt.act {
        Act::Key(key) | Act::KeyHex(key) => {
            let Some(spec) = keys::spec(key) else {
                // The table is static; a missing key is a programming error caught by tests.
                return Err(bad_value(typed, "?", v, "a known key".to_string()));
            };
            let text = if matches!(opt.act, Act::KeyHex(_)) {
                match parse_hex(v) {
                    Some(n) => format!("0x{n:x}"),
                    None => {
                        return Err(bad_value(
                            typed,
                            spec.key,
                            v,
                            "a 64-bit hex number (0x optional)".to_string(),
                        ))
                    }
                }
            } else {
                v.to_string()
            };
            (spec.set)(o, &text).map_err(|expected| bad_value(typed, spec.key, v, expected))
        }
        Act::Flag(f) => {
            f(o);
            Ok(())
        }
        Act::Verbose => {
            o.log_flags = o.log_flags.wrapping_shl(1) | 1;
            Ok(())
        }
        Act::MaxVerbose => {
            o.log_flags = 0xff;
            o.force_log_flush = true;
            Ok(())
        }
        Act::Debug => match parse_c_uint(v) {
            Some(0) => {
                o.ignore_other_sm = true;
                Ok(())
            }
            Some(2) => {
                o.force_log_flush = true;
                Ok(())
            }
            Some(3) => {
                o.disable_multicast = true;
                Ok(())
            }
            _ => Err(bad_value(
                typed,
                "debug",
                v,
                "0 (ignore other SMs), 2 (flush the log after every message) or 3 (disable \
                 multicast); OpenSM's -d 1 and -d 10 are not implemented"
                    .to_string(),
            )),
        },
        Act::Config | Act::CreateConfig | Act::Help | Act::Version => Ok(()),
    }
}

enum Token {
    Opt {
        opt: &'static CliOpt,
        typed: String,
        value: Option<String>,
    },
    Extra {
        long: &'static str,
        value: Option<String>,
    },
    Positional(String),
}

/// A looked-up option: one of ours or a subcommand extra.
enum Found<'e> {
    Cli(&'static CliOpt),
    Extra(&'e ExtraOpt),
}

impl Found<'_> {
    fn metavar(&self) -> Option<&'static str> {
        match self {
            Found::Cli(o) => o.metavar,
            Found::Extra(e) => e.metavar,
        }
    }
}

fn find_long<'e>(name: &str, extras: &'e [ExtraOpt]) -> Option<Found<'e>> {
    if let Some(e) = extras.iter().find(|e| e.long == name) {
        return Some(Found::Extra(e));
    }
    CLI.iter().find(|o| o.long.contains(&name)).map(Found::Cli)
}

fn find_short(c: char, extras: &[ExtraOpt]) -> Option<Found<'_>> {
    if let Some(e) = extras.iter().find(|e| e.short == Some(c)) {
        return Some(Found::Extra(e));
    }
    CLI.iter().find(|o| o.short == Some(c)).map(Found::Cli)
}

fn token(found: Found<'_>, typed: String, value: Option<String>) -> Token {
    match found {
        Found::Cli(opt) => Token::Opt { opt, typed, value },
        Found::Extra(e) => Token::Extra {
            long: e.long,
            value,
        },
    }
}

fn tokenize(args: &[String], extras: &[ExtraOpt]) -> Result<Vec<Token>, ConfigError> {
    let mut out = Vec::new();
    let mut it = args.iter();
    let mut only_positionals = false;
    while let Some(arg) = it.next() {
        if only_positionals || arg == "-" || !arg.starts_with('-') {
            out.push(Token::Positional(arg.clone()));
            continue;
        }
        if arg == "--" {
            only_positionals = true;
            continue;
        }
        let (dashes, body) = match arg.strip_prefix("--") {
            Some(b) => ("--", b),
            None => ("-", &arg[1..]),
        };
        let (name, attached) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        // `--name`, or `-name` when it is a long name (getopt_long_only).
        let long = if dashes == "--" || name.chars().count() > 1 {
            find_long(name, extras)
        } else {
            None
        };
        if let Some(found) = long {
            let typed = format!("{dashes}{name}");
            let value = match (found.metavar(), attached) {
                (Some(metavar), None) => {
                    Some(it.next().cloned().ok_or(ConfigError::MissingValue {
                        option: typed.clone(),
                        metavar,
                    })?)
                }
                (Some(_), Some(v)) => Some(v),
                (None, Some(value)) => {
                    return Err(ConfigError::UnexpectedValue {
                        option: typed,
                        value,
                    })
                }
                (None, None) => None,
            };
            out.push(token(found, typed, value));
            continue;
        }
        if dashes == "--" {
            return Err(unknown_option(&format!("--{name}"), extras));
        }
        // A cluster of short options: `-ro`, `-l2`, `-l 2`.
        for (pos, c) in body.char_indices() {
            let typed = format!("-{c}");
            let Some(found) = find_short(c, extras) else {
                return Err(unknown_option(&typed, extras));
            };
            match found.metavar() {
                Some(metavar) => {
                    let rest = &body[pos + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        it.next().cloned().ok_or(ConfigError::MissingValue {
                            option: typed.clone(),
                            metavar,
                        })?
                    } else {
                        rest.to_string()
                    };
                    out.push(token(found, typed, Some(value)));
                    break;
                }
                None => out.push(token(found, typed, None)),
            }
        }
    }
    Ok(out)
}

fn unknown_option(typed: &str, extras: &[ExtraOpt]) -> ConfigError {
    let name = typed.trim_start_matches('-');
    let hint = if let Some((short, long)) = OPENSM_UNSUPPORTED
        .iter()
        .find(|(s, l)| *l == name || (name.chars().count() == 1 && name.chars().next() == *s))
    {
        let short = short.map(|c| format!("-{c}/")).unwrap_or_default();
        Some(format!(
            "OpenSM's {short}--{long} is not implemented by ibsm"
        ))
    } else if let Some(spec) = keys::spec(name) {
        // A config-file key used as an option.
        let cli = CLI
            .iter()
            .find(|o| matches!(o.act, Act::Key(k) | Act::KeyHex(k) if k == spec.key));
        Some(match cli {
            Some(o) => format!(
                "{} is a config-file key; the command-line option is {}",
                spec.key,
                describe(o)
            ),
            None => format!(
                "{} is a config-file key; put `{} VALUE` in the file given with -F",
                spec.key, spec.key
            ),
        })
    } else {
        let longs = CLI
            .iter()
            .flat_map(|o| o.long.iter().copied())
            .chain(extras.iter().map(|e| e.long));
        // No guessing for single letters: `-j` is not a typo of `-V`.
        Some(name)
            .filter(|n| n.chars().count() >= 3)
            .and_then(|n| keys::closest(n, longs))
            .map(|l| format!("did you mean --{l}?"))
            .or_else(|| Some("see --help for the list of options".to_string()))
    };
    ConfigError::UnknownOption {
        option: typed.to_string(),
        hint,
    }
}

fn describe(o: &CliOpt) -> String {
    let mut names: Vec<String> = o.short.map(|c| format!("-{c}")).into_iter().collect();
    names.extend(o.long.iter().map(|l| format!("--{l}")));
    names.join("/")
}

/// The option list for `--help`: the shared SM options, then `extras`.
#[must_use]
pub fn usage(extras: &[ExtraOpt]) -> String {
    fn line(out: &mut String, names: &str, metavar: Option<&str>, help: &str) {
        let left = match metavar {
            Some(m) => format!("{names} {m}"),
            None => names.to_string(),
        };
        // `write!` to a String cannot fail.
        let _ = writeln!(out, "  {left:<34} {help}");
    }
    let mut out = String::from(
        "Options (OpenSM's names; precedence: defaults < config file < command line):\n",
    );
    for o in CLI.iter().filter(|o| !o.help.is_empty()) {
        line(&mut out, &describe(o), o.metavar, o.help);
    }
    if !extras.is_empty() {
        out.push_str("Subcommand options:\n");
        for e in extras {
            let names = match e.short {
                Some(c) => format!("-{c}/--{}", e.long),
                None => format!("--{}", e.long),
            };
            line(&mut out, &names, e.metavar, e.help);
        }
    }
    out.push_str(
        "Every other setting is a config-file key; `-c FILE` writes them all with comments.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cli_key_exists_in_the_key_table() {
        for o in CLI {
            if let Act::Key(k) | Act::KeyHex(k) = o.act {
                assert!(keys::spec(k).is_some(), "{k} is not a config key");
            }
        }
    }

    #[test]
    fn short_and_long_names_are_unique() {
        let mut shorts: Vec<char> = CLI.iter().filter_map(|o| o.short).collect();
        let n = shorts.len();
        shorts.sort_unstable();
        shorts.dedup();
        assert_eq!(shorts.len(), n);
        let mut longs: Vec<&str> = CLI.iter().flat_map(|o| o.long.iter().copied()).collect();
        let n = longs.len();
        longs.sort_unstable();
        longs.dedup();
        assert_eq!(longs.len(), n);
    }
}

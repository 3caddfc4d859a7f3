//! # OpenSM-compatible configuration
//!
//! [`Options`] holds every setting ibsm implements, under OpenSM's `opensm.conf` key names and
//! with OpenSM 3.3.23's defaults (checked against `opensm -c` output in
//! `tests/config_opensm_defaults.rs`). Three sources build it, each overriding the previous:
//!
//! 1. [`Options::default`] (and `$OSM_CACHE_DIR` for `cache_dir`);
//! 2. a config file in `opensm.conf` syntax ([`load_config_file`], [`parse_config_str`]):
//!    `# comments` and `key value` lines; unknown keys are warnings naming `file:line`, bad
//!    values are errors naming `file:line`, the key and the accepted range, a repeated key is
//!    a warning and the last one wins;
//! 3. the command line, with OpenSM's option letters ([`parse_run_args`],
//!    [`parse_options_args`] for subcommands with extra options such as `ibsm sim`).
//!
//! [`Options::to_sm_config`] gives the SM core's [`sm::SmConfig`].
//!
//! [`write_default_config`] writes every key with a comment and its default, in OpenSM's `-c`
//! style, and parses back to the same [`Options`].
//!
//! Typical front end:
//! ```no_run
//! use ibsm::config::{self, Action};
//! let args: Vec<String> = std::env::args().skip(2).collect(); // after `ibsm run`
//! let run = config::parse_run_args(&args)?;
//! for w in config::summarize_warnings(&run.warnings) {
//!     eprintln!("warning: {w}");
//! }
//! match run.action {
//!     Action::CreateConfig(path) => config::create_config_file(&path, &run.options)?,
//!     Action::Help => print!("{}", config::usage(&[])),
//!     Action::Version => println!("ibsm {}", env!("CARGO_PKG_VERSION")),
//!     Action::Run => { /* start the SM with run.options */ }
//! }
//! # Ok::<(), config::ConfigError>(())
//! ```

mod cli;
mod error;
mod file;
mod keys;
mod options;
mod sm_config;

pub use cli::{
    parse_options_args, parse_run_args, parse_run_args_with, usage, Action, Environment, ExtraOpt,
    OptionsArgs, RunArgs,
};
pub use error::{summarize_warnings, ConfigError, ConfigWarning, Origin};
pub use file::{
    create_config_file, load_config_file, parse_config_str, write_default_config, ConfigFile,
};
pub use options::{
    Options, QosTextSet, RoutingEngineId, RoutingEngines, Transport, CACHE_DIR_ENV,
    DEFAULT_CACHE_DIR, DEFAULT_CONFIG_FILE, DEFAULT_QOS_POLICY_FILE, IBSM_CONFIG_FILE,
    QOS_PREFIXES,
};

//! Errors and warnings of the configuration layer.

use std::fmt;
use std::path::PathBuf;

/// Where a value came from, for messages: a config-file line or a command-line option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Line `line` (1-based) of the config file `file`.
    File {
        /// The config file, as it was named.
        file: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// A command-line option, spelled as the user typed it (e.g. `-l` or `--lmc`).
    CommandLine {
        /// The option as typed.
        option: String,
    },
    /// A value set through the API ([`crate::config::Options::set_key`]).
    Setting,
    /// The `OSM_CACHE_DIR` environment variable (or another named variable).
    Env {
        /// The variable's name.
        var: &'static str,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { file, line } => write!(f, "{}:{}", file.display(), line),
            Origin::CommandLine { option } => write!(f, "command-line option {option}"),
            Origin::Setting => f.write_str("setting"),
            Origin::Env { var } => write!(f, "environment variable {var}"),
        }
    }
}

/// A configuration error: the configuration cannot be used and the command should stop.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value does not parse or is out of range, e.g. `lmc 8`.
    #[error("{origin}: invalid value {value:?} for {key}: expected {expected}")]
    BadValue {
        /// Where the value was given.
        origin: Origin,
        /// The option's config-file key (e.g. `lmc`).
        key: &'static str,
        /// The value as given.
        value: String,
        /// The accepted values, e.g. `an integer in 0..=7`.
        expected: String,
    },
    /// The config file could not be read (or written, for `-c`).
    #[error("cannot {action} config file {}: {source}", path.display())]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A command-line option that neither OpenSM nor ibsm knows.
    #[error("unknown option {option}{}", hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default())]
    UnknownOption {
        /// The option as typed.
        option: String,
        /// A suggestion, e.g. `did you mean --routing_engine?`.
        hint: Option<String>,
    },
    /// An option that needs a value was last on the command line.
    #[error("option {option} needs a value ({metavar})")]
    MissingValue {
        /// The option as typed.
        option: String,
        /// What the value is, e.g. `N` or `FILE`.
        metavar: &'static str,
    },
    /// A flag option was given a value with `--flag=value`.
    #[error("option {option} takes no value (got {value:?})")]
    UnexpectedValue {
        /// The option as typed.
        option: String,
        /// The value that was attached.
        value: String,
    },
    /// A positional argument where the subcommand takes none.
    #[error("unexpected argument {arg:?}: options start with - or --")]
    UnexpectedArgument {
        /// The argument.
        arg: String,
    },
}

/// Something wrong with the configuration that does not stop the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigWarning {
    /// A config-file key that neither OpenSM nor ibsm knows; the line is ignored.
    UnknownKey {
        /// File and line.
        origin: Origin,
        /// The key.
        key: String,
        /// A suggestion (closest known key), if any.
        hint: Option<String>,
    },
    /// A key OpenSM knows but ibsm does not implement; the line is ignored.
    Unsupported {
        /// File and line.
        origin: Origin,
        /// The key.
        key: String,
        /// The value as given.
        value: String,
        /// OpenSM's default for the key, if it has one in `opensm -c` output. When `value`
        /// equals it, ignoring the line changes nothing (see [`ConfigWarning::is_harmless`]).
        opensm_default: Option<String>,
    },
    /// The same key appears twice in one file; the later line wins (as in OpenSM).
    DuplicateKey {
        /// The later line, the one that wins.
        origin: Origin,
        /// The key.
        key: &'static str,
        /// Line number of the earlier, overridden occurrence.
        previous_line: usize,
    },
    /// Options that are each valid but combine badly; `message` says what ibsm does about it.
    Inconsistent {
        /// What is wrong and its consequence.
        message: String,
    },
}

impl ConfigWarning {
    /// True for [`ConfigWarning::Unsupported`]: an OpenSM option that ibsm ignores.
    #[must_use]
    pub fn is_unsupported(&self) -> bool {
        matches!(self, ConfigWarning::Unsupported { .. })
    }

    /// True for an unsupported OpenSM option set to OpenSM's own default: ignoring it changes
    /// nothing. A stock `opensm.conf` has well over a hundred of these; [`summarize_warnings`]
    /// folds them into one line, while an unsupported option set to anything else (say
    /// `qos TRUE`) stays a warning of its own.
    #[must_use]
    pub fn is_harmless(&self) -> bool {
        match self {
            ConfigWarning::Unsupported {
                value,
                opensm_default: Some(d),
                ..
            } => same_value(value, d),
            _ => false,
        }
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigWarning::UnknownKey { origin, key, hint } => {
                write!(f, "{origin}: unknown key {key:?}, line ignored")?;
                if let Some(h) = hint {
                    write!(f, " ({h})")?;
                }
                Ok(())
            }
            ConfigWarning::Unsupported {
                origin,
                key,
                value,
                opensm_default,
            } => {
                write!(
                    f,
                    "{origin}: OpenSM option {key} {value} is not implemented by ibsm, line ignored"
                )?;
                match opensm_default {
                    Some(d) if !same_value(value, d) => write!(f, " (OpenSM's default: {d})"),
                    _ => Ok(()),
                }
            }
            ConfigWarning::DuplicateKey {
                origin,
                key,
                previous_line,
            } => write!(
                f,
                "{origin}: {key} is set again (first set on line {previous_line}); the last value wins"
            ),
            ConfigWarning::Inconsistent { message } => f.write_str(message),
        }
    }
}

/// Whether two config values are the same: numerically when both are integers (`0x07` = `7`),
/// otherwise as text.
fn same_value(a: &str, b: &str) -> bool {
    match (
        super::keys::parse_c_uint(a.trim()),
        super::keys::parse_c_uint(b.trim()),
    ) {
        (Some(x), Some(y)) => x == y,
        _ => a.trim() == b.trim(),
    }
}

/// The lines to show a user for `warnings`: each warning on its own, except the harmless
/// ones ([`ConfigWarning::is_harmless`]), which become one line per file naming how many there
/// are.
#[must_use]
pub fn summarize_warnings(warnings: &[ConfigWarning]) -> Vec<String> {
    let mut out = Vec::new();
    let mut harmless: Vec<(std::path::PathBuf, usize)> = Vec::new();
    for w in warnings {
        if w.is_harmless() {
            let file = match w {
                ConfigWarning::Unsupported {
                    origin: Origin::File { file, .. },
                    ..
                } => file.clone(),
                _ => std::path::PathBuf::from("?"),
            };
            match harmless.iter_mut().find(|(f, _)| *f == file) {
                Some((_, n)) => *n += 1,
                None => harmless.push((file, 1)),
            }
        } else {
            out.push(w.to_string());
        }
    }
    for (file, n) in harmless {
        out.push(format!(
            "{}: {n} OpenSM option(s) at OpenSM's default value are not implemented by ibsm \
             and are ignored",
            file.display()
        ));
    }
    out
}

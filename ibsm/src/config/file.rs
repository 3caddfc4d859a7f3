//! The `opensm.conf` file format: reading it into [`Options`] and writing it back.
//!
//! Syntax (OpenSM's `osm_subn_parse_conf_file`): everything from `#` to the end of a line is a
//! comment; a line is `key value`, where the key is the first word and the value is the rest
//! of the line with surrounding whitespace and one pair of matching quotes removed; `(null)`
//! means "no value" for file names. Where ibsm is stricter than OpenSM it is on purpose:
//! OpenSM silently replaces a bad value by the default, ibsm stops with an error naming the
//! file, line, key and the accepted values.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::error::{ConfigError, ConfigWarning, Origin};
use super::keys::{self, Section, NOT_IMPLEMENTED, OPENSM_KEYS};
use super::options::Options;

/// The result of reading a config file: the options (the base with the file's keys applied)
/// and the warnings to show the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigFile {
    /// The options after applying the file.
    pub options: Options,
    /// Unknown, unsupported or duplicate keys, in file order.
    pub warnings: Vec<ConfigWarning>,
}

/// Parses config-file text, applying each key to `base` in order (a later duplicate wins).
/// `file` is only used in messages.
///
/// Unknown keys and keys OpenSM has but ibsm does not implement are warnings (the line is
/// ignored); a repeated key is a warning and the last value wins.
///
/// # Errors
/// [`ConfigError::BadValue`] for the first value that does not parse or is out of range,
/// naming `file:line`, the key and the accepted values.
pub fn parse_config_str(text: &str, file: &Path, base: Options) -> Result<ConfigFile, ConfigError> {
    let mut options = base;
    let mut warnings = Vec::new();
    let mut seen: HashMap<&'static str, usize> = HashMap::new();
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = match line.find(char::is_whitespace) {
            Some(i) => (&line[..i], clean_value(&line[i..])),
            None => (line, ""),
        };
        let origin = || Origin::File {
            file: file.to_path_buf(),
            line: line_no,
        };
        let Some(spec) = keys::spec(key) else {
            if OPENSM_KEYS.contains(&key) {
                warnings.push(ConfigWarning::Unsupported {
                    origin: origin(),
                    key: key.to_string(),
                    value: value.to_string(),
                    opensm_default: keys::opensm_default(key).map(str::to_string),
                });
            } else {
                let hint = keys::closest(key, keys::all_keys().map(|k| k.key))
                    .map(|k| format!("did you mean {k}?"));
                warnings.push(ConfigWarning::UnknownKey {
                    origin: origin(),
                    key: key.to_string(),
                    hint,
                });
            }
            continue;
        };
        (spec.set)(&mut options, value).map_err(|expected| ConfigError::BadValue {
            origin: origin(),
            key: spec.key,
            value: value.to_string(),
            expected,
        })?;
        if let Some(previous_line) = seen.insert(spec.key, line_no) {
            warnings.push(ConfigWarning::DuplicateKey {
                origin: origin(),
                key: spec.key,
                previous_line,
            });
        }
    }
    Ok(ConfigFile { options, warnings })
}

/// Trims whitespace and one pair of matching surrounding quotes (OpenSM's `clean_val`).
pub(crate) fn clean_value(v: &str) -> &str {
    let v = v.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// Reads and parses a config file; see [`parse_config_str`].
///
/// # Errors
/// [`ConfigError::Io`] if the file cannot be read (including "not found": callers that treat
/// a missing default file as empty check for it first), otherwise as [`parse_config_str`].
pub fn load_config_file(path: &Path, base: Options) -> Result<ConfigFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    })?;
    parse_config_str(&text, path, base)
}

/// Writes `options` as a complete config file in OpenSM's `-c` style: section banners, and
/// for every key the comment lines describing it, its default, then `key value` and a blank
/// line. `parse_config_str(&write_default_config(o), ..)` gives back `o` (except `once`,
/// which is command-line only).
#[must_use]
pub fn write_default_config(options: &Options) -> String {
    let defaults = Options::default();
    let mut out = String::new();
    out.push_str(
        "# ibsm configuration file (OpenSM opensm.conf syntax)\n\
         # Generated by `ibsm run -c FILE`; read with `ibsm run -F FILE`.\n\
         # Lines are `key value`; everything after # is a comment.\n\
         # OpenSM keys that ibsm does not implement are accepted and ignored, with a\n\
         # warning when set to anything but OpenSM's default; they are listed at the end.\n",
    );
    let mut section: Option<Section> = None;
    for k in keys::all_keys() {
        if section != Some(k.section) {
            section = Some(k.section);
            // `write!` to a String cannot fail.
            let _ = write!(out, "\n#\n# {}\n#\n", k.section.title());
        } else {
            out.push('\n');
        }
        for line in k.doc {
            let _ = writeln!(out, "# {line}");
        }
        if NOT_IMPLEMENTED.contains(&k.key) {
            let _ = writeln!(
                out,
                "# NOT IMPLEMENTED by ibsm yet: accepted, has no effect (warned if not the default)"
            );
        }
        let _ = writeln!(out, "# Default: {}", (k.get)(&defaults));
        let _ = writeln!(out, "{} {}", k.key, (k.get)(options));
    }
    let _ = write!(
        out,
        "\n#\n# NOT IMPLEMENTED BY IBSM\n#\n\
         # OpenSM keys ibsm does not implement, with OpenSM's default. Set to anything else they\n\
         # draw a warning and are ignored. Not-implemented keys ibsm reads are marked above:\n\
         # {}\n",
        NOT_IMPLEMENTED.join(", ")
    );
    for key in OPENSM_KEYS.iter().filter(|k| keys::spec(k).is_none()) {
        match keys::opensm_default(key) {
            Some(d) => {
                let _ = writeln!(out, "# {key} {d}");
            }
            None => {
                let _ = writeln!(out, "# {key}");
            }
        }
    }
    out
}

/// Writes [`write_default_config`]`(options)` to `path` (what `-c FILE` does).
///
/// # Errors
/// [`ConfigError::Io`] if the file cannot be written.
pub fn create_config_file(path: &Path, options: &Options) -> Result<(), ConfigError> {
    std::fs::write(path, write_default_config(options)).map_err(|source| ConfigError::Io {
        action: "write",
        path: PathBuf::from(path),
        source,
    })
}

impl Options {
    /// A warning for every key ibsm reads but does not act on yet ([`NOT_IMPLEMENTED`])
    /// whose value is not the default: the setting has no effect.
    #[must_use]
    pub fn not_implemented_warnings(&self) -> Vec<ConfigWarning> {
        let defaults = Options::default();
        NOT_IMPLEMENTED
            .iter()
            .filter_map(|key| {
                let spec = keys::spec(key)?;
                let (v, d) = ((spec.get)(self), (spec.get)(&defaults));
                (v != d).then(|| ConfigWarning::Inconsistent {
                    message: format!(
                        "{key} {v}: not implemented by ibsm yet, the setting has no effect (default {d})"
                    ),
                })
            })
            .collect()
    }

    /// The names of every config-file key ibsm implements, in file order.
    pub fn keys() -> impl Iterator<Item = &'static str> {
        keys::all_keys().map(|k| k.key)
    }

    /// The value of a config key in opensm.conf syntax (`TRUE`, `0x12`, `(null)`, …), or
    /// `None` if ibsm has no such key.
    #[must_use]
    pub fn get_key(&self, key: &str) -> Option<String> {
        keys::spec(key).map(|k| (k.get)(self))
    }

    /// Sets a config key from a value in opensm.conf syntax, validated and cleaned (outer
    /// whitespace and one pair of quotes removed) as in the file.
    ///
    /// # Errors
    /// [`ConfigError::UnknownOption`] for a key ibsm does not have, [`ConfigError::BadValue`]
    /// (origin [`Origin::Setting`]) for a bad value.
    pub fn set_key(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let origin = Origin::Setting;
        let Some(spec) = keys::spec(key) else {
            return Err(ConfigError::UnknownOption {
                option: key.to_string(),
                hint: keys::closest(key, keys::all_keys().map(|k| k.key))
                    .map(|k| format!("did you mean {k}?")),
            });
        };
        let value = clean_value(value);
        (spec.set)(self, value).map_err(|expected| ConfigError::BadValue {
            origin,
            key: spec.key,
            value: value.to_string(),
            expected,
        })
    }
}

//! Seeded fault injection on the wire, in the manner of smoltcp's `FaultInjector`.
//!
//! Every MAD that leaves a port draws, from one ChaCha8 stream seeded by
//! [`crate::sim::SimConfig::seed`], whether it is dropped, corrupted, garbled, duplicated,
//! delayed, or costs the receiver a symbol error. Draws happen only when the corresponding rate
//! is non-zero, so a fabric without faults consumes no randomness and the same seed always gives
//! the same run.
//!
//! **Corruption models the link layer's CRC checks**, as a real port does: a corrupted packet
//! fails its VCRC/ICRC at the receiving port, which discards it and counts it in its
//! PortRcvErrors (IBA vol1 §16.1.3.5; the packet was still counted as transmitted by the
//! sender). Nothing corrupted ever reaches an agent or an SM. **Garbling** is the unrealistic
//! alternative, kept to exercise parsers and state machines on damaged input: one random bit of
//! one random byte of the MAD is flipped and the MAD is delivered as if the CRC had not caught
//! it. **Symbol errors** are counted in the receiving port's SymbolErrorCounter; the packet
//! itself is delivered (a physical-layer error the receiver recovered from).
//!
//! The textual form, accepted by [`FaultConfig::parse`] and `FromStr`:
//!
//! ```text
//! drop=0.01,dup=0.001,corrupt=0.0001,delay=0.01:5ms,symbol=0.001
//! ```
//!
//! Keys:
//! - `drop=P`: the MAD is lost on the wire (counted nowhere but in the simulator's statistics);
//! - `corrupt=P`: the MAD fails the receiver's CRC check — dropped there, PortRcvErrors + 1;
//! - `garble=P`: one bit of the MAD is flipped and the damaged MAD is delivered;
//! - `dup=P` (or `duplicate`): the MAD is delivered twice;
//! - `delay=P:D`: with probability P an extra delay chosen uniformly in `0..=D` (D takes the
//!   units `ns`, `us`, `ms`, `s`);
//! - `symbol=P`: the receiving port counts one symbol error (SymbolErrorCounter + 1).
//!
//! Rates are probabilities in `0..=1`, drawn per transmission (one link crossing). The empty
//! string and `none` mean no faults.

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Per-MAD fault rates, applied at every link transmission.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct FaultConfig {
    /// Probability that a MAD is lost.
    pub drop: f64,
    /// Probability that a MAD is delivered twice.
    pub duplicate: f64,
    /// Probability that the MAD fails the receiver's CRC check (dropped there, counted in its
    /// PortRcvErrors).
    pub corrupt: f64,
    /// Probability that one bit of the MAD is flipped and the damaged MAD delivered.
    pub garble: f64,
    /// Probability that the receiving port counts a symbol error (the MAD is delivered).
    pub symbol: f64,
    /// Probability that a MAD gets an extra delay.
    pub delay: f64,
    /// The largest extra delay; the delay is uniform in `0..=delay_max`.
    pub delay_max: Duration,
}

/// A bad `--faults` specification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecError {
    /// A term is not `key=value`.
    #[error("fault term {term:?} is not of the form key=value")]
    NotKeyValue {
        /// The offending term.
        term: String,
    },
    /// The key is not one of drop, dup, corrupt, garble, delay, symbol.
    #[error("unknown fault {key:?}; expected one of drop, dup, corrupt, garble, delay, symbol")]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A rate is not a number in 0..=1.
    #[error("fault {key}: rate {value:?} is not a probability between 0 and 1")]
    BadRate {
        /// The key.
        key: String,
        /// The text given.
        value: String,
    },
    /// The delay term lacks `:duration` or the duration does not parse.
    #[error(
        "fault delay: {value:?} must be RATE:DURATION with a unit ns, us, ms or s (e.g. 0.01:5ms)"
    )]
    BadDelay {
        /// The text given.
        value: String,
    },
    /// The same key appears twice.
    #[error("fault {key} given twice")]
    Duplicate {
        /// The key.
        key: String,
    },
}

fn parse_rate(key: &str, v: &str) -> Result<f64, FaultSpecError> {
    match v.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(FaultSpecError::BadRate {
            key: key.to_string(),
            value: v.to_string(),
        }),
    }
}

/// Parses `5ms`, `250us`, `10ns`, `1s`, `1.5ms`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let ns = v * scale;
    if ns > u64::MAX as f64 {
        return None;
    }
    Some(Duration::from_nanos(ns.round() as u64))
}

impl FaultConfig {
    /// No faults at all.
    pub const NONE: FaultConfig = FaultConfig {
        drop: 0.0,
        duplicate: 0.0,
        corrupt: 0.0,
        garble: 0.0,
        symbol: 0.0,
        delay: 0.0,
        delay_max: Duration::ZERO,
    };

    /// True if every rate is zero.
    #[must_use]
    pub fn is_none(&self) -> bool {
        self.drop == 0.0
            && self.duplicate == 0.0
            && self.corrupt == 0.0
            && self.garble == 0.0
            && self.symbol == 0.0
            && self.delay == 0.0
    }

    /// Parses the `--faults` syntax described in the module documentation.
    pub fn parse(spec: &str) -> Result<FaultConfig, FaultSpecError> {
        let mut cfg = FaultConfig::NONE;
        let s = spec.trim();
        if s.is_empty() || s == "none" {
            return Ok(cfg);
        }
        let mut seen: [bool; 6] = [false; 6];
        for term in s.split(',') {
            let term = term.trim();
            let Some((k, v)) = term.split_once('=') else {
                return Err(FaultSpecError::NotKeyValue {
                    term: term.to_string(),
                });
            };
            let k = k.trim();
            let slot = match k {
                "drop" => 0,
                "dup" | "duplicate" => 1,
                "corrupt" => 2,
                "delay" => 3,
                "garble" => 4,
                "symbol" => 5,
                _ => {
                    return Err(FaultSpecError::UnknownKey { key: k.to_string() });
                }
            };
            if seen[slot] {
                return Err(FaultSpecError::Duplicate { key: k.to_string() });
            }
            seen[slot] = true;
            match slot {
                0 => cfg.drop = parse_rate(k, v)?,
                1 => cfg.duplicate = parse_rate(k, v)?,
                2 => cfg.corrupt = parse_rate(k, v)?,
                4 => cfg.garble = parse_rate(k, v)?,
                5 => cfg.symbol = parse_rate(k, v)?,
                _ => {
                    let Some((rate, dur)) = v.split_once(':') else {
                        return Err(FaultSpecError::BadDelay {
                            value: v.to_string(),
                        });
                    };
                    cfg.delay = parse_rate(k, rate)?;
                    cfg.delay_max =
                        parse_duration(dur).ok_or_else(|| FaultSpecError::BadDelay {
                            value: v.to_string(),
                        })?;
                }
            }
        }
        Ok(cfg)
    }
}

impl FromStr for FaultConfig {
    type Err = FaultSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultConfig::parse(s)
    }
}

/// Prints the same syntax [`FaultConfig::parse`] reads (only the non-zero terms).
impl fmt::Display for FaultConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        let mut sep = "";
        for (k, v) in [
            ("drop", self.drop),
            ("dup", self.duplicate),
            ("corrupt", self.corrupt),
            ("garble", self.garble),
            ("symbol", self.symbol),
        ] {
            if v != 0.0 {
                write!(f, "{sep}{k}={v}")?;
                sep = ",";
            }
        }
        if self.delay != 0.0 {
            write!(
                f,
                "{sep}delay={}:{}ns",
                self.delay,
                self.delay_max.as_nanos()
            )?;
        }
        Ok(())
    }
}

/// What the injector decided for one transmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FaultDecision {
    /// Lose the MAD.
    pub drop: bool,
    /// The MAD fails the receiver's CRC check: the receiving port discards it and counts a
    /// PortRcvError.
    pub bad_crc: bool,
    /// Flip bit `bit` (0..8) of byte `byte` before delivery (garbling).
    pub corrupt: Option<(u16, u8)>,
    /// The receiving port counts a symbol error.
    pub symbol_error: bool,
    /// Deliver a second copy.
    pub duplicate: bool,
    /// Extra delay in nanoseconds.
    pub extra_delay_ns: u64,
}

/// The seeded decision maker.
#[derive(Clone, Debug)]
pub struct FaultInjector {
    cfg: FaultConfig,
    rng: ChaCha8Rng,
}

impl FaultInjector {
    /// An injector with the given rates and RNG.
    #[must_use]
    pub fn new(cfg: FaultConfig, rng: ChaCha8Rng) -> FaultInjector {
        FaultInjector { cfg, rng }
    }

    /// The configured rates.
    #[must_use]
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// Replaces the rates (the RNG stream continues).
    pub fn set_config(&mut self, cfg: FaultConfig) {
        self.cfg = cfg;
    }

    /// Draws the fate of one MAD of `len` bytes.
    pub fn decide(&mut self, len: usize) -> FaultDecision {
        let mut d = FaultDecision::default();
        if self.cfg.is_none() {
            return d;
        }
        if self.cfg.drop > 0.0 && self.rng.gen_bool(self.cfg.drop) {
            d.drop = true;
            return d;
        }
        if self.cfg.corrupt > 0.0 && self.rng.gen_bool(self.cfg.corrupt) {
            d.bad_crc = true;
        }
        if self.cfg.garble > 0.0 && len > 0 && self.rng.gen_bool(self.cfg.garble) {
            let byte = self.rng.gen_range(0..len.min(usize::from(u16::MAX)));
            let bit = self.rng.gen_range(0..8u8);
            d.corrupt = Some((byte as u16, bit));
        }
        if self.cfg.duplicate > 0.0 && self.rng.gen_bool(self.cfg.duplicate) {
            d.duplicate = true;
        }
        if self.cfg.delay > 0.0 && self.rng.gen_bool(self.cfg.delay) {
            let max = u64::try_from(self.cfg.delay_max.as_nanos()).unwrap_or(u64::MAX);
            d.extra_delay_ns = self.rng.gen_range(0..=max);
        }
        if self.cfg.symbol > 0.0 && self.rng.gen_bool(self.cfg.symbol) {
            d.symbol_error = true;
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_the_documented_example() {
        let c = FaultConfig::parse("drop=0.01,dup=0.001,corrupt=0.0001,delay=0.01:5ms").unwrap();
        assert_eq!(c.drop, 0.01);
        assert_eq!(c.duplicate, 0.001);
        assert_eq!(c.corrupt, 0.0001);
        assert_eq!(c.delay, 0.01);
        assert_eq!(c.delay_max, Duration::from_millis(5));
        let again = FaultConfig::parse(&c.to_string()).unwrap();
        assert_eq!(again, c);
        let c = FaultConfig::parse("garble=0.5,symbol=0.25").unwrap();
        assert_eq!((c.garble, c.symbol, c.corrupt), (0.5, 0.25, 0.0));
        assert!(!c.is_none());
        assert_eq!(FaultConfig::parse(&c.to_string()).unwrap(), c);
    }

    #[test]
    fn corruption_is_a_crc_failure_and_symbol_errors_are_drawn() {
        let cfg = FaultConfig {
            corrupt: 1.0,
            symbol: 1.0,
            ..FaultConfig::NONE
        };
        let mut a = FaultInjector::new(cfg, ChaCha8Rng::seed_from_u64(5));
        let d = a.decide(256);
        assert!(d.bad_crc && d.symbol_error && !d.drop);
        assert_eq!(
            d.corrupt, None,
            "a CRC failure does not deliver damaged bytes"
        );
    }

    #[test]
    fn empty_and_none_mean_no_faults() {
        assert!(FaultConfig::parse("").unwrap().is_none());
        assert!(FaultConfig::parse(" none ").unwrap().is_none());
        assert_eq!(FaultConfig::NONE.to_string(), "none");
    }

    #[test]
    fn bad_specs_name_the_problem() {
        assert!(matches!(
            FaultConfig::parse("drop"),
            Err(FaultSpecError::NotKeyValue { .. })
        ));
        assert!(matches!(
            FaultConfig::parse("lose=0.1"),
            Err(FaultSpecError::UnknownKey { key }) if key == "lose"
        ));
        assert!(matches!(
            FaultConfig::parse("drop=1.5"),
            Err(FaultSpecError::BadRate { .. })
        ));
        assert!(matches!(
            FaultConfig::parse("drop=x"),
            Err(FaultSpecError::BadRate { .. })
        ));
        assert!(matches!(
            FaultConfig::parse("delay=0.1"),
            Err(FaultSpecError::BadDelay { .. })
        ));
        assert!(matches!(
            FaultConfig::parse("delay=0.1:5parsecs"),
            Err(FaultSpecError::BadDelay { .. })
        ));
        assert!(matches!(
            FaultConfig::parse("drop=0.1,drop=0.2"),
            Err(FaultSpecError::Duplicate { .. })
        ));
        let msg = FaultConfig::parse("lose=0.1").unwrap_err().to_string();
        assert!(msg.contains("lose"), "{msg}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5ms"), Some(Duration::from_millis(5)));
        assert_eq!(parse_duration("250us"), Some(Duration::from_micros(250)));
        assert_eq!(parse_duration("10ns"), Some(Duration::from_nanos(10)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("-1ms"), None);
    }

    #[test]
    fn no_faults_draws_nothing() {
        let mut a = FaultInjector::new(FaultConfig::NONE, ChaCha8Rng::seed_from_u64(1));
        for _ in 0..100 {
            assert_eq!(a.decide(256), FaultDecision::default());
        }
    }

    #[test]
    fn drop_rate_is_roughly_honoured() {
        let cfg = FaultConfig {
            drop: 0.2,
            ..FaultConfig::NONE
        };
        let mut a = FaultInjector::new(cfg, ChaCha8Rng::seed_from_u64(7));
        let n = 20_000;
        let dropped = (0..n).filter(|_| a.decide(256).drop).count();
        let rate = dropped as f64 / n as f64;
        assert!((0.18..0.22).contains(&rate), "{rate}");
    }

    #[test]
    fn garbling_stays_in_bounds_and_delay_within_max() {
        let cfg = FaultConfig {
            garble: 1.0,
            delay: 1.0,
            delay_max: Duration::from_micros(3),
            ..FaultConfig::NONE
        };
        let mut a = FaultInjector::new(cfg, ChaCha8Rng::seed_from_u64(3));
        for _ in 0..1000 {
            let d = a.decide(10);
            let (byte, bit) = d.corrupt.unwrap();
            assert!(byte < 10 && bit < 8);
            assert!(d.extra_delay_ns <= 3000);
        }
    }
}

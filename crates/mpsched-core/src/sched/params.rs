//! Scheduler parameters from the scenario (`[connection.scheduler_params]`, or a competing
//! flow's), validated like every other field: an unknown key or a bad value is an error that
//! starts with the key. The caller, which knows which table the parameters came from, puts
//! the table's name in front.

use crate::time::Dur;
use std::collections::BTreeMap;
use std::fmt;

/// A scheduler parameter refused: its key and why. Displayed as `key: reason`, as every
/// scenario error starts with what it is about; the caller puts the table in front.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub key: String,
    pub reason: String,
}

impl ParamError {
    pub fn new(key: &str, reason: impl Into<String>) -> ParamError {
        ParamError {
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.reason)
    }
}

impl std::error::Error for ParamError {}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Num(f64),
    Str(String),
}

/// One parameter a scheduler takes, as `mpsched schedulers` lists it.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    pub key: &'static str,
    /// The value when the key is absent, written as in the scenario's TOML (`3`, `"4ms"`), or
    /// the formula it follows when it depends on the run.
    pub default: &'static str,
    pub meaning: &'static str,
}

#[derive(Clone, Debug, Default)]
pub struct SchedParams {
    values: BTreeMap<String, ParamValue>,
}

impl SchedParams {
    pub fn new() -> SchedParams {
        SchedParams::default()
    }

    pub fn with(mut self, key: &str, v: ParamValue) -> SchedParams {
        self.values.insert(key.to_owned(), v);
        self
    }

    pub fn insert(&mut self, key: &str, v: ParamValue) {
        self.values.insert(key.to_owned(), v);
    }

    /// Refuses any key the scheduler does not know.
    pub fn only(&self, scheduler: &str, known: &[ParamInfo]) -> Result<(), ParamError> {
        for k in self.values.keys() {
            if !known.iter().any(|p| p.key == k) {
                let hint = if known.is_empty() {
                    "it takes no parameters".to_owned()
                } else {
                    let keys: Vec<_> = known.iter().map(|p| p.key).collect();
                    format!("known: {}", keys.join(", "))
                };
                return Err(ParamError::new(
                    k,
                    format!("unknown parameter of '{scheduler}' ({hint})"),
                ));
            }
        }
        Ok(())
    }

    /// A number, or `default` when absent; must lie in `[lo, hi]`.
    pub fn num(&self, key: &str, default: f64, lo: f64, hi: f64) -> Result<f64, ParamError> {
        match self.values.get(key) {
            None => Ok(default),
            Some(ParamValue::Num(x)) if (lo..=hi).contains(x) => Ok(*x),
            Some(ParamValue::Num(x)) => Err(ParamError::new(
                key,
                format!("must be in [{lo}, {hi}], got {x}"),
            )),
            Some(ParamValue::Str(s)) => Err(ParamError::new(
                key,
                format!("expected a number, got '{s}'"),
            )),
        }
    }

    /// A duration ("60ms", "1.5s", "200us", "100ns"), if given. A bare number is refused, as
    /// everywhere in a scenario: `60` could be seconds or milliseconds.
    pub fn duration(&self, key: &str) -> Result<Option<Dur>, ParamError> {
        match self.values.get(key) {
            None => Ok(None),
            Some(ParamValue::Num(x)) => Err(ParamError::new(
                key,
                format!("a duration needs its unit, e.g. \"{x}ms\" (units: ns, us, ms, s, min, h)"),
            )),
            Some(ParamValue::Str(s)) => parse_duration(s)
                .filter(|d| *d > Dur::ZERO)
                .map(Some)
                .ok_or_else(|| ParamError::new(key, format!("not a positive duration: '{s}'"))),
        }
    }

    /// A string among `choices`, or `default` when absent.
    pub fn choice<'a>(
        &self,
        key: &str,
        default: &'a str,
        choices: &[&'a str],
    ) -> Result<&'a str, ParamError> {
        match self.values.get(key) {
            None => Ok(default),
            Some(ParamValue::Str(s)) => choices
                .iter()
                .find(|c| **c == s.as_str())
                .copied()
                .ok_or_else(|| {
                    ParamError::new(key, format!("'{s}' is not one of {}", choices.join(", ")))
                }),
            Some(ParamValue::Num(x)) => Err(ParamError::new(
                key,
                format!("expected one of {}, got {x}", choices.join(", ")),
            )),
        }
    }
}

/// The duration units a scenario may write, with their length in nanoseconds: one grammar for
/// every duration (path delays and jitter in Python's scenario, scheduler parameters here);
/// the contract publishes it and Python's `units` is checked against it.
pub const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("sec", 1_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

fn parse_duration(s: &str) -> Option<Dur> {
    let s = s.trim();
    // The unit starts at the first letter, the micro signs (not ASCII) included.
    let split = s.find(|c: char| c.is_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let x: f64 = num.trim().parse().ok()?;
    let (_, ns) = DURATION_UNITS.iter().find(|(u, _)| *u == unit.trim())?;
    (x.is_finite() && x >= 0.0).then(|| Dur::from_secs_f64(x * *ns as f64 * 1e-9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_every_unit_of_the_scenario_s_grammar() {
        for (unit, ns) in DURATION_UNITS {
            let p =
                SchedParams::new().with("adjust_interval", ParamValue::Str(format!("50{unit}")));
            assert_eq!(
                p.duration("adjust_interval"),
                Ok(Some(Dur(50 * ns))),
                "{unit}"
            );
        }
        let bad =
            SchedParams::new().with("adjust_interval", ParamValue::Str("50 fortnights".into()));
        assert!(bad.duration("adjust_interval").is_err());
    }

    #[test]
    fn values_are_checked_and_named() {
        let p = SchedParams::new()
            .with("lambda", ParamValue::Num(3.0))
            .with("adjust_interval", ParamValue::Str("60ms".into()));
        assert_eq!(p.num("lambda", 1.0, 0.0, 10.0), Ok(3.0));
        assert_eq!(p.num("beta", 0.25, 0.0, 1.0), Ok(0.25));
        assert_eq!(
            p.duration("adjust_interval"),
            Ok(Some(Dur::from_millis(60)))
        );
        let e = p.num("lambda", 1.0, 0.0, 2.0).unwrap_err();
        assert_eq!(e.key, "lambda");
        assert_eq!(e.to_string(), "lambda: must be in [0, 2], got 3");
        let lambda = ParamInfo {
            key: "lambda",
            default: "1",
            meaning: "",
        };
        assert_eq!(p.only("bm", &[lambda]).unwrap_err().key, "adjust_interval");
        let bad = SchedParams::new().with("adjust_interval", ParamValue::Str("soon".into()));
        assert!(bad.duration("adjust_interval").is_err());
        let bare = SchedParams::new().with("adjust_interval", ParamValue::Num(60.0));
        assert!(bare
            .duration("adjust_interval")
            .unwrap_err()
            .reason
            .contains("needs its unit"));
    }
}

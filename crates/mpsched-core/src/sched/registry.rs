//! Every scheduler a scenario can name, in the order `mpsched schedulers` lists them.
//!
//! A scheduler's file (beside this one) describes it in its `INFO`; adding one is that file
//! plus its two lines here, the `mod` and its entry in `SCHEDULERS`. The files are declared
//! here rather than in `sched/mod.rs` so that the list is written in one place; hence the
//! `#[path]`s.

use super::{ParamError, SchedInfo, SchedParams, Scheduler};
use std::fmt;

#[path = "minrtt.rs"]
mod minrtt;

#[path = "default.rs"]
mod default;

#[path = "rr.rs"]
mod rr;

#[path = "redundant.rs"]
mod redundant;

#[path = "bm.rs"]
mod bm;

#[path = "blest.rs"]
mod blest;

#[path = "ecf.rs"]
mod ecf;

#[path = "daps.rs"]
mod daps;

#[path = "otias.rs"]
mod otias;

#[path = "stms.rs"]
mod stms;

#[path = "mptcp_sf.rs"]
mod mptcp_sf;

#[path = "linux.rs"]
mod linux;

// The worked example of docs/extending.md, compiled and tested so that the page stays true.
#[cfg(test)]
#[path = "../../../../docs/extending/widest.rs"]
mod widest_example;

const SCHEDULERS: &[SchedInfo] = &[
    minrtt::INFO,
    default::INFO,
    rr::INFO,
    redundant::INFO,
    bm::INFO,
    blest::INFO,
    ecf::INFO,
    daps::INFO,
    otias::INFO,
    stms::INFO_C,
    stms::INFO_A,
    mptcp_sf::INFO,
    linux::INFO,
];

/// Other names a scenario may give a scheduler: the papers' (alias, registered name). A
/// scenario naming an alias runs, and reports, the registered scheduler.
const ALIASES: &[(&str, &str)] = &[
    // Paper 001 (and 004's "minRTT"): the lowest-RTT-first scheduler, and its two variants.
    ("lowrtt", "minrtt"),
    ("lowrtt+rp", "default"),
    ("lowrtt+bm", "bm"),
    ("round-robin", "rr"),
];

/// Every registered scheduler, in listing order.
pub fn registry() -> impl Iterator<Item = &'static SchedInfo> {
    SCHEDULERS.iter()
}

/// The scheduler registered as `name` or known by it as an alias.
pub fn lookup(name: &str) -> Option<&'static SchedInfo> {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, registered)| registered);
    registry().find(|s| s.name == name)
}

/// The aliases of the scheduler registered as `name`, in the order they are declared.
pub fn aliases(name: &str) -> impl Iterator<Item = &'static str> + '_ {
    ALIASES
        .iter()
        .filter(move |(_, registered)| *registered == name)
        .map(|(alias, _)| *alias)
}

/// Builds the scheduler `name` with `params`.
pub fn build(name: &str, params: &SchedParams) -> Result<Box<dyn Scheduler>, BuildError> {
    let info = lookup(name).ok_or_else(|| {
        let names: Vec<_> = registry().map(|s| s.name).collect();
        BuildError::UnknownScheduler(format!(
            "unknown scheduler '{name}' (known: {})",
            names.join(", ")
        ))
    })?;
    params
        .only(name, info.params)
        .and_then(|()| (info.build)(params))
        .map_err(BuildError::Param)
}

/// Why a scheduler could not be built. The message names the scheduler or the parameter but
/// not the table they came from: only the caller knows whether that is the main connection's
/// or a competing flow's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// No scheduler has that name; the message lists those that do.
    UnknownScheduler(String),
    /// A parameter is unknown or its value bad (`lambda: must be in [0.1, 100], got 0`).
    Param(ParamError),
}

impl BuildError {
    /// The message with the field it is about, for the scheduler of table `owner`
    /// (`connection`, `flows[3]`).
    pub fn at(&self, owner: &str) -> String {
        match self {
            BuildError::UnknownScheduler(e) => format!("{owner}.scheduler: {e}"),
            BuildError::Param(e) => format!("{owner}.scheduler_params.{e}"),
        }
    }
}

impl std::error::Error for BuildError {}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            BuildError::UnknownScheduler(e) => f.write_str(e),
            BuildError::Param(e) => e.fmt(f),
        }
    }
}

/// Without the table's name: for callers that build from a scenario already validated, where
/// `at` named it.
impl From<BuildError> for String {
    fn from(e: BuildError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::ParamValue;

    /// Every registered scheduler, one added later included: a documented default that is not
    /// the code's fails here.
    #[test]
    fn every_scheduler_s_documented_defaults_are_its_defaults() {
        for info in registry() {
            crate::sched::testkit::assert_documented_defaults(info);
        }
    }

    #[test]
    fn every_entry_builds_and_names_itself() {
        for info in SCHEDULERS {
            let s = build(info.name, &SchedParams::new()).unwrap();
            assert_eq!(s.name(), info.name);
            assert!(lookup(info.name).is_some());
        }
    }

    #[test]
    fn every_alias_names_a_registered_scheduler_and_no_name_is_taken_twice() {
        let mut names: Vec<&str> = registry().map(|s| s.name).collect();
        for (alias, registered) in ALIASES {
            let info = lookup(alias).unwrap_or_else(|| panic!("{alias} -> {registered}"));
            assert_eq!(info.name, *registered);
            assert!(aliases(registered).any(|a| a == *alias));
            names.push(alias);
        }
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            count,
            "a name is both registered and an alias, or twice"
        );
        // An alias builds the registered scheduler, with its parameters.
        let s = build(
            "lowrtt+bm",
            &SchedParams::new().with("lambda", ParamValue::Num(3.0)),
        );
        assert_eq!(s.unwrap().name(), "bm");
        assert_eq!(aliases("minrtt").collect::<Vec<_>>(), ["lowrtt"]);
        assert!(lookup("LowRTT").is_none(), "names are case-sensitive");
    }

    #[test]
    fn every_declared_parameter_is_known_and_nothing_else() {
        for info in registry() {
            for param in info.params {
                // Any value: a bad one is refused for its value, never as unknown.
                for v in [ParamValue::Num(1.0), ParamValue::Str("x".into())] {
                    if let Err(e) = build(info.name, &SchedParams::new().with(param.key, v)) {
                        assert!(
                            !e.to_string().contains("unknown parameter"),
                            "{}: {e}",
                            info.name
                        );
                    }
                }
            }
            let e = build(
                info.name,
                &SchedParams::new().with("nope", ParamValue::Num(1.0)),
            );
            assert!(
                e.err().unwrap().to_string().contains("unknown parameter"),
                "{}",
                info.name
            );
        }
    }

    #[test]
    fn bad_parameters_are_refused_with_their_name() {
        let bad = |name: &str, key: &str, v: ParamValue| {
            let p = SchedParams::new().with(key, v);
            let e = build(name, &p).err().unwrap();
            assert!(
                matches!(&e, BuildError::Param(m) if m.key == key),
                "{name}: {e:?}"
            );
        };
        bad("redundant", "lambda", ParamValue::Num(1.0));
        bad("bm", "lambda", ParamValue::Num(0.0));
        bad("bm", "srtt_min", ParamValue::Str("median".into()));
        bad("blest", "lambda", ParamValue::Num(2.0));
        bad("blest", "lambda_min", ParamValue::Num(-1.0));
        bad("ecf", "beta", ParamValue::Num(-0.5));
        bad("ecf", "gamma", ParamValue::Num(0.5));
        bad("daps", "granularity", ParamValue::Str("soon".into()));
        bad("daps", "cwnd_ewma", ParamValue::Num(2.0));
    }

    #[test]
    fn the_caller_names_the_table() {
        let unknown = build("nope", &SchedParams::new()).err().unwrap();
        assert!(unknown
            .at("connection")
            .starts_with("connection.scheduler: unknown scheduler 'nope' (known: minrtt, "));
        let p = SchedParams::new().with("foo", ParamValue::Num(1.0));
        assert_eq!(
            build("bm", &p).err().unwrap().at("flows[3]"),
            "flows[3].scheduler_params.foo: unknown parameter of 'bm' (known: lambda, srtt_min)"
        );
        let p = SchedParams::new().with("lambda", ParamValue::Num(0.0));
        assert_eq!(
            build("bm", &p).err().unwrap().at("connection"),
            "connection.scheduler_params.lambda: must be in [0.1, 100], got 0"
        );
    }
}

//! Every scheduler a scenario can name, in the order `mpsched schedulers` lists them.
//!
//! A scheduler's file (beside this one) describes it in its `INFO`; adding one is that file
//! plus its two lines here, the `mod` and its entry in `SCHEDULERS`. The files are declared
//! here rather than in `sched/mod.rs` so that the list is written in one place; hence the
//! `#[path]`s.

use super::{SchedInfo, SchedParams, Scheduler};

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

/// Every registered scheduler, in listing order.
pub fn registry() -> impl Iterator<Item = &'static SchedInfo> {
    SCHEDULERS.iter()
}

pub fn lookup(name: &str) -> Option<&'static SchedInfo> {
    registry().find(|s| s.name == name)
}

/// Builds the scheduler `name` with `params`.
pub fn build(name: &str, params: &SchedParams) -> Result<Box<dyn Scheduler>, String> {
    let info = lookup(name).ok_or_else(|| {
        let names: Vec<_> = registry().map(|s| s.name).collect();
        format!(
            "connection.scheduler: unknown scheduler '{name}' (known: {})",
            names.join(", ")
        )
    })?;
    params.only(name, info.params)?;
    (info.build)(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::ParamValue;

    #[test]
    fn every_entry_builds_and_names_itself() {
        for info in SCHEDULERS {
            let s = build(info.name, &SchedParams::new()).unwrap();
            assert_eq!(s.name(), info.name);
            assert!(lookup(info.name).is_some());
        }
    }

    #[test]
    fn every_declared_parameter_is_known_and_nothing_else() {
        for info in registry() {
            for param in info.params {
                // Any value: a bad one is refused for its value, never as unknown.
                for v in [ParamValue::Num(1.0), ParamValue::Str("x".into())] {
                    if let Err(e) = build(info.name, &SchedParams::new().with(param.key, v)) {
                        assert!(!e.contains("unknown parameter"), "{}: {e}", info.name);
                    }
                }
            }
            let e = build(
                info.name,
                &SchedParams::new().with("nope", ParamValue::Num(1.0)),
            );
            assert!(
                e.err().unwrap().contains("unknown parameter"),
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
                e.contains(&format!("connection.scheduler_params.{key}")),
                "{name}: {e}"
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
}

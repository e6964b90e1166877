//! Registry entries of redundant, bm, blest, ecf and daps.

use super::blest::Blest;
use super::bm::BufferbloatMitigation;
use super::daps::Daps;
use super::ecf::Ecf;
use super::redundant::Redundant;
use super::{SchedInfo, Scheduler};

pub const SCHEDULERS: &[SchedInfo] = &[
    SchedInfo {
        name: "redundant",
        params: &[],
        description: "every segment on every subflow with window space; laggards resume at the \
                      oldest segment not yet Data-ACKed",
        source: "Linux out-of-tree mptcp_redundant.c (Erbshaeusser, Froemmgen; v0.90+)",
        build: |_| Ok(Box::new(Redundant::new()) as Box<dyn Scheduler>),
    },
    SchedInfo {
        name: "bm",
        params: &["lambda", "srtt_min"],
        description: "LowRTT with bufferbloat mitigation: in flight < lambda x sRTT_min / sRTT x \
                      cwnd",
        source: "Paasch et al., CSWS 2014, sec. 3.4 (after Ferlin et al., IWQoS 2014)",
        build: |p| BufferbloatMitigation::from_params(p).map(|s| Box::new(s) as Box<dyn Scheduler>),
    },
    SchedInfo {
        name: "blest",
        params: &[
            "lambda",
            "lambda_min",
            "lambda_max",
            "lambda_up",
            "lambda_down",
        ],
        description: "LowRTT that skips the slower subflow when its segment would block the \
                      fastest one in the send window",
        source: "Ferlin et al., IFIP Networking 2016; Linux out-of-tree mptcp_blest.c",
        build: |p| Blest::from_params(p).map(|s| Box::new(s) as Box<dyn Scheduler>),
    },
    SchedInfo {
        name: "ecf",
        params: &["beta", "x"],
        description: "earliest completion first: wait for the fastest subflow when a slower one \
                      would finish later",
        source: "Lim et al., CoNEXT 2017, Algorithm 1; Linux out-of-tree mptcp_ecf.c",
        build: |p| Ecf::from_params(p).map(|s| Box::new(s) as Box<dyn Scheduler>),
    },
    SchedInfo {
        name: "daps",
        params: &["granularity", "cwnd_ewma"],
        description: "delay-aware packet scheduling: plan each subflow's segments over the \
                      hyperperiod of the path delays so that they arrive in order",
        source: "Kuhn et al., ICC 2014, Algorithm 1; kernel port in the mptcp-kau fork",
        build: |p| Daps::from_params(p).map(|s| Box::new(s) as Box<dyn Scheduler>),
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{build, lookup, ParamValue, SchedParams};

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
        for info in crate::sched::registry() {
            for key in info.params {
                // Any value: a bad one is refused for its value, never as unknown.
                for v in [ParamValue::Num(1.0), ParamValue::Str("x".into())] {
                    if let Err(e) = build(info.name, &SchedParams::new().with(key, v)) {
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

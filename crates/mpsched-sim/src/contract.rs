//! The contract between the simulator and everything built on it: what a scenario may name
//! (schedulers and their parameters, congestion controls, stacks, loss recoveries, workloads)
//! and what a run returns (the summary's fields, the trace tables' columns), each with its
//! meaning. `mpsched._native.contract()` hands it to Python as JSON; the Python validation,
//! the sweep's columns, the testbed's summary, the printed summary and the docs derive from
//! it, and a test fails when the stub or the docs drift from it.

use crate::schema::{Field, Table};
use crate::summary::{FlowSummary, Quantiles, SubflowSummary, Summary};
use crate::trace_schema::TABLES;
use mpsched_core::cc::CONGESTION_CONTROLS;
use mpsched_core::sched::{aliases, registry, SubflowView};
use serde::Serialize;

/// Bumped when a field changes meaning or goes away (adding one does not).
pub const VERSION: u32 = 1;

#[derive(Serialize)]
pub struct Choice {
    pub name: &'static str,
    pub description: &'static str,
}

#[derive(Serialize)]
pub struct Param {
    pub key: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

#[derive(Serialize)]
pub struct SchedulerEntry {
    pub name: &'static str,
    /// Other names a scenario may give it (the papers'); a run reports `name`.
    pub aliases: Vec<&'static str>,
    pub description: &'static str,
    pub source: &'static str,
    pub params: Vec<Param>,
}

#[derive(Serialize)]
pub struct CongestionEntry {
    pub name: &'static str,
    pub description: &'static str,
    pub source: &'static str,
    pub coupled: bool,
    pub single_path: &'static str,
}

/// One attribute of the subflow view a Python scheduler sees (`SubflowView::FIELDS`).
#[derive(Serialize)]
pub struct ViewAttribute {
    pub name: &'static str,
    /// Its Python type, without `None` (`int`, `bool`, `Literal[...]`).
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub nullable: bool,
    pub unit: &'static str,
    pub meaning: &'static str,
    /// The Rust field of `SubflowView`, or the method of a derived attribute.
    pub rust: &'static str,
    pub derived: bool,
}

#[derive(Serialize)]
pub struct Records {
    pub summary: &'static [Field],
    pub subflow: &'static [Field],
    pub flow: &'static [Field],
    pub quantiles: &'static [Field],
}

#[derive(Serialize)]
pub struct Contract {
    pub version: u32,
    pub schedulers: Vec<SchedulerEntry>,
    pub congestion_controls: Vec<CongestionEntry>,
    pub protocols: &'static [Choice],
    pub stacks: &'static [Choice],
    pub loss_recoveries: &'static [Choice],
    pub joins: &'static [Choice],
    pub timer_hz: &'static [Choice],
    pub workloads: &'static [Choice],
    /// Every duration's units, in nanoseconds (`sched::params::DURATION_UNITS`).
    pub duration_units: &'static [(&'static str, u64)],
    /// The normalized scenario's tables and their keys (`mpsched_scenario::keys`), which
    /// Python's conversion must write.
    pub scenario_keys: Vec<(&'static str, &'static [&'static str])>,
    /// The link knobs (`mpsched_scenario::config::LINK_KNOBS`): plain scalars of a link
    /// direction, each with its type, unit, default, range and meaning, from which Python
    /// derives a scenario file's keys (`python/mpsched/scenario/knobs.py`).
    pub link_knobs: Vec<mpsched_scenario::keys::KnobEntry>,
    pub records: Records,
    pub traces: &'static [Table],
    /// What a Python scheduler sees of each subflow (`ctx.subflows[i]`), declared with
    /// `SubflowView` in the core.
    pub subflow_view: Vec<ViewAttribute>,
}

/// The values of the scenario's enumerations (their serde names; a test checks that each one
/// parses).
pub const PROTOCOLS: &[Choice] = &[
    Choice {
        name: "mptcp",
        description: "Multipath TCP over every path the connection uses",
    },
    Choice {
        name: "tcp",
        description: "plain TCP over the first path",
    },
];

pub const STACKS: &[Choice] = &[
    Choice {
        name: "upstream",
        description: "upstream Linux MPTCP (5.6+): each subflow ACKs as its data arrives",
    },
    Choice {
        name: "out-of-tree",
        description: "the multipath-tcp.org kernel (v0.9x) of the STMS, BLEST and ECF papers: \
                      one connection-level window, ACKs held while it would shrink",
    },
];

pub const JOINS: &[Choice] = &[
    Choice {
        name: "first-data",
        description: "the client opens the other subflows once the connection is fully \
                      established (the server's first data arrived), as Linux does",
    },
    Choice {
        name: "syn-ack",
        description: "the client opens the other subflows at the first subflow's SYN-ACK",
    },
];

pub const LOSS_RECOVERIES: &[Choice] = &[
    Choice {
        name: "linux",
        description: "RACK, tail loss probes, RTO = SRTT + max(4 RTTVAR, 200 ms)",
    },
    Choice {
        name: "classic",
        description: "RFC 6675 DupThresh (3 segments SACKed above a hole), no probes, RTO >= 1 s",
    },
    Choice {
        name: "linux-static-reo-wnd",
        description: "linux with RACK's reordering window never widened by D-SACKs \
                      (net.ipv4.tcp_recovery = 3): what the adaptation to reordering is worth",
    },
];

/// `connection.timer_hz` (numbers, named as text).
pub const TIMER_HZ: &[Choice] = &[
    Choice {
        name: "250",
        description: "Debian's, Ubuntu's and Fedora's kernels, and the testbed's: 4 ms ticks",
    },
    Choice {
        name: "1000",
        description: "1 ms ticks (low-latency and some server kernels)",
    },
    Choice {
        name: "300",
        description: "3.3 ms ticks",
    },
    Choice {
        name: "100",
        description: "10 ms ticks (older server kernels)",
    },
    Choice {
        name: "0",
        description: "no ticks: every timer runs at the nanosecond it asks for",
    },
];

pub const WORKLOADS: &[Choice] = &[
    Choice {
        name: "bulk",
        description: "send for the whole run",
    },
    Choice {
        name: "file",
        description: "send size_bytes, then stop",
    },
    Choice {
        name: "rate",
        description: "an application writing a block every block x 8 / rate seconds",
    },
];

pub fn contract() -> Contract {
    Contract {
        version: VERSION,
        schedulers: registry()
            .map(|s| SchedulerEntry {
                name: s.name,
                aliases: aliases(s.name).collect(),
                description: s.description,
                source: s.source,
                params: s
                    .params
                    .iter()
                    .map(|p| Param {
                        key: p.key,
                        default: p.default,
                        meaning: p.meaning,
                    })
                    .collect(),
            })
            .collect(),
        congestion_controls: CONGESTION_CONTROLS
            .iter()
            .map(|c| CongestionEntry {
                name: c.name,
                description: c.description,
                source: c.source,
                coupled: c.coupled,
                single_path: c.single_path,
            })
            .collect(),
        protocols: PROTOCOLS,
        stacks: STACKS,
        loss_recoveries: LOSS_RECOVERIES,
        joins: JOINS,
        timer_hz: TIMER_HZ,
        workloads: WORKLOADS,
        duration_units: mpsched_core::sched::params::DURATION_UNITS,
        scenario_keys: mpsched_scenario::keys::scenario_keys(),
        link_knobs: mpsched_scenario::keys::link_knobs(),
        records: Records {
            summary: Summary::FIELDS,
            subflow: SubflowSummary::FIELDS,
            flow: FlowSummary::FIELDS,
            quantiles: Quantiles::FIELDS,
        },
        traces: TABLES,
        subflow_view: SubflowView::FIELDS
            .iter()
            .map(|f| ViewAttribute {
                name: f.name,
                kind: f.py_type,
                nullable: f.nullable,
                unit: f.unit,
                meaning: f.meaning,
                rust: f.rust,
                derived: f.derived,
            })
            .collect(),
    }
}

pub fn contract_json() -> String {
    serde_json::to_string(&contract()).expect("the contract serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{JoinName, Protocol, RecoveryName, StackName};
    use serde::de::DeserializeOwned;

    fn parses<T: DeserializeOwned>(name: &str) -> bool {
        serde_json::from_str::<T>(&format!("\"{name}\"")).is_ok()
    }

    #[test]
    fn every_listed_choice_is_one_the_scenario_accepts() {
        assert!(PROTOCOLS.iter().all(|c| parses::<Protocol>(c.name)));
        assert!(STACKS.iter().all(|c| parses::<StackName>(c.name)));
        assert!(LOSS_RECOVERIES
            .iter()
            .all(|c| parses::<RecoveryName>(c.name)));
        let mut hz: Vec<u32> = TIMER_HZ.iter().map(|c| c.name.parse().unwrap()).collect();
        hz.sort_unstable();
        assert_eq!(hz[0], 0);
        assert_eq!(hz[1..], mpsched_core::jiffies::KERNEL_HZ);
        assert_eq!(
            TIMER_HZ[0].name,
            mpsched_core::jiffies::DEFAULT_HZ.to_string()
        );
        for w in WORKLOADS {
            let json = match w.name {
                "bulk" => r#"{"kind": "bulk"}"#.to_string(),
                "file" => r#"{"kind": "file", "size_bytes": 1}"#.to_string(),
                other => format!(r#"{{"kind": "{other}", "rate_bps": 1, "block_bytes": 1}}"#),
            };
            let parsed: Result<crate::config::Workload, _> = serde_json::from_str(&json);
            assert!(parsed.is_ok(), "{}: {parsed:?}", w.name);
        }
        // And nothing the scenario accepts is missing.
        assert!(!parses::<StackName>("none") && STACKS.len() == 2);
        assert!(LOSS_RECOVERIES.len() == 3 && PROTOCOLS.len() == 2);
        assert!(JOINS.iter().all(|c| parses::<JoinName>(c.name)));
        assert!(!parses::<JoinName>("never") && JOINS.len() == 2);
    }

    /// The summary's serialized keys are exactly the declared fields, in order.
    #[test]
    fn the_summary_serializes_its_declared_fields() {
        let mut cfg = crate::build::stms_lab(100_000_000, 10_000_000_000);
        cfg.workload = crate::config::Workload::Rate {
            rate_bps: 20_000_000,
            block_bytes: 10_000,
            warmup_ns: 0,
        };
        cfg.flows = vec![crate::config::FlowConfig {
            start_ns: 0,
            protocol: Protocol::Tcp,
            scheduler: "minrtt".into(),
            scheduler_params: Default::default(),
            congestion: "reno".into(),
            size_bytes: Some(10_000),
            paths: vec![0],
        }];
        // Stopped part-way, so that the interruption's field is there too.
        let mut watched = 0;
        let out = crate::Simulation::new(cfg, false)
            .unwrap()
            .run_watched(&mut |_, _| {
                watched += 1;
                watched < 2
            });
        let v: serde_json::Value = serde_json::to_value(&out.summary).unwrap();
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        let names = |f: &[Field]| -> Vec<String> { f.iter().map(|f| f.name.to_string()).collect() };
        let mut want = names(Summary::FIELDS);
        let mut got = keys(&v);
        want.sort();
        got.sort();
        assert_eq!(got, want);
        let mut sub = keys(&v["subflows"][0]);
        let mut want_sub = names(SubflowSummary::FIELDS);
        sub.sort();
        want_sub.sort();
        assert_eq!(sub, want_sub);
        let mut flow = keys(&v["flows"][0]);
        let mut want_flow = names(FlowSummary::FIELDS);
        flow.sort();
        want_flow.sort();
        assert_eq!(flow, want_flow);
        let mut q = names(Quantiles::FIELDS);
        q.sort();
        assert_eq!(keys(&v["ooo_delay_ms"]), q);
    }
}

//! The benchmark scenarios of `mpsched bench` and the measurements taken on each.

use crate::build::*;
use crate::config::{Config, FlowConfig, Protocol, QueueSpec, SharedLinkConfig};
use crate::{SimError, Simulation};
use serde::Serialize;
use std::fmt;

/// The benchmark refused or failed: displayed as the messages always were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BenchError {
    /// No benchmark scenario has this name.
    UnknownScenario(String),
    /// Two runs of this scenario processed different numbers of events.
    NotDeterministic(&'static str),
    /// A scenario the simulator refused.
    Sim(SimError),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            BenchError::UnknownScenario(n) => {
                write!(f, "bench: unknown scenario '{n}' (known: a, b, c)")
            }
            BenchError::NotDeterministic(name) => {
                write!(f, "bench: scenario {name} is not deterministic")
            }
            BenchError::Sim(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Sim(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SimError> for BenchError {
    fn from(e: SimError) -> BenchError {
        BenchError::Sim(e)
    }
}

/// For the callers whose own errors are still messages (the Python binding's).
impl From<BenchError> for String {
    fn from(e: BenchError) -> String {
        e.to_string()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub name: &'static str,
    pub description: &'static str,
    pub simulated_s: f64,
    pub events: u64,
    pub data_packets: u64,
    /// How many times the scenario ran; the wall time is the median run's.
    pub runs: usize,
    pub wall_s: f64,
    pub sim_s_per_wall_s: f64,
    pub data_packets_per_wall_s: f64,
    pub events_per_wall_s: f64,
    /// The bare heap loop's million events per second, timed beside this scenario's runs
    /// (median), and the scenario's simulated seconds per wall second divided by it.
    pub heap_mevents_per_s: f64,
    pub ratio_to_heap: f64,
    /// Peak resident memory during this scenario (Linux VmHWM after resetting it), if known.
    pub peak_rss_bytes: Option<u64>,
}

/// The scenarios: (name, description, config).
pub fn scenarios() -> Vec<(&'static str, &'static str, Config)> {
    let two = |rate: u64, secs: u64| {
        let mut c = scenario(
            vec![
                path("wifi", rate, 20 * MS, QueueSpec::TimeNs(50 * MS), 0.0001),
                path("lte", rate, 100 * MS, QueueSpec::TimeNs(500 * MS), 0.0001),
            ],
            "default",
            secs * S,
        );
        c.seed = 1;
        c
    };
    let eight = scenario(
        (0..8)
            .map(|i| {
                path(
                    &format!("p{i}"),
                    100 * MBPS,
                    (10 + 10 * i as u64) * MS,
                    QueueSpec::TimeNs(50 * MS),
                    0.0001,
                )
            })
            .collect(),
        "default",
        60 * S,
    );
    // 50 connections of 8 subflows sharing the eight paths' queues.
    let mut shared = eight.clone();
    shared.flows = (0..49)
        .map(|_| FlowConfig {
            start_ns: 0,
            protocol: Protocol::Mptcp,
            scheduler: "default".into(),
            scheduler_params: Default::default(),
            congestion: "cubic".into(),
            size_bytes: None,
            paths: (0..8).collect(),
        })
        .collect();
    // A home: WiFi behind a 20 Mbit/s DSL line that another device's TCP download shares,
    // and LTE following the shipped stepped trace (24, 6, 12, 3 Mbit/s for 5 s each).
    let mut home = scenario(
        vec![
            path("wifi", 100 * MBPS, 4 * MS, QueueSpec::Packets(1000), 0.0),
            path("lte", 10 * MBPS, 60 * MS, QueueSpec::TimeNs(200 * MS), 0.0),
            path("laptop", 100 * MBPS, 4 * MS, QueueSpec::Packets(1000), 0.0),
        ],
        "default",
        60 * S,
    );
    home.links = vec![SharedLinkConfig {
        name: "dsl".into(),
        down: link(20 * MBPS, 10 * MS, QueueSpec::TimeNs(50 * MS), 0.0),
        up: link(20 * MBPS, 10 * MS, QueueSpec::TimeNs(50 * MS), 0.0),
    }];
    home.paths[0].via = vec![0];
    home.paths[2].via = vec![0];
    home.paths[1].down.trace_ms = Some(lte_steps());
    home.main_paths = Some(2);
    home.flows = vec![FlowConfig {
        start_ns: 0,
        protocol: Protocol::Tcp,
        scheduler: "minrtt".into(),
        scheduler_params: Default::default(),
        congestion: "cubic".into(),
        size_bytes: None,
        paths: vec![2],
    }];
    vec![
        (
            "a",
            "2 x 30 Mbit/s, RTT 20/100 ms, bulk, 60 s",
            two(30 * MBPS, 60),
        ),
        (
            "b",
            "2 x 300 Mbit/s, RTT 20/100 ms, bulk, 600 s",
            two(300 * MBPS, 600),
        ),
        ("c", "8 x 100 Mbit/s, RTT 10..80 ms, bulk, 60 s", eight),
        (
            "d",
            "c shared by 50 MPTCP connections (400 subflows), 60 s",
            shared,
        ),
        (
            "f",
            "WiFi behind a shared 20 Mbit/s DSL line with a TCP flow, LTE trace-driven, 60 s",
            home,
        ),
    ]
}

/// The shipped LTE-like trace (`scenarios/traces/lte-steps.trace`), in ms.
fn lte_steps() -> Vec<u64> {
    include_str!("../../../scenarios/traces/lte-steps.trace")
        .lines()
        .map(|l| l.trim().parse().expect("the shipped trace is well formed"))
        .collect()
}

fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Every scenario runs at least this many times and until this much wall time has passed, so
/// one run disturbed by the machine does not set the number. Before each run the bare heap loop
/// runs for `HEAP_EVENTS`, so both are timed under the same load of a shared machine.
const MIN_RUNS: usize = 3;
const MIN_WALL_S: f64 = 1.0;
const MAX_RUNS: usize = 50;
const HEAP_EVENTS: u64 = 1_000_000;
const HEAP_PENDING: u64 = 1024;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Runs the named scenarios (all when `names` is empty), each several times; reports the
/// median run's loop time.
pub fn run(names: &[String]) -> Result<Vec<BenchRow>, BenchError> {
    let all = scenarios();
    for n in names {
        if !all.iter().any(|(name, _, _)| name == n) {
            return Err(BenchError::UnknownScenario(n.clone()));
        }
    }
    let mut rows = vec![];
    for (name, description, cfg) in all {
        if !names.is_empty() && !names.iter().any(|n| n == name) {
            continue;
        }
        let can_reset = reset_peak_rss();
        let mut walls = vec![];
        let mut heaps = vec![];
        let mut s: Option<crate::summary::Summary> = None;
        while walls.len() < MAX_RUNS
            && (walls.len() < MIN_RUNS || walls.iter().sum::<f64>() < MIN_WALL_S)
        {
            heaps.push(crate::event::bench_event_queue(HEAP_EVENTS, HEAP_PENDING));
            let run = Simulation::new(cfg.clone(), false)?.run().summary;
            if s.as_ref().is_some_and(|first| first.events != run.events) {
                return Err(BenchError::NotDeterministic(name));
            }
            walls.push(run.wall_s);
            s = Some(run);
        }
        let mut s = s.expect("ran at least once");
        let runs = walls.len();
        s.wall_s = median(walls);
        let heap = median(heaps);
        // Every connection's packets (the summary's own count is the main connection's).
        let packets = if s.flows.is_empty() {
            s.data_packets
        } else {
            s.flows.iter().map(|f| f.packets_sent).sum()
        };
        rows.push(BenchRow {
            name,
            description,
            simulated_s: s.duration_s,
            events: s.events,
            data_packets: packets,
            runs,
            wall_s: s.wall_s,
            sim_s_per_wall_s: s.duration_s / s.wall_s,
            data_packets_per_wall_s: packets as f64 / s.wall_s,
            events_per_wall_s: s.events as f64 / s.wall_s,
            heap_mevents_per_s: heap,
            ratio_to_heap: s.duration_s / s.wall_s / heap,
            peak_rss_bytes: if can_reset { peak_rss() } else { None },
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unknown name is refused before anything runs, as its variant and the message it
    /// always was.
    #[test]
    fn an_unknown_scenario_is_refused() {
        let e = run(&["z".to_string()]).unwrap_err();
        assert_eq!(e, BenchError::UnknownScenario("z".into()));
        assert_eq!(
            e.to_string(),
            "bench: unknown scenario 'z' (known: a, b, c)"
        );
        assert_eq!(
            String::from(BenchError::NotDeterministic("a")),
            "bench: scenario a is not deterministic"
        );
    }
}

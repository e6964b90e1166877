//! The benchmark scenarios of `mpsched bench` and the measurements taken on each.

use crate::build::*;
use crate::config::{Config, QueueSpec};
use crate::Simulation;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub name: &'static str,
    pub description: &'static str,
    pub simulated_s: f64,
    pub events: u64,
    pub data_packets: u64,
    pub wall_s: f64,
    pub sim_s_per_wall_s: f64,
    pub data_packets_per_wall_s: f64,
    pub events_per_wall_s: f64,
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
    ]
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

/// Runs the named scenarios (all when `names` is empty).
pub fn run(names: &[String]) -> Result<Vec<BenchRow>, String> {
    let all = scenarios();
    for n in names {
        if !all.iter().any(|(name, _, _)| name == n) {
            return Err(format!("bench: unknown scenario '{n}' (known: a, b, c)"));
        }
    }
    let mut rows = vec![];
    for (name, description, cfg) in all {
        if !names.is_empty() && !names.iter().any(|n| n == name) {
            continue;
        }
        let can_reset = reset_peak_rss();
        let s = Simulation::new(cfg, false)?.run().summary;
        rows.push(BenchRow {
            name,
            description,
            simulated_s: s.duration_s,
            events: s.events,
            data_packets: s.data_packets,
            wall_s: s.wall_s,
            sim_s_per_wall_s: s.duration_s / s.wall_s,
            data_packets_per_wall_s: s.data_packets as f64 / s.wall_s,
            events_per_wall_s: s.events as f64 / s.wall_s,
            peak_rss_bytes: if can_reset { peak_rss() } else { None },
        });
    }
    Ok(rows)
}

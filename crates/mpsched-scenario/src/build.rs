//! Building scenarios in code (tests, benchmarks): the same `Config` the JSON describes,
//! from readable units.

use crate::config::{
    Change, Config, LinkSpec, PathConfig, Protocol, QueueSpec, StackName, Workload,
};
use std::collections::BTreeMap;

pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;
pub const MBPS: u64 = 1_000_000;
pub const MIB: u64 = 1 << 20;

/// One direction of a link: a rate, a one-way delay, a drop-tail queue, independent loss.
pub fn link(rate_bps: u64, delay_ns: u64, queue: QueueSpec, loss: f64) -> LinkSpec {
    LinkSpec::new(rate_bps, delay_ns, queue, loss)
}

/// The path goes down (`up = false`) or comes back at `at_ns` (`state` in its schedule).
pub fn state(at_ns: u64, up: bool) -> Change {
    Change {
        at_ns,
        up: Some(up),
        ..Change::default()
    }
}

/// The path's address goes away (`present = false`, `state = "gone"`) or comes back.
pub fn presence(at_ns: u64, present: bool) -> Change {
    Change {
        at_ns,
        present: Some(present),
        ..Change::default()
    }
}

/// A symmetric path: `rate` both ways, `rtt` split evenly, the same queue limit both ways.
pub fn path(name: &str, rate_bps: u64, rtt_ns: u64, queue: QueueSpec, loss: f64) -> PathConfig {
    let link = |loss| link(rate_bps, rtt_ns / 2, queue, loss);
    PathConfig {
        name: name.into(),
        down: link(loss),
        up: link(0.0),
        schedule: Vec::<Change>::new(),
        backup: false,
        via: Vec::new(),
    }
}

/// An MPTCP bulk transfer over `paths` with 6 MiB buffers and CUBIC.
pub fn scenario(paths: Vec<PathConfig>, scheduler: &str, duration_ns: u64) -> Config {
    Config {
        duration_ns,
        seed: 1,
        protocol: Protocol::Mptcp,
        scheduler: scheduler.into(),
        scheduler_params: BTreeMap::new(),
        congestion: "cubic".into(),
        sndbuf_bytes: 6 * MIB,
        sndbuf_autotune: true,
        rcvbuf_bytes: 6 * MIB,
        rcvbuf_initial_bytes: mpsched_core::conn::rcvwin::RCVBUF_INITIAL,
        rcvbuf_autotune: true,
        window_ratio: None,
        stack: StackName::Upstream,
        loss_recovery: Default::default(),
        join: Default::default(),
        timer_hz: mpsched_core::jiffies::DEFAULT_HZ,
        timer_phase_ns: 0,
        workload: Workload::Bulk,
        write_chunk_bytes: Some(mpsched_core::conn::DEFAULT_WRITE_CHUNK.0),
        paths,
        main_paths: None,
        flows: Vec::new(),
        links: Vec::new(),
    }
}

/// The STMS paper's lab set-up (sec. 2.1): 30 Mbit/s each, loss 0.01%, WiFi RTT 20 ms with a
/// 50 ms buffer, LTE RTT 100 ms with a 500 ms buffer, 6 MiB host buffers.
pub fn stms_lab(slow_rtt_ns: u64, duration_ns: u64) -> Config {
    scenario(
        vec![
            path(
                "wifi",
                30 * MBPS,
                20 * MS,
                QueueSpec::TimeNs(50 * MS),
                0.0001,
            ),
            path(
                "lte",
                30 * MBPS,
                slow_rtt_ns,
                QueueSpec::TimeNs(500 * MS),
                0.0001,
            ),
        ],
        "default",
        duration_ns,
    )
}

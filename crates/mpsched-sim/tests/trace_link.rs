//! Trace-driven links (Mahimahi's delivery opportunities): a constant trace carries what the
//! fixed rate it equals carries, and the packets read back from a capture of the link's
//! output leave exactly at the trace's opportunities, never more than the opportunities'
//! bytes at once (and the end of a packet begun at an earlier one); those that pass while the
//! queue is empty are lost, as in Mahimahi.

mod common;

use common::Shared;
use mpsched_sim::build::*;
use mpsched_sim::capture::Vantage;
use mpsched_sim::config::{Config, Protocol, QueueSpec, Workload};
use mpsched_sim::Simulation;
use std::collections::BTreeMap;

/// One opportunity every millisecond: 1504 B/ms, 12.032 Mbit/s.
fn constant_trace() -> Vec<u64> {
    (1..=1000).collect()
}

fn tcp(rate_bps: u64, trace: Option<Vec<u64>>) -> Config {
    let mut c = scenario(
        vec![path("p", rate_bps, 40 * MS, QueueSpec::Bytes(150_000), 0.0)],
        "minrtt",
        60 * S,
    );
    c.protocol = Protocol::Tcp;
    c.congestion = "cubic".into();
    c.paths[0].down.trace_ms = trace;
    c
}

#[test]
fn a_constant_trace_carries_what_its_rate_carries() {
    let fixed = Simulation::new(tcp(12_032_000, None), false)
        .unwrap()
        .run()
        .summary;
    let traced = Simulation::new(tcp(12_032_000, Some(constant_trace())), false)
        .unwrap()
        .run()
        .summary;
    let ratio = traced.goodput_mbps / fixed.goodput_mbps;
    assert!(
        (ratio - 1.0).abs() < 0.02,
        "trace {} against rate {} Mbit/s",
        traced.goodput_mbps,
        fixed.goodput_mbps
    );
    // Both fill the link: 12.032 x 1448 / 1500 of payload.
    assert!(fixed.goodput_mbps > 0.97 * 12.032 * 1448.0 / 1500.0);
}

#[test]
fn packets_leave_at_the_trace_s_opportunities() {
    // A trace with bursts and gaps (3 at 2 ms, 1 at 5 ms, 2 at 9 ms, period 10 ms) under a
    // bulk transfer that keeps the queue full.
    let trace = vec![2, 2, 2, 5, 9, 9, 10];
    let mut cfg = tcp(12_032_000, Some(trace.clone()));
    cfg.duration_ns = 5 * S;
    let delay = cfg.paths[0].down.delay_ns;
    let out = Shared::default();
    let mut sim = Simulation::new(cfg, false).unwrap();
    sim.capture(Vantage::Links, Box::new(out.clone())).unwrap();
    sim.run();
    let section = mpsched_pcap::read(&out.0.borrow()).unwrap();
    assert_eq!(section.interfaces[0], "p down");
    // Departures (link output minus the propagation delay) per millisecond of the trace; the
    // handshake is not in the model's queues (its packets are written at computed times).
    let mut bytes_at: BTreeMap<u64, u64> = BTreeMap::new();
    for p in section
        .packets
        .iter()
        .filter(|p| p.interface == 0 && p.orig_len > 100)
    {
        let left = p.t_ns - delay;
        assert_eq!(
            left % 1_000_000,
            0,
            "departure off the millisecond grid: {left} ns"
        );
        *bytes_at.entry(left / 1_000_000).or_default() += u64::from(p.orig_len);
    }
    assert!(bytes_at.len() > 1000, "{} departures", bytes_at.len());
    let per_ms: BTreeMap<u64, u64> = trace.iter().fold(BTreeMap::new(), |mut m, &t| {
        *m.entry(t % 10).or_default() += 1;
        m
    });
    for (&ms, &bytes) in &bytes_at {
        let opportunities = per_ms.get(&(ms % 10)).copied().unwrap_or(0);
        assert!(
            opportunities > 0,
            "a packet left at {ms} ms, not an opportunity"
        );
        // Its opportunities' bytes, and the end of a packet an earlier opportunity began.
        assert!(
            bytes <= opportunities * 1504 + 1500,
            "{bytes} B left at {ms} ms with {opportunities} opportunities"
        );
    }
    // Saturated: the capacity is used, 7 x 1504 B every 10 ms = 8.42 Mbit/s.
    let total: u64 = bytes_at.values().sum();
    let span_ms = bytes_at.keys().last().unwrap() - bytes_at.keys().next().unwrap();
    let mbps = total as f64 * 8.0 / (span_ms as f64 * 1e3);
    assert!((7.5..=8.43).contains(&mbps), "{mbps} Mbit/s");
}

/// Mahimahi's `LinkQueue::rationalize` burns every opportunity whose time has come, whether or
/// not a packet is waiting: one that passes with the queue empty is lost, not saved for later.
/// A six-segment block every 500 ms (TCP, 1500-byte packets) over a trace of one opportunity
/// every 10 ms: each block finds the link idle and leaves at the six opportunities after it is
/// written, the last 50 to 60 ms later, then 20 ms of propagation. Were the idle 500 ms's
/// opportunities kept, the block would leave at once.
#[test]
fn opportunities_that_pass_with_the_queue_empty_are_lost() {
    let mut cfg = tcp(12_032_000, Some(vec![10]));
    cfg.duration_ns = 20 * S;
    let block = 6 * 1448;
    cfg.workload = Workload::Rate {
        rate_bps: block * 8 * 2,
        block_bytes: block,
        warmup_ns: 2 * S,
    };
    let s = Simulation::new(cfg, false).unwrap().run().summary;
    assert!(s.blocks_delivered.unwrap() >= 30);
    let d = s.block_delay_ms.unwrap();
    eprintln!(
        "block delays {d:?} ms over {} blocks",
        s.blocks_delivered.unwrap()
    );
    // The quantiles' buckets are 1/128 wide.
    assert!(
        d.p50 >= 20.0 + 50.0 - 0.6 && d.max < 20.0 + 60.0 + 0.1,
        "block delays {d:?} ms"
    );
}

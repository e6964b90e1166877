//! A fingerprint of the model's behaviour: every scheduler with every congestion control, and
//! every workload, stack, loss recovery, jitter, schedule and competing-flow feature, each run
//! with full traces; one FNV-1a hash per run over its summary (wall time left out) and every
//! trace column, and one over all runs. A refactoring that claims "behaviour unchanged" prints
//! the same last line before and after.
//!
//! `cargo run --release -p mpsched-sim --example fingerprint [-- --verbose]`
//!
//! The scenarios are written as the normalized JSON the Python layer sends, so this tool does
//! not depend on how the simulator's configuration is built in Rust.

use mpsched_sim::trace_out::{Chunk, Column};
use mpsched_sim::{simulation_from_json, summary_json};

/// Every registered scheduler and congestion control, in the registries' order.
fn schedulers() -> Vec<&'static str> {
    mpsched_core::sched::registry().map(|s| s.name).collect()
}
fn ccs() -> Vec<&'static str> {
    mpsched_core::cc::CONGESTION_CONTROLS
        .iter()
        .map(|c| c.name)
        .collect()
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn chunk(&mut self, c: &Chunk) {
        self.bytes(c.table.as_bytes());
        for (name, col) in &c.columns {
            self.bytes(name.as_bytes());
            match col {
                Column::U64(v) => v.iter().for_each(|x| self.bytes(&x.to_le_bytes())),
                Column::U32(v) => v.iter().for_each(|x| self.bytes(&x.to_le_bytes())),
                Column::U16(v) => v.iter().for_each(|x| self.bytes(&x.to_le_bytes())),
                Column::U8(v) => self.bytes(v),
                Column::F64(v) => v
                    .iter()
                    .for_each(|x| self.bytes(&x.to_bits().to_le_bytes())),
                Column::Str(v) => v.iter().for_each(|x| self.bytes(x.as_bytes())),
            }
        }
    }
}

fn path(name: &str, rate: u64, delay_ms: u64, queue: &str, loss: f64, jitter_ms: u64) -> String {
    let link = |loss: f64| {
        format!(
            r#"{{"rate_bps": {rate}, "delay_ns": {}, "loss": {loss}, "queue": {queue}, "jitter_ns": {}}}"#,
            delay_ms * 1_000_000,
            jitter_ms * 1_000_000
        )
    };
    format!(
        r#"{{"name": "{name}", "down": {}, "up": {}}}"#,
        link(loss),
        link(0.0)
    )
}

fn two_paths(loss: f64) -> String {
    format!(
        "[{}, {}]",
        path("wifi", 30_000_000, 10, r#"{"time_ns": 50000000}"#, loss, 0),
        path("lte", 30_000_000, 50, r#"{"time_ns": 500000000}"#, loss, 0)
    )
}

fn scenario(sched: &str, cc: &str, secs: u64, paths: &str, extra: &str) -> String {
    format!(
        r#"{{"duration_ns": {}, "seed": 7, "protocol": "mptcp", "scheduler": "{sched}",
            "congestion": "{cc}", "sndbuf_bytes": 6291456, "rcvbuf_bytes": 6291456,
            "workload": {{"kind": "bulk"}}, "paths": {paths}{extra}}}"#,
        secs * 1_000_000_000
    )
}

fn runs() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for s in schedulers() {
        for cc in ccs() {
            v.push((
                format!("{s}/{cc}"),
                scenario(s, cc, 8, &two_paths(0.002), ""),
            ));
        }
    }
    let lab = two_paths(0.0001);
    let small = format!(
        "[{}, {}]",
        path("wifi", 30_000_000, 10, r#"{"bytes": 30000}"#, 0.0, 0),
        path("lte", 30_000_000, 50, r#"{"packets": 100}"#, 0.0, 0)
    );
    let jittery = format!(
        "[{}, {}]",
        path("wifi", 20_000_000, 10, r#"{"time_ns": 50000000}"#, 0.001, 3),
        path("lte", 10_000_000, 40, r#"{"time_ns": 200000000}"#, 0.001, 8)
    );
    let changing = r#"[{"name": "a", "down": {"rate_bps": 20000000, "delay_ns": 10000000, "loss": 0.0, "queue": {"time_ns": 50000000}},
        "up": {"rate_bps": 20000000, "delay_ns": 10000000, "loss": 0.0, "queue": {"time_ns": 50000000}},
        "schedule": [{"at_ns": 2000000000, "rate_bps": 5000000, "delay_down_ns": 30000000},
                     {"at_ns": 4000000000, "rate_bps": 40000000, "jitter_down_ns": 2000000}]},
        {"name": "b", "down": {"rate_bps": 10000000, "delay_ns": 40000000, "loss": 0.001, "queue": {"time_ns": 100000000}},
        "up": {"rate_bps": 10000000, "delay_ns": 40000000, "loss": 0.0, "queue": {"time_ns": 100000000}}}]"#;
    let extras: &[(&str, &str, &str, &str)] = &[
        ("small-queues/stms-a", "stms-a", &small, ""),
        ("small-queues/default", "default", &small, ""),
        (
            "small-rcvbuf/default",
            "default",
            &lab,
            r#", "rcvbuf_bytes": 262144"#,
        ),
        (
            "out-of-tree/default",
            "default",
            &lab,
            r#", "stack": "out-of-tree", "rcvbuf_bytes": 524288"#,
        ),
        (
            "classic/minrtt",
            "minrtt",
            &two_paths(0.01),
            r#", "loss_recovery": "classic""#,
        ),
        ("jitter/otias", "otias", &jittery, ""),
        ("schedule/blest", "blest", changing, ""),
        (
            "params/stms-a",
            "stms-a",
            &lab,
            r#", "scheduler_params": {"adjust_interval": "30ms", "recovery_jumps": "skip"}"#,
        ),
        (
            "params/bm",
            "bm",
            &lab,
            r#", "scheduler_params": {"lambda": 2, "srtt_min": "connection"}"#,
        ),
        (
            "file/ecf",
            "ecf",
            &lab,
            r#", "workload": {"kind": "file", "size_bytes": 3000000}"#,
        ),
        (
            "rate/rr",
            "rr",
            &lab,
            r#", "workload": {"kind": "rate", "rate_bps": 8000000, "block_bytes": 65536, "warmup_ns": 1000000000}"#,
        ),
        (
            "tcp/cubic",
            "minrtt",
            &lab,
            r#", "protocol": "tcp", "main_paths": 1"#,
        ),
        (
            "flows/default",
            "default",
            &lab,
            r#", "workload": {"kind": "file", "size_bytes": 2000000},
            "flows": [{"start_ns": 100000000, "protocol": "tcp", "scheduler": "minrtt", "congestion": "reno", "paths": [0]},
                      {"start_ns": 300000000, "protocol": "mptcp", "scheduler": "blest", "congestion": "lia", "size_bytes": 500000, "paths": [1, 0]},
                      {"start_ns": 500000000, "protocol": "mptcp", "scheduler": "mptcp-sf", "congestion": "olia", "size_bytes": 90000, "paths": [0, 1]}]"#,
        ),
    ];
    for (name, sched, paths, extra) in extras {
        // serde_json refuses duplicate keys, so the extras replace the base's.
        let mut s = scenario(sched, "cubic", 6, paths, "");
        if !extra.is_empty() {
            s = merge(&s, extra);
        }
        v.push((name.to_string(), s));
    }
    v
}

/// Overrides top-level keys of a JSON object with those of `extra` (", k: v, ...").
fn merge(base: &str, extra: &str) -> String {
    let mut b: serde_json::Map<String, serde_json::Value> = serde_json::from_str(base).unwrap();
    let e: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&format!("{{{}}}", extra.trim_start_matches(','))).unwrap();
    b.extend(e);
    serde_json::to_string(&b).unwrap()
}

fn main() {
    let verbose = std::env::args().any(|a| a == "--verbose");
    let mut all = Fnv::new();
    let runs = runs();
    for (name, json) in &runs {
        let sim = simulation_from_json(json, true, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut h = Fnv::new();
        let mut summary =
            sim.run_streaming(mpsched_core::Dur(100_000_000), 4096, &mut |c| h.chunk(&c));
        summary.wall_s = 0.0;
        let json = summary_json(&summary).unwrap();
        h.bytes(json.as_bytes());
        all.bytes(&h.0.to_le_bytes());
        if verbose {
            println!(
                "{name:24} {:016x} goodput {:.3} Mbit/s",
                h.0, summary.goodput_mbps
            );
        } else {
            println!("{name:24} {:016x}", h.0);
        }
    }
    println!("fingerprint of {} runs: {:016x}", runs.len(), all.0);
}

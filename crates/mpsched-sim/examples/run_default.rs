//! Runs the STMS lab scenario for a number of simulated seconds; for profiling.
//! `cargo run --release -p mpsched-sim --example run_default -- 60`

use mpsched_sim::build::{stms_lab, MS, S};
use mpsched_sim::Simulation;

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(60);
    let reps: u32 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    for _ in 0..reps {
        let out = Simulation::new(stms_lab(100 * MS, secs * S), false)
            .unwrap()
            .run();
        let s = &out.summary;
        println!(
            "goodput {:.2} Mbit/s, events {}, loop {:.4} s, {:.0} sim s per s",
            s.goodput_mbps,
            s.events,
            s.wall_s,
            s.duration_s / s.wall_s
        );
    }
}

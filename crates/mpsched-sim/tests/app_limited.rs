//! A rate-limited application (`Workload::Rate`, paper 001 sec. 4.3): blocks written at a
//! constant rate, each timed from its write to its last byte delivered.

use mpsched_sim::build::*;
use mpsched_sim::config::{Config, Protocol, QueueSpec, Workload};
use mpsched_sim::{Simulation, Summary};

fn run(cfg: Config) -> Summary {
    Simulation::new(cfg, false).unwrap().run().summary
}

#[test]
fn blocks_on_an_idle_path_take_the_one_way_delay_plus_their_serialization() {
    // 1 Mbit/s of 8 KB blocks over 10 Mbit/s, RTT 40 ms: a block every 65.5 ms, sent as six
    // 1,448-byte segments within the window, so each arrives 20 ms + 6 x 1.2 ms after its
    // write. Nothing queues, nothing waits: every block takes the same time.
    let mut c = scenario(
        vec![path("p", 10 * MBPS, 40 * MS, QueueSpec::Packets(100), 0.0)],
        "minrtt",
        20 * S,
    );
    c.protocol = Protocol::Tcp;
    c.workload = Workload::Rate {
        rate_bps: MBPS,
        block_bytes: 8192,
        warmup_ns: 0,
    };
    let s = run(c.clone());
    let d = s.block_delay_ms.as_ref().unwrap();
    let expected = 20.0 + 6.0 * 1500.0 * 8.0 / 10e6 * 1e3;
    assert!((d.max - expected).abs() < 0.05, "max {} ms", d.max);
    assert!((d.p50 - expected).abs() < 0.3, "p50 {} ms", d.p50);
    assert!(s.block_delay_increase.unwrap() < 0.01);
    // 20 s less the handshake, one block per 65.536 ms; each carried as 6 full segments.
    let blocks = s.blocks_delivered.unwrap();
    assert!((300..=305).contains(&blocks), "{blocks} blocks");
    assert_eq!(s.bytes_delivered, blocks * 6 * 1448);
    // A 5-second warm-up leaves the first 77 blocks (5 s / 65.536 ms) untimed.
    c.workload = Workload::Rate {
        rate_bps: MBPS,
        block_bytes: 8192,
        warmup_ns: 5 * S,
    };
    let warm = run(c);
    assert_eq!(warm.blocks_delivered.unwrap(), blocks - 77);
    assert_eq!(warm.bytes_delivered, s.bytes_delivered);
    assert!(warm.block_worst_at_s.unwrap() >= 5.0);
}

#[test]
fn round_robin_delays_blocks_by_the_slow_path_and_lowrtt_does_not() {
    // Paper 001 Figs. 7-8: at an application rate far below the fast path's, LowRTT keeps
    // every block on the 20 ms path; round-robin sends every other segment over 200 ms, so
    // blocks wait for the slow path.
    let run_with = |sched: &str| {
        let mut c = scenario(
            vec![
                path("fast", 10 * MBPS, 20 * MS, QueueSpec::Packets(100), 0.0),
                path("slow", 10 * MBPS, 200 * MS, QueueSpec::Packets(100), 0.0),
            ],
            sched,
            20 * S,
        );
        c.workload = Workload::Rate {
            rate_bps: 500_000,
            block_bytes: 8192,
            warmup_ns: 0,
        };
        run(c)
    };
    let (lowrtt, rr) = (run_with("minrtt"), run_with("rr"));
    let (l, r) = (lowrtt.block_delay_ms.unwrap(), rr.block_delay_ms.unwrap());
    assert!(l.max < 20.0, "LowRTT's worst block {} ms", l.max);
    assert!(r.p50 > 100.0, "round-robin's median block {} ms", r.p50);
    assert!(rr.block_delay_increase.unwrap() > 5.0 * lowrtt.block_delay_increase.unwrap().max(0.1));
}

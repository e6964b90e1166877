//! The schedulers of `registry_a` (redundant, bm, blest, ecf, daps) through the simulator:
//! each one's defining behaviour, and bulk throughput with big buffers.

use mpsched_core::rng::Rng;
use mpsched_core::units::wire::MPTCP_MSS as MSS;
use mpsched_sim::build::*;
use mpsched_sim::config::{Change, Config, JoinName, PathConfig, QueueSpec, Workload};
use mpsched_sim::{RunOutput, Simulation, Summary};

fn run(cfg: Config) -> Summary {
    Simulation::new(cfg, false).unwrap().run().summary
}

fn traced(cfg: Config) -> RunOutput {
    Simulation::new(cfg, true).unwrap().run()
}

/// Payload rate of a link carrying full-sized MPTCP packets: rate x 1424 / 1500.
fn payload_mbps(rate_bps: u64) -> f64 {
    rate_bps as f64 * 1424.0 / 1500.0 / 1e6
}

fn two_paths(
    scheduler: &str,
    (rate_a, rtt_a): (u64, u64),
    (rate_b, rtt_b): (u64, u64),
    queue: QueueSpec,
    secs: u64,
) -> Config {
    scenario(
        vec![
            path("a", rate_a * MBPS, rtt_a * MS, queue, 0.0),
            path("b", rate_b * MBPS, rtt_b * MS, queue, 0.0),
        ],
        scheduler,
        secs * S,
    )
}

#[test]
fn redundant_sends_every_segment_on_each_subflow() {
    // Two equal paths: each data segment of a 2 MiB file goes out once on each subflow.
    let size = 2 * MIB;
    let mut c = two_paths(
        "redundant",
        (30, 20),
        (30, 20),
        QueueSpec::TimeNs(100 * MS),
        20,
    );
    c.workload = Workload::File { size_bytes: size };
    // Both subflows up before the first data (joined at the first SYN-ACK): with Linux's join
    // at the first data the second one misses the first window.
    c.join = JoinName::SynAck;
    let out = traced(c);
    let s = &out.summary;
    assert_eq!(s.bytes_delivered, size);
    for sf in &s.subflows {
        assert_eq!(sf.bytes_sent, size, "{}", sf.name);
    }
    let sent = out.traces.unwrap().sent;
    assert_eq!(sent.transmissions.len() as u64, size.div_ceil(MSS as u64));
    assert!(sent.transmissions.iter().all(|&t| t == 2));

    // Heterogeneous paths, bulk: the 100 ms subflow lags and skips what the Data ACK has
    // covered, yet each subflow carries nearly all the data, and the connection gets one
    // path's worth.
    let s = run(two_paths(
        "redundant",
        (30, 20),
        (30, 100),
        QueueSpec::TimeNs(100 * MS),
        20,
    ));
    for sf in &s.subflows {
        assert!(
            sf.bytes_sent as f64 >= 0.95 * s.bytes_delivered as f64,
            "{}: {} sent, {} delivered",
            sf.name,
            sf.bytes_sent,
            s.bytes_delivered
        );
    }
    assert!(s.goodput_mbps <= payload_mbps(30 * MBPS));
    assert!(s.goodput_mbps >= 0.9 * payload_mbps(30 * MBPS));
}

/// Rows of the ACK trace where a subflow's flight exceeds what BM allows: after the previous
/// ACK on that subflow (srtt, cwnd, in flight), the scheduler may add data only while
/// in_flight < 3 x srtt_min / srtt x cwnd, so by the next ACK the flight is below
/// max(that limit, what was in flight already) + 1. srtt_min: the smallest srtt the trace
/// shows for the subflow (the scheduler also saw the handshake's, so its limit can only be
/// lower).
fn bm_cap_violations(out: &RunOutput) -> (usize, usize) {
    let a = &out.traces.as_ref().unwrap().acks;
    let n = out.summary.subflows.len();
    let mut srtt_min = vec![u64::MAX; n];
    let mut prev: Vec<Option<(u64, u32, u32)>> = vec![None; n];
    let (mut violations, mut checked) = (0, 0);
    for k in 0..a.t_ns.len() {
        let i = a.subflow[k] as usize;
        if let Some((srtt, cwnd, in_flight)) = prev[i] {
            let limit = 3.0 * srtt_min[i] as f64 / srtt as f64 * cwnd as f64;
            checked += 1;
            if a.in_flight_segments[k] as f64 >= limit.max(in_flight as f64) + 1.0 {
                violations += 1;
            }
        }
        srtt_min[i] = srtt_min[i].min(a.srtt_ns[k]);
        prev[i] = Some((a.srtt_ns[k], a.cwnd_segments[k], a.in_flight_segments[k]));
    }
    (violations, checked)
}

#[test]
fn bm_keeps_the_flight_under_its_cap() {
    // One-second router buffers: CUBIC fills them and the RTTs grow far beyond 3 x their
    // base, where the cap (paper 001 sec. 3.4, lambda = 3) binds.
    let cfg = |sched| two_paths(sched, (30, 20), (30, 100), QueueSpec::TimeNs(1000 * MS), 20);
    let bm = traced(cfg("bm"));
    let (violations, checked) = bm_cap_violations(&bm);
    assert!(checked > 40_000, "{checked}");
    assert_eq!(violations, 0);
    // LowRTT in the same scenario goes far beyond it: the check can fail.
    let minrtt = traced(cfg("minrtt"));
    let (violations, _) = bm_cap_violations(&minrtt);
    assert!(violations > 1000, "minrtt: {violations}");
    // The cap holds the fast path's RTT near 3 x its base, without losing throughput.
    let (b, m) = (&bm.summary, &minrtt.summary);
    assert!(b.subflows[0].srtt_ms < 3.5 * b.subflows[0].min_rtt_ms);
    assert!(m.subflows[0].srtt_ms > 5.0 * m.subflows[0].min_rtt_ms);
    assert!(b.goodput_mbps >= 0.9 * 2.0 * payload_mbps(30 * MBPS));
}

#[test]
fn ecf_and_blest_leave_the_slow_subflow_idle_for_a_short_file() {
    // A 64 KB file over a 200 ms and a 20 ms path, 30 Mbit/s each, big buffers. The 200 ms
    // path carries the first subflow, and the second joins at its SYN-ACK, so both are up when
    // the transfer starts (joining at the first data, as Linux does, the file would start on
    // the slow path alone).
    let cfg = |sched: &str| {
        let mut c = two_paths(sched, (30, 200), (30, 20), QueueSpec::TimeNs(500 * MS), 10);
        c.workload = Workload::File {
            size_bytes: 64 * 1024,
        };
        c.join = JoinName::SynAck;
        c
    };
    let minrtt = run(cfg("minrtt"));
    assert!(minrtt.subflows[0].bytes_sent >= 10 * MSS as u64);
    for sched in ["ecf", "blest"] {
        let s = run(cfg(sched));
        assert_eq!(s.bytes_delivered, 64 * 1024);
        assert_eq!(s.subflows[0].bytes_sent, 0, "{sched}");
        // Waiting for the fast path finishes the file sooner than LowRTT.
        assert!(
            s.completion_s.unwrap() < minrtt.completion_s.unwrap(),
            "{sched}: {:?} vs minrtt {:?}",
            s.completion_s,
            minrtt.completion_s
        );
    }
}

#[test]
fn blest_avoids_blocking_a_small_receive_window_and_adapts_lambda() {
    // The STMS lab set-up with a 200 ms LTE path and a 500 kB receive buffer (paper 000,
    // sec. 2): LowRTT fills the window with LTE segments that hold up the WiFi path.
    let cfg = |sched: &str| {
        let mut c = stms_lab(200 * MS, 60 * S);
        c.scheduler = sched.into();
        c.rcvbuf_bytes = 500_000;
        c
    };
    let minrtt = run(cfg("minrtt"));
    let out = traced(cfg("blest"));
    let blest = &out.summary;
    assert!(blest.goodput_mbps > 1.3 * minrtt.goodput_mbps);
    assert!(blest.ooo_delay_ms.mean < 0.2 * minrtt.ooo_delay_ms.mean);
    // lambda moves both ways, by the kernel's steps, within [1.0, 1.3].
    let lambda: Vec<f64> = out
        .traces
        .unwrap()
        .scheduler
        .iter()
        .filter(|x| x.key == "blest_lambda")
        .map(|x| x.value)
        .collect();
    assert!(lambda.iter().all(|l| (1.0..=1.3).contains(l)));
    let steps: Vec<f64> = lambda.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(steps.iter().any(|d| (d - 0.04).abs() < 1e-9), "{lambda:?}");
    assert!(steps.iter().any(|d| (d + 0.01).abs() < 1e-9), "{lambda:?}");
}

/// `blestsched_update_lambda` (mptcp_blest.c) without a retransmission: the send window
/// never blocks (64 MiB buffers both ends), so BLEST never falls back to the opportunistic
/// retransmission that flags one, and lambda only falls, by 0.01 at most once per smallest
/// srtt of the slow subflow (200 ms), from 1.2 to its floor of 1.0, where it stays.
#[test]
fn blest_lambda_only_falls_while_nothing_is_retransmitted() {
    let mut c = stms_lab(200 * MS, 30 * S);
    c.scheduler = "blest".into();
    c.rcvbuf_bytes = 64 * MIB;
    c.sndbuf_bytes = 64 * MIB;
    c.sndbuf_autotune = false;
    let out = traced(c);
    let s = &out.summary;
    assert_eq!((s.opportunistic_retransmits, s.penalizations), (0, 0));
    // The slow subflow is used, so BLEST judged it again and again.
    assert!(s.subflows[1].share > 0.2, "{}", s.subflows[1].share);
    let lambda: Vec<(u64, f64)> = out
        .traces
        .unwrap()
        .scheduler
        .iter()
        .filter(|x| x.key == "blest_lambda")
        .map(|x| (x.t.as_nanos(), x.value))
        .collect();
    let values: Vec<f64> = lambda.iter().map(|&(_, l)| l).collect();
    let expected: Vec<f64> = (0..20).map(|k| f64::from(119 - k) / 100.0).collect();
    assert_eq!(values.len(), expected.len(), "{values:?}");
    for (l, e) in values.iter().zip(&expected) {
        assert!((l - e).abs() < 1e-9, "{values:?}");
    }
    assert!(
        lambda.windows(2).all(|w| w[1].0 - w[0].0 >= 200 * MS),
        "{lambda:?}"
    );
}

#[test]
fn daps_delivers_nearly_in_order() {
    // Constant, very different paths: 50 Mbit/s at 20 ms and 5 Mbit/s at 200 ms. LowRTT
    // sends the next segment on the 200 ms path whenever it has room, and what the fast path
    // delivers meanwhile waits for it; DAPS gives the slow path segments far enough ahead.
    // The mean out-of-order delay is no measure here: every drop of the 50 ms queues stalls
    // delivery for a recovery whatever the scheduler. What DAPS changes is how many segments
    // arrive in order.
    //
    // DAPS plans over data already written, so its writer is the papers' one (ns-3's bulk
    // sender): it fills the send buffer. A `select` writer of 256 KiB chunks (the testbed's,
    // the default) keeps less unsent data, and DAPS then reaches the slow path less.
    let cfg = |sched| Config {
        write_chunk_bytes: None,
        ..two_paths(sched, (50, 20), (5, 200), QueueSpec::TimeNs(50 * MS), 30)
    };
    let minrtt = traced(cfg("minrtt"));
    let daps = traced(cfg("daps"));
    let chunked = run(Config {
        write_chunk_bytes: Some(256 * 1024),
        ..cfg("daps")
    });
    let slow = |s: &Summary| s.subflows[1].bytes_sent;
    let in_order_share = |out: &RunOutput| {
        let d = &out.traces.as_ref().unwrap().delivery;
        let n = d.delivered_ns.len();
        let in_order = (0..n)
            .filter(|&i| d.delivered_ns[i] == d.first_received_ns[i])
            .count();
        in_order as f64 / n as f64
    };
    assert!(
        2 * slow(&chunked) < slow(&daps.summary),
        "slow path: 256 KiB writer {} vs filling writer {}",
        slow(&chunked),
        slow(&daps.summary)
    );
    let (d, m) = (&daps.summary.ooo_delay_ms, &minrtt.summary.ooo_delay_ms);
    assert!(
        d.p50 < 1.0 && m.p50 > 20.0,
        "p50: daps {} minrtt {}",
        d.p50,
        m.p50
    );
    let (ds, ms) = (in_order_share(&daps), in_order_share(&minrtt));
    assert!(
        ds > 0.5 && ds >= 2.0 * ms,
        "in order: daps {ds:.2} minrtt {ms:.2}"
    );
    assert!(daps.summary.subflows[1].bytes_sent > 1_000_000);
    assert!(daps.summary.goodput_mbps >= 0.8 * minrtt.summary.goodput_mbps);
}

#[test]
fn bulk_transfers_aggregate_both_paths_with_big_buffers() {
    // The STMS lab set-up with a 100 ms LTE path, 6 MiB host buffers and deep (500 ms) router
    // buffers on both paths: every scheduler but redundant gets 90 % of the two paths
    // together. (DAPS comes closest to the limit: it schedules the slow path far ahead, so it
    // needs the most window, and Linux advertises 3.88 MB of a 6 MiB buffer.)
    let sum = 2.0 * payload_mbps(30 * MBPS);
    for sched in ["bm", "blest", "ecf", "daps"] {
        let mut c = stms_lab(100 * MS, 60 * S);
        c.paths[0].down.queue = QueueSpec::TimeNs(500 * MS);
        c.scheduler = sched.into();
        let s = run(c);
        assert!(
            s.goodput_mbps >= 0.9 * sum,
            "{sched}: {:.2} < 0.9 x {sum:.2}",
            s.goodput_mbps
        );
    }
    let mut c = stms_lab(100 * MS, 60 * S);
    c.scheduler = "redundant".into();
    let s = run(c);
    assert!(s.goodput_mbps <= payload_mbps(30 * MBPS));
}

/// Random paths, losses, buffers and path changes; a random file.
fn random_scenario(scheduler: &str, case: u64) -> Config {
    let mut r = Rng::new(0xA5A5, case);
    let log_uniform =
        |r: &mut Rng, lo: f64, hi: f64| (lo.ln() + r.next_f64() * (hi / lo).ln()).exp();
    let n = 1 + r.below(3) as usize;
    let paths = (0..n)
        .map(|i| {
            let rate = log_uniform(&mut r, 1e6, 2e8) as u64;
            let rtt = log_uniform(&mut r, 2e6, 5e8) as u64;
            let loss = if r.chance(0.5) {
                0.0
            } else {
                r.next_f64() * 0.03
            };
            let queue = QueueSpec::TimeNs(log_uniform(&mut r, 1e6, 1e9) as u64);
            let link = |loss| link(rate, rtt / 2, queue, loss);
            PathConfig {
                name: format!("p{i}"),
                down: link(loss),
                up: link(0.0),
                schedule: if r.chance(0.3) {
                    vec![Change {
                        at_ns: r.below(3 * S),
                        rate_bps: Some(log_uniform(&mut r, 1e6, 2e8) as u64),
                        delay_down_ns: Some(log_uniform(&mut r, 1e6, 2.5e8) as u64),
                        delay_up_ns: None,
                        jitter_down_ns: None,
                        jitter_up_ns: None,
                        up: None,
                        present: None,
                    }]
                } else {
                    vec![]
                },
                backup: false,
                via: Vec::new(),
            }
        })
        .collect();
    let mut c = scenario(paths, scheduler, 3600 * S);
    c.seed = case;
    let ccs = mpsched_core::cc::CONGESTION_CONTROLS;
    c.congestion = ccs[r.below(ccs.len() as u64) as usize].name.into();
    c.sndbuf_bytes = log_uniform(&mut r, 4.0 * MSS as f64, 8.0 * MIB as f64) as u64;
    c.rcvbuf_bytes = log_uniform(&mut r, 4.0 * MSS as f64, 8.0 * MIB as f64) as u64;
    c.workload = Workload::File {
        size_bytes: 1 + r.below(1_500_000),
    };
    c
}

#[test]
fn random_scenarios_deliver_every_byte() {
    // The schedulers never make a decision the connection refuses (that is a debug
    // assertion in the core) and every file arrives, whatever the paths do.
    for sched in ["redundant", "bm", "blest", "ecf", "daps"] {
        for case in 0..40 {
            let cfg = random_scenario(sched, case);
            let Workload::File { size_bytes } = cfg.workload else {
                unreachable!()
            };
            let desc = format!("{sched} case {case}");
            let s = run(cfg);
            assert!(s.completion_s.is_some(), "{desc}: did not complete");
            assert_eq!(s.bytes_delivered, size_bytes, "{desc}");
        }
    }
}

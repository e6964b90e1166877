//! Acceptance tests of the foundation: the model against closed forms and the STMS paper.

use mpsched_sim::build::*;
use mpsched_sim::config::{Config, Protocol, QueueSpec, Workload};
use mpsched_sim::{Simulation, Summary};

fn run(cfg: Config) -> Summary {
    Simulation::new(cfg, false).unwrap().run().summary
}

fn tcp(rate_bps: u64, rtt_ns: u64, queue: QueueSpec, loss: f64, cc: &str, secs: u64) -> Config {
    let mut c = scenario(
        vec![path("p", rate_bps, rtt_ns, queue, loss)],
        "minrtt",
        secs * S,
    );
    c.protocol = Protocol::Tcp;
    c.congestion = cc.into();
    c
}

/// Payload rate of a link carrying full-sized TCP packets: rate x 1448 / 1500.
fn payload_mbps(rate_bps: u64) -> f64 {
    rate_bps as f64 * 1448.0 / 1500.0 / 1e6
}

/// The same for MPTCP, whose DSS option leaves 1424 bytes of payload.
fn mptcp_payload_mbps(rate_bps: u64) -> f64 {
    rate_bps as f64 * 1424.0 / 1500.0 / 1e6
}

#[test]
fn losses_on_a_path_without_buffering_are_repaired_without_timeouts() {
    // 11.4 Mbit/s, RTT 96 ms, 1.45 ms of queue (one packet): every window beyond the pipe
    // loses its tail. RACK and tail loss probes repair that as Linux does; this machine's
    // kernel, through `mpsched emulate` over the same path for 20 s, had 83 retransmissions,
    // 33 fast recoveries, no RTO and 0.081 Mbit/s of goodput: the queue holds the packet in
    // service and no second, so one of every two back-to-back packets is dropped and the
    // window stays at 2 (the model: 116, 97, 0 and 0.118 Mbit/s). With loss detection by
    // DupThresh alone and no probes the model had 31 RTOs in these 20 s.
    let s = run(tcp(
        11_425_800,
        96_380_000,
        QueueSpec::TimeNs(1_454_160),
        0.0,
        "cubic",
        20,
    ));
    let sf = &s.subflows[0];
    assert!(sf.retransmits >= 50, "{}", sf.retransmits);
    assert!(sf.fast_recoveries >= 20, "{}", sf.fast_recoveries);
    assert!(sf.rtos <= 1, "{} RTOs", sf.rtos);
    assert!(s.goodput_mbps < 0.25, "goodput {} Mbit/s", s.goodput_mbps);
}

#[test]
fn tcp_fills_a_link_with_a_one_bdp_buffer() {
    // 30 Mbit/s x 40 ms = 150 kB.
    let s = run(tcp(
        30 * MBPS,
        40 * MS,
        QueueSpec::Bytes(150_000),
        0.0,
        "cubic",
        30,
    ));
    let want = 0.93 * payload_mbps(30 * MBPS);
    assert!(
        s.goodput_mbps >= want,
        "goodput {} < {want}",
        s.goodput_mbps
    );
    // and never above the payload rate
    assert!(s.goodput_mbps <= payload_mbps(30 * MBPS));
}

/// Reno's goodput over a 50 ms path with random loss `p` is within 40% of Mathis et al.
/// (1997): MSS / RTT x sqrt(3/2) / sqrt(p).
fn assert_mathis(s: &Summary, p: f64) {
    let mathis = 1448.0 * 8.0 / 0.050 * (1.5f64).sqrt() / p.sqrt() / 1e6;
    let ratio = s.goodput_mbps / mathis;
    assert!(
        (0.6..=1.4).contains(&ratio),
        "p={p}: goodput {:.2} vs Mathis {mathis:.2} (ratio {ratio:.2})",
        s.goodput_mbps
    );
}

#[test]
fn reno_follows_the_mathis_law_under_random_loss() {
    // Mathis et al. 1997: rate = MSS / RTT x sqrt(3/2) / sqrt(p). A 1 Gbit/s path keeps the
    // queue empty so that the RTT is the propagation RTT.
    let rtt = 50 * MS;
    for p in [0.001, 0.0004] {
        let mut c = tcp(1000 * MBPS, rtt, QueueSpec::Bytes(64 * MIB), p, "reno", 300);
        c.seed = 7;
        assert_mathis(&run(c), p);
    }
}

#[test]
fn a_receive_window_below_the_bdp_limits_tcp_to_its_window_per_rtt() {
    // 100 Mbit/s x 100 ms = 1.25 MB; rcvbuf 256 KiB. Linux advertises
    // win_from_space(rcvbuf) = rcvbuf x 160/256 (1,448 bytes of payload per 2,304 bytes of
    // buffer); with window_ratio = 1 the whole buffer is window.
    for (ratio, share) in [(None, 160.0 / 256.0), (Some(1.0), 1.0)] {
        let mut c = tcp(
            100 * MBPS,
            100 * MS,
            QueueSpec::Bytes(4 * MIB),
            0.0,
            "cubic",
            30,
        );
        c.rcvbuf_bytes = 256 * 1024;
        c.window_ratio = ratio;
        let s = run(c);
        let want = share * 256.0 * 1024.0 * 8.0 / 0.100 / 1e6;
        let r = s.goodput_mbps / want;
        assert!(
            (0.9..=1.1).contains(&r),
            "{:?}: {} vs {want}",
            ratio,
            s.goodput_mbps
        );
    }
}

fn two_paths(fast_rtt: u64, slow_rtt: u64, scheduler: &str, rcvbuf: u64) -> Config {
    let mut c = scenario(
        vec![
            path(
                "fast",
                30 * MBPS,
                fast_rtt,
                QueueSpec::TimeNs(100 * MS),
                0.0,
            ),
            path(
                "slow",
                30 * MBPS,
                slow_rtt,
                QueueSpec::TimeNs(100 * MS),
                0.0,
            ),
        ],
        scheduler,
        60 * S,
    );
    c.rcvbuf_bytes = rcvbuf;
    c
}

#[test]
fn minrtt_aggregates_two_heterogeneous_paths_with_big_buffers() {
    let s = run(two_paths(20 * MS, 200 * MS, "minrtt", 6 * MIB));
    let sum = 2.0 * mptcp_payload_mbps(30 * MBPS);
    assert!(
        s.goodput_mbps >= 0.9 * sum,
        "{} < 0.9 x {sum}",
        s.goodput_mbps
    );
}

#[test]
fn a_small_receive_buffer_starves_minrtt_and_default_recovers_part() {
    // The STMS lab set-up with RTT_s = 200 ms. Eq. (1): Buf(default) = (Bf + Bs) x RTTs
    // = 60 Mbit/s x 200 ms = 1.5 MB (more as the LTE queue fills) >> 500 kB.
    let cfg = |scheduler: &str| {
        let mut c = stms_lab(200 * MS, 60 * S);
        c.scheduler = scheduler.into();
        c.rcvbuf_bytes = 500_000;
        c
    };
    let minrtt = run(cfg("minrtt"));
    let default = run(cfg("default"));
    let sum = 2.0 * mptcp_payload_mbps(30 * MBPS);
    assert!(
        minrtt.goodput_mbps < 0.6 * sum,
        "minrtt {} not well below {sum}",
        minrtt.goodput_mbps
    );
    assert!(
        default.goodput_mbps > 1.2 * minrtt.goodput_mbps,
        "default {} vs minrtt {}",
        default.goodput_mbps,
        minrtt.goodput_mbps
    );
    assert!(default.opportunistic_retransmits > 0);
    assert!(default.penalizations > 0);
    assert_eq!(minrtt.opportunistic_retransmits + minrtt.penalizations, 0);
}

#[test]
fn heterogeneous_rtts_make_the_data_ack_jump_and_the_fast_subflow_burst() {
    // STMS sec. 2.2, Figs. 5 and 6. A 1.5 MB receive window holds the equal-RTT connection's
    // window (60 Mbit/s x 70 ms = 525 kB) but not the 20/200 ms one's (eq. 1: 1.9 MB), so
    // there the Data ACK stalls behind the slow path and then jumps, and the fast subflow
    // finds its window empty when it does. (The buffer that advertises 1.5 MB: Linux's
    // window is 158/256 of it.)
    let cfg = |slow_rtt| {
        let mut c = scenario(
            vec![
                path("fast", 30 * MBPS, 20 * MS, QueueSpec::TimeNs(50 * MS), 0.0),
                path("slow", 30 * MBPS, slow_rtt, QueueSpec::TimeNs(50 * MS), 0.0),
            ],
            "minrtt",
            60 * S,
        );
        c.rcvbuf_bytes = 1_500_000 * 256 / 158;
        c
    };
    let het = run(cfg(200 * MS));
    let same = run(cfg(20 * MS));
    assert!(
        het.data_ack_step_segments.max >= 20.0,
        "largest Data ACK step {}",
        het.data_ack_step_segments.max
    );
    let (h, s) = (&het.subflows[0], &same.subflows[0]);
    assert!(
        h.p99_free_cwnd_at_ack >= 5 * s.p99_free_cwnd_at_ack.max(2),
        "fast subflow p99 free cwnd at ACK: {} (20/200 ms) vs {} (20/20 ms)",
        h.p99_free_cwnd_at_ack,
        s.p99_free_cwnd_at_ack
    );
    assert!(h.peak_free_cwnd_at_ack >= 10 * s.peak_free_cwnd_at_ack.max(4));
}

#[test]
fn same_seed_same_result_other_seed_other_result() {
    let mut c = stms_lab(100 * MS, 10 * S);
    c.seed = 3;
    let mut a = run(c.clone());
    let mut b = run(c.clone());
    a.wall_s = 0.0;
    b.wall_s = 0.0;
    let ja = serde_json::to_string(&a).unwrap();
    assert_eq!(ja, serde_json::to_string(&b).unwrap());
    c.seed = 4;
    let mut d = run(c);
    d.wall_s = 0.0;
    assert_ne!(ja, serde_json::to_string(&d).unwrap());
}

#[test]
fn a_file_completes_and_reports_its_completion_time() {
    let mut c = stms_lab(100 * MS, 60 * S);
    c.workload = Workload::File {
        size_bytes: 10_000_000,
    };
    let s = run(c);
    assert_eq!(s.bytes_delivered, 10_000_000);
    let t = s.completion_s.expect("completed");
    // At most the aggregate rate, and well under the duration.
    assert!(t > 10e6 * 8.0 / (2.0 * mptcp_payload_mbps(30 * MBPS) * 1e6));
    assert!(t < 10.0, "{t}");
    assert_eq!(s.duration_s, t);
}

#[test]
fn classic_loss_recovery_follows_the_mathis_law_in_a_bulk_transfer() {
    // Without RACK and tail loss probes a bulk transfer still finds nearly every loss by
    // three duplicate ACKs: the segments sent after a loss keep the SACKs coming. So Reno
    // follows Mathis et al. as with Linux's recovery. (What classic recovery changes is the
    // tail of a short flow, with nothing sent after the loss: tests/flows.rs.)
    for p in [0.001, 0.02] {
        let mut c = tcp(
            1000 * MBPS,
            50 * MS,
            QueueSpec::Bytes(64 * MIB),
            p,
            "reno",
            300,
        );
        c.seed = 7;
        c.loss_recovery = mpsched_sim::config::RecoveryName::Classic;
        assert_mathis(&run(c), p);
    }
}

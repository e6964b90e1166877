//! Acceptance tests of otias, stms-c, stms-a, mptcp-sf and linux through the simulator: what
//! their papers claim, against what the model does. Where the model does not reproduce a
//! claim, the test checks what it does show and says why in a comment.
//!
//! Rates: a 30 Mbit/s link carries 30e6 / 8 / 1500 = 2500 full-sized packets per second, i.e.
//! 2500 data segments (1424 payload bytes for MPTCP) per second, 28.48 Mbit/s of payload.

use mpsched_sim::build::*;
use mpsched_sim::config::{Config, JoinName, Protocol, QueueSpec, StackName, Workload};
use mpsched_sim::{RunOutput, Simulation, Summary};

fn run(cfg: Config) -> Summary {
    Simulation::new(cfg, false).unwrap().run().summary
}

fn run_traced(cfg: Config) -> RunOutput {
    Simulation::new(cfg, true).unwrap().run()
}

fn with(mut cfg: Config, scheduler: &str) -> Config {
    cfg.scheduler = scheduler.into();
    cfg
}

/// Payload rate of a link carrying full-sized MPTCP packets: rate x 1424 / 1500.
fn payload_mbps(rate_bps: u64) -> f64 {
    rate_bps as f64 * 1424.0 / 1500.0 / 1e6
}

/// Segments per second of a 30 Mbit/s link.
const SEGS_PER_SEC: f64 = 30e6 / 8.0 / 1500.0;

/// Two 30 Mbit/s paths without random loss, RTT 20 ms and `slow_rtt` ms, the given buffers;
/// the application writes 128 KiB blocks, as iperf3 in the STMS paper's lab (sec. 2.1).
fn constant(slow_rtt: u64, fast_q_ms: u64, slow_q_ms: u64, scheduler: &str, secs: u64) -> Config {
    let paths = vec![
        path(
            "fast",
            30 * MBPS,
            20 * MS,
            QueueSpec::TimeNs(fast_q_ms * MS),
            0.0,
        ),
        path(
            "slow",
            30 * MBPS,
            slow_rtt * MS,
            QueueSpec::TimeNs(slow_q_ms * MS),
            0.0,
        ),
    ];
    Config {
        write_chunk_bytes: Some(128 * 1024),
        ..scenario(paths, scheduler, secs * S)
    }
}

// ----- 1. in-order delivery -----

/// Constant paths, no random loss, each path's buffer one bandwidth-delay product (deep enough
/// for a single TCP to fill its link): the out-of-order schedulers deliver most segments the
/// moment they arrive, where minrtt holds the fast subflow's segments for about the one-way
/// delay difference.
///
/// Not "near zero" on the mean, as the papers show (OTIAS Fig. 5, STMS Fig. 10): CUBIC fills
/// any finite buffer, and each overflow loss stalls the stream for a round trip of the lossy
/// subflow, during which everything that arrives on the other one waits. Those stalls are
/// counted (the model measures from a segment's arrival at the receiver, loss recovery
/// included) and weigh on the mean whatever the scheduler; the median shows the in-order
/// delivery, and the mean reorder queue is OTIAS Fig. 5's own measure.
///
/// How close to zero the median gets depends on how well a scheduler knows the slow path's
/// delay, which grows and drains by tens of milliseconds over each CUBIC cycle. STMS-A measures
/// the gap from what arrives (Algorithm 2): medians of 0.4 ms at 20/100 and 0.8 ms at 20/200.
/// OTIAS predicts arrival from srtt (eq. 3): 1.2 ms at both. STMS-C predicts it from the mean
/// rates (eq. 2) and lags most at 20/100: 14 and 1.9 ms (minrtt: 76 and 98 ms; 60 s).
#[test]
fn out_of_order_schedulers_deliver_in_data_order_on_constant_paths() {
    for slow in [100, 200] {
        let cfg = |s: &str| constant(slow, 20, slow, s, 60);
        let base = run(cfg("minrtt"));
        for s in ["otias", "stms-c", "stms-a"] {
            let r = run(cfg(s));
            println!(
                "20/{slow} ms {s}: OOO mean {:.1} ms, median {:.2} ms, reorder queue {:.0} KB \
                 (minrtt {:.1}, {:.2}, {:.0}); goodput {:.2} (minrtt {:.2})",
                r.ooo_delay_ms.mean,
                r.ooo_delay_ms.p50,
                r.mean_reorder_bytes / 1e3,
                base.ooo_delay_ms.mean,
                base.ooo_delay_ms.p50,
                base.mean_reorder_bytes / 1e3,
                r.goodput_mbps,
                base.goodput_mbps
            );
            // Measured at most 0.36 of minrtt's mean (STMS-A, 20/200), 0.32 of its queue.
            assert!(
                r.ooo_delay_ms.mean <= 0.67 * base.ooo_delay_ms.mean,
                "20/{slow} {s}: mean OOO {:.1} vs minrtt {:.1}",
                r.ooo_delay_ms.mean,
                base.ooo_delay_ms.mean
            );
            assert!(
                r.mean_reorder_bytes <= 0.67 * base.mean_reorder_bytes,
                "20/{slow} {s}: reorder queue {:.0} vs minrtt {:.0}",
                r.mean_reorder_bytes,
                base.mean_reorder_bytes
            );
            let bound = match s {
                "stms-a" => 2.0,
                "otias" => base.ooo_delay_ms.p50 / 4.0,
                _ => base.ooo_delay_ms.p50 / 2.0,
            };
            assert!(
                r.ooo_delay_ms.p50 <= bound,
                "20/{slow} {s}: median OOO {:.2} vs minrtt {:.2}",
                r.ooo_delay_ms.p50,
                base.ooo_delay_ms.p50
            );
            assert!(r.goodput_mbps >= 0.97 * base.goodput_mbps);
        }
    }
}

// ----- 2. MPTCP-SF flow classes -----

#[test]
fn mptcp_sf_sends_a_short_file_on_one_subflow_and_a_long_one_on_all() {
    let file = |scheduler: &str, size_bytes: u64| {
        let mut c = scenario(
            vec![
                path("a", 30 * MBPS, 20 * MS, QueueSpec::TimeNs(50 * MS), 0.0),
                path("b", 30 * MBPS, 25 * MS, QueueSpec::TimeNs(50 * MS), 0.0),
                path("c", 30 * MBPS, 100 * MS, QueueSpec::TimeNs(50 * MS), 0.0),
            ],
            scheduler,
            20 * S,
        );
        c.workload = Workload::File { size_bytes };
        // Paper 004's ns-3 hosts open every subflow at the connection's establishment.
        c.join = JoinName::SynAck;
        let s = run(c);
        assert!(
            s.completion_s.is_some(),
            "{scheduler} {size_bytes}: not done"
        );
        s.subflows
            .iter()
            .map(|sf| sf.packets_sent)
            .collect::<Vec<_>>()
    };
    // 50 KB (class S1): the fastest subflow only. Default also uses the 25 ms subflow, which
    // joins while the first one's window is full.
    let sf = file("mptcp-sf", 50_000);
    assert!(sf[0] > 0 && sf[1] == 0 && sf[2] == 0, "{sf:?}");
    let d = file("default", 50_000);
    assert!(d.iter().filter(|&&p| p > 0).count() >= 2, "{d:?}");
    // 10 MB (S3 after 400 KB): every subflow carries some of it, the 100 ms one too (it is
    // left out of H1 in S2: 100 / 20 > lambda = 4).
    let sf = file("mptcp-sf", 10_000_000);
    let total: u64 = sf.iter().sum();
    println!("10 MB: packets per subflow {sf:?}");
    assert!(
        sf.iter().all(|&p| p as f64 >= 0.01 * total as f64),
        "{sf:?}"
    );
}

// ----- 3. the STMS gap -----

/// (true gap, time-weighted mean of the recorded gap, time-weighted median) over
/// [from_s, end). The true gap is eq. 2 with what the run measured: B_f the segments per second
/// delivered over the fast subflow, OWD the mean of (first arrival - first send) of the
/// segments each subflow carried once.
fn gap_against_truth(cfg: Config, from_s: f64) -> (f64, f64, f64) {
    let end = cfg.duration_ns as f64 / 1e9;
    let tr = run_traced(cfg).traces.unwrap();
    let (d, sent) = (&tr.delivery, &tr.sent);
    let lo = (from_s * 1e9) as u64;
    let (mut owd, mut n, mut fast_segs) = ([0.0f64; 2], [0u64; 2], 0u64);
    for i in 0..d.delivered_ns.len().min(sent.first_sent_ns.len()) {
        let arrival = d.first_received_ns[i];
        if arrival < lo {
            continue;
        }
        let sf = d.subflow[i] as usize;
        fast_segs += u64::from(sf == 0);
        if sent.transmissions[i] == 1 {
            owd[sf] += (arrival - sent.first_sent_ns[i]) as f64 / 1e9;
            n[sf] += 1;
        }
    }
    let b_f = fast_segs as f64 / (end - from_s);
    let truth = b_f * (owd[1] / n[1] as f64 - owd[0] / n[0] as f64);
    // The gap is recorded when it changes: each value holds until the next.
    let g: Vec<(f64, f64)> = tr
        .scheduler
        .iter()
        .filter(|x| x.key == "gap")
        .map(|x| (x.t.as_secs_f64(), x.value))
        .collect();
    let mut held: Vec<(f64, f64)> = vec![];
    for (k, &(t, v)) in g.iter().enumerate() {
        let until = g.get(k + 1).map_or(end, |x| x.0);
        if until > from_s {
            held.push((v, until - t.max(from_s)));
        }
    }
    let total: f64 = held.iter().map(|x| x.1).sum();
    let mean = held.iter().map(|x| x.0 * x.1).sum::<f64>() / total;
    held.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut acc = 0.0;
    let median = held
        .iter()
        .find(|x| {
            acc += x.1;
            acc >= total / 2.0
        })
        .unwrap()
        .0;
    (truth, mean, median)
}

/// Constant 30 Mbit/s paths, 20/100 and 20/200 ms. Eq. 2 with OWD = srtt / 2 assumes the
/// one-way delays are half the RTTs; queueing happens on the data direction only, so the
/// buffers are kept shallow (5 ms) for that assumption to hold and the test to check the
/// schedulers rather than the assumption. The true gap is then close to the nominal
/// 2500 segments/s x (50 - 10) ms = 100 and x (100 - 10) ms = 225.
///
/// The send buffer is fixed at 6 MiB (as after SO_SNDBUF): autotuned, it is twice the windows
/// in use, and with a 5 ms buffer on the fast path the slow subflow's segment `gap` places
/// ahead is then never written, so STMS never uses it (sec. 4: "skip this round").
///
/// STMS-C's gap (time-weighted mean) is within 15% of it, and so is STMS-A's once it skips the
/// Data ACK jumps that end a loss recovery (`recovery_jumps = "skip"`, time-weighted mean
/// from 10 s on). Algorithm 2 as written counts those jumps: the jump that ends a recovery on
/// the slow subflow (CUBIC overflows even a shallow buffer every few seconds) widens the gap
/// by a large step, which decays over seconds. Its converged gap (time-weighted median) is
/// within 15% at 20/100 ms and about 27% high at 20/200 ms: the receiver, as Linux's, sends no
/// ACK of its own when a segment fills a connection-level hole (the Data ACK rides on the next
/// regular ACK, as `mpsched emulate --trace-headers` shows this machine's kernel doing), so
/// the jumps Algorithm 2 sees are larger than with an ACK at every hole (then 5% high), and
/// RACK starts each recovery sooner than DupThresh did (22% high with DupThresh). The bound
/// below says how far the paper's Algorithm 2 is off here; the skip variant is the one within
/// 15%. The same holds at 250 Hz (the default `timer_hz`). Before the receiver compressed its
/// SACKs as Linux does (4.18+), Algorithm 2 at 250 Hz and 20/200 ms settled 2.7x above the
/// true gap (576 against 215 segments), its error growing with the length of the recoveries
/// on coarse ticks; with the compression alone it settles at 218.
#[test]
fn the_stms_gaps_match_the_true_gap_on_constant_paths() {
    for (hz, slow) in [(1000, 100), (1000, 200), (250, 100), (250, 200)] {
        // B_f x (OWD_s - OWD_f) with the propagation delays.
        let nominal = SEGS_PER_SEC * (slow as f64 / 2.0 - 10.0) / 1e3;
        let cfg = |s: &str| {
            let mut c = constant(slow, 5, 5, s, 40);
            c.sndbuf_autotune = false;
            c.timer_hz = hz;
            c
        };
        let (truth, c_mean, _) = gap_against_truth(cfg("stms-c"), 10.0);
        let (truth_a, a_mean, a_median) = gap_against_truth(cfg("stms-a"), 10.0);
        let mut skip = cfg("stms-a");
        skip.scheduler_params
            .insert("recovery_jumps".into(), serde_json::json!("skip"));
        let (truth_s, s_mean, _) = gap_against_truth(skip, 10.0);
        println!(
            "{hz} Hz, 20/{slow} ms: true gap {truth:.1} (nominal {nominal}); stms-c mean \
             {c_mean:.1}; stms-a (true {truth_a:.1}) median {a_median:.1}, mean {a_mean:.1}; \
             stms-a skip (true {truth_s:.1}) mean {s_mean:.1}"
        );
        assert!((truth / nominal - 1.0).abs() <= 0.1, "{truth} vs {nominal}");
        let within = |x: f64, t: f64, tol: f64| (x / t - 1.0).abs() <= tol;
        assert!(within(c_mean, truth, 0.15), "stms-c {c_mean} vs {truth}");
        assert!(
            within(s_mean, truth_s, 0.15),
            "stms-a skip {s_mean} vs {truth_s}"
        );
        let tol = if slow == 100 { 0.15 } else { 0.35 };
        assert!(
            within(a_median, truth_a, tol),
            "stms-a {a_median} vs {truth_a}"
        );
        // The gap is real: far from 0 and from minrtt's behaviour.
        assert!(c_mean > 0.5 * nominal && a_median > 0.5 * nominal);
    }
}

// ----- 4. the STMS paper's lab (sec. 2.1) -----

/// Paper (sec. 5.2, Figs. 3 and 13): with a 30 KB buffer on the fast path, STMS improves the
/// goodput by about 30% over Default, whose fast subflow collapses to ~40% of its link (Table
/// 1) because Data ACK jumps make it burst into the small buffer.
///
/// Upstream Linux does not collapse, in the model or on this machine's kernel: in the
/// calibration (docs/calibration/60s, the same set-up at RTT_s = 100 ms) the 6.18 kernel gets
/// 47.7 Mbit/s with a 30 KB fast-path buffer, 58% of it on the fast path (27.7 Mbit/s). Its
/// subflows ACK every second segment whatever the connection holds, so the fast subflow
/// stays clocked and the model's Default keeps it near its link rate.
///
/// The paper ran the out-of-tree v0.92, whose subflows hold back ACKs while connection-level
/// out-of-order data piles up (`Stack::OutOfTree`): there the fast subflow falls to ~76% of
/// its link at RTT_s = 100 ms and STMS-A, which keeps arrivals in order, gains 15%. Short of
/// the paper: the held ACKs go out at the next read, and with Default's interleaving a read
/// comes with almost every LTE segment, so the fast subflow's bursts stay short (p99 of 3
/// segments) and its buffer overflows less often than the paper's Table 1 implies. At
/// RTT_s = 200 ms the model's STMS-A gains nothing (1.01x): both lose as much to the 30 KB
/// buffer.
#[test]
fn lab_a_30kb_fast_buffer_collapses_the_fast_subflow_only_on_the_out_of_tree_kernel() {
    let cfg = |s: &str, slow: u64, stack: StackName| {
        let mut c = with(stms_lab(slow * MS, 60 * S), s);
        c.paths[0].down.queue = QueueSpec::Bytes(30_000);
        c.stack = stack;
        // Joined at the first SYN-ACK, as these numbers were first taken. With the join at the
        // first data (Linux's, the default) the out-of-tree STMS-A gains 1.04x, not 1.15x: 20 ms
        // later at the start move the whole minute.
        c.join = JoinName::SynAck;
        c
    };
    let link = payload_mbps(30 * MBPS);
    for slow in [100, 200] {
        let d = run(cfg("default", slow, StackName::Upstream));
        let a = run(cfg("stms-a", slow, StackName::Upstream));
        println!(
            "upstream 20/{slow} ms, 30 KB: default {:.2} (fast subflow {:.2}), stms-a {:.2} \
             ({:.2}x)",
            d.goodput_mbps,
            d.subflows[0].goodput_mbps,
            a.goodput_mbps,
            a.goodput_mbps / d.goodput_mbps
        );
        assert!(d.subflows[0].goodput_mbps >= 0.9 * link);
        assert!(a.goodput_mbps >= 0.97 * d.goodput_mbps);
    }
    let d = run(cfg("default", 100, StackName::OutOfTree));
    let a = run(cfg("stms-a", 100, StackName::OutOfTree));
    println!(
        "out-of-tree 20/100 ms, 30 KB: default {:.2} (fast subflow {:.2}, {} held ACKs), \
         stms-a {:.2} ({:.2}x)",
        d.goodput_mbps,
        d.subflows[0].goodput_mbps,
        d.subflows[0].held_acks,
        a.goodput_mbps,
        a.goodput_mbps / d.goodput_mbps
    );
    assert!(d.subflows[0].goodput_mbps <= 0.85 * link);
    assert!(a.goodput_mbps >= 1.1 * d.goodput_mbps);
    // STMS-C at 20/200 ms: its gap follows the fast path's bandwidth estimate. Estimated from
    // the delivery rate, which falls whenever the fast subflow waits on held ACKs, the gap
    // shrank with the rate and starved the fast subflow (0.72 x Default, fast subflow at 37%
    // of its link); the windowed maximum keeps it level with Default.
    let d = run(cfg("default", 200, StackName::OutOfTree));
    let c = run(cfg("stms-c", 200, StackName::OutOfTree));
    println!(
        "out-of-tree 20/200 ms, 30 KB: default {:.2}, stms-c {:.2} ({:.2}x, fast subflow {:.2})",
        d.goodput_mbps,
        c.goodput_mbps,
        c.goodput_mbps / d.goodput_mbps,
        c.subflows[0].goodput_mbps
    );
    assert!(c.subflows[0].goodput_mbps >= 0.6 * link);
    assert!(c.goodput_mbps >= 0.9 * d.goodput_mbps);
}

/// Paper Table 1, the single-path reference: plain TCP (CUBIC) over the lab's Wi-Fi path
/// (30 Mbit/s, 20 ms, 0.01% random loss) behind a 30 KB buffer gets 28.4 Mbit/s, and the
/// paper observed 0.05% loss at that buffer. Over seeds 1-3 the model's TCP gets 28.4 Mbit/s
/// with 0.056% loss.
#[test]
fn lab_tcp_alone_behind_a_30kb_wifi_buffer_matches_table_1() {
    let (mut goodput, mut loss) = (0.0, 0.0);
    for seed in 1..=3 {
        let mut c = stms_lab(100 * MS, 60 * S);
        c.protocol = Protocol::Tcp;
        c.paths.truncate(1);
        c.paths[0].down.queue = QueueSpec::Bytes(30_000);
        c.seed = seed;
        let r = run(c);
        goodput += r.goodput_mbps / 3.0;
        loss += r.subflows[0].loss_rate / 3.0;
    }
    println!(
        "TCP alone, 30 KB: {goodput:.2} Mbit/s, loss {:.3}%",
        100.0 * loss
    );
    assert!((goodput / 28.4 - 1.0).abs() <= 0.03, "{goodput}");
    assert!((0.0003..=0.0008).contains(&loss), "{loss}");
}

/// Paper (sec. 5.1.1, Fig. 10b): STMS-A keeps the mean out-of-order delay close to zero while
/// Default's grows with the RTT difference. The claim taken here: with RTT_s = 200 ms and a
/// 50 ms fast-path buffer, STMS-A's mean OOO delay is at most 25% of Default's.
///
/// Not reproduced on the mean: STMS-A's is 39% of Default's here (over seeds 1-5, 48%
/// upstream and 61% out-of-tree, docs/experiments/paper000.md). Where the rest comes from,
/// measured on the segment traces:
/// - The slow path's queue is not constant: CUBIC lets it grow from ~20 to ~200 ms for
///   seconds between random losses, and the true gap grows with it (160 to 640 segments).
///   STMS-C's eq. 2 takes OWD = srtt / 2 and so sees half of that growth; charging the queue
///   to the forward path (`owd = "forward-queue"`) brings STMS-C from 44-69% to 23-28% (means
///   over seeds 1-3, upstream and out-of-tree).
/// - Algorithm 2 sees the sign of a gap error but not its size while the two subflows
///   interleave segment by segment: in-order delivery then advances the Data ACK by ~4 per
///   fast-path ACK (its 2 segments and the 2 slow-path ones between them) whatever the
///   error, so the gap moves at most ~4 segments per adjust_interval (20-35 a second) while
///   the need moves by up to ~100 a second. STMS-A tracks a steady need within a few
///   segments and lags each jump of it by seconds; at a tenth of the paper's interval, with
///   recovery jumps skipped, it reaches 30-33% (`mpsched sweep paper000-interval`).
/// - Random losses: a lost segment stalls the stream for a round trip of its subflow, and
///   Algorithm 2 reads the Data ACK jump that ends the stall as a gap error
///   (`recovery_jumps = "skip"` ignores those).
///
/// What holds: the median segment waits for nothing with STMS where it waits ~50 ms with
/// Default, and every mean is well below Default's.
#[test]
fn lab_stms_delivers_in_order_where_default_waits_for_the_slow_path() {
    // Joined at the first SYN-ACK, as these per-seed numbers were taken (the join at the first
    // data moves them as another seed would).
    let cfg = |s: &str| {
        let mut c = with(stms_lab(200 * MS, 60 * S), s);
        c.join = JoinName::SynAck;
        c
    };
    let d = run(cfg("default"));
    for s in ["stms-a", "stms-c", "otias"] {
        let r = run(cfg(s));
        println!(
            "{s}: OOO mean {:.1} ms ({:.0}% of default's {:.1}), median {:.2} (default {:.2})",
            r.ooo_delay_ms.mean,
            100.0 * r.ooo_delay_ms.mean / d.ooo_delay_ms.mean,
            d.ooo_delay_ms.mean,
            r.ooo_delay_ms.p50,
            d.ooo_delay_ms.p50
        );
        assert!(r.ooo_delay_ms.mean <= 0.75 * d.ooo_delay_ms.mean);
        if s == "stms-a" {
            // 56% of Default's mean for this seed (52% before the application's writes came
            // to fill their pages as upstream's `mptcp_sendmsg` does; seeds 2 and 3: 37% and
            // 93% then; with HyStart as in Linux 5.10-6.12, 38%, 22% and 86%): the median is
            // what STMS-A pushes to zero. Algorithm 2's averaging is checked on its own by
            // `algorithm_2_moves_the_gap_by_the_average_jump_once_per_interval`.
            assert!(r.ooo_delay_ms.mean <= 0.6 * d.ooo_delay_ms.mean);
        }
        assert!(d.ooo_delay_ms.p50 >= 20.0);
        assert!(r.ooo_delay_ms.p50 <= 0.05 * d.ooo_delay_ms.p50);
    }
    // With the slow path's queue charged to its forward delay STMS-C follows the true gap
    // through the queue's growth: 16% of Default's mean for this seed (23% over seeds 1-3).
    let mut fq = cfg("stms-c");
    fq.scheduler_params
        .insert("owd".into(), serde_json::json!("forward-queue"));
    let r = run(fq);
    println!(
        "stms-c, owd = forward-queue: OOO mean {:.1} ms ({:.0}% of default's)",
        r.ooo_delay_ms.mean,
        100.0 * r.ooo_delay_ms.mean / d.ooo_delay_ms.mean
    );
    assert!(r.ooo_delay_ms.mean <= 0.25 * d.ooo_delay_ms.mean);
    // STMS-A at a tenth of the paper's adjust_interval with recovery jumps skipped, the best
    // setting of `mpsched sweep paper000-interval` (30% of Default's mean over five runs):
    // the gap follows the need better when it moves more often.
    let mut tuned = cfg("stms-a");
    tuned
        .scheduler_params
        .insert("adjust_interval".into(), serde_json::json!("25ms"));
    tuned
        .scheduler_params
        .insert("recovery_jumps".into(), serde_json::json!("skip"));
    let r = run(tuned);
    println!(
        "stms-a, adjust_interval 25 ms, recovery jumps skipped: OOO mean {:.1} ms ({:.0}% of \
         default's)",
        r.ooo_delay_ms.mean,
        100.0 * r.ooo_delay_ms.mean / d.ooo_delay_ms.mean
    );
    assert!(r.ooo_delay_ms.mean <= 0.35 * d.ooo_delay_ms.mean);
}

/// Paper (sec. 5.2): "When the host buffer is big enough, there is no blocking, so all four
/// schedulers can get the full bandwidth aggregation effect." 6 MiB host buffers, deep router
/// buffers (500 ms on both paths). With RTT_s = 100 ms every scheduler gets >= 90% of the two
/// links' payload rate (2 x 28.96 Mbit/s). With RTT_s = 200 ms the slow path itself is the
/// limit: 0.01% random loss caps CUBIC there at ~21 Mbit/s for a single TCP, so the reference
/// is the sum of what single-path TCP gets on each path (the aggregation benefit's sum C_i).
#[test]
fn lab_with_big_buffers_every_scheduler_aggregates_both_paths() {
    for slow in [100, 200] {
        let lab = || {
            let mut c = stms_lab(slow * MS, 60 * S);
            c.paths[0].down.queue = QueueSpec::TimeNs(500 * MS);
            c
        };
        let reference = if slow == 100 {
            2.0 * payload_mbps(30 * MBPS)
        } else {
            (0..2)
                .map(|p| {
                    let mut c = lab();
                    c.protocol = Protocol::Tcp;
                    c.paths = vec![c.paths[p].clone()];
                    run(c).goodput_mbps
                })
                .sum()
        };
        for s in ["stms-c", "stms-a", "otias", "mptcp-sf", "linux"] {
            let r = run(with(lab(), s));
            println!(
                "20/{slow} ms {s}: {:.2} Mbit/s = {:.1}% of {reference:.2} ({:.1}% of the links)",
                r.goodput_mbps,
                100.0 * r.goodput_mbps / reference,
                100.0 * r.goodput_mbps / (2.0 * payload_mbps(30 * MBPS))
            );
            assert!(r.goodput_mbps >= 0.9 * reference, "{s}");
        }
    }
}

/// The lab with RTT_s = 200 ms and both host buffers (send and receive) at `kib` KiB.
fn lab_host_buffer(kib: u64, stack: StackName, scheduler: &str) -> Config {
    let mut c = with(stms_lab(200 * MS, 60 * S), scheduler);
    c.sndbuf_bytes = kib * 1024;
    c.rcvbuf_bytes = kib * 1024;
    c.stack = stack;
    c
}

/// Paper sec. 3.2 (eqs. 1, 3, 4): STMS uses the slow path only if the host buffer holds the
/// fast path's window and the gap, Buf(fallback) = B_f x (OWD_s + OWD_f); below that it is TCP
/// over the fast path, while Default still sends on the slow path and "the throughput will be
/// even worse than the bandwidth B_f allowed by the fast path alone".
///
/// RTT_s = 200 ms: Buf(fallback) = 3.56 MB/s x 110 ms = 392 KB of payload. A 512 KiB buffer
/// advertises 256 KB out-of-tree (half its memory) and 323 KB upstream (158/256 of it).
/// Between Buf(STMS) = (B_f + B_s) x (OWD_s + OWD_f) = 783 KB and Buf(default) =
/// (B_f + B_s) x RTT_s = 1.42 MB STMS aggregates where Default cannot yet: 2 MiB out-of-tree
/// advertises 1 MB. (`mpsched sweep paper000-host-buffer` runs the whole range.)
#[test]
fn lab_stms_falls_back_to_the_fast_path_when_the_host_buffer_is_small() {
    let wifi = payload_mbps(30 * MBPS);
    for stack in [StackName::OutOfTree, StackName::Upstream] {
        let d = run(lab_host_buffer(512, stack, "default"));
        let c = run(lab_host_buffer(512, stack, "stms-c"));
        println!(
            "{stack:?}, 512 KiB: default {:.2} (LTE share {:.3}), stms-c {:.2} (LTE share {:.3})",
            d.goodput_mbps, d.subflows[1].share, c.goodput_mbps, c.subflows[1].share
        );
        assert!(c.subflows[1].share <= 0.01);
        assert!(c.goodput_mbps >= 0.97 * wifi);
        assert!(d.subflows[1].share >= 0.05);
        // The paper's stack (out-of-tree) falls well below the fast path alone (20.9 Mbit/s
        // of 28.5), upstream's too (24.8).
        assert!(
            d.goodput_mbps <= 0.9 * wifi,
            "{stack:?}: default {:.2}",
            d.goodput_mbps
        );
    }
    let d = run(lab_host_buffer(2048, StackName::OutOfTree, "default"));
    let c = run(lab_host_buffer(2048, StackName::OutOfTree, "stms-c"));
    println!(
        "OutOfTree, 2 MiB: default {:.2}, stms-c {:.2} ({:.2}x)",
        d.goodput_mbps,
        c.goodput_mbps,
        c.goodput_mbps / d.goodput_mbps
    );
    assert!(c.goodput_mbps >= 1.15 * d.goodput_mbps);
    assert!(c.goodput_mbps >= 1.5 * wifi);
}

//! CoDel (RFC 8289) under one bulk TCP flow: the standing queue stays near the 5 ms target,
//! where drop-tail lets the flow fill its buffer, and the link stays busy.

use mpsched_sim::build::*;
use mpsched_sim::config::{CodelSpec, Config, Protocol, QueueSpec};
use mpsched_sim::Simulation;

/// One CUBIC flow over 20 Mbit/s, 40 ms, a 1 MB buffer (400 ms at the rate).
fn bulk(codel: bool) -> Config {
    let mut c = scenario(
        vec![path(
            "p",
            20 * MBPS,
            40 * MS,
            QueueSpec::Bytes(1_000_000),
            0.0,
        )],
        "minrtt",
        60 * S,
    );
    c.protocol = Protocol::Tcp;
    if codel {
        c.paths[0].down.codel = Some(CodelSpec {
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
        });
    }
    c
}

/// The median smoothed RTT over the ACKs of the last 40 s, in ms: base RTT plus the standing
/// queue.
fn median_srtt_ms(cfg: Config) -> (f64, f64, u64) {
    let out = Simulation::new(cfg, true).unwrap().run();
    let acks = &out.traces.as_ref().unwrap().acks;
    let mut srtt: Vec<u64> = (0..acks.t_ns.len())
        .filter(|&i| acks.t_ns[i] > 20 * S)
        .map(|i| acks.srtt_ns[i])
        .collect();
    srtt.sort_unstable();
    let s = &out.summary;
    (
        srtt[srtt.len() / 2] as f64 / 1e6,
        s.goodput_mbps,
        s.subflows[0].queue_drops,
    )
}

#[test]
fn codel_keeps_the_standing_queue_near_its_target_where_drop_tail_fills_the_buffer() {
    let (tail_srtt, tail_goodput, _) = median_srtt_ms(bulk(false));
    let (codel_srtt, codel_goodput, codel_drops) = median_srtt_ms(bulk(true));
    // Drop-tail: the queue holds most of its 400 ms.
    assert!(tail_srtt > 40.0 + 200.0, "drop-tail srtt {tail_srtt} ms");
    // CoDel: the queueing delay (srtt - 40 ms) within twice the 5 ms target.
    assert!(codel_srtt - 40.0 < 10.0, "CoDel srtt {codel_srtt} ms");
    assert!(codel_drops > 0);
    // And the link stays busy: most of the payload rate (19.3 Mbit/s).
    let payload = 20.0 * 1448.0 / 1500.0;
    assert!(tail_goodput > 0.95 * payload, "{tail_goodput}");
    assert!(codel_goodput > 0.85 * payload, "{codel_goodput}");
}

/// A 1 Mbit/s application (8 KiB blocks) beside a bulk TCP flow on one 20 Mbit/s, 40 ms path
/// with a 1 MB buffer: the blocks' delays (write to delivery), in ms.
fn beside_bulk(fq: bool) -> (f64, f64) {
    use mpsched_sim::config::{FlowConfig, Workload};
    let mut c = bulk(false);
    c.duration_ns = 30 * S;
    c.workload = Workload::Rate {
        rate_bps: MBPS,
        block_bytes: 8192,
        warmup_ns: 5 * S,
    };
    c.flows = vec![FlowConfig {
        start_ns: 0,
        protocol: Protocol::Tcp,
        scheduler: "minrtt".into(),
        scheduler_params: Default::default(),
        congestion: "cubic".into(),
        size_bytes: None,
        paths: vec![0],
    }];
    if fq {
        c.paths[0].down.fq_codel = Some(CodelSpec {
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
        });
    }
    let s = Simulation::new(c, false).unwrap().run().summary;
    let d = s.block_delay_ms.expect("blocks timed");
    (d.p50, d.p99)
}

#[test]
fn fq_codel_isolates_a_rate_limited_flow_from_a_bulk_one() {
    let (tail_p50, _) = beside_bulk(false);
    let (fq_p50, fq_p99) = beside_bulk(true);
    // A block is 6 segments at 20 Mbit/s behind nothing: ~20 ms one way plus 3.6 ms of
    // serialization. Behind the bulk flow's drop-tail queue it waits for most of 400 ms.
    assert!(
        tail_p50 > 200.0,
        "drop-tail: median block delay {tail_p50} ms"
    );
    // FQ-CoDel: its sparse packets skip the bulk flow's queue: within a few ms of the base.
    assert!(
        fq_p50 < 20.0 + 3.6 + 5.0,
        "FQ-CoDel: median block delay {fq_p50} ms"
    );
    assert!(fq_p99 < 60.0, "FQ-CoDel: p99 block delay {fq_p99} ms");
}

/// `n` CUBIC flows, the main one and `n - 1` competing ones (starting 100 ms apart), over one
/// path of `rate_mbps`, 40 ms RTT, a 2 MB buffer, CoDel with RFC 8289's defaults on the data
/// direction.
fn crowd(n: u64, rate_mbps: u64, secs: u64) -> Config {
    use mpsched_sim::config::FlowConfig;
    let mut c = bulk(true);
    c.paths[0].down.rate_bps = rate_mbps * MBPS;
    c.paths[0].down.queue = QueueSpec::Bytes(2_000_000);
    c.duration_ns = secs * S;
    c.flows = (1..n)
        .map(|k| FlowConfig {
            start_ns: k * 100 * MS,
            protocol: Protocol::Tcp,
            scheduler: "minrtt".into(),
            scheduler_params: Default::default(),
            congestion: "cubic".into(),
            size_bytes: None,
            paths: vec![0],
        })
        .collect();
    c
}

/// When the data direction's AQM dropped, read from the `subflows` trace sampled every
/// `SAMPLE` (several drops in one sample come as several entries at its time).
const SAMPLE: u64 = MS / 4;
fn aqm_drop_times(cfg: Config) -> Vec<u64> {
    use mpsched_sim::trace_out::Column;
    let (mut t, mut drops) = (vec![], vec![]);
    Simulation::new(cfg, false).unwrap().run_streaming(
        mpsched_core::Dur(SAMPLE),
        4096,
        &mut |chunk| {
            if chunk.table != "subflows" {
                return;
            }
            for (name, col) in &chunk.columns {
                match (*name, col) {
                    ("t_ns", Column::U64(v)) => t.extend_from_slice(v),
                    ("aqm_drops", Column::U64(v)) => drops.extend_from_slice(v),
                    _ => {}
                }
            }
        },
    );
    let mut times = vec![];
    let mut before = 0;
    for (t, d) in t.into_iter().zip(drops) {
        times.extend(std::iter::repeat_n(t, (d - before) as usize));
        before = d;
    }
    times
}

/// RFC 8289 (section 5.5, Linux's `codel_dequeue`): a queue that re-enters the dropping
/// state soon after leaving it (within 16 intervals) resumes near the drop rate that
/// controlled it last time, `count = count - lastcount` when that is above 1, instead of
/// starting over at 1. Eight CUBIC flows need many drops an episode and re-enter within a
/// second or two.
///
/// Read from the drops alone: within an episode the drops come `interval / sqrt(count)`
/// apart, `count` going up by one a drop, so no gap there exceeds an interval (plus the wait
/// for the next dequeue, 1.2 ms at 10 Mbit/s, and the trace's sampling); a longer gap ends an
/// episode, and the drop after it begins the next one. Begun at `count = 1` the episode's
/// second drop comes an interval later; resumed at `count = n >= 2`, within
/// `interval / sqrt(2)` = 70.7 ms.
#[test]
fn codel_resumes_near_the_last_drop_rate_when_it_re_enters_soon() {
    let interval = 100.0;
    let times = aqm_drop_times(crowd(8, 10, 60));
    let gaps: Vec<f64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e6)
        .collect();
    // Each clear re-entry (after a pause of more than an interval plus 5 ms, well within 16
    // intervals): the gap to the episode's second drop, if it has one.
    let second: Vec<f64> = gaps
        .windows(2)
        .filter(|w| (interval + 5.0..15.0 * interval).contains(&w[0]))
        .map(|w| w[1])
        .collect();
    let slack = 2.0;
    for &g in &second {
        assert!(
            g <= interval / 2f64.sqrt() + slack || (g - interval).abs() <= slack || g > interval,
            "an episode's second drop {g} ms after its first: neither count 1 nor count >= 2"
        );
    }
    let resumed = second
        .iter()
        .filter(|&&g| g <= interval / 2f64.sqrt() + slack)
        .count();
    eprintln!(
        "{} drops, {} clear re-entries, {resumed} resumed",
        times.len(),
        second.len()
    );
    assert!(second.len() >= 30, "{} re-entries", second.len());
    assert!(
        resumed * 2 > second.len(),
        "{resumed} of {} re-entries resumed near the last drop rate: {second:?}",
        second.len()
    );
}

/// One small block (one full-sized segment: the model pads blocks to whole segments, 1.2 ms
/// at 10 Mbit/s) every 100 ms from the main connection, beside `bulk_flows` CUBIC flows on one
/// 10 Mbit/s path (20 ms each way) under FQ-CoDel: the blocks' delays (write to delivery),
/// in ms.
fn sparse_beside(bulk_flows: u64) -> mpsched_sim::summary::Quantiles {
    use mpsched_sim::config::Workload;
    let mut c = crowd(bulk_flows + 1, 10, 30);
    c.paths[0].down.codel = None;
    c.paths[0].down.fq_codel = Some(CodelSpec {
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
    });
    c.workload = Workload::Rate {
        rate_bps: 500 * 8 * 10,
        block_bytes: 500,
        warmup_ns: 5 * S,
    };
    let s = Simulation::new(c, false).unwrap().run().summary;
    assert!(s.blocks_delivered.unwrap() > 200);
    s.block_delay_ms.expect("blocks timed")
}

/// RFC 8290 section 4.1: a flow with nothing queued that gets a packet goes on the list of
/// new flows, which the scheduler serves before the old ones, so a sparse flow's packet
/// waits for the packet being sent (1.2 ms here) and for other flows new at that moment (a
/// bulk flow whose queue ran empty), not for the backlogged ones. Plain deficit round robin,
/// which appends it to the one list, makes it wait for a quantum (1514 bytes, 1.2 ms) of
/// each of the eight bulk flows: some 10 ms every time.
#[test]
fn fq_codel_serves_a_new_flow_before_the_old_ones() {
    let alone = sparse_beside(0);
    // 20 ms of propagation and 1.2 ms of serialization; the quantiles' buckets are 1/128
    // wide.
    let base = 20.0 + 1.2;
    assert!((alone.max - base).abs() < 0.01, "alone: {alone:?} ms");
    let d = sparse_beside(8);
    let packet = 1.2;
    assert!(d.p50 < base + packet, "block delay {d:?} ms");
    // The worst block: behind a few new flows at most, well short of the eight quanta of a
    // round.
    assert!(d.max < base + 4.0 * packet, "block delay {d:?} ms");
}

//! Conservation over random scenarios: whatever the paths, losses and buffers, every byte the
//! application writes reaches the other application exactly once and in order, the run ends,
//! and nothing panics.
//!
//! Each drawn network runs under every registered scheduler with every registered congestion
//! control (and plain TCP under each congestion control), so a scheduler or congestion control
//! added to a registry is exercised on every case and changes no other's run. A share of the
//! cases is a failover: every regular path fails, some come back, addresses go away, and a
//! path (often a backup) works from some moment on; there no run may stall for longer than the
//! out-of-tree kernel's last-resort timer allows.

use mpsched_core::cc::CONGESTION_CONTROLS;
use mpsched_core::rng::Rng;
use mpsched_core::sched::{
    lowest_rtt_available, Decision, Reason, SchedCtx, Scheduler, SubflowSet,
};
use mpsched_core::units::wire::{self, MSS};
use mpsched_sim::build::*;
use mpsched_sim::config::{
    Change, CodelSpec, Config, FlowConfig, LinkSpec, PathConfig, Protocol, QueueSpec,
    SharedLinkConfig, StackName, Workload,
};
use mpsched_sim::Simulation;

// docs/extending.md's worked example, as a scheduler would be written in the core
// (`crate::sched` is the core's scheduler module here too).
use mpsched_core::sched;
#[path = "../../../docs/extending/widest.rs"]
#[allow(dead_code)]
mod widest;

fn log_uniform(r: &mut Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + r.next_f64() * (hi.ln() - lo.ln())).exp()
}

fn random_queue(r: &mut Rng) -> QueueSpec {
    // From 2 segments to 64 MiB, in each of the three forms.
    match r.below(3) {
        0 => QueueSpec::Packets(2 + r.below(2000)),
        1 => QueueSpec::Bytes(log_uniform(r, 3000.0, 64.0 * MIB as f64) as u64),
        _ => QueueSpec::TimeNs(log_uniform(r, 0.2e6, 2e9) as u64),
    }
}

fn random_scenario(case: u64) -> Config {
    let mut r = Rng::new(0xC0FFEE, case);
    let n = 1 + r.below(4) as usize;
    let paths = (0..n)
        .map(|i| {
            let rate = log_uniform(&mut r, 1e6, 1e9) as u64;
            let rtt = log_uniform(&mut r, 1e6, 1e9) as u64;
            let loss = if r.chance(0.3) {
                0.0
            } else {
                r.next_f64() * 0.05
            };
            let ack_loss = if r.chance(0.7) {
                0.0
            } else {
                r.next_f64() * 0.05
            };
            // Bursty (Gilbert) loss on some paths, of either direction. Short bursts:
            // the chain steps per packet (as netem's), so a sender backing off sends one packet
            // per timeout and a long burst met with a small window lasts hours.
            // Bursty paths lose at most 1%, for the same reason (tiny buffers are drawn too).
            let loss_burst = (loss < 0.01 && r.chance(0.5)).then(|| 1.0 + r.next_f64() * 4.0);
            let ack_loss_burst =
                (ack_loss < 0.01 && r.chance(0.5)).then(|| 1.0 + r.next_f64() * 2.0);
            // A Mahimahi trace instead of the rate on a tenth of the data links: 1-4
            // opportunities in most milliseconds of a 5-24 ms period.
            let trace = r.chance(0.1).then(|| {
                let period = 5 + r.below(20);
                let per_ms = 1 + r.below(4);
                let mut ms = vec![];
                for m in 1..=period {
                    if m == period || !r.chance(0.2) {
                        ms.extend(std::iter::repeat_n(m, per_ms as usize));
                    }
                }
                ms
            });
            let traced = trace.is_some();
            // CoDel or FQ-CoDel on a fifth of the data links.
            let codel = r.chance(0.2).then_some(CodelSpec {
                target_ns: 5 * MS,
                interval_ns: 100 * MS,
            });
            let fq = r.chance(0.5);
            let up_rate = if r.chance(0.5) {
                rate
            } else {
                log_uniform(&mut r, 1e6, 1e9) as u64
            };
            PathConfig {
                name: format!("p{i}"),
                down: {
                    // Drawn in the order the fields are written.
                    let queue = random_queue(&mut r);
                    LinkSpec {
                        // A per-packet delay variation on a third of the paths.
                        jitter_ns: if r.chance(0.3) { rtt / 10 } else { 0 },
                        // Half the links let that jitter (and a delay cut) reorder.
                        reorder: r.chance(0.5),
                        loss_burst,
                        trace_ms: trace,
                        // CoDel on a fifth of the data links.
                        codel: codel.filter(|_| !fq),
                        fq_codel: codel.filter(|_| fq),
                        ..link(rate, rtt / 2, queue, loss)
                    }
                },
                up: {
                    let queue = random_queue(&mut r);
                    LinkSpec {
                        // The ACKs' jitter comes from the schedule's changes.
                        reorder: r.chance(0.3),
                        loss_burst: ack_loss_burst,
                        ..link(up_rate, rtt - rtt / 2, queue, ack_loss)
                    }
                },
                schedule: {
                    let mut changes = vec![];
                    if r.chance(0.3) {
                        changes.push(Change {
                            at_ns: r.below(5 * S),
                            // A trace sets a traced path's capacity: no rate change there.
                            rate_bps: Some(log_uniform(&mut r, 1e6, 1e9) as u64)
                                .filter(|_| !traced),
                            delay_down_ns: Some(log_uniform(&mut r, 0.5e6, 0.5e9) as u64),
                            delay_up_ns: None,
                            jitter_down_ns: None,
                            jitter_up_ns: r.chance(0.5).then_some(rtt / 20),
                            up: None,
                            present: None,
                        });
                    }
                    // Or its address goes away for up to 10 s (never the first path's: the
                    // connection opens there) and comes back: the subflow closes and joins
                    // again.
                    let gone = i > 0 && r.chance(0.15);
                    if gone {
                        let from = r.below(5 * S);
                        let back = from + 1 + r.below(10 * S);
                        changes.push(presence(from, false));
                        changes.push(presence(back, true));
                    }
                    // An outage of up to 10 s on a fifth of the paths; the path comes back.
                    if !gone && r.chance(0.2) {
                        let from = r.below(5 * S);
                        changes.push(state(from, false));
                        changes.push(state(from + 1 + r.below(10 * S), true));
                    }
                    changes
                },
                // A backup path now and then (never the first: something regular remains).
                backup: i > 0 && r.chance(0.2),
                via: Vec::new(),
            }
        })
        .collect();
    // The scheduler and congestion control are the caller's (`run_case`).
    let mut c = scenario(paths, "minrtt", 3600 * S);
    c.seed = case;
    if r.chance(0.2) {
        c.protocol = Protocol::Tcp;
    }
    if r.chance(0.5) {
        c.stack = StackName::OutOfTree;
    }
    c.sndbuf_bytes = log_uniform(&mut r, 2.0 * MSS as f64, 64.0 * MIB as f64) as u64;
    c.rcvbuf_bytes = log_uniform(&mut r, 2.0 * MSS as f64, 64.0 * MIB as f64) as u64;
    c.workload = Workload::File {
        size_bytes: 1 + r.below(4_000_000),
    };
    // Shared links in a quarter of the cases: one or two, each crossed by a random subset of
    // the paths (a shared bottleneck, a DSL line behind one access link).
    if r.chance(0.25) {
        for s in 0..1 + r.below(2) as usize {
            let rate = log_uniform(&mut r, 1e6, 1e9) as u64;
            let delay = log_uniform(&mut r, 0.1e6, 0.2e9) as u64;
            let link = |loss, queue| link(rate, delay, queue, loss);
            let loss = if r.chance(0.5) {
                0.0
            } else {
                r.next_f64() * 0.02
            };
            let (q_down, q_up) = (random_queue(&mut r), random_queue(&mut r));
            c.links.push(SharedLinkConfig {
                name: format!("s{s}"),
                down: link(loss, q_down),
                up: link(0.0, q_up),
            });
            for p in c.paths.iter_mut() {
                if r.chance(0.7) {
                    p.via.push(s);
                }
            }
        }
    }
    // Competing flows in a third of the cases: files too, on a random subset of the paths.
    if r.chance(0.3) {
        c.flows = (0..1 + r.below(3))
            .map(|_| {
                let tcp = r.chance(0.3);
                let first = r.below(n as u64) as usize;
                let paths = if tcp {
                    vec![first]
                } else {
                    (0..n).filter(|&p| p == first || r.chance(0.5)).collect()
                };
                // A competing MPTCP flow uses the main connection's scheduler and congestion
                // control (`run_case` sets them).
                FlowConfig {
                    start_ns: r.below(2 * S),
                    protocol: if tcp { Protocol::Tcp } else { Protocol::Mptcp },
                    scheduler: String::new(),
                    scheduler_params: Default::default(),
                    congestion: String::new(),
                    size_bytes: Some(1 + r.below(2_000_000)),
                    paths,
                }
            })
            .collect();
    }
    c
}

/// A failover (`random_failover`): every regular path fails, some come back, addresses go
/// away, and one path, often a backup, works from some moment on.
fn random_failover(case: u64) -> Config {
    let mut r = Rng::new(0x57A11, case);
    let n = 2 + r.below(2) as usize;
    let survivor = r.below(n as u64) as usize;
    let mut paths = Vec::new();
    for i in 0..n {
        let rate = log_uniform(&mut r, 1e6, 100e6) as u64;
        let rtt = log_uniform(&mut r, 5e6, 400e6) as u64;
        // At least 8 packets of queue: a survivor path that drops all but two packets of a
        // window backs its timer off for minutes, a stall of the network's making.
        let eight_packets_ns = 8.0 * 1500.0 * 8.0 / rate as f64 * 1e9;
        let queue = if r.chance(0.5) {
            QueueSpec::TimeNs(log_uniform(&mut r, 5e6, 1e9).max(eight_packets_ns) as u64)
        } else {
            QueueSpec::Packets(8 + r.below(500))
        };
        let loss = if r.chance(0.5) {
            0.0
        } else {
            r.next_f64() * 0.02
        };
        let mut p = path(&format!("p{i}"), rate, rtt, queue, loss);
        // A backup path is never the first (the connection opens there), often the survivor.
        p.backup = i > 0 && (i == survivor && r.chance(0.7) || r.chance(0.3));
        // Every path but the survivor fails; some come back. The first path fails once the
        // connection is surely open at the server (a lost third ACK would leave it unopened
        // there, as in the kernel).
        if i != survivor || r.chance(0.3) {
            let from = if i == 0 {
                3 * S + r.below(4 * S)
            } else {
                r.below(4 * S)
            };
            let gone = i > 0 && r.chance(0.4);
            let returns = i == survivor || r.chance(0.3);
            p.schedule.push(if gone {
                presence(from, false)
            } else {
                state(from, false)
            });
            if returns {
                let back = from + 1 + r.below(8 * S);
                p.schedule.push(if gone {
                    presence(back, true)
                } else {
                    state(back, true)
                });
            }
        }
        paths.push(p);
    }
    let mut c = scenario(paths, "minrtt", 7200 * S);
    c.seed = case;
    if r.chance(0.5) {
        c.stack = StackName::OutOfTree;
    }
    c.workload = Workload::File {
        size_bytes: 100_000 + r.below(3_000_000),
    };
    c
}

/// The out-of-tree kernel's last resort, its meta socket's timer, waits up to `TCP_RTO_MAX`
/// (120 s) while a dead subflow's backed-off RTO sets it (`conn/meta_rto.rs`); a few timer
/// ticks over that is the longest a failover may go without delivering.
const LONGEST_FAILOVER_STALL_S: f64 = 121.5;

/// Runs `cfg` (with `sched` driving the main connection if given) and checks conservation;
/// the error describes what broke.
fn check(cfg: Config, sched: Option<Box<dyn Scheduler>>, failover: bool) -> Result<(), String> {
    let Workload::File { size_bytes } = cfg.workload else {
        unreachable!()
    };
    let cfg_mptcp = cfg.protocol == Protocol::Mptcp;
    let flow_sizes: Vec<u64> = cfg.flows.iter().map(|f| f.size_bytes.unwrap()).collect();
    let out = match sched {
        Some(s) => Simulation::with_scheduler(cfg, true, s),
        None => Simulation::new(cfg, true),
    }
    .map_err(|e| format!("refused: {e}"))?
    .run();
    let s = &out.summary;
    let ensure = |ok: bool, what: &str| if ok { Ok(()) } else { Err(what.to_string()) };
    ensure(
        s.completion_s.is_some(),
        &format!("did not complete: {s:?}"),
    )?;
    ensure(s.bytes_delivered == size_bytes, "bytes delivered")?;
    if failover {
        let stall_s = s.longest_stall_ms / 1e3;
        ensure(
            stall_s <= LONGEST_FAILOVER_STALL_S,
            &format!("a stall of {stall_s:.1} s"),
        )?;
    }
    // Every competing flow gets its whole file too, and the run waited for it.
    for (k, &size) in flow_sizes.iter().enumerate() {
        let f = &s.flows[k + 1];
        ensure(f.bytes_delivered == size, &format!("flow {k}'s bytes"))?;
        ensure(
            f.completion_s.is_some(),
            &format!("flow {k} did not complete"),
        )?;
    }
    ensure(s.unfinished_flows == Some(0), "unfinished flows")?;
    let t = out.traces.unwrap();
    let d = &t.delivery;
    let mss = wire::mss(cfg_mptcp) as u64;
    let nsegs = size_bytes.div_ceil(mss) as usize;
    // One delivery per data segment, each segment's bytes once, in time order.
    ensure(d.len_bytes.len() == nsegs, "one delivery per segment")?;
    ensure(
        d.len_bytes.iter().map(|&l| l as u64).sum::<u64>() == size_bytes,
        "each byte delivered once",
    )?;
    ensure(
        d.delivered_ns.windows(2).all(|w| w[0] <= w[1]),
        "delivered in order",
    )?;
    ensure(
        d.first_received_ns
            .iter()
            .zip(&d.delivered_ns)
            .all(|(a, b)| a <= b),
        "delivered after received",
    )?;
    // Everything delivered was sent, before it was received.
    let sent = &t.sent;
    ensure(sent.first_sent_ns.len() >= nsegs, "sent records")?;
    for i in 0..nsegs {
        ensure(sent.transmissions[i] >= 1, "sent before delivered")?;
        ensure(
            sent.first_sent_ns[i] <= d.first_received_ns[i],
            "sent before received",
        )?;
    }
    Ok(())
}

/// Case `case`'s network with `sched` and `cc` (a competing MPTCP flow uses them too); `None`
/// where the pair cannot run there (upstream's scheduler on the out-of-tree stack).
fn with(mut cfg: Config, sched: &str, cc: &str) -> Option<Config> {
    if cfg.protocol == Protocol::Mptcp {
        cfg.stack.admits(sched, "scheduler").ok()?;
    }
    cfg.scheduler = sched.into();
    cfg.congestion = cc.into();
    for f in cfg.flows.iter_mut() {
        f.scheduler = sched.into();
        f.congestion = cc.into();
    }
    Some(cfg)
}

/// How many draws of each kind run (`CONSERVATION_CASES` for more); every one under every
/// scheduler and congestion control.
fn cases() -> u64 {
    std::env::var("CONSERVATION_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

#[test]
fn every_byte_arrives_exactly_once_and_in_order() {
    let scheds: Vec<&str> = mpsched_core::sched::registry().map(|s| s.name).collect();
    let ccs: Vec<&str> = CONGESTION_CONTROLS.iter().map(|c| c.name).collect();
    let mut failures = Vec::new();
    let mut runs = 0;
    for case in 0..cases() {
        for (failover, net) in [
            (false, random_scenario(case)),
            (true, random_failover(case)),
        ] {
            // Plain TCP has no scheduler: once per congestion control.
            let scheds = if net.protocol == Protocol::Tcp {
                &scheds[..1]
            } else {
                &scheds[..]
            };
            for &sched in scheds {
                for &cc in &ccs {
                    let Some(cfg) = with(net.clone(), sched, cc) else {
                        continue;
                    };
                    runs += 1;
                    if let Err(e) = check(cfg.clone(), None, failover) {
                        let kind = if failover { "failover" } else { "case" };
                        failures.push(format!("{kind} {case} {sched} {cc}: {e}\n  {cfg:?}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// docs/extending.md's worked example keeps the property on every case, as a registered
/// scheduler would (its claim that registering it needs nothing more).
#[test]
fn the_worked_example_of_docs_extending_keeps_it() {
    let ccs: Vec<&str> = CONGESTION_CONTROLS.iter().map(|c| c.name).collect();
    let build = || Box::new(widest::Widest::from_params(&sched::SchedParams::new()).unwrap());
    for case in 0..cases() {
        for (failover, net) in [
            (false, random_scenario(case)),
            (true, random_failover(case)),
        ] {
            for &cc in &ccs {
                // Competing flows need a registered scheduler; the main connection runs widest.
                let cfg = with(net.clone(), "minrtt", cc).unwrap();
                if let Err(e) = check(cfg, Some(build()), failover) {
                    panic!("case {case} (failover {failover}) {cc}: {e}");
                }
            }
        }
    }
}

/// LowRTT that never looks at the reinjection queue: data a failed subflow held is never sent
/// again by the scheduler.
#[derive(Debug)]
struct NeverReinjects;

impl Scheduler for NeverReinjects {
    fn name(&self) -> &'static str {
        "never-reinjects"
    }
    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let dseq = ctx.first_unsent()?;
        if !ctx.in_window(dseq) {
            return None;
        }
        let sf = lowest_rtt_available(ctx.subflows(), SubflowSet::EMPTY)?;
        Some(Decision {
            dseq,
            subflows: SubflowSet::one(sf),
            reason: Reason::New,
        })
    }
}

/// The property can fail: a scheduler that ignores reinjections strands upstream's connection
/// timer's retransmissions on the failovers (the out-of-tree meta socket's timer sends its
/// own, around the scheduler).
#[test]
fn a_scheduler_that_never_reinjects_fails_it() {
    let broken = (0..cases()).filter(|&case| {
        let mut cfg = random_failover(case);
        cfg.stack = StackName::Upstream;
        check(cfg, Some(Box::new(NeverReinjects)), true).is_err()
    });
    assert!(broken.count() > 0);
}

/// Issue 31's case (draw 848 of the earlier test), written out: DAPS over three lossy paths
/// behind two shared links, beside a competing STMS-A flow, whose backup (p2) loses its address
/// at 2.3 s and p1 at 3.3 s, both returning. DAPS stopped at 1.08 of 2.45 MB for good:
/// upstream's connection timer did not run while the data left was written but not yet sent,
/// and a hole queued by a second rewind waited behind everything the first had queued.
#[test]
fn daps_finishes_when_its_backup_path_is_removed() {
    let l = |rate, delay, queue, loss, jitter_ns, reorder| LinkSpec {
        jitter_ns,
        reorder,
        ..link(rate, delay, queue, loss)
    };
    let p = |name: &str, down, up, schedule, via| PathConfig {
        name: name.into(),
        down,
        up,
        schedule,
        backup: false,
        via,
    };
    let p0 = p(
        "p0",
        l(
            26_706_218,
            819_914,
            QueueSpec::TimeNs(224_892),
            0.0282,
            163_982,
            true,
        ),
        l(
            372_834_196,
            819_915,
            QueueSpec::TimeNs(5_263_537),
            0.0,
            0,
            true,
        ),
        vec![],
        vec![0, 1],
    );
    let p1 = p(
        "p1",
        l(
            231_775_483,
            356_666_941,
            QueueSpec::TimeNs(52_413_954),
            0.0421,
            0,
            false,
        ),
        l(
            231_775_483,
            356_666_942,
            QueueSpec::Packets(337),
            0.0205,
            0,
            false,
        ),
        vec![
            presence(3_291_922_621, false),
            presence(11_689_496_475, true),
        ],
        vec![0, 1],
    );
    let mut p2 = p(
        "p2",
        LinkSpec {
            codel: Some(CodelSpec {
                target_ns: 5 * MS,
                interval_ns: 100 * MS,
            }),
            ..l(
                141_714_098,
                2_617_244,
                QueueSpec::Bytes(552_864),
                0.0225,
                523_448,
                true,
            )
        },
        l(
            1_941_545,
            2_617_245,
            QueueSpec::TimeNs(232_129_868),
            0.0,
            0,
            false,
        ),
        vec![
            presence(2_284_787_219, false),
            presence(5_803_219_845, true),
        ],
        vec![0],
    );
    p2.backup = true;
    let mut cfg = scenario(vec![p0, p1, p2], "daps", 3600 * S);
    cfg.seed = 848;
    cfg.congestion = "lia".into();
    cfg.sndbuf_bytes = 215_095;
    cfg.rcvbuf_bytes = 108_787;
    let size_bytes = 2_448_624;
    cfg.workload = Workload::File { size_bytes };
    cfg.links = vec![
        SharedLinkConfig {
            name: "s0".into(),
            down: link(9_765_607, 2_492_294, QueueSpec::Packets(516), 0.0179),
            up: link(9_765_607, 2_492_294, QueueSpec::Bytes(24_417), 0.0),
        },
        SharedLinkConfig {
            name: "s1".into(),
            down: link(4_134_517, 401_453, QueueSpec::Bytes(14_216), 0.0),
            up: link(4_134_517, 401_453, QueueSpec::TimeNs(11_045_861), 0.0),
        },
    ];
    cfg.flows = vec![FlowConfig {
        start_ns: 1_363_630_844,
        protocol: Protocol::Mptcp,
        scheduler: "stms-a".into(),
        scheduler_params: Default::default(),
        congestion: "olia".into(),
        size_bytes: Some(993_246),
        paths: vec![0, 1],
    }];
    let s = Simulation::new(cfg, false).unwrap().run().summary;
    assert_eq!(s.bytes_delivered, size_bytes);
    assert!(s.completion_s.unwrap() < 20.0, "{:?}", s.completion_s);
}

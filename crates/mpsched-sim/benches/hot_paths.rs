//! Micro-benchmarks of the hot paths: `cargo bench -p mpsched-sim --bench hot_paths`.
//! (`mpsched bench` measures whole scenarios.)

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use mpsched_core::cc::Cubic;
use mpsched_core::conn::sender::SubflowConfig;
use mpsched_core::conn::{Sender, SenderConfig};
use mpsched_core::link::{Link, LinkConfig, QueueLimit};
use mpsched_core::packet::{Ack, DataSeg, Packet, SackBlock, MAX_SACK_BLOCKS};
use mpsched_core::rng::Rng;
use mpsched_core::sched;
use mpsched_core::{Bytes, Dur, Rate, Time};
use mpsched_sim::event::EventList;
use std::hint::black_box;

fn event_list(c: &mut Criterion) {
    c.bench_function("event_list: schedule + pop, 64 components", |b| {
        let mut ev = EventList::new(64);
        let mut t = 0u64;
        for i in 0..64 {
            ev.schedule(i, Time(i as u64 * 1000));
        }
        b.iter(|| {
            let (now, comp) = ev.pop().expect("pending");
            t = t
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ev.schedule(comp, Time(now.0 + (t >> 44)));
            black_box(now)
        })
    });
}

fn data(seq: u64) -> Packet {
    Packet::data(
        0,
        DataSeg {
            seq,
            dseq: seq,
            len: 1448,
            ts_val: Time::ZERO,
            ts_ecr: Time::ZERO,
            probe: false,
        },
        true,
    )
}

fn link(c: &mut Criterion) {
    c.bench_function("link: enqueue + deliver one packet", |b| {
        let mut l = Link::new(
            &LinkConfig {
                loss: mpsched_core::loss::LossModel::Bernoulli(0.0001),
                ..LinkConfig::new(
                    Rate::mbps(100),
                    Dur::from_millis(10),
                    QueueLimit::Packets(1000),
                )
            },
            Rng::new(1, 1),
        );
        let mut now = Time::ZERO;
        let mut seq = 0;
        b.iter(|| {
            let _ = l.enqueue(now, data(seq));
            seq += 1;
            now += Dur::from_micros(120);
            if let Some(t) = l.poll_at() {
                if t <= now {
                    while let Some(p) = l.poll_deliver(now) {
                        black_box(p);
                    }
                }
            }
        })
    });
}

fn sender(scheduler: &str) -> Sender {
    let sf = |ms| SubflowConfig {
        established_at: Time::ZERO,
        handshake_rtt: Dur::from_millis(ms),
        backup: false,
    };
    let mut s = Sender::new(
        SenderConfig {
            mptcp: true,
            sndbuf: Bytes(64 << 20),
            sndbuf_autotune: false,
            stack: mpsched_core::conn::Stack::Upstream,
            initial_rwnd: Bytes(64 << 20),
            total: None,
            app_limited: false,
            write_chunk: None,
            subflows: vec![sf(20), sf(100)],
            loss_recovery: Default::default(),
            jiffies: mpsched_core::jiffies::Jiffies::hz(250),
            trace: false,
        },
        Box::new(Cubic::new()),
        sched::build(scheduler, &sched::SchedParams::new()).expect("registered"),
        Time::ZERO,
    );
    s.start(Time::ZERO);
    s
}

fn ack(subflow: u8, cum: u64, data_ack: u64) -> Packet {
    Packet::ack(
        subflow,
        Ack {
            ack: cum,
            sack: [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS],
            sack_len: 0,
            data_ack,
            rwnd: 64 << 20,
            ts_val: Time::ZERO,
            ts_ecr: Time::ZERO,
            dsack: false,
        },
        true,
    )
}

/// One ACK of one segment on the fast subflow, and what the scheduler sends in return.
fn ack_processing(c: &mut Criterion) {
    for name in sched::registry().map(|s| s.name) {
        if sched::build(name, &sched::SchedParams::new()).is_err() {
            continue;
        }
        c.bench_function(&format!("ack + scheduling decision: {name}"), |b| {
            b.iter_batched_ref(
                || {
                    let mut s = sender(name);
                    while s.poll_transmit().is_some() {}
                    (s, 0u64)
                },
                |(s, n)| {
                    *n += 1;
                    s.handle_ack(Time(20_000_000 + *n * 1000), &ack(0, *n, 0));
                    while let Some(p) = s.poll_transmit() {
                        black_box(p);
                    }
                },
                BatchSize::LargeInput,
            )
        });
    }
}

criterion_group!(benches, event_list, link, ack_processing);
criterion_main!(benches);

//! The real-time loop: links fed from TUN descriptors, released into TUN descriptors at their
//! due time.

use crate::config::{LinkChange, LinkPlan};
use crate::hist::{Hist, Lateness};
use crate::packet::IpPacket;
use crate::pcap::PacketLog;
use crate::sys;
use crate::tcp::HeaderTrace;
use mpsched_core::link::{Link, LinkStats};
use mpsched_core::rng::Rng;
use mpsched_core::Time;
use serde::Serialize;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// State the link threads share with the controlling thread.
pub struct Shared {
    pub stop: AtomicBool,
    /// CLOCK_MONOTONIC ns of time zero of the scenario (schedules count from it); 0 while unset.
    pub epoch: AtomicU64,
    /// CLOCK_MONOTONIC ns of the links' time zero.
    pub origin: u64,
}

impl Shared {
    pub fn new() -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            origin: sys::now_ns(),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || sys::STOP.load(Ordering::Relaxed)
    }
}

impl Default for Shared {
    fn default() -> Self {
        Shared::new()
    }
}

/// One link with the descriptor it reads from and the one it writes to.
pub struct Port {
    pub plan: LinkPlan,
    link: Link<IpPacket>,
    input: RawFd,
    output: RawFd,
    next_change: usize,
    lateness: Hist,
    /// Packets delivered per wire length.
    sizes: HashMap<u32, u64>,
    /// When packets were dropped (CLOCK_MONOTONIC ns; the first `MAX_DROP_TIMES`).
    drop_times: Vec<u64>,
    read_errors: u64,
    write_errors: u64,
    /// Packets read in one round, at most (bounds the time one busy input can hold a thread).
    burst: usize,
    /// The headers of the segments entering this link, when asked for.
    headers: Option<HeaderTrace>,
    /// The packets entering this link, for the pcapng, when asked for.
    packets: Option<PacketLog>,
}

impl Port {
    pub fn new(plan: LinkPlan, seed: u64, input: RawFd, output: RawFd) -> Port {
        let link = Link::new(&plan.link, Rng::new(seed, plan.stream));
        Port {
            plan,
            link,
            input,
            output,
            next_change: 0,
            lateness: Hist::default(),
            sizes: HashMap::new(),
            drop_times: Vec::new(),
            read_errors: 0,
            write_errors: 0,
            burst: 64,
            headers: None,
            packets: None,
        }
    }

    /// Records the headers of every TCP segment entering this link (at most `cap`).
    pub fn trace_headers(&mut self, cap: usize) {
        self.headers = Some(HeaderTrace::new(cap));
    }

    /// Keeps every packet entering this link (at most `cap`) for the pcapng.
    pub fn capture_packets(&mut self, cap: usize) {
        self.packets = Some(PacketLog::new(cap));
    }
}

/// What a link did, reported when the emulator stops.
#[derive(Clone, Debug, Serialize)]
pub struct PortReport {
    pub path: usize,
    pub name: String,
    /// "down" (data, server to client) or "up" (ACKs).
    pub direction: &'static str,
    pub enqueued: u64,
    pub queue_drops: u64,
    pub random_drops: u64,
    /// Packets lost to an outage (`state = "down"`), in the link or offered.
    pub outage_drops: u64,
    /// Packets CoDel dropped at the head of the queue.
    pub aqm_drops: u64,
    pub delivered: u64,
    pub bytes_delivered: u64,
    /// Packets still in the link when it stopped.
    pub backlog_bytes: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    pub changes_applied: usize,
    pub lateness: Lateness,
    /// The most frequent wire lengths of delivered packets: (bytes, packets), most frequent
    /// first (at most 6).
    pub sizes: Vec<(u32, u64)>,
    /// Times of the first drops (queue or random), in ms since the epoch (since the start
    /// of the emulator if no epoch was set).
    pub drop_times_ms: Vec<f64>,
    /// The headers of the segments entering the link (`window_trace`); times in ns since the
    /// epoch (since the start of the emulator if no epoch was set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<HeaderTrace>,
    /// Packets entering the link not kept for the pcapng (its log was full).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcap_not_kept: Option<u64>,
    /// The packets for the pcapng (written by the controlling thread).
    #[serde(skip)]
    pub packets: Option<PacketLog>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkerReport {
    pub links: Vec<PortReport>,
    pub user_s: f64,
    pub sys_s: f64,
    /// Sleeps (epoll waits) and rounds that spun instead.
    pub sleeps: u64,
    pub spins: u64,
    pub lateness: Lateness,
    #[serde(skip)]
    pub hist: Hist,
}

/// The link time of CLOCK_MONOTONIC instant `abs`.
fn link_time(shared: &Shared, abs: u64) -> Time {
    Time(abs.saturating_sub(shared.origin))
}

/// Runs `ports` until `shared.stop` (or a stop signal); `spin_ns` before a due release the
/// thread busy-waits instead of sleeping.
pub fn run(mut ports: Vec<Port>, shared: &Shared, spin_ns: u64) -> std::io::Result<WorkerReport> {
    let inputs: Vec<RawFd> = ports.iter().map(|p| p.input).collect();
    let waiter = sys::Waiter::new(&inputs)?;
    let mut buf = vec![0u8; 65536];
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let (mut sleeps, mut spins) = (0u64, 0u64);
    const MAX_SLEEP_NS: u64 = 10_000_000;
    while !shared.stopped() {
        let epoch = shared.epoch.load(Ordering::Relaxed);
        let mut next_abs = sys::now_ns() + MAX_SLEEP_NS;
        for port in ports.iter_mut() {
            // Scheduled changes, once the epoch is known.
            if epoch > 0 {
                while let Some(c) = port.plan.changes.get(port.next_change).copied() {
                    let due = epoch + c.at.0;
                    let now = sys::now_ns();
                    if due > now {
                        next_abs = next_abs.min(due);
                        break;
                    }
                    apply(&mut port.link, link_time(shared, now), c);
                    port.next_change += 1;
                }
            }
            receive(port, shared, &mut buf, &mut pool);
            release(port, shared, &mut pool);
            if let Some(t) = port.link.poll_at() {
                next_abs = next_abs.min(shared.origin + t.0);
            }
        }
        let now = sys::now_ns();
        if next_abs <= now {
            continue;
        }
        if next_abs - now > spin_ns {
            sleeps += 1;
            waiter.wait_until(next_abs - spin_ns)?;
        } else {
            spins += 1;
            // Busy-wait for the due time, taking in packets meanwhile.
            while sys::now_ns() < next_abs && !shared.stopped() {
                for port in ports.iter_mut() {
                    receive(port, shared, &mut buf, &mut pool);
                }
                std::hint::spin_loop();
            }
        }
    }
    let (user_s, sys_s) = sys::cpu_times(true);
    let mut hist = Hist::default();
    let zero = match shared.epoch.load(Ordering::Relaxed) {
        0 => shared.origin,
        e => e,
    };
    let links = ports
        .iter_mut()
        .map(|p| {
            hist.merge(&p.lateness);
            let s: LinkStats = *p.link.stats();
            PortReport {
                path: p.plan.path,
                name: p.plan.name.clone(),
                direction: if p.plan.down { "down" } else { "up" },
                enqueued: s.enqueued,
                queue_drops: s.queue_drops,
                random_drops: s.random_drops,
                outage_drops: s.outage_drops,
                aqm_drops: s.aqm_drops,
                delivered: s.delivered,
                bytes_delivered: s.bytes_delivered,
                backlog_bytes: p.link.backlog_bytes(),
                read_errors: p.read_errors,
                write_errors: p.write_errors,
                changes_applied: p.next_change,
                lateness: p.lateness.summary(),
                sizes: top_sizes(&p.sizes, 6),
                drop_times_ms: p
                    .drop_times
                    .iter()
                    .map(|&t| (t as f64 - zero as f64) / 1e6)
                    .collect(),
                headers: p.headers.take().map(|mut w| {
                    // Segments read before the epoch (the handshake) keep a time of 0.
                    w.t_ns.iter_mut().for_each(|t| *t = t.saturating_sub(zero));
                    w
                }),
                pcap_not_kept: p.packets.as_ref().map(|l| l.overflow),
                packets: p.packets.take(),
            }
        })
        .collect();
    Ok(WorkerReport {
        links,
        user_s,
        sys_s,
        sleeps,
        spins,
        lateness: hist.summary(),
        hist,
    })
}

fn top_sizes(sizes: &HashMap<u32, u64>, n: usize) -> Vec<(u32, u64)> {
    let mut v: Vec<(u32, u64)> = sizes.iter().map(|(&k, &c)| (k, c)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

fn apply(link: &mut Link<IpPacket>, now: Time, c: LinkChange) {
    if let Some(r) = c.rate {
        link.set_rate(now, r);
    }
    if let Some(d) = c.delay {
        link.set_delay(now, d);
    }
    if let Some(j) = c.jitter {
        link.set_jitter(now, j);
    }
    if let Some(up) = c.up {
        // What the link held is lost with it; the link's stats count it.
        link.set_up(now, up);
    }
}

/// Drop times kept per link.
const MAX_DROP_TIMES: usize = 20_000;

/// Reads what is waiting on the port's input into its link, stamped with the time of reading.
fn receive(port: &mut Port, shared: &Shared, buf: &mut [u8], pool: &mut Vec<Vec<u8>>) {
    for _ in 0..port.burst {
        match sys::read(port.input, buf) {
            Ok(Some(n)) if n > 0 => {
                let mut bytes = pool.pop().unwrap_or_default();
                bytes.clear();
                bytes.extend_from_slice(&buf[..n]);
                let abs = sys::now_ns();
                if let Some(w) = port.headers.as_mut() {
                    w.record(abs, &bytes);
                }
                if let Some(log) = port.packets.as_mut() {
                    log.record(abs, &bytes);
                }
                // A refused packet is dropped, as on a real link; the link counts it.
                let refused = port
                    .link
                    .enqueue(link_time(shared, abs), IpPacket { bytes })
                    .is_err();
                if refused && port.drop_times.len() < MAX_DROP_TIMES {
                    port.drop_times.push(abs);
                }
                // CoDel's drops at the head of the queue: their buffers are reused.
                for p in port.link.take_dropped() {
                    if pool.len() < 4096 {
                        pool.push(p.bytes);
                    }
                }
            }
            Ok(_) => break,
            Err(_) => {
                port.read_errors += 1;
                break;
            }
        }
    }
}

/// Writes every packet that is due by now, recording how late each one is.
fn release(port: &mut Port, shared: &Shared, pool: &mut Vec<Vec<u8>>) {
    loop {
        let abs = sys::now_ns();
        let now = link_time(shared, abs);
        let due = match port.link.poll_at() {
            Some(t) if t <= now => t,
            _ => return,
        };
        // Delivering at `due` (not `now`) hands over exactly the packet that arrives at `due`,
        // so that its lateness is measured against its own arrival time. The link's clock
        // never goes back: it only moves packets whose time has come.
        let delivered = port.link.poll_deliver(due);
        // CoDel may drop at a serialization's end; the buffers are reused.
        for p in port.link.take_dropped() {
            if pool.len() < 4096 {
                pool.push(p.bytes);
            }
        }
        let Some(pkt) = delivered else {
            // `due` was the end of a serialization behind a packet whose longer delay it must
            // wait for (after a delay decrease): the packet entered the delay line.
            continue;
        };
        port.lateness.add(now.0 - due.0);
        *port.sizes.entry(pkt.bytes.len() as u32).or_default() += 1;
        if sys::write(port.output, &pkt.bytes).is_err() {
            port.write_errors += 1;
        }
        if pool.len() < 4096 {
            pool.push(pkt.bytes);
        }
    }
}

//! The real-time loop: links fed from TUN descriptors, released into TUN descriptors at their
//! due time.

use crate::config::{LinkChange, LinkPlan};
use crate::hist::{Hist, Lateness};
use crate::packet::IpPacket;
use crate::pcap::PacketLog;
use crate::sys;
use crate::tcp::HeaderTrace;
use mpsched_core::link::{Drop, Link, LinkStats};
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

/// One link: the model of one direction of a path's own link or of a shared link, with what
/// it counts.
pub struct Port {
    pub plan: LinkPlan,
    link: Link<IpPacket>,
    /// A link that is a path's whole route in one direction (`Port::new`, `run`): the device it
    /// reads from and the one it writes to.
    io: Option<(RawFd, RawFd)>,
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
    /// The link time of its latest arrival: a packet handed over by the link before it on
    /// its route arrives at the time that link delivered it, never before this.
    last: Time,
    /// Drops by path (the scenario's index): queue, random, AQM, outage.
    path_drops: Vec<[u64; 4]>,
    /// Drops by path and the server's port of the packet's connection: queue, random, AQM,
    /// outage.
    port_drops: HashMap<(usize, u16), [u64; 4]>,
}

/// The devices of one path in one direction and its route through a worker's links.
#[derive(Clone, Debug)]
pub struct PathIo {
    /// The scenario's index of the path.
    pub path: usize,
    /// Where the kernel's packets in this direction come from.
    pub input: RawFd,
    /// Where they go after the last link of the route.
    pub output: RawFd,
    /// The links they cross, in order, as indices into the worker's ports.
    pub route: Vec<usize>,
    /// The port whose header trace and packet log record them as they are read (the path's
    /// own link).
    pub log: usize,
}

impl Port {
    /// A link that is a path's whole route: read from `input`, written to `output`.
    pub fn new(plan: LinkPlan, seed: u64, input: RawFd, output: RawFd) -> Port {
        let mut p = Port::link(plan, seed);
        p.io = Some((input, output));
        p
    }

    /// A link of a route that `run_routed` feeds and drains.
    pub fn link(plan: LinkPlan, seed: u64) -> Port {
        let link = Link::new(&plan.link, Rng::new(seed, plan.stream));
        Port {
            plan,
            link,
            io: None,
            next_change: 0,
            lateness: Hist::default(),
            sizes: HashMap::new(),
            drop_times: Vec::new(),
            read_errors: 0,
            write_errors: 0,
            burst: 64,
            headers: None,
            packets: None,
            last: Time::ZERO,
            path_drops: Vec::new(),
            port_drops: HashMap::new(),
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

    /// Counts a dropped packet of path `path` (kind: 0 queue, 1 random, 2 AQM, 3 outage).
    fn count_drop(&mut self, path: usize, kind: usize, server_port: Option<u16>) {
        if self.path_drops.len() <= path {
            self.path_drops.resize(path + 1, [0; 4]);
        }
        self.path_drops[path][kind] += 1;
        if let Some(port) = server_port {
            self.port_drops.entry((path, port)).or_default()[kind] += 1;
        }
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
    /// Drops by path (the scenario's index; a shared link carries several): queue, random,
    /// AQM, outage.
    pub path_drops: Vec<[u64; 4]>,
    /// Drops by path and the server's port of the packet's connection (each connection of a
    /// run has its own port): `[path, port, queue, random, AQM, outage]`.
    pub port_drops: Vec<[u64; 6]>,
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

/// Runs `ports`, each a path's whole route (`Port::new`), until `shared.stop` (or a stop
/// signal); `spin_ns` before a due release the thread busy-waits instead of sleeping.
pub fn run(ports: Vec<Port>, shared: &Shared, spin_ns: u64) -> std::io::Result<WorkerReport> {
    let paths = ports
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            p.io.map(|(input, output)| PathIo {
                path: p.plan.path,
                input,
                output,
                route: vec![i],
                log: i,
            })
        })
        .collect();
    run_routed(ports, paths, shared, spin_ns)
}

/// Runs `ports` for the paths `paths`: what a path's input gives enters the first link of its
/// route, each link hands what it delivers to the next one at the time it delivers it (as the
/// simulator chains a route's links), and the last writes it to the path's output.
pub fn run_routed(
    mut ports: Vec<Port>,
    paths: Vec<PathIo>,
    shared: &Shared,
    spin_ns: u64,
) -> std::io::Result<WorkerReport> {
    let inputs: Vec<RawFd> = paths.iter().map(|p| p.input).collect();
    let waiter = sys::Waiter::new(&inputs)?;
    let mut buf = vec![0u8; 65536];
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut forward: Vec<(usize, Time, IpPacket)> = Vec::new();
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
        }
        for (k, io) in paths.iter().enumerate() {
            receive(&mut ports, &paths, k, io, shared, &mut buf, &mut pool);
        }
        for i in 0..ports.len() {
            release(&mut ports[i], &paths, shared, &mut pool, &mut forward);
            for (j, t, pkt) in forward.drain(..) {
                enqueue(&mut ports, &paths, j, t, pkt, shared, &mut pool);
            }
        }
        for port in ports.iter() {
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
                for (k, io) in paths.iter().enumerate() {
                    receive(&mut ports, &paths, k, io, shared, &mut buf, &mut pool);
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
                path_drops: std::mem::take(&mut p.path_drops),
                port_drops: {
                    let mut v: Vec<[u64; 6]> = p
                        .port_drops
                        .drain()
                        .map(|((path, port), d)| {
                            [path as u64, u64::from(port), d[0], d[1], d[2], d[3]]
                        })
                        .collect();
                    v.sort_unstable();
                    v
                },
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

/// Reads what is waiting on path `k`'s input into the first link of its route, stamped with
/// the time of reading.
fn receive(
    ports: &mut [Port],
    paths: &[PathIo],
    k: usize,
    io: &PathIo,
    shared: &Shared,
    buf: &mut [u8],
    pool: &mut Vec<Vec<u8>>,
) {
    let burst = ports[io.log].burst;
    for _ in 0..burst {
        match sys::read(io.input, buf) {
            Ok(Some(n)) if n > 0 => {
                let mut bytes = pool.pop().unwrap_or_default();
                bytes.clear();
                bytes.extend_from_slice(&buf[..n]);
                let abs = sys::now_ns();
                let log = &mut ports[io.log];
                if let Some(w) = log.headers.as_mut() {
                    w.record(abs, &bytes);
                }
                if let Some(l) = log.packets.as_mut() {
                    l.record(abs, &bytes);
                }
                let pkt = IpPacket {
                    bytes,
                    path: k as u16,
                    hop: 0,
                };
                enqueue(
                    ports,
                    paths,
                    io.route[0],
                    link_time(shared, abs),
                    pkt,
                    shared,
                    pool,
                );
            }
            Ok(_) => break,
            Err(_) => {
                ports[io.log].read_errors += 1;
                break;
            }
        }
    }
}

/// Offers `pkt` to link `j` at link time `t` (not before the link's latest arrival); a
/// refused packet is dropped, as on a real link, and counted for its path and connection.
fn enqueue(
    ports: &mut [Port],
    paths: &[PathIo],
    j: usize,
    t: Time,
    pkt: IpPacket,
    shared: &Shared,
    pool: &mut Vec<Vec<u8>>,
) {
    let port = &mut ports[j];
    let t = t.max(port.last);
    port.last = t;
    let path = paths[usize::from(pkt.path)].path;
    let server_port = pkt.server_port(port.plan.down);
    match port.link.enqueue(t, pkt) {
        Ok(()) => {}
        Err(why) => {
            let kind = match why {
                Drop::QueueFull => 0,
                Drop::Random => 1,
                Drop::Outage => 3,
            };
            port.count_drop(path, kind, server_port);
            if port.drop_times.len() < MAX_DROP_TIMES {
                port.drop_times.push(shared.origin + t.0);
            }
        }
    }
    reclaim_aqm_drops(port, paths, pool);
}

/// CoDel's drops at the head of the queue: counted for their path and connection, their
/// buffers reused.
fn reclaim_aqm_drops(port: &mut Port, paths: &[PathIo], pool: &mut Vec<Vec<u8>>) {
    for p in port.link.take_dropped() {
        let path = paths.get(usize::from(p.path)).map_or(0, |io| io.path);
        let server_port = p.server_port(port.plan.down);
        port.count_drop(path, 2, server_port);
        if pool.len() < 4096 {
            pool.push(p.bytes);
        }
    }
}

/// Delivers every packet that is due by now, recording how late each one is: into `forward`
/// (link index, the time it arrives there, the packet) when its route goes on, else to its
/// path's output.
fn release(
    port: &mut Port,
    paths: &[PathIo],
    shared: &Shared,
    pool: &mut Vec<Vec<u8>>,
    forward: &mut Vec<(usize, Time, IpPacket)>,
) {
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
        // CoDel may drop at a serialization's end.
        reclaim_aqm_drops(port, paths, pool);
        let Some(mut pkt) = delivered else {
            // `due` was the end of a serialization behind a packet whose longer delay it must
            // wait for (after a delay decrease): the packet entered the delay line.
            continue;
        };
        port.lateness.add(now.0 - due.0);
        *port.sizes.entry(pkt.bytes.len() as u32).or_default() += 1;
        let io = &paths[usize::from(pkt.path)];
        let hop = usize::from(pkt.hop) + 1;
        if let Some(&next) = io.route.get(hop) {
            pkt.hop = hop as u8;
            forward.push((next, due, pkt));
            continue;
        }
        if sys::write(io.output, &pkt.bytes).is_err() {
            port.write_errors += 1;
        }
        if pool.len() < 4096 {
            pool.push(pkt.bytes);
        }
    }
}

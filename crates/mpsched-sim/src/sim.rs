//! The discrete-event simulator: a server and a client host joined by paths, each path a link
//! in each direction. Data flows server -> client (a download, as in the papers).
//!
//! The main connection has one subflow per path it uses. Competing flows (`Config::flows`) are
//! further connections between the same hosts over the same paths: their packets share the
//! links' queues, tagged with the connection they belong to so that each link delivers them
//! to the right socket.
//!
//! Time zero is the main connection's SYN; a competing flow's SYN leaves at its start. A
//! server starts sending when the request reaches it, one handshake RTT plus the uplink delay
//! later; further subflows join after their own MP_JOIN handshake, started once the first
//! subflow is up (RFC 8684 3.2).

use crate::config::{Config, Protocol, Workload};
use crate::event::{ComponentId, EventList};
use crate::summary::{self, Summary};
use crate::trace_out::{Sink, Tracer};
use mpsched_core::cc::CcKind;
use mpsched_core::conn::sender::SubflowConfig;
use mpsched_core::conn::stats::Histogram;
use mpsched_core::conn::{Receiver, ReceiverConfig, Sender, SenderConfig};
use mpsched_core::link::{Drop, HasWireLen, Link};
use mpsched_core::packet::Packet;
use mpsched_core::rng::Rng;
use mpsched_core::sched::{self, SchedSample};
use mpsched_core::trace::{AckTrace, DeliveryTrace, SentTrace};
use mpsched_core::units::wire;
use mpsched_core::{Bytes, Dur, Rate, Time};

const SCHEDULE: ComponentId = 0;
const SAMPLER: ComponentId = 1;
/// The main connection's rate-limited application (`Workload::Rate`).
const APP: ComponentId = 2;
const FIRST_LINK: ComponentId = 3;
/// Bytes of a SYN / SYN-ACK on the wire (IP + TCP + options).
const SYN_BYTES: u64 = 64;

/// Traces of one run, as columns.
#[derive(Default)]
pub struct Traces {
    pub acks: AckTrace,
    pub sent: SentTrace,
    pub delivery: DeliveryTrace,
    pub scheduler: Vec<SchedSample>,
}

pub struct RunOutput {
    pub summary: Summary,
    pub traces: Option<Traces>,
}

struct Scheduled {
    at: Time,
    path: usize,
    rate: Option<Rate>,
    delay_down: Option<Dur>,
    delay_up: Option<Dur>,
    jitter_down: Option<Dur>,
    jitter_up: Option<Dur>,
}

/// A packet on a link, with the index of the connection it belongs to.
pub struct Tagged {
    pub conn: u32,
    pub pkt: Packet,
}

impl HasWireLen for Tagged {
    fn wire_len(&self) -> u32 {
        self.pkt.wire_len
    }
}

pub type SimLink = Link<Tagged>;

/// Packets of one subflow the links dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Drops {
    pub queue: u64,
    pub random: u64,
    pub ack_queue: u64,
    pub ack_random: u64,
}

/// One connection: its two sockets and the paths of its subflows.
pub struct Conn {
    pub server: Sender,
    pub client: Receiver,
    /// The path of each subflow.
    pub paths: Vec<usize>,
    /// When its first SYN left the client.
    pub syn_at: Time,
    /// When its server sends the first data.
    pub start: Time,
    /// The size of its file; `None`: a bulk transfer to the end of the run.
    pub total: Option<Bytes>,
    /// Whether it transfers a file.
    pub file: bool,
    pub drops: Vec<Drops>,
    started: bool,
    done: bool,
    /// A competing flow before its SYN: built for idle paths, to be built again.
    syn_pending: bool,
}

impl Conn {
    /// The request reaches the server: it starts sending (once).
    fn start_once(&mut self, now: Time) {
        if !self.started {
            self.started = true;
            self.server.start(now);
        }
    }
}

struct ConnSpec {
    mptcp: bool,
    cc: CcKind,
    sched: Box<dyn sched::Scheduler>,
    total: Option<Bytes>,
    app_limited: bool,
    paths: Vec<usize>,
    syn_at: Time,
}

/// A rate-limited application on the main connection: it writes a block every `interval`
/// from the server's start, and the client times each block's last byte.
pub struct App {
    interval: Dur,
    /// Segments a block takes (whole segments: the model's are full-sized).
    block_segs: u64,
    /// Payload bytes of a full segment.
    mss: u64,
    start: Time,
    /// Blocks written before this are delivered but not timed (the warm-up).
    timed_from: Time,
    written: u64,
    delivered: u64,
    /// From a block's write to its last byte delivered in order.
    pub delays: Histogram,
    /// The least a block can take: the best path's propagation delay plus the block's
    /// serialization at its rate (paper 001's "lowest one-way delay").
    pub ideal: Dur,
    /// The worst block: its delay and when it was written.
    pub worst: Option<(Dur, Time)>,
}

impl App {
    /// The client has `delivered` bytes in order: time the blocks that are complete.
    fn on_delivered(&mut self, now: Time, delivered: u64) {
        while self.delivered < self.written && delivered >= self.block_end(self.delivered) {
            let written_at = self.start + self.interval * self.delivered;
            self.delivered += 1;
            if written_at < self.timed_from {
                continue;
            }
            let d = now.saturating_since(written_at);
            self.delays.record(d.as_nanos());
            if self.worst.is_none_or(|(w, _)| d > w) {
                self.worst = Some((d, written_at));
            }
        }
    }

    /// Stream bytes up to the end of block `k` (blocks are padded to whole segments).
    fn block_end(&self, k: u64) -> u64 {
        (k + 1) * self.block_segs * self.mss
    }
}

pub struct Simulation {
    cfg: Config,
    /// The main connection first, then the competing flows.
    conns: Vec<Conn>,
    /// Index 2p: path p downlink (data); 2p + 1: uplink (ACKs).
    links: Vec<SimLink>,
    /// Files not yet delivered; the run ends when none is left, if the main connection
    /// transfers a file.
    files_pending: usize,
    app: Option<App>,
    changes: Vec<Scheduled>,
    next_change: usize,
    events: EventList,
    end: Time,
    now: Time,
    processed: u64,
    sample_interval: Option<Dur>,
    sampled: bool,
}

fn down(p: usize) -> usize {
    2 * p
}
fn up(p: usize) -> usize {
    2 * p + 1
}

impl Simulation {
    pub fn new(cfg: Config, trace: bool) -> Result<Simulation, String> {
        cfg.validate()?;
        Simulation::build(cfg, trace, None)
    }

    /// A simulation whose MPTCP scheduler is `sched` rather than one named in the scenario
    /// (a scheduler written in Python, say).
    pub fn with_scheduler(
        cfg: Config,
        trace: bool,
        sched: Box<dyn sched::Scheduler>,
    ) -> Result<Simulation, String> {
        cfg.validate_model()?;
        Simulation::build(cfg, trace, Some(sched))
    }

    fn build(
        cfg: Config,
        trace: bool,
        external: Option<Box<dyn sched::Scheduler>>,
    ) -> Result<Simulation, String> {
        let links: Vec<SimLink> = cfg
            .paths
            .iter()
            .enumerate()
            .flat_map(|(p, pc)| {
                [
                    Link::new(&pc.down.to_link(), Rng::new(cfg.seed, 2 * p as u64 + 1)),
                    Link::new(&pc.up.to_link(), Rng::new(cfg.seed, 2 * p as u64 + 2)),
                ]
            })
            .collect();

        let mptcp = cfg.protocol == Protocol::Mptcp;
        let main_sched = if let Some(s) = external.filter(|_| mptcp) {
            s
        } else if mptcp {
            sched::build(&cfg.scheduler, &cfg.sched_params()?)?
        } else {
            sched::build("minrtt", &sched::SchedParams::new())?
        };
        let main_paths: Vec<usize> = (0..if mptcp { cfg.main_path_count() } else { 1 }).collect();
        let main_total = match cfg.workload {
            Workload::Bulk | Workload::Rate { .. } => None,
            Workload::File { size_bytes } => Some(Bytes(size_bytes)),
        };
        let mut conns = vec![Self::connection(
            &cfg,
            ConnSpec {
                mptcp,
                cc: cfg.cc(),
                sched: main_sched,
                total: main_total,
                app_limited: matches!(cfg.workload, Workload::Rate { .. }),
                paths: main_paths,
                syn_at: Time::ZERO,
            },
            &links,
            trace,
        )];
        let app = match cfg.workload {
            Workload::Rate {
                rate_bps,
                block_bytes,
                warmup_ns,
            } => {
                let mss = u64::from(conns[0].server.data().mss());
                let block_segs = block_bytes.div_ceil(mss);
                let ideal = conns[0]
                    .paths
                    .iter()
                    .map(|&p| {
                        let l = &links[down(p)];
                        l.delay() + l.rate().tx_time(block_segs * u64::from(wire::MTU))
                    })
                    .min()
                    .unwrap_or(Dur::ZERO);
                Some(App {
                    interval: Rate::bps(rate_bps).tx_time(block_bytes),
                    block_segs,
                    mss,
                    start: conns[0].start,
                    timed_from: conns[0].start + Dur(warmup_ns),
                    written: 0,
                    delivered: 0,
                    delays: Histogram::new(),
                    ideal,
                    worst: None,
                })
            }
            _ => None,
        };
        for k in 0..cfg.flows.len() {
            // Built again when its SYN leaves, from the paths as they are then.
            let mut c = Self::flow(&cfg, k, &links)?;
            c.syn_pending = true;
            conns.push(c);
        }
        let files_pending = if conns[0].file {
            conns.iter().filter(|c| c.file).count()
        } else {
            usize::MAX
        };

        let mut changes: Vec<Scheduled> = cfg
            .paths
            .iter()
            .enumerate()
            .flat_map(|(p, pc)| {
                pc.schedule.iter().map(move |c| Scheduled {
                    at: Time(c.at_ns),
                    path: p,
                    rate: c.rate_bps.map(Rate::bps),
                    delay_down: c.delay_down_ns.map(Dur),
                    delay_up: c.delay_up_ns.map(Dur),
                    jitter_down: c.jitter_down_ns.map(Dur),
                    jitter_up: c.jitter_up_ns.map(Dur),
                })
            })
            .collect();
        // Stable: changes at the same instant apply in file order.
        changes.sort_by_key(|c| c.at);

        let n_links = links.len();
        let mut events = EventList::new(FIRST_LINK as usize + n_links + 2 * conns.len());
        for (k, c) in conns.iter().enumerate() {
            let first = if c.syn_pending { c.syn_at } else { c.start };
            events.schedule(FIRST_LINK + (n_links + 2 * k) as ComponentId, first);
        }
        if let Some(c) = changes.first() {
            events.schedule(SCHEDULE, c.at);
        }
        if let Some(a) = &app {
            events.schedule(APP, a.start);
        }
        Ok(Simulation {
            end: Time(cfg.duration_ns),
            cfg,
            conns,
            links,
            files_pending,
            app,
            changes,
            next_change: 0,
            events,
            now: Time::ZERO,
            processed: 0,
            sample_interval: None,
            sampled: false,
        })
    }

    /// The sockets of one connection whose client sends its SYN at `spec.syn_at`.
    fn connection(cfg: &Config, spec: ConnSpec, links: &[SimLink], trace: bool) -> Conn {
        let paths = &spec.paths;
        // Handshake timing from the paths as they are when the SYN leaves: their delays and
        // rates, and the queues a SYN and a SYN-ACK wait behind (none on idle paths).
        let one_way = |l: &SimLink| {
            l.delay() + l.rate().tx_time(SYN_BYTES) + l.rate().tx_time(l.backlog_bytes())
        };
        let hs_rtt = |p: usize| one_way(&links[down(p)]) + one_way(&links[up(p)]);
        let up_delay = |p: usize| one_way(&links[up(p)]);
        let rtt0 = hs_rtt(paths[0]);
        let start = spec.syn_at + rtt0 + up_delay(paths[0]);
        let subflows = paths
            .iter()
            .enumerate()
            .map(|(i, &p)| SubflowConfig {
                established_at: if i == 0 {
                    start
                } else {
                    spec.syn_at + rtt0 + hs_rtt(p) + up_delay(p)
                },
                handshake_rtt: hs_rtt(p),
                backup: false,
            })
            .collect();
        let client = Receiver::new(ReceiverConfig {
            mptcp: spec.mptcp,
            rcvbuf: Bytes(cfg.rcvbuf_bytes),
            rcvbuf_initial: Bytes(cfg.rcvbuf_initial_bytes),
            rcvbuf_autotune: cfg.rcvbuf_autotune,
            window_ratio: cfg.window_ratio_256(),
            subflows: paths.len(),
            stack: cfg.stack.stack(),
            total: spec.total,
            trace,
        });
        let server = Sender::new(
            SenderConfig {
                mptcp: spec.mptcp,
                sndbuf: Bytes(cfg.sndbuf_bytes),
                sndbuf_autotune: cfg.sndbuf_autotune,
                stack: cfg.stack.stack(),
                initial_rwnd: Bytes(client.initial_window()),
                total: spec.total,
                app_limited: spec.app_limited,
                subflows,
                loss_recovery: cfg.loss_recovery.recovery(),
                trace,
            },
            spec.cc.build(),
            spec.sched,
            start,
        );
        Conn {
            server,
            client,
            drops: vec![Drops::default(); paths.len()],
            paths: spec.paths,
            syn_at: spec.syn_at,
            start,
            total: spec.total,
            file: spec.total.is_some(),
            started: false,
            done: false,
            syn_pending: false,
        }
    }

    /// Competing flow `k` (`cfg.flows[k]`) as it opens over `links`.
    fn flow(cfg: &Config, k: usize, links: &[SimLink]) -> Result<Conn, String> {
        let f = &cfg.flows[k];
        let mptcp = f.protocol == Protocol::Mptcp;
        let sched = if mptcp {
            sched::build(&f.scheduler, &f.sched_params(k)?)?
        } else {
            sched::build("minrtt", &sched::SchedParams::new())?
        };
        let spec = ConnSpec {
            mptcp,
            cc: f.cc(),
            sched,
            total: f.size_bytes.map(Bytes),
            app_limited: false,
            paths: f.paths.clone(),
            syn_at: Time(f.start_ns),
        };
        Ok(Self::connection(cfg, spec, links, false))
    }

    /// Runs to the end of the scenario (its duration, or the file's last byte delivered),
    /// keeping any traces of the main connection in memory.
    pub fn run(mut self) -> RunOutput {
        let wall = std::time::Instant::now();
        self.run_loop(&mut |_: &mut Simulation| {});
        let summary = self.summary(wall.elapsed().as_secs_f64());
        let main = &mut self.conns[0];
        main.server.finish_trace();
        let scheduler = main.server.take_sched_samples();
        let traces = main.server.ack_trace.take().map(|acks| Traces {
            acks,
            scheduler,
            sent: main.server.sent_trace.take().unwrap_or_default(),
            delivery: main.client.trace.take().unwrap_or_default(),
        });
        RunOutput { summary, traces }
    }

    /// Runs to the end, sampling every subflow and the main connection every
    /// `sample_interval` and handing the traces to `sink` in chunks of about `chunk_rows` rows.
    pub fn run_streaming(
        mut self,
        sample_interval: Dur,
        chunk_rows: usize,
        sink: &mut Sink,
    ) -> Summary {
        let wall = std::time::Instant::now();
        let mut tracer = Tracer::new(chunk_rows);
        self.sample_interval = Some(sample_interval.max(Dur(1)));
        self.events.schedule(SAMPLER, Time::ZERO);
        let mut ticks = 0u32;
        self.run_loop(&mut |sim: &mut Simulation| {
            let main = &mut sim.conns[0];
            if sim.sampled {
                sim.sampled = false;
                tracer.sample(sim.now, &main.server, &main.client, &sim.links);
            }
            ticks += 1;
            if ticks >= 1024 {
                ticks = 0;
                tracer.flush(&mut main.server, &mut main.client, false, sink);
            }
        });
        let main = &mut self.conns[0];
        main.server.finish_trace();
        tracer.flush(&mut main.server, &mut main.client, true, sink);
        self.summary(wall.elapsed().as_secs_f64())
    }

    fn first_conn(&self) -> ComponentId {
        FIRST_LINK + self.links.len() as ComponentId
    }

    fn run_loop(&mut self, after_event: &mut dyn FnMut(&mut Simulation)) {
        let first_conn = self.first_conn();
        while let Some((t, c)) = self.events.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            // The sampler observes the model; it is not part of it.
            self.processed += u64::from(c != SAMPLER);
            match c {
                SCHEDULE => self.apply_changes(),
                APP => self.app_write(),
                SAMPLER => {
                    self.sampled = true;
                    if let Some(d) = self.sample_interval {
                        self.events.schedule(SAMPLER, t + d);
                    }
                }
                c if c >= first_conn => {
                    let k = ((c - first_conn) / 2) as usize;
                    if self.conns[k].syn_pending {
                        self.open_flow(k, c);
                    } else if (c - first_conn).is_multiple_of(2) {
                        let conn = &mut self.conns[k];
                        conn.start_once(t);
                        conn.server.handle_timeout(t);
                        self.flush_server(k);
                    } else {
                        self.conns[k].client.handle_timeout(t);
                        self.flush_client(k);
                    }
                }
                link => self.on_link(link),
            }
            after_event(self);
            if self.files_pending == 0 {
                break;
            }
        }
    }

    /// The application writes its next block.
    fn app_write(&mut self) {
        let now = self.now;
        let Some(app) = self.app.as_mut() else {
            return;
        };
        let segs = app.block_segs;
        app.written += 1;
        let next = app.start + app.interval * app.written;
        let main = &mut self.conns[0];
        main.start_once(now);
        main.server.app_write(now, segs);
        self.events.schedule(APP, next);
        self.flush_server(0);
    }

    /// Competing flow `k` sends its SYN: its handshake meets the queues as they are now.
    fn open_flow(&mut self, k: usize, id: ComponentId) {
        let mut conn = Self::flow(&self.cfg, k - 1, &self.links).expect("validated");
        conn.syn_pending = false;
        self.events.schedule(id, conn.start);
        self.conns[k] = conn;
    }

    fn summary(&self, wall_s: f64) -> Summary {
        let main_end = self.conns[0].client.complete_at().unwrap_or(self.end);
        // The run stops when the last file is in, or at its duration.
        let run_end = if self.files_pending == 0 {
            self.now
        } else {
            self.end
        };
        summary::build(
            &self.cfg,
            &self.conns,
            self.app.as_ref(),
            main_end,
            run_end,
            self.processed,
            wall_s,
        )
    }

    fn on_link(&mut self, c: ComponentId) {
        let l = (c - FIRST_LINK) as usize;
        let now = self.now;
        while let Some(Tagged { conn: k, pkt }) = self.links[l].poll_deliver(now) {
            let k = k as usize;
            if l.is_multiple_of(2) {
                let conn = &mut self.conns[k];
                conn.client.handle_data(now, &pkt);
                if k == 0 {
                    if let Some(app) = self.app.as_mut() {
                        app.on_delivered(now, conn.client.stats.delivered_bytes);
                    }
                }
                if !conn.done && conn.file && conn.client.complete_at().is_some() {
                    conn.done = true;
                    self.files_pending = self.files_pending.saturating_sub(1);
                }
                self.flush_client(k);
            } else {
                self.conns[k].server.handle_ack(now, &pkt);
                self.flush_server(k);
            }
        }
        self.rearm_link(l);
    }

    fn rearm_link(&mut self, l: usize) {
        if let Some(t) = self.links[l].poll_at() {
            self.events.schedule(FIRST_LINK + l as ComponentId, t);
        }
    }

    /// Puts a packet of connection `k` on its subflow's path: data down, ACKs up.
    fn send(&mut self, k: usize, pkt: Packet, data: bool) {
        let sf = pkt.subflow as usize;
        let p = self.conns[k].paths[sf];
        let l = if data { down(p) } else { up(p) };
        let tagged = Tagged {
            conn: k as u32,
            pkt,
        };
        let result = self.links[l].enqueue(self.now, tagged);
        let d = &mut self.conns[k].drops[sf];
        match (result, data) {
            (Ok(()), _) => {}
            (Err(Drop::QueueFull), true) => d.queue += 1,
            (Err(Drop::Random), true) => d.random += 1,
            (Err(Drop::QueueFull), false) => d.ack_queue += 1,
            (Err(Drop::Random), false) => d.ack_random += 1,
        }
        self.rearm_link(l);
    }

    fn flush_server(&mut self, k: usize) {
        while let Some(pkt) = self.conns[k].server.poll_transmit() {
            self.send(k, pkt, true);
        }
        if let Some(t) = self.conns[k].server.poll_timeout() {
            let id = self.first_conn() + 2 * k as ComponentId;
            self.events.schedule(id, t.max(self.now));
        }
    }

    fn flush_client(&mut self, k: usize) {
        while let Some(pkt) = self.conns[k].client.poll_transmit() {
            self.send(k, pkt, false);
        }
        if let Some(t) = self.conns[k].client.poll_timeout() {
            let id = self.first_conn() + 2 * k as ComponentId + 1;
            self.events.schedule(id, t.max(self.now));
        }
    }

    fn apply_changes(&mut self) {
        let now = self.now;
        while let Some(c) = self.changes.get(self.next_change).filter(|c| c.at <= now) {
            let (p, rate, dd, du) = (c.path, c.rate, c.delay_down, c.delay_up);
            let (jd, ju) = (c.jitter_down, c.jitter_up);
            if let Some(r) = rate {
                self.links[down(p)].set_rate(now, r);
                self.links[up(p)].set_rate(now, r);
            }
            if let Some(d) = dd {
                self.links[down(p)].set_delay(now, d);
            }
            if let Some(d) = du {
                self.links[up(p)].set_delay(now, d);
            }
            if let Some(j) = jd {
                self.links[down(p)].set_jitter(now, j);
            }
            if let Some(j) = ju {
                self.links[up(p)].set_jitter(now, j);
            }
            self.next_change += 1;
            self.rearm_link(down(p));
            self.rearm_link(up(p));
        }
        if let Some(c) = self.changes.get(self.next_change) {
            self.events.schedule(SCHEDULE, c.at);
        }
    }
}
